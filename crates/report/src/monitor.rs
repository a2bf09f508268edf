//! The monitor's tables: the pools' other figures beside seed 002's statistics (which
//! challenge.rs draws for both), and the events.

use storlab_model::monitor::{MonitorEvent, PoolFigures};

use crate::table::{Cell, Table};

pub use storlab_units::utc;

/// `storlab monitor stats`: seed 002's table under its heading (the window, its hours and the
/// long-term window), then each pool's other figures.
pub fn stats_text(
    from: f64,
    to: f64,
    lt: f64,
    s: &storlab_model::challenge::Stats,
    figures: &[PoolFigures],
    unit: crate::challenge::ChallengeUnit,
) -> String {
    format!(
        " *** Statistics - {} to {} ({:.2} Hours, long-term window {}) ***\n{}\n{}",
        utc(from),
        utc(to),
        s.hours,
        storlab_units::Duration((lt * 1e9) as u64),
        crate::challenge::stats_table(s, unit).to_text(),
        figures_table(figures).to_text()
    )
}

/// Per pool: bytes moved, operations per second, latency and utilisation over the window.
pub fn figures_table(figures: &[PoolFigures]) -> Table {
    let mut t = Table::new(
        "pools",
        &[
            "pool",
            "hours",
            "read GiB",
            "written GiB",
            "IOPS",
            "latency ms",
            "util avg %",
            "util max %",
            "device-bound %",
        ],
    );
    for f in figures {
        t.push(vec![
            Cell::Text(f.pool.clone()),
            Cell::fixed(f.seconds / 3600.0, 2),
            Cell::fixed(f.read_bytes as f64 / (1u64 << 30) as f64, 3),
            Cell::fixed(f.write_bytes as f64 / (1u64 << 30) as f64, 3),
            Cell::fixed(f.iops, 1),
            Cell::fixed(f.latency * 1000.0, 3),
            Cell::fixed(f.utilisation.0 * 100.0, 1),
            Cell::fixed(f.utilisation.1 * 100.0, 1),
            Cell::fixed(f.device_bound * 100.0, 1),
        ]);
    }
    t
}

/// The events, in time order.
pub fn events_table(events: &[MonitorEvent]) -> Table {
    let mut t = Table::new("events", &["time (UTC)", "pool", "what", "event", "detail"]);
    for e in events {
        t.push(vec![
            Cell::Text(utc(e.t)),
            Cell::Text(e.pool.clone()),
            Cell::Text(e.name.clone()),
            Cell::Text(e.kind.clone()),
            Cell::Text(e.detail.clone()),
        ]);
    }
    t
}

/// Seconds since the epoch of an RFC 3339 time (None when it does not parse).
fn epoch(rfc3339: &str) -> Option<f64> {
    let t = humantime::parse_rfc3339_weak(rfc3339.trim_end_matches('Z'))
        .or_else(|_| humantime::parse_rfc3339(rfc3339))
        .ok()?;
    t.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_secs_f64())
}

