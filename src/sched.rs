//! `storlab sched plan | agent | status | events` (and the hidden `guard` an agent starts):
//! flags to crates/sched, what it returns to crates/report's tables.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use storlab_sched::schedule::Schedule;

use crate::cli::{DbArgs, SchedCmd, SchedStatusArgs};
use crate::results::{json_or_text, open_new, opener, print_json};
use crate::usage;
use storlab_sched::agent::AgentOptions;

/// Runs a `storlab sched` command.
pub fn dispatch(c: SchedCmd) -> Result<u8> {
    match c {
        SchedCmd::Plan(a) => sched_plan(&a.file, a.json, &a.db),
        SchedCmd::Agent { flags, db } => {
            // The agent writes its next line to the guard while the guard may have just ended
            // (its task done, its last line not yet read): under the default SIGPIPE that write
            // would kill the agent before it recorded the task's end and gave the slot back.
            // Writes to the closed pipe now fail, and are ignored; the guard's last line is read.
            // SAFETY: setting a signal's disposition to SIG_IGN installs no handler.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
            agent(&flags, &db)
        }
        SchedCmd::Status(a) => status(&a),
        SchedCmd::Events(a) => events(a.pool.as_deref(), a.json, &a.db),
        SchedCmd::Guard(flags) => {
            // The guard must outlive its agent: main() set SIGPIPE back to its default, under
            // which the guard's next line to a killed agent would kill the guard too, before it
            // could stop the task. Writes to the closed pipe now fail, and are ignored.
            // SAFETY: setting a signal's disposition to SIG_IGN installs no handler.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
            Ok(storlab_sched::guard::run(&flags)?)
        }
    }
}

/// The schedule with the figures it takes from stored studies read (the database is opened only
/// when it names a study).
fn with_studies(schedule: Schedule, db: &DbArgs) -> Result<Schedule> {
    Ok(schedule.with_studies(&crate::results::opener(db))?)
}

/// `storlab sched plan FILE`: the schedule checked whole, its plan printed.
pub fn sched_plan(file: &std::path::Path, json: bool, db: &DbArgs) -> Result<u8> {
    let schedule = with_studies(Schedule::read(file)?, db)?;
    let plans = storlab_sched::plan::plan(&schedule);
    let windows: Vec<Vec<String>> = schedule.pools.iter().map(|p| p.windows_text.clone()).collect();
    let doc = || serde_json::json!({ "schedule": file.display().to_string(), "lease_seconds": schedule.lease, "pools": plans });
    json_or_text(json, doc, || storlab_report::sched::plan_text(&plans, &windows))?;
    Ok(0)
}

fn agent(flags: &storlab_sched::agent::AgentFlags, db: &DbArgs) -> Result<u8> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
    });
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find this program: {e}"))?;
    let guard = vec![exe.display().to_string(), "sched".into(), "guard".into()];
    let o = AgentOptions::new(flags, db.target()?, storlab_env::hostname(), &opener(db), guard, stop)?;
    // The database is opened once here, so that a wrong --db is said at once (exit 2); the
    // agent opens it again whenever a connection is lost.
    drop(open_new(db)?);
    storlab_sched::agent::run(&o).map_err(|e| anyhow::anyhow!(e))
}

fn status(a: &SchedStatusArgs) -> Result<u8> {
    use storlab_sched::{metrics, status::look};
    let (file, json, db) = (&a.flags.schedule, a.flags.json, &a.db);
    let schedule = with_studies(Schedule::read(file)?, db)?;
    let interval = a.flags.interval()?;
    let listener = a
        .flags
        .metrics
        .as_deref()
        .map(|addr| storlab_metrics::endpoint::bind(addr, a.flags.web_config.as_deref()))
        .transpose()?;
    let store = open_new(db)?;
    let (pools, now) = look(&schedule, &store)?;
    let Some(listener) = listener else {
        let doc = || serde_json::json!({ "schedule": file.display().to_string(), "now": now, "pools": pools });
        json_or_text(json, doc, || storlab_report::sched::status_table(&pools, now).to_text())?;
        return Ok(0);
    };
    let say = |line: &str| eprintln!("storlab sched status: {line}");
    metrics::serve(listener, (pools, now), interval, || look(&schedule, &store), say)?;
    Ok(0)
}

fn events(pool: Option<&str>, json: bool, db: &DbArgs) -> Result<u8> {
    let store = crate::results::open_existing(db)?;
    let events = store.sched_events(pool)?;
    let doc = || storlab_report::sched::events_document(&events);
    json_or_text(json, doc, || storlab_report::sched::events_text(&events))?;
    Ok(0)
}

/// `storlab risk`: the question from the flags (crates/sched, a stored study read when one is
/// named), answered by the model, printed.
pub fn risk(a: crate::cli::RiskArgs) -> Result<u8> {
    let q = storlab_sched::question::question(&a.inputs, &crate::results::opener(&a.db))?;
    let report = storlab_sched::risk::assess(&q).map_err(usage)?;
    if let Some(f) = &a.html {
        let html = storlab_report::html::risk_page(&report);
        storlab_report::export::write_whole(f, |w| Ok(std::io::Write::write_all(w, html.as_bytes())?))?;
        eprintln!("storlab: wrote {}", f.display());
    }
    if a.json {
        print_json(&report)?;
    } else {
        print!("{}", storlab_report::risk::render_text(&report));
    }
    Ok(0)
}
