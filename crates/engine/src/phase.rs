//! A phase and its entry points: the phases of a group laid out, their workers started
//! together behind a barrier (each opening its files and back-end first), their intervals
//! collected into samples and their outcomes merged into each phase's result (fio's
//! backend.c: run_threads).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Barrier, OnceLock};

use crate::clock::now_ns;
use crate::collect::{collect, IntervalObserver, Msg};
use crate::filesetup::{lay_out_phase, prepare_worker};
use crate::merge::{merge, WorkerOutcome};
use crate::pacing::{Flow, FlowShare};
use crate::placement::unshare_fd_table;
use crate::plan::PhasePlan;
use crate::result::{PhaseResult, Sample};
use crate::steady::SteadyWatch;
use crate::worker::{Shared, Worker};
use crate::zones::{WorkerZones, ZoneMaps};
use crate::EngineError;

/// Lets the caller of a time-based phase end it early as if its runtime had run out (the
/// result is complete, not `interrupted`), and tells it when the phase's clock started, so that
/// events outside the engine (a rebuild starting) can be placed on the samples' time axis.
#[derive(Debug, Default)]
pub struct PhaseControl {
    finish: AtomicBool,
    started_ns: AtomicU64,
    /// The emulated zones of the run's files (`zbd`): their write pointers outlive a phase,
    /// as fio's jobs share a file's zones.
    zones: ZoneMaps,
}

impl PhaseControl {
    /// A control that has not finished anything.
    pub fn new() -> PhaseControl {
        PhaseControl::default()
    }

    /// Ends the phase: every worker stops issuing, waits for what is in flight and reports.
    pub fn finish(&self) {
        self.finish.store(true, Ordering::Relaxed);
    }

    /// Makes the control new again for the next phase: a stonewalled run ends each phase with
    /// [`finish`](Self::finish) and runs the next with the same control.
    pub fn rearm(&self) {
        self.finish.store(false, Ordering::Relaxed);
        self.started_ns.store(0, Ordering::Release);
    }

    /// When the phase's clock (t = 0 of its samples) started, on [`crate::clock::now_ns`]'s
    /// scale; None until the workers have started.
    pub fn started_ns(&self) -> Option<u64> {
        Some(self.started_ns.load(Ordering::Acquire)).filter(|t| *t != 0)
    }
}

/// Runs one phase. `stop` (set by Ctrl-C) ends it early; the result then says `interrupted`.
pub fn run_phase(plan: &PhasePlan, stop: &AtomicBool) -> Result<PhaseResult, EngineError> {
    run_phase_with(plan, stop, &PhaseControl::new())
}

/// [`run_phase`], with a [`PhaseControl`] through which the caller can end the phase and learn
/// when it started.
pub fn run_phase_with(plan: &PhasePlan, stop: &AtomicBool, control: &PhaseControl) -> Result<PhaseResult, EngineError> {
    run_phase_observed(plan, stop, control, None)
}

/// [`run_phase_with`], telling `observer` each worker's interval as it arrives.
pub fn run_phase_observed(
    plan: &PhasePlan,
    stop: &AtomicBool,
    control: &PhaseControl,
    observer: Option<&dyn IntervalObserver>,
) -> Result<PhaseResult, EngineError> {
    let mut results = run_group_observed(&[plan], stop, control, observer)?;
    Ok(results.remove(0))
}

/// Runs phases at the same time (fio's jobs with no stonewall between them): every worker of
/// every phase is released together, each phase's clock starting at that moment plus its
/// `start_delay`; a failing worker stops them all; a phase with `exitall` ends the others when
/// it is done (as [`PhaseControl::finish`]). Returns each phase's result, in order.
pub fn run_group_observed(
    plans: &[&PhasePlan],
    stop: &AtomicBool,
    control: &PhaseControl,
    observer: Option<&dyn IntervalObserver>,
) -> Result<Vec<PhaseResult>, EngineError> {
    crate::clock::init();
    let mut layout_seconds = Vec::with_capacity(plans.len());
    for plan in plans {
        layout_seconds.push(lay_out_phase(plan, stop)?);
    }
    if stop.load(Ordering::Relaxed) {
        // Stopped while laying out: nothing was measured.
        return Ok(plans
            .iter()
            .zip(&layout_seconds)
            .map(|(plan, l)| {
                let mut r = merge(plan, Vec::new(), Vec::new(), *l);
                r.interrupted = true;
                r
            })
            .collect());
    }
    let abort = AtomicBool::new(false);
    let exit_all = AtomicBool::new(false);
    let group = Group::new(plans, &abort, &exit_all, stop, control);
    let mut results: Vec<Result<PhaseResult, EngineError>> = Vec::with_capacity(plans.len());
    std::thread::scope(|scope| {
        let mut collectors = Vec::new();
        for (pi, plan) in plans.iter().enumerate() {
            let (tx, rx) = mpsc::channel::<Msg>();
            for i in 0..plan.workers.len() {
                let tx = tx.clone();
                let group = &group;
                scope.spawn(move || group.worker_thread(pi, i, tx));
            }
            drop(tx);
            let (group, layout) = (&group, layout_seconds[pi]);
            collectors.push(scope.spawn(move || group.collect_phase(pi, &rx, observer, layout)));
        }
        for c in collectors {
            results.push(
                c.join()
                    .unwrap_or_else(|_| Err(EngineError::Internal("a phase's collector panicked".into()))),
            );
        }
    });
    results.into_iter().collect()
}

