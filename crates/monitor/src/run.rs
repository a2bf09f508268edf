//! The monitor's loop: a sweep every interval, on a fixed schedule (the n-th sweep at start +
//! n × interval, so that a slow sweep does not shift the ones after it), stored in one
//! transaction, published to the metrics, and the retention kept every long-term window. A
//! sweep that cannot be stored (the database away) is kept in memory and stored with the next
//! one; the sampling and the metrics go on. A stop (Ctrl-C, SIGTERM from systemd, the end of
//! `--duration`) takes a last sweep for the part of an interval since the one before.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::registry::Registry;
use storlab_model::monitor::{pool_points, Level, MonitorEvent, MonitorSpec, PoolPoint, PoolSpec, Series};
use storlab_store::TimeBase;
use storlab_store::{Store, Sweep};

use storlab_metrics::endpoint::Endpoint;

use crate::metrics::MonitorMetrics;
use crate::pools::Watch;
use crate::sampler::{Files, Sampler};
use crate::MonitorError;

/// The least interval: below it the kernel's millisecond counters say little and a sweep's own
/// cost starts to show.
pub const MIN_INTERVAL: f64 = 0.1;

/// The least interval for the benchmark that simulates a day of 10 s samples in 86 s
/// (bench/monitorbench.py, through a hidden flag): 1 ms.
pub const BENCH_INTERVAL: f64 = 0.001;

/// Sweeps kept in memory while the database is away (a day of 10 s sweeps).
const MAX_PENDING: usize = 8640;

/// The retention's defaults: every sample for two days, the long-term averages for thirty,
/// hourly ones for a year.
pub const DEFAULT_KEEP_FULL: f64 = 2.0 * 86400.0;
/// See [`DEFAULT_KEEP_FULL`].
pub const DEFAULT_KEEP_LT: f64 = 30.0 * 86400.0;
/// See [`DEFAULT_KEEP_FULL`].
pub const DEFAULT_RETAIN: f64 = 365.0 * 86400.0;

fn dur(secs: f64) -> String {
    storlab_units::Duration((secs.max(0.0) * 1e9).round() as u64).to_string()
}

/// Checks the timing and retention and makes the spec: an interval of at least 100 ms, a
/// long-term window of at least one interval, a retention of at least one window. The finer
/// levels are kept no longer than the whole retention.
pub fn spec(
    pools: Vec<PoolSpec>,
    interval: f64,
    floor: f64,
    lt: f64,
    keep_full: Option<f64>,
    keep_lt: Option<f64>,
    retain: Option<f64>,
) -> Result<MonitorSpec, MonitorError> {
    let bad = |m: String| Err(MonitorError::Input(m));
    // NaN is refused too.
    if interval.is_nan() || interval < floor {
        return bad(format!(
            "--interval {}: the least interval is 100ms (the kernel counts disk time in milliseconds; finer samples say little)",
            dur(interval)
        ));
    }
    if lt < interval {
        return bad(format!(
            "--lt {}: the long-term window must hold at least one interval ({})",
            dur(lt),
            dur(interval)
        ));
    }
    let retain = retain.unwrap_or(DEFAULT_RETAIN);
    if retain < lt {
        return bad(format!(
            "--retain {}: shorter than the long-term window --lt {}; keep at least one window",
            dur(retain),
            dur(lt)
        ));
    }
    let keep_full = keep_full.unwrap_or(DEFAULT_KEEP_FULL).min(retain);
    let keep_lt = keep_lt.unwrap_or(DEFAULT_KEEP_LT).min(retain).max(keep_full);
    if keep_full < lt {
        return bad(format!(
            "--keep-full {}: keep every sample at least one long-term window ({}) so that its average can be made",
            dur(keep_full),
            dur(lt)
        ));
    }
    Ok(MonitorSpec {
        pools,
        interval,
        lt,
        keep_full,
        keep_lt,
        retain,
    })
}

