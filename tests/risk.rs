//! `storlab risk`: the real binary. The textbook's mirrored pair, a RAID 6 fleet whose chances
//! grow with the verify interval and with a schedule's round, the simulation's check, the HTML
//! report in Chromium, impossible parameters refused by name.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use common::{chromium, stderr, Scratch};

#[test]
fn the_textbooks_mirrored_pair_loses_data_after_57000_years() {
    let s = Scratch::new();
    // Silberschatz, Korth and Sudarshan, Database System Concepts: MTTF 100,000 h, repair 10 h,
    // mean time to data loss 100,000² / (2 × 10) = 500 × 10⁶ h, "or 57,000 years".
    let v = s.json(&[
        "risk",
        "--raid",
        "1",
        "--drives",
        "2",
        "--mttf",
        "100000h",
        "--rebuild",
        "10h",
        "--latent-rate",
        "0/year",
    ]);
    let years = v["summary"][0]["mttdl_years"].as_f64().unwrap();
    assert_eq!((years / 1000.0).round(), 57.0, "{v}");
    assert!((years * 8766.0 / 500e6 - 1.0).abs() < 0.001, "{years} years");
}

#[test]
fn a_fleets_chance_grows_with_the_verify_interval_and_the_rebuild_under_load() {
    let s = Scratch::new();
    let v = s.json(&[
        "risk",
        "--raid",
        "6",
        "--drives",
        "12",
        "--capacity",
        "16TB",
        "--rebuild",
        "30h",
        "--rebuild-loaded",
        "60h",
        "--verify-interval",
        "30d",
        "--verify-duration",
        "9h",
        "--arrays",
        "100",
        "--monte-carlo",
        "100",
    ]);
    let sum = v["summary"].as_array().unwrap();
    let (idle, loaded) = (&sum[0], &sum[1]);
    assert!(loaded["loss_array"].as_f64() > idle["loss_array"].as_f64(), "{v}");
    // A fleet of 100 independent arrays: 1 − (1 − p)^100.
    let p = idle["loss_array"].as_f64().unwrap();
    let fleet = idle["loss_fleet"].as_f64().unwrap();
    assert!(
        (fleet - (1.0 - (1.0 - p).powi(100))).abs() < 1e-12 * fleet.max(1e-30) + 1e-15,
        "{v}"
    );
    let by: Vec<f64> = v["by_interval"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["loss_array"].as_f64().unwrap())
        .collect();
    assert!(
        by.windows(2).all(|w| w[0] < w[1]),
        "longer intervals, larger chances: {by:?}"
    );
    assert_eq!(
        v["by_interval"].as_array().unwrap().last().unwrap()["verify_interval_hours"],
        serde_json::Value::Null
    );
    // The default failure rate is seed 003's: one per 1,000 drives per month.
    assert!(
        (v["failures_per_drive_year"].as_f64().unwrap() - 0.012).abs() < 1e-9,
        "{v}"
    );
    assert_eq!(v["check"]["agrees"], true, "{}", v["check"]);
}

#[test]
fn a_schedules_k_sets_the_interval_and_the_report_draws_it() {
    let s = Scratch::new();
    let mut t = String::from(
        "[[pool]]\nname = \"P\"\nbudget = \"6%\"\ncost = \"10%\"\nduration = \"6h\"\nduration_loaded = \"12h\"\n",
    );
    for i in 0..10 {
        t += &format!("[[pool.server]]\nname = \"s{i}\"\ntask = \"cmd:true\"\n");
    }
    let f = s.path().join("schedule.toml");
    std::fs::write(&f, t).unwrap();
    let page = s.path().join("risk.html");
    let v = s.json(&[
        "risk",
        "--raid",
        "6",
        "--drives",
        "10",
        "--rebuild",
        "40h",
        "--schedule",
        f.to_str().unwrap(),
        "--pool",
        "P",
        "--arrays",
        "10",
        "--html",
        page.to_str().unwrap(),
    ]);
    // k = 6 (10 servers at 10 %: six cost the pool 6 %): a round of ⌈10/6⌉ = 2 verifies of 12 h.
    assert!(v["verify_source"].as_str().unwrap().contains("k = 6"), "{v}");
    assert_eq!(v["summary"][0]["verify_interval_hours"], 24.0, "{v}");
    let by_k = v["by_k"].as_array().unwrap();
    assert_eq!(by_k.len(), 10);
    assert_eq!(by_k[0]["verify_interval_hours"], 120.0, "k = 1: ten verifies of 12 h");
    let chances: Vec<f64> = by_k.iter().map(|r| r["loss_fleet"].as_f64().unwrap()).collect();
    assert!(
        chances[0] > chances[9],
        "more at once, shorter rounds, smaller chances: {chances:?}"
    );
    assert!(
        by_k[6]["label"].as_str().unwrap().contains("over the 6.0 % budget"),
        "{}",
        by_k[6]
    );
    let work = s.path().join("chromium");
    std::fs::create_dir(&work).unwrap();
    let loaded = chromium(&page, &work, None);
    assert!(loaded.console.is_empty(), "{:?}", loaded.console);
    assert!(loaded.page_requests.is_empty(), "{:?}", loaded.page_requests);
    assert_eq!(
        loaded.dom.matches("<svg class=\"chart\"").count(),
        2,
        "the interval plot and the k plot"
    );
    assert!(loaded.dom.contains("Risk of data loss: RAID 6") && loaded.dom.contains("k = 6, within the 6.0 % budget"));
}

