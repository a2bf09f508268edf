//! Why a qualification's criterion stayed UNDECIDED, read from what was stored: too few
//! repetitions for a look, a baseline too small for an interval, or an interval that holds the
//! threshold — by how much, the spread of the figures, and about how many repetitions the
//! design would need at that spread for the interval to clear the threshold.

use storlab_model::qualify::{Criterion, Decision, Reference};
use storlab_stats::t_quantile;

use crate::qualify::with_unit;

/// The repetitions past which an estimate is not given (the spread would have to be read
/// again, not extrapolated).
const AT_MOST: usize = 1000;

/// Why `c` is undecided, in words; None when it was decided.
pub fn why(c: &Criterion) -> Option<String> {
    if c.decision != Decision::Undecided {
        return None;
    }
    let n = c.values.len();
    let first = c.design.first_look as usize;
    if let Reference::Baseline { runs, .. } = &c.reference {
        if runs.len() < 2 {
            return Some(format!(
                "the baseline has {} run(s): its interval needs 2 or more — store more runs of it",
                runs.len()
            ));
        }
    }
    if n < first {
        return Some(format!(
            "{n} repetition(s) gave the figure; the first look is after {first}"
        ));
    }
    let Some((lo, hi)) = c.interval else {
        return Some(format!(
            "no interval at {n} repetitions: the design looks from {first} to {}",
            c.design.max_repeats
        ));
    };
    let observed = c.observed?;
    Some(straddles(c, n, observed, (lo, hi)))
}

/// An interval holding the threshold: by how much, the spread, and the repetitions likely to
/// decide it.
fn straddles(c: &Criterion, n: usize, observed: f64, (lo, hi): (f64, f64)) -> String {
    let log = c.log_scale || matches!(c.reference, Reference::Baseline { .. });
    let g = |v: f64| if log { v.ln() } else { v };
    let half = (g(hi) - g(lo)) / 2.0;
    let gap = (g(observed) - g(c.threshold)).abs();
    let mean = c.values.iter().sum::<f64>() / n as f64;
    let sd = (c.values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0)).sqrt();
    let spread = if mean != 0.0 {
        format!("the repetitions spread {:.1} % (sd/mean)", 100.0 * sd / mean.abs())
    } else {
        format!("the repetitions' sd is {}", with_unit(sd, &c.unit))
    };
    let held = format!(
        "its interval {} – {} holds the threshold {}, the observed {} lying {:.0} % of the interval's half width from it; {spread}",
        with_unit(lo, &c.unit),
        with_unit(hi, &c.unit),
        with_unit(c.threshold, &c.unit),
        with_unit(observed, &c.unit),
        if half > 0.0 { 100.0 * gap / half } else { 0.0 },
    );
    let baseline = if matches!(c.reference, Reference::Baseline { .. }) {
        " (at least: the baseline's own spread does not shrink with them)"
    } else {
        ""
    };
    match repeats_to_clear(c, n, half, gap) {
        Some(m) => format!("{held}; about {m} repetitions would likely decide it at this spread{baseline}"),
        None if gap == 0.0 => {
            format!("{held}; the figure sits on the threshold: no number of repetitions is likely to decide it")
        }
        None => format!("{held}; more than {AT_MOST} repetitions would be needed at this spread"),
    }
}

/// The smallest number of repetitions whose interval, at the spread seen (the half width scaled
/// by the multipliers and √n), is narrower than the gap between the figure and the threshold.
fn repeats_to_clear(c: &Criterion, n: usize, half: f64, gap: f64) -> Option<usize> {
    if gap <= 0.0 || half <= 0.0 {
        return None;
    }
    let mult = |k: usize| t_quantile(1.0 - c.design.nominal_alpha / 2.0, (k - 1) as f64);
    let now = mult(n);
    (n + 1..=AT_MOST).find(|m| half * (mult(*m) / now) * (n as f64 / *m as f64).sqrt() < gap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_stats::sequential::{calibrate, interval};

    fn criterion(values: &[f64], threshold: f64) -> Criterion {
        let design = calibrate(0.95, 3, 6);
        let iv = interval(&design, values);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        serde_json::from_value(serde_json::json!({
            "index": 1, "job": "rr", "text": "IOPS >= 1000", "line": 3, "phase": "1 randread",
            "figure": "IOPS", "unit": "IOPS", "direction": "at_least", "threshold": threshold,
            "reference": { "against": "absolute" }, "design": design, "values": values,
            "runs": values.iter().map(|_| vec![1]).collect::<Vec<_>>(), "observed": mean,
            "interval": iv, "decision": "UNDECIDED", "decided_at": null,
        }))
        .unwrap()
    }

    #[test]
    fn an_interval_holding_the_threshold_says_by_how_much_and_the_repeats_it_would_take() {
        let c = criterion(&[1000.0, 1040.0, 980.0, 1020.0, 1010.0, 990.0], 990.0);
        let w = why(&c).unwrap();
        assert!(w.contains("holds the threshold 990.0 IOPS"), "{w}");
        assert!(w.contains("spread 2.1 %"), "{w}");
        // The estimate: the first m whose interval at this spread clears the gap (checked by
        // the interval itself at m values of the same mean and spread).
        let m: usize = w
            .split("about ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let (lo, _) = c.interval.unwrap();
        let half = c.observed.unwrap() - lo;
        let gap = c.observed.unwrap() - 990.0;
        let mult = |k: usize| t_quantile(1.0 - c.design.nominal_alpha / 2.0, (k - 1) as f64);
        let at = |k: usize| half * mult(k) / mult(6) * (6.0 / k as f64).sqrt();
        assert!(at(m) < gap && at(m - 1) >= gap, "{m}");
    }

    #[test]
    fn too_few_repetitions_and_a_figure_on_the_threshold_are_said() {
        let mut c = criterion(&[1000.0, 1040.0, 980.0], 1000.0);
        c.values.truncate(2);
        c.interval = None;
        assert!(why(&c)
            .unwrap()
            .contains("2 repetition(s) gave the figure; the first look is after 3"));
        let c = criterion(&[1000.0, 1040.0, 980.0], 1000.0 + 40.0 / 3.0 - 20.0 / 3.0);
        let w = why(&c).unwrap();
        assert!(w.contains("holds the threshold"), "{w}");
    }
}
