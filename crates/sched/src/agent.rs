//! The agent: one per server (`storlab sched agent --server NAME`, a systemd service from the
//! packages). It asks the shared database for one of its pool's k slots when it is its turn,
//! runs its task under a guard (guard.rs), renews the lease while the task runs, tells the guard
//! each new deadline, pauses the task while the pool is busy or outside its windows, records
//! start, progress, end and what the task found, and gives the slot back.
//!
//! What runs comes only from the schedule file on this host (read by the caller with
//! `Schedule::read_trusted`); the database only grants slots and keeps the record.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use storlab_store::{DbTarget, Grant, Store};

use crate::guard::GuardSays;
use crate::schedule::{Pool, Schedule, Server};

/// What an agent is told.
pub struct AgentOptions {
    /// The schedule (from this host's own file).
    pub schedule: Schedule,
    /// This server's name in it.
    pub server: String,
    /// The shared database.
    pub db: DbTarget,
    /// This host's name (for the database's housekeeping).
    pub host: String,
    /// End after this many complete verifies (None: run until stopped).
    pub rounds: Option<u32>,
    /// How often to ask for a slot, look at the task, and ask whether the pool is busy.
    pub poll: Duration,
    /// The command that starts a guard (this program's `sched guard`), before its arguments.
    pub guard: Vec<String>,
    /// Set by SIGTERM and Ctrl-C: stop the task, give the slot back, end.
    pub stop: Arc<AtomicBool>,
    /// Say nothing on stderr.
    pub quiet: bool,
}

/// `storlab sched agent`'s flags, declared here once (the binary flattens them).
#[derive(Debug, Clone, clap::Args)]
pub struct AgentFlags {
    /// This server's name in the schedule.
    #[arg(long)]
    pub server: String,
    /// The schedule file: root's, writable by no one else.
    #[arg(long, value_name = "FILE", default_value = "/etc/storlab/schedule.toml")]
    pub schedule: std::path::PathBuf,
    /// End after this many complete verifies (default: run until stopped).
    #[arg(long, value_name = "N")]
    pub rounds: Option<u32>,
    /// How often to ask for a slot, look at the task and ask whether the pool is busy.
    #[arg(long, value_name = "DURATION", default_value = "5s")]
    pub poll: String,
    /// Say nothing on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

impl AgentOptions {
    /// The agent `flags` ask for, checked before anything starts: the schedule is root's and
    /// names this server, the figures it takes from stored studies are read (`open`), the poll
    /// is a duration above 0. `host` is this host's name; `guard` starts this program's `sched guard`; `stop` is set by
    /// SIGTERM and Ctrl-C.
    pub fn new(
        flags: &AgentFlags,
        db: DbTarget,
        host: String,
        open: &dyn Fn() -> Result<storlab_store::Store, storlab_store::StoreError>,
        guard: Vec<String>,
        stop: Arc<AtomicBool>,
    ) -> Result<AgentOptions, crate::SchedError> {
        let schedule = Schedule::read_trusted(&flags.schedule)?;
        // Named before anything starts: an agent for a server the schedule does not name.
        schedule.server(&flags.server)?;
        let schedule = schedule.with_studies(open)?;
        let poll = crate::question::duration("--poll", &flags.poll)?;
        Ok(AgentOptions {
            schedule,
            server: flags.server.clone(),
            db,
            host,
            rounds: flags.rounds,
            poll,
            guard,
            stop,
            quiet: flags.quiet,
        })
    }
}

/// How one grant ended.
#[derive(Debug, Clone, PartialEq)]
enum Ended {
    Complete,
    Other,
}

/// A report that waits for the database: (token, kind, detail, complete), and whether a try
/// whose answer was lost came before.
type Report = (i64, String, String, Option<(f64, String)>, bool);

/// The database as an agent reaches it: a lost connection is replaced at its next use and the
/// outage said once each way (crates/store's health.rs); an agent outlives its connections.
/// Reports made while it is away wait in order (bounded) and are recorded when it is back, each
/// once; a grant or a renewal that cannot be asked for is not (the guard stops the task when no
/// renewal comes before the lease's end, so no verify outlives its slot).
struct Db {
    target: DbTarget,
    host: String,
    store: Option<Store>,
    /// Reports that wait for the database, oldest first.
    waiting: std::collections::VecDeque<Report>,
    /// Said that the database could not be reached at the start.
    said_away: bool,
    /// The pool, server and agent the reports are under.
    who: (String, String, String),
}

/// How many reports may wait for the database; past it the oldest are dropped.
const MAX_WAITING: usize = 10_000;

impl Db {
    fn with<T>(&mut self, f: impl FnOnce(&Store) -> Result<T, storlab_store::StoreError>) -> Result<T, String> {
        if self.store.is_none() {
            match Store::connect(&self.target, &self.host) {
                Ok(s) => {
                    s.ride_out();
                    if self.said_away {
                        eprintln!("storlab: the results database {} is reachable", self.target);
                    }
                    self.store = Some(s);
                }
                Err(e) => {
                    if !self.said_away {
                        eprintln!(
                            "storlab: the results database {} cannot be reached ({e}); trying again",
                            self.target
                        );
                        self.said_away = true;
                    }
                    return Err(e.to_string());
                }
            }
        }
        self.flush();
        f(self.store.as_ref().expect("opened above")).map_err(|e| e.to_string())
    }

