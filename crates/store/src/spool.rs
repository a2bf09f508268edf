//! The store's writes, and what happens to them when a PostgreSQL server goes away: each write
//! is retried on a new connection for a bounded time (`STORLAB_DB_RETRY` seconds, default 60),
//! applied again only if it had not committed; when the server stays away, everything this
//! process has written (kept in its journal) is replayed into a spool — a SQLite file under
//! `~/.local/share/storlab/spool/` (`STORLAB_SPOOL` to put it elsewhere) — with the same ids
//! and UUIDs, and the rest of the process writes there. The user is told the file and the
//! `storlab db copy` that brings it in; copying skips what the server already has (by UUID) and
//! replaces a run the server holds unfinished with its finished copy.
//!
//! The journal holds the process's own writes whole, samples included: a process that writes a
//! run already holds its results in memory, and a spool must not depend on the server to
//! rebuild what it had.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use storlab_model::env::Environment;
use storlab_model::run::{ImportedRun, NewRun, Phase, RunEventKind, RunStatus};
use storlab_model::run::{RankPhaseRow, RankRow};
use storlab_model::scan::Report;
use storlab_model::study::NewStudy;

use storlab_model::study::{Role, StudyParams};

use crate::write::Write;
use crate::{new_uuid, now_rfc3339, DbTarget, Result, Store, StoreError};

/// How long a command that stores runs waits for a server that went away before its results go
/// to a spool file, unless `STORLAB_DB_RETRY` says otherwise.
pub const COMMAND_WINDOW: Duration = Duration::from_secs(60);

/// How long a process that runs for days (`challenge run | agent | resume`, `monitor run`,
/// `sched agent`) waits for a server that went away, unless `STORLAB_DB_RETRY` says otherwise:
/// a minor-version restart or a failover takes a few minutes.
pub const AGENT_WINDOW: Duration = Duration::from_secs(600);

