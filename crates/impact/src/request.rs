//! `storlab impact` as a request: which study, which tasks, the job; the studies run with the
//! job going through the one run path (crates/session), and stored as a study of their kind
//! with its runs, events and task samples. What is printed comes from the stored study
//! (crates/report).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use storlab_engine::PhaseControl;
use storlab_model::run::{RunKind, RunStatus, Tag};
use storlab_model::study::{
    HeldParams, Member, NewStudy, ReverseParams, Role, Round, StudyKind, StudyParams, UsersParams,
};
use storlab_session::RunOptions;
use storlab_stats::impact::{analyse_held, impacts, project, round_seconds, worst_loss, Repetition};
use storlab_store::Store;
use storlab_workload::{Job, Settings};

use crate::record::Recorder;
use crate::study::{
    cost_to_task, cost_to_users, held_rate, EarlyFinish, Foreground, ForegroundRun, HeldOptions, StudyError,
};
use crate::task::Task;

fn usage(m: impl Into<String>) -> anyhow::Error {
    StudyError(m.into()).into()
}

/// Which study.
#[derive(Debug, Clone)]
pub enum Mode {
    /// The cost of the task to the users: idle and loaded repetitions.
    Users {
        /// Repetitions per side.
        repeat: u32,
        /// What to do with a loaded repetition the task did not cover.
        early: EarlyFinish,
    },
    /// The cost of the users to the task.
    Reverse {
        /// The cost-to-the-users study whose impact sets k (None: the newest of the task).
        impact_study: Option<i64>,
    },
    /// The job held at its rate through the tasks.
    Held(HeldOptions),
}

/// Everything `storlab impact` was asked.
#[derive(Clone)]
pub struct Request {
    /// The tasks as given (`KIND:ARGS`), in order.
    pub tasks: Vec<String>,
    /// The study.
    pub mode: Mode,
    /// How long a task may run.
    pub task_timeout: Duration,
    /// Servers in the pool and the pool-wide loss allowed (percent), for the projection.
    pub pool: Option<(u32, f64)>,
    /// The command line.
    pub command: String,
    /// The user's tags for the runs.
    pub tags: Vec<Tag>,
    /// Block devices allowed as targets.
    pub allow_devices: Vec<std::path::PathBuf>,
    /// Keep the job's files.
    pub keep: bool,
    /// The live view (`--metrics`): the runs' figures and the task's state.
    pub live: Option<std::sync::Arc<dyn storlab_session::LiveRun + Send + Sync>>,
}

/// What a study left.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The stored study.
    pub study_id: i64,
    /// Ctrl-C ended it early (what was done is stored).
    pub aborted: bool,
}

/// The job, run through storlab's one run path for each repetition.
struct JobRunner<'a> {
    store: &'a mut Store,
    job: &'a Job,
    req: &'a Request,
}

impl Foreground for JobRunner<'_> {
    fn run(&mut self, kind: RunKind, control: &PhaseControl) -> anyhow::Result<ForegroundRun> {
        let e = storlab_session::run(
            self.store,
            self.job,
            &RunOptions {
                kind,
                tags: &self.req.tags,
                allow_devices: &self.req.allow_devices,
                keep: self.req.keep,
                command: &self.req.command,
                control: Some(control),
                live: self.req.live.as_deref().map(|l| l as &dyn storlab_session::LiveRun),
            },
        )?;
        Ok(ForegroundRun {
            run_id: e.run_id,
            aborted: e.status == RunStatus::Aborted,
            results: e.results,
        })
    }
}

/// Makes the tasks: `cmd:NAME` is the job file's `[task.NAME]`, anything else a description.
pub fn tasks(specs: &[String], job: &Job) -> anyhow::Result<Vec<Box<dyn Task>>> {
    specs
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
                Ok(crate::cmd::command(t.start.clone(), t.status.clone(), t.stop.clone()))
            }
            _ => crate::kinds::parse(s).map_err(|e| usage(e.to_string())),
        })
        .collect()
}

