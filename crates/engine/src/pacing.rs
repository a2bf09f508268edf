//! Pacing: how fast a worker may issue — a target rate (linear or Poisson, fio's rate and
//! rate_process), think time, fio's flows (flow.c), the minimum rate (rate_min), and waiting
//! for a scheduled time without overshooting it.

use std::sync::atomic::{AtomicU64, Ordering};

use rand::{rngs::SmallRng, Rng};
use storlab_model::settings::RateProcess;
use storlab_units::Rate;

use crate::clock::{now_ns, since};
use crate::plan::PhasePlan;

/// A worker's target rate: when its next I/O is due. Under rate control the clock of an I/O
/// starts at its scheduled time, not when it was issued, so that a stalled device shows in
/// latency (no coordinated omission), and an I/O issued later than `late_after` behind its
/// time is counted late.
pub(crate) struct RatePacer {
    /// Nanoseconds between I/Os, or per byte.
    gap: f64,
    per_byte: bool,
    process: RateProcess,
    late_after: u64,
    /// When the next I/O is due, ns since the phase's start.
    next: f64,
}

impl RatePacer {
    /// The worker's share of the phase's rate, if it has one.
    pub(crate) fn new(plan: &PhasePlan) -> Option<RatePacer> {
        let r = plan.rate()?;
        let rate = if r.per_worker {
            r.rate
        } else {
            r.rate.split(plan.workers.len() as u32)
        };
        let (gap, per_byte) = match rate {
            Rate::Iops(v) => (1e9 / v, false),
            Rate::BytesPerSec(v) => (1e9 / v, true),
        };
        Some(RatePacer {
            gap,
            per_byte,
            process: plan.settings.rate_process,
            late_after: plan.settings.late_after.0,
            next: 0.0,
        })
    }

    /// When the next I/O is due.
    #[inline]
    pub(crate) fn due(&self) -> u64 {
        self.next as u64
    }

    /// The due I/O of `len` bytes is issued at `now`: schedules the next one, evenly or with
    /// exponential gaps of the same mean (a Poisson process). True when it went out late.
    #[inline]
    pub(crate) fn advance(&mut self, len: u64, now: u64, rng: &mut SmallRng) -> bool {
        let due = self.due();
        let step = if self.per_byte { self.gap * len as f64 } else { self.gap };
        self.next += match self.process {
            RateProcess::Linear => step,
            // -ln(U), U uniform in (0, 1].
            RateProcess::Poisson => step * -(1.0 - rng.gen::<f64>()).ln(),
        };
        now > due + self.late_after
    }
}

/// fio's thinktime: after every `blocks` I/Os, a pause, its first `spin` part spent spinning.
pub(crate) struct Think {
    total: u64,
    spin: u64,
    blocks: u64,
}

impl Think {
    /// The phase's think time, if it has one.
    pub(crate) fn new(plan: &PhasePlan) -> Option<Think> {
        let st = &plan.settings;
        (st.think.0 > 0).then(|| Think {
            total: st.think.0,
            spin: st.think_spin.0,
            blocks: st.think_blocks.max(1) as u64,
        })
    }

    /// After `issued` I/Os: pauses when it is time to; true when it did.
    #[inline]
    pub(crate) fn pause_after(&self, issued: u64) -> bool {
        if !issued.is_multiple_of(self.blocks) {
            return false;
        }
        let spin_until = now_ns() + self.spin.min(self.total);
        while now_ns() < spin_until {
            std::hint::spin_loop();
        }
        let rest = self.total.saturating_sub(self.spin);
        if rest > 0 {
            std::thread::sleep(std::time::Duration::from_nanos(rest));
        }
        true
    }
}

/// One of fio's flows (flow.c): the I/Os its workers issued and the weights of those still
/// running. A worker may issue while its share of the I/Os is at most its share of the weight.
pub(crate) struct Flow {
    pub(crate) issued: AtomicU64,
    pub(crate) total_weight: AtomicU64,
}

/// What a worker's flow lets it do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowGate {
    /// Issue.
    Go,
    /// Ahead of its share: reap what is in flight first.
    Reap,
    /// Ahead of its share with nothing in flight: it waited; look again.
    Again,
}

