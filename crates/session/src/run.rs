//! A job run in this process: how it runs (its options), checked and resolved into a plan
//! before anything is stored, its environment captured, its phases run and stored (phases.rs)
//! and its files removed (cleanup.rs).

use std::path::PathBuf;

use storlab_engine::PhaseControl;
use storlab_model::env::Environment;
use storlab_model::result::PhaseResult;
use storlab_model::run::{NewRun, RunKind, RunStatus, Tag};
use storlab_store::Store;
use storlab_workload::{resolve, Job, ResolveOptions};

use crate::cleanup::Cleanup;
use crate::phases::PlanPhases;
use crate::{run_phases, team, LiveRun, SessionError};

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

impl Executed {
    /// Every one of the job's `phases` ran to its end and some read blocks that failed their
    /// check, gone on past (a phase that stops at a bad block fails instead): the run's only
    /// fault, which fio counts in the job's errors and does not fail.
    pub fn only_bad_blocks_gone_past(&self, phases: usize) -> bool {
        self.results.len() == phases
            && self
                .results
                .iter()
                .any(|r| r.verify.as_ref().is_some_and(|v| v.bad_blocks > 0))
    }
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
        disks: whole_disks(&env),
        nfs: nfs_targets(&env),
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
        disks: whole_disks(&env),
        nfs: nfs_targets(&env),
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

/// The whole disk under each of the run's targets (fio's disk_util reports disks, not
/// partitions).
/// Each target on NFS (by the job's target index), whose RPC counters a phase reads.
fn nfs_targets(env: &storlab_model::env::Environment) -> Vec<Option<PathBuf>> {
    env.targets
        .iter()
        .map(|t| t.fs_type.starts_with("nfs").then(|| PathBuf::from(&t.path)))
        .collect()
}

fn whole_disks(env: &storlab_model::env::Environment) -> Vec<Option<String>> {
    env.targets
        .iter()
        .map(|t| t.device.as_deref().map(storlab_env::diskstats::disk_of))
        .collect()
}
