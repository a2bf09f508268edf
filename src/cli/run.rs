//! The flags of the commands that run I/O or walk a tree: `demo`, `run`, `sweep`, `impact`,
//! `scan`, and the job every one of the first four shares.

use std::path::PathBuf;

use clap::Args;
use storlab_model::run::{parse_tag, Tag};
use storlab_workload::{Job, WorkloadError};

use super::{OutputArgs, SettingsArgs};

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

/// A job: a job file and/or flags, the targets, and what to do with the files. Shared by
/// `run`, `sweep` and `impact`.
#[derive(Args, Debug, Default)]
pub struct JobArgs {
    /// The job file (TOML). Without one, the job comes from the flags.
    #[arg(value_name = "JOB.toml")]
    pub job: Option<PathBuf>,
    /// The job file, as a flag (the same as giving JOB.toml).
    #[arg(long = "job", value_name = "JOB.toml", conflicts_with = "job")]
    pub job_file: Option<PathBuf>,
    /// A target directory, file or (with --allow-device) block device; repeat for several.
    /// Under mpirun (docs/mpi.md) %r in it is the rank and %h the host.
    #[arg(long = "target", value_name = "PATH")]
    pub targets: Vec<PathBuf>,
    /// A phase to run; repeat to run several, in order (write, rewrite, read, reread, randread,
    /// randwrite, randrw, backread, strideread, recrewrite).
    #[arg(long = "phase", value_name = "NAME")]
    pub phases: Vec<String>,
    /// A tag stored with the run, e.g. fs=ext4; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    /// Allow this block device as a target (its contents will be overwritten by write phases).
    #[arg(long = "allow-device", value_name = "DEVICE")]
    pub allow_devices: Vec<PathBuf>,
    /// Keep the files storlab created instead of removing them at the end.
    #[arg(long)]
    pub keep: bool,
    /// Serve live figures for Prometheus at http://ADDR/metrics while this runs (per phase and
    /// target: bytes, operations, a latency histogram; a study's task and progress).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// No status line on stderr (it is drawn only when stderr is a terminal and stdout is not
    /// --json or --csv anyway).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Under mpirun: end every rank's phase when the first rank's is done (each rank's work
    /// until then is what is stored; see docs/mpi.md).
    #[arg(long)]
    pub stonewall: bool,
    #[command(flatten)]
    pub settings: SettingsArgs,
}

impl JobArgs {
    /// The job: the file's (or an empty one), with the flags laid over it.
    pub fn to_job(&self) -> Result<Job, WorkloadError> {
        let job = match self.job.as_ref().or(self.job_file.as_ref()) {
            Some(p) => Job::load(p)?,
            None => Job {
                origin: "command line".into(),
                ..Default::default()
            },
        };
        self.over(job)
    }

    /// `job` (from a file of another kind: a fio job file) with the flags laid over it.
    pub fn over(&self, mut job: Job) -> Result<Job, WorkloadError> {
        let flags = self.settings.to_settings()?;
        job.override_with(&self.targets, &self.phases, &flags)?;
        Ok(job)
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Run a fio job file instead (docs/run.md, "fio job files"): every option storlab cannot
    /// honour is refused by name and line. The flags still override it.
    #[arg(long, value_name = "JOB.fio", conflicts_with_all = ["job", "job_file"])]
    pub fio: Option<PathBuf>,
    /// With --fio: go on without the options storlab cannot honour, and list them.
    #[arg(long = "ignore-unknown", requires = "fio")]
    pub ignore_unknown: bool,
    /// With --fio: print the job as storlab reads it (a storlab job file, TOML; with --json the
    /// job as data) and run nothing.
    #[arg(long = "parse-only", requires = "fio")]
    pub parse_only: bool,
    /// Verify data an earlier run wrote (kept with --keep): its seed from the database, and
    /// --verify on. Blocks it wrote then are checked as this run's own.
    #[arg(long, value_name = "RUN")]
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
