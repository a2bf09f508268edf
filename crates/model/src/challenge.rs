//! The data challenge (`storlab challenge`, seed 002): writers create files in pools, readers
//! read, verify and delete them, a catalogue keeps every file's life, samples record each
//! pool's throughput in each direction. These are the challenge's stored shapes: its
//! definition, the states of a file, its events and the account at the end.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::run::named_enum;

/// A pool: a name and the directory its files go in (several pools may share a filesystem).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pool {
    /// Its name (`P1`), as the statistics name it.
    pub name: String,
    /// The directory; storlab's files go in a subdirectory of its own.
    pub path: PathBuf,
}

named_enum! {
    /// How writers choose a pool for the next file.
    pub enum Spread {
        /// In turn, the next pool that takes files.
        Equal = "equal",
        /// The pool with the lowest write rate over the last long-term window.
        LeastLoaded = "least-loaded",
    }
}

named_enum! {
    /// What a fault does.
    pub enum FaultAction {
        /// Unmount the pool's filesystem lazily; remount it after FOR.
        Unmount = "unmount",
        /// Remount the pool's filesystem read-only; read-write again after FOR.
        ReadOnly = "read-only",
        /// Detach the pool's loop device (the device pulled); nothing brings it back.
        Detach = "detach",
        /// Run a command named in the fault plan (on this host only); FOR runs nothing.
        Command = "command",
        /// No new files for the pool; its readers empty it. Taken back after FOR.
        Drain = "drain",
        /// Stop the writers (TARGET: all, or a number of them); restart them after FOR.
        StopWriters = "stop-writers",
        /// Stop the readers, as stop-writers.
        StopReaders = "stop-readers",
        /// Start a background task of `storlab impact`'s kinds (TARGET: the task).
        Task = "task",
    }
}

/// One planned fault: at `at` seconds into the challenge, `action` on `target`, undone after
/// `for_seconds` where the action can be undone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    /// Seconds from the start.
    pub at: f64,
    /// What.
    pub action: FaultAction,
    /// A pool's name, a number of workers (or `all`), a task, or a command.
    pub target: String,
    /// How long until it is undone (None: not undone).
    pub for_seconds: Option<f64>,
}

/// A challenge as defined: everything that decides what it does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChallengeSpec {
    /// The pools.
    pub pools: Vec<Pool>,
    /// Writer threads (per host).
    pub writers: u32,
    /// Reader threads (per host).
    pub readers: u32,
    /// Each file's size in bytes.
    pub file_size: u64,
    /// The request size in bytes.
    pub bs: u64,
    /// How long it runs, in seconds (None: until `files` are done).
    pub duration: Option<f64>,
    /// How many files are written in all (None: as many as the duration allows).
    pub files: Option<u64>,
    /// How writers choose pools.
    pub spread: Spread,
    /// At most this many finished, unread files per pool; writers wait beyond it.
    pub backlog: u64,
    /// Seconds between samples.
    pub interval: f64,
    /// Seconds over which the long-term averages are taken.
    pub lt: f64,
    /// The seed of the files' data.
    pub seed: u64,
    /// The fault plan.
    pub faults: Vec<Fault>,
    /// Seconds a host's claim on a file in flight lasts without renewal: after it, another
    /// host takes the file over (a dead agent's files are reclaimed).
    #[serde(default = "default_lease")]
    pub lease: f64,
    /// Files written and read with O_DIRECT (past the page cache: the devices' figures).
    #[serde(default)]
    pub direct: bool,
}

fn default_lease() -> f64 {
    60.0
}

named_enum! {
    /// Where a file is in its life.
    pub enum FileState {
        /// A writer has it (being written).
        Writing = "writing",
        /// Written whole, waiting for a reader.
        Written = "written",
        /// A reader has it (being read and verified).
        Reading = "reading",
        /// Read, every block verified, and deleted.
        Done = "done",
        /// Read, and a block did not verify (named with its offset); deleted.
        Corrupted = "corrupted",
        /// Gone before it was read whole (a pool lost, a write failed), with why.
        Lost = "lost",
    }
}

/// A file the catalogue hands to a writer or a reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTicket {
    /// Its number in the challenge (from 1).
    pub seq: u64,
    /// Its pool's index in the spec.
    pub pool: usize,
    /// Its file name inside the pool's directory.
    pub name: String,
    /// The seed its data is stamped with.
    pub seed: u64,
}

/// One sample: the bytes moved per pool in each direction during one interval, on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChallengeSample {
    /// The host that moved them.
    pub host: String,
    /// The interval's number (from 0).
    pub idx: u64,
    /// Seconds from the start to the interval's end.
    pub t: f64,
    /// The interval's length in seconds.
    pub seconds: f64,
    /// Bytes read per pool (by the spec's order).
    pub read: Vec<u64>,
    /// Bytes written per pool.
    pub written: Vec<u64>,
    /// Per pool, its busiest device over the interval — (busy share, average queue) from
    /// /proc/diskstats, through md, dm, btrfs and loop to the devices beneath — or None where
    /// the pool's devices were not read (what bounded the pool in that interval: docs/bound.md).
    #[serde(default)]
    pub device: Vec<Option<(f64, f64)>>,
}

/// Something that happened during a challenge (a fault, a pool full, a worker stopped).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChallengeEvent {
    /// Seconds from the start.
    pub t: f64,
    /// The host it happened on.
    pub host: String,
    /// What kind of thing (fault, undo, pool-full, lost, corrupted, note).
    pub kind: String,
    /// In words.
    pub detail: String,
}

