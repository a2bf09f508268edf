//! `storlab qualify`: acceptance tests for storage with a verdict statistics can defend. A plan
//! (TOML) names jobs — storlab job files, fio job files, IOzone command lines, settings in the
//! plan itself, each at one point or several (`vary`), alone or against a background task —
//! and criteria on their figures: absolute thresholds, ratios to a baseline stored in the
//! database, or the cost of a task to the job. The jobs are repeated, interleaved, only as often
//! as needed: after each repetition every criterion's repeated confidence interval (crates/
//! stats' `sequential`) is looked at, and a criterion is decided at the first look whose
//! interval lies wholly on one side of its threshold; a job stops when all its criteria are
//! decided, or at the largest number of repetitions or the time allowed, leaving what is not
//! decided UNDECIDED with the interval it reached.
//!
//! - plan.rs: the plan file read whole, every mistake named with its line;
//! - check.rs: a criterion's text (`randread IOPS >= 20000`) and the figures it can name;
//! - prepare.rs: the plan's jobs as storlab jobs, each checked as `storlab run` checks it, and
//!   each criterion against what its job measures and the baselines in the database — every
//!   refusal before anything runs;
//! - verdict.rs: a criterion's values to its observed figure, interval and decision;
//! - run.rs: the repetitions in rounds, the stopping, the qualification stored as a study of
//!   kind `qualify` with every run behind it;
//! - against.rs: an earlier qualification's plan run again and compared (`--against`);
//! - team.rs: the same under mpirun, each repetition one run of every rank, rank 0 deciding;
//! - listing.rs: the qualifications in the database side by side (`results list --kind qualify`);
//! - versus.rs: `storlab compare`, one job on two targets in rounds until each figure is decided
//!   (which is better and by how much, or equivalent within a margin), stored as a study of kind
//!   `compare`; versus_warnings.rs what its runs carry that the verdicts' reader must know;
//! - flags.rs: `storlab qualify`'s flags, declared once, and what they ask: the plan (a file's, or
//!   with `--against` an earlier qualification's) prepared with its baselines, how the runs are made.
#![deny(missing_docs)]

pub mod against;
pub mod check;
pub mod flags;
pub mod listing;
pub mod plan;
pub mod prepare;
pub mod run;
pub mod team;
pub mod verdict;
pub mod versus;
mod versus_warnings;
mod warnings;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum QualifyError {
    /// The user's input (the plan, a flag, a baseline that is not there): nothing was run or
    /// stored. The message names the plan's line.
    #[error("{0}")]
    Input(String),
    /// The results database.
    #[error(transparent)]
    Store(#[from] storlab_store::StoreError),
    /// A run of a job failed.
    #[error("{0}")]
    Run(String),
}

/// A refusal of the user's input.
pub(crate) fn input(msg: impl Into<String>) -> QualifyError {
    QualifyError::Input(msg.into())
}

pub use flags::QualifyFlags;
