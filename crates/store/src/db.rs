//! The two back-ends behind one small interface: statements with `?N` placeholders and values of
//! one type ([`Val`]) in, rows of [`Val`]s out, transactions, and a bulk insert. SQLite
//! (rusqlite) and PostgreSQL (the `postgres` crate) implement it; the store's SQL is written
//! once against it, and what differs between the dialects (the schema's types, the schema
//! version's place, the fastest bulk insert) is kept per back-end in sqlite.rs and pg.rs.

use crate::Result;

/// A value bound to a statement or read from a row. A back-end maps it to its column's type
/// (PostgreSQL: an RFC 3339 text into a `timestamptz`, a JSON text into `jsonb`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Null,
    I64(i64),
    F64(f64),
    Bool(bool),
    Text(String),
    Bytes(Vec<u8>),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::I64(v)
    }
}
impl From<u64> for Val {
    fn from(v: u64) -> Val {
        // Counters and sizes are 64-bit unsigned; both databases store signed 64-bit integers,
        // which hold every value storlab produces (bytes up to 8 EiB).
        Val::I64(v as i64)
    }
}
impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::I64(v as i64)
    }
}
impl From<u16> for Val {
    fn from(v: u16) -> Val {
        Val::I64(v as i64)
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::F64(v)
    }
}
impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Bool(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}
impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}
impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}
impl From<Vec<u8>> for Val {
    fn from(v: Vec<u8>) -> Val {
        Val::Bytes(v)
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

impl From<&Option<String>> for Val {
    fn from(v: &Option<String>) -> Val {
        v.as_deref().map_or(Val::Null, Into::into)
    }
}

/// Values to bind: `vals![a, b, c]`.
macro_rules! vals {
    ($($v:expr),* $(,)?) => { &[$(crate::db::Val::from($v)),*][..] };
}
pub(crate) use vals;

/// A row read back.
pub(crate) struct Row(pub Vec<Val>);

fn bad(i: usize, want: &str, got: &Val) -> crate::StoreError {
    crate::StoreError::Type(format!("column {i}: expected {want}, found {got:?}"))
}

impl Row {
    pub fn i64(&self, i: usize) -> Result<i64> {
        match &self.0[i] {
            Val::I64(v) => Ok(*v),
            Val::Bool(b) => Ok(*b as i64),
            other => Err(bad(i, "an integer", other)),
        }
    }
    pub fn u64(&self, i: usize) -> Result<u64> {
        Ok(self.i64(i)? as u64)
    }
    pub fn u32(&self, i: usize) -> Result<u32> {
        u32::try_from(self.i64(i)?).map_err(|_| bad(i, "a 32-bit count", &self.0[i]))
    }
    pub fn opt_i64(&self, i: usize) -> Result<Option<i64>> {
        match &self.0[i] {
            Val::Null => Ok(None),
            _ => self.i64(i).map(Some),
        }
    }
    pub fn f64(&self, i: usize) -> Result<f64> {
        match &self.0[i] {
            Val::F64(v) => Ok(*v),
            Val::I64(v) => Ok(*v as f64),
            other => Err(bad(i, "a number", other)),
        }
    }
    pub fn opt_f64(&self, i: usize) -> Result<Option<f64>> {
        match &self.0[i] {
            Val::Null => Ok(None),
            _ => self.f64(i).map(Some),
        }
    }
    pub fn bool(&self, i: usize) -> Result<bool> {
        match &self.0[i] {
            Val::Bool(b) => Ok(*b),
            Val::I64(v) => Ok(*v != 0),
            other => Err(bad(i, "a boolean", other)),
        }
    }
    pub fn text(&self, i: usize) -> Result<String> {
        match &self.0[i] {
            Val::Text(s) => Ok(s.clone()),
            other => Err(bad(i, "text", other)),
        }
    }
    /// The text in column `i`, moved out of the row (no copy: for the rows a listing reads by
    /// the ten thousand).
    pub fn take_text(&mut self, i: usize) -> Result<String> {
        match std::mem::replace(&mut self.0[i], Val::Null) {
            Val::Text(s) => Ok(s),
            other => Err(bad(i, "text", &other)),
        }
    }
    /// Like [`Row::take_text`], NULL allowed.
    pub fn take_opt_text(&mut self, i: usize) -> Result<Option<String>> {
        match &self.0[i] {
            Val::Null => Ok(None),
            _ => self.take_text(i).map(Some),
        }
    }
    pub fn opt_text(&self, i: usize) -> Result<Option<String>> {
        match &self.0[i] {
            Val::Null => Ok(None),
            _ => self.text(i).map(Some),
        }
    }
    pub fn bytes(&self, i: usize) -> Result<Vec<u8>> {
        match &self.0[i] {
            Val::Bytes(b) => Ok(b.clone()),
            Val::Null => Ok(Vec::new()),
            other => Err(bad(i, "bytes", other)),
        }
    }
}

/// What the store asks of a back-end.
pub(crate) trait Conn: Send {
    /// Runs a statement; returns the rows it changed.
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64>;
    /// Runs a query; returns its rows.
    fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>>;
    /// Runs statements without parameters (a migration's DDL).
    fn batch(&mut self, sql: &str) -> Result<()>;
    /// Inserts many rows into `table`'s `columns` (the fastest way the back-end has).
    fn bulk(&mut self, table: &str, columns: &[&str], rows: &mut dyn Iterator<Item = Vec<Val>>) -> Result<()>;
    /// The number of migrations applied.
    fn schema_version(&mut self) -> Result<i64>;
    /// Records the number of migrations applied (inside the migration's transaction).
    fn set_schema_version(&mut self, v: i64) -> Result<()>;
    /// Holds, until the transaction ends, the lock that serializes migrations across
    /// processes (PostgreSQL: an advisory lock; SQLite's own write lock does it there).
    fn lock_schema(&mut self) -> Result<()> {
        Ok(())
    }
    /// How long a statement waits for a lock another process holds before it fails (SQLite;
    /// a server queues its own).
    fn wait_for_locks(&mut self, _: std::time::Duration) -> Result<()> {
        Ok(())
    }
    /// Which SQL this back-end speaks.
    fn dialect(&self) -> Dialect;
}

/// Which SQL a back-end speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// The first row's first column.
pub(crate) fn one(rows: Vec<Row>) -> Option<Row> {
    rows.into_iter().next()
}

/// Runs `f` in a transaction: committed when it returns Ok, rolled back otherwise.
///
/// SQLite's transactions begin IMMEDIATE, taking the write lock at once (waiting for it under
/// the busy timeout): a deferred transaction that reads first and writes later fails at once
/// with "database is locked" when another process wrote in between (WAL's busy snapshot, which
/// no busy timeout waits out) — twenty scheduler agents on one file did just that.
pub(crate) fn transaction<T>(c: &mut dyn Conn, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
    c.batch(match c.dialect() {
        Dialect::Sqlite => "BEGIN IMMEDIATE",
        Dialect::Postgres => "BEGIN",
    })?;
    // A commit that fails (SQLite's filesystem full as it writes the log) may leave the
    // transaction open: it is rolled back, so that the write can be tried again whole.
    match f(c).and_then(|v| c.batch("COMMIT").map(|()| v)) {
        Ok(v) => Ok(v),
        Err(e) => {
            let _ = c.batch("ROLLBACK");
            Err(e)
        }
    }
}
