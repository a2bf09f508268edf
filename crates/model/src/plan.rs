//! What the engine is asked to run: one phase, fully resolved. The workload crate builds these
//! from job files and flags and validates them; the engine trusts them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use storlab_units::Rate;

use crate::settings::{PhaseSettings, RatePer};
pub use crate::values::{BackendKind, BlockSizes, DataPattern, FsyncPolicy};

/// One kind of access over one set of files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PhaseKind {
    /// Sequential write of new files (created or truncated first, as IOzone's write test).
    Write,
    /// Sequential overwrite of existing files.
    Rewrite,
    /// Sequential read.
    Read,
    /// Sequential read again (the second pass, which a cache may serve).
    Reread,
    /// Random read, uniform over the file.
    Randread,
    /// Random write, uniform over the file.
    Randwrite,
    /// Random mix of reads and writes with a read percentage.
    Randrw,
    /// Sequential mix of reads and writes with a read percentage, each direction going through
    /// the file from its start on its own (fio's `rw=rw`).
    Rw,
    /// Sequential read from the end of the file towards its start.
    Backread,
    /// Read every `stride`-th record, wrapping round until every record was read once.
    Strideread,
    /// Writes of the same record over and over (IOzone's record rewrite).
    Recrewrite,
}

impl PhaseKind {
    /// Every kind, in the order a user would expect them in a listing.
    pub const ALL: [PhaseKind; 11] = [
        PhaseKind::Write,
        PhaseKind::Rewrite,
        PhaseKind::Read,
        PhaseKind::Reread,
        PhaseKind::Randread,
        PhaseKind::Randwrite,
        PhaseKind::Randrw,
        PhaseKind::Rw,
        PhaseKind::Backread,
        PhaseKind::Strideread,
        PhaseKind::Recrewrite,
    ];

    /// The name used in job files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PhaseKind::Write => "write",
            PhaseKind::Rewrite => "rewrite",
            PhaseKind::Read => "read",
            PhaseKind::Reread => "reread",
            PhaseKind::Randread => "randread",
            PhaseKind::Randwrite => "randwrite",
            PhaseKind::Randrw => "randrw",
            PhaseKind::Rw => "rw",
            PhaseKind::Backread => "backread",
            PhaseKind::Strideread => "strideread",
            PhaseKind::Recrewrite => "recrewrite",
        }
    }

    /// Looks a kind up by its name.
    pub fn from_name(name: &str) -> Option<PhaseKind> {
        PhaseKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// True when the phase issues reads.
    pub fn reads(self) -> bool {
        matches!(
            self,
            PhaseKind::Read
                | PhaseKind::Reread
                | PhaseKind::Randread
                | PhaseKind::Randrw
                | PhaseKind::Rw
                | PhaseKind::Backread
                | PhaseKind::Strideread
        )
    }

    /// True when the phase issues writes.
    pub fn writes(self) -> bool {
        matches!(
            self,
            PhaseKind::Write
                | PhaseKind::Rewrite
                | PhaseKind::Randwrite
                | PhaseKind::Randrw
                | PhaseKind::Rw
                | PhaseKind::Recrewrite
        )
    }

    /// True when the phase writes every block of its files (so that afterwards every block
    /// carries this phase's generation).
    pub fn writes_every_block(self) -> bool {
        matches!(self, PhaseKind::Write | PhaseKind::Rewrite)
    }
}

/// A target rate and whether it applies to each worker or to all together.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateLimit {
    /// The rate.
    pub rate: Rate,
    /// True: every worker runs at `rate`; false: `rate` is shared evenly by all workers.
    pub per_worker: bool,
}

/// The region of one file that one worker works on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerFile {
    /// The file.
    pub path: PathBuf,
    /// Where the worker's region starts in the file (bytes).
    pub offset: u64,
    /// The length of the region (bytes).
    pub len: u64,
    /// True when the file is storlab's own (it may create and truncate it); false for a file
    /// or device the user named, which storlab never truncates.
    pub owned: bool,
    /// Which of the job's targets this region lies on (samples are also kept per target).
    #[serde(default)]
    pub target: u16,
    /// The worker's further files: `nrfiles` in the same directory, or the job's other targets
    /// when each worker works on them all (fio's `filename=a:b`, `opendir`). The worker serves
    /// them all, as `file_service` says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<FileRegion>,
}

