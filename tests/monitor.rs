//! `storlab monitor`: the real binary watching loop devices and filesystems made by the test,
//! with traffic of known size written and read with O_DIRECT; Debian's Prometheus scraping it
//! every second and asked for its series through its HTTP API; promtool checking the
//! exposition; devices detached and filesystems unmounted while watched; bad input refused.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, charts, chromium, stderr, stdout, Scratch};
use serde_json::Value;
use storlab_testkit::prometheus::{free_port, http_get, Prometheus};

/// Loop devices are taken and given back under this lock: a test that detaches its device and
/// attaches it again under the same name must not see another test take the name meanwhile
/// (the tests of one binary run on several threads).
static LOOPS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn loops() -> std::sync::MutexGuard<'static, ()> {
    LOOPS.lock().unwrap_or_else(|e| e.into_inner())
}

fn loop_device_with(image: &Path, size: u64, direct_io: bool) -> common::LoopDev {
    let _g = loops();
    common::loop_device_with(image, size, direct_io)
}

fn loop_filesystem(mkfs: &str, size: u64, point: &Path) -> common::LoopFs {
    let _g = loops();
    common::loop_filesystem(mkfs, size, point)
}

/// A monitor process, stopped with SIGKILL when dropped (a failing test leaves none running).
struct Monitor(Option<Child>);

impl Monitor {
    fn start(s: &Scratch, args: &[&str]) -> Monitor {
        let child = Command::new(bin())
            .args(["monitor", "run", "--db", &s.db()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Monitor(Some(child))
    }

    /// Stops it as systemd does (SIGTERM) and returns its output.
    fn stop(&mut self) -> std::process::Output {
        let child = self.0.take().unwrap();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut child = child;
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the monitor did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    }

    /// Waits for it to end by itself (--duration).
    fn wait(&mut self, secs: u64) -> std::process::Output {
        let mut child = self.0.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(secs);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the monitor ran past {secs} s");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `dd` with O_DIRECT: `count` MiB from `from` to `to`.
fn dd(from: &str, to: &str, count: u64, flag: &str) {
    let out = Command::new("dd")
        .args([
            format!("if={from}"),
            format!("of={to}"),
            "bs=1M".into(),
            format!("count={count}"),
            flag.into(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "dd: {}", stderr(&out));
}

/// Waits until the monitor has stored its first sweep (its row is in the database).
fn wait_running(s: &Scratch, m: &mut Monitor) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = s.try_store() {
            if st
                .monitors()
                .map(|m| m.iter().any(|m| m.status == "running"))
                .unwrap_or(false)
            {
                return;
            }
        }
        if let Some(c) = &mut m.0 {
            if let Some(status) = c.try_wait().unwrap() {
                let out = m.0.take().unwrap().wait_with_output().unwrap();
                panic!("the monitor ended ({status}): {}", stderr(&out));
            }
        }
        assert!(Instant::now() < deadline, "the monitor did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stats_json(s: &Scratch) -> Value {
    s.json(&["monitor", "stats", "--from", "1h"])
}

fn pool<'a>(stats: &'a Value, name: &str) -> &'a Value {
    stats["pools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pool"] == name)
        .unwrap_or_else(|| panic!("no pool {name}: {stats}"))
}

/// The value of the one series a Prometheus instant query returns.
fn prom_value(p: &Prometheus, expr: &str) -> f64 {
    let v: Value = serde_json::from_str(&p.query(expr)).unwrap();
    let r = &v["data"]["result"];
    assert_eq!(
        r.as_array().map(|a| a.len()),
        Some(1),
        "{expr}: {v}\ntargets: {}\n{}",
        p.targets(),
        p.log()
    );
    r[0]["value"][1].as_str().unwrap().parse().unwrap()
}

fn device_name(dev: &str) -> &str {
    dev.trim_start_matches("/dev/")
}

/// Known bytes written and read with O_DIRECT on loop devices are the monitor's bytes per pool,
/// in the database and in Prometheus, which scraped storlab every second; promtool accepts the
/// exposition.
#[test]
fn known_traffic_is_each_pools_bytes_in_the_store_and_in_prometheus() {
    let s = Scratch::new();
    let images = tempfile::tempdir().unwrap();
    let a = loop_device_with(&images.path().join("a.img"), 64 << 20, true);
    let b = loop_device_with(&images.path().join("b.img"), 64 << 20, true);
    let fs = loop_filesystem("mkfs.ext4", 64 << 20, &s.path().join("mnt"));
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mnt = s.path().join("mnt").display().to_string();
    let mut m = Monitor::start(
        &s,
        &[
            "--pool",
            &format!("R1={}", a.dev),
            "--pool",
            &format!("R2={}", b.dev),
            "--pool",
            &format!("FS={mnt}"),
            "--interval",
            "200ms",
            "--lt",
            "1s",
            "--metrics",
            &addr,
        ],
    );
    wait_running(&s, &mut m);
    let prom = Prometheus::start(std::slice::from_ref(&addr), "1s");

    // The exposition: classic text for a client that does not ask (promtool checks it),
    // OpenMetrics for one that does (Prometheus).
    let (status, ctype, classic) = http_get(&addr, "/metrics", None).unwrap();
    assert_eq!(status, 200);
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(promtool.stdin.as_mut().unwrap(), classic.as_bytes()).unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}",
        stdout(&checked),
        stderr(&checked)
    );
    for help in [
        "# HELP storlab_disk_read_bytes_total",
        "# HELP storlab_filesystem_size_bytes",
        "# HELP storlab_pool_read_bytes_per_second",
    ] {
        assert!(classic.contains(help), "{help} missing:\n{classic}");
    }
    let (_, ctype, om) = http_get(&addr, "/metrics", Some("application/openmetrics-text;version=1.0.0")).unwrap();
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    assert!(
        om.contains("# UNIT storlab_disk_read_bytes bytes") && om.ends_with("# EOF\n"),
        "{om}"
    );
    assert_eq!(http_get(&addr, "/", None).unwrap().0, 404);

    dd("/dev/zero", &a.dev, 8, "oflag=direct");
    dd(&a.dev, "/dev/null", 3, "iflag=direct");
    dd("/dev/zero", &b.dev, 2, "oflag=direct");
    // Three scrapes after the last byte.
    std::thread::sleep(Duration::from_millis(3500));
    let in_prometheus = |pool: &str, metric: &str| prom_value(&prom, &format!("{metric}{{pool=\"{pool}\"}}"));
    assert_eq!(
        in_prometheus("R1", "storlab_disk_written_bytes_total"),
        (8 << 20) as f64,
        "{}",
        prom.targets()
    );
    assert_eq!(in_prometheus("R1", "storlab_disk_read_bytes_total"), (3 << 20) as f64);
    assert_eq!(
        in_prometheus("R2", "storlab_disk_written_bytes_total"),
        (2 << 20) as f64
    );
    assert_eq!(in_prometheus("R2", "storlab_disk_read_bytes_total"), 0.0);
    let size = prom_value(&prom, &format!("storlab_filesystem_size_bytes{{mountpoint=\"{mnt}\"}}"));
    assert_eq!(size, storlab_env::space::statvfs(Path::new(&mnt)).unwrap().size as f64);
    let sweeps = prom_value(&prom, "storlab_monitor_sweeps_total");
    assert!(sweeps >= 15.0, "{sweeps} sweeps scraped after 3.5 s of 200 ms");

    let out = m.stop();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("stopped after"), "{}", stderr(&out));
    let st = stats_json(&s);
    assert_eq!(pool(&st, "R1")["write_bytes"], 8u64 << 20, "{st}");
    assert_eq!(pool(&st, "R1")["read_bytes"], 3u64 << 20);
    assert_eq!(pool(&st, "R2")["write_bytes"], 2u64 << 20);
    assert_eq!(pool(&st, "R2")["read_bytes"], 0);
    // Prometheus' figures are storlab's own stored ones.
    let stored = s.store().unwrap().monitor_window(None, 0.0, 1e12).unwrap();
    let r1 = stored.series.iter().find(|x| x.pool == "R1").unwrap().idx;
    let written: u64 = stored
        .disks
        .iter()
        .filter(|d| d.series == r1)
        .map(|d| d.delta.write_bytes)
        .sum();
    assert_eq!(written as f64, in_prometheus("R1", "storlab_disk_written_bytes_total"));
    // The seed's table: R1 wrote 8 MiB within a second, so its long-term peak is near 8 MiB/s.
    let row = st["statistics"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "R1-Write")
        .unwrap()
        .clone();
    let peak = row["max"].as_f64().unwrap();
    assert!(peak > 4e6 && peak <= 8.0 * 1048576.0 / 0.8, "R1-Write max {peak}");
    assert!(fs.mount.point.exists());
}

