//! The command line, defined once: every flag of `storlab run` that is also a job-file key is
//! declared here with the key's name and handed to the workload crate's one parser.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use storlab_workload::{Settings, WorkloadError};

/// Qualify, compare and keep watch on disk storage.
#[derive(Parser, Debug)]
#[command(name = "storlab", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
    /// Read back stored results.
    #[command(subcommand)]
    Results(ResultsCommand),
    /// One self-contained HTML file (inline SVG plots, no script, no fetch) for runs and
    /// comparisons: environment, tables, throughput, IOPS and latency over time, bar charts
    /// with 95 % intervals; like plots share one scale.
    Report(ReportArgs),
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
    /// A study to report (an IOzone automatic mode, a sweep): heat maps or curves; repeatable.
    #[arg(long = "study", value_name = "ID")]
    pub studies: Vec<i64>,
    /// Give every plot its own scale.
    #[arg(long = "free-scales")]
    pub free_scales: bool,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "report.html")]
    pub file: PathBuf,
    /// The results database (default: $STORLAB_DB, else ~/.local/share/storlab/results.db).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// The directories to scan (one row each, unless --group-by says otherwise).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// Age thresholds, comma-separated (e.g. 60d,160d; units s m h d w).
    #[arg(long, value_name = "AGES", default_value = "60d,160d")]
    pub age: String,
    /// Rows: path (one per PATH), top (one per directory just below each PATH), or depth:N.
    #[arg(long = "group-by", value_name = "HOW", default_value = "path")]
    pub group_by: String,
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
    pub tags: Vec<(String, String)>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Where results go and how they are printed.
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// The results database (default: $STORLAB_DB, else ~/.local/share/storlab/results.db).
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Print one JSON document on stdout (messages go to stderr).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV on stdout, one row per phase.
    #[arg(long)]
    pub csv: bool,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// The directory to qualify (default: a new temporary directory under $TMPDIR or /tmp).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A job: a job file and/or flags, the targets, and what to do with the files. Shared by
/// `run` and `sweep`.
#[derive(Args, Debug)]
pub struct JobArgs {
    /// The job file (TOML). Without one, the job comes from the flags.
    #[arg(value_name = "JOB.toml")]
    pub job: Option<PathBuf>,
    /// The job file, as a flag (the same as giving JOB.toml).
    #[arg(long = "job", value_name = "JOB.toml", conflicts_with = "job")]
    pub job_file: Option<PathBuf>,
    /// A target directory, file or (with --allow-device) block device; repeat for several.
    #[arg(long = "target", value_name = "PATH")]
    pub targets: Vec<PathBuf>,
    /// A phase to run; repeat to run several, in order (write, rewrite, read, reread, randread,
    /// randwrite, randrw, backread, strideread, recrewrite).
    #[arg(long = "phase", value_name = "NAME")]
    pub phases: Vec<String>,
    /// A tag stored with the run, e.g. fs=ext4; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<(String, String)>,
    /// Allow this block device as a target (its contents will be overwritten by write phases).
    #[arg(long = "allow-device", value_name = "DEVICE")]
    pub allow_devices: Vec<PathBuf>,
    /// Keep the files storlab created instead of removing them at the end.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub settings: SettingsArgs,
}

impl JobArgs {
    /// The job: the file's (or an empty one), with the flags laid over it.
    pub fn to_job(&self) -> Result<storlab_workload::Job, storlab_workload::WorkloadError> {
        let flags = self.settings.to_settings()?;
        let mut job = match self.job.as_ref().or(self.job_file.as_ref()) {
            Some(p) => storlab_workload::Job::load(p)?,
            None => storlab_workload::Job {
                origin: "command line".into(),
                ..Default::default()
            },
        };
        job.override_with(&self.targets, &self.phases, &flags)?;
        Ok(job)
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub job: JobArgs,
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

fn parse_tag(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("'{s}' is not KEY=VALUE (e.g. fs=ext4)")),
    }
}

