//! One run, from job to stored result: the job is resolved into a plan (crates/workload), the
//! environment captured (crates/env), the run begun in the store, each phase run by the engine
//! and stored as it finishes with the page cache's possible flattery judged, the files storlab
//! created removed and their space given back, and the run's status set. Ctrl-C ends the phase
//! going on; the phases finished before are kept and the run is stored as aborted.
//!
//! `storlab run`, `demo`, `iozone`, `sweep` and `impact` all run their jobs through [`run`], so
//! every run is stored, cleaned up and interruptible the same way. [`run_study`] runs a list of
//! jobs as the points of one study and stores it; [`store_scan`] stores a scan as a run.
//!
//! - run.rs: how a job runs ([`RunOptions`]), checked and resolved before anything is stored
//!   ([`prepare`]), its environment captured and its phases handed to the one run path;
//! - phases.rs: the one run path ([`run_phases`]) over any [`Phases`] (the engine's, or
//!   crates/meta's): each phase stored as it finishes, the run's status from what they add up to;
//! - evidence.rs: what the machine did around a phase (its disks and those beneath, the CPUs,
//!   the cgroup's I/O limits), the evidence of its bound;
//! - cleanup.rs: the files a run created, removed and their filesystems flushed however it ends;
//! - live.rs: what the live views (`--metrics`, the status line) are told as a run goes;
//! - study.rs: jobs as the points of a study, here or on every rank of a team;
//! - scan.rs: a scan stored as a run;
//! - team/: one run by every rank of an MPI team, rank 0 storing it.
#![deny(missing_docs)]

use std::sync::atomic::{AtomicBool, Ordering};

/// The engine's view of a phase's intervals, which every [`LiveRun`] is.
pub use storlab_engine::IntervalObserver;
use storlab_store::StoreError;
use storlab_workload::WorkloadError;

mod cleanup;
pub mod evidence;
mod live;
mod phases;
mod run;
mod scan;
mod study;
pub mod team;

pub use live::{LiveRun, LiveViews, PhaseStart};
pub use phases::{run_phases, Phases};
pub use run::{prepare, resolve_options, run, run_prepared, run_prepared_team, Executed, Prepared, RunOptions};
pub use scan::store_scan;
pub use study::{run_cells, run_points, run_points_team, run_study, save_points_study, Points};

/// Why a run could not be run or stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The job was refused before anything ran (the user's to fix).
    #[error("{0}")]
    Job(#[source] WorkloadError),
    /// The database failed.
    #[error("{0}")]
    Store(#[source] StoreError),
    /// A rank of a run many processes ran together failed (its rank, host and reason); the
    /// run is stored as failed with the phases before it.
    #[error("{0}")]
    Rank(String),
    /// The ranks of a run many processes run together did not start: one could not prepare
    /// its part, or its part differs from rank 0's (its rank, host and reason). Nothing was
    /// stored; the user's to fix.
    #[error("{0}")]
    Disagreed(String),
    /// A phase failed; the run is stored as failed with the phases before it.
    #[error("run {run_id}, phase {seq} ({kind}): {source}")]
    Phase {
        /// The run.
        run_id: i64,
        /// The phase, from 1.
        seq: usize,
        /// Its kind.
        kind: String,
        /// What the engine (or the phase's other runner) said.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl SessionError {
    /// The system's error number behind a phase's failure, where there is one (the first in
    /// its chain of causes: EROFS for a read-only filesystem, EILSEQ for a bad block).
    pub fn errno(&self) -> Option<i32> {
        let SessionError::Phase { source, .. } = self else {
            return None;
        };
        let mut at: Option<&(dyn std::error::Error + 'static)> = Some(&**source);
        while let Some(e) = at {
            if let Some(n) = e
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::raw_os_error)
            {
                return Some(n);
            }
            at = e.source();
        }
        None
    }
}

impl From<WorkloadError> for SessionError {
    fn from(e: WorkloadError) -> Self {
        SessionError::Job(e)
    }
}

impl From<StoreError> for SessionError {
    fn from(e: StoreError) -> Self {
        SessionError::Store(e)
    }
}

/// Set by Ctrl-C (SIGINT) and SIGTERM; the engine's workers poll it between I/Os.
static STOP: AtomicBool = AtomicBool::new(false);

/// The flag Ctrl-C sets, with its handler installed: a first Ctrl-C asks the run (or study) to
/// stop and keep what it finished; a second leaves at once with exit code 130.
pub fn stop_flag() -> &'static AtomicBool {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::Relaxed) {
                std::process::exit(130);
            }
            eprintln!("\nstorlab: stopping (finished phases are kept; files are being removed)...");
        });
    });
    &STOP
}
