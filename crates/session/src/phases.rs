//! The one run path: a run's phases run in order (or together), each stored as it finishes,
//! the live views told, and the run's status set from what the phases add up to.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::evidence::Watch;
use storlab_engine::{run_phase_observed, IntervalObserver, PhaseControl};
use storlab_model::env::Environment;
use storlab_model::plan::PhasePlan;
use storlab_model::result::PhaseResult;
use storlab_model::run::{NewRun, Phase, PhaseName, PhaseParams, RunEventKind, RunStatus};
use storlab_store::Store;
use storlab_workload::cache_may_flatter;

use crate::{stop_flag, Executed, PhaseStart, RunOptions, SessionError};

/// A run's phases, for [`run_phases`] to run and store whoever does the work: the engine's
/// phases of a job ([`crate::run_prepared`]), or a metadata workload's (crates/meta).
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
pub(crate) struct PlanPhases<'a> {
    pub(crate) plan: &'a storlab_workload::Plan,
    pub(crate) control: &'a PhaseControl,
    pub(crate) memory_bytes: u64,
    /// The whole disk under each target (by the job's target index), where there is one.
    pub(crate) disks: Vec<Option<String>>,
    /// Each target on NFS (by the job's target index): its RPC counters are read too.
    pub(crate) nfs: Vec<Option<std::path::PathBuf>>,
    /// The phase `prepare` laid out, and the seconds it took.
    pub(crate) laid_out: Option<(usize, f64)>,
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
        let watch = Watch::start(&self.disks_of(&[phase])).with_nfs(&self.nfs_of(&[phase]));
        let mut result = run_phase_observed(phase, stop, self.control, observer)?;
        (result.disks, result.context) = watch.finish();
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
        let watch = Watch::start(&self.disks_of(&plans)).with_nfs(&self.nfs_of(&plans));
        let mut results = storlab_engine::run_group_observed(&plans, stop, self.control, observer)?;
        // The phases ran at once on the same disks: each holds the group's counters (fio's
        // disk_util is the run's, not a job's), and the machine's.
        let (util, context) = watch.finish();
        for r in &mut results {
            r.disks = util.clone();
            r.context = context.clone();
        }
        Ok(seqs.iter().zip(results).map(|(seq, r)| self.stored(*seq, r)).collect())
    }
}

impl PlanPhases<'_> {
    /// The disks under the phases' targets, each once.
    fn disks_of(&self, phases: &[&PhasePlan]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for target in phases
            .iter()
            .flat_map(|p| &p.workers)
            .flat_map(|w| w.regions().map(|r| r.target))
        {
            if let Some(Some(d)) = self.disks.get(target as usize) {
                if !out.contains(d) {
                    out.push(d.clone());
                }
            }
        }
        out
    }

    /// The NFS targets `phases` use, each once.
    fn nfs_of(&self, phases: &[&PhasePlan]) -> Vec<std::path::PathBuf> {
        let mut out: Vec<std::path::PathBuf> = Vec::new();
        for target in phases
            .iter()
            .flat_map(|p| &p.workers)
            .flat_map(|w| w.regions().map(|r| r.target))
        {
            if let Some(Some(p)) = self.nfs.get(target as usize) {
                if !out.contains(p) {
                    out.push(p.clone());
                }
            }
        }
        out
    }

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
