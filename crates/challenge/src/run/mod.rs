//! Running a challenge on this host: writer and reader threads taking work from the catalogue,
//! a sampler storing each pool's bytes per interval, the fault plan carried out on time, and
//! the account checked at the end against the catalogue and the files on disk.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use storlab_model::challenge::{
    Account, ChallengeEvent, ChallengeSample, ChallengeSpec, FaultAction, FileTicket, Spread,
};
use storlab_store::{ReadOutcome, Store, StoredChallenge};

use crate::catalogue::Catalogue;

use std::collections::HashMap;

use storlab_env::mounts::Mount;
use storlab_impact::task::{Task, TaskState};
use storlab_model::challenge::Fault;

use crate::faults;
use crate::files::{self, Buffer, Stop};
use crate::{file_name, pool_dir, ChallengeError};

mod devices;
mod plan;
mod sampler;
mod workers;

use plan::FaultPlan;
use sampler::sampler;
use workers::{less, reader, writer};

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
    /// Its device is gone (detached): nothing of it comes back.
    Gone = 4,
}

impl PoolState {
    fn from_u8(v: u8) -> PoolState {
        match v {
            1 => PoolState::Draining,
            2 => PoolState::Away,
            3 => PoolState::Full,
            4 => PoolState::Gone,
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
    /// Files open in the pool on this host (being written or read): a fault that takes the
    /// pool away waits for them.
    active: AtomicU64,
}

/// Told each sample: the pools' names and the bytes read and written on each since the last.
pub type SampleObserver<'a> = &'a (dyn Fn(&[String], &[u64], &[u64]) + Sync);

/// How the challenge is run on this host.
pub struct RunConfig<'a> {
    /// This host's name, as the catalogue and samples record it.
    pub host: String,
    /// The run (kind `challenge`) this host's share is stored under.
    pub run_id: i64,
    /// A live line on stderr.
    pub live: bool,
    /// Told each sample: the pools' names and the bytes read and written on each since the
    /// last (the live figures of `--metrics`).
    pub observer: Option<SampleObserver<'a>>,
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
    /// The host actions of this host's own fault plan (unmount, read-only, detach, command,
    /// task): from its command line or job file, never from the database.
    pub host_faults: Vec<Fault>,
}

pub use storlab_model::challenge::HostOutcome;

struct Shared<'a> {
    /// The catalogue, ridden through outages; every time this host stores is on the database
    /// server's clock, counted on the host's monotonic clock from a reading of it, so a sample
    /// covers exactly the seconds it measured, a step of the host's wall clock (NTP, an
    /// administrator's `date`) moves nothing, and hosts whose clocks disagree line up.
    cat: Catalogue<'a>,
    id: i64,
    spec: &'a ChallengeSpec,
    dirs: Vec<PathBuf>,
    host: String,
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
    /// The fault plan carried out here.
    faults: Vec<Fault>,
    /// When the backlog was last read from the catalogue (shared mode).
    last_sync: Mutex<Instant>,
}

