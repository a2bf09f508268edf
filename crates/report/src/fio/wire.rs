//! A run's fio job entries as fio's server sends them (`storlab fio --server`): each entry of
//! the run's json+ document (json.rs) as fio's `thread_stat` and its group's
//! `group_run_stats`, so that fio's client prints and sums them as it does a fio server's.
//! The figures are the document's, moved into fio's fields: latencies' min, max, N, mean and
//! S (stddev² × (N − 1)), the json+ bins back into fio's buckets (grid.rs), the bw and iops
//! samples' series, and the distributions' shares as counts over the I/Os they are shares
//! of (a share is count × 100 / total, so the count comes back exact to the nearest whole
//! I/O, and fio's client prints the same share).

use serde_json::Value;
use storlab_fionet::stat::{GroupRunStats, IoStat, ThreadStat, CLAT, DIRS, LAT, PERCENTILES_MAX, SLAT};

use storlab_model::plan::PhasePlan;
use storlab_model::result::{PhaseResult, WorkerResult};
use storlab_model::run::{Phase, PhaseName, PhaseParams, RunDetail};

use super::grid::val_to_idx;
use super::json::{read_series, SampleStat};
use super::FioJsonOptions;

/// fio's directions in a thread_stat, in its order.
const DIR_KEYS: [&str; DIRS] = ["read", "write", "trim"];
/// fio's `N2S_BYTEPERSEC`, the unit_base a fio server sends.
const UNIT_BYTES_PER_SEC: u32 = 4;

/// The run's fio job entries as fio's thread_stats, each with its group's group_run_stats,
/// and each reporting group's group_run_stats (by groupid); `pid` is the serving process's.
pub fn thread_stats(
    run: &RunDetail,
    o: &FioJsonOptions,
    pid: u32,
) -> (Vec<(ThreadStat, GroupRunStats)>, Vec<GroupRunStats>) {
    let plus = FioJsonOptions {
        plus: true,
        ..o.clone()
    };
    let jobs = super::job_entries(&super::document(run, &plus));
    // fio's jobs=N of each entry: the workers it reports.
    let members: Vec<u64> = super::clones::entries(run, &o.reporting)
        .iter()
        .map(|e| e.jobs)
        .collect();
    let percentiles = &o.percentiles;
    let mut groups: Vec<GroupRunStats> = Vec::new();
    let mut stats = Vec::with_capacity(jobs.len());
    for (i, j) in jobs.iter().enumerate() {
        let mut ts = thread_stat(j, percentiles);
        ts.thread_number = i as u32 + 1;
        ts.members = members.get(i).copied().unwrap_or(1) as u32;
        ts.pid = pid;
        let g = ts.groupid as usize;
        if groups.len() <= g {
            groups.resize_with(g + 1, || empty_group(0));
        }
        add_to_group(&mut groups[g], &ts);
        stats.push(ts);
    }
    for (g, rs) in groups.iter_mut().enumerate() {
        rs.groupid = g as u32;
        finish_group(rs);
    }
    let stats = stats
        .into_iter()
        .map(|ts| {
            let rs = groups[ts.groupid as usize];
            (ts, rs)
        })
        .collect();
    (stats, groups)
}

