//! Where a process's results go when the database cannot take them (spool.rs decides when):
//! the places a spool file may go, the spool written into the first that takes it, the last
//! resort when none does (the results in memory, printed as JSON on stdout when the store is
//! dropped), and what is left true in the database they were meant for.
//!
//! A SQLite database's spool goes to another filesystem than the database's own where it can —
//! the usual reason it could not be written is that its filesystem is full — so the places are
//! the user's data directory, runtime directory and temporary directory, those on another
//! filesystem first; a place without room is passed over.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::db::Conn;
use crate::write::Write;
use crate::{migrate_conn, now_rfc3339, DbTarget, Result, Store, StoreError};

/// SQLite's name for a database in memory.
pub(crate) const IN_MEMORY: &str = ":memory:";

/// What a store's target says once its results are held in memory (no spool file took them):
/// "stored as run 4 in" this.
pub(crate) const SHOWN_IN_MEMORY: &str = "memory (printed on stdout as JSON at the end)";

/// The least free space a place must have to be tried.
const LEAST_ROOM: u64 = 1 << 20;

/// What this process said about results it measured and could not store, once any store had
/// to spool: the binary's exit code says "measured, not stored" (see [`measured_not_stored`]).
static NOT_STORED: Mutex<Option<String>> = Mutex::new(None);

