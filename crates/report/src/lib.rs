//! storlab's results in and out: fio's JSON imported as runs (fio.rs); exporters and the
//! self-contained HTML report come here too (DESIGN.md: crates/report).
#![warn(missing_docs)]

pub mod compare;
pub mod export;
pub mod fio;
pub mod table;

/// A text table for the terminal: columns padded, numbers right-aligned.
pub fn text_table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map(|x| x.chars().count()).unwrap_or(0))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let numeric = cell.chars().next().is_some_and(|ch| ch.is_ascii_digit()) && c > 0;
            let pad = width[c] - cell.chars().count();
            if numeric {
                line += &" ".repeat(pad);
                line += cell;
            } else {
                line += cell;
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
pub mod html;
pub mod iozone;
pub mod svg;
