//! The commands that measure: `demo`, `run`, `sweep`, `iozone`, `impact` (each job through
//! crates/session's one run path) and `scan`. Each reads its flags, hands the work to its crate
//! and prints what was stored.

use std::time::Duration;

use anyhow::{Context, Result};
use storlab_model::list_paths;
use storlab_model::run::RunKind;
use storlab_model::scan::{GroupBy, ScanOptions, TimeBasis};
use storlab_model::study::{Role, StudyParams, SweepParams};
use storlab_session::{run_study, LiveRun, RunOptions};
use storlab_store::Store;
use storlab_workload::iozone::{IozoneArgs, IozoneCell};
use storlab_workload::{resolve, Job};

use crate::cli::{DemoArgs, ImpactArgs, JobArgs, OutputArgs, RunArgs, ScanArgs, SweepArgs};
use crate::results::{open_new, print_run, print_study};
use crate::running::{code_of, command_line, serve_live, status_line, views};
use crate::{exit, usage};

/// The job `storlab demo` runs: a short qualification of one directory.
const DEMO_JOB: &str = r#"
name = "demo"
threads = 2
size = "128m"
bs = "1m"
fsync = "end"
phase = [
    "write",
    "rewrite",
    "read",
    "reread",
    { kind = "randread", bs = "4k", runtime = "5s" },
    { kind = "randwrite", bs = "4k", runtime = "5s" },
]
"#;

/// Runs one job through the one run path and prints the stored run.
fn execute(job: &Job, kind: RunKind, a: &JobArgs, out: &OutputArgs) -> Result<u8> {
    if let Some(launch) = crate::ranks::launched() {
        return crate::ranks::execute(job, kind, a, out, &launch);
    }
    if a.stonewall {
        return Err(usage(
            "--stonewall ends every MPI rank's phase when the first rank's is done: it applies under mpirun or srun (docs/mpi.md)",
        ));
    }
    // Refusals come before the database is opened: a refused job leaves nothing behind.
    let prepared = storlab_session::prepare(job, &a.allow_devices)?;
    let live = serve_live(a, "run")?;
    let mut store = open_new(&out.db)?;
    let command = command_line();
    let status = status_line(out, a.quiet, None);
    let views = views(live.as_ref(), &status);
    let e = storlab_session::run_prepared(
        &mut store,
        prepared,
        &RunOptions {
            kind,
            tags: &a.tags,
            allow_devices: &a.allow_devices,
            keep: a.keep,
            command: &command,
            control: None,
            live: views.as_deref().map(|v| v as &dyn LiveRun),
        },
    )?;
    drop((views, status));
    print_run(&store, e.run_id, false, out)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(code_of(e.status))
}

