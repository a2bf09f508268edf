//! `storlab fio --server[=ARGS]`: fio's server (fio 3.33's client/server protocol, crates/fionet)
//! on storlab's engine. Each client's job files and command lines run here as `storlab fio`
//! runs them, each run stored in this host's database (`--db`, as every run is stored where it
//! ran), and its figures sent back as fio's server sends them, so that fio's client — or
//! `storlab fio --client` — prints each host's block and their sum.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use storlab_fionet::address::Address;
use storlab_fionet::conn::Listener;
use storlab_fionet::iolog::IoLog;
use storlab_fionet::pdu::JobOption;
use storlab_fionet::serve::{Finished, Jobs, Progress, Sent};
use storlab_model::run::RunKind;
use storlab_session::{LiveRun, PhaseStart, RunOptions};
use storlab_workload::fio::cli::FioCommand;

use crate::cli::DbArgs;

/// Serves fio's clients until one sends EXIT.
pub fn serve(c: &FioCommand, arg: &str) -> Result<u8> {
    let addr = Address::parse(arg).map_err(|e| crate::usage(format!("--server={e}")))?;
    let listener = Listener::bind(&addr).map_err(|e| crate::usage(format!("--server: {e}")))?;
    // fio's protocol has no authentication: say where this listens and what that means. (A
    // Unix socket keeps the process's umask, not fio's 0777: only those its mode lets in.)
    eprintln!(
        "storlab fio: serving fio's clients on {}; fio's protocol has no authentication, so whoever \
         reaches this address runs jobs here as this user",
        listener.local()
    );
    if let Some(pidfile) = &c.daemonize {
        daemonize(pidfile)?;
    }
    let jobs = Arc::new(ServerJobs {
        db: DbArgs { db: c.db.clone() },
        allow_devices: c.allow_devices.clone(),
        tags: c.tags.clone(),
        keep: c.keep,
    });
    // Ctrl-C or SIGTERM ends the server (and stops a job running, which keeps what it did).
    let stop = storlab_session::stop_flag();
    storlab_fionet::serve::serve(&listener, jobs, &storlab_env::hostname(), stop)?;
    Ok(0)
}

/// fio's `--daemonize=PIDFILE`: the server goes on in a child of its own session, its pid
/// written to PIDFILE, and this process ends. Called while the process has one thread (before
/// any is started), so the child may go on after fork(2).
fn daemonize(pidfile: &std::path::Path) -> Result<()> {
    // SAFETY: fork(2) in a process of one thread; the child only continues this code.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(std::io::Error::last_os_error()).context("--daemonize: fork"),
        0 => {
            // SAFETY: setsid(2) in the child, which leads no process group yet.
            unsafe { libc::setsid() };
            // As fio's daemon: its standard streams on /dev/null, away from the terminal.
            let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null")?;
            for fd in 0..3 {
                // SAFETY: dup2(2) of an open descriptor onto the standard ones.
                unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) };
            }
            Ok(())
        }
        child => {
            std::fs::write(pidfile, format!("{child}\n"))
                .with_context(|| format!("--daemonize: writing {}", pidfile.display()))?;
            std::process::exit(0)
        }
    }
}

/// How this server runs its clients' jobs: storlab's own flags given to `--server`.
struct ServerJobs {
    db: DbArgs,
    allow_devices: Vec<std::path::PathBuf>,
    tags: Vec<storlab_model::run::Tag>,
    keep: bool,
}

impl ServerJobs {
    /// What a client sent as one `storlab fio` command line: its command lines' arguments
    /// (without fio's own name), then its job files, written to a directory of their own, then
    /// the job files it named on this host (fio's --remote-config), read where they are.
    fn command(&self, sent: &Sent) -> Result<(FioCommand, tempfile::TempDir)> {
        let dir = tempfile::Builder::new().prefix("storlab-fio-server-").tempdir()?;
        let mut args: Vec<String> = sent.lines.iter().flat_map(|l| l.iter().skip(1).cloned()).collect();
        for (i, text) in sent.files.iter().enumerate() {
            let path = dir.path().join(format!("job{}.fio", i + 1));
            std::fs::write(&path, text)?;
            args.push(path.display().to_string());
        }
        for path in &sent.remote {
            if std::fs::File::open(path).is_err() {
                // fio's server's words.
                anyhow::bail!("unable to open '{path}' job file");
            }
            args.push(path.clone());
        }
        let c = FioCommand::parse(&args)?;
        if c.job.is_none() {
            anyhow::bail!("no job: the client sent no job file or --name");
        }
        Ok((c, dir))
    }

