//! fio's random map: every block once per pass in a random order, as a Feistel permutation
//! of the block numbers (with a bitmap where block sizes are mixed).

/// splitmix64: the next of a sequence of well-mixed 64-bit values from a counter `state`.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A pseudo-random permutation of `0..n`: a balanced Feistel network over the smallest even
/// number of bits that holds `n`, walking the cycle until a value falls inside (on average
/// fewer than four rounds of the network per value).
///
/// Why our own: fio's random map (its default) visits every block of a pass once, in a random
/// order; a permutation gives that order with no memory per block and constant work per I/O,
/// where a shuffled list of a 1 TiB device's 4 KiB blocks would take 2 GiB.
#[derive(Debug, Clone)]
struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub(super) fn new(n: u64, seed: u64) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        // Independent round keys from one seed.
        let mut k = seed;
        let mut key = || splitmix64(&mut k);
        Permutation {
            n,
            half_bits,
            keys: [key(), key(), key(), key()],
        }
    }

    #[inline]
    fn round(x: u64, key: u64, mask: u64) -> u64 {
        let mut z = (x ^ key).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        z ^= z >> 32;
        z.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7 & mask
    }

    /// The `i`-th value (i < n).
    #[inline]
    fn at(&self, i: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let mut x = i;
        loop {
            let (mut l, mut r) = (x >> self.half_bits, x & mask);
            for k in self.keys {
                let t = l ^ Self::round(r, k, mask);
                l = r;
                r = t;
            }
            x = (l << self.half_bits) | r;
            if x < self.n {
                return x;
            }
        }
    }
}

/// fio's random map for one worker's region. With one block size the permutation gives the
/// order of its blocks. With a mix (its slots the smallest block) fio's own walk: a slot drawn
/// uniformly over the region, and where it is taken the next free slot after it (fio's
/// io_u.c __get_next_rand_offset and axmap_next_free, wrapping at the end); a block covers
/// the free slots from there and is cut short where the next slot is taken. Starting after a
/// taken run, the blocks find long free runs as fio's do (picking among the free slots
/// instead would start inside free runs and cut the blocks shorter than fio's).
#[derive(Debug, Clone)]
pub(super) struct RandomMap {
    order: Permutation,
    seed: u64,
    pass: u64,
    /// Next index into the order (one block size).
    next: u64,
    /// Slots covered, when block sizes differ.
    used: Option<SlotMap>,
}

impl RandomMap {
    pub(super) fn new(slots: u64, seed: u64, mixed: bool) -> RandomMap {
        RandomMap {
            order: Permutation::new(slots, seed),
            seed,
            pass: 0,
            next: 0,
            used: mixed.then(|| SlotMap::new(slots, seed)),
        }
    }

    /// A new pass: a new order, nothing used.
    pub(super) fn restart(&mut self) {
        self.pass += 1;
        self.order = Permutation::new(self.order.n, self.seed.wrapping_add(self.pass));
        self.next = 0;
        if let Some(u) = self.used.as_mut() {
            *u = SlotMap::new(self.order.n, self.seed.wrapping_add(self.pass));
        }
    }

    /// The next free slot and how many slots from it (up to `want`) are free; None at the end
    /// of the pass.
    pub(super) fn take(&mut self, want: u64) -> Option<(u64, u64)> {
        if let Some(u) = self.used.as_mut() {
            return u.take(want);
        }
        if self.next < self.order.n {
            let s = self.order.at(self.next);
            self.next += 1;
            return Some((s, 1));
        }
        None
    }
}

/// The slots a mixed-size pass has covered: a bit per slot, and a bit per 64 slots that are
/// all covered, so that the next free slot is found in a few words however full the map
/// (fio's axmap has more levels; two keep a 1 TiB region of 4 KiB slots within 64 Ki words).
#[derive(Debug, Clone)]
struct SlotMap {
    n: u64,
    free: u64,
    bits: Vec<u64>,
    full: Vec<u64>,
    /// splitmix64's counter: the slots drawn.
    draw: u64,
}

impl SlotMap {
    fn new(n: u64, seed: u64) -> SlotMap {
        let words = n.div_ceil(64) as usize;
        let mut m = SlotMap {
            n,
            free: n,
            bits: vec![0; words],
            full: vec![0; words.div_ceil(64)],
            draw: seed,
        };
        // The bits past the region (in the last words) count as covered, so that a word
        // holding them fills.
        if !n.is_multiple_of(64) {
            m.bits[words - 1] = !0 << (n % 64);
        }
        if !words.is_multiple_of(64) {
            let last = m.full.len() - 1;
            m.full[last] = !0 << (words % 64);
        }
        m
    }

    fn is_used(&self, s: u64) -> bool {
        self.bits[(s / 64) as usize] >> (s % 64) & 1 == 1
    }

    fn mark(&mut self, s: u64) {
        let w = (s / 64) as usize;
        self.bits[w] |= 1 << (s % 64);
        self.free -= 1;
        if self.bits[w] == !0 {
            self.full[w / 64] |= 1 << (w % 64);
        }
    }

    /// A slot drawn uniformly over the region (splitmix64 over a counter, scaled to `n`).
    fn uniform(&mut self) -> u64 {
        ((splitmix64(&mut self.draw) as u128 * self.n as u128) >> 64) as u64
    }

    /// The first free slot at `from` or after it, if any.
    fn free_from(&self, from: u64) -> Option<u64> {
        let w = (from / 64) as usize;
        let here = self.bits[w] | ((1u64 << (from % 64)) - 1);
        if here != !0 {
            return Some(w as u64 * 64 + (!here).trailing_zeros() as u64);
        }
        // The next word with a free slot, from the summary.
        let next = w + 1;
        let (mut f, mut summary) = (next / 64, 0);
        if f < self.full.len() {
            summary = self.full[f] | ((1u64 << (next % 64)) - 1);
        }
        while f < self.full.len() {
            if summary != !0 {
                let word = f * 64 + (!summary).trailing_zeros() as usize;
                return Some(word as u64 * 64 + (!self.bits[word]).trailing_zeros() as u64);
            }
            f += 1;
            summary = self.full.get(f).copied().unwrap_or(!0);
        }
        None
    }

    fn take(&mut self, want: u64) -> Option<(u64, u64)> {
        if self.free == 0 {
            return None;
        }
        let u = self.uniform();
        let s = if !self.is_used(u) {
            u
        } else if u + 1 < self.n {
            self.free_from(u + 1).or_else(|| self.free_from(0))?
        } else {
            self.free_from(0)?
        };
        let mut run = 1;
        self.mark(s);
        while run < want && s + run < self.n && !self.is_used(s + run) {
            self.mark(s + run);
            run += 1;
        }
        Some((s, run))
    }
}

#[cfg(test)]
mod tests {
    use super::RandomMap;

    /// A mixed pass covers every slot exactly once, whatever the runs asked, and then ends.
    #[test]
    fn a_mixed_pass_covers_every_slot_once() {
        for n in [1u64, 63, 64, 65, 4095, 4096, 4097, 70_000] {
            let mut m = RandomMap::new(n, 7, true);
            let mut seen = vec![false; n as usize];
            let mut i = 0u64;
            while let Some((s, run)) = m.take(1 + i % 17) {
                for x in s..s + run {
                    assert!(!seen[x as usize], "n {n}: slot {x} twice");
                    seen[x as usize] = true;
                }
                i += 1;
            }
            assert!(seen.iter().all(|&x| x), "n {n}: every slot");
            m.restart();
            assert!(m.take(1).is_some(), "n {n}: a new pass");
        }
    }
}
