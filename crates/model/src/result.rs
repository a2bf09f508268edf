//! What a phase produced: totals, throughput-mode figures, latency, samples, rate and
//! verification reports.

use serde::{Deserialize, Serialize};

/// Latency figures in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// I/Os recorded.
    pub count: u64,
    /// Smallest.
    pub min_ns: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Largest.
    pub max_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p99_9_ns: u64,
    /// 99.99th percentile.
    pub p99_99_ns: u64,
}

/// One worker's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// The worker's file.
    pub file: String,
    /// Bytes moved.
    pub bytes: u64,
    /// I/Os done.
    pub ops: u64,
    /// Seconds from the start of measurement to the worker's end (including a timed flush).
    pub seconds: f64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// CPU time in user mode, seconds.
    pub cpu_user: f64,
    /// CPU time in the kernel, seconds.
    pub cpu_sys: f64,
    /// Seconds it was ready to run but waited for a CPU (the scheduler's run delay).
    #[serde(default)]
    pub cpu_wait: f64,
    /// Seconds spent in flushes.
    pub flush_seconds: f64,
    /// Context switches, voluntary and not (getrusage's ru_nvcsw + ru_nivcsw; fio's ctx).
    #[serde(default)]
    pub ctx: u64,
    /// Page faults that needed I/O (ru_majflt; fio's majf).
    #[serde(default)]
    pub majf: u64,
    /// Page faults that did not (ru_minflt; fio's minf).
    #[serde(default)]
    pub minf: u64,
    /// The worker's own interval samples, kept where the phase asked (`worker_samples`: fio's
    /// per-job logs of a job of several workers are written from them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<WorkerSample>,
    /// The worker's own totals, latency histograms and queue depths, kept where the phase
    /// asked (`worker_samples`): `storlab fio` reports each clone of a job without
    /// group_reporting as a job of its own from them, as fio does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own: Option<Box<WorkerFigures>>,
    /// The worker's completion latency histogram of each interval, kept where the phase asked
    /// (`interval_histograms`): fio's histogram log (`write_hist_log`) is written from them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interval_histograms: Vec<IntervalHistograms>,
    /// Every I/O of its measured part, kept where the phase asked (`io_log`): fio's per-I/O
    /// logs are written from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_log: Option<crate::iolog::IoLog>,
    /// Emulated zones it reset because a write found them full (`zbd`; fio's zone resets).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub zone_resets: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One worker's completion latencies over one of its intervals, per direction (see
/// [`WorkerResult::interval_histograms`]): HdrHistogram V2 deflate encodings, base64 in the
/// JSON, empty where no I/O of that direction completed. The completion latency is fio's clat:
/// from submission to completion for an asynchronous engine, the whole call for a synchronous.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalHistograms {
    /// End of the interval, seconds from the start of the phase (its sample's `t_end`).
    pub t_end: f64,
    /// Its length, seconds.
    pub seconds: f64,
    /// True when the interval lies (partly) in the ramp.
    pub ramp: bool,
    /// Reads' and writes' completion latency.
    #[serde(with = "base64_pair")]
    pub clat: [Vec<u8>; 2],
}

/// What one worker measured over its measured part, as the phase's result holds it for all of
/// them (see [`WorkerResult::own`]). The histograms are HdrHistogram V2 deflate encodings, as
/// the phase's, written in the result's JSON as base64; empty where nothing was measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerFigures {
    /// Bytes read and written.
    pub bytes: [u64; 2],
    /// Reads and writes done.
    pub ops: [u64; 2],
    /// Reads' and writes' latency.
    #[serde(with = "base64_pair")]
    pub histograms_rw: [Vec<u8>; 2],
    /// The flushes' latency (fio's sync latency).
    #[serde(default, with = "base64_one", skip_serializing_if = "Vec::is_empty")]
    pub histogram_sync: Vec<u8>,
    /// An asynchronous back-end's submission latency per direction (fio's slat).
    #[serde(default, with = "base64_pair")]
    pub histograms_slat: [Vec<u8>; 2],
    /// Its completion latency per direction (fio's clat).
    #[serde(default, with = "base64_pair")]
    pub histograms_clat: [Vec<u8>; 2],
    /// Under a rate, its latency from each I/O's issue (see [`PhaseResult::histograms_issued`]).
    #[serde(default, with = "base64_pair", skip_serializing_if = "none_in_pair")]
    pub histograms_issued: [Vec<u8>; 2],
    /// Its latencies' exact figures (see [`PhaseResult::moments`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moments: Option<crate::moments::LatencyMoments>,
    /// Its queue depths and calls.
    pub io_depths: IoDepths,
}