/// One job entry as fio's thread_stat.
fn thread_stat(j: &Value, percentiles: &[f64]) -> ThreadStat {
    let mut ts = ThreadStat {
        name: j["jobname"].as_str().unwrap_or("").to_string(),
        groupid: u(&j["groupid"]) as u32,
        error: u(&j["error"]) as u32,
        first_error: u(&j["first_error"]) as u32,
        total_err_count: u(&j["total_err"]),
        total_run_time: u(&j["job_runtime"]),
        ctx: u(&j["ctx"]),
        minf: u(&j["minf"]),
        majf: u(&j["majf"]),
        clat_percentiles: 1,
        kb_base: 1024,
        unit_base: UNIT_BYTES_PER_SEC,
        sig_figs: 4,
        latency_depth: u(&j["latency_depth"]) as u32,
        latency_target: u(&j["latency_target"]),
        latency_percentile: j["latency_percentile"].as_f64().unwrap_or(100.0),
        latency_window: u(&j["latency_window"]),
        nr_zone_resets: u(&j[super::json::ZONE_RESETS]),
        ..Default::default()
    };
    let cpu_ms = |key: &str| (j[key].as_f64().unwrap_or(0.0) * ts.total_run_time as f64 / 100.0).round() as u64;
    ts.usr_time = cpu_ms("usr_cpu");
    ts.sys_time = cpu_ms("sys_cpu");
    set_percentiles(&mut ts, percentiles);
    for (d, key) in DIR_KEYS.iter().enumerate() {
        direction(&mut ts, d, &j[*key]);
    }
    if let Some(sync) = j.get("sync") {
        ts.total_io_u[3] = u(&sync["total_ios"]);
        ts.sync_stat = io_stat(&sync["lat_ns"]);
        bins_into(&sync["lat_ns"], &mut ts.io_u_sync_plat);
    }
    distributions(&mut ts, j);
    ts
}

/// The percentiles asked for, and fio's precision of them (the most digits after a point).
fn set_percentiles(ts: &mut ThreadStat, percentiles: &[f64]) {
    for (slot, p) in ts
        .percentile_list
        .iter_mut()
        .zip(percentiles.iter().take(PERCENTILES_MAX))
    {
        *slot = *p;
    }
    ts.percentile_precision = percentiles
        .iter()
        .map(|p| {
            let s = format!("{p}");
            s.split_once('.').map_or(0, |(_, frac)| frac.len() as u64)
        })
        .max()
        .unwrap_or(0);
}

/// One direction's counts, runtime, latencies and samples.
fn direction(ts: &mut ThreadStat, d: usize, v: &Value) {
    ts.io_bytes[d] = u(&v["io_bytes"]);
    ts.runtime[d] = u(&v["runtime"]);
    ts.total_io_u[d] = u(&v["total_ios"]);
    ts.short_io_u[d] = u(&v["short_ios"]);
    ts.drop_io_u[d] = u(&v["drop_ios"]);
    ts.slat_stat[d] = io_stat(&v["slat_ns"]);
    ts.clat_stat[d] = io_stat(&v["clat_ns"]);
    ts.lat_stat[d] = io_stat(&v["lat_ns"]);
    for (kind, key) in [(SLAT, "slat_ns"), (CLAT, "clat_ns"), (LAT, "lat_ns")] {
        bins_into(&v[key], ts.plat_mut(kind, d));
    }
    // The series as the document's own reader takes them back (json.rs, "All clients").
    ts.bw_stat[d] = read_series(v, &SampleStat::BW).unwrap_or(IoStat::EMPTY);
    ts.iops_stat[d] = read_series(v, &SampleStat::IOPS).unwrap_or(IoStat::EMPTY);
}

/// A latency object (min, max, mean, stddev, N) as fio's io_stat; fio's empty one (min the
/// largest value) where it has no I/O.
fn io_stat(l: &Value) -> IoStat {
    let n = u(&l["N"]);
    if n == 0 {
        return IoStat::EMPTY;
    }
    let sd = l["stddev"].as_f64().unwrap_or(0.0);
    IoStat {
        max: u(&l["max"]),
        min: u(&l["min"]),
        samples: n,
        mean: l["mean"].as_f64().unwrap_or(0.0),
        s: sd * sd * (n - 1) as f64,
    }
}

/// json+'s bins (each named by its bucket's middle) back into fio's buckets.
fn bins_into(l: &Value, plat: &mut [u64]) {
    let Some(bins) = l["bins"].as_object() else { return };
    for (value, count) in bins {
        if let Ok(v) = value.parse::<u64>() {
            plat[val_to_idx(v)] += u(count);
        }
    }
}

