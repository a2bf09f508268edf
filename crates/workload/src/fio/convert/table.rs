//! Every fio option storlab honours, by the row that owns it: the options a handler reads and
//! the handler, run in this order (a row may read what the rows above it decided). Options
//! that shape the job file rather than one job (`stonewall`, `kb_base`, …) belong to the
//! building of the job (fio/mod.rs), and those that only shape fio's output to `storlab fio`'s
//! report (fio/cli.rs).

use super::{data, engine, files, pace, place, shape, Conversion, Opts};
use crate::WorkloadError;

/// Who reads a row's options.
#[derive(Clone, Copy)]
pub(crate) enum Owner {
    /// This handler, converting one job.
    Convert(fn(Opts, &mut Conversion) -> Result<(), WorkloadError>),
    /// The building of the job from its sections (fio/mod.rs: names, groups, kb_base).
    Build,
    /// `storlab fio`'s output (fio/cli.rs).
    Output,
}

/// One row: the options (fio's canonical names) and who reads them.
pub(crate) struct Handler {
    /// The options.
    pub(crate) options: &'static [&'static str],
    /// Who reads them.
    pub(crate) owner: Owner,
}

const fn row(
    options: &'static [&'static str],
    handle: fn(Opts, &mut Conversion) -> Result<(), WorkloadError>,
) -> Handler {
    Handler {
        options,
        owner: Owner::Convert(handle),
    }
}

