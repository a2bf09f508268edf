//! `storlab iozone [IOzone flags]`: IOzone's command line run on storlab's engine, reported in
//! IOzone's layout (so that eyes and scripts find "Children see throughput" where they always
//! did) followed by what IOzone never gave: first-done / all-done and latency percentiles.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Result;
use storlab_engine::PhaseResult;
use storlab_report::table::{Cell, Table};
use storlab_workload::iozone::{labels_of, IozoneArgs, SUPPORTED};
use storlab_workload::{resolve, ResolveOptions, WorkloadError};

use crate::runner::{db_path, run_job, ExecOptions};

/// IOzone's automatic-mode defaults: files 64 kB to 512 MB, records 4 kB to 16 MB, and for
/// files of 32 MB and up, records from 64 kB unless -z.
const AUTO_MIN_FILE: u64 = 64 << 10;
const AUTO_MAX_FILE: u64 = 512 << 20;
const AUTO_MIN_REC: u64 = 4 << 10;
const AUTO_MAX_REC: u64 = 16 << 20;
const CROSSOVER_FILE: u64 = 32 << 20;
const CROSSOVER_REC: u64 = 64 << 10;

/// storlab's own options, taken out of the IOzone line (they start with "--").
struct Own {
    db: Option<PathBuf>,
    json: bool,
    tags: Vec<(String, String)>,
    dir: PathBuf,
}

fn split_own(args: &[String]) -> Result<(Own, Vec<String>), WorkloadError> {
    let mut own = Own {
        db: None,
        json: false,
        tags: Vec::new(),
        dir: PathBuf::from("."),
    };
    let mut rest = Vec::new();
    let mut i = 0;
    let need = |i: usize, name: &str| {
        args.get(i + 1)
            .cloned()
            .ok_or_else(|| WorkloadError::invalid("the command line", format!("{name} needs a value")))
    };
    while i < args.len() {
        match args[i].as_str() {
            "--db" => {
                own.db = Some(PathBuf::from(need(i, "--db")?));
                i += 1;
            }
            "--dir" => {
                own.dir = PathBuf::from(need(i, "--dir")?);
                i += 1;
            }
            "--tag" => {
                let t = need(i, "--tag")?;
                let (k, v) = t.split_once('=').ok_or_else(|| {
                    WorkloadError::invalid("the command line", format!("--tag {t}: expected KEY=VALUE"))
                })?;
                own.tags.push((k.to_string(), v.to_string()));
                i += 1;
            }
            "--json" => own.json = true,
            _ => rest.push(args[i].clone()),
        }
        i += 1;
    }
    Ok((own, rest))
}

/// One cell of the run: worker count, file size, record size.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Cell3 {
    workers: u32,
    file: u64,
    record: u64,
}

fn doubling(lo: u64, hi: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut x = lo;
    while x <= hi {
        v.push(x);
        x *= 2;
    }
    v
}

fn cells(a: &IozoneArgs) -> Vec<Cell3> {
    let workers: Vec<u32> = match (a.lower, a.upper) {
        (Some(l), Some(u)) => (l..=u).collect(),
        _ => vec![a.workers.unwrap_or(1)],
    };
    let mut out = Vec::new();
    for w in workers {
        if a.auto {
            let files = doubling(a.min_file.unwrap_or(AUTO_MIN_FILE), a.max_file.unwrap_or(AUTO_MAX_FILE));
            let recs = doubling(
                a.min_record.unwrap_or(AUTO_MIN_REC),
                a.max_record.unwrap_or(AUTO_MAX_REC),
            );
            for f in &files {
                for r in &recs {
                    if r > f {
                        continue;
                    }
                    if *f >= CROSSOVER_FILE && *r < CROSSOVER_REC && !a.small_records_too && a.min_record.is_none() {
                        continue;
                    }
                    out.push(Cell3 {
                        workers: w,
                        file: *f,
                        record: *r,
                    });
                }
            }
        } else {
            out.push(Cell3 {
                workers: w,
                file: a.file_size.unwrap_or(512 << 10),
                record: a.record.unwrap_or(4 << 10),
            });
        }
    }
    out
}

/// Results of one cell, per phase, with IOzone's labels.
struct CellResult {
    cell: Cell3,
    run_id: i64,
    phases: Vec<(String, PhaseResult)>,
}

const KB: f64 = 1024.0;

/// IOzone's figures of a phase, in kB/s (or ops/s with -O).
struct Figures {
    children: f64,
    parent: f64,
    min: f64,
    max: f64,
    avg: f64,
    min_xfer: f64,
}

