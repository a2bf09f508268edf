//! A qualification's verdict: the table per criterion (observed, interval, threshold, PASS /
//! FAIL / UNDECIDED, repetitions), the comparison with an earlier qualification (`--against`),
//! and the HTML certificate — the plan, the environment of every host, the verdicts, each
//! criterion's figures look by look with its interval and threshold on scales shared by like
//! figures, and the statistics named. Everything is drawn from what was stored.

use std::collections::BTreeMap;
use std::fmt::Write;

use storlab_model::qualify::{Criterion, Decision, QualifyParams, Reference};
use storlab_stats::sequential::assess;

use storlab_model::run::RunDetail;

use crate::svg::{esc, line_chart_marked, nice_ceiling, Series, COLORS};
use crate::table::{human_duration, Cell, Table};

/// A figure with its unit, as the verdict shows it (a latency in µs, ms or s as it is large).
pub fn with_unit(v: f64, unit: &str) -> String {
    if unit == "µs" && v.abs() >= 1e6 {
        return with_unit(v / 1e6, "s");
    }
    if unit == "µs" && v.abs() >= 1e3 {
        return with_unit(v / 1e3, "ms");
    }
    let n = if v.abs() >= 1000.0 {
        let s = format!("{v:.0}");
        // Thousands apart, as a signed report reads them.
        let (sign, digits) = s.split_at(if s.starts_with('-') { 1 } else { 0 });
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v == 0.0 {
        "0".into()
    } else {
        let digits = (2 - v.abs().log10().floor() as i32).clamp(1, 6) as usize;
        format!("{v:.digits$}")
    };
    match unit {
        "× baseline" => format!("{n} ×"),
        "%" => format!("{n} %"),
        u => format!("{n} {u}"),
    }
}

/// The threshold as the criterion holds it.
fn threshold_text(c: &Criterion) -> String {
    let v = match &c.reference {
        Reference::Baseline { name, .. } => format!("{} × baseline ({name})", with_unit(c.threshold, "").trim()),
        Reference::Impact { .. } => format!("cost {}", with_unit(c.threshold, "%")),
        Reference::Absolute => with_unit(c.threshold, &c.unit),
    };
    format!("{} {v}", c.direction.symbol())
}

/// The interval's confidence in words: "95 %".
fn confidence_text(c: &Criterion) -> String {
    let conf = match c.reference {
        // The design of a baseline's criterion holds half the error; the criterion the whole.
        Reference::Baseline { .. } => 1.0 - 2.0 * (1.0 - c.design.confidence),
        _ => c.design.confidence,
    };
    format!("{} %", (conf * 1000.0).round() / 10.0)
}

/// The verdict: a row per criterion.
pub fn verdict_table(p: &QualifyParams) -> Table {
    let mut t = Table::new(
        "verdict",
        &[
            "#",
            "job",
            "criterion",
            "line",
            "phase",
            "observed",
            "interval",
            "confidence",
            "threshold",
            "verdict",
            "repeats",
            "notes",
        ],
    );
    for c in &p.criteria {
        t.push(vec![
            c.index.into(),
            c.job.as_str().into(),
            c.text.as_str().into(),
            c.line.into(),
            c.phase.as_str().into(),
            c.observed.map(|v| with_unit(v, &c.unit)).into(),
            c.interval
                .map_or_else(
                    || "— (see notes)".to_string(),
                    |(a, b)| format!("{} – {}", with_unit(a, &c.unit), with_unit(b, &c.unit)),
                )
                .into(),
            confidence_text(c).into(),
            threshold_text(c).into(),
            c.decision.word().into(),
            (c.values.len() as u32).into(),
            crate::undecided::why(c)
                .into_iter()
                .chain(c.warnings.iter().cloned())
                .collect::<Vec<_>>()
                .join("; ")
                .into(),
        ]);
    }
    t
}

/// The whole verdict in a line.
pub fn outcome_line(p: &QualifyParams) -> String {
    let count = |d: Decision| p.criteria.iter().filter(|c| c.decision == d).count();
    let flagged: Vec<String> = (p.criteria.iter())
        .filter(|c| !c.warnings.is_empty())
        .map(|c| format!("#{}", c.index))
        .collect();
    let flagged = match flagged.len() {
        0 => String::new(),
        _ => format!(
            " — decided on figures with warnings (criteria {}: see notes)",
            flagged.join(", ")
        ),
    };
    format!(
        "verdict: {} — {} passed, {} failed, {} undecided of {} criteria{flagged}",
        p.outcome().word(),
        count(Decision::Pass),
        count(Decision::Fail),
        count(Decision::Undecided),
        p.criteria.len()
    )
}

/// Qualifications side by side: each one's study, when, hosts, plan, verdict and counts.
pub fn list_table(rows: &[(i64, &str, &[String], usize, &QualifyParams)]) -> Table {
    let mut t = Table::new(
        "qualifications",
        &[
            "study",
            "stored",
            "hosts",
            "plan",
            "verdict",
            "pass",
            "fail",
            "undecided",
            "runs",
            "against",
        ],
    );
    for (id, at, hosts, runs, p) in rows {
        let count = |d: Decision| p.criteria.iter().filter(|c| c.decision == d).count();
        t.push(vec![
            (*id).into(),
            (*at).into(),
            hosts.join(", ").into(),
            p.plan_name.as_str().into(),
            p.outcome().word().into(),
            count(Decision::Pass).into(),
            count(Decision::Fail).into(),
            count(Decision::Undecided).into(),
            (*runs).into(),
            p.against.into(),
        ]);
    }
    t
}

/// An earlier qualification against this one, criterion by criterion (matched by job and
/// text): each verdict then and now, the figure's change and, from the two sets of runs,
/// Welch's 95 % interval of the change — whether it is real.
pub fn comparison(earlier: &QualifyParams, now: &QualifyParams) -> Table {
    let mut t = Table::new(
        "against",
        &[
            "job",
            "criterion",
            "then",
            "now",
            "observed then",
            "observed now",
            "change %",
            "change 95 % (Welch)",
            "real?",
        ],
    );
    for c in &now.criteria {
        let Some(e) = earlier.criteria.iter().find(|e| e.job == c.job && e.text == c.text) else {
            t.push(vec![
                c.job.as_str().into(),
                c.text.as_str().into(),
                "—".into(),
                c.decision.word().into(),
                Cell::Empty,
                c.observed.map(|v| with_unit(v, &c.unit)).into(),
                Cell::Empty,
                Cell::Empty,
                "new criterion".into(),
            ]);
            continue;
        };
        let w = storlab_stats::compare(&e.values, &c.values);
        let change = w.as_ref().and_then(|w| w.diff_percent);
        let real = match w.as_ref().map(|w| w.verdict) {
            Some(storlab_stats::Verdict::Higher) => "yes: higher",
            Some(storlab_stats::Verdict::Lower) => "yes: lower",
            Some(storlab_stats::Verdict::NotSignificant) => "no significant change",
            _ => "too few runs to tell",
        };
        t.push(vec![
            c.job.as_str().into(),
            c.text.as_str().into(),
            e.decision.word().into(),
            c.decision.word().into(),
            e.observed.map(|v| with_unit(v, &e.unit)).into(),
            c.observed.map(|v| with_unit(v, &c.unit)).into(),
            change.map(|x| Cell::fixed(x, 1)).unwrap_or(Cell::Empty),
            w.and_then(|w| w.ci95_percent)
                .map(|(a, b)| format!("{a:+.1} to {b:+.1} %"))
                .into(),
            real.into(),
        ]);
    }
    t
}

/// A stored qualification for the terminal.
pub fn render_text(id: i64, runs: usize, p: &QualifyParams) -> String {
    let mut s = format!(
        "qualification {} · plan \"{}\" ({}) · {} runs · {} · {}\n",
        id,
        p.plan_name,
        p.plan_path,
        runs,
        human_duration(p.seconds),
        p.stopped.map(|x| x.words()).unwrap_or("")
    );
    if let Some(a) = p.against {
        let _ = writeln!(s, "against qualification {a}");
    }
    let _ = writeln!(s, "{}\n", outcome_line(p));
    s += &verdict_table(p).to_text();
    let _ = writeln!(s, "\nmethod: {}", p.method);
    s
}

/// A look: the repetitions so far, the observed figure and the interval there.
type Look = (usize, Option<f64>, Option<(f64, f64)>);

/// Each look's assessment of a criterion, recomputed from its stored figures and design, as it
/// was decided.
fn looks(c: &Criterion) -> Vec<Look> {
    let log = c.log_scale;
    let base: Option<&[f64]> = match &c.reference {
        Reference::Baseline { values, .. } => Some(values),
        _ => None,
    };
    (1..=c.values.len())
        .map(|n| {
            let a = assess(&c.design, &c.values[..n], log, base, c.threshold, c.direction);
            (n, a.observed, a.interval)
        })
        .collect()
}

/// The value a criterion's chart plots for each repetition: the run's figure (each pair's cost,
/// against a task; against a baseline, the run's figure over the baseline's mean).
fn plotted(c: &Criterion) -> Vec<f64> {
    match &c.reference {
        Reference::Baseline { values, .. } => {
            let m = if c.log_scale {
                (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
            } else {
                values.iter().sum::<f64>() / values.len() as f64
            };
            c.values.iter().map(|v| v / m).collect()
        }
        _ => c.values.clone(),
    }
}

/// The largest of a criterion's figures and interval bounds, and its threshold when that lies
/// within three times of them (a threshold far away would flatten the figures into a line).
fn chart_top(c: &Criterion) -> f64 {
    let data = plotted(c)
        .into_iter()
        .chain(looks(c).iter().filter_map(|x| x.2.map(|i| i.1)))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    if c.threshold <= 3.0 * data || data == 0.0 {
        data.max(c.threshold)
    } else {
        data
    }
}

/// One chart per criterion: its figure each repetition, the interval at each look and the
/// threshold, on a scale shared by the criteria of the same unit (unless `free`).
fn charts(p: &QualifyParams, free: bool) -> String {
    let mut shared: BTreeMap<&str, f64> = BTreeMap::new();
    for c in &p.criteria {
        let e = shared.entry(c.unit.as_str()).or_insert(0.0);
        *e = e.max(chart_top(c));
    }
    let mut s = String::from("<div class=\"charts\">");
    for c in &p.criteria {
        let top = nice_ceiling(if free { chart_top(c) } else { shared[c.unit.as_str()] } * 1.05);
        let l = looks(c);
        let at = |f: &dyn Fn(&Look) -> Option<f64>| -> Vec<(f64, f64)> {
            l.iter().filter_map(|x| f(x).map(|v| (x.0 as f64, v))).collect()
        };
        let mut series = vec![
            Series {
                name: "runs".into(),
                color: COLORS[0],
                points: plotted(c)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| ((i + 1) as f64, *v))
                    .collect(),
            },
            Series {
                name: "low".into(),
                color: COLORS[2],
                points: at(&|x| x.2.map(|i| i.0)),
            },
            Series {
                name: "high".into(),
                color: COLORS[3],
                points: at(&|x| x.2.map(|i| i.1)),
            },
        ];
        let on_scale = c.threshold <= top;
        if on_scale {
            series.push(Series {
                name: "threshold".into(),
                color: COLORS[1],
                points: vec![(1.0, c.threshold), (c.values.len().max(1) as f64, c.threshold)],
            });
        }
        let (svg, _) = line_chart_marked(
            &format!("#{} {}", c.index, c.decision.word()),
            &format!("criterion {}", c.index),
            &c.unit,
            "repetition",
            &series,
            top,
            &c.decided_at
                .map(|n| vec![(n as f64, "decided".to_string())])
                .unwrap_or_default(),
        );
        let _ = write!(
            s,
            "<figure data-criterion=\"{}\" data-threshold=\"{}\">{svg}<figcaption>{} · {}{}</figcaption></figure>",
            c.index,
            c.threshold,
            esc(&c.job),
            esc(&c.text),
            if on_scale {
                String::new()
            } else {
                format!(" (threshold {}: off the scale)", esc(&with_unit(c.threshold, &c.unit)))
            }
        );
    }
    s += "</div>";
    s
}

/// Each host's machine and storage, from its first run in the qualification.
fn environments(runs: &[RunDetail]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut s = String::new();
    for r in runs {
        if seen.contains(&r.run.host.as_str()) {
            continue;
        }
        seen.push(&r.run.host);
        s += &crate::runs::env_html(r);
    }
    s
}

/// The certificate: the qualification's section of the HTML report.
pub fn render_html(
    runs: &[RunDetail],
    members: usize,
    p: &QualifyParams,
    earlier: Option<&QualifyParams>,
    free: bool,
) -> String {
    let outcome = p.outcome();
    let colour = match outcome {
        Decision::Pass => "#1a7f37",
        Decision::Fail => "#d1242f",
        Decision::Undecided => "#9a6700",
    };
    let mut s = format!(
        "<p class=\"meta\">plan <b>{}</b> ({}) · {} runs · {} · stopped: {}{}</p>",
        esc(&p.plan_name),
        esc(&p.plan_path),
        members,
        human_duration(p.seconds),
        p.stopped.map(|x| x.words()).unwrap_or(""),
        p.against
            .map(|a| format!(" · against qualification {a}"))
            .unwrap_or_default()
    );
    let _ = write!(
        s,
        "<p class=\"verdict\" data-outcome=\"{}\" style=\"font-size:20px;font-weight:600;color:{colour}\">{}</p>",
        outcome.word(),
        esc(&outcome_line(p))
    );
    s += &verdict_table(p).to_html();
    if let Some(e) = earlier {
        s += "<h3>Against the earlier qualification</h3>";
        s += &comparison(e, p).to_html();
    }
    s += "<h3>Each criterion, look by look</h3>";
    s += &charts(p, free);
    s += "<h3>The statistics</h3>";
    let _ = write!(s, "<p>{}</p>", esc(&p.method));
    s += "<table><tr><th>criterion</th><th>confidence</th><th>looks</th><th>nominal level of each look</th></tr>";
    for c in &p.criteria {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{} to {}</td><td>{:.5}</td></tr>",
            c.index,
            confidence_text(c),
            c.design.first_look,
            c.design.max_repeats,
            c.design.nominal_alpha
        );
    }
    s += "</table>";
    s += "<h3>Where it ran</h3>";
    s += &environments(runs);
    s += "<h3>The plan</h3>";
    let _ = write!(s, "<pre class=\"plan\">{}</pre>", esc(&p.plan_text));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_as_a_report_reads_them() {
        assert_eq!(with_unit(20134.4, "IOPS"), "20,134 IOPS");
        assert_eq!(with_unit(412.34, "MiB/s"), "412.3 MiB/s");
        assert_eq!(with_unit(0.9731, "× baseline"), "0.973 ×");
        assert_eq!(with_unit(3.25, "%"), "3.25 %");
        assert_eq!(with_unit(-1234.0, "%"), "-1,234 %");
        assert_eq!(with_unit(10_000_000.0, "µs"), "10.0 s");
        assert_eq!(with_unit(2500.0, "µs"), "2.50 ms");
    }
}
