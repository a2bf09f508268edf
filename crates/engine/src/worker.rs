//! The worker loop (fio's io_u.c and backend.c: do_io): one thread's I/O for one phase — the
//! next I/O drawn from the access pattern, paced, its buffer filled, queued on the back-end,
//! completions reaped, flushes issued — until its pass, its time or a stop ends it.
//!
//! The hot path: per I/O it draws the next offset, reads the clock, queues the I/O, records
//! its latency in the worker's own interval histogram and bumps the worker's own counters.
//! Nothing there allocates, locks or sends. Once per interval the worker sends its interval
//! histograms and counters to the collector (collect.rs), which merges the workers' intervals
//! into one sample and drops the histograms, so memory does not grow with run time.
//!
//! Each feature keeps its own state in its own type, in its own file: the rate and think time
//! and flows (pacing.rs), the verify backlog (verify.rs), the latency-target search
//! (latency_target.rs), the dedupe generator (data.rs); the loop below calls each as a step.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;

use hdrhistogram::Histogram;
use rand::{rngs::SmallRng, Rng, SeedableRng};

use crate::access::FileSet;
use crate::backend::{Backend, Completion, IoUnit, Op, Queued};
use crate::clock::{now_ns, since};
use crate::collect::{mean_ns, Msg};
use crate::data::{self, BufferPool};
use crate::exact::Exact;
use crate::filesetup::file_set;
use crate::latency_target::LatencySeek;
use crate::merge::WorkerOutcome;
use crate::pacing::{wait_until, FlowGate, FlowShare, RateMin, RatePacer, Think};
use crate::plan::{DataPattern, FsyncPolicy, PhasePlan, WorkerFile};
use crate::result::*;
use crate::stat::{
    encode_histogram, encode_if_any, new_histogram, recorded, spent_histogram, thread_usage, Counters, IntervalClat,
    PerDirection, SlatClat, Usage,
};
use crate::verify::VerifyBacklog;
use crate::zones::WorkerZones;
use crate::EngineError;

/// Shared between the workers of one phase; written rarely (once per phase), read per I/O.
/// `abort` is shared by every phase of a group: one failing worker stops them all.
pub(crate) struct Shared<'g> {
    pub(crate) epoch: OnceLock<u64>,
    pub(crate) first_done_ns: AtomicU64,
    pub(crate) abort: &'g AtomicBool,
    /// fio's exitall: a phase of the group is done, so the group's others end too (the group's
    /// own flag: the caller's control goes on to the next group unfinished).
    pub(crate) exit_all: &'g AtomicBool,
    /// This phase is done (steady state reached): its workers stop issuing, the others go on.
    pub(crate) done: AtomicBool,
}

/// Where one I/O in flight came from.
#[derive(Clone, Copy, Default)]
pub(crate) struct InFlight {
    /// When it started: when it was due under a rate (storlab's open-loop latency counts from
    /// there), else when it was issued.
    pub(crate) start_ns: u64,
    /// When it was issued (fio's start: its lat and slat count from here).
    pub(crate) issued_ns: u64,
    /// When an asynchronous back-end handed it to the kernel (0 for a synchronous one, whose
    /// call submits and completes at once): fio's slat ends and clat begins there.
    pub(crate) submit_ns: u64,
    pub(crate) offset: u64,
    pub(crate) len: u32,
    pub(crate) write: bool,
    /// Which of the worker's files.
    pub(crate) file: u16,
}

/// The next I/O to issue: which of the worker's files, read or write, where and how long.
#[derive(Clone, Copy)]
pub(crate) struct NextIo {
    pub(crate) file: usize,
    pub(crate) op: Op,
    pub(crate) offset: u64,
    pub(crate) len: u64,
}

