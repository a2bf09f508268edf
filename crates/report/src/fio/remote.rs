//! What fio's client makes of a server's figures (`storlab fio --client`): each `thread_stat` a
//! server sent as fio's JSON job entry (stat.c `show_thread_status_json` and
//! `add_ddir_status_json`: rates over each direction's runtime, latencies from the io_stat
//! series, percentiles and json+ bins from the buckets, distributions as shares of their
//! counts), the entries of every host summed as fio's client sums them into "All clients"
//! (stat.c `sum_thread_stats`: latencies merged as one series, bw and iops samples added as
//! fio's pure sum, counts added), and the text blocks made from those entries by text.rs.

use serde_json::{json, Map, Value};
use storlab_fionet::stat::{GroupRunStats, IoStat, ThreadStat, CLAT, DIRS, LAT, PLAT_NR, SLAT};

use super::grid::{idx_to_val, FioBins};

/// The directions of a thread_stat's entry, as fio names them.
const DIR_NAMES: [&str; DIRS] = ["read", "write", "trim"];

/// A server's thread_stat as fio's JSON job entry; `options` its job options as the server sent
/// them, `plus` json+'s bins.
pub fn job_json(ts: &ThreadStat, gs: &GroupRunStats, options: &[(String, String)], plus: bool) -> Value {
    let mut root = Map::new();
    root.insert("jobname".into(), json!(ts.name));
    root.insert("groupid".into(), json!(ts.groupid));
    root.insert("error".into(), json!(ts.error));
    if !options.is_empty() {
        // A switch given bare comes without a value, and fio's JSON leaves it out.
        let o: Map<String, Value> = options
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        root.insert("job options".into(), Value::Object(o));
    }
    for (d, name) in DIR_NAMES.iter().enumerate() {
        root.insert((*name).into(), direction(ts, gs, d, plus));
    }
    let sync_pct = ts.lat_percentiles | ts.clat_percentiles;
    root.insert(
        "sync".into(),
        json!({
            "total_ios": ts.total_io_u[3],
            "lat_ns": lat_json(ts, sync_pct, &ts.sync_stat, &ts.io_u_sync_plat, plus),
        }),
    );
    usage(&mut root, ts);
    if ts.nr_zone_resets != 0 {
        root.insert(super::json::ZONE_RESETS.into(), json!(ts.nr_zone_resets));
    }
    distributions(&mut root, ts);
    if ts.continue_on_error != 0 {
        root.insert("total_err".into(), json!(ts.total_err_count));
        root.insert("first_error".into(), json!(ts.first_error));
    }
    if ts.latency_depth != 0 {
        root.insert("latency_depth".into(), json!(ts.latency_depth));
        root.insert("latency_target".into(), json!(ts.latency_target));
        root.insert("latency_percentile".into(), json!(ts.latency_percentile));
        root.insert("latency_window".into(), json!(ts.latency_window));
    }
    if !ts.description.is_empty() {
        root.insert("desc".into(), json!(ts.description));
    }
    Value::Object(root)
}

/// One direction (fio's add_ddir_status_json).
fn direction(ts: &ThreadStat, gs: &GroupRunStats, d: usize, plus: bool) -> Value {
    let runt = ts.runtime[d];
    let bw_bytes = (1000 * ts.io_bytes[d]).checked_div(runt).unwrap_or(0);
    let iops = if runt > 0 {
        1000.0 * ts.total_io_u[d] as f64 / runt as f64
    } else {
        0.0
    };
    let mut o = Map::new();
    o.insert("io_bytes".into(), json!(ts.io_bytes[d]));
    o.insert("io_kbytes".into(), json!(ts.io_bytes[d] >> 10));
    o.insert("bw_bytes".into(), json!(bw_bytes));
    o.insert("bw".into(), json!(bw_bytes / 1024));
    o.insert("iops".into(), json!(iops));
    o.insert("runtime".into(), json!(runt));
    o.insert("total_ios".into(), json!(ts.total_io_u[d]));
    o.insert("short_ios".into(), json!(ts.short_io_u[d]));
    o.insert("drop_ios".into(), json!(ts.drop_io_u[d]));
    let kinds = [
        ("slat_ns", ts.slat_percentiles, &ts.slat_stat[d], SLAT),
        ("clat_ns", ts.clat_percentiles, &ts.clat_stat[d], CLAT),
        ("lat_ns", ts.lat_percentiles, &ts.lat_stat[d], LAT),
    ];
    for (key, pct, stat, kind) in kinds {
        o.insert(key.into(), lat_json(ts, pct, stat, ts.plat(kind, d), plus));
    }
    let (bw_min, bw_max, bw_mean, bw_dev) = spread(&ts.bw_stat[d]);
    let p_of_agg = if ts.bw_stat[d].samples > 0 {
        share_of_agg(gs.agg[d], bw_mean)
    } else {
        0.0
    };
    o.insert("bw_min".into(), json!(bw_min));
    o.insert("bw_max".into(), json!(bw_max));
    o.insert("bw_agg".into(), json!(p_of_agg));
    o.insert("bw_mean".into(), json!(bw_mean));
    o.insert("bw_dev".into(), json!(bw_dev));
    o.insert("bw_samples".into(), json!(ts.bw_stat[d].samples));
    let (iops_min, iops_max, iops_mean, iops_dev) = spread(&ts.iops_stat[d]);
    o.insert("iops_min".into(), json!(iops_min));
    o.insert("iops_max".into(), json!(iops_max));
    o.insert("iops_mean".into(), json!(iops_mean));
    o.insert("iops_stddev".into(), json!(iops_dev));
    o.insert("iops_samples".into(), json!(ts.iops_stat[d].samples));
    Value::Object(o)
}

