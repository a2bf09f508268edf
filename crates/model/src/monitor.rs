//! The monitor (`storlab monitor`): what it watches — pools of block devices and mount points,
//! each resolved into series (a disk, a filesystem, an md array, a btrfs device, an NFS mount)
//! — and what it keeps of them: per interval the counters' deltas of each disk, each
//! filesystem's space, the gauges of the others, and events (a device gone, a counter that
//! wrapped, a filesystem unmounted).
//!
//! Samples come in three resolutions: every interval for the last days, then averages over the
//! long-term window, then hourly ones ([`Level`]); a sample's `seconds` is the time it covers,
//! so rates are always bytes over the seconds they were counted in, whatever the level.

use serde::{Deserialize, Serialize};

/// A pool as given on the command line: a name and its members (block devices or mount
/// points), in the order given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolSpec {
    /// The pool's name.
    pub name: String,
    /// Block device paths (/dev/sdb) or mount points (/srv/data), as given.
    pub members: Vec<String>,
}

/// What a monitor was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorSpec {
    /// The pools.
    pub pools: Vec<PoolSpec>,
    /// Seconds between samples.
    pub interval: f64,
    /// The long-term window, seconds: the smoothing of the seed's monitor, and the second
    /// resolution kept.
    pub lt: f64,
    /// How long samples are kept at full resolution, seconds.
    pub keep_full: f64,
    /// How long the long-term averages are kept, seconds.
    pub keep_lt: f64,
    /// How long anything is kept (hourly averages after `keep_lt`), seconds.
    pub retain: f64,
}

/// A sample's resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    /// One interval.
    Full = 0,
    /// The long-term window.
    LongTerm = 1,
    /// One hour.
    Hourly = 2,
}

impl Level {
    /// From its stored number.
    pub fn from_i64(n: i64) -> Option<Level> {
        match n {
            0 => Some(Level::Full),
            1 => Some(Level::LongTerm),
            2 => Some(Level::Hourly),
            _ => None,
        }
    }
}

/// What a series watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesKind {
    /// A block device in /proc/diskstats.
    Disk,
    /// A mounted filesystem (statvfs).
    Filesystem,
    /// An md array (/sys/block/mdX/md).
    Md,
    /// A btrfs filesystem's device error counters and scrub.
    Btrfs,
    /// An NFS mount (/proc/self/mountstats).
    Nfs,
}

impl SeriesKind {
    /// Its stored name.
    pub fn name(self) -> &'static str {
        match self {
            SeriesKind::Disk => "disk",
            SeriesKind::Filesystem => "filesystem",
            SeriesKind::Md => "md",
            SeriesKind::Btrfs => "btrfs",
            SeriesKind::Nfs => "nfs",
        }
    }

    /// From its stored name.
    pub fn parse(s: &str) -> Option<SeriesKind> {
        [
            SeriesKind::Disk,
            SeriesKind::Filesystem,
            SeriesKind::Md,
            SeriesKind::Btrfs,
            SeriesKind::Nfs,
        ]
        .into_iter()
        .find(|k| k.name() == s)
    }
}

/// One thing watched in a pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Its number within the monitor (what samples refer to).
    pub idx: u32,
    /// The pool it belongs to.
    pub pool: String,
    /// What it is.
    pub kind: SeriesKind,
    /// A device's kernel name (sdb, md0, dm-1, loop3) or a mount point.
    pub name: String,
    /// For a disk: true when it is what the pool's data goes through (the device a filesystem
    /// sits on, or a device given by itself), false for a member under an md or
    /// device-mapper device (counted there already). The pool's throughput sums the top ones.
    pub top: bool,
}

/// One disk's counters over one sample: the differences of /proc/diskstats' fields (wraps of
/// 32-bit counters undone), bytes rather than sectors, milliseconds as the kernel counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskDelta {
    /// Reads completed.
    pub reads: u64,
    /// Reads merged.
    pub reads_merged: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Milliseconds spent reading (summed over requests).
    pub read_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// Writes merged.
    pub writes_merged: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Milliseconds spent writing.
    pub write_ms: u64,
    /// Milliseconds the device had I/O in flight (busy time: utilisation).
    pub busy_ms: u64,
    /// Weighted milliseconds (in flight × time: average queue length).
    pub weighted_ms: u64,
    /// Requests in flight at the sample's end (a gauge; an average at coarser levels).
    pub in_flight: f64,
}

impl DiskDelta {
    /// Adds another sample's counters (gauges are averaged by the caller).
    pub fn add(&mut self, o: &DiskDelta) {
        self.reads += o.reads;
        self.reads_merged += o.reads_merged;
        self.read_bytes += o.read_bytes;
        self.read_ms += o.read_ms;
        self.writes += o.writes;
        self.writes_merged += o.writes_merged;
        self.write_bytes += o.write_bytes;
        self.write_ms += o.write_ms;
        self.busy_ms += o.busy_ms;
        self.weighted_ms += o.weighted_ms;
    }
}

