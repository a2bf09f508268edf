//! `storlab fio` under the programs that drive fio: fio-plot's `bench-fio` (PyPI, installed by
//! scripts/test beside fio-plot) runs its whole matrix with a `fio` on PATH that is storlab, as
//! it runs it with Debian's fio, and fio-plot draws from what it leaves.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;
use common::*;

/// Every file under `dir`, as paths relative to it.
fn tree(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out
}

/// The programs fio-plot installs: `bench-fio` beside the `fio-plot` that $FIO_PLOT names.
fn fio_plot_programs() -> (String, PathBuf) {
    let fio_plot = std::env::var("FIO_PLOT").unwrap_or_else(|_| "fio-plot".into());
    let bench_fio = match Path::new(&fio_plot).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join("bench-fio"),
        _ => PathBuf::from("bench-fio"),
    };
    (fio_plot, bench_fio)
}

/// A PNG's width and height.
fn png_size(path: &Path) -> (u32, u32) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let decoder = png::Decoder::new(std::io::BufReader::new(file));
    let info = decoder.read_info().unwrap();
    (info.info().width, info.info().height)
}

/// bench-fio's matrix — random reads and writes × queue depths 1 and 4 × 1 and 2 jobs, a file
/// per job in a directory on ext4 over a loop device, O_DIRECT, libaio, bandwidth, IOPS and
/// latency logs every 250 ms — run to its end twice: with Debian's fio, then with a `fio` on
/// PATH that is a link to storlab (as the packages install it). storlab leaves the same files
/// as fio, in the output directory (8 JSON documents, the per-job logs) and in the target; each
/// document says the job bench-fio asked for and what it moved; every run is stored; and
/// fio-plot draws its bar charts (by queue depth, by job count, the 3D chart) and its log graph
/// from storlab's files as from fio's.
#[test]
fn bench_fio_runs_its_matrix_with_storlab_as_its_fio_and_fio_plot_draws_it() {
    let (fio_plot, bench_fio) = fio_plot_programs();
    let s = Scratch::new();
    let fs = loop_filesystem("mkfs.ext4", 256 << 20, &s.path().join("mnt"));
    let target = fs.mount.point.clone();
    let link_dir = s.path().join("fio-bin");
    std::fs::create_dir(&link_dir).unwrap();
    std::os::unix::fs::symlink(bin(), link_dir.join("fio")).unwrap();

    let matrix = |out: &Path, fio_first: Option<&Path>| -> Output {
        let mut cmd = Command::new(&bench_fio);
        cmd.arg("-d")
            .arg(&target)
            .args(["-t", "directory", "-s", "64m", "-o"])
            .arg(out)
            .args([
                "-m",
                "randread",
                "randwrite",
                "--iodepth",
                "1",
                "4",
                "--numjobs",
                "1",
                "2",
            ])
            .args(["--runtime", "1", "--time-based", "--loginterval", "250"])
            .args(["--direct", "1", "-e", "libaio", "--destructive"])
            .env("STORLAB_DB", s.db())
            .current_dir(s.path());
        if let Some(dir) = fio_first {
            cmd.env(
                "PATH",
                format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default()),
            );
        }
        cmd.output()
            .unwrap_or_else(|e| panic!("{}: {e} (scripts/test installs fio-plot)", bench_fio.display()))
    };
    let by_fio = s.path().join("by-fio");
    let real = matrix(&by_fio, None);
    assert!(
        real.status.success(),
        "bench-fio with fio: {}{}",
        stdout(&real),
        stderr(&real)
    );
    let fio_left = entries(&target);
    for f in &fio_left {
        if f.starts_with("FIOJOB") {
            std::fs::remove_file(target.join(f)).unwrap();
        }
    }

    let by_storlab = s.path().join("by-storlab");
    let ours = matrix(&by_storlab, Some(&link_dir));
    assert!(
        ours.status.success(),
        "bench-fio with storlab: {}{}",
        stdout(&ours),
        stderr(&ours)
    );
    // The same files: 8 documents and each job's logs, named as fio names them; the same
    // files left in the target (a file per job, kept as fio keeps it).
    let files = tree(&by_storlab);
    assert_eq!(files, tree(&by_fio), "what bench-fio leaves with storlab and with fio");
    let documents: Vec<&String> = files.iter().filter(|f| f.ends_with(".json")).collect();
    assert_eq!(documents.len(), 8, "{files:?}");
    assert!(files.iter().any(|f| f.ends_with("numjobs-2_clat.2.log")), "{files:?}");
    assert_eq!(entries(&target), fio_left, "what the jobs leave in the target");

    // Each document is the job bench-fio named in it (mode-depth-jobs.json), run O_DIRECT
    // under libaio, and moved data in its mode's direction only.
    for f in &documents {
        let name = Path::new(f).file_stem().unwrap().to_string_lossy().into_owned();
        let [mode, depth, jobs]: [&str; 3] = name.split('-').collect::<Vec<_>>().try_into().unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(by_storlab.join(f)).unwrap())
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        let entries = doc["jobs"].as_array().unwrap();
        let opts = &entries[0]["job options"];
        assert_eq!(opts["rw"], mode, "{f}");
        assert_eq!(opts["iodepth"], depth, "{f}");
        assert_eq!(opts["numjobs"], jobs, "{f}");
        assert_eq!(opts["direct"], "1", "{f}");
        assert_eq!(opts["ioengine"], "libaio", "{f}");
        let moved = |dir: &str| -> u64 { entries.iter().map(|j| j[dir]["io_bytes"].as_u64().unwrap()).sum() };
        let (read, written) = (moved("read"), moved("write"));
        if mode == "randread" {
            assert!(read > 0 && written == 0, "{f}: read {read}, written {written}");
        } else {
            assert!(written > 0 && read == 0, "{f}: read {read}, written {written}");
        }
    }
    assert_eq!(
        s.json(&["results", "list"]).as_array().unwrap().len(),
        8,
        "a stored run per job"
    );

    // fio-plot's bar charts and its log graph, from fio's files and from storlab's alike.
    // (fio-plot 1.1.21's log graph fails with KeyError 'clat' when lat and clat share one graph,
    // on fio's logs as on storlab's: clat and slat are drawn on a graph of their own.)
    let charts: [(&str, &[&str]); 5] = [
        ("by-depth", &["-l", "-r", "randread", "-d", "1", "4", "-n", "1"]),
        ("by-jobs", &["-N", "-r", "randwrite", "-d", "4", "-n", "1", "2"]),
        (
            "3d",
            &["-L", "-r", "randread", "-t", "iops", "-d", "1", "4", "-n", "1", "2"],
        ),
        (
            "logs",
            &["-g", "-r", "randread", "-t", "bw", "iops", "lat", "-d", "4", "-n", "2"],
        ),
        (
            "clat-slat",
            &["-g", "-r", "randwrite", "-t", "clat", "slat", "-d", "1", "-n", "2"],
        ),
    ];
    for (who, dir) in [("fio", &by_fio), ("storlab", &by_storlab)] {
        for (chart, flags) in charts {
            let png = s.path().join(format!("{who}-{chart}.png"));
            let out = Command::new(&fio_plot)
                .arg("-i")
                .arg(dir.join("mnt").join("4k"))
                .args(["-T", who])
                .args(flags)
                .arg("-o")
                .arg(&png)
                .output()
                .unwrap();
            assert!(
                out.status.success() && stdout(&out).contains("Saving to file"),
                "{who} {chart}: {}{}",
                stdout(&out),
                stderr(&out)
            );
            let (w, h) = png_size(&png);
            assert!(w >= 1000 && h >= 600, "{who} {chart}: {w}x{h}");
        }
    }
}

