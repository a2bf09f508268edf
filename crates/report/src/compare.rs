//! Comparisons of groups of runs: per phase and metric, Welch's test of each group against
//! the first (crates/stats), and what differs between the runs' workloads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use storlab_model::plan::{BlockSizes, RateLimit};
use storlab_model::result::Figure;
use storlab_model::run::{Phase, PhaseParams, RunDetail};
use storlab_stats::{compare, Comparison, Summary, Verdict};
use storlab_units::{Rate, Size};

use crate::table::Table;

/// The metrics a comparison reports per phase: name, unit, and how to read it from a phase.
pub const METRICS: &[(&str, &str)] = &[
    ("MiB/s", "MiB/s"),
    ("IOPS", "IOPS"),
    ("lat p50", "µs"),
    ("lat p99", "µs"),
    ("lat p99.9", "µs"),
];

/// A metric's value for a phase; NaN when the phase's source did not measure it (an import
/// of a tool that prints no latency), so that no statistic counts it.
pub fn metric(p: &Phase, name: &str) -> f64 {
    let r = &p.result;
    let figure = match name {
        "MiB/s" => Figure::Throughput,
        "IOPS" => Figure::Iops,
        _ => Figure::Latency,
    };
    if !r.measured(figure) {
        return f64::NAN;
    }
    match name {
        "MiB/s" => r.all_done.bytes_per_sec / (1u64 << 20) as f64,
        "IOPS" => r.all_done.iops,
        "lat p50" => r.latency.p50_ns as f64 / 1e3,
        "lat p99" => r.latency.p99_ns as f64 / 1e3,
        "lat p99.9" => r.latency.p99_9_ns as f64 / 1e3,
        _ => f64::NAN,
    }
}

/// Higher is better for throughput, lower for latency.
pub fn higher_is_better(name: &str) -> bool {
    !name.starts_with("lat")
}

/// A phase's workload, as far as comparisons go: what was done, not where or with which seed.
/// Every setting of the plan is named by its key, so that a setting added to the declaration
/// is compared without a change here; block sizes and rates are written as a user writes them.
pub fn workload_of(p: &Phase) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert("phase".into(), p.kind.to_string());
    let fields = match &p.params {
        PhaseParams::Plan(plan) => {
            m.insert("bs".into(), bs_text(&plan.settings.bs));
            if let Some(r) = &plan.rate() {
                m.insert("rate".into(), rate_text(r));
            }
            m.insert("threads".into(), plan.workers.len().to_string());
            let lens: Vec<String> = plan.workers.iter().map(|w| w.total_len().to_string()).collect();
            m.insert("bytes per worker".into(), lens.join(","));
            serde_json::to_value(&plan.settings).unwrap_or_default()
        }
        PhaseParams::Imported(i) => serde_json::to_value(i).unwrap_or_default(),
        // What a metadata phase was asked to do; what it did (entries, errors) is a result.
        PhaseParams::Meta(meta) => {
            let mut v = serde_json::to_value(meta).unwrap_or_default();
            if let Value::Object(o) = &mut v {
                for done in ["entries", "errors", "first_errors"] {
                    o.remove(done);
                }
            }
            v
        }
    };
    if let Value::Object(o) = fields {
        for (k, v) in o {
            match k.as_str() {
                // Which seed and how the results were sampled do not change the workload; block
                // sizes, rates, threads and sizes are written above.
                "seed" | "interval" | "late_after" | "notes" | "bs" | "rate" | "rate_per" | "threads" | "size" => {}
                _ => {
                    m.insert(k, if let Value::String(s) = v { s } else { v.to_string() });
                }
            }
        }
    }
    m
}