pub fn demo(args: DemoArgs) -> Result<u8> {
    let (dir, _tmp) = match &args.dir {
        Some(d) => (d.clone(), None),
        None => {
            let t = tempfile::Builder::new()
                .prefix("storlab-demo-")
                .tempdir()
                .context("cannot create a temporary directory for the demo")?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let mut job = Job::parse(DEMO_JOB, "demo job")?;
    job.targets = vec![dir.clone()];
    eprintln!(
        "storlab demo: qualifying {} (write, rewrite, read, reread, random read, random write; under a minute)",
        dir.display()
    );
    let job_args = JobArgs {
        job: None,
        job_file: None,
        targets: Vec::new(),
        phases: Vec::new(),
        tags: Vec::new(),
        allow_devices: Vec::new(),
        keep: false,
        metrics: None,
        quiet: args.quiet,
        stonewall: false,
        settings: Default::default(),
    };
    let code = execute(&job, RunKind::Demo, &job_args, &args.output)?;
    eprintln!("storlab: the demo's files were removed");
    Ok(code)
}

pub fn run(args: RunArgs) -> Result<u8> {
    let mut job = match &args.fio {
        Some(path) => {
            let fio = storlab_workload::fio::load(path, args.ignore_unknown)?;
            let job = args.job.over(fio.job.clone())?;
            if args.parse_only {
                if args.output.json {
                    crate::results::print_json(&serde_json::json!({
                        "job": job,
                        "toml": fio.toml,
                        "notes": fio.notes,
                        "ignored": fio.ignored,
                    }))?;
                } else {
                    print!("{}", fio.toml);
                }
                return Ok(0);
            }
            for n in &fio.notes {
                eprintln!("storlab: {}: {n}", path.display());
            }
            if !fio.ignored.is_empty() {
                eprintln!(
                    "storlab: {}: ignored (--ignore-unknown): {}",
                    path.display(),
                    fio.ignored.join(", ")
                );
            }
            job
        }
        None => args.job.to_job()?,
    };
    if let Some(id) = args.verify_against {
        let seed = writer_seed(&args.output.db, id)?;
        match job.settings.seed {
            Some(given) if given != seed => {
                return Err(usage(format!(
                    "--seed {given} and --verify-against {id}: run {id} wrote with seed 0x{seed:016x}; give one or the other"
                )))
            }
            _ => job.settings.seed = Some(seed),
        }
        job.settings.verify = Some(true);
    }
    execute(&job, RunKind::Run, &args.job, &args.output)
}

/// The seed the stored run `id` wrote its data with (its first phase that wrote, with
/// verification on).
fn writer_seed(db: &crate::cli::DbArgs, id: i64) -> Result<u64> {
    let store = crate::results::open_existing(db)?;
    let run = store
        .run(id, false)?
        .ok_or_else(|| usage(format!("--verify-against {id}: no run {id} in {}", store.target())))?;
    run.phases
        .iter()
        .find_map(|p| match &p.params {
            storlab_model::run::PhaseParams::Plan(plan) if plan.kind.writes() && plan.settings.verify => Some(plan.seed),
            _ => None,
        })
        .ok_or_else(|| {
            usage(format!(
                "--verify-against {id}: run {id} wrote nothing with --verify (its blocks carry no header to check); verify a run that wrote with --verify --keep"
            ))
        })
}

/// `storlab sweep`: every point of the varied settings is a job, all checked before the first
/// runs, run as one study.
pub fn sweep(args: SweepArgs) -> Result<u8> {
    let (points, skipped) = storlab_workload::sweep::expand(&args.job.to_job()?, &args.vary)?;
    let opts = storlab_session::resolve_options(&args.job.allow_devices);
    let note = storlab_workload::sweep::check(&points, &opts, storlab_env::memory_bytes())?;
    let vary: Vec<String> = args
        .vary
        .iter()
        .filter_map(|v| storlab_workload::sweep::points(v).ok())
        .map(|(k, _)| k)
        .collect();
    // A file size × block size sweep is IOzone's matrix: the report draws it as heat maps.
    let matrix = vary.len() == 2 && vary.iter().any(|k| k == "size") && vary.iter().any(|k| k == "bs");
    let params = SweepParams {
        points: args
            .vary
            .iter()
            .filter_map(|v| storlab_workload::sweep::points(v).ok())
            .collect(),
        vary,
        command: command_line(),
        skipped,
        note,
    };
    let params = if matrix {
        StudyParams::SweepMatrix(params)
    } else {
        StudyParams::Sweep(params)
    };
    run_points(points, params, RunKind::Sweep, &args.job, &args.output)
}

/// Runs the points of a study and prints the stored study.
fn run_points(
    points: Vec<(Role, Job)>,
    params: StudyParams,
    kind: RunKind,
    a: &JobArgs,
    out: &OutputArgs,
) -> Result<u8> {
    let live = serve_live(a, "sweep")?;
    let mut store = open_new(&out.db)?;
    let command = command_line();
    let n = points.len();
    let status = status_line(out, a.quiet, Some(format!("sweep of {n} points")));
    let views = views(live.as_ref(), &status);
    let (id, done) = run_study(
        &mut store,
        params,
        &points,
        &RunOptions {
            kind,
            tags: &a.tags,
            allow_devices: &a.allow_devices,
            keep: a.keep,
            command: &command,
            control: None,
            live: views.as_deref().map(|v| v as &dyn LiveRun),
        },
        |i, role| {
            if let Some(v) = &views {
                v.study_progress(i, n, &role.to_string());
            }
        },
    )?;
    drop((views, status));
    print_study(&store, id, out.json)?;
    eprintln!(
        "storlab: stored {} runs as study {id} in {}",
        done.done.len(),
        store.target()
    );
    Ok(if done.aborted { exit::ABORTED } else { 0 })
}

/// `storlab iozone`: IOzone's command line, each cell a run, several cells a study; printed in
/// IOzone's layout.
pub fn iozone(args: Vec<String>) -> Result<u8> {
    let a = IozoneArgs::parse(&args)?;
    if a.help {
        println!("storlab iozone: IOzone's command line on storlab's engine. Supported flags:");
        for (f, what) in storlab_workload::iozone::flag_help() {
            println!("  {f:<14} {what}");
        }
        return Ok(0);
    }
    // Every cell is checked before anything is written.
    let jobs = a.jobs()?;
    if let Some(launch) = crate::ranks::launched() {
        return crate::ranks::iozone(&a, jobs, &launch);
    }
    let opts = storlab_session::resolve_options(&[]);
    for (_, j) in &jobs {
        resolve(j, &opts)?;
    }
    let cells: Vec<IozoneCell> = jobs.iter().map(|(c, _)| *c).collect();
    let out = crate::iozone::output(&a);
    let mut store = open_new(&out.db)?;
    let params = a.study_params(&cells);
    let points: Vec<(Role, Job)> = jobs.into_iter().map(|(c, j)| (c.role(), j)).collect();
    let n = points.len();
    let status = status_line(&out, a.quiet, (n > 1).then(|| format!("IOzone, {n} cells")));
    let opts = RunOptions {
        kind: RunKind::Iozone,
        tags: &a.tags,
        allow_devices: &[],
        keep: a.keep,
        command: &a.command_line,
        control: None,
        live: status.as_deref().map(|s| s as &dyn LiveRun),
    };
    let announce = |i: usize, role: &Role| {
        if let (Some(s), true) = (&status, n > 1) {
            s.study_progress(i, n, &role.to_string());
        }
    };
    // One cell is one run; several are a study (IOzone's matrix, or a range of workers).
    let (study, done) = if points.len() > 1 {
        let (id, done) = run_study(&mut store, a.study(&params), &points, &opts, announce)?;
        (Some(id), done)
    } else {
        (None, storlab_session::run_points(&mut store, &points, &opts, announce)?)
    };
    drop(status);
    crate::results::print_iozone(&store, &a, study, &done, params.note.as_deref())?;
    Ok(crate::iozone::exit_code(&done))
}

fn duration(flag: &str, v: &str) -> Result<Duration> {
    let d: storlab_units::Duration = v.parse().map_err(|e| usage(format!("{flag} {v}: {e}")))?;
    Ok(d.std())
}

fn percent(flag: &str, v: &str) -> Result<f64> {
    v.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| usage(format!("{flag} {v}: expected a percentage such as 5%")))
}

/// `storlab impact`: the request read from the flags, the study run by crates/impact, the
/// stored study printed.
pub fn impact(args: ImpactArgs) -> Result<u8> {
    use storlab_impact::request::{Mode, Request};
    use storlab_impact::study::{EarlyFinish, HeldOptions};
    let task_timeout = duration("--task-timeout", &args.task_timeout)?;
    let budget = args.budget.as_deref().map(|b| percent("--budget", b)).transpose()?;
    let pool = match (args.pool_servers, budget) {
        (Some(_), None) => {
            return Err(usage(
                "--pool-servers needs --budget PERCENT (the pool-wide loss allowed)",
            ))
        }
        (Some(n), Some(b)) => Some((n, b)),
        _ => None,
    };
    let mode = if args.held {
        Mode::Held(HeldOptions {
            before: duration("--before", &args.before)?,
            after: duration("--after", &args.after)?,
            stagger: args.stagger.as_deref().map(|s| duration("--stagger", s)).transpose()?,
            limit: task_timeout,
        })
    } else if args.reverse {
        Mode::Reverse {
            impact_study: args.impact_study,
        }
    } else {
        let early = match args.on_early_finish.as_str() {
            "discard" => EarlyFinish::Discard,
            "restart" => EarlyFinish::Restart,
            other => return Err(usage(format!("--on-early-finish {other}: expected discard or restart"))),
        };
        Mode::Users {
            repeat: args.repeat,
            early,
        }
    };
    let req = Request {
        tasks: args.task.clone(),
        mode,
        task_timeout,
        pool,
        command: command_line(),
        tags: args.job.tags.clone(),
        allow_devices: args.job.allow_devices.clone(),
        keep: args.job.keep,
        live: None,
    };
    // Refusals come before the database is opened: a refused study leaves nothing behind.
    let job = storlab_impact::request::prepare(&req, args.job.to_job()?)?;
    let live = serve_live(&args.job, "impact")?;
    let status = status_line(&args.output, args.job.quiet, Some(impact_label(&args)));
    let req = Request {
        live: views(live.as_ref(), &status),
        ..req
    };
    let mut store = open_new(&args.output.db)?;
    let o = storlab_impact::request::run(&mut store, job, &req, storlab_session::stop_flag());
    drop((req, status));
    let o = o?;
    if o.aborted {
        eprintln!("storlab: stopped; stored what was done as study {}", o.study_id);
        return Ok(exit::ABORTED);
    }
    print_study(&store, o.study_id, args.output.json)?;
    eprintln!("storlab: stored study {} in {}", o.study_id, store.target());
    Ok(0)
}

/// What an impact study is, for its status line.
fn impact_label(args: &ImpactArgs) -> String {
    let tasks = args.task.join(", ");
    if args.held {
        format!("held-rate study of {tasks}")
    } else if args.reverse {
        format!("cost to the task of {tasks}")
    } else {
        let n = args.repeat;
        format!(
            "cost to the users of {tasks} ({n} repetition{})",
            if n == 1 { "" } else { "s" }
        )
    }
}

/// The scan's options from the flags.
fn scan_options(args: &ScanArgs) -> Result<ScanOptions> {
    let mut ages = Vec::new();
    for part in args.age.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let d: storlab_units::Duration = part.parse().map_err(|e| usage(format!("--age {part}: {e}")))?;
        if d.0 == 0 || !d.0.is_multiple_of(1_000_000_000) {
            return Err(usage(format!(
                "--age {part}: a threshold is a whole number of seconds, at least 1s (e.g. 60d, 36h)"
            )));
        }
        ages.push(d.0 / 1_000_000_000);
    }
    ages.sort_unstable();
    ages.dedup();
    let group_by = GroupBy::parse(&args.group_by).map_err(|e| usage(format!("--group-by: {e}")))?;
    let time = TimeBasis::from_name(&args.time)
        .ok_or_else(|| usage(format!("--time {}: expected atime, mtime or max", args.time)))?;
    let threads = match args.threads {
        Some(0) => return Err(usage("--threads 0: at least 1")),
        Some(n) => n,
        // Twice the CPUs: with a warm cache the walk is CPU work, and with a cold one the
        // extra threads keep the device busy with several directory reads at once.
        None => std::thread::available_parallelism().map(|n| n.get() * 2).unwrap_or(4),
    };
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Ok(ScanOptions {
        roots: args.paths.clone(),
        ages,
        group_by,
        time,
        cross_mounts: args.cross_mounts,
        threads,
        top: args.top,
        now_ns,
        exclude: args.exclude.clone(),
    })
}

