//! fio's options (fio's options.c and the local engines' options, fio 3.42), each with how
//! fio reads its value and what storlab does with it: honours it (convert.rs gives it the
//! same effect on the I/O), accepts it with a note because it does not change what is
//! measured, or refuses it — by name and line, with why — because running without it would
//! measure something else than the job asks for. A name fio does not know is refused as fio
//! refuses it.

/// How fio reads an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A switch that may stand bare (`norandommap`, `time_based`): fio's STR_SET.
    Switch,
    /// 0 or 1, which must be given (`direct=1`): fio's BOOL.
    Bool,
    /// A whole number (sizes' units allowed).
    Int,
    /// A size, or a percentage where fio allows one.
    Size,
    /// A time, bare numbers in seconds.
    Seconds,
    /// A time, bare numbers in microseconds.
    Micros,
    /// A string or one of a set of words.
    Str,
    /// A range of sizes `lo-hi`.
    Range,
    /// Numbers separated by `:`.
    FloatList,
    /// Accepted and ignored by fio itself, which says it is deprecated.
    Deprecated,
}

/// What storlab does with an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Does {
    /// convert.rs gives it fio's effect (some values may still be refused there, each with
    /// why).
    Honour,
    /// Accepted; the note says why it changes nothing storlab measures.
    Note(&'static str),
    /// Refused: why running without it would measure something else.
    Refuse(&'static str),
}

/// One of fio's options.
#[derive(Debug, Clone, Copy)]
pub struct FioOption {
    /// fio's name.
    pub name: &'static str,
    /// Its other names.
    pub aliases: &'static [&'static str],
    /// How its value is read.
    pub kind: Kind,
    /// What storlab does with it.
    pub does: Does,
}

