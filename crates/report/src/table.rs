//! The one table type: every table storlab shows or exports is a [`Table`] of typed cells,
//! drawn for the terminal ([`Table::to_text`]) and in HTML ([`Table::to_html`]) here, and
//! written as CSV, JSON, Markdown or XLSX by the exporters (export.rs). Numbers stay numbers
//! wherever the format has them; a cell's display precision is the builder's choice and never
//! changes what an export holds.

use std::fmt::Write;

use serde::Serialize;

/// A cell: numbers stay numbers in every format that has them (XLSX, JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// A whole number.
    Int(i64),
    /// A measured value, shown in full.
    Num(f64),
    /// A measured value shown with this many decimals (exports keep the whole value).
    Fixed(f64, u8),
    /// Text.
    Text(String),
    /// Nothing (a value that does not apply).
    Empty,
}

impl Cell {
    /// A value shown with `decimals` decimals; not a number (NaN, infinite) is empty.
    pub fn fixed(v: f64, decimals: u8) -> Cell {
        if v.is_finite() {
            Cell::Fixed(v, decimals)
        } else {
            Cell::Empty
        }
    }

    /// As exports write it: numbers in full precision, no units (the header carries the unit).
    pub fn text(&self) -> String {
        match self {
            Cell::Int(i) => i.to_string(),
            Cell::Num(f) | Cell::Fixed(f, _) => {
                if f.fract() == 0.0 && f.abs() < 1e15 {
                    format!("{f:.0}")
                } else {
                    format!("{f}")
                }
            }
            Cell::Text(s) => s.clone(),
            Cell::Empty => String::new(),
        }
    }

    /// As the terminal and HTML show it.
    pub fn shown(&self) -> String {
        match self {
            Cell::Fixed(f, d) => {
                // A zero is shown only where the figure is zero: a small one that would round
                // to 0 keeps two significant digits (0.44 IOPS, not 0).
                let shown = format!("{f:.*}", *d as usize);
                if *f != 0.0 && f.is_finite() && shown.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
                    let digits = (-f.abs().log10()).ceil() as usize + 1;
                    format!("{f:.*}", digits.min(12))
                } else {
                    shown
                }
            }
            other => other.text(),
        }
    }

    /// True for numbers, and for text that reads as a figure ("85.2 µs", "-3.1 [-5.0, -1.2]"):
    /// right-aligned when shown.
    pub fn is_figure(&self) -> bool {
        match self {
            Cell::Int(_) | Cell::Num(_) | Cell::Fixed(..) => true,
            Cell::Text(s) => {
                s.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '+')
                    && s.chars().any(|c| c.is_ascii_digit())
            }
            Cell::Empty => false,
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}
impl From<u64> for Cell {
    fn from(v: u64) -> Cell {
        Cell::Int(v as i64)
    }
}
impl From<i64> for Cell {
    fn from(v: i64) -> Cell {
        Cell::Int(v)
    }
}
impl From<u32> for Cell {
    fn from(v: u32) -> Cell {
        Cell::Int(v as i64)
    }
}
impl From<usize> for Cell {
    fn from(v: usize) -> Cell {
        Cell::Int(v as i64)
    }
}
impl From<f64> for Cell {
    fn from(v: f64) -> Cell {
        if v.is_finite() {
            Cell::Num(v)
        } else {
            Cell::Empty
        }
    }
}
impl From<bool> for Cell {
    fn from(v: bool) -> Cell {
        Cell::Text(v.to_string())
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Empty, Into::into)
    }
}

