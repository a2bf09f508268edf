//! `storlab db check`: how sound a SQLite results file is — SQLite's own integrity check, and
//! for each table whether every row of it reads — opened read-only, so that a damaged file is
//! never written while it is looked at.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::{Result, StoreError};

/// What `db check` found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileCheck {
    /// The file.
    pub path: String,
    /// SQLite's integrity check: `["ok"]` when sound, else its first complaints.
    pub integrity: Vec<String>,
    /// Each table, in name order.
    pub tables: Vec<TableCheck>,
    /// Runs and studies whose rows read but which no command can read as what they are (a
    /// document that does not parse, a figure stored as nothing): each named, with why.
    pub unreadable: Vec<Unreadable>,
}

/// A run or study that does not read as one.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unreadable {
    /// "run 4", "study 2".
    pub what: String,
    /// What reading it said.
    pub why: String,
}

/// One table of a checked file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableCheck {
    /// Its name.
    pub name: String,
    /// The rows read before the end or the first error.
    pub rows_read: u64,
    /// Why reading stopped short (None: every row read).
    pub error: Option<String>,
}

impl FileCheck {
    /// Whether the file is sound: the integrity check says ok and every table reads.
    pub fn sound(&self) -> bool {
        self.integrity == ["ok"] && self.tables.iter().all(|t| t.error.is_none()) && self.unreadable.is_empty()
    }
}

/// The most complaints of the integrity check kept.
const COMPLAINTS: usize = 20;

/// Checks the SQLite file at `path` without writing to it.
pub fn check_file(path: &Path) -> Result<FileCheck> {
    let shown = path.display().to_string();
    if !path.is_file() {
        return Err(StoreError::Request(format!("no SQLite results file at {shown}")));
    }
    let open_err = |e: rusqlite::Error| StoreError::Open {
        path: shown.clone(),
        reason: e.to_string(),
    };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(open_err)?;
    conn.busy_timeout(crate::sqlite::LOCK_WAIT).map_err(open_err)?;
    // A file damaged where the check itself must read answers with an error: that is its
    // verdict.
    let integrity = integrity(&conn, COMPLAINTS).unwrap_or_else(|e| vec![e.to_string()]);
    let names: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .map_err(open_err)?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(open_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(open_err)?
    };
    let tables: Vec<TableCheck> = names.into_iter().map(|name| read_table(&conn, name)).collect();
    let unreadable = if tables.iter().all(|t| t.error.is_none()) {
        unreadable(path)
    } else {
        Vec::new()
    };
    Ok(FileCheck {
        path: shown,
        integrity,
        tables,
        unreadable,
    })
}

/// Every run and study read as the commands read them (`results show`, `export`, `report`):
/// those that do not read, named. Nothing when the file's schema is not this build's.
fn unreadable(path: &Path) -> Vec<Unreadable> {
    let Ok(Some(store)) = crate::Store::read_only(path) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let ids = |table: &str| -> Vec<i64> {
        store
            .query(&format!("SELECT id FROM {table} ORDER BY id"), &[])
            .map(|rows| rows.iter().filter_map(|r| r.i64(0).ok()).collect())
            .unwrap_or_default()
    };
    for id in ids("runs") {
        if let Err(e) = store.run(id, true).and_then(|_| store.scan(id)) {
            found.push(Unreadable {
                what: format!("run {id}"),
                why: e.to_string(),
            });
        }
    }
    for id in ids("studies") {
        if let Err(e) = store.study(id) {
            found.push(Unreadable {
                what: format!("study {id}"),
                why: e.to_string(),
            });
        }
    }
    found
}

/// SQLite's `PRAGMA integrity_check(n)`: "ok", or up to `n` complaints.
fn integrity(conn: &Connection, n: usize) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA integrity_check({n})"))?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// Reads every row of `name` (every column, so that each page is visited), counting them.
fn read_table(conn: &Connection, name: String) -> TableCheck {
    let mut rows_read = 0;
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    let error = (|| -> rusqlite::Result<()> {
        let mut stmt = conn.prepare(&format!("SELECT * FROM {quoted}"))?;
        let columns = stmt.column_count();
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            for i in 0..columns {
                row.get_ref(i)?;
            }
            rows_read += 1;
        }
        Ok(())
    })()
    .err()
    .map(|e| e.to_string());
    TableCheck { name, rows_read, error }
}
