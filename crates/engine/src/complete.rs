//! Completion (fio's io_u.c: io_completed): reaping what the back-end finished, and for each
//! I/O its accounting — fill's end of space, errors gone on past, short transfers, latency
//! into the interval's histogram, the read's data verified, a written block into the
//! verify backlog — and flushes.

use std::sync::atomic::Ordering;

use crate::backend::Op;
use crate::data;
use crate::plan::GenerationRange;
use crate::result::*;
use crate::stat::slot_index;
use crate::worker::Worker;
use crate::EngineError;

impl Worker<'_> {
    /// Reaps completions (waiting for at least `min`) and accounts for them; returns how many.
    pub(crate) fn reap(&mut self, min: u32) -> Result<u32, EngineError> {
        let mut out = std::mem::take(&mut self.completions);
        let n = self
            .backend
            .reap(min, &mut out)
            .map_err(|e| self.io_error(Op::Read, 0, e))?;
        let end = self.now();
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
        self.backend.flush().map_err(|e| EngineError::Flush {
            path: self.file_label(),
            source: e,
        })?;
        self.flush_ns += self.now() - t;
        self.writes_since_flush = 0;
        Ok(())
    }

    #[inline]
    pub(crate) fn complete(&mut self, slot: u32, result: i32, end: u64) -> Result<(), EngineError> {
        let mut io = self.inflight[slot as usize];
        let op = if io.write { Op::Write } else { Op::Read };
        // fio's fill_device: a write ends at ENOSPC or EDQUOT (or a short write), a read at
        // the end of the file; the part moved counts.
        let short = result >= 0 && (result as u32) < io.len;
        let full = io.write && (result == -libc::ENOSPC || result == -libc::EDQUOT);
        if self.plan.settings.fill && (short || full) {
            self.full = true;
            if result <= 0 {
                self.free.push(slot);
                return Ok(());
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
                self.free.push(slot);
                return Ok(());
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
        self.tick(end)?;
        let d = slot_index(op);
        let lat = end.saturating_sub(io.start_ns).max(1);
        if let Some(l) = self.lat.as_mut() {
            l.ios += 1;
            if lat > l.target_ns {
                l.failed += 1;
            }
        }
        self.ihist[d].saturating_record(lat);
        self.interval.lat_ns[d] += lat;
        self.interval.bytes[d] += io.len as u64;
        self.interval.ops[d] += 1;
        self.check_rate_min(end)?;
        if io.write {
            self.writes_since_flush += 1;
            if self.backlog_every().is_some() {
                self.backlog.push((io.file, io.offset, io.len as u64));
            }
        } else if self.plan.verifies() {
            // Only the whole 4 KiB blocks of a read cut short by the file's end (fill).
            let whole = if self.full {
                io.len as usize / crate::plan::VERIFY_BLOCK as usize * crate::plan::VERIFY_BLOCK as usize
            } else {
                io.len as usize
            };
            // SAFETY: the I/O on this slot has completed; nothing else uses the buffer.
            let buf = unsafe { self.pool.slice_mut(slot as usize, whole) };
            let file = &self.file_names[io.file as usize];
            let report = &mut self.verify;
            // Before the job's first write (any generation accepted) the files may hold an
            // earlier run's data: an intact block with another seed is that run's, counted
            // apart. After a write in this job, another seed is a lost write: bad.
            let earlier = self.plan.verify_generations == GenerationRange { min: 0, max: u32::MAX };
            let mut foreign: Vec<u64> = Vec::new();
            report.blocks_checked += data::verify(
                buf,
                io.offset,
                self.plan.seed,
                self.plan.verify_generations,
                self.plan.settings.pattern.bytes(),
                |offset, reason| {
                    if let (true, BadReason::WrongSeed { stored }) = (earlier, &reason) {
                        foreign.push(*stored);
                        return;
                    }
                    report.bad_blocks += 1;
                    if report.bad.len() < MAX_BAD_LISTED {
                        report.bad.push(BadBlock {
                            file: file.clone(),
                            offset,
                            reason,
                        });
                    }
                },
            );
            for seed in foreign {
                report.add_foreign(seed, 1);
            }
        }
        self.free.push(slot);
        if self.first_done_snapshot.is_none() && self.shared.first_done_ns.load(Ordering::Relaxed) != 0 {
            let mut snap = self.totals;
            if self.measuring {
                snap.add(&self.interval);
            }
            self.first_done_snapshot = Some(snap);
        }
        Ok(())
    }
}
