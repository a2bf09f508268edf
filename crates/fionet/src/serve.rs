//! fio's server side (server.c `handle_connection`): each connection in a thread of its own,
//! its commands answered in fio's order — the probe, the job lines and files (read by the
//! [`Jobs`] this server runs), RUN, the ETA every second while the jobs run, then the jobs'
//! options, figures and groups, STOP and QUIT. The jobs themselves are the caller's: this
//! file only speaks fio's protocol around them.

use crate::conn::{Listener, Stream};
use std::io::{self, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::frame::{self, Command, Op};
use crate::iolog::IoLog;
use crate::pdu::{
    ClientProbe, JobFile, JobLine, JobOption, JobsEta, LoadFile, Pair, ProbeReply, Text, LOG_ERR, LOG_INFO,
};
use crate::stat::{encode_gs, encode_ts, GroupRunStats, ThreadStat};

/// What a client sent to run: its command lines (fio's own name first) and job files, in order.
#[derive(Debug, Clone, Default)]
pub struct Sent {
    /// Each JOBLINE's arguments.
    pub lines: Vec<Vec<String>>,
    /// Each job file's text.
    pub files: Vec<String>,
    /// Each job file the client named on this host (fio's `--remote-config`), read here.
    pub remote: Vec<String>,
    /// The client's address.
    pub peer: String,
}

/// What the jobs did, for the client: fio's end of a run.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// Lines fio prints before its report (each job's line, `Starting N processes`, the files
    /// laid out).
    pub starting: Vec<String>,
    /// Lines of error (a job that failed: why).
    pub errors: Vec<String>,
    /// The global options and each reported job's, as given.
    pub options: Vec<JobOption>,
    /// Each reported job's figures, with its group's.
    pub stats: Vec<(ThreadStat, GroupRunStats)>,
    /// Each reporting group's figures.
    pub groups: Vec<GroupRunStats>,
    /// The jobs' logs, which fio's client writes as `NAME.HOST`.
    pub logs: Vec<IoLog>,
    /// fio's exit status of the run: 0, or its error.
    pub error: u32,
}

/// The jobs a server runs for its clients.
pub trait Jobs: Send + Sync {
    /// Reads what a client sent: how many jobs (threads) it runs and how many entries it will
    /// report, None while it holds no job yet (fio's client sends its flags before its job
    /// files); what is wrong with it, in fio's words, where it cannot run.
    fn load(&self, sent: &Sent) -> Result<Option<(u32, u32)>, String>;
    /// Runs it to its end; tells `progress` how it goes.
    fn run(&self, sent: &Sent, progress: &Progress) -> Finished;
}

/// The writing half of a connection, shared by the thread that reads commands (its replies)
/// and the thread that runs the jobs (their report).
#[derive(Clone)]
struct Out(Arc<Mutex<Stream>>);

impl Out {
    fn send(&self, op: Op, tag: u64, payload: &[u8]) -> io::Result<()> {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        frame::write(&mut *s, op, tag, payload)
    }

    fn text(&self, level: u32, text: &str) -> io::Result<()> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let t = Text {
            level,
            sec: now.as_secs(),
            usec: u64::from(now.subsec_micros()),
            text: text.to_string(),
        };
        self.send(Op::Text, 0, &t.encode())
    }
}

/// How the running jobs go, as fio's client asks for it (its ETA) and as the jobs tell it.
pub struct Progress {
    out: Out,
    eta: Mutex<JobsEta>,
    quit: AtomicBool,
}

impl Progress {
    /// A line for the client to print (after `<host> `).
    pub fn say(&self, text: &str) {
        let _ = self.out.text(LOG_INFO, text);
    }

