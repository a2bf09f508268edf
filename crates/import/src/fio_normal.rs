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
use storlab_model::run::{ImportedParams, ImportedRun, PhaseName};

use crate::fio_figures::{DirFigures, JobFigures, RunFacts};
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
    let banner = banner(text);
    let jobs = read_jobs(origin, text)?;
    if jobs.is_empty() {
        return Err(origin.error("no job reports (\"name: (groupid=0, jobs=1): err= 0: ...\") in fio's normal output"));
    }
    let version = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("fio-"))
        .unwrap_or("unknown")
        .to_string();
    let host = origin.host_or("fio");
    jobs.iter()
        .map(|job| job_run(origin, &host, &version, text, &banner, job))
        .collect()
}

/// The banner fio prints first: each job's rw and block size.
fn banner(text: &str) -> BTreeMap<String, (String, Option<u64>)> {
    let mut banner = BTreeMap::new();
    for l in text.lines() {
        let Some((name, rest)) = l.split_once(": (g=") else {
            continue;
        };
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
    banner
}

/// Every job's report, line by line.
fn read_jobs(origin: &Origin, text: &str) -> Result<Vec<Job>, ImportError> {
    let mut jobs: Vec<Job> = Vec::new();
    // Inside a percentiles block: its unit in ns.
    let mut pct_unit: Option<f64> = None;
    for (k, l) in text.lines().enumerate() {
        let line_no = k + 1;
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
        read_line(job, l.trim(), &mut pct_unit)
            .map_err(|what| origin.error(format!("line {line_no}: {what} in fio's normal output")))?;
    }
    Ok(jobs)
}

/// One line of a job's report: a direction's figures, the CPU, a latency line, a percentiles
/// block; Err says what did not read.
fn read_line(job: &mut Job, t: &str, pct_unit: &mut Option<f64>) -> Result<(), String> {
    if t.starts_with("Run status group") {
        // The group summaries say again what the jobs said.
        *pct_unit = None;
        return Ok(());
    }
    if let Some((dir, rest)) = t.split_once(": IOPS=") {
        if matches!(dir, "read" | "write" | "trim") {
            job.dirs.push(direction_line(dir, rest)?);
            *pct_unit = None;
        }
        return Ok(());
    }
    if let Some(rest) = t.strip_prefix("cpu") {
        let p = pairs(rest.trim_start().trim_start_matches(':'));
        job.usr_pct = p.get("usr").and_then(|v| v.trim_end_matches('%').parse().ok());
        job.sys_pct = p.get("sys").and_then(|v| v.trim_end_matches('%').parse().ok());
        return Ok(());
    }
    let Some(dir) = job.dirs.last_mut() else { return Ok(()) };
    latency_line(dir, t)?;
    if let Some(unit) = t
        .strip_prefix("clat percentiles (")
        .or_else(|| t.strip_prefix("lat percentiles ("))
        .and_then(|r| r.strip_suffix("):"))
    {
        *pct_unit = Some(unit_ns(unit).ok_or_else(|| format!("the percentile unit \"{unit}\""))?);
        dir.pct.clear();
        return Ok(());
    }
    match (*pct_unit, t.strip_prefix('|')) {
        (Some(m), Some(rest)) => percentile_row(dir, rest, m),
        (_, None) => {
            *pct_unit = None;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// "515k, BW=2010MiB/s (2108MB/s)(22.1MiB/11msec)": a direction's IOPS, bandwidth, data moved
/// and runtime.
fn direction_line(dir: &str, rest: &str) -> Result<Direction, String> {
    let iops = scaled(rest.split(',').next().unwrap_or("")).ok_or("an IOPS figure that does not read")?;
    let bw = rest
        .split("BW=")
        .nth(1)
        .and_then(|b| b.split_whitespace().next())
        .and_then(|b| b.strip_suffix("/s"))
        .and_then(size)
        .ok_or("a BW= figure that does not read")?;
    let (io, runtime) = rest
        .rsplit_once(")(")
        .and_then(|(_, x)| x.split(')').next())
        .and_then(|x| x.split_once('/'))
        .and_then(|(a, b)| Some((size(a)?, duration(b)?)))
        .ok_or("no (io/runtime) figure after BW=")?;
    Ok(Direction {
        name: dir.to_string(),
        iops,
        bytes_per_sec: bw,
        bytes: io,
        seconds: runtime,
        ..Direction::default()
    })
}

/// "clat (nsec): min=812, max=4025.8k, avg=2607.64, stdev=75621.60" (or "lat (…)"): the
/// direction's completion or total latency.
fn latency_line(dir: &mut Direction, t: &str) -> Result<(), String> {
    for (prefix, total) in [("lat (", true), ("clat (", false)] {
        let Some(rest) = t.strip_prefix(prefix) else { continue };
        let Some((unit, figures)) = rest.split_once("):") else {
            continue;
        };
        if !figures.contains("min=") {
            continue;
        }
        let m = unit_ns(unit).ok_or_else(|| format!("the latency unit \"{unit}\""))?;
        let p = pairs(figures);
        let get = |k: &str| p.get(k).and_then(|v| scaled(v)).map(|v| v * m);
        let f = match (get("min"), get("avg"), get("max")) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Err("a latency line without min, avg and max".into()),
        };
        if total {
            dir.lat = Some(f);
        } else {
            dir.clat = Some(f);
        }
    }
    Ok(())
}

/// " 1.00th=[    852],  5.00th=[    916], 10.00th=[    956],": percentiles in the block's unit.
fn percentile_row(dir: &mut Direction, rest: &str, unit_ns: f64) -> Result<(), String> {
    for item in rest.split("],") {
        let Some((p, v)) = item.split_once("th=[") else {
            continue;
        };
        let v = v.trim().trim_end_matches(']');
        match (p.trim().parse::<f64>(), scaled(v)) {
            (Ok(p), Some(v)) => dir.pct.push((p, v * unit_ns)),
            _ => return Err(format!("a percentile \"{}\" that does not read", item.trim())),
        }
    }
    Ok(())
}

/// What every run from fio's normal text says of its figures.
const NOTES: [&str; 3] = [
    "fio's normal text rounds what it prints (IOPS=515k, io=22.1MiB): the figures are as printed; I/O counts are IOPS × runtime",
    "percentiles are fio's completion latency (clat), the larger of the directions' when several moved data; min, mean and max its total latency (lat)",
    "fio reports one figure per job (or group): no first done, no spread between its workers",
];

/// One job's report as a run, through the step every fio text format shares.
fn job_run(
    origin: &Origin,
    host: &str,
    version: &str,
    text: &str,
    banner: &BTreeMap<String, (String, Option<u64>)>,
    job: &Job,
) -> Result<ImportedRun, ImportError> {
    if job.dirs.is_empty() {
        return Err(origin.error(format!(
            "line {}: fio's report of job '{}' has no read, write or trim figures",
            job.line, job.name
        )));
    }
    let (rw, bs) = banner.get(&job.name).cloned().unwrap_or(("unknown".into(), None));
    let figures = JobFigures {
        dirs: job
            .dirs
            .iter()
            .map(|d| DirFigures {
                read: d.name == "read",
                bytes: d.bytes,
                bytes_per_sec: d.bytes_per_sec,
                iops: d.iops,
                seconds: d.seconds,
                lat: d.lat.or(d.clat),
                pct: d.pct.clone(),
            })
            .collect(),
        cpu_pct: job.usr_pct.zip(job.sys_pct),
    };
    let mut notes: Vec<String> = NOTES.iter().map(|n| n.to_string()).collect();
    if job.error != 0 {
        notes.push(format!("fio reported error {} for this job", job.error));
    }
    let started = crate::ctime_rfc3339(&job.date);
    Ok(figures.run(
        origin,
        host,
        RunFacts {
            job: job.name.clone(),
            version: version.to_string(),
            document: json!({
                "imported_from": origin.path,
                "format": "fio normal",
                "fio_version": version,
                "line": job.line,
                "jobs": job.jobs,
                "text": text,
                "time": if started.is_some() { "fio's report date, taken as UTC".to_string() } else { origin.when_undated().1 },
            }),
            started: started.unwrap_or_else(|| origin.when_undated().0),
            source: format!("imported from fio {version}'s normal output: fio does not record the machine"),
            kind: PhaseName::from_name(&rw),
            params: ImportedParams {
                bs,
                workers: Some(job.jobs),
                notes,
                ..ImportedParams::default()
            },
        },
    ))
}
