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

use storlab_stats::sequential::{assess, Assessment};

use crate::prepare::{Criterion, Reference};

/// Where a criterion stands (crates/stats' `sequential::assess`).
pub type Reading = Assessment;

/// A pair's cost in percent: the loss of a throughput, the rise of a latency.
pub fn cost(idle: f64, loaded: f64, more_is_better: bool) -> f64 {
    if more_is_better {
        100.0 * (1.0 - loaded / idle)
    } else {
        100.0 * (loaded / idle - 1.0)
    }
}

/// Where criterion `c` stands with `values` (the runs' figure in order; for a task's cost, each
/// pair's cost in percent, on the linear scale).
pub fn reading(c: &Criterion, values: &[f64]) -> Reading {
    let log = c.figure.log_scale() && !matches!(c.reference, Reference::Impact);
    let base: Option<Vec<f64>> = match &c.reference {
        Reference::Baseline { runs, .. } => Some(runs.iter().map(|r| r.1).collect()),
        _ => None,
    };
    assess(&c.design, values, log, base.as_deref(), c.threshold, c.direction)
}
