//! IOzone's text output as storlab runs, in every shape sites kept it: the throughput-mode
//! report (`-t`: "Children see throughput ..."), the Excel-style report (`-R`: "Writer report"
//! matrices of file size × record size, with `-+u` also "... CPU utilization report"), and the
//! automatic-mode table that IOzone prints without `-R` (`kB reclen write rewrite read ...`);
//! `-O` (operations per second instead of kB/s); pasted with every line indented; several runs
//! one after another in one file ([`split_runs`]).
//!
//! A throughput-mode run becomes one run with a phase per test. A matrix (`-R` or the table)
//! becomes one run per file size × record size cell, each with a phase per test; the caller
//! keeps the cells together as a study. IOzone prints kB/sec with kB = 1024 bytes; in `-O` mode
//! each operation is one record, so bytes/s = ops/s × the record size.
//!
//! IOzone measures no latency and (without `-+u`) no CPU; its matrix cells have one process
//! and no first-done figure: those figures are marked not measured.

use serde_json::{json, Value};
use storlab_model::plan::PhaseKind;
use storlab_model::result::{Figure, PhaseResult, Throughput};
use storlab_model::run::{ImportedParams, ImportedRun, Phase, PhaseName, PhaseParams};
use storlab_workload::iozone::phase_named;

use crate::{ImportError, Origin};

/// The banner every IOzone run prints first.
const BANNER: &str = "Iozone: Performance Test of File I/O";

/// The automatic-mode table's columns after `kB` and `reclen`, in IOzone's order, by the name
/// of the `-R` report that holds the same figure.
const TABLE_COLUMNS: [&str; 13] = [
    "Writer",
    "Re-writer",
    "Reader",
    "Re-Reader",
    "Random read",
    "Random write",
    "Backward read",
    "Record rewrite",
    "Stride read",
    "Fwrite",
    "Re-Fwrite",
    "Fread",
    "Re-Fread",
];

/// True when `text` looks like IOzone's output.
pub fn looks_like_iozone(text: &str) -> bool {
    text.contains("Children see throughput for")
        || text.contains("Excel output is below")
        || text.contains(BANNER)
        || table_header(text).is_some()
}

/// The runs in a file, each from its banner to the next (several runs pasted one after
/// another); the whole text when it has at most one banner.
pub fn split_runs(text: &str) -> Vec<&str> {
    let starts: Vec<usize> = text
        .match_indices(BANNER)
        .map(|(i, _)| text[..i].rfind('\n').map_or(0, |n| n + 1))
        .collect();
    if starts.len() < 2 {
        return vec![text];
    }
    let mut parts = Vec::new();
    for (k, s) in starts.iter().enumerate() {
        let from = if k == 0 { 0 } else { *s };
        let to = starts.get(k + 1).copied().unwrap_or(text.len());
        parts.push(&text[from..to]);
    }
    parts
}

/// The storlab phase kind of an IOzone test name (throughput "who" or report name).
fn kind_of(name: &str) -> Option<PhaseKind> {
    phase_named(name).map(|p| p.kind)
}

fn after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.trim().strip_prefix(key).map(str::trim))
}

/// An imported IOzone test's figures: the bytes moved and the throughputs it printed, bytes/s.
struct Printed {
    bytes: f64,
    parent: f64,
    children: f64,
    /// The slowest and fastest process, when IOzone printed them (throughput mode).
    spread: Option<(f64, f64)>,
    /// CPU seconds, when IOzone measured them (`-+u`).
    cpu: Option<f64>,
}

