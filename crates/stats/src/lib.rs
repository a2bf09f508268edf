//! Statistics for storlab results: summaries of repeated measurements with sample standard
//! deviations and Student-t confidence intervals, and Welch's comparison of two groups — what
//! `results compare`, sweeps, impact studies and `qualify` print their figures with.
//!
//! Sources: the sample (n − 1) standard deviation and the t-based confidence interval of a mean
//! follow NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.5.2 ("Confidence Limits for the
//! Mean"); the two-sample comparison is Welch's t-test with the Welch–Satterthwaite degrees of
//! freedom (B. L. Welch, "The generalization of 'Student's' problem when several different
//! population variances are involved", Biometrika 34, 1947; NIST e-Handbook §1.3.5.3); t
//! quantiles and probabilities come from the `statrs` crate's Student's t distribution.
//!
//! - lib.rs: [`Summary`] and Welch's comparison;
//! - intervals.rs: measurements placed on fixed intervals by what they measured;
//! - bound.rs: what bounded a phase (the USE method over its evidence: device, CPU, cache, rate,
//!   queue depth, network);
//! - impact.rs: a background task's cost to the users and theirs to it, held and paired;
//! - sequential.rs: how many repeats are enough (repeated confidence intervals, for `qualify`).
#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

pub mod bound;
pub mod flags;
pub mod impact;
pub mod intervals;
pub mod paired;
pub mod sequential;

/// A row of seed 002's statistics table (the data challenge's and the monitor's): the MAX, MIN,
/// AVG and sample SD of `series` (the long-term averages), zeros when it is empty.
pub fn stat_row(
    name: String,
    pool: Option<String>,
    direction: &str,
    series: &[f64],
) -> storlab_model::challenge::StatRow {
    let s = Summary::of(series);
    storlab_model::challenge::StatRow {
        name,
        pool,
        direction: direction.to_string(),
        max: s.as_ref().map_or(0.0, |s| s.max),
        min: s.as_ref().map_or(0.0, |s| s.min),
        avg: s.as_ref().map_or(0.0, |s| s.mean),
        sd: s.as_ref().and_then(|s| s.sd).unwrap_or(0.0),
    }
}

/// A summary of a set of measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); None for fewer than two values.
    pub sd: Option<f64>,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Half-width of the 95 % confidence interval of the mean; None for fewer than two values.
    pub ci95: Option<f64>,
}

impl Summary {
    /// Summarises `values`; None when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (sd, ci95) = if n >= 2 {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let sd = var.sqrt();
            (
                Some(sd),
                Some(t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt()),
            )
        } else {
            (None, None)
        };
        Some(Summary {
            n,
            mean,
            sd,
            min,
            max,
            ci95,
        })
    }

    /// The coefficient of variation (sd / mean) in percent, when defined.
    pub fn cv_percent(&self) -> Option<f64> {
        self.sd
            .filter(|_| self.mean != 0.0)
            .map(|sd| 100.0 * sd / self.mean.abs())
    }
}

/// The `p` quantile of Student's t distribution with `df` degrees of freedom.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::NAN)
}

/// What a comparison of two groups concludes about B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// B's mean is higher, and the 95 % interval of the difference excludes zero.
    Higher,
    /// B's mean is lower, and the 95 % interval of the difference excludes zero.
    Lower,
    /// The 95 % interval of the difference includes zero: no significant difference.
    NotSignificant,
    /// A group has fewer than two values: there is no spread to test against.
    TooFew,
}

impl Verdict {
    /// The plain words for it.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Higher => "higher",
            Verdict::Lower => "lower",
            Verdict::NotSignificant => "no significant difference",
            Verdict::TooFew => "too few runs to tell (a group of one has no spread)",
        }
    }
}

