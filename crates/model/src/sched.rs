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

/// One server's standing in the scheduler: from the schedule (its pool, its task) and the shared
/// database (its last complete verify, what runs now).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// The pool.
    pub pool: String,
    /// The server.
    pub server: String,
    /// Its task, as the schedule gives it.
    pub task: String,
    /// When its last complete verify ended (seconds since the epoch, the database's clock).
    pub last_complete: Option<f64>,
    /// How long that verify took, seconds.
    pub last_duration: Option<f64>,
    /// What it found, in the task's words.
    pub last_errors: Option<String>,
    /// The errors it found as a number, where the words say one.
    pub errors_found: Option<u64>,
    /// Running now: since when, the slot and the token, the last report.
    pub running: Option<RunningStatus>,
    /// When its agent last asked for a slot (None: no agent has).
    pub seen: Option<f64>,
    /// When it is next due: "running", "now" (its turn, place N), or a time.
    pub next_due: NextDue,
}

/// A task running now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningStatus {
    /// Granted at.
    pub since: f64,
    /// The slot.
    pub slot: i64,
    /// The fencing token.
    pub token: i64,
    /// The agent (host/pid).
    pub agent: String,
    /// Its last report (started, progress, paused, resumed) and its words.
    pub last: Option<String>,
}

/// When a server is next due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum NextDue {
    /// Verifying now.
    Running,
    /// Due now; its place in the pool's queue (1 goes next).
    Queued {
        /// The place.
        place: u32,
    },
    /// Due at this time (seconds since the epoch): its last verify is younger than the pool's
    /// `every`.
    At {
        /// When.
        t: f64,
    },
}

/// One pool's standing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolStatus {
    /// The pool.
    pub pool: String,
    /// Its k.
    pub k: u32,
    /// Slots held now.
    pub slots_in_use: u32,
    /// Its servers.
    pub servers: Vec<ServerStatus>,
}
