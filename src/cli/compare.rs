//! The flags of `storlab compare`: the job (flags, a job file, or --fio) as `storlab run` takes
//! it, the two targets, and when to stop.

use std::path::PathBuf;

use clap::Args;

use super::{JobArgs, OutputArgs};

#[derive(Args, Debug)]
pub struct CompareTargetsArgs {
    /// The job, as `storlab run` takes it; its --target given twice names the two targets to
    /// compare, the first the baseline (A): --target ext4=/mnt/a --target xfs=/mnt/b (NAME=
    /// names it in the verdicts and the report; without one the path is its name).
    #[command(flatten)]
    pub job: JobArgs,
    /// Run a fio job file on each target instead (as `storlab run` runs one with --fio).
    #[arg(long, value_name = "JOB.fio", conflicts_with_all = ["job", "job_file"], help_heading = "What to run")]
    pub fio: Option<PathBuf>,
    /// With --fio: go on without the options storlab cannot honour, and list them.
    #[arg(long = "ignore-unknown", requires = "fio", help_heading = "What to run")]
    pub ignore_unknown: bool,
    /// The equivalence margin: B/A within ±MARGIN of 1 is "equivalent" (a difference too small
    /// to matter); a percentage.
    #[arg(long, value_name = "PCT", default_value = "5%", help_heading = "Deciding")]
    pub margin: String,
    /// The confidence of every figure's intervals over all the looks together.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.95, help_heading = "Deciding")]
    pub confidence: f64,
    /// At most this many rounds (a round is one run on each target).
    #[arg(long, value_name = "N", default_value_t = 10, help_heading = "Deciding")]
    pub max_repeats: u32,
    /// Start no round after this long (e.g. 30m, 2h).
    #[arg(long, value_name = "DURATION", help_heading = "Deciding")]
    pub max_time: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}
