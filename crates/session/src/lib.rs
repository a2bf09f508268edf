//! One run, from job to stored result: the job is resolved into a plan (crates/workload), the
//! environment captured (crates/env), the run begun in the store, each phase run by the engine
//! and stored as it finishes with the page cache's possible flattery judged, the files storlab
//! created removed and their space given back, and the run's status set. Ctrl-C ends the phase
//! going on; the phases finished before are kept and the run is stored as aborted.
//!
//! `storlab run`, `demo`, `iozone`, `sweep` and `impact` all run their jobs through [`run`], so
//! every run is stored, cleaned up and interruptible the same way. [`run_study`] runs a list of
//! jobs as the points of one study and stores it; [`store_scan`] stores a scan as a run.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The engine's view of a phase's intervals, which every [`LiveRun`] is.
pub use storlab_engine::IntervalObserver;
use storlab_engine::{run_phase_observed, PhaseControl};
use storlab_model::env::Environment;
use storlab_model::plan::PhasePlan;
use storlab_model::result::PhaseResult;
use storlab_model::run::{NewRun, Phase, PhaseName, PhaseParams, RunEventKind, RunKind, RunStatus, Tag};
use storlab_model::scan::{Report as ScanReport, ScanOptions};
use storlab_model::study::{Member, NewStudy, Role, StudyParams};
use storlab_store::{Store, StoreError};
use storlab_workload::{cache_may_flatter, resolve, Job, ResolveOptions, WorkloadError};

pub mod team;

/// Why a run could not be run or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The job was refused before anything ran (the user's to fix).
    #[error("{0}")]
    Job(#[source] WorkloadError),
    /// The database failed.
    #[error("{0}")]
    Store(#[source] StoreError),
    /// A rank of a run many processes ran together failed (its rank, host and reason); the
    /// run is stored as failed with the phases before it.
    #[error("{0}")]
    Rank(String),
    /// The ranks of a run many processes run together did not start: one could not prepare
    /// its part, or its part differs from rank 0's (its rank, host and reason). Nothing was
    /// stored; the user's to fix.
    #[error("{0}")]
    Disagreed(String),
    /// A phase failed; the run is stored as failed with the phases before it.
    #[error("run {run_id}, phase {seq} ({kind}): {source}")]
    Phase {
        /// The run.
        run_id: i64,
        /// The phase, from 1.
        seq: usize,
        /// Its kind.
        kind: String,
        /// What the engine (or the phase's other runner) said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl From<WorkloadError> for SessionError {
    fn from(e: WorkloadError) -> Self {
        SessionError::Job(e)
    }
}

impl From<StoreError> for SessionError {
    fn from(e: StoreError) -> Self {
        SessionError::Store(e)
    }
}

/// Set by Ctrl-C (SIGINT) and SIGTERM; the engine's workers poll it between I/Os.
static STOP: AtomicBool = AtomicBool::new(false);

/// The flag Ctrl-C sets, with its handler installed: a first Ctrl-C asks the run (or study) to
/// stop and keep what it finished; a second leaves at once with exit code 130.
pub fn stop_flag() -> &'static AtomicBool {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::Relaxed) {
                std::process::exit(130);
            }
            eprintln!("\nstorlab: stopping (finished phases are kept; files are being removed)...");
        });
    });
    &STOP
}

/// How to run a job.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// What the run is stored as.
    pub kind: RunKind,
    /// The user's tags.
    pub tags: &'a [Tag],
    /// Block devices the user allowed as targets (`--allow-device`).
    pub allow_devices: &'a [PathBuf],
    /// Keep the files storlab created.
    pub keep: bool,
    /// The command line, stored with the run.
    pub command: &'a str,
    /// Lets a study end the (time-based) phases early and see when each started.
    pub control: Option<&'a PhaseControl>,
    /// A live view of the run (`--metrics`): told each phase and each worker's interval.
    pub live: Option<&'a dyn LiveRun>,
}

