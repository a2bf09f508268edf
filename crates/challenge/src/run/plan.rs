//! This host's fault plan carried out on time: drains, stopped writers or readers, pools taken
//! away and brought back, commands, tasks — each step an event on the timeline.

use super::*;

/// This host's fault plan as it is carried out: its steps in time order (each fault, and its
/// undoing after its FOR), the next step, the pools taken away and the tasks started.
pub(super) struct FaultPlan {
    steps: Vec<(f64, usize, bool)>,
    next: usize,
    taken: HashMap<usize, (Mount, Vec<usize>)>,
    tasks: Vec<(String, Box<dyn Task>)>,
}

impl FaultPlan {
    pub(super) fn new(faults: &[Fault]) -> FaultPlan {
        let mut steps: Vec<(f64, usize, bool)> = Vec::new();
        for (i, f) in faults.iter().enumerate() {
            steps.push((f.at, i, false));
            if let Some(d) = f.for_seconds {
                steps.push((f.at + d, i, true));
            }
        }
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
        FaultPlan {
            steps,
            next: 0,
            taken: HashMap::new(),
            tasks: Vec::new(),
        }
    }

    /// Carries out every step that is due, each an event on the timeline.
    pub(super) fn carry_out_due(&mut self, s: &Shared) {
        while self.next < self.steps.len() && s.t() >= self.steps[self.next].0 {
            let (_, i, undo) = self.steps[self.next];
            self.next += 1;
            let (kind, detail) = carry_out(s, &s.faults[i], i, undo, &mut self.taken, &mut self.tasks);
            s.event(kind, detail);
        }
    }

