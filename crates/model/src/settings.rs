//! Every job setting, declared once: its job-file key (the flag is the key with `-` for `_`),
//! the name of its value, its help text, its default and the function that reads it. From this
//! one table come the job file's keys and the command line's flags (crates/workload and the
//! binary read [`SETTINGS`]), the unset-or-given [`Settings`] a job file, a phase and the flags
//! each carry, their override order ([`Settings::overlay`]), the resolved [`PhaseSettings`]
//! every [`crate::plan::PhasePlan`] carries to the engine, and docs/run.md's key reference
//! ([`reference()`], checked by a test).
//!
//! A new setting is a line in the table below (and, when its value is of a new kind, the
//! function that reads it) and its use in the engine: nothing else needs to change.

use serde::{Deserialize, Serialize};
use storlab_units::{Duration, Rate};

use crate::values::{BackendKind, BlockSizes, DataPattern, FsyncPolicy};

pub mod headings;
mod read;
mod text;
use read::*;
pub use read::{read_distribution, read_memory_policy, read_range_flags, read_steady, read_zoned_abs, MAX_PATTERN};
pub use text::SettingText;

/// Whether a target rate is shared by all workers or applies to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RatePer {
    /// The rate is the total, shared evenly by the workers.
    Total,
    /// Every worker runs at the rate.
    Worker,
}

/// The hint given to the kernel about each file before a phase (posix_fadvise over the
/// worker's region).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fadvise {
    /// No hint.
    None,
    /// POSIX_FADV_SEQUENTIAL: read ahead aggressively.
    Sequential,
    /// POSIX_FADV_RANDOM: no read-ahead.
    Random,
    /// POSIX_FADV_NOREUSE: the data is used once.
    Noreuse,
    /// POSIX_FADV_DONTNEED: drop the region's clean cached pages first, so that a buffered
    /// read starts from the device rather than from what an earlier phase left in the cache.
    Dontneed,
}

/// How a write phase allocates the new files it writes before it writes them (fio's
/// `fallocate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallocate {
    /// Nothing: the writes allocate as they go.
    None,
    /// fallocate(2) of each worker's region, extending the file.
    Posix,
    /// fallocate(2) with FALLOC_FL_KEEP_SIZE: blocks reserved, the size unchanged.
    Keep,
    /// The file's length set first (ftruncate), nothing allocated.
    Truncate,
}

/// The system call a flush makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncCall {
    /// fsync(2): the file's data and all its metadata.
    Fsync,
    /// fdatasync(2): the data, and only the metadata needed to read it back (its size), as
    /// databases' logs (and etcd's disk check) flush.
    Fdatasync,
    /// sync_file_range(2) over the file with these flags (SYNC_FILE_RANGE_WAIT_BEFORE 1,
    /// _WRITE 2, _WAIT_AFTER 4; fio's sync_file_range): starts (and may wait for) the write
    /// of the file's dirty pages, without the metadata or the device's cache.
    SyncFileRange(u8),
}

impl SyncCall {
    /// sync_file_range(2)'s flags by fio's names.
    pub const RANGE_FLAGS: [(&'static str, u8); 3] = [("wait_before", 1), ("write", 2), ("wait_after", 4)];
}

/// How a target rate spaces its I/Os.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly.
    Linear,
    /// Gaps drawn from the exponential distribution with the rate's mean (a Poisson process).
    Poisson,
}

/// Where random offsets fall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Uniformly over the region.
    Uniform,
    /// Zones in order from the region's start: (percent of the I/Os, percent of the region).
    Zoned(Vec<(u8, u8)>),
    /// Zones in order from the region's start with absolute sizes (fio's `zoned_abs`):
    /// (percent of the I/Os, bytes); the zones may leave the region's end untouched and must
    /// not pass it.
    #[serde(rename = "zoned_abs")]
    ZonedAbs(Vec<(u8, u64)>),
    /// Blocks ranked by a Zipf law of exponent theta (fio's `zipf:THETA`): the k-th most
    /// used block is hit in proportion to 1/k^theta; the ranks are scattered over the region.
    Zipf(f64),
    /// Blocks ranked by a Pareto law of shape h (fio's `pareto:H`, 0 < h < 1: smaller is more
    /// skewed), scattered over the region.
    Pareto(f64),
    /// Blocks drawn around a centre with a deviation of this percent of the region (fio's
    /// `normal:DEV` or `gauss:DEV`), scattered over the region.
    Normal(f64),
}

/// Which failed I/Os a phase goes on past (fio's continue_on_error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorsGoneOn {
    /// None: the first error ends the phase.
    None,
    /// Failed reads.
    Read,
    /// Failed writes.
    Write,
    /// Failed reads and writes.
    Io,
}

