//! `storlab impact` with a real btrfs scrub as the task, on a btrfs RAID1 over loop devices:
//! the loaded repetitions overlap a running scrub, the study is stored, and the scrub the study
//! started is stopped at its end. Asserts what must hold, not exact figures.

use std::process::Command;

mod common;
use common::*;

fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap();
    assert!(out.status.success(), "{cmd} {args:?}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

/// A btrfs RAID1 of two 1 GiB loop devices mounted under the scratch directory, with `mib` MiB
/// of data for a scrub to read, and an empty directory `work` for the foreground job. Fields
/// drop in order: the mount before the loop devices.
struct BtrfsPool {
    mount: Mount,
    _loops: (LoopDev, LoopDev),
    _images: tempfile::TempDir,
}

impl BtrfsPool {
    fn new(s: &Scratch, mib: u32) -> (BtrfsPool, std::path::PathBuf) {
        let images = tempfile::Builder::new()
            .prefix("storlab-impact-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let a = loop_device(&images.path().join("a.img"), 1 << 30);
        let b = loop_device(&images.path().join("b.img"), 1 << 30);
        sh(
            "mkfs.btrfs",
            &["-q", "-f", "-d", "raid1", "-m", "raid1", &a.dev, &b.dev],
        );
        let mount = mount_device(&a.dev, &s.path().join("pool"));
        let fill = mount.point.join("fill");
        std::fs::create_dir(&fill).unwrap();
        let block: Vec<u8> = (0..(1u32 << 20))
            .map(|i| (i.wrapping_mul(2654435761) >> 9) as u8)
            .collect();
        for i in 0..mib {
            std::fs::write(fill.join(format!("f{i}")), &block).unwrap();
        }
        sh("sync", &[]);
        let work = mount.point.join("work");
        std::fs::create_dir(&work).unwrap();
        (
            BtrfsPool {
                mount,
                _loops: (a, b),
                _images: images,
            },
            work,
        )
    }
}

#[test]
fn scrub_impact_study_on_btrfs_raid1() {
    let s = Scratch::new();
    // Data for the scrub to read: 2 × 300 MiB at 8 MiB/s per device outlasts the study.
    let (pool, work) = BtrfsPool::new(&s, 300);
    let m = &pool.mount;
    let task = format!("btrfs-scrub:{}@8m", m.point.display());
    let v = s.json(&[
        "impact",
        "--task",
        &task,
        "--repeat",
        "2",
        "--target",
        work.to_str().unwrap(),
        "--phase",
        "randread",
        "--bs",
        "4k",
        "--size",
        "16m",
        "--runtime",
        "1s",
    ]);
    let reps = v["repetitions"].as_array().unwrap();
    let sides: Vec<bool> = reps.iter().map(|r| r["loaded"].as_bool().unwrap()).collect();
    assert_eq!(
        sides,
        [false, true, false, true],
        "interleaved idle, loaded, idle, loaded"
    );
    assert!(
        reps.iter()
            .filter(|r| r["loaded"] == true)
            .all(|r| r["overlapped"] == true),
        "{reps:?}"
    );
    let kinds: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["task-running", "task-running", "task-stopped"]);
    let iops = v["impact"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["metric"] == "IOPS")
        .unwrap();
    assert_eq!(iops["idle"].as_array().unwrap().len(), 2);
    assert!(iops["comparison"]["diff_percent"].as_f64().is_some());
    // The study started the scrub and stopped it.
    let status = sh("btrfs", &["scrub", "status", m.point.to_str().unwrap()]);
    assert!(status.contains("aborted"), "{status}");
    // The study and its four runs are stored.
    assert_eq!(
        s.json(&["results", "list", "--kind", "impact-loaded"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn bad_impact_requests_are_refused() {
    let s = Scratch::new();
    let d = s.data();
    let t = d.to_str().unwrap();
    let not_btrfs = format!("btrfs-scrub:{t}");
    for (args, needle) in [
        (vec!["--task", "raid-check:/dev/md0"], "unknown task"),
        (vec!["--task", not_btrfs.as_str()], "is not a btrfs filesystem"),
        (vec!["--task", "cmd:true|echo done|true", "--repeat", "0"], "--repeat 0"),
        (vec!["--task", "cmd:false|true|true"], "failed"),
        (
            vec!["--task", "cmd:true|echo done at once|true"],
            "ended as soon as it started",
        ),
    ] {
        let mut a = vec![
            "impact",
            "--target",
            t,
            "--phase",
            "randread",
            "--size",
            "1m",
            "--runtime",
            "1s",
        ];
        a.extend(args.iter().copied());
        let out = s.storlab(&a);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    assert!(
        !s.db().exists()
            || s.json(&["results", "list", "--kind", "impact-loaded"])
                .as_array()
                .unwrap()
                .is_empty()
    );
}

#[test]
fn reverse_study_times_the_scrub_idle_and_under_load() {
    let s = Scratch::new();
    let (pool, work) = BtrfsPool::new(&s, 100);
    let m = &pool.mount;
    let v = s.json(&[
        "impact",
        "--reverse",
        "--task",
        &format!("btrfs-scrub:{}@40m", m.point.display()),
        "--target",
        work.to_str().unwrap(),
        "--phase",
        "randwrite",
        "--bs",
        "64k",
        "--size",
        "16m",
        "--runtime",
        "1s",
    ]);
    let idle = v["idle_seconds"].as_f64().unwrap();
    let loaded = v["loaded_seconds"].as_f64().unwrap();
    assert!(
        idle > 1.0 && loaded > 1.0,
        "{idle} {loaded}: 2 × 100 MiB at 40 MiB/s per device takes seconds"
    );
    assert!(
        !v["loop_runs"].as_array().unwrap().is_empty(),
        "the job ran while the task did"
    );
    for side in ["idle_track", "loaded_track"] {
        let pct: Vec<f64> = v[side]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p[1].as_f64())
            .collect();
        assert!(
            pct.windows(2).all(|w| w[0] <= w[1]),
            "{side}: progress only grows: {pct:?}"
        );
        assert_eq!(pct.last(), Some(&100.0), "{side}");
    }
}