/// `STORLAB_DB_RETRY`, seconds, when set to a number ≥ 0.
fn env_window() -> Option<Duration> {
    std::env::var("STORLAB_DB_RETRY")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

/// How long a lost server is waited for before the process's results go to a spool file, and
/// where that file goes.
#[derive(Debug, Clone)]
pub(crate) struct Recovery {
    pub window: Duration,
    /// The spool's directory as the user set it (`STORLAB_SPOOL`, or [`Store::set_recovery`]);
    /// None: the first of refuge.rs's places with room.
    pub spool_dir: Option<PathBuf>,
    /// False for a process that rides outages out itself (an agent, the monitor): after the
    /// window the write fails with `Lost` instead of going to a spool file.
    pub spool: bool,
}

impl Recovery {
    /// `STORLAB_DB_RETRY` (seconds, default 60) and `STORLAB_SPOOL`.
    pub fn from_env() -> Recovery {
        Recovery {
            window: env_window().unwrap_or(COMMAND_WINDOW),
            spool_dir: std::env::var_os("STORLAB_SPOOL")
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            spool: true,
        }
    }

    /// The directories a spool file may go to, in order, for a database at `db` (a SQLite
    /// file) or on a server (None).
    fn dirs(&self, db: Option<&Path>) -> Vec<PathBuf> {
        match &self.spool_dir {
            Some(d) => vec![d.clone()],
            None => crate::refuge::places(db),
        }
    }
}

/// The spool files waiting (`STORLAB_SPOOL`, else every place refuge.rs would put one), oldest
/// first: the SQLite files, and the JSON of results no file could take.
pub fn spool_files() -> Vec<PathBuf> {
    let dirs = Recovery::from_env().dirs(None);
    // Only this user's own places: a file in another's could have been put there by them.
    let mut files: Vec<PathBuf> = (dirs.iter())
        .filter(|d| d.exists() && crate::refuge::private_dir(d).is_ok())
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    files.dedup();
    files
}

impl Store {
    /// Applies a write in one transaction. A database that cannot take it now (a PostgreSQL
    /// server away, a SQLite file locked or on a full filesystem) is waited for within the
    /// window, then the process's results go to a spool file; a damaged SQLite file takes
    /// nothing more, and they go to a spool file at once.
    fn write(&self, mut w: Write) -> Result<Vec<i64>> {
        if let Some(at) = storlab_model::finite::first_non_finite(&w) {
            return Err(StoreError::NotFinite { what: w.what(), at });
        }
        let spools = self.recovery.borrow().spool;
        let made = match self.tx(|c| w.apply(c)) {
            Err(StoreError::Lost { target, reason }) => self.recover(&w, target, reason)?,
            Err(StoreError::Malformed { path, reason }) if spools => self.spool(&w, &path, &reason)?,
            other => other?,
        };
        crate::refuge::note_stored();
        if spools {
            w.keep_ids(&made);
            self.journal.borrow_mut().push(w);
        }
        Ok(made)
    }

    /// The database went away during `w`: tries again until the retry window closes (applying
    /// `w` unless it had committed), else spools.
    fn recover(&self, w: &Write, target: String, reason: String) -> Result<Vec<i64>> {
        // health.rs said that the database is away, and tries it again at each use once it is
        // time; this waits for that within the window.
        let (window, lock_wait) = (self.recovery.borrow().window, crate::sqlite::LOCK_WAIT);
        let deadline = Instant::now() + window;
        let mut last = reason;
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100).min(deadline.saturating_duration_since(Instant::now())));
            // A SQLite lock is waited for no longer than the window has left.
            let left = deadline.saturating_duration_since(Instant::now());
            let _ = self
                .conn
                .borrow_mut()
                .wait_for_locks(lock_wait.min(left).max(Duration::from_millis(1)));
            let attempt = self.tx(|c| match w.committed(c)? {
                Some(made) => Ok(made),
                None => w.apply(c),
            });
            let _ = self.conn.borrow_mut().wait_for_locks(lock_wait);
            match attempt {
                Ok(made) => return Ok(made),
                Err(StoreError::Lost { reason, .. }) => last = reason,
                Err(e) => return Err(e),
            }
        }
        if !self.recovery.borrow().spool {
            return Err(StoreError::Lost { target, reason: last });
        }
        self.spool(w, &target, &last)
    }

    /// Replays the journal and `w` into a new spool file — the first place that takes it —
    /// and makes it this store's database; when none does, into memory, printed as JSON on
    /// stdout when the store is dropped (refuge.rs).
    fn spool(&self, w: &Write, target: &str, reason: &str) -> Result<Vec<i64>> {
        let origin = self.target();
        let dirs = self.recovery.borrow().dirs(origin.file());
        let writes: Vec<Write> = self
            .journal
            .borrow()
            .iter()
            .chain(std::iter::once(w))
            .cloned()
            .collect();
        let stamp = now_rfc3339().replace(':', "");
        let name = format!("{stamp}-{}.db", std::process::id());
        let (conn, made, place) = crate::refuge::take(&dirs, &name, &writes)?;
        *self.conn.borrow_mut() = conn;
        self.healthy();
        let bring_in = match &place {
            Some(file) => {
                *self.target.borrow_mut() = DbTarget::Sqlite(file.clone());
                format!(
                    "storlab: the results database {target} could not be written ({reason}); this process's results \
                     are kept in {} and nothing is lost. Bring them in when it can be written again with:\n  \
                     storlab db copy --from {} --to '{target}'",
                    file.display(),
                    file.display()
                )
            }
            None => {
                *self.target.borrow_mut() = DbTarget::Sqlite(PathBuf::from(crate::refuge::SHOWN_IN_MEMORY));
                format!(
                    "storlab: the results database {target} could not be written ({reason}), nor a spool file in \
                     any of {}; this process's results will be printed on stdout as one JSON document when it \
                     ends. Save it to a file and bring it in with:\n  storlab db copy --from FILE.json --to '{target}'",
                    dirs.iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        };
        eprintln!("{bring_in}");
        crate::refuge::note_not_stored(&bring_in);
        *self.spooled_from.borrow_mut() = Some(origin);
        Ok(made)
    }

    /// Sets how long a lost server is waited for and where the spool file goes then (instead of
    /// `STORLAB_DB_RETRY` and `STORLAB_SPOOL`).
    pub fn set_recovery(&mut self, window: Duration, spool_dir: PathBuf) {
        let mut r = self.recovery.borrow_mut();
        r.window = window;
        r.spool_dir = Some(spool_dir);
        r.spool = true;
    }

    /// For a process that runs for days and rides a server's outages out itself (an agent, the
    /// monitor): its outage window is `STORLAB_DB_RETRY` seconds when set, else
    /// [`AGENT_WINDOW`]; a write waits that long for the server (applied once, as above), then
    /// fails with `Lost` — never to a spool file, which would hold the rest of a week apart
    /// from the database the other hosts share.
    pub fn ride_out(&self) {
        let mut r = self.recovery.borrow_mut();
        r.window = env_window().unwrap_or(AGENT_WINDOW);
        r.spool = false;
    }

    /// How long this process waits for a server that went away before it gives up (a write,
    /// or an agent's work).
    pub fn outage_window(&self) -> Duration {
        self.recovery.borrow().window
    }

    /// The database the results were meant for, when they went to a spool file instead.
    pub fn spooled_from(&self) -> Option<String> {
        self.spooled_from.borrow().as_ref().map(|t| t.to_string())
    }

    /// Records a run that starts now; returns its id.
    pub fn begin_run(&mut self, run: &NewRun) -> Result<i64> {
        let made = self.write(Write::BeginRun {
            id: None,
            uuid: new_uuid(),
            started_at: now_rfc3339(),
            pid: std::process::id() as i64,
            run: run.clone(),
        })?;
        Ok(made[0])
    }

    /// Stores the environment of a run.
    pub fn save_environment(&mut self, run_id: i64, env: &Environment) -> Result<()> {
        self.write(Write::Environment {
            run_id,
            env: env.clone(),
        })
        .map(|_| ())
    }

    /// Stores the MPI ranks of a run many processes ran together.
    pub fn save_ranks(&mut self, run_id: i64, ranks: &[RankRow]) -> Result<()> {
        self.write(Write::Ranks {
            run_id,
            ranks: ranks.to_vec(),
        })
        .map(|_| ())
    }

    /// Stores each rank's part of one phase of such a run.
    pub fn save_rank_phases(&mut self, run_id: i64, rows: &[RankPhaseRow]) -> Result<()> {
        self.write(Write::RankPhases {
            run_id,
            rows: rows.to_vec(),
        })
        .map(|_| ())
    }

    /// Stores one phase and its samples in one transaction; returns the phase id.
    pub fn save_phase(&mut self, run_id: i64, p: &Phase) -> Result<i64> {
        let made = self.write(Write::Phase {
            run_id,
            phase: Box::new(p.clone()),
        })?;
        Ok(made[0])
    }

    /// Stores runs imported from another tool, each with its environment and phases, and the
    /// studies they make (an IOzone matrix's cells), all in one transaction: either every run
    /// and study is stored or none is. A run's identity comes from its content (see
    /// [`import_uuid`]): a run the database holds already — the same file imported again — is
    /// skipped and said, as `db copy` skips a run it holds; a study is stored when all its runs
    /// are new.
    pub fn import_runs(&mut self, runs: &[ImportedRun], studies: &[ImportStudy]) -> Result<Imported> {
        // Another process importing the same file at the same moment stores first: the runs it
        // stored are then found as stored ones, and the rest stored.
        let mut tries = 0;
        loop {
            match self.import_runs_once(runs, studies) {
                Err(StoreError::Conflict { .. }) if tries < 5 => tries += 1,
                other => return other,
            }
        }
    }

    fn import_runs_once(&mut self, runs: &[ImportedRun], studies: &[ImportStudy]) -> Result<Imported> {
        for s in studies {
            if let Some((i, _)) = s.members.iter().find(|(i, _)| *i >= runs.len()) {
                return Err(StoreError::Request(format!(
                    "an imported study names run {i} of an import of {} run(s)",
                    runs.len()
                )));
            }
        }
        let uuids: Vec<String> = runs.iter().map(import_uuid).collect::<Result<_>>()?;
        let mut done = Imported::default();
        // Each run's new place among those stored, None when the database holds it.
        let mut place = Vec::with_capacity(runs.len());
        let mut fresh = Vec::new();
        for (i, uuid) in uuids.iter().enumerate() {
            match crate::db::one(self.query("SELECT id FROM runs WHERE uuid = ?1", crate::db::vals![uuid])?) {
                Some(row) => {
                    done.already.push(row.i64(0)?);
                    place.push(None);
                }
                None => {
                    place.push(Some(fresh.len()));
                    fresh.push(i);
                }
            }
        }
        if fresh.is_empty() {
            return Ok(done);
        }
        let whole = |s: &&ImportStudy| s.members.iter().all(|(i, _)| place[*i].is_some());
        let studies: Vec<ImportStudy> = (studies.iter().filter(whole))
            .map(|s| ImportStudy {
                params: s.params.clone(),
                members: s
                    .members
                    .iter()
                    .map(|(i, r)| (place[*i].unwrap_or(0), r.clone()))
                    .collect(),
            })
            .collect();
        done.stored = self.write(Write::Import {
            ids: Vec::new(),
            uuids: fresh.iter().map(|i| uuids[*i].clone()).collect(),
            runs: fresh.iter().map(|i| runs[*i].clone()).collect(),
            studies: studies.into_iter().map(|s| (new_uuid(), now_rfc3339(), s)).collect(),
        })?;
        Ok(done)
    }

    /// Records an event of a run.
    pub fn add_event(&self, run_id: i64, kind: RunEventKind, detail: &str) -> Result<()> {
        self.write(Write::Event {
            run_id,
            at: now_rfc3339(),
            kind,
            detail: detail.to_string(),
        })
        .map(|_| ())
    }

    /// Sets the final status of a run.
    pub fn finish_run(&self, run_id: i64, status: RunStatus, detail: Option<&str>) -> Result<()> {
        self.write(Write::Finish {
            run_id,
            status,
            detail: detail.map(str::to_string),
            at: now_rfc3339(),
            only_if_running: false,
        })
        .map(|_| ())
    }

    /// Ends a run another process left `running` when that process is gone, unless the run has
    /// ended meanwhile (its process finished it between our look and this write). Housekeeping,
    /// not a result: written once, outside the journal, never spooled.
    pub(crate) fn abort_if_still_running(&self, run_id: i64, detail: &str) -> Result<()> {
        let w = Write::Finish {
            run_id,
            status: RunStatus::Aborted,
            detail: Some(detail.to_string()),
            at: now_rfc3339(),
            only_if_running: true,
        };
        self.tx(|c| w.apply(c)).map(|_| ())
    }

    /// Stores a scan's report in one transaction.
    pub fn save_scan(&mut self, run_id: i64, report: &Report) -> Result<()> {
        self.write(Write::Scan {
            run_id,
            report: Box::new(report.clone()),
        })
        .map(|_| ())
    }

    /// Stores a study whole — its members with their roles, its events and task samples — in
    /// one transaction, so that it is either there complete or not at all; returns its id.
    pub fn save_study(&mut self, study: &NewStudy) -> Result<i64> {
        let made = self.write(Write::Study {
            id: None,
            uuid: new_uuid(),
            created_at: now_rfc3339(),
            study: study.clone(),
        })?;
        Ok(made[0])
    }
}

/// What an import stored, and what the database held already.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    /// The ids of the runs stored now.
    pub stored: Vec<i64>,
    /// The ids of the runs the database held already (the same content imported before).
    pub already: Vec<i64>,
}

