//! The monitor (`storlab monitor`): pools of block devices and mount points watched for days,
//! as seed 002's Perfmon watched its pools, feeding Prometheus and keeping its own record.
//!
//! - procfs.rs: /proc/diskstats and /proc/self/mountstats as text → figures;
//! - counters.rs: a counter's step between two readings, wraps of 32-bit counters undone;
//! - pools.rs: `NAME=MEMBER,…` → the series to watch (a mount point resolved through sysfs
//!   to the devices under it: md, device-mapper, btrfs), checked whole before anything starts;
//! - sampler.rs: one sweep over every series → samples and events;
//! - metrics.rs: the Prometheus exposition (prometheus-client) and its HTTP endpoint;
//! - request.rs: `storlab monitor run`'s flags over its configuration file, checked whole;
//! - run.rs: the loop — sweep, store, publish, keep the retention — until stopped;
//! - stats.rs: a window's per-pool statistics in seed 002's shape.
//!
//! The monitor only reads: /proc, /sys and statvfs. It never opens a device.

pub mod config;
pub mod counters;
pub mod metrics;
pub mod pools;
pub mod procfs;
pub mod request;
pub mod run;
pub mod sampler;
pub mod stats;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// The user's input: a pool, an interval, an address. Nothing was started or stored.
    #[error("{0}")]
    Input(String),
    /// A file the monitor reads could not be read.
    #[error("{0}")]
    Io(String),
    /// The database.
    #[error(transparent)]
    Store(#[from] storlab_store::StoreError),
    /// The database stayed away longer than the outage window: the monitor ended in order.
    #[error("{0}")]
    Away(String),
}
