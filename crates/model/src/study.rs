//! Studies as stored: sets of runs that belong together (a sweep's points, an IOzone matrix's
//! cells, an impact study's repetitions), each run with a typed role, the study's own typed
//! parameters and results, and for impact studies the events and the task's progress.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::result::RateUnit;
use crate::run::named_enum;

named_enum! {
    /// What kind of study.
    pub enum StudyKind {
        /// The cost of a background task to the users (idle and loaded repetitions).
        Impact = "impact",
        /// The cost of the users to the task (its duration idle and with the job looping).
        ImpactReverse = "impact-reverse",
        /// The job held at its rate through one or more tasks.
        ImpactHeld = "impact-held",
        /// IOzone's automatic mode: file size × record size.
        IozoneAuto = "iozone-auto",
        /// IOzone's -l/-u: a range of worker counts.
        IozoneWorkers = "iozone-workers",
        /// An imported IOzone -R report's cells.
        IozoneImport = "iozone-import",
        /// `storlab sweep` of one or more parameters.
        Sweep = "sweep",
        /// `storlab sweep` of file size × block size (drawn as heat maps).
        SweepMatrix = "sweep-matrix",
        /// `storlab qualify`: a plan's jobs repeated until its criteria are decided.
        Qualify = "qualify",
        /// `storlab compare`: one job on two targets in turn until its figures are decided.
        Compare = "compare",
    }
}

named_enum! {
    /// What a background task was doing when looked at.
    pub enum TaskCondition {
        /// Not running.
        Idle = "idle",
        /// Running.
        Running = "running",
        /// Ended.
        Done = "done",
    }
}

/// A run's part in a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A repetition of a cost-to-the-users study.
    Repetition {
        /// 1-based.
        index: u32,
        /// With the task running.
        loaded: bool,
        /// Counted in the comparison (a loaded repetition the task did not cover from start to
        /// end is kept but not counted).
        counted: bool,
    },
    /// One run of the job looped while the task ran (the cost to the task).
    Loop {
        /// 1-based.
        index: u32,
    },
    /// The job held at its rate.
    Held,
    /// A sweep's point: the varied settings and their values.
    Point {
        /// (key, value), in the order varied.
        values: Vec<(String, String)>,
    },
    /// A cell of an IOzone run.
    Cell {
        /// Workers.
        workers: u32,
        /// File size per worker, bytes.
        file_bytes: u64,
        /// Record size, bytes.
        record_bytes: u64,
    },
    /// An imported cell, by the name its run carries.
    Imported {
        /// The run's job name.
        name: String,
    },
    /// A run of `storlab compare`: its target's name and its round.
    Side {
        /// The target's name.
        target: String,
        /// 1-based.
        round: u32,
    },
    /// A repetition of a qualification's job.
    Trial {
        /// The job (and its point): "serial write threads=4".
        job: String,
        /// 1-based.
        repetition: u32,
        /// For a job with a background task: with the task running (true) or idle.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loaded: Option<bool>,
    },
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Role::Repetition { index, loaded, counted } => write!(
                f,
                "{} r{index}{}",
                if *loaded { "loaded" } else { "idle" },
                if *counted { "" } else { " (task ended early)" }
            ),
            Role::Loop { index } => write!(f, "loop {index}"),
            Role::Held => f.write_str("held"),
            Role::Point { values } => f.write_str(
                &values
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Role::Cell {
                workers,
                file_bytes,
                record_bytes,
            } => write!(
                f,
                "{workers} worker(s), {} kB × {} kB",
                file_bytes / 1024,
                record_bytes / 1024
            ),
            Role::Imported { name } => f.write_str(name),
            Role::Side { target, round } => write!(f, "{target} round {round}"),
            Role::Trial {
                job,
                repetition,
                loaded,
            } => write!(
                f,
                "{job} r{repetition}{}",
                match loaded {
                    Some(true) => " loaded",
                    Some(false) => " idle",
                    None => "",
                }
            ),
        }
    }
}

