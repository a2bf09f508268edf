//! Inline SVG charts for the HTML report: line charts of series over time and bar charts with
//! error bars.
//!
//! Why not a plotting crate: the report must open from a mail attachment with no fonts, scripts
//! or fetches, every chart carries its axis maximum as a data attribute (the tests and the
//! shared-scale rule read it), and long series are drawn as min/max envelopes. Those needs are
//! met in under 200 lines of plain SVG; the plotting crates bring font rasterisers and their
//! own axis logic.

use std::fmt::Write;

/// Points a series is thinned to before drawing (a chart is 640 px wide: more cannot show).
pub const MAX_POINTS: usize = 1200;

/// A named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// CSS colour.
    pub color: &'static str,
    /// Points, x ascending.
    pub points: Vec<(f64, f64)>,
}

/// Colours for series and bars, in order.
pub const COLORS: [&str; 6] = ["#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#57606a"];

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The smallest "nice" number (1, 2, 2.5 or 5 times a power of ten) at or above `v`.
pub fn nice_ceiling(v: f64) -> f64 {
    if v.is_nan() || v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

/// An axis's ticks (x and y alike): round numbers from 0 to at most `max`, a step of 1, 2, 2.5 or 5 times a
/// power of ten giving three to six of them (0, 10, 20, 30 s, never 7.52).
pub fn round_ticks(max: f64) -> Vec<f64> {
    if !(max > 0.0 && max.is_finite()) {
        return vec![0.0];
    }
    let step = nice_ceiling(max / 5.0);
    (0..)
        .map(|i| i as f64 * step)
        .take_while(|v| *v <= max * (1.0 + 1e-9))
        .collect()
}

/// Thins a series to at most `MAX_POINTS` points by keeping, in each of MAX_POINTS / 2 equal
/// slices, its lowest and highest point (in x order), so spikes survive. Returns the points
/// and whether they were thinned.
pub fn thin(points: &[(f64, f64)]) -> (Vec<(f64, f64)>, bool) {
    if points.len() <= MAX_POINTS {
        return (points.to_vec(), false);
    }
    let buckets = MAX_POINTS / 2;
    let mut out = Vec::with_capacity(MAX_POINTS);
    for b in 0..buckets {
        let lo = b * points.len() / buckets;
        let hi = ((b + 1) * points.len() / buckets).max(lo + 1);
        let slice = &points[lo..hi];
        let (mut imin, mut imax) = (0, 0);
        for (i, p) in slice.iter().enumerate() {
            if p.1 < slice[imin].1 {
                imin = i;
            }
            if p.1 > slice[imax].1 {
                imax = i;
            }
        }
        let (a, c) = (imin.min(imax), imin.max(imax));
        out.push(slice[a]);
        if c != a {
            out.push(slice[c]);
        }
    }
    (out, true)
}

const W: f64 = 640.0;
const H: f64 = 240.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 36.0;

fn label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e6 {
        format!("{:.3}M", v / 1e6)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + ""
    } else if v.abs() >= 1e4 {
        // A step of 2.5: 12.5k, 37.5k, never "12k, 25k, 38k".
        format!("{:.1}", v / 1e3).trim_end_matches(".0").to_string() + "k"
    } else if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

fn frame(s: &mut String, title: &str, key: &str, y_unit: &str, x_unit: &str, y_max: f64, x_max: f64) {
    let _ = write!(
        s,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" role="img" data-key="{}" data-ymax="{}" data-xmax="{}"><title>{}</title>"#,
        esc(key),
        y_max,
        x_max,
        esc(title)
    );
    let _ = write!(s, r##"<text x="{LEFT}" y="16" class="t">{}</text>"##, esc(title));
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    // The y axis ticks by the x axis's rule (round steps, never 0.62, 1.25, 1.88), its top
    // labelled too when the top is not a step.
    let mut ticks = round_ticks(y_max);
    let step = ticks.get(1).copied().unwrap_or(y_max);
    if ticks.last().is_some_and(|t| *t < y_max * (1.0 - 1e-9)) {
        // A step closer to the top than half a step would print over its label.
        if ticks.len() > 1 && y_max - ticks[ticks.len() - 1] < step / 2.0 {
            ticks.pop();
        }
        ticks.push(y_max);
    }
    for (i, v) in ticks.iter().enumerate() {
        let y = TOP + ph - ph * if y_max > 0.0 { v / y_max } else { 0.0 };
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" class="g"/><text x="{}" y="{:.1}" class="yl"{}>{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            if i + 1 == ticks.len() {
                r#" data-axis="ymax""#
            } else {
                ""
            },
            label(*v)
        );
    }
    if x_max > 0.0 {
        for v in round_ticks(x_max) {
            let x = LEFT + pw * v / x_max;
            let _ = write!(
                s,
                r##"<text x="{x:.1}" y="{}" class="xl">{}</text>"##,
                TOP + ph + 16.0,
                label(v)
            );
        }
    }
    let _ = write!(
        s,
        r##"<text x="{}" y="{}" class="ax">{}</text><text x="12" y="{}" class="ax" transform="rotate(-90 12 {})">{}</text>"##,
        LEFT + pw / 2.0,
        H - 4.0,
        esc(x_unit),
        TOP + ph / 2.0,
        TOP + ph / 2.0,
        esc(y_unit)
    );
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="f"/>"##
    );
}

