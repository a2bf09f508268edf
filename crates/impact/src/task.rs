//! Background tasks — a scrub, a verify, a rebuild, any command — that can be started, watched
//! and stopped. Every external program is run from an argument vector, never a shell string.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Why a task could not be started, watched or stopped.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The task's description is not one storlab knows.
    #[error("unknown task '{0}': expected one of btrfs-scrub:MOUNTPOINT[@SPEED], btrfs-replace:MOUNTPOINT:DEVID:NEWDEVICE, md-check:/dev/mdN[@SPEED], md-repair:/dev/mdN[@SPEED], zfs-scrub:POOL, tw_cli-verify:/cX/uY, storcli-cc:/cX/vY, cmd:NAME (a job file's [task.NAME]), cmd:START|STATUS|STOP")]
    Unknown(String),
    /// The description is malformed.
    #[error("task '{spec}': {why}")]
    Malformed {
        /// The description.
        spec: String,
        /// What is wrong and what would be right.
        why: String,
    },
    /// A program the task runs failed.
    #[error("{what} failed ({status}): {stderr}")]
    Command {
        /// The command line.
        what: String,
        /// Its exit status.
        status: String,
        /// What it said on stderr.
        stderr: String,
    },
    /// A program could not be run at all.
    #[error("cannot run {what}: {source}")]
    Spawn {
        /// The command line.
        what: String,
        /// The reason.
        source: std::io::Error,
    },
    /// The status never said done within the time allowed.
    #[error("task {task} did not finish within {seconds} s (set a longer --task-timeout if it is just slow)")]
    Timeout {
        /// The task.
        task: String,
        /// The limit.
        seconds: u64,
    },
}

/// How far a task is.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Progress {
    /// Percent done, when the system says.
    pub percent: Option<f64>,
    /// Bytes done, when the system says.
    pub bytes_done: Option<u64>,
}

/// A task's state at one look.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum TaskState {
    /// Not started, or not yet visible as started.
    Idle,
    /// Running, with its progress where known.
    Running(Progress),
    /// Finished: whether it completed (rather than being cancelled or failing), and what the
    /// system reported (error counts, say).
    Done {
        /// True when it ran to its end.
        completed: bool,
        /// The system's words.
        detail: String,
    },
}

/// A background task, in the manner of fio's ioengine_ops: start, look, stop.
pub trait Task: Send {
    /// What it is, for messages and events ("btrfs scrub of /mnt/pool").
    fn describe(&self) -> String;
    /// Starts it (returns once it is running).
    fn start(&mut self) -> Result<(), TaskError>;
    /// Looks at it.
    fn poll(&mut self) -> Result<TaskState, TaskError>;
    /// Stops it if it is running; a task that already ended is left as it is.
    fn stop(&mut self) -> Result<(), TaskError>;
}

/// Runs a program from an argument vector; its stdout, or an error with its stderr.
///
/// Output goes to unnamed temporary files rather than pipes, and the call returns when the
/// program exits: a program that leaves a daemon behind (`btrfs scrub start` does) would keep
/// pipes open, and reading them to their end would wait for the daemon's work to finish.
pub fn run(argv: &[String]) -> Result<String, TaskError> {
    use std::io::{Read, Seek};
    let what = argv.join(" ");
    let (prog, args) = argv.split_first().ok_or_else(|| TaskError::Malformed {
        spec: what.clone(),
        why: "an empty command".into(),
    })?;
    let spawn_err = |e: std::io::Error| TaskError::Spawn {
        what: what.clone(),
        source: e,
    };
    let mut out = tempfile::tempfile().map_err(spawn_err)?;
    let mut err = tempfile::tempfile().map_err(spawn_err)?;
    let status = Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone().map_err(spawn_err)?)
        .stderr(err.try_clone().map_err(spawn_err)?)
        .status()
        .map_err(spawn_err)?;
    let text = |f: &mut std::fs::File| {
        let mut s = String::new();
        let _ = f.rewind();
        let _ = f.read_to_string(&mut s);
        s
    };
    if !status.success() {
        return Err(TaskError::Command {
            what,
            status: status.to_string(),
            stderr: text(&mut err).trim().to_string(),
        });
    }
    Ok(text(&mut out))
}

