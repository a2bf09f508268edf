//! Block sizes: a fixed size, or one drawn from a weighted mix.

use rand::{rngs::SmallRng, Rng};

use crate::plan::BlockSizes;

/// Picks block sizes from a fixed size or a weighted mix.
#[derive(Debug, Clone)]
pub(super) struct SizePicker {
    /// (size, cumulative weight); a single entry for a fixed size.
    pub(super) table: Vec<(u64, u32)>,
    total: u32,
}

impl SizePicker {
    pub(super) fn new(bs: &BlockSizes) -> SizePicker {
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
    pub(super) fn pick(&self, rng: &mut SmallRng) -> u64 {
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