#[test]
fn impossible_parameters_are_refused_by_name() {
    let s = Scratch::new();
    for (args, want) in [
        (
            vec!["--raid", "6", "--drives", "3", "--rebuild", "1h"],
            "tolerates 2 failed drive(s) and needs at least 4 drives",
        ),
        (
            vec!["--raid", "1", "--drives", "1", "--rebuild", "1h"],
            "needs at least 2 drives",
        ),
        (
            vec!["--drives", "8", "--rebuild", "1h", "--failure-rate=-1%/year"],
            "a negative rate",
        ),
        (
            vec!["--drives", "8", "--rebuild", "1h", "--latent-rate=-0.1/year"],
            "a negative rate",
        ),
        (
            vec!["--drives", "8", "--rebuild", "1h", "--failure-rate", "lots"],
            "a share per period such as 0.1%/month",
        ),
        (vec!["--drives", "8"], "the rebuild's time: give --rebuild"),
        (
            vec!["--raid", "7", "--drives", "8", "--rebuild", "1h"],
            "one of 1, 5, 6, 10",
        ),
        (
            vec!["--drives", "8", "--rebuild", "1h", "--arrays", "0"],
            "a fleet of 0 arrays",
        ),
    ] {
        let mut a = vec!["risk"];
        a.extend(&args);
        let out = s.storlab(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
}

/// The rebuild's times from a stored cost-to-the-task study (storlab impact --reverse): a
/// stand-in rebuild of one second (a command task), idle and with a job looping beside it.
#[test]
fn the_rebuild_times_come_from_a_stored_reverse_study() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new();
    let task = s.path().join("rebuild.sh");
    std::fs::write(
        &task,
        "#!/bin/sh\ncase $1 in\nstart) sleep 1 & echo $! > \"$2\" ;;\nstatus) if kill -0 $(cat \"$2\") 2>/dev/null; then echo running; else echo done; fi ;;\nstop) kill $(cat \"$2\") 2>/dev/null; true ;;\nesac\n",
    )
    .unwrap();
    std::fs::set_permissions(&task, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (t, pid) = (task.display(), s.path().join("pid"));
    let pid = pid.display();
    let data = s.data();
    let v = s.json(&[
        "impact",
        "--reverse",
        "--task",
        &format!("cmd:{t} start {pid}|{t} status {pid}|{t} stop {pid}"),
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "randread",
        "--size",
        "4m",
        "--runtime",
        "200ms",
    ]);
    let id = v["id"].as_i64().unwrap_or_else(|| panic!("{v}"));
    let (idle, loaded) = (
        v["params"]["idle_seconds"].as_f64().unwrap(),
        v["params"]["loaded_seconds"].as_f64().unwrap(),
    );
    let r = s.json(&[
        "risk",
        "--drives",
        "8",
        "--rebuild-study",
        &id.to_string(),
        "--verify-interval",
        "7d",
    ]);
    assert!(
        r["rebuild_source"]
            .as_str()
            .unwrap()
            .starts_with(&format!("study {id}")),
        "{r}"
    );
    assert!(
        (r["summary"][0]["rebuild_hours"].as_f64().unwrap() * 3600.0 - idle).abs() < 1e-6,
        "{r}"
    );
    assert!(
        (r["summary"][1]["rebuild_hours"].as_f64().unwrap() * 3600.0 - loaded).abs() < 1e-6,
        "{r}"
    );
    // A held study gives the time under the held load; the idle time is given, or taken as the
    // same and said so.
    let held = s.json(&[
        "impact",
        "--held",
        "--task",
        &format!("cmd:{t} start {pid}|{t} status {pid}|{t} stop {pid}"),
        "--before",
        "300ms",
        "--after",
        "300ms",
        "--rate",
        "200iops",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "randread",
        "--size",
        "4m",
    ]);
    let hid = held["id"].as_i64().unwrap_or_else(|| panic!("{held}"));
    let span = &held["params"]["spans"][0];
    let secs = span["end"].as_f64().unwrap() - span["start"].as_f64().unwrap();
    let r = s.json(&[
        "risk",
        "--drives",
        "8",
        "--rebuild-study",
        &hid.to_string(),
        "--rebuild",
        "0.5s",
    ]);
    assert!(
        (r["summary"][1]["rebuild_hours"].as_f64().unwrap() * 3600.0 - secs).abs() < 1e-6,
        "{r}"
    );
    assert!(
        (r["summary"][0]["rebuild_hours"].as_f64().unwrap() * 3600.0 - 0.5).abs() < 1e-9,
        "{r}"
    );
    let r = s.json(&["risk", "--drives", "8", "--rebuild-study", &hid.to_string()]);
    assert!(
        r["rebuild_source"]
            .as_str()
            .unwrap()
            .contains("idle not measured, taken as the same"),
        "{r}"
    );
    // A study of another kind is refused, saying which kind is needed.
    let sweep = s.json(&[
        "sweep",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "randread",
        "--size",
        "1m",
        "--runtime",
        "50ms",
        "--vary",
        "bs=4k,8k",
    ]);
    let sid = sweep["study"]["id"]
        .as_i64()
        .or(sweep["id"].as_i64())
        .unwrap_or_else(|| panic!("{sweep}"));
    let out = s.storlab(&["risk", "--drives", "8", "--rebuild-study", &sid.to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("storlab impact --reverse"), "{}", stderr(&out));
}
