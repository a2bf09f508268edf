//! The commands that read the database — `results list | show | study | tag | untag | rm |
//! export | import | compare` and `report` — and the printing every command shares: a stored
//! run, study or scan for the terminal (crates/report's tables), as one JSON document, or CSV.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use storlab_model::scan::Report;
use storlab_report::compare::compare_stored;
use storlab_report::export::{write_whole, Csv};
use storlab_report::studies::StudyView;
use storlab_report::table::Table;
use storlab_store::Store;

use crate::cli::{CompareArgs, DbArgs, ExportArgs, ImportArgs, OutputArgs};
use crate::usage;
use storlab_report::runs::ListFilter;

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

/// Prints what a command found as `out` asks: one JSON document, one CSV table, or text; only
/// the form asked for is made.
pub fn emit<J: serde::Serialize>(
    out: &OutputArgs,
    json: impl FnOnce() -> J,
    csv: impl FnOnce() -> Table,
    text: impl FnOnce() -> String,
) -> Result<()> {
    if out.json {
        print_json(&json())
    } else if out.csv {
        print_csv(&csv())
    } else {
        print!("{}", text());
        Ok(())
    }
}

/// One JSON document when `json`, else text; only the form asked for is made.
pub fn json_or_text<J: serde::Serialize>(
    json: bool,
    doc: impl FnOnce() -> J,
    text: impl FnOnce() -> String,
) -> Result<()> {
    if json {
        print_json(&doc())
    } else {
        print!("{}", text());
        Ok(())
    }
}

/// Prints a stored run (a scan in its own terms): text, JSON or CSV.
pub fn print_run(store: &Store, id: i64, samples: bool, out: &OutputArgs) -> Result<()> {
    let run = store
        .run(id, samples || out.json)?
        .ok_or_else(|| usage(store.no_run(id)))?;
    if let Some(report) = store.scan(id)? {
        return print_scan(&report, id, None, out);
    }
    emit(
        out,
        || storlab_report::bound::document(&run),
        || storlab_report::runs::data_tables(std::slice::from_ref(&run)).remove(0),
        || storlab_report::runs::render(&run),
    )
}

/// Prints a scan's report: text, JSON (streamed: a scan can have thousands of rows) or CSV.
pub fn print_scan(
    report: &Report,
    run_id: i64,
    growth: Option<&storlab_model::scan::Growth>,
    out: &OutputArgs,
) -> Result<()> {
    let partial = report.partial();
    emit(
        out,
        || storlab_report::scan::Document {
            run_id,
            partial,
            report,
            growth,
        },
        || storlab_report::scan::data_table(report, "scan"),
        || {
            storlab_report::scan::render(report, run_id)
                + &growth.map(storlab_report::scan::render_growth).unwrap_or_default()
        },
    )
}

/// Prints a stored study in its own terms, or as one JSON document.
pub fn print_study(store: &Store, id: i64, json: bool) -> Result<()> {
    let v = StudyView::load(store, id)?.ok_or_else(|| usage(store.no_study(id)))?;
    json_or_text(
        json,
        || storlab_report::studies::document(&v),
        || storlab_report::studies::render_text(&v),
    )
}

pub fn list(limit: usize, f: ListFilter, out: &OutputArgs) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let runs = store.find_runs(&f.runs(limit))?;
    let t = || storlab_report::runs::list_table(&runs);
    emit(out, || &runs, t, || t().to_text())?;
    if !out.json && !out.csv {
        eprintln!("{} run(s) in {}", runs.len(), store.target());
    }
    Ok(0)
}

pub fn show(id: i64, samples: bool, out: &OutputArgs) -> Result<u8> {
    print_run(&open_existing(&out.db)?, id, samples, out)?;
    Ok(0)
}

