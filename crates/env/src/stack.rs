//! The devices beneath a target's disk, down to the ones that hold the data: an md array's or a
//! device-mapper device's members (sysfs `slaves`), the disk under a loop device's backing file,
//! a btrfs filesystem's other devices. A phase's bound is read on all of them — a loop device
//! never busy while the disk beneath it is saturated is not the limit.

use std::path::{Path, PathBuf};

/// A device beneath another: its kernel name and the device it lies under, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beneath {
    /// The kernel's name (vda, sdb, nvme0n1).
    pub name: String,
    /// What it is beneath ("a member of md0", "the disk under loop0's file").
    pub under: String,
}

/// The devices beneath `disk` (a whole disk's kernel name), each once, nearest first; at most
/// 64 (a stack deeper than that is not a storage stack).
pub fn beneath(disk: &str) -> Vec<Beneath> {
    let mut out: Vec<Beneath> = Vec::new();
    let mut todo = vec![disk.to_string()];
    while let Some(d) = todo.pop() {
        for b in direct(&d) {
            if b.name != disk && !out.iter().any(|o| o.name == b.name) && out.len() < 64 {
                todo.push(b.name.clone());
                out.push(b);
            }
        }
    }
    out
}

/// The devices directly beneath `disk`.
fn direct(disk: &str) -> Vec<Beneath> {
    let sys = PathBuf::from("/sys/block").join(disk);
    let mut out = Vec::new();
    for s in std::fs::read_dir(sys.join("slaves")).into_iter().flatten().flatten() {
        let name = crate::diskstats::disk_of(&s.file_name().to_string_lossy());
        out.push(Beneath {
            name,
            under: format!("a member of {disk}"),
        });
    }
    if let Ok(file) = std::fs::read_to_string(sys.join("loop/backing_file")) {
        let file = file.trim_end_matches('\n').trim_end_matches(" (deleted)");
        if let Some(d) = disk_under(Path::new(file)) {
            out.push(Beneath {
                name: d,
                under: format!("the disk under {disk}'s file {file}"),
            });
        }
    }
    for fs in std::fs::read_dir("/sys/fs/btrfs").into_iter().flatten().flatten() {
        let devices = fs.path().join("devices");
        if !devices.join(disk).exists() {
            continue;
        }
        for m in std::fs::read_dir(&devices).into_iter().flatten().flatten() {
            let name = crate::diskstats::disk_of(&m.file_name().to_string_lossy());
            if name != disk {
                out.push(Beneath {
                    name,
                    under: format!("a device of the btrfs filesystem on {disk}"),
                });
            }
        }
    }
    out
}

/// The whole disk holding the filesystem `path` is on, when it is one.
pub fn disk_under(path: &Path) -> Option<String> {
    let m = crate::mounts::mount_of(path, &crate::mounts::mounts())?;
    crate::device::dev_name_of(m.dev)
        .or_else(|| {
            let src = std::fs::canonicalize(&m.source).ok()?;
            src.file_name().map(|n| n.to_string_lossy().into_owned())
        })
        .map(|d| crate::diskstats::disk_of(&d))
}
