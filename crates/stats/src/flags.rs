//! What a phase's figures are, where a reader must know it to trust them: flattered by the page
//! cache, held short of its rate, cut short, or bounded by the benchmark's CPU. One list, read
//! by every place that warns (a qualification's criteria, the HTML report of runs and studies).

use storlab_model::env::Environment;
use storlab_model::run::Phase;

use crate::bound::{self, BoundKind};

/// A run held below this share of its target rate fell short of it.
pub const SHORTFALL: f64 = 0.99;

/// One thing a phase's figures are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Flag {
    /// The file set was smaller than 3 × RAM without O_DIRECT: the page cache may have served it.
    Cache,
    /// Held under 99 % of its target rate.
    RateShortfall,
    /// Stopped before its end (Ctrl-C, a failure).
    Interrupted,
    /// The benchmark's CPU bounded it, not the storage.
    CpuBound,
}

impl Flag {
    /// Every flag, in the order they are said.
    pub const ALL: [Flag; 4] = [Flag::Cache, Flag::RateShortfall, Flag::Interrupted, Flag::CpuBound];

    /// What it says.
    pub fn text(self) -> &'static str {
        match self {
            Flag::Cache => "cache? (the file set is smaller than 3 × RAM and ran without O_DIRECT: the page cache may have flattered the figures)",
            Flag::RateShortfall => "rate shortfall (held under 99 % of the target rate)",
            Flag::Interrupted => "interrupted",
            Flag::CpuBound => "cpu-bound (the CPU running the benchmark bounded the figures, not the storage)",
        }
    }

    /// Whether `p` (of a run on `env`) carries it.
    pub fn on(self, p: &Phase, env: &Environment) -> bool {
        match self {
            Flag::Cache => p.cache_flattered,
            Flag::RateShortfall => p
                .result
                .rate
                .as_ref()
                .is_some_and(|r| r.achieved < SHORTFALL * r.target),
            Flag::Interrupted => p.result.interrupted,
            Flag::CpuBound => bound::of(p, env).kind == BoundKind::Cpu,
        }
    }
}
