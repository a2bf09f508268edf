//! The kinds of value job settings take that are more than a number: the back-end, the flush
//! policy, the data pattern, the block sizes. The settings (settings.rs) declare which setting
//! takes which; the plan (plan.rs) carries them to the engine.

use serde::{Deserialize, Serialize};

/// The I/O back-end a worker submits through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// pread/pwrite, one I/O at a time.
    Psync,
    /// Linux io_uring, any queue depth.
    IoUring,
    /// Memory-mapped files: reads and writes are copies to and from the mapping.
    Mmap,
    /// Moves no data: measures the engine itself.
    Null,
    /// fwrite/fread through a C stdio stream buffered one record deep (IOzone's -i 6/7).
    Stdio,
    /// preadv/pwritev: each I/O is `iovecs` equal buffers in one call (IOzone's -i 11/12).
    Pvsync,
    /// Linux AIO (io_submit/io_getevents), any queue depth: asynchronous with O_DIRECT, each
    /// I/O done inside io_submit on a buffered file (fio's libaio).
    Libaio,
}

impl BackendKind {
    /// Every back-end.
    pub const ALL: [BackendKind; 7] = [
        BackendKind::Psync,
        BackendKind::IoUring,
        BackendKind::Mmap,
        BackendKind::Null,
        BackendKind::Stdio,
        BackendKind::Pvsync,
        BackendKind::Libaio,
    ];

    /// The name used in job files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Psync => "psync",
            BackendKind::IoUring => "io_uring",
            BackendKind::Mmap => "mmap",
            BackendKind::Null => "null",
            BackendKind::Stdio => "stdio",
            BackendKind::Pvsync => "pvsync",
            BackendKind::Libaio => "libaio",
        }
    }

    /// Looks a back-end up by its name ("io-uring" and "uring" are accepted for io_uring).
    pub fn from_name(name: &str) -> Option<BackendKind> {
        match name {
            "io-uring" | "uring" => Some(BackendKind::IoUring),
            _ => BackendKind::ALL.into_iter().find(|k| k.name() == name),
        }
    }

    /// The deepest queue the back-end can keep in flight per worker.
    pub fn max_depth(self) -> u32 {
        match self {
            BackendKind::IoUring | BackendKind::Libaio => 4096,
            _ => 1,
        }
    }

    /// True for a back-end that keeps I/Os in flight and reaps them (io_uring, libaio);
    /// false for one whose call does the I/O.
    pub fn is_async(self) -> bool {
        self.max_depth() > 1
    }
}

/// When written data is flushed to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FsyncPolicy {
    /// Never (the page cache decides).
    None,
    /// After every N writes of a worker.
    Every(u32),
    /// Once, at the end of the phase.
    End,
}

/// What the written blocks contain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataPattern {
    /// Incompressible pseudo-random bytes, unique per block.
    Random,
    /// All zeros (compresses and deduplicates completely).
    Zeros,
    /// This percentage of each chunk (the setting `compress_chunk`) is zeros, after its random
    /// bytes.
    Compressible(u8),
    /// These bytes over and over from the start of each 4 KiB (fio's verify_pattern); with
    /// verification each 4 KiB still starts with storlab's header.
    Bytes(Vec<u8>),
}

impl DataPattern {
    /// Random data is made unique per block (so that deduplicating storage cannot flatter
    /// a result); zeros and a given pattern are written as they are.
    pub fn unique_per_block(&self) -> bool {
        matches!(self, DataPattern::Random | DataPattern::Compressible(_))
    }

    /// The pattern's bytes, when it is one.
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            DataPattern::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// The block sizes of a phase: one size or a weighted mix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockSizes {
    /// Every I/O has this size.
    Fixed(u64),
    /// (size, weight) pairs: each I/O picks a size with probability weight / sum of weights.
    Mix(Vec<(u64, u32)>),
}

impl BlockSizes {
    /// The largest block size.
    pub fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Mix(m) => m.iter().map(|(b, _)| *b).max().unwrap_or(0),
        }
    }
    /// The smallest block size.
    pub fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Mix(m) => m.iter().map(|(b, _)| *b).min().unwrap_or(0),
        }
    }
}
