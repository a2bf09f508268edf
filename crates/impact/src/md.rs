//! Linux software RAID check and repair as a task, through the md sysfs files: `sync_action`
//! (write "check" or "repair" to start, "idle" to stop), `sync_completed` ("DONE / TOTAL" in
//! sectors while it runs), `mismatch_cnt` (what it found), and `sync_speed_max` (KiB/s, set for
//! the task and put back). The sysfs root is /sys, or $STORLAB_SYSFS_ROOT (the tests point it at
//! a stand-in tree, as these machines' kernels have no md).

use std::path::{Path, PathBuf};

use crate::task::{Progress, Task, TaskError, TaskState};

/// A check or repair of one md array.
pub struct MdSync {
    device: String,
    dir: PathBuf,
    action: &'static str,
    speed_kib: Option<u64>,
    saved_speed: Option<String>,
    started: bool,
    stopped: bool,
}

impl MdSync {
    /// `device` is /dev/mdN; `repair` chooses repair over check; `speed` is bytes per second.
    pub fn new(device: &str, repair: bool, speed: Option<u64>) -> Result<MdSync, TaskError> {
        let name = Path::new(device)
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| n.starts_with("md"))
            .ok_or_else(|| TaskError::Malformed {
                spec: device.into(),
                why: "expected an md array such as /dev/md0".into(),
            })?
            .to_string();
        let root = std::env::var_os("STORLAB_SYSFS_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/sys".into());
        let dir = root.join("block").join(&name).join("md");
        if !dir.join("sync_action").exists() {
            return Err(TaskError::Malformed {
                spec: device.into(),
                why: format!(
                    "{} has no {}: not an md array with a redundancy to check",
                    device,
                    dir.join("sync_action").display()
                ),
            });
        }
        Ok(MdSync {
            device: device.into(),
            dir,
            action: if repair { "repair" } else { "check" },
            speed_kib: speed.map(|b| (b / 1024).max(1)),
            saved_speed: None,
            started: false,
            stopped: false,
        })
    }

    fn read(&self, f: &str) -> Result<String, TaskError> {
        std::fs::read_to_string(self.dir.join(f))
            .map(|s| s.trim().to_string())
            .map_err(|e| TaskError::Spawn {
                what: format!("reading {}", self.dir.join(f).display()),
                source: e,
            })
    }

    fn write(&self, f: &str, v: &str) -> Result<(), TaskError> {
        std::fs::write(self.dir.join(f), v).map_err(|e| TaskError::Spawn {
            what: format!("writing '{v}' to {}", self.dir.join(f).display()),
            source: e,
        })
    }

    fn restore_speed(&mut self) {
        if let Some(v) = self.saved_speed.take() {
            // "200000 (system)" means no local limit: writing "system" restores that.
            let v = if v.contains("(system)") {
                "system".to_string()
            } else {
                v
            };
            let _ = self.write("sync_speed_max", &v);
        }
    }
}

impl Task for MdSync {
    fn describe(&self) -> String {
        format!("md {} of {}", self.action, self.device)
    }

    fn start(&mut self) -> Result<(), TaskError> {
        let now = self.read("sync_action")?;
        if now != "idle" {
            return Err(TaskError::Command {
                what: format!("md {} of {}", self.action, self.device),
                status: "refused".into(),
                stderr: format!("the array is busy with '{now}'; storlab starts a task only on an idle array"),
            });
        }
        if let Some(k) = self.speed_kib {
            self.saved_speed = Some(self.read("sync_speed_max")?);
            self.write("sync_speed_max", &k.to_string())?;
        }
        self.write("sync_action", self.action)?;
        self.started = true;
        Ok(())
    }

    fn poll(&mut self) -> Result<TaskState, TaskError> {
        let action = self.read("sync_action")?;
        if action == "idle" {
            if !self.started {
                return Ok(TaskState::Idle);
            }
            return Ok(TaskState::Done {
                completed: !self.stopped,
                detail: format!(
                    "mismatch_cnt {}",
                    self.read("mismatch_cnt").unwrap_or_else(|_| "?".into())
                ),
            });
        }
        let completed = self.read("sync_completed").unwrap_or_default();
        let percent = completed.split_once('/').and_then(|(a, b)| {
            let (a, b): (f64, f64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (b > 0.0).then(|| 100.0 * a / b)
        });
        Ok(TaskState::Running(Progress {
            percent,
            bytes_done: completed
                .split('/')
                .next()
                .and_then(|a| a.trim().parse::<u64>().ok())
                .map(|s| s * 512),
        }))
    }

    fn stop(&mut self) -> Result<(), TaskError> {
        if self.started && self.read("sync_action")? != "idle" {
            self.write("sync_action", "idle")?;
            self.stopped = true;
        }
        self.restore_speed();
        Ok(())
    }
}

impl Drop for MdSync {
    fn drop(&mut self) {
        self.restore_speed();
    }
}
