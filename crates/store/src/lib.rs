//! The results database: schema, numbered migrations applied at open, and typed reads and
//! writes of runs, environments, phases, samples and events. SQLite (bundled) in WAL mode.
//!
//! Durability rules: a run row is written when the run starts (status `running`); each phase is
//! written with its samples in one transaction; the run's status is set when it ends. A process
//! killed mid-run leaves its finished phases and a `running` row, which the next open on the
//! same host marks `aborted` once it sees that the process is gone.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

/// What went wrong with the database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file could not be opened or created.
    #[error("cannot open the results database {path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// The reason.
        source: rusqlite::Error,
    },
    /// Its directory could not be created.
    #[error("cannot create the directory {path} for the results database: {source}")]
    Dir {
        /// The directory.
        path: String,
        /// The reason.
        source: std::io::Error,
    },
    /// The database is newer than this storlab.
    #[error("the results database {path} has schema version {found}, newer than this storlab knows ({known}): upgrade storlab")]
    TooNew {
        /// The file.
        path: String,
        /// Its version.
        found: i64,
        /// The newest this build knows.
        known: i64,
    },
    /// A query failed.
    #[error("results database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored JSON document could not be read.
    #[error("results database holds malformed JSON: {0}")]
    Json(#[from] serde_json::Error),
}

type Result<T> = std::result::Result<T, StoreError>;

/// The migrations, in order; `PRAGMA user_version` records how many were applied.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
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
    // 2: storlab scan. One row per report row (the key figures as columns, for queries that
    // compare two scans of the same place), the whole row as JSON, and the report's summary.
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
    // 3: samples per target, for phases that ran on more than one.
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
    // 4: impact studies. A study's events (a task started, ended, reported errors; a
    // repetition began) in the order they happened, each with the run that was going on, and
    // the background tasks' progress as they were watched.
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
];

/// Now, as an RFC 3339 UTC timestamp with seconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// The default database file: `$STORLAB_DB`, else `<data dir>/storlab/results.db`
/// (`~/.local/share/storlab/results.db` on Linux).
pub fn default_path(data_dir: Option<PathBuf>) -> PathBuf {
    if let Some(p) = std::env::var_os("STORLAB_DB") {
        return PathBuf::from(p);
    }
    data_dir
        .unwrap_or_else(|| PathBuf::from("."))
        .join("storlab")
        .join("results.db")
}

/// A run as it starts.
#[derive(Debug, Clone, Default)]
pub struct NewRun {
    /// "run", "demo", ...
    pub kind: String,
    /// The host.
    pub host: String,
    /// The job's name.
    pub job_name: Option<String>,
    /// The resolved job, as JSON.
    pub job: serde_json::Value,
    /// The command line.
    pub command: String,
    /// User tags.
    pub tags: Vec<(String, String)>,
}

/// One target's share of an interval sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetSampleRow {
    /// The target's index in the job.
    pub target: u16,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Reads completed.
    pub ops_read: u64,
    /// Writes completed.
    pub ops_written: u64,
}

/// One interval sample as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    /// Interval index.
    pub idx: u32,
    /// Start, seconds from the phase's start.
    pub t_start: f64,
    /// End, seconds from the phase's start.
    pub t_end: f64,
    /// In the ramp (excluded from results).
    pub ramp: bool,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Reads.
    pub ops_read: u64,
    /// Writes.
    pub ops_written: u64,
    /// Median latency, ns.
    pub lat_p50_ns: u64,
    /// p90, ns.
    pub lat_p90_ns: u64,
    /// p99, ns.
    pub lat_p99_ns: u64,
    /// p99.9, ns.
    pub lat_p99_9_ns: u64,
    /// Max, ns.
    pub lat_max_ns: u64,
    /// Late I/Os.
    pub late_ios: u64,
    /// The interval per target, when the phase ran on more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetSampleRow>,
}

