//! A job's log sent to fio's client (`FIO_NET_CMD_IOLOG`, server.c `fio_send_iolog`): a
//! 288-byte header (`cmd_iolog_pdu`: samples, thread, log type, compression, whether the
//! samples carry offsets and priorities, the histogram's coarseness, the log's file name), then
//! fio's `io_sample`s — each followed by its 1,856 latency buckets for a histogram log — raw, or
//! as one zlib stream (`XMIT_COMPRESSED`), or the file's bytes as the job compressed them
//! (`STORE_COMPRESSED`). fio's client writes each as the file `NAME.HOST` in its log format
//! (iolog.c `flush_samples`, client.c `client_flush_hist_samples`), as [`IoLog::text`] does.

use std::io::Read;

use crate::codec::{Put, Take};
use crate::stat::PLAT_NR;

/// fio's `IO_LOG_TYPE_HIST`.
pub const LOG_TYPE_HIST: u32 = 6;
/// fio's `XMIT_COMPRESSED`: the samples are one zlib stream.
const XMIT_COMPRESSED: u32 = 1;
/// fio's `STORE_COMPRESSED`: the file's bytes, compressed as the job asked; written as sent.
const STORE_COMPRESSED: u32 = 2;
/// The bits of `__ddir` that say the sample has an offset, a priority of fio's form.
const OFFSET_BIT: u32 = 0x8000_0000;
/// See [`OFFSET_BIT`].
const PRIO_BIT: u32 = 0x4000_0000;
const HEADER: usize = 288;
/// `struct io_u_plat_entry` after each histogram sample: a list head, then the buckets.
const PLAT_ENTRY: usize = 16 + PLAT_NR * 8;

// Each field is fio's of the same name (iolog.h's io_sample).
#[allow(missing_docs)]
/// One line of a log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sample {
    /// ms since the job started.
    pub time: u64,
    /// The value (a latency in ns, a rate); none for a histogram sample.
    pub value: i64,
    pub ddir: u32,
    pub bs: u64,
    /// The I/O's offset, where the log keeps offsets.
    pub offset: u64,
    pub priority: u16,
    /// A histogram sample's buckets (empty for other logs).
    pub plat: Vec<u64>,
}

// Each field is fio's of the same name (server.h's cmd_iolog_pdu).
#[allow(missing_docs)]
/// A log as its server sent it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IoLog {
    pub thread_number: u32,
    pub log_type: u32,
    /// Each sample has an offset (fio's log_offset).
    pub offset: bool,
    /// Priorities in fio's 0x form (log_prio).
    pub prio: bool,
    pub hist_coarseness: u32,
    /// The log's file name on the server.
    pub name: String,
    pub samples: Vec<Sample>,
    /// A log the job stored compressed: its bytes, written as they came.
    pub stored: Option<Vec<u8>>,
}

impl IoLog {
    fn sample_len(&self) -> usize {
        32 + if self.offset { 8 } else { 0 } + if self.log_type == LOG_TYPE_HIST { PLAT_ENTRY } else { 0 }
    }

