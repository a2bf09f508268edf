//! Comparisons of groups of runs: per phase and metric, Welch's test of each group against
//! the first (crates/stats), and what differs between the runs' workloads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use storlab_stats::{compare, Comparison, Summary, Verdict};
use storlab_store::{PhaseRow, RunDetail};

/// The metrics a comparison reports per phase: name, unit, and how to read it from a phase.
pub const METRICS: &[(&str, &str)] = &[
    ("MiB/s", "MiB/s"),
    ("IOPS", "IOPS"),
    ("lat p50", "µs"),
    ("lat p99", "µs"),
    ("lat p99.9", "µs"),
];

/// A metric's value for a phase.
pub fn metric(p: &PhaseRow, name: &str) -> f64 {
    match name {
        "MiB/s" => p.bytes_per_sec / (1u64 << 20) as f64,
        "IOPS" => p.iops,
        "lat p50" => p.lat_p50_ns as f64 / 1e3,
        "lat p99" => p.lat_p99_ns as f64 / 1e3,
        "lat p99.9" => p.lat_p99_9_ns as f64 / 1e3,
        _ => f64::NAN,
    }
}

/// Higher is better for throughput, lower for latency.
pub fn higher_is_better(name: &str) -> bool {
    !name.starts_with("lat")
}

/// A phase's workload, as far as comparisons go: what was done, not where or with which seed.
pub fn workload_of(p: &PhaseRow) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("phase".into(), p.kind.clone());
    if let Value::Object(o) = &p.params {
        for (k, v) in o {
            match k.as_str() {
                // Where, which seed and how the results were sampled do not change the workload.
                "workers" | "seed" | "generation" | "verify_generations" | "interval" | "late_after"
                | "write_headers" => {}
                _ => {
                    m.insert(k.clone(), readable(k, v));
                }
            }
        }
        if let Some(Value::Array(w)) = o.get("workers") {
            m.insert("threads".into(), w.len().to_string());
            let lens: Vec<String> = w.iter().map(|x| x["len"].to_string()).collect();
            m.insert("bytes per worker".into(), lens.join(","));
        }
    }
    m
}

