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
        SchedCmd::Plan { file, json, db } => sched_plan(&file, json, &db),
        SchedCmd::Agent {
            server,
            schedule,
            rounds,
            poll,
            quiet,
            db,
        } => {
            // The agent writes its next line to the guard while the guard may have just ended
            // (its task done, its last line not yet read): under the default SIGPIPE that write
            // would kill the agent before it recorded the task's end and gave the slot back.
            // Writes to the closed pipe now fail, and are ignored; the guard's last line is read.
            // SAFETY: setting a signal's disposition to SIG_IGN installs no handler.
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
            agent(&server, &schedule, rounds, &poll, quiet, &db)
        }
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

/// The schedule with the figures it takes from stored studies read (the database is opened only
/// when it names a study).
fn with_studies(mut schedule: Schedule, db: &DbArgs) -> Result<Schedule> {
    if schedule.needs_studies() {
        let store = crate::results::open_existing(db)?;
        schedule.resolve(&store)?;
    }
    Ok(schedule)
}

fn duration(flag: &str, v: &str) -> Result<Duration> {
    let d: storlab_units::Duration = v.parse().map_err(|e| usage(format!("{flag} {v}: {e}")))?;
    if d.0 == 0 {
        return Err(usage(format!("{flag} {v}: a duration above 0, e.g. 5s")));
    }
    Ok(Duration::from_nanos(d.0))
}

