//! The verify scheduler (seed 000: "a centralised place to schedule and manage array verifies
//! that requires little administrator intervention", keeping each pool's performance loss within
//! an agreed limit by restricting the number of concurrent verifies).
//!
//! - window.rs: when a pool may verify (weekly windows, UTC);
//! - schedule.rs: the schedule file, checked whole, every mistake named with its line; the
//!   file an agent acts on must be root's and writable by no one else;
//! - plan.rs: per pool the concurrency k within its budget and a round's duration;
//! - agent.rs: one per server, taking a slot's lease from the shared database when it is its
//!   turn, renewing it while its task runs, pausing the task while the pool is busy (busy.rs)
//!   or outside its windows;
//! - guard.rs: the process that holds the task and stops it when the lease runs out or the
//!   agent dies;
//! - question.rs: `storlab risk`'s question from the user's flags, a stored rebuild study and
//!   a schedule's pool; risk.rs: the Markov model that answers it;
//! - status.rs: the schedule joined with the database's record;
//! - metrics.rs: the status as Prometheus metrics.

pub mod agent;
pub mod busy;
pub mod guard;
pub mod metrics;
pub mod plan;
pub mod question;
pub mod risk;
pub mod schedule;
pub mod status;
pub mod window;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    /// The user's input: a schedule file, a flag. Nothing was started.
    #[error("{0}")]
    Input(String),
    /// The results database a stored study was to be read from.
    #[error("{0}")]
    Store(#[source] storlab_store::StoreError),
}

impl From<storlab_store::StoreError> for SchedError {
    fn from(e: storlab_store::StoreError) -> Self {
        SchedError::Store(e)
    }
}
