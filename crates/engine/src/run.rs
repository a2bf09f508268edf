//! Running one phase: lay out files, open them, start the workers together behind a barrier,
//! collect their interval samples, and merge their results.
//!
//! The hot path is `Worker::run`: per I/O it draws the next offset, reads the clock, queues the
//! I/O, records its latency in the worker's own interval histogram and bumps the worker's own
//! counters. Nothing there allocates, locks or sends. Once per interval the worker sends its
//! interval histograms and counters to the collector (this thread), which merges the workers'
//! intervals into one sample and drops the histograms, so memory does not grow with run time.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Barrier, OnceLock};

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use storlab_units::Rate;

use crate::access::{Access, FileSet};
use crate::backend::{self, Backend, Completion, IoUnit, Op, Queued};
use crate::data::{self, BufferPool};
use crate::plan::{BackendKind, DataPattern, FsyncPolicy, GenerationRange, PhaseKind, PhasePlan, WorkerFile};
use crate::result::*;
use storlab_model::settings::{CpusPolicy, Distribution, Fadvise, Fallocate, MemoryPolicy, RateProcess, Steady};

/// Summarises a histogram of nanoseconds.
pub fn latency_of(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        count: h.len(),
        min_ns: h.min(),
        mean_ns: h.mean(),
        max_ns: h.max(),
        p50_ns: h.value_at_quantile(0.50),
        p90_ns: h.value_at_quantile(0.90),
        p99_ns: h.value_at_quantile(0.99),
        p99_9_ns: h.value_at_quantile(0.999),
        p99_99_ns: h.value_at_quantile(0.9999),
    }
}
use crate::EngineError;

/// Highest latency the histograms hold exactly: one hour. Longer ones are clamped to it.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// A latency histogram with 3 significant digits (0.1 % resolution) from 1 ns to one hour.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// The engine's clock (see clock.rs: the CPU's time-stamp counter where the kernel trusts it).
#[inline]
fn mono_ns() -> u64 {
    crate::clock::now_ns()
}

/// Nanoseconds since `epoch` (a `mono_ns` reading).
#[inline]
fn since(epoch: u64) -> u64 {
    mono_ns().saturating_sub(epoch)
}

/// One interval's worth of a worker's I/O.
#[derive(Default, Clone, Copy)]
struct Counters {
    bytes: [u64; 2],
    ops: [u64; 2],
    /// The I/Os' latencies summed, ns: each interval's mean (fio's latency log).
    lat_ns: [u64; 2],
    late: u64,
}

impl Counters {
    fn add(&mut self, o: &Counters) {
        for i in 0..2 {
            self.bytes[i] += o.bytes[i];
            self.ops[i] += o.ops[i];
            self.lat_ns[i] += o.lat_ns[i];
        }
        self.late += o.late;
    }
    fn bytes(&self) -> u64 {
        self.bytes[0] + self.bytes[1]
    }
    fn ops(&self) -> u64 {
        self.ops[0] + self.ops[1]
    }
}

enum Msg {
    Interval {
        index: u32,
        target: u16,
        t_start: u64,
        t_end: u64,
        ramp: bool,
        counters: Counters,
        hist: Box<[Histogram<u64>; 2]>,
    },
    Done {
        worker: usize,
        last_index: Option<u32>,
        outcome: Box<Result<WorkerOutcome, EngineError>>,
    },
}

struct WorkerOutcome {
    result: WorkerResult,
    totals: Counters,
    hist: Box<[Histogram<u64>; 2]>,
    end_ns: u64,
    first_done_snapshot: Option<Counters>,
    verify: VerifyReport,
    errors: ErrorsReport,
    interrupted: bool,
    /// Where its measured part began (the ramp's end, or where its latency search settled).
    measure_start: u64,
    /// fio's latency_target: the depth it settled at.
    latency_depth: u32,
}

/// One worker's search for the deepest queue that meets a latency target (fio's io_u.c).
#[derive(Debug)]
struct LatencySeek {
    target_ns: u64,
    /// The depth being tried.
    qd: u32,
    /// The deepest that met the target, and the shallowest that missed it (or iodepth).
    low: u32,
    high: u32,
    /// Met windows in a row just below `high`.
    stable: u32,
    window_start: u64,
    ios: u64,
    failed: u64,
    /// Settled: the measured window ends then.
    settled_until: Option<u64>,
}

/// Shared between the workers of one phase; written rarely (once per phase), read per I/O.
/// `abort` is shared by every phase of a group: one failing worker stops them all.
struct Shared<'g> {
    epoch: OnceLock<u64>,
    first_done_ns: AtomicU64,
    abort: &'g AtomicBool,
    /// fio's exitall: a phase of the group is done, so the group's others end too (the group's
    /// own flag: the caller's control goes on to the next group unfinished).
    exit_all: &'g AtomicBool,
    /// This phase is done (steady state reached): its workers stop issuing, the others go on.
    done: AtomicBool,
}

fn slot_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
    }
}

/// Lets the caller of a time-based phase end it early as if its runtime had run out (the
/// result is complete, not `interrupted`), and tells it when the phase's clock started, so that
/// events outside the engine (a rebuild starting) can be placed on the samples' time axis.
#[derive(Debug, Default)]
pub struct PhaseControl {
    finish: AtomicBool,
    started_ns: AtomicU64,
}

impl PhaseControl {
    /// A control that has not finished anything.
    pub fn new() -> PhaseControl {
        PhaseControl::default()
    }

    /// Ends the phase: every worker stops issuing, waits for what is in flight and reports.
    pub fn finish(&self) {
        self.finish.store(true, Ordering::Relaxed);
    }

    /// Makes the control new again for the next phase: a stonewalled run ends each phase with
    /// [`finish`](Self::finish) and runs the next with the same control.
    pub fn rearm(&self) {
        self.finish.store(false, Ordering::Relaxed);
        self.started_ns.store(0, Ordering::Release);
    }

    /// When the phase's clock (t = 0 of its samples) started, on [`crate::clock::now_ns`]'s
    /// scale; None until the workers have started.
    pub fn started_ns(&self) -> Option<u64> {
        Some(self.started_ns.load(Ordering::Acquire)).filter(|t| *t != 0)
    }
}

/// What a phase reports as it goes, for a live view (Prometheus metrics): each worker's
/// interval, told from the thread that collects the intervals into samples, never from a
/// worker's I/O loop, so that observing costs the I/O nothing.
pub trait IntervalObserver: Sync {
    /// One worker's interval on target `target` (the job's target number): bytes and
    /// operations read (`[0]`) and written (`[1]`), and the latencies of its reads and writes
    /// in nanoseconds.
    fn interval(&self, target: u16, bytes: [u64; 2], ops: [u64; 2], latency_ns: &[Histogram<u64>; 2]);
    /// An interval every worker has reported, merged into the sample that will be stored
    /// (a status line shows the last one's throughput, IOPS and p99).
    fn sample(&self, _sample: &Sample) {}
}

/// Runs one phase. `stop` (set by Ctrl-C) ends it early; the result then says `interrupted`.
pub fn run_phase(plan: &PhasePlan, stop: &AtomicBool) -> Result<PhaseResult, EngineError> {
    run_phase_with(plan, stop, &PhaseControl::new())
}

/// [`run_phase`], with a [`PhaseControl`] through which the caller can end the phase and learn
/// when it started.
pub fn run_phase_with(plan: &PhasePlan, stop: &AtomicBool, control: &PhaseControl) -> Result<PhaseResult, EngineError> {
    run_phase_observed(plan, stop, control, None)
}

/// [`run_phase_with`], telling `observer` each worker's interval as it arrives.
pub fn run_phase_observed(
    plan: &PhasePlan,
    stop: &AtomicBool,
    control: &PhaseControl,
    observer: Option<&dyn IntervalObserver>,
) -> Result<PhaseResult, EngineError> {
    let mut results = run_group_observed(&[plan], stop, control, observer)?;
    Ok(results.remove(0))
}

