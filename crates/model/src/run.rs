//! Runs as stored: what produced them, how they ended, each phase's plan and result, the
//! environment and the events. `storlab run` writes these through the store and `storlab
//! results show` reads the same types back.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::env::Environment;
use crate::plan::{BackendKind, BlockSizes, PhaseKind, PhasePlan};
use crate::result::PhaseResult;

/// Declares a string-named enum: its variants, their names (in the database, in JSON and on
/// the command line), `name`, `from_name`, `ALL`, Display and serde as the name. Unknown names
/// are refused with the list of known ones.
macro_rules! named_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $($(#[$vm])* $variant,)+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The name stored and shown.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value of a name, or None.
            pub fn from_name(s: &str) -> Option<$name> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The names, comma-separated (for messages).
            pub fn names() -> String {
                Self::ALL.iter().map(|v| v.name()).collect::<Vec<_>>().join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<$name, String> {
                $name::from_name(s).ok_or_else(|| {
                    let names = $name::names();
                    let known: Vec<&str> = names.split(", ").collect();
                    format!(
                        "'{s}' is not a {}{}: expected one of {names}",
                        stringify!($name),
                        $crate::names::did_you_mean(s, known.iter().copied())
                    )
                })
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use named_enum;

named_enum! {
    /// What produced a run. A new kind comes with a new store migration, so that a storlab too
    /// old to know it refuses the database instead of misreading it.
    pub enum RunKind {
        /// `storlab run`.
        Run = "run",
        /// `storlab demo`.
        Demo = "demo",
        /// One cell of `storlab iozone`.
        Iozone = "iozone",
        /// One point of `storlab sweep`.
        Sweep = "sweep",
        /// An idle repetition of a cost-to-the-users impact study.
        ImpactIdle = "impact-idle",
        /// A repetition with the task running.
        ImpactLoaded = "impact-loaded",
        /// One run of the job looped while the task runs (the cost to the task).
        ImpactLoop = "impact-loop",
        /// The job held at its rate through the tasks.
        ImpactHeld = "impact-held",
        /// `storlab scan`.
        Scan = "scan",
        /// Results imported from another tool (fio, IOzone).
        Import = "import",
        /// A data challenge on one host (`storlab challenge run`, or one agent's share).
        Challenge = "challenge",
        /// A metadata workload (`storlab meta`): a phase per namespace operation.
        Meta = "meta",
        /// A repetition of a job of a qualification (`storlab qualify`).
        Qualify = "qualify",
        /// One side of a round of `storlab compare`.
        Compare = "compare",
    }
}

named_enum! {
    /// How a run ended (or that it has not yet).
    pub enum RunStatus {
        /// Still going (or its process died; the next open marks it aborted).
        Running = "running",
        /// Finished.
        Ok = "ok",
        /// Stopped by Ctrl-C or killed: the phases finished before are kept.
        Aborted = "aborted",
        /// A phase failed (its error is the status detail).
        Failed = "failed",
        /// Finished, but verification found bad blocks.
        Corrupt = "corrupt",
        /// A scan that could not count every entry: its figures are a lower bound.
        Partial = "partial",
    }
}

named_enum! {
    /// What happened during a run.
    pub enum RunEventKind {
        /// A phase began.
        PhaseStart = "phase-start",
        /// A phase failed.
        PhaseFailed = "phase-failed",
        /// Ctrl-C stopped the run.
        Interrupted = "interrupted",
    }
}

/// A user's tag on a run: `fs=ext4`.
pub type Tag = (String, String);

/// Parses `KEY=VALUE` (the one rule for every `--tag`): the key is trimmed and must not be
/// empty, the value is trimmed and may be.
pub fn parse_tag(s: &str) -> Result<Tag, String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("'{s}' is not KEY=VALUE (e.g. fs=ext4)")),
    }
}

/// A phase's name: one of storlab's kinds, or the other tool's name for an imported phase that
/// has none here (fio's `rw`, `trim`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PhaseName {
    /// A storlab phase.
    Kind(PhaseKind),
    /// Another tool's name.
    Other(String),
}

impl PhaseName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        match self {
            PhaseName::Kind(k) => k.name(),
            PhaseName::Other(s) => s,
        }
    }

    /// A name read from another tool: storlab's kind when it has one of that name.
    pub fn from_name(s: &str) -> PhaseName {
        PhaseKind::from_name(s).map_or_else(|| PhaseName::Other(s.to_string()), PhaseName::Kind)
    }
}