/// The rows, in the order they run.
pub(crate) const HANDLERS: &[Handler] = &[
    row(
        &[
            "rw",
            "rw_sequencer",
            "percentage_random",
            "bs",
            "bsrange",
            "bssplit",
            "ba",
        ],
        shape::access,
    ),
    row(&["rwmixread", "rwmixwrite"], shape::mix),
    row(
        &["norandommap", "random_generator", "random_distribution", "randseed"],
        shape::random,
    ),
    row(
        &[
            "filename",
            "opendir",
            "directory",
            "numjobs",
            "nrfiles",
            "filesize",
            "file_service_type",
            "size",
            "io_size",
        ],
        files::files,
    ),
    row(
        &[
            "zonemode",
            "zonesize",
            "zoneskip",
            "zonerange",
            "zonecapacity",
            "read_beyond_wp",
        ],
        files::zones,
    ),
    row(&["offset", "offset_increment"], files::offsets),
    row(
        &[
            "direct",
            "buffered",
            "ioengine",
            "iodepth",
            "iodepth_batch",
            "iodepth_batch_complete_min",
            "iodepth_batch_complete_max",
            "io_submit_mode",
            "userspace_reap",
        ],
        engine::engine,
    ),
    row(&["sync"], engine::sync),
    row(&["invalidate", "fadvise_hint"], engine::cache),
    row(&["fallocate", "fill_device"], engine::allocation),
    row(
        &["runtime", "time_based", "ramp_time", "startdelay", "exitall", "loops"],
        pace::time,
    ),
    row(&["rate", "rate_iops", "rate_process"], pace::rate),
    row(&["rate_min", "rate_iops_min", "rate_cycle"], pace::rate_min),
    row(
        &[
            "cpus_allowed",
            "cpumask",
            "numa_cpu_nodes",
            "cpus_allowed_policy",
            "numa_mem_policy",
        ],
        place::cpus_and_memory,
    ),
    row(
        &[
            "steadystate",
            "steadystate_duration",
            "steadystate_ramp_time",
            "steadystate_check_interval",
        ],
        pace::steady,
    ),
    row(&["prioclass", "prio"], place::priority),
    row(
        &["cmdprio_percentage", "cmdprio_class", "cmdprio", "cmdprio_hint"],
        place::cmdprio,
    ),
    row(
        &["latency_target", "latency_window", "latency_percentile", "latency_run"],
        pace::latency_target,
    ),
    row(&["flow", "flow_id", "flow_sleep"], pace::flow),
    row(&["thinktime", "thinktime_spin", "thinktime_blocks"], pace::think),
    row(&["number_ios"], pace::ios),
    row(
        &[
            "fsync",
            "fdatasync",
            "sync_file_range",
            "end_fsync",
            "fsync_on_close",
            "end_syncfs",
        ],
        data::flushes,
    ),
    row(
        &["verify", "verify_pattern", "verify_backlog", "do_verify"],
        data::verify,
    ),
    row(
        &["zero_buffers", "buffer_compress_percentage", "buffer_compress_chunk"],
        data::buffers,
    ),
    row(
        &[
            "dedupe_percentage",
            "dedupe_mode",
            "dedupe_working_set_percentage",
            "dedupe_global",
        ],
        data::dedupe,
    ),
    row(
        &[
            "write_bw_log",
            "write_lat_log",
            "write_iops_log",
            "write_hist_log",
            "log_avg_msec",
            "log_hist_msec",
            "log_hist_coarseness",
            "log_offset",
            "bwavgtime",
            "iopsavgtime",
            "per_job_logs",
        ],
        data::logs,
    ),
    row(&["group_reporting"], data::reporting),
    row(
        &[
            "create_on_open",
            "unlink",
            "unlink_each_loop",
            "overwrite",
            "allow_mounted_write",
        ],
        data::lifecycle,
    ),
    row(&["ignore_error", "continue_on_error"], data::errors),
    Handler {
        options: &["name", "wait_for", "stonewall", "new_group", "kb_base"],
        owner: Owner::Build,
    },
    Handler {
        options: &[
            "percentile_list",
            "clat_percentiles",
            "lat_percentiles",
            "slat_percentiles",
        ],
        owner: Owner::Output,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::options::{Does, OPTIONS};

    #[test]
    fn every_honoured_fio_option_has_exactly_one_owner() {
        for o in OPTIONS {
            let owners = HANDLERS.iter().filter(|h| h.options.contains(&o.name)).count();
            match o.does {
                Does::Honour => assert_eq!(owners, 1, "fio's {} is honoured: it needs exactly one row", o.name),
                _ => assert_eq!(owners, 0, "fio's {} is not honoured, yet a row reads it", o.name),
            }
        }
        for h in HANDLERS {
            for name in h.options {
                assert!(
                    OPTIONS.iter().any(|o| o.name == *name),
                    "{name} is not fio's canonical name of an option"
                );
            }
        }
    }
}

#[cfg(test)]
mod round_trip {
    use std::path::Path;

    use crate::fio;
    use crate::Job;

    /// Every fio job file among fio's examples (tests/fixtures/fio-examples) that storlab
    /// accepts: converted with each handler restricted to its own options (a debug assertion
    /// in `Opts`), and its storlab job file read back to the same job.
    #[test]
    fn every_accepted_example_reads_back_from_its_storlab_job_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fio-examples");
        let mut accepted = 0;
        let mut refused = Vec::new();
        for entry in std::fs::read_dir(&dir).expect("the fio examples") {
            let path = entry.expect("an entry").path();
            if path.extension().is_none_or(|e| e != "fio") {
                continue;
            }
            let read = match fio::load(&path, false) {
                Ok(r) => r,
                Err(e) => {
                    refused.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            let back = Job::parse(&read.toml, "back.toml").unwrap_or_else(|e| {
                panic!(
                    "{}'s storlab job file does not read: {e}\n{}",
                    path.display(),
                    read.toml
                )
            });
            assert_eq!(back.name, read.job.name, "{}", path.display());
            assert_eq!(back.targets, read.job.targets, "{}", path.display());
            assert_eq!(back.settings, read.job.settings, "{}", path.display());
            assert_eq!(back.phases, read.job.phases, "{}\n{}", path.display(), read.toml);
            assert_eq!(back.streams, read.job.streams, "{}\n{}", path.display(), read.toml);
            accepted += 1;
        }
        eprintln!("{accepted} accepted, {} refused", refused.len());
        // docs/run.md lists the examples storlab refuses and why; the rest run.
        assert!(accepted >= 30, "{accepted} accepted; refused: {refused:#?}");
    }
}
