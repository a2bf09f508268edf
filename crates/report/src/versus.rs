//! A compare (`storlab compare`) for the terminal and the HTML report: the outcome in a line,
//! a verdict per phase and figure (the ratio B/A with its interval, the rounds, what decided
//! it or what it lacked), the warnings its runs carry, and the method.

use std::fmt::Write as _;

use storlab_model::versus::{CompareParams, FigureVerdict};
use storlab_units::sig3;

use crate::svg::esc;
use crate::table::{Cell, Table};

/// "2 decided for xfs, 1 equivalent, 1 undecided of 4 figures".
pub fn outcome_line(p: &CompareParams) -> String {
    let count = |w: &str| p.verdicts.iter().filter(|v| v.verdict == w).count();
    let mut parts: Vec<String> = p
        .names
        .iter()
        .map(|n| (n, count(n)))
        .filter(|(_, k)| *k > 0)
        .map(|(n, k)| format!("{k} better on {n}"))
        .collect();
    for w in ["equivalent", "undecided"] {
        if count(w) > 0 {
            parts.push(format!("{} {w}", count(w)));
        }
    }
    format!("{} of {} figure(s)", parts.join(", "), p.verdicts.len())
}

/// The verdicts as a table: phase, figure, verdict, B/A and its interval, rounds, reading.
pub fn verdict_table(p: &CompareParams) -> Table {
    let ratio = format!("{}/{}", p.names[1], p.names[0]);
    let mut t = Table::with_headers(
        "verdicts",
        vec![
            "phase".into(),
            "figure".into(),
            "verdict".into(),
            ratio,
            "interval".into(),
            "rounds".into(),
            "reading".into(),
        ],
    );
    for v in &p.verdicts {
        t.push(vec![
            Cell::Text(v.phase.clone()),
            Cell::Text(v.figure.clone()),
            Cell::Text(v.verdict.clone()),
            v.ratio.map(|r| Cell::Text(sig3(r))).unwrap_or(Cell::Empty),
            v.ci.map(|(lo, hi)| Cell::Text(format!("{} to {}", sig3(lo), sig3(hi))))
                .unwrap_or(Cell::Empty),
            Cell::from(v.runs),
            Cell::Text(v.reading.clone()),
        ]);
    }
    t
}

/// A compare for the terminal.
pub fn render_text(id: i64, runs: usize, p: &CompareParams) -> String {
    let mut s = format!(
        "compare {id} · {} ({}) against {} ({}) · {} round(s), {runs} runs · stopped: {}\n",
        p.names[1], p.targets[1], p.names[0], p.targets[0], p.rounds, p.stopped
    );
    let _ = writeln!(
        s,
        "{} · margin ±{:.0} % · confidence {:.0} % per figure over all looks\n",
        outcome_line(p),
        p.margin * 100.0,
        p.design.confidence * 100.0
    );
    s += &verdict_table(p).to_text();
    for w in &p.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    let _ = writeln!(s, "\nmethod: {}", p.method);
    s
}

/// A verdict's bar: the ratio and its interval on a log axis around 1, the margin shaded, the
/// two targets named at the ends.
fn ratio_bar(v: &FigureVerdict, p: &CompareParams) -> String {
    let (Some(r), Some((lo, hi))) = (v.ratio, v.ci) else {
        return String::from("<span>—</span>");
    };
    let span = [lo, hi, 1.0 + p.margin * 2.0, 1.0 / (1.0 + p.margin * 2.0)]
        .iter()
        .map(|x| x.ln().abs())
        .fold(0.0f64, f64::max)
        * 1.1;
    let (w, h) = (360.0, 28.0);
    let x = |v: f64| w / 2.0 + v.ln() / span * (w / 2.0 - 4.0);
    let m = 1.0 + p.margin;
    format!(
        "<svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}/{} {r:.3} ({lo:.3} to {hi:.3})\">\
<rect x=\"{:.1}\" y=\"2\" width=\"{:.1}\" height=\"{}\" fill=\"#e8f0e8\"/>\
<line x1=\"{:.1}\" y1=\"0\" x2=\"{:.1}\" y2=\"{h}\" stroke=\"#888\"/>\
<line x1=\"{:.1}\" y1=\"14\" x2=\"{:.1}\" y2=\"14\" stroke=\"#333\" stroke-width=\"2\"/>\
<circle cx=\"{:.1}\" cy=\"14\" r=\"4\" fill=\"#1f4e9c\"/>\
<text x=\"2\" y=\"26\" font-size=\"9\">← {}</text><text x=\"{:.1}\" y=\"26\" font-size=\"9\" text-anchor=\"end\">{} →</text></svg>",
        esc(&p.names[1]),
        esc(&p.names[0]),
        x(1.0 / m),
        x(m) - x(1.0 / m),
        h - 4.0,
        x(1.0),
        x(1.0),
        x(lo),
        x(hi),
        x(r),
        esc(&format!("{} higher", p.names[0])),
        w - 2.0,
        esc(&format!("{} higher", p.names[1])),
    )
}

/// A compare's section of the HTML report: the outcome, the verdicts with a bar each, the
/// warnings, the method.
pub fn render_html(p: &CompareParams) -> String {
    let mut s = format!(
        "<p><b>{}</b> ({}) against <b>{}</b> ({}): {} · {} round(s) · stopped: {} · margin ±{:.0} % · confidence {:.0} %</p>",
        esc(&p.names[1]),
        esc(&p.targets[1]),
        esc(&p.names[0]),
        esc(&p.targets[0]),
        esc(&outcome_line(p)),
        p.rounds,
        esc(&p.stopped),
        p.margin * 100.0,
        p.design.confidence * 100.0
    );
    s += "<table><tr><th>phase</th><th>figure</th><th>verdict</th><th>ratio and interval</th><th>reading</th></tr>";
    for v in &p.verdicts {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&v.phase),
            esc(&v.figure),
            esc(&v.verdict),
            ratio_bar(v, p),
            esc(&v.reading)
        );
    }
    s += "</table>";
    for w in &p.warnings {
        let _ = write!(s, "<p class=\"warning\">warning: {}</p>", esc(w));
    }
    let _ = write!(s, "<p class=\"method\">{}</p>", esc(&p.method));
    s
}
