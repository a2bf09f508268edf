//! `storlab challenge run | create | agent | resume | stats | show | list`: the data challenge, its
//! work done by crates/challenge, its catalogue kept by crates/store, its tables drawn by
//! crates/report.

use std::io::IsTerminal;

use anyhow::Result;
use storlab_challenge::host;
use storlab_challenge::run::SampleObserver;
use storlab_challenge::share::{self, Share, Taken};
use storlab_challenge::spec::build;
use storlab_challenge::stats::{compute, Ask, Window};
use storlab_report::challenge::{
    account_table, list_document, list_table, outcome_document, outcome_text, stats_data, stats_text, ChallengeUnit,
    ChallengeView,
};
use storlab_store::{Store, StoredChallenge};

use crate::cli::{AgentArgs, ChallengeCmd, ChallengeSpecArgs, OutputArgs};
use crate::results::{emit, open_existing, open_new, print_csv, print_json};
use crate::running::serve_live;
use crate::usage;

pub fn dispatch(c: ChallengeCmd) -> Result<u8> {
    match c {
        ChallengeCmd::Run { spec, mib, output } => run(&spec, mib, &output),
        ChallengeCmd::Create { spec, output } => create(&spec, &output),
        ChallengeCmd::Agent(a) | ChallengeCmd::Resume(a) => agent(&a),
        ChallengeCmd::Stats { id, ask, mib, output } => stats(id, &ask, mib, &output),
        ChallengeCmd::Show { id, samples, output } => show(id, samples, &output),
        ChallengeCmd::List { output } => list(&output),
    }
}

/// `storlab challenge create`: defined, not started.
fn create(a: &ChallengeSpecArgs, out: &OutputArgs) -> Result<u8> {
    let spec = build(&a.input()?)?;
    share::refuse_host_actions(&spec)?;
    let store = open_new(&out.db)?;
    let id = store.create_challenge(&spec)?;
    let c = stored(&store, id)?;
    if out.json {
        print_json(&serde_json::json!({ "challenge": id, "uuid": c.uuid, "spec": spec }))?;
    } else {
        println!("{id}");
        eprintln!(
            "storlab: challenge {id} defined in {}; on each client: storlab challenge agent {id} --db … {}",
            store.target(),
            share::pool_flags(&spec.pools)
        );
    }
    Ok(0)
}

/// `storlab challenge run`: define and run on this host alone.
fn run(a: &ChallengeSpecArgs, mib: bool, out: &OutputArgs) -> Result<u8> {
    // Checked whole before the database is opened: a refused challenge leaves nothing behind.
    let spec = build(&a.input()?)?;
    let live = serve_live(a.metrics.as_deref(), a.web_config.as_deref(), "challenge")?;
    let store = open_new(&out.db)?;
    let id = store.create_challenge(&spec)?;
    let c = stored(&store, id)?;
    let share = Share {
        host_faults: share::host_faults(&spec),
        ..here(spec.writers, spec.readers, out)
    };
    take_part(store, &c, share, live.as_ref(), mib, out)
}

/// `storlab challenge agent ID` and `storlab challenge resume ID`: the same, as a service
/// started again on its host is a resume (the files in flight of this host's processes that
/// are gone are taken over at once).
fn agent(args: &AgentArgs) -> Result<u8> {
    let (id, a, mib, out) = (args.id, &args.pools, args.mib, &args.output);
    let (mine, host_faults) = share::host_plan(a)?;
    let live = serve_live(a.metrics.as_deref(), a.web_config.as_deref(), "challenge")?;
    let store = open_existing(&out.db)?;
    let (c, take_over) = share::join(&store, id, &mine, &host_faults, true)?;
    let share = Share {
        shared: true,
        take_over,
        host_faults,
        ..here(
            a.writers.unwrap_or(c.spec.writers),
            a.readers.unwrap_or(c.spec.readers),
            out,
        )
    };
    if share.writers == 0 && share.readers == 0 {
        return Err(usage("--writers 0 and --readers 0: this agent would do nothing"));
    }
    take_part(store, &c, share, live.as_ref(), mib, out)
}

/// This process's share with `writers` and `readers`, alone (the caller says otherwise).
fn here(writers: u32, readers: u32, out: &OutputArgs) -> Share<'static> {
    let live = std::io::stderr().is_terminal() && !out.json && !out.csv;
    Share::alone(
        writers,
        readers,
        crate::running::command_line(),
        live,
        storlab_session::stop_flag(),
    )
}

