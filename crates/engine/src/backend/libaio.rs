//! Linux AIO (io_setup, io_submit, io_getevents; fio's engines/libaio.c): I/Os queued as
//! iocbs, handed to the kernel in one io_submit, reaped with io_getevents — or, with fio's
//! userspace_reap when nothing must be waited for, read off the completion ring the kernel maps
//! into the process. Linux AIO is asynchronous with O_DIRECT; on a buffered file io_submit
//! does each I/O before it returns (which is what fio measures with `--ioengine=libaio
//! --direct=0`, and what storlab then measures too).
//!
//! The kernel's interface is five system calls and two structures (include/uapi/linux/
//! aio_abi.h), written here rather than taken from a crate: the crates that wrap libaio link
//! the C library or bring a runtime, and the hot path needs the raw io_submit and the ring.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, Ordering};

use super::SyncCall;
use super::{fsync_fds, Backend, Completion, IoUnit, Op, Queued};
use crate::data::BufferPool;
use crate::plan::BackendKind;

/// aio_abi.h's `struct iocb` (little-endian layout: aio_key before aio_rw_flags).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: u32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// aio_abi.h's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

/// The head of the completion ring the kernel maps at the context's address (fs/aio.c's
/// `struct aio_ring`), followed by `nr` events.
#[repr(C)]
struct AioRing {
    id: u32,
    nr: u32,
    head: u32,
    tail: u32,
    magic: u32,
    compat_features: u32,
    incompat_features: u32,
    header_length: u32,
}

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
/// aio_flags: `aio_reqprio` holds an I/O priority (ioprio_set(2)'s value).
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;
const AIO_RING_MAGIC: u32 = 0xa10a_10a1;

/// A worker's AIO context: one iocb per slot (the kernel reads them during io_submit only),
/// the pointers of those queued and not yet submitted, and the events reaped.
pub(super) struct Libaio {
    ctx: libc::c_ulong,
    fds: Vec<RawFd>,
    iocbs: Vec<Iocb>,
    pending: Vec<*mut Iocb>,
    events: Vec<IoEvent>,
    userspace_reap: bool,
}

// SAFETY: the pending pointers point into `iocbs`, which moves with the back-end; the context
// is the process's and may be used from any thread.
unsafe impl Send for Libaio {}

impl Libaio {
    pub(super) fn new(fds: Vec<RawFd>, depth: u32, userspace_reap: bool) -> io::Result<Libaio> {
        let depth = depth.max(1) as usize;
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context into `ctx`, which outlives the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_setup,
                depth as libc::c_long,
                &mut ctx as *mut libc::c_ulong,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("io_setup({depth}) failed: {e} (the system's AIO limit is /proc/sys/fs/aio-max-nr)"),
            ));
        }
        Ok(Libaio {
            ctx,
            fds,
            iocbs: vec![Iocb::default(); depth],
            pending: Vec::with_capacity(depth),
            events: vec![IoEvent::default(); depth],
            userspace_reap,
        })
    }

    /// fio's user_io_getevents: up to `max` events off the ring the kernel maps at the
    /// context's address, without a system call; None when the ring is not one this reads.
    fn reap_ring(&mut self, max: usize, out: &mut [Completion]) -> Option<usize> {
        let ring = self.ctx as *mut AioRing;
        // SAFETY: the context's value is the address of its ring, mapped into this process for
        // as long as the context lives (fs/aio.c, aio_setup_ring); its header is read before
        // anything else, and nothing is read past `nr` events.
        unsafe {
            if (*ring).magic != AIO_RING_MAGIC || (*ring).incompat_features != 0 {
                return None;
            }
            let nr = (*ring).nr;
            let events = (ring as *mut u8).add(std::mem::size_of::<AioRing>()) as *const IoEvent;
            let mut n = 0;
            while n < max {
                let head = std::ptr::read_volatile(&(*ring).head);
                if head == std::ptr::read_volatile(&(*ring).tail) {
                    break;
                }
                // The kernel wrote the event before it moved the tail.
                fence(Ordering::Acquire);
                let ev = *events.add(head as usize);
                out[n] = completion(&ev);
                n += 1;
                fence(Ordering::Release);
                std::ptr::write_volatile(&mut (*ring).head, (head + 1) % nr);
            }
            Some(n)
        }
    }
}

