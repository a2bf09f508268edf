//! Access patterns: which offset, length and direction comes next for one worker.
//!
//! A generator is a few integers and a pseudo-random generator; `next` does no allocation and
//! no system call, so it costs a few nanoseconds per I/O.

use rand::{rngs::SmallRng, Rng};

use crate::backend::Op;
use crate::plan::{BlockSizes, PhaseKind};
pub use storlab_model::settings::Strided;

mod file_set;
mod random_map;
mod sizes;
mod skew;

pub use file_set::{FileService, FileSet};
use random_map::RandomMap;
use sizes::SizePicker;
pub(crate) use skew::Skew;

/// The offsets one worker visits.
#[derive(Debug, Clone)]
pub struct Access {
    kind: PhaseKind,
    start: u64,
    end: u64,
    sizes: SizePicker,
    /// The unit offsets are aligned to (the smallest block size).
    align: u64,
    time_based: bool,
    read_pct: u8,
    stride: u64,
    /// Sequential: next offset (a sequential mix's next read). Backward: end of the next block.
    pos: u64,
    /// A sequential mix's next write.
    wpos: u64,
    /// Size-based random and same-record phases: bytes still to issue.
    remaining: u64,
    /// Stride read: the pass (starting record) and records visited.
    stride_pass: u64,
    stride_done: u64,
    /// Passes left after this one (a phase without a runtime).
    passes_left: u32,
    /// Random offsets' zones: (cumulative percent of the I/Os, region start, region end).
    zones: Vec<(u32, u64, u64)>,
    /// Random offsets from fio's random map instead of drawn anew.
    map: Option<RandomMap>,
    /// Random offsets drawn from a skewed law over the region's blocks (zipf, pareto, normal).
    skew: Option<Skew>,
    /// Sequential: bytes left out after each I/O (fio's `rw=write:N`).
    hole: u64,
    /// Sequential: strided zones (fio's zonemode=strided).
    strided: Option<Strided>,
    /// The current zone's start and the bytes moved in it.
    zone_start: u64,
    zone_bytes: u64,
    /// Sequential: bytes per pass, going round the region as often as needed (fio's io_size).
    pass_bytes: Option<u64>,
    /// Bytes moved in this pass (with `pass_bytes`).
    moved: u64,
}

impl Access {
    /// A generator over [start, start + len).
    pub fn new(
        kind: PhaseKind,
        start: u64,
        len: u64,
        bs: &BlockSizes,
        time_based: bool,
        read_pct: u8,
        stride: u64,
    ) -> Access {
        let sizes = SizePicker::new(bs);
        let align = bs.min().max(1);
        let end = start + len;
        Access {
            kind,
            start,
            end,
            sizes,
            align,
            time_based,
            read_pct,
            stride: stride.max(1),
            pos: match kind {
                PhaseKind::Backread => end,
                PhaseKind::Strideread => 0,
                _ => start,
            },
            wpos: start,
            remaining: len,
            stride_pass: 0,
            stride_done: 0,
            passes_left: 0,
            map: None,
            skew: None,
            zones: Vec::new(),
            hole: 0,
            strided: None,
            zone_start: start,
            zone_bytes: 0,
            pass_bytes: None,
            moved: 0,
        }
    }

    /// Leaves `hole` bytes out after each sequential I/O (fio's `rw=write:N`).
    pub fn with_hole(mut self, hole: u64) -> Access {
        self.hole = hole;
        self
    }

    /// Moves sequentially in strided zones (fio's zonemode=strided).
    pub fn with_strided(mut self, strided: Option<Strided>) -> Access {
        self.strided = strided.filter(|z| z.size > 0 && z.range > 0);
        self
    }

    /// A sequential pass moves `bytes`, going round its region as often as needed (fio's
    /// io_size); without it a pass ends at the region's end.
    pub fn with_pass_bytes(mut self, bytes: Option<u64>) -> Access {
        self.pass_bytes = bytes.filter(|b| *b > 0);
        if let Some(b) = self.pass_bytes {
            self.remaining = b;
        }
        self
    }

