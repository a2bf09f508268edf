//! The README's table of exit codes, checked by provoking each: every code it lists is what
//! storlab exits with in the case it names, and no code is left unprovoked. (SQLite only: code
//! 6 is provoked with a real lock on the results file; the PostgreSQL pass of scripts/test
//! leaves this file out — tests/db.rs provokes 6 with a server taken away.)

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The codes README.md lists after "Exit codes:".
fn readme_codes() -> BTreeSet<i32> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let at = readme.find("Exit codes:").expect("README has its exit codes");
    let text = &readme[at..at + readme[at..].find("\n\n").unwrap()];
    let text = text.replace('\n', " ");
    // "0 ok, 1 failed, 2 bad input (…), …, 130 interrupted": each code starts a clause.
    let mut codes = BTreeSet::new();
    for clause in text.trim_start_matches("Exit codes:").split(", ") {
        if let Some(n) = clause.split_whitespace().next().and_then(|w| w.parse().ok()) {
            codes.insert(n);
        }
    }
    codes
}

fn code(s: &Scratch, args: &[&str]) -> i32 {
    let out = s.storlab(args);
    out.status.code().unwrap_or(-1)
}

#[test]
fn every_exit_code_the_readme_lists_is_the_one_its_case_gets() {
    let s = Scratch::new();
    let d = s.data();
    let t = d.to_str().unwrap();
    let small = ["--size", "1m", "--bs", "64k"];
    let mut got = BTreeSet::new();
    let mut see = |n: i32, what: &str, c: i32| {
        assert_eq!(c, n, "{what}");
        got.insert(n);
    };

    // 0 ok.
    let ok = [&["run", "--target", t, "--phase", "write"][..], &small].concat();
    see(0, "a run that works", code(&s, &ok));
    // 2 bad input, nothing written.
    see(
        2,
        "an unknown phase",
        code(&s, &["run", "--target", t, "--phase", "scribble"]),
    );
    // 3 verification found corrupt blocks.
    let file = d.join("v.dat");
    let f = file.to_str().unwrap();
    let w = [
        &[
            "run",
            "--target",
            f,
            "--create-target",
            "--phase",
            "write",
            "--verify",
            "--seed",
            "9",
            "--keep",
        ][..],
        &small,
    ]
    .concat();
    see(0, "the verified write", code(&s, &w));
    damage_byte(&file, 70_000);
    let r = [
        &["run", "--target", f, "--phase", "read", "--verify", "--seed", "9"][..],
        &small,
    ]
    .concat();
    see(3, "a read that finds the damaged block", code(&s, &r));
    std::fs::remove_file(&file).unwrap();
    // 1 failed, and 5 undecided: a qualification with a criterion failed; one out of time.
    let job = "settings = { phase = [\"randread\"], bs = \"4k\", size = \"4m\", runtime = \"200ms\" }";
    let plan = |name: &str, check: &str| {
        let p = s.path().join(name);
        std::fs::write(
            &p,
            format!(
                "max_repeats = 3\n[[job]]\nname = \"rr\"\n{job}\n[[criterion]]\njob = \"rr\"\ncheck = \"{check}\"\n"
            ),
        )
        .unwrap();
        p.display().to_string()
    };
    let fail = plan("fail.toml", "IOPS >= 1,000,000,000,000");
    see(
        1,
        "a criterion failed",
        code(&s, &["qualify", &fail, "--target", t, "-q"]),
    );
    let late = plan("late.toml", "IOPS >= 10");
    see(
        5,
        "a criterion undecided",
        code(&s, &["qualify", &late, "--target", t, "-q", "--max-time", "300ms"]),
    );
    // 4 a scan could not count some entries.
    let (c, said) = partial_scan(&s);
    see(4, &said, c);
    // 6 measured, not stored.
    see(6, "a run whose results went to a spool file", spooled(&s, &ok));
    // 7 refused after results were stored: a study's task that fails once its first runs are.
    let task = [
        &[
            "impact",
            "--target",
            t,
            "--phase",
            "randread",
            "--size",
            "1m",
            "--runtime",
            "300ms",
        ][..],
        &["--task", "cmd:ls /nonexistent/storlab-exit-7|true|true"],
    ]
    .concat();
    see(7, "a task that failed after the study's first runs", code(&s, &task));

    // 130 interrupted.
    see(130, "Ctrl-C", interrupted(&s, t));

    assert_eq!(got, readme_codes(), "the README's codes, each provoked");
}

/// A directory nobody may read, scanned as nobody: the scan's exit code and stderr.
fn partial_scan(s: &Scratch) -> (i32, String) {
    let tree = s.path().join("tree");
    std::fs::create_dir_all(tree.join("secret/inner")).unwrap();
    Command::new("chmod").args(["0755"]).arg(s.path()).status().unwrap();
    Command::new("chmod").args(["0755"]).arg(&tree).status().unwrap();
    Command::new("chmod")
        .args(["0700"])
        .arg(tree.join("secret"))
        .status()
        .unwrap();
    let nobody_db = s.path().join("nobody");
    std::fs::create_dir_all(&nobody_db).unwrap();
    Command::new("chown")
        .args(["nobody:nogroup"])
        .arg(&nobody_db)
        .status()
        .unwrap();
    let scan = Command::new("setpriv")
        .args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
        .arg(bin())
        .args(["scan", tree.to_str().unwrap(), "--json"])
        .env("STORLAB_DB", nobody_db.join("results.db"))
        .output()
        .unwrap();
    (
        scan.status.code().unwrap_or(-1),
        format!("a partial scan: {}", stderr(&scan)),
    )
}

/// A run (`ok`'s arguments) while another process holds the results file locked past the wait.
fn spooled(s: &Scratch, ok: &[&str]) -> i32 {
    let db = s.db();
    let mut holder = Command::new("python3")
        .arg("-c")
        .arg("import sqlite3,sys,time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(20)\n")
        .arg(&db)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
    }
    let spool = s.path().join("spool");
    let out = Command::new(bin())
        .args(ok)
        .env("STORLAB_DB", &db)
        .env("STORLAB_DB_RETRY", "1")
        .env("STORLAB_SPOOL", &spool)
        .output()
        .unwrap();
    let _ = holder.kill();
    let _ = holder.wait();
    out.status.code().unwrap_or(-1)
}

/// A long run on `t`, stopped with Ctrl-C.
fn interrupted(s: &Scratch, t: &str) -> i32 {
    let job = s.path().join("long.toml");
    std::fs::write(
        &job,
        "size = \"4m\"\nphase = [{ kind = \"randread\", runtime = \"60s\" }]\n",
    )
    .unwrap();
    let mut child = Command::new(bin())
        .args(["run", job.to_str().unwrap(), "--target", t, "-q"])
        .env("STORLAB_DB", s.db())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "did not stop after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    status.code().unwrap_or(-1)
}
