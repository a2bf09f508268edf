//! The SQLite back-end (rusqlite, SQLite bundled): one file, WAL mode, the schema version in
//! `PRAGMA user_version`.

use std::path::Path;

use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::{Connection, ToSql};

use crate::db::{Conn, Dialect, Row, Val};
use crate::{Result, StoreError};

impl ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Val::Null => ToSqlOutput::Owned(SqlValue::Null),
            Val::I64(v) => ToSqlOutput::Owned(SqlValue::Integer(*v)),
            Val::F64(v) => ToSqlOutput::Owned(SqlValue::Real(*v)),
            Val::Bool(b) => ToSqlOutput::Owned(SqlValue::Integer(*b as i64)),
            Val::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Val::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

fn val(v: ValueRef) -> Val {
    match v {
        ValueRef::Null => Val::Null,
        ValueRef::Integer(i) => Val::I64(i),
        ValueRef::Real(f) => Val::F64(f),
        ValueRef::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Val::Bytes(b.to_vec()),
    }
}

/// How long a statement waits for a lock another process holds (a writer's transaction, a
/// backup) before SQLite answers "database is locked".
pub(crate) const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A SQLite database.
pub(crate) struct Sqlite {
    conn: Connection,
    /// The file, as messages name it.
    path: String,
}

/// SQLite's answer as the store's error. A file another process holds locked, or whose
/// filesystem is full, cannot be written *now*: the store treats that as it treats a
/// PostgreSQL server that went away (`Lost`: waited for within a window, then spooled;
/// spool.rs). A damaged file is `Malformed`, named with what to do next.
/// True for a unique key or primary key taken (not a NOT NULL or foreign key refusal, which are
/// storlab's own faults and stay as SQLite said them).
fn unique_key(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
}

pub(crate) fn classify(e: rusqlite::Error, path: &str) -> StoreError {
    use rusqlite::ErrorCode as C;
    let Some(code) = e.sqlite_error_code() else {
        return StoreError::Sql(e);
    };
    let why = match code {
        C::ConstraintViolation if unique_key(&e) => {
            return StoreError::Conflict {
                target: path.to_string(),
                reason: e.to_string(),
            }
        }
        C::DatabaseBusy | C::DatabaseLocked => "another process holds the file locked",
        C::DiskFull => "the filesystem holding it is full",
        C::DatabaseCorrupt => {
            return StoreError::Malformed {
                path: path.to_string(),
                reason: e.to_string(),
            }
        }
        C::NotADatabase => {
            return StoreError::Open {
                path: path.to_string(),
                reason: format!(
                    "it is not a SQLite database ({e}); storlab leaves it as it is: give --db a results file, or the path of a new one"
                ),
            }
        }
        _ => return StoreError::Sql(e),
    };
    StoreError::Lost {
        target: path.to_string(),
        reason: format!("{e}: {why}"),
    }
}

impl Sqlite {
    /// Opens (creating it and its directory if needed) the file at `path`.
    pub fn open(path: &Path) -> Result<Sqlite> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A directory storlab makes for results is its user's alone (0700).
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| StoreError::Dir {
                    path: dir.display().to_string(),
                    source: e,
                })?;
        }
        if path != Path::new(crate::refuge::IN_MEMORY) {
            // A results file storlab makes is its user's alone (0600), as SQLite then makes its
            // WAL beside it; made here, never through a link. One that is there is used as it is.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path);
        }
        let shown = path.display().to_string();
        let open_err = |e: rusqlite::Error| match classify(e, &shown) {
            e @ (StoreError::Malformed { .. } | StoreError::Open { .. }) => e,
            StoreError::Lost { reason, .. } => StoreError::Open {
                path: shown.clone(),
                reason,
            },
            other => StoreError::Open {
                path: shown.clone(),
                reason: other.to_string(),
            },
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(LOCK_WAIT).map_err(open_err)?;
        // Switching a new file to WAL needs it alone, and SQLite answers "database is locked"
        // at once rather than through the busy timeout while another process opens it too (a
        // fleet's agents starting together): asked again for as long as the timeout.
        let t0 = std::time::Instant::now();
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Ok(()) => break,
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy && t0.elapsed().as_secs() < 10 =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(open_err(e)),
            }
        }
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(open_err)?;
        Ok(Sqlite { conn, path: shown })
    }
}

impl Sqlite {
    /// Opens the existing file at `path` to read only (`db check`: a damaged file is never
    /// written while it is looked at).
    pub fn open_read_only(path: &Path) -> Result<Sqlite> {
        let shown = path.display().to_string();
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| classify(e, &shown))?;
        conn.busy_timeout(LOCK_WAIT).map_err(|e| classify(e, &shown))?;
        Ok(Sqlite { conn, path: shown })
    }

    /// `f` on the connection, SQLite's errors classified (above).
    fn on<T>(&mut self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T> {
        f(&mut self.conn).map_err(|e| classify(e, &self.path))
    }
}

impl Conn for Sqlite {
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64> {
        self.on(|c| Ok(c.prepare_cached(sql)?.execute(rusqlite::params_from_iter(params))? as u64))
    }

    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>> {
        self.on(|c| {
            let mut stmt = c.prepare_cached(sql)?;
            let n = stmt.column_count();
            let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
                Ok(Row((0..n)
                    .map(|i| r.get_ref(i).map(val))
                    .collect::<rusqlite::Result<_>>()?))
            })?;
            rows.collect::<rusqlite::Result<_>>()
        })
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.on(|c| c.execute_batch(sql))
    }

    fn bulk(&mut self, table: &str, columns: &[&str], rows: &mut dyn Iterator<Item = Vec<Val>>) -> Result<()> {
        // One prepared statement, executed per row, inside the caller's transaction: SQLite's
        // fastest insert short of its own import tools.
        let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES ({})",
            columns.join(", "),
            marks.join(", ")
        );
        self.on(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            for row in rows {
                stmt.execute(rusqlite::params_from_iter(&row))?;
            }
            Ok(())
        })
    }

    fn schema_version(&mut self) -> Result<i64> {
        self.on(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
    }

    fn set_schema_version(&mut self, v: i64) -> Result<()> {
        self.on(|c| c.pragma_update(None, "user_version", v))
    }

    fn wait_for_locks(&mut self, d: std::time::Duration) -> Result<()> {
        self.on(|c| c.busy_timeout(d))
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}
