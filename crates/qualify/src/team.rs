//! A qualification under `mpirun`: every rank reads the same plan, and each repetition of a job
//! is one run of all ranks (crates/session's `run_prepared_team`: each rank on its own targets,
//! `%r` and `%h` filled in, the phases started together, rank 0 storing one run of all their
//! workers). Rank 0 alone holds the database and decides: before each repetition it tells every
//! rank which job comes next, or that the qualification is over, so that all follow one schedule.
//! A job with a background task is refused under mpirun: its pairs are one host's.

use std::sync::atomic::AtomicBool;

use storlab_model::run::RunKind;
use storlab_session::team::start::{job_for_rank, start_together, Rank0};
use storlab_session::team::Team;
use storlab_session::SessionError;
use storlab_store::Store;

use crate::prepare::Prepared;
use crate::run::{drive, Execute, Options, Outcome};
use crate::{input, QualifyError};

/// Rank 0's word that no repetition follows.
const OVER: u32 = u32::MAX;

/// Rank 0's word (every rank learns it from the same gather).
fn word(team: &dyn Team, mine: u32) -> u32 {
    let all = team.all_gather(&mine.to_le_bytes());
    all.first()
        .and_then(|w| w.as_slice().try_into().ok())
        .map(u32::from_le_bytes)
        .unwrap_or(OVER)
}

/// Refuses a plan the ranks cannot run together: a job with a background task, a metadata
/// workload (run those without mpirun).
pub fn check(p: &Prepared) -> Result<(), QualifyError> {
    if let Some(t) = p.trials.iter().find(|t| t.meta.is_some()) {
        return Err(input(format!(
            "job '{}' is a metadata workload: a qualification runs those in one process; run this plan without mpirun (or mpirun storlab-mpi meta)",
            t.label
        )));
    }
    match p.trials.iter().find(|t| t.task.is_some()) {
        Some(t) => Err(input(format!(
            "job '{}' runs with a task ({}): a task's pairs are one host's; run this plan without mpirun",
            t.label,
            t.task.as_deref().unwrap_or_default()
        ))),
        None => Ok(()),
    }
}

/// A trial's job as this rank runs it: its targets its own.
fn run_trial(
    team: &dyn Team,
    store: Option<&mut Store>,
    p: &Prepared,
    o: &Options,
    trial: usize,
    kind: RunKind,
) -> Result<Option<storlab_session::Executed>, QualifyError> {
    let job = job_for_rank(team, &p.trials[trial].job);
    let prepared = storlab_session::prepare(&job, &o.allow_devices).map_err(|e| QualifyError::Run(e.to_string()))?;
    storlab_session::run_prepared_team(team, store, prepared, &o.run_options(kind, None), false)
        .map_err(|e| QualifyError::Run(format!("{}: {e}", p.trials[trial].label)))
}

/// Rank 0's way of running a repetition: the word to every rank, then the run of all.
struct Together<'a> {
    team: &'a dyn Team,
    p: &'a Prepared,
    o: &'a Options,
}

impl Execute for Together<'_> {
    fn run(
        &mut self,
        store: &mut Store,
        trial: usize,
        kind: RunKind,
    ) -> Result<storlab_session::Executed, QualifyError> {
        word(self.team, trial as u32);
        run_trial(self.team, Some(store), self.p, self.o, trial, kind)?
            .ok_or_else(|| QualifyError::Run("rank 0 got no run back".into()))
    }
}

/// Runs a prepared plan as one rank of `team`: rank 0 (which passes the store) decides and
/// stores, and gets the qualification back; the others follow its word and get None.
pub fn run_team(
    team: &dyn Team,
    store: Option<&mut Store>,
    p: &Prepared,
    o: &Options,
    stop: &AtomicBool,
    say: &dyn Fn(&str),
) -> Result<Option<Outcome>, QualifyError> {
    match store {
        Some(store) => {
            let outcome = drive(store, p, o, stop, say, &mut Together { team, p, o });
            // However rank 0's loop ended, the others learn that nothing follows.
            word(team, OVER);
            outcome.map(Some)
        }
        None => {
            loop {
                let next = word(team, 0);
                if next == OVER || next as usize >= p.trials.len() {
                    break;
                }
                // A run that fails fails on every rank; rank 0 then says it is over.
                if let Err(e) = run_trial(team, None, p, o, next as usize, RunKind::Qualify) {
                    if word(team, 0) != OVER {
                        return Err(QualifyError::Run(format!("the ranks lost step after: {e}")));
                    }
                    return Err(e);
                }
            }
            Ok(None)
        }
    }
}

/// One rank's qualification from the start: `plan` (prepared from the file every rank reads)
/// checked for running under mpirun and each trial's job prepared on this rank's own targets;
/// the ranks start together once each is ready and rank 0 has opened the database (`open`)
/// and found the plan's baselines in it — so that a rank that cannot run, or a baseline that
/// is missing, refuses on every rank before anything runs. Then [`run_team`]: rank 0 gets its
/// store and the qualification back, the others None.
pub fn qualify_rank(
    team: &dyn Team,
    mut plan: Prepared,
    o: &Options,
    open: impl FnOnce() -> Result<Store, String>,
    stop: &AtomicBool,
    say: &dyn Fn(&str),
) -> Result<Option<(Store, Outcome)>, QualifyError> {
    check(&plan)?;
    let ready = plan.trials.iter().try_for_each(|t| {
        storlab_session::prepare(&job_for_rank(team, &t.job), &o.allow_devices)
            .map(|_| ())
            .map_err(|e| format!("job '{}': {e}", t.label))
    });
    let shape = format!("{} job(s) at {} point(s)", plan.plan.jobs.len(), plan.trials.len());
    let rank0 = start_together(team, ready, &shape, "plan", || {
        let store = open()?;
        crate::prepare::read_baselines(&mut plan, &store).map_err(|e| e.to_string())?;
        Ok(Rank0 { store, live: None })
    })
    .map_err(|e| match e {
        // A rank that cannot run the plan, or rank 0 without its database or a baseline: the
        // user's to fix, as the same refusal without mpirun.
        SessionError::Disagreed(why) => input(why),
        other => QualifyError::Run(other.to_string()),
    })?;
    let mut store = rank0.map(|r| r.store);
    let outcome = run_team(team, store.as_mut(), &plan, o, stop, say)?;
    Ok(store.zip(outcome))
}
