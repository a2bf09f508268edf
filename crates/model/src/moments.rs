//! Latencies' exact figures, as fio keeps them beside its histograms (stat.h's `io_stat`): how
//! many, the smallest and largest as measured, the mean and the sum of squared deviations (S).
//! A histogram rounds each latency to its bucket; these do not, so min, max, mean and standard
//! deviation are the I/Os' own. Merging two sets is fio's `__sum_stat` (Chan et al.'s parallel
//! update of mean and S), so that a job's, a group's and many hosts' figures add up as fio's.

use serde::{Deserialize, Serialize};

/// One set of latencies (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    /// How many.
    pub n: u64,
    /// Smallest, ns.
    pub min: u64,
    /// Largest, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Sum of squared deviations from the mean, ns² (fio's S).
    pub s: f64,
}

impl Moments {
    /// From exact sums: `n` values, their sum and the sum of their squares (an engine's
    /// per-I/O accumulator hands these over). S = Σx² − (Σx)²/n, taken in integers where it
    /// fits so that a narrow spread around a large mean loses nothing to cancellation.
    pub fn from_sums(n: u64, min: u64, max: u64, sum: u128, sum_sq: u128) -> Moments {
        if n == 0 {
            return Moments::default();
        }
        let mean = sum as f64 / n as f64;
        // n·Σx² − (Σx)² = n·S, exact while it fits in 128 bits.
        let s = match (sum_sq.checked_mul(n as u128), sum.checked_mul(sum)) {
            (Some(a), Some(b)) => a.saturating_sub(b) as f64 / n as f64,
            _ => (sum_sq as f64 - sum as f64 * mean).max(0.0),
        };
        Moments { n, min, max, mean, s }
    }

    /// Adds another set (fio's `__sum_stat`).
    pub fn add(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let (a, b) = (self.n as f64, o.n as f64);
        let delta = o.mean - self.mean;
        self.s += o.s + delta * delta * a * b / (a + b);
        self.mean = (self.mean * a + o.mean * b) / (a + b);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.n += o.n;
    }

    /// The sample standard deviation (n − 1), as fio's `calc_lat`; 0 for fewer than two.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        (self.s / (self.n - 1) as f64).sqrt()
    }
}

/// A phase's, a worker's or a rank's exact latencies per direction (`[read, write]`): each
/// I/O's whole latency (fio's lat), and for an asynchronous back-end its submission (slat) and
/// completion (clat) parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyMoments {
    /// The whole latency.
    pub lat: [Moments; 2],
    /// From the I/O's start to its submission (asynchronous back-ends).
    pub slat: [Moments; 2],
    /// From its submission to its completion (asynchronous back-ends).
    pub clat: [Moments; 2],
    /// The flushes the job asked for (fio's sync latency).
    #[serde(default)]
    pub sync: Moments,
    /// Under a target rate, each I/O's latency from when it was issued (fio's lat), where
    /// `lat` is from when it was due (storlab's open-loop figure: the lateness of a schedule
    /// that fell behind counts); empty without a rate, where the two are one.
    #[serde(default)]
    pub issued: [Moments; 2],
}

impl LatencyMoments {
    /// Adds another's, kind by kind and direction by direction.
    pub fn add(&mut self, o: &LatencyMoments) {
        for (mine, theirs) in [
            (&mut self.lat, &o.lat),
            (&mut self.slat, &o.slat),
            (&mut self.clat, &o.clat),
            (&mut self.issued, &o.issued),
        ] {
            mine[0].add(&theirs[0]);
            mine[1].add(&theirs[1]);
        }
        self.sync.add(&o.sync);
    }

    /// The sum of several (None where none holds any).
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a LatencyMoments>) -> Option<LatencyMoments> {
        let mut out: Option<LatencyMoments> = None;
        for m in all {
            out.get_or_insert_with(Default::default).add(m);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(xs: &[u64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
        let s = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>();
        (mean, s)
    }

    fn of(xs: &[u64]) -> Moments {
        let sum: u128 = xs.iter().map(|&x| x as u128).sum();
        let sq: u128 = xs.iter().map(|&x| (x as u128) * (x as u128)).sum();
        Moments::from_sums(
            xs.len() as u64,
            *xs.iter().min().unwrap(),
            *xs.iter().max().unwrap(),
            sum,
            sq,
        )
    }

    #[test]
    fn sums_give_the_values_mean_and_squared_deviations() {
        let xs = [1_000_000_007u64, 1_000_000_001, 1_000_000_004, 999_999_999];
        let m = of(&xs);
        let (mean, s) = direct(&xs);
        assert_eq!((m.n, m.min, m.max), (4, 999_999_999, 1_000_000_007));
        assert!((m.mean - mean).abs() < 1e-6, "{} vs {mean}", m.mean);
        // A spread of a few ns around a second: the integers keep it.
        assert!((m.s - s).abs() < 1e-6 * s.max(1.0), "{} vs {s}", m.s);
    }

    #[test]
    fn adding_two_sets_is_the_set_of_both() {
        let (a, b) = ([5u64, 9, 13], [100u64, 2, 40, 41]);
        let mut m = of(&a);
        m.add(&of(&b));
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        let (mean, s) = direct(&all);
        assert_eq!((m.n, m.min, m.max), (7, 2, 100));
        assert!((m.mean - mean).abs() < 1e-9);
        assert!((m.s - s).abs() < 1e-6);
        let sd = (s / 6.0).sqrt();
        assert!((m.stddev() - sd).abs() < 1e-9);
        let mut none = Moments::default();
        none.add(&Moments::default());
        assert_eq!(none.n, 0);
        assert_eq!(of(&[7]).stddev(), 0.0);
    }
}
