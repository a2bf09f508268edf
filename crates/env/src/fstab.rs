//! The mount points the system is told to mount: /etc/fstab's, and systemd mount units'
//! `Where=`. A target under one that is not mounted now would be measured on the filesystem
//! beneath it (the root disk, as a rule) — the mistake a storage administrator makes when an
//! array failed to mount at boot — so storlab refuses it (crates/workload's targets.rs).
//!
//! `STORLAB_FSTAB` names another fstab to read instead of /etc/fstab (a chroot's, or a test's:
//! tests/cli.rs lists a mount point there without touching the machine's own).

use std::path::{Path, PathBuf};

/// A mount point the system is told to mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Where it is mounted.
    pub point: PathBuf,
    /// What is mounted there (a device, a UUID=…, a server:path).
    pub source: String,
    /// The filesystem type.
    pub fs_type: String,
    /// Which file says so.
    pub from: String,
}

/// fstab's own escapes: `\040` for a space, `\011` for a tab, `\134` for a backslash.
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(i) = rest.find('\\') {
        out += &rest[..i];
        let code = rest.get(i + 1..i + 4).and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(c) => {
                out.push(c as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out + rest
}

/// The mount points of an fstab's text (swap and `none` left out).
pub fn parse_fstab(text: &str, from: &str) -> Vec<Planned> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && f[1].starts_with('/') && f[2] != "swap").then(|| Planned {
                point: PathBuf::from(unescape(f[1])),
                source: unescape(f[0]),
                fs_type: f[2].to_string(),
                from: from.to_string(),
            })
        })
        .collect()
}

/// A systemd mount unit's `What=`, `Where=` and `Type=`.
pub fn parse_mount_unit(text: &str, from: &str) -> Option<Planned> {
    let key = |k: &str| {
        // The last setting of a key wins, as systemd reads a unit.
        text.lines()
            .rev()
            .filter_map(|l| l.trim().strip_prefix(k))
            .filter_map(|r| r.trim_start().strip_prefix('='))
            .map(|v| v.trim().to_string())
            .next()
    };
    Some(Planned {
        point: PathBuf::from(key("Where")?),
        source: key("What").unwrap_or_default(),
        fs_type: key("Type").unwrap_or_default(),
        from: from.to_string(),
    })
}

/// Every mount point the system is told to mount: fstab's (or `STORLAB_FSTAB`'s), then the
/// mount units in /etc/systemd/system and /run/systemd/system.
pub fn planned() -> Vec<Planned> {
    let fstab = std::env::var_os("STORLAB_FSTAB").map_or_else(|| PathBuf::from("/etc/fstab"), PathBuf::from);
    let mut all = parse_fstab(
        &std::fs::read_to_string(&fstab).unwrap_or_default(),
        &fstab.display().to_string(),
    );
    for dir in ["/etc/systemd/system", "/run/systemd/system"] {
        let units = std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path());
        for unit in units.filter(|p| p.extension().is_some_and(|x| x == "mount")) {
            let text = std::fs::read_to_string(&unit).unwrap_or_default();
            all.extend(parse_mount_unit(&text, &unit.display().to_string()));
        }
    }
    all
}

/// The deepest planned mount point above (or at) `path` that is not mounted now, when there
/// is one: what `path` was meant to be on. `/` is always mounted.
pub fn unmounted_above(path: &Path, planned: &[Planned], mounted: &[crate::mounts::Mount]) -> Option<Planned> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    planned
        .iter()
        .filter(|p| p.point != Path::new("/") && absolute.starts_with(&p.point))
        .max_by_key(|p| p.point.components().count())
        .filter(|p| !mounted.iter().any(|m| Path::new(&m.mount_point) == p.point))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fstab_lines_and_mount_units_read_as_the_system_reads_them() {
        let text = "# comment\nUUID=1234 / ext4 defaults 0 1\n/dev/md0 /srv/array\\040one xfs noauto 0 0\n\
                    /dev/sdb2 none swap sw 0 0\nserver:/export /mnt/nfs nfs defaults 0 0 # trailing\n";
        let p = parse_fstab(text, "fstab");
        let points: Vec<&Path> = p.iter().map(|x| x.point.as_path()).collect();
        assert_eq!(
            points,
            [Path::new("/"), Path::new("/srv/array one"), Path::new("/mnt/nfs")]
        );
        assert_eq!((p[1].source.as_str(), p[1].fs_type.as_str()), ("/dev/md0", "xfs"));
        let unit = "[Mount]\nWhat=/dev/disk/by-label/data\nWhere=/data\nType=ext4\n";
        let u = parse_mount_unit(unit, "data.mount").unwrap();
        assert_eq!((u.point.as_path(), u.fs_type.as_str()), (Path::new("/data"), "ext4"));
        assert!(parse_mount_unit("[Unit]\nDescription=x\n", "x.mount").is_none());
    }

    #[test]
    fn the_deepest_unmounted_point_above_a_path_is_found() {
        let planned = parse_fstab("/dev/a /srv ext4 d 0 0\n/dev/b /srv/array xfs d 0 0\n", "f");
        let mounted =
            crate::mounts::parse_mountinfo("1 0 8:1 / / rw - ext4 /dev/vda rw\n2 1 8:2 / /srv rw - ext4 /dev/a rw\n");
        let hit = unmounted_above(Path::new("/srv/array/run1"), &planned, &mounted).unwrap();
        assert_eq!(hit.point, Path::new("/srv/array"));
        assert!(unmounted_above(Path::new("/srv/other"), &planned, &mounted).is_none());
        assert!(unmounted_above(Path::new("/srv/arrayx"), &planned, &mounted).is_none());
    }
}