impl<'a> RunOptions<'a> {
    /// How a job given by its flags (`run`, `demo`, `sweep`) runs: as `kind`, with the flags'
    /// tags, devices and `--keep`, `live` watching.
    pub fn of_job(
        kind: RunKind,
        a: &'a storlab_workload::flags::JobArgs,
        command: &'a str,
        live: Option<&'a (dyn LiveRun + Send + Sync)>,
    ) -> RunOptions<'a> {
        RunOptions {
            kind,
            tags: &a.tags,
            allow_devices: &a.allow_devices,
            keep: a.keep,
            command,
            control: None,
            live: live.map(|v| v as &dyn LiveRun),
        }
    }
}

/// A live view of runs as they go (the Prometheus metrics of `--metrics`, the status line on a
/// terminal): told which phase of which run starts and ends, and, as the engine's
/// [`IntervalObserver`], each worker's interval and each merged sample.
pub trait LiveRun: IntervalObserver {
    /// Run `run_id` of kind `kind` begins (before its first phase).
    fn run_started(&self, _run_id: i64, _kind: RunKind) {}
    /// A phase starts.
    fn phase_started(&self, phase: &PhaseStart);
    /// Phase `seq` (from 1) of run `run_id` ended: its result (`interrupted` set when Ctrl-C
    /// ended it), or `None` when it failed.
    fn phase_ended(&self, run_id: i64, seq: usize, result: Option<&PhaseResult>);
    /// A study's event (`task-start`, `task-stopped`, `task-end`, `repetition-end`, …) and
    /// what it says.
    fn study_event(&self, _kind: &str, _detail: &str) {}
    /// A study reached point `done` of `total`; `next` names the point that starts now (empty
    /// when the study is done).
    fn study_progress(&self, _done: usize, _total: usize, _next: &str) {}
    /// A study's running task number `task` (from 0, in the order given) was looked at: how
    /// far it is, when it says.
    fn task_progress(&self, _task: u32, _percent: Option<f64>) {}
}

/// A phase about to start, as a live view is told it.
#[derive(Debug, Clone, Copy)]
pub struct PhaseStart<'a> {
    /// The run.
    pub run_id: i64,
    /// The phase's number, from 1.
    pub seq: usize,
    /// How many phases the run has.
    pub phases: usize,
    /// Its kind (`read`, `randwrite`, …).
    pub kind: &'a str,
    /// The job's targets, as shown.
    pub targets: &'a [String],
    /// A time-based phase's length including its ramp, seconds.
    pub runtime_seconds: Option<f64>,
    /// A one-pass phase's bytes (every worker's region).
    pub bytes: Option<u64>,
    /// The phase reports interval samples as it goes (a metadata phase does not).
    pub sampled: bool,
}

/// Several live views told the same (`--metrics` and the status line at once).
pub struct LiveViews(pub Vec<std::sync::Arc<dyn LiveRun + Send + Sync>>);

impl IntervalObserver for LiveViews {
    fn interval(&self, target: u16, bytes: [u64; 2], ops: [u64; 2], latency_ns: &[hdrhistogram::Histogram<u64>; 2]) {
        self.0.iter().for_each(|v| v.interval(target, bytes, ops, latency_ns));
    }
    fn sample(&self, sample: &storlab_model::result::Sample) {
        self.0.iter().for_each(|v| v.sample(sample));
    }
}

impl LiveRun for LiveViews {
    fn run_started(&self, run_id: i64, kind: RunKind) {
        self.0.iter().for_each(|v| v.run_started(run_id, kind));
    }
    fn phase_started(&self, phase: &PhaseStart) {
        self.0.iter().for_each(|v| v.phase_started(phase));
    }
    fn phase_ended(&self, run_id: i64, seq: usize, result: Option<&PhaseResult>) {
        self.0.iter().for_each(|v| v.phase_ended(run_id, seq, result));
    }
    fn study_event(&self, kind: &str, detail: &str) {
        self.0.iter().for_each(|v| v.study_event(kind, detail));
    }
    fn study_progress(&self, done: usize, total: usize, next: &str) {
        self.0.iter().for_each(|v| v.study_progress(done, total, next));
    }
    fn task_progress(&self, task: u32, percent: Option<f64>) {
        self.0.iter().for_each(|v| v.task_progress(task, percent));
    }
}