/// Checks the request and the job (and makes its tasks, to check them too) before anything runs
/// or is stored; for a held study, bounds the job's runtime (the study ends it; the bound only
/// stops a study gone wrong). Returns the job to run.
pub fn prepare(req: &Request, mut job: Job) -> anyhow::Result<Job> {
    if matches!(req.pool, Some((0, _))) {
        return Err(usage("--pool-servers 0: a pool has at least one server"));
    }
    if req.tasks.len() > 1 && !matches!(req.mode, Mode::Held(_)) {
        return Err(usage(
            "several --task are a sequence, which only --held runs; the other studies take one task",
        ));
    }
    if let Mode::Held(o) = &req.mode {
        let bound = o.before + o.after + o.limit + o.stagger.unwrap_or_default() * req.tasks.len() as u32;
        let s = Settings {
            runtime: Some(storlab_units::Duration(
                (bound + Duration::from_secs(600)).as_nanos().min(u64::MAX as u128) as u64,
            )),
            ..Settings::default()
        };
        job.override_with(&[], &[], &s)?;
    }
    let plan = storlab_workload::resolve(&job, &storlab_session::resolve_options(&req.allow_devices))?;
    if matches!(req.mode, Mode::Held(_)) {
        if plan.phases.len() != 1 {
            return Err(usage(format!(
                "a held-rate study runs one phase; the job has {} (give one --phase)",
                plan.phases.len()
            )));
        }
        if plan.phases[0].rate().is_none() {
            return Err(usage(
                "a held-rate study needs the rate to hold: give --rate (e.g. --rate 2000iops) or rate in the job file",
            ));
        }
    }
    tasks(&req.tasks, &job)?;
    Ok(job)
}

/// Runs the study the request asks for (on a job [`prepare`]d) and stores it.
pub fn run(store: &mut Store, job: Job, req: &Request, stop: &AtomicBool) -> anyhow::Result<Outcome> {
    let mut tasks = tasks(&req.tasks, &job)?;
    let rec = Recorder::with_live(req.live.clone());
    match &req.mode {
        Mode::Users { repeat, early } => users(store, &job, req, tasks[0].as_mut(), *repeat, *early, &rec, stop),
        Mode::Reverse { impact_study } => reverse(store, &job, req, tasks[0].as_mut(), *impact_study, &rec, stop),
        Mode::Held(o) => held(store, &job, req, &mut tasks, o, &rec, stop),
    }
}

#[allow(clippy::too_many_arguments)]
fn users(
    store: &mut Store,
    job: &Job,
    req: &Request,
    task: &mut dyn Task,
    repeat: u32,
    early: EarlyFinish,
    rec: &Recorder,
    stop: &AtomicBool,
) -> anyhow::Result<Outcome> {
    let s = {
        let mut fg = JobRunner { store, job, req };
        cost_to_users(task, &mut fg, repeat, early, rec, stop)?
    };
    let kinds: Vec<String> = job.phases.iter().map(|(k, _)| k.name().to_string()).collect();
    let reps: Vec<Repetition> = s
        .repetitions
        .iter()
        .map(|r| Repetition {
            loaded: r.loaded,
            counted: r.overlapped,
            results: &r.results,
        })
        .collect();
    let loss = worst_loss(&impacts(&reps, &kinds));
    let proj = |l: f64| req.pool.map(|(n, b)| project(l, n, b));
    let params = UsersParams {
        task: req.tasks[0].clone(),
        task_description: task.describe(),
        repeat,
        command: req.command.clone(),
        aborted: s.aborted,
        worst_loss_percent: loss.as_ref().map(|l| l.0),
        worst_loss_worse_end_percent: loss.as_ref().map(|l| l.1),
        worst_loss_phase: loss.as_ref().map(|l| l.2.clone()),
        projection: loss.as_ref().and_then(|l| proj(l.0)),
        projection_worse_end: loss.as_ref().and_then(|l| proj(l.1)),
    };
    let members = s
        .repetitions
        .iter()
        .map(|r| Member {
            run_id: r.run_id,
            role: Role::Repetition {
                index: r.index,
                loaded: r.loaded,
                counted: r.overlapped,
            },
        })
        .collect();
    save(store, StudyParams::Impact(params), members, rec, s.aborted)
}

fn save(
    store: &mut Store,
    params: StudyParams,
    members: Vec<Member>,
    rec: &Recorder,
    aborted: bool,
) -> anyhow::Result<Outcome> {
    let study_id = store.save_study(&NewStudy {
        params,
        members,
        events: rec.events(),
        task_samples: rec.samples(),
    })?;
    Ok(Outcome { study_id, aborted })
}

