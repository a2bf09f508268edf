//! `storlab risk`'s tables and its section of the HTML report: the chance of data loss per
//! array and for the fleet, over verify intervals and over the scheduler's k.

use std::fmt::Write;

use storlab_model::risk::{RiskReport, RiskRow};

use crate::svg::{esc, line_chart, nice_ceiling, Series, COLORS};
use crate::table::{Cell, Table};

pub use storlab_units::human_hours;

/// `storlab risk`'s answer for the terminal: the inputs, the figures as asked, against the
/// verify interval and against the scheduler's k, and the simulation's check when it ran.
pub fn render_text(report: &RiskReport) -> String {
    let mut out = String::new();
    for (k, v) in inputs(report) {
        let _ = writeln!(out, "{k:<22}{v}");
    }
    out.push('\n');
    out += &rows_table("risk", &report.summary, report.years).to_text();
    let _ = writeln!(
        out,
        "\nagainst the verify interval (rebuild {}):",
        human_hours(report.by_interval[0].rebuild_hours)
    );
    out += &rows_table("interval", &report.by_interval, report.years).to_text();
    if !report.by_k.is_empty() {
        out += "\nagainst the scheduler's k:\n";
        out += &rows_table("k", &report.by_k, report.years).to_text();
    }
    if let Some(c) = &report.check {
        let _ = writeln!(
            out,
            "\nsimulated, {} paths: MTTDL {:.4e} years (95 % interval {:.4e} to {:.4e}); solved {:.4e} years: {}",
            c.runs,
            c.mttdl_years[0],
            c.mttdl_years[1],
            c.mttdl_years[2],
            c.solved_years,
            if c.agrees { "within" } else { "outside" }
        );
    }
    out
}

/// Three significant digits, for values over many orders of magnitude.
fn sig(v: f64) -> Cell {
    if v == 0.0 || (1e-3..1e6).contains(&v.abs()) {
        let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as u8;
        Cell::fixed(v, if v == 0.0 { 0 } else { digits })
    } else {
        Cell::Text(format!("{v:.2e}"))
    }
}

fn interval_days(r: &RiskRow) -> Cell {
    r.verify_interval_hours
        .map_or(Cell::Text("never".into()), |h| sig(h / 24.0))
}

/// Rows of figures: what varies, the interval, the rebuild, the chances and the mean time.
pub fn rows_table(name: &str, rows: &[RiskRow], years: f64) -> Table {
    let with_k = rows.iter().any(|r| r.k.is_some());
    let horizon = if (years - 1.0).abs() < 1e-9 {
        "year".to_string()
    } else {
        format!("{years} years")
    };
    let mut head: Vec<String> = vec!["assumption".into()];
    if with_k {
        head.extend(["k".into(), "pool loss %".into()]);
    }
    head.extend([
        "verify every d".into(),
        "rebuild h".into(),
        format!("P(loss) array / {horizon}"),
        format!("P(loss) fleet / {horizon}"),
        "MTTDL years".into(),
    ]);
    let head_refs: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(name, &head_refs);
    for r in rows {
        let mut row = vec![Cell::Text(r.label.clone())];
        if with_k {
            row.push(r.k.map_or(Cell::Empty, |k| Cell::Int(k as i64)));
            row.push(r.pool_loss.map_or(Cell::Empty, |l| Cell::fixed(l, 2)));
        }
        row.extend([
            interval_days(r),
            sig(r.rebuild_hours),
            Cell::Text(format!("{:.3e}", r.loss_array)),
            Cell::Text(format!("{:.3e}", r.loss_fleet)),
            Cell::Text(format!("{:.4e}", r.mttdl_years)),
        ]);
        t.push(row);
    }
    t
}

