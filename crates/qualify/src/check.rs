//! A criterion's text and the figures it can name.
//!
//! ```text
//! [PHASE] [read|write] FIGURE >= VALUE             randread IOPS >= 20,000
//! [PHASE] [read|write] FIGURE <= VALUE             p99 latency <= 5 ms
//! … FIGURE >= V1 | V2 | V3                         one threshold per point of the job's vary
//! … FIGURE >= P% of VALUE                          write MiB/s >= 90% of 1200
//! … FIGURE >= P% of baseline                       MiB/s >= 95% of baseline   (with baseline = …)
//! … FIGURE no worse than baseline by more than P%  (≥ (100 − P)% for throughput, ≤ (100 + P)% for latency)
//! … FIGURE cost <= P%                              read MiB/s cost <= 5%      (a job with a task)
//! ```
//!
//! FIGURE: `MiB/s` (also `throughput`, `bandwidth`, `bw`), `IOPS` (also `ops/s`), or a latency:
//! `lat p99`, `latency p99.9`, `p99 latency`, `p50`, `p90`, `p99`, `p99.9`, `p99.99`, `mean`,
//! `max`. `≥` and `≤` may stand for `>=` and `<=`. Values: throughput in MiB/s unless a unit says
//! (`1.2GiB/s`, `800MB/s`); IOPS as a number (`20000`, `20,000`, `20k`); a latency with its
//! unit (`500us`, `5 ms`). PHASE is the phase's name or kind in the job (needed when the job
//! has several); `read` or `write` takes one direction of a phase that does both.

use storlab_model::qualify::Direction;
use storlab_model::result::{Figure as Recorded, Latency, PhaseResult};

const MIB: f64 = 1048576.0;

/// Which latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Percentile {
    /// Median.
    P50,
    /// 90th.
    P90,
    /// 99th.
    P99,
    /// 99.9th.
    P99_9,
    /// 99.99th.
    P99_99,
    /// Mean.
    Mean,
    /// Largest.
    Max,
}

impl Percentile {
    fn name(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P99 => "p99",
            Percentile::P99_9 => "p99.9",
            Percentile::P99_99 => "p99.99",
            Percentile::Mean => "mean",
            Percentile::Max => "max",
        }
    }

    fn from_word(w: &str) -> Option<Percentile> {
        Some(match w {
            "p50" | "median" => Percentile::P50,
            "p90" => Percentile::P90,
            "p99" => Percentile::P99,
            "p99.9" => Percentile::P99_9,
            "p99.99" => Percentile::P99_99,
            "mean" | "average" | "avg" => Percentile::Mean,
            "max" => Percentile::Max,
            _ => return None,
        })
    }

    fn of(self, l: &Latency) -> f64 {
        match self {
            Percentile::P50 => l.p50_ns as f64,
            Percentile::P90 => l.p90_ns as f64,
            Percentile::P99 => l.p99_ns as f64,
            Percentile::P99_9 => l.p99_9_ns as f64,
            Percentile::P99_99 => l.p99_99_ns as f64,
            Percentile::Mean => l.mean_ns,
            Percentile::Max => l.max_ns as f64,
        }
    }
}

/// What is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// MiB/s.
    Throughput,
    /// I/Os per second.
    Iops,
    /// A latency, µs.
    Latency(Percentile),
}

/// Reads, writes or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Reads only.
    Read,
    /// Writes only.
    Write,
}

/// A figure of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figure {
    /// What.
    pub measure: Measure,
    /// One direction of a phase that does both, or all its I/O.
    pub way: Option<Way>,
}

impl Figure {
    /// Its name: "MiB/s", "read IOPS", "lat p99".
    pub fn name(&self) -> String {
        let m = match self.measure {
            Measure::Throughput => "MiB/s".to_string(),
            Measure::Iops => "IOPS".to_string(),
            Measure::Latency(p) => format!("lat {}", p.name()),
        };
        match self.way {
            Some(Way::Read) => format!("read {m}"),
            Some(Way::Write) => format!("write {m}"),
            None => m,
        }
    }

