//! IOzone in and out. In: IOzone's text output as storlab runs: the throughput-mode report (`-t`: "Children see
//! throughput ...") and the Excel-style report (`-R`: "Writer report" matrices of file size ×
//! record size), as sites kept them for years.
//!
//! A throughput-mode file becomes one run with a phase per test. An `-R` report becomes one run
//! per file size × record size cell, each with a phase per report; several cells are marked as
//! one study by the caller. IOzone prints kB/sec with kB = 1024 bytes.

use serde::Serialize;
use serde_json::{json, Value};
use storlab_model::env::Environment;
use storlab_model::plan::PhaseKind;
use storlab_model::result::{PhaseResult, Throughput};
use storlab_workload::iozone::{phase_named, IozoneArgs, IozoneCell, IozonePhase};

use crate::table::{Cell, Table};
use storlab_model::run::{ImportedParams, ImportedRun, NewRun, Phase, PhaseName, PhaseParams, RunKind};

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
fn kind_of(name: &str) -> Option<PhaseKind> {
    phase_named(name).map(|p| p.kind)
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

/// An imported IOzone test's figures: the bytes moved and the throughputs it printed, bytes/s.
struct Printed {
    bytes: f64,
    parent: f64,
    children: f64,
    min: f64,
    max: f64,
}

/// One IOzone test as a phase: IOzone reports throughput only (no latency, no I/O counts);
/// first done is its "children see" figure, all done its "parent sees".
fn phase(seq: u32, kind: PhaseKind, f: Printed, params: ImportedParams) -> Phase {
    let seconds = if f.parent > 0.0 { f.bytes / f.parent } else { 0.0 };
    // Every IOzone I/O is one record: I/Os and IOPS follow from the record size.
    let rec = params.bs.unwrap_or(0).max(1) as f64;
    let ops = (f.bytes / rec) as u64;
    let bytes = f.bytes as u64;
    let writes = kind.writes();
    Phase {
        seq,
        kind: PhaseName::Kind(kind),
        params: PhaseParams::Imported(ImportedParams {
            notes: vec![
                "IOzone reports throughput only: no latency, no I/O counts; first done is IOzone's \"children see\" figure, all done its \"parent sees\"".into(),
            ],
            ..params
        }),
        result: PhaseResult {
            bytes_read: if writes { 0 } else { bytes },
            bytes_written: if writes { bytes } else { 0 },
            ops_read: if writes { 0 } else { ops },
            ops_written: if writes { ops } else { 0 },
            all_done: Throughput {
                seconds,
                bytes,
                ops,
                bytes_per_sec: f.parent,
                iops: f.parent / rec,
            },
            first_done: Throughput {
                seconds,
                bytes,
                ops,
                bytes_per_sec: f.children,
                iops: f.children / rec,
            },
            worker_min_bytes_per_sec: f.min,
            worker_max_bytes_per_sec: f.max,
            ..PhaseResult::default()
        },
        cache_flattered: false,
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
    let tool = format!("IOzone {version}");
    let run = |name: String, phases: Vec<Phase>, extra: Value| ImportedRun {
        run: NewRun {
            kind: RunKind::Import,
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
        environment: Environment {
            host: host.to_string(),
            source: Some(format!(
                "imported from IOzone {version}: IOzone does not record the machine"
            )),
            ..Environment::default()
        },
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
                Printed {
                    bytes: workers * file_kb * 1024.0,
                    parent: parent * k,
                    children: children * k,
                    min: min * k,
                    max: max * k,
                },
                ImportedParams {
                    tool: tool.clone(),
                    test: Some(who.clone()),
                    bs: Some((rec_kb * 1024.0) as u64),
                    file_size: Some((file_kb * 1024.0) as u64),
                    workers: Some(workers as u32),
                    ..ImportedParams::default()
                },
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
                Printed {
                    bytes: file_kb as f64 * 1024.0,
                    parent: bps,
                    children: bps,
                    min: bps,
                    max: bps,
                },
                ImportedParams {
                    tool: tool.clone(),
                    test: Some(name.clone()),
                    bs: Some(rec_kb * 1024),
                    file_size: Some(file_kb * 1024),
                    workers: Some(1),
                    ..ImportedParams::default()
                },
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

// ---------------------------------------------------------------------------------------------
// IOzone out: `storlab iozone`'s report in IOzone's layout and its -b workbook.

/// One cell of an IOzone run as stored: the cell, its run, and each phase's result with the
/// names IOzone gives it.
#[derive(Debug, Clone)]
pub struct CellResult {
    /// The cell.
    pub cell: IozoneCell,
    /// Its run.
    pub run_id: i64,
    /// Each phase, in order.
    pub phases: Vec<(&'static IozonePhase, PhaseResult)>,
}

const KB: f64 = 1024.0;

/// IOzone's figures of a phase, in kB/s (or ops/s with -O).
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// "Children see throughput": with stonewalling, what all moved until the first finished.
    pub children_see: f64,
    /// "Parent sees throughput": all done.
    pub parent_sees: f64,
    /// The slowest worker.
    pub min_per_worker: f64,
    /// The fastest worker.
    pub max_per_worker: f64,
    /// The mean of the workers.
    pub avg_per_worker: f64,
    /// The least any worker moved (kB, or I/Os with -O).
    pub min_xfer: f64,
    /// "kB/sec" or "ops/sec".
    pub unit: &'static str,
}

/// IOzone's figures of a phase.
pub fn figures(r: &PhaseResult, a: &IozoneArgs) -> Figures {
    let unit = |bytes_per_sec: f64, ops_per_sec: f64| if a.ops { ops_per_sec } else { bytes_per_sec / KB };
    let per: Vec<f64> = r
        .workers
        .iter()
        .map(|w| unit(w.bytes_per_sec, w.ops as f64 / w.seconds.max(1e-9)))
        .collect();
    let n = per.len().max(1) as f64;
    // With stonewalling (IOzone's default) the children's throughput is what all of them moved
    // until the first finished; with -x, the sum of each worker's own rate.
    let children = if a.stonewall {
        unit(r.first_done.bytes_per_sec, r.first_done.iops)
    } else {
        per.iter().sum()
    };
    Figures {
        children_see: children,
        parent_sees: unit(r.all_done.bytes_per_sec, r.all_done.iops),
        min_per_worker: per.iter().copied().fold(f64::INFINITY, f64::min),
        max_per_worker: per.iter().copied().fold(0.0, f64::max),
        avg_per_worker: per.iter().sum::<f64>() / n,
        min_xfer: r
            .workers
            .iter()
            .map(|w| if a.ops { w.ops as f64 } else { w.bytes as f64 / KB })
            .fold(f64::INFINITY, f64::min),
        unit: if a.ops { "ops/sec" } else { "kB/sec" },
    }
}

/// How IOzone prints the worker count and the word after it (its printf formats differ by test:
/// `"%2ld initial writers \t="`, `"%ld re-readers \t="`, `"%2ld readers \t\t="`).
fn who_line(p: &IozonePhase, workers: u32) -> String {
    let (label, w) = (p.label, p.who);
    match label {
        "Initial write" | "Rewrite" | "Fwrite" | "Fread" => format!("{workers:2} {w} \t="),
        "Read" => format!("{workers:2} {w} \t\t="),
        _ => format!("{workers} {w} \t="),
    }
}

/// The run in IOzone's own layout, so that eyes and scripts find "Children see throughput"
/// where they always did, with what IOzone never gave (first done / all done, latency
/// percentiles) on storlab's own lines.
pub fn render(a: &IozoneArgs, results: &[CellResult]) -> String {
    let throughput_mode = a.throughput_mode();
    let unit = if a.ops { "ops" } else { "kB" };
    let port = if a.threads_flag { "thread" } else { "process" };
    let mut s = String::new();
    s += "\tstorlab iozone: IOzone's tests on storlab's engine\n";
    s += &format!("\tCommand line used: {}\n", a.command_line);
    s += &format!(
        "\tOutput is in {}\n",
        if a.ops { "operations per second" } else { "kBytes/sec" }
    );
    if a.direct {
        s += "\tO_DIRECT feature enabled\n";
    }
    if a.osync {
        s += "\tSYNC Mode.\n";
    }
    if a.flush_timed {
        s += "\tInclude fsync in write timing\n";
    }
    if a.close_timed {
        s += "\tInclude close in write timing\n";
    }
    if !a.stonewall {
        s += "\tStonewall disabled\n";
    }
    if throughput_mode {
        for r in results {
            let c = r.cell;
            s += &format!(
                "\n\tThroughput test with {} {}{}\n\tEach {} writes a {} kByte file in {} kByte records\n",
                c.workers,
                port,
                if c.workers == 1 { "" } else { "es" },
                port,
                c.file / 1024,
                c.record / 1024
            );
            for (label, p) in &r.phases {
                let f = figures(p, a);
                let w = who_line(label, c.workers);
                s += &format!(
                    "\n\tChildren see throughput for {w} {:10.2} {unit}/sec\n",
                    f.children_see
                );
                s += &format!("\tParent sees throughput for {w} {:10.2} {unit}/sec\n", f.parent_sees);
                s += &format!(
                    "\tMin throughput per {port} \t\t\t= {:10.2} {unit}/sec \n",
                    f.min_per_worker
                );
                s += &format!(
                    "\tMax throughput per {port} \t\t\t= {:10.2} {unit}/sec\n",
                    f.max_per_worker
                );
                s += &format!(
                    "\tAvg throughput per {port} \t\t\t= {:10.2} {unit}/sec\n",
                    f.avg_per_worker
                );
                s += &format!("\tMin xfer \t\t\t\t\t= {:10.2} {unit}\n", f.min_xfer);
                if a.cpu {
                    let cpu = p.cpu_user + p.cpu_sys;
                    let wall = p.all_done.seconds;
                    s += &format!(
                        "\tCPU Utilization: Wall time {wall:8.3}    CPU time {cpu:8.3}    CPU utilization {:6.2} %\n",
                        cpu / wall.max(1e-9) * 100.0
                    );
                }
                if a.show_xfer {
                    for (i, wk) in p.workers.iter().enumerate() {
                        s += &format!(
                            "\tChild[{i}] xfer count = {:10.2} {unit}, Throughput = {:10.2} {unit}/sec\n",
                            if a.ops { wk.ops as f64 } else { wk.bytes as f64 / KB },
                            if a.ops {
                                wk.ops as f64 / wk.seconds.max(1e-9)
                            } else {
                                wk.bytes_per_sec / KB
                            }
                        );
                    }
                }
                s += &storlab_line(p);
            }
        }
        if a.excel_report {
            s += &format!("\n\n\"Throughput report Y-axis is type of test X-axis is number of {port}es\"\n");
            s += &format!(
                "\"Record size = {} kBytes \"\n",
                results.first().map(|r| r.cell.record / 1024).unwrap_or(0)
            );
            s += &format!("\"Output is in {}\"\n\n", if a.ops { "ops/sec" } else { "kBytes/sec" });
            for label in a.phases() {
                s += &format!("\"{:>15} \"", label.label);
                for r in results {
                    if let Some((_, p)) = r.phases.iter().find(|(l, _)| *l == label) {
                        s += &format!("{:10.2} ", figures(p, a).children_see);
                    }
                }
                s += "\n\n";
            }
        }
    } else {
        // IOzone's single-worker table, its header as IOzone prints it (columns for every
        // test) and each row with the figures of the tests run, in IOzone's order and widths.
        let labels = a.phases();
        s += "                                                              random    random     bkwd    record    stride                                    \n";
        s += "              kB  reclen    write  rewrite    read    reread    read     write     read   rewrite      read   fwrite frewrite    fread  freread";
        if a.tests.iter().any(|t| *t >= 9) {
            // IOzone adds these columns when it runs its pwrite/pread and pwritev/preadv tests.
            s += "   pwrite repwrite    pread  repread  pwritev repwritev  preadv repreadv";
        }
        s += "\n";
        for r in results {
            s += &format!("{:16}{:8}", r.cell.file / 1024, r.cell.record / 1024);
            for (label, p) in &r.phases {
                let v = figures(p, a).parent_sees.round() as i64;
                // IOzone prints record rewrite and stride read with a leading space.
                if matches!(label.label, "Record rewrite" | "Stride read") {
                    s += &format!(" {v:9}");
                } else {
                    s += &format!("{v:9}");
                }
            }
            s += "\n";
        }
        s += "\nstorlab: first done / all done are the same with one worker; latency per cell:\n";
        for r in results {
            for (label, p) in &r.phases {
                s += &format!(
                    "{:>8} kB {:>6} kB {:<16}",
                    r.cell.file / 1024,
                    r.cell.record / 1024,
                    label.label
                );
                s += storlab_line(p).trim_start_matches("\tstorlab: ");
            }
        }
        if a.excel_report {
            s += "\nExcel output is below:\n";
            for label in &labels {
                s += &format!("\n\"{} report\"\n", label.report);
                let recs = distinct(results.iter().map(|r| r.cell.record));
                s += "      ";
                for rec in &recs {
                    s += &format!("  \"{}\"", rec / 1024);
                }
                s += "\n";
                for file in distinct(results.iter().map(|r| r.cell.file)) {
                    s += &format!("\"{}\"  ", file / 1024);
                    for rec in &recs {
                        match results
                            .iter()
                            .find(|r| r.cell.file == file && r.cell.record == *rec)
                            .and_then(|r| r.phases.iter().find(|(l, _)| l == label))
                        {
                            Some((_, p)) => s += &format!("{:.0} ", figures(p, a).parent_sees),
                            None => s += "  ",
                        }
                    }
                    s += "\n";
                }
            }
        }
    }
    s
}

fn distinct(it: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut v: Vec<u64> = it.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// What IOzone never printed: first done / all done and latency percentiles.
fn storlab_line(p: &PhaseResult) -> String {
    let us = |ns: u64| ns as f64 / 1e3;
    format!(
        "\tstorlab: first done {:.2} kB/sec, all done {:.2} kB/sec; latency p50 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs\n",
        p.first_done.bytes_per_sec / KB,
        p.all_done.bytes_per_sec / KB,
        us(p.latency.p50_ns),
        us(p.latency.p99_ns),
        us(p.latency.p99_9_ns),
        us(p.latency.max_ns)
    )
}

/// The -b workbook's tables: a summary sheet (every cell and test), then one sheet per test:
/// file sizes down and record sizes across (or worker counts down in a worker sweep).
pub fn workbook(a: &IozoneArgs, results: &[CellResult]) -> Vec<Table> {
    let throughput_mode = a.throughput_mode();
    let unit = if a.ops { "ops/sec" } else { "kB/sec" };
    let mut summary = Table::new(
        "Summary",
        &[
            "test",
            "workers",
            "file size (kB)",
            "record size (kB)",
            &format!("children see ({unit})"),
            &format!("parent sees ({unit})"),
            &format!("min per worker ({unit})"),
            &format!("max per worker ({unit})"),
            "min xfer (kB)",
            "first done (kB/sec)",
            "all done (kB/sec)",
            "lat p50 (µs)",
            "lat p99 (µs)",
            "lat p99.9 (µs)",
            "storlab run",
        ],
    );
    summary.rows.push(vec![Cell::Text(a.command_line.clone())]);
    for r in results {
        for (label, p) in &r.phases {
            let f = figures(p, a);
            summary.rows.push(vec![
                label.label.into(),
                r.cell.workers.into(),
                (r.cell.file / 1024).into(),
                (r.cell.record / 1024).into(),
                f.children_see.into(),
                f.parent_sees.into(),
                f.min_per_worker.into(),
                f.max_per_worker.into(),
                f.min_xfer.into(),
                (p.first_done.bytes_per_sec / KB).into(),
                (p.all_done.bytes_per_sec / KB).into(),
                (p.latency.p50_ns as f64 / 1e3).into(),
                (p.latency.p99_ns as f64 / 1e3).into(),
                (p.latency.p99_9_ns as f64 / 1e3).into(),
                r.run_id.into(),
            ]);
        }
    }
    let mut tables = vec![summary];
    for label in a.phases() {
        let name = format!("{} report", label.report);
        if throughput_mode {
            let mut t = Table::new(
                &name,
                &[
                    "workers",
                    &format!("children see ({unit})"),
                    &format!("parent sees ({unit})"),
                ],
            );
            for r in results {
                if let Some((_, p)) = r.phases.iter().find(|(l, _)| *l == label) {
                    let f = figures(p, a);
                    t.rows
                        .push(vec![r.cell.workers.into(), f.children_see.into(), f.parent_sees.into()]);
                }
            }
            tables.push(t);
        } else {
            let recs = distinct(results.iter().map(|r| r.cell.record));
            let mut headers = vec![format!("file size (kB) \\ record size (kB), {unit}")];
            headers.extend(recs.iter().map(|r| (r / 1024).to_string()));
            let mut t = Table {
                name,
                headers,
                rows: Vec::new(),
            };
            for file in distinct(results.iter().map(|r| r.cell.file)) {
                let mut row: Vec<Cell> = vec![(file / 1024).into()];
                for rec in &recs {
                    row.push(
                        results
                            .iter()
                            .find(|r| r.cell.file == file && r.cell.record == *rec)
                            .and_then(|r| r.phases.iter().find(|(l, _)| *l == label))
                            .map(|(_, p)| Cell::from(figures(p, a).parent_sees))
                            .unwrap_or(Cell::Empty),
                    );
                }
                t.rows.push(row);
            }
            tables.push(t);
        }
    }
    tables
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
