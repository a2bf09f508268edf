//! The results database: the schema and its numbered migrations (schema.rs), applied at open,
//! and typed reads and writes of the result model (crates/model): runs with their environment,
//! phases, samples and events (runs.rs), studies (studies.rs) and scans (scans.rs). Two
//! back-ends behind one interface (db.rs): SQLite (bundled, WAL mode; sqlite.rs), the default,
//! for one host; PostgreSQL for many hosts writing one database (pg.rs).
//!
//! What is stored is the model's own types, serialized with serde: a phase's parameters and
//! result are documents of `PhaseParams` and `PhaseResult`, read back as those types. The
//! figures that queries select on (bytes, throughput, latency percentiles) are also kept as
//! columns, written from the same result in one place.
//!
//! Durability rules: a run row is written when the run starts (status `running`); each phase is
//! written with its samples in one transaction; the run's status is set when it ends. A process
//! killed mid-run leaves its finished phases and a `running` row, which the next open on the
//! same host marks `aborted` once it sees that the process is gone.
//! The other files: target.rs (where `--db` points), write.rs (every write as a value) and
//! spool.rs (writes kept while a PostgreSQL server is away), health.rs (a lost connection
//! replaced), clock.rs (the database server's clock as every host's), groups.rs (groups of runs
//! named on the command line), copy.rs (`storlab db copy`), challenges.rs (the data challenge's
//! catalogue), monitors.rs (the monitor's record), sched.rs (the verify scheduler's leases).
#![deny(missing_docs)]

mod challenges;
mod check;
mod clock;
mod copy;
mod db;
mod groups;
mod health;
mod monitors;
mod pg;
mod refuge;
mod runs;
mod scans;
mod sched;
mod schema;
mod spool;
mod sqlite;
mod studies;
mod target;
mod write;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use challenges::{ReadOutcome, StoredChallenge};
pub use check::{check_file, FileCheck, TableCheck};
pub use clock::{ClockReading, StoredClockReading, TimeBase};
pub use copy::CopyReport;
pub use groups::GroupSpec;
pub use monitors::{MonitorWindow, StoredMonitor, Sweep};
pub use refuge::{measured_not_stored, stored_any};
pub use runs::{normalize_time, RunFilter};
pub use sched::{Grant, SchedEvent, SchedRunning, SchedServer};
pub use spool::{spool_files, ImportStudy, Imported, AGENT_WINDOW, COMMAND_WINDOW};
pub use target::{mask_command_line, DbTarget, PgTarget, SslMode};

