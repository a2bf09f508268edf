//! The headings a person scanning `storlab run --help` finds the settings under: every setting
//! of the one declaration (settings.rs) in exactly one group, checked by a test, so that a new
//! setting without a heading fails the build's tests rather than falling out of the help.

/// What a job runs: its files, their shape, the access pattern and the data written.
pub const WHAT: &str = "What to run";
/// How the workers issue their I/O: engine, depth, O_DIRECT, flushes, placement.
pub const HOW: &str = "How it runs";
/// Rates, pauses and the searches and stops that depend on time.
pub const PACE: &str = "How fast";
/// What is measured and kept: sampling, lateness, verification, errors.
pub const RECORD: &str = "What to record";

/// Each heading with its settings, in the order `--help` shows them.
pub const HEADINGS: &[(&str, &[&str])] = &[
    (
        WHAT,
        &[
            "threads",
            "size",
            "bs",
            "rwmix",
            "stride",
            "io_size",
            "loops",
            "ios",
            "runtime",
            "timeout",
            "ramp",
            "offset",
            "offset_increment",
            "nrfiles",
            "filesize",
            "file_service",
            "share",
            "fill",
            "hole",
            "strided",
            "zbd",
            "read_beyond_wp",
            "distribution",
            "random_map",
            "align",
            "pattern",
            "compress_chunk",
            "dedupe",
            "dedupe_set",
            "dedupe_global",
            "fallocate",
            "seed",
        ],
    ),
    (
        HOW,
        &[
            "engine",
            "iodepth",
            "iodepth_batch",
            "iodepth_batch_complete",
            "userspace_reap",
            "iovecs",
            "direct",
            "sync",
            "fsync",
            "sync_call",
            "fsync_timed",
            "close_timed",
            "fadvise",
            "priority",
            "cmdprio",
            "cpus",
            "cpus_policy",
            "memory_policy",
        ],
    ),
    (
        PACE,
        &[
            "rate",
            "rate_process",
            "rate_min",
            "rate_per",
            "think",
            "think_spin",
            "think_blocks",
            "flow",
            "flow_id",
            "flow_sleep",
            "start_delay",
            "exitall",
            "latency_target",
            "latency_window",
            "latency_percentile",
            "latency_run",
            "steady",
            "steady_window",
            "steady_ramp",
        ],
    ),
    (
        RECORD,
        &[
            "interval",
            "worker_samples",
            "interval_histograms",
            "histogram_interval",
            "io_log",
            "group_reporting",
            "late_after",
            "verify",
            "stop_at_bad_block",
            "verify_backlog",
            "continue_on_error",
            "continue_errnos",
        ],
    ),
];

/// The heading of setting `key` (a key no group names has none).
pub fn heading(key: &str) -> Option<&'static str> {
    HEADINGS.iter().find(|(_, keys)| keys.contains(&key)).map(|(h, _)| *h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_exactly_one_heading() {
        for s in crate::settings::SETTINGS {
            let n = HEADINGS.iter().filter(|(_, keys)| keys.contains(&s.key)).count();
            assert_eq!(n, 1, "setting {} is under {n} headings", s.key);
        }
        let all: usize = HEADINGS.iter().map(|(_, keys)| keys.len()).sum();
        assert_eq!(
            all,
            crate::settings::SETTINGS.len(),
            "a heading names a key that is no setting"
        );
    }
}
