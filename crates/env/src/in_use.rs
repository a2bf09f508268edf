//! Whether writing to a block device (or to the file behind a loop device) would harm something
//! the kernel is using: a filesystem mounted from it or from one of its partitions, a device
//! that holds it (md, dm — LVM and dm-crypt —, bcache), a btrfs filesystem it is a member of,
//! swap on it, or anything that has it open exclusively (a zpool, mkfs, another md).
//!
//! Each is looked for the way the tools that guard against it look (fio's `device_is_mounted`
//! reads the mount table; e2fsprogs' `check_mount` also asks for swap, loop backing files and an
//! exclusive open), and every one found is named, so that a refusal says what it saw.

use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::mounts::Mount;

/// What uses a block device: one line per use found ("ext4 mounted at /data1 from
/// /dev/loop3p1"), empty when nothing does.
pub fn device_uses(dev: &Path) -> Vec<String> {
    let Ok(meta) = std::fs::metadata(dev) else {
        return Vec::new();
    };
    if !meta.file_type().is_block_device() {
        return Vec::new();
    }
    let mounts = crate::mounts::mounts();
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    let mut uses = Vec::new();
    for (name, number) in with_partitions(meta.rdev()) {
        uses.extend(mounted_from(&name, number, &mounts));
        uses.extend(btrfs_member(&name, &mounts));
        uses.extend(holders(&name));
        uses.extend(swap_on(&name, &swaps));
    }
    if uses.is_empty() {
        uses.extend(held_exclusively(dev));
    }
    uses
}

/// What uses the loop devices whose backing file is `file` (a write to the file is a write to
/// them): "/dev/loop3 (backed by this file): ext4 mounted at /mnt/x", empty when none is used.
pub fn backing_file_uses(file: &Path) -> Vec<String> {
    let Ok(canon) = std::fs::canonicalize(file) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut uses = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let backing = std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        let backing = backing.trim_end_matches('\n');
        // A backing file removed since it was attached reads "… (deleted)".
        if backing.is_empty() || Path::new(backing) != canon {
            continue;
        }
        let dev = PathBuf::from("/dev").join(&name);
        for u in device_uses(&dev) {
            uses.push(format!("{} (backed by this file): {u}", dev.display()));
        }
    }
    uses
}

/// A device's sysfs name and number, and those of its partitions (a write to a disk writes
/// into each of them; a write to a partition into it alone).
fn with_partitions(rdev: u64) -> Vec<(String, (u32, u32))> {
    let number = (libc::major(rdev), libc::minor(rdev));
    let Some(name) = crate::device::dev_name_of(number) else {
        return Vec::new();
    };
    let mut all = vec![(name.clone(), number)];
    let dir = PathBuf::from("/sys/class/block").join(&name);
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let p = e.path();
        if !p.join("partition").exists() {
            continue;
        }
        let dev = std::fs::read_to_string(p.join("dev")).unwrap_or_default();
        if let Some((ma, mi)) = dev.trim().split_once(':') {
            if let (Ok(ma), Ok(mi)) = (ma.parse(), mi.parse()) {
                all.push((e.file_name().to_string_lossy().into_owned(), (ma, mi)));
            }
        }
    }
    all
}

/// The device a mount's source names, by its sysfs name (None: not a device path).
fn source_device(source: &str) -> Option<String> {
    if !source.starts_with('/') {
        return None;
    }
    let m = std::fs::metadata(source).ok()?;
    m.file_type()
        .is_block_device()
        .then(|| crate::device::dev_name_of((libc::major(m.rdev()), libc::minor(m.rdev()))))
        .flatten()
}

/// Filesystems mounted from the device: by the device number the kernel gives the mount (ext4,
/// XFS), or by the device its source names (btrfs mounts carry an anonymous number).
fn mounted_from(name: &str, number: (u32, u32), mounts: &[Mount]) -> Vec<String> {
    let mut points: Vec<String> = Vec::new();
    for m in mounts {
        if m.dev == number || source_device(&m.source).as_deref() == Some(name) {
            let said = format!("{} mounted at {} from /dev/{name}", m.fs_type, m.mount_point);
            if !points.contains(&said) {
                points.push(said);
            }
        }
    }
    points
}

/// A btrfs filesystem the kernel knows the device as a member of, when it is mounted (from any
/// of its members: a RAID1's second device appears in no mount's source).
fn btrfs_member(name: &str, mounts: &[Mount]) -> Vec<String> {
    let Ok(filesystems) = std::fs::read_dir("/sys/fs/btrfs") else {
        return Vec::new();
    };
    let mut uses = Vec::new();
    for fs in filesystems.flatten() {
        let devices = fs.path().join("devices");
        if !devices.join(name).exists() {
            continue;
        }
        let members: Vec<String> = std::fs::read_dir(&devices)
            .into_iter()
            .flatten()
            .flatten()
            .map(|d| d.file_name().to_string_lossy().into_owned())
            .collect();
        for m in mounts.iter().filter(|m| m.fs_type == "btrfs") {
            let from = source_device(&m.source);
            if from.as_ref().is_some_and(|f| members.contains(f)) && from.as_deref() != Some(name) {
                uses.push(format!(
                    "a member of the btrfs filesystem {} ({} devices) mounted at {} from {}",
                    fs.file_name().to_string_lossy(),
                    members.len(),
                    m.mount_point,
                    m.source
                ));
                break;
            }
        }
    }
    uses
}

/// Devices built on this one (md, dm: LVM, dm-crypt, multipath; bcache), named as their owners
/// name them.
fn holders(name: &str) -> Vec<String> {
    let dir = PathBuf::from("/sys/class/block").join(name).join("holders");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|h| {
            let holder = h.file_name().to_string_lossy().into_owned();
            let dm_name = std::fs::read_to_string(h.path().join("dm/name")).ok();
            match dm_name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()) {
                Some(n) => format!(
                    "held by device-mapper device {holder} ({n}: LVM, dm-crypt or multipath) built on /dev/{name}"
                ),
                None if holder.starts_with("md") => format!("a member of the md array /dev/{holder} (/dev/{name})"),
                None => format!("held by /dev/{holder}, built on /dev/{name}"),
            }
        })
        .collect()
}

/// Swap in use on the device (/proc/swaps).
fn swap_on(name: &str, swaps: &str) -> Vec<String> {
    swaps
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|src| source_device(src).as_deref() == Some(name))
        .map(|src| format!("swap in use on {src}"))
        .collect()
}

/// The kernel's own answer: a block device opened with O_EXCL is refused (EBUSY) while a
/// filesystem, md, dm, a zpool or a program claims it exclusively (mkfs asks the same).
fn held_exclusively(dev: &Path) -> Option<String> {
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(dev)
    {
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Some(
            "held open exclusively (open with O_EXCL says busy): a mounted filesystem, an md, dm or ZFS pool member, or a program such as mkfs".to_string(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_backs_no_loop_device_is_used_by_nothing() {
        let d = std::env::temp_dir().join(format!("storlab-inuse-{}", std::process::id()));
        std::fs::write(&d, b"x").unwrap();
        assert!(backing_file_uses(&d).is_empty());
        std::fs::remove_file(&d).unwrap();
    }

    #[test]
    fn swap_lines_name_their_device() {
        let swaps = "Filename\tType\tSize\tUsed\tPriority\n/nonexistent/swapfile file 1024 0 -2\n";
        assert!(swap_on("loop0", swaps).is_empty());
    }

    #[test]
    fn a_regular_file_is_no_device() {
        assert!(device_uses(Path::new("/proc/self/status")).is_empty());
    }
}
