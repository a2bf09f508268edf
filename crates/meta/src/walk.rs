//! `storlab meta walk DIR`: the "du over a million files" figure of seed 004. Every entry below
//! a directory is looked at once by storlab scan's parallel walker (an `fstatat` each, hard
//! links counted once), timed as one phase; `du -s` over the same directory can be timed beside
//! it. With cold caches, the kernel's page, dentry and inode caches are dropped before each.

use std::path::Path;
use std::time::Instant;

use storlab_model::meta::{MetaOp, MetaParams, TreeShape, NAMED_ERRORS};
use storlab_model::result::{PhaseResult, Throughput, WorkerResult};
use storlab_model::scan::{GroupBy, ScanOptions, TimeBasis};

use storlab_engine::{children_cpu, process_cpu};

use crate::phase::Outcome;
use crate::MetaError;

/// Walks `dir` with `threads` threads: the entries below it (itself not counted), each
/// looked at once, in the time the walk took; entries that could not be read are errors, named.
pub fn walk(dir: &Path, threads: usize) -> Result<Outcome, MetaError> {
    let opts = ScanOptions {
        roots: vec![dir.to_path_buf()],
        ages: Vec::new(),
        group_by: GroupBy::Path,
        time: TimeBasis::Mtime,
        cross_mounts: false,
        threads,
        top: 0,
        now_ns: 0,
        exclude: Vec::new(),
    };
    let cpu0 = process_cpu();
    let started = Instant::now();
    let report = storlab_scan::scan(&opts).map_err(|e| MetaError::Invalid(e.to_string()))?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu1 = process_cpu();
    let entries = report.entries;
    let all_done = Throughput::new(seconds, 0, entries);
    let result = PhaseResult {
        ops_read: entries,
        all_done: all_done.clone(),
        first_done: all_done,
        workers: vec![WorkerResult {
            file: format!("{} ({threads} threads)", dir.display()),
            ops: entries,
            seconds,
            cpu_user: cpu1.0 - cpu0.0,
            cpu_sys: cpu1.1 - cpu0.1,
            ..Default::default()
        }],
        cpu_user: cpu1.0 - cpu0.0,
        cpu_sys: cpu1.1 - cpu0.1,
        ..Default::default()
    };
    Ok(Outcome {
        result,
        params: MetaParams {
            op: MetaOp::Walk,
            workers: threads as u32,
            items_per_worker: 0,
            tree: TreeShape { depth: 0, branch: 1 },
            shared_dir: true,
            file_size: 0,
            sync: false,
            entries,
            errors: report.problem_count,
            first_errors: report
                .problems
                .iter()
                .take(NAMED_ERRORS)
                .map(|p| format!("{}: {}", p.path.display(), p.error))
                .collect(),
        },
    })
}

/// `du -s DIR`, timed from its start to its end: the seconds it took, its CPU time (user,
/// system) and its version line.
pub fn du(dir: &Path) -> Result<(f64, (f64, f64), String), MetaError> {
    let version = std::process::Command::new("du")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string))
        .unwrap_or_else(|| "du".into());
    let cpu0 = children_cpu();
    let started = Instant::now();
    let out = std::process::Command::new("du")
        .arg("-s")
        .arg(dir)
        .output()
        .map_err(|e| MetaError::Invalid(format!("--compare-du: cannot run du: {e}")))?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu1 = children_cpu();
    if !out.status.success() {
        return Err(MetaError::Invalid(format!(
            "--compare-du: du -s {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok((seconds, (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1), version))
}

/// Writes back dirty data and drops the kernel's clean page cache and its dentries and inodes
/// (`/proc/sys/vm/drop_caches`), so that a walk starts from the device. Needs root.
pub fn drop_caches() -> Result<(), MetaError> {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| MetaError::Io {
        path: "/proc/sys/vm/drop_caches".into(),
        source: e,
    })
}
