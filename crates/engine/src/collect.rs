//! Sample collection: the thread that receives each worker's interval (its counters and
//! latency histograms) and merges the workers' intervals into one sample as soon as every
//! worker still running has reported it, telling the live views each interval and sample.

use std::collections::BTreeMap;
use std::sync::mpsc;

use hdrhistogram::Histogram;

use crate::merge::WorkerOutcome;
use crate::phase::IntervalObserver;
use crate::result::{Sample, TargetSample};
use crate::stat::{new_histogram, Counters};
use crate::worker::Worker;
use crate::EngineError;

/// What a worker tells the collector: an interval it measured, or that it is done.
pub(crate) enum Msg {
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
/// The mean of `ops` latencies summing to `sum` ns, where there were any.
fn mean_ns(sum: u64, ops: u64) -> Option<f64> {
    (ops > 0).then(|| sum as f64 / ops as f64)
}

/// Receives interval messages until every worker is done; each interval becomes a sample as
/// soon as every worker still running has reported it.
pub(crate) fn collect(
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

impl Worker<'_> {
    pub(crate) fn boundary_after(&self, t: u64) -> u64 {
        let iv = self.plan.settings.interval.0.max(1_000_000);
        let next = (t / iv + 1) * iv;
        let ramp = self.plan.settings.ramp.0;
        if t < ramp && ramp < next {
            ramp
        } else {
            next
        }
    }

    /// Closes the current interval when `now` passed its end.
    #[inline]
    pub(crate) fn tick(&mut self, now: u64) -> Result<(), EngineError> {
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

    /// Sends the interval ending at `end` to the collector and starts a new one.
    pub(crate) fn send_interval(&mut self, end: u64) {
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
}
