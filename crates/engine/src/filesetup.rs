//! File setup (fio's filesetup.c): the files a phase reads laid out before it starts, a
//! worker's files opened (O_DIRECT, O_SYNC), allocated and advised, its buffers and back-end
//! made, and the access pattern over each of its files.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use storlab_model::settings::{Distribution, Fadvise, Fallocate};

use crate::access::{Access, FileSet};
use crate::backend::{self, Backend};
use crate::data::{self, BufferPool};
use crate::placement::place_thread;
use crate::plan::{BackendKind, DataPattern, PhaseKind, PhasePlan, WorkerFile};
use crate::EngineError;

/// A worker's open files (none for the null back-end), buffers and back-end.
pub(crate) type PreparedWorker = (Vec<File>, BufferPool, Box<dyn Backend>);

/// Opens a worker's files, buffer pool and back-end.
pub(crate) fn prepare_worker(plan: &PhasePlan, index: usize, wf: &WorkerFile) -> Result<PreparedWorker, EngineError> {
    // Placement first, so that the buffers below are allocated under the memory policy.
    place_thread(plan, index).map_err(|e| EngineError::Backend {
        backend: "placement",
        path: wf.path.display().to_string(),
        source: e,
    })?;
    let mut files = Vec::new();
    if plan.settings.engine != BackendKind::Null {
        for r in wf.regions() {
            let f = open_worker_file(plan, r.path, r.owned, r.offset + r.len)?;
            advise(&f, (r.offset, r.len), plan.settings.fadvise);
            files.push(f);
        }
    }
    let mut pool = BufferPool::new(plan.settings.iodepth as usize, plan.settings.bs.max() as usize);
    if plan.kind.writes() {
        pool.fill(
            &plan.settings.pattern,
            plan.settings.compress_chunk,
            plan.seed ^ (index as u64) << 32,
        );
    }
    let regions: Vec<(&File, (u64, u64))> = files
        .iter()
        .zip(wf.regions())
        .map(|(f, r)| (f, (r.offset, r.len)))
        .collect();
    let be = backend::open(&plan.settings, &regions, plan.kind.writes(), &pool).map_err(|e| EngineError::Backend {
        backend: plan.settings.engine.name(),
        path: wf.path.display().to_string(),
        source: e,
    })?;
    drop(regions);
    Ok((files, pool, be))
}

/// Opens one of a worker's files as the phase needs it: for writing when it writes, created
/// and allocated when a write phase owns it, sized first for a mapping.
fn open_worker_file(plan: &PhasePlan, path: &Path, owned: bool, needed: u64) -> Result<File, EngineError> {
    let mut o = OpenOptions::new();
    o.read(true);
    if plan.kind.writes() {
        o.write(true);
    }
    if plan.kind == PhaseKind::Write && owned {
        o.create(true).truncate(true);
    }
    let mut flags = 0;
    if plan.settings.direct {
        flags |= libc::O_DIRECT;
    }
    if plan.settings.sync {
        flags |= libc::O_SYNC;
    }
    o.custom_flags(flags);
    let f = o.open(path).map_err(|e| EngineError::Open {
        path: path.display().to_string(),
        direct: plan.settings.direct,
        source: e,
    })?;
    if plan.kind == PhaseKind::Write && owned {
        allocate(&f, plan.settings.fallocate, needed).map_err(|e| EngineError::Open {
            path: path.display().to_string(),
            direct: plan.settings.direct,
            source: e,
        })?;
    }
    // A mapping cannot grow a file: size it first.
    if plan.settings.engine == BackendKind::Mmap
        && plan.kind.writes()
        && owned
        && f.metadata().map(|m| m.len() < needed).unwrap_or(false)
    {
        f.set_len(needed).map_err(|e| EngineError::Open {
            path: path.display().to_string(),
            direct: plan.settings.direct,
            source: e,
        })?;
    }
    Ok(f)
}

