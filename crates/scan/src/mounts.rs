//! What a mount's atime options mean for the question "not accessed for N days" (the mounts
//! themselves are read by crates/env).

use storlab_env::mounts::Mount;

use crate::{age_label, TimeBasis, DAY};

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
    fn notes_follow_the_options() {
        let m = storlab_env::mounts::parse_mountinfo(SAMPLE);
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
