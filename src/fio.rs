//! `storlab fio …`: fio's command line and job files run on storlab's engine, stored like any
//! run, printed as fio prints it (its normal text, JSON, json+ or terse line) or as storlab's
//! own table (`--output-format=storlab`). The command line is read by crates/workload
//! (`fio::cli::FioCommand`), the outputs written by crates/report (`fio::outputs`).

use std::io::Write;

use anyhow::Result;
use storlab_model::run::RunKind;
use storlab_session::{LiveRun, RunOptions};
use storlab_workload::fio::cli::{FioCommand, OutputFormat};

use crate::cli::{DbArgs, OutputArgs};
use crate::results::print_run;
use crate::running::{code_of, Measuring};

/// `storlab fio`.
pub fn fio(args: Vec<String>) -> Result<u8> {
    let c = FioCommand::parse(&args)?;
    if c.help {
        println!("{}", storlab_workload::fio::cli::help());
        return Ok(0);
    }
    match &c.asked_help {
        Some(Ok(text)) => {
            print!("{text}");
            return Ok(0);
        }
        // fio's words and exit status for a name it does not know.
        Some(Err(why)) => {
            eprintln!("{why}");
            return Ok(1);
        }
        None => {}
    }
    if c.version {
        // fio's form, so that drivers that check it (bench-fio) run; storlab's own version is
        // `storlab --version`'s.
        println!("{}", storlab_workload::fio::FIO_VERSION);
        return Ok(0);
    }
    if let Some(arg) = &c.server {
        return crate::fio_server::serve(&c, arg);
    }
    if let Some(run) = &c.client {
        return crate::fio_client::drive(&c, run);
    }
    if !c.showcmd.is_empty() {
        for line in &c.showcmd {
            println!("{line}");
        }
        return Ok(0);
    }
    let Some(fio) = &c.job else {
        return Err(crate::usage("no job: give --name=JOB with its options, or a job file"));
    };
    if c.parse_only {
        print!("{}", fio.toml);
        return Ok(0);
    }
    // A job fio runs without a word on stderr runs so here (drivers take any stderr for an
    // error): how storlab took it is in the stored run and --parse-only, and on stderr only
    // when --storlab-notes asks.
    if c.notes {
        for n in &fio.notes {
            eprintln!("storlab: {n}");
        }
        if !fio.ignored.is_empty() {
            eprintln!("storlab: ignored (--ignore-unknown): {}", fio.ignored.join(", "));
        }
    }
    let out = OutputArgs {
        db: DbArgs { db: c.db.clone() },
        json: false,
        csv: false,
    };
    if let Some(launch) = crate::team::launched() {
        // `mpirun storlab-mpi fio …`: every rank runs the job, rank 0 stores one run and writes
        // fio's client/server document (its client_stats).
        return crate::team::fio(&c, fio, &out, &launch);
    }
    run_here(&c, fio, &out)
}

/// The job run in this process, stored, and written in fio's forms; fio's exit code.
fn run_here(c: &FioCommand, fio: &storlab_workload::fio::FioJob, out: &OutputArgs) -> Result<u8> {
    let prepared = storlab_session::prepare(&fio.job, &c.allow_devices)?;
    let plans = prepared.phases().to_vec();
    let mut m = Measuring::start(None, None, "fio", out, c.quiet, None)?;
    // fio's --status-interval: its report of the run so far, every so often.
    let status = c.status_interval.map(|every| {
        let view = crate::fio_status::StatusReports::new(every, plans.clone(), c, fio, out.db.clone());
        std::sync::Arc::new(view) as std::sync::Arc<dyn LiveRun + Send + Sync>
    });
    let live = storlab_session::LiveViews::of(vec![m.live.clone(), status]);
    let opts = run_options(c, live.as_deref().map(|v| v as &dyn LiveRun));
    let ran = storlab_session::run_prepared(&mut m.store, prepared, &opts);
    let store = m.end();
    let end = FioEnd::of(ran, &plans)?;
    if let Some(why) = &end.why {
        eprintln!("fio: {why}");
    }
    write_outputs(c, fio, &store, end.run_id, out, end.failed)?;
    Ok(end.exit)
}

/// How a run of fio's job ended, as fio reports it: the stored run, the job that failed (fio
/// reports it in its outputs, its error number in "error", the jobs before it as they ran; the
/// reason on stderr) and fio's exit code.
pub(crate) struct FioEnd {
    pub(crate) run_id: i64,
    pub(crate) failed: Option<storlab_report::fio::Failed>,
    /// Why the job failed.
    pub(crate) why: Option<String>,
    /// fio's exit code: 0, 1 for a failed job, storlab's 130 for Ctrl-C.
    pub(crate) exit: u8,
    /// The failed job's error number (0 where none failed).
    pub(crate) errno: i32,
}