impl LiveViews {
    /// The views given, as one; `None` when there are none.
    pub fn of(
        views: Vec<Option<std::sync::Arc<dyn LiveRun + Send + Sync>>>,
    ) -> Option<std::sync::Arc<dyn LiveRun + Send + Sync>> {
        let mut v: Vec<_> = views.into_iter().flatten().collect();
        match v.len() {
            0 => None,
            1 => v.pop(),
            _ => Some(std::sync::Arc::new(LiveViews(v))),
        }
    }
}

/// What a run left: its id, how it ended, and its phases' results.
#[derive(Debug)]
pub struct Executed {
    /// The run's id.
    pub run_id: i64,
    /// How it ended.
    pub status: RunStatus,
    /// The phases that finished, in order.
    pub results: Vec<PhaseResult>,
}

/// A seed that differs from run to run (the job's own seed, when it gives one, wins).
fn random_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ ((std::process::id() as u64) << 40) ^ 0x9E37_79B9_7F4A_7C15
}

/// Options that do not come from the job: the devices allowed, this process's file names, the
/// seed when the job gives none.
pub fn resolve_options(allow_devices: &[PathBuf]) -> ResolveOptions {
    ResolveOptions {
        allow_devices: allow_devices.to_vec(),
        file_tag: std::process::id().to_string(),
        default_seed: random_seed(),
    }
}

/// Removes the files a run created however the run ends, then flushes each filesystem they were
/// on (syncfs), so that their space is free when the next command looks: btrfs, for one, gives
/// the blocks of removed files back only when its transaction commits, and a job started at
/// once after a large run would otherwise be refused for want of space it is about to get.
struct Cleanup {
    files: Vec<PathBuf>,
    keep: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let mut dirs: Vec<&Path> = Vec::new();
        for f in &self.files {
            match std::fs::remove_file(f) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => eprintln!("storlab: warning: could not remove {}: {e}", f.display()),
            }
            let dir = f
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        for dir in dirs {
            let synced = std::fs::File::open(dir).and_then(|d| rustix::fs::syncfs(&d).map_err(Into::into));
            if let Err(e) = synced {
                eprintln!(
                    "storlab: warning: could not flush {} after removing the files: {e}",
                    dir.display()
                );
            }
        }
    }
}

/// A job checked and resolved into its plan, before anything is stored or written.
pub struct Prepared<'a> {
    job: &'a Job,
    plan: storlab_workload::Plan,
}

impl Prepared<'_> {
    /// How many phases the job runs.
    pub fn phase_count(&self) -> usize {
        self.plan.phases.len()
    }

    /// The phases as resolved (their settings with the defaults applied, their workers).
    pub fn phases(&self) -> &[storlab_model::plan::PhasePlan] {
        &self.plan.phases
    }
}

/// Checks and resolves a job: every refusal comes here, before a database is opened or a byte
/// is written.
pub fn prepare<'a>(job: &'a Job, allow_devices: &[PathBuf]) -> Result<Prepared<'a>, SessionError> {
    Ok(Prepared {
        job,
        plan: resolve(job, &resolve_options(allow_devices))?,
    })
}

/// Resolves `job`, runs its phases, stores the run (environment, each phase as it finishes,
/// events, status) and removes the files it created (unless `keep`). A failed phase is stored
/// with the run and returned as the error.
pub fn run(store: &mut Store, job: &Job, o: &RunOptions) -> Result<Executed, SessionError> {
    run_prepared(store, prepare(job, o.allow_devices)?, o)
}