/// A phase as stored: the figures queries need as columns, and the whole result as JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseRow {
    /// Order in the run, from 0.
    pub seq: u32,
    /// The phase's kind ("write", "randread", ...).
    pub kind: String,
    /// The phase's parameters, as JSON.
    pub params: serde_json::Value,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Reads.
    pub ops_read: u64,
    /// Writes.
    pub ops_written: u64,
    /// Seconds (all done).
    pub seconds: f64,
    /// Bytes per second (all done).
    pub bytes_per_sec: f64,
    /// IOPS (all done).
    pub iops: f64,
    /// Seconds until the first worker finished.
    pub first_done_seconds: f64,
    /// Bytes per second until the first worker finished.
    pub first_done_bytes_per_sec: f64,
    /// Slowest worker, bytes/s.
    pub worker_min_bytes_per_sec: f64,
    /// Fastest worker, bytes/s.
    pub worker_max_bytes_per_sec: f64,
    /// CPU user seconds.
    pub cpu_user: f64,
    /// CPU system seconds.
    pub cpu_sys: f64,
    /// Latency min, ns.
    pub lat_min_ns: u64,
    /// Latency mean, ns.
    pub lat_mean_ns: f64,
    /// Latency max, ns.
    pub lat_max_ns: u64,
    /// p50, ns.
    pub lat_p50_ns: u64,
    /// p90, ns.
    pub lat_p90_ns: u64,
    /// p99, ns.
    pub lat_p99_ns: u64,
    /// p99.9, ns.
    pub lat_p99_9_ns: u64,
    /// p99.99, ns.
    pub lat_p99_99_ns: u64,
    /// The file set was small enough for the page cache to flatter the result.
    pub cache_flattered: bool,
    /// Stopped before it finished.
    pub interrupted: bool,
    /// Bad blocks found by verification (None when not verified).
    pub verify_bad_blocks: Option<u64>,
    /// The whole engine result, as JSON.
    pub result: serde_json::Value,
    /// The latency histogram (HdrHistogram V2 deflate).
    #[serde(skip)]
    pub histogram: Vec<u8>,
    /// Interval samples (filled by `save_phase`; by reads only on request).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub samples: Vec<SampleRow>,
}

/// A run as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// Id.
    pub id: i64,
    /// When it started (RFC 3339 UTC).
    pub started_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
    /// Host.
    pub host: String,
    /// Kind of run.
    pub kind: String,
    /// Job name.
    pub job_name: Option<String>,
    /// running, ok, aborted, failed, corrupt.
    pub status: String,
    /// Why, when not ok.
    pub status_detail: Option<String>,
    /// Some phase may have been flattered by the page cache.
    pub cache_flattered: bool,
    /// Imported from another tool.
    pub imported: bool,
    /// Tags.
    pub tags: Vec<(String, String)>,
    /// Number of phases stored.
    pub phases: u32,
}

/// A run with everything stored for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: RunRow,
    /// The command line.
    pub command: Option<String>,
    /// The job, as JSON.
    pub job: serde_json::Value,
    /// The environment, as JSON.
    pub environment: serde_json::Value,
    /// The phases.
    pub phases: Vec<PhaseRow>,
    /// Events.
    pub events: Vec<EventRow>,
}

/// Which runs to list. Every field given must match; tags all must be present.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    /// These run ids only (empty: any).
    pub ids: Vec<i64>,
    /// The host.
    pub host: Option<String>,
    /// The kind (run, demo, scan, import, ...).
    pub kind: Option<String>,
    /// A part of the job name.
    pub job: Option<String>,
    /// Started at or after (RFC 3339 or a prefix such as 2026-11-21).
    pub since: Option<String>,
    /// Started before.
    pub until: Option<String>,
    /// Tags the run must carry.
    pub tags: Vec<(String, String)>,
    /// At most this many (newest first).
    pub limit: Option<usize>,
}

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// Inserts a phase and its samples inside the caller's transaction.
fn insert_phase(tx: &rusqlite::Transaction, run_id: i64, p: &PhaseRow) -> Result<i64> {
    tx.execute(
        "INSERT INTO phases (run_id, seq, kind, params, bytes_read, bytes_written, ops_read, ops_written, seconds, bytes_per_sec, iops,
            first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec, worker_max_bytes_per_sec, cpu_user, cpu_sys,
            lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_p99_99_ns,
            cache_flattered, interrupted, verify_bad_blocks, result, histogram)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
        params![
            run_id,
            p.seq,
            p.kind,
            p.params.to_string(),
            p.bytes_read as i64,
            p.bytes_written as i64,
            p.ops_read as i64,
            p.ops_written as i64,
            p.seconds,
            p.bytes_per_sec,
            p.iops,
            p.first_done_seconds,
            p.first_done_bytes_per_sec,
            p.worker_min_bytes_per_sec,
            p.worker_max_bytes_per_sec,
            p.cpu_user,
            p.cpu_sys,
            p.lat_min_ns as i64,
            p.lat_mean_ns,
            p.lat_max_ns as i64,
            p.lat_p50_ns as i64,
            p.lat_p90_ns as i64,
            p.lat_p99_ns as i64,
            p.lat_p99_9_ns as i64,
            p.lat_p99_99_ns as i64,
            p.cache_flattered,
            p.interrupted,
            p.verify_bad_blocks.map(|v| v as i64),
            p.result.to_string(),
            p.histogram,
        ],
    )?;
    let phase_id = tx.last_insert_rowid();
    {
        let mut stmt = tx.prepare(
            "INSERT INTO samples (phase_id, idx, t_start, t_end, ramp, bytes_read, bytes_written, ops_read, ops_written,
                lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_max_ns, late_ios)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        )?;
        for s in &p.samples {
            stmt.execute(params![
                phase_id,
                s.idx,
                s.t_start,
                s.t_end,
                s.ramp,
                s.bytes_read as i64,
                s.bytes_written as i64,
                s.ops_read as i64,
                s.ops_written as i64,
                s.lat_p50_ns as i64,
                s.lat_p90_ns as i64,
                s.lat_p99_ns as i64,
                s.lat_p99_9_ns as i64,
                s.lat_max_ns as i64,
                s.late_ios as i64
            ])?;
        }
        let mut per_target = tx.prepare(
            "INSERT INTO target_samples (phase_id, idx, target, bytes_read, bytes_written, ops_read, ops_written)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for s in &p.samples {
            for t in &s.targets {
                per_target.execute(params![
                    phase_id,
                    s.idx,
                    t.target,
                    t.bytes_read as i64,
                    t.bytes_written as i64,
                    t.ops_read as i64,
                    t.ops_written as i64
                ])?;
            }
        }
    }
    if p.cache_flattered {
        tx.execute("UPDATE runs SET cache_flattered = 1 WHERE id = ?1", [run_id])?;
    }
    Ok(phase_id)
}