/// Whether this process stored any result (a run begun, a phase, a study…): a later refusal is
/// then no longer "nothing was written" (the binary's exit code 2).
static STORED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn note_stored() {
    STORED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// True once this process has stored a result (anywhere: the database, or a spool).
pub fn stored_any() -> bool {
    STORED.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn note_not_stored(said: &str) {
    *NOT_STORED.lock().unwrap_or_else(|e| e.into_inner()) = Some(said.to_string());
}

/// When this process measured results that went to a spool file (or to stdout) instead of the
/// database it was given: what it said about where they are and how to bring them in.
pub fn measured_not_stored() -> Option<String> {
    NOT_STORED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The places a spool file may go, in order: the data directory's `storlab/spool`, the runtime
/// directory, the temporary directory (`TMPDIR`, else /tmp) — for a SQLite file at `db`, those on another
/// filesystem than its own first (the usual reason it could not be written is that its
/// filesystem is full; a place without room is passed over when the spool is written).
pub(crate) fn places(db: Option<&Path>) -> Vec<PathBuf> {
    // SAFETY: getuid cannot fail.
    let user = format!("storlab-spool-{}", unsafe { libc::getuid() });
    let mut all: Vec<PathBuf> = Vec::new();
    all.extend(dirs::data_dir().map(|d| d.join("storlab").join("spool")));
    all.extend(dirs::runtime_dir().map(|d| d.join("storlab").join("spool")));
    all.push(std::env::temp_dir().join(&user));
    let mut seen = Vec::new();
    all.retain(|p| {
        let new = !seen.contains(p);
        seen.push(p.clone());
        new
    });
    let home_fs = db.and_then(filesystem_of);
    // A stable sort: the order above is kept within each of the two groups.
    all.sort_by_key(|p| home_fs.is_some() && filesystem_of(p) == home_fs);
    all
}

/// The filesystem (device number) of `p`, or of its nearest existing ancestor.
fn filesystem_of(p: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    p.ancestors().find_map(|a| std::fs::metadata(a).ok()).map(|m| m.dev())
}

/// Free bytes for an unprivileged writer on the filesystem of `p` (or its nearest existing
/// ancestor), as env's probe reads them for the targets.
fn room(p: &Path) -> Option<u64> {
    let existing = p.ancestors().find(|a| a.exists())?;
    storlab_env::space::statvfs(existing)?.free
}

/// A spool's connection, the ids its last write made, and its file (None: in memory).
pub(crate) type Taken = (Box<dyn Conn>, Vec<i64>, Option<PathBuf>);

/// Whether `dir` may hold this user's spool: made 0700 when missing (its parents as the
/// system makes them); when present, a directory — not a link — owned by this user and writable
/// by no one else. A place another user made (a 0777 directory in /tmp named as ours) could be
/// read, replaced or emptied by them before the results are brought in: it is passed over.
pub(crate) fn private_dir(dir: &Path) -> std::result::Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() {
        return Err(format!("{} is not a directory (a link, or a file)", dir.display()));
    }
    if m.uid() != me {
        return Err(format!(
            "{} belongs to uid {}, not to this user (uid {me})",
            dir.display(),
            m.uid()
        ));
    }
    if m.permissions().mode() & 0o022 != 0 {
        return Err(format!(
            "{} may be written by others (mode {:o})",
            dir.display(),
            m.permissions().mode() & 0o777
        ));
    }
    Ok(())
}

/// A new file for a spool at `file`, this user's alone (0600), made here and nowhere else: never
/// through a link, never over a file that is there.
fn new_private_file(file: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file)
        .map(|_| ())
}

/// `writes` replayed into a new spool file `name` in the first of `dirs` that is private (see
/// [`private_dir`]), has room and takes them whole (a place that fails midway is cleaned up
/// and the next is tried); when none does, into memory.
pub(crate) fn take(dirs: &[PathBuf], name: &str, writes: &[Write]) -> Result<Taken> {
    for dir in dirs {
        if let Err(why) = private_dir(dir) {
            eprintln!("storlab: not spooling into {}: {why}", dir.display());
            continue;
        }
        if room(dir).is_some_and(|r| r < LEAST_ROOM) {
            continue;
        }
        let file = dir.join(name);
        if new_private_file(&file).is_err() {
            continue;
        }
        match replay(&file, writes) {
            Ok((conn, made)) => return Ok((conn, made, Some(file))),
            Err(_) => remove_db(&file),
        }
    }
    let (conn, made) = replay(Path::new(IN_MEMORY), writes)?;
    Ok((conn, made, None))
}

/// A new SQLite database at `file` holding `writes`, all in one transaction.
fn replay(file: &Path, writes: &[Write]) -> Result<(Box<dyn Conn>, Vec<i64>)> {
    let mut db = crate::sqlite::Sqlite::open(file)?;
    migrate_conn(&mut db, &file.display().to_string())?;
    let made = crate::db::transaction(&mut db, |c| {
        let mut made = Vec::new();
        for w in writes {
            made = w.apply(c)?;
        }
        Ok(made)
    })?;
    Ok((Box::new(db), made))
}

/// A SQLite file and its WAL and shared-memory files, removed.
fn remove_db(file: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = file.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

/// The JSON document of results no database took: `storlab db copy --from FILE.json` reads it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Unstored {
    /// What the document is, so that a reader knows it at once.
    storlab_unstored_results: u32,
    /// The database they were meant for.
    database: String,
    /// Every write of the process, in order.
    writes: Vec<Write>,
}

impl Store {
    /// A database in memory holding the results of a JSON document printed by a process whose
    /// results no database took (see [`Store::settle`]); `storlab db copy` copies it on.
    pub fn open_unstored(path: &Path) -> Result<Store> {
        let text = std::fs::read_to_string(path).map_err(|e| StoreError::Open {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let doc: Unstored = serde_json::from_str(&text).map_err(|e| {
            StoreError::Request(format!(
                "{} is not the JSON storlab prints of results it could not store ({e})",
                path.display()
            ))
        })?;
        let store = Store::connect(&DbTarget::Sqlite(PathBuf::from(IN_MEMORY)), "")?;
        store.tx(|c| doc.writes.iter().try_for_each(|w| w.apply(c).map(|_| ())))?;
        *store.target.borrow_mut() = DbTarget::Sqlite(path.to_path_buf());
        Ok(store)
    }

    /// At the end of a process whose results went elsewhere: results held in memory are printed
    /// on stdout as JSON, and its runs left `running` in the database they were meant for (a
    /// SQLite file) are marked there as ended, naming where their results are — when that
    /// file can be written now; else the next open on this host marks them (runs.rs).
    fn settle(&self) {
        let Some(origin) = self.spooled_from.borrow_mut().take() else {
            return;
        };
        let journal = std::mem::take(&mut *self.journal.borrow_mut());
        let here = self.target();
        if here.file().is_some_and(|f| f == Path::new(SHOWN_IN_MEMORY)) {
            let doc = Unstored {
                storlab_unstored_results: 1,
                database: origin.to_string(),
                writes: journal.clone(),
            };
            if let Ok(text) = serde_json::to_string(&doc) {
                println!("{text}");
            }
        }
        if let Some(file) = origin.file() {
            let uuids: Vec<&str> = (journal.iter())
                .filter_map(|w| match w {
                    Write::BeginRun { uuid, .. } => Some(uuid.as_str()),
                    _ => None,
                })
                .collect();
            let _ = mark_elsewhere(file, &uuids, &here);
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.settle();
    }
}

/// Marks the runs `uuids` that `file` holds `running` as aborted, their results being in
/// `there`: a short wait for a lock, nothing created, nothing else touched.
fn mark_elsewhere(file: &Path, uuids: &[&str], there: &DbTarget) -> rusqlite::Result<()> {
    if uuids.is_empty() || !file.exists() {
        return Ok(());
    }
    let conn = rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    conn.busy_timeout(std::time::Duration::from_secs(2))?;
    let detail = match there.file() {
        Some(f) if f == Path::new(SHOWN_IN_MEMORY) => {
            "the results could not be stored here and were printed on stdout as JSON; bring them in with `storlab db copy --from FILE.json`".to_string()
        }
        _ => format!(
            "the results could not be stored here and are in {there}; bring them in with `storlab db copy --from {there} --to {}`",
            file.display()
        ),
    };
    let at = now_rfc3339();
    for uuid in uuids {
        conn.execute(
            "UPDATE runs SET status = 'aborted', status_detail = ?1, finished_at = ?2 WHERE uuid = ?3 AND status = 'running'",
            rusqlite::params![detail, at, uuid],
        )?;
    }
    Ok(())
}
