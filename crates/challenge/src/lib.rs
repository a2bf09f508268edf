//! The data challenge (seed 002): writers create files in pools, readers read, verify and
//! delete them, a catalogue in the results database keeps every file's life, samples record each
//! pool's throughput, faults are carried out on time, and the account is checked at the end.
//!
//! - spec.rs: the definition from flags or a job file, checked whole before anything is written;
//! - files.rs: one file's write (stamped) and read (verified);
//! - run/: this host's share at work — its threads started and joined (mod.rs), the writers
//!   and readers (workers.rs), the sampler (sampler.rs), the fault plan carried out (plan.rs);
//! - catalogue.rs: the store as this host's threads reach it, ridden through the database's
//!   outages, and the host's times on the database server's clock;
//! - host.rs: the host's checks around its share (its pools, its dead processes, the end);
//! - share.rs: this host's share from its stored beginning to its end: joining, the run it is
//!   stored under, the work, the account and the run's status;
//! - stats.rs: the statistics in the seed's shape.
//!
//! storlab writes only inside each pool's directory, in a subdirectory named after the
//! challenge (`storlab-challenge-<uuid>`), files named `f<number>`; it removes nothing else.

mod catalogue;
pub mod faults;
pub mod files;
pub mod host;
pub mod run;
pub mod share;
pub mod spec;
pub mod stats;

use std::path::PathBuf;

use storlab_model::challenge::Pool;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ChallengeError {
    /// The user's input: a flag, a job file, a pool. Nothing was written.
    #[error("{0}")]
    Input(String),
    /// A pool's directory could not be made or read.
    #[error("{0}")]
    Io(String),
    /// The database.
    #[error(transparent)]
    Store(#[from] storlab_store::StoreError),
    /// The database was away for longer than this process waits: its work ended in order.
    #[error("{0}")]
    Away(String),
}

/// The directory of a challenge's files in a pool.
pub fn pool_dir(pool: &Pool, uuid: &str) -> PathBuf {
    pool.path.join(format!("storlab-challenge-{uuid}"))
}

/// File number `seq`'s name.
pub fn file_name(seq: u64) -> String {
    format!("f{seq:012}")
}

/// True for a name storlab gives a challenge file (`f` and digits): the only names it deletes.
pub fn is_file_name(name: &str) -> bool {
    name.len() > 1 && name.starts_with('f') && name[1..].bytes().all(|b| b.is_ascii_digit())
}
