//! The SQLite results file's own faults, met for real: the filesystem under it filling (ext4 on
//! a loop device, filled by a file another process writes), a write lock another process holds
//! (Python's sqlite3 in a write transaction, as a backup tool or an admin's `sqlite3` session
//! holds one), and a damaged file (a page of it overwritten). Each case checks that what the
//! command measured is stored — in the file, or in the spool file or JSON it named, copied in
//! afterwards with the command it said — by recomputing the phase's figures from the stored
//! samples, and that the file passes SQLite's own `PRAGMA integrity_check`, read here by Python.
//!
//! SQLite faults only: the PostgreSQL pass of scripts/test leaves this file out (tests/db.rs
//! takes a server away for real).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use common::{loop_filesystem, stderr, stdout};
use serde_json::Value;

/// A scratch home on tmpfs: the data, runtime and temporary directories a spool may go to are
/// all in it, so that nothing is written outside.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::Builder::new()
                .prefix("storlab-sqlite-")
                .tempdir_in("/dev/shm")
                .unwrap(),
        }
    }
    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
    /// storlab with `db` as its results file and this home's directories; `env` on top.
    fn storlab(&self, db: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
        for d in ["data", "run", "tmp"] {
            std::fs::create_dir_all(self.path(d)).unwrap();
        }
        let mut c = Command::new(common::bin());
        c.args(args)
            .env("STORLAB_DB", db)
            .env("HOME", self.path("home"))
            .env("XDG_DATA_HOME", self.path("data"))
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env("TMPDIR", self.path("tmp"))
            .env_remove("STORLAB_SPOOL")
            .env_remove("STORLAB_DB_RETRY");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("run storlab")
    }
    /// `storlab db copy --from FROM --to TO` (with `extra`), the results file `db` as usual.
    fn db_copy(&self, db: &Path, from: &Path, to: &Path, extra: &[&str]) -> Output {
        let args = [
            &[
                "db",
                "copy",
                "--from",
                from.to_str().unwrap(),
                "--to",
                to.to_str().unwrap(),
            ][..],
            extra,
        ]
        .concat();
        self.storlab(db, &[], &args)
    }

    /// A write run of `secs` seconds on this home's target, sampled every `interval`.
    fn write_run(&self, db: &Path, env: &[(&str, &str)], secs: u32, interval: &str) -> Output {
        let target = self.path("target");
        std::fs::create_dir_all(&target).unwrap();
        let runtime = format!("{secs}s");
        self.storlab(
            db,
            env,
            &[
                "run",
                "--target",
                target.to_str().unwrap(),
                "--phase",
                "write",
                "--size",
                "8MiB",
                "--runtime",
                &runtime,
                "--interval",
                interval,
                "--json",
            ],
        )
    }
}

/// Python, which reads SQLite files with its own copy of SQLite.
fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3");
    assert!(out.status.success(), "python3 failed: {}", stderr(&out));
    stdout(&out)
}

/// SQLite's own verdict on the file.
fn integrity(db: &Path) -> String {
    python(
        "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
        &[db.to_str().unwrap()],
    )
    .trim()
    .to_string()
}

/// The run begun at `started_at` as the file holds it, read by Python: its status, and its
/// phase's bytes written and operations as the samples add them up (the test's own sum).
fn stored_run(db: &Path, started_at: &str) -> Option<(String, u64, u64)> {
    let out = python(
        "import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
r = c.execute('SELECT id, status FROM runs WHERE started_at = ?', (sys.argv[2],)).fetchone()
if r is None:
    print('none')
else:
    b, o = c.execute('SELECT COALESCE(SUM(s.bytes_written), 0), COALESCE(SUM(s.ops_written), 0) FROM samples s '
                     'JOIN phases p ON p.id = s.phase_id WHERE p.run_id = ?', (r[0],)).fetchone()
    print(r[1], b, o)",
        &[db.to_str().unwrap(), started_at],
    );
    let f: Vec<&str> = out.split_whitespace().collect();
    (f[0] != "none").then(|| (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap()))
}

/// What the command printed of its run: when it began, its bytes written and operations.
fn printed(run: &Value) -> (String, u64, u64) {
    let r = &run["phases"][0]["result"];
    (
        run["started_at"].as_str().unwrap().to_string(),
        r["bytes_written"].as_u64().unwrap(),
        r["ops_written"].as_u64().unwrap(),
    )
}

