//! The three studies: the cost of a task to the users (RAL's Table 1 and 2), the cost of the
//! users to the task (RAL's loopy.sh) and a workload held at a target rate through one or more
//! tasks (IBM's rebuild runs). The foreground job is run by the caller (storlab's own `run`
//! path, which stores every run); this module decides when, starts, watches and stops the
//! tasks, and records what happened.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use storlab_engine::PhaseControl;
use storlab_model::result::PhaseResult;
use storlab_model::run::RunKind;
use storlab_model::study::TaskSpan;

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
    fn run(&mut self, kind: RunKind, control: &PhaseControl) -> anyhow::Result<ForegroundRun>;
}

/// How often a running task is looked at.
pub const POLL_EVERY: Duration = Duration::from_millis(250);

/// How long to wait before the next look at a task `elapsed` into its run when its duration is
/// what is measured: a fiftieth of the time so far, between 10 ms and POLL_EVERY, so that the
/// duration is known to 2 % however short the task is. At a fixed 250 ms a scrub that took
/// 0.3 s idle and 0.45 s under load was timed 0.5 s on both sides (it happened in CI).
fn duration_poll(elapsed: Duration) -> Duration {
    (elapsed / 50).clamp(Duration::from_millis(10), POLL_EVERY)
}

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
    let mut pairs = Pairs::new(task);
    let mut reps = Vec::new();
    let mut aborted = false;
    let result = (|| -> anyhow::Result<()> {
        for r in 1..=repeat {
            let (mut done, stopped) = pairs.pair(r, fg, early, rec, stop)?;
            reps.append(&mut done);
            if stopped {
                aborted = true;
                return Ok(());
            }
        }
        Ok(())
    })();
    let stopped = pairs.finish(rec);
    result?;
    stopped?;
    Ok(UsersStudy {
        repetitions: reps,
        aborted,
    })
}

/// Repetitions of a cost-to-the-users study taken a pair at a time, so that a caller may decide
/// after each pair whether another is needed (`storlab qualify`'s impact criteria): the job
/// idle, then with the task, the task started afresh for the loaded one and stopped after it.
/// [`Pairs::finish`] stops the task this study started however the study ends.
pub struct Pairs<'t> {
    task: Mutex<&'t mut dyn Task>,
    /// Whether the task this study started is (as far as it knows) still running.
    live: bool,
}

