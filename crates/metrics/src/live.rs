//! The live figures of a long command (`run`, `sweep`, `iozone`, `impact`, `challenge` with
//! `--metrics ADDR`): per run, phase and target the bytes and operations read and written, per
//! run and phase a latency histogram; for a study, its task's state and its progress; for a
//! challenge, its bytes per pool.
//!
//! The engine tells the intervals from the thread that collects them (its
//! [`IntervalObserver`]), so the I/O loop pays nothing; a worker's interval (one second by
//! default) is what a scrape sees move.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};
use storlab_engine::IntervalObserver;
use storlab_session::{LiveRun, PhaseStart};

/// A label set: (name, value) pairs.
pub type Labels = Vec<(&'static str, String)>;

/// Upper bounds of the latency buckets, seconds: 1 µs to 10 s, four per decade (the last
/// bucket, +Inf, holds the rest).
fn latency_bounds() -> Vec<f64> {
    let mut b = Vec::new();
    for exp in -6..1 {
        for m in [1.0, 2.5, 5.0, 7.5] {
            b.push(m * 10f64.powi(exp));
        }
    }
    b.push(10.0);
    b
}

/// A latency histogram fed with the engine's HDR histograms whole (an interval's counts per
/// bucket), not one observation at a time: a million I/Os a second cost one merge a second.
/// prometheus-client's own `Histogram` observes values one by one; this implements its
/// `EncodeMetric` instead, the crate's way to add a metric of one's own.
#[derive(Debug)]
pub struct LatencyHistogram {
    inner: Mutex<Buckets>,
}

/// Sum of the values (seconds), their count, and per bucket (upper bound, count).
type Buckets = (f64, u64, Vec<(f64, u64)>);

impl Default for LatencyHistogram {
    fn default() -> LatencyHistogram {
        let mut buckets: Vec<(f64, u64)> = latency_bounds().into_iter().map(|b| (b, 0)).collect();
        buckets.push((f64::MAX, 0));
        LatencyHistogram {
            inner: Mutex::new((0.0, 0, buckets)),
        }
    }
}

impl LatencyHistogram {
    /// Adds latencies (nanoseconds): an interval's recorded buckets, each `(value, count)`.
    pub fn add(&self, recorded: &[(u64, u64)]) {
        if recorded.is_empty() {
            return;
        }
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        for &(ns, n) in recorded {
            g.0 += ns as f64 * n as f64 / 1e9;
            g.1 += n;
            let secs = ns as f64 / 1e9;
            // Prometheus' buckets are cumulative when encoded; each holds what falls in it.
            if let Some((_, count)) = g.2.iter_mut().find(|(bound, _)| secs <= *bound) {
                *count += n;
            }
        }
    }
}

impl TypedMetric for LatencyHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        encoder.encode_histogram::<NoLabelSet>(g.0, g.1, &g.2, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[derive(Debug, Default, Clone)]
struct Current {
    run: String,
    phase: String,
    kind: String,
    targets: Vec<String>,
}

/// The live figures' families.
pub struct LiveMetrics {
    read_bytes: Family<Labels, Counter>,
    written_bytes: Family<Labels, Counter>,
    reads: Family<Labels, Counter>,
    writes: Family<Labels, Counter>,
    latency: Family<Labels, LatencyHistogram>,
    phase_running: Family<Labels, Gauge>,
    task_running: Family<Labels, Gauge>,
    progress: Family<Labels, Gauge<f64, AtomicU64>>,
    challenge_bytes: Family<Labels, Counter>,
    current: Mutex<Current>,
    /// The study's name in labels (the command: sweep, impact, iozone) and its tasks so far.
    study: Mutex<(String, Vec<String>)>,
}

/// The live figures served at `addr` (None: not asked for) while the command runs: the
/// endpoint is bound here, before anything starts, and stops when the returned [`Live`] is
/// dropped.
pub fn serve(
    addr: Option<&str>,
    web_config: Option<&std::path::Path>,
    study: &str,
) -> Result<Option<Live>, crate::endpoint::MetricsError> {
    let Some(addr) = addr else { return Ok(None) };
    let listener = crate::endpoint::bind(addr, web_config)?;
    let mut registry = Registry::default();
    let metrics = std::sync::Arc::new(LiveMetrics::register(&mut registry));
    *metrics.study.lock().unwrap_or_else(|e| e.into_inner()) = (study.to_string(), Vec::new());
    let endpoint = crate::endpoint::Endpoint::start(listener, std::sync::Arc::new(registry))?;
    Ok(Some(Live { metrics, endpoint }))
}

/// Live figures being served.
pub struct Live {
    /// The families.
    pub metrics: std::sync::Arc<LiveMetrics>,
    /// The endpoint (stops when dropped).
    pub endpoint: crate::endpoint::Endpoint,
}

impl Live {
    /// The figures as the session takes them.
    pub fn run(&self) -> &dyn LiveRun {
        self.metrics.as_ref()
    }

    /// The figures as a study holds them.
    pub fn shared(&self) -> std::sync::Arc<dyn LiveRun + Send + Sync> {
        self.metrics.clone()
    }
}

impl LiveMetrics {
    /// Registers the families in `registry`.
    pub fn register(registry: &mut Registry) -> LiveMetrics {
        let m = LiveMetrics {
            read_bytes: Family::default(),
            written_bytes: Family::default(),
            reads: Family::default(),
            writes: Family::default(),
            latency: Family::default(),
            phase_running: Family::default(),
            task_running: Family::default(),
            progress: Family::default(),
            challenge_bytes: Family::default(),
            current: Mutex::new(Current::default()),
            study: Mutex::new((String::new(), Vec::new())),
        };
        registry.register_with_unit(
            "storlab_run_read",
            "Bytes a run read, per phase and target",
            Unit::Bytes,
            m.read_bytes.clone(),
        );
        registry.register_with_unit(
            "storlab_run_written",
            "Bytes a run wrote, per phase and target",
            Unit::Bytes,
            m.written_bytes.clone(),
        );
        registry.register(
            "storlab_run_reads_completed",
            "Reads a run completed, per phase and target",
            m.reads.clone(),
        );
        registry.register(
            "storlab_run_writes_completed",
            "Writes a run completed, per phase and target",
            m.writes.clone(),
        );
        registry.register_with_unit(
            "storlab_run_latency",
            "Time per I/O of a run, per phase and direction (op: read, write)",
            Unit::Seconds,
            m.latency.clone(),
        );
        registry.register(
            "storlab_run_phase_running",
            "1 while the run's phase runs, 0 after",
            m.phase_running.clone(),
        );
        registry.register(
            "storlab_study_task_running",
            "1 while a study's background task (a scrub, a verify, a rebuild) runs, 0 when it does not",
            m.task_running.clone(),
        );
        registry.register_with_unit(
            "storlab_study_progress",
            "The fraction of a study's points (or a challenge's planned files or time) done",
            Unit::Other("ratio".into()),
            m.progress.clone(),
        );
        registry.register_with_unit(
            "storlab_challenge",
            "Bytes a data challenge moved on this host, per pool (direction: read, write)",
            Unit::Bytes,
            m.challenge_bytes.clone(),
        );
        m
    }

    fn labels(c: &Current, extra: &[(&'static str, String)]) -> Labels {
        let mut l = vec![
            ("run", c.run.clone()),
            ("phase", c.phase.clone()),
            ("kind", c.kind.clone()),
        ];
        l.extend(extra.iter().cloned());
        l
    }

    /// A study's task runs (or not).
    pub fn task(&self, study: &str, task: &str, running: bool) {
        self.task_running
            .get_or_create(&vec![("study", study.to_string()), ("task", task.to_string())])
            .set(running as i64);
    }

    /// A study's (or a challenge's) progress, 0 to 1.
    pub fn progress(&self, study: &str, done: f64) {
        self.progress
            .get_or_create(&vec![("study", study.to_string())])
            .set(done);
    }

    /// A challenge moved `read` and `written` bytes on `pool` since the last call.
    pub fn challenge_bytes(&self, challenge: i64, pool: &str, read: u64, written: u64) {
        for (dir, n) in [("read", read), ("write", written)] {
            self.challenge_bytes
                .get_or_create(&vec![
                    ("challenge", challenge.to_string()),
                    ("pool", pool.to_string()),
                    ("direction", dir.into()),
                ])
                .inc_by(n);
        }
    }
}

impl IntervalObserver for LiveMetrics {
    fn interval(&self, target: u16, bytes: [u64; 2], ops: [u64; 2], latency_ns: &[storlab_engine::Recorded; 2]) {
        let c = self.current.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let t = c
            .targets
            .get(target as usize)
            .cloned()
            .unwrap_or_else(|| target.to_string());
        let l = Self::labels(&c, &[("target", t)]);
        self.read_bytes.get_or_create(&l).inc_by(bytes[0]);
        self.written_bytes.get_or_create(&l).inc_by(bytes[1]);
        self.reads.get_or_create(&l).inc_by(ops[0]);
        self.writes.get_or_create(&l).inc_by(ops[1]);
        for (op, h) in ["read", "write"].iter().zip(latency_ns) {
            if !h.is_empty() {
                self.latency
                    .get_or_create(&Self::labels(&c, &[("op", op.to_string())]))
                    .add(h);
            }
        }
    }
}

impl LiveRun for LiveMetrics {
    fn phase_started(&self, p: &PhaseStart) {
        let c = Current {
            run: p.run_id.to_string(),
            phase: p.seq.to_string(),
            kind: p.kind.to_string(),
            targets: p.targets.to_vec(),
        };
        self.phase_running.get_or_create(&Self::labels(&c, &[])).set(1);
        // Every target's counters exist from the phase's start, at 0.
        for t in p.targets {
            let l = Self::labels(&c, &[("target", t.clone())]);
            for f in [&self.read_bytes, &self.written_bytes, &self.reads, &self.writes] {
                let _ = f.get_or_create(&l);
            }
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = c;
    }

    fn study_event(&self, kind: &str, detail: &str) {
        let mut g = self.study.lock().unwrap_or_else(|e| e.into_inner());
        match kind {
            "task-start" => {
                if !g.1.iter().any(|t| t == detail) {
                    g.1.push(detail.to_string());
                }
                self.task(&g.0, detail, true);
            }
            // The task is not running any more, however it ended.
            "task-stopped" | "task-end" | "task-timeout" => {
                for t in &g.1 {
                    self.task(&g.0, t, false);
                }
            }
            _ => {}
        }
    }

    fn study_progress(&self, done: usize, total: usize, _next: &str) {
        let name = self.study.lock().unwrap_or_else(|e| e.into_inner()).0.clone();
        self.progress(&name, if total > 0 { done as f64 / total as f64 } else { 0.0 });
    }

    fn phase_ended(&self, run_id: i64, seq: usize, _result: Option<&storlab_model::result::PhaseResult>) {
        let c = self.current.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if c.run == run_id.to_string() && c.phase == seq.to_string() {
            self.phase_running.get_or_create(&Self::labels(&c, &[])).set(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn an_intervals_latencies_land_in_their_buckets_and_counters_carry_the_phase() {
        let mut r = Registry::default();
        let m = LiveMetrics::register(&mut r);
        m.phase_started(&storlab_session::PhaseStart {
            run_id: 7,
            seq: 2,
            phases: 3,
            kind: "read",
            targets: &["/data".into()],
            runtime_seconds: None,
            bytes: Some(1 << 20),
            sampled: true,
        });
        // An interval's recorded buckets: one read of 0.8 µs, two of 3 ms.
        m.interval(0, [4096, 0], [3, 0], &[vec![(800, 1), (3_000_000, 2)], vec![]]);
        m.phase_ended(7, 2, None);
        let mut text = String::new();
        encode(&mut text, &r).unwrap();
        let l = "run=\"7\",phase=\"2\",kind=\"read\"";
        assert!(
            text.contains(&format!("storlab_run_read_bytes_total{{{l},target=\"/data\"}} 4096")),
            "{text}"
        );
        assert!(
            text.contains(&format!("storlab_run_reads_completed_total{{{l},target=\"/data\"}} 3")),
            "{text}"
        );
        assert!(
            text.contains(&format!("storlab_run_latency_seconds_count{{{l},op=\"read\"}} 3")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "storlab_run_latency_seconds_bucket{{le=\"0.000001\",{l},op=\"read\"}} 1"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "storlab_run_latency_seconds_bucket{{le=\"0.0025\",{l},op=\"read\"}} 1"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "storlab_run_latency_seconds_bucket{{le=\"0.005\",{l},op=\"read\"}} 3"
            )),
            "{text}"
        );
        assert!(!text.contains("op=\"write\""), "no writes, no write histogram: {text}");
        assert!(text.contains(&format!("storlab_run_phase_running{{{l}}} 0")), "{text}");
    }
}
