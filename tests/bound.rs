//! Every figure says what bounded it: phases with a known bound run on this machine, each named
//! right, and the evidence it stored held to what the test reads from /proc itself over the same
//! phase — tmpfs random reads by as many workers as CPUs (cpu); the same at 2,000 IOPS (rate);
//! O_DIRECT random reads at iodepth 32 on a file of the virtual disk (device); the same at
//! iodepth 1 (iodepth); a buffered re-read of a file just read (cache); a loop device behind a
//! cgroup's I/O limit (rate, before the device). An NFS export is not among them: this kernel
//! has neither NFS client nor server (/proc/filesystems), so the network rule is held to its
//! unit test only.
//!
//! The phases run one at a time (a lock): two at once would each bound the other.

mod common;

use std::sync::Mutex;

use common::*;
use serde_json::Value;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The virtual disk's name under a directory of the root filesystem (vda here).
fn disk_of(dir: &std::path::Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).unwrap().dev();
    let link = std::fs::read_link(format!("/sys/dev/block/{}:{}", libc::major(dev), libc::minor(dev))).unwrap();
    let name = link.file_name().unwrap().to_string_lossy().into_owned();
    let sys = std::path::PathBuf::from("/sys/class/block").join(&name);
    if sys.join("partition").exists() {
        let whole = std::fs::canonicalize(&sys).unwrap();
        return whole
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
    }
    name
}

/// The disk's busy milliseconds (/proc/diskstats' io_ticks), read by the test's own code.
fn busy_ms(disk: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.get(2) == Some(&disk))
        .map(|w| w[12].parse().unwrap())
        .unwrap()
}

/// Runs storlab and returns each phase's `bound` from `results show --json`, with the seconds
/// the command took.
fn bounds(s: &Scratch, args: &[&str]) -> (Vec<Value>, f64) {
    let t = std::time::Instant::now();
    let out = s.storlab(args);
    let secs = t.elapsed().as_secs_f64();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let run = s.json(&["results", "show", &s.last_run_id().to_string()]);
    let b = run["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bound"].clone())
        .collect();
    (b, secs)
}

/// The value of the evidence named `figure` in a bound.
fn evidence(b: &Value, figure: &str) -> f64 {
    b["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["figure"] == figure)
        .unwrap_or_else(|| panic!("no {figure} in {b}"))["value"]
        .as_f64()
        .unwrap()
}

fn kind(b: &Value) -> &str {
    b["kind"].as_str().unwrap()
}

#[test]
fn tmpfs_reads_by_a_worker_per_cpu_are_cpu_bound_and_at_a_rate_rate_bound() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let d = s.data().display().to_string();
    let cpus = std::thread::available_parallelism().unwrap().get().to_string();
    let base = [
        "run",
        "--target",
        &d,
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "64m",
        "--threads",
        &cpus,
        "--runtime",
        "3s",
    ];
    let (b, _) = bounds(&s, &base);
    assert_eq!(kind(&b[0]), "cpu", "{}", b[0]);
    // The workers ran, or waited to run, nearly all the time: recomputed from the stored run.
    let run = s.json(&["results", "show", &s.last_run_id().to_string()]);
    let r = &run["phases"][0]["result"];
    let secs = r["all_done"]["seconds"].as_f64().unwrap();
    let n: f64 = cpus.parse().unwrap();
    let used = (r["cpu_user"].as_f64().unwrap() + r["cpu_sys"].as_f64().unwrap()) / secs / n;
    let waited = r["cpu_wait"].as_f64().unwrap() / secs / n;
    assert!(used + waited >= 0.8, "ran {used:.2}, waited {waited:.2}");
    assert!((evidence(&b[0], "workers' CPU") / 100.0 - used).abs() < 1e-9);
    let mut rated = base.to_vec();
    rated.extend(["--rate", "2000iops"]);
    let (b, _) = bounds(&s, &rated);
    assert_eq!(kind(&b[0]), "rate", "{}", b[0]);
    assert_eq!(evidence(&b[0], "rate asked"), 2000.0);
    assert!(evidence(&b[0], "rate held") >= 1900.0, "{}", b[0]);
}

