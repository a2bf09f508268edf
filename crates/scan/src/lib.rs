//! `storlab scan`: how much data a filesystem holds, how much of it has not been accessed for
//! longer than given ages (the candidates for a cheaper tier), and how it is spread over ages
//! and sizes. A parallel walk (walk.rs) feeds per-thread accumulators; nothing is kept per
//! file, so memory does not grow with the number of files.
//!
//! What is counted (docs/scan.md says the same for users):
//! - data: regular files only, apparent size (st_size) and allocated size (st_blocks × 512);
//! - files: regular files; a file with several hard links counts once (by device and inode),
//!   in the first row the walk meets it in;
//! - dirs: every directory, the row's own included; symbolic links and other entries (fifos,
//!   sockets, devices) are counted apart and never followed;
//! - a file's age: now − its atime (default), its mtime, or the later of the two; a
//!   directory's own times are ignored. A file is older than a threshold when its age is
//!   strictly greater.
//! - lib.rs: the options and the accumulators; walk.rs: the parallel walk;
//! - mounts.rs: what a mount's atime options mean for "not accessed for N days";
//! - owners.rs: owners' names for `--group-by user|group`.

#![deny(missing_docs)]

pub mod mounts;
pub mod owners;
mod walk;

pub use walk::scan;

/// What can stop a scan before it starts (problems met during the walk are counted instead).
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// A PATH to scan is missing, not a directory, or cannot be opened.
    #[error("cannot scan {path}: {reason}")]
    Root {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Options that do not fit together.
    #[error("{0}")]
    Options(String),
}

pub use storlab_model::scan::*;

/// What `storlab scan` was given, as written: its flags, declared here once (the binary
/// flattens them into its command line). `against` is the store's to look up.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ScanFlags {
    /// The directories to scan (one row each, unless --group-by says otherwise).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<std::path::PathBuf>,
    /// Age thresholds, comma-separated (e.g. 60d,160d; units s m h d w).
    #[arg(long, value_name = "AGES", default_value = "60d,160d")]
    pub age: String,
    /// Rows: path (one per PATH), top (one per directory just below each PATH), depth:N, user
    /// (one per owning user under each PATH, names from the system) or group.
    #[arg(long = "group-by", value_name = "HOW", default_value = "path")]
    pub group_by: String,
    /// Leave out entries matching GLOB (not counted, not descended into; counted as excluded):
    /// a GLOB without / matches a name at any depth (.snapshot, *.tmp), one with / a whole path
    /// (/data/*/scratch); repeatable.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Show, per row, the change in data, files and cold data since an earlier scan of the
    /// same PATHs: its run id, or `last` for the newest such scan in the database.
    #[arg(long = "against", value_name = "ID|last")]
    pub against: Option<String>,
    /// Which time gives a file's age: atime (last access), mtime (last change), or max.
    #[arg(long, value_name = "BASIS", default_value = "atime")]
    pub time: String,
    /// Descend into other filesystems mounted below a PATH.
    #[arg(long = "cross-mounts")]
    pub cross_mounts: bool,
    /// List the N directories holding the most data older than the first threshold.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub top: usize,
    /// Walker threads (default: twice the CPUs).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

/// The scan's options from its flags, "now" taken from the clock; a refusal names the flag.
pub fn options(f: &ScanFlags) -> Result<ScanOptions, ScanError> {
    let bad = ScanError::Options;
    let mut ages = Vec::new();
    for part in f.age.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let d: storlab_units::Duration = part.parse().map_err(|e| bad(format!("--age {part}: {e}")))?;
        if d.0 == 0 || !d.0.is_multiple_of(1_000_000_000) {
            return Err(bad(format!(
                "--age {part}: a threshold is a whole number of seconds, at least 1s (e.g. 60d, 36h)"
            )));
        }
        ages.push(d.0 / 1_000_000_000);
    }
    ages.sort_unstable();
    ages.dedup();
    let group_by = GroupBy::parse(&f.group_by).map_err(|e| bad(format!("--group-by: {e}")))?;
    let time =
        TimeBasis::from_name(&f.time).ok_or_else(|| bad(format!("--time {}: expected atime, mtime or max", f.time)))?;
    let threads = match f.threads {
        Some(0) => return Err(bad("--threads 0: at least 1".into())),
        Some(n) => n,
        // Twice the CPUs: with a warm cache the walk is CPU work, and with a cold one the
        // extra threads keep the device busy with several directory reads at once.
        None => std::thread::available_parallelism().map(|n| n.get() * 2).unwrap_or(4),
    };
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Ok(ScanOptions {
        roots: f.paths.clone(),
        ages,
        group_by,
        time,
        cross_mounts: f.cross_mounts,
        threads,
        top: f.top,
        now_ns,
        exclude: f.exclude.clone(),
    })
}

#[cfg(test)]
mod options_tests {
    use super::*;

    fn flags() -> ScanFlags {
        ScanFlags {
            paths: vec!["/tmp".into()],
            age: "160d,60d,60d".into(),
            group_by: "path".into(),
            time: "atime".into(),
            ..Default::default()
        }
    }

    #[test]
    fn ages_are_whole_seconds_ascending_once_each() {
        let o = options(&flags()).unwrap();
        assert_eq!(o.ages, vec![60 * 86400, 160 * 86400]);
        assert!(o.threads >= 2);
        let o = options(&ScanFlags {
            threads: Some(3),
            ..flags()
        })
        .unwrap();
        assert_eq!(o.threads, 3);
    }

    #[test]
    fn refusals_name_the_flag() {
        let err = |f: ScanFlags| options(&f).unwrap_err().to_string();
        assert_eq!(
            err(ScanFlags {
                age: "1500ms".into(),
                ..flags()
            }),
            "--age 1500ms: a threshold is a whole number of seconds, at least 1s (e.g. 60d, 36h)"
        );
        assert_eq!(
            err(ScanFlags {
                time: "ctime".into(),
                ..flags()
            }),
            "--time ctime: expected atime, mtime or max"
        );
        assert_eq!(
            err(ScanFlags {
                threads: Some(0),
                ..flags()
            }),
            "--threads 0: at least 1"
        );
        assert!(err(ScanFlags {
            group_by: "colour".into(),
            ..flags()
        })
        .starts_with("--group-by: "));
    }
}
