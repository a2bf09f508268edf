//! `storlab monitor run | stats | events`: the monitor, its work done by crates/monitor, its
//! record kept by crates/store, its tables drawn by crates/report.

use anyhow::Result;
use storlab_monitor::request::RunFlags;
use storlab_monitor::run::now;
use storlab_monitor::stats::{read, report_window};
use storlab_report::challenge::{stats_data, ChallengeUnit};
use storlab_report::monitor::{events_table, stats_text, utc};
use storlab_store::Store;

use crate::cli::{DbArgs, MonitorCmd, MonitorEventsArgs, MonitorStatsArgs};
use crate::results::{emit, open_existing, open_new};
use crate::usage;

pub fn dispatch(c: MonitorCmd) -> Result<u8> {
    match c {
        MonitorCmd::Run { flags, db } => run(flags, db.db),
        MonitorCmd::Stats(a) => stats(&a),
        MonitorCmd::Events(a) => events(&a),
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
    let (span, host) = report_window(window_arg, host, now())?;
    let r = read(store, host.as_deref(), span, &[])
        .map_err(|e| usage(format!("--monitor {window_arg}: {e}: no report was written")))?;
    let (stats, figures) = r.stats(&[]);
    Ok(storlab_report::monitor::MonitorView {
        from: r.from,
        to: r.to,
        lt: r.lt,
        interval: r.interval,
        timeline: storlab_report::monitor::timeline(store, r.from, r.to)?,
        window: r.window,
        stats,
        figures,
    })
}

fn stats(a: &MonitorStatsArgs) -> Result<u8> {
    let out = &a.output;
    let r = a.window.read(&open_existing(&out.db)?, now())?;
    let (s, figures) = r.stats(&a.window.pools);
    let unit = ChallengeUnit::of(a.mib);
    let doc = || {
        serde_json::json!({
            "from": utc(r.from), "to": utc(r.to), "unit": unit.name(), "lt_seconds": r.lt,
            "statistics": s, "pools": figures,
        })
    };
    let text = || stats_text(r.from, r.to, r.lt, &s, &figures, unit);
    emit(out, doc, || stats_data(&s, unit), text)?;
    Ok(0)
}

fn events(a: &MonitorEventsArgs) -> Result<u8> {
    let events = a.window.read(&open_existing(&a.output.db)?, now())?;
    let t = || events_table(&events);
    emit(&a.output, || &events, t, || t().to_text())?;
    Ok(0)
}
