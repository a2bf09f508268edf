//! What the engine counts and measures, the same way everywhere: a worker's counters of one
//! interval, latency histograms (HDR, 0.1 % resolution) and their summaries and stored
//! encoding, and the CPU time the kernel accounts to a thread, the process or its children
//! (fio's stat.c).

use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use storlab_model::footprint::{LATENCY_DIGITS, MAX_LATENCY_NS};

use crate::backend::Op;
use crate::result::{IntervalHistograms, Latency};

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

/// A latency histogram with 3 significant digits (0.1 % resolution) from 1 ns to one hour
/// (longer ones are clamped to it).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, LATENCY_DIGITS).expect("valid histogram bounds")
}

/// A latency histogram's recorded buckets, `(value, count)` in increasing value: how a worker
/// hands an interval's latencies over — a few hundred pairs where the histogram is 270 KB —, so
/// that a collector behind thousands of workers (starved of CPU by them) queues kilobytes, not
/// gigabytes, and no histogram is allocated per interval.
pub type Recorded = Vec<(u64, u64)>;

/// The buckets `h` recorded (see [`Recorded`]).
pub(crate) fn recorded(h: &Histogram<u64>) -> Recorded {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

/// Adds recorded buckets to `h` (one of the engine's: every value fits).
pub(crate) fn add_recorded(h: &mut Histogram<u64>, r: &Recorded) {
    for &(v, n) in r {
        let _ = h.record_n(v, n);
    }
}

/// What a finished worker leaves in place of the histograms it handed over: the smallest one
/// there is (a few bytes), so that finishing does not allocate a full histogram per field —
/// thousands of workers finishing at once would hold twice their memory.
pub(crate) fn spent_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 2, 0).expect("valid histogram bounds")
}

/// An I/O started, submitted and completed at these times, split at its submission: (slat,
/// clat), ns, each at least 1.
#[inline]
pub(crate) fn split_at_submission(start: u64, submit: u64, end: u64) -> (u64, u64) {
    (submit.saturating_sub(start).max(1), end.saturating_sub(submit).max(1))
}

/// One interval's worth of a worker's I/O.
#[derive(Default, Clone, Copy)]
pub(crate) struct Counters {
    pub(crate) bytes: [u64; 2],
    pub(crate) ops: [u64; 2],
    /// The I/Os' latencies summed, ns: each interval's mean (fio's latency log).
    pub(crate) lat_ns: [u64; 2],
    /// An asynchronous back-end's I/Os split at their submission: how many, and their
    /// submission (fio's slat) and completion (clat) latencies summed, ns (fio's slat and clat
    /// logs; a synchronous call's I/Os are not split).
    pub(crate) split_ops: [u64; 2],
    pub(crate) slat_ns: [u64; 2],
    pub(crate) clat_ns: [u64; 2],
    pub(crate) late: u64,
}

impl Counters {
    /// One split I/O of direction `d` (see [`split_at_submission`]) into the interval's sums.
    #[inline]
    pub(crate) fn add_split(&mut self, d: usize, (slat, clat): (u64, u64)) {
        self.split_ops[d] += 1;
        self.slat_ns[d] += slat;
        self.clat_ns[d] += clat;
    }

    pub(crate) fn add(&mut self, o: &Counters) {
        for i in 0..2 {
            self.bytes[i] += o.bytes[i];
            self.ops[i] += o.ops[i];
            self.lat_ns[i] += o.lat_ns[i];
            self.split_ops[i] += o.split_ops[i];
            self.slat_ns[i] += o.slat_ns[i];
            self.clat_ns[i] += o.clat_ns[i];
        }
        self.late += o.late;
    }
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes[0] + self.bytes[1]
    }
    pub(crate) fn ops(&self) -> u64 {
        self.ops[0] + self.ops[1]
    }
}
/// The index of a direction in the engine's `[read, write]` pairs.
pub(crate) fn slot_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
    }
}
/// A histogram in the HdrHistogram V2 deflate encoding the store keeps.
pub fn encode_histogram(h: &Histogram<u64>) -> Vec<u8> {
    let mut encoded = Vec::new();
    let _ = V2DeflateSerializer::new().serialize(h, &mut encoded);
    encoded
}