pub fn scan(args: ScanArgs) -> Result<u8> {
    let opts = scan_options(&args)?;
    if storlab_metrics::status::wanted(args.output.json || args.output.csv, false) {
        eprintln!("scanning {} ...", list_paths(&opts.roots));
    }
    let mut store: Store = open_new(&args.output.db)?;
    // The earlier scan is found before the walk, so that a wrong --against costs nothing.
    let earlier = match &args.against {
        Some(a) => Some(store.earlier_scan(a, &opts)?),
        None => None,
    };
    let report = storlab_scan::scan(&opts).map_err(|e| usage(e.to_string()))?;
    let run_id = storlab_session::store_scan(&mut store, &opts, &report, &args.tags, &command_line())?;
    let growth = earlier.map(|(id, when, before)| storlab_model::scan::growth(&before, &report, id, &when));
    crate::results::print_scan(&report, run_id, growth.as_ref(), &args.output)?;
    eprintln!("storlab: stored as run {run_id} in {}", store.target());
    if report.partial() {
        eprintln!(
            "storlab: partial result: {} entr{} could not be counted (named above); the figures are a lower bound",
            report.problem_count,
            if report.problem_count == 1 { "y" } else { "ies" }
        );
        return Ok(exit::PARTIAL);
    }
    Ok(0)
}

/// `storlab completions SHELL`: the script, from the one definition of the flags.
pub fn completions(shell: clap_complete::Shell) -> Result<u8> {
    use clap::CommandFactory;
    let mut cmd = crate::cli::Cli::command();
    clap_complete::generate(shell, &mut cmd, "storlab", &mut std::io::stdout());
    Ok(0)
}

/// `storlab manpages DIR`: storlab.1 and a page per subcommand, storlab-monitor-run.1 and so
/// on, from the one definition of the flags (clap_mangen).
pub fn manpages(dir: &std::path::Path) -> Result<u8> {
    use clap::CommandFactory;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = crate::cli::Cli::command();
    cmd.build();
    let mut written = 0;
    write_pages(&cmd, "storlab", dir, &mut written)?;
    eprintln!("storlab: wrote {written} man pages in {}", dir.display());
    Ok(0)
}

fn write_pages(cmd: &clap::Command, name: &str, dir: &std::path::Path, written: &mut usize) -> Result<()> {
    let page = cmd.clone().name(name.to_string()).bin_name(name.replace('-', " "));
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    let file = dir.join(format!("{name}.1"));
    std::fs::write(&file, out).with_context(|| format!("writing {}", file.display()))?;
    *written += 1;
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
