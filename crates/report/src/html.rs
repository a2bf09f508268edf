//! `storlab report`: one self-contained HTML file (inline CSS and SVG; no script, no font, no
//! fetch) for runs and comparisons: environment, summary tables, plots over time, bar charts
//! with error bars, one scale for like plots, and warnings.

use std::collections::BTreeMap;
use std::fmt::Write;

use storlab_store::{PhaseRow, RunDetail};

use crate::compare::CompareReport;
use crate::svg::{bar_chart, esc, line_chart, nice_ceiling, Bar, Series, COLORS};
use crate::table::Table;

/// How the report is drawn.
#[derive(Debug, Clone, Default)]
pub struct HtmlOptions {
    /// Give every plot its own scale instead of sharing one between like plots.
    pub free_scales: bool,
}

/// A study: its kind ("iozone-auto", "iozone-import", "sweep", ...), id, parameters, and its
/// member runs with their roles.
#[derive(Debug, Clone)]
pub struct StudySection {
    /// The study's id.
    pub id: i64,
    /// Its kind.
    pub kind: String,
    /// Its parameters (for a sweep: the varied key and values).
    pub params: serde_json::Value,
    /// (role, run), the runs read without samples.
    pub members: Vec<(String, RunDetail)>,
    /// What this kind of study shows beyond its runs (an impact study's table, a held rate's
    /// timeline), already HTML; shown after the heading.
    pub extra: String,
}

/// A run's file size and record size (bytes): from the plan's workers and block size, or from
/// an imported IOzone cell.
fn file_and_record(p: &PhaseRow) -> Option<(u64, u64)> {
    let rec = p.params.get("bs")?.get("fixed")?.as_u64()?;
    let file = p
        .params
        .get("workers")
        .and_then(|w| w.get(0))
        .and_then(|w| w.get("len"))
        .and_then(|l| l.as_u64())
        .or_else(|| {
            p.params
                .get("file_kb")
                .and_then(|k| k.as_f64())
                .map(|k| (k * 1024.0) as u64)
        })?;
    Some((file, rec))
}

fn kb_label(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}m", b >> 20)
    } else {
        format!("{}k", b >> 10)
    }
}