    /// Changes what the next ETA says.
    pub fn update(&self, f: impl FnOnce(&mut JobsEta)) {
        f(&mut self.eta.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Whether the client asked the jobs to end (its QUIT, as fio's client sends on Ctrl-C),
    /// or went away.
    pub fn quitting(&self) -> bool {
        self.quit.load(Ordering::Relaxed)
    }

    fn eta(&self) -> JobsEta {
        self.eta.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Serves fio's clients on `listener` until one sends EXIT or `stop` is set (the process's
/// Ctrl-C and SIGTERM flag).
pub fn serve(listener: &Listener, jobs: Arc<dyn Jobs>, hostname: &str, stop: &AtomicBool) -> io::Result<()> {
    let exit = Arc::new(AtomicBool::new(false));
    listener.set_nonblocking(true)?;
    while !exit.load(Ordering::SeqCst) && !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => {
                let (jobs, exit, host) = (jobs.clone(), exit.clone(), hostname.to_string());
                std::thread::spawn(move || {
                    if let Err(e) = connection(stream, peer.clone(), &*jobs, &exit, &host) {
                        eprintln!("fio: client {peer}: {e}");
                    }
                });
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One client's connection, to its end.
fn connection(stream: Stream, peer: String, jobs: &dyn Jobs, exit: &AtomicBool, host: &str) -> io::Result<()> {
    let out = Out(Arc::new(Mutex::new(stream.try_clone()?)));
    let mut reader = BufReader::new(stream);
    let progress = Arc::new(Progress {
        out: out.clone(),
        eta: Mutex::new(JobsEta::default()),
        quit: AtomicBool::new(false),
    });
    let mut sent = Sent {
        peer,
        ..Default::default()
    };
    std::thread::scope(|scope| -> io::Result<()> {
        // However the conversation ends, jobs still running are asked to end (and report).
        let quit = || progress.quit.store(true, Ordering::Relaxed);
        loop {
            let cmd = match frame::read(&mut reader) {
                Ok(Some(c)) => c,
                Ok(None) => {
                    quit();
                    return Ok(());
                }
                Err(e) => {
                    quit();
                    return Err(io::Error::other(e.to_string()));
                }
            };
            match Op::of(cmd.op) {
                Some(Op::Probe) => probe(&out, &cmd, host)?,
                Some(Op::JobLine) => {
                    sent.lines.push(JobLine::decode(&cmd.payload).args);
                    loaded(&out, jobs, &sent)?;
                }
                Some(Op::Job) => {
                    sent.files.push(JobFile::decode(&cmd.payload).text);
                    loaded(&out, jobs, &sent)?;
                }
                Some(Op::LoadFile) => {
                    sent.remote.push(LoadFile::decode(&cmd.payload).path);
                    loaded(&out, jobs, &sent)?;
                }
                Some(Op::Run) => {
                    let (out, progress, sent) = (out.clone(), progress.clone(), sent.clone());
                    scope.spawn(move || run(&out, jobs, &sent, &progress));
                }
                Some(Op::SendEta) => out.send(Op::Eta, cmd.tag, &progress.eta().encode())?,
                Some(Op::Exit) => {
                    exit.store(true, Ordering::SeqCst);
                    quit();
                    return Ok(());
                }
                // fio's client asks its server to quit when it is interrupted (Ctrl-C): the
                // jobs end as fio's do and report what they did. The connection is read on until
                // the client hangs up (closed with its requests unread, it would be reset before
                // the report reached the client).
                Some(Op::Quit) => quit(),
                _ => out.text(LOG_ERR, &format!("fio: unsupported command opcode {}\n", cmd.op))?,
            }
        }
    })
}

/// The answer to a probe: this host, fio 3.33's version, Linux on x86-64, no compression.
fn probe(out: &Out, cmd: &Command, host: &str) -> io::Result<()> {
    let _asked = ClientProbe::decode(&cmd.payload);
    let reply = ProbeReply {
        hostname: host.to_string(),
        bigendian: u8::from(cfg!(target_endian = "big")),
        fio_version: "fio-3.33".into(),
        os: 1,
        arch: 1,
        bpp: std::mem::size_of::<usize>() as u8,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        flags: 0,
    };
    out.send(Op::Probe, cmd.tag, &reply.encode())
}

/// A job read — START, how many jobs and entries, as fio's server says as soon as it has read
/// one — or refused with fio's message and QUIT (as fio's server does).
fn loaded(out: &Out, jobs: &dyn Jobs, sent: &Sent) -> io::Result<()> {
    match jobs.load(sent) {
        Ok(Some((threads, entries))) => out.send(Op::Start, 0, &Pair(threads, entries).encode()),
        Ok(None) => Ok(()),
        Err(why) => {
            out.text(LOG_ERR, &format!("{}\n", why.trim_end()))?;
            out.send(Op::Quit, 0, &[])
        }
    }
}

/// Runs the jobs and sends fio's report: the lines before it, the jobs' logs, each job's
/// options and figures, each group's, STOP, QUIT.
fn run(out: &Out, jobs: &dyn Jobs, sent: &Sent, progress: &Progress) {
    let _ = out.send(Op::ServerStart, 0, &[]);
    let f = jobs.run(sent, progress);
    let report = || -> io::Result<()> {
        for line in &f.starting {
            out.text(LOG_INFO, line)?;
        }
        for line in &f.errors {
            out.text(LOG_ERR, line)?;
        }
        for log in &f.logs {
            out.send(Op::IoLog, 0, &log.encode())?;
        }
        for o in f.options.iter().filter(|o| o.global) {
            out.send(Op::JobOpt, 0, &o.encode())?;
        }
        for (i, (ts, gs)) in f.stats.iter().enumerate() {
            for o in f.options.iter().filter(|o| !o.global && o.index == i as u32) {
                out.send(Op::JobOpt, 0, &o.encode())?;
            }
            out.send(Op::Ts, 0, &encode_ts(ts, gs))?;
        }
        for gs in &f.groups {
            out.send(Op::Gs, 0, &encode_gs(gs))?;
        }
        out.send(Op::Stop, 0, &Pair(f.error, 0).encode())?;
        out.send(Op::Quit, 0, &[])
    };
    if let Err(e) = report() {
        eprintln!("fio: client {}: {e}", sent.peer);
    }
}