    /// The next sequential offset for a block of `len` with holes, strided zones or a byte
    /// count per pass, or None at the end of the last pass. As in fio, such a pass moves its
    /// byte count (io_size, else the region's size), going round the region as often as it
    /// takes: holes and the space between zones are not counted.
    fn next_sequential(&mut self, len: u64) -> Option<u64> {
        if len > self.end - self.start {
            return None;
        }
        let limit = self.pass_bytes.unwrap_or(self.end - self.start);
        if !self.time_based && self.moved + len > limit {
            if !self.another_pass() {
                return None;
            }
            self.moved = 0;
            self.restart_sequential();
        }
        self.moved += len;
        if let Some(z) = self.strided {
            if self.zone_bytes >= z.size {
                self.zone_bytes = 0;
                self.zone_start += z.range + z.skip;
                self.pos = self.zone_start;
            } else if self.pos >= self.zone_start + z.range {
                // fio: a zone size beyond its range goes over the zone again.
                self.pos = self.zone_start;
            }
        }
        if self.pos + len > self.end {
            self.restart_sequential();
        }
        let o = self.pos;
        self.pos += len + self.hole;
        self.zone_bytes += len;
        Some(o)
    }

    fn restart_sequential(&mut self) {
        self.pos = self.start;
        self.zone_start = self.start;
        self.zone_bytes = 0;
    }

    /// Aligns random offsets to `align` rather than the smallest block size (fio's
    /// blockalign); the block sizes stay as they are.
    pub fn with_align(mut self, align: Option<u64>) -> Access {
        if let Some(a) = align.filter(|a| *a > 0) {
            self.align = a;
        }
        self
    }

    /// Draws random offsets from zones: `(percent of the I/Os, percent of the region)` in
    /// order from the region's start (fio's random_distribution=zoned).
    pub fn with_zones(mut self, zones: &[(u8, u8)]) -> Access {
        let len = self.end - self.start;
        let (mut io, mut at) = (0u32, 0u64);
        for (a, r) in zones {
            io += *a as u32;
            let size = len * *r as u64 / 100;
            self.zones
                .push((io, self.start + at, self.start + (at + size).min(len)));
            at += size;
        }
        if let Some(last) = self.zones.last_mut() {
            last.2 = self.end;
        }
        self
    }

    /// Draws random offsets from zones of absolute sizes: `(percent of the I/Os, bytes)` in
    /// order from the region's start (fio's random_distribution=zoned_abs); what follows the
    /// last zone is not touched. The zones fit the region (validation refuses them otherwise).
    pub fn with_absolute_zones(mut self, zones: &[(u8, u64)]) -> Access {
        let (mut io, mut at) = (0u32, self.start);
        for (a, size) in zones {
            io += *a as u32;
            let end = (at + size).min(self.end);
            self.zones.push((io, at, end));
            at = end;
        }
        self
    }

    /// Draws random offsets from a skewed law over the region's blocks of the smallest block
    /// size (fio's random_distribution=zipf, pareto, normal); `seed` shifts where the hot
    /// blocks lie. A uniform or zoned distribution leaves the generator as it is.
    pub fn with_skew(mut self, d: &storlab_model::settings::Distribution, seed: u64) -> Access {
        use rand::SeedableRng;
        let blocks = (self.end - self.start).div_ceil(self.align);
        self.skew = Skew::new(d, blocks, &mut SmallRng::seed_from_u64(seed));
        self
    }

    /// Makes a phase without a runtime go over its region `loops` times (fio's `loops`).
    pub fn with_loops(mut self, loops: u32) -> Access {
        self.passes_left = loops.saturating_sub(1);
        self
    }

