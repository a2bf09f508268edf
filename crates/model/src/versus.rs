//! `storlab compare`: one job run on two targets in turn, round after round, until each figure
//! of each phase is decided — which target is better and by how much, or equivalent within a
//! margin — or the rounds run out; stored as a study of its runs with these parameters.

use serde::{Deserialize, Serialize};

use crate::qualify::Design;

/// A compare as stored: what was asked, how it ended, and a verdict per phase and figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareParams {
    /// The command line.
    pub command: String,
    /// The targets' names, the baseline (A) first.
    pub names: Vec<String>,
    /// The targets, as given.
    pub targets: Vec<String>,
    /// The equivalence margin, a fraction (0.05: ratios between 1/1.05 and 1.05 are
    /// equivalent).
    pub margin: f64,
    /// The sequential design every figure is looked at with.
    pub design: Design,
    /// Rounds run (each one run on each target).
    pub rounds: u32,
    /// Why it stopped: "every figure decided", "--max-repeats", "--max-time", "interrupted",
    /// or the run that failed.
    pub stopped: String,
    /// A verdict per phase and figure, in the job's order.
    pub verdicts: Vec<FigureVerdict>,
    /// What the runs carry that a reader of the verdicts should know (what bounded each side,
    /// the cache, a rate held, a run cut short).
    pub warnings: Vec<String>,
    /// The method, in words.
    pub method: String,
}

/// What a figure's comparison says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// The first target (A) is better: its interval excludes 1 on A's side, and leaves the
    /// margin.
    A,
    /// The second target (B) is better.
    B,
    /// The ratio's interval lies within the margin.
    Equivalent,
    /// Neither, when the rounds ran out.
    Undecided,
}

/// One figure of one phase, compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureVerdict {
    /// The phase: "1 randread".
    pub phase: String,
    /// The figure: "MiB/s", "IOPS", "lat p50", "lat p99".
    pub figure: String,
    /// More is better (throughput) or less (latency).
    pub more_is_better: bool,
    /// What it says.
    pub call: Call,
    /// In words, naming the target: "xfs", "equivalent", "undecided".
    pub verdict: String,
    /// B/A: the geometric mean of the rounds' ratios at the look that decided it (the last
    /// look, when undecided); None before three rounds.
    pub ratio: Option<f64>,
    /// The ratio's repeated confidence interval at that look (two positive bounds).
    pub ci: Option<(f64, f64)>,
    /// Runs on each side at that look.
    pub runs: u32,
    /// The round that decided it.
    pub decided_at: Option<u32>,
    /// Undecided: the smallest difference, in percent, the last look could have told apart from
    /// none (its interval's half width on the ratio).
    pub smallest_detectable_pct: Option<f64>,
    /// Undecided: about how many rounds the design would need, at the spread seen, to tell a
    /// difference of the margin from none.
    pub rounds_for_margin: Option<u32>,
    /// Each round's figure on A, in order (the raw values the verdict is recomputed from).
    pub a: Vec<f64>,
    /// Each round's figure on B.
    pub b: Vec<f64>,
    /// One line: the verdict and the figures that make it.
    pub reading: String,
}
