//! The flags of the commands that run I/O or walk a tree: `demo`, `run`, `sweep`, `impact`,
//! `scan`, and the job every one of the first four shares.

use std::path::PathBuf;

use clap::Args;
use storlab_model::run::{parse_tag, Tag};

use super::OutputArgs;
pub use storlab_workload::flags::JobArgs;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// The directory to qualify (default: a new temporary directory under $TMPDIR or /tmp).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// No status line on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Run a fio job file instead (docs/run.md, "fio job files"): every option storlab cannot
    /// honour is refused by name and line. The flags still override it.
    #[arg(long, value_name = "JOB.fio", conflicts_with_all = ["job", "job_file"], help_heading = "What to run")]
    pub fio: Option<PathBuf>,
    /// With --fio: go on without the options storlab cannot honour, and list them.
    #[arg(long = "ignore-unknown", requires = "fio", help_heading = "What to run")]
    pub ignore_unknown: bool,
    /// Print the job as storlab reads it, flags laid over (a storlab job file, TOML; with --json
    /// the job as data), and run nothing.
    #[arg(long = "parse-only", help_heading = "What to run")]
    pub parse_only: bool,
    /// Verify data an earlier run wrote (kept with --keep): its seed from the database, and
    /// --verify on. Blocks it wrote then are checked as this run's own.
    #[arg(long, value_name = "RUN", help_heading = "What to record")]
    pub verify_against: Option<i64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The parameter to vary and its points: a list (bs=4k,64k,1m) or a range, doubling by
    /// default (threads=1..64), multiplying (iodepth=1..64x4) or adding (rwmix=0..100+25).
    /// Repeat to vary several parameters together (every combination is a point; with size and
    /// bs both varied, points whose block exceeds the file are left out, as in IOzone's matrix).
    #[arg(long, value_name = "KEY=VALUES", required = true)]
    pub vary: Vec<String>,
    #[command(flatten)]
    pub job: JobArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ImpactArgs {
    #[command(flatten)]
    pub study: storlab_impact::request::Flags,
    #[command(flatten)]
    pub job: JobArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    #[command(flatten)]
    pub walk: storlab_scan::ScanFlags,
    /// A tag stored with the scan, e.g. site=bnl; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    #[command(flatten)]
    pub output: OutputArgs,
}
