//! A job's command-line flags: the job file, targets, phases, tags and what to do with the
//! files ([`JobArgs`]), and the job settings as flags made from their one declaration
//! (`storlab_model::settings::SETTINGS`, [`SettingsArgs`]) so that a flag and its job-file key
//! always mean the same. The binary flattens them into every command that takes a job.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

use std::path::PathBuf;

use storlab_model::run::{parse_tag, Tag};

use crate::{Job, Setting, Settings, WorkloadError, SETTINGS};
use storlab_model::settings::headings::{PACE, WHAT};

/// Where the job runs: its targets, and what becomes of the files.
pub const WHERE: &str = "Where";
/// What is printed and stored beside the figures.
pub const OUTPUT: &str = "Output";

/// A job: a job file and/or flags, the targets, and what to do with the files; the flags of
/// `run`, `sweep` and `impact`, declared here once (the binary flattens them).
#[derive(clap::Args, Debug, Default)]
pub struct JobArgs {
    /// The job file (TOML). Without one, the job comes from the flags.
    #[arg(value_name = "JOB.toml")]
    pub job: Option<PathBuf>,
    /// The job file, as a flag (the same as giving JOB.toml).
    #[arg(long = "job", value_name = "JOB.toml", conflicts_with = "job", help_heading = WHAT)]
    pub job_file: Option<PathBuf>,
    /// A target directory, file or block device (written only with --allow-device); repeat for
    /// several.
    /// Under mpirun (docs/mpi.md) %r in it is the rank and %h the host.
    #[arg(long = "target", value_name = "PATH", help_heading = WHERE)]
    pub targets: Vec<PathBuf>,
    /// A phase to run; repeat to run several, in order (write, rewrite, read, reread, randread,
    /// randwrite, randrw, backread, strideread, recrewrite).
    #[arg(long = "phase", value_name = "NAME", help_heading = WHAT)]
    pub phases: Vec<String>,
    /// The job settings given as flags (each under its heading: what to run, how it runs, how
    /// fast, what to record).
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// A tag stored with the run, e.g. fs=ext4; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag, help_heading = OUTPUT)]
    pub tags: Vec<Tag>,
    /// Allow write phases to write this block device, destroying what it holds (a read needs
    /// no flag), or /dev/null and /dev/zero to be used; repeat for several.
    #[arg(long = "allow-device", value_name = "DEVICE", help_heading = WHERE)]
    pub allow_devices: Vec<PathBuf>,
    /// Write a device even while it is in use — a filesystem on it mounted, a member of md, dm,
    /// btrfs or a zpool, swap — or a file that backs a loop device in use (fio's
    /// allow_mounted_write=1). Without it such a write is refused, naming the use.
    #[arg(long, help_heading = WHERE)]
    pub allow_mounted_write: bool,
    /// Create a target file that does not exist yet (the workers share it; removed at the
    /// end). Without it a target that does not exist is refused: a mistyped path, or a mount
    /// point that is not mounted, would be measured as the filesystem beneath it.
    #[arg(long, help_heading = WHERE)]
    pub create_target: bool,
    /// Keep the files storlab created instead of removing them at the end.
    #[arg(long, help_heading = WHERE)]
    pub keep: bool,
    /// Serve live figures for Prometheus at http://ADDR/metrics while this runs (per phase and
    /// target: bytes, operations, a latency histogram; a study's task and progress).
    #[arg(long, value_name = "ADDR:PORT", help_heading = OUTPUT)]
    pub metrics: Option<String>,
    /// Lock the --metrics endpoint as Prometheus exporters lock theirs: a web configuration file
    /// in the exporter-toolkit's format (tls_server_config: cert_file, key_file; basic_auth_users:
    /// bcrypt hashes). Without it the endpoint is plain HTTP that anyone who reaches it reads.
    #[arg(long, value_name = "FILE", requires = "metrics", help_heading = OUTPUT)]
    pub web_config: Option<PathBuf>,
    /// No status line on stderr (it is drawn only when stderr is a terminal and stdout is not
    /// --json or --csv anyway).
    #[arg(long, short = 'q', help_heading = OUTPUT)]
    pub quiet: bool,
    /// Under mpirun: end every rank's phase when the first rank's is done (each rank's work
    /// until then is what is stored; see docs/mpi.md).
    #[arg(long, help_heading = PACE)]
    pub stonewall: bool,
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

    /// Refuses `--stonewall` outside mpirun (a process alone has no other rank to wait for).
    pub fn alone(&self) -> Result<(), WorkloadError> {
        if self.stonewall {
            return Err(WorkloadError::invalid(
                "--stonewall ends every MPI rank's phase when the first rank's is done",
                "it applies under mpirun or srun (docs/mpi.md)",
            ));
        }
        Ok(())
    }

    /// `job` (from a file of another kind: a fio job file) with the flags laid over it.
    pub fn over(&self, mut job: Job) -> Result<Job, WorkloadError> {
        let flags = self.settings.to_settings()?;
        job.override_with(&self.targets, &self.phases, &flags)?;
        job.create_target |= self.create_target;
        job.allow_mounted_write |= self.allow_mounted_write;
        Ok(job)
    }
}

/// The job settings as flags, one per setting of the one declaration
/// (storlab_model::settings::SETTINGS): the flag is the key with '-' for '_', its help the
/// declaration's, a switch where the setting is one. The values are read by the settings' own
/// readers in [`SettingsArgs::to_settings`], so a flag and its job-file key always mean the same.
#[derive(Debug, Default, Clone)]
pub struct SettingsArgs {
    /// The flags given: each setting and its text.
    given: Vec<(&'static Setting, String)>,
}

impl SettingsArgs {
    /// The flags given, as settings; a refusal names the flag.
    pub fn to_settings(&self) -> Result<Settings, WorkloadError> {
        let mut s = Settings::default();
        for (x, v) in &self.given {
            crate::apply_str(&mut s, x.key, v, &x.flag())?;
        }
        Ok(s)
    }
}

impl FromArgMatches for SettingsArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut s = SettingsArgs::default();
        s.update_from_arg_matches(m)?;
        Ok(s)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for x in SETTINGS {
            if x.is_switch() {
                if m.get_flag(x.key) {
                    self.given.push((x, "true".into()));
                }
            } else if let Some(v) = m.get_one::<String>(x.key) {
                self.given.push((x, v.clone()));
            }
        }
        Ok(())
    }
}

impl Args for SettingsArgs {
    fn augment_args(cmd: Command) -> Command {
        SETTINGS.iter().fold(cmd, |cmd, x| {
            let arg = Arg::new(x.key)
                .long(x.flag().trim_start_matches("--").to_string())
                .help_heading(storlab_model::settings::headings::heading(x.key));
            cmd.arg(if x.is_switch() {
                arg.action(ArgAction::SetTrue).help(x.help)
            } else {
                arg.value_name(x.value)
                    .help(format!("{} (default: {})", x.help, x.default))
            })
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
