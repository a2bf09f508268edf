//! Runs: begun, their environment and phases stored as they finish, events, the end; listed,
//! tagged, removed and read back whole.

use storlab_model::env::Environment;
use storlab_model::result::{PhaseResult, Sample, TargetSample};
use storlab_model::run::{
    Phase, PhaseName, PhaseParams, RankPhaseRow, RankRow, Run, RunDetail, RunEvent, RunKind, Tag,
};

use crate::db::{one, vals, Row, Val};

use crate::write::insert_tags;
use crate::{pid_alive, Result, Store, StoreError};

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
    /// Only runs started at or after this (RFC 3339, or a date: its midnight UTC).
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

/// A moment given on the command line (`--since`, `--until`) as the RFC 3339 UTC timestamp the
/// database compares: a date is its midnight UTC (a month, a year: their first day's); a time
/// without a zone is UTC.
pub fn normalize_time(given: &str) -> std::result::Result<String, String> {
    let s = given.trim();
    let full = match s.len() {
        4 => format!("{s}-01-01T00:00:00Z"),
        7 => format!("{s}-01T00:00:00Z"),
        10 => format!("{s}T00:00:00Z"),
        _ => s.to_string(),
    };
    let t = humantime::parse_rfc3339_weak(full.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(&full))
        .map_err(|_| {
            format!(
                "'{given}' is not a date or a time: give 2026, 2026-11, 2026-11-01, 2026-11-01T08:00:00 or \
                 2026-11-01T08:00:00Z (UTC)"
            )
        })?;
    Ok(humantime::format_rfc3339_seconds(t).to_string())
}

/// A stored name read back as its typed value; an unknown one is a database this storlab
/// cannot read (a newer storlab would have raised the schema version).
pub(crate) fn named<T: std::str::FromStr<Err = String>>(text: String) -> Result<T> {
    text.parse().map_err(StoreError::Type)
}

impl Store {
    pub(crate) fn reap_dead_runs(&self, host: &str) -> Result<()> {
        let stale = self.query(
            "SELECT id, pid FROM runs WHERE status = 'running' AND host = ?1",
            vals![host],
        )?;
        for row in stale {
            let (id, pid) = (row.i64(0)?, row.opt_i64(1)?.unwrap_or(0));
            if pid as u32 != std::process::id() && !pid_alive(pid) {
                // The process may have finished its run and exited between the query and
                // now: only a run still running is ended here.
                self.abort_if_still_running(
                    id,
                    "the storlab process ended without finishing the run here (killed or crashed, or the file could not be \
                     written and its results went to a spool file: `storlab db info` lists them); finished phases are kept",
                )?;
            }
        }
        Ok(())
    }

    fn tags(&self, run_id: i64) -> Result<Vec<Tag>> {
        self.query(
            "SELECT key, value FROM tags WHERE run_id = ?1 ORDER BY key",
            vals![run_id],
        )?
        .iter()
        .map(|r| Ok((r.text(0)?, r.text(1)?)))
        .collect()
    }

