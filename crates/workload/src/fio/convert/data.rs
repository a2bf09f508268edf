//! What a job writes and keeps: its flushes, the data in its buffers, deduplicable blocks,
//! verification, the errors it goes on past, fio's logs, and its files' life (create, unlink,
//! overwrite).

use storlab_model::plan::PhaseKind;
use storlab_model::settings::{ErrnoList, ErrorsGoneOn, SyncCall};
use storlab_model::values::{DataPattern, FsyncPolicy};
use storlab_units::Duration;

use super::super::value;
use super::{set, Conversion, FioLog, Opts};
use crate::WorkloadError;

/// fsync=N or fdatasync=N after every N writes; end_fsync, fsync_on_close and end_syncfs
/// once at the end.
pub(crate) fn flushes(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let every = |k: &str| -> Result<u32, WorkloadError> {
        u32::try_from(j.int(k)?.unwrap_or(0)).map_err(|_| j.refuse(k, "too many writes"))
    };
    let (fsync, fdatasync) = (every("fsync")?, every("fdatasync")?);
    if fsync > 0 && fdatasync > 0 {
        return Err(j.refuse(
            "fdatasync",
            format!(
                "fsync={fsync} and fdatasync={fdatasync} together: storlab flushes with one call; keep one of them"
            ),
        ));
    }
    if let Some(v) = j.val("sync_file_range") {
        if fsync > 0 || fdatasync > 0 {
            return Err(j.refuse(
                "sync_file_range",
                "with fsync or fdatasync: storlab flushes with one call; keep one of them",
            ));
        }
        return sync_file_range(j, cx, v);
    }
    if fsync > 0 {
        return set!(cx, "fsync", fsync = FsyncPolicy::Every(fsync));
    }
    if fdatasync > 0 {
        return set!(
            cx,
            "fdatasync",
            fsync = FsyncPolicy::Every(fdatasync),
            sync_call = SyncCall::Fdatasync
        );
    }
    let ends = [
        ("end_fsync", "fsync"),
        ("fsync_on_close", "fsync on close"),
        ("end_syncfs", "syncfs"),
    ];
    let mut end = None;
    for (k, what) in ends {
        if j.on(k)? {
            if k != "end_fsync" {
                cx.note(format!(
                    "{k}=1 ({what}): storlab flushes each file it wrote with fsync(2) at the end of the phase, timed"
                ));
            }
            end = end.or(Some(k));
        }
    }
    match end {
        Some(k) if cx.kind.writes() => set!(cx, k, fsync = FsyncPolicy::End),
        _ => Ok(()),
    }
}

/// fio's sync_file_range=FLAGS:N: sync_file_range(2) with those flags before the write after
/// every N writes (over the whole file: fio's covers the range written since its last call).
fn sync_file_range(j: Opts, cx: &mut Conversion, v: &str) -> Result<(), WorkloadError> {
    let (flags, n) = v.rsplit_once(':').unwrap_or((v, "1"));
    let flags = storlab_model::settings::read_range_flags(flags).map_err(|e| j.refuse("sync_file_range", e))?;
    let n: u32 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
        j.refuse(
            "sync_file_range",
            format!("'{n}' is not a number of writes: fio's form is FLAGS:N (write,wait_after:8)"),
        )
    })?;
    cx.note("sync_file_range: storlab's call covers the whole file (fio's, the range written since its last call): the pages it writes are the same, this job's");
    set!(
        cx,
        "sync_file_range",
        fsync = FsyncPolicy::Every(n),
        sync_call = SyncCall::SyncFileRange(flags)
    )
}

/// The data written: zeros, or partly compressible. With verify_pattern (the row before) the
/// pattern fills the buffers, as in fio.
pub(crate) fn buffers(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    if cx.settings().pattern.is_some() {
        for k in ["zero_buffers", "buffer_compress_percentage"] {
            if j.given(k) {
                cx.note(format!("{k}: verify_pattern fills the buffers instead, as in fio"));
            }
        }
        return Ok(());
    }
    if j.on("zero_buffers")? {
        return set!(cx, "zero_buffers", pattern = DataPattern::Zeros);
    }
    let Some(p) = j.int("buffer_compress_percentage")?.filter(|p| *p > 0) else {
        if j.given("buffer_compress_chunk") {
            cx.note("buffer_compress_chunk: without buffer_compress_percentage, fio ignores it too");
        }
        return Ok(());
    };
    set!(
        cx,
        "buffer_compress_percentage",
        pattern = DataPattern::Compressible(p.min(100) as u8)
    )?;
    // fio lays each chunk's random bytes, then its zeros, in chunks of 512 bytes unless told.
    let chunk = j.int("buffer_compress_chunk")?.filter(|c| *c > 0).unwrap_or(512);
    set!(cx, "buffer_compress_chunk", compress_chunk = chunk)
}