/// Runs a prepared job (see [`run`]).
pub fn run_prepared(store: &mut Store, prepared: Prepared, o: &RunOptions) -> Result<Executed, SessionError> {
    let Prepared { job, plan } = prepared;
    let (targets, env, new_run) = run_setup(job, &plan, o);
    // The files go when this returns, whether the run finished, failed or was interrupted.
    let _cleanup = Cleanup {
        files: plan.created_files.clone(),
        keep: o.keep,
    };
    let fresh = PhaseControl::new();
    let mut phases = PlanPhases {
        plan: &plan,
        control: o.control.unwrap_or(&fresh),
        memory_bytes: env.memory_bytes,
        laid_out: None,
    };
    run_phases(store, &new_run, &env, &targets, &mut phases, o)
}

/// [`run_prepared`] on one rank of a run many processes run together: every rank calls it with
/// its own job (its own targets); rank 0 passes the store and gets the run back (see
/// [`team::run_team_phases`]).
pub fn run_prepared_team(
    team: &dyn team::Team,
    store: Option<&mut Store>,
    prepared: Prepared,
    o: &RunOptions,
    stonewall: bool,
) -> Result<Option<Executed>, SessionError> {
    let Prepared { job, plan } = prepared;
    let (_, env, new_run) = run_setup(job, &plan, o);
    let _cleanup = Cleanup {
        files: plan.created_files.clone(),
        keep: o.keep,
    };
    let fresh = PhaseControl::new();
    let control = o.control.unwrap_or(&fresh);
    let mut phases = PlanPhases {
        plan: &plan,
        control,
        memory_bytes: env.memory_bytes,
        laid_out: None,
    };
    team::run_team_phases(
        team,
        store,
        &new_run,
        &env,
        &mut phases,
        o,
        stonewall.then_some(control),
    )
}

/// A run's targets, environment and record as it starts.
fn run_setup(job: &Job, plan: &storlab_workload::Plan, o: &RunOptions) -> (Vec<PathBuf>, Environment, NewRun) {
    let targets: Vec<PathBuf> = plan.targets.iter().map(|(p, _)| p.clone()).collect();
    storlab_engine::clock::init();
    let env = Environment {
        clock: Some(storlab_engine::clock::source().into()),
        ..storlab_env::capture(&targets)
    };
    let new_run = NewRun {
        kind: o.kind,
        host: env.host.clone(),
        job_name: Some(plan.name.clone()),
        job: serde_json::json!({ "job": job, "plan": plan }),
        command: o.command.to_string(),
        tags: o.tags.to_vec(),
    };
    (targets, env, new_run)
}

/// A run's phases, for [`run_phases`] to run and store whoever does the work: the engine's
/// phases of a job ([`run_prepared`]), or a metadata workload's (crates/meta).
pub trait Phases {
    /// How many.
    fn count(&self) -> usize;
    /// Phase `seq`'s (from 0) name, and for live views its length: seconds for a time-based
    /// phase, else bytes when known; and whether it reports interval samples.
    fn describe(&self, seq: usize) -> (PhaseName, Option<f64>, Option<u64>, bool);
    /// Readies phase `seq` outside its timing (lays out the files it reads): called by a team
    /// before the ranks meet, so that they start the phase itself together. A phase that needs
    /// nothing readied keeps the default.
    fn prepare(&mut self, seq: usize, stop: &AtomicBool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let _ = (seq, stop);
        Ok(())
    }
    /// Runs phase `seq`; the phase to store (its result says when Ctrl-C ended it), or why it
    /// failed.
    fn run(
        &mut self,
        seq: usize,
        stop: &AtomicBool,
        observer: Option<&dyn IntervalObserver>,
    ) -> Result<Phase, Box<dyn std::error::Error + Send + Sync>>;
    /// True when phase `seq` runs at the same time as the one before it.
    fn together(&self, seq: usize) -> bool {
        let _ = seq;
        false
    }
    /// Runs phases `seqs` at the same time (only asked of phases that say [`Phases::together`]).
    fn run_together(
        &mut self,
        seqs: &[usize],
        stop: &AtomicBool,
        observer: Option<&dyn IntervalObserver>,
    ) -> Result<Vec<Phase>, Box<dyn std::error::Error + Send + Sync>> {
        seqs.iter().map(|s| self.run(*s, stop, observer)).collect()
    }
}

