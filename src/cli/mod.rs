//! The command line, defined once. The job settings' flags come from their one declaration
//! (crates/model/src/settings.rs) through crates/workload's `SettingsArgs`; IOzone's flags are read by clap in
//! crates/workload (its own spellings kept); everything else is declared here,
//! one file per group of commands.

use clap::{Args, Parser, Subcommand};

mod challenge;
mod compare;
mod meta;
mod monitor;
mod qualify;
mod results;
mod run;
mod sched;

pub use challenge::*;
pub use compare::*;
pub use meta::*;
pub use monitor::*;
pub use qualify::*;
pub use results::*;
pub use run::*;
pub use sched::*;

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
    /// fio's command line on storlab's engine: `storlab fio --name=x --rw=randread --bs=4k
    /// --size=1g --direct=1 --output-format=json`, or job files (`storlab fio JOB.fio`), read as
    /// fio reads them. storlab's own options: --db, --tag, --keep, --ignore-unknown, -q. `--help`
    /// lists fio's flags storlab takes.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Fio {
        /// fio's options and job files.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// The same phases at every point of one varied parameter (threads, block size, queue
    /// depth, read percentage, ...), stored as one study: `storlab sweep --vary threads=1..64
    /// --target /data --phase write --phase read --phase randread --phase randrw --bs 256k
    /// --size 4g`
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
    /// `storlab meta --target /mnt/fs --threads 4 --files-per-thread 10000 --tree 2,10
    /// --phase mkdir,create,stat,read,remove,rmdir --file-size 4k`
    Meta(Box<MetaArgs>),
    /// Acceptance tests with a verdict: a plan (TOML) of jobs and criteria on their figures
    /// (randread IOPS >= 20000, lat p99 <= 5ms, MiB/s >= 95% of baseline, MiB/s cost <= 5%),
    /// each job repeated only until statistics decide every criterion; exit 0 PASS, 1 FAIL,
    /// 5 UNDECIDED: `storlab qualify plan.toml --target /mnt/new-array`
    Qualify(Box<QualifyArgs>),
    /// Which of two targets is faster, by how much and how sure: one job (flags, a job file or
    /// --fio) run on each in turn, round after round, until every figure is decided — the
    /// better target with the ratio and its interval, or equivalent within --margin — stored as
    /// one study; exit 0 decided, 5 a figure undecided: `storlab compare --target ext4=/mnt/a
    /// --target xfs=/mnt/b --phase randread --bs 4k --size 1g --runtime 10s`. For runs already
    /// stored, use `storlab results compare`.
    Compare(Box<CompareTargetsArgs>),
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
    /// Print the completion script of a shell (bash, zsh, fish, elvish, powershell): `storlab
    /// completions bash > /etc/bash_completion.d/storlab`
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
    #[arg(long, value_name = "FILE|URL", help_heading = "Output")]
    pub db: Option<String>,
}

impl DbArgs {
    /// The database named by --db, else $STORLAB_DB, else the default file.
    pub fn target(&self) -> anyhow::Result<storlab_store::DbTarget> {
        storlab_store::DbTarget::named(self.db.as_deref(), dirs::data_dir()).map_err(crate::usage)
    }
}

/// Where results go and how they are printed.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Print one JSON document on stdout (messages go to stderr).
    #[arg(long, conflicts_with = "csv", help_heading = "Output")]
    pub json: bool,
    /// Print CSV on stdout.
    #[arg(long, help_heading = "Output")]
    pub csv: bool,
}
