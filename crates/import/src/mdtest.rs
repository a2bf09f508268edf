//! mdtest's summary as storlab runs of metadata phases: for each run in the file (from its
//! "-- started at" to its "-- finished at"), a phase per operation of the "SUMMARY rate" table
//! (`File creation`, `Directory stat`, ...), its rate the table's mean over the iterations.
//!
//! mdtest's summary is rates only: no bytes, no time, no latency, no CPU, no per-task spread —
//! marked not measured; its max, min and standard deviation over the iterations are kept in
//! the phase's notes.

use serde_json::json;
use storlab_model::result::{Figure, PhaseResult, Throughput};
use storlab_model::run::{ImportedParams, ImportedRun, Phase, PhaseName, PhaseParams};

use crate::{ImportError, Origin};

/// True when `text` holds mdtest's summary.
pub fn looks_like_mdtest(text: &str) -> bool {
    text.contains("SUMMARY rate") || (text.contains("mdtest") && text.contains("SUMMARY: (of"))
}

/// storlab meta's name for an mdtest operation (so that `results compare` lines them up with
/// `storlab meta`'s phases).
fn operation(name: &str) -> String {
    match name {
        "File creation" => "create",
        "File stat" => "stat",
        "File read" => "read",
        "File removal" => "remove",
        "Directory creation" => "mkdir",
        "Directory stat" => "stat directories",
        "Directory rename" => "rename directories",
        "Directory removal" => "rmdir",
        "Tree creation" => "tree creation",
        "Tree removal" => "tree removal",
        other => return other.to_lowercase(),
    }
    .to_string()
}

/// Parses every mdtest run in `text`.
pub fn parse(origin: &Origin, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    let host = origin.host_or("mdtest");
    let mut runs = Vec::new();
    for (first_line, part) in parts(text) {
        if let Some(run) = part_run(origin, &host, first_line, part)? {
            runs.push(run);
        }
    }
    if runs.is_empty() {
        return Err(origin.error("mdtest output without a \"SUMMARY rate\" table"));
    }
    Ok(runs)
}

/// The runs of a file: split at "-- started at", when there are several; each with its first
/// line.
fn parts(text: &str) -> Vec<(usize, &str)> {
    let starts: Vec<usize> = text.match_indices("-- started at").map(|(i, _)| i).collect();
    if starts.len() <= 1 {
        return vec![(1, text)];
    }
    starts
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let from = if k == 0 { 0 } else { *s };
            let to = starts.get(k + 1).copied().unwrap_or(text.len());
            (crate::line_of(text, from), &text[from..to])
        })
        .collect()
}

/// The first value a line of `lines` gives for `find`.
fn find_line<'a, T>(lines: &[&'a str], find: impl Fn(&'a str) -> Option<T>) -> Option<T> {
    lines.iter().find_map(|l| find(l))
}

