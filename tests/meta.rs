//! `storlab meta`: mdtest's namespace phases, run by the real binary on tmpfs and on
//! loop-mounted ext4, their counts checked against what `find` counts, their errors named,
//! bad requests refused with nothing made, and Ctrl-C leaving nothing behind.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Entries below `dir` of a `find -type` (f, d), `dir` itself not counted.
fn find_count(dir: &Path, kind: &str) -> usize {
    let out = Command::new("find")
        .arg(dir)
        .args(["-mindepth", "1", "-type", kind])
        .output()
        .expect("find");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// The phases of a stored run, by name: (entries, errors, ops).
fn phases(run: &Value) -> Vec<(String, u64, u64, u64)> {
    run["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let m = &p["params"]["meta"];
            let r = &p["result"];
            (
                p["kind"].as_str().unwrap().to_string(),
                m["entries"].as_u64().unwrap(),
                m["errors"].as_u64().unwrap(),
                r["ops_read"].as_u64().unwrap() + r["ops_written"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `storlab meta ARGS --json` started in the background with `s`'s database.
fn spawn_meta(s: &Scratch, args: &[&str]) -> std::process::Child {
    Command::new(bin())
        .arg("meta")
        .args(args)
        .arg("--json")
        .env("STORLAB_DB", s.db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What `dir` holds, an ext4's lost+found aside.
fn entries_of(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lost+found")
        .collect()
}

/// Checks one filesystem: a kept tree counted with find, then every phase in one run with
/// exact counts and nothing left.
fn counts_on(s: &Scratch, dir: &Path) {
    // 3 workers × 500 items in a shared tree of depth 2, branch 3 (13 directories).
    let v = s.json(&[
        "meta",
        "--target",
        dir.to_str().unwrap(),
        "--threads",
        "3",
        "--files-per-thread",
        "500",
        "--tree",
        "2,3",
        "--phase",
        "mkdir,create",
        "--file-size",
        "1k",
        "--keep",
    ]);
    let root = dir.join(entries_of(dir).first().expect("the kept tree"));
    assert_eq!(find_count(&root, "f"), 1500, "files made");
    // 13 tree directories and 1500 made by mkdir.
    assert_eq!(find_count(&root, "d"), 1 + 12 + 1500, "directories made");
    assert_eq!(
        phases(&v),
        [("mkdir".into(), 1500, 0, 1500), ("create".into(), 1500, 0, 1500)]
    );
    let sizes = Command::new("find")
        .arg(&root)
        .args(["-type", "f", "-size", "1024c"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&sizes.stdout).lines().count(),
        1500,
        "each file holds 1 KiB"
    );
    std::fs::remove_dir_all(&root).unwrap();

    // Every phase, a tree per worker; the remove takes the links too.
    let v = s.json(&[
        "meta",
        "--target",
        dir.to_str().unwrap(),
        "--threads",
        "2",
        "--files-per-thread",
        "400",
        "--tree",
        "1,4",
        "--unique-dir",
        "--phase",
        "mkdir,create,stat,read,write,rename,link,stat,remove,rmdir",
        "--file-size",
        "4k",
    ]);
    let got = phases(&v);
    let want: Vec<(String, u64, u64, u64)> = [
        ("mkdir", 800, 800),
        ("create", 800, 800),
        ("stat", 800, 800),
        ("read", 800, 800),
        ("write", 800, 800),
        ("rename", 800, 800),
        ("link", 800, 800),
        ("stat", 800, 800),
        ("remove", 1600, 800),
        ("rmdir", 800, 800),
    ]
    .iter()
    .map(|(k, e, o)| (k.to_string(), *e, 0, *o))
    .collect();
    assert_eq!(got, want);
    assert_eq!(v["status"], "ok");
    let read = &v["phases"][3]["result"];
    assert_eq!(read["bytes_read"], 800 * 4096, "read gave back every byte written");
    assert!(entries_of(dir).is_empty(), "left behind: {:?}", entries_of(dir));
}

#[test]
fn every_phase_acts_on_exactly_the_entries_find_counts() {
    let s = Scratch::new();
    counts_on(&s, &s.data());
    let point = s.path().join("ext4");
    let fs = loop_filesystem("mkfs.ext4", 256 << 20, &point);
    counts_on(&s, &fs.mount.point);
}

/// An item's time runs from the end of the worker's previous item (docs/meta.md), so one worker's
/// samples add up to its time in the phase: the histogram's mean times its count against the
/// worker's seconds, on tmpfs, for stat (the shortest item, where a gap between items would show
/// most: timed around its system call alone, 5–10 % of a stat's time went uncounted).
#[test]
fn one_workers_item_times_add_up_to_its_time_in_the_phase() {
    let s = Scratch::new();
    let point = s.path().join("tmpfs");
    let _tmpfs = mount_fs(&point, "tmpfs", "size=256m");
    let v = s.json(&[
        "meta",
        "--target",
        point.to_str().unwrap(),
        "--threads",
        "1",
        "--files-per-thread",
        "20000",
        "--phase",
        "create,stat,remove",
        "--file-size",
        "0",
    ]);
    for p in v["phases"].as_array().unwrap() {
        let r = &p["result"];
        let lat = &r["latency"];
        let (count, mean_ns) = (lat["count"].as_f64().unwrap(), lat["mean_ns"].as_f64().unwrap());
        let worker = r["workers"][0]["seconds"].as_f64().unwrap();
        assert_eq!(count, 20000.0, "{}: a sample per item", p["kind"]);
        let summed = count * mean_ns / 1e9;
        // The histogram keeps 3 significant digits (0.1 %); the directory's open before the first
        // item is the worker's, not an item's: 2 % covers both.
        assert!(
            (summed / worker - 1.0).abs() < 0.02,
            "{}: items add up to {summed:.6} s, the worker took {worker:.6} s",
            p["kind"]
        );
    }
}

#[test]
fn a_file_gone_before_stat_is_an_error_named_and_the_run_fails() {
    let s = Scratch::new();
    let data = s.data();
    // One worker makes 200,000 empty files, then stats them in order; as soon as the last
    // exists, the test removes the last three, which the stat reaches only after the others.
    let n = 200_000u64;
    let child = spawn_meta(
        &s,
        &[
            "--target",
            data.to_str().unwrap(),
            "--files-per-thread",
            &n.to_string(),
            "--phase",
            "create,stat,remove",
        ],
    );
    let start = Instant::now();
    let last = |k: u64| format!("file.storlab.0.{}", n - k);
    let root = loop {
        assert!(start.elapsed() < Duration::from_secs(60), "the tree never appeared");
        if let Some(r) = entries_of(&data).first() {
            let shared = data.join(r).join("shared");
            if shared.join(last(1)).exists() {
                break shared;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    for k in 1..=3 {
        std::fs::remove_file(root.join(last(k))).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "failed");
    let stat = &v["phases"][1]["params"]["meta"];
    assert_eq!(stat["errors"], 3, "{stat}");
    assert_eq!(stat["entries"], n - 3);
    let named: Vec<&str> = stat["first_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    for k in 1..=3 {
        assert!(
            named
                .iter()
                .any(|e| e.contains(&format!("/{}: stat: ", last(k))) && e.contains("No such file")),
            "{named:?}"
        );
    }
    assert!(
        v["status_detail"]
            .as_str()
            .unwrap()
            .contains("phase 2 (stat): 3 error(s)"),
        "{}",
        v["status_detail"]
    );
    assert!(
        entries_of(&data).is_empty(),
        "the tree is removed after a failed phase too"
    );
}

#[test]
fn bad_requests_are_refused_with_nothing_made_or_stored() {
    let s = Scratch::new();
    let data = s.data();
    let d = data.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["--files-per-thread", "0"],
            "--files-per-thread 0: each worker needs at least one item",
        ),
        (vec!["--threads", "0"], "--threads 0"),
        (
            vec!["--phase", "create,unlink"],
            "--phase unlink: not a metadata phase (did you mean 'link'?); expected mkdir, create",
        ),
        (vec!["--phase", "create,read"], "--phase read with --file-size 0"),
        (
            vec!["--phase", "stat"],
            "--phase stat (phase 1 of 1): no files to work on; create comes first",
        ),
        (vec!["--tree", "7,10"], "more than 1000000 directories"),
        (vec!["--tree", "2"], "--tree 2: expected DEPTH,BRANCH"),
        (vec!["--file-size", "4x"], "--file-size 4x"),
        (vec!["--runtime", "0s"], "--runtime 0"),
    ] {
        let mut a = vec!["meta", "--target", d];
        a.extend(args.iter().copied());
        let out = s.storlab(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    let out = s.storlab(&["meta", "--target", &format!("{d}/missing")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing"), "{}", stderr(&out));

    // A filesystem with 128 inodes cannot hold 2 × 100 files: refused before the first.
    let point = s.path().join("small");
    let images = tempfile::tempdir_in("/var/tmp").unwrap();
    let dev = loop_device(&images.path().join("small.img"), 16 << 20);
    let mk = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-N", "128", &dev.dev])
        .output()
        .unwrap();
    assert!(mk.status.success(), "{}", stderr(&mk));
    let m = mount_device(&dev.dev, &point);
    let out = s.storlab(&[
        "meta",
        "--target",
        m.point.to_str().unwrap(),
        "--threads",
        "2",
        "--files-per-thread",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("inodes and the filesystem has"),
        "{}",
        stderr(&out)
    );
    assert!(entries_of(&m.point).is_empty(), "{:?}", entries_of(&m.point));
    drop(m);
    drop(dev);

    assert!(entries_of(&data).is_empty(), "{:?}", entries_of(&data));
    assert!(s.nothing_stored());
}

#[test]
fn ctrl_c_removes_the_tree() {
    let s = Scratch::new();
    let data = s.data();
    // A million files take the two workers seconds to make: time to interrupt them.
    let child = spawn_meta(
        &s,
        &[
            "--target",
            data.to_str().unwrap(),
            "--threads",
            "2",
            "--files-per-thread",
            "500000",
            "--phase",
            "create,stat,remove",
        ],
    );
    let start = Instant::now();
    loop {
        assert!(start.elapsed() < Duration::from_secs(60), "no file was made");
        let made = entries_of(&data)
            .first()
            .map(|r| data.join(r).join("shared"))
            .and_then(|d| std::fs::read_dir(d).ok())
            .is_some_and(|mut d| d.next().is_some());
        if made {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "aborted");
    assert!(
        v["status_detail"]
            .as_str()
            .unwrap()
            .contains("interrupted during phase 1 (create)"),
        "{}",
        v["status_detail"]
    );
    assert!(
        v["phases"].as_array().unwrap().is_empty(),
        "the interrupted phase is not stored"
    );
    assert!(entries_of(&data).is_empty(), "left behind: {:?}", entries_of(&data));
}

#[test]
fn a_walk_counts_what_find_counts_and_du_is_timed_beside_it() {
    let s = Scratch::new();
    let point = s.path().join("ext4");
    let fs = loop_filesystem("mkfs.ext4", 256 << 20, &point);
    let dir = &fs.mount.point;
    s.json(&[
        "meta",
        "--target",
        dir.to_str().unwrap(),
        "--threads",
        "2",
        "--files-per-thread",
        "3000",
        "--tree",
        "2,4",
        "--phase",
        "mkdir,create",
        "--keep",
    ]);
    let find = Command::new("find")
        .arg(dir)
        .arg("-mindepth")
        .arg("1")
        .output()
        .unwrap();
    let below = String::from_utf8_lossy(&find.stdout).lines().count() as u64;
    // lost+found, storlab's directory, its tree's 21 directories, 6,000 files and 6,000 more.
    assert_eq!(below, 1 + 1 + 21 + 12_000);
    let v = s.json(&[
        "meta",
        "walk",
        dir.to_str().unwrap(),
        "--compare-du",
        "--cold",
        "--threads",
        "3",
    ]);
    assert_eq!(v["status"], "ok", "{v}");
    let kinds: Vec<&str> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["walk", "du"]);
    let walk = &v["phases"][0];
    assert_eq!(
        walk["params"]["meta"]["entries"], below,
        "the walk met every entry find did"
    );
    assert_eq!(walk["params"]["meta"]["workers"], 3);
    assert_eq!(walk["result"]["ops_read"], below);
    let du = &v["phases"][1];
    assert!(
        du["params"]["imported"]["tool"].as_str().unwrap().starts_with("du"),
        "{du}"
    );
    assert_eq!(du["result"]["ops_read"], below);
    assert!(du["result"]["all_done"]["seconds"].as_f64().unwrap() > 0.0);
    let text = s.storlab(&["results", "show", &v["id"].to_string()]);
    let shown = stdout(&text);
    assert!(shown.contains("a walk of every entry with 3 threads"), "{shown}");
    // The walk measures no latency: shown as "—", not 0.
    let walk_row = shown.lines().find(|l| l.starts_with("1 walk")).unwrap();
    assert!(walk_row.contains("—") && !walk_row.contains("0.0 µs"), "{walk_row}");

    for (args, needle) in [
        (
            vec!["meta", "walk", "/nonexistent-storlab-dir"],
            "/nonexistent-storlab-dir: No such file",
        ),
        (
            vec!["meta", "walk", dir.to_str().unwrap(), "--threads", "0"],
            "--threads 0",
        ),
    ] {
        let out = s.storlab(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn untar_extracts_every_copy_whole_and_refuses_archives_that_escape() {
    let s = Scratch::new();
    let data = s.data();
    let v = s.json(&[
        "meta",
        "untar",
        "--target",
        data.to_str().unwrap(),
        "--generate",
        "kernel-like",
        "--files",
        "400",
        "--concurrency",
        "1,3",
        "--keep",
    ]);
    let root = data.join(entries_of(&data).first().expect("storlab's kept directory"));
    let archive = root.join("kernel-like.tar.gz");
    // GNU tar lists and extracts the generated archive: it is a real one.
    let list = Command::new("tar").arg("tzf").arg(&archive).output().unwrap();
    assert!(list.status.success(), "{}", stderr(&list));
    let entries = String::from_utf8_lossy(&list.stdout).lines().count() as u64;
    let long = Command::new("tar").arg("tvzf").arg(&archive).output().unwrap();
    let files = String::from_utf8_lossy(&long.stdout)
        .lines()
        .filter(|l| l.starts_with('-'))
        .count();
    assert_eq!(files, 400, "regular files in the archive");
    let reference = s.path().join("by-gnu-tar");
    std::fs::create_dir(&reference).unwrap();
    let x = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(&reference)
        .output()
        .unwrap();
    assert!(x.status.success(), "{}", stderr(&x));
    // The last point's three copies are each the same tree, byte for byte.
    for c in 0..3 {
        let diff = Command::new("diff")
            .arg("-r")
            .arg(&reference)
            .arg(root.join(format!("c{c}")))
            .output()
            .unwrap();
        assert!(diff.status.success(), "copy {c} differs: {}", stdout(&diff));
    }
    // Two points, one run each, every entry of every copy counted.
    let points = v["members"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{v}");
    let store = s.store().unwrap();
    for (m, copies) in points.iter().zip([1u64, 3]) {
        let run = store.run(m["run_id"].as_i64().unwrap(), false).unwrap().unwrap();
        let p = &run.phases[0];
        let storlab_model::run::PhaseParams::Meta(meta) = &p.params else {
            panic!("an untar phase: {p:?}")
        };
        assert_eq!(meta.entries, copies * entries, "{copies} copies of {entries} entries");
        assert_eq!(meta.errors, 0);
        assert_eq!(p.result.workers.len() as u64, copies);
    }
    std::fs::remove_dir_all(&root).unwrap();

    // An archive made by GNU tar works too; one whose entry climbs out is refused, nothing made.
    let src = s.path().join("src");
    std::fs::create_dir_all(src.join("a/b")).unwrap();
    std::fs::write(src.join("a/b/f.c"), "int x;\n").unwrap();
    let tgz = s.path().join("src.tar.gz");
    let made = Command::new("tar")
        .arg("czf")
        .arg(&tgz)
        .arg("-C")
        .arg(&src)
        .arg("a")
        .output()
        .unwrap();
    assert!(made.status.success());
    let v = s.json(&[
        "meta",
        "untar",
        "--target",
        data.to_str().unwrap(),
        "--archive",
        tgz.to_str().unwrap(),
        "--concurrency",
        "2",
    ]);
    assert_eq!(v["members"].as_array().unwrap().len(), 1);
    let evil = s.path().join("evil.tar");
    let made = Command::new("tar")
        .current_dir(&src)
        .args(["-cPf", evil.to_str().unwrap(), "../src/a/b/f.c"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let out = s.storlab(&[
        "meta",
        "untar",
        "--target",
        data.to_str().unwrap(),
        "--archive",
        evil.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("would land outside"), "{}", stderr(&out));
    for (args, needle) in [
        (
            vec!["--generate", "kernel-like", "--concurrency", "0"],
            "--concurrency 0",
        ),
        (vec!["--generate", "debian-like"], "--generate debian-like"),
        (vec![], "give --archive FILE"),
        (vec!["--archive", "/etc/hostname"], "expected a .tar"),
    ] {
        let mut a = vec!["meta", "untar", "--target", data.to_str().unwrap()];
        a.extend(args.iter().copied());
        let out = s.storlab(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    assert!(entries_of(&data).is_empty(), "{:?}", entries_of(&data));
}

/// Seed 004's metadata-device job, as docs/meta.md runs it: an ext4 formatted as Lustre formats
/// an MDT (1 KiB inodes, an inode per 2.5 KiB, no extents, 32-bit block numbers), on a loop device with O_DIRECT to
/// its image, and the example job with its size and runtime made small.
#[test]
fn the_metadata_device_job_runs_on_an_mdt_like_ext4() {
    let s = Scratch::new();
    let images = tempfile::tempdir_in("/var/tmp").unwrap();
    let dev = loop_device_with(&images.path().join("mdt.img"), 512 << 20, true);
    let mk = Command::new("mkfs.ext4")
        .args([
            "-q",
            "-F",
            "-I",
            "1024",
            "-i",
            "2560",
            "-O",
            "^extents,^64bit,dir_nlink,flex_bg",
            &dev.dev,
        ])
        .output()
        .unwrap();
    assert!(mk.status.success(), "{}", stderr(&mk));
    let m = mount_device(&dev.dev, &s.path().join("mdt"));
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mdt-4k.toml");
    let v = s.json(&[
        "run",
        job.to_str().unwrap(),
        "--target",
        m.point.to_str().unwrap(),
        "--size",
        "8m",
        "--runtime",
        "1s",
    ]);
    let kinds: Vec<&str> = v["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["write", "read", "randread", "randwrite", "randrw"]);
    for p in v["phases"].as_array().unwrap() {
        let plan = &p["params"]["plan"];
        assert_eq!(plan["workers"].as_array().unwrap().len(), 10, "10 workers");
        assert_eq!(plan["settings"]["direct"], true);
        assert!(p["result"]["all_done"]["iops"].as_f64().unwrap() > 0.0);
    }
    let tune = Command::new("tune2fs").arg("-l").arg(&dev.dev).output().unwrap();
    assert!(
        stdout(&tune).contains("Inode size:\t          1024"),
        "{}",
        stdout(&tune)
    );
    drop(m);
    drop(dev);
}
