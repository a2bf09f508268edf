//! storlab fio's figures by fio's definitions (issue 56, part 2), each recomputed here from the
//! tool's own per-I/O logs with the test's own code, and set beside Debian's fio on the same job:
//! json+'s bins and percentiles in fio's buckets, min/max/mean/stddev as the I/Os' own, and
//! group_reporting's sums of each clone's samples.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::*;

/// Mean and the sample standard deviation (n − 1) of `xs`.
fn mean_sd(xs: &[u64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// The values of a per-I/O log's lines of direction `dir` (fio's columns: time, value,
/// direction, size, offset, priority).
fn log_values(path: &Path, dir: u64) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|v| v.trim().parse::<u64>().unwrap())
                .collect::<Vec<_>>()
        })
        .filter(|f| f[2] == dir)
        .map(|f| f[1])
        .collect()
}

/// Runs `prog` (fio, or storlab's binary as `storlab fio`) in `dir` with `args` on a file of
/// its own; returns its JSON document.
fn run_json(s: &Scratch, prog: &str, dir: &Path, args: &[&str]) -> Value {
    let file = data_file(s, dir);
    let doc = run_on(s, prog, dir, args, &format!("--filename={}", file.display()));
    std::fs::remove_file(&file).ok();
    doc
}

/// The file a run in `dir` works on, in the scratch data directory.
fn data_file(s: &Scratch, dir: &Path) -> std::path::PathBuf {
    s.data()
        .join(format!("{}.dat", dir.file_name().unwrap().to_string_lossy()))
}

/// Runs `prog` as fio in `dir` (made here; its logs land there) with `args` and `target` (its
/// --filename or --directory); returns its JSON document.
fn run_on(s: &Scratch, prog: &str, dir: &Path, args: &[&str], target: &str) -> Value {
    std::fs::create_dir_all(dir).unwrap();
    let out = fio_command(s, prog)
        .current_dir(dir)
        .args(args)
        .arg(target)
        .output()
        .unwrap();
    fio_document(prog, args, &out)
}