/// One IOzone test as a phase: IOzone reports throughput only (no latency); first done is its
/// "children see" figure, all done its "parent sees".
fn phase(seq: u32, kind: PhaseKind, f: Printed, params: ImportedParams, first_done: bool) -> Phase {
    let seconds = if f.parent > 0.0 { f.bytes / f.parent } else { 0.0 };
    // Every IOzone I/O is one record: I/Os and IOPS follow from the record size.
    let rec = params.bs.unwrap_or(0).max(1) as f64;
    let ops = (f.bytes / rec) as u64;
    let bytes = f.bytes as u64;
    let writes = kind.writes();
    let mut notes = vec!["IOzone measures no latency".to_string()];
    let mut not_measured = vec![Figure::Latency];
    if first_done {
        notes.push("first done is IOzone's \"children see\" figure, all done its \"parent sees\"".into());
    } else {
        not_measured.push(Figure::FirstDone);
    }
    match f.cpu {
        Some(_) => notes.push("IOzone's CPU time (-+u) is user and system together: shown as user".into()),
        None => not_measured.push(Figure::Cpu),
    }
    if f.spread.is_none() {
        not_measured.push(Figure::WorkerSpread);
    }
    let (min, max) = f.spread.unwrap_or((0.0, 0.0));
    let mut result = PhaseResult {
        all_done: Throughput {
            seconds,
            bytes,
            ops,
            bytes_per_sec: f.parent,
            iops: f.parent / rec,
        },
        first_done: if first_done {
            Throughput {
                seconds,
                bytes,
                ops,
                bytes_per_sec: f.children,
                iops: f.children / rec,
            }
        } else {
            Throughput::default()
        },
        worker_min_bytes_per_sec: min,
        worker_max_bytes_per_sec: max,
        cpu_user: f.cpu.unwrap_or(0.0),
        ..PhaseResult::one_direction(writes, bytes, ops)
    };
    result.mark_not_measured(&not_measured);
    Phase {
        seq,
        kind: PhaseName::Kind(kind),
        params: PhaseParams::Imported(ImportedParams { notes, ..params }),
        result,
        cache_flattered: false,
    }
}

/// The automatic-mode table's header: the line `kB  reclen  write ...` (its index among the
/// lines, with tabs expanded).
fn table_header(text: &str) -> Option<usize> {
    text.lines().position(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.len() >= 4 && w[0] == "kB" && w[1] == "reclen" && w[2] == "write"
    })
}

