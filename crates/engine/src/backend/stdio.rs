//! fwrite(3) / fread(3) through a C stdio stream (IOzone's fwrite and fread tests).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::SyncCall;
use super::{Backend, IoUnit, Op, Queued};
use crate::data::BufferPool;
use crate::plan::BackendKind;

/// fwrite(3) / fread(3) through a C stdio stream whose buffer is one record, as IOzone's
/// fwrite and fread tests set it up (`setvbuf(stream, buf, _IOFBF, reclen)`): each record is
/// copied into the stream's buffer and written or read from there. The stream reads and writes
/// at its own position; an I/O at another offset costs an fseeko (which flushes the buffer).
pub(super) struct Stdio {
    stream: std::ptr::NonNull<libc::FILE>,
    pos: u64,
    /// The stream's buffer: owned here so that it outlives the stream.
    _buf: Box<[u8]>,
}

// SAFETY: the stream belongs to one worker, which uses it from one thread at a time; C stdio
// streams carry their own lock in any case.
unsafe impl Send for Stdio {}

impl Stdio {
    pub(super) fn new(file: &File, writable: bool, record: usize) -> io::Result<Stdio> {
        // SAFETY: dup of an open descriptor; the stream owns the copy and closes it.
        let fd = unsafe { libc::dup(file.as_raw_fd()) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mode: &[u8] = if writable { b"r+\0" } else { b"r\0" };
        // SAFETY: a valid descriptor and a NUL-terminated mode.
        let stream = unsafe { libc::fdopen(fd, mode.as_ptr() as *const libc::c_char) };
        let Some(stream) = std::ptr::NonNull::new(stream) else {
            let e = io::Error::last_os_error();
            // SAFETY: fdopen failed, so the descriptor is still ours to close.
            unsafe { libc::close(fd) };
            return Err(e);
        };
        let mut buf = vec![0u8; record.max(1)].into_boxed_slice();
        // SAFETY: the buffer lives as long as the stream (both are dropped by this struct,
        // the stream first) and no I/O happened on the stream yet.
        unsafe {
            libc::setvbuf(
                stream.as_ptr(),
                buf.as_mut_ptr() as *mut libc::c_char,
                libc::_IOFBF,
                buf.len(),
            )
        };
        Ok(Stdio {
            stream,
            pos: 0,
            _buf: buf,
        })
    }
}

impl Backend for Stdio {
    fn kind(&self) -> BackendKind {
        BackendKind::Stdio
    }
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        let s = self.stream.as_ptr();
        if unit.offset != self.pos {
            // SAFETY: a valid stream.
            if unsafe { libc::fseeko(s, unit.offset as libc::off_t, libc::SEEK_SET) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let buf = pool.ptr(unit.slot as usize);
        let len = unit.len as usize;
        // SAFETY: the slot holds at least `len` bytes and nothing else uses it meanwhile.
        let n = unsafe {
            match unit.op {
                Op::Read => libc::fread(buf as *mut libc::c_void, 1, len, s),
                Op::Write => libc::fwrite(buf as *const libc::c_void, 1, len, s),
            }
        };
        self.pos = unit.offset + n as u64;
        // SAFETY: a valid stream.
        if n < len && unsafe { libc::ferror(s) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Queued::Completed(n as u32))
    }
    fn flush(&mut self, call: SyncCall) -> io::Result<()> {
        let s = self.stream.as_ptr();
        // SAFETY: a valid stream.
        if unsafe { libc::fflush(s) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the stream's own descriptor.
        super::fsync_fds(&[unsafe { libc::fileno(s) }], call)
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        // SAFETY: the stream is valid and closed once; fclose writes what the buffer holds.
        unsafe { libc::fclose(self.stream.as_ptr()) };
    }
}
