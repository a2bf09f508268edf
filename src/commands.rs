//! The commands that measure: `demo`, `run`, `sweep`, `iozone`, `impact` (each job through
//! crates/session's one run path) and `scan`. Each reads its flags, hands the work to its crate
//! and prints what was stored.

use anyhow::{Context, Result};
use storlab_model::list_paths;
use storlab_model::run::RunKind;
use storlab_model::study::{Role, StudyParams};
use storlab_session::{run_study, LiveRun, RunOptions};
use storlab_store::Store;
use storlab_workload::iozone::{IozoneArgs, IozoneCell};
use storlab_workload::Job;

use crate::cli::{DemoArgs, ImpactArgs, JobArgs, OutputArgs, RunArgs, ScanArgs, SweepArgs};
use crate::results::{json_or_text, open_new, print_run, print_study};
use crate::running::{code_of, command_line, Measuring};
use crate::{exit, usage};

/// Runs one job through the one run path and prints the stored run.
fn execute(job: &Job, kind: RunKind, a: &JobArgs, out: &OutputArgs) -> Result<u8> {
    if let Some(launch) = crate::team::launched() {
        return crate::team::execute(job, kind, a, out, &launch);
    }
    a.alone()?;
    // Refusals come before the database is opened: a refused job leaves nothing behind.
    let prepared = storlab_session::prepare(job, &a.allow_devices)?;
    let mut m = Measuring::start(a.metrics.as_deref(), a.web_config.as_deref(), "run", out, a.quiet, None)?;
    let e = storlab_session::run_prepared(
        &mut m.store,
        prepared,
        &RunOptions::of_job(kind, a, &m.command, m.live.as_deref()),
    )?;
    let store = m.end();
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
    let job = storlab_workload::presets::demo(&dir)?;
    eprintln!(
        "storlab demo: qualifying {} (write, rewrite, read, reread, random read, random write; under a minute)",
        dir.display()
    );
    let job_args = JobArgs {
        quiet: args.quiet,
        ..Default::default()
    };
    let code = execute(&job, RunKind::Demo, &job_args, &args.output)?;
    eprintln!("storlab: the demo's files were removed");
    Ok(code)
}

pub fn run(args: RunArgs) -> Result<u8> {
    let fio = match &args.fio {
        Some(path) => Some(storlab_workload::fio::load(path, args.ignore_unknown)?),
        None => None,
    };
    let mut job = match &fio {
        Some(fio) => args.job.over(fio.job.clone())?,
        None => args.job.to_job()?,
    };
    if fio.is_some() {
        job.run_by_storlab();
    }
    // Before --parse-only, so that what it prints is the job as it would run.
    if let Some(id) = args.verify_against {
        job.verify_against(id, crate::results::open_existing(&args.output.db)?.writer_seed(id)?)?;
    }
    match (&fio, args.parse_only) {
        (Some(fio), true) => {
            json_or_text(args.output.json, || fio.document(&job), || fio.toml_of(&job))?;
            return Ok(0);
        }
        (None, true) => {
            json_or_text(
                args.output.json,
                || serde_json::json!({ "job": &job, "toml": job.to_toml() }),
                || job.to_toml(),
            )?;
            return Ok(0);
        }
        (Some(fio), false) => {
            for line in fio.remarks(args.fio.as_deref().expect("read from --fio")) {
                eprintln!("storlab: {line}");
            }
        }
        (None, false) => {}
    }
    execute(&job, RunKind::Run, &args.job, &args.output)
}