/// Welch's comparison of group B against group A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Group A (the baseline).
    pub a: Summary,
    /// Group B.
    pub b: Summary,
    /// mean(B) − mean(A).
    pub diff: f64,
    /// The difference as a percentage of mean(A) (None when mean(A) is 0).
    pub diff_percent: Option<f64>,
    /// The 95 % confidence interval of the difference (None for a group of one, and on the
    /// logarithmic scale, where the difference is of logarithms).
    pub ci95: Option<(f64, f64)>,
    /// The interval of the ratio B ÷ A as percentages of A: `100 × (ratio − 1)` at each bound
    /// of [`Comparison::ratio_ci95`]. Never below −100 %: it is an interval of a ratio of two
    /// positive figures, both groups' spread counted.
    pub ci95_percent: Option<(f64, f64)>,
    /// B ÷ A: of the arithmetic means, or of the geometric means on the logarithmic scale.
    #[serde(default)]
    pub ratio: Option<f64>,
    /// Its 95 % interval: Fieller's (the ratio of two independent means, each with its own
    /// spread, Welch's degrees of freedom), or on the logarithmic scale the exponent of Welch's
    /// interval of the difference of the logarithms. None when A's mean is not distinguishable
    /// from zero (Fieller's interval is then unbounded).
    #[serde(default)]
    pub ratio_ci95: Option<(f64, f64)>,
    /// Whether the figures were compared on the logarithmic scale (latencies: the geometric
    /// means' ratio), else as they are.
    #[serde(default)]
    pub log_scale: bool,
    /// Welch's t statistic (infinite when both groups have zero spread and the means differ).
    pub t: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: Option<f64>,
    /// Two-sided p-value.
    pub p: Option<f64>,
    /// The conclusion.
    pub verdict: Verdict,
}

/// Compares B against A with Welch's t-test (unequal variances). None when a group is empty.
pub fn compare(a: &[f64], b: &[f64]) -> Option<Comparison> {
    let (sa, sb) = (Summary::of(a)?, Summary::of(b)?);
    Some(compare_summaries(sa, sb))
}

/// Welch's comparison from two groups' summaries (n, mean, sample sd).
pub fn compare_summaries(a: Summary, b: Summary) -> Comparison {
    let diff = b.mean - a.mean;
    let base = a.mean;
    let pct = move |x: f64| (base != 0.0).then(|| 100.0 * x / base.abs());
    let mut c = Comparison {
        diff,
        diff_percent: pct(diff),
        ci95: None,
        ci95_percent: None,
        ratio: (a.mean > 0.0).then(|| b.mean / a.mean),
        ratio_ci95: None,
        log_scale: false,
        t: None,
        df: None,
        p: None,
        verdict: Verdict::TooFew,
        a,
        b,
    };
    let (Some(sa), Some(sb)) = (c.a.sd, c.b.sd) else {
        return c;
    };
    let (va, vb) = (sa * sa / c.a.n as f64, sb * sb / c.b.n as f64);
    let se = (va + vb).sqrt();
    if se == 0.0 {
        // Both groups without any spread: identical means are the same, different means
        // differ with certainty (t is infinite; the interval is the point).
        c.ci95 = Some((diff, diff));
        c.ratio_ci95 = c.ratio.map(|r| (r, r));
        c.ci95_percent = c.ratio_ci95.map(|(lo, hi)| (100.0 * (lo - 1.0), 100.0 * (hi - 1.0)));
        c.t = Some(if diff == 0.0 {
            0.0
        } else {
            diff.signum() * f64::INFINITY
        });
        c.p = Some(if diff == 0.0 { 1.0 } else { 0.0 });
        c.verdict = verdict(diff, diff, diff);
        return c;
    }
    let df = (va + vb).powi(2) / (va * va / (c.a.n - 1) as f64 + vb * vb / (c.b.n - 1) as f64);
    let half = t_quantile(0.975, df) * se;
    let t = diff / se;
    let p = StudentsT::new(0.0, 1.0, df)
        .map(|d| 2.0 * (1.0 - d.cdf(t.abs())))
        .unwrap_or(f64::NAN);
    c.ci95 = Some((diff - half, diff + half));
    c.ratio_ci95 = fieller(&c.a, &c.b, t_quantile(0.975, df));
    c.ci95_percent = c.ratio_ci95.map(|(lo, hi)| (100.0 * (lo - 1.0), 100.0 * (hi - 1.0)));
    c.t = Some(t);
    c.df = Some(df);
    c.p = Some(p);
    c.verdict = verdict(diff, diff - half, diff + half);
    c
}

