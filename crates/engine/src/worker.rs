//! The worker loop (fio's io_u.c and backend.c: do_io): one thread's I/O for one phase — the
//! next I/O drawn from the access pattern, paced, its buffer filled, queued on the back-end,
//! completions reaped, flushes issued — until its pass, its time or a stop ends it.
//!
//! The hot path: per I/O it draws the next offset, reads the clock, queues the I/O, records
//! its latency in the worker's own interval histogram and bumps the worker's own counters.
//! Nothing there allocates, locks or sends. Once per interval the worker sends its interval
//! histograms and counters to the collector (collect.rs), which merges the workers' intervals
//! into one sample and drops the histograms, so memory does not grow with run time.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use hdrhistogram::Histogram;
use rand::{rngs::SmallRng, Rng, SeedableRng};
use storlab_model::settings::RateProcess;
use storlab_units::Rate;

use crate::access::FileSet;
use crate::backend::{Backend, Completion, IoUnit, Op, Queued};
use crate::clock::{now_ns, since};
use crate::collect::Msg;
use crate::data::{self, BufferPool};
use crate::filesetup::file_set;
use crate::latency_target::LatencySeek;
use crate::merge::WorkerOutcome;
use crate::pacing::{wait_until, Flow};
use crate::phase::Shared;
use crate::plan::{FsyncPolicy, PhasePlan, WorkerFile};
use crate::result::*;
use crate::stat::{new_histogram, thread_cpu, Counters};
use crate::EngineError;

