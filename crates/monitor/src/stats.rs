//! A window's statistics per pool in seed 002's shape: for the total and each pool, in each
//! direction (Read, Write, ReadWrite), the MAX, MIN, AVG and SD (and SD/AVG %) of the
//! long-term averages — each point's throughput averaged over the long-term window before it,
//! as the seed's Perfmon smoothed its 10 s samples over 100 s. Points already averaged
//! (retention's long-term and hourly levels) cover the window by themselves. Beside them, per
//! pool, what the seed's table does not hold: operations, latency and utilisation.

use storlab_model::challenge::Stats;
use storlab_model::monitor::{pool_points, DiskSample, PoolFigures, PoolPoint, Series};
use storlab_stats::stat_row as row;
use storlab_store::{MonitorWindow, Store};
use storlab_units::utc;

use crate::MonitorError;

/// A moment given on the command line, as seconds since the epoch: `now`, a span back from
/// `now` (`2h`, `30m`, `7d`), or a date or time in UTC (`2026-11-23`, `2026-11-23T08:00:00`,
/// `…Z`).
pub fn moment(given: &str, now: f64) -> Result<f64, String> {
    let g = given.trim();
    if g == "now" {
        return Ok(now);
    }
    if let Ok(d) = g.parse::<storlab_units::Duration>() {
        return Ok(now - d.secs_f64());
    }
    let t = storlab_store::normalize_time(g).map_err(|e| format!("{e}, or a span back from now such as 2h"))?;
    let st = humantime::parse_rfc3339(&t).map_err(|e| e.to_string())?;
    Ok(st
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64()))
}

/// The report's `--monitor FROM..TO` and `--monitor-host` (None: this host; `all`: every host)
/// as a window and the host to read, as of `now`.
pub fn report_window(arg: &str, host: Option<&str>, now: f64) -> Result<((f64, f64), Option<String>), MonitorError> {
    let (from, to) = arg.split_once("..").ok_or_else(|| {
        MonitorError::Input(format!(
            "--monitor {arg}: expected FROM..TO, e.g. 2026-11-20..2026-11-23 or 2d..now"
        ))
    })?;
    let host = match host {
        Some("all") => None,
        Some(h) => Some(h.to_string()),
        None => Some(storlab_env::hostname()),
    };
    Ok((window(Some(from), Some(to), now)?, host))
}

/// The window `--from FROM --to TO` as seconds since the epoch (default: the last day up to
/// now).
pub fn window(from: Option<&str>, to: Option<&str>, now: f64) -> Result<(f64, f64), MonitorError> {
    let input = MonitorError::Input;
    let from_t = from
        .map(|f| moment(f, now).map_err(|e| input(format!("--from {f}: {e}"))))
        .transpose()?;
    let to_t = to
        .map(|t| moment(t, now).map_err(|e| input(format!("--to {t}: {e}"))))
        .transpose()?
        .unwrap_or(now);
    let from_t = from_t.unwrap_or(to_t - 86400.0);
    if from_t >= to_t {
        return Err(input(format!(
            "--from {} is not before --to {}",
            utc(from_t),
            utc(to_t)
        )));
    }
    Ok((from_t, to_t))
}

/// `storlab monitor stats`'s window, hosts and pools: its flags, declared here once (the
/// binary flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StatsFlags {
    /// From (a date or time, UTC: 2026-11-23T08:00:00; or a span back from now: 2h).
    #[arg(long, value_name = "TIME|AGO")]
    pub from: Option<String>,
    /// To (as --from; default now).
    #[arg(long, value_name = "TIME|AGO")]
    pub to: Option<String>,
    /// Only these pools (the Tot rows are their sums); repeatable.
    #[arg(long = "pool", value_name = "NAME")]
    pub pools: Vec<String>,
    /// Only this host's monitors (default: this host).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Every host's monitors.
    #[arg(long, conflicts_with = "host")]
    pub all_hosts: bool,
}

/// `storlab monitor events`'s window and hosts: its flags, declared here once.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EventsFlags {
    /// From (as in `stats`).
    #[arg(long, value_name = "TIME|AGO")]
    pub from: Option<String>,
    /// To.
    #[arg(long, value_name = "TIME|AGO")]
    pub to: Option<String>,
    /// Only this host's monitors (default: this host).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Every host's monitors.
    #[arg(long, conflicts_with = "host")]
    pub all_hosts: bool,
}

/// The host whose monitors a reading takes: the one named, this one, or (None) every host.
fn host_filter(host: &Option<String>, all: bool) -> Option<String> {
    if all {
        None
    } else {
        Some(host.clone().unwrap_or_else(storlab_env::hostname))
    }
}