/// The run's JSON document: the first document on stdout (the JSON of results no database
/// took may follow it).
fn run_document(out: &Output) -> Value {
    serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter::<Value>()
        .find_map(|v| v.ok().filter(|v| v.get("phases").is_some()))
        .unwrap_or_else(|| panic!("no run document on stdout: {}", stdout(out)))
}

/// A process holding a write transaction on `db` from `after` seconds for `hold` seconds,
/// counted from when it is ready (Python started, the file open): returned then.
fn hold_lock(db: &Path, after: f64, hold: f64) -> Child {
    ready(
        Command::new("python3")
            .arg("-c")
            .arg(
                "import sqlite3,sys,time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
print('ready', flush=True)
time.sleep(float(sys.argv[2]))
c.execute('BEGIN IMMEDIATE')
time.sleep(float(sys.argv[3]))
c.execute('ROLLBACK')",
            )
            .args([db.to_str().unwrap(), &after.to_string(), &hold.to_string()]),
    )
}

/// `cmd` started, once it has said `ready` on stdout (the interpreter's own start, slow on a
/// busy machine, is not counted in the delays it is given).
fn ready(cmd: &mut Command) -> Child {
    use std::io::BufRead;
    let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().expect("python3");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

/// The spool file a message names (`storlab db copy --from FILE --to …`).
fn named_spool(err: &str) -> PathBuf {
    let line = err
        .lines()
        .find(|l| l.contains("storlab db copy --from"))
        .unwrap_or_else(|| panic!("{err}"));
    let from = line.split("--from ").nth(1).unwrap().split(' ').next().unwrap();
    PathBuf::from(from)
}

fn assert_stored_as_printed(db: &Path, run: &Value) {
    let (started, bytes, ops) = printed(run);
    let (status, sum_bytes, sum_ops) = stored_run(db, &started).expect("the run is in the file");
    assert_eq!(status, "ok");
    assert!(bytes > 0, "the run moved bytes");
    assert_eq!(
        (sum_bytes, sum_ops),
        (bytes, ops),
        "the stored samples add up to what was printed"
    );
}

/// A lock held past the wait: the run goes to a spool file (exit 6, "measured, not stored"),
/// the file names it with the command that brings it in, and that command does; the run's
/// record in the file is not left `running`. A lock released within the wait is waited
/// through: the run is stored in the file itself.
#[test]
fn a_write_lock_held_by_another_process_loses_nothing() {
    let home = Home::new();
    let db = home.path("results.db");
    let first = home.write_run(&db, &[], 1, "100ms");
    assert!(first.status.success(), "{}", stderr(&first));

    // Held for 4 s from 1.5 s into a 3 s run: SQLite's own 10 s wait covers it.
    let mut holder = hold_lock(&db, 1.5, 4.0);
    let out = home.write_run(&db, &[], 3, "100ms");
    holder.wait().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_stored_as_printed(&db, &run_document(&out));

    // Held for 25 s: past SQLite's 10 s and the 2 s window after it.
    let mut holder = hold_lock(&db, 1.0, 25.0);
    let out = home.write_run(&db, &[("STORLAB_DB_RETRY", "2")], 2, "100ms");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "measured, not stored: {err}");
    assert!(err.contains("another process holds the file locked"), "{err}");
    let spool = named_spool(&err);
    assert!(
        spool.starts_with(home.path("data")),
        "the data directory takes a lock's spool: {err}"
    );
    assert_eq!(err.matches("storlab db copy --from").count(), 1, "said once: {err}");
    holder.wait().unwrap();
    let run = run_document(&out);
    let (started, _, _) = printed(&run);
    // Its process ended while the lock was held; once the file can be written, storlab
    // shows (and marks) its record as ended, not running.
    let list = home.storlab(&db, &[], &["results", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&list.stdout).unwrap();
    let record = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["started_at"] == started.as_str());
    assert_eq!(record.unwrap()["status"], "aborted", "{listed}");
    let (status, ..) = stored_run(&db, &started).expect("the run's record");
    assert_eq!(status, "aborted", "marked in the file");
    let copy = home.db_copy(&db, &spool, &db, &[]);
    assert!(copy.status.success(), "{}", stderr(&copy));
    assert!(
        stdout(&copy).contains("1 unfinished run(s) replaced"),
        "{}",
        stdout(&copy)
    );
    assert_stored_as_printed(&db, &run);
    assert_eq!(integrity(&db), "ok");
}