impl ErrorsGoneOn {
    /// True when a failed read (or write) is gone on past.
    pub fn covers(self, write: bool) -> bool {
        matches!(
            (self, write),
            (ErrorsGoneOn::Io, _) | (ErrorsGoneOn::Read, false) | (ErrorsGoneOn::Write, true)
        )
    }
}

/// Error numbers (errno), read and written by name where Linux has one (`ENOSPC`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrnoList(pub Vec<i32>);

/// The errno names storlab reads and writes (Linux's numbers): the errors storage gives.
pub const ERRNO_NAMES: &[(&str, i32)] = &[
    ("EPERM", 1),
    ("ENOENT", 2),
    ("EINTR", 4),
    ("EIO", 5),
    ("ENXIO", 6),
    ("EBADF", 9),
    ("EAGAIN", 11),
    ("ENOMEM", 12),
    ("EACCES", 13),
    ("EFAULT", 14),
    ("EBUSY", 16),
    ("ENODEV", 19),
    ("EINVAL", 22),
    ("EFBIG", 27),
    ("ENOSPC", 28),
    ("ESPIPE", 29),
    ("EROFS", 30),
    ("ENOTTY", 25),
    ("ENODATA", 61),
    ("ETIME", 62),
    ("EILSEQ", 84),
    ("EOPNOTSUPP", 95),
    ("ETIMEDOUT", 110),
    ("ESTALE", 116),
    ("EREMOTEIO", 121),
    ("EDQUOT", 122),
    ("ENOMEDIUM", 123),
    ("EMEDIUMTYPE", 124),
];

impl ErrnoList {
    /// Reads `ENOSPC,EIO` (also `:`-separated, as fio writes its lists, and numbers).
    pub fn parse(s: &str) -> Result<ErrnoList, String> {
        let mut out = Vec::new();
        for part in s.split([',', ':']).map(str::trim).filter(|p| !p.is_empty()) {
            let n = match part.parse::<i32>() {
                Ok(n) if n > 0 => n,
                _ => ERRNO_NAMES
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(part))
                    .map(|(_, n)| *n)
                    .ok_or_else(|| {
                        format!(
                            "'{part}' is not an error storlab knows: expected a number or one of {}",
                            ERRNO_NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                        )
                    })?,
            };
            if !out.contains(&n) {
                out.push(n);
            }
        }
        Ok(ErrnoList(out))
    }

    /// True when the list holds `errno`.
    pub fn contains(&self, errno: i32) -> bool {
        self.0.contains(&errno)
    }
}

impl std::fmt::Display for ErrnoList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .0
            .iter()
            .map(|n| match ERRNO_NAMES.iter().find(|(_, v)| v == n) {
                Some((name, _)) => name.to_string(),
                None => n.to_string(),
            })
            .collect();
        f.write_str(&names.join(","))
    }
}

/// fio's zonemode=strided: I/O stays in a zone of `range` bytes until `size` bytes have moved
/// there, then the next zone starts `range + skip` bytes after the last one's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Strided {
    /// Bytes moved in each zone (fio's zonesize).
    pub size: u64,
    /// The zone's span (fio's zonerange; zonesize when not given).
    pub range: u64,
    /// Bytes left out between zones (fio's zoneskip).
    pub skip: u64,
}

/// fio's zonemode=zbd on a file or device without zones of its own: zones of `size` bytes
/// emulated over it, each written only at its write pointer (fio's zbd.c, ZBD_NONE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zbd {
    /// Each zone's span (fio's zonesize).
    pub size: u64,
    /// The bytes of a zone that may be written (fio's zonecapacity; `size` when not given).
    pub capacity: u64,
}

/// A list of CPUs (or NUMA nodes) as Linux writes them: `0-3,8,10-11`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuList(pub Vec<u32>);

impl CpuList {
    /// Reads `0-3,8` (also fio's `0-1:2`-free forms: ranges and single numbers).
    pub fn parse(s: &str) -> Result<CpuList, String> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let a: u32 = a
                .trim()
                .parse()
                .map_err(|_| format!("'{part}' in '{s}' is not a CPU number or range"))?;
            let b: u32 = b
                .trim()
                .parse()
                .map_err(|_| format!("'{part}' in '{s}' is not a CPU number or range"))?;
            if b < a || b > 4095 {
                return Err(format!("'{part}' in '{s}' is not a range of CPUs from 0 to 4095"));
            }
            out.extend(a..=b);
        }
        out.sort_unstable();
        out.dedup();
        if out.is_empty() {
            return Err(format!("'{s}' names no CPU"));
        }
        Ok(CpuList(out))
    }
}

/// An I/O priority: class 1 (real time), 2 (best effort) or 3 (idle), and a level 0–7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoPriority {
    /// 1 rt, 2 be, 3 idle (linux/ioprio.h).
    pub class: u8,
    /// 0 (highest) to 7.
    pub level: u8,
}

