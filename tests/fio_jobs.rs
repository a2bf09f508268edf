//! `storlab run --fio JOB.fio`: job files from fio's own examples directory
//! (tests/fixtures/fio-examples, origin in ORIGIN.md) and a site's nightly job with an include
//! and an environment variable. Each is either read with the parameters fio itself reports for
//! it (`fio --showcmd`, Debian's fio) and run, or refused naming the option and its line.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

mod common;
use common::*;

fn example(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fio-examples")
        .join(name)
}

/// storlab with an environment of the test's choosing (NIGHTLY_DIR set or not).
fn storlab_env(s: &Scratch, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args)
        .env("STORLAB_DB", s.db())
        .env("TMPDIR", s.path())
        .env_remove("NIGHTLY_DIR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run storlab")
}

/// Each job of a file as fio reads it: `fio --showcmd` prints the file's options as one
/// command line; the options before a job's `--name` are [global]'s and apply to it.
fn fio_jobs(file: &std::path::Path, env: &[(&str, &str)]) -> Vec<(String, BTreeMap<String, String>)> {
    let mut c = Command::new("fio");
    c.arg("--showcmd").arg(file);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("fio --showcmd");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sections: Vec<String> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().strip_prefix('[')?.strip_suffix(']').map(str::to_string))
        .filter(|s| s != "global")
        .collect();
    let mut global = BTreeMap::new();
    let mut jobs: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for tok in String::from_utf8(out.stdout).unwrap().split_whitespace().skip(1) {
        let t = tok.trim_start_matches("--");
        let (k, v) = t.split_once('=').unwrap_or((t, "1"));
        if k == "name" && sections.iter().any(|s| s == v) {
            jobs.push((v.to_string(), global.clone()));
            continue;
        }
        match jobs.last_mut() {
            Some((_, o)) => o.insert(k.to_string(), v.to_string()),
            None => global.insert(k.to_string(), v.to_string()),
        };
    }
    jobs
}

fn bytes(v: &str) -> u64 {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: u64 = v[..split].parse().unwrap();
    n * match v[split..].to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        other => panic!("unit {other}"),
    }
}

/// Seconds of a duration as storlab prints it ("900s", "15m", "1h").
fn seconds(v: &str) -> u64 {
    let (n, unit) = v.split_at(v.len() - 1);
    n.parse::<u64>().unwrap()
        * match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            other => panic!("unit {other} in {v}"),
        }
}

