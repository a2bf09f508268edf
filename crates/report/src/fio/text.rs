//! fio's normal text output (`--output-format=normal`, fio's default) of a stored run: the
//! job lines, `fio-3.x`, `Starting N processes`, each job's block (fio's stat.c
//! `show_thread_status_normal`: the direction lines, slat/clat/lat, clat percentiles, bw and
//! iops samples, the latency distribution, the sync latencies, cpu, IO depths, submit,
//! complete, issued rwts, latency), `Run status group N (all jobs):` and `Disk stats
//! (read/write):`. Every figure is read from the run's fio JSON document (json.rs), so the
//! two say the same; this file only lays them out as fio does (its widths, its units, its
//! `num2str` rounding).

use serde_json::Value;
use storlab_model::run::RunDetail;
use storlab_workload::fio::Reporting;

use super::FioJsonOptions;

/// What the text says besides the run's figures.
#[derive(Debug, Clone, Default)]
pub struct FioTextOptions {
    /// The process id on each job's line (fio's pid of the job; storlab's workers are threads
    /// of this process).
    pub pid: u32,
    /// The time on each job's line, seconds since the epoch (fio prints when it reported).
    pub time: i64,
}

/// fio's `sig_figs` default: four significant figures in sizes, rates and IOPS.
const SIG_FIGS: usize = 4;

/// The run as fio's normal output: what fio prints as its jobs start, then its report.
pub fn normal(run: &RunDetail, o: &FioJsonOptions, t: &FioTextOptions) -> String {
    let doc = super::document(run, o);
    starting(run, o) + &report(run, &doc, &o.reporting, t)
}

/// What fio prints as its jobs start: each job's line, fio's version, `Starting N
/// processes`, and the files laid out.
pub fn starting(run: &RunDetail, o: &FioJsonOptions) -> String {
    // Each job once, as fio starts it: its clones, its ranks' parts, and the jobs a group's
    // entry reports together are each their own here.
    let entries = super::clones::entries(run, &[]);
    let groups = super::clones::groups(run, &o.reporting);
    let mut firsts: Vec<usize> = entries.iter().map(|e| e.phase).collect();
    firsts.dedup();
    let names: Vec<String> = (0..run.phases.len())
        .map(|i| super::json::job_name(run, i, o))
        .collect();
    let mut out = String::new();
    for &i in &firsts {
        out += &job_line(&run.phases[i], &names[i], groups[i]);
    }
    out += &format!("{}\n", storlab_workload::fio::FIO_VERSION);
    // Every worker of every rank; a sum of them ("All clients") is none.
    let processes: u64 = entries
        .iter()
        .filter(|e| e.client != Some(super::clones::Client::All))
        .map(|e| e.jobs)
        .sum();
    out += &format!(
        "Starting {processes} process{}\n",
        if processes == 1 { "" } else { "es" }
    );
    let mut made = std::collections::BTreeSet::new();
    for &i in &firsts {
        out += &layout_line(&run.phases[i], &names[i], &mut made);
    }
    out
}

/// fio's report after the run: each job's block, each group's lines, the disks'.
pub fn report(run: &RunDetail, doc: &Value, reporting: &[Reporting], t: &FioTextOptions) -> String {
    let jobs = super::job_entries(doc);
    let mut out = "\n".to_string();
    let when = super::ctime(t.time) + "\n";
    let entries = super::clones::entries(run, reporting);
    for (k, j) in jobs.iter().enumerate() {
        // fio's jobs=N: the job's clones in one entry, or 1 for a clone reported apart.
        let members = entries.get(k).map_or_else(|| job_count(j), |e| e.jobs);
        out += &job_block(j, members, t.pid, &when);
    }
    let mut groups: Vec<u64> = jobs.iter().filter_map(|j| j["groupid"].as_u64()).collect();
    groups.dedup();
    for g in groups {
        // fio's "All clients" holds its clients' I/O again: not summed twice.
        let members: Vec<&Value> = jobs
            .iter()
            .filter(|j| j["groupid"].as_u64() == Some(g) && j["jobname"] != "All clients")
            .collect();
        out += &group_lines(g, &members);
    }
    out += &disk_lines(&doc["disk_util"]);
    out
}