/// One run's part as a run, None when it has no summary table.
fn part_run(origin: &Origin, host: &str, first_line: usize, part: &str) -> Result<Option<ImportedRun>, ImportError> {
    let lines: Vec<&str> = part.lines().collect();
    let Some(h) = lines
        .iter()
        .position(|l| l.trim_start().starts_with("SUMMARY rate") || l.trim_start().starts_with("SUMMARY: (of"))
    else {
        return Ok(None);
    };
    let iterations: Option<u32> = lines[h]
        .split("(of ")
        .nth(1)
        .and_then(|x| x.split_whitespace().next())
        .and_then(|x| x.parse().ok());
    let command = find_line(&lines, |l| l.strip_prefix("Command line used:"))
        .map(|c| c.trim().replace('\'', ""))
        .unwrap_or_else(|| "mdtest".into());
    let version = find_line(&lines, |l| l.strip_prefix("mdtest-"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or("unknown")
        .to_string();
    let tasks: Option<u32> = find_line(&lines, |l| {
        l.strip_suffix(" files")
            .or_else(|| l.strip_suffix(" files/directories"))
    })
    .and_then(|l| l.split_whitespace().next())
    .and_then(|t| t.parse().ok());
    // "-- started at 11/24/2026 08:31:44 --"
    let started = find_line(&lines, |l| l.strip_prefix("-- started at "))
        .and_then(|l| l.strip_suffix(" --"))
        .and_then(|d| {
            let (date, time) = d.split_once(' ')?;
            let mut f = date.split('/');
            let (m, dd, y) = (f.next()?, f.next()?, f.next()?);
            Some(format!("{y}-{m:0>2}-{dd:0>2}T{time}Z"))
        });
    let mut phases = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(h + 1) {
        let t = l.trim();
        if t.is_empty() || t.starts_with("--") && !t.starts_with("---") {
            break;
        }
        if t.starts_with("Operation") || t.starts_with("---") {
            continue;
        }
        let (name, rates) = summary_row(t).ok_or_else(|| {
            origin.error(format!(
                "line {}: mdtest's summary row \"{t}\" is not an operation with max, min, mean and standard deviation",
                first_line + k
            ))
        })?;
        let params = ImportedParams {
            tool: format!("mdtest {version}"),
            test: Some(name.clone()),
            workers: tasks,
            ..ImportedParams::default()
        };
        phases.push(rate_phase(phases.len() as u32, &name, rates, iterations, params));
    }
    if phases.is_empty() {
        return Err(origin.error(format!("line {}: mdtest's summary has no operations", first_line + h)));
    }
    Ok(Some(origin.run(
        host,
        "mdtest (imported)".into(),
        format!("{command} (imported from {})", origin.path),
        json!({
            "imported_from": origin.path,
            "format": "mdtest summary",
            "mdtest_version": version,
            "command": command,
            "iterations": iterations,
            "first_line": first_line,
            "text": part,
            "time": if started.is_some() { "mdtest's \"started at\", taken as UTC".to_string() } else { origin.when_undated().1 },
        }),
        started.unwrap_or_else(|| origin.when_undated().0),
        format!("imported from mdtest {version}: mdtest does not record the machine"),
        phases,
    )))
}

/// A summary row: the operation's name and its max, min, mean and standard deviation.
fn summary_row(t: &str) -> Option<(String, [f64; 4])> {
    let w: Vec<&str> = t.split_whitespace().collect();
    let figures: Vec<&str> = w.iter().rev().take(4).rev().copied().collect();
    let name = w[..w.len().saturating_sub(4)].join(" ");
    let nums: Vec<f64> = figures.iter().filter_map(|x| x.parse().ok()).collect();
    if nums.len() != 4 || name.is_empty() {
        return None;
    }
    Some((name, [nums[0], nums[1], nums[2], nums[3]]))
}

/// An operation's phase: its mean rate as IOPS, every other figure not measured.
fn rate_phase(
    seq: u32,
    name: &str,
    [max, min, mean, sd]: [f64; 4],
    iterations: Option<u32>,
    mut params: ImportedParams,
) -> Phase {
    let mut result = PhaseResult {
        all_done: Throughput {
            iops: mean,
            ..Throughput::default()
        },
        ..PhaseResult::default()
    };
    result.mark_not_measured(&[
        Figure::Throughput,
        Figure::Seconds,
        Figure::FirstDone,
        Figure::WorkerSpread,
        Figure::Cpu,
        Figure::Latency,
    ]);
    params.notes = vec![
        format!(
            "mdtest's rate over {} iteration(s): mean {mean} ops/s, max {max}, min {min}, standard deviation {sd}",
            iterations.map_or("its".to_string(), |n| n.to_string())
        ),
        "mdtest's summary gives rates only: no bytes, time, latency, CPU or per-task spread".into(),
    ];
    Phase {
        seq,
        kind: PhaseName::Other(operation(name)),
        params: PhaseParams::Imported(params),
        result,
        cache_flattered: false,
    }
}
