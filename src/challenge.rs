//! `storlab challenge run | create | agent | resume | stats | show`: the data challenge, its
//! work done by crates/challenge, its catalogue kept by crates/store, its tables drawn by
//! crates/report.

use std::io::IsTerminal;

use anyhow::Result;
use storlab_challenge::faults::is_host_action;
use storlab_challenge::host;
use storlab_challenge::run::{HostOutcome, RunConfig};
use storlab_challenge::spec::{build, parse_fault, parse_pool, SpecInput};
use storlab_challenge::stats::{compute, Window};
use storlab_model::challenge::{Account, Fault, Pool, Stats};
use storlab_model::run::{NewRun, RunKind, RunStatus};
use storlab_report::challenge::{account_table, bad_files_table, events_table, stats_data, stats_table, ChallengeUnit};
use storlab_store::{Store, StoredChallenge};

use crate::cli::{ChallengeCmd, ChallengeSpecArgs, HostPoolsArgs, OutputArgs};
use crate::results::{open_existing, open_new, print_json};
use crate::{exit, usage};

pub fn dispatch(c: ChallengeCmd) -> Result<u8> {
    match c {
        ChallengeCmd::Run { spec, mib, output } => run(&spec, mib, &output),
        ChallengeCmd::Create { spec, output } => create(&spec, &output),
        ChallengeCmd::Agent { id, pools, mib, output } => agent(id, &pools, mib, &output, false),
        ChallengeCmd::Resume { id, pools, mib, output } => agent(id, &pools, mib, &output, true),
        ChallengeCmd::Stats {
            id,
            from,
            to,
            samples,
            pools,
            hosts,
            mib,
            output,
        } => stats(id, from, to, samples.as_deref(), &pools, &hosts, mib, &output),
        ChallengeCmd::Show { id, samples, output } => show(id, samples, &output),
    }
}

fn unit(mib: bool) -> ChallengeUnit {
    if mib {
        ChallengeUnit::MiB
    } else {
        ChallengeUnit::MB
    }
}

/// The flags over the job file's `[challenge]` table.
fn spec_input(a: &ChallengeSpecArgs) -> Result<SpecInput> {
    let flags = SpecInput {
        pool: a.pool.clone(),
        writers: a.writers,
        readers: a.readers,
        file_size: a.file_size.clone(),
        bs: a.bs.clone(),
        duration: a.duration.clone(),
        files: a.files,
        spread: a.spread.clone(),
        backlog: a.backlog,
        interval: a.interval.clone(),
        lt: a.lt.clone(),
        seed: a.seed,
        fault: a.fault.clone(),
        lease: a.lease.clone(),
        direct: a.direct.then_some(true),
    };
    Ok(match &a.job {
        Some(f) => SpecInput::from_file(f)?.overlay(flags),
        None => flags,
    })
}

/// This process's name in the catalogue: the host and the process id, so that several agents
/// on one host hold their own leases and a resumed host can tell its dead processes.
fn agent_name() -> String {
    format!("{}/{}", storlab_env::hostname(), std::process::id())
}

