//! Printing runs: a terminal table with units on every figure, one JSON document, or CSV.
//! `storlab run` and `storlab results show` print through the same functions, from what was
//! stored, so a run looks the same the day it ran and a year later.

use anyhow::{Context, Result};
use serde_json::Value;
use storlab_store::{RunDetail, Store};
use storlab_units::{latency, Size};

use crate::cli::OutputArgs;
use crate::runner::db_path;

pub(crate) fn open_store(out: &OutputArgs) -> Result<Store> {
    let db = db_path(out);
    if !db.exists() {
        anyhow::bail!(
            "no results database at {}: run `storlab demo` or `storlab run` first, or give --db PATH",
            db.display()
        );
    }
    let host = storlab_env::capture(&[]).host;
    Ok(Store::open(&db, &host)?)
}

pub fn results_list(limit: usize, filter: &crate::cli::ListFilter, out: &OutputArgs) -> Result<u8> {
    let store = open_store(out)?;
    let runs = store.find_runs(&storlab_store::RunFilter {
        ids: Vec::new(),
        host: filter.host.clone(),
        kind: filter.kind.clone(),
        job: filter.job.clone(),
        since: filter.since.clone(),
        until: filter.until.clone(),
        tags: filter.tags.clone(),
        limit: Some(limit),
    })?;
    if out.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(0);
    }
    let mut rows = vec![vec![
        "id".to_string(),
        "started (UTC)".into(),
        "host".into(),
        "kind".into(),
        "job".into(),
        "phases".into(),
        "status".into(),
        "tags".into(),
    ]];
    for r in &runs {
        let mut status = r.status.clone();
        if r.cache_flattered {
            status += " (cache?)";
        }
        rows.push(vec![
            r.id.to_string(),
            r.started_at.clone(),
            r.host.clone(),
            r.kind.clone(),
            r.job_name.clone().unwrap_or_default(),
            r.phases.to_string(),
            status,
            r.tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    if out.csv {
        print!("{}", csv(&rows));
    } else {
        print!("{}", table(&rows));
        eprintln!("{} run(s) in {}", runs.len(), store.path().display());
    }
    Ok(0)
}

pub fn results_show(id: i64, samples: bool, out: &OutputArgs) -> Result<u8> {
    let store = open_store(out)?;
    let run = store.run(id, samples)?.with_context(|| {
        format!(
            "no run {id} in {}: `storlab results list` shows the runs there",
            store.path().display()
        )
    })?;
    if let Some(report) = crate::scan::stored_report(&store, id)? {
        crate::scan::print_report(&report, id, out)?;
        return Ok(0);
    }
    print_run(&run, out)?;
    Ok(0)
}

pub fn print_run(run: &RunDetail, out: &OutputArgs) -> Result<()> {
    if out.json {
        println!("{}", serde_json::to_string_pretty(run)?);
    } else if out.csv {
        print!("{}", csv(&phase_rows(run, true)));
    } else {
        print!("{}", render(run));
    }
    Ok(())
}

fn bs_text(params: &Value) -> String {
    match params.get("bs") {
        Some(Value::Object(o)) if o.contains_key("fixed") => Size(o["fixed"].as_u64().unwrap_or(0)).to_string(),
        Some(Value::Object(o)) if o.contains_key("mix") => o["mix"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|p| format!("{}:{}", Size(p[0].as_u64().unwrap_or(0)), p[1]))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn mib(bps: f64) -> String {
    format!("{:.2}", bps / Size::MIB as f64)
}

/// One row per phase; `raw` gives plain numbers (CSV), else formatted figures.
fn phase_rows(run: &RunDetail, raw: bool) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    if raw {
        rows.push(
            [
                "run_id",
                "seq",
                "phase",
                "bs",
                "workers",
                "engine",
                "iodepth",
                "direct",
                "bytes_read",
                "bytes_written",
                "seconds",
                "MiB_per_s",
                "IOPS",
                "first_done_MiB_per_s",
                "worker_min_MiB_per_s",
                "worker_max_MiB_per_s",
                "lat_min_us",
                "lat_mean_us",
                "lat_p50_us",
                "lat_p90_us",
                "lat_p99_us",
                "lat_p99_9_us",
                "lat_p99_99_us",
                "lat_max_us",
                "cpu_user_s",
                "cpu_sys_s",
                "cache_flattered",
                "verify_bad_blocks",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        );
    } else {
        rows.push(
            [
                "phase",
                "bs",
                "MiB/s",
                "IOPS",
                "first done MiB/s",
                "worker min–max MiB/s",
                "lat p50",
                "p99",
                "p99.9",
                "max",
                "CPU usr/sys",
                "notes",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        );
    }
    for p in &run.phases {
        let workers = p
            .params
            .get("workers")
            .and_then(|w| w.as_array())
            .map(|w| w.len())
            .unwrap_or(0);
        let us = |ns: f64| format!("{:.3}", ns / 1e3);
        if raw {
            rows.push(vec![
                run.run.id.to_string(),
                p.seq.to_string(),
                p.kind.clone(),
                bs_text(&p.params),
                workers.to_string(),
                p.params
                    .get("backend")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string(),
                p.params.get("iodepth").map(|v| v.to_string()).unwrap_or_default(),
                p.params.get("direct").map(|v| v.to_string()).unwrap_or_default(),
                p.bytes_read.to_string(),
                p.bytes_written.to_string(),
                format!("{:.6}", p.seconds),
                mib(p.bytes_per_sec),
                format!("{:.1}", p.iops),
                mib(p.first_done_bytes_per_sec),
                mib(p.worker_min_bytes_per_sec),
                mib(p.worker_max_bytes_per_sec),
                us(p.lat_min_ns as f64),
                us(p.lat_mean_ns),
                us(p.lat_p50_ns as f64),
                us(p.lat_p90_ns as f64),
                us(p.lat_p99_ns as f64),
                us(p.lat_p99_9_ns as f64),
                us(p.lat_p99_99_ns as f64),
                us(p.lat_max_ns as f64),
                format!("{:.3}", p.cpu_user),
                format!("{:.3}", p.cpu_sys),
                p.cache_flattered.to_string(),
                p.verify_bad_blocks.map(|v| v.to_string()).unwrap_or_default(),
            ]);
            continue;
        }
        let mut notes = Vec::new();
        if p.cache_flattered {
            notes.push("cache?".to_string());
        }
        if let Some(rate) = p.result.get("rate").filter(|r| !r.is_null()) {
            let target = rate["target"].as_f64().unwrap_or(0.0);
            let achieved = rate["achieved"].as_f64().unwrap_or(0.0);
            let unit = rate["unit"].as_str().unwrap_or("");
            let (t, a) = if unit == "iops" {
                (format!("{target:.0} IOPS"), format!("{achieved:.0}"))
            } else {
                (format!("{} MiB/s", mib(target)), mib(achieved))
            };
            notes.push(format!("rate {a} of {t}, {} late", rate["late_ios"]));
        }
        if let Some(b) = p.verify_bad_blocks {
            notes.push(if b == 0 {
                "verified".into()
            } else {
                format!("{b} BAD BLOCKS")
            });
        }
        rows.push(vec![
            p.kind.clone(),
            bs_text(&p.params),
            mib(p.bytes_per_sec),
            format!("{:.0}", p.iops),
            mib(p.first_done_bytes_per_sec),
            format!(
                "{}–{}",
                mib(p.worker_min_bytes_per_sec),
                mib(p.worker_max_bytes_per_sec)
            ),
            latency(p.lat_p50_ns as f64),
            latency(p.lat_p99_ns as f64),
            latency(p.lat_p99_9_ns as f64),
            latency(p.lat_max_ns as f64),
            format!("{:.2}/{:.2} s", p.cpu_user, p.cpu_sys),
            notes.join("; "),
        ]);
    }
    rows
}

fn render(run: &RunDetail) -> String {
    let r = &run.run;
    let mut s = String::new();
    s += &format!(
        "run {} · {} · job {} · status {} · host {} · started {}\n",
        r.id,
        r.kind,
        r.job_name.as_deref().unwrap_or("-"),
        r.status,
        r.host,
        r.started_at
    );
    if let Some(d) = &r.status_detail {
        s += &format!("  {d}\n");
    }
    let env = &run.environment;
    if let Some(targets) = env.get("targets").and_then(|t| t.as_array()) {
        for t in targets {
            let g = |k: &str| t.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let mut line = format!("target {}: {}", g("path"), g("fs_type"));
            if let Some(d) = t.get("device").and_then(|v| v.as_str()) {
                line += &format!(" on {d}");
                if let Some(m) = t.get("model").and_then(|v| v.as_str()) {
                    line += &format!(" ({m})");
                }
            }
            if let Some(sch) = t.get("scheduler").and_then(|v| v.as_str()) {
                line += &format!(", scheduler {sch}");
            }
            if let Some(raid) = t.get("raid").and_then(|v| v.as_str()) {
                line += &format!(", {raid}");
            }
            line += &format!(", mounted {} ({})", g("mount_point"), g("mount_options"));
            s += &line;
            s += "\n";
        }
    }
    if r.imported {
        s += &format!(
            "imported: {}\n",
            run.environment
                .get("source")
                .and_then(|v| v.as_str())
                .unwrap_or("from another tool")
        );
    } else if let Some(first) = run.phases.first() {
        let p = &first.params;
        let workers = p
            .get("workers")
            .and_then(|w| w.as_array())
            .map(|w| w.len())
            .unwrap_or(0);
        let set: u64 = p
            .get("workers")
            .and_then(|w| w.as_array())
            .map(|w| w.iter().map(|x| x["len"].as_u64().unwrap_or(0)).sum())
            .unwrap_or(0);
        s += &format!(
            "{} worker(s) · file set {} · engine {} · iodepth {} · {}{}\n",
            workers,
            Size(set).human(),
            p.get("backend").and_then(|v| v.as_str()).unwrap_or("?"),
            p.get("iodepth").map(|v| v.to_string()).unwrap_or_default(),
            if p.get("direct").and_then(|v| v.as_bool()).unwrap_or(false) {
                "O_DIRECT"
            } else {
                "buffered"
            },
            env.get("memory_bytes")
                .and_then(|m| m.as_u64())
                .map(|m| format!(" · RAM {}", Size(m).human()))
                .unwrap_or_default(),
        );
    }
    s += "\n";
    s += &table(&phase_rows(run, false));
    let flattered: Vec<&str> = run
        .phases
        .iter()
        .filter(|p| p.cache_flattered)
        .map(|p| p.kind.as_str())
        .collect();
    if !flattered.is_empty() {
        s += &format!(
            "\ncache?: the file set is smaller than 3 × RAM and {} ran without O_DIRECT (or, for writes, without a flush): the page cache may have flattered these figures.\n",
            flattered.join(", ")
        );
    }
    for p in &run.phases {
        let Some(v) = p.result.get("verify").filter(|v| !v.is_null()) else {
            continue;
        };
        let bad = v["bad_blocks"].as_u64().unwrap_or(0);
        if bad == 0 {
            continue;
        }
        s += &format!(
            "\nphase {} ({}): {} bad block(s) of {} checked:\n",
            p.seq + 1,
            p.kind,
            bad,
            v["blocks_checked"]
        );
        let list = v["bad"].as_array().cloned().unwrap_or_default();
        for b in list.iter().take(20) {
            let reason: storlab_engine::data::BadReason =
                serde_json::from_value(b["reason"].clone()).unwrap_or(storlab_engine::data::BadReason::NoHeader);
            s += &format!(
                "  {} offset {}: {}\n",
                b["file"].as_str().unwrap_or(""),
                b["offset"],
                reason
            );
        }
        if bad > 20 {
            s += &format!(
                "  ... and {} more (all listed in --json, up to 1000 per worker)\n",
                bad - 20
            );
        }
    }
    for e in run
        .events
        .iter()
        .filter(|e| e.kind == "interrupted" || e.kind == "phase-failed")
    {
        s += &format!("\n{}: {}\n", e.kind, e.detail);
    }
    s
}

/// Left-aligned text columns, right-aligned figures.
/// A text table (numbers right-aligned); the one renderer the terminal output shares.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    storlab_report::text_table(rows)
}

pub(crate) fn csv(rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .map(|c| {
                if c.contains(',') || c.contains('"') || c.contains('\n') {
                    format!("\"{}\"", c.replace('"', "\"\""))
                } else {
                    c.clone()
                }
            })
            .collect();
        s += &cells.join(",");
        s += "\n";
    }
    s
}

/// Why `write_whole` could not write.
#[derive(Debug)]
pub(crate) enum WriteWhole {
    /// The destination: its directory or the file itself cannot be written (the user's to fix).
    Place(String),
    /// Producing the content failed.
    Fill(anyhow::Error),
}

/// Writes `path` whole or not at all: the content goes to a temporary file beside it, which
/// replaces `path` only once `fill` succeeded. The result is an ordinary file (0644), not the
/// temporary file's private 0600.
pub(crate) fn write_whole(
    path: &std::path::Path,
    fill: impl FnOnce(&mut std::fs::File) -> Result<()>,
) -> std::result::Result<(), WriteWhole> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| WriteWhole::Place(format!("cannot write in {}: {e}", dir.display())))?;
    fill(tmp.as_file_mut()).map_err(WriteWhole::Fill)?;
    let _ = tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644));
    tmp.persist(path)
        .map_err(|e| WriteWhole::Place(format!("cannot write {}: {}", path.display(), e.error)))?;
    Ok(())
}
