//! The schema: numbered migrations, applied in order at open. `PRAGMA user_version` records how
//! many were applied; a database newer than this build is refused (lib.rs).
//!
//! Most migrations are SQL. Migration 5 is code: it rewrites what earlier versions stored in
//! shapes of their own (an imported phase's figures as loose JSON, a study member's role as
//! words) into the typed model, so that every reader reads one shape.

use rusqlite::{params, Transaction};
use storlab_model::plan::PhasePlan;
use storlab_model::result::{Latency, PhaseResult, Throughput};
use storlab_model::run::{ImportedParams, PhaseParams};
use storlab_model::study::{Role, StudyKind};

use crate::Result;

/// One step of the schema.
pub(crate) enum Migration {
    /// SQL run as one batch.
    Sql(&'static str),
    /// Code run inside the migration's transaction.
    Code(fn(&Transaction) -> Result<()>),
}

/// The migrations, in order.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1: the first schema.
    Migration::Sql(
        r#"
    CREATE TABLE runs (
        id              INTEGER PRIMARY KEY,
        started_at      TEXT NOT NULL,
        finished_at     TEXT,
        host            TEXT NOT NULL,
        kind            TEXT NOT NULL,
        job_name        TEXT,
        job             TEXT,
        command         TEXT,
        status          TEXT NOT NULL,
        status_detail   TEXT,
        pid             INTEGER,
        cache_flattered INTEGER NOT NULL DEFAULT 0,
        imported        INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE tags (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key    TEXT NOT NULL,
        value  TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE TABLE environments (
        run_id       INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        kernel       TEXT NOT NULL,
        cpu_model    TEXT NOT NULL,
        cpus         INTEGER NOT NULL,
        memory_bytes INTEGER NOT NULL,
        json         TEXT NOT NULL
    );
    CREATE TABLE phases (
        id                        INTEGER PRIMARY KEY,
        run_id                    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq                       INTEGER NOT NULL,
        kind                      TEXT NOT NULL,
        params                    TEXT NOT NULL,
        bytes_read                INTEGER NOT NULL,
        bytes_written             INTEGER NOT NULL,
        ops_read                  INTEGER NOT NULL,
        ops_written               INTEGER NOT NULL,
        seconds                   REAL NOT NULL,
        bytes_per_sec             REAL NOT NULL,
        iops                      REAL NOT NULL,
        first_done_seconds        REAL NOT NULL,
        first_done_bytes_per_sec  REAL NOT NULL,
        worker_min_bytes_per_sec  REAL NOT NULL,
        worker_max_bytes_per_sec  REAL NOT NULL,
        cpu_user                  REAL NOT NULL,
        cpu_sys                   REAL NOT NULL,
        lat_min_ns                INTEGER NOT NULL,
        lat_mean_ns               REAL NOT NULL,
        lat_max_ns                INTEGER NOT NULL,
        lat_p50_ns                INTEGER NOT NULL,
        lat_p90_ns                INTEGER NOT NULL,
        lat_p99_ns                INTEGER NOT NULL,
        lat_p99_9_ns              INTEGER NOT NULL,
        lat_p99_99_ns             INTEGER NOT NULL,
        cache_flattered           INTEGER NOT NULL,
        interrupted               INTEGER NOT NULL,
        verify_bad_blocks         INTEGER,
        result                    TEXT NOT NULL,
        histogram                 BLOB,
        UNIQUE (run_id, seq)
    );
    CREATE TABLE samples (
        phase_id      INTEGER NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
        idx           INTEGER NOT NULL,
        t_start       REAL NOT NULL,
        t_end         REAL NOT NULL,
        ramp          INTEGER NOT NULL,
        bytes_read    INTEGER NOT NULL,
        bytes_written INTEGER NOT NULL,
        ops_read      INTEGER NOT NULL,
        ops_written   INTEGER NOT NULL,
        lat_p50_ns    INTEGER NOT NULL,
        lat_p90_ns    INTEGER NOT NULL,
        lat_p99_ns    INTEGER NOT NULL,
        lat_p99_9_ns  INTEGER NOT NULL,
        lat_max_ns    INTEGER NOT NULL,
        late_ios      INTEGER NOT NULL,
        PRIMARY KEY (phase_id, idx)
    );
    CREATE TABLE events (
        id      INTEGER PRIMARY KEY,
        run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        at      TEXT NOT NULL,
        kind    TEXT NOT NULL,
        detail  TEXT NOT NULL
    );
    CREATE TABLE studies (
        id         INTEGER PRIMARY KEY,
        kind       TEXT NOT NULL,
        created_at TEXT NOT NULL,
        params     TEXT NOT NULL
    );
    CREATE TABLE study_members (
        study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        role     TEXT NOT NULL,
        PRIMARY KEY (study_id, run_id)
    );
    CREATE INDEX runs_started ON runs(started_at);
    CREATE INDEX phases_run ON phases(run_id);
    CREATE INDEX events_run ON events(run_id);
    "#,
    ),
    // 2: storlab scan. One row per report row (the key figures as columns, for queries that
    // compare two scans of the same place), the whole row as JSON, and the report's summary.
    Migration::Sql(
        r#"
    CREATE TABLE scan_rows (
        run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx         INTEGER NOT NULL,
        root        TEXT NOT NULL,
        path        TEXT NOT NULL,
        own_files   INTEGER NOT NULL,
        files       INTEGER NOT NULL,
        dirs        INTEGER NOT NULL,
        apparent    INTEGER NOT NULL,
        allocated   INTEGER NOT NULL,
        json        TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE scans (
        run_id  INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        json    TEXT NOT NULL
    );
    "#,
    ),
    // 3: samples per target, for phases that ran on more than one.
    Migration::Sql(
        r#"
    CREATE TABLE target_samples (
        phase_id      INTEGER NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
        idx           INTEGER NOT NULL,
        target        INTEGER NOT NULL,
        bytes_read    INTEGER NOT NULL,
        bytes_written INTEGER NOT NULL,
        ops_read      INTEGER NOT NULL,
        ops_written   INTEGER NOT NULL,
        PRIMARY KEY (phase_id, idx, target)
    );
    "#,
    ),
    // 4: impact studies. A study's events (a task started, ended, reported errors; a
    // repetition began) in the order they happened, each with the run that was going on, and
    // the background tasks' progress as they were watched.
    Migration::Sql(
        r#"
    CREATE TABLE study_events (
        study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        seq      INTEGER NOT NULL,
        at       TEXT NOT NULL,
        t        REAL NOT NULL,
        run_id   INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        kind     TEXT NOT NULL,
        detail   TEXT NOT NULL,
        PRIMARY KEY (study_id, seq)
    );
    CREATE TABLE task_samples (
        study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        task       INTEGER NOT NULL,
        t          REAL NOT NULL,
        run_id     INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        state      TEXT NOT NULL,
        percent    REAL,
        bytes_done INTEGER,
        PRIMARY KEY (study_id, seq)
    );
    "#,
    ),
    // 5: the typed model (see the module's doc).
    Migration::Code(typed_model),
];

/// Migration 5: phases' parameters become `{"plan": …}` or `{"imported": …}`; an imported
/// phase's result becomes a typed result built from its columns; study roles become typed.
fn typed_model(tx: &Transaction) -> Result<()> {
    let phases: Vec<(i64, bool, String, String)> = {
        let mut stmt =
            tx.prepare("SELECT p.id, r.imported, p.params, p.result FROM phases p JOIN runs r ON r.id = p.run_id")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<std::result::Result<_, _>>()?
    };
    for (id, imported, params, result) in phases {
        let old_params: serde_json::Value = serde_json::from_str(&params).unwrap_or_default();
        let (params, result) = if imported {
            let old_result: serde_json::Value = serde_json::from_str(&result).unwrap_or_default();
            (
                PhaseParams::Imported(legacy_imported_params(&old_params, &old_result)),
                legacy_imported_result(tx, id)?,
            )
        } else {
            (
                PhaseParams::Plan(legacy_plan(&old_params)?),
                serde_json::from_str::<PhaseResult>(&result)?,
            )
        };
        tx.execute(
            "UPDATE phases SET params = ?2, result = ?3 WHERE id = ?1",
            params![id, serde_json::to_string(&params)?, serde_json::to_string(&result)?],
        )?;
    }
    let members: Vec<(i64, i64, String, String)> = {
        let mut stmt = tx.prepare(
            "SELECT m.study_id, m.run_id, s.kind, m.role FROM study_members m JOIN studies s ON s.id = m.study_id",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<std::result::Result<_, _>>()?
    };
    for (study, run, kind, role) in members {
        let Some(kind) = StudyKind::from_name(&kind) else {
            continue;
        };
        let role = Role::from_legacy(kind, &role);
        tx.execute(
            "UPDATE study_members SET role = ?3 WHERE study_id = ?1 AND run_id = ?2",
            params![study, run, serde_json::to_string(&role)?],
        )?;
    }
    Ok(())
}

/// A plan as storlab wrote it before the settings were declared once: the settings were fields
/// of the plan, some under other names (backend, rwmix_read; the rate with its sharing).
fn legacy_plan(old: &serde_json::Value) -> Result<PhasePlan> {
    use serde_json::{json, Value};
    let workers = old["workers"].as_array().cloned().unwrap_or_default();
    let rate = &old["rate"];
    let or = |k: &str, d: Value| old.get(k).cloned().unwrap_or(d);
    let settings = json!({
        "threads": workers.len(),
        "size": workers.first().map(|w| w["len"].clone()),
        "bs": old["bs"],
        "engine": old["backend"],
        "iodepth": old["iodepth"],
        "iodepth_batch": or("submit_batch", json!(1)),
        "iovecs": or("iovecs", json!(1)),
        "direct": old["direct"],
        "sync": old["sync"],
        "fsync": old["fsync"],
        "fsync_timed": old["fsync_timed"],
        "close_timed": or("close_timed", json!(false)),
        "runtime": old["runtime"],
        "ramp": old["ramp"],
        "rate": rate.get("rate"),
        "rate_per": if rate["per_worker"] == true { "worker" } else { "total" },
        "pattern": old["pattern"],
        "verify": old["verify"],
        "rwmix": old["rwmix_read"],
        "stride": old["stride"],
        "interval": old["interval"],
        "late_after": old["late_after"],
        "seed": old["seed"],
    });
    Ok(serde_json::from_value(json!({
        "kind": old["kind"],
        "settings": settings,
        "submit_batch": or("submit_batch", json!(1)),
        "write_headers": old["write_headers"],
        "verify_generations": old["verify_generations"],
        "generation": old["generation"],
        "seed": old["seed"],
        "workers": workers,
    }))?)
}

/// What an imported phase's old parameters and result said of its workload (fio: its job and
/// global options; IOzone: its test, record size, workers and file size in kB).
fn legacy_imported_params(p: &serde_json::Value, r: &serde_json::Value) -> ImportedParams {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let fio = r["source"] == "fio";
    let mut options = serde_json::Map::new();
    for k in ["fio job options", "fio global options"] {
        if let Some(v) = p.get(k) {
            options.insert(k.to_string(), v.clone());
        }
    }
    let mut notes: Vec<String> = ["note", "first_done"]
        .iter()
        .filter_map(|k| text(&r[*k]))
        .filter(|n| !n.is_empty())
        .collect();
    if let Some(e) = r.get("error").filter(|e| !e.is_null() && **e != 0) {
        notes.push(format!("fio reported error {e}"));
    }
    ImportedParams {
        tool: if fio { "fio".into() } else { "IOzone".into() },
        test: text(&r["test"]).or_else(|| text(&p["iozone_test"])),
        bs: p["bs"]["fixed"].as_u64(),
        file_size: p["file_kb"].as_f64().map(|k| (k * 1024.0) as u64),
        workers: p["threads"].as_u64().map(|w| w as u32),
        options: if options.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Object(options)
        },
        notes,
    }
}

/// An imported phase's figures, from the columns every version wrote.
fn legacy_imported_result(tx: &Transaction, phase_id: i64) -> Result<PhaseResult> {
    Ok(tx.query_row(
        "SELECT bytes_read, bytes_written, ops_read, ops_written, seconds, bytes_per_sec, iops,
            first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec, worker_max_bytes_per_sec,
            cpu_user, cpu_sys, lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns, lat_p99_ns,
            lat_p99_9_ns, lat_p99_99_ns
         FROM phases WHERE id = ?1",
        [phase_id],
        |r| {
            let u = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)? as u64) };
            let (bytes, ops) = (u(0)? + u(1)?, u(2)? + u(3)?);
            let latency = Latency {
                count: ops,
                min_ns: u(13)?,
                mean_ns: r.get(14)?,
                max_ns: u(15)?,
                p50_ns: u(16)?,
                p90_ns: u(17)?,
                p99_ns: u(18)?,
                p99_9_ns: u(19)?,
                p99_99_ns: u(20)?,
            };
            Ok(PhaseResult {
                bytes_read: u(0)?,
                bytes_written: u(1)?,
                ops_read: u(2)?,
                ops_written: u(3)?,
                all_done: Throughput {
                    seconds: r.get(4)?,
                    bytes,
                    ops,
                    bytes_per_sec: r.get(5)?,
                    iops: r.get(6)?,
                },
                first_done: Throughput {
                    seconds: r.get(7)?,
                    bytes,
                    ops,
                    bytes_per_sec: r.get(8)?,
                    iops: r.get::<_, f64>(8)? / (r.get::<_, f64>(5)?).max(1e-9) * r.get::<_, f64>(6)?,
                },
                worker_min_bytes_per_sec: r.get(9)?,
                worker_max_bytes_per_sec: r.get(10)?,
                cpu_user: r.get(11)?,
                cpu_sys: r.get(12)?,
                latency: if ops > 0 && u(16)? > 0 {
                    latency
                } else {
                    Latency::default()
                },
                ..PhaseResult::default()
            })
        },
    )?)
}