/// One worker thread's state for one phase: its files and back-end, its access pattern, its
/// interval and totals, its slots in flight and the state of each feature it runs with.
pub(crate) struct Worker<'a> {
    pub(crate) plan: &'a PhasePlan,
    pub(crate) target: u16,
    /// Its files' names (one unless nrfiles), for results and messages.
    pub(crate) file_names: Vec<String>,
    pub(crate) _files: Vec<File>,
    pub(crate) pool: BufferPool,
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) access: FileSet,
    pub(crate) rng: SmallRng,
    pub(crate) shared: &'a Shared<'a>,
    pub(crate) tx: &'a mpsc::Sender<Msg>,
    pub(crate) epoch: u64,
    // Per-interval state.
    pub(crate) interval: Counters,
    pub(crate) ihist: Box<[Histogram<u64>; 2]>,
    pub(crate) interval_index: u32,
    pub(crate) interval_start: u64,
    pub(crate) next_boundary: u64,
    pub(crate) last_sent: Option<u32>,
    /// The worker's own samples, kept when the plan asks (`worker_samples`).
    pub(crate) own_samples: Option<Vec<WorkerSample>>,
    /// Its own completion latency histograms per interval, kept when the plan asks
    /// (`interval_histograms`).
    pub(crate) interval_clat: Option<Box<IntervalClat>>,
    /// Every I/O of the measured part, kept when the plan asks (`io_log`).
    pub(crate) io_records: Option<storlab_model::iolog::IoRecorder>,
    // Totals of the measured (post-ramp) part.
    pub(crate) totals: Counters,
    pub(crate) thist: Box<[Histogram<u64>; 2]>,
    pub(crate) measuring: bool,
    pub(crate) first_done_snapshot: Option<Counters>,
    // Slots.
    pub(crate) inflight: Vec<InFlight>,
    pub(crate) free: Vec<u32>,
    pub(crate) completions: Vec<Completion>,
    pub(crate) writes_since_flush: u32,
    pub(crate) flush_ns: u64,
    /// The measured part's flushes, each timed (fio's sync latency).
    pub(crate) shist: Option<Histogram<u64>>,
    /// The measured part's queue depths and calls (fio's IO depths, submit, complete).
    pub(crate) depths: IoDepths,
    /// The slots queued on an asynchronous back-end and not yet committed (stamped with their
    /// submission time when they are).
    pub(crate) uncommitted: Vec<u32>,
    /// The measured part's submission and completion latencies of an asynchronous back-end,
    /// per direction (fio's slat and clat; `thist` is the whole, fio's lat).
    pub(crate) sc_hist: Box<SlatClat>,
    /// The measured part's latencies' exact figures (min, max, mean, S).
    pub(crate) exact: Box<Exact>,
    /// Under a rate, the measured part's latencies from each I/O's issue (fio's lat).
    pub(crate) issued_hist: Option<PerDirection>,
    pub(crate) verify: VerifyReport,
    /// When the last synchronous I/O completed (the next one's start).
    pub(crate) last_end: Option<u64>,
    /// A target rate: when the next I/O is due.
    pub(crate) rate: Option<RatePacer>,
    /// fio's thinktime.
    pub(crate) think: Option<Think>,
    /// fio's flow this worker weighs against, its weight and what it issued.
    pub(crate) flow: Option<FlowShare<'a>>,
    /// fill: the filesystem is full (a write) or the file ended (a read); issue no more.
    pub(crate) full: bool,
    /// fio's dedupe_percentage: the blocks written repeat others.
    pub(crate) dedupe: Option<data::Dedupe>,
    /// Failed I/Os gone on past (continue_on_error).
    pub(crate) errors: ErrorsReport,
    /// fio's rate_min, held at each completion.
    pub(crate) rate_min: Option<RateMin>,
    /// fio's latency_target: the search for the depth that meets it.
    pub(crate) lat: Option<LatencySeek>,
    /// Where the measured part begins: the ramp's end, or where the latency search settles
    /// (unknown, u64::MAX, until it does).
    pub(crate) ramp_end: u64,
    /// fio's verify_backlog: blocks written and not yet read back, and those being read back.
    pub(crate) backlog: Option<VerifyBacklog>,
    /// fio's zonemode=zbd: the emulated zones of its files.
    pub(crate) zones: Option<WorkerZones>,
}

/// The issuing loop's own state, from one step to the next.
#[derive(Default)]
struct Issuing {
    in_flight: u32,
    /// Queued on the back-end and not yet handed to the kernel.
    to_commit: u32,
    issued: u64,
    /// An I/O drawn but not yet due (a rate's schedule).
    pending: Option<NextIo>,
    /// Nothing more is issued: what is in flight is reaped and the loop ends.
    done: bool,
    /// The access pattern has no more I/O (not a deadline, a stop or exitall).
    exhausted: bool,
    /// Ctrl-C ended it.
    interrupted: bool,
}