fn figures(r: &PhaseResult, a: &IozoneArgs) -> Figures {
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
        children,
        parent: unit(r.all_done.bytes_per_sec, r.all_done.iops),
        min: per.iter().copied().fold(f64::INFINITY, f64::min),
        max: per.iter().copied().fold(0.0, f64::max),
        avg: per.iter().sum::<f64>() / n,
        min_xfer: r
            .workers
            .iter()
            .map(|w| if a.ops { w.ops as f64 } else { w.bytes as f64 / KB })
            .fold(f64::INFINITY, f64::min),
    }
}

/// How IOzone prints the worker count and the word after it (its printf formats differ by test:
/// "%2ld initial writers \t=", "%ld re-readers \t=", "%2ld readers \t\t=").
fn who_line(label: &str, workers: u32) -> String {
    let w = who(label);
    match label {
        "Initial write" | "Rewrite" | "Fwrite" | "Fread" => format!("{workers:2} {w} \t="),
        "Read" => format!("{workers:2} {w} \t\t="),
        _ => format!("{workers} {w} \t="),
    }
}

/// IOzone's word for the workers of a phase in throughput mode.
fn who(label: &str) -> &'static str {
    match label {
        "Initial write" => "initial writers",
        "Rewrite" => "rewriters",
        "Read" => "readers",
        "Re-read" => "re-readers",
        "Reverse Read" => "reverse readers",
        "Stride read" => "stride readers",
        "Random read" => "random readers",
        "Mixed workload" => "mixed workload",
        "Random write" => "random writers",
        "Record rewrite" => "record rewriters",
        "Pwrite" => "pwrite writers",
        "Re-pwrite" => "re-pwrite writers",
        "Pread" => "pread readers",
        "Fwrite" => "fwriters",
        "Re-fwrite" => "re-fwriters",
        "Fread" => "freaders",
        "Re-fread" => "re-freaders",
        "Pwritev" => "pwritev writers",
        "Re-pwritev" => "re-pwritev writers",
        "Preadv" => "preadv readers",
        "Re-preadv" => "re-preadv readers",
        _ => "re-pread readers",
    }
}

fn phase_labels(a: &IozoneArgs) -> Vec<String> {
    a.tests
        .iter()
        .flat_map(|t| labels_of(*t).iter().map(|s| s.to_string()))
        .collect()
}