/// A line with tabs expanded to IOzone's 8 columns, so that positions compare.
fn expand(line: &str) -> String {
    let mut out = String::new();
    for c in line.chars() {
        if c == '\t' {
            out.push(' ');
            while !out.len().is_multiple_of(8) {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Words of a line with the column where each ends.
fn words_ending(line: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                out.push((i, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((line.len(), &line[s..]));
    }
    out
}

// ((file kB, record kB), [(report name, figure)])
type Cells = Vec<((u64, u64), Vec<(String, f64)>)>;

fn add(cells: &mut Cells, key: (u64, u64), name: &str, v: f64) {
    match cells.iter_mut().find(|(k, _)| *k == key) {
        Some((_, t)) => t.push((name.to_string(), v)),
        None => cells.push((key, vec![(name.to_string(), v)])),
    }
}

/// The automatic-mode table: each row a file size and record size, each figure under the
/// column whose header ends where it ends (IOzone right-aligns them; a test not run leaves its
/// column blank, so the order of the figures alone does not say which test they are).
fn read_table(origin: &Origin, text: &str, first_line: usize) -> Result<Cells, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(h) = table_header(text) else {
        return Ok(Vec::new());
    };
    let header = expand(lines[h]);
    let heads = words_ending(&header);
    if heads.len() != 2 + TABLE_COLUMNS.len() {
        return Err(origin.error(format!(
            "line {}: IOzone's table header has {} columns, not the {} IOzone prints",
            first_line + h,
            heads.len(),
            2 + TABLE_COLUMNS.len()
        )));
    }
    let mut cells = Cells::new();
    for (k, raw) in lines.iter().enumerate().skip(h + 1) {
        let line = expand(raw);
        let words = words_ending(&line);
        if words.is_empty() {
            break;
        }
        let line_no = first_line + k;
        let int = |w: &str, what: &str| {
            w.parse::<u64>().map_err(|_| {
                origin.error(format!(
                    "line {line_no}: the {what} \"{w}\" in IOzone's table is not a whole number"
                ))
            })
        };
        let file_kb = int(words[0].1, "file size")?;
        let rec_kb = int(words.get(1).map(|w| w.1).unwrap_or(""), "record size")?;
        for (end, w) in &words[2..] {
            // The column whose header ends nearest; IOzone's wider figures run a column or so
            // past the header's end.
            let (col, dist) = heads[2..]
                .iter()
                .enumerate()
                .map(|(c, (e, _))| (c, end.abs_diff(*e)))
                .min_by_key(|x| x.1)
                .unwrap_or((0, usize::MAX));
            if dist > 3 {
                return Err(origin.error(format!(
                    "line {line_no}: the figure \"{w}\" stands under no column of IOzone's table"
                )));
            }
            let v: f64 = w.parse().map_err(|_| {
                origin.error(format!(
                    "line {line_no}: \"{w}\" under \"{}\" in IOzone's table is not a number",
                    heads[2 + col].1
                ))
            })?;
            add(&mut cells, (file_kb, rec_kb), TABLE_COLUMNS[col], v);
        }
    }
    Ok(cells)
}

/// The `-R` reports after "Excel output is below": throughput reports and, with `-+u`, CPU
/// utilisation reports (percent), each a matrix with record sizes across and file sizes down.
fn read_reports(origin: &Origin, text: &str, first_line: usize) -> Result<(Cells, Cells), ImportError> {
    let mut figures = Cells::new();
    let mut cpu = Cells::new();
    let Some(at) = text.find("Excel output is below") else {
        return Ok((figures, cpu));
    };
    let base = first_line + crate::line_of(text, at) - 1;
    let mut lines = text[at..].lines().enumerate().peekable();
    while let Some((_, l)) = lines.next() {
        let t = l.trim();
        let Some(title) = t.strip_prefix('"').and_then(|x| x.strip_suffix('"')) else {
            continue;
        };
        let (name, is_cpu) =
            if let Some(n) = title.strip_suffix(" CPU utilization report (Zero values should be ignored)") {
                (n, true)
            } else if let Some(n) = title.strip_suffix(" report") {
                (n, false)
            } else {
                continue;
            };
        let (k, header) = lines
            .next()
            .ok_or_else(|| origin.error(format!("the {name} report has no record sizes")))?;
        let recs: Vec<u64> = header
            .split_whitespace()
            .map(|x| x.trim_matches('"').parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                origin.error(format!(
                    "line {}: the {name} report's record sizes do not read",
                    base + k
                ))
            })?;
        while let Some((k, row)) = lines.peek() {
            let r = row.trim();
            if !r.starts_with('"') || r.ends_with("report\"") || r.ends_with("ignored)\"") {
                break;
            }
            let line_no = base + k;
            let f: Vec<&str> = r.split_whitespace().collect();
            let file: u64 = f[0]
                .trim_matches('"')
                .parse()
                .map_err(|_| origin.error(format!("line {line_no}: the file size {} in the {name} report", f[0])))?;
            for (rec, v) in recs.iter().zip(&f[1..]) {
                let v: f64 = v.parse().map_err(|_| {
                    origin.error(format!(
                        "line {line_no}: the figure \"{v}\" in the {name} report is not a number"
                    ))
                })?;
                add(if is_cpu { &mut cpu } else { &mut figures }, (file, *rec), name, v);
            }
            lines.next();
        }
    }
    Ok((figures, cpu))
}

/// Parses one IOzone run's text (see [`split_runs`]); `first_line` is where it starts in the
/// file, for errors. Returns the runs and whether they are cells of one matrix.
pub fn parse(origin: &Origin, text: &str) -> Result<(Vec<ImportedRun>, bool), ImportError> {
    parse_at(origin, text, 1)
}

/// [`parse`] of a part starting at line `first_line` of the file: a throughput-mode report
/// as one run, or a matrix's cells each as a run.
pub fn parse_at(origin: &Origin, text: &str, first_line: usize) -> Result<(Vec<ImportedRun>, bool), ImportError> {
    let h = Header::of(origin, text, first_line);
    if text.contains("Children see throughput for") {
        return Ok((vec![throughput(&h)?], false));
    }
    Ok((matrix(&h)?, true))
}

/// What a part of IOzone's output says of itself: its command line, IOzone's version, when it
/// began, whether it counted operations (-O), and where it is.
struct Header<'a> {
    origin: &'a Origin,
    text: &'a str,
    first_line: usize,
    command: String,
    version: String,
    began: Option<String>,
    ops_mode: bool,
    host: String,
}

impl<'a> Header<'a> {
    fn of(origin: &'a Origin, text: &'a str, first_line: usize) -> Header<'a> {
        Header {
            origin,
            text,
            first_line,
            command: after(text, "Command line used:")
                .unwrap_or("iozone (command line not in the file)")
                .to_string(),
            version: text
                .lines()
                .find(|l| l.contains("Version $Revision:"))
                .and_then(|l| l.split("Revision:").nth(1))
                .map(|v| v.trim().trim_end_matches('$').trim().to_string())
                .unwrap_or_else(|| "unknown".into()),
            began: after(text, "Run began:").and_then(crate::ctime_rfc3339),
            ops_mode: text.contains("OPS Mode.") || text.contains("ops/sec"),
            host: origin.host_or("IOzone"),
        }
    }

    /// A refusal naming where the part starts.
    fn bad(&self, what: &str) -> ImportError {
        self.origin
            .error(format!("IOzone output from line {}: {what}", self.first_line))
    }

    fn tool(&self) -> String {
        format!("IOzone {}", self.version)
    }

    /// A run of `phases`; `extra` says which cell (or throughput test) it is.
    fn run(&self, name: String, phases: Vec<Phase>, extra: Value) -> ImportedRun {
        self.origin.run(
            &self.host,
            name,
            format!("{} (imported from {})", self.command, self.origin.path),
            json!({
                "imported_from": self.origin.path,
                "format": "iozone text",
                "iozone_version": self.version,
                "command": self.command,
                "first_line": self.first_line,
                "cell": extra,
                "text": self.text,
                "time": if self.began.is_some() { "IOzone's \"Run began\", taken as UTC".to_string() } else { self.origin.when_undated().1 },
            }),
            self.began.clone().unwrap_or_else(|| self.origin.when_undated().0),
            format!("imported from IOzone {}: IOzone does not record the machine", self.version),
            phases,
        )
    }
}

/// Throughput mode (-t): every test's "Children see" block a phase of one run.
fn throughput(h: &Header) -> Result<ImportedRun, ImportError> {
    let text = h.text;
    let workers: f64 = after(text, "Throughput test with")
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| h.bad("a throughput report without \"Throughput test with N processes\""))?;
    let each = after(text, "Each process writes a").or_else(|| after(text, "Each thread writes a"));
    let (file_kb, rec_kb): (f64, f64) = each
        .and_then(|s| {
            let w: Vec<&str> = s.split_whitespace().collect();
            Some((w.first()?.parse().ok()?, w.get(4)?.parse().ok()?))
        })
        .ok_or_else(|| h.bad("no \"Each process writes a N kByte file in M kByte records\" line"))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut phases = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.trim().strip_prefix("Children see throughput for") else {
            continue;
        };
        phases.push(throughput_phase(
            h,
            &lines[i..],
            rest,
            phases.len() as u32,
            (workers, file_kb, rec_kb),
        )?);
    }
    if phases.is_empty() {
        return Err(h.bad("no test results"));
    }
    Ok(h.run(
        format!("iozone -t {workers} (imported)"),
        phases,
        json!({ "workers": workers, "file_kb": file_kb, "record_kb": rec_kb, "ops_mode": h.ops_mode }),
    ))
}

