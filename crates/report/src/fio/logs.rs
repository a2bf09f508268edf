//! fio's log files of a stored run (`write_bw_log`, `write_iops_log`, `write_lat_log`,
//! `write_hist_log`), from its interval samples and interval histograms.

use super::grid::{val_to_idx, PLAT_NR};
use storlab_model::iolog::IoRecord;
use storlab_model::result::{IntervalHistograms, Sample, WorkerSample};
use storlab_model::run::{Phase, RunDetail};
use storlab_workload::fio::FioLog;

/// One interval of a log: the phase's or one worker's.
struct Row {
    t_end: f64,
    seconds: f64,
    ramp: bool,
    bytes: [u64; 2],
    ops: [u64; 2],
    lat_mean_ns: [Option<f64>; 2],
    /// An asynchronous engine's slat and clat means (none in a phase's samples, which keep
    /// only the whole latency).
    slat_mean_ns: [Option<f64>; 2],
    clat_mean_ns: [Option<f64>; 2],
}

impl Row {
    fn of_phase(s: &Sample) -> Row {
        Row {
            t_end: s.t_end,
            seconds: s.seconds(),
            ramp: s.ramp,
            bytes: [s.bytes_read, s.bytes_written],
            ops: [s.ops_read, s.ops_written],
            lat_mean_ns: [s.lat_mean_read_ns, s.lat_mean_write_ns],
            slat_mean_ns: [None; 2],
            clat_mean_ns: [None; 2],
        }
    }

    fn of_worker(s: &WorkerSample) -> Row {
        Row {
            t_end: s.t_end,
            seconds: s.t_end - s.t_start,
            ramp: s.ramp,
            bytes: [s.bytes_read, s.bytes_written],
            ops: [s.ops_read, s.ops_written],
            lat_mean_ns: [s.lat_mean_read_ns, s.lat_mean_write_ns],
            slat_mean_ns: s.slat_mean_ns,
            clat_mean_ns: s.clat_mean_ns,
        }
    }
}

/// How a log's lines are laid out: the columns fio adds (log_offset) and which intervals it
/// writes.
#[derive(Clone, Copy)]
struct Layout {
    /// The phase's sample interval, seconds: fio writes a bandwidth or IOPS line (and a
    /// histogram line) for each whole log_avg_msec window only, so a last shorter interval
    /// has none; a latency log ends with it, as fio's does.
    nominal: f64,
    /// fio's log_offset: an offset column before the priority's (0: an averaged line has
    /// no one offset, as in fio's).
    offset: bool,
}

impl Layout {
    fn of(phase: &Phase, log: &FioLog) -> Layout {
        let nominal = match phase.plan() {
            Some(p) => p.settings.interval.0 as f64 / 1e9,
            None => 0.0,
        };
        Layout {
            nominal,
            offset: log.offset,
        }
    }

    /// The interval of `seconds` is whole (its end is the clock's, in ns: a hair of slack).
    fn whole(&self, seconds: f64) -> bool {
        seconds >= self.nominal - 1e-6
    }

    /// The columns after the value and direction: block size (0: averaged), [offset,]
    /// priority.
    fn tail(&self, bs: u64) -> String {
        if self.offset {
            format!("{bs}, 0, 0")
        } else {
            format!("{bs}, 0")
        }
    }
}