/// Parses a task description: `btrfs-scrub:MOUNTPOINT[@SPEED]` (SPEED in bytes per second per
/// device, e.g. 20m), `md-check:/dev/mdN[@SPEED]` and `md-repair:/dev/mdN[@SPEED]`, or `cmd:START|STATUS|STOP` (each an argument vector, words separated by
/// spaces; the status command prints "running [PERCENT]" or "done [DETAIL]").
pub fn parse(spec: &str) -> Result<Box<dyn Task>, TaskError> {
    let (kind, args) = spec.split_once(':').ok_or_else(|| TaskError::Unknown(spec.into()))?;
    match kind {
        "btrfs-scrub" => {
            let (mount, speed) = split_speed(spec, args)?;
            Ok(Box::new(crate::btrfs::Scrub::new(Path::new(mount), speed)?))
        }
        "btrfs-replace" => {
            let mut parts = args.rsplitn(3, ':');
            let (new, devid, mount) = (parts.next(), parts.next(), parts.next());
            let (Some(new), Some(devid), Some(mount)) = (new, devid, mount) else {
                return Err(TaskError::Malformed {
                    spec: spec.into(),
                    why: "expected btrfs-replace:MOUNTPOINT:DEVID:NEWDEVICE".into(),
                });
            };
            Ok(Box::new(crate::btrfs::Replace::new(
                Path::new(mount),
                devid,
                Path::new(new),
            )?))
        }
        "tw_cli-verify" => Ok(Box::new(crate::vendor::VendorTask::new(
            crate::vendor::Vendor::TwCliVerify,
            args,
        )?)),
        "storcli-cc" => Ok(Box::new(crate::vendor::VendorTask::new(
            crate::vendor::Vendor::StorcliCc,
            args,
        )?)),
        "zfs-scrub" => Ok(Box::new(crate::vendor::VendorTask::new(
            crate::vendor::Vendor::ZfsScrub,
            args,
        )?)),
        "md-check" | "md-repair" => {
            let (dev, speed) = split_speed(spec, args)?;
            Ok(Box::new(crate::md::MdSync::new(dev, kind == "md-repair", speed)?))
        }
        "cmd" => {
            let parts: Vec<Vec<String>> = args
                .split('|')
                .map(|p| p.split_whitespace().map(String::from).collect())
                .collect();
            if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
                return Err(TaskError::Malformed {
                    spec: spec.into(),
                    why: "expected cmd:START ARGS|STATUS ARGS|STOP ARGS, three commands".into(),
                });
            }
            Ok(Box::new(CmdTask {
                start: parts[0].clone(),
                status: parts[1].clone(),
                stop: parts[2].clone(),
                started: false,
            }))
        }
        _ => Err(TaskError::Unknown(spec.into())),
    }
}

/// "WHERE@SPEED" → (WHERE, speed in bytes per second).
fn split_speed<'a>(spec: &str, args: &'a str) -> Result<(&'a str, Option<u64>), TaskError> {
    match args.rsplit_once('@') {
        Some((w, s)) => Ok((
            w,
            Some(parse_speed(s).ok_or_else(|| TaskError::Malformed {
                spec: spec.into(),
                why: format!("'{s}' is not a speed: expected bytes per second such as 20m"),
            })?),
        )),
        None => Ok((args, None)),
    }
}

fn parse_speed(s: &str) -> Option<u64> {
    let s = s.trim();
    let (n, m) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<u64>().ok()?.checked_mul(m).filter(|v| *v > 0)
}

/// A task given as three argument vectors (a job file's `[task.NAME]`): start, status, stop.
pub fn command(start: Vec<String>, status: Vec<String>, stop: Vec<String>) -> Box<dyn Task> {
    Box::new(CmdTask {
        start,
        status,
        stop,
        started: false,
    })
}

/// A task given as three commands: start, status, stop.
struct CmdTask {
    start: Vec<String>,
    status: Vec<String>,
    stop: Vec<String>,
    started: bool,
}

