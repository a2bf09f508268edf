//! pread(2) / pwrite(2): the synchronous back-end, and storlab's default.

use std::io;
use std::os::fd::RawFd;

use super::fsync_fds;
use super::SyncCall;
use super::{Backend, IoUnit, Op, Queued};
use crate::data::BufferPool;
use crate::plan::BackendKind;

/// pread(2) / pwrite(2).
pub(super) struct Psync {
    pub(super) fds: Vec<RawFd>,
}

impl Backend for Psync {
    fn kind(&self) -> BackendKind {
        BackendKind::Psync
    }

    #[inline]
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        // rustix issues the syscall directly: libc's pread is a cancellation point and pays for
        // switching asynchronous cancellation on and off around every call (about 1 % of a
        // 4 KiB read from the page cache).
        // SAFETY: the descriptor stays open for the back-end's life (the worker owns the file).
        let fd = unsafe { rustix::fd::BorrowedFd::borrow_raw(self.fds[unit.file as usize]) };
        let len = unit.len as usize;
        // A transfer may move fewer bytes than asked and still be good (btrfs splits O_DIRECT
        // writes it cannot do in one piece, say): the rest is issued until all is moved, as fio
        // does. Only a read that reaches the end of the file (0 bytes) stops early.
        let mut done = 0usize;
        while done < len {
            // SAFETY: the slot holds at least `len` bytes (the pool is sized for the largest
            // block), outlives this call, and nothing else uses it meanwhile.
            let buf = unsafe { pool.slice_mut(unit.slot as usize, len) };
            let at = unit.offset + done as u64;
            let r = match unit.op {
                Op::Read => rustix::io::pread(fd, &mut buf[done..], at),
                Op::Write => rustix::io::pwrite(fd, &buf[done..], at),
            };
            match r {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Queued::Completed(done as u32))
    }
    fn flush(&mut self, call: SyncCall) -> io::Result<()> {
        fsync_fds(&self.fds, call)
    }
}
