//! The guard: the process that holds a server's task while its agent holds the lease.
//!
//! An agent never runs its task in its own process. It starts a guard (`storlab sched guard`,
//! a child with a pipe each way), and the guard starts, watches, pauses and stops the task. The
//! guard knows one thing about the lease: a deadline, which the agent moves on with every
//! renewal. The guard stops the task
//!
//! - when the deadline passes (the agent could not renew: the database is gone, the lease was
//!   lost) — the agent sets it a margin before the lease's expiry, so the task is stopped before
//!   the slot can be granted to another server;
//! - when its pipe from the agent closes: the agent died, even by `kill -9`, which no handler
//!   in the agent could catch;
//! - when the agent says so (the lease was lost, the agent was told to stop).
//!
//! The protocol is lines. Agent → guard: `deadline SECONDS` (from now), `pause REASON`,
//! `resume`, `stop REASON`. Guard → agent: `started`, `running PERCENT BYTES` (`-` for
//! unknown), `paused REASON`, `resumed`, `done completed|incomplete DETAIL`, `stopped REASON`,
//! `failed MESSAGE`.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use storlab_impact::task::{Task, TaskState};

/// A line from the guard, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardSays {
    /// The task started.
    Started,
    /// The task runs: percent and bytes done where known.
    Running(Option<f64>, Option<u64>),
    /// The task is paused.
    Paused(String),
    /// The task goes on.
    Resumed,
    /// The task ended by itself: whether it completed, and what it found.
    Done(bool, String),
    /// The guard stopped the task, and why.
    Stopped(String),
    /// The task could not be started or watched.
    Failed(String),
}

impl GuardSays {
    /// Parses one line of the guard's.
    pub fn parse(line: &str) -> Option<GuardSays> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim().to_string();
        Some(match word {
            "started" => GuardSays::Started,
            "running" => {
                let mut w = rest.split_whitespace();
                let p = w.next().and_then(|p| p.parse().ok());
                let b = w.next().and_then(|b| b.parse().ok());
                GuardSays::Running(p, b)
            }
            "paused" => GuardSays::Paused(rest),
            "resumed" => GuardSays::Resumed,
            "done" => {
                let (c, d) = rest.split_once(' ').unwrap_or((&rest, ""));
                GuardSays::Done(c == "completed", d.to_string())
            }
            "stopped" => GuardSays::Stopped(rest),
            "failed" => GuardSays::Failed(rest),
            _ => return None,
        })
    }
}

fn say(line: &str) {
    // The agent may be gone (its pipe closed): the guard goes on to stop the task regardless.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn stop(task: &mut dyn Task, why: &str) -> i32 {
    match task.stop() {
        Ok(()) => {
            say(&format!("stopped {why}"));
            0
        }
        Err(e) => {
            say(&format!("failed stopping the task ({why}): {e}"));
            1
        }
    }
}

/// `storlab sched guard`'s flags (a hidden command: the agent starts it with these, see
/// `AgentOptions::start_guard`), declared here once.
#[derive(Debug, Clone, clap::Args)]
pub struct GuardFlags {
    /// The task, KIND:ARGS.
    #[arg(long)]
    pub task: String,
    /// Seconds until the lease deadline.
    #[arg(long)]
    pub deadline: f64,
    /// Seconds between looks at the task.
    #[arg(long)]
    pub poll: f64,
}

/// `storlab sched guard`: the task `task` (KIND:ARGS) held until `deadline` seconds, looked at
/// every `poll` seconds (at least 10 ms), stopped by Ctrl-C or SIGTERM too; the exit code.
pub fn run(flags: &GuardFlags) -> Result<u8, crate::SchedError> {
    let (task, deadline, poll) = (flags.task.as_str(), flags.deadline, flags.poll);
    let task = storlab_impact::kinds::parse(task).map_err(|e| crate::SchedError::Input(format!("--task: {e}")))?;
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, std::sync::atomic::Ordering::Relaxed));
    Ok(guard(task, deadline, Duration::from_secs_f64(poll.max(0.01)), &stop) as u8)
}

