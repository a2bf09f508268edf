//! One metadata phase: every worker does the operation on each of its items, behind a start
//! barrier, timing each item into its own HDR histogram and checking each result.
//!
//! An item's time runs from the end of the worker's previous item to the end of its own system
//! calls: one clock read per item, not two. Between two items lie only storlab's few tens of
//! nanoseconds of bookkeeping (the name, the histogram, the counts), which this time includes,
//! so that a worker's samples add up to its time in the phase; a second read per item cost 21 ns
//! on this project's machines (a virtualised RDTSC), 2.5 % of a stat of 0.85 µs (issue 43). The
//! engine times a synchronous I/O the same way (storlab_engine's worker: an I/O's start is the
//! last one's end).
//! Workers publish their counts after every operation (a relaxed store to their own cache
//! line), so that the phase's "first done" figure (mdtest's stonewall) counts every worker's
//! work up to the moment the first finished.

use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use storlab_engine::clock::now_ns;
use storlab_engine::{encode_histogram, latency_of, new_histogram, thread_usage, Histogram, Usage};
use storlab_model::meta::{MetaOp, MetaParams, NAMED_ERRORS};
use storlab_model::result::{worker_spread, PhaseResult, Throughput, WorkerResult};

use crate::layout::{Layout, Names};

/// What a phase did: the engine's result and the meta parameters with its entries and errors.
#[derive(Debug)]
pub struct Outcome {
    /// Counts, rates, latency, per worker.
    pub result: PhaseResult,
    /// The request and what the phase did beyond its counts.
    pub params: MetaParams,
}

/// A worker's counts as it goes, alone on its pair of cache lines: x86's spatial prefetcher
/// fetches lines in 128-byte pairs, so a neighbour 64 bytes away would still share traffic
/// (crossbeam's `CachePadded` pads to 128 bytes on x86-64 for the same reason).
#[repr(align(128))]
#[derive(Default)]
struct Progress {
    ops: AtomicU64,
    bytes: AtomicU64,
}

struct Shared {
    start: Barrier,
    first_done: AtomicBool,
    progress: Vec<Progress>,
    /// The counts of every worker when the first finished, and when that was.
    first: std::sync::Mutex<Option<(u64, u64, u64)>>,
}

impl Shared {
    /// The first worker to finish records every worker's counts at `end_ns` (IOzone's "first
    /// done" figure); later ones find it taken.
    fn note_first_done(&self, end_ns: u64) {
        if !self.first_done.swap(true, Ordering::AcqRel) {
            let ops = self.progress.iter().map(|p| p.ops.load(Ordering::Relaxed)).sum();
            let bytes = self.progress.iter().map(|p| p.bytes.load(Ordering::Relaxed)).sum();
            *self.first.lock().unwrap_or_else(|e| e.into_inner()) = Some((ops, bytes, end_ns));
        }
    }
}

/// What one worker (or one copy of an untar) did.
pub(crate) struct WorkerOut {
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
    pub(crate) ops: u64,
    pub(crate) bytes: u64,
    pub(crate) entries: u64,
    pub(crate) made: u64,
    pub(crate) errors: u64,
    pub(crate) first_errors: Vec<String>,
    pub(crate) hist: Histogram<u64>,
    pub(crate) cpu: Usage,
    pub(crate) interrupted: bool,
}

impl WorkerOut {
    pub(crate) fn new(made: u64) -> WorkerOut {
        WorkerOut {
            start_ns: 0,
            end_ns: 0,
            ops: 0,
            bytes: 0,
            entries: 0,
            made,
            errors: 0,
            first_errors: Vec::new(),
            hist: new_histogram(),
            cpu: Usage::default(),
            interrupted: false,
        }
    }

    /// Counts an error, and names it while fewer than [`NAMED_ERRORS`] are.
    pub(crate) fn fail(&mut self, what: String) {
        self.errors += 1;
        if self.first_errors.len() < NAMED_ERRORS {
            self.first_errors.push(what);
        }
    }
}

