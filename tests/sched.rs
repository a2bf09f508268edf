//! `storlab sched plan`: the real binary on schedule files, RAL's pool planned as seed 000
//! reasons (ten servers, a verify costing one 13.9 %, a 5 % budget: three at once), mistakes
//! refused with their line and exit 2.

mod common;

use common::{stderr, Scratch};

fn schedule(budget: &str, servers: usize) -> String {
    let mut t = format!(
        "[schedule]\nlease = \"60s\"\n\n[[pool]]\nname = \"P1\"\nbudget = \"{budget}\"\ncost = \"13.9%\"\nduration = \"6h\"\nduration_loaded = \"9h\"\nwindows = [\"Mon-Fri 22:00-06:00\", \"Sat-Sun 00:00-24:00\"]\n"
    );
    for i in 0..servers {
        t += &format!("\n[[pool.server]]\nname = \"ds{i:02}\"\ntask = \"btrfs-scrub:/srv/data\"\n");
    }
    t
}

#[test]
fn a_pools_concurrency_and_round_follow_its_budget_and_cost() {
    let s = Scratch::new();
    let f = s.path().join("schedule.toml");
    std::fs::write(&f, schedule("5%", 10)).unwrap();
    let v = s.json(&["sched", "plan", f.to_str().unwrap()]);
    let p = &v["pools"][0];
    assert_eq!(p["k"], 3, "{v}");
    assert!((p["pool_loss"].as_f64().unwrap() - 4.17).abs() < 0.01, "{v}");
    assert_eq!(p["round_loaded"], 4.0 * 9.0 * 3600.0, "⌈10/3⌉ = 4 tasks of 9 h: {v}");
    // Monday to Friday nights and the weekend, the Friday night's hours counted once.
    assert_eq!(p["window_hours"], 82.0, "{v}");
    assert_eq!(v["lease_seconds"], 60.0);
    let out = s.storlab(&["sched", "plan", f.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(
        common::stdout(&out).contains("P1: 3 at once"),
        "{}",
        common::stdout(&out)
    );
}

#[test]
fn a_schedule_no_server_may_verify_in_is_refused_with_its_line() {
    let s = Scratch::new();
    let f = s.path().join("schedule.toml");
    std::fs::write(&f, schedule("1%", 10)).unwrap();
    let out = s.storlab(&["sched", "plan", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 7") && stderr(&out).contains("no server may verify within that budget"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        &f,
        schedule("5%", 10).replace("btrfs-scrub:/srv/data", "fsck:/srv/data"),
    )
    .unwrap();
    let out = s.storlab(&["sched", "plan", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("line 14") && stderr(&out).contains("unknown kind 'fsck'"),
        "{}",
        stderr(&out)
    );
    assert!(s.nothing_stored());
}
