//! I/O buffers, the data written into them, and the verification header.
//!
//! Every 4 KiB written with verification on starts with a 32-byte header:
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `SLB1` |
//! | 4..8 | CRC-32C of bytes 8..4096 of this 4 KiB |
//! | 8..16 | offset of this 4 KiB in its file |
//! | 16..24 | the run's seed |
//! | 24..28 | the write generation (which phase wrote it) |
//! | 28..32 | reserved, zero |
//!
//! A read with verification recomputes the checksum and compares offset, seed and generation,
//! so that corruption, a block written to the wrong place (misdirected write), a block left over
//! from another run, and a lost write (a stale generation) are each named.

use std::alloc::{alloc_zeroed, dealloc, Layout};

use rand::{rngs::SmallRng, Rng, RngCore, SeedableRng};

use crate::plan::{DataPattern, GenerationRange, VERIFY_BLOCK};
pub use crate::result::BadReason;

/// Alignment of every I/O buffer: enough for O_DIRECT on 4Kn devices.
pub const BUFFER_ALIGN: usize = 4096;

const MAGIC: &[u8; 4] = b"SLB1";

/// A set of equally sized, 4 KiB-aligned buffers, allocated once per worker and phase.
///
/// The buffers never move while the pool lives, so their addresses may be handed to the kernel
/// (io_uring registered buffers) for the life of the pool.
pub struct BufferPool {
    ptr: *mut u8,
    layout: Layout,
    slot: usize,
    count: usize,
}

// SAFETY: the pool owns its allocation exclusively; moving it to another thread moves that
// ownership. Aliasing is controlled by the worker, which hands out one slot per in-flight I/O.
unsafe impl Send for BufferPool {}

impl BufferPool {
    /// Allocates `count` buffers of at least `size` bytes each (rounded up to 4 KiB).
    pub fn new(count: usize, size: usize) -> BufferPool {
        let slot = size.max(1).div_ceil(BUFFER_ALIGN) * BUFFER_ALIGN;
        let layout = Layout::from_size_align(slot * count.max(1), BUFFER_ALIGN).expect("buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        BufferPool {
            ptr,
            layout,
            slot,
            count: count.max(1),
        }
    }

    /// The number of buffers.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The size of each buffer.
    pub fn slot_size(&self) -> usize {
        self.slot
    }

    /// The address of buffer `i`.
    pub fn ptr(&self, i: usize) -> *mut u8 {
        assert!(i < self.count);
        // SAFETY: i < count, so the offset stays inside the allocation.
        unsafe { self.ptr.add(i * self.slot) }
    }

    /// Buffer `i` as a mutable slice of `len` bytes.
    ///
    /// # Safety
    /// The caller must not hold another reference to buffer `i` and the kernel must not be
    /// using it (no I/O in flight on it).
    // `&self`, not `&mut self`: the pool is shared with the kernel (registered with io_uring)
    // and slots are handed out one at a time; the safety contract above is the borrow rule.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut(&self, i: usize, len: usize) -> &mut [u8] {
        assert!(len <= self.slot);
        std::slice::from_raw_parts_mut(self.ptr(i), len)
    }

    /// Fills every buffer with the data pattern (once, before the phase); `chunk` is a
    /// compressible pattern's (the setting `compress_chunk`).
    pub fn fill(&mut self, pattern: &DataPattern, chunk: u64, seed: u64) {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed_da7a);
        for i in 0..self.count {
            // SAFETY: no I/O is in flight while the pool is being filled.
            let buf = unsafe { self.slice_mut(i, self.slot) };
            fill_pattern(buf, pattern, chunk, &mut rng);
        }
    }

    /// The iovecs of every buffer (for io_uring buffer registration).
    pub fn iovecs(&self) -> Vec<libc::iovec> {
        (0..self.count)
            .map(|i| libc::iovec {
                iov_base: self.ptr(i) as *mut libc::c_void,
                iov_len: self.slot,
            })
            .collect()
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the worker has reaped every I/O before
        // the pool is dropped.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Fills `buf` with the pattern; `chunk` is a compressible pattern's span (the setting
/// `compress_chunk`; the other patterns ignore it).
pub fn fill_pattern(buf: &mut [u8], pattern: &DataPattern, chunk: u64, rng: &mut SmallRng) {
    match pattern {
        DataPattern::Bytes(p) => {
            for chunk in buf.chunks_mut(VERIFY_BLOCK as usize) {
                fill_bytes(chunk, p);
            }
        }
        DataPattern::Random => rng.fill_bytes(buf),
        DataPattern::Zeros => buf.fill(0),
        DataPattern::Compressible(pct) => {
            // fio's __fill_random_buf_percentage: each chunk its random bytes, then its zeros.
            let chunk = (chunk as usize).max(1);
            let random = chunk * (100 - (*pct).min(100) as usize) / 100;
            for c in buf.chunks_mut(chunk) {
                let r = random.min(c.len());
                rng.fill_bytes(&mut c[..r]);
                c[r..].fill(0);
            }
        }
    }
}

/// `pattern` over and over from the start of `chunk`.
fn fill_bytes(chunk: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        return;
    }
    for (i, b) in chunk.iter_mut().enumerate() {
        *b = pattern[i % pattern.len()];
    }
}

