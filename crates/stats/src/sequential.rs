//! How many repeats are enough: a group-sequential design with repeated confidence intervals,
//! for `storlab qualify`. After each repetition of a job (from the `first_look`-th on, up to
//! `max_repeats`) the interval of the mean of its figure is
//!
//! ```text
//!     x̄ₙ ± cₙ · sₙ / √n,     cₙ = the 1 − α′/2 quantile of Student's t with n − 1 degrees of freedom,
//! ```
//!
//! and a criterion is decided at the first look whose interval lies wholly on one side of its
//! threshold. The nominal level α′ of a single look is the same at every look (Pocock's design,
//! on the p-value scale) and chosen so that, over all the looks together, the intervals cover
//! the true mean with probability at least the confidence asked for: the intervals are
//! *repeated confidence intervals* (Jennison and Turnbull), so looking after every repetition
//! and stopping when the answer is clear does not inflate the error rates as looking at an
//! ordinary interval after every run would.
//!
//! Why α′ is found by simulation: with the variance unknown the looks' t statistics are not the
//! correlated normals of the classical tables, and at 3 to 12 repetitions the difference is
//! large. But Tₙ = (x̄ₙ − μ)/(sₙ/√n) is a pivot — the joint law of (T₃, …, T_N) does not depend on
//! μ or σ for normal data — so the error of a nominal level over all looks is a fixed number
//! that a simulation of standard normal sequences measures, and α′ is found by bisection on it
//! (Jennison and Turnbull 1991 compute the same probabilities for sequential t tests by
//! numerical integration). The simulation uses its own seeded generator, so a design and every
//! verdict computed with it are the same on every machine and every day; it is calibrated a
//! little below the level (by 2.5 standard errors of its own estimate) so that the error it
//! claims is an upper bound.
//!
//! Sources:
//! - S. J. Pocock, "Group sequential methods in the design and analysis of clinical trials",
//!   Biometrika 64(2), 191–199, 1977 (a constant nominal level at every look).
//! - C. Jennison and B. W. Turnbull, "Interim analyses: the repeated confidence interval
//!   approach", Journal of the Royal Statistical Society B 51(3), 305–361, 1989; and
//!   *Group Sequential Methods with Applications to Clinical Trials*, Chapman & Hall/CRC,
//!   2000, ch. 9 (repeated confidence intervals) and §11 (unknown variance).
//! - C. Jennison and B. W. Turnbull, "Exact calculations for sequential t, χ² and F tests",
//!   Biometrika 78(1), 133–141, 1991.

use crate::t_quantile;

/// Sequences simulated to calibrate a design: the estimate of its error has a standard error of
/// √(α(1 − α)/S), 0.00049 at α = 5 %.
pub const CALIBRATION_SEQUENCES: usize = 200_000;

/// The seed of the calibration's generator (fixed: a design is the same wherever it is made).
const CALIBRATION_SEED: u64 = 0x5157_A11F_1CA7_E000;

pub use storlab_model::qualify::{Decision, Design, Direction};

/// Decides a criterion from an interval: pass when the whole interval meets the threshold,
/// fail when none of it does.
pub fn decide(interval: (f64, f64), threshold: f64, direction: Direction) -> Decision {
    let (lo, hi) = interval;
    match direction {
        Direction::AtLeast if lo >= threshold => Decision::Pass,
        Direction::AtLeast if hi < threshold => Decision::Fail,
        Direction::AtMost if hi <= threshold => Decision::Pass,
        Direction::AtMost if lo > threshold => Decision::Fail,
        _ => Decision::Undecided,
    }
}

/// splitmix64: the calibration's generator (a few lines, and the same numbers on every
/// platform and in every version, which a verdict that must be recomputed later needs).
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Two independent standard normals (Box–Muller).
    fn normals(&mut self) -> (f64, f64) {
        let (u, v) = (self.uniform(), self.uniform());
        let r = (-2.0 * u.ln()).sqrt();
        let a = std::f64::consts::TAU * v;
        (r * a.cos(), r * a.sin())
    }
}

/// Standard normal draws from a seeded generator, for simulations (the stats crate's own, so
/// that a simulation is the same wherever it runs).
pub struct Normals {
    gen: SplitMix,
    spare: Option<f64>,
}

impl Normals {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Normals {
        Normals {
            gen: SplitMix(seed),
            spare: None,
        }
    }

    /// The next standard normal.
    pub fn draw(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let (a, b) = self.gen.normals();
        self.spare = Some(b);
        a
    }