/// The histogram encoded, or nothing when it holds no value: the store keeps an empty column
/// for what was never measured (the flushes of a phase that made none, a synchronous
/// back-end's slat and clat), so that no reader takes it for a measured zero.
pub fn encode_if_any(h: &Histogram<u64>) -> Vec<u8> {
    if h.is_empty() {
        Vec::new()
    } else {
        encode_histogram(h)
    }
}

/// A latency histogram per direction, made when first needed (under a rate: each I/O's
/// latency from its issue, fio's lat, beside storlab's from when it was due).
pub(crate) struct PerDirection(Box<[Histogram<u64>; 2]>);

impl Default for PerDirection {
    fn default() -> PerDirection {
        PerDirection(Box::new([new_histogram(), new_histogram()]))
    }
}

impl PerDirection {
    #[inline]
    pub(crate) fn record(&mut self, d: usize, v: u64) {
        self.0[d].saturating_record(v);
    }

    /// Adds another worker's.
    pub(crate) fn add(&mut self, o: &PerDirection) {
        let _ = self.0[0].add(&o.0[0]);
        let _ = self.0[1].add(&o.0[1]);
    }

    /// Both encoded, each empty where it holds nothing.
    pub(crate) fn encoded(&self) -> [Vec<u8>; 2] {
        [encode_if_any(&self.0[0]), encode_if_any(&self.0[1])]
    }
}

/// An asynchronous back-end's submission and completion latencies per direction (fio's slat:
/// from the I/O's start to its submission; clat: from there to its completion), ns. Made at the
/// first split I/O: a synchronous back-end's workers never hold them (four histograms, a
/// megabyte, per worker).
#[derive(Default)]
pub(crate) struct SlatClat {
    /// `[slat, clat]`, each `[read, write]`.
    parts: Option<Box<[[Histogram<u64>; 2]; 2]>>,
}

impl SlatClat {
    fn parts(&mut self) -> &mut [[Histogram<u64>; 2]; 2] {
        self.parts
            .get_or_insert_with(|| Box::new([[new_histogram(), new_histogram()], [new_histogram(), new_histogram()]]))
    }

    /// One I/O of direction `d` and its two parts (see [`split_at_submission`]).
    #[inline]
    pub(crate) fn record(&mut self, d: usize, (slat, clat): (u64, u64)) {
        let p = self.parts();
        p[0][d].saturating_record(slat);
        p[1][d].saturating_record(clat);
    }

    /// Adds another worker's.
    pub(crate) fn add(&mut self, o: &SlatClat) {
        let Some(theirs) = o.parts.as_deref() else { return };
        let mine = self.parts();
        for (m, t) in mine.iter_mut().flatten().zip(theirs.iter().flatten()) {
            let _ = m.add(t);
        }
    }

    /// The encoded histograms, `([slat read, slat write], [clat read, clat write])`, each empty
    /// where none was recorded.
    pub(crate) fn encoded(&self) -> ([Vec<u8>; 2], [Vec<u8>; 2]) {
        match self.parts.as_deref() {
            None => Default::default(),
            Some([s, c]) => (
                [encode_if_any(&s[0]), encode_if_any(&s[1])],
                [encode_if_any(&c[0]), encode_if_any(&c[1])],
            ),
        }
    }
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
    let u = usage(who);
    (u.user, u.sys)
}

/// What getrusage says of a thread or process: CPU seconds, context switches and page faults
/// (fio's `cpu` line: usr, sys, ctx, majf, minf).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// User-mode CPU, seconds.
    pub user: f64,
    /// Kernel CPU, seconds.
    pub sys: f64,
    /// Context switches, voluntary and not.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
    /// Seconds the thread was ready to run but waited for a CPU (the scheduler's run delay,
    /// /proc/thread-self/schedstat): the CPU's saturation as the thread saw it. 0 for a process.
    pub wait: f64,
}

impl Usage {
    /// What was used from `self` to `later`.
    pub fn until(&self, later: &Usage) -> Usage {
        Usage {
            user: later.user - self.user,
            sys: later.sys - self.sys,
            ctx: later.ctx.saturating_sub(self.ctx),
            majf: later.majf.saturating_sub(self.majf),
            minf: later.minf.saturating_sub(self.minf),
            wait: (later.wait - self.wait).max(0.0),
        }
    }
}

