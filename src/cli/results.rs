//! The flags of the commands that read the database: `results …`, `db …` and `report`.

use clap::{Args, Subcommand};
use storlab_model::run::{parse_tag, Tag};

use super::{DbArgs, OutputArgs};

#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub what: storlab_report::html::ReportFlags,
    #[command(flatten)]
    pub db: DbArgs,
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
    /// Check a SQLite results file without writing to it: SQLite's integrity check, and for
    /// each table whether every row reads. Exit 1 when the file is damaged; then `db copy
    /// --from` it into a new file copies every run that reads whole.
    Check {
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
        /// The database to copy from (a file, or a postgres:// URL), or the JSON a command
        /// printed of results no database took (FILE.json).
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
        filter: storlab_report::runs::ListFilter,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Tag a run: `storlab results tag 12 fs=ext4 raid=6`
    Tag {
        /// The run's id.
        id: i64,
        /// KEY=VALUE pairs.
        #[arg(value_name = "KEY=VALUE", value_parser = parse_tag, required = true)]
        tags: Vec<Tag>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Remove tags from a run: `storlab results untag 12 fs`
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
    /// (Welch) and a verdict. The first group is the baseline. For runs already stored; to
    /// measure two targets until the difference is decided, use `storlab compare`.
    Compare(CompareArgs),
    /// List the stored studies (sweeps, IOzone matrices, impact studies, qualifications), newest
    /// first: id, when, kind, how many runs, the command that made it.
    Studies {
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

/// `storlab results export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    pub what: storlab_report::export::ExportFlags,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `storlab results import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(flatten)]
    pub what: storlab_import::record::ImportFlags,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `storlab results compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub groups: storlab_report::compare::CompareFlags,
    #[command(flatten)]
    pub output: OutputArgs,
}
