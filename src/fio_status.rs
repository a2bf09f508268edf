//! `storlab fio --status-interval=T`: fio's periodic report — every T, the run so far in the
//! formats asked (a whole JSON document, or the normal report), each job's figures from its
//! start to now, as fio's `__show_running_run_stats` prints them; the final report follows at
//! the end as always. The phases done are read back from the database as stored; the phase
//! running is its intervals so far (bytes, I/Os, latencies, samples), as the engine hands them
//! to a live view. Phases that run together are reported once they have ended: the engine's
//! intervals do not say which of them each belongs to.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use storlab_model::plan::PhasePlan;
use storlab_model::result::{PhaseResult, Sample, Throughput};
use storlab_model::run::{Phase, PhaseName, PhaseParams};
use storlab_session::{IntervalObserver, LiveRun, PhaseStart};
use storlab_workload::fio::cli::{FioCommand, OutputFormat};

use crate::cli::DbArgs;

/// The phase running, as its intervals have come in.
struct Running {
    seq: usize,
    started: Instant,
    bytes: [u64; 2],
    ops: [u64; 2],
    latency: [storlab_engine::Histogram<u64>; 2],
    samples: Vec<Sample>,
    /// Another phase started with it: they run together, reported when they end.
    together: bool,
}

/// The live view that prints fio's report every `every`.
pub(crate) struct StatusReports {
    every: Duration,
    plans: Vec<PhasePlan>,
    options: storlab_report::fio::FioJsonOptions,
    formats: Vec<OutputFormat>,
    db: DbArgs,
    state: Mutex<State>,
}

struct State {
    run_id: Option<i64>,
    running: Option<Running>,
    next: Instant,
}

impl StatusReports {
    /// Reports of `c`'s job, whose phases are `plans`, every `every`; its run is read back
    /// from `db`.
    pub(crate) fn new(
        every: Duration,
        plans: Vec<PhasePlan>,
        c: &FioCommand,
        fio: &storlab_workload::fio::FioJob,
        db: DbArgs,
    ) -> StatusReports {
        StatusReports {
            every,
            plans,
            options: storlab_report::fio::FioJsonOptions::of_command(c, fio),
            formats: c.formats.clone(),
            db,
            state: Mutex::new(State {
                run_id: None,
                running: None,
                next: Instant::now() + every,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The run so far: its phases stored, and the one running as far as it has come.
    fn report(&self, st: &State) -> Option<String> {
        let run_id = st.run_id?;
        let store = crate::results::open_existing(&self.db).ok()?;
        let mut run = store.run(run_id, true).ok()??;
        if let Some(r) = st.running.as_ref().filter(|r| !r.together) {
            if let Some(p) = self.running_phase(r) {
                run.phases.push(p);
            }
        }
        if run.phases.is_empty() {
            return None;
        }
        let mut o = self.options.clone();
        let mut out = String::new();
        let has = |f: OutputFormat| self.formats.contains(&f);
        if has(OutputFormat::Json) || has(OutputFormat::JsonPlus) {
            o.plus = has(OutputFormat::JsonPlus);
            let doc = storlab_report::fio::document(&run, &o);
            out += &(serde_json::to_string_pretty(&doc).ok()? + "\n");
        }
        if has(OutputFormat::Normal) {
            let t = storlab_report::fio::FioTextOptions {
                pid: std::process::id(),
                time: now_secs(),
            };
            let doc = storlab_report::fio::document(&run, &o);
            out += &storlab_report::fio::report(&run, &doc, &o.reporting, &t);
        }
        Some(out)
    }

    /// The phase running as a stored phase would hold it, from its intervals so far.
    fn running_phase(&self, r: &Running) -> Option<Phase> {
        let plan = self.plans.get(r.seq.checked_sub(1)?)?.clone();
        let seconds = r.started.elapsed().as_secs_f64();
        let encode = |h: &storlab_engine::Histogram<u64>| storlab_engine::encode_histogram(h);
        let mut all = storlab_engine::new_histogram();
        r.latency.iter().for_each(|h| all.add(h).unwrap_or(()));
        let result = PhaseResult {
            bytes_read: r.bytes[0],
            bytes_written: r.bytes[1],
            ops_read: r.ops[0],
            ops_written: r.ops[1],
            all_done: Throughput::new(seconds, r.bytes[0] + r.bytes[1], r.ops[0] + r.ops[1]),
            histogram: encode(&all),
            histograms_rw: [encode(&r.latency[0]), encode(&r.latency[1])],
            samples: r.samples.clone(),
            ..Default::default()
        };
        Some(Phase {
            seq: r.seq as u32,
            kind: PhaseName::Kind(plan.kind),
            params: PhaseParams::Plan(plan),
            result,
            cache_flattered: false,
        })
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl IntervalObserver for StatusReports {
    fn interval(&self, _target: u16, bytes: [u64; 2], ops: [u64; 2], latency_ns: &[storlab_engine::Recorded; 2]) {
        let mut st = self.state();
        let Some(r) = st.running.as_mut() else { return };
        for d in 0..2 {
            r.bytes[d] += bytes[d];
            r.ops[d] += ops[d];
            for &(v, n) in &latency_ns[d] {
                let _ = r.latency[d].record_n(v, n);
            }
        }
    }

    fn sample(&self, sample: &Sample) {
        let mut st = self.state();
        if let Some(r) = st.running.as_mut() {
            r.samples.push(sample.clone());
        }
        if Instant::now() < st.next {
            return;
        }
        st.next += self.every;
        if let Some(text) = self.report(&st) {
            print!("{text}");
        }
    }
}

impl LiveRun for StatusReports {
    fn run_started(&self, run_id: i64, _kind: storlab_model::run::RunKind) {
        self.state().run_id = Some(run_id);
    }

    fn phase_started(&self, phase: &PhaseStart) {
        let mut st = self.state();
        st.run_id = Some(phase.run_id);
        let together = st.running.is_some();
        st.running = Some(Running {
            seq: phase.seq,
            started: Instant::now(),
            bytes: [0; 2],
            ops: [0; 2],
            latency: [storlab_engine::new_histogram(), storlab_engine::new_histogram()],
            samples: Vec::new(),
            together,
        });
    }

    fn phase_ended(&self, _run_id: i64, _seq: usize, _result: Option<&PhaseResult>) {
        self.state().running = None;
    }
}
