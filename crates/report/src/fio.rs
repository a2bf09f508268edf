//! A stored run as fio's JSON document (`fio --output-format=json`, fio's stat.c
//! `show_thread_status_json`), for the tools that read fio: fio-plot, Ceph's CBT, a site's
//! scripts. Each storlab phase is a fio job reported as one group (fio's `group_reporting`:
//! a phase's workers are one group). The same keys and units as fio — `bw` in KiB/s,
//! `bw_bytes` in bytes/s, `runtime` in ms, latencies in ns, `usr_cpu`/`sys_cpu` in percent of
//! the runtime — and a figure storlab does not measure is left out, never written as 0:
//! storlab measures each I/O from its submission to its completion, which is fio's `lat_ns`
//! (and, for a synchronous engine, where submission and completion are one system call, also
//! fio's `clat_ns`); it keeps no submission latency (`slat_ns`) and no disk utilisation
//! (`disk_util`). Percentiles per direction come from the phase's histogram when the phase
//! moved one direction only; a mixed phase keeps five per direction (50, 90, 99, 99.9, 99.99).

use serde_json::{json, Map, Value};
use storlab_model::plan::{BackendKind, PhaseKind};
use storlab_model::result::{Latency, PhaseResult};
use storlab_model::run::{Phase, RunDetail};

/// fio's default `percentile_list`.
pub const FIO_PERCENTILES: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
];

/// How to write the document.
#[derive(Debug, Clone)]
pub struct FioJsonOptions {
    /// The percentiles of each direction's latency (fio's `percentile_list`).
    pub percentiles: Vec<f64>,
    /// fio's json+: each latency bin and its count as well.
    pub plus: bool,
    /// The jobs' names in phase order (a fio job file's sections); the phase's kind otherwise.
    pub job_names: Vec<String>,
}

impl Default for FioJsonOptions {
    fn default() -> FioJsonOptions {
        FioJsonOptions {
            percentiles: FIO_PERCENTILES.to_vec(),
            plus: false,
            job_names: Vec::new(),
        }
    }
}

impl FioJsonOptions {
    /// As `storlab fio`'s command line asks: its jobs' names, its `percentile_list`.
    pub fn of_command(c: &storlab_workload::fio::cli::FioCommand) -> FioJsonOptions {
        FioJsonOptions {
            job_names: c.job_names.clone(),
            percentiles: c.percentiles.clone().unwrap_or_else(|| FIO_PERCENTILES.to_vec()),
            plus: false,
        }
    }

    /// As `results export --format` asks: None for a format that is not fio's (fio-json,
    /// fio-json+, fio-terse), else the options and whether the form is the terse line.
    pub fn of_export(format: &str) -> Option<(FioJsonOptions, bool)> {
        let (plus, terse) = match format {
            "fio-json" => (false, false),
            "fio-json+" => (true, false),
            "fio-terse" => (false, true),
            _ => return None,
        };
        Some((
            FioJsonOptions {
                plus,
                ..Default::default()
            },
            terse,
        ))
    }
}

/// The runs as `results export` writes them in fio's forms: one JSON document of them all, or
/// a terse line each.
pub fn export(runs: &[RunDetail], o: &FioJsonOptions, terse: bool) -> Result<String, serde_json::Error> {
    Ok(match terse {
        true => runs.iter().map(|r| self::terse(r, o)).collect(),
        false => serde_json::to_string_pretty(&document_of(runs, o))? + "\n",
    })
}

/// A decoded latency histogram (ns).
type Hist = hdrhistogram::Histogram<u64>;

fn decode(bytes: &[u8]) -> Option<Hist> {
    if bytes.is_empty() {
        return None;
    }
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .ok()
}

/// fio's percentile key: "99.900000".
fn key(p: f64) -> String {
    format!("{p:.6}")
}