/// Runs `task` under a guard whose lease deadline is `deadline` seconds from now, looking at it
/// every `poll`. Reads the agent's lines from stdin and answers on stdout. `told_to_stop` is
/// set by SIGTERM (systemd stopping what is left of the agent's unit): the guard stops the task
/// and ends. Returns the exit code.
pub fn guard(mut task: Box<dyn Task>, deadline: f64, poll: Duration, told_to_stop: &AtomicBool) -> i32 {
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(l) = line else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
        // End of input: the agent is gone; dropping the sender says so.
    });
    let mut deadline = Instant::now() + Duration::from_secs_f64(deadline.max(0.0));
    if let Err(e) = task.start() {
        say(&format!("failed {e}"));
        return 1;
    }
    say("started");
    let mut paused = false;
    let mut next_look = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline {
            return stop(task.as_mut(), "the lease was not renewed in time");
        }
        if told_to_stop.load(Ordering::Relaxed) {
            return stop(task.as_mut(), "the guard was told to stop");
        }
        // Wakes at least every 100 ms to see a signal.
        let until = if paused { deadline } else { next_look.min(deadline) }.min(now + Duration::from_millis(100));
        match rx.recv_timeout(until.saturating_duration_since(now)) {
            Ok(line) => {
                let (word, rest) = line.split_once(' ').unwrap_or((&line, ""));
                match word {
                    "deadline" => {
                        if let Ok(s) = rest.trim().parse::<f64>() {
                            deadline = Instant::now() + Duration::from_secs_f64(s.max(0.0));
                        }
                    }
                    "stop" => return stop(task.as_mut(), rest.trim()),
                    "pause" if !paused => match task.pause() {
                        Ok(true) => {
                            paused = true;
                            say(&format!("paused {}", rest.trim()));
                        }
                        Ok(false) => return stop(task.as_mut(), &format!("{} (this task cannot pause)", rest.trim())),
                        Err(e) => {
                            say(&format!("failed pausing: {e}"));
                            let _ = task.stop();
                            return 1;
                        }
                    },
                    "resume" if paused => match task.resume() {
                        Ok(()) => {
                            paused = false;
                            next_look = Instant::now();
                            say("resumed");
                        }
                        Err(e) => {
                            say(&format!("failed resuming: {e}"));
                            let _ = task.stop();
                            return 1;
                        }
                    },
                    _ => {}
                }
            }
            Err(RecvTimeoutError::Disconnected) => return stop(task.as_mut(), "the agent is gone"),
            Err(RecvTimeoutError::Timeout) => {}
        }
        if !paused && Instant::now() >= next_look {
            next_look = Instant::now() + poll;
            match task.poll() {
                Ok(TaskState::Running(p)) => {
                    let f = |v: Option<String>| v.unwrap_or_else(|| "-".into());
                    say(&format!(
                        "running {} {}",
                        f(p.percent.map(|p| format!("{p:.1}"))),
                        f(p.bytes_done.map(|b| b.to_string()))
                    ));
                }
                Ok(TaskState::Idle) => {}
                Ok(TaskState::Done { completed, detail }) => {
                    let c = if completed { "completed" } else { "incomplete" };
                    say(&format!("done {c} {}", detail.replace('\n', "; ")));
                    return 0;
                }
                Err(e) => {
                    say(&format!("failed watching the task: {e}"));
                    let _ = task.stop();
                    return 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guards_lines_parse() {
        assert_eq!(GuardSays::parse("started"), Some(GuardSays::Started));
        assert_eq!(
            GuardSays::parse("running 40.0 -"),
            Some(GuardSays::Running(Some(40.0), None))
        );
        assert_eq!(
            GuardSays::parse("done completed csum=2; corrected 2"),
            Some(GuardSays::Done(true, "csum=2; corrected 2".into()))
        );
        assert_eq!(
            GuardSays::parse("done incomplete"),
            Some(GuardSays::Done(false, String::new()))
        );
        assert_eq!(
            GuardSays::parse("stopped the agent is gone"),
            Some(GuardSays::Stopped("the agent is gone".into()))
        );
        assert_eq!(GuardSays::parse("hello"), None);
    }
}