/// Runs phases at the same time (fio's jobs with no stonewall between them): every worker of
/// every phase is released together, each phase's clock starting at that moment plus its
/// `start_delay`; a failing worker stops them all; a phase with `exitall` ends the others when
/// it is done (as [`PhaseControl::finish`]). Returns each phase's result, in order.
pub fn run_group_observed(
    plans: &[&PhasePlan],
    stop: &AtomicBool,
    control: &PhaseControl,
    observer: Option<&dyn IntervalObserver>,
) -> Result<Vec<PhaseResult>, EngineError> {
    crate::clock::init();
    let mut layout_seconds = Vec::with_capacity(plans.len());
    for plan in plans {
        layout_seconds.push(lay_out_phase(plan, stop)?);
    }
    if stop.load(Ordering::Relaxed) {
        // Stopped while laying out: nothing was measured.
        return Ok(plans
            .iter()
            .zip(&layout_seconds)
            .map(|(plan, l)| {
                let mut r = merge(plan, Vec::new(), Vec::new(), *l);
                r.interrupted = true;
                r
            })
            .collect());
    }
    let total: usize = plans.iter().map(|p| p.workers.len()).sum();
    let abort = AtomicBool::new(false);
    let exit_all = AtomicBool::new(false);
    let shared: Vec<Shared> = plans
        .iter()
        .map(|_| Shared {
            epoch: OnceLock::new(),
            first_done_ns: AtomicU64::new(0),
            abort: &abort,
            exit_all: &exit_all,
            done: AtomicBool::new(false),
        })
        .collect();
    // fio's flows: per flow_id, the I/Os issued and the weights of the workers still running.
    let mut flows: Vec<(u32, Flow)> = Vec::new();
    for plan in plans {
        if let Some(w) = plan.settings.flow {
            let add = w as u64 * plan.workers.len() as u64;
            match flows.iter_mut().find(|(id, _)| *id == plan.settings.flow_id) {
                Some((_, f)) => {
                    f.total_weight.fetch_add(add, Ordering::Relaxed);
                }
                None => flows.push((
                    plan.settings.flow_id,
                    Flow {
                        issued: AtomicU64::new(0),
                        total_weight: AtomicU64::new(add),
                    },
                )),
            }
        }
    }
    let barrier = Barrier::new(total);
    let start_barrier = Barrier::new(total);
    let mut results: Vec<Option<Result<PhaseResult, EngineError>>> = plans.iter().map(|_| None).collect();

    std::thread::scope(|scope| {
        let mut collectors = Vec::new();
        for (pi, plan) in plans.iter().enumerate() {
            let (tx, rx) = mpsc::channel::<Msg>();
            for (i, wf) in plan.workers.iter().enumerate() {
                let tx = tx.clone();
                let shared = &shared;
                let flows = &flows;
                let mine = &shared[pi];
                let barrier = &barrier;
                let start_barrier = &start_barrier;
                scope.spawn(move || {
                    unshare_fd_table();
                    // Every worker opens its file and back-end before the first barrier, so
                    // that a refusal (O_DIRECT, io_uring) stops the phases before any worker
                    // did I/O.
                    let prepared = prepare_worker(plan, i, wf);
                    if prepared.is_err() {
                        mine.abort.store(true, Ordering::Relaxed);
                    }
                    // Everyone arrives; one sets the epochs; everyone starts together.
                    if barrier.wait().is_leader() {
                        let epoch = mono_ns();
                        for (p, s) in plans.iter().zip(shared.iter()) {
                            let _ = s.epoch.set(epoch + p.settings.start_delay.0);
                        }
                        control.started_ns.store(epoch, Ordering::Release);
                    }
                    start_barrier.wait();
                    let (outcome, last_index) = match prepared {
                        Err(e) => (Err(e), None),
                        Ok((files, pool, be)) => {
                            let mut w = Worker::new(plan, i, wf, files, pool, be, mine, &tx);
                            w.flow = plan.settings.flow.and_then(|weight| {
                                flows
                                    .iter()
                                    .find(|(id, _)| *id == plan.settings.flow_id)
                                    .map(|(_, f)| (f, weight as u64))
                            });
                            let outcome = w.run(stop, &control.finish);
                            if let Some((f, weight)) = w.flow {
                                // Done: its weight no longer counts against the others.
                                f.total_weight.fetch_sub(weight, Ordering::Relaxed);
                            }
                            if outcome.is_err() {
                                mine.abort.store(true, Ordering::Relaxed);
                            }
                            (outcome, w.last_sent)
                        }
                    };
                    let _ = tx.send(Msg::Done {
                        worker: i,
                        last_index,
                        outcome: Box::new(outcome),
                    });
                });
            }
            drop(tx);
            let layout = layout_seconds[pi];
            let mine = &shared[pi];
            collectors.push(scope.spawn(move || {
                let n = plan.workers.len();
                let mut samples = Vec::new();
                let mut outcomes: Vec<Option<Result<WorkerOutcome, EngineError>>> = (0..n).map(|_| None).collect();
                let many_targets = plan.workers.iter().any(|w| w.target != plan.workers[0].target);
                let mut steady = plan.settings.steady.map(|c| SteadyWatch::new(c, plan));
                collect(
                    &rx,
                    n,
                    many_targets,
                    observer,
                    &mut samples,
                    &mut outcomes,
                    &mut |s: &Sample| {
                        if let Some(w) = steady.as_mut() {
                            if w.judge(s) {
                                mine.done.store(true, Ordering::Relaxed);
                            }
                        }
                    },
                );
                let mut outs = Vec::with_capacity(n);
                for o in outcomes {
                    match o {
                        Some(Ok(o)) => outs.push(o),
                        Some(Err(e)) => return Err(e),
                        None => return Err(EngineError::Internal("a worker ended without reporting".into())),
                    }
                }
                let mut r = merge(plan, outs, samples, layout);
                r.steady = steady.map(SteadyWatch::report);
                Ok(r)
            }));
        }
        for (pi, c) in collectors.into_iter().enumerate() {
            results[pi] = Some(
                c.join()
                    .unwrap_or_else(|_| Err(EngineError::Internal("a phase's collector panicked".into()))),
            );
        }
    });
    let mut out = Vec::with_capacity(plans.len());
    for r in results {
        out.push(r.unwrap_or_else(|| Err(EngineError::Internal("a phase was not collected".into())))?);
    }
    Ok(out)
}

/// fio's steady-state detection over a phase's merged samples, as they complete: after the
/// ramp, a rolling window of full samples, judged by the criterion (fio's steadystate.c: the
/// least-squares slope per sample, or the largest deviation from the window's mean).
struct SteadyWatch {
    criterion: Steady,
    len: usize,
    ramp_s: f64,
    nominal_s: f64,
    /// (IOPS, bytes/s) of each full sample in the window.
    window: std::collections::VecDeque<(f64, f64)>,
    last: Option<f64>,
    attained_at: Option<f64>,
}

impl SteadyWatch {
    fn new(criterion: Steady, plan: &PhasePlan) -> SteadyWatch {
        let interval = plan.settings.interval.0.max(1) as f64;
        SteadyWatch {
            criterion,
            len: ((plan.settings.steady_window.0 as f64 / interval).round() as usize).max(2),
            ramp_s: (plan.settings.ramp.0 + plan.settings.steady_ramp.0) as f64 / 1e9,
            nominal_s: interval / 1e9,
            window: std::collections::VecDeque::new(),
            last: None,
            attained_at: None,
        }
    }

    /// Takes a sample; true once the criterion is met.
    fn judge(&mut self, s: &Sample) -> bool {
        if self.attained_at.is_some() {
            return true;
        }
        let secs = s.seconds();
        if s.ramp || s.t_start < self.ramp_s - 1e-9 || secs < self.nominal_s * 0.999 {
            return false;
        }
        let (ops, bytes) = (s.ops_read + s.ops_written, s.bytes_read + s.bytes_written);
        self.window.push_back((ops as f64 / secs, bytes as f64 / secs));
        if self.window.len() > self.len {
            self.window.pop_front();
        }
        if self.window.len() < self.len {
            return false;
        }
        let iops = self.criterion.iops;
        let w: Vec<f64> = self.window.iter().map(|(i, b)| if iops { *i } else { *b }).collect();
        self.last = self.criterion.criterion(&w);
        if self.last.is_some_and(|c| c.abs() < self.criterion.limit) {
            self.attained_at = Some(s.t_end);
            return true;
        }
        false
    }

    fn report(self) -> SteadyReport {
        SteadyReport {
            attained: self.attained_at.is_some(),
            criterion: self.last,
            at_seconds: self.attained_at,
            iops: self.window.iter().map(|w| w.0).collect(),
            bw: self.window.iter().map(|w| w.1).collect(),
        }
    }
}

/// The mean of `ops` latencies summing to `sum` ns, where there were any.
fn mean_ns(sum: u64, ops: u64) -> Option<f64> {
    (ops > 0).then(|| sum as f64 / ops as f64)
}

