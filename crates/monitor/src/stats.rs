//! A window's statistics per pool in seed 002's shape: for the total and each pool, in each
//! direction (Read, Write, ReadWrite), the MAX, MIN, AVG and SD (and SD/AVG %) of the
//! long-term averages — each point's throughput averaged over the long-term window before it,
//! as the seed's Perfmon smoothed its 10 s samples over 100 s. Points already averaged
//! (retention's long-term and hourly levels) cover the window by themselves. Beside them, per
//! pool, what the seed's table does not hold: operations, latency and utilisation.

use storlab_model::challenge::Stats;
use storlab_model::monitor::{pool_points, DiskSample, PoolFigures, PoolPoint, Series};
use storlab_stats::intervals;
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
    /// Their sampling interval, seconds: the width of the intervals the statistics place
    /// samples on.
    pub interval: f64,
}

impl Reading {
    /// The statistics of `pools` (empty: all): seed 002's table and each pool's figures.
    pub fn stats(&self, pools: &[String]) -> (Stats, Vec<PoolFigures>) {
        compute(
            &self.window.series,
            &self.window.hosts,
            &self.window.disks,
            (self.interval, self.lt, self.from),
            pools,
        )
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
    let (interval, lt) = store
        .monitors()?
        .into_iter()
        .find(|m| host.is_none_or(|h| m.host == h))
        .map_or((10.0, 100.0), |m| (m.spec.interval, m.spec.lt));
    Ok(Reading {
        from,
        to,
        window,
        lt,
        interval,
    })
}

/// The statistics of `disks` (the samples of a window from `from`; `hosts` names each series'
/// host) for `pools` (empty: all): each host's sweeps placed on the epoch's grid of `interval`
/// seconds by the time they cover (crates/stats' intervals: an interval a host did not measure,
/// or no monitor watched, is left out, not a zero), long-term averages over `lt`, each interval
/// weighed by its length — the challenge's rule. Beside them each pool's figures over the
/// window.
pub fn compute(
    series: &[Series],
    hosts: &[String],
    disks: &[DiskSample],
    (interval, lt, from): (f64, f64, f64),
    pools: &[String],
) -> (Stats, Vec<PoolFigures>) {
    let per_pool: Vec<(String, Vec<PoolPoint>)> = pool_points(series, disks)
        .into_iter()
        .filter(|(p, _)| pools.is_empty() || pools.contains(p))
        .collect();
    let names: Vec<String> = per_pool.iter().map(|(p, _)| p.clone()).collect();
    let iv = intervals::monitor_placed(series, hosts, disks, &names, interval, from);
    let k = ((lt / interval).round() as usize).max(1);
    let channels: Vec<intervals::PoolChannels> = names
        .iter()
        .enumerate()
        .map(|(p, name)| intervals::PoolChannels {
            name,
            read: 2 * p,
            write: 2 * p + 1,
        })
        .collect();
    let rows = intervals::seed_rows(&iv, k, &channels, None);
    let figures = per_pool.iter().map(|(pool, pts)| figures(pool, pts)).collect();
    let hours = match (iv.ends.last(), iv.lengths.first()) {
        (Some(end), Some(len)) => (end - (iv.ends[0] - len)) / 3600.0,
        _ => 0.0,
    };
    (
        Stats {
            first: 0,
            last: iv.len().saturating_sub(1) as u64,
            hours,
            rows,
            // The monitor says it per pool in its own figures (`PoolFigures::device_bound`).
            device_bound: Vec::new(),
        },
        figures,
    )
}

/// A pool's figures over its points: bytes, operations per second, latency per operation and
/// utilisation (mean and peak), each over the seconds the points cover.
fn figures(pool: &str, pts: &[PoolPoint]) -> PoolFigures {
    let secs: f64 = pts.iter().map(|p| p.seconds).sum();
    let ops: f64 = pts.iter().map(|p| p.iops * p.seconds).sum();
    PoolFigures {
        pool: pool.to_string(),
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
        device_bound: if secs > 0.0 {
            pts.iter()
                .filter(|p| storlab_stats::bound::device_saturated(p.utilisation, p.queue))
                .map(|p| p.seconds)
                .sum::<f64>()
                / secs
        } else {
            0.0
        },
    }
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
        let hosts = vec!["h".to_string(); 2];
        let (st, fig) = compute(&series, &hosts, &disks, (10.0, 20.0, 0.0), &[]);
        let get = |n: &str| st.rows.iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!((get("A-Read").max, get("A-Read").min), (250.0, 100.0));
        assert!((get("A-Read").avg - 550.0 / 3.0).abs() < 1e-9);
        assert_eq!(get("Tot-ReadAverage").max, 260.0);
        assert_eq!(get("A-Write").max, 0.0);
        assert_eq!(fig[0].read_bytes, 6000);
        assert!((fig[0].iops - 0.1).abs() < 1e-12);
        assert!((fig[0].latency - 0.002).abs() < 1e-12);
        assert_eq!(fig[0].utilisation, (0.5, 0.5));
        let (only_b, _) = compute(&series, &hosts, &disks, (10.0, 20.0, 0.0), &["B".into()]);
        assert_eq!(only_b.rows.len(), 6);
        assert_eq!(only_b.rows[0].max, 10.0);

        // B on another host, sampling 5 s later than A's host: its sweeps are not A's moments,
        // and the total is still A's rate plus 10 in every interval (before, the two hosts'
        // sweeps were totalled apart, each a total without the other).
        let hosts = vec!["h".to_string(), "i".to_string()];
        let late: Vec<DiskSample> = disks
            .iter()
            .map(|d| DiskSample {
                t: if d.series == 1 { d.t + 5.0 } else { d.t },
                ..d.clone()
            })
            .collect();
        let (st, _) = compute(&series, &hosts, &late, (10.0, 10.0, 0.0), &[]);
        let tot = st.rows.iter().find(|r| r.name == "Tot-ReadAverage").unwrap();
        // Intervals [0,10] … [30,35]. B's host started 5 s in: its rate over what it saw
        // stands for the first interval. A's host stopped at 30 s: the last interval's total
        // is unknown, not B's 10 alone, and A's own row does not read 0 there.
        assert_eq!(st.last, 3);
        assert_eq!((tot.max, tot.min), (310.0, 110.0), "{tot:?}");
        let row = |n: &str| st.rows.iter().find(|r| r.name == n).unwrap().clone();
        assert_eq!((row("B-Read").min, row("B-Read").max), (10.0, 10.0));
        assert_eq!((row("A-Read").min, row("A-Read").max), (100.0, 300.0));
    }
}