/// The depth and latency distributions' shares as counts over their totals: the I/Os (fio's
/// `ddir_rw_sum(total_io_u)`) for the depth levels and latencies, the submissions and
/// completions for theirs.
fn distributions(ts: &mut ThreadStat, j: &Value) {
    let ios: u64 = ts.total_io_u[..DIRS].iter().sum();
    ts.total_submit = ios;
    ts.total_complete = ios;
    let counts = |m: &Value, keys: &[&str], total: u64, out: &mut [u64]| {
        for (slot, k) in out.iter_mut().zip(keys) {
            *slot = (m[*k].as_f64().unwrap_or(0.0) * total as f64 / 100.0).round() as u64;
        }
    };
    let level = ["1", "2", "4", "8", "16", "32", ">=64"];
    let calls = ["0", "4", "8", "16", "32", "64", ">=64"];
    counts(&j["iodepth_level"], &level, ios, &mut ts.io_u_map);
    counts(&j["iodepth_submit"], &calls, ios, &mut ts.io_u_submit);
    counts(&j["iodepth_complete"], &calls, ios, &mut ts.io_u_complete);
    let short = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
    let ms = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    counts(&j["latency_ns"], &short, ios, &mut ts.io_u_lat_n);
    counts(&j["latency_us"], &short, ios, &mut ts.io_u_lat_u);
    counts(&j["latency_ms"], &ms, ios, &mut ts.io_u_lat_m);
}

/// A group no job has joined: fio's init_group_run_stat (the least values at their largest).
fn empty_group(groupid: u32) -> GroupRunStats {
    GroupRunStats {
        min_run: [u64::MAX; DIRS],
        min_bw: [u64::MAX; DIRS],
        kb_base: 1024,
        unit_base: UNIT_BYTES_PER_SEC,
        sig_figs: 4,
        groupid,
        ..Default::default()
    }
}

/// A job's runtime, bandwidth and bytes into its group (fio's __show_run_stats).
fn add_to_group(rs: &mut GroupRunStats, ts: &ThreadStat) {
    for d in 0..DIRS {
        let runtime = ts.runtime[d];
        if runtime == 0 {
            continue;
        }
        rs.max_run[d] = rs.max_run[d].max(runtime);
        rs.min_run[d] = rs.min_run[d].min(runtime);
        let bw = ts.io_bytes[d] * 1000 / runtime;
        rs.max_bw[d] = rs.max_bw[d].max(bw);
        rs.min_bw[d] = rs.min_bw[d].min(bw);
        rs.iobytes[d] += ts.io_bytes[d];
    }
}

/// The group's aggregate bandwidth over its longest runtime.
fn finish_group(rs: &mut GroupRunStats) {
    for d in 0..DIRS {
        rs.agg[d] = (rs.iobytes[d] * 1000).checked_div(rs.max_run[d]).unwrap_or(0);
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Each of the run's fio job entries' "job options" as given, in the order given (fio's client
/// writes them in the order its server sends them); read back from the plan where not known.
pub fn entry_options(run: &RunDetail, o: &FioJsonOptions) -> Vec<storlab_workload::fio::GivenOptions> {
    super::clones::entries(run, &o.reporting)
        .iter()
        .map(|e| match o.job_options.get(e.options_of) {
            Some(given) => given.clone(),
            None => super::json::job_options(&e.view)
                .into_iter()
                .map(|(k, v)| (k, v.as_str().map(str::to_string)))
                .collect(),
        })
        .collect()
}

/// How many job entries (fio's "stat outputs") the planned phases will report: what fio's server
/// tells its client as soon as it has read a job (START), before anything runs, and by which the
/// client knows when it has every host's entries to sum. Each phase is taken as planned, each
/// worker keeping its own figures, and counted as a stored run's entries are (clones.rs).
pub fn planned_entries(plans: &[PhasePlan], reporting: &[storlab_workload::fio::Reporting]) -> usize {
    let phases: Vec<Phase> = plans
        .iter()
        .enumerate()
        .map(|(i, pl)| Phase {
            seq: i as u32 + 1,
            kind: PhaseName::Kind(pl.kind),
            params: PhaseParams::Plan(pl.clone()),
            result: PhaseResult {
                workers: (0..pl.workers.len())
                    .map(|_| WorkerResult {
                        own: Some(Box::default()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            cache_flattered: false,
        })
        .collect();
    let planned = super::clones::Ran {
        phases: &phases,
        rank_phases: &[],
    };
    super::clones::entries_in(planned, reporting).len()
}