/// fio's dedupe_percentage: which blocks a worker writes repeat others, so that deduplicating
/// storage finds that share of duplicates. A block's contents are a function of a key (the
/// worker and its count of unique blocks), so a duplicate is the same bytes as the block it
/// repeats: the last unique one (fio's dedupe_mode=repeat), or one of a working set, the first
/// unique blocks of this worker or, shared (dedupe_global), of every worker (fio's
/// dedupe_mode=working_set). Each block is generated whole (a few hundred nanoseconds per
/// 4 KiB), so this is off the usual path.
#[derive(Debug, Clone)]
pub struct Dedupe {
    /// Percent of the blocks that are duplicates.
    pub percent: u8,
    /// Unique blocks per worker that make up the working set (None: repeat the last).
    pub set_blocks: Option<u64>,
    /// The working set is every worker's.
    pub global: bool,
    /// This worker's index.
    pub worker: u64,
    /// The phase's workers.
    pub workers: u64,
    /// The run's seed: the blocks' contents follow from it.
    pub seed: u64,
    /// Unique blocks written so far.
    pub unique: u64,
    /// A compressible pattern's span (`compress_chunk`).
    pub chunk: u64,
}

impl Dedupe {
    /// The generator of worker `worker` of a write phase with fio's dedupe_percentage, over
    /// its `len` bytes.
    pub(crate) fn for_worker(plan: &crate::plan::PhasePlan, worker: usize, len: u64) -> Option<Dedupe> {
        let st = &plan.settings;
        (st.dedupe > 0 && plan.kind.writes()).then(|| Dedupe {
            percent: st.dedupe,
            set_blocks: st.dedupe_set.map(|p| len * p as u64 / 100 / st.bs.min().max(1)),
            global: st.dedupe_global,
            worker: worker as u64,
            workers: plan.workers.len() as u64,
            // Each phase's blocks are its own: jobs running together (fio's a and b) and later
            // write phases do not repeat each other's.
            seed: plan.seed
                ^ (plan.generation as u64).wrapping_mul(0xA076_1D64_78BD_642F)
                ^ plan
                    .name
                    .as_deref()
                    .unwrap_or("")
                    .bytes()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
                    }),
            unique: 0,
            chunk: st.compress_chunk,
        })
    }

    /// Fills `buf` for the next write: a new unique block, or a duplicate.
    pub fn fill(&mut self, buf: &mut [u8], pattern: &DataPattern, rng: &mut SmallRng) {
        let dup = self.unique > 0 && rng.gen_range(0..100u8) < self.percent;
        let key = if !dup {
            self.unique += 1;
            (self.worker, self.unique - 1)
        } else {
            match self.set_blocks {
                None => (self.worker, self.unique - 1),
                Some(n) => {
                    let w = if self.global {
                        rng.gen_range(0..self.workers.max(1))
                    } else {
                        self.worker
                    };
                    // Not yet written by this worker: its own set is limited to what it wrote.
                    let n = if w == self.worker { n.min(self.unique) } else { n };
                    (w, rng.gen_range(0..n.max(1)))
                }
            }
        };
        let mut block_rng = SmallRng::seed_from_u64(
            self.seed ^ key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key.1.wrapping_mul(0xD6E8_FEB8_6659_FD93),
        );
        fill_pattern(buf, pattern, self.chunk, &mut block_rng);
    }
}

