//! fio's log files of a stored run (`write_bw_log`, `write_iops_log`, `write_lat_log`), from
//! its interval samples.

use storlab_model::run::{Phase, RunDetail};
use storlab_workload::fio::FioLog;

/// fio's log file of a phase (`write_bw_log`, `write_iops_log`, `write_lat_log`; fio's HOWTO
/// "Log File Formats"): one line per sample interval and direction that moved data, `time
/// (ms), value, direction (0 read, 1 write), block size (0: averaged), offset (0)`, the value
/// in KiB/s (`bw`), I/Os per second (`iops`) or the mean latency in ns (`lat`, `clat`) over
/// the interval, as fio's log_avg_msec averages. The ramp's intervals are left out, as fio
/// logs none.
pub fn log_file(phase: &Phase, what: &str) -> String {
    let r = &phase.result;
    let mut out = String::new();
    for s in r.samples.iter().filter(|s| !s.ramp && s.seconds() > 0.0) {
        let ms = (s.t_end * 1e3).round() as u64;
        for (dir, bytes, ops, moved) in [
            (0, s.bytes_read, s.ops_read, r.ops_read > 0),
            (1, s.bytes_written, s.ops_written, r.ops_written > 0),
        ] {
            if !moved {
                continue;
            }
            let v = match what {
                "bw" => bytes as f64 / s.seconds() / 1024.0,
                "iops" => ops as f64 / s.seconds(),
                // lat, clat: the interval's mean, ns; no line where nothing completed (or for
                // samples stored before storlab kept the mean).
                _ => match if dir == 0 {
                    s.lat_mean_read_ns
                } else {
                    s.lat_mean_write_ns
                } {
                    Some(m) => m,
                    None => continue,
                },
            };
            out += &format!("{ms}, {}, {dir}, 0, 0\n", v.round() as u64);
        }
    }
    out
}

/// fio's log files that a run's phases asked for (`phase_logs`, by phase): each file's name
/// as fio names it (`PREFIX_bw.N.log`, see [`FioLog::file_name`]) and its text.
pub fn log_files(run: &RunDetail, phase_logs: &[Vec<FioLog>]) -> Vec<(std::path::PathBuf, String)> {
    run.phases
        .iter()
        .zip(phase_logs)
        .flat_map(|(phase, logs)| {
            let workers = phase.plan().map_or(1, |p| p.workers.len());
            logs.iter()
                .map(move |l| (l.file_name(workers).into(), log_file(phase, &l.what)))
        })
        .collect()
}