/// The filesystem under the results file fills during a run (another process fills it): with
/// room again within the window, the run is stored in the file; with none, it goes to a spool
/// file on another filesystem, and then — with the spool's own place full too — as JSON on
/// stdout, each brought in afterwards by the command named, and the file stays sound.
#[test]
fn a_full_filesystem_under_the_results_file_loses_nothing() {
    let home = Home::new();
    let point = home.path("full");
    std::fs::create_dir_all(&point).unwrap();
    let fs = loop_filesystem("mkfs.ext4", 8 << 20, &point);
    let db = point.join("results.db");
    let first = home.write_run(&db, &[], 1, "100ms");
    assert!(first.status.success(), "{}", stderr(&first));
    let filler = point.join("filler");
    let fill = |after: f64, free_after: Option<f64>| {
        ready(
            Command::new("python3")
                .arg("-c")
                .arg(
                    "import sys,time,os
print('ready', flush=True)
time.sleep(float(sys.argv[2]))
with open(sys.argv[1], 'wb') as f:
    try:
        while True:
            f.write(b'x' * 65536); f.flush(); os.fsync(f.fileno())
    except OSError:
        pass
if sys.argv[3] != 'keep':
    time.sleep(float(sys.argv[3])); os.remove(sys.argv[1])",
                )
                .args([
                    filler.to_str().unwrap(),
                    &after.to_string(),
                    &free_after.map_or("keep".into(), |s| s.to_string()),
                ]),
        )
    };

    // Full from 1 s into a 3 s run, freed 4 s later: within the 30 s window.
    let mut filling = fill(1.0, Some(4.0));
    let out = home.write_run(&db, &[("STORLAB_DB_RETRY", "30")], 3, "10ms");
    filling.wait().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("is full"), "{}", stderr(&out));
    assert_stored_as_printed(&db, &run_document(&out));

    // Full and staying full: the spool goes to another filesystem (the runtime directory on
    // tmpfs), not to the data directory on the full one.
    let mut filling = fill(1.0, None);
    let data_on_full = point.join("data");
    let env = [
        ("STORLAB_DB_RETRY", "2"),
        ("XDG_DATA_HOME", data_on_full.to_str().unwrap()),
    ];
    // Sampled every 10 ms (as each run here): more to store than the blocks ext4 may have set
    // aside for SQLite's log as it grew, so that the full filesystem is met.
    let out = home.write_run(&db, &env, 3, "10ms");
    filling.wait().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    let spool = named_spool(&err);
    assert!(spool.starts_with(home.path("run")), "{err}");
    let spooled_run = run_document(&out);

    // The spool's own place full too (STORLAB_SPOOL on the full filesystem): JSON on stdout.
    let spool_on_full = point.join("spool");
    let env = [
        ("STORLAB_DB_RETRY", "2"),
        ("STORLAB_SPOOL", spool_on_full.to_str().unwrap()),
    ];
    let out = home.write_run(&db, &env, 2, "10ms");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("printed on stdout as one JSON document"), "{err}");
    let stdout_run = run_document(&out);
    let unstored = stdout(&out).lines().last().unwrap().to_string();
    assert!(unstored.contains("storlab_unstored_results"), "{unstored}");
    let json_file = home.path("unstored.json");
    std::fs::write(&json_file, unstored).unwrap();

    std::fs::remove_file(&filler).unwrap();
    assert_eq!(integrity(&db), "ok", "the file stays sound through the full filesystem");
    for from in [&spool, &json_file] {
        let copy = home.db_copy(&db, from, &db, &[]);
        assert!(copy.status.success(), "{}", stderr(&copy));
    }
    assert_stored_as_printed(&db, &spooled_run);
    assert_stored_as_printed(&db, &stdout_run);
    assert_eq!(integrity(&db), "ok");
    drop(fs);
}