/// Mean and standard deviation (the population's, as fio's) of `xs`.
fn mean_dev(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// One direction of a phase (fio's `add_ddir_status_json`).
fn direction(p: &Phase, write: bool, hist: Option<&Hist>, o: &FioJsonOptions, sync_engine: bool) -> Value {
    let r: &PhaseResult = &p.result;
    let (bytes, ops) = if write {
        (r.bytes_written, r.ops_written)
    } else {
        (r.bytes_read, r.ops_read)
    };
    let secs = r.all_done.seconds;
    let runtime_ms = (secs * 1e3).round() as u64;
    let bw_bytes = if secs > 0.0 { bytes as f64 / secs } else { 0.0 };
    let iops = if secs > 0.0 { ops as f64 / secs } else { 0.0 };
    let mut d = Map::new();
    d.insert("io_bytes".into(), json!(bytes));
    d.insert("io_kbytes".into(), json!(bytes / 1024));
    d.insert("bw_bytes".into(), json!(bw_bytes.round() as u64));
    d.insert("bw".into(), json!((bw_bytes / 1024.0).round() as u64));
    d.insert("iops".into(), json!(iops));
    d.insert("runtime".into(), json!(if ops > 0 { runtime_ms } else { 0 }));
    d.insert("total_ios".into(), json!(ops));
    d.insert("short_ios".into(), json!(0));
    d.insert("drop_ios".into(), json!(0));
    if ops == 0 {
        nothing_moved(&mut d, sync_engine);
        return Value::Object(d);
    }
    if r.not_measured.contains(&storlab_model::result::Figure::Latency) {
        // An imported run whose tool printed no latency: left out.
        return Value::Object(d);
    }
    let lat = latency_json(r, write, hist, o);
    if sync_engine {
        d.insert("clat_ns".into(), lat.clone());
    }
    d.insert("lat_ns".into(), lat);
    sample_figures(&mut d, r, write);
    Value::Object(d)
}

/// A direction that moved nothing: fio's zeros are true here.
fn nothing_moved(d: &mut Map<String, Value>, sync_engine: bool) {
    let zero = json!({ "min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0 });
    d.insert("lat_ns".into(), zero.clone());
    if sync_engine {
        d.insert("clat_ns".into(), zero);
    }
    for k in ["bw_min", "bw_max", "bw_samples", "iops_samples"] {
        d.insert(k.into(), json!(0));
    }
    for k in [
        "bw_agg",
        "bw_mean",
        "bw_dev",
        "iops_min",
        "iops_max",
        "iops_mean",
        "iops_stddev",
    ] {
        d.insert(k.into(), json!(0.0));
    }
}

/// A direction's latency: from its own histogram when the phase moved data one way (with
/// json+'s bins), else the figures kept of each direction of a mixed phase.
fn latency_json(r: &PhaseResult, write: bool, hist: Option<&Hist>, o: &FioJsonOptions) -> Value {
    let mut lat = Map::new();
    match hist {
        Some(h) => {
            lat.insert("min".into(), json!(h.min()));
            lat.insert("max".into(), json!(h.max()));
            lat.insert("mean".into(), json!(h.mean()));
            lat.insert("stddev".into(), json!(h.stdev()));
            lat.insert("N".into(), json!(h.len()));
            let pct: Map<String, Value> = o
                .percentiles
                .iter()
                .map(|q| (key(*q), json!(h.value_at_quantile(q / 100.0))))
                .collect();
            lat.insert("percentile".into(), Value::Object(pct));
            if o.plus {
                let bins: Map<String, Value> = h
                    .iter_recorded()
                    .map(|v| {
                        (
                            h.highest_equivalent(v.value_iterated_to()).to_string(),
                            json!(v.count_at_value()),
                        )
                    })
                    .collect();
                lat.insert("bins".into(), Value::Object(bins));
            }
        }
        None => {
            let stored: &Latency = if r.ops_read > 0 && r.ops_written > 0 {
                if write {
                    &r.latency_write
                } else {
                    &r.latency_read
                }
            } else {
                &r.latency
            };
            lat.insert("min".into(), json!(stored.min_ns));
            lat.insert("max".into(), json!(stored.max_ns));
            lat.insert("mean".into(), json!(stored.mean_ns));
            lat.insert("N".into(), json!(stored.count));
            let kept = [
                (50.0, stored.p50_ns),
                (90.0, stored.p90_ns),
                (99.0, stored.p99_ns),
                (99.9, stored.p99_9_ns),
                (99.99, stored.p99_99_ns),
            ];
            let pct: Map<String, Value> = kept.iter().map(|(q, v)| (key(*q), json!(v))).collect();
            lat.insert("percentile".into(), Value::Object(pct));
        }
    }
    Value::Object(lat)
}

/// Bandwidth and IOPS over the phase's interval samples (fio's come from its own samples
/// every 500 ms): a full interval each, the ramp and a last sliver left out. A spread needs
/// two samples at least: with fewer the figures are left out.
fn sample_figures(d: &mut Map<String, Value>, r: &PhaseResult, write: bool) {
    let nominal = r.samples.iter().map(|s| s.seconds()).fold(0.0, f64::max);
    let samples: Vec<(f64, f64)> = r
        .samples
        .iter()
        .filter(|s| !s.ramp && s.seconds() > 0.0 && s.seconds() >= nominal / 2.0)
        .map(|s| {
            let (b, n) = if write {
                (s.bytes_written, s.ops_written)
            } else {
                (s.bytes_read, s.ops_read)
            };
            (b as f64 / s.seconds() / 1024.0, n as f64 / s.seconds())
        })
        .collect();
    if samples.len() < 2 {
        return;
    }
    let bw: Vec<f64> = samples.iter().map(|s| s.0).collect();
    let io: Vec<f64> = samples.iter().map(|s| s.1).collect();
    let (bm, bd) = mean_dev(&bw);
    let (im, id) = mean_dev(&io);
    let min = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min).round() as u64;
    let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max).round() as u64;
    d.insert("bw_min".into(), json!(min(&bw)));
    d.insert("bw_max".into(), json!(max(&bw)));
    d.insert("bw_agg".into(), json!(100.0));
    d.insert("bw_mean".into(), json!(bm));
    d.insert("bw_dev".into(), json!(bd));
    d.insert("bw_samples".into(), json!(bw.len()));
    d.insert("iops_min".into(), json!(min(&io)));
    d.insert("iops_max".into(), json!(max(&io)));
    d.insert("iops_mean".into(), json!(im));
    d.insert("iops_stddev".into(), json!(id));
    d.insert("iops_samples".into(), json!(io.len()));
}

/// fio's latency distribution (`latency_ns`, `latency_us`, `latency_ms`): the percentage of
/// I/Os whose latency falls under each bound (fio's `lat_nsec`/`lat_usec`/`lat_msec`
/// buckets).
fn distribution(h: &Hist) -> [(String, Value); 3] {
    let total = h.len().max(1) as f64;
    let bounds = [2u64, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let share = |lo: u64, hi: u64| -> f64 {
        let n: u64 = h
            .iter_recorded()
            .filter(|v| {
                let x = h.highest_equivalent(v.value_iterated_to());
                x >= lo && x < hi
            })
            .map(|v| v.count_at_value())
            .sum();
        n as f64 * 100.0 / total
    };
    let row = |unit: u64| -> Map<String, Value> {
        let mut m = Map::new();
        let mut lo = if unit == 1 { 0 } else { unit };
        for b in bounds {
            let hi = b * unit;
            m.insert(b.to_string(), json!(share(lo, hi)));
            lo = hi;
        }
        m
    };
    let mut ms = row(1_000_000);
    ms.insert("2000".into(), json!(share(1_000_000_000, 2_000_000_000)));
    ms.insert(">=2000".into(), json!(share(2_000_000_000, u64::MAX)));
    [
        ("latency_ns".into(), Value::Object(row(1))),
        ("latency_us".into(), Value::Object(row(1000))),
        ("latency_ms".into(), Value::Object(ms)),
    ]
}

/// fio's name of a storlab phase's pattern.
fn rw_of(kind: &str) -> &str {
    match kind {
        "rewrite" => "write",
        "reread" => "read",
        "backread" => "read:-",
        other => other,
    }
}

/// fio's options of a phase storlab ran (the imported phases keep fio's own).
fn job_options(p: &Phase) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("rw".into(), json!(rw_of(p.kind.as_str())));
    if let Some(plan) = p.plan() {
        let s = &plan.settings;
        let bs = match &s.bs {
            storlab_model::plan::BlockSizes::Fixed(b) => b.to_string(),
            mix => mix.min().to_string(),
        };
        m.insert("bs".into(), json!(bs));
        m.insert("iodepth".into(), json!(s.iodepth.to_string()));
        m.insert("numjobs".into(), json!(plan.workers.len().to_string()));
        let engine = match s.engine {
            BackendKind::Stdio => "sync".to_string(),
            e => e.name().to_string(),
        };
        m.insert("ioengine".into(), json!(engine));
        m.insert("direct".into(), json!(if s.direct { "1" } else { "0" }));
        // A worker's bytes (fio's size per job); with several files or their sizes given,
        // the size the job gave, which bounds a pass across them.
        let given = s.size.filter(|_| s.nrfiles > 1 || s.filesize.is_some());
        if let Some(size) = given.or_else(|| plan.workers.first().map(|w| w.total_len())) {
            m.insert("size".into(), json!(size.to_string()));
        }
        if s.nrfiles > 1 {
            m.insert("nrfiles".into(), json!(s.nrfiles.to_string()));
        }
        if let Some(f) = s.filesize {
            let text = if f.low == f.high {
                f.low.to_string()
            } else {
                format!("{}-{}", f.low, f.high)
            };
            m.insert("filesize".into(), json!(text));
        }
        if let Some(r) = s.runtime {
            m.insert("runtime".into(), json!(format!("{}", r.0 / 1_000_000_000)));
            m.insert("time_based".into(), json!("1"));
        }
        if matches!(plan.kind, PhaseKind::Randrw | PhaseKind::Rw) {
            m.insert("rwmixread".into(), json!(s.rwmix.to_string()));
        }
        if let Some(c) = s.steady {
            let limit = if c.percent {
                format!("{}%", c.limit)
            } else {
                c.limit.to_string()
            };
            m.insert("steadystate".into(), json!(format!("{}:{limit}", c.name())));
        }
        if !s.random_map
            && matches!(
                plan.kind,
                PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw
            )
        {
            m.insert("norandommap".into(), json!("1"));
        }
    }
    m
}

/// The run's phases as fio's JSON document.
pub fn document(run: &RunDetail, o: &FioJsonOptions) -> Value {
    let version = storlab_workload::fio::FIO_VERSION;
    let started = humantime::parse_rfc3339_weak(run.run.started_at.trim_end_matches('Z'))
        .ok()
        .or_else(|| humantime::parse_rfc3339(&run.run.started_at).ok())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut jobs = Vec::new();
    let mut group = 0;
    for (i, p) in run.phases.iter().enumerate() {
        // Phases that ran together are one fio group (one stonewall to the next).
        if i > 0 && !p.plan().is_some_and(|pl| pl.together) {
            group += 1;
        }
        let name = o
            .job_names
            .get(i)
            .cloned()
            .or_else(|| p.plan().and_then(|pl| pl.name.clone()))
            .unwrap_or_else(|| p.kind.as_str().to_string());
        jobs.push(job(p, &name, group, started, o));
    }
    json!({
        "fio version": version,
        "storlab version": env!("CARGO_PKG_VERSION"),
        "timestamp": started,
        "timestamp_ms": started * 1000,
        "time": run.run.started_at,
        "global options": {},
        "jobs": jobs,
    })
}

/// One phase as one of fio's jobs: its name and group, errors gone on past, the latency
/// target's search, each direction, CPU, the latency distribution and steady state.
fn job(p: &Phase, name: &str, group: u32, started: u64, o: &FioJsonOptions) -> Value {
    let r = &p.result;
    let hist = decode(&r.histogram);
    let one_way = !(r.ops_read > 0 && r.ops_written > 0);
    let sync_engine = p.plan().is_some_and(|pl| {
        matches!(
            pl.settings.engine,
            BackendKind::Psync | BackendKind::Pvsync | BackendKind::Mmap | BackendKind::Stdio | BackendKind::Null
        )
    });
    let dir_hist = if one_way { hist.as_ref() } else { None };
    let secs = r.all_done.seconds.max(1e-9);
    let mut j = Map::new();
    j.insert("jobname".into(), json!(name));
    j.insert("groupid".into(), json!(group));
    j.insert("job_start".into(), json!(started * 1000));
    // fio's continue_on_error: the job's error is the first it went on past, with the count
    // and the first one's errno.
    j.insert("error".into(), json!(r.errors.as_ref().map_or(0, |e| e.first_errno)));
    if let Some(e) = &r.errors {
        j.insert("total_err".into(), json!(e.count));
        j.insert("first_error".into(), json!(e.first_errno));
    }
    // fio's latency_target: where the search settled (fio's stat.c, one depth per job;
    // storlab's phase gives its first worker's).
    if let Some(ls) = &r.latency_search {
        j.insert("latency_depth".into(), json!(ls.depths.first().copied().unwrap_or(0)));
        j.insert("latency_target".into(), json!(ls.target_ns));
        j.insert("latency_target_ns".into(), json!(ls.target_ns));
        j.insert("latency_percentile".into(), json!(ls.percentile));
        j.insert("latency_window".into(), json!(ls.window_ns / 1000));
    }
    j.insert("eta".into(), json!(0));
    j.insert("elapsed".into(), json!(r.all_done.seconds.round() as u64));
    j.insert("job options".into(), Value::Object(job_options(p)));
    j.insert(
        "read".into(),
        direction(p, false, dir_hist.filter(|_| r.ops_read > 0), o, sync_engine),
    );
    j.insert(
        "write".into(),
        direction(p, true, dir_hist.filter(|_| r.ops_written > 0), o, sync_engine),
    );
    j.insert(
        "trim".into(),
        json!({ "io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "runtime": 0, "total_ios": 0, "short_ios": 0, "drop_ios": 0 }),
    );
    j.insert("job_runtime".into(), json!((r.all_done.seconds * 1e3).round() as u64));
    if !r.not_measured.contains(&storlab_model::result::Figure::Cpu) {
        j.insert("usr_cpu".into(), json!(r.cpu_user / secs * 100.0));
        j.insert("sys_cpu".into(), json!(r.cpu_sys / secs * 100.0));
    }
    if let Some(h) = &hist {
        for (k, v) in distribution(h) {
            j.insert(k, v);
        }
    }
    if let Some(ss) = steady_state(p) {
        j.insert("steadystate".into(), ss);
    }
    Value::Object(j)
}

/// fio's steadystate section of a phase that judged it: the criterion, whether it was
/// attained, and the window's figures.
fn steady_state(p: &Phase) -> Option<Value> {
    let st = p.result.steady.as_ref()?;
    let pl = p.plan()?;
    let c = pl.settings.steady?;
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let limit = if c.percent {
        format!("{}%", c.limit)
    } else {
        c.limit.to_string()
    };
    let mut ss = Map::new();
    ss.insert("ss".into(), json!(c.name()));
    ss.insert("duration".into(), json!(pl.settings.steady_window.0 / 1_000_000_000));
    ss.insert("attained".into(), json!(u8::from(st.attained)));
    ss.insert("limit".into(), json!(limit));
    if let Some(v) = st.criterion {
        ss.insert(
            "criterion".into(),
            json!(if c.percent {
                format!("{v:.6}%")
            } else {
                format!("{v:.6}")
            }),
        );
        ss.insert((if c.slope { "slope" } else { "max_deviation" }).into(), json!(v));
    }
    ss.insert(
        "data".into(),
        json!({
            "bw_mean": mean(&st.bw) / 1024.0,
            "iops_mean": mean(&st.iops),
            "bw": st.bw.iter().map(|b| (b / 1024.0).round() as u64).collect::<Vec<_>>(),
            "iops": st.iops.iter().map(|i| i.round() as u64).collect::<Vec<_>>(),
        }),
    );
    Some(Value::Object(ss))
}

/// Several runs as one fio document: every run's jobs, named after their run when there are
/// several (fio's readers expect one document per file).
pub fn document_of(runs: &[RunDetail], o: &FioJsonOptions) -> Value {
    let mut docs: Vec<Value> = runs.iter().map(|r| document(r, o)).collect();
    if docs.len() == 1 {
        return docs.remove(0);
    }
    let mut first = docs.first().cloned().unwrap_or_else(|| json!({}));
    let mut jobs = Vec::new();
    for (run, doc) in runs.iter().zip(&docs) {
        for mut j in doc["jobs"].as_array().cloned().unwrap_or_default() {
            let name = j["jobname"].as_str().unwrap_or("").to_string();
            j["jobname"] = json!(format!("run {} {name}", run.run.id));
            jobs.push(j);
        }
    }
    first["jobs"] = Value::Array(jobs);
    first
}

/// fio's terse line, version 3 (`--minimal`, `--output-format=terse`; fio's HOWTO "Terse
/// output"): one line per phase, `;`-separated, with fio's units (KiB, KiB/s, µs). Fields
/// storlab does not measure are empty, never 0: submission latency, context switches and page
/// faults, the I/O depth distribution. storlab's latency (submission to completion) stands in
/// the completion-latency fields, which have the line's only percentiles: for a synchronous
/// engine it is fio's clat; for io_uring it includes the submission, which fio's clat leaves
/// out.
pub fn terse(run: &RunDetail, o: &FioJsonOptions) -> String {
    let doc = document(run, o);
    let mut out = String::new();
    for j in doc["jobs"].as_array().cloned().unwrap_or_default() {
        let mut f: Vec<String> = vec![
            "3".into(),
            doc["fio version"]
                .as_str()
                .unwrap_or(storlab_workload::fio::FIO_VERSION)
                .to_string(),
            j["jobname"].as_str().unwrap_or("").to_string(),
            j["groupid"].to_string(),
            "0".into(),
        ];
        for d in ["read", "write"] {
            terse_direction(&mut f, &j[d]);
        }
        match (j["usr_cpu"].as_f64(), j["sys_cpu"].as_f64()) {
            (Some(u), Some(s)) => {
                f.push(format!("{u:.6}%"));
                f.push(format!("{s:.6}%"));
            }
            _ => f.extend(std::iter::repeat_n(String::new(), 2)),
        }
        f.extend(std::iter::repeat_n(String::new(), 3)); // csw, major and minor faults
        f.extend(std::iter::repeat_n(String::new(), 7)); // the I/O depth distribution
        terse_latency_buckets(&mut f, &j);
        out += &f.join(";");
        out.push('\n');
    }
    out
}

/// A direction's 41 fields of a terse line: KiB, KiB/s, IOPS, runtime, submission latency
/// (not measured), completion latency, 20 percentiles, total latency, bandwidth.
fn terse_direction(f: &mut Vec<String>, x: &Value) {
    let n = |k: &str| x[k].as_f64().unwrap_or(0.0);
    f.push(format!("{}", x["io_bytes"].as_u64().unwrap_or(0) >> 10));
    f.push(format!("{}", x["bw"].as_u64().unwrap_or(0)));
    f.push(format!("{}", n("iops").round() as u64));
    f.push(format!("{}", x["runtime"].as_u64().unwrap_or(0)));
    f.extend(std::iter::repeat_n(String::new(), 4)); // slat: not measured
    let lat = &x["lat_ns"];
    let us = |k: &str| lat[k].as_f64().unwrap_or(0.0) / 1e3;
    let moved = x["total_ios"].as_u64().unwrap_or(0) > 0;
    let stats = |f: &mut Vec<String>| {
        if lat.is_object() {
            f.push(format!("{}", us("min") as u64));
            f.push(format!("{}", us("max") as u64));
            f.push(format!("{:.6}", us("mean")));
            f.push(if lat.get("stddev").is_some() || !moved {
                format!("{:.6}", us("stddev"))
            } else {
                String::new()
            });
        } else {
            f.extend(std::iter::repeat_n(String::new(), 4));
        }
    };
    stats(f);
    let pct: Vec<(String, u64)> = lat["percentile"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0) / 1000))
                .collect()
        })
        .unwrap_or_default();
    for i in 0..20 {
        f.push(match pct.get(i) {
            Some((k, v)) => format!("{k}%={v}"),
            None => "0%=0".into(),
        });
    }
    stats(f);
    if x.get("bw_min").is_some() {
        f.push(format!("{}", x["bw_min"].as_u64().unwrap_or(0)));
        f.push(format!("{}", x["bw_max"].as_u64().unwrap_or(0)));
        f.push(format!("{:.6}%", n("bw_agg")));
        f.push(format!("{:.6}", n("bw_mean")));
        f.push(format!("{:.6}", n("bw_dev")));
    } else {
        f.extend(std::iter::repeat_n(String::new(), 5));
    }
}

