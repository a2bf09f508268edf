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

/// A SQLite database.
pub(crate) struct Sqlite(pub Connection);

impl Sqlite {
    /// Opens (creating it and its directory if needed) the file at `path`.
    pub fn open(path: &Path) -> Result<Sqlite> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Dir {
                path: dir.display().to_string(),
                source: e,
            })?;
        }
        let open_err = |e: rusqlite::Error| StoreError::Open {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
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
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(Sqlite(conn))
    }
}

impl Conn for Sqlite {
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64> {
        let mut stmt = self.0.prepare_cached(sql)?;
        Ok(stmt.execute(rusqlite::params_from_iter(params))? as u64)
    }

    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>> {
        let mut stmt = self.0.prepare_cached(sql)?;
        let n = stmt.column_count();
        let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
            Ok(Row((0..n)
                .map(|i| r.get_ref(i).map(val))
                .collect::<rusqlite::Result<_>>()?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.0.execute_batch(sql)?)
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
        let mut stmt = self.0.prepare_cached(&sql)?;
        for row in rows {
            stmt.execute(rusqlite::params_from_iter(&row))?;
        }
        Ok(())
    }

    fn schema_version(&mut self) -> Result<i64> {
        Ok(self.0.query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    fn set_schema_version(&mut self, v: i64) -> Result<()> {
        Ok(self.0.pragma_update(None, "user_version", v)?)
    }

    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }
}
