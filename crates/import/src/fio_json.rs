//! fio's JSON output (`--output-format=json` or `json+`, alone or inside fio's other text) as
//! storlab runs.
//!
//! The layout is fio's (stat.c `show_thread_status_json`, client.c for client/server mode):
//! a document with `jobs` (one object per job, or per group with group_reporting), or in
//! client/server mode `client_stats` (one object per job per client, each with `hostname`,
//! plus an aggregate "All clients" entry that is skipped: its figures are the clients'). Each
//! job has `read`, `write` and `trim` objects with `io_bytes`, `bw_bytes`, `iops`, `runtime`
//! (ms), `total_ios`, and `lat_ns` / `clat_ns` with `percentile` maps keyed "99.000000"; json+
//! adds `bins`, which are used to merge the directions of a mixed job exactly.
//!
//! One fio job becomes one storlab run of kind `import` with one phase named after fio's `rw`.
//! Every run keeps the whole original file's text in its job record.

use serde_json::{json, Map, Value};
use storlab_model::result::{Figure, Latency, PhaseResult};
use storlab_model::run::{ImportedParams, ImportedRun, Phase, PhaseName, PhaseParams};

use crate::{line_of, ImportError, Origin};

/// Every fio JSON document in `text` with the byte offset where it starts: fio's own text may
/// stand before a document (the job banner, warnings, "note:" lines) and after it
/// (`--output-format=json,normal`), and several runs' documents may follow one another. A
/// document starts at a line whose first character is `{`; one that is cut short or is not
/// fio's is an error naming its line.
pub fn documents(origin: &Origin, text: &str) -> Result<Vec<(Value, usize)>, ImportError> {
    let mut docs = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        if !text[at..line_end].trim_start().starts_with('{') {
            at = line_end;
            continue;
        }
        let start = at + text[at..].find('{').unwrap_or(0);
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(doc)) => {
                if doc.get("fio version").is_none() {
                    return Err(origin.error(format!(
                        "the JSON document at line {} is not fio's output (it has no \"fio version\")",
                        line_of(text, start)
                    )));
                }
                at = start + stream.byte_offset();
                docs.push((doc, start));
            }
            Some(Err(e)) if e.is_eof() => {
                return Err(origin.error(format!(
                    "the JSON document at line {} is cut short at its line {} (is the file complete?)",
                    line_of(text, start),
                    e.line()
                )))
            }
            Some(Err(e)) => {
                return Err(origin.error(format!(
                    "the JSON document at line {} does not read: {e}",
                    line_of(text, start)
                )))
            }
            None => break,
        }
    }
    Ok(docs)
}

