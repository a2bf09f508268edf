//! Two targets compared round by round (`storlab compare`): each round runs the job once on
//! each, so a round's figures are a pair, and the pair's log ratio ln(B/A) is what is looked at.
//! Pairing takes out what the two runs of a round share (the hour's drift, a neighbour's load);
//! the log makes the comparison one of ratios, so its interval's bounds are ratios (positive, a
//! percentage never below −100 %) and a latency and a throughput are read alike.
//!
//! After each round from the design's first look on, the repeated confidence interval of the
//! mean log ratio (sequential.rs: Pocock's constant nominal level, calibrated by simulation so
//! that all looks together cover the true mean with the confidence asked for) is turned back
//! into an interval of the geometric mean ratio B/A, and read against the margin M:
//!
//! - within [1/(1+M), 1+M] whole: **equivalent** within ±M % (the two one-sided tests of
//!   equivalence, Schuirmann 1987, read as the interval's inclusion);
//! - wholly above 1 or wholly below it (and not within the margin): **different**, the better
//!   side named;
//! - else open: another round.
//!
//! A figure is decided at its first look that says so and keeps that look's figures; since
//! every look's interval covers the true ratio with the confidence together, two targets that
//! do not differ are called different with probability at most 1 − confidence, however many
//! looks were taken (the test suite measures this with its own simulation).
//!
//! Sources: C. Jennison and B. W. Turnbull, *Group Sequential Methods with Applications to
//! Clinical Trials*, 2000, ch. 6 (equivalence) and 9 (repeated confidence intervals);
//! D. J. Schuirmann, "A comparison of the two one-sided tests procedure and the power approach
//! for assessing the equivalence of average bioavailability", J. Pharmacokinet. Biopharm. 15,
//! 657–680, 1987.

use crate::sequential::{interval, Design};
use crate::t_quantile;

pub use storlab_model::versus::Call;

/// One look at a figure's pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    /// Pairs looked at.
    pub n: usize,
    /// The geometric mean of the ratios B/A.
    pub ratio: f64,
    /// Its repeated confidence interval.
    pub ci: (f64, f64),
    /// The standard deviation of the log ratios.
    pub sd_log: f64,
}

/// The look at `a` and `b` (a round's figures each, in order; every one positive), or None
/// before the design's first look, past its last, or with a figure that is not positive.
pub fn look(design: &Design, a: &[f64], b: &[f64]) -> Option<Look> {
    if a.len() != b.len() || a.iter().chain(b).any(|v| !(*v > 0.0 && v.is_finite())) {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| (y / x).ln()).collect();
    let (lo, hi) = interval(design, &d)?;
    let n = d.len() as f64;
    let mean = d.iter().sum::<f64>() / n;
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    Some(Look {
        n: d.len(),
        ratio: mean.exp(),
        ci: (lo.exp(), hi.exp()),
        sd_log: sd,
    })
}

/// What an interval of B/A says against `margin` (a fraction), for a figure where more is
/// better (`more_is_better`) or less.
pub fn call(ci: (f64, f64), margin: f64, more_is_better: bool) -> Call {
    let (lo, hi) = ci;
    let bound = 1.0 + margin;
    if lo >= 1.0 / bound && hi <= bound {
        return Call::Equivalent;
    }
    let b_higher = lo > 1.0;
    let b_lower = hi < 1.0;
    match (b_higher, b_lower, more_is_better) {
        (true, _, true) | (_, true, false) => Call::B,
        (true, _, false) | (_, true, true) => Call::A,
        _ => Call::Undecided,
    }
}

/// The half width of `look`'s interval as a percentage of the ratio: the smallest difference
/// its spread let it tell from none.
pub fn smallest_detectable_pct(look: &Look) -> f64 {
    ((look.ci.1 / look.ci.0).sqrt() - 1.0) * 100.0
}

/// About how many rounds, at the spread of the log ratios `sd_log`, the design's nominal level
/// would need for its interval's half width to fall to ln(1 + margin): the rounds in which a
/// difference of the margin could be told from none (or equivalence from a difference of the
/// margin). None when the spread is nil (the next look decides) or it would take more than
/// 10,000 rounds.
pub fn rounds_for_margin(design: &Design, sd_log: f64, margin: f64) -> Option<u32> {
    let target = (1.0 + margin).ln();
    if sd_log <= 0.0 {
        return None;
    }
    (design.first_look.max(2) as usize..=10_000)
        .find(|n| {
            let c = t_quantile(1.0 - design.nominal_alpha / 2.0, (*n - 1) as f64);
            c * sd_log / (*n as f64).sqrt() <= target
        })
        .map(|n| n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_read_the_interval_against_one_and_the_margin() {
        assert_eq!(call((0.98, 1.03), 0.05, true), Call::Equivalent);
        assert_eq!(call((1.10, 1.30), 0.05, true), Call::B);
        assert_eq!(call((1.10, 1.30), 0.05, false), Call::A);
        assert_eq!(call((0.50, 0.90), 0.05, true), Call::A);
        assert_eq!(call((0.90, 1.20), 0.05, true), Call::Undecided);
        // A small but certain difference inside the margin is equivalence.
        assert_eq!(call((1.01, 1.02), 0.05, true), Call::Equivalent);
    }

    #[test]
    fn a_look_is_of_the_ratio_and_positive() {
        let d = crate::sequential::calibrate(0.95, 3, 6);
        let l = look(&d, &[100.0, 110.0, 90.0], &[200.0, 230.0, 170.0]).unwrap();
        assert!(l.ratio > 1.9 && l.ratio < 2.1, "{l:?}");
        assert!(l.ci.0 > 0.0 && l.ci.0 < l.ratio && l.ratio < l.ci.1);
        assert_eq!(look(&d, &[1.0, 2.0], &[1.0, 2.0]), None, "before the first look");
        assert_eq!(look(&d, &[1.0, 0.0, 1.0], &[1.0, 2.0, 1.0]), None, "a zero is no ratio");
    }
}
