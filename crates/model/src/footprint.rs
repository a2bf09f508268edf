//! What one worker of a phase holds while it runs — memory, a thread, file descriptors — so that
//! a run is held to what the machine has before a thread starts (fio sizes its shared memory
//! per job the same way, before forking). The engine's allocations counted in arithmetic: its
//! latency histograms' size follows from their bounds (the engine's tests hold its histograms
//! to [`histogram_bytes`]), its buffers from the depth and block size; a measured run holds
//! the whole to what a process really took (tests/cli.rs).

use crate::plan::{BackendKind, PhaseKind};
use crate::settings::PhaseSettings;

/// The longest latency the engine's histograms hold exactly: one hour, ns.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// The engine's histograms' significant digits (0.1 % resolution).
pub const LATENCY_DIGITS: u8 = 3;

/// Latency histograms a worker holds (engine worker.rs): the interval's two, the measured part's
/// two, the flushes' one (made at the first flush). An interval goes to the collector as its
/// recorded buckets, kilobytes.
const HISTOGRAMS: u64 = 5;

/// An asynchronous back-end's worker's submission and completion histograms (made at its first
/// I/O), per direction.
const ASYNC_HISTOGRAMS: u64 = 4;

/// What a thread costs beyond what the engine allocates: the part of its stack it touches, the
/// allocator's per-thread cache, the kernel's task and stack.
const THREAD_BYTES: u64 = 192 << 10;

/// One worker's share of a phase's needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Bytes of memory.
    pub memory: u64,
    /// Threads.
    pub threads: u64,
    /// File descriptors: its files, and an io_uring's ring.
    pub descriptors: u64,
}

impl Footprint {
    /// `n` of these.
    pub fn times(self, n: u64) -> Footprint {
        Footprint {
            memory: self.memory.saturating_mul(n),
            threads: self.threads.saturating_mul(n),
            descriptors: self.descriptors.saturating_mul(n),
        }
    }

    /// These and `o`'s, at once.
    pub fn plus(self, o: Footprint) -> Footprint {
        Footprint {
            memory: self.memory.saturating_add(o.memory),
            threads: self.threads.saturating_add(o.threads),
            descriptors: self.descriptors.saturating_add(o.descriptors),
        }
    }
}

/// The bytes of one of the engine's latency histograms: HdrHistogram's counts, 8 bytes each —
/// sub-buckets of 2 × 10^digits rounded up to a power of two, half of them per bucket beyond
/// the first, and buckets until the largest value is covered.
pub fn histogram_bytes() -> u64 {
    let sub_buckets = (2 * 10u64.pow(LATENCY_DIGITS as u32)).next_power_of_two();
    let mut covered = sub_buckets;
    let mut buckets = 1;
    while covered < MAX_LATENCY_NS {
        covered <<= 1;
        buckets += 1;
    }
    (buckets + 1) * (sub_buckets / 2) * 8
}

/// What each worker of a phase of `kind` with settings `s` needs, whose region is `region`
/// bytes long.
pub fn per_worker(kind: PhaseKind, s: &PhaseSettings, region: u64) -> Footprint {
    let slot = s.bs.max().max(1).div_ceil(4096) * 4096;
    let buffers = u64::from(s.iodepth.max(1)).saturating_mul(slot);
    let histograms =
        HISTOGRAMS + if s.engine.is_async() { ASYNC_HISTOGRAMS } else { 0 } + if s.interval_histograms { 2 } else { 0 };
    // fio's random map: a bit per block of the worker's region, and a summary bit per 64.
    let random = matches!(kind, PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw);
    let blocks = region / s.bs.min().max(1);
    let map = if random && s.random_map {
        blocks / 8 + blocks / 512
    } else {
        0
    };
    Footprint {
        memory: THREAD_BYTES + histograms * histogram_bytes() + buffers + map,
        threads: 1,
        descriptors: u64::from(s.nrfiles.max(1)) + u64::from(s.engine == BackendKind::IoUring),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_of_an_hour_at_three_digits_is_33_buckets_of_1024() {
        // 2,048 sub-buckets cover up to 2,048 ns; 31 doublings more reach an hour.
        assert_eq!(histogram_bytes(), 33 * 1024 * 8);
    }
}
