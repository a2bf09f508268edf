//! `storlab report` in a real headless Chromium (Debian's chromium): it loads with no console
//! message and no network request of its own, a screenshot of it is not blank, and plots of the
//! same kind carry one shared axis maximum; what Chromium's own layout says of every chart
//! (labels inside and apart, round ticks, coinciding series all on screen). Plus snapshot tests of the structure of the JSON,
//! CSV and HTML outputs (tests/snapshots; UPDATE_SNAPSHOTS=1 rewrites them).
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

mod common;
use common::*;

fn quick_run(s: &Scratch, tag: &str) -> i64 {
    let d = s.data();
    let v = s.json(&[
        "run",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "write",
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "8m",
        "--runtime",
        "1s",
        "--interval",
        "100ms",
        "--rate",
        "3000iops",
        "--tag",
        tag,
    ]);
    v["id"].as_i64().unwrap()
}

/// The report's rule for an axis top: the smallest of 1, 2, 2.5, 5 × 10^k at or above v.
/// A phase's samples as the report draws them: an interval shorter than half the usual
/// (median) one is a sliver, merged into the one before it of the same kind (ramp or not):
/// its bytes and I/Os added, its end taken. Alone, its few I/Os over a few milliseconds make a
/// rate that means nothing.
fn merged(samples: &[Value]) -> Vec<Value> {
    let dt = |x: &Value| x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap();
    let mut lengths: Vec<f64> = samples.iter().map(dt).collect();
    lengths.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let Some(median) = lengths.get(lengths.len() / 2).copied() else {
        return Vec::new();
    };
    let mut out: Vec<Value> = Vec::new();
    for x in samples {
        match out.last_mut() {
            Some(prev) if dt(x) < median / 2.0 && prev["ramp"] == x["ramp"] => {
                for k in ["bytes_read", "bytes_written", "ops_read", "ops_written"] {
                    prev[k] = Value::from(prev[k].as_u64().unwrap() + x[k].as_u64().unwrap());
                }
                prev["t_end"] = x["t_end"].clone();
            }
            _ => out.push(x.clone()),
        }
    }
    out
}

fn nice(v: f64) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|x| *x >= v * (1.0 - 1e-12))
        .unwrap()
}