/// A further file of a worker with several: the whole region it works on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRegion {
    /// The file.
    pub path: PathBuf,
    /// Where the region starts in the file (bytes).
    pub offset: u64,
    /// The length of the region (bytes).
    pub len: u64,
    /// True when the file is storlab's own (see [`WorkerFile::owned`]); a plan written before
    /// a worker's files could lie on several targets held only storlab's own (`nrfiles`).
    #[serde(default = "owned_by_default")]
    pub owned: bool,
    /// Which of the job's targets it lies on.
    #[serde(default)]
    pub target: u16,
}

fn owned_by_default() -> bool {
    true
}

/// One of a worker's files as the engine opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region<'a> {
    /// The file.
    pub path: &'a std::path::Path,
    /// Where the region starts (bytes).
    pub offset: u64,
    /// Its length (bytes).
    pub len: u64,
    /// storlab may create and truncate the file.
    pub owned: bool,
    /// Which of the job's targets it lies on.
    pub target: u16,
}

impl WorkerFile {
    /// One worker's region on one file (with no further files).
    pub fn one(path: PathBuf, offset: u64, len: u64, owned: bool, target: u16) -> WorkerFile {
        WorkerFile {
            path,
            offset,
            len,
            owned,
            target,
            more: Vec::new(),
        }
    }

    /// Every file the worker serves, the first first.
    pub fn regions(&self) -> impl Iterator<Item = Region<'_>> {
        let first = Region {
            path: &self.path,
            offset: self.offset,
            len: self.len,
            owned: self.owned,
            target: self.target,
        };
        std::iter::once(first).chain(self.more.iter().map(|m| Region {
            path: &m.path,
            offset: m.offset,
            len: m.len,
            owned: m.owned,
            target: m.target,
        }))
    }

    /// The bytes of all its regions together.
    pub fn total_len(&self) -> u64 {
        self.regions().map(|r| r.len).sum()
    }
}

/// The range of write generations a verified read accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationRange {
    /// The oldest acceptable generation.
    pub min: u32,
    /// The newest acceptable generation.
    pub max: u32,
}

/// One phase, fully resolved: its kind, every job setting with the defaults applied, and what
/// the workload crate derived from them (the workers' regions, the submission batch, the
/// verification generations, the run's seed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhasePlan {
    /// The kind of access.
    pub kind: PhaseKind,
    /// Every job setting (crates/model/src/settings.rs), resolved.
    pub settings: PhaseSettings,
    /// I/Os queued before they are submitted together (1 ≤ submit_batch ≤ iodepth).
    pub submit_batch: u32,
    /// Stamp every 4 KiB written with a verification header and checksum (whenever the job
    /// verifies anywhere, so that a later phase or run can check what this one wrote).
    pub write_headers: bool,
    /// Generations a verified read accepts.
    pub verify_generations: GenerationRange,
    /// The generation this phase writes.
    pub generation: u32,
    /// Seed of this run: stamps headers and seeds the offset generators.
    pub seed: u64,
    /// One entry per worker.
    pub workers: Vec<WorkerFile>,
    /// The phase ran at the same time as the phase before it (fio's jobs without a stonewall
    /// between them), each on its own workers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub together: bool,
    /// Its name, where the job gave one (a fio job's section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl PhasePlan {
    /// The rate limit, if the phase has one.
    pub fn rate(&self) -> Option<RateLimit> {
        self.settings.rate.map(|rate| RateLimit {
            rate,
            per_worker: self.settings.rate_per == RatePer::Worker,
        })
    }

    /// True when the phase checks what it reads (a phase that writes with verify_backlog
    /// reads back what it wrote).
    pub fn verifies(&self) -> bool {
        self.settings.verify && (self.kind.reads() || (self.kind.writes() && self.settings.verify_backlog.is_some()))
    }
}

/// The verification granularity: every 4 KiB written carries a header.
pub const VERIFY_BLOCK: u64 = 4096;