/// A line chart. `y_max` is the axis maximum (already shared with like charts, or this chart's
/// own). Returns the SVG and whether any series was thinned.
pub fn line_chart(title: &str, key: &str, y_unit: &str, x_unit: &str, series: &[Series], y_max: f64) -> (String, bool) {
    line_chart_marked(title, key, y_unit, x_unit, series, y_max, &[])
}

/// A line chart with vertical marks at moments on the x axis (a task's start and end), each
/// labelled.
pub fn line_chart_marked(
    title: &str,
    key: &str,
    y_unit: &str,
    x_unit: &str,
    series: &[Series],
    y_max: f64,
    marks: &[(f64, String)],
) -> (String, bool) {
    let x_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let x_top = if x_max > 0.0 { x_max } else { 1.0 };
    let mut s = String::new();
    frame(&mut s, title, key, y_unit, x_unit, y_max, x_max);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    // A mark in the plot's right half is labelled to its left, so that the label stays inside
    // the plot (a certificate's "decided" at the last look was cut at its edge).
    let placed: Vec<(f64, f64, &str)> = marks
        .iter()
        .map(|(x, _)| {
            let px = LEFT + pw * (x / x_top).clamp(0.0, 1.0);
            if px > LEFT + pw / 2.0 {
                (px, px - 3.0, "end")
            } else {
                (px, px + 3.0, "start")
            }
        })
        .collect();
    let rows = label_rows(
        &placed
            .iter()
            .zip(marks)
            .map(|((_, tx, anchor), (_, text))| {
                let w = MARK_CHAR_PX * text.chars().count() as f64;
                if *anchor == "end" {
                    (tx - w, *tx)
                } else {
                    (*tx, tx + w)
                }
            })
            .collect::<Vec<_>>(),
    );
    // Rows past the plot's height wrap to the top (overlapping then: 24 marks of 47 characters,
    // the most a challenge or a monitor draws, fill 12 of its 14).
    let max_rows = ((ph - 12.0) / MARK_ROW_PX).floor().max(1.0) as usize;
    for (((px, tx, anchor), (x, text)), row) in placed.iter().zip(marks).zip(rows) {
        let row = row % max_rows;
        let _ = write!(
            s,
            r##"<line x1="{px:.1}" x2="{px:.1}" y1="{TOP}" y2="{}" stroke="#57606a" stroke-dasharray="4 3" data-mark="{x}"/><text x="{tx:.1}" y="{}" class="xl" style="text-anchor:{anchor}" data-mark-label="{x}">{}</text>"##,
            TOP + ph,
            TOP + 12.0 + MARK_ROW_PX * row as f64,
            esc(text)
        );
    }
    let mut thinned = false;
    for (i, ser) in series.iter().enumerate() {
        let (pts, t) = thin(&ser.points);
        thinned |= t;
        // A series that coincides with one drawn before it would vanish under it: it is drawn
        // dashed over it, and its legend says which it coincides with.
        let same = series[..i]
            .iter()
            .find(|o| o.points == ser.points && !ser.points.is_empty());
        let (dash, name) = match same {
            Some(o) => (r#" stroke-dasharray="6 4""#, format!("{} (= {})", ser.name, o.name)),
            None => ("", ser.name.clone()),
        };
        let mut d = String::new();
        for (x, y) in pts {
            let px = LEFT + pw * x / x_top;
            let py = TOP + ph - ph * (y / y_max).clamp(0.0, 1.0);
            let _ = write!(d, "{px:.1},{py:.1} ");
        }
        // Few points: mark each one, a line alone would hide a single sample.
        if ser.points.len() < 40 {
            for p in d.split_whitespace() {
                if let Some((x, y)) = p.split_once(',') {
                    let _ = write!(s, r##"<circle cx="{x}" cy="{y}" r="2.5" fill="{}"/>"##, ser.color);
                }
            }
        }
        let _ = write!(
            s,
            r##"<polyline points="{}" fill="none" stroke="{}" stroke-width="1.5"{dash}/><text x="{}" y="16" class="lg" fill="{}">{}</text>"##,
            d.trim_end(),
            ser.color,
            W - RIGHT - 110.0 * (series.len() - i) as f64 + 10.0,
            ser.color,
            esc(&name)
        );
    }
    s += "</svg>";
    (s, thinned)
}

/// A mark label's width per character, generous for the 10 px labels (system-ui averages
/// about 5.5 px a character), and the height of a row of them.
const MARK_CHAR_PX: f64 = 6.0;
const MARK_ROW_PX: f64 = 11.0;

/// A row for each mark label, given its extent across the plot: the first row where it
/// overlaps no label placed before it (two marks close together get two rows; three far apart
/// share the first).
fn label_rows(extents: &[(f64, f64)]) -> Vec<usize> {
    let mut taken: Vec<Vec<(f64, f64)>> = Vec::new();
    extents
        .iter()
        .map(|&(a, b)| {
            let free = |row: &Vec<(f64, f64)>| row.iter().all(|&(c, d)| b + 4.0 <= c || d + 4.0 <= a);
            let row = taken.iter().position(free).unwrap_or(taken.len());
            if row == taken.len() {
                taken.push(Vec::new());
            }
            taken[row].push((a, b));
            row
        })
        .collect()
}

/// One bar: label, value, and the half-width of its 95 % interval when known.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Under the bar.
    pub label: String,
    /// Its height.
    pub value: f64,
    /// The error bar's half-width.
    pub ci: Option<f64>,
}

/// A bar chart with error bars (95 % intervals).
pub fn bar_chart(title: &str, key: &str, unit: &str, bars: &[Bar], y_max: f64) -> String {
    let mut s = String::new();
    frame(&mut s, title, key, unit, "", y_max, 0.0);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let slot = pw / bars.len().max(1) as f64;
    let y = |v: f64| TOP + ph - ph * (v / y_max).clamp(0.0, 1.0);
    for (i, b) in bars.iter().enumerate() {
        let x = LEFT + slot * i as f64 + slot * 0.2;
        let w = slot * 0.6;
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{}" data-value="{}"/><text x="{:.1}" y="{}" class="xl">{}</text>"##,
            y(b.value),
            (TOP + ph - y(b.value)).max(0.0),
            COLORS[i % COLORS.len()],
            b.value,
            x + w / 2.0,
            TOP + ph + 16.0,
            esc(&b.label)
        );
        if let Some(ci) = b.ci {
            let cx = x + w / 2.0;
            let (lo, hi) = (y(b.value - ci), y(b.value + ci));
            let _ = write!(
                s,
                r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{lo:.1}" y2="{hi:.1}" class="e"/><line x1="{:.1}" x2="{:.1}" y1="{hi:.1}" y2="{hi:.1}" class="e"/><line x1="{:.1}" x2="{:.1}" y1="{lo:.1}" y2="{lo:.1}" class="e"/>"##,
                cx - 6.0,
                cx + 6.0,
                cx - 6.0,
                cx + 6.0
            );
        }
    }
    s += "</svg>";
    s
}