impl IoPriority {
    /// The value ioprio_set(2) takes: the class in the top bits, the level below.
    pub fn value(self) -> u16 {
        (self.class as u16) << 13 | self.level as u16
    }
}

/// Priorities carried by the I/Os themselves (fio's cmdprio_percentage, cmdprio_class,
/// cmdprio): this share of the reads and of the writes go with this priority; the others with
/// the worker's own (`priority`, or the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandPriority {
    /// Percent of the reads.
    pub read_percent: u8,
    /// Percent of the writes.
    pub write_percent: u8,
    /// The priority they carry.
    pub priority: IoPriority,
}

/// How workers share one file or device target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Share {
    /// Each worker its own equal part.
    Split,
    /// Every worker over the whole region.
    Whole,
}

/// Which of its files a worker with several (`nrfiles`) serves next (fio's file_service_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileService {
    /// The next file in turn after this many I/Os on one (fio's roundrobin, 1 by default).
    RoundRobin(u32),
    /// One file until its pass is done, then the next (fio's sequential).
    Sequential,
    /// A file drawn at random after this many I/Os on one (fio's random).
    Random(u32),
}

/// Each file's size when a worker has several (`filesize`): one size, or a range from which
/// each file's is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSizes {
    /// The smallest.
    pub low: u64,
    /// The largest (equal to `low` for one size).
    pub high: u64,
}

/// How workers share `cpus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpusPolicy {
    /// Every worker on every CPU of the list.
    Shared,
    /// Worker i on the list's i-th CPU (wrapping round).
    Split,
}

/// Where a worker's memory comes from (set_mempolicy(2)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryPolicy {
    /// The process's default.
    Default,
    /// The node the allocating CPU is on.
    Local,
    /// This node first.
    Prefer(u32),
    /// Only these nodes.
    Bind(Vec<u32>),
    /// Spread over these nodes.
    Interleave(Vec<u32>),
}

/// fio's steady-state criterion: which figure, judged how, within what.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Steady {
    /// IOPS (true) or bytes/s (false).
    pub iops: bool,
    /// The least-squares slope over the window (true) or the largest deviation from its mean.
    pub slope: bool,
    /// The limit.
    pub limit: f64,
    /// The limit is a percentage of the window's mean.
    pub percent: bool,
}

impl Steady {
    /// fio's name of the criterion: `iops_slope`, `bw`…
    pub fn name(&self) -> String {
        format!(
            "{}{}",
            if self.iops { "iops" } else { "bw" },
            if self.slope { "_slope" } else { "" }
        )
    }

    /// The criterion's value over `window` (each sample's figure): the slope per sample, or
    /// the largest deviation from the mean, as a percentage of the mean when `percent`. None
    /// while fewer than two samples.
    pub fn criterion(&self, window: &[f64]) -> Option<f64> {
        let n = window.len();
        if n < 2 {
            return None;
        }
        let mean = window.iter().sum::<f64>() / n as f64;
        let raw = if self.slope {
            // Least squares over x = 0..n (fio's steadystate.c).
            let xm = (n as f64 - 1.0) / 2.0;
            let sxy: f64 = window
                .iter()
                .enumerate()
                .map(|(i, y)| (i as f64 - xm) * (y - mean))
                .sum();
            let sxx: f64 = (0..n).map(|i| (i as f64 - xm).powi(2)).sum();
            sxy / sxx
        } else {
            window.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max)
        };
        Some(if self.percent {
            if mean == 0.0 {
                f64::INFINITY
            } else {
                100.0 * raw / mean
            }
        } else {
            raw
        })
    }
}

/// One setting as users see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The job-file key; the flag is `--` and the key with `-` for `_`.
    pub key: &'static str,
    /// The name of its value in help ("SIZE"); empty for a switch.
    pub value: &'static str,
    /// What it does.
    pub help: &'static str,
    /// Its default as a user writes it, or what happens when it is not given.
    pub default: &'static str,
}

impl Setting {
    /// The command-line flag: `--iodepth-batch`.
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }

    /// True for a switch: given as `--direct`, `direct = true` in a job file.
    pub fn is_switch(&self) -> bool {
        self.value.is_empty()
    }
}

/// Why a setting could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingError {
    /// No setting has this key.
    Unknown(String),
    /// The value is not one the setting takes: what was wrong and what would be right.
    Invalid(String),
}

