//! The flags of `storlab sched …` and `storlab risk`.

use clap::{Args, Subcommand};

use super::DbArgs;

#[derive(Args, Debug)]
pub struct RiskArgs {
    #[command(flatten)]
    pub inputs: storlab_sched::question::RiskInputs,
    /// Write the figures, tables and plots as an HTML report.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

#[derive(Subcommand, Debug)]
pub enum SchedCmd {
    /// Check a schedule file and show its plan: per pool the servers, budget and per-server
    /// cost, k (servers verifying at once within the budget), what k cost the pool, and a
    /// round's duration alone, under load and in calendar time within the windows.
    Plan(SchedPlanArgs),
    /// Run this server's agent: take one of its pool's k slots from the shared database when
    /// it is the server's turn, run its task from this host's schedule file, renew the lease
    /// while it runs, pause it while the pool is busy or outside its windows, record what
    /// happened, give the slot back; again each round (a systemd service in the packages).
    Agent {
        #[command(flatten)]
        flags: storlab_sched::agent::AgentFlags,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Per pool and server: the last complete verify, its duration, errors found, what runs
    /// now, when each is next due; --metrics serves it to Prometheus.
    Status(SchedStatusArgs),
    /// The scheduler's event log: grants, renewals, starts, progress, ends, refusals.
    Events(SchedEventsArgs),
    /// The process that holds an agent's task (started by the agent).
    #[command(hide = true)]
    Guard(storlab_sched::guard::GuardFlags),
}

/// `storlab sched plan`.
#[derive(Args, Debug)]
pub struct SchedPlanArgs {
    /// The schedule file (TOML).
    pub file: std::path::PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// The database a `cost = "study:ID"` or `duration = "study:ID"` is read from.
    #[command(flatten)]
    pub db: DbArgs,
}

/// `storlab sched status`.
#[derive(Args, Debug)]
pub struct SchedStatusArgs {
    #[command(flatten)]
    pub flags: storlab_sched::status::StatusFlags,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `storlab sched events`.
#[derive(Args, Debug)]
pub struct SchedEventsArgs {
    /// Only this pool.
    #[arg(long)]
    pub pool: Option<String>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}
