//! The block device under a target and what it says of itself — model, scheduler, rotation,
//! block size, a loop device's backing file — and the RAID layout where one can be read (md
//! from sysfs, btrfs profiles from sysfs, ZFS vdevs from `zpool`).

use std::fs;
use std::path::{Path, PathBuf};

use storlab_model::env::TargetEnv;

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

pub(crate) fn dev_name_of(dev: (u32, u32)) -> Option<String> {
    if dev.0 == 0 {
        return None;
    }
    let link = fs::read_link(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

pub(crate) fn fill_device(t: &mut TargetEnv, dev: &str) {
    t.device = Some(dev.to_string());
    let sys = PathBuf::from("/sys/class/block").join(dev);
    // A partition's queue and model live on its disk.
    let disk = if sys.join("partition").exists() {
        fs::canonicalize(&sys).ok().and_then(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        })
    } else {
        Some(dev.to_string())
    };
    let Some(disk) = disk else { return };
    let d = PathBuf::from("/sys/block").join(&disk);
    let vendor = read_trim(d.join("device/vendor"));
    let model = read_trim(d.join("device/model"));
    // A bare PCI vendor id ("0x1af4") says nothing to a reader; virtio disks are named so.
    let vendor = vendor.filter(|v| !v.starts_with("0x"));
    t.model = match (vendor, model) {
        (Some(v), Some(m)) => Some(format!("{v} {m}")),
        (None, Some(m)) => Some(m),
        (Some(v), None) => Some(v),
        (None, None) if disk.starts_with("vd") => Some("virtio disk".into()),
        (None, None) if disk.starts_with("loop") => Some("loop device".into()),
        _ => None,
    };
    t.scheduler = read_trim(d.join("queue/scheduler")).map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
            .unwrap_or(s)
    });
    t.rotational = read_trim(d.join("queue/rotational")).map(|r| r == "1");
    t.logical_block_size = read_trim(d.join("queue/logical_block_size")).and_then(|s| s.parse().ok());
    t.loop_backing_file = read_trim(d.join("loop/backing_file"));
    if let Some(level) = read_trim(d.join("md/level")) {
        let disks = read_trim(d.join("md/raid_disks")).unwrap_or_default();
        let chunk = read_trim(d.join("md/chunk_size")).and_then(|c| c.parse::<u64>().ok());
        let mut r = format!("md {level}, {disks} disks");
        if let Some(c) = chunk.filter(|c| *c > 0) {
            r += &format!(", chunk {} KiB", c / 1024);
        }
        t.raid = Some(r);
    }
    t.disk = Some(disk);
}

/// Data and metadata profiles of the btrfs filesystem on `device`, from
/// /sys/fs/btrfs/UUID/allocation/{data,metadata}/ (one directory per profile in use).
pub(crate) fn btrfs_profiles(device: Option<&str>) -> Option<String> {
    let device = device?;
    for fsdir in fs::read_dir("/sys/fs/btrfs").ok()?.flatten() {
        if !fsdir.path().join("devices").join(device).exists() {
            continue;
        }
        let devices = fs::read_dir(fsdir.path().join("devices"))
            .map(|d| d.count())
            .unwrap_or(0);
        let profile = |kind: &str| -> String {
            let mut p: Vec<String> = fs::read_dir(fsdir.path().join("allocation").join(kind))
                .map(|d| {
                    d.flatten()
                        .filter(|e| e.path().is_dir())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| n != "features")
                        .collect()
                })
                .unwrap_or_default();
            p.sort();
            if p.is_empty() {
                "single".into()
            } else {
                p.join("+")
            }
        };
        return Some(format!(
            "btrfs data {}, metadata {}, {devices} device(s)",
            profile("data"),
            profile("metadata")
        ));
    }
    None
}

pub(crate) fn zfs_layout(pool: &str) -> Option<String> {
    if pool.is_empty() {
        return None;
    }
    let out = std::process::Command::new("zpool")
        .args(["list", "-H", "-v", "-o", "name,size,health", pool])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let vdevs: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    Some(format!("zfs pool {pool}: {}", vdevs.join(" ")))
}