/// What went wrong with the database.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be opened or created.
    #[error("cannot open the results database {path}: {reason}")]
    Open {
        /// The file, or the server's address with any password masked.
        path: String,
        /// The reason.
        reason: String,
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
    /// A PostgreSQL statement failed.
    #[error("the results database {target} refused: {reason}")]
    Postgres {
        /// The database, password masked.
        target: String,
        /// What the server said.
        reason: String,
    },
    /// The role storlab connected as may not do what was asked.
    #[error("the results database {target} refused: {reason}: the role lacks a privilege; ask the database's owner to grant it (storlab needs SELECT, INSERT, UPDATE and DELETE on its tables to store results; SELECT to read them), or give another --db")]
    Denied {
        /// The database, password masked.
        target: String,
        /// What the server said.
        reason: String,
    },
    /// The connection to the server was lost, or the SQLite file cannot be written now (locked
    /// by another process, its filesystem full).
    #[error("the results database {target} cannot be written now: {reason}")]
    Lost {
        /// The database, password masked.
        target: String,
        /// Why.
        reason: String,
    },
    /// The SQLite file is damaged: storlab writes nothing into a file it cannot read.
    #[error("the results database {path} is damaged ({reason}); nothing was written to it. See which tables are readable with `storlab db check --db {path}`, and copy what is readable into a new file with `storlab db copy --from {path} --to NEW.db`")]
    Malformed {
        /// The file.
        path: String,
        /// What SQLite said.
        reason: String,
    },
    /// A stored value is not of the type the schema says.
    #[error("results database holds a value this storlab cannot read: {0}")]
    Type(String),
    /// A request the database cannot answer as asked (no such run): the user's to fix.
    #[error("{0}")]
    Request(String),
    /// A stored document does not read as the model's type.
    #[error("results database holds a document this storlab cannot read: {0}")]
    Json(#[from] serde_json::Error),
    /// A row the database already holds by a key that must be unique (a run's UUID, a slot):
    /// another storlab process stored it at the same moment. Nothing of the write was stored.
    #[error("the results database {target} already holds what this would store: another storlab process stored the same at the same moment ({reason}); nothing of this was stored — run the command again, and it will find what the other stored")]
    Conflict {
        /// The database, password masked.
        target: String,
        /// The constraint, as the database named it.
        reason: String,
    },
    /// A write held a figure that is not a finite number: stored, it would read as nothing
    /// (JSON's null, SQL's NULL), so nothing of the write was stored.
    #[error("{what} holds a figure that is not a finite number ({at}): storlab stores only what it can read back, so nothing of it was stored")]
    NotFinite {
        /// What was to be stored ("run 4, phase 2", "the import").
        what: String,
        /// The figure's path and value.
        at: String,
    },
}

type Result<T> = std::result::Result<T, StoreError>;

/// Now, as an RFC 3339 UTC timestamp with seconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// A new random identity for a run or a study (UUID version 4).
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
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

impl DbTarget {
    /// The database a command names: `--db` when given, else $STORLAB_DB when set and not
    /// empty, else the default file under `data_dir`. A refusal names where the text came from.
    pub fn named(flag: Option<&str>, data_dir: Option<PathBuf>) -> std::result::Result<DbTarget, String> {
        let (given, from) = match (flag, std::env::var("STORLAB_DB")) {
            (Some(d), _) => (d.to_string(), "--db"),
            (None, Ok(d)) if !d.is_empty() => (d, "STORLAB_DB"),
            _ => return Ok(DbTarget::Sqlite(default_path(data_dir))),
        };
        let target = DbTarget::parse(&given).map_err(|e| format!("{from}: {e}"))?;
        match target.file() {
            Some(dir) if dir.is_dir() => Err(format!(
                "{from} names the directory {}: give a file, such as {}",
                dir.display(),
                dir.join("results.db").display()
            )),
            _ => Ok(target),
        }
    }
}

/// The results database.
pub struct Store {
    // A cell, so that reads take `&self` as they did with one SQLite connection; every method
    // borrows it only for its own statements.
    conn: RefCell<Box<dyn db::Conn>>,
    /// Where the results go: the database opened, or the spool file after a lost server.
    target: RefCell<DbTarget>,
    /// This process's writes, kept for a spool (spool.rs).
    journal: RefCell<Vec<write::Write>>,
    /// The database the results were meant for, once they go to a spool file.
    spooled_from: RefCell<Option<DbTarget>>,
    /// How long a lost server is waited for, and where the spool goes then (spool.rs).
    recovery: RefCell<spool::Recovery>,
    /// The schema version the database had before this open migrated it.
    found_version: i64,
    /// Whether the server went away, and when to connect again (health.rs).
    health: RefCell<health::Health>,
}

fn pid_alive(pid: i64) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    pid > 0
        && (unsafe { libc::kill(pid as i32, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

impl Store {
    /// Opens the SQLite database at `path` (creating it and its directory if needed); see
    /// [`Store::connect`].
    pub fn open(path: &Path, host: &str) -> Result<Store> {
        Store::connect(&DbTarget::Sqlite(path.to_path_buf()), host)
    }

    /// Opens the database `target` names (a SQLite file is created with its directory if
    /// needed), applies pending migrations, and marks runs of dead processes on `host` as
    /// aborted.
    pub fn connect(target: &DbTarget, host: &str) -> Result<Store> {
        let conn: Box<dyn db::Conn> = match target {
            DbTarget::Sqlite(path) => Box::new(sqlite::Sqlite::open(path)?),
            DbTarget::Postgres(pg) => Box::new(pg::Postgres::connect(pg)?),
        };
        let mut store = Store {
            conn: RefCell::new(conn),
            target: RefCell::new(target.clone()),
            journal: RefCell::new(Vec::new()),
            spooled_from: RefCell::new(None),
            recovery: RefCell::new(spool::Recovery::from_env()),
            found_version: 0,
            health: RefCell::new(health::Health::default()),
        };
        store.found_version = migrate_conn(store.conn.borrow_mut().as_mut(), &target.to_string())?;
        match store.reap_dead_runs(host) {
            // A role that may only read still reads, and a file another process holds locked
            // (or on a full filesystem) still reads: marking another process's run as aborted
            // is housekeeping, left to a later open that may write.
            Err(StoreError::Denied { .. }) => {}
            Err(StoreError::Lost { .. }) if target.file().is_some() => store.healthy(),
            other => other?,
        }
        Ok(store)
    }

    /// Opens a SQLite file to read only, as it is: no migration, no housekeeping (`db check`).
    /// None when its schema is not this build's (its rows are then read by the tables alone).
    pub(crate) fn read_only(path: &Path) -> Result<Option<Store>> {
        let mut conn = sqlite::Sqlite::open_read_only(path)?;
        let version = db::Conn::schema_version(&mut conn)?;
        if version != schema::MIGRATIONS.len() as i64 {
            return Ok(None);
        }
        Ok(Some(Store {
            conn: RefCell::new(Box::new(conn)),
            target: RefCell::new(DbTarget::Sqlite(path.to_path_buf())),
            journal: RefCell::new(Vec::new()),
            spooled_from: RefCell::new(None),
            recovery: RefCell::new(spool::Recovery::from_env()),
            found_version: version,
            health: RefCell::new(health::Health::default()),
        }))
    }

    /// Opens a database to read from: a SQLite file must exist (reading never creates one),
    /// refused as a request otherwise; a PostgreSQL database is made current by its
    /// migrations, like any open.
    pub fn open_existing(target: &DbTarget, host: &str) -> Result<Store> {
        if let Some(path) = target.file() {
            if !path.exists() {
                return Err(StoreError::Request(format!(
                    "no results database at {}: run `storlab demo` or `storlab run` first, or give --db FILE|URL",
                    path.display()
                )));
            }
        }
        Store::connect(target, host)
    }

    /// Which database this is (the spool file once results went there); shown, a PostgreSQL
    /// target's password is masked.
    pub fn target(&self) -> DbTarget {
        self.target.borrow().clone()
    }

    /// The words for run ids that are not stored here, with where to look: "no run 99 in
    /// FILE (`storlab results list` shows the runs there)".
    pub fn no_run(&self, ids: impl std::fmt::Display) -> String {
        self.none_of("run", ids, "results list")
    }

    /// The same for a study id, naming `storlab results studies`.
    pub fn no_study(&self, id: i64) -> String {
        self.none_of("study", id, "results studies")
    }

    /// The same for a challenge id, naming `storlab challenge list`.
    pub fn no_challenge(&self, id: i64) -> String {
        self.none_of("challenge", id, "challenge list")
    }

    /// "no WHAT IDS in FILE (`storlab LISTING` lists them there)".
    fn none_of(&self, what: &str, ids: impl std::fmt::Display, listing: &str) -> String {
        format!(
            "no {what} {ids} in {} (`storlab {listing}` lists them there)",
            self.target()
        )
    }

    /// The schema version (number of migrations applied).
    pub fn schema_version(&self) -> Result<i64> {
        self.on_conn(|c| c.schema_version())
    }

    /// The schema version the database had when it was opened (before its migrations).
    pub fn found_version(&self) -> i64 {
        self.found_version
    }

    /// The newest schema version this build knows.
    pub fn known_version() -> i64 {
        schema::MIGRATIONS.len() as i64
    }

    /// How many runs and studies the database holds.
    pub fn counts(&self) -> Result<(u64, u64)> {
        let n = |sql: &str| -> Result<u64> { db::one(self.query(sql, &[])?).map_or(Ok(0), |r| r.u64(0)) };
        Ok((n("SELECT COUNT(*) FROM runs")?, n("SELECT COUNT(*) FROM studies")?))
    }

    /// Runs a query.
    fn query(&self, sql: &str, params: &[db::Val]) -> Result<Vec<db::Row>> {
        self.on_conn(|c| c.query(sql, params))
    }

    /// Runs a statement (the tests' way to set up what they check).
    #[cfg(test)]
    fn exec(&self, sql: &str, params: &[db::Val]) -> Result<u64> {
        self.on_conn(|c| c.exec(sql, params))
    }

    /// Runs `f` in one transaction.
    fn tx<T>(&self, f: impl FnOnce(&mut dyn db::Conn) -> Result<T>) -> Result<T> {
        self.on_conn(|c| db::transaction(c, f))
    }

    /// Limits this connection's SQLite page cache to `kib` KiB (SQLite's default is 2 MiB; a
    /// PostgreSQL connection keeps no such cache in this process). For a daemon that appends
    /// for days (the monitor): its footprint reaches its bound at once instead of growing into
    /// it over its first hours.
    pub fn limit_cache(&self, kib: u32) -> Result<()> {
        if self.conn.borrow().dialect() == db::Dialect::Sqlite {
            self.conn.borrow_mut().batch(&format!("PRAGMA cache_size = -{kib}"))?;
        }
        Ok(())
    }

    /// Checks the database's consistency; "ok" when it is sound (SQLite's integrity check;
    /// PostgreSQL keeps its own and answers "ok").
    pub fn integrity_check(&self) -> Result<String> {
        if self.conn.borrow().dialect() == db::Dialect::Postgres {
            return Ok("ok".into());
        }
        let rows = self.query("PRAGMA integrity_check", &[])?;
        db::one(rows).map(|r| r.text(0)).unwrap_or(Ok("ok".into()))
    }
}

/// Applies the pending migrations to `c` (`shown` names the database in messages): all in one
/// transaction under the schema lock, so that another process that got there first leaves
/// nothing to do and a failure leaves the schema as it was. A database newer than this build
/// is refused. Returns the version found.
fn migrate_conn(c: &mut dyn db::Conn, shown: &str) -> Result<i64> {
    let known = schema::MIGRATIONS.len() as i64;
    let too_new = |found: i64| StoreError::TooNew {
        path: shown.to_string(),
        found,
        known,
    };
    let v = c.schema_version()?;
    if v > known {
        return Err(too_new(v));
    }
    if v == known {
        return Ok(v);
    }
    db::transaction(c, |c| {
        c.lock_schema()?;
        let v = c.schema_version()?;
        if v > known {
            return Err(too_new(v));
        }
        for (i, m) in schema::MIGRATIONS.iter().enumerate().skip(v as usize) {
            m.apply(c)?;
            c.set_schema_version(i as i64 + 1)?;
        }
        Ok(v)
    })
}

#[cfg(test)]
mod tests;
