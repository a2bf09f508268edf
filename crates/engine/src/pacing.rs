//! Pacing: how fast a worker may issue — fio's flows (flow.c), and waiting for a scheduled
//! time without overshooting it.

use std::sync::atomic::AtomicU64;

use crate::clock::since;
use crate::worker::Worker;
use crate::EngineError;
use storlab_units::Rate;

/// One of fio's flows (flow.c): the I/Os its workers issued and the weights of those still
/// running. A worker may issue while its share of the I/Os is at most its share of the weight.
pub(crate) struct Flow {
    pub(crate) issued: AtomicU64,
    pub(crate) total_weight: AtomicU64,
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

impl Worker<'_> {
    /// fio's rate_min (backend.c, __check_min_rate): at a completion, once a sample interval
    /// (fio's rate_cycle) has passed since the last check, the rate over that span is held to
    /// the minimum; below it the phase fails. Measured from completion to completion, so a slow
    /// rate whose I/Os are further apart than an interval is judged over the gap, as fio does.
    pub(crate) fn check_rate_min(&mut self, now: u64) -> Result<(), EngineError> {
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
}