impl FioEnd {
    /// The end of `ran`, the run of `plans`; a failure before any phase ran is the error.
    pub(crate) fn of(
        ran: std::result::Result<storlab_session::Executed, storlab_session::SessionError>,
        plans: &[storlab_model::plan::PhasePlan],
    ) -> Result<FioEnd> {
        match ran {
            Ok(e) => Ok(FioEnd {
                run_id: e.run_id,
                failed: None,
                why: None,
                // A run whose only fault is bad blocks gone past (continue_on_error) is fio's 0.
                exit: if e.only_bad_blocks_gone_past(plans.len()) {
                    0
                } else {
                    fio_exit(e.status)
                },
                errno: 0,
            }),
            Err(e) => {
                let storlab_session::SessionError::Phase {
                    run_id, seq, source, ..
                } = &e
                else {
                    return Err(e.into());
                };
                let errno = e.errno().unwrap_or(libc::EIO);
                Ok(FioEnd {
                    run_id: *run_id,
                    failed: storlab_report::fio::Failed::of(plans, *seq, errno, source.to_string()),
                    why: Some(e.to_string()),
                    exit: 1,
                    errno,
                })
            }
        }
    }
}

/// How `storlab fio`'s run is made: stored as a run, with its tags, devices and `--keep`, a
/// live view watching where there is one.
pub(crate) fn run_options<'a>(c: &'a FioCommand, live: Option<&'a dyn LiveRun>) -> RunOptions<'a> {
    RunOptions {
        kind: RunKind::Run,
        tags: &c.tags,
        allow_devices: &c.allow_devices,
        keep: c.keep,
        command: &c.command_line,
        control: None,
        live,
    }
}

/// What fio writes after a run, from the stored run read once: its formats (stdout or
/// --output), the log files the job asked for (in the current directory, as fio writes them),
/// and with the normal text the stored run's id — never inside a document a program parses.
pub(crate) fn write_outputs(
    c: &FioCommand,
    fio: &storlab_workload::fio::FioJob,
    store: &storlab_store::Store,
    run_id: i64,
    out: &OutputArgs,
    failed: Option<storlab_report::fio::Failed>,
) -> Result<()> {
    if c.formats.contains(&OutputFormat::Storlab) {
        print_run(store, run_id, false, out)?;
    }
    let mut run = store
        .run(run_id, true)?
        .ok_or_else(|| anyhow::anyhow!("run {run_id} is not in {}", store.target()))?;
    if let Some(f) = failed {
        f.add_to(&mut run);
    }
    let o = storlab_report::fio::FioJsonOptions::of_command(c, fio);
    let t = storlab_report::fio::FioTextOptions {
        pid: std::process::id(),
        time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    let written = storlab_report::fio::outputs(&run, &c.formats, &o, &t)?;
    match &c.output {
        Some(path) if !written.is_empty() => {
            storlab_report::export::write_whole(path, |w| Ok(w.write_all(written.as_bytes())?))?
        }
        _ => print!("{written}"),
    }
    // Each log file written as it is made (a per-I/O log can be tens of megabytes).
    let mut write_log = |path: std::path::PathBuf, text: String| -> std::result::Result<(), String> {
        storlab_report::export::write_whole(&path, |w| Ok(w.write_all(text.as_bytes())?))
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    storlab_report::fio::log_files(&run, &fio.phase_logs, &mut write_log)
        .map_err(|e| anyhow::anyhow!("run {run_id}: {e}"))?;
    // Each bad block gone on past on stderr, as fio says each.
    eprint!("{}", storlab_report::fio::bad_block_lines(&run));
    // What bounded each job is storlab's own note: on stderr, and only when asked (fio's drivers
    // take any stderr for an error).
    if c.notes {
        for line in storlab_report::bound::lines(&run).lines() {
            eprintln!("storlab: {line}");
        }
    }
    let human = c
        .formats
        .iter()
        .any(|f| matches!(f, OutputFormat::Normal | OutputFormat::Storlab));
    if human && c.output.is_none() {
        println!("storlab: stored as run {run_id} in {}", store.target());
    }
    Ok(())
}

/// fio's exit code for a run: 0, or the number of jobs that failed (storlab's phases fail as
/// one, so 1); a run Ctrl-C ended keeps storlab's 130.
pub(crate) fn fio_exit(status: storlab_model::run::RunStatus) -> u8 {
    match code_of(status) {
        0 => 0,
        crate::exit::ABORTED => crate::exit::ABORTED,
        _ => 1,
    }
}

/// `storlab fio` (or storlab called as `fio`) to its end: its errors said as fio says them,
/// `fio: ` and the reason, and fio's exit code 1 for every refusal.
/// fio's arguments as text: an argument that is not UTF-8 is named (fio's options are text;
/// a file name that is not goes in a job file's `filename=` through `${VAR}`).
pub fn utf8_args(args: impl Iterator<Item = std::ffi::OsString>) -> Result<Vec<String>, String> {
    args.enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|a| {
                format!(
                    "argument {} ({}) is not UTF-8: fio's options are text",
                    i + 1,
                    storlab_model::terminal::escaped(&a.to_string_lossy())
                )
            })
        })
        .collect()
}

pub fn main(args: Vec<String>) -> std::process::ExitCode {
    match fio(args) {
        Ok(code) => std::process::ExitCode::from(crate::exit::settled(code)),
        Err(e) => {
            eprintln!("fio: {}", crate::error_text(&e));
            std::process::ExitCode::from(1)
        }
    }
}