/// A job's phases, run by the engine.
struct PlanPhases<'a> {
    plan: &'a storlab_workload::Plan,
    control: &'a PhaseControl,
    memory_bytes: u64,
    /// The phase `prepare` laid out, and the seconds it took.
    laid_out: Option<(usize, f64)>,
}

impl Phases for PlanPhases<'_> {
    fn count(&self) -> usize {
        self.plan.phases.len()
    }

    fn describe(&self, seq: usize) -> (PhaseName, Option<f64>, Option<u64>, bool) {
        let phase = &self.plan.phases[seq];
        let runtime = phase.settings.runtime.map(|d| d.0).filter(|&ns| ns > 0);
        (
            PhaseName::Kind(phase.kind),
            runtime.map(|ns| (ns + phase.settings.ramp.0) as f64 / 1e9),
            runtime
                .is_none()
                .then(|| phase.workers.iter().map(|w| w.total_len()).sum()),
            true,
        )
    }

    fn prepare(&mut self, seq: usize, stop: &AtomicBool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let secs = storlab_engine::lay_out_phase(&self.plan.phases[seq], stop)?;
        self.laid_out = Some((seq, secs));
        Ok(())
    }

    fn run(
        &mut self,
        seq: usize,
        stop: &AtomicBool,
        observer: Option<&dyn IntervalObserver>,
    ) -> Result<Phase, Box<dyn std::error::Error + Send + Sync>> {
        let phase = &self.plan.phases[seq];
        let mut result = run_phase_observed(phase, stop, self.control, observer)?;
        // Laid out by `prepare`, the engine found the files there: the layout's time is that.
        if let Some((laid, secs)) = self.laid_out.take() {
            if laid == seq {
                result.layout_seconds += secs;
            }
        }
        Ok(self.stored(seq, result))
    }

    fn together(&self, seq: usize) -> bool {
        self.plan.phases[seq].together
    }

    fn run_together(
        &mut self,
        seqs: &[usize],
        stop: &AtomicBool,
        observer: Option<&dyn IntervalObserver>,
    ) -> Result<Vec<Phase>, Box<dyn std::error::Error + Send + Sync>> {
        let plans: Vec<&PhasePlan> = seqs.iter().map(|s| &self.plan.phases[*s]).collect();
        let results = storlab_engine::run_group_observed(&plans, stop, self.control, observer)?;
        Ok(seqs.iter().zip(results).map(|(seq, r)| self.stored(*seq, r)).collect())
    }
}

impl PlanPhases<'_> {
    /// Phase `seq` as stored: its plan, what it measured, whether the cache may have flattered it.
    fn stored(&self, seq: usize, result: storlab_engine::PhaseResult) -> Phase {
        let phase = &self.plan.phases[seq];
        Phase {
            seq: seq as u32,
            kind: PhaseName::Kind(phase.kind),
            params: PhaseParams::Plan(phase.clone()),
            cache_flattered: cache_may_flatter(phase, self.plan.file_set_bytes, self.memory_bytes),
            result,
        }
    }
}