/// An event as the engine's completion: the slot it carried and its result.
fn completion(ev: &IoEvent) -> Completion {
    Completion {
        slot: ev.data as u32,
        result: ev.res as i32,
    }
}

impl Drop for Libaio {
    fn drop(&mut self) {
        // SAFETY: the context is ours; io_destroy waits for what is still in flight.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

impl Backend for Libaio {
    fn kind(&self) -> BackendKind {
        BackendKind::Libaio
    }

    #[inline]
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        let cb = &mut self.iocbs[unit.slot as usize];
        *cb = Iocb {
            aio_data: u64::from(unit.slot),
            aio_lio_opcode: match unit.op {
                Op::Read => IOCB_CMD_PREAD,
                Op::Write => IOCB_CMD_PWRITE,
            },
            aio_fildes: self.fds[unit.file as usize] as u32,
            aio_buf: pool.ptr(unit.slot as usize) as u64,
            aio_nbytes: u64::from(unit.len),
            aio_offset: unit.offset as i64,
            ..Iocb::default()
        };
        if unit.ioprio != 0 {
            cb.aio_flags |= IOCB_FLAG_IOPRIO;
            cb.aio_reqprio = unit.ioprio as i16;
        }
        self.pending.push(cb as *mut Iocb);
        Ok(Queued::InFlight)
    }

    fn commit(&mut self) -> io::Result<()> {
        let mut done = 0;
        while done < self.pending.len() {
            let left = &mut self.pending[done..];
            // SAFETY: each pointer is to one of our iocbs, filled by `queue` and untouched
            // until its completion is reaped; io_submit reads them before it returns.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    left.len() as libc::c_long,
                    left.as_mut_ptr(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.pending.clear();
                return Err(e);
            }
            // io_submit may take fewer than it was given (a queue full for now): the rest
            // goes again.
            done += r as usize;
        }
        self.pending.clear();
        Ok(())
    }

    #[inline]
    fn reap(&mut self, min: u32, out: &mut [Completion]) -> io::Result<usize> {
        let max = out.len().min(self.events.len());
        if min == 0 && self.userspace_reap {
            if let Some(n) = self.reap_ring(max, out) {
                return Ok(n);
            }
        }
        loop {
            // SAFETY: the kernel writes at most `max` events into our array of that many; no
            // timeout (NULL) means waiting for `min`.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    max as libc::c_long,
                    self.events.as_mut_ptr(),
                    std::ptr::null_mut::<libc::timespec>(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let n = r as usize;
            for (o, ev) in out.iter_mut().zip(&self.events[..n]) {
                *o = completion(ev);
            }
            return Ok(n);
        }
    }

    fn flush(&mut self, call: SyncCall) -> io::Result<()> {
        // All I/O was reaped before a flush.
        fsync_fds(&self.fds, call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The structures are the kernel's sizes (aio_abi.h: 64 and 32 bytes).
    #[test]
    fn layouts_are_the_kernels() {
        assert_eq!(std::mem::size_of::<Iocb>(), 64);
        assert_eq!(std::mem::size_of::<IoEvent>(), 32);
        assert_eq!(std::mem::offset_of!(Iocb, aio_lio_opcode), 16);
        assert_eq!(std::mem::offset_of!(Iocb, aio_fildes), 20);
        assert_eq!(std::mem::offset_of!(Iocb, aio_buf), 24);
        assert_eq!(std::mem::offset_of!(Iocb, aio_offset), 40);
        assert_eq!(std::mem::offset_of!(Iocb, aio_flags), 56);
    }
}
