//! storlab: the command line and the glue between the crates. Everything that measures, stores
//! or computes lives in `crates/`; this binary parses flags, wires a run together and prints.

mod cli;
mod impact;
mod iozone;
mod output;
mod results;
mod runner;
mod scan;
mod sweep;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, ResultsCommand};

/// Exit codes, so that scripts can tell outcomes apart.
pub mod exit {
    /// Bad input: a job, flag or target was refused before anything ran.
    pub const USAGE: u8 = 2;
    /// A run finished but verification found corrupt blocks.
    pub const CORRUPT: u8 = 3;
    /// A scan finished, but some entries could not be counted (the figures are a lower bound).
    pub const PARTIAL: u8 = 4;
    /// A run was interrupted (Ctrl-C) and stored as aborted.
    pub const ABORTED: u8 = 130;
}

fn main() -> ExitCode {
    // Output piped into `head` ends when head has enough, as it does for du or ls: Rust ignores
    // SIGPIPE, which would turn the closed pipe into a panic in println!. Results are stored
    // before anything is printed, so a reader that stops early loses nothing.
    // SAFETY: setting a signal's disposition to its default, before any thread is started.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => runner::demo(args),
        Command::Run(args) => runner::run(*args),
        Command::Scan(args) => scan::scan(args),
        Command::Iozone { args } => iozone::iozone(args),
        Command::Sweep(args) => sweep::sweep(*args),
        Command::Impact(args) => impact::impact(*args),
        Command::Report(args) => results::report(args),
        Command::Results(ResultsCommand::List { limit, filter, output }) => {
            output::results_list(limit, &filter, &output)
        }
        Command::Results(ResultsCommand::Tag { id, tags, output }) => results::tag(id, &tags, &output),
        Command::Results(ResultsCommand::Untag { id, keys, output }) => results::untag(id, &keys, &output),
        Command::Results(ResultsCommand::Rm { ids, yes, output }) => results::rm(&ids, yes, &output),
        Command::Results(ResultsCommand::Export {
            ids,
            format,
            file,
            no_samples,
            db,
        }) => results::export(&ids, &format, file.as_deref(), !no_samples, db),
        Command::Results(ResultsCommand::Import {
            file,
            host,
            tags,
            output,
        }) => results::import(&file, host, &tags, &output),
        Command::Results(ResultsCommand::Compare {
            groups,
            allow_different,
            output,
        }) => results::compare_cmd(&groups, allow_different, &output),
        Command::Results(ResultsCommand::Study { id, output }) => results::study(id, &output),
        Command::Results(ResultsCommand::Show { id, samples, output }) => output::results_show(id, samples, &output),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // The chain of causes, each said once: errors that already quote their cause (an
            // I/O error's OS message) would otherwise print it twice.
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    msg += ": ";
                    msg += &c;
                }
            }
            eprintln!("storlab: error: {msg}");
            let usage = e.chain().any(|c| {
                c.is::<storlab_workload::WorkloadError>()
                    || c.is::<scan::ScanUsage>()
                    || c.is::<results::ResultsUsage>()
                    || c.is::<storlab_impact::study::StudyError>()
            });
            ExitCode::from(if usage { exit::USAGE } else { 1 })
        }
    }
}
