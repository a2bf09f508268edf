//! How a job does its I/O: the engine and its depth, O_DIRECT and O_SYNC, the page cache
//! before the job, how new files are allocated, and fill_device.

use storlab_model::plan::PhaseKind;
use storlab_model::settings::{Fadvise, Fallocate};
use storlab_model::values::BackendKind;

use super::{set, Conversion, Opts};
use crate::WorkloadError;

/// fio's engines storlab runs: fio's name, storlab's back-end buffered and with O_DIRECT, and
/// what to say when it differs.
const ENGINES: &[(&str, BackendKind, BackendKind, Option<&str>)] = &[
    ("psync", BackendKind::Psync, BackendKind::Psync, None),
    (
        "sync",
        BackendKind::Psync,
        BackendKind::Psync,
        Some("ioengine=sync (read/write after lseek) runs as psync (pread/pwrite)"),
    ),
    ("pvsync", BackendKind::Pvsync, BackendKind::Pvsync, None),
    (
        "vsync",
        BackendKind::Pvsync,
        BackendKind::Pvsync,
        Some("ioengine=vsync (readv/writev after lseek) runs as pvsync (preadv/pwritev)"),
    ),
    (
        "pvsync2",
        BackendKind::Pvsync,
        BackendKind::Pvsync,
        Some("ioengine=pvsync2 (preadv2/pwritev2, no flags given) runs as pvsync (preadv/pwritev)"),
    ),
    ("io_uring", BackendKind::IoUring, BackendKind::IoUring, None),
    ("libaio", BackendKind::Libaio, BackendKind::Libaio, None),
    ("mmap", BackendKind::Mmap, BackendKind::Mmap, None),
    ("null", BackendKind::Null, BackendKind::Null, None),
];

/// The engines storlab runs, by fio's names.
pub(crate) fn engine_names() -> Vec<&'static str> {
    ENGINES.iter().map(|e| e.0).collect()
}

/// The engine of `ioengine`, noting where storlab's differs.
fn backend(j: Opts, cx: &mut Conversion) -> Result<BackendKind, WorkloadError> {
    let e = j.val("ioengine").unwrap_or("psync");
    if let Some((_, buffered, direct, note)) = ENGINES.iter().find(|row| row.0 == e) {
        if let Some(n) = note {
            cx.note(*n);
        }
        return Ok(if cx.direct { *direct } else { *buffered });
    }
    // glibc's POSIX aio does each I/O with a synchronous call in a thread of its own: buffered,
    // that is psync's call (in another thread); with O_DIRECT, asynchronous I/O to the device.
    let (kind, note) = match (e, cx.direct) {
        ("posixaio", false) => (BackendKind::Psync, "ioengine=posixaio without direct=1 runs as psync (glibc's aio does each I/O with a synchronous call in a thread of its own)"),
        ("posixaio", true) => (BackendKind::IoUring, "ioengine=posixaio (glibc's aio, threads behind the scenes) runs as io_uring"),
        (other, _) => {
            return Err(j.refuse(
                "ioengine",
                format!("'{other}' is not a local engine storlab has: it runs psync, sync, vsync, pvsync, pvsync2, io_uring, libaio, posixaio (as psync or io_uring), mmap and null"),
            ))
        }
    };
    cx.note(note);
    Ok(kind)
}

