//! Exporters behind one trait: the same tables as CSV, JSON, Markdown or an XLSX workbook.

use std::io::Write;

use crate::table::{Cell, Table};

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Writing failed.
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
    /// The workbook could not be made.
    #[error("making the XLSX workbook: {0}")]
    Xlsx(#[from] rust_xlsxwriter::XlsxError),
    /// JSON encoding failed.
    #[error("encoding JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Why a file could not be written whole.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The destination cannot be written: its directory or the file itself (the user's to fix).
    #[error("{0}")]
    Place(String),
    /// Producing the content failed.
    #[error(transparent)]
    Fill(#[from] ExportError),
}

/// Writes `path` whole or not at all: the content goes to a temporary file beside it, which
/// replaces `path` only once `fill` succeeded. The result is an ordinary file (0644), not the
/// temporary file's private 0600.
pub fn write_whole(
    path: &std::path::Path,
    fill: impl FnOnce(&mut std::fs::File) -> Result<(), ExportError>,
) -> Result<(), WriteError> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| WriteError::Place(format!("cannot write in {}: {e}", dir.display())))?;
    fill(tmp.as_file_mut())?;
    let _ = tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644));
    tmp.persist(path)
        .map_err(|e| WriteError::Place(format!("cannot write {}: {}", path.display(), e.error)))?;
    Ok(())
}

/// Writes tables in one format.
pub trait Exporter {
    /// The format's name on the command line.
    fn name(&self) -> &'static str;
    /// The usual file extension.
    fn extension(&self) -> &'static str;
    /// Writes every table to `out`.
    fn export(&self, tables: &[Table], out: &mut dyn Write) -> Result<(), ExportError>;
}

/// The exporter for a format name, or None.
pub fn exporter(format: &str) -> Option<Box<dyn Exporter>> {
    Some(match format {
        "csv" => Box::new(Csv),
        "json" => Box::new(Json),
        "markdown" | "md" => Box::new(Markdown),
        "xlsx" => Box::new(Xlsx),
        _ => return None,
    })
}

/// The formats `exporter` knows (fio's JSON and terse line, `fio-json`, `fio-json+` and
/// `fio-terse`, are documents of their own: crate::fio).
pub const FORMATS: &[&str] = &["csv", "json", "markdown", "xlsx", "fio-json", "fio-json+", "fio-terse"];

/// CSV (RFC 4180). Several tables go one after another, each introduced by a line
/// `# table: NAME` and separated by an empty line; `export -o` writes one file per table.
pub struct Csv;

/// One CSV field, quoted when it must be (RFC 4180: a field holding a comma, a quote or a line
/// break is quoted, and its quotes doubled).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Csv {
    /// One table as CSV (header line, then rows).
    pub fn table(t: &Table, out: &mut dyn Write) -> std::io::Result<()> {
        let line = |cells: Vec<String>| cells.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(",");
        writeln!(out, "{}", line(t.headers.clone()))?;
        for r in &t.rows {
            writeln!(out, "{}", line(r.iter().map(Cell::text).collect()))?;
        }
        Ok(())
    }
}

impl Exporter for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn extension(&self) -> &'static str {
        "csv"
    }
    fn export(&self, tables: &[Table], out: &mut dyn Write) -> Result<(), ExportError> {
        for (i, t) in tables.iter().enumerate() {
            if tables.len() > 1 {
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "# table: {}", t.name)?;
            }
            Csv::table(t, out)?;
        }
        Ok(())
    }
}

/// JSON: an object with one member per table, each a list of records keyed by column header.
pub struct Json;

impl Exporter for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn extension(&self) -> &'static str {
        "json"
    }
    fn export(&self, tables: &[Table], out: &mut dyn Write) -> Result<(), ExportError> {
        let mut doc = serde_json::Map::new();
        for t in tables {
            let records: Vec<serde_json::Value> = t
                .rows
                .iter()
                .map(|r| {
                    let mut m = serde_json::Map::new();
                    for (h, c) in t.headers.iter().zip(r) {
                        m.insert(h.clone(), serde_json::to_value(c).unwrap_or(serde_json::Value::Null));
                    }
                    serde_json::Value::Object(m)
                })
                .collect();
            doc.insert(t.name.clone(), serde_json::Value::Array(records));
        }
        serde_json::to_writer_pretty(&mut *out, &doc)?;
        writeln!(out)?;
        Ok(())
    }
}

/// Markdown (GitHub tables), one heading per table.
pub struct Markdown;

impl Exporter for Markdown {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn extension(&self) -> &'static str {
        "md"
    }
    fn export(&self, tables: &[Table], out: &mut dyn Write) -> Result<(), ExportError> {
        let esc = |s: String| s.replace('|', "\\|").replace('\n', " ");
        for (i, t) in tables.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(out, "## {}\n", t.name)?;
            writeln!(
                out,
                "| {} |",
                t.headers.iter().map(|h| esc(h.clone())).collect::<Vec<_>>().join(" | ")
            )?;
            let align: Vec<&str> = (0..t.headers.len())
                .map(|c| {
                    let numeric = t
                        .rows
                        .iter()
                        .any(|r| matches!(r.get(c), Some(Cell::Int(_) | Cell::Num(_))));
                    if numeric {
                        "---:"
                    } else {
                        "---"
                    }
                })
                .collect();
            writeln!(out, "| {} |", align.join(" | "))?;
            for r in &t.rows {
                writeln!(
                    out,
                    "| {} |",
                    r.iter().map(|c| esc(c.text())).collect::<Vec<_>>().join(" | ")
                )?;
            }
        }
        Ok(())
    }
}

