//! `storlab compare`: one job on two targets in rounds until each figure is decided. A real
//! difference (one loop device behind a cgroup's read limit) is decided in a few rounds with
//! the right sign, and every verdict equals this test's own recomputation from the runs stored
//! beside it; two targets that do not differ are never called different beyond the stated
//! error, by this test's own simulation of the design and by a real run on tmpfs; bad requests
//! are refused before anything runs.

use std::sync::Mutex;

use serde_json::Value;

mod common;
use common::stats::t_critical;
use common::*;

/// One loop-device test at a time: a cgroup's limit and the devices' timing are the machine's.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The verdict of `look` pairs, recomputed: the geometric mean of the ratios B/A and its
/// interval exp(mean ± t(1 − α′/2, n − 1)·s/√n) of the log ratios.
fn recomputed(a: &[f64], b: &[f64], nominal: f64) -> (f64, f64, f64) {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| (y / x).ln()).collect();
    let n = d.len() as f64;
    let m = d.iter().sum::<f64>() / n;
    let sd = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let h = t_critical(nominal, n - 1.0) * sd / n.sqrt();
    (m.exp(), (m - h).exp(), (m + h).exp())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Every verdict of a stored compare against this test's recomputation: the rounds' figures
/// are the member runs' (read from `results show`), the ratio and interval those of the log
/// ratios at the look that decided it, the call what the interval says against the margin.
fn recompute(s: &Scratch, study: &Value) {
    let p = &study["params"];
    let names: Vec<&str> = p["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let nominal = f(&p["design"]["nominal_alpha"]);
    let margin = f(&p["margin"]);
    // The members: each round's run on each side.
    let mut runs: Vec<[i64; 2]> = Vec::new();
    for m in study["members"].as_array().unwrap() {
        let side = names.iter().position(|n| *n == m["role"]["side"]["target"]).unwrap();
        let round = m["role"]["side"]["round"].as_u64().unwrap() as usize;
        if runs.len() < round {
            runs.resize(round, [0, 0]);
        }
        runs[round - 1][side] = m["run_id"].as_i64().unwrap();
    }
    let shown: Vec<[Value; 2]> = runs
        .iter()
        .map(|r| r.map(|id| s.json(&["results", "show", &id.to_string()])))
        .collect();
    for v in p["verdicts"].as_array().unwrap() {
        let phase: usize = v["phase"].as_str().unwrap().split(' ').next().unwrap().parse().unwrap();
        let figure = |run: &Value| -> f64 {
            let r = &run["phases"][phase - 1]["result"];
            match v["figure"].as_str().unwrap() {
                "MiB/s" => f(&r["all_done"]["bytes_per_sec"]) / 1048576.0,
                "IOPS" => f(&r["all_done"]["iops"]),
                "lat p50" => f(&r["latency"]["p50_ns"]) / 1e3,
                "lat p99" => f(&r["latency"]["p99_ns"]) / 1e3,
                other => panic!("a figure this test does not know: {other}"),
            }
        };
        let a: Vec<f64> = shown.iter().map(|r| figure(&r[0])).collect();
        let b: Vec<f64> = shown.iter().map(|r| figure(&r[1])).collect();
        let stored = |k: &str| -> Vec<f64> { v[k].as_array().unwrap().iter().map(f).collect() };
        assert_eq!(stored("a").len(), a.len());
        for (x, y) in stored("a").iter().zip(&a).chain(stored("b").iter().zip(&b)) {
            assert!(close(*x, *y), "{v}: a round's figure {x} is not its run's {y}");
        }
        let n = v["runs"].as_u64().unwrap() as usize;
        if n < 3 {
            continue;
        }
        let (ratio, lo, hi) = recomputed(&a[..n], &b[..n], nominal);
        assert!(close(ratio, f(&v["ratio"])), "{v}: ratio {ratio}");
        assert!(
            close(lo, f(&v["ci"][0])) && close(hi, f(&v["ci"][1])),
            "{v}: {lo} to {hi}"
        );
        let more = v["more_is_better"].as_bool().unwrap();
        let want = if lo >= 1.0 / (1.0 + margin) && hi <= 1.0 + margin {
            "equivalent"
        } else if (lo > 1.0 && more) || (hi < 1.0 && !more) {
            names[1]
        } else if lo > 1.0 || hi < 1.0 {
            names[0]
        } else {
            "undecided"
        };
        assert_eq!(v["verdict"], want, "{v}");
    }
}

#[test]
fn a_throttled_target_is_decided_slower_in_a_few_rounds_with_the_right_sign() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    // Images in memory: the unthrottled side is steady, so what the verdict sees is the limit.
    let images = tempfile::tempdir_in("/dev/shm").unwrap();
    let fast = loop_device(&images.path().join("fast.img"), 64 << 20);
    let held = loop_device(&images.path().join("held.img"), 64 << 20);
    let cg = Cgroup::new("blkio");
    cg.limit_read_iops(&held.dev, 300);
    let fast_t = format!("fast={}", fast.dev);
    let held_t = format!("held={}", held.dev);
    let args = [
        "compare",
        "--target",
        &fast_t,
        "--target",
        &held_t,
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "32m",
        "--direct",
        "--runtime",
        "1s",
        "--max-repeats",
        "6",
        "--json",
        "--db",
        &s.db(),
    ];
    let out = cg.command(bin(), &args).env("TMPDIR", s.path()).output().unwrap();
    // 0 when every figure is decided, 5 when a latency stayed open; never anything else.
    assert!(matches!(out.status.code(), Some(0 | 5)), "{}", stderr(&out));
    let study: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(study["kind"], "compare", "{study}");
    let p = &study["params"];
    assert_eq!(p["names"], serde_json::json!(["fast", "held"]));
    for v in p["verdicts"].as_array().unwrap() {
        if v["figure"] == "MiB/s" || v["figure"] == "IOPS" {
            // Held to 300 reads a second against an unthrottled loop device: one of the first
            // looks decides it, for the unthrottled one, and the ratio's interval is below 1.
            assert_eq!(v["verdict"], "fast", "{v}");
            assert!(v["decided_at"].as_u64() <= Some(4), "{v}");
            assert!(f(&v["ci"][1]) < 0.5 && f(&v["ci"][0]) > 0.0, "{v}");
        }
    }
    // Two runs a round, in alternating order, each a member with its side and round.
    let members = study["members"].as_array().unwrap();
    assert_eq!(members.len() as u64, 2 * p["rounds"].as_u64().unwrap());
    let order: Vec<&str> = members
        .iter()
        .map(|m| m["role"]["side"]["target"].as_str().unwrap())
        .collect();
    assert_eq!(&order[..4], ["fast", "held", "held", "fast"]);
    recompute(&s, &study);
    // The text says the same, naming the targets.
    let text = stdout(&s.storlab(&["results", "study", &study["id"].to_string()]));
    assert!(text.contains("held (") && text.contains("fast ("), "{text}");
    assert!(text.contains("fast faster than held"), "{text}");

    // The page for whoever decides: its title, the targets by name on every verdict's bar, the
    // warnings the runs carry; rendered by a real browser, nothing fetched.
    let html = s.path().join("choice.html");
    let id = study["id"].to_string();
    let title = "fast or held for the new array";
    let out = s.storlab(&["report", "--study", &id, "--title", title, "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = chromium(&html, s.path(), None);
    assert!(page.console.is_empty(), "{:?}", page.console);
    assert!(page.page_requests.is_empty(), "{:?}", page.page_requests);
    assert!(page.dom.contains(&format!("<h1>{title}</h1>")), "the title");
    let bars = page.dom.matches("aria-label=\"held/fast ").count();
    let drawn = p["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["ratio"].is_number())
        .count();
    assert_eq!(bars, drawn, "a bar per verdict with a ratio, named by the targets");
    assert!(page.dom.contains("fast higher") && page.dom.contains("held higher"));
    for w in p["warnings"].as_array().unwrap() {
        let w = w
            .as_str()
            .unwrap()
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(page.dom.contains(&w), "the warning {w} on the page");
    }
}

/// The procedure `storlab compare` follows, by this test's own simulation (its own generator
/// and t quantiles): pairs whose log ratio is normal around 0 (the targets do not differ), looked
/// at from round 3 to `last` with the stored design's nominal level; the share of sequences
/// called different.
fn false_difference_rate(nominal: f64, last: usize, sd: f64, margin: f64, sequences: usize) -> f64 {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        ((state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let mut normal = move || {
        let (u, v) = (uniform(), uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let crit: Vec<f64> = (0..=last)
        .map(|n| {
            if n >= 3 {
                t_critical(nominal, n as f64 - 1.0)
            } else {
                0.0
            }
        })
        .collect();
    let bound = (1.0 + margin).ln();
    let mut different = 0;
    for _ in 0..sequences {
        let (mut sum, mut sq) = (0.0, 0.0);
        for (n, c) in crit.iter().enumerate().skip(1) {
            let d = sd * normal();
            sum += d;
            sq += d * d;
            if n < 3 {
                continue;
            }
            let nf = n as f64;
            let m = sum / nf;
            let h = c * ((sq - nf * m * m) / (nf - 1.0)).max(0.0).sqrt() / nf.sqrt();
            if m - h >= -bound && m + h <= bound {
                break; // equivalent
            }
            if m - h > 0.0 || m + h < 0.0 {
                different += 1;
                break;
            }
        }
    }
    different as f64 / sequences as f64
}

#[test]
fn identical_targets_are_not_called_different_beyond_the_stated_error() {
    let s = Scratch::new();
    let (a, b) = (s.data().join("a"), s.data().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let (ta, tb) = (format!("one={}", a.display()), format!("two={}", b.display()));
    let out = s.storlab(&[
        "compare",
        "--target",
        &ta,
        "--target",
        &tb,
        "--phase",
        "write",
        "--bs",
        "64k",
        "--size",
        "4m",
        "--max-repeats",
        "5",
        "--confidence",
        "0.999",
        "--margin",
        "10%",
        "--json",
    ]);
    assert!(matches!(out.status.code(), Some(0 | 5)), "{}", stderr(&out));
    let study: Value = serde_json::from_slice(&out.stdout).unwrap();
    // At 99.9 % each of its four figures is called different by chance at most once in a
    // thousand such runs.
    for v in study["params"]["verdicts"].as_array().unwrap() {
        assert!(
            v["verdict"] == "equivalent" || v["verdict"] == "undecided",
            "two directories of one tmpfs called different: {v}"
        );
        if v["verdict"] == "undecided" {
            // Undecided says what it lacked: the difference it could tell and the rounds the
            // margin would take; never a blank interval.
            assert!(
                v["smallest_detectable_pct"].as_f64().is_some() || v["runs"].as_u64() < Some(3),
                "{v}"
            );
            assert!(v["reading"].as_str().unwrap().contains("undecided"), "{v}");
        }
    }
    recompute(&s, &study);

    // Many repetitions, simulated: at the design's nominal level the procedure calls equal
    // targets different at most 1 − confidence of the time, whatever the spread and margin.
    let design = &study["params"]["design"];
    let (nominal, last) = (
        f(&design["nominal_alpha"]),
        design["max_repeats"].as_u64().unwrap() as usize,
    );
    let alpha = 1.0 - f(&design["confidence"]);
    let sims = 40_000;
    let se = (alpha * (1.0 - alpha) / sims as f64).sqrt();
    for (sd, margin) in [(0.02, 0.10), (0.10, 0.10), (0.30, 0.05)] {
        let rate = false_difference_rate(nominal, last, sd, margin, sims);
        assert!(
            rate <= alpha + 3.0 * se,
            "sd {sd}, margin {margin}: called different {rate}"
        );
    }
    // And at the default confidence of 95 % over ten rounds, as `storlab compare` calibrates it.
    let out = s.storlab(&[
        "compare",
        "--target",
        &ta,
        "--target",
        &tb,
        "--phase",
        "write",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--max-repeats",
        "10",
        "--max-time",
        "0s",
        "--json",
    ]);
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let nominal = f(&d["params"]["design"]["nominal_alpha"]);
    let se = (0.05f64 * 0.95 / sims as f64).sqrt();
    for (sd, margin) in [(0.05, 0.05), (0.5, 0.05)] {
        let rate = false_difference_rate(nominal, 10, sd, margin, sims);
        assert!(
            rate <= 0.05 + 3.0 * se,
            "sd {sd}, margin {margin}: called different {rate}"
        );
    }
}

#[test]
fn bad_requests_are_refused_before_anything_runs() {
    let s = Scratch::new();
    let (a, b) = (s.data().join("a"), s.data().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let same_a = format!("x={a}");
    let same_b = format!("x={b}");
    let missing = format!("{b}/not-there");
    for (args, says) in [
        (
            vec!["--target", a],
            "takes two targets (--target A --target B), 1 given",
        ),
        (
            vec!["--target", &same_a, "--target", &same_b],
            "both targets are named 'x'",
        ),
        (vec!["--target", a, "--target", b, "--margin", "150%"], "--margin 150%"),
        (
            vec!["--target", a, "--target", b, "--margin", "lots"],
            "--margin lots: expected a percentage",
        ),
        (
            vec!["--target", a, "--target", b, "--max-repeats", "2"],
            "the first look is after round 3",
        ),
        (
            vec!["--target", a, "--target", b, "--confidence", "1.5"],
            "--confidence 1.5",
        ),
        (vec!["--target", a, "--target", &missing], "not-there"),
    ] {
        let mut all = vec!["compare", "--phase", "read", "--size", "1m"];
        all.extend(args);
        let out = s.storlab(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{all:?}: {}", stderr(&out));
    }
    assert!(
        !std::path::Path::new(&s.db()).exists() || s.run_count() == Some(0),
        "nothing stored"
    );
    assert!(std::fs::read_dir(a).unwrap().next().is_none(), "nothing written to {a}");
}
