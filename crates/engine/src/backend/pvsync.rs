//! preadv(2) / pwritev(2): one I/O in several buffers (IOzone's preadv/pwritev tests).

use std::io;
use std::os::fd::RawFd;

use super::fsync_fds;
use super::SyncCall;
use super::{Backend, IoUnit, Op, Queued};
use crate::data::BufferPool;
use crate::plan::BackendKind;

/// preadv(2) / pwritev(2): each I/O is split into `iovecs` equal buffers, written or read in
/// one call at one offset (IOzone's pwritev/preadv tests use 16 records per call).
pub(super) struct Pvsync {
    pub(super) fds: Vec<RawFd>,
    pub(super) iovecs: usize,
}

impl Backend for Pvsync {
    fn kind(&self) -> BackendKind {
        BackendKind::Pvsync
    }
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        let len = unit.len as usize;
        let n = if len.is_multiple_of(self.iovecs) {
            self.iovecs
        } else {
            1
        };
        let part = len / n;
        let base = pool.ptr(unit.slot as usize);
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; 64];
        let n = n.min(iov.len());
        for (i, v) in iov.iter_mut().take(n).enumerate() {
            // SAFETY: the parts lie inside the slot, which holds at least `len` bytes.
            v.iov_base = unsafe { base.add(i * part) } as *mut libc::c_void;
            v.iov_len = if i + 1 == n { len - i * part } else { part };
        }
        let fd = self.fds[unit.file as usize];
        loop {
            // SAFETY: iovecs over the slot's buffer; the descriptor is open.
            let r = unsafe {
                match unit.op {
                    Op::Read => libc::preadv(fd, iov.as_ptr(), n as i32, unit.offset as libc::off_t),
                    Op::Write => libc::pwritev(fd, iov.as_ptr(), n as i32, unit.offset as libc::off_t),
                }
            };
            if r >= 0 {
                return Ok(Queued::Completed(r as u32));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
    fn flush(&mut self, call: SyncCall) -> io::Result<()> {
        fsync_fds(&self.fds, call)
    }
}
