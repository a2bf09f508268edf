//! The sampler: each interval's bytes per pool stored with what its devices did (devices.rs), the leases renewed and expired ones
//! reclaimed, the long-term write rates kept, the live line drawn.

use super::*;

/// Stores each interval's bytes per pool, renews the leases, keeps the long-term write rates
/// for least-loaded, and draws the live line.
pub(super) fn sampler(
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
    let mut devices = super::devices::PoolDevices::of(&s.spec.pools);
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
        let device = devices.interval();
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
                device,
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