impl StatsFlags {
    /// The window asked for, read (see [`read`]) as of `now`.
    pub fn read(&self, store: &Store, now: f64) -> Result<Reading, MonitorError> {
        let span = window(self.from.as_deref(), self.to.as_deref(), now)?;
        read(
            store,
            host_filter(&self.host, self.all_hosts).as_deref(),
            span,
            &self.pools,
        )
    }
}

impl EventsFlags {
    /// The events of the window asked for, as of `now`.
    pub fn read(&self, store: &Store, now: f64) -> Result<Vec<storlab_model::monitor::MonitorEvent>, MonitorError> {
        let (from, to) = window(self.from.as_deref(), self.to.as_deref(), now)?;
        let host = host_filter(&self.host, self.all_hosts);
        Ok(store.monitor_window(host.as_deref(), from, to)?.events)
    }
}

/// A window of the monitors' record, read for its statistics.
pub struct Reading {
    /// Its start and end, seconds since the epoch.
    pub from: f64,
    /// See `from`.
    pub to: f64,
    /// What the monitors stored in it.
    pub window: MonitorWindow,
    /// The long-term window of the monitors that stored it, seconds.
    pub lt: f64,
}

impl Reading {
    /// The statistics of `pools` (empty: all): seed 002's table and each pool's figures.
    pub fn stats(&self, pools: &[String]) -> (Stats, Vec<PoolFigures>) {
        compute(&self.window.series, &self.window.disks, self.lt, pools)
    }
}

/// Reads the window FROM..TO of `host`'s monitors (None: every host's); refused when no
/// monitor has samples there, or when `pools` names one the window does not have.
pub fn read(
    store: &Store,
    host: Option<&str>,
    (from, to): (f64, f64),
    pools: &[String],
) -> Result<Reading, MonitorError> {
    let window = store.monitor_window(host, from, to)?;
    if window.series.is_empty() {
        return Err(MonitorError::Input(format!(
            "no monitor{} has samples between {} and {}",
            host.map(|h| format!(" of {h}")).unwrap_or_default(),
            utc(from),
            utc(to)
        )));
    }
    for p in pools {
        if !window.series.iter().any(|s| &s.pool == p) {
            let mut known: Vec<&str> = window.series.iter().map(|s| s.pool.as_str()).collect();
            known.sort();
            known.dedup();
            return Err(MonitorError::Input(format!(
                "--pool {p}: no such pool in this window (its pools: {})",
                known.join(", ")
            )));
        }
    }
    let lt = store
        .monitors()?
        .into_iter()
        .find(|m| host.is_none_or(|h| m.host == h))
        .map_or(100.0, |m| m.spec.lt);
    Ok(Reading { from, to, window, lt })
}

/// Each point's mean over the points ending within `lt` seconds of it (its own included),
/// weighted by the seconds they cover.
fn smoothed(points: &[PoolPoint], lt: f64, f: fn(&PoolPoint) -> f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(points.len());
    let mut first = 0;
    for (i, p) in points.iter().enumerate() {
        while points[first].t <= p.t - lt + 1e-6 {
            first += 1;
        }
        let w = &points[first..=i];
        let secs: f64 = w.iter().map(|q| q.seconds).sum();
        out.push(if secs > 0.0 {
            w.iter().map(|q| f(q) * q.seconds).sum::<f64>() / secs
        } else {
            0.0
        });
    }
    out
}

