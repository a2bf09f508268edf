//! IOzone out: `storlab iozone`'s report in IOzone's layout and its -b workbook. (IOzone's
//! text in is crates/import.)

use serde::Serialize;
use storlab_model::result::PhaseResult;
use storlab_model::study::{Member, Role};
use storlab_workload::iozone::{IozoneArgs, IozoneCell, IozonePhase};

use crate::table::{Cell, Table};

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

impl CellResult {
    /// The cells of the points an IOzone run stored (each a member with its role and its
    /// phases' results), with IOzone's names for its phases.
    pub fn of_points(a: &IozoneArgs, done: &[(Member, Vec<PhaseResult>)]) -> Vec<CellResult> {
        done.iter()
            .filter_map(|(m, results)| match m.role {
                Role::Cell {
                    workers,
                    file_bytes,
                    record_bytes,
                } => Some(CellResult {
                    cell: IozoneCell {
                        workers,
                        file: file_bytes,
                        record: record_bytes,
                    },
                    run_id: m.run_id,
                    phases: a.phases().into_iter().zip(results.iter().cloned()).collect(),
                }),
                _ => None,
            })
            .collect()
    }
}

/// `storlab iozone --json`: the command, the study, each cell with IOzone's figures of each
/// phase beside its whole result, and the note on cache figures.
pub fn document(a: &IozoneArgs, study: Option<i64>, cells: &[CellResult], note: Option<&str>) -> serde_json::Value {
    let cells: Vec<serde_json::Value> = cells
        .iter()
        .map(|r| {
            let phases: Vec<serde_json::Value> = r
                .phases
                .iter()
                .map(|(p, res)| serde_json::json!({ "test": p.label, "figures": figures(res, a), "result": res }))
                .collect();
            serde_json::json!({
                "run_id": r.run_id, "workers": r.cell.workers,
                "file_bytes": r.cell.file, "record_bytes": r.cell.record,
                "phases": phases,
            })
        })
        .collect();
    serde_json::json!({ "command": a.command_line, "study": study, "cells": cells, "note": note })
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
///
/// `began` (RFC 3339, UTC) is printed as IOzone's "Run began" line, so that the output imported
/// later is dated by it.
pub fn render(a: &IozoneArgs, results: &[CellResult], began: Option<&str>) -> String {
    let mut s = header(a);
    if let Some(line) = began.and_then(ctime) {
        s += &format!("\tRun began: {line}\n");
    }
    if a.throughput_mode() {
        for r in results {
            s += &throughput_cell(a, r);
        }
        if a.excel_report {
            s += &throughput_excel(a, results);
        }
    } else {
        s += &auto_table(a, results);
        if a.excel_report {
            s += &auto_excel(a, results);
        }
    }
    s
}

/// An RFC 3339 UTC time as C's ctime(3) writes it ("Tue Nov 24 08:30:38 2026"), IOzone's form
/// of "Run began" (which the importer reads back as UTC).
fn ctime(rfc3339: &str) -> Option<String> {
    let t = humantime::parse_rfc3339_weak(rfc3339.trim_end_matches('Z')).ok()?;
    let secs = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    // 1970-01-01 was a Thursday.
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let day = DAYS[((secs / 86_400) % 7) as usize];
    let iso = humantime::format_rfc3339_seconds(t).to_string();
    let (y, m, d) = (
        &iso[0..4],
        iso[5..7].parse::<usize>().ok()?,
        iso[8..10].parse::<u32>().ok()?,
    );
    Some(format!(
        "{day} {} {d:2} {} {y}",
        MONTHS.get(m.checked_sub(1)?)?,
        &iso[11..19]
    ))
}

/// IOzone's heading: the command line, the unit and the modes in force.
fn header(a: &IozoneArgs) -> String {
    let mut s = String::new();
    s += "\tstorlab iozone: IOzone's tests on storlab's engine\n";
    s += &format!("\tCommand line used: {}\n", a.command_line);
    s += &format!(
        "\tOutput is in {}\n",
        if a.ops { "operations per second" } else { "kBytes/sec" }
    );
    for (on, line) in [
        (a.direct, "\tO_DIRECT feature enabled\n"),
        (a.osync, "\tSYNC Mode.\n"),
        (a.flush_timed, "\tInclude fsync in write timing\n"),
        (a.close_timed, "\tInclude close in write timing\n"),
        (!a.stonewall, "\tStonewall disabled\n"),
    ] {
        if on {
            s += line;
        }
    }
    s
}

/// One cell of throughput mode (-t): per test, the children's and the parent's throughput,
/// the spread per process, CPU and each child's transfer when asked, and storlab's line.
fn throughput_cell(a: &IozoneArgs, r: &CellResult) -> String {
    let unit = if a.ops { "ops" } else { "kB" };
    let port = if a.threads_flag { "thread" } else { "process" };
    let c = r.cell;
    let mut s = format!(
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
    s
}

/// Throughput mode's -R report: per test, the children's throughput at each process count.
fn throughput_excel(a: &IozoneArgs, results: &[CellResult]) -> String {
    let port = if a.threads_flag { "thread" } else { "process" };
    let mut s = format!("\n\n\"Throughput report Y-axis is type of test X-axis is number of {port}es\"\n");
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
    s
}

/// IOzone's single-worker table, its header as IOzone prints it (columns for every test) and
/// each row with the figures of the tests run, in IOzone's order and widths; then storlab's
/// latency per cell.
fn auto_table(a: &IozoneArgs, results: &[CellResult]) -> String {
    let mut s = String::new();
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
    s
}

/// The -R reports: per test, a matrix of file size by record size.
fn auto_excel(a: &IozoneArgs, results: &[CellResult]) -> String {
    let mut s = String::from("\nExcel output is below:\n");
    for label in &a.phases() {
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

/// Writes IOzone's `-b` workbook of `results` to `path`, whole or not at all.
pub fn write_workbook(
    path: &std::path::Path,
    a: &IozoneArgs,
    results: &[CellResult],
) -> Result<(), crate::export::WriteError> {
    use crate::export::Exporter;
    let tables = workbook(a, results);
    crate::export::write_whole(path, |f| crate::export::Xlsx.export(&tables, f))
}

/// The -b workbook's tables: a summary sheet (every cell and test), then one sheet per test:
/// file sizes down and record sizes across (or worker counts down in a worker sweep).
pub fn workbook(a: &IozoneArgs, results: &[CellResult]) -> Vec<Table> {
    let unit = if a.ops { "ops/sec" } else { "kB/sec" };
    let mut tables = vec![summary_sheet(a, results, unit)];
    for label in a.phases() {
        let name = format!("{} report", label.report);
        tables.push(if a.throughput_mode() {
            workers_sheet(a, results, label, name, unit)
        } else {
            matrix_sheet(a, results, label, name, unit)
        });
    }
    tables
}

/// The workbook's first sheet: every cell and test with all its figures and its storlab run.
fn summary_sheet(a: &IozoneArgs, results: &[CellResult], unit: &str) -> Table {
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
    summary
}

/// One test's sheet in a worker sweep (-t): worker counts down, children and parent across.
fn workers_sheet(a: &IozoneArgs, results: &[CellResult], label: &IozonePhase, name: String, unit: &str) -> Table {
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
    t
}

/// One test's sheet in automatic mode (-a): file sizes down, record sizes across.
fn matrix_sheet(a: &IozoneArgs, results: &[CellResult], label: &IozonePhase, name: String, unit: &str) -> Table {
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
    t
}
