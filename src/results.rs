//! The commands that read the database — `results list | show | study | tag | untag | rm |
//! export | import | compare` and `report` — and the printing every command shares: a stored
//! run, study or scan for the terminal (crates/report's tables), as one JSON document, or CSV.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use storlab_model::scan::Report;
use storlab_report::export::{exporter, write_whole, Csv, Exporter, Xlsx, FORMATS};
use storlab_report::iozone::CellResult;
use storlab_report::studies::StudyView;
use storlab_report::table::Table;
use storlab_session::Points;
use storlab_store::{GroupSpec, RunFilter, Store};
use storlab_workload::iozone::IozoneArgs;

use crate::cli::{CompareArgs, DbArgs, ExportArgs, ImportArgs, ListFilter, OutputArgs};
use crate::usage;

/// Opens (creating it if need be) the database that a command stores into.
pub fn open_new(db: &DbArgs) -> Result<Store> {
    Ok(Store::connect(&db.target()?, &storlab_env::hostname())?)
}

/// Opens the database a command reads: a SQLite file must exist (reading never creates one);
/// a PostgreSQL database is made current by its migrations, like any open.
pub fn open_existing(db: &DbArgs) -> Result<Store> {
    Ok(Store::open_existing(&db.target()?, &storlab_env::hostname())?)
}

/// [`open_existing`] for a crate that opens the database only when it needs it.
pub fn opener(db: &DbArgs) -> impl Fn() -> Result<Store, storlab_store::StoreError> + '_ {
    move || match db.target() {
        Ok(t) => Store::open_existing(&t, &storlab_env::hostname()),
        Err(e) => Err(storlab_store::StoreError::Request(e.to_string())),
    }
}

pub fn print_json<T: serde::Serialize>(v: &T) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut w, v)?;
    writeln!(w)?;
    Ok(w.flush()?)
}

/// Prints one table as CSV.
pub fn print_csv(t: &Table) -> Result<()> {
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
        print_csv(&storlab_report::runs::data_tables(std::slice::from_ref(&run))[0])
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
        print_json(&storlab_report::scan::Document {
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
    let results = CellResult::of_points(a, &done.done);
    if a.json {
        print_json(&storlab_report::iozone::document(a, study, &results, note))?;
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

pub fn export(a: &ExportArgs) -> Result<u8> {
    let (format, file) = (&a.format, a.file.as_deref());
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
    let all = storlab_report::runs::export_tables(&open_existing(&a.db)?, &a.ids, !a.no_samples)?;
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

pub fn import(a: &ImportArgs) -> Result<u8> {
    use storlab_import::record::{formats, read_text, store_pieces};
    let (file, out) = (&a.file, &a.output);
    if file.is_dir() {
        return import_dir(a);
    }
    let text = read_text(file).map_err(|why| usage(format!("{}: {why}", file.display())))?;
    let origin = storlab_import::Origin {
        path: file.display().to_string(),
        host: a.host.clone(),
        tags: a.tags.clone(),
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
fn import_dir(a: &ImportArgs) -> Result<u8> {
    use storlab_import::record::{files_below, import_listing, Outcome};
    let (dir, out) = (&a.file, &a.output);
    let listing = files_below(dir).map_err(usage)?;
    let mut store = open_new(&out.db)?;
    let line = |path: &str, o: &Outcome| match o {
        Outcome::Imported { formats, ids } => format!(
            "{path}: imported {} run(s) from {} ({})",
            ids.len(),
            formats.join(", "),
            storlab_report::runs::id_list(ids)
        ),
        Outcome::NotImported(why) => format!("{path}: not imported: {why}"),
    };
    let done = import_listing(&mut store, &listing, a.host.clone(), &a.tags, |path, o| {
        if !out.json {
            println!("{}", line(path, o));
        }
    })?;
    let (ids, failed, all) = (done.ids(), done.failed(), done.files.len());
    if out.json {
        let files: Vec<serde_json::Value> = done
            .files
            .iter()
            .map(|(path, o)| match o {
                Outcome::Imported { formats, ids } => {
                    serde_json::json!({ "file": path, "formats": formats, "imported": ids })
                }
                Outcome::NotImported(why) => serde_json::json!({ "file": path, "error": why }),
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({ "files": files, "imported": ids, "not_imported": failed })
        );
        return Ok(if failed > 0 { 1 } else { 0 });
    }
    for (path, why) in &listing.unreadable {
        println!("{path}: not imported: {why}");
    }
    let not = if failed > 0 {
        format!("; {failed} file(s) not imported (named above)")
    } else {
        String::new()
    };
    eprintln!(
        "storlab: imported {} run(s) from {} of {all} file(s) in {} into {}{not}",
        ids.len(),
        all - failed,
        dir.display(),
        store.target()
    );
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

pub fn compare(a: &CompareArgs) -> Result<u8> {
    let (specs, out) = (&a.groups, &a.output);
    if specs.len() < 2 {
        return Err(usage("compare needs at least two groups, e.g. `storlab results compare fs=ext2 fs=ext3` or `storlab results compare 3,4,5 6,7,8`"));
    }
    let report = comparison(&open_existing(&out.db)?, specs, a.allow_different)?;
    if out.json {
        print_json(&report)?;
    } else {
        print!("{}", storlab_report::compare::render_text(&report));
    }
    Ok(0)
}