/// The calling thread's use so far, with the time it waited to run.
pub fn thread_usage() -> Usage {
    let mut u = usage(libc::RUSAGE_THREAD);
    u.wait = run_delay().unwrap_or(0.0);
    u
}

/// The calling thread's time waiting on a run queue, seconds: schedstat's second field, ns
/// (read twice a phase per worker, never per I/O).
fn run_delay() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

fn usage(who: libc::c_int) -> Usage {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we pass; `who` is one of the RUSAGE_ constants.
    unsafe { libc::getrusage(who, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let n = |v: libc::c_long| v.max(0) as u64;
    Usage {
        user: tv(ru.ru_utime),
        sys: tv(ru.ru_stime),
        ctx: n(ru.ru_nvcsw) + n(ru.ru_nivcsw),
        majf: n(ru.ru_majflt),
        minf: n(ru.ru_minflt),
        wait: 0.0,
    }
}

/// A worker's completion latencies over each interval, per direction, kept where the plan asks
/// (`interval_histograms`: fio's histogram log). fio's clat: from submission to completion for
/// an asynchronous back-end's I/O, the whole I/O for a synchronous call's.
pub(crate) struct IntervalClat {
    current: [Histogram<u64>; 2],
    kept: Vec<IntervalHistograms>,
    /// An interval of their own (fio's log_hist_msec beside another log_avg_msec): its length
    /// and where the current one began, ns from the phase's start. None: the samples'.
    own: Option<(u64, u64)>,
}

impl IntervalClat {
    /// Kept over the samples' intervals, or every `own` ns.
    pub(crate) fn new(own: Option<u64>) -> IntervalClat {
        IntervalClat {
            current: [new_histogram(), new_histogram()],
            kept: Vec::new(),
            own: own.filter(|&ns| ns > 0).map(|ns| (ns, 0)),
        }
    }

    /// One I/O of direction `d` completed at `end` (ns from the phase's start) `clat` ns
    /// after its submission; an interval of their own that `end` passed is closed first (in
    /// the ramp where it began before `ramp_end`).
    #[inline]
    pub(crate) fn record(&mut self, d: usize, clat: u64, end: u64, ramp_end: u64) {
        while let Some((every, start)) = self.own.filter(|(every, start)| end >= start + every) {
            self.close(start, start + every, start < ramp_end);
            self.own = Some((every, start + every));
        }
        self.current[d].saturating_record(clat);
    }

    /// A sample interval from `t_start` to `t_end` ended: the histograms close with it, unless
    /// they keep an interval of their own.
    pub(crate) fn sample_ended(&mut self, t_start: u64, t_end: u64, ramp: bool) {
        if self.own.is_none() {
            self.close(t_start, t_end, ramp);
        }
    }

    /// The worker ended at `end`: an interval of their own closes there.
    pub(crate) fn finish(&mut self, end: u64, ramp_end: u64) {
        if let Some((_, start)) = self.own {
            if end > start {
                self.close(start, end, start < ramp_end);
            }
        }
    }

    /// Closes the interval from `t_start` to `t_end` (ns from the phase's start).
    fn close(&mut self, t_start: u64, t_end: u64, ramp: bool) {
        let clat = [encode_if_any(&self.current[0]), encode_if_any(&self.current[1])];
        self.current.iter_mut().for_each(Histogram::reset);
        self.kept.push(IntervalHistograms {
            t_end: t_end as f64 / 1e9,
            seconds: t_end.saturating_sub(t_start) as f64 / 1e9,
            ramp,
            clat,
        });
    }

    /// The intervals kept.
    pub(crate) fn take(&mut self) -> Vec<IntervalHistograms> {
        std::mem::take(&mut self.kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_is_as_large_as_the_model_counts_it() {
        // The capacity check counts workers' memory by model's arithmetic; this is what the
        // engine really allocates.
        assert_eq!(
            new_histogram().distinct_values() as u64 * 8,
            storlab_model::footprint::histogram_bytes()
        );
    }
}
