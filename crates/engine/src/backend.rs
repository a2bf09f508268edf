//! I/O back-ends, shaped after fio's `struct ioengine_ops` (ioengines.h): a back-end queues an
//! I/O unit (it may complete at once, as pread does, or stay in flight, as with io_uring),
//! commits what it queued to the kernel, and reaps completions. Each worker owns its own
//! back-end value, so nothing here is shared between threads or locked.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, RawFd};

use crate::data::BufferPool;
use crate::plan::BackendKind;

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
    /// Flushes written data to stable storage.
    fn flush(&mut self) -> io::Result<()>;
}

/// Opens the back-end of `kind` over the worker's `files` (none for the null back-end, which
/// needs none), each with its region (offset, length), which mmap maps. An I/O unit's `file`
/// is an index into them.
#[allow(clippy::too_many_arguments)]
pub fn open(
    kind: BackendKind,
    files: &[(&File, (u64, u64))],
    writable: bool,
    depth: u32,
    pool: &BufferPool,
    record: usize,
    iovecs: u32,
) -> io::Result<Box<dyn Backend>> {
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
    })
}

fn no_file() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "back-end needs an open file")
}

/// Moves no data; every I/O completes at once. It measures the engine's own cost per I/O.
struct NullBackend;

impl Backend for NullBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Null
    }
    fn queue(&mut self, unit: IoUnit, _: &BufferPool) -> io::Result<Queued> {
        Ok(Queued::Completed(unit.len))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// fwrite(3) / fread(3) through a C stdio stream whose buffer is one record, as IOzone's
/// fwrite and fread tests set it up (`setvbuf(stream, buf, _IOFBF, reclen)`): each record is
/// copied into the stream's buffer and written or read from there. The stream reads and writes
/// at its own position; an I/O at another offset costs an fseeko (which flushes the buffer).
struct Stdio {
    stream: std::ptr::NonNull<libc::FILE>,
    pos: u64,
    /// The stream's buffer: owned here so that it outlives the stream.
    _buf: Box<[u8]>,
}

// SAFETY: the stream belongs to one worker, which uses it from one thread at a time; C stdio
// streams carry their own lock in any case.
unsafe impl Send for Stdio {}

impl Stdio {
    fn new(file: &File, writable: bool, record: usize) -> io::Result<Stdio> {
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
    fn flush(&mut self) -> io::Result<()> {
        let s = self.stream.as_ptr();
        // SAFETY: a valid stream and its descriptor.
        unsafe {
            if libc::fflush(s) != 0 || libc::fsync(libc::fileno(s)) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        // SAFETY: the stream is valid and closed once; fclose writes what the buffer holds.
        unsafe { libc::fclose(self.stream.as_ptr()) };
    }
}

/// preadv(2) / pwritev(2): each I/O is split into `iovecs` equal buffers, written or read in
/// one call at one offset (IOzone's pwritev/preadv tests use 16 records per call).
struct Pvsync {
    fds: Vec<RawFd>,
    iovecs: usize,
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
    fn flush(&mut self) -> io::Result<()> {
        fsync_fds(&self.fds)
    }
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
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// fsync(2) of each of a worker's descriptors.
fn fsync_fds(fds: &[RawFd]) -> io::Result<()> {
    for fd in fds {
        // SAFETY: plain syscall on an open descriptor.
        if unsafe { libc::fsync(*fd) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// pread(2) / pwrite(2).
struct Psync {
    fds: Vec<RawFd>,
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
    fn flush(&mut self) -> io::Result<()> {
        fsync_fds(&self.fds)
    }
}

/// A shared memory mapping of the worker's region; reads and writes copy.
struct Mmap {
    base: *mut u8,
    map_len: usize,
    /// File offset of `base` (the region's offset rounded down to a page).
    map_offset: u64,
}

// SAFETY: the mapping is owned by this value alone and used by one worker thread at a time;
// moving it to the worker's thread moves that ownership.
unsafe impl Send for Mmap {}

impl Mmap {
    fn new(file: &File, region: (u64, u64), writable: bool) -> io::Result<Mmap> {
        // SAFETY: sysconf has no memory-safety preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        let map_offset = region.0 / page * page;
        let map_len = (region.0 + region.1 - map_offset) as usize;
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a fresh mapping of a file we hold open; the kernel picks the address. The file
        // is at least region.0 + region.1 long (the worker sizes it before mapping).
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len.max(1),
                prot,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                map_offset as i64,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap {
            base: base as *mut u8,
            map_len,
            map_offset,
        })
    }
}

/// The mappings of a worker's files, one each.
struct Mmaps(Vec<Mmap>);

impl Backend for Mmaps {
    fn kind(&self) -> BackendKind {
        BackendKind::Mmap
    }
    #[inline]
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        let map = &self.0[unit.file as usize];
        map.copy(unit, pool)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.iter().try_for_each(Mmap::sync)
    }
}

impl Mmap {
    #[inline]
    fn copy(&self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        let at = (unit.offset - self.map_offset) as usize;
        if at + unit.len as usize > self.map_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "I/O outside the mapped region",
            ));
        }
        let buf = pool.ptr(unit.slot as usize);
        // SAFETY: `at + len` is inside the mapping (checked above) and the slot holds `len` bytes;
        // the two ranges cannot overlap (one is file-backed, one is the heap pool).
        unsafe {
            match unit.op {
                Op::Read => std::ptr::copy_nonoverlapping(self.base.add(at), buf, unit.len as usize),
                Op::Write => std::ptr::copy_nonoverlapping(buf, self.base.add(at), unit.len as usize),
            }
        }
        Ok(Queued::Completed(unit.len))
    }
    fn sync(&self) -> io::Result<()> {
        // SAFETY: msync of our own live mapping.
        if unsafe { libc::msync(self.base as *mut libc::c_void, self.map_len.max(1), libc::MS_SYNC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once; no reference into it outlives the back-end.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.map_len.max(1)) };
    }
}

/// io_uring with the worker's buffers registered (READ_FIXED / WRITE_FIXED), so the kernel
/// does not pin and unpin pages on every I/O.
struct Uring {
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
    fn new(fds: Vec<RawFd>, depth: u32, pool: &BufferPool) -> io::Result<Uring> {
        let entries = depth.max(1).next_power_of_two();
        // COOP_TASKRUN (Linux 5.19) lets completions wait for our next system call instead of
        // interrupting the worker with an IPI per completion; fall back to a plain ring on older
        // kernels.
        let ring = io_uring::IoUring::builder()
            .setup_coop_taskrun()
            .build(entries)
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

    fn flush(&mut self) -> io::Result<()> {
        // All I/O was reaped before a flush.
        fsync_fds(&self.fds)
    }
}