/// The workers' outcomes as one phase's result (its operations counted as reads when `reads`),
/// with the entries, errors and the first errors named. `first` is every worker's (ops, bytes)
/// when the first finished, and when; `name` names worker `w` in the result.
pub(crate) fn combine(
    outs: Vec<WorkerOut>,
    reads: bool,
    first: (u64, u64, u64),
    name: impl Fn(usize) -> String,
) -> (PhaseResult, u64, u64, Vec<String>) {
    let start = outs.iter().map(|o| o.start_ns).min().unwrap_or(0);
    let end = outs.iter().map(|o| o.end_ns).max().unwrap_or(start);
    let mut all = new_histogram();
    let (mut ops, mut bytes, mut entries, mut errors) = (0, 0, 0, 0);
    let mut first_errors = Vec::new();
    let mut workers = Vec::new();
    let (mut cpu_user, mut cpu_sys) = (0.0, 0.0);
    let mut interrupted = false;
    for (w, o) in outs.into_iter().enumerate() {
        let _ = all.add(&o.hist);
        ops += o.ops;
        bytes += o.bytes;
        entries += o.entries;
        errors += o.errors;
        first_errors.extend(o.first_errors);
        cpu_user += o.cpu.user;
        cpu_sys += o.cpu.sys;
        interrupted |= o.interrupted;
        let seconds = o.end_ns.saturating_sub(start) as f64 / 1e9;
        workers.push(WorkerResult {
            file: name(w),
            bytes: o.bytes,
            ops: o.ops,
            seconds,
            bytes_per_sec: o.bytes as f64 / seconds.max(1e-9),
            cpu_user: o.cpu.user,
            cpu_sys: o.cpu.sys,
            flush_seconds: 0.0,
            ctx: o.cpu.ctx,
            majf: o.cpu.majf,
            minf: o.cpu.minf,
            ..Default::default()
        });
    }
    first_errors.truncate(NAMED_ERRORS);
    let all_secs = end.saturating_sub(start) as f64 / 1e9;
    let (first_ops, first_bytes, first_end) = first;
    let first_secs = first_end.saturating_sub(start) as f64 / 1e9;
    let none = latency_of(&new_histogram());
    let (latency_read, latency_write) = if reads {
        (latency_of(&all), none)
    } else {
        (none.clone(), latency_of(&all))
    };
    let spread = worker_spread(&workers);
    let result = PhaseResult {
        all_done: Throughput::new(all_secs, bytes, ops),
        first_done: Throughput::new(first_secs, first_bytes, first_ops),
        worker_min_bytes_per_sec: spread.0,
        worker_max_bytes_per_sec: spread.1,
        workers,
        cpu_user,
        cpu_sys,
        latency: latency_of(&all),
        latency_read,
        latency_write,
        histogram: encode_histogram(&all),
        histograms_rw: if reads {
            [encode_histogram(&all), Vec::new()]
        } else {
            [Vec::new(), encode_histogram(&all)]
        },
        samples: Vec::new(),
        rate: None,
        verify: None,
        layout_seconds: 0.0,
        interrupted,
        not_measured: Vec::new(),
        ..PhaseResult::one_direction(!reads, bytes, ops)
    };
    (result, entries, errors, first_errors)
}

/// Runs `op` over every worker's items and records what it did in `layout` (the items made
/// when a runtime ended a making phase, the files' names after rename, their links).
pub fn run(layout: &mut Layout, op: MetaOp, stop: &AtomicBool) -> Outcome {
    storlab_engine::clock::init();
    let workers = layout.job.workers;
    let shared = Shared {
        start: Barrier::new(workers as usize),
        first_done: AtomicBool::new(false),
        progress: (0..workers).map(|_| Progress::default()).collect(),
        first: std::sync::Mutex::new(None),
    };
    let l: &Layout = layout;
    let outs: Vec<WorkerOut> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let shared = &shared;
                s.spawn(move || work(l, op, w, stop, shared))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a meta worker does not panic"))
            .collect()
    });
    if op == MetaOp::Create || op == MetaOp::Mkdir {
        for (w, o) in outs.iter().enumerate() {
            layout.set_made(w as u32, o.made);
        }
    }
    match op {
        MetaOp::Rename => layout.renamed = !layout.renamed,
        MetaOp::Link => layout.linked = true,
        MetaOp::Remove => (layout.renamed, layout.linked) = (false, false),
        _ => {}
    }
    let first = shared
        .first
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .unwrap_or_default();
    merge(layout, op, outs, first)
}

fn merge(layout: &Layout, op: MetaOp, outs: Vec<WorkerOut>, first: (u64, u64, u64)) -> Outcome {
    let (result, entries, errors, first_errors) =
        combine(outs, op.reads(), first, |w| layout.top(w as u32).display().to_string());
    let j = &layout.job;
    Outcome {
        result,
        params: MetaParams {
            op,
            workers: j.workers,
            items_per_worker: j.items_per_worker,
            tree: j.tree,
            shared_dir: j.shared_dir,
            file_size: j.file_size,
            sync: j.sync,
            entries,
            errors,
            first_errors,
        },
    }
}

