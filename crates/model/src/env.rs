//! What machine and storage a run ran on, as captured by crates/env (or, for an imported run,
//! as far as the imported file tells).

use serde::{Deserialize, Serialize};

/// The machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// Host name.
    pub host: String,
    /// Kernel release (uname -r).
    pub kernel: String,
    /// Kernel version string (uname -v).
    pub kernel_version: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: u32,
    /// Physical memory, bytes.
    pub memory_bytes: u64,
    /// One entry per target.
    pub targets: Vec<TargetEnv>,
    /// The clock the engine timed the run's I/O with ("tsc" or "clock_gettime").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
    /// Where an imported run's figures came from, when storlab did not measure them ("imported
    /// from fio 3.33: fio does not record the machine").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The storage under one target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetEnv {
    /// The target as given.
    pub path: String,
    /// Where its filesystem is mounted.
    pub mount_point: String,
    /// Filesystem type (ext4, xfs, btrfs, zfs, tmpfs, lustre, nfs, ...).
    pub fs_type: String,
    /// Mount options (per-mount and per-superblock, as mountinfo gives them).
    pub mount_options: String,
    /// What is mounted (a device path, a pool/dataset, a server:path).
    pub source: String,
    /// The block device (e.g. "vda", "loop0", "md0"), when there is one.
    pub device: Option<String>,
    /// The whole disk of a partition, or the device itself.
    pub disk: Option<String>,
    /// Vendor and model as the device reports them.
    pub model: Option<String>,
    /// The active I/O scheduler.
    pub scheduler: Option<String>,
    /// Whether the device says it rotates.
    pub rotational: Option<bool>,
    /// Logical block size, bytes.
    pub logical_block_size: Option<u64>,
    /// Backing file of a loop device.
    pub loop_backing_file: Option<String>,
    /// RAID layout where one can be read (btrfs profiles, md level, ZFS vdevs).
    pub raid: Option<String>,
    /// Filesystem size, bytes.
    pub fs_size_bytes: u64,
    /// Free space for an unprivileged user, bytes.
    pub fs_free_bytes: u64,
}

impl TargetEnv {
    /// A one-line description: "ext4 on loop0 (backing /tmp/x.img), scheduler none".
    pub fn describe(&self) -> String {
        let mut s = self.fs_type.clone();
        match (&self.device, &self.model) {
            (Some(d), Some(m)) => s += &format!(" on {d} ({m})"),
            (Some(d), None) => s += &format!(" on {d}"),
            _ if !self.source.is_empty() && self.source != self.fs_type => s += &format!(" ({})", self.source),
            _ => {}
        }
        if let Some(r) = &self.raid {
            s += &format!(", {r}");
        }
        s
    }
}