fn reverse(
    store: &mut Store,
    job: &Job,
    req: &Request,
    task: &mut dyn Task,
    impact_study: Option<i64>,
    rec: &Recorder,
    stop: &AtomicBool,
) -> anyhow::Result<Outcome> {
    let spec = &req.tasks[0];
    // k for the pool round comes from a cost-to-the-users study of the same task: check it
    // exists before spending hours on the task.
    let from = match req.pool {
        Some((n, b)) => {
            let (id, loss) = users_loss(store, spec, impact_study)?;
            Some((id, project(loss, n, b)))
        }
        None => None,
    };
    let s = {
        let mut fg = JobRunner { store, job, req };
        cost_to_task(task, &mut fg, req.task_timeout, rec, stop)?
    };
    let round = from.as_ref().map(|(_, p)| Round {
        k: p.largest_k,
        idle_seconds: round_seconds(s.idle.0, p.servers, p.largest_k),
        loaded_seconds: round_seconds(s.loaded.0, p.servers, p.largest_k),
    });
    let params = ReverseParams {
        task: spec.clone(),
        task_description: task.describe(),
        idle_seconds: s.idle.0,
        loaded_seconds: s.loaded.0,
        ratio: s.loaded.0 / s.idle.0.max(1e-9),
        command: req.command.clone(),
        aborted: s.aborted,
        projection_from_study: from.as_ref().map(|f| f.0),
        projection: from.map(|f| f.1),
        round,
    };
    let members = s
        .loop_runs
        .iter()
        .enumerate()
        .map(|(i, id)| Member {
            run_id: *id,
            role: Role::Loop { index: i as u32 + 1 },
        })
        .collect();
    save(store, StudyParams::ImpactReverse(params), members, rec, s.aborted)
}

/// The worst throughput loss of a cost-to-the-users study of `spec` (the one given, else the
/// newest with one), and that study's id.
fn users_loss(store: &Store, spec: &str, given: Option<i64>) -> anyhow::Result<(i64, f64)> {
    let ids = match given {
        Some(id) => vec![id],
        None => store.studies_of_kind(StudyKind::Impact)?,
    };
    for id in ids {
        let study = store.study(id)?;
        let params = match study.map(|s| s.params) {
            Some(StudyParams::Impact(p)) => p,
            _ if given.is_some() => {
                return Err(usage(format!(
                    "--impact-study {id}: no cost-to-the-users study with that id"
                )))
            }
            _ => continue,
        };
        match (params.worst_loss_percent, given.is_some()) {
            (Some(loss), true) => return Ok((id, loss)),
            (None, true) => return Err(usage(format!("study {id} has no throughput impact to project"))),
            (Some(loss), false) if params.task == spec => return Ok((id, loss)),
            _ => {}
        }
    }
    Err(usage(format!(
        "--pool-servers: no cost-to-the-users study of {spec} in {} to take the impact from: run `storlab impact --task {spec} ...` first, or give --impact-study ID",
        store.target()
    )))
}

fn held(
    store: &mut Store,
    job: &Job,
    req: &Request,
    tasks: &mut [Box<dyn Task>],
    o: &HeldOptions,
    rec: &Recorder,
    stop: &AtomicBool,
) -> anyhow::Result<Outcome> {
    let s = {
        let mut fg = JobRunner { store, job, req };
        held_rate(tasks, &mut fg, o, rec, stop)?
    };
    let analysis = s
        .run
        .results
        .first()
        .and_then(|p| analyse_held(p, s.phase_start, &s.spans));
    let params = HeldParams {
        tasks: req.tasks.clone(),
        command: req.command.clone(),
        aborted: s.aborted,
        before_seconds: o.before.as_secs_f64(),
        after_seconds: o.after.as_secs_f64(),
        stagger_seconds: o.stagger.map(|d| d.as_secs_f64()),
        phase_start: s.phase_start,
        spans: s.spans,
        target: analysis.as_ref().map(|a| a.target),
        unit: analysis.as_ref().map(|a| a.unit),
        behind_max: analysis.as_ref().map(|a| a.behind_max),
        repaid_after_seconds: analysis.as_ref().and_then(|a| a.repaid_after),
        stretches: analysis.as_ref().map(|a| a.stretches.clone()),
    };
    let outcome = save(
        store,
        StudyParams::ImpactHeld(params),
        vec![Member {
            run_id: s.run.run_id,
            role: Role::Held,
        }],
        rec,
        s.aborted,
    )?;
    if !s.aborted && analysis.is_none() {
        return Err(usage("the job produced no rate-limited phase to analyse"));
    }
    Ok(outcome)
}
