//! The btrfs scrub task on a real btrfs RAID1 over two loop devices (the tests run as root):
//! started with a speed limit, watched while it runs, run to its end; cancelled when stopped;
//! refused on a filesystem that is not btrfs. Everything set up is undone, even on failure.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use storlab_impact::kinds::parse;
use storlab_impact::task::{wait_done, TaskState};

struct Loop(String);
impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}
struct Mounted(PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn sh(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A btrfs RAID1 of two loop devices of `device` bytes, mounted, with `mib` MiB of data on it,
/// and a spare loop device of `spare` bytes when asked. Loop devices come back in that order.
fn raid1(dir: &Path, device: u64, mib: u64, spare: Option<u64>) -> (Vec<Loop>, Mounted) {
    let mut loops = Vec::new();
    let images = [("a.img", Some(device)), ("b.img", Some(device)), ("spare.img", spare)];
    for (name, size) in images.iter().filter_map(|(n, s)| s.map(|s| (n, s))) {
        let img = dir.join(name);
        std::fs::File::create(&img).unwrap().set_len(size).unwrap();
        loops.push(Loop(sh("losetup", &["--find", "--show", img.to_str().unwrap()])));
    }
    sh(
        "mkfs.btrfs",
        &["-q", "-f", "-d", "raid1", "-m", "raid1", &loops[0].0, &loops[1].0],
    );
    let mnt = dir.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    sh("mount", &[&loops[0].0, mnt.to_str().unwrap()]);
    let m = Mounted(mnt.clone());
    let data: Vec<u8> = (0..(1u32 << 20))
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    for i in 0..mib {
        std::fs::write(mnt.join(format!("f{i}")), &data).unwrap();
    }
    sh("sync", &[]);
    (loops, m)
}

#[test]
fn scrub_runs_is_watched_and_ends() {
    let dir = tempfile::Builder::new()
        .prefix("storlab-scrub-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let (_loops, m) = raid1(dir.path(), 512 << 20, 160, None);
    let spec = format!("btrfs-scrub:{}@40m", m.0.display());
    let mut t = parse(&spec).unwrap();
    assert!(t.describe().contains("btrfs scrub of"));
    assert_eq!(t.poll().unwrap(), TaskState::Idle, "nothing scrubbed yet");
    // The administrator's own limit, which the task must put back.
    let fsid = sh("findmnt", &["-n", "-o", "UUID", m.0.to_str().unwrap()]);
    let limits = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(format!("/sys/fs/btrfs/{fsid}/devinfo"))
            .unwrap()
            .map(|d| {
                std::fs::read_to_string(d.unwrap().path().join("scrub_speed_max"))
                    .unwrap()
                    .trim()
                    .to_string()
            })
            .collect();
        v.sort();
        v
    };
    for d in std::fs::read_dir(format!("/sys/fs/btrfs/{fsid}/devinfo")).unwrap() {
        std::fs::write(d.unwrap().path().join("scrub_speed_max"), "700m").unwrap();
    }
    let admins = limits();
    t.start().unwrap();
    assert_eq!(
        limits(),
        ["41943040", "41943040"],
        "the task's limit, 40 MiB/s, while it runs"
    );
    // 2 × 160 MiB of data and metadata at 40 MiB/s per device: several seconds of running.
    let (end, looks) = wait_done(t.as_mut(), Duration::from_millis(200), Duration::from_secs(120)).unwrap();
    assert!(
        looks.iter().any(|(_, s)| matches!(s, TaskState::Running(_))),
        "seen running: {looks:?}"
    );
    let percents: Vec<f64> = looks
        .iter()
        .filter_map(|(_, s)| match s {
            TaskState::Running(p) => p.percent,
            _ => None,
        })
        .collect();
    assert!(
        percents.windows(2).all(|w| w[0] <= w[1]),
        "progress only grows: {percents:?}"
    );
    match end {
        TaskState::Done { completed, detail } => {
            assert!(completed);
            assert!(detail.contains("no errors"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // Started again after it ended, without a stop in between (as the reverse study does),
    // then stopped: the administrator's limit is put back, not the task's own.
    t.start().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    t.stop().unwrap();
    assert_eq!(limits(), admins, "scrub_speed_max restored");
    for d in std::fs::read_dir(format!("/sys/fs/btrfs/{fsid}/devinfo")).unwrap() {
        std::fs::write(d.unwrap().path().join("scrub_speed_max"), "0").unwrap();
    }

    // Started again and stopped: cancelled, and said so.
    let mut t = parse(&format!("btrfs-scrub:{}@5m", m.0.display())).unwrap();
    t.start().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    t.stop().unwrap();
    let (end, _) = wait_done(t.as_mut(), Duration::from_millis(100), Duration::from_secs(30)).unwrap();
    assert!(matches!(end, TaskState::Done { completed: false, .. }), "{end:?}");
}

#[test]
fn a_mount_that_is_not_btrfs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = parse(&format!("btrfs-scrub:{}", dir.path().display()))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("is not a btrfs filesystem"), "{e}");
}

#[test]
fn replace_rebuilds_onto_the_spare() {
    let dir = tempfile::Builder::new()
        .prefix("storlab-replace-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let (loops, m) = raid1(dir.path(), 1 << 30, 200, Some(1 << 30));
    let spare = loops[2].0.clone();
    let mut t = parse(&format!("btrfs-replace:{}:2:{spare}", m.0.display())).unwrap();
    assert_eq!(t.poll().unwrap(), TaskState::Idle);
    t.start().unwrap();
    let (end, _) = wait_done(t.as_mut(), Duration::from_millis(100), Duration::from_secs(120)).unwrap();
    assert!(
        matches!(&end, TaskState::Done { completed: true, detail } if detail.contains("0 write errs")),
        "{end:?}"
    );
    let show = sh("btrfs", &["filesystem", "show", m.0.to_str().unwrap()]);
    assert!(show.contains(&spare), "the spare is in the filesystem now: {show}");
    assert!(!show.contains(&loops[1].0), "the replaced device is out: {show}");
    drop(m);
}

#[test]
fn a_replace_that_cannot_start_says_why() {
    let dir = tempfile::Builder::new()
        .prefix("storlab-replace-")
        .tempdir_in("/var/tmp")
        .unwrap();
    // A spare smaller than the device it would replace.
    let (loops, m) = raid1(dir.path(), 1 << 30, 50, Some(256 << 20));
    let mut t = parse(&format!("btrfs-replace:{}:2:{}", m.0.display(), loops[2].0)).unwrap();
    t.start().unwrap();
    let e = wait_done(t.as_mut(), Duration::from_millis(100), Duration::from_secs(60))
        .unwrap_err()
        .to_string();
    assert!(e.contains("btrfs replace start") && e.contains("ERROR"), "{e}");
    // Not a block device, not a device id: refused before anything runs.
    let f = dir.path().join("a.img");
    let e = parse(&format!("btrfs-replace:{}:2:{}", m.0.display(), f.display()))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a block device"), "{e}");
    let e = parse(&format!("btrfs-replace:{}:two:{}", m.0.display(), loops[2].0))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a device id"), "{e}");
    drop(m);
}
