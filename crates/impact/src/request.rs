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

/// What `storlab impact` was given, as written: its flags, declared here once (the binary
/// flattens them into its command line, beside the job's).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Flags {
    /// The background task, KIND:ARGS. With --held, repeat it for tasks in sequence (a second
    /// failure while the first rebuild runs).
    #[arg(long, value_name = "KIND:ARGS", required = true)]
    pub task: Vec<String>,
    /// Repetitions of each side (idle and with the task).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeat: u32,
    /// When the task ends before a repetition with it does: discard that repetition, or
    /// restart the task and run the repetition again (once).
    #[arg(long = "on-early-finish", value_name = "discard|restart", default_value = "restart")]
    pub on_early_finish: String,
    /// The cost to the task instead (RAL's loopy.sh): the task's duration with the machine idle
    /// and with the job running in a loop until the task finishes.
    #[arg(long, conflicts_with = "held")]
    pub reverse: bool,
    /// Hold the job at its rate (--rate) through the task(s) (IBM's rebuild runs): per interval
    /// the achieved rate, latency and the deficit, and when the deficit was repaid.
    #[arg(long)]
    pub held: bool,
    /// With --held: how long the job runs before the first task starts.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub before: String,
    /// With --held: how long the job runs on after the last task ended.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub after: String,
    /// With --held and several tasks: start each one this long after the one before it
    /// started (default: when the one before it ended).
    #[arg(long, value_name = "DURATION")]
    pub stagger: Option<String>,
    /// How long a task may run before storlab gives up on it (e.g. 2h).
    #[arg(long = "task-timeout", value_name = "DURATION", default_value = "24h")]
    pub task_timeout: String,
    /// Servers in the pool: project the pool-wide impact of k servers running the task at once.
    #[arg(long = "pool-servers", value_name = "S")]
    pub pool_servers: Option<u32>,
    /// The pool-wide loss allowed, in percent (e.g. 5%), for the projection.
    #[arg(long, value_name = "PERCENT", requires = "pool_servers")]
    pub budget: Option<String>,
    /// With --reverse and --pool-servers: the cost-to-the-users study whose impact sets k
    /// (default: the newest of the same task in the database).
    #[arg(long = "impact-study", value_name = "ID")]
    pub impact_study: Option<i64>,
}

fn duration(flag: &str, v: &str) -> anyhow::Result<Duration> {
    let d: storlab_units::Duration = v.parse().map_err(|e| usage(format!("{flag} {v}: {e}")))?;
    Ok(d.std())
}

fn percent(flag: &str, v: &str) -> anyhow::Result<f64> {
    v.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| usage(format!("{flag} {v}: expected a percentage such as 5%")))
}

impl Request {
    /// The request the flags make, with the runs' command line, tags, allowed devices and
    /// whether their files are kept; no live view yet.
    pub fn from_flags(
        f: &Flags,
        command: String,
        tags: Vec<Tag>,
        allow_devices: Vec<std::path::PathBuf>,
        keep: bool,
    ) -> anyhow::Result<Request> {
        let task_timeout = duration("--task-timeout", &f.task_timeout)?;
        let budget = f.budget.as_deref().map(|b| percent("--budget", b)).transpose()?;
        let pool = match (f.pool_servers, budget) {
            (Some(_), None) => {
                return Err(usage(
                    "--pool-servers needs --budget PERCENT (the pool-wide loss allowed)",
                ))
            }
            (Some(n), Some(b)) => Some((n, b)),
            _ => None,
        };
        let mode = if f.held {
            Mode::Held(HeldOptions {
                before: duration("--before", &f.before)?,
                after: duration("--after", &f.after)?,
                stagger: f.stagger.as_deref().map(|s| duration("--stagger", s)).transpose()?,
                limit: task_timeout,
            })
        } else if f.reverse {
            Mode::Reverse {
                impact_study: f.impact_study,
            }
        } else {
            let early = match f.on_early_finish.as_str() {
                "discard" => EarlyFinish::Discard,
                "restart" => EarlyFinish::Restart,
                other => return Err(usage(format!("--on-early-finish {other}: expected discard or restart"))),
            };
            Mode::Users {
                repeat: f.repeat,
                early,
            }
        };
        Ok(Request {
            tasks: f.task.clone(),
            mode,
            task_timeout,
            pool,
            command,
            tags,
            allow_devices,
            keep,
            live: None,
        })
    }

    /// What the study is, in words (its status line's).
    pub fn describe(&self) -> String {
        let tasks = self.tasks.join(", ");
        match &self.mode {
            Mode::Held(_) => format!("held-rate study of {tasks}"),
            Mode::Reverse { .. } => format!("cost to the task of {tasks}"),
            Mode::Users { repeat: n, .. } => format!(
                "cost to the users of {tasks} ({n} repetition{})",
                if *n == 1 { "" } else { "s" }
            ),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> Flags {
        Flags {
            task: vec!["cmd:true|true|true".into()],
            repeat: 3,
            on_early_finish: "restart".into(),
            before: "30s".into(),
            after: "60s".into(),
            task_timeout: "24h".into(),
            ..Default::default()
        }
    }

    fn request(f: Flags) -> anyhow::Result<Request> {
        Request::from_flags(&f, String::new(), Vec::new(), Vec::new(), false)
    }

    #[test]
    fn the_flags_choose_the_study_and_its_words() {
        let r = request(flags()).unwrap();
        assert!(matches!(
            r.mode,
            Mode::Users {
                repeat: 3,
                early: EarlyFinish::Restart
            }
        ));
        assert_eq!(r.describe(), "cost to the users of cmd:true|true|true (3 repetitions)");
        let r = request(Flags {
            held: true,
            stagger: Some("5s".into()),
            ..flags()
        })
        .unwrap();
        let Mode::Held(h) = &r.mode else {
            panic!("--held is the held-rate study")
        };
        assert_eq!(
            (h.before, h.stagger, h.limit),
            (
                Duration::from_secs(30),
                Some(Duration::from_secs(5)),
                Duration::from_secs(86400)
            )
        );
        assert_eq!(r.describe(), "held-rate study of cmd:true|true|true");
        let r = request(Flags {
            reverse: true,
            pool_servers: Some(20),
            budget: Some("5%".into()),
            ..flags()
        })
        .unwrap();
        assert_eq!(r.pool, Some((20, 5.0)));
        assert!(r.describe().starts_with("cost to the task of"));
    }

    #[test]
    fn refusals_name_the_flag() {
        let err = |f: Flags| request(f).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            err(Flags {
                pool_servers: Some(3),
                ..flags()
            }),
            "--pool-servers needs --budget PERCENT (the pool-wide loss allowed)"
        );
        assert_eq!(
            err(Flags {
                pool_servers: Some(3),
                budget: Some("lots".into()),
                ..flags()
            }),
            "--budget lots: expected a percentage such as 5%"
        );
        assert_eq!(
            err(Flags {
                on_early_finish: "ignore".into(),
                ..flags()
            }),
            "--on-early-finish ignore: expected discard or restart"
        );
        assert!(err(Flags {
            task_timeout: "forever".into(),
            ..flags()
        })
        .starts_with("--task-timeout forever: "));
    }
}
