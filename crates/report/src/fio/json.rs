//! A stored run as fio's JSON document (`fio --output-format=json`, fio's stat.c
//! `show_thread_status_json`), for the tools that read fio: fio-plot, Ceph's CBT, a site's
//! scripts. Each storlab phase is a fio job reported as one group (fio's `group_reporting`:
//! a phase's workers are one group), or clone by clone where the job did not ask for
//! group_reporting (clones.rs). The same keys and units as fio — `bw` in KiB/s,
//! `bw_bytes` in bytes/s, `runtime` in ms, latencies in ns, `usr_cpu`/`sys_cpu` in percent of
//! the runtime — and a figure storlab does not measure is left out, never written as 0. Each
//! figure is fio's by fio's definition: a latency's min, max, mean and deviation the I/Os' own
//! (the result's exact moments), its percentiles and json+ bins in fio's buckets (grid.rs),
//! the bw and iops samples whole intervals summed over a group's clones as fio's sum_stat, and
//! under a rate the latencies from each I/O's issue (storlab's open-loop figure beside them).

use serde_json::{json, Map, Value};
use storlab_model::plan::{BackendKind, PhaseKind};
use storlab_model::result::{DiskUtil, Latency, PhaseResult};
use storlab_model::run::{Phase, RunDetail};

use super::grid::FioBins;
use super::FioJsonOptions;
use storlab_fionet::stat::IoStat;
use storlab_model::moments::Moments;
use storlab_workload::fio::GivenOptions;

/// A decoded latency histogram (ns).
type Hist = hdrhistogram::Histogram<u64>;