/// A run imported from another tool, ready to store.
#[derive(Debug, Clone)]
pub struct ImportedRun {
    /// The run (kind, host, job, command, tags).
    pub run: NewRun,
    /// When it ran (RFC 3339 UTC), as the imported file says.
    pub started_at: String,
    /// What is known of its environment.
    pub environment: serde_json::Value,
    /// Its phases.
    pub phases: Vec<PhaseRow>,
}

/// A study as stored: its kind, parameters, and members (run id, role).
pub type StudyRecord = (String, serde_json::Value, Vec<(i64, String)>);

/// Something that happened during a study, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyEvent {
    /// Seconds since the study started.
    pub t: f64,
    /// Wall-clock time, RFC 3339.
    pub at: String,
    /// The run that was going on, if any.
    pub run_id: Option<i64>,
    /// What happened: "task-start", "task-end", "repetition-start", ...
    pub kind: String,
    /// In words (a task's end carries the system's report, error counts included).
    pub detail: String,
}

/// One look at a background task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSample {
    /// The task's index in the study (0 for the first).
    pub task: u32,
    /// Seconds since the study started.
    pub t: f64,
    /// The run that was going on, if any.
    pub run_id: Option<i64>,
    /// "idle", "running" or "done".
    pub state: String,
    /// Percent done, when the system says.
    pub percent: Option<f64>,
    /// Bytes done, when the system says.
    pub bytes_done: Option<u64>,
}

/// One row of a stored scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScanRowRecord {
    /// The PATH given.
    pub root: String,
    /// The directory the row counts.
    pub path: String,
    /// True when the row holds only the files directly in `path`.
    pub own_files_only: bool,
    /// Regular files.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Apparent bytes.
    pub apparent: u64,
    /// Allocated bytes.
    pub allocated: u64,
    /// The whole row, as JSON text (kept as text: a scan can have thousands of rows).
    pub json: String,
}

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRow {
    /// When (RFC 3339 UTC).
    pub at: String,
    /// What kind ("phase-start", "interrupted", ...).
    pub kind: String,
    /// Details.
    pub detail: String,
}

