//! fio's log files of a stored run (`write_bw_log`, `write_iops_log`, `write_lat_log`), from
//! its interval samples.

use storlab_model::result::{Sample, WorkerSample};
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

/// fio's log file (`write_bw_log`, `write_iops_log`, `write_lat_log`; fio's HOWTO "Log File
/// Formats") of `rows`, a phase's intervals or one worker's: one line per interval and
/// direction the phase moved data in (`moved`: reads, writes), `time (ms), value, direction (0
/// read, 1 write), block size (0: averaged), offset (0)`, the value in KiB/s (`bw`), I/Os per
/// second (`iops`) or the mean latency in ns (`lat`, `slat`, `clat`) over the interval, as fio's
/// log_avg_msec averages. The ramp's intervals are left out, as fio logs none. `split`: the
/// engine is asynchronous, its I/Os split at their submission into slat and clat; a
/// synchronous engine's clat is its whole latency and its slat log is empty, as fio's.
fn log_text(rows: impl Iterator<Item = Row>, moved: [bool; 2], what: &str, split: bool) -> String {
    let mut out = String::new();
    for s in rows.filter(|s| !s.ramp && s.seconds > 0.0) {
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
            out += &format!("{ms}, {}, {dir}, 0, 0\n", v.round() as u64);
        }
    }
    out
}

/// fio's log file of a phase, every worker's samples together (see [`log_text`]).
pub fn log_file(phase: &Phase, what: &str) -> String {
    let r = &phase.result;
    log_text(r.samples.iter().map(Row::of_phase), moved(phase), what, false)
}

/// The phase's engine splits its I/Os at their submission (an asynchronous one).
fn split(phase: &Phase) -> bool {
    phase.plan().is_some_and(|p| p.settings.engine.is_async())
}

/// The directions a phase moved data in: reads, writes.
fn moved(phase: &Phase) -> [bool; 2] {
    [phase.result.ops_read > 0, phase.result.ops_written > 0]
}

/// fio's log files that a run's phases asked for (`phase_logs`, by phase): each file's name
/// as fio names it (`PREFIX_bw.N.log`, see [`FioLog::file_name`]) and its text. With
/// per_job_logs each of a phase's workers that kept its own samples has its own file, N its
/// thread number, as fio writes one per clone; otherwise the phase's samples make one.
pub fn log_files(run: &RunDetail, phase_logs: &[Vec<FioLog>]) -> Vec<(std::path::PathBuf, String)> {
    let mut files = Vec::new();
    for (phase, logs) in run.phases.iter().zip(phase_logs) {
        let workers = &phase.result.workers;
        let own = !workers.is_empty() && workers.iter().all(|w| !w.samples.is_empty());
        let (moved, split) = (moved(phase), split(phase));
        for l in logs {
            if l.per_job && own {
                for (clone, w) in workers.iter().enumerate() {
                    let text = log_text(w.samples.iter().map(Row::of_worker), moved, &l.what, split);
                    files.push((l.file_name(clone as u64).into(), text));
                }
            } else if workers.len() > 1 {
                files.push((l.shared_file_name().into(), log_file(phase, &l.what)));
            } else {
                files.push((l.file_name(0).into(), log_file(phase, &l.what)));
            }
        }
    }
    files
}