/// What a monitor is given.
pub struct MonitorConfig {
    /// What to watch and how often.
    pub spec: MonitorSpec,
    /// The series, resolved.
    pub watches: Vec<Watch>,
    /// The kernel's files.
    pub files: Files,
    /// Stop after this long (None: until stopped).
    pub duration: Option<f64>,
    /// The metrics endpoint's socket, bound before anything started.
    pub metrics: Option<storlab_metrics::endpoint::Bound>,
    /// Set to stop.
    pub stop: Arc<AtomicBool>,
    /// This host.
    pub host: String,
}

/// How a monitor ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Its id in the database.
    pub id: i64,
    /// Sweeps taken.
    pub sweeps: u64,
    /// Events recorded.
    pub events: u64,
    /// Sweeps that could not be stored (lost when the pending ones overflowed).
    pub lost_sweeps: u64,
}

/// A flag that Ctrl-C and SIGTERM (systemd's stop) set: the monitor takes its last sweep and
/// ends. A second signal leaves at once.
pub fn stop_on_signal() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
    });
    stop
}

/// Now, seconds since the epoch.
pub fn now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The weighted average of a pool's last points: rates over the seconds they cover, latency
/// over the operations.
fn long_term(points: &VecDeque<PoolPoint>) -> PoolPoint {
    let secs: f64 = points.iter().map(|p| p.seconds).sum();
    if secs <= 0.0 {
        return PoolPoint::default();
    }
    let w = |f: fn(&PoolPoint) -> f64| points.iter().map(|p| f(p) * p.seconds).sum::<f64>() / secs;
    let ops: f64 = points.iter().map(|p| p.iops * p.seconds).sum();
    PoolPoint {
        t: points.back().map_or(0.0, |p| p.t),
        seconds: secs,
        read_rate: w(|p| p.read_rate),
        write_rate: w(|p| p.write_rate),
        iops: w(|p| p.iops),
        latency: if ops > 0.0 {
            points.iter().map(|p| p.latency * p.iops * p.seconds).sum::<f64>() / ops
        } else {
            0.0
        },
        utilisation: w(|p| p.utilisation),
        queue: w(|p| p.queue),
        read_bytes: points.iter().map(|p| p.read_bytes).sum(),
        write_bytes: points.iter().map(|p| p.write_bytes).sum(),
    }
}

/// The live long-term rates of `/metrics`, by the rule `monitor stats` follows: this host's
/// last sweeps placed on the epoch's grid of intervals by the time they cover, and the last
/// interval's long-term average over `lt` (crates/stats' intervals). The sweeps kept reach back
/// one interval further than the long-term window, so that every interval the average takes
/// is whole, as it is in a window read from the store.
struct LiveRates {
    series: Vec<Series>,
    hosts: Vec<String>,
    pools: Vec<String>,
    interval: f64,
    k: usize,
    spans: VecDeque<(f64, f64, Vec<f64>)>,
}

impl LiveRates {
    fn new(spec: &MonitorSpec, series: &[Series], host: &str) -> LiveRates {
        let mut pools: Vec<String> = Vec::new();
        for s in series {
            if !pools.contains(&s.pool) {
                pools.push(s.pool.clone());
            }
        }
        LiveRates {
            series: series.to_vec(),
            hosts: vec![host.to_string(); series.len()],
            pools,
            interval: spec.interval,
            k: ((spec.lt / spec.interval).round() as usize).max(1),
            spans: VecDeque::new(),
        }
    }

    fn add(&mut self, sweep: &Sweep) {
        for s in storlab_stats::intervals::monitor_spans(&self.series, &self.hosts, &sweep.disks, &self.pools) {
            self.spans.push_back((s.start, s.end, s.amounts));
        }
        let reach = (self.k + 2) as f64 * self.interval;
        while let (Some(first), Some(last)) = (self.spans.front(), self.spans.back()) {
            if last.1 - first.1 <= reach {
                break;
            }
            self.spans.pop_front();
        }
    }

