//! Integration tests: the real `storlab` binary on real files (tmpfs and a loop-mounted ext4
//! filesystem), a real SQLite database, real signals. Each test works in its own temporary
//! directory and removes it, unmounts and detaches what it set up, even when it fails.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use storlab_model::run::RunEventKind;

mod common;
use common::*;

#[test]
fn demo_runs_stores_and_cleans_up() {
    let s = Scratch::new();
    let out = s.storlab(&["demo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for (seq, phase) in ["write", "rewrite", "read", "reread", "randread", "randwrite"]
        .iter()
        .enumerate()
    {
        let row = format!("{} {phase} ", seq + 1);
        assert!(text.lines().any(|l| l.starts_with(&row)), "no {phase} row in:\n{text}");
    }
    assert!(
        text.contains("MiB/s") && text.contains("IOPS") && text.contains("µs"),
        "units missing:\n{text}"
    );
    assert!(
        text.contains("tmpfs"),
        "the table names the filesystem it measured:\n{text}"
    );
    assert!(
        stderr(&out).contains(&format!("stored as run 1 in {}", s.db())),
        "{}",
        stderr(&out)
    );
    // Its temporary directory and files are gone: only the database is left.
    let left: Vec<String> = entries(s.path())
        .into_iter()
        .filter(|n| !n.starts_with("results.db"))
        .collect();
    assert!(left.is_empty(), "demo left {left:?}");
    let run = s.json(&["results", "show", "1"]);
    assert_eq!(run["status"], "ok");
    assert_eq!(run["kind"], "demo");
    assert_eq!(run["phases"].as_array().unwrap().len(), 6);
    assert!(run["phases"][0]["result"]["bytes_written"].as_u64().unwrap() > 0);
}

#[test]
fn run_from_flags_prints_one_json_document_and_stores_it() {
    let s = Scratch::new();
    let data = s.data();
    let data_s = data.to_str().unwrap();
    let v = s.json(&[
        "run",
        "--target",
        data_s,
        "--phase",
        "write",
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "8m",
        "--threads",
        "2",
        "--engine",
        "psync",
        "--iodepth",
        "1",
        "--tag",
        "fs=tmpfs",
    ]);
    assert_eq!(v["status"], "ok");
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0]["kind"], "write");
    assert_eq!(phases[0]["result"]["bytes_written"].as_u64().unwrap(), 16 << 20);
    assert_eq!(phases[1]["result"]["ops_read"].as_u64().unwrap(), 2 * (8 << 20) / 4096);
    assert_eq!(v["tags"][0], serde_json::json!(["fs", "tmpfs"]));
    // The latency percentiles are ordered and measured.
    let p = &phases[1];
    let lat: Vec<u64> = [
        "min_ns",
        "p50_ns",
        "p90_ns",
        "p99_ns",
        "p99_9_ns",
        "p99_99_ns",
        "max_ns",
    ]
    .iter()
    .map(|k| p["result"]["latency"][k].as_u64().unwrap())
    .collect();
    assert!(lat[0] > 0 && lat.windows(2).all(|w| w[0] <= w[1]), "{lat:?}");
    // Throughput mode: per-worker figures and first-done.
    let r = &p["result"];
    assert_eq!(r["workers"].as_array().unwrap().len(), 2);
    assert!(r["first_done"]["seconds"].as_f64().unwrap() <= r["all_done"]["seconds"].as_f64().unwrap());
    assert!(r["worker_min_bytes_per_sec"].as_f64().unwrap() <= r["worker_max_bytes_per_sec"].as_f64().unwrap());
    assert!(r["cpu_sys"].as_f64().unwrap() + r["cpu_user"].as_f64().unwrap() > 0.0);
    // Environment and cache flag.
    assert_eq!(v["environment"]["targets"][0]["fs_type"], "tmpfs");
    assert_eq!(
        phases[0]["cache_flattered"], true,
        "16 MiB buffered on a machine with GiBs of RAM"
    );
    assert!(entries(&data).is_empty(), "files not removed: {:?}", entries(&data));

    let list = s.json(&["results", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    let shown = s.storlab(&["results", "show", "1"]);
    assert!(stdout(&shown).contains("randread"), "{}", stdout(&shown));
}

#[test]
fn csv_has_one_row_per_phase() {
    let s = Scratch::new();
    let data = s.data();
    let out = s.storlab(&[
        "run",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "write",
        "--phase",
        "read",
        "--size",
        "4m",
        "--bs",
        "64k",
        "--csv",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("run,host,job,seq,phase,engine,block size (bytes),"));
    assert!(lines[1].contains(",1,write,psync,65536,"), "{}", lines[1]);
    assert!(lines[2].contains(",2,read,psync,65536,"), "{}", lines[2]);
}

#[test]
fn job_file_with_every_phase_and_flag_override() {
    let s = Scratch::new();
    let data = s.data();
    let job = s.path().join("job.toml");
    std::fs::write(
        &job,
        format!(
            r#"
name = "all-phases"
target = ["{}"]
threads = 2
size = "2m"
bs = "64k"
verify = true
phase = [
    "write", "rewrite", "read", "reread",
    {{ kind = "randread", bs = "4k" }},
    {{ kind = "randwrite", bs = "4k", fsync = 16 }},
    {{ kind = "randrw", bs = "4k", rwmix = 70, verify = false }},
    "backread",
    {{ kind = "strideread", stride = 3 }},
    {{ kind = "recrewrite", bs = "4k", fsync = "end" }},
]
"#,
            data.display()
        ),
    )
    .unwrap();
    let v = s.json(&["run", job.to_str().unwrap(), "--engine", "io_uring", "--iodepth", "4"]);
    assert_eq!(v["status"], "ok", "{v}");
    let phases = v["phases"].as_array().unwrap();
    let kinds: Vec<&str> = phases.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "write",
            "rewrite",
            "read",
            "reread",
            "randread",
            "randwrite",
            "randrw",
            "backread",
            "strideread",
            "recrewrite"
        ]
    );
    for p in phases {
        assert_eq!(
            p["params"]["plan"]["settings"]["engine"], "io_uring",
            "the flag overrides the file"
        );
        assert_eq!(p["params"]["plan"]["settings"]["iodepth"], 4);
        if p["kind"].as_str().unwrap().contains("read") && p["kind"] != "randrw" {
            assert_eq!(p["result"]["verify"]["bad_blocks"], 0, "{}", p["kind"]);
        }
    }
    // randrw at 70 % reads.
    let rw = &phases[6];
    let reads = rw["result"]["ops_read"].as_f64().unwrap();
    let total = reads + rw["result"]["ops_written"].as_f64().unwrap();
    assert!((0.6..0.8).contains(&(reads / total)), "read share {}", reads / total);
    // Every phase moved exactly its file set once (size-based).
    assert_eq!(phases[7]["result"]["bytes_read"].as_u64().unwrap(), 4 << 20);
    assert_eq!(phases[8]["result"]["bytes_read"].as_u64().unwrap(), 4 << 20);
}

#[test]
fn mmap_and_null_backends() {
    let s = Scratch::new();
    let data = s.data();
    let v = s.json(&[
        "run",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "write",
        "--phase",
        "read",
        "--engine",
        "mmap",
        "--size",
        "4m",
        "--bs",
        "64k",
        "--verify",
    ]);
    assert_eq!(v["phases"][1]["result"]["verify"]["bad_blocks"], 0);
    assert_eq!(v["phases"][1]["result"]["bytes_read"].as_u64().unwrap(), 4 << 20);
    let v = s.json(&[
        "run",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "randread",
        "--engine",
        "null",
        "--size",
        "1g",
        "--runtime",
        "1s",
    ]);
    assert!(
        v["phases"][0]["result"]["all_done"]["iops"].as_f64().unwrap() > 100_000.0,
        "the null back-end measures only the engine"
    );
    assert!(entries(&data).is_empty(), "null creates no files: {:?}", entries(&data));
}

/// Runs `args` expecting a refusal: exit code 2, a message containing every needle, and no file
/// written (neither in the target nor a database).
fn refused(s: &Scratch, args: &[&str], needles: &[&str]) {
    let before = s.run_count();
    let out = s.storlab(args);
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?} should be refused with exit 2: {err}"
    );
    for n in needles {
        assert!(err.contains(n), "{args:?}: message lacks '{n}': {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(s.run_count(), before, "{args:?} stored a run");
    if let Ok(e) = std::fs::read_dir(s.path().join("data")) {
        assert_eq!(e.count(), 0, "{args:?} wrote into the target");
    }
}

#[test]
fn bad_input_is_refused_clearly() {
    let s = Scratch::new();
    let d = s.data();
    let t = d.to_str().unwrap();
    refused(
        &s,
        &["run", "--target", t, "--phase", "read", "--bs", "1m", "--size", "64k"],
        &["bs 1MiB is larger than the file size 64KiB"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "read", "--threads", "0"],
        &["--threads", "at least 1"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "scribble"],
        &["--phase", "scribble", "randread"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "read", "--engine", "spdk"],
        &["--engine", "spdk", "io_uring", "libaio"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "read", "--size", "12q"],
        &["--size", "12q", "unknown unit 'q'"],
    );
    refused(
        &s,
        &["run", "--target", "/nonexistent/storlab/dir", "--phase", "read"],
        &["/nonexistent/storlab/dir", "does not exist"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "write", "--size", "100t"],
        &["free", "reduce size"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "randrw", "--rwmix", "101"],
        &["--rwmix", "0–100"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "read", "--iodepth", "8"],
        &["iodepth 8", "io_uring"],
    );
    refused(
        &s,
        &["run", "--target", t, "--phase", "read", "--rate", "fast"],
        &["--rate", "fast"],
    );
    let job = s.path().join("bad.toml");
    std::fs::write(&job, "threads = 2\nbs = \"4k\nphase = [\"read\"]\n").unwrap();
    refused(
        &s,
        &["run", job.to_str().unwrap(), "--target", t],
        &["bad.toml:2:", "TOML syntax error"],
    );
    std::fs::write(&job, "blocksize = \"4k\"\n").unwrap();
    refused(&s, &["run", job.to_str().unwrap(), "--target", t], &["blocksize", "bs"]);
    // A mistyped key: its line and the key meant.
    std::fs::write(&job, "threads = 2\nbz = \"4k\"\nphase = [\"read\"]\n").unwrap();
    refused(
        &s,
        &["run", job.to_str().unwrap(), "--target", t],
        &["bad.toml:2: key bz", "did you mean 'bs'?"],
    );
    // A size off the block names the multiples either side (10 MB = 10,000,000 bytes).
    refused(
        &s,
        &["run", "--target", t, "--phase", "write", "--size", "10MB"],
        &["not a multiple of bs 4KiB", "such as 9764KiB or 9768KiB"],
    );
    // --db naming a directory names a file that would do.
    let dir = s.path().to_str().unwrap().to_string();
    refused(
        &s,
        &["run", "--target", t, "--phase", "read", "--db", &dir],
        &["--db names the directory", "results.db"],
    );
}

#[test]
fn unwritable_target_and_refused_o_direct() {
    let s = Scratch::new();
    let ro = mount_fs(&s.path().join("ro"), "tmpfs", "ro,size=1m");
    refused(
        &s,
        &["run", "--target", ro.point.to_str().unwrap(), "--phase", "write"],
        &["read-only filesystem"],
    );
    // ramfs has no direct I/O: the probe finds out before anything is written.
    let ram = mount_fs(&s.path().join("ram"), "ramfs", "rw");
    refused(
        &s,
        &[
            "run",
            "--target",
            ram.point.to_str().unwrap(),
            "--phase",
            "write",
            "--size",
            "1m",
            "--direct",
        ],
        &["refuses O_DIRECT", "ramfs"],
    );
    assert!(
        entries(&ram.point).is_empty(),
        "the probe left {:?}",
        entries(&ram.point)
    );
}

#[test]
fn a_block_device_is_written_only_with_allow_device() {
    let s = Scratch::new();
    let lo = loop_device(&s.path().join("dev.img"), 16 << 20);
    refused(
        &s,
        &["run", "--target", &lo.dev, "--phase", "write", "--size", "1m"],
        &["block device", &format!("--allow-device {}", lo.dev)],
    );
    // A read harms nothing and needs no flag.
    let v = s.json(&["run", "--target", &lo.dev, "--phase", "read", "--size", "1m"]);
    assert_eq!(v["status"], "ok");
    let v = s.json(&[
        "run",
        "--target",
        &lo.dev,
        "--allow-device",
        &lo.dev,
        "--phase",
        "write",
        "--phase",
        "read",
        "--size",
        "4m",
        "--bs",
        "64k",
        "--direct",
    ]);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["phases"][1]["result"]["bytes_read"].as_u64().unwrap(), 4 << 20);
    assert!(Path::new(&lo.dev).exists(), "storlab never removes a device");
}