    /// Carries out the plan on time until the challenge is finished, looking at its tasks
    /// every second; then undoes what is still undone (pools mounted again, read-write again)
    /// and stops tasks still running.
    pub(super) fn run(mut self, s: &Shared, finished: &AtomicBool) {
        let mut polled = Instant::now();
        while !finished.load(Ordering::Relaxed) {
            self.carry_out_due(s);
            if polled.elapsed() >= Duration::from_secs(1) {
                polled = Instant::now();
                self.poll_tasks(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.undo_the_rest(s);
    }

    /// Tasks that ended are said and dropped.
    fn poll_tasks(&mut self, s: &Shared) {
        self.tasks.retain_mut(|(what, task)| match task.poll() {
            Ok(TaskState::Done { completed, detail }) => {
                let how = if completed { "finished" } else { "ended unfinished" };
                s.event("task", format!("{what} {how}: {detail}"));
                false
            }
            Ok(_) => true,
            Err(e) => {
                s.event("task", format!("{what}: {e}"));
                false
            }
        });
    }

    /// The challenge is over: nothing is left taken away, no task left running.
    fn undo_the_rest(mut self, s: &Shared) {
        let mut left: Vec<usize> = self.taken.keys().copied().collect();
        left.sort();
        for i in left {
            let (kind, detail) = carry_out(s, &s.faults[i], i, true, &mut self.taken, &mut self.tasks);
            s.event(kind, format!("{detail} (at the challenge's end)"));
        }
        for (what, mut task) in self.tasks {
            let said = match task.stop() {
                Ok(()) => format!("{what} stopped at the challenge's end"),
                Err(e) => format!("{what} could not be stopped: {e}"),
            };
            s.event("task", said);
        }
    }
}

/// One step of the fault plan: the fault `f` (number `i`), or its undoing. Returns the event.
fn carry_out(
    s: &Shared,
    f: &Fault,
    i: usize,
    undo: bool,
    taken: &mut HashMap<usize, (Mount, Vec<usize>)>,
    tasks: &mut Vec<(String, Box<dyn Task>)>,
) -> (&'static str, String) {
    let pool = s.spec.pools.iter().position(|p| p.name == f.target);
    let count = |held: &AtomicU64| match f.target.parse::<u64>() {
        Ok(n) => held.store(n, Ordering::Relaxed),
        Err(_) => held.store(u64::MAX, Ordering::Relaxed),
    };
    let kind = if undo { "undo" } else { "fault" };
    let detail = match (f.action, undo) {
        (FaultAction::Drain, false) => {
            if let Some(p) = pool {
                s.set_pool_state(p, PoolState::Draining);
            }
            format!("pool {} drained: no new files, readers empty it", f.target)
        }
        (FaultAction::Drain, true) => {
            if let Some(p) = pool {
                if s.pool_state(p) == PoolState::Draining {
                    s.set_pool_state(p, PoolState::Open);
                }
            }
            format!("pool {} takes files again", f.target)
        }
        (FaultAction::StopWriters, false) => {
            count(&s.writers_held);
            format!("writers stopped: {}", f.target)
        }
        (FaultAction::StopWriters, true) => {
            s.writers_held.store(0, Ordering::Relaxed);
            "writers restarted".to_string()
        }
        (FaultAction::StopReaders, false) => {
            count(&s.readers_held);
            format!("readers stopped: {}", f.target)
        }
        (FaultAction::StopReaders, true) => {
            s.readers_held.store(0, Ordering::Relaxed);
            "readers restarted".to_string()
        }
        (FaultAction::Unmount | FaultAction::ReadOnly | FaultAction::Detach, false) => {
            return take_pool_away(s, f, pool, i, taken)
        }
        (FaultAction::Unmount | FaultAction::ReadOnly, true) => return bring_pool_back(s, f, i, taken),
        (FaultAction::Detach | FaultAction::Command | FaultAction::Task, true) => {
            format!("{} {}: nothing to undo", f.action, f.target)
        }
        (FaultAction::Command, false) => faults::command(&f.target),
        (FaultAction::Task, false) => return start_task(f, tasks),
    };
    (kind, detail)
}

/// The pools' names, as the events say them.
fn pool_names(s: &Shared, pools: &[usize]) -> String {
    pools
        .iter()
        .map(|p| s.spec.pools[*p].name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Unmount, read-only or detach: the filesystem of pool `pool` (and every pool on it) taken
/// away once its open files are done (a minute at most); a detached device's waiting files
/// lost, the others kept to bring back.
fn take_pool_away(
    s: &Shared,
    f: &Fault,
    pool: Option<usize>,
    i: usize,
    taken: &mut HashMap<usize, (Mount, Vec<usize>)>,
) -> (&'static str, String) {
    let Some(p) = pool else {
        return ("fault-failed", format!("{} {}: no such pool", f.action, f.target));
    };
    let m = match faults::pool_mount(&s.spec.pools[p], f.action) {
        Ok(m) => m,
        Err(e) => return ("fault-failed", e.to_string()),
    };
    let on = faults::pools_on(&s.spec.pools, &m);
    let quiet = s.quiesce(&on, PoolState::Away);
    let (done, what) = match f.action {
        FaultAction::Unmount => (faults::unmount(&m), format!("{} unmounted (umount -l)", m.mount_point)),
        FaultAction::ReadOnly => (
            faults::remount(&m, true),
            format!("{} remounted read-only", m.mount_point),
        ),
        _ => (
            faults::detach(&m),
            format!("{} unmounted and its device {} detached", m.mount_point, m.source),
        ),
    };
    let pending = if quiet {
        ""
    } else {
        " (files were still open in it after a minute)"
    };
    match done {
        Err(e) => {
            for p in &on {
                s.set_pool_state(*p, PoolState::Open);
            }
            (
                "fault-failed",
                format!("{what}: failed: {e}; pool(s) {} in service again", pool_names(s, &on)),
            )
        }
        Ok(()) if f.action == FaultAction::Detach => {
            let lost = lose_pools(s, &on);
            (
                "fault",
                format!(
                    "pool(s) {} gone: {what}{pending}; {lost} waiting file(s) lost",
                    pool_names(s, &on)
                ),
            )
        }
        Ok(()) => {
            let detail = format!("pool(s) {} away: {what}{pending}", pool_names(s, &on));
            taken.insert(i, (m, on));
            ("fault", detail)
        }
    }
}

/// Pools whose device went: gone, their waiting files recorded as lost; how many.
fn lose_pools(s: &Shared, on: &[usize]) -> u64 {
    let mut lost = 0;
    for p in on {
        s.set_pool_state(*p, PoolState::Gone);
        let why = format!("waiting in pool {} when its device was detached", s.spec.pools[*p].name);
        match s.cat.with(|st, _| st.lose_pool(s.id, *p, &why)) {
            Ok(n) => {
                lost += n;
                less(&s.pools[*p].backlog, n);
            }
            Err(e) => eprintln!(
                "storlab: could not record pool {}'s files as lost: {e}",
                s.spec.pools[*p].name
            ),
        }
    }
    lost
}

/// An unmounted or read-only filesystem mounted read-write again, its pools in service.
fn bring_pool_back(
    s: &Shared,
    f: &Fault,
    i: usize,
    taken: &mut HashMap<usize, (Mount, Vec<usize>)>,
) -> (&'static str, String) {
    let Some((m, on)) = taken.remove(&i) else {
        return ("undo", format!("{} {}: nothing to undo", f.action, f.target));
    };
    let done = if f.action == FaultAction::Unmount {
        faults::mount_again(&m)
    } else {
        faults::remount(&m, false)
    };
    match done {
        Ok(()) => {
            for p in &on {
                s.set_pool_state(*p, PoolState::Open);
            }
            (
                "undo",
                format!(
                    "pool(s) {} back: {} mounted read-write",
                    pool_names(s, &on),
                    m.mount_point
                ),
            )
        }
        Err(e) => (
            "fault-failed",
            format!(
                "pool(s) {} could not come back: {e}; they stay away",
                pool_names(s, &on)
            ),
        ),
    }
}

/// An impact task started (stopped at the challenge's end at the latest).
fn start_task(f: &Fault, tasks: &mut Vec<(String, Box<dyn Task>)>) -> (&'static str, String) {
    match storlab_impact::kinds::parse(&f.target) {
        Ok(mut task) => {
            let what = task.describe();
            match task.start() {
                Ok(()) => {
                    tasks.push((what.clone(), task));
                    ("fault", format!("{what} started"))
                }
                Err(e) => ("fault-failed", format!("{what}: {e}")),
            }
        }
        Err(e) => ("fault-failed", format!("task {}: {e}", f.target)),
    }
}