impl fmt::Display for PhaseName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a phase was asked to do: storlab's own resolved plan, or what an imported file says.
// A run holds a handful of phases, so the plan's size (every setting resolved) costs nothing
// worth a box and the indirection at every use.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseParams {
    /// A phase storlab ran.
    Plan(PhasePlan),
    /// A phase imported from another tool.
    Imported(ImportedParams),
    /// A metadata phase storlab ran (`storlab meta`).
    Meta(crate::meta::MetaParams),
}

/// What an imported file says of one phase's workload.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImportedParams {
    /// The tool and its version: "fio 3.33", "IOzone 3.506".
    pub tool: String,
    /// The tool's own name of the test ("Initial write", "Children see throughput for 4
    /// readers"), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// The block (record) size, bytes, when the file gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bs: Option<u64>,
    /// The file size per worker, bytes, when the file gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    /// Workers, when the file gives them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// The tool's own options for this phase, verbatim (fio's job and global options).
    #[serde(skip_serializing_if = "serde_json::Value::is_null")]
    pub options: serde_json::Value,
    /// What the tool does not report or reports differently ("no latency").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One phase of a stored run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Order in the run, from 0.
    pub seq: u32,
    /// What kind of access.
    pub kind: PhaseName,
    /// What it was asked to do.
    pub params: PhaseParams,
    /// What it measured.
    pub result: PhaseResult,
    /// The page cache could have flattered it: a file set under three times RAM without
    /// O_DIRECT or (for writes) a flush.
    pub cache_flattered: bool,
}

impl Phase {
    /// The plan, for a phase storlab ran.
    pub fn plan(&self) -> Option<&PhasePlan> {
        match &self.params {
            PhaseParams::Plan(p) => Some(p),
            PhaseParams::Imported(_) | PhaseParams::Meta(_) => None,
        }
    }

    /// The block sizes, when known.
    pub fn block_sizes(&self) -> Option<BlockSizes> {
        match &self.params {
            PhaseParams::Plan(p) => Some(p.settings.bs.clone()),
            PhaseParams::Imported(i) => i.bs.map(BlockSizes::Fixed),
            PhaseParams::Meta(_) => None,
        }
    }

    /// How many workers ran it, when known.
    pub fn workers(&self) -> Option<u32> {
        match &self.params {
            PhaseParams::Plan(p) => Some(p.workers.len() as u32),
            PhaseParams::Imported(i) => i.workers,
            PhaseParams::Meta(m) => Some(m.workers),
        }
    }

    /// Bytes of the file set (all workers' regions), when known.
    pub fn file_set_bytes(&self) -> Option<u64> {
        match &self.params {
            PhaseParams::Plan(p) => Some(p.workers.iter().map(|w| w.total_len()).sum()),
            PhaseParams::Imported(i) => Some(i.file_size? * i.workers.unwrap_or(1) as u64),
            PhaseParams::Meta(m) => Some(m.file_size * m.items_per_worker * m.workers as u64),
        }
    }

    /// (file size per worker, record size) when the phase had one of each: a cell of a file
    /// size × record size matrix.
    pub fn file_and_record(&self) -> Option<(u64, u64)> {
        match &self.params {
            PhaseParams::Plan(p) => match p.settings.bs {
                BlockSizes::Fixed(b) => Some((p.workers.first()?.len, b)),
                BlockSizes::Mix(_) => None,
            },
            PhaseParams::Imported(i) => Some((i.file_size?, i.bs?)),
            PhaseParams::Meta(_) => None,
        }
    }

    /// The back-end, for a phase storlab ran.
    pub fn backend(&self) -> Option<BackendKind> {
        self.plan().map(|p| p.settings.engine)
    }

    /// Bad blocks verification found (None when the phase did not verify).
    pub fn bad_blocks(&self) -> Option<u64> {
        self.result.verify.as_ref().map(|v| v.bad_blocks)
    }
}