    /// Uniform in (0, 1].
    pub fn uniform(&mut self) -> f64 {
        self.gen.uniform()
    }
}

/// The design with looks at `first_look..=max_repeats` whose intervals cover the mean at
/// every look together with probability at least `confidence` (calibrated as the module
/// says). `first_look` is raised to 3 and `max_repeats` to `first_look`.
pub fn calibrate(confidence: f64, first_look: u32, max_repeats: u32) -> Design {
    let (first_look, max_repeats) = (first_look as usize, max_repeats as usize);
    let first_look = first_look.max(3);
    let max_repeats = max_repeats.max(first_look);
    let alpha = 1.0 - confidence;
    let looks = max_repeats - first_look + 1;
    // |T_n| of every look of every simulated sequence, sequence by sequence.
    let mut t_abs = Vec::with_capacity(CALIBRATION_SEQUENCES * looks);
    let mut gen = Normals::new(CALIBRATION_SEED ^ (max_repeats as u64) << 8 ^ first_look as u64);
    for _ in 0..CALIBRATION_SEQUENCES {
        let (mut sum, mut sq) = (0.0f64, 0.0f64);
        for n in 1..=max_repeats {
            let z = gen.draw();
            sum += z;
            sq += z * z;
            if n >= first_look {
                let nf = n as f64;
                let mean = sum / nf;
                let var = ((sq - nf * mean * mean) / (nf - 1.0)).max(0.0);
                t_abs.push((mean / (var / nf).sqrt()).abs());
            }
        }
    }
    // The error the calibration aims at: the level less 2.5 standard errors of the
    // simulation's estimate, so that the true error is at most the level.
    let target = alpha - 2.5 * (alpha * (1.0 - alpha) / CALIBRATION_SEQUENCES as f64).sqrt();
    let error_at = |nominal: f64| -> f64 {
        let c: Vec<f64> = (first_look..=max_repeats)
            .map(|n| t_quantile(1.0 - nominal / 2.0, (n - 1) as f64))
            .collect();
        let crossed = t_abs
            .chunks_exact(looks)
            .filter(|seq| seq.iter().zip(&c).any(|(t, c)| t > c))
            .count();
        crossed as f64 / CALIBRATION_SEQUENCES as f64
    };
    // The error grows with the nominal level: bisection between α/looks (Bonferroni, too
    // small) and α (one look's level, too large).
    let (mut lo, mut hi) = (target / looks as f64, target);
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if error_at(mid) > target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Design {
        confidence,
        first_look: first_look as u32,
        max_repeats: max_repeats as u32,
        nominal_alpha: lo,
    }
}

/// The multiplier of s/√n at look `n` of `design` (None before the first look).
pub fn multiplier(design: &Design, n: usize) -> Option<f64> {
    (n >= design.first_look as usize).then(|| t_quantile(1.0 - design.nominal_alpha / 2.0, (n - 1) as f64))
}

/// The repeated confidence interval of `design` of the mean of `values` (n repetitions), or
/// None before the first look and after the last (a look the design did not plan for has
/// no error bound).
pub fn interval(design: &Design, values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    if n > design.max_repeats as usize {
        return None;
    }
    let c = multiplier(design, n)?;
    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let half = c * (var / nf).sqrt();
    Some((mean - half, mean + half))
}

/// A fixed-sample (one look) two-sided t interval of the mean at `confidence`, for a baseline
/// measured once and for all; None for fewer than two values.
pub fn fixed_interval(values: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let half = t_quantile(1.0 - (1.0 - confidence) / 2.0, nf - 1.0) * (var / nf).sqrt();
    Some((mean - half, mean + half))
}

/// The interval of the ratio of a sequentially measured mean to a baseline's: the two intervals
/// each at half the error (Bonferroni), so that both hold together with the confidence asked
/// for; then the ratio's extremes. Both must be positive (throughput, latency).
pub fn ratio_interval(current: (f64, f64), baseline: (f64, f64)) -> Option<(f64, f64)> {
    (baseline.0 > 0.0 && current.0 >= 0.0).then(|| (current.0 / baseline.1, current.1 / baseline.0))
}

/// Where a criterion stands: its observed figure, its interval and the decision.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Assessment {
    /// The mean (the geometric mean on the logarithmic scale; a ratio against a baseline), None
    /// without values.
    pub observed: Option<f64>,
    /// The repeated confidence interval (of the ratio, against a baseline), None before the
    /// first look.
    pub interval: Option<(f64, f64)>,
    /// What the interval says of the threshold.
    pub decision: Decision,
}

