//! The impact of a background task, in numbers: the cost-to-the-users comparison (each metric
//! of each phase, the loaded repetitions against the idle ones, Welch's test), the pool
//! projection (RAL's reasoning: k of S servers cost the pool loss × k / S), a round's duration,
//! and the held-rate analysis of a job kept at its rate through the task (per interval the rate
//! achieved, the latency and the deficit; the stretches before, during and after; when the
//! deficit was repaid). crates/impact runs the studies; the report shows them from what was
//! stored; both compute with these functions.

use serde::Serialize;
use storlab_model::result::{PhaseResult, RateUnit};
use storlab_model::study::{Projection, Stretch, StretchSummary, TaskSpan};

/// A metric of a phase: its name (with unit), whether more is better, and how to read it.
pub struct Metric {
    /// "MiB/s", "IOPS", "lat p99 µs", ...
    pub name: &'static str,
    /// True for throughput, false for latency.
    pub higher_is_better: bool,
    /// Reads it from a phase.
    pub read: fn(&PhaseResult) -> f64,
}

/// The metrics of the cost-to-the-users table: throughput and latency percentiles.
pub const METRICS: [Metric; 5] = [
    Metric {
        name: "MiB/s",
        higher_is_better: true,
        read: |p| p.all_done.bytes_per_sec / (1u64 << 20) as f64,
    },
    Metric {
        name: "IOPS",
        higher_is_better: true,
        read: |p| p.all_done.iops,
    },
    Metric {
        name: "lat p50 µs",
        higher_is_better: false,
        read: |p| p.latency.p50_ns as f64 / 1e3,
    },
    Metric {
        name: "lat p99 µs",
        higher_is_better: false,
        read: |p| p.latency.p99_ns as f64 / 1e3,
    },
    Metric {
        name: "lat p99.9 µs",
        higher_is_better: false,
        read: |p| p.latency.p99_9_ns as f64 / 1e3,
    },
];

/// The impact on one metric of one phase.
#[derive(Debug, Clone, Serialize)]
pub struct Impact {
    /// Phase number, 1-based.
    pub phase: usize,
    /// Phase kind.
    pub kind: String,
    /// Metric name.
    pub metric: &'static str,
    /// The idle repetitions' values.
    pub idle: Vec<f64>,
    /// The loaded repetitions' values (those that overlapped the task).
    pub loaded: Vec<f64>,
    /// Loaded against idle (Welch).
    pub comparison: crate::Comparison,
}

/// One repetition's part in a cost-to-the-users comparison.
pub struct Repetition<'a> {
    /// With the task running.
    pub loaded: bool,
    /// Counted (a loaded repetition the task covered from start to end; every idle one).
    pub counted: bool,
    /// Its phases' results, in order.
    pub results: &'a [PhaseResult],
}

/// Per phase and metric, the loaded repetitions that overlapped the task against the idle ones
/// (Welch, see [`crate::compare`]).
pub fn impacts(repetitions: &[Repetition], kinds: &[String]) -> Vec<Impact> {
    let counted: Vec<&Repetition> = repetitions.iter().filter(|r| r.counted).collect();
    let mut out = Vec::new();
    for (seq, kind) in kinds.iter().enumerate() {
        for m in &METRICS {
            let vals = |loaded: bool| -> Vec<f64> {
                counted
                    .iter()
                    .filter(|r| r.loaded == loaded && !r.results.is_empty())
                    .filter_map(|r| r.results.get(seq).map(m.read))
                    .collect()
            };
            let (a, b) = (vals(false), vals(true));
            if let Some(c) = crate::compare(&a, &b) {
                out.push(Impact {
                    phase: seq + 1,
                    kind: kind.clone(),
                    metric: m.name,
                    idle: a,
                    loaded: b,
                    comparison: c,
                });
            }
        }
    }
    out
}