/// A histogram's bytes as one base64 string in JSON (a JSON array of numbers would be four
/// times the size).
pub(crate) mod base64_one {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(serde::de::Error::custom)
    }
}

/// A pair of histograms (reads', writes') as two base64 strings.
mod base64_pair {
    use base64::Engine;
    use serde::{ser::SerializeTuple, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(pair: &[Vec<u8>; 2], s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        for bytes in pair {
            t.serialize_element(&base64::engine::general_purpose::STANDARD.encode(bytes))?;
        }
        t.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[Vec<u8>; 2], D::Error> {
        let [a, b] = <[String; 2]>::deserialize(d)?;
        let decode = |t: String| {
            base64::engine::general_purpose::STANDARD
                .decode(t)
                .map_err(serde::de::Error::custom)
        };
        Ok([decode(a)?, decode(b)?])
    }
}

/// Whether a pair of histograms holds none (left out of a document).
fn none_in_pair(pair: &[Vec<u8>; 2]) -> bool {
    pair.iter().all(Vec::is_empty)
}

/// One worker's share of an interval (see [`WorkerResult::samples`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerSample {
    /// Start of the interval, seconds from the start of the phase.
    pub t_start: f64,
    /// End of the worker's part of the interval, seconds from the start of the phase.
    pub t_end: f64,
    /// True when the interval lies (partly) in the ramp.
    pub ramp: bool,
    /// Bytes read in the interval.
    pub bytes_read: u64,
    /// Bytes written in the interval.
    pub bytes_written: u64,
    /// Reads completed.
    pub ops_read: u64,
    /// Writes completed.
    pub ops_written: u64,
    /// Mean latency of the interval's reads, ns; none where none completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_mean_read_ns: Option<f64>,
    /// Mean latency of the interval's writes, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_mean_write_ns: Option<f64>,
    /// An asynchronous engine's mean submission latency (fio's slat) of the interval's reads
    /// and writes, ns; none for a synchronous engine, or where none completed.
    #[serde(default, skip_serializing_if = "no_means")]
    pub slat_mean_ns: [Option<f64>; 2],
    /// Its mean completion latency (fio's clat), from submission to completion, ns.
    #[serde(default, skip_serializing_if = "no_means")]
    pub clat_mean_ns: [Option<f64>; 2],
}

fn no_means(m: &[Option<f64>; 2]) -> bool {
    m.iter().all(Option::is_none)
}

/// The slowest and the fastest worker's throughput, bytes/s (∞ and 0 without workers).
pub fn worker_spread(workers: &[WorkerResult]) -> (f64, f64) {
    (
        workers.iter().map(|w| w.bytes_per_sec).fold(f64::INFINITY, f64::min),
        workers.iter().map(|w| w.bytes_per_sec).fold(0.0, f64::max),
    )
}

/// Aggregate throughput over a span of time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Seconds.
    pub seconds: f64,
    /// Bytes moved by all workers in that time.
    pub bytes: u64,
    /// I/Os done by all workers in that time.
    pub ops: u64,
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// I/Os per second.
    pub iops: f64,
}

impl Throughput {
    /// Throughput of `bytes` and `ops` over `seconds`.
    pub fn new(seconds: f64, bytes: u64, ops: u64) -> Throughput {
        let s = seconds.max(1e-9);
        Throughput {
            seconds,
            bytes,
            ops,
            bytes_per_sec: bytes as f64 / s,
            iops: ops as f64 / s,
        }
    }
}

/// How a rate-limited phase kept to its rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateReport {
    /// The target, in the target's unit (IOPS or bytes/s), for all workers together.
    pub target: f64,
    /// The target's unit.
    pub unit: RateUnit,
    /// What was achieved over the measured time, same unit.
    pub achieved: f64,
    /// I/Os that started later than the late threshold after their scheduled time.
    pub late_ios: u64,
    /// The late threshold, nanoseconds.
    pub late_after_ns: u64,
}

