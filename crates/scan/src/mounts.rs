//! Which mount a PATH is on, and what its atime options mean for the question "not accessed
//! for N days".

use std::path::Path;

use crate::{age_label, TimeBasis, DAY};

/// A line of /proc/self/mountinfo, the fields this crate needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount ID (field 1).
    pub id: u64,
    /// Where it is mounted.
    pub mount_point: String,
    /// The per-mount options (field 6), e.g. "rw,relatime".
    pub options: String,
    /// The filesystem type.
    pub fs_type: String,
}

/// Parses /proc/self/mountinfo (see proc(5)); octal escapes in paths are decoded.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            let fs_type = right.split(' ').next()?.to_string();
            Some(Mount {
                id: f.first()?.parse().ok()?,
                mount_point: unescape(f.get(4)?),
                options: f.get(5)?.to_string(),
                fs_type,
            })
        })
        .collect()
}

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

/// The mount a path is on, by the mount ID the kernel reports for it.
pub fn mount_of(path: &Path) -> Option<Mount> {
    use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
    let st = statx(CWD, path, AtFlags::empty(), StatxFlags::MNT_ID).ok()?;
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    parse_mountinfo(&text).into_iter().find(|m| m.id == st.stx_mnt_id)
}

/// What a mount's atime options mean for ages measured by `basis` against `thresholds`
/// (seconds): a warning or a note, or nothing when access times are kept exactly.
pub fn atime_note(paths: &str, mount: &Mount, basis: TimeBasis, thresholds: &[u64]) -> Option<String> {
    if basis == TimeBasis::Mtime {
        return None;
    }
    let opts: Vec<&str> = mount.options.split(',').collect();
    let shortest = thresholds.iter().min().copied().unwrap_or(u64::MAX);
    let at = format!("{paths} ({} on {})", mount.fs_type, mount.mount_point);
    if opts.contains(&"noatime") {
        Some(format!(
            "WARNING: {at} is mounted noatime: reading a file does not update its access time, so atime cannot tell which files are still read (it shows when they were created or last written at best). Use --time mtime for age since last change, or remount with relatime and ask again later."
        ))
    } else if opts.contains(&"strictatime") {
        None
    } else if shortest < DAY {
        Some(format!(
            "WARNING: {at} is mounted relatime: a read updates the access time at most once a day, so a threshold shorter than a day ({}) may count files read today as not accessed.",
            age_label(shortest)
        ))
    } else {
        // relatime is the kernel's default and shows as such in mountinfo; lazytime only
        // delays writing the times to disk, the times themselves are kept.
        Some(format!(
            "note: {at} is mounted relatime: access times are updated at most once a day, which is exact enough for thresholds of a day or more."
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,discard
35 22 0:30 / /mnt/cold\\040data rw,noatime shared:9 - xfs /dev/sdb rw,attr2
36 22 0:31 / /mnt/strict rw,strictatime - btrfs /dev/sdc rw
";

    #[test]
    fn mountinfo_is_read_with_escapes() {
        let m = parse_mountinfo(SAMPLE);
        assert_eq!(m.len(), 3);
        assert_eq!(m[1].mount_point, "/mnt/cold data");
        assert_eq!(m[1].options, "rw,noatime");
        assert_eq!(m[1].fs_type, "xfs");
        assert_eq!(m[0].id, 22);
    }

    #[test]
    fn notes_follow_the_options() {
        let m = parse_mountinfo(SAMPLE);
        let p = "/x";
        let days = [60 * DAY, 160 * DAY];
        assert!(atime_note(p, &m[1], TimeBasis::Atime, &days)
            .unwrap()
            .starts_with("WARNING"));
        assert!(atime_note(p, &m[1], TimeBasis::Mtime, &days).is_none());
        assert!(atime_note(p, &m[0], TimeBasis::Atime, &days)
            .unwrap()
            .starts_with("note"));
        assert!(atime_note(p, &m[0], TimeBasis::Max, &[3600])
            .unwrap()
            .contains("shorter than a day (1h)"));
        assert!(atime_note(p, &m[2], TimeBasis::Atime, &days).is_none());
    }
}