/// What else happened in a window, from the results database, to mark on the monitor's plots:
/// runs started, a study's task started and ended (a scrub, a verify, a rebuild), a
/// challenge's faults. (time, what), in time order.
pub fn timeline(
    store: &storlab_store::Store,
    from: f64,
    to: f64,
) -> Result<Vec<(f64, String)>, storlab_store::StoreError> {
    let mut out: Vec<(f64, String)> = Vec::new();
    let inside = |t: f64| t >= from && t <= to;
    for r in store.list_runs(100_000)? {
        if let Some(t) = epoch(&r.started_at).filter(|t| inside(*t)) {
            out.push((t, format!("run {} ({})", r.id, r.kind)));
        }
    }
    // A study is stored when it ends: one created before the window's start may still have
    // events in it, so a day before is looked at.
    for (id, created) in store.study_times()? {
        if epoch(&created).is_none_or(|c| c < from - 86400.0) {
            continue;
        }
        let Some(study) = store.study(id)? else { continue };
        for e in &study.events {
            if !matches!(
                e.kind.as_str(),
                "task-start" | "task-end" | "task-stopped" | "task-timeout"
            ) {
                continue;
            }
            if let Some(t) = epoch(&e.at).filter(|t| inside(*t)) {
                out.push((t, format!("study {id} {}: {}", e.kind, e.detail)));
            }
        }
    }
    for id in store.challenge_ids()? {
        let Some(c) = store.challenge(id)? else { continue };
        let Some(t0) = c.t0 else { continue };
        for e in store.challenge_events(id)? {
            if matches!(
                e.kind.as_str(),
                "fault" | "undo" | "task" | "pool-full" | "fault-failed"
            ) && inside(t0 + e.t)
            {
                out.push((t0 + e.t, format!("challenge {id} {}: {}", e.kind, e.detail)));
            }
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(out)
}

/// A window of the monitor's record as the HTML report draws it.
#[derive(Debug, Clone)]
pub struct MonitorView {
    /// The window, seconds since the epoch.
    pub from: f64,
    /// Its end.
    pub to: f64,
    /// The long-term window, seconds.
    pub lt: f64,
    /// The sampling interval, seconds: the intervals' width.
    pub interval: f64,
    /// The samples and the monitor's events.
    pub window: storlab_store::MonitorWindow,
    /// The statistics in the seed's shape.
    pub stats: storlab_model::challenge::Stats,
    /// The pools' other figures.
    pub figures: Vec<PoolFigures>,
    /// What else happened (runs, studies' tasks, challenges' faults).
    pub timeline: Vec<(f64, String)>,
}

/// At most this many marks on a plot; the events table has them all.
const MAX_MARKS: usize = 24;

/// The monitor's section: the statistics, the pools' figures, and per pool its throughput,
/// latency and utilisation over time, each kind of plot on one scale for every pool (unless
/// `free`), with the events marked; then the events.
pub fn render_html(v: &MonitorView, free: bool) -> (String, bool) {
    use std::fmt::Write;

    use crate::challenge::{stats_table, ChallengeUnit};
    let axis = Axis::of(v);
    let mut h = String::new();
    let _ = write!(
        h,
        "<h2>Monitor <span class=\"meta\">{} to {}</span></h2><p class=\"meta\">{} series · long-term averages over {} s · samples from {} to {}; time in {} from the first</p>",
        utc(v.from),
        utc(v.to),
        v.window.series.len(),
        v.lt,
        utc(axis.first),
        utc(axis.last),
        axis.unit
    );
    h += &stats_table(&v.stats, ChallengeUnit::MB).to_html();
    h += &figures_table(&v.figures).to_html();
    let (charts, thinned) = pool_charts(v, &axis, free);
    h += &charts;
    let mut events = v.window.events.clone();
    events.extend(v.timeline.iter().map(|(t, m)| MonitorEvent {
        t: *t,
        pool: String::new(),
        name: String::new(),
        kind: "database".into(),
        detail: m.clone(),
    }));
    events.sort_by(|a, b| a.t.total_cmp(&b.t));
    h += &events_table(&events).to_html();
    (h, thinned)
}

/// The plots' time axis: it spans the samples (the window may be wider than what was
/// monitored in it), in the unit that keeps the numbers small.
struct Axis {
    first: f64,
    last: f64,
    scale: f64,
    unit: &'static str,
}

impl Axis {
    fn of(v: &MonitorView) -> Axis {
        let disks = &v.window.disks;
        let first = disks
            .iter()
            .map(|d| d.t - d.seconds)
            .fold(f64::INFINITY, f64::min)
            .max(v.from);
        let last = disks.iter().map(|d| d.t).fold(f64::NEG_INFINITY, f64::max).min(v.to);
        let (first, last) = if first < last { (first, last) } else { (v.from, v.to) };
        let (scale, unit) = match last - first {
            d if d > 3.0 * 86400.0 => (86400.0, "days"),
            d if d > 3.0 * 3600.0 => (3600.0, "hours"),
            d if d > 180.0 => (60.0, "minutes"),
            _ => (1.0, "seconds"),
        };
        Axis {
            first,
            last,
            scale,
            unit,
        }
    }

    /// A time on the axis.
    fn x(&self, t: f64) -> f64 {
        (t - self.first) / self.scale
    }

    /// The events and database outages inside the span, as marks (the first MAX_MARKS).
    fn marks(&self, v: &MonitorView) -> Vec<(f64, String)> {
        let mut marks: Vec<(f64, String)> = v
            .window
            .events
            .iter()
            .filter(|e| e.kind != "started" && e.kind != "stopped")
            .map(|e| (e.t, format!("{} {}", e.kind, e.name)))
            .chain(v.timeline.iter().cloned())
            .collect();
        marks.sort_by(|a, b| a.0.total_cmp(&b.0));
        marks
            .into_iter()
            .filter(|(t, _)| *t >= self.first && *t <= self.last)
            .take(MAX_MARKS)
            .map(|(t, m)| (self.x(t), m.chars().take(40).collect()))
            .collect()
    }
}

/// Each pool's throughput, latency and utilisation over time, on scales shared by the pools
/// (each its own with `free`); whether a chart was thinned.
fn pool_charts(v: &MonitorView, axis: &Axis, free: bool) -> (String, bool) {
    use std::fmt::Write;

    use storlab_model::monitor::pool_points;

    use crate::svg::{esc, line_chart_marked, nice_ceiling, Series};
    let marks = axis.marks(v);
    let pools = pool_points(&v.window.series, &v.window.disks);
    let names: Vec<String> = pools.iter().map(|(p, _)| p.clone()).collect();
    let placed = storlab_stats::intervals::monitor_placed(
        &v.window.series,
        &v.window.hosts,
        &v.window.disks,
        &names,
        v.interval,
        v.from,
    );
    let top_rate = placed.rates.iter().flatten().flatten().fold(0.0, |a: f64, b| a.max(*b));
    let top_latency = pools
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.latency * 1000.0))
        .fold(0.0, f64::max);
    let shared_mb = nice_ceiling((top_rate / 1e6).max(0.001));
    let shared_ms = nice_ceiling(top_latency.max(0.001));
    let own = |s: &[Series]| {
        nice_ceiling(
            s.iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .fold(0.001, f64::max),
        )
    };
    let mut h = String::new();
    let mut thinned = false;
    for (p, (pool, pts)) in pools.iter().enumerate() {
        let [tp, lat, util] = pool_series(p, pts, axis, &placed);
        let _ = write!(h, "<h3>Pool {}</h3>", esc(pool));
        let slug: String = pool
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        for (title, key, yunit, series, y_max) in [
            (
                "Throughput",
                "throughput",
                "MB/s",
                &tp[..],
                if free { own(&tp) } else { shared_mb },
            ),
            (
                "Latency per I/O",
                "latency",
                "ms",
                &lat[..],
                if free { own(&lat) } else { shared_ms },
            ),
            ("Utilisation", "utilisation", "%", &util[..], 100.0),
        ] {
            let key = format!("monitor-{slug}-{key}");
            let (svg, t) = line_chart_marked(
                &format!("{pool}: {title}"),
                &key,
                yunit,
                axis.unit,
                series,
                y_max,
                &marks,
            );
            thinned |= t;
            h += &svg;
        }
    }
    (h, thinned)
}