/// A colour on a light-to-dark blue ramp for `t` in 0..=1 (darker is more).
fn ramp(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let (a, b) = ((239.0, 243.0, 255.0), (8.0, 48.0, 107.0));
    let c = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", c(a.0, b.0), c(a.1, b.1), c(a.2, b.2))
}

/// A heat map: rows (e.g. file sizes) down, columns (record sizes) across, each cell coloured
/// by its value against `v_max` (shared with like maps) and labelled with it.
pub fn heat_map(
    title: &str,
    key: &str,
    unit: &str,
    rows: &[String],
    cols: &[String],
    values: &[Vec<Option<f64>>],
    v_max: f64,
) -> String {
    let (left, top) = (70.0, 40.0);
    let cw = ((W - left - RIGHT) / cols.len().max(1) as f64).min(80.0);
    let ch = 22.0;
    let h = top + ch * rows.len() as f64 + 30.0;
    let w = left + cw * cols.len() as f64 + RIGHT;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w:.0} {h:.0}" role="img" data-key="{}" data-vmax="{v_max}"><title>{}</title><text x="{left}" y="16" class="t">{}</text><text x="{left}" y="30" class="ax" text-anchor="start">colour scale 0 to {} {}</text>"#,
        esc(key),
        esc(title),
        esc(title),
        label(v_max),
        esc(unit)
    );
    for (j, c) in cols.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="xl">{}</text>"#,
            left + cw * (j as f64 + 0.5),
            h - 14.0,
            esc(c)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + ch * i as f64;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="yl">{}</text>"#,
            left - 6.0,
            y + 15.0,
            esc(r)
        );
        for (j, v) in values[i].iter().enumerate() {
            let x = left + cw * j as f64;
            match v {
                Some(v) => {
                    let t = if v_max > 0.0 { v / v_max } else { 0.0 };
                    let _ = write!(
                        s,
                        r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}" data-value="{v}"><title>{} × {}: {} {}</title></rect><text x="{:.1}" y="{:.1}" class="xl" fill="{}">{}</text>"##,
                        cw - 1.0,
                        ch - 1.0,
                        ramp(t),
                        esc(r),
                        esc(&cols[j]),
                        label(*v),
                        esc(unit),
                        x + cw / 2.0,
                        y + 15.0,
                        if t > 0.5 { "#ffffff" } else { "#1f2328" },
                        label(*v)
                    );
                }
                None => {
                    let _ = write!(
                        s,
                        r##"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="#f6f8fa"/>"##,
                        cw - 1.0,
                        ch - 1.0
                    );
                }
            }
        }
    }
    s += "</svg>";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn y_ticks_are_round_like_the_x_axis() {
        // The certificate's latency axis with a top of 2.5 µs once read 0.62, 1.25, 1.88.
        let mut s = String::new();
        frame(&mut s, "t", "k", "µs", "s", 2.5, 10.0);
        let labels: Vec<&str> = s
            .split(r#"class="yl""#)
            .skip(1)
            .map(|t| t.split('>').nth(1).unwrap().split('<').next().unwrap())
            .collect();
        assert_eq!(labels, ["0", "0.5", "1", "1.5", "2", "2.5"]);
        // A top that is not a step is labelled as well.
        let mut s = String::new();
        frame(&mut s, "t", "k", "µs", "s", 3.3, 10.0);
        assert!(s.contains(r#"data-axis="ymax">3.3<"#), "{s}");
    }

    #[test]
    fn x_ticks_are_round() {
        assert_eq!(round_ticks(30.06), vec![0.0, 10.0, 20.0, 30.0]);
        assert_eq!(round_ticks(100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(round_ticks(7.0), vec![0.0, 2.0, 4.0, 6.0]);
        let small = round_ticks(0.9);
        assert_eq!(small.len(), 5);
        assert!((small[4] - 0.8).abs() < 1e-12, "{small:?}");
    }

    #[test]
    fn tick_labels_say_the_tick_exactly() {
        let labels: Vec<String> = round_ticks(50_000.0).into_iter().map(label).collect();
        assert_eq!(labels, ["0", "10k", "20k", "30k", "40k", "50k"]);
        let labels: Vec<String> = [12_500.0, 25_000.0, 37_500.0].into_iter().map(label).collect();
        assert_eq!(labels, ["12.5k", "25k", "37.5k"]);
    }

    #[test]
    fn a_marks_label_stays_inside_the_plot() {
        let ser = [Series {
            name: "x".into(),
            color: COLORS[0],
            points: vec![(0.0, 1.0), (10.0, 2.0)],
        }];
        let marks = [(1.0, "start".to_string()), (10.0, "decided".to_string())];
        let (svg, _) = line_chart_marked("t", "k", "u", "s", &ser, 2.0, &marks);
        let label = |at: &str| {
            let i = svg.find(&format!(r#"data-mark-label="{at}""#)).unwrap();
            svg[svg[..i].rfind("<text").unwrap()..i].to_string()
        };
        assert!(label("1").contains("text-anchor:start"), "{svg}");
        // At the right edge: drawn leftwards from the mark, inside the plot.
        let right = label("10");
        assert!(right.contains("text-anchor:end"), "{right}");
        let x: f64 = right
            .split("x=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(x < W - RIGHT, "{x}");
    }

    #[test]
    fn a_series_that_coincides_with_another_stays_visible() {
        let pts = vec![(0.0, 1.0), (1.0, 2.0)];
        let ser = |name: &str, c: usize| Series {
            name: name.into(),
            color: COLORS[c],
            points: pts.clone(),
        };
        let (svg, _) = line_chart("t", "k", "u", "s", &[ser("read+write", 3), ser("read", 0)], 2.0);
        assert_eq!(svg.matches("stroke-dasharray=\"6 4\"").count(), 1, "{svg}");
        assert!(svg.contains("read (= read+write)"), "{svg}");
    }

    #[test]
    fn mark_labels_take_the_first_row_they_overlap_nothing_in() {
        // Two far apart share row 0; one over the first goes to row 1; one over both to row 2.
        assert_eq!(
            label_rows(&[(0.0, 100.0), (200.0, 300.0), (50.0, 150.0), (90.0, 250.0)]),
            [0, 0, 1, 2]
        );
    }

    #[test]
    fn nice_ceilings() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(3.2), 5.0);
        assert_eq!(nice_ceiling(1000.0), 1000.0);
        assert_eq!(nice_ceiling(2001.0), 2500.0);
        assert_eq!(nice_ceiling(0.17), 0.2);
    }

    #[test]
    fn thinning_keeps_extremes_and_bounds_the_count() {
        let mut pts: Vec<(f64, f64)> = (0..600_000).map(|i| (i as f64, 1.0)).collect();
        pts[123_456].1 = 99.0;
        pts[400_000].1 = -5.0;
        let (t, thinned) = thin(&pts);
        assert!(thinned);
        assert!(t.len() <= MAX_POINTS);
        assert!(t.iter().any(|p| p.1 == 99.0) && t.iter().any(|p| p.1 == -5.0));
        assert!(t.windows(2).all(|w| w[0].0 <= w[1].0));
        let (u, thinned) = thin(&pts[..10]);
        assert!(!thinned && u.len() == 10);
    }

    #[test]
    fn charts_carry_their_scale() {
        let (svg, _) = line_chart(
            "write",
            "write MiB/s",
            "MiB/s",
            "s",
            &[Series {
                name: "MiB/s".into(),
                color: COLORS[0],
                points: vec![(0.0, 1.0), (1.0, 3.0)],
            }],
            5.0,
        );
        assert!(svg.contains(r#"data-ymax="5""#) && svg.contains(r#"data-key="write MiB/s""#));
        let b = bar_chart(
            "x",
            "k",
            "IOPS",
            &[Bar {
                label: "A <1>".into(),
                value: 2.0,
                ci: Some(0.5),
            }],
            2.5,
        );
        assert!(b.contains("A &lt;1&gt;") && b.contains(r#"data-value="2""#));
    }
}