/// fio's client's block of one server's entry `j` (fio's show_thread_status_normal):
/// `members` the jobs it stands for, `pid` the server's, printed at `time`.
pub fn entry_block(j: &Value, members: u64, pid: u32, time: i64) -> String {
    job_block(j, members, pid, &(super::ctime(time) + "\n"))
}

/// fio's `Run status group N (all jobs):` lines of group `group`'s entries.
pub fn group_block(group: u64, jobs: &[&Value]) -> String {
    group_lines(group, jobs)
}

/// How many of fio's jobs a phase stands for (its numjobs).
fn job_count(j: &Value) -> u64 {
    j["job options"]["numjobs"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// fio's line for a job as it starts: `a: (g=0): rw=randrw, bs=(R) 4096B-4096B, (W) …,
/// ioengine=psync, iodepth=1`, and `...` for its clones — the job's settings as it runs them,
/// wherever the job file gave them.
fn job_line(phase: &storlab_model::run::Phase, name: &str, group: u32) -> String {
    let opt = Value::Object(super::json::job_options(phase));
    let (lo, hi) = phase
        .plan()
        .map_or((0, 0), |p| (p.settings.bs.min(), p.settings.bs.max()));
    let bs = format!(
        "{}-{}",
        num2str(lo, SIG_FIGS, true, "B"),
        num2str(hi, SIG_FIGS, true, "B")
    );
    let mut s = format!(
        "{name}: (g={group}): rw={}, bs=(R) {bs}, (W) {bs}, (T) {bs}, ioengine={}, iodepth={}\n",
        opt["rw"].as_str().unwrap_or(""),
        opt["ioengine"].as_str().unwrap_or("psync"),
        opt["iodepth"].as_str().unwrap_or("1"),
    );
    if phase.plan().is_some_and(|p| p.workers.len() > 1) {
        s += "...\n";
    }
    s
}

/// fio's `Laying out IO file` line, where the phase made its files: laid them out before it
/// ran, or is the first of the run on files of storlab's own (which it created). `made`
/// holds the files earlier phases made.
fn layout_line(
    phase: &storlab_model::run::Phase,
    name: &str,
    made: &mut std::collections::BTreeSet<std::path::PathBuf>,
) -> String {
    let Some(plan) = phase.plan() else { return String::new() };
    let own_new = plan.workers.iter().any(|w| w.owned && !made.contains(&w.path));
    made.extend(plan.workers.iter().filter(|w| w.owned).map(|w| w.path.clone()));
    if phase.result.layout_seconds <= 0.0 && !own_new {
        return String::new();
    }
    let files: usize = plan.workers.iter().map(|w| w.regions().count()).sum::<usize>().max(1);
    let bytes: u64 = plan.workers.iter().map(|w| w.total_len()).sum();
    let s = if files > 1 { "s" } else { "" };
    format!(
        "{name}: Laying out IO file{s} ({files} file{s} / {}{}MiB)\n",
        if files > 1 { "total " } else { "" },
        bytes >> 20
    )
}

/// One job's block, as fio's show_thread_status_normal lays it out; none for a job that issued
/// no I/O (one that failed as it set up), as fio's.
fn job_block(j: &Value, members: u64, pid: u32, when: &str) -> String {
    let mut out = String::new();
    let issued: u64 = ["read", "write"]
        .iter()
        .map(|d| j[*d]["io_bytes"].as_u64().unwrap_or(0) + j[*d]["total_ios"].as_u64().unwrap_or(0))
        .sum();
    if issued == 0 {
        return out;
    }
    let err = j["error"].as_i64().unwrap_or(0);
    let name = j["jobname"].as_str().unwrap_or("");
    let group = j["groupid"].as_u64().unwrap_or(0);
    if err == 0 {
        out += &format!("{name}: (groupid={group}, jobs={members}): err={err:2}: pid={pid}: {when}");
    } else {
        out += &format!(
            "{name}: (groupid={group}, jobs={members}): err={err:2} ({}): pid={pid}: {when}",
            strerror(err)
        );
    }
    for dir in ["read", "write"] {
        if j[dir]["io_bytes"].as_u64().unwrap_or(0) > 0 {
            out += &direction(&j[dir], dir, j[super::json::ZONE_RESETS].as_u64().unwrap_or(0));
        }
    }
    out += &latency_distribution(j);
    out += &sync_block(&j["sync"]);
    out += &usage_lines(j);
    out += &steady_line(&j["steadystate"]);
    out
}

/// fio's `steadystate  :` line of a job that judged steady state: attained or not, the
/// window's mean bandwidth and IOPS, and the criterion's last value.
fn steady_line(ss: &Value) -> String {
    let Some(kind) = ss["ss"].as_str() else {
        return String::new();
    };
    let bw = (ss["data"]["bw_mean"].as_f64().unwrap_or(0.0) * 1024.0) as u64;
    let iops = ss["data"]["iops_mean"].as_f64().unwrap_or(0.0) as u64;
    let slope = kind.contains("_slope");
    let value = ss[if slope { "slope" } else { "max_deviation" }]
        .as_f64()
        .unwrap_or(0.0);
    let pct = if ss["criterion"].as_str().is_some_and(|c| c.ends_with('%')) {
        "%"
    } else {
        ""
    };
    format!(
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={value:.3}{pct}\n",
        if ss["attained"].as_u64() == Some(1) {
            "yes"
        } else {
            "no"
        },
        num2str(bw, SIG_FIGS, true, "B/s"),
        // fio's own arithmetic here: the KiB/s figure written with decimal prefixes (its
        // show_ss_normal divides by 1024 and then counts in thousands), so that the line reads
        // as fio's does.
        num2str(bw / 1024 * 1000, SIG_FIGS, false, "B/s"),
        num2str(iops, SIG_FIGS, false, ""),
        if kind.starts_with("iops") { "iops" } else { "bw" },
        if slope { " slope" } else { " mean dev" },
    )
}

/// A direction's lines: IOPS and BW, slat/clat/lat, clat percentiles, bw and iops samples.
fn direction(d: &Value, label: &str, zone_resets: u64) -> String {
    let io = d["io_bytes"].as_u64().unwrap_or(0);
    let ios = d["total_ios"].as_u64().unwrap_or(0);
    let runt = d["runtime"].as_u64().unwrap_or(0).max(1);
    let bw = 1000 * io / runt;
    let iops = 1000 * ios / runt;
    let mut out = format!(
        "  {label}: IOPS={}, BW={} ({})({}/{runt}msec){}\n",
        num2str(iops, SIG_FIGS, false, ""),
        num2str(bw, SIG_FIGS, true, "B/s"),
        num2str(bw, SIG_FIGS, false, "B/s"),
        num2str(io, SIG_FIGS, true, "B"),
        if label == "write" {
            format!("; {zone_resets} zone resets")
        } else {
            String::new()
        }
    );
    for (key, name) in [("slat_ns", "slat"), ("clat_ns", "clat"), ("lat_ns", " lat")] {
        out += &lat_line(&d[key], name);
    }
    // fio's clat_percentiles (its default): from clat_ns, else storlab's whole latency.
    let pct = if d["clat_ns"]["percentile"].is_object() {
        ("clat", &d["clat_ns"])
    } else {
        ("lat", &d["lat_ns"])
    };
    out += &percentiles(&pct.1["percentile"], pct.0);
    out += &samples_lines(d);
    out
}

/// fio's `display_lat`: `    clat (nsec): min=…, max=…, avg=…, stdev=…`, in ns, µs or ms as
/// the figures are large; nothing where nothing was measured.
fn lat_line(l: &Value, name: &str) -> String {
    if l["N"].as_u64().unwrap_or(0) == 0 {
        return String::new();
    }
    let (mut min, mut max) = (l["min"].as_u64().unwrap_or(0), l["max"].as_u64().unwrap_or(0));
    let (mut mean, mut dev) = (l["mean"].as_f64().unwrap_or(0.0), l["stddev"].as_f64().unwrap_or(0.0));
    let mut base = "(nsec)";
    for (div, unit, lo, hi) in [
        (1_000_000, "(msec)", 2_000_000, 99_999_999),
        (1_000, "(usec)", 2_000, 99_999),
    ] {
        if min > lo && max > hi && dev > div as f64 {
            min /= div;
            max /= div;
            mean /= div as f64;
            dev /= div as f64;
            base = unit;
            break;
        }
    }
    format!(
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}\n",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    )
}

/// fio's `show_clat_percentiles`: four to a line, in the unit the values call for.
fn percentiles(p: &Value, pre: &str) -> String {
    let Some(m) = p.as_object() else { return String::new() };
    let mut vals: Vec<(f64, u64)> = m
        .iter()
        .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, v.as_u64()?)))
        .collect();
    if vals.is_empty() {
        return String::new();
    }
    vals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let (scale, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let width = 5.max(((maxv / divisor).max(1) as f64).log10() as usize + 1);
    let per_line = (80 - 7) / (2 + 10 + width);
    let mut out = format!("    {pre} percentiles ({unit}):\n     |");
    for (i, (q, v)) in vals.iter().enumerate() {
        if i != 0 && i % per_line == 0 {
            out += "     |";
        }
        let mut v = *v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = i == vals.len() - 1;
        out += &format!(" {q:5.2}th=[{v:width$}]{}", if last { '\n' } else { ',' });
        if !last && i % per_line == per_line - 1 {
            out.push('\n');
        }
    }
    out
}

