//! fio's latency_target (io_u.c): the search for the deepest queue whose I/Os meet a latency
//! target.

use crate::plan::PhasePlan;
use storlab_model::settings::PhaseSettings;

/// One worker's search for the deepest queue that meets a latency target (fio's io_u.c).
#[derive(Debug)]
pub(crate) struct LatencySeek {
    pub(crate) target_ns: u64,
    /// The depth being tried.
    pub(crate) qd: u32,
    /// The deepest that met the target, and the shallowest that missed it (or iodepth).
    pub(crate) low: u32,
    pub(crate) high: u32,
    /// Met windows in a row just below `high`.
    pub(crate) stable: u32,
    pub(crate) window_start: u64,
    pub(crate) ios: u64,
    pub(crate) failed: u64,
    /// Settled: the measured window ends then.
    pub(crate) settled_until: Option<u64>,
}

impl LatencySeek {
    /// The search of a phase with a latency target, starting at depth 1.
    pub(crate) fn new(plan: &PhasePlan) -> Option<LatencySeek> {
        plan.settings.latency_target.map(|t| LatencySeek {
            target_ns: t.0,
            qd: 1,
            low: 1,
            high: plan.settings.iodepth.max(1),
            stable: 0,
            window_start: 0,
            ios: 0,
            failed: 0,
            settled_until: None,
        })
    }
}

/// What a window's end decided: whether the measured window is over, and when the search has
/// just settled, where the measured part starts.
pub(crate) struct SeekCheck {
    pub(crate) over: bool,
    pub(crate) measure_from: Option<u64>,
}

impl LatencySeek {
    /// fio's latency_target (io_u.c, lat_target_check): when a window has passed, the share of
    /// its I/Os within the target decides: met, the depth doubles (until the first miss, then
    /// halves the distance to the last miss); missed, it halves the distance to the last depth
    /// that met it. When a met window leaves the depth where it was, the search has settled:
    /// the measured part starts at the next interval (`next_boundary`) and lasts one window.
    /// latency_run keeps searching for the whole phase, measured.
    pub(crate) fn check(&mut self, now: u64, s: &PhaseSettings, next_boundary: u64) -> SeekCheck {
        let not_over = SeekCheck {
            over: false,
            measure_from: None,
        };
        let window = s.latency_window.0.max(1);
        let iodepth = s.iodepth.max(1);
        let keep_searching = s.latency_run;
        // The measured part: a window, and at least a whole sample interval.
        let measured = window.max(s.interval.0);
        if let Some(until) = self.settled_until {
            return SeekCheck {
                over: now >= until,
                measure_from: None,
            };
        }
        if now < self.window_start + window {
            return not_over;
        }
        if self.ios > 0 {
            let share = (self.ios - self.failed) as f64 / self.ios as f64 * 100.0;
            let qd = self.qd;
            if share >= s.latency_percentile {
                self.low = self.qd;
                if self.qd + 1 == self.high {
                    self.stable += 1;
                    if self.stable >= 3 {
                        self.high += 1;
                        self.stable = 0;
                    }
                }
                self.qd = if self.high != iodepth {
                    (self.qd + self.high) / 2
                } else {
                    self.qd * 2
                }
                .clamp(1, iodepth);
                if !keep_searching && self.qd == qd {
                    self.settled_until = Some(next_boundary + measured);
                }
            } else if self.qd == 1 {
                // Not even one I/O at a time meets it: measured there (and reported as missed).
                if !keep_searching {
                    self.settled_until = Some(next_boundary + measured);
                }
            } else {
                self.high = self.qd;
                if self.qd == self.low {
                    self.low -= 1;
                }
                self.qd = ((self.qd + self.low) / 2).max(1);
                self.stable = 0;
            }
        }
        self.window_start = now;
        self.ios = 0;
        self.failed = 0;
        SeekCheck {
            over: false,
            measure_from: self.settled_until.map(|_| next_boundary),
        }
    }
}
