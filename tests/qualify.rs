//! `storlab qualify`: plans of criteria run on tmpfs, on an O_DIRECT loop device and with a
//! real btrfs scrub, each verdict recomputed here from the stored runs with an implementation of
//! this test's own (Student's t from the incomplete beta function, the design's error by a
//! simulation with another generator); bad plans refused with their line before anything runs;
//! a baseline from the database; the same plan again against an earlier qualification; the
//! certificate in Chromium; exit 0, 1 and 5.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::path::Path;
use std::process::Output;

use serde_json::Value;

mod common;
use common::stats::*;
use common::*;

/// The repeated interval of a criterion's look, recomputed: mean ± t(1 − α′/2, n − 1)·s/√n, on
/// the logarithmic scale when it says.
fn interval(values: &[f64], nominal: f64, log: bool) -> (f64, f64, f64) {
    let v: Vec<f64> = values.iter().map(|x| if log { x.ln() } else { *x }).collect();
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let h = t_critical(nominal, n - 1.0) * sd / n.sqrt();
    let back = |x: f64| if log { x.exp() } else { x };
    (back(m), back(m - h), back(m + h))
}

// ---------------------------------------------------------------------------------------------

fn plan(s: &Scratch, name: &str, text: &str) -> String {
    let p = s.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

fn doc(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", stdout(o), stderr(o)))
}

/// A figure of a stored run's phase, read from the run as `results show` gives it.
fn figure_of(s: &Scratch, run: i64, phase: usize, figure: &str) -> f64 {
    let r = s.json(&["results", "show", &run.to_string()]);
    let p = &r["phases"][phase]["result"];
    match figure {
        "IOPS" => p["all_done"]["iops"].as_f64().unwrap(),
        "MiB/s" => p["all_done"]["bytes_per_sec"].as_f64().unwrap() / 1048576.0,
        "read MiB/s" => p["bytes_read"].as_f64().unwrap() / p["all_done"]["seconds"].as_f64().unwrap() / 1048576.0,
        "write MiB/s" => p["bytes_written"].as_f64().unwrap() / p["all_done"]["seconds"].as_f64().unwrap() / 1048576.0,
        "lat p50" => p["latency"]["p50_ns"].as_f64().unwrap() / 1e3,
        "lat p99" => p["latency"]["p99_ns"].as_f64().unwrap() / 1e3,
        other => panic!("the test reads no {other}"),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Every criterion of a stored qualification recomputed from its runs: the figure of each run
/// (each pair's cost, for a task), the interval at the look it stopped at, the decision, and
/// that no earlier look decided it.
fn recompute(s: &Scratch, q: &Value) {
    for c in q["params"]["criteria"].as_array().unwrap() {
        let what = format!("criterion {}: {}", c["index"], c["text"]);
        let phase: usize = c["phase"]
            .as_str()
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse::<usize>()
            .unwrap()
            - 1;
        let figure = c["figure"].as_str().unwrap();
        let log = c["log_scale"].as_bool().unwrap();
        let impact = c["reference"]["against"] == "impact";
        let values: Vec<f64> = c["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ids| {
                let ids: Vec<i64> = ids.as_array().unwrap().iter().map(|i| i.as_i64().unwrap()).collect();
                if impact {
                    let (idle, loaded) = (figure_of(s, ids[0], phase, figure), figure_of(s, ids[1], phase, figure));
                    if figure.contains("lat") {
                        100.0 * (loaded / idle - 1.0)
                    } else {
                        100.0 * (1.0 - loaded / idle)
                    }
                } else {
                    figure_of(s, ids[0], phase, figure)
                }
            })
            .collect();
        let stored: Vec<f64> = c["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(values.len(), stored.len(), "{what}");
        for (a, b) in values.iter().zip(&stored) {
            assert!(close(*a, *b), "{what}: the run's figure {a} against the stored {b}");
        }
        let nominal = c["design"]["nominal_alpha"].as_f64().unwrap();
        let first = c["design"]["first_look"].as_u64().unwrap() as usize;
        let threshold = c["threshold"].as_f64().unwrap();
        let at_least = c["direction"] == "at_least";
        let decide = |lo: f64, hi: f64| match (at_least, lo, hi) {
            (true, lo, _) if lo >= threshold => "PASS",
            (true, _, hi) if hi < threshold => "FAIL",
            (false, _, hi) if hi <= threshold => "PASS",
            (false, lo, _) if lo > threshold => "FAIL",
            _ => "UNDECIDED",
        };
        let reference = &c["reference"];
        let look = |n: usize| -> (f64, f64, f64) {
            let (m, lo, hi) = interval(&values[..n], nominal, log);
            if reference["against"] != "baseline" {
                return (m, lo, hi);
            }
            let base: Vec<f64> = reference["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            let conf = c["design"]["confidence"].as_f64().unwrap();
            let (bm, blo, bhi) = interval(&base, 1.0 - conf, log);
            (m / bm, lo / bhi, hi / blo)
        };
        let n = values.len();
        if n >= first {
            let (m, lo, hi) = look(n);
            let printed = c["interval"].as_array().unwrap();
            assert!(
                close(c["observed"].as_f64().unwrap(), m)
                    || (m - c["observed"].as_f64().unwrap()).abs() < 1e-9 * m.abs().max(1.0),
                "{what}: observed {} against {m}",
                c["observed"]
            );
            assert!(
                (printed[0].as_f64().unwrap() - lo).abs() <= 1e-6 * lo.abs().max(1e-9)
                    && (printed[1].as_f64().unwrap() - hi).abs() <= 1e-6 * hi.abs().max(1e-9),
                "{what}: interval {printed:?} against {lo}..{hi}"
            );
            assert_eq!(c["decision"].as_str().unwrap(), decide(lo, hi), "{what}");
            for k in first..n {
                let (_, lo, hi) = look(k);
                assert_eq!(decide(lo, hi), "UNDECIDED", "{what}: already decided at look {k}");
            }
        } else {
            assert_eq!(c["decision"], "UNDECIDED", "{what}");
            assert!(c["interval"].is_null(), "{what}");
        }
    }
}

const JOB: &str = "settings = { phase = [\"randread\"], bs = \"4k\", size = \"16m\", runtime = \"300ms\" }";

#[test]
fn a_qualification_decides_and_its_verdict_equals_a_recomputation_from_its_runs() {
    let s = Scratch::new();
    let d = s.data();
    let p = plan(
        &s,
        "plan.toml",
        &format!(
            "name = \"tmpfs\"\nmax_repeats = 6\n\n[[job]]\nname = \"rr\"\n{JOB}\n\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS >= 10\"\n\n[[criterion]]\njob = \"rr\"\ncheck = \"p99 latency <= 10 s\"\n\n[[criterion]]\njob = \"rr\"\ncheck = \"randread IOPS ≥ 1,000,000,000\"\n"
        ),
    );
    let out = s.storlab(&["qualify", &p, "--target", d.to_str().unwrap(), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed criterion exits 1: {}",
        stderr(&out)
    );
    let q = doc(&out);
    assert_eq!(q["kind"], "qualify");
    let decisions: Vec<&str> = q["params"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["PASS", "PASS", "FAIL"]);
    recompute(&s, &q);
    // Every run is a member of the study, in rounds; the files are gone.
    let members = q["members"].as_array().unwrap();
    assert_eq!(
        members.len(),
        q["params"]["criteria"][0]["values"].as_array().unwrap().len()
    );
    assert!(entries(&d).is_empty(), "{:?}", entries(&d));
    // The design's error, by this test's own simulation: at most the level, and not far under
    // it (a design that threw its repetitions away would be).
    let design = &q["params"]["criteria"][0]["design"];
    let err = simulated_error(design["nominal_alpha"].as_f64().unwrap(), 3, 6, 40_000);
    let se = (0.05f64 * 0.95 / 40_000.0).sqrt();
    assert!(
        err <= 0.05 + 3.0 * se && err >= 0.05 - 8.0 * se,
        "the design's error by simulation: {err}"
    );
    // The table printed is the stored verdict.
    let id = q["id"].as_i64().unwrap().to_string();
    let text = stdout(&s.storlab(&["results", "study", &id]));
    assert!(
        text.contains("verdict: FAIL — 2 passed, 1 failed, 0 undecided of 3 criteria"),
        "{text}"
    );
    for c in q["params"]["criteria"].as_array().unwrap() {
        let row = text
            .lines()
            .find(|l| l.contains(c["text"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("no row for {}: {text}", c["text"]));
        assert!(row.contains(c["decision"].as_str().unwrap()), "{row}");
        // On tmpfs without O_DIRECT every run is flagged cache?, counted here from the runs
        // themselves: the verdict says what its figures are, in --json and in the table.
        let runs: Vec<i64> = c["runs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r.as_array().unwrap().clone())
            .map(|r| r.as_i64().unwrap())
            .collect();
        let flagged = runs
            .iter()
            .filter(|id| s.json(&["results", "show", &id.to_string()])["phases"][0]["cache_flattered"] == true)
            .count();
        assert!(flagged > 0 && flagged == runs.len(), "{flagged} of {}", runs.len());
        let said = c["warnings"][0].as_str().unwrap_or_else(|| panic!("no warning: {c}"));
        assert!(
            said.starts_with("cache?") && said.ends_with(&format!("{flagged} of {} runs", runs.len())),
            "{said}"
        );
        assert!(row.contains("cache?"), "{row}");
    }
    assert!(
        text.contains("decided on figures with warnings (criteria #1, #2, #3"),
        "{text}"
    );
    let cert = s.path().join("cert.html");
    let out = s.storlab(&["report", "--study", &id, "-o", cert.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::read_to_string(&cert).unwrap().contains("cache?"),
        "the certificate says it"
    );

    // Everything passes: exit 0.
    let p = plan(
        &s,
        "pass.toml",
        &format!("[[job]]\nname = \"rr\"\n{JOB}\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS >= 10\"\n"),
    );
    let out = s.storlab(&["qualify", &p, "--target", d.to_str().unwrap(), "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("verdict: PASS"), "{}", stdout(&out));

    // Out of time before the first look: UNDECIDED, exit 5, no interval.
    let p = plan(
        &s,
        "late.toml",
        &format!("[[job]]\nname = \"rr\"\n{JOB}\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS >= 10\"\n"),
    );
    let out = s.storlab(&[
        "qualify",
        &p,
        "--target",
        d.to_str().unwrap(),
        "--max-time",
        "500ms",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let q = doc(&out);
    assert_eq!(q["params"]["stopped"], "max-time");
    assert_eq!(q["params"]["criteria"][0]["decision"], "UNDECIDED");
    recompute(&s, &q);
}

/// A plan refused: exit 2, its message names the plan's line and says what is wrong, nothing
/// is stored and no file is made.
fn refused(s: &Scratch, name: &str, text: &str, line: u32, says: &str, extra: &[&str]) {
    let p = plan(s, name, text);
    let d = s.data();
    let mut args = vec!["qualify", p.as_str(), "--target", d.to_str().unwrap()];
    args.extend(extra);
    let out = s.storlab(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    assert!(
        err.contains(&format!("{p}:{line}: ")),
        "{name}: the plan's line {line}: {err}"
    );
    assert!(err.contains(says), "{name}: {err}");
    assert!(s.nothing_stored(), "{name}: nothing stored");
    assert!(entries(&d).is_empty(), "{name}: no file made");
}

#[test]
fn bad_plans_are_refused_with_their_line_before_anything_runs() {
    let s = Scratch::new();
    let job = format!("[[job]]\nname = \"rr\"\n{JOB}\n");
    let crit = |check: &str| format!("[[criterion]]\njob = \"rr\"\ncheck = \"{check}\"\n");
    // A plan that requires O_DIRECT refuses a job without it, at the job's line, before
    // anything runs; and names what it can require.
    refused(
        &s,
        "direct.toml",
        &format!("require = [\"direct\"]\n{job}{}", crit("IOPS >= 1")),
        2,
        "job 'rr' runs phase 1 randread without O_DIRECT, and the plan requires direct (require = [\"direct\"], line 1)",
        &[],
    );
    refused(
        &s,
        "fast.toml",
        &format!("require = [\"fast\"]\n{job}{}", crit("IOPS >= 1")),
        1,
        "require: unknown requirement 'fast'",
        &[],
    );
    refused(
        &s,
        "dir.toml",
        &format!("{job}{}", crit("write MiB/s >= 1")),
        6,
        "write MiB/s: the phase does no writes",
        &[],
    );
    if !common::on_postgres() {
        // A plan refused before any baseline is looked for makes no database.
        assert!(
            !std::path::Path::new(&s.db()).exists(),
            "a refused plan made {}",
            s.db()
        );
    }
    refused(
        &s,
        "phase.toml",
        &format!("{job}{}", crit("randwrite IOPS >= 1")),
        6,
        "'randwrite' is not a phase of the job (1 randread)",
        &[],
    );
    refused(
        &s,
        "base.toml",
        &format!("{job}{}baseline = \"fw=1.2\"\n", crit("IOPS >= 95% of baseline")),
        6,
        "baseline \"fw=1.2\": 0 finished run(s)",
        &[],
    );
    refused(
        &s,
        "rate.toml",
        &format!(
            "[[job]]\nname = \"rr\"\nsettings = {{ phase = [\"randread\"], size = \"16m\", runtime = \"1s\", rate = \"1000iops\" }}\n{}",
            crit("IOPS >= 5000")
        ),
        6,
        "an impossible threshold: job 'rr' is held at 1000 IOPS, below 5000 IOPS",
        &[],
    );
    refused(
        &s,
        "conf.toml",
        &format!("{job}{}confidence = \"100%\"\n", crit("IOPS >= 1")),
        7,
        "confidence 100 %: it must lie strictly between 50 % and 100 %",
        &[],
    );
    refused(
        &s,
        "half.toml",
        &format!("confidence = 0.5\n{job}{}", crit("IOPS >= 1")),
        1,
        "confidence 50 %",
        &[],
    );
    refused(
        &s,
        "op.toml",
        &format!("{job}{}", crit("IOPS > 1")),
        6,
        "use >= or <=",
        &[],
    );
    refused(
        &s,
        "cost.toml",
        &format!("{job}{}", crit("MiB/s cost <= 5%")),
        6,
        "a cost needs a task to cost",
        &[],
    );
    refused(
        &s,
        "points.toml",
        &format!(
            "[[job]]\nname = \"rr\"\n{JOB}\nvary = \"threads=1,2\"\n{}",
            crit("IOPS >= 1 | 2 | 3")
        ),
        7,
        "3 thresholds for the 2 point(s) of job 'rr'",
        &[],
    );
    refused(
        &s,
        "job.toml",
        &format!("{job}[[criterion]]\njob = \"rw\"\ncheck = \"IOPS >= 1\"\n"),
        5,
        "criterion on job 'rw', which the plan does not have",
        &[],
    );
    // Not the plan's own mistakes: no target anywhere, too few repetitions for a verdict.
    let p = plan(&s, "ok.toml", &format!("{job}{}", crit("IOPS >= 1")));
    let out = s.storlab(&["qualify", &p]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("{p}:1: job 'rr' has no target: give --target DIR")),
        "{}",
        stderr(&out)
    );
    let d = s.data();
    let out = s.storlab(&["qualify", &p, "--target", d.to_str().unwrap(), "--max-repeats", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--max-repeats 2: a verdict needs at least 3 repetitions"),
        "{}",
        stderr(&out)
    );
    assert!(s.nothing_stored());
}

#[test]
fn a_baseline_from_the_database_the_plan_again_against_it_and_the_certificate() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.to_str().unwrap();
    // The baseline: five runs of the same workload stored earlier with a tag. (Its latency
    // criterion is on the median: a 300 ms phase's p99 on a loaded 2-core machine is a few
    // slow I/Os, whose spread can leave a ratio undecided after every repetition.)
    for _ in 0..5 {
        let out = s.storlab(&[
            "run",
            "--target",
            dir,
            "--phase",
            "randread",
            "--bs",
            "4k",
            "--size",
            "16m",
            "--runtime",
            "300ms",
            "--tag",
            "fs=old",
            "-q",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let p = plan(
        &s,
        "plan.toml",
        &format!(
            "name = \"against the old\"\n[[job]]\nname = \"rr\"\n{JOB}\n\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS >= 10% of baseline\"\nbaseline = \"fs=old\"\n\n[[criterion]]\njob = \"rr\"\ncheck = \"lat p50 no worse than baseline by more than 400%\"\nbaseline = \"fs=old\"\n\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS >= 10\"\n"
        ),
    );
    let out = s.storlab(&["qualify", &p, "--target", dir, "--tag", "fw=1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = doc(&out);
    let c0 = &first["params"]["criteria"][0];
    assert_eq!(c0["reference"]["against"], "baseline");
    assert_eq!(c0["reference"]["runs"].as_array().unwrap().len(), 5, "{c0}");
    // The baseline's figures are its runs'.
    for (id, v) in c0["reference"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(c0["reference"]["values"].as_array().unwrap())
    {
        assert!(close(
            figure_of(&s, id.as_i64().unwrap(), 0, "IOPS"),
            v.as_f64().unwrap()
        ));
    }
    recompute(&s, &first);
    let first_id = first["id"].as_i64().unwrap();

    // The same plan again, against the earlier qualification named by a tag of its runs.
    let out = s.storlab(&["qualify", "--against", "fw=1", "--target", dir, "--tag", "fw=2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("against qualification {first_id}:")), "{text}");
    assert!(
        text.contains("change 95 % (Welch)") && text.contains("IOPS >= 10"),
        "{text}"
    );
    let list = s.json(&["results", "list", "--kind", "qualify"]);
    let ids: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{list}");
    assert_eq!(ids[1], first_id, "newest first");
    let second = s.json(&["results", "study", &ids[0].to_string()]);
    assert_eq!(second["params"]["against"].as_i64(), Some(first_id));
    assert_eq!(second["params"]["plan_text"], first["params"]["plan_text"]);
    recompute(&s, &second);
    // The change the comparison prints is Welch's on the two qualifications' runs.
    let (a, b): (Vec<f64>, Vec<f64>) = (
        first["params"]["criteria"][2]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect(),
        second["params"]["criteria"][2]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect(),
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let change = 100.0 * (mean(&b) - mean(&a)) / mean(&a);
    let against = &text[text.find(&format!("against qualification {first_id}:")).unwrap()..];
    // The third criterion's row ("IOPS >= 10", not "IOPS >= 10% of baseline").
    let row = against.lines().find(|l| l.contains("IOPS >= 10 ")).unwrap();
    assert!(row.contains(&format!("{change:.1}")), "change {change:.1} in {row}");
    let only_first = s.json(&["results", "list", "--kind", "qualify", "--tag", "fw=1"]);
    assert_eq!(only_first.as_array().unwrap().len(), 1);

    // The certificate: a real browser renders it; the verdict, the comparison, a chart per
    // criterion, like figures on one scale.
    let html = s.path().join("cert.html");
    let out = s.storlab(&["report", "--study", &ids[0].to_string(), "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = chromium(&html, s.path(), None);
    assert!(page.console.is_empty(), "{:?}", page.console);
    assert!(page.page_requests.is_empty(), "{:?}", page.page_requests);
    assert!(page.dom.contains("data-outcome=\"PASS\""), "the verdict");
    assert!(page.dom.contains("Against the earlier qualification"));
    assert!(page.dom.contains("<pre class=\"plan\">"));
    assert!(page.dom.contains("host <b>"), "the environment");
    let scales: std::collections::BTreeMap<String, f64> = charts(&page.dom).into_iter().collect();
    assert_eq!(scales.len(), 3, "{scales:?}");
    assert_eq!(
        scales["criterion 1"], scales["criterion 2"],
        "the two ratios share a scale: {scales:?}"
    );
    let shot = s.path().join("cert.png");
    chromium(&html, s.path(), Some(&shot));
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
}

/// RAL's table 2 as a qualification, on a real btrfs scrub: the users' writes and reads, each
/// run with the scrub paired with one just before it without, the cost held to a budget. Each
/// pair's cost is recomputed here from its two runs, and the scrub the qualification started is
/// stopped at its end.
#[test]
fn a_scrub_held_to_the_users_budget_on_btrfs() {
    let s = Scratch::new();
    // 2 × 300 MiB to scrub at 8 MiB/s per device: a scrub outlasts every loaded run.
    let (pool, work) = BtrfsPool::new(&s, 300);
    let point = pool.mount.point.display().to_string();
    let p = plan(
        &s,
        "ral.toml",
        &format!(
            "name = \"RAL table 2\"\nmax_repeats = 6\n[[job]]\nname = \"users\"\nsettings = {{ phase = [\"write\", \"read\"], bs = \"1m\", size = \"48m\", direct = true }}\ntask = \"btrfs-scrub:{point}@8m\"\n\n[[criterion]]\njob = \"users\"\ncheck = \"write MiB/s cost <= 60%\"\n\n[[criterion]]\njob = \"users\"\ncheck = \"read MiB/s cost <= 60%\"\n"
        ),
    );
    let out = s.storlab(&["qualify", &p, "--target", work.to_str().unwrap(), "--json"]);
    let q = doc(&out);
    let decisions: Vec<String> = q["params"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["decision"].as_str().unwrap().to_string())
        .collect();
    let want = if decisions.iter().any(|d| d == "FAIL") {
        1
    } else if decisions.iter().any(|d| d == "UNDECIDED") {
        5
    } else {
        0
    };
    assert_eq!(out.status.code(), Some(want), "{decisions:?}: {}", stderr(&out));
    eprintln!(
        "RAL table 2 on btrfs: {decisions:?} after {:?} pairs",
        q["params"]["criteria"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["values"].as_array().unwrap().len())
            .collect::<Vec<_>>()
    );
    for c in q["params"]["criteria"].as_array().unwrap() {
        assert_eq!(c["reference"]["against"], "impact", "{c}");
        assert_eq!(c["unit"], "%");
        eprintln!("  {}: costs {:?}, interval {}", c["text"], c["values"], c["interval"]);
    }
    recompute(&s, &q);
    // Idle then loaded in each repetition, the scrub running exactly during the loaded runs.
    let members = q["members"].as_array().unwrap();
    let sides: Vec<bool> = members
        .iter()
        .map(|m| m["role"]["trial"]["loaded"].as_bool().unwrap())
        .collect();
    assert!(sides.chunks(2).all(|p| p == [false, true]), "{sides:?}");
    let mut running = false;
    for e in q["events"].as_array().unwrap() {
        match e["kind"].as_str().unwrap() {
            "task-start" => running = true,
            "task-stopped" => running = false,
            "repetition-start" => assert_eq!(running, e["detail"].as_str().unwrap().contains("with the task"), "{e}"),
            _ => {}
        }
    }
    let status = run_ok("btrfs", &["scrub", "status", &point]);
    assert!(!status.contains("running"), "the scrub was stopped: {status}");
    assert!(entries(&work).is_empty());
}

/// examples/plan-infn.toml (INFN Bari's four curves, a minimum at each point) scaled to this
/// machine: 16 MiB files, 300 ms phases, 1 and 2 processes, minima of 1 MiB/s; on tmpfs
/// (buffered) and on ext4 over a loop device with O_DIRECT. Every criterion decides within the
/// repetitions it needs, and each verdict is recomputed from its runs.
#[test]
fn infn_curves_decide_on_tmpfs_and_on_an_o_direct_loop_device() {
    let s = Scratch::new();
    let example =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan-infn.toml")).unwrap();
    let scaled = example
        .replace("size = \"5g\"", "size = \"16m\"")
        .replace("runtime = \"60s\"", "runtime = \"300ms\"")
        .replace("threads=1,4,8,16", "threads=1,2");
    let scaled = scaled
        .lines()
        .map(|l| match l.strip_prefix("check = \"MiB/s >= ") {
            Some(_) => "check = \"MiB/s >= 1 | 1\"".to_string(),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let point = s.path().join("ext4");
    let fs = loop_filesystem("mkfs.ext4", 512 << 20, &point);
    for (name, target, text) in [
        ("tmpfs", s.data(), scaled.replace("direct = true", "direct = false")),
        ("ext4 O_DIRECT", fs.mount.point.clone(), scaled.clone()),
    ] {
        let p = plan(&s, "infn.toml", &text);
        let out = s.storlab(&["qualify", &p, "--target", target.to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let q = doc(&out);
        let criteria = q["params"]["criteria"].as_array().unwrap();
        assert_eq!(criteria.len(), 8, "{name}: four curves of two points");
        let repeats: Vec<u64> = criteria.iter().map(|c| c["decided_at"].as_u64().unwrap()).collect();
        eprintln!(
            "INFN curves on {name}: decided after {repeats:?} repetitions ({} runs)",
            q["members"].as_array().unwrap().len()
        );
        assert!(criteria.iter().all(|c| c["decision"] == "PASS"), "{name}");
        recompute(&s, &q);
        assert!(
            entries(&target).iter().all(|e| e == "lost+found"),
            "{name}: {:?}",
            entries(&target)
        );
    }
}

/// The seeds' plans in examples/ read and check as they are, with --dry-run, which runs and
/// stores nothing: INFN's (O_DIRECT, 16 points) on a small ext4 over a loop device is refused
/// for the space its 16 processes of 5 GB need; BNL's (IOzone's cells) checks against baseline
/// runs stored with a tag; RAL's names an md array this machine lacks, and is refused naming it.
#[test]
fn the_seeds_plans_check_with_a_dry_run() {
    let s = Scratch::new();
    let example = |name: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join(name)
            .display()
            .to_string()
    };
    let point = s.path().join("small");
    let _fs = loop_filesystem("mkfs.ext4", 256 << 20, &point);
    let out = s.storlab(&[
        "qualify",
        &example("plan-infn.toml"),
        "--target",
        point.to_str().unwrap(),
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("plan-infn.toml:11: job 'serial write threads=1': target")
            && stderr(&out).contains("the job needs 5.00 GiB here"),
        "{}",
        stderr(&out)
    );
    let scaled = s.path().join("infn.toml");
    std::fs::write(
        &scaled,
        std::fs::read_to_string(example("plan-infn.toml"))
            .unwrap()
            .replace("size = \"5g\"", "size = \"4m\""),
    )
    .unwrap();
    let out = s.storlab(&[
        "qualify",
        scaled.to_str().unwrap(),
        "--target",
        point.to_str().unwrap(),
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("plan \"INFN Bari: four curves against the processes\": 4 job(s) at 16 point(s), 16 criteria"),
        "{text}"
    );
    assert!(
        text.contains("serial write threads=16  MiB/s >= 150 | 300 | 400 | 400"),
        "{text}"
    );
    assert!(s.nothing_stored() && entries(&point) == ["lost+found"]);

    // BNL's: the baseline is two IOzone runs stored with fs=ext3.
    let d = s.data();
    for _ in 0..2 {
        let out = s.storlab(&[
            "iozone",
            "-s",
            "4m",
            "-r",
            "64k",
            "-i",
            "0",
            "-i",
            "1",
            "--dir",
            d.to_str().unwrap(),
            "--tag",
            "fs=ext3",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = s.storlab(&[
        "qualify",
        &example("plan-bnl.toml"),
        "--target",
        d.to_str().unwrap(),
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("write MiB/s no worse than baseline by more than 5%"),
        "{}",
        stdout(&out)
    );
    assert_eq!(s.run_count(), Some(2), "the dry run stored nothing");

    let out = s.storlab(&[
        "qualify",
        &example("plan-ral.toml"),
        "--target",
        d.to_str().unwrap(),
        "--dry-run",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("plan-ral.toml:10: job 'users': task md-check:/dev/md0")
            && stderr(&out).contains("not an md array"),
        "{}",
        stderr(&out)
    );
}

/// A metadata workload as a plan's job (INFN's metadata figures: files made, looked at and
/// removed per second): its phases named by their operation, decided on their IOPS and latency,
/// recomputed from the stored runs; MiB/s of an operation that moves no data is refused.
#[test]
fn a_metadata_workload_is_qualified_by_its_operations() {
    let s = Scratch::new();
    let d = s.data();
    let meta = "meta = \"--threads 2 --files-per-thread 300 --phase mkdir,create,stat,remove,rmdir --file-size 4k\"";
    let p = plan(
        &s,
        "meta.toml",
        // Room for a busy machine: a repetition that stalls widens the interval, and the
        // design then needs more looks to decide (it stops at the first that does).
        &format!("max_repeats = 20\n[[job]]\nname = \"mdt\"\n{meta}\n[[criterion]]\njob = \"mdt\"\ncheck = \"create IOPS >= 10\"\n[[criterion]]\njob = \"mdt\"\ncheck = \"stat lat p99 <= 1 s\"\n"),
    );
    let out = s.storlab(&["qualify", &p, "--target", d.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = doc(&out);
    let c = &q["params"]["criteria"];
    assert_eq!(
        (c[0]["phase"].as_str(), c[1]["phase"].as_str()),
        (Some("2 create"), Some("3 stat"))
    );
    recompute(&s, &q);
    let run = s.json(&["results", "show", &q["members"][0]["run_id"].to_string()]);
    assert_eq!(run["kind"], "meta");
    assert!(entries(&d).is_empty(), "the trees are removed: {:?}", entries(&d));
    // --target replaces the target the workload's own flags name, as it replaces a job's.
    let named = plan(
        &s,
        "named.toml",
        "[[job]]\nname = \"mdt\"\nmeta = \"--target /nonexistent/plan-dir --threads 1 --files-per-thread 10 --phase create\"\n[[criterion]]\njob = \"mdt\"\ncheck = \"create IOPS >= 1\"\n",
    );
    let out = s.storlab(&["qualify", &named, "--target", d.to_str().unwrap(), "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = s.storlab(&["qualify", &named, "--dry-run"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "the plan's own target is checked: {}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("/nonexistent/plan-dir"), "{}", stderr(&out));
    let s = Scratch::new();
    refused(
        &s,
        "nodata.toml",
        &format!("[[job]]\nname = \"mdt\"\n{meta}\n[[criterion]]\njob = \"mdt\"\ncheck = \"mkdir MiB/s >= 1\"\n"),
        6,
        "MiB/s: the phase moves no data",
        &[],
    );
}
