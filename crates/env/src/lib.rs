//! What machine and storage a run ran on: host, kernel, CPUs, memory, and for each target its
//! filesystem type, mount options, block device, device model, I/O scheduler and RAID layout
//! (btrfs profiles, md levels, ZFS pools) where the system tells it.
//!
//! Everything is read from /proc and /sys (and `zpool` where ZFS is present); what cannot be
//! read is left empty rather than guessed. One probe per fact, used by every crate that needs
//! it: the mounts (mounts.rs: mountinfo with its escapes, the mount of a path), a filesystem's
//! space (space.rs: statvfs), the block device and its RAID layout (device.rs); and a btrfs
//! scrub's progress and errors per device (btrfs.rs), for the impact study and the monitor;
//! the block devices' counters (diskstats.rs), for the monitor and fio's disk utilisation;
//! what uses a block device before storlab writes to it (in_use.rs: mounts, holders, btrfs
//! members, swap, an exclusive claim); what this machine can hold of a run's workers
//! (capacity.rs: memory, threads, file descriptors); the evidence of what bounded a phase — the
//! devices beneath a target's disk (stack.rs), the machine's CPU time (cpustat.rs), the cgroup's
//! I/O limits on a device (throttle.rs), an NFS mount's RPC counters (nfs.rs).
#![deny(missing_docs)]

pub mod btrfs;
pub mod capacity;
pub mod cpustat;
mod device;
pub mod diskstats;
pub mod fstab;
pub mod in_use;
pub mod mounts;
pub mod nfs;
pub mod space;
pub mod stack;
pub mod throttle;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use mounts::Mount;

pub use storlab_model::env::{Environment, TargetEnv};

/// Captures the environment, with one entry per target.
pub fn capture(targets: &[PathBuf]) -> Environment {
    let (host, kernel, kernel_version) = uname();
    let mounts = mounts::mounts();
    Environment {
        host,
        kernel,
        kernel_version,
        cpu_model: cpu_model(),
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        memory_bytes: memory_bytes(),
        targets: targets.iter().map(|t| target_env(t, &mounts)).collect(),
        ..Environment::default()
    }
}

/// This machine's host name (uname's nodename): what a run is stored under, without the rest
/// of a capture.
pub fn hostname() -> String {
    uname().0
}

/// Physical memory from /proc/meminfo, bytes (0 when unreadable).
pub fn memory_bytes() -> u64 {
    fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map(|kib| kib * 1024)
        .unwrap_or(0)
}

fn uname() -> (String, String, String) {
    let u = rustix::system::uname();
    let f = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
    (f(u.nodename()), f(u.release()), f(u.version()))
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model"))
                .and_then(|l| l.split_once(':').map(|(_, v)| v.trim().to_string()))
        })
        .unwrap_or_default()
}

/// The storage under one target.
fn target_env(path: &Path, mounts: &[Mount]) -> TargetEnv {
    let mut t = TargetEnv {
        path: path.display().to_string(),
        ..Default::default()
    };
    if let Some(m) = mounts::mount_of(path, mounts) {
        t.mount_point = m.mount_point.clone();
        t.fs_type = m.fs_type.clone();
        t.mount_options = m.all_options();
        t.source = m.source.clone();
        // The device: from the mount source when it is a block device (btrfs and others
        // report an anonymous st_dev), else from the mount's device number.
        let dev_name = if t.source.starts_with("/dev/") {
            fs::canonicalize(&t.source)
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        } else {
            None
        }
        .or_else(|| device::dev_name_of(m.dev));
        if let Some(d) = dev_name {
            device::fill_device(&mut t, &d);
        }
    }
    if let Ok(st) = fs::metadata(path) {
        if t.device.is_none() && (st.mode() & libc::S_IFMT) == libc::S_IFBLK {
            // A block device given directly as the target.
            let (ma, mi) = (libc::major(st.rdev()), libc::minor(st.rdev()));
            if let Some(d) = device::dev_name_of((ma, mi)) {
                device::fill_device(&mut t, &d);
            }
        }
    }
    if t.fs_type == "btrfs" {
        t.raid = device::btrfs_profiles(t.device.as_deref());
    } else if t.fs_type == "zfs" {
        t.raid = device::zfs_layout(t.source.split('/').next().unwrap_or(""));
    }
    if let Some(s) = space::statvfs(path) {
        t.fs_size_bytes = s.size;
        t.fs_free_bytes = s.free.unwrap_or(0);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_this_machine() {
        let e = capture(&[PathBuf::from("/")]);
        assert!(!e.host.is_empty());
        assert!(!e.kernel.is_empty());
        assert!(e.cpus >= 1);
        assert!(e.memory_bytes > 0);
        let t = &e.targets[0];
        assert_eq!(t.mount_point, "/");
        assert!(!t.fs_type.is_empty());
        assert!(t.fs_size_bytes > 0);
        assert_eq!(hostname(), e.host);
    }

    #[test]
    fn tmpfs_has_no_device() {
        let e = capture(&[PathBuf::from("/dev/shm")]);
        assert_eq!(e.targets[0].fs_type, "tmpfs");
        assert_eq!(e.targets[0].device, None);
    }
}