/// One test's block of a throughput report, from its "Children see" line (`rest` after the
/// words) up to the next: the children's and the parent's figures, the slowest and fastest
/// process, CPU.
fn throughput_phase(
    h: &Header,
    from: &[&str],
    rest: &str,
    seq: u32,
    (workers, file_kb, rec_kb): (f64, f64, f64),
) -> Result<Phase, ImportError> {
    let value = |l: &str| -> Option<f64> { l.split('=').nth(1)?.split_whitespace().next()?.parse().ok() };
    let who: String = rest
        .split('=')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .collect::<Vec<_>>()
        .join(" ");
    let kind = kind_of(&who).ok_or_else(|| h.bad(&format!("an unknown test \"{who}\"")))?;
    let block: Vec<&str> = from
        .iter()
        .take_while({
            let mut first = true;
            move |x| std::mem::take(&mut first) || !x.trim().starts_with("Children see")
        })
        .copied()
        .collect();
    let find = |prefix: &str| {
        block
            .iter()
            .find(|x| x.trim().starts_with(prefix))
            .and_then(|x| value(x))
    };
    let children = value(from[0].trim()).ok_or_else(|| h.bad("a \"Children see\" line without a figure"))?;
    let parent = find("Parent sees").unwrap_or(children);
    let spread = find("Min throughput").zip(find("Max throughput"));
    // "CPU Utilization: Wall time 0.006 CPU time 0.010 CPU utilization 161.96 %"
    let cpu = block
        .iter()
        .find(|x| x.trim().to_lowercase().starts_with("cpu utilization: wall time"))
        .and_then(|x| x.split("CPU time").nth(1))
        .and_then(|x| x.split_whitespace().next())
        .and_then(|x| x.parse::<f64>().ok());
    let k = if h.ops_mode { rec_kb * 1024.0 } else { 1024.0 };
    Ok(phase(
        seq,
        kind,
        Printed {
            bytes: workers * file_kb * 1024.0,
            parent: parent * k,
            children: children * k,
            spread: spread.map(|(a, b)| (a * k, b * k)),
            cpu,
        },
        ImportedParams {
            tool: h.tool(),
            test: Some(who),
            bs: Some((rec_kb * 1024.0) as u64),
            file_size: Some((file_kb * 1024.0) as u64),
            workers: Some(workers as u32),
            ..ImportedParams::default()
        },
        true,
    ))
}

