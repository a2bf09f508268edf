//! The flags of `storlab monitor …`.

use clap::{Args, Subcommand};

use super::{DbArgs, OutputArgs};

#[derive(Subcommand, Debug)]
pub enum MonitorCmd {
    /// Watch pools until stopped (Ctrl-C, SIGTERM) or for --duration: `storlab monitor run
    /// --pool P1=/dev/sdb,/dev/sdc --pool P2=/srv/data2 --interval 10s --metrics 127.0.0.1:9464`
    Run {
        #[command(flatten)]
        flags: storlab_monitor::request::RunFlags,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Per-pool statistics of a window in seed 002's shape: MAX, MIN, AVG (SD, SD/AVG %) of the
    /// long-term averages, total and per pool, read, write and both; operations, latency and
    /// utilisation beside.
    Stats(MonitorStatsArgs),
    /// The events of a window: devices gone and back, counters wrapped, unmounts, md and btrfs
    /// changes, starts and stops.
    Events(MonitorEventsArgs),
}

/// `storlab monitor stats`.
#[derive(Args, Debug)]
pub struct MonitorStatsArgs {
    #[command(flatten)]
    pub window: storlab_monitor::stats::StatsFlags,
    /// MiB/s instead of MB/s.
    #[arg(long)]
    pub mib: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `storlab monitor events`.
#[derive(Args, Debug)]
pub struct MonitorEventsArgs {
    #[command(flatten)]
    pub window: storlab_monitor::stats::EventsFlags,
    #[command(flatten)]
    pub output: OutputArgs,
}
