//! A filesystem's size and free space, and whether it is read-only (statvfs): the one call the
//! capture and the workload's checks share.

use std::path::Path;

/// What statvfs says of the filesystem holding a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Space {
    /// Size, bytes.
    pub size: u64,
    /// Free for an unprivileged user, bytes; None where the filesystem does not say (ramfs and
    /// other pseudo filesystems report no blocks at all).
    pub free: Option<u64>,
    /// Mounted read-only.
    pub read_only: bool,
}

/// statvfs of the filesystem holding `path`; None when it cannot be asked.
pub fn statvfs(path: &Path) -> Option<Space> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(Space {
        size: s.f_blocks * s.f_frsize,
        free: (s.f_blocks > 0).then_some(s.f_bavail * s.f_frsize),
        read_only: s.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_filesystem_has_size_and_space() {
        let s = statvfs(Path::new("/")).unwrap();
        assert!(s.size > 0 && s.free.unwrap() <= s.size);
        assert!(statvfs(Path::new("/nonexistent/storlab")).is_none());
    }
}