/// The unit of a target rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RateUnit {
    /// I/Os per second.
    #[serde(rename = "iops", alias = "IOPS")]
    Iops,
    /// Bytes per second (studies stored before units were typed say "MiB/s": the held-rate
    /// analysis shows a bandwidth target in MiB/s).
    #[serde(rename = "bytes/s", alias = "MiB/s")]
    BytesPerSec,
}

/// A block that failed verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadBlock {
    /// The file.
    pub file: String,
    /// The offset of the 4 KiB block.
    pub offset: u64,
    /// What was wrong.
    pub reason: BadReason,
}

/// What verification found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// 4 KiB blocks checked.
    pub blocks_checked: u64,
    /// Blocks that failed.
    pub bad_blocks: u64,
    /// The failed blocks, each named (at most [`MAX_BAD_LISTED`] per worker).
    pub bad: Vec<BadBlock>,
    /// Blocks intact (header, checksum and offset agree) but written by another run: data
    /// from before this job's first write, read with another seed. Not corruption.
    #[serde(default)]
    pub foreign_blocks: u64,
    /// Those blocks by the seed that wrote them (at most [`MAX_FOREIGN_SEEDS`] seeds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign: Vec<ForeignSeed>,
}

/// How many other runs' seeds a verification names.
pub const MAX_FOREIGN_SEEDS: usize = 16;

/// Intact blocks of one other run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignSeed {
    /// The seed in their headers.
    pub seed: u64,
    /// How many.
    pub blocks: u64,
}

impl VerifyReport {
    /// Counts an intact block of another run's, by its seed.
    pub fn add_foreign(&mut self, seed: u64, blocks: u64) {
        self.foreign_blocks += blocks;
        if let Some(f) = self.foreign.iter_mut().find(|f| f.seed == seed) {
            f.blocks += blocks;
        } else if self.foreign.len() < MAX_FOREIGN_SEEDS {
            self.foreign.push(ForeignSeed { seed, blocks });
        }
    }

    /// Adds another worker's report.
    pub fn merge(&mut self, o: VerifyReport) {
        self.blocks_checked += o.blocks_checked;
        self.bad_blocks += o.bad_blocks;
        self.bad.extend(o.bad);
        let listed: u64 = o.foreign.iter().map(|f| f.blocks).sum();
        for f in o.foreign {
            self.add_foreign(f.seed, f.blocks);
        }
        // Blocks of seeds past the list's end are counted all the same.
        self.foreign_blocks += o.foreign_blocks - listed;
    }
}

/// How many bad blocks each worker lists by name (all are counted).
pub const MAX_BAD_LISTED: usize = 1000;

/// One interval of the phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Index of the interval from the start of the phase (ramp included).
    pub index: u32,
    /// Start of the interval, seconds from the start of the phase.
    pub t_start: f64,
    /// End of the interval, seconds from the start of the phase.
    pub t_end: f64,
    /// True when the interval lies (partly) in the ramp, whose I/O is excluded from results.
    pub ramp: bool,
    /// Bytes read in the interval.
    pub bytes_read: u64,
    /// Bytes written in the interval.
    pub bytes_written: u64,
    /// Reads completed.
    pub ops_read: u64,
    /// Writes completed.
    pub ops_written: u64,
    /// Latency median, ns.
    pub lat_p50_ns: u64,
    /// 90th percentile, ns.
    pub lat_p90_ns: u64,
    /// 99th percentile, ns.
    pub lat_p99_ns: u64,
    /// 99.9th percentile, ns.
    pub lat_p99_9_ns: u64,
    /// Largest, ns.
    pub lat_max_ns: u64,
    /// I/Os issued late in the interval (rate-limited phases).
    pub late_ios: u64,
    /// Mean latency of the interval's reads, ns (fio's latency log); none where none completed
    /// (or stored before storlab kept it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_mean_read_ns: Option<f64>,
    /// Mean latency of the interval's writes, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_mean_write_ns: Option<f64>,
    /// The same interval per target, when the phase ran on more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetSample>,
}

impl Sample {
    /// The interval's length, seconds.
    pub fn seconds(&self) -> f64 {
        self.t_end - self.t_start
    }

