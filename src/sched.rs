//! `storlab sched plan | agent | status | events` (and the hidden `guard` an agent starts):
//! flags to crates/sched, what it returns to crates/report's tables.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use storlab_sched::schedule::Schedule;

use crate::cli::{DbArgs, SchedCmd};
use crate::results::{open_new, print_json};
use crate::usage;

/// Runs a `storlab sched` command.
pub fn dispatch(c: SchedCmd) -> Result<u8> {
    match c {
        SchedCmd::Plan { file, json } => sched_plan(&file, json),
        SchedCmd::Agent {
            server,
            schedule,
            rounds,
            poll,
            quiet,
            db,
        } => agent(&server, &schedule, rounds, &poll, quiet, &db),
        SchedCmd::Status {
            schedule,
            metrics,
            interval,
            json,
            db,
        } => status(&schedule, metrics.as_deref(), &interval, json, &db),
        SchedCmd::Events { pool, json, db } => events(pool.as_deref(), json, &db),
        SchedCmd::Guard { task, deadline, poll } => {
            // The guard must outlive its agent: main() set SIGPIPE back to its default, under
            // which the guard's next line to a killed agent would kill the guard too, before it
            // could stop the task. Writes to the closed pipe now fail, and are ignored.
            // SAFETY: setting a signal's disposition to SIG_IGN installs no handler.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
            let task = storlab_impact::kinds::parse(&task).map_err(|e| usage(format!("--task: {e}")))?;
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let _ = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed));
            let poll = Duration::from_secs_f64(poll.max(0.01));
            let code = storlab_sched::guard::guard(task, deadline, poll, &stop);
            Ok(code as u8)
        }
    }
}

fn duration(flag: &str, v: &str) -> Result<Duration> {
    let d: storlab_units::Duration = v.parse().map_err(|e| usage(format!("{flag} {v}: {e}")))?;
    if d.0 == 0 {
        return Err(usage(format!("{flag} {v}: a duration above 0, e.g. 5s")));
    }
    Ok(Duration::from_nanos(d.0))
}

/// `storlab sched plan FILE`: the schedule checked whole, its plan printed.
pub fn sched_plan(file: &std::path::Path, json: bool) -> Result<u8> {
    let schedule = storlab_sched::schedule::Schedule::read(file)?;
    let plans = storlab_sched::plan::plan(&schedule);
    if json {
        crate::results::print_json(&serde_json::json!({
            "schedule": file.display().to_string(),
            "lease_seconds": schedule.lease,
            "pools": plans,
        }))?;
    } else {
        print!("{}", storlab_report::sched::plan_table(&plans).to_text());
        for (p, plan) in schedule.pools.iter().zip(&plans) {
            println!(
                "{}: {} at once; windows: {}; order: {} (never verified first, then the oldest verify)",
                p.name,
                plan.k,
                if p.windows_text.is_empty() {
                    "always".to_string()
                } else {
                    p.windows_text.join(", ")
                },
                plan.order.join(", ")
            );
        }
    }
    Ok(0)
}

fn agent(
    server: &str,
    file: &std::path::Path,
    rounds: Option<u32>,
    poll: &str,
    quiet: bool,
    db: &DbArgs,
) -> Result<u8> {
    let schedule = Schedule::read_trusted(file)?;
    // Named before anything starts: an agent for a server the schedule does not name.
    schedule.server(server)?;
    let poll = duration("--poll", poll)?;
    // The database is opened once here, so that a wrong --db is said at once (exit 2); the
    // agent opens it again whenever a connection is lost.
    let target = db.target()?;
    drop(open_new(db)?);
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || {
        if s.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
    });
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find this program: {e}"))?;
    let o = storlab_sched::agent::AgentOptions {
        schedule,
        server: server.to_string(),
        db: target,
        host: storlab_env::hostname(),
        rounds,
        poll,
        guard: vec![exe.display().to_string(), "sched".into(), "guard".into()],
        stop,
        quiet,
    };
    storlab_sched::agent::run(&o).map_err(|e| anyhow::anyhow!(e))
}

fn status(file: &std::path::Path, metrics: Option<&str>, interval: &str, json: bool, db: &DbArgs) -> Result<u8> {
    let schedule = Schedule::read(file)?;
    let interval = duration("--interval", interval)?;
    let listener = metrics.map(storlab_metrics::endpoint::bind).transpose()?;
    let store = open_new(db)?;
    let look = || -> Result<(Vec<storlab_sched::status::PoolStatus>, f64)> {
        let now = store.sched_now()?;
        Ok((
            storlab_sched::status::status(&schedule, &store.sched_servers()?, now),
            now,
        ))
    };
    let Some(listener) = listener else {
        let (pools, now) = look()?;
        if json {
            print_json(&serde_json::json!({ "schedule": file.display().to_string(), "now": now, "pools": pools }))?;
        } else {
            print!("{}", storlab_report::sched::status_table(&pools, now).to_text());
        }
        return Ok(0);
    };
    let mut registry = prometheus_client::registry::Registry::default();
    let m = storlab_sched::metrics::SchedMetrics::register(&mut registry);
    let (pools, now) = look()?;
    m.set(&pools, now);
    let endpoint = storlab_metrics::endpoint::Endpoint::start(listener, Arc::new(registry))?;
    eprintln!("storlab sched status: metrics on http://{}/metrics", endpoint.addr());
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::Relaxed));
    let mut next = std::time::Instant::now() + interval;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if std::time::Instant::now() >= next {
            next += interval;
            match look() {
                Ok((pools, now)) => m.set(&pools, now),
                Err(e) => eprintln!("storlab sched status: {e}; the metrics keep their last values"),
            }
        }
    }
    Ok(0)
}

fn events(pool: Option<&str>, json: bool, db: &DbArgs) -> Result<u8> {
    let store = crate::results::open_existing(db)?;
    let events = store.sched_events(pool)?;
    if json {
        let list: Vec<serde_json::Value> = events
            .iter()
            .map(|e| {
                serde_json::json!({
                    "t": e.t, "pool": e.pool, "server": e.server, "agent": e.agent,
                    "token": e.token, "kind": e.kind, "detail": e.detail,
                })
            })
            .collect();
        print_json(&serde_json::json!({ "events": list }))?;
    } else {
        for e in &events {
            println!(
                "{}  {:<8} {:<12} {:<10} {:>5}  {}  ({})",
                storlab_report::monitor::utc(e.t),
                e.pool,
                e.server,
                e.kind,
                e.token.map(|t| t.to_string()).unwrap_or_default(),
                e.detail,
                e.agent
            );
        }
    }
    Ok(0)
}
