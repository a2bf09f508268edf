//! A shared memory mapping of each of the worker's regions; reads and writes are copies.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use super::SyncCall;
use super::{Backend, IoUnit, Op, Queued};
use crate::data::BufferPool;
use crate::plan::BackendKind;

/// A shared memory mapping of the worker's region; reads and writes copy.
pub(super) struct Mmap {
    base: *mut u8,
    map_len: usize,
    /// File offset of `base` (the region's offset rounded down to a page).
    map_offset: u64,
}

// SAFETY: the mapping is owned by this value alone and used by one worker thread at a time;
// moving it to the worker's thread moves that ownership.
unsafe impl Send for Mmap {}

impl Mmap {
    pub(super) fn new(file: &File, region: (u64, u64), writable: bool) -> io::Result<Mmap> {
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
pub(super) struct Mmaps(pub(super) Vec<Mmap>);

impl Backend for Mmaps {
    fn kind(&self) -> BackendKind {
        BackendKind::Mmap
    }
    #[inline]
    fn queue(&mut self, unit: IoUnit, pool: &BufferPool) -> io::Result<Queued> {
        let map = &self.0[unit.file as usize];
        map.copy(unit, pool)
    }
    /// msync(2) of the mappings whatever the call: a mapping's pages reach the file only
    /// through it.
    fn flush(&mut self, _: SyncCall) -> io::Result<()> {
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
