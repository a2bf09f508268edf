//! Sample collection: the thread that receives each worker's interval (its counters and
//! latency histograms) and merges the workers' intervals into one sample as soon as every
//! worker still running has reported it, telling the live views each interval and sample.

use std::collections::BTreeMap;
use std::sync::mpsc;

use hdrhistogram::Histogram;

use crate::merge::WorkerOutcome;
use crate::result::{Sample, TargetSample};
use crate::stat::{add_recorded, new_histogram, Counters, Recorded};
use crate::EngineError;

/// What a phase reports as it goes, for a live view (Prometheus metrics): each worker's
/// interval, told from the thread that collects the intervals into samples, never from a
/// worker's I/O loop, so that observing costs the I/O nothing.
pub trait IntervalObserver: Sync {
    /// One worker's interval on target `target` (the job's target number): bytes and
    /// operations read (`[0]`) and written (`[1]`), and the latencies of its reads and writes
    /// in nanoseconds.
    fn interval(&self, target: u16, bytes: [u64; 2], ops: [u64; 2], latency_ns: &[Recorded; 2]);
    /// An interval every worker has reported, merged into the sample that will be stored
    /// (a status line shows the last one's throughput, IOPS and p99).
    fn sample(&self, _sample: &Sample) {}
}

/// What a worker tells the collector: an interval it measured, or that it is done.
pub(crate) enum Msg {
    Interval {
        index: u32,
        target: u16,
        t_start: u64,
        t_end: u64,
        ramp: bool,
        counters: Counters,
        hist: [Recorded; 2],
    },
    Done {
        worker: usize,
        last_index: Option<u32>,
        outcome: Box<Result<WorkerOutcome, EngineError>>,
    },
}

/// An interval some workers have reported: their sum so far.
struct Pending {
    t_start: u64,
    t_end: u64,
    ramp: bool,
    counters: Counters,
    hist: Histogram<u64>,
    reported: usize,
    per_target: BTreeMap<u16, Counters>,
}

impl Pending {
    /// The interval as one sample: its figures, percentiles and per-target split.
    fn into_sample(self, index: u32) -> Sample {
        let h = &self.hist;
        let q = |x: f64| if h.is_empty() { 0 } else { h.value_at_quantile(x) };
        let c = &self.counters;
        Sample {
            index,
            t_start: self.t_start as f64 / 1e9,
            t_end: self.t_end as f64 / 1e9,
            ramp: self.ramp,
            bytes_read: c.bytes[0],
            bytes_written: c.bytes[1],
            ops_read: c.ops[0],
            ops_written: c.ops[1],
            lat_p50_ns: q(0.5),
            lat_p90_ns: q(0.9),
            lat_p99_ns: q(0.99),
            lat_p99_9_ns: q(0.999),
            lat_max_ns: if h.is_empty() { 0 } else { h.max() },
            late_ios: c.late,
            lat_mean_read_ns: mean_ns(c.lat_ns[0], c.ops[0]),
            lat_mean_write_ns: mean_ns(c.lat_ns[1], c.ops[1]),
            targets: self
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
        }
    }
}

/// The mean of `ops` latencies summing to `sum` ns, where there were any.
pub(crate) fn mean_ns(sum: u64, ops: u64) -> Option<f64> {
    (ops > 0).then(|| sum as f64 / ops as f64)
}

/// What the collector of one phase gathered: its samples, and each worker's outcome (None for
/// a worker that never reported).
pub(crate) struct Collected {
    pub(crate) samples: Vec<Sample>,
    pub(crate) outcomes: Vec<Option<Result<WorkerOutcome, EngineError>>>,
}

/// The collector's state: the intervals not yet complete, how many workers still run, and how
/// many of those done sent each last interval (counted, not looked up per worker: a message of
/// ten thousand workers costs no walk over them all).
struct Collector<'o> {
    pending: BTreeMap<u32, Pending>,
    running: usize,
    done_last: BTreeMap<u32, usize>,
    many_targets: bool,
    observer: Option<&'o dyn IntervalObserver>,
    got: Collected,
}

impl Collector<'_> {
    /// One worker's interval, added to the interval's sum.
    #[allow(clippy::too_many_arguments)]
    fn interval(
        &mut self,
        index: u32,
        target: u16,
        span: (u64, u64),
        ramp: bool,
        counters: Counters,
        hist: &[Recorded; 2],
    ) {
        if let Some(o) = self.observer {
            o.interval(target, counters.bytes, counters.ops, hist);
        }
        let p = self.pending.entry(index).or_insert_with(|| Pending {
            t_start: span.0,
            t_end: span.1,
            ramp,
            counters: Counters::default(),
            hist: new_histogram(),
            reported: 0,
            per_target: BTreeMap::new(),
        });
        if self.many_targets {
            p.per_target.entry(target).or_default().add(&counters);
        }
        p.t_end = p.t_end.max(span.1);
        p.t_start = p.t_start.min(span.0);
        p.counters.add(&counters);
        add_recorded(&mut p.hist, &hist[0]);
        add_recorded(&mut p.hist, &hist[1]);
        p.reported += 1;
    }

    /// Turns each interval into a sample, in order, once every worker that is still running,
    /// or that ran past it, has reported it.
    fn complete_ready(&mut self, on_sample: &mut dyn FnMut(&Sample)) {
        while let Some((&index, p)) = self.pending.iter().next() {
            let expected = self.running + self.done_last.range(index..).map(|(_, n)| n).sum::<usize>();
            if p.reported < expected {
                break;
            }
            let p = self.pending.remove(&index).expect("the first pending interval");
            self.emit(p.into_sample(index), on_sample);
        }
    }

    /// Stores a sample and tells the live views and the caller.
    fn emit(&mut self, s: Sample, on_sample: &mut dyn FnMut(&Sample)) {
        if let Some(o) = self.observer {
            o.sample(&s);
        }
        on_sample(&s);
        self.got.samples.push(s);
    }
}

/// Receives interval messages until every one of the `n` workers is done; each interval becomes
/// a sample as soon as every worker still running has reported it, and is handed to
/// `on_sample` (steady-state detection) and the observer.
pub(crate) fn collect(
    rx: &mpsc::Receiver<Msg>,
    n: usize,
    many_targets: bool,
    observer: Option<&dyn IntervalObserver>,
    on_sample: &mut dyn FnMut(&Sample),
) -> Collected {
    let mut c = Collector {
        pending: BTreeMap::new(),
        running: n,
        done_last: BTreeMap::new(),
        many_targets,
        observer,
        got: Collected {
            samples: Vec::new(),
            outcomes: (0..n).map(|_| None).collect(),
        },
    };
    let mut done = 0;
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
            } => c.interval(index, target, (t_start, t_end), ramp, counters, &hist),
            Msg::Done {
                worker,
                last_index,
                outcome,
            } => {
                c.running -= 1;
                if let Some(last) = last_index {
                    *c.done_last.entry(last).or_default() += 1;
                }
                c.got.outcomes[worker] = Some(*outcome);
                done += 1;
            }
        }
        c.complete_ready(on_sample);
    }
    for (index, p) in std::mem::take(&mut c.pending) {
        c.emit(p.into_sample(index), on_sample);
    }
    c.got
}