/// Where one I/O in flight came from.
#[derive(Clone, Copy, Default)]
pub(crate) struct InFlight {
    pub(crate) start_ns: u64,
    pub(crate) offset: u64,
    pub(crate) len: u32,
    pub(crate) write: bool,
    /// Which of the worker's files.
    pub(crate) file: u16,
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
    pub(crate) verify: VerifyReport,
    /// When the last synchronous I/O completed (the next one's start).
    pub(crate) last_end: Option<u64>,
    /// fio's flow this worker weighs against, and its weight.
    pub(crate) flow: Option<(&'a Flow, u64)>,
    /// I/Os this worker issued under its flow.
    pub(crate) flow_count: u64,
    /// fill: the filesystem is full (a write) or the file ended (a read); issue no more.
    pub(crate) full: bool,
    /// fio's dedupe_percentage: the blocks written repeat others.
    pub(crate) dedupe: Option<data::Dedupe>,
    /// Failed I/Os gone on past (continue_on_error).
    pub(crate) errors: ErrorsReport,
    /// rate_min: the last check's time and the bytes and I/Os moved by then.
    pub(crate) rate_check: Option<(u64, u64, u64)>,
    /// fio's latency_target: the search for the depth that meets it.
    pub(crate) lat: Option<LatencySeek>,
    /// Where the measured part begins: the ramp's end, or where the latency search settles
    /// (unknown, u64::MAX, until it does).
    pub(crate) ramp_end: u64,
    /// verify_backlog: blocks written and not yet read back, and those being read back.
    pub(crate) backlog: Vec<(u16, u64, u64)>,
    pub(crate) verify_queue: std::collections::VecDeque<(u16, u64, u64)>,
    /// The reads of the backlog are queued: let them complete before writing on.
    pub(crate) backlog_draining: bool,
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
        let len = wf.total_len();
        Worker {
            plan,
            target: wf.target,
            file_names: wf.regions().map(|r| r.0.display().to_string()).collect(),
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
            verify: VerifyReport::default(),
            last_end: None,
            flow: None,
            flow_count: 0,
            full: false,
            errors: ErrorsReport::default(),
            rate_check: None,
            lat: plan.settings.latency_target.map(|t| LatencySeek {
                target_ns: t.0,
                qd: 1,
                low: 1,
                high: plan.settings.iodepth.max(1),
                stable: 0,
                window_start: 0,
                ios: 0,
                failed: 0,
                settled_until: None,
            }),
            // The search is a ramp, unless latency_run measures it all (as fio reports it).
            ramp_end: if plan.settings.latency_target.is_some() && !plan.settings.latency_run {
                u64::MAX
            } else {
                plan.settings.ramp.0
            },
            dedupe: (plan.settings.dedupe > 0 && plan.kind.writes()).then(|| data::Dedupe {
                percent: plan.settings.dedupe,
                set_blocks: plan
                    .settings
                    .dedupe_set
                    .map(|p| len * p as u64 / 100 / plan.settings.bs.min().max(1)),
                global: plan.settings.dedupe_global,
                worker: index as u64,
                workers: plan.workers.len() as u64,
                // Each phase's blocks are its own: jobs running together (fio's a and b)
                // and later write phases do not repeat each other's.
                seed: plan.seed
                    ^ (plan.generation as u64).wrapping_mul(0xA076_1D64_78BD_642F)
                    ^ plan
                        .name
                        .as_deref()
                        .unwrap_or("")
                        .bytes()
                        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
                        }),
                unique: 0,
            }),
            backlog: Vec::new(),
            verify_queue: std::collections::VecDeque::new(),
            backlog_draining: false,
        }
    }

    pub(crate) fn now(&self) -> u64 {
        since(self.epoch)
    }

    pub(crate) fn run(&mut self, stop: &AtomicBool, finish: &AtomicBool) -> Result<WorkerOutcome, EngineError> {
        self.epoch = *self.shared.epoch.get().expect("epoch set before the start barrier");
        // A phase that starts later than the others it runs with (fio's startdelay) waits in
        // slices, so that Ctrl-C, a failing worker or exitall end the wait.
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
        let (u0, s0) = thread_cpu();
        self.next_boundary = self.boundary_after(0);
        let depth = self.plan.settings.iodepth.max(1);
        // A runtime makes the phase time-based; a timeout only cuts its passes short.
        let deadline = match (self.plan.settings.runtime, self.plan.settings.timeout) {
            (Some(r), _) => Some(self.plan.settings.ramp.0 + r.0),
            (None, Some(t)) if t.0 > 0 => Some(t.0),
            _ => None,
        };
        let mut rate_gap = self.plan.rate().map(|r| {
            let r = if r.per_worker {
                r.rate
            } else {
                r.rate.split(self.plan.workers.len() as u32)
            };
            match r {
                Rate::Iops(v) => (1e9 / v, false),
                Rate::BytesPerSec(v) => (1e9 / v, true),
            }
        });
        let mut next_sched = 0.0f64;
        let mut issued = 0u64;
        let think_ns = self.plan.settings.think.0;
        let mut pending: Option<(usize, Op, u64, u64)> = None;
        let mut done_issuing = false;
        // The access pattern has no more I/O (not a deadline, a stop or exitall).
        let mut exhausted = false;
        let mut interrupted = false;
        let mut in_flight = 0u32;
        let mut to_commit = 0u32;

        loop {
            // fio's latency_target: the depth the search is trying (or settled at).
            let depth = self.lat.as_ref().map_or(depth, |l| l.qd);
            while in_flight < depth && !done_issuing {
                if stop.load(Ordering::Relaxed) {
                    interrupted = true;
                    done_issuing = true;
                    break;
                }
                if self.shared.abort.load(Ordering::Relaxed)
                    || finish.load(Ordering::Relaxed)
                    || self.shared.exit_all.load(Ordering::Relaxed)
                    || self.shared.done.load(Ordering::Relaxed)
                {
                    done_issuing = true;
                    break;
                }
                if self.full || self.plan.settings.ios.is_some_and(|n| issued >= n) {
                    done_issuing = true;
                    break;
                }
                if let Some((f, weight)) = self.flow {
                    let issued = f.issued.load(Ordering::Relaxed).max(1);
                    let total = f.total_weight.load(Ordering::Relaxed).max(1);
                    if self.flow_count as f64 / issued as f64 > weight as f64 / total as f64 {
                        // Ahead of its share: reap what is in flight, or wait and look again.
                        if in_flight > 0 {
                            break;
                        }
                        let nap = self.plan.settings.flow_sleep.0;
                        if nap > 0 {
                            std::thread::sleep(std::time::Duration::from_nanos(nap));
                        } else {
                            std::thread::yield_now();
                        }
                        self.last_end = None;
                        continue;
                    }
                    f.issued.fetch_add(1, Ordering::Relaxed);
                    self.flow_count += 1;
                }
                // fio's verify_backlog: every N blocks written are read back and checked, with
                // nothing else in flight, before the writing goes on.
                if let Some(n) = self.backlog_every() {
                    if self.backlog_draining || (self.verify_queue.is_empty() && self.backlog.len() as u64 >= n) {
                        if in_flight > 0 {
                            break;
                        }
                        self.backlog_draining = false;
                        self.verify_queue.extend(self.backlog.drain(..));
                    }
                }
                let next = pending.take().or_else(|| {
                    let v = self
                        .verify_queue
                        .pop_front()
                        .map(|(f, o, l)| (f as usize, Op::Read, o, l));
                    if v.is_some() && self.verify_queue.is_empty() {
                        self.backlog_draining = true;
                    }
                    v.or_else(|| self.access.next(&mut self.rng))
                });
                let Some((file, op, offset, len)) = next else {
                    done_issuing = true;
                    exhausted = true;
                    break;
                };
                // After a synchronous completion its end time is this I/O's start: one clock
                // read per I/O instead of two (the gap between them is the engine's own
                // bookkeeping, a few tens of nanoseconds, which then counts as latency).
                let mut now = match self.last_end.take() {
                    Some(t) if rate_gap.is_none() => t,
                    _ => self.now(),
                };
                if deadline.is_some_and(|d| now >= d) {
                    done_issuing = true;
                    break;
                }
                let start = if let Some((gap, per_byte)) = rate_gap.as_mut() {
                    let sched = next_sched as u64;
                    if now < sched {
                        if in_flight > 0 {
                            // Not due yet: take in what has completed meanwhile (without
                            // blocking), so completions are timed when they happen.
                            pending = Some((file, op, offset, len));
                            in_flight -= self.reap(0)?;
                            if sched - now > 300_000 {
                                std::thread::sleep(std::time::Duration::from_micros(50));
                            }
                            continue;
                        }
                        wait_until(self.epoch, sched);
                        now = self.now();
                    }
                    let step = if *per_byte { *gap * len as f64 } else { *gap };
                    next_sched += match self.plan.settings.rate_process {
                        RateProcess::Linear => step,
                        // Exponential gaps with the same mean: -ln(U), U uniform in (0, 1].
                        RateProcess::Poisson => step * -(1.0 - self.rng.gen::<f64>()).ln(),
                    };
                    if now > sched + self.plan.settings.late_after.0 {
                        self.interval.late += 1;
                    }
                    sched
                } else {
                    now
                };
                let slot = self
                    .free
                    .pop()
                    .expect("a free slot when fewer than depth are in flight");
                let write = op == Op::Write;
                if write {
                    // SAFETY: the slot is free: no I/O uses its buffer.
                    let buf = unsafe { self.pool.slice_mut(slot as usize, len as usize) };
                    if self.plan.write_headers {
                        data::stamp(buf, offset, self.plan.seed, self.plan.generation);
                    } else if let Some(d) = self.dedupe.as_mut() {
                        d.fill(buf, &self.plan.settings.pattern, &mut self.rng);
                    } else if self.plan.settings.pattern.unique_per_block() {
                        data::scramble(buf, offset, self.plan.seed);
                    }
                }
                self.inflight[slot as usize] = InFlight {
                    start_ns: start,
                    offset,
                    len: len as u32,
                    write,
                    file: file as u16,
                };
                // fio's cmdprio_percentage: this request carries a priority of its own.
                let ioprio = match self.plan.settings.cmdprio {
                    Some(c) => {
                        let pct = if write { c.write_percent } else { c.read_percent };
                        if pct > 0 && self.rng.gen_range(0..100u8) < pct {
                            c.priority.value()
                        } else {
                            0
                        }
                    }
                    None => 0,
                };
                let queued = match self.backend.queue(
                    IoUnit {
                        op,
                        file: file as u16,
                        offset,
                        len: len as u32,
                        slot,
                        ioprio,
                    },
                    &self.pool,
                ) {
                    // A synchronous back-end's failed I/O goes where an asynchronous one's
                    // completion goes, to `complete`: it ends the phase there, or (fill,
                    // continue_on_error) counts it and goes on.
                    Err(e) if e.raw_os_error().is_some() => {
                        let end = self.now();
                        self.complete(slot, -e.raw_os_error().unwrap_or(libc::EIO), end)?;
                        issued += 1;
                        continue;
                    }
                    r => r.map_err(|e| self.io_error_in(file, op, offset, e))?,
                };
                match queued {
                    Queued::Completed(n) => {
                        let end = self.now();
                        self.complete(slot, n as i32, end)?;
                        self.last_end = Some(end);
                    }
                    Queued::InFlight => {
                        in_flight += 1;
                        to_commit += 1;
                        if to_commit >= self.plan.submit_batch {
                            self.backend.commit().map_err(|e| self.io_error(Op::Read, 0, e))?;
                            to_commit = 0;
                        }
                    }
                }
                issued += 1;
                if think_ns > 0 && issued.is_multiple_of(self.plan.settings.think_blocks.max(1) as u64) {
                    // fio's thinktime: spin for its spin part, sleep the rest.
                    let spin_until = now_ns() + self.plan.settings.think_spin.0.min(think_ns);
                    while now_ns() < spin_until {
                        std::hint::spin_loop();
                    }
                    let rest = think_ns.saturating_sub(self.plan.settings.think_spin.0);
                    if rest > 0 {
                        std::thread::sleep(std::time::Duration::from_nanos(rest));
                    }
                    self.last_end = None;
                }
                if let FsyncPolicy::Every(n) = self.plan.settings.fsync {
                    if self.writes_since_flush >= n {
                        in_flight -= self.drain(in_flight, &mut to_commit)?;
                        self.flush()?;
                    }
                }
            }
            if to_commit > 0 {
                self.backend.commit().map_err(|e| self.io_error(Op::Read, 0, e))?;
                to_commit = 0;
            }
            if self.lat.is_some() && !done_issuing && self.latency_check() {
                // Settled and measured: this worker is done (fio ends the job there).
                done_issuing = true;
            }
            if in_flight == 0 {
                if done_issuing {
                    // The pass is done: what is left of the backlog is read back too.
                    if exhausted && !self.backlog.is_empty() {
                        self.verify_queue.extend(self.backlog.drain(..));
                        done_issuing = false;
                        continue;
                    }
                    break;
                }
                continue;
            }
            in_flight -= self.reap(1)?;
        }
        if let Some(l) = self.lat.as_ref().filter(|l| l.settled_until.is_none() && !interrupted) {
            if !self.plan.settings.latency_run {
                return Err(EngineError::LatencyUnsettled {
                    path: self.file_label(),
                    depth: l.qd,
                });
            }
        }
        let mut end = self.now();
        if self.plan.settings.fsync == FsyncPolicy::End && self.plan.kind.writes() && !interrupted {
            self.flush()?;
            if self.plan.settings.fsync_timed {
                end = self.now();
            }
        }
        if self.plan.settings.close_timed {
            // IOzone's -c: closing (which on NFS flushes) counts. The back-end holds the
            // descriptor (and a mapping or ring); dropping both closes the file.
            self.backend = Box::new(crate::backend::Closed);
            self._files.clear();
            end = self.now();
        }
        self.tick(end)?;
        self.send_interval(end);
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
        let (u1, s1) = thread_cpu();
        let measured_secs = end.saturating_sub(self.ramp_end.min(end)) as f64 / 1e9;
        let bytes = self.totals.bytes();
        Ok(WorkerOutcome {
            result: WorkerResult {
                file: self.file_label(),
                bytes,
                ops: self.totals.ops(),
                seconds: measured_secs,
                bytes_per_sec: bytes as f64 / measured_secs.max(1e-9),
                cpu_user: u1 - u0,
                cpu_sys: s1 - s0,
                flush_seconds: self.flush_ns as f64 / 1e9,
            },
            totals: self.totals,
            hist: std::mem::replace(&mut self.thist, Box::new([new_histogram(), new_histogram()])),
            end_ns: end,
            first_done_snapshot: self.first_done_snapshot,
            verify: std::mem::take(&mut self.verify),
            errors: std::mem::take(&mut self.errors),
            interrupted,
            measure_start: self.ramp_end,
            latency_depth: self.lat.as_ref().map_or(0, |l| l.qd),
        })
    }

    /// The worker's file for results and messages: its one file, or its first and how many more.
    pub(crate) fn file_label(&self) -> String {
        match self.file_names.len() {
            1 => self.file_names[0].clone(),
            n => format!("{} and {} more", self.file_names[0], n - 1),
        }
    }

    /// fio's verify_backlog: read back every N blocks written, in a verified write phase.
    #[inline]
    pub(crate) fn backlog_every(&self) -> Option<u64> {
        self.plan
            .settings
            .verify_backlog
            .filter(|_| self.plan.settings.verify && self.plan.kind.writes())
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
