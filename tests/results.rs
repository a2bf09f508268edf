//! `storlab results`: tags, filters, removal, Welch comparisons of groups of real runs, and the
//! import of real fio JSON (fio runs here, locally and in client/server mode).
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::*;

/// Runs storlab and expects success; returns its JSON stdout.
fn ok_json(s: &Scratch, args: &[&str]) -> Value {
    s.json(args)
}

fn run_ids(s: &Scratch, extra: &[&str]) -> Vec<i64> {
    let mut a = vec!["results", "list"];
    a.extend_from_slice(extra);
    let v = ok_json(s, &a);
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

fn quick_run(s: &Scratch, rate: &str, tag: &str) -> i64 {
    let d = s.data();
    let v = ok_json(
        s,
        &[
            "run",
            "--target",
            d.to_str().unwrap(),
            "--phase",
            "randread",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--runtime",
            "1s",
            "--rate",
            rate,
            "--tag",
            tag,
        ],
    );
    v["id"].as_i64().unwrap()
}

#[test]
fn tag_filter_untag_and_remove() {
    let s = Scratch::new();
    let a = quick_run(&s, "1000iops", "set=a");
    let b = quick_run(&s, "1000iops", "set=b");
    assert_eq!(run_ids(&s, &["--tag", "set=a"]), vec![a]);
    let out = s.storlab(&["results", "tag", &b.to_string(), "fs=tmpfs", "raid=none"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(run_ids(&s, &["--tag", "fs=tmpfs", "--tag", "raid=none"]), vec![b]);
    assert_eq!(run_ids(&s, &["--kind", "run"]), vec![b, a]);
    assert!(run_ids(&s, &["--kind", "scan"]).is_empty());
    assert!(run_ids(&s, &["--since", "2999-01-01"]).is_empty());
    let out = s.storlab(&["results", "untag", &b.to_string(), "fs"]);
    assert!(out.status.success());
    assert!(run_ids(&s, &["--tag", "fs=tmpfs"]).is_empty());
    // Removal asks unless --yes; without a terminal it refuses and removes nothing.
    let out = s.storlab(&["results", "rm", &a.to_string()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--yes"));
    assert_eq!(run_ids(&s, &[]).len(), 2);
    let out = s.storlab(&["results", "rm", &a.to_string(), "999", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no run 999"), "{}", stderr(&out));
    assert_eq!(run_ids(&s, &[]).len(), 2, "nothing removed when one id is unknown");
    let out = s.storlab(&["results", "rm", &a.to_string(), "--yes"]);
    assert!(out.status.success());
    assert_eq!(run_ids(&s, &[]), vec![b]);
    let out = s.storlab(&["results", "tag", "999", "x=y"]);
    assert_eq!(out.status.code(), Some(2));
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    (m, var.sqrt())
}

#[test]
fn compare_groups_with_welch() {
    let s = Scratch::new();
    let slow: Vec<i64> = (0..3).map(|_| quick_run(&s, "2000iops", "speed=slow")).collect();
    let fast: Vec<i64> = (0..3).map(|_| quick_run(&s, "3000iops", "speed=fast")).collect();
    // The rate is part of the workload: refused, naming what differs.
    let out = s.storlab(&["results", "compare", "speed=slow", "speed=fast"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("rate") && err.contains("--allow-different"), "{err}");
    let v = ok_json(
        &s,
        &["results", "compare", "speed=slow", "speed=fast", "--allow-different"],
    );
    assert!(!v["differences"].as_array().unwrap().is_empty());
    // The IOPS comparison agrees with the stored runs, computed here independently.
    let iops = |ids: &[i64]| -> Vec<f64> {
        ids.iter()
            .map(|id| {
                ok_json(&s, &["results", "show", &id.to_string()])["phases"][0]["result"]["all_done"]["iops"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    let (ma, sa) = mean_sd(&iops(&slow));
    let (mb, sb) = mean_sd(&iops(&fast));
    let m = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "IOPS")
        .unwrap();
    let c = &m["comparison"];
    assert!((c["a"]["mean"].as_f64().unwrap() - ma).abs() < 1e-6);
    assert!((c["b"]["mean"].as_f64().unwrap() - mb).abs() < 1e-6);
    assert!((c["a"]["sd"].as_f64().unwrap() - sa).abs() < 1e-6);
    assert!((c["b"]["sd"].as_f64().unwrap() - sb).abs() < 1e-6);
    assert!((c["diff_percent"].as_f64().unwrap() - 100.0 * (mb - ma) / ma).abs() < 1e-6);
    // 3000 against 2000 IOPS held by rate control: 50 % more, well outside the noise.
    assert_eq!(c["verdict"], "higher", "{c}");
    assert_eq!(m["reading"], "better");
    let (lo, hi) = (
        c["ci95_percent"][0].as_f64().unwrap(),
        c["ci95_percent"][1].as_f64().unwrap(),
    );
    // The interval holds 50 within a point either side: rate control keeps each run within a
    // fraction of its target, so the groups' spread is tiny and the interval narrow (under a
    // suite with a build beside it, [50.11, 50.67] % once).
    assert!(lo < 51.0 && 50.0 < hi + 1.0, "{lo} {hi}");
    // It is the interval of the ratio, both groups' spread counted (Fieller's), recomputed here:
    // the ρ with (mB − ρ·mA)² ≤ t²·(sB²/nB + ρ²·sA²/nA), t at Welch's degrees of freedom.
    let (va, vb) = (sa * sa / 3.0, sb * sb / 3.0);
    let df = c["df"].as_f64().unwrap();
    let welch_df = (va + vb).powi(2) / (va * va / 2.0 + vb * vb / 2.0);
    assert!((df - welch_df).abs() < 1e-9 * welch_df.max(1.0), "{df} {welch_df}");
    let t = t975(df);
    let qa = ma * ma - t * t * va;
    let disc = (ma * mb).powi(2) - qa * (mb * mb - t * t * vb);
    let (rlo, rhi) = ((ma * mb - disc.sqrt()) / qa, (ma * mb + disc.sqrt()) / qa);
    assert!(
        (lo - 100.0 * (rlo - 1.0)).abs() < 1e-6 * 100.0,
        "{lo} against {}",
        100.0 * (rlo - 1.0)
    );
    assert!(
        (hi - 100.0 * (rhi - 1.0)).abs() < 1e-6 * 100.0,
        "{hi} against {}",
        100.0 * (rhi - 1.0)
    );
    // The table says it in words.
    let out = s.storlab(&["results", "compare", "speed=slow", "speed=fast", "--allow-different"]);
    assert!(stdout(&out).contains("IOPS: B is higher than A by"), "{}", stdout(&out));
    // Ids work as groups too; a group of one is said plainly.
    let out = s.storlab(&[
        "results",
        "compare",
        &slow[0].to_string(),
        &format!("{},{}", slow[1], slow[2]),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("group of one"), "{}", stdout(&out));
    // Bad groups.
    for (g, needle) in [
        ("speed=none", "no run matches"),
        ("999", "no run 999"),
        ("1,x", "not a run id"),
    ] {
        let out = s.storlab(&["results", "compare", &slow[0].to_string(), g]);
        assert_eq!(out.status.code(), Some(2), "{g}");
        assert!(stderr(&out).contains(needle), "{g}: {}", stderr(&out));
    }
}

/// Runs fio with `args` and returns its stdout (JSON).
fn fio(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("fio")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("fio (scripts/test installs it)");
    assert!(out.status.success(), "fio: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn fio_json_imports_as_runs() {
    let s = Scratch::new();
    let d = s.data();
    let common_args = [
        "--size=16m",
        "--runtime=1",
        "--time_based",
        "--filename=f.dat",
        "--bs=4k",
    ];
    // A local run with two jobs.
    let mut a = vec!["--output-format=json", "--name=reader", "--rw=randread"];
    a.extend_from_slice(&common_args);
    a.extend_from_slice(&["--name=writer", "--rw=write"]);
    a.extend_from_slice(&common_args);
    let text = fio(&d, &a);
    let file = s.path().join("two-jobs.json");
    std::fs::write(&file, &text).unwrap();
    let v = ok_json(
        &s,
        &[
            "results",
            "import",
            file.to_str().unwrap(),
            "--host",
            "eastwood",
            "--tag",
            "tool=fio",
        ],
    );
    let ids: Vec<i64> = v["imported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    // One invocation: one run, its two jobs the run's phases in order.
    assert_eq!(ids.len(), 1);
    let fio_doc: Value = serde_json::from_str(&text).unwrap();
    let r = ok_json(&s, &["results", "show", &ids[0].to_string()]);
    assert_eq!(r["imported"], true);
    assert_eq!(r["host"], "eastwood");
    assert_eq!(r["kind"], "import");
    assert_eq!(r["job"]["text"].as_str().unwrap(), text, "the original text is kept");
    let jobs = fio_doc["jobs"].as_array().unwrap();
    assert_eq!(r["phases"].as_array().unwrap().len(), jobs.len());
    for (p, job) in r["phases"].as_array().unwrap().iter().zip(jobs) {
        let dir = if job["job options"]["rw"] == "write" {
            &job["write"]
        } else {
            &job["read"]
        };
        assert_eq!(p["kind"], job["job options"]["rw"]);
        let r = &p["result"];
        assert_eq!(r["all_done"]["iops"].as_f64().unwrap(), dir["iops"].as_f64().unwrap());
        assert_eq!(
            r["all_done"]["bytes_per_sec"].as_f64().unwrap(),
            dir["bw_bytes"].as_f64().unwrap()
        );
        assert_eq!(
            r["latency"]["p99_ns"].as_u64().unwrap(),
            dir["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap()
        );
    }
    assert_eq!(run_ids(&s, &["--tag", "tool=fio", "--kind", "import"]).len(), 1);

    // json+ with a mixed job: read and write in one phase, percentiles merged from the bins.
    let mut a = vec!["--output-format=json+", "--name=mix", "--rw=randrw", "--rwmixread=70"];
    a.extend_from_slice(&common_args);
    let text = fio(&d, &a);
    let file = s.path().join("mixed.json");
    std::fs::write(&file, &text).unwrap();
    let v = ok_json(&s, &["results", "import", file.to_str().unwrap()]);
    let id = v["imported"][0].as_i64().unwrap();
    let p = &ok_json(&s, &["results", "show", &id.to_string()])["phases"][0];
    let p = &p["result"];
    assert!(p["bytes_read"].as_u64().unwrap() > 0 && p["bytes_written"].as_u64().unwrap() > 0);
    let job = &serde_json::from_str::<Value>(&text).unwrap()["jobs"][0];
    let p50 = |d: &str| job[d]["clat_ns"]["percentile"]["50.000000"].as_u64().unwrap();
    let merged = p["latency"]["p50_ns"].as_u64().unwrap();
    let (lo, hi) = (p50("read").min(p50("write")), p50("read").max(p50("write")));
    // fio's percentiles are bin edges: the merged median lies within the directions' medians
    // up to one bin (fio's bins are 1/64 of a power of two wide).
    assert!(
        merged as f64 >= lo as f64 * 0.98 && merged as f64 <= hi as f64 * 1.02,
        "{lo} {merged} {hi}"
    );

    // Not fio, cut short, not JSON: refused, and nothing stored.
    let before = run_ids(&s, &[]).len();
    let cut = s.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let other = s.path().join("other.json");
    std::fs::write(&other, r#"{"hello": "world"}"#).unwrap();
    let notjson = s.path().join("notjson.txt");
    std::fs::write(&notjson, "read: IOPS=1000\n").unwrap();
    for (f, needle) in [
        (&cut, "cut short"),
        (&other, "not fio's output"),
        (&notjson, "no output storlab reads"),
    ] {
        let out = s.storlab(&["results", "import", f.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", f.display());
        assert!(stderr(&out).contains(needle), "{}: {}", f.display(), stderr(&out));
    }
    assert_eq!(run_ids(&s, &[]).len(), before);
}

/// A fio server on localhost, killed when dropped.
struct FioServer {
    pid_file: std::path::PathBuf,
}

impl Drop for FioServer {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.pid_file) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
    }
}

#[test]
fn fio_client_server_json_imports_one_run_per_client() {
    let s = Scratch::new();
    let d = s.data();
    // Two servers on two ports of this host: two clients.
    let port = 18765 + (std::process::id() % 1000) as u16;
    let ports = [port, port + 1000];
    let mut _servers = Vec::new();
    for p in ports {
        let pid_file = s.path().join(format!("fio-server-{p}.pid"));
        let st = Command::new("fio")
            .arg(format!("--server=ip:127.0.0.1,{p}"))
            .arg(format!("--daemonize={}", pid_file.display()))
            .current_dir(&d)
            .status()
            .unwrap();
        assert!(st.success());
        _servers.push(FioServer { pid_file });
    }
    let job = s.path().join("job.fio");
    std::fs::write(
        &job,
        format!(
            "[r]\nrw=randread\nbs=4k\nsize=8m\nruntime=1\ntime_based\nfilename={0}/cs.dat\n\
             [w]\nstonewall\nrw=write\nbs=4k\nsize=8m\nruntime=1\ntime_based\nfilename={0}/cs2.dat\n",
            d.display()
        ),
    )
    .unwrap();
    // Two clients, each running the job file.
    let mut text = String::new();
    for _ in 0..50 {
        let out = Command::new("fio")
            .arg(format!("--client=ip:127.0.0.1,{}", ports[0]))
            .arg(&job)
            .arg(format!("--client=ip:127.0.0.1,{}", ports[1]))
            .arg(&job)
            .arg("--output-format=json")
            .output()
            .unwrap();
        if out.status.success() {
            text = String::from_utf8(out.stdout).unwrap();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(text.contains("client_stats"), "fio client/server output: {text}");
    let file = s.path().join("cs.json");
    std::fs::write(&file, &text).unwrap();
    let v = ok_json(&s, &["results", "import", file.to_str().unwrap()]);
    let ids = v["imported"].as_array().unwrap();
    let doc: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let jobs: Vec<&Value> = doc["client_stats"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["jobname"] != "All clients")
        .collect();
    // Two clients of two jobs each: a run per client (its hostname and port), its jobs the
    // phases in order, the aggregate skipped.
    assert_eq!(jobs.len(), 4);
    assert_eq!(ids.len(), 2, "one run per client");
    // The clients in the order fio first names them (it lists jobs as they end, interleaved).
    let mut clients: Vec<&Value> = Vec::new();
    for j in &jobs {
        if !clients.contains(&&j["port"]) {
            clients.push(&j["port"]);
        }
    }
    assert_eq!(clients.len(), 2);
    for (id, port) in ids.iter().zip(clients) {
        let r = ok_json(&s, &["results", "show", &id.to_string()]);
        let own: Vec<&&Value> = jobs.iter().filter(|j| &j["port"] == port).collect();
        assert_eq!(r["host"], own[0]["hostname"]);
        let kinds: Vec<&str> = r["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["randread", "write"]);
        let iops = r["phases"][0]["result"]["all_done"]["iops"].as_f64().unwrap();
        assert_eq!(iops, own[0]["read"]["iops"].as_f64().unwrap());
    }
}

#[test]
fn export_in_every_format() {
    use calamine::{Data, Reader};
    let s = Scratch::new();
    let id = quick_run(&s, "2000iops", "x=y").to_string();
    let out = s.storlab(&["results", "export", &id, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mibs = j["phases"][0]["MiB/s"].as_f64().unwrap();
    assert!(mibs > 0.0);
    assert!(!j["samples"].as_array().unwrap().is_empty());
    // XLSX: one sheet per table, numbers as numbers (read back with calamine).
    let x = s.path().join("runs.xlsx");
    let out = s.storlab(&["results", "export", &id, "--format", "xlsx", "-o", x.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut wb: calamine::Xlsx<_> = calamine::open_workbook(&x).unwrap();
    assert_eq!(wb.sheet_names(), vec!["phases", "samples", "environment"]);
    let phases = wb.worksheet_range("phases").unwrap();
    let header: Vec<String> = phases.rows().next().unwrap().iter().map(|c| c.to_string()).collect();
    let col = header.iter().position(|h| h == "MiB/s").unwrap();
    match &phases.rows().nth(1).unwrap()[col] {
        Data::Float(f) => assert!((f - mibs).abs() < 1e-9),
        other => panic!("MiB/s is not a number in the workbook: {other:?}"),
    }
    // CSV and Markdown carry the same figure.
    let csv = stdout(&s.storlab(&["results", "export", &id, "--format", "csv", "--no-samples"]));
    assert!(csv.starts_with("# table: phases\nrun,host,job,seq,phase"), "{csv}");
    assert!(!csv.contains("# table: samples"));
    // The figure read back from each text format equals the JSON one (compared as numbers: JSON
    // parsing may land one unit in the last place away from the printed digits).
    let same = |text: &str, sep: char| {
        let lines: Vec<Vec<String>> = text
            .lines()
            .filter(|l| l.contains(sep) && !l.starts_with("| ---"))
            .map(|l| l.split(sep).map(|c| c.trim().to_string()).collect())
            .collect();
        let col = lines[0].iter().position(|h| h == "MiB/s").unwrap();
        let v: f64 = lines[1][col].parse().unwrap();
        assert!((v - mibs).abs() <= mibs * 1e-12, "{v} against {mibs}: {text}");
    };
    same(csv.lines().skip(1).collect::<Vec<_>>().join("\n").as_str(), ',');
    let md = stdout(&s.storlab(&["results", "export", &id, "--format", "markdown"]));
    assert!(md.contains("## phases"));
    same(md.split("## samples").next().unwrap(), '|');
    // Bad input: an unknown format, a run that does not exist; nothing written.
    let out = s.storlab(&["results", "export", &id, "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("csv, json, markdown, xlsx"));
    let missing = s.path().join("missing.csv");
    let out = s.storlab(&[
        "results",
        "export",
        &id,
        "999",
        "--format",
        "csv",
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no run 999"));
    assert!(!missing.exists());
}

/// `storlab results studies` lists every study with its runs counted: sweeps of two and three
/// points, newest first, each count equal to the members `results study ID` shows; a
/// study id that is not there is refused naming the list.
#[test]
fn studies_are_listed_with_their_runs() {
    let s = Scratch::new();
    let d = s.data();
    let target = d.to_str().unwrap();
    let out = s.storlab(&[
        "sweep",
        "--vary",
        "threads=1,2",
        "--target",
        target,
        "--phase",
        "write",
        "--size",
        "1m",
        "--bs",
        "64k",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = s.storlab(&[
        "sweep",
        "--vary",
        "bs=64k,128k,256k",
        "--target",
        target,
        "--phase",
        "write",
        "--size",
        "1m",
        "-q",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list = ok_json(&s, &["results", "studies"]);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    assert!(
        list[0]["id"].as_i64() > list[1]["id"].as_i64(),
        "newest first: {list:?}"
    );
    assert_eq!(list[1]["kind"], "sweep", "{list:?}");
    assert!(list[1]["command"]
        .as_str()
        .unwrap()
        .contains("sweep --vary threads=1,2"));
    for st in list {
        let id = st["id"].as_i64().unwrap().to_string();
        let one = ok_json(&s, &["results", "study", &id]);
        let members = one["members"].as_array().unwrap().len() as i64;
        assert_eq!(st["runs"].as_i64(), Some(members), "study {id}: {st} vs {one}");
    }
    let out = s.storlab(&["results", "study", "99"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`storlab results studies`"), "{}", stderr(&out));
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom: the test's own
/// (tests/common/stats.rs), not the statistics crate's.
fn t975(df: f64) -> f64 {
    common::stats::t_critical(0.05, df)
}

/// Phases are compared with like phases — their kind and the settings that shape the work —
/// never by their place in the run: a run of read then randread against runs of randread alone
/// sets randread against randread and lists the read as unpaired; the settings that differ are
/// a line each.
#[test]
fn phases_are_compared_like_with_like_never_by_position() {
    let s = Scratch::new();
    let d = s.data();
    let run = |phases: &[&str], tag: &str| -> i64 {
        let mut a = vec![
            "run",
            "--target",
            d.to_str().unwrap(),
            "--bs",
            "4k",
            "--size",
            "8m",
            "--runtime",
            "1s",
            "--tag",
            tag,
        ];
        for p in phases {
            a.extend(["--phase", p]);
        }
        ok_json(&s, &a)["id"].as_i64().unwrap()
    };
    let a: Vec<i64> = (0..2).map(|_| run(&["read", "randread"], "side=a")).collect();
    let b: Vec<i64> = (0..2).map(|_| run(&["randread"], "side=b")).collect();
    let v = ok_json(&s, &["results", "compare", "side=a", "side=b", "--allow-different"]);
    let metrics = v["metrics"].as_array().unwrap();
    assert!(!metrics.is_empty());
    assert!(
        metrics.iter().all(|m| m["kind"] == "randread"),
        "only randread is compared: {v}"
    );
    let unpaired = v["unpaired"].as_array().unwrap();
    assert_eq!(unpaired.len(), 2, "each A run's read: {v}");
    for (u, id) in unpaired.iter().zip(&a) {
        assert!(
            u.as_str().unwrap().starts_with(&format!("run {id} phase 1 (read")),
            "{u}"
        );
    }
    // The read's own randread against B's: the IOPS compared are the randread phases' own.
    let iops = |id: i64, seq: usize| {
        ok_json(&s, &["results", "show", &id.to_string()])["phases"][seq]["result"]["all_done"]["iops"]
            .as_f64()
            .unwrap()
    };
    let m = metrics.iter().find(|m| m["metric"] == "IOPS").unwrap();
    let mean_a = (iops(a[0], 1) + iops(a[1], 1)) / 2.0;
    assert!((m["comparison"]["a"]["mean"].as_f64().unwrap() - mean_a).abs() < 1e-6);
    // The phases differ, said in one line; no percentage interval goes below −100 %.
    let diffs = v["differences"].as_array().unwrap();
    assert!(
        diffs.iter().any(|d| d.as_str().unwrap().starts_with("phases: ")),
        "{diffs:?}"
    );
    assert!(diffs.len() < 12, "{diffs:?}");
    for m in metrics {
        if let Some(lo) = m["comparison"]["ci95_percent"][0].as_f64() {
            assert!(lo >= -100.0, "{m}");
        }
    }
    let _ = b;
}