impl<'a> Worker<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        plan: &'a PhasePlan,
        index: usize,
        wf: &WorkerFile,
        files: Vec<File>,
        pool: BufferPool,
        backend: Box<dyn Backend>,
        shared: &'a Shared<'a>,
        tx: &'a mpsc::Sender<Msg>,
    ) -> Worker<'a> {
        let depth = plan.settings.iodepth.max(1) as usize;
        let worker_seed = plan.seed.wrapping_add(index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Worker {
            plan,
            target: wf.target,
            file_names: wf.regions().map(|r| r.path.display().to_string()).collect(),
            _files: files,
            pool,
            backend,
            access: file_set(plan, wf, worker_seed),
            rng: SmallRng::seed_from_u64(worker_seed),
            shared,
            tx,
            epoch: 0,
            interval: Counters::default(),
            ihist: Box::new([new_histogram(), new_histogram()]),
            interval_index: 0,
            interval_start: 0,
            next_boundary: 0,
            last_sent: None,
            own_samples: plan.settings.worker_samples.then(Vec::new),
            interval_clat: plan
                .settings
                .interval_histograms
                .then(|| Box::new(IntervalClat::new(plan.settings.histogram_interval.map(|d| d.0)))),
            io_records: plan.settings.io_log.then(Default::default),
            totals: Counters::default(),
            thist: Box::new([new_histogram(), new_histogram()]),
            measuring: plan.settings.ramp.0 == 0
                && (plan.settings.latency_target.is_none() || plan.settings.latency_run),
            first_done_snapshot: None,
            inflight: vec![InFlight::default(); depth],
            free: (0..depth as u32).rev().collect(),
            completions: vec![Completion::default(); depth],
            writes_since_flush: 0,
            flush_ns: 0,
            shist: None,
            depths: IoDepths::default(),
            uncommitted: Vec::with_capacity(depth),
            sc_hist: Box::default(),
            exact: Box::default(),
            issued_hist: None,
            verify: VerifyReport::default(),
            last_end: None,
            rate: RatePacer::new(plan),
            think: Think::new(plan),
            flow: None,
            full: false,
            errors: ErrorsReport::default(),
            rate_min: RateMin::new(plan),
            lat: LatencySeek::new(plan),
            // The search is a ramp, unless latency_run measures it all (as fio reports it).
            ramp_end: if plan.settings.latency_target.is_some() && !plan.settings.latency_run {
                u64::MAX
            } else {
                plan.settings.ramp.0
            },
            dedupe: data::Dedupe::for_worker(plan, index, wf.total_len()),
            backlog: VerifyBacklog::new(plan),
            zones: None,
        }
    }

    pub(crate) fn now(&self) -> u64 {
        since(self.epoch)
    }

    /// Runs the worker's part of the phase: waits for its start, issues and reaps until done,
    /// then finishes (the flush at the end, the last interval) and reports.
    pub(crate) fn run(&mut self, stop: &AtomicBool, finish: &AtomicBool) -> Result<WorkerOutcome, EngineError> {
        self.epoch = *self.shared.epoch.get().expect("epoch set before the start barrier");
        self.wait_for_start(stop, finish);
        let cpu_start = thread_usage();
        self.next_boundary = self.boundary_after(0);
        let deadline = self.deadline();
        let mut st = Issuing::default();
        loop {
            self.issue_while_room(&mut st, stop, finish, deadline)?;
            self.commit(&mut st.to_commit, st.in_flight)?;
            if self.lat.is_some() && !st.done && self.latency_check() {
                // Settled and measured: this worker is done (fio ends the job there).
                st.done = true;
            }
            if st.in_flight == 0 {
                if st.done {
                    // The pass is done: what is left of the backlog is read back too.
                    if st.exhausted && self.read_back_the_rest() {
                        st.done = false;
                        continue;
                    }
                    break;
                }
                continue;
            }
            st.in_flight -= self.reap(1)?;
        }
        self.finish(st.interrupted, cpu_start)
    }

    /// A phase that starts later than the others it runs with (fio's startdelay) waits in
    /// slices, so that Ctrl-C, a failing worker or exitall end the wait.
    fn wait_for_start(&self, stop: &AtomicBool, finish: &AtomicBool) {
        while now_ns() < self.epoch {
            if stop.load(Ordering::Relaxed)
                || self.shared.abort.load(Ordering::Relaxed)
                || finish.load(Ordering::Relaxed)
                || self.shared.exit_all.load(Ordering::Relaxed)
            {
                break;
            }
            let left = self.epoch.saturating_sub(now_ns());
            std::thread::sleep(std::time::Duration::from_nanos(left.min(50_000_000)));
        }
    }

    /// When issuing stops: a runtime makes the phase time-based; a timeout only cuts its
    /// passes short.
    fn deadline(&self) -> Option<u64> {
        match (self.plan.settings.runtime, self.plan.settings.timeout) {
            (Some(r), _) => Some(self.plan.settings.ramp.0 + r.0),
            (None, Some(t)) if t.0 > 0 => Some(t.0),
            _ => None,
        }
    }

    /// The depth in force: the job's, or the one fio's latency_target search is trying.
    #[inline]
    fn depth(&self) -> u32 {
        let depth = self.plan.settings.iodepth.max(1);
        self.lat.as_ref().map_or(depth, |l| l.qd)
    }

    /// Issues I/Os while fewer than the depth are in flight, step by step: whether it may go
    /// on, its flow's share, the verify backlog, the next I/O, the deadline, the rate, the
    /// I/O itself, think time and the flushes every N writes. Returns to reap when a step
    /// needs what is in flight completed first.
    #[inline]
    fn issue_while_room(
        &mut self,
        st: &mut Issuing,
        stop: &AtomicBool,
        finish: &AtomicBool,
        deadline: Option<u64>,
    ) -> Result<(), EngineError> {
        while st.in_flight < self.depth() && !st.done {
            if self.must_stop(st, stop, finish) {
                st.done = true;
                break;
            }
            match self.flow_gate(st.in_flight) {
                FlowGate::Go => {}
                FlowGate::Reap => break,
                FlowGate::Again => continue,
            }
            if self.backlog_holds_writes(st.in_flight) {
                break;
            }
            let Some(io) = st.pending.take().or_else(|| self.next_io()) else {
                st.done = true;
                st.exhausted = true;
                break;
            };
            // fio's fsync=N: the flush comes before the I/O after the Nth write, so that none
            // follows a job's last write (end_fsync is that one).
            self.flush_every_n(st)?;
            // After a synchronous completion its end time is this I/O's start: one clock
            // read per I/O instead of two (the gap between them is the engine's own
            // bookkeeping, a few tens of nanoseconds, which then counts as latency).
            let now = match self.last_end.take() {
                Some(t) if self.rate.is_none() => t,
                _ => self.now(),
            };
            if deadline.is_some_and(|d| now >= d) {
                st.done = true;
                break;
            }
            let Some((start, issued)) = self.pace(io, now, st)? else {
                continue;
            };
            if !self.issue(io, start, issued, st)? {
                continue;
            }
            self.think_after(st.issued);
        }
        Ok(())
    }

    /// Whether issuing must end now: Ctrl-C (interrupted), a failed worker, the caller's
    /// finish, exitall, steady state reached, fill's end of space, or number_ios.
    #[inline]
    fn must_stop(&self, st: &mut Issuing, stop: &AtomicBool, finish: &AtomicBool) -> bool {
        if stop.load(Ordering::Relaxed) {
            st.interrupted = true;
            return true;
        }
        self.shared.abort.load(Ordering::Relaxed)
            || finish.load(Ordering::Relaxed)
            || self.shared.exit_all.load(Ordering::Relaxed)
            || self.shared.done.load(Ordering::Relaxed)
            || self.full
            || self.plan.settings.ios.is_some_and(|n| st.issued >= n)
    }

    /// fio's flow: whether this worker is within its share of its flow's I/Os.
    #[inline]
    fn flow_gate(&mut self, in_flight: u32) -> FlowGate {
        let Some(flow) = self.flow.as_mut() else {
            return FlowGate::Go;
        };
        let gate = flow.gate(in_flight, self.plan.settings.flow_sleep.0);
        if gate == FlowGate::Again {
            self.last_end = None;
        }
        gate
    }

    /// fio's verify_backlog: true while the written blocks' read-backs must wait for what is
    /// in flight (nothing else may be then).
    #[inline]
    fn backlog_holds_writes(&mut self, in_flight: u32) -> bool {
        self.backlog.as_mut().is_some_and(|b| !b.start_reading_back(in_flight))
    }

    /// The next I/O: a read-back of the verify backlog, else the access pattern's next.
    #[inline]
    fn next_io(&mut self) -> Option<NextIo> {
        if let Some((file, offset, len)) = self.backlog.as_mut().and_then(VerifyBacklog::next_read) {
            return Some(NextIo {
                file: file as usize,
                op: Op::Read,
                offset,
                len,
            });
        }
        let io = self
            .access
            .next(&mut self.rng)
            .map(|(file, op, offset, len)| NextIo { file, op, offset, len })?;
        match self.zones.as_mut() {
            Some(z) => z.adjust(io),
            None => Some(io),
        }
    }

    /// Under a target rate, when the I/O starts and when it is issued: its scheduled time
    /// (waited for when nothing is in flight) and now, or None when it is not due yet and
    /// completions are taken in meanwhile (without blocking, so that they are timed when they
    /// happen). Without a rate, `now` for both.
    #[inline]
    fn pace(&mut self, io: NextIo, mut now: u64, st: &mut Issuing) -> Result<Option<(u64, u64)>, EngineError> {
        let Some(due) = self.rate.as_ref().map(RatePacer::due) else {
            return Ok(Some((now, now)));
        };
        if now < due {
            if st.in_flight > 0 {
                st.pending = Some(io);
                st.in_flight -= self.reap(0)?;
                if due - now > 300_000 {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
                return Ok(None);
            }
            wait_until(self.epoch, due);
            now = self.now();
        }
        let late = match self.rate.as_mut() {
            Some(r) => r.advance(io.len, now, &mut self.rng),
            None => false,
        };
        if late {
            self.interval.late += 1;
        }
        Ok(Some((due, now.max(due))))
    }

    /// Queues one I/O started at `start` and issued at `issued` (see [`InFlight`]) on the
    /// back-end: its buffer filled when it writes, its own priority drawn (cmdprio). Returns
    /// false when a synchronous back-end's I/O failed and was gone on past (the rest of this
    /// round's steps are skipped).
    #[inline]
    fn issue(&mut self, io: NextIo, start: u64, issued: u64, st: &mut Issuing) -> Result<bool, EngineError> {
        let slot = self
            .free
            .pop()
            .expect("a free slot when fewer than depth are in flight");
        let write = io.op == Op::Write;
        if write {
            self.fill_buffer(slot, io.offset, io.len);
        }
        self.inflight[slot as usize] = InFlight {
            start_ns: start,
            issued_ns: issued,
            submit_ns: 0,
            offset: io.offset,
            len: io.len as u32,
            write,
            file: io.file as u16,
        };
        let ioprio = self.request_priority(write);
        let unit = IoUnit {
            op: io.op,
            file: io.file as u16,
            offset: io.offset,
            len: io.len as u32,
            slot,
            ioprio,
        };
        let queued = match self.backend.queue(unit, &self.pool) {
            // A synchronous back-end's failed I/O goes where an asynchronous one's completion
            // goes, to `complete`: it ends the phase there, or (fill, continue_on_error)
            // counts it and goes on.
            Err(e) if e.raw_os_error().is_some() => {
                let end = self.now();
                self.complete(slot, -e.raw_os_error().unwrap_or(libc::EIO), end)?;
                st.issued += 1;
                return Ok(false);
            }
            r => r.map_err(|e| self.io_error_in(io.file, io.op, io.offset, e))?,
        };
        match queued {
            Queued::Completed(n) => {
                let end = self.now();
                self.complete(slot, n as i32, end)?;
                self.last_end = Some(end);
            }
            Queued::InFlight => {
                self.uncommitted.push(slot);
                st.in_flight += 1;
                st.to_commit += 1;
                if st.to_commit >= self.plan.submit_batch {
                    self.commit(&mut st.to_commit, st.in_flight)?;
                }
            }
        }
        st.issued += 1;
        Ok(true)
    }

    /// Fills a write's buffer: storlab's verification headers, a dedupe generator's blocks,
    /// or the pattern made unique per block.
    #[inline]
    fn fill_buffer(&mut self, slot: u32, offset: u64, len: u64) {
        // SAFETY: the slot is free: no I/O uses its buffer.
        let buf = unsafe { self.pool.slice_mut(slot as usize, len as usize) };
        if self.plan.write_headers {
            data::stamp(buf, offset, self.plan.seed, self.plan.generation);
        } else if let Some(d) = self.dedupe.as_mut() {
            d.fill(buf, &self.plan.settings.pattern, &mut self.rng);
        } else if let p @ DataPattern::Compressible(_) = &self.plan.settings.pattern {
            // Fresh random bytes in every write, as fio refills a buffer_compress_percentage
            // buffer: the same buffer written again would make the file compress far beyond
            // its share of zeros under a long-window compressor (or deduplicate).
            data::fill_pattern(buf, p, self.plan.settings.compress_chunk, &mut self.rng);
        } else if self.plan.settings.pattern.unique_per_block() {
            data::scramble(buf, offset, self.plan.seed);
        }
    }

    /// fio's cmdprio_percentage: this request's own priority, or 0 for the thread's.
    #[inline]
    fn request_priority(&mut self, write: bool) -> u16 {
        let Some(c) = self.plan.settings.cmdprio else { return 0 };
        let pct = if write { c.write_percent } else { c.read_percent };
        if pct > 0 && self.rng.gen_range(0..100u8) < pct {
            c.priority.value()
        } else {
            0
        }
    }

    /// Hands what was queued to the kernel.
    #[inline]
    fn commit(&mut self, to_commit: &mut u32, in_flight: u32) -> Result<(), EngineError> {
        if *to_commit > 0 {
            self.backend.commit().map_err(|e| self.io_error(Op::Read, 0, e))?;
            self.committed(*to_commit, in_flight);
            *to_commit = 0;
        }
        Ok(())
    }

    /// After a commit of `n` I/Os (`in_flight` then in flight): each stamped with the time it
    /// went to the kernel, and the call counted.
    #[inline]
    pub(crate) fn committed(&mut self, n: u32, in_flight: u32) {
        let t = self.now();
        for s in self.uncommitted.drain(..) {
            self.inflight[s as usize].submit_ns = t;
        }
        if self.measuring {
            self.depths.submitted(n, in_flight);
        }
    }

    /// fio's thinktime after every `think_blocks` I/Os.
    #[inline]
    fn think_after(&mut self, issued: u64) {
        if let Some(t) = self.think.as_ref() {
            if t.pause_after(issued) {
                self.last_end = None;
            }
        }
    }

    /// fsync=N: once N writes were issued since the last flush, what is in flight completes and
    /// the files are flushed.
    #[inline]
    fn flush_every_n(&mut self, st: &mut Issuing) -> Result<(), EngineError> {
        if let FsyncPolicy::Every(n) = self.plan.settings.fsync {
            if self.writes_since_flush >= n {
                st.in_flight -= self.drain(st.in_flight, &mut st.to_commit)?;
                self.flush()?;
            }
        }
        Ok(())
    }

    /// At the pass's end, queues the read-back of the blocks still in the verify backlog;
    /// false when there are none.
    fn read_back_the_rest(&mut self) -> bool {
        self.backlog.as_mut().is_some_and(VerifyBacklog::read_back_the_rest)
    }

    /// Ends the worker's part: the latency search's verdict, the flush at the end, the close
    /// (IOzone's -c), the last interval, exitall and first-done, and the worker's outcome.
    fn finish(&mut self, interrupted: bool, usage_start: Usage) -> Result<WorkerOutcome, EngineError> {
        if let Some(l) = self.lat.as_ref().filter(|l| l.settled_until.is_none() && !interrupted) {
            if !self.plan.settings.latency_run {
                return Err(EngineError::LatencyUnsettled {
                    path: self.file_label(),
                    depth: l.qd,
                });
            }
        }
        let end = self.end_of_io(interrupted)?;
        self.tick(end)?;
        self.send_interval(end, true);
        if let Some(clat) = self.interval_clat.as_mut() {
            clat.finish(end, self.ramp_end);
        }
        if !interrupted && self.plan.settings.exitall {
            // fio's exitall: this phase is done, so are the phases running with it.
            self.shared.exit_all.store(true, Ordering::Relaxed);
        }
        if !interrupted {
            let _ = self
                .shared
                .first_done_ns
                .compare_exchange(0, end, Ordering::Relaxed, Ordering::Relaxed);
        }
        if self.first_done_snapshot.is_none() && self.shared.first_done_ns.load(Ordering::Relaxed) == end {
            self.first_done_snapshot = Some(self.totals);
        }
        let used = usage_start.until(&thread_usage());
        let measured_secs = end.saturating_sub(self.ramp_end.min(end)) as f64 / 1e9;
        let bytes = self.totals.bytes();
        Ok(WorkerOutcome {
            result: WorkerResult {
                file: self.file_label(),
                bytes,
                ops: self.totals.ops(),
                seconds: measured_secs,
                bytes_per_sec: bytes as f64 / measured_secs.max(1e-9),
                cpu_user: used.user,
                cpu_sys: used.sys,
                cpu_wait: used.wait,
                flush_seconds: self.flush_ns as f64 / 1e9,
                ctx: used.ctx,
                majf: used.majf,
                minf: used.minf,
                samples: self.own_samples.take().unwrap_or_default(),
                own: self.plan.settings.worker_samples.then(|| Box::new(self.own_figures())),
                interval_histograms: self.interval_clat.as_mut().map(|c| c.take()).unwrap_or_default(),
                io_log: self.io_records.take().map(storlab_model::iolog::IoRecorder::finish),
                zone_resets: self.zones.as_ref().map_or(0, |z| z.resets),
            },
            totals: self.totals,
            // The worker ends here: what it hands over is replaced by nothing of size.
            hist: std::mem::replace(&mut self.thist, Box::new([spent_histogram(), spent_histogram()])),
            sync_hist: self.shist.take(),
            slat_clat: std::mem::take(&mut self.sc_hist),
            exact: *self.exact,
            issued_hist: self.issued_hist.take(),
            depths: self.depths_measured(),
            end_ns: end,
            first_done_snapshot: self.first_done_snapshot,
            verify: std::mem::take(&mut self.verify),
            errors: std::mem::take(&mut self.errors),
            interrupted,
            measure_start: self.ramp_end,
            latency_depth: self.lat.as_ref().map_or(0, |l| l.qd),
        })
    }

    /// The worker's own totals, histograms and depths, as the phase's result holds them for all
    /// (kept where the plan asks: `worker_samples`).
    fn own_figures(&self) -> WorkerFigures {
        let (histograms_slat, histograms_clat) = self.sc_hist.encoded();
        WorkerFigures {
            bytes: self.totals.bytes,
            ops: self.totals.ops,
            histograms_rw: [encode_histogram(&self.thist[0]), encode_histogram(&self.thist[1])],
            histogram_sync: self.shist.as_ref().map(encode_if_any).unwrap_or_default(),
            histograms_slat,
            histograms_clat,
            histograms_issued: self.issued_hist.as_ref().map(PerDirection::encoded).unwrap_or_default(),
            moments: Some(self.exact.moments()),
            io_depths: self.depths_measured(),
        }
    }

    /// The measured part's depth counts; a synchronous back-end's I/Os (none counted at
    /// commit: each was queued and completed by one call) are each one of each.
    fn depths_measured(&self) -> IoDepths {
        let mut d = self.depths;
        let counted: u64 = d.depth.iter().sum();
        d.synchronous(self.totals.ops().saturating_sub(counted));
        d
    }

    /// When the worker's I/O ended: after the flush at the end when it is timed, after
    /// closing the files when that is (IOzone's -c; on NFS a close flushes).
    fn end_of_io(&mut self, interrupted: bool) -> Result<u64, EngineError> {
        let mut end = self.now();
        if self.plan.settings.fsync == FsyncPolicy::End && self.plan.kind.writes() && !interrupted {
            self.flush()?;
            if self.plan.settings.fsync_timed {
                end = self.now();
            }
        }
        if self.plan.settings.close_timed {
            // The back-end holds the descriptor (and a mapping or ring); dropping both closes
            // the file.
            self.backend = Box::new(crate::backend::Closed);
            self._files.clear();
            end = self.now();
        }
        Ok(end)
    }

    /// The latency-target search's window check (latency_target.rs); once it settles, the
    /// ramp ends where its measured part starts. True when the measured window is over.
    fn latency_check(&mut self) -> bool {
        let now = self.now();
        let Some(l) = self.lat.as_mut() else { return false };
        let c = l.check(now, &self.plan.settings, self.next_boundary);
        if let Some(from) = c.measure_from {
            self.ramp_end = from;
        }
        c.over
    }

    /// The worker's file for results and messages: its one file, or its first and how many more.
    pub(crate) fn file_label(&self) -> String {
        match self.file_names.len() {
            1 => self.file_names[0].clone(),
            n => format!("{} and {} more", self.file_names[0], n - 1),
        }
    }

    /// An I/O error of a submission or a wait, which is no one file's.
    pub(crate) fn io_error(&self, op: Op, offset: u64, e: std::io::Error) -> EngineError {
        self.io_error_at(self.file_label(), op, offset, e)
    }

    /// An I/O error on one of the worker's files.
    pub(crate) fn io_error_in(&self, file: usize, op: Op, offset: u64, e: std::io::Error) -> EngineError {
        self.io_error_at(self.file_names[file].clone(), op, offset, e)
    }

    pub(crate) fn io_error_at(&self, path: String, op: Op, offset: u64, e: std::io::Error) -> EngineError {
        EngineError::Io {
            path,
            write: op == Op::Write,
            offset,
            direct: self.plan.settings.direct,
            source: e,
        }
    }
}

