//! The risk model's answer as data (crates/sched computes it, crates/report draws it).

use serde::{Deserialize, Serialize};

/// One array's and the fleet's chances under one set of assumptions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RiskRow {
    /// What varies in this row, in words ("rebuild under load, 30 h").
    pub label: String,
    /// Hours between verifies (None: never verified).
    pub verify_interval_hours: Option<f64>,
    /// The rebuild's duration, hours.
    pub rebuild_hours: f64,
    /// Servers verifying at once (the scheduler's k), where the row is about k.
    pub k: Option<u32>,
    /// What k verifying at once costs the pool, percent, where known.
    pub pool_loss: Option<f64>,
    /// Probability one array loses data within the horizon.
    pub loss_array: f64,
    /// Probability any array of the fleet does.
    pub loss_fleet: f64,
    /// One array's mean time to data loss, years.
    pub mttdl_years: f64,
}

/// A simulation's check of one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RiskCheck {
    /// Paths drawn.
    pub runs: u64,
    /// The simulated mean time to data loss, years, with its 95 % interval.
    pub mttdl_years: [f64; 3],
    /// The solution's.
    pub solved_years: f64,
    /// Whether the solution lies in the interval.
    pub agrees: bool,
}

/// `storlab risk`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RiskReport {
    /// The RAID level in words.
    pub raid: String,
    /// Drives per array.
    pub drives: u32,
    /// Arrays in the fleet.
    pub arrays: u32,
    /// The horizon, years.
    pub years: f64,
    /// Drive failures per drive-year.
    pub failures_per_drive_year: f64,
    /// Latent sector errors per drive-year.
    pub latent_per_drive_year: f64,
    /// A drive's capacity, bytes, when given.
    pub capacity_bytes: Option<u64>,
    /// Where the rebuild times come from.
    pub rebuild_source: String,
    /// Where the verify interval comes from.
    pub verify_source: String,
    /// The figures as configured: rebuild idle, and under load when known.
    pub summary: Vec<RiskRow>,
    /// The figures over verify intervals.
    pub by_interval: Vec<RiskRow>,
    /// The figures over the scheduler's k, when a schedule's pool is given.
    pub by_k: Vec<RiskRow>,
    /// The simulation's check, when asked for.
    pub check: Option<RiskCheck>,
}