pub fn studies(out: &OutputArgs) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let list = store.study_list()?;
    let t = || storlab_report::runs::study_list_table(&list);
    emit(out, || &list, t, || t().to_text())?;
    if !out.json && !out.csv {
        eprintln!("{} study(ies) in {}", list.len(), store.target());
    }
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
        return Err(usage(format!("{}: no tag was set", store.no_run(id))));
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
        return Err(usage(format!("{}: no tag was removed", store.no_run(id))));
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
    let missing = store.runs_missing(ids)?;
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|i| i.to_string()).collect();
        return Err(usage(format!("{}: nothing was removed", store.no_run(list.join(", ")))));
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
    if let Some((o, terse)) = storlab_report::fio::FioJsonOptions::of_export(&a.what.format) {
        return export_fio(a, &o, terse);
    }
    let (file, ex) = (
        a.what.file.as_deref(),
        a.what.exporter(std::io::stdout().is_terminal()).map_err(usage)?,
    );
    let all = storlab_report::runs::export_tables(&open_existing(&a.db)?, &a.what.ids, !a.what.no_samples)?;
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

/// `results export --format fio-json|fio-json+|fio-terse`: the runs in fio's forms.
fn export_fio(a: &ExportArgs, o: &storlab_report::fio::FioJsonOptions, terse: bool) -> Result<u8> {
    let store = open_existing(&a.db)?;
    let runs = (a.what.ids.iter())
        .map(|id| {
            store
                .run(*id, true)?
                .ok_or_else(|| usage(format!("{}: nothing was exported", store.no_run(id))))
        })
        .collect::<Result<Vec<_>>>()?;
    let text = storlab_report::fio::export(&runs, o, terse)?;
    match a.what.file.as_deref() {
        Some(path) => {
            write_whole(path, |f| Ok(f.write_all(text.as_bytes())?))?;
            eprintln!(
                "storlab: wrote fio's JSON of {} run(s) to {}",
                runs.len(),
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(0)
}

pub fn import(a: &ImportArgs) -> Result<u8> {
    use storlab_import::record::{formats, store_pieces};
    let (file, out) = (&a.what.file, &a.output);
    if file.is_dir() {
        return import_dir(a);
    }
    let (origin, pieces) = a.what.parse_file().map_err(usage)?;
    let mut store = open_new(&out.db)?;
    let done = store_pieces(&mut store, &origin.path, &pieces)?;
    let ids = done.stored;
    if out.json {
        println!(
            "{}",
            serde_json::json!({ "imported": ids, "already_stored": done.already, "formats": formats(&pieces) })
        );
        return Ok(0);
    }
    let stored: Vec<_> = ids
        .iter()
        .filter_map(|id| store.run(*id, false).transpose())
        .collect::<Result<_, _>>()?;
    print!("{}", storlab_report::runs::imported_table(&stored).to_text());
    eprintln!(
        "storlab: imported {} run(s) from {} ({}) into {}{}",
        ids.len(),
        file.display(),
        formats(&pieces).join(", "),
        store.target(),
        storlab_import::record::skipped(&done.already)
    );
    Ok(0)
}

/// `storlab results import DIR`: every file below DIR (in name order), one transaction per
/// file, a line per file saying what became of it, and a summary. A file that does not read
/// is named with the reason and does not stop the others; the exit status is 1 when any file
/// was not imported.
fn import_dir(a: &ImportArgs) -> Result<u8> {
    use storlab_import::record::{files_below, import_listing};
    let (dir, out) = (&a.what.file, &a.output);
    let listing = files_below(dir).map_err(usage)?;
    let mut store = open_new(&out.db)?;
    let done = import_listing(
        &mut store,
        &listing,
        a.what.host.clone(),
        &a.what.tags,
        a.what.date.as_deref(),
        |path, o| {
            if !out.json {
                println!("{}", o.line(path));
            }
        },
    )?;
    if out.json {
        println!("{}", done.document());
    } else {
        for (path, why) in &listing.unreadable {
            println!("{path}: not imported: {why}");
        }
        eprintln!("{}", done.summary(dir, &store.target().to_string()));
    }
    Ok(if done.failed() > 0 { 1 } else { 0 })
}

pub fn compare(a: &CompareArgs) -> Result<u8> {
    let (specs, out) = (&a.groups.groups, &a.output);
    if specs.len() < 2 {
        return Err(usage("compare needs at least two groups, e.g. `storlab results compare fs=ext2 fs=ext3` or `storlab results compare 3,4,5 6,7,8`"));
    }
    let report = compare_stored(&open_existing(&out.db)?, specs, a.groups.allow_different)?;
    json_or_text(out.json, || &report, || storlab_report::compare::render_text(&report))?;
    Ok(0)
}