#[test]
fn json_plus_latencies_are_fios_figures_of_each_ios_own() {
    let s = Scratch::new();
    // 1,999 reads (a prime: no percentile falls on a whole count, where fio's long double
    // decides), timed at submission and completion by libaio, logged one line each.
    let args = [
        "--name=p",
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--number_ios=1999",
        "--ioengine=libaio",
        "--iodepth=4",
        "--write_lat_log=p",
        "--output-format=json+",
    ];
    let ours = run_json(&s, bin(), &s.path().join("storlab"), &args);
    let fios = run_json(&s, "fio", &s.path().join("fio"), &args);
    let read = &ours["jobs"][0]["read"];
    assert_eq!(read["total_ios"], 1999, "{read}");

    for kind in ["lat", "slat", "clat"] {
        let logged = log_values(&s.path().join(format!("storlab/p_{kind}.1.log")), 0);
        let figures = &read[format!("{kind}_ns")];
        assert_eq!(logged.len(), 1999, "{kind}: a line per I/O");
        assert_eq!(figures["N"], 1999, "{kind}: {figures}");
        // The smallest and largest as measured, not a bucket's edge.
        assert_eq!(figures["min"], *logged.iter().min().unwrap(), "{kind} min: {figures}");
        assert_eq!(figures["max"], *logged.iter().max().unwrap(), "{kind} max: {figures}");
        let (mean, sd) = mean_sd(&logged);
        let (m, d) = (figures["mean"].as_f64().unwrap(), figures["stddev"].as_f64().unwrap());
        assert!((m - mean).abs() <= 1e-6 * mean, "{kind} mean {m} vs the log's {mean}");
        assert!(
            (d - sd).abs() <= 1e-6 * sd.max(1.0),
            "{kind} stddev {d} vs the log's {sd}"
        );
    }

    // clat's bins: each I/O of the log in fio's bucket, counted; and its percentiles the first
    // bucket whose running count reaches the share.
    let clat = log_values(&s.path().join("storlab/p_clat.1.log"), 0);
    let mut mine: BTreeMap<u64, u64> = BTreeMap::new();
    for v in &clat {
        *mine.entry(fio_bucket(*v)).or_default() += 1;
    }
    let bins: BTreeMap<u64, u64> = read["clat_ns"]["bins"]
        .as_object()
        .expect("json+ bins")
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(bins, mine, "json+ bins: the log's I/Os in fio's buckets");
    for (q, v) in read["clat_ns"]["percentile"].as_object().unwrap() {
        let q: f64 = q.parse().unwrap();
        let want = q / 100.0 * clat.len() as f64;
        let mut seen = 0;
        let at = mine
            .iter()
            .find(|(_, n)| {
                seen += **n;
                seen as f64 >= want
            })
            .map(|(b, _)| *b)
            .unwrap();
        assert_eq!(v.as_u64().unwrap(), at, "clat p{q}");
    }

    // fio's own document on the same job: its bins are named as the test names fio's buckets
    // (the test's grid is fio's), and storlab's hold no more of them than fio's grid has.
    let fio_bins = fios["jobs"][0]["read"]["clat_ns"]["bins"]
        .as_object()
        .expect("fio's json+ bins");
    for k in fio_bins.keys() {
        let v: u64 = k.parse().unwrap();
        assert_eq!(
            fio_bucket(v),
            v,
            "fio's bin {k} is a bucket's middle as the test reckons it"
        );
    }
    for k in bins.keys() {
        assert_eq!(fio_bucket(*k), *k, "storlab's bin {k} is one of fio's");
    }
    // fio's min and max are its I/Os' own too: its log says so.
    let fio_clat = log_values(&s.path().join("fio/p_clat.1.log"), 0);
    let f = &fios["jobs"][0]["read"]["clat_ns"];
    assert_eq!(f["min"], *fio_clat.iter().min().unwrap(), "fio's min, its log's");
    assert_eq!(f["max"], *fio_clat.iter().max().unwrap(), "fio's max, its log's");
}

/// fio's io_stat of whole-number samples, the test's own: min, max, mean, S (the sum of
/// squared deviations), count.
fn io_stat(xs: &[u64]) -> (u64, u64, f64, f64, u64) {
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    let s = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>();
    (
        *xs.iter().min().unwrap(),
        *xs.iter().max().unwrap(),
        mean,
        s,
        xs.len() as u64,
    )
}

/// Runs `prog` as fio with `args` in `dir` (its logs land there, its files in `dir/files`);
/// returns its JSON document.
fn run_in_dir(s: &Scratch, prog: &str, dir: &Path, args: &[&str]) -> Value {
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let doc = run_on(s, prog, dir, args, &format!("--directory={}", files.display()));
    std::fs::remove_dir_all(&files).ok();
    doc
}

