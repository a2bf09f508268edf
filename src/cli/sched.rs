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
    Guard(GuardArgs),
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
    /// The schedule file.
    #[arg(long, value_name = "FILE", default_value = "/etc/storlab/schedule.toml")]
    pub schedule: std::path::PathBuf,
    /// Serve the status as Prometheus metrics at ADDR (host:port), refreshed every
    /// --interval, until stopped.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// How often --metrics reads the database.
    #[arg(long, value_name = "DURATION", default_value = "15s")]
    pub interval: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
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

/// `storlab sched guard` (hidden).
#[derive(Args, Debug)]
pub struct GuardArgs {
    /// The task, KIND:ARGS.
    #[arg(long)]
    pub task: String,
    /// Seconds until the lease deadline.
    #[arg(long)]
    pub deadline: f64,
    /// Seconds between looks at the task.
    #[arg(long)]
    pub poll: f64,
}
