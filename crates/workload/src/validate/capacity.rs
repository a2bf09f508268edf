//! Whether the machine can hold the job's workers: the threads each group of phases run
//! together starts (checked before the workers are placed, so that a million threads asked
//! for cost nothing to refuse), then their memory and file descriptors (model's footprint of
//! each worker, its region known), each against the tightest limit env finds — the kernel's,
//! the cgroup's, the rlimits'. A refusal names what the job would need, what there is and
//! which limit says so.

use storlab_env::capacity::{capacity, Room};
use storlab_model::footprint::{per_worker, Footprint};
use storlab_model::plan::PhasePlan;
use storlab_units::{thousands, Size};

use super::origin_of;
use crate::{Job, PhaseSettings, WorkloadError};

/// What the process itself holds beside the workers (the database, the collectors, the
/// environment): kept free of the workers' share.
const PROCESS_BYTES: u64 = 64 << 20;

/// Threads the process runs beside the workers (main, the status line, the endpoint).
const PROCESS_THREADS: u64 = 8;

/// The phases in groups that run at once (a phase `together` with the one before it), by index.
fn groups(job: &Job, n: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        let together = job.streams.get(i).is_some_and(|s| s.together);
        match out.last_mut() {
            Some(g) if together => g.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

/// The workers' threads, before anything is placed: each group's (a worker each, a collector
/// per phase) against the threads the machine has left.
pub(super) fn check_threads(job: &Job, effs: &[PhaseSettings]) -> Result<(), WorkloadError> {
    let Some(room) = capacity().threads else {
        return Ok(());
    };
    for g in groups(job, effs.len()) {
        let workers: u64 = g.iter().map(|&i| u64::from(effs[i].threads)).sum();
        let need = workers + g.len() as u64 + PROCESS_THREADS;
        if need > room.left {
            let at_most = room.left.saturating_sub(g.len() as u64 + PROCESS_THREADS);
            return Err(refusal(
                job,
                &g,
                workers,
                format!(
                    "that is {} threads, and this machine has {} left ({}): give at most {} workers{}",
                    thousands(need),
                    thousands(room.left),
                    room.limit,
                    thousands(at_most),
                    together_words(&g)
                ),
            ));
        }
    }
    Ok(())
}

/// The workers' memory and file descriptors, each group's at once, against what is left.
pub(super) fn check_footprint(job: &Job, phases: &[PhasePlan]) -> Result<(), WorkloadError> {
    let c = capacity();
    for g in groups(job, phases.len()) {
        let mut need = Footprint::default();
        let mut workers = 0;
        for &i in &g {
            let p = &phases[i];
            let region = p.workers.iter().map(|w| w.total_len()).max().unwrap_or(0);
            let n = p.workers.len() as u64;
            workers += n;
            need = need.plus(per_worker(p.kind, &p.settings, region).times(n));
        }
        let per = need.memory / workers.max(1);
        if let Some(room) = over(&c.memory, need.memory + PROCESS_BYTES) {
            let at_most = room.left.saturating_sub(PROCESS_BYTES) / per.max(1);
            return Err(refusal(job, &g, workers, format!(
                "they would hold about {} of memory ({} a worker: its latency histograms, buffers and thread), and {} is left ({}): give at most {} workers{}",
                Size(need.memory + PROCESS_BYTES).human(),
                Size(per).human(),
                Size(room.left).human(),
                room.limit,
                thousands(at_most),
                together_words(&g)
            )));
        }
        if let Some(room) = over(&c.descriptors, need.descriptors) {
            return Err(refusal(job, &g, workers, format!(
                "they would open {} files at once, and {} more can be opened ({}): raise it (ulimit -n), or give fewer workers or files per worker",
                thousands(need.descriptors),
                thousands(room.left),
                room.limit
            )));
        }
    }
    Ok(())
}

/// The room, when `need` is more than it has.
fn over(room: &Option<Room>, need: u64) -> Option<&Room> {
    room.as_ref().filter(|r| need > r.left)
}

fn refusal(job: &Job, group: &[usize], workers: u64, why: String) -> WorkloadError {
    let origin = if group.len() == 1 {
        origin_of(job, group[0])
    } else {
        format!(
            "{}: phases {} to {} (run together)",
            job.origin,
            group[0] + 1,
            group[group.len() - 1] + 1
        )
    };
    WorkloadError::invalid(
        origin,
        format!(
            "{} workers (threads, fio's numjobs) is more than this machine can hold: {why}",
            thousands(workers)
        ),
    )
}

fn together_words(g: &[usize]) -> &'static str {
    if g.len() > 1 {
        " across the phases run together"
    } else {
        ""
    }
}