#[test]
fn group_reporting_sums_each_clones_own_samples_as_fio() {
    let s = Scratch::new();
    let args = [
        "--name=g",
        "--rw=read",
        "--bs=4k",
        "--size=4m",
        "--numjobs=4",
        "--group_reporting",
        "--time_based",
        "--runtime=3",
        "--write_bw_log=g",
        "--write_iops_log=g",
        "--log_avg_msec=500",
        "--output-format=json",
    ];
    let ours = run_in_dir(&s, bin(), &s.path().join("storlab"), &args);
    let fios = run_in_dir(&s, "fio", &s.path().join("fio"), &args);
    assert_eq!(ours["jobs"].as_array().unwrap().len(), 1, "one group: {ours}");

    // Each clone's own samples, as its log holds them (log_avg_msec is the samples' interval:
    // a log line is a sample); summed as fio's group_reporting does (min, max, mean, S and
    // samples each added over the clones). The same recomputation holds for fio's own document
    // and logs: the test's reading of fio's definition is fio's.
    for (who, doc) in [("storlab", &ours), ("fio", &fios)] {
        let read = &doc["jobs"][0]["read"];
        for (what, keys) in [
            ("bw", ["bw_min", "bw_max", "bw_mean", "bw_dev", "bw_samples"]),
            (
                "iops",
                ["iops_min", "iops_max", "iops_mean", "iops_stddev", "iops_samples"],
            ),
        ] {
            let (mut min, mut max, mut mean, mut sq, mut n) = (0, 0, 0.0, 0.0, 0);
            for clone in 1..=4 {
                let values = log_values(&s.path().join(format!("{who}/g_{what}.{clone}.log")), 0);
                assert!(values.len() >= 2, "{who} clone {clone}: {values:?}");
                let one = io_stat(&values);
                min += one.0;
                max += one.1;
                mean += one.2;
                sq += one.3;
                n += one.4;
            }
            let dev = (sq / (n - 1) as f64).sqrt();
            assert_eq!(read[keys[4]], n, "{who} {what}: every clone's samples counted: {read}");
            assert_eq!(read[keys[0]], min, "{who} {what}: the clones' smallest samples added");
            assert_eq!(read[keys[1]], max, "{who} {what}: their largest added");
            let (m, d) = (read[keys[2]].as_f64().unwrap(), read[keys[3]].as_f64().unwrap());
            assert!((m - mean).abs() <= 1e-6 * mean, "{who} {what} mean {m} vs {mean}");
            assert!((d - dev).abs() <= 1e-6 * dev.max(1.0), "{who} {what} dev {d} vs {dev}");
        }
    }
}

/// How many I/Os a json+ latency's bins put at `ns` or above.
fn over(lat: &Value, ns: u64) -> u64 {
    lat["bins"]
        .as_object()
        .unwrap_or_else(|| panic!("json+ bins: {lat}"))
        .iter()
        .filter(|(k, _)| k.parse::<u64>().unwrap() >= ns)
        .map(|(_, v)| v.as_u64().unwrap())
        .sum()
}