/// A parameter's value as a user writes it: block sizes in bytes with units, mixes as
/// size:weight, strings without quotes.
fn readable(key: &str, v: &Value) -> String {
    let size = |b: u64| {
        let units = [(1u64 << 40, "t"), (1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
        units
            .iter()
            .find(|(u, _)| b >= *u && b.is_multiple_of(*u))
            .map(|(u, s)| format!("{}{s}", b / u))
            .unwrap_or_else(|| b.to_string())
    };
    match (key, v) {
        ("bs", Value::Object(o)) if o.contains_key("fixed") => o["fixed"].as_u64().map(size).unwrap_or_default(),
        ("bs", Value::Object(o)) if o.contains_key("mix") => o["mix"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|p| format!("{}:{}", p[0].as_u64().map(size).unwrap_or_default(), p[1]))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
        ("rate", Value::Object(o)) => {
            let per = if o.get("per_worker").and_then(Value::as_bool) == Some(true) {
                "per worker"
            } else {
                "in total"
            };
            match o.get("rate") {
                Some(Value::Object(r)) if r.contains_key("iops") => format!("{} IOPS {per}", r["iops"]),
                Some(Value::Object(r)) if r.contains_key("bytes_per_sec") => {
                    format!("{} bytes/s {per}", r["bytes_per_sec"])
                }
                _ => v.to_string(),
            }
        }
        (_, Value::String(s)) => s.clone(),
        _ => v.to_string(),
    }
}

/// One metric of one phase, one group against the baseline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricComparison {
    /// The phase (1-based).
    pub phase: u32,
    /// The phase kind.
    pub kind: String,
    /// The metric.
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// The group compared.
    pub group: String,
    /// The baseline group.
    pub baseline: String,
    /// Welch's comparison.
    pub comparison: Comparison,
    /// "better", "worse" or "no significant difference", from the verdict and the metric.
    pub reading: String,
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompareReport {
    /// The groups: label and run ids.
    pub groups: Vec<(String, Vec<i64>)>,
    /// What differs between the runs' workloads.
    pub differences: Vec<String>,
    /// Every metric of every phase, each group against the baseline.
    pub metrics: Vec<MetricComparison>,
    /// Groups too small, cache flattery.
    pub warnings: Vec<String>,
}

/// Compares groups of runs (each a label and its runs, the first the baseline). Differences
/// between the runs' workloads are listed, not refused: the caller decides.
pub fn compare_groups(labels: &[String], members: &[Vec<RunDetail>]) -> CompareReport {
    // Every run must have the same phases with the same workload, or be allowed to differ.
    let reference = &members[0][0];
    let mut differences = Vec::new();
    type DiffKey = (u32, String, String, String, String);
    let mut param_diffs: Vec<(DiffKey, Vec<i64>)> = Vec::new();
    for (gi, g) in members.iter().enumerate() {
        for r in g {
            if r.phases.len() != reference.phases.len()
                || r.phases.iter().zip(&reference.phases).any(|(a, b)| a.kind != b.kind)
            {
                let kinds = |r: &RunDetail| r.phases.iter().map(|p| p.kind.clone()).collect::<Vec<_>>().join(",");
                differences.push(format!(
                    "run {} ({}) has phases {} where run {} has {}",
                    r.run.id,
                    labels[gi].clone(),
                    kinds(r),
                    reference.run.id,
                    kinds(reference)
                ));
                continue;
            }
            for (a, b) in r.phases.iter().zip(&reference.phases) {
                let (wa, wb) = (workload_of(a), workload_of(b));
                for k in wa.keys().chain(wb.keys()).collect::<std::collections::BTreeSet<_>>() {
                    let (va, vb) = (wa.get(k), wb.get(k));
                    if va != vb {
                        let key = (
                            a.seq,
                            a.kind.clone(),
                            k.clone(),
                            va.cloned().unwrap_or_else(|| "unset".into()),
                            vb.cloned().unwrap_or_else(|| "unset".into()),
                        );
                        match param_diffs.iter_mut().find(|(d, _)| *d == key) {
                            Some((_, ids)) => ids.push(r.run.id),
                            None => param_diffs.push((key, vec![r.run.id])),
                        }
                    }
                }
            }
        }
    }
    for ((seq, kind, k, va, vb), ids) in param_diffs {
        differences.push(format!(
            "phase {} {kind}: {k} is {va} in run{} {} but {vb} in run {}",
            seq + 1,
            if ids.len() > 1 { "s" } else { "" },
            ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", "),
            reference.run.id
        ));
    }
    differences.dedup();
    let n_phases = members.iter().flatten().map(|r| r.phases.len()).min().unwrap_or(0);
    let mut metrics = Vec::new();
    let mut warnings = Vec::new();
    for (gi, g) in members.iter().enumerate() {
        if g.len() < 2 {
            warnings.push(format!(
                "{} has {} run: a group of one has no spread, so no confidence interval can be given for it",
                labels[gi].clone(),
                g.len()
            ));
        }
        if g.iter().any(|r| r.run.cache_flattered) {
            warnings.push(format!(
                "{}: some runs may have been flattered by the page cache (file set under 3 × RAM without O_DIRECT)",
                labels[gi].clone()
            ));
        }
    }
    for seq in 0..n_phases {
        for (name, unit) in METRICS {
            let values = |g: &Vec<RunDetail>| g.iter().map(|r| metric(&r.phases[seq], name)).collect::<Vec<f64>>();
            let base = values(&members[0]);
            for (gi, g) in members.iter().enumerate().skip(1) {
                let Some(c) = compare(&base, &values(g)) else { continue };
                let reading = match (c.verdict, higher_is_better(name)) {
                    (Verdict::Higher, true) | (Verdict::Lower, false) => "better",
                    (Verdict::Higher, false) | (Verdict::Lower, true) => "worse",
                    (Verdict::NotSignificant, _) => "no significant difference",
                    (Verdict::TooFew, _) => "too few runs to tell",
                };
                metrics.push(MetricComparison {
                    phase: seq as u32 + 1,
                    kind: members[0][0].phases[seq].kind.clone(),
                    metric: name.to_string(),
                    unit: unit.to_string(),
                    group: labels[gi].clone(),
                    baseline: labels[0].clone(),
                    comparison: c,
                    reading: reading.into(),
                });
            }
        }
    }
    CompareReport {
        groups: labels
            .iter()
            .zip(members)
            .map(|(s, g)| (s.clone(), g.iter().map(|r| r.run.id).collect()))
            .collect(),
        differences,
        metrics,
        warnings,
    }
}

fn num(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn mean_sd(s: &Summary) -> String {
    match s.sd {
        Some(sd) => format!("{} ± {} (n={})", num(s.mean), num(sd), s.n),
        None => format!("{} (n=1)", num(s.mean)),
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|p| format!("{p:+.2} %")).unwrap_or_else(|| "-".into())
}

/// The comparison as the terminal shows it: a table, a verdict per metric, differences, warnings.
pub fn render_text(r: &CompareReport) -> String {
    let mut s = String::new();
    for (i, (label, ids)) in r.groups.iter().enumerate() {
        let ids: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        s += &format!(
            "group {}: {label} (runs {}){}\n",
            (b'A' + i as u8) as char,
            ids.join(", "),
            if i == 0 { " — the baseline" } else { "" }
        );
    }
    s += "\n";
    let mut rows = vec![vec![
        "phase".to_string(),
        "metric".into(),
        "A: mean ± sd".into(),
        "group".into(),
        "mean ± sd".into(),
        "difference".into(),
        "95 % CI".into(),
        "verdict".into(),
    ]];
    for m in &r.metrics {
        let c = &m.comparison;
        let gi = r.groups.iter().position(|(l, _)| *l == m.group).unwrap_or(0);
        rows.push(vec![
            format!("{} {}", m.phase, m.kind),
            if m.metric == m.unit {
                m.metric.clone()
            } else {
                format!("{} ({})", m.metric, m.unit)
            },
            mean_sd(&c.a),
            ((b'A' + gi as u8) as char).to_string(),
            mean_sd(&c.b),
            pct(c.diff_percent),
            c.ci95_percent
                .map(|(lo, hi)| format!("{lo:+.2} % to {hi:+.2} %"))
                .unwrap_or_else(|| "-".into()),
            m.reading.clone(),
        ]);
    }
    s += &crate::text_table(&rows);
    s += "\n";
    for m in &r.metrics {
        let c = &m.comparison;
        let gi = r.groups.iter().position(|(l, _)| *l == m.group).unwrap_or(0);
        let g = (b'A' + gi as u8) as char;
        let line = match c.verdict {
            Verdict::TooFew => format!(
                "phase {} {} {}: {g} {} A ({}); {}",
                m.phase,
                m.kind,
                m.metric,
                if c.diff >= 0.0 { "is above" } else { "is below" },
                pct(c.diff_percent),
                c.verdict.words()
            ),
            Verdict::NotSignificant => format!(
                "phase {} {} {}: no significant difference between {g} and A ({}, 95 % CI {})",
                m.phase,
                m.kind,
                m.metric,
                pct(c.diff_percent),
                c.ci95_percent
                    .map(|(lo, hi)| format!("{lo:+.2} % to {hi:+.2} %"))
                    .unwrap_or_default()
            ),
            _ => format!(
                "phase {} {} {}: {g} is {} than A by {} (95 % CI {}) — {}",
                m.phase,
                m.kind,
                m.metric,
                if c.diff > 0.0 { "higher" } else { "lower" },
                pct(c.diff_percent.map(f64::abs)).trim_start_matches('+'),
                c.ci95_percent
                    .map(|(lo, hi)| format!("{lo:+.2} % to {hi:+.2} %"))
                    .unwrap_or_default(),
                m.reading
            ),
        };
        s += &line;
        s += "\n";
    }
    if !r.differences.is_empty() {
        s += "\nthe runs' workloads differ (compared anyway, --allow-different):\n";
        for d in &r.differences {
            s += &format!("  {d}\n");
        }
    }
    for w in &r.warnings {
        s += &format!("warning: {w}\n");
    }
    s
}