impl Role {
    /// A role as storlab wrote it before roles were typed (store migration 5): "idle r2",
    /// "loaded r3 (task ended early)", "loop 4", "held", "threads=4 bs=4k", "2 worker(s), 1024
    /// kB × 64 kB", or an imported run's name.
    pub fn from_legacy(kind: StudyKind, text: &str) -> Role {
        let imported = || Role::Imported { name: text.to_string() };
        match kind {
            StudyKind::Impact => {
                let mut w = text.split_whitespace();
                let loaded = w.next() == Some("loaded");
                let index = w.next().and_then(|r| r.strip_prefix('r')?.parse().ok()).unwrap_or(0);
                Role::Repetition {
                    index,
                    loaded,
                    counted: !text.contains("ended early"),
                }
            }
            StudyKind::ImpactReverse => Role::Loop {
                index: text.strip_prefix("loop ").and_then(|n| n.parse().ok()).unwrap_or(0),
            },
            StudyKind::ImpactHeld => Role::Held,
            StudyKind::Sweep | StudyKind::SweepMatrix => Role::Point {
                values: text
                    .split_whitespace()
                    .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
                    .collect(),
            },
            StudyKind::IozoneAuto | StudyKind::IozoneWorkers => {
                // "2 worker(s), 1024 kB × 64 kB"
                let nums: Vec<u64> = text
                    .split(|c: char| !c.is_ascii_digit())
                    .filter_map(|n| n.parse().ok())
                    .collect();
                match nums[..] {
                    [w, f, r] => Role::Cell {
                        workers: w as u32,
                        file_bytes: f * 1024,
                        record_bytes: r * 1024,
                    },
                    _ => imported(),
                }
            }
            StudyKind::IozoneImport | StudyKind::Qualify | StudyKind::Compare => imported(),
        }
    }
}

/// A study's member: a run and its role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// The run.
    pub run_id: i64,
    /// Its part.
    pub role: Role,
}

/// The pool-wide impact of k of S servers running a task at once (RAL's reasoning: a user
/// whose data is spread over the pool sees one server's loss on k/S of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Projection {
    /// Servers in the pool.
    pub servers: u32,
    /// The pool-wide loss allowed, percent.
    pub budget_percent: f64,
    /// The one-server loss it starts from, percent (positive = slower).
    pub loss_percent: f64,
    /// (k, projected pool-wide loss %) for k = 1..=S.
    pub by_k: Vec<(u32, f64)>,
    /// The largest k inside the budget (0: not even one server fits).
    pub largest_k: u32,
}

/// When one task of a held-rate study ran, in seconds since the study started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpan {
    /// What it was.
    pub task: String,
    /// Started.
    pub start: f64,
    /// Ended (None: it was stopped before it ended).
    pub end: Option<f64>,
    /// The system's last words.
    pub detail: String,
}

/// Which stretch of a held-rate run an interval falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stretch {
    /// Before the first task started.
    Before,
    /// While a task ran.
    During,
    /// After the last task ended.
    After,
}

impl Stretch {
    /// "before", "during", "after".
    pub fn name(self) -> &'static str {
        match self {
            Stretch::Before => "before",
            Stretch::During => "during",
            Stretch::After => "after",
        }
    }
}

/// One stretch of a held-rate run in sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StretchSummary {
    /// Which.
    pub stretch: Stretch,
    /// Intervals in it.
    pub intervals: usize,
    /// Mean achieved rate (the target's unit: IOPS or MiB/s).
    pub achieved: f64,
    /// Lowest interval's rate.
    pub achieved_min: f64,
    /// Mean of the intervals' p99, µs.
    pub p99_us: f64,
    /// Largest interval p99.9, µs.
    pub p99_9_max_us: f64,
    /// Largest deficit (operations, or MiB for a bandwidth target).
    pub behind_max: f64,
}