impl Task for CmdTask {
    fn describe(&self) -> String {
        format!("command task '{}'", self.start.join(" "))
    }
    fn start(&mut self) -> Result<(), TaskError> {
        run(&self.start)?;
        self.started = true;
        Ok(())
    }
    fn poll(&mut self) -> Result<TaskState, TaskError> {
        let out = run(&self.status)?;
        let line = out.lines().next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        Ok(match words.next() {
            Some("running") => TaskState::Running(Progress {
                percent: words.next().and_then(|p| p.trim_end_matches('%').parse().ok()),
                bytes_done: None,
            }),
            Some("done") => TaskState::Done {
                completed: true,
                detail: words.collect::<Vec<_>>().join(" "),
            },
            _ if !self.started => TaskState::Idle,
            _ => {
                return Err(TaskError::Command {
                    what: self.status.join(" "),
                    status: "exit 0".into(),
                    stderr: format!(
                        "printed '{line}': a status command prints \"running [PERCENT]\" or \"done [DETAIL]\""
                    ),
                })
            }
        })
    }
    fn stop(&mut self) -> Result<(), TaskError> {
        if self.started {
            run(&self.stop)?;
        }
        Ok(())
    }
}

/// Polls `task` every `every` until it is done or `limit` passes; returns the final state and
/// every look (seconds since the call, state).
pub fn wait_done(
    task: &mut dyn Task,
    every: Duration,
    limit: Duration,
) -> Result<(TaskState, Vec<(f64, TaskState)>), TaskError> {
    let t0 = std::time::Instant::now();
    let mut looks = Vec::new();
    loop {
        let s = task.poll()?;
        looks.push((t0.elapsed().as_secs_f64(), s.clone()));
        if matches!(s, TaskState::Done { .. }) {
            return Ok((s, looks));
        }
        if t0.elapsed() >= limit {
            return Err(TaskError::Timeout {
                task: task.describe(),
                seconds: limit.as_secs(),
            });
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_parse_or_say_why_not() {
        assert!(matches!(parse("raid-check:/dev/md0"), Err(TaskError::Unknown(_))));
        let err = |spec: &str| parse(spec).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err("cmd:a|b").contains("three commands"));
        assert!(err("btrfs-scrub:/mnt@fast").contains("not a speed"));
        assert_eq!(parse_speed("20m"), Some(20 << 20));
        assert!(parse("cmd:true|echo done|true").is_ok());
    }

    #[test]
    fn a_command_task_runs_its_three_commands() {
        let dir = tempfile::tempdir().unwrap();
        let flag = dir.path().join("running");
        let f = flag.to_str().unwrap();
        // The stand-in: "start" creates a file, "status" reports on it, "stop" removes it.
        let status = dir.path().join("status.sh");
        std::fs::write(
            &status,
            format!("if [ -e {f} ]; then echo running 40%; else echo done stopped; fi\n"),
        )
        .unwrap();
        let spec = format!("cmd:touch {f}|sh {}|rm -f {f}", status.display());
        let mut t = parse(&spec).unwrap();
        t.start().unwrap();
        assert_eq!(
            t.poll().unwrap(),
            TaskState::Running(Progress {
                percent: Some(40.0),
                bytes_done: None
            })
        );
        t.stop().unwrap();
        let (end, looks) = wait_done(t.as_mut(), Duration::from_millis(10), Duration::from_secs(5)).unwrap();
        assert_eq!(
            end,
            TaskState::Done {
                completed: true,
                detail: "stopped".into()
            }
        );
        assert_eq!(looks.len(), 1);
        // A status that never says done runs into the limit, with a clear message.
        let mut t = parse("cmd:true|echo running|true").unwrap();
        t.start().unwrap();
        let e = wait_done(t.as_mut(), Duration::from_millis(10), Duration::from_millis(50)).unwrap_err();
        assert!(e.to_string().contains("did not finish within"), "{e}");
        // A start that fails shows its stderr.
        let mut t = parse("cmd:ls /nonexistent/storlab|true|true").unwrap();
        let e = t.start().unwrap_err().to_string();
        assert!(e.contains("No such file"), "{e}");
    }
}