/// The model's inputs, one per line.
pub fn inputs(r: &RiskReport) -> Vec<(String, String)> {
    let mut v = vec![
        ("array".into(), format!("{}, {} drives", r.raid, r.drives)),
        ("fleet".into(), format!("{} arrays", r.arrays)),
        (
            "drive failures".into(),
            format!(
                "{:.4} per drive-year ({:.2} per 1,000 drives per month)",
                r.failures_per_drive_year,
                r.failures_per_drive_year * 1000.0 / 12.0
            ),
        ),
        (
            "latent sector errors".into(),
            format!("{:.4} per drive-year", r.latent_per_drive_year),
        ),
        ("rebuild".into(), r.rebuild_source.clone()),
        ("verify".into(), r.verify_source.clone()),
    ];
    if let Some(c) = r.capacity_bytes {
        let words = if c >= 1_000_000_000_000 {
            format!("{:.2} TB", c as f64 / 1e12)
        } else {
            format!("{:.2} GB", c as f64 / 1e9)
        };
        v.insert(1, ("drive capacity".into(), words));
    }
    v
}

/// A unit for chances whose largest is `top`, so that the axis reads in whole numbers: percent,
/// per million or per billion.
fn chance_unit(top: f64) -> (f64, &'static str) {
    if top >= 1e-3 {
        (100.0, "P(loss) %")
    } else if top >= 1e-6 {
        (1e6, "P(loss) per million")
    } else {
        (1e9, "P(loss) per billion")
    }
}

/// The risk section: the inputs, the tables, and the chance of loss for the fleet against the
/// verify interval (and against k).
pub fn render_html(r: &RiskReport) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<section class=\"risk\"><h2>Risk of data loss: {}</h2><dl>",
        esc(&r.raid)
    );
    for (k, v) in inputs(r) {
        let _ = write!(h, "<dt>{}</dt><dd>{}</dd>", esc(&k), esc(&v));
    }
    h += "</dl>";
    h += &rows_table("risk", &r.summary, r.years).to_html();
    h += "<h3>Against the verify interval</h3>";
    h += &rows_table("risk by verify interval", &r.by_interval, r.years).to_html();
    let (factor, unit) = chance_unit(r.by_interval.iter().map(|x| x.loss_fleet).fold(0.0, f64::max));
    let pts: Vec<(f64, f64)> = r
        .by_interval
        .iter()
        .filter_map(|x| Some((x.verify_interval_hours? / 24.0, x.loss_fleet * factor)))
        .collect();
    let top = nice_ceiling(pts.iter().map(|p| p.1).fold(0.0, f64::max));
    let series = [Series {
        name: String::new(),
        color: COLORS[0],
        points: pts,
    }];
    let (svg, _) = line_chart(
        "Chance the fleet loses data within the horizon, by verify interval",
        "risk-interval",
        unit,
        "days between verifies",
        &series,
        top,
    );
    h += &svg;
    if !r.by_k.is_empty() {
        h += "<h3>Against the scheduler's k</h3>";
        h += &rows_table("risk by k", &r.by_k, r.years).to_html();
        let (factor, unit) = chance_unit(r.by_k.iter().map(|x| x.loss_fleet).fold(0.0, f64::max));
        let pts: Vec<(f64, f64)> = r
            .by_k
            .iter()
            .filter_map(|x| Some((x.k? as f64, x.loss_fleet * factor)))
            .collect();
        let top = nice_ceiling(pts.iter().map(|p| p.1).fold(0.0, f64::max));
        let (svg, _) = line_chart(
            "Chance the fleet loses data within the horizon, by servers verifying at once",
            "risk-k",
            unit,
            "k",
            &[Series {
                name: String::new(),
                color: COLORS[1],
                points: pts,
            }],
            top,
        );
        h += &svg;
    }
    if let Some(c) = &r.check {
        let _ = write!(
            h,
            "<p>Simulation of the same chain, {} paths: MTTDL {:.4e} years (95 % interval {:.4e} to {:.4e}); the solution, {:.4e} years, {}.</p>",
            c.runs,
            c.mttdl_years[0],
            c.mttdl_years[1],
            c.mttdl_years[2],
            c.solved_years,
            if c.agrees { "lies within it" } else { "lies outside it" }
        );
    }
    h += "</section>";
    h
}