/// Reads one fio JSON document (at byte `at` of the file's `text`) into runs ready to store.
/// Each job's run and its client (`hostname:port` in client/server output, else empty).
pub fn parse_doc(
    origin: &Origin,
    text: &str,
    doc: &Value,
    at: usize,
) -> Result<Vec<(ImportedRun, String)>, ImportError> {
    let line = line_of(text, at);
    let not_fio = |what: String| origin.error(format!("the fio JSON document at line {line}: {what}"));
    let version = doc
        .get("fio version")
        .and_then(Value::as_str)
        .ok_or_else(|| not_fio("no \"fio version\" field".into()))?;
    // "fio-3.33" → "3.33", as the other formats name it.
    let version = version.strip_prefix("fio-").unwrap_or(version).to_string();
    let jobs = doc
        .get("jobs")
        .or_else(|| doc.get("client_stats"))
        .and_then(Value::as_array)
        .ok_or_else(|| not_fio("neither \"jobs\" nor \"client_stats\" is a list".into()))?;
    let started = doc
        .get("timestamp")
        .and_then(Value::as_u64)
        .map(|t| {
            humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(t)).to_string()
        })
        .unwrap_or_else(|| origin.when_undated().0);
    let host = origin.host_or("fio");
    let mut runs = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let name = job
            .get("jobname")
            .and_then(Value::as_str)
            .ok_or_else(|| not_fio(format!("job {} has no \"jobname\"", i + 1)))?;
        if name == "All clients" {
            continue;
        }
        let job_host = job.get("hostname").and_then(Value::as_str).unwrap_or(&host);
        let opts = job.get("job options").cloned().unwrap_or(Value::Object(Map::new()));
        let global = match doc.get("global options") {
            Some(Value::Array(a)) => a.first().cloned().unwrap_or(Value::Null),
            Some(v) => v.clone(),
            None => Value::Null,
        };
        let opt = |k: &str| {
            opts.get(k)
                .or_else(|| global.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let rw = opt("rw").or_else(|| opt("readwrite")).unwrap_or_else(|| "read".into());
        let (mut result, notes) = result_of(job).map_err(|w| not_fio(format!("job '{name}': {w}")))?;
        // fio's disk_util is the run's: every job holds it, as `storlab fio` stores it.
        result.disks = disks_of(doc, num(job, "job_runtime"));
        let mut options = Map::new();
        options.insert("fio job options".into(), opts.clone());
        if !global.is_null() {
            options.insert("fio global options".into(), global.clone());
        }
        let client = match job.get("port") {
            Some(port) => format!("{job_host}:{port}"),
            None => String::new(),
        };
        let run = origin.run(
            job_host,
            format!("fio {name}"),
            format!("fio ({version}) job '{name}', imported from {}", origin.path),
            json!({
                "imported_from": origin.path,
                "format": "fio json",
                "fio_version": version,
                "document_line": line,
                "job_index": i,
                "text": text,
            }),
            started.clone(),
            format!("imported from fio {version}: fio does not record the machine"),
            vec![Phase {
                seq: 0,
                kind: PhaseName::from_name(&rw),
                params: PhaseParams::Imported(ImportedParams {
                    tool: format!("fio {version}"),
                    bs: opt("bs")
                        .and_then(|b| b.parse::<storlab_units::Size>().ok())
                        .map(|b| b.bytes()),
                    options: Value::Object(options),
                    notes,
                    ..ImportedParams::default()
                }),
                result,
                cache_flattered: false,
            }],
        );
        runs.push((run, client));
    }
    if runs.is_empty() {
        return Err(not_fio("it holds no jobs".into()));
    }
    Ok(runs)
}

fn num(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

/// The percentile `p` (e.g. "99.000000") of a direction's latency, in ns.
fn percentile(dir: &Value, p: &str) -> Option<f64> {
    ["lat_ns", "clat_ns"]
        .iter()
        .find_map(|k| dir.get(*k)?.get("percentile")?.get(p)?.as_f64())
}

/// Merges json+ latency bins (ns → count) of several directions and reads a percentile.
fn merged_percentile(dirs: &[&Value], q: f64) -> Option<f64> {
    let mut bins: Vec<(f64, f64)> = Vec::new();
    for d in dirs {
        let b = ["lat_ns", "clat_ns"]
            .iter()
            .find_map(|k| d.get(*k)?.get("bins")?.as_object())?;
        for (k, v) in b {
            bins.push((k.parse().ok()?, v.as_f64()?));
        }
    }
    if bins.is_empty() {
        return None;
    }
    bins.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = bins.iter().map(|b| b.1).sum();
    let mut seen = 0.0;
    for (ns, n) in &bins {
        seen += n;
        if seen >= q * total {
            return Some(*ns);
        }
    }
    bins.last().map(|b| b.0)
}

/// fio's `disk_util` list as the disks' counters over `runtime_ms`: fio prints each disk's
/// I/Os, merges, ticks, time in queue and its utilisation, from which its busy time follows
/// (util × the run's time); sectors it does not print.
fn disks_of(doc: &Value, runtime_ms: f64) -> Vec<storlab_model::result::DiskUtil> {
    let Some(list) = doc.get("disk_util").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|d| {
            let n = |k: &str| {
                d.get(k)
                    .and_then(Value::as_f64)
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .unwrap_or(0.0) as u64
            };
            let util = d.get("util").and_then(Value::as_f64).filter(|v| v.is_finite())?;
            Some(storlab_model::result::DiskUtil {
                name: d.get("name")?.as_str()?.to_string(),
                read_ios: n("read_ios"),
                write_ios: n("write_ios"),
                read_merges: n("read_merges"),
                write_merges: n("write_merges"),
                read_ticks: n("read_ticks"),
                write_ticks: n("write_ticks"),
                in_queue: n("in_queue"),
                io_ticks: (util.clamp(0.0, 100.0) / 100.0 * runtime_ms) as u64,
                elapsed_ms: runtime_ms,
                ..Default::default()
            })
        })
        .collect()
}

