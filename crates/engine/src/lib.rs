//! The storlab I/O engine: what `storlab run` (and every command that runs a job) measures with.
//! It runs one phase of I/O — or several phases together — with a set of worker threads over a
//! back-end (psync, pvsync, stdio, io_uring, mmap or null), with access patterns, open-loop rate
//! control, HDR latency histograms, interval samples, data patterns and verification, and returns
//! what it measured. It is given a fully resolved [`PhasePlan`] (crates/workload builds and
//! validates it) and returns a [`PhaseResult`]; it never decides what to run and never prints.
//!
//! Where things are, in the order a phase goes (fio's own files named where they match):
//! - phase.rs: the entry points — a group's phases laid out, their workers started on one barrier,
//!   the samples collected, the results merged;
//! - filesetup.rs: the files a phase reads laid out before its clock starts (fio's filesetup.c);
//! - placement.rs: where a worker thread runs (its descriptor table, I/O priority, CPUs, memory);
//! - worker.rs: one worker's loop (fio's do_io), as named steps;
//! - access/: which offset and length come next — sizes.rs, random_map.rs, skew.rs (zipf,
//!   pareto, normal as fio draws them), file_set.rs;
//! - backend/: one file per back-end behind the [`backend::Backend`] trait (fio's `ioengine_ops`);
//! - pacing.rs: how fast a worker may issue (rate, think time, flow shares);
//! - complete.rs: each completed I/O settled and accounted (fio's io_completed);
//! - data.rs and verify.rs: the data written, its header, and reads checked against it;
//! - stat.rs: counters and histograms the same way everywhere; clock.rs: the one clock;
//! - collect.rs: the sampler thread turning workers' intervals into samples;
//! - merge.rs: every worker's totals into the phase's result; steady.rs and latency_target.rs:
//!   fio's steady-state detection and latency-target search over the merged samples;
//! - team.rs: one phase's results from many MPI ranks merged into rank 0's.
#![deny(missing_docs)]

pub mod access;
pub mod backend;
pub mod clock;
mod collect;
mod complete;
pub mod data;
mod exact;
mod filesetup;
mod latency_target;
mod merge;
mod pacing;
mod phase;
mod placement;
mod stat;
mod steady;
pub mod team;
mod verify;
mod worker;
mod zones;

pub use collect::IntervalObserver;
pub use filesetup::lay_out_phase;
/// The latency histogram's type, as [`IntervalObserver`] receives it.
pub use hdrhistogram::Histogram;
pub use phase::{run_group_observed, run_phase, run_phase_observed, run_phase_with, PhaseControl};
pub use stat::{
    children_cpu, encode_histogram, latency_of, new_histogram, process_cpu, thread_cpu, thread_usage, Recorded, Usage,
};
pub use storlab_model::plan::*;
pub use storlab_model::result::*;
pub use storlab_model::{plan, result};

/// Why a phase could not run or did not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// A file could not be opened.
    #[error("cannot open {path}{}: {source}", if *direct { " with O_DIRECT" } else { "" })]
    Open {
        /// The file.
        path: String,
        /// Whether O_DIRECT was asked for.
        direct: bool,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The back-end could not be set up for a file.
    #[error("cannot set up the {backend} back-end for {path}: {source}")]
    Backend {
        /// The back-end's name.
        backend: &'static str,
        /// The file.
        path: String,
        /// The reason.
        source: std::io::Error,
    },
    /// A file's emulated zones (`zbd`) could not be made: fio's job error EINVAL.
    #[error("{path}: {why}")]
    Zones {
        /// The file.
        path: String,
        /// What was wrong.
        why: String,
        /// EINVAL, the error fio gives the job.
        source: std::io::Error,
    },
    /// A file could not be laid out before a read phase.
    #[error("cannot lay out {path} before reading it: {source}")]
    Layout {
        /// The file.
        path: String,
        /// The reason.
        source: std::io::Error,
    },
    /// An I/O failed.
    #[error("{} at offset {offset} of {path} failed: {source}{}", if *write { "write" } else { "read" },
        if *direct && source.raw_os_error() == Some(libc::EINVAL) { " (O_DIRECT needs block sizes and offsets aligned to the device's logical block size)" } else { "" })]
    Io {
        /// The file.
        path: String,
        /// Write or read.
        write: bool,
        /// The offset.
        offset: u64,
        /// Whether O_DIRECT was in use.
        direct: bool,
        /// The system's reason.
        source: std::io::Error,
    },
    /// An I/O moved fewer bytes than asked.
    #[error("short {} at offset {offset} of {path}: {got} of {wanted} bytes (is the file shorter than the job's size?)", if *write { "write" } else { "read" })]
    ShortIo {
        /// The file.
        path: String,
        /// Write or read.
        write: bool,
        /// The offset.
        offset: u64,
        /// Bytes asked for.
        wanted: u32,
        /// Bytes moved.
        got: u32,
    },
    /// A block read failed its check and the phase stops at the first (`stop_at_bad_block`,
    /// fio's verify: an EILSEQ error on the read).
    #[error("verify: {reason} at file {path} offset {offset}, length {len}: {source}")]
    BadBlock {
        /// The file.
        path: String,
        /// The block's offset.
        offset: u64,
        /// The block's length.
        len: u64,
        /// What was wrong with it.
        reason: String,
        /// EILSEQ, the error fio gives the read.
        source: std::io::Error,
    },
    /// A flush failed.
    #[error("flushing {path} failed: {source}")]
    Flush {
        /// The file.
        path: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A worker fell below the phase's minimum rate (fio's rate_min).
    #[error("the worker on {path} moved {got} in the interval ending at {at:.1} s, under the minimum rate {want} (rate_min)")]
    RateMin {
        /// The worker's file.
        path: String,
        /// The interval's end, seconds from the phase's start.
        at: f64,
        /// What it moved, per second.
        got: String,
        /// The minimum.
        want: String,
    },
    /// The latency search had not settled when the phase ended (fio's latency_target).
    #[error("the latency search on {path} had not settled when the phase ended (at depth {depth}): give a longer runtime or a shorter latency_window")]
    LatencyUnsettled {
        /// The worker's file.
        path: String,
        /// The depth it was trying.
        depth: u32,
    },
    /// A bug in the engine.
    #[error("internal engine error: {0}")]
    Internal(String),
}
