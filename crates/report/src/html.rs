//! `storlab report`: one self-contained HTML file (inline CSS and SVG; no script, no font, no
//! fetch) for runs and comparisons: environment, summary tables, plots over time, bar charts
//! with error bars, one scale for like plots, and warnings.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::studies::StudyView;
use storlab_model::run::{Phase, RunDetail};

use crate::compare::CompareReport;
use crate::svg::{bar_chart, esc, line_chart, nice_ceiling, Bar, Series, COLORS};
use crate::table::Table;

/// How the report is drawn.
#[derive(Debug, Clone, Default)]
pub struct HtmlOptions {
    /// Give every plot its own scale instead of sharing one between like plots.
    pub free_scales: bool,
    /// The page's heading (and the browser's title), for the reader it is sent to; None: "storlab
    /// report".
    pub title: Option<String>,
}

/// `storlab report`'s flags, declared here once (the binary flattens them beside `--db`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportFlags {
    /// Runs to report.
    #[arg(value_name = "ID")]
    pub ids: Vec<i64>,
    /// A group to compare (run ids such as 3,4,5 or tags such as fs=ext2); give two or more.
    #[arg(long = "compare", value_name = "GROUP")]
    pub compare: Vec<String>,
    /// Compare runs whose workloads differ.
    #[arg(long = "allow-different")]
    pub allow_different: bool,
    /// A study to report (an IOzone automatic mode, a sweep, an impact study); repeatable.
    #[arg(long = "study", value_name = "ID")]
    pub studies: Vec<i64>,
    /// A data challenge to report (its throughput over time, total and per pool, its events
    /// marked, its account and statistics); repeatable.
    #[arg(long = "challenge", value_name = "ID")]
    pub challenges: Vec<i64>,
    /// The monitor's record of a window, FROM..TO (each a date or time in UTC, or a span back
    /// from now: --monitor 2d..now): per pool throughput, latency and utilisation over time on
    /// shared scales, with the events marked (the monitor's, runs, studies' tasks, challenges'
    /// faults).
    #[arg(long = "monitor", value_name = "FROM..TO")]
    pub monitor: Option<String>,
    /// With --monitor: this host's monitors (default: this host; `all` for every host).
    #[arg(long = "monitor-host", value_name = "HOST", requires = "monitor")]
    pub monitor_host: Option<String>,
    /// Give every plot its own scale.
    #[arg(long = "free-scales")]
    pub free_scales: bool,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "report.html")]
    pub file: std::path::PathBuf,
    /// The page's heading, for whoever it is sent to ("ext4 or xfs for the new array").
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

impl ReportFlags {
    /// Refuses a report of nothing, and a comparison of one group.
    pub fn check(&self) -> Result<(), String> {
        if self.ids.is_empty()
            && self.compare.is_empty()
            && self.studies.is_empty()
            && self.challenges.is_empty()
            && self.monitor.is_none()
        {
            return Err("nothing to report: give run ids, --compare GROUP --compare GROUP, --study ID, --challenge ID or --monitor FROM..TO".into());
        }
        if self.compare.len() == 1 {
            return Err("--compare needs at least two groups (the first is the baseline)".into());
        }
        Ok(())
    }
}

/// What a report held, in words for the line that says it was written: its size, its runs,
/// and what else it shows.
pub fn written(html: &str, runs: usize, comparison: bool, studies: bool, challenges: bool, monitor: bool) -> String {
    let with = if comparison {
        ", with the comparison"
    } else if studies {
        ", with the studies"
    } else if challenges {
        ", with the challenges"
    } else if monitor {
        ", with the monitor's window"
    } else {
        ""
    };
    format!("{:.1} KiB, {runs} run(s){with}", html.len() as f64 / 1024.0)
}

/// One run and any extra tables to show with it (a scan's rows, say).
#[derive(Debug, Clone)]
pub struct RunSection {
    /// The run, read with its samples.
    pub run: RunDetail,
    /// Tables shown after the summary.
    pub extra: Vec<Table>,
}

