//! A criterion's figures to its verdict: the observed figure, the repeated confidence interval
//! and the decision, at the look the figures reach (crates/stats' `sequential` says how).
//!
//! - Against a number: the interval of the mean of the runs' figure. A latency is taken on the
//!   logarithmic scale: its observed figure is the geometric mean, its interval the exponent of
//!   the logs' interval (see `Figure::log_scale`).
//! - Against a baseline: the ratio of this qualification's mean to the baseline runs' mean.
//!   This qualification's repeated interval and the baseline's fixed-sample interval each hold
//!   with half the error (their design's confidence is 1 − α/2), so both hold together with the
//!   confidence asked (Bonferroni); the ratio's interval runs from the smallest to the largest
//!   ratio they allow (on the logarithmic scale for a latency: a difference of logs).
//! - A task's cost: each pair's cost in percent — the loss of throughput, 100 · (1 − loaded ÷
//!   idle), or the rise of latency, 100 · (loaded ÷ idle − 1) — and the interval of their mean.
//!   Pairing each loaded run with the idle run just before it takes out what drifts between
//!   pairs (a device warming up, a filesystem filling).

use storlab_model::qualify::Decision;
use storlab_stats::sequential::{decide, fixed_interval, interval, ratio_interval};

use crate::prepare::{Criterion, Reference};

/// Where a criterion stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The mean (a ratio for a baseline), None without values.
    pub observed: Option<f64>,
    /// The repeated confidence interval, None before the first look.
    pub interval: Option<(f64, f64)>,
    /// What the interval says.
    pub decision: Decision,
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A pair's cost in percent: the loss of a throughput, the rise of a latency.
pub fn cost(idle: f64, loaded: f64, more_is_better: bool) -> f64 {
    if more_is_better {
        100.0 * (1.0 - loaded / idle)
    } else {
        100.0 * (loaded / idle - 1.0)
    }
}

/// Where criterion `c` stands with `values` (the runs' figure in order; for a task's cost, each
/// pair's cost in percent).
pub fn reading(c: &Criterion, values: &[f64]) -> Reading {
    let log = c.figure.log_scale() && !matches!(c.reference, Reference::Impact);
    let scaled: Vec<f64> = values.iter().map(|v| if log { v.ln() } else { *v }).collect();
    let back = |x: f64| if log { x.exp() } else { x };
    let iv = interval(&c.design, &scaled);
    let (observed, interval) = match &c.reference {
        Reference::Absolute | Reference::Impact => (mean(&scaled).map(back), iv.map(|(a, b)| (back(a), back(b)))),
        Reference::Baseline { runs, .. } => {
            let base: Vec<f64> = runs.iter().map(|(_, v)| if log { v.ln() } else { *v }).collect();
            let observed = mean(&scaled)
                .zip(mean(&base))
                .map(|(m, b)| if log { (m - b).exp() } else { m / b });
            let ratio = iv.zip(fixed_interval(&base, c.design.confidence)).and_then(|(cur, b)| {
                if log {
                    Some(((cur.0 - b.1).exp(), (cur.1 - b.0).exp()))
                } else {
                    ratio_interval(cur, b)
                }
            });
            (observed, ratio)
        }
    };
    Reading {
        observed,
        interval,
        decision: interval.map_or(Decision::Undecided, |iv| decide(iv, c.threshold, c.direction)),
    }
}
