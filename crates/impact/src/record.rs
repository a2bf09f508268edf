//! What a study records as it goes: events in the order they happened and every look at a
//! task, on one clock (the engine's, so that a task's start can be placed on a phase's samples).

use std::sync::Mutex;

use storlab_engine::clock;
use storlab_model::study::{StudyEvent, TaskCondition, TaskSample};

use crate::task::TaskState;

/// The study's record. Shared between the thread that runs the job and the one that watches
/// the task, hence the lock; each entry takes its time under the lock, so the events are in
/// time order.
pub struct Recorder {
    t0_ns: u64,
    inner: Mutex<Inner>,
    /// The live view (`--metrics`), told each event.
    live: Option<std::sync::Arc<dyn storlab_session::LiveRun + Send + Sync>>,
}

#[derive(Default)]
struct Inner {
    events: Vec<StudyEvent>,
    samples: Vec<TaskSample>,
    /// Entries from this index on belong to the run going on (its id is known when it ends).
    run_mark: Option<(usize, usize)>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

impl Recorder {
    /// Starts the study's clock.
    pub fn new() -> Recorder {
        clock::init();
        Recorder {
            t0_ns: clock::now_ns(),
            inner: Mutex::new(Inner::default()),
            live: None,
        }
    }

    /// A recorder that also tells `live` each event.
    pub fn with_live(live: Option<std::sync::Arc<dyn storlab_session::LiveRun + Send + Sync>>) -> Recorder {
        Recorder {
            live,
            ..Recorder::new()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seconds since the study started.
    pub fn now(&self) -> f64 {
        self.at(clock::now_ns())
    }

    /// A reading of the engine's clock as seconds since the study started.
    pub fn at(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.t0_ns) as f64 / 1e9
    }

    /// Records an event now; returns its time.
    pub fn event(&self, kind: &str, detail: impl Into<String>) -> f64 {
        let detail = detail.into();
        if let Some(l) = &self.live {
            l.study_event(kind, &detail);
        }
        let mut g = self.lock();
        let t = self.now();
        g.events.push(StudyEvent {
            t,
            at: storlab_store::now_rfc3339(),
            run_id: None,
            kind: kind.into(),
            detail,
        });
        t
    }

    /// Records one look at task number `task`.
    pub fn sample(&self, task: u32, state: &TaskState) {
        let mut g = self.lock();
        let t = self.now();
        let (name, percent, bytes) = match state {
            TaskState::Idle => (TaskCondition::Idle, None, None),
            TaskState::Running(p) => (TaskCondition::Running, p.percent, p.bytes_done),
            TaskState::Done { .. } => (TaskCondition::Done, Some(100.0), None),
        };
        if let (Some(l), TaskCondition::Running) = (&self.live, name) {
            l.task_progress(task, percent);
        }
        g.samples.push(TaskSample {
            task,
            t,
            run_id: None,
            state: name,
            percent: percent.filter(|_| !matches!(state, TaskState::Done { completed: false, .. })),
            bytes_done: bytes,
        });
    }

    /// A run of the job starts: what is recorded until [`Recorder::run_ended`] belongs to it.
    pub fn run_started(&self) {
        let mut g = self.lock();
        g.run_mark = Some((g.events.len(), g.samples.len()));
    }

    /// The run that started last ended as `run_id`.
    pub fn run_ended(&self, run_id: i64) {
        let mut g = self.lock();
        if let Some((e, s)) = g.run_mark.take() {
            for ev in &mut g.events[e..] {
                ev.run_id.get_or_insert(run_id);
            }
            for sa in &mut g.samples[s..] {
                sa.run_id.get_or_insert(run_id);
            }
        }
    }

    /// The events so far (a copy).
    pub fn events(&self) -> Vec<StudyEvent> {
        self.lock().events.clone()
    }

    /// The task samples so far (a copy).
    pub fn samples(&self) -> Vec<TaskSample> {
        self.lock().samples.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Progress;

    #[test]
    fn entries_are_in_time_order_and_belong_to_the_run_going_on() {
        let r = Recorder::new();
        r.event("study-start", "");
        r.run_started();
        r.event("task-start", "scrub");
        r.sample(
            0,
            &TaskState::Running(Progress {
                percent: Some(12.5),
                bytes_done: None,
            }),
        );
        r.run_ended(7);
        r.event("task-end", "finished");
        let (events, samples) = (r.events(), r.samples());
        assert!(events.windows(2).all(|w| w[0].t <= w[1].t));
        let runs: Vec<Option<i64>> = events.iter().map(|e| e.run_id).collect();
        assert_eq!(runs, [None, Some(7), None]);
        assert_eq!(samples[0].run_id, Some(7));
        assert_eq!(samples[0].percent, Some(12.5));
    }
}
