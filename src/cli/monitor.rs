//! The flags of `storlab monitor …`.

use clap::Subcommand;

use super::{DbArgs, OutputArgs};

#[derive(Subcommand, Debug)]
pub enum MonitorCmd {
    /// Watch pools until stopped (Ctrl-C, SIGTERM) or for --duration: storlab monitor run
    /// --pool P1=/dev/sdb,/dev/sdc --pool P2=/srv/data2 --interval 10s --metrics 127.0.0.1:9464
    Run {
        #[command(flatten)]
        flags: storlab_monitor::request::RunFlags,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Per-pool statistics of a window in seed 002's shape: MAX, MIN, AVG (SD, SD/AVG %) of the
    /// long-term averages, total and per pool, read, write and both; operations, latency and
    /// utilisation beside.
    Stats {
        /// From (a date or time, UTC: 2026-11-23T08:00:00; or a span back from now: 2h).
        #[arg(long, value_name = "TIME|AGO")]
        from: Option<String>,
        /// To (as --from; default now).
        #[arg(long, value_name = "TIME|AGO")]
        to: Option<String>,
        /// Only these pools (the Tot rows are their sums); repeatable.
        #[arg(long = "pool", value_name = "NAME")]
        pools: Vec<String>,
        /// Only this host's monitors (default: this host).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Every host's monitors.
        #[arg(long, conflicts_with = "host")]
        all_hosts: bool,
        /// MiB/s instead of MB/s.
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// The events of a window: devices gone and back, counters wrapped, unmounts, md and btrfs
    /// changes, starts and stops.
    Events {
        /// From (as in `stats`).
        #[arg(long, value_name = "TIME|AGO")]
        from: Option<String>,
        /// To.
        #[arg(long, value_name = "TIME|AGO")]
        to: Option<String>,
        /// Only this host's monitors (default: this host).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Every host's monitors.
        #[arg(long, conflicts_with = "host")]
        all_hosts: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
}
