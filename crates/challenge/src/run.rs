//! Running a challenge on this host: writer and reader threads taking work from the catalogue,
//! a sampler storing each pool's bytes per interval, the fault plan carried out on time, and
//! the account checked at the end against the catalogue and the files on disk.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use storlab_model::challenge::{
    Account, ChallengeEvent, ChallengeSample, ChallengeSpec, FaultAction, FileTicket, Spread,
};
use storlab_store::{ReadOutcome, Store, StoredChallenge};

use crate::files::{self, Buffer, Stop};
use crate::{file_name, pool_dir, ChallengeError};

/// A pool's condition on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum PoolState {
    /// Takes new files and is read.
    Open = 0,
    /// No new files; read until empty.
    Draining = 1,
    /// Away (unmounted, read-only, detached): neither written nor read.
    Away = 2,
    /// Out of space: no new files until readers free some.
    Full = 3,
}

impl PoolState {
    fn from_u8(v: u8) -> PoolState {
        match v {
            1 => PoolState::Draining,
            2 => PoolState::Away,
            3 => PoolState::Full,
            _ => PoolState::Open,
        }
    }
}

/// One pool's live figures on this host.
struct PoolLive {
    read: AtomicU64,
    written: AtomicU64,
    /// Files being written or waiting to be read (the backlog).
    backlog: AtomicU64,
    state: AtomicU8,
    /// The write rate over the last long-term window, bytes/s (f64 bits), for least-loaded.
    write_rate: AtomicU64,
}

/// How the challenge is run on this host.
pub struct RunConfig<'a> {
    /// This host's name, as the catalogue and samples record it.
    pub host: String,
    /// The run (kind `challenge`) this host's share is stored under.
    pub run_id: i64,
    /// A live line on stderr.
    pub live: bool,
    /// Set when the process should stop (Ctrl-C).
    pub interrupt: &'a AtomicBool,
    /// Writer threads on this host.
    pub writers: u32,
    /// Reader threads on this host.
    pub readers: u32,
    /// Other hosts take part (an agent): the backlog is read from the catalogue, readers end
    /// when the catalogue has nothing left to read.
    pub shared: bool,
    /// Agents that are gone (this host's crashed processes) whose files in flight this host
    /// takes over at its start.
    pub take_over: Vec<String>,
}

/// What this host did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct HostOutcome {
    /// Seconds it ran.
    pub seconds: f64,
    /// Bytes written and read here.
    pub bytes_written: u64,
    /// Bytes read here.
    pub bytes_read: u64,
    /// Seconds writers spent waiting (backlog full, no pool to take a file), summed over writers.
    pub writer_idle: f64,
    /// Seconds readers spent waiting for a file, summed over readers.
    pub reader_idle: f64,
    /// True when stopped by Ctrl-C.
    pub interrupted: bool,
    /// What the check at the end found wrong (files on disk the catalogue does not account
    /// for, files it says are waiting that are missing or short).
    pub problems: Vec<String>,
}

struct Shared<'a> {
    store: Mutex<Store>,
    id: i64,
    spec: &'a ChallengeSpec,
    dirs: Vec<PathBuf>,
    host: String,
    /// When the challenge started: the epoch seconds every host counts from.
    t0_epoch: f64,
    deadline: Option<Instant>,
    pools: Vec<PoolLive>,
    /// Writers may not start new files (the end, or every file handed out).
    writers_done: AtomicBool,
    readers_done: AtomicBool,
    /// Writers and readers held by a fault (how many of each).
    writers_held: AtomicU64,
    readers_held: AtomicU64,
    writers_running: AtomicU64,
    interrupt: &'a AtomicBool,
    /// File numbers reserved from the catalogue and not yet used: (next, left).
    reserved: Mutex<(u64, u64)>,
    writer_idle_ns: AtomicU64,
    reader_idle_ns: AtomicU64,
    total_read: AtomicU64,
    total_written: AtomicU64,
    /// Files to write again before new ones: taken over from a dead or crashed agent.
    rewrite: Mutex<Vec<FileTicket>>,
    shared_mode: bool,
    /// Every file number is handed out.
    exhausted: AtomicBool,
    /// When the backlog was last read from the catalogue (shared mode).
    last_sync: Mutex<Instant>,
}

