//! `storlab impact`: the three studies of crates/impact driven from the command line — the cost
//! of a task to the users (default), the cost of the users to the task (`--reverse`) and a job
//! held at its rate through one or more tasks (`--held`) — with the pool projection, stored as a
//! study with its runs, events and task samples, printed as tables or JSON.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use storlab_engine::PhaseControl;
use storlab_impact::record::Recorder;
use storlab_impact::study::{
    self, analyse_held, cost_to_task, cost_to_users, held_rate, impacts, project, round_seconds, worst_loss,
    EarlyFinish, Foreground, ForegroundRun, HeldOptions, Projection, METRICS,
};
use storlab_impact::task::{parse, Task};
use storlab_stats::Verdict;
use storlab_workload::Job;

use crate::cli::{ImpactArgs, JobArgs};
use crate::runner::{db_path, run_job, stop_flag, ExecOptions};

/// A request the user can fix (unknown task, N = 0, ...): exit 2, through the studies' own
/// error type.
fn usage(m: impl Into<String>) -> anyhow::Error {
    study::StudyError(m.into()).into()
}

/// The foreground job, run through `storlab run`'s own path (resolved, stored, cleaned up).
struct JobRunner<'a> {
    job: Job,
    db: PathBuf,
    args: &'a JobArgs,
    chatty: bool,
    command: String,
}

impl Foreground for JobRunner<'_> {
    fn run(&mut self, kind: &str, control: &PhaseControl) -> Result<ForegroundRun> {
        if self.chatty {
            eprintln!("[{kind}]");
        }
        let e = run_job(
            &self.job,
            &self.db,
            &ExecOptions {
                kind,
                tags: &self.args.tags,
                allow: &self.args.allow_devices,
                keep: self.args.keep,
                chatty: self.chatty,
                command: self.command.clone(),
                control: Some(control),
            },
        )?;
        Ok(ForegroundRun {
            run_id: e.run_id,
            aborted: e.status == "aborted",
            results: e.results,
        })
    }
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