/// Deduplicable data: a share of the blocks repeat the last unique one, or one of a working
/// set.
pub(crate) fn dedupe(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some(p) = j.int("dedupe_percentage")?.filter(|p| *p > 0) else {
        return Ok(());
    };
    if p > 100 {
        return Err(j.refuse("dedupe_percentage", "a percentage above 100"));
    }
    set!(cx, "dedupe_percentage", dedupe = p as u8)?;
    match j.val("dedupe_mode").unwrap_or("repeat") {
        "repeat" => Ok(()),
        "working_set" => {
            let w = j.int("dedupe_working_set_percentage")?.unwrap_or(5);
            if w == 0 || w > 100 {
                return Err(j.refuse("dedupe_working_set_percentage", "expected 1 to 100"));
            }
            set!(cx, "dedupe_working_set_percentage", dedupe_set = w as u8)?;
            if j.on("dedupe_global")? {
                set!(cx, "dedupe_global", dedupe_global = true)?;
            }
            Ok(())
        }
        m => Err(j.refuse(
            "dedupe_mode",
            format!("'{m}': fio's dedupe_mode is repeat or working_set"),
        )),
    }
}

/// Verification: storlab's own stamp and check whatever fio's method, a given pattern, and
/// read-backs of every N blocks written.
pub(crate) fn verify(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    cx.verify = match j.val("verify") {
        None | Some("0") | Some("none") | Some("null") => false,
        Some(m) => {
            cx.note(format!(
                "verify={m}: storlab stamps and checks its own header and CRC-32C in every 4 KiB"
            ));
            true
        }
    };
    if let Some(p) = j.val("verify_pattern") {
        let bytes = value::pattern(p).map_err(|e| j.refuse("verify_pattern", e))?;
        if cx.verify {
            set!(cx, "verify_pattern", pattern = DataPattern::Bytes(bytes))?;
            cx.note(format!(
                "verify_pattern={p}: written over and over in every 4 KiB after storlab's 32-byte header, and checked on reading"
            ));
        } else {
            cx.note(format!(
                "verify_pattern={p}: without verify fio writes its usual data, and so does storlab"
            ));
        }
    }
    let backlog = j
        .int("verify_backlog")?
        .filter(|n| *n > 0 && cx.verify && cx.kind.writes());
    if let Some(n) = backlog {
        cx.note(format!("verify_backlog={n}: every {n} blocks written are read back and checked before the job writes on (storlab's verify_backlog), as in fio; the reads are the job's reads"));
        set!(cx, "verify_backlog", verify_backlog = n)?;
        cx.backlog = true;
    }
    if cx.verify {
        set!(cx, "verify", verify = true)?;
    }
    cx.verify_after_write = j.on_or("do_verify", true)?;
    Ok(())
}

/// fio's group_reporting: without it fio reports each clone of a job on its own (its JSON
/// entry, its block of text, its terse line), from figures each worker keeps of its own; with
/// it, the group's bandwidth and IOPS samples are each clone's summed, so each worker keeps its
/// own samples either way.
pub(crate) fn reporting(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    // A job of one worker keeps its own too: group_reporting across jobs sums each job's.
    if j.on_or("group_reporting", false)? {
        set!(cx, "group_reporting", worker_samples = true)?;
    } else if cx.threads > 1 {
        set!(cx, "numjobs", group_reporting = false, worker_samples = true)?;
    }
    Ok(())
}

