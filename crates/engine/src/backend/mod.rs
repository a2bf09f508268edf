//! I/O back-ends, shaped after fio's `struct ioengine_ops` (ioengines.h): a back-end queues an
//! I/O unit (it may complete at once, as pread does, or stay in flight, as with io_uring),
//! commits what it queued to the kernel, and reaps completions. Each worker owns its own
//! back-end value, so nothing here is shared between threads or locked. Each back-end is a
//! file of its own; a new one is a variant of `BackendKind`, a file here and its line in
//! [`open`].

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

mod libaio;
mod mmap;
mod null;
mod psync;
mod pvsync;
mod stdio;
mod uring;

use libaio::Libaio;
use mmap::{Mmap, Mmaps};
use null::NullBackend;
use psync::Psync;
use pvsync::Pvsync;
use stdio::Stdio;
pub use uring::probe_io_uring;
use uring::Uring;

use crate::data::BufferPool;
use crate::plan::BackendKind;
use storlab_model::settings::PhaseSettings;
pub use storlab_model::settings::SyncCall;

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Read into the buffer.
    Read,
    /// Write from the buffer.
    Write,
}

/// One I/O to do.
#[derive(Debug, Clone, Copy)]
pub struct IoUnit {
    /// Read or write.
    pub op: Op,
    /// Which of the worker's files (0 unless it has several, fio's nrfiles).
    pub file: u16,
    /// Offset in the file, in bytes.
    pub offset: u64,
    /// Length in bytes.
    pub len: u32,
    /// Which buffer of the worker's pool holds (or receives) the data; also the completion tag.
    pub slot: u32,
    /// The request's own I/O priority (ioprio_set(2)'s value), 0 for the thread's: only
    /// io_uring carries it.
    pub ioprio: u16,
}

/// What `queue` did with a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    /// Done already; the number of bytes moved.
    Completed(u32),
    /// In flight; its completion comes from `reap`.
    InFlight,
}

/// One completed I/O.
#[derive(Debug, Clone, Copy, Default)]
pub struct Completion {
    /// The unit's slot.
    pub slot: u32,
    /// Bytes moved, or a negative errno.
    pub result: i32,
}

/// A back-end. Methods take the worker's buffer pool so that a back-end never owns the data.
pub trait Backend: Send {
    /// The back-end's name.
    fn kind(&self) -> BackendKind;
    /// Queues (or does) one I/O.
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued>;
    /// Hands what was queued to the kernel. Synchronous back-ends complete every I/O in
    /// `queue` and keep this default.
    fn commit(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// Collects completions into `out`, waiting until at least `min` are there. Synchronous
    /// back-ends never have any in flight and keep this default.
    fn reap(&mut self, _min: u32, _out: &mut [Completion]) -> io::Result<usize> {
        Ok(0)
    }
    /// Flushes written data to stable storage with `call` (fsync or fdatasync).
    fn flush(&mut self, call: SyncCall) -> io::Result<()>;
}

/// Opens the back-end `s.engine` says over the worker's `files` (none for the null back-end,
/// which needs none), each with its region (offset, length), which mmap maps. An I/O unit's
/// `file` is an index into them.
pub fn open(
    s: &PhaseSettings,
    files: &[(&File, (u64, u64))],
    writable: bool,
    pool: &BufferPool,
) -> io::Result<Box<dyn Backend>> {
    let (kind, depth, record, iovecs) = (s.engine, s.iodepth, s.bs.max() as usize, s.iovecs);
    if kind != BackendKind::Null && files.is_empty() {
        return Err(no_file());
    }
    let fds = || files.iter().map(|(f, _)| f.as_raw_fd()).collect::<Vec<_>>();
    Ok(match kind {
        BackendKind::Stdio => {
            if files.len() > 1 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a stdio stream serves one file",
                ));
            }
            Box::new(Stdio::new(files[0].0, writable, record)?)
        }
        BackendKind::Pvsync => Box::new(Pvsync {
            fds: fds(),
            iovecs: iovecs.max(1) as usize,
        }),
        BackendKind::Null => Box::new(NullBackend),
        BackendKind::Psync => Box::new(Psync { fds: fds() }),
        BackendKind::Mmap => Box::new(Mmaps(
            files
                .iter()
                .map(|(f, region)| Mmap::new(f, *region, writable))
                .collect::<io::Result<Vec<_>>>()?,
        )),
        BackendKind::IoUring => Box::new(Uring::new(fds(), depth, pool)?),
        BackendKind::Libaio => Box::new(Libaio::new(fds(), depth, s.userspace_reap)?),
    })
}

fn no_file() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "back-end needs an open file")
}

/// What a worker holds after closing its file (IOzone's -c): no I/O is issued on it.
pub(crate) struct Closed;

impl Backend for Closed {
    fn kind(&self) -> BackendKind {
        BackendKind::Null
    }
    fn queue(&mut self, _: IoUnit, _: &BufferPool) -> io::Result<Queued> {
        Err(io::Error::other("the file was closed"))
    }
    fn flush(&mut self, _: SyncCall) -> io::Result<()> {
        Ok(())
    }
}

/// fsync(2) or fdatasync(2), as `call` names, of each of a worker's descriptors.
pub(super) fn fsync_fds(fds: &[RawFd], call: SyncCall) -> io::Result<()> {
    for fd in fds {
        // SAFETY: plain syscalls on an open descriptor.
        let r = unsafe {
            match call {
                SyncCall::Fsync => libc::fsync(*fd),
                SyncCall::Fdatasync => libc::fdatasync(*fd),
                // The whole file (offset 0, length 0: to its end), whose dirty pages are the
                // ones this worker wrote.
                SyncCall::SyncFileRange(flags) => libc::sync_file_range(*fd, 0, 0, u32::from(flags)),
            }
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
