//! `storlab sched status --metrics ADDR`: the scheduler's standing as Prometheus metrics — slots
//! per pool and in use, per server whether it verifies now, the seconds since its last complete
//! verify, that verify's duration and the errors it found — refreshed from the database.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::status::PoolStatus;

type Labels = Vec<(&'static str, String)>;
type GaugeF = Gauge<f64, AtomicU64>;

/// The families.
pub struct SchedMetrics {
    slots: Family<Labels, Gauge>,
    in_use: Family<Labels, Gauge>,
    running: Family<Labels, Gauge>,
    since: Family<Labels, GaugeF>,
    duration: Family<Labels, GaugeF>,
    errors: Family<Labels, Gauge>,
}

impl SchedMetrics {
    /// Registers the families in `r`.
    pub fn register(r: &mut Registry) -> SchedMetrics {
        let m = SchedMetrics {
            slots: Family::default(),
            in_use: Family::default(),
            running: Family::default(),
            since: Family::default(),
            duration: Family::default(),
            errors: Family::default(),
        };
        r.register(
            "storlab_sched_slots",
            "Servers of the pool that may verify at once (k)",
            m.slots.clone(),
        );
        r.register(
            "storlab_sched_slots_in_use",
            "Slots of the pool held by a live lease",
            m.in_use.clone(),
        );
        r.register(
            "storlab_sched_running",
            "1 while the server's task holds a slot",
            m.running.clone(),
        );
        r.register_with_unit(
            "storlab_sched_since_last_verify",
            "Seconds since the server's last complete verify ended (absent: never verified)",
            Unit::Seconds,
            m.since.clone(),
        );
        r.register_with_unit(
            "storlab_sched_last_verify_duration",
            "How long the server's last complete verify took",
            Unit::Seconds,
            m.duration.clone(),
        );
        r.register(
            "storlab_sched_errors_found",
            "Errors the server's last complete verify found (where its task says a number)",
            m.errors.clone(),
        );
        m
    }

    /// Sets every family from `pools`, `now` on the database's clock. Servers that left the
    /// schedule leave the families.
    pub fn set(&self, pools: &[PoolStatus], now: f64) {
        self.slots.clear();
        self.in_use.clear();
        self.running.clear();
        self.since.clear();
        self.duration.clear();
        self.errors.clear();
        for p in pools {
            let pl: Labels = vec![("pool", p.pool.clone())];
            self.slots.get_or_create(&pl).set(p.k as i64);
            self.in_use.get_or_create(&pl).set(p.slots_in_use as i64);
            for s in &p.servers {
                let l: Labels = vec![("pool", p.pool.clone()), ("server", s.server.clone())];
                self.running.get_or_create(&l).set(i64::from(s.running.is_some()));
                if let Some(t) = s.last_complete {
                    self.since.get_or_create(&l).set((now - t).max(0.0));
                }
                if let Some(d) = s.last_duration {
                    self.duration.get_or_create(&l).set(d);
                }
                if let Some(e) = s.errors_found {
                    self.errors.get_or_create(&l).set(e as i64);
                }
            }
        }
    }
}
/// `storlab sched status --metrics`: the status `first` (the pools, read at a time) served at
/// `listener` as Prometheus metrics, read again by `look` every `interval` until Ctrl-C or
/// SIGTERM; `say` is told where they are served and each read that failed.
pub fn serve<E: std::fmt::Display>(
    listener: storlab_metrics::endpoint::Bound,
    first: (Vec<PoolStatus>, f64),
    interval: std::time::Duration,
    look: impl Fn() -> Result<(Vec<PoolStatus>, f64), E>,
    say: impl Fn(&str),
) -> Result<(), storlab_metrics::endpoint::MetricsError> {
    let mut registry = Registry::default();
    let m = SchedMetrics::register(&mut registry);
    m.set(&first.0, first.1);
    let endpoint = storlab_metrics::endpoint::Endpoint::start(listener, std::sync::Arc::new(registry))?;
    say(&format!("metrics on {}", endpoint.url()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, std::sync::atomic::Ordering::Relaxed));
    keep_current(&m, interval, &stop, look, |e| {
        say(&format!("{e}; the metrics keep their last values"))
    });
    Ok(())
}

/// Keeps `m` current until `stop` is set: every `interval` the status is read again by `look`;
/// a read that fails keeps the last values and is told to `failed`.
pub fn keep_current<E: std::fmt::Display>(
    m: &SchedMetrics,
    interval: std::time::Duration,
    stop: &std::sync::atomic::AtomicBool,
    look: impl Fn() -> Result<(Vec<PoolStatus>, f64), E>,
    failed: impl Fn(&E),
) {
    let mut next = std::time::Instant::now() + interval;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if std::time::Instant::now() >= next {
            next += interval;
            match look() {
                Ok((pools, now)) => m.set(&pools, now),
                Err(e) => failed(&e),
            }
        }
    }
}