/// A matrix: the -R reports when IOzone printed them (they carry CPU with -+u), else the
/// automatic-mode table; each cell a run of its tests.
fn matrix(h: &Header) -> Result<Vec<ImportedRun>, ImportError> {
    let (mut cells, cpu) = read_reports(h.origin, h.text, h.first_line)?;
    let from_reports = !cells.is_empty();
    if !from_reports {
        cells = read_table(h.origin, h.text, h.first_line)?;
    }
    if cells.is_empty() {
        return Err(h.bad(
            "no figures: neither a throughput report (\"Children see throughput\"), nor an -R report (\"Excel output is below\"), nor the automatic-mode table (\"kB  reclen  write ...\")",
        ));
    }
    let mut runs = Vec::new();
    for ((file_kb, rec_kb), tests) in cells {
        let mut phases = Vec::new();
        for (name, figure) in tests {
            let kind = kind_of(&name).ok_or_else(|| h.bad(&format!("an unknown report \"{name} report\"")))?;
            let bps = figure * if h.ops_mode { rec_kb as f64 * 1024.0 } else { 1024.0 };
            let bytes = file_kb as f64 * 1024.0;
            let seconds = if bps > 0.0 { bytes / bps } else { 0.0 };
            let cpu = cpu
                .iter()
                .find(|(k, _)| *k == (file_kb, rec_kb))
                .and_then(|(_, t)| t.iter().find(|(n, _)| *n == name))
                .map(|(_, pct)| pct / 100.0 * seconds);
            phases.push(phase(
                phases.len() as u32,
                kind,
                Printed {
                    bytes,
                    parent: bps,
                    children: bps,
                    spread: None,
                    cpu,
                },
                ImportedParams {
                    tool: h.tool(),
                    test: Some(name.clone()),
                    bs: Some(rec_kb * 1024),
                    file_size: Some(file_kb * 1024),
                    workers: Some(1),
                    ..ImportedParams::default()
                },
                false,
            ));
        }
        runs.push(h.run(
            format!("iozone {file_kb} kB × {rec_kb} kB (imported)"),
            phases,
            json!({ "workers": 1, "file_kb": file_kb, "record_kb": rec_kb, "ops_mode": h.ops_mode, "from": if from_reports { "-R reports" } else { "automatic-mode table" } }),
        ));
    }
    Ok(runs)
}
