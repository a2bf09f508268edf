//! This host's way to the catalogue: the store shared by its threads, ridden through the
//! database's outages, and the host's times on the database server's clock.
//!
//! A challenge runs for days; over days the shared PostgreSQL server restarts, a backend is
//! terminated, the network drops every connection. The store (crates/store's health.rs) notes
//! the loss, connects again with backoff, and says once that the database went and once that
//! it came back; here, meanwhile:
//! - a thread that needs the catalogue to go on (to take a file, to record one done) waits for
//!   it, up to the outage window (`Store::ride_out`: 10 minutes unless `STORLAB_DB_RETRY`
//!   says otherwise). A writer or reader holding a file finishes it, then waits to record it;
//!   one without a file takes none: no work is taken while the catalogue cannot say whose it
//!   is. Leases run on the database's clock and are renewed at the next try once it is back.
//! - samples and events wait in order in memory (bounded) and are stored when it is back,
//!   each once (the store's inserts of them are idempotent by key).
//! - a statement whose answer was lost may have committed: each is written so that doing it
//!   again is harmless (crates/store), and before the first statement after an outage the
//!   files the catalogue says this process holds are compared with those its threads hold —
//!   a file handed to a reader whose answer never came waits again for a reader, a file
//!   begun by a writer who never heard so is given up for another to write.
//! - after the window the work ends in order: partial files removed, the files held left to
//!   the catalogue (a resumed or restarted agent takes them over at once), and the caller
//!   says how to go on.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use storlab_model::challenge::{ChallengeEvent, ChallengeSample};
use storlab_store::{Store, StoreError, TimeBase};

use crate::ChallengeError;

/// How many samples and events may wait for the database: at a sample a second, more than a
/// day; past it the oldest are dropped and counted.
const MAX_PENDING: usize = 100_000;

/// How long a process told to stop waits for a database that is away, to record what it holds.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(30);

/// How often the server's clock is read again.
const CLOCK_EVERY: Duration = Duration::from_secs(60);

/// What waits to be stored.
enum Pending {
    Sample(ChallengeSample),
    Event(ChallengeEvent),
}

/// The catalogue as this host's threads reach it.
pub(crate) struct Catalogue<'a> {
    store: Mutex<Store>,
    id: i64,
    agent: String,
    window: Duration,
    stop: &'a AtomicBool,
    /// File numbers this process's threads hold — being written or read, or waiting to be
    /// written again — each with how many hold it: a writer still waiting to hear that its
    /// record of a file went in may overlap with a reader of this process that took the file.
    in_hand: Mutex<HashMap<u64, u32>>,
    /// A statement's answer was lost: compare what the catalogue says this process holds with
    /// `in_hand` before the next.
    unsure: AtomicBool,
    /// Why the work ends: the database away past the window.
    gave_up: Mutex<Option<String>>,
    pending: Mutex<VecDeque<Pending>>,
    /// Samples and events dropped because too many waited.
    pub dropped: AtomicU64,
    /// The challenge's start on the database's clock.
    t0: f64,
    base: Mutex<TimeBase>,
    clock_read: Mutex<Instant>,
    /// Set once after an outage: read the server's clock again.
    reread_clock: AtomicBool,
    /// Outages ridden out.
    pub outages: AtomicU64,
    /// A lease's length, seconds.
    lease: f64,
    /// When this process last came back from an outage.
    back_at: Mutex<Option<Instant>>,
}

