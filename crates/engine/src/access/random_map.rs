//! fio's random map: every block once per pass in a random order, as a Feistel permutation
//! of the block numbers (with a bitmap where block sizes are mixed).

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
        let mut k = seed;
        let mut key = || {
            // splitmix64: independent round keys from one seed.
            k = k.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = k;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
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

/// fio's random map for one worker's region: the permutation gives the order of its slots
/// (smallest blocks); with a mix of block sizes a bitmap marks the slots a longer block
/// covered, which are skipped, and a block is cut short where the next slot is taken, as
/// fio's map does.
#[derive(Debug, Clone)]
pub(super) struct RandomMap {
    order: Permutation,
    seed: u64,
    pass: u64,
    /// Next index into the order.
    next: u64,
    /// Slots covered, when block sizes differ.
    used: Option<Vec<u64>>,
}

impl RandomMap {
    pub(super) fn new(slots: u64, seed: u64, mixed: bool) -> RandomMap {
        RandomMap {
            order: Permutation::new(slots, seed),
            seed,
            pass: 0,
            next: 0,
            used: mixed.then(|| vec![0u64; slots.div_ceil(64) as usize]),
        }
    }

    fn is_used(&self, s: u64) -> bool {
        self.used
            .as_ref()
            .is_some_and(|u| u[(s / 64) as usize] >> (s % 64) & 1 == 1)
    }

    fn mark(&mut self, s: u64) {
        if let Some(u) = self.used.as_mut() {
            u[(s / 64) as usize] |= 1 << (s % 64);
        }
    }

    /// A new pass: a new order, nothing used.
    pub(super) fn restart(&mut self) {
        self.pass += 1;
        self.order = Permutation::new(self.order.n, self.seed.wrapping_add(self.pass));
        self.next = 0;
        if let Some(u) = self.used.as_mut() {
            u.fill(0);
        }
    }

    /// The next free slot and how many slots from it (up to `want`) are free; None at the end
    /// of the pass.
    pub(super) fn take(&mut self, want: u64) -> Option<(u64, u64)> {
        while self.next < self.order.n {
            let s = self.order.at(self.next);
            self.next += 1;
            if self.is_used(s) {
                continue;
            }
            let mut run = 1;
            self.mark(s);
            while run < want && s + run < self.order.n && !self.is_used(s + run) {
                self.mark(s + run);
                run += 1;
            }
            return Some((s, run));
        }
        None
    }
}