/// What a disk did in one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskSample {
    /// The series.
    pub series: u32,
    /// The sample's end, seconds since the epoch.
    pub t: f64,
    /// The seconds it covers.
    pub seconds: f64,
    /// Its resolution.
    pub level: Level,
    /// The counters' differences.
    pub delta: DiskDelta,
}

impl DiskSample {
    /// Bytes read per second.
    pub fn read_rate(&self) -> f64 {
        per(self.delta.read_bytes as f64, self.seconds)
    }
    /// Bytes written per second.
    pub fn write_rate(&self) -> f64 {
        per(self.delta.write_bytes as f64, self.seconds)
    }
    /// Operations (reads and writes completed) per second.
    pub fn iops(&self) -> f64 {
        per((self.delta.reads + self.delta.writes) as f64, self.seconds)
    }
    /// Average time per completed I/O, seconds (0 with none).
    pub fn latency(&self) -> f64 {
        let n = self.delta.reads + self.delta.writes;
        if n == 0 {
            0.0
        } else {
            (self.delta.read_ms + self.delta.write_ms) as f64 / 1000.0 / n as f64
        }
    }
    /// Average queue length (weighted time over wall time).
    pub fn queue(&self) -> f64 {
        per(self.delta.weighted_ms as f64 / 1000.0, self.seconds)
    }
    /// The fraction of the time the device was busy, 0 to 1.
    pub fn utilisation(&self) -> f64 {
        per(self.delta.busy_ms as f64 / 1000.0, self.seconds).min(1.0)
    }
}

fn per(x: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        x / seconds
    } else {
        0.0
    }
}

/// A filesystem's space and inodes at a sample's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FsSample {
    /// The series.
    pub series: u32,
    /// The sample's end, seconds since the epoch.
    pub t: f64,
    /// Its resolution.
    pub level: Level,
    /// Size, bytes.
    pub size: u64,
    /// Free for an unprivileged user, bytes.
    pub avail: u64,
    /// Free, bytes.
    pub free: u64,
    /// Inodes.
    pub files: u64,
    /// Free inodes.
    pub files_free: u64,
}

/// A named figure of an md array, a btrfs filesystem or an NFS mount at a sample's end:
/// `sync_completed` (0 to 1), `mismatch_cnt`, `degraded`, `read_io_errs`,
/// `nfs_read_ops`, `nfs_rtt_seconds`, …
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GaugeSample {
    /// The series.
    pub series: u32,
    /// The sample's end, seconds since the epoch.
    pub t: f64,
    /// Its resolution.
    pub level: Level,
    /// The figure's name.
    pub key: String,
    /// Its value.
    pub value: f64,
}

/// Something that happened to what a monitor watches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MonitorEvent {
    /// When, seconds since the epoch.
    pub t: f64,
    /// The pool.
    pub pool: String,
    /// The device or mount point.
    pub name: String,
    /// What: `device-gone`, `device-back`, `counter-wrapped`, `counters-reset`, `unmounted`,
    /// `mounted`, `md-state`, `md-sync`, `btrfs-errors`, `started`, `stopped`.
    pub kind: String,
    /// In words.
    pub detail: String,
}

/// One pool's figures over one interval (or a longer window), summed over its top disks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolPoint {
    /// The end, seconds since the epoch.
    pub t: f64,
    /// The seconds covered.
    pub seconds: f64,
    /// Bytes read per second.
    pub read_rate: f64,
    /// Bytes written per second.
    pub write_rate: f64,
    /// Operations per second.
    pub iops: f64,
    /// Average time per I/O, seconds.
    pub latency: f64,
    /// The busiest device's utilisation, 0 to 1.
    pub utilisation: f64,
    /// The longest average queue of its devices (weighted time over wall time), leaves
    /// included: with the utilisation, whether a device bounded the pool over the interval.
    #[serde(default)]
    pub queue: f64,
    /// Bytes read (exact, for sums).
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
}

/// One pool's other figures over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolFigures {
    /// The pool.
    pub pool: String,
    /// Seconds of samples.
    pub seconds: f64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Average operations per second.
    pub iops: f64,
    /// Average time per I/O, seconds.
    pub latency: f64,
    /// Mean and largest utilisation of the busiest device, 0 to 1.
    pub utilisation: (f64, f64),
    /// The share of the window its devices bounded it: intervals a device was busy and queueing
    /// (crates/stats bound.rs's device rule), by their seconds, 0 to 1.
    #[serde(default)]
    pub device_bound: f64,
}

