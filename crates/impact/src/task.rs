//! What a background task is — a scrub, a verify, a rebuild, any command that can be started,
//! watched and stopped — as a trait, and how its programs are run: from an argument vector,
//! never a shell string. The kinds of task implement the trait in modules of their own and are
//! listed in one table (kinds.rs); this file knows none of them.

use std::process::Command;
use std::time::Duration;

/// Why a task could not be started, watched or stopped.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The task's description is not one storlab knows.
    #[error("unknown task '{spec}': expected one of {known}")]
    Unknown {
        /// The description.
        spec: String,
        /// The kinds storlab knows, with their arguments (from the registry).
        known: String,
    },
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
    /// Pauses it where the system can go on later from where it stopped (btrfs' scrub cancel
    /// and resume, ZFS' `scrub -p`, a command task's pause command): true when paused; false
    /// when this kind cannot pause, and the caller stops it instead.
    fn pause(&mut self) -> Result<bool, TaskError> {
        Ok(false)
    }
    /// Goes on after [`Task::pause`].
    fn resume(&mut self) -> Result<(), TaskError> {
        Ok(())
    }
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
