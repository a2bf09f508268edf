//! fio's steady-state detection (steadystate.c) over a phase's merged samples.

use std::collections::VecDeque;

use storlab_model::settings::Steady;

use crate::plan::PhasePlan;
use crate::result::{Sample, SteadyReport};

/// fio's steady-state detection over a phase's merged samples, as they complete: after the
/// ramp, a rolling window of full samples, judged by the criterion (fio's steadystate.c: the
/// least-squares slope per sample, or the largest deviation from the window's mean).
pub(crate) struct SteadyWatch {
    criterion: Steady,
    len: usize,
    ramp_s: f64,
    nominal_s: f64,
    /// (IOPS, bytes/s) of each full sample in the window.
    window: VecDeque<(f64, f64)>,
    last: Option<f64>,
    attained_at: Option<f64>,
}

impl SteadyWatch {
    pub(crate) fn new(criterion: Steady, plan: &PhasePlan) -> SteadyWatch {
        let interval = plan.settings.interval.0.max(1) as f64;
        SteadyWatch {
            criterion,
            len: ((plan.settings.steady_window.0 as f64 / interval).round() as usize).max(2),
            ramp_s: (plan.settings.ramp.0 + plan.settings.steady_ramp.0) as f64 / 1e9,
            nominal_s: interval / 1e9,
            window: VecDeque::new(),
            last: None,
            attained_at: None,
        }
    }

    /// Takes a sample; true once the criterion is met.
    pub(crate) fn judge(&mut self, s: &Sample) -> bool {
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

    pub(crate) fn report(self) -> SteadyReport {
        SteadyReport {
            attained: self.attained_at.is_some(),
            criterion: self.last,
            at_seconds: self.attained_at,
            iops: self.window.iter().map(|w| w.0).collect(),
            bw: self.window.iter().map(|w| w.1).collect(),
        }
    }
}
