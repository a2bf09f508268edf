//! `storlab fio`'s normal output is fio's: the same jobs run under Debian's fio and under
//! storlab fio on ext4 over a loop device, and both texts read with one reader written here
//! (a table of fio's line shapes, not storlab's import): every kind of line fio printed is in
//! storlab's, and the figures that do not depend on speed (I/Os issued, bytes moved) agree.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::*;

/// fio's line shapes (its stat.c and init.c formats): `*` stands for any text without a line
/// break, everything else is literal. Each shape names a kind of line.
const SHAPES: &[(&str, &str)] = &[
    (
        "job line",
        "*: (g=*): rw=*, bs=(R) *-*, (W) *-*, (T) *-*, ioengine=*, iodepth=*",
    ),
    ("clones", "..."),
    ("version", "fio-3.*"),
    ("starting", "Starting * process*"),
    ("layout", "*: Laying out IO file* (* file* / *MiB)"),
    ("job header", "*: (groupid=*, jobs=*): err=*: pid=*: * * * *:*:* *"),
    ("read", "  read: IOPS=*, BW=* (*)(*/*msec)"),
    ("write", "  write: IOPS=*, BW=* (*)(*/*msec); * zone resets"),
    ("slat", "    slat (*sec): min=*, max=*, avg=*, stdev=*"),
    ("clat", "    clat (*sec): min=*, max=*, avg=*, stdev=*"),
    ("lat", "     lat (*sec): min=*, max=*, avg=*, stdev=*"),
    ("clat percentiles", "    clat percentiles (*sec):"),
    ("percentile row", "     |*th=[*]*"),
    (
        "bw samples",
        "   bw (*/s): min=*, max=*, per=*%, avg=*, stdev=*, samples=*",
    ),
    (
        "iops samples",
        "   iops        : min=*, max=*, avg=*, stdev=*, samples=*",
    ),
    ("lat distribution", "  lat (*sec)   : *=*%*"),
    ("sync", "  fsync/fdatasync/sync_file_range:"),
    ("sync latency", "    sync (*sec): min=*, max=*, avg=*, stdev=*"),
    ("sync percentiles", "    sync percentiles (*sec):"),
    ("cpu", "  cpu          : usr=*%, sys=*%, ctx=*, majf=*, minf=*"),
    (
        "IO depths",
        "  IO depths    : 1=*%, 2=*%, 4=*%, 8=*%, 16=*%, 32=*%, >=64=*%",
    ),
    (
        "submit",
        "     submit    : 0=*%, 4=*%, 8=*%, 16=*%, 32=*%, 64=*%, >=64=*%",
    ),
    (
        "complete",
        "     complete  : 0=*%, 4=*%, 8=*%, 16=*%, 32=*%, 64=*%, >=64=*%",
    ),
    (
        "issued",
        "     issued rwts: total=*,*,*,* short=*,*,*,* dropped=*,*,*,*",
    ),
    ("latency", "     latency   : target=*, window=*, percentile=*%, depth=*"),
    ("steadystate", "  steadystate  : attained=*, bw=* (*), iops=*, * *=*"),
    ("group", "Run status group * (all jobs):"),
    ("group read", "   READ: bw=* (*), *-* (*-*), io=* (*), run=*-*msec"),
    ("group write", "  WRITE: bw=* (*), *-* (*-*), io=* (*), run=*-*msec"),
    ("disk stats", "Disk stats (read/write):"),
    ("disk", "  *: ios=*/*, merge=*/*, ticks=*/*, in_queue=*, util=*%"),
];

/// Whether `line` has `shape` (`*`: any run of characters, possibly none).
fn fits(line: &str, shape: &str) -> bool {
    let parts: Vec<&str> = shape.split('*').collect();
    let Some(rest) = line.strip_prefix(parts[0]) else {
        return false;
    };
    let mut rest = rest;
    for (i, p) in parts.iter().enumerate().skip(1) {
        if i == parts.len() - 1 {
            return p.is_empty() || rest.ends_with(p);
        }
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The kind of each line of a text (blank lines skipped); a line of no known shape is
/// returned as `?LINE`, so that a kind fio prints and this table lacks fails the test.
fn kinds(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            SHAPES
                .iter()
                .find(|(_, shape)| fits(l, shape))
                .map_or_else(|| format!("?{l}"), |(k, _)| (*k).to_string())
        })
        .collect()
}

