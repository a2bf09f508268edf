//! The three studies: the cost of a task to the users (RAL's Table 1 and 2), the cost of the
//! users to the task (RAL's loopy.sh) and a workload held at a target rate through one or more
//! tasks (IBM's rebuild runs). The foreground job is run by the caller (storlab's own `run`
//! path, which stores every run); this module decides when, starts, watches and stops the
//! tasks, and records what happened.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use storlab_engine::{PhaseControl, PhaseResult};

use crate::record::Recorder;
use crate::task::{Task, TaskState};

/// A request the user can fix (N = 0, a task that ends at once, a timeout): the message says
/// what to change.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StudyError(pub String);

fn usage(m: impl Into<String>) -> anyhow::Error {
    StudyError(m.into()).into()
}

fn task_err(e: crate::task::TaskError) -> anyhow::Error {
    usage(e.to_string())
}

/// One run of the foreground job.
pub struct ForegroundRun {
    /// Its id in the database.
    pub run_id: i64,
    /// True when Ctrl-C stopped it.
    pub aborted: bool,
    /// Its phases.
    pub results: Vec<PhaseResult>,
}

/// Runs the foreground job once and stores it as a run of `kind`. `control` lets the study end
/// a time-based phase and learn when it started.
pub trait Foreground {
    /// Runs the job.
    fn run(&mut self, kind: &str, control: &PhaseControl) -> anyhow::Result<ForegroundRun>;
}

/// How often a running task is looked at.
pub const POLL_EVERY: Duration = Duration::from_millis(250);

