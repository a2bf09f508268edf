//! io_uring: I/Os queued in a ring and reaped as they complete, the worker's buffers
//! registered with the kernel.

use std::io;
use std::os::fd::RawFd;

use super::SyncCall;
use super::{fsync_fds, Backend, Completion, IoUnit, Op, Queued};
use crate::data::BufferPool;
use crate::plan::BackendKind;

/// io_uring with the worker's buffers registered (READ_FIXED / WRITE_FIXED), so the kernel
/// does not pin and unpin pages on every I/O.
pub(super) struct Uring {
    ring: io_uring::IoUring,
    fds: Vec<RawFd>,
    fixed: bool,
    /// One iovec per slot, for a request with its own priority when the buffers are not
    /// registered (READV/WRITEV read it when the request is submitted).
    iovecs: Vec<libc::iovec>,
}

// SAFETY: the iovecs point into the worker's buffer pool, which moves with the worker.
unsafe impl Send for Uring {}

impl Uring {
    pub(super) fn new(fds: Vec<RawFd>, depth: u32, pool: &BufferPool) -> io::Result<Uring> {
        let entries = depth.max(1).next_power_of_two();
        // As fio 3.33 sets its ring up: DEFER_TASKRUN with SINGLE_ISSUER (Linux 6.1; the
        // worker thread that makes the ring is its only user) runs completions' task work only
        // when the worker asks for completions, and COOP_TASKRUN (5.19) never interrupts the
        // worker with an IPI per completion; TASKRUN_FLAG says when work waits, so that a look
        // for completions without waiting knows to enter the kernel. Older kernels get the
        // ring they support.
        let ring = io_uring::IoUring::builder()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| io_uring::IoUring::builder().setup_coop_taskrun().build(entries))
            .or_else(|_| io_uring::IoUring::new(entries))
            .map_err(|e| {
            io::Error::new(e.kind(), format!("the kernel refused to set up an io_uring ({e}); it may be disabled (sysctl kernel.io_uring_disabled) or blocked by seccomp: use engine = \"psync\""))
        })?;
        let iovecs = pool.iovecs();
        // SAFETY: the iovecs point into `pool`, which the worker keeps alive (and unmoved) until
        // after this ring is dropped; the registration is undone when the ring is dropped.
        let fixed = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(Uring {
            ring,
            fds,
            fixed,
            iovecs: pool.iovecs(),
        })
    }
}

/// Whether this kernel lets this process create an io_uring: Ok, or the reason it does not.
pub fn probe_io_uring() -> Result<(), String> {
    match io_uring::IoUring::new(2) {
        Ok(ring) => {
            let mut probe = io_uring::Probe::new();
            if ring.submitter().register_probe(&mut probe).is_ok()
                && !(probe.is_supported(io_uring::opcode::Read::CODE) && probe.is_supported(io_uring::opcode::Write::CODE))
            {
                return Err("this kernel's io_uring lacks the READ and WRITE operations (Linux 5.6 or later needed)".into());
            }
            Ok(())
        }
        Err(e) => Err(format!("the kernel refused to set up an io_uring: {e} (disabled by sysctl kernel.io_uring_disabled, seccomp, or a kernel older than 5.1)")),
    }
}

impl Backend for Uring {
    fn kind(&self) -> BackendKind {
        BackendKind::IoUring
    }

    #[inline]
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        use io_uring::{opcode, types};
        let buf = pool.ptr(unit.slot as usize);
        let fd = types::Fd(self.fds[unit.file as usize]);
        let entry = match (unit.op, self.fixed) {
            (Op::Read, true) => opcode::ReadFixed::new(fd, buf, unit.len, unit.slot as u16)
                .offset(unit.offset)
                .ioprio(unit.ioprio)
                .build(),
            (Op::Write, true) => opcode::WriteFixed::new(fd, buf, unit.len, unit.slot as u16)
                .offset(unit.offset)
                .ioprio(unit.ioprio)
                .build(),
            // The plain READ and WRITE of this io-uring crate carry no priority: a request that
            // needs one goes as READV/WRITEV of one buffer, which do.
            (op, false) if unit.ioprio != 0 => {
                let iov = &mut self.iovecs[unit.slot as usize];
                iov.iov_base = buf as *mut libc::c_void;
                iov.iov_len = unit.len as usize;
                let iov = iov as *const libc::iovec;
                match op {
                    Op::Read => opcode::Readv::new(fd, iov, 1)
                        .offset(unit.offset)
                        .ioprio(unit.ioprio)
                        .build(),
                    Op::Write => opcode::Writev::new(fd, iov, 1)
                        .offset(unit.offset)
                        .ioprio(unit.ioprio)
                        .build(),
                }
            }
            (Op::Read, false) => opcode::Read::new(fd, buf, unit.len).offset(unit.offset).build(),
            (Op::Write, false) => opcode::Write::new(fd, buf, unit.len).offset(unit.offset).build(),
        }
        .user_data(unit.slot as u64);
        // SAFETY: the entry points at a pool slot that stays allocated until the pool drops,
        // after the ring; the worker does not touch the slot until its completion is reaped.
        let pushed = unsafe { self.ring.submission().push(&entry).is_ok() };
        if !pushed {
            // The submission queue is full (cannot happen when depth ≤ entries, but be safe).
            self.ring.submit()?;
            // SAFETY: as above.
            unsafe { self.ring.submission().push(&entry) }
                .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        }
        Ok(Queued::InFlight)
    }

    fn commit(&mut self) -> io::Result<()> {
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    #[inline]
    fn reap(&mut self, min: u32, out: &mut [Completion]) -> io::Result<usize> {
        // Completions whose task work waits (deferred, or flagged) reach the ring only in an
        // enter that asks for events: submit() makes one when the kernel flags work waiting.
        if min == 0 && self.ring.submission().taskrun() {
            self.commit()?;
        }
        let mut n = 0;
        for cqe in self.ring.completion() {
            out[n] = Completion {
                slot: cqe.user_data() as u32,
                result: cqe.result(),
            };
            n += 1;
            if n == out.len() {
                return Ok(n);
            }
        }
        if n >= min as usize {
            return Ok(n);
        }
        loop {
            match self.ring.submit_and_wait(min as usize - n) {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        for cqe in self.ring.completion() {
            out[n] = Completion {
                slot: cqe.user_data() as u32,
                result: cqe.result(),
            };
            n += 1;
            if n == out.len() {
                break;
            }
        }
        Ok(n)
    }

    fn flush(&mut self, call: SyncCall) -> io::Result<()> {
        // All I/O was reaped before a flush.
        fsync_fds(&self.fds, call)
    }
}
