//! Pools from the command line (`--pool NAME=MEMBER,MEMBER`) to the series the sampler reads.
//!
//! A member is a block device (/dev/sdb, /dev/md0, /dev/mapper/vg-lv) or a mount point. A
//! device stands for itself and the devices under it (sysfs `slaves/`: the members of an md
//! array, the physical volumes of a device-mapper device), which are watched too but not
//! counted again in the pool's throughput. A mount point stands for its filesystem (space and
//! inodes) and the devices it is mounted from: its block device, or for btrfs every device of
//! the filesystem (/sys/fs/btrfs/UUID/devices/), or for NFS the mount's own figures. Everything
//! is checked here, before anything starts: a member that does not exist or is a plain
//! directory, an empty pool, a device in two pools.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use storlab_env::mounts::{self, Mount};
use storlab_model::monitor::{PoolSpec, Series, SeriesKind};

use crate::MonitorError;

/// Where a series' figures come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A line of /proc/diskstats (by the kernel's name in the series) with this device number.
    Disk {
        /// Major, minor.
        dev: (u32, u32),
    },
    /// statvfs of a mount point, while it is mounted from `source`.
    Filesystem {
        /// The mount point.
        mount_point: PathBuf,
        /// What was mounted there when the monitor started.
        source: String,
    },
    /// /sys/block/NAME/md/.
    Md,
    /// /sys/fs/btrfs/UUID/devinfo/DEVID/error_stats, and the kernel's scrub counters.
    Btrfs {
        /// The filesystem's UUID.
        uuid: String,
        /// The device's id in it.
        devid: String,
        /// Where it is mounted (the scrub's counters are asked through it).
        mount_point: PathBuf,
    },
    /// /proc/self/mountstats' entry for this mount point.
    Nfs {
        /// The mount point.
        mount_point: String,
    },
}

/// A series and where its figures come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    /// The series.
    pub series: Series,
    /// Where its figures come from.
    pub source: Source,
}

fn input(msg: String) -> MonitorError {
    MonitorError::Input(msg)
}

/// Parses `--pool` arguments (`NAME=MEMBER[,MEMBER…]`).
pub fn parse(args: &[String]) -> Result<Vec<PoolSpec>, MonitorError> {
    if args.is_empty() {
        return Err(input(
            "no pool to monitor: give --pool NAME=DEVICE_OR_MOUNT[,…] (e.g. --pool P1=/dev/sdb,/dev/sdc --pool P2=/srv/data2)".into(),
        ));
    }
    let mut pools: Vec<PoolSpec> = Vec::new();
    for a in args {
        let Some((name, members)) = a.split_once('=') else {
            return Err(input(format!(
                "--pool {a}: expected NAME=DEVICE_OR_MOUNT[,…] (e.g. --pool P1=/dev/sdb,/dev/sdc)"
            )));
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
            return Err(input(format!(
                "--pool {a}: a pool's name is letters, digits, '_', '-' and '.' (got {name:?})"
            )));
        }
        if pools.iter().any(|p| p.name == name) {
            return Err(input(format!(
                "--pool {a}: pool {name} is given twice; give its members in one --pool"
            )));
        }
        let members: Vec<String> = members
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(String::from)
            .collect();
        if members.is_empty() {
            return Err(input(format!(
                "--pool {a}: pool {name} is empty: name at least one block device or mount point"
            )));
        }
        pools.push(PoolSpec {
            name: name.to_string(),
            members,
        });
    }
    Ok(pools)
}