    /// Pool `pool`'s long-term read and write rates now (None before the first sweep).
    fn long_term(&self, pool: &str) -> Option<(f64, f64)> {
        let p = self.pools.iter().position(|q| q == pool)?;
        let spans: Vec<storlab_stats::intervals::Span> = self
            .spans
            .iter()
            .map(|(start, end, amounts)| storlab_stats::intervals::Span {
                source: "",
                start: *start,
                end: *end,
                amounts: amounts.clone(),
            })
            .collect();
        let from = self.spans.front()?.0;
        let all = |_: &str, _: usize| true;
        let iv = storlab_stats::intervals::place_watched(&spans, 2 * self.pools.len(), self.interval, from, &all);
        let last = |c: usize| iv.long_term(&iv.rates[c], self.k).last().copied().flatten();
        Some((last(2 * p)?, last(2 * p + 1)?))
    }
}

/// Moves samples up the levels and deletes what is older than the retention, for every
/// monitor of this host (earlier runs of the service too).
fn keep_retention(store: &Store, host: &str, spec: &MonitorSpec, t: f64) -> Result<(), MonitorError> {
    let bucket = |x: f64, w: f64| (x / w).floor() * w;
    let ids: Vec<i64> = store
        .monitors()?
        .into_iter()
        .filter(|m| m.host == host)
        .map(|m| m.id)
        .collect();
    for id in ids {
        store.compact_monitor(
            id,
            Level::Full,
            Level::LongTerm,
            bucket(t - spec.keep_full, spec.lt),
            spec.lt,
        )?;
        store.compact_monitor(
            id,
            Level::LongTerm,
            Level::Hourly,
            bucket(t - spec.keep_lt, 3600.0),
            3600.0,
        )?;
    }
    store.purge_monitor_samples(t - spec.retain)?;
    Ok(())
}

/// Runs a monitor until `cfg.stop` is set or its duration ends. `started` is told the
/// monitor's id and the metrics' address once both exist; `event` is told each event.
pub fn run(
    store: &Store,
    cfg: MonitorConfig,
    started: impl FnOnce(i64, Option<SocketAddr>),
    mut event: impl FnMut(&MonitorEvent),
) -> Result<Outcome, MonitorError> {
    let mut m = Monitor::start(store, cfg, &mut event)?;
    started(m.out.id, m.endpoint.as_ref().map(|e| e.addr()));
    let mut n: u64 = 0;
    loop {
        n += 1;
        let stopping = m.wait_for_sweep(n);
        m.keep_clock();
        m.sweep(&mut event);
        flush(store, m.out.id, &mut m.pending);
        m.end_if_away()?;
        m.keep_retention();
        if stopping {
            return m.stop();
        }
    }
}

/// A monitor as it runs: its sampler and series, its time base on the database server's
/// clock, the sweeps not yet stored, each pool's recent points for the long-term figures, and
/// what it has done.
struct Monitor<'s> {
    store: &'s Store,
    host: String,
    spec: MonitorSpec,
    series: Vec<Series>,
    sampler: Sampler,
    metrics: MonitorMetrics,
    endpoint: Option<Endpoint>,
    duration: Option<f64>,
    stop_flag: Arc<AtomicBool>,
    window: Duration,
    base: TimeBase,
    clock_read: Instant,
    start: Instant,
    last: Instant,
    last_t: f64,
    last_retention: f64,
    pending: VecDeque<(f64, Sweep)>,
    /// Each pool's last points, as many as a long-term window holds.
    recent: Vec<(String, VecDeque<PoolPoint>)>,
    live: LiveRates,
    out: Outcome,
}

