//! One phase's results from many processes (MPI ranks) merged into the phase of the run rank 0
//! stores: the aggregate over the common interval, never a sum of per-rank rates (IOR's
//! convention), and the latency histograms merged, never percentiles averaged.

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::result::{PhaseResult, Throughput, WorkerResult};
use crate::stat::{encode_histogram, encode_if_any, latency_of, new_histogram};

/// One rank's part, its times on rank 0's clock.
#[derive(Debug, Clone)]
pub struct RankPart {
    /// The rank.
    pub rank: u32,
    /// Its host.
    pub host: String,
    /// When its measured interval began, seconds on rank 0's clock (any common origin).
    pub start: f64,
    /// When it ended, the same clock.
    pub end: f64,
    /// What it measured, with its histograms.
    pub result: PhaseResult,
}

fn decode(encoded: &[u8]) -> Histogram<u64> {
    if encoded.is_empty() {
        return new_histogram();
    }
    Deserializer::new()
        .deserialize::<u64, _>(&mut &encoded[..])
        .unwrap_or_else(|_| new_histogram())
}

/// Merges the ranks' parts of one phase. Bytes and operations are summed; `all_done` is all of
/// them over the time from the earliest rank's start to the latest rank's end; `first_done`
/// ends when the first rank ended, with each other rank's work until then counted in
/// proportion to its own interval (the ranks' own first-done figures are kept in their rows);
/// each rank's workers are kept, named with their rank and host; the histograms are merged.
pub fn merge_ranks(parts: &[RankPart]) -> PhaseResult {
    let start = parts.iter().map(|p| p.start).fold(f64::INFINITY, f64::min);
    let end = parts.iter().map(|p| p.end).fold(f64::NEG_INFINITY, f64::max);
    let first_end = parts.iter().map(|p| p.end).fold(f64::INFINITY, f64::min);
    let (start, end) = if parts.is_empty() { (0.0, 0.0) } else { (start, end) };
    let mut all = new_histogram();
    let mut rw = [new_histogram(), new_histogram()];
    let mut sync = new_histogram();
    let mut slat = [new_histogram(), new_histogram()];
    let mut clat = [new_histogram(), new_histogram()];
    let mut issued = [new_histogram(), new_histogram()];
    let mut m = PhaseResult::default();
    let (mut first_bytes, mut first_ops) = (0.0, 0.0);
    for p in parts {
        let r = &p.result;
        m.bytes_read += r.bytes_read;
        m.bytes_written += r.bytes_written;
        m.ops_read += r.ops_read;
        m.ops_written += r.ops_written;
        m.cpu_user += r.cpu_user;
        m.cpu_sys += r.cpu_sys;
        m.cpu_wait += r.cpu_wait;
        m.interrupted |= r.interrupted;
        m.layout_seconds = m.layout_seconds.max(r.layout_seconds);
        // Errors gone past (continue_on_error): every rank's counted, the first rank's first.
        if let Some(e) = &r.errors {
            m.errors.get_or_insert_with(Default::default).merge(e.clone());
        }
        let _ = all.add(decode(&r.histogram));
        for (h, e) in rw.iter_mut().zip(&r.histograms_rw) {
            let _ = h.add(decode(e));
        }
        let _ = sync.add(decode(&r.histogram_sync));
        for d in 0..2 {
            let _ = slat[d].add(decode(&r.histograms_slat[d]));
            let _ = clat[d].add(decode(&r.histograms_clat[d]));
            let _ = issued[d].add(decode(&r.histograms_issued[d]));
        }
        if let Some(d) = &r.io_depths {
            m.io_depths.get_or_insert_with(Default::default).add(d);
        }
        let own = (p.end - p.start).max(1e-9);
        let share = ((first_end - p.start) / own).clamp(0.0, 1.0);
        first_bytes += r.bytes() as f64 * share;
        first_ops += (r.ops_read + r.ops_written) as f64 * share;
        m.workers.extend(r.workers.iter().map(|w| WorkerResult {
            file: format!("rank {} ({}): {}", p.rank, p.host, w.file),
            ..w.clone()
        }));
        if let Some(v) = &r.verify {
            let mut merged = m.verify.take().unwrap_or_default();
            merged.merge(v.clone());
            m.verify = Some(merged);
        }
    }
    let ops = m.ops_read + m.ops_written;
    m.all_done = Throughput::new(end - start, m.bytes(), ops);
    m.first_done = Throughput::new(
        (first_end - start).max(0.0),
        first_bytes.round() as u64,
        first_ops.round() as u64,
    );
    let (slowest, fastest) = storlab_model::result::worker_spread(&m.workers);
    m.worker_min_bytes_per_sec = slowest;
    m.worker_max_bytes_per_sec = fastest;
    m.latency = latency_of(&all);
    m.latency_read = latency_of(&rw[0]);
    m.latency_write = latency_of(&rw[1]);
    m.histogram = encode_histogram(&all);
    m.histograms_rw = [encode_histogram(&rw[0]), encode_histogram(&rw[1])];
    m.histogram_sync = encode_if_any(&sync);
    m.histograms_slat = [encode_if_any(&slat[0]), encode_if_any(&slat[1])];
    m.histograms_clat = [encode_if_any(&clat[0]), encode_if_any(&clat[1])];
    m.histograms_issued = [encode_if_any(&issued[0]), encode_if_any(&issued[1])];
    // Exact figures only where every rank kept them (a rank of an older build did not).
    if parts.iter().all(|p| p.result.moments.is_some()) {
        m.moments = storlab_model::moments::LatencyMoments::sum(parts.iter().filter_map(|p| p.result.moments.as_ref()));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(rank: u32, start: f64, end: f64, bytes: u64, lat_ns: &[u64]) -> RankPart {
        let mut h = new_histogram();
        for &l in lat_ns {
            h.record(l).unwrap();
        }
        RankPart {
            rank,
            host: format!("h{rank}"),
            start,
            end,
            result: PhaseResult {
                bytes_written: bytes,
                ops_written: bytes / 4096,
                all_done: Throughput::new(end - start, bytes, bytes / 4096),
                histogram: encode_histogram(&h),
                histograms_rw: [Vec::new(), encode_histogram(&h)],
                workers: vec![WorkerResult {
                    file: "/t/f".into(),
                    bytes,
                    ops: bytes / 4096,
                    seconds: end - start,
                    bytes_per_sec: bytes as f64 / (end - start),
                    ..Default::default()
                }],
                ..Default::default()
            },
        }
    }

    #[test]
    fn the_aggregate_is_all_bytes_over_the_common_interval_not_a_sum_of_rates() {
        // Rank 0 moves 100 MiB in [0, 1] s, rank 1 100 MiB in [0.5, 2.5] s: the sum of their
        // rates would be 150 MiB/s; the common interval is 2.5 s, so 80 MiB/s.
        let mib = 1 << 20;
        let m = merge_ranks(&[
            part(0, 0.0, 1.0, 100 * mib, &[1000]),
            part(1, 0.5, 2.5, 100 * mib, &[3000]),
        ]);
        assert_eq!(m.bytes_written, 200 * mib);
        assert!((m.all_done.seconds - 2.5).abs() < 1e-12);
        assert!((m.all_done.bytes_per_sec - 80.0 * mib as f64).abs() < 1.0);
        // First done at 1.0 s: rank 0 whole, rank 1 a quarter of its interval.
        assert_eq!(m.first_done.bytes, 125 * mib);
        assert_eq!(m.workers.len(), 2);
        assert_eq!(m.workers[1].file, "rank 1 (h1): /t/f");
    }

    #[test]
    fn latency_comes_from_the_merged_histogram() {
        // 99 fast I/Os on one rank, 1 slow on another: the merged p99 is the fast one, the
        // maximum the slow one; averaging the ranks' p99s would give neither.
        let fast = vec![1_000; 99];
        let m = merge_ranks(&[
            part(0, 0.0, 1.0, 4096 * 99, &fast),
            part(1, 0.0, 1.0, 4096, &[1_000_000]),
        ]);
        assert_eq!(m.latency.count, 100);
        assert!(m.latency.p99_ns < 2_000, "{:?}", m.latency);
        assert!(m.latency.max_ns >= 999_000, "{:?}", m.latency);
        assert_eq!(m.latency_write.count, 100);
        assert_eq!(m.latency_read.count, 0);
    }
}
