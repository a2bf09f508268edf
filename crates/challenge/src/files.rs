//! One file's write and read. A file is written sequentially in requests of the challenge's
//! size, every 4 KiB stamped with storlab's verification header (crates/engine's `data::stamp`:
//! checksum, offset, the file's seed, generation 1); a read checks every 4 KiB and names the
//! first that fails. Bytes are counted into the pool's counter as each request completes, so
//! the samples see a 2 GB file's progress, not its end.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use storlab_engine::data::{fill_pattern, stamp, verify};
use storlab_engine::plan::{DataPattern, GenerationRange};

/// Every challenge file is generation 1: a block from another file, or another challenge,
/// fails on its seed or offset.
const GENERATION: u32 = 1;

/// A worker's buffer: random data (so that compressing or deduplicating storage cannot flatter
/// the figures), stamped afresh for each request.
pub struct Buffer {
    /// `len` bytes from `start` are the buffer; the rest is slack that lets `start` sit on a
    /// 4 KiB boundary, as O_DIRECT needs.
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

/// O_DIRECT's alignment for buffers (the largest logical block size storlab meets).
const ALIGN: usize = 4096;

impl Buffer {
    /// A buffer of `bs` bytes of random data from `seed`, aligned to 4 KiB.
    pub fn new(bs: u64, seed: u64) -> Buffer {
        let len = bs as usize;
        let mut raw = vec![0u8; len + ALIGN];
        let start = raw.as_ptr().align_offset(ALIGN);
        fill_pattern(
            &mut raw[start..start + len],
            &DataPattern::Random,
            0,
            &mut SmallRng::seed_from_u64(seed),
        );
        Buffer { raw, start, len }
    }

    fn slice(&mut self, n: usize) -> &mut [u8] {
        &mut self.raw[self.start..self.start + n.min(self.len)]
    }
}

/// Opens for writing (created, truncated) or reading; with `direct`, past the page cache.
fn open(path: &Path, write: bool, direct: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    if write {
        o.write(true).create(true).truncate(true);
    } else {
        o.read(true);
    }
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Checks that `dir` takes O_DIRECT, with a probe file of storlab's own that is removed again.
pub fn probe_direct(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".storlab-direct-probe-{}", std::process::id()));
    let r = open(&probe, true, true).and_then(|mut f| {
        let mut b = Buffer::new(ALIGN as u64, 0);
        f.write_all(b.slice(ALIGN))
    });
    let _ = std::fs::remove_file(&probe);
    r
}

/// Why a file operation ended early.
#[derive(Debug)]
pub enum Stop {
    /// The process is stopping (Ctrl-C).
    Interrupted,
    /// An I/O error.
    Io(std::io::Error),
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Stop {
        Stop::Io(e)
    }
}

/// Writes `size` bytes to a new file at `path` (replacing a partial one), counting bytes into
/// `counter`; stops between requests when `interrupt` is set.
pub fn write(
    path: &Path,
    size: u64,
    buf: &mut Buffer,
    seed: u64,
    counter: &AtomicU64,
    interrupt: &AtomicBool,
    direct: bool,
) -> Result<(), Stop> {
    let mut f = open(path, true, direct)?;
    let bs = buf.len as u64;
    let mut offset = 0;
    while offset < size {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Stop::Interrupted);
        }
        let n = bs.min(size - offset) as usize;
        let chunk = buf.slice(n);
        stamp(chunk, offset, seed, GENERATION);
        f.write_all(chunk)?;
        counter.fetch_add(n as u64, Ordering::Relaxed);
        offset += n as u64;
    }
    // The file is closed (and its data handed to the filesystem) before the catalogue says
    // written; no fsync, as the seed's writers used none (the figures are the pools' under a
    // page cache, as in production).
    drop(f);
    Ok(())
}

/// Reads the file at `path` whole, checking every 4 KiB; returns the first bad block (offset
/// and reason) or None when all verified.
pub fn read_verify(
    path: &Path,
    size: u64,
    buf: &mut Buffer,
    seed: u64,
    counter: &AtomicU64,
    interrupt: &AtomicBool,
    direct: bool,
) -> Result<Option<String>, Stop> {
    let mut f = open(path, false, direct)?;
    let bs = buf.len as u64;
    let mut offset = 0;
    let mut first_bad: Option<String> = None;
    while offset < size {
        if interrupt.load(Ordering::Relaxed) {
            return Err(Stop::Interrupted);
        }
        let n = bs.min(size - offset) as usize;
        let chunk = buf.slice(n);
        let mut got = 0;
        while got < n {
            match f.read(&mut chunk[got..])? {
                0 => {
                    return Ok(Some(first_bad.unwrap_or_else(|| {
                        format!("short: the file ends at byte {} of {size}", offset + got as u64)
                    })))
                }
                k => got += k,
            }
        }
        counter.fetch_add(n as u64, Ordering::Relaxed);
        if first_bad.is_none() {
            verify(
                chunk,
                offset,
                seed,
                GenerationRange {
                    min: GENERATION,
                    max: GENERATION,
                },
                None,
                |at, why| {
                    if first_bad.is_none() {
                        first_bad = Some(format!("block at byte {at}: {why}"));
                    }
                },
            );
        }
        offset += n as u64;
    }
    Ok(first_bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_verifies_and_a_changed_block_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f1");
        let (n, stop) = (AtomicU64::new(0), AtomicBool::new(false));
        let mut buf = Buffer::new(64 * 1024, 1);
        write(&path, 1 << 20, &mut buf, 77, &n, &stop, false).unwrap();
        assert_eq!(n.load(Ordering::Relaxed), 1 << 20);
        assert_eq!(
            read_verify(&path, 1 << 20, &mut buf, 77, &n, &stop, false).unwrap(),
            None
        );
        // Another file's seed, then a changed byte at 300 KiB.
        let wrong = read_verify(&path, 1 << 20, &mut buf, 78, &n, &stop, false)
            .unwrap()
            .unwrap();
        assert!(wrong.starts_with("block at byte 0:"), "{wrong}");
        let mut data = std::fs::read(&path).unwrap();
        data[300 * 1024 + 100] ^= 1;
        std::fs::write(&path, &data).unwrap();
        let bad = read_verify(&path, 1 << 20, &mut buf, 77, &n, &stop, false)
            .unwrap()
            .unwrap();
        assert!(bad.starts_with(&format!("block at byte {}:", 300 * 1024)), "{bad}");
        std::fs::write(&path, &data[..4096]).unwrap();
        let short = read_verify(&path, 1 << 20, &mut buf, 77, &n, &stop, false)
            .unwrap()
            .unwrap();
        assert!(short.contains("short"), "{short}");
    }
}
