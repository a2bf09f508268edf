//! `storlab iozone`: IOzone's command lines as the seeds use them, run on tmpfs, reported in
//! IOzone's layout, stored, and written to an XLSX workbook (read back with calamine).
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use calamine::{Data, Reader};
use serde_json::Value;

mod common;
use common::*;

#[test]
fn throughput_mode_reports_in_iozones_layout() {
    let s = Scratch::new();
    let d = s.data();
    let (fa, fb) = (d.join("a.dat"), d.join("b.dat"));
    let book = s.path().join("ral.xlsx");
    let out = s.storlab(&[
        "iozone",
        "-s",
        "8m",
        "-r",
        "64k",
        "-i",
        "0",
        "-i",
        "1",
        "-i",
        "2",
        "-R",
        "-b",
        book.to_str().unwrap(),
        "-t",
        "2",
        "-F",
        fa.to_str().unwrap(),
        fb.to_str().unwrap(),
        "-C",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // IOzone's own spacing: "%2ld" before the first three words, "%ld" before the others.
    for line in [
        " 2 initial writers \t=",
        " 2 rewriters \t=",
        " 2 readers \t\t=",
        "2 re-readers \t=",
        "2 random readers \t=",
        "2 random writers \t=",
    ] {
        assert!(
            text.contains(&format!("Children see throughput for {line}")),
            "{line}: {text}"
        );
        assert!(text.contains(&format!("Parent sees throughput for {line}")), "{line}");
    }
    assert_eq!(text.matches("Min throughput per process").count(), 6);
    // Each worker moved its whole file: 8 MiB = 8192 kB.
    assert_eq!(text.matches("Min xfer \t\t\t\t\t=    8192.00 kB").count(), 6, "{text}");
    assert_eq!(text.matches("Child[1] xfer count =    8192.00 kB").count(), 6);
    assert!(text.contains("\"Throughput report Y-axis is type of test X-axis is number of processes\""));
    assert!(text.contains("\"Record size = 64 kBytes \""));
    assert!(text.contains("\"  Initial write \""));
    assert!(text.contains("storlab: first done") && text.contains("p99.9"));
    // IOzone removes its files unless -w.
    assert!(!fa.exists() && !fb.exists());
    // The parent's figure is the total over the wall time: check it against the stored run.
    let runs = s.json(&["results", "list", "--kind", "iozone"]);
    let id = runs[0]["id"].as_i64().unwrap().to_string();
    let run = s.json(&["results", "show", &id]);
    assert_eq!(run["phases"].as_array().unwrap().len(), 6);
    let parent_kb = run["phases"][0]["result"]["all_done"]["bytes_per_sec"]
        .as_f64()
        .unwrap()
        / 1024.0;
    assert!(
        text.contains(&format!(
            "Parent sees throughput for  2 initial writers \t= {parent_kb:10.2} kB/sec"
        )),
        "{parent_kb}"
    );

    // The workbook: a summary and a sheet per test, numbers as numbers.
    let mut wb: calamine::Xlsx<_> = calamine::open_workbook(&book).unwrap();
    let names = wb.sheet_names();
    assert_eq!(names[0], "Summary");
    for n in [
        "Writer report",
        "Re-writer report",
        "Reader report",
        "Re-Reader report",
        "Random read report",
        "Random write report",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
    let writer = wb.worksheet_range("Writer report").unwrap();
    let row = writer.rows().nth(1).unwrap();
    assert_eq!(row[0], Data::Float(2.0), "workers");
    assert!(
        matches!(row[1], Data::Float(f) if f > 0.0),
        "children see is a number: {:?}",
        row[1]
    );
}

#[test]
fn automatic_mode_is_one_study_of_cells() {
    let s = Scratch::new();
    let d = s.data();
    let v: Value = {
        let out = s.storlab(&[
            "iozone",
            "-a",
            "-n",
            "256k",
            "-g",
            "1m",
            "-y",
            "64k",
            "-q",
            "256k",
            "-i",
            "0",
            "--dir",
            d.to_str().unwrap(),
            "--json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Files 256k, 512k, 1m × records 64k, 128k, 256k: 9 cells, each a run, all one study.
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 9);
    assert!(v["study"].as_i64().is_some());
    assert!(v["note"].as_str().unwrap().contains("three times the buffer cache"));
    let kb = |c: &Value| {
        (
            c["file_bytes"].as_u64().unwrap() / 1024,
            c["record_bytes"].as_u64().unwrap() / 1024,
        )
    };
    assert_eq!(kb(&cells[0]), (256, 64));
    assert_eq!(kb(&cells[8]), (1024, 256));
    assert_eq!(cells[0]["phases"][0]["test"], "Initial write");
    assert_eq!(
        s.json(&["results", "list", "--kind", "iozone"])
            .as_array()
            .unwrap()
            .len(),
        9
    );
    assert!(std::fs::read_dir(&d).unwrap().next().is_none(), "no file left behind");
    // The -R report of the same matrix: IOzone's "Writer report", records across, files down.
    let out = s.storlab(&[
        "iozone",
        "-Ra",
        "-n",
        "256k",
        "-g",
        "512k",
        "-y",
        "64k",
        "-q",
        "128k",
        "-i",
        "0",
        "--dir",
        d.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    let at = text.find("\"Writer report\"").expect("writer report");
    let block: Vec<&str> = text[at..].lines().take(4).collect();
    assert_eq!(
        block[1].split_whitespace().collect::<Vec<_>>(),
        vec!["\"64\"", "\"128\""]
    );
    assert!(
        block[2].starts_with("\"256\"") && block[3].starts_with("\"512\""),
        "{block:?}"
    );
}

#[test]
fn keep_files_with_w() {
    let s = Scratch::new();
    let d = s.data();
    let f = d.join("kept.dat");
    let out = s.storlab(&[
        "iozone",
        "-s",
        "1m",
        "-r",
        "64k",
        "-i",
        "0",
        "-w",
        "-t",
        "1",
        "-F",
        f.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::metadata(&f).unwrap().len(), 1 << 20);
}

#[test]
fn bad_iozone_lines_are_refused_before_anything_is_written() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.to_str().unwrap();
    let a = d.join("a").to_str().unwrap().to_string();
    for (args, needle) in [
        (vec!["-s", "4k", "-r", "64k", "-i", "0"], "smaller than -r"),
        (
            vec!["-s", "1m", "-r", "64k", "-i", "0", "-t", "2", "-F", &a],
            "-F names 1 file(s) but -t asks for 2",
        ),
        (vec!["-s", "1m", "-r", "64k", "-i", "5"], "-i 5 (stride read) needs -j"),
        (
            vec!["-s", "1m", "-i", "0", "-k", "4"],
            "-k is not an IOzone flag storlab supports; supported: -a -b -c",
        ),
        (vec!["-s", "100p", "-i", "0"], "-s 100p"),
    ] {
        let mut full = vec!["iozone"];
        full.extend(args.iter().copied());
        full.extend(["--dir", dir]);
        let out = s.storlab(&full);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    // A file set larger than the filesystem is refused by the same checks as `storlab run`.
    let out = s.storlab(&["iozone", "-s", "500g", "-r", "64k", "-i", "0", "--dir", dir]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("free"), "{}", stderr(&out));
    assert!(std::fs::read_dir(&d).unwrap().next().is_none(), "nothing written");
    assert!(s.nothing_stored());
    let help = s.storlab(&["iozone", "-h"]);
    assert!(help.status.success() && stdout(&help).contains("-+p"));
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/iozone")
        .join(name)
}

/// The figure after "=" on the first line of `text` that starts with `prefix` (trimmed).
fn figure(text: &str, prefix: &str) -> f64 {
    let l = text.lines().find(|l| l.trim().starts_with(prefix)).unwrap();
    l.split('=')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// These files are what a real IOzone (3.489, built by hand from its public source)
/// printed on this machine; the figures expected are read from the same text here.
#[test]
fn real_iozone_output_imports_as_runs() {
    let s = Scratch::new();
    let t = fixture("throughput-t2.txt");
    let text = std::fs::read_to_string(&t).unwrap();
    let v = s.json(&["results", "import", t.to_str().unwrap(), "--host", "eastwood"]);
    let id = v["imported"][0].as_i64().unwrap().to_string();
    let run = s.json(&["results", "show", &id]);
    assert_eq!(run["host"], "eastwood");
    assert_eq!(run["imported"], true);
    assert_eq!(run["started_at"], "2026-11-22T00:28:24Z", "IOzone's Run began");
    let phases = run["phases"].as_array().unwrap();
    let kinds: Vec<&str> = phases.iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        vec!["write", "rewrite", "read", "reread", "randread", "randwrite"]
    );
    let parent = figure(&text, "Parent sees throughput for  2 initial writers");
    let children = figure(&text, "Children see throughput for  2 initial writers");
    assert!((phases[0]["result"]["all_done"]["bytes_per_sec"].as_f64().unwrap() - parent * 1024.0).abs() < 1e-3);
    assert!((phases[0]["result"]["first_done"]["bytes_per_sec"].as_f64().unwrap() - children * 1024.0).abs() < 1e-3);
    assert_eq!(phases[0]["result"]["bytes_written"], 2 * 8192 * 1024);

    // An automatic-mode -R report: one run per file size × record size, one study.
    let a = fixture("auto-R.txt");
    let v = s.json(&["results", "import", a.to_str().unwrap()]);
    let ids = v["imported"].as_array().unwrap();
    assert_eq!(ids.len(), 9);
    let text = std::fs::read_to_string(&a).unwrap();
    // "1024" row of the Writer report, "256" column (the third).
    let writer = &text[text.find("\"Writer report\"").unwrap()..];
    let row = writer.lines().find(|l| l.starts_with("\"1024\"")).unwrap();
    let want: f64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
    let last = s.json(&["results", "show", &ids[8].to_string()]);
    assert_eq!(last["job_name"], "iozone 1024 kB × 256 kB (imported)");
    assert_eq!(last["phases"][0]["kind"], "write");
    assert!(
        (last["phases"][0]["result"]["all_done"]["bytes_per_sec"]
            .as_f64()
            .unwrap()
            - want * 1024.0)
            .abs()
            < 1e-3
    );
    assert_eq!(
        last["phases"].as_array().unwrap().len(),
        4,
        "Writer, Re-writer, Reader, Re-Reader"
    );

    // Cut before any figure (above the automatic-mode table, which -R prints too): refused,
    // nothing stored.
    let before = s.json(&["results", "list"]).as_array().unwrap().len();
    let cut = s.path().join("cut.txt");
    std::fs::write(&cut, &text[..text.find("              kB  reclen").unwrap()]).unwrap();
    let out = s.storlab(&["results", "import", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("IOzone output from line 1: no figures"),
        "{}",
        stderr(&out)
    );
    assert_eq!(s.json(&["results", "list"]).as_array().unwrap().len(), before);
}

#[test]
fn stdio_and_vectored_tests_run() {
    let s = Scratch::new();
    let d = s.data();
    let out = s.storlab(&[
        "iozone",
        "-s",
        "2m",
        "-r",
        "64k",
        "-i",
        "6",
        "-i",
        "7",
        "-i",
        "11",
        "-i",
        "12",
        "-t",
        "2",
        "--dir",
        d.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        " 2 fwriters \t=",
        "2 re-fwriters \t=",
        " 2 freaders \t=",
        "2 re-freaders \t=",
        "2 pwritev writers \t=",
        "2 preadv readers \t=",
    ] {
        assert!(
            text.contains(&format!("Children see throughput for {line}")),
            "{line}: {text}"
        );
    }
    // Every worker moved its whole 2 MiB file in each of the eight phases.
    assert_eq!(text.matches("Min xfer \t\t\t\t\t=    2048.00 kB").count(), 8, "{text}");
    let id = s.json(&["results", "list", "--kind", "iozone"])[0]["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let run = s.json(&["results", "show", &id]);
    let engines: Vec<&str> = run["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["params"]["plan"]["settings"]["engine"].as_str().unwrap())
        .collect();
    assert_eq!(
        engines,
        ["stdio", "stdio", "stdio", "stdio", "pvsync", "pvsync", "pvsync", "pvsync"]
    );
    assert_eq!(run["phases"][4]["params"]["plan"]["settings"]["iovecs"], 16);
}

/// More of IOzone's test sets, as a real IOzone 3.489 printed them: throughput mode with
/// backward, stride and mixed tests, and a single-worker -R report of every test it ran.
#[test]
fn real_iozone_test_sets_import() {
    let s = Scratch::new();
    let kinds = |id: &Value| -> Vec<String> {
        let run = s.json(&["results", "show", &id.to_string()]);
        run["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["kind"].as_str().unwrap().to_string())
            .collect()
    };
    let t = fixture("throughput-tests-3-4-5-8.txt");
    let v = s.json(&["results", "import", t.to_str().unwrap()]);
    assert_eq!(
        kinds(&v["imported"][0]),
        ["write", "rewrite", "backread", "strideread", "randrw"]
    );
    let a = fixture("single-all-tests-R.txt");
    let v = s.json(&["results", "import", a.to_str().unwrap()]);
    assert_eq!(
        kinds(&v["imported"][0]),
        [
            "write",
            "rewrite",
            "read",
            "reread",
            "randread",
            "randwrite",
            "backread",
            "recrewrite",
            "strideread",
            "write",
            "rewrite",
            "read",
            "reread"
        ]
    );
    let text = std::fs::read_to_string(&a).unwrap();
    let want = iozone_report_first_figure(&text, "\"Record rewrite report\"");
    let run = s.json(&["results", "show", &v["imported"][0].to_string()]);
    assert!(
        (run["phases"][7]["result"]["all_done"]["bytes_per_sec"]
            .as_f64()
            .unwrap()
            - want * 1024.0)
            .abs()
            < 1e-3
    );
}
