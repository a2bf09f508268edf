//! The one step from a fio job's figures to a stored run, shared by fio's normal text and
//! terse importers: each reads its own format into [`JobFigures`] (per direction what it
//! moved, its runtime, its total latency and completion-latency percentiles; the job's CPU),
//! and [`JobFigures::run`] makes the run — bytes and I/Os each way (IOPS × runtime, as both
//! formats round them), all done over the longest direction's runtime, latency whole or not
//! at all, what fio does not report marked not measured.

use serde_json::Value;
use storlab_model::result::{Figure, Latency, PhaseResult};
use storlab_model::run::{ImportedParams, ImportedRun, Phase, PhaseName, PhaseParams};

use crate::Origin;

/// One direction of a job (read, write or trim) as fio printed it.
#[derive(Default)]
pub(crate) struct DirFigures {
    /// A read (a write or trim otherwise).
    pub(crate) read: bool,
    pub(crate) bytes: f64,
    pub(crate) bytes_per_sec: f64,
    pub(crate) iops: f64,
    pub(crate) seconds: f64,
    /// Total latency min, mean, max (ns).
    pub(crate) lat: Option<(f64, f64, f64)>,
    /// Completion-latency percentiles (percent, ns).
    pub(crate) pct: Vec<(f64, f64)>,
}

impl DirFigures {
    /// I/Os: IOPS × runtime (neither format prints the count).
    fn ops(&self) -> f64 {
        (self.iops * self.seconds).round()
    }
}

/// One fio job's figures: the directions that moved data, and its CPU (user and system percent
/// of its runtime) where the format gives them.
#[derive(Default)]
pub(crate) struct JobFigures {
    pub(crate) dirs: Vec<DirFigures>,
    pub(crate) cpu_pct: Option<(f64, f64)>,
}

/// What a run says besides its figures: the job's name, fio's version, the format, the run's
/// document, when it ran, what the environment says, its phase kind and parameters.
pub(crate) struct RunFacts {
    pub(crate) job: String,
    pub(crate) version: String,
    pub(crate) document: Value,
    pub(crate) started: String,
    pub(crate) source: String,
    pub(crate) kind: PhaseName,
    pub(crate) params: ImportedParams,
}

impl JobFigures {
    /// The longest direction's runtime, seconds.
    pub(crate) fn seconds(&self) -> f64 {
        self.dirs.iter().map(|d| d.seconds).fold(0.0, f64::max)
    }

    /// The latency: total latency's min, mean (weighted by I/Os) and max, and the completion
    /// percentiles (the larger of the directions'); None unless every direction has both.
    fn latency(&self, ops: f64) -> Option<Latency> {
        if self.dirs.is_empty() || self.dirs.iter().any(|d| d.lat.is_none() || d.pct.is_empty()) {
            return None;
        }
        let lat = |d: &DirFigures| d.lat.expect("checked above");
        let pct = |p: f64| -> u64 {
            self.dirs
                .iter()
                .filter_map(|d| d.pct.iter().find(|x| (x.0 - p).abs() < 1e-6))
                .map(|x| x.1)
                .fold(0.0, f64::max) as u64
        };
        Some(Latency {
            count: ops as u64,
            min_ns: self.dirs.iter().map(|d| lat(d).0).fold(f64::INFINITY, f64::min) as u64,
            mean_ns: self.dirs.iter().map(|d| lat(d).1 * d.ops()).sum::<f64>() / ops.max(1.0),
            max_ns: self.dirs.iter().map(|d| lat(d).2).fold(0.0, f64::max) as u64,
            p50_ns: pct(50.0),
            p90_ns: pct(90.0),
            p99_ns: pct(99.0),
            p99_9_ns: pct(99.9),
            p99_99_ns: pct(99.99),
        })
    }

    /// The phase result, and whether its latency was measured.
    fn result(&self) -> (PhaseResult, bool) {
        let (reads, writes): (Vec<&DirFigures>, Vec<&DirFigures>) = self.dirs.iter().partition(|d| d.read);
        let sum = |ds: &[&DirFigures], f: &dyn Fn(&DirFigures) -> f64| ds.iter().map(|d| f(d)).sum::<f64>();
        let read = (sum(&reads, &|d| d.bytes), sum(&reads, &|d| d.ops()));
        let written = (sum(&writes, &|d| d.bytes), sum(&writes, &|d| d.ops()));
        let seconds = self.seconds();
        let latency = self.latency(read.1 + written.1);
        let (usr, sys) = self.cpu_pct.unwrap_or((0.0, 0.0));
        let mut result = PhaseResult {
            cpu_user: usr / 100.0 * seconds,
            cpu_sys: sys / 100.0 * seconds,
            latency: latency.clone().unwrap_or_default(),
            ..crate::moved(
                read,
                written,
                seconds,
                self.dirs.iter().map(|d| d.bytes_per_sec).sum(),
                self.dirs.iter().map(|d| d.iops).sum(),
            )
        };
        let mut missing = vec![Figure::FirstDone, Figure::WorkerSpread];
        if latency.is_none() {
            missing.push(Figure::Latency);
        }
        if self.cpu_pct.is_none() {
            missing.push(Figure::Cpu);
        }
        result.mark_not_measured(&missing);
        (result, latency.is_some())
    }

    /// The run: one phase of the job's figures. A job whose directions lack latency says so
    /// in its notes.
    pub(crate) fn run(&self, origin: &Origin, host: &str, mut facts: RunFacts) -> ImportedRun {
        let (result, has_latency) = self.result();
        if !has_latency && !self.dirs.is_empty() {
            facts
                .params
                .notes
                .push("the report has no latency percentiles for every direction: latency not measured".into());
        }
        facts.params.tool = format!("fio {}", facts.version);
        origin.run(
            host,
            format!("fio {}", facts.job),
            format!(
                "fio ({}) job '{}', imported from {}",
                facts.version, facts.job, origin.path
            ),
            facts.document,
            facts.started,
            facts.source,
            vec![Phase {
                seq: 0,
                kind: facts.kind,
                params: PhaseParams::Imported(facts.params),
                result,
                cache_flattered: false,
            }],
        )
    }
}
