//! fio's normal text output (`--output-format=normal`, what fio prints by default) as storlab
//! runs, for sites that kept no JSON: per job (or group) its bandwidth, IOPS, data moved and
//! runtime, completion and total latency, the completion-latency percentiles per direction,
//! and CPU.
//!
//! fio rounds what it prints here (`IOPS=515k`, `io=22.1MiB`, `max=4025.8k`): the figures are
//! stored as printed, and the phase says so. The job banner fio prints first
//! (`name: (g=0): rw=randrw, bs=(R) 4096B-4096B, ...`) gives each job's `rw` and block size.

use std::collections::BTreeMap;

use serde_json::json;
use storlab_model::result::{Figure, Latency, PhaseResult};
use storlab_model::run::{ImportedParams, ImportedRun, Phase, PhaseName, PhaseParams};

use crate::{ImportError, Origin};

/// True when `text` holds a job's report in fio's normal format.
pub fn looks_like_normal(text: &str) -> bool {
    text.lines().any(|l| job_header(l).is_some())
}

/// `name: (groupid=0, jobs=2): err= 0: pid=9800: Tue Nov 24 08:31:33 2026` → (name, jobs,
/// error, date).
fn job_header(line: &str) -> Option<(&str, u32, i64, &str)> {
    let (name, rest) = line.split_once(": (groupid=")?;
    if name.starts_with(char::is_whitespace) {
        return None;
    }
    let jobs = rest.split("jobs=").nth(1)?.split(')').next()?.trim().parse().ok()?;
    let err = rest.split("err=").nth(1)?.split(':').next()?.trim().parse().ok()?;
    let date = rest.rsplit(": ").next().unwrap_or("");
    Some((name, jobs, err, date))
}

/// A figure as fio prints it: `515k`, `4025.8k`, `2.5M`, `812`.
fn scaled(s: &str) -> Option<f64> {
    let s = s.trim().trim_end_matches(',');
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1e3),
        'M' => (&s[..s.len() - 1], 1e6),
        'G' => (&s[..s.len() - 1], 1e9),
        'T' => (&s[..s.len() - 1], 1e12),
        _ => (s, 1.0),
    };
    num.parse::<f64>().ok().map(|v| v * mult)
}

/// A size as fio prints it (`22.1MiB`, `16.0MiB`, `4096B`, `9.89MiB`, `10.4MB`), bytes.
fn size(s: &str) -> Option<f64> {
    let s = s.trim();
    let at = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(at);
    let v: f64 = num.parse().ok()?;
    let m = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024f64.powi(2),
        "GiB" => 1024f64.powi(3),
        "TiB" => 1024f64.powi(4),
        "PiB" => 1024f64.powi(5),
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "PB" => 1e15,
        _ => return None,
    };
    Some(v * m)
}

/// A time as fio prints it (`11msec`, `500usec`, `3nsec`, `2sec`), seconds.
fn duration(s: &str) -> Option<f64> {
    let s = s.trim();
    for (unit, m) in [("nsec", 1e-9), ("usec", 1e-6), ("msec", 1e-3), ("sec", 1.0)] {
        if let Some(n) = s.strip_suffix(unit) {
            return n.parse::<f64>().ok().map(|v| v * m);
        }
    }
    None
}

/// The nanoseconds in one of fio's latency units.
fn unit_ns(unit: &str) -> Option<f64> {
    match unit {
        "nsec" => Some(1.0),
        "usec" => Some(1e3),
        "msec" => Some(1e6),
        "sec" => Some(1e9),
        _ => None,
    }
}