/// Heat maps of a file size × record size study, one per phase kind, all maps of one kind
/// (across the studies given) on one colour scale unless `free`.
fn study_sections(studies: &[StudySection], free: bool) -> String {
    let mut s = String::new();
    // Shared colour scales: the largest MiB/s of each phase kind over all matrix studies.
    let mut vmax: BTreeMap<String, f64> = BTreeMap::new();
    for st in studies {
        for (_, r) in &st.members {
            for p in &r.phases {
                let e = vmax.entry(p.kind.clone()).or_insert(0.0);
                *e = e.max(p.bytes_per_sec / MIB);
            }
        }
    }
    for st in studies {
        let _ = write!(
            s,
            "<h2 id=\"study-{}\">Study {} · {} · {} runs</h2>",
            st.id,
            st.id,
            esc(&st.kind),
            st.members.len()
        );
        s += &st.extra;
        let impact = st.kind.starts_with("impact");
        let matrix = st
            .members
            .iter()
            .all(|(_, r)| r.phases.first().and_then(file_and_record).is_some())
            && (st.kind != "sweep")
            && !impact;
        let mut kinds: Vec<String> = Vec::new();
        for (_, r) in &st.members {
            for p in &r.phases {
                if !kinds.contains(&p.kind) {
                    kinds.push(p.kind.clone());
                }
            }
        }
        s += "<div class=\"charts\">";
        if impact {
            // The study's own section (above) shows it; the runs' table follows.
        } else if matrix {
            let mut files: Vec<u64> = st
                .members
                .iter()
                .filter_map(|(_, r)| r.phases.first().and_then(file_and_record))
                .map(|x| x.0)
                .collect();
            let mut recs: Vec<u64> = st
                .members
                .iter()
                .filter_map(|(_, r)| r.phases.first().and_then(file_and_record))
                .map(|x| x.1)
                .collect();
            files.sort_unstable();
            files.dedup();
            recs.sort_unstable();
            recs.dedup();
            for k in &kinds {
                let values: Vec<Vec<Option<f64>>> = files
                    .iter()
                    .map(|f| {
                        recs.iter()
                            .map(|rc| {
                                st.members.iter().find_map(|(_, r)| {
                                    let (rf, rr) = r.phases.first().and_then(file_and_record)?;
                                    if rf != *f || rr != *rc {
                                        return None;
                                    }
                                    r.phases.iter().find(|p| &p.kind == k).map(|p| p.bytes_per_sec / MIB)
                                })
                            })
                            .collect()
                    })
                    .collect();
                let own = values.iter().flatten().flatten().copied().fold(0.0, f64::max);
                let top = if free { nice_ceiling(own) } else { nice_ceiling(vmax[k]) };
                s += &crate::svg::heat_map(
                    &format!("{k} — MiB/s (file size down, record size across)"),
                    &format!("heat {k}"),
                    "MiB/s",
                    &files.iter().map(|f| kb_label(*f)).collect::<Vec<_>>(),
                    &recs.iter().map(|r| kb_label(*r)).collect::<Vec<_>>(),
                    &values,
                    top,
                );
            }
        } else {
            // A sweep: each phase's MiB/s against the point (its index when not a number).
            for k in &kinds {
                let pts: Vec<(f64, f64)> = st
                    .members
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (role, r))| {
                        let x = role
                            .split('=')
                            .nth(1)
                            .and_then(|v| v.parse::<f64>().ok())
                            .unwrap_or(i as f64 + 1.0);
                        r.phases
                            .iter()
                            .find(|p| &p.kind == k)
                            .map(|p| (x, p.bytes_per_sec / MIB))
                    })
                    .collect();
                let (svg, _) = line_chart(
                    &format!(
                        "{k} — MiB/s against {}",
                        st.params
                            .get("vary")
                            .and_then(|v| v.get(0))
                            .and_then(|v| v.as_str())
                            .unwrap_or("the point")
                    ),
                    &format!("sweep {k}"),
                    "MiB/s",
                    st.params
                        .get("vary")
                        .and_then(|v| v.get(0))
                        .and_then(|v| v.as_str())
                        .unwrap_or("point"),
                    &[Series {
                        name: k.clone(),
                        color: COLORS[0],
                        points: pts.clone(),
                    }],
                    nice_ceiling(max_y(&pts)),
                );
                s += &svg;
            }
        }
        s += "</div>";
        let rows: Vec<Vec<String>> = st
            .members
            .iter()
            .map(|(role, r)| {
                let mut v = vec![role.clone(), r.run.id.to_string()];
                for k in &kinds {
                    v.push(
                        r.phases
                            .iter()
                            .find(|p| &p.kind == k)
                            .map(|p| format!("{:.2}", p.bytes_per_sec / MIB))
                            .unwrap_or_default(),
                    );
                }
                v
            })
            .collect();
        let mut headers = vec!["cell".to_string(), "run".to_string()];
        headers.extend(kinds.iter().map(|k| format!("{k} MiB/s")));
        s += &html_table(&headers, &rows);
    }
    s
}

