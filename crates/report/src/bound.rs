//! Each phase's bound as the reports show it (crates/stats bound.rs reads it from the evidence):
//! the word in a run's table, the line that says why under it, and the object in a run's JSON
//! document.

use storlab_model::run::{Phase, RunDetail};
use storlab_stats::bound::{self, Bound};

/// The bound of each phase of `run`.
pub fn of_run(run: &RunDetail) -> Vec<Bound> {
    run.phases.iter().map(|p| bound::of(p, &run.environment)).collect()
}

/// The bound of one phase of `run`.
pub fn of_phase(run: &RunDetail, p: &Phase) -> Bound {
    bound::of(p, &run.environment)
}

/// The lines under a run's table: "bound: 1 randread: the device: vda busy 99 % …", one per
/// phase.
///
/// Phases in a row whose readings are the same share a line ("bound: phases 1–6: …"), as an
/// import's phases do.
pub fn lines(run: &RunDetail) -> String {
    let bounds = of_run(run);
    let mut s = String::new();
    let mut i = 0;
    while i < bounds.len() {
        let same = bounds[i..]
            .iter()
            .take_while(|b| b.reading == bounds[i].reading)
            .count();
        let p = &run.phases[i];
        if same == 1 {
            s += &format!("bound: {} {}: {}\n", p.seq + 1, p.kind, bounds[i].reading);
        } else {
            let last = &run.phases[i + same - 1];
            s += &format!("bound: phases {}–{}: {}\n", p.seq + 1, last.seq + 1, bounds[i].reading);
        }
        i += same;
    }
    s
}

/// A run as one JSON document: the stored run, each phase with its `bound` (kind, evidence, a
/// line).
pub fn document(run: &RunDetail) -> serde_json::Value {
    let mut v = serde_json::to_value(run).unwrap_or(serde_json::Value::Null);
    if let Some(phases) = v.get_mut("phases").and_then(serde_json::Value::as_array_mut) {
        for (p, b) in phases.iter_mut().zip(of_run(run)) {
            if let Some(o) = p.as_object_mut() {
                o.insert("bound".into(), serde_json::to_value(b).unwrap_or_default());
            }
        }
    }
    v
}

/// The warnings a comparison carries about what bounded one like phase (`phases`: each
/// group's runs' phase, `members` their runs): groups bound by different things compare
/// different resources; a group bound by the benchmark's CPU measured the CPU, not the storage.
pub fn compare_warnings_of(
    labels: &[String],
    members: &[Vec<RunDetail>],
    phases: &[Vec<&Phase>],
    what: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let kinds: Vec<(String, Vec<&'static str>)> = labels
        .iter()
        .zip(members.iter().zip(phases))
        .map(|(label, (runs, ps))| {
            let mut ks: Vec<&'static str> = Vec::new();
            for (r, p) in runs.iter().zip(ps) {
                let k = of_phase(r, p).kind.name();
                if !ks.contains(&k) {
                    ks.push(k);
                }
            }
            (label.clone(), ks)
        })
        .collect();
    let cpu: Vec<&str> = kinds
        .iter()
        .filter(|(_, ks)| ks.contains(&"cpu"))
        .map(|(l, _)| l.as_str())
        .collect();
    if !cpu.is_empty() {
        out.push(format!(
            "{what}: {} bound by the CPU running the benchmark: those figures measured the CPU, not the storage",
            cpu.join(", ")
        ));
    }
    let distinct: std::collections::BTreeSet<&[&str]> = kinds.iter().map(|(_, k)| k.as_slice()).collect();
    if distinct.len() > 1 {
        out.push(format!(
            "{what}: the groups were bound by different things ({}): the comparison sets one limit against another",
            kinds
                .iter()
                .map(|(l, k)| format!("{l}: {}", k.join("/")))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    out
}

/// Where a study's bound changes along its points, one phase kind at a time, and where its
/// throughput stops growing: "randread: iodepth-bound at iodepth=1, device-bound from
/// iodepth=4; throughput grows less than 10 % past iodepth=32". One phase cannot tell whether a
/// device that serves several I/Os at once could do more with a deeper queue; the curve can.
/// `points` are each point's label and its run, in order.
pub fn along(points: &[(String, &RunDetail)], kind: &str) -> Option<String> {
    let mut segments: Vec<(&'static str, &str)> = Vec::new();
    let mut rates: Vec<(&str, f64)> = Vec::new();
    for (label, run) in points {
        let Some(p) = run.phases.iter().find(|p| p.kind.as_str() == kind) else {
            continue;
        };
        let k = of_phase(run, p).kind.name();
        if segments.last().is_none_or(|(last, _)| *last != k) {
            segments.push((k, label));
        }
        rates.push((label, p.result.all_done.bytes_per_sec));
    }
    let mut line = match segments.as_slice() {
        [] => return None,
        [(k, _)] => format!("{kind}: {k}-bound at every point"),
        [(k0, l0), rest @ ..] => format!(
            "{kind}: {k0}-bound at {l0}, {}",
            rest.iter()
                .map(|(k, l)| format!("{k}-bound from {l}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let knee = rates.windows(2).position(|w| w[0].1 > 0.0 && w[1].1 < 1.1 * w[0].1);
    if let (Some(i), true) = (knee, rates.len() >= 3) {
        line += &format!("; throughput grows less than 10 % past {}", rates[i].0);
    }
    Some(line)
}