/// Makes a block of random data unique to its offset, so that deduplicating storage cannot
/// flatter the result: one 8-byte store per I/O (the pool's random data is reused).
#[inline]
pub fn scramble(buf: &mut [u8], offset: u64, seed: u64) {
    if buf.len() >= 8 {
        buf[..8].copy_from_slice(&(offset ^ seed).to_le_bytes());
    }
}

/// Writes a verification header into every 4 KiB of `buf`, which will be written at `offset`.
pub fn stamp(buf: &mut [u8], offset: u64, seed: u64, generation: u32) {
    for (i, chunk) in buf.chunks_mut(VERIFY_BLOCK as usize).enumerate() {
        if chunk.len() < 32 {
            continue;
        }
        chunk[0..4].copy_from_slice(MAGIC);
        chunk[8..16].copy_from_slice(&(offset + i as u64 * VERIFY_BLOCK).to_le_bytes());
        chunk[16..24].copy_from_slice(&seed.to_le_bytes());
        chunk[24..28].copy_from_slice(&generation.to_le_bytes());
        chunk[28..32].fill(0);
        let crc = crc32c::crc32c(&chunk[8..]);
        chunk[4..8].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Checks every 4 KiB of `buf`, read from `offset`; calls `bad` for each block that fails.
/// Returns the number of blocks checked.
/// With `pattern`, the bytes after each header must also be the pattern from the start of the
/// 4 KiB (fio's verify_pattern).
pub fn verify(
    buf: &[u8],
    offset: u64,
    seed: u64,
    generations: GenerationRange,
    pattern: Option<&[u8]>,
    mut bad: impl FnMut(u64, BadReason),
) -> u64 {
    let mut n = 0;
    for (i, chunk) in buf.chunks(VERIFY_BLOCK as usize).enumerate() {
        if chunk.len() < 32 {
            continue;
        }
        n += 1;
        let at = offset + i as u64 * VERIFY_BLOCK;
        if &chunk[0..4] != MAGIC {
            bad(at, BadReason::NoHeader);
            continue;
        }
        let stored = u32::from_le_bytes(chunk[4..8].try_into().unwrap());
        let computed = crc32c::crc32c(&chunk[8..]);
        if stored != computed {
            bad(at, BadReason::Checksum { stored, computed });
            continue;
        }
        let stored_offset = u64::from_le_bytes(chunk[8..16].try_into().unwrap());
        if stored_offset != at {
            bad(at, BadReason::WrongOffset { stored: stored_offset });
            continue;
        }
        let stored_seed = u64::from_le_bytes(chunk[16..24].try_into().unwrap());
        if stored_seed != seed {
            bad(at, BadReason::WrongSeed { stored: stored_seed });
            continue;
        }
        if let Some(p) = pattern.filter(|p| !p.is_empty()) {
            if let Some(byte) = (32..chunk.len()).find(|&i| chunk[i] != p[i % p.len()]) {
                bad(at, BadReason::Pattern { at: byte as u32 });
                continue;
            }
        }
        let g = u32::from_le_bytes(chunk[24..28].try_into().unwrap());
        if g < generations.min || g > generations.max {
            bad(
                at,
                BadReason::WrongGeneration {
                    stored: g,
                    min: generations.min,
                    max: generations.max,
                },
            );
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(g: u32) -> GenerationRange {
        GenerationRange { min: g, max: g }
    }

    #[test]
    fn stamped_blocks_verify() {
        let mut buf = vec![0u8; 16384];
        let mut rng = SmallRng::seed_from_u64(1);
        fill_pattern(&mut buf, &DataPattern::Random, 4096, &mut rng);
        stamp(&mut buf, 1 << 33, 42, 3);
        let mut bad = Vec::new();
        assert_eq!(verify(&buf, 1 << 33, 42, range(3), None, |o, r| bad.push((o, r))), 4);
        assert!(bad.is_empty(), "{bad:?}");
    }

    #[test]
    fn each_fault_is_named() {
        let mut buf = vec![7u8; 16384];
        stamp(&mut buf, 0, 42, 1);
        buf[4096 + 100] ^= 1; // corrupt block 1
        let mut bad = Vec::new();
        verify(&buf, 0, 42, range(1), None, |o, r| bad.push((o, r)));
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].0, 4096);
        assert!(matches!(bad[0].1, BadReason::Checksum { .. }));

        let mut bad = Vec::new();
        verify(&buf[8192..], 4096, 42, range(1), None, |o, r| bad.push((o, r)));
        assert!(
            bad.iter().all(|(_, r)| matches!(r, BadReason::WrongOffset { .. })),
            "{bad:?}"
        );

        let mut bad = Vec::new();
        verify(&buf[..4096], 0, 43, range(1), None, |o, r| bad.push((o, r)));
        assert!(matches!(bad[0].1, BadReason::WrongSeed { stored: 42 }));

        let mut bad = Vec::new();
        verify(&buf[..4096], 0, 42, range(2), None, |o, r| bad.push((o, r)));
        assert!(matches!(bad[0].1, BadReason::WrongGeneration { stored: 1, .. }));

        let zeros = vec![0u8; 4096];
        let mut bad = Vec::new();
        verify(&zeros, 0, 42, range(1), None, |o, r| bad.push((o, r)));
        assert_eq!(bad[0].1, BadReason::NoHeader);
    }

    #[test]
    fn compressible_pattern_lays_each_chunk_random_then_zeros() {
        let mut rng = SmallRng::seed_from_u64(1);
        for chunk in [512usize, 4096] {
            let mut buf = vec![1u8; 8192];
            fill_pattern(&mut buf, &DataPattern::Compressible(25), chunk as u64, &mut rng);
            for c in buf.chunks(chunk) {
                let random = chunk * 3 / 4;
                assert!(c[..random].iter().any(|&b| b != 0), "{chunk}: random first");
                assert!(c[random..].iter().all(|&b| b == 0), "{chunk}: then zeros");
            }
        }
    }

    #[test]
    fn a_pattern_is_written_under_the_header_and_checked() {
        let p = vec![0xaa, 0x55, 0x5a];
        let mut buf = vec![0u8; 8192];
        let mut rng = SmallRng::seed_from_u64(1);
        fill_pattern(&mut buf, &DataPattern::Bytes(p.clone()), 4096, &mut rng);
        assert_eq!(
            &buf[4096..4102],
            &[0xaa, 0x55, 0x5a, 0xaa, 0x55, 0x5a],
            "from each 4 KiB's start"
        );
        stamp(&mut buf, 0, 42, 1);
        let mut bad = Vec::new();
        assert_eq!(verify(&buf, 0, 42, range(1), Some(&p), |o, r| bad.push((o, r))), 2);
        assert!(bad.is_empty(), "{bad:?}");
        // Another pattern, stamped (so the checksum holds): named as the pattern.
        let mut other = vec![0u8; 4096];
        fill_pattern(&mut other, &DataPattern::Bytes(vec![0xaa, 0x55, 0x5b]), 4096, &mut rng);
        stamp(&mut other, 0, 42, 1);
        verify(&other, 0, 42, range(1), Some(&p), |o, r| bad.push((o, r)));
        assert_eq!(
            bad,
            vec![(0, BadReason::Pattern { at: 32 })],
            "byte 32 is the third of the pattern (32 % 3 = 2)"
        );
    }

    #[test]
    fn pool_is_aligned() {
        let pool = BufferPool::new(3, 5000);
        assert_eq!(pool.slot_size(), 8192);
        for i in 0..3 {
            assert_eq!(pool.ptr(i) as usize % BUFFER_ALIGN, 0);
        }
    }
}