/// Sleeps up to `d`, waking early when `quit` says so; false if it did.
fn sleep_unless(d: Duration, quit: &dyn Fn() -> bool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if quit() {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
    !quit()
}

/// Records a look at a task; a task's end is also an event, with the system's report (a
/// scrub's error counts, say). Returns whether it is done.
fn look(rec: &Recorder, index: u32, task: &mut dyn Task, ended: &mut bool) -> anyhow::Result<TaskState> {
    let s = task.poll().map_err(task_err)?;
    rec.sample(index, &s);
    if let TaskState::Done { completed, detail } = &s {
        if !*ended {
            *ended = true;
            rec.event(
                if *completed {
                    "task-end"
                } else {
                    "task-ended-incomplete"
                },
                format!("{}: {detail}", task.describe()),
            );
        }
    }
    Ok(s)
}

/// Starts a task and waits (up to 30 s) until it says it runs.
fn start_running(rec: &Recorder, index: u32, task: &mut dyn Task) -> anyhow::Result<()> {
    task.start().map_err(task_err)?;
    rec.event("task-start", task.describe());
    let t0 = Instant::now();
    loop {
        let s = task.poll().map_err(task_err)?;
        rec.sample(index, &s);
        match s {
            TaskState::Running(_) => return Ok(()),
            TaskState::Done { detail, .. } => {
                rec.event("task-end", format!("{}: {detail}", task.describe()));
                return Err(usage(format!(
                    "{} ended as soon as it started ({detail}): there is nothing to measure against; give it more to do or a speed limit (btrfs-scrub:MOUNT@SPEED)",
                    task.describe()
                )));
            }
            TaskState::Idle if t0.elapsed() > Duration::from_secs(30) => {
                return Err(usage(format!("{} did not start within 30 s", task.describe())))
            }
            TaskState::Idle => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Cost to the users.

/// What to do when the task ends before a loaded repetition does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyFinish {
    /// Keep the repetition but do not count it.
    Discard,
    /// Restart the task and run the repetition again (once).
    Restart,
}

/// One repetition of the job.
pub struct Repetition {
    /// 1-based.
    pub index: u32,
    /// With the task running.
    pub loaded: bool,
    /// The run.
    pub run_id: i64,
    /// For a loaded repetition: the task was running from its start to its end.
    pub overlapped: bool,
    /// Its phases.
    pub results: Vec<PhaseResult>,
}

/// What the cost-to-the-users study produced.
pub struct UsersStudy {
    /// Every repetition, in the order run.
    pub repetitions: Vec<Repetition>,
    /// Ctrl-C ended it early.
    pub aborted: bool,
}

/// Runs the job `repeat` times idle and `repeat` times with the task running, interleaved.
/// The task is started afresh for each loaded repetition and stopped after it, so that the
/// idle repetitions are idle; it is stopped however the study ends — the task this study
/// started, and no other.
pub fn cost_to_users(
    task: &mut dyn Task,
    fg: &mut dyn Foreground,
    repeat: u32,
    early: EarlyFinish,
    rec: &Recorder,
    stop: &AtomicBool,
) -> anyhow::Result<UsersStudy> {
    if repeat == 0 {
        return Err(usage(
            "--repeat 0: an impact study needs at least one idle and one loaded repetition",
        ));
    }
    let task = Mutex::new(task);
    let mut reps = Vec::new();
    let mut aborted = false;
    let mut ended = false;
    // Whether the task this study started is (as far as it knows) still running.
    let mut live = false;
    let result = (|| -> anyhow::Result<()> {
        for r in 1..=repeat {
            for loaded in [false, true] {
                let mut tries = 0;
                loop {
                    if stop.load(Ordering::Relaxed) {
                        aborted = true;
                        return Ok(());
                    }
                    rec.run_started();
                    if loaded {
                        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
                        ended = false;
                        live = true;
                        start_running(rec, 0, &mut **t)?;
                    }
                    rec.event(
                        "repetition-start",
                        format!("repetition {r}, {}", if loaded { "with the task" } else { "idle" }),
                    );
                    // While a loaded repetition runs, the task is looked at every POLL_EVERY.
                    let job_done = AtomicBool::new(false);
                    let (run, watched) = std::thread::scope(|s| {
                        let watcher = loaded.then(|| {
                            s.spawn(|| -> anyhow::Result<()> {
                                while !job_done.load(Ordering::Relaxed) {
                                    {
                                        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
                                        look(rec, 0, &mut **t, &mut ended)?;
                                    }
                                    sleep_unless(POLL_EVERY, &|| job_done.load(Ordering::Relaxed));
                                }
                                Ok(())
                            })
                        });
                        let run = fg.run(
                            if loaded { "impact-loaded" } else { "impact-idle" },
                            &PhaseControl::new(),
                        );
                        job_done.store(true, Ordering::Relaxed);
                        let watched = watcher.map(|w| w.join().expect("the watcher does not panic"));
                        (run, watched)
                    });
                    let run = run?;
                    rec.event("repetition-end", format!("repetition {r} (run {})", run.run_id));
                    rec.run_ended(run.run_id);
                    if let Some(w) = watched {
                        w?;
                    }
                    if run.aborted {
                        aborted = true;
                        reps.push(Repetition {
                            index: r,
                            loaded,
                            run_id: run.run_id,
                            overlapped: false,
                            results: run.results,
                        });
                        return Ok(());
                    }
                    let overlapped = !loaded || {
                        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
                        matches!(look(rec, 0, &mut **t, &mut ended)?, TaskState::Running(_))
                    };
                    if !overlapped {
                        rec.event(
                            "task-ended-early",
                            format!("repetition {r} (run {}): the task ended before the job did", run.run_id),
                        );
                    }
                    if loaded && overlapped {
                        // The idle repetitions run with the task stopped: the next loaded one
                        // starts it afresh.
                        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
                        live = false;
                        t.stop().map_err(task_err)?;
                        rec.event("task-stopped", t.describe());
                    }
                    if !overlapped {
                        live = false;
                    }
                    reps.push(Repetition {
                        index: r,
                        loaded,
                        run_id: run.run_id,
                        overlapped,
                        results: run.results,
                    });
                    if loaded && !overlapped && early == EarlyFinish::Restart && tries == 0 {
                        tries += 1;
                        continue;
                    }
                    break;
                }
            }
        }
        Ok(())
    })();
    // However the study ends (Ctrl-C, an error), the task it started is stopped.
    let task = task.into_inner().unwrap_or_else(|e| e.into_inner());
    let stopped = task.stop();
    if live {
        rec.event("task-stopped", task.describe());
    }
    result?;
    stopped.map_err(task_err)?;
    Ok(UsersStudy {
        repetitions: reps,
        aborted,
    })
}

/// A metric of a phase: its name (with unit), whether more is better, and how to read it.
pub struct Metric {
    /// "MiB/s", "IOPS", "lat p99 µs", ...
    pub name: &'static str,
    /// True for throughput, false for latency.
    pub higher_is_better: bool,
    /// Reads it from a phase.
    pub read: fn(&PhaseResult) -> f64,
}

/// The metrics of the cost-to-the-users table: throughput and latency percentiles.
pub const METRICS: [Metric; 5] = [
    Metric {
        name: "MiB/s",
        higher_is_better: true,
        read: |p| p.all_done.bytes_per_sec / (1u64 << 20) as f64,
    },
    Metric {
        name: "IOPS",
        higher_is_better: true,
        read: |p| p.all_done.iops,
    },
    Metric {
        name: "lat p50 µs",
        higher_is_better: false,
        read: |p| p.latency.p50_ns as f64 / 1e3,
    },
    Metric {
        name: "lat p99 µs",
        higher_is_better: false,
        read: |p| p.latency.p99_ns as f64 / 1e3,
    },
    Metric {
        name: "lat p99.9 µs",
        higher_is_better: false,
        read: |p| p.latency.p99_9_ns as f64 / 1e3,
    },
];

/// The impact on one metric of one phase.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Impact {
    /// Phase number, 1-based.
    pub phase: usize,
    /// Phase kind.
    pub kind: String,
    /// Metric name.
    pub metric: &'static str,
    /// The idle repetitions' values.
    pub idle: Vec<f64>,
    /// The loaded repetitions' values (those that overlapped the task).
    pub loaded: Vec<f64>,
    /// Loaded against idle (Welch).
    pub comparison: storlab_stats::Comparison,
}

/// Per phase and metric, the loaded repetitions that overlapped the task against the idle ones.
pub fn impacts(study: &UsersStudy, kinds: &[String]) -> Vec<Impact> {
    let counted: Vec<&Repetition> = study.repetitions.iter().filter(|r| r.overlapped).collect();
    let mut out = Vec::new();
    for (seq, kind) in kinds.iter().enumerate() {
        for m in &METRICS {
            let vals = |loaded: bool| -> Vec<f64> {
                counted
                    .iter()
                    .filter(|r| r.loaded == loaded && !r.results.is_empty())
                    .filter_map(|r| r.results.get(seq).map(m.read))
                    .collect()
            };
            let (a, b) = (vals(false), vals(true));
            if let Some(c) = storlab_stats::compare(&a, &b) {
                out.push(Impact {
                    phase: seq + 1,
                    kind: kind.clone(),
                    metric: m.name,
                    idle: a,
                    loaded: b,
                    comparison: c,
                });
            }
        }
    }
    out
}

/// The largest loss of throughput (MiB/s) over the phases, in percent (positive = slower), and
/// the loss at its 95 % interval's worse end; None without a comparison.
pub fn worst_loss(impacts: &[Impact]) -> Option<(f64, f64, String)> {
    impacts
        .iter()
        .filter(|i| i.metric == "MiB/s")
        .filter_map(|i| {
            let d = i.comparison.diff_percent?;
            let worse = i.comparison.ci95_percent.map(|(lo, _)| -lo).unwrap_or(-d);
            Some((-d, worse, format!("phase {} {}", i.phase, i.kind)))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

// ---------------------------------------------------------------------------------------------
// Pool projection.

/// The pool-wide impact of k of S servers running the task at once.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Projection {
    /// Servers in the pool.
    pub servers: u32,
    /// The budget: the pool-wide loss allowed, percent.
    pub budget_percent: f64,
    /// The one-server loss it starts from, percent (positive = slower).
    pub loss_percent: f64,
    /// (k, projected pool-wide loss %) for k = 1..=S.
    pub by_k: Vec<(u32, f64)>,
    /// The largest k inside the budget (0: not even one server fits).
    pub largest_k: u32,
}

/// The RAL report's reasoning: when k of S servers verify, a user whose data is spread over
/// the pool sees the single-server loss on k/S of it, so the pool-wide loss is loss × k / S.
pub fn project(loss_percent: f64, servers: u32, budget_percent: f64) -> Projection {
    let loss = loss_percent.max(0.0);
    let by_k: Vec<(u32, f64)> = (1..=servers).map(|k| (k, loss * k as f64 / servers as f64)).collect();
    let largest_k = by_k
        .iter()
        .filter(|(_, p)| *p <= budget_percent + 1e-9)
        .map(|(k, _)| *k)
        .max()
        .unwrap_or(0);
    Projection {
        servers,
        budget_percent,
        loss_percent: loss,
        by_k,
        largest_k,
    }
}

/// How long a full round of the task over a pool of S servers takes, k at a time.
pub fn round_seconds(task_seconds: f64, servers: u32, k: u32) -> Option<f64> {
    (k > 0).then(|| servers.div_ceil(k) as f64 * task_seconds)
}

// ---------------------------------------------------------------------------------------------
// 2. Cost to the task.

/// The task's progress over time: (seconds since it started, percent when known).
pub type Track = Vec<(f64, Option<f64>)>;

/// What the cost-to-the-task study produced.
pub struct TaskStudy {
    /// The task's duration with the machine idle, seconds, and its track.
    pub idle: (f64, Track),
    /// With the job running in a loop, seconds, and its track.
    pub loaded: (f64, Track),
    /// The runs of the job during the loaded side.
    pub loop_runs: Vec<i64>,
    /// Ctrl-C ended it early.
    pub aborted: bool,
}

/// Watches a running task until it is done; its duration and track. Task number `index` in
/// the record.
fn watch_to_end(
    rec: &Recorder,
    index: u32,
    task: &Mutex<&mut dyn Task>,
    limit: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<Option<(f64, Track)>> {
    let t0 = Instant::now();
    let mut track = Vec::new();
    let mut ended = false;
    loop {
        let state = {
            let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
            look(rec, index, &mut **t, &mut ended)?
        };
        let t = t0.elapsed().as_secs_f64();
        match state {
            TaskState::Done { completed, detail } => {
                if !completed {
                    return Err(usage(format!(
                        "the task did not complete ({detail}): its duration means nothing"
                    )));
                }
                track.push((t, Some(100.0)));
                return Ok(Some((t, track)));
            }
            TaskState::Running(p) => track.push((t, p.percent)),
            TaskState::Idle => track.push((t, None)),
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if t0.elapsed() > limit {
            return Err(usage(format!(
                "the task ran past --task-timeout ({} s) without finishing: set a longer one if it is just slow",
                limit.as_secs()
            )));
        }
        sleep_unless(POLL_EVERY, &|| stop.load(Ordering::Relaxed));
    }
}

/// RAL's loopy.sh: the task's duration with the machine idle, then with the job running in a
/// loop until the task ends. The task is stopped if the study ends any other way.
pub fn cost_to_task(
    task: &mut dyn Task,
    fg: &mut dyn Foreground,
    limit: Duration,
    rec: &Recorder,
    stop: &AtomicBool,
) -> anyhow::Result<TaskStudy> {
    let task = Mutex::new(task);
    // Stops the task; an event when it was still running (a stop after its end is only for
    // tidying up, a speed limit put back).
    let stop_task = |task: &Mutex<&mut dyn Task>| {
        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
        let running = matches!(t.poll(), Ok(TaskState::Running(_)));
        let r = t.stop();
        if running {
            rec.event("task-stopped", t.describe());
        }
        r
    };
    let aborted = |task: &Mutex<&mut dyn Task>| -> anyhow::Result<TaskStudy> {
        stop_task(task).map_err(task_err)?;
        Ok(TaskStudy {
            idle: (0.0, Vec::new()),
            loaded: (0.0, Vec::new()),
            loop_runs: Vec::new(),
            aborted: true,
        })
    };

    // Idle: the task alone.
    rec.event("side-start", "the machine idle");
    let started = {
        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
        start_running(rec, 0, &mut **t)
    };
    if let Err(e) = started {
        let _ = stop_task(&task);
        return Err(e);
    }
    let idle = match watch_to_end(rec, 0, &task, limit, stop) {
        Ok(Some(x)) => x,
        Ok(None) => return aborted(&task),
        Err(e) => {
            let _ = stop_task(&task);
            return Err(e);
        }
    };

    // Loaded: the task again, the job in a loop until it ends.
    rec.event("side-start", "with the job in a loop");
    let started = {
        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
        start_running(rec, 1, &mut **t)
    };
    if let Err(e) = started {
        let _ = stop_task(&task);
        return Err(e);
    }
    let done = AtomicBool::new(false);
    let mut runs = Vec::new();
    let mut was_aborted = false;
    let (watched, job) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let r = watch_to_end(rec, 1, &task, limit, stop);
            done.store(true, Ordering::Relaxed);
            r
        });
        let mut job: anyhow::Result<()> = Ok(());
        let control = PhaseControl::new();
        while !done.load(Ordering::Relaxed) {
            rec.run_started();
            match fg.run("impact-loop", &control) {
                Ok(r) => {
                    rec.run_ended(r.run_id);
                    runs.push(r.run_id);
                    if r.aborted {
                        was_aborted = true;
                        break;
                    }
                }
                Err(e) => {
                    job = Err(e);
                    break;
                }
            }
        }
        if job.is_err() || was_aborted {
            // The watcher ends on Ctrl-C by itself; after a failed job, stop the task so it does.
            let _ = stop_task(&task);
        }
        (watcher.join().expect("the watcher does not panic"), job)
    });
    let stopped = stop_task(&task);
    job?;
    let loaded = match watched {
        Ok(Some(x)) => x,
        Ok(None) => (0.0, Vec::new()),
        Err(_) if was_aborted => (0.0, Vec::new()),
        Err(e) => return Err(e),
    };
    stopped.map_err(task_err)?;
    Ok(TaskStudy {
        idle,
        loaded,
        loop_runs: runs,
        aborted: was_aborted || stop.load(Ordering::Relaxed),
    })
}

/// Percent per minute over a track (from its last known percent).
pub fn progress_rate(track: &Track) -> Option<f64> {
    let (t, p) = track.iter().rev().find_map(|(t, p)| p.map(|p| (*t, p)))?;
    (t > 0.0).then(|| p / t * 60.0)
}

// ---------------------------------------------------------------------------------------------
// 3. Held rate.

/// The held-rate study's timing.
pub struct HeldOptions {
    /// The stretch before the first task starts.
    pub before: Duration,
    /// The stretch after the last task ended.
    pub after: Duration,
    /// Each task after the first starts this long after the one before it started (overlapping
    /// it: a second failure during a rebuild); None: when the one before it ended.
    pub stagger: Option<Duration>,
    /// How long the tasks may take in all.
    pub limit: Duration,
}

/// When one task of a held-rate study ran, in seconds since the study started.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TaskSpan {
    /// What it was.
    pub task: String,
    /// Started.
    pub start: f64,
    /// Ended (None: it was stopped before it ended).
    pub end: Option<f64>,
    /// The system's last words.
    pub detail: String,
}

/// What the held-rate study produced (before analysis).
pub struct HeldStudy {
    /// The job's run.
    pub run: ForegroundRun,
    /// When the job's phase started, seconds since the study started.
    pub phase_start: f64,
    /// Each task's span.
    pub spans: Vec<TaskSpan>,
    /// Ctrl-C ended it early.
    pub aborted: bool,
}

/// IBM's rebuild runs: the job (one rate-limited, time-based phase) runs; after `before` the
/// first task starts, the next ones follow (staggered or one after another), and `after` the
/// last one ended the job is ended. Every task the study started is stopped if it is still
/// running when the study ends, however it ends.
pub fn held_rate(
    tasks: &mut [Box<dyn Task>],
    fg: &mut dyn Foreground,
    o: &HeldOptions,
    rec: &Recorder,
    stop: &AtomicBool,
) -> anyhow::Result<HeldStudy> {
    let control = PhaseControl::new();
    let job_done = AtomicBool::new(false);
    let n = tasks.len();
    let (run, orchestrated) = std::thread::scope(|s| {
        let orchestrator = s.spawn(|| -> anyhow::Result<(f64, Vec<TaskSpan>)> {
            let quit = || stop.load(Ordering::Relaxed) || job_done.load(Ordering::Relaxed);
            // Wait for the phase's clock to start (the files are laid out before it).
            let phase_start = loop {
                if let Some(ns) = control.started_ns() {
                    break rec.at(ns);
                }
                if quit() {
                    return Ok((0.0, Vec::new()));
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let mut spans: Vec<TaskSpan> = Vec::new();
            let mut ended = vec![false; n];
            let outcome = (|| -> anyhow::Result<()> {
                let until = Duration::from_secs_f64((phase_start - rec.now()).max(0.0)) + o.before;
                if !sleep_unless(until, &quit) {
                    return Ok(());
                }
                let t_first = Instant::now();
                let mut next = 0usize;
                let mut last_start = Instant::now();
                loop {
                    // Start the next task when its time has come.
                    let due = next < n
                        && (next == 0
                            || match o.stagger {
                                Some(d) => last_start.elapsed() >= d,
                                None => ended[next - 1],
                            });
                    if due {
                        // The span first: a task whose start fails half-way is stopped too.
                        spans.push(TaskSpan {
                            task: tasks[next].describe(),
                            start: rec.now(),
                            end: None,
                            detail: String::new(),
                        });
                        next += 1;
                        start_running(rec, next as u32 - 1, tasks[next - 1].as_mut())?;
                        last_start = Instant::now();
                        continue;
                    }
                    for i in 0..next {
                        if ended[i] {
                            continue;
                        }
                        if let TaskState::Done { detail, .. } = look(rec, i as u32, tasks[i].as_mut(), &mut ended[i])? {
                            spans[i].end = Some(rec.now());
                            spans[i].detail = detail;
                        }
                    }
                    if next == n && ended.iter().all(|e| *e) {
                        break;
                    }
                    if t_first.elapsed() > o.limit {
                        rec.event("task-timeout", format!("the tasks ran past {} s", o.limit.as_secs()));
                        return Err(usage(format!(
                            "the task(s) ran past --task-timeout ({} s) without finishing: set a longer one if they are just slow",
                            o.limit.as_secs()
                        )));
                    }
                    if !sleep_unless(POLL_EVERY, &quit) {
                        if job_done.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                            rec.event("job-ended-first", "the job's runtime ran out before the tasks ended");
                        }
                        return Ok(());
                    }
                }
                rec.event("after-start", format!("{} s after the last task", o.after.as_secs_f64()));
                sleep_unless(o.after, &quit);
                Ok(())
            })();
            control.finish();
            // Stop what is still running: only the tasks this study started.
            for (i, t) in tasks.iter_mut().enumerate().take(spans.len()) {
                if !ended[i] {
                    let _ = t.stop();
                    rec.event("task-stopped", t.describe());
                }
            }
            outcome.map(|()| (phase_start, spans))
        });
        rec.run_started();
        let run = fg.run("impact-held", &control);
        job_done.store(true, Ordering::Relaxed);
        control.finish();
        (run, orchestrator.join().expect("the orchestrator does not panic"))
    });
    let run = run?;
    rec.run_ended(run.run_id);
    let (phase_start, spans) = orchestrated?;
    Ok(HeldStudy {
        aborted: run.aborted || stop.load(Ordering::Relaxed),
        run,
        phase_start,
        spans,
    })
}

/// Which stretch an interval falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stretch {
    /// Before the first task started.
    Before,
    /// While a task ran.
    During,
    /// After the last task ended.
    After,
}

/// One interval of a held-rate run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HeldInterval {
    /// Start, seconds since the study started.
    pub t_start: f64,
    /// End, seconds since the study started.
    pub t_end: f64,
    /// Achieved rate in the interval (the target's unit: IOPS or MiB/s).
    pub achieved: f64,
    /// Latency percentiles, µs.
    pub p50_us: f64,
    /// 99th.
    pub p99_us: f64,
    /// 99.9th.
    pub p99_9_us: f64,
    /// Behind schedule at the interval's end (operations, or MiB for a bandwidth target).
    pub behind: f64,
    /// Where it falls.
    pub stretch: Stretch,
}