/// Receives interval messages until every worker is done; each interval becomes a sample as
/// soon as every worker still running has reported it.
fn collect(
    rx: &mpsc::Receiver<Msg>,
    n: usize,
    many_targets: bool,
    observer: Option<&dyn IntervalObserver>,
    samples: &mut Vec<Sample>,
    outcomes: &mut [Option<Result<WorkerOutcome, EngineError>>],
    on_sample: &mut dyn FnMut(&Sample),
) {
    struct Pending {
        t_start: u64,
        t_end: u64,
        ramp: bool,
        counters: Counters,
        hist: Histogram<u64>,
        reported: usize,
        per_target: BTreeMap<u16, Counters>,
    }
    let mut pending: BTreeMap<u32, Pending> = BTreeMap::new();
    let mut last_index: Vec<Option<Option<u32>>> = vec![None; n];
    let mut done = 0;
    let finalize = |p: Pending, index: u32, samples: &mut Vec<Sample>| {
        let h = &p.hist;
        let q = |x: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(x)
            }
        };
        samples.push(Sample {
            index,
            t_start: p.t_start as f64 / 1e9,
            t_end: p.t_end as f64 / 1e9,
            ramp: p.ramp,
            bytes_read: p.counters.bytes[0],
            bytes_written: p.counters.bytes[1],
            ops_read: p.counters.ops[0],
            ops_written: p.counters.ops[1],
            lat_p50_ns: q(0.5),
            lat_p90_ns: q(0.9),
            lat_p99_ns: q(0.99),
            lat_p99_9_ns: q(0.999),
            lat_max_ns: if h.is_empty() { 0 } else { h.max() },
            late_ios: p.counters.late,
            lat_mean_read_ns: mean_ns(p.counters.lat_ns[0], p.counters.ops[0]),
            lat_mean_write_ns: mean_ns(p.counters.lat_ns[1], p.counters.ops[1]),
            targets: p
                .per_target
                .iter()
                .map(|(t, c)| TargetSample {
                    target: *t,
                    bytes_read: c.bytes[0],
                    bytes_written: c.bytes[1],
                    ops_read: c.ops[0],
                    ops_written: c.ops[1],
                })
                .collect(),
        });
    };
    let mut tell = |samples: &[Sample]| {
        if let Some(s) = samples.last() {
            if let Some(o) = observer {
                o.sample(s);
            }
            on_sample(s);
        }
    };
    while done < n {
        let Ok(msg) = rx.recv() else { break };
        match msg {
            Msg::Interval {
                index,
                target,
                t_start,
                t_end,
                ramp,
                counters,
                hist,
            } => {
                if let Some(o) = observer {
                    o.interval(target, counters.bytes, counters.ops, &hist);
                }
                let p = pending.entry(index).or_insert_with(|| Pending {
                    t_start,
                    t_end,
                    ramp,
                    counters: Counters::default(),
                    hist: new_histogram(),
                    reported: 0,
                    per_target: BTreeMap::new(),
                });
                if many_targets {
                    p.per_target.entry(target).or_default().add(&counters);
                }
                p.t_end = p.t_end.max(t_end);
                p.t_start = p.t_start.min(t_start);
                p.counters.add(&counters);
                let _ = p.hist.add(&hist[0]);
                let _ = p.hist.add(&hist[1]);
                p.reported += 1;
            }
            Msg::Done {
                worker,
                last_index: li,
                outcome,
            } => {
                last_index[worker] = Some(li);
                outcomes[worker] = Some(*outcome);
                done += 1;
            }
        }
        // An interval is complete when every worker that is still running, or that ran past it,
        // has reported it.
        while let Some((&index, p)) = pending.iter().next() {
            let expected = last_index
                .iter()
                .filter(|l| match l {
                    None => true,
                    Some(last) => last.is_some_and(|x| x >= index),
                })
                .count();
            if p.reported < expected {
                break;
            }
            let p = pending.remove(&index).unwrap();
            finalize(p, index, samples);
            tell(samples);
        }
    }
    for (index, p) in std::mem::take(&mut pending) {
        finalize(p, index, samples);
        tell(samples);
    }
}

fn merge(plan: &PhasePlan, outs: Vec<WorkerOutcome>, samples: Vec<Sample>, layout_seconds: f64) -> PhaseResult {
    // A latency search is a ramp that ends where each worker settled: the latest of them.
    let measure_start = outs
        .iter()
        .map(|o| o.measure_start)
        .max()
        .unwrap_or(plan.settings.ramp.0);
    let mut latency_search = plan.settings.latency_target.map(|t| LatencySearch {
        target_ns: t.0,
        percentile: plan.settings.latency_percentile,
        window_ns: plan.settings.latency_window.0,
        depths: outs.iter().map(|o| o.latency_depth).collect(),
        met: false,
        within_percent: 0.0,
    });
    let mut totals = Counters::default();
    let mut hist = [new_histogram(), new_histogram()];
    let mut first = Counters::default();
    let mut verify = VerifyReport::default();
    let mut errors = ErrorsReport::default();
    let mut interrupted = false;
    let mut last_end = measure_start;
    let mut first_end = u64::MAX;
    let (mut cpu_user, mut cpu_sys) = (0.0, 0.0);
    let mut workers = Vec::with_capacity(outs.len());
    for o in outs {
        totals.add(&o.totals);
        let _ = hist[0].add(&o.hist[0]);
        let _ = hist[1].add(&o.hist[1]);
        first.add(&o.first_done_snapshot.unwrap_or(o.totals));
        verify.merge(o.verify);
        errors.merge(o.errors);
        interrupted |= o.interrupted;
        last_end = last_end.max(o.end_ns);
        first_end = first_end.min(o.end_ns);
        cpu_user += o.result.cpu_user;
        cpu_sys += o.result.cpu_sys;
        workers.push(o.result);
    }
    let mut all = new_histogram();
    let _ = all.add(&hist[0]);
    let _ = all.add(&hist[1]);
    let encoded = encode_histogram(&all);
    // Whether the measured part (at the settled depth) met the target: the share of its I/Os
    // within it, from the phase's histogram.
    if let Some(ls) = latency_search.as_mut() {
        if !all.is_empty() {
            ls.within_percent = all.count_between(0, ls.target_ns) as f64 / all.len() as f64 * 100.0;
            ls.met = ls.within_percent >= ls.percentile;
        }
    }
    let all_secs = (last_end.saturating_sub(measure_start)) as f64 / 1e9;
    let first_secs = (first_end.min(last_end).saturating_sub(measure_start)) as f64 / 1e9;
    let rate = plan.rate().map(|r| {
        let workers = plan.workers.len() as u32;
        let target = if r.per_worker {
            r.rate.value() * workers as f64
        } else {
            r.rate.value()
        };
        let (unit, achieved) = match r.rate {
            Rate::Iops(_) => (RateUnit::Iops, totals.ops() as f64 / all_secs.max(1e-9)),
            Rate::BytesPerSec(_) => (RateUnit::BytesPerSec, totals.bytes() as f64 / all_secs.max(1e-9)),
        };
        RateReport {
            target,
            unit,
            achieved,
            late_ios: totals.late,
            late_after_ns: plan.settings.late_after.0,
        }
    });
    let spread = storlab_model::result::worker_spread(&workers);
    PhaseResult {
        bytes_read: totals.bytes[0],
        bytes_written: totals.bytes[1],
        ops_read: totals.ops[0],
        ops_written: totals.ops[1],
        all_done: Throughput::new(all_secs, totals.bytes(), totals.ops()),
        first_done: Throughput::new(first_secs, first.bytes(), first.ops()),
        worker_min_bytes_per_sec: spread.0,
        worker_max_bytes_per_sec: spread.1,
        workers,
        cpu_user,
        cpu_sys,
        latency: latency_of(&all),
        latency_read: latency_of(&hist[0]),
        latency_write: latency_of(&hist[1]),
        histogram: encoded,
        histograms_rw: [encode_histogram(&hist[0]), encode_histogram(&hist[1])],
        samples,
        rate,
        verify: plan.verifies().then_some(verify),
        layout_seconds,
        interrupted,
        not_measured: Vec::new(),
        steady: None,
        errors: (errors.count > 0).then_some(errors),
        latency_search,
    }
}

/// Gives the calling worker thread a private copy of the descriptor table.
///
/// Why: while a process's table is shared by several threads, every pread/pwrite takes and
/// drops a reference on the file (fdget/fput, two atomic operations on a shared cache line);
/// with a private table the kernel skips both. That is about 3 % of a 4 KiB read from the
/// page cache, and fio (whose jobs are processes) does not pay it either. The copy holds the
/// descriptors open at this moment; it goes away when the thread exits. Files and rings the
/// worker opens afterwards exist in its table only, and close when the worker drops them.
/// Failure (a seccomp filter, say) only costs the speed, so it is ignored.
fn unshare_fd_table() {
    // SAFETY: unshare(CLONE_FILES) affects only the calling thread's descriptor table; this
    // thread uses only descriptors it opens after this call, or that were copied into it.
    unsafe { libc::unshare(libc::CLONE_FILES) };
}