/// The job settings as flags. Each flag has the job-file key's name (with '-' for '_').
#[derive(Args, Debug, Default)]
pub struct SettingsArgs {
    /// Workers (threads).
    #[arg(long)]
    pub threads: Option<String>,
    /// Bytes per worker's file (e.g. 1g).
    #[arg(long)]
    pub size: Option<String>,
    /// Block size (4k) or weighted mix (4k:70,64k:30).
    #[arg(long)]
    pub bs: Option<String>,
    /// Back-end: psync, io_uring, mmap, null, stdio, pvsync.
    #[arg(long)]
    pub engine: Option<String>,
    /// I/Os in flight per worker (io_uring).
    #[arg(long)]
    pub iodepth: Option<String>,
    /// I/Os queued before one submission (io_uring; default 1 with --direct, else iodepth).
    #[arg(long = "iodepth-batch")]
    pub iodepth_batch: Option<String>,
    /// Buffers per I/O with --engine pvsync (preadv/pwritev).
    #[arg(long)]
    pub iovecs: Option<String>,
    /// Open with O_DIRECT.
    #[arg(long)]
    pub direct: bool,
    /// Open with O_SYNC.
    #[arg(long)]
    pub sync: bool,
    /// Flush policy: none, end, or N (after every N writes).
    #[arg(long)]
    pub fsync: Option<String>,
    /// Whether the flush at the end counts in the time (true/false; default true, as IOzone -e).
    #[arg(long = "fsync-timed")]
    pub fsync_timed: Option<String>,
    /// Whether closing the files counts in the time (true/false; default false; IOzone -c).
    #[arg(long = "close-timed")]
    pub close_timed: Option<String>,
    /// Time-based phases of this length (e.g. 10s).
    #[arg(long)]
    pub runtime: Option<String>,
    /// Time run first and excluded from results (e.g. 2s).
    #[arg(long)]
    pub ramp: Option<String>,
    /// Target rate: 20000iops or 200MiB/s.
    #[arg(long)]
    pub rate: Option<String>,
    /// Whether the rate is the total (default) or per worker.
    #[arg(long = "rate-per")]
    pub rate_per: Option<String>,
    /// Data pattern: random, zeros, compress:NN.
    #[arg(long)]
    pub pattern: Option<String>,
    /// Verify every 4 KiB read.
    #[arg(long)]
    pub verify: bool,
    /// Read percentage of randrw (0 to 100).
    #[arg(long)]
    pub rwmix: Option<String>,
    /// Records between reads of strideread.
    #[arg(long)]
    pub stride: Option<String>,
    /// Sample interval (default 1s).
    #[arg(long)]
    pub interval: Option<String>,
    /// An I/O issued this long after its scheduled start counts as late (default 1ms).
    #[arg(long = "late-after")]
    pub late_after: Option<String>,
    /// Seed of the offsets and data.
    #[arg(long)]
    pub seed: Option<String>,
}

impl SettingsArgs {
    /// The flags given, as settings (each parsed by the same function as the job file's key).
    pub fn to_settings(&self) -> Result<Settings, WorkloadError> {
        let mut s = Settings::default();
        let pairs: [(&str, &Option<String>); 21] = [
            ("threads", &self.threads),
            ("size", &self.size),
            ("bs", &self.bs),
            ("engine", &self.engine),
            ("iodepth", &self.iodepth),
            ("iodepth_batch", &self.iodepth_batch),
            ("iovecs", &self.iovecs),
            ("fsync", &self.fsync),
            ("fsync_timed", &self.fsync_timed),
            ("close_timed", &self.close_timed),
            ("runtime", &self.runtime),
            ("ramp", &self.ramp),
            ("rate", &self.rate),
            ("rate_per", &self.rate_per),
            ("pattern", &self.pattern),
            ("rwmix", &self.rwmix),
            ("stride", &self.stride),
            ("interval", &self.interval),
            ("late_after", &self.late_after),
            ("seed", &self.seed),
            ("direct", &self.direct.then(|| "true".to_string())),
        ];
        for (key, value) in pairs {
            if let Some(v) = value {
                s.apply_str(key, v, &format!("--{}", key.replace('_', "-")))?;
            }
        }
        if self.sync {
            s.apply_str("sync", "true", "--sync")?;
        }
        if self.verify {
            s.apply_str("verify", "true", "--verify")?;
        }
        Ok(s)
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
    pub tags: Vec<(String, String)>,
    /// Only runs of this kind: run, demo, scan, import, ...
    #[arg(long)]
    pub kind: Option<String>,
    /// Only runs started on or after this date (2026-11-21, or a full RFC 3339 time).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only runs started before this date.
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum ResultsCommand {
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
        tags: Vec<(String, String)>,
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
        /// The results database (default: $STORLAB_DB, else ~/.local/share/storlab/results.db).
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// Import fio's JSON output (--output-format=json or json+; client/server mode too) as
    /// stored runs, one per fio job and client. Nothing is stored unless the whole file reads.
    Import {
        /// The fio output file.
        file: PathBuf,
        /// The host the fio jobs ran on, when the file does not say (client/server output does).
        #[arg(long)]
        host: Option<String>,
        /// A tag stored with every imported run; repeatable.
        #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
        tags: Vec<(String, String)>,
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
    /// Show a stored study (a sweep's cells, an impact study's repetitions): its runs and
    /// roles, and an impact study's events and task progress in the order they happened.
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