    /// The payload, uncompressed (fio's client takes it so from a server that did not agree
    /// to compress).
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u64(self.samples.len() as u64);
        p.u32(self.thread_number);
        p.u32(self.log_type);
        p.u32(0);
        p.u32(u32::from(self.offset));
        p.u32(u32::from(self.prio));
        p.u32(self.hist_coarseness);
        p.text(&self.name, 256);
        let flags = if self.offset { OFFSET_BIT } else { 0 } | if self.prio { PRIO_BIT } else { 0 };
        for s in &self.samples {
            p.u64(s.time);
            p.u64(s.value as u64);
            p.u32(s.ddir | flags);
            p.u16(s.priority);
            p.zeros(2);
            p.u64(s.bs);
            if self.offset {
                p.u64(s.offset);
            }
            if self.log_type == LOG_TYPE_HIST {
                p.zeros(16);
                let mut plat = s.plat.clone();
                plat.resize(PLAT_NR, 0);
                plat.iter().for_each(|&v| p.u64(v));
            }
        }
        p.0
    }

    /// A payload read; None where it is short or its compressed samples do not inflate.
    pub fn decode(b: &[u8]) -> Option<IoLog> {
        let mut t = Take::new(b);
        let n = t.u64() as usize;
        let mut log = IoLog {
            thread_number: t.u32(),
            log_type: t.u32(),
            ..Default::default()
        };
        let compressed = t.u32();
        log.offset = t.u32() != 0;
        log.prio = t.u32() != 0;
        log.hist_coarseness = t.u32();
        log.name = t.text(256);
        if t.short {
            return None;
        }
        let body = &b[HEADER.min(b.len())..];
        let raw = match compressed {
            STORE_COMPRESSED => {
                log.stored = Some(body.to_vec());
                return Some(log);
            }
            XMIT_COMPRESSED => {
                // fio's server may end its stream short (its last deflate can write past the
                // chunk it already queued), and fio's client keeps what inflated: so here.
                let mut out = Vec::new();
                let _short = flate2::read::ZlibDecoder::new(body).read_to_end(&mut out);
                out
            }
            _ => body.to_vec(),
        };
        // fio's server leaves the header's log_offset and log_prio at 0: the first sample's
        // direction carries them, as fio's client reads them.
        if let Some(d) = raw.get(16..20) {
            let ddir = u32::from_le_bytes(d.try_into().ok()?);
            log.offset |= ddir & OFFSET_BIT != 0;
            log.prio |= ddir & PRIO_BIT != 0;
        }
        // Whole samples only, where a stream came short.
        let len = log.sample_len();
        log.samples = raw.chunks_exact(len).take(n).map(|c| log.sample(c)).collect();
        Some(log)
    }

    fn sample(&self, c: &[u8]) -> Sample {
        let mut t = Take::new(c);
        let mut s = Sample {
            time: t.u64(),
            value: t.u64() as i64,
            ddir: t.u32() & !(OFFSET_BIT | PRIO_BIT),
            priority: t.u16(),
            ..Default::default()
        };
        t.bytes(2);
        s.bs = t.u64();
        if self.offset {
            s.offset = t.u64();
        }
        if self.log_type == LOG_TYPE_HIST {
            t.bytes(16);
            s.plat = (0..PLAT_NR).map(|_| t.u64()).collect();
        }
        s
    }

    /// The log file fio's client writes of it (its bytes as stored, for a compressed one).
    pub fn file(&self) -> Vec<u8> {
        match &self.stored {
            Some(bytes) => bytes.clone(),
            None => self.text().into_bytes(),
        }
    }

    /// The lines fio writes: `time, value, ddir, bs[, offset], prio` (the priority in hex
    /// with log_prio, else whether it is a real-time one), or for a histogram `time, ddir, bs,`
    /// and its buckets summed in runs of 2^coarseness.
    fn text(&self) -> String {
        let mut out = String::new();
        for s in &self.samples {
            if self.log_type == LOG_TYPE_HIST {
                let stride = 1usize << self.hist_coarseness.min(10);
                let sums: Vec<String> = s
                    .plat
                    .chunks(stride)
                    .map(|c| c.iter().sum::<u64>().to_string())
                    .collect();
                out += &format!("{}, {}, {}, {}\n", s.time, s.ddir, s.bs, sums.join(", "));
                continue;
            }
            let prio = if self.prio {
                format!("0x{:04x}", s.priority)
            } else {
                // fio's ioprio_value_is_class_rt: class 1 (IOPRIO_CLASS_RT) in the top bits.
                u16::from(s.priority >> 13 == 1).to_string()
            };
            match self.offset {
                true => out += &format!("{}, {}, {}, {}, {}, {prio}\n", s.time, s.value, s.ddir, s.bs, s.offset),
                false => out += &format!("{}, {}, {}, {}, {prio}\n", s.time, s.value, s.ddir, s.bs),
            }
        }
        out
    }

    /// A log file's lines read back into samples (what a storlab server sends for the logs
    /// it wrote): `name` the file's, its type from fio's suffix, a histogram's coarseness from
    /// its columns. None for lines that are not fio's.
    pub fn of_text(name: &str, text: &str, thread_number: u32) -> Option<IoLog> {
        let log_type = log_type_of(name)?;
        let columns = text
            .lines()
            .next()
            .map_or(PLAT_NR, |l| l.split(',').count().saturating_sub(3));
        let stride = PLAT_NR / columns.max(1);
        let mut log = IoLog {
            thread_number,
            log_type,
            hist_coarseness: if log_type == LOG_TYPE_HIST {
                stride.trailing_zeros()
            } else {
                0
            },
            name: name.to_string(),
            ..Default::default()
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            let sample = log.sample_of(&f)?;
            log.samples.push(sample);
        }
        Some(log)
    }

    fn sample_of(&mut self, f: &[&str]) -> Option<Sample> {
        let num = |s: &str| s.parse::<u64>().ok();
        if self.log_type == LOG_TYPE_HIST {
            let stride = 1usize << self.hist_coarseness.min(10);
            let mut plat = vec![0u64; PLAT_NR];
            for (k, v) in f.get(3..)?.iter().enumerate() {
                *plat.get_mut(k * stride)? = num(v)?;
            }
            return Some(Sample {
                time: num(f.first()?)?,
                ddir: num(f.get(1)?)? as u32,
                bs: num(f.get(2)?)?,
                plat,
                ..Default::default()
            });
        }
        self.offset = f.len() >= 6;
        let prio = f.last()?;
        self.prio |= prio.starts_with("0x");
        let priority = match prio.strip_prefix("0x") {
            Some(hex) => u16::from_str_radix(hex, 16).ok()?,
            // A real-time I/O's flag back as its class (fio prints only whether it is one).
            None => (num(prio)? as u16) << 13,
        };
        Some(Sample {
            time: num(f.first()?)?,
            value: f.get(1)?.parse().ok()?,
            ddir: num(f.get(2)?)? as u32,
            bs: num(f.get(3)?)?,
            offset: if self.offset { num(f.get(4)?)? } else { 0 },
            priority,
            plat: Vec::new(),
        })
    }
}