impl RunSection {
    /// The sections of runs `ids` and then of the comparison's runs, each run once, in that
    /// order; a scan's run carries its rows. A run that is not there is refused, nothing
    /// written.
    pub fn of_runs(
        store: &storlab_store::Store,
        ids: &[i64],
        comparison: Option<&crate::compare::CompareReport>,
    ) -> Result<Vec<RunSection>, storlab_store::StoreError> {
        let mut order: Vec<i64> = ids.to_vec();
        order.extend(
            comparison
                .iter()
                .flat_map(|c| c.groups.iter().flat_map(|g| g.1.clone())),
        );
        let mut seen = std::collections::HashSet::new();
        order.retain(|id| seen.insert(*id));
        let mut sections = Vec::new();
        for id in order {
            let run = store.run(id, true)?.ok_or_else(|| {
                storlab_store::StoreError::Request(format!("{}: no report was written", store.no_run(id)))
            })?;
            let extra = store
                .scan(id)?
                .map(|r| crate::scan::data_table(&r, "scan"))
                .into_iter()
                .collect();
            sections.push(RunSection { run, extra });
        }
        Ok(sections)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// (x, y) points of a series.
type Points = Vec<(f64, f64)>;

/// Time series of one phase: (t, MiB/s), (t, IOPS), and latency percentiles in µs.
struct PhaseSeries {
    mibs: Vec<(f64, f64)>,
    iops: Vec<(f64, f64)>,
    p50: Vec<(f64, f64)>,
    p99: Vec<(f64, f64)>,
    p999: Vec<(f64, f64)>,
    /// Per target (when the phase ran on several): (t, MiB/s) and (t, IOPS).
    targets: BTreeMap<u16, (Points, Points)>,
}

fn series_of(p: &Phase) -> PhaseSeries {
    // A partial interval (the phase's last sliver) is merged into the one before: drawn alone,
    // its rate over half a millisecond would show a collapse that did not happen.
    let samples = &storlab_model::result::merge_partial(&p.result.samples);
    let mut s = PhaseSeries {
        mibs: Vec::with_capacity(samples.len()),
        iops: Vec::with_capacity(samples.len()),
        p50: Vec::with_capacity(samples.len()),
        p99: Vec::with_capacity(samples.len()),
        p999: Vec::with_capacity(samples.len()),
        targets: BTreeMap::new(),
    };
    for x in samples {
        let dt = (x.t_end - x.t_start).max(1e-9);
        let t = x.t_end;
        s.mibs.push((t, (x.bytes_read + x.bytes_written) as f64 / dt / MIB));
        s.iops.push((t, (x.ops_read + x.ops_written) as f64 / dt));
        s.p50.push((t, x.lat_p50_ns as f64 / 1e3));
        s.p99.push((t, x.lat_p99_ns as f64 / 1e3));
        s.p999.push((t, x.lat_p99_9_ns as f64 / 1e3));
        for ts in &x.targets {
            let e = s.targets.entry(ts.target).or_default();
            e.0.push((t, (ts.bytes_read + ts.bytes_written) as f64 / dt / MIB));
            e.1.push((t, (ts.ops_read + ts.ops_written) as f64 / dt));
        }
    }
    s
}

fn max_y(points: &[(f64, f64)]) -> f64 {
    points.iter().map(|p| p.1).fold(0.0, f64::max)
}

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;color:#1f2328;padding:0 16px}
h1{font-size:1.6em;margin-bottom:0}h2{border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:2em}h3{margin-bottom:4px}
.meta{color:#57606a;margin-top:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #d0d7de;padding:3px 7px}
th{background:#f6f8fa;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.warn{background:#fff8c5;border:1px solid #d4a72c;padding:8px 12px;margin:12px 0;border-radius:6px}
.charts{display:flex;flex-wrap:wrap;gap:8px}
.charts figure{margin:0}.charts figcaption{font-size:12px;color:#57606a;max-width:540px;margin:2px 0 6px}
svg.chart{width:540px;height:auto;border:1px solid #eaeef2;border-radius:4px;background:#fff}
svg .t{font-size:13px;font-weight:600}svg .yl{font-size:10px;text-anchor:end;fill:#57606a}
svg .xl{font-size:10px;text-anchor:middle;fill:#57606a}svg .ax{font-size:10px;fill:#57606a;text-anchor:middle}
svg .lg{font-size:10px}svg .g{stroke:#eaeef2}svg .f{fill:none;stroke:#d0d7de}svg .e{stroke:#1f2328;stroke-width:1.5}
"#;

/// Each like plot's scale: the largest value any run's plot of that phase kind and metric
/// shows, so that like plots share one scale (unless the options free them).
struct Scales {
    shared: BTreeMap<String, f64>,
    free: bool,
}

impl Scales {
    fn of(sections: &[RunSection], series: &[Vec<PhaseSeries>], free: bool) -> Scales {
        let mut shared: BTreeMap<String, f64> = BTreeMap::new();
        for (sec, ss) in sections.iter().zip(series) {
            for (p, s) in sec.run.phases.iter().zip(ss) {
                for (metric, v) in [
                    ("MiB/s", max_y(&s.mibs)),
                    ("IOPS", max_y(&s.iops)),
                    ("latency", s.latency_max()),
                ] {
                    let e = shared.entry(format!("{} {metric}", p.kind)).or_insert(0.0);
                    *e = e.max(v);
                }
                for h in crate::team::per_host_over_time(&sec.run.rank_phases, p.seq) {
                    for (metric, v) in [("MiB/s", max_y(&h.mibs)), ("IOPS", max_y(&h.iops))] {
                        let e = shared.entry(format!("{} {metric} per host", p.kind)).or_insert(0.0);
                        *e = e.max(v);
                    }
                }
            }
        }
        Scales { shared, free }
    }

    fn top(&self, key: &str, own: f64) -> f64 {
        if self.free {
            nice_ceiling(own)
        } else {
            nice_ceiling(self.shared.get(key).copied().unwrap_or(own))
        }
    }
}

impl PhaseSeries {
    fn latency_max(&self) -> f64 {
        max_y(&self.p50).max(max_y(&self.p99)).max(max_y(&self.p999))
    }
}

/// What the report covers, for its title: "runs 3, 4 · studies 2".
fn covered(sections: &[RunSection], studies: &[StudyView]) -> String {
    let join = |ids: Vec<i64>| ids.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
    let runs = join(sections.iter().map(|s| s.run.run.id).collect());
    let studies = join(studies.iter().map(|s| s.study.id).collect());
    match (runs.is_empty(), studies.is_empty()) {
        (false, true) => format!("runs {runs}"),
        (true, false) => format!("studies {studies}"),
        _ => format!("runs {runs} · studies {studies}"),
    }
}

/// The comparison: the groups, the table, a bar chart per phase and metric (each group's mean
/// with its 95 % interval; like charts on one scale), and what differs between the workloads.
fn comparison_section(c: &CompareReport, free: bool) -> String {
    let mut body = String::from("<h2>Comparison</h2>");
    for (i, (label, ids)) in c.groups.iter().enumerate() {
        let _ = write!(
            body,
            "<p>group <b>{}</b>: {} (runs {}){}</p>",
            (b'A' + i as u8) as char,
            esc(label),
            ids.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "),
            if i == 0 { " — the baseline" } else { "" }
        );
    }
    body += &crate::compare::comparison_table(c).to_html();
    // (title, scale key, bars, unit)
    let mut charts: Vec<(String, String, Vec<Bar>, String)> = Vec::new();
    for m in &c.metrics {
        let title = format!("phase {} {} — {}", m.phase, m.kind, m.metric);
        let pos = match charts.iter().position(|(t, _, _, _)| *t == title) {
            Some(p) => p,
            None => {
                let a = &m.comparison.a;
                // Bars named by their groups (a tag, a target, the runs), not by letters.
                let bar = Bar {
                    label: c.groups.first().map(|(l, _)| l.clone()).unwrap_or_default(),
                    value: a.mean,
                    ci: a.ci95,
                };
                charts.push((title, format!("{} {}", m.kind, m.metric), vec![bar], m.unit.clone()));
                charts.len() - 1
            }
        };
        let gi = c.groups.iter().position(|(l, _)| *l == m.group).unwrap_or(0);
        charts[pos].2.push(Bar {
            label: c.groups.get(gi).map(|(l, _)| l.clone()).unwrap_or_default(),
            value: m.comparison.b.mean,
            ci: m.comparison.b.ci95,
        });
    }
    let top = |bars: &[Bar]| bars.iter().map(|b| b.value + b.ci.unwrap_or(0.0)).fold(0.0, f64::max);
    let mut bar_max: BTreeMap<&str, f64> = BTreeMap::new();
    for (_, key, bars, _) in &charts {
        let e = bar_max.entry(key).or_insert(0.0);
        *e = e.max(top(bars));
    }
    body += "<div class=\"charts\">";
    for (title, key, bars, unit) in &charts {
        let y = nice_ceiling(if free { top(bars) } else { bar_max[key.as_str()] });
        body += &bar_chart(title, &format!("compare {key}"), unit, bars, y);
    }
    body += "</div>";
    if !c.differences.is_empty() {
        body += "<div class=\"warn\">The runs' workloads differ (compared anyway):<ul>";
        for d in &c.differences {
            let _ = write!(body, "<li>{}</li>", esc(d));
        }
        body += "</ul></div>";
    }
    body
}

/// The studies, their heat maps of one phase kind on one colour scale across them (unless
/// free).
fn study_sections(studies: &[StudyView], free: bool) -> String {
    let mut vmax: BTreeMap<String, f64> = BTreeMap::new();
    for v in studies.iter().filter(|v| crate::studies::is_matrix(v)) {
        for p in v.runs.iter().flat_map(|r| &r.phases) {
            let e = vmax.entry(p.kind.to_string()).or_insert(0.0);
            *e = e.max(p.result.all_done.bytes_per_sec / MIB);
        }
    }
    let heat_top = |kind: &str, own: f64| {
        if free {
            nice_ceiling(own)
        } else {
            nice_ceiling(vmax.get(kind).copied().unwrap_or(own))
        }
    };
    studies
        .iter()
        .map(|v| crate::studies::render_html(v, &heat_top))
        .collect()
}

/// A run's heading line: what it was, its command, status, start and tags.
fn run_heading(r: &RunDetail) -> String {
    let tags = match r.run.tags.is_empty() {
        true => String::new(),
        false => format!(
            " · tags {}",
            esc(&r
                .run
                .tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "))
        ),
    };
    format!(
        "<h2 id=\"run-{}\">Run {} · {} · {}</h2><p class=\"meta\">{} · status {} · started {}{tags}</p>",
        r.run.id,
        r.run.id,
        esc(r.run.kind.name()),
        esc(r.run.job_name.as_deref().unwrap_or("")),
        esc(r.command.as_deref().unwrap_or("")),
        esc(r.run.status.name()),
        esc(&r.run.started_at),
    )
}

/// A latency axis whose top is `top_us` microseconds: its unit, and the microseconds per unit —
/// ms from 10 ms, as the tables write a latency (storlab_units::latency), so that a chart's
/// ticks read as the table beside it does.
fn latency_axis(top_us: f64) -> (&'static str, f64) {
    if top_us >= 10_000.0 {
        ("ms", 1000.0)
    } else {
        ("µs", 1.0)
    }
}

/// A target's line label: the last part of its path ("target N" when the run named none).
fn target_name(r: &RunDetail, t: u16) -> String {
    r.environment
        .targets
        .get(t as usize)
        .map(|x| {
            x.path
                .rsplit('/')
                .find(|c| !c.is_empty())
                .unwrap_or(&x.path)
                .to_string()
        })
        .unwrap_or_else(|| format!("target {}", t + 1))
}

/// A phase's three plots over time — throughput and IOPS (with a line per target when there are
/// several) and latency percentiles — and whether a series had to be thinned.
fn phase_charts(r: &RunDetail, p: &Phase, s: &PhaseSeries, scales: &Scales) -> (String, bool) {
    let k = |m: &str| format!("{} {m}", p.kind);
    let with_targets = |total: &Points, name: &str, pick: &dyn Fn(&(Points, Points)) -> Points| {
        let name = if s.targets.is_empty() { name } else { "total" };
        let mut v = vec![Series {
            name: name.into(),
            color: COLORS[0],
            points: total.clone(),
        }];
        for (i, (t, pts)) in s.targets.iter().enumerate() {
            v.push(Series {
                name: target_name(r, *t),
                color: COLORS[(i + 1) % COLORS.len()],
                points: pick(pts),
            });
        }
        v
    };
    // Latency in the unit the tables use for it (storlab_units::latency: ms from 10 ms).
    let lat_top = scales.top(&k("latency"), s.latency_max());
    let (lat_unit, per) = latency_axis(lat_top);
    let line = |name: &str, color: &'static str, points: &Points| Series {
        name: name.into(),
        color,
        points: points.iter().map(|(x, y)| (*x, y / per)).collect(),
    };
    let charts = [
        line_chart(
            &format!("{} — throughput", p.kind),
            &k("MiB/s"),
            "MiB/s",
            "seconds",
            &with_targets(&s.mibs, "MiB/s", &|x| x.0.clone()),
            scales.top(&k("MiB/s"), max_y(&s.mibs)),
        ),
        line_chart(
            &format!("{} — IOPS", p.kind),
            &k("IOPS"),
            "IOPS",
            "seconds",
            &with_targets(&s.iops, "IOPS", &|x| x.1.clone()),
            scales.top(&k("IOPS"), max_y(&s.iops)),
        ),
        line_chart(
            &format!("{} — latency percentiles", p.kind),
            &k("latency"),
            lat_unit,
            "seconds",
            &[
                line("p50", COLORS[0], &s.p50),
                line("p99", COLORS[3], &s.p99),
                line("p99.9", COLORS[1], &s.p999),
            ],
            lat_top / per,
        ),
    ];
    let thinned = charts.iter().any(|c| c.1);
    let mut html = format!(
        "<div class=\"charts\">{}</div>",
        charts.iter().map(|c| c.0.as_str()).collect::<String>()
    );
    if thinned {
        let _ = write!(
            html,
            "<p class=\"meta\">{} interval samples, thinned for display to at most {} points per line (the lowest and highest of each slice kept, so spikes show); the tables and exports hold every sample.</p>",
            p.result.samples.len(),
            crate::svg::MAX_POINTS
        );
    }
    (html, thinned)
}

/// A phase many MPI ranks ran: its throughput and IOPS over time, all ranks together and a line
/// per host, on the phase's common clock (rank 0's); and whether a series had to be thinned.
fn host_charts(p: &Phase, hosts: &[crate::team::HostSeries], scales: &Scales) -> (String, bool) {
    let lines = |pick: &dyn Fn(&crate::team::HostSeries) -> Points| -> Vec<Series> {
        hosts
            .iter()
            .enumerate()
            .map(|(i, h)| Series {
                name: h.host.clone(),
                color: COLORS[i % COLORS.len()],
                points: pick(h),
            })
            .collect()
    };
    let own =
        |pick: &dyn Fn(&crate::team::HostSeries) -> &Points| hosts.iter().map(|h| max_y(pick(h))).fold(0.0, f64::max);
    let charts = [
        line_chart(
            &format!("{} — throughput per host", p.kind),
            &format!("{} MiB/s per host", p.kind),
            "MiB/s",
            "seconds (rank 0's clock)",
            &lines(&|h| h.mibs.clone()),
            scales.top(&format!("{} MiB/s per host", p.kind), own(&|h| &h.mibs)),
        ),
        line_chart(
            &format!("{} — IOPS per host", p.kind),
            &format!("{} IOPS per host", p.kind),
            "IOPS",
            "seconds (rank 0's clock)",
            &lines(&|h| h.iops.clone()),
            scales.top(&format!("{} IOPS per host", p.kind), own(&|h| &h.iops)),
        ),
    ];
    let thinned = charts.iter().any(|c| c.1);
    let mut html = format!(
        "<div class=\"charts\">{}</div>",
        charts.iter().map(|c| c.0.as_str()).collect::<String>()
    );
    html += "<p class=\"meta\">each rank's interval samples placed on rank 0's clock (its clock offset measured at start) and summed per host over common intervals; the phase's figures above are all ranks' bytes over the common interval.</p>";
    (html, thinned)
}

/// A run's section: heading, environment, summary, extra tables, each phase's plots; and
/// whether a series was thinned.
fn run_section(sec: &RunSection, series: &[PhaseSeries], scales: &Scales) -> (String, bool) {
    let r = &sec.run;
    let mut body = run_heading(r);
    body += &crate::runs::env_html(r);
    if !r.phases.is_empty() {
        body += &crate::runs::summary(r).to_html();
        let _ = write!(
            body,
            "<p class=\"bound\">{}</p>",
            esc(&crate::bound::lines(r)).trim_end().replace('\n', "<br>")
        );
    }
    let rank_tables = [crate::team::ranks_table(r), crate::team::hosts_table(r)];
    for t in sec.extra.iter().chain(rank_tables.iter().flatten()) {
        let _ = write!(body, "<h3>{}</h3>", esc(&t.name));
        body += &t.to_html();
    }
    let mut thinned = false;
    for (p, s) in r.phases.iter().zip(series) {
        let _ = write!(body, "<h3>phase {} · {}</h3>", p.seq + 1, esc(p.kind.as_str()));
        let mut hosts = crate::team::per_host_over_time(&r.rank_phases, p.seq);
        if hosts.len() == 2 {
            // One host: its line is all ranks' line.
            hosts.remove(0);
        }
        if !hosts.is_empty() {
            let (charts, t) = host_charts(p, &hosts, scales);
            body += &charts;
            thinned |= t;
            continue;
        }
        if p.result.samples.is_empty() {
            body += "<p class=\"meta\">no interval samples stored for this phase (imported results carry none)</p>";
            continue;
        }
        if s.mibs.len() < 2 {
            body += &short_phase(r.run.id, p);
            continue;
        }
        let (charts, t) = phase_charts(r, p, s, scales);
        body += &charts;
        thinned |= t;
    }
    (body, thinned)
}

/// A phase with fewer than two intervals to draw: its figures as figures, not a line of one
/// point (or three near-empty charts).
fn short_phase(run: i64, p: &Phase) -> String {
    let r = &p.result;
    let lat = |ns: f64| storlab_units::latency(ns);
    format!(
        "<p class=\"short-phase\" data-run=\"{}\" data-phase=\"{}\">{:.2} s, too short to draw over time: <b>{:.2} MiB/s</b>, <b>{:.0} IOPS</b>, latency p50 {}, p99 {}, max {}</p>",
        run,
        p.seq + 1,
        r.all_done.seconds,
        r.all_done.bytes_per_sec / 1048576.0,
        r.all_done.iops,
        esc(&lat(r.latency.p50_ns as f64)),
        esc(&lat(r.latency.p99_ns as f64)),
        esc(&lat(r.latency.max_ns as f64)),
    )
}

/// Renders the report: the comparison, the studies, then each run; warnings at the top.
pub fn render(
    sections: &[RunSection],
    comparison: Option<&CompareReport>,
    studies: &[StudyView],
    challenges: &[crate::challenge::ChallengeView],
    monitors: &[crate::monitor::MonitorView],
    risks: &[storlab_model::risk::RiskReport],
    opts: &HtmlOptions,
) -> String {
    // Series first, so that like plots can share one scale.
    let series: Vec<Vec<PhaseSeries>> = sections
        .iter()
        .map(|s| s.run.phases.iter().map(series_of).collect())
        .collect();
    let scales = Scales::of(sections, &series, opts.free_scales);
    let mut warnings: Vec<String> = Vec::new();
    let mut body = String::new();
    if let Some(c) = comparison {
        body += &comparison_section(c, opts.free_scales);
        warnings.extend(c.warnings.iter().cloned());
    }
    body += &study_sections(studies, opts.free_scales);
    let mut thinned_any = false;
    // One scale for every challenge plot: the highest total.
    let top = challenges.iter().map(crate::challenge::plot_top).fold(0.0, f64::max);
    for c in challenges {
        let (html, thinned) = crate::challenge::render_html(c, top, opts.free_scales);
        body += &html;
        thinned_any |= thinned;
        if !c.account.holds() {
            warnings.push(format!(
                "challenge {}: the catalogue's account does not hold",
                c.challenge.id
            ));
        }
    }
    for m in monitors {
        let (html, thinned) = crate::monitor::render_html(m, opts.free_scales);
        body += &html;
        thinned_any |= thinned;
    }
    for r in risks {
        body += &crate::risk::render_html(r);
    }
    for (sec, ss) in sections.iter().zip(&series) {
        let (html, thinned) = run_section(sec, ss, &scales);
        body += &html;
        thinned_any |= thinned;
    }
    warnings.extend(run_warnings(sections, studies));
    let what = title(sections, studies, challenges, monitors, risks);
    page(
        opts.title.as_deref(),
        &what,
        &warnings,
        &body,
        opts.free_scales,
        thinned_any,
    )
}

/// The warnings the page's runs carry — its runs' and its studies' — a line per flag with the
/// runs (and phases) that carry it: the page cache, a rate shortfall, a phase cut short, the
/// benchmark's CPU (crates/stats' `flags`); and runs that did not end well.
fn run_warnings(sections: &[RunSection], studies: &[StudyView]) -> Vec<String> {
    use storlab_stats::flags::Flag;
    let mut runs: Vec<&RunDetail> = sections.iter().map(|s| &s.run).collect();
    for v in studies {
        for r in &v.runs {
            if !runs.iter().any(|x| x.run.id == r.run.id) {
                runs.push(r);
            }
        }
    }
    let mut out = Vec::new();
    for f in Flag::ALL {
        let hits: Vec<String> = runs
            .iter()
            .flat_map(|r| {
                r.phases
                    .iter()
                    .filter(|p| f.on(p, &r.environment))
                    .map(move |p| format!("{} phase {}", r.run.id, p.seq + 1))
            })
            .collect();
        if !hits.is_empty() {
            out.push(format!("{}: run {}", f.text(), hits.join(", ")));
        }
    }
    let ended: Vec<String> = runs
        .iter()
        .filter(|r| {
            !matches!(
                r.run.status,
                storlab_model::run::RunStatus::Ok | storlab_model::run::RunStatus::Running
            )
        })
        .map(|r| format!("run {} ({})", r.run.id, r.run.status.name()))
        .collect();
    if !ended.is_empty() {
        out.push(format!("runs that did not end well: {}", ended.join(", ")));
    }
    out
}

/// What the page covers, for its title: the runs and studies, a risk report, a monitor's
/// window, challenges.
fn title(
    sections: &[RunSection],
    studies: &[StudyView],
    challenges: &[crate::challenge::ChallengeView],
    monitors: &[crate::monitor::MonitorView],
    risks: &[storlab_model::risk::RiskReport],
) -> String {
    let mut what = covered(sections, studies);
    let alone = sections.is_empty() && studies.is_empty();
    if !risks.is_empty() && alone {
        what = format!("risk of data loss, {}", risks[0].raid);
    }
    if !monitors.is_empty() {
        let m = format!(
            "monitor {} to {}",
            crate::monitor::utc(monitors[0].from),
            crate::monitor::utc(monitors[0].to)
        );
        what = if alone { m } else { format!("{what} · {m}") };
    }
    if !challenges.is_empty() {
        let ids: Vec<String> = challenges.iter().map(|c| c.challenge.id.to_string()).collect();
        what = if alone {
            format!("challenges {}", ids.join(", "))
        } else {
            format!("{what} · challenges {}", ids.join(", "))
        };
    }
    what
}

/// The whole page: its head and style, what it covers, its warnings, its body.
fn page(
    title: Option<&str>,
    what: &str,
    warnings: &[String],
    body: &str,
    free_scales: bool,
    thinned_any: bool,
) -> String {
    let mut html = String::with_capacity(body.len() + 4096);
    let heading = title.unwrap_or("storlab report");
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{} — {}</title><style>{STYLE}</style></head><body><h1>{}</h1><p class=\"meta\">{} · generated {} by storlab {}{}{}</p>",
        esc(heading),
        esc(what),
        esc(heading),
        esc(what),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        env!("CARGO_PKG_VERSION"),
        if free_scales { " · each plot on its own scale" } else { " · like plots share one scale" },
        if thinned_any { " · long series thinned for display" } else { "" }
    );
    if !warnings.is_empty() {
        html += "<div class=\"warn\"><b>Warnings</b><ul>";
        for w in warnings {
            let _ = write!(html, "<li>{}</li>", esc(w));
        }
        html += "</ul></div>";
    }
    html += body;
    html += "</body></html>\n";
    html
}

/// `storlab risk --html`: the whole page of one risk report.
pub fn risk_page(r: &storlab_model::risk::RiskReport) -> String {
    render(
        &[],
        None,
        &[],
        &[],
        &[],
        std::slice::from_ref(r),
        &HtmlOptions {
            free_scales: false,
            title: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_axis_is_in_the_unit_the_tables_use() {
        // The tables write 9,999 µs as "9999 µs" and 10 ms as "10.0 ms".
        assert_eq!(storlab_units::latency(9_999_000.0), "9999 µs");
        assert_eq!(latency_axis(9_999.0), ("µs", 1.0));
        assert_eq!(storlab_units::latency(10_000_000.0), "10.0 ms");
        assert_eq!(latency_axis(50_000.0), ("ms", 1000.0));
    }
}
