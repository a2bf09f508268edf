//! bench/soak, two minutes of it: three challenge agents, the monitor and a scheduler's agent
//! as separate processes with samples every 100 ms, through the fault plan — on SQLite in the
//! suite's first pass (an agent killed and started again, a pool unmounted on one agent's
//! host, the results file's filesystem filled and freed, the file locked by another process
//! past SQLite's wait), on a PostgreSQL server of the soak's own in the second (also: every backend
//! terminated, the server restarted twice, once for longer than a lease, a host's clock 30 s
//! ahead). The soak checks everything itself (the account, the pools, the statistics against
//! its own recomputation from the raw samples, the monitor's sweeps without a gap, nothing left
//! behind) and exits 1 naming what failed; bench/soak-results.md holds the half-hour run.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::process::Command;

#[test]
fn two_minutes_of_the_soak_pass_every_check() {
    let db = if common::on_postgres() { "postgres" } else { "sqlite" };
    let out = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/soak"))
        .args(["--minutes", "2", "--db", db, "--storlab", common::bin()])
        .output()
        .expect("python3 bench/soak");
    let (so, se) = (common::stdout(&out), common::stderr(&out));
    assert!(out.status.success(), "the soak on {db} failed:\n{se}\n{so}");
    let figures: serde_json::Value = serde_json::from_str(&so).expect("the soak's figures");
    assert!(figures["files_verified"].as_u64().unwrap() > 0, "{figures}");
    // PostgreSQL stopped twice. On SQLite the file locked past SQLite's wait is an outage for
    // every agent; its filesystem full is one only when SQLite needs new room meanwhile (a
    // long-lived process reuses its log's blocks), so it is not counted on here.
    let outages = figures["outages_ridden_out"]["agent-A"].as_u64().unwrap();
    let least = if db == "postgres" { 2 } else { 1 };
    assert!(
        outages >= least,
        "agent A rode out {outages} outages on {db}: {figures}"
    );
}
