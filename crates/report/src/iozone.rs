//! IOzone's text output as storlab runs: the throughput-mode report (`-t`: "Children see
//! throughput ...") and the Excel-style report (`-R`: "Writer report" matrices of file size ×
//! record size), as sites kept them for years.
//!
//! A throughput-mode file becomes one run with a phase per test. An `-R` report becomes one run
//! per file size × record size cell, each with a phase per report; several cells are marked as
//! one study by the caller. IOzone prints kB/sec with kB = 1024 bytes.

use serde_json::{json, Value};
use storlab_store::{ImportedRun, NewRun, PhaseRow};

/// Why a file is not IOzone output storlab can read.
#[derive(Debug, thiserror::Error)]
#[error("{path} is not IOzone output storlab can read: {what}")]
pub struct IozoneError {
    /// The file.
    pub path: String,
    /// What is missing.
    pub what: String,
}

/// True when `text` looks like IOzone's output.
pub fn looks_like_iozone(text: &str) -> bool {
    text.contains("Children see throughput for")
        || text.contains("Excel output is below")
        || text.contains("Iozone: Performance Test")
}

/// The storlab phase kind of an IOzone test name (throughput "who" or report name).
fn kind_of(name: &str) -> Option<&'static str> {
    Some(match name {
        "initial writers" | "Writer" | "fwriters" | "Fwrite" | "pwrite writers" | "Pwrite" => "write",
        "rewriters" | "Re-writer" | "Re-Fwrite" | "Re-Pwrite" => "rewrite",
        "readers" | "Reader" | "freaders" | "Fread" | "pread readers" | "Pread" => "read",
        "re-readers" | "Re-Reader" | "Re-Fread" | "Re-Pread" => "reread",
        "reverse readers" | "Backward read" => "backread",
        "stride readers" | "Stride read" => "strideread",
        "random readers" | "Random read" | "Preadv" | "Re-Preadv" | "preadv readers" => "randread",
        "random writers" | "Random write" | "Pwritev" | "Re-Pwritev" | "pwritev writers" => "randwrite",
        "mixed workload" | "Mixed workload" => "randrw",
        "Record rewrite" => "recrewrite",
        _ => return None,
    })
}

fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.trim().strip_prefix(key).map(str::trim))
}

/// "Sun Nov 22 00:28:24 2026" → "2026-11-22T00:28:24Z" (IOzone prints local time without a
/// zone; it is taken as UTC and said so in the run).
fn rfc3339(ctime: &str) -> Option<String> {
    let f: Vec<&str> = ctime.split_whitespace().collect();
    if f.len() != 5 {
        return None;
    }
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == f[1])?
        + 1;
    let day: u32 = f[2].parse().ok()?;
    let year: u32 = f[4].parse().ok()?;
    let hms: Vec<u32> = f[3].split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if hms.len() != 3 || hms[0] > 23 || hms[1] > 59 || hms[2] > 60 || !(1..=31).contains(&day) {
        return None;
    }
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        hms[0], hms[1], hms[2]
    ))
}

#[allow(clippy::too_many_arguments)]
fn phase(
    seq: u32,
    kind: &str,
    label: &str,
    bytes: f64,
    parent_bps: f64,
    children_bps: f64,
    min_bps: f64,
    max_bps: f64,
    params: Value,
) -> PhaseRow {
    let writes = matches!(kind, "write" | "rewrite" | "randwrite" | "recrewrite");
    let seconds = if parent_bps > 0.0 { bytes / parent_bps } else { 0.0 };
    // Every IOzone I/O is one record: I/Os and IOPS follow from the record size.
    let rec = params["bs"]["fixed"].as_f64().unwrap_or(0.0).max(1.0);
    let ops = (bytes / rec) as u64;
    PhaseRow {
        seq,
        kind: kind.into(),
        params,
        bytes_read: if writes { 0 } else { bytes as u64 },
        bytes_written: if writes { bytes as u64 } else { 0 },
        ops_read: if writes { 0 } else { ops },
        ops_written: if writes { ops } else { 0 },
        seconds,
        bytes_per_sec: parent_bps,
        iops: parent_bps / rec,
        first_done_seconds: seconds,
        first_done_bytes_per_sec: children_bps,
        worker_min_bytes_per_sec: min_bps,
        worker_max_bytes_per_sec: max_bps,
        result: json!({
            "source": "iozone",
            "test": label,
            "note": "IOzone reports throughput only: no latency, no I/O counts; first done is IOzone's \"children see\" figure, all done its \"parent sees\"",
        }),
        ..PhaseRow::default()
    }
}

