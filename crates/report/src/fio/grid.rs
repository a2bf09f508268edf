//! fio's latency buckets (stat.c `plat_val_to_idx`, `plat_idx_to_val`, stat.h's
//! `FIO_IO_U_PLAT_*`): 1,856 of them, exact below 128 ns, then 64 to each power of two. fio's
//! json+ bins, its percentiles and its histogram logs are in these buckets, each named by the
//! middle of its range. storlab keeps HdrHistograms of 0.1 % resolution (1,024 sub-buckets to
//! each power of two, each aligned to its width), so every storlab bucket lies inside one of
//! fio's: moving its count there is exact, and the bins and percentiles here are fio's own.

use hdrhistogram::Histogram;

/// Bits of a value kept in a bucket's index (fio's FIO_IO_U_PLAT_BITS).
const PLAT_BITS: u32 = 6;
/// Buckets to each power of two (FIO_IO_U_PLAT_VAL).
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Powers of two covered (FIO_IO_U_PLAT_GROUP_NR).
const PLAT_GROUP_NR: usize = 29;
/// Buckets in all (FIO_IO_U_PLAT_NR).
pub(crate) const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// The bucket of a latency of `val` ns (fio's plat_val_to_idx; the last bucket holds all
/// beyond).
pub(crate) fn val_to_idx(val: u64) -> usize {
    let msb = if val == 0 { 0 } else { 63 - val.leading_zeros() };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = ((PLAT_VAL - 1) & (val >> error_bits)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value fio names bucket `idx` by: the middle of its range (fio's plat_idx_to_val).
pub(crate) fn idx_to_val(idx: usize) -> u64 {
    if idx < (PLAT_VAL << 1) as usize {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx as u64) % PLAT_VAL;
    // fio: base + ((k + 0.5) * (1 << error_bits)), in doubles, truncated.
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// A latency histogram in fio's buckets.
pub(crate) struct FioBins {
    counts: Vec<u64>,
    total: u64,
}

impl FioBins {
    /// `h`'s counts moved into fio's buckets (each of `h`'s buckets lies in one of fio's).
    pub(crate) fn of(h: &Histogram<u64>) -> FioBins {
        let mut counts = vec![0u64; PLAT_NR];
        for v in h.iter_recorded() {
            counts[val_to_idx(h.lowest_equivalent(v.value_iterated_to()))] += v.count_at_value();
        }
        FioBins {
            total: counts.iter().sum(),
            counts,
        }
    }

    /// fio's buckets as a server sent them, `total` the I/Os they count (fio's percentiles are
    /// shares of the latency's sample count).
    pub(crate) fn of_counts(counts: Vec<u64>, total: u64) -> FioBins {
        FioBins { counts, total }
    }

    /// The buckets that hold any I/O, `(fio's value, count)`, in increasing value (fio's json+
    /// `bins`).
    pub(crate) fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (idx_to_val(i), *n))
    }

    /// Percentile `q` (0–100) as fio's calc_clat_percentiles takes it: the value of the first
    /// bucket whose running count reaches q % of all, the share reckoned as fio reckons it.
    pub(crate) fn percentile(&self, q: f64) -> u64 {
        let want = Share::of(q, self.total);
        let mut sum = 0u64;
        for (i, n) in self.counts.iter().enumerate() {
            sum += n;
            if want.reached_by(sum) {
                return idx_to_val(i);
            }
        }
        0
    }
}

/// fio's `(long double) q / 100.0 * nr`, as the x86 long double (a 64-bit mantissa, rounded to
/// nearest, ties to even, at the division and again at the product) holds it:
/// `mantissa · 2^exp`. Taken in integers because the rounding decides ties: 30 % of 50 I/Os is
/// 15 exactly, but fio's 0.3 rounds up and its threshold is 15.000000000000000000867, which 15
/// I/Os do not reach.
struct Share {
    mantissa: u128,
    exp: i32,
}

impl Share {
    fn of(q: f64, nr: u64) -> Share {
        if q <= 0.0 || nr == 0 || !q.is_finite() {
            return Share { mantissa: 0, exp: 0 };
        }
        // q = m · 2^e exactly (m < 2^53).
        let bits = q.to_bits();
        let (raw_exp, frac) = (((bits >> 52) & 0x7ff) as i32, bits & ((1 << 52) - 1));
        let (m, e) = if raw_exp == 0 {
            (frac, -1074)
        } else {
            (frac | (1 << 52), raw_exp - 1075)
        };
        // q / 100 with a 64-bit mantissa: shift m up until the quotient has 64 bits.
        let mut shift = 0;
        while ((m as u128) << (shift + 1)) / 100 < (1u128 << 64) {
            shift += 1;
        }
        let (a, ea) = round_to_64((m as u128) << shift, 100, e - shift);
        // Times nr, rounded again.
        let (t, et) = round_to_64(a * nr as u128, 1, ea);
        Share { mantissa: t, exp: et }
    }

    /// Whether a running count of `sum` reaches the share.
    fn reached_by(&self, sum: u64) -> bool {
        if self.exp >= 0 {
            sum as u128 >= self.mantissa << self.exp
        } else {
            (sum as u128) << (-self.exp) >= self.mantissa
        }
    }
}

/// `num / den · 2^exp` rounded to a 64-bit mantissa (ties to even): `(mantissa, exp)`.
fn round_to_64(num: u128, den: u128, exp: i32) -> (u128, i32) {
    let (mut q, mut rem, mut den, mut exp) = (num / den, num % den, den, exp);
    // Too many bits: fold the low ones into the remainder.
    while q >> 64 != 0 {
        rem += (q & 1) * den;
        den *= 2;
        q >>= 1;
        exp += 1;
    }
    if 2 * rem > den || (2 * rem == den && q & 1 == 1) {
        q += 1;
        if q >> 64 != 0 {
            q >>= 1;
            exp += 1;
        }
    }
    (q, exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fios() {
        // Exact below 128; then 2 ns wide, named by their middle.
        assert_eq!((val_to_idx(0), val_to_idx(127)), (0, 127));
        assert_eq!((val_to_idx(128), val_to_idx(129), val_to_idx(130)), (128, 128, 129));
        assert_eq!((idx_to_val(127), idx_to_val(128), idx_to_val(129)), (127, 129, 131));
        // 210,431 ns (the p50, not one of fio's values) lies in the bucket fio names
        // 209,920: 2^17 + (38 + 0.5) · 2^11.
        assert_eq!(idx_to_val(val_to_idx(210_431)), 209_920);
        assert_eq!(val_to_idx(u64::MAX), PLAT_NR - 1);
        assert_eq!((val_to_idx(255), val_to_idx(256)), (191, 192));
        // 2^19 <= 1,000,000: 13 bits dropped, 1,000,000 >> 13 = 122, its low 6 bits 58,
        // after the 14 groups of 64 before.
        assert_eq!(val_to_idx(1_000_000), 896 + 58);
        assert_eq!(PLAT_NR, 1856);
        // Every bucket's value lies in it.
        for i in 0..PLAT_NR - 1 {
            assert_eq!(val_to_idx(idx_to_val(i)), i, "bucket {i}");
        }
    }

    #[test]
    fn every_storlab_bucket_lies_in_one_of_fios() {
        let h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        let mut v = 1u64;
        while v < 3_600_000_000_000 {
            let (lo, hi) = (h.lowest_equivalent(v), h.highest_equivalent(v));
            assert_eq!(val_to_idx(lo), val_to_idx(hi), "{v}: {lo}..{hi}");
            v += 1 + v / 997;
        }
    }

    #[test]
    fn shares_are_fios_long_doubles() {
        // Vectors from a C program of fio's expression on x86-64 (ceill of the long double).
        for (q, nr, needed) in [
            (30.0, 50, 16),
            (30.0, 90, 28),
            (60.0, 25, 16),
            (60.0, 45, 28),
            (50.0, 1000, 500),
            (99.9, 1000, 1000),
            (99.0, 100, 99),
            (1.0, 1, 1),
            (99.99, 10000, 9999),
            (95.0, 20, 19),
        ] {
            let s = Share::of(q, nr);
            assert!(s.reached_by(needed), "{q} % of {nr}: {needed} reaches");
            assert!(!s.reached_by(needed - 1), "{q} % of {nr}: {} does not", needed - 1);
        }
    }

    #[test]
    fn percentiles_are_the_first_bucket_reaching_the_share() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in [100u64, 100, 5000, 5000, 5000, 1_000_000] {
            h.record(v).unwrap();
        }
        let b = FioBins::of(&h);
        assert_eq!(b.percentile(1.0), 100);
        assert_eq!(b.percentile(33.0), 100);
        assert_eq!(b.percentile(34.0), idx_to_val(val_to_idx(5000)));
        assert_eq!(b.percentile(99.0), idx_to_val(val_to_idx(1_000_000)));
        assert_eq!(b.bins().map(|b| b.1).sum::<u64>(), 6);
    }
}