/// The first bytes of each file: its worker and item, so that a read can tell a file from
/// another's.
fn stamp(data: &mut [u8], w: u32, i: u64) {
    let mut s = [0u8; 16];
    s[..8].copy_from_slice(&(w as u64).to_le_bytes());
    s[8..].copy_from_slice(&i.to_le_bytes());
    let n = data.len().min(16);
    data[..n].copy_from_slice(&s[..n]);
}

/// One worker's items.
fn work(l: &Layout, op: MetaOp, w: u32, stop: &AtomicBool, shared: &Shared) -> WorkerOut {
    let j = &l.job;
    let top = l.top(w);
    let making = matches!(op, MetaOp::Create | MetaOp::Mkdir);
    let n = if making { j.items_per_worker } else { l.made(w) };
    let mut data: Vec<u8> = (0..j.file_size).map(|b| (b % 251) as u8).collect();
    let mut back = vec![0u8; j.file_size as usize + 1];
    let (mut names, mut other) = (Names::default(), Names::default());
    let mut hist = new_histogram();
    let mut out = WorkerOut::new(n);
    let file_prefix = if l.renamed { b'r' } else { b'f' };
    // The worker's number in its items' names and contents: unique among ranks sharing a tree.
    let named = w + l.worker_base;
    let cpu0 = thread_usage();
    shared.start.wait();
    out.start_ns = now_ns();
    // The end of the previous item: where this item's time starts (see the module's doc).
    let mut last = out.start_ns;
    let deadline = j.runtime.filter(|_| making).map(|d| out.start_ns + d.as_nanos() as u64);
    let mut dir: Option<OwnedFd> = None;
    // The directory the items are in, and the first item of the next one (found by boundary,
    // not by a division per item).
    let (mut di, mut next_dir_at) = (0, 0);
    let progress = &shared.progress[w as usize];
    for i in 0..n {
        if stop.load(Ordering::Relaxed) {
            out.interrupted = true;
            break;
        }
        if deadline.is_some_and(|d| last >= d) {
            out.made = i;
            break;
        }
        if i >= next_dir_at || dir.is_none() {
            di = l.dir_of(i);
            next_dir_at = l.first_item_of(di + 1);
            dir = open_dir(&top.join(&l.dirs[di]), &mut out);
            // A directory's open is the tree's cost, not its first item's.
            last = now_ns();
        }
        let Some(d) = &dir else { continue };
        let here = || top.join(&l.dirs[di]);
        if matches!(op, MetaOp::Create | MetaOp::Write) {
            stamp(&mut data, named, i);
        }
        // The names this item's operation uses.
        let name = match op {
            MetaOp::Mkdir | MetaOp::Rmdir => names.name(b'd', named, i),
            _ => names.name(file_prefix, named, i),
        };
        let r = one(op, d, name, &mut other, named, i, &data, &mut back, j.sync, l.linked);
        let t1 = now_ns();
        let took = t1.saturating_sub(last).max(1);
        last = t1;
        match r {
            Ok((ops, bytes, entries)) => {
                let _ = hist.record(took);
                out.ops += ops;
                out.bytes += bytes;
                out.entries += entries;
            }
            Err(why) => out.fail(format!(
                "{}: {why}",
                here().join(name.to_string_lossy().as_ref()).display()
            )),
        }
        progress.ops.store(out.ops, Ordering::Relaxed);
        progress.bytes.store(out.bytes, Ordering::Relaxed);
    }
    out.end_ns = last;
    shared.note_first_done(out.end_ns);
    out.cpu = cpu0.until(&thread_usage());
    out.hist = hist;
    out
}

/// Opens a directory of the tree for the items in it; a failure is counted and named.
fn open_dir(path: &Path, out: &mut WorkerOut) -> Option<OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| out.fail(format!("{}: {e}", path.display())))
    .ok()
}

/// Writes all of `data` to `fd`.
fn write_all(fd: &OwnedFd, mut data: &[u8]) -> Result<(), String> {
    while !data.is_empty() {
        match rustix::io::write(fd, data) {
            Ok(0) => return Err("the write wrote nothing".into()),
            Ok(n) => data = &data[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("write: {e}")),
        }
    }
    Ok(())
}