/// One published fio command line, cut to this machine's sizes: where it comes from, its
/// options (the directory and output format are added), and what bounds its amount of work.
struct Published {
    source: &'static str,
    args: &'static [&'static str],
    bound: Bound,
}

/// What ends a job, and so how its figures compare with fio's.
#[derive(Clone, Copy, Debug)]
enum Bound {
    /// A size: both issue the same I/O, so bytes and I/O counts are equal.
    Size,
    /// A runtime on the device: throughput within the machine's noise of fio's.
    Time,
    /// A rate: both near the rate asked, KiB/s.
    Rate(u64),
    /// A size, with block sizes and directions drawn at random: the same bytes within 5 % and
    /// the same mean block within 25 % (some 1,100 I/Os a run: the mean's spread is about 5 %).
    Mix,
    /// A size, block sizes drawn under fio's random map, which cuts a block short where the
    /// next one is taken: every byte of the file once under both, and the mean block within
    /// 30 % of fio's over three seeds each (one run's mean block spreads some 11 % from seed
    /// to seed under either, so three seeds' mean some 6.5 %).
    MixMapped,
}

/// Published command lines: cloud vendors' disk guides, etcd's and Ceph's checks, bssplit
/// mixes, rate limits, verify, terse and json+ — each as its source prints it, with sizes and
/// runtimes cut (and a 10G or /dev/sdX target made a directory's file).
const PUBLISHED: &[Published] = &[
    Published {
        source: "Google Cloud, benchmarking persistent disk: write throughput",
        args: &[
            "--name=write_throughput",
            "--numjobs=2",
            "--size=16m",
            "--time_based",
            "--runtime=2s",
            "--ramp_time=200ms",
            "--ioengine=libaio",
            "--direct=1",
            "--verify=0",
            "--bs=1M",
            "--iodepth=64",
            "--rw=write",
            "--group_reporting=1",
            "--iodepth_batch_submit=64",
            "--iodepth_batch_complete_max=64",
        ],
        bound: Bound::Time,
    },
    Published {
        source: "Google Cloud, benchmarking persistent disk: read IOPS",
        args: &[
            "--name=read_iops",
            "--size=16m",
            "--time_based",
            "--runtime=2s",
            "--ramp_time=200ms",
            "--ioengine=libaio",
            "--direct=1",
            "--verify=0",
            "--bs=4K",
            "--iodepth=256",
            "--rw=randread",
            "--iodepth_batch_submit=256",
            "--iodepth_batch_complete_max=256",
        ],
        bound: Bound::Time,
    },
    Published {
        source: "AWS EBS, benchmark EBS volumes: random writes",
        args: &[
            "--ioengine=psync",
            "--name",
            "fio_test_file",
            "--direct=1",
            "--rw=randwrite",
            "--bs=16k",
            "--size=8m",
            "--numjobs=4",
            "--time_based",
            "--runtime=2",
            "--group_reporting",
            "--norandommap",
        ],
        bound: Bound::Time,
    },
    Published {
        source: "Azure, disk performance with fio: random read, 4 jobs",
        args: &[
            "--name=randread",
            "--ioengine=libaio",
            "--iodepth=32",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--size=16m",
            "--numjobs=4",
            "--runtime=2",
            "--group_reporting",
        ],
        bound: Bound::Size,
    },
    Published {
        source: "etcd, hardware recommendations: the disk's fdatasync latency",
        args: &[
            "--rw=write",
            "--ioengine=sync",
            "--fdatasync=1",
            "--size=2m",
            "--bs=2300",
            "--name=mytest",
        ],
        bound: Bound::Size,
    },
    Published {
        source: "Ceph journal SSD test (Sébastien Han): O_DIRECT and O_SYNC 4k writes",
        args: &[
            "--direct=1",
            "--sync=1",
            "--rw=write",
            "--bs=4k",
            "--numjobs=1",
            "--iodepth=1",
            "--size=4m",
            "--group_reporting",
            "--name=journal-test",
        ],
        bound: Bound::Size,
    },
    Published {
        source: "a bssplit mix, 70 % reads, no random map (fio's HOWTO)",
        args: &[
            "--name=mix",
            "--rw=randrw",
            "--rwmixread=70",
            "--bssplit=4k/50:64k/30:1m/20",
            "--size=256m",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            "--norandommap",
        ],
        bound: Bound::Mix,
    },
    Published {
        source: "the same bssplit mix under fio's random map (its default)",
        args: &[
            "--name=mapped",
            "--rw=randrw",
            "--rwmixread=70",
            "--bssplit=4k/50:64k/30:1m/20",
            "--size=256m",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
        ],
        bound: Bound::MixMapped,
    },
    Published {
        source: "a rate-limited writer (fio's HOWTO: rate=)",
        args: &[
            "--name=limited",
            "--rw=write",
            "--bs=64k",
            "--size=64m",
            "--rate=4m",
            "--time_based",
            "--runtime=2",
            "--direct=1",
        ],
        bound: Bound::Rate(4096),
    },
    Published {
        source: "write and verify (fio's HOWTO: verify=crc32c)",
        args: &[
            "--name=verified",
            "--rw=write",
            "--bs=64k",
            "--size=8m",
            "--verify=crc32c",
            "--do_verify=1",
        ],
        bound: Bound::Size,
    },
];