    /// Records the reports that wait, in order, as far as the database takes them.
    fn flush(&mut self) {
        let Some(store) = &self.store else { return };
        while let Some((token, kind, detail, complete, again)) = self.waiting.front_mut() {
            let (pool, server, agent) = &self.who;
            let complete = complete.as_ref().map(|(s, e)| (*s, e.as_str()));
            let r = if *again {
                store.sched_report_again(pool, server, agent, *token, kind, detail, complete)
            } else {
                store.sched_report(pool, server, agent, *token, kind, detail, complete)
            };
            match r {
                Ok(_) => {
                    self.waiting.pop_front();
                }
                Err(storlab_store::StoreError::Lost { .. }) => {
                    *again = true;
                    return;
                }
                Err(e) => {
                    eprintln!("storlab: could not record '{kind}' ({e}); it is dropped");
                    self.waiting.pop_front();
                }
            }
        }
    }

    /// Records a report now, or keeps it until the database is back.
    fn report(&mut self, r: Report) {
        self.waiting.push_back(r);
        while self.waiting.len() > MAX_WAITING {
            self.waiting.pop_front();
        }
        let _ = self.with(|_| Ok(()));
    }
}

fn wall() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The agent's watch over one task under a lease: when the lease ends on this host's clock
/// (less a margin), when to renew it, what the guard said last, and whether the task is held.
struct Tending {
    lease: Duration,
    margin: Duration,
    expiry: Instant,
    renew_every: Duration,
    next_renew: Instant,
    started: Option<Instant>,
    last_progress: Option<(Instant, String)>,
    held: Option<String>,
    /// Looks in a row that found a held task's pool clear (see `RESUME_AFTER_CLEAR_LOOKS`).
    clear_looks: u32,
    asked_to_stop: bool,
    next_hold_look: Instant,
}

/// A paused task resumes when this many looks in a row, a poll apart, find nothing holding it:
/// one clear answer is not enough, since a busy pool can look clear for a moment (a Prometheus
/// scrape missed under load, a lease renewed between two reads of the slots) and the task would
/// resume and pause again at once.
const RESUME_AFTER_CLEAR_LOOKS: u32 = 2;

impl Tending {
    /// Seconds left before the guard must have stopped the task.
    fn left(&self) -> f64 {
        self.expiry
            .saturating_duration_since(Instant::now() + self.margin)
            .as_secs_f64()
    }
}

/// An agent at work.
struct Agent<'a> {
    o: &'a AgentOptions,
    pool: &'a Pool,
    server: &'a Server,
    k: i64,
    lease: f64,
    name: String,
    db: Db,
    said: String,
}

