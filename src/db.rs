//! `storlab db migrate | info | copy`: the results database itself.

use std::io::IsTerminal;

use anyhow::Result;
use storlab_store::{spool_files, DbTarget, Store};

use crate::cli::DbArgs;
use crate::results::{open_existing, open_new, print_json};
use crate::usage;

/// `storlab db migrate`: opening migrates; this says what it did.
pub fn migrate(db: &DbArgs, json: bool) -> Result<u8> {
    let store = open_new(db)?;
    let (found, now) = (store.found_version(), Store::known_version());
    if json {
        print_json(&serde_json::json!({
            "database": store.target().to_string(),
            "found_version": found,
            "schema_version": now,
        }))?;
    } else if found == now {
        println!("{}: schema version {now}, current", store.target());
    } else {
        println!("{}: schema version {found} → {now}", store.target());
    }
    Ok(0)
}

/// `storlab db info`.
pub fn info(db: &DbArgs, json: bool) -> Result<u8> {
    let store = open_existing(db)?;
    let (runs, studies) = store.counts()?;
    let spooled: Vec<String> = spool_files().iter().map(|p| p.display().to_string()).collect();
    if json {
        print_json(&serde_json::json!({
            "database": store.target().to_string(),
            "schema_version": Store::known_version(),
            "runs": runs,
            "studies": studies,
            "spool_files": spooled,
        }))?;
        return Ok(0);
    }
    let kind = match store.target() {
        DbTarget::Sqlite(_) => "SQLite",
        DbTarget::Postgres(_) => "PostgreSQL",
    };
    println!("database        {} ({kind})", store.target());
    println!("schema version  {}", Store::known_version());
    println!("runs            {runs}");
    println!("studies         {studies}");
    for f in &spooled {
        println!("spool file      {f} (copy it in: storlab db copy --from {f} --to DATABASE)");
    }
    Ok(0)
}

/// `storlab db copy --from A --to B`.
pub fn copy(from: &str, to: &str, json: bool) -> Result<u8> {
    let source = DbTarget::parse(from).map_err(|e| usage(format!("--from: {e}")))?;
    let dest = DbTarget::parse(to).map_err(|e| usage(format!("--to: {e}")))?;
    if source == dest {
        return Err(usage(format!("--from and --to are the same database ({source})")));
    }
    let from_store = open_existing(&DbArgs { db: Some(from.into()) })?;
    let to_store = open_new(&DbArgs { db: Some(to.into()) })?;
    let watching = std::io::stderr().is_terminal() && !json;
    let report = from_store.copy_into(&to_store, |done, all| {
        if watching && (done % 100 == 0 || done == all) {
            eprint!("\rstorlab: {done}/{all} runs");
        }
    })?;
    if watching {
        eprintln!();
    }
    if json {
        print_json(&report)?;
    } else {
        println!(
            "{} → {}: {} run(s) copied, {} unfinished run(s) replaced by their finished copy, {} already there; \
             {} study(ies) copied, {} already there",
            from_store.target(),
            to_store.target(),
            report.runs_copied,
            report.runs_replaced,
            report.runs_skipped,
            report.studies_copied,
            report.studies_skipped
        );
    }
    Ok(0)
}
