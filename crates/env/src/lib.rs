//! What machine and storage a run ran on: host, kernel, CPUs, memory, and for each target its
//! filesystem type, mount options, block device, device model, I/O scheduler and RAID layout
//! (btrfs profiles, md levels, ZFS pools) where the system tells it.
//!
//! Everything is read from /proc and /sys (and `zpool` where ZFS is present); what cannot be
//! read is left empty rather than guessed.
#![deny(missing_docs)]

use std::ffi::CStr;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub use storlab_model::env::{Environment, TargetEnv};

/// Captures the environment, with one entry per target.
pub fn capture(targets: &[PathBuf]) -> Environment {
    let (host, kernel, kernel_version) = uname();
    let mounts = read_mountinfo();
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
    // SAFETY: uname fills the struct we pass; its fields are NUL-terminated C strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let f = |b: &[libc::c_char]| unsafe { CStr::from_ptr(b.as_ptr()) }.to_string_lossy().into_owned();
    (f(&u.nodename), f(&u.release), f(&u.version))
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

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone)]
struct Mount {
    dev: (u32, u32),
    mount_point: String,
    options: String,
    fs_type: String,
    source: String,
    super_options: String,
}

fn unescape(s: &str) -> String {
    // mountinfo escapes space, tab, newline and backslash as \ooo.
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8) {
                out.push(v as char);
                i += 4;
                continue;
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

fn read_mountinfo() -> Vec<Mount> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let (ma, mi) = f.get(2)?.split_once(':')?;
            Some(Mount {
                dev: (ma.parse().ok()?, mi.parse().ok()?),
                mount_point: unescape(f.get(4)?),
                options: f.get(5)?.to_string(),
                fs_type: r.first()?.to_string(),
                source: unescape(r.get(1).copied().unwrap_or("")),
                super_options: r.get(2).copied().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// The mount that holds `path`: the longest mount point that is a prefix of its canonical path
/// (the last such line wins, as later mounts hide earlier ones).
fn mount_of<'a>(path: &Path, mounts: &'a [Mount]) -> Option<&'a Mount> {
    let canon = fs::canonicalize(path).ok()?;
    let mut best: Option<&Mount> = None;
    for m in mounts {
        if canon.starts_with(&m.mount_point) && best.is_none_or(|b| m.mount_point.len() >= b.mount_point.len()) {
            best = Some(m);
        }
    }
    best
}

/// The per-mount options followed by the superblock's, each option once.
fn merge_options(mount: &str, superblock: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for o in mount.split(',').chain(superblock.split(',')).filter(|o| !o.is_empty()) {
        if !seen.contains(&o) {
            seen.push(o);
        }
    }
    seen.join(",")
}

/// (filesystem type, mount options) of the filesystem holding `path`.
pub fn mount_options(path: &Path) -> Option<(String, String)> {
    let mounts = read_mountinfo();
    mount_of(path, &mounts).map(|m| (m.fs_type.clone(), merge_options(&m.options, &m.super_options)))
}

fn read_trim(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn target_env(path: &Path, mounts: &[Mount]) -> TargetEnv {
    let mut t = TargetEnv {
        path: path.display().to_string(),
        ..Default::default()
    };
    if let Some(m) = mount_of(path, mounts) {
        t.mount_point = m.mount_point.clone();
        t.fs_type = m.fs_type.clone();
        t.mount_options = merge_options(&m.options, &m.super_options);
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
        .or_else(|| dev_name_of(m.dev));
        if let Some(d) = dev_name {
            fill_device(&mut t, &d);
        }
    }
    if let Ok(st) = fs::metadata(path) {
        if t.device.is_none() && (st.mode() & libc::S_IFMT) == libc::S_IFBLK {
            // A block device given directly as the target.
            let (ma, mi) = (libc::major(st.rdev()), libc::minor(st.rdev()));
            if let Some(d) = dev_name_of((ma, mi)) {
                fill_device(&mut t, &d);
            }
        }
    }
    if t.fs_type == "btrfs" {
        t.raid = btrfs_profiles(t.device.as_deref());
    } else if t.fs_type == "zfs" {
        t.raid = zfs_layout(t.source.split('/').next().unwrap_or(""));
    }
    if let Some((size, free)) = statvfs(path) {
        t.fs_size_bytes = size;
        t.fs_free_bytes = free;
    }
    t
}

fn dev_name_of(dev: (u32, u32)) -> Option<String> {
    if dev.0 == 0 {
        return None;
    }
    let link = fs::read_link(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    link.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn fill_device(t: &mut TargetEnv, dev: &str) {
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
fn btrfs_profiles(device: Option<&str>) -> Option<String> {
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

fn zfs_layout(pool: &str) -> Option<String> {
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

/// (size, free for unprivileged users) of the filesystem holding `path`, bytes.
pub fn statvfs(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the struct we pass for a NUL-terminated path.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some((s.f_blocks * s.f_frsize, s.f_bavail * s.f_frsize))
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
    }

    #[test]
    fn tmpfs_has_no_device() {
        let e = capture(&[PathBuf::from("/dev/shm")]);
        assert_eq!(e.targets[0].fs_type, "tmpfs");
        assert_eq!(e.targets[0].device, None);
    }

    #[test]
    fn options_once() {
        assert_eq!(merge_options("rw,relatime", "rw,discard"), "rw,relatime,discard");
    }

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }
}