pub fn iozone(args: Vec<String>) -> Result<u8> {
    let (own, rest) = split_own(&args)?;
    let a = IozoneArgs::parse(&rest)?;
    if a.help {
        println!("storlab iozone: IOzone's command line on storlab's engine. Supported flags:");
        for (f, what) in SUPPORTED {
            println!("  {f:<14} {what}");
        }
        println!("storlab's own: --db PATH, --dir DIR (where IOzone's default files go), --tag KEY=VALUE, --json");
        return Ok(0);
    }
    let cells = cells(&a);
    if cells.is_empty() {
        return Err(WorkloadError::invalid(
            "the IOzone command line",
            "the ranges give no file size × record size cell: check -n -g -y -q",
        )
        .into());
    }
    if let (Some(u), false) = (a.upper, a.files.is_empty()) {
        if (a.files.len() as u32) < u {
            return Err(WorkloadError::invalid(
                "the IOzone command line",
                format!(
                    "-F names {} file(s) but -u asks for up to {u} workers: name one file per worker",
                    a.files.len()
                ),
            )
            .into());
        }
    }
    // Every cell is checked before anything is written.
    let opts = ResolveOptions {
        allow_devices: Vec::new(),
        file_tag: std::process::id().to_string(),
        default_seed: 1,
    };
    for c in &cells {
        resolve(&a.job(c.workers, c.file, c.record, &own.dir), &opts)?;
    }
    let db = db_path(&crate::cli::OutputArgs {
        db: own.db.clone(),
        json: false,
        csv: false,
    });
    let chatty = std::io::stderr().is_terminal() && !own.json;
    let throughput_mode = a.workers.is_some() || a.lower.is_some();
    let labels = phase_labels(&a);
    let mut results = Vec::new();
    let mut status = 0u8;
    for (i, c) in cells.iter().enumerate() {
        if chatty && cells.len() > 1 {
            eprintln!(
                "[{}/{}] {} worker(s), file {} kB, record {} kB",
                i + 1,
                cells.len(),
                c.workers,
                c.file / 1024,
                c.record / 1024
            );
        }
        let e = run_job(
            &a.job(c.workers, c.file, c.record, &own.dir),
            &db,
            &ExecOptions {
                kind: "iozone",
                tags: &own.tags,
                allow: &[],
                keep: a.keep,
                chatty,
                command: a.command_line.clone(),
                control: None,
            },
        )?;
        if e.status != "ok" {
            status = if e.status == "aborted" { crate::exit::ABORTED } else { 1 };
        }
        results.push(CellResult {
            cell: *c,
            run_id: e.run_id,
            phases: labels.iter().cloned().zip(e.results).collect(),
        });
        if status != 0 {
            break;
        }
    }
    let mut store = storlab_store::Store::open(&db, &storlab_env::capture(&[]).host)?;
    let study = if results.len() > 1 {
        let kind = if a.auto { "iozone-auto" } else { "iozone-workers" };
        let members: Vec<(i64, String)> = results
            .iter()
            .map(|r| {
                (
                    r.run_id,
                    format!(
                        "{} worker(s), {} kB × {} kB",
                        r.cell.workers,
                        r.cell.file / 1024,
                        r.cell.record / 1024
                    ),
                )
            })
            .collect();
        let id = store.save_study(
            kind,
            &serde_json::json!({ "command": a.command_line }),
            &members,
            &[],
            &[],
        )?;
        Some(id)
    } else {
        None
    };
    let env = storlab_env::capture(&[]);
    let note = cache_rule(&a, &cells, env.memory_bytes);

    if own.json {
        let cells_json: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "run_id": r.run_id,
                    "workers": r.cell.workers,
                    "file_bytes": r.cell.file,
                    "record_bytes": r.cell.record,
                    "phases": r.phases.iter().map(|(l, p)| {
                        let f = figures(p, &a);
                        serde_json::json!({
                            "test": l,
                            "children_see": f.children,
                            "parent_sees": f.parent,
                            "min_per_worker": f.min,
                            "max_per_worker": f.max,
                            "avg_per_worker": f.avg,
                            "min_xfer": f.min_xfer,
                            "unit": if a.ops { "ops/sec" } else { "kB/sec" },
                            "result": p,
                        })
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "command": a.command_line,
                "study": study,
                "cells": cells_json,
                "note": note,
            }))?
        );
    } else {
        print!("{}", render(&a, &results, throughput_mode));
        if let Some(n) = &note {
            println!("\n\t{n}");
        }
    }
    if let Some(path) = &a.workbook {
        write_workbook(path, &a, &results, throughput_mode)?;
        eprintln!("storlab: wrote the workbook {}", path.display());
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xls")) {
            // IOzone wrote the old binary format; the seeds' command lines say -b FILE.xls.
            eprintln!(
                "storlab: note: {} holds an XLSX workbook (IOzone's .xls was the older format); spreadsheets open it, some after asking — name it .xlsx to avoid the question",
                path.display()
            );
        }
    }
    match study {
        Some(s) => eprintln!(
            "storlab: stored {} runs as study {s} in {}",
            results.len(),
            db.display()
        ),
        None => eprintln!(
            "storlab: stored as run {} in {}",
            results.first().map(|r| r.run_id).unwrap_or(0),
            db.display()
        ),
    }
    Ok(status)
}