impl<'a> Catalogue<'a> {
    /// The catalogue of challenge `id` through `store` (told to ride outages out), for the
    /// process `agent`; the server's clock read now and recorded; `t0` the challenge's start on
    /// it. `stop` is the process's stop flag (Ctrl-C, SIGTERM).
    pub fn new(
        store: Store,
        id: i64,
        agent: &str,
        (t0, lease): (f64, f64),
        stop: &'a AtomicBool,
    ) -> Result<Catalogue<'a>, ChallengeError> {
        store.ride_out();
        let window = store.outage_window();
        let reading = store.read_clock()?;
        store.add_clock_reading(&format!("challenge {id}"), agent, &reading, 0.0)?;
        Ok(Catalogue {
            store: Mutex::new(store),
            id,
            agent: agent.to_string(),
            window,
            stop,
            in_hand: Mutex::new(HashMap::new()),
            unsure: AtomicBool::new(false),
            gave_up: Mutex::new(None),
            pending: Mutex::new(VecDeque::new()),
            dropped: AtomicU64::new(0),
            t0,
            base: Mutex::new(TimeBase::new(&reading)),
            clock_read: Mutex::new(Instant::now()),
            reread_clock: AtomicBool::new(false),
            outages: AtomicU64::new(0),
            lease,
            back_at: Mutex::new(None),
        })
    }

    fn store(&self) -> MutexGuard<'_, Store> {
        // A worker that panicked holding the store leaves it usable: every statement commits on
        // its own, so there is no half-done transaction to fear.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The store back, once the threads are done.
    pub fn into_store(self) -> Store {
        self.store.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// Seconds since the challenge's start at the moment `i`, on the database's clock.
    pub fn t_at(&self, i: Instant) -> f64 {
        self.base.lock().unwrap_or_else(|e| e.into_inner()).since(self.t0, i)
    }

    /// Seconds since the challenge's start now.
    pub fn t(&self) -> f64 {
        self.t_at(Instant::now())
    }

    /// Why the work ends, once the database has been away past the window.
    pub fn gave_up(&self) -> Option<String> {
        self.gave_up.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// File `seq` is in a thread's hands (or queued to be written again) from now.
    pub fn hold(&self, seq: u64) {
        *self
            .in_hand
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(seq)
            .or_insert(0) += 1;
    }

    /// File `seq` has left this process's hands.
    pub fn release(&self, seq: u64) {
        let mut held = self.in_hand.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                held.remove(&seq);
            }
        }
    }

    /// Runs `op` on the catalogue, waiting through an outage (see the module's doc); `op` is
    /// told whether it runs again after an attempt whose answer was lost. Ends with `Away`
    /// past the window, or past [`STOP_WAIT`] when the process was told to stop.
    pub fn with<T>(&self, mut op: impl FnMut(&Store, bool) -> Result<T, StoreError>) -> Result<T, ChallengeError> {
        let mut again = false;
        loop {
            if let Some(why) = self.gave_up() {
                return Err(ChallengeError::Away(why));
            }
            let r = {
                let store = self.store();
                match self.reconcile(&store) {
                    Ok(()) => op(&store, again),
                    Err(e) => Err(e),
                }
            };
            match r {
                Err(StoreError::Lost { .. }) => {
                    again = true;
                    self.unsure.store(true, Ordering::SeqCst);
                    self.wait_a_while()?;
                }
                r => return r.map_err(ChallengeError::from),
            }
        }
    }

    /// Runs `op` once if the catalogue is there; None while the database is away (the caller
    /// tries at its next turn: the sampler's renewals, its clock readings).
    pub fn try_now<T>(&self, op: impl FnOnce(&Store) -> Result<T, StoreError>) -> Option<Result<T, ChallengeError>> {
        let r = {
            let store = self.store();
            match self.reconcile(&store) {
                Ok(()) => op(&store),
                Err(e) => Err(e),
            }
        };
        match r {
            Err(StoreError::Lost { .. }) => {
                self.unsure.store(true, Ordering::SeqCst);
                None
            }
            r => Some(r.map_err(ChallengeError::from)),
        }
    }

    /// Sleeps a moment while the database is away; gives up past the window (or a shorter wait
    /// when told to stop).
    fn wait_a_while(&self) -> Result<(), ChallengeError> {
        let away = self.store().outage().unwrap_or_default();
        let limit = if self.stop.load(Ordering::Relaxed) {
            self.window.min(STOP_WAIT)
        } else {
            self.window
        };
        if away > limit {
            let mut g = self.gave_up.lock().unwrap_or_else(|e| e.into_inner());
            let why = g
                .get_or_insert_with(|| {
                    format!(
                        "the results database has been away for {:.0} s, longer than {} ({:.0} s)",
                        away.as_secs_f64(),
                        if self.stop.load(Ordering::Relaxed) {
                            "a stopping process waits"
                        } else {
                            "the outage window (STORLAB_DB_RETRY)"
                        },
                        limit.as_secs_f64()
                    )
                })
                .clone();
            // Every thread stops at its next look: partial files are removed, held ones left.
            self.stop.store(true, Ordering::Relaxed);
            return Err(ChallengeError::Away(why));
        }
        std::thread::sleep(Duration::from_millis(200));
        Ok(())
    }

    /// After a lost answer: the files the catalogue says this process holds that no thread of
    /// it holds are given back — a file being read waits again for a reader, a file being
    /// written goes to whoever writes it next (its lease ended, its owner none). Called with
    /// the store held, so no thread takes a file meanwhile.
    fn reconcile(&self, store: &Store) -> Result<(), StoreError> {
        if !self.unsure.load(Ordering::SeqCst) {
            return Ok(());
        }
        // The server is back for this statement (or not: then it fails here, as it would). This
        // process's leases first: they may have run out meanwhile, and another agent that came
        // back sooner must see that this one is alive.
        store.renew_leases(self.id, &self.agent, self.lease)?;
        let held = store.files_held(self.id, &self.agent)?;
        let mine = self.in_hand.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut given = Vec::new();
        for (t, writing) in held {
            if mine.contains_key(&t.seq) {
                continue;
            }
            if writing {
                store.abandon_write(self.id, t.seq, &self.agent)?;
            } else {
                store.return_file(self.id, t.seq)?;
            }
            given.push(t.name);
        }
        self.unsure.store(false, Ordering::SeqCst);
        self.outages.fetch_add(1, Ordering::Relaxed);
        *self.back_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        self.reread_clock.store(true, Ordering::Relaxed);
        if !given.is_empty() {
            let e = ChallengeEvent {
                t: self.t(),
                host: self.agent.clone(),
                kind: "note".into(),
                detail: format!(
                    "{} file(s) the catalogue handed here while its answer was lost, given back: {}",
                    given.len(),
                    given.join(", ")
                ),
            };
            self.queue(Pending::Event(e));
        }
        Ok(())
    }

    /// True within a lease of this process's return from an outage: the other agents it shared
    /// the outage with may not have renewed their leases yet, so their files are not reclaimed.
    pub fn just_back(&self) -> bool {
        self.back_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|t| t.elapsed().as_secs_f64() < self.lease)
    }

    fn queue(&self, p: Pending) {
        let mut q = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        q.push_back(p);
        while q.len() > MAX_PENDING {
            q.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Stores a sample, now or (the database away) once it is back, in order.
    pub fn sample(&self, s: ChallengeSample) {
        self.queue(Pending::Sample(s));
        self.flush();
    }

    /// Stores an event, now or once the database is back, in order.
    pub fn event(&self, e: ChallengeEvent) {
        self.queue(Pending::Event(e));
        self.flush();
    }

    /// Stores what waits, in order, as far as the database takes it; true when nothing waits.
    pub fn flush(&self) -> bool {
        let store = self.store();
        if self.reconcile(&store).is_err() {
            self.unsure.store(true, Ordering::SeqCst);
            return false;
        }
        let mut q = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(p) = q.front() {
            let r = match p {
                Pending::Sample(s) => store.add_challenge_sample(self.id, s),
                Pending::Event(e) => store.add_challenge_event(self.id, e),
            };
            match r {
                Ok(()) => {}
                Err(StoreError::Lost { .. }) => {
                    self.unsure.store(true, Ordering::SeqCst);
                    return false;
                }
                Err(e) => {
                    let what = match p {
                        Pending::Sample(s) => format!("sample {} of {}", s.idx, s.host),
                        Pending::Event(e) => format!("event '{}'", e.detail),
                    };
                    eprintln!("storlab: could not store the {what}: {e}; it is dropped");
                }
            }
            q.pop_front();
        }
        true
    }

    /// Stores what waits, waiting through an outage as [`Catalogue::with`] does.
    pub fn flush_all(&self) -> Result<(), ChallengeError> {
        while !self.flush() {
            if let Some(why) = self.gave_up() {
                return Err(ChallengeError::Away(why));
            }
            self.wait_a_while()?;
        }
        Ok(())
    }

    /// How many samples and events wait for the database.
    pub fn waiting(&self) -> usize {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Reads the server's clock again when it is time (every minute, and after an outage),
    /// holds the time base to it and records the reading. Skipped while the database is away.
    pub fn keep_time(&self) {
        let due = self.clock_read.lock().unwrap_or_else(|e| e.into_inner()).elapsed() >= CLOCK_EVERY;
        if !due && !self.reread_clock.load(Ordering::Relaxed) {
            return;
        }
        let source = format!("challenge {}", self.id);
        let r = self.try_now(|s| {
            let reading = s.read_clock()?;
            let step = self.base.lock().unwrap_or_else(|e| e.into_inner()).correct(&reading);
            s.add_clock_reading(&source, &self.agent, &reading, step)?;
            Ok(step)
        });
        if let Some(r) = r {
            *self.clock_read.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            self.reread_clock.store(false, Ordering::Relaxed);
            if let Err(e) = r {
                eprintln!("storlab: could not read the database's clock: {e}");
            }
        }
    }
}