/// Does one item's operation; returns the system calls' operations counted, the bytes moved
/// and the entries acted on, or what was wrong.
#[allow(clippy::too_many_arguments)]
#[inline]
fn one(
    op: MetaOp,
    dir: &OwnedFd,
    name: &CStr,
    other: &mut Names,
    w: u32,
    i: u64,
    data: &[u8],
    back: &mut [u8],
    sync: bool,
    linked: bool,
) -> Result<(u64, u64, u64), String> {
    let sync_dir = || -> Result<(), String> {
        if sync {
            rustix::fs::fsync(dir).map_err(|e| format!("fsync of its directory: {e}"))?;
        }
        Ok(())
    };
    match op {
        MetaOp::Mkdir => {
            rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755)).map_err(|e| format!("mkdir: {e}"))?;
            sync_dir()?;
            Ok((1, 0, 1))
        }
        MetaOp::Rmdir => {
            rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR).map_err(|e| format!("rmdir: {e}"))?;
            sync_dir()?;
            Ok((1, 0, 1))
        }
        MetaOp::Create | MetaOp::Write => {
            create_or_write(op, dir, name, data, sync)?;
            if op == MetaOp::Create {
                sync_dir()?;
            }
            Ok((1, data.len() as u64, 1))
        }
        MetaOp::Stat => stat_check(dir, name, data).map(|_| (1, 0, 1)),
        MetaOp::Read => read_check(dir, name, data, back, w, i).map(|got| (1, got, 1)),
        MetaOp::Rename => {
            // `file.…` becomes `moved.…`, and a second rename names it back.
            let prefix = if name.to_bytes()[0] == b'f' { b'r' } else { b'f' };
            let to = other.name(prefix, w, i);
            rustix::fs::renameat(dir, name, dir, to).map_err(|e| format!("rename: {e}"))?;
            sync_dir()?;
            Ok((1, 0, 1))
        }
        MetaOp::Link => {
            let to = other.name(b'l', w, i);
            rustix::fs::linkat(dir, name, dir, to, AtFlags::empty()).map_err(|e| format!("link: {e}"))?;
            sync_dir()?;
            Ok((1, 0, 1))
        }
        MetaOp::Remove => {
            rustix::fs::unlinkat(dir, name, AtFlags::empty()).map_err(|e| format!("remove: {e}"))?;
            let mut done = (1, 0, 1);
            if linked {
                let link = other.name(b'l', w, i);
                rustix::fs::unlinkat(dir, link, AtFlags::empty()).map_err(|e| format!("remove of its link: {e}"))?;
                // One operation per item, as its one latency sample: both names went.
                done = (1, 0, 2);
            }
            sync_dir()?;
            Ok(done)
        }
        MetaOp::Walk | MetaOp::Untar => Err(format!("{op} is not an item's operation (it is `storlab meta {op}`)")),
    }
}

/// A file created (O_EXCL) or opened to be written, its data written, fsync'd when asked.
#[inline]
fn create_or_write(op: MetaOp, dir: &OwnedFd, name: &CStr, data: &[u8], sync: bool) -> Result<(), String> {
    let flags = if op == MetaOp::Create {
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC
    } else {
        OFlags::WRONLY | OFlags::CLOEXEC
    };
    let fd =
        rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o644)).map_err(|e| format!("open for {op}: {e}"))?;
    write_all(&fd, data)?;
    if sync {
        rustix::fs::fsync(&fd).map_err(|e| format!("fsync: {e}"))?;
    }
    Ok(())
}

/// A stat of the file created: a regular file of the size written.
#[inline]
fn stat_check(dir: &OwnedFd, name: &CStr, data: &[u8]) -> Result<(), String> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| format!("stat: {e}"))?;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        return Err(format!("stat: a {kind:?}, not the regular file created"));
    }
    if st.st_size as u64 != data.len() as u64 {
        return Err(format!("stat: {} bytes, not the {} written", st.st_size, data.len()));
    }
    Ok(())
}

/// The file read back whole and its first bytes checked against worker `w`'s item `i`; the
/// bytes read.
#[inline]
fn read_check(dir: &OwnedFd, name: &CStr, data: &[u8], back: &mut [u8], w: u32, i: u64) -> Result<u64, String> {
    let fd = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| format!("open for read: {e}"))?;
    // One byte more than was written is asked for, so that a longer file shows in the count;
    // once the size written is reached the file is taken as read whole (a regular file's read
    // returns less than asked only at its end), without a last read of 0 bytes: mdtest's read
    // is one read(2), and so is this one.
    let mut got = 0;
    loop {
        match rustix::io::read(&fd, &mut back[got..]) {
            Ok(0) => break,
            Ok(n) => {
                got += n;
                if got >= data.len() {
                    break;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    if got != data.len() {
        return Err(format!("read {got} bytes, not the {} written", data.len()));
    }
    let mut want = [0u8; 16];
    let n = data.len().min(16);
    stamp(&mut want[..n], w, i);
    if back[..n] != want[..n] {
        return Err("read: the data is not what was written to this file".into());
    }
    Ok(got as u64)
}
