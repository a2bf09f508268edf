//! Each pool's devices, read once a sample interval (not per file or per I/O): the disk under
//! the pool's directory and every device beneath it (md or dm members, a loop device's disk,
//! btrfs's devices: env's `stack`), so that each interval says whether a device bounded the pool
//! — its busiest device's busy share and average queue, the USE method's utilisation and
//! saturation (docs/bound.md).

use std::time::Instant;

use storlab_env::diskstats::{self, DiskLine};
use storlab_model::challenge::Pool;

/// The pools' devices and their counters at the last reading.
pub(super) struct PoolDevices {
    /// Per pool, its disks (its own first, then those beneath).
    disks: Vec<Vec<String>>,
    /// Every disk once.
    all: Vec<String>,
    before: Vec<DiskLine>,
    at: Instant,
}

impl PoolDevices {
    /// The pools' devices, read a first time.
    pub(super) fn of(pools: &[Pool]) -> PoolDevices {
        let disks: Vec<Vec<String>> = pools
            .iter()
            .map(|p| {
                let Some(top) = storlab_env::stack::disk_under(&p.path) else {
                    return Vec::new();
                };
                let below = storlab_env::stack::beneath(&top).into_iter().map(|b| b.name);
                std::iter::once(top.clone()).chain(below).collect()
            })
            .collect();
        let mut all: Vec<String> = Vec::new();
        for d in disks.iter().flatten() {
            if !all.contains(d) {
                all.push(d.clone());
            }
        }
        let (before, at) = diskstats::read(&all);
        PoolDevices { disks, all, before, at }
    }

    /// Per pool, since the last reading: its busiest device's busy share (0 to 1) and average
    /// queue (I/Os), or None for a pool whose devices are not in /proc/diskstats (tmpfs, NFS).
    pub(super) fn interval(&mut self) -> Vec<Option<(f64, f64)>> {
        let (now, at) = diskstats::read(&self.all);
        let ms = at.duration_since(self.at).as_secs_f64() * 1e3;
        let util = diskstats::utilisation(&self.before, &now, ms);
        self.before = now;
        self.at = at;
        self.disks
            .iter()
            .map(|ds| {
                util.iter()
                    .filter(|u| ds.contains(&u.name) && u.elapsed_ms > 0.0)
                    .map(|u| (u.util() / 100.0, u.in_queue as f64 / u.elapsed_ms))
                    .max_by(|a, b| a.0.total_cmp(&b.0))
            })
            .collect()
    }
}