/// Declares the settings. Each line: `key: Type = "default"` (the default, read by the setting's
/// own reader) or `key: Type | "what happens when it is not given"` (no default: the resolved
/// setting is an `Option`), then the value's name ("" for a switch), the help text and the
/// reader.
macro_rules! settings {
    ($( $key:ident : $ty:ty $(= $default:literal)? $(| $none:literal)?, $value:literal, $help:literal, $read:ident; )+) => {
        /// The settings a job file, one of its phases or the command line gives: None where
        /// it gives none.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct Settings {
            $( #[doc = $help] #[serde(skip_serializing_if = "Option::is_none")] pub $key: Option<$ty>, )+
        }

        /// Every setting of a phase with the defaults applied: what the engine is told. A
        /// document stored before a setting existed reads with that setting's default.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct PhaseSettings {
            $( #[doc = $help] pub $key: settings!(@field $ty $(= $default)? $(| $none)?), )+
        }

        /// Every setting, in the order `--help` and docs/run.md list them.
        pub const SETTINGS: &[Setting] = &[
            $( Setting {
                key: stringify!($key),
                value: $value,
                help: $help,
                default: settings!(@default_text $($default)? $($none)?),
            }, )+
        ];

        impl Default for PhaseSettings {
            fn default() -> PhaseSettings {
                Settings::default().resolve()
            }
        }

        impl Settings {
            /// Applies one key (or flag, with '-' for '_') given as text.
            pub fn apply_str(&mut self, key: &str, text: &str) -> Result<(), SettingError> {
                let t = text.trim();
                match key.replace('-', "_").as_str() {
                    $( stringify!($key) => self.$key = Some($read(t).map_err(SettingError::Invalid)?), )+
                    other => return Err(SettingError::Unknown(other.to_string())),
                }
                Ok(())
            }

            /// True when this key's setting is given here.
            pub fn is_set(&self, key: &str) -> bool {
                match key {
                    $( stringify!($key) => self.$key.is_some(), )+
                    _ => false,
                }
            }

            /// Sets every setting that `top` gives, keeping ours where it gives none.
            pub fn overlay(&mut self, top: &Settings) {
                $( if top.$key.is_some() { self.$key = top.$key.clone(); } )+
            }

            /// The settings given here as (key, text) pairs in the table's order, each text one
            /// its reader reads back to the same value (a storlab job file's values).
            pub fn entries(&self) -> Vec<(&'static str, String)> {
                let mut out = Vec::new();
                $( if let Some(v) = &self.$key { out.push((stringify!($key), settings!(@text $read, v))); } )+
                out
            }

            /// Sets every setting that `other` gives. A setting that both give with different
            /// values is a conflict: its key is returned and nothing after it is set.
            pub fn merge_disjoint(&mut self, other: &Settings) -> Result<(), &'static str> {
                $( if let Some(v) = &other.$key {
                    match &self.$key {
                        Some(mine) if mine != v => return Err(stringify!($key)),
                        _ => self.$key = Some(v.clone()),
                    }
                } )+
                Ok(())
            }

            /// The settings with the defaults applied.
            pub fn resolve(&self) -> PhaseSettings {
                PhaseSettings {
                    $( $key: settings!(@resolve (self.$key) $(= $default, $read)?), )+
                }
            }
        }
    };
    (@text read_size, $v:expr) => { text::size_text($v) };
    (@text read_io_size, $v:expr) => { text::size_text($v) };
    (@text read_seed, $v:expr) => { text::seed_text($v) };
    (@text $read:ident, $v:expr) => { text::SettingText::text($v) };
    (@field $ty:ty = $default:literal) => { $ty };
    (@field $ty:ty | $none:literal) => { Option<$ty> };
    (@default_text $default:literal) => { $default };
    (@resolve ($v:expr) = $default:literal, $read:path) => {
        $v.clone().unwrap_or_else(|| $read($default).expect("a setting's default reads"))
    };
    (@resolve ($v:expr)) => { $v.clone() };
}

