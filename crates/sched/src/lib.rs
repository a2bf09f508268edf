//! The verify scheduler (seed 000: "a centralised place to schedule and manage array verifies
//! that requires little administrator intervention", keeping each pool's performance loss within
//! an agreed limit by restricting the number of concurrent verifies).
//!
//! - window.rs: when a pool may verify (weekly windows, UTC);
//! - schedule.rs: the schedule file, checked whole, every mistake named with its line; the
//!   file an agent acts on must be root's and writable by no one else;
//! - plan.rs: per pool the concurrency k within its budget and a round's duration.

pub mod plan;
pub mod schedule;
pub mod window;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    /// The user's input: a schedule file, a flag. Nothing was started.
    #[error("{0}")]
    Input(String),
}
