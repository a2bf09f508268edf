//! What other tools printed, as storlab runs: fio (JSON and json+ wherever they sit in a file,
//! terse versions 3 to 5, the normal text), IOzone (the automatic-mode table, `-R` reports,
//! throughput mode, `-O`, `-+u`, pasted indented, several runs in one file), IOR (its text and
//! its JSON summary) and mdtest (its summary table).
//!
//! [`parse`] finds every tool's output in a file and reads each piece; nothing is taken from a
//! file in which one piece does not read (the caller stores a file whole or not at all). A
//! figure the tool did not print is marked not measured ([`PhaseResult::not_measured`]), never
//! stored as a measured 0.
//!
//! [`PhaseResult::not_measured`]: storlab_model::result::PhaseResult::not_measured
//! - lib.rs: [`parse`] — which tool printed which part of a file;
//! - fio_json.rs, fio_normal.rs, fio_terse.rs: fio's three outputs, the text two sharing one
//!   step to a stored run (fio_figures.rs);
//! - iozone.rs, ior.rs, mdtest.rs: the other tools, one file each;
//! - record.rs: what a file (or every file below a directory) held, stored in one go.

use serde_json::Value;
use storlab_model::env::Environment;
use storlab_model::result::{PhaseResult, Throughput};
use storlab_model::run::{ImportedRun, NewRun, Phase, RunKind};

mod fio_figures;
pub mod fio_json;
pub mod fio_normal;
pub mod fio_terse;
pub mod ior;
pub mod iozone;
pub mod mdtest;
pub mod record;

/// The formats storlab reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// fio `--output-format=json` or `json+`.
    FioJson,
    /// fio `--minimal` / `--output-format=terse`.
    FioTerse,
    /// fio `--output-format=normal`.
    FioNormal,
    /// IOzone's text (any of its reports).
    Iozone,
    /// IOR's text output.
    IorText,
    /// IOR's `-O summaryFormat=JSON`.
    IorJson,
    /// mdtest's summary.
    Mdtest,
}

impl Format {
    /// The name a user reads.
    pub fn name(self) -> &'static str {
        match self {
            Format::FioJson => "fio JSON",
            Format::FioTerse => "fio terse",
            Format::FioNormal => "fio normal text",
            Format::Iozone => "IOzone text",
            Format::IorText => "IOR text",
            Format::IorJson => "IOR JSON",
            Format::Mdtest => "mdtest summary",
        }
    }
}

/// One tool's output found in a file, read as runs.
#[derive(Debug)]
pub struct Piece {
    /// What it was.
    pub format: Format,
    /// Its runs.
    pub runs: Vec<ImportedRun>,
    /// True when the runs are cells of one matrix (an IOzone automatic-mode run): the caller
    /// keeps them together as a study.
    pub matrix: bool,
}

impl Piece {
    /// Runs that stand each on its own (every format but an IOzone matrix).
    fn runs(format: Format, runs: Vec<ImportedRun>) -> Piece {
        Piece {
            format,
            runs,
            matrix: false,
        }
    }
}

/// Why a file, or a piece of it, does not read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {what}")]
pub struct ImportError {
    /// The file.
    pub path: String,
    /// What was wrong and where.
    pub what: String,
}

/// What the caller says about the runs: the host they ran on when the file does not say, and
/// tags for every run.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The file's name as the user gave it.
    pub path: String,
    /// `--host`, when given.
    pub host: Option<String>,
    /// `--tag KEY=VALUE`.
    pub tags: Vec<(String, String)>,
    /// When a run whose output does not say when it ran is taken to have run (RFC 3339): the
    /// file's modification time, or `--date`; with how it was known. None: the time of the
    /// import.
    pub undated: Option<(String, String)>,
}

impl Origin {
    /// When a run the file does not date ran: the file's modification time or `--date` (with
    /// how it was known), else now.
    pub fn when_undated(&self) -> (String, String) {
        self.undated
            .clone()
            .unwrap_or_else(|| (now(), "not in the file: the time of the import".into()))
    }

    /// The host, or a placeholder saying which tool did not record it.
    pub fn host_or(&self, tool: &str) -> String {
        self.host.clone().unwrap_or_else(|| format!("unknown ({tool} import)"))
    }

    /// An error about this file.
    pub fn error(&self, what: impl Into<String>) -> ImportError {
        ImportError {
            path: self.path.clone(),
            what: what.into(),
        }
    }

    /// A run imported from this file: kind `import`, the caller's tags, `job` the record of
    /// where it came from (its `text` is the piece the run was read from).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        host: &str,
        name: String,
        command: String,
        job: Value,
        started_at: String,
        source: String,
        phases: Vec<Phase>,
    ) -> ImportedRun {
        ImportedRun {
            run: NewRun {
                kind: RunKind::Import,
                host: host.to_string(),
                job_name: Some(name),
                job,
                command,
                tags: self.tags.clone(),
            },
            started_at,
            environment: Environment {
                host: host.to_string(),
                source: Some(source),
                ..Environment::default()
            },
            phases,
        }
    }
}

