//! The files a run created, removed however the run ends.

use std::path::{Path, PathBuf};

/// Removes the files a run created however the run ends, then flushes each filesystem they were
/// on (syncfs), so that their space is free when the next command looks: btrfs, for one, gives
/// the blocks of removed files back only when its transaction commits, and a job started at
/// once after a large run would otherwise be refused for want of space it is about to get.
pub(crate) struct Cleanup {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) keep: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let mut dirs: Vec<&Path> = Vec::new();
        for f in &self.files {
            match std::fs::remove_file(f) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => eprintln!("storlab: warning: could not remove {}: {e}", f.display()),
            }
            let dir = f
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        for dir in dirs {
            let synced = std::fs::File::open(dir).and_then(|d| rustix::fs::syncfs(&d).map_err(Into::into));
            if let Err(e) = synced {
                eprintln!(
                    "storlab: warning: could not flush {} after removing the files: {e}",
                    dir.display()
                );
            }
        }
    }
}
