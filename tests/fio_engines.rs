//! `ioengine=libaio` is Linux AIO under storlab fio as under fio: the same system calls (strace
//! counts io_setup, io_submit and io_getevents, and no io_uring); buffered, io_submit does the
//! read before it returns (every completion is there when storlab looks); with O_DIRECT on ext4
//! over a loop device the read happens after the submission (the completion latency is many
//! times the submission's, in both tools); fio's userspace_reap reads completions without a
//! system call; and the flush options make the calls fio makes. (A comparison of the two tools'
//! submission shares of the latency held on a quiet machine and not under a suite with a build
//! beside it, debug binaries under strace: it is left to bench/.)
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::*;

/// Runs `args` under fio or storlab fio (its JSON on stdout) traced by strace for the AIO and
/// io_uring calls; returns the document and how many times each call was made.
fn traced(program: &str, args: &[&str], work: &Path, db: &str) -> (Value, BTreeMap<String, usize>) {
    let trace = work.join("trace.txt");
    let mut c = Command::new("strace");
    c.args([
        "-f",
        "-qq",
        "-e",
        "trace=io_setup,io_submit,io_getevents,io_uring_setup,io_uring_enter",
        "-o",
    ])
    .arg(&trace)
    .arg(program);
    if program == bin() {
        c.args(["fio", "--db", db]);
    }
    let out = c
        .args(args)
        .arg("--output-format=json")
        .current_dir(work)
        .output()
        .expect("strace");
    assert!(out.status.success(), "{program}: {}", stderr(&out));
    let mut calls = BTreeMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        for name in [
            "io_setup",
            "io_submit",
            "io_getevents",
            "io_uring_setup",
            "io_uring_enter",
        ] {
            // "PID io_submit(" or a resumed call; count each call once, where it begins.
            if line.contains(&format!(" {name}(")) || line.starts_with(&format!("{name}(")) {
                *calls.entry(name.to_string()).or_insert(0) += 1;
            }
        }
    }
    std::fs::remove_file(&trace).unwrap();
    let json_at = out.stdout.iter().position(|b| *b == b'{').expect("a JSON document");
    (serde_json::from_slice(&out.stdout[json_at..]).unwrap(), calls)
}

/// The mean of a latency of the job's reads, ns.
fn mean(doc: &Value, which: &str) -> f64 {
    doc["jobs"][0]["read"][which]["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {which}: {}", doc["jobs"][0]["read"]))
}

#[test]
fn libaio_is_linux_aio_buffered_and_direct_as_under_fio() {
    let s = Scratch::new();
    let work = s.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // Buffered, on tmpfs: every read is answered inside io_submit.
    let shm = s.data();
    let file = format!("--filename={}", shm.join("aio.dat").display());
    let buffered = [
        "--name=aio",
        file.as_str(),
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--ioengine=libaio",
        "--iodepth=8",
        "--runtime=1",
        "--time_based",
    ];
    for program in ["fio", bin()] {
        let (doc, calls) = traced(program, &buffered, &work, &s.db());
        assert_eq!(
            calls.get("io_setup"),
            Some(&1),
            "{program}: one AIO context for one job: {calls:?}"
        );
        let submits = calls.get("io_submit").copied().unwrap_or(0);
        let reads = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap() as usize;
        // fio submits each I/O as it is queued (iodepth_batch 1), and so does storlab fio.
        assert!(
            submits >= reads,
            "{program}: {submits} io_submit for {reads} reads: {calls:?}"
        );
        assert!(
            calls.get("io_getevents").copied().unwrap_or(0) > 100,
            "{program}: {calls:?}"
        );
        assert!(
            !calls.contains_key("io_uring_enter"),
            "{program}: libaio is not io_uring: {calls:?}"
        );
        let (slat, lat) = (mean(&doc, "slat_ns"), mean(&doc, "lat_ns"));
        assert!(
            slat > 0.0 && lat > slat,
            "{program}, buffered: slat {slat} ns, lat {lat} ns"
        );
        // Each read is done inside its io_submit, but each io_getevents takes one completion
        // (fio's iodepth_batch_complete_max = 1, which storlab fio keeps): 1 to 4 a call.
        let complete = &doc["jobs"][0]["iodepth_complete"];
        assert!(
            complete["4"].as_f64().unwrap() > 90.0,
            "{program}, buffered: {complete}"
        );
    }
    // O_DIRECT on ext4 over a loop device that reads its image with O_DIRECT: the read is the
    // device's, after io_submit returns.
    let fs = loop_filesystem("mkfs.ext4", 128 << 20, &s.path().join("ext4"));
    let file = format!("--filename={}", fs.mount.point.join("aio.dat").display());
    let direct = [
        "--name=aio",
        file.as_str(),
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--ioengine=libaio",
        "--iodepth=8",
        "--direct=1",
        "--runtime=1",
        "--time_based",
    ];
    for program in ["fio", bin()] {
        let (doc, calls) = traced(program, &direct, &work, &s.db());
        assert!(
            calls.get("io_submit").copied().unwrap_or(0) > 10,
            "{program}: {calls:?}"
        );
        let (slat, clat) = (mean(&doc, "slat_ns"), mean(&doc, "clat_ns"));
        assert!(
            clat > 4.0 * slat,
            "{program}, O_DIRECT: the read completes after io_submit (slat {slat} ns, clat {clat} ns)"
        );
        // Both keep the queue at 8: one completion taken per io_getevents (fio's default,
        // iodepth_batch_complete_max = 1) and the queue refilled after each.
        let depths = &doc["jobs"][0]["iodepth_level"];
        let total: f64 = depths.as_object().unwrap().values().map(|v| v.as_f64().unwrap()).sum();
        assert!((total - 100.0).abs() < 0.5, "{program}: {depths}");
        assert!(
            depths["8"].as_f64().unwrap() > 90.0,
            "{program}: the queue stays at 8: {depths}"
        );
    }
    std::fs::remove_file(fs.mount.point.join("aio.dat")).unwrap();
}