/// Fieller's interval of the ratio of two independent means μB ÷ μA at the quantile `t`:
/// the ρ for which (x̄B − ρ·x̄A)² ≤ t²·(s²B/nB + ρ²·s²A/nA) (E. C. Fieller, "Some problems in
/// interval estimation", JRSS B 16(2), 1954; with Welch's degrees of freedom for unequal
/// variances). Bounded when A's mean is clearly not zero; for figures that cannot be negative,
/// a lower bound below zero is zero (the ratio of two non-negative means).
pub fn fieller(a: &Summary, b: &Summary, t: f64) -> Option<(f64, f64)> {
    let (sa, sb) = (a.sd?, b.sd?);
    let (va, vb) = (sa * sa / a.n as f64, sb * sb / b.n as f64);
    let (xa, xb, t2) = (a.mean, b.mean, t * t);
    let qa = xa * xa - t2 * va;
    if qa <= 0.0 || xa <= 0.0 {
        return None;
    }
    let disc = (xa * xb).powi(2) - qa * (xb * xb - t2 * vb);
    if disc < 0.0 {
        return None;
    }
    let lo = (xa * xb - disc.sqrt()) / qa;
    let hi = (xa * xb + disc.sqrt()) / qa;
    Some((if xb >= 0.0 { lo.max(0.0) } else { lo }, hi))
}

/// Welch's comparison of B against A on the logarithmic scale: the ratio of the geometric
/// means with the exponent of the interval of the difference of logarithms (latencies, whose
/// spread grows with their size). `a` and `b` in the result summarise the figures as they are;
/// `diff_percent` and `ci95_percent` are of the ratio. None when a group is empty or holds a
/// figure that is not positive.
pub fn compare_log(a: &[f64], b: &[f64]) -> Option<Comparison> {
    if a.iter().chain(b).any(|v| *v <= 0.0) {
        return None;
    }
    let ln = |v: &[f64]| v.iter().map(|x| x.ln()).collect::<Vec<_>>();
    let on_logs = compare(&ln(a), &ln(b))?;
    let ratio = on_logs.diff.exp();
    let ratio_ci95 = on_logs.ci95.map(|(lo, hi)| (lo.exp(), hi.exp()));
    Some(Comparison {
        a: Summary::of(a)?,
        b: Summary::of(b)?,
        diff: Summary::of(b)?.mean - Summary::of(a)?.mean,
        diff_percent: Some(100.0 * (ratio - 1.0)),
        ci95: None,
        ci95_percent: ratio_ci95.map(|(lo, hi)| (100.0 * (lo - 1.0), 100.0 * (hi - 1.0))),
        ratio: Some(ratio),
        ratio_ci95,
        log_scale: true,
        ..on_logs
    })
}

fn verdict(diff: f64, lo: f64, hi: f64) -> Verdict {
    if lo > 0.0 || (lo == hi && diff > 0.0) {
        Verdict::Higher
    } else if hi < 0.0 || (lo == hi && diff < 0.0) {
        Verdict::Lower
    } else {
        Verdict::NotSignificant
    }
}