/// The one run path: begins the run with its environment, runs each phase (telling the live
/// views), stores each as it finishes, and sets the run's status: aborted on Ctrl-C (the
/// phase it interrupted is not stored), failed when a phase fails (returned as the error) or
/// named errors (a metadata phase's), corrupt when verification found bad blocks.
pub fn run_phases(
    store: &mut Store,
    new_run: &NewRun,
    env: &Environment,
    targets: &[PathBuf],
    phases: &mut dyn Phases,
    o: &RunOptions,
) -> Result<Executed, SessionError> {
    let run_id = store.begin_run(new_run)?;
    store.save_environment(run_id, env)?;
    if let Some(l) = o.live {
        l.run_started(run_id, new_run.kind);
    }
    let stop = stop_flag();
    let shown: Vec<String> = targets.iter().map(|t| t.display().to_string()).collect();
    let mut tally = Tally {
        status: RunStatus::Ok,
        detail: None,
        results: Vec::new(),
        bad_blocks: 0,
        errors: Vec::new(),
    };
    let n = phases.count();
    let mut seq = 0;
    while seq < n {
        if stop.load(Ordering::Relaxed) {
            tally.status = RunStatus::Aborted;
            break;
        }
        // The phases that run at the same time as this one.
        let mut group = vec![seq];
        while group.len() + seq < n && phases.together(seq + group.len()) {
            group.push(seq + group.len());
        }
        let names = announce(store, run_id, phases, &group, o, &shown)?;
        let observer: Option<&dyn IntervalObserver> = o.live.map(|l| l as &dyn IntervalObserver);
        let ran = if group.len() == 1 {
            phases.run(seq, stop, observer).map(|p| vec![p])
        } else {
            phases.run_together(&group, stop, observer)
        };
        if let Some(l) = o.live {
            for (k, &s) in group.iter().enumerate() {
                l.phase_ended(
                    run_id,
                    s + 1,
                    ran.as_ref().ok().and_then(|p| p.get(k)).map(|p| &p.result),
                );
            }
        }
        let ran = match ran {
            Ok(p) => p,
            Err(e) => return Err(failed(store, run_id, &group, &names, e)?),
        };
        if !tally.store(store, run_id, ran, names)? {
            break;
        }
        seq += group.len();
    }
    tally.finish(store, run_id)
}

/// Stores each phase of a group as it starts and tells the live views; their names.
fn announce(
    store: &mut Store,
    run_id: i64,
    phases: &dyn Phases,
    group: &[usize],
    o: &RunOptions,
    shown: &[String],
) -> Result<Vec<String>, SessionError> {
    let mut names = Vec::new();
    for &s in group {
        let (name, runtime_seconds, bytes, sampled) = phases.describe(s);
        let name = name.as_str().to_string();
        store.add_event(run_id, RunEventKind::PhaseStart, &format!("{} ({name})", s + 1))?;
        if let Some(l) = o.live {
            l.phase_started(&PhaseStart {
                run_id,
                seq: s + 1,
                phases: phases.count(),
                kind: &name,
                targets: shown,
                runtime_seconds,
                bytes,
                sampled,
            });
        }
        names.push(name);
    }
    Ok(names)
}

/// A group of phases failed: the run is stored as failed, and the error says which.
fn failed(
    store: &mut Store,
    run_id: i64,
    group: &[usize],
    names: &[String],
    e: Box<dyn std::error::Error + Send + Sync>,
) -> Result<SessionError, SessionError> {
    let seq = group[0];
    let which = if group.len() == 1 {
        format!("phase {} ({})", seq + 1, names[0])
    } else {
        format!("phases {}–{} (together)", seq + 1, seq + group.len())
    };
    let msg = format!("{which} failed: {e}");
    store.add_event(run_id, RunEventKind::PhaseFailed, &msg)?;
    store.finish_run(run_id, RunStatus::Failed, Some(&msg))?;
    Ok(SessionError::Phase {
        run_id,
        seq: seq + 1,
        kind: names.join("+"),
        source: e,
    })
}

/// What the stored phases of a run add up to: its status so far, the phases' results, bad
/// blocks, and a metadata phase's errors.
struct Tally {
    status: RunStatus,
    detail: Option<String>,
    results: Vec<PhaseResult>,
    bad_blocks: u64,
    errors: Vec<String>,
}