/// A damaged file: reading the damaged part is refused naming the file and what to do; `db
/// check` names the damaged table and exits 1; `db copy` copies every run that reads whole
/// into a new file and names the one that does not. A file that is not a database at all is
/// refused and left as it was.
#[test]
fn a_damaged_file_is_refused_with_what_to_do() {
    let home = Home::new();
    let db = home.path("results.db");
    let a = home.write_run(&db, &[], 3, "10ms");
    assert!(a.status.success(), "{}", stderr(&a));
    let b = home.write_run(&db, &[], 1, "10ms");
    assert!(b.status.success(), "{}", stderr(&b));
    let (a_run, b_run) = (run_document(&a), run_document(&b));
    // The first leaf page of the samples table holds run A's first samples: its page type
    // byte overwritten, as a bad sector or a stray write would leave it.
    python(
        "import sqlite3,sys
c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
size = c.execute('PRAGMA page_size').fetchone()[0]
page = c.execute(\"SELECT pageno FROM dbstat WHERE name = 'samples' AND pagetype = 'leaf' ORDER BY pageno LIMIT 1\").fetchone()[0]
c.close()
with open(sys.argv[1], 'r+b') as f:
    f.seek((page - 1) * size); f.write(b'\\xff')",
        &[db.to_str().unwrap()],
    );
    let a_id = a_run["id"].to_string();
    let show = home.storlab(&db, &[], &["results", "show", &a_id, "--samples"]);
    let err = stderr(&show);
    assert_eq!(show.status.code(), Some(1), "{err}");
    for said in ["is damaged", "storlab db check --db", "storlab db copy --from"] {
        assert!(err.contains(said), "{said}: {err}");
    }
    assert!(err.contains(db.to_str().unwrap()), "{err}");

    let check = home.storlab(&db, &[], &["db", "check", "--json"]);
    assert_eq!(check.status.code(), Some(1), "{}", stderr(&check));
    let found: Value = serde_json::from_slice(&check.stdout).unwrap();
    assert_eq!(found["sound"], false);
    let tables = found["check"]["tables"].as_array().unwrap();
    let state = |name: &str| tables.iter().find(|t| t["name"] == name).unwrap()["error"].clone();
    assert!(state("samples").is_string(), "{found}");
    assert!(state("runs").is_null(), "{found}");
    // The rows `db check` read of a sound table, counted again by Python's own SQLite.
    let counted: u64 = python(
        "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM runs').fetchone()[0])",
        &[db.to_str().unwrap()],
    )
    .trim()
    .parse()
    .unwrap();
    let read = tables.iter().find(|t| t["name"] == "runs").unwrap()["rows_read"]
        .as_u64()
        .unwrap();
    assert_eq!((read, counted), (2, 2), "{found}");

    let fresh = home.path("rescued.db");
    let copy = home.db_copy(&db, &db, &fresh, &["--json"]);
    assert!(copy.status.success(), "{}", stderr(&copy));
    let report: Value = serde_json::from_slice(&copy.stdout).unwrap();
    assert_eq!(report["runs_unreadable"], serde_json::json!([a_run["id"]]), "{report}");
    assert_eq!(report["runs_copied"], 1, "{report}");
    assert_stored_as_printed(&fresh, &b_run);
    assert_eq!(integrity(&fresh), "ok");

    let text = home.path("notes.txt");
    std::fs::write(
        &text,
        "not a database, and long enough to look like a header: 0123456789abcdef\n",
    )
    .unwrap();
    let before = std::fs::read(&text).unwrap();
    let out = home.storlab(&text, &[], &["results", "list"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("not a SQLite database"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&text).unwrap(), before, "left as it was");
    assert!(!home.path("notes.txt-wal").exists());
}

/// Makes `dir` (and its parents) and gives it to uid 65534 ("nobody") with mode 0777, as
/// another user on a shared machine could have made it before storlab ever ran.
fn made_by_another_user(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: chown on a path we made, to a fixed uid and gid.
    assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
}

/// A spool place another user made (in /tmp, named as storlab names its own; in the data and
/// runtime directories) is passed over, said on stderr, and the results go to the next place
/// that is this user's alone — made 0700, the spool file 0600 — or, with none, to stdout.
#[test]
fn a_spool_place_another_user_made_is_passed_over() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let home = Home::new();
    let db = home.path("results.db");
    let first = home.write_run(&db, &[], 1, "100ms");
    assert!(first.status.success(), "{}", stderr(&first));
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let theirs = [
        home.path("data").join("storlab").join("spool"),
        home.path("run").join("storlab").join("spool"),
        home.path("tmp").join(format!("storlab-spool-{uid}")),
    ];
    for d in &theirs {
        made_by_another_user(d);
    }
    // Every place is another's: the results are printed on stdout, nothing is put in theirs.
    let mut holder = hold_lock(&db, 0.5, 25.0);
    let out = home.write_run(&db, &[("STORLAB_DB_RETRY", "1")], 1, "100ms");
    holder.kill().unwrap();
    holder.wait().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert_eq!(
        err.matches("belongs to uid 65534").count(),
        3,
        "each place passed over is said: {err}"
    );
    assert!(
        stdout(&out).contains("\"storlab_unstored_results\""),
        "{}",
        stdout(&out)
    );
    for d in &theirs {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "nothing in {}", d.display());
    }
    // The data directory's place made by this user instead: a private spool there.
    std::fs::remove_dir_all(home.path("data").join("storlab")).unwrap();
    let mut holder = hold_lock(&db, 0.5, 25.0);
    let out = home.write_run(&db, &[("STORLAB_DB_RETRY", "1")], 1, "100ms");
    holder.kill().unwrap();
    holder.wait().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    let spool = named_spool(&err);
    assert!(spool.starts_with(home.path("data")), "{err}");
    let dir = std::fs::metadata(spool.parent().unwrap()).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    assert_eq!(dir.uid(), uid);
    assert_eq!(std::fs::metadata(&spool).unwrap().permissions().mode() & 0o777, 0o600);
    // A link in its place is not followed.
    std::fs::remove_dir_all(home.path("data").join("storlab")).unwrap();
    std::fs::create_dir_all(home.path("data").join("storlab")).unwrap();
    std::os::unix::fs::symlink(home.path("elsewhere"), home.path("data").join("storlab").join("spool")).unwrap();
    std::fs::create_dir_all(home.path("elsewhere")).unwrap();
    let mut holder = hold_lock(&db, 0.5, 25.0);
    let out = home.write_run(&db, &[("STORLAB_DB_RETRY", "1")], 1, "100ms");
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(
        stderr(&out).contains("is not a directory (a link, or a file)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(home.path("elsewhere")).unwrap().count(), 0);
}

/// A results file storlab makes is its user's alone.
#[test]
fn a_new_results_file_and_its_directory_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    let db = home.path("new/dir/results.db");
    let out = home.write_run(&db, &[], 1, "100ms");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::metadata(&db).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(home.path("new/dir")).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

/// A row that reads as a row but not as a run (what an infinite figure stored as JSON's null
/// made before the store refused such figures): `db check` names the run, every command that
/// reads it says so, and `db copy` copies every other run and names this one.
#[test]
fn a_run_no_command_can_read_is_named_by_db_check_and_left_out_by_db_copy() {
    let home = Home::new();
    let db = home.path("results.db");
    for _ in 0..3 {
        let out = home.write_run(&db, &[], 1, "200ms");
        assert!(out.status.success(), "{}", stderr(&out));
    }
    python(
        "import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
c.execute(\"UPDATE phases SET result = json_set(result, '$.all_done.bytes_per_sec', json('null')) WHERE run_id = 2\")
c.commit()",
        &[db.to_str().unwrap()],
    );
    let check = home.storlab(&db, &[], &["db", "check", "--db", db.to_str().unwrap()]);
    assert_eq!(check.status.code(), Some(1), "{}", stdout(&check));
    let text = stdout(&check);
    assert!(text.contains("UNREADABLE run 2"), "{text}");
    assert!(!text.contains("run 1 ") && !text.contains("run 3 "), "{text}");
    let show = home.storlab(&db, &[], &["results", "show", "2"]);
    assert_ne!(show.status.code(), Some(0));
    let to = home.path("copy.db");
    let copy = home.db_copy(&db, &db, &to, &[]);
    assert!(copy.status.success(), "{}", stderr(&copy));
    assert!(stdout(&copy).contains("2 run(s) copied"), "{}", stdout(&copy));
    assert!(stdout(&copy).contains("left out: 2"), "{}", stdout(&copy));
    let check = home.storlab(&to, &[], &["db", "check", "--db", to.to_str().unwrap()]);
    assert!(check.status.success(), "{}", stdout(&check));
}