    /// True when the interval is a sliver of the phase's usual one (under half of `nominal`):
    /// a phase's last interval often is (0.5 ms holding 2 I/Os), and its rate over so short a
    /// time says little.
    pub fn is_partial(&self, nominal: f64) -> bool {
        nominal > 0.0 && self.seconds() < nominal / 2.0
    }
}

/// A phase's usual interval length: the median of its samples' lengths (None without samples).
pub fn nominal_interval(samples: &[Sample]) -> Option<f64> {
    let mut lengths: Vec<f64> = samples.iter().map(Sample::seconds).collect();
    if lengths.is_empty() {
        return None;
    }
    lengths.sort_by(f64::total_cmp);
    Some(lengths[lengths.len() / 2])
}

/// The samples as they are drawn: each partial interval merged into the one before it (bytes,
/// operations and time summed, so the rate is the two's together; the latency percentiles
/// the larger of the two), never drawn as a collapse in throughput that did not happen. A
/// partial first interval, with nothing before it, stays as it is.
pub fn merge_partial(samples: &[Sample]) -> Vec<Sample> {
    let Some(nominal) = nominal_interval(samples) else {
        return Vec::new();
    };
    let mut out: Vec<Sample> = Vec::with_capacity(samples.len());
    for s in samples {
        match out.last_mut() {
            Some(prev) if s.is_partial(nominal) && prev.ramp == s.ramp => {
                // The means weighed by their I/Os, before the counts are added.
                let weigh = |a: Option<f64>, na: u64, b: Option<f64>, nb: u64| match (a, b) {
                    (Some(a), Some(b)) => Some((a * na as f64 + b * nb as f64) / (na + nb) as f64),
                    (a, b) => a.or(b),
                };
                prev.lat_mean_read_ns = weigh(prev.lat_mean_read_ns, prev.ops_read, s.lat_mean_read_ns, s.ops_read);
                prev.lat_mean_write_ns = weigh(
                    prev.lat_mean_write_ns,
                    prev.ops_written,
                    s.lat_mean_write_ns,
                    s.ops_written,
                );
                prev.t_end = s.t_end;
                prev.bytes_read += s.bytes_read;
                prev.bytes_written += s.bytes_written;
                prev.ops_read += s.ops_read;
                prev.ops_written += s.ops_written;
                prev.late_ios += s.late_ios;
                prev.lat_p50_ns = prev.lat_p50_ns.max(s.lat_p50_ns);
                prev.lat_p90_ns = prev.lat_p90_ns.max(s.lat_p90_ns);
                prev.lat_p99_ns = prev.lat_p99_ns.max(s.lat_p99_ns);
                prev.lat_p99_9_ns = prev.lat_p99_9_ns.max(s.lat_p99_9_ns);
                prev.lat_max_ns = prev.lat_max_ns.max(s.lat_max_ns);
                for t in &s.targets {
                    match prev.targets.iter_mut().find(|p| p.target == t.target) {
                        Some(p) => {
                            p.bytes_read += t.bytes_read;
                            p.bytes_written += t.bytes_written;
                            p.ops_read += t.ops_read;
                            p.ops_written += t.ops_written;
                        }
                        None => prev.targets.push(*t),
                    }
                }
            }
            _ => out.push(s.clone()),
        }
    }
    out
}

/// One target's share of an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetSample {
    /// The target's index in the job.
    pub target: u16,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Reads completed.
    pub ops_read: u64,
    /// Writes completed.
    pub ops_written: u64,
}

