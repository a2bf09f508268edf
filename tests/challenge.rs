//! `storlab challenge`: the real binary over real pools (ext4, XFS and btrfs on loop devices,
//! tmpfs), faults carried out for real (a lazy unmount, a drain, writers stopped), a block
//! corrupted between write and read, a process killed with SIGKILL and resumed, three agents
//! against one PostgreSQL server with one killed, bad input refused before anything is written.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, loop_filesystem, stderr, stdout, Scratch};
use serde_json::Value;
use storlab_testkit::PgServer;

/// Child processes killed when dropped (a failing test leaves no agent running).
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits for child `i` at most `secs`; its output (the child is gone from `procs` then).
fn wait_for(procs: &mut Procs, i: usize, secs: u64) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while procs.0[i].try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "a storlab process ran past {secs} s");
        std::thread::sleep(Duration::from_millis(50));
    }
    procs.0.remove(i).wait_with_output().unwrap()
}

fn show(s: &Scratch, id: u64, samples: bool) -> Value {
    let mut a = vec!["challenge".to_string(), "show".into(), id.to_string()];
    if samples {
        a.push("--samples".into());
    }
    let a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
    s.json(&a)
}

/// The run's JSON, whatever its exit status (a corrupted file exits 3).
fn run_json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", stdout(out), stderr(out)))
}

/// Sectors read and written by a block device, from /proc/diskstats, in bytes.
fn diskstats(dev: &str) -> (u64, u64) {
    let name = dev.trim_start_matches("/dev/");
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(2) == Some(&name) {
            let read: u64 = f[5].parse().unwrap();
            let written: u64 = f[9].parse().unwrap();
            return (read * 512, written * 512);
        }
    }
    panic!("{name} is not in /proc/diskstats");
}

/// No directory of storlab's is left in `dir`.
fn nothing_left(dir: &Path) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("storlab-challenge-"))
        .collect();
    assert!(left.is_empty(), "left behind in {}: {left:?}", dir.display());
}

fn events_with(v: &Value, kind: &str, text: &str) -> Vec<Value> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind && e["detail"].as_str().unwrap().contains(text))
        .cloned()
        .collect()
}