    /// The job run and stored here, read back as fio's server reports it.
    fn finish(&self, sent: &Sent, progress: &Progress) -> Result<Finished> {
        let (c, _dir) = self.command(sent)?;
        let Some(fio) = c.job.as_ref() else {
            anyhow::bail!("no job")
        };
        let (mut run, end) = self.run_stored(&c, fio, progress)?;
        let errors = end.why.iter().map(|why| format!("fio: {why}\n")).collect();
        if let Some(f) = end.failed {
            f.add_to(&mut run);
        }
        let o = storlab_report::fio::FioJsonOptions::of_command(&c, fio);
        let (stats, groups) = storlab_report::fio::thread_stats(&run, &o, std::process::id());
        // fio's server prints what starts only in its normal output (the client's
        // --output-format reaches it with the client's command line).
        let normal = c.formats.contains(&storlab_workload::fio::cli::OutputFormat::Normal);
        Ok(Finished {
            starting: if normal { starting_lines(&run, &o) } else { Vec::new() },
            errors,
            options: options(&run, &o),
            stats,
            groups,
            logs: logs(&run, fio)?,
            error: if end.errno != 0 {
                end.errno as u32
            } else {
                u32::from(end.exit)
            },
        })
    }

    /// The job run and stored in this host's database, ended early by the client's QUIT (fio's
    /// client on Ctrl-C); the stored run and how it ended.
    fn run_stored(
        &self,
        c: &FioCommand,
        fio: &storlab_workload::fio::FioJob,
        progress: &Progress,
    ) -> Result<(storlab_model::run::RunDetail, crate::fio::FioEnd)> {
        let prepared = storlab_session::prepare(&fio.job, &self.allow_devices)?;
        let plans = prepared.phases().to_vec();
        let mut store = crate::results::open_new(&self.db)?;
        let live = Eta {
            progress,
            started: Instant::now(),
            jobs: plans.iter().map(|p| p.workers.len() as u32).sum(),
        };
        let control = storlab_engine::PhaseControl::new();
        let opts = RunOptions {
            kind: RunKind::Run,
            tags: &self.tags,
            allow_devices: &self.allow_devices,
            keep: self.keep,
            command: &c.command_line,
            control: Some(&control),
            live: Some(&live),
        };
        let done = AtomicBool::new(false);
        let ran = std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if progress.quitting() {
                        control.finish();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
            });
            let ran = storlab_session::run_prepared(&mut store, prepared, &opts);
            done.store(true, Ordering::Relaxed);
            ran
        });
        let end = crate::fio::FioEnd::of(ran, &plans)?;
        let run = store
            .run(end.run_id, true)?
            .ok_or_else(|| anyhow::anyhow!("run {} is not in {}", end.run_id, store.target()))?;
        Ok((run, end))
    }
}

/// The logs the job asked for, for the client, which writes them (fio's server writes none of
/// its own).
fn logs(run: &storlab_model::run::RunDetail, fio: &storlab_workload::fio::FioJob) -> Result<Vec<IoLog>> {
    let mut logs = Vec::new();
    let mut keep = |path: std::path::PathBuf, text: String| -> std::result::Result<(), String> {
        let name = path.display().to_string();
        // fio's names end `.N.log`, N the job's thread.
        let thread = name.rsplit('.').nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
        logs.extend(IoLog::of_text(&name, &text, thread));
        Ok(())
    };
    storlab_report::fio::log_files(run, &fio.phase_logs, &mut keep).map_err(|e| anyhow::anyhow!(e))?;
    Ok(logs)
}