/// Everything one phase produced. A result imported from another tool fills what that tool
/// reports and leaves the rest at its default (no workers, samples, rate or verification).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseResult {
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Reads done.
    pub ops_read: u64,
    /// Writes done.
    pub ops_written: u64,
    /// Until the last worker finished ("all done"): the phase's throughput.
    pub all_done: Throughput,
    /// Until the first worker finished ("first done", stonewall): every worker's work up to
    /// that moment, over that time.
    pub first_done: Throughput,
    /// The slowest worker's throughput, bytes/s.
    pub worker_min_bytes_per_sec: f64,
    /// The fastest worker's throughput, bytes/s.
    pub worker_max_bytes_per_sec: f64,
    /// Each worker.
    pub workers: Vec<WorkerResult>,
    /// CPU time in user mode, all workers, seconds.
    pub cpu_user: f64,
    /// CPU time in the kernel, all workers, seconds.
    pub cpu_sys: f64,
    /// Seconds the workers were ready to run but waited for a CPU, all workers (0 where not
    /// read: imports, runs stored before).
    #[serde(default)]
    pub cpu_wait: f64,
    /// Latency of all I/Os.
    pub latency: Latency,
    /// Latency of reads.
    pub latency_read: Latency,
    /// Latency of writes.
    pub latency_write: Latency,
    /// The histogram of all I/Os' latency, HdrHistogram V2 deflate encoding.
    #[serde(skip)]
    pub histogram: Vec<u8>,
    /// The histograms of reads' and of writes' latency, the same encoding (empty when the
    /// phase did not keep them apart, and in runs stored before schema 15).
    #[serde(skip)]
    pub histograms_rw: [Vec<u8>; 2],
    /// The histogram of the flushes' latency (fio's sync latency: each fsync/fdatasync the
    /// job asked for, timed apart from the writes), the same encoding; empty when it flushed
    /// nothing while measured.
    #[serde(skip)]
    pub histogram_sync: Vec<u8>,
    /// An asynchronous back-end's submission latency per direction (fio's slat: from the
    /// I/O's start to its submission), the same encoding; empty for a synchronous back-end,
    /// whose one call submits and completes.
    #[serde(skip)]
    pub histograms_slat: [Vec<u8>; 2],
    /// An asynchronous back-end's completion latency per direction (fio's clat: from the
    /// submission to the completion); empty for a synchronous back-end (its latency is the
    /// call's, `histograms_rw`).
    #[serde(skip)]
    pub histograms_clat: [Vec<u8>; 2],
    /// Under a target rate, each direction's latency from when each I/O was issued (fio's lat
    /// and, for a synchronous back-end, its clat), the same encoding, where `histograms_rw` is
    /// from when it was due (storlab's open-loop figure); empty without a rate. Kept in the
    /// result's document (base64), not a column of its own.
    #[serde(default, with = "base64_pair", skip_serializing_if = "none_in_pair")]
    pub histograms_issued: [Vec<u8>; 2],
    /// The latencies' exact figures per direction (min, max, mean, S: fio's io_stat, which
    /// the histograms round to their buckets); None where not kept (imports, runs stored
    /// before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moments: Option<crate::moments::LatencyMoments>,
    /// How deep the queue was and how I/Os went to and came from the kernel (fio's `IO
    /// depths`, `submit` and `complete`); None where not counted (imports, runs stored
    /// before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_depths: Option<IoDepths>,
    /// The disks under the phase's targets, their counters over the phase (fio's disk_util);
    /// empty where none could be read (tmpfs, a network filesystem, an import).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disks: Vec<DiskUtil>,
    /// Interval samples (the store keeps them in tables of their own, not in the result's
    /// document).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
    /// Rate keeping, when the phase was rate-limited.
    pub rate: Option<RateReport>,
    /// Verification, when the phase verified what it read.
    pub verify: Option<VerifyReport>,
    /// Seconds spent laying out files before the phase (outside its timing).
    pub layout_seconds: f64,
    /// True when the phase was stopped before it finished (Ctrl-C).
    pub interrupted: bool,
    /// The figures this result's source did not record (an import of a tool that prints no
    /// latency, no CPU, no per-worker spread): their fields hold 0 and mean nothing; every
    /// view shows them as "—" and no statistic counts them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_measured: Vec<Figure>,
    /// The steady-state judgement, when the phase asked for one (fio's steadystate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyReport>,
    /// The I/O errors the phase went on past (`continue_on_error`), when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<ErrorsReport>,
    /// Where the latency search settled, when the phase had a latency target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_search: Option<LatencySearch>,
    /// The machine around the phase, for what bounded it: its CPUs' time, the cgroup's I/O
    /// limits on its devices. None where not read (imports, runs stored before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<PhaseContext>,
}