/// fio's log type of a log file by its name (`JOB_lat.1.log`, `JOB_clat_hist.1.log`, …).
fn log_type_of(name: &str) -> Option<u32> {
    let stem = name.rsplit('/').next().unwrap_or(name);
    // fio's IO_LOG_TYPE_*: LAT 1, CLAT 2, SLAT 3, BW 4, IOPS 5, HIST 6.
    let kinds = [
        ("_clat_hist.", 6),
        ("_clat.", 2),
        ("_slat.", 3),
        ("_lat.", 1),
        ("_bw.", 4),
        ("_iops.", 5),
    ];
    kinds.iter().find(|(k, _)| stem.contains(k)).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_goes_and_comes_back_and_writes_the_lines_it_was_read_from() {
        let text = "10, 2048, 0, 4096, 0\n20, 4096, 1, 4096, 0\n";
        let log = IoLog::of_text("job_lat.1.log", text, 1).unwrap();
        let back = IoLog::decode(&log.encode()).unwrap();
        assert_eq!(back, log);
        assert_eq!(back.text(), text);
        let offsets = "5, 100, 0, 4096, 8192, 0x0000\n";
        let log = IoLog::of_text("j_clat.2.log", offsets, 2).unwrap();
        assert!(log.offset && log.prio);
        assert_eq!(IoLog::decode(&log.encode()).unwrap().text(), offsets);
        let columns: Vec<String> = (0..PLAT_NR / 4).map(|i| (i % 3).to_string()).collect();
        let hist = format!("500, 0, 4096, {}\n", columns.join(", "));
        let log = IoLog::of_text("j_clat_hist.1.log", &hist, 1).unwrap();
        assert_eq!(log.hist_coarseness, 2);
        assert_eq!(IoLog::decode(&log.encode()).unwrap().text(), hist);
    }
}
