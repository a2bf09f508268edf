//! `storlab results tag | untag | rm | compare`: the database's runs, grouped and compared.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use storlab_store::{RunDetail, RunFilter, Store};

use crate::cli::OutputArgs;
use crate::output::{open_store, table, write_whole, WriteWhole};

/// A request the user can fix (unknown run, empty group, runs that cannot be compared): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ResultsUsage(pub String);

fn usage(msg: impl Into<String>) -> anyhow::Error {
    ResultsUsage(msg.into()).into()
}

/// A destination that cannot be written is the user's to fix (exit 2); a failure to produce
/// the content is not.
fn whole_err(e: WriteWhole) -> anyhow::Error {
    match e {
        WriteWhole::Place(m) => usage(m),
        WriteWhole::Fill(e) => e,
    }
}

pub fn tag(id: i64, tags: &[(String, String)], out: &OutputArgs) -> Result<u8> {
    let mut store = open_store(out)?;
    if !store.tag(id, tags)? {
        return Err(usage(format!("no run {id} in {}", store.path().display())));
    }
    if out.json {
        println!(
            "{}",
            serde_json::json!({ "run": id, "tags": store.run(id, false)?.map(|r| r.run.tags) })
        );
    } else {
        eprintln!("run {id}: tagged {}", pairs(tags));
    }
    Ok(0)
}

pub fn study(id: i64, out: &OutputArgs) -> Result<u8> {
    let store = open_store(out)?;
    let (kind, params, members) = store
        .study(id)?
        .ok_or_else(|| usage(format!("no study {id} in {}", store.path().display())))?;
    let events = store.study_events(id)?;
    let samples = store.task_samples(id)?;
    if out.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "study": id,
                "kind": kind,
                "params": params,
                "members": members.iter().map(|(r, role)| serde_json::json!({"run_id": r, "role": role})).collect::<Vec<_>>(),
                "events": events,
                "task_samples": samples,
            }))?
        );
        return Ok(0);
    }
    println!("study {id}: {kind}");
    if let Some(c) = params["command"].as_str() {
        println!("command: {c}");
    }
    println!("runs:");
    for (r, role) in &members {
        println!("  {r:>6}  {role}");
    }
    if !events.is_empty() {
        println!("events:");
        for e in &events {
            println!(
                "  {:>8.1} s  {}  {:<22} {}{}",
                e.t,
                e.at,
                e.kind,
                e.detail,
                e.run_id.map(|r| format!(" [run {r}]")).unwrap_or_default()
            );
        }
    }
    if !samples.is_empty() {
        println!("task progress ({} looks):", samples.len());
        let step = (samples.len() / 20).max(1);
        for s in samples.iter().step_by(step).chain(samples.last()) {
            println!(
                "  {:>8.1} s  task {}  {:<8} {}",
                s.t,
                s.task + 1,
                s.state,
                s.percent.map(|p| format!("{p:.1} %")).unwrap_or_default()
            );
        }
    }
    Ok(0)
}

pub fn untag(id: i64, keys: &[String], out: &OutputArgs) -> Result<u8> {
    let mut store = open_store(out)?;
    if store.run(id, false)?.is_none() {
        return Err(usage(format!("no run {id} in {}", store.path().display())));
    }
    let n = store.untag(id, keys)?;
    if out.json {
        println!("{}", serde_json::json!({ "run": id, "removed": n }));
    } else {
        eprintln!("run {id}: removed {n} tag(s)");
    }
    Ok(0)
}

pub fn rm(ids: &[i64], yes: bool, out: &OutputArgs) -> Result<u8> {
    let mut store = open_store(out)?;
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
            store.path().display()
        )));
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Err(usage(format!(
                "removing {} run(s) needs confirmation: give --yes (standard input is not a terminal)",
                ids.len()
            )));
        }
        eprint!(
            "remove run(s) {} and everything stored with them? [y/N] ",
            ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
        );
        std::io::stderr().flush().ok();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
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