/// fio's calc_lat: min, max, mean and deviation (sqrt(S / (n − 1)), 0 for one sample), zeros
/// for no samples.
fn spread(s: &IoStat) -> (u64, u64, f64, f64) {
    if s.samples == 0 {
        return (0, 0, 0.0, 0.0);
    }
    let dev = if s.samples > 1 {
        (s.s / (s.samples - 1) as f64).sqrt()
    } else {
        0.0
    };
    (s.min, s.max, s.mean, dev)
}

/// fio's convert_agg_kbytes_percent: a job's mean bandwidth as a share of its group's
/// aggregate (KiB/s; fio passes the mean as an int).
fn share_of_agg(agg: u64, mean: f64) -> f64 {
    if agg <= 1024 {
        return 100.0;
    }
    let mean = mean as i32 as f64;
    (mean * 100.0 / (agg as f64 / 1024.0)).min(100.0)
}

/// A latency (fio's add_ddir_lat_json): its spread, the percentiles asked for from its
/// buckets, and for json+ each bucket that holds any.
fn lat_json(ts: &ThreadStat, percentiles: u32, stat: &IoStat, plat: &[u64], plus: bool) -> Value {
    let (min, max, mean, dev) = spread(stat);
    let mut o = Map::new();
    o.insert("min".into(), json!(min));
    o.insert("max".into(), json!(max));
    o.insert("mean".into(), json!(mean));
    o.insert("stddev".into(), json!(dev));
    o.insert("N".into(), json!(stat.samples));
    if percentiles == 0 || stat.samples == 0 {
        return Value::Object(o);
    }
    let bins = FioBins::of_counts(plat.to_vec(), stat.samples);
    let mut list: Vec<f64> = ts.percentile_list.iter().copied().take_while(|p| *p != 0.0).collect();
    list.sort_by(f64::total_cmp);
    let pct: Map<String, Value> = list
        .iter()
        .map(|q| (format!("{q:.6}"), json!(bins.percentile(*q))))
        .collect();
    o.insert("percentile".into(), Value::Object(pct));
    if plus {
        let b: Map<String, Value> = plat
            .iter()
            .enumerate()
            .take(PLAT_NR)
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| (idx_to_val(i).to_string(), json!(n)))
            .collect();
        o.insert("bins".into(), Value::Object(b));
    }
    Value::Object(o)
}

/// CPU (percent of the job's runtime) and getrusage's counts.
fn usage(root: &mut Map<String, Value>, ts: &ThreadStat) {
    let (usr, sys) = if ts.total_run_time > 0 {
        let runt = ts.total_run_time as f64;
        (ts.usr_time as f64 * 100.0 / runt, ts.sys_time as f64 * 100.0 / runt)
    } else {
        (0.0, 0.0)
    };
    root.insert("job_runtime".into(), json!(ts.total_run_time));
    root.insert("usr_cpu".into(), json!(usr));
    root.insert("sys_cpu".into(), json!(sys));
    root.insert("ctx".into(), json!(ts.ctx));
    root.insert("majf".into(), json!(ts.majf));
    root.insert("minf".into(), json!(ts.minf));
}

