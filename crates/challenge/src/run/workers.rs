//! The writers and readers: each takes the next file from the catalogue, writes it stamped
//! (or reads and verifies it), and tells the catalogue; a pool that fills is closed and opened
//! again when a reader frees space.

use super::*;

/// Takes `n` from a backlog count, never below zero: in shared mode the count is read from the
/// catalogue now and then, and a file another host's reader took may be released here too.
pub(super) fn less(count: &AtomicU64, n: u64) {
    let _ = count.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| Some(b.saturating_sub(n)));
}

fn idle(counter: &AtomicU64, d: Duration) {
    std::thread::sleep(d);
    counter.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
}

/// One writer: takes the next file, a pool for it, writes it, tells the catalogue.
/// Returns true when it counted itself out of the running writers (see below), false when
/// the caller must.
pub(super) fn writer(s: &Shared, me: u64) -> Result<bool, ChallengeError> {
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
pub(super) fn reader(s: &Shared, me: u64) -> Result<(), ChallengeError> {
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