impl<'s> Monitor<'s> {
    /// Creates the monitor in the database and takes its first sweep, the baseline of every
    /// counter: every pool's figures exist from the start, at 0, so that a scrape before the
    /// first interval ends finds them.
    fn start(
        store: &'s Store,
        cfg: MonitorConfig,
        event: &mut dyn FnMut(&MonitorEvent),
    ) -> Result<Monitor<'s>, MonitorError> {
        let mut sampler = Sampler::new(cfg.watches, cfg.files);
        let series: Vec<Series> = sampler.series();
        let spec = cfg.spec;
        let mut registry = Registry::default();
        let metrics = MonitorMetrics::register(&mut registry);
        let registry = Arc::new(registry);
        let (id, base, t0) = create(store, &cfg.host, &spec, &series)?;
        let endpoint = cfg
            .metrics
            .map(|l| Endpoint::start(l, registry.clone()))
            .transpose()
            .map_err(|e| MonitorError::Io(e.to_string()))?;
        // From the reading on, the host's monotonic clock: a step of the wall clock moves no
        // sample and every sample begins where the one before it ended (crates/stats'
        // intervals place them by those spans).
        let start = Instant::now();
        let tb = base.at(start);
        let mut baseline = sampler.sweep(tb, 0.0);
        let detail = format!(
            "monitor {id} on {}: {} series in {} pools",
            cfg.host,
            series.len(),
            spec.pools.len()
        );
        baseline.events.insert(0, monitor_event(t0, "started", detail));
        let zero: Vec<(String, PoolPoint, PoolPoint)> = spec
            .pools
            .iter()
            .map(|p| (p.name.clone(), PoolPoint::default(), PoolPoint::default()))
            .collect();
        metrics.publish(&series, &baseline, &sampler.present(), &zero, 0.0);
        baseline.events.iter().for_each(&mut *event);
        let live = LiveRates::new(&spec, &series, &cfg.host);
        let mut m = Monitor {
            store,
            host: cfg.host,
            window: store.outage_window(),
            spec,
            series,
            sampler,
            metrics,
            endpoint,
            duration: cfg.duration,
            stop_flag: cfg.stop,
            base,
            clock_read: Instant::now(),
            start,
            last: start,
            last_t: tb,
            last_retention: t0,
            pending: VecDeque::new(),
            recent: Vec::new(),
            live,
            out: Outcome {
                id,
                sweeps: 0,
                events: baseline.events.len() as u64,
                lost_sweeps: 0,
            },
        };
        m.pending.push_back((tb, baseline));
        Ok(m)
    }

    /// Waits for sweep `n`'s time (or the duration's end, or a stop); true when the monitor
    /// is stopping.
    fn wait_for_sweep(&self, n: u64) -> bool {
        let due = self.start + Duration::from_secs_f64(self.spec.interval * n as f64);
        let end = self.duration.map(|d| self.start + Duration::from_secs_f64(d));
        let target = end.map_or(due, |e| e.min(due));
        while Instant::now() < target && !self.stop_flag.load(Ordering::Relaxed) {
            std::thread::sleep((target - Instant::now()).min(Duration::from_millis(50)));
        }
        self.stop_flag.load(Ordering::Relaxed) || end.is_some_and(|e| Instant::now() >= e)
    }

    /// Every minute the database server's clock is read again (skipped while the database is
    /// away; tried at the next sweep).
    fn keep_clock(&mut self) {
        if self.clock_read.elapsed() < CLOCK_EVERY {
            return;
        }
        if let Ok(r) = self.store.read_clock() {
            let step = self.base.correct(&r);
            let _ = self
                .store
                .add_clock_reading(&format!("monitor {}", self.out.id), &self.host, &r, step);
            self.clock_read = Instant::now();
        }
    }

    /// One sweep: its samples and events, each pool's point with its long-term figures
    /// published, and the sweep kept to store (the oldest dropped past MAX_PENDING).
    fn sweep(&mut self, event: &mut dyn FnMut(&MonitorEvent)) {
        let at = Instant::now();
        let t = self.base.at(at);
        // The sweep's span on the time base, so that it begins where the last ended also across
        // a step of the base after a reading of the server's clock.
        let seconds = match t - self.last_t {
            d if d <= 0.0 => (at - self.last).as_secs_f64(),
            d => d,
        };
        let sweep = self.sampler.sweep(t, seconds);
        self.last = at;
        self.last_t = t;
        let took = at.elapsed().as_secs_f64();
        let pools = self.pool_figures(&sweep);
        self.metrics
            .publish(&self.series, &sweep, &self.sampler.present(), &pools, took);
        sweep.events.iter().for_each(&mut *event);
        self.out.sweeps += 1;
        self.out.events += sweep.events.len() as u64;
        self.pending.push_back((t, sweep));
        while self.pending.len() > MAX_PENDING {
            self.pending.pop_front();
            self.out.lost_sweeps += 1;
        }
    }

    /// Each pool's point of a sweep with its long-term figures: the mean of its recent points,
    /// rates from the live long-term windows.
    fn pool_figures(&mut self, sweep: &Sweep) -> Vec<(String, PoolPoint, PoolPoint)> {
        let k = ((self.spec.lt / self.spec.interval).round() as usize).max(1);
        let mut pools = Vec::new();
        for (pool, p) in pool_points(&self.series, &sweep.disks) {
            let Some(p) = p.into_iter().next() else { continue };
            let i = match self.recent.iter().position(|(n, _)| *n == pool) {
                Some(i) => i,
                None => {
                    self.recent.push((pool.clone(), VecDeque::new()));
                    self.recent.len() - 1
                }
            };
            let q = &mut self.recent[i].1;
            q.push_back(p.clone());
            while q.len() > k {
                q.pop_front();
            }
            pools.push((pool, p, long_term(q)));
        }
        self.live.add(sweep);
        for (pool, _, lt) in &mut pools {
            if let Some((r, w)) = self.live.long_term(pool) {
                (lt.read_rate, lt.write_rate) = (r, w);
            }
        }
        pools
    }

    /// A database away longer than the window: an orderly end. What was swept and not stored
    /// is said; the same command (or the service's restart) starts a new monitor.
    fn end_if_away(&self) -> Result<(), MonitorError> {
        let Some(away) = self.store.outage().filter(|d| *d > self.window) else {
            return Ok(());
        };
        let p = &self.pending;
        Err(MonitorError::Away(format!(
            "the results database has been away for {:.0} s, longer than the outage window ({:.0} s, STORLAB_DB_RETRY): \
             monitor {} ends with {} sweep(s) of the last {:.0} s not stored; start it again (the same command, or \
             systemctl restart storlab-monitor) once the database is back",
            away.as_secs_f64(),
            self.window.as_secs_f64(),
            self.out.id,
            p.len(),
            p.back().zip(p.front()).map_or(0.0, |(b, f)| b.0 - f.0)
        )))
    }

    /// Every long-term window, once what was swept is stored: the levels compacted and the
    /// oldest purged.
    fn keep_retention(&mut self) {
        if self.last_t - self.last_retention >= self.spec.lt && self.pending.is_empty() {
            if let Err(e) = keep_retention(self.store, &self.host, &self.spec, self.last_t) {
                eprintln!("storlab monitor: retention: {e}");
            }
            self.last_retention = self.last_t;
        }
    }

    /// The stop: the last sweeps and the stop stored before the monitor ends; a server still
    /// away is waited for a while (systemd allows 90 s for a stop).
    fn stop(mut self) -> Result<Outcome, MonitorError> {
        let t = self.base.now();
        let detail = format!("monitor {} stopped after {} sweeps", self.out.id, self.out.sweeps);
        self.pending.push_back((
            t,
            Sweep {
                events: vec![monitor_event(t, "stopped", detail)],
                ..Sweep::default()
            },
        ));
        let until = Instant::now() + self.window.min(STOP_WAIT);
        loop {
            flush(self.store, self.out.id, &mut self.pending);
            if self.pending.is_empty() {
                if let Err(e) = self.store.stop_monitor(self.out.id, t) {
                    if Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(250));
                        continue;
                    }
                    return Err(e.into());
                }
                break;
            }
            if Instant::now() >= until {
                self.out.lost_sweeps += self.pending.len() as u64;
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Ok(self.out)
    }
}