/// A cost-to-the-users study: the task, and the worst throughput loss and projection found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UsersParams {
    /// The task as given (`btrfs-scrub:/mnt/pool@200m`).
    pub task: String,
    /// The task in words ("btrfs scrub of /mnt/pool").
    pub task_description: String,
    /// Repetitions asked for per side.
    pub repeat: u32,
    /// The command line.
    pub command: String,
    /// Ctrl-C ended it early.
    pub aborted: bool,
    /// The largest throughput loss over the phases, percent (positive = slower).
    pub worst_loss_percent: Option<f64>,
    /// The same at its 95 % interval's worse end.
    pub worst_loss_worse_end_percent: Option<f64>,
    /// Which phase ("phase 1 randread").
    pub worst_loss_phase: Option<String>,
    /// The pool projection from the worst loss, when asked for.
    pub projection: Option<Projection>,
    /// The projection from the interval's worse end.
    pub projection_worse_end: Option<Projection>,
}

/// A round of a task over a pool, k servers at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Servers at a time.
    pub k: u32,
    /// The round's duration with the pool idle, seconds (None when k is 0).
    pub idle_seconds: Option<f64>,
    /// Under load.
    pub loaded_seconds: Option<f64>,
}

/// A cost-to-the-task study.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReverseParams {
    /// The task as given.
    pub task: String,
    /// The task in words.
    pub task_description: String,
    /// Its duration with the machine idle, seconds.
    pub idle_seconds: f64,
    /// With the job looping, seconds.
    pub loaded_seconds: f64,
    /// Loaded over idle.
    pub ratio: f64,
    /// The command line.
    pub command: String,
    /// Ctrl-C ended it early.
    pub aborted: bool,
    /// The cost-to-the-users study the projection's loss came from.
    pub projection_from_study: Option<i64>,
    /// That projection.
    pub projection: Option<Projection>,
    /// A round over the pool at the projection's k.
    pub round: Option<Round>,
}

/// A held-rate study: its timing, the tasks' spans and the analysis' summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HeldParams {
    /// The tasks as given, in order.
    pub tasks: Vec<String>,
    /// The command line.
    pub command: String,
    /// Ctrl-C ended it early.
    pub aborted: bool,
    /// The stretch before the first task, seconds.
    pub before_seconds: f64,
    /// The stretch after the last task ended, seconds.
    pub after_seconds: f64,
    /// Tasks started this long after the one before (None: when it ended).
    pub stagger_seconds: Option<f64>,
    /// When the job's phase started, seconds since the study started.
    pub phase_start: f64,
    /// When each task ran.
    pub spans: Vec<TaskSpan>,
    /// The target rate in the analysis' unit (IOPS, or MiB/s for a bandwidth target).
    pub target: Option<f64>,
    /// The target's unit.
    pub unit: Option<RateUnit>,
    /// The largest deficit.
    pub behind_max: Option<f64>,
    /// Seconds from the last task's end until the deficit was repaid.
    pub repaid_after_seconds: Option<f64>,
    /// Before, during, after.
    pub stretches: Option<Vec<StretchSummary>>,
}

/// An IOzone run of several cells.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IozoneParams {
    /// IOzone's command line as given.
    pub command: String,
    /// IOzone's rule, when these are cache figures (a data set under three times RAM).
    pub note: Option<String>,
}

/// An imported IOzone report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImportParams {
    /// The file.
    pub imported_from: String,
}

/// A sweep.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SweepParams {
    /// The varied settings, in order.
    pub vary: Vec<String>,
    /// Each varied setting's points.
    pub points: Vec<(String, Vec<String>)>,
    /// The command line.
    pub command: String,
    /// Points left out (a block larger than the file, in a size × bs sweep).
    pub skipped: u32,
    /// What the figures are worth: cache figures when the file sets were under three times
    /// RAM without O_DIRECT.
    pub note: Option<String>,
}

/// A study's kind with its own parameters and results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "params", rename_all = "kebab-case")]
pub enum StudyParams {
    /// See [`StudyKind::Impact`].
    Impact(UsersParams),
    /// See [`StudyKind::ImpactReverse`].
    ImpactReverse(ReverseParams),
    /// See [`StudyKind::ImpactHeld`].
    ImpactHeld(HeldParams),
    /// See [`StudyKind::IozoneAuto`].
    IozoneAuto(IozoneParams),
    /// See [`StudyKind::IozoneWorkers`].
    IozoneWorkers(IozoneParams),
    /// See [`StudyKind::IozoneImport`].
    IozoneImport(ImportParams),
    /// See [`StudyKind::Sweep`].
    Sweep(SweepParams),
    /// See [`StudyKind::SweepMatrix`].
    SweepMatrix(SweepParams),
    /// See [`StudyKind::Qualify`].
    Qualify(crate::qualify::QualifyParams),
    /// See [`StudyKind::Compare`].
    Compare(crate::versus::CompareParams),
}