/// The two-minute challenge of the issue: four pools on ext4, XFS and btrfs (two pools share
/// the ext4 filesystem), O_DIRECT so that the devices see every byte, pool 2 unmounted for 20 s,
/// pool 3 drained, the writers stopped at 60 s for 20 s.
#[test]
fn four_pools_on_three_filesystems_through_their_faults() {
    let s = Scratch::new();
    let root = tempfile::Builder::new()
        .prefix("storlab-challenge-")
        .tempdir_in("/tmp")
        .unwrap();
    let (m1, m2, m3) = (
        root.path().join("ext4"),
        root.path().join("xfs"),
        root.path().join("btrfs"),
    );
    let ext4 = loop_filesystem("mkfs.ext4", 512 << 20, &m1);
    let xfs = loop_filesystem("mkfs.xfs", 512 << 20, &m2);
    let btrfs = loop_filesystem("mkfs.btrfs", 512 << 20, &m3);
    let p4 = m1.join("second");
    std::fs::create_dir(&p4).unwrap();
    let before: Vec<(u64, u64)> = [&ext4.dev.dev, &xfs.dev.dev, &btrfs.dev.dev]
        .iter()
        .map(|d| diskstats(d))
        .collect();
    let pools = [
        format!("P1={}", m1.display()),
        format!("P2={}", m2.display()),
        format!("P3={}", m3.display()),
        format!("P4={}", p4.display()),
    ];
    let scrub = format!("50s:task:btrfs-scrub:{}", m3.display());
    let mut args = vec![
        "challenge",
        "run",
        "--writers",
        "2",
        "--readers",
        "2",
        "--file-size",
        "1m",
        "--bs",
        "256k",
        "--duration",
        "2m",
        "--interval",
        "2s",
        "--lt",
        "10s",
        "--backlog",
        "8",
        "--direct",
        "--fault",
        "20s:unmount:P2:20s",
        "--fault",
        "30s:drain:P3",
        "--fault",
        "60s:stop-writers:all:20s",
        "--fault",
        &scrub,
        "--json",
    ];
    for p in &pools {
        args.push("--pool");
        args.push(p);
    }
    let out = s.storlab(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = run_json(&out);
    let acc = &r["account"];
    assert_eq!(r["holds"], true, "{acc}");
    assert!(r["ended"].as_bool().unwrap());
    assert!(acc["written"].as_u64().unwrap() > 100, "{acc}");
    assert_eq!(acc["verified"], acc["read"], "every read verified: {acc}");
    assert_eq!(acc["corrupted"].as_array().unwrap().len(), 0, "{acc}");
    assert_eq!(acc["lost"].as_array().unwrap().len(), 0, "{acc}");

    // Every fault, and its undoing, is on the timeline.
    let v = show(&s, r["challenge"].as_u64().unwrap(), true);
    assert_eq!(events_with(&v, "fault", "P2 away").len(), 1, "{}", v["events"]);
    assert_eq!(events_with(&v, "undo", "P2 back").len(), 1, "{}", v["events"]);
    assert_eq!(events_with(&v, "fault", "pool P3 drained").len(), 1, "{}", v["events"]);
    assert_eq!(events_with(&v, "fault", "writers stopped").len(), 1, "{}", v["events"]);
    assert_eq!(events_with(&v, "undo", "writers restarted").len(), 1, "{}", v["events"]);
    // The scrub started mid-run, and its end (finished, or stopped at the challenge's end).
    assert_eq!(events_with(&v, "fault", "scrub").len(), 1, "{}", v["events"]);
    assert_eq!(events_with(&v, "task", "scrub").len(), 1, "{}", v["events"]);

    // The samples show them: nothing written to P2 while it was away, nothing to P3 after its
    // drain, nothing at all while the writers were stopped (an interval after each start, for
    // the file in hand: 1 MiB).
    for smp in v["samples"].as_array().unwrap() {
        let (t, secs) = (smp["t"].as_f64().unwrap(), smp["seconds"].as_f64().unwrap());
        let start = t - secs;
        let w: Vec<u64> = smp["written"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        if start >= 22.0 && t <= 40.0 {
            assert_eq!(w[1], 0, "P2 written while unmounted: {smp}");
        }
        if start >= 32.0 {
            assert_eq!(w[2], 0, "P3 written after its drain: {smp}");
        }
        if start >= 62.0 && t <= 80.0 {
            assert_eq!(
                w.iter().sum::<u64>(),
                0,
                "written while the writers were stopped: {smp}"
            );
        }
    }

    // The Tot rows are the sums over the pools (averages add; within rounding).
    let rows = r["statistics"]["rows"].as_array().unwrap();
    let avg = |name: &str| {
        rows.iter().find(|x| x["name"] == name).unwrap()["avg"]
            .as_f64()
            .unwrap()
    };
    for (tot, dir) in [
        ("Tot-ReadAverage", "Read"),
        ("Tot-WriteAverage", "Write"),
        ("Tot-ReadWriteAverage", "ReadWrite"),
    ] {
        let sum: f64 = ["P1", "P2", "P3", "P4"]
            .iter()
            .map(|p| avg(&format!("{p}-{dir}")))
            .sum();
        assert!(
            (avg(tot) - sum).abs() <= 1e-6 * sum.max(1.0),
            "{tot} {} vs the pools' {sum}",
            avg(tot)
        );
    }

    // The devices saw the bytes the pools' figures say (O_DIRECT: every byte goes to the
    // device), plus the filesystems' own metadata and journal: at least the figures, at most
    // 10 % + 64 MiB more.
    let pools = v["pools"].as_array().unwrap();
    let moved = |i: usize, what: &str| pools[i][what].as_u64().unwrap();
    let devices = [(0, vec![0, 3]), (1, vec![1]), (2, vec![2])];
    for (d, on) in devices {
        let (r0, w0) = before[d];
        let dev = [&ext4.dev.dev, &xfs.dev.dev, &btrfs.dev.dev][d];
        let (r1, w1) = diskstats(dev);
        let written: u64 = on.iter().map(|i| moved(*i, "bytes_written")).sum();
        let read: u64 = on.iter().map(|i| moved(*i, "bytes_read")).sum();
        let (dw, dr) = (w1 - w0, r1 - r0);
        assert!(
            dw >= written && dw <= written + written / 10 + (64 << 20),
            "{dev}: device wrote {dw}, pools {written}"
        );
        assert!(
            dr >= read && dr <= read + read / 10 + (64 << 20),
            "{dev}: device read {dr}, pools {read}"
        );
    }
    for d in [&m1, &m2, &m3, &p4] {
        nothing_left(d);
    }
}

#[test]
fn a_corrupted_block_is_named_with_its_file_and_offset() {
    let s = Scratch::new();
    let pool = s.data();
    // The readers wait 30 s: long enough for the test to change a written file, even when the
    // machine is busy with the other tests and the disk answers slowly (at 3 s a loaded run
    // once saw the readers take every file before the test found one written; at 10 s a full
    // run did again, with the four-pools test's loop devices keeping the virtual disk busy).
    let mut procs = Procs(vec![Command::new(bin())
        .args([
            "challenge",
            "run",
            "--pool",
            &format!("P1={}", pool.display()),
            "--files",
            "4",
        ])
        .args(["--file-size", "64k", "--bs", "16k", "--interval", "1s", "--lt", "1s"])
        .args(["--fault", "0s:stop-readers:all:30s", "--json", "--db", &s.db()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()]);
    // A file the catalogue says is written (not the first by number: the writers run side by
    // side, and file 1 may still be being written when file 2 is done).
    let (started, deadline) = (Instant::now(), Instant::now() + Duration::from_secs(60));
    let file = loop {
        if Instant::now() >= deadline || procs.0[0].try_wait().unwrap().is_some() {
            let _ = procs.0[0].kill();
            let out = wait_for(&mut procs, 0, 10);
            panic!(
                "no written file seen in {:?}; the challenge said: {}{}",
                started.elapsed(),
                stderr(&out),
                stdout(&out)
            );
        }
        if let Some(store) = s.try_store() {
            if store.challenge_ids().map(|v| !v.is_empty()).unwrap_or(false) {
                let written = store
                    .files_in_state(1, storlab_model::challenge::FileState::Written, None)
                    .unwrap();
                if let Some(t) = written.first() {
                    let dir = std::fs::read_dir(&pool).unwrap().next().unwrap().unwrap().path();
                    break dir.join(&t.name);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Overwrite 4 KiB at 32 KiB.
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        f.seek(SeekFrom::Start(32768)).unwrap();
        f.write_all(&[0x5a; 4096]).unwrap();
    }
    let out = wait_for(&mut procs, 0, 60);
    assert_eq!(out.status.code(), Some(3), "a corrupted file exits 3: {}", stderr(&out));
    let r = run_json(&out);
    let bad = r["account"]["corrupted"].as_array().unwrap();
    assert_eq!(bad.len(), 1, "{}", r["account"]);
    assert!(
        bad[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(file.file_name().unwrap().to_str().unwrap()),
        "{}",
        bad[0]
    );
    assert!(
        bad[0]["why"].as_str().unwrap().contains("block at byte 32768"),
        "{}",
        bad[0]
    );
    assert_eq!(r["account"]["verified"], 3);
    assert_eq!(r["holds"], true);
    nothing_left(&pool);
}

/// Seed 002's lesson: a limit of 999 files per reader stopped a run after 44 hours. One reader
/// reads 2,500 files here.
#[test]
fn one_reader_reads_2500_files_past_999() {
    let s = Scratch::new();
    let pool = s.data();
    let out = s.storlab(&[
        "challenge",
        "run",
        "--pool",
        &format!("P1={}", pool.display()),
        "--writers",
        "2",
        "--readers",
        "1",
        "--files",
        "2500",
        "--file-size",
        "4k",
        "--bs",
        "4k",
        "--interval",
        "1s",
        "--lt",
        "2s",
        "--backlog",
        "64",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = run_json(&out);
    assert_eq!(r["account"]["written"], 2500);
    assert_eq!(r["account"]["verified"], 2500);
    assert_eq!(r["account"]["deleted"], 2500);
    assert_eq!(r["holds"], true);
    // The host's run says where the challenge's figures are.
    let run = r["run"].as_i64().unwrap().to_string();
    let shown = stdout(&s.storlab(&["results", "show", &run]));
    assert!(shown.contains("storlab challenge show 1"), "{shown}");
    nothing_left(&pool);
}

#[test]
fn challenges_are_listed_newest_first_with_their_state_and_runs() {
    let s = Scratch::new();
    let pool = s.data();
    let p1 = format!("P1={}", pool.display());
    let other = s.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let p2 = format!("P2={}", other.display());
    let done = s.storlab(&[
        "challenge",
        "run",
        "--pool",
        &p1,
        "--writers",
        "1",
        "--readers",
        "1",
        "--files",
        "6",
        "--file-size",
        "8k",
        "--bs",
        "4k",
        "--interval",
        "1s",
        "--lt",
        "2s",
        "--json",
    ]);
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    let defined = s.storlab(&[
        "challenge",
        "create",
        "--pool",
        &p1,
        "--pool",
        &p2,
        "--writers",
        "3",
        "--readers",
        "2",
        "--duration",
        "90m",
        "--file-size",
        "2m",
    ]);
    assert_eq!(defined.status.code(), Some(0), "{}", stderr(&defined));
    assert_eq!(stdout(&defined).trim(), "2");

    let listed = s.json(&["challenge", "list"]);
    let listed = listed.as_array().expect("a JSON array");
    let ids: Vec<i64> = listed.iter().map(|c| c["challenge"].as_i64().unwrap()).collect();
    assert_eq!(ids, [2, 1], "newest first");
    // Each entry agrees with what `challenge show` reads by its own queries.
    for c in listed {
        let id = c["challenge"].as_u64().unwrap();
        let shown = show(&s, id, false);
        assert_eq!(c["status"], shown["status"], "challenge {id}");
        assert_eq!(c["uuid"], shown["uuid"], "challenge {id}");
        assert_eq!(c["spec"], shown["spec"], "challenge {id}");
        assert_eq!(
            c["runs"].as_u64().unwrap() as usize,
            shown["runs"].as_array().unwrap().len()
        );
    }
    assert_eq!(listed[0]["status"], "defined");
    assert_eq!(listed[0]["runs"], 0);
    assert!(listed[0]["t0"].is_null(), "a defined challenge has not started");
    assert_eq!(listed[1]["status"], "done");
    assert_eq!(listed[1]["runs"], 1);
    assert!(listed[1]["t0"].as_f64().unwrap() > 1.7e9);

    let text = s.storlab(&["challenge", "list"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let lines: Vec<Vec<String>> = stdout(&text)
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(lines[0][..3], ["id", "status", "defined"]);
    let row2 = &lines[1];
    assert_eq!(row2[0], "2");
    assert_eq!(row2[1], "defined");
    assert!(row2.contains(&"P1,P2".to_string()), "{row2:?}");
    assert!(row2.contains(&"2MiB".to_string()), "{row2:?}");
    assert!(row2.contains(&"1h30m".to_string()), "{row2:?}");
    let row1 = &lines[2];
    assert_eq!(row1[0], "1");
    assert!(
        row1.contains(&"6".to_string()) && row1.contains(&"files".to_string()),
        "{row1:?}"
    );
    assert!(stderr(&text).contains("2 challenge(s) in"), "{}", stderr(&text));
    let csv = stdout(&s.storlab(&["challenge", "list", "--csv"]));
    assert!(csv.starts_with("id,status,defined,started,pools,"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    nothing_left(&pool);
}

#[test]
fn killed_with_sigkill_and_resumed_every_file_is_accounted_for() {
    let s = Scratch::new();
    let pool = s.data();
    let pool_arg = format!("P1={}", pool.display());
    let mut procs = Procs(vec![Command::new(bin())
        .args([
            "challenge",
            "run",
            "--pool",
            &pool_arg,
            "--writers",
            "2",
            "--readers",
            "1",
        ])
        .args([
            "--files",
            "200",
            "--file-size",
            "4m",
            "--bs",
            "1m",
            "--interval",
            "1s",
            "--lt",
            "2s",
        ])
        .args(["--backlog", "100", "--db", &s.db()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "nothing was written");
        let written = s.try_store().and_then(|st| {
            st.challenge_ids().ok().filter(|v| !v.is_empty())?;
            st.challenge_account(1, |_, n| (String::new(), n.to_string())).ok()
        });
        if written.is_some_and(|a| a.written >= 20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    procs.0[0].kill().unwrap();
    procs.0.remove(0).wait().unwrap();
    let mid = show(&s, 1, false);
    assert!(
        mid["account"]["written"].as_u64().unwrap() < 200,
        "killed too late: {}",
        mid["account"]
    );
    let out = s.storlab(&["challenge", "resume", "1", "--pool", &pool_arg, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = run_json(&out);
    let acc = &r["account"];
    assert_eq!(acc["written"], 200, "{acc}");
    assert_eq!(acc["verified"], 200, "{acc}");
    assert_eq!(r["holds"], true);
    // What the killed process was writing was removed and written again, and said so.
    let in_flight = mid["account"]["writing"].as_u64().unwrap();
    assert_eq!(acc["rewritten"].as_u64().unwrap(), in_flight, "{acc}");
    if in_flight > 0 {
        assert_eq!(events_with(&show(&s, 1, false), "resumed", "written again").len(), 1);
    }
    nothing_left(&pool);
}

/// An agent killed with SIGKILL and started again on its host (as systemd restarts the unit)
/// takes over at once what its earlier process held — files being written are written again,
/// files being read wait again — long before their leases (a minute) run out.
#[test]
fn an_agent_started_again_takes_over_its_dead_process_files_at_once() {
    let s = Scratch::new();
    let pool = s.data();
    let pool_arg = format!("P1={}", pool.display());
    let create = s.storlab(&[
        "challenge",
        "create",
        "--pool",
        &pool_arg,
        "--files",
        "150",
        "--file-size",
        "4m",
        "--bs",
        "1m",
        "--interval",
        "500ms",
        "--lt",
        "1s",
        "--lease",
        "60s",
        "--backlog",
        "100",
    ]);
    assert!(create.status.success(), "{}", stderr(&create));
    let id = stdout(&create).trim().to_string();
    let agent = || {
        Command::new(bin())
            .args([
                "challenge",
                "agent",
                &id,
                "--pool",
                &pool_arg,
                "--writers",
                "3",
                "--readers",
                "1",
            ])
            .args(["--db", &s.db(), "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut procs = Procs(vec![agent()]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let cid: i64 = id.parse().unwrap();
    loop {
        assert!(Instant::now() < deadline, "nothing was written");
        let written = s
            .try_store()
            .and_then(|st| st.challenge_account(cid, |_, n| (String::new(), n.to_string())).ok());
        if written.is_some_and(|a| a.written >= 10) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let victim = format!(
        "{}/{}",
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim(),
        procs.0[0].id()
    );
    // The writers rest between files (`--interval`), so the agent is frozen (SIGSTOP) and
    // killed only at a moment it holds a file being written; a kill between files tests nothing.
    let pid = procs.0[0].id() as i32;
    let writing = loop {
        assert!(Instant::now() < deadline, "the agent never held a file being written");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let held = s
            .store()
            .unwrap()
            .files_in_state(cid, storlab_model::challenge::FileState::Writing, Some(&victim))
            .unwrap();
        if !held.is_empty() {
            break held;
        }
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        std::thread::sleep(Duration::from_millis(30));
    };
    procs.0[0].kill().unwrap();
    procs.0.remove(0).wait().unwrap();
    let restarted = Instant::now();
    procs.0.push(agent());
    let out = wait_for(&mut procs, 0, 120);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        restarted.elapsed() < Duration::from_secs(60),
        "the restarted agent waited for the dead one's leases"
    );
    let v = show(&s, cid as u64, false);
    let acc = &v["account"];
    assert_eq!(v["holds"], true, "{acc}");
    assert_eq!(
        (acc["written"].as_u64(), acc["verified"].as_u64()),
        (Some(150), Some(150)),
        "{acc}"
    );
    assert_eq!(acc["rewritten"].as_u64().unwrap(), writing.len() as u64, "{acc}");
    let resumed = events_with(&v, "resumed", &victim);
    assert_eq!(resumed.len(), 1, "{}", v["events"]);
    for t in &writing {
        assert!(
            resumed[0]["detail"].as_str().unwrap().contains(&t.name),
            "{}",
            resumed[0]
        );
    }
    // Taken over at the restarted agent's start, not by a lease running out.
    assert!(events_with(&v, "reclaimed", "").is_empty(), "{}", v["events"]);
    nothing_left(&pool);
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let s = Scratch::new();
    let a = s.data();
    let b = s.path().join("b");
    std::fs::create_dir(&b).unwrap();
    let pa = format!("P1={}", a.display());
    let pb = format!("P2={}", b.display());
    let same = format!("P2={}/.", a.display());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--pool", &pa, "--files", "1", "--fault", "1s:drain:P9"],
            "no pool named 'P9'",
        ),
        (
            vec!["--pool", "P1=/nonexistent/pool", "--files", "1"],
            "/nonexistent/pool",
        ),
        (
            vec![
                "--pool",
                &pa,
                "--pool",
                "P2=/nonexistent/../nonexistent/pool",
                "--files",
                "1",
            ],
            "P2",
        ),
        (
            vec!["--pool", &pa, "--pool", &same, "--files", "1"],
            "share a directory",
        ),
        (vec!["--pool", &pa, "--files", "1", "--backlog", "0"], "--backlog 0"),
        (
            vec!["--pool", &pa, "--duration", "60s", "--fault", "90s:drain:P1"],
            "after the challenge's end",
        ),
        (
            vec!["--pool", &pa, "--files", "1", "--fault", "1s:explode:P1"],
            "unknown action 'explode'",
        ),
        (vec!["--pool", &pa, "--pool", &pb], "--duration"),
        (
            vec!["--pool", &pa, "--files", "1", "--fault", "1s:unmount:P1:5s"],
            "not a filesystem of its own",
        ),
    ];
    for (args, says) in cases {
        let mut all = vec!["challenge", "run"];
        all.extend(&args);
        let out = s.storlab(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(says),
            "{args:?}: expected '{says}' in: {}",
            stderr(&out)
        );
        assert!(s.nothing_stored(), "{args:?} stored something");
        assert!(
            common::entries(&a).is_empty() && common::entries(&b).is_empty(),
            "{args:?} wrote into a pool"
        );
    }
}

/// Three agents, separate processes, take work from one PostgreSQL catalogue over shared pools;
/// one is killed mid-run with SIGKILL: after its lease runs out the others take over its files,
/// and every file is accounted for.
#[test]
fn three_agents_on_postgresql_one_killed() {
    let s = Scratch::new();
    let db = PgServer::shared().database();
    let url = db.url();
    let (a, b) = (s.path().join("a"), s.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let pools = [format!("P1={}", a.display()), format!("P2={}", b.display())];
    let create = Command::new(bin())
        .args([
            "challenge",
            "create",
            "--db",
            &url,
            "--pool",
            &pools[0],
            "--pool",
            &pools[1],
        ])
        .args([
            "--files",
            "600",
            "--file-size",
            "1m",
            "--bs",
            "256k",
            "--interval",
            "1s",
            "--lt",
            "2s",
        ])
        .args(["--lease", "6s", "--backlog", "16"])
        .output()
        .unwrap();
    assert!(create.status.success(), "{}", stderr(&create));
    let id = stdout(&create).trim().to_string();
    let agent = || -> Child {
        Command::new(bin())
            .args([
                "challenge",
                "agent",
                &id,
                "--db",
                &url,
                "--pool",
                &pools[0],
                "--pool",
                &pools[1],
            ])
            .args(["--writers", "2", "--readers", "2", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut procs = Procs(vec![agent(), agent(), agent()]);
    // Kill the first once files are moving.
    let deadline = Instant::now() + Duration::from_secs(60);
    let store = storlab_store::Store::connect(&storlab_store::DbTarget::parse(&url).unwrap(), "test").unwrap();
    let cid: i64 = id.parse().unwrap();
    loop {
        assert!(Instant::now() < deadline, "no file was written");
        if store
            .challenge_account(cid, |_, n| (String::new(), n.into()))
            .unwrap()
            .written
            >= 60
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let victim = format!(
        "{}/{}",
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim(),
        procs.0[0].id()
    );
    procs.0[0].kill().unwrap();
    procs.0.remove(0).wait().unwrap();
    let writing = store
        .files_in_state(cid, storlab_model::challenge::FileState::Writing, Some(&victim))
        .unwrap();
    for _ in 0..2 {
        let out = wait_for(&mut procs, 0, 180);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = Command::new(bin())
        .args(["challenge", "show", &id, "--db", &url, "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let acc = &v["account"];
    assert_eq!(v["holds"], true, "{acc}");
    assert_eq!(v["status"], "done", "{v}");
    assert_eq!(acc["written"], 600, "{acc}");
    assert_eq!(acc["verified"], 600, "{acc}");
    assert_eq!(acc["lost"].as_array().unwrap().len(), 0, "{acc}");
    // What the killed agent was writing was taken over by the others once its lease ran out.
    assert_eq!(acc["rewritten"].as_u64().unwrap(), writing.len() as u64, "{acc}");
    for t in &writing {
        assert_eq!(
            events_with(&v, "reclaimed", &t.name).len(),
            1,
            "{} not reclaimed: {}",
            t.name,
            v["events"]
        );
    }
    // Three agents' runs, on one host, told apart by process; their samples add up to the
    // pools' figures, and the statistics of one agent are its own.
    assert_eq!(v["runs"].as_array().unwrap().len(), 3, "{}", v["runs"]);
    let agents = v["agents"].as_array().unwrap();
    // (The killed agent has samples only if it lived past its first interval.)
    assert!(agents.len() >= 2, "{}", v["agents"]);
    let sum = |list: &Value, key: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .map(|x| x[key].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(sum(&v["agents"], "bytes_read"), sum(&v["pools"], "bytes_read"));
    let one = Command::new(bin())
        .args(["challenge", "stats", &id, "--db", &url, "--json", "--host"])
        .arg(agents[0]["agent"].as_str().unwrap())
        .output()
        .unwrap();
    assert!(one.status.success(), "{}", stderr(&one));
    let all = Command::new(bin())
        .args(["challenge", "stats", &id, "--db", &url, "--json"])
        .output()
        .unwrap();
    let tot = |o: &std::process::Output| {
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["statistics"]["rows"][2]["avg"].as_f64().unwrap()
    };
    assert!(tot(&one) < tot(&all), "one agent's figures are a part of the whole");
    nothing_left(&a);
    nothing_left(&b);
    drop(db);
}

/// The database cannot steer an agent: a pool's path changed in the database is refused, and
/// a catalogue row naming a file outside storlab's pattern is not touched.
#[test]
fn an_agent_follows_its_own_host_not_the_database() {
    let s = Scratch::new();
    let db = PgServer::shared().database();
    let url = db.url();
    let a = s.path().join("a");
    std::fs::create_dir(&a).unwrap();
    let pool = format!("P1={}", a.display());
    let create = Command::new(bin())
        .args(["challenge", "create", "--db", &url, "--pool", &pool, "--files", "3"])
        .args(["--file-size", "4k", "--bs", "4k", "--interval", "1s", "--lt", "1s"])
        .output()
        .unwrap();
    assert!(create.status.success(), "{}", stderr(&create));
    let id = stdout(&create).trim().to_string();
    let agent = |extra: &[&str]| {
        Command::new(bin())
            .args(["challenge", "agent", &id, "--db", &url])
            .args(extra)
            .output()
            .unwrap()
    };
    // The path changed in the database: refused, saying which pool and both paths.
    let elsewhere = s.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    db.sql(&format!(
        "UPDATE challenges SET spec = jsonb_set(spec, '{{pools,0,path}}', '\"{}\"')",
        elsewhere.display()
    ));
    let out = agent(&["--pool", &pool]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("pool P1") && e.contains(&elsewhere.display().to_string()) && e.contains("refusing"),
        "{e}"
    );
    assert!(common::entries(&elsewhere).is_empty() && common::entries(&a).is_empty());
    db.sql(&format!(
        "UPDATE challenges SET spec = jsonb_set(spec, '{{pools,0,path}}', '\"{}\"')",
        a.display()
    ));
    // A row pointing outside the pool: a victim file beside the pool, named by '..'.
    let victim = s.path().join("victim");
    std::fs::write(&victim, b"not storlab's").unwrap();
    db.sql(&format!(
        "INSERT INTO challenge_files (challenge_id, seq, pool, name, seed, state, host, lease_until, written_at)
         VALUES ({id}, 1000000, 0, '../../victim', 1, 'written', 'elsewhere/1', 0, 1)"
    ));
    let out = agent(&["--pool", &pool, "--json"]);
    let r = run_json(&out);
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"not storlab's",
        "the file outside the pool was touched"
    );
    let lost = r["account"]["lost"].as_array().unwrap();
    assert_eq!(lost.len(), 1, "{}", r["account"]);
    assert!(lost[0]["why"].as_str().unwrap().contains("not touched"), "{}", lost[0]);
    assert_eq!(r["account"]["verified"], 3, "{}", r["account"]);
    nothing_left(&a);
    drop(db);
}

/// A pool that runs out of space stops taking new files, says so, and takes files again when
/// readers free some; the file that did not fit is removed and named.
#[test]
fn a_full_pool_stops_taking_files_and_says_so() {
    let s = Scratch::new();
    let root = tempfile::Builder::new()
        .prefix("storlab-challenge-")
        .tempdir_in("/tmp")
        .unwrap();
    let m1 = root.path().join("small");
    let _fs = loop_filesystem("mkfs.ext4", 32 << 20, &m1);
    let p2 = s.data();
    let out = s.storlab(&[
        "challenge",
        "run",
        "--pool",
        &format!("P1={}", m1.display()),
        "--pool",
        &format!("P2={}", p2.display()),
        "--writers",
        "2",
        "--readers",
        "2",
        "--file-size",
        "4m",
        "--bs",
        "1m",
        "--duration",
        "8s",
        "--backlog",
        "20",
        "--interval",
        "1s",
        "--lt",
        "2s",
        "--fault",
        "0s:stop-readers:all:4s",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = run_json(&out);
    assert_eq!(r["holds"], true, "{}", r["account"]);
    let v = show(&s, r["challenge"].as_u64().unwrap(), false);
    assert!(
        !events_with(&v, "pool-full", "pool P1 is out of space").is_empty(),
        "{}",
        v["events"]
    );
    assert!(
        !events_with(&v, "pool-open", "pool P1 takes files again").is_empty(),
        "{}",
        v["events"]
    );
    let lost = r["account"]["lost"].as_array().unwrap();
    assert!(!lost.is_empty(), "the file that did not fit is named");
    for f in lost {
        assert_eq!(f["pool"], "P1", "{f}");
        assert!(f["why"].as_str().unwrap().contains("No space left on device"), "{f}");
    }
    assert_eq!(r["account"]["lost_written"], 0, "only files that did not fit are lost");
    nothing_left(&m1);
    nothing_left(&p2);
}

/// A pool's loop device detached mid-run: its waiting files are lost, each named, and the
/// challenge goes on with the other pool.
/// A pool whose filesystem turns read-only under the writers (as ext4 does on an error with
/// errors=remount-ro, and btrfs after one) is taken out of service on the first refused write, said once:
/// a file or two lost, not one after another for the rest of the run; the other pool goes on.
#[test]
fn a_pool_that_turns_read_only_is_taken_out_of_service_once() {
    let s = Scratch::new();
    let root = tempfile::Builder::new()
        .prefix("storlab-challenge-")
        .tempdir_in("/tmp")
        .unwrap();
    let m1 = root.path().join("p1");
    let fs = loop_filesystem("mkfs.ext4", 64 << 20, &m1);
    let p2 = s.data();
    let mut procs = Procs(vec![Command::new(bin())
        .args(["challenge", "run", "--pool", &format!("P1={}", m1.display())])
        .args(["--pool", &format!("P2={}", p2.display())])
        .args(["--writers", "2", "--readers", "2", "--file-size", "1m", "--bs", "256k"])
        .args([
            "--duration",
            "6s",
            "--interval",
            "500ms",
            "--lt",
            "1s",
            "--json",
            "--db",
            &s.db(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()]);
    std::thread::sleep(Duration::from_secs(2));
    // ext4's `abort` does what an error does under errors=remount-ro: the filesystem turns
    // read-only at once, files open for writing or not (a plain `remount,ro` is refused then).
    let ro = Command::new("mount")
        .args(["-o", "remount,abort"])
        .arg(&fs.mount.point)
        .output()
        .unwrap();
    assert!(ro.status.success(), "{}", stderr(&ro));
    let out = wait_for(&mut procs, 0, 60);
    let r = run_json(&out);
    let v = show(&s, r["challenge"].as_u64().unwrap(), false);
    let failed = events_with(&v, "pool-failed", "pool P1 refused a write");
    assert_eq!(failed.len(), 1, "{}", v["events"]);
    assert!(
        failed[0]["detail"].as_str().unwrap().contains("Read-only file system"),
        "{}",
        failed[0]
    );
    let lost = r["account"]["lost"].as_array().unwrap();
    assert!(
        !lost.is_empty() && lost.len() <= 2,
        "the files the two writers had in hand, not more: {lost:?}"
    );
    assert_eq!(r["holds"], true, "{}", r["account"]);
    // P2 went on: it moved data after P1 failed.
    let p2_after = v["pools"][1]["bytes_written"].as_u64().unwrap();
    assert!(p2_after > 0, "{}", v["pools"]);
}

#[test]
fn a_detached_pool_loses_its_waiting_files_by_name() {
    let s = Scratch::new();
    let root = tempfile::Builder::new()
        .prefix("storlab-challenge-")
        .tempdir_in("/tmp")
        .unwrap();
    let m1 = root.path().join("pulled");
    let fs = loop_filesystem("mkfs.ext4", 64 << 20, &m1);
    let p2 = s.data();
    let out = s.storlab(&[
        "challenge",
        "run",
        "--pool",
        &format!("P1={}", m1.display()),
        "--pool",
        &format!("P2={}", p2.display()),
        "--writers",
        "2",
        "--readers",
        "2",
        "--file-size",
        "1m",
        "--bs",
        "256k",
        "--duration",
        "8s",
        "--backlog",
        "6",
        "--interval",
        "1s",
        "--lt",
        "2s",
        "--fault",
        "0s:stop-readers:all:4s",
        "--fault",
        "2s:detach:P1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = run_json(&out);
    assert_eq!(r["holds"], true, "{}", r["account"]);
    let v = show(&s, r["challenge"].as_u64().unwrap(), true);
    let gone = events_with(&v, "fault", "gone");
    assert_eq!(gone.len(), 1, "{}", v["events"]);
    assert!(gone[0]["detail"].as_str().unwrap().contains(&fs.dev.dev), "{}", gone[0]);
    let lost = r["account"]["lost"].as_array().unwrap();
    assert_eq!(
        lost.len(),
        6,
        "the six files waiting in P1 (its backlog) are lost: {}",
        r["account"]
    );
    for f in lost {
        assert!(
            f["why"].as_str().unwrap().contains("when its device was detached"),
            "{f}"
        );
    }
    // Nothing was written to P1 after the detach; P2 took the files.
    for smp in v["samples"].as_array().unwrap() {
        if smp["t"].as_f64().unwrap() - smp["seconds"].as_f64().unwrap() >= 3.0 {
            assert_eq!(smp["written"][0], 0, "P1 written after its device was detached: {smp}");
        }
    }
    assert!(v["pools"][1]["bytes_read"].as_u64().unwrap() > 0);
    nothing_left(&p2);
}

/// Seed 002's table recomputed from a challenge's raw samples (`challenge show --samples`),
/// written apart from storlab's code and by another route: each host's bytes per channel as a
/// cumulative curve through its samples (linear within a sample, flat between them), an
/// interval's bytes the curve's rise across it; the long-term average of an interval the
/// length-weighted mean over the last `lt / interval` intervals; MAX and MIN of those, AVG and
/// SD weighted by each interval's length in intervals (frequency weights). Only for hosts whose
/// samples leave no interval unmeasured (a gap's rule is tested in crates/stats). Returns the
/// rows by name: [max, min, avg, sd] in bytes/s.
fn recompute_table(show: &Value) -> std::collections::BTreeMap<String, [f64; 4]> {
    let spec = &show["spec"];
    let (width, lt) = (spec["interval"].as_f64().unwrap(), spec["lt"].as_f64().unwrap());
    let pools: Vec<String> = spec["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    let np = pools.len();
    // Per host: (start, end, bytes per channel: reads then writes), by start.
    let mut hosts: std::collections::BTreeMap<String, Vec<(f64, f64, Vec<f64>)>> = Default::default();
    for s in show["samples"].as_array().unwrap() {
        let (t, secs) = (s["t"].as_f64().unwrap(), s["seconds"].as_f64().unwrap());
        let ch: Vec<f64> = ["read", "written"]
            .iter()
            .flat_map(|k| s[*k].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()))
            .collect();
        assert_eq!(ch.len(), 2 * np);
        hosts
            .entry(s["host"].as_str().unwrap().into())
            .or_default()
            .push((t - secs, t, ch));
    }
    let end = hosts.values().flatten().map(|s| s.1).fold(0.0, f64::max);
    let n = (end / width - 1e-9).ceil() as usize;
    let edges: Vec<f64> = (0..=n).map(|k| (k as f64 * width).min(end)).collect();
    // The cumulative bytes of one host's channel at time x.
    let curve = |samples: &[(f64, f64, Vec<f64>)], c: usize, x: f64| -> f64 {
        samples
            .iter()
            .map(|(a, b, v)| v[c] * ((x.min(*b) - a) / (b - a)).clamp(0.0, 1.0))
            .sum()
    };
    let mut rates = vec![vec![0.0; n]; 2 * np];
    for samples in hosts.values() {
        for (c, series) in rates.iter_mut().enumerate() {
            for k in 0..n {
                let len = edges[k + 1] - edges[k];
                series[k] += (curve(samples, c, edges[k + 1]) - curve(samples, c, edges[k])) / len;
            }
        }
    }
    let lengths: Vec<f64> = (0..n).map(|k| edges[k + 1] - edges[k]).collect();
    let channels: Vec<(String, usize, usize)> = pools
        .iter()
        .enumerate()
        .map(|(p, name)| (name.clone(), p, np + p))
        .collect();
    common::seed_table(&rates, &lengths, width, lt, &channels)
}

#[test]
fn the_table_equals_its_recomputation_from_the_raw_samples_at_a_short_interval() {
    // 100 ms samples for 12 s: each host wakes a little late for every sample, so sample ends
    // fall just past the intervals' edges again and again (and the last one is partial).
    let s = Scratch::new();
    let dirs: Vec<std::path::PathBuf> = (1..=3).map(|i| s.path().join(format!("pool{i}"))).collect();
    let mut args: Vec<String> = [
        "challenge",
        "run",
        "--writers",
        "2",
        "--readers",
        "2",
        "--file-size",
        "1m",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    for (i, d) in dirs.iter().enumerate() {
        std::fs::create_dir(d).unwrap();
        args.extend(["--pool".into(), format!("P{}={}", i + 1, d.display())]);
    }
    args.extend(
        [
            "--bs",
            "256k",
            "--duration",
            "12s",
            "--interval",
            "100ms",
            "--lt",
            "1s",
            "--json",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(|a| a.as_str()).collect();
    let out = s.storlab(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = run_json(&out)["challenge"].as_u64().unwrap();
    let shown = show(&s, id, true);
    let samples = shown["samples"].as_array().unwrap();
    assert!(samples.len() >= 100, "{} samples", samples.len());
    let late = samples
        .iter()
        .filter(|x| {
            let t = x["t"].as_f64().unwrap();
            (t / 0.1 - (t / 0.1).round()).abs() > 1e-6
        })
        .count();
    assert!(late > samples.len() / 2, "sample ends off the edges: {late}");

    let expected = recompute_table(&shown);
    let stats = s.json(&["challenge", "stats", &id.to_string()]);
    common::assert_same_table(&stats["statistics"]["rows"], &expected, 1e-9);
    // Data never stopped flowing: no long-term average of the total is 0.
    let total = &expected["Tot-ReadWriteAverage"];
    assert!(total[1] > 0.0, "MIN of the total {total:?}");
    // The printed table holds the same figures (MB/s, three decimals).
    let text = stdout(&s.storlab(&["challenge", "stats", &id.to_string()]));
    for (name, want) in &expected {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row {name}: {text}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[1], format!("{:.3}", want[0] / 1e6), "{name} MAX: {line}");
        assert_eq!(cells[2], format!("{:.3}", want[1] / 1e6), "{name} MIN: {line}");
        assert_eq!(cells[3], format!("{:.3}", want[2] / 1e6), "{name} AVG: {line}");
    }
    // A window past the data (hours 2 to 26 of a challenge of seconds) is refused, naming the
    // span there is, not answered with a table of zeros.
    let out = s.storlab(&["challenge", "stats", &id.to_string(), "--from", "2", "--to", "26"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--from 2 --to 26: no sample of challenge"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("its samples are 0.."), "{}", stderr(&out));
    for d in &dirs {
        nothing_left(d);
    }
}

/// The busy milliseconds (io_ticks) of block device `name` from /proc/diskstats.
fn busy_ms(name: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&name))
        .map(|f| f[12].parse().unwrap())
        .unwrap_or_else(|| panic!("{name} is not in /proc/diskstats"))
}

/// Each interval says what its pools' devices did (the busiest device beneath the pool: busy
/// share and queue), and `challenge stats` the share of the time a device bounded each pool —
/// recomputed here from the samples, and the busy time checked against the kernel's counters
/// read by the test itself. A pool on tmpfs has no device and says so.
#[test]
fn each_interval_says_whether_a_device_bounded_each_pool() {
    let s = Scratch::new();
    let point = s.path().join("ext4");
    let fs = loop_filesystem("mkfs.ext4", 256 << 20, &point);
    let loop_name = fs.dev.dev.trim_start_matches("/dev/").to_string();
    // The loop device's file is on a disk: the devices beneath it, as /sys says.
    let backing = std::fs::read_to_string(format!("/sys/block/{loop_name}/loop/backing_file")).unwrap();
    let disk_of = |path: &str| -> String {
        let out = std::process::Command::new("df")
            .args(["--output=source", path])
            .output()
            .unwrap();
        let src = stdout(&out).lines().nth(1).unwrap().trim().to_string();
        let real = std::fs::canonicalize(&src).unwrap();
        let name = real.file_name().unwrap().to_string_lossy().to_string();
        // A partition counts as its disk (vda1 → vda), as /proc/diskstats' whole-disk line.
        if std::path::Path::new(&format!("/sys/block/{name}")).exists() {
            name
        } else {
            std::fs::read_link(format!("/sys/class/block/{name}/.."))
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().to_string()))
                .unwrap_or(name)
        }
    };
    let under = disk_of(backing.trim());
    let tmp = s.path().join("tmpfs-pool");
    std::fs::create_dir(&tmp).unwrap();
    let before: Vec<u64> = [&loop_name, &under].iter().map(|d| busy_ms(d)).collect();
    let p1 = format!("P1={}", point.display());
    let p2 = format!("P2={}", tmp.display());
    let out = s.storlab(&[
        "challenge",
        "run",
        "--writers",
        "2",
        "--readers",
        "2",
        "--file-size",
        "4m",
        "--bs",
        "1m",
        "--pool",
        &p1,
        "--pool",
        &p2,
        "--direct",
        "--duration",
        "6s",
        "--interval",
        "1s",
        "--json",
    ]);
    let after: Vec<u64> = [&loop_name, &under].iter().map(|d| busy_ms(d)).collect();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = run_json(&out)["challenge"].as_u64().unwrap();
    let shown = show(&s, id, true);
    let samples = shown["samples"].as_array().unwrap();
    assert!(samples.len() >= 5, "{} samples", samples.len());
    // P1's devices read every interval; P2 (tmpfs) has none.
    let (mut busy_s, mut read_s, mut bound_s) = (0.0, 0.0, 0.0);
    for smp in samples {
        let secs = smp["seconds"].as_f64().unwrap();
        let d = &smp["device"];
        assert!(d[1].is_null(), "tmpfs has no device: {smp}");
        let (busy, queue) = (d[0][0].as_f64().unwrap(), d[0][1].as_f64().unwrap());
        assert!((0.0..=1.0).contains(&busy) && queue >= 0.0, "{smp}");
        busy_s += busy * secs;
        read_s += secs;
        if busy >= 0.8 && queue >= 1.5 {
            bound_s += secs;
        }
    }
    // The busiest device's busy time is at least the loop device's own and at most all of
    // them together (the kernel's counters over the whole command, which the samples cover
    // but for the start and the end: half a second of slack).
    let delta: Vec<f64> = before.iter().zip(&after).map(|(b, a)| (a - b) as f64 / 1e3).collect();
    eprintln!("busiest device over the samples {busy_s:.2} s; the kernel's busy seconds {delta:?}");
    assert!(
        busy_s >= delta[0] - 0.5,
        "busiest {busy_s:.2} s against {loop_name}'s {:.2} s",
        delta[0]
    );
    assert!(
        busy_s <= delta.iter().sum::<f64>() + 0.5,
        "busiest {busy_s:.2} s against {delta:?}"
    );
    let stats = s.json(&["challenge", "stats", &id.to_string()]);
    let bound = &stats["statistics"]["device_bound"];
    assert_eq!(bound[0][0], "P1");
    let share = bound[0][1].as_f64().unwrap();
    assert!(
        (share - bound_s / read_s).abs() < 1e-9,
        "{share} against {}",
        bound_s / read_s
    );
    assert!(bound[1][1].is_null(), "{bound}");
    let text = stdout(&s.storlab(&["challenge", "stats", &id.to_string()]));
    assert!(
        text.contains(&format!(
            "P1 {:.0} % of the time, P2 — (its devices not read)",
            share * 100.0
        )),
        "{text}"
    );
}