/// A phase result of what a job moved: bytes and I/Os each way, over `seconds`, at the rates
/// the tool printed (the rest left for the caller).
pub(crate) fn moved(read: (f64, f64), written: (f64, f64), seconds: f64, bytes_per_sec: f64, iops: f64) -> PhaseResult {
    PhaseResult {
        bytes_read: read.0 as u64,
        bytes_written: written.0 as u64,
        ops_read: read.1 as u64,
        ops_written: written.1 as u64,
        all_done: Throughput {
            seconds,
            bytes: (read.0 + written.0) as u64,
            ops: (read.1 + written.1) as u64,
            bytes_per_sec,
            iops,
        },
        ..PhaseResult::default()
    }
}

/// Now, RFC 3339: the time of a run whose file does not say when it ran.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// "Sun Nov 22 00:28:24 2026" (C's ctime, as IOzone, IOR and fio print it) →
/// "2026-11-22T00:28:24Z": the tools print local time without a zone; it is taken as UTC and
/// said so in the run.
pub(crate) fn ctime_rfc3339(ctime: &str) -> Option<String> {
    let f: Vec<&str> = ctime.split_whitespace().collect();
    if f.len() != 5 {
        return None;
    }
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == f[1])?
        + 1;
    let day: u32 = f[2].parse().ok()?;
    let year: u32 = f[4].parse().ok()?;
    let hms: Vec<u32> = f[3].split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if hms.len() != 3 || hms[0] > 23 || hms[1] > 59 || hms[2] > 60 || !(1..=31).contains(&day) {
        return None;
    }
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        hms[0], hms[1], hms[2]
    ))
}

pub(crate) use storlab_model::source::line_of;

/// Every tool's output in `text`, read. A file may hold several (IOzone runs one after
/// another, fio JSON documents in a row, fio's JSON followed by its normal text); each is read
/// by its own reader, and a file in which nothing is recognised is refused naming what storlab
/// reads. A file any of whose figures read is not a finite number (or is no longer one once in
/// bytes or nanoseconds) is refused whole, naming the line and column of the figure.
pub fn parse(origin: &Origin, text: &str) -> Result<Vec<Piece>, ImportError> {
    let pieces = read_pieces(origin, text)?;
    for run in pieces.iter().flat_map(|p| &p.runs) {
        if let Some(at) = storlab_model::finite::first_non_finite(run) {
            return Err(not_finite(origin, text, &at));
        }
    }
    Ok(pieces)
}

/// The refusal of a file one of whose figures is not finite: where the first figure that
/// cannot be one is in the text (`inf`, `nan`, a number beyond 1e100), and what it became.
fn not_finite(origin: &Origin, text: &str, at: &str) -> ImportError {
    match unstorable_figure(text) {
        Some((line, column, token)) => origin.error(format!(
            "line {line}, column {column}: `{token}` is not a figure storlab can store (not a finite number, or none once in bytes or nanoseconds: {at}); correct it, or leave the cell empty where the tool measured nothing"
        )),
        None => origin.error(format!(
            "a figure read from it is not a finite number ({at}); nothing was stored"
        )),
    }
}

/// The first word of `text` that reads as a number but cannot be a figure: an infinity, a NaN,
/// or a number so large (beyond 1e100) that scaling it to bytes or nanoseconds leaves no finite
/// number. Its line and column (from 1, in characters) and the word.
pub fn unstorable_figure(text: &str) -> Option<(usize, usize, String)> {
    for (n, line) in text.lines().enumerate() {
        let mut column = 0;
        for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-'))) {
            let at = column;
            column += word.chars().count() + 1;
            let bare = word.trim_start_matches(['+', '-']).to_ascii_lowercase();
            let special = matches!(bare.as_str(), "inf" | "infinity" | "nan");
            let huge = word.parse::<f64>().is_ok_and(|v| !v.is_finite() || v.abs() > 1e100);
            if special || huge {
                return Some((n + 1, at + 1, word.to_string()));
            }
        }
    }
    None
}

