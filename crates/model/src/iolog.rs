//! Every I/O of a worker, kept where a phase asks (`io_log`): fio's per-I/O logs
//! (`write_lat_log` and the others without `log_avg_msec`) are written from them.
//!
//! A record is 36 bytes, little-endian, packed one after the other and deflated: a run that
//! asked for every I/O stores a few bytes per I/O rather than a JSON object each.

use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

/// One I/O as the worker saw it complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IoRecord {
    /// When it completed, ns from the start of the phase.
    pub end_ns: u64,
    /// Its whole latency, ns (from its start, its scheduled start under a rate).
    pub lat_ns: u64,
    /// An asynchronous engine's submission latency, ns (fio's slat); 0 for a synchronous
    /// call's, whose whole latency is its completion latency.
    pub slat_ns: u64,
    /// Its offset in its file, bytes.
    pub offset: u64,
    /// Bytes moved.
    pub len: u32,
    /// A write (else a read).
    pub write: bool,
}

impl IoRecord {
    const SIZE: usize = 36;

    /// Its completion latency, ns (fio's clat): the whole for a synchronous call.
    pub fn clat_ns(&self) -> u64 {
        self.lat_ns.saturating_sub(self.slat_ns).max(1)
    }

    fn pack(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.end_ns.to_le_bytes());
        out.extend_from_slice(&self.lat_ns.to_le_bytes());
        out.extend_from_slice(&self.slat_ns.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        // The size's top bit carries the direction: a block is under 2 GiB.
        let len = self.len & 0x7fff_ffff | if self.write { 1 << 31 } else { 0 };
        out.extend_from_slice(&len.to_le_bytes());
    }

    fn unpack(b: &[u8]) -> IoRecord {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let len = u32::from_le_bytes(b[32..36].try_into().expect("4 bytes"));
        IoRecord {
            end_ns: u64_at(0),
            lat_ns: u64_at(8),
            slat_ns: u64_at(16),
            offset: u64_at(24),
            len: len & 0x7fff_ffff,
            write: len >> 31 == 1,
        }
    }
}

/// A worker's I/Os, packed and deflated (base64 in the result's JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IoLog {
    /// How many I/Os.
    pub count: u64,
    /// The records, deflated.
    #[serde(with = "crate::result::base64_one")]
    pub packed: Vec<u8>,
}

/// A worker's I/Os as they complete, packed as they come (36 bytes each, where a `Vec` of
/// [`IoRecord`]s would take 48 and a second copy to pack): a million I/Os a second for a minute
/// is 2.2 GB here, about what fio holds for the same log.
#[derive(Debug, Default)]
pub struct IoRecorder {
    raw: Vec<u8>,
}

impl IoRecorder {
    /// One I/O more.
    #[inline]
    pub fn push(&mut self, r: &IoRecord) {
        r.pack(&mut self.raw);
    }

    /// The I/Os so far, deflated (the packed bytes freed as they go).
    pub fn finish(self) -> IoLog {
        let count = (self.raw.len() / IoRecord::SIZE) as u64;
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        // Writing to a Vec cannot fail.
        let _ = z.write_all(&self.raw);
        drop(self.raw);
        IoLog {
            count,
            packed: z.finish().unwrap_or_default(),
        }
    }
}

impl IoLog {
    /// The records back; an error where the stored bytes do not hold `count` of them.
    pub fn records(&self) -> Result<Vec<IoRecord>, String> {
        let mut raw = Vec::new();
        flate2::read::DeflateDecoder::new(&self.packed[..])
            .read_to_end(&mut raw)
            .map_err(|e| format!("the stored I/O log does not inflate: {e}"))?;
        if raw.len() as u64 != self.count * IoRecord::SIZE as u64 {
            return Err(format!(
                "the stored I/O log holds {} bytes, not {} records of {}",
                raw.len(),
                self.count,
                IoRecord::SIZE
            ));
        }
        Ok(raw.chunks_exact(IoRecord::SIZE).map(IoRecord::unpack).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_back_as_kept() {
        let records: Vec<IoRecord> = (0..1000u64)
            .map(|i| IoRecord {
                end_ns: i * 1_000 + 7,
                lat_ns: 500 + i,
                slat_ns: i % 3,
                offset: i * 4096,
                len: 4096 + (i as u32 % 2) * 61440,
                write: i % 5 == 0,
            })
            .collect();
        let mut recorder = IoRecorder::default();
        records.iter().for_each(|r| recorder.push(r));
        let log = recorder.finish();
        assert!(
            log.packed.len() < records.len() * IoRecord::SIZE / 2,
            "{} bytes",
            log.packed.len()
        );
        let json = serde_json::to_string(&log).unwrap();
        let back: IoLog = serde_json::from_str(&json).unwrap();
        assert_eq!(back.records().unwrap(), records);
        let short = IoLog { count: 1001, ..log };
        assert!(short.records().unwrap_err().contains("not 1001 records"));
    }
}