impl Tally {
    /// Stores the phases that ran; false when one was interrupted (it is not stored, and the
    /// run ends there).
    fn store(
        &mut self,
        store: &mut Store,
        run_id: i64,
        ran: Vec<Phase>,
        names: Vec<String>,
    ) -> Result<bool, SessionError> {
        for (stored, name) in ran.into_iter().zip(names) {
            let seq = stored.seq as usize;
            if stored.result.interrupted {
                let msg = format!(
                    "interrupted during phase {} ({name}); that phase is not stored",
                    seq + 1
                );
                store.add_event(run_id, RunEventKind::Interrupted, &msg)?;
                self.status = RunStatus::Aborted;
                self.detail = Some(msg);
                return Ok(false);
            }
            if let Some(v) = &stored.result.verify {
                self.bad_blocks += v.bad_blocks;
            }
            if let PhaseParams::Meta(m) = &stored.params {
                if m.errors > 0 {
                    let first = m
                        .first_errors
                        .first()
                        .map(|e| format!(", the first: {e}"))
                        .unwrap_or_default();
                    let msg = format!("phase {} ({name}): {} error(s){first}", seq + 1, m.errors);
                    store.add_event(run_id, RunEventKind::PhaseFailed, &msg)?;
                    self.errors.push(msg);
                }
            }
            store.save_phase(run_id, &stored)?;
            self.results.push(stored.result);
        }
        Ok(true)
    }

    /// The run's status: failed on errors, corrupt on bad blocks, else as it ran; stored.
    fn finish(mut self, store: &mut Store, run_id: i64) -> Result<Executed, SessionError> {
        if self.status == RunStatus::Ok && !self.errors.is_empty() {
            self.status = RunStatus::Failed;
            self.detail = Some(self.errors.join("; "));
        } else if self.status == RunStatus::Ok && self.bad_blocks > 0 {
            self.status = RunStatus::Corrupt;
            self.detail = Some(format!("verification found {} bad 4 KiB block(s)", self.bad_blocks));
        }
        store.finish_run(run_id, self.status, self.detail.as_deref())?;
        Ok(Executed {
            run_id,
            status: self.status,
            results: self.results,
        })
    }
}

/// Stores a scan as a run of kind `scan`: its options as the job, the environment of its
/// paths, the report, and the status (`partial` when some entries could not be counted).
/// Returns the run's id.
pub fn store_scan(
    store: &mut Store,
    opts: &ScanOptions,
    report: &ScanReport,
    tags: &[Tag],
    command: &str,
) -> Result<i64, SessionError> {
    let env = storlab_env::capture(&opts.roots);
    let paths: Vec<String> = opts.roots.iter().map(|p| p.display().to_string()).collect();
    let run_id = store.begin_run(&NewRun {
        kind: RunKind::Scan,
        host: env.host.clone(),
        job_name: Some(format!("scan {}", paths.join(", "))),
        job: serde_json::to_value(opts).unwrap_or_default(),
        command: command.to_string(),
        tags: tags.to_vec(),
    })?;
    store.save_environment(run_id, &env)?;
    store.save_scan(run_id, report)?;
    let (status, detail) = match report.partial() {
        true => (
            RunStatus::Partial,
            Some(format!("{} entries could not be counted", report.problem_count)),
        ),
        false => (RunStatus::Ok, None),
    };
    store.finish_run(run_id, status, detail.as_deref())?;
    Ok(run_id)
}

/// What a study's points left: each point's member (run and role) and results, in the order
/// run, and whether Ctrl-C ended the study early.
#[derive(Debug, Default)]
pub struct Points {
    /// Each point run: its member and its phases' results.
    pub done: Vec<(Member, Vec<PhaseResult>)>,
    /// Ctrl-C ended the study before every point ran.
    pub aborted: bool,
    /// A point's run ended otherwise than well (failed verification).
    pub not_ok: bool,
}

/// Runs each job as one point of a study, in order, until all ran or Ctrl-C, and stores the
/// study with the points that ran (also when Ctrl-C ended it early); `announce` is called before
/// each point (for progress on a terminal). Returns the study's id and the points.
pub fn run_study(
    store: &mut Store,
    params: StudyParams,
    points: &[(Role, Job)],
    o: &RunOptions,
    announce: impl FnMut(usize, &Role),
) -> Result<(i64, Points), SessionError> {
    let done = run_points(store, points, o, announce)?;
    let id = save_points_study(store, params, &done)?;
    Ok((id, done))
}