/// Puts the calling worker thread on its CPUs and its memory on its nodes (fio's
/// cpus_allowed, cpus_allowed_policy, numa_cpu_nodes, numa_mem_policy).
fn place_thread(plan: &PhasePlan, index: usize) -> std::io::Result<()> {
    if let Some(p) = plan.settings.priority {
        // SAFETY: ioprio_set(IOPRIO_WHO_PROCESS = 1, 0 = the calling thread, value) changes
        // only this thread's I/O priority; no memory is passed.
        let r = unsafe { libc::syscall(libc::SYS_ioprio_set, 1, 0, p.value() as libc::c_int) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot set the I/O priority {}:{}: {e}", p.class, p.level),
            ));
        }
    }
    if let Some(cpus) = &plan.settings.cpus {
        let mine: Vec<u32> = match plan.settings.cpus_policy {
            CpusPolicy::Shared => cpus.0.clone(),
            CpusPolicy::Split => vec![cpus.0[index % cpus.0.len()]],
        };
        // SAFETY: cpu_set_t is plain data, zeroed then filled with CPU_SET for CPUs below
        // CPU_SETSIZE; sched_setaffinity(0, …) changes only the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for c in &mine {
                if (*c as usize) < libc::CPU_SETSIZE as usize {
                    libc::CPU_SET(*c as usize, &mut set);
                }
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                let e = std::io::Error::last_os_error();
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot run on CPUs {mine:?}: {e}"),
                ));
            }
        }
    }
    let (mode, nodes): (i32, Vec<u32>) = match &plan.settings.memory_policy {
        MemoryPolicy::Default => return Ok(()),
        MemoryPolicy::Local => (4, Vec::new()),
        MemoryPolicy::Prefer(n) => (1, vec![*n]),
        MemoryPolicy::Bind(n) => (2, n.clone()),
        MemoryPolicy::Interleave(n) => (3, n.clone()),
    };
    let mut mask = [0u64; 16];
    for n in &nodes {
        if *n as usize >= mask.len() * 64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("NUMA node {n} is beyond 1023"),
            ));
        }
        mask[*n as usize / 64] |= 1 << (n % 64);
    }
    // SAFETY: set_mempolicy(2) reads `maxnode` bits from `mask`, which holds 1024; it changes
    // only the calling thread's policy (MPOL_DEFAULT 0, PREFERRED 1, BIND 2, INTERLEAVE 3,
    // LOCAL 4, from linux/mempolicy.h).
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode,
            if nodes.is_empty() {
                std::ptr::null()
            } else {
                mask.as_ptr()
            },
            if nodes.is_empty() {
                0
            } else {
                (mask.len() * 64) as libc::c_ulong
            },
        )
    };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("cannot place memory on NUMA nodes {nodes:?}: {e}"),
        ));
    }
    Ok(())
}

/// A worker's open files (none for the null back-end), buffers and back-end.
type PreparedWorker = (Vec<File>, BufferPool, Box<dyn Backend>);

/// Opens a worker's files, buffer pool and back-end.
fn prepare_worker(plan: &PhasePlan, index: usize, wf: &WorkerFile) -> Result<PreparedWorker, EngineError> {
    // Placement first, so that the buffers below are allocated under the memory policy.
    place_thread(plan, index).map_err(|e| EngineError::Backend {
        backend: "placement",
        path: wf.path.display().to_string(),
        source: e,
    })?;
    let mut files = Vec::new();
    if plan.settings.engine != BackendKind::Null {
        for (path, offset, len) in wf.regions() {
            let f = open_worker_file(plan, path, wf.owned, offset + len)?;
            advise(&f, (offset, len), plan.settings.fadvise);
            files.push(f);
        }
    }
    let mut pool = BufferPool::new(plan.settings.iodepth as usize, plan.settings.bs.max() as usize);
    if plan.kind.writes() {
        pool.fill(&plan.settings.pattern, plan.seed ^ (index as u64) << 32);
    }
    let regions: Vec<(&File, (u64, u64))> = files.iter().zip(wf.regions()).map(|(f, r)| (f, (r.1, r.2))).collect();
    let be = backend::open(
        plan.settings.engine,
        &regions,
        plan.kind.writes(),
        plan.settings.iodepth,
        &pool,
        plan.settings.bs.max() as usize,
        plan.settings.iovecs,
    )
    .map_err(|e| EngineError::Backend {
        backend: plan.settings.engine.name(),
        path: wf.path.display().to_string(),
        source: e,
    })?;
    drop(regions);
    Ok((files, pool, be))
}

fn open_worker_file(plan: &PhasePlan, path: &Path, owned: bool, needed: u64) -> Result<File, EngineError> {
    let mut o = OpenOptions::new();
    o.read(true);
    if plan.kind.writes() {
        o.write(true);
    }
    if plan.kind == PhaseKind::Write && owned {
        o.create(true).truncate(true);
    }
    let mut flags = 0;
    if plan.settings.direct {
        flags |= libc::O_DIRECT;
    }
    if plan.settings.sync {
        flags |= libc::O_SYNC;
    }
    o.custom_flags(flags);
    let f = o.open(path).map_err(|e| EngineError::Open {
        path: path.display().to_string(),
        direct: plan.settings.direct,
        source: e,
    })?;
    if plan.kind == PhaseKind::Write && owned {
        allocate(&f, plan.settings.fallocate, needed).map_err(|e| EngineError::Open {
            path: path.display().to_string(),
            direct: plan.settings.direct,
            source: e,
        })?;
    }
    // A mapping cannot grow a file: size it first.
    if plan.settings.engine == BackendKind::Mmap
        && plan.kind.writes()
        && owned
        && f.metadata().map(|m| m.len() < needed).unwrap_or(false)
    {
        f.set_len(needed).map_err(|e| EngineError::Open {
            path: path.display().to_string(),
            direct: plan.settings.direct,
            source: e,
        })?;
    }
    Ok(f)
}

/// Allocates a new file before a write phase writes it, as fio's `fallocate` does: the whole
/// length (`needed`, the end of this worker's region; workers sharing a file each allocate
/// their part and the file's end), reserved keeping the size, or only its length set.
fn allocate(f: &File, how: Fallocate, needed: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mode = match how {
        Fallocate::None => return Ok(()),
        Fallocate::Truncate => return f.set_len(needed),
        Fallocate::Posix => 0,
        Fallocate::Keep => libc::FALLOC_FL_KEEP_SIZE,
    };
    // SAFETY: fallocate(2) on a descriptor we own, over [0, needed); no memory is passed.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, 0, needed as libc::off_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Writes the files a phase reads (or rewrites) when they are missing or short, outside the
/// phase's timing, as fio does; then flushes them and drops them from the page cache so that
/// the phase reads from the device. Returns the seconds it took.
/// Lays out the files phase `plan` reads or overwrites (written whole, synced, dropped from the
/// page cache), unless they are there already: what [`run_phase`] does first, outside the
/// phase's timing. Ranks of an MPI run call it before their barrier, so that the phase starts
/// together on all of them. Returns the seconds spent (0 when nothing was laid out).
pub fn lay_out_phase(plan: &PhasePlan, stop: &AtomicBool) -> Result<f64, EngineError> {
    if plan.settings.engine != BackendKind::Null && plan.kind != PhaseKind::Write {
        lay_out(plan, stop)
    } else {
        Ok(0.0)
    }
}

fn lay_out(plan: &PhasePlan, stop: &AtomicBool) -> Result<f64, EngineError> {
    let t = std::time::Instant::now();
    let mut need: BTreeMap<&Path, (u64, bool)> = BTreeMap::new();
    for w in &plan.workers {
        for (path, offset, len) in w.regions() {
            let e = need.entry(path).or_insert((0, w.owned));
            e.0 = e.0.max(offset + len);
        }
    }
    let chunk = 1 << 20;
    let mut pool = BufferPool::new(1, chunk);
    pool.fill(
        if plan.settings.pattern == DataPattern::Zeros && !plan.write_headers {
            &DataPattern::Zeros
        } else {
            &plan.settings.pattern
        },
        plan.seed,
    );
    let mut laid = false;
    for (path, (needed, owned)) in need {
        let have = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        // fill: a file that is there is read as far as it goes (a write filled the space).
        if have >= needed || !owned || (plan.settings.fill && have > 0) {
            continue;
        }
        laid = true;
        let io_err = |e: std::io::Error| EngineError::Layout {
            path: path.display().to_string(),
            source: e,
        };
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io_err)?;
        let mut off = 0;
        while off < needed && !stop.load(Ordering::Relaxed) {
            let len = (needed - off).min(chunk as u64) as usize;
            // SAFETY: no I/O is in flight on the pool's only buffer.
            let buf = unsafe { pool.slice_mut(0, len) };
            if plan.write_headers {
                data::stamp(buf, off, plan.seed, plan.generation);
            } else if plan.settings.pattern.unique_per_block() {
                data::scramble(buf, off, plan.seed);
            }
            match std::os::unix::fs::FileExt::write_all_at(&f, buf, off) {
                // fill: the space is full; what was written is read.
                Err(e) if plan.settings.fill && matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)) => {
                    break
                }
                r => r.map_err(io_err)?,
            }
            off += len as u64;
        }
        f.sync_data().map_err(io_err)?;
        drop_cache(&f);
    }
    Ok(if laid { t.elapsed().as_secs_f64() } else { 0.0 })
}

