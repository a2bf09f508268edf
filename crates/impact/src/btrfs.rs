//! btrfs scrub as a task: `btrfs scrub start|status|cancel`, with the scrub's speed limit set
//! per device through sysfs (/sys/fs/btrfs/FSID/devinfo/N/scrub_speed_max, bytes per second)
//! and put back afterwards.

use std::path::{Path, PathBuf};

use crate::task::{run, Progress, Task, TaskError, TaskState};

/// statfs(2) f_type of btrfs.
const BTRFS_SUPER_MAGIC: i64 = 0x9123_683E;

/// A scrub of one mounted btrfs filesystem.
pub struct Scrub {
    mount: PathBuf,
    speed: Option<u64>,
    /// (sysfs file, value before we set it) per device.
    saved: Vec<(PathBuf, String)>,
    started: bool,
    fsid: String,
}

fn arg(p: &Path) -> String {
    p.display().to_string()
}

impl Scrub {
    /// Checks that `mount` is a mounted btrfs filesystem.
    pub fn new(mount: &Path, speed: Option<u64>) -> Result<Scrub, TaskError> {
        let bad = |why: String| TaskError::Malformed {
            spec: format!("btrfs-scrub:{}", mount.display()),
            why,
        };
        let fs = rustix::fs::statfs(mount).map_err(|e| bad(format!("{}: {e}", mount.display())))?;
        if fs.f_type as i64 != BTRFS_SUPER_MAGIC {
            return Err(bad(format!(
                "{} is not a btrfs filesystem (statfs type {:#x}); btrfs-scrub needs a btrfs mount point",
                mount.display(),
                fs.f_type
            )));
        }
        let status = run(&["btrfs".into(), "scrub".into(), "status".into(), arg(mount)])?;
        let fsid = status
            .lines()
            .find_map(|l| l.trim().strip_prefix("UUID:"))
            .map(|u| u.trim().to_string())
            .ok_or_else(|| bad("btrfs scrub status printed no UUID".into()))?;
        Ok(Scrub {
            mount: mount.to_path_buf(),
            speed,
            saved: Vec::new(),
            started: false,
            fsid,
        })
    }

    fn restore_speed(&mut self) {
        for (f, v) in self.saved.drain(..) {
            let _ = std::fs::write(&f, v);
        }
    }
}

impl Task for Scrub {
    fn describe(&self) -> String {
        format!("btrfs scrub of {}", self.mount.display())
    }

    fn start(&mut self) -> Result<(), TaskError> {
        if let Some(speed) = self.speed {
            let devs = Path::new("/sys/fs/btrfs").join(&self.fsid).join("devinfo");
            for d in std::fs::read_dir(&devs).map_err(|e| TaskError::Spawn {
                what: format!("reading {}", devs.display()),
                source: e,
            })? {
                let f = d
                    .map_err(|e| TaskError::Spawn {
                        what: format!("reading {}", devs.display()),
                        source: e,
                    })?
                    .path()
                    .join("scrub_speed_max");
                let old = std::fs::read_to_string(&f).unwrap_or_else(|_| "0".into());
                std::fs::write(&f, speed.to_string()).map_err(|e| TaskError::Spawn {
                    what: format!("setting {}", f.display()),
                    source: e,
                })?;
                self.saved.push((f, old.trim().to_string()));
            }
        }
        run(&["btrfs".into(), "scrub".into(), "start".into(), arg(&self.mount)])?;
        self.started = true;
        Ok(())
    }

    fn poll(&mut self) -> Result<TaskState, TaskError> {
        let out = run(&["btrfs".into(), "scrub".into(), "status".into(), arg(&self.mount)])?;
        let field = |name: &str| {
            out.lines()
                .find_map(|l| l.trim().strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        let percent = field("Bytes scrubbed:").and_then(|v| {
            let inner = v.split('(').nth(1)?.split('%').next()?;
            inner.trim().parse::<f64>().ok()
        });
        Ok(match field("Status:").as_deref() {
            Some("running") => TaskState::Running(Progress {
                percent,
                bytes_done: None,
            }),
            Some("finished") => TaskState::Done {
                completed: true,
                detail: field("Error summary:").unwrap_or_default(),
            },
            Some(other) => TaskState::Done {
                completed: false,
                detail: format!("{other}; {}", field("Error summary:").unwrap_or_default()),
            },
            // No stats yet: the scrub was asked to start and has not reported.
            None if self.started => TaskState::Running(Progress::default()),
            None => TaskState::Idle,
        })
    }

    fn stop(&mut self) -> Result<(), TaskError> {
        if self.started {
            // "not running" is what cancel says about a scrub that already ended.
            match run(&["btrfs".into(), "scrub".into(), "cancel".into(), arg(&self.mount)]) {
                Ok(_) => {}
                Err(TaskError::Command { stderr, .. }) if stderr.contains("not running") => {}
                Err(e) => {
                    self.restore_speed();
                    return Err(e);
                }
            }
        }
        self.restore_speed();
        Ok(())
    }
}

impl Drop for Scrub {
    fn drop(&mut self) {
        self.restore_speed();
    }
}
