//! `storlab impact --task KIND:ARGS --repeat N [job]`: the cost of a background task to the users
//! (RAL's Table 1 and 2): the foreground job N times without the task and N times with it
//! running, interleaved (idle, loaded, idle, loaded, ...) so that drift falls on both sides; per
//! phase and metric the means and the impact in percent with its 95 % interval (Welch).

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use serde_json::json;
use storlab_engine::PhaseResult;
use storlab_impact::task::{parse, Task, TaskState};
use storlab_stats::{compare, Verdict};

use crate::cli::ImpactArgs;
use crate::runner::{db_path, run_job, ExecOptions};

/// A metric of a phase: its name (with unit) and how to read it.
type Metric = (&'static str, fn(&PhaseResult) -> f64);

/// A request the user can fix (unknown task, N = 0, ...): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ImpactUsage(pub String);

fn usage(m: impl Into<String>) -> anyhow::Error {
    ImpactUsage(m.into()).into()
}

struct Repetition {
    index: u32,
    loaded: bool,
    run_id: i64,
    /// For a loaded repetition: whether the task was still running when it ended.
    overlapped: bool,
    results: Vec<PhaseResult>,
}

/// Starts the task if it is not running, and waits (up to 30 s) until it says it runs.
fn ensure_running(task: &mut dyn Task) -> Result<()> {
    if matches!(task.poll().map_err(|e| usage(e.to_string()))?, TaskState::Running(_)) {
        return Ok(());
    }
    task.start().map_err(|e| usage(e.to_string()))?;
    let t0 = std::time::Instant::now();
    loop {
        match task.poll().map_err(|e| usage(e.to_string()))? {
            TaskState::Running(_) => return Ok(()),
            TaskState::Done { detail, .. } => {
                return Err(usage(format!(
                    "{} ended as soon as it started ({detail}): there is nothing to measure against; give it more to do or a speed limit (btrfs-scrub:MOUNT@SPEED)",
                    task.describe()
                )))
            }
            TaskState::Idle if t0.elapsed() > Duration::from_secs(30) => {
                return Err(usage(format!("{} did not start within 30 s", task.describe())))
            }
            TaskState::Idle => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

pub fn impact(args: crate::cli::ImpactArgs) -> Result<u8> {
    let ImpactArgs {
        task: spec,
        repeat,
        on_early_finish,
        reverse,
        task_timeout,
        job,
        output,
    } = args;
    let timeout: storlab_units::Duration = task_timeout
        .parse()
        .map_err(|e| usage(format!("--task-timeout {task_timeout}: {e}")))?;
    if reverse {
        return reverse_study(&spec, timeout.std(), job, output);
    }
    if repeat == 0 {
        return Err(usage(
            "--repeat 0: an impact study needs at least one idle and one loaded repetition",
        ));
    }
    if !matches!(on_early_finish.as_str(), "discard" | "restart") {
        return Err(usage(format!(
            "--on-early-finish {on_early_finish}: expected discard or restart"
        )));
    }
    let mut task = parse(&spec).map_err(|e| usage(e.to_string()))?;
    let foreground = job.to_job()?;
    storlab_workload::resolve(
        &foreground,
        &storlab_workload::ResolveOptions {
            allow_devices: job.allow_devices.clone(),
            file_tag: std::process::id().to_string(),
            default_seed: 1,
        },
    )?;
    let db = db_path(&output);
    let chatty = std::io::stderr().is_terminal() && !output.json;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let mut reps: Vec<Repetition> = Vec::new();
    let mut events: Vec<(String, String)> = Vec::new();
    let result = (|| -> Result<u8> {
        for r in 1..=repeat {
            for loaded in [false, true] {
                let mut tries = 0;
                loop {
                    if loaded {
                        ensure_running(task.as_mut())?;
                        events.push(("task-running".into(), format!("repetition {r}: {}", task.describe())));
                    }
                    if chatty {
                        eprintln!("[repetition {r}, {}]", if loaded { "with the task" } else { "idle" });
                    }
                    let e = run_job(
                        &foreground,
                        &db,
                        &ExecOptions {
                            kind: if loaded { "impact-loaded" } else { "impact-idle" },
                            tags: &job.tags,
                            allow: &job.allow_devices,
                            keep: job.keep,
                            chatty,
                            command: command.clone(),
                        },
                    )?;
                    if e.status == "aborted" {
                        return Ok(crate::exit::ABORTED);
                    }
                    let overlapped =
                        !loaded || matches!(task.poll().map_err(|e| usage(e.to_string()))?, TaskState::Running(_));
                    if loaded && !overlapped {
                        events.push((
                            "task-ended-early".into(),
                            format!(
                                "repetition {r} (run {}): the task ended before the foreground job did",
                                e.run_id
                            ),
                        ));
                    }
                    reps.push(Repetition {
                        index: r,
                        loaded,
                        run_id: e.run_id,
                        overlapped,
                        results: e.results,
                    });
                    // Restart: run this loaded repetition again with the task started afresh (once).
                    if loaded && !overlapped && on_early_finish == "restart" && tries == 0 {
                        tries += 1;
                        continue;
                    }
                    break;
                }
            }
        }
        Ok(0)
    })();
    // The study stops the task it started, and only that one, however it ends.
    let stopped = task.stop();
    let status = result?;
    stopped.map_err(|e| usage(e.to_string()))?;
    events.push(("task-stopped".into(), task.describe()));

    let store = storlab_store::Store::open(&db, &storlab_env::capture(&[]).host)?;
    let study = store.create_study("impact", &json!({ "task": spec, "repeat": repeat, "command": command }))?;
    for rep in &reps {
        let role = format!(
            "{} r{}{}",
            if rep.loaded { "loaded" } else { "idle" },
            rep.index,
            if rep.overlapped { "" } else { " (task ended early)" }
        );
        store.add_study_member(study, rep.run_id, &role)?;
    }
    if let Some(last) = reps.last() {
        for (kind, detail) in &events {
            store.add_event(last.run_id, kind, detail)?;
        }
    }

    // Per phase and metric: idle against loaded, over the repetitions that count.
    let counted: Vec<&Repetition> = reps.iter().filter(|r| r.overlapped).collect();
    let kinds: Vec<String> = foreground.phases.iter().map(|(k, _)| k.name().to_string()).collect();
    let metrics: [Metric; 5] = [
        ("MiB/s", |p| p.all_done.bytes_per_sec / (1u64 << 20) as f64),
        ("IOPS", |p| p.all_done.iops),
        ("lat p50 µs", |p| p.latency.p50_ns as f64 / 1e3),
        ("lat p99 µs", |p| p.latency.p99_ns as f64 / 1e3),
        ("lat p99.9 µs", |p| p.latency.p99_9_ns as f64 / 1e3),
    ];
    let mut summary = Vec::new();
    for (seq, kind) in kinds.iter().enumerate() {
        for (name, f) in &metrics {
            let vals = |loaded: bool| -> Vec<f64> {
                counted
                    .iter()
                    .filter(|r| r.loaded == loaded)
                    .filter_map(|r| r.results.get(seq).map(f))
                    .collect()
            };
            if let Some(c) = compare(&vals(false), &vals(true)) {
                summary.push((seq, kind.clone(), name.to_string(), vals(false), vals(true), c));
            }
        }
    }
    if output.json {
        let v = json!({
            "study": study,
            "task": spec,
            "repetitions": reps.iter().map(|r| json!({
                "index": r.index, "loaded": r.loaded, "run_id": r.run_id, "overlapped": r.overlapped,
            })).collect::<Vec<_>>(),
            "impact": summary.iter().map(|(seq, kind, name, a, b, c)| json!({
                "phase": seq + 1, "kind": kind, "metric": name, "idle": a, "loaded": b, "comparison": c,
            })).collect::<Vec<_>>(),
            "events": events.iter().map(|(k, d)| json!({"kind": k, "detail": d})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "impact of {} on {} (study {study})\n",
            task.describe(),
            foreground.name.clone().unwrap_or_default()
        );
        for (seq, kind) in kinds.iter().enumerate() {
            let mut rows = vec![std::iter::once(format!("phase {} {kind}", seq + 1))
                .chain(metrics.iter().map(|(n, _)| n.to_string()))
                .collect::<Vec<_>>()];
            for r in &reps {
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
                for (_, f) in &metrics {
                    row.push(r.results.get(seq).map(|p| format!("{:.2}", f(p))).unwrap_or_default());
                }
                rows.push(row);
            }
            let line = |label: &str, pick: &dyn Fn(&storlab_stats::Comparison) -> String| {
                let mut row = vec![label.to_string()];
                for (name, _) in &metrics {
                    row.push(
                        summary
                            .iter()
                            .find(|(s, _, n, _, _, _)| *s == seq && n == name)
                            .map(|(_, _, _, _, _, c)| pick(c))
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
                match (c.diff_percent, c.ci95_percent) {
                    (Some(d), Some((lo, hi))) => format!("{d:+.1} [{lo:+.1}, {hi:+.1}]{word}"),
                    (Some(d), None) => format!("{d:+.1}{word}"),
                    _ => "-".into(),
                }
            }));
            print!("{}", crate::output::table(&rows));
            println!();
        }
        println!("impact (%): the change of the mean with the task against idle, with its 95 % confidence interval (Welch); n.s.: not significant.");
    }
    eprintln!(
        "storlab: stored {} runs as study {study} in {}",
        reps.len(),
        db.display()
    );
    Ok(status)
}

/// The task's progress over time: (seconds since its start, percent when known).
type Track = Vec<(f64, Option<f64>)>;

/// Watches a running task every 250 ms until it is done; returns its duration and track.
/// `while_running` is called between looks (the loaded side runs the job there).
fn watch(
    task: &std::sync::Mutex<Box<dyn Task>>,
    limit: Duration,
    done: &std::sync::atomic::AtomicBool,
) -> Result<(f64, Track)> {
    use std::sync::atomic::Ordering;
    let t0 = std::time::Instant::now();
    let mut track = Vec::new();
    loop {
        let state = task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .poll()
            .map_err(|e| usage(e.to_string()))?;
        let t = t0.elapsed().as_secs_f64();
        match state {
            TaskState::Done { completed, detail } => {
                done.store(true, Ordering::Relaxed);
                if !completed {
                    return Err(usage(format!(
                        "the task did not complete ({detail}): its duration means nothing"
                    )));
                }
                track.push((t, Some(100.0)));
                return Ok((t, track));
            }
            TaskState::Running(p) => track.push((t, p.percent)),
            TaskState::Idle => track.push((t, None)),
        }
        if t0.elapsed() > limit {
            done.store(true, Ordering::Relaxed);
            return Err(usage(format!(
                "the task ran past --task-timeout ({} s) without finishing: set a longer one if it is just slow",
                limit.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// RAL's loopy.sh: the task's duration idle, then with the job running in a loop until it ends.
fn reverse_study(spec: &str, limit: Duration, job: crate::cli::JobArgs, output: crate::cli::OutputArgs) -> Result<u8> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let task = std::sync::Mutex::new(parse(spec).map_err(|e| usage(e.to_string()))?);
    let foreground = job.to_job()?;
    let db = db_path(&output);
    let chatty = std::io::stderr().is_terminal() && !output.json;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let describe = task.lock().unwrap().describe();

    // Idle: the task alone.
    if chatty {
        eprintln!("[{describe}, the machine idle]");
    }
    task.lock().unwrap().start().map_err(|e| usage(e.to_string()))?;
    let done = AtomicBool::new(false);
    let idle = watch(&task, limit, &done);
    let idle = match idle {
        Ok(x) => x,
        Err(e) => {
            let _ = task.lock().unwrap().stop();
            return Err(e);
        }
    };

    // Loaded: the task again, the job in a loop until the task ends.
    if chatty {
        eprintln!("[{describe}, with the job in a loop]");
    }
    task.lock().unwrap().start().map_err(|e| usage(e.to_string()))?;
    let done = AtomicBool::new(false);
    let mut runs: Vec<i64> = Vec::new();
    let mut aborted = false;
    let (loaded, job_result) = std::thread::scope(|s| {
        let watcher = s.spawn(|| watch(&task, limit, &done));
        let mut job_result: Result<()> = Ok(());
        while !done.load(Ordering::Relaxed) {
            match run_job(
                &foreground,
                &db,
                &ExecOptions {
                    kind: "impact-loop",
                    tags: &job.tags,
                    allow: &job.allow_devices,
                    keep: job.keep,
                    chatty,
                    command: command.clone(),
                },
            ) {
                Ok(e) => {
                    runs.push(e.run_id);
                    if e.status == "aborted" {
                        aborted = true;
                        break;
                    }
                }
                Err(e) => {
                    job_result = Err(e);
                    break;
                }
            }
        }
        if aborted || job_result.is_err() {
            let _ = task.lock().unwrap().stop();
        }
        (watcher.join().expect("the watcher does not panic"), job_result)
    });
    let _ = task.lock().unwrap().stop();
    job_result?;
    if aborted {
        return Ok(crate::exit::ABORTED);
    }
    let loaded = loaded?;

    let store = storlab_store::Store::open(&db, &storlab_env::capture(&[]).host)?;
    let study = store.create_study(
        "impact-reverse",
        &json!({ "task": spec, "idle_seconds": idle.0, "loaded_seconds": loaded.0, "command": command }),
    )?;
    for (i, id) in runs.iter().enumerate() {
        store.add_study_member(study, *id, &format!("loop {}", i + 1))?;
    }
    if let Some(last) = runs.last() {
        store.add_event(
            *last,
            "task-duration",
            &format!("idle {:.1} s, with the job {:.1} s", idle.0, loaded.0),
        )?;
    }
    let rate = |track: &Track| -> Option<f64> {
        let (t, p) = track.iter().rev().find_map(|(t, p)| p.map(|p| (*t, p)))?;
        (t > 0.0).then(|| p / t * 60.0)
    };
    if output.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "study": study,
                "task": spec,
                "idle_seconds": idle.0,
                "loaded_seconds": loaded.0,
                "ratio": loaded.0 / idle.0.max(1e-9),
                "idle_track": idle.1,
                "loaded_track": loaded.1,
                "loop_runs": runs,
            }))?
        );
    } else {
        println!("cost to the task: {describe}\n");
        println!("idle:            {:>10.1} s", idle.0);
        println!(
            "with the job:    {:>10.1} s  ({} run(s) of the job in a loop)",
            loaded.0,
            runs.len()
        );
        println!("ratio:           {:>10.2}", loaded.0 / idle.0.max(1e-9));
        for (name, tr) in [("idle", &idle.1), ("with the job", &loaded.1)] {
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
                rate(tr).map(|r| format!(" — {r:.1} %/min")).unwrap_or_default()
            );
        }
    }
    eprintln!(
        "storlab: stored {} loop run(s) as study {study} in {}",
        runs.len(),
        db.display()
    );
    Ok(0)
}