/// The results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn pid_alive(pid: i64) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    pid > 0
        && (unsafe { libc::kill(pid as i32, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

impl Store {
    /// Opens (creating it and its directory if needed) the database at `path`, applies pending
    /// migrations, and marks runs of dead processes on `host` as aborted.
    pub fn open(path: &Path, host: &str) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Dir {
                path: dir.display().to_string(),
                source: e,
            })?;
        }
        let conn = Connection::open(path).map_err(|e| StoreError::Open {
            path: path.display().to_string(),
            source: e,
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                source: e,
            })?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.migrate()?;
        store.reap_dead_runs(host)?;
        Ok(store)
    }

    /// Where the database is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version (number of migrations applied).
    pub fn schema_version(&self) -> Result<i64> {
        Ok(self.conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    fn migrate(&mut self) -> Result<()> {
        let v = self.schema_version()?;
        let known = MIGRATIONS.len() as i64;
        if v > known {
            return Err(StoreError::TooNew {
                path: self.path.display().to_string(),
                found: v,
                known,
            });
        }
        for (i, m) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(m)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    fn reap_dead_runs(&self, host: &str) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, pid FROM runs WHERE status = 'running' AND host = ?1")?;
        let stale: Vec<(i64, i64)> = stmt
            .query_map([host], |r| Ok((r.get(0)?, r.get::<_, Option<i64>>(1)?.unwrap_or(0))))?
            .collect::<std::result::Result<_, _>>()?;
        for (id, pid) in stale {
            if pid as u32 != std::process::id() && !pid_alive(pid) {
                self.finish_run(id, "aborted", Some("the storlab process ended without finishing the run (killed or crashed); finished phases are kept"))?;
            }
        }
        Ok(())
    }

    /// Records a run that starts now; returns its id.
    pub fn begin_run(&mut self, run: &NewRun) -> Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (started_at, host, kind, job_name, job, command, status, pid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7)",
            params![now_rfc3339(), run.host, run.kind, run.job_name, run.job.to_string(), run.command, std::process::id()],
        )?;
        let id = tx.last_insert_rowid();
        for (k, v) in &run.tags {
            tx.execute(
                "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Stores the environment of a run.
    pub fn save_environment(&self, run_id: i64, env: &serde_json::Value) -> Result<()> {
        let s = |k: &str| env.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let n = |k: &str| env.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        self.conn.execute(
            "INSERT OR REPLACE INTO environments (run_id, host, kernel, cpu_model, cpus, memory_bytes, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![run_id, s("host"), s("kernel"), s("cpu_model"), n("cpus") as i64, n("memory_bytes") as i64, env.to_string()],
        )?;
        Ok(())
    }

    /// Stores one phase and its samples in one transaction; returns the phase id.
    pub fn save_phase(&mut self, run_id: i64, p: &PhaseRow) -> Result<i64> {
        let tx = self.conn.transaction()?;
        let id = insert_phase(&tx, run_id, p)?;
        tx.commit()?;
        Ok(id)
    }

    /// Stores runs imported from another tool, each with its environment and phases, all in one
    /// transaction: either every run is stored or none is. Returns their ids.
    pub fn import_runs(&mut self, runs: &[ImportedRun]) -> Result<Vec<i64>> {
        let tx = self.conn.transaction()?;
        let mut ids = Vec::new();
        for r in runs {
            tx.execute(
                "INSERT INTO runs (started_at, finished_at, host, kind, job_name, job, command, status, imported)
                 VALUES (?1, ?1, ?2, ?3, ?4, ?5, ?6, 'ok', 1)",
                params![
                    r.started_at,
                    r.run.host,
                    r.run.kind,
                    r.run.job_name,
                    r.run.job.to_string(),
                    r.run.command
                ],
            )?;
            let id = tx.last_insert_rowid();
            for (k, v) in &r.run.tags {
                tx.execute(
                    "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![id, k, v],
                )?;
            }
            let env = &r.environment;
            let s = |k: &str| env.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let n = |k: &str| env.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
            tx.execute(
                "INSERT INTO environments (run_id, host, kernel, cpu_model, cpus, memory_bytes, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![id, s("host"), s("kernel"), s("cpu_model"), n("cpus") as i64, n("memory_bytes") as i64, env.to_string()],
            )?;
            for p in &r.phases {
                insert_phase(&tx, id, p)?;
            }
            ids.push(id);
        }
        tx.commit()?;
        Ok(ids)
    }

    /// Records an event of a run.
    pub fn add_event(&self, run_id: i64, kind: &str, detail: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO events (run_id, at, kind, detail) VALUES (?1, ?2, ?3, ?4)",
            params![run_id, now_rfc3339(), kind, detail],
        )?;
        Ok(())
    }

    /// Stores a scan's rows and its summary (everything but the rows), in one transaction.
    pub fn save_scan(&mut self, run_id: i64, rows: &[ScanRowRecord], summary: &str) -> Result<()> {
        let tx = self.conn.transaction()?;
        for (i, r) in rows.iter().enumerate() {
            tx.execute(
                "INSERT INTO scan_rows (run_id, idx, root, path, own_files, files, dirs, apparent, allocated, json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run_id,
                    i as i64,
                    r.root,
                    r.path,
                    r.own_files_only,
                    r.files as i64,
                    r.dirs as i64,
                    r.apparent as i64,
                    r.allocated as i64,
                    r.json
                ],
            )?;
        }
        tx.execute(
            "INSERT INTO scans (run_id, json) VALUES (?1, ?2)",
            params![run_id, summary],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// A stored scan: its rows and summary, or None when the run is not a scan.
    pub fn scan(&self, run_id: i64) -> Result<Option<(Vec<ScanRowRecord>, String)>> {
        let Some(summary) = self
            .conn
            .query_row("SELECT json FROM scans WHERE run_id = ?1", [run_id], |r| {
                r.get::<_, String>(0)
            })
            .optional()?
        else {
            return Ok(None);
        };
        let mut stmt = self.conn.prepare(
            "SELECT root, path, own_files, files, dirs, apparent, allocated, json FROM scan_rows WHERE run_id = ?1 ORDER BY idx",
        )?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, bool>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, String>(7)?,
                ))
            })?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut out = Vec::with_capacity(rows.len());
        for (root, path, own, files, dirs, apparent, allocated, json) in rows {
            out.push(ScanRowRecord {
                root,
                path,
                own_files_only: own,
                files: files as u64,
                dirs: dirs as u64,
                apparent: apparent as u64,
                allocated: allocated as u64,
                json,
            });
        }
        Ok(Some((out, summary)))
    }

    /// Stores a study (a set of runs that belong together: a sweep's cells, an impact study's
    /// repetitions) whole — its members with their roles, and an impact study's events and
    /// task samples — in one transaction, so that it is either there complete or not at all;
    /// returns its id.
    pub fn save_study(
        &mut self,
        kind: &str,
        params: &serde_json::Value,
        members: &[(i64, String)],
        events: &[StudyEvent],
        samples: &[TaskSample],
    ) -> Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO studies (kind, created_at, params) VALUES (?1, ?2, ?3)",
            params![kind, now_rfc3339(), params.to_string()],
        )?;
        let id = tx.last_insert_rowid();
        for (run, role) in members {
            tx.execute(
                "INSERT OR REPLACE INTO study_members (study_id, run_id, role) VALUES (?1, ?2, ?3)",
                params![id, run, role],
            )?;
        }
        for (seq, e) in events.iter().enumerate() {
            tx.execute(
                "INSERT INTO study_events (study_id, seq, at, t, run_id, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![id, seq as i64, e.at, e.t, e.run_id, e.kind, e.detail],
            )?;
        }
        for (seq, s) in samples.iter().enumerate() {
            tx.execute(
                "INSERT INTO task_samples (study_id, seq, task, t, run_id, state, percent, bytes_done) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![id, seq as i64, s.task, s.t, s.run_id, s.state, s.percent, s.bytes_done.map(|b| b as i64)],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// Studies of one kind, newest first: (id, parameters).
    pub fn studies_of_kind(&self, kind: &str) -> Result<Vec<(i64, serde_json::Value)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, params FROM studies WHERE kind = ?1 ORDER BY id DESC")?;
        let rows = stmt
            .query_map([kind], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        rows.into_iter()
            .map(|(id, p)| Ok((id, serde_json::from_str(&p)?)))
            .collect()
    }

    /// A study's events in the order they happened.
    pub fn study_events(&self, study_id: i64) -> Result<Vec<StudyEvent>> {
        let mut stmt = self
            .conn
            .prepare("SELECT t, at, run_id, kind, detail FROM study_events WHERE study_id = ?1 ORDER BY seq")?;
        let rows = stmt
            .query_map([study_id], |r| {
                Ok(StudyEvent {
                    t: r.get(0)?,
                    at: r.get(1)?,
                    run_id: r.get(2)?,
                    kind: r.get(3)?,
                    detail: r.get(4)?,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(rows)
    }

    /// A study's task samples in the order they were taken.
    pub fn task_samples(&self, study_id: i64) -> Result<Vec<TaskSample>> {
        let mut stmt = self.conn.prepare(
            "SELECT task, t, run_id, state, percent, bytes_done FROM task_samples WHERE study_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt
            .query_map([study_id], |r| {
                Ok(TaskSample {
                    task: r.get(0)?,
                    t: r.get(1)?,
                    run_id: r.get(2)?,
                    state: r.get(3)?,
                    percent: r.get(4)?,
                    bytes_done: r.get::<_, Option<i64>>(5)?.map(|b| b as u64),
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(rows)
    }

    /// A study's kind, parameters and members (run id, role), or None.
    pub fn study(&self, study_id: i64) -> Result<Option<StudyRecord>> {
        let Some((kind, params)) = self
            .conn
            .query_row("SELECT kind, params FROM studies WHERE id = ?1", [study_id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .optional()?
        else {
            return Ok(None);
        };
        let mut stmt = self
            .conn
            .prepare("SELECT run_id, role FROM study_members WHERE study_id = ?1 ORDER BY run_id")?;
        let members = stmt
            .query_map([study_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<std::result::Result<_, _>>()?;
        Ok(Some((kind, serde_json::from_str(&params)?, members)))
    }

    /// Sets the final status of a run.
    pub fn finish_run(&self, run_id: i64, status: &str, detail: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, status_detail = ?3, finished_at = ?4 WHERE id = ?1",
            params![run_id, status, detail, now_rfc3339()],
        )?;
        Ok(())
    }

    fn tags(&self, run_id: i64) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM tags WHERE run_id = ?1 ORDER BY key")?;
        let rows = stmt
            .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<std::result::Result<_, _>>()?;
        Ok(rows)
    }

    fn run_row(&self, r: &rusqlite::Row) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: r.get(0)?,
            started_at: r.get(1)?,
            finished_at: r.get(2)?,
            host: r.get(3)?,
            kind: r.get(4)?,
            job_name: r.get(5)?,
            status: r.get(6)?,
            status_detail: r.get(7)?,
            cache_flattered: r.get(8)?,
            imported: r.get(9)?,
            tags: Vec::new(),
            phases: r.get(10)?,
        })
    }

    const RUN_COLUMNS: &'static str =
        "r.id, r.started_at, r.finished_at, r.host, r.kind, r.job_name, r.status, r.status_detail,
         r.cache_flattered, r.imported, (SELECT COUNT(*) FROM phases p WHERE p.run_id = r.id)";

    /// The newest `limit` runs, newest first.
    pub fn list_runs(&self, limit: usize) -> Result<Vec<RunRow>> {
        self.find_runs(&RunFilter {
            limit: Some(limit),
            ..RunFilter::default()
        })
    }

    /// The runs that pass `filter`, newest first.
    pub fn find_runs(&self, filter: &RunFilter) -> Result<Vec<RunRow>> {
        let mut sql = format!("SELECT {} FROM runs r WHERE 1=1", Self::RUN_COLUMNS);
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        let arg = |v: String, args: &mut Vec<rusqlite::types::Value>| {
            args.push(v.into());
            format!("?{}", args.len())
        };
        if let Some(h) = &filter.host {
            sql += &format!(" AND r.host = {}", arg(h.clone(), &mut args));
        }
        if let Some(k) = &filter.kind {
            sql += &format!(" AND r.kind = {}", arg(k.clone(), &mut args));
        }
        if let Some(j) = &filter.job {
            sql += &format!(
                " AND r.job_name LIKE {} ESCAPE '\\'",
                arg(format!("%{}%", like_escape(j)), &mut args)
            );
        }
        if let Some(d) = &filter.since {
            sql += &format!(" AND r.started_at >= {}", arg(d.clone(), &mut args));
        }
        if let Some(d) = &filter.until {
            sql += &format!(" AND r.started_at < {}", arg(d.clone(), &mut args));
        }
        for (k, v) in &filter.tags {
            let (k, v) = (arg(k.clone(), &mut args), arg(v.clone(), &mut args));
            sql +=
                &format!(" AND EXISTS (SELECT 1 FROM tags t WHERE t.run_id = r.id AND t.key = {k} AND t.value = {v})");
        }
        if !filter.ids.is_empty() {
            let ids: Vec<String> = filter.ids.iter().map(|i| i.to_string()).collect();
            sql += &format!(" AND r.id IN ({})", ids.join(","));
        }
        sql += " ORDER BY r.id DESC";
        if let Some(l) = filter.limit {
            sql += &format!(" LIMIT {l}");
        }
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows: Vec<RunRow> = stmt
            .query_map(rusqlite::params_from_iter(args), |r| self.run_row(r))?
            .collect::<std::result::Result<_, _>>()?;
        for row in &mut rows {
            row.tags = self.tags(row.id)?;
        }
        Ok(rows)
    }

    /// Sets tags on a run (replacing a tag of the same key). False when there is no such run.
    pub fn tag(&mut self, run_id: i64, tags: &[(String, String)]) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let exists: bool = tx.query_row("SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)", [run_id], |r| {
            r.get(0)
        })?;
        if exists {
            for (k, v) in tags {
                tx.execute(
                    "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![run_id, k, v],
                )?;
            }
        }
        tx.commit()?;
        Ok(exists)
    }

    /// Removes tags from a run; returns how many were there.
    pub fn untag(&mut self, run_id: i64, keys: &[String]) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut n = 0;
        for k in keys {
            n += tx.execute("DELETE FROM tags WHERE run_id = ?1 AND key = ?2", params![run_id, k])?;
        }
        tx.commit()?;
        Ok(n)
    }

    /// Deletes runs and everything stored with them, in one transaction; returns how many.
    pub fn delete_runs(&mut self, ids: &[i64]) -> Result<usize> {
        let tx = self.conn.transaction()?;
        let mut n = 0;
        for id in ids {
            n += tx.execute("DELETE FROM runs WHERE id = ?1", [id])?;
        }
        tx.commit()?;
        Ok(n)
    }

    /// Everything stored for run `id`, or None when there is no such run. Samples are included
    /// when `with_samples`.
    pub fn run(&self, id: i64, with_samples: bool) -> Result<Option<RunDetail>> {
        let sql = format!(
            "SELECT {}, r.command, r.job FROM runs r WHERE r.id = ?1",
            Self::RUN_COLUMNS
        );
        let found = self
            .conn
            .query_row(&sql, [id], |r| {
                Ok((
                    self.run_row(r)?,
                    r.get::<_, Option<String>>(11)?,
                    r.get::<_, Option<String>>(12)?,
                ))
            })
            .optional()?;
        let Some((mut run, command, job)) = found else {
            return Ok(None);
        };
        run.tags = self.tags(id)?;
        let environment = self
            .conn
            .query_row("SELECT json FROM environments WHERE run_id = ?1", [id], |r| {
                r.get::<_, String>(0)
            })
            .optional()?
            .map(|s| serde_json::from_str(&s))
            .transpose()?
            .unwrap_or(serde_json::Value::Null);
        let mut stmt = self.conn.prepare(
            "SELECT id, seq, kind, params, bytes_read, bytes_written, ops_read, ops_written, seconds, bytes_per_sec, iops,
                first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec, worker_max_bytes_per_sec, cpu_user, cpu_sys,
                lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_p99_99_ns,
                cache_flattered, interrupted, verify_bad_blocks, result, histogram
             FROM phases WHERE run_id = ?1 ORDER BY seq",
        )?;
        let mut phases = Vec::new();
        let rows = stmt.query_map([id], |r| {
            let params: String = r.get(3)?;
            let result: String = r.get(28)?;
            Ok((
                r.get::<_, i64>(0)?,
                PhaseRow {
                    seq: r.get(1)?,
                    kind: r.get(2)?,
                    params: serde_json::from_str(&params).unwrap_or(serde_json::Value::Null),
                    bytes_read: r.get::<_, i64>(4)? as u64,
                    bytes_written: r.get::<_, i64>(5)? as u64,
                    ops_read: r.get::<_, i64>(6)? as u64,
                    ops_written: r.get::<_, i64>(7)? as u64,
                    seconds: r.get(8)?,
                    bytes_per_sec: r.get(9)?,
                    iops: r.get(10)?,
                    first_done_seconds: r.get(11)?,
                    first_done_bytes_per_sec: r.get(12)?,
                    worker_min_bytes_per_sec: r.get(13)?,
                    worker_max_bytes_per_sec: r.get(14)?,
                    cpu_user: r.get(15)?,
                    cpu_sys: r.get(16)?,
                    lat_min_ns: r.get::<_, i64>(17)? as u64,
                    lat_mean_ns: r.get(18)?,
                    lat_max_ns: r.get::<_, i64>(19)? as u64,
                    lat_p50_ns: r.get::<_, i64>(20)? as u64,
                    lat_p90_ns: r.get::<_, i64>(21)? as u64,
                    lat_p99_ns: r.get::<_, i64>(22)? as u64,
                    lat_p99_9_ns: r.get::<_, i64>(23)? as u64,
                    lat_p99_99_ns: r.get::<_, i64>(24)? as u64,
                    cache_flattered: r.get(25)?,
                    interrupted: r.get(26)?,
                    verify_bad_blocks: r.get::<_, Option<i64>>(27)?.map(|v| v as u64),
                    result: serde_json::from_str(&result).unwrap_or(serde_json::Value::Null),
                    histogram: r.get::<_, Option<Vec<u8>>>(29)?.unwrap_or_default(),
                    samples: Vec::new(),
                },
            ))
        })?;
        for row in rows {
            let (phase_id, mut p) = row?;
            if with_samples {
                p.samples = self.samples(phase_id)?;
            }
            phases.push(p);
        }
        let mut stmt = self
            .conn
            .prepare("SELECT at, kind, detail FROM events WHERE run_id = ?1 ORDER BY id")?;
        let events = stmt
            .query_map([id], |r| {
                Ok(EventRow {
                    at: r.get(0)?,
                    kind: r.get(1)?,
                    detail: r.get(2)?,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(Some(RunDetail {
            run,
            command,
            job: job
                .map(|j| serde_json::from_str(&j))
                .transpose()?
                .unwrap_or(serde_json::Value::Null),
            environment,
            phases,
            events,
        }))
    }

    fn samples(&self, phase_id: i64) -> Result<Vec<SampleRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, t_start, t_end, ramp, bytes_read, bytes_written, ops_read, ops_written,
                lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_max_ns, late_ios FROM samples WHERE phase_id = ?1 ORDER BY idx",
        )?;
        let rows = stmt
            .query_map([phase_id], |r| {
                Ok(SampleRow {
                    idx: r.get(0)?,
                    t_start: r.get(1)?,
                    t_end: r.get(2)?,
                    ramp: r.get(3)?,
                    bytes_read: r.get::<_, i64>(4)? as u64,
                    bytes_written: r.get::<_, i64>(5)? as u64,
                    ops_read: r.get::<_, i64>(6)? as u64,
                    ops_written: r.get::<_, i64>(7)? as u64,
                    lat_p50_ns: r.get::<_, i64>(8)? as u64,
                    lat_p90_ns: r.get::<_, i64>(9)? as u64,
                    lat_p99_ns: r.get::<_, i64>(10)? as u64,
                    lat_p99_9_ns: r.get::<_, i64>(11)? as u64,
                    lat_max_ns: r.get::<_, i64>(12)? as u64,
                    late_ios: r.get::<_, i64>(13)? as u64,
                    targets: Vec::new(),
                })
            })?
            .collect::<std::result::Result<Vec<SampleRow>, _>>()?;
        let mut rows = rows;
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, target, bytes_read, bytes_written, ops_read, ops_written FROM target_samples
             WHERE phase_id = ?1 ORDER BY idx, target",
        )?;
        let per_target = stmt.query_map([phase_id], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                TargetSampleRow {
                    target: r.get(1)?,
                    bytes_read: r.get::<_, i64>(2)? as u64,
                    bytes_written: r.get::<_, i64>(3)? as u64,
                    ops_read: r.get::<_, i64>(4)? as u64,
                    ops_written: r.get::<_, i64>(5)? as u64,
                },
            ))
        })?;
        // Samples are in idx order and indices are dense from 0: look up by position when they
        // match, else search.
        for t in per_target {
            let (idx, t) = t?;
            let pos = match rows.get(idx as usize) {
                Some(s) if s.idx == idx => Some(idx as usize),
                _ => rows.iter().position(|s| s.idx == idx),
            };
            if let Some(p) = pos {
                rows[p].targets.push(t);
            }
        }
        Ok(rows)
    }

    /// Runs `PRAGMA integrity_check`; "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String> {
        Ok(self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(seq: u32) -> PhaseRow {
        PhaseRow {
            seq,
            kind: "write".into(),
            params: serde_json::json!({"bs": 4096}),
            bytes_written: 1 << 33,
            ops_written: 2,
            seconds: 1.5,
            samples: vec![SampleRow {
                idx: 0,
                t_end: 1.0,
                bytes_written: 1 << 32,
                ..Default::default()
            }],
            histogram: vec![1, 2, 3],
            ..Default::default()
        }
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/results.db");
        let mut s = Store::open(&path, "h").unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as i64);
        let id = s
            .begin_run(&NewRun {
                kind: "run".into(),
                host: "h".into(),
                tags: vec![("fs".into(), "ext4".into())],
                ..Default::default()
            })
            .unwrap();
        s.save_environment(id, &serde_json::json!({"host": "h", "cpus": 2}))
            .unwrap();
        s.save_phase(id, &phase(0)).unwrap();
        s.finish_run(id, "ok", None).unwrap();
        let d = s.run(id, true).unwrap().unwrap();
        assert_eq!(d.run.status, "ok");
        assert_eq!(d.run.tags, vec![("fs".to_string(), "ext4".to_string())]);
        assert_eq!(d.phases.len(), 1);
        // 64-bit byte counts survive the database.
        assert_eq!(d.phases[0].bytes_written, 1 << 33);
        assert_eq!(d.phases[0].samples[0].bytes_written, 1 << 32);
        assert_eq!(d.phases[0].histogram, vec![1, 2, 3]);
        assert_eq!(d.environment["cpus"], 2);
        assert_eq!(s.list_runs(10).unwrap()[0].phases, 1);
        assert!(s.run(id + 1, false).unwrap().is_none());
        assert_eq!(s.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn dead_runs_become_aborted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        let mut s = Store::open(&path, "h").unwrap();
        let id = s
            .begin_run(&NewRun {
                kind: "run".into(),
                host: "h".into(),
                ..Default::default()
            })
            .unwrap();
        s.save_phase(id, &phase(0)).unwrap();
        // Pretend the run belongs to a process that is gone.
        s.conn
            .execute("UPDATE runs SET pid = 999999999 WHERE id = ?1", [id])
            .unwrap();
        drop(s);
        let s = Store::open(&path, "h").unwrap();
        let d = s.run(id, false).unwrap().unwrap();
        assert_eq!(d.run.status, "aborted");
        assert_eq!(d.phases.len(), 1);
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        drop(Store::open(&path, "h").unwrap());
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        let e = Store::open(&path, "h").err().unwrap();
        assert!(e.to_string().contains("newer than this storlab"), "{e}");
    }
}