/// Assesses a criterion at the look its `values` reach (one per repetition): on the
/// logarithmic scale when `log` (a latency: the geometric mean, the exponent of the logs'
/// interval), and, against a `baseline`'s values, as the ratio of the means — this design's
/// interval and the baseline's fixed-sample interval at the design's confidence each (give the
/// design half the error: Bonferroni), the ratio's interval from the smallest to the largest
/// ratio they allow (a difference of logs on the logarithmic scale). Decided against
/// `threshold` in `direction`.
pub fn assess(
    design: &Design,
    values: &[f64],
    log: bool,
    baseline: Option<&[f64]>,
    threshold: f64,
    direction: Direction,
) -> Assessment {
    let scale = |v: &[f64]| -> Vec<f64> { v.iter().map(|x| if log { x.ln() } else { *x }).collect() };
    let back = |x: f64| if log { x.exp() } else { x };
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let scaled = scale(values);
    let iv = interval(design, &scaled);
    let (observed, interval) = match baseline {
        None => (mean(&scaled).map(back), iv.map(|(a, b)| (back(a), back(b)))),
        Some(base) => {
            let base = scale(base);
            let observed = mean(&scaled)
                .zip(mean(&base))
                .map(|(m, b)| if log { (m - b).exp() } else { m / b });
            let ratio = iv.zip(fixed_interval(&base, design.confidence)).and_then(|(cur, b)| {
                if log {
                    Some(((cur.0 - b.1).exp(), (cur.1 - b.0).exp()))
                } else {
                    ratio_interval(cur, b)
                }
            });
            (observed, ratio)
        }
    };
    Assessment {
        observed,
        interval,
        decision: interval.map_or(Decision::Undecided, |iv| decide(iv, threshold, direction)),
    }
}

/// The power of a fixed-sample two-sided one-sample t test of n values at level α against a
/// mean `delta` standard deviations from the threshold, estimated from `sims` simulated samples
/// (used to compare the sequential design with a fixed number of repeats).
pub fn fixed_power(n: usize, alpha: f64, delta: f64, sims: usize, seed: u64) -> f64 {
    let c = t_quantile(1.0 - alpha / 2.0, (n - 1) as f64);
    let mut g = Normals::new(seed);
    let mut hits = 0;
    for _ in 0..sims {
        let x: Vec<f64> = (0..n).map(|_| delta + g.draw()).collect();
        let nf = n as f64;
        let mean = x.iter().sum::<f64>() / nf;
        let sd = (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (nf - 1.0)).sqrt();
        if mean - c * sd / nf.sqrt() > 0.0 {
            hits += 1;
        }
    }
    hits as f64 / sims as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_design_is_pococks_and_reproducible() {
        let d = calibrate(0.95, 3, 10);
        // Between Bonferroni over the 8 looks (0.05 / 8) and one look's level (0.05).
        assert!(d.nominal_alpha > 0.05 / 8.0 && d.nominal_alpha < 0.05, "{d:?}");
        assert_eq!(calibrate(0.95, 3, 10), d, "the same design every time");
        // The multipliers fall as the repetitions grow, and are wider than one look's.
        let c: Vec<f64> = (3..=10).map(|n| multiplier(&d, n).unwrap()).collect();
        assert!(c.windows(2).all(|w| w[0] > w[1]), "{c:?}");
        assert!(c[7] > t_quantile(0.975, 9.0));
        assert_eq!(multiplier(&d, 2), None);
        assert_eq!(interval(&d, &[1.0, 2.0]), None);
        assert_eq!(interval(&d, &[1.0; 11]), None, "no look after the last");
    }

    #[test]
    fn decisions_need_the_whole_interval_on_one_side() {
        use Decision::*;
        use Direction::*;
        assert_eq!(decide((10.0, 12.0), 9.0, AtLeast), Pass);
        assert_eq!(decide((10.0, 12.0), 13.0, AtLeast), Fail);
        assert_eq!(decide((10.0, 12.0), 11.0, AtLeast), Undecided);
        assert_eq!(decide((10.0, 12.0), 13.0, AtMost), Pass);
        assert_eq!(decide((10.0, 12.0), 9.0, AtMost), Fail);
        assert_eq!(decide((10.0, 12.0), 11.0, AtMost), Undecided);
    }
}