/// The monitor made in the database, its clock on the database server's: its id, its time
/// base and its start.
fn create(
    store: &Store,
    host: &str,
    spec: &MonitorSpec,
    series: &[Series],
) -> Result<(i64, TimeBase, f64), MonitorError> {
    // The monitor appends and scans recent rows for retention: 512 KiB of SQLite page cache
    // hold what it reads, and its memory stays flat from the start (bench/monitor-results.md).
    store.limit_cache(512)?;
    // A server that goes away is waited for here (the sweeps kept meanwhile), not spooled.
    store.ride_out();
    // The samples' times are on the database server's clock (crates/store's clock.rs), so that
    // hosts whose clocks disagree line up in `monitor stats`: read now, held to it every
    // minute, each reading recorded.
    let reading = store.read_clock()?;
    let base = TimeBase::new(&reading);
    let t0 = base.now();
    // Another monitor of this host on this database is the user's to stop: refused as input.
    let id = store.create_monitor(host, spec, series, t0).map_err(|e| match e {
        storlab_store::StoreError::Request(m) => MonitorError::Input(m),
        e => e.into(),
    })?;
    store.add_clock_reading(&format!("monitor {id}"), host, &reading, 0.0)?;
    Ok((id, base, t0))
}

/// A monitor's own event (started, stopped) at `t`.
fn monitor_event(t: f64, kind: &str, detail: String) -> MonitorEvent {
    MonitorEvent {
        t,
        pool: String::new(),
        name: String::new(),
        kind: kind.into(),
        detail,
    }
}