fn epoch_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Shared<'_> {
    fn store(&self) -> MutexGuard<'_, Store> {
        // A worker that panicked holding the store leaves it usable: every statement commits on
        // its own, so there is no half-done transaction to fear.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seconds since the challenge started (a host that joins later counts from the same start).
    fn t(&self) -> f64 {
        epoch_now() - self.t0_epoch
    }

    fn lease(&self) -> f64 {
        epoch_now() + self.spec.lease
    }

    /// Reads each pool's backlog from the catalogue (other hosts write and read the same
    /// pools); at most every 200 ms.
    fn sync_backlog(&self) -> Result<(), ChallengeError> {
        let mut last = self.last_sync.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() < Duration::from_millis(200) {
            return Ok(());
        }
        *last = Instant::now();
        let counts = self.store().pool_backlog(self.id, self.pools.len())?;
        for (p, n) in self.pools.iter().zip(counts) {
            p.backlog.store(n, Ordering::Release);
        }
        Ok(())
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn pool_state(&self, p: usize) -> PoolState {
        PoolState::from_u8(self.pools[p].state.load(Ordering::Relaxed))
    }

    fn set_pool_state(&self, p: usize, s: PoolState) {
        self.pools[p].state.store(s as u8, Ordering::Relaxed);
    }

    fn event(&self, kind: &str, detail: String) {
        let e = ChallengeEvent {
            t: self.t(),
            host: self.host.clone(),
            kind: kind.to_string(),
            detail,
        };
        if let Err(err) = self.store().add_challenge_event(self.id, &e) {
            eprintln!("storlab: could not store the event '{}': {err}", e.detail);
        }
    }

    /// The file's path, when the catalogue's row names one of storlab's files in a pool of this
    /// host; None for anything else (a row altered in the database is never followed).
    fn path(&self, t: &FileTicket) -> Option<PathBuf> {
        let dir = self.dirs.get(t.pool)?;
        crate::is_file_name(&t.name).then(|| dir.join(&t.name))
    }

    /// A catalogue row that does not name one of storlab's files: not touched, counted lost.
    fn refuse(&self, t: &FileTicket) -> Result<(), ChallengeError> {
        let why = format!(
            "the catalogue names '{}' in pool number {}, which is not a file of storlab's pattern in a pool of this host; not touched",
            t.name, t.pool
        );
        self.event("refused", format!("file {}: {why}", t.seq));
        self.store().lose_file(self.id, t.seq, &why)?;
        Ok(())
    }

    /// The next file number, or None when every file has been handed out.
    fn next_seq(&self) -> Result<Option<u64>, ChallengeError> {
        let mut r = self.reserved.lock().unwrap_or_else(|e| e.into_inner());
        if self.exhausted.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if r.1 == 0 {
            // Blocks of 64: one statement per 64 files against the shared counter.
            let (first, n) = (self.store().reserve_files(self.id, 64)?, 64);
            *r = (first, n);
        }
        let seq = r.0;
        r.0 += 1;
        r.1 -= 1;
        Ok(Some(seq))
    }

    /// A pool for file `seq`: one that is open and under its backlog, chosen by the spread;
    /// its backlog is taken (so two writers cannot both take the last place).
    fn choose_pool(&self, seq: u64) -> Option<usize> {
        let n = self.pools.len();
        let mut order: Vec<usize> = (0..n).map(|i| (seq as usize + i) % n).collect();
        if self.spec.spread == Spread::LeastLoaded {
            order.sort_by(|a, b| {
                let ra = f64::from_bits(self.pools[*a].write_rate.load(Ordering::Relaxed));
                let rb = f64::from_bits(self.pools[*b].write_rate.load(Ordering::Relaxed));
                ra.total_cmp(&rb)
            });
        }
        for p in order {
            if self.pool_state(p) != PoolState::Open {
                continue;
            }
            let backlog = &self.pools[p].backlog;
            let taken = backlog
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                    (b < self.spec.backlog).then_some(b + 1)
                })
                .is_ok();
            if taken {
                return Some(p);
            }
        }
        None
    }

    fn held(&self, held: &AtomicU64, me: u64) -> bool {
        me < held.load(Ordering::Relaxed)
    }
}

