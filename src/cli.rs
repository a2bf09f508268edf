//! The command line, defined once. The job settings' flags come from their one declaration
//! (crates/model/src/settings.rs) through [`SettingsArgs`]; IOzone's flags are read by clap in
//! crates/workload (its own spellings kept); everything else is declared here.

use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches, Parser, Subcommand};
use storlab_model::run::{parse_tag, RunKind, Tag};
use storlab_workload::{Job, Setting, Settings, WorkloadError, SETTINGS};

/// Qualify, compare and keep watch on disk storage.
#[derive(Parser, Debug)]
#[command(name = "storlab", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Run a short qualification (under a minute) of a temporary directory and store it.
    Demo(DemoArgs),
    /// Run a job file, or a job given by flags, and store the results.
    Run(Box<RunArgs>),
    /// Usage and age report of whole filesystems: data, files, and what was not accessed for
    /// longer than given ages (candidates for a cheaper tier).
    Scan(ScanArgs),
    /// IOzone's command line on storlab's engine: `storlab iozone -s 16g -r 64k -i 0 -i 1 -t 3
    /// -F /a /b /c -R -b out.xlsx`, reported in IOzone's layout plus latency percentiles.
    /// storlab's own options: --db PATH, --dir DIR, --tag KEY=VALUE, --json. `-h` lists the flags.
    #[command(disable_help_flag = true)]
    Iozone {
        /// IOzone's flags.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// The same phases at every point of one varied parameter (threads, block size, queue
    /// depth, read percentage, ...), stored as one study: storlab sweep --vary threads=1..64
    /// --target /data --phase write --phase read --phase randread --phase randrw --bs 256k
    Sweep(Box<SweepArgs>),
    /// What a background task (scrub, verify, rebuild, any command) costs the users: the job N
    /// times idle and N times with the task running, interleaved, impact in % with 95 %
    /// intervals (and, with --pool-servers and --budget, how many servers may run it at once);
    /// --reverse: what the users cost the task; --held: the job held at its rate through the
    /// task(s), with the deficit and its repayment. Tasks: btrfs-scrub:MOUNT[@SPEED],
    /// btrfs-replace:MOUNT:DEVID:NEWDEV, md-check:/dev/mdN, md-repair:/dev/mdN, zfs-scrub:POOL,
    /// tw_cli-verify:/cX/uY, storcli-cc:/cX/vY, cmd:NAME (the job file's [task.NAME]),
    /// cmd:START|STATUS|STOP.
    Impact(Box<ImpactArgs>),
    /// Metadata workloads (mdtest's phases): workers making, looking at and removing files and
    /// directories in a tree, each operation timed and checked, stored as a run of kind meta:
    /// storlab meta --target /mnt/fs --threads 4 --files-per-thread 10000 --tree 2,10
    /// --phase mkdir,create,stat,read,remove,rmdir --file-size 4k
    Meta(Box<MetaArgs>),
    /// Read back stored results.
    #[command(subcommand)]
    Results(ResultsCmd),
    /// The results database itself: its schema, what is in it, copying between databases
    /// (a host's SQLite file into a shared PostgreSQL database, a spool file after a lost
    /// server, and back).
    #[command(subcommand)]
    Db(DbCmd),
    /// One self-contained HTML file (inline SVG plots, no script, no fetch) for runs and
    /// comparisons: environment, tables, throughput, IOPS and latency over time, bar charts
    /// with 95 % intervals; like plots share one scale.
    Report(ReportArgs),
    /// The data challenge: writer threads create files in pools, reader threads read, verify
    /// and delete them, a catalogue in the results database keeps every file's life, for hours
    /// or days, through planned faults, on one host (`run`) or many (`create`, then `agent` on
    /// each client against a PostgreSQL database).
    #[command(subcommand)]
    Challenge(ChallengeCmd),
    /// Watch pools of disks and filesystems for days: samples every interval into the
    /// database, long-term averages, retention, and Prometheus metrics (--metrics ADDR).
    #[command(subcommand)]
    Monitor(MonitorCmd),
    /// The verify scheduler: each pool's servers verify k at a time within the pool's budget,
    /// through slot leases in a shared database (plan, agent, status, events).
    #[command(subcommand)]
    Sched(SchedCmd),
    /// The chance of data loss of an array and a fleet of them in a year (a Markov model with
    /// latent sector errors, solved exactly), and how it changes with the verify interval and
    /// the scheduler's k.
    Risk(Box<RiskArgs>),
    /// Print the completion script of a shell (bash, zsh, fish, elvish, powershell): storlab
    /// completions bash > /etc/bash_completion.d/storlab
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (storlab.1 and one per subcommand) into a directory (the packages
    /// ship them).
    #[command(hide = true)]
    Manpages {
        /// The directory.
        dir: std::path::PathBuf,
    },
}

/// The results database.
#[derive(Args, Debug, Clone, Default)]
pub struct DbArgs {
    /// The results database: a SQLite file, or a PostgreSQL database shared by many hosts
    /// (postgres://user@host/dbname, or libpq keywords 'host=… dbname=…'; PGHOST, PGUSER,
    /// PGPASSWORD, ~/.pgpass and sslmode work as with psql). Default: $STORLAB_DB, else
    /// ~/.local/share/storlab/results.db.
    #[arg(long, value_name = "FILE|URL")]
    pub db: Option<String>,
}

impl DbArgs {
    /// The database named by --db, else $STORLAB_DB, else the default file.
    pub fn target(&self) -> anyhow::Result<storlab_store::DbTarget> {
        let (given, from) = match (&self.db, std::env::var("STORLAB_DB")) {
            (Some(d), _) => (d.clone(), "--db"),
            (None, Ok(d)) if !d.is_empty() => (d, "STORLAB_DB"),
            _ => {
                return Ok(storlab_store::DbTarget::Sqlite(storlab_store::default_path(
                    dirs::data_dir(),
                )))
            }
        };
        storlab_store::DbTarget::parse(&given).map_err(|e| crate::usage(format!("{from}: {e}")))
    }
}

/// Where results go and how they are printed.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Print one JSON document on stdout (messages go to stderr).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV on stdout.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Runs to report.
    #[arg(value_name = "ID")]
    pub ids: Vec<i64>,
    /// A group to compare (run ids such as 3,4,5 or tags such as fs=ext2); give two or more.
    #[arg(long = "compare", value_name = "GROUP")]
    pub compare: Vec<String>,
    /// Compare runs whose workloads differ.
    #[arg(long = "allow-different")]
    pub allow_different: bool,
    /// A study to report (an IOzone automatic mode, a sweep, an impact study); repeatable.
    #[arg(long = "study", value_name = "ID")]
    pub studies: Vec<i64>,
    /// A data challenge to report (its throughput over time, total and per pool, its events
    /// marked, its account and statistics); repeatable.
    #[arg(long = "challenge", value_name = "ID")]
    pub challenges: Vec<i64>,
    /// The monitor's record of a window, FROM..TO (each a date or time in UTC, or a span back
    /// from now: --monitor 2d..now): per pool throughput, latency and utilisation over time on
    /// shared scales, with the events marked (the monitor's, runs, studies' tasks, challenges'
    /// faults).
    #[arg(long = "monitor", value_name = "FROM..TO")]
    pub monitor: Option<String>,
    /// With --monitor: this host's monitors (default: this host; `all` for every host).
    #[arg(long = "monitor-host", value_name = "HOST", requires = "monitor")]
    pub monitor_host: Option<String>,
    /// Give every plot its own scale.
    #[arg(long = "free-scales")]
    pub free_scales: bool,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "report.html")]
    pub file: PathBuf,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// The directories to scan (one row each, unless --group-by says otherwise).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Age thresholds, comma-separated (e.g. 60d,160d; units s m h d w).
    #[arg(long, value_name = "AGES", default_value = "60d,160d")]
    pub age: String,
    /// Rows: path (one per PATH), top (one per directory just below each PATH), depth:N, user
    /// (one per owning user under each PATH, names from the system) or group.
    #[arg(long = "group-by", value_name = "HOW", default_value = "path")]
    pub group_by: String,
    /// Leave out entries matching GLOB (not counted, not descended into; counted as excluded):
    /// a GLOB without / matches a name at any depth (.snapshot, *.tmp), one with / a whole path
    /// (/data/*/scratch); repeatable.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Show, per row, the change in data, files and cold data since an earlier scan of the
    /// same PATHs: its run id, or `last` for the newest such scan in the database.
    #[arg(long = "against", value_name = "ID|last")]
    pub against: Option<String>,
    /// Which time gives a file's age: atime (last access), mtime (last change), or max.
    #[arg(long, value_name = "BASIS", default_value = "atime")]
    pub time: String,
    /// Descend into other filesystems mounted below a PATH.
    #[arg(long = "cross-mounts")]
    pub cross_mounts: bool,
    /// List the N directories holding the most data older than the first threshold.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub top: usize,
    /// Walker threads (default: twice the CPUs).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// A tag stored with the scan, e.g. site=bnl; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct MetaArgs {
    /// The other metadata measurements.
    #[command(subcommand)]
    pub what: Option<MetaCmd>,
    /// The directory to work in: storlab makes its own directory in it (storlab-meta-PID) and
    /// removes it at the end, also after Ctrl-C.
    #[arg(long, value_name = "DIR", required = true)]
    pub target: Option<PathBuf>,
    /// Workers (threads), started together for each phase.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: u32,
    /// Items (files, and directories for mkdir/rmdir) each worker makes.
    #[arg(long = "files-per-thread", value_name = "N", default_value_t = 1000)]
    pub files_per_thread: u64,
    /// End the making phases (mkdir, create) after this long (mdtest's stonewall timer); the
    /// later phases work on what was made.
    #[arg(long, value_name = "DURATION")]
    pub runtime: Option<String>,
    /// Phases in order, comma-separated or repeated: mkdir, create, stat, read, write, rename,
    /// link, remove, rmdir (default mkdir,create,stat,remove,rmdir).
    #[arg(long = "phase", value_name = "NAMES")]
    pub phases: Vec<String>,
    /// The tree the items are spread over: DEPTH,BRANCH (mdtest's -z and -b; 0,1 is one
    /// directory).
    #[arg(long, value_name = "DEPTH,BRANCH", default_value = "0,1")]
    pub tree: String,
    /// A tree for each worker (mdtest's -u) instead of one shared by all.
    #[arg(long = "unique-dir", conflicts_with = "shared_dir")]
    pub unique_dir: bool,
    /// One tree shared by all workers (the default).
    #[arg(long = "shared-dir")]
    pub shared_dir: bool,
    /// Bytes written to each file by create and write, read back and checked by read.
    #[arg(long = "file-size", value_name = "SIZE", default_value = "0")]
    pub file_size: String,
    /// fsync each file before closing it, and its directory after each change.
    #[arg(long)]
    pub sync: bool,
    /// Leave the tree in place at the end.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub record: MetaRecordArgs,
}

