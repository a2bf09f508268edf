//! `storlab db migrate | info | check | copy`: the results database itself.

use std::io::IsTerminal;

use anyhow::Result;
use storlab_store::{spool_files, DbTarget, Store};

use crate::cli::DbArgs;
use crate::results::{json_or_text, open_existing, open_new};
use crate::usage;

/// `storlab db migrate`: opening migrates; this says what it did.
pub fn migrate(db: &DbArgs, json: bool) -> Result<u8> {
    let store = open_new(db)?;
    let (found, now) = (store.found_version(), Store::known_version());
    let doc =
        || serde_json::json!({ "database": store.target().to_string(), "found_version": found, "schema_version": now });
    let change = if found == now {
        format!("{now}, current")
    } else {
        format!("{found} → {now}")
    };
    json_or_text(json, doc, || format!("{}: schema version {change}\n", store.target()))?;
    Ok(0)
}

/// `storlab db info`.
pub fn info(db: &DbArgs, json: bool) -> Result<u8> {
    let store = open_existing(db)?;
    let (runs, studies) = store.counts()?;
    let spooled: Vec<String> = spool_files().iter().map(|p| p.display().to_string()).collect();
    let (target, version) = (store.target(), Store::known_version());
    let doc = || serde_json::json!({ "database": target.to_string(), "schema_version": version, "runs": runs, "studies": studies, "spool_files": spooled });
    let text = || {
        let kind = match target {
            DbTarget::Sqlite(_) => "SQLite",
            DbTarget::Postgres(_) => "PostgreSQL",
        };
        let mut t = format!("database        {target} ({kind})\nschema version  {version}\nruns            {runs}\nstudies         {studies}\n");
        for f in &spooled {
            t += &format!("spool file      {f} (copy it in: storlab db copy --from {f} --to DATABASE)\n");
        }
        t
    };
    json_or_text(json, doc, text)?;
    Ok(0)
}

/// `storlab db copy --from A --to B`.
pub fn copy(from: &str, to: &str, json: bool) -> Result<u8> {
    let source = DbTarget::parse(from).map_err(|e| usage(format!("--from: {e}")))?;
    let dest = DbTarget::parse(to).map_err(|e| usage(format!("--to: {e}")))?;
    if source == dest {
        return Err(usage(format!("--from and --to are the same database ({source})")));
    }
    let from_store = match source.file().filter(|f| f.extension().is_some_and(|x| x == "json")) {
        Some(json) => Store::open_unstored(json).map_err(|e| usage(e.to_string()))?,
        None => open_existing(&DbArgs { db: Some(from.into()) })?,
    };
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
    let text = || format!("{}\n", report.summary(&from_store.target(), &to_store.target()));
    json_or_text(json, || &report, text)?;
    Ok(0)
}

/// `storlab db check`: a SQLite file's soundness, table by table; exit 1 when it is damaged.
pub fn check(db: &DbArgs, json: bool) -> Result<u8> {
    let target = DbTarget::named(db.db.as_deref(), dirs::data_dir()).map_err(usage)?;
    let Some(path) = target.file() else {
        return Err(usage(format!(
            "{target} is a PostgreSQL server, which checks its own consistency; `db check` reads SQLite files"
        )));
    };
    let found = storlab_store::check_file(path).map_err(|e| usage(e.to_string()))?;
    let text = || {
        let mut t = format!(
            "file       {}\nintegrity  {}\n",
            found.path,
            found.integrity.join("\n           ")
        );
        for table in &found.tables {
            let state = match &table.error {
                None => format!("{} row(s), all readable", table.rows_read),
                Some(e) => format!("DAMAGED after {} row(s): {e}", table.rows_read),
            };
            t += &format!("table      {:<24} {state}\n", table.name);
        }
        for u in &found.unreadable {
            t += &format!("UNREADABLE {:<24} {}\n", u.what, u.why);
        }
        let pages_whole = found.integrity == ["ok"] && found.tables.iter().all(|t| t.error.is_none());
        t += &if found.sound() {
            "the file is sound\n".to_string()
        } else if pages_whole {
            format!(
                "{} of the file's runs or studies do not read as one (no command can show, export or compare them). Copy every other into a new file with\n  storlab db copy --from {} --to NEW.db\n",
                found.unreadable.len(),
                found.path
            )
        } else {
            format!(
                "the file is damaged: storlab writes nothing into it. Copy what reads into a new file with\n  storlab db copy --from {} --to NEW.db\n",
                found.path
            )
        };
        t
    };
    json_or_text(
        json,
        || serde_json::json!({ "sound": found.sound(), "check": &found }),
        text,
    )?;
    Ok(if found.sound() { 0 } else { 1 })
}