    fn run_row(mut r: Row) -> Result<Run> {
        Ok(Run {
            id: r.i64(0)?,
            started_at: r.take_text(1)?,
            finished_at: r.take_opt_text(2)?,
            host: r.take_text(3)?,
            kind: named(r.take_text(4)?)?,
            job_name: r.take_opt_text(5)?,
            status: named(r.take_text(6)?)?,
            status_detail: r.take_opt_text(7)?,
            cache_flattered: r.bool(8)?,
            imported: r.bool(9)?,
            tags: Vec::new(),
            phase_count: r.u32(10)?,
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
        let mut args: Vec<Val> = Vec::new();
        let arg = |v: String, args: &mut Vec<Val>| {
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
            let d = normalize_time(d).map_err(StoreError::Request)?;
            sql += &format!(" AND r.started_at >= {}", arg(d, &mut args));
        }
        if let Some(d) = &filter.until {
            let d = normalize_time(d).map_err(StoreError::Request)?;
            sql += &format!(" AND r.started_at < {}", arg(d, &mut args));
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
        let mut runs: Vec<Run> = self
            .query(&sql, &args)?
            .into_iter()
            .map(Self::run_row)
            .collect::<Result<_>>()?;
        self.attach_tags(&mut runs)?;
        Ok(runs)
    }

    /// Reads the tags of `runs` in one query (one per run was most of a 10,000-run listing's
    /// time against a server).
    fn attach_tags(&self, runs: &mut [Run]) -> Result<()> {
        if runs.is_empty() {
            return Ok(());
        }
        // The ids are integers of our own, written into the statement: one statement for any
        // number of runs, in both dialects. A listing of most runs in a range reads the range
        // (an index range scan) rather than naming ten thousand ids.
        let (lo, hi) = runs
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), r| (lo.min(r.id), hi.max(r.id)));
        let dense = runs.len() > 100 && (hi - lo + 1) as usize <= 2 * runs.len();
        let which = if dense {
            format!("run_id BETWEEN {lo} AND {hi}")
        } else {
            let ids: Vec<String> = runs.iter().map(|r| r.id.to_string()).collect();
            format!("run_id IN ({})", ids.join(","))
        };
        let mut by_run: std::collections::HashMap<i64, Vec<Tag>> = std::collections::HashMap::new();
        let sql = format!("SELECT run_id, key, value FROM tags WHERE {which} ORDER BY run_id, key");
        for mut r in self.query(&sql, &[])? {
            by_run
                .entry(r.i64(0)?)
                .or_default()
                .push((r.take_text(1)?, r.take_text(2)?));
        }
        for run in runs {
            run.tags = by_run.remove(&run.id).unwrap_or_default();
        }
        Ok(())
    }

    /// Sets tags on a run (replacing a tag of the same key). False when there is no such run.
    pub fn tag(&mut self, run_id: i64, tags: &[Tag]) -> Result<bool> {
        self.tx(|c| {
            let exists = !c.query("SELECT id FROM runs WHERE id = ?1", vals![run_id])?.is_empty();
            if exists {
                insert_tags(c, run_id, tags)?;
            }
            Ok(exists)
        })
    }

    /// Removes tags from a run; returns how many were there.
    pub fn untag(&mut self, run_id: i64, keys: &[String]) -> Result<usize> {
        self.tx(|c| {
            let mut n = 0;
            for k in keys {
                n += c.exec("DELETE FROM tags WHERE run_id = ?1 AND key = ?2", vals![run_id, k])?;
            }
            Ok(n as usize)
        })
    }

    /// Deletes runs and everything stored with them, in one transaction; returns how many.
    pub fn delete_runs(&mut self, ids: &[i64]) -> Result<usize> {
        self.tx(|c| {
            let mut n = 0;
            for id in ids {
                n += c.exec("DELETE FROM runs WHERE id = ?1", vals![*id])?;
            }
            Ok(n as usize)
        })
    }

    /// The UUID of run `id`: its identity in every database it is copied to.
    pub fn run_uuid(&self, id: i64) -> Result<Option<String>> {
        one(self.query("SELECT uuid FROM runs WHERE id = ?1", vals![id])?)
            .map(|r| r.text(0))
            .transpose()
    }

    /// Of the runs `ids`, those the database does not hold, in the order given.
    pub fn runs_missing(&self, ids: &[i64]) -> Result<Vec<i64>> {
        let found = self.find_runs(&crate::RunFilter {
            ids: ids.to_vec(),
            ..crate::RunFilter::default()
        })?;
        Ok(ids
            .iter()
            .filter(|i| !found.iter().any(|r| r.id == **i))
            .copied()
            .collect())
    }

    /// The seed stored run `id` wrote its data with (its first phase that wrote with
    /// verification on), for `storlab run --verify-against`. A run that is not there, or that
    /// wrote nothing with verification, is refused as [`StoreError::Request`], saying why.
    pub fn writer_seed(&self, id: i64) -> Result<u64> {
        let run = self
            .run(id, false)?
            .ok_or_else(|| StoreError::Request(format!("--verify-against {id}: {}", self.no_run(id))))?;
        run.phases
            .iter()
            .find_map(|p| match &p.params {
                storlab_model::run::PhaseParams::Plan(plan) if plan.kind.writes() && plan.settings.verify => Some(plan.seed),
                _ => None,
            })
            .ok_or_else(|| {
                StoreError::Request(format!(
                    "--verify-against {id}: run {id} wrote nothing with --verify (its blocks carry no header to check); verify a run that wrote with --verify --keep"
                ))
            })
    }

    /// Everything stored for run `id`, or None when there is no such run. Samples are included
    /// when `with_samples`.
    pub fn run(&self, id: i64, with_samples: bool) -> Result<Option<RunDetail>> {
        let sql = format!(
            "SELECT {}, r.command, r.job FROM runs r WHERE r.id = ?1",
            Self::RUN_COLUMNS
        );
        let Some(row) = one(self.query(&sql, vals![id])?) else {
            return Ok(None);
        };
        let (command, job) = (row.opt_text(11)?, row.opt_text(12)?);
        let mut run = Self::run_row(row)?;
        run.tags = self.tags(id)?;
        Ok(Some(RunDetail {
            ranks: self.run_ranks(id)?,
            rank_phases: self.run_rank_phases(id)?,
            run,
            command,
            job: job
                .map(|j| serde_json::from_str(&j))
                .transpose()
                .map_err(StoreError::Json)?
                .unwrap_or(serde_json::Value::Null),
            environment: self.run_environment(id)?,
            phases: self.run_phases(id, with_samples)?,
            events: self.run_events(id)?,
        }))
    }

    /// The environment recorded with run `id` (empty when none was).
    fn run_environment(&self, id: i64) -> Result<Environment> {
        Ok(
            one(self.query("SELECT json FROM environments WHERE run_id = ?1", vals![id])?)
                .map(|r| r.text(0))
                .transpose()?
                .map(|s| serde_json::from_str(&s))
                .transpose()?
                .unwrap_or_default(),
        )
    }

    /// Run `id`'s phases in order, each with its samples when `with_samples`.
    fn run_phases(&self, id: i64, with_samples: bool) -> Result<Vec<Phase>> {
        let rows = self.query(
            "SELECT id, seq, kind, params, result, histogram, cache_flattered, histogram_read, histogram_write, histogram_sync,
                    histogram_slat_read, histogram_slat_write, histogram_clat_read, histogram_clat_write
             FROM phases WHERE run_id = ?1 ORDER BY seq",
            vals![id],
        )?;
        let mut phases = Vec::with_capacity(rows.len());
        for r in rows {
            let params: PhaseParams = serde_json::from_str(&r.text(3)?)?;
            let mut result: PhaseResult = serde_json::from_str(&r.text(4)?)?;
            result.histogram = r.bytes(5)?;
            result.histograms_rw = [r.bytes(7)?, r.bytes(8)?];
            result.histogram_sync = r.bytes(9)?;
            result.histograms_slat = [r.bytes(10)?, r.bytes(11)?];
            result.histograms_clat = [r.bytes(12)?, r.bytes(13)?];
            if with_samples {
                result.samples = self.samples(r.i64(0)?)?;
            }
            phases.push(Phase {
                seq: r.u32(1)?,
                kind: PhaseName::from_name(&r.text(2)?),
                params,
                result,
                cache_flattered: r.bool(6)?,
            });
        }
        Ok(phases)
    }

    /// What happened during run `id`, in the order it happened.
    fn run_events(&self, id: i64) -> Result<Vec<RunEvent>> {
        self.query(
            "SELECT at, kind, detail FROM events WHERE run_id = ?1 ORDER BY id",
            vals![id],
        )?
        .iter()
        .map(|r| {
            Ok(RunEvent {
                at: r.text(0)?,
                kind: named(r.text(1)?)?,
                detail: r.text(2)?,
            })
        })
        .collect()
    }

    /// The ranks (hosts) of a team run `id`; empty for a run on one host.
    fn run_ranks(&self, id: i64) -> Result<Vec<RankRow>> {
        self.query(
            "SELECT rank, host, clock_offset_seconds, environment FROM run_ranks WHERE run_id = ?1 ORDER BY rank",
            vals![id],
        )?
        .iter()
        .map(|r| {
            Ok(RankRow {
                rank: r.u32(0)?,
                host: r.text(1)?,
                clock_offset_seconds: r.f64(2)?,
                environment: serde_json::from_str(&r.text(3)?)?,
            })
        })
        .collect()
    }

    /// Each rank's own result of each phase of a team run `id`.
    fn run_rank_phases(&self, id: i64) -> Result<Vec<RankPhaseRow>> {
        self.query(
            "SELECT seq, rank, host, start_seconds, end_seconds, result FROM phase_ranks WHERE run_id = ?1 ORDER BY seq, rank",
            vals![id],
        )?
        .iter()
        .map(|r| {
            Ok(RankPhaseRow {
                seq: r.u32(0)?,
                rank: r.u32(1)?,
                host: r.text(2)?,
                start_seconds: r.f64(3)?,
                end_seconds: r.f64(4)?,
                result: serde_json::from_str(&r.text(5)?)?,
            })
        })
        .collect()
    }

    fn samples(&self, phase_id: i64) -> Result<Vec<Sample>> {
        let mut rows = self
            .query(
                "SELECT idx, t_start, t_end, ramp, bytes_read, bytes_written, ops_read, ops_written,
                lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_max_ns, late_ios, lat_mean_read_ns,
                lat_mean_write_ns FROM samples WHERE phase_id = ?1 ORDER BY idx",
                vals![phase_id],
            )?
            .iter()
            .map(|r| {
                Ok(Sample {
                    index: r.u32(0)?,
                    t_start: r.f64(1)?,
                    t_end: r.f64(2)?,
                    ramp: r.bool(3)?,
                    bytes_read: r.u64(4)?,
                    bytes_written: r.u64(5)?,
                    ops_read: r.u64(6)?,
                    ops_written: r.u64(7)?,
                    lat_p50_ns: r.u64(8)?,
                    lat_p90_ns: r.u64(9)?,
                    lat_p99_ns: r.u64(10)?,
                    lat_p99_9_ns: r.u64(11)?,
                    lat_max_ns: r.u64(12)?,
                    late_ios: r.u64(13)?,
                    lat_mean_read_ns: r.opt_f64(14)?,
                    lat_mean_write_ns: r.opt_f64(15)?,
                    targets: Vec::new(),
                })
            })
            .collect::<Result<Vec<Sample>>>()?;
        let per_target = self.query(
            "SELECT idx, target, bytes_read, bytes_written, ops_read, ops_written FROM target_samples
             WHERE phase_id = ?1 ORDER BY idx, target",
            vals![phase_id],
        )?;
        // Samples are in index order and indices are dense from 0: look up by position when
        // they match, else search.
        for r in per_target {
            let idx = r.u32(0)?;
            let t = TargetSample {
                target: u16::try_from(r.i64(1)?).map_err(|_| StoreError::Type("a target number above 65535".into()))?,
                bytes_read: r.u64(2)?,
                bytes_written: r.u64(3)?,
                ops_read: r.u64(4)?,
                ops_written: r.u64(5)?,
            };
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
