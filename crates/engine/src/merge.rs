//! The merge of a phase's results: every worker's totals, histograms, verification, errors
//! and CPU time into the phase's result, with its rate, latency search and throughputs as the
//! phase measured them (the time from the measured part's start to the first and the last
//! worker's end).

use hdrhistogram::Histogram;
use storlab_units::Rate;

use crate::exact::Exact;
use crate::plan::PhasePlan;
use crate::result::*;
use crate::stat::{encode_histogram, encode_if_any, latency_of, new_histogram, Counters, PerDirection, SlatClat};

/// What one worker measured over its measured part.
pub(crate) struct WorkerOutcome {
    pub(crate) result: WorkerResult,
    pub(crate) totals: Counters,
    pub(crate) hist: Box<[Histogram<u64>; 2]>,
    /// Its flushes' latency (None: it made none).
    pub(crate) sync_hist: Option<Histogram<u64>>,
    /// Its submission and completion latencies (an asynchronous back-end's).
    pub(crate) slat_clat: Box<SlatClat>,
    /// Its latencies' exact figures.
    pub(crate) exact: Exact,
    /// Under a rate, its latencies from each I/O's issue.
    pub(crate) issued_hist: Option<PerDirection>,
    pub(crate) depths: IoDepths,
    pub(crate) end_ns: u64,
    pub(crate) first_done_snapshot: Option<Counters>,
    pub(crate) verify: VerifyReport,
    pub(crate) errors: ErrorsReport,
    pub(crate) interrupted: bool,
    /// Where its measured part began (the ramp's end, or where its latency search settled).
    pub(crate) measure_start: u64,
    /// fio's latency_target: the depth it settled at.
    pub(crate) latency_depth: u32,
}

/// The workers' outcomes summed.
struct Sum {
    totals: Counters,
    hist: [Histogram<u64>; 2],
    sync_hist: Histogram<u64>,
    slat_clat: SlatClat,
    exact: Exact,
    issued_hist: Option<PerDirection>,
    depths: IoDepths,
    /// What each worker had moved when the first was done.
    first: Counters,
    verify: VerifyReport,
    errors: ErrorsReport,
    interrupted: bool,
    last_end: u64,
    first_end: u64,
    cpu: (f64, f64),
    cpu_wait: f64,
    workers: Vec<WorkerResult>,
}

impl Sum {
    fn of(outs: Vec<WorkerOutcome>, measure_start: u64) -> Sum {
        let mut s = Sum {
            totals: Counters::default(),
            hist: [new_histogram(), new_histogram()],
            sync_hist: new_histogram(),
            slat_clat: SlatClat::default(),
            exact: Exact::default(),
            issued_hist: None,
            depths: IoDepths::default(),
            first: Counters::default(),
            verify: VerifyReport::default(),
            errors: ErrorsReport::default(),
            interrupted: false,
            last_end: measure_start,
            first_end: u64::MAX,
            cpu: (0.0, 0.0),
            cpu_wait: 0.0,
            workers: Vec::with_capacity(outs.len()),
        };
        for o in outs {
            s.totals.add(&o.totals);
            let _ = s.hist[0].add(&o.hist[0]);
            let _ = s.hist[1].add(&o.hist[1]);
            if let Some(h) = &o.sync_hist {
                let _ = s.sync_hist.add(h);
            }
            s.slat_clat.add(&o.slat_clat);
            s.exact.add(&o.exact);
            if let Some(h) = &o.issued_hist {
                s.issued_hist.get_or_insert_with(Default::default).add(h);
            }
            s.depths.add(&o.depths);
            s.first.add(&o.first_done_snapshot.unwrap_or(o.totals));
            s.verify.merge(o.verify);
            s.errors.merge(o.errors);
            s.interrupted |= o.interrupted;
            s.last_end = s.last_end.max(o.end_ns);
            s.first_end = s.first_end.min(o.end_ns);
            s.cpu.0 += o.result.cpu_user;
            s.cpu.1 += o.result.cpu_sys;
            s.cpu_wait += o.result.cpu_wait;
            s.workers.push(o.result);
        }
        s
    }
}