/// [`run_points`] on one rank of runs many processes run together (`mpirun storlab iozone`):
/// every rank passes its own prepared points (as many, in the same order; the caller has had
/// the ranks agree on that); each point is one run of all ranks ([`run_prepared_team`]). Rank 0
/// passes the store and gets the points back, the other ranks None. After each point rank 0
/// tells every rank whether another follows, so that all stop together when Ctrl-C ended one.
pub fn run_points_team(
    team: &dyn team::Team,
    mut store: Option<&mut Store>,
    points: Vec<(Role, Prepared)>,
    o: &RunOptions,
    mut announce: impl FnMut(usize, &Role),
) -> Result<Option<Points>, SessionError> {
    let rank0 = store.is_some();
    let mut out = Points::default();
    for (i, (role, prepared)) in points.into_iter().enumerate() {
        announce(i, &role);
        let executed = run_prepared_team(team, store.as_deref_mut(), prepared, o, false)?;
        let mut go_on = true;
        if let Some(e) = executed {
            match e.status {
                RunStatus::Aborted => {
                    out.aborted = true;
                    go_on = false;
                }
                RunStatus::Ok => {}
                _ => out.not_ok = true,
            }
            out.done.push((
                Member {
                    run_id: e.run_id,
                    role: role.clone(),
                },
                e.results,
            ));
        }
        // Rank 0's word decides for all: every rank learns it from the same gather.
        let word = team.all_gather(&[u8::from(go_on)]);
        if word.first().map(Vec::as_slice) != Some(&[1]) {
            break;
        }
    }
    Ok(rank0.then_some(out))
}

/// Stores the points that ran as a study with `params`: its id.
pub fn save_points_study(store: &mut Store, params: StudyParams, done: &Points) -> Result<i64, SessionError> {
    Ok(store.save_study(&NewStudy {
        params,
        members: done.done.iter().map(|(m, _)| m.clone()).collect(),
        events: Vec::new(),
        task_samples: Vec::new(),
    })?)
}

/// Runs IOzone's cells in this process (`storlab iozone`; the caller has resolved each before
/// opening the database): one cell as one run, several as a study with `study` (IOzone's
/// matrix, or a range of workers), each cell announced to the live view when there are
/// several. Returns the study's id and the cells that ran.
pub fn run_cells(
    store: &mut Store,
    cells: Vec<(storlab_workload::iozone::IozoneCell, Job)>,
    study: StudyParams,
    o: &RunOptions,
) -> Result<(Option<i64>, Points), SessionError> {
    let points: Vec<(Role, Job)> = cells.into_iter().map(|(c, j)| (c.role(), j)).collect();
    let n = points.len();
    let announce = |i: usize, role: &Role| {
        if let (Some(l), true) = (o.live, n > 1) {
            l.study_progress(i, n, &role.to_string());
        }
    };
    if n > 1 {
        let (id, done) = run_study(store, study, &points, o, announce)?;
        Ok((Some(id), done))
    } else {
        Ok((None, run_points(store, &points, o, announce)?))
    }
}

/// Runs each job as one point of a study, in order, until all ran or Ctrl-C; `announce` is
/// called before each (for progress on a terminal).
pub fn run_points(
    store: &mut Store,
    points: &[(Role, Job)],
    o: &RunOptions,
    mut announce: impl FnMut(usize, &Role),
) -> Result<Points, SessionError> {
    let mut out = Points::default();
    for (i, (role, job)) in points.iter().enumerate() {
        announce(i, role);
        let e = run(store, job, o)?;
        out.done.push((
            Member {
                run_id: e.run_id,
                role: role.clone(),
            },
            e.results,
        ));
        match e.status {
            RunStatus::Aborted => {
                out.aborted = true;
                break;
            }
            RunStatus::Ok => {}
            _ => out.not_ok = true,
        }
    }
    Ok(out)
}