/// The kernel's name of block device `dev` (sysfs /sys/dev/block/MAJ:MIN).
fn kernel_name(dev: (u32, u32)) -> Option<String> {
    let link = fs::read_link(format!("/sys/dev/block/{}:{}", dev.0, dev.1)).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

fn dev_of(name: &str) -> Option<(u32, u32)> {
    let s = fs::read_to_string(format!("/sys/class/block/{name}/dev")).ok()?;
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `name` and every device under it (slaves, recursively), the top first.
fn device_tree(name: &str, out: &mut Vec<(String, bool)>, top: bool) {
    if out.iter().any(|(n, _)| n == name) {
        return;
    }
    out.push((name.to_string(), top));
    let mut under: Vec<String> = fs::read_dir(format!("/sys/class/block/{name}/slaves"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    under.sort();
    for u in under {
        device_tree(&u, out, false);
    }
}

/// A btrfs device: its kernel name and, where btrfs-progs said it, its devid.
type BtrfsDevice = (String, Option<String>);

/// The btrfs filesystem (UUID) mounted at `mount_point` from device `name`, and each of its
/// devices (kernel name, devid). sysfs lists the devices (devices/) and the devids
/// (devinfo/) but links neither to the other, so the pairs come from `btrfs filesystem show`
/// (btrfs-progs), asked once here; without it the devices are watched and their error
/// counters named by devid.
fn btrfs_devices(name: &str, mount_point: &str) -> Option<(String, Vec<BtrfsDevice>)> {
    for fsdir in fs::read_dir("/sys/fs/btrfs").ok()?.flatten() {
        if !fsdir.path().join("devices").join(name).exists() {
            continue;
        }
        let uuid = fsdir.file_name().to_string_lossy().into_owned();
        let shown = std::process::Command::new("btrfs")
            .args(["filesystem", "show", mount_point])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        // "\tdevid    1 size 300.00MiB used 20.00MiB path /dev/loop0"
        let devid_of = |dev: &str| {
            shown.lines().find_map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let path = w.iter().position(|x| *x == "path").and_then(|i| w.get(i + 1))?;
                (Path::new(path).file_name()?.to_str()? == dev && w.first() == Some(&"devid")).then(|| w[1].to_string())
            })
        };
        let mut devs: Vec<BtrfsDevice> = fs::read_dir(fsdir.path().join("devices"))
            .ok()?
            .flatten()
            .map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                let id = devid_of(&n);
                (n, id)
            })
            .collect();
        devs.sort();
        return Some((uuid, devs));
    }
    None
}

/// One member's series (without numbers): disks with their top flag, then the others.
fn member_watches(
    pool: &str,
    member: &str,
    mounts: &[Mount],
) -> Result<Vec<(SeriesKind, String, bool, Source)>, MonitorError> {
    let path = Path::new(member);
    let meta = fs::metadata(path).map_err(|e| {
        input(format!(
            "pool {pool}: {member} {}; name a block device (/dev/sdb) or a mount point (/srv/data)",
            if e.kind() == std::io::ErrorKind::NotFound {
                "does not exist".to_string()
            } else {
                format!("cannot be read: {e}")
            }
        ))
    })?;
    let mut out = Vec::new();
    let disks = |name: &str, out: &mut Vec<(SeriesKind, String, bool, Source)>| {
        let mut tree = Vec::new();
        device_tree(name, &mut tree, true);
        for (n, top) in tree {
            if let Some(dev) = dev_of(&n) {
                if Path::new(&format!("/sys/class/block/{n}/md")).exists() {
                    out.push((SeriesKind::Md, n.clone(), false, Source::Md));
                }
                out.push((SeriesKind::Disk, n, top, Source::Disk { dev }));
            }
        }
    };
    if meta.file_type().is_block_device() {
        let dev = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
        let name = kernel_name(dev).ok_or_else(|| {
            input(format!(
                "pool {pool}: {member} is a block device that /sys does not know"
            ))
        })?;
        disks(&name, &mut out);
        return Ok(out);
    }
    let canon = fs::canonicalize(path).map_err(|e| input(format!("pool {pool}: {member}: {e}")))?;
    let shown = canon.to_string_lossy().into_owned();
    let Some(m) = mounts.iter().rev().find(|m| m.mount_point == shown) else {
        let on = mounts::mount_of(&canon, mounts)
            .map(|m| format!(" (it is on {}, mounted from {})", m.mount_point, m.source))
            .unwrap_or_default();
        return Err(input(format!(
            "pool {pool}: {member} is not a mount point{on}; name a mount point or a block device"
        )));
    };
    out.push((
        SeriesKind::Filesystem,
        shown.clone(),
        false,
        Source::Filesystem {
            mount_point: canon.clone(),
            source: m.source.clone(),
        },
    ));
    if m.fs_type == "nfs" || m.fs_type == "nfs4" {
        out.push((
            SeriesKind::Nfs,
            shown.clone(),
            false,
            Source::Nfs { mount_point: shown },
        ));
        return Ok(out);
    }
    let source_name = Path::new(&m.source)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if m.fs_type == "btrfs" {
        if let Some((uuid, devs)) = btrfs_devices(&source_name, &shown) {
            for (name, devid) in devs {
                disks(&name, &mut out);
                if let Some(devid) = devid {
                    out.push((
                        SeriesKind::Btrfs,
                        name,
                        false,
                        Source::Btrfs {
                            uuid: uuid.clone(),
                            devid,
                            mount_point: canon.clone(),
                        },
                    ));
                }
            }
            return Ok(out);
        }
    }
    if let Some(name) = kernel_name(m.dev).or_else(|| dev_of(&source_name).map(|_| source_name.clone())) {
        disks(&name, &mut out);
    }
    Ok(out)
}

