//! Mounts: /proc/self/mountinfo read once, with its octal escapes decoded, and the mount a path
//! is on. The one reader of mountinfo: the environment capture, the workload's messages and the
//! scan's mount boundaries and atime notes all use it.

use std::path::Path;

/// One line of /proc/self/mountinfo (see proc(5)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount ID (field 1).
    pub id: u64,
    /// The device number (major, minor) of the filesystem.
    pub dev: (u32, u32),
    /// Where it is mounted.
    pub mount_point: String,
    /// The per-mount options (field 6), e.g. "rw,relatime".
    pub options: String,
    /// The filesystem type.
    pub fs_type: String,
    /// What is mounted (a device path, a pool/dataset, a server:path).
    pub source: String,
    /// The superblock's options.
    pub super_options: String,
}

impl Mount {
    /// The per-mount options followed by the superblock's, each option once.
    pub fn all_options(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        for o in self
            .options
            .split(',')
            .chain(self.super_options.split(','))
            .filter(|o| !o.is_empty())
        {
            if !seen.contains(&o) {
                seen.push(o);
            }
        }
        seen.join(",")
    }
}

/// Decodes mountinfo's escapes: space, tab, newline and backslash are written as \ooo. Works on
/// bytes, so that a name in UTF-8 around an escape survives.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses mountinfo's text.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let (ma, mi) = f.get(2)?.split_once(':')?;
            Some(Mount {
                id: f.first()?.parse().ok()?,
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

/// This process's mounts.
pub fn mounts() -> Vec<Mount> {
    parse_mountinfo(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// The mount `path` is on: by the mount ID the kernel reports for it (exact, bind mounts
/// included); for a path that does not exist yet, its nearest existing parent's.
pub fn mount_of(path: &Path, mounts: &[Mount]) -> Option<Mount> {
    use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
    let existing = path.ancestors().find(|p| !p.as_os_str().is_empty() && p.exists())?;
    let st = statx(CWD, existing, AtFlags::empty(), StatxFlags::MNT_ID).ok()?;
    mounts.iter().find(|m| m.id == st.stx_mnt_id).cloned()
}

/// The filesystem `p` is on, in words: "ext4 on /dev/loop3, mounted at /data1".
pub fn filesystem_words(p: &Path) -> String {
    match mount_of(p, &mounts()) {
        Some(m) => format!("{} on {}, mounted at {}", m.fs_type, m.source, m.mount_point),
        None => "a filesystem storlab cannot name".into(),
    }
}

/// For a path that does not exist, where it would be: "the nearest existing directory is
/// /srv (ext4 on /dev/sda1, mounted at /)", or "no part of it exists".
pub fn nearest_existing(p: &Path) -> String {
    p.ancestors()
        .skip(1)
        .find(|a| !a.as_os_str().is_empty() && a.is_dir())
        .map_or_else(
            || "no part of it exists".to_string(),
            |n| {
                format!(
                    "the nearest existing directory is {} ({})",
                    n.display(),
                    filesystem_words(n)
                )
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,discard
35 22 0:30 / /mnt/cold\\040data rw,noatime shared:9 - xfs /dev/sdb rw,attr2
36 22 0:31 / /mnt/café\\011x rw,strictatime - btrfs /dev/sdc rw
";

    #[test]
    fn mountinfo_is_read_with_escapes() {
        let m = parse_mountinfo(SAMPLE);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].id, 22);
        assert_eq!(m[0].dev, (253, 1));
        assert_eq!(m[1].mount_point, "/mnt/cold data");
        assert_eq!(m[1].options, "rw,noatime");
        assert_eq!(m[1].fs_type, "xfs");
        assert_eq!(m[2].mount_point, "/mnt/café\tx", "UTF-8 around an escape survives");
        assert_eq!(m[0].all_options(), "rw,relatime,discard");
    }

    #[test]
    fn a_path_is_on_its_mount_even_before_it_exists() {
        let all = mounts();
        let shm = mount_of(Path::new("/dev/shm"), &all).unwrap();
        assert_eq!(shm.fs_type, "tmpfs");
        let later = mount_of(Path::new("/dev/shm/not/yet/there"), &all).unwrap();
        assert_eq!(later.id, shm.id);
    }
}