fn idle(counter: &AtomicU64, d: Duration) {
    std::thread::sleep(d);
    counter.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

/// One writer: takes the next file, a pool for it, writes it, tells the catalogue.
fn writer(s: &Shared, me: u64) -> Result<(), ChallengeError> {
    let mut buf = Buffer::new(s.spec.bs, s.spec.seed ^ (me << 32) ^ 0x77);
    let pause = Duration::from_millis(20);
    loop {
        if s.interrupt.load(Ordering::Relaxed) || s.writers_done.load(Ordering::Relaxed) {
            return Ok(());
        }
        if s.past_deadline() {
            s.writers_done.store(true, Ordering::Relaxed);
            return Ok(());
        }
        if s.held(&s.writers_held, me) {
            idle(&s.writer_idle_ns, pause);
            continue;
        }
        let again = s.rewrite.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Some(t) = again {
            write_one(s, &t, &mut buf)?;
            continue;
        }
        let Some(seq) = s.next_seq()? else {
            // Every number is handed out; stay while another agent writes files, which come
            // here to be rewritten if it dies.
            if s.store().others_writing(s.id, &s.host)? == 0 {
                return Ok(());
            }
            idle(&s.writer_idle_ns, Duration::from_millis(200));
            continue;
        };
        // Wait for a pool that takes the file (flow control); the number is kept meanwhile.
        let pool = loop {
            if let Some(p) = s.choose_pool(seq) {
                break Some(p);
            }
            if s.interrupt.load(Ordering::Relaxed) || s.past_deadline() {
                break None;
            }
            if s.shared_mode {
                s.sync_backlog()?;
            }
            idle(&s.writer_idle_ns, pause);
        };
        let Some(pool) = pool else {
            // The number was reserved and never used; a gap in the numbers, not a file.
            continue;
        };
        let t = FileTicket {
            seq,
            pool,
            name: file_name(seq),
            seed: s.spec.seed ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        if !s.store().begin_write(s.id, &t, &s.host, s.lease(), s.spec.files)? {
            // Every file of the challenge is begun.
            s.pools[pool].backlog.fetch_sub(1, Ordering::AcqRel);
            s.exhausted.store(true, Ordering::Relaxed);
            continue;
        }
        write_one(s, &t, &mut buf)?;
    }
}

/// Writes file `t` and records how it went (also for a file reclaimed from a dead host).
fn write_one(s: &Shared, t: &FileTicket, buf: &mut Buffer) -> Result<(), ChallengeError> {
    let Some(path) = s.path(t) else {
        return s.refuse(t);
    };
    let pool = &s.pools[t.pool];
    match files::write(&path, s.spec.file_size, buf, t.seed, &pool.written, s.interrupt) {
        Ok(()) => s.store().end_write(s.id, t.seq, s.t())?,
        Err(Stop::Interrupted) => {
            // Stopped by Ctrl-C: the partial file goes, the catalogue keeps it as being written
            // with its lease ended, so that the resume writes it again (counted as rewritten).
            let _ = std::fs::remove_file(&path);
            s.store().expire_lease(s.id, t.seq)?;
        }
        Err(Stop::Io(e)) => {
            let _ = std::fs::remove_file(&path);
            pool.backlog.fetch_sub(1, Ordering::AcqRel);
            let why = {
                {
                    if e.raw_os_error() == Some(libc::ENOSPC) && s.pool_state(t.pool) == PoolState::Open {
                        s.set_pool_state(t.pool, PoolState::Full);
                        s.event(
                            "pool-full",
                            format!(
                                "pool {} is out of space: no new files until readers free some",
                                s.spec.pools[t.pool].name
                            ),
                        );
                    }
                    format!("being written: {e}; removed")
                }
            };
            s.store().lose_file(s.id, t.seq, &why)?;
            // A file lost unwritten leaves its place to another.
            s.exhausted.store(false, Ordering::Relaxed);
            s.event("lost", format!("{}: {why}", path.display()));
        }
    }
    Ok(())
}

/// One reader: takes the oldest written file, reads and verifies it, deletes it.
fn reader(s: &Shared, me: u64) -> Result<(), ChallengeError> {
    let mut buf = Buffer::new(s.spec.bs, 0);
    let pause = Duration::from_millis(20);
    loop {
        if s.interrupt.load(Ordering::Relaxed) || s.readers_done.load(Ordering::Relaxed) {
            return Ok(());
        }
        if s.held(&s.readers_held, me) {
            idle(&s.reader_idle_ns, pause);
            continue;
        }
        let away: Vec<usize> = (0..s.pools.len())
            .filter(|p| s.pool_state(*p) == PoolState::Away)
            .collect();
        let ticket = s.store().begin_read(s.id, &s.host, s.lease(), &away)?;
        let Some(t) = ticket else {
            // Nothing waiting: done when the writers are and no file is in flight anywhere.
            if s.writers_done.load(Ordering::Relaxed) && s.writers_running.load(Ordering::Relaxed) == 0 {
                if s.shared_mode {
                    s.sync_backlog()?;
                }
                if s.pools.iter().all(|p| p.backlog.load(Ordering::Relaxed) == 0) {
                    return Ok(());
                }
            }
            idle(&s.reader_idle_ns, pause);
            continue;
        };
        read_one(s, &t, &mut buf)?;
    }
}

fn read_one(s: &Shared, t: &FileTicket, buf: &mut Buffer) -> Result<(), ChallengeError> {
    let Some(path) = s.path(t) else {
        return s.refuse(t);
    };
    let pool = &s.pools[t.pool];
    match files::read_verify(&path, s.spec.file_size, buf, t.seed, &pool.read, s.interrupt) {
        Ok(bad) => {
            let _ = std::fs::remove_file(&path);
            let outcome = match bad {
                None => ReadOutcome::Verified,
                Some(why) => {
                    s.event("corrupted", format!("{}: {why}", path.display()));
                    ReadOutcome::Corrupted(why)
                }
            };
            s.store().end_read(s.id, t.seq, s.t(), &outcome)?;
            release(s, t.pool);
        }
        Err(Stop::Interrupted) => {
            s.store().return_file(s.id, t.seq)?;
        }
        Err(Stop::Io(e)) => {
            if s.pool_state(t.pool) == PoolState::Away {
                // Its pool went away under the reader: the file waits for the pool to return.
                s.store().return_file(s.id, t.seq)?;
            } else {
                let why = format!("written, then unreadable: {e}");
                s.event("lost", format!("{}: {why}", path.display()));
                s.store().lose_file(s.id, t.seq, &why)?;
                release(s, t.pool);
            }
        }
    }
    Ok(())
}

/// A file of pool `p` left the backlog; a pool that was full takes files again.
fn release(s: &Shared, p: usize) {
    s.pools[p].backlog.fetch_sub(1, Ordering::AcqRel);
    if s.pool_state(p) == PoolState::Full {
        s.set_pool_state(p, PoolState::Open);
    }
}

/// Stores each interval's bytes per pool, renews the leases, keeps the long-term write rates
/// for least-loaded, and draws the live line.
fn sampler(s: &Shared, live: bool, finished: &AtomicBool, first_idx: u64) -> Result<(), ChallengeError> {
    let interval = Duration::from_secs_f64(s.spec.interval);
    let window = ((s.spec.lt / s.spec.interval).round() as usize).max(1);
    let mut history: Vec<Vec<f64>> = vec![Vec::new(); s.pools.len()];
    let mut last = Instant::now();
    let mut idx = first_idx;
    let mut next = last + interval;
    // Leases are renewed (and dead agents' files reclaimed) three times per lease.
    let renew_every = Duration::from_secs_f64(s.spec.lease / 3.0);
    let mut renewed = Instant::now();
    loop {
        let done = finished.load(Ordering::Relaxed);
        if renewed.elapsed() >= renew_every {
            renew_and_reclaim(s)?;
            renewed = Instant::now();
        }
        if !done {
            let wait = next
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50));
            if !wait.is_zero() {
                std::thread::sleep(wait);
                continue;
            }
        }
        let now = Instant::now();
        let seconds = now.duration_since(last).as_secs_f64();
        let read: Vec<u64> = s.pools.iter().map(|p| p.read.swap(0, Ordering::Relaxed)).collect();
        let written: Vec<u64> = s.pools.iter().map(|p| p.written.swap(0, Ordering::Relaxed)).collect();
        s.total_read.fetch_add(read.iter().sum(), Ordering::Relaxed);
        s.total_written.fetch_add(written.iter().sum(), Ordering::Relaxed);
        if seconds > 0.0 {
            let sample = ChallengeSample {
                host: s.host.clone(),
                idx,
                t: s.t(),
                seconds,
                read: read.clone(),
                written: written.clone(),
            };
            s.store().add_challenge_sample(s.id, &sample)?;
            for (p, w) in written.iter().enumerate() {
                let h = &mut history[p];
                h.push(*w as f64 / seconds);
                if h.len() > window {
                    h.remove(0);
                }
                let avg = h.iter().sum::<f64>() / h.len() as f64;
                s.pools[p].write_rate.store(avg.to_bits(), Ordering::Relaxed);
            }
            if live {
                let (r, w): (u64, u64) = (read.iter().sum(), written.iter().sum());
                eprint!(
                    "\rstorlab: {:>8.0} s  write {:>9.1} MB/s  read {:>9.1} MB/s  ",
                    s.t(),
                    w as f64 / seconds / 1e6,
                    r as f64 / seconds / 1e6
                );
            }
            idx += 1;
        }
        last = now;
        next = now + interval;
        if done {
            if live {
                eprintln!();
            }
            return Ok(());
        }
    }
}