/// fio's logs and samples: their interval (log_avg_msec for the logs; bwavgtime and
/// iopsavgtime for the bw and iops figures, 500 ms unless set — storlab has one sample
/// interval for all), and the files `storlab fio` writes.
pub(crate) fn logs(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let logs = ["write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log"];
    let any = logs.iter().any(|k| j.given(k));
    let avg = j.int("log_avg_msec")?.unwrap_or(0);
    // Without log_avg_msec fio logs every I/O (its bw, iops and latency logs; the histogram
    // log has its own interval): each worker keeps them.
    let per_io_by = logs[..3].iter().copied().find(|k| avg == 0 && j.given(k));
    let per_io = per_io_by.is_some();
    if let Some(by) = per_io_by {
        set!(cx, by, io_log = true)?;
    }
    for k in ["bwavgtime", "iopsavgtime"] {
        if let Some(ms) = j.int(k)? {
            if ms < 10 {
                return Err(j.refuse(k, "samples shorter than 10 ms: storlab's interval is 10 ms or more"));
            }
            set!(cx, k, interval = Duration(ms * 1_000_000))?;
        }
    }
    if any && avg > 0 {
        if avg < 10 {
            return Err(j.refuse(
                "log_avg_msec",
                "samples shorter than 10 ms: storlab's interval is 10 ms or more",
            ));
        }
        set!(cx, "log_avg_msec", interval = Duration(avg * 1_000_000))?;
    }
    let hist_msec = if j.given("write_hist_log") {
        hist_interval(j, cx)?
    } else {
        None
    };
    let per_job = j.on_or("per_job_logs", true)?;
    if any && per_job {
        // A log per clone, as fio writes: each worker's samples are kept beside the phase's.
        set!(cx, "per_job_logs", worker_samples = true)?;
    }
    let (offset, hist_coarseness) = (j.on("log_offset")?, hist_coarseness(j)?);
    let mut add = |what: &str, prefix: &str| {
        cx.logs.push(FioLog {
            what: what.to_string(),
            prefix: prefix.to_string(),
            per_job,
            thread: 0,
            offset,
            hist_coarseness,
            per_io: per_io && what != "clat_hist",
        })
    };
    let mut said = Vec::new();
    for k in logs {
        if !j.given(k) {
            continue;
        }
        let prefix = j
            .val(k)
            .filter(|v| !v.is_empty() && *v != "1")
            .unwrap_or(j.name())
            .to_string();
        let each = if per_io {
            "a line per I/O, as fio logs without log_avg_msec (each worker keeps every I/O: the setting io_log)"
        } else {
            "a line per interval and direction"
        };
        match k {
            "write_bw_log" | "write_iops_log" => {
                let what = if k == "write_bw_log" { "bw" } else { "iops" };
                said.push(format!("{k}: storlab fio writes {prefix}_{what}.N.log (N each clone's thread number, from its own samples; {prefix}_{what}.log with every clone's together with per_job_logs=0) in fio's log format, {each}; storlab run --fio keeps the samples only"));
                add(what, &prefix);
            }
            "write_lat_log" => {
                // Each worker's intervals keep their mean latency, and an asynchronous
                // engine's its mean slat and clat too: fio's three logs; every I/O kept has
                // all three. The phase's own samples (per_job_logs=0) keep the whole latency
                // only.
                let sync = !cx.engine.is_async();
                if sync || per_job || per_io {
                    let how = if sync {
                        "a synchronous engine's completion latency is the whole, and its slat log is empty, as fio's"
                    } else {
                        "from each clone's own I/Os: their submission and completion latency"
                    };
                    said.push(format!("{k}: storlab fio writes {prefix}_lat.N.log, {prefix}_slat.N.log and {prefix}_clat.N.log in fio's log format, {each}, the latency in ns ({how})"));
                    add("lat", &prefix);
                    add("slat", &prefix);
                    add("clat", &prefix);
                } else {
                    said.push(format!("{k}: storlab fio writes {prefix}_lat.log, each line an interval's mean latency in ns; with per_job_logs=0 an asynchronous engine's slat and clat logs are not written (the job's samples together keep the whole latency only)"));
                    add("lat", &prefix);
                }
            }
            _ => {
                let when = match hist_msec {
                    Some(ms) => format!("a line per {ms} ms (log_hist_msec) and direction"),
                    None => "empty without log_hist_msec, as fio's".to_string(),
                };
                let file = if per_job {
                    format!("{prefix}_clat_hist.N.log")
                } else {
                    format!("{prefix}_clat_hist.log")
                };
                said.push(format!("{k}: storlab fio writes {file} in fio's histogram log format ({when}: each whole interval's completion latencies in fio's {FIO_PLAT_BINS} bins), from each worker's own histogram of the interval"));
                add("clat_hist", &prefix);
            }
        }
    }
    for n in said {
        cx.note(n);
    }
    Ok(())
}

/// fio's histogram bins (FIO_IO_U_PLAT_NR in fio's stat.h: 29 groups of 64).
const FIO_PLAT_BINS: u32 = 29 * 64;

