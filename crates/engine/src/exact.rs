//! The latencies' exact figures as each I/O completes (model moments.rs): a count, the smallest,
//! the largest and integer sums of the values and of their squares, per kind (lat, slat, clat)
//! and direction. Integers, not fio's per-I/O mean update: adding is exact and costs no
//! division on the hot path, and workers add up by plain addition before the moments are
//! taken once.

use storlab_model::moments::{LatencyMoments, Moments};

/// One set's running sums.
#[derive(Clone, Copy)]
struct Sums {
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
}

impl Default for Sums {
    fn default() -> Sums {
        Sums {
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        }
    }
}

impl Sums {
    #[inline]
    fn record(&mut self, v: u64) {
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as u128;
        self.sum_sq += (v as u128) * (v as u128);
    }

    fn add(&mut self, o: &Sums) {
        self.n += o.n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sum += o.sum;
        self.sum_sq += o.sum_sq;
    }

    fn moments(&self) -> Moments {
        Moments::from_sums(self.n, self.min, self.max, self.sum, self.sum_sq)
    }
}

/// A worker's (or the phase's) exact latencies: `[lat, slat, clat, issued]`, each `[read,
/// write]`, and the flushes'.
#[derive(Clone, Copy, Default)]
pub(crate) struct Exact([[Sums; 2]; 4], Sums);

impl Exact {
    /// One I/O of direction `d`: its whole latency, and its parts where it was split at its
    /// submission (stat.rs's `split_at_submission`).
    #[inline]
    pub(crate) fn record(&mut self, d: usize, lat: u64, split: Option<(u64, u64)>) {
        self.0[0][d].record(lat);
        if let Some((slat, clat)) = split {
            self.0[1][d].record(slat);
            self.0[2][d].record(clat);
        }
    }

    /// Under a rate, one I/O's latency from its issue (see `LatencyMoments::issued`).
    #[inline]
    pub(crate) fn record_issued(&mut self, d: usize, lat: u64) {
        self.0[3][d].record(lat);
    }

    /// One flush (fio's sync latency).
    pub(crate) fn record_flush(&mut self, took: u64) {
        self.1.record(took);
    }

    /// Adds another worker's.
    pub(crate) fn add(&mut self, o: &Exact) {
        for (mine, theirs) in self.0.iter_mut().flatten().zip(o.0.iter().flatten()) {
            mine.add(theirs);
        }
        self.1.add(&o.1);
    }

    /// The moments of each set.
    pub(crate) fn moments(&self) -> LatencyMoments {
        let pair = |k: usize| [self.0[k][0].moments(), self.0[k][1].moments()];
        LatencyMoments {
            lat: pair(0),
            slat: pair(1),
            clat: pair(2),
            sync: self.1.moments(),
            issued: pair(3),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_and_direction_keeps_its_own_values() {
        let mut e = Exact::default();
        e.record(0, 100, None);
        e.record(0, 300, Some((20, 280)));
        e.record(1, 7, Some((2, 5)));
        let mut other = Exact::default();
        other.record(0, 50, None);
        e.add(&other);
        let m = e.moments();
        assert_eq!((m.lat[0].n, m.lat[0].min, m.lat[0].max), (3, 50, 300));
        assert_eq!(m.lat[0].mean, 150.0);
        assert_eq!((m.slat[0].n, m.slat[0].min), (1, 20));
        assert_eq!((m.clat[1].n, m.clat[1].max), (1, 5));
        assert_eq!(m.lat[1].mean, 7.0);
        // Nothing recorded: no figures, not a u64::MAX minimum.
        assert_eq!(Exact::default().moments().lat[0], Moments::default());
    }
}