/// The latency distribution's fields: µs buckets (the nanosecond ones folded into the first,
/// as fio's lat_2us does) and ms buckets.
fn terse_latency_buckets(f: &mut Vec<String>, j: &Value) {
    let bucket = |k: &str, b: &str| j[k][b].as_f64().map_or(String::new(), |v| format!("{v:.6}%"));
    for b in ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"] {
        let v = if b == "2" {
            let ns: f64 = j["latency_ns"]
                .as_object()
                .map(|m| m.values().filter_map(Value::as_f64).sum())
                .unwrap_or(0.0);
            j["latency_us"]["2"]
                .as_f64()
                .map_or(String::new(), |v| format!("{:.6}%", v + ns))
        } else {
            bucket("latency_us", b)
        };
        f.push(v);
    }
    for b in [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ] {
        f.push(bucket("latency_ms", b));
    }
}

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

/// What `storlab fio` writes in fio's formats for `run`: each of `formats` in order, fio's JSON
/// (json+ with its bins) or terse lines; storlab's own table ("normal") is the binary's.
pub fn outputs(
    run: &RunDetail,
    formats: &[storlab_workload::fio::cli::OutputFormat],
    o: &FioJsonOptions,
) -> Result<String, serde_json::Error> {
    use storlab_workload::fio::cli::OutputFormat;
    let mut out = String::new();
    for f in formats {
        let o = FioJsonOptions {
            plus: *f == OutputFormat::JsonPlus,
            ..o.clone()
        };
        match f {
            OutputFormat::Normal => {}
            OutputFormat::Terse => out += &terse(run, &o),
            OutputFormat::Json | OutputFormat::JsonPlus => {
                out += &(serde_json::to_string_pretty(&document(run, &o))? + "\n")
            }
        }
    }
    Ok(out)
}

/// fio's log files that a run's phases asked for (`phase_logs`, by phase: the log and the
/// file name's prefix): each file's name, `PREFIX_bw.log`, and its text.
pub fn log_files(run: &RunDetail, phase_logs: &[Vec<(String, String)>]) -> Vec<(std::path::PathBuf, String)> {
    run.phases
        .iter()
        .zip(phase_logs)
        .flat_map(|(phase, logs)| {
            logs.iter()
                .map(|(what, prefix)| (format!("{prefix}_{what}.log").into(), log_file(phase, what)))
        })
        .collect()
}