/// `storlab sched plan FILE`: the schedule checked whole, its plan printed.
pub fn sched_plan(file: &std::path::Path, json: bool, db: &DbArgs) -> Result<u8> {
    let schedule = with_studies(Schedule::read(file)?, db)?;
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
    let schedule = with_studies(schedule, db)?;
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
    let schedule = with_studies(Schedule::read(file)?, db)?;
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

/// A share per period as a rate per hour (crates/sched's parser), refused with the flag named.
fn rate_per_hour(flag: &str, v: &str) -> Result<f64> {
    storlab_sched::risk::parse_rate(v).map_err(|e| usage(format!("{flag} {v}: {e}")))
}

use storlab_report::risk::human_hours as hh;

fn hours(flag: &str, v: &str) -> Result<f64> {
    Ok(duration(flag, v)?.as_secs_f64() / 3600.0)
}

/// `storlab risk`.
pub fn risk(a: crate::cli::RiskArgs) -> Result<u8> {
    use storlab_sched::risk::{assess, Params, Question, Raid, Scheduling, YEAR_HOURS};
    let raid = Raid::parse(&a.raid).map_err(|e| usage(format!("--raid: {e}")))?;
    let failure_rate = match &a.mttf {
        Some(m) => 1.0 / hours("--mttf", m)?,
        None => rate_per_hour("--failure-rate", &a.failure_rate)?,
    };
    let latent_rate = rate_per_hour("--latent-rate", &a.latent_rate)?;
    let capacity = a
        .capacity
        .as_deref()
        .map(|c| {
            c.parse::<storlab_units::Size>()
                .map(|s| s.0)
                .map_err(|e| usage(format!("--capacity {c}: {e}")))
        })
        .transpose()?;
    // The rebuild: a stored study, given times, or the capacity at a speed.
    let (rebuild, rebuild_loaded, rebuild_source) = if let Some(id) = a.rebuild_study {
        let store = crate::results::open_existing(&a.db)?;
        let study = store
            .study(id)?
            .ok_or_else(|| usage(format!("--rebuild-study {id}: no such study")))?;
        match &study.params {
            storlab_model::study::StudyParams::ImpactReverse(p) => {
                if a.rebuild.is_some() {
                    return Err(usage(format!(
                        "--rebuild with --rebuild-study {id}: the study gives the rebuild's time idle and under load; give one or the other"
                    )));
                }
                (
                    p.idle_seconds / 3600.0,
                    Some(p.loaded_seconds / 3600.0),
                    format!(
                        "study {id} ({}): {} idle, {} under load",
                        p.task_description,
                        hh(p.idle_seconds / 3600.0),
                        hh(p.loaded_seconds / 3600.0)
                    ),
                )
            }
            storlab_model::study::StudyParams::ImpactHeld(p) => {
                // The rebuild among the tasks held through: a replace or an md repair/check if
                // there is one, else the longest that ran to its end.
                let done: Vec<(&str, f64)> = p
                    .spans
                    .iter()
                    .filter_map(|s| Some((s.task.as_str(), s.end? - s.start)))
                    .collect();
                let rebuild_like = |t: &str| t.contains("replace") || t.starts_with("md ");
                let (task, secs) = done
                    .iter()
                    .max_by(|a, b| (rebuild_like(a.0), a.1).partial_cmp(&(rebuild_like(b.0), b.1)).unwrap_or(std::cmp::Ordering::Equal))
                    .copied()
                    .ok_or_else(|| usage(format!("--rebuild-study {id}: no task of the held study ran to its end")))?;
                let loaded = secs / 3600.0;
                let (idle, words) = match &a.rebuild {
                    Some(r) => {
                        let idle = hours("--rebuild", r)?;
                        (idle, format!("{} idle (given), {} under the held load (study {id}, {task})", hh(idle), hh(loaded)))
                    }
                    None => (loaded, format!("{} under the held load (study {id}, {task}); idle not measured, taken as the same", hh(loaded))),
                };
                (idle, Some(loaded), words)
            }
            _ => {
                return Err(usage(format!(
                    "--rebuild-study {id}: a {} study; the rebuild's times come from a study of the rebuild's task (storlab impact --reverse --task …, or --held)",
                    study.kind()
                )))
            }
        }
    } else if let Some(r) = &a.rebuild {
        let idle = hours("--rebuild", r)?;
        let loaded = a
            .rebuild_loaded
            .as_deref()
            .map(|l| hours("--rebuild-loaded", l))
            .transpose()?;
        let words = match loaded {
            Some(l) => format!("given: {} idle, {} under load", hh(idle), hh(l)),
            None => format!("given: {}", hh(idle)),
        };
        (idle, loaded, words)
    } else if let Some(c) = capacity {
        let speed = match a.rebuild_speed.parse::<storlab_units::Rate>() {
            Ok(storlab_units::Rate::BytesPerSec(b)) => b,
            _ => {
                return Err(usage(format!(
                    "--rebuild-speed {}: bytes per second such as 100MiB/s",
                    a.rebuild_speed
                )))
            }
        };
        let idle = c as f64 / speed / 3600.0;
        let loaded = a
            .rebuild_loaded
            .as_deref()
            .map(|l| hours("--rebuild-loaded", l))
            .transpose()?;
        (
            idle,
            loaded,
            format!("the capacity at {}: {idle:.2} h", a.rebuild_speed),
        )
    } else {
        return Err(usage(
            "the rebuild's time: give --rebuild DURATION (and --rebuild-loaded), --rebuild-study ID, or --capacity SIZE (at --rebuild-speed)",
        ));
    };
    // The verify: a schedule's pool, or a given interval.
    let mut scheduling = None;
    let (verify_interval, verify_hours, verify_source) = if let (Some(file), Some(pool)) = (&a.schedule, &a.pool) {
        let schedule = with_studies(Schedule::read(file)?, &a.db)?;
        let p = schedule.pools.iter().find(|p| p.name == *pool).ok_or_else(|| {
            let names: Vec<&str> = schedule.pools.iter().map(|p| p.name.as_str()).collect();
            usage(format!(
                "--pool {pool}: {} has no such pool (its pools: {})",
                file.display(),
                names.join(", ")
            ))
        })?;
        let plan = storlab_sched::plan::pool_plan(p);
        let d = p.duration_loaded.or(p.duration).ok_or_else(|| {
            usage(format!(
                "--pool {pool}: the schedule gives the pool no duration; the interval follows from a verify's duration (duration_loaded = \"9h\")"
            ))
        })? / 3600.0;
        let s = Scheduling {
            servers: plan.servers,
            cost: p.cost,
            budget: p.budget,
            verify_hours: d,
            every: p.every.map(|e| e / 3600.0),
            open: plan.window_hours / 168.0,
        };
        let interval = s.interval(plan.k);
        let words =
            format!(
            "pool {pool} of {}: {} servers, k = {}, a verify {} under load, windows open {:.0} h a week{}: every {}",
            file.display(),
            plan.servers,
            plan.k,
            hh(d),
            plan.window_hours,
            p.every.map(|e| format!(", due every {:.0} days", e / 86400.0)).unwrap_or_default(),
            hh(interval)
        );
        scheduling = Some(s);
        (Some(interval), d, words)
    } else {
        let d = a
            .verify_duration
            .as_deref()
            .map(|d| hours("--verify-duration", d))
            .transpose()?
            .unwrap_or(0.0);
        match a.verify_interval.as_deref() {
            None | Some("never") => (
                None,
                d,
                "never verified (give --verify-interval or --schedule and --pool)".to_string(),
            ),
            Some(v) => {
                let h = hours("--verify-interval", v)?;
                (Some(h), d, format!("every {}, a verify of {}", hh(h), hh(d)))
            }
        }
    };
    if !(a.years.is_finite() && a.years > 0.0) {
        return Err(usage(format!("--years {}: a horizon above 0", a.years)));
    }
    let q = Question {
        params: Params {
            raid,
            drives: a.drives,
            failure_rate,
            latent_rate,
            rebuild_hours: rebuild,
            verify_interval,
            verify_hours,
        },
        rebuild_loaded,
        arrays: a.arrays,
        hours: a.years * YEAR_HOURS,
        capacity,
        rebuild_source,
        verify_source,
        scheduling,
        simulate: (a.monte_carlo, a.seed),
    };
    let report = assess(&q).map_err(usage)?;
    if let Some(f) = &a.html {
        let html = storlab_report::html::render(
            &[],
            None,
            &[],
            &[],
            &[],
            std::slice::from_ref(&report),
            &storlab_report::html::HtmlOptions { free_scales: false },
        );
        storlab_report::export::write_whole(f, |w| Ok(std::io::Write::write_all(w, html.as_bytes())?))?;
        eprintln!("storlab: wrote {}", f.display());
    }
    if a.json {
        print_json(&report)?;
        return Ok(0);
    }
    for (k, v) in storlab_report::risk::inputs(&report) {
        println!("{k:<22}{v}");
    }
    println!();
    print!(
        "{}",
        storlab_report::risk::rows_table("risk", &report.summary, report.years).to_text()
    );
    println!(
        "\nagainst the verify interval (rebuild {}):",
        hh(report.by_interval[0].rebuild_hours)
    );
    print!(
        "{}",
        storlab_report::risk::rows_table("interval", &report.by_interval, report.years).to_text()
    );
    if !report.by_k.is_empty() {
        println!("\nagainst the scheduler's k:");
        print!(
            "{}",
            storlab_report::risk::rows_table("k", &report.by_k, report.years).to_text()
        );
    }
    if let Some(c) = &report.check {
        println!(
            "\nsimulated, {} paths: MTTDL {:.4e} years (95 % interval {:.4e} to {:.4e}); solved {:.4e} years: {}",
            c.runs,
            c.mttdl_years[0],
            c.mttdl_years[1],
            c.mttdl_years[2],
            c.solved_years,
            if c.agrees { "within" } else { "outside" }
        );
    }
    Ok(0)
}
