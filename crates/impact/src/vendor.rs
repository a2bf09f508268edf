//! Tasks run through a vendor's or a volume manager's command line: a 3ware verify (`tw_cli`,
//! as in RAL's study), an LSI/Broadcom consistency check (`storcli`), a ZFS scrub (`zpool`).
//! The outputs parsed are those the vendors document (3ware CLI guide: `show` lists the unit's
//! Status and %V/I/M; StorCLI reference: `show cc` gives "Progress%" and "Status"; zpool-status:
//! the "scan:" lines). The programs are found on PATH.

use crate::task::{run, Progress, Task, TaskError, TaskState};

/// Which tool and what it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    /// `tw_cli /cX/uY start|stop verify`, `tw_cli /cX/uY show`.
    TwCliVerify,
    /// `storcli /cX/vY start|stop cc`, `storcli /cX/vY show cc`.
    StorcliCc,
    /// `zpool scrub [-s] POOL`, `zpool status POOL`.
    ZfsScrub,
}

/// A vendor task on one unit, virtual drive or pool.
pub struct VendorTask {
    vendor: Vendor,
    target: String,
    started: bool,
}

impl VendorTask {
    /// `target` is /cX/uY (tw_cli), /cX/vY (storcli) or a pool name (zfs).
    pub fn new(vendor: Vendor, target: &str) -> Result<VendorTask, TaskError> {
        let ok = match vendor {
            Vendor::TwCliVerify => target.starts_with("/c") && target.contains("/u"),
            Vendor::StorcliCc => target.starts_with("/c") && target.contains("/v"),
            Vendor::ZfsScrub => !target.is_empty() && !target.contains(' '),
        };
        if !ok {
            return Err(TaskError::Malformed {
                spec: target.into(),
                why: match vendor {
                    Vendor::TwCliVerify => "expected a 3ware unit such as /c0/u0",
                    Vendor::StorcliCc => "expected a virtual drive such as /c0/v0",
                    Vendor::ZfsScrub => "expected a pool name",
                }
                .into(),
            });
        }
        Ok(VendorTask {
            vendor,
            target: target.into(),
            started: false,
        })
    }

    fn argv(&self, words: &[&str]) -> Vec<String> {
        let (prog, lead): (&str, Vec<String>) = match self.vendor {
            Vendor::TwCliVerify => ("tw_cli", vec![self.target.clone()]),
            Vendor::StorcliCc => ("storcli", vec![self.target.clone()]),
            Vendor::ZfsScrub => ("zpool", vec![]),
        };
        let mut v = vec![prog.to_string()];
        v.extend(lead);
        v.extend(words.iter().map(|w| w.to_string()));
        if self.vendor == Vendor::ZfsScrub {
            v.push(self.target.clone());
        }
        v
    }
}

/// The first number followed by '%' in a text.
fn percent(s: &str) -> Option<f64> {
    s.split_whitespace()
        .find_map(|w| w.strip_suffix('%').and_then(|n| n.trim_end_matches(',').parse().ok()))
}

impl Task for VendorTask {
    fn describe(&self) -> String {
        match self.vendor {
            Vendor::TwCliVerify => format!("3ware verify of {}", self.target),
            Vendor::StorcliCc => format!("consistency check of {}", self.target),
            Vendor::ZfsScrub => format!("zfs scrub of pool {}", self.target),
        }
    }

    fn start(&mut self) -> Result<(), TaskError> {
        let words: &[&str] = match self.vendor {
            Vendor::TwCliVerify => &["start", "verify"],
            Vendor::StorcliCc => &["start", "cc"],
            Vendor::ZfsScrub => &["scrub"],
        };
        run(&self.argv(words))?;
        self.started = true;
        Ok(())
    }

    fn poll(&mut self) -> Result<TaskState, TaskError> {
        let idle_or_done = |started: bool, detail: String| {
            if started {
                TaskState::Done {
                    completed: true,
                    detail,
                }
            } else {
                TaskState::Idle
            }
        };
        Ok(match self.vendor {
            Vendor::TwCliVerify => {
                let out = run(&self.argv(&["show"]))?;
                // The unit's row: "u0  RAID-5  VERIFYING  -  12%  64K ..."
                let unit = self.target.rsplit('/').next().unwrap_or("");
                let row = out
                    .lines()
                    .find(|l| l.split_whitespace().next() == Some(unit))
                    .unwrap_or("");
                let status = row.split_whitespace().nth(2).unwrap_or("");
                if status.starts_with("VERIFY") {
                    TaskState::Running(Progress {
                        percent: percent(row),
                        bytes_done: None,
                    })
                } else {
                    idle_or_done(self.started, format!("unit status {status}"))
                }
            }
            Vendor::StorcliCc => {
                let out = run(&self.argv(&["show", "cc"]))?;
                let row = out.lines().find(|l| l.contains(" CC ")).unwrap_or("");
                if row.contains("In progress") {
                    TaskState::Running(Progress {
                        percent: row.split_whitespace().nth(2).and_then(|p| p.parse().ok()),
                        bytes_done: None,
                    })
                } else {
                    idle_or_done(
                        self.started,
                        row.split_whitespace().skip(2).collect::<Vec<_>>().join(" "),
                    )
                }
            }
            Vendor::ZfsScrub => {
                let out = run(&self.argv(&["status"]))?;
                let scan = out
                    .lines()
                    .skip_while(|l| !l.trim_start().starts_with("scan:"))
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ");
                if scan.contains("scrub in progress") {
                    TaskState::Running(Progress {
                        percent: scan
                            .split("% done")
                            .next()
                            .and_then(|x| x.split_whitespace().last())
                            .and_then(|p| p.parse().ok()),
                        bytes_done: None,
                    })
                } else if scan.contains("scrub canceled") {
                    TaskState::Done {
                        completed: false,
                        detail: scan.trim().trim_start_matches("scan:").trim().to_string(),
                    }
                } else {
                    idle_or_done(self.started, scan.trim().trim_start_matches("scan:").trim().to_string())
                }
            }
        })
    }

    fn stop(&mut self) -> Result<(), TaskError> {
        if !self.started || !matches!(self.poll()?, TaskState::Running(_)) {
            return Ok(());
        }
        let words: &[&str] = match self.vendor {
            Vendor::TwCliVerify => &["stop", "verify"],
            Vendor::StorcliCc => &["stop", "cc"],
            Vendor::ZfsScrub => &["scrub", "-s"],
        };
        run(&self.argv(words))?;
        Ok(())
    }

    /// `zpool scrub -p` pauses a scrub and `zpool scrub` goes on from there (zpool-scrub(8));
    /// StorCLI has `pause cc` and `resume cc`; a 3ware verify can only be stopped.
    fn pause(&mut self) -> Result<bool, TaskError> {
        let words: &[&str] = match self.vendor {
            Vendor::TwCliVerify => return Ok(false),
            Vendor::StorcliCc => &["pause", "cc"],
            Vendor::ZfsScrub => &["scrub", "-p"],
        };
        if self.started {
            run(&self.argv(words))?;
        }
        Ok(true)
    }

    fn resume(&mut self) -> Result<(), TaskError> {
        let words: &[&str] = match self.vendor {
            Vendor::TwCliVerify => return Ok(()),
            Vendor::StorcliCc => &["resume", "cc"],
            Vendor::ZfsScrub => &["scrub"],
        };
        run(&self.argv(words))?;
        Ok(())
    }
}
