//! Workers run with a private descriptor table (see `unshare_fd_table` in run.rs). These tests
//! check what that must not change: a phase leaves the process with the descriptors it had,
//! whether it ran, was refused while opening, or used an io_uring ring; and the data a write
//! phase wrote is there for the next phase.

use std::sync::atomic::AtomicBool;

use storlab_engine::*;

fn plan(kind: PhaseKind, backend: BackendKind, path: &std::path::Path, workers: u64) -> PhasePlan {
    let len = 4 << 20;
    let mut settings = storlab_model::settings::Settings::default();
    for (k, v) in [
        ("engine", backend.name()),
        ("iodepth", if backend == BackendKind::IoUring { "8" } else { "1" }),
        ("iovecs", if backend == BackendKind::Pvsync { "4" } else { "1" }),
        ("fsync", "end"),
        ("fsync_timed", "false"),
        ("bs", "64k"),
        ("verify", if kind.writes() { "false" } else { "true" }),
    ] {
        settings.apply_str(k, v).unwrap();
    }
    PhasePlan {
        kind,
        settings: settings.resolve(),
        submit_batch: 1,
        write_headers: true,
        verify_generations: GenerationRange { min: 0, max: 0 },
        generation: 0,
        seed: 7,
        workers: (0..workers)
            .map(|i| WorkerFile::one(path.to_path_buf(), i * len, len, true, 0))
            .collect(),
        together: false,
        name: None,
    }
}

/// The tests of this file count the process's descriptors, which a test running beside them
/// would disturb: they take turns.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The descriptors this process has open. Worker threads' private tables vanish as the threads
/// exit, which may trail their join by a moment: wait until the count settles.
fn open_descriptors(expected: usize) -> usize {
    let count = || std::fs::read_dir("/proc/self/fd").unwrap().count();
    for _ in 0..100 {
        if count() == expected {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    count()
}

#[test]
fn phases_leave_no_descriptor_open_and_their_data_behind() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    let stop = AtomicBool::new(false);
    let before = open_descriptors(usize::MAX);
    let mut backends = vec![BackendKind::Psync, BackendKind::Stdio, BackendKind::Pvsync];
    if backend::probe_io_uring().is_ok() {
        backends.push(BackendKind::IoUring);
    }
    for be in backends {
        let w = run_phase(&plan(PhaseKind::Write, be, &path, 3), &stop).unwrap();
        assert_eq!(w.bytes_written, 3 * (4 << 20), "{be:?} write");
        // The read verifies every 4 KiB against the headers the write phase stamped: the
        // workers' private tables did not lose or reorder anything.
        let r = run_phase(&plan(PhaseKind::Read, be, &path, 3), &stop).unwrap();
        let v = r.verify.expect("read verified");
        assert_eq!(v.bad_blocks, 0, "{be:?}: {:?}", v.bad);
        assert_eq!(v.blocks_checked, 3 * (4 << 20) / 4096, "{be:?}");
        assert_eq!(open_descriptors(before), before, "{be:?}: descriptors left open");
    }
}

#[test]
fn a_refused_open_fails_the_phase_without_leaking() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let stop = AtomicBool::new(false);
    let before = open_descriptors(usize::MAX);
    // A read phase of a file storlab does not own and that does not exist: every worker's open
    // fails before any I/O, and the phase reports the path.
    let mut p = plan(PhaseKind::Read, BackendKind::Psync, &dir.path().join("missing"), 2);
    for w in &mut p.workers {
        w.owned = false;
    }
    let err = run_phase(&p, &stop).unwrap_err().to_string();
    assert!(err.contains("missing"), "{err}");
    assert_eq!(open_descriptors(before), before);
}
