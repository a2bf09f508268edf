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

/// Takes `n` from a backlog count, never below zero: in shared mode the count is read from the
/// catalogue now and then, and a file another host's reader took may be released here too.
fn less(count: &AtomicU64, n: u64) {
    let _ = count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| Some(b.saturating_sub(n)));
}

fn idle(counter: &AtomicU64, d: Duration) {
    std::thread::sleep(d);
    counter.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

/// One writer: takes the next file, a pool for it, writes it, tells the catalogue.
/// Returns true when it counted itself out of the running writers (see below), false when
/// the caller must.
fn writer(s: &Shared, me: u64) -> Result<bool, ChallengeError> {
    let mut buf = Buffer::new(s.spec.bs, s.spec.seed ^ (me << 32) ^ 0x77);
    let pause = Duration::from_millis(20);
    loop {
        if s.interrupt.load(Ordering::Relaxed) || s.writers_done.load(Ordering::Relaxed) {
            return Ok(false);
        }
        if s.past_deadline() {
            s.writers_done.store(true, Ordering::Relaxed);
            return Ok(false);
        }
        if s.held(&s.writers_held, me) {
            idle(&s.writer_idle_ns, pause);
            continue;
        }
        let again = s.rewrite.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Some(t) = again {
            if t.pool < s.pools.len() && s.pool_state(t.pool) == PoolState::Gone {
                s.cat.with(|st, _| {
                    st.lose_file(
                        s.id,
                        t.seq,
                        "its pool's device was detached before it could be written again",
                    )
                })?;
                s.cat.release(t.seq);
            } else if t.pool < s.pools.len() && !s.enter(t.pool, true) {
                // Its pool is away for now: it waits.
                s.rewrite.lock().unwrap_or_else(|e| e.into_inner()).push(t);
                idle(&s.writer_idle_ns, pause);
            } else {
                write_one(s, &t, &mut buf)?;
            }
            continue;
        }
        let Some(seq) = s.next_seq()? else {
            // Every number is handed out; stay while another agent writes files, which come
            // here to be rewritten if it dies.
            // Decided under the queue's lock (see renew_and_reclaim): a file reclaimed for this
            // host is either in the queue or still another's.
            // The writer counts itself out under the same lock: the sampler takes files being
            // written only while a writer is counted in.
            let queue = s.rewrite.lock().unwrap_or_else(|e| e.into_inner());
            if queue.is_empty() && s.cat.with(|st, _| st.others_writing(s.id, &s.host))? == 0 {
                s.writers_running.fetch_sub(1, Ordering::AcqRel);
                return Ok(true);
            }
            drop(queue);
            idle(&s.writer_idle_ns, Duration::from_millis(200));
            continue;
        };
        // Wait for a pool that takes the file (flow control); the number is kept meanwhile.
        let pool = loop {
            if let Some(p) = s.choose_pool(seq) {
                if s.enter(p, true) {
                    break Some(p);
                }
                less(&s.pools[p].backlog, 1);
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
        // Held before it is asked for: a lost answer leaves it this thread's, not given back.
        s.cat.hold(seq);
        let begun = s
            .cat
            .with(|st, again| st.begin_write(s.id, &t, &s.host, s.lease(), s.spec.files, again));
        if !begun.as_ref().is_ok_and(|b| *b) {
            s.cat.release(seq);
        }
        if !begun? {
            // Every file of the challenge is begun.
            less(&s.pools[pool].backlog, 1);
            s.leave(pool);
            s.exhausted.store(true, Ordering::Relaxed);
            continue;
        }
        write_one(s, &t, &mut buf)?;
    }
}

/// Writes file `t` and records how it went (also for a file reclaimed from a dead host).
/// Writes file `t` (its pool entered; left here) and records how it went.
fn write_one(s: &Shared, t: &FileTicket, buf: &mut Buffer) -> Result<(), ChallengeError> {
    let Some(path) = s.path(t) else {
        if t.pool < s.pools.len() {
            s.leave(t.pool);
        }
        return s.refuse(t);
    };
    let r = write_entered(s, t, &path, buf);
    s.leave(t.pool);
    r
}

fn write_entered(s: &Shared, t: &FileTicket, path: &std::path::Path, buf: &mut Buffer) -> Result<(), ChallengeError> {
    let pool = &s.pools[t.pool];
    match files::write(
        path,
        s.spec.file_size,
        buf,
        t.seed,
        &pool.written,
        s.interrupt,
        s.spec.direct,
    ) {
        Ok(()) => {
            let t_done = s.t();
            let mine = s.cat.with(|st, _| st.end_write(s.id, t.seq, t_done, &s.host));
            s.cat.release(t.seq);
            if !mine? {
                // Too slow: the lease ran out and another agent writes this file now.
                s.event(
                    "taken-over",
                    format!(
                        "{}: written here after its lease ran out; another agent owns it",
                        path.display()
                    ),
                );
            }
        }
        Err(Stop::Interrupted) => {
            // Stopped by Ctrl-C: the partial file goes, the catalogue keeps it as being written
            // with its lease ended, so that the resume writes it again (counted as rewritten).
            let _ = std::fs::remove_file(path);
            let ended = s.cat.with(|st, _| st.expire_lease(s.id, t.seq));
            s.cat.release(t.seq);
            ended?;
        }
        Err(Stop::Io(e)) => {
            let _ = std::fs::remove_file(path);
            less(&pool.backlog, 1);
            let failed = matches!(e.raw_os_error(), Some(libc::EROFS | libc::EIO));
            if e.raw_os_error() == Some(libc::ENOSPC) && s.pool_state(t.pool) == PoolState::Open {
                s.set_pool_state(t.pool, PoolState::Full);
                s.event(
                    "pool-full",
                    format!(
                        "pool {} is out of space: no new files until readers free some",
                        s.spec.pools[t.pool].name
                    ),
                );
            } else if failed
                && matches!(s.pool_state(t.pool), PoolState::Open | PoolState::Full)
                && s.pools[t.pool].state.swap(PoolState::Draining as u8, Ordering::SeqCst) != PoolState::Draining as u8
            {
                // A filesystem that turned read-only (btrfs after an error, ext4's errors=
                // remount-ro) or a device that fails would lose every file sent to it, one
                // after another: the pool takes no new file on this host from now on, and its
                // waiting files are still read.
                s.event(
                    "pool-failed",
                    format!(
                        "pool {} refused a write ({e}): no new files in it on this host from now on; what waits in it is still read",
                        s.spec.pools[t.pool].name
                    ),
                );
            }
            let why = format!("being written: {e}; removed");
            let lost = s.cat.with(|st, _| st.lose_file(s.id, t.seq, &why));
            s.cat.release(t.seq);
            lost?;
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
            .filter(|p| matches!(s.pool_state(*p), PoolState::Away | PoolState::Gone))
            .collect();
        // Held as it is handed over, under the store's lock: a file is never in the catalogue
        // this process's without a thread of it holding it (see catalogue.rs).
        let ticket = s.cat.with(|st, _| {
            let t = st.begin_read(s.id, &s.host, s.lease(), &away)?;
            if let Some(t) = &t {
                s.cat.hold(t.seq);
            }
            Ok(t)
        })?;
        let Some(t) = ticket else {
            // Nothing waiting: done when the writers are and no file is in flight anywhere.
            if s.writers_done.load(Ordering::Relaxed) && s.writers_running.load(Ordering::Relaxed) == 0 {
                if s.shared_mode {
                    s.sync_backlog()?;
                }
                // Another agent's file in a reader's hands comes back to waiting if that agent
                // died (its lease runs out): wait for those too.
                let others = if s.shared_mode {
                    s.cat.with(|st, _| st.others_reading(s.id, &s.host))?
                } else {
                    0
                };
                if others == 0 && s.pools.iter().all(|p| p.backlog.load(Ordering::Relaxed) == 0) {
                    return Ok(());
                }
            }
            idle(&s.reader_idle_ns, pause);
            continue;
        };
        if t.pool < s.pools.len() && !s.enter(t.pool, false) {
            // Its pool went away between the pick and now: the file waits.
            s.cat.with(|st, _| st.return_file(s.id, t.seq))?;
            s.cat.release(t.seq);
            idle(&s.reader_idle_ns, pause);
            continue;
        }
        read_one(s, &t, &mut buf)?;
    }
}

/// Reads file `t` (its pool entered; left here), verifies and deletes it, and records it.
fn read_one(s: &Shared, t: &FileTicket, buf: &mut Buffer) -> Result<(), ChallengeError> {
    let Some(path) = s.path(t) else {
        if t.pool < s.pools.len() {
            s.leave(t.pool);
        }
        return s.refuse(t);
    };
    let r = read_entered(s, t, &path, buf);
    s.leave(t.pool);
    r
}

fn read_entered(s: &Shared, t: &FileTicket, path: &std::path::Path, buf: &mut Buffer) -> Result<(), ChallengeError> {
    let pool = &s.pools[t.pool];
    match files::read_verify(
        path,
        s.spec.file_size,
        buf,
        t.seed,
        &pool.read,
        s.interrupt,
        s.spec.direct,
    ) {
        Ok(bad) => {
            let outcome = match bad {
                None => ReadOutcome::Verified,
                Some(why) => {
                    s.event("corrupted", format!("{}: {why}", path.display()));
                    ReadOutcome::Corrupted(why)
                }
            };
            // Recorded, then deleted: a reader that dies between the two leaves a file the
            // catalogue knows is read (the end removes it), never a file it believes is
            // waiting but is gone.
            let t_done = s.t();
            let mine = s.cat.with(|st, _| st.end_read(s.id, t.seq, t_done, &outcome, &s.host));
            s.cat.release(t.seq);
            if mine? {
                let _ = std::fs::remove_file(path);
            } else {
                // Too slow: the lease ran out and the file waits for another reader; it stays.
                s.event(
                    "taken-over",
                    format!(
                        "{}: read here after its lease ran out; left for another reader",
                        path.display()
                    ),
                );
            }
            release(s, t.pool);
        }
        Err(Stop::Interrupted) => {
            let back = s.cat.with(|st, _| st.return_file(s.id, t.seq));
            s.cat.release(t.seq);
            back?;
        }
        Err(Stop::Io(e)) => {
            if matches!(s.pool_state(t.pool), PoolState::Away | PoolState::Gone) {
                // Its pool went away under the reader: the file waits for the pool to return.
                let back = s.cat.with(|st, _| st.return_file(s.id, t.seq));
                s.cat.release(t.seq);
                back?;
            } else {
                let why = format!("written, then unreadable: {e}");
                s.event("lost", format!("{}: {why}", path.display()));
                let lost = s.cat.with(|st, _| st.lose_file(s.id, t.seq, &why));
                s.cat.release(t.seq);
                lost?;
                release(s, t.pool);
            }
        }
    }
    Ok(())
}

/// A file of pool `p` left the backlog; a pool that was full takes files again.
fn release(s: &Shared, p: usize) {
    less(&s.pools[p].backlog, 1);
    let was_full = s.pools[p]
        .state
        .compare_exchange(
            PoolState::Full as u8,
            PoolState::Open as u8,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_ok();
    if was_full {
        s.event(
            "pool-open",
            format!("pool {} takes files again (a reader freed space)", s.spec.pools[p].name),
        );
    }
}

/// Stores each interval's bytes per pool, renews the leases, keeps the long-term write rates
/// for least-loaded, and draws the live line.
fn sampler(
    s: &Shared,
    live: bool,
    observer: Option<SampleObserver<'_>>,
    finished: &AtomicBool,
    first_idx: u64,
) -> Result<(), ChallengeError> {
    let names: Vec<String> = s.spec.pools.iter().map(|p| p.name.clone()).collect();
    let interval = Duration::from_secs_f64(s.spec.interval);
    let window = ((s.spec.lt / s.spec.interval).round() as usize).max(1);
    let mut history: Vec<Vec<f64>> = vec![Vec::new(); s.pools.len()];
    let mut last = Instant::now();
    // The last sample's end on the time base: each sample begins where the one before ended,
    // also across a step of the time base (its seconds are then the base's, which a step
    // after a reading of the server's clock lengthens or shortens by the step).
    let mut last_t = s.t_at(last);
    let mut idx = first_idx;
    let mut next = last + interval;
    // Leases are renewed (and dead agents' files reclaimed) three times per lease.
    let renew_every = Duration::from_secs_f64(s.spec.lease / 3.0);
    let mut renewed = Instant::now();
    loop {
        let done = finished.load(Ordering::Relaxed);
        if renewed.elapsed() >= renew_every && renew_and_reclaim(s)? {
            renewed = Instant::now();
        }
        s.cat.keep_time();
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
        let t_now = s.t_at(now);
        let seconds = match t_now - last_t {
            // A step back past the last sample's end: its span is the monotonic clock's.
            d if d <= 0.0 => now.duration_since(last).as_secs_f64(),
            d => d,
        };
        let read: Vec<u64> = s.pools.iter().map(|p| p.read.swap(0, Ordering::Relaxed)).collect();
        let written: Vec<u64> = s.pools.iter().map(|p| p.written.swap(0, Ordering::Relaxed)).collect();
        s.total_read.fetch_add(read.iter().sum(), Ordering::Relaxed);
        s.total_written.fetch_add(written.iter().sum(), Ordering::Relaxed);
        if let Some(o) = observer {
            o(&names, &read, &written);
        }
        if seconds > 0.0 {
            let sample = ChallengeSample {
                host: s.host.clone(),
                idx,
                t: t_now,
                seconds,
                read: read.clone(),
                written: written.clone(),
            };
            // Stored now, or kept in order while the database is away.
            s.cat.sample(sample);
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
                let waiting = match s.cat.waiting() {
                    0 => String::new(),
                    n => format!(" ({n} waiting for the database)"),
                };
                eprint!(
                    "\rstorlab: {:>8.0} s  write {:>9.1} MB/s  read {:>9.1} MB/s{waiting}  ",
                    s.t(),
                    w as f64 / seconds / 1e6,
                    r as f64 / seconds / 1e6
                );
            }
            idx += 1;
        }
        last = now;
        last_t = t_now;
        // On the schedule from the start, not from this sample's (late) moment: the samples
        // stay near the intervals' edges instead of drifting past them.
        while next <= now {
            next += interval;
        }
        if done {
            if live {
                eprintln!();
            }
            return Ok(());
        }
    }
}

/// Extends this host's leases; takes over files whose lease ran out (their agent died): files
/// being read wait again, files being written are rewritten here. False while the database is
/// away (tried again at the sampler's next turn).
fn renew_and_reclaim(s: &Shared) -> Result<bool, ChallengeError> {
    // The queue is held while the catalogue is changed and the files queued, so that a writer
    // deciding whether to stop (under the same lock) sees both or neither; files being written
    // are taken only while a writer of this host is there to write them.
    let mut queue = s.rewrite.lock().unwrap_or_else(|e| e.into_inner());
    let writers_here = s.writers_running.load(Ordering::Acquire) > 0;
    let done = s.cat.try_now(|st| {
        st.renew_leases(s.id, &s.host, s.lease())?;
        if s.cat.just_back() {
            return Ok(Vec::new());
        }
        let again = st.reclaim_expired(s.id, &s.host, s.lease(), writers_here)?;
        for t in &again {
            s.cat.hold(t.seq);
        }
        Ok(again)
    });
    let Some(again) = done else {
        return Ok(false);
    };
    let again = again?;
    queue.extend(again.iter().cloned());
    drop(queue);
    if !again.is_empty() {
        s.event(
            "reclaimed",
            format!(
                "{} file(s) whose writer's lease ran out are written again here: {}",
                again.len(),
                again.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    Ok(true)
}

/// This host's fault plan as it is carried out: its steps in time order (each fault, and its
/// undoing after its FOR), the next step, the pools taken away and the tasks started.
struct FaultPlan {
    steps: Vec<(f64, usize, bool)>,
    next: usize,
    taken: HashMap<usize, (Mount, Vec<usize>)>,
    tasks: Vec<(String, Box<dyn Task>)>,
}

impl FaultPlan {
    fn new(faults: &[Fault]) -> FaultPlan {
        let mut steps: Vec<(f64, usize, bool)> = Vec::new();
        for (i, f) in faults.iter().enumerate() {
            steps.push((f.at, i, false));
            if let Some(d) = f.for_seconds {
                steps.push((f.at + d, i, true));
            }
        }
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
        FaultPlan {
            steps,
            next: 0,
            taken: HashMap::new(),
            tasks: Vec::new(),
        }
    }

    /// Carries out every step that is due, each an event on the timeline.
    fn carry_out_due(&mut self, s: &Shared) {
        while self.next < self.steps.len() && s.t() >= self.steps[self.next].0 {
            let (_, i, undo) = self.steps[self.next];
            self.next += 1;
            let (kind, detail) = carry_out(s, &s.faults[i], i, undo, &mut self.taken, &mut self.tasks);
            s.event(kind, detail);
        }
    }

    /// Carries out the plan on time until the challenge is finished, looking at its tasks
    /// every second; then undoes what is still undone (pools mounted again, read-write again)
    /// and stops tasks still running.
    fn run(mut self, s: &Shared, finished: &AtomicBool) {
        let mut polled = Instant::now();
        while !finished.load(Ordering::Relaxed) {
            self.carry_out_due(s);
            if polled.elapsed() >= Duration::from_secs(1) {
                polled = Instant::now();
                self.poll_tasks(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.undo_the_rest(s);
    }

    /// Tasks that ended are said and dropped.
    fn poll_tasks(&mut self, s: &Shared) {
        self.tasks.retain_mut(|(what, task)| match task.poll() {
            Ok(TaskState::Done { completed, detail }) => {
                let how = if completed { "finished" } else { "ended unfinished" };
                s.event("task", format!("{what} {how}: {detail}"));
                false
            }
            Ok(_) => true,
            Err(e) => {
                s.event("task", format!("{what}: {e}"));
                false
            }
        });
    }

    /// The challenge is over: nothing is left taken away, no task left running.
    fn undo_the_rest(mut self, s: &Shared) {
        let mut left: Vec<usize> = self.taken.keys().copied().collect();
        left.sort();
        for i in left {
            let (kind, detail) = carry_out(s, &s.faults[i], i, true, &mut self.taken, &mut self.tasks);
            s.event(kind, format!("{detail} (at the challenge's end)"));
        }
        for (what, mut task) in self.tasks {
            let said = match task.stop() {
                Ok(()) => format!("{what} stopped at the challenge's end"),
                Err(e) => format!("{what} could not be stopped: {e}"),
            };
            s.event("task", said);
        }
    }
}

/// One step of the fault plan: the fault `f` (number `i`), or its undoing. Returns the event.
fn carry_out(
    s: &Shared,
    f: &Fault,
    i: usize,
    undo: bool,
    taken: &mut HashMap<usize, (Mount, Vec<usize>)>,
    tasks: &mut Vec<(String, Box<dyn Task>)>,
) -> (&'static str, String) {
    let pool = s.spec.pools.iter().position(|p| p.name == f.target);
    let count = |held: &AtomicU64| match f.target.parse::<u64>() {
        Ok(n) => held.store(n, Ordering::Relaxed),
        Err(_) => held.store(u64::MAX, Ordering::Relaxed),
    };
    let kind = if undo { "undo" } else { "fault" };
    let detail = match (f.action, undo) {
        (FaultAction::Drain, false) => {
            if let Some(p) = pool {
                s.set_pool_state(p, PoolState::Draining);
            }
            format!("pool {} drained: no new files, readers empty it", f.target)
        }
        (FaultAction::Drain, true) => {
            if let Some(p) = pool {
                if s.pool_state(p) == PoolState::Draining {
                    s.set_pool_state(p, PoolState::Open);
                }
            }
            format!("pool {} takes files again", f.target)
        }
        (FaultAction::StopWriters, false) => {
            count(&s.writers_held);
            format!("writers stopped: {}", f.target)
        }
        (FaultAction::StopWriters, true) => {
            s.writers_held.store(0, Ordering::Relaxed);
            "writers restarted".to_string()
        }
        (FaultAction::StopReaders, false) => {
            count(&s.readers_held);
            format!("readers stopped: {}", f.target)
        }
        (FaultAction::StopReaders, true) => {
            s.readers_held.store(0, Ordering::Relaxed);
            "readers restarted".to_string()
        }
        (FaultAction::Unmount | FaultAction::ReadOnly | FaultAction::Detach, false) => {
            return take_pool_away(s, f, pool, i, taken)
        }
        (FaultAction::Unmount | FaultAction::ReadOnly, true) => return bring_pool_back(s, f, i, taken),
        (FaultAction::Detach | FaultAction::Command | FaultAction::Task, true) => {
            format!("{} {}: nothing to undo", f.action, f.target)
        }
        (FaultAction::Command, false) => faults::command(&f.target),
        (FaultAction::Task, false) => return start_task(f, tasks),
    };
    (kind, detail)
}

/// The pools' names, as the events say them.
fn pool_names(s: &Shared, pools: &[usize]) -> String {
    pools
        .iter()
        .map(|p| s.spec.pools[*p].name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Unmount, read-only or detach: the filesystem of pool `pool` (and every pool on it) taken
/// away once its open files are done (a minute at most); a detached device's waiting files
/// lost, the others kept to bring back.
fn take_pool_away(
    s: &Shared,
    f: &Fault,
    pool: Option<usize>,
    i: usize,
    taken: &mut HashMap<usize, (Mount, Vec<usize>)>,
) -> (&'static str, String) {
    let Some(p) = pool else {
        return ("fault-failed", format!("{} {}: no such pool", f.action, f.target));
    };
    let m = match faults::pool_mount(&s.spec.pools[p], f.action) {
        Ok(m) => m,
        Err(e) => return ("fault-failed", e.to_string()),
    };
    let on = faults::pools_on(&s.spec.pools, &m);
    let quiet = s.quiesce(&on, PoolState::Away);
    let (done, what) = match f.action {
        FaultAction::Unmount => (faults::unmount(&m), format!("{} unmounted (umount -l)", m.mount_point)),
        FaultAction::ReadOnly => (
            faults::remount(&m, true),
            format!("{} remounted read-only", m.mount_point),
        ),
        _ => (
            faults::detach(&m),
            format!("{} unmounted and its device {} detached", m.mount_point, m.source),
        ),
    };
    let pending = if quiet {
        ""
    } else {
        " (files were still open in it after a minute)"
    };
    match done {
        Err(e) => {
            for p in &on {
                s.set_pool_state(*p, PoolState::Open);
            }
            (
                "fault-failed",
                format!("{what}: failed: {e}; pool(s) {} in service again", pool_names(s, &on)),
            )
        }
        Ok(()) if f.action == FaultAction::Detach => {
            let lost = lose_pools(s, &on);
            (
                "fault",
                format!(
                    "pool(s) {} gone: {what}{pending}; {lost} waiting file(s) lost",
                    pool_names(s, &on)
                ),
            )
        }
        Ok(()) => {
            let detail = format!("pool(s) {} away: {what}{pending}", pool_names(s, &on));
            taken.insert(i, (m, on));
            ("fault", detail)
        }
    }
}

/// Pools whose device went: gone, their waiting files recorded as lost; how many.
fn lose_pools(s: &Shared, on: &[usize]) -> u64 {
    let mut lost = 0;
    for p in on {
        s.set_pool_state(*p, PoolState::Gone);
        let why = format!("waiting in pool {} when its device was detached", s.spec.pools[*p].name);
        match s.cat.with(|st, _| st.lose_pool(s.id, *p, &why)) {
            Ok(n) => {
                lost += n;
                less(&s.pools[*p].backlog, n);
            }
            Err(e) => eprintln!(
                "storlab: could not record pool {}'s files as lost: {e}",
                s.spec.pools[*p].name
            ),
        }
    }
    lost
}

/// An unmounted or read-only filesystem mounted read-write again, its pools in service.
fn bring_pool_back(
    s: &Shared,
    f: &Fault,
    i: usize,
    taken: &mut HashMap<usize, (Mount, Vec<usize>)>,
) -> (&'static str, String) {
    let Some((m, on)) = taken.remove(&i) else {
        return ("undo", format!("{} {}: nothing to undo", f.action, f.target));
    };
    let done = if f.action == FaultAction::Unmount {
        faults::mount_again(&m)
    } else {
        faults::remount(&m, false)
    };
    match done {
        Ok(()) => {
            for p in &on {
                s.set_pool_state(*p, PoolState::Open);
            }
            (
                "undo",
                format!(
                    "pool(s) {} back: {} mounted read-write",
                    pool_names(s, &on),
                    m.mount_point
                ),
            )
        }
        Err(e) => (
            "fault-failed",
            format!(
                "pool(s) {} could not come back: {e}; they stay away",
                pool_names(s, &on)
            ),
        ),
    }
}

/// An impact task started (stopped at the challenge's end at the latest).
fn start_task(f: &Fault, tasks: &mut Vec<(String, Box<dyn Task>)>) -> (&'static str, String) {
    match storlab_impact::kinds::parse(&f.target) {
        Ok(mut task) => {
            let what = task.describe();
            match task.start() {
                Ok(()) => {
                    tasks.push((what.clone(), task));
                    ("fault", format!("{what} started"))
                }
                Err(e) => ("fault-failed", format!("{what}: {e}")),
            }
        }
        Err(e) => ("fault-failed", format!("task {}: {e}", f.target)),
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