/// A fio job's figures as a phase result, with notes on what fio reports differently.
fn result_of(job: &Value) -> Result<(PhaseResult, Vec<String>), String> {
    let dir = |k: &str| {
        job.get(k)
            .filter(|d| num(d, "total_ios") > 0.0 || num(d, "io_bytes") > 0.0)
    };
    let (read, write, trim) = (dir("read"), dir("write"), dir("trim"));
    if job.get("read").is_none() && job.get("write").is_none() {
        return Err("no \"read\" or \"write\" section".into());
    }
    let active: Vec<&Value> = [read, write, trim].into_iter().flatten().collect();
    let seconds = active.iter().map(|d| num(d, "runtime")).fold(0.0, f64::max) / 1e3;
    let of = |d: Option<&Value>, k: &str| d.map(|d| num(d, k)).unwrap_or(0.0);
    let bytes = (of(read, "io_bytes"), of(write, "io_bytes") + of(trim, "io_bytes"));
    let ops = (of(read, "total_ios"), of(write, "total_ios") + of(trim, "total_ios"));
    let mut notes =
        vec!["fio reports one figure per job (or group): no first done, no spread between its workers".to_string()];
    if active.len() > 1 && merged_percentile(&active, 0.5).is_none() {
        notes.push("percentiles are the larger of the directions' (the file has no json+ bins to merge)".into());
    }
    if let Some(e) = job.get("error").filter(|e| e.as_i64() != Some(0) && !e.is_null()) {
        notes.push(format!("fio reported error {e} for this job"));
    }
    let cpu = |k: &str| num(job, k) / 100.0 * num(job, "job_runtime") / 1e3;
    Ok((
        PhaseResult {
            cpu_user: cpu("usr_cpu"),
            cpu_sys: cpu("sys_cpu"),
            latency: latency_of(&active, (ops.0 + ops.1) as u64),
            not_measured: vec![Figure::FirstDone, Figure::WorkerSpread],
            errors: errors_of(job),
            ..crate::moved(
                (bytes.0, ops.0),
                (bytes.1, ops.1),
                seconds,
                active.iter().map(|d| num(d, "bw_bytes")).sum(),
                active.iter().map(|d| num(d, "iops")).sum(),
            )
        },
        notes,
    ))
}

/// The job's latency: fio's total latency (lat_ns: submission to completion) as storlab
/// measures it, the mean weighted by each direction's I/Os; percentiles exact from json+ bins
/// when the job mixed directions, else fio's own.
fn latency_of(active: &[&Value], count: u64) -> Latency {
    let lat = |d: &Value, k: &str| {
        d.get("lat_ns")
            .and_then(|l| l.get(k))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    let n: f64 = active.iter().map(|d| num(d, "total_ios")).sum::<f64>().max(1.0);
    let lat_min = active
        .iter()
        .map(|d| lat(d, "min"))
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let pick = |key: &str, q: f64| -> u64 {
        if active.len() > 1 {
            if let Some(v) = merged_percentile(active, q) {
                return v as u64;
            }
        }
        active.iter().filter_map(|d| percentile(d, key)).fold(0.0, f64::max) as u64
    };
    Latency {
        count,
        min_ns: if lat_min.is_finite() { lat_min as u64 } else { 0 },
        mean_ns: active.iter().map(|d| lat(d, "mean") * num(d, "total_ios")).sum::<f64>() / n,
        max_ns: active.iter().map(|d| lat(d, "max")).fold(0.0, f64::max) as u64,
        p50_ns: pick("50.000000", 0.5),
        p90_ns: pick("90.000000", 0.9),
        p99_ns: pick("99.000000", 0.99),
        p99_9_ns: pick("99.900000", 0.999),
        p99_99_ns: pick("99.990000", 0.9999),
    }
}

/// continue_on_error: the errors the job went on past.
fn errors_of(job: &Value) -> Option<storlab_model::result::ErrorsReport> {
    let count = job.get("total_err").and_then(Value::as_u64).filter(|n| *n > 0)?;
    let errno = job.get("first_error").and_then(Value::as_i64).unwrap_or(0) as i32;
    Some(storlab_model::result::ErrorsReport {
        count,
        first_errno: errno,
        first: format!(
            "{} (errno {errno}, as fio reported it)",
            std::io::Error::from_raw_os_error(errno)
        ),
    })
}