/// fio's log file (`write_bw_log`, `write_iops_log`, `write_lat_log`; fio's HOWTO "Log File
/// Formats") of `rows`, a phase's intervals or one worker's: one line per interval and
/// direction the phase moved data in (`moved`: reads, writes), `time (ms), value, direction (0
/// read, 1 write), block size (0: averaged), [offset (0),] priority (0)`, the value in KiB/s
/// (`bw`), I/Os per second (`iops`) or the mean latency in ns (`lat`, `slat`, `clat`) over the
/// interval, as fio's log_avg_msec averages. The ramp's intervals are left out, as fio logs
/// none, and a last interval shorter than the others from the bw and iops logs (see
/// [`Layout`]). `split`: the engine is asynchronous, its I/Os split at their submission into
/// slat and clat; a synchronous engine's clat is its whole latency and its slat log is empty,
/// as fio's.
fn log_text(rows: impl Iterator<Item = Row>, moved: [bool; 2], what: &str, split: bool, layout: Layout) -> String {
    let mut out = String::new();
    let rate = matches!(what, "bw" | "iops");
    for s in rows.filter(|s| !s.ramp && s.seconds > 0.0 && (!rate || layout.whole(s.seconds))) {
        let ms = (s.t_end * 1e3).round() as u64;
        for dir in (0..2).filter(|&d| moved[d]) {
            let v = match what {
                "bw" => Some(s.bytes[dir] as f64 / s.seconds / 1024.0),
                "iops" => Some(s.ops[dir] as f64 / s.seconds),
                // The interval's mean, ns; no line where nothing completed (or for samples
                // stored before storlab kept the mean).
                "slat" if split => s.slat_mean_ns[dir],
                "slat" => None,
                "clat" if split => s.clat_mean_ns[dir],
                _ => s.lat_mean_ns[dir],
            };
            let Some(v) = v else { continue };
            out += &format!("{ms}, {}, {dir}, {}\n", v.round() as u64, layout.tail(0));
        }
    }
    out
}

/// fio's log file of a phase, every worker's samples together (see [`log_text`]).
fn phase_log(phase: &Phase, what: &str, layout: Layout) -> String {
    let r = &phase.result;
    log_text(r.samples.iter().map(Row::of_phase), moved(phase), what, false, layout)
}

/// The phase's engine splits its I/Os at their submission (an asynchronous one).
fn split(phase: &Phase) -> bool {
    phase.plan().is_some_and(|p| p.settings.engine.is_async())
}

/// The directions a phase moved data in: reads, writes.
fn moved(phase: &Phase) -> [bool; 2] {
    [phase.result.ops_read > 0, phase.result.ops_written > 0]
}

/// Where each log file goes as it is made: its name and its text (a per-I/O log can be tens
/// of megabytes, so each is written and dropped before the next is made).
pub type LogSink<'a> = dyn FnMut(std::path::PathBuf, String) -> Result<(), String> + 'a;

/// fio's log files that a run's phases asked for (`phase_logs`, by phase), each handed to
/// `sink` with its name as fio names it (`PREFIX_bw.N.log`, see [`FioLog::file_name`]). With
/// per_job_logs each of a phase's workers that kept its own samples has its own file, N its
/// thread number, as fio writes one per clone; otherwise the phase's samples make one.
pub fn log_files(run: &RunDetail, phase_logs: &[Vec<FioLog>], sink: &mut LogSink) -> Result<(), String> {
    for (phase, logs) in run.phases.iter().zip(phase_logs) {
        let workers = &phase.result.workers;
        let own = !workers.is_empty() && workers.iter().all(|w| !w.samples.is_empty());
        let (moved, split) = (moved(phase), split(phase));
        // Each worker's I/Os, inflated once for all of the phase's per-I/O logs.
        let mut io_records: Option<Vec<Vec<IoRecord>>> = None;
        for l in logs {
            let layout = Layout::of(phase, l);
            if l.what == "clat_hist" {
                for (name, text) in hist_files(phase, l, layout) {
                    sink(name, text)?;
                }
            } else if l.per_io {
                if io_records.is_none() {
                    io_records = Some(worker_records(phase)?);
                }
                let records = io_records.as_deref().unwrap_or_default();
                per_io_files(phase, records, l, split, layout, sink)?;
            } else if l.per_job && own {
                for (clone, w) in workers.iter().enumerate() {
                    let rows = w.samples.iter().map(Row::of_worker);
                    let text = log_text(rows, moved, &l.what, split, layout);
                    sink(l.file_name(clone as u64).into(), text)?;
                }
            } else if workers.len() > 1 {
                sink(l.shared_file_name().into(), phase_log(phase, &l.what, layout))?;
            } else {
                sink(l.file_name(0).into(), phase_log(phase, &l.what, layout))?;
            }
        }
    }
    Ok(())
}

