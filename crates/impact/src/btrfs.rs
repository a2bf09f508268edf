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

/// Checks that `mount` is a mounted btrfs filesystem (the refusal names `spec`).
fn check_btrfs(spec: &str, mount: &Path) -> Result<(), TaskError> {
    let bad = |why: String| TaskError::Malformed { spec: spec.into(), why };
    let fs = rustix::fs::statfs(mount).map_err(|e| bad(format!("{}: {e}", mount.display())))?;
    if fs.f_type as i64 != BTRFS_SUPER_MAGIC {
        return Err(bad(format!(
            "{} is not a btrfs filesystem (statfs type {:#x}); this task needs a btrfs mount point",
            mount.display(),
            fs.f_type
        )));
    }
    Ok(())
}

impl Scrub {
    /// Checks that `mount` is a mounted btrfs filesystem.
    pub fn new(mount: &Path, speed: Option<u64>) -> Result<Scrub, TaskError> {
        let spec = format!("btrfs-scrub:{}", mount.display());
        let bad = |why: String| TaskError::Malformed {
            spec: spec.clone(),
            why,
        };
        check_btrfs(&spec, mount)?;
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
        // "Error summary:    csum=8" and, when there were errors, the lines under it:
        // "Corrected:      8", "Uncorrectable:  0", "Unverified:     0".
        let errors = || {
            let mut d = field("Error summary:").unwrap_or_default();
            for name in ["Corrected:", "Uncorrectable:", "Unverified:"] {
                if let Some(v) = field(name) {
                    d.push_str(&format!("; {} {v}", name.trim_end_matches(':').to_lowercase()));
                }
            }
            d
        };
        Ok(match field("Status:").as_deref() {
            Some("running") => TaskState::Running(Progress {
                percent,
                bytes_done: None,
            }),
            Some("finished") => TaskState::Done {
                completed: true,
                detail: errors(),
            },
            Some(other) => TaskState::Done {
                completed: false,
                detail: format!("{other}; {}", errors()),
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

/// A `btrfs replace` of one device by another: a real rebuild onto a spare. The replace runs in
/// a `btrfs replace start -B` child that the task owns (so a start that fails, e.g. a spare too
/// small, is seen with its message), watched through `btrfs replace status -1`, cancelled on stop.
pub struct Replace {
    mount: PathBuf,
    devid: String,
    new_device: PathBuf,
    child: Option<std::process::Child>,
    stderr: Option<std::fs::File>,
}

impl Replace {
    /// `btrfs-replace:MOUNT:DEVID:NEWDEV`: NEWDEV must be a block device, and is overwritten.
    pub fn new(mount: &Path, devid: &str, new_device: &Path) -> Result<Replace, TaskError> {
        let spec = format!("btrfs-replace:{}:{devid}:{}", mount.display(), new_device.display());
        check_btrfs(&spec, mount)?;
        if devid.parse::<u64>().is_err() {
            return Err(TaskError::Malformed {
                spec,
                why: format!("'{devid}' is not a device id (btrfs filesystem show lists them)"),
            });
        }
        use std::os::unix::fs::FileTypeExt;
        let is_block = std::fs::metadata(new_device)
            .map(|m| m.file_type().is_block_device())
            .unwrap_or(false);
        if !is_block {
            return Err(TaskError::Malformed {
                spec,
                why: format!(
                    "{} is not a block device: the spare to rebuild onto must be one",
                    new_device.display()
                ),
            });
        }
        Ok(Replace {
            mount: mount.to_path_buf(),
            devid: devid.into(),
            new_device: new_device.to_path_buf(),
            child: None,
            stderr: None,
        })
    }

    /// The child's exit, if it has exited: Err with its stderr when it failed.
    fn child_failed(&mut self) -> Result<(), TaskError> {
        let Some(c) = self.child.as_mut() else { return Ok(()) };
        if let Ok(Some(status)) = c.try_wait() {
            if !status.success() {
                use std::io::{Read, Seek};
                let mut msg = String::new();
                if let Some(f) = self.stderr.as_mut() {
                    let _ = f.rewind();
                    let _ = f.read_to_string(&mut msg);
                }
                self.child = None;
                return Err(TaskError::Command {
                    what: format!(
                        "btrfs replace start -B {} {} {}",
                        self.devid,
                        self.new_device.display(),
                        self.mount.display()
                    ),
                    status: status.to_string(),
                    stderr: msg.trim().to_string(),
                });
            }
        }
        Ok(())
    }
}

impl Task for Replace {
    fn describe(&self) -> String {
        format!(
            "btrfs replace of device {} by {} in {}",
            self.devid,
            self.new_device.display(),
            self.mount.display()
        )
    }

    fn start(&mut self) -> Result<(), TaskError> {
        let err = tempfile::tempfile().map_err(|e| TaskError::Spawn {
            what: "a temporary file".into(),
            source: e,
        })?;
        let child = std::process::Command::new("btrfs")
            .args(["replace", "start", "-B", &self.devid])
            .arg(&self.new_device)
            .arg(&self.mount)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(err.try_clone().map_err(|e| TaskError::Spawn {
                what: "a temporary file".into(),
                source: e,
            })?)
            .spawn()
            .map_err(|e| TaskError::Spawn {
                what: "btrfs replace start".into(),
                source: e,
            })?;
        self.child = Some(child);
        self.stderr = Some(err);
        Ok(())
    }

    fn poll(&mut self) -> Result<TaskState, TaskError> {
        self.child_failed()?;
        let out = run(&[
            "btrfs".into(),
            "replace".into(),
            "status".into(),
            "-1".into(),
            arg(&self.mount),
        ])?;
        let line = out.lines().next().unwrap_or("").trim().to_string();
        let errs = line.split(", ").skip(1).collect::<Vec<_>>().join(", ");
        Ok(if line.starts_with("Never started") {
            if self.child.is_some() {
                TaskState::Running(Progress::default())
            } else {
                TaskState::Idle
            }
        } else if line.contains("% done") {
            TaskState::Running(Progress {
                percent: line.split('%').next().and_then(|p| p.trim().parse().ok()),
                bytes_done: None,
            })
        } else if line.contains("finished on") {
            if let Some(mut c) = self.child.take() {
                let _ = c.wait();
            }
            TaskState::Done {
                completed: true,
                detail: line.split(", ").skip(2).collect::<Vec<_>>().join(", "),
            }
        } else if line.contains("canceled on") {
            if let Some(mut c) = self.child.take() {
                let _ = c.wait();
            }
            TaskState::Done {
                completed: false,
                detail: format!("canceled; {errs}"),
            }
        } else {
            return Err(TaskError::Command {
                what: format!("btrfs replace status -1 {}", self.mount.display()),
                status: "exit 0".into(),
                stderr: format!("printed '{line}', which storlab does not know"),
            });
        })
    }

    fn stop(&mut self) -> Result<(), TaskError> {
        if let Some(mut c) = self.child.take() {
            if c.try_wait().ok().flatten().is_none() {
                let _ = run(&["btrfs".into(), "replace".into(), "cancel".into(), arg(&self.mount)]);
            }
            let _ = c.wait();
        }
        Ok(())
    }
}

impl Drop for Replace {
    fn drop(&mut self) {
        // A study that ends (or is interrupted) stops the task it started, and only that one.
        let _ = self.stop();
    }
}
