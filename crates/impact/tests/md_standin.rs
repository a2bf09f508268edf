//! The md check/repair task against a stand-in of the md sysfs files: these machines' kernels
//! have no md driver, so a thread here plays the kernel's part (it advances sync_completed while
//! sync_action says "check" or "repair", then goes idle with a mismatch count). The task reads
//! and writes exactly the files a real array has (Documentation/admin-guide/md.rst).

use std::path::Path;
use std::time::Duration;

use storlab_impact::kinds::parse;
use storlab_impact::task::{wait_done, TaskState};

fn put(dir: &Path, f: &str, v: &str) {
    std::fs::write(dir.join(f), v).unwrap();
}
fn get(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap().trim().to_string()
}

/// The stand-in kernel: runs a check or repair in five steps of 40 ms unless told "idle".
fn kernel(dir: std::path::PathBuf, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::Ordering;
    while !stop.load(Ordering::Relaxed) {
        let a = get(&dir, "sync_action");
        if a == "check" || a == "repair" {
            let mut interrupted = false;
            for i in 1..=5 {
                std::thread::sleep(Duration::from_millis(40));
                if get(&dir, "sync_action") == "idle" {
                    interrupted = true;
                    break;
                }
                put(&dir, "sync_completed", &format!("{} / 1000", i * 200));
            }
            if !interrupted {
                put(&dir, "mismatch_cnt", "8");
            }
            put(&dir, "sync_completed", "none");
            put(&dir, "sync_action", "idle");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn md_check_and_repair_through_sysfs() {
    let root = tempfile::tempdir().unwrap();
    let md = root.path().join("block/md0/md");
    std::fs::create_dir_all(&md).unwrap();
    for (f, v) in [
        ("sync_action", "idle"),
        ("sync_completed", "none"),
        ("sync_speed_max", "200000 (system)"),
        ("mismatch_cnt", "0"),
    ] {
        put(&md, f, v);
    }
    std::env::set_var("STORLAB_SYSFS_ROOT", root.path());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let k = {
        let (d, s) = (md.clone(), stop.clone());
        std::thread::spawn(move || kernel(d, s))
    };

    // A check at 10 MiB/s runs to its end: progress seen, mismatches reported, speed put back.
    let mut t = parse("md-check:/dev/md0@10m").unwrap();
    assert_eq!(t.poll().unwrap(), TaskState::Idle);
    t.start().unwrap();
    assert_eq!(get(&md, "sync_speed_max"), "10240", "KiB/s while the task runs");
    let (end, looks) = wait_done(t.as_mut(), Duration::from_millis(15), Duration::from_secs(10)).unwrap();
    assert!(
        looks
            .iter()
            .any(|(_, s)| matches!(s, TaskState::Running(p) if p.percent.is_some_and(|x| x > 0.0))),
        "{looks:?}"
    );
    assert_eq!(
        end,
        TaskState::Done {
            completed: true,
            detail: "mismatch_cnt 8".into()
        }
    );
    t.stop().unwrap();
    assert_eq!(get(&md, "sync_speed_max"), "system", "the limit is put back");

    // A repair stopped halfway is reported as not completed.
    put(&md, "mismatch_cnt", "0");
    let mut t = parse("md-repair:/dev/md0").unwrap();
    t.start().unwrap();
    std::thread::sleep(Duration::from_millis(60));
    t.stop().unwrap();
    let (end, _) = wait_done(t.as_mut(), Duration::from_millis(15), Duration::from_secs(10)).unwrap();
    assert!(matches!(end, TaskState::Done { completed: false, .. }), "{end:?}");

    // A busy array is not touched; a device that is not md is refused.
    std::thread::sleep(Duration::from_millis(50));
    put(&md, "sync_action", "resync");
    let mut t = parse("md-check:/dev/md0").unwrap();
    let e = t.start().unwrap_err().to_string();
    assert!(e.contains("busy with 'resync'"), "{e}");
    assert_eq!(get(&md, "sync_action"), "resync");
    put(&md, "sync_action", "idle");
    assert!(parse("md-check:/dev/sda")
        .err()
        .unwrap()
        .to_string()
        .contains("md array"));
    assert!(parse("md-check:/dev/md9").err().unwrap().to_string().contains("no "));

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    k.join().unwrap();
}