/// What every `storlab meta` command stores its runs with, and how it shows them: shared by
/// `meta`, `meta walk` and `meta untar`.
#[derive(Args, Debug)]
pub struct MetaRecordArgs {
    /// A tag stored with the runs, e.g. fs=lustre; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    /// No status line on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Subcommand, Debug)]
pub enum MetaCmd {
    /// Time a walk of every entry below DIR (storlab scan's walker; seed 004's "du over a
    /// million files"), and with --compare-du `du -s DIR` in the same run; stored as a run of
    /// kind meta.
    Walk(WalkArgs),
    /// Extract N copies of an archive at once, for each N of --concurrency (seed 004's
    /// concurrent untars of a kernel source tree): time, entries/s and MiB/s against the
    /// concurrency, stored as one study; --generate kernel-like makes the archive.
    Untar(UntarArgs),
}

#[derive(Args, Debug)]
pub struct UntarArgs {
    /// The directory to extract in: storlab makes its own directory in it (storlab-untar-PID)
    /// and removes it at the end.
    #[arg(long, value_name = "DIR")]
    pub target: PathBuf,
    /// The archive: .tar, .tar.gz or .tgz, .tar.xz or .txz.
    #[arg(long, value_name = "FILE", conflicts_with = "generate")]
    pub archive: Option<PathBuf>,
    /// Make the archive instead, in storlab's directory: kernel-like (a kernel source tree's
    /// shape, docs/meta.md).
    #[arg(long, value_name = "SHAPE")]
    pub generate: Option<String>,
    /// Files in the generated archive (the seed's kernel archive had about 30,000).
    #[arg(long, value_name = "N", default_value_t = 30_000)]
    pub files: u64,
    /// Copies extracted at once, a point of the study each.
    #[arg(long, value_name = "N,N,...", default_value = "1,2,4,8,16")]
    pub concurrency: String,
    /// fsync each file once it is extracted.
    #[arg(long)]
    pub fsync: bool,
    /// Leave storlab's directory with the archive it made and the last point's copies.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub record: MetaRecordArgs,
}

#[derive(Args, Debug)]
pub struct WalkArgs {
    /// The directory to walk.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Walker threads (default: twice the CPUs, as storlab scan).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Also time `du -s DIR`, as a second phase of the run.
    #[arg(long = "compare-du")]
    pub compare_du: bool,
    /// Drop the kernel's page, dentry and inode caches before each walk (needs root), so that
    /// the walk reads the device rather than memory.
    #[arg(long)]
    pub cold: bool,
    #[command(flatten)]
    pub record: MetaRecordArgs,
}

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
#[derive(Args, Debug)]
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
    /// The background task, KIND:ARGS. With --held, repeat it for tasks in sequence (a second
    /// failure while the first rebuild runs).
    #[arg(long, value_name = "KIND:ARGS", required = true)]
    pub task: Vec<String>,
    /// Repetitions of each side (idle and with the task).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeat: u32,
    /// When the task ends before a repetition with it does: discard that repetition, or
    /// restart the task and run the repetition again (once).
    #[arg(long = "on-early-finish", value_name = "discard|restart", default_value = "restart")]
    pub on_early_finish: String,
    /// The cost to the task instead (RAL's loopy.sh): the task's duration with the machine idle
    /// and with the job running in a loop until the task finishes.
    #[arg(long, conflicts_with = "held")]
    pub reverse: bool,
    /// Hold the job at its rate (--rate) through the task(s) (IBM's rebuild runs): per interval
    /// the achieved rate, latency and the deficit, and when the deficit was repaid.
    #[arg(long)]
    pub held: bool,
    /// With --held: how long the job runs before the first task starts.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub before: String,
    /// With --held: how long the job runs on after the last task ended.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub after: String,
    /// With --held and several tasks: start each one this long after the one before it
    /// started (default: when the one before it ended).
    #[arg(long, value_name = "DURATION")]
    pub stagger: Option<String>,
    /// How long a task may run before storlab gives up on it (e.g. 2h).
    #[arg(long = "task-timeout", value_name = "DURATION", default_value = "24h")]
    pub task_timeout: String,
    /// Servers in the pool: project the pool-wide impact of k servers running the task at once.
    #[arg(long = "pool-servers", value_name = "S")]
    pub pool_servers: Option<u32>,
    /// The pool-wide loss allowed, in percent (e.g. 5%), for the projection.
    #[arg(long, value_name = "PERCENT", requires = "pool_servers")]
    pub budget: Option<String>,
    /// With --reverse and --pool-servers: the cost-to-the-users study whose impact sets k
    /// (default: the newest of the same task in the database).
    #[arg(long = "impact-study", value_name = "ID")]
    pub impact_study: Option<i64>,
    #[command(flatten)]
    pub job: JobArgs,
    #[command(flatten)]
    pub output: OutputArgs,
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
            storlab_workload::apply_str(&mut s, x.key, v, &x.flag())?;
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
            let arg = Arg::new(x.key).long(x.flag().trim_start_matches("--").to_string());
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

/// Which runs `results list` shows.
#[derive(Args, Debug, Default)]
pub struct ListFilter {
    /// Only runs on this host.
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs whose job name contains this.
    #[arg(long)]
    pub job: Option<String>,
    /// Only runs with this tag (repeatable: all must match).
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    /// Only runs of this kind: run, demo, iozone, sweep, scan, import, impact-idle, ...
    #[arg(long, value_parser = |s: &str| s.parse::<RunKind>())]
    pub kind: Option<RunKind>,
    /// Only runs started on or after this: a date (2026-11-21, its midnight UTC) or a time in
    /// UTC (2026-11-21T08:00:00, a Z allowed).
    #[arg(long, value_name = "DATE", value_parser = |s: &str| storlab_store::normalize_time(s))]
    pub since: Option<String>,
    /// Only runs started before this (a date or a UTC time, as --since).
    #[arg(long, value_name = "DATE", value_parser = |s: &str| storlab_store::normalize_time(s))]
    pub until: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum DbCmd {
    /// Bring the database's schema to this storlab's version (every command does it on open;
    /// this does only that, for an administrator preparing a shared database).
    Migrate {
        #[command(flatten)]
        db: DbArgs,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// What the database is: where, its schema version, how many runs and studies, and any
    /// spool files waiting to be copied in.
    Info {
        #[command(flatten)]
        db: DbArgs,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Copy every run and study of one database into another. Runs keep their identity (a
    /// UUID): copying twice adds nothing, and a finished run replaces its unfinished record
    /// (a spool file after a lost server). Ids may differ between the two.
    Copy {
        /// The database to copy from (a file, or a postgres:// URL).
        #[arg(long, value_name = "FILE|URL")]
        from: String,
        /// The database to copy into (created when it is a new file).
        #[arg(long, value_name = "FILE|URL")]
        to: String,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum ResultsCmd {
    /// List stored runs, newest first.
    List {
        /// How many runs to list.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        filter: ListFilter,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Tag a run: storlab results tag 12 fs=ext4 raid=6
    Tag {
        /// The run's id.
        id: i64,
        /// KEY=VALUE pairs.
        #[arg(value_name = "KEY=VALUE", value_parser = parse_tag, required = true)]
        tags: Vec<Tag>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Remove tags from a run: storlab results untag 12 fs
    Untag {
        /// The run's id.
        id: i64,
        /// Tag keys.
        #[arg(value_name = "KEY", required = true)]
        keys: Vec<String>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Remove runs and everything stored with them (asks first, unless --yes).
    Rm {
        /// The runs' ids.
        #[arg(required = true)]
        ids: Vec<i64>,
        /// Do not ask.
        #[arg(long)]
        yes: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Export runs' tables (phases, interval samples, environment; a scan's rows) as CSV, JSON,
    /// Markdown or an XLSX workbook (one sheet per table, numbers as numbers).
    Export {
        /// The runs' ids.
        #[arg(required = true)]
        ids: Vec<i64>,
        /// csv, json, markdown or xlsx.
        #[arg(long, value_name = "FORMAT")]
        format: String,
        /// Write to this file instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        file: Option<PathBuf>,
        /// Leave out the interval samples.
        #[arg(long = "no-samples")]
        no_samples: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Import what fio (JSON or json+ wherever it sits in the file, terse v3-v5, normal text),
    /// IOzone (its table, -R, -t, -O, -+u; pasted indented; several runs in one file), IOR
    /// (text, JSON) and mdtest (summary) printed, as stored runs. A file is stored whole or not
    /// at all; a directory imports every file below it, one transaction per file, a line per
    /// file, and exits 1 if any file was not imported. Figures the tool did not print are
    /// stored as not measured ("—").
    Import {
        /// The file, or a directory of files.
        #[arg(value_name = "FILE|DIR")]
        file: PathBuf,
        /// The host the jobs ran on, when the file does not say (client/server output does).
        #[arg(long)]
        host: Option<String>,
        /// A tag stored with every imported run; repeatable.
        #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
        tags: Vec<Tag>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Compare two or more groups of runs, each given by run ids (3,4,5 or 3-5) or by tags
    /// (fs=ext2; host=, kind= and job= match the run's own fields): per phase and metric, the
    /// means, sample standard deviations, the difference with its 95 % confidence interval
    /// (Welch) and a verdict. The first group is the baseline.
    Compare {
        /// The groups.
        #[arg(value_name = "GROUP", required = true)]
        groups: Vec<String>,
        /// Compare runs whose workloads differ (the differences are printed with the result).
        #[arg(long = "allow-different")]
        allow_different: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Show a stored study (a sweep's points, an IOzone matrix, an impact study) in its own
    /// terms: its runs and roles, its figures, its events and task progress.
    Study {
        /// The study's id (printed when it was stored).
        id: i64,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Show one stored run.
    Show {
        /// The run's id.
        id: i64,
        /// Include the interval samples (JSON and CSV).
        #[arg(long)]
        samples: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
}

/// A challenge's definition: flags, or a job file's `[challenge]` table (flags win).
#[derive(Args, Debug, Clone, Default)]
pub struct ChallengeSpecArgs {
    /// A job file with a `[challenge]` table (its keys are these flags' names: pool = [...],
    /// writers, file_size, fault = [...], ...).
    #[arg(long = "job", value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// A pool: NAME=DIR; repeatable (pools may share a filesystem, not a directory).
    #[arg(long = "pool", value_name = "NAME=DIR")]
    pub pool: Vec<String>,
    /// Writer threads per host (default 1).
    #[arg(long)]
    pub writers: Option<u32>,
    /// Reader threads per host (default 1).
    #[arg(long)]
    pub readers: Option<u32>,
    /// Each file's size (default 2g).
    #[arg(long = "file-size", value_name = "SIZE")]
    pub file_size: Option<String>,
    /// The request size (default 1m).
    #[arg(long, value_name = "SIZE")]
    pub bs: Option<String>,
    /// How long the challenge runs (5d, 12h, 90s).
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
    /// How many files are written in all.
    #[arg(long, value_name = "N")]
    pub files: Option<u64>,
    /// How writers choose a pool: equal (in turn) or least-loaded (lowest write rate over the
    /// last long-term window).
    #[arg(long, value_name = "HOW")]
    pub spread: Option<String>,
    /// At most this many finished, unread files per pool; writers wait beyond it (default 16).
    #[arg(long, value_name = "N")]
    pub backlog: Option<u64>,
    /// Between samples (default 10s).
    #[arg(long, value_name = "TIME")]
    pub interval: Option<String>,
    /// The window of the long-term averages (default 100s).
    #[arg(long, value_name = "TIME")]
    pub lt: Option<String>,
    /// The seed of the files' data.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A planned fault, AT:ACTION:TARGET[:FOR]; repeatable. Actions: unmount, read-only,
    /// detach (TARGET a pool), drain (a pool), stop-writers, stop-readers (all or a number),
    /// command (the rest is a command run on this host), task (an impact task).
    #[arg(long = "fault", value_name = "AT:ACTION:TARGET[:FOR]")]
    pub fault: Vec<String>,
    /// How long a host's claim on a file in flight lasts unrenewed; after it, another agent
    /// takes the file over (default 60s).
    #[arg(long, value_name = "TIME")]
    pub lease: Option<String>,
    /// Write and read with O_DIRECT, past the page cache (the devices' figures, not memory's).
    #[arg(long)]
    pub direct: bool,
    /// Serve live figures for Prometheus at http://ADDR/metrics while this host takes part
    /// (bytes read and written per pool).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
}

/// The pools a host lets an agent touch: named on its command line or in a job file.
#[derive(Args, Debug, Clone, Default)]
pub struct HostPoolsArgs {
    /// A job file with a `[challenge]` table naming this host's pools.
    #[arg(long = "job", value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// A pool of this host: NAME=DIR; repeatable. Every pool of the challenge must be named,
    /// with the same directory as the database records.
    #[arg(long = "pool", value_name = "NAME=DIR")]
    pub pool: Vec<String>,
    /// Writer threads here (default: the challenge's).
    #[arg(long)]
    pub writers: Option<u32>,
    /// Reader threads here (default: the challenge's).
    #[arg(long)]
    pub readers: Option<u32>,
    /// A fault this host carries out, AT:ACTION:TARGET[:FOR] (unmount, read-only, detach,
    /// command, task: host actions are taken only from the host's own plan, never from the
    /// database); repeatable.
    #[arg(long = "fault", value_name = "AT:ACTION:TARGET[:FOR]")]
    pub fault: Vec<String>,
    /// Serve live figures for Prometheus at http://ADDR/metrics while this host takes part
    /// (bytes read and written per pool).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ChallengeCmd {
    /// Define a challenge and run it on this host to its end: storlab challenge run --pool
    /// P1=/data1 --pool P2=/data2 --writers 4 --readers 4 --file-size 2g --bs 1m --duration 5d
    Run {
        #[command(flatten)]
        spec: ChallengeSpecArgs,
        /// Show statistics in MiB/s (default MB/s, as the seed).
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Define a challenge for agents on many hosts; prints its id. Use a PostgreSQL database
    /// (--db postgres://...) that every client reaches.
    Create {
        #[command(flatten)]
        spec: ChallengeSpecArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Take part in a challenge from this host: writers and readers take work from the
    /// catalogue. The pools must be named here as the challenge names them.
    Agent {
        /// The challenge's id.
        id: i64,
        #[command(flatten)]
        pools: HostPoolsArgs,
        /// Show statistics in MiB/s.
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Go on with a challenge after this host's process was killed: its partly written files
    /// are removed and written again, its files being read wait again.
    Resume {
        /// The challenge's id.
        id: i64,
        #[command(flatten)]
        pools: HostPoolsArgs,
        /// Show statistics in MiB/s.
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// The statistics of a challenge in the seed's shape: MAX, MIN, AVG (SD, SD/AVG %) of the
    /// long-term averages, total and per pool, read, write and both.
    Stats {
        /// The challenge's id.
        id: i64,
        /// From this many hours after the start.
        #[arg(long, value_name = "HOURS", conflicts_with = "samples")]
        from: Option<f64>,
        /// To this many hours after the start.
        #[arg(long, value_name = "HOURS", conflicts_with = "samples")]
        to: Option<f64>,
        /// Samples A to B (numbered from 0): --samples 0..47344
        #[arg(long, value_name = "A..B")]
        samples: Option<String>,
        /// Only these pools (the Tot rows are their sums); repeatable.
        #[arg(long = "pool", value_name = "NAME")]
        pools: Vec<String>,
        /// Only what these hosts moved (a host name, or one agent as HOST/PID); repeatable.
        #[arg(long = "host", value_name = "HOST")]
        hosts: Vec<String>,
        /// MiB/s instead of MB/s.
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// A challenge's state: its definition, the catalogue's account, the files that did not
    /// end well, the hosts and the events.
    Show {
        /// The challenge's id.
        id: i64,
        /// Include every sample (JSON): host, interval, bytes per pool.
        #[arg(long)]
        samples: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
}

#[derive(Subcommand, Debug)]
pub enum MonitorCmd {
    /// Watch pools until stopped (Ctrl-C, SIGTERM) or for --duration: storlab monitor run
    /// --pool P1=/dev/sdb,/dev/sdc --pool P2=/srv/data2 --interval 10s --metrics 127.0.0.1:9464
    Run {
        /// A pool: a name and its block devices or mount points (a mount point stands for its
        /// filesystem and the devices under it, through md, device-mapper and btrfs);
        /// repeatable. Replaces the configuration file's pools.
        #[arg(long = "pool", value_name = "NAME=DEV|MOUNT[,…]")]
        pools: Vec<String>,
        /// A configuration file (TOML, a [monitor] table; /etc/storlab/monitor.toml in the
        /// packages): pools and settings, the flags given here win.
        #[arg(long, value_name = "FILE")]
        config: Option<std::path::PathBuf>,
        /// Time between samples, at least 100ms [default: 10s].
        #[arg(long, value_name = "DURATION")]
        interval: Option<String>,
        /// The long-term window: the averages' span, and the second resolution kept [default:
        /// 100s].
        #[arg(long, value_name = "DURATION")]
        lt: Option<String>,
        /// Serve Prometheus metrics at http://ADDR/metrics (loopback or an address of this host).
        #[arg(long, value_name = "ADDR:PORT")]
        metrics: Option<String>,
        /// Keep samples this long in all, hourly averages after --keep-lt [default: 365d].
        #[arg(long, value_name = "DURATION")]
        retain: Option<String>,
        /// Keep every sample this long, then its long-term averages [default: 2d].
        #[arg(long = "keep-full", value_name = "DURATION")]
        keep_full: Option<String>,
        /// Keep the long-term averages this long, then hourly ones [default: 30d].
        #[arg(long = "keep-lt", value_name = "DURATION")]
        keep_lt: Option<String>,
        /// Stop after this long (default: until stopped).
        #[arg(long, value_name = "DURATION")]
        duration: Option<String>,
        /// Read disk counters from this file instead of /proc/diskstats (tests: counters
        /// that wrap).
        #[arg(long, value_name = "FILE", hide = true)]
        diskstats: Option<std::path::PathBuf>,
        /// Allow intervals down to 1ms (bench/monitorbench.py: a day of 10 s samples in 86 s).
        #[arg(long = "bench-interval", hide = true)]
        bench_interval: bool,
        /// No line on stderr per event.
        #[arg(long, short)]
        quiet: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Per-pool statistics of a window in seed 002's shape: MAX, MIN, AVG (SD, SD/AVG %) of the
    /// long-term averages, total and per pool, read, write and both; operations, latency and
    /// utilisation beside.
    Stats {
        /// From (a date or time, UTC: 2026-11-23T08:00:00; or a span back from now: 2h).
        #[arg(long, value_name = "TIME|AGO")]
        from: Option<String>,
        /// To (as --from; default now).
        #[arg(long, value_name = "TIME|AGO")]
        to: Option<String>,
        /// Only these pools (the Tot rows are their sums); repeatable.
        #[arg(long = "pool", value_name = "NAME")]
        pools: Vec<String>,
        /// Only this host's monitors (default: this host).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Every host's monitors.
        #[arg(long, conflicts_with = "host")]
        all_hosts: bool,
        /// MiB/s instead of MB/s.
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// The events of a window: devices gone and back, counters wrapped, unmounts, md and btrfs
    /// changes, starts and stops.
    Events {
        /// From (as in `stats`).
        #[arg(long, value_name = "TIME|AGO")]
        from: Option<String>,
        /// To.
        #[arg(long, value_name = "TIME|AGO")]
        to: Option<String>,
        /// Only this host's monitors (default: this host).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Every host's monitors.
        #[arg(long, conflicts_with = "host")]
        all_hosts: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
}

#[derive(Args, Debug)]
pub struct RiskArgs {
    /// RAID level: 1, 5, 6, 10, or draid1:P, draid2:P, draid3:P (distributed parity whose
    /// rebuild runs P times faster than onto one spare).
    #[arg(long, default_value = "6")]
    pub raid: String,
    /// Drives per array.
    #[arg(long)]
    pub drives: u32,
    /// A drive's capacity (16TB, 18TiB): with --rebuild-speed, the rebuild's time when none is
    /// given.
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    /// Drive failures: a share per period (0.1%/month is seed 003's one per 1,000 drives a
    /// month; 1.2%/year), or --mttf.
    #[arg(long, value_name = "RATE", default_value = "0.1%/month")]
    pub failure_rate: String,
    /// A drive's mean time to failure instead of --failure-rate (1000000h).
    #[arg(long, value_name = "DURATION")]
    pub mttf: Option<String>,
    /// Latent sector errors appearing, a share of drives per period (default 1.29%/year:
    /// Bairavasundaram et al., SIGMETRICS 2007, 3.45 % of nearline drives in 32 months).
    #[arg(long, value_name = "RATE", default_value = "1.29%/year")]
    pub latent_rate: String,
    /// The rebuild's duration with the array idle.
    #[arg(long, value_name = "DURATION")]
    pub rebuild: Option<String>,
    /// The rebuild's duration under the users' load.
    #[arg(long, value_name = "DURATION")]
    pub rebuild_loaded: Option<String>,
    /// Take the rebuild's times from a stored study of the rebuild's task: storlab impact
    /// --reverse gives both (idle and loaded); storlab impact --held the time under the held
    /// load (the idle time from --rebuild, else the same).
    #[arg(long, value_name = "ID", conflicts_with = "rebuild_loaded")]
    pub rebuild_study: Option<i64>,
    /// With --capacity and no rebuild time: the rebuild's speed.
    #[arg(long, value_name = "RATE", default_value = "100MiB/s")]
    pub rebuild_speed: String,
    /// Time from one verify of an array to its next, or `never`.
    #[arg(long, value_name = "DURATION|never")]
    pub verify_interval: Option<String>,
    /// A verify's duration (a latent error waits half an interval and half a verify).
    #[arg(long, value_name = "DURATION")]
    pub verify_duration: Option<String>,
    /// A schedule file: the interval follows from its pool's k, servers, task duration under
    /// load, windows and `every`; the figures are also given for every k.
    #[arg(long, value_name = "FILE", requires = "pool")]
    pub schedule: Option<std::path::PathBuf>,
    /// The schedule's pool (its servers are the arrays).
    #[arg(long, requires = "schedule")]
    pub pool: Option<String>,
    /// Arrays in the fleet.
    #[arg(long, default_value_t = 1)]
    pub arrays: u32,
    /// The horizon of the chances, years.
    #[arg(long, default_value_t = 1.0)]
    pub years: f64,
    /// Check the solution with N simulated paths of the same chain (slow for realistic rates:
    /// each path runs until data are lost).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub monte_carlo: u64,
    /// The simulation's seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the figures, tables and plots as an HTML report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Subcommand, Debug)]
pub enum SchedCmd {
    /// Check a schedule file and show its plan: per pool the servers, budget and per-server
    /// cost, k (servers verifying at once within the budget), what k cost the pool, and a
    /// round's duration alone, under load and in calendar time within the windows.
    Plan {
        /// The schedule file (TOML).
        file: std::path::PathBuf,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        /// The database a `cost = "study:ID"` or `duration = "study:ID"` is read from.
        #[command(flatten)]
        db: DbArgs,
    },
    /// Run this server's agent: take one of its pool's k slots from the shared database when
    /// it is the server's turn, run its task from this host's schedule file, renew the lease
    /// while it runs, pause it while the pool is busy or outside its windows, record what
    /// happened, give the slot back; again each round (a systemd service in the packages).
    Agent {
        /// This server's name in the schedule.
        #[arg(long)]
        server: String,
        /// The schedule file: root's, writable by no one else.
        #[arg(long, value_name = "FILE", default_value = "/etc/storlab/schedule.toml")]
        schedule: std::path::PathBuf,
        /// End after this many complete verifies (default: run until stopped).
        #[arg(long, value_name = "N")]
        rounds: Option<u32>,
        /// How often to ask for a slot, look at the task and ask whether the pool is busy.
        #[arg(long, value_name = "DURATION", default_value = "5s")]
        poll: String,
        /// Say nothing on stderr.
        #[arg(long, short)]
        quiet: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Per pool and server: the last complete verify, its duration, errors found, what runs
    /// now, when each is next due; --metrics serves it to Prometheus.
    Status {
        /// The schedule file.
        #[arg(long, value_name = "FILE", default_value = "/etc/storlab/schedule.toml")]
        schedule: std::path::PathBuf,
        /// Serve the status as Prometheus metrics at ADDR (host:port), refreshed every
        /// --interval, until stopped.
        #[arg(long, value_name = "ADDR")]
        metrics: Option<String>,
        /// How often --metrics reads the database.
        #[arg(long, value_name = "DURATION", default_value = "15s")]
        interval: String,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// The scheduler's event log: grants, renewals, starts, progress, ends, refusals.
    Events {
        /// Only this pool.
        #[arg(long)]
        pool: Option<String>,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// The process that holds an agent's task (started by the agent).
    #[command(hide = true)]
    Guard {
        /// The task, KIND:ARGS.
        #[arg(long)]
        task: String,
        /// Seconds until the lease deadline.
        #[arg(long)]
        deadline: f64,
        /// Seconds between looks at the task.
        #[arg(long)]
        poll: f64,
    },
}
