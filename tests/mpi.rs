//! `mpirun storlab run`: real OpenMPI (Debian's `mpirun`) starting several ranks of the real
//! binary on this machine, on tmpfs and on a loop-mounted ext4. Built with the `mpi` feature
//! (scripts/test runs this file again with `--features mpi`): one run stored, not one per rank,
//! its bytes what the ranks wrote (checked from the files), per-rank rows, and a rank whose
//! target is missing ending the run cleanly; storlab meta and storlab iozone the same way; the
//! storlab-mpi package installed and run. Without the feature, storlab under mpirun refuses.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::process::{Command, Output};

use common::*;

/// `mpirun -n RANKS storlab ARGS` with `s`'s database, ended after 120 s if it hangs (a rank
/// waiting for another in a barrier is a failure of its own).
fn mpirun(s: &Scratch, ranks: u32, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["120", "mpirun", "--allow-run-as-root", "--oversubscribe", "-n"])
        .arg(ranks.to_string())
        .args(["-x", "STORLAB_DB", "-x", "TMPDIR"])
        .arg(bin())
        .args(args)
        .env("STORLAB_DB", s.db())
        .env("TMPDIR", s.path())
        .output()
        .expect("mpirun (openmpi-bin)")
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::*;
    use std::path::Path;
    use std::time::Instant;

    /// Bytes in the regular files below `dir`.
    fn bytes_below(dir: &Path) -> u64 {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                let m = e.metadata().unwrap();
                if m.is_dir() {
                    bytes_below(&e.path())
                } else {
                    m.len()
                }
            })
            .sum()
    }

    /// Four ranks, each writing then reading its own directory under `data` (made here), the
    /// files kept: one run, its bytes the files' and the sum of the ranks' parts.
    fn four_ranks_one_run(s: &Scratch, data: &Path) {
        for r in 0..4 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let target = format!("{}/%r", data.display());
        let out = mpirun(
            s,
            4,
            &[
                "run", "--target", &target, "--phase", "write", "--phase", "read", "--size", "16m", "--bs", "1m",
                "--keep", "--json",
            ],
        );
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        // One JSON document on stdout (rank 0's), one run in the database.
        let run: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one run ({e}): {}", stdout(&out)));
        assert_eq!(s.run_count(), Some(1), "one run stored, not one per rank");
        assert_eq!(run["status"], "ok");
        let ranks = run["ranks"].as_array().unwrap();
        assert_eq!(ranks.len(), 4);
        for (i, r) in ranks.iter().enumerate() {
            assert_eq!(r["rank"], i as u64);
            assert!(r["environment"]["targets"][0]["path"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/{i}")));
        }
        // What each rank wrote is in its directory; the run's bytes are all of it.
        let on_disk: Vec<u64> = (0..4).map(|r| bytes_below(&data.join(r.to_string()))).collect();
        assert!(on_disk.iter().all(|&b| b == 16 << 20), "{on_disk:?}");
        let written = run["phases"][0]["result"]["bytes_written"].as_u64().unwrap();
        assert_eq!(written, on_disk.iter().sum::<u64>());
        assert_eq!(run["phases"][1]["result"]["bytes_read"].as_u64().unwrap(), written);
        let parts = run["rank_phases"].as_array().unwrap();
        assert_eq!(parts.len(), 8, "each rank's part of each phase");
        let part_sum: u64 = parts
            .iter()
            .filter(|p| p["seq"] == 0)
            .map(|p| p["result"]["bytes_written"].as_u64().unwrap())
            .sum();
        assert_eq!(part_sum, written);
        // The aggregate is over the common interval: every rank's interval lies within it,
        // and the merged latency histogram counts every rank's I/Os.
        let all_done = run["phases"][0]["result"]["all_done"]["seconds"].as_f64().unwrap();
        for p in parts.iter().filter(|p| p["seq"] == 0) {
            let (a, b) = (p["start_seconds"].as_f64().unwrap(), p["end_seconds"].as_f64().unwrap());
            assert!(a >= 0.0 && b <= all_done + 1e-6 && a < b, "{p}");
        }
        assert_eq!(run["phases"][0]["result"]["latency"]["count"], 4 * 16);
        assert_eq!(run["phases"][0]["result"]["workers"].as_array().unwrap().len(), 4);
        shown_with_its_ranks(s, &run);
    }

    /// `mpirun -n 3 storlab qualify`: every repetition one run of the three ranks (each on its
    /// own directory), rank 0 deciding, storing one qualification and printing its verdict; a job
    /// with a background task refused under mpirun.
    #[test]
    fn three_ranks_qualify_one_plan_each_repetition_one_run_of_all() {
        let s = Scratch::new();
        let data = s.data();
        for r in 0..3 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let plan = s.path().join("plan.toml");
        std::fs::write(
            &plan,
            "name = \"ranks\"\nmax_repeats = 5\n[[job]]\nname = \"rr\"\nsettings = { phase = [\"randread\"], bs = \"4k\", size = \"8m\", runtime = \"300ms\" }\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS >= 10\"\n",
        )
        .unwrap();
        let target = format!("{}/%r", data.display());
        let out = mpirun(
            &s,
            3,
            &["qualify", plan.to_str().unwrap(), "--target", &target, "--json"],
        );
        assert_eq!(out.status.code(), Some(0), "mpirun: {}{}", stdout(&out), stderr(&out));
        let q: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("one document ({e}): {}", stdout(&out)));
        assert_eq!(q["params"]["criteria"][0]["decision"], "PASS");
        let members = q["members"].as_array().unwrap();
        let n = q["params"]["criteria"][0]["values"].as_array().unwrap().len();
        assert_eq!(members.len(), n, "one run per repetition, not one per rank");
        assert_eq!(s.run_count(), Some(n));
        for m in members {
            let run = s.json(&["results", "show", &m["run_id"].to_string()]);
            assert_eq!(run["ranks"].as_array().map(Vec::len), Some(3), "{run}");
            // The criterion's figure is the run's: all three ranks' I/Os together.
            assert_eq!(run["phases"][0]["result"]["workers"].as_array().unwrap().len(), 3);
        }
        std::fs::write(
            &plan,
            "[[job]]\nname = \"rr\"\nsettings = { phase = [\"randread\"], size = \"8m\", runtime = \"300ms\" }\ntask = \"cmd:true|echo running|true\"\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS cost <= 50%\"\n",
        )
        .unwrap();
        let out = mpirun(&s, 2, &["qualify", plan.to_str().unwrap(), "--target", &target]);
        assert_ne!(out.status.code(), Some(0));
        assert!(
            stderr(&out).contains("a task's pairs are one host's; run this plan without mpirun"),
            "{}",
            stderr(&out)
        );
        assert_eq!(s.run_count(), Some(n), "nothing more stored");
    }

    /// `results show` lists each rank's part of each phase, the slowest and fastest marked, and
    /// the host; the HTML report (loaded in Chromium) draws each phase's throughput per host.
    fn shown_with_its_ranks(s: &Scratch, run: &serde_json::Value) {
        let id = run["id"].as_i64().unwrap().to_string();
        let host = run["ranks"][0]["host"].as_str().unwrap().to_string();
        let out = s.storlab(&["results", "show", &id]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let rank_lines: Vec<&str> = text
            .lines()
            .filter(|l| (l.starts_with("1 write") || l.starts_with("2 read")) && l.contains(&host))
            .collect();
        assert_eq!(rank_lines.len(), 8, "a line per rank and phase:\n{text}");
        for phase in ["1 write", "2 read"] {
            let marks = |m: &str| {
                rank_lines
                    .iter()
                    .filter(|l| l.starts_with(phase) && l.trim_end().ends_with(m))
                    .count()
            };
            assert_eq!((marks("slowest"), marks("fastest")), (1, 1), "{phase}:\n{text}");
        }
        assert!(text.contains("clock offset to rank 0"), "no hosts table:\n{text}");
        // The exports carry a table of ranks: every rank's part, its bytes those of the run.
        let export = s.storlab(&["results", "export", &id, "--format", "json"]);
        let export: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
        let rows = export["ranks"].as_array().unwrap();
        assert_eq!(rows.len(), 8);
        let written: u64 = rows.iter().map(|r| r["bytes written"].as_u64().unwrap()).sum();
        assert_eq!(written, run["phases"][0]["result"]["bytes_written"].as_u64().unwrap());
        let page = s.path().join("ranks.html");
        let out = s.storlab(&["report", &id, "-o", page.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let loaded = chromium(&page, &s.path().join("chromium"), None);
        assert!(loaded.console.is_empty(), "console: {:?}", loaded.console);
        let charts = charts(&loaded.dom);
        for key in ["write MiB/s per host", "read MiB/s per host", "write IOPS per host"] {
            let ymax = charts.iter().find(|(k, _)| k == key).map(|c| c.1);
            assert!(ymax.is_some_and(|y| y > 0.0), "no chart {key} in {charts:?}");
        }
        // One host here: its line is all ranks' (on several hosts "all ranks" is drawn too).
        assert!(loaded.dom.contains(&format!(">{host}<")), "no line for {host}");
        assert!(
            text.contains("4 MPI ranks on 1 host, rank 0's job: 1 worker(s)"),
            "{text}"
        );
    }

    /// `mpirun -n 2 storlab fio …` (two clones per rank, no group_reporting): one run of both
    /// ranks, and fio's JSON as fio's client writes it with a server per host — `client_stats`
    /// with each rank's clones (its host in `hostname`, its rank in `port`), then "All clients",
    /// their sum as fio sums it — with nothing said on stderr. Each rank's entries add up to the
    /// rank's own stored part and each entry's latency count to its worker's I/Os; "All
    /// clients" adds up the entries with this test's arithmetic (bytes, I/Os, bw samples summed
    /// as fio's pure sum, job_runtime); storlab's import of fio's client JSON reads it back as
    /// the four clones' runs.
    #[test]
    fn storlab_fio_on_two_ranks_writes_fios_client_stats() {
        let s = Scratch::new();
        let data = s.data();
        for r in 0..2 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let dir = format!("--directory={}/%r", data.display());
        let out = mpirun(
            &s,
            2,
            &[
                "fio",
                "--name=pair",
                "--rw=randrw",
                "--bs=4k",
                "--size=8m",
                &dir,
                "--numjobs=2",
                "--ioengine=io_uring",
                "--iodepth=2",
                "--runtime=2",
                "--time_based",
                "--output-format=json",
            ],
        );
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        assert!(
            !stderr(&out).contains("storlab"),
            "fio says nothing on stderr: {}",
            stderr(&out)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("stdout is one fio document ({e}): {}", stdout(&out)));
        assert!(doc.get("jobs").is_none(), "{doc}");
        let entries = doc["client_stats"].as_array().unwrap();
        assert_eq!(
            entries.len(),
            5,
            "two clones on each of two ranks, then All clients: {doc}"
        );
        let (clones, all) = (&entries[..4], &entries[4]);
        assert_eq!(all["jobname"], "All clients");
        assert!(all.get("latency_depth").is_none(), "fio's sum has no latency target");
        let ports: Vec<u64> = clones.iter().map(|e| e["port"].as_u64().unwrap()).collect();
        assert_eq!(ports, [0, 0, 1, 1]);

        let id = s.last_run_id();
        let run = s.json(&["results", "show", &id.to_string()]);
        let phase = &run["phases"][0]["result"];
        for (r, part) in run["rank_phases"].as_array().unwrap().iter().enumerate() {
            let mine: Vec<&serde_json::Value> = clones.iter().filter(|e| e["port"] == r as u64).collect();
            assert_eq!(mine[0]["hostname"], part["host"]);
            let workers = part["result"]["workers"].as_array().unwrap();
            for (d, dir) in ["read", "write"].iter().enumerate() {
                let bytes: u64 = mine.iter().map(|e| e[dir]["io_bytes"].as_u64().unwrap()).sum();
                let key = if d == 0 { "bytes_read" } else { "bytes_written" };
                assert_eq!(bytes, part["result"][key].as_u64().unwrap(), "rank {r} {dir}");
                for (e, w) in mine.iter().zip(workers) {
                    assert_eq!(e[dir]["lat_ns"]["N"], w["own"]["ops"][d], "rank {r} {dir}: {e}");
                }
            }
        }
        for (d, dir) in ["read", "write"].iter().enumerate() {
            let sum = |k: &str| -> f64 { clones.iter().map(|e| e[dir][k].as_f64().unwrap()).sum() };
            let key = if d == 0 { "bytes_read" } else { "bytes_written" };
            assert_eq!(all[dir]["io_bytes"].as_f64().unwrap(), sum("io_bytes"));
            assert_eq!(all[dir]["io_bytes"], phase[key], "{dir}");
            assert_eq!(all[dir]["lat_ns"]["N"].as_f64().unwrap(), sum("total_ios"), "{dir}");
            assert_eq!(all[dir]["bw_samples"].as_f64().unwrap(), sum("bw_samples"), "{dir}");
            assert!(sum("bw_samples") >= 8.0, "{dir}: two 500 ms samples per clone at least");
            assert!(
                (all[dir]["bw_mean"].as_f64().unwrap() - sum("bw_mean")).abs() < 1e-6,
                "{dir}"
            );
            assert!(
                (all[dir]["iops_mean"].as_f64().unwrap() - sum("iops_mean")).abs() < 1e-6,
                "{dir}"
            );
        }
        let runtimes: u64 = clones.iter().map(|e| e["job_runtime"].as_u64().unwrap()).sum();
        assert_eq!(all["job_runtime"].as_u64().unwrap(), runtimes);

        // fio's client JSON, as storlab's import reads fio's: a run per client (rank), its
        // clones the run's phases.
        let file = s.path().join("clients.json");
        std::fs::write(&file, &out.stdout).unwrap();
        let imported = s.storlab(&["results", "import", file.to_str().unwrap()]);
        assert!(imported.status.success(), "{}", stderr(&imported));
        assert_eq!(s.run_count(), Some(1 + 2), "the run and a run per client imported");
        let last = s.json(&["results", "show", &s.last_run_id().to_string()]);
        assert_eq!(last["phases"].as_array().unwrap().len(), 2, "{last}");
    }

    #[test]
    fn four_ranks_on_tmpfs_store_one_run_of_all_their_bytes() {
        let s = Scratch::new();
        four_ranks_one_run(&s, &s.data());
        // storlab db copy takes the ranks with the run (into a SQLite file of its own).
        let copy = s.path().join("copy.db");
        let out = s.storlab(&["db", "copy", "--from", &s.db(), "--to", copy.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let shown = Command::new(bin())
            .args(["results", "show", "1", "--json", "--db", copy.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(shown.status.success(), "{}", stderr(&shown));
        let run: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert_eq!(run["ranks"].as_array().map(Vec::len), Some(4), "{run}");
        assert_eq!(run["rank_phases"].as_array().map(Vec::len), Some(8));
    }

    #[test]
    fn four_ranks_on_a_loop_mounted_ext4_store_one_run_of_all_their_bytes() {
        let s = Scratch::new();
        let point = s.path().join("mnt");
        std::fs::create_dir(&point).unwrap();
        let _fs = loop_filesystem("mkfs.ext4", 512 << 20, &point);
        four_ranks_one_run(&s, &point.join("d"));
    }

    #[test]
    fn stonewall_ends_the_slow_ranks_phase_when_the_first_rank_is_done() {
        // MPMD: three ranks write 512 MiB each, the fourth 4 MiB. Without --stonewall the
        // three would write all of theirs; with it, each stops when the fourth is done.
        let s = Scratch::new();
        let data = s.data();
        for r in 0..4 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let target = format!("{}/%r", data.display());
        let rank = |size: &str| -> Vec<String> {
            [
                bin(),
                "run",
                "--target",
                &target,
                "--phase",
                "write",
                "--size",
                size,
                "--bs",
                "1m",
                "--stonewall",
                "--keep",
                "--json",
            ]
            .iter()
            .map(|a| a.to_string())
            .collect()
        };
        let out = Command::new("timeout")
            .args([
                "120",
                "mpirun",
                "--allow-run-as-root",
                "--oversubscribe",
                "-x",
                "STORLAB_DB",
                "-x",
                "TMPDIR",
            ])
            .arg("-n")
            .arg("3")
            .args(rank("512m"))
            .arg(":")
            .arg("-n")
            .arg("1")
            .args(rank("4m"))
            .env("STORLAB_DB", s.db())
            .env("TMPDIR", s.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(run["status"], "ok");
        let written: Vec<u64> = run["rank_phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["result"]["bytes_written"].as_u64().unwrap())
            .collect();
        assert_eq!(written.len(), 4);
        assert_eq!(written[3], 4 << 20, "{written:?}");
        for w in &written[..3] {
            assert!(*w < 512 << 20, "a slow rank wrote all its 512 MiB: {written:?}");
        }
        // The files hold what the ranks say they wrote, and the run all of it.
        let on_disk: u64 = (0..4).map(|r| bytes_below(&data.join(r.to_string()))).sum();
        assert!(
            on_disk >= written.iter().sum::<u64>(),
            "{on_disk} on disk, {written:?} written"
        );
        assert_eq!(
            run["phases"][0]["result"]["bytes_written"].as_u64().unwrap(),
            written.iter().sum::<u64>()
        );
    }

    #[test]
    fn the_ranks_start_a_phase_together_after_one_rank_lays_out_a_large_file() {
        // MPMD: a read phase whose files storlab lays out first; rank 3's is 768 MiB, the
        // others' 4 MiB. The ranks meet after the layout, so rank 3's long layout does not
        // delay its measured start against the others'.
        let s = Scratch::new();
        let data = s.data();
        for r in 0..4 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let target = format!("{}/%r", data.display());
        let rank = |size: &str| -> Vec<String> {
            [
                bin(),
                "run",
                "--target",
                &target,
                "--phase",
                "read",
                "--size",
                size,
                "--bs",
                "1m",
                "--json",
            ]
            .iter()
            .map(|a| a.to_string())
            .collect()
        };
        let out = Command::new("timeout")
            .args([
                "120",
                "mpirun",
                "--allow-run-as-root",
                "--oversubscribe",
                "-x",
                "STORLAB_DB",
                "-x",
                "TMPDIR",
            ])
            .arg("-n")
            .arg("3")
            .args(rank("4m"))
            .arg(":")
            .arg("-n")
            .arg("1")
            .args(rank("768m"))
            .env("STORLAB_DB", s.db())
            .env("TMPDIR", s.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let parts = run["rank_phases"].as_array().unwrap();
        assert_eq!(parts.len(), 4);
        let field = |p: &serde_json::Value, k: &str| p[k].as_f64().unwrap();
        let layout = parts[3]["result"]["layout_seconds"].as_f64().unwrap();
        assert!(
            layout > 0.1,
            "laying out 768 MiB took only {layout} s: nothing to measure"
        );
        let starts: Vec<f64> = parts.iter().map(|p| field(p, "start_seconds")).collect();
        let spread = starts.iter().cloned().fold(f64::MIN, f64::max) - starts.iter().cloned().fold(f64::MAX, f64::min);
        assert!(
            spread < layout / 4.0,
            "the ranks started {spread} s apart after a layout of {layout} s: {starts:?}"
        );
        assert_eq!(parts[3]["result"]["bytes_read"].as_u64(), Some(768 << 20));
    }

    #[test]
    fn storlab_iozone_throughput_mode_on_four_ranks_is_one_run_of_all_their_workers() {
        // IOzone's -t 2 on each of 4 ranks: 8 workers of one run, each rank's two files its own.
        let s = Scratch::new();
        let data = s.data();
        for r in 0..4 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let file = |n: &str| format!("{}/%r/{n}", data.display());
        let (a, b) = (file("a"), file("b"));
        let out = mpirun(
            &s,
            4,
            &[
                "iozone", "-i", "0", "-i", "1", "-s", "4m", "-r", "1m", "-t", "2", "-F", &a, &b, "--json",
            ],
        );
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        assert_eq!(s.run_count(), Some(1), "one run stored, not one per rank");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let cell = &doc["cells"][0];
        assert_eq!(cell["workers"], 8, "{cell}");
        let id = cell["run_id"].as_i64().unwrap().to_string();
        let run = s.json(&["results", "show", &id]);
        // IOzone's write and rewrite, read and reread: each phase is every rank's.
        for p in run["phases"].as_array().unwrap() {
            assert_eq!(p["result"]["workers"].as_array().unwrap().len(), 8, "{}", p["kind"]);
            let moved = p["result"]["bytes_read"].as_u64().unwrap() + p["result"]["bytes_written"].as_u64().unwrap();
            assert_eq!(moved, 8 * (4 << 20), "{}", p["kind"]);
        }
        let parts = run["rank_phases"].as_array().unwrap();
        assert_eq!(parts.len(), 4 * run["phases"].as_array().unwrap().len());
        // IOzone removes its files at the end (no -w), on every rank.
        for r in 0..4 {
            assert!(entries(&data.join(r.to_string())).is_empty(), "rank {r} left files");
        }
        // The text report counts every rank's processes.
        let out = mpirun(
            &s,
            4,
            &["iozone", "-i", "0", "-s", "4m", "-r", "1m", "-t", "2", "-F", &a, &b],
        );
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        assert!(
            stdout(&out).contains("Throughput test with 8 processes"),
            "{}",
            stdout(&out)
        );
    }

    #[test]
    fn storlab_iozone_auto_mode_on_four_ranks_is_a_study_of_one_run_per_cell() {
        let s = Scratch::new();
        let data = s.data();
        for r in 0..4 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let f = format!("{}/%r/f", data.display());
        let out = mpirun(
            &s,
            4,
            &[
                "iozone", "-a", "-i", "0", "-n", "4m", "-g", "4m", "-y", "1m", "-q", "2m", "-f", &f, "--json",
            ],
        );
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(doc["study"].as_i64().is_some(), "{doc}");
        let cells = doc["cells"].as_array().unwrap();
        let records: Vec<u64> = cells.iter().map(|c| c["record_bytes"].as_u64().unwrap()).collect();
        assert_eq!(records, [1 << 20, 2 << 20]);
        assert_eq!(s.run_count(), Some(2), "one run per cell, not per rank");
        for c in cells {
            assert_eq!(c["workers"], 4);
            let run = s.json(&["results", "show", &c["run_id"].as_i64().unwrap().to_string()]);
            assert_eq!(run["ranks"].as_array().unwrap().len(), 4);
            assert_eq!(run["phases"][0]["result"]["bytes_written"], 4 * (4 << 20));
        }
    }

    /// Purges storlab-mpi and storlab when dropped, even when the test fails.
    struct Installed;

    impl Drop for Installed {
        fn drop(&mut self) {
            let _ = Command::new("dpkg")
                .args(["--purge", "storlab-mpi", "storlab"])
                .output();
        }
    }

    #[test]
    fn the_storlab_mpi_package_installs_beside_storlab_and_runs_under_mpirun() {
        let installed = |p: &str| Command::new("dpkg").args(["-s", p]).output().unwrap().status.success();
        assert!(
            !installed("storlab") && !installed("storlab-mpi"),
            "storlab is installed on this machine already; this test installs and purges its own"
        );
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        // This build's binary (with MPI) as both packages: no cargo build while cargo test runs.
        for var in ["STORLAB_BIN", "STORLAB_MPI_BIN"] {
            let out = Command::new(repo.join("scripts/package"))
                .env(var, bin())
                .env("STORLAB_PACKAGE_FAST", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "scripts/package: {}{}",
                stdout(&out),
                stderr(&out)
            );
        }
        let deb = |prefix: &str| {
            std::fs::read_dir(repo.join("target/debian"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
                .unwrap()
        };
        let mpi_deb = deb("storlab-mpi_");
        let depends = Command::new("dpkg-deb")
            .arg("-f")
            .arg(&mpi_deb)
            .arg("Depends")
            .output()
            .unwrap();
        let depends = stdout(&depends);
        assert!(
            depends.contains("libopenmpi") && depends.contains("storlab"),
            "{depends}"
        );
        let rpm = std::fs::read_dir(repo.join("target/generate-rpm"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("storlab-mpi-"))
            .unwrap();
        let listed = stdout(&Command::new("rpm").arg("-qlp").arg(&rpm).output().unwrap());
        assert_eq!(listed.trim(), "/usr/bin/storlab-mpi");
        let _installed = Installed;
        let out = Command::new("dpkg")
            .arg("-i")
            .arg(deb("storlab_"))
            .arg(&mpi_deb)
            .output()
            .unwrap();
        assert!(out.status.success(), "dpkg -i: {}{}", stdout(&out), stderr(&out));
        let files = stdout(&Command::new("dpkg").args(["-L", "storlab-mpi"]).output().unwrap());
        assert!(files.lines().any(|l| l == "/usr/bin/storlab-mpi"), "{files}");
        // The installed storlab-mpi under mpirun: one run of both ranks.
        let s = Scratch::new();
        let data = s.data();
        for r in 0..2 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let target = format!("{}/%r", data.display());
        let out = Command::new("timeout")
            .args([
                "120",
                "mpirun",
                "--allow-run-as-root",
                "--oversubscribe",
                "-x",
                "STORLAB_DB",
                "-x",
                "TMPDIR",
            ])
            .args(["-n", "2", "/usr/bin/storlab-mpi", "run", "--target", &target])
            .args(["--phase", "write", "--size", "4m", "--json"])
            .env("STORLAB_DB", s.db())
            .env("TMPDIR", s.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mpirun storlab-mpi: {}{}",
            stdout(&out),
            stderr(&out)
        );
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(run["ranks"].as_array().unwrap().len(), 2);
        assert_eq!(run["phases"][0]["result"]["bytes_written"], 2 * (4 << 20));
        assert_eq!(s.run_count(), Some(1));
        let purge = Command::new("dpkg")
            .args(["--purge", "storlab-mpi", "storlab"])
            .output()
            .unwrap();
        assert!(purge.status.success(), "{}", stderr(&purge));
        assert!(!Path::new("/usr/bin/storlab-mpi").exists());
    }

    #[test]
    fn four_ranks_of_storlab_meta_make_exactly_ranks_times_workers_times_files() {
        let s = Scratch::new();
        let data = s.data();
        for r in 0..4 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let target = format!("{}/%r", data.display());
        let out = mpirun(
            &s,
            4,
            &[
                "meta",
                "--target",
                &target,
                "--threads",
                "2",
                "--files-per-thread",
                "300",
                "--phase",
                "create,stat",
                "--unique-dir",
                "--keep",
                "--json",
            ],
        );
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(s.run_count(), Some(1));
        for (seq, kind) in [(0, "create"), (1, "stat")] {
            let p = &run["phases"][seq];
            assert_eq!(p["kind"], kind);
            assert_eq!(p["params"]["meta"]["entries"], 4 * 2 * 300, "{p}");
            assert_eq!(p["params"]["meta"]["workers"], 8);
            assert_eq!(p["params"]["meta"]["errors"], 0);
        }
        // What find counts: each rank's own tree in its own directory, 600 files each.
        for r in 0..4 {
            let found = Command::new("find")
                .arg(data.join(r.to_string()))
                .args(["-type", "f"])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&found.stdout).lines().count(), 600, "rank {r}");
        }
    }

    #[test]
    fn four_ranks_of_storlab_meta_on_one_target_share_one_tree_as_mdtest_without_u() {
        // One target for all: rank 0 makes one tree (2,3), the 4 ranks × 2 workers make their
        // 300 files each in it, numbered apart; every file is read back as its own.
        let s = Scratch::new();
        let data = s.data();
        let target = data.to_str().unwrap();
        let args = [
            "meta",
            "--target",
            target,
            "--threads",
            "2",
            "--files-per-thread",
            "300",
            "--tree",
            "2,3",
            "--phase",
            "create,stat,read",
            "--file-size",
            "64",
            "--keep",
            "--json",
        ];
        let out = mpirun(&s, 4, &args);
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for p in run["phases"].as_array().unwrap() {
            assert_eq!(p["params"]["meta"]["entries"], 4 * 2 * 300, "{p}");
            assert_eq!(p["params"]["meta"]["errors"], 0, "{p}");
        }
        let roots = entries(&data);
        assert_eq!(roots.len(), 1, "one tree for all ranks: {roots:?}");
        let files = Command::new("find").arg(&data).args(["-type", "f"]).output().unwrap();
        let files = stdout(&files);
        assert_eq!(files.lines().count(), 2400);
        // Workers 0 to 7 across the ranks, 300 files each.
        for w in 0..8 {
            let mine = files
                .lines()
                .filter(|l| l.rsplit('/').next().unwrap().starts_with(&format!("file.storlab.{w}.")))
                .count();
            assert_eq!(mine, 300, "worker {w}");
        }
        let dirs = Command::new("find")
            .arg(data.join(&roots[0]))
            .args(["-type", "d"])
            .output()
            .unwrap();
        assert_eq!(
            stdout(&dirs).lines().count(),
            1 + 1 + 3 + 9,
            "storlab's directory, shared/, and the tree"
        );
        // Without --keep, the shared tree goes (removed by rank 0 once all are done).
        std::fs::remove_dir_all(data.join(&roots[0])).unwrap();
        let out = mpirun(&s, 4, &args[..args.len() - 2]);
        assert!(out.status.success(), "mpirun: {}{}", stdout(&out), stderr(&out));
        assert!(entries(&data).is_empty(), "{:?}", entries(&data));
    }

    #[test]
    fn a_rank_whose_target_is_missing_fails_the_run_naming_it_and_no_rank_hangs() {
        let s = Scratch::new();
        let data = s.data();
        // Rank 2's directory is not there (a missing parent: a missing last component would
        // be a file target storlab makes).
        for r in [0, 1, 3] {
            std::fs::create_dir_all(data.join(r.to_string()).join("d")).unwrap();
        }
        let target = format!("{}/%r/d", data.display());
        let t0 = Instant::now();
        let out = mpirun(&s, 4, &["run", "--target", &target, "--phase", "write", "--size", "4m"]);
        assert!(!out.status.success());
        assert!(t0.elapsed().as_secs() < 60, "took {:?}", t0.elapsed());
        let err = stderr(&out);
        assert!(err.contains("rank 2 on "), "{err}");
        assert!(err.contains(&format!("{}/2/d", data.display())), "{err}");
        assert!(s.nothing_stored());
    }

    /// The pid of this test's rank `rank` (its environment names the rank and the test's
    /// database), or None while it has not started.
    fn rank_pid(s: &Scratch, rank: u32) -> Option<i32> {
        let want_rank = format!("OMPI_COMM_WORLD_RANK={rank}");
        let want_db = format!("STORLAB_DB={}", s.db());
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let env = std::fs::read(e.path().join("environ")).ok()?;
            let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
            let has = |v: &str| vars.contains(&v.as_bytes());
            let exe = std::fs::read_link(e.path().join("exe")).ok()?;
            (has(&want_rank) && has(&want_db) && exe.ends_with("storlab")).then_some(pid)
        })
    }

    #[test]
    fn a_rank_killed_mid_phase_ends_the_run_naming_it_and_the_phases_before_stay_stored() {
        // Phase 1 writes 4 MiB on each of 4 ranks; phase 2 reads for a minute. Once phase 1 is
        // stored, rank 3 is killed (SIGKILL: nothing of storlab's runs in it).
        let s = Scratch::new();
        let data = s.data();
        for r in 0..4 {
            std::fs::create_dir_all(data.join(r.to_string())).unwrap();
        }
        let target = format!("{}/%r", data.display());
        let job = s.path().join("job.toml");
        std::fs::write(
            &job,
            "size = \"4m\"\nbs = \"1m\"\nphase = [\"write\", { kind = \"read\", runtime = \"60s\" }]\n",
        )
        .unwrap();
        let child = Command::new("timeout")
            .args([
                "120",
                "mpirun",
                "--allow-run-as-root",
                "--oversubscribe",
                "-x",
                "STORLAB_DB",
                "-x",
                "TMPDIR",
            ])
            .args([
                "-n",
                "4",
                bin(),
                "run",
                job.to_str().unwrap(),
                "--target",
                &target,
                "-q",
            ])
            .env("STORLAB_DB", s.db())
            .env("TMPDIR", s.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        let phase_one_stored = || {
            let store = s.try_store()?;
            let run = store.run(1, false).ok()??;
            (run.phases.len() == 1).then_some(())
        };
        while phase_one_stored().is_none() {
            assert!(t0.elapsed().as_secs() < 60, "phase 1 was never stored");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let pid = rank_pid(&s, 3).expect("rank 3 is running");
        let killed = Instant::now();
        // SAFETY: kill(2) on a pid this test's mpirun started; no memory is involved.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success());
        assert!(
            killed.elapsed().as_secs() < 30,
            "the others took {:?} to end",
            killed.elapsed()
        );
        // mpirun names the rank and its host.
        let err = stderr(&out);
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        // (Debian's OpenMPI 4.1 prints "with PID 0" for a process it lost this way.)
        assert!(err.contains("rank 3"), "{err}");
        assert!(err.contains(host.trim()), "{err}");
        // The write phase stays stored, all four ranks' bytes; the run is not "ok" (storlab
        // itself marks it aborted the next time it opens the database and finds rank 0 gone).
        let run = s.json(&["results", "show", "1"]);
        assert_eq!(run["phases"][0]["result"]["bytes_written"], 4 * (4 << 20));
        assert_eq!(run["rank_phases"].as_array().unwrap().len(), 4);
        assert_ne!(run["status"], "ok", "{}", run["status"]);
        assert!(rank_pid(&s, 0).is_none(), "rank 0 is still running");
    }
}

#[cfg(not(feature = "mpi"))]
#[test]
fn without_mpi_storlab_under_mpirun_refuses_instead_of_storing_a_run_per_rank() {
    let s = Scratch::new();
    let data = s.data();
    let out = mpirun(
        &s,
        2,
        &[
            "run",
            "--target",
            data.to_str().unwrap(),
            "--phase",
            "write",
            "--size",
            "4m",
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("built without MPI"), "{err}");
    assert!(err.contains("rank 0 of 2") || err.contains("rank 1 of 2"), "{err}");
    assert!(s.nothing_stored());
    assert!(entries(&data).is_empty());
    // storlab meta, storlab iozone and storlab fio alike.
    let f = data.join("f");
    let fio_dir = format!("--directory={}", data.display());
    for args in [
        vec!["meta", "--target", data.to_str().unwrap(), "--files-per-thread", "10"],
        vec!["iozone", "-i", "0", "-s", "1m", "-f", f.to_str().unwrap()],
        vec!["fio", "--name=x", "--rw=write", "--size=1m", &fio_dir],
    ] {
        let out = mpirun(&s, 2, &args);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr(&out).contains("built without MPI"), "{args:?}: {}", stderr(&out));
        assert!(s.nothing_stored());
        assert!(entries(&data).is_empty());
    }
}

#[test]
fn stonewall_without_mpirun_is_refused() {
    let s = Scratch::new();
    let data = s.data();
    let out = s.storlab(&[
        "run",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "1m",
        "--stonewall",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--stonewall"), "{}", stderr(&out));
    assert!(s.nothing_stored());
}
