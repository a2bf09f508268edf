//! A qualification as stored: the plan it ran, the statistical design of each criterion, every
//! repetition's figure and the verdict. `storlab qualify` writes it as a study of kind
//! `qualify` (its runs the study's members); the certificate and `--against` read it back.

use serde::{Deserialize, Serialize};

/// The direction a criterion asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The figure must be at least the threshold.
    AtLeast,
    /// The figure must be at most the threshold.
    AtMost,
}

impl Direction {
    /// "≥" or "≤".
    pub fn symbol(self) -> &'static str {
        match self {
            Direction::AtLeast => "≥",
            Direction::AtMost => "≤",
        }
    }
}

/// A criterion's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Decision {
    /// The interval lies wholly on the side of the threshold the criterion asks for.
    Pass,
    /// It still holds the threshold: more repetitions (or a longer run) would be needed.
    Undecided,
    /// It lies wholly on the other side.
    Fail,
}

impl Decision {
    /// PASS, FAIL, UNDECIDED.
    pub fn word(self) -> &'static str {
        match self {
            Decision::Pass => "PASS",
            Decision::Fail => "FAIL",
            Decision::Undecided => "UNDECIDED",
        }
    }
}

/// A group-sequential design (crates/stats' `sequential`): looks after each repetition from
/// the first look to the last, each look's interval at the nominal level, all of them together
/// covering the mean with the confidence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// The simultaneous coverage over all looks (0.95 for 95 %).
    pub confidence: f64,
    /// The first look, in repetitions.
    pub first_look: u32,
    /// The last: at most this many repetitions.
    pub max_repeats: u32,
    /// Each look's two-sided nominal level.
    pub nominal_alpha: f64,
}

/// What a criterion compares its figure with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "against", rename_all = "snake_case")]
pub enum Reference {
    /// A number the plan gives (the threshold is in the figure's unit).
    Absolute,
    /// Runs stored earlier: the threshold is a ratio of this qualification's mean to theirs.
    Baseline {
        /// How the plan names them (`tag fw=1.2`, `runs 12,13,14`, `study 7`).
        name: String,
        /// Their ids.
        runs: Vec<i64>,
        /// Their figure, one per run.
        values: Vec<f64>,
        /// Their mean's fixed-sample interval at half the criterion's error (Bonferroni).
        interval: (f64, f64),
    },
    /// The job with a background task against the job alone, in interleaved pairs: each
    /// pair's cost in percent (the loss of throughput, or the rise of latency).
    Impact {
        /// The task as given (`btrfs-scrub:/mnt/pool`).
        task: String,
    },
}

/// One criterion, with what was measured and decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    /// 1-based, in the plan's order (a criterion of several points is several).
    pub index: u32,
    /// The job (and point) it is on: "serial write threads=4".
    pub job: String,
    /// As the plan wrote it.
    pub text: String,
    /// Its line in the plan.
    pub line: u32,
    /// The phase it reads: "1 write" (its position and name in the job).
    pub phase: String,
    /// The figure: "MiB/s", "IOPS", "lat p99", "read MiB/s".
    pub figure: String,
    /// The unit of `values`, `observed` and `interval`: "MiB/s", "IOPS", "ms", "%", "× baseline".
    pub unit: String,
    /// At least or at most.
    pub direction: Direction,
    /// The threshold in `unit` (a ratio for a baseline, a percentage for an impact).
    pub threshold: f64,
    /// What it is compared with.
    pub reference: Reference,
    /// The design its looks follow.
    pub design: Design,
    /// Decided on the logarithmic scale (a latency: its geometric mean; against a baseline, a
    /// ratio of geometric means).
    #[serde(default)]
    pub log_scale: bool,
    /// The figure of each repetition, in order (for an impact, each pair's cost in percent).
    pub values: Vec<f64>,
    /// The runs behind each value (two for an impact's pair: idle, then loaded).
    pub runs: Vec<Vec<i64>>,
    /// The mean of the values (for a baseline: the ratio of the means).
    pub observed: Option<f64>,
    /// The repeated confidence interval it reached (for a baseline: of the ratio).
    pub interval: Option<(f64, f64)>,
    /// PASS, FAIL or UNDECIDED.
    pub decision: Decision,
    /// The repetitions it took to decide (None: undecided).
    pub decided_at: Option<u32>,
    /// What its figures are, where a reader must know it to trust the verdict: runs the page
    /// cache may have flattered ("cache?"), runs held short of their rate, runs interrupted —
    /// each with how many of the criterion's runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Why a qualification stopped repeating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stopped {
    /// Every criterion was decided.
    Decided,
    /// A job reached its largest number of repetitions with a criterion undecided.
    MaxRepeats,
    /// The time allowed ran out.
    MaxTime,
    /// Ctrl-C.
    Interrupted,
    /// A run of a job failed (its error is the command's).
    Failed,
}

impl Stopped {
    /// In words.
    pub fn words(self) -> &'static str {
        match self {
            Stopped::Decided => "every criterion decided",
            Stopped::MaxRepeats => "the largest number of repetitions reached",
            Stopped::MaxTime => "the time allowed ran out",
            Stopped::Interrupted => "interrupted",
            Stopped::Failed => "a run failed",
        }
    }
}

/// A qualification: its plan, how it ran and every criterion's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct QualifyParams {
    /// The plan's name.
    pub plan_name: String,
    /// Where the plan was read from.
    pub plan_path: String,
    /// The plan as it was, whole (what `--against` runs again, and what the certificate shows).
    pub plan_text: String,
    /// The targets given on the command line.
    pub targets: Vec<String>,
    /// The command line.
    pub command: String,
    /// The earlier qualification this one is compared with (`--against`).
    pub against: Option<i64>,
    /// Why it stopped.
    pub stopped: Option<Stopped>,
    /// Seconds it ran.
    pub seconds: f64,
    /// The method in words, with its sources (for the certificate).
    pub method: String,
    /// Every criterion.
    pub criteria: Vec<Criterion>,
}

impl QualifyParams {
    /// The whole verdict: FAIL when a criterion failed, else UNDECIDED when one is, else PASS.
    pub fn outcome(&self) -> Decision {
        self.criteria
            .iter()
            .map(|c| c.decision)
            .max()
            .unwrap_or(Decision::Undecided)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_outweighs_an_undecided_which_outweighs_a_pass() {
        let c = |d| Criterion {
            index: 1,
            job: String::new(),
            text: String::new(),
            line: 1,
            phase: String::new(),
            figure: String::new(),
            unit: String::new(),
            direction: Direction::AtLeast,
            threshold: 0.0,
            reference: Reference::Absolute,
            design: Design {
                confidence: 0.95,
                first_look: 3,
                max_repeats: 10,
                nominal_alpha: 0.01,
            },
            log_scale: false,
            values: Vec::new(),
            runs: Vec::new(),
            observed: None,
            interval: None,
            decision: d,
            decided_at: None,
            warnings: Vec::new(),
        };
        let q = |ds: &[Decision]| QualifyParams {
            criteria: ds.iter().map(|d| c(*d)).collect(),
            ..Default::default()
        };
        use Decision::*;
        assert_eq!(q(&[Pass, Pass]).outcome(), Pass);
        assert_eq!(q(&[Pass, Undecided]).outcome(), Undecided);
        assert_eq!(q(&[Undecided, Fail, Pass]).outcome(), Fail);
        assert_eq!(serde_json::to_value(Fail).unwrap(), "FAIL");
    }
}
