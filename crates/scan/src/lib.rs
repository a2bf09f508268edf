//! `storlab scan`: how much data a filesystem holds, how much of it has not been accessed for
//! longer than given ages (the candidates for a cheaper tier), and how it is spread over ages
//! and sizes. A parallel walk (walk.rs) feeds per-thread accumulators; nothing is kept per
//! file, so memory does not grow with the number of files.
//!
//! What is counted (docs/scan.md says the same for users):
//! - data: regular files only, apparent size (st_size) and allocated size (st_blocks × 512);
//! - files: regular files; a file with several hard links counts once (by device and inode),
//!   in the first row the walk meets it in;
//! - dirs: every directory, the row's own included; symbolic links and other entries (fifos,
//!   sockets, devices) are counted apart and never followed;
//! - a file's age: now − its atime (default), its mtime, or the later of the two; a
//!   directory's own times are ignored. A file is older than a threshold when its age is
//!   strictly greater.

#![deny(missing_docs)]

pub mod mounts;
pub mod owners;
mod walk;

pub use walk::scan;

/// What can stop a scan before it starts (problems met during the walk are counted instead).
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// A PATH to scan is missing, not a directory, or cannot be opened.
    #[error("cannot scan {path}: {reason}")]
    Root {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Options that do not fit together.
    #[error("{0}")]
    Options(String),
}

pub use storlab_model::scan::*;