pub(super) fn decode(bytes: &[u8]) -> Option<Hist> {
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

/// One direction of a phase (fio's `add_ddir_status_json`): its bytes and I/Os, bandwidth
/// and IOPS as fio computes them (over the runtime in whole ms), its latency, and its samples'
/// spread.
fn direction(p: &Phase, write: bool, hist: Option<&Hist>, o: &FioJsonOptions, sync_engine: bool) -> Value {
    let r: &PhaseResult = &p.result;
    let (bytes, ops) = if write {
        (r.bytes_written, r.ops_written)
    } else {
        (r.bytes_read, r.ops_read)
    };
    let runtime_ms = (r.all_done.seconds * 1e3).round() as u64;
    let runt = if ops > 0 { runtime_ms.max(1) } else { 0 };
    let bw_bytes = (1000 * bytes).checked_div(runt).unwrap_or(0);
    let iops = if runt > 0 {
        1000.0 * ops as f64 / runt as f64
    } else {
        0.0
    };
    let mut d = Map::new();
    d.insert("io_bytes".into(), json!(bytes));
    d.insert("io_kbytes".into(), json!(bytes >> 10));
    d.insert("bw_bytes".into(), json!(bw_bytes));
    d.insert("bw".into(), json!(bw_bytes / 1024));
    d.insert("iops".into(), json!(iops));
    d.insert("runtime".into(), json!(runt));
    d.insert("total_ios".into(), json!(ops));
    d.insert("short_ios".into(), json!(0));
    d.insert("drop_ios".into(), json!(0));
    if ops == 0 {
        nothing_moved(&mut d);
        return Value::Object(d);
    }
    if r.not_measured.contains(&storlab_model::result::Figure::Latency) {
        // An imported run whose tool printed no latency: left out.
        return Value::Object(d);
    }
    let dir = usize::from(write);
    let mut lat = latency_json(r, write, hist, o);
    if let Some(issued) = decode(&r.histograms_issued[dir]).filter(|h| !h.is_empty()) {
        // Under a rate fio's lat (and a synchronous engine's clat) counts from each I/O's
        // issue; storlab's own figure, from when it was due, goes under a key of its own.
        let open_loop = std::mem::replace(
            &mut lat,
            histogram_json(&issued, r.moments.as_ref().map(|m| &m.issued[dir]), o),
        );
        d.insert("storlab_open_loop_lat_ns".into(), open_loop);
    }
    if sync_engine {
        // One system call submits and completes: no submission is timed apart (fio's slat
        // of a synchronous engine is empty too), and the call's time is the completion's.
        d.insert("slat_ns".into(), zero_latency());
        d.insert("clat_ns".into(), lat.clone());
    } else if let (Some(slat), Some(clat)) = (
        decode(&r.histograms_slat[dir]).filter(|h| !h.is_empty()),
        decode(&r.histograms_clat[dir]).filter(|h| !h.is_empty()),
    ) {
        // An asynchronous engine's I/O timed at its submission too: fio's slat (without
        // percentiles, as fio's default) and clat (with them).
        let exact = r.moments.as_ref();
        let mut s = histogram_json(&slat, exact.map(|m| &m.slat[dir]), o);
        if let Some(m) = s.as_object_mut() {
            m.remove("percentile");
            m.remove("bins");
        }
        d.insert("slat_ns".into(), s);
        d.insert("clat_ns".into(), histogram_json(&clat, exact.map(|m| &m.clat[dir]), o));
    }
    d.insert("lat_ns".into(), lat);
    sample_figures(&mut d, p, write);
    Value::Object(d)
}

/// fio's trim direction: storlab trims nothing, so fio's zeros are true.
fn trim_nothing() -> Value {
    let mut d = Map::new();
    for k in [
        "io_bytes",
        "io_kbytes",
        "bw_bytes",
        "bw",
        "runtime",
        "total_ios",
        "short_ios",
        "drop_ios",
    ] {
        d.insert(k.into(), json!(0));
    }
    d.insert("iops".into(), json!(0.0));
    nothing_moved(&mut d);
    Value::Object(d)
}

/// A latency no I/O had: fio's object with N = 0.
fn zero_latency() -> Value {
    json!({ "min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0 })
}

/// A direction that moved nothing: fio's zeros are true here.
fn nothing_moved(d: &mut Map<String, Value>) {
    for k in ["slat_ns", "clat_ns", "lat_ns"] {
        d.insert(k.into(), zero_latency());
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
        Some(h) => return histogram_json(h, r.moments.as_ref().map(|m| &m.lat[usize::from(write)]), o),
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

/// A latency from its histogram: min, max, mean, stddev, N (the I/Os' own where their exact
/// figures were kept, `exact`; else the histogram's, rounded to its buckets), the percentiles
/// asked for and, for json+, each bin and its count — both in fio's buckets (grid.rs).
fn histogram_json(h: &Hist, exact: Option<&Moments>, o: &FioJsonOptions) -> Value {
    let mut lat = Map::new();
    match exact.filter(|m| m.n == h.len()) {
        Some(m) => {
            lat.insert("min".into(), json!(m.min));
            lat.insert("max".into(), json!(m.max));
            lat.insert("mean".into(), json!(m.mean));
            lat.insert("stddev".into(), json!(m.stddev()));
        }
        None => {
            lat.insert("min".into(), json!(h.min()));
            lat.insert("max".into(), json!(h.max()));
            lat.insert("mean".into(), json!(h.mean()));
            lat.insert("stddev".into(), json!(h.stdev()));
        }
    }
    lat.insert("N".into(), json!(h.len()));
    let fio = FioBins::of(h);
    let pct: Map<String, Value> = o
        .percentiles
        .iter()
        .map(|q| (key(*q), json!(fio.percentile(*q))))
        .collect();
    lat.insert("percentile".into(), Value::Object(pct));
    if o.plus {
        let bins: Map<String, Value> = fio.bins().map(|(v, n)| (v.to_string(), json!(n))).collect();
        lat.insert("bins".into(), Value::Object(bins));
    }
    Value::Object(lat)
}

/// Bandwidth and IOPS over the interval samples (fio's come from its own samples every
/// bw_avg_time, 500 ms): whole intervals each (the ramp and a last sliver left out, as fio
/// takes none and as the logs write none), each a whole KiB/s and I/O per second as fio's. A
/// job of several clones that kept their own samples sums each clone's figures as fio's
/// group_reporting does (stat.c `sum_stat` with `pure_sum`: min, max, mean, S and samples
/// added); otherwise the phase's samples are one series. Without a whole sample they are fio's
/// zeros over no samples (the counts 0); one sample has no spread (0, as fio says).
fn sample_figures(d: &mut Map<String, Value>, p: &Phase, write: bool) {
    let r = &p.result;
    // The phase's interval where it is known; an import's, the longest of its samples.
    let nominal = match p.plan() {
        Some(pl) => pl.settings.interval.0 as f64 / 1e9,
        None => r.samples.iter().map(|s| s.seconds()).fold(0.0, f64::max),
    };
    let dir = usize::from(write);
    let rates = |rows: &mut dyn Iterator<Item = (bool, f64, [u64; 2], [u64; 2])>| -> (IoStat, IoStat) {
        let (mut bw, mut iops) = (Vec::new(), Vec::new());
        for (ramp, secs, bytes, ops) in rows {
            if ramp || secs <= 0.0 || secs < nominal - 1e-6 {
                continue;
            }
            bw.push((bytes[dir] as f64 / secs / 1024.0).round() as u64);
            iops.push((ops[dir] as f64 / secs).round() as u64);
        }
        (series_of(&bw), series_of(&iops))
    };
    let per_clone = r.workers.len() > 1 && p.plan().is_some_and(|pl| pl.settings.worker_samples);
    let (mut bw, mut iops) = (IoStat::EMPTY, IoStat::EMPTY);
    if per_clone {
        for w in &r.workers {
            let (b, i) = rates(&mut w.samples.iter().map(|s| {
                (
                    s.ramp,
                    s.t_end - s.t_start,
                    [s.bytes_read, s.bytes_written],
                    [s.ops_read, s.ops_written],
                )
            }));
            bw.pure_add(&b);
            iops.pure_add(&i);
        }
    } else {
        (bw, iops) = rates(&mut r.samples.iter().map(|s| {
            (
                s.ramp,
                s.seconds(),
                [s.bytes_read, s.bytes_written],
                [s.ops_read, s.ops_written],
            )
        }));
    }
    write_series(&bw, d, SampleStat::BW);
    write_series(&iops, d, SampleStat::IOPS);
    d.insert("bw_agg".into(), json!(if bw.samples > 0 { 100.0 } else { 0.0 }));
}

/// fio's io_stat of a series of samples (a whole number each): the smallest, the largest, the
/// mean, the sum of squared deviations (S) and how many; fio's empty one for none.
fn series_of(xs: &[u64]) -> IoStat {
    if xs.is_empty() {
        return IoStat::EMPTY;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n;
    IoStat {
        min: xs.iter().copied().min().unwrap_or(0),
        max: xs.iter().copied().max().unwrap_or(0),
        mean,
        s: xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum(),
        samples: xs.len() as u64,
    }
}

/// The series a direction's keys (`stat`) hold; None where it holds no samples.
pub(super) fn read_series(d: &Value, stat: &SampleStat) -> Option<IoStat> {
    let [min, max, mean, dev, samples] = stat.0;
    let n = d[samples].as_u64().filter(|n| *n > 0)?;
    Some(IoStat {
        min: d[min].as_u64().unwrap_or(0),
        max: d[max].as_u64().unwrap_or(0),
        mean: d[mean].as_f64().unwrap_or(0.0),
        s: d[dev].as_f64().unwrap_or(0.0).powi(2) * (n - 1) as f64,
        samples: n,
    })
}

/// A series into a direction's keys: fio's deviation sqrt(S / (samples − 1)), 0 for one
/// sample; fio's zeros where there were none.
fn write_series(st: &IoStat, d: &mut Map<String, Value>, stat: SampleStat) {
    let [min, max, mean, dev, samples] = stat.0;
    let (lo, hi, sd) = match st.samples {
        0 => (0, 0, 0.0),
        1 => (st.min, st.max, 0.0),
        n => (st.min, st.max, (st.s / (n - 1) as f64).sqrt()),
    };
    d.insert(min.into(), json!(lo));
    d.insert(max.into(), json!(hi));
    d.insert(mean.into(), json!(st.mean));
    d.insert(dev.into(), json!(sd));
    d.insert(samples.into(), json!(st.samples));
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
        // fio's stat_calc_lat: a bucket that holds any I/O shows at least 0.01 %.
        let pct = n as f64 * 100.0 / total;
        if n > 0 {
            pct.max(0.01)
        } else {
            0.0
        }
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
pub(super) fn job_options(p: &Phase) -> Map<String, Value> {
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
    let mut disks: Vec<DiskUtil> = Vec::new();
    let groups = super::clones::groups(run, &o.reporting);
    // Each phase's fio group and job name.
    let mut named: Vec<(String, u32)> = Vec::with_capacity(run.phases.len());
    for (i, p) in run.phases.iter().enumerate() {
        let group = groups[i];
        if i == 0 || !p.plan().is_some_and(|pl| pl.together) {
            // A group's phases hold the same disks' counters (they ran at once): once each.
            add_disks(&mut disks, &p.result.disks);
        }
        named.push((job_name(run, i, o), group));
    }
    // A job's clones apart, as fio reports them without group_reporting, and a run of many
    // ranks as fio's client reports its servers (clones.rs).
    let mut jobs: Vec<Value> = Vec::new();
    let mut phase_from = (usize::MAX, 0);
    for e in super::clones::entries(run, &o.reporting) {
        if phase_from.0 != e.phase {
            phase_from = (e.phase, jobs.len());
        }
        let (name, group) = &named[e.phase];
        let mut j = job(&e.view, name, *group, started, o);
        job_options_given(&mut j, o.job_options.get(e.options_of));
        if let Some((w, v)) = e.verified {
            // Each direction from the phase that moved it, over that phase's own runtime.
            j["write"] = direction_of(w, true, o);
            j["read"] = direction_of(v, false, o);
        }
        if let Some(c) = &e.client {
            as_client(&mut j, c, &jobs[phase_from.1..]);
        }
        jobs.push(j);
    }
    share_of_group(&mut jobs);
    let clients = !run.rank_phases.is_empty();
    let mut doc = json!({
        "fio version": version,
        "storlab version": env!("CARGO_PKG_VERSION"),
        "timestamp": started,
        "timestamp_ms": started * 1000,
        // fio's ctime form, as its scripts parse it.
        "time": super::ctime(started as i64),
    });
    // fio writes its global options only where there are some.
    if !o.global_options.is_empty() {
        doc["global options"] = given_object(&o.global_options);
    }
    doc[if clients { "client_stats" } else { "jobs" }] = Value::Array(jobs);
    doc["disk_util"] = Value::Array(disks.iter().map(disk_json).collect());
    doc
}

/// A job's "job options" as its job file or command line gave them (fio writes its own options,
/// by fio's name, the values as written, and no key where the job gave none of its own); left
/// as read back from the plan where they are not known (`given` None: an export).
fn job_options_given(j: &mut Value, given: Option<&GivenOptions>) {
    let Some(given) = given else { return };
    if given.is_empty() {
        if let Some(m) = j.as_object_mut() {
            m.remove("job options");
        }
    } else {
        j["job options"] = given_object(given);
    }
}

/// Options as fio's object of them: each with its value as written, a bare switch left out.
fn given_object(given: &GivenOptions) -> Value {
    Value::Object(
        given
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), json!(v.as_ref()?))))
            .collect(),
    )
}

/// The fio job name of phase `i`: its job file section's (or command line's `--name`), else the
/// one kept with the phase, else its kind.
pub(super) fn job_name(run: &RunDetail, i: usize, o: &FioJsonOptions) -> String {
    let p = &run.phases[i];
    o.job_names
        .get(i)
        .cloned()
        .or_else(|| p.plan().and_then(|pl| pl.name.clone()))
        .unwrap_or_else(|| p.kind.as_str().to_string())
}

/// A job entry as fio's client writes it with a server per host (its client.c): a rank's with
/// its `hostname` and `port` — storlab's ranks have no fio server, so `port` carries the rank,
/// keeping ranks on one host apart as fio's servers on one host are by port —; "All clients"
/// the phase's ranks together (`ranks`: the phase's entries before it), as fio's with its
/// `job_runtime` their sum, no latency target, and the last rank's host and port.
fn as_client(j: &mut Value, client: &super::clones::Client, ranks: &[Value]) {
    match client {
        super::clones::Client::Rank { host, rank } => {
            j["hostname"] = json!(host);
            j["port"] = json!(rank);
        }
        super::clones::Client::All => {
            j["jobname"] = json!("All clients");
            let runtime: u64 = ranks.iter().map(|r| r["job_runtime"].as_u64().unwrap_or(0)).sum();
            j["job_runtime"] = json!(runtime);
            if let Some(m) = j.as_object_mut() {
                for k in [
                    "latency_depth",
                    "latency_target",
                    "latency_percentile",
                    "latency_window",
                ] {
                    m.remove(k);
                }
            }
            for dir in ["read", "write"] {
                for stat in [SampleStat::BW, SampleStat::IOPS] {
                    summed_samples(&mut j[dir], ranks.iter().map(|r| &r[dir]), stat);
                }
            }
            if let Some(last) = ranks.last() {
                j["hostname"] = last["hostname"].clone();
                j["port"] = last["port"].clone();
            }
        }
    }
}

/// The keys of one of fio's sample statistics in a direction: min, max, mean, deviation,
/// samples.
pub(super) struct SampleStat([&'static str; 5]);

impl SampleStat {
    pub(super) const BW: SampleStat = SampleStat(["bw_min", "bw_max", "bw_mean", "bw_dev", "bw_samples"]);
    pub(super) const IOPS: SampleStat =
        SampleStat(["iops_min", "iops_max", "iops_mean", "iops_stddev", "iops_samples"]);
}

/// "All clients"' bandwidth or IOPS samples as fio sums its clients' (see
/// [`IoStat::pure_add`]).
fn summed_samples<'a>(d: &mut Value, clients: impl Iterator<Item = &'a Value>, stat: SampleStat) {
    let mut all = IoStat::EMPTY;
    for c in clients {
        if let Some(one) = read_series(c, &stat) {
            all.pure_add(&one);
        }
    }
    if all.samples == 0 || d.get(stat.0[4]).is_none() {
        return;
    }
    if let Some(m) = d.as_object_mut() {
        write_series(&all, m, stat);
    }
}

/// Adds a group's disk counters to the run's, disk by disk.
fn add_disks(run: &mut Vec<DiskUtil>, group: &[DiskUtil]) {
    // fio's disk_util is the disks under the targets; those beneath them (kept for the bound)
    // are not fio's.
    for d in group.iter().filter(|d| d.under.is_none()) {
        match run.iter_mut().find(|r| r.name == d.name) {
            Some(r) => r.add(d),
            None => run.push(d.clone()),
        }
    }
}

/// One disk as fio's disk_util entry.
fn disk_json(d: &DiskUtil) -> Value {
    json!({
        "name": d.name,
        "read_ios": d.read_ios,
        "write_ios": d.write_ios,
        "read_merges": d.read_merges,
        "write_merges": d.write_merges,
        "read_ticks": d.read_ticks,
        "write_ticks": d.write_ticks,
        "in_queue": d.in_queue,
        "util": d.util(),
    })
}

/// fio's bw_agg: each job's mean sample bandwidth as a share of its group's aggregate (the
/// group's bytes over its longest runtime), percent, at most 100 (fio's
/// convert_agg_kbytes_percent, which takes the mean as a whole number).
fn share_of_group(jobs: &mut [Value]) {
    for dir in ["read", "write"] {
        let mut agg: std::collections::BTreeMap<u64, (u64, u64)> = Default::default();
        // fio's "All clients" holds its clients' bytes again: not counted twice.
        for j in jobs.iter().filter(|j| j["jobname"] != "All clients") {
            let e = agg.entry(j["groupid"].as_u64().unwrap_or(0)).or_default();
            e.0 += j[dir]["io_bytes"].as_u64().unwrap_or(0);
            e.1 = e.1.max(j[dir]["runtime"].as_u64().unwrap_or(0));
        }
        for j in jobs.iter_mut() {
            let Some(mean) = j[dir]["bw_mean"].as_f64() else {
                continue;
            };
            let (io, run) = agg[&j["groupid"].as_u64().unwrap_or(0)];
            let agg_kib = (1000 * io).checked_div(run).map_or(0.0, |b| b as f64 / 1024.0);
            let per = if agg_kib > 1.0 {
                (mean.trunc() * 100.0 / agg_kib).min(100.0)
            } else {
                100.0
            };
            j[dir]["bw_agg"] = json!(per);
        }
    }
}

/// One phase as one of fio's jobs: its name and group, errors gone on past, the latency
/// target, each direction, the flushes, CPU and getrusage's counts, the queue depths, the
/// latency distribution and steady state.
fn job(p: &Phase, name: &str, group: u32, started: u64, o: &FioJsonOptions) -> Value {
    let r = &p.result;
    let mut j = Map::new();
    j.insert("jobname".into(), json!(name));
    j.insert("groupid".into(), json!(group));
    j.insert("job_start".into(), json!(started * 1000));
    errors_and_target(&mut j, p);
    j.insert("eta".into(), json!(0));
    j.insert("elapsed".into(), json!(r.all_done.seconds.round() as u64));
    j.insert("job options".into(), Value::Object(job_options(p)));
    j.insert("read".into(), direction_of(p, false, o));
    j.insert("write".into(), direction_of(p, true, o));
    j.insert("trim".into(), trim_nothing());
    if let Some(sync) = sync_json(r, o) {
        j.insert("sync".into(), sync);
    }
    j.insert("job_runtime".into(), json!((r.all_done.seconds * 1e3).round() as u64));
    if p.plan().is_some_and(|pl| pl.settings.zbd.is_some()) {
        // fio counts its zone resets but writes them only on its text's write line; storlab's
        // JSON keeps them under a key of its own, from which that line is printed.
        let resets: u64 = r.workers.iter().map(|w| w.zone_resets).sum();
        j.insert(ZONE_RESETS.into(), json!(resets));
    }
    usage(&mut j, r);
    if let Some(d) = &r.io_depths {
        depths(&mut j, d, r.ops_read + r.ops_written);
    }
    if let Some(h) = &decode(&r.histogram) {
        for (k, v) in distribution(h) {
            j.insert(k, v);
        }
    }
    if let Some(ss) = steady_state(p) {
        j.insert("steadystate".into(), ss);
    }
    Value::Object(j)
}

/// The key of a job entry's zone resets (storlab's own; fio prints them in its text only).
pub(crate) const ZONE_RESETS: &str = "storlab_zone_resets";

/// One direction of phase `p` as fio's job reports it, from its own histogram.
fn direction_of(p: &Phase, write: bool, o: &FioJsonOptions) -> Value {
    let sync_engine = p.plan().is_some_and(|pl| {
        matches!(
            pl.settings.engine,
            BackendKind::Psync | BackendKind::Pvsync | BackendKind::Mmap | BackendKind::Stdio | BackendKind::Null
        )
    });
    let hist = direction_histogram(&p.result, write);
    direction(p, write, hist.as_ref(), o, sync_engine)
}

/// A direction's histogram, decoded for that direction only: its own where the phase kept it,
/// else the phase's where only that direction moved (runs stored before schema 15 kept no
/// other).
fn direction_histogram(r: &PhaseResult, write: bool) -> Option<Hist> {
    let moved = [r.ops_read > 0, r.ops_written > 0];
    let one_way = !(moved[0] && moved[1]);
    let i = usize::from(write);
    if !moved[i] {
        return None;
    }
    decode(&r.histograms_rw[i])
        .filter(|h| !h.is_empty())
        .or_else(|| one_way.then(|| decode(&r.histogram)).flatten())
}

/// fio's error (the first of those continue_on_error went on past, with their count) and
/// latency target fields: where the search settled, or fio's defaults (no target, every
/// I/O, the job's depth).
fn errors_and_target(j: &mut Map<String, Value>, p: &Phase) {
    let r = &p.result;
    // Blocks that failed their check and were gone on past are fio's EILSEQ errors.
    let bad = r.verify.as_ref().map_or(0, |v| v.bad_blocks);
    let errors = r.errors.clone().or_else(|| {
        (bad > 0).then(|| storlab_model::result::ErrorsReport {
            count: bad,
            first_errno: libc::EILSEQ,
            first: String::new(),
        })
    });
    j.insert("error".into(), json!(errors.as_ref().map_or(0, |e| e.first_errno)));
    // Errors gone on past (continue_on_error) are counted; a job that ended at its error
    // counts none, as fio's.
    if let Some(e) = errors.as_ref().filter(|e| e.count > 0) {
        j.insert("total_err".into(), json!(e.count));
        j.insert("first_error".into(), json!(e.first_errno));
    }
    // One depth per job in fio's stat.c; storlab's phase gives its first worker's.
    let (depth, target, percentile, window) = match (&r.latency_search, p.plan()) {
        (Some(ls), _) => (
            ls.depths.first().copied().unwrap_or(0),
            ls.target_ns,
            ls.percentile,
            ls.window_ns / 1000,
        ),
        (None, Some(pl)) => (pl.settings.iodepth, 0, 100.0, 0),
        (None, None) => return,
    };
    j.insert("latency_depth".into(), json!(depth));
    j.insert("latency_target".into(), json!(target));
    j.insert("latency_percentile".into(), json!(percentile));
    j.insert("latency_window".into(), json!(window));
}

/// fio's sync section: the flushes and their latency, where the phase could flush (a
/// storlab run; an import has no section).
fn sync_json(r: &PhaseResult, o: &FioJsonOptions) -> Option<Value> {
    if r.workers.is_empty() {
        return None;
    }
    let lat = decode(&r.histogram_sync)
        .filter(|h| !h.is_empty())
        .map_or_else(zero_latency, |h| {
            histogram_json(&h, r.moments.as_ref().map(|m| &m.sync), o)
        });
    Some(json!({ "total_ios": lat["N"].clone(), "lat_ns": lat }))
}

/// fio's usr_cpu and sys_cpu (percent of the runtime) and getrusage's ctx, majf and minf
/// summed over the workers, where they were measured.
fn usage(j: &mut Map<String, Value>, r: &PhaseResult) {
    if r.not_measured.contains(&storlab_model::result::Figure::Cpu) {
        return;
    }
    let secs = r.all_done.seconds.max(1e-9);
    j.insert("usr_cpu".into(), json!(r.cpu_user / secs * 100.0));
    j.insert("sys_cpu".into(), json!(r.cpu_sys / secs * 100.0));
    if r.workers.is_empty() {
        return;
    }
    for (k, f) in [
        ("ctx", (|w| w.ctx) as fn(&storlab_model::result::WorkerResult) -> u64),
        ("majf", |w| w.majf),
        ("minf", |w| w.minf),
    ] {
        j.insert(k.into(), json!(r.workers.iter().map(f).sum::<u64>()));
    }
}

/// fio's iodepth_level, iodepth_submit and iodepth_complete: each bucket's share, percent
/// (fio's stat_calc_dist: a bucket that holds any shows at least 0.1 %).
fn depths(j: &mut Map<String, Value>, d: &storlab_model::result::IoDepths, ios: u64) {
    let dist = |counts: &[u64; 7], total: u64, names: [&str; 7]| -> Value {
        let m: Map<String, Value> = counts
            .iter()
            .zip(names)
            .map(|(c, n)| {
                let pct = if total == 0 {
                    0.0
                } else if *c > 0 {
                    (*c as f64 * 100.0 / total as f64).max(0.1)
                } else {
                    0.0
                };
                (n.to_string(), json!(pct))
            })
            .collect();
        Value::Object(m)
    };
    let level = ["1", "2", "4", "8", "16", "32", ">=64"];
    let calls = ["0", "4", "8", "16", "32", "64", ">=64"];
    j.insert("iodepth_level".into(), dist(&d.depth, ios, level));
    j.insert("iodepth_submit".into(), dist(&d.submit, d.submit.iter().sum(), calls));
    j.insert(
        "iodepth_complete".into(),
        dist(&d.complete, d.complete.iter().sum(), calls),
    );
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
    // fio's form: the criterion, its limit and its unit ("iops_slope:0.100000%").
    let pct = if c.percent { "%" } else { "" };
    ss.insert("ss".into(), json!(format!("{}:{:.6}{pct}", c.name(), c.limit)));
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
        for mut j in super::job_entries(doc) {
            let name = j["jobname"].as_str().unwrap_or("").to_string();
            j["jobname"] = json!(format!("run {} {name}", run.run.id));
            jobs.push(j);
        }
    }
    // Runs of many ranks among them: their entries are jobs of the one document.
    if let Some(m) = first.as_object_mut() {
        m.remove("client_stats");
    }
    first["jobs"] = Value::Array(jobs);
    first
}
