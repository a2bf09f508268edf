//! What Prometheus scrapes: the monitor's figures as metric families of the `prometheus-client`
//! crate, named as node_exporter names its own under a `storlab_` prefix (so that a dashboard
//! written for `node_disk_read_bytes_total` reads `storlab_disk_read_bytes_total` the same way),
//! each with HELP and its unit, labelled by pool and device; and the HTTP endpoint that serves
//! them (`tiny_http`, one thread).
//!
//! Counters count on across a 32-bit wrap of the kernel's counter and across a device's
//! absence (storlab adds the steps it measured), so `rate()` never sees a false reset.
//!
//! The endpoint speaks both exposition formats: OpenMetrics (what the crate encodes, and what
//! Prometheus asks for first) and, for a client that does not ask for it (promtool, curl), the
//! classic text format 0.0.4, which differs in naming a counter's family by its sample name
//! (`…_total`) and in having no `# UNIT` and `# EOF` lines.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use storlab_model::monitor::{PoolPoint, Series, SeriesKind};
use storlab_store::Sweep;

use crate::sampler::BTRFS_ERRORS;
use crate::MonitorError;

/// A label set: (name, value) pairs.
pub type Labels = Vec<(&'static str, String)>;
type CounterF = Counter<f64, AtomicU64>;
type GaugeF = Gauge<f64, AtomicU64>;

/// The HTTP endpoint serving a registry at /metrics until dropped.
pub struct Endpoint {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

/// Binds `addr` (ADDRESS:PORT) for the metrics endpoint: before anything starts, so that a
/// taken port or an address that is not this host's is an error the user sees at once.
pub fn bind(addr: &str) -> Result<TcpListener, MonitorError> {
    let bad = |why: String| MonitorError::Input(format!("--metrics {addr}: {why}"));
    let resolved: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|_| bad("expected ADDRESS:PORT, e.g. 127.0.0.1:9464 (loopback) or this host's own address".into()))?
        .collect();
    let first = *resolved
        .first()
        .ok_or_else(|| bad("the name resolves to no address".into()))?;
    TcpListener::bind(first).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => bad(format!(
            "the address is taken (another exporter or storlab?); `ss -ltnp 'sport = :{}'` shows by whom, or choose another port",
            first.port()
        )),
        std::io::ErrorKind::AddrNotAvailable => bad(format!(
            "{} is neither loopback nor an address of this host's interfaces (`ip -brief address` lists them)",
            first.ip()
        )),
        std::io::ErrorKind::PermissionDenied => bad(format!("port {} needs privileges; choose one above 1023", first.port())),
        _ => bad(e.to_string()),
    })
}

/// The classic text format (0.0.4) of an OpenMetrics exposition: a counter family's HELP and
/// TYPE lines name it by its samples' name (`x_total`), UNIT and EOF lines go.
pub fn classic_text(openmetrics: &str) -> String {
    let mut counters: Vec<&str> = Vec::new();
    for l in openmetrics.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            if let Some(name) = rest.strip_suffix(" counter") {
                counters.push(name);
            }
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for l in openmetrics.lines() {
        if l.starts_with("# UNIT ") || l == "# EOF" {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = l.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters.contains(&name).then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(l));
        out.push('\n');
    }
    out
}