/// `storlab sweep`: every point of the varied settings is a job, all checked before the first
/// runs, run as one study.
pub fn sweep(args: SweepArgs) -> Result<u8> {
    let (points, params) = storlab_workload::sweep::study(
        &args.job.to_job()?,
        &args.vary,
        &storlab_session::resolve_options(&args.job.allow_devices),
        storlab_env::memory_bytes(),
        command_line(),
    )?;
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
    let n = points.len();
    let mut m = Measuring::start(
        a.metrics.as_deref(),
        a.web_config.as_deref(),
        "sweep",
        out,
        a.quiet,
        Some(format!("sweep of {n} points")),
    )?;
    let live = m.live.clone();
    let announce = |i: usize, role: &Role| {
        if let Some(v) = &live {
            v.study_progress(i, n, &role.to_string());
        }
    };
    let opts = RunOptions::of_job(kind, a, &m.command, m.live.as_deref());
    let (id, done) = run_study(&mut m.store, params, &points, &opts, announce)?;
    drop((opts, live));
    let store = m.end();
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
    if let Some(launch) = crate::team::launched() {
        return crate::team::iozone(&a, jobs, &launch);
    }
    let opts = storlab_session::resolve_options(&[]);
    for (_, j) in &jobs {
        storlab_workload::resolve(j, &opts)?;
    }
    let cells: Vec<IozoneCell> = jobs.iter().map(|(c, _)| *c).collect();
    let params = a.study_params(&cells);
    let out = crate::iozone::output(&a);
    let n = jobs.len();
    let mut m = Measuring::start(
        None,
        None,
        "iozone",
        &out,
        a.quiet,
        (n > 1).then(|| format!("IOzone, {n} cells")),
    )?;
    let opts = crate::iozone::options(&a, m.live.as_deref().map(|s| s as &dyn LiveRun));
    let (study, done) = storlab_session::run_cells(&mut m.store, jobs, a.study(&params), &opts)?;
    let store = m.end();
    crate::iozone::print_iozone(&store, &a, study, &done, params.note.as_deref())?;
    Ok(crate::iozone::exit_code(&done))
}

/// `storlab impact`: the request read from the flags, the study run by crates/impact, the
/// stored study printed.
pub fn impact(args: ImpactArgs) -> Result<u8> {
    use storlab_impact::request::{prepare, Request};
    let a = &args.job;
    let req = Request::from_flags(
        &args.study,
        command_line(),
        a.tags.clone(),
        a.allow_devices.clone(),
        a.keep,
    )?;
    // Refusals come before the database is opened: a refused study leaves nothing behind.
    let job = prepare(&req, a.to_job()?)?;
    let mut m = Measuring::start(
        a.metrics.as_deref(),
        a.web_config.as_deref(),
        "impact",
        &args.output,
        a.quiet,
        Some(req.describe()),
    )?;
    let req = Request {
        live: m.live.clone(),
        ..req
    };
    let o = storlab_impact::request::run(&mut m.store, job, &req, storlab_session::stop_flag());
    drop(req);
    let store = m.end();
    let o = o?;
    if o.aborted {
        eprintln!("storlab: stopped; stored what was done as study {}", o.study_id);
        return Ok(exit::ABORTED);
    }
    print_study(&store, o.study_id, args.output.json)?;
    eprintln!("storlab: stored study {} in {}", o.study_id, store.target());
    Ok(0)
}

pub fn scan(args: ScanArgs) -> Result<u8> {
    let opts = storlab_scan::options(&args.walk).map_err(|e| usage(e.to_string()))?;
    if storlab_metrics::status::wanted(args.output.json || args.output.csv, false) {
        eprintln!("scanning {} ...", list_paths(&opts.roots));
    }
    let mut store: Store = open_new(&args.output.db)?;
    // The earlier scan is found before the walk, so that a wrong --against costs nothing.
    let earlier = match &args.walk.against {
        Some(a) => store.earlier_scan(a, &opts)?,
        None => None,
    };
    if args.walk.against.is_some() && earlier.is_none() {
        // `last` with none yet: the first of a series (README's own example, run once).
        eprintln!(
            "storlab: --against last: no earlier scan of {} grouped by {} in {}; this scan is the first, and the next --against last compares with it",
            list_paths(&opts.roots),
            opts.group_by.name(),
            store.target()
        );
    }
    let report = storlab_scan::scan(&opts).map_err(|e| usage(e.to_string()))?;
    let run_id = storlab_session::store_scan(&mut store, &opts, &report, &args.tags, &command_line())?;
    let growth = earlier.map(|(id, when, before)| storlab_model::scan::growth(&before, &report, id, &when));
    crate::results::print_scan(&report, run_id, growth.as_ref(), &args.output)?;
    eprintln!("storlab: stored as run {run_id} in {}", store.target());
    if let Some(note) = storlab_report::scan::partial_note(&report) {
        eprintln!("{note}");
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