/// fio's `bw (KiB/s)` and `iops` lines from the samples every bw_avg_time, where there were
/// at least two; `per` is the job's share of its group (json.rs's bw_agg).
fn samples_lines(d: &Value) -> String {
    let Some(n) = d["bw_samples"].as_u64().filter(|n| *n > 0) else {
        return String::new();
    };
    let f = |k: &str| d[k].as_f64().unwrap_or(0.0);
    let (mut min, mut max) = (d["bw_min"].as_u64().unwrap_or(0), d["bw_max"].as_u64().unwrap_or(0));
    let (mut mean, mut dev) = (f("bw_mean"), f("bw_dev"));
    let per = f("bw_agg");
    let mut unit = "KiB";
    if mean > 1024.0 * 1024.0 {
        min /= 1024;
        max /= 1024;
        mean /= 1024.0;
        dev /= 1024.0;
        unit = "MiB";
    }
    let mut out = format!(
        "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={n}\n"
    );
    if let Some(n) = d["iops_samples"].as_u64().filter(|n| *n > 0) {
        out += &format!(
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={n}\n",
            d["iops_min"].as_u64().unwrap_or(0),
            d["iops_max"].as_u64().unwrap_or(0),
            f("iops_mean"),
            f("iops_stddev")
        );
    }
    out
}