/// What the machine did while a phase ran, beside the phase's own figures: the evidence of
/// its bound that is not the phase's (crates/stats bound.rs reads it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhaseContext {
    /// CPUs online.
    pub cpus: u32,
    /// The share of all CPUs' time that was busy over the phase, 0 to 1 (/proc/stat).
    pub cpu_busy: f64,
    /// The share that was idle waiting for I/O, 0 to 1.
    pub cpu_iowait: f64,
    /// The I/O limits this process's cgroups set on the phase's devices.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub throttles: Vec<Throttle>,
    /// An NFS target's RPC operations over the phase (/proc/self/mountstats), those that ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nfs: Vec<NfsOp>,
}

/// One NFS RPC operation's counters (a mount's per-op statistics in /proc/self/mountstats).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NfsOp {
    /// The operation: READ, WRITE, COMMIT, GETATTR, …
    pub op: String,
    /// Calls.
    pub calls: u64,
    /// Milliseconds of their round trips: the network and the server.
    pub rtt_ms: u64,
    /// Milliseconds from being queued to done: the round trip and the client's queue.
    pub exec_ms: u64,
}

/// An I/O limit a cgroup sets on a device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Throttle {
    /// The device's kernel name.
    pub device: String,
    /// read_iops, write_iops, read_bps or write_bps.
    pub what: String,
    /// The limit, per second.
    pub limit: u64,
    /// The file that sets it.
    pub source: String,
}

/// One disk's counters over a phase (fio's `disk_util`, from /proc/diskstats): I/Os, merges,
/// sectors and milliseconds per direction, the weighted milliseconds in queue and the busy
/// milliseconds, and the interval's length.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskUtil {
    /// The kernel's name of the disk (vda, loop0, md0, dm-1).
    pub name: String,
    /// Reads completed.
    pub read_ios: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Reads merged.
    pub read_merges: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds reading.
    pub read_ticks: u64,
    /// Milliseconds writing.
    pub write_ticks: u64,
    /// Weighted milliseconds in queue.
    pub in_queue: u64,
    /// Milliseconds with I/O in flight.
    pub io_ticks: u64,
    /// The interval's length, ms.
    pub elapsed_ms: f64,
    /// What it lies beneath, for a device below the target's own disk ("a member of md0", "the
    /// disk under loop0's file"); None for the disk under the target (fio's disk_util shows
    /// those only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under: Option<String>,
}

impl DiskUtil {
    /// The share of the interval the disk was busy, percent (fio's util; at most 100).
    pub fn util(&self) -> f64 {
        if self.elapsed_ms <= 0.0 {
            return 0.0;
        }
        (self.io_ticks as f64 * 100.0 / self.elapsed_ms).min(100.0)
    }

    /// Adds a later interval's counters (the phases of a run one after another).
    pub fn add(&mut self, o: &DiskUtil) {
        self.read_ios += o.read_ios;
        self.write_ios += o.write_ios;
        self.read_merges += o.read_merges;
        self.write_merges += o.write_merges;
        self.read_sectors += o.read_sectors;
        self.write_sectors += o.write_sectors;
        self.read_ticks += o.read_ticks;
        self.write_ticks += o.write_ticks;
        self.in_queue += o.in_queue;
        self.io_ticks += o.io_ticks;
        self.elapsed_ms += o.elapsed_ms;
    }
}

/// fio's queue depth distributions (its stat.c `io_u_map`, `io_u_submit`, `io_u_complete`),
/// in fio's buckets. `depth[i]` counts I/Os by how many were in flight once they were
/// submitted: 1, 2–3, 4–7, 8–15, 16–31, 32–63, ≥64. `submit[i]` and `complete[i]` count the
/// calls that handed I/Os to the kernel and that took completions back, by how many they
/// carried: 0, 1–4, 5–8, 9–16, 17–32, 33–64, >64. A synchronous back-end's I/O is one of each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoDepths {
    /// I/Os by the depth they were submitted at.
    pub depth: [u64; 7],
    /// Submitting calls by I/Os carried.
    pub submit: [u64; 7],
    /// Reaping calls by completions carried.
    pub complete: [u64; 7],
}

impl IoDepths {
    /// fio's bucket of a depth (io_u_mark_depth).
    pub fn depth_bucket(depth: u32) -> usize {
        match depth {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        }
    }

