//! A run that many MPI ranks ran together (`mpirun storlab run|meta`): each rank's part of each
//! phase (the slowest and fastest rank marked), the hosts with their machines, and each host's
//! throughput over time on the phase's common clock.

use std::collections::BTreeMap;

use storlab_model::result::{nominal_interval, Sample};
use storlab_model::run::{RankPhaseRow, RunDetail};
use storlab_units::Size;

use crate::table::{Cell, Table};

const MIB: f64 = 1024.0 * 1024.0;

/// A rank's own rate in a phase: MiB/s where it moved bytes, else operations per second (a
/// metadata phase), and which of the two.
fn rank_rate(r: &RankPhaseRow) -> (f64, bool) {
    let t = &r.result.all_done;
    if r.result.bytes() > 0 {
        (t.bytes_per_sec / MIB, true)
    } else {
        (t.iops, false)
    }
}

/// Every rank's part of every phase, one row each: its host, its measured interval on rank 0's
/// clock (seconds from the phase's earliest start), its own rate and operations; in each phase
/// the slowest and fastest rank are marked. None for a run of one process.
pub fn ranks_table(run: &RunDetail) -> Option<Table> {
    if run.rank_phases.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "ranks",
        &[
            "phase",
            "rank",
            "host",
            "start s",
            "end s",
            "MiB/s",
            "IOPS",
            "bytes",
            "operations",
            "mark",
        ],
    );
    for p in &run.phases {
        let rows: Vec<&RankPhaseRow> = run.rank_phases.iter().filter(|r| r.seq == p.seq).collect();
        let rates: Vec<f64> = rows.iter().map(|r| rank_rate(r).0).collect();
        let (lo, hi) = rates.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
        for (r, rate) in rows.iter().zip(&rates) {
            // With one rank, or all alike, there is neither a slowest nor a fastest.
            let mark = if rows.len() < 2 || lo == hi {
                ""
            } else if *rate == lo {
                "slowest"
            } else if *rate == hi {
                "fastest"
            } else {
                ""
            };
            let res = &r.result;
            t.push(vec![
                format!("{} {}", p.seq + 1, p.kind).into(),
                r.rank.into(),
                r.host.as_str().into(),
                Cell::fixed(r.start_seconds, 3),
                Cell::fixed(r.end_seconds, 3),
                Cell::fixed(res.all_done.bytes_per_sec / MIB, 2),
                Cell::fixed(res.all_done.iops, 0),
                res.bytes().into(),
                (res.ops_read + res.ops_written).into(),
                mark.into(),
            ]);
        }
    }
    Some(t)
}

/// The hosts the ranks ran on, one row each: how many ranks, their machine, and the largest
/// clock offset to rank 0 among its ranks (measured at start by a ping-pong over MPI). None
/// for a run of one process.
pub fn hosts_table(run: &RunDetail) -> Option<Table> {
    if run.ranks.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "hosts",
        &[
            "host",
            "ranks",
            "kernel",
            "CPU",
            "CPUs",
            "RAM",
            "clock offset to rank 0 (ms)",
        ],
    );
    let mut by_host: BTreeMap<&str, Vec<&storlab_model::run::RankRow>> = BTreeMap::new();
    for r in &run.ranks {
        by_host.entry(r.host.as_str()).or_default().push(r);
    }
    for (host, ranks) in by_host {
        let e = &ranks[0].environment;
        let offset = ranks
            .iter()
            .map(|r| r.clock_offset_seconds)
            .fold(0.0f64, |a, b| if b.abs() > a.abs() { b } else { a });
        let list: Vec<String> = ranks.iter().map(|r| r.rank.to_string()).collect();
        t.push(vec![
            host.into(),
            list.join(", ").into(),
            e.kernel.as_str().into(),
            e.cpu_model.as_str().into(),
            e.cpus.into(),
            Size(e.memory_bytes).human().into(),
            Cell::fixed(offset * 1e3, 3),
        ]);
    }
    Some(t)
}

