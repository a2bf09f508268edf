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
use storlab_model::run::{ImportedParams, ImportedRun, PhaseName};

use crate::fio_figures::{DirFigures, JobFigures, RunFacts};
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
        if is_terse(line) {
            runs.push(line_run(origin, &host, k + 1, line)?);
        }
    }
    if runs.is_empty() {
        return Err(origin.error("no fio terse lines (\"3;fio-3.33;job;...\")"));
    }
    Ok(runs)
}

/// One terse line's fields, read by number with its line named in a refusal.
struct Fields<'a> {
    f: Vec<&'a str>,
    line_no: usize,
    origin: &'a Origin,
}

impl Fields<'_> {
    /// Field `i` (from 0) as a number (a trailing % dropped).
    fn num(&self, i: usize) -> Result<f64, ImportError> {
        self.f[i].trim_end_matches('%').parse::<f64>().map_err(|_| {
            self.origin.error(format!(
                "line {}: field {} (\"{}\") of fio's terse line is not a number",
                self.line_no,
                i + 1,
                self.f[i]
            ))
        })
    }

    /// Direction `d`'s fields from `b`: KiB, KiB/s, IOPS, runtime (ms), the completion
    /// percentiles (P%=µs, fio's unused "0%=0" slots passed over), total latency min, max,
    /// mean (µs).
    fn direction(&self, d: usize, b: usize) -> Result<(Direction, bool), ImportError> {
        let mut clat_pct = Vec::new();
        for (i, field) in self.f.iter().enumerate().take(b + 32).skip(b + 12) {
            let pv = field
                .split_once("%=")
                .and_then(|(p, v)| Some((p.parse::<f64>().ok()?, v.parse::<f64>().ok()?)));
            let Some((p, v)) = pv else {
                return Err(self.origin.error(format!(
                    "line {}: field {} (\"{}\") is not a percentile (P%=µs)",
                    self.line_no,
                    i + 1,
                    field
                )));
            };
            if p > 0.0 {
                clat_pct.push((p, v));
            }
        }
        let dir = Direction {
            bytes: self.num(b)? * 1024.0,
            bytes_per_sec: self.num(b + 1)? * 1024.0,
            iops: self.num(b + 2)?,
            runtime_ms: self.num(b + 3)?,
            clat_pct,
            lat_min_us: self.num(b + 32)?,
            lat_max_us: self.num(b + 33)?,
            lat_mean_us: self.num(b + 34)?,
        };
        Ok((dir, d == 0))
    }
}

/// What every run from a terse line says of its figures.
const NOTES: [&str; 4] = [
    "fio's terse output: no access pattern (rw), block size or job count; latency in whole µs",
    "percentiles are fio's completion latency (clat), the larger of the directions' when both moved data; min, mean and max are its total latency",
    "fio reports one figure per job (or group): no first done, no spread between its workers",
    "IOPS per direction × its runtime gives the I/O counts",
];

/// One terse line as a run, through the step every fio text format shares.
fn line_run(origin: &Origin, host: &str, line_no: usize, line: &str) -> Result<ImportedRun, ImportError> {
    let fields = Fields {
        f: line.trim().split(';').collect(),
        line_no,
        origin,
    };
    let f = &fields.f;
    let version: u32 = f[0].parse().unwrap_or(3);
    if f.len() < fields_needed(version) {
        return Err(origin.error(format!(
            "line {line_no}: fio terse version {version} has {} fields per job, this line {} (is it cut short?)",
            fields_needed(version),
            f.len()
        )));
    }
    let fio_version = f[1].trim_start_matches("fio-").to_string();
    let name = f[2].to_string();
    let error = fields.num(4)?;
    let mut dirs = Vec::new();
    for d in 0..directions(version) {
        dirs.push(fields.direction(d, 5 + d * per_direction(version))?);
    }
    let cpu_at = 5 + per_direction(version) * directions(version);
    let cpu_pct = Some((fields.num(cpu_at)?, fields.num(cpu_at + 1)?));
    let read = dirs[0].0.bytes > 0.0;
    let write = dirs[1..].iter().any(|d| d.0.bytes > 0.0);
    let kind = match (read, write) {
        (true, false) => "reads",
        (false, true) => "writes",
        _ => "reads and writes",
    };
    // The directions that moved data.
    let figures = JobFigures {
        dirs: dirs
            .iter()
            .filter(|(d, _)| d.bytes > 0.0)
            .map(|(d, is_read)| DirFigures {
                read: *is_read,
                bytes: d.bytes,
                bytes_per_sec: d.bytes_per_sec,
                iops: d.iops,
                seconds: d.runtime_ms / 1e3,
                lat: Some((d.lat_min_us * 1e3, d.lat_mean_us * 1e3, d.lat_max_us * 1e3)),
                pct: d.clat_pct.iter().map(|(p, us)| (*p, us * 1e3)).collect(),
            })
            .collect(),
        cpu_pct,
    };
    let mut notes: Vec<String> = NOTES.iter().map(|n| n.to_string()).collect();
    if error != 0.0 {
        notes.push(format!("fio reported error {error} for this job"));
    }
    Ok(figures.run(
        origin,
        host,
        RunFacts {
            job: name,
            version: fio_version.clone(),
            document: json!({
                "imported_from": origin.path,
                "format": format!("fio terse version {version}"),
                "fio_version": fio_version,
                "line": line_no,
                "group": f[3],
                "text": line,
            }),
            started: origin.when_undated().0,
            source: format!("imported from fio {fio_version}'s terse output: fio does not record the machine, terse output not the time"),
            kind: PhaseName::Other(kind.into()),
            params: ImportedParams {
                notes,
                ..ImportedParams::default()
            },
        },
    ))
}