/// The first line of `kind` split into its numbers (digits runs, as integers).
fn numbers_of(text: &str, shape: &str) -> Vec<u64> {
    let line = text.lines().find(|l| fits(l, shape)).unwrap_or_default();
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

/// Runs `args` under fio or storlab fio in `cwd`, the job's files removed after.
fn run(program: &str, args: &[&str], cwd: &Path, data: &Path, db: &str) -> Output {
    let mut c = Command::new(program);
    if program == bin() {
        c.arg("fio").arg("--db").arg(db);
    }
    let out = c.args(args).current_dir(cwd).output().unwrap();
    for f in std::fs::read_dir(data).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    out
}

#[test]
fn normal_output_has_every_line_fio_prints() {
    let s = Scratch::new();
    let point = s.path().join("ext4");
    let fs = loop_filesystem("mkfs.ext4", 256 << 20, &point);
    let data = fs.mount.point.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let dir = format!("--directory={}", data.display());
    let jobs: Vec<(&str, Vec<&str>)> = vec![
        (
            "mixed O_DIRECT",
            vec![
                "--name=mix",
                "--rw=randrw",
                "--bs=4k",
                "--size=8m",
                "--direct=1",
                "--ioengine=psync",
            ],
        ),
        (
            "io_uring at depth 8, O_DIRECT (slat apart)",
            vec![
                "--name=ring",
                "--rw=randread",
                "--bs=4k",
                "--size=8m",
                "--direct=1",
                "--ioengine=io_uring",
                "--iodepth=8",
            ],
        ),
        (
            "etcd's fdatasync check",
            vec![
                "--name=mytest",
                "--rw=write",
                "--ioengine=sync",
                "--fdatasync=1",
                "--size=2m",
                "--bs=2300",
            ],
        ),
        (
            "steady state judged, time based",
            vec![
                "--name=ss",
                "--rw=randread",
                "--bs=4k",
                "--size=8m",
                "--runtime=20",
                "--time_based",
                "--steadystate=iops:50%",
                "--ss_dur=2s",
            ],
        ),
        (
            "two jobs reported as one, time based",
            vec![
                "--name=pair",
                "--rw=randread",
                "--bs=4k",
                "--size=4m",
                "--direct=1",
                "--numjobs=2",
                "--group_reporting",
                "--runtime=2",
                "--time_based",
            ],
        ),
    ];
    for (what, job) in &jobs {
        let mut args: Vec<&str> = job.clone();
        args.push(&dir);
        let fio = run("fio", &args, s.path(), &data, &s.db());
        assert!(fio.status.success(), "fio, {what}: {}", stderr(&fio));
        let ours = run(bin(), &args, s.path(), &data, &s.db());
        assert!(ours.status.success(), "storlab fio, {what}: {}", stderr(&ours));
        assert!(
            ours.stderr.is_empty(),
            "{what}: fio says nothing on stderr here, nor does storlab: {}",
            stderr(&ours)
        );
        let (theirs_text, ours_text) = (stdout(&fio), stdout(&ours));
        let theirs: BTreeSet<String> = kinds(&theirs_text).into_iter().collect();
        let unknown: Vec<&String> = theirs.iter().filter(|k| k.starts_with('?')).collect();
        assert!(
            unknown.is_empty(),
            "{what}: fio printed lines of a shape this test does not know: {unknown:?}"
        );
        // storlab's text: fio's kinds, and its own one line saying where the run is stored.
        let mine: Vec<String> = kinds(&ours_text)
            .into_iter()
            .filter(|k| !k.starts_with("?storlab: stored as run"))
            .collect();
        let strange: Vec<&String> = mine.iter().filter(|k| k.starts_with('?')).collect();
        assert!(
            strange.is_empty(),
            "{what}: storlab printed lines fio never prints: {strange:?}\n{ours_text}"
        );
        let mine: BTreeSet<String> = mine.into_iter().collect();
        // bw and iops samples come one per 500 ms interval: a run shorter than one (storlab's
        // etcd check takes about 300 ms, fio's 300 to 560 as the machine is loaded) has none,
        // whichever tool it is.
        let runtimes: Vec<u64> = ours_text
            .lines()
            .filter_map(|l| l.split("msec)").next().filter(|_| l.contains("msec)")))
            .filter_map(|l| l.rsplit('/').next()?.parse().ok())
            .collect();
        let mut theirs = theirs;
        if !runtimes.is_empty() && runtimes.iter().all(|ms| *ms < 500) {
            theirs.retain(|k| k != "bw samples" && k != "iops samples");
        }
        let missing: Vec<&String> = theirs.difference(&mine).collect();
        assert!(
            missing.is_empty(),
            "{what}: kinds of line fio printed that storlab did not: {missing:?}\n--- fio\n{theirs_text}\n--- storlab\n{ours_text}"
        );
        // The figures that do not depend on speed: what a size-based job issues and moves (a
        // random mix draws its reads and writes anew: their sum).
        if !job.contains(&"--time_based") {
            let issued = "     issued rwts: total=*,*,*,* short=*,*,*,* dropped=*,*,*,*";
            // The totals only: fio 3.33 counts each of the check's fdatasync calls as a short
            // I/O of the read slot ("short=911,0,0,0"), which storlab does not copy.
            let (a, b) = (numbers_of(&ours_text, issued), numbers_of(&theirs_text, issued));
            let (a, b) = (&a[..4], &b[..4]);
            if job.contains(&"--rw=randrw") {
                assert_eq!(a[0] + a[1], b[0] + b[1], "{what}: I/Os issued");
            } else {
                assert_eq!(a, b, "{what}: I/Os issued");
                for dir in ["   READ: bw=*, io=* (*), *", "  WRITE: bw=*, io=* (*), *"] {
                    let io = |t: &str| {
                        t.lines()
                            .find(|l| fits(l, dir))
                            .and_then(|l| l.split("io=").nth(1))
                            .map(|x| x.split(", run=").next().unwrap_or("").to_string())
                    };
                    assert_eq!(io(&ours_text), io(&theirs_text), "{what}: bytes moved ({dir})");
                }
            }
        }
        // The header of a job reported as one names its jobs as fio does.
        if job.contains(&"--numjobs=2") {
            assert!(ours_text.contains("(groupid=0, jobs=2)"), "{ours_text}");
        }
    }
    // The disk under the filesystem is the loop device, in both.
    let dev = fs.dev.dev.trim_start_matches("/dev/").to_string();
    let last = run(
        bin(),
        &{
            let mut a = jobs[0].1.clone();
            a.push(&dir);
            a
        },
        s.path(),
        &data,
        &s.db(),
    );
    assert!(stdout(&last).contains(&format!("\n  {dev}: ios=")), "{}", stdout(&last));
}

#[test]
fn storlabs_own_table_is_one_flag_away() {
    let s = Scratch::new();
    let data = s.data();
    std::fs::create_dir_all(&data).unwrap();
    let dir = format!("--directory={}", data.display());
    let out = s.storlab(&[
        "fio",
        "--name=t",
        "--rw=read",
        "--bs=64k",
        "--size=1m",
        dir.as_str(),
        "--output-format=storlab",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains("Run status group"),
        "storlab's table, not fio's text: {text}"
    );
    assert!(text.contains("storlab: stored as run 1"), "{text}");
    // Several formats come in fio's order whatever the order asked: the job lines, the JSON
    // document, then the report (fio's stat.c), as fio's own output beside it.
    let both = s.storlab(&[
        "fio",
        "--name=t",
        "--rw=read",
        "--bs=64k",
        "--size=1m",
        dir.as_str(),
        "--output-format=json,normal",
    ]);
    assert!(both.status.success(), "{}", stderr(&both));
    let fio = Command::new("fio")
        .args([
            "--name=t",
            "--rw=read",
            "--bs=64k",
            "--size=1m",
            &dir,
            "--output-format=json,normal",
        ])
        .output()
        .unwrap();
    assert!(fio.status.success(), "{}", stderr(&fio));
    for text in [stdout(&both), stdout(&fio)] {
        let open = text.find("\n{\n").expect("a JSON document") + 1;
        let close = text.find("\n}\n").expect("its end") + 2;
        assert!(text[..open].contains("Starting 1 process"), "{text}");
        assert!(text[close..].contains("Run status group 0 (all jobs):"), "{text}");
        let doc: serde_json::Value = serde_json::from_str(&text[open..close]).unwrap();
        assert_eq!(doc["jobs"][0]["read"]["io_bytes"], 1 << 20);
        let time = doc["time"].as_str().unwrap();
        assert!(
            fits(time, "* * * *:*:* *") && time.len() >= 24,
            "fio's ctime form: {time}"
        );
    }
}

#[test]
fn shapes_read_what_they_say() {
    assert!(fits(
        "  read: IOPS=384k, BW=1502MiB/s (1574MB/s)(3005MiB/2001msec)",
        SHAPES[6].1
    ));
    assert!(!fits("  read: IOPS=384k", SHAPES[6].1));
    assert!(fits("fio-3.33", "fio-3.*"));
    assert!(!fits("fio-2.1", "fio-3.*"));
    assert_eq!(
        kinds("Run status group 0 (all jobs):\nsomething else\n"),
        vec!["group", "?something else"]
    );
}

/// fio's json+ document and storlab fio's for the same jobs (tmpfs): every key path fio wrote
/// is in storlab's — each direction's slat/clat/lat with percentiles and bins, the bw and iops
/// samples' figures, trim, sync, CPU and getrusage's counts, the depth distributions, the
/// latency target fields, the latency distribution.
#[test]
fn json_plus_has_every_key_path_fio_writes() {
    let s = Scratch::new();
    let data = s.data();
    std::fs::create_dir_all(&data).unwrap();
    let dir = format!("--directory={}", data.display());
    let jobs: &[&[&str]] = &[
        &[
            "--name=mix",
            "--rw=randrw",
            "--bs=4k",
            "--size=4m",
            "--ioengine=psync",
            "--runtime=1",
            "--time_based",
        ],
        &[
            "--name=aio",
            "--rw=randread",
            "--bs=4k",
            "--size=4m",
            "--ioengine=libaio",
            "--iodepth=8",
            "--runtime=1",
            "--time_based",
        ],
        &[
            "--name=etcd",
            "--rw=write",
            "--ioengine=sync",
            "--fdatasync=1",
            "--size=1m",
            "--bs=2300",
        ],
        &[
            "--name=pair",
            "--rw=read",
            "--bs=64k",
            "--size=4m",
            "--numjobs=2",
            "--group_reporting",
            "--ioengine=io_uring",
            "--iodepth=4",
        ],
    ];
    for job in jobs {
        let mut args: Vec<&str> = job.to_vec();
        args.push(&dir);
        args.push("--output-format=json+");
        let doc = |o: &Output| -> serde_json::Value {
            let text = stdout(o);
            serde_json::from_str(&text[text.find('{').expect("a document")..]).unwrap()
        };
        let fio = run("fio", &args, s.path(), &data, &s.db());
        assert!(fio.status.success(), "fio {job:?}: {}", stderr(&fio));
        let ours = run(bin(), &args, s.path(), &data, &s.db());
        assert!(ours.status.success(), "storlab fio {job:?}: {}", stderr(&ours));
        let (mut theirs, mut mine) = (BTreeSet::new(), BTreeSet::new());
        key_paths(&doc(&fio), "", &mut theirs);
        key_paths(&doc(&ours), "", &mut mine);
        let missing: Vec<&String> = theirs.difference(&mine).collect();
        assert!(
            missing.is_empty(),
            "{job:?}: key paths of fio's json+ that storlab's lacks: {missing:?}"
        );
    }
}

/// The figures fio's JSON derives from storlab's stored counts, recomputed here from the stored
/// run with this test's own arithmetic: the depth distributions (each bucket's share of the
/// I/Os or of the calls, fio's 0.1 % floor for a bucket that holds any) and bw_agg (the mean
/// sample bandwidth's share of the group's bytes over its longest runtime, at most 100).
#[test]
fn depth_shares_and_bw_agg_recompute_from_the_stored_counts() {
    let s = Scratch::new();
    let data = s.data();
    std::fs::create_dir_all(&data).unwrap();
    let dir = format!("--directory={}", data.display());
    let out = s.storlab(&[
        "fio",
        "--name=q",
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        dir.as_str(),
        "--ioengine=libaio",
        "--iodepth=8",
        "--iodepth_batch=3",
        "--runtime=2",
        "--time_based",
        "--output-format=json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let job = &doc["jobs"][0];
    let stored = s.json(&["results", "show", "1"]);
    let r = &stored["phases"][0]["result"];
    let counts = |k: &str| -> Vec<f64> {
        r["io_depths"][k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let ios = r["ops_read"].as_f64().unwrap();
    for (key, stored_key, names, total) in [
        (
            "iodepth_level",
            "depth",
            ["1", "2", "4", "8", "16", "32", ">=64"],
            Some(ios),
        ),
        (
            "iodepth_submit",
            "submit",
            ["0", "4", "8", "16", "32", "64", ">=64"],
            None,
        ),
        (
            "iodepth_complete",
            "complete",
            ["0", "4", "8", "16", "32", "64", ">=64"],
            None,
        ),
    ] {
        let c = counts(stored_key);
        let total = total.unwrap_or_else(|| c.iter().sum());
        assert!(total > 0.0, "{key}: nothing counted");
        for (n, name) in c.iter().zip(names) {
            let mut want = n * 100.0 / total;
            if *n > 0.0 && want < 0.1 {
                want = 0.1;
            }
            let got = job[key][name].as_f64().unwrap();
            assert!((got - want).abs() < 1e-9, "{key}[{name}]: {got} against {want}");
        }
    }
    // With a submission batch of 3 at depth 8, the submissions carry 1 to 3 I/Os: fio's "4"
    // bucket holds them all.
    assert!(
        job["iodepth_submit"]["4"].as_f64().unwrap() > 99.0,
        "{}",
        job["iodepth_submit"]
    );
    let read = &job["read"];
    let agg_kib = (1000 * read["io_bytes"].as_u64().unwrap() / read["runtime"].as_u64().unwrap()) as f64 / 1024.0;
    let want = (read["bw_mean"].as_f64().unwrap().trunc() * 100.0 / agg_kib).min(100.0);
    assert!(
        (read["bw_agg"].as_f64().unwrap() - want).abs() < 1e-9,
        "bw_agg {} against {want}",
        read["bw_agg"]
    );
}

/// A bandwidth log's full intervals, per direction (0 reads, 1 writes), KiB/s: each line's
/// interval runs from the line before (the first from 0), and a sliver under half the usual
/// interval is left out, as fio's bw samples leave out a last part-interval.
fn full_interval_rates(log: &str, nominal_ms: u64) -> [Vec<f64>; 2] {
    let mut out = [Vec::new(), Vec::new()];
    let mut last = [0u64, 0];
    for line in log.lines() {
        let f: Vec<u64> = line.split(", ").map(|x| x.trim().parse().unwrap()).collect();
        let (t, value, dir) = (f[0], f[1], f[2] as usize);
        if t - last[dir] >= nominal_ms / 2 {
            out[dir].push(value as f64);
        }
        last[dir] = t;
    }
    out
}

/// A job of two clones without group_reporting is reported clone by clone, as fio reports
/// it: two entries in the JSON (fio's own run of the same command line has two), two blocks
/// of text with `jobs=1`, two terse lines. Each entry holds its own worker's figures: its
/// bytes and I/Os are what the store kept for that worker and add up to the phase's, and its
/// bw and iops samples (count, min, max, mean) recompute from that clone's own bandwidth log
/// with this test's arithmetic.
#[test]
fn clones_without_group_reporting_are_reported_apart_as_fio_reports_them() {
    let s = Scratch::new();
    let data = s.data();
    std::fs::create_dir_all(&data).unwrap();
    let dir = format!("--directory={}", data.display());
    let job = |format: &str, runtime: &str| -> Vec<String> {
        [
            "--name=pair",
            "--rw=randrw",
            "--bs=4k",
            "--size=8m",
            "--numjobs=2",
            "--ioengine=io_uring",
            "--iodepth=4",
            "--time_based",
            dir.as_str(),
            format,
            runtime,
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let both = |args: &[String]| -> (Output, Output) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let fio = run("fio", &args, s.path(), &data, &s.db());
        assert!(fio.status.success(), "fio {args:?}: {}", stderr(&fio));
        let ours = run(bin(), &args, s.path(), &data, &s.db());
        assert!(ours.status.success(), "storlab fio {args:?}: {}", stderr(&ours));
        (fio, ours)
    };

    // The text: a block per clone, each `jobs=1`, and the group's lines once.
    let (fio, ours) = both(&job("--output-format=normal", "--runtime=1"));
    for (who, o) in [("fio", &fio), ("storlab", &ours)] {
        let text = stdout(o);
        assert_eq!(text.matches("pair: (groupid=0, jobs=1)").count(), 2, "{who}:\n{text}");
        assert_eq!(
            text.matches("Run status group 0 (all jobs)").count(),
            1,
            "{who}:\n{text}"
        );
        assert!(text.contains("Starting 2 processes"), "{who}:\n{text}");
    }
    let (fio, ours) = both(&job("--output-format=terse", "--runtime=1"));
    for (who, o) in [("fio", &fio), ("storlab", &ours)] {
        let lines: Vec<String> = stdout(o)
            .lines()
            .filter(|l| l.starts_with("3;"))
            .map(String::from)
            .collect();
        assert_eq!(lines.len(), 2, "{who}: {}", stdout(o));
        assert!(
            lines.iter().all(|l| l.split(';').nth(2) == Some("pair")),
            "{who}: {lines:?}"
        );
    }

    // The JSON, with a bandwidth log per clone at fio's sample interval (500 ms).
    let mut args = job("--output-format=json", "--runtime=2");
    args.extend(["--write_bw_log=pair".to_string(), "--log_avg_msec=500".to_string()]);
    let (fio, ours) = both(&args);
    let doc = |o: &Output| -> serde_json::Value { serde_json::from_str(&stdout(o)).unwrap() };
    let (theirs, mine) = (doc(&fio), doc(&ours));
    assert_eq!(theirs["jobs"].as_array().unwrap().len(), 2, "fio's entries");
    let entries = mine["jobs"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "storlab's entries: {mine}");

    let id = s.last_run_id();
    let stored = s.json(&["results", "show", &id.to_string()]);
    let phase = &stored["phases"][0]["result"];
    let workers = phase["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2);
    let mut sums = [0u64; 2];
    for (k, (entry, worker)) in entries.iter().zip(workers).enumerate() {
        assert_eq!(entry["jobname"], "pair");
        assert_eq!(
            entry["job options"]["numjobs"], "2",
            "each clone's options are the job's"
        );
        let own = &worker["own"];
        for (d, dir) in ["read", "write"].iter().enumerate() {
            let bytes = own["bytes"][d].as_u64().unwrap();
            let ops = own["ops"][d].as_u64().unwrap();
            assert!(ops > 0, "clone {k} {dir}: nothing moved");
            assert_eq!(entry[dir]["io_bytes"].as_u64().unwrap(), bytes, "clone {k} {dir}");
            assert_eq!(entry[dir]["total_ios"].as_u64().unwrap(), ops, "clone {k} {dir}");
            assert_eq!(entry[dir]["lat_ns"]["N"].as_u64().unwrap(), ops, "clone {k} {dir}");
            assert_eq!(entry[dir]["clat_ns"]["N"].as_u64().unwrap(), ops, "clone {k} {dir}");
            sums[d] += bytes;
        }
        // The clone's samples from its own log (pair_bw.N.log, N its thread number).
        let log = std::fs::read_to_string(s.path().join(format!("pair_bw.{}.log", k + 1))).unwrap();
        let rates = full_interval_rates(&log, 500);
        for (d, dir) in ["read", "write"].iter().enumerate() {
            let x = &rates[d];
            let e = &entry[dir];
            assert_eq!(
                e["bw_samples"].as_u64().unwrap(),
                x.len() as u64,
                "clone {k} {dir}: {log}"
            );
            let mean = x.iter().sum::<f64>() / x.len() as f64;
            let lo = x.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = x.iter().cloned().fold(0.0, f64::max);
            // The log's values are whole KiB/s; the entry's from the same samples unrounded.
            assert!(
                (e["bw_mean"].as_f64().unwrap() - mean).abs() <= 1.0,
                "clone {k} {dir}: {e} vs {x:?}"
            );
            assert!(
                (e["bw_min"].as_f64().unwrap() - lo).abs() <= 1.0,
                "clone {k} {dir}: {e} vs {x:?}"
            );
            assert!(
                (e["bw_max"].as_f64().unwrap() - hi).abs() <= 1.0,
                "clone {k} {dir}: {e} vs {x:?}"
            );
            // IOPS of 4 KiB blocks: the bandwidth's quarter.
            assert!(
                (e["iops_mean"].as_f64().unwrap() - mean / 4.0).abs() <= 1.0,
                "clone {k} {dir}: {e}"
            );
        }
    }
    assert_eq!(
        sums[0],
        phase["bytes_read"].as_u64().unwrap(),
        "clones' reads add up to the phase's"
    );
    assert_eq!(
        sums[1],
        phase["bytes_written"].as_u64().unwrap(),
        "clones' writes add up to the phase's"
    );
    for f in std::fs::read_dir(s.path()).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "log") {
            std::fs::remove_file(p).unwrap();
        }
    }
}

/// fio takes one completion at a time unless iodepth_batch_complete_max says more, and refills
/// the queue after each: its queue stays at its depth, and its `IO depths` say so. storlab fio
/// keeps the queue the same way (io_uring at depth 8, on tmpfs): every bucket of its depth and
/// completion distributions within a point of fio's, the depth-8 bucket holding nearly every
/// I/O; with iodepth_batch_complete_max=8 both take several completions at once and refill
/// from below the depth.
#[test]
fn the_queue_stays_at_its_depth_as_fio_keeps_it() {
    let s = Scratch::new();
    let data = s.data();
    std::fs::create_dir_all(&data).unwrap();
    let dir = format!("--directory={}", data.display());
    let levels = |o: &Output, key: &str| -> Vec<(String, f64)> {
        let d: serde_json::Value = serde_json::from_str(&stdout(o)).unwrap();
        let m = d["jobs"][0][key].as_object().unwrap().clone();
        m.into_iter().map(|(k, v)| (k, v.as_f64().unwrap())).collect()
    };
    for extra in [None, Some("--iodepth_batch_complete_max=8")] {
        let mut args = vec![
            "--name=q",
            "--rw=randread",
            "--bs=4k",
            "--size=64m",
            "--ioengine=io_uring",
            "--iodepth=8",
            "--runtime=1",
            "--time_based",
            "--output-format=json",
            dir.as_str(),
        ];
        args.extend(extra);
        let fio = run("fio", &args, s.path(), &data, &s.db());
        assert!(fio.status.success(), "fio: {}", stderr(&fio));
        let ours = run(bin(), &args, s.path(), &data, &s.db());
        assert!(ours.status.success(), "storlab fio: {}", stderr(&ours));
        let share = |o: &Output, key: &str, bucket: &str| -> f64 {
            levels(o, key).into_iter().find(|(k, _)| k == bucket).unwrap().1
        };
        if extra.is_none() {
            for key in ["iodepth_level", "iodepth_complete"] {
                let (theirs, mine) = (levels(&fio, key), levels(&ours, key));
                for ((k, a), (l, b)) in theirs.iter().zip(&mine) {
                    assert_eq!(k, l);
                    assert!((a - b).abs() <= 1.0, "{key} {k}: fio {a} %, storlab {b} %");
                }
            }
            let depth8 = share(&ours, "iodepth_level", "8");
            assert!(depth8 >= 99.0, "{depth8} % of the I/Os at depth 8");
        } else {
            // Several completions taken at once where several are ready (on tmpfs each read
            // completes inside its submission), so the queue is refilled from below its depth.
            for (who, o) in [("fio", &fio), ("storlab", &ours)] {
                let depth8 = share(o, "iodepth_level", "8");
                assert!(depth8 < 99.0, "{who}: {depth8} % of the I/Os at depth 8");
            }
        }
    }
}

/// A write with verify, reported as fio reports it — one job, its writes from the write and its
/// reads from the verifying read — in the terse line: each direction's KiB, bandwidth, IOPS,
/// runtime and mean latency recomputed here from its own stored phase (bytes, I/Os, seconds,
/// the latency histogram's mean), and the line's disk fields from the disks' counters the two
/// phases stored (summed per disk, utilisation as busy ms over elapsed ms), with this test's
/// own arithmetic.
#[test]
fn a_verified_writes_terse_line_recomputes_from_its_two_stored_phases() {
    let s = Scratch::new();
    let point = s.path().join("ext4");
    let fs = loop_filesystem("mkfs.ext4", 128 << 20, &point);
    let data = fs.mount.point.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let dir = format!("--directory={}", data.display());
    let args = [
        "--name=v",
        "--rw=write",
        "--bs=64k",
        "--size=16m",
        "--verify=crc32c",
        "--direct=1",
        "--minimal",
        dir.as_str(),
    ];
    let out = run(bin(), &args, s.path(), &data, &s.db());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("3;")).collect();
    assert_eq!(lines.len(), 1, "one job, as fio reports a write and its verify: {text}");
    let f: Vec<&str> = lines[0].split(';').collect();
    let stored = s.json(&["results", "show", &s.last_run_id().to_string()]);
    let phases = stored["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2, "the write and the read that verified it");
    let num = |i: usize| -> f64 { f[i].parse().unwrap_or_else(|_| panic!("field {}: {:?}", i + 1, f[i])) };
    // Each direction: (its first field, its phase, bytes and I/Os keys, latency key).
    for (first, phase, bytes, ops, lat) in [
        (5, &phases[1], "bytes_read", "ops_read", "latency_read"),
        (46, &phases[0], "bytes_written", "ops_written", "latency_write"),
    ] {
        let r = &phase["result"];
        let (b, n) = (r[bytes].as_u64().unwrap(), r[ops].as_u64().unwrap());
        assert!(n > 0, "{bytes}: the phase moved data");
        let runt = ((r["all_done"]["seconds"].as_f64().unwrap() * 1e3).round() as u64).max(1);
        assert_eq!(num(first) as u64, b / 1024, "{bytes}: KiB");
        assert_eq!(
            num(first + 1) as u64,
            b * 1000 / runt / 1024,
            "{bytes}: KiB/s over the phase's runtime"
        );
        // fio's terse IOPS: 1000 × I/Os ÷ runtime in whole numbers, truncated.
        assert_eq!(num(first + 2) as u64, n * 1000 / runt, "{bytes}: IOPS");
        assert_eq!(num(first + 3) as u64, runt, "{bytes}: runtime, ms");
        let mean_us = r[lat]["mean_ns"].as_f64().unwrap() / 1e3;
        let terse_mean = num(first + 34);
        assert!(
            (terse_mean - mean_us).abs() <= mean_us * 0.001 + 0.001,
            "{bytes}: mean latency {terse_mean} µs in the line, {mean_us} µs stored"
        );
    }
    // The disk fields: the last nine, one disk (the loop device under the target).
    let mut disks: std::collections::BTreeMap<String, [f64; 9]> = Default::default();
    for p in phases {
        // fio's disks are those under the target; the devices beneath them (kept for the
        // phase's bound) carry what they are beneath.
        for d in p["result"]["disks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d.get("under").is_none())
        {
            let e = disks.entry(d["name"].as_str().unwrap().to_string()).or_default();
            let keys = [
                "read_ios",
                "write_ios",
                "read_merges",
                "write_merges",
                "read_ticks",
                "write_ticks",
                "in_queue",
                "io_ticks",
                "elapsed_ms",
            ];
            for (sum, k) in e.iter_mut().zip(keys) {
                *sum += d[k].as_f64().unwrap();
            }
        }
    }
    assert_eq!(disks.len(), 1, "one disk under the target: {disks:?}");
    let (name, sums) = disks.iter().next().unwrap();
    let tail = &f[f.len() - 9..];
    assert_eq!(tail[0], name, "the disk's name");
    for i in 0..7 {
        assert_eq!(
            tail[i + 1].parse::<f64>().unwrap(),
            sums[i],
            "{name}: field {} of the disk's",
            i + 2
        );
    }
    assert!(sums[1] > 0.0, "{name}: the writes reached the disk (O_DIRECT)");
    let util = (sums[7] * 100.0 / sums[8]).min(100.0);
    let shown: f64 = tail[8].trim_end_matches('%').parse().unwrap();
    assert!(
        (shown - util).abs() <= 0.005 + 1e-9,
        "{name}: util {shown} %, busy over elapsed {util:.4} %"
    );
}

/// fio's "global options" and "job options" are the options as the job file and command line
/// gave them: fio's name (an alias as its option), the value as written, a bare switch left
/// out, a job with none of its own without the key — the same under fio and storlab fio.
#[test]
fn job_and_global_options_are_as_given_as_fios() {
    let s = Scratch::new();
    let d = s.data();
    let job = s.path().join("given.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nblocksize=4k\nsize=1M\ndirectory={}\nnorandommap\n\n[a]\nrw=randread\nruntime=1s\ntime_based\nrwmixread=70\n\n[b]\nstonewall\n\n[c]\n",
            d.display()
        ),
    )
    .unwrap();
    let doc = |prog: &str| -> serde_json::Value {
        let args = ["--output-format=json", job.to_str().unwrap()];
        let out = fio_command(&s, prog).current_dir(s.path()).args(args).output().unwrap();
        fio_document(prog, &args, &out)
    };
    let (theirs, mine) = (doc("fio"), doc(bin()));
    assert_eq!(
        mine["global options"], theirs["global options"],
        "fio's: {}",
        theirs["global options"]
    );
    for i in 0..3 {
        assert_eq!(
            mine["jobs"][i].get("job options"),
            theirs["jobs"][i].get("job options"),
            "job {i}: fio's {:?}",
            theirs["jobs"][i].get("job options")
        );
    }
    assert_eq!(
        theirs["global options"]["bs"], "4k",
        "fio names the alias by its option"
    );
    assert_eq!(
        theirs["jobs"][1]["job options"],
        serde_json::json!({}),
        "a bare switch's key left out"
    );
    assert!(
        theirs["jobs"][2].get("job options").is_none(),
        "a job of no options of its own"
    );
    std::fs::remove_dir_all(&d).ok();
}

/// Runs `prog` as fio (storlab's binary as `storlab fio`) with `args` and `--output-format=json`;
/// returns its exit code, its stderr and its JSON document (fio writes its error line on stdout
/// before the document: the document is read from its first `{`).
fn fio_json(s: &Scratch, prog: &str, args: &[&str]) -> (Option<i32>, String, serde_json::Value) {
    let out = fio_command(s, prog)
        .current_dir(s.path())
        .args(args)
        .arg("--output-format=json")
        .output()
        .unwrap();
    let text = stdout(&out);
    let at = text
        .find("{\n")
        .unwrap_or_else(|| panic!("{prog} {args:?}: no document: {text}{}", stderr(&out)));
    let doc = serde_json::from_str(&text[at..]).unwrap_or_else(|e| panic!("{prog}: {e}: {text}"));
    (out.status.code(), stderr(&out), doc)
}

/// A job that fails (its file on a read-only filesystem) is in fio's document with its error
/// number, as fio's; a block that fails its check ends the job with fio's EILSEQ (84), or with
/// continue_on_error=verify is counted in the job's errors and the run exits 0 — each as
/// Debian's fio does on the same job.
#[test]
fn a_failed_job_and_a_bad_block_are_reported_as_fios() {
    let s = Scratch::new();
    let ro = mount_fs(&s.path().join("ro"), "tmpfs", "size=8m");
    let file = ro.point.join("f");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    run_ok("mount", &["-o", "remount,ro", ro.point.to_str().unwrap()]);
    let target = format!("--filename={}", file.display());
    let write = ["--name=w", "--rw=write", "--bs=4k", "--size=1m", &target];
    for prog in ["fio", bin()] {
        let (code, err, doc) = fio_json(&s, prog, &write);
        assert_eq!(code, Some(1), "{prog}: {err}");
        let job = &doc["jobs"][0];
        assert_eq!(job["jobname"], "w", "{prog}: the failed job has its entry");
        assert_eq!(job["error"], 30, "{prog}: EROFS");
        assert_eq!(job["write"]["io_bytes"], 0, "{prog}");
    }
    let (_, err, _) = fio_json(&s, bin(), &write);
    assert!(err.contains("Read-only file system"), "the reason on stderr: {err}");

    // Zeros read with verify: no block carries its header.
    let zeros = s.path().join("zeros.dat");
    std::fs::write(&zeros, vec![0u8; 1 << 20]).unwrap();
    let target = format!("--filename={}", zeros.display());
    let read = ["--name=v", "--rw=read", "--bs=4k", "--size=1m", "--verify=md5", &target];
    for prog in ["fio", bin()] {
        let (code, err, doc) = fio_json(&s, prog, &read);
        assert_eq!(code, Some(1), "{prog}: {err}");
        assert_eq!(doc["jobs"][0]["error"], 84, "{prog}: EILSEQ");
        assert!(
            err.contains("verify:") && err.contains("offset 0, length 4096"),
            "{prog}: the bad block on stderr: {err}"
        );
        let read_ios = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
        assert!(
            read_ios <= 1,
            "{prog}: the job stops at the first bad block: {read_ios}"
        );
    }
    let mut on = read.to_vec();
    on.push("--continue_on_error=verify");
    for prog in ["fio", bin()] {
        let (code, err, doc) = fio_json(&s, prog, &on);
        assert_eq!(code, Some(0), "{prog}: {err}");
        let job = &doc["jobs"][0];
        assert_eq!(
            (&job["error"], &job["first_error"]),
            (&serde_json::json!(84), &serde_json::json!(84)),
            "{prog}"
        );
        assert_eq!(job["total_err"], 256, "{prog}: every block counted");
        assert_eq!(job["read"]["total_ios"], 256, "{prog}: the whole file read");
        assert_eq!(err.matches("verify:").count(), 256, "{prog}: a line per bad block");
    }
    drop(ro);
}

/// fio's groups as fio makes them: jobs that run together are one group, a job with new_group
/// starts its own though it runs with them, and with group_reporting the jobs of a group are
/// one entry (the first's name, the last's options, every job's I/O) — the same entries,
/// groups and counts as Debian's fio on the same job file.
#[test]
fn group_reporting_and_new_group_make_fios_groups() {
    let s = Scratch::new();
    let d = s.data();
    let job = s.path().join("groups.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nbs=4k\nsize=1M\ndirectory={}\ngroup_reporting\n\n[a]\nrw=read\n\n[b]\nrw=randread\nnumjobs=2\n\n[c]\nrw=write\nnew_group\n\n[d]\nrw=read\nstonewall\n",
            d.display()
        ),
    )
    .unwrap();
    let (code, err, theirs) = fio_json(&s, "fio", &[job.to_str().unwrap()]);
    assert_eq!(code, Some(0), "fio: {err}");
    let (code, err, mine) = fio_json(&s, bin(), &[job.to_str().unwrap()]);
    assert_eq!(code, Some(0), "storlab fio: {err}");
    let shape = |doc: &serde_json::Value| -> Vec<(String, u64, u64, u64, serde_json::Value)> {
        doc["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["jobname"].as_str().unwrap().to_string(),
                    j["groupid"].as_u64().unwrap(),
                    j["read"]["total_ios"].as_u64().unwrap(),
                    j["write"]["total_ios"].as_u64().unwrap(),
                    j["job options"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(
        shape(&mine),
        shape(&theirs),
        "entries: name, group, reads, writes, options"
    );
    assert_eq!(
        shape(&theirs).len(),
        3,
        "a and b one entry; c a group of its own; d after the stonewall"
    );

    // The joined entry holds every job's I/O as the run stored each phase.
    let stored = s.json(&["results", "show", &s.last_run_id().to_string()]);
    let phases = stored["phases"].as_array().unwrap();
    let bytes = |k: usize| phases[k]["result"]["bytes_read"].as_u64().unwrap();
    assert_eq!(mine["jobs"][0]["read"]["io_bytes"], bytes(0) + bytes(1));

    // The normal text: a block per entry (jobs=3 for a and b), a status line per group.
    let text =
        |prog: &str| -> String { stdout(&fio_command(&s, prog).current_dir(s.path()).arg(&job).output().unwrap()) };
    for (who, out) in [("fio", text("fio")), ("storlab", text(bin()))] {
        assert!(out.contains("a: (groupid=0, jobs=3)"), "{who}: {out}");
        // As they start, each job has its own line, its own options.
        assert!(out.contains("b: (g=0): rw=randread,"), "{who}: {out}");
        assert!(out.contains("Starting 5 processes"), "{who}: {out}");
        assert!(out.contains("c: (groupid=1, jobs=1)"), "{who}: {out}");
        assert_eq!(out.matches("Run status group").count(), 3, "{who}: {out}");
    }
    std::fs::remove_dir_all(&d).ok();
}

/// Every JSON document in `text`, in order (fio's --status-interval prints one after another).
fn documents(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .map(|d| d.unwrap_or_else(|e| panic!("{e}: {text}")))
        .collect()
}

/// fio's --status-interval=1 prints the run so far every second, each job's figures from its
/// start, then its final document: storlab's as many as fio's beside it, each counting more
/// I/Os than the one before, the last the stored run's.
#[test]
fn status_interval_prints_the_run_so_far_every_second_as_fio() {
    let s = Scratch::new();
    let data = s.path().join("st");
    std::fs::write(&data, vec![5u8; 8 << 20]).unwrap();
    let file = format!("--filename={}", data.display());
    let args = [
        "--name=st",
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        file.as_str(),
        "--time_based",
        "--runtime=3",
        "--status-interval=1",
        "--output-format=json",
    ];
    let counts = |prog: &str| -> Vec<u64> {
        let out = fio_command(&s, prog).args(args).output().unwrap();
        assert!(out.status.success(), "{prog}: {}", stderr(&out));
        documents(&stdout(&out))
            .iter()
            .map(|d| d["jobs"][0]["read"]["total_ios"].as_u64().unwrap())
            .collect()
    };
    let (fio, ours) = (counts("fio"), counts(bin()));
    assert!(fio.len() >= 3, "fio: {fio:?}");
    assert!(
        ours.len().abs_diff(fio.len()) <= 1 && ours.len() >= 3,
        "storlab {ours:?}, fio {fio:?}"
    );
    // Each report so far counts more than the one before (the final one is the run's whole,
    // its measured intervals).
    let interim = &ours[..ours.len() - 1];
    assert!(interim.windows(2).all(|w| w[0] < w[1]), "{ours:?}");
    let stored = s.json(&["results", "show", &s.last_run_id().to_string()]);
    assert_eq!(stored["phases"][0]["result"]["ops_read"].as_u64(), ours.last().copied());
}