    /// The unit of its values.
    pub fn unit(&self) -> &'static str {
        match self.measure {
            Measure::Throughput => "MiB/s",
            Measure::Iops => "IOPS",
            Measure::Latency(_) => "µs",
        }
    }

    /// True when more is better (throughput), false for a latency.
    pub fn more_is_better(&self) -> bool {
        !matches!(self.measure, Measure::Latency(_))
    }

    /// True when it is decided on the logarithmic scale: a latency, whose runs scatter with a
    /// long tail on the slow side (a few slow runs), is compared by its geometric mean, on which
    /// the t intervals hold (crates/stats/tests/sequential_simulation.rs measured both).
    pub fn log_scale(&self) -> bool {
        matches!(self.measure, Measure::Latency(_))
    }

    /// Whether a phase that reads (`reads`) and writes (`writes`) measures it; Err says why not.
    pub fn measured_by(&self, reads: bool, writes: bool) -> Result<(), String> {
        match self.way {
            Some(Way::Read) if !reads => Err(format!("{}: the phase does no reads", self.name())),
            Some(Way::Write) if !writes => Err(format!("{}: the phase does no writes", self.name())),
            _ => Ok(()),
        }
    }

    /// Its value in a phase's result, or None when the phase did not measure it (no I/O in
    /// that direction, a figure its source did not record).
    pub fn read(&self, r: &PhaseResult) -> Option<f64> {
        let secs = r.all_done.seconds;
        let (bytes, ops, lat) = match self.way {
            None => (r.bytes_read + r.bytes_written, r.ops_read + r.ops_written, &r.latency),
            Some(Way::Read) => (r.bytes_read, r.ops_read, &r.latency_read),
            Some(Way::Write) => (r.bytes_written, r.ops_written, &r.latency_write),
        };
        if ops == 0 || secs <= 0.0 {
            return None;
        }
        let recorded = |f| !r.not_measured.contains(&f);
        match self.measure {
            Measure::Throughput if recorded(Recorded::Throughput) => Some(match self.way {
                None => r.all_done.bytes_per_sec / MIB,
                Some(_) => bytes as f64 / secs / MIB,
            }),
            Measure::Iops if recorded(Recorded::Iops) => Some(match self.way {
                None => r.all_done.iops,
                Some(_) => ops as f64 / secs,
            }),
            Measure::Latency(p) if recorded(Recorded::Latency) && lat.count > 0 => Some(p.of(lat) / 1e3),
            _ => None,
        }
    }
}

/// What the figure is held to.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A number in the figure's unit: one, or one per point of the job.
    Values(Vec<f64>),
    /// A fraction of stored runs' figure (0.95 for "95% of baseline").
    OfBaseline(f64),
    /// The cost of the job's background task, percent (the loss of throughput, the rise of
    /// latency).
    Cost(f64),
}

/// A criterion's text, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The words before the figure: a phase's name, `read` or `write` (prepare.rs resolves
    /// them against the job's phases).
    pub qualifiers: Vec<String>,
    /// The figure, without the direction the qualifiers may give.
    pub measure: Measure,
    /// At least or at most.
    pub direction: Direction,
    /// The threshold.
    pub target: Target,
}

fn number(s: &str) -> Option<f64> {
    let t: String = s.chars().filter(|c| *c != ',' && *c != '_').collect();
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The number and the unit after it: "1.2GiB/s" → (1.2, "gib/s").
fn split_value(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || matches!(c, '.' | ',' | '_' | '-' | '+')))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    Some((number(&s[..end])?, s[end..].trim().to_ascii_lowercase()))
}

/// A value in the figure's unit.
fn value(measure: Measure, s: &str) -> Result<f64, String> {
    let (v, unit) = split_value(s).ok_or_else(|| format!("'{}' is not a number", s.trim()))?;
    let factor = match measure {
        Measure::Throughput => match unit.as_str() {
            "" | "mib/s" => 1.0,
            "gib/s" => 1024.0,
            "kib/s" => 1.0 / 1024.0,
            "tib/s" => 1024.0 * 1024.0,
            "mb/s" => 1e6 / MIB,
            "gb/s" => 1e9 / MIB,
            "kb/s" => 1e3 / MIB,
            u => {
                return Err(format!(
                    "'{u}' is not a unit of throughput: MiB/s (the default), GiB/s, KiB/s, MB/s, GB/s or kB/s"
                ))
            }
        },
        Measure::Iops => match unit.trim_end_matches("iops").trim() {
            "" => 1.0,
            "k" => 1e3,
            "m" => 1e6,
            u => {
                return Err(format!(
                    "'{u}' after an IOPS figure: give a number (20000, 20,000 or 20k)"
                ))
            }
        },
        Measure::Latency(_) => match unit.as_str() {
            "ns" => 1e-3,
            "us" | "µs" | "μs" => 1.0,
            "ms" => 1e3,
            "s" => 1e6,
            "" => return Err(format!("a latency needs its unit: {} ms, {} us, …", s.trim(), s.trim())),
            u => return Err(format!("'{u}' is not a unit of time: ns, us, ms or s")),
        },
    };
    let v = v * factor;
    if v <= 0.0 {
        return Err(format!("{}: a threshold must be above 0", s.trim()));
    }
    Ok(v)
}