/// Extends this host's leases; takes over files whose lease ran out (their agent died): files
/// being read wait again, files being written are rewritten here.
fn renew_and_reclaim(s: &Shared) -> Result<(), ChallengeError> {
    let store = s.store();
    store.renew_leases(s.id, &s.host, s.lease())?;
    let again = store.reclaim_expired(s.id, &s.host, epoch_now(), s.lease())?;
    drop(store);
    if !again.is_empty() {
        s.event(
            "reclaimed",
            format!(
                "{} file(s) whose writer's lease ran out are written again here: {}",
                again.len(),
                again.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        );
        s.rewrite.lock().unwrap_or_else(|e| e.into_inner()).extend(again);
    }
    Ok(())
}

/// Carries out the fault plan's in-process actions on time (drain, stop writers or readers) and
/// undoes them after their FOR.
fn faults(s: &Shared, finished: &AtomicBool) {
    let mut plan: Vec<(f64, usize, bool)> = Vec::new();
    for (i, f) in s.spec.faults.iter().enumerate() {
        plan.push((f.at, i, false));
        if let Some(d) = f.for_seconds {
            plan.push((f.at + d, i, true));
        }
    }
    plan.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (at, i, undo) in plan {
        while s.t() < at {
            if finished.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20).min(Duration::from_secs_f64((at - s.t()).max(0.0))));
        }
        let f = &s.spec.faults[i];
        let pool = s.spec.pools.iter().position(|p| p.name == f.target);
        let count = |held: &AtomicU64, all: u32| match f.target.parse::<u64>() {
            Ok(n) => held.store(n.min(all as u64), Ordering::Relaxed),
            Err(_) => held.store(all as u64, Ordering::Relaxed),
        };
        let detail = match (f.action, undo) {
            (FaultAction::Drain, false) => {
                if let Some(p) = pool {
                    s.set_pool_state(p, PoolState::Draining);
                }
                format!("pool {} drained: no new files, readers empty it", f.target)
            }
            (FaultAction::Drain, true) => {
                if let Some(p) = pool {
                    s.set_pool_state(p, PoolState::Open);
                }
                format!("pool {} takes files again", f.target)
            }
            (FaultAction::StopWriters, false) => {
                count(&s.writers_held, u32::MAX);
                format!("writers stopped: {}", f.target)
            }
            (FaultAction::StopWriters, true) => {
                s.writers_held.store(0, Ordering::Relaxed);
                "writers restarted".to_string()
            }
            (FaultAction::StopReaders, false) => {
                count(&s.readers_held, u32::MAX);
                format!("readers stopped: {}", f.target)
            }
            (FaultAction::StopReaders, true) => {
                s.readers_held.store(0, Ordering::Relaxed);
                "readers restarted".to_string()
            }
            (other, _) => format!("{other} on {}: not carried out on this host", f.target),
        };
        s.event(if undo { "undo" } else { "fault" }, detail);
    }
}

