//! fio's client side (client.c): one server driven to the end of its jobs — connect, probe,
//! send the command line and the job files, RUN, then read what the server reports until it
//! says QUIT — each thing it says handed on as an [`Event`] with the host's place, so that the
//! caller prints every host's report as fio's client does.

use crate::conn::Stream;
use std::io::{self, BufReader};
use std::sync::mpsc::Sender;

use crate::address::Address;
use crate::frame::{self, Op};
use crate::iolog::IoLog;
use crate::pdu::{
    ClientProbe, JobFile, JobLine, JobOption, LoadFile, Pair, ProbeReply, Text, CLIENT_TYPE_CLI, PROBE_FLAG_ZLIB,
};
use crate::stat::{decode_gs, decode_ts, GroupRunStats, ThreadStat};

/// What a server said.
#[derive(Debug, Clone)]
pub enum Event {
    /// Its answer to the probe: its host name and fio's version.
    Probe(ProbeReply),
    /// A line of its log.
    Text(Text),
    /// It read the jobs: how many jobs and how many entries it will report.
    Start {
        /// The jobs (threads) it runs.
        jobs: u32,
        /// The entries it will report.
        entries: u32,
    },
    /// One of the options of its global section or of a job.
    Option(JobOption),
    /// A job's figures with its group's.
    Stats(Box<ThreadStat>, GroupRunStats),
    /// A reporting group's figures.
    Group(GroupRunStats),
    /// One of its jobs' logs, to write as `NAME.HOST`.
    Log(Box<IoLog>),
    /// Its jobs ended: fio's error and signal.
    Stop {
        /// fio's exit status of the jobs.
        error: u32,
        /// The signal that ended them, or 0.
        signal: u32,
    },
    /// It is done (QUIT), or the connection failed (why).
    Gone(Option<String>),
}

/// What to send a server: its command line (fio's name first) and its job files' texts.
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// The command line's arguments, `fio` first; none is sent with only `fio`.
    pub line: Vec<String>,
    /// The job files' texts.
    pub files: Vec<String>,
    /// Job files the server reads from its own filesystem (fio's `--remote-config`).
    pub remote: Vec<String>,
}

/// Drives the server at `addr` through `job`, each event sent on `tx` with `host` (the
/// caller's index of the server); ends with [`Event::Gone`].
pub fn drive(addr: &Address, job: &Job, host: usize, tx: &Sender<(usize, Event)>) {
    let gone = match converse(addr, job, host, tx) {
        Ok(()) => None,
        Err(e) => Some(e.to_string()),
    };
    let _ = tx.send((host, Event::Gone(gone)));
}

fn converse(addr: &Address, job: &Job, host: usize, tx: &Sender<(usize, Event)>) -> io::Result<()> {
    let (stream, server) = Stream::connect(addr)?;
    let mut out = stream.try_clone()?;
    // Compressed logs are taken (a fio server sends its histogram logs whole only so).
    let probe = ClientProbe {
        flags: PROBE_FLAG_ZLIB,
        server,
    };
    frame::write(&mut out, Op::Probe, 0, &probe.encode())?;
    if job.line.len() > 1 {
        let line = JobLine {
            args: job.line.clone(),
            client_type: CLIENT_TYPE_CLI as u16,
        };
        frame::write(&mut out, Op::JobLine, 0, &line.encode())?;
    }
    for text in &job.files {
        let file = JobFile {
            text: text.clone(),
            client_type: CLIENT_TYPE_CLI,
        };
        frame::write(&mut out, Op::Job, 0, &file.encode())?;
    }
    for path in &job.remote {
        let file = LoadFile {
            path: path.clone(),
            client_type: CLIENT_TYPE_CLI as u16,
        };
        frame::write(&mut out, Op::LoadFile, 0, &file.encode())?;
    }
    frame::write(&mut out, Op::Run, 0, &[])?;
    let mut reader = BufReader::new(stream);
    loop {
        let Some(cmd) = frame::read(&mut reader).map_err(|e| io::Error::other(e.to_string()))? else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection before its jobs ended",
            ));
        };
        let event = match Op::of(cmd.op) {
            Some(Op::Quit) => return Ok(()),
            Some(Op::Probe) => Event::Probe(ProbeReply::decode(&cmd.payload)),
            Some(Op::Text) => Event::Text(Text::decode(&cmd.payload)),
            Some(Op::Start) => {
                let Pair(jobs, entries) = Pair::decode(&cmd.payload);
                Event::Start { jobs, entries }
            }
            Some(Op::JobOpt) => Event::Option(JobOption::decode(&cmd.payload)),
            Some(Op::Ts) => match decode_ts(&cmd.payload) {
                Some((ts, gs)) => Event::Stats(Box::new(ts), gs),
                None => return Err(io::Error::other("a job's figures shorter than fio 3.33's")),
            },
            Some(Op::Gs) => match decode_gs(&cmd.payload) {
                Some(gs) => Event::Group(gs),
                None => return Err(io::Error::other("a group's figures shorter than fio 3.33's")),
            },
            Some(Op::IoLog) => match IoLog::decode(&cmd.payload) {
                Some(log) => Event::Log(Box::new(log)),
                None => return Err(io::Error::other("a job's log that is not fio's")),
            },
            Some(Op::Stop) => {
                let Pair(error, signal) = Pair::decode(&cmd.payload);
                Event::Stop { error, signal }
            }
            // The server's progress, its jobs' options for fio's GUI, its disks' counters:
            // not reported here.
            _ => continue,
        };
        if tx.send((host, event)).is_err() {
            return Ok(());
        }
    }
}
