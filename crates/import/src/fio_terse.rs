//! fio's terse output (`--minimal`, `--output-format=terse`, `--terse-version=3|4|5`) as
//! storlab runs: one line per job (or group), fields separated by `;`.
//!
//! The layout is fio's (stat.c `show_thread_status_terse`, `show_ddir_status_terse`; the
//! HOWTO's "Terse output"): version; fio version; job name; group; error; then per direction
//! (read, write, and from version 4 trim) 41 fields — KiB moved, KiB/s, IOPS, runtime (ms),
//! submission latency min/max/mean/dev (µs), completion latency min/max/mean/dev (µs), 20
//! completion-latency percentiles as `P%=µs`, total latency min/max/mean/dev (µs), bandwidth
//! min/max/share/mean/dev (KiB/s); version 5 adds 6 more per direction (bandwidth samples; IOPS
//! min/max/mean/dev/samples) — then CPU user %, system %, context switches, major and minor
//! faults, and the I/O depth and latency distributions.
//!
//! Terse output does not say the job's access pattern (`rw`), block size or number of jobs:
//! the phase is named after the directions that moved data, and those figures are absent.

use serde_json::json;
use storlab_model::result::{Figure, Latency, PhaseResult};
use storlab_model::run::{ImportedParams, ImportedRun, Phase, PhaseName, PhaseParams};

use crate::{ImportError, Origin};

/// Fields per direction, by terse version.
fn per_direction(version: u32) -> usize {
    if version >= 5 {
        47
    } else {
        41
    }
}

/// Directions, by terse version (trim from version 4).
fn directions(version: u32) -> usize {
    if version >= 4 {
        3
    } else {
        2
    }
}

/// Fields of a whole line (before the optional disk utilisation and description).
fn fields_needed(version: u32) -> usize {
    5 + per_direction(version) * directions(version) + 5 + 7 + 10 + 12
}

/// True when a line looks like a terse line: a version fio writes, then "fio-".
fn is_terse(line: &str) -> bool {
    let mut f = line.trim().split(';');
    matches!(f.next(), Some("3" | "4" | "5")) && f.next().is_some_and(|v| v.starts_with("fio-"))
}

/// True when `text` holds at least one terse line.
pub fn looks_like_terse(text: &str) -> bool {
    text.lines().any(is_terse)
}

/// One direction's figures.
struct Direction {
    bytes: f64,
    bytes_per_sec: f64,
    iops: f64,
    runtime_ms: f64,
    /// Completion latency percentiles (percent, µs).
    clat_pct: Vec<(f64, f64)>,
    lat_min_us: f64,
    lat_max_us: f64,
    lat_mean_us: f64,
}