/// storlab's reading of a file (`--parse-only --json`).
fn storlab_reading(s: &Scratch, file: &std::path::Path, env: &[(&str, &str)]) -> Value {
    let out = storlab_env(
        s,
        &["run", "--fio", file.to_str().unwrap(), "--parse-only", "--json"],
        env,
    );
    assert!(out.status.success(), "{}: {}", file.display(), stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What storlab must have made of a job fio describes by `o`.
fn check_phase(file: &str, job: &str, o: &BTreeMap<String, String>, phase: &Value) {
    let (kind, set) = (&phase[0], &phase[1]);
    let want_kind = match o.get("rw").map(String::as_str).unwrap_or("read") {
        "read:-8k" => "backread",
        other => other,
    };
    assert_eq!(kind, want_kind, "{file} [{job}]: rw");
    let numjobs: u64 = o.get("numjobs").map_or(1, |n| n.parse().unwrap());
    assert_eq!(set["threads"], numjobs, "{file} [{job}]: numjobs");
    if let Some(bs) = o.get("bs") {
        assert_eq!(set["bs"]["fixed"], bytes(bs), "{file} [{job}]: bs");
    }
    if let Some(size) = o.get("size") {
        assert_eq!(set["size"], bytes(size), "{file} [{job}]: size");
    }
    let engine = o.get("ioengine").map(String::as_str).unwrap_or("psync");
    let direct = o.get("direct").map(String::as_str) == Some("1") || o.get("buffered").map(String::as_str) == Some("0");
    // libaio is storlab's libaio, buffered or not (Linux AIO does buffered I/O in io_submit,
    // under fio as under storlab).
    let want_engine = engine;
    assert_eq!(set["engine"], want_engine, "{file} [{job}]: ioengine");
    match (o.get("iodepth"), want_engine) {
        (Some(d), "io_uring" | "libaio") => assert_eq!(set["iodepth"].to_string(), *d, "{file} [{job}]: iodepth"),
        _ => assert!(
            set["iodepth"].is_null(),
            "{file} [{job}]: a synchronous engine's depth is 1"
        ),
    }
    assert_eq!(
        set["direct"].as_bool().unwrap_or(false),
        direct,
        "{file} [{job}]: direct"
    );
    match o.get("runtime") {
        Some(r) if o.contains_key("time_based") => {
            assert_eq!(
                seconds(set["runtime"].as_str().unwrap()),
                r.parse::<u64>().unwrap(),
                "{file} [{job}]: runtime"
            )
        }
        // fio's runtime alone cuts the pass short: storlab's timeout.
        Some(r) => {
            assert!(set["runtime"].is_null(), "{file} [{job}]: one pass");
            assert_eq!(
                seconds(set["timeout"].as_str().unwrap()),
                r.parse::<u64>().unwrap(),
                "{file} [{job}]: timeout"
            );
        }
        None => assert!(set["runtime"].is_null(), "{file} [{job}]: one pass"),
    }
    // fio's random offsets visit each block once per pass unless norandommap.
    if o.get("rw").is_some_and(|rw| rw.starts_with("rand")) {
        assert_eq!(
            set["random_map"],
            !o.contains_key("norandommap"),
            "{file} [{job}]: norandommap"
        );
    }
    let verify = o.get("verify").is_some_and(|v| v != "0");
    assert_eq!(
        set["verify"].as_bool().unwrap_or(false),
        verify,
        "{file} [{job}]: verify"
    );
}

/// `storlab run --fio F --parse-only` prints a storlab job file; `storlab run THAT --parse-only`
/// reads it back to the same job, for every example storlab accepts, and neither runs anything.
#[test]
fn every_accepted_fio_example_prints_a_job_file_that_reads_back_the_same() {
    let s = Scratch::new();
    let dir = example("fio-rand-read.fio").parent().unwrap().to_path_buf();
    let mut accepted = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_none_or(|e| e != "fio") {
            continue;
        }
        let f = file.to_str().unwrap();
        let toml = s.storlab(&["run", "--fio", f, "--parse-only"]);
        if !toml.status.success() {
            continue;
        }
        accepted += 1;
        let job_file = s.path().join("job.toml");
        std::fs::write(&job_file, &toml.stdout).unwrap();
        let read = s.json(&["run", "--fio", f, "--parse-only"]);
        let back = s.json(&["run", job_file.to_str().unwrap(), "--parse-only"]);
        for key in ["name", "targets", "settings", "phases", "streams"] {
            assert_eq!(back["job"][key], read["job"][key], "{f}: {key}\n{}", stdout(&toml));
        }
        // What it prints is what it read.
        assert_eq!(
            back["toml"].as_str().unwrap(),
            read["toml"]
                .as_str()
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
            "{f}"
        );
    }
    assert!(accepted >= 30, "{accepted} examples accepted");
    assert!(s.nothing_stored(), "--parse-only runs nothing");
}

#[test]
fn fios_examples_are_read_as_fio_reads_them_or_refused_by_name() {
    let s = Scratch::new();
    // Read with fio's parameters.
    for name in [
        "fio-seq-read.fio",
        "fio-seq-write.fio",
        "fio-rand-read.fio",
        "fio-rand-write.fio",
        "fio-rand-RW.fio",
        "backwards-read.fio",
        "basic-verify.fio",
        "null.fio",
        "ssd-test.fio",
        "fio-seq-RW.fio",
    ] {
        let file = example(name);
        let fio = fio_jobs(&file, &[]);
        let v = storlab_reading(&s, &file, &[]);
        let phases = v["job"]["phases"].as_array().unwrap();
        let mut at = 0;
        for (job, o) in &fio {
            check_phase(name, job, o, &phases[at]);
            at += 1;
            // A verified write is read back, verifying, as fio does after writing.
            if o.get("verify").is_some_and(|v| v != "0") && o["rw"].contains("write") {
                assert_eq!(phases[at][0], "read", "{name}: the verifying read");
                assert_eq!(phases[at][1]["verify"], true);
                at += 1;
            }
        }
        assert_eq!(at, phases.len(), "{name}: one phase per job");
        // Where fio would write: its filename (in its directory).
        let o = &fio[0].1;
        let want = match (o.get("directory"), o.get("filename")) {
            (Some(d), Some(f)) => format!("{d}/{f}"),
            (None, Some(f)) => f.clone(),
            (Some(d), None) => d.clone(),
            (None, None) => ".".into(),
        };
        assert_eq!(v["job"]["targets"][0], want, "{name}: the target");
        // The TOML is a storlab job file that reads back.
        assert!(v["toml"].as_str().unwrap().contains("[[phase]]"));
    }
    assert!(s.nothing_stored(), "--parse-only runs nothing");

    // Refused, naming the option and its line.
    for (name, needle) in [
        (
            "zbd-rand-write.fio",
            "zbd-rand-write.fio:11: fio option 'max_open_zones'",
        ),
        (
            "cmdprio-bssplit.fio",
            "cmdprio-bssplit.fio:19: fio option 'cmdprio_bssplit'",
        ),
    ] {
        let out = s.storlab(&[
            "run",
            "--fio",
            example(name).to_str().unwrap(),
            "--target",
            s.data().to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{name}: {}", stderr(&out));
    }
    assert!(s.nothing_stored());
    assert!(entries(&s.data()).is_empty(), "nothing written");
}

#[test]
fn fios_examples_run_on_storlabs_engine() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.to_str().unwrap();
    for (name, kinds, threads) in [
        ("fio-rand-RW.fio", vec!["randrw"], 4),
        ("fio-seq-read.fio", vec!["read"], 1),
        ("backwards-read.fio", vec!["backread"], 1),
        ("basic-verify.fio", vec!["randwrite", "read"], 1),
    ] {
        // Smaller and shorter than the examples (the flags override the file), in the scratch.
        let out = s.storlab(&[
            "run",
            "--fio",
            example(name).to_str().unwrap(),
            "--target",
            dir,
            "--size",
            "4m",
            "--runtime",
            "1s",
            "--json",
            "-q",
        ]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(run["status"], "ok", "{name}");
        let got: Vec<&str> = run["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap())
            .collect();
        assert_eq!(got, kinds, "{name}");
        for p in run["phases"].as_array().unwrap() {
            assert_eq!(
                p["params"]["plan"]["workers"].as_array().unwrap().len(),
                threads,
                "{name}"
            );
        }
        assert_eq!(
            run["job"]["job"]["origin"],
            format!("fio job file {}", example(name).display())
        );
        if name == "fio-rand-RW.fio" {
            // ioengine=libaio without direct=1: Linux AIO, as fio runs it, with nothing to note.
            assert_eq!(run["phases"][0]["params"]["plan"]["settings"]["engine"], "libaio");
            assert!(
                !run["job"]["job"]["notes"].to_string().contains("libaio"),
                "{}",
                run["job"]["job"]["notes"]
            );
        }
        if name == "basic-verify.fio" {
            assert_eq!(
                run["phases"][1]["result"]["verify"]["bad_blocks"], 0,
                "{}",
                run["phases"][1]["result"]["verify"]
            );
        }
    }
    assert!(entries(&d).is_empty(), "the files are removed");

    // null.fio: gtod_reduce changes nothing storlab measures (a note), norandommap is
    // honoured: offsets drawn anew.
    let out = s.storlab(&[
        "run",
        "--fio",
        example("null.fio").to_str().unwrap(),
        "--target",
        dir,
        "--size",
        "64m",
        "--json",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("gtod_reduce: storlab reads the clock once per I/O"),
        "{err}"
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["phases"][0]["kind"], "randread");
    assert_eq!(run["phases"][0]["params"]["plan"]["settings"]["engine"], "null");
    assert_eq!(run["phases"][0]["params"]["plan"]["settings"]["random_map"], false);
    assert!(run["job"]["job"]["notes"].to_string().contains("gtod_reduce"));

    // --ignore-unknown: an option that would measure something else, listed and kept.
    let think = s.path().join("think.fio");
    std::fs::write(&think, "[t]\nrw=randread\nioengine=null\nsize=16m\nnice=5\n").unwrap();
    let out = s.storlab(&[
        "run",
        "--fio",
        think.to_str().unwrap(),
        "--ignore-unknown",
        "--target",
        dir,
        "--json",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ignored (--ignore-unknown): nice"),
        "{}",
        stderr(&out)
    );
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(run["job"]["job"]["notes"].to_string().contains("nice"));
}

#[test]
fn a_sites_job_with_include_and_environment_runs_as_fio_reads_it() {
    let s = Scratch::new();
    let d = s.data();
    let env = [("NIGHTLY_DIR", d.to_str().unwrap())];
    let file = example("site-nightly.fio");
    let fio = fio_jobs(&file, &env);
    assert_eq!(fio.len(), 2);
    assert_eq!(
        fio[0].1["directory"],
        d.to_str().unwrap(),
        "fio expands ${{NIGHTLY_DIR}} from the include"
    );
    let v = storlab_reading(&s, &file, &env);
    let phases = v["job"]["phases"].as_array().unwrap();
    let kinds: Vec<&str> = phases.iter().map(|p| p[0].as_str().unwrap()).collect();
    assert_eq!(kinds, ["write", "read", "randrw"]);
    assert_eq!(v["job"]["targets"][0], d.to_str().unwrap());
    let mixed = &phases[2][1];
    // bssplit=4k/60:64k/30:1m/ : the blank share is what is left, 10 %.
    assert_eq!(
        mixed["bs"]["mix"],
        serde_json::json!([[4096, 60], [65536, 30], [1048576, 10]]),
        "{mixed}"
    );
    assert_eq!(mixed["rwmix"], 100 - fio[1].1["rwmixwrite"].parse::<u64>().unwrap());
    assert_eq!(mixed["threads"], 2);
    assert_eq!(mixed["fsync"]["every"], 32);
    assert_eq!(mixed["rate_per"], "worker");
    assert_eq!(phases[0][1]["fsync"], "end");

    // Run it as it is: 2 × 16 MiB written and verified, then 2 s of the paced mix.
    let out = storlab_env(&s, &["run", "--fio", file.to_str().unwrap(), "--json", "-q"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["status"], "ok");
    assert_eq!(run["phases"][0]["result"]["bytes_written"], 32 << 20);
    assert_eq!(run["phases"][1]["result"]["verify"]["bad_blocks"], 0);
    let iops = run["phases"][2]["result"]["all_done"]["iops"].as_f64().unwrap();
    // rate_iops=500 per job, two jobs: 1000 IOPS kept.
    assert!((iops - 1000.0).abs() < 100.0, "{iops} IOPS for a target of 2 × 500");
    assert!(entries(&d).is_empty());

    // Different numjobs in jobs after one another: each fio job has files of its own, as fio
    // names a job's files after it.
    let odd = s.path().join("odd.fio");
    std::fs::write(
        &odd,
        format!(
            "[global]\ndirectory={}\nsize=1m\n[w]\nrw=write\n[r]\nstonewall\nrw=read\nnumjobs=3\n",
            d.display()
        ),
    )
    .unwrap();
    let out = s.storlab(&["run", "--fio", odd.to_str().unwrap(), "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = |p: usize| -> Vec<String> {
        run["phases"][p]["params"]["plan"]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!((files(0).len(), files(1).len()), (1, 3));
    assert!(
        files(1).iter().all(|f| !files(0).contains(f)),
        "{:?} {:?}",
        files(0),
        files(1)
    );
    assert!(entries(&d).is_empty());

    // Without the variable: refused, naming it and the included file's line.
    let out = storlab_env(&s, &["run", "--fio", file.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("common.inc:2: directory= is empty: ${NIGHTLY_DIR} is not set"),
        "{}",
        stderr(&out)
    );
}

/// fio's passes, its runtime that cuts a pass short, and its allocation of new files, on the
/// real binary in the scratch (tmpfs).
#[test]
fn loops_a_runtime_without_time_based_and_fallocate_act_as_in_fio() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.to_str().unwrap();
    let job = |name: &str, text: &str| {
        let p = s.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let run = |file: &std::path::Path, extra: &[&str]| -> Value {
        let mut args = vec!["run", "--fio", file.to_str().unwrap(), "--target", dir, "--json", "-q"];
        args.extend_from_slice(extra);
        let out = s.storlab(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // loops=3: three passes over 1 MiB in 4 KiB reads.
    let r = run(&job("loops.fio", "[l]\nrw=read\nsize=1m\nbs=4k\nloops=3\n"), &[]);
    assert_eq!(r["phases"][0]["result"]["ops_read"], 3 * 256);
    // runtime=1 without time_based: a pass that would take 64 s at 1 MiB/s ends after 1 s,
    // and fallocate (fio's default, native) has given the file its whole length first.
    let slow = "[w]\nrw=write\nsize=64m\nbs=64k\nrate=1m\nruntime=1\n";
    let r = run(&job("cut.fio", slow), &["--keep"]);
    let secs = r["phases"][0]["result"]["all_done"]["seconds"].as_f64().unwrap();
    let written = r["phases"][0]["result"]["bytes_written"].as_u64().unwrap();
    assert!((0.9..3.0).contains(&secs), "{secs} s");
    assert!(written < 8 << 20, "{written} bytes: the pass was cut short");
    let kept: Vec<std::path::PathBuf> = entries(&d).iter().map(|e| d.join(e)).collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        std::fs::metadata(&kept[0]).unwrap().len(),
        64 << 20,
        "fallocate=native sized the file"
    );
    std::fs::remove_file(&kept[0]).unwrap();
    // fallocate=none: the file is as long as what was written.
    let r = run(&job("none.fio", &format!("{slow}fallocate=none\n")), &["--keep"]);
    let written = r["phases"][0]["result"]["bytes_written"].as_u64().unwrap();
    let kept: Vec<std::path::PathBuf> = entries(&d).iter().map(|e| d.join(e)).collect();
    assert_eq!(std::fs::metadata(&kept[0]).unwrap().len(), written);
    std::fs::remove_file(&kept[0]).unwrap();
}

/// `storlab fio` takes fio's command line and writes fio's JSON: its figures are what the run
/// stored (recomputed here from the stored phase and its raw interval samples), and
/// `results import` reads the document back to the same figures.
#[test]
fn fios_command_line_runs_and_its_json_recomputes_and_imports_back() {
    let s = Scratch::new();
    let d = s.data();
    let dir = format!("--directory={}", d.display());
    let json = s.path().join("fio.json");
    // In the scratch directory: fio (and storlab fio) write the IOPS log in the current one.
    let out = Command::new(bin())
        .args([
            "fio",
            "--name=rr",
            "--rw=randread",
            "--bs=4k",
            "--size=8m",
            "--ioengine=psync",
            &dir,
            "--runtime=2",
            "--time_based",
            "--log_avg_msec=200",
            "--write_iops_log=rr",
            "--percentile_list=50:99:99.9",
            "--output-format=json",
            &format!("--output={}", json.display()),
            "--eta=never",
        ])
        .env("STORLAB_DB", s.db())
        .current_dir(s.path())
        .output()
        .unwrap();
    assert!(
        s.path().join("rr_iops.1.log").exists(),
        "the log is written where storlab fio ran, named as fio names the first job's"
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // fio's version in fio's form, for the tools that check it; storlab's beside it.
    assert!(
        doc["fio version"].as_str().unwrap().starts_with("fio-3."),
        "{}",
        doc["fio version"]
    );
    assert!(doc["storlab version"].as_str().is_some_and(|v| !v.is_empty()));
    let job = &doc["jobs"][0];
    assert_eq!(job["jobname"], "rr");
    // The job's options as given, by fio's name (fio's "job options"): a bare switch
    // (time_based) left out, as fio does.
    let given = &job["job options"];
    assert_eq!(
        (&given["name"], &given["rw"], &given["bs"]),
        (&json!("rr"), &json!("randread"), &json!("4k"))
    );
    assert_eq!(given["directory"], d.display().to_string());
    assert_eq!(given["log_avg_msec"], "200");
    assert!(given.get("time_based").is_none(), "{given}");
    let read = &job["read"];
    // The stored run, read back as storlab keeps it.
    let run = s.json(&["results", "show", "1"]);
    let phase = &run["phases"][0];
    let r = &phase["result"];
    assert_eq!(read["io_bytes"], r["bytes_read"]);
    assert_eq!(read["total_ios"], r["ops_read"]);
    let secs = r["all_done"]["seconds"].as_f64().unwrap();
    let bytes = r["bytes_read"].as_u64().unwrap();
    // fio's arithmetic (stat.c): whole milliseconds, bytes/s then KiB/s, each truncated.
    let ms = (secs * 1e3).round() as u64;
    assert_eq!(read["bw_bytes"].as_u64().unwrap(), 1000 * bytes / ms, "bw in bytes/s");
    assert_eq!(read["bw"].as_u64().unwrap(), 1000 * bytes / ms / 1024, "bw in KiB/s");
    assert_eq!(read["runtime"].as_u64().unwrap(), (secs * 1e3).round() as u64);
    assert_eq!(job["write"]["io_bytes"], 0, "nothing written: a true zero");
    // Percentiles: the ones asked for, in fio's keys, from the phase's histogram, named as
    // fio names its buckets (the middle of the one that holds the stored percentile).
    let pct = read["lat_ns"]["percentile"].as_object().unwrap();
    let keys: Vec<&str> = pct.keys().map(String::as_str).collect();
    assert_eq!(keys, ["50.000000", "99.000000", "99.900000"]);
    let bucket = |v: &Value| fio_bucket(v.as_u64().unwrap());
    assert_eq!(pct["99.000000"], bucket(&r["latency"]["p99_ns"]));
    assert_eq!(pct["50.000000"], bucket(&r["latency"]["p50_ns"]));
    assert!(
        read["clat_ns"].is_object(),
        "a synchronous engine's latency is fio's clat too"
    );
    assert_eq!(
        read["slat_ns"]["N"], 0,
        "a synchronous engine times no submission apart: fio's slat of N = 0"
    );
    // IOPS over the samples (log_avg_msec=200): recomputed from the raw samples, whole
    // intervals outside the ramp, each a whole number of I/Os a second (as fio's samples), the
    // sample's standard deviation (n - 1) as fio's calc_lat.
    let samples = phase["result"]["samples"].as_array().unwrap();
    let nominal = samples
        .iter()
        .map(|x| x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!((nominal - 0.2).abs() < 1e-6, "{nominal} s intervals");
    let iops: Vec<f64> = samples
        .iter()
        .filter(|x| !x["ramp"].as_bool().unwrap())
        .map(|x| {
            (
                x["ops_read"].as_f64().unwrap(),
                x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap(),
            )
        })
        .filter(|(_, t)| *t >= nominal - 1e-6)
        .map(|(n, t)| (n / t).round())
        .collect();
    let n = iops.len() as f64;
    let mean = iops.iter().sum::<f64>() / n;
    let sd = (iops.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    assert_eq!(read["iops_samples"].as_u64().unwrap() as f64, n);
    assert!(
        (read["iops_mean"].as_f64().unwrap() - mean).abs() <= 1e-9 * mean,
        "{} vs {mean}",
        read["iops_mean"]
    );
    assert!((read["iops_stddev"].as_f64().unwrap() - sd).abs() <= 1e-9 * mean.max(1.0));
    // The latency distribution adds up to every I/O, give or take fio's floor: a bucket that
    // holds any I/O shows at least 0.01 % (stat_calc_lat).
    let shares: Vec<f64> = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| job[*k].as_object().unwrap().values())
        .map(|v| v.as_f64().unwrap())
        .collect();
    let total: f64 = shares.iter().sum();
    let floored = shares.iter().filter(|v| (**v - 0.01).abs() < 1e-12).count() as f64;
    assert!(
        total > 100.0 - 1e-6 && total <= 100.0 + 0.01 * floored + 1e-6,
        "{total} %"
    );

    // Read back by storlab's importer: the same figures.
    let out = s.storlab(&["results", "import", json.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let back = s.json(&["results", "show", "2"]);
    let b = &back["phases"][0]["result"];
    assert_eq!(b["bytes_read"], r["bytes_read"]);
    assert_eq!(b["ops_read"], r["ops_read"]);
    // Its percentiles are fio's buckets of the stored ones.
    assert_eq!(b["latency"]["p99_ns"], bucket(&r["latency"]["p99_ns"]));
    assert_eq!(b["latency"]["p50_ns"], bucket(&r["latency"]["p50_ns"]));
    // fio's bw_bytes is over whole milliseconds: within half a millisecond's share.
    let bw = |x: &Value| x["all_done"]["bytes_per_sec"].as_f64().unwrap();
    let half_ms = 0.0005 / r["all_done"]["seconds"].as_f64().unwrap();
    assert!((bw(b) - bw(r)).abs() <= bw(r) * half_ms + 1.0, "{} vs {}", bw(b), bw(r));

    // fio's terse line (version 3) of the same run: fio's 121 fields, its units, and read
    // back by the importer to the same bytes and (whole-µs) percentiles.
    let out = s.storlab(&["results", "export", "1", "--format", "fio-terse"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = stdout(&out);
    let f: Vec<&str> = line.trim_end().split(';').collect();
    assert_eq!(f.len(), 121, "{line}");
    assert_eq!((f[0], f[2]), ("3", "rr"));
    assert_eq!(
        f[5].parse::<u64>().unwrap(),
        r["bytes_read"].as_u64().unwrap() >> 10,
        "KiB read"
    );
    assert_eq!(
        &f[9..13],
        ["0", "0", "0.000000", "0.000000"],
        "a synchronous engine's submission latency: none timed apart, fio's zeros as in its own line"
    );
    assert!(
        f[17].starts_with("50.000000%=") || f[17].starts_with("1.000000%="),
        "{}",
        f[17]
    );
    let terse = s.path().join("fio.terse");
    std::fs::write(&terse, &line).unwrap();
    let out = s.storlab(&["results", "import", terse.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let t = s.json(&["results", "show", "3"]);
    let t = &t["phases"][0]["result"];
    assert_eq!(
        t["bytes_read"].as_u64().unwrap() >> 10,
        r["bytes_read"].as_u64().unwrap() >> 10
    );
    assert_eq!(
        t["latency"]["p99_ns"].as_u64().unwrap(),
        bucket(&r["latency"]["p99_ns"]) / 1000 * 1000,
        "p99 in whole µs"
    );

    // results export --format fio-json writes the same document for the stored run.
    let out = s.storlab(&["results", "export", "1", "--format", "fio-json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["jobs"][0]["read"]["io_bytes"], read["io_bytes"]);
    assert_eq!(again["jobs"][0]["read"]["iops_stddev"], read["iops_stddev"]);
    // The job's file stays, named as fio names it, as fio leaves it.
    assert_eq!(entries(&d), ["rr.0.0"], "what fio leaves");

    // A job file with options on the command line: the command line's globals apply to it,
    // --section picks a job, --showcmd prints it as fio does, --parse-only runs nothing.
    let out = s.storlab(&["fio", "--showcmd", example("fio-rand-read.fio").to_str().unwrap()]);
    assert!(stdout(&out).starts_with("fio --name=fio-rand-read"), "{}", stdout(&out));
    let out = s.storlab(&[
        "fio",
        "--ramp_time=2",
        "--section=file1",
        example("fio-seq-write.fio").to_str().unwrap(),
        "--parse-only",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ramp = \"2s\""), "{}", stdout(&out));
    // A misspelt option is refused at its argument.
    let out = s.storlab(&["fio", "--name=x", "--rw=read", "--iodepht=2"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "fio refuses an option it does not know with 1"
    );
    assert!(stderr(&out).contains("argument 3 (--iodepht=2)") && stderr(&out).contains("did you mean 'iodepth'"));
}

/// Seconds between two of the store's timestamps (RFC 3339).
fn between(a: &Value, b: &Value) -> f64 {
    let t = |v: &Value| humantime::parse_rfc3339_weak(v.as_str().unwrap().trim_end_matches('Z')).unwrap();
    t(b).duration_since(t(a)).unwrap().as_secs_f64()
}

/// fio's jobs without a stonewall between them run at the same time, each a phase of its own
/// on files of its own with its own settings (aio-read.fio: four readers at four depths);
/// `startdelay` and `exitall` act on the group.
#[test]
fn jobs_without_a_stonewall_run_at_the_same_time_on_files_of_their_own() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.to_str().unwrap();
    let out = s.storlab(&[
        "run",
        "--fio",
        example("aio-read.fio").to_str().unwrap(),
        "--target",
        dir,
        "--size",
        "4m",
        "--runtime",
        "1s",
        "--json",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = run["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 4);
    let depths: Vec<u64> = phases
        .iter()
        .map(|p| p["params"]["plan"]["settings"]["iodepth"].as_u64().unwrap())
        .collect();
    assert_eq!(depths, [4, 32, 8, 16], "each job's own iodepth");
    let together: Vec<bool> = phases
        .iter()
        .map(|p| p["params"]["plan"]["together"].as_bool().unwrap_or(false))
        .collect();
    assert_eq!(together, [false, true, true, true]);
    let mut files: Vec<&str> = phases
        .iter()
        .map(|p| p["params"]["plan"]["workers"][0]["path"].as_str().unwrap())
        .collect();
    files.dedup();
    assert_eq!(files.len(), 4, "a file each: {files:?}");
    // Four phases of a second each, at the same time: the run took about one second of I/O
    // (plus laying out the four files), not four. Each phase ran its whole second (its end on
    // a busy machine may come late; the run's own length, stored to the second, bounds it).
    let wall = between(&run["started_at"], &run["finished_at"]);
    assert!(wall < 3.5, "{wall} s for four 1 s phases run together");
    for p in phases {
        assert!(p["result"]["bytes_read"].as_u64().unwrap() > 0);
        let secs = p["result"]["all_done"]["seconds"].as_f64().unwrap();
        assert!(
            (0.95..=wall + 1.0).contains(&secs),
            "a 1 s phase took {secs} s of a {wall} s run"
        );
    }
    let table = stdout(&s.storlab(&["results", "show", &run["id"].to_string()]));
    assert!(table.contains("with phase 1"), "{table}");
    assert!(entries(&d).is_empty());

    // exitall: the first job's end ends the group; the second, due 3 s later, never starts.
    let ex = s.path().join("exitall.fio");
    std::fs::write(
        &ex,
        format!("[global]\ndirectory={dir}\nsize=1m\n[short]\nrw=read\nruntime=1\ntime_based\nexitall\n[late]\nrw=write\nstartdelay=3\nruntime=5\ntime_based\n"),
    )
    .unwrap();
    let out = s.storlab(&["run", "--fio", ex.to_str().unwrap(), "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(run["phases"][0]["result"]["bytes_read"].as_u64().unwrap() > 0);
    assert_eq!(
        run["phases"][1]["result"]["bytes_written"], 0,
        "ended by exitall before its start delay ran out"
    );
    assert_eq!(run["phases"][1]["params"]["plan"]["settings"]["start_delay"], "3s");
    let wall = between(&run["started_at"], &run["finished_at"]);
    assert!(wall < 3.0, "{wall} s: the group ended with the first job");
    assert!(entries(&d).is_empty());
}

/// Interval samples' operations, full intervals only.
fn ops_per_interval(phase: &Value) -> Vec<f64> {
    let samples = phase["result"]["samples"].as_array().unwrap();
    let nominal = samples
        .iter()
        .map(|x| x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap())
        .fold(0.0, f64::max);
    samples
        .iter()
        .filter(|x| x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap() > nominal * 0.99)
        .map(|x| x["ops_read"].as_f64().unwrap() + x["ops_written"].as_f64().unwrap())
        .collect()
}

/// fio's thinktime and number_ios, Poisson rates, rate_min and wait_for, on the real binary.
#[test]
fn think_time_a_count_of_ios_poisson_rates_rate_min_and_wait_for_act_as_in_fio() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.display().to_string();
    let run = |name: &str, text: &str| -> (Output, Option<Value>) {
        let p = s.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = s.storlab(&["run", "--fio", p.to_str().unwrap(), "--json", "-q"]);
        let v = serde_json::from_slice(&out.stdout).ok();
        (out, v)
    };
    // 100 reads, each followed by 10 ms of think time: 100 I/Os in at least a second.
    let (out, v) = run(
        "think.fio",
        &format!("[t]\ndirectory={dir}\nrw=randread\nsize=4m\nnumber_ios=100\nthinktime=10ms\n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let r = &v.unwrap()["phases"][0]["result"];
    assert_eq!(r["ops_read"], 100);
    assert!(r["all_done"]["seconds"].as_f64().unwrap() >= 0.99, "{}", r["all_done"]);
    // A Poisson process of 500 IOPS: about 200 I/Os per 400 ms sample, varying as Poisson's
    // do (variance ≈ mean); the linear process of the same rate hardly varies. A thread the
    // scheduler holds back d seconds moves about rate × d I/Os into the next sample, adding
    // (rate × d)² to the variance of both: at 2000 IOPS in 100 ms samples a 5 ms delay on a
    // busy 2-core CI machine added 100 (half the mean) and the linear process looked half
    // Poisson; at 500 IOPS in 400 ms samples the same delay adds 6.
    let spread = |process: &str| -> (f64, f64) {
        let (out, v) = run(
            &format!("{process}.fio"),
            &format!("[p]\ndirectory={dir}\nrw=randread\nsize=4m\nruntime=12\ntime_based\nrate_iops=500\nrate_process={process}\nwrite_iops_log=p\nlog_avg_msec=400\n"),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let ops = ops_per_interval(&v.unwrap()["phases"][0]);
        let n = ops.len() as f64;
        let mean = ops.iter().sum::<f64>() / n;
        let var = ops.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var)
    };
    let (pm, pv) = spread("poisson");
    let (lm, lv) = spread("linear");
    assert!(
        (pm - 200.0).abs() < 30.0 && (lm - 200.0).abs() < 30.0,
        "{pm} {lm} I/Os per 400 ms"
    );
    // Poisson's index of dispersion (variance / mean) is 1; the scheduler's own jitter adds
    // to both, so the bounds are wide, and the linear process must stay well under it.
    assert!((0.4..4.0).contains(&(pv / pm)), "Poisson's variance {pv} (mean {pm})");
    assert!(
        lv / lm < 0.5 && lv < pv / 2.0,
        "linear's variance {lv} (mean {lm}) against Poisson's {pv}"
    );
    // rate_min above what the rate allows: the job fails as fio's does.
    let (out, _) = run(
        "min.fio",
        &format!("[m]\ndirectory={dir}\nrw=read\nsize=64m\nrate=1m\nrate_min=2m\nruntime=3\ntime_based\n"),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("under the minimum rate"), "{}", stderr(&out));
    // wait_for the job just before is a stonewall; fio's waitfor.fio reads so.
    let out = s.storlab(&[
        "run",
        "--fio",
        example("waitfor.fio").to_str().unwrap(),
        "--parse-only",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let together: Vec<bool> = v["job"]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["together"].as_bool().unwrap())
        .collect();
    assert_eq!(together, [false, false, false, false]);
    assert!(entries(&d).is_empty());
}

/// The CPU lists of a running process's threads (`Cpus_allowed_list` in /proc).
fn thread_cpus(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("status")).ok())
        .filter_map(|st| {
            st.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:").map(|v| v.trim().to_string()))
        })
        .collect()
}

/// fio's cpus_allowed (shared and split) and numa_mem_policy: the workers' threads run where
/// the job says, as /proc shows while the run goes on.
#[test]
fn workers_run_on_the_cpus_the_job_names() {
    let s = Scratch::new();
    let d = s.data();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last: u32 = online.trim().rsplit(['-', ',']).next().unwrap().parse().unwrap();
    if last == 0 {
        eprintln!("one CPU: no placement to tell apart from the default");
        return;
    }
    let cases = [
        ("shared", format!("{last}"), vec![last.to_string(); 2]),
        ("split", format!("0-{last}"), vec!["0".to_string(), last.to_string()]),
    ];
    for (policy, allowed, want) in cases {
        let job = s.path().join(format!("{policy}.fio"));
        std::fs::write(
            &job,
            format!("[a]\ndirectory={}\nrw=randread\nioengine=null\nsize=16m\nnumjobs=2\nruntime=3\ntime_based\ncpus_allowed={allowed}\ncpus_allowed_policy={policy}\nnuma_mem_policy=bind:0\n", d.display()),
        )
        .unwrap();
        let child = std::process::Command::new(bin())
            .args(["run", "--fio", job.to_str().unwrap(), "-q", "--json"])
            .env("STORLAB_DB", s.db())
            .env("TMPDIR", s.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The workers' lists once both are up (the other threads keep every CPU).
        let mut seen = Vec::new();
        for _ in 0..60 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            seen = thread_cpus(child.id())
                .into_iter()
                .filter(|c| c != online.trim())
                .collect();
            seen.sort();
            if seen.len() >= 2 {
                break;
            }
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(seen, want, "{policy}: the workers' CPUs");
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            run["phases"][0]["params"]["plan"]["settings"]["memory_policy"],
            serde_json::json!({"bind": [0]})
        );
    }
    // A NUMA node the machine does not have is refused by name.
    let job = s.path().join("node.fio");
    std::fs::write(&job, "[a]\nrw=read\nsize=1m\nnuma_cpu_nodes=63\n").unwrap();
    let out = s.storlab(&["run", "--fio", job.to_str().unwrap(), "--parse-only"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("NUMA node 63 is not on this machine"),
        "{}",
        stderr(&out)
    );
}

/// fio-plot (PyPI), which reads fio's JSON, draws its graphs from `storlab fio`'s: a random
/// read at three queue depths, as a site runs it to chart a device.
#[test]
fn fio_plot_draws_storlabs_json() {
    let fio_plot = std::env::var("FIO_PLOT").unwrap_or_else(|_| "fio-plot".into());
    let s = Scratch::new();
    let d = s.data();
    let data = s.path().join("charts");
    std::fs::create_dir(&data).unwrap();
    for depth in [1, 8, 16] {
        let out = s.storlab(&[
            "fio",
            "--name=rr",
            "--rw=randread",
            "--bs=4k",
            "--size=16m",
            &format!("--directory={}", d.display()),
            "--ioengine=io_uring",
            &format!("--iodepth={depth}"),
            // fio-plot finds a document by its job options' rw, iodepth and numjobs, which fio
            // (and storlab fio) list as given: a site's command line gives all three.
            "--numjobs=1",
            "--runtime=2",
            "--time_based",
            "--output-format=json",
            &format!("--output={}/randread-iodepth-{depth}-numjobs-1.json", data.display()),
            "-q",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    for (flags, png) in [
        (vec!["-l", "-r", "randread", "-d", "1", "8", "16", "-n", "1"], "qd.png"),
        (vec!["-L", "-r", "randread", "-t", "iops"], "3d.png"),
    ] {
        let out = Command::new(&fio_plot)
            .arg("-i")
            .arg(&data)
            .args(["-T", "storlab"])
            .args(&flags)
            .arg("-o")
            .arg(s.path().join(png))
            .output()
            .unwrap_or_else(|e| panic!("{fio_plot}: {e} (scripts/test installs fio-plot and sets $FIO_PLOT)"));
        assert!(out.status.success(), "{png}: {}{}", stdout(&out), stderr(&out));
        assert!(stdout(&out).contains("Saving to file"), "{}", stdout(&out));
        let decoder = png::Decoder::new(std::io::BufReader::new(
            std::fs::File::open(s.path().join(png)).unwrap(),
        ));
        let info = decoder.read_info().unwrap();
        assert!(
            info.info().width >= 1000 && info.info().height >= 600,
            "{png}: {}x{}",
            info.info().width,
            info.info().height
        );
    }

    // fio's bandwidth and IOPS logs (written where storlab fio runs, as fio writes them), drawn
    // by fio-plot's log graph; each line's value is the interval's, from the stored samples.
    let logs = s.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let name = "randread-iodepth-1-numjobs-1";
    let out = Command::new(bin())
        .current_dir(&logs)
        .env("STORLAB_DB", s.db())
        .args([
            "fio",
            "--name=rr",
            "--rw=randread",
            "--bs=4k",
            "--size=16m",
            &format!("--directory={}", d.display()),
            "--runtime=2",
            "--time_based",
            &format!("--write_bw_log={name}"),
            &format!("--write_iops_log={name}"),
            "--log_avg_msec=200",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let id = s.last_run_id();
    let run = s.json(&["results", "show", &id.to_string()]);
    let samples = measured_samples(&run["phases"][0]["result"]);
    // fio's names: the prefix, the log, the job's number (per_job_logs, fio's default). A line
    // for each whole 200 ms interval, as fio writes its IOPS log: the sliver after the last
    // boundary has none.
    let whole: Vec<&Value> = samples
        .iter()
        .copied()
        .filter(|x| x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap() > 0.2 - 1e-6)
        .collect();
    assert_eq!(whole.len(), 10, "2 s in intervals of 200 ms");
    let iops_log = std::fs::read_to_string(logs.join(format!("{name}_iops.1.log"))).unwrap();
    let lines: Vec<&str> = iops_log.lines().collect();
    assert_eq!(lines.len(), whole.len(), "{iops_log}");
    let samples = whole;
    for (line, x) in lines.iter().zip(&samples) {
        let f: Vec<&str> = line.split(", ").collect();
        let secs = x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap();
        assert_eq!(
            f[0].parse::<u64>().unwrap(),
            (x["t_end"].as_f64().unwrap() * 1e3).round() as u64
        );
        assert_eq!(
            f[1].parse::<u64>().unwrap(),
            (x["ops_read"].as_f64().unwrap() / secs).round() as u64,
            "{line}"
        );
        assert_eq!(&f[2..], ["0", "0", "0"]);
    }
    assert!(logs.join(format!("{name}_bw.1.log")).exists());
    let out = Command::new(&fio_plot)
        .arg("-i")
        .arg(&logs)
        .args([
            "-T", "storlab", "-g", "-t", "bw", "iops", "-r", "randread", "-d", "1", "-n", "1", "-o",
        ])
        .arg(s.path().join("log.png"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(s.path().join("log.png").exists());
    // Every run of job rr read the one file fio names for it, left where it was.
    assert_eq!(entries(&d), ["rr.0.0"], "what fio leaves");
}

/// A job of two clones logs as fio does with per_job_logs (its default): a file per clone and
/// log, numbered by the clone's thread, each from that worker's own samples, so that the time
/// integral of a clone's bandwidth log gives back the bytes that worker moved; fio itself, run
/// on the same command line, writes files of the same names (a synchronous engine's slat log
/// empty, as fio's); under io_uring each interval's slat and clat add up to its lat; fio-plot's
/// log graph draws both clones.
#[test]
fn each_clone_of_a_job_logs_to_its_own_files_as_fio_names_them() {
    let fio_plot = std::env::var("FIO_PLOT").unwrap_or_else(|_| "fio-plot".into());
    let s = Scratch::new();
    let d = s.data();
    let name = "randread-iodepth-1-numjobs-2";
    let args = |dir: &Path, engine: &str| -> Vec<String> {
        [
            "--name=c",
            "--rw=randread",
            "--bs=4k",
            "--size=8m",
            "--numjobs=2",
            "--time_based",
            "--runtime=2",
            "--log_avg_msec=250",
            "--output-format=json",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([
            format!("--ioengine={engine}"),
            "--iodepth=4".to_string(),
            format!("--directory={}", dir.display()),
            format!("--write_bw_log={name}"),
            format!("--write_iops_log={name}"),
            format!("--write_lat_log={name}"),
        ])
        .collect()
    };
    let logs_of = |dir: &Path| -> std::collections::BTreeSet<String> {
        entries(dir).into_iter().filter(|n| n.ends_with(".log")).collect()
    };
    let run_both = |engine: &str| -> (PathBuf, PathBuf) {
        let (ours, theirs) = (
            s.path().join(format!("storlab-{engine}")),
            s.path().join(format!("fio-{engine}")),
        );
        for (dir, prog) in [(&ours, bin()), (&theirs, "fio")] {
            std::fs::create_dir(dir).unwrap();
            let data = d.join(dir.file_name().unwrap());
            std::fs::create_dir(&data).unwrap();
            let out = fio_command(&s, prog)
                .current_dir(dir)
                .args(args(&data, engine))
                .output()
                .unwrap();
            assert!(out.status.success(), "{prog}: {}", stderr(&out));
        }
        let (ours_logs, fios_logs) = (logs_of(&ours), logs_of(&theirs));
        for what in ["bw", "iops", "lat", "slat", "clat"] {
            for clone in [1, 2] {
                let f = format!("{name}_{what}.{clone}.log");
                assert!(fios_logs.contains(&f), "{engine}: fio wrote {fios_logs:?}, not {f}");
            }
        }
        assert_eq!(
            ours_logs, fios_logs,
            "{engine}: the log files storlab fio and fio write"
        );
        (ours, theirs)
    };
    let (ours, _) = run_both("psync");
    let empty = std::fs::read_to_string(ours.join(format!("{name}_slat.1.log"))).unwrap();
    assert_eq!(empty, "", "a synchronous engine's slat log is empty, as fio's");

    // Each clone's bandwidth log, integrated over its intervals (each line's time is its
    // interval's end), gives back the bytes its worker moved, as stored.
    let run = s.json(&["results", "show", "1"]);
    let workers = run["phases"][0]["result"]["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    for (clone, w) in workers.iter().enumerate() {
        let text = std::fs::read_to_string(ours.join(format!("{name}_bw.{}.log", clone + 1))).unwrap();
        let (mut bytes, mut last_ms) = (0.0, 0.0);
        for line in text.lines() {
            let f: Vec<f64> = line.split(", ").map(|v| v.parse().unwrap()).collect();
            assert_eq!(&f[2..], [0.0, 0.0, 0.0], "{line}");
            bytes += f[1] * 1024.0 * (f[0] - last_ms) / 1e3;
            last_ms = f[0];
        }
        let stored = w["bytes"].as_f64().unwrap();
        assert!(
            (bytes / stored - 1.0).abs() < 0.02,
            "clone {}: its log integrates to {bytes:.0} bytes, its worker moved {stored}",
            clone + 1
        );
    }

    // io_uring splits each I/O at its submission: per interval, slat + clat = lat (each line a
    // mean over the same I/Os, rounded to the ns).
    let (ours_uring, _) = run_both("io_uring");
    let read = |what: &str, clone: u32| -> Vec<Vec<f64>> {
        std::fs::read_to_string(ours_uring.join(format!("{name}_{what}.{clone}.log")))
            .unwrap()
            .lines()
            .map(|l| l.split(", ").map(|v| v.parse().unwrap()).collect())
            .collect()
    };
    for clone in [1, 2] {
        let (lat, slat, clat) = (read("lat", clone), read("slat", clone), read("clat", clone));
        assert!(lat.len() >= 6, "clone {clone}: {} intervals logged", lat.len());
        assert_eq!(
            (lat.len(), slat.len()),
            (clat.len(), clat.len()),
            "clone {clone}: a line each"
        );
        for ((l, sl), cl) in lat.iter().zip(&slat).zip(&clat) {
            assert_eq!(
                (l[0], sl[0], cl[0]),
                (l[0], l[0], l[0]),
                "clone {clone}: the same interval"
            );
            assert!(
                (sl[1] + cl[1] - l[1]).abs() <= 2.0 && sl[1] > 0.0 && cl[1] > 0.0,
                "clone {clone} at {} ms: slat {} + clat {} against lat {}",
                l[0],
                sl[1],
                cl[1],
                l[1]
            );
        }
    }
    let out = Command::new(&fio_plot)
        .arg("-i")
        .arg(&ours)
        .args([
            "-T", "storlab", "-g", "-t", "bw", "iops", "lat", "-r", "randread", "-d", "1", "-n", "2", "-o",
        ])
        .arg(s.path().join("clones.png"))
        .output()
        .unwrap_or_else(|e| panic!("{fio_plot}: {e} (scripts/test installs fio-plot and sets $FIO_PLOT)"));
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(s.path().join("clones.png").exists());
}

/// fio's steady state: a job ends once its IOPS (or bandwidth) is steady over the window, as
/// judged again here from the window the run stored; fio's steadystate.fio reads, on
/// /dev/null and /dev/zero.
#[test]
fn a_job_ends_at_steady_state_as_fio_judges_it() {
    let s = Scratch::new();
    let job = s.path().join("ss.fio");
    std::fs::write(
        &job,
        "[global]\ntime_based\nsize=64m\nruntime=60\nss_dur=3s\nss_ramp=1s\n[w]\nfilename=/dev/null\nrw=write\nbs=128k\nss=iops:20%\n[r]\nstonewall\nfilename=/dev/zero\nrw=randread\nbs=4k\nss=bw_slope:5%\n[never]\nstonewall\nfilename=/dev/zero\nrw=read\nruntime=2\nss=iops:0%\n",
    )
    .unwrap();
    let out = s.storlab(&["fio", job.to_str().unwrap(), "--output-format=json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = s.json(&["results", "show", "1"]);
    for (i, (iops, slope, limit)) in [(true, false, 20.0), (false, true, 5.0)].into_iter().enumerate() {
        let p = &run["phases"][i]["result"];
        let st = &p["steady"];
        assert_eq!(st["attained"], true, "{st}");
        // Ended by steady state, not by its runtime: a busy machine only delays it (the
        // runtime leaves it a minute; alone it takes about 5 s).
        let secs = p["all_done"]["seconds"].as_f64().unwrap();
        assert!(secs < 59.0, "ended at steady state, {secs} s of 60");
        // The criterion again, from the stored window (fio's steadystate.c).
        let w: Vec<f64> = st[if iops { "iops" } else { "bw" }]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(w.len(), 3, "a 3 s window of 1 s samples");
        let n = w.len() as f64;
        let mean = w.iter().sum::<f64>() / n;
        let raw = if slope {
            let xm = (n - 1.0) / 2.0;
            let sxy: f64 = w.iter().enumerate().map(|(k, y)| (k as f64 - xm) * (y - mean)).sum();
            sxy / w.iter().enumerate().map(|(k, _)| (k as f64 - xm).powi(2)).sum::<f64>()
        } else {
            w.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max)
        };
        let crit = 100.0 * raw / mean;
        assert!(
            (crit - st["criterion"].as_f64().unwrap()).abs() < 1e-9 * crit.abs().max(1.0),
            "{crit} {st}"
        );
        assert!(crit.abs() < limit);
        let ss = &doc["jobs"][i]["steadystate"];
        assert_eq!(ss["attained"], 1);
        assert_eq!(
            doc["jobs"][i]["job options"]["steadystate"],
            if i == 0 { "iops:20%" } else { "bw_slope:5%" }
        );
    }
    // iops:0% is never met: the job runs its whole runtime, and says so.
    let p = &run["phases"][2]["result"];
    assert_eq!(p["steady"]["attained"], false);
    assert!((p["all_done"]["seconds"].as_f64().unwrap() - 2.0).abs() < 0.5);
    assert_eq!(doc["jobs"][2]["steadystate"]["attained"], 0);
    // fio's own example reads (on /dev/null and /dev/zero, 30 s windows after 10 s ramps).
    let out = s.storlab(&[
        "run",
        "--fio",
        example("steadystate.fio").to_str().unwrap(),
        "--parse-only",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("steady = \"iops:10%\"") && stdout(&out).contains("steady_window = \"30s\""),
        "{}",
        stdout(&out)
    );
}

/// fio's numjobs on one filename: every clone works over the whole file (fio's clones share
/// it), not a part of it as storlab's own workers do by default.
#[test]
fn clones_on_one_file_each_cover_all_of_it() {
    let s = Scratch::new();
    let d = s.data();
    let job = s.path().join("clones.fio");
    std::fs::write(
        &job,
        format!(
            "[c]\nfilename={}/one.dat\nrw=randwrite\nbs=4k\nsize=8m\nnumjobs=3\n",
            d.display()
        ),
    )
    .unwrap();
    let out = s.storlab(&["run", "--fio", job.to_str().unwrap(), "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let workers = run["phases"][0]["params"]["plan"]["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3);
    for w in workers {
        assert_eq!(
            (w["offset"].as_u64(), w["len"].as_u64()),
            (Some(0), Some(8 << 20)),
            "{w}"
        );
    }
    // Each clone writes its 8 MiB pass: three passes' worth over the one file.
    assert_eq!(run["phases"][0]["result"]["bytes_written"], 3 * (8 << 20));
    assert!(entries(&d).is_empty());
}

/// A write line of fio's normal output: its bytes (`(16.0MiB/8msec)`, num2str's units) and
/// its zone resets (`; 8 zone resets`).
fn write_line(text: &str) -> (u64, u64) {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("write:"))
        .unwrap_or_else(|| panic!("no write line: {text}"));
    let io = line.split('(').nth(2).and_then(|t| t.split('/').next()).unwrap();
    let unit = io.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let n: f64 = io[..io.len() - unit.len()].parse().unwrap();
    let scale = match unit {
        "B" => 1u64,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        u => panic!("unit {u} in {line}"),
    };
    let resets = line
        .rsplit("; ")
        .next()
        .and_then(|t| t.strip_suffix(" zone resets"))
        .unwrap()
        .parse()
        .unwrap();
    ((n * scale as f64).round() as u64, resets)
}

/// fio's zonemode=zbd on a regular file, which fio emulates (zones of zonesize, each written
/// at its write pointer, a full one reset): beside Debian's fio on the same files, the same
/// bytes, the same resets, the same blocks written and left alone, the same reads of what an
/// earlier job wrote, and the same refusal of a file with no length.
#[test]
fn zonemode_zbd_on_a_file_emulates_zones_as_fio_does() {
    let s = Scratch::new();
    let fio_bin = "fio".to_string();
    let file = s.path().join("zoned");
    let fresh = || {
        let _ = std::fs::remove_file(&file);
        std::fs::File::create(&file).unwrap().set_len(16 << 20).unwrap();
    };
    let zoned = format!("--filename={}", file.display());
    let common = [zoned.as_str(), "--zonemode=zbd", "--zonesize=1m", "--bs=64k"];
    let run = |prog: &str, extra: &[&str]| -> String {
        let out = fio_command(&s, prog).args(common).args(extra).output().unwrap();
        assert!(out.status.success(), "{prog} {extra:?}: {}", stderr(&out));
        stdout(&out)
    };
    for prog in [fio_bin.as_str(), bin()] {
        // Random writes of 16 MiB over 16 empty zones: each zone filled at its write pointer,
        // none reset, every block written.
        fresh();
        let (bytes, resets) = write_line(&run(prog, &["--name=a", "--rw=randwrite", "--size=16m"]));
        assert_eq!((bytes, resets), (16 << 20, 0), "{prog}");
        let data = std::fs::read(&file).unwrap();
        assert!(
            data.chunks(65536).all(|b| b.iter().any(|x| *x != 0)),
            "{prog}: every block written"
        );

        // A second of random writes with zones of 768 KiB capacity: each reset drops a full
        // zone, so the bytes written are the resets' zones and what the zones hold at the end.
        fresh();
        let (bytes, resets) = write_line(&run(
            prog,
            &[
                "--name=t",
                "--rw=randwrite",
                "--zonecapacity=768k",
                "--time_based",
                "--runtime=1",
            ],
        ));
        let dropped = resets * (768 << 10);
        assert!(resets > 16, "{prog}: a second of writes resets zones: {resets}");
        assert!(
            dropped <= bytes && bytes <= dropped + 16 * (768 << 10),
            "{prog}: {bytes} bytes, {resets} resets"
        );

        // Sequential writes with that capacity: each zone's first 768 KiB written, its last
        // 256 KiB passed over and left alone, the pass counting them as done (12 MiB moved).
        fresh();
        let (bytes, resets) = write_line(&run(
            prog,
            &["--name=s", "--rw=write", "--zonecapacity=768k", "--size=16m"],
        ));
        assert_eq!((bytes, resets), (12 << 20, 0), "{prog}");
        let data = std::fs::read(&file).unwrap();
        for (z, zone) in data.chunks(1 << 20).enumerate() {
            assert!(
                zone[..768 << 10].chunks(65536).all(|b| b.iter().any(|x| *x != 0)),
                "{prog}: zone {z} written"
            );
            assert!(
                zone[768 << 10..].iter().all(|x| *x == 0),
                "{prog}: zone {z} past its capacity untouched"
            );
        }

        // Reads find only what the run wrote: a read job alone reads nothing (fio prints no
        // job at all); after a job that wrote 8 zones, a sequential read of 16 MiB reads those
        // 8 MiB and a random one draws its 16 MiB from them.
        fresh();
        let alone = run(prog, &["--name=r", "--rw=read", "--output-format=json"]);
        let json_at = alone.find('{').unwrap();
        let doc: Value = serde_json::from_str(&alone[json_at..]).unwrap();
        let read: u64 = doc["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["read"]["io_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(read, 0, "{prog}: nothing written, nothing read");
        let job = s.path().join("zones.fio");
        std::fs::write(
            &job,
            format!(
                "[global]\nfilename={}\nzonemode=zbd\nzonesize=1m\nbs=64k\n[w]\nrw=randwrite\nsize=8m\n[r]\nstonewall\nrw=read\nsize=16m\n[rr]\nstonewall\nrw=randread\nsize=16m\n",
                file.display()
            ),
        )
        .unwrap();
        let out = fio_command(&s, prog)
            .arg(&job)
            .arg("--output-format=json")
            .output()
            .unwrap();
        let doc = fio_document(prog, &[], &out);
        let bytes: Vec<(u64, u64)> = doc["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["read"]["io_bytes"].as_u64().unwrap(),
                    j["write"]["io_bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(bytes, [(0, 8 << 20), (8 << 20, 0), (16 << 20, 0)], "{prog}");

        // A new file has no zones: fio's error, EINVAL in the job, exit 1, nothing made.
        let new = s.path().join("new");
        let named = format!("--filename={}", new.display());
        let out = fio_command(&s, prog)
            .args([
                named.as_str(),
                "--name=n",
                "--zonemode=zbd",
                "--zonesize=1m",
                "--rw=write",
                "--size=16m",
                "--output-format=json",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{prog}");
        assert!(
            stderr(&out).contains("file/device size 0 is smaller than zone size 1048576"),
            "{prog}: {}",
            stderr(&out)
        );
        let json_at = stdout(&out).find('{').unwrap();
        let doc: Value = serde_json::from_str(&stdout(&out)[json_at..]).unwrap();
        assert_eq!(doc["jobs"][0]["error"], 22, "{prog}");
        assert!(!new.exists(), "{prog}: nothing made");
    }
    // storlab refuses before it runs what fio finds wrong as it runs: a block larger than a
    // zone.
    fresh();
    let out = s.storlab(&[
        "fio",
        &zoned,
        "--name=b",
        "--zonemode=zbd",
        "--zonesize=64k",
        "--bs=128k",
        "--rw=randwrite",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("larger than a zone"), "{}", stderr(&out));
}

/// A job's several files as fio names them (`filename=a:b:c`, `\\:` a colon within a name) or
/// finds them (`opendir`, every file below a directory): each clone works on all of them, the
/// size shared among them, as Debian's fio does on the same command line.
#[test]
fn a_jobs_several_files_are_named_or_found_below_a_directory_as_fio_does() {
    let s = Scratch::new();
    let fio_bin = "fio".to_string();
    for prog in [fio_bin.as_str(), bin()] {
        let dir = s.path().join(if prog == bin() { "storlab" } else { "fio" });
        std::fs::create_dir(&dir).unwrap();
        // Three new files, a 3 MiB size shared by them, two clones each writing all three.
        let args = [
            "--name=j",
            "--filename=a:b:x\\:y",
            "--size=3m",
            "--rw=write",
            "--bs=4k",
            "--numjobs=2",
            "--output-format=json",
        ];
        let out = fio_command(&s, prog).args(args).current_dir(&dir).output().unwrap();
        let doc = fio_document(prog, &args, &out);
        let jobs = doc["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2, "{prog}: a clone each");
        for j in jobs {
            assert_eq!(
                j["write"]["io_bytes"],
                3 << 20,
                "{prog}: each clone writes all three files"
            );
        }
        for name in ["a", "b", "x:y"] {
            let data = std::fs::read(dir.join(name)).unwrap();
            assert_eq!(data.len(), 1 << 20, "{prog}: {name} holds a third of the size");
            let unwritten = data.chunks(4096).filter(|b| b.iter().all(|x| *x == 0)).count();
            assert_eq!(unwritten, 0, "{prog}: every block of {name} written");
        }
        assert_eq!(entries(&dir).len(), 3, "{prog}: the three files and no other");

        // opendir: the files below a directory at any depth, each read whole at its own size;
        // an empty file is left out; nothing is written.
        let tree = dir.join("tree");
        std::fs::create_dir_all(tree.join("sub/deeper")).unwrap();
        std::fs::write(tree.join("one"), vec![7u8; 1 << 20]).unwrap();
        std::fs::write(tree.join("sub/deeper/three"), vec![9u8; 3 << 20]).unwrap();
        std::fs::write(tree.join("sub/empty"), b"").unwrap();
        let opendir = format!("--opendir={}", tree.display());
        let args = ["--name=r", &opendir, "--rw=read", "--bs=64k", "--output-format=json"];
        let mut out = fio_command(&s, prog).args(args).output().unwrap();
        // fio says what opendir found on stdout before its document ("fio: opendir added 3
        // files", the empty one with "may be ignored"); storlab says it among its notes.
        let json_at = out.stdout.iter().position(|c| *c == b'{').unwrap_or(0);
        out.stdout.drain(..json_at);
        let doc = fio_document(prog, &args, &out);
        assert_eq!(
            doc["jobs"][0]["read"]["io_bytes"],
            4 << 20,
            "{prog}: both files read whole"
        );
        assert_eq!(
            std::fs::read(tree.join("sub/deeper/three")).unwrap(),
            vec![9u8; 3 << 20]
        );
        assert_eq!(std::fs::metadata(tree.join("sub/empty")).unwrap().len(), 0);
    }
    // storlab's plan: each worker's first file and its two further ones, each its own target.
    let run = s.json(&["results", "show", "1"]);
    let workers = run["phases"][0]["params"]["plan"]["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    for w in workers {
        let more: Vec<(&str, u64)> = w["more"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["path"].as_str().unwrap(), m["target"].as_u64().unwrap()))
            .collect();
        assert!(
            w["path"].as_str().unwrap().ends_with("/storlab/a") || w["path"] == "a",
            "{w}"
        );
        assert_eq!(more.len(), 2, "{w}");
        assert_eq!((more[0].1, more[1].1), (1, 2), "{w}");
    }
    // An opendir with nothing to read is refused, naming it.
    let empty = s.path().join("nothing");
    std::fs::create_dir(&empty).unwrap();
    let out = s.storlab(&[
        "fio",
        "--name=r",
        &format!("--opendir={}", empty.display()),
        "--rw=read",
    ]);
    assert_eq!(out.status.code(), Some(1), "fio's exit: {}", stderr(&out));
    assert!(
        stderr(&out).contains("opendir=") && stderr(&out).contains("no file with data"),
        "{}",
        stderr(&out)
    );
}

/// fio's offset and offset_increment: each clone's region starts where fio's would.
#[test]
fn offsets_place_each_clones_region_as_fio_does() {
    let s = Scratch::new();
    let d = s.data();
    let job = s.path().join("off.fio");
    std::fs::write(
        &job,
        format!(
            "[o]\nfilename={}/one.dat\nrw=write\nbs=64k\nsize=1m\nnumjobs=2\noffset=1m\noffset_increment=2m\n",
            d.display()
        ),
    )
    .unwrap();
    let out = s.storlab(&["run", "--fio", job.to_str().unwrap(), "--json", "-q", "--keep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let regions: Vec<(u64, u64)> = run["phases"][0]["params"]["plan"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["offset"].as_u64().unwrap(), w["len"].as_u64().unwrap()))
        .collect();
    assert_eq!(regions, [(1 << 20, 1 << 20), (3 << 20, 1 << 20)]);
    // The file holds data where the clones wrote, and a hole where neither did.
    let f = std::fs::read(d.join("one.dat")).unwrap();
    assert_eq!(f.len(), 4 << 20);
    assert!(f[..1 << 20].iter().all(|b| *b == 0), "nothing before the first region");
    assert!(
        f[(2 << 20)..(3 << 20)].iter().all(|b| *b == 0),
        "nothing between the regions"
    );
    assert!(f[(1 << 20)..(2 << 20)].iter().any(|b| *b != 0) && f[(3 << 20)..].iter().any(|b| *b != 0));
    std::fs::remove_file(d.join("one.dat")).unwrap();
}

/// fio's flow: jobs of one flow_id issue in proportion to their weights (butterfly.fio's two
/// readers with equal weights; here 1 to 3), and a job whose partner is done goes on alone.
#[test]
fn flows_share_the_io_by_weight() {
    let s = Scratch::new();
    let d = s.data();
    let job = s.path().join("flow.fio");
    std::fs::write(
        &job,
        format!("[global]\ndirectory={}\nioengine=null\nsize=64m\nbs=4k\n[light]\nrw=randread\nruntime=2\ntime_based\nflow=1\n[heavy]\nrw=randread\nruntime=2\ntime_based\nflow=3\n[after]\nstonewall\nrw=read\nflow=1\n", d.display()),
    )
    .unwrap();
    let out = s.storlab(&["run", "--fio", job.to_str().unwrap(), "--json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ops = |i: usize| run["phases"][i]["result"]["ops_read"].as_f64().unwrap();
    let ratio = ops(1) / ops(0);
    assert!(
        (2.8..3.2).contains(&ratio),
        "heavy ÷ light = {ratio} ({} and {})",
        ops(1),
        ops(0)
    );
    // Alone in its flow, a job is never held back: one pass of 64 MiB.
    assert_eq!(run["phases"][2]["result"]["ops_read"], 16384);
    let out = s.storlab(&[
        "run",
        "--fio",
        example("butterfly.fio").to_str().unwrap(),
        "--parse-only",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// fio's prioclass and prio: the workers' I/O priority, as ionice reads it off each worker
/// thread while the run goes on.
#[test]
fn workers_carry_the_io_priority_the_job_names() {
    let s = Scratch::new();
    let d = s.data();
    let job = s.path().join("prio.fio");
    std::fs::write(
        &job,
        format!(
            "[p]\ndirectory={}\nrw=randread\nioengine=null\nsize=16m\nnumjobs=2\nruntime=3\ntime_based\nprioclass=3\n",
            d.display()
        ),
    )
    .unwrap();
    let child = std::process::Command::new(bin())
        .args(["run", "--fio", job.to_str().unwrap(), "-q", "--json"])
        .env("STORLAB_DB", s.db())
        .env("TMPDIR", s.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut idle = 0;
    for _ in 0..60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", child.id())) else {
            break;
        };
        idle = tasks
            .filter_map(|t| t.ok())
            .filter(|t| {
                let out = Command::new("ionice").arg("-p").arg(t.file_name()).output();
                out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
            })
            .count();
        if idle >= 2 {
            break;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(idle, 2, "two worker threads in the idle class");
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        run["phases"][0]["params"]["plan"]["settings"]["priority"],
        serde_json::json!({"class": 3, "level": 4})
    );
}

/// Which 4 KiB blocks of a file hold data (are not all zeros).
fn written_blocks(path: &std::path::Path) -> Vec<bool> {
    std::fs::read(path)
        .unwrap()
        .chunks(4096)
        .map(|c| c.iter().any(|b| *b != 0))
        .collect()
}

/// fio's holes (`rw=write:N`), strided zones (zonemode=strided, disk-zone-profile.fio's way of
/// sampling a disk) and io_size: fio and storlab, each given the same command line on a file of
/// its own, leave data in the same blocks and move the same bytes.
#[test]
fn holes_strided_zones_and_io_size_write_where_fio_writes() {
    let s = Scratch::new();
    let d = s.data();
    for (i, args) in [
        "--rw=write:12k --bs=4k --size=1m",
        "--rw=write --bs=8k --size=2m --zonemode=strided --zonesize=64k --zoneskip=192k",
        "--rw=write --bs=4k --size=2m --zonemode=strided --zonesize=32k --zonerange=128k --zoneskip=64k",
        "--rw=write:4k --bs=4k --size=2m --io_size=256k",
        "--rw=write --bs=16k --size=1m --io_size=3m",
    ]
    .iter()
    .enumerate()
    {
        let ours = d.join(format!("ours{i}"));
        let theirs = d.join(format!("theirs{i}"));
        let mut a: Vec<String> = vec!["fio".into(), "--name=h".into(), "--fallocate=none".into()];
        a.extend(args.split(' ').map(String::from));
        a.push("--output-format=json".into());
        let mut ours_args = a.clone();
        ours_args.push(format!("--filename={}", ours.display()));
        ours_args.push("--keep".into());
        let ours_args: Vec<&str> = ours_args.iter().map(String::as_str).collect();
        let out = s.storlab(&ours_args);
        assert!(out.status.success(), "{args}: {}", stderr(&out));
        let ours_json: Value = serde_json::from_slice(&out.stdout).unwrap();
        let fio = Command::new("fio")
            .args(&a[1..])
            .arg(format!("--filename={}", theirs.display()))
            .output()
            .expect("fio");
        assert!(fio.status.success(), "{}", String::from_utf8_lossy(&fio.stderr));
        let theirs_json: Value = serde_json::from_slice(&fio.stdout).unwrap();
        assert_eq!(
            ours_json["jobs"][0]["write"]["io_bytes"], theirs_json["jobs"][0]["write"]["io_bytes"],
            "{args}: bytes moved"
        );
        let (o, t) = (written_blocks(&ours), written_blocks(&theirs));
        assert_eq!(o.len(), t.len(), "{args}: file length");
        assert_eq!(o, t, "{args}: the blocks written");
        if args.contains(':') || args.contains("zonemode") {
            assert!(o.iter().any(|b| !b), "{args}: leaves blocks out");
        }
        std::fs::remove_file(ours).unwrap();
        std::fs::remove_file(theirs).unwrap();
    }
    // A verified write with holes is read back over the same blocks: nothing bad.
    let f = d.join("v");
    let out = s.storlab(&[
        "fio",
        "--name=v",
        &format!("--filename={}", f.display()),
        "--rw=write:12k",
        "--bs=4k",
        "--size=1m",
        "--verify=crc32c",
        "--output-format=json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = s.json(&["results", "show", "6"]); // after the five above
    let v = &run["phases"][1]["result"]["verify"];
    assert_eq!(v["bad_blocks"], 0, "{v}");
    // 1 MiB moved: 64 blocks (every fourth of the file) four times round.
    assert_eq!(v["blocks_checked"], 256, "{v}");
    // The file fio's filename= made stays, as under fio.
    assert_eq!(entries(&d), ["v"], "what fio leaves");
}

/// surface-scan.fio as fio's examples give it: fill_device writes until the filesystem is full
/// (ENOSPC ends the job, not as an error), every block carries verify_pattern after storlab's
/// header, and the verify-phase reads the filled file to its end, checking both.
#[test]
fn surface_scan_fills_the_filesystem_and_checks_its_pattern() {
    let s = Scratch::new();
    let point = s.path().join("mnt");
    std::fs::create_dir(&point).unwrap();
    let _fs = loop_filesystem("mkfs.ext4", 64 << 20, &point);
    // fio's own write-phase first, on the same filesystem: how much it writes before ENOSPC.
    let fio = Command::new("fio")
        .current_dir(&point)
        .args(["--section=write-phase", "--output-format=json"])
        .arg(example("surface-scan.fio"))
        .output()
        .unwrap();
    assert!(fio.status.success(), "{}", stderr(&fio));
    let fio: Value = serde_json::from_slice(&fio.stdout).unwrap();
    let fio_written = fio["jobs"][0]["write"]["io_bytes"].as_u64().unwrap();
    for f in entries(&point).iter().filter(|f| *f != "lost+found") {
        std::fs::remove_file(point.join(f)).unwrap();
    }
    let out = Command::new(bin())
        .current_dir(&point)
        .env("STORLAB_DB", s.db())
        .args([
            "fio",
            example("surface-scan.fio").to_str().unwrap(),
            "--keep",
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let written = doc["jobs"][0]["write"]["io_bytes"].as_u64().unwrap();
    let read = doc["jobs"][1]["read"]["io_bytes"].as_u64().unwrap();
    let file = point.join("datafile.tmp");
    let data = std::fs::read(&file).unwrap();
    assert_eq!(data.len() as u64, written, "the file holds what the write moved");
    assert_eq!(read, written, "the verify-phase reads the file to its end");
    // Full: as root, fio and storlab write into the reserved blocks too.
    let df = Command::new("stat")
        .args(["-f", "-c", "%f %S"])
        .arg(&point)
        .output()
        .unwrap();
    let df = stdout(&df);
    let mut it = df.split_whitespace().map(|v| v.parse::<u64>().unwrap());
    let free = it.next().unwrap() * it.next().unwrap();
    assert_eq!(written, fio_written, "storlab fills as far as fio does");
    assert!(free < 2 << 20, "{free} bytes still free after the fill");
    assert!(written > 40 << 20, "{written} bytes written on a 64 MiB filesystem");
    // Every 4 KiB: storlab's header, then 0xaa555aa5 over and over.
    for (i, b) in data.chunks(4096).enumerate() {
        assert_eq!(&b[..4], b"SLB1", "block {i}");
        assert!(
            b[32..]
                .iter()
                .enumerate()
                .all(|(k, x)| *x == [0xaa, 0x55, 0x5a, 0xa5][(32 + k) % 4]),
            "block {i} holds the pattern"
        );
    }
    let run = s.json(&["results", "show", "1"]);
    let v = &run["phases"][1]["result"]["verify"];
    assert_eq!(v["bad_blocks"], 0, "{v}");
    assert_eq!(v["blocks_checked"].as_u64().unwrap(), written / 4096, "{v}");
    std::fs::remove_file(&file).unwrap();
}

/// fio's verify_backlog: every N blocks written are read back before the job writes on, seen
/// in the system calls themselves (strace, psync: pwrite64 and pread64 on the job's file);
/// cross-stripe-verify.fio (scaled from a 30 × 124 GiB NVMe drive to a file) verifies clean.
#[test]
fn a_verify_backlog_reads_back_every_n_blocks_before_writing_on() {
    let s = Scratch::new();
    let d = s.data();
    let f = d.join("b.dat");
    let trace = s.path().join("trace.txt");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-y", "-e", "trace=pwrite64,pread64", "-o"])
        .arg(&trace)
        .arg(bin())
        .args([
            "fio",
            "--name=b",
            &format!("--filename={}", f.display()),
            "--rw=randwrite",
            "--bs=4k",
            "--size=256k",
            "--verify=crc32c",
            "--verify_backlog=8",
            "--output-format=json",
        ])
        .env("STORLAB_DB", s.db())
        .output()
        .expect("strace");
    assert!(out.status.success(), "{}", stderr(&out));
    let name = f.file_name().unwrap().to_str().unwrap().to_string();
    // (write?, offset) of each 4 KiB call on the data file (the file is laid out first in
    // one larger write, as fio lays out a file before writing it randomly).
    let calls: Vec<(bool, u64)> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("{name}>")) && l.contains(", 4096, "))
        .filter_map(|l| {
            let write = l.contains("pwrite64(");
            let off = l.rsplit(", ").next()?.split(')').next()?.trim().parse().ok()?;
            Some((write, off))
        })
        .collect();
    assert_eq!(calls.len(), 128, "64 writes and 64 reads: {calls:?}");
    for (g, group) in calls.chunks(8).enumerate() {
        let write = g % 2 == 0;
        assert!(
            group.iter().all(|c| c.0 == write),
            "group {g} of 8 is all {}: {group:?}",
            if write { "writes" } else { "reads" }
        );
        if !write {
            let mut wrote: Vec<u64> = calls[(g - 1) * 8..g * 8].iter().map(|c| c.1).collect();
            let mut read: Vec<u64> = group.iter().map(|c| c.1).collect();
            wrote.sort();
            read.sort();
            assert_eq!(read, wrote, "group {g} reads back the 8 blocks just written");
        }
    }
    let run = s.json(&["results", "show", "1"]);
    assert_eq!(run["phases"].as_array().unwrap().len(), 1, "no separate verifying read");
    let v = &run["phases"][0]["result"]["verify"];
    assert_eq!(
        (v["blocks_checked"].as_u64(), v["bad_blocks"].as_u64()),
        (Some(64), Some(0)),
        "{v}"
    );

    // cross-stripe-verify.fio: 16 KiB at every 128 KiB from offset 120k, 30 jobs each from
    // its own offset (offset_increment), io_size, loops=2, verify_backlog=1: scaled down.
    let text = std::fs::read_to_string(example("cross-stripe-verify.fio"))
        .unwrap()
        .replace("/dev/nvme0n1", d.join("drive").to_str().unwrap())
        .replace("offset_increment=124g", "offset_increment=1m")
        .replace("io_size=120g", "io_size=256k\nsize=1m");
    let job = s.path().join("cross.fio");
    std::fs::write(&job, text).unwrap();
    let drive = std::fs::File::create(d.join("drive")).unwrap();
    drive.set_len(40 << 20).unwrap();
    let out = s.storlab(&["fio", job.to_str().unwrap(), "--output-format=json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Each of 30 jobs: 256 KiB per loop, two loops, every block read back.
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"], 30 * 2 * (256 << 10));
    assert_eq!(doc["jobs"][0]["read"]["io_bytes"], 30 * 2 * (256 << 10));
    let run = s.json(&["results", "show", "2"]);
    let v = &run["phases"][0]["result"]["verify"];
    assert_eq!(v["bad_blocks"], 0, "{v}");
    assert_eq!(v["blocks_checked"], 30 * 2 * 64, "{v}");
    // Only the 16 KiB at each 128 KiB were written: 120k + 128k·i in each job's region.
    let data = std::fs::read(d.join("drive")).unwrap();
    let written: Vec<bool> = data.chunks(8 << 10).map(|c| c.iter().any(|b| *b != 0)).collect();
    for (i, w) in written.iter().enumerate() {
        let at = (i as u64) * (8 << 10);
        let in_job = at >= 120 << 10 && (at - (120 << 10)) / (1 << 20) < 30;
        let expect = in_job && ((at - (120 << 10)) % (1 << 20)) % (128 << 10) < 16 << 10;
        assert_eq!(*w, expect, "8 KiB at {at}");
    }
    drop(drive);
    std::fs::remove_file(d.join("drive")).unwrap();
    // The first job's file (filename=b.dat) stays, as under fio.
    assert_eq!(entries(&d), ["b.dat"], "what fio leaves");
}

/// The share of a set of files' 4 KiB blocks that repeat another block, and how far zlib
/// compresses them: what deduplicating and compressing storage would see.
fn dedupe_and_compression(files: &[PathBuf]) -> (f64, f64) {
    use std::io::Write;
    let mut seen = std::collections::HashSet::new();
    let mut total = 0usize;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let mut raw = 0usize;
    for f in files {
        let data = std::fs::read(f).unwrap();
        raw += data.len();
        z.write_all(&data).unwrap();
        for b in data.chunks(4096) {
            total += 1;
            seen.insert(b.to_vec());
        }
    }
    let packed = z.finish().unwrap().len();
    (1.0 - seen.len() as f64 / total as f64, packed as f64 / raw as f64)
}

/// dedupe-global.fio (scaled from 100 MiB to 8 MiB per job): half the blocks repeat others
/// (dedupe_percentage, working_set) and half of each block compresses
/// (buffer_compress_percentage), measured on the files written, storlab's beside fio's.
#[test]
fn deduplicable_and_compressible_data_as_fio_writes_it() {
    let s = Scratch::new();
    let d = s.data();
    let text = std::fs::read_to_string(example("dedupe-global.fio"))
        .unwrap()
        .replace("size=100m", &format!("size=8m\ndirectory={}", d.display()));
    let job = s.path().join("dedupe.fio");
    std::fs::write(&job, &text).unwrap();
    let fio = Command::new("fio")
        .arg(&job)
        .arg("--output-format=json")
        .output()
        .unwrap();
    assert!(fio.status.success(), "{}", stderr(&fio));
    let theirs: Vec<PathBuf> = entries(&d).iter().map(|f| d.join(f)).collect();
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    let (fio_dup, fio_z) = dedupe_and_compression(&theirs);
    for f in &theirs {
        std::fs::remove_file(f).unwrap();
    }
    let out = s.storlab(&["fio", job.to_str().unwrap(), "--keep", "--output-format=json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours: Vec<PathBuf> = entries(&d).iter().map(|f| d.join(f)).collect();
    assert_eq!(ours.len(), 2, "{ours:?}");
    let (dup, z) = dedupe_and_compression(&ours);
    // Half the blocks are duplicates, as asked (fio's working set fills over time: it reaches
    // a little less on a job this short).
    assert!(
        (0.45..=0.55).contains(&dup),
        "storlab: {dup:.3} of the blocks repeat (fio: {fio_dup:.3})"
    );
    assert!((fio_dup - dup).abs() < 0.12, "storlab {dup:.3}, fio {fio_dup:.3}");
    assert!(
        (z - fio_z).abs() < 0.03,
        "zlib leaves {z:.3} of storlab's data, {fio_z:.3} of fio's"
    );
    assert!(z < 0.6, "half of each block compresses: {z:.3}");
    for f in &ours {
        std::fs::remove_file(f).unwrap();
    }
    // fio's default dedupe_mode=repeat, 30 %: a duplicate repeats the last unique block.
    let out = s.storlab(&[
        "fio",
        "--name=r",
        &format!("--directory={}", d.display()),
        "--rw=randwrite",
        "--bs=4k",
        "--size=8m",
        "--dedupe_percentage=30",
        "--keep",
        "--output-format=json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let ours: Vec<PathBuf> = entries(&d).iter().map(|f| d.join(f)).collect();
    let (dup, z) = dedupe_and_compression(&ours);
    assert!(
        (0.26..=0.34).contains(&dup),
        "{dup:.3} of the blocks repeat, 30 % asked"
    );
    assert!(z > 0.99, "random data does not compress: {z:.3}");
    for f in &ours {
        std::fs::remove_file(f).unwrap();
    }
}

/// write_lat_log: NAME_lat.1.log (and, for a synchronous engine, NAME_clat.1.log) in fio's log
/// format, one line per interval and direction, the interval's mean latency in ns: each line
/// is a stored sample's mean, and the means weighted by their I/Os give the phase's mean
/// latency per direction from its histogram (an independent tally of the same I/Os).
#[test]
fn latency_logs_hold_each_intervals_mean_in_fios_format() {
    let s = Scratch::new();
    let d = s.data();
    let out = Command::new(bin())
        .current_dir(s.path())
        .env("STORLAB_DB", s.db())
        .args([
            "fio",
            "--name=l",
            &format!("--filename={}", d.join("l.dat").display()),
            "--rw=randrw",
            "--bs=4k",
            "--size=8m",
            "--time_based",
            "--runtime=2",
            "--write_lat_log=l",
            "--log_avg_msec=250",
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = s.json(&["results", "show", "1", "--samples"]);
    let r = &run["phases"][0]["result"];
    let samples = measured_samples(r);
    for log in ["l_lat.1.log", "l_clat.1.log"] {
        let text = std::fs::read_to_string(s.path().join(log)).unwrap();
        let lines: Vec<Vec<f64>> = text
            .lines()
            .map(|l| l.split(", ").map(|v| v.parse().unwrap()).collect())
            .collect();
        assert!(
            lines.len() >= 14,
            "{log}: {} lines for 8 intervals of two directions",
            lines.len()
        );
        let mut at = 0;
        for smp in &samples {
            for (dir, key) in [(0.0, "lat_mean_read_ns"), (1.0, "lat_mean_write_ns")] {
                let Some(mean) = smp[key].as_f64() else { continue };
                let l = &lines[at];
                at += 1;
                assert_eq!(l[0], (smp["t_end"].as_f64().unwrap() * 1e3).round(), "{log}: time");
                assert_eq!((l[1], l[2], l[3], l[4]), (mean.round(), dir, 0.0, 0.0), "{log}: {l:?}");
            }
        }
        assert_eq!(at, lines.len(), "{log}: a line per interval and direction");
    }
    for (key, ops, whole) in [
        ("lat_mean_read_ns", "ops_read", "latency_read"),
        ("lat_mean_write_ns", "ops_written", "latency_write"),
    ] {
        let (sum, n) = samples.iter().fold((0.0, 0.0), |(s, n), x| {
            let o = x[ops].as_f64().unwrap();
            (s + x[key].as_f64().unwrap_or(0.0) * o, n + o)
        });
        let phase = r[whole]["mean_ns"].as_f64().unwrap();
        assert!(
            ((sum / n) - phase).abs() / phase < 0.01,
            "{key}: the intervals' means average to {:.1} ns, the phase's histogram says {phase:.1}",
            sum / n
        );
    }
    std::fs::remove_file(d.join("l.dat")).ok();
}

/// Runs fio (`prog` "fio") or storlab fio (`bin()`) in `dir` (made here; the logs land there)
/// with `args` on a file of its own in the scratch data directory, removed after.
fn run_in(s: &Scratch, prog: &str, dir: &Path, args: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut cmd = fio_command(s, prog);
    let file = s
        .data()
        .join(format!("{}.dat", dir.file_name().unwrap().to_string_lossy()));
    let out = cmd
        .current_dir(dir)
        .args(args)
        .arg(format!("--filename={}", file.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{prog} {args:?}: {}", stderr(&out));
    std::fs::remove_file(file).ok();
}

/// fio's latency value of histogram bin `i` (its lower edge; fio's stat.c plat_idx_to_val and
/// fiologparser_hist.py's `_plat_idx_to_val`, the test's own): below 128 a bin per ns, above
/// 64 bins per power of two.
fn fio_bin_value(i: usize) -> f64 {
    if i < 128 {
        return i as f64;
    }
    let error_bits = (i >> 6) - 1;
    let base = 1u64 << (error_bits + 6);
    (base + ((i & 63) as u64) * (1 << error_bits)) as f64
}

/// The value below which `q` of the I/Os counted in fio's `bins` lie (a bin's lower edge).
fn bins_quantile(bins: &[u64], q: f64) -> f64 {
    let total: u64 = bins.iter().sum();
    let mut seen = 0;
    for (i, n) in bins.iter().enumerate() {
        seen += n;
        if seen as f64 >= q * total as f64 {
            return fio_bin_value(i);
        }
    }
    f64::NAN
}

/// write_hist_log with log_hist_msec: NAME_clat_hist.1.log in fio's histogram log format, as
/// fio writes it beside (a line per whole interval and direction, fio's 1,856 bins after the
/// time, direction and block size). Each line's bins count exactly the I/Os the stored sample of
/// that interval and direction holds; the bins summed over the run put the median within a
/// bin's width of the stored histogram's; fio's own reader of these logs
/// (fiologparser_hist.py, from Debian's fio) reads storlab's file and counts the same I/Os.
/// With log_hist_coarseness=2 a line has a quarter of the bins; without log_hist_msec the file
/// is empty, as fio's.
/// The I/Os of a histogram-log line's interval and direction (`time ms, direction, …`) as the
/// stored sample ending at that time counts them.
fn stored_ops_of(samples: &[&Value], line: &[u64]) -> u64 {
    let smp = samples
        .iter()
        .find(|x| (x["t_end"].as_f64().unwrap() * 1e3).round() as u64 == line[0])
        .unwrap_or_else(|| panic!("no stored interval ends at {} ms", line[0]));
    smp[if line[1] == 0 { "ops_read" } else { "ops_written" }]
        .as_u64()
        .unwrap()
}

#[test]
fn histogram_logs_count_each_intervals_completions_in_fios_bins() {
    let s = Scratch::new();
    let job = [
        "--name=h",
        "--rw=randrw",
        "--bs=4k",
        "--size=8m",
        "--time_based",
        "--runtime=2",
    ];
    let run = |prog: &str, dir: &Path, extra: &[&str]| {
        let args: Vec<&str> = job
            .iter()
            .chain(&["--write_hist_log=h", "--output-format=json"])
            .chain(extra)
            .copied()
            .collect();
        run_in(&s, prog, dir, &args);
    };
    let lines_of = |path: PathBuf| -> Vec<Vec<u64>> {
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .map(|l| l.split(", ").map(|v| v.parse().unwrap()).collect())
            .collect()
    };
    let (ours, fios) = (s.path().join("storlab"), s.path().join("fio"));
    // With an averaged bandwidth log beside, its offset column asked for (log_offset=1).
    let beside = [
        "--log_hist_msec=250",
        "--write_bw_log=h",
        "--log_avg_msec=250",
        "--log_offset=1",
    ];
    run(bin(), &ours, &beside);
    run("fio", &fios, &beside);
    for dir in [&ours, &fios] {
        let bw = lines_of(dir.join("h_bw.1.log"));
        // storlab writes a line per whole 250 ms interval and direction: 7 each in 2 s. fio's
        // helper thread writes its windows as it gets the CPU, and on a loaded machine (a suite
        // with a soak beside it) it wrote 12: its file is here for its shape, not its count.
        let least = if dir == &ours { 14 } else { 2 };
        assert!(bw.len() >= least, "{}: {} bw lines", dir.display(), bw.len());
        for l in &bw {
            assert_eq!(
                l.len(),
                6,
                "{}: time, value, direction, size, offset, priority",
                dir.display()
            );
            assert_eq!(
                (l[3], l[4], l[5]),
                (0, 0, 0),
                "{}: an averaged line has no size or offset",
                dir.display()
            );
        }
    }
    let (mine, theirs) = (
        lines_of(ours.join("h_clat_hist.1.log")),
        lines_of(fios.join("h_clat_hist.1.log")),
    );
    // A line or more per direction from fio (its count depends on its helper thread, above).
    assert!(theirs.len() >= 2, "fio wrote {} lines", theirs.len());
    for (who, lines) in [("storlab", &mine), ("fio", &theirs)] {
        for l in lines.iter() {
            assert_eq!(
                l.len(),
                3 + 1856,
                "{who}: time, direction, block size and fio's 1,856 bins"
            );
            assert!(l[1] <= 1 && l[2] == 4096, "{who}: {:?}", &l[..3]);
        }
    }
    assert_eq!(
        mine.len(),
        16,
        "storlab: a line per direction for each of the 8 whole intervals"
    );

    // Each line against the stored sample of its interval (one worker: the phase's samples).
    let stored = s.json(&["results", "show", "1", "--samples"]);
    let r = &stored["phases"][0]["result"];
    let samples = measured_samples(r);
    let mut by_dir = [vec![0u64; 1856], vec![0u64; 1856]];
    for l in &mine {
        let ops = stored_ops_of(&samples, l);
        let counted: u64 = l[3..].iter().sum();
        assert_eq!(
            counted, ops,
            "at {} ms, direction {}: the bins count the interval's I/Os",
            l[0], l[1]
        );
        for (sum, n) in by_dir[l[1] as usize].iter_mut().zip(&l[3..]) {
            *sum += n;
        }
    }
    for (dir, key) in [(0, "latency_read"), (1, "latency_write")] {
        let median = bins_quantile(&by_dir[dir], 0.5);
        let p50 = r[key]["p50_ns"].as_f64().unwrap();
        // A bin spans 1/64 of its power of two above 128 ns: its lower edge is within 1/64 of
        // any value in it (and the stored histogram's own within 0.1 %).
        assert!(
            (median - p50).abs() / p50 < 1.0 / 64.0 + 0.002,
            "direction {dir}: the bins' median {median} ns, the stored p50 {p50} ns"
        );
    }

    // fio's own reader of histogram logs, over one window that holds the whole run.
    let parser = s.path().join("fiologparser_hist.py");
    let gz = Command::new("zcat")
        .arg("/usr/share/doc/fio/fiologparser_hist.py.gz")
        .output()
        .unwrap();
    assert!(
        gz.status.success(),
        "Debian's fio ships fiologparser_hist.py: {}",
        stderr(&gz)
    );
    std::fs::write(&parser, gz.stdout).unwrap();
    let out = Command::new("/usr/bin/python3")
        .arg(&parser)
        .args(["--directions", "rw", "-i", "60000"])
        .arg(ours.join("h_clat_hist.1.log"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fiologparser_hist.py (python3-pandas): {}",
        stderr(&out)
    );
    let text = stdout(&out);
    for (dir, tag) in [(0, "r"), (1, "w")] {
        let row: Vec<&str> = text
            .lines()
            .map(|l| l.split(", ").collect::<Vec<_>>())
            .find(|f| f.get(1) == Some(&tag))
            .unwrap_or_else(|| panic!("fiologparser_hist.py printed no {tag} row: {text}"));
        let samples: f64 = row[2].parse().unwrap();
        let counted: u64 = by_dir[dir].iter().sum();
        assert_eq!(
            samples.round() as u64,
            counted,
            "fiologparser_hist.py's {tag} samples: {text}"
        );
    }

    // Coarser bins, and no interval at all.
    run(
        bin(),
        &s.path().join("coarse"),
        &["--log_hist_msec=500", "--log_hist_coarseness=2"],
    );
    let coarse = lines_of(s.path().join("coarse/h_clat_hist.1.log"));
    assert_eq!(coarse.len(), 8, "4 whole intervals of 500 ms, two directions");
    assert!(
        coarse.iter().all(|l| l.len() == 3 + 1856 / 4),
        "a column for 4 of fio's bins"
    );
    // Two clones in one file (per_job_logs=0): each line counts both workers' I/Os of its
    // interval, as the phase's stored sample holds them together.
    run(
        bin(),
        &s.path().join("shared"),
        &["--log_hist_msec=500", "--numjobs=2", "--per_job_logs=0"],
    );
    let shared = lines_of(s.path().join("shared/h_clat_hist.log"));
    assert_eq!(shared.len(), 8, "4 whole intervals of 500 ms, two directions");
    let stored = s.json(&["results", "show", &s.last_run_id().to_string(), "--samples"]);
    let together = measured_samples(&stored["phases"][0]["result"]);
    for l in &shared {
        let ops = stored_ops_of(&together, l);
        assert_eq!(
            l[3..].iter().sum::<u64>(),
            ops,
            "both clones at {} ms, direction {}",
            l[0],
            l[1]
        );
    }
    run(bin(), &s.path().join("none"), &[]);
    run("fio", &s.path().join("fio-none"), &[]);
    for dir in ["none", "fio-none"] {
        let text = std::fs::read_to_string(s.path().join(dir).join("h_clat_hist.1.log")).unwrap();
        assert_eq!(text, "", "{dir}: without log_hist_msec the histogram log is empty");
    }
}

/// fio's logs without log_avg_msec (fio's default) have a line per I/O: `time, value,
/// direction, size, offset (log_offset=1), priority`. storlab fio writes the same five files
/// as fio beside it, each with a line per I/O and fio's columns; the lines recompute the stored
/// run: the latencies' count and mean per direction are the stored histogram's, slat + clat =
/// lat on every line, bw is fio's bytes × 10^6 / clat, iops 1, and the offsets are the
/// distinct blocks of the file that the sizes add up to.
#[test]
fn logs_without_log_avg_msec_have_a_line_per_io_as_fios() {
    let s = Scratch::new();
    let logs = ["bw", "iops", "lat", "slat", "clat"];
    let run = |prog: &str, dir: &Path| -> BTreeMap<String, Vec<Vec<u64>>> {
        let args = [
            "--name=p",
            "--rw=randrw",
            "--bs=4k",
            "--size=1m",
            "--io_size=256k",
            "--ioengine=libaio",
            "--iodepth=4",
            "--write_bw_log=p",
            "--write_iops_log=p",
            "--write_lat_log=p",
            "--log_offset=1",
            "--output-format=json",
        ];
        run_in(&s, prog, dir, &args);
        let mut found = BTreeMap::new();
        for what in logs {
            let path = dir.join(format!("p_{what}.1.log"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{prog}: {}: {e}", path.display()));
            let lines = text
                .lines()
                .map(|l| l.split(", ").map(|v| v.parse().unwrap()).collect())
                .collect();
            found.insert(what.to_string(), lines);
        }
        found
    };
    let ours = run(bin(), &s.path().join("storlab"));
    let fios = run("fio", &s.path().join("fio"));
    for what in logs {
        let (mine, theirs) = (&ours[what], &fios[what]);
        assert_eq!(theirs.len(), 64, "fio's {what} log: a line per I/O");
        assert_eq!(mine.len(), theirs.len(), "{what}: a line per I/O under both");
        assert!(
            mine.iter()
                .chain(theirs)
                .all(|l| l.len() == 6 && l[3] == 4096 && l[5] == 0),
            "{what}: time, value, direction, size, offset, priority"
        );
    }

    let stored = s.json(&["results", "show", "1"]);
    let r = &stored["phases"][0]["result"];
    let by_offset =
        |what: &str| -> BTreeMap<(u64, u64), &Vec<u64>> { ours[what].iter().map(|l| ((l[4], l[2]), l)).collect() };
    let (lat, slat, clat) = (by_offset("lat"), by_offset("slat"), by_offset("clat"));
    assert_eq!(lat.len(), 64, "each block once (fio's random map)");
    for (key, l) in &lat {
        let (sl, cl) = (slat[key], clat[key]);
        assert_eq!(sl[1] + cl[1], l[1], "offset {}: slat + clat = lat", key.0);
        assert!(
            sl[0] <= l[0],
            "offset {}: submitted at {} ms, done at {} ms",
            key.0,
            sl[0],
            l[0]
        );
        assert!(
            key.0 % 4096 == 0 && key.0 < 1 << 20,
            "offset {} in the 1 MiB file",
            key.0
        );
    }
    for (l, c) in ours["bw"].iter().zip(&ours["clat"]) {
        assert_eq!(l[4], c[4], "the bw and clat logs in the same order");
        assert_eq!(l[1], 4096 * 1_000_000 / c[1], "bw: bytes × 10^6 / clat");
    }
    assert!(ours["iops"].iter().all(|l| l[1] == 1));
    for (dir, ops, key) in [(0, "ops_read", "latency_read"), (1, "ops_written", "latency_write")] {
        let mine: Vec<u64> = ours["lat"].iter().filter(|l| l[2] == dir).map(|l| l[1]).collect();
        assert_eq!(
            mine.len() as u64,
            r[ops].as_u64().unwrap(),
            "direction {dir}: a line per stored I/O"
        );
        let mean = mine.iter().sum::<u64>() as f64 / mine.len() as f64;
        let stored_mean = r[key]["mean_ns"].as_f64().unwrap();
        // The stored mean is the histogram's: each value within its bucket's 0.1 %.
        assert!(
            (mean - stored_mean).abs() / stored_mean < 0.002,
            "direction {dir}: the log's mean {mean:.0} ns, the stored {stored_mean:.0} ns"
        );
    }

    // `storlab run --fio` writes no log files, so it keeps none of the I/Os (nor interval
    // histograms) that storlab fio keeps for them.
    let job = s.path().join("logs.fio");
    std::fs::write(
        &job,
        "[x]\nrw=randread\nsize=1m\nwrite_lat_log=x\nwrite_hist_log=x\nlog_hist_msec=500\n",
    )
    .unwrap();
    let parsed = |args: &[&str]| -> String {
        let out = Command::new(bin())
            .args(args)
            .arg(&job)
            .arg("--parse-only")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let (fio_toml, run_toml) = (parsed(&["fio"]), parsed(&["run", "--fio"]));
    for key in ["io_log = true", "interval_histograms = true"] {
        assert!(fio_toml.contains(key), "storlab fio keeps them: {fio_toml}");
        assert!(!run_toml.contains(key), "storlab run --fio does not: {run_toml}");
    }

    // fio-plot's log graph draws them, as it draws fio's per-I/O logs.
    let plot = s.path().join("plot");
    let name = "randread-iodepth-1-numjobs-1";
    let (bw, iops, lat) = (
        format!("--write_bw_log={name}"),
        format!("--write_iops_log={name}"),
        format!("--write_lat_log={name}"),
    );
    run_in(
        &s,
        bin(),
        &plot,
        &["--name=g", "--rw=randread", "--bs=4k", "--size=8m", &bw, &iops, &lat],
    );
    let fio_plot = std::env::var("FIO_PLOT").unwrap_or_else(|_| "fio-plot".into());
    let png = s.path().join("per-io.png");
    let out = Command::new(&fio_plot)
        .arg("-i")
        .arg(&plot)
        .args([
            "-T", "per I/O", "-g", "-t", "bw", "iops", "lat", "-r", "randread", "-d", "1", "-n", "1", "-o",
        ])
        .arg(&png)
        .output()
        .unwrap_or_else(|e| panic!("{fio_plot}: {e} (scripts/test installs fio-plot and sets $FIO_PLOT)"));
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(png.exists(), "fio-plot drew {}", png.display());
}

/// fio's continue_on_error with ignore_error (enospc-pressure.fio's ENOSPC): on a 16 MiB ext4 a
/// 32 MiB write goes on past every write the full filesystem refuses, counting them, exactly
/// as fio does beside it; without ignore_error, ENOSPC is not among the errors fio (or
/// storlab) goes on past by default (EIO, EILSEQ) and ends the job.
#[test]
fn continue_on_error_goes_on_past_the_errors_fio_goes_on_past() {
    let s = Scratch::new();
    let point = s.path().join("mnt");
    std::fs::create_dir(&point).unwrap();
    let _fs = loop_filesystem("mkfs.ext4", 16 << 20, &point);
    let file = point.join("e.dat");
    let job = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "--name=e",
            "--rw=write",
            "--bs=64k",
            "--size=32m",
            "--fallocate=none",
            "--continue_on_error=write",
            "--output-format=json",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        a.push(format!("--filename={}", file.display()));
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let fio = Command::new("fio")
        .args(job(&["--ignore_error=,ENOSPC"]))
        .output()
        .unwrap();
    let fio: Value = serde_json::from_slice(&fio.stdout).unwrap();
    let theirs = &fio["jobs"][0];
    std::fs::remove_file(&file).unwrap();
    let mut args = vec!["fio".to_string()];
    args.extend(job(&["--ignore_error=,ENOSPC"]));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.storlab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = &doc["jobs"][0];
    assert!(theirs["total_err"].as_u64().unwrap() > 100, "{}", theirs["total_err"]);
    for k in ["total_err", "first_error", "error"] {
        assert_eq!(ours[k], theirs[k], "{k}");
    }
    assert_eq!(ours["write"]["io_bytes"], theirs["write"]["io_bytes"]);
    let shown = stdout(&s.storlab(&["results", "show", "1"]));
    assert!(
        shown.contains(&format!(
            "{} I/O ERRORS gone past (No space left on device",
            theirs["total_err"]
        )),
        "{shown}"
    );
    // Exported and imported back: the same count.
    let run = s.json(&["results", "show", "1"]);
    assert_eq!(run["phases"][0]["result"]["errors"]["count"], theirs["total_err"]);

    // Without ignore_error: the first ENOSPC ends the job, in fio and in storlab.
    std::fs::remove_file(&file).ok();
    let fio = Command::new("fio").args(job(&[])).output().unwrap();
    // fio prints the error it stopped at on stdout, before its document.
    let text = String::from_utf8(fio.stdout).unwrap();
    let fio: Value = serde_json::from_str(&text[text.find("\n{").map_or(0, |i| i + 1)..]).unwrap();
    assert_eq!(fio["jobs"][0]["total_err"], 1);
    std::fs::remove_file(&file).ok();
    let mut args = vec!["fio".to_string()];
    args.extend(job(&[]));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.storlab(&args);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("No space left on device"), "{}", stderr(&out));
    std::fs::remove_file(&file).ok();
}

/// The kernel's block_rq_issue tracepoint (tracefs) for one device while it is alive: each
/// request the device was issued, with the I/O priority it carried. Turned off and cleared
/// when dropped.
struct RequestTrace {
    dir: PathBuf,
}

impl RequestTrace {
    fn on(dev: &str) -> RequestTrace {
        let dir = PathBuf::from("/sys/kernel/tracing");
        if !dir.join("events/block/block_rq_issue").exists() {
            let m = Command::new("mount")
                .args(["-t", "tracefs", "nodev"])
                .arg(&dir)
                .status()
                .unwrap();
            assert!(m.success(), "mount tracefs");
        }
        let st = Command::new("stat").args(["-L", "-c", "%t %T", dev]).output().unwrap();
        let st = stdout(&st);
        let mut it = st.split_whitespace().map(|h| u64::from_str_radix(h, 16).unwrap());
        let (major, minor) = (it.next().unwrap(), it.next().unwrap());
        let ev = dir.join("events/block/block_rq_issue");
        std::fs::write(ev.join("filter"), format!("dev == {}", (major << 20) | minor)).unwrap();
        std::fs::write(dir.join("trace"), "").unwrap();
        std::fs::write(ev.join("enable"), "1").unwrap();
        RequestTrace { dir }
    }

    /// The trace as the kernel wrote it, the tracepoint turned off first.
    fn raw(&self) -> String {
        std::fs::write(self.dir.join("events/block/block_rq_issue/enable"), "0").unwrap();
        String::from_utf8_lossy(&std::fs::read(self.dir.join("trace")).unwrap()).to_string()
    }

    /// Each request's (direction, bytes, priority as `class,hint,level`).
    fn requests(&self) -> Vec<(String, u64, String)> {
        let text = self.raw();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let rest = l.split("block_rq_issue: ").nth(1)?;
                let f: Vec<&str> = rest.split_whitespace().collect();
                // 7,0 R 131072 () 512 + 256 idle,0,4 [storlab]
                Some((f[1].to_string(), f[2].parse().ok()?, f[7].to_string()))
            })
            .collect()
    }
}

impl Drop for RequestTrace {
    fn drop(&mut self) {
        let ev = self.dir.join("events/block/block_rq_issue");
        let _ = std::fs::write(ev.join("enable"), "0");
        let _ = std::fs::write(ev.join("filter"), "0");
        let _ = std::fs::write(self.dir.join("trace"), "");
    }
}

/// cmdprio-percentage.fio on a loop device: 20 % of its reads carry the real-time class on
/// the request itself (io_uring's per-request ioprio), the others the job's idle class
/// (prioclass=3), as the kernel's block layer sees each request issued, beside fio's own run.
#[test]
fn a_share_of_the_requests_carries_its_own_priority_as_the_kernel_sees_it() {
    let s = Scratch::new();
    let dev = loop_device_with(&s.path().join("disk.img"), 256 << 20, true);
    let text = std::fs::read_to_string(example("cmdprio-percentage.fio"))
        .unwrap()
        .replace("/dev/sda", &dev.dev)
        .replace("write_lat_log=prio-run.log", "")
        .replace("log_prio=1", "");
    let job = s.path().join("cmdprio.fio");
    std::fs::write(&job, text).unwrap();
    let share = |reqs: &[(String, u64, String)]| -> (usize, f64) {
        let reads: Vec<_> = reqs.iter().filter(|r| r.0 == "R" && r.1 == 128 << 10).collect();
        let rt = reads.iter().filter(|r| r.2 == "rt,0,0").count();
        // The idle class has no levels (ioprio_set(2)): whatever level it shows.
        let idle = reads.iter().filter(|r| r.2.starts_with("idle,")).count();
        assert_eq!(
            rt + idle,
            reads.len(),
            "every request rt or idle: {:?}",
            &reads[..5.min(reads.len())]
        );
        (reads.len(), rt as f64 / reads.len().max(1) as f64)
    };
    // One pass over the 256 MiB device in 128 KiB reads: 2048 requests.
    let trace = RequestTrace::on(&dev.dev);
    let out = s.storlab(&[
        "fio",
        job.to_str().unwrap(),
        "--allow-device",
        &dev.dev,
        "--output-format=json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (n, rt) = share(&trace.requests());
    drop(trace);
    assert_eq!(n, 2048, "one pass of 128 KiB reads");
    // Binomial: sd of the share over 2048 requests is 0.009; 0.2 ± 0.045 is five of them.
    assert!(
        (rt - 0.2).abs() < 0.045,
        "{rt:.3} of the requests real-time, 20 % asked"
    );
    let trace = RequestTrace::on(&dev.dev);
    let fio = Command::new("fio")
        .arg(&job)
        .arg("--output-format=json")
        .output()
        .unwrap();
    assert!(fio.status.success(), "{}", stderr(&fio));
    let (fio_n, fio_rt) = share(&trace.requests());
    assert_eq!(fio_n, 2048, "fio: one pass too");
    assert!((fio_rt - 0.2).abs() < 0.045, "fio: {fio_rt:.3}");
}

/// latency-profile.fio on a loop device (its 5 s windows scaled to 0.2 s): fio's latency
/// target search doubles the queue depth while 99.9 % of the reads meet the target, bisects on
/// a miss, and measures one window where it settles. A target every depth meets settles at
/// iodepth, as fio's does beside it; one no depth meets, at depth 1, reported as not met; the
/// share within the target is the phase's, recomputed from the json+ latency bins.
#[test]
fn a_latency_target_finds_the_depth_that_meets_it_as_fio_does() {
    let s = Scratch::new();
    let dev = loop_device_with(&s.path().join("disk.img"), 256 << 20, true);
    let job = |target_us: u64| -> PathBuf {
        let text = std::fs::read_to_string(example("latency-profile.fio"))
            .unwrap()
            .replace("/dev/sda", &dev.dev)
            .replace("latency_target=500000", &format!("latency_target={target_us}"))
            .replace(
                "latency_window=5000000",
                "latency_window=200000\ntime_based\nruntime=30",
            );
        let p = s.path().join(format!("lat{target_us}.fio"));
        std::fs::write(&p, text).unwrap();
        p
    };
    let run = |file: &PathBuf, id: &str| -> (Value, Value) {
        let out = s.storlab(&[
            "fio",
            file.to_str().unwrap(),
            "--allow-device",
            &dev.dev,
            "--output-format=json+",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        (
            serde_json::from_slice(&out.stdout).unwrap(),
            s.json(&["results", "show", id, "--samples"]),
        )
    };
    // 500 s: every depth meets it; the search doubles to iodepth and settles there.
    let easy = job(500_000_000);
    let (doc, shown) = run(&easy, "1");
    let ls = &shown["phases"][0]["result"]["latency_search"];
    assert_eq!(ls["depths"][0], 128, "{ls}");
    assert_eq!(ls["met"], true);
    assert_eq!(doc["jobs"][0]["latency_depth"], 128);
    let fio = Command::new("fio")
        .arg(&easy)
        .arg("--output-format=json")
        .output()
        .unwrap();
    assert!(fio.status.success(), "{}", stderr(&fio));
    let fio: Value = serde_json::from_slice(&fio.stdout).unwrap();
    assert_eq!(fio["jobs"][0]["latency_depth"], 128, "fio settles there too");
    // The search is a ramp: the measured part is the last interval (one window, at least one
    // sample interval), the intervals before it are marked ramp and left out.
    let r = &shown["phases"][0]["result"];
    let samples = r["samples"].as_array().unwrap();
    assert!(
        samples.iter().any(|x| x["ramp"] == true),
        "the search's intervals are ramp"
    );
    let measured: u64 = samples
        .iter()
        .filter(|x| x["ramp"] == false)
        .map(|x| x["ops_read"].as_u64().unwrap())
        .sum();
    assert_eq!(
        measured,
        r["ops_read"].as_u64().unwrap(),
        "the phase is its measured intervals"
    );
    // One sample interval (fio's bwavgtime, 500 ms, which storlab fio samples at) is longer
    // than the 0.2 s window: the measured part is that interval.
    let secs = r["all_done"]["seconds"].as_f64().unwrap();
    assert!((0.45..1.1).contains(&secs), "{secs} s measured");

    // 1 µs: not even depth 1 meets it: measured at depth 1, not met, nothing within.
    let (doc, shown) = run(&job(1), "2");
    let ls = &shown["phases"][0]["result"]["latency_search"];
    assert_eq!(
        (ls["depths"][0].as_u64(), ls["met"].as_bool()),
        (Some(1), Some(false)),
        "{ls}"
    );
    assert_eq!(ls["within_percent"], 0.0);
    assert!(stdout(&s.storlab(&["results", "show", "2"])).contains("(NOT MET)"));
    // The share within the target, from json+'s bins (fio's lat_ns bins: value ns -> count).
    let bins = doc["jobs"][0]["read"]["lat_ns"]["bins"].as_object().unwrap();
    let total: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(total, shown["phases"][0]["result"]["ops_read"].as_u64().unwrap());
    // A target in the middle of this phase's latencies: the share under it from the bins.
    let (doc, shown) = run(&job(200), "3");
    let ls = &shown["phases"][0]["result"]["latency_search"];
    let bins = doc["jobs"][0]["read"]["lat_ns"]["bins"].as_object().unwrap();
    let total: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
    // Each bin is a range (fio names it by its middle; 2,048 ns wide near 200 µs): the I/Os
    // surely within are those of bins wholly under the target, those maybe within add the bin
    // the target falls in; the share reported lies between.
    let range = |v: u64| -> (u64, u64) {
        if v < 128 {
            return (v, v);
        }
        let width = 1u64 << (63 - v.leading_zeros() - 6);
        let lower = v - width / 2;
        (lower, lower + width - 1)
    };
    let count = |keep: &dyn Fn((u64, u64)) -> bool| -> u64 {
        bins.iter()
            .filter(|(k, _)| keep(range(k.parse::<u64>().unwrap())))
            .map(|(_, c)| c.as_u64().unwrap())
            .sum()
    };
    let surely = count(&|(_, hi)| hi <= 200_000) as f64 / total as f64 * 100.0;
    let maybe = count(&|(lo, _)| lo <= 200_000) as f64 / total as f64 * 100.0;
    let reported = ls["within_percent"].as_f64().unwrap();
    assert!(
        surely - 0.01 <= reported && reported <= maybe + 0.01,
        "{reported} % reported within, {surely:.3} to {maybe:.3} % from the bins"
    );
    assert_eq!(
        ls["met"].as_bool().unwrap(),
        ls["within_percent"].as_f64().unwrap() >= 99.9
    );
}

/// fio's 37 examples that use a local engine (all in tests/fixtures/fio-examples): 31 run on
/// storlab's engine, in a scratch directory (`--target`), 16 MiB per file and a second per
/// timed phase, each moving data in every phase but zbd-seq-read, which reads only what was
/// written and finds nothing in zones no job wrote, as fio finds nothing there; the 6 others
/// are refused before anything runs, naming the option and its line. Four are scaled in their
/// text first, as their own tests scale them: 1mbs_clients (1250 B/s clients starting up to 2
/// minutes apart), latency-profile (5 s windows), cross-stripe-verify (30 regions 124 GiB
/// apart), zbd-seq-read (256 MiB zones from 131 GiB in).
#[test]
fn thirty_one_of_fios_thirty_seven_local_examples_run() {
    let s = Scratch::new();
    let runs = [
        "1mbs_clients.fio",
        "aio-read.fio",
        "backwards-read.fio",
        "basic-verify.fio",
        "butterfly.fio",
        "cmdprio-percentage.fio",
        "cross-stripe-verify.fio",
        "dedupe-global.fio",
        "disk-zone-profile.fio",
        "exitwhat.fio",
        "fio-rand-RW.fio",
        "fio-rand-read.fio",
        "fio-rand-write.fio",
        "fio-seq-RW.fio",
        "fio-seq-read.fio",
        "fio-seq-write.fio",
        "fixed-rate-submission.fio",
        "flow.fio",
        "fsx.fio",
        "iometer-file-access-server.fio",
        "jesd219.fio",
        "latency-profile.fio",
        "poisson-rate-submission.fio",
        "rand-zones.fio",
        "ssd-steadystate.fio",
        "ssd-test.fio",
        "steadystate.fio",
        "surface-scan.fio",
        "tiobench-example.fio",
        "waitfor.fio",
        "zbd-seq-read.fio",
    ];
    let refused = [
        ("cmdprio-bssplit.fio", ":19: fio option 'cmdprio_bssplit'"),
        ("enospc-pressure.fio", ":35: rw=randtrim"),
        (
            "numa.fio",
            ":19: numa_cpu_nodes=0-1: NUMA node 1 is not on this machine",
        ),
        ("zbd-rand-write-trim-gc.fio", ":38: wait_for=warmup"),
        (
            "zbd-rand-write-zone-reset-gc.fio",
            ":26: fio option 'zone_reset_threshold'",
        ),
        ("zbd-rand-write.fio", ":11: fio option 'max_open_zones'"),
    ];
    assert_eq!(runs.len() + refused.len(), 37);
    for name in runs {
        let d = s.data();
        let mut text = std::fs::read_to_string(example(name)).unwrap();
        let mut size = Some("16m");
        match name {
            "1mbs_clients.fio" => {
                text = text.replace("size=32m", "size=8k");
                for n in (4..=124).step_by(4) {
                    text = text.replace(&format!("startdelay={n}\n"), "startdelay=0\n");
                }
                size = None;
            }
            "latency-profile.fio" => text = text.replace("latency_window=5000000", "latency_window=100000"),
            "cross-stripe-verify.fio" => {
                text = text
                    .replace("offset_increment=124g", "offset_increment=1m")
                    .replace("io_size=120g", "io_size=256k");
                size = Some("1m");
            }
            "zbd-seq-read.fio" => {
                text = text
                    .replace("zonesize=256M", "zonesize=1M")
                    .replace("offset=140660178944", "offset=4m");
            }
            _ => {}
        }
        let file = s.path().join(name);
        std::fs::write(&file, text).unwrap();
        let mut args = vec!["run", "--fio", file.to_str().unwrap(), "--target", d.to_str().unwrap()];
        if let Some(sz) = size {
            args.extend(["--size", sz]);
        }
        // latency-profile settles within a few windows of 0.1 s; the rest run a second.
        args.extend([
            "--runtime",
            if name == "latency-profile.fio" { "10s" } else { "1s" },
            "--json",
            "-q",
        ]);
        let out = s.storlab(&args);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let run: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(run["status"], "ok", "{name}");
        for p in run["phases"].as_array().unwrap() {
            let r = &p["result"];
            let moved = r["bytes_read"].as_u64().unwrap() + r["bytes_written"].as_u64().unwrap();
            if name == "zbd-seq-read.fio" {
                assert_eq!(moved, 0, "{name}: emulated zones no job wrote hold nothing to read");
            } else {
                assert!(moved > 0, "{name}: phase {} moved nothing", p["kind"]);
            }
        }
        assert!(entries(&d).is_empty(), "{name}: its files are removed");
    }
    for (name, needle) in refused {
        let out = s.storlab(&[
            "run",
            "--fio",
            example(name).to_str().unwrap(),
            "--target",
            s.data().to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{name}{needle}")),
            "{name}: {}",
            stderr(&out)
        );
    }
}

/// The data calls of a traced command on the files in `dir`: (the file's number in the order
/// the calls first reach it, the file's name, offset), for calls of `len` bytes named `call`.
fn data_calls(trace: &std::path::Path, dir: &std::path::Path, call: &str, len: u64) -> Vec<(usize, String, u64)> {
    let mut names: Vec<String> = Vec::new();
    let prefix = format!("{}/", dir.display());
    std::fs::read_to_string(trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("{call}(")) && l.contains(&format!(", {len}, ")))
        .filter_map(|l| {
            let at = l.find(&prefix)?;
            let name = l[at + prefix.len()..].split('>').next()?.to_string();
            let off: u64 = l.rsplit(", ").next()?.split(')').next()?.trim().parse().ok()?;
            let n = match names.iter().position(|x| *x == name) {
                Some(n) => n,
                None => {
                    names.push(name.clone());
                    names.len() - 1
                }
            };
            Some((n, name, off))
        })
        .collect()
}

/// Runs `program` (fio, or storlab fio) under strace with fio's options, in a directory of
/// its own; returns the trace's data calls on that directory's files, and the JSON printed.
fn traced(s: &Scratch, who: &str, opts: &[&str], call: &str) -> (Vec<(usize, String, u64)>, Value) {
    let dir = s.path().join(format!("files-{who}"));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = s.path().join(format!("{who}.trace"));
    let mut c = Command::new("strace");
    c.args(["-f", "-qq", "-y", "-e", "trace=pwrite64,pread64", "-o"])
        .arg(&trace);
    if who == "fio" {
        c.arg("fio");
    } else {
        // --keep: storlab removes the files it made unless told, fio leaves them.
        c.arg(bin()).arg("fio").arg("--keep").env("STORLAB_DB", s.db());
    }
    c.arg("--name=nf")
        .arg(format!("--directory={}", dir.display()))
        .args(opts)
        .arg("--output-format=json")
        .current_dir(s.path());
    let out = c.output().expect("strace");
    assert!(out.status.success(), "{who}: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let json: Value =
        serde_json::from_str(&text[text.find('{').unwrap_or(0)..]).unwrap_or_else(|e| panic!("{who}: {e}: {text}"));
    let calls = data_calls(&trace, &dir, call, 4096);
    (calls, json)
}

/// fio's nrfiles, filesize ranges and file_service_type: a job with several files serves them
/// in the order fio does — seen in the system calls of both (strace): round robin one I/O per
/// file, round robin two at a time, or one file after another — and a range of file sizes
/// gives each file a size in the range, a multiple of the block, with the pass bounded by
/// `size` across them, each block read at most once (the random map, per file).
#[test]
fn several_files_per_job_are_served_in_the_order_fio_serves_them() {
    let s = Scratch::new();
    for service in [None, Some("roundrobin:2"), Some("sequential")] {
        let mut opts = vec!["--rw=write", "--bs=4k", "--nrfiles=3", "--size=48k"];
        let st = service.map(|v| format!("--file_service_type={v}"));
        if let Some(st) = &st {
            opts.push(st);
        }
        let (fio, _) = traced(&s, "fio", &opts, "pwrite64");
        let (mine, json) = traced(&s, "storlab", &opts, "pwrite64");
        let order = |v: &[(usize, String, u64)]| v.iter().map(|(n, _, o)| (*n, *o)).collect::<Vec<_>>();
        assert_eq!(fio.len(), 12, "{service:?}: fio's 12 writes of 4 KiB: {fio:?}");
        assert_eq!(order(&mine), order(&fio), "{service:?}: storlab writes in fio's order");
        assert_eq!(json["jobs"][0]["write"]["io_bytes"].as_u64(), Some(48 << 10), "{json}");
        for d in ["files-fio", "files-storlab"] {
            let _ = std::fs::remove_dir_all(s.path().join(d));
        }
    }

    // A range of file sizes, random reads, a random file after every 4 I/Os; size (256 KiB,
    // less than three files of 96 KiB or more) bounds the pass. The same properties hold for fio's run and storlab's.
    let opts = [
        "--rw=randread",
        "--bs=4k",
        "--nrfiles=3",
        "--filesize=96k-192k",
        "--size=256k",
        "--file_service_type=random:4",
        "--randrepeat=0",
    ];
    for who in ["fio", "storlab"] {
        let (calls, json) = traced(&s, who, &opts, "pread64");
        let dir = s.path().join(format!("files-{who}"));
        let mut sizes = BTreeMap::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            sizes.insert(
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            );
        }
        assert_eq!(sizes.len(), 3, "{who}: three files {sizes:?}");
        for (name, len) in &sizes {
            assert!(
                (96 << 10..=192 << 10).contains(len) && len % 4096 == 0,
                "{who}: {name} is {len} bytes: in the range and a multiple of the block"
            );
        }
        assert_eq!(calls.len(), 64, "{who}: 256 KiB in 4 KiB reads: {calls:?}");
        assert_eq!(
            json["jobs"][0]["read"]["io_bytes"].as_u64(),
            Some(256 << 10),
            "{who}: {json}"
        );
        let mut seen = std::collections::BTreeSet::new();
        for (_, name, off) in &calls {
            assert!(
                off + 4096 <= sizes[name],
                "{who}: {name} read at {off}, within its size"
            );
            assert!(
                seen.insert((name.clone(), *off)),
                "{who}: {name} at {off} read once (the random map)"
            );
        }
        // Runs of four reads on one file: a run on one file is a multiple of 4 I/Os long,
        // unless it ends because that file's pass is done (every block read) or the job is.
        let mut read_of: BTreeMap<&str, u64> = BTreeMap::new();
        let mut i = 0;
        while i < calls.len() {
            let name = calls[i].1.as_str();
            let run = calls[i..].iter().take_while(|c| c.1 == name).count();
            *read_of.entry(name).or_default() += run as u64;
            let file_done = read_of[name] * 4096 == sizes[name];
            assert!(
                run % 4 == 0 || file_done || i + run == calls.len(),
                "{who}: a run of {run} on {name} at I/O {i}: {calls:?}"
            );
            i += run;
        }
        let used: std::collections::BTreeSet<usize> = calls.iter().map(|c| c.0).collect();
        assert!(used.len() >= 2, "{who}: the files drawn at random: {calls:?}");
    }
}

/// A directory holding a link named `fio` to this build's storlab, as the packages install it
/// for drivers of fio.
fn fio_link(s: &Scratch) -> PathBuf {
    let dir = s.path().join("fio-bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(bin(), dir.join("fio")).unwrap();
    dir.join("fio")
}

#[test]
fn storlab_called_fio_answers_as_fio_does_version_stderr_and_exit_codes() {
    let s = Scratch::new();
    let data = s.data();
    let fio = fio_link(&s);
    let run = |prog: &std::path::Path, args: &[&str]| {
        Command::new(prog)
            .args(args)
            .env("STORLAB_DB", s.db())
            .current_dir(s.path())
            .output()
            .unwrap()
    };
    // --version in fio's form, as drivers parse it (the real fio's beside it).
    let real = run(std::path::Path::new("fio"), &["--version"]);
    let ours = run(&fio, &["--version"]);
    let version = |o: &Output| stdout(o).trim().to_string();
    assert!(version(&real).starts_with("fio-3."), "{}", version(&real));
    assert!(
        version(&ours).starts_with("fio-3.") && !version(&ours).contains(' '),
        "{}",
        version(&ours)
    );
    assert_eq!(s.storlab(&["fio", "--version"]).stdout, ours.stdout);
    assert!(stdout(&s.storlab(&["--version"])).starts_with("storlab "));

    // A job fio runs without a word on stderr runs without one here — even one storlab takes
    // with a note (ioengine=sync runs as psync) — and the note is in the stored run.
    let dir = format!("--directory={}", data.display());
    let job = [
        "--name=quiet",
        "--rw=randread",
        "--bs=4k",
        "--size=2m",
        "--ioengine=sync",
        dir.as_str(),
        "--output-format=json",
    ];
    let real = run(std::path::Path::new("fio"), &job);
    assert!(
        real.status.success() && real.stderr.is_empty(),
        "fio: {}",
        stderr(&real)
    );
    // fio keeps the file it laid out.
    std::fs::remove_file(data.join("quiet.0.0")).unwrap();
    let ours = run(&fio, &job);
    assert!(ours.status.success(), "{}", stderr(&ours));
    assert!(ours.stderr.is_empty(), "stderr: {}", stderr(&ours));
    let doc: Value = serde_json::from_slice(&ours.stdout).expect("stdout is fio's JSON alone");
    assert_eq!(doc["jobs"][0]["jobname"], "quiet");
    let stored = s.json(&["results", "show", "1"]);
    assert!(
        stored["job"]["job"]["notes"].to_string().contains("ioengine=sync"),
        "{stored}"
    );
    // Asked for, the notes are said.
    let mut loud = job.to_vec();
    loud.push("--storlab-notes");
    let said = run(&fio, &loud);
    assert!(stderr(&said).contains("ioengine=sync"), "{}", stderr(&said));

    // Refusals exit as fio's do: 1, said on stderr as fio says them.
    for bad in [&["--name=x", "--bogus=1"][..], &[][..]] {
        let real = run(std::path::Path::new("fio"), bad);
        let ours = run(&fio, bad);
        assert_eq!(ours.status.code(), real.status.code(), "{bad:?}: {}", stderr(&ours));
        assert!(stderr(&ours).starts_with("fio: "), "{bad:?}: {}", stderr(&ours));
    }
    // The files fio leaves: the job's, named as fio names it.
    assert_eq!(entries(&data), ["quiet.0.0"], "what fio leaves");
}

/// random_distribution=zipf:1.2, pareto:0.2, normal:10 and zoned_abs (60 % of the reads in
/// the first 6 MiB, the rest in the next 26 MiB, none beyond) on a loop device, storlab fio
/// beside fio: the most-read tenth of the blocks read takes the same share of the reads (within
/// 2 points, as the kernel's block layer saw each request), far above what uniform offsets give.
#[test]
fn skewed_offsets_make_the_hot_blocks_fio_makes() {
    let s = Scratch::new();
    let dev = loop_device_with(&s.path().join("disk.img"), 64 << 20, true);
    // 16,384 reads of 4 KiB over the device's 16,384 blocks, as fio-genzipf counts them.
    let job = |dist: &str| -> PathBuf {
        let p = s.path().join(format!("{}.fio", dist.replace([':', '/'], "-")));
        std::fs::write(
            &p,
            format!(
                "[skew]\nfilename={}\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nnumber_ios=16384\nrandom_distribution={dist}\n",
                dev.dev
            ),
        )
        .unwrap();
        p
    };
    // The share of the reads on the most-read tenth of the blocks read (fio-genzipf's "Top").
    let hot_tenth = |trace: RequestTrace| -> f64 {
        let mut hits: BTreeMap<u64, u64> = BTreeMap::new();
        let text = trace.raw();
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let Some(rest) = l.split("block_rq_issue: ").nth(1) else {
                continue;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f[1].starts_with('R') && f[2] == "4096" {
                *hits.entry(f[4].parse().unwrap()).or_default() += 1;
            }
        }
        let total: u64 = hits.values().sum();
        assert!(
            total >= 16_000,
            "{total} reads of 4 KiB seen: {:?}",
            text.lines().filter(|l| !l.starts_with('#')).take(3).collect::<Vec<_>>()
        );
        let mut counts: Vec<u64> = hits.into_values().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let tenth = (counts.len() - 1) / 10 + 1;
        counts[..tenth].iter().sum::<u64>() as f64 / total as f64 * 100.0
    };
    for (dist, at_least) in [
        ("zipf:1.2", 60.0),
        ("pareto:0.2", 40.0),
        ("normal:10", 15.0),
        ("zoned_abs:60/6m:40/26m", 18.0),
        ("random", 0.0),
    ] {
        let file = job(dist);
        let trace = RequestTrace::on(&dev.dev);
        let out = s.storlab(&[
            "fio",
            file.to_str().unwrap(),
            "--allow-device",
            &dev.dev,
            "--output-format=json",
        ]);
        assert!(out.status.success(), "{dist}: {}", stderr(&out));
        let ours = hot_tenth(trace);
        let trace = RequestTrace::on(&dev.dev);
        let fio = Command::new("fio")
            .arg(&file)
            .arg("--output-format=json")
            .output()
            .unwrap();
        assert!(fio.status.success(), "fio {dist}: {}", stderr(&fio));
        let theirs = hot_tenth(trace);
        eprintln!("{dist}: the hot tenth takes {ours:.2} % of storlab's reads, {theirs:.2} % of fio's");
        assert!(
            (ours - theirs).abs() <= 2.0,
            "{dist}: the hot tenth takes {ours:.2} % of storlab's reads, {theirs:.2} % of fio's"
        );
        if dist == "random" {
            // Uniform offsets: no tenth stands out (a tenth of the blocks read, a fifth at most).
            assert!(ours < 20.0, "uniform: {ours:.2} %");
        } else {
            assert!(ours > at_least, "{dist}: {ours:.2} %");
        }
    }
}

/// fdatasync=1 (etcd's disk check, cut small) on ext4 over a loop device: storlab issues
/// fdatasync(2) on its file where fio does — before every write after the first, none after the
/// last (strace counts both) — and never fsync(2); a write's latency holds no flush (the flush
/// is timed apart), so the writes' mean stays far under the flushes'.
#[test]
fn fdatasync_is_the_call_fio_makes_and_no_write_latency_holds_it() {
    let s = Scratch::new();
    let mnt = s.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let _fs = loop_filesystem("mkfs.ext4", 64 << 20, &mnt);
    let dir = format!("--directory={}", mnt.display());
    let job = [
        "--rw=write",
        "--ioengine=sync",
        "--fdatasync=1",
        dir.as_str(),
        "--size=1m",
        "--bs=4k",
        "--name=mytest",
        "--output-format=json",
    ];
    // Each tool under strace: its fdatasync and fsync calls on files under the mount.
    let calls = |prog: &str, pre: &[&str], log: &std::path::Path| -> (usize, usize, Output) {
        let out = Command::new("strace")
            .args(["-f", "-y", "-e", "trace=fsync,fdatasync", "-o"])
            .arg(log)
            .arg(prog)
            .args(pre)
            .args(job)
            .env("STORLAB_DB", s.db())
            .output()
            .unwrap();
        let text = std::fs::read_to_string(log).unwrap();
        let on = |call: &str| {
            text.lines()
                .filter(|l| l.contains(&format!("{call}(")) && l.contains(mnt.to_str().unwrap()))
                .count()
        };
        (on("fdatasync"), on("fsync"), out)
    };
    let (fio_datasyncs, fio_fsyncs, fio) = calls("fio", &[], &s.path().join("fio.strace"));
    assert!(fio.status.success(), "{}", stderr(&fio));
    assert_eq!((fio_datasyncs, fio_fsyncs), (255, 0), "fio: 256 writes");
    for f in std::fs::read_dir(&mnt).unwrap() {
        let _ = std::fs::remove_file(f.unwrap().path());
    }
    let (ours, our_fsyncs, out) = calls(bin(), &["fio"], &s.path().join("storlab.strace"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        (ours, our_fsyncs),
        (fio_datasyncs, fio_fsyncs),
        "storlab's calls against fio's"
    );
    // The writes' latency against the flushes' time, as stored.
    let run = s.json(&["results", "show", "1"]);
    let r = &run["phases"][0]["result"];
    let flush_each = r["workers"][0]["flush_seconds"].as_f64().unwrap() / ours as f64 * 1e9;
    let write_mean = r["latency"]["mean_ns"].as_f64().unwrap();
    assert!(
        write_mean < flush_each / 2.0,
        "a write takes {write_mean:.0} ns on average, a flush {flush_each:.0} ns: the writes hold the flushes"
    );
}

/// etcd's documented disk check (`fio --rw=write --ioengine=sync --fdatasync=1 --directory=DIR
/// --size=22m --bs=2300 --name=mytest`), cut to 2 MiB: a size that is not a multiple of bs ends
/// where fio ends it, at the last whole block — the same writes and bytes as fio's.
#[test]
fn etcds_disk_check_ends_at_the_last_whole_block_as_fio_does() {
    let s = Scratch::new();
    let data = s.data();
    let dir = format!("--directory={}", data.display());
    let job = [
        "--rw=write",
        "--ioengine=sync",
        "--fdatasync=1",
        dir.as_str(),
        "--size=2m",
        "--bs=2300",
        "--name=mytest",
        "--output-format=json",
    ];
    let written = |out: &Output| -> (u64, u64) {
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let w = &doc["jobs"][0]["write"];
        (w["total_ios"].as_u64().unwrap(), w["io_bytes"].as_u64().unwrap())
    };
    let fio = Command::new("fio").args(job).output().unwrap();
    assert!(fio.status.success(), "{}", stderr(&fio));
    let theirs = written(&fio);
    // 2 MiB in 2300-byte writes: 911 whole blocks, 1,852 bytes left untouched.
    assert_eq!(theirs, (911, 911 * 2300), "fio");
    for f in std::fs::read_dir(&data).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let mut args = vec!["fio"];
    args.extend(job);
    let ours = s.storlab(&args);
    assert!(ours.status.success(), "{}", stderr(&ours));
    assert_eq!(written(&ours), theirs, "storlab's writes against fio's");
}

/// The files of a directory, each with its size.
fn listing(d: &std::path::Path) -> Vec<(String, u64)> {
    entries(d)
        .into_iter()
        .map(|f| {
            let len = std::fs::metadata(d.join(&f)).unwrap().len();
            (f, len)
        })
        .collect()
}

/// `storlab fio` leaves the files fio leaves, named as fio names them (`NAME.CLONE.FILE`), the
/// same sizes — the same command line under fio and under storlab, each in a directory of its
/// own; a later job of the same name reads them where they are, without laying them out again;
/// `unlink=1` leaves nothing, as under fio. (`storlab run --fio` keeps storlab's rule: its
/// files go; tested with the examples above.)
#[test]
fn storlab_fio_leaves_the_files_fio_leaves_named_as_fio_names_them() {
    let s = Scratch::new();
    let (theirs, ours) = (s.path().join("fio"), s.path().join("storlab"));
    std::fs::create_dir(&theirs).unwrap();
    std::fs::create_dir(&ours).unwrap();
    let line = |dir: &std::path::Path, job: &[&str]| -> Vec<String> {
        let mut v = vec![format!("--directory={}", dir.display()), "--output-format=json".into()];
        v.extend(job.iter().map(|a| a.to_string()));
        v
    };
    let both = |job: &[&str]| -> (Output, Output) {
        let fio = Command::new("fio").args(line(&theirs, job)).output().unwrap();
        assert!(fio.status.success(), "fio {job:?}: {}", stderr(&fio));
        let mut args = vec!["fio".to_string()];
        args.extend(line(&ours, job));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let storlab = s.storlab(&args);
        assert!(storlab.status.success(), "storlab fio {job:?}: {}", stderr(&storlab));
        (fio, storlab)
    };
    let writes = [
        "--name=job1",
        "--rw=write",
        "--size=1m",
        "--numjobs=2",
        "--nrfiles=2",
        "--name=other",
        "--rw=randwrite",
        "--size=512k",
    ];
    both(&writes);
    let left = listing(&theirs);
    assert_eq!(
        left.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(),
        ["job1.0.0", "job1.0.1", "job1.1.0", "job1.1.1", "other.0.0"],
        "what fio leaves"
    );
    assert_eq!(
        listing(&ours),
        left,
        "storlab leaves what fio leaves, of the same sizes"
    );

    // The same name reads them where they are: not laid out again (same inode, same mtime).
    use std::os::unix::fs::MetadataExt;
    let stamp = |f: &str| {
        let m = std::fs::metadata(ours.join(f)).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let before: Vec<_> = ["job1.0.0", "job1.1.1"].iter().map(|f| stamp(f)).collect();
    let (_, read) = both(&["--name=job1", "--rw=read", "--size=1m", "--numjobs=2", "--nrfiles=2"]);
    let doc: Value = serde_json::from_slice(&read.stdout).unwrap();
    let bytes: u64 = doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["io_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(bytes, 2 << 20, "two clones read their 1 MiB each");
    let after: Vec<_> = ["job1.0.0", "job1.1.1"].iter().map(|f| stamp(f)).collect();
    assert_eq!(after, before, "the files fio's job left were read as they were");
    assert_eq!(listing(&ours), listing(&theirs));

    // unlink=1: a job's files go when it ends, under both.
    both(&["--name=gone", "--rw=write", "--size=256k", "--unlink=1"]);
    assert_eq!(listing(&ours), listing(&theirs));
    assert!(
        !entries(&ours).iter().any(|f| f.starts_with("gone.")),
        "{:?}",
        entries(&ours)
    );
}

/// `--cmdhelp` and `--enghelp` are answered from storlab's tables in fio's layout: every option
/// Debian's fio lists is known (by its name or as an alias), each with what storlab does with
/// it; an option's own page starts as fio's does; names neither knows get fio's words and exit
/// status.
#[test]
fn cmdhelp_and_enghelp_answer_every_option_fio_lists() {
    let s = Scratch::new();
    let fio_list = stdout(&std::process::Command::new("fio").arg("--cmdhelp").output().unwrap());
    let names: Vec<&str> = fio_list
        .lines()
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    assert!(names.len() > 150, "{fio_list}");
    let ours = stdout(&s.storlab(&["fio", "--cmdhelp"]));
    for n in &names {
        let out = s.storlab(&["fio", &format!("--cmdhelp={n}")]);
        assert_eq!(out.status.code(), Some(0));
        let page = stdout(&out);
        assert!(!page.starts_with("No such command"), "{n}: {page}");
        let own = page
            .lines()
            .next()
            .unwrap()
            .split(':')
            .next()
            .unwrap()
            .trim()
            .to_string();
        assert!(own == *n || page.contains("alias: ") && page.contains(n), "{n}: {page}");
        assert!(ours.contains(&format!("{own:<24}: ")), "{own} in the list");
    }
    // The page's first line as fio's: the name right-aligned in 20 columns.
    let fio_bs = stdout(&std::process::Command::new("fio").arg("--cmdhelp=bs").output().unwrap());
    let ours_bs = stdout(&s.storlab(&["fio", "--cmdhelp=blocksize"]));
    assert_eq!(
        fio_bs.lines().next().unwrap().find("bs:"),
        ours_bs.lines().next().unwrap().find("bs:")
    );
    assert!(ours_bs.contains("fio's effect"), "{ours_bs}");
    // Names neither knows: fio's words; an unknown engine exits 1, as fio's.
    assert_eq!(
        stdout(&s.storlab(&["fio", "--cmdhelp=nosuch"])),
        "No such command: nosuch\n"
    );
    let out = s.storlab(&["fio", "--enghelp=rdma"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("IO engine rdma not found"), "{}", stderr(&out));
    let engines = stdout(&s.storlab(&["fio", "--enghelp"]));
    assert!(
        engines.starts_with("Available IO engines:\n") && engines.contains("\tio_uring\n"),
        "{engines}"
    );
}