fn respond(rq: tiny_http::Request, registry: &Registry) {
    let path = rq.url().split('?').next().unwrap_or("");
    if path != "/metrics" {
        let r = tiny_http::Response::from_string("storlab: the metrics are at /metrics\n").with_status_code(404);
        let _ = rq.respond(r);
        return;
    }
    let mut body = String::new();
    if encode(&mut body, registry).is_err() {
        let _ = rq.respond(tiny_http::Response::from_string("cannot encode the metrics\n").with_status_code(500));
        return;
    }
    let wants_openmetrics = rq
        .headers()
        .iter()
        .any(|h| h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text"));
    let (body, ctype) = if wants_openmetrics {
        (body, "application/openmetrics-text; version=1.0.0; charset=utf-8")
    } else {
        (classic_text(&body), "text/plain; version=0.0.4; charset=utf-8")
    };
    let header = tiny_http::Header::from_bytes("Content-Type", ctype).expect("a valid header");
    let _ = rq.respond(tiny_http::Response::from_string(body).with_header(header));
}

impl Endpoint {
    /// Serves `registry` at http://ADDR/metrics from `listener` (see [`bind`]) on a thread of
    /// its own.
    pub fn start(listener: TcpListener, registry: Arc<Registry>) -> Result<Endpoint, MonitorError> {
        let addr = listener.local_addr().map_err(|e| MonitorError::Io(e.to_string()))?;
        let server = Arc::new(
            tiny_http::Server::from_listener(listener, None)
                .map_err(|e| MonitorError::Io(format!("metrics endpoint: {e}")))?,
        );
        let s = server.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for rq in s.incoming_requests() {
                    respond(rq, &registry);
                }
            })
            .map_err(|e| MonitorError::Io(e.to_string()))?;
        Ok(Endpoint {
            server,
            thread: Some(thread),
            addr,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

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

impl MonitorMetrics {
    /// Registers the families in `registry`.
    pub fn register(registry: &mut Registry) -> MonitorMetrics {
        let mut disk_counters = Vec::new();
        for (i, (name, help, unit)) in DISK_COUNTERS.iter().enumerate() {
            let f = Family::<Labels, Counter>::default();
            match unit {
                Some(u) => registry.register_with_unit(*name, *help, u.clone(), f.clone()),
                None => registry.register(*name, *help, f.clone()),
            }
            disk_counters.push((i, f));
        }
        let mut disk_seconds = Vec::new();
        for (i, (name, help)) in DISK_SECONDS.iter().enumerate() {
            let f = Family::<Labels, CounterF>::default();
            registry.register_with_unit(*name, *help, Unit::Seconds, f.clone());
            disk_seconds.push((i, f));
        }
        let disk_in_flight = Family::<Labels, Gauge>::default();
        registry.register(
            "storlab_disk_io_now",
            "I/Os in flight at the last sample",
            disk_in_flight.clone(),
        );
        let disk_present = Family::<Labels, Gauge>::default();
        registry.register(
            "storlab_disk_present",
            "1 while the device is in /proc/diskstats (a loop device: attached), 0 while it is gone",
            disk_present.clone(),
        );
        let fs = FS_GAUGES
            .iter()
            .map(|(name, help, bytes)| {
                let f = Family::<Labels, Gauge>::default();
                if *bytes {
                    registry.register_with_unit(*name, *help, Unit::Bytes, f.clone());
                } else {
                    registry.register(*name, *help, f.clone());
                }
                f
            })
            .collect();
        let fs_mounted = Family::<Labels, Gauge>::default();
        registry.register(
            "storlab_filesystem_mounted",
            "1 while the pool's mount point is mounted",
            fs_mounted.clone(),
        );
        let md = MD_GAUGES
            .iter()
            .map(|(key, name, help)| {
                let f = Family::<Labels, GaugeF>::default();
                registry.register(*name, *help, f.clone());
                (*key, f)
            })
            .collect();
        let btrfs_errors = Family::<Labels, Counter>::default();
        registry.register(
            "storlab_btrfs_device_errors",
            "Errors btrfs counted on a device (type: write_errs, read_errs, flush_errs, corruption_errs, generation_errs)",
            btrfs_errors.clone(),
        );
        let nfs_ops = Family::<Labels, Counter>::default();
        registry.register(
            "storlab_nfs_operations",
            "NFS operations sent, per operation (/proc/self/mountstats)",
            nfs_ops.clone(),
        );
        let nfs_rtt = Family::<Labels, CounterF>::default();
        registry.register_with_unit(
            "storlab_nfs_operation_rtt",
            "Round-trip time of NFS operations, summed",
            Unit::Seconds,
            nfs_rtt.clone(),
        );
        let nfs_bytes = Family::<Labels, Counter>::default();
        registry.register_with_unit(
            "storlab_nfs_application",
            "Bytes the applications read and wrote through the mount (direction: read, write)",
            Unit::Bytes,
            nfs_bytes.clone(),
        );
        let pool = POOL_GAUGES
            .iter()
            .map(|(name, help, unit)| {
                let f = Family::<Labels, GaugeF>::default();
                registry.register_with_unit(*name, *help, Unit::Other(unit.to_string()), f.clone());
                f
            })
            .collect();
        let sweeps = Counter::default();
        registry.register(
            "storlab_monitor_sweeps",
            "Sweeps the monitor took (one per interval)",
            sweeps.clone(),
        );
        let events = Family::<Labels, Counter>::default();
        registry.register(
            "storlab_monitor_events",
            "Events the monitor recorded, per kind",
            events.clone(),
        );
        let sweep_seconds = GaugeF::default();
        registry.register_with_unit(
            "storlab_monitor_sweep_duration",
            "How long the last sweep took",
            Unit::Seconds,
            sweep_seconds.clone(),
        );
        MonitorMetrics {
            disk_counters,
            disk_seconds,
            disk_in_flight,
            disk_present,
            fs,
            fs_mounted,
            md,
            btrfs_errors,
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
        let of = |idx: u32| &series[idx as usize];
        let disk_labels = |s: &Series| vec![("pool", s.pool.clone()), ("device", s.name.clone())];
        for d in &sweep.disks {
            let l = disk_labels(of(d.series));
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
            let s = of(*idx);
            let l = disk_labels(s);
            self.disk_present.get_or_create(&l).set(*here as i64);
            // A disk's counters exist from the start, at 0, so that `rate()` sees its first step.
            for (_, f) in &self.disk_counters {
                let _ = f.get_or_create(&l);
            }
            for (_, f) in &self.disk_seconds {
                let _ = f.get_or_create(&l);
            }
        }
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
            let s = of(g.series);
            match s.kind {
                SeriesKind::Md => {
                    if let Some(f) = self.md.get(g.key.as_str()) {
                        f.get_or_create(&vec![("pool", s.pool.clone()), ("device", s.name.clone())])
                            .set(g.value);
                    }
                }
                SeriesKind::Btrfs if BTRFS_ERRORS.contains(&g.key.as_str()) => {
                    let grew = self.growth(g.series, &g.key, g.value);
                    self.btrfs_errors
                        .get_or_create(&vec![
                            ("pool", s.pool.clone()),
                            ("device", s.name.clone()),
                            ("type", g.key.clone()),
                        ])
                        .inc_by(grew as u64);
                }
                SeriesKind::Nfs => {
                    let grew = self.growth(g.series, &g.key, g.value);
                    let mp = ("mountpoint", s.name.clone());
                    if let Some(op) = g.key.strip_prefix("ops:") {
                        self.nfs_ops
                            .get_or_create(&vec![("pool", s.pool.clone()), mp, ("operation", op.to_string())])
                            .inc_by(grew as u64);
                    } else if let Some(op) = g.key.strip_prefix("rtt_ms:") {
                        self.nfs_rtt
                            .get_or_create(&vec![("pool", s.pool.clone()), mp, ("operation", op.to_string())])
                            .inc_by(grew / 1000.0);
                    } else if let Some(dir) = g.key.strip_suffix("_bytes") {
                        self.nfs_bytes
                            .get_or_create(&vec![("pool", s.pool.clone()), mp, ("direction", dir.to_string())])
                            .inc_by(grew as u64);
                    }
                }
                _ => {}
            }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classic_format_names_a_counter_family_by_its_samples_and_drops_unit_and_eof() {
        let om = "# HELP storlab_disk_read_bytes Bytes read.\n# TYPE storlab_disk_read_bytes counter\n# UNIT storlab_disk_read_bytes bytes\nstorlab_disk_read_bytes_total{pool=\"P\"} 5\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n# EOF\n";
        let t = classic_text(om);
        assert_eq!(
            t,
            "# HELP storlab_disk_read_bytes_total Bytes read.\n# TYPE storlab_disk_read_bytes_total counter\nstorlab_disk_read_bytes_total{pool=\"P\"} 5\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n"
        );
    }

    #[test]
    fn a_taken_port_and_a_foreign_address_are_refused_by_name() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap().to_string();
        let e = bind(&addr).unwrap_err().to_string();
        assert!(e.contains("the address is taken"), "{e}");
        // TEST-NET-1 (RFC 5737) is no host's address.
        let e = bind("192.0.2.1:9464").unwrap_err().to_string();
        assert!(e.contains("neither loopback nor an address of this host"), "{e}");
        let e = bind("nonsense").unwrap_err().to_string();
        assert!(e.contains("expected ADDRESS:PORT"), "{e}");
    }
}
