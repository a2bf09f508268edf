//! Skewed random offsets as fio draws them (its lib/zipf.c and lib/gauss.c): a rank from a
//! Zipf, Pareto or normal law over the region's blocks, scattered over the region by a hash and
//! a random shift, so that the hot blocks lie anywhere rather than bunched at its start. Written
//! here rather than taken from a crate because the shape must be fio's own (its inverse-CDF
//! approximation of Zipf after Gray et al., "Quickly Generating Billion-Record Synthetic
//! Databases", SIGMOD 1994; its Pareto power; its normal as the mean of twelve uniforms), so
//! that a job's hot set is the size fio's is; `fio-genzipf` is the oracle the tests hold it to.

use rand::{rngs::SmallRng, Rng};

use storlab_model::settings::Distribution;

/// fio computes zeta(n) over at most this many terms (lib/zipf.c); a larger region's tail adds
/// too little to matter and would cost seconds at every start.
const ZETA_TERMS: u64 = 10_000_000;

/// A skewed draw of block numbers in `0..blocks`.
#[derive(Debug, Clone)]
pub(crate) struct Skew {
    law: Law,
    blocks: u64,
    /// The random shift added to every hashed rank (fio's rand_off).
    shift: u64,
}

#[derive(Debug, Clone)]
enum Law {
    /// theta, with the constants of its inverse: zeta(n), zeta(2), alpha and eta.
    Zipf {
        theta: f64,
        zetan: f64,
        alpha: f64,
        eta: f64,
    },
    /// The power a uniform draw is raised to: ln(h) / ln(1 − h).
    Pareto { power: f64 },
    /// The spread added to the mean of twelve uniforms, in blocks.
    Normal { spread: u64 },
}

impl Skew {
    /// The skew of `d` over `blocks` blocks; None for an unskewed distribution.
    pub(crate) fn new(d: &Distribution, blocks: u64, rng: &mut SmallRng) -> Option<Skew> {
        let blocks = blocks.max(1);
        let law = match *d {
            Distribution::Zipf(theta) => zipf(theta, blocks),
            Distribution::Pareto(h) => Law::Pareto {
                power: h.ln() / (1.0 - h).ln(),
            },
            Distribution::Normal(dev) => Law::Normal {
                spread: ((blocks as f64 * dev / 100.0) as u64).min(blocks / 2),
            },
            Distribution::Uniform | Distribution::Zoned(_) | Distribution::ZonedAbs(_) => return None,
        };
        Some(Skew {
            law,
            blocks,
            shift: rng.gen(),
        })
    }

    /// The next block number.
    #[inline]
    pub(crate) fn next(&self, rng: &mut SmallRng) -> u64 {
        let n = self.blocks;
        let rank = match self.law {
            Law::Zipf {
                theta,
                zetan,
                alpha,
                eta,
            } => {
                let u: f64 = rng.gen();
                let z = u * zetan;
                if z < 1.0 {
                    0
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    1
                } else {
                    (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                }
            }
            Law::Pareto { power } => ((n - 1) as f64 * rng.gen::<f64>().powf(power)) as u64,
            Law::Normal { spread } => {
                let sum: u64 = (0..12).map(|_| rng.gen_range(0..=n)).sum();
                let mean = sum.div_ceil(12);
                let mut dev = if spread == 0 {
                    0
                } else {
                    rng.gen_range(0..spread) as i64 - (spread / 2) as i64
                };
                while dev != 0 && (mean as i64 + dev) as u64 >= n {
                    dev /= 2;
                }
                mean.saturating_add_signed(dev)
            }
        };
        scatter(rank).wrapping_add(self.shift) % n
    }
}

/// Zipf's constants over `n` blocks.
fn zipf(theta: f64, n: u64) -> Law {
    let zetan: f64 = (1..=n.min(ZETA_TERMS)).map(|i| (1.0 / i as f64).powf(theta)).sum();
    let zeta2 = 1.0 + 0.5f64.powf(theta);
    Law::Zipf {
        theta,
        zetan,
        alpha: 1.0 / (1.0 - theta),
        eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
    }
}

/// A rank spread over the 64-bit range (a multiplicative hash by the golden ratio, as fio's
/// hash_64): neighbouring ranks land far apart.
#[inline]
fn scatter(rank: u64) -> u64 {
    rank.wrapping_mul(0x61C8_8646_80B5_83EB)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The share of the draws that fall on the most-drawn tenth of the blocks drawn at all, as
    /// fio-genzipf's "Top 10.00%" row counts it, for `blocks` draws over `blocks` blocks.
    fn top_tenth(skew: &Skew, blocks: u64, rng: &mut SmallRng) -> f64 {
        let mut hits = std::collections::HashMap::new();
        for _ in 0..blocks {
            *hits.entry(skew.next(rng)).or_insert(0u64) += 1;
        }
        let mut counts: Vec<u64> = hits.into_values().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let step = (counts.len() as u64 - 1) / 10 + 1;
        counts.iter().take(step as usize).sum::<u64>() as f64 / blocks as f64 * 100.0
    }

    /// fio-genzipf's "Top 10.00%" share for the same law over 1 GiB of 4 KiB blocks.
    fn genzipf_top_tenth(kind: &str, value: &str) -> f64 {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("fio-genzipf")
            .args(["-t", kind, "-i", value, "-g", "1", "-b", "4096", "-o", "10"])
            .current_dir(dir.path())
            .output()
            .expect("fio-genzipf (Debian's fio package; scripts/test installs it)");
        let text = String::from_utf8_lossy(&out.stdout);
        let row = text
            .lines()
            .find(|l| l.starts_with("Top"))
            .unwrap_or_else(|| panic!("no Top row in {text}"));
        row.split_whitespace()
            .nth(2)
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap()
    }

    #[test]
    fn the_hot_tenth_takes_fios_share_of_the_draws() {
        let blocks = (1u64 << 30) / 4096;
        let mut rng = SmallRng::seed_from_u64(7);
        for (d, kind, value) in [
            (Distribution::Zipf(1.2), "zipf", "1.2"),
            (Distribution::Zipf(0.8), "zipf", "0.8"),
            (Distribution::Pareto(0.2), "pareto", "0.2"),
            (Distribution::Normal(10.0), "normal", "10"),
        ] {
            let skew = Skew::new(&d, blocks, &mut rng).unwrap();
            let ours = top_tenth(&skew, blocks, &mut rng);
            let fio = genzipf_top_tenth(kind, value);
            assert!(
                (ours - fio).abs() <= 2.0,
                "{kind}:{value}: {ours:.2} % against fio's {fio:.2} %"
            );
        }
    }

    #[test]
    fn every_draw_is_a_block_of_the_region() {
        let mut rng = SmallRng::seed_from_u64(1);
        for d in [
            Distribution::Zipf(1.1),
            Distribution::Pareto(0.5),
            Distribution::Normal(50.0),
        ] {
            let skew = Skew::new(&d, 1000, &mut rng).unwrap();
            assert!((0..100_000).all(|_| skew.next(&mut rng) < 1000), "{d:?}");
        }
        assert!(Skew::new(&Distribution::Uniform, 1000, &mut rng).is_none());
    }
}