settings! {
    threads: u32 = "1", "N", "workers (threads), released together behind a barrier", read_threads;
    size: u64 | "1g (an existing file or device: its length)", "SIZE", "bytes per worker's file (for a shared file: the part of it used)", read_size;
    bs: BlockSizes = "4k", "SIZE", "block size, or a weighted mix `4k:70,64k:30`", read_bs;
    engine: BackendKind = "psync", "NAME", "`psync`, `io_uring`, `mmap`, `null` (moves no data), `stdio` (fwrite/fread through a stdio stream buffered one block deep, as IOzone -i 6/7), `pvsync` (preadv/pwritev, see `iovecs`), `libaio` (Linux AIO: io_submit/io_getevents, asynchronous with `direct`, each I/O done inside io_submit on a buffered file, as fio's libaio)", read_engine;
    iodepth: u32 = "1", "N", "I/Os in flight per worker (more than 1 needs io_uring or libaio)", read_iodepth;
    iodepth_batch: u32 | "1 with `direct`, else `iodepth`", "N", "I/Os queued before one submission to the kernel (io_uring, libaio). With O_DIRECT each I/O reaches the device as soon as it is queued, as fio's default does; buffered reads that the page cache answers inside the submission are cheaper in one batch", read_iodepth_batch;
    iodepth_batch_complete: u32 | "every completion ready", "N", "completions taken from the kernel at most at once (io_uring, libaio); the worker refills the queue after each take, so with 1 (fio's default, its iodepth_batch_complete_max) the queue stays at its depth, as fio keeps it", read_iodepth_batch;
    userspace_reap: bool = "false", "BOOL", "with `engine = \"libaio\"`: completions looked for without waiting are read off the ring the kernel maps into the process, not with io_getevents (fio's userspace_reap)", read_bool;
    iovecs: u32 = "1", "N", "with `engine = \"pvsync\"`: each I/O is this many equal buffers in one preadv/pwritev call (IOzone's -i 11/12 use 16 records)", read_iovecs;
    direct: bool = "false", "", "O_DIRECT: bypass the page cache", read_bool;
    sync: bool = "false", "", "O_SYNC: every write reaches stable storage before it completes", read_bool;
    fsync: FsyncPolicy = "none", "POLICY", "`none`; `end` (once, after the last write); or N: a flush before the I/O that follows every Nth write, as fio's fsync=N (none after the last write), timed apart from the writes", read_fsync;
    sync_call: SyncCall = "fsync", "fsync|fdatasync|sync_file_range:FLAGS", "the call a flush makes: `fsync` (data and metadata, fsync(2)), `fdatasync` (data and only the metadata needed to read it, fdatasync(2); fio's fdatasync) or `sync_file_range:write,wait_after` (sync_file_range(2) over the file with fio's flags wait_before, write, wait_after; fio's sync_file_range)", read_sync_call;
    fsync_timed: bool = "true", "BOOL", "the flush at the end counts in the phase's time (IOzone `-e`)", read_bool;
    close_timed: bool = "false", "BOOL", "closing the files counts in the phase's time (IOzone's `-c`; on NFS a close flushes)", read_bool;
    runtime: Duration | "one pass over each file", "DURATION", "time-based phase length (0: one pass)", read_runtime;
    timeout: Duration | "none: the pass ends the phase", "DURATION", "end a phase of passes (no runtime) after this long even when its passes are not done, as fio's runtime without time_based", read_duration;
    loops: u32 = "1", "N", "passes over each worker's region in a phase without runtime (fio's loops)", read_loops;
    random_map: bool = "false", "BOOL", "random offsets visit every block once per pass, in a random order (fio's default random map); false draws every offset anew, so that some blocks repeat and others are left out (fio's norandommap)", read_bool;
    think: Duration = "0s", "DURATION", "after every `think_blocks` I/Os a worker pauses this long before the next (fio's thinktime)", read_duration;
    think_spin: Duration = "0s", "DURATION", "the part of `think` spent spinning on the CPU instead of sleeping (fio's thinktime_spin)", read_duration;
    think_blocks: u32 = "1", "N", "I/Os between pauses of `think` (fio's thinktime_blocks)", read_loops;
    ios: u64 | "no limit", "N", "each worker ends after this many I/Os (fio's number_ios)", read_ios;
    align: u64 | "the smallest block size", "SIZE", "random offsets are multiples of this (fio's blockalign)", read_size;
    distribution: Distribution = "uniform", "DIST", "where random offsets fall: `uniform`; `zoned:A/R:B/S:…` — A % of the I/Os in the first R % of the region, then B % in the next S %, … (fio's random_distribution=zoned); `zoned_abs:A/SIZE:B/SIZE:…` — zones of absolute sizes from the region's start, the rest untouched (fio's zoned_abs); `zipf:THETA`, `pareto:H` or `normal:DEV` — skewed over the region's blocks as fio draws them", read_distribution;
    hole: u64 = "0", "SIZE", "a sequential phase leaves this many bytes out after each I/O (fio's `rw=write:N`)", read_size;
    strided: Strided | "none", "SIZE,SKIP[,RANGE]", "a sequential phase in strided zones: SIZE bytes in each zone of RANGE bytes (SIZE when not given), the next zone starting RANGE + SKIP bytes after the last (fio's zonemode=strided with zonesize, zoneskip, zonerange)", read_strided;
    zbd: Zbd | "none", "SIZE[,CAPACITY]", "zones of SIZE bytes emulated over each file or device, as fio's zonemode=zbd emulates them where the device has none (fio's zonesize, zonecapacity): a write goes to its zone's write pointer, a full zone is reset (counted: fio's zone resets), and a read finds only what the run wrote, unless `read_beyond_wp`. The zones' write pointers live as long as the run, shared by its phases, as fio's jobs share a file's zones", read_zbd;
    read_beyond_wp: bool = "false", "BOOL", "with `zbd`: reads go where they are drawn, past a zone's write pointer too (fio's read_beyond_wp)", read_bool;
    fill: bool = "false", "BOOL", "a write goes on until the filesystem is full: without `size` each file takes the free space, and ENOSPC or EDQUOT ends the phase (not as an error); a read ends at the end of the file (fio's fill_device)", read_bool;
    io_size: u64 | "the region's size", "SIZE", "bytes each worker moves per pass of a phase without runtime, going round its region as often as needed (fio's io_size)", read_io_size;
    offset: u64 = "0", "SIZE", "where each worker's region starts in its file (fio's offset)", read_size;
    offset_increment: u64 = "0", "SIZE", "added to `offset` for each further worker (fio's offset_increment)", read_size;
    nrfiles: u32 = "1", "N", "files each worker works through in a directory target, switching between them as `file_service` says; `size` is shared among them (fio's nrfiles)", read_nrfiles;
    filesize: FileSizes | "`size` ÷ `nrfiles`", "SIZE|LO-HI", "with `nrfiles`: each file's size, or a range from which each file's is drawn (a multiple of the smallest block); `size`, when smaller than the files together, bounds what a pass moves (fio's filesize)", read_file_sizes;
    file_service: FileService = "roundrobin", "HOW", "with `nrfiles`: `roundrobin[:N]` (the next file after N I/Os, 1 unless given), `sequential` (each file's pass whole, then the next), `random[:N]` (a file drawn at random after N I/Os) (fio's file_service_type)", read_file_service;
    share: Share = "split", "split|whole", "workers on one file or device: `split` — each its own equal part; `whole` — each over the whole region, overlapping (fio's numjobs on one filename)", read_share;
    priority: IoPriority | "the default", "CLASS[:LEVEL]", "the workers' I/O priority (ioprio_set(2)): `rt`, `be` or `idle`, and a level from 0 (highest) to 7 (fio's prioclass and prio)", read_priority;
    cmdprio: CommandPriority | "none", "PCT[,PCT]:CLASS[:LEVEL]", "this percentage of the I/Os (reads, then writes when two are given) carry this priority on the request itself, the others the worker's (io_uring's per-request ioprio; fio's cmdprio_percentage, cmdprio_class, cmdprio): `20:rt:0`", read_cmdprio;
    cpus: CpuList | "any CPU", "LIST", "the CPUs the workers run on (`0-3,8`), each on all of them (`cpus_policy = \"shared\"`) or each on one in turn (`\"split\"`) (fio's cpus_allowed, numa_cpu_nodes)", read_cpus;
    cpus_policy: CpusPolicy = "shared", "shared|split", "with `cpus`: every worker on all the CPUs, or worker i on the i-th (fio's cpus_allowed_policy)", read_cpus_policy;
    memory_policy: MemoryPolicy = "default", "POLICY", "where each worker's buffers live (set_mempolicy(2)): `default`, `local`, `prefer:NODE`, `bind:NODES`, `interleave:NODES` (fio's numa_mem_policy)", read_memory_policy;
    steady: Steady | "none: the phase runs its size or time", "CRITERION", "end the phase once its throughput is steady (fio's steadystate): `iops:10%` — every sample of the window within 10 % of the window's mean; `iops_slope:0.1%` — the least-squares slope over the window within 0.1 % of its mean per sample; `bw…` the same on bytes/s; a limit without % is absolute", read_steady;
    steady_window: Duration = "0s", "DURATION", "with `steady`: the window judged, rolling (fio's ss_dur); required", read_duration;
    steady_ramp: Duration = "0s", "DURATION", "with `steady`: samples before this are not judged (fio's ss_ramp)", read_duration;
    flow: u32 | "none", "WEIGHT", "with phases that run together: each worker issues in proportion to its weight among the workers of the same `flow_id` (fio's token-based flow)", read_loops;
    flow_id: u32 = "0", "N", "the flow a phase's workers weigh against (fio's flow_id)", read_flow_id;
    flow_sleep: Duration = "0s", "DURATION", "how long a worker ahead of its share waits before it looks again (fio's flow_sleep; 0: it yields)", read_duration;
    start_delay: Duration = "0s", "DURATION", "with phases that run together (fio's jobs without a stonewall between them): begin this long after the others (fio's startdelay); the phase's clock starts then", read_duration;
    exitall: bool = "false", "BOOL", "with phases that run together: when this phase is done, the others end too (fio's exitall)", read_bool;
    fallocate: Fallocate = "none", "HOW", "how a write phase allocates its new files before writing: `none`, `posix` (fallocate(2) the whole region first, fio's default `native`), `keep` (fallocate keeping the file's size), `truncate` (set the length first)", read_fallocate;
    latency_target: Duration | "none", "DURATION", "search for the deepest queue (up to `iodepth`) at which `latency_percentile` % of the I/Os complete within this, then measure one `latency_window` there: the search is a ramp, excluded from the results (fio's latency_target)", read_duration;
    latency_window: Duration = "1s", "DURATION", "with `latency_target`: how long each depth is tried (fio's latency_window)", read_duration;
    latency_percentile: f64 = "100", "PERCENT", "with `latency_target`: the share of the I/Os that must complete within it (fio's latency_percentile)", read_latency_percentile;
    latency_run: bool = "false", "BOOL", "with `latency_target`: keep adjusting the depth for the whole phase instead of settling and measuring (fio's latency_run)", read_bool;
    ramp: Duration = "0s", "DURATION", "run first, excluded from the results", read_duration;
    rate: Rate | "as fast as it goes", "RATE", "target rate: `20000iops` or `200MiB/s`", read_rate;
    rate_process: RateProcess = "linear", "linear|poisson", "how a target rate spaces the I/Os: `linear` (evenly) or `poisson` (gaps drawn from the exponential distribution with the rate's mean, fio's rate_process=poisson)", read_rate_process;
    rate_min: Rate | "none", "RATE", "a worker that falls below this rate fails the phase, judged at its completions over each span of a sample interval or more since the last judgement, after the ramp (fio's rate_min, rate_iops_min over rate_cycle): `1MiB/s` or `100iops`", read_rate;
    rate_per: RatePer = "total", "total|worker", "`total` (shared by the workers) or `worker` (each worker at the rate)", read_rate_per;
    pattern: DataPattern = "random", "PATTERN", "`random` (unique per block), `zeros`, `compress:NN` (NN % of each `compress_chunk` is zeros, the rest random bytes fresh in every write), or `0xHEX`: these bytes over and over from the start of each 4 KiB, checked on a read with `verify` (fio's verify_pattern)", read_pattern;
    compress_chunk: u64 = "4k", "SIZE", "with `pattern = \"compress:NN\"`: the span each share of zeros is laid in — its random bytes first, then its zeros, as fio lays out a buffer_compress_chunk (fio's default 512 bytes, which a fio job takes) — so that a dedupe scan of blocks larger than a chunk finds whole blocks of zeros where fio's data has them", read_compress_chunk;
    dedupe: u8 = "0", "PERCENT", "this share of the blocks written repeat another block, so that deduplicating storage finds them (fio's dedupe_percentage): the last unique block, or one of `dedupe_set`", read_percent;
    dedupe_set: u8 | "none: a duplicate repeats the last unique block", "PERCENT", "with `dedupe`: duplicates are drawn from a working set, the first unique blocks of each worker, this percentage of its region's blocks (fio's dedupe_mode=working_set, dedupe_working_set_percentage)", read_percent;
    dedupe_global: bool = "false", "BOOL", "with `dedupe_set`: the working set is every worker's, so workers repeat each other's blocks (fio's dedupe_global)", read_bool;
    continue_on_error: ErrorsGoneOn = "none", "KIND", "failed I/Os a phase goes on past, counting them and keeping the first, instead of ending at the first: `none`, `read`, `write`, `io` (both), for the errors of `continue_errnos` (fio's continue_on_error)", read_continue_on_error;
    continue_errnos: ErrnoList = "EIO,EILSEQ", "ERRNO,…", "with `continue_on_error`: the errors gone on past, by name (`ENOSPC`) or number; any other ends the phase (fio's ignore_error; its default is EIO and EILSEQ)", read_errnos;
    verify: bool = "false", "", "stamp every 4 KiB written; check every 4 KiB read", read_bool;
    stop_at_bad_block: bool = "false", "BOOL", "with `verify`: end the phase at the first block that fails its check, as a failed read (EILSEQ, fio's error 84; `storlab fio` sets it, as fio stops a job there unless continue_on_error=verify); otherwise every bad block is counted and the phase goes on", read_bool;
    verify_backlog: u64 | "none", "N", "with `verify` in a phase that writes: after every N blocks written, the worker reads them back and checks them before it writes on; the reads count as the phase's reads (fio's verify_backlog)", read_ios;
    rwmix: u8 = "50", "PERCENT", "read percentage of `randrw` and `rw`", read_rwmix;
    stride: u64 = "4", "N", "records between reads of `strideread`", read_stride;
    fadvise: Fadvise = "none", "HINT", "posix_fadvise over each worker's region before a phase: `none`, `sequential`, `random`, `noreuse`, or `dontneed` (drop its clean cached pages, so that a buffered read starts from the device rather than from what an earlier phase or program left in the cache)", read_fadvise;
    interval: Duration = "1s", "DURATION", "sample interval (10ms or more)", read_interval;
    worker_samples: bool = "false", "BOOL", "keep each worker's interval samples and its own totals, latency histograms and queue depths beside the phase's, stored with the run: `storlab fio` writes fio's per-job logs from them (`PREFIX_bw.N.log` for each clone, and an asynchronous engine's slat and clat logs) and reports each clone on its own (`group_reporting`)", read_bool;
    interval_histograms: bool = "false", "BOOL", "keep each worker's completion latency histogram of every interval, per direction, stored with the run: `storlab fio` writes fio's histogram log (`write_hist_log`, `PREFIX_clat_hist.N.log`) from them", read_bool;
    histogram_interval: Duration | "the sample interval", "DURATION", "the interval of `interval_histograms`, where it is not the samples' (10ms or more; fio's log_hist_msec beside a log_avg_msec of its own)", read_interval;
    io_log: bool = "false", "BOOL", "keep every I/O of each worker's measured part (when it completed, its latency and an asynchronous engine's submission latency, its direction, size and offset: 36 bytes an I/O in memory, deflated in the store): `storlab fio` writes fio's per-I/O logs from them (`write_lat_log` and the others without `log_avg_msec`)", read_bool;
    group_reporting: bool = "true", "BOOL", "fio's outputs of the run report a phase's workers as one job (fio's group_reporting); `false` reports each worker as a job of its own from the figures `worker_samples` keeps (`storlab fio` sets both for a job of several clones without group_reporting, as fio reports them)", read_bool;
    late_after: Duration = "1ms", "DURATION", "an I/O issued this long after its scheduled start is late", read_duration;
    seed: u64 | "random per run", "N|0xHEX", "seed of offsets and data (give the same seed to verify another run's files; decimal, or hexadecimal as storlab prints it)", read_seed;
}

