//! Completion (fio's io_u.c: io_completed): reaping what the back-end finished, and for each
//! I/O its accounting — fill's end of space, errors gone on past, short transfers, latency
//! into the interval's histogram, a written block into the verify backlog, a read handed to
//! verification (verify.rs) — and flushes.

use std::sync::atomic::Ordering;

use crate::backend::Op;
use crate::plan::VERIFY_BLOCK;
use crate::stat::{new_histogram, slot_index, split_at_submission};
use crate::worker::{InFlight, Worker};
use crate::EngineError;

impl Worker<'_> {
    /// Reaps completions (waiting for at least `min`) and accounts for them; returns how many.
    pub(crate) fn reap(&mut self, min: u32) -> Result<u32, EngineError> {
        let mut out = std::mem::take(&mut self.completions);
        // At most iodepth_batch_complete at once (fio's iodepth_batch_complete_max): the rest
        // stay with the kernel for the next take, after the queue is refilled.
        let most = self
            .plan
            .settings
            .iodepth_batch_complete
            .map_or(out.len(), |m| (m as usize).clamp(min.max(1) as usize, out.len()));
        let n = self
            .backend
            .reap(min, &mut out[..most])
            .map_err(|e| self.io_error(Op::Read, 0, e))?;
        let end = self.now();
        if self.measuring {
            self.depths.completed(n as u32);
        }
        let mut r = Ok(());
        for c in &out[..n] {
            if let Err(e) = self.complete(c.slot, c.result, end) {
                r = Err(e);
                break;
            }
        }
        self.completions = out;
        r.map(|_| n as u32)
    }

    /// Waits for everything in flight (before a flush); returns how many completed.
    pub(crate) fn drain(&mut self, mut in_flight: u32, to_commit: &mut u32) -> Result<u32, EngineError> {
        if *to_commit > 0 {
            self.backend.commit().map_err(|e| self.io_error(Op::Write, 0, e))?;
            self.committed(*to_commit, in_flight);
            *to_commit = 0;
        }
        let before = in_flight;
        while in_flight > 0 {
            in_flight -= self.reap(1)?;
        }
        Ok(before)
    }

    pub(crate) fn flush(&mut self) -> Result<(), EngineError> {
        let t = self.now();
        self.backend
            .flush(self.plan.settings.sync_call)
            .map_err(|e| EngineError::Flush {
                path: self.file_label(),
                source: e,
            })?;
        let took = self.now() - t;
        self.flush_ns += took;
        if self.measuring {
            let _ = self.shist.get_or_insert_with(new_histogram).record(took.max(1));
            self.exact.record_flush(took.max(1));
        }
        self.writes_since_flush = 0;
        // The next synchronous I/O starts now, not where the last one ended: the flush is
        // timed apart (fio's sync latency), never counted in a write's latency.
        self.last_end = None;
        Ok(())
    }

    /// Accounts for one I/O that ended with `result` (bytes moved, or a negative errno) at
    /// `end`: settled (fill, errors gone on past, short transfers), timed into the interval,
    /// held to rate_min, then a write counted for the flushes and the verify backlog, a read
    /// verified; its slot freed.
    #[inline]
    pub(crate) fn complete(&mut self, slot: u32, result: i32, end: u64) -> Result<(), EngineError> {
        let mut io = self.inflight[slot as usize];
        if !self.settle(&mut io, result)? {
            self.free.push(slot);
            return Ok(());
        }
        self.tick(end)?;
        self.account(&io, end);
        self.check_rate_min(end)?;
        if io.write {
            self.writes_since_flush += 1;
            if let Some(b) = self.backlog.as_mut() {
                b.written(io.file, io.offset, io.len as u64);
            }
        } else if self.plan.verifies() {
            self.verify_read(slot, &io)?;
        }
        self.free.push(slot);
        self.snapshot_first_done();
        Ok(())
    }

    /// What an I/O's result means: true when it moved data that counts (its length cut to
    /// what fill_device let it move), false when it is done with nothing to count (fill's
    /// end of space, an error gone on past), an error when the phase must end.
    #[inline]
    fn settle(&mut self, io: &mut InFlight, result: i32) -> Result<bool, EngineError> {
        let op = if io.write { Op::Write } else { Op::Read };
        // fio's fill_device: a write ends at ENOSPC or EDQUOT (or a short write), a read at
        // the end of the file; the part moved counts.
        let short = result >= 0 && (result as u32) < io.len;
        let full = io.write && (result == -libc::ENOSPC || result == -libc::EDQUOT);
        if self.plan.settings.fill && (short || full) {
            self.full = true;
            if result <= 0 {
                return Ok(false);
            }
            io.len = result as u32;
        }
        if result < 0 {
            let e = std::io::Error::from_raw_os_error(-result);
            if self.plan.settings.continue_on_error.covers(io.write)
                && self.plan.settings.continue_errnos.contains(-result)
            {
                // fio's continue_on_error: counted, the first kept, and on to the next I/O.
                if self.errors.count == 0 {
                    self.errors.first_errno = -result;
                    self.errors.first = self.io_error_in(io.file as usize, op, io.offset, e).to_string();
                }
                self.errors.count += 1;
                return Ok(false);
            }
            return Err(self.io_error_in(io.file as usize, op, io.offset, e));
        }
        if result as u32 != io.len && !self.full {
            return Err(EngineError::ShortIo {
                path: self.file_names[io.file as usize].clone(),
                write: io.write,
                offset: io.offset,
                wanted: io.len,
                got: result as u32,
            });
        }
        Ok(true)
    }

    /// The I/O's latency (from its start, the scheduled time under a rate) and bytes into
    /// the interval, and into the latency-target search's window; under a rate its latency
    /// from its issue too (fio's), and its parts from there.
    #[inline]
    fn account(&mut self, io: &InFlight, end: u64) {
        let d = slot_index(if io.write { Op::Write } else { Op::Read });
        let lat = end.saturating_sub(io.start_ns).max(1);
        let from_issue = end.saturating_sub(io.issued_ns).max(1);
        if self.rate.is_some() && self.measuring {
            self.issued_hist
                .get_or_insert_with(Default::default)
                .record(d, from_issue);
            self.exact.record_issued(d, from_issue);
        }
        if let Some(l) = self.lat.as_mut() {
            l.ios += 1;
            if lat > l.target_ns {
                l.failed += 1;
            }
        }
        self.ihist[d].saturating_record(lat);
        let (mut slat, mut clat) = (0, lat);
        let split = (io.submit_ns != 0).then(|| split_at_submission(io.issued_ns, io.submit_ns, end));
        if let Some(parts) = split {
            if self.measuring {
                self.sc_hist.record(d, parts);
            }
            self.interval.add_split(d, parts);
            (slat, clat) = parts;
        }
        if self.measuring {
            self.exact.record(d, lat, split);
        }
        if let Some(h) = self.interval_clat.as_mut() {
            h.record(d, clat, end, self.ramp_end);
        }
        if let Some(records) = self.io_records.as_mut().filter(|_| self.measuring) {
            records.push(&storlab_model::iolog::IoRecord {
                end_ns: end,
                // fio's lat: from the issue (the same as `lat` without a rate).
                lat_ns: from_issue,
                slat_ns: slat,
                offset: io.offset,
                len: io.len,
                write: io.write,
            });
        }
        self.interval.lat_ns[d] += lat;
        self.interval.bytes[d] += io.len as u64;
        self.interval.ops[d] += 1;
    }

    /// Once a worker of the phase is done, what this one had moved by then (first-done).
    #[inline]
    fn snapshot_first_done(&mut self) {
        if self.first_done_snapshot.is_none() && self.shared.first_done_ns.load(Ordering::Relaxed) != 0 {
            let mut snap = self.totals;
            if self.measuring {
                snap.add(&self.interval);
            }
            self.first_done_snapshot = Some(snap);
        }
    }
}