/// An imported run's identity, from what it holds: a UUID (version 5) of its job's document and
/// its phases' figures — not where the file was (its name, its place, a line number in it), not
/// when it was imported or what time was taken for a run the file does not date, not the host
/// or tags the import gave it — so that the same output imported again, under another name, from
/// another directory or after a copy, is known as the same runs (docs/results.md).
fn import_uuid(r: &ImportedRun) -> Result<String> {
    let job = without_place(&r.run.job);
    let content = serde_json::to_string(&(&r.run.job_name, &job, &r.phases))?;
    let name = format!("storlab-import:{content}");
    Ok(uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, name.as_bytes()).to_string())
}

/// A job document without what says where and when it was imported rather than what it holds.
fn without_place(v: &serde_json::Value) -> serde_json::Value {
    const PLACE: [&str; 6] = [
        "imported_from",
        "time",
        "document_line",
        "line",
        "first_line",
        "job_index",
    ];
    match v {
        serde_json::Value::Object(o) => serde_json::Value::Object(
            o.iter()
                .filter(|(k, _)| !PLACE.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), without_place(v)))
                .collect(),
        ),
        serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(without_place).collect()),
        other => other.clone(),
    }
}

/// A study of runs being imported (the cells of an IOzone matrix), stored with them in one
/// transaction; its members are named by their place in the import's runs, since the runs
/// have no ids yet.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImportStudy {
    /// What the study is.
    pub params: StudyParams,
    /// Each member: its index in the imported runs, and its role.
    pub members: Vec<(usize, Role)>,
}