/// docs/run.md's key reference: a Markdown table of every setting (a test checks that the page
/// holds exactly this).
pub fn reference() -> String {
    let mut s = String::from("| key | flag | default | meaning |\n|---|---|---|---|\n");
    for x in SETTINGS {
        s += &format!(
            "| `{}` | `{}` | {} | {} |\n",
            x.key,
            x.flag(),
            x.default.replace('|', "\\|"),
            x.help.replace('|', "\\|")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_errors() {
        let mut s = Settings::default();
        s.apply_str("bs", "4k:70,64k:30").unwrap();
        assert_eq!(s.bs, Some(BlockSizes::Mix(vec![(4096, 70), (65536, 30)])));
        s.apply_str("rate", "20000iops").unwrap();
        s.apply_str("fsync", "16").unwrap();
        assert_eq!(s.fsync, Some(FsyncPolicy::Every(16)));
        s.apply_str("rate-per", "worker").unwrap();
        assert_eq!(s.rate_per, Some(RatePer::Worker));
        s.apply_str("pattern", "compress:50").unwrap();
        assert_eq!(s.pattern, Some(DataPattern::Compressible(50)));
        for (k, v, needle) in [
            ("rwmix", "101", "0–100"),
            ("threads", "0", "at least 1"),
            ("engine", "aio", "io_uring"),
            ("size", "12q", "12q"),
            ("iodepth", "0", "1 to 4096"),
            ("iodepth_batch", "0", "1 to 4096"),
            ("pattern", "compress:300", "compress:NN"),
            ("fadvise", "soon", "dontneed"),
        ] {
            match s.clone().apply_str(k, v) {
                Err(SettingError::Invalid(e)) => assert!(e.contains(needle), "{k}={v}: {e}"),
                other => panic!("{k}={v}: {other:?}"),
            }
        }
        assert_eq!(
            s.apply_str("blocksize", "4k"),
            Err(SettingError::Unknown("blocksize".into()))
        );
    }

    #[test]
    fn defaults_resolve_and_every_default_reads() {
        let r = Settings::default().resolve();
        assert_eq!(r.bs, BlockSizes::Fixed(4096));
        assert_eq!(r.engine, BackendKind::Psync);
        assert_eq!(r.interval, Duration(1_000_000_000));
        assert_eq!(r.rate_per, RatePer::Total);
        assert_eq!(r.size, None);
        let mut s = Settings::default();
        s.apply_str("iodepth", "8").unwrap();
        let mut top = Settings::default();
        top.apply_str("iodepth", "16").unwrap();
        s.overlay(&top);
        assert_eq!(s.resolve().iodepth, 16);
        assert!(s.is_set("iodepth") && !s.is_set("bs"));
    }

    #[test]
    fn the_reference_lists_every_setting_with_its_flag() {
        let r = reference();
        for x in SETTINGS {
            assert!(r.contains(&format!("| `{}` | `{}` |", x.key, x.flag())), "{}", x.key);
        }
        assert!(r.contains("`--iodepth-batch`"));
    }
}

#[cfg(test)]
mod seed_tests {
    use super::read_seed;

    #[test]
    fn a_seed_reads_as_printed_or_in_decimal() {
        assert_eq!(read_seed("0x86dcdfd8b7e3694c"), Ok(0x86dc_dfd8_b7e3_694c));
        assert_eq!(read_seed("86dcdfd8b7e3694c"), Ok(0x86dc_dfd8_b7e3_694c));
        assert_eq!(read_seed("42"), Ok(42));
        assert!(read_seed("0x")
            .unwrap_err()
            .contains("hexadecimal as storlab prints it"));
        assert!(read_seed("forty-two").unwrap_err().contains("not a seed"));
    }
}