/// O_DIRECT, the engine and its depth; fio caps a synchronous engine's depth at 1 and says so.
pub(crate) fn engine(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    cx.direct = match (j.given("direct"), j.given("buffered")) {
        (true, _) => j.on("direct")?,
        (false, true) => !j.on("buffered")?,
        (false, false) => false,
    };
    cx.engine = backend(j, cx)?;
    set!(cx, "ioengine", engine = cx.engine)?;
    let depth = j.int("iodepth")?.unwrap_or(1);
    if cx.engine.is_async() {
        let as_u32 = |k: &str, v: u64| u32::try_from(v).map_err(|_| j.refuse(k, "expected at most 4096"));
        set!(cx, "iodepth", iodepth = as_u32("iodepth", depth)?)?;
        // fio submits each I/O as it is queued unless iodepth_batch says otherwise (its
        // default is 1, whatever the buffering): buffered libaio then times each read inside
        // its own io_submit, as fio does.
        let b = j.int("iodepth_batch")?.filter(|b| *b > 0).unwrap_or(1);
        set!(
            cx,
            "iodepth_batch",
            iodepth_batch = as_u32("iodepth_batch", b.min(depth.max(1)))?
        )?;
        // fio takes at most iodepth_batch_complete_max completions at once (by default
        // iodepth_batch_complete_min's, 1) and refills the queue after each take: its queue
        // stays at its depth, and its IO depths say so.
        let min = j.int("iodepth_batch_complete_min")?.filter(|m| *m > 0).unwrap_or(1);
        if min > 1 {
            cx.note(format!("iodepth_batch_complete_min={min}: storlab waits for one completion when it must, and takes every one ready up to iodepth_batch_complete_max"));
        }
        let max = j.int("iodepth_batch_complete_max")?.filter(|m| *m > 0).unwrap_or(min);
        set!(
            cx,
            "iodepth_batch_complete_max",
            iodepth_batch_complete = as_u32("iodepth_batch_complete_max", max.clamp(1, depth.max(1)))?
        )?;
    } else if depth > 1 {
        cx.note(format!(
            "iodepth={depth} with a synchronous engine ({}): capped at 1, as fio does",
            cx.engine.name()
        ));
    }
    // fio's libaio option: the completion ring read in user space when nothing is waited for.
    if j.given("userspace_reap") && j.on("userspace_reap")? {
        set!(cx, "userspace_reap", userspace_reap = true)?;
    }
    match j.val("io_submit_mode") {
        None | Some("inline") => {}
        Some("offload") => cx.note("io_submit_mode=offload: storlab's worker submits each I/O at its scheduled time whatever has completed (as fio's offload threads do), from its own thread"),
        Some(m) => return Err(j.refuse("io_submit_mode", format!("'{m}': fio's io_submit_mode is inline or offload"))),
    }
    if cx.direct {
        set!(cx, "direct", direct = true)?;
    }
    Ok(())
}

/// fio's sync: O_SYNC (sync=1) or nothing.
pub(crate) fn sync(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    match j.val("sync") {
        None | Some("0") | Some("none") => Ok(()),
        Some("1") | Some("sync") => set!(cx, "sync", sync = true),
        Some(v) => Err(j.refuse(
            "sync",
            format!("'{v}' (O_DSYNC): storlab opens with O_SYNC (sync=1) or neither"),
        )),
    }
}

/// fio drops the files' cached pages before a job (invalidate=1, its default); a given access
/// hint is refused.
pub(crate) fn cache(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    if !cx.direct && j.on_or("invalidate", true)? {
        set!(cx, "invalidate", fadvise = Fadvise::Dontneed)?;
    }
    if let Some(h) = j.val("fadvise_hint") {
        if !matches!(h, "0" | "1") {
            return Err(j.refuse(
                "fadvise_hint",
                "a given access hint: storlab gives the kernel none besides dropping cached pages (invalidate)",
            ));
        }
    }
    Ok(())
}

/// How new files are allocated (fio's default is native, fallocate(2)), and fill_device.
pub(crate) fn allocation(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let falloc = match j.val("fallocate").unwrap_or("native") {
        "none" | "0" => Fallocate::None,
        "native" | "posix" | "1" => Fallocate::Posix,
        "keep" => Fallocate::Keep,
        "truncate" => Fallocate::Truncate,
        v => {
            return Err(j.refuse(
                "fallocate",
                format!("'{v}': fio's fallocate is none, native, posix, keep or truncate"),
            ))
        }
    };
    let fill = j.on("fill_device")?;
    if fill {
        if cx.kind != PhaseKind::Write {
            let rw = cx.rw.clone();
            let then = if cx.kind.writes() { "written" } else { "read" };
            cx.note(format!(
                "fill_device with rw={rw}: the file is laid out until the filesystem is full, then {then} as far as it goes"
            ));
        }
        if cx.size_given {
            cx.note("fill_device with a size: fio and storlab stop at the size or when the filesystem is full, whichever comes first");
        }
        set!(cx, "fill_device", fill = true)?;
    }
    if cx.kind == PhaseKind::Write {
        // fill_device: fio allocates nothing ahead of writing until the space runs out.
        let by = if fill { "fill_device" } else { "fallocate" };
        set!(cx, by, fallocate = if fill { Fallocate::None } else { falloc })?;
    }
    Ok(())
}