/// Gives the kernel the job's hint about a worker's region before the phase starts (a refusal
/// only means the kernel keeps its own policy).
fn advise(f: &File, (offset, len): (u64, u64), hint: Fadvise) {
    use rustix::fs::Advice;
    let advice = match hint {
        Fadvise::None => return,
        Fadvise::Sequential => Advice::Sequential,
        Fadvise::Random => Advice::Random,
        Fadvise::Noreuse => Advice::NoReuse,
        Fadvise::Dontneed => Advice::DontNeed,
    };
    let _ = rustix::fs::fadvise(f, offset, std::num::NonZeroU64::new(len), advice);
}

/// Asks the kernel to drop a file's clean pages from the page cache.
fn drop_cache(f: &File) {
    // A refusal only means the cache stays warm.
    let _ = rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::DontNeed);
}

/// A histogram in the HdrHistogram V2 deflate encoding the store keeps.
pub fn encode_histogram(h: &Histogram<u64>) -> Vec<u8> {
    let mut encoded = Vec::new();
    let _ = V2DeflateSerializer::new().serialize(h, &mut encoded);
    encoded
}

/// The calling thread's CPU time so far, user and system, seconds.
pub fn thread_cpu() -> (f64, f64) {
    cpu(libc::RUSAGE_THREAD)
}

/// This process's CPU time so far (all its threads), user and system, seconds.
pub fn process_cpu() -> (f64, f64) {
    cpu(libc::RUSAGE_SELF)
}

/// The CPU time of this process's children that ended and were waited for, user and system,
/// seconds.
pub fn children_cpu() -> (f64, f64) {
    cpu(libc::RUSAGE_CHILDREN)
}