/// Parses every terse line of `text` (fio's "note:" and other lines around them are passed
/// over); a line that is cut short or whose figures do not read is an error naming its line.
pub fn parse(origin: &Origin, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    let host = origin.host_or("fio");
    let mut runs = Vec::new();
    for (k, line) in text.lines().enumerate() {
        if !is_terse(line) {
            continue;
        }
        let line_no = k + 1;
        let f: Vec<&str> = line.trim().split(';').collect();
        let version: u32 = f[0].parse().unwrap_or(3);
        if f.len() < fields_needed(version) {
            return Err(origin.error(format!(
                "line {line_no}: fio terse version {version} has {} fields per job, this line {} (is it cut short?)",
                fields_needed(version),
                f.len()
            )));
        }
        let num = |i: usize| -> Result<f64, ImportError> {
            let raw = f[i].trim_end_matches('%');
            raw.parse::<f64>().map_err(|_| {
                origin.error(format!(
                    "line {line_no}: field {} (\"{}\") of fio's terse line is not a number",
                    i + 1,
                    f[i]
                ))
            })
        };
        let fio_version = f[1].trim_start_matches("fio-").to_string();
        let name = f[2].to_string();
        let error = num(4)?;
        let mut dirs = Vec::new();
        for d in 0..directions(version) {
            let b = 5 + d * per_direction(version);
            let mut clat_pct = Vec::new();
            for (i, field) in f.iter().enumerate().take(b + 32).skip(b + 12) {
                // "99.000000%=1234"; fio pads unused slots with "0%=0".
                let Some((p, v)) = field.split_once("%=") else {
                    return Err(origin.error(format!(
                        "line {line_no}: field {} (\"{}\") is not a percentile (P%=µs)",
                        i + 1,
                        field
                    )));
                };
                let (p, v): (f64, f64) = match (p.parse(), v.parse()) {
                    (Ok(p), Ok(v)) => (p, v),
                    _ => {
                        return Err(origin.error(format!(
                            "line {line_no}: field {} (\"{}\") is not a percentile (P%=µs)",
                            i + 1,
                            field
                        )))
                    }
                };
                if p > 0.0 {
                    clat_pct.push((p, v));
                }
            }
            dirs.push(Direction {
                bytes: num(b)? * 1024.0,
                bytes_per_sec: num(b + 1)? * 1024.0,
                iops: num(b + 2)?,
                runtime_ms: num(b + 3)?,
                clat_pct,
                lat_min_us: num(b + 32)?,
                lat_max_us: num(b + 33)?,
                lat_mean_us: num(b + 34)?,
            });
        }
        let cpu_at = 5 + per_direction(version) * directions(version);
        let (usr_pct, sys_pct) = (num(cpu_at)?, num(cpu_at + 1)?);
        let active: Vec<&Direction> = dirs.iter().filter(|d| d.bytes > 0.0).collect();
        let read = dirs[0].bytes > 0.0;
        let write = dirs[1..].iter().any(|d| d.bytes > 0.0);
        let kind = match (read, write) {
            (true, false) => "reads",
            (false, true) => "writes",
            _ => "reads and writes",
        };
        let runtime_ms = active.iter().map(|d| d.runtime_ms).fold(0.0, f64::max);
        let seconds = runtime_ms / 1e3;
        let ops_of = |d: &Direction| (d.iops * d.runtime_ms / 1e3).round();
        let bytes_read = dirs[0].bytes;
        let bytes_written: f64 = dirs[1..].iter().map(|d| d.bytes).sum();
        let ops_read = ops_of(&dirs[0]);
        let ops_written: f64 = dirs[1..].iter().map(ops_of).sum();
        let pct = |p: f64| -> u64 {
            active
                .iter()
                .filter_map(|d| d.clat_pct.iter().find(|x| (x.0 - p).abs() < 1e-6))
                .map(|x| x.1)
                .fold(0.0, f64::max) as u64
                * 1000
        };
        let n = (ops_read + ops_written).max(1.0);
        let mean_us = active.iter().map(|d| d.lat_mean_us * ops_of(d)).sum::<f64>() / n;
        let mut notes = vec![
            "fio's terse output: no access pattern (rw), block size or job count; latency in whole µs".to_string(),
            "percentiles are fio's completion latency (clat), the larger of the directions' when both moved data; min, mean and max are its total latency".into(),
            "fio reports one figure per job (or group): no first done, no spread between its workers".into(),
            "IOPS per direction × its runtime gives the I/O counts".into(),
        ];
        if error != 0.0 {
            notes.push(format!("fio reported error {error} for this job"));
        }
        let mut result = PhaseResult {
            cpu_user: usr_pct / 100.0 * seconds,
            cpu_sys: sys_pct / 100.0 * seconds,
            latency: Latency {
                count: (ops_read + ops_written) as u64,
                min_ns: (active.iter().map(|d| d.lat_min_us).fold(f64::INFINITY, f64::min) * 1e3) as u64,
                mean_ns: mean_us * 1e3,
                max_ns: (active.iter().map(|d| d.lat_max_us).fold(0.0, f64::max) * 1e3) as u64,
                p50_ns: pct(50.0),
                p90_ns: pct(90.0),
                p99_ns: pct(99.0),
                p99_9_ns: pct(99.9),
                p99_99_ns: pct(99.99),
            },
            ..crate::moved(
                (bytes_read, ops_read),
                (bytes_written, ops_written),
                seconds,
                active.iter().map(|d| d.bytes_per_sec).sum(),
                active.iter().map(|d| d.iops).sum(),
            )
        };
        let mut missing = vec![Figure::FirstDone, Figure::WorkerSpread];
        if active.is_empty() {
            missing.push(Figure::Latency);
        }
        result.mark_not_measured(&missing);
        runs.push(origin.run(
            &host,
            format!("fio {name}"),
            format!("fio ({fio_version}) job '{name}', imported from {}", origin.path),
            json!({
                "imported_from": origin.path,
                "format": format!("fio terse version {version}"),
                "fio_version": fio_version,
                "line": line_no,
                "group": f[3],
                "text": line,
            }),
            crate::now(),
            format!("imported from fio {fio_version}'s terse output: fio does not record the machine, terse output not the time"),
            vec![Phase {
                seq: 0,
                kind: PhaseName::Other(kind.into()),
                params: PhaseParams::Imported(ImportedParams {
                    tool: format!("fio {fio_version}"),
                    notes,
                    ..ImportedParams::default()
                }),
                result,
                cache_flattered: false,
            }],
        ));
    }
    if runs.is_empty() {
        return Err(origin.error("no fio terse lines (\"3;fio-3.33;job;...\")"));
    }
    Ok(runs)
}
