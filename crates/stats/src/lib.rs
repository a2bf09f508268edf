//! Statistics for storlab results: summaries of repeated measurements with sample standard
//! deviations and Student-t confidence intervals.
//!
//! Sources: the sample (n − 1) standard deviation and the t-based confidence interval of a mean
//! follow NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.5.2 ("Confidence Limits for the
//! Mean"); t quantiles come from the `statrs` crate's Student's t distribution.
#![deny(missing_docs)]

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

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

#[cfg(test)]
mod tests {
    use super::*;

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
