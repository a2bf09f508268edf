//! Access patterns: which offset, length and direction comes next for one worker.
//!
//! A generator is a few integers and a pseudo-random generator; `next` does no allocation and
//! no system call, so it costs a few nanoseconds per I/O.

use rand::{rngs::SmallRng, Rng};

use crate::backend::Op;
use crate::plan::{BlockSizes, PhaseKind};

/// Picks block sizes from a fixed size or a weighted mix.
#[derive(Debug, Clone)]
struct SizePicker {
    /// (size, cumulative weight); a single entry for a fixed size.
    table: Vec<(u64, u32)>,
    total: u32,
}

impl SizePicker {
    fn new(bs: &BlockSizes) -> SizePicker {
        match bs {
            BlockSizes::Fixed(b) => SizePicker {
                table: vec![(*b, 1)],
                total: 1,
            },
            BlockSizes::Mix(m) => {
                let mut acc = 0;
                let table = m
                    .iter()
                    .map(|(b, w)| {
                        acc += *w;
                        (*b, acc)
                    })
                    .collect();
                SizePicker {
                    table,
                    total: acc.max(1),
                }
            }
        }
    }

    #[inline]
    fn pick(&self, rng: &mut SmallRng) -> u64 {
        if self.table.len() == 1 {
            return self.table[0].0;
        }
        let r = rng.gen_range(0..self.total);
        self.table
            .iter()
            .find(|(_, c)| r < *c)
            .map(|(b, _)| *b)
            .unwrap_or(self.table[0].0)
    }
}

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
    /// Sequential: next offset. Backward: end of the next block.
    pos: u64,
    /// Size-based random and same-record phases: bytes still to issue.
    remaining: u64,
    /// Stride read: the pass (starting record) and records visited.
    stride_pass: u64,
    stride_done: u64,
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
            remaining: len,
            stride_pass: 0,
            stride_done: 0,
        }
    }

    /// The next I/O: (direction, offset, length), or None when a size-based phase is done.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> Option<(Op, u64, u64)> {
        let len = self.sizes.pick(rng);
        let op = match self.kind {
            PhaseKind::Randrw => {
                if rng.gen_range(0..100u8) < self.read_pct {
                    Op::Read
                } else {
                    Op::Write
                }
            }
            k if k.writes() => Op::Write,
            _ => Op::Read,
        };
        let offset = match self.kind {
            PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread => {
                if self.pos + len > self.end {
                    if !self.time_based {
                        return None;
                    }
                    self.pos = self.start;
                }
                let o = self.pos;
                self.pos += len;
                o
            }
            PhaseKind::Backread => {
                if self.pos < self.start + len {
                    if !self.time_based {
                        return None;
                    }
                    self.pos = self.end;
                }
                self.pos -= len;
                self.pos
            }
            PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw => {
                if !self.time_based {
                    if self.remaining < len {
                        return None;
                    }
                    self.remaining -= len;
                }
                let slots = (self.end - self.start - len) / self.align + 1;
                self.start + rng.gen_range(0..slots) * self.align
            }
            PhaseKind::Recrewrite => {
                if !self.time_based {
                    if self.remaining < len {
                        return None;
                    }
                    self.remaining -= len;
                }
                self.start
            }
            PhaseKind::Strideread => {
                // Records pass, pass + stride, pass + 2·stride, ...; then the next pass, until
                // every record was read once (IOzone's stride read, -j).
                let records = (self.end - self.start) / len;
                if records == 0 {
                    return None;
                }
                if self.stride_done >= records {
                    if !self.time_based {
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
                self.start + record * len
            }
        };
        Some((op, offset, len))
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
    fn time_based_wraps() {
        let mut a = Access::new(PhaseKind::Read, 0, 8192, &BlockSizes::Fixed(4096), true, 0, 1);
        let mut rng = SmallRng::seed_from_u64(1);
        let offs: Vec<u64> = (0..5).map(|_| a.next(&mut rng).unwrap().1).collect();
        assert_eq!(offs, vec![0, 4096, 0, 4096, 0]);
    }
}