/// What the workers of a group of phases share while they run: the phases, each one's shared
/// state, fio's flows, the two barriers they start behind, Ctrl-C and the caller's control.
struct Group<'g> {
    plans: &'g [&'g PhasePlan],
    shared: Vec<Shared<'g>>,
    /// fio's flows: per flow_id, the I/Os issued and the weights of the workers still running.
    flows: Vec<(u32, Flow)>,
    arrive: Barrier,
    start: Barrier,
    stop: &'g AtomicBool,
    control: &'g PhaseControl,
}

impl<'g> Group<'g> {
    fn new(
        plans: &'g [&'g PhasePlan],
        abort: &'g AtomicBool,
        exit_all: &'g AtomicBool,
        stop: &'g AtomicBool,
        control: &'g PhaseControl,
    ) -> Group<'g> {
        let total: usize = plans.iter().map(|p| p.workers.len()).sum();
        let shared = plans
            .iter()
            .map(|_| Shared {
                epoch: OnceLock::new(),
                first_done_ns: AtomicU64::new(0),
                abort,
                exit_all,
                done: AtomicBool::new(false),
            })
            .collect();
        Group {
            plans,
            shared,
            flows: flows_of(plans),
            arrive: Barrier::new(total),
            start: Barrier::new(total),
            stop,
            control,
        }
    }

    /// Worker `i` of phase `pi`: opens its files and back-end, starts with every worker of
    /// the group, runs, and tells its collector how it ended.
    fn worker_thread(&self, pi: usize, i: usize, tx: mpsc::Sender<Msg>) {
        let (plan, mine) = (self.plans[pi], &self.shared[pi]);
        let wf = &plan.workers[i];
        unshare_fd_table();
        // Every worker opens its file and back-end before the first barrier, so that a refusal
        // (O_DIRECT, io_uring) stops the phases before any worker did I/O.
        let prepared = WorkerZones::new(plan, wf, &self.control.zones)
            .and_then(|zones| prepare_worker(plan, i, wf).map(|(files, pool, be)| (files, pool, be, zones)));
        if prepared.is_err() {
            mine.abort.store(true, Ordering::Relaxed);
        }
        self.start_together();
        let (outcome, last_index) = match prepared {
            Err(e) => (Err(e), None),
            Ok((files, pool, be, zones)) => {
                let mut w = Worker::new(plan, i, wf, files, pool, be, mine, &tx);
                w.zones = zones;
                w.flow = plan.settings.flow.and_then(|weight| {
                    self.flows
                        .iter()
                        .find(|(id, _)| *id == plan.settings.flow_id)
                        .map(|(_, f)| FlowShare::new(f, weight as u64))
                });
                let outcome = w.run(self.stop, &self.control.finish);
                if let Some(share) = &w.flow {
                    share.leave();
                }
                if outcome.is_err() {
                    mine.abort.store(true, Ordering::Relaxed);
                }
                (outcome, w.last_sent)
            }
        };
        let _ = tx.send(Msg::Done {
            worker: i,
            last_index,
            outcome: Box::new(outcome),
        });
    }

    /// Everyone arrives; one sets the phases' epochs (each with its start delay); everyone
    /// starts together.
    fn start_together(&self) {
        if self.arrive.wait().is_leader() {
            let epoch = now_ns();
            for (p, s) in self.plans.iter().zip(self.shared.iter()) {
                let _ = s.epoch.set(epoch + p.settings.start_delay.0);
            }
            self.control.started_ns.store(epoch, Ordering::Release);
        }
        self.start.wait();
    }

    /// Phase `pi`'s collector: its samples as they complete (judged for steady state), then
    /// its workers' outcomes merged into its result.
    fn collect_phase(
        &self,
        pi: usize,
        rx: &mpsc::Receiver<Msg>,
        observer: Option<&dyn IntervalObserver>,
        layout_seconds: f64,
    ) -> Result<PhaseResult, EngineError> {
        let (plan, mine) = (self.plans[pi], &self.shared[pi]);
        let n = plan.workers.len();
        let many_targets = plan.workers.iter().any(|w| w.target != plan.workers[0].target);
        let mut steady = plan.settings.steady.map(|c| SteadyWatch::new(c, plan));
        let got = collect(rx, n, many_targets, observer, &mut |s: &Sample| {
            if steady.as_mut().is_some_and(|w| w.judge(s)) {
                mine.done.store(true, Ordering::Relaxed);
            }
        });
        let mut outs: Vec<WorkerOutcome> = Vec::with_capacity(n);
        for o in got.outcomes {
            match o {
                Some(Ok(o)) => outs.push(o),
                Some(Err(e)) => return Err(e),
                None => return Err(EngineError::Internal("a worker ended without reporting".into())),
            }
        }
        let mut r = merge(plan, outs, got.samples, layout_seconds);
        r.steady = steady.map(SteadyWatch::report);
        Ok(r)
    }
}

/// fio's flows of a group: per flow_id, its workers' weights summed.
fn flows_of(plans: &[&PhasePlan]) -> Vec<(u32, Flow)> {
    let mut flows: Vec<(u32, Flow)> = Vec::new();
    for plan in plans {
        let Some(w) = plan.settings.flow else { continue };
        let add = w as u64 * plan.workers.len() as u64;
        match flows.iter_mut().find(|(id, _)| *id == plan.settings.flow_id) {
            Some((_, f)) => {
                f.total_weight.fetch_add(add, Ordering::Relaxed);
            }
            None => flows.push((
                plan.settings.flow_id,
                Flow {
                    issued: AtomicU64::new(0),
                    total_weight: AtomicU64::new(add),
                },
            )),
        }
    }
    flows
}
