//! Verification while a phase runs: each read's blocks checked against storlab's headers (or
//! the given pattern), and fio's verify_backlog — every N blocks written read back and
//! checked before the writing goes on.

use std::collections::VecDeque;

use crate::data;
use crate::plan::{GenerationRange, PhasePlan};
use crate::result::*;

/// fio's verify_backlog in a verified write phase: the blocks written and not yet read back,
/// and those being read back, with nothing else in flight.
pub(crate) struct VerifyBacklog {
    /// Read back every this many blocks written.
    every: u64,
    /// Written, not yet read back: (file, offset, length).
    written: Vec<(u16, u64, u64)>,
    /// Being read back.
    queue: VecDeque<(u16, u64, u64)>,
    /// The reads of the backlog are queued: let them complete before writing on.
    draining: bool,
}

impl VerifyBacklog {
    /// The backlog of a phase that asks for one.
    pub(crate) fn new(plan: &PhasePlan) -> Option<VerifyBacklog> {
        let every = plan
            .settings
            .verify_backlog
            .filter(|_| plan.settings.verify && plan.kind.writes())?;
        Some(VerifyBacklog {
            every,
            written: Vec::new(),
            queue: VecDeque::new(),
            draining: false,
        })
    }

    /// A block was written.
    #[inline]
    pub(crate) fn written(&mut self, file: u16, offset: u64, len: u64) {
        self.written.push((file, offset, len));
    }

    /// Whether the worker may issue: once N blocks are written (or while their read-backs
    /// drain), false until nothing is in flight; then the read-backs are queued.
    #[inline]
    pub(crate) fn start_reading_back(&mut self, in_flight: u32) -> bool {
        if self.draining || (self.queue.is_empty() && self.written.len() as u64 >= self.every) {
            if in_flight > 0 {
                return false;
            }
            self.draining = false;
            self.queue.extend(self.written.drain(..));
        }
        true
    }

    /// The next read-back, if any are queued.
    #[inline]
    pub(crate) fn next_read(&mut self) -> Option<(u16, u64, u64)> {
        let next = self.queue.pop_front()?;
        if self.queue.is_empty() {
            self.draining = true;
        }
        Some(next)
    }

    /// At the pass's end, queues what is left to read back; false when nothing is.
    pub(crate) fn read_back_the_rest(&mut self) -> bool {
        if self.written.is_empty() {
            return false;
        }
        self.queue.extend(self.written.drain(..));
        true
    }
}

/// Checks each 4 KiB block a completed read brought into `buf` from `offset` of `file`,
/// counting bad blocks in `report` (the first ones listed with their file) and blocks an earlier
/// run wrote.
pub(crate) fn check_read(buf: &[u8], offset: u64, file: &str, plan: &PhasePlan, report: &mut VerifyReport) {
    // Before the job's first write (any generation accepted) the files may hold an
    // earlier run's data: an intact block with another seed is that run's, counted
    // apart. After a write in this job, another seed is a lost write: bad.
    let earlier = plan.verify_generations == GenerationRange { min: 0, max: u32::MAX };
    let mut foreign: Vec<u64> = Vec::new();
    report.blocks_checked += data::verify(
        buf,
        offset,
        plan.seed,
        plan.verify_generations,
        plan.settings.pattern.bytes(),
        |offset, reason| {
            if let (true, BadReason::WrongSeed { stored }) = (earlier, &reason) {
                foreign.push(*stored);
                return;
            }
            report.bad_blocks += 1;
            if report.bad.len() < MAX_BAD_LISTED {
                report.bad.push(BadBlock {
                    file: file.to_string(),
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