impl Shared<'_> {
    /// Seconds since the challenge started (a host that joins later counts from the same start).
    fn t(&self) -> f64 {
        self.cat.t()
    }

    /// The moment `i` in seconds since the challenge started.
    fn t_at(&self, i: Instant) -> f64 {
        self.cat.t_at(i)
    }

    /// A lease's length, seconds: it runs on the database's clock.
    fn lease(&self) -> f64 {
        self.spec.lease
    }

    /// Reads each pool's backlog from the catalogue (other hosts write and read the same
    /// pools); at most every 200 ms.
    fn sync_backlog(&self) -> Result<(), ChallengeError> {
        let mut last = self.last_sync.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() < Duration::from_millis(200) {
            return Ok(());
        }
        *last = Instant::now();
        let counts = self.cat.with(|st, _| st.pool_backlog(self.id, self.pools.len()))?;
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
        self.cat.event(e);
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
        self.cat.with(|st, _| st.lose_file(self.id, t.seq, &why))?;
        self.cat.release(t.seq);
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
            // A retry after a lost answer reserves another block: a gap in the numbers.
            let (first, n) = (self.cat.with(|st, _| st.reserve_files(self.id, 64))?, 64);
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

    /// A worker is about to open a file of pool `p`: counted first, then the pool's state
    /// checked (in that order, sequentially consistent, so a fault that sets the pool away and
    /// then waits for its open files either sees this worker or is seen by it). False (not
    /// counted) when the pool does not take the work now.
    fn enter(&self, p: usize, writing: bool) -> bool {
        self.pools[p].active.fetch_add(1, Ordering::SeqCst);
        let ok = match PoolState::from_u8(self.pools[p].state.load(Ordering::SeqCst)) {
            PoolState::Open => true,
            PoolState::Draining | PoolState::Full => !writing,
            PoolState::Away | PoolState::Gone => false,
        };
        if !ok {
            self.pools[p].active.fetch_sub(1, Ordering::SeqCst);
        }
        ok
    }

    fn leave(&self, p: usize) {
        self.pools[p].active.fetch_sub(1, Ordering::SeqCst);
    }

    /// Takes pool `p` out of service (no new files, no reads) and waits until no file of it is
    /// open here (at most a minute); false when files stayed open.
    fn quiesce(&self, pools: &[usize], state: PoolState) -> bool {
        for p in pools {
            self.pools[*p].state.store(state as u8, Ordering::SeqCst);
        }
        let until = Instant::now() + Duration::from_secs(60);
        while pools.iter().any(|p| self.pools[*p].active.load(Ordering::SeqCst) > 0) {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    fn held(&self, held: &AtomicU64, me: u64) -> bool {
        me < held.load(Ordering::Relaxed)
    }
}

/// Runs the challenge's share of this host until its end (the duration, every file done, or
/// Ctrl-C); stores samples, events and the catalogue as it goes.
pub fn run(store: Store, challenge: &StoredChallenge, cfg: &RunConfig) -> Result<(Store, HostOutcome), ChallengeError> {
    let (shared, first_idx, started) = begin(store, challenge, cfg)?;
    let mut errors = work(&shared, cfg, first_idx);
    let seconds = started.elapsed().as_secs_f64();
    // What waits for the database is stored before the share ends (within the window).
    if let Err(e) = shared.cat.flush_all() {
        errors.insert(0, e);
    }
    // An outage past the window ends every thread with `Away`: that is the reason to give.
    if let Some(why) = shared.cat.gave_up() {
        return Err(ChallengeError::Away(why));
    }
    if let Some(e) = errors.into_iter().next() {
        return Err(e);
    }
    let outages = shared.cat.outages.load(Ordering::Relaxed);
    let dropped = shared.cat.dropped.load(Ordering::Relaxed);
    let store = shared.cat.into_store();
    let outcome = HostOutcome {
        seconds,
        bytes_written: shared.total_written.load(Ordering::Relaxed),
        bytes_read: shared.total_read.load(Ordering::Relaxed),
        writer_idle: shared.writer_idle_ns.load(Ordering::Relaxed) as f64 / 1e9,
        reader_idle: shared.reader_idle_ns.load(Ordering::Relaxed) as f64 / 1e9,
        interrupted: cfg.interrupt.load(Ordering::Relaxed),
        outages,
        dropped,
        problems: Vec::new(),
    };
    Ok((store, outcome))
}

/// This host's share begun: its fault plan (the challenge's faults done inside storlab — drain,
/// stop writers or readers — and the host actions this host's own plan names; never a host
/// action read from the database), the pools' directories, the catalogue with the files taken
/// back from this host's dead agents, and the state the threads share. Returns it with the
/// next sample's index and when the share started.
fn begin<'a>(
    store: Store,
    challenge: &'a StoredChallenge,
    cfg: &RunConfig<'a>,
) -> Result<(Shared<'a>, u64, Instant), ChallengeError> {
    let spec = &challenge.spec;
    let plan: Vec<Fault> = spec
        .faults
        .iter()
        .filter(|f| !faults::is_host_action(f.action))
        .chain(&cfg.host_faults)
        .cloned()
        .collect();
    faults::check(&spec.pools, &cfg.host_faults)?;
    let dirs: Vec<PathBuf> = spec.pools.iter().map(|p| pool_dir(p, &challenge.uuid)).collect();
    for (d, p) in dirs.iter().zip(&spec.pools) {
        std::fs::create_dir_all(d).map_err(|e| ChallengeError::Io(format!("pool {}: {}: {e}", p.name, d.display())))?;
    }
    let t0 = store.start_challenge(challenge.id, cfg.run_id, &cfg.host)?;
    let first_idx = store.next_sample_idx(challenge.id, &cfg.host)?;
    let again = store.take_back(challenge.id, &cfg.take_over, &cfg.host, spec.lease)?;
    let backlog = store.pool_backlog(challenge.id, spec.pools.len())?;
    let cat = Catalogue::new(store, challenge.id, &cfg.host, (t0, spec.lease), cfg.interrupt)?;
    for t in &again {
        cat.hold(t.seq);
    }
    let started = Instant::now();
    // The challenge's end counts from its start, which another host may have made earlier.
    let already = cat.t_at(started).max(0.0);
    let shared = Shared {
        cat,
        id: challenge.id,
        spec,
        dirs,
        host: cfg.host.clone(),
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
                active: AtomicU64::new(0),
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
        faults: plan,
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
    Ok((shared, first_idx, started))
}

/// The share's threads, started together and joined: the sampler, the fault plan (what is
/// due at the start carried out before any writer or reader starts: a plan that stops the
/// readers at 0s stops them before they take a file), the writers, the readers, and the
/// watcher that stops the readers at the deadline. Returns their errors.
fn work(s: &Shared, cfg: &RunConfig, first_idx: u64) -> Vec<ChallengeError> {
    let finished = AtomicBool::new(false);
    let mut errors: Vec<ChallengeError> = Vec::new();
    let mut plan = FaultPlan::new(&s.faults);
    plan.carry_out_due(s);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sampler(s, cfg.live, cfg.observer, &finished, first_idx));
        let faulter = scope.spawn(|| plan.run(s, &finished));
        let writers: Vec<_> = (0..cfg.writers as u64)
            .map(|me| {
                scope.spawn(move || {
                    let r = writer(s, me);
                    if !matches!(r, Ok(true)) {
                        s.writers_running.fetch_sub(1, Ordering::AcqRel);
                    }
                    if s.writers_running.load(Ordering::Acquire) == 0 {
                        s.writers_done.store(true, Ordering::Relaxed);
                    }
                    r.map(|_| ())
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
        let watcher = scope.spawn(|| watch_deadline(s));
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
    errors
}

/// At the deadline readers stop too (after the file in hand); without one they empty the
/// pools.
fn watch_deadline(s: &Shared) {
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
    use storlab_model::challenge::FileState;
    let mut problems = Vec::new();
    let mut finished = 0u64;
    let waiting = store.files_in_state(challenge.id, FileState::Written, None)?;
    let reading = store.files_in_state(challenge.id, FileState::Reading, None)?;
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
                let name = e.file_name().to_string_lossy().into_owned();
                let index = spec.pools.iter().position(|q| q.name == p.name).unwrap_or(0);
                match store.file_state(challenge.id, index, &name)? {
                    // Read (or lost) and recorded; its reader died before deleting it.
                    Some(FileState::Done | FileState::Corrupted | FileState::Lost) if ours => finished += 1,
                    _ => problems.push(format!(
                        "{} is on disk but not waiting in the catalogue",
                        path.display()
                    )),
                }
            }
            if ours {
                let _ = std::fs::remove_file(&path);
            }
        }
        let _ = std::fs::remove_dir(&dir);
    }
    if finished > 0 {
        let note = ChallengeEvent {
            t: {
                let now = store.db_now()?;
                now - store.challenge(challenge.id)?.and_then(|c| c.t0).unwrap_or(now)
            },
            host: String::new(),
            kind: "note".into(),
            detail: format!(
                "{finished} file(s) read (or lost) and recorded, whose reader died before deleting them, removed at the end"
            ),
        };
        store.add_challenge_event(challenge.id, &note)?;
    }
    Ok(problems)
}