/// Each worker's I/Os as it kept them (none for a worker that kept none: a run stored before
/// it asked).
fn worker_records(phase: &Phase) -> Result<Vec<Vec<IoRecord>>, String> {
    let records = |w: &storlab_model::result::WorkerResult| match &w.io_log {
        Some(l) => l.records().map_err(|e| format!("phase {}: {e}", phase.seq)),
        None => Ok(Vec::new()),
    };
    phase.result.workers.iter().map(records).collect()
}

/// fio's per-I/O logs (without log_avg_msec) from each worker's I/Os (`records`): one file
/// per worker with per_job_logs, else one of every worker's I/Os in the order of their times.
/// A worker that kept no I/Os leaves its file empty.
fn per_io_files(
    phase: &Phase,
    records: &[Vec<IoRecord>],
    log: &FioLog,
    split: bool,
    layout: Layout,
    sink: &mut LogSink,
) -> Result<(), String> {
    if log.per_job {
        for (clone, r) in records.iter().enumerate() {
            let text = per_io_text(r.iter().collect(), &log.what, split, layout);
            sink(log.file_name(clone as u64).into(), text)?;
        }
        return Ok(());
    }
    let mut all: Vec<&IoRecord> = records.iter().flatten().collect();
    all.sort_by_key(|r| r.end_ns);
    let name = if phase.result.workers.len() > 1 {
        log.shared_file_name()
    } else {
        log.file_name(0)
    };
    sink(name.into(), per_io_text(all, &log.what, split, layout))
}

/// fio's log of every I/O (fio's HOWTO "Log File Formats" without log_avg_msec; fio's stat.c
/// add_*_sample): a line per I/O, `time (ms from the start), value, direction, size (bytes),
/// [offset,] priority (0)`, the value its latency in ns (`lat`; `clat` from its submission,
/// the whole for a synchronous call; `slat` an asynchronous engine's submission latency, at
/// the time of its submission, none for a synchronous engine's, as fio's), its bandwidth as
/// fio reckons it (`bw`: bytes × 10^6 / clat in ns) or 1 (`iops`).
fn per_io_text(mut records: Vec<&IoRecord>, what: &str, split: bool, layout: Layout) -> String {
    use std::fmt::Write;
    if what == "slat" && !split {
        return String::new();
    }
    let submitted = |r: &IoRecord| r.end_ns - r.lat_ns.min(r.end_ns) + r.slat_ns;
    if what == "slat" {
        // The submissions in the order they were made; the rest as they completed.
        records.sort_by_key(|r| submitted(r));
    }
    let mut out = String::with_capacity(records.len() * 40);
    for r in records {
        let (at, value) = match what {
            "slat" => (submitted(r), r.slat_ns),
            "clat" => (r.end_ns, r.clat_ns()),
            "bw" => (r.end_ns, r.len as u64 * 1_000_000 / r.clat_ns()),
            "iops" => (r.end_ns, 1),
            _ => (r.end_ns, r.lat_ns),
        };
        let dir = u8::from(r.write);
        // Writing to a String cannot fail.
        let _ = write!(out, "{}, {value}, {dir}, {}, ", at / 1_000_000, r.len);
        if layout.offset {
            let _ = write!(out, "{}, ", r.offset);
        }
        out.push_str("0\n");
    }
    out
}

/// One interval of a histogram log: its end and length, seconds, whether it lies in the
/// ramp, and its completion latencies per direction, decoded (a worker's, or every worker's
/// added).
struct HistInterval {
    t_end: f64,
    seconds: f64,
    ramp: bool,
    clat: [Option<Hist>; 2],
}

impl HistInterval {
    fn of(iv: &IntervalHistograms) -> HistInterval {
        HistInterval {
            t_end: iv.t_end,
            seconds: iv.seconds,
            ramp: iv.ramp,
            clat: [super::json::decode(&iv.clat[0]), super::json::decode(&iv.clat[1])],
        }
    }

