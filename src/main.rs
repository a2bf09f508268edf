//! storlab: the command line. It parses flags, hands the work to the crates under crates/
//! (a run to crates/session, a study to crates/impact or session, a scan to crates/scan, the
//! results to crates/store) and prints what they stored through crates/report, as ripgrep's
//! binary does for its crates.
//!
//! cli/ declares the command line once (a file per command family); each command's work is a
//! file here named after it (commands.rs: the commands that measure; results.rs, report.rs,
//! db.rs: the ones that read the database; fio.rs, iozone.rs, meta.rs, challenge.rs,
//! monitor.rs, sched.rs, qualify.rs: one each), running.rs what they all share, team.rs the
//! same commands as one rank of an MPI team.
#![deny(missing_docs)]

mod challenge;
mod cli;
mod commands;
mod compare;
mod db;
mod fio;
mod fio_client;
mod fio_server;
mod fio_status;
mod iozone;
mod meta;
mod monitor;
mod qualify;
mod report;
mod results;
mod running;
mod sched;
mod team;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Cmd, DbCmd, ResultsCmd};

/// Exit codes, so that scripts can tell outcomes apart.
pub mod exit {
    /// Bad input: a job, flag or target was refused before anything ran.
    pub const USAGE: u8 = 2;
    /// A run finished but verification found corrupt blocks.
    pub const CORRUPT: u8 = 3;
    /// A scan finished, but some entries could not be counted (the figures are a lower bound).
    pub const PARTIAL: u8 = 4;
    /// A qualification ended with a criterion neither passed nor failed (more repetitions, or
    /// a longer time, would be needed); 1 is a criterion failed, 0 every one passed.
    pub const UNDECIDED: u8 = 5;
    /// Measured, not stored: the results database could not take the results (a file locked
    /// past the wait, a full filesystem, a damaged file, a server away); they are in a spool
    /// file, or were printed on stdout as JSON, and a message named it with the command that
    /// brings them in.
    pub const NOT_STORED: u8 = 6;
    /// Stopped by a refusal after results were stored (a study's task that failed after its
    /// runs, a point of a sweep): what was stored is kept, the message says what failed; 2 is
    /// kept for "nothing ran, nothing was stored".
    pub const STORED_THEN_REFUSED: u8 = 7;
    /// A run was interrupted (Ctrl-C) and stored as aborted.
    pub const ABORTED: u8 = 130;

    /// A command's exit code, once its results are where they will stay: one that succeeded
    /// but whose results went elsewhere says so.
    pub fn settled(code: u8) -> u8 {
        match storlab_store::measured_not_stored() {
            Some(_) if code == 0 => NOT_STORED,
            _ => code,
        }
    }
}

/// A request the user can fix (an unknown run, a bad option): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A [`Usage`] error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    Usage(msg.into()).into()
}

/// True when the error is the user's to fix: a refused job, option or request.
fn is_usage(e: &anyhow::Error) -> bool {
    /// The error is of type `$t` and its variant is `$t::$v`.
    macro_rules! input {
        ($c:expr, $($t:ident :: $v:ident),*) => {
            false $(|| matches!($c.downcast_ref::<$t>(), Some($t::$v(_))))*
        };
    }
    use storlab_challenge::ChallengeError;
    use storlab_monitor::MonitorError;
    use storlab_qualify::QualifyError;
    use storlab_report::export::WriteError;
    use storlab_sched::SchedError;
    use storlab_session::SessionError;
    use storlab_store::StoreError;
    e.chain().any(|c| {
        c.is::<Usage>()
            || c.is::<storlab_workload::WorkloadError>()
            || c.is::<storlab_impact::study::StudyError>()
            || input!(
                c,
                SessionError::Disagreed,
                ChallengeError::Input,
                SchedError::Input,
                MonitorError::Input,
                QualifyError::Input,
                StoreError::Request,
                WriteError::Place
            )
    })
}

fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Cmd::Demo(a) => commands::demo(a),
        Cmd::Run(a) => commands::run(*a),
        Cmd::Scan(a) => commands::scan(a),
        Cmd::Iozone { args } => commands::iozone(args),
        Cmd::Fio { args } => fio::fio(args),
        Cmd::Sweep(a) => commands::sweep(*a),
        Cmd::Impact(a) => commands::impact(*a),
        Cmd::Meta(a) => meta::meta(*a),
        Cmd::Qualify(a) => match team::launched() {
            Some(launch) => team::qualify(&a, &launch),
            None => qualify::qualify(*a),
        },
        Cmd::Compare(a) => compare::compare(*a),
        Cmd::Report(a) => report::report(a),
        Cmd::Challenge(c) => challenge::dispatch(c),
        Cmd::Monitor(c) => monitor::dispatch(c),
        Cmd::Sched(c) => sched::dispatch(c),
        Cmd::Risk(a) => sched::risk(*a),
        Cmd::Completions { shell } => commands::completions(shell),
        Cmd::Manpages { dir } => commands::manpages(&dir),
        Cmd::Db(d) => match d {
            DbCmd::Migrate { db, json } => db::migrate(&db, json),
            DbCmd::Info { db, json } => db::info(&db, json),
            DbCmd::Check { db, json } => db::check(&db, json),
            DbCmd::Copy { from, to, json } => db::copy(&from, &to, json),
        },
        Cmd::Results(r) => match r {
            ResultsCmd::List { limit, filter, output } => match filter.kind {
                Some(storlab_model::run::RunKind::Qualify) => qualify::list(limit, &filter, &output),
                _ => results::list(limit, filter, &output),
            },
            ResultsCmd::Tag { id, tags, output } => results::tag(id, &tags, &output),
            ResultsCmd::Untag { id, keys, output } => results::untag(id, &keys, &output),
            ResultsCmd::Rm { ids, yes, output } => results::rm(&ids, yes, &output),
            ResultsCmd::Export(a) => results::export(&a),
            ResultsCmd::Import(a) => results::import(&a),
            ResultsCmd::Compare(a) => results::compare(&a),
            ResultsCmd::Studies { output } => results::studies(&output),
            ResultsCmd::Study { id, output } => results::study(id, &output),
            ResultsCmd::Show { id, samples, output } => results::show(id, samples, &output),
        },
    }
}

fn main() -> ExitCode {
    // Output piped into `head` ends when head has enough, as it does for du or ls: Rust ignores
    // SIGPIPE, which would turn the closed pipe into a panic in println!. Results are stored
    // before anything is printed, so a reader that stops early loses nothing.
    // SAFETY: setting a signal's disposition to its default, before any thread is started.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // Called as `fio` (the link the packages install for drivers of fio), storlab is `storlab
    // fio`; `storlab fio` itself ends the same way.
    let mut args = std::env::args_os();
    let called = args.next().unwrap_or_default();
    if std::path::Path::new(&called).file_name().is_some_and(|n| n == "fio") {
        return match fio::utf8_args(args) {
            Ok(a) => fio::main(a),
            Err(e) => {
                eprintln!("fio: {e}");
                ExitCode::from(1)
            }
        };
    }
    let cli = Cli::parse();
    if let Cmd::Fio { args } = cli.command {
        return fio::main(args);
    }
    match dispatch(cli) {
        Ok(code) => ExitCode::from(exit::settled(code)),
        Err(e) => {
            eprintln!(
                "storlab: error: {}",
                storlab_model::terminal::escape_except(&error_text(&e), &['\n'])
            );
            ExitCode::from(match is_usage(&e) {
                true if storlab_store::stored_any() => exit::STORED_THEN_REFUSED,
                true => exit::USAGE,
                false => 1,
            })
        }
    }
}

/// An error with its chain of causes, each said once: errors that already quote their cause
/// (an I/O error's OS message) would otherwise print it twice.
pub(crate) fn error_text(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg += ": ";
            msg += &c;
        }
    }
    msg
}