/// One stretch in sum.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StretchSummary {
    /// Which.
    pub stretch: Stretch,
    /// Intervals in it.
    pub intervals: usize,
    /// Mean achieved rate.
    pub achieved: f64,
    /// Lowest interval's rate.
    pub achieved_min: f64,
    /// Mean of the intervals' p99, µs.
    pub p99_us: f64,
    /// Largest interval p99.9, µs.
    pub p99_9_max_us: f64,
    /// Largest deficit.
    pub behind_max: f64,
}

/// The held-rate study's figures.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HeldAnalysis {
    /// "IOPS" or "MiB/s".
    pub unit: &'static str,
    /// The target in that unit.
    pub target: f64,
    /// Every interval.
    pub intervals: Vec<HeldInterval>,
    /// Before, during and after (those with intervals).
    pub stretches: Vec<StretchSummary>,
    /// The deficit regarded as none: the largest before the first task (or 1 % of a second's
    /// target when there was no stretch before).
    pub tolerance: f64,
    /// Largest deficit.
    pub behind_max: f64,
    /// Seconds from the last task's end until the deficit was back within the tolerance; 0
    /// when none built up; None when it was not repaid before the job ended.
    pub repaid_after: Option<f64>,
    /// The deficit at the job's end.
    pub behind_at_end: f64,
}

