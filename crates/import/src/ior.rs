//! IOR's output as storlab runs: its text (the "Results:" table, a row per access and
//! iteration) and its JSON (`-O summaryFormat=JSON`: `tests[].Results`).
//!
//! Each iteration of a test becomes one run with a phase per access (write, read), so that
//! `storlab results compare` sees IOR's repetitions as the samples they are. A phase carries
//! IOR's bandwidth, IOPS and total time; IOR's "Latency" is one mean per iteration, kept in the
//! phase's notes: IOR prints no latency distribution, no first done, no per-task spread and no
//! CPU, and those are marked not measured.

use serde_json::{json, Value};
use storlab_model::plan::PhaseKind;
use storlab_model::result::Figure;
use storlab_model::run::{ImportedParams, ImportedRun, Phase, PhaseName, PhaseParams};

use crate::{ImportError, Origin};

const MIB: f64 = 1048576.0;

/// True when `text` is IOR's text output.
pub fn looks_like_ior_text(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("IOR-") && l.contains("Parallel I/O"))
        || (text.contains("Summary of all tests:") && text.contains("Max(MiB)"))
}

/// True when `text` is IOR's JSON summary.
pub fn looks_like_ior_json(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{') && t.contains("\"tests\"") && t.contains("\"Command line\"") && t.contains("\"summary\"")
}

/// One access of one iteration, as IOR printed it.
struct Access {
    access: String,
    mib_per_sec: f64,
    iops: f64,
    latency_s: f64,
    xfer_kib: f64,
    total_s: f64,
}

/// What a test says of itself.
struct TestInfo {
    version: String,
    command: String,
    began: Option<String>,
    machine: Option<String>,
    tasks: Option<u32>,
    aggregate_bytes: Option<f64>,
}

/// One write or read as IOR printed it: a row of its results (an iteration) or of its
/// summary (the mean over the iterations).
struct Row {
    kind: PhaseKind,
    test: String,
    bytes: f64,
    /// IOR's transfer size: the bytes over it are the row's operations.
    bs: f64,
    seconds: f64,
    bytes_per_sec: f64,
    iops: f64,
    workers: Option<u32>,
    notes: Vec<String>,
}

impl Row {
    /// The row as phase `seq`: IOR's bandwidth, IOPS and time; first done, the per-task spread,
    /// CPU and a latency distribution are what IOR does not print, marked not measured.
    fn phase(self, seq: u32, version: &str) -> Phase {
        let ops = if self.bs > 0.0 { self.bytes / self.bs } else { 0.0 };
        let (read, written) = match self.kind.writes() {
            true => ((0.0, 0.0), (self.bytes, ops)),
            false => ((self.bytes, ops), (0.0, 0.0)),
        };
        let mut result = crate::moved(read, written, self.seconds, self.bytes_per_sec, self.iops);
        result.mark_not_measured(&[Figure::FirstDone, Figure::WorkerSpread, Figure::Cpu, Figure::Latency]);
        Phase {
            seq,
            kind: PhaseName::Kind(self.kind),
            params: PhaseParams::Imported(ImportedParams {
                tool: format!("IOR {version}"),
                test: Some(self.test),
                bs: Some(self.bs as u64),
                workers: self.workers,
                notes: self.notes,
                ..ImportedParams::default()
            }),
            result,
            cache_flattered: false,
        }
    }
}

/// The host a run of IOR's is stored under: the one the user named, else IOR's "Machine",
/// else the import's stand-in.
fn host_of(origin: &Origin, info: &TestInfo) -> String {
    origin
        .host
        .clone()
        .or_else(|| info.machine.clone())
        .unwrap_or_else(|| origin.host_or("IOR"))
}

fn runs_of(
    origin: &Origin,
    format: &str,
    info: &TestInfo,
    iterations: Vec<(u32, Vec<Access>)>,
    text: &str,
) -> Result<Vec<ImportedRun>, ImportError> {
    let host = host_of(origin, info);
    let mut runs = Vec::new();
    for (iter, accesses) in iterations {
        let mut phases = Vec::new();
        for a in accesses {
            let kind = match a.access.as_str() {
                "write" => PhaseKind::Write,
                "read" => PhaseKind::Read,
                other => {
                    return Err(origin.error(format!(
                        "IOR's access \"{other}\" (iteration {iter}) is neither write nor read"
                    )))
                }
            };
            let bps = a.mib_per_sec * MIB;
            let bytes = info.aggregate_bytes.unwrap_or(bps * a.total_s);
            let bs = a.xfer_kib * 1024.0;
            let mut notes = vec![
                format!("IOR's mean latency per transfer: {:.6} s", a.latency_s),
                "IOR prints no latency distribution, no per-task spread and no CPU".into(),
            ];
            if info.aggregate_bytes.is_none() {
                notes.push(
                    "bytes are IOR's bandwidth × its total time (the file does not give the aggregate size)".into(),
                );
            }
            phases.push(
                Row {
                    kind,
                    test: format!("{} (iteration {iter})", a.access),
                    bytes,
                    bs,
                    seconds: a.total_s,
                    bytes_per_sec: bps,
                    iops: a.iops,
                    workers: info.tasks,
                    notes,
                }
                .phase(phases.len() as u32, &info.version),
            );
        }
        runs.push(origin.run(
            &host,
            format!("ior iteration {iter} (imported)"),
            format!("{} (imported from {})", info.command, origin.path),
            json!({
                "imported_from": origin.path,
                "format": format,
                "ior_version": info.version,
                "command": info.command,
                "iteration": iter,
                "text": text,
                "time": if info.began.is_some() { "IOR's \"Began\", taken as UTC".to_string() } else { origin.when_undated().1 },
            }),
            info.began.clone().unwrap_or_else(|| origin.when_undated().0),
            format!("imported from IOR {}: IOR records rank 0's machine only", info.version),
            phases,
        ));
    }
    if runs.is_empty() {
        return Err(origin.error("IOR output without results (no \"Results:\" rows)"));
    }
    Ok(runs)
}

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// "32 MiB" → bytes.
fn ior_size(s: &str) -> Option<f64> {
    let mut w = s.split_whitespace();
    let v: f64 = w.next()?.parse().ok()?;
    let m = match w.next().unwrap_or("bytes") {
        "bytes" | "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => MIB,
        "GiB" => MIB * 1024.0,
        "TiB" => MIB * MIB,
        _ => return None,
    };
    Some(v * m)
}

/// IOR's machine line, "Linux vm": the host name is the second word.
fn machine(s: &str) -> Option<String> {
    s.split_whitespace().nth(1).map(str::to_string)
}

/// Parses IOR's text output.
pub fn parse_text(origin: &Origin, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    let info = TestInfo {
        version: text
            .lines()
            .find_map(|l| l.strip_prefix("IOR-"))
            .and_then(|l| l.split(':').next())
            .unwrap_or("unknown")
            .to_string(),
        command: field(text, "Command line").unwrap_or("ior").to_string(),
        began: field(text, "Began").and_then(crate::ctime_rfc3339),
        machine: field(text, "Machine").and_then(machine),
        tasks: field(text, "tasks").and_then(|t| t.parse().ok()),
        aggregate_bytes: field(text, "aggregate filesize").and_then(ior_size),
    };
    let lines: Vec<&str> = text.lines().collect();
    let Some(h) = lines
        .iter()
        .position(|l| l.starts_with("access") && l.contains("bw(MiB/s)"))
    else {
        return summary_only(origin, &info, text);
    };
    let heads: Vec<&str> = lines[h].split_whitespace().collect();
    let col = |name: &str| heads.iter().position(|x| *x == name);
    let need = |name: &str| {
        col(name).ok_or_else(|| origin.error(format!("line {}: IOR's results table has no \"{name}\" column", h + 1)))
    };
    let (c_bw, c_iops, c_lat, c_xfer, c_total, c_iter) = (
        need("bw(MiB/s)")?,
        need("IOPS")?,
        need("Latency(s)")?,
        need("xfer(KiB)")?,
        need("total(s)")?,
        need("iter")?,
    );
    let mut iterations: Vec<(u32, Vec<Access>)> = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(h + 1) {
        let w: Vec<&str> = l.split_whitespace().collect();
        if w.is_empty() || w[0].starts_with("---") {
            if w.is_empty() && !iterations.is_empty() {
                break;
            }
            continue;
        }
        if !matches!(w[0], "write" | "read" | "remove") {
            break;
        }
        let num = |c: usize| -> Result<f64, ImportError> {
            w.get(c).and_then(|v| v.parse().ok()).ok_or_else(|| {
                origin.error(format!(
                    "line {}: IOR's \"{}\" figure \"{}\" does not read",
                    k + 1,
                    heads[c],
                    w.get(c).unwrap_or(&"")
                ))
            })
        };
        let iter = num(c_iter)? as u32;
        let a = Access {
            access: w[0].to_string(),
            mib_per_sec: num(c_bw)?,
            iops: num(c_iops)?,
            latency_s: num(c_lat)?,
            xfer_kib: num(c_xfer)?,
            total_s: num(c_total)?,
        };
        if a.access == "remove" {
            continue;
        }
        match iterations.iter_mut().find(|(i, _)| *i == iter) {
            Some((_, v)) => v.push(a),
            None => iterations.push((iter, vec![a])),
        }
    }
    runs_of(origin, "ior text", &info, iterations, text)
}

/// IOR's text with its "Summary of all tests" table but no per-iteration results (what is
/// kept when only the end of the output was saved): one run, each access's mean over the
/// iterations, its max, min and standard deviation in the notes.
fn summary_only(origin: &Origin, info: &TestInfo, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(h) = lines
        .iter()
        .position(|l| l.starts_with("Operation") && l.contains("Mean(MiB)"))
    else {
        return Err(origin.error(
            "IOR's text without its \"Results:\" table (access bw(MiB/s) IOPS ...) or its \"Summary of all tests\"",
        ));
    };
    let heads: Vec<&str> = lines[h].split_whitespace().collect();
    let col = |name: &str| {
        heads
            .iter()
            .position(|x| *x == name)
            .ok_or_else(|| origin.error(format!("line {}: IOR's summary has no \"{name}\" column", h + 1)))
    };
    let (max, min, mean, sd, ops, secs, tasks, xsize, aggs, reps) = (
        col("Max(MiB)")?,
        col("Min(MiB)")?,
        col("Mean(MiB)")?,
        col("StdDev")?,
        col("Mean(OPs)")?,
        col("Mean(s)")?,
        col("#Tasks")?,
        col("xsize")?,
        col("aggs(MiB)")?,
        col("reps")?,
    );
    let mut phases = Vec::new();
    for (k, l) in lines.iter().enumerate().skip(h + 1) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let kind = match w.first() {
            Some(&"write") => PhaseKind::Write,
            Some(&"read") => PhaseKind::Read,
            _ => break,
        };
        let num = |c: usize| -> Result<f64, ImportError> {
            w.get(c).and_then(|v| v.parse().ok()).ok_or_else(|| {
                origin.error(format!(
                    "line {}: IOR's summary \"{}\" figure \"{}\" does not read",
                    k + 1,
                    heads[c],
                    w.get(c).unwrap_or(&"")
                ))
            })
        };
        phases.push(
            Row {
                kind,
                test: format!("{} (summary)", w[0]),
                bytes: num(aggs)? * MIB,
                bs: num(xsize)?,
                seconds: num(secs)?,
                bytes_per_sec: num(mean)? * MIB,
                iops: num(ops)?,
                workers: Some(num(tasks)? as u32),
                notes: vec![
                    format!(
                        "IOR's summary over {} iteration(s): mean {} MiB/s, max {}, min {}, standard deviation {}",
                        w[reps], w[mean], w[max], w[min], w[sd]
                    ),
                    "IOR prints no latency distribution, no per-task spread and no CPU".into(),
                ],
            }
            .phase(phases.len() as u32, &info.version),
        );
    }
    if phases.is_empty() {
        return Err(origin.error(format!("line {}: IOR's summary has no write or read row", h + 1)));
    }
    let host = host_of(origin, info);
    Ok(vec![origin.run(
        &host,
        "ior summary (imported)".into(),
        format!("{} (imported from {})", info.command, origin.path),
        json!({
            "imported_from": origin.path,
            "format": "ior summary",
            "ior_version": info.version,
            "command": info.command,
            "text": text,
            "time": if info.began.is_some() { "IOR's \"Began\", taken as UTC".to_string() } else { origin.when_undated().1 },
        }),
        info.began.clone().unwrap_or_else(|| origin.when_undated().0),
        format!("imported from IOR {}: IOR records rank 0's machine only", info.version),
        phases,
    )])
}