pub fn export(
    ids: &[i64],
    format: &str,
    file: Option<&std::path::Path>,
    samples: bool,
    db: Option<std::path::PathBuf>,
) -> Result<u8> {
    use storlab_report::export::{exporter, FORMATS};
    use storlab_report::table::{run_tables, Cell, Table};
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
    let out = OutputArgs {
        db,
        json: false,
        csv: false,
    };
    let store = open_store(&out)?;
    let mut runs = Vec::new();
    let mut tables: Vec<Table> = Vec::new();
    for id in ids {
        let run = store.run(*id, samples)?.ok_or_else(|| {
            usage(format!(
                "no run {id} in {}: nothing was exported",
                store.path().display()
            ))
        })?;
        if let Some(report) = crate::scan::stored_report(&store, *id)? {
            let rows = crate::scan::csv_rows(&report);
            let mut t = Table {
                name: format!("scan {id}"),
                headers: rows[0].clone(),
                rows: Vec::new(),
            };
            for r in &rows[1..] {
                t.rows.push(
                    r.iter()
                        .map(|c| match (c.parse::<i64>(), c.parse::<f64>()) {
                            (Ok(i), _) => Cell::Int(i),
                            (_, Ok(f)) => Cell::Num(f),
                            _ => Cell::Text(c.clone()),
                        })
                        .collect(),
                );
            }
            tables.push(t);
        }
        runs.push(run);
    }
    let mut all = run_tables(&runs);
    if !tables.is_empty() {
        all.retain(|t| t.name != "phases" || !t.rows.is_empty());
        all.extend(tables);
    }
    match file {
        Some(path) => {
            write_whole(path, |f| Ok(ex.export(&all, f)?)).map_err(whole_err)?;
            eprintln!("storlab: wrote {} table(s) to {}", all.len(), path.display());
        }
        None => {
            let stdout = std::io::stdout();
            let mut lock = std::io::BufWriter::new(stdout.lock());
            ex.export(&all, &mut lock)?;
            lock.flush()?;
        }
    }
    Ok(0)
}

pub fn report(args: crate::cli::ReportArgs) -> Result<u8> {
    use storlab_report::html::{render, HtmlOptions, RunSection};
    if args.ids.is_empty() && args.compare.is_empty() && args.studies.is_empty() {
        return Err(usage(
            "nothing to report: give run ids, --compare GROUP --compare GROUP, or --study ID",
        ));
    }
    if args.compare.len() == 1 {
        return Err(usage("--compare needs at least two groups (the first is the baseline)"));
    }
    let out = OutputArgs {
        db: args.db.clone(),
        json: false,
        csv: false,
    };
    let store = open_store(&out)?;
    let mut order: Vec<i64> = args.ids.clone();
    let comparison = if args.compare.len() >= 2 {
        let specs: Vec<GroupSpec> = args
            .compare
            .iter()
            .map(|g| GroupSpec::parse(g).map_err(usage))
            .collect::<Result<_>>()?;
        let mut members = Vec::new();
        for s in &specs {
            let runs = s.runs(&store)?;
            order.extend(runs.iter().map(|r| r.run.id));
            members.push(runs);
        }
        let labels: Vec<String> = specs.iter().map(GroupSpec::label).collect();
        let c = storlab_report::compare::compare_groups(&labels, &members);
        if !c.differences.is_empty() && !args.allow_different {
            return Err(usage(format!(
                "these runs did not run the same workload, so their figures do not compare:\n  {}\n(give --allow-different to compare them anyway)",
                c.differences.join("\n  ")
            )));
        }
        Some(c)
    } else {
        None
    };
    let mut seen = std::collections::HashSet::new();
    order.retain(|id| seen.insert(*id));
    let mut sections = Vec::new();
    for id in order {
        let run = store.run(id, true)?.ok_or_else(|| {
            usage(format!(
                "no run {id} in {}: no report was written",
                store.path().display()
            ))
        })?;
        let mut extra = Vec::new();
        if let Some(rep) = crate::scan::stored_report(&store, id)? {
            let rows = crate::scan::csv_rows(&rep);
            extra.push(storlab_report::table::Table {
                name: "scan".into(),
                headers: rows[0].clone(),
                rows: rows[1..]
                    .iter()
                    .map(|r| r.iter().map(|c| storlab_report::table::Cell::Text(c.clone())).collect())
                    .collect(),
            });
        }
        sections.push(RunSection { run, extra });
    }
    let mut studies = Vec::new();
    for sid in &args.studies {
        let (kind, params, members) = store.study(*sid)?.ok_or_else(|| {
            usage(format!(
                "no study {sid} in {}: no report was written",
                store.path().display()
            ))
        })?;
        let mut runs = Vec::new();
        for (id, role) in members {
            if let Some(r) = store.run(id, false)? {
                runs.push((role, r));
            }
        }
        let extra = crate::impact::report_html(&store, *sid, &kind, &params, &runs)?;
        studies.push(storlab_report::html::StudySection {
            id: *sid,
            kind,
            params,
            members: runs,
            extra,
        });
    }
    let html = render(
        &sections,
        comparison.as_ref(),
        &studies,
        &HtmlOptions {
            free_scales: args.free_scales,
        },
    );
    let path = &args.file;
    write_whole(path, |f| Ok(f.write_all(html.as_bytes())?)).map_err(whole_err)?;
    eprintln!(
        "storlab: wrote {} ({:.1} KiB, {} run(s){})",
        path.display(),
        html.len() as f64 / 1024.0,
        sections.len(),
        if comparison.is_some() {
            ", with the comparison"
        } else if !studies.is_empty() {
            ", with the studies"
        } else {
            ""
        }
    );
    Ok(0)
}

