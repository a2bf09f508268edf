//! The block devices' counters in /proc/diskstats (Documentation/admin-guide/iostats.rst):
//! the parser (which reads no file, so that a test can hand it figures the kernel here will
//! never produce), the whole disk under a partition, and fio's disk utilisation of a phase —
//! the counters' change over it on the disks under its targets.

use std::fs;
use std::path::PathBuf;

use storlab_model::result::DiskUtil;

/// One line of /proc/diskstats: the device and its counters as the kernel prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskLine {
    /// Major device number.
    pub major: u32,
    /// Minor device number.
    pub minor: u32,
    /// The kernel's name (sda, md0, dm-1, loop3).
    pub name: String,
    /// The fields after the name, in the kernel's order: reads completed, reads merged,
    /// sectors read, ms reading, writes completed, writes merged, sectors written, ms writing,
    /// I/Os in flight, ms doing I/O, weighted ms (and, on newer kernels, discards and flushes,
    /// which storlab does not use).
    pub fields: [u64; 11],
}

/// Field positions in [`DiskLine::fields`].
pub mod field {
    /// Reads completed.
    pub const READS: usize = 0;
    /// Reads merged.
    pub const READS_MERGED: usize = 1;
    /// 512-byte sectors read.
    pub const SECTORS_READ: usize = 2;
    /// Milliseconds reading.
    pub const READ_MS: usize = 3;
    /// Writes completed.
    pub const WRITES: usize = 4;
    /// Writes merged.
    pub const WRITES_MERGED: usize = 5;
    /// 512-byte sectors written.
    pub const SECTORS_WRITTEN: usize = 6;
    /// Milliseconds writing.
    pub const WRITE_MS: usize = 7;
    /// I/Os in flight now (a gauge).
    pub const IN_FLIGHT: usize = 8;
    /// Milliseconds with I/O in flight.
    pub const BUSY_MS: usize = 9;
    /// Weighted milliseconds.
    pub const WEIGHTED_MS: usize = 10;
}

/// The lines of /proc/diskstats that parse (a line with fewer than 14 fields is skipped: the
/// format has had 14 fields since Linux 2.6).
pub fn parse_diskstats(text: &str) -> Vec<DiskLine> {
    text.lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            let major = w.next()?.parse().ok()?;
            let minor = w.next()?.parse().ok()?;
            let name = w.next()?.to_string();
            let mut fields = [0u64; 11];
            for f in fields.iter_mut() {
                *f = w.next()?.parse().ok()?;
            }
            Some(DiskLine {
                major,
                minor,
                name,
                fields,
            })
        })
        .collect()
}

/// The whole disk a device is part of: a partition's disk (vda for vda1, as fio reports it),
/// else the device itself.
pub fn disk_of(device: &str) -> String {
    let sys = PathBuf::from("/sys/class/block").join(device);
    if !sys.join("partition").exists() {
        return device.to_string();
    }
    fs::canonicalize(&sys)
        .ok()
        .and_then(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| device.to_string())
}

/// The lines of /proc/diskstats for `disks` (in their order; a disk the file lacks is left
/// out), and when they were read.
pub fn read(disks: &[String]) -> (Vec<DiskLine>, std::time::Instant) {
    let at = std::time::Instant::now();
    let all = fs::read_to_string("/proc/diskstats")
        .map(|t| parse_diskstats(&t))
        .unwrap_or_default();
    let lines = disks
        .iter()
        .filter_map(|d| all.iter().find(|l| &l.name == d).cloned())
        .collect();
    (lines, at)
}

/// fio's disk utilisation over an interval: each disk's counters after less before, its busy
/// time over the interval's length (the kernel's io_ticks; fio's `util`).
pub fn utilisation(before: &[DiskLine], after: &[DiskLine], elapsed_ms: f64) -> Vec<DiskUtil> {
    after
        .iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.name == a.name)?;
            let d = |i: usize| a.fields[i].wrapping_sub(b.fields[i]);
            Some(DiskUtil {
                name: a.name.clone(),
                read_ios: d(field::READS),
                write_ios: d(field::WRITES),
                read_merges: d(field::READS_MERGED),
                write_merges: d(field::WRITES_MERGED),
                read_sectors: d(field::SECTORS_READ),
                write_sectors: d(field::SECTORS_WRITTEN),
                read_ticks: d(field::READ_MS),
                write_ticks: d(field::WRITE_MS),
                in_queue: d(field::WEIGHTED_MS),
                io_ticks: d(field::BUSY_MS),
                elapsed_ms,
                under: None,
            })
        })
        .collect()
}