/// A summary from published figures (n, mean, sample sd), for comparisons of given summaries.
pub fn summary_from(n: usize, mean: f64, sd: f64) -> Summary {
    Summary {
        n,
        mean,
        sd: (n >= 2).then_some(sd),
        min: f64::NAN,
        max: f64::NAN,
        ci95: (n >= 2).then(|| t_quantile(0.975, (n - 1) as f64) * sd / (n as f64).sqrt()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fiellers_interval_holds_the_ratio_and_never_goes_below_minus_100_percent() {
        // B twice A, both tight: the ratio's interval is about 2.
        let c = compare(&[100.0, 101.0, 99.0], &[200.0, 203.0, 197.0]).unwrap();
        let (lo, hi) = c.ratio_ci95.unwrap();
        assert!(lo < 2.0 && 2.0 < hi && hi - lo < 0.2, "{c:?}");
        // Spread so wide a difference interval goes far past −100 %: the ratio's does not.
        let c = compare(&[10.0, 100.0, 1000.0], &[5.0, 50.0, 400.0]).unwrap();
        assert!(
            c.ci95.unwrap().0 / c.a.mean < -1.0,
            "the old interval went below −100 %"
        );
        assert!(c.ci95_percent.is_none_or(|(lo, _)| lo >= -100.0), "{c:?}");
        // On the log scale the ratio is of geometric means.
        let c = compare_log(&[1.0, 2.0, 4.0], &[2.0, 4.0, 8.0]).unwrap();
        assert!((c.ratio.unwrap() - 2.0).abs() < 1e-12);
        let (lo, hi) = c.ratio_ci95.unwrap();
        assert!(lo > 0.0 && lo < 2.0 && hi > 2.0);
    }

    #[test]
    fn welch_matches_published_examples() {
        // Gastric acid output, normal subjects against ulcer patients (a worked Welch example:
        // n 16, mean 3.75625, sd 2.01659 against n 10, mean 18.9700, sd 8.06488) gives
        // SE 2.59969, t 5.85214, df 9.708.
        let c = compare_summaries(summary_from(16, 3.75625, 2.01659), summary_from(10, 18.97, 8.06488));
        assert!((c.t.unwrap() - 5.85214).abs() < 1e-4, "{c:?}");
        assert!((c.df.unwrap() - 9.708).abs() < 1e-3, "{c:?}");
        assert_eq!(c.verdict, Verdict::Higher);
        // Two groups of 20: mean 100, sd 15 against mean 95, sd 20: t −0.895, df ≈ 35.2, not
        // significant.
        let c = compare_summaries(summary_from(20, 100.0, 15.0), summary_from(20, 95.0, 20.0));
        assert!((c.t.unwrap() + 0.8944).abs() < 1e-3, "{c:?}");
        assert!((c.df.unwrap() - 35.2).abs() < 0.05, "{c:?}");
        assert_eq!(c.verdict, Verdict::NotSignificant);
        assert!(c.p.unwrap() > 0.3 && c.p.unwrap() < 0.4, "{c:?}");
        assert!((c.diff_percent.unwrap() + 5.0).abs() < 1e-12);
        let (lo, hi) = c.ci95.unwrap();
        assert!(lo < 0.0 && hi > 0.0);
        assert!((hi - lo - 2.0 * t_quantile(0.975, c.df.unwrap()) * 31.25f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn welch_edge_cases() {
        // A group of one: no test, said plainly.
        let c = compare(&[10.0], &[12.0, 13.0]).unwrap();
        assert_eq!(c.verdict, Verdict::TooFew);
        assert!(c.ci95.is_none());
        assert!(c.verdict.words().contains("group of one"));
        // Zero spread on both sides.
        let c = compare(&[5.0, 5.0], &[6.0, 6.0, 6.0]).unwrap();
        assert_eq!(c.verdict, Verdict::Higher);
        assert_eq!(c.ci95, Some((1.0, 1.0)));
        assert_eq!(
            compare(&[5.0, 5.0], &[5.0, 5.0]).unwrap().verdict,
            Verdict::NotSignificant
        );
        // Zero spread on one side only is an ordinary test.
        let c = compare(&[5.0, 5.0, 5.0], &[5.5, 6.5, 6.0]).unwrap();
        assert_eq!(c.df.map(|d| (d - 2.0).abs() < 1e-9), Some(true));
        assert!(compare(&[], &[1.0]).is_none());
    }

    #[test]
    fn known_summary() {
        // NIST e-Handbook §1.3.5.2 uses t(0.975, 9) = 2.262 for n = 10.
        assert!((t_quantile(0.975, 9.0) - 2.262).abs() < 1e-3);
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let s = Summary::of(&v).unwrap();
        assert_eq!(s.mean, 5.0);
        // Sample variance = 32 / 7.
        assert!((s.sd.unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        let half = t_quantile(0.975, 7.0) * s.sd.unwrap() / 8f64.sqrt();
        assert!((s.ci95.unwrap() - half).abs() < 1e-12);
        assert_eq!((s.min, s.max), (2.0, 9.0));
    }

    #[test]
    fn one_value_has_no_spread() {
        let s = Summary::of(&[3.0]).unwrap();
        assert_eq!(s.sd, None);
        assert_eq!(s.ci95, None);
        assert!(Summary::of(&[]).is_none());
        let z = Summary::of(&[1.0, 1.0]).unwrap();
        assert_eq!(z.sd, Some(0.0));
        assert_eq!(z.cv_percent(), Some(0.0));
    }
}