/// Each of [`PUBLISHED`] run under Debian's fio and under storlab fio, in a directory on ext4
/// over a loop device: every one fio runs, storlab runs; a job ended by its size issues the
/// same I/O as fio's (the same bytes and I/O counts per direction); a rate-limited one keeps
/// within 15 % of its rate as fio's does; a timed one on the device lands within the machine's
/// noise of fio's (a factor of 3 either way: two fio runs of the same line differ by up to
/// half on this virtual disk). The terse line and json+ are checked by their own tests
/// (tests/fio_output.rs); here each line a size ends also runs with `--minimal` and
/// `--output-format=json+` under both, and their outputs read as fio's.
#[test]
fn published_command_lines_run_as_under_fio() {
    let s = Scratch::new();
    let fs = loop_filesystem("mkfs.ext4", 512 << 20, &s.path().join("mnt"));
    let dir = format!("--directory={}", fs.mount.point.display());
    let run = |program: &str, p: &Published, extra: &[&str]| -> Output {
        let mut c = Command::new(program);
        if program == bin() {
            c.arg("fio").env("STORLAB_DB", s.db());
        }
        let out = c
            .args(p.args)
            .arg(&dir)
            .args(extra)
            .current_dir(s.path())
            .output()
            .unwrap();
        for f in std::fs::read_dir(&fs.mount.point).unwrap() {
            let path = f.unwrap().path();
            if path.is_file() {
                std::fs::remove_file(path).unwrap();
            }
        }
        out
    };
    let doc = |o: &Output| -> Value { serde_json::from_str(&stdout(o)).unwrap() };
    // Per direction: bytes, I/Os and KiB/s over the job's entries.
    let figures = |d: &Value| -> [(u64, u64, f64); 2] {
        let jobs = d["jobs"].as_array().unwrap();
        ["read", "write"].map(|dir| {
            jobs.iter().fold((0, 0, 0.0), |(b, n, bw), j| {
                (
                    b + j[dir]["io_bytes"].as_u64().unwrap(),
                    n + j[dir]["total_ios"].as_u64().unwrap(),
                    bw + j[dir]["bw"].as_f64().unwrap(),
                )
            })
        })
    };
    for p in PUBLISHED {
        let theirs = run("fio", p, &["--output-format=json"]);
        assert!(theirs.status.success(), "{}: fio: {}", p.source, stderr(&theirs));
        let ours = run(bin(), p, &["--output-format=json"]);
        assert!(ours.status.success(), "{}: storlab fio: {}", p.source, stderr(&ours));
        let (f, o) = (figures(&doc(&theirs)), figures(&doc(&ours)));
        // fio's JSON keys, every one (issue 40: the published lines' documents by shape).
        let (mut fios_keys, mut our_keys) = (BTreeSet::new(), BTreeSet::new());
        key_paths(&doc(&theirs), "", &mut fios_keys);
        key_paths(&doc(&ours), "", &mut our_keys);
        let missing: Vec<&String> = fios_keys.difference(&our_keys).collect();
        assert!(
            missing.is_empty(),
            "{}: fio's JSON keys storlab's lacks: {missing:?}",
            p.source
        );
        assert_eq!(
            doc(&ours).get("global options"),
            doc(&theirs).get("global options"),
            "{}: the options before the first --name, as given",
            p.source
        );
        for (d, dir) in ["read", "write"].iter().enumerate() {
            let ((fb, fn_, fbw), (ob, on, obw)) = (f[d], o[d]);
            assert_eq!(
                fb == 0,
                ob == 0,
                "{}: {dir} moved under one only: fio {fb}, storlab {ob}",
                p.source
            );
            match p.bound {
                Bound::Size => {
                    assert_eq!((ob, on), (fb, fn_), "{}: {dir} bytes and I/Os", p.source);
                }
                Bound::Time if fb > 0 => {
                    assert!(
                        obw > fbw / 3.0 && obw < fbw * 3.0,
                        "{}: {dir} {obw} KiB/s, fio {fbw}",
                        p.source
                    );
                }
                Bound::Mix => {}
                Bound::Rate(kib) if fb > 0 => {
                    for (who, bw) in [("fio", fbw), ("storlab", obw)] {
                        let off = (bw - kib as f64).abs() / kib as f64;
                        assert!(off < 0.15, "{}: {who} {dir} at {bw} KiB/s, asked {kib}", p.source);
                    }
                }
                _ => {}
            }
        }
        if let Bound::Mix = p.bound {
            let total = |x: &[(u64, u64, f64); 2]| (x[0].0 + x[1].0, x[0].1 + x[1].1);
            let ((fb, fn_), (ob, on)) = (total(&f), total(&o));
            let off = |a: f64, b: f64| (a - b).abs() / b;
            assert!(off(ob as f64, fb as f64) < 0.05, "{}: {ob} bytes, fio {fb}", p.source);
            let (fm, om) = (fb as f64 / fn_ as f64, ob as f64 / on as f64);
            assert!(
                off(om, fm) < 0.25,
                "{}: mean block {om:.0} B, fio's {fm:.0} B",
                p.source
            );
        }
        if let Bound::MixMapped = p.bound {
            // Three seeds each: every byte once in each run, and the mean blocks compared.
            let mean_block = |program: &str| -> f64 {
                let (mut bytes, mut ios) = (0, 0);
                for seed in ["--randseed=1", "--randseed=2", "--randseed=3"] {
                    let out = run(program, p, &["--output-format=json", seed]);
                    assert!(out.status.success(), "{} {seed}: {program}: {}", p.source, stderr(&out));
                    let [r, w] = figures(&doc(&out));
                    assert_eq!(r.0 + w.0, 256 << 20, "{} {seed}: {program}: every byte once", p.source);
                    (bytes, ios) = (bytes + r.0 + w.0, ios + r.1 + w.1);
                }
                bytes as f64 / ios as f64
            };
            let (fm, om) = (mean_block("fio"), mean_block(bin()));
            assert!(
                (om - fm).abs() / fm < 0.30,
                "{}: mean block {om:.0} B over three seeds, fio's {fm:.0} B",
                p.source
            );
        }
        // The other output forms, for the lines a size ends (quick to run again).
        let formats: &[&str] = match p.bound {
            Bound::Size => &["--minimal", "--output-format=json+"],
            _ => &[],
        };
        for &format in formats {
            let outs = ["fio", bin()].map(|program| {
                let out = run(program, p, &[format]);
                assert!(
                    out.status.success(),
                    "{} {format}: {program}: {}",
                    p.source,
                    stderr(&out)
                );
                stdout(&out)
            });
            if format == "--minimal" {
                // fio's terse version 3: as many `;` fields in each line as fio's.
                let fields = |text: &str| -> Vec<usize> {
                    text.lines()
                        .filter(|l| l.starts_with("3;"))
                        .map(|l| l.split(';').count())
                        .collect()
                };
                assert!(!fields(&outs[0]).is_empty(), "{}: fio: {}", p.source, outs[0]);
                assert_eq!(
                    fields(&outs[1]),
                    fields(&outs[0]),
                    "{}:\n{}\n{}",
                    p.source,
                    outs[0],
                    outs[1]
                );
            } else {
                for text in &outs {
                    let d: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: {e}: {text}", p.source));
                    let moved = |dir: &str| d["jobs"][0][dir]["clat_ns"]["bins"].is_object();
                    assert!(
                        moved("read") || moved("write"),
                        "{}: json+ has its bins: {text}",
                        p.source
                    );
                }
            }
        }
    }
}