impl Worker<'_> {
    /// fio's rate_min at a completion (pacing.rs's [`crate::pacing::RateMin`]): under it over a
    /// span of an interval or more, the phase fails naming the file and the rates.
    pub(crate) fn check_rate_min(&mut self, now: u64) -> Result<(), EngineError> {
        let Some(r) = self.rate_min.as_mut() else {
            return Ok(());
        };
        let moved = (
            self.totals.bytes() + self.interval.bytes(),
            self.totals.ops() + self.interval.ops(),
        );
        r.check(now, self.measuring, moved).map_err(|u| EngineError::RateMin {
            path: self.file_label(),
            at: now as f64 / 1e9,
            got: format!("{:.0} {}", u.got, u.unit),
            want: format!("{:.0} {}", u.want, u.unit),
        })
    }
}

impl Worker<'_> {
    /// Checks the whole 4 KiB blocks a completed read brought in (verify.rs's check); where
    /// the phase stops at a bad block, the first ends it.
    pub(crate) fn verify_read(&mut self, slot: u32, io: &InFlight) -> Result<(), EngineError> {
        let (bad_before, listed_before) = (self.verify.bad_blocks, self.verify.bad.len());
        // Only the whole 4 KiB blocks of a read cut short by the file's end (fill).
        let whole = if self.full {
            io.len as usize / VERIFY_BLOCK as usize * VERIFY_BLOCK as usize
        } else {
            io.len as usize
        };
        // SAFETY: the I/O on this slot has completed; nothing else uses the buffer.
        let buf = unsafe { self.pool.slice_mut(slot as usize, whole) };
        crate::verify::check_read(
            buf,
            io.offset,
            &self.file_names[io.file as usize],
            self.plan,
            &mut self.verify,
        );
        if self.verify.bad_blocks == bad_before || !self.plan.settings.stop_at_bad_block {
            return Ok(());
        }
        // The read's first bad block (listed unless the list was full).
        let (offset, reason) = self
            .verify
            .bad
            .get(listed_before)
            .map_or((io.offset, "a bad block".to_string()), |b| {
                (b.offset, b.reason.to_string())
            });
        Err(EngineError::BadBlock {
            path: self.file_names[io.file as usize].clone(),
            offset,
            len: VERIFY_BLOCK,
            reason,
            source: std::io::Error::from_raw_os_error(libc::EILSEQ),
        })
    }
}
