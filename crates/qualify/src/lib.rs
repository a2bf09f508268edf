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
//! - listing.rs: the qualifications in the database side by side (`results list --kind qualify`).
#![deny(missing_docs)]

pub mod against;
pub mod check;
pub mod listing;
pub mod plan;
pub mod prepare;
pub mod run;
pub mod team;
pub mod verdict;

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

/// What `storlab qualify` was given, as written: its flags, declared here once (the binary
/// flattens them into its command line).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct QualifyFlags {
    /// The qualification plan (TOML; docs/qualify.md). Not needed with --against, which runs
    /// the earlier qualification's plan again.
    #[arg(value_name = "PLAN")]
    pub plan: Option<std::path::PathBuf>,
    /// A target for every job (a directory, a file, or a device with --allow-device); repeat
    /// for several. Replaces the targets the plan's jobs name.
    #[arg(long = "target", value_name = "PATH")]
    pub targets: Vec<std::path::PathBuf>,
    /// A block device the jobs may write to (named again, as for `storlab run`).
    #[arg(long = "allow-device", value_name = "DEVICE")]
    pub allow_devices: Vec<std::path::PathBuf>,
    /// At most this many repetitions of each job (default: the plan's, else 10; at least 3).
    #[arg(long = "max-repeats", value_name = "N")]
    pub max_repeats: Option<u32>,
    /// Stop starting repetitions after this long (e.g. 2h): what is not decided by then stays
    /// UNDECIDED.
    #[arg(long = "max-time", value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Run an earlier qualification's plan again and compare: its study id, a run of it, or
    /// KEY=VALUE (the newest qualification whose runs carry that tag).
    #[arg(long, value_name = "ID|KEY=VALUE")]
    pub against: Option<String>,
    /// A tag stored with every run, e.g. fw=1.3; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = storlab_model::run::parse_tag)]
    pub tags: Vec<storlab_model::run::Tag>,
    /// Keep the files the jobs create.
    #[arg(long)]
    pub keep: bool,
    /// Check the plan (and its baselines) and print what would run; run nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
}
