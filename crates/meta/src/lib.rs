//! Metadata workloads (`storlab meta`): mdtest's namespace phases — mkdir, create, stat, read,
//! write, rename, link, remove, rmdir — by several workers over a tree of directories, each
//! operation timed into the engine's HDR histograms and checked (a create that succeeded but
//! whose file is missing at stat is an error, counted and named).
//!
//! [`job::MetaJob`] is what the user asked for, checked whole before anything is made
//! ([`layout::Layout::prepare`]: the phases' order, data to read, the inodes the tree needs
//! against those free); [`layout::Layout`] is where every item lives; [`phase::run`] runs one
//! operation over every worker's items and returns the engine's
//! [`storlab_model::result::PhaseResult`] with the phase's [`storlab_model::meta::MetaParams`].
//! Everything is made under one directory of storlab's own in the target, removed at the end
//! (unless kept) and on Ctrl-C. [`walk`] times a whole namespace walk (storlab scan's walker)
//! and, beside it, `du -s`; [`untar`] extracts copies of an archive at once; [`record`] runs
//! each of them as stored runs through the session's one run path, and [`team`] runs a
//! workload on every rank of an MPI team as one run.
#![deny(missing_docs)]

pub mod job;
pub mod layout;
pub mod phase;
pub mod record;
pub mod team;
pub mod untar;
pub mod walk;

/// Why a metadata workload could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetaError {
    /// The request was refused before anything was made (the user's to fix).
    #[error("{0}")]
    Invalid(String),
    /// Making or removing storlab's own directories failed.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// Storing the run, or the ranks of a run many processes run together.
    #[error("{0}")]
    Session(#[source] storlab_session::SessionError),
}

impl From<storlab_session::SessionError> for MetaError {
    fn from(e: storlab_session::SessionError) -> Self {
        MetaError::Session(e)
    }
}