/// The exports' table of ranks (CSV, JSON, Markdown, XLSX): every rank's part of every phase of
/// the runs given, in full precision, with its host and clock offset. None when no run had
/// ranks.
pub fn ranks_data(runs: &[RunDetail]) -> Option<Table> {
    let mut t = Table::new(
        "ranks",
        &[
            "run",
            "seq",
            "phase",
            "rank",
            "host",
            "clock offset (s)",
            "start (s)",
            "end (s)",
            "bytes read",
            "bytes written",
            "reads",
            "writes",
            "MiB/s",
            "IOPS",
            "lat p50 (µs)",
            "lat p99 (µs)",
            "lat max (µs)",
        ],
    );
    for run in runs {
        for r in &run.rank_phases {
            let kind = run.phases.iter().find(|p| p.seq == r.seq).map(|p| p.kind.to_string());
            let offset = run
                .ranks
                .iter()
                .find(|x| x.rank == r.rank)
                .map(|x| x.clock_offset_seconds);
            let x = &r.result;
            t.push(vec![
                run.run.id.into(),
                (r.seq + 1).into(),
                kind.unwrap_or_default().into(),
                r.rank.into(),
                r.host.as_str().into(),
                offset.map_or(Cell::Empty, Cell::from),
                r.start_seconds.into(),
                r.end_seconds.into(),
                x.bytes_read.into(),
                x.bytes_written.into(),
                x.ops_read.into(),
                x.ops_written.into(),
                (x.all_done.bytes_per_sec / MIB).into(),
                x.all_done.iops.into(),
                (x.latency.p50_ns as f64 / 1e3).into(),
                (x.latency.p99_ns as f64 / 1e3).into(),
                (x.latency.max_ns as f64 / 1e3).into(),
            ]);
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

/// One host's throughput and IOPS over a phase, on the phase's common clock.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSeries {
    /// The host, or "all ranks" for the sum of every host.
    pub host: String,
    /// (seconds from the phase's earliest start, MiB/s).
    pub mibs: Vec<(f64, f64)>,
    /// (seconds, operations per second).
    pub iops: Vec<(f64, f64)>,
}

/// Each host's throughput over phase `seq`, all ranks first: every rank's interval samples are
/// moved onto rank 0's clock (the rank's measured start, which already counts its clock
/// offset) and spread over common intervals of the phases' usual length, each sample's bytes and
/// operations shared among the intervals it overlaps in proportion to the overlap; a host's
/// line is its ranks' sum. Empty when the ranks stored no samples.
pub fn per_host_over_time(rank_phases: &[RankPhaseRow], seq: u32) -> Vec<HostSeries> {
    let rows: Vec<&RankPhaseRow> = rank_phases
        .iter()
        .filter(|r| r.seq == seq && !r.result.samples.is_empty())
        .collect();
    let all: Vec<Sample> = rows.iter().flat_map(|r| r.result.samples.iter().cloned()).collect();
    let Some(width) = nominal_interval(&all).filter(|w| *w > 0.0) else {
        return Vec::new();
    };
    // A rank's samples count from its phase clock's start; its measured interval (which
    // `start_seconds` places) begins with its first sample out of the ramp.
    let placed: Vec<(&RankPhaseRow, f64)> = rows
        .iter()
        .map(|r| {
            let s = &r.result.samples;
            let measured_from = s.iter().find(|x| !x.ramp).unwrap_or(&s[0]).t_start;
            (*r, r.start_seconds - measured_from)
        })
        .collect();
    let lo = placed
        .iter()
        .map(|(r, o)| o + r.result.samples[0].t_start)
        .fold(f64::INFINITY, f64::min);
    let hi = placed
        .iter()
        .map(|(r, o)| o + r.result.samples.last().map_or(0.0, |x| x.t_end))
        .fold(f64::NEG_INFINITY, f64::max);
    let bins = (((hi - lo) / width).ceil() as usize).max(1);
    // (bytes, operations) per interval, per host; "" is every host together.
    let mut sums: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (r, origin) in &placed {
        for x in &r.result.samples {
            let (a, b) = (origin + x.t_start - lo, origin + x.t_end - lo);
            let len = (b - a).max(1e-12);
            let bytes = (x.bytes_read + x.bytes_written) as f64;
            let ops = (x.ops_read + x.ops_written) as f64;
            let first = ((a / width).floor().max(0.0) as usize).min(bins - 1);
            let last = (((b / width).ceil() as usize).max(first + 1)).min(bins);
            for k in first..last {
                let overlap = (b.min((k + 1) as f64 * width) - a.max(k as f64 * width)).max(0.0);
                let share = if last - first == 1 { 1.0 } else { overlap / len };
                for key in [String::new(), r.host.clone()] {
                    let v = sums.entry(key).or_insert_with(|| vec![(0.0, 0.0); bins]);
                    v[k].0 += bytes * share;
                    v[k].1 += ops * share;
                }
            }
        }
    }
    let span = hi - lo;
    let series = |host: String, v: &[(f64, f64)]| {
        let mut s = HostSeries {
            host,
            mibs: Vec::with_capacity(bins),
            iops: Vec::with_capacity(bins),
        };
        for (k, (bytes, ops)) in v.iter().enumerate() {
            // The last interval may be short: its rate is over the time it covers.
            let end = ((k + 1) as f64 * width).min(span);
            let dt = (end - k as f64 * width).max(1e-9);
            let x = end + lo;
            s.mibs.push((x, bytes / dt / MIB));
            s.iops.push((x, ops / dt));
        }
        s
    };
    let mut out = Vec::with_capacity(sums.len());
    if let Some(v) = sums.get("") {
        out.push(series("all ranks".into(), v));
    }
    for (host, v) in &sums {
        if !host.is_empty() {
            out.push(series(host.clone(), v));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::result::PhaseResult;

    fn sample(t_start: f64, t_end: f64, bytes: u64) -> Sample {
        Sample {
            t_start,
            t_end,
            bytes_written: bytes,
            ops_written: bytes / 1024,
            ..Sample::default()
        }
    }

    fn rank(rank: u32, host: &str, start: f64, samples: Vec<Sample>) -> RankPhaseRow {
        RankPhaseRow {
            seq: 0,
            rank,
            host: host.into(),
            start_seconds: start,
            end_seconds: start + samples.last().unwrap().t_end,
            result: PhaseResult {
                samples,
                ..PhaseResult::default()
            },
        }
    }

    #[test]
    fn ranks_samples_line_up_on_the_common_clock_and_sum_per_host() {
        // Two ranks on host a, one on b; rank 2 starts half an interval late.
        let mib = 1 << 20;
        let rows = vec![
            rank(
                0,
                "a",
                0.0,
                vec![sample(0.0, 1.0, 10 * mib), sample(1.0, 2.0, 10 * mib)],
            ),
            rank(
                1,
                "a",
                0.0,
                vec![sample(0.0, 1.0, 20 * mib), sample(1.0, 2.0, 20 * mib)],
            ),
            rank(
                2,
                "b",
                0.5,
                vec![sample(0.0, 1.0, 40 * mib), sample(1.0, 2.0, 40 * mib)],
            ),
        ];
        let s = per_host_over_time(&rows, 0);
        let names: Vec<&str> = s.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(names, ["all ranks", "a", "b"]);
        // Host a: 30 MiB/s in both seconds; b's samples straddle the intervals: 20, 40, 20
        // MiB over [0,1), [1,2), [2,2.5): the last interval is half long.
        let a: Vec<f64> = s[1].mibs.iter().map(|p| p.1).collect();
        let b: Vec<f64> = s[2].mibs.iter().map(|p| p.1).collect();
        assert_eq!(a, [30.0, 30.0, 0.0]);
        assert_eq!(b, [20.0, 40.0, 40.0]);
        let xs: Vec<f64> = s[2].mibs.iter().map(|p| p.0).collect();
        assert_eq!(xs, [1.0, 2.0, 2.5]);
        let all: Vec<f64> = s[0].mibs.iter().map(|p| p.1).collect();
        assert_eq!(all, [50.0, 70.0, 40.0]);
        // Every byte is somewhere: the rates times the intervals' lengths give the total.
        let total: f64 = s[0].mibs.iter().zip([1.0, 1.0, 0.5]).map(|(p, dt)| p.1 * dt).sum();
        assert_eq!(total, 140.0);
    }

    #[test]
    fn ranks_without_samples_have_no_host_lines() {
        assert!(per_host_over_time(&[], 0).is_empty());
        let mut quiet = rank(0, "a", 0.0, vec![sample(0.0, 1.0, 1)]);
        quiet.result.samples.clear();
        assert!(per_host_over_time(&[quiet], 0).is_empty());
    }
}