pub fn import(file: &std::path::Path, host: Option<String>, tags: &[(String, String)], out: &OutputArgs) -> Result<u8> {
    let text = std::fs::read_to_string(file).map_err(|e| usage(format!("cannot read {}: {e}", file.display())))?;
    let name = file.display().to_string();
    let is_iozone = storlab_report::iozone::looks_like_iozone(&text);
    let runs = if is_iozone {
        let host = host.unwrap_or_else(|| "unknown (IOzone import)".into());
        storlab_report::iozone::parse(&name, &text, &host, tags).map_err(|e| usage(e.to_string()))?
    } else {
        let host = host.unwrap_or_else(|| "unknown (fio import)".into());
        storlab_report::fio::parse(&name, &text, &host, tags).map_err(|e| usage(e.to_string()))?
    };
    let db = crate::runner::db_path(out);
    let mut store = Store::open(&db, &storlab_env::capture(&[]).host)?;
    let ids = store.import_runs(&runs)?;
    // The cells of an imported IOzone matrix belong together.
    if is_iozone && ids.len() > 1 {
        let members: Vec<(i64, String)> = ids
            .iter()
            .zip(&runs)
            .map(|(id, r)| (*id, r.run.job_name.clone().unwrap_or_default()))
            .collect();
        store.save_study(
            "iozone-import",
            &serde_json::json!({ "imported_from": name }),
            &members,
            &[],
            &[],
        )?;
    }
    if out.json {
        println!("{}", serde_json::json!({ "imported": ids }));
    } else {
        let mut rows = vec![vec![
            "run".to_string(),
            "host".into(),
            "job".into(),
            "rw".into(),
            "MiB/s".into(),
            "IOPS".into(),
            "lat p99".into(),
        ]];
        for (id, r) in ids.iter().zip(&runs) {
            let p = &r.phases[0];
            rows.push(vec![
                id.to_string(),
                r.run.host.clone(),
                r.run.job_name.clone().unwrap_or_default(),
                p.kind.clone(),
                format!("{:.2}", p.bytes_per_sec / (1u64 << 20) as f64),
                format!("{:.0}", p.iops),
                if p.lat_p99_ns == 0 {
                    "-".into()
                } else {
                    format!("{:.1} µs", p.lat_p99_ns as f64 / 1e3)
                },
            ]);
        }
        print!("{}", table(&rows));
        eprintln!(
            "storlab: imported {} run(s) from {} into {}",
            ids.len(),
            file.display(),
            db.display()
        );
    }
    Ok(0)
}

fn pairs(tags: &[(String, String)]) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A group of runs named on the command line: "3,4,5" (run ids, ranges such as 3-5 allowed) or
/// "fs=ext2[,host=eastwood]" (tags; `host`, `kind` and `job` also match the run's own fields).
#[derive(Debug, Clone, PartialEq)]
pub enum GroupSpec {
    Ids(Vec<i64>),
    Filter(Vec<(String, String)>),
}