/// The series of `pools`, numbered in order, each device once per pool; a device in two pools
/// is refused.
pub fn resolve(pools: &[PoolSpec]) -> Result<Vec<Watch>, MonitorError> {
    let mounts = mounts::mounts();
    let mut watches: Vec<Watch> = Vec::new();
    let mut owner: BTreeMap<(SeriesKind, String), (String, String)> = BTreeMap::new();
    for p in pools {
        for member in &p.members {
            for (kind, name, top, source) in member_watches(&p.name, member, &mounts)? {
                let key = (kind, name.clone());
                if let Some((other, via)) = owner.get(&key) {
                    if *other == p.name {
                        // The same device again in its own pool (a mount point and its device).
                        if let Some(w) = watches
                            .iter_mut()
                            .find(|w| w.series.pool == p.name && w.series.kind == kind && w.series.name == name)
                        {
                            w.series.top |= top;
                        }
                        continue;
                    }
                    return Err(input(format!(
                        "{} {name} is in pool {other} (through {via}) and in pool {} (through {member}); a device or filesystem belongs to one pool",
                        kind.name(),
                        p.name
                    )));
                }
                owner.insert(key, (p.name.clone(), member.clone()));
                watches.push(Watch {
                    series: Series {
                        idx: watches.len() as u32,
                        pool: p.name.clone(),
                        kind,
                        name,
                        top,
                    },
                    source,
                });
            }
        }
    }
    Ok(watches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(a: &str) -> Result<Vec<PoolSpec>, MonitorError> {
        parse(&[a.to_string()])
    }

    #[test]
    fn pools_parse_with_their_members_and_bad_ones_are_named() {
        let p = one("P1=/dev/sdb, /dev/sdc").unwrap();
        assert_eq!(p[0].name, "P1");
        assert_eq!(p[0].members, ["/dev/sdb", "/dev/sdc"]);
        assert!(one("P1")
            .unwrap_err()
            .to_string()
            .contains("expected NAME=DEVICE_OR_MOUNT"));
        assert!(one("P1=").unwrap_err().to_string().contains("pool P1 is empty"));
        assert!(one("P 1=/x").unwrap_err().to_string().contains("a pool's name"));
        let twice = parse(&["A=/x".into(), "A=/y".into()]).unwrap_err().to_string();
        assert!(twice.contains("pool A is given twice"), "{twice}");
        assert!(parse(&[]).unwrap_err().to_string().contains("no pool"));
    }

    #[test]
    fn a_member_that_is_missing_or_a_plain_directory_is_refused() {
        let missing = resolve(&one("P=/nonexistent/storlab").unwrap())
            .unwrap_err()
            .to_string();
        assert!(missing.contains("/nonexistent/storlab does not exist"), "{missing}");
        let dir = tempfile::tempdir().unwrap();
        let plain = resolve(&one(&format!("P={}", dir.path().display())).unwrap())
            .unwrap_err()
            .to_string();
        assert!(plain.contains("is not a mount point (it is on"), "{plain}");
    }

    #[test]
    fn a_mount_point_gives_its_filesystem_and_the_same_one_in_two_pools_is_refused() {
        // /proc is a mount point on every Linux machine, with no block device under it.
        let w = resolve(&one("P=/proc").unwrap()).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].series.kind, SeriesKind::Filesystem);
        assert_eq!(w[0].series.name, "/proc");
        let twice = resolve(&parse(&["A=/proc".into(), "B=/proc".into()]).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            twice.contains("filesystem /proc is in pool A (through /proc) and in pool B"),
            "{twice}"
        );
    }
}