/// One run and any extra tables to show with it (a scan's rows, say).
#[derive(Debug, Clone)]
pub struct RunSection {
    /// The run, read with its samples.
    pub run: RunDetail,
    /// Tables shown after the summary.
    pub extra: Vec<Table>,
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

fn series_of(p: &PhaseRow) -> PhaseSeries {
    let mut s = PhaseSeries {
        mibs: Vec::with_capacity(p.samples.len()),
        iops: Vec::with_capacity(p.samples.len()),
        p50: Vec::with_capacity(p.samples.len()),
        p99: Vec::with_capacity(p.samples.len()),
        p999: Vec::with_capacity(p.samples.len()),
        targets: BTreeMap::new(),
    };
    for x in &p.samples {
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
svg.chart{width:540px;height:auto;border:1px solid #eaeef2;border-radius:4px;background:#fff}
svg .t{font-size:13px;font-weight:600}svg .yl{font-size:10px;text-anchor:end;fill:#57606a}
svg .xl{font-size:10px;text-anchor:middle;fill:#57606a}svg .ax{font-size:10px;fill:#57606a;text-anchor:middle}
svg .lg{font-size:10px}svg .g{stroke:#eaeef2}svg .f{fill:none;stroke:#d0d7de}svg .e{stroke:#1f2328;stroke-width:1.5}
"#;

/// A plain table; cells that read as numbers are right-aligned.
pub fn html_table(headers: &[String], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><tr>");
    for h in headers {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s += "</tr>";
    for r in rows {
        s += "<tr>";
        for c in r {
            let numeric = c
                .chars()
                .next()
                .is_some_and(|ch| ch.is_ascii_digit() || ch == '-' || ch == '+')
                && c.chars().any(|ch| ch.is_ascii_digit());
            let _ = write!(s, "<td{}>{}</td>", if numeric { r#" class="n""# } else { "" }, esc(c));
        }
        s += "</tr>";
    }
    s += "</table>";
    s
}

fn env_block(run: &RunDetail) -> String {
    let e = &run.environment;
    let g = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
    let mut s = format!(
        "<p class=\"meta\">host <b>{}</b> · kernel {} · {} · {} CPUs · {:.1} GiB RAM{}</p>",
        esc(&run.run.host),
        esc(&g(e, "kernel")),
        esc(&g(e, "cpu_model")),
        e.get("cpus").and_then(|x| x.as_u64()).unwrap_or(0),
        e.get("memory_bytes").and_then(|x| x.as_u64()).unwrap_or(0) as f64 / (1u64 << 30) as f64,
        e.get("source")
            .and_then(|x| x.as_str())
            .map(|x| format!(" · {}", esc(x)))
            .unwrap_or_default()
    );
    if let Some(targets) = e.get("targets").and_then(|t| t.as_array()) {
        let rows: Vec<Vec<String>> = targets
            .iter()
            .map(|t| {
                vec![
                    g(t, "path"),
                    g(t, "fs_type"),
                    g(t, "mount_options"),
                    g(t, "device"),
                    g(t, "model"),
                    g(t, "raid"),
                    g(t, "scheduler"),
                ]
            })
            .collect();
        let headers: Vec<String> = [
            "target",
            "filesystem",
            "mount options",
            "device",
            "model",
            "RAID layout",
            "scheduler",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        s += &html_table(&headers, &rows);
    }
    s
}

fn summary_table(run: &RunDetail) -> String {
    let headers: Vec<String> = [
        "phase",
        "MiB/s",
        "IOPS",
        "first done MiB/s",
        "worker min–max MiB/s",
        "lat p50 (µs)",
        "lat p99 (µs)",
        "lat p99.9 (µs)",
        "lat max (µs)",
        "CPU usr/sys (s)",
        "notes",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    let rows: Vec<Vec<String>> = run
        .phases
        .iter()
        .map(|p| {
            let mut notes = Vec::new();
            if p.cache_flattered {
                notes.push("cache?".to_string());
            }
            if p.interrupted {
                notes.push("interrupted".into());
            }
            if let Some(b) = p.verify_bad_blocks.filter(|b| *b > 0) {
                notes.push(format!("{b} bad blocks"));
            }
            vec![
                format!("{} {}", p.seq + 1, p.kind),
                format!("{:.2}", p.bytes_per_sec / MIB),
                format!("{:.0}", p.iops),
                format!("{:.2}", p.first_done_bytes_per_sec / MIB),
                format!(
                    "{:.2}–{:.2}",
                    p.worker_min_bytes_per_sec / MIB,
                    p.worker_max_bytes_per_sec / MIB
                ),
                format!("{:.1}", p.lat_p50_ns as f64 / 1e3),
                format!("{:.1}", p.lat_p99_ns as f64 / 1e3),
                format!("{:.1}", p.lat_p99_9_ns as f64 / 1e3),
                format!("{:.1}", p.lat_max_ns as f64 / 1e3),
                format!("{:.2}/{:.2}", p.cpu_user, p.cpu_sys),
                notes.join(", "),
            ]
        })
        .collect();
    html_table(&headers, &rows)
}

/// Renders the report.
pub fn render(
    sections: &[RunSection],
    comparison: Option<&CompareReport>,
    studies: &[StudySection],
    opts: &HtmlOptions,
) -> String {
    // Series first, so that like plots can share one scale.
    let series: Vec<Vec<PhaseSeries>> = sections
        .iter()
        .map(|s| s.run.phases.iter().map(series_of).collect())
        .collect();
    let mut shared: BTreeMap<String, f64> = BTreeMap::new();
    for (sec, ss) in sections.iter().zip(&series) {
        for (p, s) in sec.run.phases.iter().zip(ss) {
            for (metric, v) in [
                ("MiB/s", max_y(&s.mibs)),
                ("IOPS", max_y(&s.iops)),
                ("latency", max_y(&s.p50).max(max_y(&s.p99)).max(max_y(&s.p999))),
            ] {
                let e = shared.entry(format!("{} {metric}", p.kind)).or_insert(0.0);
                *e = e.max(v);
            }
        }
    }
    let scale = |key: &str, own: f64| {
        if opts.free_scales {
            nice_ceiling(own)
        } else {
            nice_ceiling(shared.get(key).copied().unwrap_or(own))
        }
    };

    let ids: Vec<String> = sections.iter().map(|s| s.run.run.id.to_string()).collect();
    let what = match (ids.is_empty(), studies.is_empty()) {
        (false, true) => format!("runs {}", ids.join(", ")),
        (true, false) => format!(
            "studies {}",
            studies.iter().map(|s| s.id.to_string()).collect::<Vec<_>>().join(", ")
        ),
        _ => format!(
            "runs {} · studies {}",
            ids.join(", "),
            studies.iter().map(|s| s.id.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut warnings: Vec<String> = Vec::new();
    let mut body = String::new();
    let mut thinned_any = false;
    let mut flattered: Vec<String> = Vec::new();

    if let Some(c) = comparison {
        body += "<h2>Comparison</h2>";
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
        let headers: Vec<String> = [
            "phase",
            "metric",
            "group",
            "mean ± sd (n)",
            "vs A",
            "95 % CI",
            "verdict",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        let mut rows = Vec::new();
        for m in &c.metrics {
            let gi = c.groups.iter().position(|(l, _)| *l == m.group).unwrap_or(0);
            let cm = &m.comparison;
            rows.push(vec![
                format!("{} {}", m.phase, m.kind),
                format!("{} ({})", m.metric, m.unit),
                ((b'A' + gi as u8) as char).to_string(),
                match cm.b.sd {
                    Some(sd) => format!("{:.2} ± {:.2} ({})", cm.b.mean, sd, cm.b.n),
                    None => format!("{:.2} (1)", cm.b.mean),
                },
                cm.diff_percent.map(|p| format!("{p:+.2} %")).unwrap_or_default(),
                cm.ci95_percent
                    .map(|(a, b)| format!("{a:+.2} % to {b:+.2} %"))
                    .unwrap_or_else(|| "-".into()),
                m.reading.clone(),
            ]);
        }
        body += &html_table(&headers, &rows);
        // Bar charts: one per phase and metric, each group's mean with its 95 % interval.
        let mut charts: Vec<(String, String, Vec<Bar>, String)> = Vec::new();
        for m in &c.metrics {
            let key = format!("{} {}", m.kind, m.metric);
            let title = format!("phase {} {} — {}", m.phase, m.kind, m.metric);
            let pos = match charts.iter().position(|(t, _, _, _)| *t == title) {
                Some(p) => p,
                None => {
                    let a = &m.comparison.a;
                    charts.push((
                        title.clone(),
                        key.clone(),
                        vec![Bar {
                            label: "A".into(),
                            value: a.mean,
                            ci: a.ci95,
                        }],
                        m.unit.clone(),
                    ));
                    charts.len() - 1
                }
            };
            let gi = c.groups.iter().position(|(l, _)| *l == m.group).unwrap_or(0);
            charts[pos].2.push(Bar {
                label: ((b'A' + gi as u8) as char).to_string(),
                value: m.comparison.b.mean,
                ci: m.comparison.b.ci95,
            });
        }
        let mut bar_max: BTreeMap<String, f64> = BTreeMap::new();
        for (_, key, bars, _) in &charts {
            let top = bars.iter().map(|b| b.value + b.ci.unwrap_or(0.0)).fold(0.0, f64::max);
            let e = bar_max.entry(key.clone()).or_insert(0.0);
            *e = e.max(top);
        }
        body += "<div class=\"charts\">";
        for (title, key, bars, unit) in &charts {
            let own = bars.iter().map(|b| b.value + b.ci.unwrap_or(0.0)).fold(0.0, f64::max);
            let y = if opts.free_scales {
                nice_ceiling(own)
            } else {
                nice_ceiling(bar_max[key])
            };
            body += &bar_chart(title, &format!("compare {key}"), unit, bars, y);
        }
        body += "</div>";
        warnings.extend(c.warnings.iter().cloned());
        if !c.differences.is_empty() {
            body += "<div class=\"warn\">The runs' workloads differ (compared anyway):<ul>";
            for d in &c.differences {
                let _ = write!(body, "<li>{}</li>", esc(d));
            }
            body += "</ul></div>";
        }
    }

    body += &study_sections(studies, opts.free_scales);
    for (sec, ss) in sections.iter().zip(&series) {
        let r = &sec.run;
        let _ = write!(
            body,
            "<h2 id=\"run-{}\">Run {} · {} · {}</h2><p class=\"meta\">{} · status {} · started {}{}</p>",
            r.run.id,
            r.run.id,
            esc(&r.run.kind),
            esc(r.run.job_name.as_deref().unwrap_or("")),
            esc(r.command.as_deref().unwrap_or("")),
            esc(&r.run.status),
            esc(&r.run.started_at),
            if r.run.tags.is_empty() {
                String::new()
            } else {
                format!(
                    " · tags {}",
                    esc(&r
                        .run
                        .tags
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", "))
                )
            }
        );
        body += &env_block(r);
        if !r.phases.is_empty() {
            body += &summary_table(r);
        }
        for t in &sec.extra {
            let _ = write!(body, "<h3>{}</h3>", esc(&t.name));
            let rows: Vec<Vec<String>> = t
                .rows
                .iter()
                .map(|row| row.iter().map(|c| c.text()).collect())
                .collect();
            body += &html_table(&t.headers, &rows);
        }
        if r.phases.iter().any(|p| p.cache_flattered) {
            flattered.push(r.run.id.to_string());
        }
        for (p, s) in r.phases.iter().zip(ss) {
            let _ = write!(body, "<h3>phase {} · {}</h3>", p.seq + 1, esc(&p.kind));
            if p.samples.is_empty() {
                body += "<p class=\"meta\">no interval samples stored for this phase (imported results carry none)</p>";
                continue;
            }
            body += "<div class=\"charts\">";
            let k = |m: &str| format!("{} {m}", p.kind);
            // With several targets, each gets its own line beside the total.
            let target_name = |t: u16| {
                r.environment
                    .get("targets")
                    .and_then(|x| x.get(t as usize))
                    .and_then(|x| x.get("path"))
                    .and_then(|x| x.as_str())
                    .map(|p| p.rsplit('/').find(|c| !c.is_empty()).unwrap_or(p).to_string())
                    .unwrap_or_else(|| format!("target {}", t + 1))
            };
            let with_targets = |total: &Vec<(f64, f64)>, name: &str, pick: &dyn Fn(&(Points, Points)) -> Points| {
                let mut v = vec![Series {
                    name: name.into(),
                    color: COLORS[0],
                    points: total.clone(),
                }];
                for (i, (t, pts)) in s.targets.iter().enumerate() {
                    v.push(Series {
                        name: target_name(*t),
                        color: COLORS[(i + 1) % COLORS.len()],
                        points: pick(pts),
                    });
                }
                v
            };
            let (c1, t1) = line_chart(
                &format!("{} — throughput", p.kind),
                &k("MiB/s"),
                "MiB/s",
                "seconds",
                &with_targets(&s.mibs, if s.targets.is_empty() { "MiB/s" } else { "total" }, &|x| {
                    x.0.clone()
                }),
                scale(&k("MiB/s"), max_y(&s.mibs)),
            );
            let (c2, t2) = line_chart(
                &format!("{} — IOPS", p.kind),
                &k("IOPS"),
                "IOPS",
                "seconds",
                &with_targets(&s.iops, if s.targets.is_empty() { "IOPS" } else { "total" }, &|x| {
                    x.1.clone()
                }),
                scale(&k("IOPS"), max_y(&s.iops)),
            );
            let lat_own = max_y(&s.p50).max(max_y(&s.p99)).max(max_y(&s.p999));
            let (c3, t3) = line_chart(
                &format!("{} — latency percentiles", p.kind),
                &k("latency"),
                "µs",
                "seconds",
                &[
                    Series {
                        name: "p50".into(),
                        color: COLORS[0],
                        points: s.p50.clone(),
                    },
                    Series {
                        name: "p99".into(),
                        color: COLORS[3],
                        points: s.p99.clone(),
                    },
                    Series {
                        name: "p99.9".into(),
                        color: COLORS[1],
                        points: s.p999.clone(),
                    },
                ],
                scale(&k("latency"), lat_own),
            );
            body += &c1;
            body += &c2;
            body += &c3;
            body += "</div>";
            if t1 || t2 || t3 {
                thinned_any = true;
                let _ = write!(
                    body,
                    "<p class=\"meta\">{} interval samples, thinned for display to at most {} points per line (the lowest and highest of each slice kept, so spikes show); the tables and exports hold every sample.</p>",
                    p.samples.len(),
                    crate::svg::MAX_POINTS
                );
            }
        }
    }

    if !flattered.is_empty() {
        warnings.push(format!(
            "run{} {}: some phases may have been flattered by the page cache (file set under 3 × RAM without O_DIRECT or a flush)",
            if flattered.len() > 1 { "s" } else { "" },
            flattered.join(", ")
        ));
    }
    let mut html = String::with_capacity(body.len() + 4096);
    let _ = write!(
        html,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>storlab report — {}</title><style>{STYLE}</style></head><body><h1>storlab report</h1><p class=\"meta\">{} · generated {} by storlab {}{}{}</p>",
        esc(&what),
        esc(&what),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        env!("CARGO_PKG_VERSION"),
        if opts.free_scales { " · each plot on its own scale" } else { " · like plots share one scale" },
        if thinned_any { " · long series thinned for display" } else { "" }
    );
    if !warnings.is_empty() {
        html += "<div class=\"warn\"><b>Warnings</b><ul>";
        for w in &warnings {
            let _ = write!(html, "<li>{}</li>", esc(w));
        }
        html += "</ul></div>";
    }
    html += &body;
    html += "</body></html>\n";
    html
}