impl Jobs for ServerJobs {
    fn load(&self, sent: &Sent) -> Result<Option<(u32, u32)>, String> {
        // fio's client sends its command line's flags (--output-format, …) before its job
        // files: a line without a job of its own waits for them, as fio's server does.
        let has_job = !sent.files.is_empty()
            || !sent.remote.is_empty()
            || sent.lines.iter().flatten().any(|a| a.starts_with("--name"));
        if !has_job {
            return Ok(None);
        }
        let counted = || -> Result<(u32, u32)> {
            let (c, _dir) = self.command(sent)?;
            let Some(fio) = c.job.as_ref() else {
                anyhow::bail!("no job")
            };
            let plans = storlab_session::prepare(&fio.job, &self.allow_devices)?
                .phases()
                .to_vec();
            let threads = plans.iter().map(|p| p.workers.len() as u32).sum();
            let entries = storlab_report::fio::planned_entries(&plans, &fio.phase_reporting);
            Ok((threads, entries as u32))
        };
        counted().map(Some).map_err(|e| format!("fio: {e:#}"))
    }

    fn run(&self, sent: &Sent, progress: &Progress) -> Finished {
        self.finish(sent, progress).unwrap_or_else(|e| Finished {
            errors: vec![format!("fio: {e:#}\n")],
            error: 1,
            ..Default::default()
        })
    }
}

/// What fio prints as its jobs start, each line apart, without fio's version (its client
/// prints its own).
fn starting_lines(run: &storlab_model::run::RunDetail, o: &storlab_report::fio::FioJsonOptions) -> Vec<String> {
    storlab_report::fio::starting(run, o)
        .lines()
        .filter(|l| *l != storlab_workload::fio::FIO_VERSION)
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The global options as given, then each reported job's "job options" (its place among the
/// entries the index fio's client files them by), bare switches with no value.
fn options(run: &storlab_model::run::RunDetail, o: &storlab_report::fio::FioJsonOptions) -> Vec<JobOption> {
    let option = |global: bool, index: usize, (name, v): &(String, Option<String>)| JobOption {
        global,
        index: index as u32,
        name: name.clone(),
        value: v.clone().unwrap_or_default(),
    };
    let mut out: Vec<JobOption> = o.global_options.iter().map(|g| option(true, 0, g)).collect();
    for (i, given) in storlab_report::fio::entry_options(run, o).iter().enumerate() {
        out.extend(given.iter().map(|g| option(false, i, g)));
    }
    out
}

/// The run's progress as fio's client asks for it every second: jobs running, the time
/// gone, the rates of the last interval.
struct Eta<'a> {
    progress: &'a Progress,
    started: Instant,
    jobs: u32,
}

impl storlab_engine::IntervalObserver for Eta<'_> {
    fn interval(&self, _target: u16, _bytes: [u64; 2], _ops: [u64; 2], _latency: &[storlab_engine::Recorded; 2]) {}

    fn sample(&self, s: &storlab_model::result::Sample) {
        let secs = s.seconds().max(1e-9);
        self.progress.update(|e| {
            e.rate = [
                (s.bytes_read as f64 / secs) as u64,
                (s.bytes_written as f64 / secs) as u64,
                0,
            ];
            e.iops = [
                (s.ops_read as f64 / secs) as u32,
                (s.ops_written as f64 / secs) as u32,
                0,
            ];
            e.elapsed_sec = self.started.elapsed().as_secs();
        });
    }
}

impl LiveRun for Eta<'_> {
    fn phase_started(&self, _phase: &PhaseStart) {
        self.progress.update(|e| {
            e.nr_running = self.jobs;
            e.run_str = vec![b'R'; self.jobs as usize];
            e.elapsed_sec = self.started.elapsed().as_secs();
        });
    }

    fn phase_ended(&self, _run_id: i64, _seq: usize, _result: Option<&storlab_model::result::PhaseResult>) {}
}