pub fn impact(args: ImpactArgs) -> Result<u8> {
    let timeout = duration("--task-timeout", &args.task_timeout)?;
    let budget = args.budget.as_deref().map(|b| percent("--budget", b)).transpose()?;
    if args.pool_servers == Some(0) {
        return Err(usage("--pool-servers 0: a pool has at least one server"));
    }
    if args.pool_servers.is_some() && budget.is_none() {
        return Err(usage(
            "--pool-servers needs --budget PERCENT (the pool-wide loss allowed)",
        ));
    }
    if args.task.len() > 1 && !args.held {
        return Err(usage(
            "several --task are a sequence, which only --held runs; the other studies take one task",
        ));
    }
    let mut job = args.job.to_job()?;
    // cmd:NAME is the job file's [task.NAME]; any other description is parsed as it stands.
    let mut tasks: Vec<Box<dyn Task>> = args
        .task
        .iter()
        .map(|s| match s.strip_prefix("cmd:") {
            Some(name) if !name.contains('|') => {
                let t = job.tasks.get(name).ok_or_else(|| {
                    usage(format!(
                        "--task {s}: the job has no [task.{name}] table{}",
                        if job.tasks.is_empty() {
                            String::from(" (give a job file with one, or cmd:START|STATUS|STOP)")
                        } else {
                            format!("; it has {}", job.tasks.keys().cloned().collect::<Vec<_>>().join(", "))
                        }
                    ))
                })?;
                Ok(storlab_impact::task::command(
                    t.start.clone(),
                    t.status.clone(),
                    t.stop.clone(),
                ))
            }
            _ => parse(s).map_err(|e| usage(e.to_string())),
        })
        .collect::<Result<_>>()?;
    let held = if args.held {
        let before = duration("--before", &args.before)?;
        let after = duration("--after", &args.after)?;
        let stagger = args.stagger.as_deref().map(|s| duration("--stagger", s)).transpose()?;
        // The job runs until the study ends it; its runtime only bounds a study gone wrong.
        let mut s = storlab_workload::Settings::default();
        let bound = before + after + timeout + stagger.unwrap_or_default() * tasks.len() as u32;
        s.runtime = Some(storlab_units::Duration(
            (bound + Duration::from_secs(600)).as_nanos().min(u64::MAX as u128) as u64,
        ));
        job.override_with(&[], &[], &s)?;
        Some(HeldOptions {
            before,
            after,
            stagger,
            limit: timeout,
        })
    } else {
        None
    };
    let plan = storlab_workload::resolve(
        &job,
        &storlab_workload::ResolveOptions {
            allow_devices: args.job.allow_devices.clone(),
            file_tag: std::process::id().to_string(),
            default_seed: 1,
        },
    )?;
    if held.is_some() {
        if plan.phases.len() != 1 {
            return Err(usage(format!(
                "a held-rate study runs one phase; the job has {} (give one --phase)",
                plan.phases.len()
            )));
        }
        if plan.phases[0].rate.is_none() {
            return Err(usage(
                "a held-rate study needs the rate to hold: give --rate (e.g. --rate 2000iops) or rate in the job file",
            ));
        }
    }
    let output = &args.output;
    let mut runner = JobRunner {
        job,
        db: db_path(output),
        args: &args.job,
        chatty: std::io::stderr().is_terminal() && !output.json,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let rec = Recorder::new();
    let stop = stop_flag();
    if let Some(o) = held {
        held_study(&mut tasks, &mut runner, &o, &rec, stop, &args)
    } else if args.reverse {
        reverse_study(tasks[0].as_mut(), &mut runner, timeout, &rec, stop, &args, budget)
    } else {
        users_study(tasks[0].as_mut(), &mut runner, &rec, stop, &args, budget)
    }
}

fn open_store(db: &std::path::Path) -> Result<storlab_store::Store> {
    Ok(storlab_store::Store::open(db, &storlab_env::capture(&[]).host)?)
}

fn print_events(rec: &Recorder) {
    println!("events:");
    for e in rec.events() {
        println!(
            "  {:>8.1} s  {:<22} {}{}",
            e.t,
            e.kind,
            e.detail,
            e.run_id.map(|r| format!(" [run {r}]")).unwrap_or_default()
        );
    }
}

fn print_projection(p: &Projection, worse: Option<&Projection>, what: &str) {
    println!(
        "pool projection: {} servers, budget {:.1} %, one server's loss {:.1} % ({what})",
        p.servers, p.budget_percent, p.loss_percent
    );
    let shown: Vec<String> = p
        .by_k
        .iter()
        .take(12)
        .map(|(k, l)| format!("k={k}: {l:.2} %"))
        .collect();
    println!(
        "  pool-wide loss with k servers at once: {}{}",
        shown.join(", "),
        if p.by_k.len() > 12 { ", ..." } else { "" }
    );
    match p.largest_k {
        0 => println!(
            "  largest k inside the budget: none — even one server at a time costs the pool more than {:.1} %",
            p.budget_percent
        ),
        k => println!("  largest k inside the budget: {k}"),
    }
    if let Some(w) = worse {
        println!(
            "  at the 95 % interval's worse end ({:.1} % loss): largest k {}",
            w.loss_percent, w.largest_k
        );
    }
}

/// An impact cell: the change in percent with its 95 % interval ("-36.8 [-58.4, -15.2]").
fn impact_cell(c: &storlab_stats::Comparison) -> String {
    match (c.diff_percent, c.ci95_percent) {
        (Some(d), Some((lo, hi))) => format!("{d:+.1} [{lo:+.1}, {hi:+.1}]"),
        (Some(d), None) => format!("{d:+.1}"),
        _ => "-".into(),
    }
}

/// The held study's stretch table: a header naming the units, a row per stretch.
fn stretch_table(a: &study::HeldAnalysis) -> Vec<Vec<String>> {
    let behind_unit = if a.unit == "IOPS" { "ops" } else { "MiB" };
    let mut rows = vec![vec![
        "stretch".to_string(),
        "intervals".into(),
        format!("mean {}", a.unit),
        format!("lowest {}", a.unit),
        "mean p99 µs".into(),
        "worst p99.9 µs".into(),
        format!("most behind ({behind_unit})"),
    ]];
    for st in &a.stretches {
        rows.push(vec![
            format!("{:?}", st.stretch).to_lowercase(),
            st.intervals.to_string(),
            format!("{:.1}", st.achieved),
            format!("{:.1}", st.achieved_min),
            format!("{:.0}", st.p99_us),
            format!("{:.0}", st.p99_9_max_us),
            format!("{:.0}", st.behind_max),
        ]);
    }
    rows
}

// ---------------------------------------------------------------------------------------------

fn users_study(
    task: &mut dyn Task,
    runner: &mut JobRunner,
    rec: &Recorder,
    stop: &std::sync::atomic::AtomicBool,
    args: &ImpactArgs,
    budget: Option<f64>,
) -> Result<u8> {
    let early = match args.on_early_finish.as_str() {
        "discard" => EarlyFinish::Discard,
        "restart" => EarlyFinish::Restart,
        other => return Err(usage(format!("--on-early-finish {other}: expected discard or restart"))),
    };
    let describe = task.describe();
    let s = cost_to_users(task, runner, args.repeat, early, rec, stop)?;
    let kinds: Vec<String> = runner.job.phases.iter().map(|(k, _)| k.name().to_string()).collect();
    let table = impacts(&s, &kinds);
    let loss = worst_loss(&table);
    let projection = match (args.pool_servers, budget, &loss) {
        (Some(n), Some(b), Some((l, worse, _))) => Some((project(*l, n, b), project(*worse, n, b))),
        _ => None,
    };
    let (events, samples) = (rec.events(), rec.samples());
    let mut store = open_store(&runner.db)?;
    let members: Vec<(i64, String)> = s
        .repetitions
        .iter()
        .map(|r| {
            (
                r.run_id,
                format!(
                    "{} r{}{}",
                    if r.loaded { "loaded" } else { "idle" },
                    r.index,
                    if r.overlapped || !r.loaded {
                        ""
                    } else {
                        " (task ended early)"
                    }
                ),
            )
        })
        .collect();
    let study_id = store.save_study(
        "impact",
        &json!({
            "task": args.task[0], "repeat": args.repeat, "command": runner.command,
            "aborted": s.aborted,
            "worst_loss_percent": loss.as_ref().map(|l| l.0),
            "worst_loss_worse_end_percent": loss.as_ref().map(|l| l.1),
            "worst_loss_phase": loss.as_ref().map(|l| l.2.clone()),
            "projection": projection.as_ref().map(|p| &p.0),
        }),
        &members,
        &events,
        &samples,
    )?;

    if args.output.json {
        let v = json!({
            "study": study_id,
            "task": args.task[0],
            "aborted": s.aborted,
            "repetitions": s.repetitions.iter().map(|r| json!({
                "index": r.index, "loaded": r.loaded, "run_id": r.run_id, "overlapped": r.overlapped,
            })).collect::<Vec<_>>(),
            "impact": table,
            "worst_loss_percent": loss.as_ref().map(|l| l.0),
            "projection": projection.as_ref().map(|p| &p.0),
            "projection_worse_end": projection.as_ref().map(|p| &p.1),
            "events": events,
            "task_samples": samples,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "impact of {describe} on {} (study {study_id})\n",
            runner.job.name.clone().unwrap_or_else(|| "the job".into())
        );
        if table.is_empty() {
            println!(
                "No loaded repetition ran with the task from its start to its end, so there is nothing to compare: give the task more to do, a speed limit (btrfs-scrub:MOUNT@SPEED), or the job a shorter --runtime.\n"
            );
        }
        for (seq, kind) in kinds.iter().enumerate() {
            let mut rows = vec![std::iter::once(format!("phase {} {kind}", seq + 1))
                .chain(METRICS.iter().map(|m| m.name.to_string()))
                .collect::<Vec<_>>()];
            for r in &s.repetitions {
                let mut row = vec![format!(
                    "{} {}{}",
                    if r.loaded { "with the task" } else { "idle" },
                    r.index,
                    if r.overlapped {
                        ""
                    } else {
                        " (task ended early: not counted)"
                    }
                )];
                for m in &METRICS {
                    row.push(
                        r.results
                            .get(seq)
                            .map(|p| format!("{:.2}", (m.read)(p)))
                            .unwrap_or_default(),
                    );
                }
                rows.push(row);
            }
            let line = |label: &str, pick: &dyn Fn(&storlab_stats::Comparison) -> String| {
                let mut row = vec![label.to_string()];
                for m in &METRICS {
                    row.push(
                        table
                            .iter()
                            .find(|i| i.phase == seq + 1 && i.metric == m.name)
                            .map(|i| pick(&i.comparison))
                            .unwrap_or_default(),
                    );
                }
                row
            };
            rows.push(line("mean idle", &|c| format!("{:.2}", c.a.mean)));
            rows.push(line("mean with the task", &|c| format!("{:.2}", c.b.mean)));
            rows.push(line("impact (%)", &|c| {
                let word = match c.verdict {
                    Verdict::NotSignificant => " n.s.",
                    Verdict::TooFew => " (n=1)",
                    _ => "",
                };
                format!("{}{word}", impact_cell(c))
            }));
            print!("{}", crate::output::table(&rows));
            println!();
        }
        println!("impact (%): the change of the mean with the task against idle, with its 95 % confidence interval (Welch); n.s.: not significant.");
        if let (Some((p, w)), Some((_, _, phase))) = (&projection, &loss) {
            println!();
            print_projection(p, Some(w), &format!("throughput of {phase}"));
        }
        println!();
        print_events(rec);
    }
    eprintln!(
        "storlab: stored {} runs as study {study_id} in {}",
        s.repetitions.len(),
        runner.db.display()
    );
    Ok(if s.aborted { crate::exit::ABORTED } else { 0 })
}

// ---------------------------------------------------------------------------------------------

fn reverse_study(
    task: &mut dyn Task,
    runner: &mut JobRunner,
    limit: Duration,
    rec: &Recorder,
    stop: &std::sync::atomic::AtomicBool,
    args: &ImpactArgs,
    budget: Option<f64>,
) -> Result<u8> {
    let describe = task.describe();
    let spec = &args.task[0];
    // k for the pool round comes from a cost-to-the-users study of the same task: check it
    // exists before spending hours on the task.
    let mut store = open_store(&runner.db)?;
    let from = match (args.pool_servers, budget) {
        (Some(n), Some(b)) => {
            let studies = store.studies_of_kind("impact")?;
            let found = match args.impact_study {
                Some(id) => studies.into_iter().find(|(i, _)| *i == id).ok_or_else(|| {
                    usage(format!("--impact-study {id}: no cost-to-the-users study with that id"))
                })?,
                None => studies
                    .into_iter()
                    .find(|(_, p)| p["task"].as_str() == Some(spec) && p["worst_loss_percent"].is_number())
                    .ok_or_else(|| {
                        usage(format!(
                            "--pool-servers: no cost-to-the-users study of {spec} in {} to take the impact from: run `storlab impact --task {spec} ...` first, or give --impact-study ID",
                            runner.db.display()
                        ))
                    })?,
            };
            let loss = found.1["worst_loss_percent"]
                .as_f64()
                .ok_or_else(|| usage(format!("study {} has no throughput impact to project", found.0)))?;
            Some((found.0, project(loss, n, b)))
        }
        _ => None,
    };
    let s = cost_to_task(task, runner, limit, rec, stop)?;
    let (events, samples) = (rec.events(), rec.samples());
    let round = from.as_ref().map(|(_, p)| {
        json!({
            "k": p.largest_k,
            "idle_seconds": round_seconds(s.idle.0, p.servers, p.largest_k),
            "loaded_seconds": round_seconds(s.loaded.0, p.servers, p.largest_k),
        })
    });
    let ratio = s.loaded.0 / s.idle.0.max(1e-9);
    let study_id = store.save_study(
        "impact-reverse",
        &json!({ "task": spec, "idle_seconds": s.idle.0, "loaded_seconds": s.loaded.0,
                 "ratio": ratio, "command": runner.command, "aborted": s.aborted,
                 "projection_from_study": from.as_ref().map(|f| f.0), "round": round }),
        &s.loop_runs
            .iter()
            .enumerate()
            .map(|(i, id)| (*id, format!("loop {}", i + 1)))
            .collect::<Vec<_>>(),
        &events,
        &samples,
    )?;
    if s.aborted {
        eprintln!("storlab: stopped; stored what was done as study {study_id}");
        return Ok(crate::exit::ABORTED);
    }
    if args.output.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "study": study_id,
                "task": spec,
                "idle_seconds": s.idle.0,
                "loaded_seconds": s.loaded.0,
                "ratio": ratio,
                "idle_track": s.idle.1,
                "loaded_track": s.loaded.1,
                "loop_runs": s.loop_runs,
                "projection": from.as_ref().map(|f| &f.1),
                "round": round,
                "events": events,
                "task_samples": samples,
            }))?
        );
    } else {
        println!("cost to the task: {describe} (study {study_id})\n");
        println!("idle:            {:>10.1} s", s.idle.0);
        println!(
            "with the job:    {:>10.1} s  ({} run(s) of the job in a loop)",
            s.loaded.0,
            s.loop_runs.len()
        );
        println!("ratio:           {ratio:>10.2}");
        for (name, tr) in [("idle", &s.idle.1), ("with the job", &s.loaded.1)] {
            let step = (tr.len() / 10).max(1);
            let points: Vec<String> = tr
                .iter()
                .step_by(step)
                .map(|(t, p)| {
                    format!(
                        "{t:.1} s: {}",
                        p.map(|p| format!("{p:.0} %")).unwrap_or_else(|| "?".into())
                    )
                })
                .collect();
            println!(
                "progress {name}: {}{}",
                points.join(", "),
                study::progress_rate(tr)
                    .map(|r| format!(" — {r:.1} %/min"))
                    .unwrap_or_default()
            );
        }
        if let Some((from_id, p)) = &from {
            println!();
            print_projection(p, None, &format!("from study {from_id}"));
            match p.largest_k {
                0 => println!("  a round over the pool: no k fits the budget"),
                k => println!(
                    "  a round over the pool, {k} at a time ({} turn(s)): {} idle, {} under load",
                    p.servers.div_ceil(k),
                    human(round_seconds(s.idle.0, p.servers, k).unwrap_or(0.0)),
                    human(round_seconds(s.loaded.0, p.servers, k).unwrap_or(0.0)),
                ),
            }
        }
        println!();
        print_events(rec);
    }
    eprintln!(
        "storlab: stored {} loop run(s) as study {study_id} in {}",
        s.loop_runs.len(),
        runner.db.display()
    );
    Ok(0)
}