/// Allocates a new file before a write phase writes it, as fio's `fallocate` does: the whole
/// length (`needed`, the end of this worker's region; workers sharing a file each allocate
/// their part and the file's end), reserved keeping the size, or only its length set.
fn allocate(f: &File, how: Fallocate, needed: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mode = match how {
        Fallocate::None => return Ok(()),
        Fallocate::Truncate => return f.set_len(needed),
        Fallocate::Posix => 0,
        Fallocate::Keep => libc::FALLOC_FL_KEEP_SIZE,
    };
    // SAFETY: fallocate(2) on a descriptor we own, over [0, needed); no memory is passed.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), mode, 0, needed as libc::off_t) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Lays out the files phase `plan` reads or overwrites (written whole, synced, dropped from the
/// page cache), unless they are there already: what [`crate::run_phase`] does first, outside the
/// phase's timing. Ranks of an MPI run call it before their barrier, so that the phase starts
/// together on all of them. Returns the seconds spent (0 when nothing was laid out).
pub fn lay_out_phase(plan: &PhasePlan, stop: &AtomicBool) -> Result<f64, EngineError> {
    if plan.settings.engine != BackendKind::Null && plan.kind != PhaseKind::Write {
        lay_out(plan, stop)
    } else {
        Ok(0.0)
    }
}

/// Writes each file the phase reads that is missing or short (for a file it does not own,
/// nothing), flushes it and drops it from the page cache.
fn lay_out(plan: &PhasePlan, stop: &AtomicBool) -> Result<f64, EngineError> {
    let t = std::time::Instant::now();
    let mut need: BTreeMap<&Path, (u64, bool)> = BTreeMap::new();
    for w in &plan.workers {
        for r in w.regions() {
            let e = need.entry(r.path).or_insert((0, r.owned));
            e.0 = e.0.max(r.offset + r.len);
        }
    }
    let chunk = 1 << 20;
    let mut pool = BufferPool::new(1, chunk);
    pool.fill(
        if plan.settings.pattern == DataPattern::Zeros && !plan.write_headers {
            &DataPattern::Zeros
        } else {
            &plan.settings.pattern
        },
        plan.settings.compress_chunk,
        plan.seed,
    );
    let mut laid = false;
    for (path, (needed, owned)) in need {
        let have = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        // fill: a file that is there is read as far as it goes (a write filled the space).
        if have >= needed || !owned || (plan.settings.fill && have > 0) {
            continue;
        }
        laid = true;
        let io_err = |e: std::io::Error| EngineError::Layout {
            path: path.display().to_string(),
            source: e,
        };
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(io_err)?;
        let mut off = 0;
        while off < needed && !stop.load(Ordering::Relaxed) {
            let len = (needed - off).min(chunk as u64) as usize;
            // SAFETY: no I/O is in flight on the pool's only buffer.
            let buf = unsafe { pool.slice_mut(0, len) };
            if plan.write_headers {
                data::stamp(buf, off, plan.seed, plan.generation);
            } else if plan.settings.pattern.unique_per_block() {
                data::scramble(buf, off, plan.seed);
            }
            match std::os::unix::fs::FileExt::write_all_at(&f, buf, off) {
                // fill: the space is full; what was written is read.
                Err(e) if plan.settings.fill && matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)) => {
                    break
                }
                r => r.map_err(io_err)?,
            }
            off += len as u64;
        }
        f.sync_data().map_err(io_err)?;
        drop_cache(&f);
    }
    Ok(if laid { t.elapsed().as_secs_f64() } else { 0.0 })
}

/// Gives the kernel the job's hint about a worker's region before the phase starts (a refusal
/// only means the kernel keeps its own policy).
fn advise(f: &File, (offset, len): (u64, u64), hint: Fadvise) {
    use rustix::fs::Advice;
    let advice = match hint {
        Fadvise::None => return,
        Fadvise::Sequential => Advice::Sequential,
        Fadvise::Random => Advice::Random,
        Fadvise::Noreuse => Advice::NoReuse,
        Fadvise::Dontneed => Advice::DontNeed,
    };
    let _ = rustix::fs::fadvise(f, offset, std::num::NonZeroU64::new(len), advice);
}

/// Asks the kernel to drop a file's clean pages from the page cache.
fn drop_cache(f: &File) {
    // A refusal only means the cache stays warm.
    let _ = rustix::fs::fadvise(f, 0, None, rustix::fs::Advice::DontNeed);
}

/// A worker's access to its files: one access pattern per file over its region, served as
/// `file_service` says. A pass is each file's own, or, with a byte count per pass (io_size, or
/// a `size` smaller than the files of a `filesize`), that count across them all, the files
/// going round as often as needed.
pub(crate) fn file_set(plan: &PhasePlan, wf: &WorkerFile, worker_seed: u64) -> FileSet {
    let st = &plan.settings;
    let several = !wf.more.is_empty();
    let budget = match (st.io_size, st.filesize, st.size) {
        (Some(b), _, _) => Some(b),
        (None, Some(_), Some(s)) if s < wf.total_len() => Some(s),
        _ => None,
    };
    let time_based = st.runtime.is_some();
    let accesses = wf
        .regions()
        .enumerate()
        .map(|(f, r)| {
            Access::new(plan.kind, r.offset, r.len, &st.bs, time_based, st.rwmix, st.stride)
                // A byte count across the files: the set counts the passes.
                .with_loops(if several && budget.is_some() { 1 } else { st.loops })
                .with_hole(st.hole)
                .with_strided(st.strided)
                .with_pass_bytes(if several { None } else { budget })
                .with_align(st.align)
                .with_zones(match &st.distribution {
                    Distribution::Zoned(z) => z,
                    _ => &[],
                })
                .with_absolute_zones(match &st.distribution {
                    Distribution::ZonedAbs(z) => z,
                    _ => &[],
                })
                .with_skew(&st.distribution, worker_seed ^ 0x05CE_3D00 ^ (f as u64) << 40)
                .with_random_map_if(st.random_map, worker_seed ^ 0x0005_EED0_F4A9 ^ (f as u64) << 40)
        })
        .collect();
    FileSet::new(
        accesses,
        st.file_service,
        budget.filter(|_| several).map(|b| (b, st.loops)),
        time_based,
    )
}