/// IOR's JSON is not always JSON: some versions leave a comma before a closing brace
/// (`"...Seed": 0, }`). Those commas are dropped (outside strings) before parsing; nothing
/// else is changed.
fn without_trailing_commas(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut in_str = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if c == ',' {
            let next = b[i + 1..].iter().find(|x| !x.is_ascii_whitespace());
            if matches!(next, Some(b'}') | Some(b']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// Parses IOR's JSON summary.
pub fn parse_json(origin: &Origin, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    let start = text.find('{').unwrap_or(0);
    let doc: Value = serde_json::from_str(&without_trailing_commas(&text[start..])).map_err(|e| {
        origin.error(format!(
            "IOR's JSON does not read at its line {}, column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let s = |k: &str| doc.get(k).and_then(Value::as_str);
    let tests = doc
        .get("tests")
        .and_then(Value::as_array)
        .ok_or_else(|| origin.error("IOR's JSON has no \"tests\" list"))?;
    let mut all = Vec::new();
    for (t, test) in tests.iter().enumerate() {
        let p = test.get("Parameters").cloned().unwrap_or(Value::Null);
        let pn = |k: &str| p.get(k).and_then(Value::as_f64);
        let tasks = pn("numTasks").or_else(|| doc.get("summary")?.as_array()?.first()?.get("numTasks")?.as_f64());
        let info = TestInfo {
            version: s("Version").unwrap_or("unknown").to_string(),
            command: s("Command line").unwrap_or("ior").to_string(),
            began: test
                .get("StartTime")
                .and_then(Value::as_str)
                .or(s("Began"))
                .and_then(crate::ctime_rfc3339),
            machine: s("Machine").and_then(machine),
            tasks: tasks.map(|t| t as u32),
            aggregate_bytes: match (pn("blockSize"), pn("segmentCount"), tasks) {
                (Some(b), Some(sg), Some(n)) => Some(b * sg * n),
                _ => None,
            },
        };
        // Results: a flat list of accesses in order, or (other versions) a list per iteration.
        let results: Vec<&Value> = match test.get("Results").and_then(Value::as_array) {
            Some(r) => r
                .iter()
                .flat_map(|x| match x.as_array() {
                    Some(inner) => inner.iter().collect::<Vec<_>>(),
                    None => vec![x],
                })
                .collect(),
            None => return Err(origin.error(format!("IOR's JSON test {t} has no \"Results\""))),
        };
        let mut iterations: Vec<(u32, Vec<Access>)> = Vec::new();
        for r in results {
            let g = |k: &str| {
                r.get(k)
                    .and_then(Value::as_f64)
                    .ok_or_else(|| origin.error(format!("IOR's JSON test {t}: a result without \"{k}\"")))
            };
            let a = Access {
                access: r.get("access").and_then(Value::as_str).unwrap_or("").to_string(),
                mib_per_sec: g("bwMiB")?,
                iops: g("iops")?,
                latency_s: g("latency")?,
                xfer_kib: g("xferKiB")?,
                total_s: g("totalTime")?,
            };
            // A new iteration begins when an access comes again.
            let start_new = iterations
                .last()
                .is_none_or(|(_, v)| v.iter().any(|x| x.access == a.access));
            if start_new {
                iterations.push((iterations.len() as u32, Vec::new()));
            }
            if let Some(last) = iterations.last_mut() {
                last.1.push(a);
            }
        }
        all.extend(runs_of(origin, "ior json", &info, iterations, text)?);
    }
    Ok(all)
}