/// A loop device detached and attached again, a filesystem unmounted and mounted again, while
/// watched: each is an event, and the monitor goes on to its end.
#[test]
fn a_detached_device_and_an_unmounted_filesystem_are_events_and_the_monitor_goes_on() {
    let s = Scratch::new();
    let images = tempfile::tempdir().unwrap();
    let image = images.path().join("r.img");
    let r = loop_device_with(&image, 32 << 20, true);
    let fs = loop_filesystem("mkfs.ext4", 64 << 20, &s.path().join("mnt"));
    let mnt = s.path().join("mnt").display().to_string();
    let mut m = Monitor::start(
        &s,
        &[
            "--pool",
            &format!("R={}", r.dev),
            "--pool",
            &format!("FS={mnt}"),
            "--interval",
            "100ms",
            "--lt",
            "500ms",
        ],
    );
    wait_running(&s, &mut m);
    let pause = || std::thread::sleep(Duration::from_millis(600));
    pause();
    {
        let _g = loops();
        assert!(Command::new("losetup").args(["-d", &r.dev]).status().unwrap().success());
        pause();
        let again = Command::new("losetup")
            .args([&r.dev, image.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(again.success());
    }
    pause();
    dd("/dev/zero", &r.dev, 1, "oflag=direct");
    pause();
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    pause();
    assert!(Command::new("mount")
        .args([&fs.dev.dev, &mnt])
        .status()
        .unwrap()
        .success());
    pause();
    let out = m.stop();
    assert!(out.status.success(), "{}", stderr(&out));
    let events = s.json(&["monitor", "events", "--from", "1h"]);
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    assert!(
        at("started") < at("device-gone") && at("device-gone") < at("device-back"),
        "{kinds:?}"
    );
    assert!(
        at("device-back") < at("unmounted") && at("unmounted") < at("mounted"),
        "{kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"stopped"));
    let gone = &events[at("device-gone")];
    assert!(gone["detail"].as_str().unwrap().contains("detached"), "{gone}");
    assert_eq!(gone["name"], device_name(&r.dev));
    // The printed events went to stderr as they happened.
    assert!(stderr(&out).contains("device-gone"), "{}", stderr(&out));
    // The megabyte written after the device came back is counted, and nothing before its return
    // is counted twice.
    let st = stats_json(&s);
    assert_eq!(pool(&st, "R")["write_bytes"], 1u64 << 20, "{st}");
}

/// Counters that wrap at 2^32 (as a 32-bit kernel's do, and the kernel's millisecond counters
/// after 49.7 days) are counted on, with an event. The kernel here will not wrap a counter in a
/// test's time: the test hands the monitor a diskstats file of its own (--diskstats), with the
/// name of a real loop device so that the pool resolves as it would.
#[test]
fn counters_that_wrap_are_counted_on_with_an_event() {
    let s = Scratch::new();
    let images = tempfile::tempdir().unwrap();
    let r = loop_device_with(&images.path().join("r.img"), 16 << 20, false);
    let name = device_name(&r.dev).to_string();
    let stats = s.path().join("diskstats");
    let write = |sectors: u64, busy: u64| {
        let tmp = s.path().join("diskstats.new");
        std::fs::write(
            &tmp,
            format!("   7       9 {name} 100 0 {sectors} 10 0 0 0 0 0 {busy} 20\n"),
        )
        .unwrap();
        std::fs::rename(&tmp, &stats).unwrap();
    };
    write((1 << 32) - 1000, (1 << 32) - 10);
    let mut m = Monitor::start(
        &s,
        &[
            "--pool",
            &format!("R={}", r.dev),
            "--interval",
            "100ms",
            "--lt",
            "500ms",
            "--diskstats",
            stats.to_str().unwrap(),
        ],
    );
    wait_running(&s, &mut m);
    std::thread::sleep(Duration::from_millis(400));
    write(24, 90);
    std::thread::sleep(Duration::from_millis(400));
    let out = m.stop();
    assert!(out.status.success(), "{}", stderr(&out));
    let st = stats_json(&s);
    assert_eq!(
        pool(&st, "R")["read_bytes"],
        1024u64 * 512,
        "1,024 sectors across the wrap: {st}"
    );
    let events = s.json(&["monitor", "events", "--from", "1h"]);
    let wrapped: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "counter-wrapped")
        .collect();
    assert_eq!(wrapped.len(), 1, "{events}");
    let d = wrapped[0]["detail"].as_str().unwrap();
    assert!(d.contains("sectors read") && d.contains("ms busy"), "{d}");
}

/// `monitor stats`' table equals what the test computes from the raw samples by another route,
/// at 100 ms sweeps whose ends fall anywhere on the epoch's grid of intervals (each interval
/// straddled by two sweeps), through a stillness longer than the long-term window (a true 0)
/// and back. The traffic is written by the test into a diskstats file of its own, as known
/// rates, with the names of two real loop devices so that the pools resolve as they would.
#[test]
fn the_monitor_table_equals_its_recomputation_from_the_raw_samples() {
    let s = Scratch::new();
    let images = tempfile::tempdir().unwrap();
    let a = loop_device_with(&images.path().join("a.img"), 16 << 20, false);
    let b = loop_device_with(&images.path().join("b.img"), 16 << 20, false);
    let (na, nb) = (device_name(&a.dev).to_string(), device_name(&b.dev).to_string());
    let stats = s.path().join("diskstats");
    // Sectors per second read from A and written to B: 2.5 s of traffic, 2 s of none, then
    // more; the counters are the integrals of those rates, written every 20 ms.
    let rate = |t: f64| -> (f64, f64) {
        if t < 2.5 {
            (4000.0, 1000.0)
        } else if t < 4.5 {
            (0.0, 0.0)
        } else {
            (8000.0 + 2000.0 * (t * 3.0).sin(), 3000.0)
        }
    };
    let write = |read: u64, written: u64| {
        let tmp = s.path().join("diskstats.new");
        std::fs::write(
            &tmp,
            format!(
                "   7       1 {na} {} 0 {read} 10 0 0 0 0 0 10 20\n   7       2 {nb} 0 0 0 0 {} 0 {written} 10 0 10 20\n",
                read / 8,
                written / 8
            ),
        )
        .unwrap();
        std::fs::rename(&tmp, &stats).unwrap();
    };
    write(0, 0);
    let mut m = Monitor::start(
        &s,
        &[
            "--pool",
            &format!("A={}", a.dev),
            "--pool",
            &format!("B={}", b.dev),
            "--interval",
            "100ms",
            "--lt",
            "300ms",
            "--diskstats",
            stats.to_str().unwrap(),
        ],
    );
    wait_running(&s, &mut m);
    let t0 = Instant::now();
    let (mut read, mut written, mut last) = (0.0, 0.0, 0.0);
    while t0.elapsed() < Duration::from_secs(7) {
        std::thread::sleep(Duration::from_millis(20));
        let t = t0.elapsed().as_secs_f64();
        let (r, w) = rate((t + last) / 2.0);
        read += r * (t - last);
        written += w * (t - last);
        last = t;
        write(read as u64, written as u64);
    }
    let out = m.stop();
    assert!(out.status.success(), "{}", stderr(&out));

    // The raw samples: each sweep's bytes per pool (top devices), its start and end.
    let raw = s.store().unwrap().monitor_window(None, 0.0, 1e12).unwrap();
    let pools = ["A", "B"];
    let mut sweeps: Vec<(f64, f64, [f64; 4])> = Vec::new();
    for d in raw.disks.iter().filter(|d| d.seconds > 0.0) {
        let series = raw.series.iter().find(|x| x.idx == d.series).unwrap();
        if !series.top {
            continue;
        }
        let p = pools.iter().position(|q| *q == series.pool).unwrap();
        let i = match sweeps.iter().position(|x| (x.1 - d.t).abs() < 1e-3) {
            Some(i) => i,
            None => {
                sweeps.push((d.t - d.seconds, d.t, [0.0; 4]));
                sweeps.len() - 1
            }
        };
        sweeps[i].2[2 * p] += d.delta.read_bytes as f64;
        sweeps[i].2[2 * p + 1] += d.delta.write_bytes as f64;
    }
    sweeps.sort_by(|x, y| x.0.total_cmp(&y.0));
    assert!(sweeps.len() >= 60, "{} sweeps", sweeps.len());
    // Each sweep begins where the one before ended (the monitor's time base is monotonic),
    // and their ends fall off the grid's edges.
    for w in sweeps.windows(2) {
        assert!((w[1].0 - w[0].1).abs() < 1e-6, "a gap between sweeps: {w:?}");
    }
    let off = sweeps
        .iter()
        .filter(|x| {
            let f = x.1 / 0.1 - (x.1 / 0.1).round();
            f.abs() > 1e-3
        })
        .count();
    assert!(off > sweeps.len() / 2, "sweep ends off the edges: {off}");

    // The intervals of the epoch's 100 ms grid, from the first sweep's start (a partial first
    // interval) to the last one's end, in seconds from the grid point before the start (epoch
    // seconds as they are carry only a quarter of a microsecond).
    let width = 0.1;
    let origin = (sweeps[0].0 / width).floor() * width;
    let rel: Vec<(f64, f64, [f64; 4])> = sweeps.iter().map(|(a, b, v)| (a - origin, b - origin, *v)).collect();
    let (first, end) = (rel[0].0, rel.last().unwrap().1);
    let mut edges = vec![first];
    let mut k = 1.0;
    while k * width < end - 1e-9 {
        edges.push(k * width);
        k += 1.0;
    }
    edges.push(end);
    let curve = |c: usize, x: f64| -> f64 {
        rel.iter()
            .map(|(a, b, v)| v[c] * ((x.min(*b) - a) / (b - a)).clamp(0.0, 1.0))
            .sum()
    };
    let n = edges.len() - 1;
    let lengths: Vec<f64> = (0..n).map(|k| edges[k + 1] - edges[k]).collect();
    let rates: Vec<Vec<f64>> = (0..4)
        .map(|c| {
            (0..n)
                .map(|k| (curve(c, edges[k + 1]) - curve(c, edges[k])) / lengths[k])
                .collect()
        })
        .collect();
    let channels: Vec<(String, usize, usize)> = pools
        .iter()
        .enumerate()
        .map(|(p, n)| (n.to_string(), 2 * p, 2 * p + 1))
        .collect();
    let expected = common::seed_table(&rates, &lengths, width, 0.3, &channels);
    let st = stats_json(&s);
    common::assert_same_table(&st["statistics"]["rows"], &expected, 1e-6);
    // The stillness was real and longer than the long-term window: a true 0, once.
    assert_eq!(expected["Tot-ReadWriteAverage"][1], 0.0);
    assert!(expected["A-Read"][0] > 4000.0 * 512.0, "{:?}", expected["A-Read"]);
}

/// Samples move from full resolution to long-term averages without losing a byte; beyond the
/// retention they go.
#[test]
fn retention_moves_samples_up_keeping_every_byte_and_drops_the_oldest() {
    let s = Scratch::new();
    let images = tempfile::tempdir().unwrap();
    let r = loop_device_with(&images.path().join("r.img"), 16 << 20, true);
    let pool_arg = format!("R={}", r.dev);
    let mut m = Monitor::start(
        &s,
        &[
            "--pool",
            &pool_arg,
            "--interval",
            "100ms",
            "--lt",
            "500ms",
            "--keep-full",
            "1s",
            "--duration",
            "4s",
        ],
    );
    wait_running(&s, &mut m);
    dd("/dev/zero", &r.dev, 4, "oflag=direct");
    let out = m.wait(30);
    assert!(out.status.success(), "{}", stderr(&out));
    let store = s.store().unwrap();
    let id = store.monitors().unwrap()[0].id;
    let [full, lt, hourly] = store.monitor_levels(id).unwrap();
    assert!(full > 0 && lt > 0 && hourly == 0, "levels {full} {lt} {hourly}");
    assert!(full <= 20, "{full} full-resolution samples after a 4 s run keeping 1 s");
    let w = store.monitor_window(None, 0.0, 1e12).unwrap();
    assert_eq!(w.disks.iter().map(|d| d.delta.write_bytes).sum::<u64>(), 4 << 20);
    let covered: f64 = w.disks.iter().map(|d| d.seconds).sum();
    assert!(
        (3.5..4.5).contains(&covered),
        "the samples cover {covered} s of a 4 s run"
    );

    // A second monitor keeping 1 s in all: nothing older than its retention (and one window of
    // slack, its cadence) is left.
    let s2 = Scratch::new();
    let mut m = Monitor::start(
        &s2,
        &[
            "--pool",
            &pool_arg,
            "--interval",
            "100ms",
            "--lt",
            "500ms",
            "--keep-full",
            "500ms",
            "--retain",
            "1s",
            "--duration",
            "3s",
        ],
    );
    let out = m.wait(30);
    assert!(out.status.success(), "{}", stderr(&out));
    let store = s2.store().unwrap();
    let mon = &store.monitors().unwrap()[0];
    let w = store.monitor_window(None, 0.0, 1e12).unwrap();
    let oldest = w.disks.iter().map(|d| d.t).fold(f64::INFINITY, f64::min);
    assert!(
        oldest >= mon.heartbeat - 2.0,
        "a sample of {oldest} kept, the end was {}",
        mon.heartbeat
    );
    assert!(
        w.disks.len() < 25,
        "{} samples of a 3 s run kept for 1 s",
        w.disks.len()
    );
}

/// Each mistake is refused before anything starts: exit 2, a message naming it, nothing stored.
#[test]
fn bad_input_is_refused_before_anything_is_stored() {
    let s = Scratch::new();
    let images = tempfile::tempdir().unwrap();
    let r = loop_device_with(&images.path().join("r.img"), 16 << 20, false);
    // A loop device's counters outlive its detach: what it wrote before this test is the baseline.
    let sectors_written = || -> u64 {
        let text = std::fs::read_to_string("/proc/diskstats").unwrap();
        let line = text
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(device_name(&r.dev)))
            .unwrap()
            .to_string();
        line.split_whitespace().nth(9).unwrap().parse().unwrap()
    };
    let written_before = sectors_written();
    let plain = s.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let dev_pool = format!("A={}", r.dev);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--pool".into(), "P=/dev/storlab-none".into()],
            "/dev/storlab-none does not exist",
        ),
        (
            vec!["--pool".into(), format!("P={}", plain.display())],
            "is not a mount point",
        ),
        (
            vec![
                "--pool".into(),
                dev_pool.clone(),
                "--pool".into(),
                format!("B={}", r.dev),
            ],
            "is in pool A",
        ),
        (vec!["--pool".into(), "P=".into()], "pool P is empty"),
        (
            vec!["--pool".into(), dev_pool.clone(), "--interval".into(), "0".into()],
            "the least interval is 100ms",
        ),
        (
            vec!["--pool".into(), dev_pool.clone(), "--interval".into(), "50ms".into()],
            "the least interval is 100ms",
        ),
        (
            vec!["--pool".into(), dev_pool.clone(), "--retain".into(), "50s".into()],
            "shorter than the long-term window",
        ),
        (
            vec![
                "--pool".into(),
                dev_pool.clone(),
                "--metrics".into(),
                taken_addr.clone(),
            ],
            "the address is taken",
        ),
        (
            vec![
                "--pool".into(),
                dev_pool.clone(),
                "--metrics".into(),
                "192.0.2.1:9464".into(),
            ],
            "neither loopback nor an address of this host",
        ),
    ];
    for (args, says) in &cases {
        let mut a = vec!["monitor", "run", "--db"];
        let db = s.db();
        a.push(&db);
        a.extend(args.iter().map(|x| x.as_str()));
        let out = Command::new(bin()).args(&a).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(says),
            "{args:?}: expected '{says}' in: {}",
            stderr(&out)
        );
        let stored = s.try_store().map(|st| st.monitors().unwrap().len()).unwrap_or(0);
        assert_eq!(stored, 0, "{args:?} stored a monitor");
    }
    // A second monitor on this host and database, while the first runs.
    let mut first = Monitor::start(&s, &["--pool", &dev_pool, "--interval", "100ms", "--lt", "1s"]);
    wait_running(&s, &mut first);
    let out = s.storlab(&["monitor", "run", "--pool", &dev_pool, "--interval", "1s"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a monitor is already running on"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.store().unwrap().monitors().unwrap().len(), 1);
    assert!(first.stop().status.success());
    // The monitor opened no device for writing: its process never held one (it has no such
    // code path; the loop device's write counter is what dd and nothing else put there).
    assert_eq!(
        sectors_written(),
        written_before,
        "sectors written to {} while only monitored",
        r.dev
    );
}

/// `storlab run --metrics`: Prometheus scrapes the run's live figures while it runs; what it saw
/// grows with the run and never passes what the run stored. A taken address is refused before
/// anything is stored.
#[test]
fn a_runs_live_figures_are_scraped_while_it_runs_and_end_at_the_stored_bytes() {
    let s = Scratch::new();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let target = s.data();
    let mut run = Command::new(bin())
        .args([
            "run",
            "--db",
            &s.db(),
            "--target",
            target.to_str().unwrap(),
            "--phase",
            "write",
        ])
        .args([
            "--size",
            "256m",
            "--bs",
            "64k",
            "--runtime",
            "8s",
            "--rate",
            "16MiB/s",
            "--interval",
            "250ms",
            "--metrics",
            &addr,
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while http_get(&addr, "/metrics", None).is_err() {
        assert!(Instant::now() < deadline, "the run's endpoint did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    let prom = Prometheus::start(std::slice::from_ref(&addr), "1s");
    // Our own reads of the endpoint while it runs: the counter only grows.
    let mut seen = Vec::new();
    let series = |text: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with("storlab_run_written_bytes_total{") && l.contains("kind=\"write\""))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    while let Ok((200, _, body)) = http_get(&addr, "/metrics", None) {
        if let Some(v) = series(&body) {
            seen.push(v);
        }
        assert!(body.contains("storlab_run_latency_seconds_bucket"), "{body}");
        if run.try_wait().unwrap().is_some() {
            break;
        }
        let scraped = prom.query("storlab_run_written_bytes_total");
        if scraped.contains("\"value\"") && seen.len() > 20 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let in_prometheus = prom_value(
        &prom,
        "max_over_time(storlab_run_written_bytes_total{kind=\"write\"}[1m])",
    );
    let running = prom_value(&prom, "max_over_time(storlab_run_phase_running{kind=\"write\"}[1m])");
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stored = doc["phases"][0]["result"]["bytes_written"]
        .as_f64()
        .unwrap_or_else(|| panic!("{doc}"));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "the counter went back: {seen:?}");
    assert!(seen.iter().any(|v| *v > 0.0), "{seen:?}");
    assert!(*seen.last().unwrap() <= stored, "{seen:?} beyond the stored {stored}");
    assert!(
        in_prometheus > 0.0 && in_prometheus <= stored,
        "Prometheus saw {in_prometheus} of {stored}"
    );
    assert_eq!(running, 1.0);

    // A taken address: exit 2, nothing stored, nothing written.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let s2 = Scratch::new();
    let out = s2.storlab(&[
        "run",
        "--target",
        s2.data().to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "1m",
        "--metrics",
        &held.local_addr().unwrap().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the address is taken"), "{}", stderr(&out));
    assert!(s2.nothing_stored());
}

/// `storlab report --monitor FROM..TO`: each pool's throughput, latency and utilisation over
/// time, each kind of plot on one scale for every pool, a run made in the window marked; the
/// page loads in Chromium with no console message and no request of its own.
#[test]
fn the_monitor_report_draws_each_pool_on_shared_scales_with_a_run_marked() {
    let s = Scratch::new();
    let images = tempfile::tempdir().unwrap();
    let a = loop_device_with(&images.path().join("a.img"), 32 << 20, true);
    let b = loop_device_with(&images.path().join("b.img"), 32 << 20, true);
    let mut m = Monitor::start(
        &s,
        &[
            "--pool",
            &format!("A={}", a.dev),
            "--pool",
            &format!("B={}", b.dev),
            "--interval",
            "200ms",
            "--lt",
            "1s",
        ],
    );
    wait_running(&s, &mut m);
    dd("/dev/zero", &a.dev, 12, "oflag=direct");
    dd("/dev/zero", &b.dev, 3, "oflag=direct");
    let run = s.json(&[
        "run",
        "--target",
        s.data().to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "4m",
    ]);
    let run_id = run["id"].as_i64().unwrap_or_else(|| panic!("{run}"));
    std::thread::sleep(Duration::from_millis(600));
    assert!(m.stop().status.success());
    let page = s.path().join("monitor.html");
    let out = s.storlab(&["report", "--monitor", "1h..now", "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let keys = charts(&html);
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "monitor-a-throughput",
            "monitor-a-latency",
            "monitor-a-utilisation",
            "monitor-b-throughput",
            "monitor-b-latency",
            "monitor-b-utilisation"
        ]
    );
    let y = |k: &str| keys.iter().find(|(n, _)| n == k).unwrap().1;
    assert_eq!(
        y("monitor-a-throughput"),
        y("monitor-b-throughput"),
        "one throughput scale"
    );
    assert_eq!(y("monitor-a-latency"), y("monitor-b-latency"), "one latency scale");
    assert_eq!(y("monitor-a-utilisation"), 100.0);
    // 12 MiB in well under a second: pool A's peak interval is above 2 MB/s, and the shared
    // scale holds it.
    assert!(y("monitor-a-throughput") >= 2.0, "{keys:?}");
    assert!(html.contains(&format!("run {run_id} (run)")), "the run is not marked");
    assert!(html.contains("A-Write") && html.contains("Tot-ReadWriteAverage"));
    let work = s.path().join("chromium");
    std::fs::create_dir(&work).unwrap();
    let loaded = chromium(&page, &work, None);
    assert!(loaded.console.is_empty(), "{:?}", loaded.console);
    assert!(loaded.page_requests.is_empty(), "{:?}", loaded.page_requests);
    assert_eq!(loaded.dom.matches("<svg class=\"chart\"").count(), 6);
    // A window with nothing in it is refused, and no page is written.
    let empty = s.path().join("empty.html");
    let out = s.storlab(&[
        "report",
        "--monitor",
        "2001-01-01..2001-01-02",
        "-o",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no monitor"), "{}", stderr(&out));
    assert!(!empty.exists());
}

/// A btrfs RAID1 filesystem over two loop devices, named by its mount point: both devices are
/// watched (the data written once lands on each), their error counters are gauged, and a scrub
/// is seen to start and end on each device, from the kernel's own counters.
#[test]
fn a_btrfs_mount_point_stands_for_its_devices_and_a_scrub_is_seen_on_each() {
    let s = Scratch::new();
    let images = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let a = loop_device_with(&images.path().join("a.img"), 512 << 20, false);
    let b = loop_device_with(&images.path().join("b.img"), 512 << 20, false);
    let mk = Command::new("mkfs.btrfs")
        .args(["-q", "-f", "-d", "raid1", "-m", "raid1", &a.dev, &b.dev])
        .output()
        .unwrap();
    assert!(mk.status.success(), "{}", stderr(&mk));
    let mnt = s.path().join("mnt");
    let mount = common::mount_device(&a.dev, &mnt);
    let mnt_s = mnt.display().to_string();
    let mut m = Monitor::start(
        &s,
        &["--pool", &format!("B={mnt_s}"), "--interval", "100ms", "--lt", "500ms"],
    );
    wait_running(&s, &mut m);
    dd("/dev/zero", &format!("{mnt_s}/data"), 128, "oflag=direct");
    assert!(Command::new("sync").status().unwrap().success());
    // A scrub slow enough to be seen running: 64 MiB/s per device.
    for d in std::fs::read_dir("/sys/fs/btrfs").unwrap().flatten() {
        if d.path().join("devices").join(device_name(&a.dev)).exists() {
            for dev in std::fs::read_dir(d.path().join("devinfo")).unwrap().flatten() {
                std::fs::write(dev.path().join("scrub_speed_max"), "67108864").unwrap();
            }
        }
    }
    let scrub = Command::new("btrfs")
        .args(["scrub", "start", "-B", &mnt_s])
        .output()
        .unwrap();
    assert!(scrub.status.success(), "{}", stderr(&scrub));
    std::thread::sleep(Duration::from_millis(400));
    let out = m.stop();
    assert!(out.status.success(), "{}", stderr(&out));
    let store = s.store().unwrap();
    let w = store.monitor_window(None, 0.0, 1e12).unwrap();
    let kinds: Vec<(String, String)> = w
        .series
        .iter()
        .map(|x| (x.kind.name().to_string(), x.name.clone()))
        .collect();
    for dev in [&a.dev, &b.dev] {
        let n = device_name(dev).to_string();
        assert!(
            kinds.contains(&("disk".into(), n.clone())) && kinds.contains(&("btrfs".into(), n.clone())),
            "{kinds:?}"
        );
    }
    assert!(kinds.contains(&("filesystem".into(), mnt_s.clone())), "{kinds:?}");
    // RAID1: the 128 MiB are written to each device, with btrfs' metadata on top.
    let st = stats_json(&s);
    let written = pool(&st, "B")["write_bytes"].as_u64().unwrap();
    assert!(
        (2 * (128 << 20)..2 * (128 << 20) + (64 << 20)).contains(&written),
        "{written} bytes written to the pool"
    );
    let events = s.json(&["monitor", "events", "--from", "1h"]);
    for dev in [&a.dev, &b.dev] {
        for kind in ["scrub-started", "scrub-ended"] {
            assert!(
                events
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["kind"] == kind && e["name"] == device_name(dev)),
                "no {kind} for {dev}: {events}"
            );
        }
    }
    let id = store.monitors().unwrap()[0].id;
    let gauges = store.monitor_gauges(id).unwrap();
    assert!(
        gauges.iter().any(|g| g.key == "scrub_running" && g.value == 1.0),
        "the scrub was never seen running"
    );
    assert!(gauges.iter().any(|g| g.key == "read_errs" && g.value == 0.0));
    drop(mount);
}

/// The packaged systemd unit runs the packaged configuration: its ExecStart, with the repository's
/// configuration file in place of /etc/storlab/monitor.toml (and a scratch database, a free port,
/// one second), watches the root filesystem and stops cleanly.
#[test]
fn the_packaged_unit_runs_the_packaged_configuration() {
    let s = Scratch::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging");
    let unit = std::fs::read_to_string(root.join("storlab-monitor.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart line");
    let mut words = exec.split_whitespace();
    assert_eq!(words.next(), Some("/usr/bin/storlab"));
    let config = root.join("monitor.toml");
    let args: Vec<String> = words
        .map(|w| {
            if w == "/etc/storlab/monitor.toml" {
                config.display().to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    assert!(args.contains(&config.display().to_string()), "{exec}");
    assert!(unit.contains("StateDirectory=storlab") && unit.contains("ReadWritePaths=/var/lib/storlab"));
    let port = free_port().to_string();
    let out = Command::new(bin())
        .args(&args)
        .args([
            "--duration",
            "1s",
            "--interval",
            "200ms",
            "--metrics",
            &format!("127.0.0.1:{port}"),
            "--db",
            &s.db(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{exec}: {}", stderr(&out));
    let store = s.store().unwrap();
    let m = &store.monitors().unwrap()[0];
    assert_eq!(m.spec.pools[0].name, "root");
    assert_eq!(m.spec.lt, 100.0, "the file's lt");
    assert_eq!(m.spec.interval, 0.2, "the flag wins over the file");
    assert_eq!(m.status, "stopped");
    // A mistake in the file is named with its line; nothing is stored.
    let bad = s.path().join("bad.toml");
    std::fs::write(&bad, "[monitor]\ninterval = \"10s\"\npools = []\n").unwrap();
    let s2 = Scratch::new();
    let out = s2.storlab(&["monitor", "run", "--config", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(line 3)") && stderr(&out).contains("unknown field `pools`"),
        "{}",
        stderr(&out)
    );
    assert!(s2.try_store().is_none_or(|st| st.monitors().unwrap().is_empty()));
}

/// A certificate authority and a server certificate for 127.0.0.1 and localhost, made with the
/// openssl command in `dir`: (CA certificate, server certificate, server key).
fn certificates(dir: &Path) -> (String, String, String) {
    let p = |n: &str| dir.join(n).display().to_string();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().expect("openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=storlab test CA",
        "-keyout",
        &p("ca.key"),
        "-out",
        &p("ca.crt"),
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        &p("server.key"),
        "-out",
        &p("server.csr"),
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        &p("server.csr"),
        "-CA",
        &p("ca.crt"),
        "-CAkey",
        &p("ca.key"),
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &p("san.ext"),
        "-out",
        &p("server.crt"),
    ]);
    (p("ca.crt"), p("server.crt"), p("server.key"))
}

/// curl's HTTP status for `url` (0 when no HTTP answer came), with `extra` arguments.
fn curl_status(url: &str, extra: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "10"])
        .args(extra)
        .arg(url)
        .output()
        .expect("curl");
    let text = stdout(&out);
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

#[test]
fn a_web_config_locks_the_endpoint_with_tls_and_a_password_and_prometheus_scrapes_it() {
    let s = Scratch::new();
    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(certs.path());
    // The password's bcrypt hash, by the test's own hand (the bcrypt crate, cost 4 for speed).
    let hash = bcrypt::hash("s3cret pass", 4).unwrap();
    let web = certs.path().join("web.yml");
    // Relative paths are the file's directory's, as the exporter-toolkit reads them.
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: {key}\nbasic_auth_users:\n  prom: '{hash}'\n"
        ),
    )
    .unwrap();
    let _ = cert;
    let images = tempfile::tempdir().unwrap();
    let dev = loop_device_with(&images.path().join("w.img"), 16 << 20, false);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut m = Monitor::start(
        &s,
        &[
            "--pool",
            &format!("W={}", dev.dev),
            "--interval",
            "1s",
            "--metrics",
            &addr,
            "--web-config",
            web.to_str().unwrap(),
        ],
    );
    let url = format!("https://{addr}/metrics");
    let deadline = Instant::now() + Duration::from_secs(20);
    while curl_status(&url, &["--cacert", &ca]).0 == 0 {
        assert!(Instant::now() < deadline, "the endpoint did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Without credentials, with a wrong password, with an unknown user: 401.
    assert_eq!(curl_status(&url, &["--cacert", &ca]).0, 401);
    assert_eq!(curl_status(&url, &["--cacert", &ca, "-u", "prom:wrong"]).0, 401);
    assert_eq!(curl_status(&url, &["--cacert", &ca, "-u", "root:s3cret pass"]).0, 401);
    // With them: 200 and the figures.
    let (code, body) = curl_status(&url, &["--cacert", &ca, "-u", "prom:s3cret pass"]);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("storlab_monitor_sweeps_total"), "{body}");
    // Plain HTTP gets no answer from a TLS endpoint, and a client that does not trust the CA none.
    assert_ne!(
        curl_status(&format!("http://{addr}/metrics"), &["-u", "prom:s3cret pass"]).0,
        200
    );
    assert_eq!(
        curl_status(&url, &["-u", "prom:s3cret pass"]).0,
        0,
        "an unknown CA is refused by curl"
    );

    // Debian's Prometheus scrapes it over TLS with basic authentication.
    std::fs::write(certs.path().join("password"), "s3cret pass").unwrap();
    let job = format!(
        "    scheme: https\n    tls_config:\n      ca_file: {ca}\n    basic_auth:\n      username: prom\n      password_file: {}\n",
        certs.path().join("password").display()
    );
    let prom = Prometheus::start_scraping(free_port(), std::slice::from_ref(&addr), "1s", &job);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sweeps = prom_value(&prom, "storlab_monitor_sweeps_total");
        if sweeps >= 1.0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus scraped no sweep: {}",
            prom.targets()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = m.stop();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_web_config_that_does_not_read_is_refused_before_anything_is_stored() {
    let s = Scratch::new();
    let dir = tempfile::tempdir().unwrap();
    let images = tempfile::tempdir().unwrap();
    let dev = loop_device_with(&images.path().join("w.img"), 16 << 20, false);
    let port = free_port().to_string();
    for (text, words) in [
        (
            "basic_auth_users:\n  prom: hunter2\n",
            "line 2: user prom: the password is not a bcrypt hash",
        ),
        (
            "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
            "line 4: tls_server_config.cipher_suites is not a key storlab honours",
        ),
        (
            "tls_server_config:\n  cert_file: nowhere.crt\n  key_file: nowhere.key\n",
            "cert_file",
        ),
        ("basic_auth_users: [\n", "line"),
    ] {
        let web = dir.path().join("web.yml");
        std::fs::write(&web, text).unwrap();
        let out = Command::new(bin())
            .args(["monitor", "run", "--db", &s.db(), "--pool", &format!("W={}", dev.dev)])
            .args([
                "--metrics",
                &format!("127.0.0.1:{port}"),
                "--web-config",
                web.to_str().unwrap(),
                "--duration",
                "2s",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{text}: {}", stderr(&out));
        assert!(s.nothing_stored(), "refused before the database");
    }
}