/// Runs the challenge's share of this host until its end (the duration, every file done, or
/// Ctrl-C); stores samples, events and the catalogue as it goes.
pub fn run(store: Store, challenge: &StoredChallenge, cfg: &RunConfig) -> Result<(Store, HostOutcome), ChallengeError> {
    let spec = &challenge.spec;
    if let Some(f) = spec.faults.iter().find(|f| {
        !matches!(
            f.action,
            FaultAction::Drain | FaultAction::StopWriters | FaultAction::StopReaders
        )
    }) {
        return Err(ChallengeError::Input(format!(
            "the fault action {} is not carried out yet in this build (drain, stop-writers and stop-readers are)",
            f.action
        )));
    }
    let dirs: Vec<PathBuf> = spec.pools.iter().map(|p| pool_dir(p, &challenge.uuid)).collect();
    for (d, p) in dirs.iter().zip(&spec.pools) {
        std::fs::create_dir_all(d).map_err(|e| ChallengeError::Io(format!("pool {}: {}: {e}", p.name, d.display())))?;
    }
    let t0 = store.start_challenge(challenge.id, epoch_now(), cfg.run_id, &cfg.host)?;
    let first_idx = store.next_sample_idx(challenge.id, &cfg.host)?;
    let again = store.take_back(challenge.id, &cfg.take_over, &cfg.host, epoch_now() + spec.lease)?;
    let backlog = store.pool_backlog(challenge.id, spec.pools.len())?;
    let started = Instant::now();
    // The challenge's end counts from its start, which another host may have made earlier.
    let already = (epoch_now() - t0).max(0.0);
    let shared = Shared {
        store: Mutex::new(store),
        id: challenge.id,
        spec,
        dirs,
        host: cfg.host.clone(),
        t0_epoch: t0,
        deadline: spec
            .duration
            .map(|d| started + Duration::from_secs_f64((d - already).max(0.0))),
        pools: backlog
            .iter()
            .map(|b| PoolLive {
                read: AtomicU64::new(0),
                written: AtomicU64::new(0),
                backlog: AtomicU64::new(*b),
                state: AtomicU8::new(PoolState::Open as u8),
                write_rate: AtomicU64::new(0f64.to_bits()),
            })
            .collect(),
        writers_done: AtomicBool::new(cfg.writers == 0),
        readers_done: AtomicBool::new(false),
        writers_held: AtomicU64::new(0),
        readers_held: AtomicU64::new(0),
        writers_running: AtomicU64::new(cfg.writers as u64),
        interrupt: cfg.interrupt,
        reserved: Mutex::new((0, 0)),
        writer_idle_ns: AtomicU64::new(0),
        reader_idle_ns: AtomicU64::new(0),
        total_read: AtomicU64::new(0),
        total_written: AtomicU64::new(0),
        rewrite: Mutex::new(again.clone()),
        shared_mode: cfg.shared,
        exhausted: AtomicBool::new(false),
        last_sync: Mutex::new(Instant::now() - Duration::from_secs(1)),
    };
    if !again.is_empty() {
        shared.event(
            "resumed",
            format!(
                "{} partly written file(s) of {} removed and written again: {}",
                again.len(),
                cfg.take_over.join(", "),
                again.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    let s = &shared;
    let finished = AtomicBool::new(false);
    let mut errors: Vec<ChallengeError> = Vec::new();
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sampler(s, cfg.live, &finished, first_idx));
        let faulter = scope.spawn(|| faults(s, &finished));
        let writers: Vec<_> = (0..cfg.writers as u64)
            .map(|me| {
                scope.spawn(move || {
                    let r = writer(s, me);
                    s.writers_running.fetch_sub(1, Ordering::AcqRel);
                    if s.writers_running.load(Ordering::Acquire) == 0 {
                        s.writers_done.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        let readers: Vec<_> = (0..cfg.readers as u64)
            .map(|me| {
                scope.spawn(move || {
                    let r = reader(s, me);
                    if s.past_deadline() {
                        s.readers_done.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        // At the deadline readers stop too (after the file in hand); without one they empty the
        // pools.
        let watcher = scope.spawn(|| {
            while !s.writers_done.load(Ordering::Relaxed) || s.writers_running.load(Ordering::Relaxed) > 0 {
                if s.past_deadline() {
                    s.readers_done.store(true, Ordering::Relaxed);
                }
                if s.interrupt.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if s.past_deadline() {
                s.readers_done.store(true, Ordering::Relaxed);
            }
        });
        for w in writers.into_iter().chain(readers) {
            match w.join() {
                Ok(Err(e)) => errors.push(e),
                Ok(Ok(())) => {}
                Err(_) => errors.push(ChallengeError::Io("a worker thread panicked".into())),
            }
        }
        let _ = watcher.join();
        finished.store(true, Ordering::Relaxed);
        if let Ok(Err(e)) = sampler.join() {
            errors.push(e);
        }
        let _ = faulter.join();
    });
    let seconds = started.elapsed().as_secs_f64();
    let store = shared.store.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    let outcome = HostOutcome {
        seconds,
        bytes_written: shared.total_written.load(Ordering::Relaxed),
        bytes_read: shared.total_read.load(Ordering::Relaxed),
        writer_idle: shared.writer_idle_ns.load(Ordering::Relaxed) as f64 / 1e9,
        reader_idle: shared.reader_idle_ns.load(Ordering::Relaxed) as f64 / 1e9,
        interrupted: cfg.interrupt.load(Ordering::Relaxed),
        problems: Vec::new(),
    };
    Ok((store, outcome))
}

/// Compares the catalogue with the pools' directories: every file it says is waiting is there
/// whole; nothing else of the challenge's is left. Then removes the waiting files and the
/// directories (the challenge is over). Returns what did not match.
pub fn check_and_clean(
    store: &Store,
    challenge: &StoredChallenge,
    account: &Account,
) -> Result<Vec<String>, ChallengeError> {
    let spec = &challenge.spec;
    let mut problems = Vec::new();
    let waiting = store.files_in_state(challenge.id, storlab_model::challenge::FileState::Written, None)?;
    let reading = store.files_in_state(challenge.id, storlab_model::challenge::FileState::Reading, None)?;
    let mut expected: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    for t in waiting.iter().chain(&reading) {
        let path = pool_dir(&spec.pools[t.pool], &challenge.uuid).join(&t.name);
        match std::fs::metadata(&path) {
            Ok(m) if m.len() == spec.file_size => {}
            Ok(m) => problems.push(format!(
                "{} is {} bytes, the catalogue says {} were written",
                path.display(),
                m.len(),
                spec.file_size
            )),
            Err(e) => problems.push(format!(
                "{} is written in the catalogue but not on disk: {e}",
                path.display()
            )),
        }
        expected.insert(path);
    }
    if account.written != account.read + account.lost_written + account.left_over() {
        problems.push(format!(
            "the catalogue does not add up: written {} ≠ read {} + lost after writing {} + left over {}",
            account.written,
            account.read,
            account.lost_written,
            account.left_over()
        ));
    }
    for p in &spec.pools {
        let dir = pool_dir(p, &challenge.uuid);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let ours = e.file_name().to_str().is_some_and(crate::is_file_name);
            if !expected.contains(&path) {
                problems.push(format!(
                    "{} is on disk but not waiting in the catalogue",
                    path.display()
                ));
            }
            if ours {
                let _ = std::fs::remove_file(&path);
            }
        }
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(problems)
}