#[test]
fn userspace_reap_reads_the_ring_without_a_system_call() {
    let s = Scratch::new();
    let work = s.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let file = format!("--filename={}", s.data().join("aio.dat").display());
    // A rate leaves the worker looking for completions without waiting between its I/Os. The
    // rate is low enough that an I/O submitted under strace (every traced call a stop, on a
    // loaded machine) completes well before the next is due: were the worker behind schedule,
    // it would fill the queue and wait for completions (io_getevents under fio's rule too,
    // userspace_reap or not). CI once saw that at 4,000 IOPS.
    let job = |reap: &'static str| -> Vec<String> {
        [
            "--name=aio",
            file.as_str(),
            "--rw=randread",
            "--bs=4k",
            "--size=16m",
            "--ioengine=libaio",
            "--iodepth=8",
            "--rate_iops=1000",
            "--runtime=2",
            "--time_based",
            reap,
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let run = |reap: &'static str| {
        let args = job(reap);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        traced(bin(), &args, &work, &s.db())
    };
    let (plain_doc, plain) = run("--userspace_reap=0");
    let (ring_doc, ring) = run("--userspace_reap=1");
    let getevents = |c: &BTreeMap<String, usize>| c.get("io_getevents").copied().unwrap_or(0);
    assert!(
        getevents(&ring) * 2 < getevents(&plain),
        "io_getevents: {} with userspace_reap, {} without",
        getevents(&ring),
        getevents(&plain)
    );
    // The same work either way: the rate's I/Os, every one reaped.
    for doc in [&plain_doc, &ring_doc] {
        let ios = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
        assert!((1500..=2200).contains(&ios), "{ios} reads at 1000 IOPS for 2 s");
    }
}

/// fsync=N, fdatasync=N, sync_file_range=FLAGS:N, end_fsync and fsync_on_close are the calls
/// they name, as many as fio makes (strace counts both tools' calls on the job's file, on
/// tmpfs: 16 writes of 4 KiB, a flush before the write after every 4th, none after the last;
/// one at the end).
#[test]
fn each_flush_option_makes_the_call_fio_makes() {
    let s = Scratch::new();
    let work = s.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let data = s.data();
    let file = data.join("f.dat");
    let filename = format!("--filename={}", file.display());
    let name = file.to_str().unwrap().to_string();
    let count = |program: &str, extra: &str| -> BTreeMap<String, usize> {
        let trace = work.join("flush.txt");
        let mut c = Command::new("strace");
        c.args([
            "-f",
            "-qq",
            "-y",
            "-e",
            "trace=fsync,fdatasync,sync_file_range,syncfs",
            "-o",
        ])
        .arg(&trace)
        .arg(program);
        if program == bin() {
            c.args(["fio", "--db", &s.db()]);
        }
        let out = c
            .args([
                "--name=f",
                &filename,
                "--rw=write",
                "--bs=4k",
                "--size=64k",
                extra,
                "--output-format=json",
            ])
            .current_dir(&work)
            .output()
            .unwrap();
        assert!(out.status.success(), "{program} {extra}: {}", stderr(&out));
        let mut calls = BTreeMap::new();
        for line in std::fs::read_to_string(&trace).unwrap().lines() {
            if !line.contains(&name) {
                continue;
            }
            for call in ["fsync", "fdatasync", "sync_file_range", "syncfs"] {
                if line.contains(&format!(" {call}(")) || line.starts_with(&format!("{call}(")) {
                    *calls.entry(call.to_string()).or_insert(0) += 1;
                }
            }
        }
        let _ = std::fs::remove_file(&file);
        calls
    };
    for (extra, call, n) in [
        ("--fsync=4", "fsync", 3),
        ("--fdatasync=4", "fdatasync", 3),
        ("--sync_file_range=write,wait_after:4", "sync_file_range", 3),
        ("--end_fsync=1", "fsync", 1),
        ("--fsync_on_close=1", "fsync", 1),
    ] {
        let theirs = count("fio", extra);
        let ours = count(bin(), extra);
        assert_eq!(theirs.get(call), Some(&n), "fio {extra}: {theirs:?}");
        assert_eq!(ours, theirs, "{extra}: storlab's calls on the file against fio's");
    }
}