/// The pools' figures from disk samples: for each pool, its points in time order, one per
/// distinct sample end (the samples of a pool's top disks at one end add up; latency is
/// weighted by operations; utilisation is the busiest disk's, leaves included).
pub fn pool_points(series: &[Series], samples: &[DiskSample]) -> Vec<(String, Vec<PoolPoint>)> {
    let mut pools: Vec<String> = Vec::new();
    for s in series {
        if !pools.contains(&s.pool) {
            pools.push(s.pool.clone());
        }
    }
    pools
        .into_iter()
        .map(|pool| {
            let mut pts: Vec<(f64, f64, DiskDelta, f64, f64)> = Vec::new();
            let mut sorted: Vec<&DiskSample> = samples
                .iter()
                .filter(|d| series.iter().any(|s| s.idx == d.series && s.pool == pool))
                .collect();
            sorted.sort_by(|a, b| a.t.total_cmp(&b.t));
            for d in sorted {
                let s = series.iter().find(|s| s.idx == d.series).expect("filtered");
                // Samples whose ends are within a millisecond belong to one sweep.
                let i = match pts.last() {
                    Some(last) if (last.0 - d.t).abs() < 1e-3 => pts.len() - 1,
                    _ => {
                        pts.push((d.t, d.seconds, DiskDelta::default(), 0.0, 0.0));
                        pts.len() - 1
                    }
                };
                if s.top {
                    pts[i].2.add(&d.delta);
                }
                pts[i].3 = pts[i].3.max(d.utilisation());
                pts[i].4 = pts[i].4.max(d.queue());
            }
            let points = pts
                .into_iter()
                .map(|(t, seconds, delta, util, queue)| {
                    let d = DiskSample {
                        series: 0,
                        t,
                        seconds,
                        level: Level::Full,
                        delta,
                    };
                    PoolPoint {
                        t,
                        seconds,
                        read_rate: d.read_rate(),
                        write_rate: d.write_rate(),
                        iops: d.iops(),
                        latency: d.latency(),
                        utilisation: util,
                        queue,
                        read_bytes: delta.read_bytes,
                        write_bytes: delta.write_bytes,
                    }
                })
                .collect();
            (pool, points)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(idx: u32, pool: &str, top: bool) -> Series {
        Series {
            idx,
            pool: pool.into(),
            kind: SeriesKind::Disk,
            name: format!("d{idx}"),
            top,
        }
    }

    fn sample(series: u32, t: f64, read_bytes: u64, busy_ms: u64) -> DiskSample {
        DiskSample {
            series,
            t,
            seconds: 10.0,
            level: Level::Full,
            delta: DiskDelta {
                read_bytes,
                reads: read_bytes / 4096,
                read_ms: read_bytes / 4096,
                busy_ms,
                ..DiskDelta::default()
            },
        }
    }

    #[test]
    fn a_pools_rate_sums_its_top_disks_and_its_utilisation_is_the_busiest_disks() {
        // md0 (top) over sdb and sdc: the members' bytes are md0's already.
        let series = vec![
            disk(0, "P", true),
            disk(1, "P", false),
            disk(2, "P", false),
            disk(3, "Q", true),
        ];
        let samples = vec![
            sample(0, 100.0, 40960, 1000),
            sample(1, 100.0005, 20480, 9000),
            sample(2, 100.0, 20480, 2000),
            sample(3, 100.0, 4096, 100),
            sample(0, 110.0, 0, 0),
        ];
        let pts = pool_points(&series, &samples);
        assert_eq!(pts[0].0, "P");
        assert_eq!(pts[0].1.len(), 2);
        assert_eq!(pts[0].1[0].read_rate, 4096.0);
        assert_eq!(pts[0].1[0].iops, 1.0);
        assert!((pts[0].1[0].utilisation - 0.9).abs() < 1e-9);
        assert!((pts[0].1[0].latency - 0.001).abs() < 1e-12);
        assert_eq!(pts[0].1[1].read_rate, 0.0);
        assert_eq!(pts[1].1[0].read_rate, 409.6);
    }

    #[test]
    fn a_disks_figures_come_from_its_deltas_over_the_seconds_covered() {
        let d = DiskSample {
            series: 0,
            t: 0.0,
            seconds: 2.0,
            level: Level::Full,
            delta: DiskDelta {
                reads: 10,
                writes: 30,
                read_bytes: 4 << 20,
                write_bytes: 2 << 20,
                read_ms: 20,
                write_ms: 60,
                busy_ms: 3000,
                weighted_ms: 4000,
                ..DiskDelta::default()
            },
        };
        assert_eq!(d.read_rate(), (2 << 20) as f64);
        assert_eq!(d.write_rate(), (1 << 20) as f64);
        assert_eq!(d.iops(), 20.0);
        assert_eq!(d.latency(), 0.002);
        assert_eq!(d.queue(), 2.0);
        assert_eq!(d.utilisation(), 1.0, "busy time beyond the wall time is capped");
    }
}