    /// fio's bucket of a call's count (io_u_mark_submit / io_u_mark_complete).
    pub fn count_bucket(n: u32) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }

    /// `n` I/Os handed to the kernel in one call, `in_flight` (them included) then in flight.
    #[inline]
    pub fn submitted(&mut self, n: u32, in_flight: u32) {
        self.depth[Self::depth_bucket(in_flight)] += u64::from(n);
        self.submit[Self::count_bucket(n)] += 1;
    }

    /// One call that took `n` completions back.
    #[inline]
    pub fn completed(&mut self, n: u32) {
        self.complete[Self::count_bucket(n)] += 1;
    }

    /// `n` I/Os of a synchronous back-end: each submitted alone at depth 1 and completed by
    /// its own call.
    pub fn synchronous(&mut self, n: u64) {
        self.depth[0] += n;
        self.submit[1] += n;
        self.complete[1] += n;
    }

    /// Adds another worker's counts.
    pub fn add(&mut self, o: &IoDepths) {
        for (a, b) in [
            (&mut self.depth, &o.depth),
            (&mut self.submit, &o.submit),
            (&mut self.complete, &o.complete),
        ] {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
}

/// fio's latency_target: the queue depth each worker settled at, and whether the target held
/// there.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySearch {
    /// The target, ns.
    pub target_ns: u64,
    /// The share of I/Os that had to meet it, percent.
    pub percentile: f64,
    /// Each depth's trial, ns.
    pub window_ns: u64,
    /// The depth each worker settled at (and was measured at; 1 where not even one I/O at a
    /// time met the target).
    pub depths: Vec<u32>,
    /// The share of the measured I/Os within the target, percent (from the phase's histogram).
    pub within_percent: f64,
    /// True when that share reaches the percentile.
    pub met: bool,
}

/// I/O errors a phase went on past (fio's continue_on_error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorsReport {
    /// I/Os that failed.
    pub count: u64,
    /// The first one's errno (fio's first_error).
    pub first_errno: i32,
    /// The first one, as the system says it, with where.
    pub first: String,
}

impl ErrorsReport {
    /// Adds another worker's errors: the counts sum, the first stays the first seen.
    pub fn merge(&mut self, o: ErrorsReport) {
        if self.count == 0 {
            self.first_errno = o.first_errno;
            self.first = o.first;
        }
        self.count += o.count;
    }
}

/// Whether a phase reached steady state, and on what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyReport {
    /// The criterion met within its limit, ending the phase.
    pub attained: bool,
    /// The criterion's last value (percent of the mean where the limit is one).
    pub criterion: Option<f64>,
    /// When it was met, seconds from the phase's start.
    pub at_seconds: Option<f64>,
    /// The window's IOPS, sample by sample, when it was met or the phase ended.
    pub iops: Vec<f64>,
    /// The window's bytes/s, sample by sample.
    pub bw: Vec<f64>,
}

/// A figure of a phase's result that a source may not have recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Bytes moved and bytes per second (a metadata tool counts operations only).
    Throughput,
    /// I/Os (operations) and their rate.
    Iops,
    /// The seconds the phase took.
    Seconds,
    /// The first-done (stonewall) figures.
    FirstDone,
    /// The slowest and fastest worker's throughput.
    WorkerSpread,
    /// CPU time.
    Cpu,
    /// Latency of all I/Os (and of reads and writes apart).
    Latency,
}

impl Figure {
    /// The name a user reads.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Throughput => "throughput",
            Figure::Iops => "IOPS",
            Figure::Seconds => "seconds",
            Figure::FirstDone => "first done",
            Figure::WorkerSpread => "worker spread",
            Figure::Cpu => "CPU",
            Figure::Latency => "latency",
        }
    }
}

impl PhaseResult {
    /// A result whose bytes and operations all went one way (an imported tool's write or read
    /// row, a metadata operation): counted as written when `writes`, else as read; every other
    /// figure left to the caller.
    pub fn one_direction(writes: bool, bytes: u64, ops: u64) -> PhaseResult {
        PhaseResult {
            bytes_read: if writes { 0 } else { bytes },
            bytes_written: if writes { bytes } else { 0 },
            ops_read: if writes { 0 } else { ops },
            ops_written: if writes { ops } else { 0 },
            ..PhaseResult::default()
        }
    }

    /// Total bytes moved.
    pub fn bytes(&self) -> u64 {
        self.bytes_read + self.bytes_written
    }