/// The worker's intervals: each closed when the clock passes its end and sent to the collector.
impl Worker<'_> {
    pub(crate) fn boundary_after(&self, t: u64) -> u64 {
        let iv = self.plan.settings.interval.0.max(1_000_000);
        let next = (t / iv + 1) * iv;
        let ramp = self.plan.settings.ramp.0;
        if t < ramp && ramp < next {
            ramp
        } else {
            next
        }
    }

    /// Closes the current interval when `now` passed its end.
    #[inline]
    pub(crate) fn tick(&mut self, now: u64) -> Result<(), EngineError> {
        while now >= self.next_boundary {
            let b = self.next_boundary;
            self.send_interval(b, false);
            self.interval_start = b;
            self.next_boundary = self.boundary_after(b);
            if !self.measuring && b >= self.ramp_end {
                self.measuring = true;
            }
        }
        Ok(())
    }

    /// Sends the interval ending at `end` to the collector and starts a new one (none after
    /// the `last`).
    pub(crate) fn send_interval(&mut self, end: u64, last: bool) {
        let counters = std::mem::take(&mut self.interval);
        let hist = [recorded(&self.ihist[0]), recorded(&self.ihist[1])];
        if self.measuring {
            self.totals.add(&counters);
            let _ = self.thist[0].add(&self.ihist[0]);
            let _ = self.thist[1].add(&self.ihist[1]);
        }
        if last {
            // The worker ends: its interval histograms go with it.
            *self.ihist = [spent_histogram(), spent_histogram()];
        } else {
            self.ihist.iter_mut().for_each(Histogram::reset);
        }
        let index = self.interval_index;
        self.interval_index += 1;
        if end > self.interval_start || counters.ops() > 0 {
            if let Some(own) = self.own_samples.as_mut() {
                own.push(own_sample(self.interval_start, end, !self.measuring, &counters));
            }
            if let Some(clat) = self.interval_clat.as_mut() {
                clat.sample_ended(self.interval_start, end, !self.measuring);
            }
            self.last_sent = Some(index);
            let _ = self.tx.send(Msg::Interval {
                index,
                target: self.target,
                t_start: self.interval_start,
                t_end: end,
                ramp: !self.measuring,
                counters,
                hist,
            });
        }
    }
}

/// A worker's interval as its own sample: its counts and mean latencies.
fn own_sample(t_start: u64, t_end: u64, ramp: bool, c: &Counters) -> WorkerSample {
    let split = |sum: &[u64; 2], d: usize| mean_ns(sum[d], c.split_ops[d]);
    WorkerSample {
        t_start: t_start as f64 / 1e9,
        t_end: t_end as f64 / 1e9,
        ramp,
        bytes_read: c.bytes[0],
        bytes_written: c.bytes[1],
        ops_read: c.ops[0],
        ops_written: c.ops[1],
        lat_mean_read_ns: mean_ns(c.lat_ns[0], c.ops[0]),
        lat_mean_write_ns: mean_ns(c.lat_ns[1], c.ops[1]),
        slat_mean_ns: [split(&c.slat_ns, 0), split(&c.slat_ns, 1)],
        clat_mean_ns: [split(&c.clat_ns, 0), split(&c.clat_ns, 1)],
    }
}