fn percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let n = t
        .strip_suffix('%')
        .ok_or_else(|| format!("'{t}': expected a percentage such as 5%"))?;
    number(n.trim()).ok_or_else(|| format!("'{t}': expected a percentage such as 5%"))
}

/// The figure at the end of `words` (and the words before it).
fn figure(words: &[&str]) -> Result<(Vec<String>, Measure), String> {
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let n = lower.len();
    let last = lower.last().map(String::as_str).unwrap_or("");
    let (used, measure) = match last {
        "mib/s" | "throughput" | "bandwidth" | "bw" => (1, Measure::Throughput),
        "mb/s" => {
            return Err(
                "'MB/s' as a figure: the figure is MiB/s (give thresholds in MB/s after the operator if you like)"
                    .into(),
            )
        }
        "iops" | "ops/s" => (1, Measure::Iops),
        "lat" | "latency" if n >= 2 => match Percentile::from_word(&lower[n - 2]) {
            Some(p) => (2, Measure::Latency(p)),
            None => {
                return Err(format!(
                    "'{}' before {last}: expected p50, p90, p99, p99.9, p99.99, mean or max",
                    words[n - 2]
                ))
            }
        },
        w => match Percentile::from_word(w) {
            Some(p) if n >= 2 && matches!(lower[n - 2].as_str(), "lat" | "latency") => (2, Measure::Latency(p)),
            Some(p) => (1, Measure::Latency(p)),
            None => {
                return Err(format!(
                    "no figure before the operator ('{}'): expected MiB/s, IOPS, or a latency such as lat p99",
                    words.join(" ")
                ))
            }
        },
    };
    Ok((words[..n - used].iter().map(|w| w.to_string()).collect(), measure))
}

/// Reads a criterion's text.
pub fn parse(text: &str) -> Result<Check, String> {
    let t = text.replace('≥', ">=").replace('≤', "<=");
    if let Some(i) = t.to_ascii_lowercase().find("no worse than") {
        return no_worse_than(text, &t, i);
    }
    let (at, direction, len) = match (t.find(">="), t.find("<=")) {
        (Some(i), None) => (i, Direction::AtLeast, 2),
        (None, Some(i)) => (i, Direction::AtMost, 2),
        (Some(_), Some(_)) => return Err(format!("'{text}': one criterion has one operator")),
        (None, None) => {
            return Err(if t.contains('>') || t.contains('<') {
                format!("'{text}': use >= or <= (≥, ≤): a measured figure is never exactly its threshold")
            } else {
                format!("'{text}': no operator: expected FIGURE >= VALUE or FIGURE <= VALUE")
            })
        }
    };
    let (left, right) = (t[..at].trim(), t[at + len..].trim());
    let mut words: Vec<&str> = left.split_whitespace().collect();
    let cost = words
        .last()
        .is_some_and(|w| matches!(w.to_ascii_lowercase().as_str(), "cost" | "loss"));
    if cost {
        words.pop();
    }
    let (qualifiers, measure) = figure(&words)?;
    if right.is_empty() {
        return Err(format!("'{text}': nothing after the operator"));
    }
    let target = if cost {
        cost_target(text, right, direction, measure)?
    } else if let Some((p, of)) = right.to_ascii_lowercase().split_once(" of ") {
        let p = percent(p)?;
        if p <= 0.0 {
            return Err(format!("'{text}': {p} % of anything is no threshold"));
        }
        if of.trim() == "baseline" {
            Target::OfBaseline(p / 100.0)
        } else {
            Target::Values(vec![p / 100.0 * value(measure, of)?])
        }
    } else {
        Target::Values(right.split('|').map(|v| value(measure, v)).collect::<Result<_, _>>()?)
    };
    Ok(Check {
        qualifiers,
        measure,
        direction,
        target,
    })
}