    /// True unless the source did not record `figure` (latency also counts as not measured
    /// when no I/O was timed: a walk, an import of a tool that prints none).
    pub fn measured(&self, figure: Figure) -> bool {
        !self.not_measured.contains(&figure) && (figure != Figure::Latency || self.latency.count > 0)
    }

    /// Marks `figures` as not recorded by the source (kept sorted, each once).
    pub fn mark_not_measured(&mut self, figures: &[Figure]) {
        self.not_measured.extend_from_slice(figures);
        self.not_measured.sort();
        self.not_measured.dedup();
    }
}

/// Why a 4 KiB block failed verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BadReason {
    /// No storlab header: the block was never written by storlab, or was overwritten.
    NoHeader,
    /// The checksum does not match the contents: the data changed after it was written.
    Checksum {
        /// The checksum in the header.
        stored: u32,
        /// The checksum of what was read.
        computed: u32,
    },
    /// The block says it belongs at another offset (a misdirected write or read).
    WrongOffset {
        /// The offset in the header.
        stored: u64,
    },
    /// The block was written by another run.
    WrongSeed {
        /// The seed in the header.
        stored: u64,
    },
    /// The block is older or newer than the last phase that wrote it (a lost write).
    WrongGeneration {
        /// The generation in the header.
        stored: u32,
        /// The oldest acceptable.
        min: u32,
        /// The newest acceptable.
        max: u32,
    },
    /// The block's data is not the pattern the phase writes (fio's verify_pattern).
    Pattern {
        /// The first byte of the 4 KiB that differs.
        at: u32,
    },
}

impl std::fmt::Display for BadReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadReason::NoHeader => write!(f, "no storlab header (never written by this run, or overwritten)"),
            BadReason::Checksum { stored, computed } => {
                write!(
                    f,
                    "checksum mismatch (stored {stored:08x}, computed {computed:08x}): contents changed after writing"
                )
            }
            BadReason::WrongOffset { stored } => {
                write!(f, "block belongs at offset {stored} (misdirected write)")
            }
            BadReason::WrongSeed { stored } => {
                write!(
                    f,
                    "block was written by another run (seed 0x{stored:016x}; verify with --seed 0x{stored:016x})"
                )
            }
            BadReason::WrongGeneration { stored, min, max } => {
                write!(
                    f,
                    "stale or future block: generation {stored}, expected {min}..={max} (lost write)"
                )
            }
            BadReason::Pattern { at } => {
                write!(f, "byte {at} of the block is not the pattern written")
            }
        }
    }
}

#[cfg(test)]
mod partial_tests {
    use super::*;

    fn sample(index: u32, t_start: f64, t_end: f64, bytes: u64) -> Sample {
        Sample {
            index,
            t_start,
            t_end,
            bytes_read: bytes,
            ops_read: bytes / 4096,
            lat_p99_ns: 1000 + u64::from(index),
            ..Default::default()
        }
    }

    /// Three 1 s intervals at 100 MiB/s and a last of 0.5 ms holding two 4 KiB reads: drawn
    /// alone it would be a drop to 15.6 MiB/s; merged, the last point is the two together.
    #[test]
    fn a_partial_last_interval_is_merged_into_the_one_before() {
        let mib = 1u64 << 20;
        let samples = vec![
            sample(0, 0.0, 1.0, 100 * mib),
            sample(1, 1.0, 2.0, 100 * mib),
            sample(2, 2.0, 3.0, 100 * mib),
            sample(3, 3.0, 3.0005, 8192),
        ];
        assert_eq!(nominal_interval(&samples), Some(1.0));
        assert!(samples[3].is_partial(1.0) && !samples[2].is_partial(1.0));
        let m = merge_partial(&samples);
        assert_eq!(m.len(), 3);
        let last = &m[2];
        assert_eq!((last.t_start, last.t_end), (2.0, 3.0005));
        assert_eq!(last.bytes_read, 100 * mib + 8192);
        assert_eq!(last.lat_p99_ns, 1003, "the larger percentile of the two");
        let rate = last.bytes_read as f64 / last.seconds() / mib as f64;
        assert!((rate - 99.955).abs() < 0.01, "{rate}");
        // Nothing partial: nothing changes.
        assert_eq!(merge_partial(&samples[..3]), samples[..3].to_vec());
    }
}
