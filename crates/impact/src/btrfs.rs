//! btrfs scrub as a task: `btrfs scrub start|status|cancel`, with the scrub's speed limit set
//! per device through sysfs (/sys/fs/btrfs/FSID/devinfo/N/scrub_speed_max, bytes per second)
//! and put back afterwards.

use std::path::{Path, PathBuf};

use crate::task::{run, Progress, Task, TaskError, TaskState};

/// statfs(2) f_type of btrfs.
const BTRFS_SUPER_MAGIC: i64 = 0x9123_683E;

/// Bytes the kernel has scrubbed on device `devid` of the filesystem open at `dir`, or None
/// when no scrub runs there (see [`storlab_env::btrfs::scrub_progress`]).
fn kernel_scrubbed(dir: &std::fs::File, devid: u64) -> Option<u64> {
    storlab_env::btrfs::scrub_progress(dir, devid).map(|p| p.data_bytes_scrubbed + p.tree_bytes_scrubbed)
}

/// A scrub of one mounted btrfs filesystem.
pub struct Scrub {
    mount: PathBuf,
    speed: Option<u64>,
    /// (sysfs file, value before we set it) per device.
    saved: Vec<(PathBuf, String)>,
    started: bool,
    fsid: String,
    /// When this scrub was started, and the "Scrub started:" the status showed before (the
    /// last scrub's), to tell this one's record from the last one's.
    started_at: Option<(std::time::Instant, Option<String>)>,
    /// Bytes to scrub: what the filesystem uses on its devices, all copies (sysfs
    /// allocation/*/disk_used).
    total: u64,
    /// The most each device was seen to have scrubbed (the kernel forgets a device's count
    /// when its part ends).
    scrubbed: std::collections::BTreeMap<u64, u64>,
    /// Bytes scrubbed before the last pause (the kernel counts a resumed scrub from 0).
    before_pause: u64,
}

fn arg(p: &Path) -> String {
    p.display().to_string()
}

/// What `btrfs scrub status MOUNT` prints. btrfs-progs locks its status file while a scrub
/// writes it and then answers "Resource temporarily unavailable": asked again, for up to 2 s.
fn scrub_status(mount: &Path) -> Result<String, TaskError> {
    let argv = ["btrfs".into(), "scrub".into(), "status".into(), arg(mount)];
    for _ in 0..20 {
        match run(&argv) {
            Err(TaskError::Command { stderr, .. }) if stderr.contains("Resource temporarily unavailable") => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
    run(&argv)
}

/// The value of a "Name:   value" line of btrfs's output, trimmed.
fn field(out: &str, name: &str) -> Option<String> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(name))
        .map(|v| v.trim().to_string())
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
        let fsid =
            field(&scrub_status(mount)?, "UUID:").ok_or_else(|| bad("btrfs scrub status printed no UUID".into()))?;
        Ok(Scrub {
            mount: mount.to_path_buf(),
            speed,
            saved: Vec::new(),
            started: false,
            fsid,
            started_at: None,
            total: 0,
            scrubbed: Default::default(),
            before_pause: 0,
        })
    }

    fn sysfs(&self) -> PathBuf {
        Path::new("/sys/fs/btrfs").join(&self.fsid)
    }

    /// The device ids, from sysfs.
    fn devids(&self) -> Vec<u64> {
        std::fs::read_dir(self.sysfs().join("devinfo"))
            .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Looks at the kernel's counters: whether the scrub runs on any device, and the progress.
    fn kernel_progress(&mut self) -> (bool, Progress) {
        let mut running = false;
        if let Ok(dir) = std::fs::File::open(&self.mount) {
            for id in self.devids() {
                if let Some(b) = kernel_scrubbed(&dir, id) {
                    running = true;
                    let seen = self.scrubbed.entry(id).or_insert(0);
                    *seen = (*seen).max(b);
                }
            }
        }
        let done: u64 = self.before_pause + self.scrubbed.values().sum::<u64>();
        let progress = Progress {
            percent: (self.total > 0 && !self.scrubbed.is_empty())
                .then(|| (done as f64 / self.total as f64 * 100.0).min(100.0)),
            bytes_done: (!self.scrubbed.is_empty()).then_some(done),
        };
        (running, progress)
    }

    fn restore_speed(&mut self) {
        for (f, v) in self.saved.drain(..) {
            let _ = std::fs::write(&f, v);
        }
    }
}