/// "… no worse than baseline by more than P%" (`t` is the text with ≥ and ≤ spelt, `i` where
/// the words begin).
fn no_worse_than(text: &str, t: &str, i: usize) -> Result<Check, String> {
    let lower = t.to_ascii_lowercase();
    let rest = lower[i + "no worse than".len()..].trim();
    let p = rest
        .strip_prefix("baseline")
        .map(str::trim)
        .and_then(|r| r.strip_prefix("by more than"))
        .ok_or_else(|| format!("'{text}': expected … no worse than baseline by more than P%"))?;
    let p = percent(p)?;
    let words: Vec<&str> = t[..i].split_whitespace().collect();
    let (qualifiers, measure) = figure(&words)?;
    // A throughput can lose less than all of itself; a latency may grow without end.
    let most = if matches!(measure, Measure::Latency(_)) {
        f64::INFINITY
    } else {
        100.0
    };
    if !(0.0..most).contains(&p) {
        return Err(format!(
            "'{text}': {p} % worse is not a bound: a throughput's loss lies between 0 and 100 %"
        ));
    }
    let (direction, ratio) = match measure {
        Measure::Latency(_) => (Direction::AtMost, 1.0 + p / 100.0),
        _ => (Direction::AtLeast, 1.0 - p / 100.0),
    };
    Ok(Check {
        qualifiers,
        measure,
        direction,
        target: Target::OfBaseline(ratio),
    })
}

/// A task's cost held under a budget: `cost <= P%`.
fn cost_target(text: &str, right: &str, direction: Direction, measure: Measure) -> Result<Target, String> {
    if direction != Direction::AtMost {
        return Err(format!("'{text}': a cost is held under a budget: cost <= P%"));
    }
    let p = percent(right)?;
    // A throughput's loss lies below 100 %; a latency may more than double.
    if !(p > 0.0 && (p < 100.0 || matches!(measure, Measure::Latency(_)))) {
        return Err(format!(
            "'{text}': a budget of {p} %: a throughput's loss lies between 0 and 100 % (at 100 % the job stopped)"
        ));
    }
    Ok(Target::Cost(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(t: &str) -> Check {
        parse(t).unwrap_or_else(|e| panic!("{t}: {e}"))
    }

    #[test]
    fn the_forms_of_a_criterion() {
        let x = c("randread IOPS ≥ 20,000");
        assert_eq!(
            (x.qualifiers, x.measure, x.direction),
            (vec!["randread".to_string()], Measure::Iops, Direction::AtLeast)
        );
        assert_eq!(x.target, Target::Values(vec![20000.0]));
        let x = c("p99 latency <= 5 ms");
        assert_eq!(
            (x.measure, x.target),
            (Measure::Latency(Percentile::P99), Target::Values(vec![5000.0]))
        );
        let x = c("write MiB/s >= 90% of 1200");
        assert_eq!(x.qualifiers, vec!["write".to_string()]);
        assert!(matches!(x.target, Target::Values(ref v) if (v[0] - 1080.0).abs() < 1e-9));
        assert_eq!(c("MiB/s >= 1.2GiB/s").target, Target::Values(vec![1228.8]));
        assert_eq!(
            c("MiB/s >= 300 | 600 | 700").target,
            Target::Values(vec![300.0, 600.0, 700.0])
        );
        assert_eq!(c("IOPS >= 20k").target, Target::Values(vec![20000.0]));
        assert_eq!(c("MiB/s >= 95% of baseline").target, Target::OfBaseline(0.95));
        let x = c("read lat p99 no worse than baseline by more than 10%");
        assert_eq!((x.direction, x.target), (Direction::AtMost, Target::OfBaseline(1.1)));
        let x = c("MiB/s no worse than baseline by more than 5%");
        assert_eq!((x.direction, x.target), (Direction::AtLeast, Target::OfBaseline(0.95)));
        let x = c("read MiB/s cost <= 5%");
        assert_eq!((x.qualifiers, x.target), (vec!["read".to_string()], Target::Cost(5.0)));
        assert_eq!(c("lat p99.9 <= 500us").target, Target::Values(vec![500.0]));
    }

    #[test]
    fn bad_criteria_say_what_would_be_right() {
        let e = |t: &str| parse(t).unwrap_err();
        assert!(e("IOPS > 5").contains("use >= or <="));
        assert!(e("IOPS 5").contains("no operator"));
        assert!(e("lat p99 <= 5").contains("a latency needs its unit"));
        assert!(e("speed >= 5").contains("no figure before the operator"));
        assert!(e("MiB/s cost <= 150%").contains("between 0 and 100 %"));
        assert!(e("MiB/s cost >= 5%").contains("cost <= P%"));
        assert!(e("IOPS >= -5").contains("above 0"));
        assert!(e("MiB/s >= 5 furlongs/s").contains("not a unit of throughput"));
    }
}