/// `key=value` pairs of a line: `min=812, max=4025.8k, avg=2607.64`.
fn pairs(s: &str) -> BTreeMap<String, String> {
    s.split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

#[derive(Default)]
struct Direction {
    name: String,
    iops: f64,
    bytes_per_sec: f64,
    bytes: f64,
    seconds: f64,
    /// Total latency min, mean, max (ns).
    lat: Option<(f64, f64, f64)>,
    /// Completion latency min, mean, max (ns), when no total latency line was printed.
    clat: Option<(f64, f64, f64)>,
    /// Percentiles (percent, ns).
    pct: Vec<(f64, f64)>,
}

#[derive(Default)]
struct Job {
    name: String,
    line: usize,
    jobs: u32,
    error: i64,
    date: String,
    dirs: Vec<Direction>,
    usr_pct: Option<f64>,
    sys_pct: Option<f64>,
}

/// Parses every job report of fio's normal output in `text`.
pub fn parse(origin: &Origin, text: &str) -> Result<Vec<ImportedRun>, ImportError> {
    // The banner: each job's rw and block size.
    let mut banner: BTreeMap<String, (String, Option<u64>)> = BTreeMap::new();
    for l in text.lines() {
        if let Some((name, rest)) = l.split_once(": (g=") {
            let rw = rest
                .split("rw=")
                .nth(1)
                .and_then(|r| r.split(',').next())
                .map(str::to_string);
            let bs = rest
                .split("bs=(R) ")
                .nth(1)
                .and_then(|r| r.split('-').next())
                .and_then(size)
                .map(|b| b as u64);
            if let Some(rw) = rw {
                banner.insert(name.trim().to_string(), (rw, bs));
            }
        }
    }
    let mut jobs: Vec<Job> = Vec::new();
    let mut pct_unit: Option<f64> = None;
    for (k, l) in text.lines().enumerate() {
        let line_no = k + 1;
        let bad = |what: &str| origin.error(format!("line {line_no}: {what} in fio's normal output"));
        if let Some((name, n, err, date)) = job_header(l) {
            jobs.push(Job {
                name: name.to_string(),
                line: line_no,
                jobs: n,
                error: err,
                date: date.to_string(),
                ..Job::default()
            });
            continue;
        }
        let Some(job) = jobs.last_mut() else { continue };
        let t = l.trim();
        if t.starts_with("Run status group") {
            // The group summaries say again what the jobs said.
            pct_unit = None;
            continue;
        }
        if let Some((dir, rest)) = t.split_once(": IOPS=") {
            if !matches!(dir, "read" | "write" | "trim") {
                continue;
            }
            // "515k, BW=2010MiB/s (2108MB/s)(22.1MiB/11msec)"
            let iops =
                scaled(rest.split(',').next().unwrap_or("")).ok_or_else(|| bad("an IOPS figure that does not read"))?;
            let bw = rest
                .split("BW=")
                .nth(1)
                .and_then(|b| b.split_whitespace().next())
                .and_then(|b| b.strip_suffix("/s"))
                .and_then(size)
                .ok_or_else(|| bad("a BW= figure that does not read"))?;
            let (io, runtime) = rest
                .rsplit_once(")(")
                .and_then(|(_, x)| x.split(')').next())
                .and_then(|x| x.split_once('/'))
                .and_then(|(a, b)| Some((size(a)?, duration(b)?)))
                .ok_or_else(|| bad("no (io/runtime) figure after BW="))?;
            job.dirs.push(Direction {
                name: dir.to_string(),
                iops,
                bytes_per_sec: bw,
                bytes: io,
                seconds: runtime,
                ..Direction::default()
            });
            pct_unit = None;
            continue;
        }
        if let Some(rest) = t.strip_prefix("cpu") {
            let p = pairs(rest.trim_start().trim_start_matches(':'));
            job.usr_pct = p.get("usr").and_then(|v| v.trim_end_matches('%').parse().ok());
            job.sys_pct = p.get("sys").and_then(|v| v.trim_end_matches('%').parse().ok());
            continue;
        }
        let Some(dir) = job.dirs.last_mut() else { continue };
        // "clat (nsec): min=812, max=4025.8k, avg=2607.64, stdev=75621.60"
        for (prefix, total) in [("lat (", true), ("clat (", false)] {
            let Some(rest) = t.strip_prefix(prefix) else { continue };
            let Some((unit, figures)) = rest.split_once("):") else {
                continue;
            };
            if !figures.contains("min=") {
                continue;
            }
            let m = unit_ns(unit).ok_or_else(|| bad(&format!("the latency unit \"{unit}\"")))?;
            let p = pairs(figures);
            let get = |k: &str| p.get(k).and_then(|v| scaled(v)).map(|v| v * m);
            let f = match (get("min"), get("avg"), get("max")) {
                (Some(a), Some(b), Some(c)) => (a, b, c),
                _ => return Err(bad("a latency line without min, avg and max")),
            };
            if total {
                dir.lat = Some(f);
            } else {
                dir.clat = Some(f);
            }
        }
        if let Some(unit) = t
            .strip_prefix("clat percentiles (")
            .or_else(|| t.strip_prefix("lat percentiles ("))
            .and_then(|r| r.strip_suffix("):"))
        {
            pct_unit = Some(unit_ns(unit).ok_or_else(|| bad(&format!("the percentile unit \"{unit}\"")))?);
            dir.pct.clear();
            continue;
        }
        if let (Some(m), Some(rest)) = (pct_unit, t.strip_prefix('|')) {
            // " 1.00th=[    852],  5.00th=[    916], 10.00th=[    956],"
            for item in rest.split("],") {
                let Some((p, v)) = item.split_once("th=[") else {
                    continue;
                };
                let v = v.trim().trim_end_matches(']');
                match (p.trim().parse::<f64>(), scaled(v)) {
                    (Ok(p), Some(v)) => dir.pct.push((p, v * m)),
                    _ => return Err(bad(&format!("a percentile \"{}\" that does not read", item.trim()))),
                }
            }
        } else if !t.starts_with('|') {
            pct_unit = None;
        }
    }
    if jobs.is_empty() {
        return Err(origin.error("no job reports (\"name: (groupid=0, jobs=1): err= 0: ...\") in fio's normal output"));
    }
    let version = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("fio-"))
        .unwrap_or("unknown")
        .to_string();
    let host = origin.host_or("fio");
    let mut runs = Vec::new();
    for job in jobs {
        if job.dirs.is_empty() {
            return Err(origin.error(format!(
                "line {}: fio's report of job '{}' has no read, write or trim figures",
                job.line, job.name
            )));
        }
        let (rw, bs) = banner.get(&job.name).cloned().unwrap_or(("unknown".into(), None));
        let is_read = |d: &&Direction| d.name == "read";
        let reads: Vec<&Direction> = job.dirs.iter().filter(is_read).collect();
        let writes: Vec<&Direction> = job.dirs.iter().filter(|d| !is_read(d)).collect();
        let ops = |d: &Direction| (d.iops * d.seconds).round();
        let bytes_read: f64 = reads.iter().map(|d| d.bytes).sum();
        let bytes_written: f64 = writes.iter().map(|d| d.bytes).sum();
        let ops_read: f64 = reads.iter().map(|d| ops(d)).sum();
        let ops_written: f64 = writes.iter().map(|d| ops(d)).sum();
        let seconds = job.dirs.iter().map(|d| d.seconds).fold(0.0, f64::max);
        let lat_of = |d: &Direction| d.lat.or(d.clat);
        let n = (ops_read + ops_written).max(1.0);
        let have_lat = job.dirs.iter().all(|d| lat_of(d).is_some());
        let pct = |p: f64| -> u64 {
            job.dirs
                .iter()
                .filter_map(|d| d.pct.iter().find(|x| (x.0 - p).abs() < 1e-6))
                .map(|x| x.1)
                .fold(0.0, f64::max) as u64
        };
        let have_pct = job.dirs.iter().all(|d| !d.pct.is_empty());
        let mut notes = vec![
            "fio's normal text rounds what it prints (IOPS=515k, io=22.1MiB): the figures are as printed; I/O counts are IOPS × runtime".to_string(),
            "percentiles are fio's completion latency (clat), the larger of the directions' when several moved data; min, mean and max its total latency (lat)".into(),
            "fio reports one figure per job (or group): no first done, no spread between its workers".into(),
        ];
        if job.error != 0 {
            notes.push(format!("fio reported error {} for this job", job.error));
        }
        let mut result = PhaseResult {
            cpu_user: job.usr_pct.unwrap_or(0.0) / 100.0 * seconds,
            cpu_sys: job.sys_pct.unwrap_or(0.0) / 100.0 * seconds,
            latency: if have_lat && have_pct {
                Latency {
                    count: (ops_read + ops_written) as u64,
                    min_ns: job
                        .dirs
                        .iter()
                        .filter_map(|d| lat_of(d).map(|l| l.0))
                        .fold(f64::INFINITY, f64::min) as u64,
                    mean_ns: job
                        .dirs
                        .iter()
                        .filter_map(|d| lat_of(d).map(|l| l.1 * ops(d)))
                        .sum::<f64>()
                        / n,
                    max_ns: job
                        .dirs
                        .iter()
                        .filter_map(|d| lat_of(d).map(|l| l.2))
                        .fold(0.0, f64::max) as u64,
                    p50_ns: pct(50.0),
                    p90_ns: pct(90.0),
                    p99_ns: pct(99.0),
                    p99_9_ns: pct(99.9),
                    p99_99_ns: pct(99.99),
                }
            } else {
                Latency::default()
            },
            ..crate::moved(
                (bytes_read, ops_read),
                (bytes_written, ops_written),
                seconds,
                job.dirs.iter().map(|d| d.bytes_per_sec).sum(),
                job.dirs.iter().map(|d| d.iops).sum(),
            )
        };
        let mut missing = vec![Figure::FirstDone, Figure::WorkerSpread];
        if !(have_lat && have_pct) {
            missing.push(Figure::Latency);
            notes.push("the report has no latency percentiles for every direction: latency not measured".into());
        }
        if job.usr_pct.is_none() || job.sys_pct.is_none() {
            missing.push(Figure::Cpu);
        }
        result.mark_not_measured(&missing);
        let started = crate::ctime_rfc3339(&job.date);
        runs.push(origin.run(
            &host,
            format!("fio {}", job.name),
            format!("fio ({version}) job '{}', imported from {}", job.name, origin.path),
            json!({
                "imported_from": origin.path,
                "format": "fio normal",
                "fio_version": version,
                "line": job.line,
                "jobs": job.jobs,
                "text": text,
                "time": if started.is_some() { "fio's report date, taken as UTC" } else { "not in the file: the time of the import" },
            }),
            started.unwrap_or_else(crate::now),
            format!("imported from fio {version}'s normal output: fio does not record the machine"),
            vec![Phase {
                seq: 0,
                kind: PhaseName::from_name(&rw),
                params: PhaseParams::Imported(ImportedParams {
                    tool: format!("fio {version}"),
                    bs,
                    workers: Some(job.jobs),
                    notes,
                    ..ImportedParams::default()
                }),
                result,
                cache_flattered: false,
            }],
        ));
    }
    Ok(runs)
}