/// The depth and latency distributions as fio's shares (stat_calc_dist: at least 0.1 % for a
/// bucket that holds any; stat_calc_lat: at least 0.01 %).
fn distributions(root: &mut Map<String, Value>, ts: &ThreadStat) {
    let ios: u64 = ts.total_io_u[..DIRS].iter().sum();
    let shares = |counts: &[u64], total: u64, floor: f64, names: &[&str]| -> Value {
        let m: Map<String, Value> = counts
            .iter()
            .zip(names)
            .map(|(c, n)| {
                let pct = match total {
                    0 => 0.0,
                    t if *c > 0 => (*c as f64 / t as f64 * 100.0).max(floor),
                    t => *c as f64 / t as f64 * 100.0,
                };
                (n.to_string(), json!(pct))
            })
            .collect();
        Value::Object(m)
    };
    let level = ["1", "2", "4", "8", "16", "32", ">=64"];
    let calls = ["0", "4", "8", "16", "32", "64", ">=64"];
    root.insert("iodepth_level".into(), shares(&ts.io_u_map, ios, 0.1, &level));
    root.insert(
        "iodepth_submit".into(),
        shares(&ts.io_u_submit, ts.total_submit, 0.1, &calls),
    );
    root.insert(
        "iodepth_complete".into(),
        shares(&ts.io_u_complete, ts.total_complete, 0.1, &calls),
    );
    let short = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
    let ms = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    root.insert("latency_ns".into(), shares(&ts.io_u_lat_n, ios, 0.01, &short));
    root.insert("latency_us".into(), shares(&ts.io_u_lat_u, ios, 0.01, &short));
    root.insert("latency_ms".into(), shares(&ts.io_u_lat_m, ios, 0.01, &ms));
}

/// Adds `src` to `dst` as fio's client adds each server's entry to "All clients" (stat.c
/// `sum_thread_stats`).
pub fn sum_into(dst: &mut ThreadStat, src: &ThreadStat) {
    for d in 0..DIRS {
        dst.clat_stat[d].merge(&src.clat_stat[d]);
        dst.slat_stat[d].merge(&src.slat_stat[d]);
        dst.lat_stat[d].merge(&src.lat_stat[d]);
        dst.bw_stat[d].pure_add(&src.bw_stat[d]);
        dst.iops_stat[d].pure_add(&src.iops_stat[d]);
        dst.io_bytes[d] += src.io_bytes[d];
        dst.runtime[d] = dst.runtime[d].max(src.runtime[d]);
        dst.total_io_u[d] += src.total_io_u[d];
        dst.short_io_u[d] += src.short_io_u[d];
        dst.drop_io_u[d] += src.drop_io_u[d];
    }
    dst.sync_stat.merge(&src.sync_stat);
    dst.total_io_u[3] += src.total_io_u[3];
    for (a, b) in [
        (&mut dst.usr_time, src.usr_time),
        (&mut dst.sys_time, src.sys_time),
        (&mut dst.ctx, src.ctx),
        (&mut dst.majf, src.majf),
        (&mut dst.minf, src.minf),
        (&mut dst.total_run_time, src.total_run_time),
        (&mut dst.total_submit, src.total_submit),
        (&mut dst.total_complete, src.total_complete),
        (&mut dst.nr_zone_resets, src.nr_zone_resets),
        (&mut dst.cachehit, src.cachehit),
        (&mut dst.cachemiss, src.cachemiss),
    ] {
        *a += b;
    }
    let pairs: [(&mut [u64], &[u64]); 8] = [
        (&mut dst.io_u_map, &src.io_u_map),
        (&mut dst.io_u_submit, &src.io_u_submit),
        (&mut dst.io_u_complete, &src.io_u_complete),
        (&mut dst.io_u_lat_n, &src.io_u_lat_n),
        (&mut dst.io_u_lat_u, &src.io_u_lat_u),
        (&mut dst.io_u_lat_m, &src.io_u_lat_m),
        (&mut dst.io_u_plat, &src.io_u_plat),
        (&mut dst.io_u_sync_plat, &src.io_u_sync_plat),
    ];
    for (a, b) in pairs {
        a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
    }
}

/// Adds a server's group to the clients' (fio's sum_group_stats).
pub fn sum_group_into(dst: &mut GroupRunStats, src: &GroupRunStats) {
    for d in 0..DIRS {
        dst.max_run[d] = dst.max_run[d].max(src.max_run[d]);
        if dst.min_run[d] != 0 && dst.min_run[d] > src.min_run[d] {
            dst.min_run[d] = src.min_run[d];
        }
        dst.max_bw[d] = dst.max_bw[d].max(src.max_bw[d]);
        if dst.min_bw[d] != 0 && dst.min_bw[d] > src.min_bw[d] {
            dst.min_bw[d] = src.min_bw[d];
        }
        dst.iobytes[d] += src.iobytes[d];
        dst.agg[d] += src.agg[d];
    }
}

/// fio's "All clients" before any server's entry is added (init_thread_stat: no percentiles
/// asked, so fio's sum shows none).
pub fn all_clients() -> (ThreadStat, GroupRunStats) {
    let ts = ThreadStat {
        name: "All clients".into(),
        clat_percentiles: 0,
        ..Default::default()
    };
    let gs = GroupRunStats {
        min_run: [u64::MAX; DIRS],
        min_bw: [u64::MAX; DIRS],
        ..Default::default()
    };
    (ts, gs)
}