impl Scrub {
    /// `btrfs scrub start`, then a look until the scrub is seen: the kernel running it, or the
    /// status file holding its own record. A start right after a cancelled scrub of the same
    /// filesystem (a reverse study after a cost study) can lose the race with the kernel's
    /// winding down: btrfs-progs then records the new scrub as neither running, cancelled nor
    /// finished ("interrupted") and no scrub runs. That start is made again, twice at most.
    fn start_and_see_it_begin(&mut self, before: &Option<String>) -> Result<(), TaskError> {
        for attempt in 0..3 {
            run(&["btrfs".into(), "scrub".into(), "start".into(), arg(&self.mount)])?;
            let t0 = std::time::Instant::now();
            // Left only when this start was lost ("interrupted").
            loop {
                if self.kernel_progress().0 {
                    return Ok(());
                }
                let out = scrub_status(&self.mount)?;
                if field(&out, "Scrub started:") != *before {
                    // This scrub's own record: "running" until the kernel's ioctl returns,
                    // then "finished" (a small filesystem, between two looks) or, when the
                    // ioctl was refused, "interrupted".
                    match field(&out, "Status:").as_deref() {
                        Some("interrupted") => break,
                        Some("finished") => return Ok(()),
                        _ => {}
                    }
                }
                // Not seen running yet: the watching decides (a record still the last one's
                // is believed after ten seconds).
                if t0.elapsed() > std::time::Duration::from_secs(5) {
                    return Ok(());
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            if attempt == 2 {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        Ok(())
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
                // Keep the value from before the first start: a second start without a stop in
                // between (the reverse study starts the scrub again after it ended) must not
                // take our own limit for the administrator's.
                if !self.saved.iter().any(|(g, _)| *g == f) {
                    self.saved.push((f, old.trim().to_string()));
                }
            }
        }
        let before = scrub_status(&self.mount).ok().and_then(|o| field(&o, "Scrub started:"));
        self.total = ["data", "metadata", "system"]
            .iter()
            .filter_map(|k| {
                std::fs::read_to_string(self.sysfs().join("allocation").join(k).join("disk_used"))
                    .ok()?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        self.scrubbed.clear();
        self.before_pause = 0;
        self.start_and_see_it_begin(&before)?;
        self.started = true;
        self.started_at = Some((std::time::Instant::now(), before));
        Ok(())
    }

    fn poll(&mut self) -> Result<TaskState, TaskError> {
        let (running, progress) = self.kernel_progress();
        if running {
            return Ok(TaskState::Running(progress));
        }
        let mut out = scrub_status(&self.mount)?;
        if !self.scrubbed.is_empty() {
            // The kernel has ended a scrub it was seen running; btrfs-progs writes its end to
            // the status file a moment later.
            for _ in 0..30 {
                if field(&out, "Status:").as_deref() != Some("running") {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
                out = scrub_status(&self.mount)?;
            }
        }
        let field = |name: &str| field(&out, name);
        // Just started and not yet seen by the kernel: the status file still shows the last
        // scrub, or already this one's first record, written before the kernel runs it —
        // neither in progress, cancelled nor finished, which btrfs-progs prints as
        // "interrupted" (a reverse study started right after a cancelled scrub read that and
        // took it for the end). For ten seconds at most; then the status file is believed.
        if let Some((at, before)) = &self.started_at {
            let starting = self.scrubbed.is_empty() && at.elapsed().as_secs() < 10;
            let last_ones = field("Scrub started:") == *before;
            if starting && (last_ones || field("Status:").as_deref() == Some("interrupted")) {
                return Ok(TaskState::Running(progress));
            }
        }
        let percent = progress.percent.or_else(|| {
            field("Bytes scrubbed:").and_then(|v| {
                let inner = v.split('(').nth(1)?.split('%').next()?;
                inner.trim().parse::<f64>().ok()
            })
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
                bytes_done: progress.bytes_done,
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
            None if self.started => TaskState::Running(progress),
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

    /// btrfs keeps a cancelled scrub's position in its status file; `btrfs scrub resume`
    /// goes on from there.
    fn pause(&mut self) -> Result<bool, TaskError> {
        if self.started {
            match run(&["btrfs".into(), "scrub".into(), "cancel".into(), arg(&self.mount)]) {
                Ok(_) => {}
                Err(TaskError::Command { stderr, .. }) if stderr.contains("not running") => {}
                Err(e) => return Err(e),
            }
            self.before_pause += self.scrubbed.values().sum::<u64>();
            self.scrubbed.clear();
        }
        Ok(true)
    }

    fn resume(&mut self) -> Result<(), TaskError> {
        let before = scrub_status(&self.mount).ok().and_then(|o| field(&o, "Scrub started:"));
        run(&["btrfs".into(), "scrub".into(), "resume".into(), arg(&self.mount)])?;
        self.started_at = Some((std::time::Instant::now(), before));
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
    /// The status line before this replace started (the last one's record).
    before: Option<String>,
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
            before: None,
        })
    }

    fn status_line(&self) -> Result<String, TaskError> {
        let out = run(&[
            "btrfs".into(),
            "replace".into(),
            "status".into(),
            "-1".into(),
            arg(&self.mount),
        ])?;
        Ok(out.lines().next().unwrap_or("").trim().to_string())
    }

    /// Waits for the child to exit (the replace ended); Err with its stderr if it failed.
    fn reap(&mut self) -> Result<(), TaskError> {
        if let Some(c) = self.child.as_mut() {
            let _ = c.wait();
        }
        self.child_failed()?;
        self.child = None;
        Ok(())
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
                if msg.contains("No space left") {
                    // The kernel sets each block group read-only while it copies it, which needs
                    // room for a new chunk: a filesystem with every byte allocated refuses.
                    msg.push_str(" (btrfs needs unallocated space on the devices to replace one: `btrfs filesystem usage` shows it; `btrfs balance start -dusage=0 MOUNT` returns the empty chunks a scrub can leave behind)");
                }
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
        // The status still shows the last replace until this one registers: remember it, so
        // that an old "canceled" is not taken for this one's end.
        self.before = self.status_line().ok();
        self.child = Some(child);
        self.stderr = Some(err);
        Ok(())
    }

    fn poll(&mut self) -> Result<TaskState, TaskError> {
        self.child_failed()?;
        let line = self.status_line()?;
        if self.child.is_some() && self.before.as_deref() == Some(line.as_str()) && !line.contains("% done") {
            return Ok(TaskState::Running(Progress::default()));
        }
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
            self.reap()?;
            TaskState::Done {
                completed: true,
                detail: line.split(", ").skip(2).collect::<Vec<_>>().join(", "),
            }
        } else if line.contains("canceled on") {
            self.reap()?;
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