#[test]
fn report_loads_cleanly_in_chromium_with_shared_scales() {
    let s = Scratch::new();
    let a: Vec<i64> = (0..2).map(|_| quick_run(&s, "set=a")).collect();
    let b: Vec<i64> = (0..2).map(|_| quick_run(&s, "set=b")).collect();
    let page = s.path().join("report.html");
    let out = s.storlab(&[
        "report",
        "--compare",
        "set=a",
        "--compare",
        "set=b",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    // Self-contained: nothing that could fetch (the SVG namespace is a name, not a fetch).
    for bad in ["<script", "<link", "src=", "url(", "@import", "https://"] {
        assert!(!html.contains(bad), "the report contains {bad}");
    }
    assert_eq!(
        html.matches("http://").count(),
        html.matches("http://www.w3.org/2000/svg").count()
    );

    // A control page proves that the checks below see what they look for.
    let control = s.path().join("control.html");
    std::fs::write(
        &control,
        "<!doctype html><img src=\"http://127.0.0.1:9/x.png\"><script>console.error('control')</script>",
    )
    .unwrap();
    let c = chromium(&control, &s.path().join("c"), None);
    assert!(
        c.console.iter().any(|l| l.contains("control")),
        "console seen: {:?}",
        c.console
    );
    assert!(
        c.page_requests.iter().any(|u| u.contains("127.0.0.1:9")),
        "{:?}",
        c.page_requests
    );

    let loaded = chromium(&page, &s.path().join("r"), None);
    assert!(loaded.console.is_empty(), "console: {:?}", loaded.console);
    assert!(
        loaded.page_requests.is_empty(),
        "the report fetched: {:?}",
        loaded.page_requests
    );
    assert!(loaded.dom.contains("<h2>Comparison</h2>"));

    // Shared scales: every "randread MiB/s" panel (one per run) has the same axis maximum, the
    // nice ceiling of the highest interval in any of the four runs.
    let samples: Vec<Value> = a
        .iter()
        .chain(&b)
        .map(|id| s.json(&["results", "show", &id.to_string(), "--samples"]))
        .collect();
    let highest = |kind: &str, f: &dyn Fn(&Value) -> f64| {
        samples
            .iter()
            .flat_map(|r| {
                r["phases"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["kind"] == kind)
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .flat_map(|p| merged(p["result"]["samples"].as_array().unwrap()))
            .map(|x| f(&x))
            .fold(0.0, f64::max)
    };
    let mibs = |x: &Value| {
        let dt = x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap();
        (x["bytes_read"].as_f64().unwrap() + x["bytes_written"].as_f64().unwrap()) / dt / 1048576.0
    };
    let iops = |x: &Value| {
        let dt = x["t_end"].as_f64().unwrap() - x["t_start"].as_f64().unwrap();
        (x["ops_read"].as_f64().unwrap() + x["ops_written"].as_f64().unwrap()) / dt
    };
    let got = charts(&loaded.dom);
    let mut by_key: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (k, y) in &got {
        by_key.entry(k.clone()).or_default().insert(y.to_string());
    }
    for kind in ["write", "randread"] {
        for (metric, f) in [("MiB/s", &mibs as &dyn Fn(&Value) -> f64), ("IOPS", &iops)] {
            let key = format!("{kind} {metric}");
            let ys = &by_key[&key];
            assert_eq!(ys.len(), 1, "{key}: one shared maximum, got {ys:?}");
            let want = nice(highest(kind, f));
            assert_eq!(ys.iter().next().unwrap().parse::<f64>().unwrap(), want, "{key}");
        }
    }
    assert_eq!(
        got.iter().filter(|(k, _)| k == "randread MiB/s").count(),
        4,
        "one panel per run"
    );
    // The comparison's bar charts of one metric share their scale too.
    assert!(by_key.keys().any(|k| k.starts_with("compare randread IOPS")));
    assert!(by_key
        .iter()
        .filter(|(k, _)| k.starts_with("compare"))
        .all(|(_, ys)| ys.len() == 1));

    // --free-scales: each panel on its own maximum.
    let free = s.path().join("free.html");
    let out = s.storlab(&[
        "report",
        &a[0].to_string(),
        &b[0].to_string(),
        "--free-scales",
        "-o",
        free.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let free_charts = charts(&std::fs::read_to_string(&free).unwrap());
    let own: Vec<f64> = [a[0], b[0]]
        .iter()
        .map(|id| {
            let r = s.json(&["results", "show", &id.to_string(), "--samples"]);
            let p = r["phases"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["kind"] == "randread")
                .unwrap()
                .clone();
            nice(
                merged(p["result"]["samples"].as_array().unwrap())
                    .iter()
                    .map(iops)
                    .fold(0.0, f64::max),
            )
        })
        .collect();
    let free_iops: Vec<f64> = free_charts
        .iter()
        .filter(|(k, _)| k == "randread IOPS")
        .map(|c| c.1)
        .collect();
    assert_eq!(free_iops, own);

    // A screenshot is not blank: a real share of its pixels is not background.
    let png_path = s.path().join("shot.png");
    chromium(&page, &s.path().join("shot"), Some(&png_path));
    let pixels = screenshot_pixels(&png_path);
    let inked = pixels.iter().filter(|p| p.iter().any(|c| *c < 200)).count();
    let share = inked as f64 / pixels.len() as f64;
    assert!(share > 0.02, "only {:.2} % of the screenshot is drawn", share * 100.0);
}

#[test]
fn report_refuses_bad_input_and_writes_nothing() {
    let s = Scratch::new();
    let id = quick_run(&s, "set=a").to_string();
    let page = s.path().join("r.html");
    for (args, needle) in [
        (vec!["report", "999"], "no run 999"),
        (vec!["report", "--compare", "set=a"], "at least two groups"),
        (
            vec!["report", "--compare", "set=a", "--compare", "set=nothing"],
            "no run matches",
        ),
        (vec!["report"], "nothing to report"),
    ] {
        let mut a = args.clone();
        a.extend(["-o", page.to_str().unwrap()]);
        let out = s.storlab(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(!page.exists());
    }
    let out = s.storlab(&["report", &id, "-o", page.to_str().unwrap()]);
    assert!(out.status.success());
}

// ---- snapshots of the outputs' structure ----

/// The shape of a JSON value: every key path with its type, through the whole document (the
/// plan and its settings, the result, the environment, the job as given); arrays by the union
/// of their elements' shapes. Values (timings, ids) are left out: the structure is what scripts
/// rely on, and a field renamed anywhere in the model changes it.
fn shape(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                shape(x, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) => {
            out.insert(format!("{path}: array"));
            for x in a {
                shape(x, &format!("{path}[]"), out);
            }
        }
        Value::Null => {
            out.insert(format!("{path}: null"));
        }
        Value::Bool(_) => {
            out.insert(format!("{path}: bool"));
        }
        Value::Number(_) => {
            out.insert(format!("{path}: number"));
        }
        Value::String(_) => {
            out.insert(format!("{path}: string"));
        }
    }
}

/// The outline of an HTML report: headings (digits as N), and the charts' keys.
fn outline(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let digits = |s: &str| {
        s.chars()
            .map(|c| if c.is_ascii_digit() { 'N' } else { c })
            .collect::<String>()
    };
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        for tag in ["h1", "h2", "h3"] {
            if rest.starts_with(tag) {
                let start = rest.find('>').unwrap() + 1;
                let end = rest.find(&format!("</{tag}>")).unwrap();
                out.push(format!("{tag} {}", digits(&rest[start..end])));
            }
        }
        if rest.starts_with("svg ") {
            let k = rest.find("data-key=\"").map(|p| &rest[p + 10..]).unwrap_or("");
            out.push(format!("svg {}", &k[..k.find('"').unwrap_or(0)]));
        }
        if rest.starts_with("table") {
            out.push("table".into());
        }
    }
    out.dedup();
    out
}

fn snapshot(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no snapshot {}: run with UPDATE_SNAPSHOTS=1 once", path.display()));
    assert_eq!(
        text, want,
        "{name} changed structure; if on purpose, run with UPDATE_SNAPSHOTS=1"
    );
}

#[test]
fn output_structures_match_their_snapshots() {
    let s = Scratch::new();
    let a = quick_run(&s, "set=a");
    let b = quick_run(&s, "set=b");
    let json_shape = |v: &Value| {
        let mut set = BTreeSet::new();
        shape(v, "", &mut set);
        set.into_iter().collect::<Vec<_>>().join("\n") + "\n"
    };
    snapshot(
        "show.json.shape",
        &json_shape(&s.json(&["results", "show", &a.to_string(), "--samples"])),
    );
    snapshot("list.json.shape", &json_shape(&s.json(&["results", "list"])));
    snapshot(
        "compare.json.shape",
        &json_shape(&s.json(&["results", "compare", &a.to_string(), &b.to_string()])),
    );
    let export = s.storlab(&["results", "export", &a.to_string(), "--format", "json"]);
    snapshot(
        "export.json.shape",
        &json_shape(&serde_json::from_slice(&export.stdout).unwrap()),
    );
    let csv = stdout(&s.storlab(&["results", "export", &a.to_string(), "--format", "csv"]));
    let headers: String = csv
        .lines()
        .enumerate()
        .filter(|(i, l)| {
            l.starts_with("# table")
                || csv
                    .lines()
                    .nth(i.saturating_sub(1))
                    .is_some_and(|p| p.starts_with("# table"))
        })
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    snapshot("export.csv.headers", &headers);
    // A study: a sweep of two points, as stored and shown.
    let d = s.data();
    let t = d.to_str().unwrap();
    let study = s.json(&[
        "sweep",
        "--vary",
        "threads=1..2",
        "--target",
        t,
        "--phase",
        "randread",
        "--size",
        "1m",
    ]);
    snapshot(
        "study.json.shape",
        &json_shape(&s.json(&["results", "study", &study["id"].to_string()])),
    );
    let run_csv = stdout(&s.storlab(&["results", "show", &a.to_string(), "--csv"]));
    snapshot("show.csv.header", &format!("{}\n", run_csv.lines().next().unwrap()));
    let page = s.path().join("r.html");
    let out = s.storlab(&[
        "report",
        "--compare",
        &a.to_string(),
        "--compare",
        &b.to_string(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    snapshot(
        "report.html.outline",
        &(outline(&std::fs::read_to_string(&page).unwrap()).join("\n") + "\n"),
    );
}

#[test]
fn two_targets_get_their_own_samples_and_lines() {
    let s = Scratch::new();
    let (a, b) = (s.path().join("pool-a"), s.path().join("pool-b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let v = s.json(&[
        "run",
        "--target",
        a.to_str().unwrap(),
        "--target",
        b.to_str().unwrap(),
        "--threads",
        "2",
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "8m",
        "--runtime",
        "1s",
        "--interval",
        "200ms",
        "--rate",
        "4000iops",
    ]);
    let id = v["id"].as_i64().unwrap().to_string();
    let shown = s.json(&["results", "show", &id, "--samples"]);
    let samples = shown["phases"][0]["result"]["samples"].as_array().unwrap();
    assert!(samples.len() >= 4);
    for x in samples {
        let t = x["targets"].as_array().expect("per-target samples");
        let targets: Vec<u64> = t.iter().map(|y| y["target"].as_u64().unwrap()).collect();
        assert_eq!(targets, vec![0, 1], "{x}");
        for k in ["bytes_read", "ops_read"] {
            let sum: u64 = t.iter().map(|y| y[k].as_u64().unwrap()).sum();
            assert_eq!(
                sum,
                x[k].as_u64().unwrap(),
                "{k} of the targets add up to the interval's"
            );
        }
    }
    let page = s.path().join("r.html");
    let out = s.storlab(&["report", &id, "-o", page.to_str().unwrap()]);
    assert!(out.status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    // (A line that coincides with another's is labelled so: "pool-b (= pool-a)".)
    assert!(
        html.contains(">pool-a</text>") && (html.contains(">pool-b</text>") || html.contains(">pool-b (= ")),
        "a line per target"
    );
}

/// (data-key, data-vmax) of every heat map.
fn heat_maps(page: &str) -> Vec<(String, f64)> {
    svg_scales(page, "data-vmax")
}

#[test]
fn studies_get_heat_maps_on_one_colour_scale() {
    let s = Scratch::new();
    let d = s.data();
    let study = |n: &str, g: &str| -> i64 {
        let out = s.storlab(&[
            "iozone",
            "-a",
            "-n",
            n,
            "-g",
            g,
            "-y",
            "64k",
            "-q",
            "128k",
            "-i",
            "0",
            "--dir",
            d.to_str().unwrap(),
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["study"].as_i64().unwrap()
    };
    let (a, b) = (study("256k", "512k"), study("256k", "1m"));
    let page = s.path().join("studies.html");
    let out = s.storlab(&[
        "report",
        "--study",
        &a.to_string(),
        "--study",
        &b.to_string(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let maps = heat_maps(&html);
    let writes: Vec<f64> = maps.iter().filter(|(k, _)| k == "heat write").map(|m| m.1).collect();
    assert_eq!(writes.len(), 2, "one write map per study");
    assert_eq!(writes[0], writes[1], "like maps share one colour scale");
    assert!(maps.iter().any(|(k, _)| k == "heat rewrite"));
    // 2 file sizes × 2 record sizes in the first study, 3 × 2 in the second: one coloured cell each.
    assert_eq!(
        html.matches("data-value=").count(),
        2 * (4 + 6),
        "cells of write and rewrite maps"
    );
    let loaded = chromium(&page, &s.path().join("c"), None);
    assert!(loaded.console.is_empty() && loaded.page_requests.is_empty());
    // A sweep gets a curve per phase against the varied parameter.
    let out = s.storlab(&[
        "sweep",
        "--vary",
        "threads=1..2",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "randread",
        "--size",
        "4m",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sw = v["id"].as_i64().unwrap().to_string();
    let out = s.storlab(&["report", "--study", &sw, "-o", page.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .contains("data-key=\"sweep randread\""));
    let out = s.storlab(&["report", "--study", "999", "-o", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

/// A data challenge in the report: the total and each pool on one scale, its faults marked,
/// its account and statistics tables; loads in Chromium with no console message and no request.
#[test]
fn a_challenge_is_drawn_on_one_scale_with_its_faults_marked() {
    let s = Scratch::new();
    let (a, b) = (s.path().join("a"), s.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let v = s.json(&[
        "challenge",
        "run",
        "--pool",
        &format!("P1={}", a.display()),
        "--pool",
        &format!("P2={}", b.display()),
        "--writers",
        "2",
        "--readers",
        "2",
        "--file-size",
        "1m",
        "--bs",
        "256k",
        "--duration",
        "4s",
        "--interval",
        "1500ms",
        "--lt",
        "3s",
        "--fault",
        "1s:drain:P2:1s",
        "--fault",
        "2s:command:true",
    ]);
    let id = v["challenge"].as_u64().unwrap().to_string();
    let page = s.path().join("challenge.html");
    let out = s.storlab(&["report", "--challenge", &id, "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let keys: Vec<(String, f64)> = charts(&html);
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            format!("challenge-{id}-all-pools"),
            format!("challenge-{id}-pool-p1"),
            format!("challenge-{id}-pool-p2")
        ]
    );
    // One scale: every chart's top is the nice ceiling of the highest total rate.
    let top = keys[0].1;
    assert!(keys.iter().all(|(_, y)| *y == top), "{keys:?}");
    let rows = v["statistics"]["rows"].as_array().unwrap();
    let max_total = rows.iter().find(|r| r["name"] == "Tot-ReadWriteAverage").unwrap()["max"]
        .as_f64()
        .unwrap()
        / 1e6;
    assert!(
        top >= max_total,
        "the scale {top} is under the total's long-term max {max_total}"
    );
    // Each fault and its undoing is a mark on every chart: drain, undo, command; and, 4 s being
    // no multiple of 1.5 s, the mark where the last, partial interval begins.
    let tails = html.matches("last interval partial: ").count();
    assert_eq!(tails, 3, "the partial interval marked on every chart");
    assert_eq!(html.matches("data-mark=").count() - tails, 3 * 3, "marks");
    for text in ["Tot-ReadWriteAverage", "P2-Write", "pool P2 drained", "holds"] {
        assert!(html.contains(text), "{text} is not in the report");
    }
    let work = s.path().join("chromium");
    std::fs::create_dir(&work).unwrap();
    let loaded = chromium(&page, &work, None);
    assert!(loaded.console.is_empty(), "{:?}", loaded.console);
    assert!(loaded.page_requests.is_empty(), "{:?}", loaded.page_requests);
    assert_eq!(loaded.dom.matches("<svg class=\"chart\"").count(), 3);
    // In the browser's layout: the fault marks' labels (and the partial interval's) inside the
    // plots and apart, the axes at round numbers.
    let measured = measured_in_chromium(&page, &s.path().join("m"));
    assert_labels_and_ticks(&measured, &page);
    // The partial interval drawn on screen at its own width: its mark where the last whole
    // interval's point is, its point as far past it as its length is of a whole interval's.
    for c in measured.as_array().unwrap() {
        assert_partial_tail_drawn_to_scale(c);
    }
}

/// A chart's last, partial interval on screen: the mark labelled "last interval partial: L s
/// of W s" stands at the point before the last (within a pixel), and the last point lies
/// L/W of a whole interval's width past it (a whole interval's width: the first two points').
fn assert_partial_tail_drawn_to_scale(chart: &Value) {
    let key = chart["key"].as_str().unwrap_or("?");
    let mark = chart["marks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["label"].as_str().unwrap().starts_with("last interval partial: "))
        .unwrap_or_else(|| panic!("{key}: no partial-interval mark on screen: {chart}"));
    let label = mark["label"].as_str().unwrap();
    let words: Vec<f64> = label
        .trim_start_matches("last interval partial: ")
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    let [len, width] = words[..] else {
        panic!("{key}: the mark says no 'L s of W s': {label}");
    };
    assert!(len < width, "{key}: {label}");
    let xs = |line: &Value| -> Vec<f64> {
        line.as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_f64().unwrap())
            .collect()
    };
    // The series with the most points: measured in every interval.
    let points = chart["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(xs)
        .max_by_key(Vec::len)
        .unwrap();
    let n = points.len();
    assert!(n >= 3, "{key}: {n} points");
    let whole = points[1] - points[0];
    let (before, last) = (points[n - 2], points[n - 1]);
    let at = mark["x"].as_f64().unwrap();
    assert!(
        (at - before).abs() <= 1.0,
        "{key}: the mark at {at} px, the last whole interval ends at {before} px"
    );
    let drawn = (last - before) / whole;
    assert!(
        (drawn - len / width).abs() <= 0.05,
        "{key}: the partial interval drawn {drawn:.3} of a whole one wide, its length {len} s of {width} s"
    );
}

/// A phase whose last interval is a sliver (51 reads at 100 IOPS in 100 ms intervals: the 51st
/// lands alone at 0.5 s, a fraction of a millisecond before the phase ends). `results export`
/// gives every sample's length and marks the sliver partial; the report merges it into the
/// interval before instead of drawing its rate over a fraction of a millisecond (here a leap to
/// thousands of IOPS; at full speed, a drop to almost nothing), so the IOPS plot's axis stays at
/// the phase's own rate.
#[test]
fn a_partial_last_interval_is_marked_in_exports_and_merged_in_plots() {
    let s = Scratch::new();
    let d = s.data();
    let v = s.json(&[
        "run",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "read",
        "--bs",
        "4k",
        "--size",
        "204k",
        "--rate",
        "100iops",
        "--interval",
        "100ms",
        "--threads",
        "1",
    ]);
    let id = v["id"].as_i64().unwrap().to_string();
    let samples = &v["phases"][0]["result"]["samples"];
    let last = samples.as_array().unwrap().last().unwrap().clone();
    let len = last["t_end"].as_f64().unwrap() - last["t_start"].as_f64().unwrap();
    assert!(len < 0.05, "the last interval is a sliver: {last}");
    let csv = s.path().join("samples.csv");
    let out = s.storlab(&["results", "export", &id, "--format", "csv", "-o", csv.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{id},1,read,")))
        .collect();
    let head = text.lines().find(|l| l.starts_with("run,seq,phase,interval,")).unwrap();
    let col = |name: &str| {
        head.split(',')
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no {name} in {head}"))
    };
    let (length, partial) = (col("length (s)"), col("partial"));
    let cells: Vec<Vec<&str>> = rows.iter().map(|r| r.split(',').collect()).collect();
    assert_eq!(cells.len(), samples.as_array().unwrap().len(), "{text}");
    assert!(cells.iter().all(|c| c[length].parse::<f64>().unwrap() > 0.0));
    assert_eq!(cells.last().unwrap()[partial], "true", "{text}");
    assert!(cells[..cells.len() - 1].iter().all(|c| c[partial] == "false"), "{text}");
    let page = s.path().join("r.html");
    let out = s.storlab(&["report", &id, "-o", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    let iops = charts(&html)
        .into_iter()
        .find(|(k, _)| k.contains("IOPS"))
        .unwrap_or_else(|| panic!("no IOPS chart: {:?}", charts(&html)));
    assert!(
        iops.1 <= 200.0,
        "the IOPS axis reaches {} for a phase held at 100 IOPS: the sliver was drawn alone",
        iops.1
    );
}

/// What a browser's own layout says of every chart of `page` (issue 42, part 7), measured by a
/// script added to a copy of the page and read back from Chromium's DOM: per chart its key,
/// the labels drawn outside it, pairs of labels that overlap, its y tick labels, its axes'
/// units (x, then y), its marks (where on screen, and their labels), and per series line its
/// stroke, dash, drawn length and points where they are on screen.
fn measured_in_chromium(page: &Path, work: &Path) -> Value {
    const MEASURE: &str = r#"<script>
const charts = [];
for (const svg of document.querySelectorAll('svg.chart')) {
  const box = svg.getBoundingClientRect();
  const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() !== '');
  const rects = texts.map(t => t.getBoundingClientRect());
  const outside = texts.filter((t, i) => {
    const r = rects[i];
    return r.left < box.left - 0.5 || r.right > box.right + 0.5
        || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5;
  }).map(t => t.textContent);
  const overlaps = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const a = rects[i], b = rects[j];
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 1 && h > 1) overlaps.push([texts[i].textContent, texts[j].textContent]);
  }
  const ticks = [...svg.querySelectorAll('text.yl')].map(t => t.textContent);
  const lines = [...svg.querySelectorAll('polyline')].map(l => ({
    stroke: getComputedStyle(l).stroke,
    dash: getComputedStyle(l).strokeDasharray,
    length: l.getTotalLength(),
    points: l.getAttribute('points'),
  }));
  const legend = [...svg.querySelectorAll('text')].map(t => t.textContent).join(' | ');
  const units = [...svg.querySelectorAll('text.ax')].map(t => t.textContent);
  const marks = [...svg.querySelectorAll('line[data-mark]')].map(l => {
    const label = svg.querySelector(`text[data-mark-label="${l.dataset.mark}"]`);
    const at = svg.createSVGPoint();
    at.x = l.x1.baseVal.value;
    at.y = l.y1.baseVal.value;
    return { x: at.matrixTransform(l.getScreenCTM()).x, label: label ? label.textContent : '' };
  });
  const points = [...svg.querySelectorAll('polyline')].map(l =>
    [...l.points].map(p => { const q = p.matrixTransform(l.getScreenCTM()); return [q.x, q.y]; }));
  charts.push({ key: svg.dataset.key, outside, overlaps, ticks, lines, legend, units, marks, points });
}
document.body.setAttribute('data-measured', JSON.stringify(charts));
</script>"#;
    let html = std::fs::read_to_string(page).unwrap();
    let copy = work.join("measured.html");
    std::fs::create_dir_all(work).unwrap();
    std::fs::write(&copy, html.replace("</body>", &format!("{MEASURE}</body>"))).unwrap();
    let loaded = chromium(&copy, &work.join("m"), None);
    assert!(loaded.console.is_empty(), "{:?}", loaded.console);
    let at = loaded.dom.find("data-measured=\"").expect("the measuring script ran") + 15;
    let end = at + loaded.dom[at..].find('"').unwrap();
    let json = loaded.dom[at..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap()
}

/// Every chart Chromium measured has its labels inside it and apart, and round y ticks.
fn assert_labels_and_ticks(measured: &Value, page: &Path) {
    let charts = measured.as_array().unwrap();
    assert!(!charts.is_empty(), "{}: no chart measured", page.display());
    for c in charts {
        let key = c["key"].as_str().unwrap_or("?");
        assert_eq!(c["outside"], serde_json::json!([]), "{key}: labels outside the chart");
        assert_eq!(c["overlaps"], serde_json::json!([]), "{key}: labels over each other");
        let ticks: Vec<String> = c["ticks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
        if let Err(e) = ticks_are_round(&ticks) {
            panic!("{key}: {e}");
        }
    }
}

/// A screenshot's pixels, each as its red, green and blue (whatever the PNG's channels).
fn screenshot_pixels(png_path: &Path) -> Vec<[u8; 3]> {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bpp = info.line_size / info.width as usize;
    buf[..info.buffer_size()]
        .chunks(bpp)
        .map(|p| [p[0], p[1], p[2]])
        .collect()
}

/// A y tick label's value ("12.5k" is 12,500).
fn tick_value(label: &str) -> Option<f64> {
    let (num, scale) = match label.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match label.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (label, 1.0),
        },
    };
    num.parse::<f64>().ok().map(|v| v * scale)
}

/// Ticks at round numbers: equal steps, each 1, 2, 2.5 or 5 times a power of ten, from 0.
fn ticks_are_round(ticks: &[String]) -> Result<(), String> {
    let v: Vec<f64> = ticks
        .iter()
        .map(|t| tick_value(t).ok_or_else(|| format!("tick '{t}' is not a number")))
        .collect::<Result<_, _>>()?;
    if v.len() < 2 {
        return Err(format!("fewer than two ticks: {ticks:?}"));
    }
    let step = v[1] - v[0];
    let power = 10f64.powf(step.log10().floor());
    let mantissa = step / power;
    if ![1.0, 2.0, 2.5, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-6) {
        return Err(format!("a step of {step} is not a round number: {ticks:?}"));
    }
    for w in v.windows(2) {
        if ((w[1] - w[0]) - step).abs() > step * 1e-6 {
            return Err(format!("unequal steps: {ticks:?}"));
        }
    }
    Ok(())
}

/// A latency written as the tables write one ("850 µs", "12.5 ms", "1.20 s"), in µs.
fn latency_cell_us(cell: &str) -> Option<f64> {
    let (num, unit) = cell.trim().rsplit_once(' ')?;
    let per = match unit {
        "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return None,
    };
    num.parse::<f64>().ok().map(|v| v * per)
}

/// The latency cells of a report's tables (`<td class="n">68.1 ms</td>`), in µs.
fn table_latencies_us(html: &str) -> Vec<f64> {
    html.split("<td class=\"n\">")
        .skip(1)
        .filter_map(|rest| latency_cell_us(&rest[..rest.find("</td>")?]))
        .collect()
}

/// Each latency axis in the unit its table uses (issue 42, part 7), in Chromium: the tables
/// write a latency of 10 ms or more in ms and a smaller one in µs, so an axis whose top is 10 ms
/// or more reads in ms and one below in µs, its ticks plain numbers ("12k" µs was the
/// complaint). Two runs: 4 KiB I/Os on tmpfs (microseconds) and 256 MiB writes (each tens of
/// milliseconds of copying), whose table says ms — and so does its axis.
#[test]
fn latency_axes_read_in_their_tables_unit_in_chromium() {
    let s = Scratch::new();
    let fast = quick_run(&s, "setup=fast");
    let d = s.data();
    let slow = s.json(&[
        "run",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "write",
        "--bs",
        "256m",
        "--size",
        "512m",
        "--runtime",
        "1s",
        "--interval",
        "100ms",
    ])["id"]
        .as_i64()
        .unwrap();
    let mut axes = BTreeMap::new();
    for (id, name) in [(fast, "fast"), (slow, "slow")] {
        let page = s.path().join(format!("{name}.html"));
        let out = s.storlab(&["report", &id.to_string(), "-o", page.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let measured = measured_in_chromium(&page, &s.path().join(format!("m-{name}")));
        for c in measured.as_array().unwrap() {
            let key = c["key"].as_str().unwrap_or("?");
            if !key.ends_with("latency") {
                continue;
            }
            let unit = c["units"][1].as_str().unwrap().to_string();
            let ticks: Vec<&str> = c["ticks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            let top: f64 = ticks
                .last()
                .unwrap()
                .parse()
                .unwrap_or_else(|_| panic!("{name} {key}: a tick that is no plain number: {ticks:?}"));
            let top_us = match unit.as_str() {
                "µs" => top,
                "ms" => top * 1e3,
                other => panic!("{name} {key}: a latency axis in '{other}'"),
            };
            let tables = if top_us >= 10_000.0 { "ms" } else { "µs" };
            assert_eq!(
                unit, tables,
                "{name} {key}: the axis tops at {top} {unit}; the tables write that in {tables}"
            );
            axes.insert(name, (unit, top_us));
        }
        if name == "slow" {
            let html = std::fs::read_to_string(&page).unwrap();
            let cells = table_latencies_us(&html);
            assert!(cells.len() >= 4, "{name}: latency cells {cells:?}");
            // The median write took 10 ms or more: the table writes it in ms, as the axis.
            assert!(cells[0] >= 10_000.0, "{name}: p50 {} µs", cells[0]);
            assert_eq!(axes.get(name).map(|a| a.0.as_str()), Some("ms"), "{axes:?}");
        }
    }
    assert_eq!(axes.len(), 2, "a latency chart on each page: {axes:?}");
}

/// Pictures read true in a real browser (issue 42, part 7): in a run report and a comparison,
/// every label lies inside its chart and overlaps no other, every y axis ticks at round numbers,
/// and series that coincide (a run's latency percentiles with one I/O per interval) are all on
/// screen: one drawn over another is dashed, the legend says which it equals, and a screenshot
/// of that chart alone shows every series' colour.
#[test]
fn pictures_read_true_in_chromium() {
    let s = Scratch::new();
    let a = quick_run(&s, "setup=a");
    let b = quick_run(&s, "setup=b");
    let runs = s.path().join("runs.html");
    let out = s.storlab(&["report", &a.to_string(), &b.to_string(), "-o", runs.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cmp = s.path().join("cmp.html");
    let out = s.storlab(&[
        "report",
        "--compare",
        "setup=a",
        "--compare",
        "setup=b",
        "-o",
        cmp.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    // One I/O in each 100 ms interval: its latency percentiles coincide, interval by interval.
    let d = s.data();
    let one = s.json(&[
        "run",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--rate",
        "10iops",
        "--interval",
        "100ms",
        "--runtime",
        "2s",
    ]);
    let slow = s.path().join("slow.html");
    let out = s.storlab(&["report", &one["id"].to_string(), "-o", slow.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));

    let mut dashed_pairs = 0;
    for (page, work) in [(&runs, "m-runs"), (&cmp, "m-cmp"), (&slow, "m-slow")] {
        let measured = measured_in_chromium(page, &s.path().join(work));
        assert_labels_and_ticks(&measured, page);
        for c in measured.as_array().unwrap() {
            let key = c["key"].as_str().unwrap_or("?");
            // Lines with the same points: the later one dashed, both drawn, said in the legend.
            let lines = c["lines"].as_array().unwrap();
            for (i, l) in lines.iter().enumerate() {
                let Some(first) = lines[..i].iter().find(|e| e["points"] == l["points"]) else {
                    continue;
                };
                if l["points"].as_str().unwrap_or("").split(' ').count() < 2 {
                    continue;
                }
                assert_ne!(l["dash"], "none", "{key}: a series drawn over another is solid: {l}");
                assert_ne!(l["stroke"], first["stroke"], "{key}: coinciding series in one colour");
                assert!(l["length"].as_f64().unwrap() > 10.0, "{key}: {l}");
                assert!(
                    c["legend"].as_str().unwrap().contains("(= "),
                    "{key}: the legend does not say two series coincide: {}",
                    c["legend"]
                );
                dashed_pairs += 1;
            }
        }
    }
    assert!(dashed_pairs > 0, "two runs held at one rate drew no coinciding series");

    // A screenshot of a chart with coinciding series alone: every series' colour is on screen.
    let html = std::fs::read_to_string(&slow).unwrap();
    let (start, end) = html
        .match_indices("<svg class=\"chart\"")
        .map(|(i, _)| (i, i + html[i..].find("</svg>").unwrap() + 6))
        .find(|&(i, e)| html[i..e].contains("stroke-dasharray=\"6 4\""))
        .expect("a chart with a series drawn dashed over another");
    let alone = s.path().join("alone.html");
    std::fs::write(
        &alone,
        format!("<!doctype html><html><body>{}</body></html>", &html[start..end]),
    )
    .unwrap();
    let png_path = s.path().join("alone.png");
    chromium(&alone, &s.path().join("shot-alone"), Some(&png_path));
    let pixels = screenshot_pixels(&png_path);
    let strokes: Vec<[u8; 3]> = html[start..end]
        .match_indices("stroke=\"#")
        .map(|(i, _)| &html[start + i + 9..start + i + 15])
        .filter_map(|hex| {
            let p = |k: usize| u8::from_str_radix(&hex[k..k + 2], 16).ok();
            Some([p(0)?, p(2)?, p(4)?])
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(strokes.len() >= 2, "the chart has {} series colours", strokes.len());
    for colour in &strokes {
        let near = pixels
            .iter()
            .filter(|p| (0..3).all(|k| (p[k] as i32 - colour[k] as i32).abs() <= 40))
            .count();
        assert!(
            near >= 20,
            "colour {colour:?}: {near} pixels on screen: a series is hidden"
        );
    }
}

/// Every report kind carries the warnings its runs carry — `report --study` as `report IDS` —
/// and a phase too short to draw over time (under two 1 s intervals) is its figures, not an
/// empty chart.
#[test]
fn a_studys_page_carries_its_runs_warnings_and_a_short_phase_is_its_figures() {
    let s = Scratch::new();
    let d = s.data();
    // A sweep on tmpfs, buffered, 4 MiB files: the page cache flatters every read, and the
    // phases last milliseconds.
    let out = s.storlab(&[
        "sweep",
        "--vary",
        "bs=4k,64k",
        "--target",
        d.to_str().unwrap(),
        "--phase",
        "write",
        "--phase",
        "read",
        "--size",
        "4m",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let studies = s.json(&["results", "studies"]);
    let study = s.json(&["results", "study", &studies[0]["id"].to_string()]);
    let runs: Vec<Value> = study["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| s.json(&["results", "show", &m["run_id"].to_string()]))
        .collect();
    let flagged: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r["phases"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["cache_flattered"] == true)
                .map(|p| format!("{} phase {}", r["id"], p["seq"].as_u64().unwrap() + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!flagged.is_empty(), "4 MiB read buffered from tmpfs is flagged");
    let ids: Vec<String> = runs.iter().map(|r| r["id"].to_string()).collect();
    let mut by_ids = vec!["report"];
    by_ids.extend(ids.iter().map(String::as_str));
    let study_id = studies[0]["id"].to_string();
    for (name, args) in [("study", vec!["report", "--study", &study_id]), ("runs", by_ids)] {
        let html = s.path().join(format!("{name}.html"));
        let mut a = args.clone();
        a.extend(["-o", html.to_str().unwrap()]);
        let out = s.storlab(&a);
        assert!(out.status.success(), "{}", stderr(&out));
        let page = chromium(&html, s.path(), None);
        assert!(page.console.is_empty(), "{:?}", page.console);
        let warn = page
            .dom
            .split("<div class=\"warn\">")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no warnings"));
        assert!(warn.contains("cache? ("), "{name}: {warn}");
        for f in &flagged {
            assert!(warn.contains(f.as_str()), "{name}: {f} not in {warn}");
        }
        if name == "runs" {
            for r in &runs {
                for p in r["phases"].as_array().unwrap() {
                    let secs = p["result"]["all_done"]["seconds"].as_f64().unwrap();
                    let mark = format!(
                        "data-run=\"{}\" data-phase=\"{}\"",
                        r["id"],
                        p["seq"].as_u64().unwrap() + 1
                    );
                    if secs < 1.0 {
                        let at = page
                            .dom
                            .find(&mark)
                            .unwrap_or_else(|| panic!("{mark}: a {secs} s phase drawn"));
                        let mibs = p["result"]["all_done"]["bytes_per_sec"].as_f64().unwrap() / 1048576.0;
                        assert!(page.dom[at..].contains(&format!("<b>{mibs:.2} MiB/s</b>")), "{mark}");
                    }
                }
            }
        }
    }
}