/// `storlab challenge create`: defined, not started.
fn create(a: &ChallengeSpecArgs, out: &OutputArgs) -> Result<u8> {
    let spec = build(&spec_input(a)?)?;
    if let Some(f) = spec.faults.iter().find(|f| is_host_action(f.action)) {
        return Err(usage(format!(
            "--fault {}:{}:{}: a host action is carried out only by the host whose own plan names it; give it to that host's agent (storlab challenge agent ID --fault …), not to the challenge in the database",
            f.at, f.action, f.target
        )));
    }
    let store = open_new(&out.db)?;
    let id = store.create_challenge(&spec)?;
    let c = store
        .challenge(id)?
        .ok_or_else(|| anyhow::anyhow!("challenge {id} vanished after it was stored"))?;
    if out.json {
        print_json(&serde_json::json!({ "challenge": id, "uuid": c.uuid, "spec": spec }))?;
    } else {
        println!("{id}");
        eprintln!(
            "storlab: challenge {id} defined in {}; on each client: storlab challenge agent {id} --db … {}",
            store.target(),
            spec.pools
                .iter()
                .map(|p| format!("--pool {}={}", p.name, p.path.display()))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(0)
}

/// `storlab challenge run`: define and run on this host alone.
fn run(a: &ChallengeSpecArgs, mib: bool, out: &OutputArgs) -> Result<u8> {
    // Checked whole before the database is opened: a refused challenge leaves nothing behind.
    let spec = build(&spec_input(a)?)?;
    let live = serve_live(a.metrics.as_deref())?;
    let store = open_new(&out.db)?;
    let id = store.create_challenge(&spec)?;
    let c = store
        .challenge(id)?
        .ok_or_else(|| anyhow::anyhow!("challenge {id} vanished after it was stored"))?;
    let (writers, readers) = (spec.writers, spec.readers);
    // This host's own command line named them: it carries them out.
    let host_faults = spec
        .faults
        .iter()
        .filter(|f| is_host_action(f.action))
        .cloned()
        .collect();
    take_part(
        store,
        &c,
        writers,
        readers,
        false,
        Vec::new(),
        host_faults,
        live.as_ref(),
        mib,
        out,
    )
}

/// `--metrics ADDR`, bound before anything is stored.
fn serve_live(addr: Option<&str>) -> Result<Option<storlab_metrics::live::Live>> {
    let live = storlab_metrics::live::serve(addr, "challenge").map_err(|e| usage(e.to_string()))?;
    if let Some(l) = &live {
        eprintln!("storlab: live figures at http://{}/metrics", l.endpoint.addr());
    }
    Ok(live)
}

/// The pools this host names and its own fault plan (its command line, or its job file's
/// `[challenge]` table).
fn host_plan(a: &HostPoolsArgs) -> Result<(Vec<Pool>, Vec<Fault>)> {
    let file = match &a.job {
        Some(f) => SpecInput::from_file(f)?,
        None => SpecInput::default(),
    };
    let pools = if a.pool.is_empty() { file.pool } else { a.pool.clone() };
    let faults = if a.fault.is_empty() {
        file.fault
    } else {
        a.fault.clone()
    };
    let pools: Vec<Pool> = pools.iter().map(|p| parse_pool(p)).collect::<Result<_, _>>()?;
    let faults: Vec<Fault> = faults.iter().map(|f| parse_fault(f)).collect::<Result<_, _>>()?;
    if let Some(f) = faults.iter().find(|f| !is_host_action(f.action)) {
        return Err(usage(format!(
            "--fault …:{}:{}: drain and stopping workers are the challenge's (storlab challenge create --fault); an agent's own plan holds host actions: unmount, read-only, detach, command, task",
            f.action, f.target
        )));
    }
    Ok((pools, faults))
}

/// `storlab challenge agent ID` and `storlab challenge resume ID`.
fn agent(id: i64, a: &HostPoolsArgs, mib: bool, out: &OutputArgs, resume: bool) -> Result<u8> {
    let (mine, host_faults) = host_plan(a)?;
    let live = serve_live(a.metrics.as_deref())?;
    let store = open_existing(&out.db)?;
    let c = store
        .challenge(id)?
        .ok_or_else(|| usage(format!("no challenge {id} in {}", store.target())))?;
    if matches!(c.status.as_str(), "done" | "failed" | "ending") {
        return Err(usage(format!("challenge {id} is over (status {})", c.status)));
    }
    host::check_pools(&c.spec, &mine)?;
    storlab_challenge::faults::check(&c.spec.pools, &host_faults)?;
    // Resuming takes over the files in flight of this host's processes that are gone.
    let take_over: Vec<String> = if resume {
        host::dead_agents_here(&store, id)?
    } else {
        Vec::new()
    };
    let writers = a.writers.unwrap_or(c.spec.writers);
    let readers = a.readers.unwrap_or(c.spec.readers);
    if writers == 0 && readers == 0 {
        return Err(usage("--writers 0 and --readers 0: this agent would do nothing"));
    }
    take_part(
        store,
        &c,
        writers,
        readers,
        true,
        take_over,
        host_faults,
        live.as_ref(),
        mib,
        out,
    )
}

/// Runs this host's share, stores it as a run of kind challenge, ends the challenge when it is
/// over, and prints what happened.
#[allow(clippy::too_many_arguments)]
fn take_part(
    mut store: Store,
    c: &StoredChallenge,
    writers: u32,
    readers: u32,
    shared: bool,
    take_over: Vec<String>,
    host_faults: Vec<Fault>,
    live: Option<&storlab_metrics::live::Live>,
    mib: bool,
    out: &OutputArgs,
) -> Result<u8> {
    let run_id = begin(&mut store, c, writers, readers, out)?;
    let challenge_id = c.id;
    let observe = move |pools: &[String], read: &[u64], written: &[u64]| {
        if let Some(l) = live {
            for ((p, r), w) in pools.iter().zip(read).zip(written) {
                l.metrics.challenge_bytes(challenge_id, p, *r, *w);
            }
        }
    };
    let watching = std::io::stderr().is_terminal() && !out.json && !out.csv;
    let cfg = RunConfig {
        host: agent_name(),
        run_id,
        live: watching,
        interrupt: storlab_session::stop_flag(),
        writers,
        readers,
        shared,
        take_over,
        host_faults,
        observer: live
            .is_some()
            .then_some(&observe as &(dyn Fn(&[String], &[u64], &[u64]) + Sync)),
    };
    let (store, outcome) = match storlab_challenge::run::run(store, c, &cfg) {
        Ok(r) => r,
        Err(e) => {
            // The run is marked failed in a fresh connection: the one that failed went with it.
            if let Ok(s) = open_new(&out.db) {
                let _ = s.finish_run(run_id, RunStatus::Failed, Some(&e.to_string()));
            }
            return Err(e.into());
        }
    };
    let (acc, problems, ended) = host::end_if_over(&store, c, &outcome)?;
    let status = if outcome.interrupted {
        RunStatus::Aborted
    } else if !acc.holds() || !problems.is_empty() {
        RunStatus::Failed
    } else if !acc.corrupted.is_empty() {
        RunStatus::Corrupt
    } else {
        RunStatus::Ok
    };
    let detail = (!problems.is_empty()).then(|| problems.join("; "));
    store.finish_run(run_id, status, detail.as_deref())?;
    let stats = compute(
        &store.challenge_samples(c.id, c.spec.pools.len())?,
        &c.spec,
        Window::All,
        &[],
    );
    print_outcome(
        &store,
        c,
        run_id,
        &outcome,
        &acc,
        &problems,
        &stats,
        ended,
        unit(mib),
        out,
    )?;
    Ok(match status {
        RunStatus::Aborted => exit::ABORTED,
        RunStatus::Failed => 1,
        RunStatus::Corrupt => exit::CORRUPT,
        _ => 0,
    })
}

/// This host's share stored as a run of kind challenge; says so unless stdout is a document.
fn begin(store: &mut Store, c: &StoredChallenge, writers: u32, readers: u32, out: &OutputArgs) -> Result<i64> {
    let command = storlab_store::mask_command_line(&std::env::args().collect::<Vec<_>>()).join(" ");
    let run_id = store.begin_run(&NewRun {
        kind: RunKind::Challenge,
        host: storlab_env::hostname(),
        job_name: Some(format!("challenge-{}", c.id)),
        job: serde_json::to_value(&c.spec)?,
        command,
        tags: Vec::new(),
    })?;
    if !out.json && !out.csv {
        eprintln!(
            "storlab: challenge {} ({}), {} pool(s), {writers} writer(s) and {readers} reader(s) here; run {run_id} in {}",
            c.id,
            c.uuid,
            c.spec.pools.len(),
            store.target()
        );
    }
    Ok(run_id)
}

/// The account as text: the counts and the invariant, then the files that did not end well.
fn print_account(acc: &Account) {
    print!("{}", account_table(acc).to_text());
    println!(
        "written {} = read {} + lost after written {} + left over {}: {}",
        acc.written,
        acc.read,
        acc.lost_written,
        acc.left_over(),
        if acc.holds() { "holds" } else { "DOES NOT HOLD" }
    );
    if !acc.corrupted.is_empty() || !acc.lost.is_empty() {
        println!();
        print!("{}", bad_files_table(acc).to_text());
    }
}

#[allow(clippy::too_many_arguments)]
fn print_outcome(
    store: &Store,
    c: &StoredChallenge,
    run_id: i64,
    o: &HostOutcome,
    acc: &Account,
    problems: &[String],
    stats: &Stats,
    ended: bool,
    unit: ChallengeUnit,
    out: &OutputArgs,
) -> Result<()> {
    if out.json {
        return print_json(&serde_json::json!({
            "challenge": c.id,
            "uuid": c.uuid,
            "run": run_id,
            "host": agent_name(),
            "here": o,
            "account": acc,
            "holds": acc.holds(),
            "problems": problems,
            "ended": ended,
            "statistics": stats,
        }));
    }
    if out.csv {
        let mut w = std::io::stdout().lock();
        storlab_report::export::Csv::table(&stats_data(stats, unit), &mut w)?;
        return Ok(());
    }
    println!(
        "challenge {} on {}: {:.1} s here; {:.1} MB written, {:.1} MB read; writers idle {:.1} s, readers idle {:.1} s (summed over threads)",
        c.id,
        agent_name(),
        o.seconds,
        o.bytes_written as f64 / 1e6,
        o.bytes_read as f64 / 1e6,
        o.writer_idle,
        o.reader_idle
    );
    println!();
    print_account(acc);
    println!();
    println!(
        " *** Statistics - Sample Begin: {}, Sample End: {} ({:.2} Hours) ***",
        stats.first, stats.last, stats.hours
    );
    print!("{}", stats_table(stats, unit).to_text());
    let events = store.challenge_events(c.id)?;
    if !events.is_empty() {
        println!();
        print!("{}", events_table(&events).to_text());
    }
    for p in problems {
        eprintln!("storlab: {p}");
    }
    if o.interrupted {
        eprintln!(
            "storlab: interrupted; go on with: storlab challenge resume {} {}",
            c.id,
            c.spec
                .pools
                .iter()
                .map(|p| format!("--pool {}={}", p.name, p.path.display()))
                .collect::<Vec<_>>()
                .join(" ")
        );
    } else if !ended {
        eprintln!(
            "storlab: this host is done; the challenge ends with the last agent ({} file(s) still in flight elsewhere)",
            acc.in_flight()
        );
    }
    Ok(())
}

fn parse_samples(text: &str) -> Result<(u64, u64)> {
    let bad = || {
        usage(format!(
            "--samples {text}: expected A..B, two sample numbers (0..47344)"
        ))
    };
    let (a, b) = text.split_once("..").ok_or_else(bad)?;
    let (a, b) = (
        a.trim().parse::<u64>().map_err(|_| bad())?,
        b.trim().parse::<u64>().map_err(|_| bad())?,
    );
    if a > b {
        return Err(usage(format!("--samples {text}: the first is after the last")));
    }
    Ok((a, b))
}

fn stored(store: &Store, id: i64) -> Result<StoredChallenge> {
    store
        .challenge(id)?
        .ok_or_else(|| usage(format!("no challenge {id} in {}", store.target())))
}

/// `storlab challenge stats ID`.
#[allow(clippy::too_many_arguments)]
fn stats(
    id: i64,
    from: Option<f64>,
    to: Option<f64>,
    samples: Option<&str>,
    pools: &[String],
    hosts: &[String],
    mib: bool,
    out: &OutputArgs,
) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let c = stored(&store, id)?;
    for p in pools {
        if !c.spec.pools.iter().any(|q| &q.name == p) {
            return Err(usage(format!(
                "--pool {p}: challenge {id} has no such pool (its pools: {})",
                c.spec
                    .pools
                    .iter()
                    .map(|q| q.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let window = match (samples, from, to) {
        (Some(s), _, _) => {
            let (a, b) = parse_samples(s)?;
            Window::Samples(a, b)
        }
        (None, None, None) => Window::All,
        (None, f, t) => {
            let (f, t) = (f.unwrap_or(0.0), t.unwrap_or(f64::INFINITY));
            if !(f >= 0.0 && t > f) {
                return Err(usage(format!(
                    "--from {f} --to {t}: hours from the start, --to after --from"
                )));
            }
            Window::Hours(f, t)
        }
    };
    let all = store.challenge_samples(id, c.spec.pools.len())?;
    let all = storlab_challenge::stats::of_hosts(all, hosts).map_err(|e| usage(format!("{e} in challenge {id}")))?;
    let s = compute(&all, &c.spec, window, pools);
    let u = unit(mib);
    if out.json {
        print_json(&serde_json::json!({ "challenge": id, "unit": u.name(), "statistics": s }))?;
    } else if out.csv {
        let mut w = std::io::stdout().lock();
        storlab_report::export::Csv::table(&stats_data(&s, u), &mut w)?;
    } else {
        println!(
            " *** Statistics - Sample Begin: {}, Sample End: {} ({:.2} Hours) ***",
            s.first, s.last, s.hours
        );
        print!("{}", stats_table(&s, u).to_text());
    }
    Ok(0)
}

/// `storlab challenge show ID`.
fn show(id: i64, with_samples: bool, out: &OutputArgs) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let c = stored(&store, id)?;
    let acc = host::account(&store, &c)?;
    let events = store.challenge_events(id)?;
    let runs = store.challenge_runs(id)?;
    let samples = store.challenge_samples(id, c.spec.pools.len())?;
    let pools: Vec<serde_json::Value> = c
        .spec
        .pools
        .iter()
        .zip(storlab_challenge::stats::bytes_per_pool(&samples, c.spec.pools.len()))
        .map(|(p, (w, r))| serde_json::json!({ "name": p.name, "path": p.path, "bytes_written": w, "bytes_read": r }))
        .collect();
    let per_agent: Vec<serde_json::Value> = storlab_challenge::stats::bytes_per_agent(&samples)
        .into_iter()
        .map(|(h, w, r)| serde_json::json!({ "agent": h, "bytes_written": w, "bytes_read": r }))
        .collect();
    if out.json {
        print_json(&serde_json::json!({
            "challenge": id,
            "uuid": c.uuid,
            "created_at": c.created_at,
            "agents": per_agent,
            "status": c.status,
            "spec": c.spec,
            "runs": runs.iter().map(|(r, h)| serde_json::json!({"run": r, "host": h})).collect::<Vec<_>>(),
            "account": acc,
            "holds": acc.holds(),
            "events": events,
            "pools": pools,
            "samples": if with_samples { serde_json::to_value(&samples)? } else { serde_json::Value::Null },
        }))?;
        return Ok(0);
    }
    if out.csv {
        let mut w = std::io::stdout().lock();
        storlab_report::export::Csv::table(&account_table(&acc), &mut w)?;
        return Ok(0);
    }
    println!("challenge {id} ({}), {}, defined {}", c.uuid, c.status, c.created_at);
    for p in &c.spec.pools {
        println!("  pool {} {}", p.name, p.path.display());
    }
    for (r, h) in &runs {
        println!("  run {r} on {h}");
    }
    println!();
    print_account(&acc);
    if !events.is_empty() {
        println!();
        print!("{}", events_table(&events).to_text());
    }
    Ok(0)
}

/// A challenge read for the HTML report.
pub fn view(store: &Store, id: i64) -> Result<storlab_report::challenge::ChallengeView> {
    let c = store.challenge(id)?.ok_or_else(|| {
        usage(format!(
            "no challenge {id} in {}: no report was written",
            store.target()
        ))
    })?;
    let samples = store.challenge_samples(id, c.spec.pools.len())?;
    let stats = compute(&samples, &c.spec, Window::All, &[]);
    Ok(storlab_report::challenge::ChallengeView {
        account: host::account(store, &c)?,
        events: store.challenge_events(id)?,
        samples,
        stats,
        challenge: c,
    })
}
