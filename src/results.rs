//! The commands that read the database — `results list | show | study | tag | untag | rm |
//! export | import | compare` and `report` — and the printing every command shares: a stored
//! run, study or scan for the terminal (crates/report's tables), as one JSON document, or CSV.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use storlab_model::scan::Report;
use storlab_model::study::Role;
use storlab_report::export::{exporter, write_whole, Csv, Exporter, Xlsx, FORMATS};
use storlab_report::iozone::{figures, CellResult};
use storlab_report::studies::StudyView;
use storlab_report::table::Table;
use storlab_session::Points;
use storlab_store::{GroupSpec, RunFilter, Store};
use storlab_workload::iozone::IozoneArgs;

use crate::cli::{DbArgs, ListFilter, OutputArgs};
use crate::usage;

/// Opens (creating it if need be) the database that a command stores into.
pub fn open_new(db: &DbArgs) -> Result<Store> {
    Ok(Store::connect(&db.target()?, &storlab_env::hostname())?)
}

/// Opens the database a command reads: a SQLite file must exist (reading never creates one);
/// a PostgreSQL database is made current by its migrations, like any open.
pub fn open_existing(db: &DbArgs) -> Result<Store> {
    let target = db.target()?;
    if let Some(path) = target.file() {
        if !path.exists() {
            return Err(usage(format!(
                "no results database at {}: run `storlab demo` or `storlab run` first, or give --db FILE|URL",
                path.display()
            )));
        }
    }
    Ok(Store::connect(&target, &storlab_env::hostname())?)
}

pub fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut w, v)?;
    writeln!(w)?;
    Ok(w.flush()?)
}

fn print_csv(t: &Table) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    Csv::table(t, &mut w)?;
    Ok(w.flush()?)
}

/// Prints a stored run (a scan in its own terms): text, JSON or CSV.
pub fn print_run(store: &Store, id: i64, samples: bool, out: &OutputArgs) -> Result<()> {
    let run = store.run(id, samples || out.json)?.ok_or_else(|| {
        usage(format!(
            "no run {id} in {}: `storlab results list` shows the runs there",
            store.target()
        ))
    })?;
    if let Some(report) = store.scan(id)? {
        return print_scan(&report, id, None, out);
    }
    if out.json {
        print_json(&run)
    } else if out.csv {
        let tables = storlab_report::runs::data_tables(std::slice::from_ref(&run));
        print_csv(&tables[0])
    } else if run.run.kind == storlab_model::run::RunKind::Challenge {
        // A challenge's figures are the challenge's, not a phase's: say where they are.
        let cid = run
            .run
            .job_name
            .as_deref()
            .and_then(|j| j.strip_prefix("challenge-"))
            .unwrap_or("ID");
        println!(
            "run {id} · challenge · this host's share of challenge {cid} · status {} · host {} · started {}",
            run.run.status, run.run.host, run.run.started_at
        );
        println!("its files and figures: storlab challenge show {cid} · storlab challenge stats {cid}");
        Ok(())
    } else {
        print!("{}", storlab_report::runs::render(&run));
        Ok(())
    }
}

/// Prints a scan's report: text, JSON (streamed: a scan can have thousands of rows) or CSV.
pub fn print_scan(
    report: &Report,
    run_id: i64,
    growth: Option<&storlab_model::scan::Growth>,
    out: &OutputArgs,
) -> Result<()> {
    if out.json {
        #[derive(serde::Serialize)]
        struct WithRun<'a> {
            run_id: i64,
            partial: bool,
            #[serde(flatten)]
            report: &'a Report,
            #[serde(skip_serializing_if = "Option::is_none")]
            growth: Option<&'a storlab_model::scan::Growth>,
        }
        print_json(&WithRun {
            run_id,
            partial: report.partial(),
            report,
            growth,
        })
    } else if out.csv {
        print_csv(&storlab_report::scan::data_table(report, "scan"))
    } else {
        print!("{}", storlab_report::scan::render(report, run_id));
        if let Some(g) = growth {
            print!("{}", storlab_report::scan::render_growth(g));
        }
        Ok(())
    }
}