/// Seconds as "2 d 11 h 3 min" (RAL wrote its durations so), or "12.3 s" when short.
fn human(s: f64) -> String {
    if s < 120.0 {
        return format!("{s:.1} s");
    }
    let m = (s / 60.0).round() as u64;
    let (d, h, m) = (m / 1440, m / 60 % 24, m % 60);
    match (d, h) {
        (0, 0) => format!("{m} min"),
        (0, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h {m} min"),
    }
}

// ---------------------------------------------------------------------------------------------

fn held_study(
    tasks: &mut [Box<dyn Task>],
    runner: &mut JobRunner,
    o: &HeldOptions,
    rec: &Recorder,
    stop: &std::sync::atomic::AtomicBool,
    args: &ImpactArgs,
) -> Result<u8> {
    let s = held_rate(tasks, runner, o, rec, stop)?;
    let analysis = s
        .run
        .results
        .first()
        .and_then(|p| analyse_held(p, s.phase_start, &s.spans));
    let (events, samples) = (rec.events(), rec.samples());
    let mut store = open_store(&runner.db)?;
    let study_id = store.save_study(
        "impact-held",
        &json!({
            "tasks": args.task, "command": runner.command, "aborted": s.aborted,
            "before_seconds": o.before.as_secs_f64(), "after_seconds": o.after.as_secs_f64(),
            "stagger_seconds": o.stagger.map(|d| d.as_secs_f64()),
            "phase_start": s.phase_start, "spans": s.spans,
            "target": analysis.as_ref().map(|a| a.target), "unit": analysis.as_ref().map(|a| a.unit),
            "behind_max": analysis.as_ref().map(|a| a.behind_max),
            "repaid_after_seconds": analysis.as_ref().and_then(|a| a.repaid_after),
            "stretches": analysis.as_ref().map(|a| &a.stretches),
        }),
        &[(s.run.run_id, "held".to_string())],
        &events,
        &samples,
    )?;
    if s.aborted {
        eprintln!("storlab: stopped; stored what was done as study {study_id}");
        return Ok(crate::exit::ABORTED);
    }
    let Some(a) = analysis else {
        return Err(usage("the job produced no rate-limited phase to analyse"));
    };
    if args.output.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "study": study_id,
                "run_id": s.run.run_id,
                "tasks": args.task,
                "phase_start": s.phase_start,
                "spans": s.spans,
                "analysis": a,
                "events": events,
                "task_samples": samples,
            }))?
        );
    } else {
        let unit = a.unit;
        let behind_unit = if unit == "IOPS" { "ops" } else { "MiB" };
        println!(
            "held rate: {} at {:.0} {unit} through {} (study {study_id}, run {})\n",
            runner.job.name.clone().unwrap_or_else(|| "the job".into()),
            a.target,
            s.spans
                .iter()
                .map(|t| t.task.clone())
                .collect::<Vec<_>>()
                .join(", then "),
            s.run.run_id
        );
        let mut rows = vec![vec![
            "t (s)".to_string(),
            "stretch".into(),
            unit.into(),
            "p50 µs".into(),
            "p99 µs".into(),
            "p99.9 µs".into(),
            format!("behind ({behind_unit})"),
            "".into(),
        ]];
        let mut marks: Vec<(f64, String)> = Vec::new();
        for (i, t) in s.spans.iter().enumerate() {
            marks.push((t.start, format!("task {} started", i + 1)));
            if let Some(e) = t.end {
                marks.push((e, format!("task {} ended", i + 1)));
            }
        }
        for iv in &a.intervals {
            let mark: Vec<&str> = marks
                .iter()
                .filter(|(t, _)| *t >= iv.t_start && *t < iv.t_end)
                .map(|(_, m)| m.as_str())
                .collect();
            rows.push(vec![
                format!("{:.1}", iv.t_end),
                format!("{:?}", iv.stretch).to_lowercase(),
                format!("{:.1}", iv.achieved),
                format!("{:.0}", iv.p50_us),
                format!("{:.0}", iv.p99_us),
                format!("{:.0}", iv.p99_9_us),
                format!("{:.0}", iv.behind),
                mark.join("; "),
            ]);
        }
        print!("{}", crate::output::table(&rows));
        println!();
        let rows = stretch_table(&a);
        print!("{}", crate::output::table(&rows));
        println!();
        for (i, t) in s.spans.iter().enumerate() {
            println!(
                "task {}: {} — started at {:.1} s, {}",
                i + 1,
                t.task,
                t.start,
                match t.end {
                    Some(e) => format!("ended at {e:.1} s ({:.1} s): {}", e - t.start, t.detail),
                    None => "stopped before it ended".into(),
                }
            );
        }
        match a.repaid_after {
            Some(0.0) => println!(
                "deficit: none built up beyond {:.0} {behind_unit} (the most behind before the task)",
                a.tolerance
            ),
            Some(x) => println!(
                "deficit: at most {:.0} {behind_unit}; repaid {x:.1} s after the last task ended",
                a.behind_max
            ),
            None => println!(
                "deficit: at most {:.0} {behind_unit}; NOT repaid before the job ended ({:.0} {behind_unit} still behind): give a longer --after",
                a.behind_max, a.behind_at_end
            ),
        }
        println!();
        print_events(rec);
    }
    eprintln!(
        "storlab: stored run {} as study {study_id} in {}",
        s.run.run_id,
        runner.db.display()
    );
    Ok(0)
}

