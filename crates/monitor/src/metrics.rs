//! What Prometheus scrapes: the monitor's figures as metric families of the `prometheus-client`
//! crate, named as node_exporter names its own under a `storlab_` prefix (so that a dashboard
//! written for `node_disk_read_bytes_total` reads `storlab_disk_read_bytes_total` the same way),
//! each with HELP and its unit, labelled by pool and device; and the HTTP endpoint that serves
//! them (`tiny_http`, one thread).
//!
//! Counters count on across a 32-bit wrap of the kernel's counter and across a device's
//! absence (storlab adds the steps it measured), so `rate()` never sees a false reset.
//!
//! The endpoint that serves them is crates/metrics' (both exposition formats).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use storlab_model::monitor::{PoolPoint, Series, SeriesKind};
use storlab_store::Sweep;

use crate::sampler::BTRFS_ERRORS;

/// A label set: (name, value) pairs.
pub type Labels = Vec<(&'static str, String)>;
type CounterF = Counter<f64, AtomicU64>;
type GaugeF = Gauge<f64, AtomicU64>;

/// The monitor's metric families.
pub struct MonitorMetrics {
    disk_counters: Vec<(usize, Family<Labels, Counter>)>,
    disk_seconds: Vec<(usize, Family<Labels, CounterF>)>,
    disk_in_flight: Family<Labels, Gauge>,
    disk_present: Family<Labels, Gauge>,
    fs: Vec<Family<Labels, Gauge>>,
    fs_mounted: Family<Labels, Gauge>,
    md: HashMap<&'static str, Family<Labels, GaugeF>>,
    btrfs_errors: Family<Labels, Counter>,
    btrfs_scrub: HashMap<&'static str, Family<Labels, GaugeF>>,
    nfs_ops: Family<Labels, Counter>,
    nfs_rtt: Family<Labels, CounterF>,
    nfs_bytes: Family<Labels, Counter>,
    pool: Vec<Family<Labels, GaugeF>>,
    sweeps: Counter,
    events: Family<Labels, Counter>,
    sweep_seconds: GaugeF,
    // Kernel figures that storlab turns into counters by their steps.
    last: Mutex<HashMap<(u32, String), f64>>,
}

// The disk counters in DiskDelta order: (index, name, help).
const DISK_COUNTERS: [(&str, &str, Option<Unit>); 6] = [
    (
        "storlab_disk_reads_completed",
        "Reads completed (/proc/diskstats)",
        None,
    ),
    ("storlab_disk_reads_merged", "Adjacent reads merged into one", None),
    ("storlab_disk_read", "Bytes read", Some(Unit::Bytes)),
    ("storlab_disk_writes_completed", "Writes completed", None),
    ("storlab_disk_writes_merged", "Adjacent writes merged into one", None),
    ("storlab_disk_written", "Bytes written", Some(Unit::Bytes)),
];
const DISK_SECONDS: [(&str, &str); 4] = [
    ("storlab_disk_read_time", "Time spent reading, summed over requests"),
    ("storlab_disk_write_time", "Time spent writing, summed over requests"),
    (
        "storlab_disk_io_time",
        "Time the device had I/O in flight (utilisation is its rate)",
    ),
    (
        "storlab_disk_io_time_weighted",
        "Time in flight weighted by the requests in flight (average queue length is its rate)",
    ),
];
const FS_GAUGES: [(&str, &str, bool); 5] = [
    ("storlab_filesystem_size", "The filesystem's size", true),
    ("storlab_filesystem_avail", "Space free for unprivileged users", true),
    ("storlab_filesystem_free", "Space free", true),
    ("storlab_filesystem_files", "Inodes", false),
    ("storlab_filesystem_files_free", "Free inodes", false),
];
const POOL_GAUGES: [(&str, &str, &str); 5] = [
    ("storlab_pool_read", "The pool's read throughput over the window (interval: the last sample; lt: the long-term average), summed over its top devices", "bytes_per_second"),
    ("storlab_pool_written", "The pool's write throughput over the window", "bytes_per_second"),
    ("storlab_pool_operations", "The pool's completed reads and writes per second over the window", "per_second"),
    ("storlab_pool_latency", "Average time per completed I/O over the window", "seconds"),
    ("storlab_pool_utilisation", "The busiest device's busy fraction over the window", "ratio"),
];
const BTRFS_SCRUB: [(&str, &str, &str, Option<Unit>); 3] = [
    (
        "scrub_running",
        "storlab_btrfs_scrub_running",
        "1 while a scrub runs on the device (the kernel's counters)",
        None,
    ),
    (
        "scrub_bytes",
        "storlab_btrfs_scrub_scrubbed",
        "Bytes the running scrub has read on the device",
        Some(Unit::Bytes),
    ),
    (
        "errors",
        "storlab_btrfs_scrub_errors",
        "Errors the running scrub found on the device (type: read, csum, verify, corrected, uncorrectable)",
        None,
    ),
];
const MD_GAUGES: [(&str, &str, &str); 4] = [
    (
        "syncing",
        "storlab_md_syncing",
        "1 while the array resyncs, recovers or checks (sync_action not idle)",
    ),
    (
        "sync_completed",
        "storlab_md_sync_completed_ratio",
        "Fraction of the current sync done",
    ),
    (
        "mismatch_cnt",
        "storlab_md_mismatch_sectors",
        "Sectors found to mismatch by the last check (mismatch_cnt)",
    ),
    ("degraded", "storlab_md_degraded_disks", "Disks missing from the array"),
];

/// A metric's name, help and unit.
type Info<'a> = (&'a str, &'a str, Option<Unit>);

const DISK_IO_NOW: Info = ("storlab_disk_io_now", "I/Os in flight at the last sample", None);
const DISK_PRESENT: Info = (
    "storlab_disk_present",
    "1 while the device is in /proc/diskstats (a loop device: attached), 0 while it is gone",
    None,
);
const FS_MOUNTED: Info = (
    "storlab_filesystem_mounted",
    "1 while the pool's mount point is mounted",
    None,
);
const BTRFS_DEVICE_ERRORS: Info = (
    "storlab_btrfs_device_errors",
    "Errors btrfs counted on a device (type: write_errs, read_errs, flush_errs, corruption_errs, generation_errs)",
    None,
);
const NFS_OPERATIONS: Info = (
    "storlab_nfs_operations",
    "NFS operations sent, per operation (/proc/self/mountstats)",
    None,
);
const NFS_RTT: Info = (
    "storlab_nfs_operation_rtt",
    "Round-trip time of NFS operations, summed",
    Some(Unit::Seconds),
);
const NFS_APPLICATION: Info = (
    "storlab_nfs_application",
    "Bytes the applications read and wrote through the mount (direction: read, write)",
    Some(Unit::Bytes),
);
const MONITOR_SWEEPS: Info = (
    "storlab_monitor_sweeps",
    "Sweeps the monitor took (one per interval)",
    None,
);
const MONITOR_EVENTS: Info = ("storlab_monitor_events", "Events the monitor recorded, per kind", None);
const MONITOR_SWEEP_DURATION: Info = (
    "storlab_monitor_sweep_duration",
    "How long the last sweep took",
    Some(Unit::Seconds),
);

/// Registers `metric` with its name, help and unit; the metric, to keep.
fn reg<M: prometheus_client::registry::Metric + Clone>(
    registry: &mut Registry,
    (name, help, unit): Info,
    metric: M,
) -> M {
    match unit {
        Some(u) => registry.register_with_unit(name, help, u, metric.clone()),
        None => registry.register(name, help, metric.clone()),
    }
    metric
}

impl MonitorMetrics {
    /// Registers the families in `registry`.
    pub fn register(registry: &mut Registry) -> MonitorMetrics {
        let disk_counters = DISK_COUNTERS
            .iter()
            .enumerate()
            .map(|(i, (name, help, unit))| (i, reg(registry, (name, help, unit.clone()), Family::default())))
            .collect();
        let disk_seconds = DISK_SECONDS
            .iter()
            .enumerate()
            .map(|(i, (name, help))| (i, reg(registry, (name, help, Some(Unit::Seconds)), Family::default())))
            .collect();
        let disk_in_flight = reg(registry, DISK_IO_NOW, Family::default());
        let disk_present = reg(registry, DISK_PRESENT, Family::default());
        let fs = FS_GAUGES
            .iter()
            .map(|(name, help, bytes)| reg(registry, (name, help, bytes.then_some(Unit::Bytes)), Family::default()))
            .collect();
        let fs_mounted = reg(registry, FS_MOUNTED, Family::default());
        let md = MD_GAUGES
            .iter()
            .map(|(key, name, help)| (*key, reg(registry, (name, help, None), Family::default())))
            .collect();
        let btrfs_errors = reg(registry, BTRFS_DEVICE_ERRORS, Family::default());
        let btrfs_scrub = BTRFS_SCRUB
            .iter()
            .map(|(key, name, help, unit)| (*key, reg(registry, (name, help, unit.clone()), Family::default())))
            .collect();
        let nfs_ops = reg(registry, NFS_OPERATIONS, Family::default());
        let nfs_rtt = reg(registry, NFS_RTT, Family::default());
        let nfs_bytes = reg(registry, NFS_APPLICATION, Family::default());
        let pool = POOL_GAUGES
            .iter()
            .map(|(name, help, unit)| {
                reg(
                    registry,
                    (name, help, Some(Unit::Other(unit.to_string()))),
                    Family::default(),
                )
            })
            .collect();
        let sweeps = reg(registry, MONITOR_SWEEPS, Counter::default());
        let events = reg(registry, MONITOR_EVENTS, Family::default());
        let sweep_seconds = reg(registry, MONITOR_SWEEP_DURATION, GaugeF::default());
        MonitorMetrics {
            disk_counters,
            disk_seconds,
            disk_in_flight,
            disk_present,
            fs,
            fs_mounted,
            md,
            btrfs_errors,
            btrfs_scrub,
            nfs_ops,
            nfs_rtt,
            nfs_bytes,
            pool,
            sweeps,
            events,
            sweep_seconds,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// The growth of a kernel figure since the last sweep (0 at the first, and when it went
    /// back: a counter zeroed by `btrfs device stats -z` starts again).
    fn growth(&self, series: u32, key: &str, now: f64) -> f64 {
        let mut last = self.last.lock().expect("not poisoned");
        let before = last.insert((series, key.to_string()), now);
        match before {
            Some(b) if now >= b => now - b,
            _ => 0.0,
        }
    }

    /// Publishes one sweep: counters grow by its steps, gauges take its figures; `present`
    /// says which disks are there now; `pools` are the pools' figures over the last interval
    /// and over the long-term window.
    pub fn publish(
        &self,
        series: &[Series],
        sweep: &Sweep,
        present: &[(u32, bool)],
        pools: &[(String, PoolPoint, PoolPoint)],
        took: f64,
    ) {
        self.publish_disks(series, sweep, present);
        for s in series.iter().filter(|s| s.kind == SeriesKind::Filesystem) {
            let l = vec![("pool", s.pool.clone()), ("mountpoint", s.name.clone())];
            let here = sweep.fs.iter().find(|f| f.series == s.idx);
            self.fs_mounted.get_or_create(&l).set(here.is_some() as i64);
            if let Some(f) = here {
                let v = [f.size, f.avail, f.free, f.files, f.files_free];
                for (g, v) in self.fs.iter().zip(v) {
                    g.get_or_create(&l).set(v as i64);
                }
            }
        }
        for g in &sweep.gauges {
            self.publish_gauge(&series[g.series as usize], g);
        }
        for (pool, interval, lt) in pools {
            for (window, p) in [("interval", interval), ("lt", lt)] {
                let l = vec![("pool", pool.clone()), ("window", window.to_string())];
                let v = [p.read_rate, p.write_rate, p.iops, p.latency, p.utilisation];
                for (g, v) in self.pool.iter().zip(v) {
                    g.get_or_create(&l).set(v);
                }
            }
        }
        for e in &sweep.events {
            self.events.get_or_create(&vec![("kind", e.kind.clone())]).inc();
        }
        self.sweeps.inc();
        self.sweep_seconds.set(took);
    }

    /// Each disk's counters by their steps, its I/Os in flight, and whether it is there; a
    /// disk's counters exist from the start, at 0, so that `rate()` sees its first step.
    fn publish_disks(&self, series: &[Series], sweep: &Sweep, present: &[(u32, bool)]) {
        let labels = |idx: u32| {
            let s = &series[idx as usize];
            vec![("pool", s.pool.clone()), ("device", s.name.clone())]
        };
        for d in &sweep.disks {
            let l = labels(d.series);
            let x = &d.delta;
            let counts = [
                x.reads,
                x.reads_merged,
                x.read_bytes,
                x.writes,
                x.writes_merged,
                x.write_bytes,
            ];
            for (i, f) in &self.disk_counters {
                f.get_or_create(&l).inc_by(counts[*i]);
            }
            let ms = [x.read_ms, x.write_ms, x.busy_ms, x.weighted_ms];
            for (i, f) in &self.disk_seconds {
                f.get_or_create(&l).inc_by(ms[*i] as f64 / 1000.0);
            }
            self.disk_in_flight.get_or_create(&l).set(x.in_flight as i64);
        }
        for (idx, here) in present {
            let l = labels(*idx);
            self.disk_present.get_or_create(&l).set(*here as i64);
            for (_, f) in &self.disk_counters {
                let _ = f.get_or_create(&l);
            }
            for (_, f) in &self.disk_seconds {
                let _ = f.get_or_create(&l);
            }
        }
    }

    /// A gauge of a sweep into its family: an md array's state, a btrfs scrub's progress and
    /// errors, btrfs's device errors and NFS's operations, round trips and bytes by their steps.
    fn publish_gauge(&self, s: &Series, g: &storlab_model::monitor::GaugeSample) {
        let dev = || vec![("pool", s.pool.clone()), ("device", s.name.clone())];
        match s.kind {
            SeriesKind::Md => {
                if let Some(f) = self.md.get(g.key.as_str()) {
                    f.get_or_create(&dev()).set(g.value);
                }
            }
            SeriesKind::Btrfs if g.key.starts_with("scrub_") => {
                if let Some(f) = self.btrfs_scrub.get(g.key.as_str()) {
                    f.get_or_create(&dev()).set(g.value);
                } else if let Some(kind) = g.key.strip_prefix("scrub_").and_then(|k| k.strip_suffix("_errors")) {
                    let mut l = dev();
                    l.push(("type", kind.to_string()));
                    self.btrfs_scrub["errors"].get_or_create(&l).set(g.value);
                }
            }
            SeriesKind::Btrfs if BTRFS_ERRORS.contains(&g.key.as_str()) => {
                let grew = self.growth(g.series, &g.key, g.value);
                let mut l = dev();
                l.push(("type", g.key.clone()));
                self.btrfs_errors.get_or_create(&l).inc_by(grew as u64);
            }
            SeriesKind::Nfs => {
                let grew = self.growth(g.series, &g.key, g.value);
                let l = |k: &'static str, v: &str| {
                    vec![
                        ("pool", s.pool.clone()),
                        ("mountpoint", s.name.clone()),
                        (k, v.to_string()),
                    ]
                };
                if let Some(op) = g.key.strip_prefix("ops:") {
                    self.nfs_ops.get_or_create(&l("operation", op)).inc_by(grew as u64);
                } else if let Some(op) = g.key.strip_prefix("rtt_ms:") {
                    self.nfs_rtt.get_or_create(&l("operation", op)).inc_by(grew / 1000.0);
                } else if let Some(dir) = g.key.strip_suffix("_bytes") {
                    self.nfs_bytes.get_or_create(&l("direction", dir)).inc_by(grew as u64);
                }
            }
            _ => {}
        }
    }
}