/// Parses IOzone output. `host` names the machine (IOzone does not print it).
pub fn parse(path: &str, text: &str, host: &str, tags: &[(String, String)]) -> Result<Vec<ImportedRun>, IozoneError> {
    let bad = |what: &str| IozoneError {
        path: path.into(),
        what: what.into(),
    };
    let command = after(text, "Command line used:")
        .unwrap_or("iozone (command line not in the file)")
        .to_string();
    let version = text
        .lines()
        .find(|l| l.contains("Version $Revision:"))
        .and_then(|l| l.split("Revision:").nth(1))
        .map(|v| v.trim().trim_end_matches('$').trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let began = after(text, "Run began:").and_then(rfc3339);
    let started = began
        .clone()
        .unwrap_or_else(|| humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
    let run = |name: String, phases: Vec<PhaseRow>, extra: Value| ImportedRun {
        run: NewRun {
            kind: "import".into(),
            host: host.to_string(),
            job_name: Some(name),
            job: json!({
                "imported_from": path,
                "format": "iozone text",
                "iozone_version": version,
                "command": command,
                "cell": extra,
                "text": text,
                "time": if began.is_some() { "IOzone's \"Run began\", taken as UTC" } else { "not in the file: the time of the import" },
            }),
            command: format!("{command} (imported from {path})"),
            tags: tags.to_vec(),
        },
        started_at: started.clone(),
        environment: json!({
            "host": host, "kernel": "", "cpu_model": "", "cpus": 0, "memory_bytes": 0,
            "source": format!("imported from IOzone {version}: IOzone does not record the machine"),
        }),
        phases,
    };

    if text.contains("Children see throughput for") {
        // Throughput mode.
        let workers: f64 = after(text, "Throughput test with")
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad("a throughput report without \"Throughput test with N processes\""))?;
        let each = after(text, "Each process writes a").or_else(|| after(text, "Each thread writes a"));
        let (file_kb, rec_kb): (f64, f64) = each
            .and_then(|s| {
                let w: Vec<&str> = s.split_whitespace().collect();
                Some((w.first()?.parse().ok()?, w.get(4)?.parse().ok()?))
            })
            .ok_or_else(|| bad("no \"Each process writes a N kByte file in M kByte records\" line"))?;
        let lines: Vec<&str> = text.lines().collect();
        let value = |l: &str| -> Option<f64> { l.split('=').nth(1)?.split_whitespace().next()?.parse().ok() };
        let mut phases = Vec::new();
        let ops = text.contains("ops/sec");
        for (i, l) in lines.iter().enumerate() {
            let t = l.trim();
            let Some(rest) = t.strip_prefix("Children see throughput for") else {
                continue;
            };
            let who: String = rest
                .split('=')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .skip(1)
                .collect::<Vec<_>>()
                .join(" ");
            let kind = kind_of(&who).ok_or_else(|| bad(&format!("an unknown test \"{who}\"")))?;
            let find = |prefix: &str| {
                lines[i..(i + 8).min(lines.len())]
                    .iter()
                    .find(|x| x.trim().starts_with(prefix))
                    .and_then(|x| value(x))
            };
            let children = value(t).ok_or_else(|| bad("a \"Children see\" line without a figure"))?;
            let parent = find("Parent sees").unwrap_or(children);
            let (min, max) = (
                find("Min throughput").unwrap_or(0.0),
                find("Max throughput").unwrap_or(0.0),
            );
            let k = if ops { rec_kb * 1024.0 } else { 1024.0 };
            phases.push(phase(
                phases.len() as u32,
                kind,
                &who,
                workers * file_kb * 1024.0,
                parent * k,
                children * k,
                min * k,
                max * k,
                json!({ "iozone_test": who, "bs": {"fixed": (rec_kb * 1024.0) as u64}, "threads": workers, "file_kb": file_kb }),
            ));
        }
        if phases.is_empty() {
            return Err(bad("no test results"));
        }
        return Ok(vec![run(
            format!("iozone -t {workers} (imported)"),
            phases,
            json!({ "workers": workers, "file_kb": file_kb, "record_kb": rec_kb }),
        )]);
    }

    // The -R report: "<Name> report" blocks, records across, files down.
    let Some(at) = text.find("Excel output is below") else {
        return Err(bad(
            "neither a throughput report (\"Children see throughput\") nor an -R report (\"Excel output is below\")",
        ));
    };
    // ((file kB, record kB), [(report name, kB/sec)])
    type Cells = Vec<((u64, u64), Vec<(String, f64)>)>;
    let mut cells: Cells = Vec::new();
    let mut lines = text[at..].lines().peekable();
    while let Some(l) = lines.next() {
        let t = l.trim();
        let Some(name) = t.strip_prefix('"').and_then(|x| x.strip_suffix(" report\"")) else {
            continue;
        };
        let header = lines.next().ok_or_else(|| bad("a report without its record sizes"))?;
        let recs: Vec<u64> = header
            .split_whitespace()
            .map(|x| x.trim_matches('"').parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad(&format!("the {name} report's record sizes")))?;
        while let Some(row) = lines.peek() {
            let r = row.trim();
            if !r.starts_with('"') || r.ends_with("report\"") {
                break;
            }
            let f: Vec<&str> = r.split_whitespace().collect();
            let file: u64 = f[0]
                .trim_matches('"')
                .parse()
                .map_err(|_| bad("a file size in an -R report"))?;
            for (rec, v) in recs.iter().zip(&f[1..]) {
                let v: f64 = v
                    .parse()
                    .map_err(|_| bad(&format!("a figure \"{v}\" in the {name} report")))?;
                match cells.iter_mut().find(|(k, _)| *k == (file, *rec)) {
                    Some((_, t)) => t.push((name.to_string(), v)),
                    None => cells.push(((file, *rec), vec![(name.to_string(), v)])),
                }
            }
            lines.next();
        }
    }
    if cells.is_empty() {
        return Err(bad("an -R report without figures"));
    }
    let mut runs = Vec::new();
    for ((file_kb, rec_kb), tests) in cells {
        let mut phases = Vec::new();
        for (name, kbs) in tests {
            let kind = kind_of(&name).ok_or_else(|| bad(&format!("an unknown report \"{name} report\"")))?;
            let bps = kbs * 1024.0;
            phases.push(phase(
                phases.len() as u32,
                kind,
                &name,
                file_kb as f64 * 1024.0,
                bps,
                bps,
                bps,
                bps,
                json!({ "iozone_test": name, "bs": {"fixed": rec_kb * 1024}, "threads": 1, "file_kb": file_kb }),
            ));
        }
        runs.push(run(
            format!("iozone {file_kb} kB × {rec_kb} kB (imported)"),
            phases,
            json!({ "workers": 1, "file_kb": file_kb, "record_kb": rec_kb }),
        ));
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_becomes_rfc3339() {
        assert_eq!(
            rfc3339("Sun Nov 22 00:28:24 2026").as_deref(),
            Some("2026-11-22T00:28:24Z")
        );
        assert_eq!(
            rfc3339("Mon Jan  5 9:00:00 2009").as_deref(),
            Some("2009-01-05T09:00:00Z")
        );
        assert!(rfc3339("yesterday").is_none());
    }
}