/// write_hist_log's interval, log_hist_msec: the interval histograms' own (`histogram_interval`,
/// beside the samples' log_avg_msec, as fio keeps the two apart). Without it fio writes an empty
/// histogram log, and so does storlab fio.
fn hist_interval(j: Opts, cx: &mut Conversion) -> Result<Option<u64>, WorkloadError> {
    let Some(ms) = j.int("log_hist_msec")?.filter(|&ms| ms > 0) else {
        return Ok(None);
    };
    if ms < 10 {
        return Err(j.refuse(
            "log_hist_msec",
            "histograms over less than 10 ms: storlab's interval is 10 ms or more",
        ));
    }
    let every = Duration(ms * 1_000_000);
    match cx.settings().interval {
        // The samples' interval where nothing else set it, or where it is the same.
        None => set!(cx, "log_hist_msec", interval = every, interval_histograms = true)?,
        Some(samples) if samples == every => set!(cx, "log_hist_msec", interval_histograms = true)?,
        // Beside another log_avg_msec: an interval of their own.
        Some(_) => set!(
            cx,
            "log_hist_msec",
            histogram_interval = every,
            interval_histograms = true
        )?,
    }
    Ok(Some(ms))
}

/// log_hist_coarseness: 0 (every bin) to 6 (64 bins summed into one), as fio takes it.
fn hist_coarseness(j: Opts) -> Result<u32, WorkloadError> {
    match j.int("log_hist_coarseness")?.unwrap_or(0) {
        c @ 0..=6 => Ok(c as u32),
        _ => Err(j.refuse("log_hist_coarseness", "fio sums 2^N bins into one, N from 0 to 6")),
    }
}

/// The files' life: created on open, left for the next job or removed at the end (fio's
/// unlink), a write of a laid-out file.
pub(crate) fn lifecycle(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    if j.on("create_on_open")? {
        cx.note("create_on_open=1: storlab creates and opens each file before the phase starts (not timed)");
    }
    cx.unlink = j.on("unlink")?;
    cx.allow_mounted_write = j.on("allow_mounted_write")?;
    if j.on("unlink_each_loop")? {
        cx.unlink = true;
        cx.note("unlink_each_loop=1: storlab removes the files it made when the run ends, not after each loop");
    }
    if j.on("overwrite")? && cx.kind == PhaseKind::Write {
        cx.note("overwrite=1: the file is laid out first and then overwritten (storlab's rewrite)");
        cx.overwrite = true;
    }
    Ok(())
}

/// fio's ignore_error (READS,WRITES,VERIFY lists of errors to go on past; a list given replaces
/// fio's default, EIO and EILSEQ, for its direction) and continue_on_error.
pub(crate) fn errors(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    // A block that fails its check is an EILSEQ on the read in fio: the job ends there (error
    // 84) unless continue_on_error goes on past verify errors.
    if cx.verify && !matches!(j.val("continue_on_error"), Some("verify" | "all" | "1")) {
        set!(cx, "verify", stop_at_bad_block = true)?;
    }
    let lists: Vec<&str> = j
        .val("ignore_error")
        .map(|v| v.split(',').collect())
        .unwrap_or_default();
    let list_for = |i: usize| -> Result<ErrnoList, WorkloadError> {
        let text = lists
            .get(i)
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .unwrap_or("EIO:EILSEQ");
        ErrnoList::parse(text).map_err(|e| j.refuse("ignore_error", e))
    };
    let (reads, writes) = (list_for(0)?, list_for(1)?);
    let errnos = match j.val("continue_on_error") {
        Some("read") => reads.clone(),
        Some("write") => writes.clone(),
        _ => {
            let mut both = reads.clone();
            both.0.extend(writes.0.iter().filter(|n| !reads.contains(**n)));
            if reads != writes && j.given("ignore_error") {
                cx.note("ignore_error: storlab goes on past the reads' and the writes' errors alike (their union)");
            }
            both
        }
    };
    if j.given("ignore_error") || j.given("continue_on_error") {
        let by = if j.given("ignore_error") {
            "ignore_error"
        } else {
            "continue_on_error"
        };
        set!(cx, by, continue_errnos = errnos)?;
    }
    let gone_on = match j.val("continue_on_error") {
        None | Some("none") | Some("0") => return Ok(()),
        Some("read") => ErrorsGoneOn::Read,
        Some("write") => ErrorsGoneOn::Write,
        Some("io") => ErrorsGoneOn::Io,
        Some(v @ ("1" | "all")) => {
            cx.note(format!("continue_on_error={v}: storlab goes on past failed reads and writes (io); a block that fails its check is counted as bad and the phase goes on, as with any verify"));
            ErrorsGoneOn::Io
        }
        Some("verify") => {
            cx.note("continue_on_error=verify: storlab counts every block that fails its check and goes on, as it always does");
            return Ok(());
        }
        Some(v) => {
            return Err(j.refuse(
                "continue_on_error",
                format!("'{v}': fio's continue_on_error is none, read, write, io, verify or all"),
            ))
        }
    };
    set!(cx, "continue_on_error", continue_on_error = gone_on)
}