// ---------------------------------------------------------------------------------------------
// The HTML report's section of an impact study (`storlab report --study ID`).

/// What an impact study shows in the HTML report beyond its runs: the cost-to-the-users table,
/// the reverse study's progress tracks, the held rate's timeline with the tasks marked.
/// Empty for other kinds of study.
pub fn report_html(
    store: &storlab_store::Store,
    study_id: i64,
    kind: &str,
    params: &serde_json::Value,
    members: &[(String, storlab_store::RunDetail)],
) -> Result<String> {
    use storlab_report::html::html_table;
    use storlab_report::svg::{line_chart_marked, nice_ceiling, Series, COLORS};
    let mut s = String::new();
    let key = |k: &str| format!("study {study_id} {k}");
    match kind {
        "impact" => {
            // The study as it ran, rebuilt from the stored runs (each phase's whole result is
            // stored with it), and compared as the study compared it.
            let reps: Vec<study::Repetition> = members
                .iter()
                .map(|(role, r)| study::Repetition {
                    // The role says it: "idle r2", "loaded r2 (task ended early)".
                    index: role
                        .split_whitespace()
                        .nth(1)
                        .and_then(|w| w.strip_prefix('r')?.parse().ok())
                        .unwrap_or(0),
                    loaded: role.starts_with("loaded"),
                    run_id: r.run.id,
                    overlapped: !role.contains("ended early"),
                    results: r
                        .phases
                        .iter()
                        .filter_map(|p| serde_json::from_value(p.result.clone()).ok())
                        .collect(),
                })
                .collect();
            let kinds: Vec<String> = members
                .first()
                .map(|(_, r)| r.phases.iter().map(|p| p.kind.clone()).collect())
                .unwrap_or_default();
            let counted = |loaded: bool| reps.iter().filter(|r| r.loaded == loaded && r.overlapped).count();
            let (n_idle, n_loaded) = (counted(false), counted(true));
            let table = impacts(
                &study::UsersStudy {
                    repetitions: reps,
                    aborted: false,
                },
                &kinds,
            );
            let rows: Vec<Vec<String>> = table
                .iter()
                .map(|i| {
                    let c = &i.comparison;
                    vec![
                        format!("{} {}", i.phase, i.kind),
                        i.metric.to_string(),
                        format!("{:.2}", c.a.mean),
                        format!("{:.2}", c.b.mean),
                        impact_cell(c),
                        c.verdict.words().to_string(),
                    ]
                })
                .collect();
            let _ = std::fmt::Write::write_fmt(
                &mut s,
                format_args!(
                    "<p>The cost of {} to the users: {} idle and {} loaded repetitions that ran with the task throughout; impact = change of the mean with the task, 95 % interval (Welch).</p>",
                    storlab_report::svg::esc(params["task"].as_str().unwrap_or("the task")),
                    n_idle,
                    n_loaded
                ),
            );
            s += &html_table(
                &[
                    "phase",
                    "metric",
                    "mean idle",
                    "mean with the task",
                    "impact (%)",
                    "verdict",
                ]
                .map(String::from),
                &rows,
            );
            if let Some(p) = params.get("projection").filter(|p| !p.is_null()) {
                s += &format!(
                    "<p>Pool projection: {} servers, budget {} %: the largest number of servers that may run the task at once is {}.</p>",
                    p["servers"], p["budget_percent"], p["largest_k"]
                );
            }
        }
        "impact-reverse" => {
            let samples = store.task_samples(study_id)?;
            let track = |task: u32| -> Vec<(f64, f64)> {
                let pts: Vec<&storlab_store::TaskSample> = samples.iter().filter(|x| x.task == task).collect();
                let t0 = pts.first().map(|x| x.t).unwrap_or(0.0);
                pts.iter().filter_map(|x| x.percent.map(|p| (x.t - t0, p))).collect()
            };
            let (svg, _) = line_chart_marked(
                "task progress",
                &key("progress"),
                "% done",
                "s since the task started",
                &[
                    Series {
                        name: "idle".into(),
                        color: COLORS[0],
                        points: track(0),
                    },
                    Series {
                        name: "with the job".into(),
                        color: COLORS[1],
                        points: track(1),
                    },
                ],
                100.0,
                &[],
            );
            s += &format!(
                "<p>The cost to the task: {:.1} s idle, {:.1} s with the job in a loop (ratio {:.2}).</p><div class=\"charts\">{svg}</div>",
                params["idle_seconds"].as_f64().unwrap_or(0.0),
                params["loaded_seconds"].as_f64().unwrap_or(0.0),
                params["ratio"].as_f64().unwrap_or(0.0)
            );
        }
        "impact-held" => {
            let Some((_, run)) = members.first() else { return Ok(s) };
            let Some(phase) = run.phases.first() else { return Ok(s) };
            let Ok(result) = serde_json::from_value::<storlab_engine::PhaseResult>(phase.result.clone()) else {
                return Ok(s);
            };
            let spans: Vec<study::TaskSpan> = serde_json::from_value(params["spans"].clone()).unwrap_or_default();
            let phase_start = params["phase_start"].as_f64().unwrap_or(0.0);
            let Some(a) = analyse_held(&result, phase_start, &spans) else {
                return Ok(s);
            };
            let mut marks = Vec::new();
            for (i, t) in spans.iter().enumerate() {
                marks.push((t.start, format!("task {} start", i + 1)));
                if let Some(e) = t.end {
                    marks.push((e, format!("task {} end", i + 1)));
                }
            }
            let pts = |f: fn(&study::HeldInterval) -> f64| -> Vec<(f64, f64)> {
                a.intervals.iter().map(|i| (i.t_end, f(i))).collect()
            };
            let top = |v: &[(f64, f64)]| nice_ceiling(v.iter().map(|p| p.1).fold(0.0, f64::max));
            let achieved = pts(|i| i.achieved);
            let target: Vec<(f64, f64)> = achieved.iter().map(|p| (p.0, a.target)).collect();
            let behind = pts(|i| i.behind);
            let p99 = pts(|i| i.p99_us);
            let behind_unit = if a.unit == "IOPS" { "ops" } else { "MiB" };
            let charts = [
                line_chart_marked(
                    &format!("achieved rate against the target ({})", a.unit),
                    &key("rate"),
                    a.unit,
                    "s",
                    &[
                        Series {
                            name: "achieved".into(),
                            color: COLORS[0],
                            points: achieved.clone(),
                        },
                        Series {
                            name: "target".into(),
                            color: COLORS[5],
                            points: target,
                        },
                    ],
                    top(&achieved).max(a.target),
                    &marks,
                )
                .0,
                line_chart_marked(
                    &format!("behind schedule ({behind_unit})"),
                    &key("deficit"),
                    behind_unit,
                    "s",
                    &[Series {
                        name: "deficit".into(),
                        color: COLORS[1],
                        points: behind.clone(),
                    }],
                    top(&behind).max(1.0),
                    &marks,
                )
                .0,
                line_chart_marked(
                    "latency p99 (from each I/O's scheduled time)",
                    &key("p99"),
                    "µs",
                    "s",
                    &[Series {
                        name: "p99".into(),
                        color: COLORS[3],
                        points: p99.clone(),
                    }],
                    top(&p99),
                    &marks,
                )
                .0,
            ];
            let repaid = match a.repaid_after {
                Some(0.0) => "no deficit built up".to_string(),
                Some(x) => format!(
                    "the deficit (at most {:.0} {behind_unit}) was repaid {x:.1} s after the last task ended",
                    a.behind_max
                ),
                None => format!(
                    "the deficit was NOT repaid before the job ended ({:.0} {behind_unit} behind)",
                    a.behind_at_end
                ),
            };
            s += &format!(
                "<p>The job held at {:.0} {} through {}: {repaid}.</p><div class=\"charts\">{}</div>",
                a.target,
                a.unit,
                storlab_report::svg::esc(&spans.iter().map(|t| t.task.clone()).collect::<Vec<_>>().join(", then ")),
                charts.join("")
            );
            let rows = stretch_table(&a);
            s += &html_table(&rows[0], &rows[1..]);
        }
        _ => return Ok(s),
    }
    let events = store.study_events(study_id)?;
    if !events.is_empty() {
        s += &html_table(
            &["t (s)", "at", "event", "detail", "run"].map(String::from),
            &events
                .iter()
                .map(|e| {
                    vec![
                        format!("{:.1}", e.t),
                        e.at.clone(),
                        e.kind.clone(),
                        e.detail.clone(),
                        e.run_id.map(|r| r.to_string()).unwrap_or_default(),
                    ]
                })
                .collect::<Vec<_>>(),
        );
    }
    Ok(s)
}
