//! Helpers the integration tests share: the binary, a scratch directory with its own database,
//! mounts and loop devices that undo themselves when dropped (even when a test fails).
#![allow(dead_code)]

pub mod stats;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_storlab")
}

/// A scratch directory on tmpfs (fast, and the engine's own cost is what is measured there),
/// with its own results database: a SQLite file in the directory, or, when the tests run with
/// `STORLAB_TEST_DB=postgres` (scripts/test runs them both ways), a database of its own on the
/// test binary's PostgreSQL server (crates/testkit), dropped with the scratch.
pub struct Scratch {
    pub dir: tempfile::TempDir,
    pg: Option<storlab_testkit::PgDatabase<'static>>,
}

/// True when this run of the tests stores into PostgreSQL.
pub fn on_postgres() -> bool {
    std::env::var("STORLAB_TEST_DB").is_ok_and(|v| v == "postgres")
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: tempfile::Builder::new()
                .prefix("storlab-test-")
                .tempdir_in("/dev/shm")
                .expect("tmpfs temp dir"),
            pg: on_postgres().then(|| storlab_testkit::PgServer::shared().database()),
        }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    /// The results database as `--db` and `STORLAB_DB` take it: the file, or the URL.
    pub fn db(&self) -> String {
        match &self.pg {
            Some(d) => d.url(),
            None => self.path().join("results.db").display().to_string(),
        }
    }
    /// The database opened, made when it is not there yet.
    pub fn store_new(&self) -> storlab_store::Store {
        let target = storlab_store::DbTarget::parse(&self.db()).unwrap();
        storlab_store::Store::connect(&target, "test").expect("open the scratch database")
    }
    /// The database opened, or None when it is a file that was never made.
    pub fn store(&self) -> Option<storlab_store::Store> {
        let target = storlab_store::DbTarget::parse(&self.db()).unwrap();
        if target.file().is_some_and(|f| !f.exists()) {
            return None;
        }
        Some(storlab_store::Store::connect(&target, "test").expect("open the scratch database"))
    }
    /// The database opened, or None when it is not there or cannot be opened yet (another
    /// process is making it: polling while a storlab process creates its database).
    pub fn try_store(&self) -> Option<storlab_store::Store> {
        let target = storlab_store::DbTarget::parse(&self.db()).unwrap();
        if target.file().is_some_and(|f| !f.exists()) {
            return None;
        }
        storlab_store::Store::connect(&target, "test").ok()
    }
    /// The id of the run stored last (as `results list` lists them).
    pub fn last_run_id(&self) -> i64 {
        self.json(&["results", "list"])
            .as_array()
            .expect("results list is a list")
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .max()
            .expect("a run is stored")
    }
    /// How many runs are stored (None: no database was made).
    pub fn run_count(&self) -> Option<usize> {
        self.store().map(|s| s.list_runs(1 << 20).unwrap().len())
    }
    /// True when nothing was stored: no database file made, or no run in the server's.
    pub fn nothing_stored(&self) -> bool {
        self.run_count().unwrap_or(0) == 0
    }
    pub fn data(&self) -> PathBuf {
        let d = self.path().join("data");
        std::fs::create_dir_all(&d).unwrap();
        d
    }
    pub fn storlab(&self, args: &[&str]) -> Output {
        Command::new(bin())
            .args(args)
            .env("STORLAB_DB", self.db())
            .env("TMPDIR", self.path())
            .output()
            .expect("run storlab")
    }
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.push("--json");
        let out = self.storlab(&a);
        assert!(
            out.status.success(),
            "storlab {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Damages one byte of a file by inverting its bits: the byte always changes, whatever it held
/// (writing a fixed letter left random data unchanged one time in 256).
pub fn damage_byte(file: &Path, offset: u64) {
    use std::os::unix::fs::FileExt;
    let fh = std::fs::OpenOptions::new().read(true).write(true).open(file).unwrap();
    let mut b = [0u8; 1];
    fh.read_exact_at(&mut b, offset).unwrap();
    fh.write_all_at(&[!b[0]], offset).unwrap();
}

pub fn entries(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A mount made for one test, unmounted when dropped (even when the test fails).
pub struct Mount {
    pub point: PathBuf,
}

impl Drop for Mount {
    fn drop(&mut self) {
        // A process that has just been told to stop (a scrub's daemon after `scrub cancel`)
        // can hold the filesystem for a moment: try again for up to ten seconds, then detach
        // it lazily rather than leave it mounted.
        for _ in 0..100 {
            let out = Command::new("umount").arg(&self.point).output();
            match out {
                Ok(o) if o.status.success() => return,
                Ok(o) if !String::from_utf8_lossy(&o.stderr).contains("busy") => return,
                _ => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
        let _ = Command::new("umount").arg("-l").arg(&self.point).status();
    }
}

pub fn mount_fs(point: &Path, fstype: &str, opts: &str) -> Mount {
    std::fs::create_dir_all(point).unwrap();
    let st = Command::new("mount")
        .args(["-t", fstype, "-o", opts, fstype])
        .arg(point)
        .status()
        .expect("mount");
    assert!(st.success(), "mount -t {fstype} failed (these tests run as root)");
    Mount {
        point: point.to_path_buf(),
    }
}

/// Mounts the filesystem on `dev` at `point` (created first).
pub fn mount_device(dev: &str, point: &Path) -> Mount {
    std::fs::create_dir_all(point).unwrap();
    let st = Command::new("mount").arg(dev).arg(point).status().expect("mount");
    assert!(st.success(), "mount {dev} failed (these tests run as root)");
    Mount {
        point: point.to_path_buf(),
    }
}

/// A loop device over a sparse image in `dir`, detached when dropped.
pub struct LoopDev {
    pub dev: String,
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

pub fn loop_device(image: &Path, size: u64) -> LoopDev {
    loop_device_with(image, size, false)
}

/// A loop device whose reads and writes go to its image with O_DIRECT (`losetup
/// --direct-io=on`): what is on it is read from the disk, not from the image's page cache.
pub fn loop_device_with(image: &Path, size: u64, direct_io: bool) -> LoopDev {
    let f = std::fs::File::create(image).unwrap();
    f.set_len(size).unwrap();
    let out = Command::new("losetup")
        .args(["--find", "--show"])
        .args(direct_io.then_some("--direct-io=on"))
        .arg(image)
        .output()
        .expect("losetup");
    assert!(out.status.success(), "losetup failed: {}", stderr(&out));
    LoopDev {
        dev: stdout(&out).trim().to_string(),
    }
}

/// A new filesystem on a loop device over an image on the root filesystem (as a disk image
/// would be, not in RAM), mounted at `point`; unmounted, detached and removed when dropped, in
/// that order.
pub struct LoopFs {
    pub mount: Mount,
    pub dev: LoopDev,
    _image_dir: tempfile::TempDir,
}

pub fn loop_filesystem(mkfs: &str, size: u64, point: &Path) -> LoopFs {
    let image_dir = tempfile::Builder::new()
        .prefix(&format!("storlab-{mkfs}-"))
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let dev = loop_device(&image_dir.path().join("fs.img"), size);
    let force = if mkfs == "mkfs.btrfs" || mkfs == "mkfs.xfs" {
        "-f"
    } else {
        "-F"
    };
    let mk = Command::new(mkfs).args(["-q", force, &dev.dev]).output().expect(mkfs);
    assert!(mk.status.success(), "{mkfs}: {}", stderr(&mk));
    LoopFs {
        mount: mount_device(&dev.dev, point),
        dev,
        _image_dir: image_dir,
    }
}

/// What Chromium saw: the DOM after load, its log, and the page's own network requests.
pub struct Loaded {
    pub dom: String,
    pub console: Vec<String>,
    pub page_requests: Vec<String>,
}

pub fn chromium(page: &Path, work: &Path, screenshot: Option<&Path>) -> Loaded {
    let netlog = work.join("net.json");
    let mut cmd = Command::new("chromium");
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1200,2400",
    ])
    .arg(format!("--user-data-dir={}", work.join("profile").display()))
    .arg(format!("--log-net-log={}", netlog.display()));
    match screenshot {
        Some(p) => cmd.arg(format!("--screenshot={}", p.display())),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium (scripts/test installs it)");
    assert!(out.status.success(), "chromium: {}", stderr(&out));
    let console = stderr(&out)
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(str::to_string)
        .collect();
    // Requests the page made: Chromium's own (updates, time) have the initiator "not an
    // origin"; a file:// page's have "null".
    let log: Value = serde_json::from_str(&std::fs::read_to_string(&netlog).unwrap()).unwrap();
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .unwrap();
    let page_requests = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter(|e| e["params"]["initiator"] != "not an origin")
        .filter_map(|e| e["params"]["url"].as_str())
        .filter(|u| !u.starts_with("file:"))
        .map(str::to_string)
        .collect();
    Loaded {
        dom: stdout(&out),
        console,
        page_requests,
    }
}

/// (data-key, the number in attribute `value`) of every SVG in a page that has both.
pub fn svg_scales(page: &str, value: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for part in page.split("<svg").skip(1) {
        let attr = |name: &str| {
            let start = part.find(&format!("{name}=\""))? + name.len() + 2;
            let end = part[start..].find('"')? + start;
            Some(part[start..end].to_string())
        };
        if let (Some(k), Some(y)) = (attr("data-key"), attr(value)) {
            out.push((k.replace("&amp;", "&"), y.parse().unwrap()));
        }
    }
    out
}

/// (data-key, data-ymax) of every chart in a page.
pub fn charts(page: &str) -> Vec<(String, f64)> {
    svg_scales(page, "data-ymax")
}

/// The first figure of the IOzone -R report titled `title` (`"Writer report"` and the like)
/// in `text`: the second word of the report's third line, its first file size at its first
/// record size.
pub fn iozone_report_first_figure(text: &str, title: &str) -> f64 {
    let at = text.find(title).unwrap_or_else(|| panic!("no {title} in the text"));
    text[at..]
        .lines()
        .nth(2)
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

/// Seed 002's table recomputed by the tests, independently of crates/stats: from each channel's
/// rate per interval (`rates[channel][interval]`, bytes/s) and the intervals' `lengths`, the
/// long-term average of an interval is the length-weighted mean over the last `lt / width`
/// intervals, and MAX, MIN, AVG and SD are taken over those, AVG and SD weighted by each
/// interval's length in intervals (frequency weights). `pools` names each pool with its read
/// and write channel. Returns the rows by name: [max, min, avg, sd].
pub fn seed_table(
    rates: &[Vec<f64>],
    lengths: &[f64],
    width: f64,
    lt: f64,
    pools: &[(String, usize, usize)],
) -> std::collections::BTreeMap<String, [f64; 4]> {
    let n = lengths.len();
    let k_lt = ((lt / width).round() as usize).max(1);
    let row = |channels: Vec<usize>| -> [f64; 4] {
        let series: Vec<f64> = (0..n).map(|k| channels.iter().map(|c| rates[*c][k]).sum()).collect();
        let smooth: Vec<f64> = (0..n)
            .map(|k| {
                let from = (k + 1).saturating_sub(k_lt);
                let bytes: f64 = (from..=k).map(|j| series[j] * lengths[j]).sum();
                bytes / lengths[from..=k].iter().sum::<f64>()
            })
            .collect();
        let w: Vec<f64> = lengths.iter().map(|l| l / width).collect();
        let total: f64 = w.iter().sum();
        let avg = smooth.iter().zip(&w).map(|(x, w)| x * w).sum::<f64>() / total;
        let ss: f64 = smooth.iter().zip(&w).map(|(x, w)| w * (x - avg).powi(2)).sum();
        let max = smooth.iter().cloned().fold(f64::MIN, f64::max);
        let min = smooth.iter().cloned().fold(f64::MAX, f64::min);
        [max, min, avg, (ss / (total - 1.0)).sqrt()]
    };
    let reads: Vec<usize> = pools.iter().map(|p| p.1).collect();
    let writes: Vec<usize> = pools.iter().map(|p| p.2).collect();
    let mut out = std::collections::BTreeMap::new();
    out.insert("Tot-ReadAverage".into(), row(reads.clone()));
    out.insert("Tot-WriteAverage".into(), row(writes.clone()));
    out.insert(
        "Tot-ReadWriteAverage".into(),
        row(reads.iter().chain(&writes).copied().collect()),
    );
    for (name, r, w) in pools {
        out.insert(format!("{name}-Read"), row(vec![*r]));
        out.insert(format!("{name}-Write"), row(vec![*w]));
        out.insert(format!("{name}-ReadWrite"), row(vec![*r, *w]));
    }
    out
}

/// Asserts that the table storlab printed as JSON (`rows`: name, max, min, avg, sd) equals the
/// recomputed one, row by row and figure by figure, to `tolerance` (relative; absolute below 1).
pub fn assert_same_table(rows: &Value, expected: &std::collections::BTreeMap<String, [f64; 4]>, tolerance: f64) {
    let rows = rows.as_array().expect("rows");
    assert_eq!(rows.len(), expected.len(), "{rows:?}");
    for r in rows {
        let name = r["name"].as_str().unwrap();
        let want = expected.get(name).unwrap_or_else(|| panic!("no row {name} recomputed"));
        for (i, key) in ["max", "min", "avg", "sd"].iter().enumerate() {
            let got = r[*key].as_f64().unwrap();
            assert!(
                (got - want[i]).abs() <= tolerance * want[i].abs().max(1.0),
                "{name} {key}: storlab {got}, recomputed {}",
                want[i]
            );
        }
    }
}

/// Runs a command that must succeed; its stdout, trimmed.
pub fn run_ok(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(out.status.success(), "{cmd} {args:?}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

/// Options of a test pool.
#[derive(Default)]
pub struct PoolOptions {
    /// MiB of data for a scrub or replace to read.
    pub mib: u32,
    /// Size of each device, MiB (default 1024).
    pub device_mib: u64,
    /// Images in /dev/shm: scrub and job contend for the two cores, not for the virtual disk.
    pub in_memory: bool,
    /// A third, empty device of the same size as a spare for a replace.
    pub spare: bool,
    /// Damage blocks of one file on the second device's image (a RAID1 scrub repairs them
    /// from the first): how many.
    pub corrupt_blocks: usize,
}

/// A btrfs RAID1 of two 1 GiB loop devices mounted under the scratch directory, with data for a
/// scrub to read, and an empty directory `work` for the foreground job. Fields drop in order:
/// the mount before the loop devices.
pub struct BtrfsPool {
    pub mount: Mount,
    pub spare: Option<LoopDev>,
    _loops: (LoopDev, LoopDev),
    _images: tempfile::TempDir,
}

/// The pattern of the file whose blocks are damaged: one 4 KiB block, found again in the image.
pub fn victim_block() -> Vec<u8> {
    b"STORLAB-CORRUPT-ME-".iter().copied().cycle().take(4096).collect()
}

impl BtrfsPool {
    /// The pool's two devices (the first is the one mounted).
    pub fn devices(&self) -> [&str; 2] {
        [&self._loops.0.dev, &self._loops.1.dev]
    }

    pub fn new(s: &Scratch, mib: u32) -> (BtrfsPool, std::path::PathBuf) {
        BtrfsPool::with(
            s,
            "pool",
            PoolOptions {
                mib,
                ..Default::default()
            },
        )
    }

    pub fn with(s: &Scratch, name: &str, o: PoolOptions) -> (BtrfsPool, std::path::PathBuf) {
        let images = tempfile::Builder::new()
            .prefix("storlab-impact-")
            .tempdir_in(if o.in_memory { "/dev/shm" } else { "/var/tmp" })
            .unwrap();
        let size = if o.device_mib == 0 { 1 << 30 } else { o.device_mib << 20 };
        let a = loop_device(&images.path().join("a.img"), size);
        let b = loop_device(&images.path().join("b.img"), size);
        let spare = o.spare.then(|| loop_device(&images.path().join("spare.img"), size));
        run_ok(
            "mkfs.btrfs",
            &["-q", "-f", "-d", "raid1", "-m", "raid1", &a.dev, &b.dev],
        );
        let point = s.path().join(name);
        let mut mount = mount_device(&a.dev, &point);
        if o.corrupt_blocks > 0 {
            let block = victim_block();
            let data: Vec<u8> = (0..64).flat_map(|_| block.iter().copied()).collect();
            std::fs::write(mount.point.join("victim"), data).unwrap();
            run_ok("sync", &[]);
            drop(mount);
            let image = std::fs::read(images.path().join("b.img")).unwrap();
            let mut hits = Vec::new();
            let mut at = 0;
            while let Some(i) = image[at..].windows(4096).position(|w| w == block.as_slice()) {
                hits.push(at + i);
                at += i + 4096;
                if hits.len() == o.corrupt_blocks {
                    break;
                }
            }
            assert_eq!(
                hits.len(),
                o.corrupt_blocks,
                "the victim's blocks are on the second image"
            );
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(images.path().join("b.img"))
                .unwrap();
            for h in &hits {
                f.write_all_at(b"damaged by the storlab test", *h as u64).unwrap();
            }
            f.sync_all().unwrap();
            mount = mount_device(&a.dev, &point);
        }
        let fill = mount.point.join("fill");
        std::fs::create_dir(&fill).unwrap();
        let block: Vec<u8> = (0..(1u32 << 20))
            .map(|i| (i.wrapping_mul(2654435761) >> 9) as u8)
            .collect();
        for i in 0..o.mib {
            let mut b = block.clone();
            b[..4].copy_from_slice(&i.to_le_bytes());
            std::fs::write(fill.join(format!("f{i}")), &b).unwrap();
        }
        run_ok("sync", &[]);
        let work = mount.point.join("work");
        std::fs::create_dir(&work).unwrap();
        (
            BtrfsPool {
                mount,
                spare,
                _loops: (a, b),
                _images: images,
            },
            work,
        )
    }
}

/// Every key path of a JSON document, the numbered keys of fio's maps (percentiles, bins,
/// latency and depth buckets) and the options' names collapsed, so that two runs' documents
/// compare by shape.
pub fn key_paths(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    const NUMBERED: &[&str] = &[
        "percentile",
        "bins",
        "latency_ns",
        "latency_us",
        "latency_ms",
        "iodepth_level",
        "iodepth_submit",
        "iodepth_complete",
    ];
    match v {
        serde_json::Value::Object(m) => {
            let parent = at.rsplit('/').next().unwrap_or("");
            for (k, x) in m {
                let numbered = NUMBERED.contains(&parent) && k.chars().all(|c| c.is_ascii_digit() || ".>=".contains(c));
                let key = if parent == "job options" || parent == "global options" {
                    "OPTION"
                } else if numbered {
                    "N"
                } else {
                    k.as_str()
                };
                let path = format!("{at}/{key}");
                key_paths(x, &path, out);
                out.insert(path);
            }
        }
        serde_json::Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

/// A stored phase result's interval samples past its ramp (`results show --samples`).
pub fn measured_samples(result: &Value) -> Vec<&Value> {
    result["samples"]
        .as_array()
        .expect("the result's samples")
        .iter()
        .filter(|x| x["ramp"] == false)
        .collect()
}

/// A cgroup of the test's own under one controller (memory, pids, blkio), cgroup v1's or v2's,
/// with limits written into it; a command started through [`Cgroup::command`] runs in it. Removed
/// when dropped (once what ran in it is gone).
pub struct Cgroup {
    pub dir: PathBuf,
}

impl Cgroup {
    /// A new cgroup where `controller` is: v1's /sys/fs/cgroup/CONTROLLER, else v2's unified tree
    /// (the controller enabled for the root's children).
    pub fn new(controller: &str) -> Cgroup {
        let name = format!(
            "storlab-test-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let v1 = PathBuf::from("/sys/fs/cgroup").join(controller);
        let dir = if v1.join("cgroup.procs").exists() {
            v1.join(name)
        } else {
            let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
                .iter()
                .map(PathBuf::from)
                .find(|r| {
                    std::fs::read_to_string(r.join("cgroup.controllers"))
                        .is_ok_and(|c| c.split_whitespace().any(|x| x == controller))
                })
                .unwrap_or_else(|| panic!("no cgroup hierarchy has the {controller} controller"));
            let _ = std::fs::write(root.join("cgroup.subtree_control"), format!("+{controller}"));
            root.join(name)
        };
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        Cgroup { dir }
    }

    /// Writes `value` into the cgroup's file `name` (e.g. memory.limit_in_bytes).
    pub fn set(&self, name: &str, value: &str) {
        std::fs::write(self.dir.join(name), value).unwrap_or_else(|e| panic!("write {name}: {e}"));
    }

    /// True when the cgroup has a file of that name (v1's and v2's names differ).
    pub fn has(&self, name: &str) -> bool {
        self.dir.join(name).exists()
    }

    /// Holds reads of block device `dev` (/dev/loopN) to `iops` a second for the processes in
    /// this cgroup (v1's blkio.throttle, or v2's io.max).
    pub fn limit_read_iops(&self, dev: &str, iops: u32) {
        let name = dev.trim_start_matches("/dev/");
        let number = std::fs::read_to_string(format!("/sys/class/block/{name}/dev")).unwrap();
        if self.has("blkio.throttle.read_iops_device") {
            self.set("blkio.throttle.read_iops_device", &format!("{} {iops}", number.trim()));
        } else {
            self.set("io.max", &format!("{} riops={iops}", number.trim()));
        }
    }

    /// `program args…` started inside the cgroup (a shell moves itself in, then execs it).
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("echo $$ > \"$0\"/cgroup.procs && exec \"$@\"")
            .arg(&self.dir)
            .arg(program)
            .args(args);
        c
    }
}

static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Drop for Cgroup {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// fio's bucket of a latency (stat.c's plat_val_to_idx, written again here from fio's
/// description: exact below 128 ns, then 64 buckets to each power of two) and the value fio
/// names it by (the middle of its range, plat_idx_to_val).
pub fn fio_bucket(v: u64) -> u64 {
    if v < 128 {
        return v;
    }
    let msb = 63 - v.leading_zeros() as u64;
    let width = 1u64 << (msb - 6);
    let lower = v / width * width;
    let idx = ((msb - 6 + 1) << 6) + ((v >> (msb - 6)) & 63);
    if idx >= 1855 {
        // The last bucket holds everything beyond.
        return u64::MAX;
    }
    lower + width / 2
}

/// `prog` as fio: Debian's fio, or storlab's binary as `storlab fio` on the scratch database.
pub fn fio_command(s: &Scratch, prog: &str) -> Command {
    let mut cmd = Command::new(prog);
    if prog == bin() {
        cmd.arg("fio").env("STORLAB_DB", s.db());
    }
    cmd
}

/// The JSON document `prog` (run with `args`) printed, which must have exited 0.
pub fn fio_document(prog: &str, args: &[&str], out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{prog} {args:?}: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{prog}: {e}: {}", stdout(out)))
}