/// The statistics of `disks` (the samples of a window) for `pools` (empty: all).
pub fn compute(series: &[Series], disks: &[DiskSample], lt: f64, pools: &[String]) -> (Stats, Vec<PoolFigures>) {
    let per_pool: Vec<(String, Vec<PoolPoint>)> = pool_points(series, disks)
        .into_iter()
        .filter(|(p, _)| pools.is_empty() || pools.contains(p))
        .collect();
    let mut rows = Vec::new();
    let mut figures = Vec::new();
    // The totals: the pools' smoothed series summed at each moment (a moment is a sweep: the
    // pools of one monitor are swept together).
    let mut moments: Vec<(f64, f64, f64)> = Vec::new();
    for (pool, pts) in &per_pool {
        let r = smoothed(pts, lt, |p| p.read_rate);
        let w = smoothed(pts, lt, |p| p.write_rate);
        for (i, p) in pts.iter().enumerate() {
            match moments.iter_mut().find(|m| (m.0 - p.t).abs() < 1e-3) {
                Some(m) => {
                    m.1 += r[i];
                    m.2 += w[i];
                }
                None => moments.push((p.t, r[i], w[i])),
            }
        }
        let rw: Vec<f64> = r.iter().zip(&w).map(|(a, b)| a + b).collect();
        rows.push(row(format!("{pool}-Read"), Some(pool.clone()), "Read", &r));
        rows.push(row(format!("{pool}-Write"), Some(pool.clone()), "Write", &w));
        rows.push(row(format!("{pool}-ReadWrite"), Some(pool.clone()), "ReadWrite", &rw));
        let secs: f64 = pts.iter().map(|p| p.seconds).sum();
        let ops: f64 = pts.iter().map(|p| p.iops * p.seconds).sum();
        figures.push(PoolFigures {
            pool: pool.clone(),
            seconds: secs,
            read_bytes: pts.iter().map(|p| p.read_bytes).sum(),
            write_bytes: pts.iter().map(|p| p.write_bytes).sum(),
            iops: if secs > 0.0 { ops / secs } else { 0.0 },
            latency: if ops > 0.0 {
                pts.iter().map(|p| p.latency * p.iops * p.seconds).sum::<f64>() / ops
            } else {
                0.0
            },
            utilisation: (
                if secs > 0.0 {
                    pts.iter().map(|p| p.utilisation * p.seconds).sum::<f64>() / secs
                } else {
                    0.0
                },
                pts.iter().map(|p| p.utilisation).fold(0.0, f64::max),
            ),
        });
    }
    moments.sort_by(|a, b| a.0.total_cmp(&b.0));
    let tr: Vec<f64> = moments.iter().map(|m| m.1).collect();
    let tw: Vec<f64> = moments.iter().map(|m| m.2).collect();
    let trw: Vec<f64> = moments.iter().map(|m| m.1 + m.2).collect();
    let mut all = vec![
        row("Tot-ReadAverage".into(), None, "Read", &tr),
        row("Tot-WriteAverage".into(), None, "Write", &tw),
        row("Tot-ReadWriteAverage".into(), None, "ReadWrite", &trw),
    ];
    all.extend(rows);
    let span = match (moments.first(), moments.last()) {
        (Some(a), Some(b)) => (b.0 - a.0) / 3600.0,
        _ => 0.0,
    };
    (
        Stats {
            first: 0,
            last: moments.len().saturating_sub(1) as u64,
            hours: span,
            rows: all,
        },
        figures,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::monitor::{DiskDelta, Level, SeriesKind};

    #[test]
    fn moments_are_dates_or_spans_back_from_now() {
        assert_eq!(moment("now", 5000.0), Ok(5000.0));
        assert_eq!(moment("1h", 5000.0), Ok(1400.0));
        assert_eq!(moment("1970-01-01T01:00:00", 0.0), Ok(3600.0));
        assert!(moment("yesterday", 0.0).unwrap_err().contains("a span back from now"));
    }

    #[test]
    fn points_are_smoothed_over_the_long_term_window_and_pools_add_up_to_the_total() {
        let series: Vec<Series> = ["A", "B"]
            .iter()
            .enumerate()
            .map(|(i, p)| Series {
                idx: i as u32,
                pool: p.to_string(),
                kind: SeriesKind::Disk,
                name: format!("d{i}"),
                top: true,
            })
            .collect();
        let s = |series: u32, t: f64, read_bytes: u64| DiskSample {
            series,
            t,
            seconds: 10.0,
            level: Level::Full,
            delta: DiskDelta {
                read_bytes,
                reads: 1,
                read_ms: 2,
                busy_ms: 5000,
                ..DiskDelta::default()
            },
        };
        // A: 100, 300, 200 B/s over 10 s each; B: 10 B/s. lt = 20 s: A smoothed 100, 200, 250.
        let disks = vec![
            s(0, 10.0, 1000),
            s(1, 10.0, 100),
            s(0, 20.0, 3000),
            s(1, 20.0, 100),
            s(0, 30.0, 2000),
            s(1, 30.0, 100),
        ];
        let (st, fig) = compute(&series, &disks, 20.0, &[]);
        let get = |n: &str| st.rows.iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!((get("A-Read").max, get("A-Read").min), (250.0, 100.0));
        assert!((get("A-Read").avg - 550.0 / 3.0).abs() < 1e-9);
        assert_eq!(get("Tot-ReadAverage").max, 260.0);
        assert_eq!(get("A-Write").max, 0.0);
        assert_eq!(fig[0].read_bytes, 6000);
        assert!((fig[0].iops - 0.1).abs() < 1e-12);
        assert!((fig[0].latency - 0.002).abs() < 1e-12);
        assert_eq!(fig[0].utilisation, (0.5, 0.5));
        let (only_b, _) = compute(&series, &disks, 20.0, &["B".into()]);
        assert_eq!(only_b.rows.len(), 6);
        assert_eq!(only_b.rows[0].max, 10.0);
    }
}