/// A pool's three series: throughput as `monitor stats` reads it (the samples on the
/// intervals by the time they cover, an interval nobody measured left out, not drawn as 0),
/// latency per I/O, and the busiest device's utilisation.
fn pool_series(
    p: usize,
    pts: &[storlab_model::monitor::PoolPoint],
    axis: &Axis,
    placed: &storlab_stats::intervals::Intervals,
) -> [Vec<crate::svg::Series>; 3] {
    use crate::svg::{Series, COLORS};
    let line = |name: &str, color: &'static str, f: &dyn Fn(&storlab_model::monitor::PoolPoint) -> f64| Series {
        name: name.into(),
        color,
        points: pts.iter().map(|q| (axis.x(q.t), f(q))).collect(),
    };
    let rate = |name: &str, color: &'static str, c: usize| Series {
        name: name.into(),
        color,
        points: placed
            .ends
            .iter()
            .zip(&placed.rates[c])
            .filter_map(|(e, r)| r.map(|r| (axis.x(*e), r / 1e6)))
            .collect(),
    };
    [
        vec![rate("read", COLORS[0], 2 * p), rate("write", COLORS[1], 2 * p + 1)],
        vec![line("latency", COLORS[4], &|q| q.latency * 1000.0)],
        vec![line("busiest device", COLORS[3], &|q| q.utilisation * 100.0)],
    ]
}