/// IOzone's rule for disk (not cache) figures: a data set of at least three times the buffer
/// cache. Said when the largest data set here is smaller and the I/O goes through the cache.
fn cache_rule(a: &IozoneArgs, cells: &[Cell3], memory: u64) -> Option<String> {
    if a.direct || memory == 0 {
        return None;
    }
    let largest = cells.iter().map(|c| c.file * c.workers as u64).max().unwrap_or(0);
    if largest >= 3 * memory {
        return None;
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let want = (3 * memory).div_ceil(1 << 30);
    let how = if a.auto {
        format!("-g {want}g")
    } else if a.workers.is_some() {
        format!("-s {}g per worker", want.div_ceil(a.workers.unwrap_or(1) as u64))
    } else {
        format!("-s {want}g")
    };
    Some(format!(
        "Note (IOzone's rule): for disk rather than cache figures the data set must be at least three times the buffer cache. This machine has {:.1} GiB of RAM and the largest data set here is {:.2} GiB, so these are cache figures; use {how}, or -I (O_DIRECT).",
        gib(memory),
        gib(largest)
    ))
}

fn render(a: &IozoneArgs, results: &[CellResult], throughput_mode: bool) -> String {
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
                s += &format!("\n\tChildren see throughput for {w} {:10.2} {unit}/sec\n", f.children);
                s += &format!("\tParent sees throughput for {w} {:10.2} {unit}/sec\n", f.parent);
                s += &format!("\tMin throughput per {port} \t\t\t= {:10.2} {unit}/sec \n", f.min);
                s += &format!("\tMax throughput per {port} \t\t\t= {:10.2} {unit}/sec\n", f.max);
                s += &format!("\tAvg throughput per {port} \t\t\t= {:10.2} {unit}/sec\n", f.avg);
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
            for label in phase_labels(a) {
                s += &format!("\"{label:>15} \"");
                for r in results {
                    if let Some((_, p)) = r.phases.iter().find(|(l, _)| *l == label) {
                        s += &format!("{:10.2} ", figures(p, a).children);
                    }
                }
                s += "\n\n";
            }
        }
    } else {
        // IOzone's single-worker table, its header as IOzone prints it (columns for every
        // test) and each row with the figures of the tests run, in IOzone's order and widths.
        let labels = phase_labels(a);
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
                let v = figures(p, a).parent.round() as i64;
                // IOzone prints record rewrite and stride read with a leading space.
                if matches!(label.as_str(), "Record rewrite" | "Stride read") {
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
                    label
                );
                s += storlab_line(p).trim_start_matches("\tstorlab: ");
            }
        }
        if a.excel_report {
            s += "\nExcel output is below:\n";
            for label in &labels {
                s += &format!("\n\"{} report\"\n", report_name(label));
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
                            Some((_, p)) => s += &format!("{:.0} ", figures(p, a).parent),
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

/// IOzone's report names for -R and -b.
fn report_name(label: &str) -> &'static str {
    match label {
        "Initial write" => "Writer",
        "Rewrite" => "Re-writer",
        "Read" => "Reader",
        "Re-read" => "Re-Reader",
        "Random read" => "Random read",
        "Random write" => "Random write",
        "Reverse Read" => "Backward read",
        "Record rewrite" => "Record rewrite",
        "Stride read" => "Stride read",
        "Mixed workload" => "Mixed workload",
        "Pwrite" => "Pwrite",
        "Re-pwrite" => "Re-Pwrite",
        "Pread" => "Pread",
        "Fwrite" => "Fwrite",
        "Re-fwrite" => "Re-Fwrite",
        "Fread" => "Fread",
        "Re-fread" => "Re-Fread",
        "Pwritev" => "Pwritev",
        "Re-pwritev" => "Re-Pwritev",
        "Preadv" => "Preadv",
        "Re-preadv" => "Re-Preadv",
        _ => "Re-Pread",
    }
}

/// The -b workbook: a summary sheet (every cell and test), then one sheet per test: file
/// sizes down and record sizes across (or worker counts down in a worker sweep).
fn write_workbook(path: &std::path::Path, a: &IozoneArgs, results: &[CellResult], throughput_mode: bool) -> Result<()> {
    use storlab_report::export::{Exporter, Xlsx};
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
                label.as_str().into(),
                r.cell.workers.into(),
                (r.cell.file / 1024).into(),
                (r.cell.record / 1024).into(),
                f.children.into(),
                f.parent.into(),
                f.min.into(),
                f.max.into(),
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
    for label in phase_labels(a) {
        let name = format!("{} report", report_name(&label));
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
                        .push(vec![r.cell.workers.into(), f.children.into(), f.parent.into()]);
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
                            .map(|(_, p)| Cell::from(figures(p, a).parent))
                            .unwrap_or(Cell::Empty),
                    );
                }
                t.rows.push(row);
            }
            tables.push(t);
        }
    }
    crate::output::write_whole(path, |f| Ok(Xlsx.export(&tables, f)?)).map_err(|e| match e {
        crate::output::WriteWhole::Place(m) => anyhow::anyhow!(m),
        crate::output::WriteWhole::Fill(e) => e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> IozoneArgs {
        IozoneArgs::parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn automatic_mode_has_iozones_matrix() {
        let c = cells(&args("-a -i 0"));
        // Files 64 kB..512 MB (14 sizes), records 4 kB..16 MB, record ≤ file, and from 32 MB
        // files on, records of 64 kB and more.
        assert!(c.iter().all(|c| c.record <= c.file));
        assert!(!c.iter().any(|c| c.file >= 32 << 20 && c.record < 64 << 10));
        assert_eq!(c.iter().filter(|c| c.file == 64 << 10).count(), 5);
        assert_eq!(c.iter().filter(|c| c.file == 512 << 20).count(), 9);
        let z = cells(&args("-a -z -i 0"));
        assert_eq!(z.iter().filter(|c| c.file == 512 << 20).count(), 13);
        let g = cells(&args("-a -i 0 -n 1m -g 4m -y 64k -q 1m"));
        assert_eq!(g.len(), 3 * 5, "files 1m, 2m, 4m × records 64k to 1m");
        let w = cells(&args("-i 0 -l 1 -u 4 -s 1m"));
        assert_eq!(w.iter().map(|c| c.workers).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn the_cache_rule_names_the_fix() {
        let a = args("-a -i 0");
        let n = cache_rule(&a, &cells(&a), 24 << 30).unwrap();
        assert!(n.contains("three times") && n.contains("-g 72g"), "{n}");
        let d = args("-a -i 0 -I");
        assert!(cache_rule(&d, &cells(&d), 24 << 30).is_none());
    }
}