/// fio's `lat (nsec)`, `lat (usec)`, `lat (msec)` lines: the buckets that hold I/Os, five to a
/// line.
fn latency_distribution(j: &Value) -> String {
    let mut out = String::new();
    for (key, unit) in [("latency_ns", "nsec"), ("latency_us", "usec"), ("latency_ms", "msec")] {
        let Some(m) = j[key].as_object() else { continue };
        let shown: Vec<String> = bucket_order(m)
            .into_iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(k, v)| format!("{k}={v:3.2}%"))
            .collect();
        for line in shown.chunks(5) {
            out += &format!("  lat ({unit})   : {}\n", line.join(", "));
        }
    }
    out
}

/// A distribution's buckets in fio's order (the JSON map's keys sort as text).
fn bucket_order(m: &serde_json::Map<String, Value>) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = m.iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(0.0))).collect();
    let rank = |k: &str| k.trim_start_matches(">=").parse::<u64>().unwrap_or(0) * 2 + u64::from(k.starts_with(">="));
    v.sort_by_key(|(k, _)| rank(k));
    v
}

/// fio's sync block, where the job flushed: `fsync/fdatasync/sync_file_range:`, the sync
/// latency and its percentiles.
fn sync_block(s: &Value) -> String {
    let lat = &s["lat_ns"];
    if lat["N"].as_u64().unwrap_or(0) == 0 {
        return String::new();
    }
    let mut out = "  fsync/fdatasync/sync_file_range:\n".to_string();
    out += &lat_line(lat, "sync");
    out += &percentiles(&lat["percentile"], "sync");
    out
}

