//! Runs: begun, their environment and phases stored as they finish, events, the end; listed,
//! tagged, removed and read back whole.

use rusqlite::{params, OptionalExtension, Transaction};
use storlab_model::env::Environment;
use storlab_model::result::{PhaseResult, Sample, TargetSample};
use storlab_model::run::{
    ImportedRun, NewRun, Phase, PhaseName, PhaseParams, Run, RunDetail, RunEvent, RunEventKind, RunKind, RunStatus, Tag,
};

use crate::{now_rfc3339, pid_alive, Result, Store, StoreError};

/// Which runs to list. Every field given must match; tags all must be present.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only these ids (empty: any).
    pub ids: Vec<i64>,
    /// Only this host.
    pub host: Option<String>,
    /// Only this kind.
    pub kind: Option<RunKind>,
    /// Only job names containing this.
    pub job: Option<String>,
    /// Only runs started at or after this (RFC 3339 or a date).
    pub since: Option<String>,
    /// Only runs started before this.
    pub until: Option<String>,
    /// Only runs with all these tags.
    pub tags: Vec<Tag>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
}

fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// A stored name read back as its typed value; an unknown one is a database this storlab
/// cannot read (a newer storlab would have raised the schema version).
pub(crate) fn named<T: std::str::FromStr<Err = String>>(idx: usize, text: String) -> rusqlite::Result<T> {
    text.parse()
        .map_err(|e: String| rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, e.into()))
}

fn insert_tags(tx: &Transaction, run_id: i64, tags: &[Tag]) -> Result<()> {
    for (k, v) in tags {
        tx.execute(
            "INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)",
            params![run_id, k, v],
        )?;
    }
    Ok(())
}

fn insert_environment(tx: &Transaction, run_id: i64, env: &Environment) -> Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO environments (run_id, host, kernel, cpu_model, cpus, memory_bytes, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            run_id,
            env.host,
            env.kernel,
            env.cpu_model,
            env.cpus,
            env.memory_bytes as i64,
            serde_json::to_string(env)?
        ],
    )?;
    Ok(())
}

