//! The verify scheduler's plan as data (crates/sched computes it, crates/report draws it).

use serde::{Deserialize, Serialize};

/// One pool's plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolPlan {
    /// The pool.
    pub pool: String,
    /// Its servers.
    pub servers: u32,
    /// Its budget, percent.
    pub budget: f64,
    /// One verifying server's loss, percent.
    pub cost: f64,
    /// Servers that may verify at once.
    pub k: u32,
    /// What k at once cost the pool, percent.
    pub pool_loss: f64,
    /// A round's task time, the task alone, seconds.
    pub round_idle: Option<f64>,
    /// A round's task time under the users' load, seconds.
    pub round_loaded: Option<f64>,
    /// Hours a week the windows are open.
    pub window_hours: f64,
    /// A round in calendar time, under load (else alone), the task running only in its
    /// windows, seconds.
    pub round_calendar: Option<f64>,
    /// The order the servers go in (never verified first, then the oldest verify).
    pub order: Vec<String>,
}