#[test]
fn direct_reads_of_the_virtual_disk_are_device_bound_deep_and_iodepth_bound_shallow() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    // A file of the virtual disk, not of tmpfs.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path().display().to_string();
    let disk = disk_of(dir.path());
    let base = [
        "run",
        "--target",
        &d,
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "256m",
        "--direct",
        "--runtime",
        "3s",
    ];
    let mut deep = base.to_vec();
    deep.extend(["--engine", "io_uring", "--iodepth", "32"]);
    let before = busy_ms(&disk);
    let (b, secs) = bounds(&s, &deep);
    let busy = (busy_ms(&disk) - before) as f64 / (secs * 1e3);
    assert_eq!(kind(&b[0]), "device", "{}", b[0]);
    // The disk was busy most of the command's time by the test's own reading of /proc, and
    // storlab's own reading over the phase is no less.
    assert!(busy >= 0.5, "{disk} busy {busy:.2} of the command");
    assert!(
        evidence(&b[0], &format!("{disk} busy")) >= busy * 100.0 - 5.0,
        "{}",
        b[0]
    );
    assert!(evidence(&b[0], &format!("{disk} average queue")) >= 1.5, "{}", b[0]);
    let (b, _) = bounds(&s, &base);
    let inflight = evidence(&b[0], "in flight (IOPS × mean latency)");
    assert!((0.8..=1.05).contains(&inflight), "Little's law: {inflight}");
    // One I/O in flight: the benchmark's queue bounds it — on a disk nothing else uses. Where
    // the disk's queue held half an I/O or more beyond the phase's own one (another process's
    // I/O: a database's checkpoint, a neighbour), the disk served others too and `device` is
    // the right reading; the test tells the two apart by the evidence, as the rule does.
    let queue = evidence(&b[0], &format!("{disk} average queue"));
    let want = if queue >= inflight + 0.5 { "device" } else { "iodepth" };
    assert_eq!(kind(&b[0]), want, "{}", b[0]);
}

#[test]
fn a_buffered_reread_of_a_file_just_read_is_cache_bound() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path().display().to_string();
    let (b, _) = bounds(
        &s,
        &[
            "run", "--target", &d, "--phase", "read", "--phase", "reread", "--bs", "64k", "--size", "128m",
        ],
    );
    assert_eq!(kind(&b[1]), "cache", "{}", b[1]);
    let read = evidence(&b[1], "bytes the workers read");
    assert_eq!(read, (128 << 20) as f64);
    assert!(evidence(&b[1], "bytes the devices read") < 0.1 * read, "{}", b[1]);
}

#[test]
fn a_loop_device_behind_a_cgroup_limit_is_rate_bound_before_the_device() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let images = tempfile::tempdir_in("/var/tmp").unwrap();
    let dev = loop_device(&images.path().join("t.img"), 64 << 20);
    let cg = Cgroup::new("blkio");
    cg.limit_read_iops(&dev.dev, 400);
    let args = [
        "run",
        "--target",
        &dev.dev,
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "32m",
        "--direct",
        "--runtime",
        "3s",
        "--db",
        &s.db(),
    ];
    let out = cg.command(bin(), &args).env("TMPDIR", s.path()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let run = s.json(&["results", "show", &s.last_run_id().to_string()]);
    let b = &run["phases"][0]["bound"];
    assert_eq!(kind(b), "rate", "{b}");
    assert!(b["reading"].as_str().unwrap().contains("cgroup"), "{b}");
    let iops = run["phases"][0]["result"]["all_done"]["iops"].as_f64().unwrap();
    assert!((300.0..=440.0).contains(&iops), "held near the limit: {iops}");
}