#[test]
fn direct_io_on_loop_mounted_ext4() {
    let s = Scratch::new();
    // The image lives on the root filesystem, as a disk image would, not in RAM.
    let img_dir = tempfile::Builder::new()
        .prefix("storlab-ext4-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let lo = loop_device(&img_dir.path().join("ext4.img"), 256 << 20);
    let mk = Command::new("mkfs.ext4")
        .args(["-q", "-F", &lo.dev])
        .output()
        .expect("mkfs.ext4");
    assert!(mk.status.success(), "{}", stderr(&mk));
    let point = s.path().join("mnt");
    let m = mount_device(&lo.dev, &point);
    let t = point.to_str().unwrap();
    let v = s.json(&[
        "run",
        "--target",
        t,
        "--phase",
        "write",
        "--phase",
        "read",
        "--phase",
        "randread",
        "--size",
        "32m",
        "--bs",
        "4k",
        "--direct",
        "--engine",
        "io_uring",
        "--iodepth",
        "8",
        "--threads",
        "2",
        "--verify",
    ]);
    assert_eq!(v["status"], "ok");
    let env = &v["environment"]["targets"][0];
    assert_eq!(env["fs_type"], "ext4");
    assert_eq!(env["device"], lo.dev.trim_start_matches("/dev/"));
    assert_eq!(v["phases"][1]["result"]["verify"]["bad_blocks"], 0);
    assert_eq!(v["phases"][0]["cache_flattered"], false, "O_DIRECT cannot be flattered");
    // 512-byte blocks are fine for the loop device's 512-byte sectors; 1000 bytes never are.
    let v = s.json(&[
        "run", "--target", t, "--phase", "randread", "--size", "8m", "--bs", "512", "--direct",
    ]);
    assert_eq!(v["status"], "ok");
    refused(
        &s,
        &[
            "run", "--target", t, "--phase", "read", "--size", "1000", "--bs", "1000", "--direct",
        ],
        &["multiples"],
    );
    assert!(
        entries(&point).iter().all(|e| e == "lost+found"),
        "left {:?}",
        entries(&point)
    );
    drop(m);
}

/// A worker with several files (nrfiles): each file written whole and verified, the sizes
/// shared out as fio does, and every file removed at the end unless kept.
#[test]
fn a_worker_with_several_files_writes_verifies_and_removes_them_all() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.to_str().unwrap();
    let base = [
        "run",
        "--target",
        dir,
        "--size",
        "200k",
        "--bs",
        "8k",
        "--nrfiles",
        "3",
        "--file-service",
        "random:2",
        "--verify",
        "--seed",
        "9",
    ];
    let run = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend(extra);
        s.storlab(&a)
    };
    let out = run(&["--phase", "write", "--phase", "read", "--keep", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let read = &doc["phases"][1]["result"];
    // 200 KiB over three files of 8 KiB blocks: 25 blocks, 9 + 8 + 8.
    let mut sizes: Vec<(String, u64)> = entries(&d)
        .into_iter()
        .map(|n| {
            let len = std::fs::metadata(d.join(&n)).unwrap().len();
            (n, len)
        })
        .collect();
    sizes.sort();
    assert_eq!(
        sizes.iter().map(|x| x.1).collect::<Vec<_>>(),
        vec![72 << 10, 64 << 10, 64 << 10],
        "{sizes:?}"
    );
    assert_eq!(read["verify"]["blocks_checked"].as_u64(), Some(50), "{read}");
    assert_eq!(read["verify"]["bad_blocks"].as_u64(), Some(0), "{read}");
    assert_eq!(read["bytes_read"].as_u64(), Some(200 << 10), "{read}");
    for (n, _) in &sizes {
        std::fs::remove_file(d.join(n)).unwrap();
    }
    let out = run(&["--phase", "write", "--phase", "randread"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(entries(&d).is_empty(), "every file removed: {:?}", entries(&d));
    // nrfiles shapes files in a directory: a file target is refused with why.
    let out = s.storlab(&[
        "run",
        "--target",
        d.join("one.dat").to_str().unwrap(),
        "--create-target",
        "--phase",
        "write",
        "--nrfiles",
        "2",
        "--size",
        "64k",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nrfiles shapes the files storlab makes in a directory"),
        "{}",
        stderr(&out)
    );
    assert!(entries(&d).is_empty());
}

#[test]
fn verification_names_each_bad_block() {
    let s = Scratch::new();
    let file = s.data().join("victim.dat");
    let f = file.to_str().unwrap();
    let out = s.storlab(&[
        "run",
        "--target",
        f,
        "--create-target",
        "--phase",
        "write",
        "--size",
        "1m",
        "--bs",
        "64k",
        "--verify",
        "--seed",
        "42",
        "--keep",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Corrupt one byte in the block at 196608 and another at 720896.
    damage_byte(&file, 196_608 + 1000);
    damage_byte(&file, 720_896 + 7);
    let out = s.storlab(&[
        "run", "--target", f, "--phase", "read", "--size", "1m", "--bs", "64k", "--verify", "--seed", "42",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "corruption has its own exit code: {}",
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(text.contains("status corrupt"), "{text}");
    assert!(
        text.contains(&format!("{f} offset 196608: checksum mismatch")),
        "{text}"
    );
    assert!(
        text.contains(&format!("{f} offset 720896: checksum mismatch")),
        "{text}"
    );
    assert!(text.contains("2 bad block(s) of 256 checked"), "{text}");
    // The user's file (existing before the read run) is left in place.
    assert!(file.exists());
    // A different seed means another run's data, intact: counted apart by its seed, not bad.
    let out = s.storlab(&[
        "run", "--target", f, "--phase", "read", "--size", "64k", "--bs", "64k", "--verify", "--seed", "7", "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let verify = &v["phases"][0]["result"]["verify"];
    assert_eq!(verify["bad_blocks"], 0, "{verify}");
    assert_eq!(verify["foreign_blocks"], 16, "{verify}");
    assert_eq!(verify["foreign"][0]["seed"], 42, "{verify}");
}

#[test]
fn offsets_beyond_4_gib() {
    let s = Scratch::new();
    // A sparse 10 GiB file: two workers share it, the second works in [5 GiB, 10 GiB).
    let file = s.data().join("big.dat");
    std::fs::File::create(&file).unwrap().set_len(10 << 30).unwrap();
    let v = s.json(&[
        "run",
        "--target",
        file.to_str().unwrap(),
        "--threads",
        "2",
        "--phase",
        "randwrite",
        "--bs",
        "4k",
        "--runtime",
        "1s",
        "--seed",
        "5",
    ]);
    let w = &v["phases"][0]["params"]["plan"]["workers"];
    assert_eq!(w[1]["offset"].as_u64().unwrap(), 5 << 30);
    assert_eq!(w[1]["len"].as_u64().unwrap(), 5 << 30);
    // Some of the second worker's writes landed beyond 4 GiB: the file holds data there.
    let allocated = std::fs::metadata(&file)
        .map(|m| std::os::unix::fs::MetadataExt::blocks(&m) * 512)
        .unwrap();
    assert!(allocated > 0);
    let mut found_high = false;
    let fh = std::fs::File::open(&file).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    // Scan the data extents with SEEK_DATA from 4 GiB on.
    let mut pos: i64 = 4 << 30;
    loop {
        // SAFETY: lseek on an open descriptor.
        let next = unsafe { libc::lseek(std::os::fd::AsRawFd::as_raw_fd(&fh), pos, libc::SEEK_DATA) };
        if next < 0 {
            break;
        }
        fh.read_at(&mut buf[..4096], next as u64).unwrap();
        if buf[..4096].iter().any(|&b| b != 0) {
            found_high = true;
            break;
        }
        pos = next + 4096;
    }
    assert!(found_high, "no data written beyond 4 GiB");
    assert!(file.exists(), "an existing file is never removed");
}

#[test]
fn rate_control_holds_the_target() {
    let s = Scratch::new();
    let v = s.json(&[
        "run",
        "--target",
        s.data().to_str().unwrap(),
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "16m",
        "--rate",
        "2000iops",
        "--runtime",
        "3s",
        "--threads",
        "2",
    ]);
    let r = &v["phases"][0]["result"]["rate"];
    assert_eq!(r["unit"], "iops");
    assert_eq!(r["target"].as_f64().unwrap(), 2000.0);
    let achieved = r["achieved"].as_f64().unwrap();
    assert!(
        (achieved - 2000.0).abs() / 2000.0 < 0.02,
        "achieved {achieved} IOPS of 2000"
    );
    assert!(r["late_ios"].as_u64().is_some());
    let samples = s.json(&["results", "show", "1", "--samples"]);
    let samples = samples["phases"][0]["result"]["samples"].as_array().unwrap().clone();
    assert!(samples.len() >= 3, "{samples:?}");
    // Every whole 1 s interval after the first holds close to 2000 I/Os.
    for smp in samples
        .iter()
        .skip(1)
        .filter(|x| x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap() > 0.999)
    {
        let ops = smp["ops_read"].as_f64().unwrap();
        assert!((ops - 2000.0).abs() <= 40.0, "interval {} had {ops} I/Os", smp["idx"]);
    }
}

fn wait_for_phase(s: &Scratch, n: usize) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(30) {
        if let Some(store) = s.store() {
            let started: usize = store
                .list_runs(100)
                .unwrap()
                .iter()
                .filter_map(|r| store.run(r.id, false).unwrap())
                .map(|d| d.events.iter().filter(|e| e.kind == RunEventKind::PhaseStart).count())
                .sum();
            if started >= n {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("phase {n} never started");
}

/// A run whose first phase (write) is short and whose second (randread) lasts a minute.
fn spawn_long_run(s: &Scratch, data: &Path) -> std::process::Child {
    let job = s.path().join("long.toml");
    std::fs::write(
        &job,
        "size = \"8m\"\nphase = [\"write\", { kind = \"randread\", runtime = \"60s\" }]\n",
    )
    .unwrap();
    Command::new(bin())
        .args([
            "run",
            job.to_str().unwrap(),
            "--target",
            data.to_str().unwrap(),
            "--json",
        ])
        .env("STORLAB_DB", s.db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn ctrl_c_stops_within_a_second_and_keeps_finished_phases() {
    let s = Scratch::new();
    let data = s.data();
    let mut child = spawn_long_run(&s, &data);
    wait_for_phase(&s, 2);
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let sent = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "storlab did not stop after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = sent.elapsed();
    assert!(took < Duration::from_millis(1500), "stopping took {took:?}");
    assert_eq!(status.code(), Some(130));
    assert!(
        entries(&data).is_empty(),
        "files left after Ctrl-C: {:?}",
        entries(&data)
    );
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "aborted");
    assert_eq!(
        v["phases"].as_array().unwrap().len(),
        1,
        "the finished write phase is kept"
    );
}

#[test]
fn kill_9_leaves_a_sound_database() {
    let s = Scratch::new();
    let data = s.data();
    let mut child = spawn_long_run(&s, &data);
    wait_for_phase(&s, 2);
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(s.store().unwrap().integrity_check().unwrap(), "ok");
    // The next run works, and the killed one is now marked aborted with its first phase kept.
    let v = s.json(&[
        "run",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "1m",
    ]);
    assert_eq!(v["id"], 2);
    let old = s.json(&["results", "show", "1"]);
    assert_eq!(old["status"], "aborted");
    assert_eq!(old["phases"].as_array().unwrap().len(), 1);
}

#[test]
fn environment_reads_btrfs_raid_profiles() {
    let s = Scratch::new();
    let img_dir = tempfile::Builder::new()
        .prefix("storlab-btrfs-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let a = loop_device(&img_dir.path().join("a.img"), 300 << 20);
    let b = loop_device(&img_dir.path().join("b.img"), 300 << 20);
    let mk = Command::new("mkfs.btrfs")
        .args(["-q", "-f", "-d", "raid1", "-m", "raid1", &a.dev, &b.dev])
        .output()
        .expect("mkfs.btrfs (btrfs-progs)");
    assert!(mk.status.success(), "{}", stderr(&mk));
    let point = s.path().join("pool");
    let m = mount_device(&a.dev, &point);
    let v = s.json(&[
        "run",
        "--target",
        point.to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "8m",
        "--bs",
        "1m",
        "--fsync",
        "end",
    ]);
    let t = &v["environment"]["targets"][0];
    assert_eq!(t["fs_type"], "btrfs");
    assert_eq!(t["raid"], "btrfs data raid1, metadata raid1, 2 device(s)", "{t}");
    let shown = s.storlab(&["results", "show", &v["id"].to_string()]);
    assert!(
        stdout(&shown).contains("btrfs data raid1"),
        "the table names the RAID layout: {}",
        stdout(&shown)
    );
    drop(m);
}

#[test]
fn byte_rate_limit_per_worker() {
    let s = Scratch::new();
    let v = s.json(&[
        "run",
        "--target",
        s.data().to_str().unwrap(),
        "--phase",
        "read",
        "--bs",
        "64k",
        "--size",
        "64m",
        "--threads",
        "2",
        "--rate",
        "16MiB/s",
        "--rate-per",
        "worker",
        "--runtime",
        "2s",
    ]);
    let r = &v["phases"][0]["result"]["rate"];
    assert_eq!(r["unit"], "bytes/s");
    assert_eq!(
        r["target"].as_f64().unwrap(),
        32.0 * 1048576.0,
        "two workers at 16 MiB/s each"
    );
    let achieved = r["achieved"].as_f64().unwrap();
    assert!(
        (achieved / (32.0 * 1048576.0) - 1.0).abs() < 0.03,
        "achieved {achieved} bytes/s"
    );
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // `storlab ... | head -c 20`: head closes the pipe early; storlab stops like any Unix tool
    // (SIGPIPE), without a panic message. Before, println! panicked on the broken pipe.
    let s = Scratch::new();
    let d = s.data();
    // 3000 rows: more than a pipe holds, so storlab is still writing when head has gone.
    for i in 0..3000 {
        std::fs::create_dir(d.join(format!("d{i}"))).unwrap();
        std::fs::write(d.join(format!("d{i}/f")), b"x").unwrap();
    }
    for json in ["", "--json"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "'{}' scan {json} --group-by depth:1 '{}' | head -c 20 >/dev/null",
                bin(),
                d.display()
            ))
            .env("STORLAB_DB", s.db())
            .output()
            .unwrap();
        assert!(
            !stderr(&out).contains("panicked") && !stderr(&out).contains("Broken pipe"),
            "{json}: {}",
            stderr(&out)
        );
    }
}

/// docs/run.md's key reference is generated from the settings' one declaration; this fails when
/// a setting is added or changed without the page (UPDATE_SNAPSHOTS=1 rewrites it). Every
/// setting is also a flag of `storlab run`, with the declaration's help.
#[test]
fn settings_reference_in_the_docs_and_the_flags_come_from_one_declaration() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/run.md");
    let page = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- settings: generated", "<!-- end of settings -->");
    let a = page.find(begin).expect("the generated block's start");
    let a = a + page[a..].find('\n').unwrap() + 1;
    let b = page.find(end).expect("the generated block's end");
    let want = storlab_model::settings::reference();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, format!("{}{want}{}", &page[..a], &page[b..])).unwrap();
    } else {
        assert_eq!(
            &page[a..b],
            want,
            "docs/run.md's settings differ from their declaration"
        );
    }
    let help = stdout(&Command::new(bin()).args(["run", "--help"]).output().unwrap());
    for x in storlab_model::settings::SETTINGS {
        assert!(help.contains(&x.flag()), "{} is not a flag of storlab run", x.flag());
    }
    assert!(help.contains("I/Os in flight per worker"), "{help}");
}

/// Sectors read from a block device so far (/sys/block/DEV/stat, third field).
fn sectors_read(dev: &str) -> u64 {
    let name = Path::new(dev).file_name().unwrap().to_str().unwrap();
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// `fadvise = "dontneed"` reaches the kernel: a buffered read of a file the page cache holds
/// reads nothing from the device, the same read after the hint reads the whole file from it
/// (counted by the loop device under a real ext4).
#[test]
fn fadvise_dontneed_sends_a_cached_read_to_the_device() {
    let s = Scratch::new();
    let point = s.path().join("mnt");
    let fs = loop_filesystem("mkfs.ext4", 128 << 20, &point);
    let lo = &fs.dev;
    let file = point.join("cached.dat");
    std::fs::write(&file, vec![7u8; 16 << 20]).unwrap();
    let f = std::fs::File::open(&file).unwrap();
    f.sync_all().unwrap();
    // Read once so that the page cache holds the whole file.
    std::io::copy(&mut std::fs::File::open(&file).unwrap(), &mut std::io::sink()).unwrap();
    let read = |extra: &[&str]| {
        let before = sectors_read(&lo.dev);
        let mut a = vec![
            "run",
            "--target",
            file.to_str().unwrap(),
            "--phase",
            "read",
            "--bs",
            "64k",
        ];
        a.extend_from_slice(extra);
        let v = s.json(&a);
        assert_eq!(v["phases"][0]["result"]["bytes_read"], 16u64 << 20);
        (sectors_read(&lo.dev) - before) * 512
    };
    let cached = read(&[]);
    assert!(
        cached < 1 << 20,
        "a cached read reads (almost) nothing from the device: {cached} bytes"
    );
    let dropped = read(&["--fadvise", "dontneed"]);
    assert!(
        dropped >= 16 << 20,
        "after dontneed the whole file comes from the device: {dropped} bytes"
    );
    let plan = s.json(&["results", "show", "2"]);
    assert_eq!(plan["phases"][0]["params"]["plan"]["settings"]["fadvise"], "dontneed");
}

/// A run gives its space back before it returns: btrfs frees a removed file's blocks only when
/// its transaction commits, so without the flush after the cleanup a second job started at
/// once on a small filesystem was refused for space the first had just released (found by a
/// cost-to-the-users study followed by `impact --reverse` on a 2 GiB pool).
#[test]
fn a_run_gives_its_space_back_before_it_returns() {
    let s = Scratch::new();
    let point = s.path().join("mnt");
    let _fs = loop_filesystem("mkfs.btrfs", 512 << 20, &point);
    let free = || storlab_env::space::statvfs(&point).unwrap().free.unwrap();
    let before = free();
    // A job that needs most of the filesystem, twice in a row.
    let size = format!("{}m", (before * 2 / 3) >> 20);
    for _ in 0..2 {
        let t = point.to_str().unwrap();
        let out = s.storlab(&[
            "run", "--target", t, "--phase", "write", "--size", &size, "--bs", "1m", "--fsync", "end",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            free() > before - (32 << 20),
            "the space is back when storlab returns: {} MiB free of {} MiB before",
            free() >> 20,
            before >> 20
        );
    }
}

/// Data written earlier, read back later (issue 13's scenario): untouched and read without the
/// writer's seed, every block is intact and another run's — not corruption; damaged, only the
/// two damaged blocks are bad, the rest counted apart with the seed in the form `--seed` takes;
/// with that seed, or `--verify-against` the writing run, just the two blocks are named.
#[test]
fn old_data_is_verified_with_the_seed_as_printed_or_against_its_run() {
    let s = Scratch::new();
    let file = s.data().join("old.dat");
    let f = file.to_str().unwrap();
    let w = s.json(&[
        "run",
        "--target",
        f,
        "--create-target",
        "--phase",
        "write",
        "--size",
        "1m",
        "--bs",
        "64k",
        "--verify",
        "--keep",
    ]);
    let writer = w["id"].as_i64().unwrap().to_string();
    let read = |extra: &[&str]| {
        let mut a = vec![
            "run", "--target", f, "--phase", "read", "--size", "1m", "--bs", "64k", "--verify",
        ];
        a.extend(extra);
        s.storlab(&a)
    };
    let out = read(&[]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("256 intact block(s) of 256 checked were written by another run"),
        "{}",
        stdout(&out)
    );
    damage_byte(&file, 65_536 + 100);
    damage_byte(&file, 655_360 + 9);
    let out = read(&[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("2 bad block(s) of 256 checked"), "{text}");
    assert!(
        text.contains("254 intact block(s) of 256 checked were written by another run"),
        "{text}"
    );
    let at = text
        .find("--seed 0x")
        .unwrap_or_else(|| panic!("no seed to verify with: {text}"));
    let seed: String = text[at + 7..].chars().take(18).collect();
    assert!(seed.starts_with("0x") && seed.len() == 18, "{seed}");
    let out = read(&["--seed", &seed]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("2 bad block(s) of 256 checked") && !text.contains("intact block(s)"),
        "{text}"
    );
    assert!(text.contains(&format!("{f} offset 65536: checksum mismatch")), "{text}");
    assert!(
        text.contains(&format!("{f} offset 655360: checksum mismatch")),
        "{text}"
    );
    // The same seed without its prefix, and in decimal.
    let bare = seed.trim_start_matches("0x").to_string();
    let decimal = u64::from_str_radix(&bare, 16).unwrap().to_string();
    for form in [bare.as_str(), decimal.as_str()] {
        let out = read(&["--seed", form]);
        assert!(
            stdout(&out).contains("2 bad block(s) of 256 checked"),
            "{form}: {}",
            stdout(&out)
        );
    }
    // Against the run that wrote it: its seed from the database, --verify implied.
    let out = s.storlab(&[
        "run",
        "--target",
        f,
        "--phase",
        "read",
        "--size",
        "1m",
        "--bs",
        "64k",
        "--verify-against",
        &writer,
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("2 bad block(s) of 256 checked") && !text.contains("intact block(s)"),
        "{text}"
    );
    let out = read(&["--verify-against", &writer, "--seed", "7"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("give one or the other"), "{}", stderr(&out));
    let out = read(&["--verify-against", "999"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no run 999"), "{}", stderr(&out));
    let out = read(&["--seed", "0xnothex"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("hexadecimal as storlab prints it"),
        "{}",
        stderr(&out)
    );
}

/// `storlab run JOB.toml --parse-only` prints the job as storlab reads it, the flags laid over,
/// and runs nothing (it ran the job, ignoring the flag).
#[test]
fn parse_only_prints_a_job_file_and_runs_nothing() {
    let s = Scratch::new();
    let data = s.data();
    let job = s.path().join("job.toml");
    std::fs::write(
        &job,
        format!(
            "name = \"pq\"\ntarget = \"{}\"\nsize = \"64m\"\nbs = \"4k\"\nphase = [\"write\", \"randread\"]\n",
            data.display()
        ),
    )
    .unwrap();
    let out = s.storlab(&[
        "run",
        job.to_str().unwrap(),
        "--parse-only",
        "--iodepth",
        "8",
        "--engine",
        "io_uring",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "name = \"pq\"",
        "size = \"64MiB\"",
        "iodepth = 8",
        "engine = \"io_uring\"",
        "kind = \"randread\"",
    ] {
        assert!(text.lines().any(|l| l == line), "no '{line}' in:\n{text}");
    }
    assert!(entries(&data).is_empty(), "--parse-only wrote {:?}", entries(&data));
    assert!(s.nothing_stored(), "--parse-only stored a run");
    // What it printed is a job file that reads back to the same job.
    let printed = s.path().join("printed.toml");
    std::fs::write(&printed, text).unwrap();
    let a = s.json(&[
        "run",
        job.to_str().unwrap(),
        "--parse-only",
        "--iodepth",
        "8",
        "--engine",
        "io_uring",
    ]);
    let b = s.json(&["run", printed.to_str().unwrap(), "--parse-only"]);
    assert_eq!(a["job"]["settings"], b["job"]["settings"]);
    assert_eq!(a["job"]["phases"], b["job"]["phases"]);
    assert_eq!(a["job"]["targets"], b["job"]["targets"]);
}

#[test]
fn parse_only_of_a_fio_job_prints_the_flags_laid_over() {
    // The flags change the job that runs; the job file --parse-only prints must be that job,
    // not the fio file's alone (it printed 512MiB for a run of 2MiB).
    let s = Scratch::new();
    let data = s.data();
    let fio = s.path().join("j.fio");
    std::fs::write(
        &fio,
        format!(
            "[global]\nbs=128k\nsize=512m\ndirectory={}\n[reader]\nrw=randread\n",
            data.display()
        ),
    )
    .unwrap();
    let f = fio.to_str().unwrap();
    let out = s.storlab(&["run", "--fio", f, "--size", "2m", "--parse-only"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.lines().any(|l| l == "size = \"2MiB\""), "no 2MiB in:\n{text}");
    assert!(!text.contains("512MiB"), "the file's size, not the run's, in:\n{text}");
    assert!(entries(&data).is_empty(), "--parse-only wrote {:?}", entries(&data));
    // It reads back to the job that would run.
    let printed = s.path().join("printed.toml");
    std::fs::write(&printed, &text).unwrap();
    let a = s.json(&["run", "--fio", f, "--size", "2m", "--parse-only"]);
    let b = s.json(&["run", printed.to_str().unwrap(), "--parse-only"]);
    assert_eq!(a["job"]["phases"], b["job"]["phases"]);
    assert_eq!(a["toml"].as_str(), Some(text.as_str()));
}

/// `storlab fio --help` lists the fio options storlab takes, from their one table, under what
/// storlab does with each (as `storlab --help` says it does).
#[test]
fn fio_help_lists_fios_options_by_what_storlab_does_with_them() {
    let out = Command::new(bin()).args(["fio", "--help"]).output().unwrap();
    assert!(out.status.success());
    let text = stdout(&out);
    let section = |title: &str| -> Vec<String> {
        let start = text.find(title).unwrap_or_else(|| panic!("no '{title}' in {text}"));
        let body = &text[start..];
        let body = &body[body.find('\n').unwrap() + 1..];
        let end = body.find("\n\n").unwrap_or(body.len());
        body[..end].split_whitespace().map(String::from).collect()
    };
    let honoured = section("fio's options storlab honours");
    let noted = section("accepted with a note");
    let refused = section("refused, each naming why");
    for o in [
        "rw",
        "bs",
        "iodepth",
        "ioengine",
        "random_distribution",
        "fdatasync",
        "write_bw_log",
    ] {
        assert!(honoured.iter().any(|n| n == o), "{o} honoured: {honoured:?}");
    }
    assert!(noted.iter().any(|n| n == "description"), "{noted:?}");
    assert!(refused.iter().any(|n| n == "read_iolog"), "{refused:?}");
    // Each section's count is the number of names under it.
    for (title, names) in [("honours", &honoured), ("note", &noted), ("refused", &refused)] {
        let line = text.lines().find(|l| l.contains(title) && l.ends_with("):")).unwrap();
        let count: usize = line.rsplit('(').next().unwrap().trim_end_matches("):").parse().unwrap();
        assert_eq!(count, names.len(), "{line}");
    }
    let storlab_help = stdout(&Command::new(bin()).arg("--help").output().unwrap());
    assert!(
        storlab_help.contains("`--help` lists fio's flags storlab takes"),
        "{storlab_help}"
    );
}

/// A target is what the user meant: one that does not exist is refused naming the nearest
/// existing directory and its filesystem, unless storlab is asked to create it (fio's command
/// line creates it, as fio does); a target under a mount point /etc/fstab lists (here a
/// STORLAB_FSTAB of the test's own) that is not mounted is refused naming it, and taken once
/// something is mounted there.
#[test]
fn a_target_that_does_not_exist_or_is_not_mounted_is_refused() {
    let s = Scratch::new();
    let d = s.data();
    let missing = d.join("typo.dat");
    let m = missing.to_str().unwrap();
    refused(
        &s,
        &["run", "--target", m, "--phase", "write", "--size", "1m"],
        &[
            "typo.dat: does not exist",
            "the nearest existing directory is",
            "tmpfs",
            "--create-target",
        ],
    );
    let dir_meant = format!("{}/", d.join("newdir").display());
    refused(
        &s,
        &["run", "--target", &dir_meant, "--phase", "write", "--size", "1m"],
        &["does not exist", "create the directory first"],
    );
    let out = s.storlab(&[
        "run",
        "--target",
        m,
        "--phase",
        "write",
        "--size",
        "1m",
        "--create-target",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!missing.exists(), "the file storlab created is removed at the end");
    let fio_file = d.join("fio-made.dat");
    let out = s.storlab(&[
        "fio",
        "--name=x",
        "--rw=write",
        "--size=1m",
        &format!("--filename={}", fio_file.display()),
    ]);
    assert!(out.status.success(), "fio's rule creates the file: {}", stderr(&out));

    // A mount point the system is told to mount, not mounted: refused, naming it.
    let point = s.path().join("array");
    std::fs::create_dir_all(&point).unwrap();
    let fstab = s.path().join("fstab");
    std::fs::write(&fstab, format!("/dev/md0 {} xfs defaults 0 0\n", point.display())).unwrap();
    let target = point.join("run1");
    let args = [
        "run",
        "--target",
        target.to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "1m",
        "--create-target",
    ];
    let out = Command::new(bin())
        .args(args)
        .env("STORLAB_DB", s.db())
        .env("STORLAB_FSTAB", &fstab)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("is under {}", point.display())), "{err}");
    assert!(
        err.contains("/dev/md0, xfs") && err.contains("not mounted now"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(&point).unwrap().next().is_none(),
        "nothing written beneath it"
    );
    let _mounted = mount_fs(&point, "tmpfs", "size=16m");
    let out = Command::new(bin())
        .args(args)
        .env("STORLAB_DB", s.db())
        .env("STORLAB_FSTAB", &fstab)
        .output()
        .unwrap();
    assert!(out.status.success(), "mounted now: {}", stderr(&out));
}

/// `storlab run --help` is grouped for a person to scan: what to run, where, how it runs, how
/// fast, what to record, output — every flag under one of them, none left in a long list.
#[test]
fn run_help_groups_its_flags_under_headings() {
    let help = stdout(&Command::new(bin()).args(["run", "--help"]).output().unwrap());
    let headings: Vec<&str> = help
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    assert_eq!(
        headings,
        [
            "Arguments:",
            "Options:",
            "What to run:",
            "Where:",
            "How it runs:",
            "How fast:",
            "What to record:",
            "Output:"
        ],
        "{help}"
    );
    let section = |h: &str| -> Vec<String> {
        let body = &help[help.find(&format!("\n{h}\n")).unwrap() + h.len() + 2..];
        let end = body.find("\n\n").unwrap_or(body.len());
        body[..end]
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| w.starts_with('-'))
            .map(|w| w.trim_end_matches(',').to_string())
            .collect()
    };
    assert_eq!(
        section("Options:"),
        ["-h", "-V"],
        "only help and version outside a heading"
    );
    for (h, flag) in [
        ("What to run:", "--bs"),
        ("What to run:", "--fio"),
        ("Where:", "--target"),
        ("How it runs:", "--direct"),
        ("How fast:", "--rate"),
        ("What to record:", "--verify"),
        ("Output:", "--json"),
    ] {
        assert!(section(h).iter().any(|f| f == flag), "{flag} under {h}: {help}");
    }
}

/// A size that fio and a storlab job file read differently (fio's kb_base: `10MB` is 10 MiB) is
/// said in both forms where storlab speaks (run --fio, --parse-only, the stored run), and
/// `storlab fio` stays as quiet as fio unless asked.
#[test]
fn a_fio_size_read_differently_is_said_in_both_forms() {
    let s = Scratch::new();
    let d = s.data();
    let job = s.path().join("j.fio");
    std::fs::write(&job, "[x]\nrw=write\nsize=10MB\nbs=4k\n").unwrap();
    let out = s.storlab(&[
        "run",
        "--fio",
        job.to_str().unwrap(),
        "--target",
        d.to_str().unwrap(),
        "--parse-only",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains(
            "size=10MB: read as fio reads it, 10MiB (10485760 bytes); a storlab job file reads 10MB as 10000000 bytes"
        ),
        "{said}"
    );
    let dir = format!("--directory={}", d.display());
    let out = s.storlab(&["fio", job.to_str().unwrap(), &dir, "--output-format=json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "storlab fio is as quiet as fio");
    let out = s.storlab(&[
        "fio",
        job.to_str().unwrap(),
        &dir,
        "--output-format=json",
        "--storlab-notes",
    ]);
    assert!(
        stderr(&out).contains("size=10MB: read as fio reads it"),
        "{}",
        stderr(&out)
    );
}

/// fio's `--remote-config` names a job file on a server's side: without a `--client` before it
/// there is no server to name it to, and storlab says so (the client and server reading it are
/// tests/fio_net.rs's).
#[test]
fn fios_remote_config_needs_a_server_before_it() {
    let s = Scratch::new();
    let out = s.storlab(&["fio", "--remote-config=/x.fio"]);
    assert_eq!(out.status.code(), Some(1), "fio's exit code for a refusal");
    let err = stderr(&out);
    assert!(
        err.contains("--remote-config") && err.contains("--client=HOST before it"),
        "{err}"
    );
    assert!(s.nothing_stored());
}

/// A near miss of a known name is refused naming the nearest (issue 42, part 4): a phase, a
/// back-end, a metadata phase, a setting to vary, a job file's key, a fio option — exit 2,
/// nothing stored.
#[test]
fn near_misses_are_refused_with_a_did_you_mean() {
    let s = Scratch::new();
    let d = s.data();
    let target = d.to_str().unwrap();
    let job = s.path().join("job.toml");
    std::fs::write(
        &job,
        format!("target = [\"{target}\"]\nphase = [\"read\"]\nbz = \"4k\"\n"),
    )
    .unwrap();
    // A phase table's key and a phase's name are named at their own lines.
    let tables = s.path().join("tables.toml");
    std::fs::write(
        &tables,
        format!("target = [\"{target}\"]\n\n[[phase]]\nkind = \"read\"\n\n[[phase]]\nkind = \"write\"\nbz = \"4k\"\n"),
    )
    .unwrap();
    let names = s.path().join("names.toml");
    std::fs::write(
        &names,
        format!("target = [\"{target}\"]\nphase = [\n  \"read\",\n  \"wrte\",\n]\n"),
    )
    .unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", tables.to_str().unwrap()],
            "tables.toml:8: phase 2 (write), key bz: 'bz' is no key of a job (did you mean 'bs'?)",
        ),
        (
            &["run", names.to_str().unwrap()],
            "names.toml:4: phase 2: unknown phase 'wrte' (did you mean 'write'?)",
        ),
        (
            &["run", "--target", target, "--phase", "raed"],
            "(did you mean 'read'?)",
        ),
        (
            &["run", "--target", target, "--phase", "read", "--engine", "io_urin"],
            "(did you mean 'io_uring'?)",
        ),
        (
            &["meta", "--target", target, "--phase", "creat"],
            "(did you mean 'create'?)",
        ),
        (
            &["sweep", "--vary", "thread=1..2", "--target", target, "--phase", "read"],
            "(did you mean 'threads'?)",
        ),
        (
            &["run", job.to_str().unwrap()],
            "job.toml:3: key bz: 'bz' is no key of a job (did you mean 'bs'?); the keys are",
        ),
    ];
    for (args, wanted) in cases {
        let out = s.storlab(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(wanted), "{args:?}: no {wanted} in: {err}");
        assert!(s.nothing_stored(), "{args:?} stored something");
    }
    // A name nothing is near is refused with the list alone.
    let out = s.storlab(&["run", "--target", target, "--phase", "zzzzzz"]);
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));

    // The files read whole by serde (a plan, a challenge's job file) say it too, at the line.
    let plan = s.path().join("plan.toml");
    std::fs::write(&plan, "name = \"p\"\ncritrion = []\n").unwrap();
    let challenge = s.path().join("challenge.toml");
    std::fs::write(
        &challenge,
        format!("[challenge]\npool = [\"P1={target}\"]\nwriter = 2\n"),
    )
    .unwrap();
    for (args, wanted) in [
        (
            vec!["qualify", plan.to_str().unwrap()],
            "plan.toml:2: unknown field `critrion` (did you mean `criterion`?)",
        ),
        (
            vec!["challenge", "run", "--job", challenge.to_str().unwrap()],
            "challenge.toml:3: unknown field `writer` (did you mean `writers`?)",
        ),
    ] {
        let out = s.storlab(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(wanted),
            "{args:?}: no {wanted} in: {}",
            stderr(&out)
        );
        assert!(s.nothing_stored(), "{args:?} stored something");
    }
    // fio's own command line keeps fio's exit (1) and says it as well.
    let out = s.storlab(&[
        "fio",
        "--name=x",
        "--rw=wrte",
        "--size=1m",
        &format!("--directory={target}"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("(did you mean 'write'?)"), "{}", stderr(&out));
}