/// Runs this host's share (crates/challenge's `share`), and prints what happened.
fn take_part(
    mut store: Store,
    c: &StoredChallenge,
    share: Share,
    live: Option<&storlab_metrics::live::Live>,
    mib: bool,
    out: &OutputArgs,
) -> Result<u8> {
    let challenge_id = c.id;
    let observe = move |pools: &[String], read: &[u64], written: &[u64]| {
        if let Some(l) = live {
            for ((p, r), w) in pools.iter().zip(read).zip(written) {
                l.metrics.challenge_bytes(challenge_id, p, *r, *w);
            }
        }
    };
    let share = Share {
        observer: live.is_some().then_some(&observe as SampleObserver),
        ..share
    };
    let run_id = share::begin(&mut store, c, &share)?;
    if !out.json && !out.csv {
        eprintln!(
            "storlab: challenge {} ({}), {} pool(s), {} writer(s) and {} reader(s) here; run {run_id} in {}",
            c.id,
            c.uuid,
            c.spec.pools.len(),
            share.writers,
            share.readers,
            store.target()
        );
    }
    let shared = share.shared;
    let (writers, readers) = (share.writers, share.readers);
    let taken = share::take_part(store, c, run_id, &share, || {
        open_new(&out.db).map_err(|e| storlab_store::StoreError::Request(e.to_string()))
    });
    let (store, taken) = match taken {
        Err(storlab_challenge::ChallengeError::Away(why)) => {
            anyhow::bail!(
                "{why}: this host's share of challenge {} ended in order (partial files removed; the files it held are \
                 taken over by the next agent of this host). Once the database is back, go on with:\n  {}",
                c.id,
                go_on(c, out, writers, readers)
            );
        }
        other => other?,
    };
    print_outcome(&store, c, &taken, (ChallengeUnit::of(mib), (writers, readers)), out)?;
    // An agent is a service: stopped (SIGTERM, Ctrl-C) it has done what it was told.
    if shared && taken.outcome.interrupted {
        return Ok(0);
    }
    Ok(crate::running::code_of(taken.status))
}

/// The command that goes on with challenge `c` on this host.
fn go_on(c: &StoredChallenge, out: &OutputArgs, writers: u32, readers: u32) -> String {
    share::resume_command(c, out.db.db.as_deref(), writers, readers)
}

fn print_outcome(
    store: &Store,
    c: &StoredChallenge,
    t: &Taken,
    (unit, workers): (ChallengeUnit, (u32, u32)),
    out: &OutputArgs,
) -> Result<()> {
    let (o, acc, stats) = (&t.outcome, &t.account, &t.stats);
    if out.json {
        return print_json(&outcome_document(c, &share::agent_name(), t));
    }
    if out.csv {
        return print_csv(&stats_data(stats, unit));
    }
    let events = store.challenge_events(c.id)?;
    print!(
        "{}",
        outcome_text(c.id, &share::agent_name(), o, acc, stats, &events, unit)
    );
    for p in &t.problems {
        eprintln!("storlab: {p}");
    }
    if o.interrupted {
        eprintln!(
            "storlab: interrupted; go on with: {}",
            go_on(c, out, workers.0, workers.1)
        );
    } else if !t.ended {
        eprintln!(
            "storlab: this host is done; the challenge ends with the last agent ({} file(s) still in flight elsewhere)",
            acc.in_flight()
        );
    }
    Ok(())
}

fn stored(store: &Store, id: i64) -> Result<StoredChallenge> {
    store.challenge(id)?.ok_or_else(|| usage(store.no_challenge(id)))
}

/// `storlab challenge stats ID`.
fn stats(id: i64, ask: &Ask, mib: bool, out: &OutputArgs) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let s = storlab_challenge::stats::of_challenge(&store, &stored(&store, id)?, ask)?;
    let u = ChallengeUnit::of(mib);
    let doc = || serde_json::json!({ "challenge": id, "unit": u.name(), "statistics": s });
    emit(out, doc, || stats_data(&s, u), || stats_text(&s, u))?;
    Ok(0)
}

/// `storlab challenge show ID`.
fn show(id: i64, with_samples: bool, out: &OutputArgs) -> Result<u8> {
    let v = view(&open_existing(&out.db)?, id, "")?;
    emit(
        out,
        || v.document(with_samples),
        || account_table(&v.account),
        || v.text(),
    )?;
    Ok(0)
}

/// `storlab challenge list`.
fn list(out: &OutputArgs) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let listed = store.challenges()?;
    let t = || list_table(&listed);
    emit(out, || list_document(&listed), t, || t().to_text())?;
    if !out.json && !out.csv {
        eprintln!("{} challenge(s) in {}", listed.len(), store.target());
    }
    Ok(0)
}

/// A challenge as the database holds it, for `show` and the HTML report (`missing` ends the
/// refusal of a challenge that is not there).
pub fn view(store: &Store, id: i64, missing: &str) -> Result<ChallengeView> {
    let c = store
        .challenge(id)?
        .ok_or_else(|| usage(format!("{}{missing}", store.no_challenge(id))))?;
    let samples = store.challenge_samples(id, c.spec.pools.len())?;
    Ok(ChallengeView {
        account: host::account(store, &c)?,
        events: store.challenge_events(id)?,
        runs: store.challenge_runs(id)?,
        clocks: store.clock_readings(&format!("challenge {id}"))?,
        stats: compute(&samples, &c.spec, Window::All, &[]),
        samples,
        challenge: c,
    })
}