/// A file that did not end well, named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedFile {
    /// Its pool.
    pub pool: String,
    /// Its path.
    pub path: String,
    /// What happened (for a corrupted file, the first bad block's offset and reason).
    pub why: String,
}

/// The catalogue's account: how many files are where, and the invariant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// Files written whole.
    pub written: u64,
    /// Files read whole (verified or corrupted).
    pub read: u64,
    /// Files read with every block verified.
    pub verified: u64,
    /// Files deleted after reading.
    pub deleted: u64,
    /// Files with a block that did not verify, named.
    pub corrupted: Vec<NamedFile>,
    /// Files lost, named, with why.
    pub lost: Vec<NamedFile>,
    /// Of the lost, those lost after they were written whole.
    pub lost_written: u64,
    /// Files being written now.
    pub writing: u64,
    /// Files being read now.
    pub reading: u64,
    /// Files written and waiting for a reader.
    pub waiting: u64,
    /// Partly written files removed and written again (a crashed or dead writer's).
    #[serde(default)]
    pub rewritten: u64,
}

impl Account {
    /// Files in flight: being written or read.
    pub fn in_flight(&self) -> u64 {
        self.writing + self.reading
    }

    /// Written files not read: waiting, or taken by a reader that has not finished.
    pub fn left_over(&self) -> u64 {
        self.waiting + self.reading
    }

    /// True when every written file is accounted for: written = read + lost (after being
    /// written) + left over.
    pub fn holds(&self) -> bool {
        self.written == self.read + self.lost_written + self.left_over()
    }
}

/// One row: a name (Tot-ReadAverage, P1-Write…) and its figures in bytes per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatRow {
    /// The row's name, as the seed names it.
    pub name: String,
    /// The pool (None for the total).
    pub pool: Option<String>,
    /// Read, Write or ReadWrite.
    pub direction: String,
    /// Largest long-term average, bytes/s.
    pub max: f64,
    /// Smallest.
    pub min: f64,
    /// Their mean.
    pub avg: f64,
    /// Their standard deviation (n − 1; weighted by interval length where the intervals are
    /// not all whole: crates/stats' `intervals::weighted_row`).
    pub sd: f64,
}

impl StatRow {
    /// SD / AVG in percent (0 when the average is 0).
    pub fn sd_percent(&self) -> f64 {
        if self.avg == 0.0 {
            0.0
        } else {
            100.0 * self.sd / self.avg
        }
    }
}

/// The statistics of a window of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The first and last sample taken (numbered from 0 over the merged series).
    pub first: u64,
    /// The last.
    pub last: u64,
    /// Hours from the start to the last sample's end.
    pub hours: f64,
    /// The rows: the three totals, then each pool's three.
    pub rows: Vec<StatRow>,
    /// Per pool, the share of the window's time its busiest device was saturated (busy 80 % or
    /// more with 1.5 I/Os or more queued: the device bounded the pool), over the intervals whose
    /// devices were read; None where none were (tmpfs, NFS, samples stored before).
    #[serde(default)]
    pub device_bound: Vec<(String, Option<f64>)>,
}

/// What one host did in its share of a challenge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostOutcome {
    /// Seconds it ran.
    pub seconds: f64,
    /// Bytes written and read here.
    pub bytes_written: u64,
    /// Bytes read here.
    pub bytes_read: u64,
    /// Seconds writers spent waiting (backlog full, no pool to take a file), summed over writers.
    pub writer_idle: f64,
    /// Seconds readers spent waiting for a file, summed over readers.
    pub reader_idle: f64,
    /// True when stopped by Ctrl-C.
    pub interrupted: bool,
    /// Outages of the results database this host rode out (each reconnected to and its
    /// catalogue squared up).
    #[serde(default)]
    pub outages: u64,
    /// Samples and events dropped because more waited for the database than are kept.
    #[serde(default)]
    pub dropped: u64,
    /// What the check at the end found wrong (files on disk the catalogue does not account
    /// for, files it says are waiting that are missing or short).
    pub problems: Vec<String>,
}

/// Bytes (written, read) per pool, summed over every host's samples.
pub fn bytes_per_pool(samples: &[ChallengeSample], pools: usize) -> Vec<(u64, u64)> {
    (0..pools)
        .map(|i| {
            let w = samples.iter().map(|s| s.written.get(i).copied().unwrap_or(0)).sum();
            let r = samples.iter().map(|s| s.read.get(i).copied().unwrap_or(0)).sum();
            (w, r)
        })
        .collect()
}

/// Bytes (agent, written, read) per agent, over every pool, agents in name order.
pub fn bytes_per_agent(samples: &[ChallengeSample]) -> Vec<(String, u64, u64)> {
    let mut per: std::collections::BTreeMap<&str, (u64, u64)> = std::collections::BTreeMap::new();
    for s in samples {
        let e = per.entry(s.host.as_str()).or_default();
        e.0 += s.written.iter().sum::<u64>();
        e.1 += s.read.iter().sum::<u64>();
    }
    per.into_iter().map(|(h, (w, r))| (h.to_string(), w, r)).collect()
}

/// What one host's share of a challenge came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Taken {
    /// The run it is stored under.
    pub run_id: i64,
    /// What this host did.
    pub outcome: HostOutcome,
    /// The catalogue's account after it.
    pub account: Account,
    /// What the end's check found wrong.
    pub problems: Vec<String>,
    /// The challenge's statistics so far.
    pub stats: Stats,
    /// This host ended the challenge.
    pub ended: bool,
    /// The run's status.
    pub status: crate::run::RunStatus,
}
