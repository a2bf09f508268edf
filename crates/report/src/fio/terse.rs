//! fio's terse line (`--minimal`, `--output-format=terse`, version 3) of a stored run, made
//! from its JSON document.

use serde_json::Value;
use storlab_model::run::RunDetail;

use super::{document, FioJsonOptions};

/// fio's terse line, version 3 (`--minimal`, `--output-format=terse`; fio's HOWTO "Terse
/// output"): one line per job entry (a phase, or each clone of a job without group_reporting),
/// `;`-separated, with fio's units (KiB, KiB/s, µs), each disk under the targets at its end as
/// fio ends every line. The submission latency is fio's: an asynchronous engine's, and zeros for
/// a synchronous engine or a direction that moved nothing (none timed apart, as in fio's own
/// line). Fields storlab did not measure are empty, never 0: context switches, page faults and
/// the I/O depth distribution of a run stored before storlab counted them, or of an import, and
/// an import's submission latency. The completion-latency fields hold fio's clat where the
/// engine timed the submission apart, else the whole latency (a synchronous engine's one call),
/// with the line's only percentiles.
pub fn terse(run: &RunDetail, o: &FioJsonOptions) -> String {
    let doc = document(run, o);
    super::job_entries(&doc)
        .iter()
        .map(|j| terse_line(j, &o.percentiles, &doc["disk_util"]))
        .collect()
}

/// The terse line of one job entry of fio's JSON (`disks` its document's `disk_util`), its
/// percentiles those of `percentiles`; storlab's client writes a server's entries so.
pub fn terse_line(j: &Value, percentiles: &[f64], disks: &Value) -> String {
    let mut f: Vec<String> = vec![
        "3".into(),
        storlab_workload::fio::FIO_VERSION.to_string(),
        j["jobname"].as_str().unwrap_or("").to_string(),
        j["groupid"].to_string(),
        "0".into(),
    ];
    for d in ["read", "write"] {
        terse_direction(&mut f, &j[d], percentiles);
    }
    match (j["usr_cpu"].as_f64(), j["sys_cpu"].as_f64()) {
        (Some(u), Some(s)) => {
            f.push(format!("{u:.6}%"));
            f.push(format!("{s:.6}%"));
        }
        _ => f.extend(std::iter::repeat_n(String::new(), 2)),
    }
    // Context switches, major and minor faults, and the I/O depth distribution, where they
    // were measured (an import of a tool that printed none has them empty).
    for k in ["ctx", "majf", "minf"] {
        f.push(j[k].as_u64().map_or(String::new(), |v| v.to_string()));
    }
    for k in ["1", "2", "4", "8", "16", "32", ">=64"] {
        f.push(
            j["iodepth_level"][k]
                .as_f64()
                .map_or(String::new(), |v| format!("{v:.1}%")),
        );
    }
    terse_latency_buckets(&mut f, j);
    disk_fields(&mut f, disks);
    f.join(";") + "\n"
}

/// Each disk under the run's targets, as fio ends every terse line with them: name, read and
/// write I/Os, merges and ticks, time in queue, utilisation.
fn disk_fields(f: &mut Vec<String>, disks: &Value) {
    for d in disks.as_array().into_iter().flatten() {
        f.push(d["name"].as_str().unwrap_or("").to_string());
        for k in [
            "read_ios",
            "write_ios",
            "read_merges",
            "write_merges",
            "read_ticks",
            "write_ticks",
            "in_queue",
        ] {
            f.push(d[k].as_u64().unwrap_or(0).to_string());
        }
        f.push(format!("{:.2}%", d["util"].as_f64().unwrap_or(0.0)));
    }
}

/// A direction's 41 fields of a terse line: KiB, KiB/s, IOPS, runtime, submission latency,
/// completion latency, 20 percentiles (`percentiles`' keys with 0 where the direction moved
/// nothing, as fio), total latency, bandwidth.
fn terse_direction(f: &mut Vec<String>, x: &Value, percentiles: &[f64]) {
    let n = |k: &str| x[k].as_f64().unwrap_or(0.0);
    f.push(format!("{}", x["io_bytes"].as_u64().unwrap_or(0) >> 10));
    f.push(format!("{}", x["bw"].as_u64().unwrap_or(0)));
    // fio's IOPS here are whole, truncated: 1000 × I/Os ÷ the runtime in ms, in integers.
    let (ios, runt) = (x["total_ios"].as_u64(), x["runtime"].as_u64().unwrap_or(0));
    let iops = match ios {
        Some(ios) => (1000 * ios).checked_div(runt).unwrap_or(0),
        // An import that kept only its rate.
        None => n("iops") as u64,
    };
    f.push(iops.to_string());
    f.push(runt.to_string());
    let moved = x["total_ios"].as_u64().unwrap_or(0) > 0;
    // fio's zeros where nothing was timed apart (a synchronous engine, a direction that moved
    // nothing: the JSON's slat_ns says so too); empty for an import that had no slat.
    latency_stats(f, &x["slat_ns"], moved);
    // fio's clat where it was timed apart from the submission, else storlab's whole latency.
    let clat = if x["clat_ns"].is_object() {
        &x["clat_ns"]
    } else {
        &x["lat_ns"]
    };
    latency_stats(f, clat, moved);
    let mut pct: Vec<(f64, String, u64)> = clat["percentile"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, k.clone(), v.as_u64().unwrap_or(0) / 1000)))
                .collect()
        })
        .unwrap_or_default();
    pct.sort_by(|a, b| a.0.total_cmp(&b.0));
    if pct.is_empty() && !moved {
        pct = percentiles.iter().map(|p| (*p, format!("{p:.6}"), 0)).collect();
    }
    for i in 0..20 {
        f.push(match pct.get(i) {
            Some((_, k, v)) => format!("{k}%={v}"),
            None => "0%=0".into(),
        });
    }
    latency_stats(f, &x["lat_ns"], moved);
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

/// A latency's min, max, mean and standard deviation in µs (empty fields where it was not
/// measured).
fn latency_stats(f: &mut Vec<String>, lat: &Value, moved: bool) {
    if !lat.is_object() {
        f.extend(std::iter::repeat_n(String::new(), 4));
        return;
    }
    let us = |k: &str| lat[k].as_f64().unwrap_or(0.0) / 1e3;
    f.push(format!("{}", us("min") as u64));
    f.push(format!("{}", us("max") as u64));
    f.push(format!("{:.6}", us("mean")));
    f.push(if lat.get("stddev").is_some() || !moved {
        format!("{:.6}", us("stddev"))
    } else {
        String::new()
    });
}

/// The latency distribution's fields: µs buckets (the nanosecond ones folded into the first,
/// as fio's lat_2us does) and ms buckets.
fn terse_latency_buckets(f: &mut Vec<String>, j: &Value) {
    // fio's "%3.2f%%": two decimals.
    let bucket = |k: &str, b: &str| j[k][b].as_f64().map_or(String::new(), |v| format!("{v:.2}%"));
    for b in ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"] {
        let v = if b == "2" {
            let ns: f64 = j["latency_ns"]
                .as_object()
                .map(|m| m.values().filter_map(Value::as_f64).sum())
                .unwrap_or(0.0);
            j["latency_us"]["2"]
                .as_f64()
                .map_or(String::new(), |v| format!("{:.2}%", v + ns))
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