/// How often the database server's clock is read again.
const CLOCK_EVERY: Duration = Duration::from_secs(60);

/// How long a stopping monitor waits for a server that is away to store its last sweeps.
const STOP_WAIT: Duration = Duration::from_secs(30);

/// Stores the pending sweeps in order, each once (a sweep whose commit was not confirmed is
/// found by the heartbeat it set); stops at the first that cannot be stored (the server
/// away: health.rs in crates/store said so once and connects again at a later try).
fn flush(store: &Store, id: i64, pending: &mut VecDeque<(f64, Sweep)>) {
    while let Some((pt, s)) = pending.front() {
        match store.add_monitor_sweep(id, *pt, s) {
            Ok(()) => {
                pending.pop_front();
            }
            Err(storlab_store::StoreError::Lost { .. }) => break,
            Err(e) => {
                eprintln!(
                    "storlab monitor: cannot store the sweep of {}: {e}; it is dropped",
                    storlab_units::utc(*pt)
                );
                pending.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_and_retention_are_checked_by_name() {
        let e = |r: Result<MonitorSpec, MonitorError>| r.unwrap_err().to_string();
        assert!(e(spec(vec![], 0.0, MIN_INTERVAL, 100.0, None, None, None)).contains("the least interval is 100ms"));
        assert!(e(spec(vec![], 0.05, MIN_INTERVAL, 100.0, None, None, None)).contains("the least interval"));
        assert!(e(spec(vec![], 10.0, MIN_INTERVAL, 5.0, None, None, None)).contains("at least one interval"));
        assert!(e(spec(vec![], 10.0, MIN_INTERVAL, 100.0, None, None, Some(50.0)))
            .contains("shorter than the long-term window"));
        let s = spec(vec![], 10.0, MIN_INTERVAL, 100.0, None, None, Some(7.0 * 86400.0)).unwrap();
        assert_eq!(
            (s.keep_full, s.keep_lt, s.retain),
            (2.0 * 86400.0, 7.0 * 86400.0, 7.0 * 86400.0)
        );
    }

    #[test]
    fn the_long_term_figure_weights_rates_by_seconds_and_latency_by_operations() {
        let p = |secs: f64, rate: f64, iops: f64, lat: f64| PoolPoint {
            t: 0.0,
            seconds: secs,
            read_rate: rate,
            write_rate: 0.0,
            iops,
            latency: lat,
            utilisation: 0.5,
            queue: 1.0,
            read_bytes: 0,
            write_bytes: 0,
        };
        let q: VecDeque<PoolPoint> = [p(10.0, 100.0, 10.0, 0.001), p(30.0, 200.0, 30.0, 0.003)]
            .into_iter()
            .collect();
        let lt = long_term(&q);
        assert_eq!(lt.read_rate, 175.0);
        assert_eq!(lt.iops, 25.0);
        assert!((lt.latency - 0.0028).abs() < 1e-12);
        assert_eq!(lt.utilisation, 0.5);
    }
}