/// fio's cpu, IO depths, submit, complete, issued rwts, errors and latency lines.
fn usage_lines(j: &Value) -> String {
    let f = |k: &str| j[k].as_f64().unwrap_or(0.0);
    let u = |k: &str| j[k].as_u64().unwrap_or(0);
    let mut out = format!(
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}\n",
        f("usr_cpu"),
        f("sys_cpu"),
        u("ctx"),
        u("majf"),
        u("minf")
    );
    let dist = |key: &str| -> String {
        bucket_order(j[key].as_object().unwrap_or(&serde_json::Map::new()))
            .into_iter()
            .map(|(k, v)| format!("{k}={v:3.1}%"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out += &format!("  IO depths    : {}\n", dist("iodepth_level"));
    out += &format!("     submit    : {}\n", dist("iodepth_submit"));
    out += &format!("     complete  : {}\n", dist("iodepth_complete"));
    let total = |d: &str, k: &str| j[d][k].as_u64().unwrap_or(0);
    out += &format!(
        "     issued rwts: total={},{},0,0 short={},{},0,0 dropped={},{},0,0\n",
        total("read", "total_ios"),
        total("write", "total_ios"),
        total("read", "short_ios"),
        total("write", "short_ios"),
        total("read", "drop_ios"),
        total("write", "drop_ios"),
    );
    if let Some(n) = j["total_err"].as_u64() {
        let e = j["first_error"].as_i64().unwrap_or(0);
        out += &format!("     errors    : total={n}, first_error={e}/<{}>\n", strerror(e));
    }
    // fio's "All clients" sum has no latency target of its own (its JSON leaves the keys out).
    if j.get("latency_depth").is_some() {
        out += &format!(
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}\n",
            u("latency_target"),
            u("latency_window"),
            f("latency_percentile"),
            u("latency_depth")
        );
    }
    out
}

/// fio's `Run status group N (all jobs):` and its line per direction.
fn group_lines(group: u64, jobs: &[&Value]) -> String {
    let mut out = format!("\nRun status group {group} (all jobs):\n");
    for (dir, label) in [("read", "   READ"), ("write", "  WRITE")] {
        let runs: Vec<u64> = jobs
            .iter()
            .map(|j| j[dir]["runtime"].as_u64().unwrap_or(0))
            .filter(|r| *r > 0)
            .collect();
        let Some(&max_run) = runs.iter().max() else { continue };
        let min_run = runs.iter().copied().min().unwrap_or(max_run);
        let io: u64 = jobs.iter().map(|j| j[dir]["io_bytes"].as_u64().unwrap_or(0)).sum();
        let bws: Vec<u64> = jobs
            .iter()
            .filter_map(|j| {
                let r = j[dir]["runtime"].as_u64().filter(|r| *r > 0)?;
                Some(1000 * j[dir]["io_bytes"].as_u64().unwrap_or(0) / r)
            })
            .collect();
        let agg = 1000 * io / max_run;
        let (lo, hi) = (
            bws.iter().copied().min().unwrap_or(0),
            bws.iter().copied().max().unwrap_or(0),
        );
        let b = |v: u64, pow2: bool| num2str(v, SIG_FIGS, pow2, "B/s");
        out += &format!(
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={min_run}-{max_run}msec\n",
            b(agg, true),
            b(agg, false),
            b(lo, true),
            b(hi, true),
            b(lo, false),
            b(hi, false),
            num2str(io, SIG_FIGS, true, "B"),
            num2str(io, SIG_FIGS, false, "B"),
        );
    }
    out
}

/// fio's `Disk stats (read/write):` and a line per disk, where the run read any.
fn disk_lines(disks: &Value) -> String {
    let Some(list) = disks.as_array().filter(|l| !l.is_empty()) else {
        return String::new();
    };
    let mut out = "\nDisk stats (read/write):\n".to_string();
    for d in list {
        let u = |k: &str| d[k].as_u64().unwrap_or(0);
        out += &format!(
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%\n",
            d["name"].as_str().unwrap_or(""),
            u("read_ios"),
            u("write_ios"),
            u("read_merges"),
            u("write_merges"),
            u("read_ticks"),
            u("write_ticks"),
            u("in_queue"),
            d["util"].as_f64().unwrap_or(0.0)
        );
    }
    out
}

/// The system's text for an errno, without Rust's " (os error N)".
fn strerror(e: i64) -> String {
    let s = std::io::Error::from_raw_os_error(e as i32).to_string();
    match s.rfind(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A number as fio's `num2str` writes it: at most `maxlen` digits, divided by 1000 (or 1024
/// with `pow2`) while longer, the prefix (k, M, … or Ki, Mi, …) and the unit after; what was
/// divided away kept as decimals where there is room, rounded half up. (fio's own routine is
/// GPL C; this is a reimplementation of its behaviour, checked against fio's output in the
/// tests below.)
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes = if pow2 { IEC } else { SI };
    let mut num = num;
    let mut post = 0;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < prefixes.len() && num.to_string().len() > maxlen {
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let digits = num.to_string().len();
    if maxlen <= digits + 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figures fio 3.33 printed (a psync randrw job on tmpfs: 769,182 reads of 4 KiB in
    /// 2,001 ms, "IOPS=384k, BW=1502MiB/s (1574MB/s)(3005MiB/2001msec)"; etcd's check: 455
    /// writes of 2,300 B, "1022KiB", clat max "4163.4k"), from the same inputs.
    #[test]
    fn num2str_writes_what_fio_wrote() {
        let cases: &[(u64, usize, bool, &str, &str)] = &[
            (1000 * 769_182 / 2001, 4, false, "", "384k"),
            (1000 * 769_182 * 4096 / 2001, 4, true, "B/s", "1502MiB/s"),
            (1000 * 769_182 * 4096 / 2001, 4, false, "B/s", "1574MB/s"),
            (769_182 * 4096, 4, true, "B", "3005MiB"),
            (4096, 4, true, "B", "4096B"),
            (65536, 4, true, "B", "64.0KiB"),
            (2300, 4, true, "B", "2300B"),
            (99_900, 4, false, "", "99.9k"),
            (455 * 2300, 4, true, "B", "1022KiB"),
            (4_163_412, 6, false, "", "4163.4k"),
            (48_275, 6, false, "", "48275"),
            (0, 4, true, "B", "0B"),
        ];
        for (n, len, pow2, unit, want) in cases {
            assert_eq!(num2str(*n, *len, *pow2, unit), *want, "num2str({n}, {len}, {pow2})");
        }
    }

    #[test]
    fn percentiles_go_four_to_a_line_in_fios_unit() {
        let p = serde_json::json!({"1.000000": 510, "5.000000": 588, "10.000000": 628, "20.000000": 668, "99.990000": 27520});
        let text = percentiles(&p, "clat");
        assert_eq!(
            text,
            "    clat percentiles (nsec):\n     |  1.00th=[  510],  5.00th=[  588], 10.00th=[  628], 20.00th=[  668],\n     | 99.99th=[27520]\n"
        );
    }
}