/// Runs `prog` as fio in `dir` with `args`, stopped (SIGSTOP) for half a second 1.2 s in;
/// returns its JSON document.
fn run_stalled(s: &Scratch, prog: &str, dir: &Path, args: &[&str]) -> Value {
    std::fs::create_dir_all(dir).unwrap();
    let file = data_file(s, dir);
    let child = fio_command(s, prog)
        .current_dir(dir)
        .args(args)
        .arg(format!("--filename={}", file.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    run_ok("kill", &["-STOP", &pid]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    run_ok("kill", &["-CONT", &pid]);
    let out = child.wait_with_output().unwrap();
    std::fs::remove_file(&file).ok();
    fio_document(prog, args, &out)
}

#[test]
fn clat_under_a_held_rate_counts_from_each_ios_issue_as_fios() {
    let s = Scratch::new();
    // 2,000 reads a second, the process stopped for 0.5 s: the schedule falls ~1,000 I/Os
    // behind and catches up. From each I/O's issue (fio's clat) at most the one caught by the
    // stop is slow; from when each was due (storlab's open-loop figure) about a thousand are.
    let args = [
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=16m",
        "--rate_iops=2000",
        "--time_based",
        "--runtime=3",
        "--thread",
        "--write_lat_log=r",
        "--output-format=json+",
    ];
    let ours = run_stalled(&s, bin(), &s.path().join("storlab"), &args);
    let fios = run_stalled(&s, "fio", &s.path().join("fio"), &args);
    let (read, fio_read) = (&ours["jobs"][0]["read"], &fios["jobs"][0]["read"]);
    let ten_ms = 10_000_000;
    for (who, r) in [("storlab", read), ("fio", fio_read)] {
        let slow = over(&r["clat_ns"], ten_ms);
        assert!(
            slow <= 2,
            "{who}: {slow} I/Os over 10 ms from their issue: {}",
            r["clat_ns"]
        );
        let ios = r["total_ios"].as_u64().unwrap();
        assert!((5000..=6500).contains(&ios), "{who}: ~2,000 a second for 3 s: {ios}");
    }
    let open_loop = &read["storlab_open_loop_lat_ns"];
    let late = over(open_loop, ten_ms);
    assert!(
        late >= 300,
        "storlab's open-loop figure keeps the lateness: {late} over 10 ms"
    );
    assert_eq!(
        open_loop["N"], read["clat_ns"]["N"],
        "the same I/Os, timed from two starts"
    );

    // The clat log is fio's clat too: its I/Os in fio's buckets are json+'s bins.
    let logged = log_values(&s.path().join("storlab/r_clat.1.log"), 0);
    let mut mine: BTreeMap<String, u64> = BTreeMap::new();
    for v in &logged {
        *mine.entry(fio_bucket(*v).to_string()).or_default() += 1;
    }
    let bins: BTreeMap<String, u64> = read["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(bins, mine, "the clat log's I/Os are json+'s clat bins");
    assert_eq!(read["clat_ns"]["max"], *logged.iter().max().unwrap());
}

/// What `prog` wrote: (the share zstd's long window leaves of it, the share of its 4 KiB blocks
/// that are unique — the test's own dedupe scan).
fn written_shares(s: &Scratch, prog: &str, args: &[&str]) -> (f64, f64) {
    let file = s.path().join("written.dat");
    let out = fio_command(s, prog)
        .current_dir(s.path())
        .args(args)
        .arg(format!("--filename={}", file.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{prog}: {}", stderr(&out));
    let bytes = std::fs::read(&file).unwrap();
    let z = Command::new("zstd")
        .args(["--long=27", "-q", "-c"])
        .arg(&file)
        .output()
        .expect("zstd (scripts/test installs it)");
    assert!(z.status.success());
    std::fs::remove_file(&file).ok();
    let blocks: std::collections::HashSet<&[u8]> = bytes.chunks(4096).collect();
    (
        z.stdout.len() as f64 / bytes.len() as f64,
        blocks.len() as f64 / (bytes.len() / 4096) as f64,
    )
}

#[test]
fn compressible_and_duplicate_data_compress_and_deduplicate_as_fios() {
    let s = Scratch::new();
    let base = [
        "--name=c",
        "--rw=write",
        "--bs=64k",
        "--size=32m",
        "--output-format=json",
    ];
    // Half of each buffer zeros, the rest fresh random bytes in every write (fio refills a
    // compressible buffer each time): half the file survives a long-window compressor, and no
    // block repeats.
    let mut compress = base.to_vec();
    compress.push("--buffer_compress_percentage=50");
    let (fio_z, fio_unique) = written_shares(&s, "fio", &compress);
    let (our_z, our_unique) = written_shares(&s, bin(), &compress);
    for (who, z, unique) in [("fio", fio_z, fio_unique), ("storlab", our_z, our_unique)] {
        assert!(
            (0.45..0.56).contains(&z),
            "{who}: zstd --long keeps {z:.3} of compress 50 %"
        );
        assert!(unique > 0.99, "{who}: {unique:.3} of the blocks unique");
    }
    assert!((our_z - fio_z).abs() < 0.03, "storlab {our_z:.3}, fio {fio_z:.3}");
    // In chunks of 64 KiB (buffer_compress_chunk) each chunk's second half is zeros: a dedupe
    // scan of 4 KiB blocks finds half the blocks all zeros (one block, repeated), as in fio's
    // data; in fio's default 512-byte chunks, none.
    let zero_blocks = |prog: &str, chunk: Option<&str>| -> f64 {
        let file = s.path().join("chunks.dat");
        let mut args = compress.clone();
        args.extend(chunk);
        let out = fio_command(&s, prog)
            .current_dir(s.path())
            .args(&args)
            .arg(format!("--filename={}", file.display()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{prog}: {}", stderr(&out));
        let bytes = std::fs::read(&file).unwrap();
        std::fs::remove_file(&file).ok();
        let blocks = bytes.chunks(4096);
        let n = blocks.len() as f64;
        bytes.chunks(4096).filter(|b| b.iter().all(|x| *x == 0)).count() as f64 / n
    };
    for prog in ["fio", bin()] {
        let half = zero_blocks(prog, Some("--buffer_compress_chunk=64k"));
        assert!(
            (0.49..=0.51).contains(&half),
            "{prog}: {half:.3} of the blocks all zeros in 64 KiB chunks"
        );
        assert_eq!(
            zero_blocks(prog, None),
            0.0,
            "{prog}: in 512-byte chunks no block is all zeros"
        );
    }
    // Half the writes repeat another: a dedupe scan finds about half the blocks unique.
    let mut dedupe = base.to_vec();
    dedupe.push("--dedupe_percentage=50");
    for prog in ["fio", bin()] {
        let (z, unique) = written_shares(&s, prog, &dedupe);
        assert!(
            (0.40..0.60).contains(&unique),
            "{prog}: {unique:.3} of the blocks unique"
        );
        assert!((0.40..0.62).contains(&z), "{prog}: zstd --long keeps {z:.3}");
    }
}

#[test]
fn histogram_logs_keep_their_own_interval_beside_the_samples() {
    let s = Scratch::new();
    // Samples (and the bw log) every 500 ms, histograms every 250 ms: fio keeps the two apart.
    let args = [
        "--name=h",
        "--rw=randread",
        "--bs=4k",
        "--size=8m",
        "--time_based",
        "--runtime=2",
        "--log_avg_msec=500",
        "--write_bw_log=h",
        "--write_hist_log=h",
        "--log_hist_msec=250",
        "--output-format=json",
    ];
    for (who, prog) in [("storlab", bin()), ("fio", "fio")] {
        let doc = run_json(&s, prog, &s.path().join(who), &args);
        let lines = |what: &str| -> Vec<Vec<u64>> {
            let path = s.path().join(format!("{who}/h_{what}.1.log"));
            std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{who}: {}: {e}", path.display()))
                .lines()
                .map(|l| l.split(", ").map(|v| v.trim().parse().unwrap()).collect())
                .collect()
        };
        let (bw, hist) = (lines("bw"), lines("clat_hist"));
        let times =
            |rows: &[Vec<u64>], col: usize| -> Vec<u64> { rows.iter().filter(|r| r[col] == 0).map(|r| r[0]).collect() };
        let (bw_t, hist_t) = (times(&bw, 2), times(&hist, 1));
        assert!((3..=5).contains(&bw_t.len()), "{who}: a bw line each 500 ms: {bw_t:?}");
        assert!(
            (6..=9).contains(&hist_t.len()),
            "{who}: a histogram line each 250 ms: {hist_t:?}"
        );
        for w in hist_t.windows(2) {
            let gap = w[1] - w[0];
            assert!(
                (200..=300).contains(&gap),
                "{who}: histogram lines {gap} ms apart: {hist_t:?}"
            );
        }
        // Every I/O of a histogram line's interval counted once: the lines hold no more than
        // the job's reads, and all but the last sliver of them. fio's sliver is the interval
        // in progress when its job ends and what its log thread had not yet taken: on a loaded
        // machine up to about a fifth of a 2 s job (0.796 once, in a full suite); storlab
        // writes its last whole interval.
        let counted: u64 = hist
            .iter()
            .filter(|r| r[1] == 0)
            .map(|r| r[3..].iter().sum::<u64>())
            .sum();
        let ios = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
        let floor = if who == "fio" { 0.7 } else { 0.8 };
        assert!(
            counted <= ios && counted as f64 >= ios as f64 * floor,
            "{who}: {counted} I/Os in the histogram lines of {ios}"
        );
    }
}