impl<'t> Pairs<'t> {
    /// Pairs of repetitions with `task` as the load.
    pub fn new(task: &'t mut dyn Task) -> Pairs<'t> {
        Pairs {
            task: Mutex::new(task),
            live: false,
        }
    }

    /// Repetition `r`: the job idle, then with the task running (and, when the task ended
    /// before the job and `early` says so, the loaded one once more). Returns the repetitions
    /// run, in order, and whether Ctrl-C stopped the study.
    pub fn pair(
        &mut self,
        r: u32,
        fg: &mut dyn Foreground,
        early: EarlyFinish,
        rec: &Recorder,
        stop: &AtomicBool,
    ) -> anyhow::Result<(Vec<Repetition>, bool)> {
        let mut reps = Vec::new();
        for loaded in [false, true] {
            let mut tries = 0;
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok((reps, true));
                }
                let (run, mut ended) = self.side(r, loaded, fg, rec)?;
                if run.aborted {
                    reps.push(Repetition {
                        index: r,
                        loaded,
                        run_id: run.run_id,
                        overlapped: false,
                        results: run.results,
                    });
                    return Ok((reps, true));
                }
                let overlapped = !loaded || self.overlapped(r, run.run_id, rec, &mut ended)?;
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
        Ok((reps, false))
    }

    /// One side of repetition `r`: the job run once, idle or with the task started afresh and
    /// looked at every POLL_EVERY while the job runs; the run, and whether the task ended.
    fn side(
        &mut self,
        r: u32,
        loaded: bool,
        fg: &mut dyn Foreground,
        rec: &Recorder,
    ) -> anyhow::Result<(ForegroundRun, bool)> {
        let task = &self.task;
        let mut ended = false;
        rec.run_started();
        if loaded {
            let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
            self.live = true;
            start_running(rec, 0, &mut **t)?;
        }
        rec.event(
            "repetition-start",
            format!("repetition {r}, {}", if loaded { "with the task" } else { "idle" }),
        );
        let job_done = AtomicBool::new(false);
        let (run, watched) = std::thread::scope(|s| {
            let ended = &mut ended;
            let watcher = loaded.then(|| {
                s.spawn(|| -> anyhow::Result<()> {
                    while !job_done.load(Ordering::Relaxed) {
                        {
                            let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
                            look(rec, 0, &mut **t, ended)?;
                        }
                        sleep_unless(POLL_EVERY, &|| job_done.load(Ordering::Relaxed));
                    }
                    Ok(())
                })
            });
            let kind = if loaded {
                RunKind::ImpactLoaded
            } else {
                RunKind::ImpactIdle
            };
            let run = fg.run(kind, &PhaseControl::new());
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
        Ok((run, ended))
    }

    /// Whether the task still ran when the loaded run ended (it covered the run); it is then
    /// stopped, the idle repetitions running without it and the next loaded one starting it
    /// afresh. A task that ended first is said.
    fn overlapped(&mut self, r: u32, run_id: i64, rec: &Recorder, ended: &mut bool) -> anyhow::Result<bool> {
        let mut t = self.task.lock().unwrap_or_else(|e| e.into_inner());
        let overlapped = matches!(look(rec, 0, &mut **t, ended)?, TaskState::Running(_));
        if !overlapped {
            rec.event(
                "task-ended-early",
                format!("repetition {r} (run {run_id}): the task ended before the job did"),
            );
            self.live = false;
            return Ok(false);
        }
        self.live = false;
        t.stop().map_err(task_err)?;
        rec.event("task-stopped", t.describe());
        Ok(true)
    }

    /// Stops the task this study started (if it still runs) and says so.
    pub fn finish(self, rec: &Recorder) -> anyhow::Result<()> {
        let task = self.task.into_inner().unwrap_or_else(|e| e.into_inner());
        let stopped = task.stop();
        if self.live {
            rec.event("task-stopped", task.describe());
        }
        stopped.map_err(task_err)
    }
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
        sleep_unless(duration_poll(t0.elapsed()), &|| stop.load(Ordering::Relaxed));
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
    // Idle: the task alone.
    rec.event("side-start", "the machine idle");
    start_side(&task, rec, 0)?;
    let idle = match watch_to_end(rec, 0, &task, limit, stop) {
        Ok(Some(x)) => x,
        Ok(None) => {
            stop_task(&task, rec).map_err(task_err)?;
            return Ok(TaskStudy {
                idle: (0.0, Vec::new()),
                loaded: (0.0, Vec::new()),
                loop_runs: Vec::new(),
                aborted: true,
            });
        }
        Err(e) => {
            let _ = stop_task(&task, rec);
            return Err(e);
        }
    };
    // Loaded: the task again, the job in a loop until it ends.
    rec.event("side-start", "with the job in a loop");
    start_side(&task, rec, 1)?;
    let done = AtomicBool::new(false);
    let (watched, looped) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let r = watch_to_end(rec, 1, &task, limit, stop);
            done.store(true, Ordering::Relaxed);
            r
        });
        let looped = job_in_a_loop(fg, rec, &done);
        if looped.job.is_err() || looped.aborted {
            // The watcher ends on Ctrl-C by itself; after a failed job, stop the task so it does.
            let _ = stop_task(&task, rec);
        }
        (watcher.join().expect("the watcher does not panic"), looped)
    });
    let stopped = stop_task(&task, rec);
    looped.job?;
    let loaded = match watched {
        Ok(Some(x)) => x,
        Ok(None) => (0.0, Vec::new()),
        Err(_) if looped.aborted => (0.0, Vec::new()),
        Err(e) => return Err(e),
    };
    stopped.map_err(task_err)?;
    Ok(TaskStudy {
        idle,
        loaded,
        loop_runs: looped.runs,
        aborted: looped.aborted || stop.load(Ordering::Relaxed),
    })
}

/// Stops the task; an event when it was still running (a stop after its end is only for
/// tidying up, a speed limit put back).
fn stop_task(task: &Mutex<&mut dyn Task>, rec: &Recorder) -> Result<(), crate::task::TaskError> {
    let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
    let running = matches!(t.poll(), Ok(TaskState::Running(_)));
    let r = t.stop();
    if running {
        rec.event("task-stopped", t.describe());
    }
    r
}

/// Starts the task as task number `index` of the study; stopped again when its start fails.
fn start_side(task: &Mutex<&mut dyn Task>, rec: &Recorder, index: u32) -> anyhow::Result<()> {
    let started = {
        let mut t = task.lock().unwrap_or_else(|e| e.into_inner());
        start_running(rec, index, &mut **t)
    };
    if let Err(e) = started {
        let _ = stop_task(task, rec);
        return Err(e);
    }
    Ok(())
}