/// Computes per interval the achieved rate, latency and deficit (operations behind schedule:
/// the engine's schedule starts at the phase's start and issues late I/Os at once, so a
/// deficit is repaid by running faster than the target once the disturbance ends), and when
/// the deficit was repaid. `phase_start` and the spans are seconds since the study started.
pub fn analyse_held(phase: &PhaseResult, phase_start: f64, spans: &[TaskSpan]) -> Option<HeldAnalysis> {
    let rate = phase.rate.as_ref()?;
    let iops = rate.unit == storlab_engine::RateUnit::Iops;
    let (unit, scale) = if iops {
        ("IOPS", 1.0)
    } else {
        ("MiB/s", 1.0 / (1u64 << 20) as f64)
    };
    let target = rate.target * scale;
    let first = spans.first().map(|s| s.start);
    let last_end = if spans.iter().all(|s| s.end.is_some()) {
        spans
            .iter()
            .filter_map(|s| s.end)
            .fold(None, |a: Option<f64>, e| Some(a.map_or(e, |a| a.max(e))))
    } else {
        None
    };
    let mut done = 0f64;
    let mut intervals = Vec::new();
    for s in &phase.samples {
        let amount = if iops {
            (s.ops_read + s.ops_written) as f64
        } else {
            (s.bytes_read + s.bytes_written) as f64 * scale
        };
        done += amount;
        let (a, b) = (phase_start + s.t_start, phase_start + s.t_end);
        let mid = (a + b) / 2.0;
        let stretch = match (first, last_end) {
            (Some(f), _) if mid < f => Stretch::Before,
            (None, _) => Stretch::Before,
            (_, Some(e)) if mid >= e => Stretch::After,
            _ => Stretch::During,
        };
        let span = (s.t_end - s.t_start).max(1e-9);
        intervals.push(HeldInterval {
            t_start: a,
            t_end: b,
            achieved: amount / span,
            p50_us: s.lat_p50_ns as f64 / 1e3,
            p99_us: s.lat_p99_ns as f64 / 1e3,
            p99_9_us: s.lat_p99_9_ns as f64 / 1e3,
            behind: (target * s.t_end - done).max(0.0),
            stretch,
        });
    }
    let stretches: Vec<StretchSummary> = [Stretch::Before, Stretch::During, Stretch::After]
        .into_iter()
        .filter_map(|st| {
            let v: Vec<&HeldInterval> = intervals.iter().filter(|i| i.stretch == st).collect();
            (!v.is_empty()).then(|| StretchSummary {
                stretch: st,
                intervals: v.len(),
                achieved: v.iter().map(|i| i.achieved).sum::<f64>() / v.len() as f64,
                achieved_min: v.iter().map(|i| i.achieved).fold(f64::INFINITY, f64::min),
                p99_us: v.iter().map(|i| i.p99_us).sum::<f64>() / v.len() as f64,
                p99_9_max_us: v.iter().map(|i| i.p99_9_us).fold(0.0, f64::max),
                behind_max: v.iter().map(|i| i.behind).fold(0.0, f64::max),
            })
        })
        .collect();
    let before_max = intervals
        .iter()
        .filter(|i| i.stretch == Stretch::Before)
        .map(|i| i.behind)
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    let tolerance = before_max.unwrap_or(0.0).max(target * 0.01);
    let behind_max = intervals.iter().map(|i| i.behind).fold(0.0, f64::max);
    let behind_at_end = intervals.last().map(|i| i.behind).unwrap_or(0.0);
    let repaid_after = last_end.and_then(|e| {
        let built_up = intervals
            .iter()
            .filter(|i| i.stretch != Stretch::Before)
            .any(|i| i.behind > tolerance);
        if !built_up {
            return Some(0.0);
        }
        intervals
            .iter()
            .find(|i| i.t_end >= e && i.behind <= tolerance)
            .map(|i| (i.t_end - e).max(0.0))
    });
    Some(HeldAnalysis {
        unit,
        target,
        intervals,
        stretches,
        tolerance,
        behind_max,
        repaid_after,
        behind_at_end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_engine::{RateReport, Sample};

    fn phase(target: f64, per_second: &[u64]) -> PhaseResult {
        let mut p = PhaseResult::default();
        p.rate = Some(RateReport {
            target,
            unit: storlab_engine::RateUnit::Iops,
            achieved: target,
            late_ios: 0,
            late_after_ns: 0,
        });
        p.samples = per_second
            .iter()
            .enumerate()
            .map(|(i, ops)| Sample {
                index: i as u32,
                t_start: i as f64,
                t_end: i as f64 + 1.0,
                ops_read: *ops,
                ..Default::default()
            })
            .collect();
        p
    }

    fn span(start: f64, end: f64) -> TaskSpan {
        TaskSpan {
            task: "t".into(),
            start,
            end: Some(end),
            detail: String::new(),
        }
    }

    #[test]
    fn the_deficit_builds_during_the_task_and_is_repaid_after_it() {
        // 100 IOPS target; the phase starts at study time 10; the task runs 12..14. During it
        // the job manages 50 per second; afterwards it catches up at 150 per second.
        let p = phase(100.0, &[100, 100, 50, 50, 150, 150, 100, 100]);
        let a = analyse_held(&p, 10.0, &[span(12.0, 14.0)]).unwrap();
        let behind: Vec<f64> = a.intervals.iter().map(|i| i.behind).collect();
        assert_eq!(behind, [0.0, 0.0, 50.0, 100.0, 50.0, 0.0, 0.0, 0.0]);
        let stretches: Vec<Stretch> = a.intervals.iter().map(|i| i.stretch).collect();
        use Stretch::*;
        assert_eq!(stretches, [Before, Before, During, During, After, After, After, After]);
        assert_eq!(a.behind_max, 100.0);
        // Repaid at the end of second 6 of the phase (study time 16): 2 s after the task ended.
        assert_eq!(a.repaid_after, Some(2.0));
        assert_eq!(a.stretches[1].achieved, 50.0);
        assert_eq!(a.stretches[0].achieved, 100.0);
    }

    #[test]
    fn a_deficit_not_repaid_is_said_so() {
        let p = phase(100.0, &[100, 50, 50, 100, 100]);
        let a = analyse_held(&p, 0.0, &[span(1.0, 3.0)]).unwrap();
        assert_eq!(a.repaid_after, None);
        assert_eq!(a.behind_at_end, 100.0);
        // Nothing built up: repaid at once.
        let p = phase(100.0, &[100, 100, 100, 100]);
        assert_eq!(
            analyse_held(&p, 0.0, &[span(1.0, 2.0)]).unwrap().repaid_after,
            Some(0.0)
        );
    }

    #[test]
    fn a_bandwidth_target_counts_its_deficit_in_mib() {
        // 4 MiB/s target: 2 MiB done in the second second, 6 in the third.
        let mut p = phase(4.0 * 1048576.0, &[0, 0, 0]);
        p.rate.as_mut().unwrap().unit = storlab_engine::RateUnit::BytesPerSec;
        for (smp, mib) in p.samples.iter_mut().zip([4u64, 2, 6]) {
            smp.bytes_written = mib << 20;
        }
        let a = analyse_held(&p, 0.0, &[span(1.0, 2.0)]).unwrap();
        assert_eq!(a.unit, "MiB/s");
        assert_eq!(a.target, 4.0);
        let behind: Vec<f64> = a.intervals.iter().map(|i| i.behind).collect();
        assert_eq!(behind, [0.0, 2.0, 0.0]);
        assert_eq!(a.repaid_after, Some(1.0));
    }

    #[test]
    fn projection_follows_the_ral_reasoning() {
        // RAL: a verify costs one server 13.9 % of its reads; with 10 servers and a 5 % budget,
        // 3 at once cost the pool 4.17 %, 4 would cost 5.56 %.
        let p = project(13.9, 10, 5.0);
        assert_eq!(p.largest_k, 3);
        assert!((p.by_k[2].1 - 4.17).abs() < 0.01);
        assert_eq!(project(60.0, 10, 5.0).largest_k, 0);
        assert_eq!(project(-2.0, 4, 1.0).largest_k, 4, "a gain costs nothing");
        assert_eq!(round_seconds(100.0, 10, 3), Some(400.0));
        assert_eq!(round_seconds(100.0, 10, 0), None);
    }
}