/// The largest loss of throughput (MiB/s) over the phases, in percent (positive = slower), and
/// the loss at its 95 % interval's worse end; None without a comparison.
pub fn worst_loss(impacts: &[Impact]) -> Option<(f64, f64, String)> {
    impacts
        .iter()
        .filter(|i| i.metric == "MiB/s")
        .filter_map(|i| {
            let d = i.comparison.diff_percent?;
            let worse = i.comparison.ci95_percent.map(|(lo, _)| -lo).unwrap_or(-d);
            Some((-d, worse, format!("phase {} {}", i.phase, i.kind)))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// The RAL report's reasoning: when k of S servers verify, a user whose data is spread over
/// the pool sees the single-server loss on k/S of it, so the pool-wide loss is loss × k / S.
pub fn project(loss_percent: f64, servers: u32, budget_percent: f64) -> Projection {
    let loss = loss_percent.max(0.0);
    let by_k: Vec<(u32, f64)> = (1..=servers).map(|k| (k, loss * k as f64 / servers as f64)).collect();
    let largest_k = by_k
        .iter()
        .filter(|(_, p)| *p <= budget_percent + 1e-9)
        .map(|(k, _)| *k)
        .max()
        .unwrap_or(0);
    Projection {
        servers,
        budget_percent,
        loss_percent: loss,
        by_k,
        largest_k,
    }
}

/// How long a full round of the task over a pool of S servers takes, k at a time.
pub fn round_seconds(task_seconds: f64, servers: u32, k: u32) -> Option<f64> {
    (k > 0).then(|| servers.div_ceil(k) as f64 * task_seconds)
}

/// Percent per minute over a track (from its last known percent).
pub fn progress_rate(track: &[(f64, Option<f64>)]) -> Option<f64> {
    let (t, p) = track.iter().rev().find_map(|(t, p)| p.map(|p| (*t, p)))?;
    (t > 0.0).then(|| p / t * 60.0)
}

/// One interval of a held-rate run.
#[derive(Debug, Clone, Serialize)]
pub struct HeldInterval {
    /// Start, seconds since the study started.
    pub t_start: f64,
    /// End, seconds since the study started.
    pub t_end: f64,
    /// Achieved rate in the interval (the target's unit: IOPS or MiB/s).
    pub achieved: f64,
    /// Latency percentiles, µs.
    pub p50_us: f64,
    /// 99th.
    pub p99_us: f64,
    /// 99.9th.
    pub p99_9_us: f64,
    /// Behind schedule at the interval's end (operations, or MiB for a bandwidth target).
    pub behind: f64,
    /// Where it falls.
    pub stretch: Stretch,
}

/// The held-rate study's figures.
#[derive(Debug, Clone, Serialize)]
pub struct HeldAnalysis {
    /// The target's unit (a bandwidth target is counted in MiB/s).
    pub unit: RateUnit,
    /// The target in that unit.
    pub target: f64,
    /// Every interval.
    pub intervals: Vec<HeldInterval>,
    /// Before, during and after (those with intervals).
    pub stretches: Vec<StretchSummary>,
    /// The deficit regarded as none: the largest before the first task (or 1 % of a second's
    /// target when there was no stretch before).
    pub tolerance: f64,
    /// Largest deficit.
    pub behind_max: f64,
    /// Seconds from the last task's end until the deficit was back within the tolerance; 0
    /// when none built up; None when it was not repaid before the job ended.
    pub repaid_after: Option<f64>,
    /// The deficit at the job's end.
    pub behind_at_end: f64,
}

/// Computes per interval the achieved rate, latency and deficit (operations behind schedule:
/// the engine's schedule starts at the phase's start and issues late I/Os at once, so a
/// deficit is repaid by running faster than the target once the disturbance ends), and when
/// the deficit was repaid. `phase_start` and the spans are seconds since the study started.
pub fn analyse_held(phase: &PhaseResult, phase_start: f64, spans: &[TaskSpan]) -> Option<HeldAnalysis> {
    let rate = phase.rate.as_ref()?;
    let iops = rate.unit == RateUnit::Iops;
    let (unit, scale) = if iops {
        (RateUnit::Iops, 1.0)
    } else {
        (RateUnit::BytesPerSec, 1.0 / (1u64 << 20) as f64)
    };
    let target = rate.target * scale;
    let first = spans.first().map(|s| s.start);
    let last_end = if spans.iter().all(|s| s.end.is_some()) {
        spans
            .iter()
            .filter_map(|s| s.end)
            .fold(None, |a: Option<f64>, e| Some(a.map_or(e, |a| a.max(e))))
    } else {
        None
    };
    let mut done = 0f64;
    let mut intervals = Vec::new();
    for s in &phase.samples {
        let amount = if iops {
            (s.ops_read + s.ops_written) as f64
        } else {
            (s.bytes_read + s.bytes_written) as f64 * scale
        };
        done += amount;
        let (a, b) = (phase_start + s.t_start, phase_start + s.t_end);
        let mid = (a + b) / 2.0;
        let stretch = match (first, last_end) {
            (Some(f), _) if mid < f => Stretch::Before,
            (None, _) => Stretch::Before,
            (_, Some(e)) if mid >= e => Stretch::After,
            _ => Stretch::During,
        };
        let span = (s.t_end - s.t_start).max(1e-9);
        intervals.push(HeldInterval {
            t_start: a,
            t_end: b,
            achieved: amount / span,
            p50_us: s.lat_p50_ns as f64 / 1e3,
            p99_us: s.lat_p99_ns as f64 / 1e3,
            p99_9_us: s.lat_p99_9_ns as f64 / 1e3,
            behind: (target * s.t_end - done).max(0.0),
            stretch,
        });
    }
    let stretches: Vec<StretchSummary> = [Stretch::Before, Stretch::During, Stretch::After]
        .into_iter()
        .filter_map(|st| {
            let v: Vec<&HeldInterval> = intervals.iter().filter(|i| i.stretch == st).collect();
            (!v.is_empty()).then(|| StretchSummary {
                stretch: st,
                intervals: v.len(),
                achieved: v.iter().map(|i| i.achieved).sum::<f64>() / v.len() as f64,
                achieved_min: v.iter().map(|i| i.achieved).fold(f64::INFINITY, f64::min),
                p99_us: v.iter().map(|i| i.p99_us).sum::<f64>() / v.len() as f64,
                p99_9_max_us: v.iter().map(|i| i.p99_9_us).fold(0.0, f64::max),
                behind_max: v.iter().map(|i| i.behind).fold(0.0, f64::max),
            })
        })
        .collect();
    let before_max = intervals
        .iter()
        .filter(|i| i.stretch == Stretch::Before)
        .map(|i| i.behind)
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    let tolerance = before_max.unwrap_or(0.0).max(target * 0.01);
    let behind_max = intervals.iter().map(|i| i.behind).fold(0.0, f64::max);
    let behind_at_end = intervals.last().map(|i| i.behind).unwrap_or(0.0);
    let repaid_after = last_end.and_then(|e| {
        let built_up = intervals
            .iter()
            .filter(|i| i.stretch != Stretch::Before)
            .any(|i| i.behind > tolerance);
        if !built_up {
            return Some(0.0);
        }
        intervals
            .iter()
            .find(|i| i.t_end >= e && i.behind <= tolerance)
            .map(|i| (i.t_end - e).max(0.0))
    });
    Some(HeldAnalysis {
        unit,
        target,
        intervals,
        stretches,
        tolerance,
        behind_max,
        repaid_after,
        behind_at_end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::result::{RateReport, Sample};

    fn phase(target: f64, per_second: &[u64]) -> PhaseResult {
        PhaseResult {
            rate: Some(RateReport {
                target,
                unit: RateUnit::Iops,
                achieved: target,
                late_ios: 0,
                late_after_ns: 0,
            }),
            samples: per_second
                .iter()
                .enumerate()
                .map(|(i, ops)| Sample {
                    index: i as u32,
                    t_start: i as f64,
                    t_end: i as f64 + 1.0,
                    ops_read: *ops,
                    ..Default::default()
                })
                .collect(),
            ..PhaseResult::default()
        }
    }

    fn span(start: f64, end: f64) -> TaskSpan {
        TaskSpan {
            task: "t".into(),
            start,
            end: Some(end),
            detail: String::new(),
        }
    }

    #[test]
    fn the_deficit_builds_during_the_task_and_is_repaid_after_it() {
        // 100 IOPS target; the phase starts at study time 10; the task runs 12..14. During it
        // the job manages 50 per second; afterwards it catches up at 150 per second.
        let p = phase(100.0, &[100, 100, 50, 50, 150, 150, 100, 100]);
        let a = analyse_held(&p, 10.0, &[span(12.0, 14.0)]).unwrap();
        let behind: Vec<f64> = a.intervals.iter().map(|i| i.behind).collect();
        assert_eq!(behind, [0.0, 0.0, 50.0, 100.0, 50.0, 0.0, 0.0, 0.0]);
        let stretches: Vec<Stretch> = a.intervals.iter().map(|i| i.stretch).collect();
        use Stretch::*;
        assert_eq!(stretches, [Before, Before, During, During, After, After, After, After]);
        assert_eq!(a.behind_max, 100.0);
        // Repaid at the end of second 6 of the phase (study time 16): 2 s after the task ended.
        assert_eq!(a.repaid_after, Some(2.0));
        assert_eq!(a.stretches[1].achieved, 50.0);
        assert_eq!(a.stretches[0].achieved, 100.0);
    }

    #[test]
    fn a_deficit_not_repaid_is_said_so() {
        let p = phase(100.0, &[100, 50, 50, 100, 100]);
        let a = analyse_held(&p, 0.0, &[span(1.0, 3.0)]).unwrap();
        assert_eq!(a.repaid_after, None);
        assert_eq!(a.behind_at_end, 100.0);
        // Nothing built up: repaid at once.
        let p = phase(100.0, &[100, 100, 100, 100]);
        assert_eq!(
            analyse_held(&p, 0.0, &[span(1.0, 2.0)]).unwrap().repaid_after,
            Some(0.0)
        );
    }

    #[test]
    fn a_bandwidth_target_counts_its_deficit_in_mib() {
        // 4 MiB/s target: 2 MiB done in the second second, 6 in the third.
        let mut p = phase(4.0 * 1048576.0, &[0, 0, 0]);
        p.rate.as_mut().unwrap().unit = RateUnit::BytesPerSec;
        for (smp, mib) in p.samples.iter_mut().zip([4u64, 2, 6]) {
            smp.bytes_written = mib << 20;
        }
        let a = analyse_held(&p, 0.0, &[span(1.0, 2.0)]).unwrap();
        assert_eq!(a.unit, RateUnit::BytesPerSec);
        assert_eq!(a.target, 4.0);
        let behind: Vec<f64> = a.intervals.iter().map(|i| i.behind).collect();
        assert_eq!(behind, [0.0, 2.0, 0.0]);
        assert_eq!(a.repaid_after, Some(1.0));
    }

    #[test]
    fn projection_follows_the_ral_reasoning() {
        // RAL: a verify costs one server 13.9 % of its reads; with 10 servers and a 5 % budget,
        // 3 at once cost the pool 4.17 %, 4 would cost 5.56 %.
        let p = project(13.9, 10, 5.0);
        assert_eq!(p.largest_k, 3);
        assert!((p.by_k[2].1 - 4.17).abs() < 0.01);
        assert_eq!(project(60.0, 10, 5.0).largest_k, 0);
        assert_eq!(project(-2.0, 4, 1.0).largest_k, 4, "a gain costs nothing");
        assert_eq!(round_seconds(100.0, 10, 3), Some(400.0));
        assert_eq!(round_seconds(100.0, 10, 0), None);
    }
}