/// The job run over and over while the task runs: its runs, whether Ctrl-C cut one short,
/// and how the job ended.
struct Looped {
    runs: Vec<i64>,
    aborted: bool,
    job: anyhow::Result<()>,
}

fn job_in_a_loop(fg: &mut dyn Foreground, rec: &Recorder, done: &AtomicBool) -> Looped {
    let mut looped = Looped {
        runs: Vec::new(),
        aborted: false,
        job: Ok(()),
    };
    let control = PhaseControl::new();
    while !done.load(Ordering::Relaxed) {
        rec.run_started();
        match fg.run(RunKind::ImpactLoop, &control) {
            Ok(r) => {
                rec.run_ended(r.run_id);
                looped.runs.push(r.run_id);
                if r.aborted {
                    looped.aborted = true;
                    break;
                }
            }
            Err(e) => {
                looped.job = Err(e);
                break;
            }
        }
    }
    looped
}

// ---------------------------------------------------------------------------------------------
// 3. Held rate.

/// The held-rate study's timing.
#[derive(Debug, Clone)]
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
    let (run, orchestrated) = std::thread::scope(|s| {
        let orchestrator = s.spawn(|| {
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
            let mut turns = Turns {
                spans: Vec::new(),
                ended: vec![false; tasks.len()],
            };
            let outcome = turns.run(tasks, o, rec, phase_start, &quit, (&job_done, stop));
            control.finish();
            // Stop what is still running: only the tasks this study started.
            for (i, t) in tasks.iter_mut().enumerate().take(turns.spans.len()) {
                if !turns.ended[i] {
                    let _ = t.stop();
                    rec.event("task-stopped", t.describe());
                }
            }
            outcome.map(|()| (phase_start, turns.spans))
        });
        rec.run_started();
        let run = fg.run(RunKind::ImpactHeld, &control);
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

/// The tasks of a held-rate study taken in turn while the job runs: each one's span, and
/// which have ended.
struct Turns {
    spans: Vec<TaskSpan>,
    ended: Vec<bool>,
}

impl Turns {
    /// `before` into the phase, the tasks one after another (or every `stagger`), each looked
    /// at until done; then `after` more of the job. Ends early when the job does or Ctrl-C.
    fn run(
        &mut self,
        tasks: &mut [Box<dyn Task>],
        o: &HeldOptions,
        rec: &Recorder,
        phase_start: f64,
        quit: &dyn Fn() -> bool,
        (job_done, stop): (&AtomicBool, &AtomicBool),
    ) -> anyhow::Result<()> {
        let n = tasks.len();
        let until = Duration::from_secs_f64((phase_start - rec.now()).max(0.0)) + o.before;
        if !sleep_unless(until, quit) {
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
                        None => self.ended[next - 1],
                    });
            if due {
                // The span first: a task whose start fails half-way is stopped too.
                self.spans.push(TaskSpan {
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
            self.look_at_running(tasks, next, rec)?;
            if next == n && self.ended.iter().all(|e| *e) {
                break;
            }
            if t_first.elapsed() > o.limit {
                rec.event("task-timeout", format!("the tasks ran past {} s", o.limit.as_secs()));
                return Err(usage(format!(
                    "the task(s) ran past --task-timeout ({} s) without finishing: set a longer one if they are just slow",
                    o.limit.as_secs()
                )));
            }
            if !sleep_unless(POLL_EVERY, quit) {
                if job_done.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                    rec.event("job-ended-first", "the job's runtime ran out before the tasks ended");
                }
                return Ok(());
            }
        }
        rec.event(
            "after-start",
            format!("{} s after the last task", o.after.as_secs_f64()),
        );
        sleep_unless(o.after, quit);
        Ok(())
    }

    /// Each started task not yet ended looked at; a task done closes its span.
    fn look_at_running(&mut self, tasks: &mut [Box<dyn Task>], started: usize, rec: &Recorder) -> anyhow::Result<()> {
        for (i, task) in tasks.iter_mut().enumerate().take(started) {
            if self.ended[i] {
                continue;
            }
            if let TaskState::Done { detail, .. } = look(rec, i as u32, task.as_mut(), &mut self.ended[i])? {
                self.spans[i].end = Some(rec.now());
                self.spans[i].detail = detail;
            }
        }
        Ok(())
    }
}