/// A worker's place in its flow: the flow, its weight and the I/Os it issued.
pub(crate) struct FlowShare<'a> {
    flow: &'a Flow,
    weight: u64,
    count: u64,
}

impl<'a> FlowShare<'a> {
    /// Joins `flow` with `weight`.
    pub(crate) fn new(flow: &'a Flow, weight: u64) -> FlowShare<'a> {
        FlowShare { flow, weight, count: 0 }
    }

    /// Whether the worker may issue its next I/O; counts it when it may. A worker ahead of
    /// its share with nothing in flight sleeps `sleep_ns` (fio's flow_sleep) or yields.
    #[inline]
    pub(crate) fn gate(&mut self, in_flight: u32, sleep_ns: u64) -> FlowGate {
        let issued = self.flow.issued.load(Ordering::Relaxed).max(1);
        let total = self.flow.total_weight.load(Ordering::Relaxed).max(1);
        if self.count as f64 / issued as f64 > self.weight as f64 / total as f64 {
            if in_flight > 0 {
                return FlowGate::Reap;
            }
            if sleep_ns > 0 {
                std::thread::sleep(std::time::Duration::from_nanos(sleep_ns));
            } else {
                std::thread::yield_now();
            }
            return FlowGate::Again;
        }
        self.flow.issued.fetch_add(1, Ordering::Relaxed);
        self.count += 1;
        FlowGate::Go
    }

    /// The worker is done: its weight no longer counts against the others.
    pub(crate) fn leave(&self) {
        self.flow.total_weight.fetch_sub(self.weight, Ordering::Relaxed);
    }
}

/// Sleeps, then spins, until `at` nanoseconds after `epoch`: sleeping alone overshoots by tens
/// of microseconds, which at 20,000 IOPS is a whole I/O slot.
pub(crate) fn wait_until(epoch: u64, at: u64) {
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

/// fio's rate_min (backend.c, __check_min_rate): at a completion, once a sample interval
/// (fio's rate_cycle) has passed since the last check, the rate over that span is held to the
/// minimum. Measured from completion to completion, so a slow rate whose I/Os are further apart
/// than an interval is judged over the gap, as fio does.
#[derive(Debug)]
pub(crate) struct RateMin {
    min: Rate,
    interval_ns: u64,
    /// The last check: when, and the bytes and I/Os moved by then.
    last: Option<(u64, u64, u64)>,
}

/// A span under the minimum: the rate it made and the rate wanted, with their unit.
pub(crate) struct UnderMin {
    pub(crate) got: f64,
    pub(crate) want: f64,
    pub(crate) unit: &'static str,
}

impl RateMin {
    /// The check of a phase with a minimum rate.
    pub(crate) fn new(plan: &PhasePlan) -> Option<RateMin> {
        plan.settings.rate_min.map(|min| RateMin {
            min,
            interval_ns: plan.settings.interval.0,
            last: None,
        })
    }

    /// A completion at `now` with `moved` (bytes, I/Os) done so far: Err when the span since
    /// the last check, an interval or more, ran under the minimum. Not judged during the ramp.
    pub(crate) fn check(&mut self, now: u64, measuring: bool, moved: (u64, u64)) -> Result<(), UnderMin> {
        if !measuring {
            self.last = None;
            return Ok(());
        }
        let Some((at, bytes, ops)) = self.last else {
            self.last = Some((now, moved.0, moved.1));
            return Ok(());
        };
        let spent = now.saturating_sub(at);
        if (spent as f64) < self.interval_ns as f64 * 0.999 {
            return Ok(());
        }
        let secs = spent as f64 / 1e9;
        let (got, want, unit) = match self.min {
            Rate::Iops(v) => ((moved.1 - ops) as f64 / secs, v, "IOPS"),
            Rate::BytesPerSec(v) => ((moved.0 - bytes) as f64 / secs, v, "bytes/s"),
        };
        if got < want {
            return Err(UnderMin { got, want, unit });
        }
        self.last = Some((now, moved.0, moved.1));
        Ok(())
    }
}