/// Prints a stored study in its own terms, or as one JSON document.
pub fn print_study(store: &Store, id: i64, json: bool) -> Result<()> {
    let v = StudyView::load(store, id)?.ok_or_else(|| usage(format!("no study {id} in {}", store.target())))?;
    if json {
        print_json(&storlab_report::studies::document(&v))
    } else {
        print!("{}", storlab_report::studies::render_text(&v));
        Ok(())
    }
}

/// Prints an IOzone run in IOzone's layout (or as JSON), and writes its -b workbook.
pub fn print_iozone(
    store: &Store,
    a: &IozoneArgs,
    study: Option<i64>,
    done: &Points,
    note: Option<&str>,
) -> Result<()> {
    let results: Vec<CellResult> = done
        .done
        .iter()
        .filter_map(|(m, results)| match m.role {
            Role::Cell {
                workers,
                file_bytes,
                record_bytes,
            } => Some(CellResult {
                cell: storlab_workload::iozone::IozoneCell {
                    workers,
                    file: file_bytes,
                    record: record_bytes,
                },
                run_id: m.run_id,
                phases: a.phases().into_iter().zip(results.iter().cloned()).collect(),
            }),
            _ => None,
        })
        .collect();
    if a.json {
        let cells: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "run_id": r.run_id, "workers": r.cell.workers,
                    "file_bytes": r.cell.file, "record_bytes": r.cell.record,
                    "phases": r.phases.iter().map(|(p, res)| serde_json::json!({
                        "test": p.label, "figures": figures(res, a), "result": res,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        print_json(&serde_json::json!({ "command": a.command_line, "study": study, "cells": cells, "note": note }))?;
    } else {
        print!("{}", storlab_report::iozone::render(a, &results));
        if let Some(n) = note {
            println!("\n\t{n}");
        }
    }
    if let Some(path) = &a.workbook {
        let tables = storlab_report::iozone::workbook(a, &results);
        write_whole(path, |f| Xlsx.export(&tables, f))?;
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
            store.target()
        ),
        None => eprintln!(
            "storlab: stored as run {} in {}",
            results.first().map(|r| r.run_id).unwrap_or(0),
            store.target()
        ),
    }
    Ok(())
}

pub fn list(limit: usize, f: ListFilter, out: &OutputArgs) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let runs = store.find_runs(&RunFilter {
        ids: Vec::new(),
        host: f.host,
        kind: f.kind,
        job: f.job,
        since: f.since,
        until: f.until,
        tags: f.tags,
        limit: Some(limit),
    })?;
    if out.json {
        print_json(&runs)?;
        return Ok(0);
    }
    let t = storlab_report::runs::list_table(&runs);
    if out.csv {
        print_csv(&t)?;
    } else {
        print!("{}", t.to_text());
        eprintln!("{} run(s) in {}", runs.len(), store.target());
    }
    Ok(0)
}

pub fn show(id: i64, samples: bool, out: &OutputArgs) -> Result<u8> {
    print_run(&open_existing(&out.db)?, id, samples, out)?;
    Ok(0)
}

pub fn study(id: i64, out: &OutputArgs) -> Result<u8> {
    print_study(&open_existing(&out.db)?, id, out.json)?;
    Ok(0)
}

fn pairs(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn tag(id: i64, tags: &[(String, String)], out: &OutputArgs) -> Result<u8> {
    let mut store = open_existing(&out.db)?;
    if !store.tag(id, tags)? {
        return Err(usage(format!("no run {id} in {}", store.target())));
    }
    if out.json {
        let tags = store.run(id, false)?.map(|r| r.run.tags);
        println!("{}", serde_json::json!({ "run": id, "tags": tags }));
    } else {
        eprintln!("run {id}: tagged {}", pairs(tags));
    }
    Ok(0)
}

pub fn untag(id: i64, keys: &[String], out: &OutputArgs) -> Result<u8> {
    let mut store = open_existing(&out.db)?;
    if store.run(id, false)?.is_none() {
        return Err(usage(format!("no run {id} in {}", store.target())));
    }
    let n = store.untag(id, keys)?;
    if out.json {
        println!("{}", serde_json::json!({ "run": id, "removed": n }));
    } else {
        eprintln!("run {id}: removed {n} tag(s)");
    }
    Ok(0)
}

/// Asks on the terminal; false when the answer is not yes.
fn confirm(question: &str) -> Result<bool> {
    eprint!("{question} [y/N] ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

pub fn rm(ids: &[i64], yes: bool, out: &OutputArgs) -> Result<u8> {
    let mut store = open_existing(&out.db)?;
    let found = store.find_runs(&RunFilter {
        ids: ids.to_vec(),
        ..RunFilter::default()
    })?;
    let missing: Vec<String> = ids
        .iter()
        .filter(|i| !found.iter().any(|r| r.id == **i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(usage(format!(
            "no run {} in {}: nothing was removed",
            missing.join(", "),
            store.target()
        )));
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(usage(format!(
                "removing {} run(s) needs confirmation: give --yes (standard input is not a terminal)",
                ids.len()
            )));
        }
        let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        if !confirm(&format!("remove run(s) {list} and everything stored with them?"))? {
            eprintln!("nothing removed");
            return Ok(1);
        }
    }
    let n = store.delete_runs(ids)?;
    if out.json {
        println!("{}", serde_json::json!({ "removed": ids }));
    } else {
        eprintln!("removed {n} run(s)");
    }
    Ok(0)
}

pub fn export(ids: &[i64], format: &str, file: Option<&std::path::Path>, samples: bool, db: &DbArgs) -> Result<u8> {
    let ex = exporter(format).ok_or_else(|| {
        usage(format!(
            "unknown export format '{format}': expected one of {}",
            FORMATS.join(", ")
        ))
    })?;
    if file.is_none() && ex.name() == "xlsx" && std::io::stdout().is_terminal() {
        return Err(usage(
            "an XLSX workbook is binary: give -o FILE.xlsx (or redirect standard output)",
        ));
    }
    let store = open_existing(db)?;
    let mut runs = Vec::new();
    let mut scans: Vec<Table> = Vec::new();
    for id in ids {
        let run = store
            .run(*id, samples)?
            .ok_or_else(|| usage(format!("no run {id} in {}: nothing was exported", store.target())))?;
        if let Some(report) = store.scan(*id)? {
            scans.push(storlab_report::scan::data_table(&report, &format!("scan {id}")));
        }
        runs.push(run);
    }
    let mut all = storlab_report::runs::data_tables(&runs);
    if !scans.is_empty() {
        all.retain(|t| t.name != "phases" || !t.rows.is_empty());
        all.extend(scans);
    }
    match file {
        Some(path) => {
            write_whole(path, |f| ex.export(&all, f))?;
            eprintln!("storlab: wrote {} table(s) to {}", all.len(), path.display());
        }
        None => {
            let mut lock = std::io::BufWriter::new(std::io::stdout().lock());
            ex.export(&all, &mut lock)?;
            lock.flush()?;
        }
    }
    Ok(0)
}

pub fn import(file: &std::path::Path, host: Option<String>, tags: &[(String, String)], out: &OutputArgs) -> Result<u8> {
    use storlab_import::record::{formats, read_text, store_pieces};
    if file.is_dir() {
        return import_dir(file, host, tags, out);
    }
    let text = read_text(file).map_err(|why| usage(format!("{}: {why}", file.display())))?;
    let origin = storlab_import::Origin {
        path: file.display().to_string(),
        host,
        tags: tags.to_vec(),
    };
    let pieces = storlab_import::parse(&origin, &text).map_err(|e| usage(e.to_string()))?;
    let mut store = open_new(&out.db)?;
    let ids = store_pieces(&mut store, &origin.path, &pieces)?;
    if out.json {
        println!(
            "{}",
            serde_json::json!({ "imported": ids, "formats": formats(&pieces) })
        );
        return Ok(0);
    }
    let stored: Vec<_> = ids
        .iter()
        .filter_map(|id| store.run(*id, false).transpose())
        .collect::<Result<_, _>>()?;
    print!("{}", storlab_report::runs::imported_table(&stored).to_text());
    eprintln!(
        "storlab: imported {} run(s) from {} ({}) into {}",
        ids.len(),
        file.display(),
        formats(&pieces).join(", "),
        store.target()
    );
    Ok(0)
}

/// `storlab results import DIR`: every file below DIR (in name order), one transaction per
/// file, a line per file saying what became of it, and a summary. A file that does not read
/// is named with the reason and does not stop the others; the exit status is 1 when any file
/// was not imported.
fn import_dir(dir: &std::path::Path, host: Option<String>, tags: &[(String, String)], out: &OutputArgs) -> Result<u8> {
    use storlab_import::record::{files_below, import_file, Outcome};
    let listing = files_below(dir).map_err(usage)?;
    let (files, unreadable) = (&listing.files, &listing.unreadable);
    let mut store = open_new(&out.db)?;
    let mut lines = Vec::new();
    let mut all_ids = Vec::new();
    let mut failed = unreadable.len();
    for (path, why) in unreadable {
        lines.push(serde_json::json!({ "file": path, "error": why }));
    }
    for f in files {
        let path = f.display().to_string();
        let origin = storlab_import::Origin {
            path: path.clone(),
            host: host.clone(),
            tags: tags.to_vec(),
        };
        match import_file(&mut store, f, &origin)? {
            Outcome::Imported { formats, ids } => {
                if !out.json {
                    println!(
                        "{path}: imported {} run(s) from {} ({})",
                        ids.len(),
                        formats.join(", "),
                        storlab_report::runs::id_list(&ids)
                    );
                }
                lines.push(serde_json::json!({ "file": path, "formats": formats, "imported": ids }));
                all_ids.extend(ids);
            }
            Outcome::NotImported(why) => {
                failed += 1;
                if !out.json {
                    println!("{path}: not imported: {why}");
                }
                lines.push(serde_json::json!({ "file": path, "error": why }));
            }
        }
    }
    if out.json {
        println!(
            "{}",
            serde_json::json!({ "files": lines, "imported": all_ids, "not_imported": failed })
        );
    } else {
        for (path, why) in unreadable {
            println!("{path}: not imported: {why}");
        }
        eprintln!(
            "storlab: imported {} run(s) from {} of {} file(s) in {} into {}{}",
            all_ids.len(),
            files.len() + unreadable.len() - failed,
            files.len() + unreadable.len(),
            dir.display(),
            store.target(),
            if failed > 0 {
                format!("; {failed} file(s) not imported (named above)")
            } else {
                String::new()
            }
        );
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// The groups named on the command line, with their runs.
fn groups(store: &Store, specs: &[String]) -> Result<(Vec<String>, Vec<Vec<storlab_model::run::RunDetail>>)> {
    let mut labels = Vec::new();
    let mut members = Vec::new();
    for g in specs {
        let spec = GroupSpec::parse(g).map_err(usage)?;
        members.push(store.group(&spec)?);
        labels.push(spec.label());
    }
    Ok((labels, members))
}

/// Compares groups of runs; refuses runs whose workloads differ unless allowed.
pub(crate) fn comparison(
    store: &Store,
    specs: &[String],
    allow_different: bool,
) -> Result<storlab_report::compare::CompareReport> {
    let (labels, members) = groups(store, specs)?;
    let report = storlab_report::compare::compare_groups(&labels, &members);
    if !report.differences.is_empty() && !allow_different {
        return Err(usage(format!(
            "these runs did not run the same workload, so their figures do not compare:\n  {}\n(give --allow-different to compare them anyway; the differences are then printed with the result)",
            report.differences.join("\n  ")
        )));
    }
    Ok(report)
}

pub fn compare(specs: &[String], allow_different: bool, out: &OutputArgs) -> Result<u8> {
    if specs.len() < 2 {
        return Err(usage("compare needs at least two groups, e.g. `storlab results compare fs=ext2 fs=ext3` or `storlab results compare 3,4,5 6,7,8`"));
    }
    let report = comparison(&open_existing(&out.db)?, specs, allow_different)?;
    if out.json {
        print_json(&report)?;
    } else {
        print!("{}", storlab_report::compare::render_text(&report));
    }
    Ok(0)
}
