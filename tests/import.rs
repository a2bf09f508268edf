//! `storlab results import`: what the real fio, IOzone, IOR and mdtest printed on this machine
//! (tests/fixtures/import, their command lines in ORIGIN.md), in every format the issue names,
//! read into stored runs; the figures expected are read out of the same files here, not
//! written down. Damaged copies are refused by line, storing nothing; a directory imports
//! file by file.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use serde_json::Value;

mod common;
use common::*;

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
        .display()
        .to_string()
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// Imports a fixture, returning the stored runs (as `results show --json` prints them).
fn import(s: &Scratch, name: &str) -> Vec<Value> {
    let v = s.json(&["results", "import", &fixture(name)]);
    v["imported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| s.json(&["results", "show", &id.to_string()]))
        .collect()
}

/// Imports a damaged fixture: refused with exit 2, the reason containing `why`, nothing stored.
fn refused_whole(s: &Scratch, name: &str, why: &str) {
    let before = s.run_count().unwrap();
    let out = s.storlab(&["results", "import", &fixture(name)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(why), "{}", stderr(&out));
    assert_eq!(s.run_count().unwrap(), before);
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

fn not_measured(phase: &Value) -> Vec<String> {
    phase["result"]["not_measured"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// The JSON documents in a fixture, as fio wrote them (each starts at a line "{").
fn fio_documents(name: &str) -> Vec<Value> {
    let t = text(name);
    let mut docs = Vec::new();
    let mut at = 0;
    let next = |at: usize| {
        if at == 0 && t.starts_with('{') {
            Some(0)
        } else {
            t[at..].find("\n{").map(|i| at + i + 1)
        }
    };
    while let Some(i) = next(at) {
        let mut it = serde_json::Deserializer::from_str(&t[i..]).into_iter::<Value>();
        docs.push(it.next().unwrap().unwrap());
        at = i + it.byte_offset();
    }
    docs
}

#[test]
fn fio_json_is_found_among_fios_other_text_and_several_documents_are_several_runs() {
    let s = Scratch::new();
    // json,normal with the banner and "note:" lines before: one invocation, so one run whose
    // phases are the JSON's two jobs in order (as `storlab fio` stores the same job file).
    let runs = import(&s, "fio-json-normal.txt");
    let doc = &fio_documents("fio-json-normal.txt")[0];
    let jobs = doc["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(runs.len(), 1);
    let phases = runs[0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), jobs.len());
    let names: Vec<&str> = jobs.iter().map(|j| j["jobname"].as_str().unwrap()).collect();
    assert_eq!(runs[0]["job_name"], format!("fio {}", names.join(", ")));
    for (phase, job) in phases.iter().zip(jobs) {
        let want = f(&job["read"]["bw_bytes"]) + f(&job["write"]["bw_bytes"]);
        assert!(close(f(&phase["result"]["all_done"]["bytes_per_sec"]), want));
        assert_eq!(phase["result"]["bytes_read"], job["read"]["io_bytes"]);
        assert!(not_measured(phase).contains(&"first_done".to_string()));
        assert!(!not_measured(phase).contains(&"latency".to_string()));
    }
    assert_eq!(phases[0]["kind"], "randrw");

    // Two documents one after the other: a run each, in order.
    let runs = import(&s, "fio-two-json.json");
    let docs = fio_documents("fio-two-json.json");
    assert_eq!(docs.len(), 2);
    assert_eq!(runs.len(), 2);
    for (run, doc) in runs.iter().zip(&docs) {
        let job = &doc["jobs"][0];
        assert_eq!(run["job_name"], format!("fio {}", job["jobname"].as_str().unwrap()));
        let dir = if run["phases"][0]["kind"] == "randread" {
            "read"
        } else {
            "write"
        };
        assert!(close(
            f(&run["phases"][0]["result"]["all_done"]["iops"]),
            f(&job[dir]["iops"])
        ));
    }

    // json+: its bins are read; the latency is there.
    let runs = import(&s, "fio-jsonplus.json");
    let job = &fio_documents("fio-jsonplus.json")[0]["jobs"][0];
    assert_eq!(
        runs[0]["phases"][0]["result"]["bytes_written"],
        job["write"]["io_bytes"]
    );
    assert!(f(&runs[0]["phases"][0]["result"]["latency"]["p99_ns"]) > 0.0);

    // Cut short: refused with the document's line, nothing stored by it.
    refused_whole(
        &s,
        "damaged-fio-truncated.json",
        "the JSON document at line 1 is cut short",
    );
}

#[test]
fn fio_terse_versions_3_and_5_import_with_every_figure_they_carry() {
    let s = Scratch::new();
    for (name, version, per_dir) in [("fio-terse-v3.txt", 3, 41), ("fio-terse-v5.txt", 5, 47)] {
        let runs = import(&s, name);
        let lines: Vec<Vec<String>> = text(name)
            .lines()
            .filter(|l| l.starts_with(&format!("{version};fio-")))
            .map(|l| l.split(';').map(str::to_string).collect())
            .collect();
        // One invocation's lines: one run, a phase per line (job), in order.
        assert_eq!(lines.len(), 2);
        assert_eq!(runs.len(), 1, "{name}");
        let run = &runs[0];
        let names: Vec<&str> = lines.iter().map(|fld| fld[2].as_str()).collect();
        assert_eq!(run["job_name"], format!("fio {}", names.join(", ")));
        let phases = run["phases"].as_array().unwrap();
        assert_eq!(phases.len(), lines.len());
        for (phase, fld) in phases.iter().zip(&lines) {
            let x = |i: usize| fld[i].trim_end_matches('%').parse::<f64>().unwrap();
            let r = &phase["result"];
            // Read: fields 6 (KiB), 7 (KiB/s), 8 (IOPS); write starts a direction later.
            let w = 5 + per_dir;
            assert_eq!(f(&r["bytes_read"]), x(5) * 1024.0, "{name}");
            assert_eq!(f(&r["bytes_written"]), x(w) * 1024.0, "{name}");
            assert!(close(f(&r["all_done"]["bytes_per_sec"]), (x(6) + x(w + 1)) * 1024.0));
            assert!(close(f(&r["all_done"]["iops"]), x(7) + x(w + 2)));
            // The read's 99th percentile of completion latency, µs (field 12 + 12 of the
            // direction is "1.000000%=..."; 99% is the 13th).
            let p99_read: f64 = fld[5 + 12 + 12].split("%=").nth(1).unwrap().parse().unwrap();
            assert!(fld[5 + 12 + 12].starts_with("99.000000%="));
            assert!(f(&r["latency"]["p99_ns"]) >= p99_read * 1000.0);
            let kinds = if x(w) > 0.0 { "reads and writes" } else { "reads" };
            assert_eq!(phase["kind"], kinds);
            assert!(not_measured(phase).contains(&"worker_spread".to_string()));
        }
        assert_eq!(run["job"]["format"], format!("fio terse version {version}"));
    }
    refused_whole(
        &s,
        "damaged-fio-terse.txt",
        "line 4: fio terse version 3 has 121 fields per job, this line 40",
    );
}

#[test]
fn fio_normal_text_gives_bandwidth_iops_and_percentiles_per_direction() {
    let s = Scratch::new();
    // One invocation of two jobs: one run of two phases.
    let runs = import(&s, "fio-normal.txt");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["phases"].as_array().unwrap().len(), 2);
    let t = text("fio-normal.txt");
    let randrw = &runs[0]["phases"][0];
    assert_eq!(randrw["kind"], "randrw");
    assert_eq!(randrw["params"]["imported"]["bs"], 4096);
    assert_eq!(randrw["params"]["imported"]["workers"], 2);
    // "read: IOPS=515k, BW=2010MiB/s" and "write: IOPS=230k, BW=899MiB/s" as printed.
    let figure = |line: &str, key: &str| -> f64 {
        let l = t.lines().find(|l| l.trim_start().starts_with(line)).unwrap();
        let v = l.split(key).nth(1).unwrap().split([',', ' ', '(']).next().unwrap();
        let (n, m) = match v.strip_suffix("MiB/s") {
            Some(n) => (n, 1048576.0),
            None => match v.strip_suffix('k') {
                Some(n) => (n, 1e3),
                None => (v, 1.0),
            },
        };
        n.parse::<f64>().unwrap() * m
    };
    let r = &randrw["result"];
    assert!(close(
        f(&r["all_done"]["bytes_per_sec"]),
        figure("read:", "BW=") + figure("write:", "BW=")
    ));
    assert!(close(
        f(&r["all_done"]["iops"]),
        figure("read:", "IOPS=") + figure("write:", "IOPS=")
    ));
    // The 99th percentile: the larger of the read's and the write's (both printed in nsec).
    let p99s: Vec<f64> = t
        .lines()
        .filter_map(|l| l.split("99.00th=[").nth(1))
        .map(|v| v.split(']').next().unwrap().trim().parse::<f64>().unwrap())
        .collect();
    assert_eq!(f(&r["latency"]["p99_ns"]), p99s[0].max(p99s[1]));
    assert_eq!(runs[0]["started_at"], "2026-11-24T08:31:33Z");
    // The sequential read: printed in usec.
    let seq = &runs[0]["phases"][1];
    assert_eq!(seq["kind"], "read");
    assert_eq!(f(&seq["result"]["latency"]["p99_ns"]), p99s[2] * 1000.0);
}

#[test]
fn iozone_table_ops_cpu_indented_and_concatenated_import() {
    let s = Scratch::new();
    // The automatic-mode table without -R: a run per cell, one study.
    let runs = import(&s, "iozone-auto.txt");
    assert_eq!(runs.len(), 9);
    let t = text("iozone-auto.txt");
    let row: Vec<f64> = t
        .lines()
        .find(|l| l.split_whitespace().take(2).collect::<Vec<_>>() == ["1024", "256"])
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    let last = &runs[8];
    assert_eq!(last["job_name"], "iozone 1024 kB × 256 kB (imported)");
    let kinds: Vec<&str> = last["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["write", "rewrite", "read", "reread"]);
    for (k, p) in last["phases"].as_array().unwrap().iter().enumerate() {
        assert!(close(f(&p["result"]["all_done"]["bytes_per_sec"]), row[2 + k] * 1024.0));
        let nm = not_measured(p);
        for fig in ["latency", "cpu", "first_done", "worker_spread"] {
            assert!(nm.contains(&fig.to_string()), "{fig} in {nm:?}");
        }
    }
    let study = s.json(&["results", "study", "1"]);
    assert_eq!(study["kind"], "iozone-import");
    assert!(study["params"]["imported_from"]
        .as_str()
        .unwrap()
        .ends_with("iozone-auto.txt"));
    let members: Vec<&Value> = study["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &m["run_id"])
        .collect();
    assert_eq!(members, runs.iter().map(|r| &r["id"]).collect::<Vec<_>>());
    // Its table: IOzone measured no latency, so the p99 column is "—", not 0.0.
    let shown = stdout(&s.storlab(&["results", "study", "1"]));
    let cell = shown
        .lines()
        .find(|l| l.contains("1024") && l.contains("256"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(cell.contains('—') && !cell.contains(" 0.0 "), "{cell}");

    // Pasted into notes with every line indented: the same figures.
    let indented = import(&s, "iozone-indented.txt");
    assert_eq!(indented.len(), 9);
    for (a, b) in runs.iter().zip(&indented) {
        for (pa, pb) in a["phases"]
            .as_array()
            .unwrap()
            .iter()
            .zip(b["phases"].as_array().unwrap())
        {
            assert_eq!(pa["result"]["all_done"], pb["result"]["all_done"]);
        }
    }

    // Blank columns between the tests run: each figure under its own test.
    let runs = import(&s, "iozone-auto-gaps.txt");
    let first = &runs[0];
    let kinds: Vec<&str> = first["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["write", "rewrite", "randread", "randwrite", "write", "rewrite"]);
    let t = text("iozone-auto-gaps.txt");
    let row: Vec<f64> = t
        .lines()
        .find(|l| l.split_whitespace().take(2).collect::<Vec<_>>() == ["256", "64"])
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(first["phases"][2]["params"]["imported"]["test"], "Random read");
    assert!(close(
        f(&first["phases"][2]["result"]["all_done"]["bytes_per_sec"]),
        row[4] * 1024.0
    ));
    assert_eq!(first["phases"][4]["params"]["imported"]["test"], "Fwrite");

    // -O: operations per second; bytes/s are ops/s × the record size.
    let runs = import(&s, "iozone-auto-ops.txt");
    let p = &runs[0]["phases"][0];
    let t = text("iozone-auto-ops.txt");
    let ops: f64 = t
        .lines()
        .find(|l| l.split_whitespace().take(2).collect::<Vec<_>>() == ["256", "64"])
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(close(f(&p["result"]["all_done"]["iops"]), ops));
    assert!(close(f(&p["result"]["all_done"]["bytes_per_sec"]), ops * 64.0 * 1024.0));

    // -+u with -R: the CPU utilisation reports give each phase's CPU time.
    let runs = import(&s, "iozone-auto-cpu-R.txt");
    let p = &runs[0]["phases"][0];
    assert!(!not_measured(p).contains(&"cpu".to_string()));
    let t = text("iozone-auto-cpu-R.txt");
    let pct = iozone_report_first_figure(&t, "\"Writer CPU utilization report");
    let seconds = f(&p["result"]["all_done"]["seconds"]);
    assert!(close(f(&p["result"]["cpu_user"]), pct / 100.0 * seconds));

    // -+u in throughput mode: IOzone's CPU time of each test.
    let runs = import(&s, "iozone-throughput-cpu.txt");
    let t = text("iozone-throughput-cpu.txt");
    let cpu: f64 = t
        .lines()
        .find(|l| l.contains("CPU time"))
        .unwrap()
        .split("CPU time")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(f(&runs[0]["phases"][0]["result"]["cpu_user"]), cpu);
    assert!(!not_measured(&runs[0]["phases"][0]).contains(&"worker_spread".to_string()));

    // Two runs in one file: the matrix's nine cells and the throughput run. A fresh file: an
    // import is known by its content, and the matrix's cells are already stored above.
    let s = Scratch::new();
    let runs = import(&s, "iozone-concatenated.txt");
    assert_eq!(runs.len(), 10);
    assert_eq!(runs[9]["job_name"], "iozone -t 2 (imported)");
    assert_eq!(
        runs[9]["job"]["first_line"],
        text("iozone-auto.txt").lines().count() + 1
    );
    assert_eq!(runs[9]["phases"][0]["result"]["all_done"]["iops"], {
        let t = text("iozone-throughput-ops.txt");
        let l = t
            .lines()
            .find(|l| l.contains("Parent sees throughput for  2 initial writers"))
            .unwrap();
        Value::from(
            l.split('=')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .parse::<f64>()
                .unwrap(),
        )
    });

    // A figure that is not a number: refused with its line and column.
    refused_whole(&s, "damaged-iozone-table.txt", "line 31: \"21#5500\" under \"write\"");
}

#[test]
fn ior_text_and_json_and_mdtest_summaries_import() {
    let s = Scratch::new();
    let runs = import(&s, "ior-text.txt");
    assert_eq!(runs.len(), 3, "one run per iteration");
    let t = text("ior-text.txt");
    for (k, run) in runs.iter().enumerate() {
        assert_eq!(run["host"], "vm", "IOR's Machine line");
        assert_eq!(run["job_name"], format!("ior iteration {k} (imported)"));
        for p in run["phases"].as_array().unwrap() {
            let row: Vec<&str> = t
                .lines()
                .find(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    w.len() == 11 && w[0] == p["kind"].as_str().unwrap() && w[10] == k.to_string()
                })
                .unwrap()
                .split_whitespace()
                .collect();
            let mib: f64 = row[1].parse().unwrap();
            assert!(close(f(&p["result"]["all_done"]["bytes_per_sec"]), mib * 1048576.0));
            assert!(close(f(&p["result"]["all_done"]["iops"]), row[2].parse().unwrap()));
            assert!(close(f(&p["result"]["all_done"]["seconds"]), row[9].parse().unwrap()));
            // 2 tasks × 16 MiB.
            assert_eq!(f(&p["result"]["all_done"]["bytes"]), 32.0 * 1048576.0);
            assert!(not_measured(p).contains(&"latency".to_string()));
        }
    }
    let shown = stdout(&s.storlab(&["results", "show", &runs[0]["id"].to_string()]));
    assert!(
        shown.lines().any(|l| l.starts_with("1 write") && l.contains('—')),
        "{shown}"
    );

    // Only IOR's summary kept: one run, the means over the three iterations.
    let runs = import(&s, "ior-summary-only.txt");
    assert_eq!(runs.len(), 1);
    let t = text("ior-summary-only.txt");
    let row: Vec<&str> = t
        .lines()
        .find(|l| l.starts_with("read "))
        .unwrap()
        .split_whitespace()
        .collect();
    let read = &runs[0]["phases"][1];
    assert_eq!(read["kind"], "read");
    assert!(close(
        f(&read["result"]["all_done"]["bytes_per_sec"]),
        row[3].parse::<f64>().unwrap() * 1048576.0
    ));
    assert!(close(f(&read["result"]["all_done"]["iops"]), row[7].parse().unwrap()));
    assert_eq!(read["params"]["imported"]["workers"], 2);
    assert!(read["params"]["imported"]["notes"][0]
        .as_str()
        .unwrap()
        .contains("over 3 iteration(s)"));

    // IOR's JSON (with the trailing comma IOR leaves in it): two iterations.
    let runs = import(&s, "ior-json.json");
    assert_eq!(runs.len(), 2);
    let t = text("ior-json.json");
    let bws: Vec<f64> = t
        .lines()
        .filter_map(|l| l.trim().strip_prefix("\"bwMiB\": "))
        .map(|v| v.trim_end_matches([',', ' ']).parse().unwrap())
        .collect();
    assert_eq!(bws.len(), 4);
    assert!(close(
        f(&runs[0]["phases"][0]["result"]["all_done"]["bytes_per_sec"]),
        bws[0] * 1048576.0
    ));
    assert!(close(
        f(&runs[1]["phases"][1]["result"]["all_done"]["bytes_per_sec"]),
        bws[3] * 1048576.0
    ));

    // mdtest: a phase per operation, the mean rate, nothing else measured.
    let runs = import(&s, "mdtest.txt");
    assert_eq!(runs.len(), 1);
    let t = text("mdtest.txt");
    let phases = runs[0]["phases"].as_array().unwrap();
    let kinds: Vec<&str> = phases.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["create", "stat", "read", "remove", "tree creation", "tree removal"]
    );
    let mean: f64 = t
        .lines()
        .find(|l| l.trim_start().starts_with("File stat"))
        .unwrap()
        .split_whitespace()
        .nth(4)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(f(&phases[1]["result"]["all_done"]["iops"]), mean);
    assert_eq!(phases[1]["params"]["imported"]["workers"], 2);
    for fig in ["throughput", "seconds", "latency", "cpu"] {
        assert!(not_measured(&phases[1]).contains(&fig.to_string()));
    }
    assert_eq!(runs[0]["started_at"], "2026-11-24T08:31:44Z");
    let shown = stdout(&s.storlab(&["results", "show", &runs[0]["id"].to_string()]));
    let stat = shown.lines().find(|l| l.starts_with("2 stat")).unwrap();
    assert!(!stat.contains("0.00") && stat.contains('—'), "{stat}");

    // The export leaves what was not measured empty, never 0.
    let csv = stdout(&s.storlab(&["results", "export", &runs[0]["id"].to_string(), "--format", "csv"]));
    let header: Vec<&str> = csv
        .lines()
        .find(|l| l.contains("MiB/s") || l.contains("mib_per_sec") || l.contains("lat"))
        .unwrap()
        .split(',')
        .collect();
    let row = csv.lines().find(|l| l.contains(",stat,")).unwrap();
    let cells: Vec<&str> = row.split(',').collect();
    let p50 = header.iter().position(|h| h.contains("p50")).unwrap();
    assert_eq!(cells[p50], "", "{header:?}\n{row}");
}

#[test]
fn a_directory_imports_file_by_file_and_names_what_it_could_not() {
    let s = Scratch::new();
    let dir = s.path().join("results-2019");
    std::fs::create_dir_all(dir.join("old")).unwrap();
    for name in ["fio-two-json.json", "iozone-auto.txt", "damaged-fio-terse.txt"] {
        std::fs::copy(fixture(name), dir.join(name)).unwrap();
    }
    std::fs::copy(fixture("mdtest.txt"), dir.join("old/mdtest.txt")).unwrap();
    std::fs::write(dir.join("old/photo.jpg"), [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]).unwrap();
    let out = s.storlab(&["results", "import", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "a file not imported: {}", stderr(&out));
    let o = stdout(&out);
    let line = |name: &str| {
        o.lines()
            .find(|l| l.starts_with(&dir.join(name).display().to_string()))
            .unwrap_or_else(|| panic!("no line for {name}: {o}"))
    };
    assert!(line("fio-two-json.json").contains("imported 2 run(s) from fio JSON"));
    assert!(line("iozone-auto.txt").contains("imported 9 run(s) from IOzone text"));
    assert!(line("old/mdtest.txt").contains("imported 1 run(s) from mdtest summary"));
    assert!(
        line("damaged-fio-terse.txt").contains("not imported: ") && line("damaged-fio-terse.txt").contains("line 4")
    );
    assert!(line("old/photo.jpg").contains("not imported: ") && line("old/photo.jpg").contains("not text"));
    assert!(
        stderr(&out).contains("imported 12 run(s) from 3 of 5 file(s)"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("2 file(s) not imported"), "{}", stderr(&out));
    assert_eq!(s.run_count().unwrap(), 12);

    // --json: a record per file; what is stored already (by content) is skipped and said.
    let out = s.storlab(&["results", "import", dir.join("old").to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["not_imported"], 1);
    assert_eq!(v["imported"].as_array().unwrap().len(), 0);
    assert_eq!(v["already_stored"].as_array().unwrap().len(), 1);
    assert_eq!(v["files"].as_array().unwrap().len(), 2);

    // The whole directory again, under another host name: nothing stored twice.
    let out = s.storlab(&["results", "import", dir.to_str().unwrap(), "--host", "elsewhere"]);
    let o = stdout(&out);
    let again = |name: &str| {
        o.lines()
            .find(|l| l.starts_with(&dir.join(name).display().to_string()))
            .unwrap_or_else(|| panic!("no line for {name}: {o}"))
            .to_string()
    };
    assert!(again("fio-two-json.json").contains("already stored (runs "), "{o}");
    assert!(again("iozone-auto.txt").contains("already stored"), "{o}");
    assert!(stderr(&out).contains("imported 0 run(s)"), "{}", stderr(&out));
    assert!(stderr(&out).contains("12 already stored"), "{}", stderr(&out));
    assert_eq!(s.run_count().unwrap(), 12);
    // A file changed since is new content: imported.
    let mut text = std::fs::read_to_string(dir.join("old/mdtest.txt")).unwrap();
    text = text.replacen("mdtest", "mdtest ", 1);
    std::fs::write(dir.join("old/mdtest.txt"), text).unwrap();
    let v = s.json(&["results", "import", dir.join("old/mdtest.txt").to_str().unwrap()]);
    assert_eq!(v["imported"].as_array().unwrap().len(), 1, "{v}");
}

#[test]
fn unmeasured_figures_are_left_out_of_comparisons() {
    let s = Scratch::new();
    // IOR's three iterations against its two JSON iterations: bandwidth compares, latency is
    // not measured in either and is said so.
    let a = import(&s, "ior-text.txt");
    let b = import(&s, "ior-json.json");
    let ids = |r: &[Value]| r.iter().map(|x| x["id"].to_string()).collect::<Vec<_>>().join(",");
    let out = s.storlab(&["results", "compare", &ids(&a), &ids(&b), "--allow-different", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let metrics: Vec<&str> = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert!(metrics.contains(&"MiB/s"), "{metrics:?}");
    assert!(!metrics.iter().any(|m| m.starts_with("lat")), "{metrics:?}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("lat p99 of phase 1 write not measured in 3 of its 3 run(s)"),
        "{warnings}"
    );
}

/// A figure that is not a finite number — an IOzone cell of 1e308 (infinite once in bytes), an
/// mdtest `inf`, a `NaN` — refuses the file whole, naming its line and column; nothing stored,
/// and every command still reads the database.
#[test]
fn a_figure_that_is_not_finite_is_refused_by_line_and_column() {
    let s = Scratch::new();
    let dir = tempfile::tempdir().unwrap();
    let iozone = text("iozone-auto.txt");
    let (n, line) = iozone
        .lines()
        .enumerate()
        .find(|(_, l)| l.split_whitespace().count() > 4 && l.split_whitespace().all(|w| w.parse::<f64>().is_ok()))
        .expect("a row of the table");
    let third = line.split_whitespace().nth(2).unwrap();
    let column = line.find(&format!(" {third}")).unwrap() + 2;
    let changed = iozone.replacen(line, &line.replacen(&format!(" {third}"), " 1e308", 1), 1);
    let mdtest = text("mdtest.txt");
    let mean = mdtest
        .lines()
        .find(|l| l.trim_start().starts_with("File creation"))
        .and_then(|l| l.split_whitespace().nth(4))
        .unwrap()
        .to_string();
    for (name, body, at) in [
        (
            "iozone.txt",
            changed,
            format!("line {}, column {column}: `1e308`", n + 1),
        ),
        ("mdtest-inf.txt", mdtest.replacen(&mean, "inf", 1), "`inf`".to_string()),
        ("mdtest-nan.txt", mdtest.replacen(&mean, "NaN", 1), "`NaN`".to_string()),
    ] {
        let f = dir.path().join(name);
        std::fs::write(&f, body).unwrap();
        let out = s.storlab(&["results", "import", f.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&at), "{name}: {err}");
        assert!(err.contains("is not a figure storlab can store"), "{err}");
        assert!(!err.contains("constraint"), "{err}");
    }
    assert!(s.nothing_stored());
}

/// Eight imports of one file at once: every one exits 0, the runs are stored once, and the
/// seven that lost the race say the runs were already stored.
#[test]
fn eight_imports_of_one_file_at_once_each_get_an_answer() {
    let s = Scratch::new();
    // The database made first (its migrations are not what is raced).
    let _ = s.store_new();
    let file = fixture("iozone-auto.txt");
    let children: Vec<_> = (0..8)
        .map(|_| {
            std::process::Command::new(bin())
                .args(["results", "import", &file])
                .env("STORLAB_DB", s.db())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let stored = s.run_count().unwrap();
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
    }
    let already = outs.iter().filter(|o| stderr(o).contains("already stored")).count();
    assert_eq!(stored, 9, "the nine cells stored once");
    assert!(already >= 7, "{already} of 8 said already stored");
}

/// The `imported` and `already_stored` ids of an import of `path` (with `more` flags).
fn import_ids(s: &Scratch, path: &std::path::Path, more: &[&str]) -> (Vec<i64>, Vec<i64>) {
    let mut args = vec!["results", "import", path.to_str().unwrap()];
    args.extend_from_slice(more);
    let v = s.json(&args);
    let ids = |k: &str| -> Vec<i64> {
        let mut ids: Vec<i64> = v[k].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
        ids.sort_unstable();
        ids
    };
    (ids("imported"), ids("already_stored"))
}

/// docs/results.md's promise: an import is known by its content. The same outputs copied under
/// other names into another directory are skipped as already stored.
#[test]
fn the_same_output_under_another_name_and_place_is_stored_once() {
    let s = Scratch::new();
    let elsewhere = tempfile::tempdir_in(s.path()).unwrap();
    for (k, name) in ["fio-two-json.json", "iozone-auto.txt", "fio-terse-v3.txt", "mdtest.txt"]
        .iter()
        .enumerate()
    {
        let (first, again) = import_ids(&s, std::path::Path::new(&fixture(name)), &[]);
        assert!(!first.is_empty() && again.is_empty(), "{name}");
        let copy = elsewhere.path().join(format!("vendor-{k}.out"));
        std::fs::copy(fixture(name), &copy).unwrap();
        let (second, already) = import_ids(&s, &copy, &["--host", "another-name"]);
        assert!(second.is_empty(), "{name} stored again as {second:?}");
        assert_eq!(already, first, "{name}");
    }
}

/// Output that does not say when it ran (IOzone without "Run began") is dated by the file's
/// modification time, and says so; `--date` sets it; `storlab iozone`'s own output carries
/// IOzone's "Run began" line, so its import is dated when it ran, not when it was imported.
#[test]
fn undated_output_takes_the_files_time_or_date_and_storlab_iozone_dates_its_own() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    let file = dir.path().join("old-report.txt");
    // A report whose "Run began" line was lost (cut from a mail, an older IOzone's copy).
    let report: String = text("iozone-auto.txt")
        .lines()
        .filter(|l| !l.contains("Run began"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, report).unwrap();
    let then = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_709_634_030);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(then)
        .unwrap();

    let s = Scratch::new();
    let (ids, _) = import_ids(&s, &file, &[]);
    assert_eq!(ids.len(), 9);
    for id in &ids {
        let run = s.json(&["results", "show", &id.to_string()]);
        assert_eq!(run["started_at"], "2024-03-05T10:20:30Z");
        assert!(
            run["job"]["time"].as_str().unwrap().contains("modification time"),
            "{run}"
        );
    }

    let s = Scratch::new();
    let (ids, _) = import_ids(&s, &file, &["--date", "2025-01-02"]);
    let run = s.json(&["results", "show", &ids[0].to_string()]);
    assert_eq!(run["started_at"], "2025-01-02T00:00:00Z");
    assert!(run["job"]["time"].as_str().unwrap().contains("--date"), "{run}");
    let out = s.storlab(&["results", "import", file.to_str().unwrap(), "--date", "last week"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("expected a date such as 2026-11-20"),
        "{}",
        stderr(&out)
    );

    // storlab iozone's own report, imported elsewhere: the run's own start.
    let s = Scratch::new();
    let target = s.data().join("f");
    let out = s.storlab(&[
        "iozone",
        "-i",
        "0",
        "-s",
        "256k",
        "-r",
        "4k",
        "-f",
        target.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = dir.path().join("storlab-iozone.txt");
    std::fs::write(&report, &out.stdout).unwrap();
    let ran = s.json(&["results", "list", "--kind", "iozone"]);
    let started = ran[0]["started_at"].clone();
    let other = Scratch::new();
    let (ids, _) = import_ids(&other, &report, &[]);
    let run = other.json(&["results", "show", &ids[0].to_string()]);
    assert_eq!(run["started_at"], started);
    assert!(run["job"]["time"].as_str().unwrap().contains("Run began"), "{run}");
}