/// An XLSX workbook: one sheet per table, numbers as numbers, the header row bold and frozen.
pub struct Xlsx;

/// A sheet name Excel accepts: at most 31 characters, none of []:*?/\ , unique.
fn sheet_name(name: &str, used: &mut Vec<String>) -> String {
    let clean: String = name
        .chars()
        .map(|c| if "[]:*?/\\".contains(c) { '_' } else { c })
        .take(31)
        .collect();
    let mut n = clean.clone();
    let mut i = 2;
    while used.iter().any(|u| u.eq_ignore_ascii_case(&n)) {
        let suffix = format!(" ({i})");
        n = format!("{}{suffix}", clean.chars().take(31 - suffix.len()).collect::<String>());
        i += 1;
    }
    used.push(n.clone());
    n
}

impl Exporter for Xlsx {
    fn name(&self) -> &'static str {
        "xlsx"
    }
    fn extension(&self) -> &'static str {
        "xlsx"
    }
    fn export(&self, tables: &[Table], out: &mut dyn Write) -> Result<(), ExportError> {
        use rust_xlsxwriter::{Format, Workbook};
        let mut wb = Workbook::new();
        let bold = Format::new().set_bold();
        let mut used = Vec::new();
        for t in tables {
            let ws = wb.add_worksheet();
            ws.set_name(sheet_name(&t.name, &mut used))?;
            for (c, h) in t.headers.iter().enumerate() {
                ws.write_string_with_format(0, c as u16, h, &bold)?;
                ws.set_column_width(c as u16, (h.chars().count() as f64 + 2.0).max(10.0))?;
            }
            for (r, row) in t.rows.iter().enumerate() {
                let r = r as u32 + 1;
                for (c, cell) in row.iter().enumerate() {
                    let c = c as u16;
                    match cell {
                        Cell::Int(i) => {
                            ws.write_number(r, c, *i as f64)?;
                        }
                        Cell::Num(f) | Cell::Fixed(f, _) => {
                            ws.write_number(r, c, *f)?;
                        }
                        Cell::Text(s) => {
                            ws.write_string(r, c, s)?;
                        }
                        Cell::Empty => {}
                    }
                }
            }
            ws.set_freeze_panes(1, 0)?;
        }
        let buf = wb.save_to_buffer()?;
        out.write_all(&buf)?;
        Ok(())
    }
}

/// `storlab results export`'s flags, declared here once (the binary flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ExportFlags {
    /// The runs' ids.
    #[arg(required = true)]
    pub ids: Vec<i64>,
    /// csv, json, markdown, xlsx, or fio-json / fio-json+ / fio-terse (fio's
    /// `--output-format=json` document and terse line, for fio-plot and the scripts that read
    /// fio).
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub file: Option<std::path::PathBuf>,
    /// Leave out the interval samples.
    #[arg(long = "no-samples")]
    pub no_samples: bool,
}

impl ExportFlags {
    /// The exporter the format names; an XLSX workbook is refused on a terminal (`tty`).
    pub fn exporter(&self, tty: bool) -> Result<Box<dyn Exporter>, String> {
        let ex = exporter(&self.format).ok_or_else(|| {
            format!(
                "unknown export format '{}': expected one of {}",
                self.format,
                FORMATS.join(", ")
            )
        })?;
        if self.file.is_none() && ex.name() == "xlsx" && tty {
            return Err("an XLSX workbook is binary: give -o FILE.xlsx (or redirect standard output)".into());
        }
        Ok(ex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Table> {
        let mut t = Table::new("phases", &["phase", "MiB/s", "note"]);
        t.rows
            .push(vec!["write".into(), 512.25.into(), "a, \"quoted\" note".into()]);
        t.rows.push(vec!["read".into(), Cell::Int(7), Cell::Empty]);
        let mut u = Table::new("samples", &["t (s)"]);
        u.rows.push(vec![1.5.into()]);
        vec![t, u]
    }

    #[test]
    fn csv_quotes_and_sections() {
        let mut out = Vec::new();
        Csv.export(&sample(), &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(
            s,
            "# table: phases\nphase,MiB/s,note\nwrite,512.25,\"a, \"\"quoted\"\" note\"\nread,7,\n\n# table: samples\nt (s)\n1.5\n"
        );
    }

    #[test]
    fn json_keeps_numbers_as_numbers() {
        let mut out = Vec::new();
        Json.export(&sample(), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["phases"][0]["MiB/s"], 512.25);
        assert_eq!(v["phases"][1]["MiB/s"], 7);
        assert_eq!(v["phases"][1]["note"], serde_json::Value::Null);
        assert_eq!(v["samples"][0]["t (s)"], 1.5);
    }

    #[test]
    fn markdown_aligns_numbers_right() {
        let mut out = Vec::new();
        Markdown.export(&sample(), &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(
            s.contains("## phases\n\n| phase | MiB/s | note |\n| --- | ---: | --- |\n| write | 512.25 |"),
            "{s}"
        );
    }

    #[test]
    fn sheet_names_are_legal_and_unique() {
        let mut used = Vec::new();
        assert_eq!(sheet_name("a/b", &mut used), "a_b");
        assert_eq!(sheet_name("A_B", &mut used), "A_B (2)");
        assert_eq!(sheet_name(&"x".repeat(40), &mut used).chars().count(), 31);
    }
}
