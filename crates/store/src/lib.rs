//! The results database: the schema and its numbered migrations (schema.rs), applied at open,
//! and typed reads and writes of the result model (crates/model): runs with their environment,
//! phases, samples and events (runs.rs), studies (studies.rs) and scans (scans.rs). SQLite
//! (bundled) in WAL mode.
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
#![deny(missing_docs)]

mod groups;
mod runs;
mod scans;
mod schema;
mod studies;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::Connection;

pub use groups::GroupSpec;
pub use runs::RunFilter;

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
    /// A request the database cannot answer as asked (no such run): the user's to fix.
    #[error("{0}")]
    Request(String),
    /// A stored document does not read as the model's type.
    #[error("results database holds a document this storlab cannot read: {0}")]
    Json(#[from] serde_json::Error),
}

type Result<T> = std::result::Result<T, StoreError>;

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
        let open_err = |e| StoreError::Open {
            path: path.display().to_string(),
            source: e,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(open_err)?;
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
        let known = schema::MIGRATIONS.len() as i64;
        if v > known {
            return Err(StoreError::TooNew {
                path: self.path.display().to_string(),
                found: v,
                known,
            });
        }
        for (i, m) in schema::MIGRATIONS.iter().enumerate().skip(v as usize) {
            let tx = self.conn.transaction()?;
            match m {
                schema::Migration::Sql(sql) => tx.execute_batch(sql)?,
                schema::Migration::Code(f) => f(&tx)?,
            }
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    /// Runs `PRAGMA integrity_check`; "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String> {
        Ok(self.conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?)
    }
}

#[cfg(test)]
mod tests;