/// A named table: headers (with units) and rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Its name (a sheet name in XLSX, a heading in Markdown and HTML).
    pub name: String,
    /// Column headers, units included ("MiB/s", "lat p99 (µs)").
    pub headers: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with these headers.
    pub fn new(name: &str, headers: &[&str]) -> Table {
        Table {
            name: name.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// A table with these headers (owned).
    pub fn with_headers(name: &str, headers: Vec<String>) -> Table {
        Table {
            name: name.into(),
            headers,
            rows: Vec::new(),
        }
    }

    /// A table of text rows, the first the headers (for tables that are words and figures
    /// already written, such as a scan's sizes with their units).
    pub fn from_text(name: &str, mut rows: Vec<Vec<String>>) -> Table {
        let headers = if rows.is_empty() { Vec::new() } else { rows.remove(0) };
        Table {
            name: name.into(),
            headers,
            rows: rows
                .into_iter()
                .map(|r| r.into_iter().map(Cell::Text).collect())
                .collect(),
        }
    }

    /// Adds a row.
    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }

    /// For the terminal: columns padded, figures right-aligned, the header first.
    pub fn to_text(&self) -> String {
        let header: Vec<Cell> = self.headers.iter().map(|h| Cell::Text(h.clone())).collect();
        let all: Vec<&Vec<Cell>> = std::iter::once(&header).chain(&self.rows).collect();
        let cols = all.iter().map(|r| r.len()).max().unwrap_or(0);
        // A path or tag with control characters is shown with them escaped, not obeyed.
        let shown: Vec<Vec<String>> = all
            .iter()
            .map(|r| {
                r.iter()
                    .map(|c| storlab_model::terminal::escaped(&c.shown()).into_owned())
                    .collect()
            })
            .collect();
        let width: Vec<usize> = (0..cols)
            .map(|c| {
                shown
                    .iter()
                    .map(|r| r.get(c).map(|x| x.chars().count()).unwrap_or(0))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut s = String::new();
        for (ri, r) in all.iter().enumerate() {
            let mut line = String::new();
            for (c, cell) in r.iter().enumerate() {
                let text = &shown[ri][c];
                let pad = width[c] - text.chars().count();
                // The first column names the row; figures elsewhere are right-aligned.
                if c > 0 && ri > 0 && cell.is_figure() {
                    line += &" ".repeat(pad);
                    line += text;
                } else {
                    line += text;
                    if c + 1 < r.len() {
                        line += &" ".repeat(pad);
                    }
                }
                if c + 1 < r.len() {
                    line += "  ";
                }
            }
            s += line.trim_end();
            s += "\n";
        }
        s
    }

    /// As an HTML table; figures are right-aligned.
    pub fn to_html(&self) -> String {
        let mut s = String::from("<table><tr>");
        for h in &self.headers {
            let _ = write!(s, "<th>{}</th>", crate::svg::esc(h));
        }
        s += "</tr>";
        for r in &self.rows {
            s += "<tr>";
            for c in r {
                let class = if c.is_figure() { r#" class="n""# } else { "" };
                let _ = write!(s, "<td{class}>{}</td>", crate::svg::esc(&c.shown()));
            }
            s += "</tr>";
        }
        s += "</table>";
        s
    }
}

/// Seconds as "2 d 11 h 3 min" (RAL wrote its durations so), or "12.3 s" when short.
pub fn human_duration(s: f64) -> String {
    if s < 120.0 {
        return format!("{s:.1} s");
    }
    let m = (s / 60.0).round() as u64;
    let (d, h, m) = (m / 1440, m / 60 % 24, m % 60);
    match (d, h) {
        (0, 0) => format!("{m} min"),
        (0, _) => format!("{h} h {m} min"),
        _ => format!("{d} d {h} h {m} min"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_figure_is_not_shown_as_zero() {
        assert_eq!(Cell::fixed(0.44, 0).shown(), "0.44");
        assert_eq!(Cell::fixed(0.0017, 2).shown(), "0.0017");
        assert_eq!(Cell::fixed(0.0, 2).shown(), "0.00");
        assert_eq!(Cell::fixed(12.345, 2).shown(), "12.35");
        assert_eq!(
            Cell::fixed(0.5, 0).shown(),
            "0.50",
            "the formatter rounds 0.5 to 0: not a zero"
        );
        assert_eq!(Cell::fixed(-0.003, 2).shown(), "-0.0030");
    }

    fn sample() -> Table {
        let mut t = Table::new("t", &["phase", "MiB/s", "note"]);
        t.push(vec!["write".into(), Cell::fixed(512.256, 2), "a <b>".into()]);
        t.push(vec!["randread".into(), Cell::Int(7), Cell::Empty]);
        t
    }

    #[test]
    fn text_pads_and_aligns_figures_right() {
        assert_eq!(
            sample().to_text(),
            "phase     MiB/s   note\nwrite     512.26  a <b>\nrandread       7\n"
        );
    }

    #[test]
    fn html_escapes_and_marks_figures() {
        let h = sample().to_html();
        assert!(h.contains(r#"<td class="n">512.26</td><td>a &lt;b&gt;</td>"#), "{h}");
    }

    #[test]
    fn exports_keep_the_whole_value() {
        assert_eq!(Cell::fixed(512.256, 2).text(), "512.256");
        assert_eq!(Cell::fixed(f64::NAN, 2), Cell::Empty);
    }
}