impl GroupSpec {
    pub fn parse(s: &str) -> Result<GroupSpec, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("an empty group: give run ids (3,4,5 or 3-5) or tags (fs=ext2)".into());
        }
        if s.contains('=') {
            let mut f = Vec::new();
            for part in s.split(',') {
                match part.split_once('=') {
                    Some((k, v)) if !k.trim().is_empty() => f.push((k.trim().to_string(), v.trim().to_string())),
                    _ => return Err(format!("'{part}' in group '{s}' is not KEY=VALUE")),
                }
            }
            return Ok(GroupSpec::Filter(f));
        }
        let mut ids = Vec::new();
        for part in s.split(',') {
            let bad = || format!("'{part}' in group '{s}' is not a run id or a range such as 3-5");
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (i64, i64) = (
                        a.trim().parse().map_err(|_| bad())?,
                        b.trim().parse().map_err(|_| bad())?,
                    );
                    if a > b || b - a > 100_000 {
                        return Err(bad());
                    }
                    ids.extend(a..=b);
                }
                None => ids.push(part.trim().parse().map_err(|_| bad())?),
            }
        }
        Ok(GroupSpec::Ids(ids))
    }

    fn label(&self) -> String {
        match self {
            GroupSpec::Ids(ids) => format!(
                "runs {}",
                ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            ),
            GroupSpec::Filter(f) => pairs(f),
        }
    }

    /// The runs of this group, oldest first.
    fn runs(&self, store: &Store) -> Result<Vec<RunDetail>> {
        let ids: Vec<i64> = match self {
            GroupSpec::Ids(ids) => {
                for id in ids {
                    if store.run(*id, false)?.is_none() {
                        return Err(usage(format!("no run {id} in {}", store.path().display())));
                    }
                }
                ids.clone()
            }
            GroupSpec::Filter(f) => {
                let mut filter = RunFilter::default();
                for (k, v) in f {
                    match k.as_str() {
                        "host" => filter.host = Some(v.clone()),
                        "kind" => filter.kind = Some(v.clone()),
                        "job" => filter.job = Some(v.clone()),
                        _ => filter.tags.push((k.clone(), v.clone())),
                    }
                }
                let mut found: Vec<i64> = store.find_runs(&filter)?.iter().map(|r| r.id).collect();
                // host=... also matches a tag named host, for runs tagged by hand.
                if let Some(h) = &filter.host {
                    let mut by_tag = filter.clone();
                    by_tag.host = None;
                    by_tag.tags.push(("host".into(), h.clone()));
                    found.extend(store.find_runs(&by_tag)?.iter().map(|r| r.id));
                }
                found.sort_unstable();
                found.dedup();
                if found.is_empty() {
                    return Err(usage(format!(
                        "no run matches {}: `storlab results list --tag KEY=VALUE` shows what does",
                        self.label()
                    )));
                }
                found
            }
        };
        let mut runs = Vec::new();
        for id in ids {
            runs.push(store.run(id, false)?.expect("listed runs exist"));
        }
        Ok(runs)
    }
}

pub fn compare_cmd(groups: &[String], allow_different: bool, out: &OutputArgs) -> Result<u8> {
    if groups.len() < 2 {
        return Err(usage("compare needs at least two groups, e.g. `storlab results compare fs=ext2 fs=ext3` or `storlab results compare 3,4,5 6,7,8`"));
    }
    let store = open_store(out)?;
    let specs: Vec<GroupSpec> = groups
        .iter()
        .map(|g| GroupSpec::parse(g).map_err(usage))
        .collect::<Result<_>>()?;
    let mut members: Vec<Vec<RunDetail>> = Vec::new();
    for s in &specs {
        members.push(s.runs(&store)?);
    }
    let labels: Vec<String> = specs.iter().map(GroupSpec::label).collect();
    let report = storlab_report::compare::compare_groups(&labels, &members);
    if !report.differences.is_empty() && !allow_different {
        return Err(usage(format!(
            "these runs did not run the same workload, so their figures do not compare:\n  {}\n(give --allow-different to compare them anyway; the differences are then printed with the result)",
            report.differences.join("\n  ")
        )));
    }
    if out.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", storlab_report::compare::render_text(&report));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_parse() {
        assert_eq!(GroupSpec::parse("3,4,5"), Ok(GroupSpec::Ids(vec![3, 4, 5])));
        assert_eq!(GroupSpec::parse("3-5,9"), Ok(GroupSpec::Ids(vec![3, 4, 5, 9])));
        assert_eq!(
            GroupSpec::parse("fs=ext2,host=a"),
            Ok(GroupSpec::Filter(vec![
                ("fs".into(), "ext2".into()),
                ("host".into(), "a".into())
            ]))
        );
        assert!(GroupSpec::parse("3,x").unwrap_err().contains("'x'"));
        assert!(GroupSpec::parse("5-3").is_err());
        assert!(GroupSpec::parse("fs=ext2,oops").unwrap_err().contains("KEY=VALUE"));
    }
}
