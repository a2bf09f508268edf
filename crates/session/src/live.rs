//! The live views of runs as they go (`--metrics`, the status line): what they are told.

use storlab_engine::IntervalObserver;
use storlab_model::result::PhaseResult;
use storlab_model::run::RunKind;

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
    fn interval(&self, target: u16, bytes: [u64; 2], ops: [u64; 2], latency_ns: &[storlab_engine::Recorded; 2]) {
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