/// Block sizes as a user writes them: 4k, or 4k:70,64k:30.
pub fn bs_text(bs: &BlockSizes) -> String {
    let size = |b: u64| {
        let units = [(1u64 << 40, "t"), (1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
        units
            .iter()
            .find(|(u, _)| b >= *u && b.is_multiple_of(*u))
            .map(|(u, s)| format!("{}{s}", b / u))
            .unwrap_or_else(|| Size(b).to_string())
    };
    match bs {
        BlockSizes::Fixed(b) => size(*b),
        BlockSizes::Mix(m) => m
            .iter()
            .map(|(b, w)| format!("{}:{w}", size(*b)))
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn rate_text(r: &RateLimit) -> String {
    let per = if r.per_worker { "per worker" } else { "in total" };
    match r.rate {
        Rate::Iops(v) => format!("{v} IOPS {per}"),
        Rate::BytesPerSec(v) => format!("{v} bytes/s {per}"),
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
    /// What differs between the runs' workloads: a line per setting.
    pub differences: Vec<String>,
    /// Every metric of every paired phase, each group against the baseline.
    pub metrics: Vec<MetricComparison>,
    /// Phases with no like phase in every run, not compared: "run 7 phase 1 read (bs 4k, …)".
    #[serde(default)]
    pub unpaired: Vec<String>,
    /// Groups too small, cache flattery, different bounds.
    pub warnings: Vec<String>,
}

/// `storlab results compare`'s groups, declared here once (the binary flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CompareFlags {
    /// The groups.
    #[arg(value_name = "GROUP", required = true)]
    pub groups: Vec<String>,
    /// Compare runs whose workloads differ (the differences are printed with the result).
    #[arg(long = "allow-different")]
    pub allow_different: bool,
}

/// Compares the groups `specs` names (run ids such as `3,4,5`, or tags) as stored; refuses
/// runs whose workloads differ unless `allow_different` (the differences are then in the
/// report), and a group that does not read, as requests.
pub fn compare_stored(
    store: &storlab_store::Store,
    specs: &[String],
    allow_different: bool,
) -> Result<CompareReport, storlab_store::StoreError> {
    use storlab_store::{GroupSpec, StoreError};
    let mut labels = Vec::new();
    let mut members = Vec::new();
    for g in specs {
        let spec = GroupSpec::parse(g).map_err(StoreError::Request)?;
        members.push(store.group(&spec)?);
        labels.push(spec.label());
    }
    let report = compare_groups(&labels, &members);
    if !report.differences.is_empty() && !allow_different {
        return Err(StoreError::Request(format!(
            "these runs did not run the same workload, so their figures do not compare:\n  {}\n(give --allow-different to compare them anyway; the differences are then printed with the result)",
            report.differences.join("\n  ")
        )));
    }
    Ok(report)
}

/// What makes phases alike, so that they are compared: the kind and the settings that shape
/// the work (block sizes, the read share of a mix, workers, depth). Never the phase's place in
/// its run.
pub fn likeness(p: &Phase) -> String {
    let plan = p.plan();
    let mut words = vec![p.kind.to_string()];
    if let Some(bs) = p.block_sizes() {
        words.push(format!("bs {}", bs_text(&bs)));
    }
    if let Some(pl) = plan.filter(|_| matches!(p.kind.as_str(), "randrw" | "rw")) {
        words.push(format!("rwmix {}", pl.settings.rwmix));
    }
    if let Some(w) = p.workers() {
        words.push(format!("threads {w}"));
    }
    if let Some(pl) = plan {
        words.push(format!("iodepth {}", pl.settings.iodepth));
    }
    words.join(", ")
}

/// The phases of `members` paired by likeness: for each phase of the baseline's first run,
/// in its order, the like phase of every run (each used once), where every run has one.
/// Phases left without a pair are named.
/// Like phases: their likeness, and each group's runs' phase index.
type Pairs = Vec<(String, Vec<Vec<usize>>)>;

fn pair(members: &[Vec<RunDetail>]) -> (Pairs, Vec<String>) {
    let mut used: Vec<Vec<Vec<bool>>> = members
        .iter()
        .map(|g| g.iter().map(|r| vec![false; r.phases.len()]).collect())
        .collect();
    let mut pairs = Vec::new();
    for p in &members[0][0].phases {
        let key = likeness(p);
        let mut at: Vec<Vec<usize>> = Vec::new();
        let mut whole = true;
        for (gi, g) in members.iter().enumerate() {
            let mut in_group = Vec::new();
            for (ri, r) in g.iter().enumerate() {
                let found = r
                    .phases
                    .iter()
                    .enumerate()
                    .position(|(i, q)| !used[gi][ri][i] && likeness(q) == key);
                match found {
                    Some(i) => in_group.push(i),
                    None => whole = false,
                }
            }
            at.push(in_group);
        }
        if whole {
            for (gi, g) in at.iter().enumerate() {
                for (ri, i) in g.iter().enumerate() {
                    used[gi][ri][*i] = true;
                }
            }
            pairs.push((key, at));
        }
    }
    let mut unpaired = Vec::new();
    for (gi, g) in members.iter().enumerate() {
        for (ri, r) in g.iter().enumerate() {
            for (i, p) in r.phases.iter().enumerate() {
                if !used[gi][ri][i] {
                    unpaired.push(format!(
                        "run {} phase {} ({}): no like phase in every run; not compared",
                        r.run.id,
                        i + 1,
                        likeness(p)
                    ));
                }
            }
        }
    }
    (pairs, unpaired)
}

/// Compares groups of runs (each a label and its runs, the first the baseline), phase by like
/// phase. Differences between the runs' workloads are listed, not refused: the caller decides.
pub fn compare_groups(labels: &[String], members: &[Vec<RunDetail>]) -> CompareReport {
    let differences = differences(members);
    let mut warnings = group_warnings(labels, members);
    let (pairs, unpaired) = pair(members);
    let mut metrics = Vec::new();
    for (_, at) in &pairs {
        let phases: Vec<Vec<&Phase>> = members
            .iter()
            .zip(at)
            .map(|(g, idx)| g.iter().zip(idx).map(|(r, i)| &r.phases[*i]).collect())
            .collect();
        // Named by the baseline's phase: its place in the baseline's runs and its kind.
        let first = phases[0][0];
        let what = format!("phase {} {}", first.seq + 1, first.kind);
        warnings.extend(crate::bound::compare_warnings_of(labels, members, &phases, &what));
        for (name, unit) in METRICS {
            metrics.extend(compare_metric(labels, &phases, &what, name, unit, &mut warnings));
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
        unpaired,
        warnings,
    }
}

/// At most this many settings that differ are named one by one; the rest are counted.
const DIFFERENCES_SHOWN: usize = 12;

/// What differs between the runs' workloads: a line per setting whose values are not all the
/// same (a setting unset in one run and null in another is the same), naming each value's runs;
/// past [`DIFFERENCES_SHOWN`] settings, how many more.
fn differences(members: &[Vec<RunDetail>]) -> Vec<String> {
    // Setting → value → the runs with it (a run once per value).
    let mut by: BTreeMap<String, BTreeMap<String, Vec<i64>>> = BTreeMap::new();
    let runs: Vec<&RunDetail> = members.iter().flatten().collect();
    for r in &runs {
        let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in &r.phases {
            for (k, v) in workload_of(p) {
                if v != "null" && v != "unset" {
                    seen.entry(k).or_default().push(v);
                }
            }
        }
        let phases = r
            .phases
            .iter()
            .map(|p| p.kind.to_string())
            .collect::<Vec<_>>()
            .join(",");
        seen.entry("phases".into()).or_default().push(phases);
        for (k, mut vs) in seen {
            vs.dedup();
            let v = vs.join(" / ");
            let ids = by.entry(k).or_default().entry(v).or_default();
            if !ids.contains(&r.run.id) {
                ids.push(r.run.id);
            }
        }
    }
    let mut lines = Vec::new();
    let mut more = 0;
    for (k, values) in &by {
        let unset: Vec<i64> = runs
            .iter()
            .map(|r| r.run.id)
            .filter(|id| !values.values().any(|ids| ids.contains(id)))
            .collect();
        let distinct = values.len() + usize::from(!unset.is_empty());
        if distinct < 2 {
            continue;
        }
        if lines.len() >= DIFFERENCES_SHOWN {
            more += 1;
            continue;
        }
        let mut said: Vec<String> = values
            .iter()
            .map(|(v, ids)| format!("{v} in {}", run_list(ids)))
            .collect();
        if !unset.is_empty() {
            said.push(format!("unset in {}", run_list(&unset)));
        }
        lines.push(format!("{k}: {}", said.join("; ")));
    }
    if more > 0 {
        lines.push(format!(
            "and {more} more settings differ (`storlab results show ID --json` holds each run's)"
        ));
    }
    lines
}

/// "run 3" or "runs 3, 4, 5".
fn run_list(ids: &[i64]) -> String {
    match ids {
        [one] => format!("run {one}"),
        _ => format!("runs {}", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// A group of one run (no spread) and runs the page cache may have flattered, said.
fn group_warnings(labels: &[String], members: &[Vec<RunDetail>]) -> Vec<String> {
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
    warnings
}

/// One metric of a like phase (`phases`: each group's runs' phase), each group against the
/// first: Welch's comparison, of the ratio by Fieller's interval — on the logarithmic scale for
/// latencies, whose spread grows with their size. Runs whose source did not measure the
/// metric are left out of it, and said so.
fn compare_metric(
    labels: &[String],
    phases: &[Vec<&Phase>],
    what: &str,
    name: &str,
    unit: &str,
    warnings: &mut Vec<String>,
) -> Vec<MetricComparison> {
    let values: Vec<Vec<f64>> = phases
        .iter()
        .map(|g| g.iter().map(|p| metric(p, name)).filter(|v| !v.is_nan()).collect())
        .collect();
    for (gi, g) in phases.iter().enumerate() {
        let have = values[gi].len();
        if have < g.len() {
            warnings.push(format!(
                "{}: {name} of {what} not measured in {} of its {} run(s) (imported from a tool that does not report it): {}",
                labels[gi],
                g.len() - have,
                g.len(),
                if have == 0 { "not compared".to_string() } else { "compared over the others".to_string() }
            ));
        }
    }
    let base = &values[0];
    let first = phases[0][0];
    let mut out = Vec::new();
    for (gi, vals) in values.iter().enumerate().skip(1) {
        if base.is_empty() || vals.is_empty() {
            continue;
        }
        let c = if higher_is_better(name) {
            compare(base, vals)
        } else {
            storlab_stats::compare_log(base, vals).or_else(|| compare(base, vals))
        };
        let Some(c) = c else { continue };
        let reading = match (c.verdict, higher_is_better(name)) {
            (Verdict::Higher, true) | (Verdict::Lower, false) => "better",
            (Verdict::Higher, false) | (Verdict::Lower, true) => "worse",
            (Verdict::NotSignificant, _) => "no significant difference",
            (Verdict::TooFew, _) => "too few runs to tell",
        };
        out.push(MetricComparison {
            phase: first.seq + 1,
            kind: first.kind.to_string(),
            metric: name.to_string(),
            unit: unit.to_string(),
            group: labels[gi].clone(),
            baseline: labels[0].clone(),
            comparison: c,
            reading: reading.into(),
        });
    }
    out
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

/// The comparison's table, one row per phase, metric and group: both means with their sample
/// standard deviations, the difference with its 95 % interval, the verdict.
pub fn comparison_table(r: &CompareReport) -> Table {
    let mut t = Table::new(
        "comparison",
        &[
            "phase",
            "metric",
            "A: mean ± sd",
            "group",
            "mean ± sd",
            "difference",
            "95 % CI",
            "verdict",
        ],
    );
    for m in &r.metrics {
        let c = &m.comparison;
        let gi = r.groups.iter().position(|(l, _)| *l == m.group).unwrap_or(0);
        t.push(vec![
            format!("{} {}", m.phase, m.kind).into(),
            if m.metric == m.unit {
                m.metric.clone()
            } else {
                format!("{} ({})", m.metric, m.unit)
            }
            .into(),
            mean_sd(&c.a).into(),
            ((b'A' + gi as u8) as char).to_string().into(),
            mean_sd(&c.b).into(),
            pct(c.diff_percent).into(),
            c.ci95_percent
                .map(|(lo, hi)| format!("{lo:+.2} % to {hi:+.2} %"))
                .unwrap_or_else(|| "-".into())
                .into(),
            m.reading.as_str().into(),
        ]);
    }
    t
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
    s += &comparison_table(r).to_text();
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
    for u in &r.unpaired {
        s += &format!("unpaired: {u}\n");
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