/// bench-fio's client mode (`--remote host.list`) runs each benchmark of its matrix on fio's
/// servers through fio's client: with `storlab fio --server` as the server, every benchmark's
/// document (fio's client_stats) and its logs (fio's NAME.HOST) are left where bench-fio asked,
/// each run is stored on the server, and fio-plot draws from what was left.
#[test]
fn bench_fio_in_client_mode_runs_its_matrix_on_a_storlab_server() {
    let s = Scratch::new();
    let (fio_plot, bench_fio) = fio_plot_programs();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
    let _server = Server(
        Command::new(bin())
            .args(["fio", &format!("--server=ip:127.0.0.1,{port}")])
            .env("STORLAB_DB", s.db())
            .current_dir(s.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "the server did not listen");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let hosts = s.path().join("host.list");
    std::fs::write(&hosts, format!("ip:127.0.0.1,{port}\n")).unwrap();
    let (target, out) = (s.data(), s.path().join("out"));
    let ran = Command::new(&bench_fio)
        .args([
            "--target",
            target.to_str().unwrap(),
            "--type",
            "directory",
            "--size",
            "16M",
        ])
        .args([
            "--mode",
            "randread",
            "--iodepth",
            "1",
            "2",
            "--numjobs",
            "1",
            "--runtime",
            "2",
        ])
        .args([
            "--direct",
            "0",
            "--remote",
            hosts.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ])
        .current_dir(s.path())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/test installs fio-plot)", bench_fio.display()));
    assert!(ran.status.success(), "{}{}", stdout(&ran), stderr(&ran));
    let results = out.join("data").join("4k");
    let files = tree(&results);
    for depth in [1, 2] {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(results.join(format!("randread-{depth}-1.json"))).unwrap())
                .unwrap();
        let entry = &doc["client_stats"][0];
        assert_eq!(entry["hostname"], "127.0.0.1", "{doc}");
        assert!(entry["read"]["total_ios"].as_u64().unwrap() > 0, "{entry}");
        assert_eq!(entry["job options"]["iodepth"], depth.to_string(), "{entry}");
        // Each log the job asked for; the latency logs hold the run's last window (its 16 MiB
        // take less than bench-fio's 1 s window, which fio's bandwidth logs write only whole).
        for log in ["bw", "iops", "lat", "clat"] {
            let name = format!("randread-iodepth-{depth}-numjobs-1_{log}.1.log.127.0.0.1");
            assert!(files.contains(&name), "{name} among {files:?}");
            if log.ends_with("lat") {
                assert!(
                    std::fs::metadata(results.join(&name)).unwrap().len() > 0,
                    "{name} is empty"
                );
            }
        }
    }
    assert_eq!(s.run_count(), Some(2), "a stored run per benchmark, on the server");
    let png = s.path().join("remote.png");
    let drawn = Command::new(&fio_plot)
        .arg("-i")
        .arg(&results)
        .args(["-T", "remote", "-l", "-r", "randread", "-o"])
        .arg(&png)
        .output()
        .unwrap();
    assert!(drawn.status.success(), "{}{}", stdout(&drawn), stderr(&drawn));
    assert!(png.exists());
}
