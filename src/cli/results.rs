//! The flags of the commands that read the database: `results …`, `db …` and `report`.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use storlab_model::run::{parse_tag, RunKind, Tag};

use super::{DbArgs, OutputArgs};

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
    Export(ExportArgs),
    /// Import what fio (JSON or json+ wherever it sits in the file, terse v3-v5, normal text),
    /// IOzone (its table, -R, -t, -O, -+u; pasted indented; several runs in one file), IOR
    /// (text, JSON) and mdtest (summary) printed, as stored runs. A file is stored whole or not
    /// at all; a directory imports every file below it, one transaction per file, a line per
    /// file, and exits 1 if any file was not imported. Figures the tool did not print are
    /// stored as not measured ("—").
    Import(ImportArgs),
    /// Compare two or more groups of runs, each given by run ids (3,4,5 or 3-5) or by tags
    /// (fs=ext2; host=, kind= and job= match the run's own fields): per phase and metric, the
    /// means, sample standard deviations, the difference with its 95 % confidence interval
    /// (Welch) and a verdict. The first group is the baseline.
    Compare(CompareArgs),
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

/// `storlab results export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The runs' ids.
    #[arg(required = true)]
    pub ids: Vec<i64>,
    /// csv, json, markdown or xlsx.
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Leave out the interval samples.
    #[arg(long = "no-samples")]
    pub no_samples: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `storlab results import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The file, or a directory of files.
    #[arg(value_name = "FILE|DIR")]
    pub file: PathBuf,
    /// The host the jobs ran on, when the file does not say (client/server output does).
    #[arg(long)]
    pub host: Option<String>,
    /// A tag stored with every imported run; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `storlab results compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The groups.
    #[arg(value_name = "GROUP", required = true)]
    pub groups: Vec<String>,
    /// Compare runs whose workloads differ (the differences are printed with the result).
    #[arg(long = "allow-different")]
    pub allow_different: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}