/// Runs of one fio invocation, as its importers read them (a run per job), made one run per
/// client whose phases are the jobs, in order: what `storlab fio` stores of the same job file.
/// A client is what `client` says of a run (its host and port in client/server output, where
/// fio lists the clients' jobs as they end, interleaved); a client's jobs keep their order.
pub(crate) fn one_invocation(runs: Vec<(ImportedRun, String)>) -> Vec<ImportedRun> {
    let mut out: Vec<(ImportedRun, String)> = Vec::new();
    for (r, client) in runs {
        let Some((o, _)) = out.iter_mut().find(|(_, c)| *c == client) else {
            out.push((r, client));
            continue;
        };
        let seq = o.phases.len() as u32;
        for (k, mut p) in r.phases.into_iter().enumerate() {
            p.seq = seq + k as u32;
            o.phases.push(p);
        }
        let name = r.run.job_name.unwrap_or_default();
        let short = name.strip_prefix("fio ").unwrap_or(&name);
        if let Some(n) = o.run.job_name.as_mut() {
            *n = format!("{n}, {short}");
        }
        if let Some(j) = o.run.job.as_object_mut() {
            if let Value::Array(list) = j.entry("jobs").or_insert_with(|| Value::Array(Vec::new())) {
                list.push(r.run.job);
            }
        }
    }
    out.into_iter().map(|(r, _)| r).collect()
}

/// Runs all of one client (the outputs without a client/server part: one host).
fn one_client(runs: Vec<ImportedRun>) -> Vec<(ImportedRun, String)> {
    runs.into_iter().map(|r| (r, String::new())).collect()
}

/// Every tool's output in `text`, read as [`parse`] does before the figures are checked.
fn read_pieces(origin: &Origin, text: &str) -> Result<Vec<Piece>, ImportError> {
    let mut pieces = Vec::new();
    if iozone::looks_like_iozone(text) {
        for part in iozone::split_runs(text) {
            let first_line = line_of(text, part.as_ptr() as usize - text.as_ptr() as usize);
            let (runs, matrix) = iozone::parse_at(origin, part, first_line)?;
            pieces.push(Piece {
                format: Format::Iozone,
                runs,
                matrix,
            });
        }
        return Ok(pieces);
    }
    if ior::looks_like_ior_json(text) {
        return Ok(vec![Piece::runs(Format::IorJson, ior::parse_json(origin, text)?)]);
    }
    if ior::looks_like_ior_text(text) {
        return Ok(vec![Piece::runs(Format::IorText, ior::parse_text(origin, text)?)]);
    }
    if mdtest::looks_like_mdtest(text) {
        return Ok(mdtest::parse(origin, text)?
            .into_iter()
            .map(|r| Piece::runs(Format::Mdtest, vec![r]))
            .collect());
    }
    // fio: JSON documents first (the normal text printed beside them says the same again),
    // then terse lines, then the normal text alone.
    let docs = fio_json::documents(origin, text)?;
    if !docs.is_empty() {
        for (doc, at) in docs {
            pieces.push(Piece::runs(
                Format::FioJson,
                one_invocation(fio_json::parse_doc(origin, text, &doc, at)?),
            ));
        }
        return Ok(pieces);
    }
    if fio_terse::looks_like_terse(text) {
        return Ok(vec![Piece::runs(
            Format::FioTerse,
            one_invocation(one_client(fio_terse::parse(origin, text)?)),
        )]);
    }
    if fio_normal::looks_like_normal(text) {
        return Ok(vec![Piece::runs(
            Format::FioNormal,
            one_invocation(one_client(fio_normal::parse(origin, text)?)),
        )]);
    }
    Err(origin.error(
        "no output storlab reads: fio (JSON, json+, terse, normal), IOzone (text, -R), IOR (text, JSON) or mdtest (summary)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_that_cannot_be_stored_is_found_by_line_and_column() {
        assert_eq!(unstorable_figure("a 1 2\n  b=inf, c"), Some((2, 5, "inf".into())));
        assert_eq!(unstorable_figure("x 1e308 y"), Some((1, 3, "1e308".into())));
        assert_eq!(unstorable_figure("-NaN"), Some((1, 1, "-NaN".into())));
        assert_eq!(unstorable_figure("info infinite 1e99 1.5e3"), None);
    }

    #[test]
    fn ctime_becomes_rfc3339() {
        assert_eq!(
            ctime_rfc3339("Sun Nov 22 00:28:24 2026").as_deref(),
            Some("2026-11-22T00:28:24Z")
        );
        assert_eq!(
            ctime_rfc3339("Mon Jan  5 9:00:00 2009").as_deref(),
            Some("2009-01-05T09:00:00Z")
        );
        assert!(ctime_rfc3339("yesterday").is_none());
    }

    #[test]
    fn text_that_no_tool_printed_is_refused_by_name() {
        let origin = Origin {
            path: "notes.txt".into(),
            ..Origin::default()
        };
        let e = parse(&origin, "Monday: the array was slow again\n").unwrap_err();
        assert!(e.to_string().starts_with("notes.txt: no output storlab reads"), "{e}");
    }

    #[test]
    fn a_json_document_that_is_not_fios_is_named_by_its_line() {
        let origin = Origin {
            path: "x.json".into(),
            ..Origin::default()
        };
        let e = parse(&origin, "note: hello\n\n{\"jobs\": []}\n").unwrap_err();
        assert!(e.to_string().contains("line 3 is not fio's output"), "{e}");
    }
}