const fn h(name: &'static str, aliases: &'static [&'static str], kind: Kind) -> FioOption {
    FioOption {
        name,
        aliases,
        kind,
        does: Does::Honour,
    }
}
const fn n(name: &'static str, aliases: &'static [&'static str], kind: Kind, why: &'static str) -> FioOption {
    FioOption {
        name,
        aliases,
        kind,
        does: Does::Note(why),
    }
}
const fn r(name: &'static str, aliases: &'static [&'static str], kind: Kind, why: &'static str) -> FioOption {
    FioOption {
        name,
        aliases,
        kind,
        does: Does::Refuse(why),
    }
}

use Kind::*;

const REPORTING: &str = "reporting only: storlab measures every figure and keeps them all";
const TIMING: &str =
    "storlab reads the clock once per I/O (CLOCK_MONOTONIC through the vDSO) whatever fio's clock settings say";
const LOGS: &str =
    "storlab keeps every phase's bandwidth, IOPS and latency as interval samples (log_avg_msec sets their interval)";
const SETUP: &str = "how fio sets up its files or memory: storlab lays out its files and aligned buffers itself";
const VERIFY_DETAIL: &str =
    "how fio verifies: storlab stamps every 4 KiB with its own header and CRC-32C and checks every 4 KiB it reads back";
pub(crate) const ZONES: &str =
    "zone limits, resets by threshold and placement hints (FDP): storlab emulates zones where the device has none, as fio's zonemode=zbd does on a file, without open-zone limits or reset thresholds, so it would write where such a device refuses";
const PRIORITY: &str = "a CPU priority, a priority hint or priorities by block size change what the scheduler and device serve first: storlab sets the workers' I/O class and level (prioclass, prio) and a share of requests' own (cmdprio_percentage), nothing else";
const TRACE: &str = "replaying or recording an I/O trace: storlab generates its I/O from the access pattern";
const THINK: &str =
    "pauses between I/Os change the load the device sees: storlab issues back to back (or at a target rate)";
const TRIM: &str = "trims: storlab's engine issues reads and writes only";
const COMMANDS: &str = "storlab does not run commands or change the system's settings from a job file";
const LATENCY_TARGET: &str =
    "fio's latency-target search (and its latency limits) drive the queue depth: storlab keeps the depth it is given";

/// Every option fio knows (generic and the local engines').
pub const OPTIONS: &[FioOption] = &[
    n("description", &[], Str, "a description: stored as the job's note"),
    h("name", &[], Str),
    h("wait_for", &[], Str),
    h("filename", &[], Str),
    r("filetype", &[], Str, "fio's file type override: storlab takes the target's type from the system"),
    h("directory", &[], Str),
    n("filename_format", &[], Str, "a naming of fio's files other than its default: storlab names a job's files in a directory as fio's default does, NAME.CLONE.FILE"),
    n("unique_filename", &[], Bool, "fio's client/server prefix of its file names: storlab names a job's files in a directory as fio's default does, NAME.CLONE.FILE"),
    n("lockfile", &[], Str, "storlab's workers each own a region of a shared file, so no lock is needed"),
    h("opendir", &[], Str),
    h("rw", &["readwrite"], Str),
    h("rw_sequencer", &[], Str),
    h("ioengine", &[], Str),
    h("iodepth", &[], Int),
    h("iodepth_batch", &["iodepth_batch_submit"], Int),
    h("iodepth_batch_complete_min", &["iodepth_batch_complete"], Int),
    h("iodepth_batch_complete_max", &[], Int),
    n("iodepth_low", &[], Int, "storlab refills the queue as soon as an I/O completes, as fio does by default"),
    n("serialize_overlap", &[], Bool, "storlab's workers never have overlapping I/Os in flight on one region"),
    h("io_submit_mode", &[], Str),
    h("size", &[], Size),
    h("io_size", &["io_limit"], Size),
    h("fill_device", &["fill_fs"], Bool),
    h("filesize", &[], Size),
    r("file_append", &[], Bool, "appending after the file's end: storlab writes from the region's start"),
    h("offset", &["fileoffset"], Size),
    n("offset_align", &[], Int, "storlab aligns offsets to the block size"),
    h("offset_increment", &[], Size),
    h("number_ios", &[], Int),
    r("num_range", &[], Int, "ranges of trims: storlab's engine issues reads and writes only"),
    h("bs", &["blocksize"], Size),
    h("ba", &["blockalign"], Size),
    h("bsrange", &["blocksize_range"], Range),
    h("bssplit", &[], Str),
    r("bs_unaligned", &["blocksize_unaligned"], Switch, "block sizes not multiples of the smallest: storlab aligns every block to the smallest size"),
    r("bs_is_seq_rand", &[], Bool, "block sizes chosen by sequential or random I/O rather than by reads and writes"),
    n("randrepeat", &["allrandrepeat"], Bool, "storlab's offsets come from a seed of their own (randseed sets it); they repeat when the seed does"),
    h("randseed", &[], Int),
    h("norandommap", &[], Switch),
    n("softrandommap", &[], Bool, "storlab's map of visited blocks is never full before the pass ends"),
    r("sprandom", &[], Bool, "fio's SSD preconditioning sequence: storlab has no such pattern"),
    r("spr_num_regions", &[], Int, "fio's SSD preconditioning sequence: storlab has no such pattern"),
    r("spr_op", &[], FloatList, "fio's SSD preconditioning sequence: storlab has no such pattern"),
    r("spr_cs", &[], Int, "fio's SSD preconditioning sequence: storlab has no such pattern"),
    h("random_generator", &[], Str),
    h("random_distribution", &[], Str),
    n("random_sequence_stride", &[], Bool, "storlab's sequential runs in a random mix are one block long"),
    h("percentage_random", &[], Int),
    n("percentage_sequential", &[], Deprecated, "deprecated by fio"),
    h("nrfiles", &["nr_files"], Int),
    n("openfiles", &[], Int, "storlab keeps all of a worker's files open for the phase"),
    h("file_service_type", &[], Str),
    h("fallocate", &[], Str),
    h("fadvise_hint", &[], Str),
    h("fsync", &[], Int),
    h("fdatasync", &[], Int),
    r("write_barrier", &[], Int, "write barriers: storlab flushes with fsync"),
    h("sync_file_range", &[], Str),
    h("direct", &[], Bool),
    r("atomic", &[], Bool, "atomic writes (RWF_ATOMIC): storlab writes without them"),
    h("buffered", &[], Bool),
    h("overwrite", &[], Bool),
    h("loops", &[], Int),
    h("numjobs", &[], Int),
    h("startdelay", &[], Seconds),
    h("runtime", &["timeout"], Seconds),
    h("time_based", &[], Switch),
    r("verify_only", &[], Switch, "verifying without writing first: use storlab run --verify-against RUN"),
    h("ramp_time", &[], Seconds),
    r("ramp_size", &[], Size, "a ramp measured in bytes: storlab's ramp is a time (ramp_time)"),
    n("clocksource", &[], Str, TIMING),
    n("mem", &["iomem"], Str, SETUP),
    n("iomem_align", &["mem_align"], Int, SETUP),
    h("verify", &[], Str),
    h("do_verify", &[], Bool),
    n("verify_policy", &[], Str, VERIFY_DETAIL),
    n("verifysort", &[], Deprecated, "deprecated by fio"),
    n("verifysort_nr", &[], Deprecated, "deprecated by fio"),
    n("verify_interval", &[], Int, VERIFY_DETAIL),
    n("verify_offset", &[], Int, VERIFY_DETAIL),
    h("verify_pattern", &[], Str),
    n("verify_pattern_interval", &[], Int, VERIFY_DETAIL),
    n("verify_fatal", &[], Bool, "storlab checks every block it reads back, counts each bad one (listing the first 100) and fails the run"),
    n("verify_dump", &[], Bool, "storlab reports the first bad block's offset and what it found there"),
    n("verify_async", &[], Int, VERIFY_DETAIL),
    h("verify_backlog", &[], Int),
    n("verify_backlog_batch", &[], Int, VERIFY_DETAIL),
    n("verify_async_cpus", &[], Str, VERIFY_DETAIL),
    n("experimental_verify", &[], Bool, VERIFY_DETAIL),
    n("verify_state_load", &[], Bool, VERIFY_DETAIL),
    n("verify_state_save", &[], Bool, VERIFY_DETAIL),
    n("verify_write_sequence", &[], Bool, VERIFY_DETAIL),
    n("verify_header_seed", &[], Bool, VERIFY_DETAIL),
    r("trim_percentage", &[], Int, TRIM),
    r("trim_verify_zero", &[], Bool, TRIM),
    r("trim_backlog", &[], Int, TRIM),
    r("trim_backlog_batch", &[], Int, TRIM),
    r("write_iolog", &[], Str, TRACE),
    r("read_iolog", &[], Str, TRACE),
    r("read_iolog_chunked", &[], Bool, TRACE),
    r("replay_no_stall", &[], Bool, TRACE),
    r("replay_redirect", &[], Str, TRACE),
    r("replay_scale", &[], Int, TRACE),
    r("replay_align", &[], Int, TRACE),
    r("replay_time_scale", &[], Int, TRACE),
    r("replay_skip", &[], Str, TRACE),
    r("merge_blktrace_file", &[], Str, TRACE),
    r("merge_blktrace_scalars", &[], FloatList, TRACE),
    r("merge_blktrace_iters", &[], FloatList, TRACE),
    r("exec_prerun", &[], Str, COMMANDS),
    r("exec_postrun", &[], Str, COMMANDS),
    r("ioscheduler", &[], Str, COMMANDS),
    h("zonemode", &[], Str),
    h("zonesize", &[], Size),
    h("zonecapacity", &[], Size),
    h("zonerange", &[], Size),
    h("zoneskip", &[], Size),
    h("read_beyond_wp", &[], Bool),
    r("max_open_zones", &[], Int, ZONES),
    r("job_max_open_zones", &[], Int, ZONES),
    r("ignore_zone_limits", &[], Bool, ZONES),
    r("zone_reset_threshold", &[], FloatList, ZONES),
    r("zone_reset_frequency", &[], FloatList, ZONES),
    r("recover_zbd_write_error", &[], Bool, ZONES),
    r("write_zone_remainder", &[], Bool, ZONES),
    r("fdp", &[], Bool, ZONES),
    r("dataplacement", &["data_placement"], Str, ZONES),
    r("plid_select", &["fdp_pli_select"], Str, ZONES),
    r("plids", &["fdp_pli"], Str, ZONES),
    r("dp_scheme", &[], Str, ZONES),
    n("lockmem", &[], Size, "fio's way to leave less memory to the page cache: storlab measures the cache as the system has it (direct=1 bypasses it)"),
    h("rwmixread", &[], Int),
    h("rwmixwrite", &[], Int),
    n("rwmixcycle", &[], Deprecated, "deprecated by fio"),
    n("comm", &[], Str, "the process's name"),
    r("nice", &[], Int, PRIORITY),
    h("prio", &[], Int),
    h("prioclass", &[], Int),
    r("priohint", &[], Int, PRIORITY),
    h("thinktime", &[], Micros),
    h("thinktime_spin", &[], Micros),
    r("thinkcycles", &[], Int, THINK),
    h("thinktime_blocks", &[], Int),
    r("thinktime_blocks_type", &[], Str, THINK),
    r("thinktime_iotime", &[], Seconds, THINK),
    h("rate", &[], Size),
    h("rate_min", &["ratemin"], Size),
    h("rate_iops", &[], Int),
    h("rate_iops_min", &[], Int),
    h("rate_process", &[], Str),
    h("rate_cycle", &["ratecycle"], Int),
    n("rate_ignore_thinktime", &[], Bool, "storlab has no think time"),
    r("max_latency", &[], Micros, LATENCY_TARGET),
    h("latency_target", &[], Micros),
    h("latency_window", &[], Micros),
    h("latency_percentile", &[], FloatList),
    h("latency_run", &[], Bool),
    h("invalidate", &[], Bool),
    h("sync", &[], Str),
    r("write_hint", &[], Str, "write lifetime hints change where an SSD places data"),
    n("create_serialize", &[], Bool, SETUP),
    n("create_fsync", &[], Bool, SETUP),
    h("create_on_open", &[], Bool),
    r("create_only", &[], Bool, "creating files without I/O: storlab meta measures file creation"),
    n("allow_file_create", &[], Bool, "storlab creates its own files in a directory target, and never creates a file it was not asked to"),
    h("allow_mounted_write", &[], Bool),
    r("pre_read", &[], Bool, "reading the files into the cache first: storlab measures the cache as the system has it"),
    h("cpumask", &[], Int),
    h("cpus_allowed", &[], Str),
    h("cpus_allowed_policy", &[], Str),
    h("numa_cpu_nodes", &[], Str),
    h("numa_mem_policy", &[], Str),
    r("gpu_dev_id", &[], Int, "GPU memory as I/O buffers"),
    h("end_fsync", &[], Bool),
    h("fsync_on_close", &[], Bool),
    h("end_syncfs", &[], Bool),
    h("unlink", &[], Bool),
    h("unlink_each_loop", &[], Bool),
    h("exitall", &[], Switch),
    n("exit_what", &[], Str, "which jobs exitall ends: storlab ends the jobs running with the one that finished"),
    n("exitall_on_error", &[], Switch, "storlab ends the run at the first error"),
    h("stonewall", &["wait_for_previous"], Switch),
    h("new_group", &[], Switch),
    n("thread", &[], Switch, "storlab's workers are threads"),
    h("per_job_logs", &[], Bool),
    h("write_bw_log", &[], Str),
    h("write_lat_log", &[], Str),
    h("write_iops_log", &[], Str),
    n("log_entries", &[], Int, LOGS),
    h("log_avg_msec", &[], Int),
    h("log_hist_msec", &[], Int),
    h("log_hist_coarseness", &[], Int),
    h("write_hist_log", &[], Str),
    n("log_window_value", &["log_max_value"], Str, LOGS),
    h("log_offset", &[], Bool),
    n("log_prio", &[], Bool, LOGS),
    n("log_issue_time", &[], Bool, LOGS),
    n("log_compression", &[], Int, LOGS),
    n("log_compression_cpus", &[], Str, LOGS),
    n("log_store_compressed", &[], Bool, LOGS),
    n("log_alternate_epoch", &["log_unix_epoch"], Bool, LOGS),
    n("log_alternate_epoch_clock_id", &[], Int, LOGS),
    n("block_error_percentiles", &[], Bool, REPORTING),
    h("bwavgtime", &[], Int),
    h("iopsavgtime", &[], Int),
    h("group_reporting", &[], Switch),
    n("stats", &[], Bool, REPORTING),
    h("zero_buffers", &[], Switch),
    n("refill_buffers", &[], Switch, "storlab's data is already different in every block written"),
    n("scramble_buffers", &[], Bool, "storlab's data is already different in every block written"),
    r("buffer_pattern", &[], Str, "a given data pattern in every write: storlab writes its own data (random, zeros, or compressible)"),
    h("buffer_compress_percentage", &[], Int),
    h("buffer_compress_chunk", &[], Int),
    h("dedupe_percentage", &[], Int),
    h("dedupe_global", &[], Bool),
    h("dedupe_mode", &[], Str),
    h("dedupe_working_set_percentage", &[], Int),
    h("clat_percentiles", &[], Bool),
    h("lat_percentiles", &[], Bool),
    h("slat_percentiles", &[], Bool),
    h("percentile_list", &[], FloatList),
    n("significant_figures", &[], Int, "storlab's histograms keep 3 significant figures"),
    n("disk_util", &[], Bool, REPORTING),
    n("gtod_reduce", &[], Bool, TIMING),
    n("disable_lat", &[], Bool, TIMING),
    n("disable_clat", &[], Bool, TIMING),
    n("disable_slat", &[], Bool, TIMING),
    n("disable_bw_measurement", &["disable_bw"], Bool, TIMING),
    n("gtod_cpu", &[], Int, TIMING),
    n("job_start_clock_id", &[], Int, TIMING),
    n("unified_rw_reporting", &[], Str, REPORTING),
    h("continue_on_error", &[], Str),
    h("ignore_error", &[], Str),
    n("error_dump", &[], Bool, "storlab says where and why an I/O failed"),
    r("profile", &[], Str, "fio's built-in profiles: write the job out"),
    r("cgroup", &[], Str, "a cgroup's limits change what is measured: run storlab in the cgroup instead"),
    r("cgroup_nodelete", &[], Bool, "a cgroup's limits change what is measured: run storlab in the cgroup instead"),
    r("cgroup_weight", &[], Int, "a cgroup's limits change what is measured: run storlab in the cgroup instead"),
    r("uid", &[], Int, COMMANDS),
    r("gid", &[], Int, COMMANDS),
    h("kb_base", &[], Str),
    n("unit_base", &[], Str, "how fio prints rates: storlab prints bytes per second with binary prefixes"),
    n("hugepage-size", &[], Int, SETUP),
    h("flow_id", &[], Int),
    h("flow", &[], Int),
    n("flow_watermark", &[], Deprecated, "deprecated by fio"),
    h("flow_sleep", &[], Micros),
    h("steadystate", &["ss"], Str),
    h("steadystate_duration", &["ss_dur"], Seconds),
    h("steadystate_ramp_time", &["ss_ramp"], Seconds),
    h("steadystate_check_interval", &["ss_interval"], Seconds),
    // Options of fio's built-in profiles, which fio accepts in any job and which do nothing
    // without profile= (storlab refuses profile=).
    n("threads", &[], Int, "an option of fio's tiobench profile: without profile=tiobench fio ignores it"),
    n("block", &[], Int, "an option of fio's tiobench profile: without profile=tiobench fio ignores it"),
    n("numruns", &[], Int, "an option of fio's tiobench profile: without profile=tiobench fio ignores it"),
    n("dir", &[], Str, "an option of fio's tiobench profile: without profile=tiobench fio ignores it"),
    // The local engines' own options.
    r("hipri", &[], Switch, "polled completions (RWF_HIPRI) have lower latency: storlab waits for interrupts"),
    r("hipri_percentage", &[], Int, "polled completions (RWF_HIPRI) have lower latency: storlab waits for interrupts"),
    r("readfua", &[], Bool, "forced unit access bypasses the device's cache"),
    r("writefua", &[], Bool, "forced unit access bypasses the device's cache"),
    r("write_mode", &[], Str, "NVMe pass-through commands"),
    r("verify_mode", &[], Str, "NVMe pass-through commands"),
    r("read_mode", &[], Str, "NVMe pass-through commands"),
    r("cmd_type", &[], Str, "NVMe pass-through commands"),
    n("fixedbufs", &[], Switch, "storlab's io_uring buffers are its own; registering them saves a page pinning per I/O that storlab pays"),
    n("registerfiles", &[], Switch, "storlab's io_uring ring serves one file per worker"),
    r("sqthread_poll", &[], Switch, "a kernel thread polling the submission queue changes the CPU cost and latency of every I/O"),
    r("sqthread_poll_cpu", &[], Int, "a kernel thread polling the submission queue changes the CPU cost and latency of every I/O"),
    n("nonvectored", &[], Int, "storlab's io_uring reads and writes are not vectored"),
    r("uncached", &[], Int, "uncached buffered I/O (RWF_DONTCACHE) drops pages as it goes"),
    n("nowait", &[], Bool, "storlab's I/O waits when the kernel would block, as fio's does without nowait"),
    r("force_async", &[], Int, "punting every I/O to io_uring's workers changes its cost"),
    h("userspace_reap", &[], Switch),
    n("libaio_vectored", &[], Bool, "storlab's libaio submits each I/O as one PREAD or PWRITE, not vectored"),
    h("cmdprio_percentage", &[], Str),
    h("cmdprio_class", &[], Str),
    h("cmdprio_hint", &[], Str),
    h("cmdprio", &[], Str),
    r("cmdprio_bssplit", &[], Str, PRIORITY),
    r("thp", &[], Int, "transparent huge pages for mmap's buffers"),
];

/// The option `name` is, through its aliases (fio matches names exactly, and `-` and `_` are
/// not the same).
pub fn find(name: &str) -> Option<&'static FioOption> {
    OPTIONS.iter().find(|o| o.name == name || o.aliases.contains(&name))
}

/// Every option's name and alias, for a "did you mean" (fio's suggestion, by edit distance).
pub fn names() -> impl Iterator<Item = &'static str> {
    OPTIONS
        .iter()
        .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_aliases_resolve() {
        let mut seen = std::collections::BTreeSet::new();
        for o in OPTIONS {
            for n in std::iter::once(&o.name).chain(o.aliases.iter()) {
                assert!(seen.insert(*n), "{n} twice");
            }
        }
        assert_eq!(find("readwrite").unwrap().name, "rw");
        assert_eq!(find("timeout").unwrap().name, "runtime");
        assert_eq!(find("ratemin").unwrap().name, "rate_min");
        assert!(find("rwx").is_none());
        assert_eq!(storlab_model::names::closest("iodepht", names()), Some("iodepth"));
    }
}
