//! `storlab sweep`: the same phases at every point of one or more varied parameters, checked
//! before anything runs, stored as one study, printed as a table.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use serde_json::Value;

mod common;
use common::*;

#[test]
fn worker_count_sweep_is_one_study() {
    let s = Scratch::new();
    let d = s.data();
    let out = s.storlab(&[
        "sweep",
        "--vary",
        "threads=1..4",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "write",
        "--phase",
        "randread",
        "--bs",
        "256k",
        "--size",
        "4m",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The study as stored: each member a point with its values.
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "sweep");
    let members = v["members"].as_array().unwrap();
    let threads: Vec<&str> = members
        .iter()
        .map(|m| {
            let values = &m["role"]["point"]["values"];
            assert_eq!(values[0][0], "threads");
            values[0][1].as_str().unwrap()
        })
        .collect();
    assert_eq!(threads, ["1", "2", "4"]);
    // Each point's run really ran with that many workers.
    for (m, t) in members.iter().zip(&threads) {
        let run = s.json(&["results", "show", &m["run_id"].to_string()]);
        let workers = run["phases"][0]["params"]["plan"]["workers"].as_array().unwrap().len();
        assert_eq!(workers.to_string(), *t);
        assert_eq!(run["phases"][1]["kind"], "randread");
        assert_eq!(run["kind"], "sweep");
    }
    assert!(v["params"]["note"].as_str().unwrap().contains("three times"));
    // The study reads back the same.
    assert_eq!(s.json(&["results", "study", &v["id"].to_string()]), v);
    assert!(
        std::fs::read_dir(&d).unwrap().next().is_none(),
        "the points' files are removed"
    );
}

#[test]
fn size_by_block_sweep_is_iozones_matrix() {
    let s = Scratch::new();
    let d = s.data();
    let out = s.storlab(&[
        "sweep",
        "--vary",
        "size=256k..1m",
        "--vary",
        "bs=64k..512k",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "write",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // 3 file sizes × 4 block sizes, less 256k files with 512k blocks.
    assert_eq!(v["kind"], "sweep-matrix");
    assert_eq!(v["members"].as_array().unwrap().len(), 11);
    assert_eq!(v["params"]["skipped"], 1);
    let page = s.path().join("m.html");
    let out = s.storlab(&["report", "--study", &v["id"].to_string(), "-o", page.to_str().unwrap()]);
    assert!(out.status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("data-key=\"heat write\""));
    assert_eq!(html.matches("data-value=").count(), 11, "one coloured cell per point");
}

#[test]
fn bad_sweeps_are_refused_before_anything_runs() {
    let s = Scratch::new();
    let d = s.data();
    let t = d.to_str().unwrap();
    for (vary, needle) in [
        (vec!["--vary", "colour=1,2"], "not a job setting"),
        (vec!["--vary", "threads=8..1"], "downwards"),
        (vec!["--vary", "threads=1,2", "--vary", "threads=4"], "varied twice"),
        (vec!["--vary", "bs=4k,1q"], "1q"),
        (vec!["--vary", "size=4k", "--vary", "bs=64k"], "no point is left"),
    ] {
        let mut a = vec!["sweep", "--target", t, "--phase", "write"];
        a.extend(vary.iter().copied());
        let out = s.storlab(&a);
        assert_eq!(out.status.code(), Some(2), "{vary:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{vary:?}: {}", stderr(&out));
    }
    assert!(s.nothing_stored(), "nothing stored");
    assert!(std::fs::read_dir(&d).unwrap().next().is_none());
}
