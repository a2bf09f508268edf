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