/// The phase's result from its workers' outcomes and the samples collected.
pub(crate) fn merge(
    plan: &PhasePlan,
    outs: Vec<WorkerOutcome>,
    samples: Vec<Sample>,
    layout_seconds: f64,
) -> PhaseResult {
    // A latency search is a ramp that ends where each worker settled: the latest of them.
    let measure_start = outs
        .iter()
        .map(|o| o.measure_start)
        .max()
        .unwrap_or(plan.settings.ramp.0);
    let depths: Vec<u32> = outs.iter().map(|o| o.latency_depth).collect();
    let Sum {
        totals,
        hist,
        sync_hist,
        slat_clat,
        exact,
        issued_hist,
        depths: io_depths,
        first,
        verify,
        errors,
        interrupted,
        last_end,
        first_end,
        cpu,
        cpu_wait,
        workers,
    } = Sum::of(outs, measure_start);
    let (histograms_slat, histograms_clat) = slat_clat.encoded();
    let mut all = new_histogram();
    let _ = all.add(&hist[0]);
    let _ = all.add(&hist[1]);
    let all_secs = (last_end.saturating_sub(measure_start)) as f64 / 1e9;
    let first_secs = (first_end.min(last_end).saturating_sub(measure_start)) as f64 / 1e9;
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
        cpu_user: cpu.0,
        cpu_sys: cpu.1,
        cpu_wait,
        latency: latency_of(&all),
        latency_read: latency_of(&hist[0]),
        latency_write: latency_of(&hist[1]),
        histogram: encode_histogram(&all),
        histograms_rw: [encode_histogram(&hist[0]), encode_histogram(&hist[1])],
        histogram_sync: encode_if_any(&sync_hist),
        histograms_slat,
        histograms_clat,
        histograms_issued: issued_hist.as_ref().map(PerDirection::encoded).unwrap_or_default(),
        moments: Some(exact.moments()),
        io_depths: Some(io_depths),
        disks: Vec::new(),
        samples,
        rate: rate_report(plan, &totals, all_secs),
        verify: plan.verifies().then_some(verify),
        layout_seconds,
        interrupted,
        not_measured: Vec::new(),
        steady: None,
        errors: (errors.count > 0).then_some(errors),
        latency_search: latency_search(plan, depths, &all),
        context: None,
    }
}

/// fio's latency_target: the depths the workers settled at, and whether the measured part
/// met the target — the share of its I/Os within it, from the phase's histogram.
fn latency_search(plan: &PhasePlan, depths: Vec<u32>, all: &Histogram<u64>) -> Option<LatencySearch> {
    let t = plan.settings.latency_target?;
    let mut ls = LatencySearch {
        target_ns: t.0,
        percentile: plan.settings.latency_percentile,
        window_ns: plan.settings.latency_window.0,
        depths,
        met: false,
        within_percent: 0.0,
    };
    if !all.is_empty() {
        ls.within_percent = all.count_between(0, ls.target_ns) as f64 / all.len() as f64 * 100.0;
        ls.met = ls.within_percent >= ls.percentile;
    }
    Some(ls)
}

/// A target rate against what the phase achieved over `secs`, and its late I/Os.
fn rate_report(plan: &PhasePlan, totals: &Counters, secs: f64) -> Option<RateReport> {
    let r = plan.rate()?;
    let target = if r.per_worker {
        r.rate.value() * plan.workers.len() as f64
    } else {
        r.rate.value()
    };
    let (unit, achieved) = match r.rate {
        Rate::Iops(_) => (RateUnit::Iops, totals.ops() as f64 / secs.max(1e-9)),
        Rate::BytesPerSec(_) => (RateUnit::BytesPerSec, totals.bytes() as f64 / secs.max(1e-9)),
    };
    Some(RateReport {
        target,
        unit,
        achieved,
        late_ios: totals.late,
        late_after_ns: plan.settings.late_after.0,
    })
}