    /// Makes random offsets visit every block of the region once per pass, in an order drawn
    /// from `seed` (fio's random map).
    pub fn with_random_map(mut self, seed: u64) -> Access {
        let random = matches!(
            self.kind,
            PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw
        );
        let slots = (self.end - self.start) / self.align;
        if random && slots > 0 {
            let mixed = self.sizes.table.len() > 1;
            self.map = Some(RandomMap::new(slots, seed, mixed));
        }
        self
    }

    /// [`Access::with_random_map`] when `on`.
    pub fn with_random_map_if(self, on: bool, seed: u64) -> Access {
        if on {
            self.with_random_map(seed)
        } else {
            self
        }
    }

    /// Starts another pass when one is left (or always, time-based); false at the end.
    fn another_pass(&mut self) -> bool {
        if self.time_based {
            return true;
        }
        if self.passes_left == 0 {
            return false;
        }
        self.passes_left -= 1;
        self.remaining = self.pass_bytes.unwrap_or(self.end - self.start);
        true
    }

    /// The next I/O: (direction, offset, length), or None when a size-based phase is done.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> Option<(Op, u64, u64)> {
        let len = self.sizes.pick(rng);
        let op = self.direction(rng);
        let (offset, len) = match self.kind {
            PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread
                if self.hole == 0 && self.strided.is_none() && self.pass_bytes.is_none() =>
            {
                (self.next_contiguous(len)?, len)
            }
            PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread => {
                (self.next_sequential(len)?, len)
            }
            PhaseKind::Rw => (self.next_mixed_sequential(op, len)?, len),
            PhaseKind::Backread => (self.next_backward(len)?, len),
            PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw if self.map.is_some() => {
                self.next_mapped(len)?
            }
            PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw => (self.next_uniform(len, rng)?, len),
            PhaseKind::Recrewrite => (self.next_in_place(len)?, len),
            PhaseKind::Strideread => (self.next_stride(len)?, len),
        };
        Some((op, offset, len))
    }

    /// Read or write: a mixed phase draws it by its read share.
    #[inline]
    fn direction(&self, rng: &mut SmallRng) -> Op {
        match self.kind {
            PhaseKind::Randrw | PhaseKind::Rw => {
                if rng.gen_range(0..100u8) < self.read_pct {
                    Op::Read
                } else {
                    Op::Write
                }
            }
            k if k.writes() => Op::Write,
            _ => Op::Read,
        }
    }

    /// Takes `len` bytes from the pass's count (a phase of passes; time-based ones have
    /// none), starting another pass when this one cannot hold them; false when no pass is
    /// left.
    #[inline]
    fn take_from_pass(&mut self, len: u64) -> bool {
        if self.time_based {
            return true;
        }
        if self.remaining < len {
            // another_pass refills `remaining` when a pass is left.
            let again = self.another_pass();
            if !again || self.remaining < len {
                return false;
            }
        }
        self.remaining -= len;
        true
    }

    /// Block after block from the region's start, without holes or zones.
    #[inline]
    fn next_contiguous(&mut self, len: u64) -> Option<u64> {
        if self.pos + len > self.end {
            if !self.another_pass() {
                return None;
            }
            self.pos = self.start;
        }
        let o = self.pos;
        self.pos += len;
        Some(o)
    }

    /// fio's rw=rw: reads and writes each go through the region from its start, and the pass
    /// ends when they have moved the region's size between them.
    #[inline]
    fn next_mixed_sequential(&mut self, op: Op, len: u64) -> Option<u64> {
        if !self.time_based && self.remaining < len {
            let again = self.another_pass();
            if !again || self.remaining < len {
                return None;
            }
            self.pos = self.start;
            self.wpos = self.start;
        }
        if !self.time_based {
            self.remaining -= len;
        }
        let pos = if op == Op::Write { &mut self.wpos } else { &mut self.pos };
        if *pos + len > self.end {
            *pos = self.start;
        }
        let o = *pos;
        *pos += len;
        Some(o)
    }

    /// Block by block from the region's end.
    #[inline]
    fn next_backward(&mut self, len: u64) -> Option<u64> {
        if self.pos < self.start + len {
            if !self.another_pass() {
                return None;
            }
            self.pos = self.end;
        }
        self.pos -= len;
        Some(self.pos)
    }

    /// fio's random map: the next free run of blocks in the pass's random order, as (offset,
    /// length). With io_size the pass is a byte count, and the map starts over when it is
    /// full.
    #[inline]
    fn next_mapped(&mut self, len: u64) -> Option<(u64, u64)> {
        let align = self.align;
        let want = len / align;
        if let Some(limit) = self.pass_bytes {
            if self.moved + len > limit {
                if !self.another_pass() {
                    return None;
                }
                self.moved = 0;
                self.map.as_mut().expect("a map").restart();
            }
            let map = self.map.as_mut().expect("a map");
            let (slot, run) = match map.take(want) {
                Some(t) => t,
                None => {
                    map.restart();
                    map.take(want)?
                }
            };
            self.moved += run * align;
            return Some((self.start + slot * align, run * align));
        }
        let map = self.map.as_mut().expect("a map");
        let (slot, run) = match map.take(want) {
            Some(t) => t,
            None => {
                if !self.another_pass() {
                    return None;
                }
                let map = self.map.as_mut().expect("a map");
                map.restart();
                map.take(want)?
            }
        };
        Some((self.start + slot * align, run * align))
    }

    /// An offset drawn anew (fio's norandommap), uniformly over the region or in a zone drawn
    /// by the zones' shares, aligned.
    #[inline]
    fn next_uniform(&mut self, len: u64, rng: &mut SmallRng) -> Option<u64> {
        if !self.take_from_pass(len) {
            return None;
        }
        if let Some(skew) = &self.skew {
            // The block drawn, moved back where a block of `len` would pass the region's end.
            let at = self.start + skew.next(rng) * self.align;
            return Some(at.min(self.end.saturating_sub(len).max(self.start) / self.align * self.align));
        }
        let (lo, hi) = if self.zones.is_empty() {
            (self.start, self.end)
        } else {
            let r = rng.gen_range(0..100u32);
            let z = self
                .zones
                .iter()
                .find(|z| r < z.0)
                .unwrap_or(&self.zones[self.zones.len() - 1]);
            // A zone narrower than the block runs to the region's end.
            (z.1, z.2.max(z.1 + len).min(self.end))
        };
        let lo = lo.div_ceil(self.align) * self.align;
        if lo + len > hi {
            return Some(hi.saturating_sub(len) / self.align * self.align);
        }
        let slots = (hi - lo - len) / self.align + 1;
        Some(lo + rng.gen_range(0..slots) * self.align)
    }

    /// IOzone's record rewrite: the same record over and over.
    #[inline]
    fn next_in_place(&mut self, len: u64) -> Option<u64> {
        self.take_from_pass(len).then_some(self.start)
    }

    /// Records pass, pass + stride, pass + 2·stride, ...; then the next pass, until every
    /// record was read once (IOzone's stride read, -j).
    #[inline]
    fn next_stride(&mut self, len: u64) -> Option<u64> {
        let records = (self.end - self.start) / len;
        if records == 0 {
            return None;
        }
        if self.stride_done >= records {
            if !self.another_pass() {
                return None;
            }
            self.stride_done = 0;
            self.stride_pass = 0;
            self.pos = 0;
        }
        let mut record = self.pos;
        if record >= records {
            self.stride_pass += 1;
            record = self.stride_pass;
        }
        self.pos = record + self.stride;
        self.stride_done += 1;
        Some(self.start + record * len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn collect(kind: PhaseKind, len: u64, bs: u64, stride: u64) -> Vec<(Op, u64, u64)> {
        let mut a = Access::new(kind, 1000 * 4096, len, &BlockSizes::Fixed(bs), false, 50, stride);
        let mut rng = SmallRng::seed_from_u64(7);
        std::iter::from_fn(|| a.next(&mut rng)).collect()
    }

    #[test]
    fn sequential_covers_region_once() {
        let v = collect(PhaseKind::Write, 16 * 4096, 4096, 1);
        assert_eq!(v.len(), 16);
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, (op, o, l))| *op == Op::Write && *o == 1000 * 4096 + i as u64 * 4096 && *l == 4096));
    }

    #[test]
    fn holes_zones_and_a_byte_count_per_pass_place_sequential_io_as_fio_does() {
        let k = 4096;
        let offs = |a: Access| -> Vec<u64> {
            let mut a = a;
            let mut rng = SmallRng::seed_from_u64(7);
            std::iter::from_fn(|| a.next(&mut rng)).map(|x| x.1 / k).collect()
        };
        let seq = || Access::new(PhaseKind::Write, 0, 16 * k, &BlockSizes::Fixed(k), false, 50, 1);
        // rw=write:8k with bs=4k: every third block, round the region until 16 blocks moved.
        let thirds: Vec<u64> = [0, 3, 6, 9, 12, 15].repeat(3)[..16].to_vec();
        assert_eq!(offs(seq().with_hole(2 * k)), thirds);
        // zonesize=8k, zoneskip=4k (zonerange = zonesize): two blocks, one left out.
        let z = Strided {
            size: 2 * k,
            range: 2 * k,
            skip: k,
        };
        assert_eq!(
            offs(seq().with_strided(Some(z))),
            vec![0, 1, 3, 4, 6, 7, 9, 10, 12, 13, 15, 0, 1, 3, 4, 6]
        );
        // zonerange=12k: the next zone starts 12k + skip on.
        let z = Strided {
            size: 2 * k,
            range: 3 * k,
            skip: k,
        };
        assert_eq!(
            offs(seq().with_strided(Some(z)).with_pass_bytes(Some(8 * k))),
            vec![0, 1, 4, 5, 8, 9, 12, 13]
        );
        // io_size twice the region: round it twice; half of it: stop half way.
        assert_eq!(
            offs(seq().with_pass_bytes(Some(32 * k))),
            (0..16).chain(0..16).collect::<Vec<_>>()
        );
        assert_eq!(offs(seq().with_pass_bytes(Some(8 * k))), (0..8).collect::<Vec<_>>());
        // io_size with holes wraps: 8 blocks in a region of 16 with two left out after each.
        assert_eq!(
            offs(seq().with_hole(2 * k).with_pass_bytes(Some(8 * k))),
            vec![0, 3, 6, 9, 12, 15, 0, 3]
        );
        // and loops repeat the io_size.
        assert_eq!(offs(seq().with_pass_bytes(Some(2 * k)).with_loops(2)), vec![0, 1, 0, 1]);
        // Random with a map and io_size: every block once, then again.
        let mut a = Access::new(PhaseKind::Randread, 0, 8 * k, &BlockSizes::Fixed(k), false, 50, 1)
            .with_random_map(3)
            .with_pass_bytes(Some(16 * k));
        let mut rng = SmallRng::seed_from_u64(7);
        let v: Vec<u64> = std::iter::from_fn(|| a.next(&mut rng)).map(|x| x.1 / k).collect();
        assert_eq!(v.len(), 16);
        let (mut first, mut second) = (v[..8].to_vec(), v[8..].to_vec());
        first.sort();
        second.sort();
        assert_eq!(first, (0..8).collect::<Vec<_>>());
        assert_eq!(second, first);
    }

    #[test]
    fn backward_reads_from_the_end() {
        let v = collect(PhaseKind::Backread, 4 * 4096, 4096, 1);
        let offs: Vec<u64> = v.iter().map(|x| x.1 - 1000 * 4096).collect();
        assert_eq!(offs, vec![3 * 4096, 2 * 4096, 4096, 0]);
    }

    #[test]
    fn stride_visits_every_record_once() {
        let v = collect(PhaseKind::Strideread, 10 * 4096, 4096, 3);
        let mut recs: Vec<u64> = v.iter().map(|x| (x.1 - 1000 * 4096) / 4096).collect();
        assert_eq!(&recs[..4], &[0, 3, 6, 9]);
        recs.sort();
        assert_eq!(recs, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn random_stays_inside_and_aligned() {
        let v = collect(PhaseKind::Randrw, 64 * 4096, 4096, 1);
        assert_eq!(v.len(), 64);
        assert!(v
            .iter()
            .all(|(_, o, l)| *o >= 1000 * 4096 && o + l <= 1064 * 4096 && o % 4096 == 0));
        let reads = v.iter().filter(|x| x.0 == Op::Read).count();
        assert!(reads > 10 && reads < 54, "{reads} reads of 64 at 50 %");
    }

    #[test]
    fn offsets_beyond_4gib() {
        let mut a = Access::new(PhaseKind::Read, 6 << 30, 8192, &BlockSizes::Fixed(4096), false, 0, 1);
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(a.next(&mut rng).unwrap().1, 6 << 30);
        assert_eq!(a.next(&mut rng).unwrap().1, (6 << 30) + 4096);
        assert!(a.next(&mut rng).is_none());
    }

    #[test]
    fn mix_picks_by_weight() {
        let bs = BlockSizes::Mix(vec![(4096, 3), (65536, 1)]);
        let mut a = Access::new(PhaseKind::Randread, 0, 1 << 30, &bs, true, 100, 1);
        let mut rng = SmallRng::seed_from_u64(3);
        let small = (0..10000).filter(|_| a.next(&mut rng).unwrap().2 == 4096).count();
        assert!((7000..8000).contains(&small), "{small}");
    }

    #[test]
    fn the_random_map_visits_every_block_once_per_pass() {
        let mut a = Access::new(
            PhaseKind::Randwrite,
            4096,
            1000 * 4096,
            &BlockSizes::Fixed(4096),
            false,
            0,
            1,
        )
        .with_loops(2)
        .with_random_map(11);
        let mut rng = SmallRng::seed_from_u64(1);
        let v: Vec<(Op, u64, u64)> = std::iter::from_fn(|| a.next(&mut rng)).collect();
        assert_eq!(v.len(), 2000);
        for pass in v.chunks(1000) {
            let mut offs: Vec<u64> = pass.iter().map(|x| x.1).collect();
            let in_order = offs.windows(2).filter(|w| w[1] == w[0] + 4096).count();
            assert!(in_order < 20, "{in_order} of 1000 in sequence: not a random order");
            offs.sort();
            assert_eq!(offs, (1..=1000).map(|i| i * 4096).collect::<Vec<_>>());
        }
        assert_ne!(v[..1000], v[1000..], "each pass has its own order");
    }

    #[test]
    fn the_random_map_with_mixed_sizes_covers_each_slot_once() {
        let bs = BlockSizes::Mix(vec![(4096, 1), (16384, 1), (65536, 1)]);
        let mut a = Access::new(PhaseKind::Randread, 0, 4096 * 4096, &bs, false, 100, 1).with_random_map(5);
        let mut rng = SmallRng::seed_from_u64(2);
        let mut covered = vec![0u8; 4096];
        let mut n = 0;
        while let Some((_, o, l)) = a.next(&mut rng) {
            assert!((4096..=65536).contains(&l) && l % 4096 == 0);
            for s in o / 4096..(o + l) / 4096 {
                covered[s as usize] += 1;
            }
            n += 1;
        }
        assert!(covered.iter().all(|&c| c == 1), "every 4 KiB slot exactly once");
        assert!(n < 4096 && n > 4096 / 16, "{n} I/Os");
    }

    #[test]
    fn without_the_map_offsets_repeat_and_loops_add_passes() {
        let mut a = Access::new(
            PhaseKind::Randread,
            0,
            1000 * 4096,
            &BlockSizes::Fixed(4096),
            false,
            100,
            1,
        )
        .with_loops(3);
        let mut rng = SmallRng::seed_from_u64(1);
        let v: Vec<u64> = std::iter::from_fn(|| a.next(&mut rng)).map(|x| x.1).collect();
        assert_eq!(v.len(), 3000);
        let distinct: std::collections::BTreeSet<u64> = v[..1000].iter().copied().collect();
        // Drawing 1000 of 1000 with replacement leaves about 1/e of them out.
        assert!((560..700).contains(&distinct.len()), "{}", distinct.len());
        let mut s = Access::new(PhaseKind::Read, 0, 4 * 4096, &BlockSizes::Fixed(4096), false, 0, 1).with_loops(2);
        let offs: Vec<u64> = std::iter::from_fn(|| s.next(&mut rng)).map(|x| x.1 / 4096).collect();
        assert_eq!(offs, vec![0, 1, 2, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn a_sequential_mix_moves_each_direction_from_the_start() {
        let v = collect(PhaseKind::Rw, 64 * 4096, 4096, 1);
        assert_eq!(v.len(), 64, "the pass is the region's size, reads and writes together");
        for op in [Op::Read, Op::Write] {
            let offs: Vec<u64> = v.iter().filter(|x| x.0 == op).map(|x| x.1 - 1000 * 4096).collect();
            assert!(!offs.is_empty());
            assert!(
                offs.iter().enumerate().all(|(i, o)| *o == i as u64 * 4096),
                "{op:?}: {offs:?}"
            );
        }
    }

    /// fio's zoned_abs: 60 % of the I/Os in the first 64 KiB, 40 % in the next 192 KiB, none
    /// in the rest of the 1 MiB region.
    #[test]
    fn absolute_zones_take_their_shares_and_leave_the_rest_alone() {
        let mut a = Access::new(PhaseKind::Randread, 0, 1 << 20, &BlockSizes::Fixed(4096), true, 100, 1)
            .with_absolute_zones(&[(60, 64 << 10), (40, 192 << 10)]);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts = [0u32; 3];
        for _ in 0..20000 {
            let (_, o, l) = a.next(&mut rng).unwrap();
            assert_eq!(o % 4096, 0);
            let z = if o + l <= 64 << 10 {
                0
            } else if o + l <= 256 << 10 {
                1
            } else {
                2
            };
            counts[z] += 1;
        }
        assert_eq!(counts[2], 0, "nothing past the zones: {counts:?}");
        for (c, want) in counts.iter().zip([12000.0, 8000.0]) {
            assert!((*c as f64 - want).abs() < want * 0.05, "{counts:?}");
        }
    }

    #[test]
    fn zoned_offsets_fall_in_their_zones_and_align_as_asked() {
        let mut a = Access::new(
            PhaseKind::Randread,
            0,
            100 * 65536,
            &BlockSizes::Fixed(4096),
            true,
            100,
            1,
        )
        .with_zones(&[(50, 5), (30, 15), (20, 80)])
        .with_align(Some(65536));
        let mut rng = SmallRng::seed_from_u64(9);
        let mut counts = [0u32; 3];
        for _ in 0..20000 {
            let (_, o, l) = a.next(&mut rng).unwrap();
            assert_eq!(o % 65536, 0, "aligned to 64 KiB");
            assert!(o + l <= 100 * 65536);
            let z = match o / 65536 {
                0..=4 => 0,
                5..=19 => 1,
                _ => 2,
            };
            counts[z] += 1;
        }
        for (c, want) in counts.iter().zip([10000.0, 6000.0, 4000.0]) {
            assert!((*c as f64 - want).abs() < want * 0.05, "{counts:?}");
        }
    }

    #[test]
    fn time_based_wraps() {
        let mut a = Access::new(PhaseKind::Read, 0, 8192, &BlockSizes::Fixed(4096), true, 0, 1);
        let mut rng = SmallRng::seed_from_u64(1);
        let offs: Vec<u64> = (0..5).map(|_| a.next(&mut rng).unwrap().1).collect();
        assert_eq!(offs, vec![0, 4096, 0, 4096, 0]);
    }
}