    /// Another worker's histograms of the same interval added to these.
    fn add(&mut self, o: HistInterval) {
        self.seconds = self.seconds.max(o.seconds);
        self.ramp |= o.ramp;
        for (mine, theirs) in self.clat.iter_mut().zip(o.clat) {
            match (mine.as_mut(), theirs) {
                (Some(sum), Some(h)) => {
                    let _ = sum.add(&h);
                }
                (None, h) => *mine = h,
                (Some(_), None) => {}
            }
        }
    }
}

/// write_hist_log's files: one per worker with per_job_logs (fio's default), else one of
/// every worker's histograms added interval by interval (the workers share the phase's
/// interval boundaries). A worker that kept no interval histograms (no log_hist_msec) leaves
/// its file empty, as fio does.
fn hist_files(phase: &Phase, log: &FioLog, layout: Layout) -> Vec<(std::path::PathBuf, String)> {
    // The histograms' own interval, where they kept one (log_hist_msec beside log_avg_msec).
    let own = phase.plan().and_then(|p| p.settings.histogram_interval);
    let layout = Layout {
        nominal: own.map_or(layout.nominal, |d| d.0 as f64 / 1e9),
        ..layout
    };
    let workers = &phase.result.workers;
    let bs = match phase.plan().map(|p| &p.settings.bs) {
        Some(storlab_model::values::BlockSizes::Fixed(b)) => *b,
        _ => 0,
    };
    let hist = |intervals: &[HistInterval]| hist_log_text(intervals, moved(phase), bs, log.hist_coarseness, layout);
    if log.per_job {
        let files = workers.iter().enumerate().map(|(clone, w)| {
            let intervals: Vec<HistInterval> = w.interval_histograms.iter().map(HistInterval::of).collect();
            (log.file_name(clone as u64).into(), hist(&intervals))
        });
        return files.collect();
    }
    let mut by_end: std::collections::BTreeMap<u64, HistInterval> = Default::default();
    for iv in workers.iter().flat_map(|w| &w.interval_histograms) {
        let key = (iv.t_end * 1e6).round() as u64;
        match by_end.entry(key) {
            std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().add(HistInterval::of(iv)),
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(HistInterval::of(iv));
            }
        }
    }
    let merged: Vec<HistInterval> = by_end.into_values().collect();
    let name = if workers.len() > 1 {
        log.shared_file_name()
    } else {
        log.file_name(0)
    };
    vec![(name.into(), hist(&merged))]
}

type Hist = hdrhistogram::Histogram<u64>;

/// fio's histogram log (fio's HOWTO "Log File Formats", `write_hist_log`; fio's iolog.c
/// flush_hist_samples): per whole interval and direction the phase moved data in, `time (ms),
/// direction, block size (0 for a mix), ` then the interval's completion latencies counted in
/// fio's 1,856 bins (grid.rs), 2^`coarseness` bins summed into each column.
fn hist_log_text(intervals: &[HistInterval], moved: [bool; 2], bs: u64, coarseness: u32, layout: Layout) -> String {
    let stride = 1usize << coarseness;
    let mut out = String::new();
    for iv in intervals.iter().filter(|iv| !iv.ramp && layout.whole(iv.seconds)) {
        let ms = (iv.t_end * 1e3).round() as u64;
        for dir in (0..2).filter(|&d| moved[d]) {
            let mut bins = vec![0u64; PLAT_NR];
            if let Some(h) = &iv.clat[dir] {
                for v in h.iter_recorded() {
                    bins[val_to_idx(v.value_iterated_to())] += v.count_at_value();
                }
            }
            let columns: Vec<String> = bins.chunks(stride).map(|c| c.iter().sum::<u64>().to_string()).collect();
            out += &format!("{ms}, {dir}, {bs}, {}\n", columns.join(", "));
        }
    }
    out
}