/// A run as listed: who, when, what, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Its id in the database.
    pub id: i64,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended.
    pub finished_at: Option<String>,
    /// The host it ran on.
    pub host: String,
    /// What produced it.
    pub kind: RunKind,
    /// The job's name.
    pub job_name: Option<String>,
    /// How it ended.
    pub status: RunStatus,
    /// Why, when it did not end well.
    pub status_detail: Option<String>,
    /// Some phase may have been flattered by the page cache.
    pub cache_flattered: bool,
    /// Imported from another tool.
    pub imported: bool,
    /// The user's tags, by key.
    pub tags: Vec<Tag>,
    /// How many phases are stored.
    pub phase_count: u32,
}

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// When (RFC 3339, UTC).
    pub at: String,
    /// What.
    pub kind: RunEventKind,
    /// In words.
    pub detail: String,
}

/// A run with everything stored for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: Run,
    /// The command line that started it.
    pub command: Option<String>,
    /// The job as given and as resolved (storlab's runs), the scan's options, or the imported
    /// file's description: kept for the record, shown whole, never read back by key.
    pub job: serde_json::Value,
    /// What it ran on.
    pub environment: Environment,
    /// Its phases, in order.
    pub phases: Vec<Phase>,
    /// What happened, in order.
    pub events: Vec<RunEvent>,
    /// The MPI ranks, for a run many processes ran together (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankRow>,
    /// Each rank's part of each phase, by phase then rank (empty for a run of one process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_phases: Vec<RankPhaseRow>,
}

/// A run as it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRun {
    /// What produces it.
    pub kind: RunKind,
    /// The host.
    pub host: String,
    /// The job's name.
    pub job_name: Option<String>,
    /// The job (see [`RunDetail::job`]).
    pub job: serde_json::Value,
    /// The command line.
    pub command: String,
    /// The user's tags.
    pub tags: Vec<Tag>,
}

/// A run imported from another tool, ready to store whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedRun {
    /// The run (kind `import`).
    pub run: NewRun,
    /// When it ran (RFC 3339, UTC), as the file says.
    pub started_at: String,
    /// What is known of its machine.
    pub environment: Environment,
    /// Its phases.
    pub phases: Vec<Phase>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_named() {
        for k in RunKind::ALL {
            assert_eq!(RunKind::from_name(k.name()), Some(*k));
            let j = serde_json::to_string(k).unwrap();
            assert_eq!(serde_json::from_str::<RunKind>(&j).unwrap(), *k);
        }
        let e = serde_json::from_str::<RunStatus>("\"fine\"").unwrap_err().to_string();
        assert!(e.contains("'fine'") && e.contains("aborted"), "{e}");
    }

    #[test]
    fn phase_names_keep_other_tools_names() {
        assert_eq!(PhaseName::from_name("randread"), PhaseName::Kind(PhaseKind::Randread));
        assert_eq!(PhaseName::from_name("trimwrite"), PhaseName::Other("trimwrite".into()));
        let j = serde_json::to_string(&PhaseName::Kind(PhaseKind::Write)).unwrap();
        assert_eq!(j, "\"write\"");
        assert_eq!(
            serde_json::from_str::<PhaseName>("\"randtrim\"").unwrap(),
            PhaseName::Other("randtrim".into())
        );
        // fio's sequential mix is storlab's own kind now: an imported one reads as it.
        assert_eq!(
            serde_json::from_str::<PhaseName>("\"rw\"").unwrap(),
            PhaseName::Kind(PhaseKind::Rw)
        );
    }

    #[test]
    fn tags_have_one_rule() {
        assert_eq!(parse_tag(" fs = ext4 "), Ok(("fs".into(), "ext4".into())));
        assert_eq!(parse_tag("note="), Ok(("note".into(), String::new())));
        assert!(parse_tag("=x").is_err());
        assert!(parse_tag("fs").is_err());
    }
}

/// One MPI rank of a run that many processes ran together (`mpirun storlab run`): where it ran
/// and how its clock stood against rank 0's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankRow {
    /// The rank, from 0.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// Its clock minus rank 0's, seconds (measured at start by a ping-pong over MPI).
    pub clock_offset_seconds: f64,
    /// Its machine.
    pub environment: Environment,
}

/// One rank's part of one phase of a run many processes ran together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankPhaseRow {
    /// The phase's order in the run, from 0.
    pub seq: u32,
    /// The rank.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// When its measured interval began and ended, seconds from the phase's common start (the
    /// earliest rank's start), on rank 0's clock.
    pub start_seconds: f64,
    /// See `start_seconds`.
    pub end_seconds: f64,
    /// What it measured on its own.
    pub result: PhaseResult,
}
