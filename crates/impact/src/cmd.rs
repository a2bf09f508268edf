//! A task given as three argument vectors — start, status, stop — for anything storlab does not
//! drive itself (a job file's `[task.NAME]`, or `cmd:START|STATUS|STOP[|PAUSE|RESUME]`). The
//! status command prints "running \[PERCENT\]" or "done \[DETAIL\]"; a task given pause and resume
//! commands can be paused (the verify scheduler pauses tasks while their pool is busy).

use crate::task::{run, Progress, Task, TaskError, TaskState};

/// A task from its three commands.
pub fn command(start: Vec<String>, status: Vec<String>, stop: Vec<String>) -> Box<dyn Task> {
    Box::new(CmdTask {
        start,
        status,
        stop,
        pause: None,
        started: false,
    })
}

/// `START ARGS|STATUS ARGS|STOP ARGS[|PAUSE ARGS|RESUME ARGS]`: words separated by spaces,
/// commands by `|`.
pub fn parse(spec: &str, args: &str) -> Result<Box<dyn Task>, TaskError> {
    let parts: Vec<Vec<String>> = args
        .split('|')
        .map(|p| p.split_whitespace().map(String::from).collect())
        .collect();
    if !(parts.len() == 3 || parts.len() == 5) || parts.iter().any(|p| p.is_empty()) {
        return Err(TaskError::Malformed {
            spec: spec.into(),
            why:
                "expected cmd:START ARGS|STATUS ARGS|STOP ARGS, three commands (and optionally |PAUSE ARGS|RESUME ARGS)"
                    .into(),
        });
    }
    let mut parts = parts.into_iter();
    let mut next = || parts.next().unwrap_or_default();
    let (start, status, stop) = (next(), next(), next());
    let pause = Some((next(), next())).filter(|(p, _)| !p.is_empty());
    Ok(Box::new(CmdTask {
        start,
        status,
        stop,
        pause,
        started: false,
    }))
}

/// A task given as three commands: start, status, stop.
struct CmdTask {
    start: Vec<String>,
    status: Vec<String>,
    stop: Vec<String>,
    /// The pause and resume commands, when given.
    pause: Option<(Vec<String>, Vec<String>)>,
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
    fn pause(&mut self) -> Result<bool, TaskError> {
        let Some((pause, _)) = &self.pause else {
            return Ok(false);
        };
        if self.started {
            run(pause)?;
        }
        Ok(true)
    }
    fn resume(&mut self) -> Result<(), TaskError> {
        if let Some((_, resume)) = &self.pause {
            run(resume)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::task::wait_done;

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
        let args = format!("touch {f}|sh {}|rm -f {f}", status.display());
        let mut t = parse("cmd", &args).unwrap();
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
        let mut t = parse("cmd", "true|echo running|true").unwrap();
        t.start().unwrap();
        let e = wait_done(t.as_mut(), Duration::from_millis(10), Duration::from_millis(50)).unwrap_err();
        assert!(e.to_string().contains("did not finish within"), "{e}");
        // A start that fails shows its stderr.
        let mut t = parse("cmd", "ls /nonexistent/storlab|true|true").unwrap();
        let e = t.start().unwrap_err().to_string();
        assert!(e.contains("No such file"), "{e}");
    }
}