impl StudyParams {
    /// Its kind.
    pub fn kind(&self) -> StudyKind {
        match self {
            StudyParams::Impact(_) => StudyKind::Impact,
            StudyParams::ImpactReverse(_) => StudyKind::ImpactReverse,
            StudyParams::ImpactHeld(_) => StudyKind::ImpactHeld,
            StudyParams::IozoneAuto(_) => StudyKind::IozoneAuto,
            StudyParams::IozoneWorkers(_) => StudyKind::IozoneWorkers,
            StudyParams::IozoneImport(_) => StudyKind::IozoneImport,
            StudyParams::Sweep(_) => StudyKind::Sweep,
            StudyParams::SweepMatrix(_) => StudyKind::SweepMatrix,
            StudyParams::Qualify(_) => StudyKind::Qualify,
            StudyParams::Compare(_) => StudyKind::Compare,
        }
    }

    /// The parameters alone, as stored beside the kind.
    pub fn to_stored(&self) -> serde_json::Result<serde_json::Value> {
        Ok(match self {
            StudyParams::Impact(p) => serde_json::to_value(p)?,
            StudyParams::ImpactReverse(p) => serde_json::to_value(p)?,
            StudyParams::ImpactHeld(p) => serde_json::to_value(p)?,
            StudyParams::IozoneAuto(p) | StudyParams::IozoneWorkers(p) => serde_json::to_value(p)?,
            StudyParams::IozoneImport(p) => serde_json::to_value(p)?,
            StudyParams::Sweep(p) | StudyParams::SweepMatrix(p) => serde_json::to_value(p)?,
            StudyParams::Qualify(p) => serde_json::to_value(p)?,
            StudyParams::Compare(p) => serde_json::to_value(p)?,
        })
    }

    /// Reads stored parameters of a kind.
    pub fn from_stored(kind: StudyKind, v: serde_json::Value) -> serde_json::Result<StudyParams> {
        use serde_json::from_value as de;
        Ok(match kind {
            StudyKind::Impact => StudyParams::Impact(de(v)?),
            StudyKind::ImpactReverse => StudyParams::ImpactReverse(de(v)?),
            StudyKind::ImpactHeld => StudyParams::ImpactHeld(de(v)?),
            StudyKind::IozoneAuto => StudyParams::IozoneAuto(de(v)?),
            StudyKind::IozoneWorkers => StudyParams::IozoneWorkers(de(v)?),
            StudyKind::IozoneImport => StudyParams::IozoneImport(de(v)?),
            StudyKind::Sweep => StudyParams::Sweep(de(v)?),
            StudyKind::SweepMatrix => StudyParams::SweepMatrix(de(v)?),
            StudyKind::Qualify => StudyParams::Qualify(de(v)?),
            StudyKind::Compare => StudyParams::Compare(de(v)?),
        })
    }

    /// The command line that ran the study, where one did.
    pub fn command(&self) -> Option<&str> {
        match self {
            StudyParams::Impact(p) => Some(&p.command),
            StudyParams::ImpactReverse(p) => Some(&p.command),
            StudyParams::ImpactHeld(p) => Some(&p.command),
            StudyParams::IozoneAuto(p) | StudyParams::IozoneWorkers(p) => Some(&p.command),
            StudyParams::Sweep(p) | StudyParams::SweepMatrix(p) => Some(&p.command),
            StudyParams::Qualify(p) => Some(&p.command),
            StudyParams::Compare(p) => Some(&p.command),
            StudyParams::IozoneImport(_) => None,
        }
    }
}

/// Something that happened during a study, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyEvent {
    /// Seconds since the study started.
    pub t: f64,
    /// Wall-clock time, RFC 3339.
    pub at: String,
    /// The run that was going on, if any.
    pub run_id: Option<i64>,
    /// What happened: "task-start", "task-end", "repetition-start", ...
    pub kind: String,
    /// In words (a task's end carries the system's report, error counts included).
    pub detail: String,
}