fn cpu(who: libc::c_int) -> (f64, f64) {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we pass; `who` is one of the RUSAGE_ constants.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Where one I/O in flight came from.
#[derive(Clone, Copy, Default)]
struct InFlight {
    start_ns: u64,
    offset: u64,
    len: u32,
    write: bool,
    /// Which of the worker's files.
    file: u16,
}

struct Worker<'a> {
    plan: &'a PhasePlan,
    target: u16,
    /// Its files' names (one unless nrfiles), for results and messages.
    file_names: Vec<String>,
    _files: Vec<File>,
    pool: BufferPool,
    backend: Box<dyn Backend>,
    access: FileSet,
    rng: SmallRng,
    shared: &'a Shared<'a>,
    tx: &'a mpsc::Sender<Msg>,
    epoch: u64,
    // Per-interval state.
    interval: Counters,
    ihist: Box<[Histogram<u64>; 2]>,
    interval_index: u32,
    interval_start: u64,
    next_boundary: u64,
    last_sent: Option<u32>,
    // Totals of the measured (post-ramp) part.
    totals: Counters,
    thist: Box<[Histogram<u64>; 2]>,
    measuring: bool,
    first_done_snapshot: Option<Counters>,
    // Slots.
    inflight: Vec<InFlight>,
    free: Vec<u32>,
    completions: Vec<Completion>,
    writes_since_flush: u32,
    flush_ns: u64,
    verify: VerifyReport,
    /// When the last synchronous I/O completed (the next one's start).
    last_end: Option<u64>,
    /// fio's flow this worker weighs against, and its weight.
    flow: Option<(&'a Flow, u64)>,
    /// I/Os this worker issued under its flow.
    flow_count: u64,
    /// fill: the filesystem is full (a write) or the file ended (a read); issue no more.
    full: bool,
    /// fio's dedupe_percentage: the blocks written repeat others.
    dedupe: Option<data::Dedupe>,
    /// Failed I/Os gone on past (continue_on_error).
    errors: ErrorsReport,
    /// rate_min: the last check's time and the bytes and I/Os moved by then.
    rate_check: Option<(u64, u64, u64)>,
    /// fio's latency_target: the search for the depth that meets it.
    lat: Option<LatencySeek>,
    /// Where the measured part begins: the ramp's end, or where the latency search settles
    /// (unknown, u64::MAX, until it does).
    ramp_end: u64,
    /// verify_backlog: blocks written and not yet read back, and those being read back.
    backlog: Vec<(u16, u64, u64)>,
    verify_queue: std::collections::VecDeque<(u16, u64, u64)>,
    /// The reads of the backlog are queued: let them complete before writing on.
    backlog_draining: bool,
}

/// One of fio's flows (flow.c): the I/Os its workers issued and the weights of those still
/// running. A worker may issue while its share of the I/Os is at most its share of the weight.
struct Flow {
    issued: AtomicU64,
    total_weight: AtomicU64,
}

/// A worker's access to its files: one access pattern per file over its region, served as
/// `file_service` says. A pass is each file's own, or, with a byte count per pass (io_size, or
/// a `size` smaller than the files of a `filesize`), that count across them all, the files
/// going round as often as needed.
fn file_set(plan: &PhasePlan, wf: &WorkerFile, worker_seed: u64) -> FileSet {
    let st = &plan.settings;
    let several = !wf.more.is_empty();
    let budget = match (st.io_size, st.filesize, st.size) {
        (Some(b), _, _) => Some(b),
        (None, Some(_), Some(s)) if s < wf.total_len() => Some(s),
        _ => None,
    };
    let time_based = st.runtime.is_some();
    let accesses = wf
        .regions()
        .enumerate()
        .map(|(f, (_, offset, len))| {
            Access::new(plan.kind, offset, len, &st.bs, time_based, st.rwmix, st.stride)
                // A byte count across the files: the set counts the passes.
                .with_loops(if several && budget.is_some() { 1 } else { st.loops })
                .with_hole(st.hole)
                .with_strided(st.strided)
                .with_pass_bytes(if several { None } else { budget })
                .with_align(st.align)
                .with_zones(match &st.distribution {
                    Distribution::Zoned(z) => z,
                    Distribution::Uniform => &[],
                })
                .with_random_map_if(st.random_map, worker_seed ^ 0x0005_EED0_F4A9 ^ (f as u64) << 40)
        })
        .collect();
    FileSet::new(
        accesses,
        st.file_service,
        budget.filter(|_| several).map(|b| (b, st.loops)),
        time_based,
    )
}

impl<'a> Worker<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        plan: &'a PhasePlan,
        index: usize,
        wf: &WorkerFile,
        files: Vec<File>,
        pool: BufferPool,
        backend: Box<dyn Backend>,
        shared: &'a Shared<'a>,
        tx: &'a mpsc::Sender<Msg>,
    ) -> Worker<'a> {
        let depth = plan.settings.iodepth.max(1) as usize;
        let worker_seed = plan.seed.wrapping_add(index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let len = wf.total_len();
        Worker {
            plan,
            target: wf.target,
            file_names: wf.regions().map(|r| r.0.display().to_string()).collect(),
            _files: files,
            pool,
            backend,
            access: file_set(plan, wf, worker_seed),
            rng: SmallRng::seed_from_u64(worker_seed),
            shared,
            tx,
            epoch: 0,
            interval: Counters::default(),
            ihist: Box::new([new_histogram(), new_histogram()]),
            interval_index: 0,
            interval_start: 0,
            next_boundary: 0,
            last_sent: None,
            totals: Counters::default(),
            thist: Box::new([new_histogram(), new_histogram()]),
            measuring: plan.settings.ramp.0 == 0
                && (plan.settings.latency_target.is_none() || plan.settings.latency_run),
            first_done_snapshot: None,
            inflight: vec![InFlight::default(); depth],
            free: (0..depth as u32).rev().collect(),
            completions: vec![Completion::default(); depth],
            writes_since_flush: 0,
            flush_ns: 0,
            verify: VerifyReport::default(),
            last_end: None,
            flow: None,
            flow_count: 0,
            full: false,
            errors: ErrorsReport::default(),
            rate_check: None,
            lat: plan.settings.latency_target.map(|t| LatencySeek {
                target_ns: t.0,
                qd: 1,
                low: 1,
                high: plan.settings.iodepth.max(1),
                stable: 0,
                window_start: 0,
                ios: 0,
                failed: 0,
                settled_until: None,
            }),
            // The search is a ramp, unless latency_run measures it all (as fio reports it).
            ramp_end: if plan.settings.latency_target.is_some() && !plan.settings.latency_run {
                u64::MAX
            } else {
                plan.settings.ramp.0
            },
            dedupe: (plan.settings.dedupe > 0 && plan.kind.writes()).then(|| data::Dedupe {
                percent: plan.settings.dedupe,
                set_blocks: plan
                    .settings
                    .dedupe_set
                    .map(|p| len * p as u64 / 100 / plan.settings.bs.min().max(1)),
                global: plan.settings.dedupe_global,
                worker: index as u64,
                workers: plan.workers.len() as u64,
                // Each phase's blocks are its own: jobs running together (fio's a and b)
                // and later write phases do not repeat each other's.
                seed: plan.seed
                    ^ (plan.generation as u64).wrapping_mul(0xA076_1D64_78BD_642F)
                    ^ plan
                        .name
                        .as_deref()
                        .unwrap_or("")
                        .bytes()
                        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
                        }),
                unique: 0,
            }),
            backlog: Vec::new(),
            verify_queue: std::collections::VecDeque::new(),
            backlog_draining: false,
        }
    }

    fn boundary_after(&self, t: u64) -> u64 {
        let iv = self.plan.settings.interval.0.max(1_000_000);
        let next = (t / iv + 1) * iv;
        let ramp = self.plan.settings.ramp.0;
        if t < ramp && ramp < next {
            ramp
        } else {
            next
        }
    }

    fn now(&self) -> u64 {
        since(self.epoch)
    }

    fn run(&mut self, stop: &AtomicBool, finish: &AtomicBool) -> Result<WorkerOutcome, EngineError> {
        self.epoch = *self.shared.epoch.get().expect("epoch set before the start barrier");
        // A phase that starts later than the others it runs with (fio's startdelay) waits in
        // slices, so that Ctrl-C, a failing worker or exitall end the wait.
        while mono_ns() < self.epoch {
            if stop.load(Ordering::Relaxed)
                || self.shared.abort.load(Ordering::Relaxed)
                || finish.load(Ordering::Relaxed)
                || self.shared.exit_all.load(Ordering::Relaxed)
            {
                break;
            }
            let left = self.epoch.saturating_sub(mono_ns());
            std::thread::sleep(std::time::Duration::from_nanos(left.min(50_000_000)));
        }
        let (u0, s0) = thread_cpu();
        self.next_boundary = self.boundary_after(0);
        let depth = self.plan.settings.iodepth.max(1);
        // A runtime makes the phase time-based; a timeout only cuts its passes short.
        let deadline = match (self.plan.settings.runtime, self.plan.settings.timeout) {
            (Some(r), _) => Some(self.plan.settings.ramp.0 + r.0),
            (None, Some(t)) if t.0 > 0 => Some(t.0),
            _ => None,
        };
        let mut rate_gap = self.plan.rate().map(|r| {
            let r = if r.per_worker {
                r.rate
            } else {
                r.rate.split(self.plan.workers.len() as u32)
            };
            match r {
                Rate::Iops(v) => (1e9 / v, false),
                Rate::BytesPerSec(v) => (1e9 / v, true),
            }
        });
        let mut next_sched = 0.0f64;
        let mut issued = 0u64;
        let think_ns = self.plan.settings.think.0;
        let mut pending: Option<(usize, Op, u64, u64)> = None;
        let mut done_issuing = false;
        // The access pattern has no more I/O (not a deadline, a stop or exitall).
        let mut exhausted = false;
        let mut interrupted = false;
        let mut in_flight = 0u32;
        let mut to_commit = 0u32;

        loop {
            // fio's latency_target: the depth the search is trying (or settled at).
            let depth = self.lat.as_ref().map_or(depth, |l| l.qd);
            while in_flight < depth && !done_issuing {
                if stop.load(Ordering::Relaxed) {
                    interrupted = true;
                    done_issuing = true;
                    break;
                }
                if self.shared.abort.load(Ordering::Relaxed)
                    || finish.load(Ordering::Relaxed)
                    || self.shared.exit_all.load(Ordering::Relaxed)
                    || self.shared.done.load(Ordering::Relaxed)
                {
                    done_issuing = true;
                    break;
                }
                if self.full || self.plan.settings.ios.is_some_and(|n| issued >= n) {
                    done_issuing = true;
                    break;
                }
                if let Some((f, weight)) = self.flow {
                    let issued = f.issued.load(Ordering::Relaxed).max(1);
                    let total = f.total_weight.load(Ordering::Relaxed).max(1);
                    if self.flow_count as f64 / issued as f64 > weight as f64 / total as f64 {
                        // Ahead of its share: reap what is in flight, or wait and look again.
                        if in_flight > 0 {
                            break;
                        }
                        let nap = self.plan.settings.flow_sleep.0;
                        if nap > 0 {
                            std::thread::sleep(std::time::Duration::from_nanos(nap));
                        } else {
                            std::thread::yield_now();
                        }
                        self.last_end = None;
                        continue;
                    }
                    f.issued.fetch_add(1, Ordering::Relaxed);
                    self.flow_count += 1;
                }
                // fio's verify_backlog: every N blocks written are read back and checked, with
                // nothing else in flight, before the writing goes on.
                if let Some(n) = self.backlog_every() {
                    if self.backlog_draining || (self.verify_queue.is_empty() && self.backlog.len() as u64 >= n) {
                        if in_flight > 0 {
                            break;
                        }
                        self.backlog_draining = false;
                        self.verify_queue.extend(self.backlog.drain(..));
                    }
                }
                let next = pending.take().or_else(|| {
                    let v = self
                        .verify_queue
                        .pop_front()
                        .map(|(f, o, l)| (f as usize, Op::Read, o, l));
                    if v.is_some() && self.verify_queue.is_empty() {
                        self.backlog_draining = true;
                    }
                    v.or_else(|| self.access.next(&mut self.rng))
                });
                let Some((file, op, offset, len)) = next else {
                    done_issuing = true;
                    exhausted = true;
                    break;
                };
                // After a synchronous completion its end time is this I/O's start: one clock
                // read per I/O instead of two (the gap between them is the engine's own
                // bookkeeping, a few tens of nanoseconds, which then counts as latency).
                let mut now = match self.last_end.take() {
                    Some(t) if rate_gap.is_none() => t,
                    _ => self.now(),
                };
                if deadline.is_some_and(|d| now >= d) {
                    done_issuing = true;
                    break;
                }
                let start = if let Some((gap, per_byte)) = rate_gap.as_mut() {
                    let sched = next_sched as u64;
                    if now < sched {
                        if in_flight > 0 {
                            // Not due yet: take in what has completed meanwhile (without
                            // blocking), so completions are timed when they happen.
                            pending = Some((file, op, offset, len));
                            in_flight -= self.reap(0)?;
                            if sched - now > 300_000 {
                                std::thread::sleep(std::time::Duration::from_micros(50));
                            }
                            continue;
                        }
                        wait_until(self.epoch, sched);
                        now = self.now();
                    }
                    let step = if *per_byte { *gap * len as f64 } else { *gap };
                    next_sched += match self.plan.settings.rate_process {
                        RateProcess::Linear => step,
                        // Exponential gaps with the same mean: -ln(U), U uniform in (0, 1].
                        RateProcess::Poisson => step * -(1.0 - self.rng.gen::<f64>()).ln(),
                    };
                    if now > sched + self.plan.settings.late_after.0 {
                        self.interval.late += 1;
                    }
                    sched
                } else {
                    now
                };
                let slot = self
                    .free
                    .pop()
                    .expect("a free slot when fewer than depth are in flight");
                let write = op == Op::Write;
                if write {
                    // SAFETY: the slot is free: no I/O uses its buffer.
                    let buf = unsafe { self.pool.slice_mut(slot as usize, len as usize) };
                    if self.plan.write_headers {
                        data::stamp(buf, offset, self.plan.seed, self.plan.generation);
                    } else if let Some(d) = self.dedupe.as_mut() {
                        d.fill(buf, &self.plan.settings.pattern, &mut self.rng);
                    } else if self.plan.settings.pattern.unique_per_block() {
                        data::scramble(buf, offset, self.plan.seed);
                    }
                }
                self.inflight[slot as usize] = InFlight {
                    start_ns: start,
                    offset,
                    len: len as u32,
                    write,
                    file: file as u16,
                };
                // fio's cmdprio_percentage: this request carries a priority of its own.
                let ioprio = match self.plan.settings.cmdprio {
                    Some(c) => {
                        let pct = if write { c.write_percent } else { c.read_percent };
                        if pct > 0 && self.rng.gen_range(0..100u8) < pct {
                            c.priority.value()
                        } else {
                            0
                        }
                    }
                    None => 0,
                };
                let queued = match self.backend.queue(
                    IoUnit {
                        op,
                        file: file as u16,
                        offset,
                        len: len as u32,
                        slot,
                        ioprio,
                    },
                    &self.pool,
                ) {
                    // A synchronous back-end's failed I/O goes where an asynchronous one's
                    // completion goes, to `complete`: it ends the phase there, or (fill,
                    // continue_on_error) counts it and goes on.
                    Err(e) if e.raw_os_error().is_some() => {
                        let end = self.now();
                        self.complete(slot, -e.raw_os_error().unwrap_or(libc::EIO), end)?;
                        issued += 1;
                        continue;
                    }
                    r => r.map_err(|e| self.io_error_in(file, op, offset, e))?,
                };
                match queued {
                    Queued::Completed(n) => {
                        let end = self.now();
                        self.complete(slot, n as i32, end)?;
                        self.last_end = Some(end);
                    }
                    Queued::InFlight => {
                        in_flight += 1;
                        to_commit += 1;
                        if to_commit >= self.plan.submit_batch {
                            self.backend.commit().map_err(|e| self.io_error(Op::Read, 0, e))?;
                            to_commit = 0;
                        }
                    }
                }
                issued += 1;
                if think_ns > 0 && issued.is_multiple_of(self.plan.settings.think_blocks.max(1) as u64) {
                    // fio's thinktime: spin for its spin part, sleep the rest.
                    let spin_until = mono_ns() + self.plan.settings.think_spin.0.min(think_ns);
                    while mono_ns() < spin_until {
                        std::hint::spin_loop();
                    }
                    let rest = think_ns.saturating_sub(self.plan.settings.think_spin.0);
                    if rest > 0 {
                        std::thread::sleep(std::time::Duration::from_nanos(rest));
                    }
                    self.last_end = None;
                }
                if let FsyncPolicy::Every(n) = self.plan.settings.fsync {
                    if self.writes_since_flush >= n {
                        in_flight -= self.drain(in_flight, &mut to_commit)?;
                        self.flush()?;
                    }
                }
            }
            if to_commit > 0 {
                self.backend.commit().map_err(|e| self.io_error(Op::Read, 0, e))?;
                to_commit = 0;
            }
            if self.lat.is_some() && !done_issuing && self.latency_check() {
                // Settled and measured: this worker is done (fio ends the job there).
                done_issuing = true;
            }
            if in_flight == 0 {
                if done_issuing {
                    // The pass is done: what is left of the backlog is read back too.
                    if exhausted && !self.backlog.is_empty() {
                        self.verify_queue.extend(self.backlog.drain(..));
                        done_issuing = false;
                        continue;
                    }
                    break;
                }
                continue;
            }
            in_flight -= self.reap(1)?;
        }
        if let Some(l) = self.lat.as_ref().filter(|l| l.settled_until.is_none() && !interrupted) {
            if !self.plan.settings.latency_run {
                return Err(EngineError::LatencyUnsettled {
                    path: self.file_label(),
                    depth: l.qd,
                });
            }
        }
        let mut end = self.now();
        if self.plan.settings.fsync == FsyncPolicy::End && self.plan.kind.writes() && !interrupted {
            self.flush()?;
            if self.plan.settings.fsync_timed {
                end = self.now();
            }
        }
        if self.plan.settings.close_timed {
            // IOzone's -c: closing (which on NFS flushes) counts. The back-end holds the
            // descriptor (and a mapping or ring); dropping both closes the file.
            self.backend = Box::new(crate::backend::Closed);
            self._files.clear();
            end = self.now();
        }
        self.tick(end)?;
        self.send_interval(end);
        if !interrupted && self.plan.settings.exitall {
            // fio's exitall: this phase is done, so are the phases running with it.
            self.shared.exit_all.store(true, Ordering::Relaxed);
        }
        if !interrupted {
            let _ = self
                .shared
                .first_done_ns
                .compare_exchange(0, end, Ordering::Relaxed, Ordering::Relaxed);
        }
        if self.first_done_snapshot.is_none() && self.shared.first_done_ns.load(Ordering::Relaxed) == end {
            self.first_done_snapshot = Some(self.totals);
        }
        let (u1, s1) = thread_cpu();
        let measured_secs = end.saturating_sub(self.ramp_end.min(end)) as f64 / 1e9;
        let bytes = self.totals.bytes();
        Ok(WorkerOutcome {
            result: WorkerResult {
                file: self.file_label(),
                bytes,
                ops: self.totals.ops(),
                seconds: measured_secs,
                bytes_per_sec: bytes as f64 / measured_secs.max(1e-9),
                cpu_user: u1 - u0,
                cpu_sys: s1 - s0,
                flush_seconds: self.flush_ns as f64 / 1e9,
            },
            totals: self.totals,
            hist: std::mem::replace(&mut self.thist, Box::new([new_histogram(), new_histogram()])),
            end_ns: end,
            first_done_snapshot: self.first_done_snapshot,
            verify: std::mem::take(&mut self.verify),
            errors: std::mem::take(&mut self.errors),
            interrupted,
            measure_start: self.ramp_end,
            latency_depth: self.lat.as_ref().map_or(0, |l| l.qd),
        })
    }

    /// Reaps completions (waiting for at least `min`) and accounts for them; returns how many.
    fn reap(&mut self, min: u32) -> Result<u32, EngineError> {
        let mut out = std::mem::take(&mut self.completions);
        let n = self
            .backend
            .reap(min, &mut out)
            .map_err(|e| self.io_error(Op::Read, 0, e))?;
        let end = self.now();
        let mut r = Ok(());
        for c in &out[..n] {
            if let Err(e) = self.complete(c.slot, c.result, end) {
                r = Err(e);
                break;
            }
        }
        self.completions = out;
        r.map(|_| n as u32)
    }

    /// Waits for everything in flight (before a flush); returns how many completed.
    fn drain(&mut self, mut in_flight: u32, to_commit: &mut u32) -> Result<u32, EngineError> {
        if *to_commit > 0 {
            self.backend.commit().map_err(|e| self.io_error(Op::Write, 0, e))?;
            *to_commit = 0;
        }
        let before = in_flight;
        while in_flight > 0 {
            in_flight -= self.reap(1)?;
        }
        Ok(before)
    }

    fn flush(&mut self) -> Result<(), EngineError> {
        let t = self.now();
        self.backend.flush().map_err(|e| EngineError::Flush {
            path: self.file_label(),
            source: e,
        })?;
        self.flush_ns += self.now() - t;
        self.writes_since_flush = 0;
        Ok(())
    }

    #[inline]
    fn complete(&mut self, slot: u32, result: i32, end: u64) -> Result<(), EngineError> {
        let mut io = self.inflight[slot as usize];
        let op = if io.write { Op::Write } else { Op::Read };
        // fio's fill_device: a write ends at ENOSPC or EDQUOT (or a short write), a read at
        // the end of the file; the part moved counts.
        let short = result >= 0 && (result as u32) < io.len;
        let full = io.write && (result == -libc::ENOSPC || result == -libc::EDQUOT);
        if self.plan.settings.fill && (short || full) {
            self.full = true;
            if result <= 0 {
                self.free.push(slot);
                return Ok(());
            }
            io.len = result as u32;
        }
        if result < 0 {
            let e = std::io::Error::from_raw_os_error(-result);
            if self.plan.settings.continue_on_error.covers(io.write)
                && self.plan.settings.continue_errnos.contains(-result)
            {
                // fio's continue_on_error: counted, the first kept, and on to the next I/O.
                if self.errors.count == 0 {
                    self.errors.first_errno = -result;
                    self.errors.first = self.io_error_in(io.file as usize, op, io.offset, e).to_string();
                }
                self.errors.count += 1;
                self.free.push(slot);
                return Ok(());
            }
            return Err(self.io_error_in(io.file as usize, op, io.offset, e));
        }
        if result as u32 != io.len && !self.full {
            return Err(EngineError::ShortIo {
                path: self.file_names[io.file as usize].clone(),
                write: io.write,
                offset: io.offset,
                wanted: io.len,
                got: result as u32,
            });
        }
        self.tick(end)?;
        let d = slot_index(op);
        let lat = end.saturating_sub(io.start_ns).max(1);
        if let Some(l) = self.lat.as_mut() {
            l.ios += 1;
            if lat > l.target_ns {
                l.failed += 1;
            }
        }
        self.ihist[d].saturating_record(lat);
        self.interval.lat_ns[d] += lat;
        self.interval.bytes[d] += io.len as u64;
        self.interval.ops[d] += 1;
        self.check_rate_min(end)?;
        if io.write {
            self.writes_since_flush += 1;
            if self.backlog_every().is_some() {
                self.backlog.push((io.file, io.offset, io.len as u64));
            }
        } else if self.plan.verifies() {
            // Only the whole 4 KiB blocks of a read cut short by the file's end (fill).
            let whole = if self.full {
                io.len as usize / crate::plan::VERIFY_BLOCK as usize * crate::plan::VERIFY_BLOCK as usize
            } else {
                io.len as usize
            };
            // SAFETY: the I/O on this slot has completed; nothing else uses the buffer.
            let buf = unsafe { self.pool.slice_mut(slot as usize, whole) };
            let file = &self.file_names[io.file as usize];
            let report = &mut self.verify;
            // Before the job's first write (any generation accepted) the files may hold an
            // earlier run's data: an intact block with another seed is that run's, counted
            // apart. After a write in this job, another seed is a lost write: bad.
            let earlier = self.plan.verify_generations == GenerationRange { min: 0, max: u32::MAX };
            let mut foreign: Vec<u64> = Vec::new();
            report.blocks_checked += data::verify(
                buf,
                io.offset,
                self.plan.seed,
                self.plan.verify_generations,
                self.plan.settings.pattern.bytes(),
                |offset, reason| {
                    if let (true, BadReason::WrongSeed { stored }) = (earlier, &reason) {
                        foreign.push(*stored);
                        return;
                    }
                    report.bad_blocks += 1;
                    if report.bad.len() < MAX_BAD_LISTED {
                        report.bad.push(BadBlock {
                            file: file.clone(),
                            offset,
                            reason,
                        });
                    }
                },
            );
            for seed in foreign {
                report.add_foreign(seed, 1);
            }
        }
        self.free.push(slot);
        if self.first_done_snapshot.is_none() && self.shared.first_done_ns.load(Ordering::Relaxed) != 0 {
            let mut snap = self.totals;
            if self.measuring {
                snap.add(&self.interval);
            }
            self.first_done_snapshot = Some(snap);
        }
        Ok(())
    }

    /// Closes the current interval when `now` passed its end.
    #[inline]
    fn tick(&mut self, now: u64) -> Result<(), EngineError> {
        while now >= self.next_boundary {
            let b = self.next_boundary;
            self.send_interval(b);
            self.interval_start = b;
            self.next_boundary = self.boundary_after(b);
            if !self.measuring && b >= self.ramp_end {
                self.measuring = true;
            }
        }
        Ok(())
    }

    /// fio's rate_min (backend.c, __check_min_rate): at a completion, once a sample interval
    /// (fio's rate_cycle) has passed since the last check, the rate over that span is held to
    /// the minimum; below it the phase fails. Measured from completion to completion, so a slow
    /// rate whose I/Os are further apart than an interval is judged over the gap, as fio does.
    fn check_rate_min(&mut self, now: u64) -> Result<(), EngineError> {
        let Some(min) = self.plan.settings.rate_min else {
            return Ok(());
        };
        if !self.measuring {
            self.rate_check = None;
            return Ok(());
        }
        let moved = (
            self.totals.bytes() + self.interval.bytes(),
            self.totals.ops() + self.interval.ops(),
        );
        let Some((at, bytes, ops)) = self.rate_check else {
            self.rate_check = Some((now, moved.0, moved.1));
            return Ok(());
        };
        let spent = now.saturating_sub(at);
        if (spent as f64) < self.plan.settings.interval.0 as f64 * 0.999 {
            return Ok(());
        }
        let secs = spent as f64 / 1e9;
        let (got, want, unit) = match min {
            Rate::Iops(v) => ((moved.1 - ops) as f64 / secs, v, "IOPS"),
            Rate::BytesPerSec(v) => ((moved.0 - bytes) as f64 / secs, v, "bytes/s"),
        };
        if got < want {
            return Err(EngineError::RateMin {
                path: self.file_label(),
                at: now as f64 / 1e9,
                got: format!("{got:.0} {unit}"),
                want: format!("{want:.0} {unit}"),
            });
        }
        self.rate_check = Some((now, moved.0, moved.1));
        Ok(())
    }

    /// Sends the interval ending at `end` to the collector and starts a new one.
    fn send_interval(&mut self, end: u64) {
        let counters = std::mem::take(&mut self.interval);
        let hist = std::mem::replace(&mut self.ihist, Box::new([new_histogram(), new_histogram()]));
        if self.measuring {
            self.totals.add(&counters);
            let _ = self.thist[0].add(&hist[0]);
            let _ = self.thist[1].add(&hist[1]);
        }
        let index = self.interval_index;
        self.interval_index += 1;
        if end > self.interval_start || counters.ops() > 0 {
            self.last_sent = Some(index);
            let _ = self.tx.send(Msg::Interval {
                index,
                target: self.target,
                t_start: self.interval_start,
                t_end: end,
                ramp: !self.measuring,
                counters,
                hist,
            });
        }
    }

    /// fio's latency_target (io_u.c, lat_target_check): when a window has passed, the share of
    /// its I/Os within the target decides: met, the depth doubles (until the first miss, then
    /// halves the distance to the last miss); missed, it halves the distance to the last depth
    /// that met it. When a met window leaves the depth where it was, the search has settled:
    /// the measured part starts at the next interval and lasts one window. Returns true when
    /// that window is over. latency_run keeps searching for the whole phase, measured.
    fn latency_check(&mut self) -> bool {
        let now = self.now();
        let window = self.plan.settings.latency_window.0.max(1);
        let iodepth = self.plan.settings.iodepth.max(1);
        let keep_searching = self.plan.settings.latency_run;
        let next_boundary = self.next_boundary;
        // The measured part: a window, and at least a whole sample interval.
        let measured = window.max(self.plan.settings.interval.0);
        let Some(l) = self.lat.as_mut() else { return false };
        if let Some(until) = l.settled_until {
            return now >= until;
        }
        if now < l.window_start + window {
            return false;
        }
        if l.ios > 0 {
            let share = (l.ios - l.failed) as f64 / l.ios as f64 * 100.0;
            let qd = l.qd;
            if share >= self.plan.settings.latency_percentile {
                l.low = l.qd;
                if l.qd + 1 == l.high {
                    l.stable += 1;
                    if l.stable >= 3 {
                        l.high += 1;
                        l.stable = 0;
                    }
                }
                l.qd = if l.high != iodepth {
                    (l.qd + l.high) / 2
                } else {
                    l.qd * 2
                }
                .clamp(1, iodepth);
                if !keep_searching && l.qd == qd {
                    l.settled_until = Some(next_boundary + measured);
                }
            } else if l.qd == 1 {
                // Not even one I/O at a time meets it: measured there (and reported as missed).
                if !keep_searching {
                    l.settled_until = Some(next_boundary + measured);
                }
            } else {
                l.high = l.qd;
                if l.qd == l.low {
                    l.low -= 1;
                }
                l.qd = ((l.qd + l.low) / 2).max(1);
                l.stable = 0;
            }
        }
        l.window_start = now;
        l.ios = 0;
        l.failed = 0;
        if l.settled_until.is_some() {
            self.ramp_end = next_boundary;
        }
        false
    }

    /// The worker's file for results and messages: its one file, or its first and how many more.
    fn file_label(&self) -> String {
        match self.file_names.len() {
            1 => self.file_names[0].clone(),
            n => format!("{} and {} more", self.file_names[0], n - 1),
        }
    }

    /// fio's verify_backlog: read back every N blocks written, in a verified write phase.
    #[inline]
    fn backlog_every(&self) -> Option<u64> {
        self.plan
            .settings
            .verify_backlog
            .filter(|_| self.plan.settings.verify && self.plan.kind.writes())
    }

    /// An I/O error of a submission or a wait, which is no one file's.
    fn io_error(&self, op: Op, offset: u64, e: std::io::Error) -> EngineError {
        self.io_error_at(self.file_label(), op, offset, e)
    }

    /// An I/O error on one of the worker's files.
    fn io_error_in(&self, file: usize, op: Op, offset: u64, e: std::io::Error) -> EngineError {
        self.io_error_at(self.file_names[file].clone(), op, offset, e)
    }

    fn io_error_at(&self, path: String, op: Op, offset: u64, e: std::io::Error) -> EngineError {
        EngineError::Io {
            path,
            write: op == Op::Write,
            offset,
            direct: self.plan.settings.direct,
            source: e,
        }
    }
}

/// Sleeps, then spins, until `at` nanoseconds after `epoch`: sleeping alone overshoots by tens
/// of microseconds, which at 20,000 IOPS is a whole I/O slot.
fn wait_until(epoch: u64, at: u64) {
    loop {
        let now = since(epoch);
        if now >= at {
            return;
        }
        let left = at - now;
        if left > 200_000 {
            std::thread::sleep(std::time::Duration::from_nanos(left - 150_000));
        } else {
            std::hint::spin_loop();
        }
    }
}