/// Inserts a phase and its samples inside the caller's transaction: the parameters and the
/// result as documents of their types (the samples in tables of their own), and the figures
/// queries select on as columns.
fn insert_phase(tx: &Transaction, run_id: i64, p: &Phase) -> Result<i64> {
    let r = &p.result;
    // The samples have their own tables; the document holds the rest. (A clone: a phase's
    // samples are few next to the I/O that made them.)
    let document = PhaseResult {
        samples: Vec::new(),
        ..r.clone()
    };
    tx.execute(
        "INSERT INTO phases (run_id, seq, kind, params, bytes_read, bytes_written, ops_read, ops_written, seconds, bytes_per_sec, iops,
            first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec, worker_max_bytes_per_sec, cpu_user, cpu_sys,
            lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_p99_99_ns,
            cache_flattered, interrupted, verify_bad_blocks, result, histogram)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)",
        params![
            run_id,
            p.seq,
            p.kind.as_str(),
            serde_json::to_string(&p.params)?,
            r.bytes_read as i64,
            r.bytes_written as i64,
            r.ops_read as i64,
            r.ops_written as i64,
            r.all_done.seconds,
            r.all_done.bytes_per_sec,
            r.all_done.iops,
            r.first_done.seconds,
            r.first_done.bytes_per_sec,
            r.worker_min_bytes_per_sec,
            r.worker_max_bytes_per_sec,
            r.cpu_user,
            r.cpu_sys,
            r.latency.min_ns as i64,
            r.latency.mean_ns,
            r.latency.max_ns as i64,
            r.latency.p50_ns as i64,
            r.latency.p90_ns as i64,
            r.latency.p99_ns as i64,
            r.latency.p99_9_ns as i64,
            r.latency.p99_99_ns as i64,
            p.cache_flattered,
            r.interrupted,
            p.bad_blocks().map(|v| v as i64),
            serde_json::to_string(&document)?,
            r.histogram,
        ],
    )?;
    let phase_id = tx.last_insert_rowid();
    let mut stmt = tx.prepare(
        "INSERT INTO samples (phase_id, idx, t_start, t_end, ramp, bytes_read, bytes_written, ops_read, ops_written,
            lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_max_ns, late_ios)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    )?;
    let mut per_target = tx.prepare(
        "INSERT INTO target_samples (phase_id, idx, target, bytes_read, bytes_written, ops_read, ops_written)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for s in &r.samples {
        stmt.execute(params![
            phase_id,
            s.index,
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
        for t in &s.targets {
            per_target.execute(params![
                phase_id,
                s.index,
                t.target,
                t.bytes_read as i64,
                t.bytes_written as i64,
                t.ops_read as i64,
                t.ops_written as i64
            ])?;
        }
    }
    if p.cache_flattered {
        tx.execute("UPDATE runs SET cache_flattered = 1 WHERE id = ?1", [run_id])?;
    }
    Ok(phase_id)
}

impl Store {
    pub(crate) fn reap_dead_runs(&self, host: &str) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, pid FROM runs WHERE status = 'running' AND host = ?1")?;
        let stale: Vec<(i64, i64)> = stmt
            .query_map([host], |r| Ok((r.get(0)?, r.get::<_, Option<i64>>(1)?.unwrap_or(0))))?
            .collect::<std::result::Result<_, _>>()?;
        for (id, pid) in stale {
            if pid as u32 != std::process::id() && !pid_alive(pid) {
                self.finish_run(id, RunStatus::Aborted, Some("the storlab process ended without finishing the run (killed or crashed); finished phases are kept"))?;
            }
        }
        Ok(())
    }

    /// Records a run that starts now; returns its id.
    pub fn begin_run(&mut self, run: &NewRun) -> Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (started_at, host, kind, job_name, job, command, status, pid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                now_rfc3339(),
                run.host,
                run.kind.name(),
                run.job_name,
                run.job.to_string(),
                run.command,
                RunStatus::Running.name(),
                std::process::id()
            ],
        )?;
        let id = tx.last_insert_rowid();
        insert_tags(&tx, id, &run.tags)?;
        tx.commit()?;
        Ok(id)
    }

    /// Stores the environment of a run.
    pub fn save_environment(&mut self, run_id: i64, env: &Environment) -> Result<()> {
        let tx = self.conn.transaction()?;
        insert_environment(&tx, run_id, env)?;
        tx.commit()?;
        Ok(())
    }

    /// Stores one phase and its samples in one transaction; returns the phase id.
    pub fn save_phase(&mut self, run_id: i64, p: &Phase) -> Result<i64> {
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
                 VALUES (?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, 1)",
                params![
                    r.started_at,
                    r.run.host,
                    r.run.kind.name(),
                    r.run.job_name,
                    r.run.job.to_string(),
                    r.run.command,
                    RunStatus::Ok.name()
                ],
            )?;
            let id = tx.last_insert_rowid();
            insert_tags(&tx, id, &r.run.tags)?;
            insert_environment(&tx, id, &r.environment)?;
            for p in &r.phases {
                insert_phase(&tx, id, p)?;
            }
            ids.push(id);
        }
        tx.commit()?;
        Ok(ids)
    }

    /// Records an event of a run.
    pub fn add_event(&self, run_id: i64, kind: RunEventKind, detail: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO events (run_id, at, kind, detail) VALUES (?1, ?2, ?3, ?4)",
            params![run_id, now_rfc3339(), kind.name(), detail],
        )?;
        Ok(())
    }

    /// Sets the final status of a run.
    pub fn finish_run(&self, run_id: i64, status: RunStatus, detail: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, status_detail = ?3, finished_at = ?4 WHERE id = ?1",
            params![run_id, status.name(), detail, now_rfc3339()],
        )?;
        Ok(())
    }

    fn tags(&self, run_id: i64) -> Result<Vec<Tag>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM tags WHERE run_id = ?1 ORDER BY key")?;
        let rows = stmt
            .query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<std::result::Result<_, _>>()?;
        Ok(rows)
    }

    fn run_row(r: &rusqlite::Row) -> rusqlite::Result<Run> {
        Ok(Run {
            id: r.get(0)?,
            started_at: r.get(1)?,
            finished_at: r.get(2)?,
            host: r.get(3)?,
            kind: named(4, r.get(4)?)?,
            job_name: r.get(5)?,
            status: named(6, r.get(6)?)?,
            status_detail: r.get(7)?,
            cache_flattered: r.get(8)?,
            imported: r.get(9)?,
            tags: Vec::new(),
            phase_count: r.get(10)?,
        })
    }

    const RUN_COLUMNS: &'static str =
        "r.id, r.started_at, r.finished_at, r.host, r.kind, r.job_name, r.status, r.status_detail,
         r.cache_flattered, r.imported, (SELECT COUNT(*) FROM phases p WHERE p.run_id = r.id)";

    /// The newest `limit` runs, newest first.
    pub fn list_runs(&self, limit: usize) -> Result<Vec<Run>> {
        self.find_runs(&RunFilter {
            limit: Some(limit),
            ..RunFilter::default()
        })
    }

    /// The runs that pass `filter`, newest first.
    pub fn find_runs(&self, filter: &RunFilter) -> Result<Vec<Run>> {
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
            sql += &format!(" AND r.kind = {}", arg(k.name().to_string(), &mut args));
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
        let mut rows: Vec<Run> = stmt
            .query_map(rusqlite::params_from_iter(args), Self::run_row)?
            .collect::<std::result::Result<_, _>>()?;
        for row in &mut rows {
            row.tags = self.tags(row.id)?;
        }
        Ok(rows)
    }

    /// Sets tags on a run (replacing a tag of the same key). False when there is no such run.
    pub fn tag(&mut self, run_id: i64, tags: &[Tag]) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let exists: bool = tx.query_row("SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)", [run_id], |r| {
            r.get(0)
        })?;
        if exists {
            insert_tags(&tx, run_id, tags)?;
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
                    Self::run_row(r)?,
                    r.get::<_, Option<String>>(11)?,
                    r.get::<_, Option<String>>(12)?,
                ))
            })
            .optional()?;
        let Some((mut run, command, job)) = found else {
            return Ok(None);
        };
        run.tags = self.tags(id)?;
        let environment: Environment = self
            .conn
            .query_row("SELECT json FROM environments WHERE run_id = ?1", [id], |r| {
                r.get::<_, String>(0)
            })
            .optional()?
            .map(|s| serde_json::from_str(&s))
            .transpose()?
            .unwrap_or_default();
        let mut stmt = self
            .conn
            .prepare("SELECT id, seq, kind, params, result, histogram, cache_flattered FROM phases WHERE run_id = ?1 ORDER BY seq")?;
        let rows = stmt
            .query_map([id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<Vec<u8>>>(5)?,
                    r.get::<_, bool>(6)?,
                ))
            })?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let mut phases = Vec::with_capacity(rows.len());
        for (phase_id, seq, kind, params, result, histogram, cache_flattered) in rows {
            let params: PhaseParams = serde_json::from_str(&params)?;
            let mut result: PhaseResult = serde_json::from_str(&result)?;
            result.histogram = histogram.unwrap_or_default();
            if with_samples {
                result.samples = self.samples(phase_id)?;
            }
            phases.push(Phase {
                seq,
                kind: PhaseName::from_name(&kind),
                params,
                result,
                cache_flattered,
            });
        }
        let mut stmt = self
            .conn
            .prepare("SELECT at, kind, detail FROM events WHERE run_id = ?1 ORDER BY id")?;
        let events = stmt
            .query_map([id], |r| {
                Ok(RunEvent {
                    at: r.get(0)?,
                    kind: named(1, r.get(1)?)?,
                    detail: r.get(2)?,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(Some(RunDetail {
            run,
            command,
            job: job
                .map(|j| serde_json::from_str(&j))
                .transpose()
                .map_err(StoreError::Json)?
                .unwrap_or(serde_json::Value::Null),
            environment,
            phases,
            events,
        }))
    }

    fn samples(&self, phase_id: i64) -> Result<Vec<Sample>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, t_start, t_end, ramp, bytes_read, bytes_written, ops_read, ops_written,
                lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_max_ns, late_ios FROM samples WHERE phase_id = ?1 ORDER BY idx",
        )?;
        let mut rows = stmt
            .query_map([phase_id], |r| {
                let u = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)? as u64) };
                Ok(Sample {
                    index: r.get(0)?,
                    t_start: r.get(1)?,
                    t_end: r.get(2)?,
                    ramp: r.get(3)?,
                    bytes_read: u(4)?,
                    bytes_written: u(5)?,
                    ops_read: u(6)?,
                    ops_written: u(7)?,
                    lat_p50_ns: u(8)?,
                    lat_p90_ns: u(9)?,
                    lat_p99_ns: u(10)?,
                    lat_p99_9_ns: u(11)?,
                    lat_max_ns: u(12)?,
                    late_ios: u(13)?,
                    targets: Vec::new(),
                })
            })?
            .collect::<std::result::Result<Vec<Sample>, _>>()?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT idx, target, bytes_read, bytes_written, ops_read, ops_written FROM target_samples
             WHERE phase_id = ?1 ORDER BY idx, target",
        )?;
        let per_target = stmt.query_map([phase_id], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                TargetSample {
                    target: r.get(1)?,
                    bytes_read: r.get::<_, i64>(2)? as u64,
                    bytes_written: r.get::<_, i64>(3)? as u64,
                    ops_read: r.get::<_, i64>(4)? as u64,
                    ops_written: r.get::<_, i64>(5)? as u64,
                },
            ))
        })?;
        // Samples are in index order and indices are dense from 0: look up by position when
        // they match, else search.
        for t in per_target {
            let (idx, t) = t?;
            let pos = match rows.get(idx as usize) {
                Some(s) if s.index == idx => Some(idx as usize),
                _ => rows.iter().position(|s| s.index == idx),
            };
            if let Some(p) = pos {
                rows[p].targets.push(t);
            }
        }
        Ok(rows)
    }
}