/// One look at a background task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSample {
    /// The task's index in the study (0 for the first).
    pub task: u32,
    /// Seconds since the study started.
    pub t: f64,
    /// The run that was going on, if any.
    pub run_id: Option<i64>,
    /// What it was doing.
    pub state: TaskCondition,
    /// Percent done, when the system says.
    pub percent: Option<f64>,
    /// Bytes done, when the system says.
    pub bytes_done: Option<u64>,
}

/// A study to store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewStudy {
    /// Kind and parameters.
    pub params: StudyParams,
    /// Its runs.
    pub members: Vec<Member>,
    /// Its events, in order.
    pub events: Vec<StudyEvent>,
    /// The looks at its tasks, in order.
    pub task_samples: Vec<TaskSample>,
}

/// A stored study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Study {
    /// Its id.
    pub id: i64,
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
    /// Kind and parameters (`"kind"` and `"params"` in JSON).
    #[serde(flatten)]
    pub params: StudyParams,
    /// Its runs, by id.
    pub members: Vec<Member>,
    /// Its events, in order.
    pub events: Vec<StudyEvent>,
    /// The looks at its tasks, in order.
    pub task_samples: Vec<TaskSample>,
}

/// A stored study in a line: what `storlab results studies` lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudySummary {
    /// Its id.
    pub id: i64,
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
    /// Its kind's name (sweep, impact, qualify, ...).
    pub kind: String,
    /// How many runs it holds.
    pub runs: i64,
    /// The command line that made it, when the study keeps one.
    pub command: Option<String>,
}

impl Study {
    /// Its kind.
    pub fn kind(&self) -> StudyKind {
        self.params.kind()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_roles_read_as_typed_roles() {
        let r = Role::from_legacy(StudyKind::Impact, "loaded r3 (task ended early)");
        assert_eq!(
            r,
            Role::Repetition {
                index: 3,
                loaded: true,
                counted: false
            }
        );
        assert_eq!(r.to_string(), "loaded r3 (task ended early)");
        for (kind, text) in [
            (StudyKind::Impact, "idle r2"),
            (StudyKind::ImpactReverse, "loop 4"),
            (StudyKind::ImpactHeld, "held"),
            (StudyKind::Sweep, "threads=4 bs=4k"),
            (StudyKind::IozoneAuto, "2 worker(s), 1024 kB × 64 kB"),
            (StudyKind::IozoneImport, "iozone 64 kB × 4 kB"),
        ] {
            assert_eq!(Role::from_legacy(kind, text).to_string(), text, "{kind}");
        }
        assert_eq!(
            Role::from_legacy(StudyKind::IozoneWorkers, "3 worker(s), 512 kB × 4 kB"),
            Role::Cell {
                workers: 3,
                file_bytes: 512 << 10,
                record_bytes: 4 << 10
            }
        );
    }

    #[test]
    fn params_are_stored_apart_from_their_kind() {
        let p = StudyParams::Sweep(SweepParams {
            vary: vec!["threads".into()],
            points: vec![("threads".into(), vec!["1".into(), "2".into()])],
            command: "storlab sweep".into(),
            ..SweepParams::default()
        });
        let stored = p.to_stored().unwrap();
        assert_eq!(StudyParams::from_stored(p.kind(), stored).unwrap(), p);
        let j = serde_json::to_value(&p).unwrap();
        assert_eq!(j["kind"], "sweep");
        assert_eq!(j["params"]["vary"][0], "threads");
    }

    #[test]
    fn held_units_of_older_studies_still_read() {
        let p: HeldParams = serde_json::from_value(serde_json::json!({"unit": "IOPS"})).unwrap();
        assert_eq!(p.unit, Some(RateUnit::Iops));
        let p: HeldParams = serde_json::from_value(serde_json::json!({"unit": "MiB/s"})).unwrap();
        assert_eq!(p.unit, Some(RateUnit::BytesPerSec));
    }
}
