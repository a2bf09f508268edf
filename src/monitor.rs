//! `storlab monitor run | stats | events`: the monitor, its work done by crates/monitor, its
//! record kept by crates/store, its tables drawn by crates/report.

use anyhow::Result;
use storlab_monitor::request::RunFlags;
use storlab_monitor::run::now;
use storlab_monitor::stats::{read, window};
use storlab_report::challenge::{stats_data, stats_table, ChallengeUnit};
use storlab_report::monitor::{events_table, figures_table, utc};
use storlab_store::Store;

use crate::cli::{DbArgs, MonitorCmd, OutputArgs};
use crate::results::{open_existing, open_new, print_csv, print_json};
use crate::usage;

pub fn dispatch(c: MonitorCmd) -> Result<u8> {
    match c {
        MonitorCmd::Run { flags, db } => run(flags, db.db),
        MonitorCmd::Stats {
            from,
            to,
            pools,
            host,
            all_hosts,
            mib,
            output,
        } => stats(
            from.as_deref(),
            to.as_deref(),
            &pools,
            host_filter(host, all_hosts).as_deref(),
            mib,
            &output,
        ),
        MonitorCmd::Events {
            from,
            to,
            host,
            all_hosts,
            output,
        } => events(
            from.as_deref(),
            to.as_deref(),
            host_filter(host, all_hosts).as_deref(),
            &output,
        ),
    }
}

/// The host whose monitors a reading takes: the one named, this one, or (None) every host.
fn host_filter(host: Option<String>, all: bool) -> Option<String> {
    if all {
        None
    } else {
        Some(host.unwrap_or_else(storlab_env::hostname))
    }
}

/// `storlab monitor run`: everything is checked (pools, timings, the metrics address, another
/// monitor on this database) before the first sample.
fn run(flags: RunFlags, db: Option<String>) -> Result<u8> {
    let p = storlab_monitor::request::prepare(flags, db)?;
    let store = open_new(&DbArgs { db: p.db.clone() })?;
    let (summary, quiet) = (p.summary(), p.quiet);
    let out = storlab_monitor::run::run(
        &store,
        p.config,
        |id, addr| {
            let at = addr.map(|a| format!("; metrics at http://{a}/metrics"));
            eprintln!("storlab monitor {id}: {summary}{}", at.unwrap_or_default());
        },
        |e| {
            if !quiet && e.kind != "started" {
                eprintln!("{}  {} {}: {}", utc(e.t), e.pool, e.kind, e.detail);
            }
        },
    )?;
    let lost = if out.lost_sweeps > 0 {
        format!("; {} sweeps could not be stored", out.lost_sweeps)
    } else {
        String::new()
    };
    eprintln!(
        "storlab monitor {}: stopped after {} sweeps, {} events{lost}",
        out.id, out.sweeps, out.events
    );
    Ok(if out.lost_sweeps > 0 { 1 } else { 0 })
}

/// The monitor's window FROM..TO for the HTML report (`host`: None for this host, `all` for
/// every host).
pub fn view(store: &Store, window_arg: &str, host: Option<&str>) -> Result<storlab_report::monitor::MonitorView> {
    let (from, to) = window_arg.split_once("..").ok_or_else(|| {
        usage(format!(
            "--monitor {window_arg}: expected FROM..TO, e.g. 2026-11-20..2026-11-23 or 2d..now"
        ))
    })?;
    let host = match host {
        Some("all") => None,
        Some(h) => Some(h.to_string()),
        None => Some(storlab_env::hostname()),
    };
    let span = window(Some(from), Some(to), now())?;
    let r = read(store, host.as_deref(), span, &[])
        .map_err(|e| usage(format!("--monitor {window_arg}: {e}: no report was written")))?;
    let (stats, figures) = r.stats(&[]);
    Ok(storlab_report::monitor::MonitorView {
        from: r.from,
        to: r.to,
        lt: r.lt,
        timeline: storlab_report::monitor::timeline(store, r.from, r.to)?,
        window: r.window,
        stats,
        figures,
    })
}

fn stats(
    from: Option<&str>,
    to: Option<&str>,
    pools: &[String],
    host: Option<&str>,
    mib: bool,
    out: &OutputArgs,
) -> Result<u8> {
    let span = window(from, to, now())?;
    let r = read(&open_existing(&out.db)?, host, span, pools)?;
    let (s, figures) = r.stats(pools);
    let unit = if mib { ChallengeUnit::MiB } else { ChallengeUnit::MB };
    if out.json {
        print_json(&serde_json::json!({
            "from": utc(r.from), "to": utc(r.to), "unit": unit.name(), "lt_seconds": r.lt,
            "statistics": s, "pools": figures,
        }))?;
    } else if out.csv {
        let mut o = std::io::stdout().lock();
        storlab_report::export::Csv::table(&stats_data(&s, unit), &mut o)?;
    } else {
        println!(
            " *** Statistics - {} to {} ({:.2} Hours, long-term window {}) ***",
            utc(r.from),
            utc(r.to),
            s.hours,
            storlab_units::Duration((r.lt * 1e9) as u64)
        );
        print!("{}", stats_table(&s, unit).to_text());
        println!();
        print!("{}", figures_table(&figures).to_text());
    }
    Ok(0)
}

fn events(from: Option<&str>, to: Option<&str>, host: Option<&str>, out: &OutputArgs) -> Result<u8> {
    let (from_t, to_t) = window(from, to, now())?;
    let w = open_existing(&out.db)?.monitor_window(host, from_t, to_t)?;
    let t = events_table(&w.events);
    if out.json {
        print_json(&w.events)?;
    } else if out.csv {
        print_csv(&t)?;
    } else {
        print!("{}", t.to_text());
    }
    Ok(0)
}