impl Agent<'_> {
    /// Says something on stderr once (not again while it stays the same).
    fn note(&mut self, msg: String) {
        if !self.o.quiet && msg != self.said {
            // Not eprintln!: with SIGPIPE ignored a closed stderr must not panic the agent.
            let _ = writeln!(std::io::stderr(), "storlab sched agent {}: {msg}", self.server.name);
        }
        self.said = msg;
    }

    /// Records what happened under `token`: now, or once the database is back.
    fn report(&mut self, token: i64, kind: &str, detail: &str, complete: Option<(f64, &str)>) {
        let complete = complete.map(|(s, e)| (s, e.to_string()));
        self.db
            .report((token, kind.to_string(), detail.to_string(), complete, false));
    }

    /// Why the task must not run now (outside the windows, the pool busy), if it must not.
    fn hold(&mut self) -> Option<String> {
        let now = wall();
        if !self.pool.windows.open(now) {
            let next = self.pool.windows.next_open(now).unwrap_or(now);
            return Some(format!(
                "outside the pool's windows ({}); they open in {:.0} min",
                self.pool.windows_text.join(", "),
                (next - now) / 60.0
            ));
        }
        let busy = self.pool.busy.clone()?;
        let answer = match &busy {
            crate::schedule::Busy::Monitor { .. } => {
                let mut out = Err(String::new());
                let r = self.db.with(|s| {
                    out = crate::busy::busy(&busy, Some(s), now);
                    Ok(())
                });
                r.and(out)
            }
            _ => crate::busy::busy(&busy, None, now),
        };
        match answer {
            Ok(why) => why,
            Err(e) => {
                self.note(format!(
                    "cannot tell whether the pool is busy ({e}); going on as if it were not"
                ));
                None
            }
        }
    }

    fn run(&mut self) -> Result<u8, String> {
        let mut complete = 0u32;
        loop {
            if self.o.stop.load(Ordering::Relaxed) {
                return Ok(0);
            }
            if self.o.rounds.is_some_and(|r| complete >= r) {
                return Ok(0);
            }
            if let Some(why) = self.hold() {
                self.note(format!("waiting: {why}"));
                std::thread::sleep(self.o.poll);
                continue;
            }
            if let Some(every) = self.pool.every {
                let (pool, server) = (self.pool.name.clone(), self.server.name.clone());
                let last = self
                    .db
                    .with(|s| s.sched_servers())
                    .map(|all| {
                        all.into_iter()
                            .find(|r| r.pool == pool && r.server == server)
                            .and_then(|r| r.last_complete)
                    })
                    .unwrap_or(None);
                if let Some(last) = last.filter(|l| wall() < l + every) {
                    self.note(format!("not due until {:.0} s from now", last + every - wall()));
                    std::thread::sleep(self.o.poll);
                    continue;
                }
            }
            let asked = Instant::now();
            let (pool, server, agent, k, lease) = (&self.pool.name, &self.server.name, &self.name, self.k, self.lease);
            match self.db.with(|s| s.sched_acquire(pool, server, agent, k, lease)) {
                Ok(Some(grant)) => {
                    self.note(format!("slot {} of {} (token {})", grant.slot, self.k, grant.token));
                    if self.task(grant, asked)? == Ended::Complete {
                        complete += 1;
                    }
                }
                Ok(None) => {
                    self.note("waiting for a slot and this server's turn".into());
                    std::thread::sleep(self.o.poll);
                }
                Err(e) => {
                    self.note(format!("the database: {e}; asking again"));
                    std::thread::sleep(self.o.poll);
                }
            }
        }
    }

    /// The margin before a lease's expiry by which the guard stops the task: time to stop it.
    fn margin(&self) -> f64 {
        (self.lease * 0.25).min(10.0)
    }

    fn start_guard(&self, deadline: f64) -> Result<(Child, ChildStdin, Receiver<String>), String> {
        let (prog, args) = self.o.guard.split_first().ok_or("no guard command")?;
        let mut child = Command::new(prog)
            .args(args)
            .arg("--task")
            .arg(&self.server.task)
            .arg("--deadline")
            .arg(format!("{deadline:.3}"))
            .arg("--poll")
            .arg(format!("{:.3}", self.o.poll.as_secs_f64()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the guard {prog}: {e}"))?;
        let stdin = child.stdin.take().ok_or("the guard has no stdin")?;
        let stdout = child.stdout.take().ok_or("the guard has no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(l) = line else { return };
                if tx.send(l).is_err() {
                    return;
                }
            }
        });
        Ok((child, stdin, rx))
    }

    /// Runs the task under `grant` (asked for at `asked`) to its end: a guard started with the
    /// lease's deadline, then each line the guard says heard, the agent's stop passed on, the
    /// lease renewed every third of it, and the task paused while its pool is busy.
    fn task(&mut self, grant: Grant, asked: Instant) -> Result<Ended, String> {
        let lease = Duration::from_secs_f64(self.lease);
        // The lease ends `lease` after the database's now, which came after `asked`: counted
        // from `asked` on this host's monotonic clock, the local deadline is never late.
        let mut t = Tending {
            lease,
            margin: Duration::from_secs_f64(self.margin()),
            expiry: asked + lease,
            renew_every: lease / 3,
            next_renew: asked + lease / 3,
            started: None,
            last_progress: None,
            held: None,
            asked_to_stop: false,
            next_hold_look: Instant::now(),
            clear_looks: 0,
        };
        let (mut child, mut to_guard, from_guard) = match self.start_guard(t.left()) {
            Ok(g) => g,
            Err(e) => {
                self.report(grant.token, "failed", &e, None);
                self.release(&grant);
                return Err(e);
            }
        };
        let mut send = |line: &str| {
            let _ = writeln!(to_guard, "{line}");
            let _ = to_guard.flush();
        };
        let ended = loop {
            let line = match from_guard.recv_timeout(Duration::from_millis(50)) {
                Ok(l) => Some(l),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = child.wait();
                    self.report(grant.token, "failed", "the guard ended without a word", None);
                    break Ended::Other;
                }
            };
            if let Some(says) = line.as_deref().and_then(GuardSays::parse) {
                if let Some(ended) = self.heard(&grant, &mut t, says) {
                    let _ = child.wait();
                    break ended;
                }
            }
            if t.asked_to_stop {
                continue;
            }
            if self.o.stop.load(Ordering::Relaxed) {
                send("stop the agent was told to stop");
                t.asked_to_stop = true;
                continue;
            }
            if Instant::now() >= t.next_renew {
                self.renew(&grant, &mut t, &mut send);
            }
            if t.started.is_some() && Instant::now() >= t.next_hold_look {
                t.next_hold_look = Instant::now() + self.o.poll;
                match (self.hold(), &t.held) {
                    (Some(why), None) => {
                        send(&format!("pause {why}"));
                        t.held = Some(why);
                        t.clear_looks = 0;
                    }
                    (Some(_), Some(_)) => t.clear_looks = 0,
                    (None, Some(_)) => {
                        t.clear_looks += 1;
                        if t.clear_looks >= RESUME_AFTER_CLEAR_LOOKS {
                            send("resume");
                            t.held = None;
                            t.clear_looks = 0;
                        }
                    }
                    (None, None) => {}
                }
            }
        };
        self.release(&grant);
        Ok(ended)
    }

    /// A line of the guard's, reported; how the task ended when it did.
    fn heard(&mut self, grant: &Grant, t: &mut Tending, says: GuardSays) -> Option<Ended> {
        match says {
            GuardSays::Started => {
                t.started = Some(Instant::now());
                self.report(grant.token, "started", &self.server.task.clone(), None);
            }
            GuardSays::Running(p, b) => {
                let words = match (p, b) {
                    (Some(p), Some(b)) => format!("{p:.1} % ({b} bytes)"),
                    (Some(p), None) => format!("{p:.1} %"),
                    (None, Some(b)) => format!("{b} bytes"),
                    (None, None) => "running".into(),
                };
                // A progress event when it changed, at most one a renewal period.
                let due = t
                    .last_progress
                    .as_ref()
                    .is_none_or(|(at, w)| *w != words && at.elapsed() >= t.renew_every);
                if due {
                    self.report(grant.token, "progress", &words, None);
                    t.last_progress = Some((Instant::now(), words));
                }
            }
            GuardSays::Paused(why) => self.report(grant.token, "paused", &why, None),
            GuardSays::Resumed => self.report(grant.token, "resumed", "", None),
            GuardSays::Done(true, detail) => {
                let secs = t.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
                self.report(grant.token, "complete", &detail, Some((secs, &detail)));
                return Some(Ended::Complete);
            }
            GuardSays::Done(false, detail) => {
                self.report(grant.token, "incomplete", &detail, None);
                return Some(Ended::Other);
            }
            GuardSays::Stopped(why) => {
                self.report(grant.token, "stopped", &why, None);
                return Some(Ended::Other);
            }
            GuardSays::Failed(why) => {
                self.report(grant.token, "failed", &why, None);
                return Some(Ended::Other);
            }
        }
        None
    }

    /// The lease renewed, the guard told its new deadline; a lost lease stops the task, a
    /// database that does not answer is asked again soon (the guard stops the task by itself
    /// if no renewal comes before the deadline it holds).
    fn renew(&mut self, grant: &Grant, t: &mut Tending, send: &mut dyn FnMut(&str)) {
        let renewing = Instant::now();
        let (pool, agent, l) = (self.pool.name.clone(), self.name.clone(), self.lease);
        match self.db.with(|s| s.sched_renew(&pool, grant, &agent, l)) {
            Ok(Some(_)) => {
                t.expiry = renewing + t.lease;
                t.next_renew = renewing + t.renew_every;
                send(&format!("deadline {:.3}", t.left()));
            }
            Ok(None) => {
                self.note("the lease was lost (it expired or went to another server); stopping the task".into());
                send("stop the lease was lost");
                t.asked_to_stop = true;
            }
            Err(e) => {
                self.note(format!("cannot renew the lease ({e}); asking again"));
                t.next_renew = Instant::now() + t.renew_every.min(self.o.poll).max(Duration::from_millis(200));
            }
        }
    }

    fn release(&mut self, grant: &Grant) {
        let (pool, agent) = (self.pool.name.clone(), self.name.clone());
        if let Err(e) = self.db.with(|s| s.sched_release(&pool, grant, &agent)) {
            self.note(format!(
                "could not give the slot back ({e}); it frees itself when the lease ends"
            ));
        }
    }
}

/// Runs an agent until it is stopped or has done its rounds; its exit code.
pub fn run(o: &AgentOptions) -> Result<u8, String> {
    let (pool, server) = o.schedule.server(&o.server).map_err(|e| e.to_string())?;
    let k = crate::plan::pool_plan(pool).k as i64;
    let name = format!("{}/{}", o.host, std::process::id());
    let mut a = Agent {
        o,
        pool,
        server,
        k,
        lease: o.schedule.lease,
        name: name.clone(),
        db: Db {
            target: o.db.clone(),
            host: o.host.clone(),
            store: None,
            waiting: std::collections::VecDeque::new(),
            said_away: false,
            who: (pool.name.clone(), server.name.clone(), name.clone()),
        },
        said: String::new(),
    };
    a.run()
}
