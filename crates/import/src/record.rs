//! Imported runs stored: what one file held, in one go, and every file below a directory, each
//! on its own so that a file that does not read does not stop the others.

use std::path::{Path, PathBuf};

use storlab_model::study::{ImportParams, Role, StudyParams};
use storlab_store::{ImportStudy, Imported, Store, StoreError};

use crate::{parse, Origin, Piece};

/// A file's text; a file that is not text (a binary, an archive) is refused. The reason does
/// not name the file: the caller does.
pub fn read_text(file: &Path) -> Result<String, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read it: {e}"))?;
    storlab_model::source::utf8(&bytes).map_err(|e| format!("not text ({e}): not an output storlab reads"))
}

/// The formats found, each once, in order.
pub fn formats(pieces: &[Piece]) -> Vec<&'static str> {
    let mut f: Vec<&'static str> = Vec::new();
    for p in pieces {
        if !f.contains(&p.format.name()) {
            f.push(p.format.name());
        }
    }
    f
}

/// Stores what one file (`path`) held, its runs and each IOzone matrix's cells kept together
/// as a study, in one transaction: all of it or nothing. Returns the runs' ids in the pieces'
/// order.
pub fn store_pieces(store: &mut Store, path: &str, pieces: &[Piece]) -> Result<Imported, StoreError> {
    let runs: Vec<_> = pieces.iter().flat_map(|p| p.runs.iter().cloned()).collect();
    let mut studies = Vec::new();
    let mut at = 0;
    for p in pieces {
        if p.matrix && p.runs.len() > 1 {
            studies.push(ImportStudy {
                params: StudyParams::IozoneImport(ImportParams {
                    imported_from: path.to_string(),
                }),
                members: p
                    .runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let role = Role::Imported {
                            name: r.run.job_name.clone().unwrap_or_default(),
                        };
                        (at + i, role)
                    })
                    .collect(),
            });
        }
        at += p.runs.len();
    }
    store.import_runs(&runs, &studies)
}

/// The files below a directory, as `storlab results import DIR` takes them.
#[derive(Debug, Default)]
pub struct Listing {
    /// Every regular file below it, in name order.
    pub files: Vec<PathBuf>,
    /// The directories that could not be listed, each with why.
    pub unreadable: Vec<(String, String)>,
}

/// Lists every regular file below `dir` (symbolic links are not followed). A directory that
/// cannot be opened is kept in [`Listing::unreadable`] and the others are listed; an entry that
/// cannot be read while listing one is an error that names the directory.
pub fn files_below(dir: &Path) -> Result<Listing, String> {
    let mut listing = Listing::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => {
                listing
                    .unreadable
                    .push((d.display().to_string(), format!("cannot read the directory: {e}")));
                continue;
            }
        };
        for e in entries {
            let cannot = |e: std::io::Error| format!("cannot read {}: {e}", d.display());
            let e = e.map_err(cannot)?;
            let t = e.file_type().map_err(cannot)?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                listing.files.push(e.path());
            }
        }
    }
    listing.files.sort();
    Ok(listing)
}

/// `storlab results import`'s flags, declared here once (the binary flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ImportFlags {
    /// The file, or a directory of files.
    #[arg(value_name = "FILE|DIR")]
    pub file: std::path::PathBuf,
    /// The host the jobs ran on, when the file does not say (client/server output does).
    #[arg(long)]
    pub host: Option<String>,
    /// A tag stored with every imported run; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = storlab_model::run::parse_tag)]
    pub tags: Vec<storlab_model::run::Tag>,
    /// When the runs ran, for output that does not say (IOzone without -R's date, fio's terse
    /// lines): 2026-11-20 or 2026-11-20T14:30:00Z. Without it, the file's modification time.
    #[arg(long, value_name = "DATE", value_parser = parse_date)]
    pub date: Option<String>,
}

/// `--date`: a day or a moment, as RFC 3339 UTC.
fn parse_date(s: &str) -> Result<String, String> {
    let full = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else {
        s.to_string()
    };
    humantime::parse_rfc3339_weak(full.trim_end_matches('Z'))
        .map(|t| humantime::format_rfc3339_seconds(t).to_string())
        .map_err(|e| format!("{s}: {e}: expected a date such as 2026-11-20 or 2026-11-20T14:30:00Z"))
}

/// When the runs of `file` ran if the file does not say: `--date`, else its modification time.
pub fn undated(file: &Path, date: Option<&str>) -> Option<(String, String)> {
    if let Some(d) = date {
        return Some((d.to_string(), "not in the file: --date".into()));
    }
    let t = std::fs::metadata(file).and_then(|m| m.modified()).ok()?;
    Some((
        humantime::format_rfc3339_seconds(t).to_string(),
        "not in the file: the file's modification time".into(),
    ))
}

impl ImportFlags {
    /// The one file named, read and parsed, nothing stored yet (so that a file that does not
    /// read leaves no database behind): where its runs come from and what they are, or why it
    /// does not read.
    pub fn parse_file(&self) -> Result<(Origin, Vec<Piece>), String> {
        let text = read_text(&self.file).map_err(|why| format!("{}: {why}", self.file.display()))?;
        let origin = Origin {
            path: self.file.display().to_string(),
            host: self.host.clone(),
            tags: self.tags.clone(),
            undated: undated(&self.file, self.date.as_deref()),
        };
        let pieces = parse(&origin, &text).map_err(|e| e.to_string())?;
        Ok((origin, pieces))
    }
}

/// What became of one file.
#[derive(Debug)]
pub enum Outcome {
    /// Read: the formats found, the runs stored and those the database held already.
    Imported {
        /// The formats, each once, in order.
        formats: Vec<&'static str>,
        /// The runs stored.
        ids: Vec<i64>,
        /// The runs the database held already (the same content imported before), skipped.
        already: Vec<i64>,
    },
    /// Not stored, and why (not readable, not text, damaged, nobody's output).
    NotImported(String),
}

/// Reads, parses and stores `file` (named in the runs as `origin` says), in one go. A file that
/// does not read is [`Outcome::NotImported`] with the reason and nothing stored; only the
/// database's failure is an error.
pub fn import_file(store: &mut Store, file: &Path, origin: &Origin) -> Result<Outcome, StoreError> {
    let parsed = read_text(file).and_then(|text| parse(origin, &text).map_err(|e| e.what));
    Ok(match parsed {
        Ok(pieces) => {
            let done = store_pieces(store, &origin.path, &pieces)?;
            Outcome::Imported {
                ids: done.stored,
                already: done.already,
                formats: formats(&pieces),
            }
        }
        Err(why) => Outcome::NotImported(why),
    })
}

/// "; 2 already stored (runs 4–5), skipped", or nothing.
pub fn skipped(already: &[i64]) -> String {
    if already.is_empty() {
        String::new()
    } else {
        format!("; {} already stored ({}), skipped", already.len(), id_list(already))
    }
}

/// Run ids as a reader takes them: "run 3", "runs 3–7" (a range without gaps) or "runs 3, 5".
pub fn id_list(ids: &[i64]) -> String {
    match ids {
        [] => "no runs".into(),
        [one] => format!("run {one}"),
        [first, .., last] if ids.windows(2).all(|w| w[1] == w[0] + 1) => format!("runs {first}–{last}"),
        _ => format!(
            "runs {}",
            ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

impl Outcome {
    /// The line `results import DIR` prints for the file at `path`.
    pub fn line(&self, path: &str) -> String {
        match self {
            Outcome::Imported { formats, ids, already } if ids.is_empty() => format!(
                "{path}: already stored ({}, {}): skipped",
                id_list(already),
                formats.join(", ")
            ),
            Outcome::Imported { formats, ids, already } => format!(
                "{path}: imported {} run(s) from {} ({}){}",
                ids.len(),
                formats.join(", "),
                id_list(ids),
                skipped(already)
            ),
            Outcome::NotImported(why) => format!("{path}: not imported: {why}"),
        }
    }

    /// The file at `path` in `results import DIR --json`'s document.
    pub fn document(&self, path: &str) -> serde_json::Value {
        match self {
            Outcome::Imported { formats, ids, already } => {
                serde_json::json!({ "file": path, "formats": formats, "imported": ids, "already_stored": already })
            }
            Outcome::NotImported(why) => serde_json::json!({ "file": path, "error": why }),
        }
    }
}

/// What became of every file below a directory: the ones that could not be read first (a
/// directory that would not list), then each file in name order.
#[derive(Debug, Default)]
pub struct DirImport {
    /// Each path and what became of it.
    pub files: Vec<(String, Outcome)>,
}

impl DirImport {
    /// Every run stored, in order.
    pub fn ids(&self) -> Vec<i64> {
        self.files
            .iter()
            .flat_map(|(_, o)| match o {
                Outcome::Imported { ids, .. } => ids.clone(),
                Outcome::NotImported(_) => Vec::new(),
            })
            .collect()
    }

    /// Every run the database held already, skipped: each once, in order (two files may hold
    /// the same run — a report and a copy of it pasted into another).
    pub fn already(&self) -> Vec<i64> {
        let ids: std::collections::BTreeSet<i64> = self
            .files
            .iter()
            .flat_map(|(_, o)| match o {
                Outcome::Imported { already, .. } => already.clone(),
                Outcome::NotImported(_) => Vec::new(),
            })
            .collect();
        ids.into_iter().collect()
    }

    /// `results import DIR --json`: each file, every run stored, how many files were not.
    pub fn document(&self) -> serde_json::Value {
        let files: Vec<serde_json::Value> = self.files.iter().map(|(p, o)| o.document(p)).collect();
        serde_json::json!({ "files": files, "imported": self.ids(), "already_stored": self.already(), "not_imported": self.failed() })
    }

    /// The line that ends `results import DIR`: the runs stored from how many files of all, into
    /// which database, and how many files were not imported.
    pub fn summary(&self, dir: &Path, target: &str) -> String {
        let (failed, all) = (self.failed(), self.files.len());
        let not = if failed > 0 {
            format!("; {failed} file(s) not imported (named above)")
        } else {
            String::new()
        };
        format!(
            "storlab: imported {} run(s) from {} of {all} file(s) in {} into {target}{}{not}",
            self.ids().len(),
            all - failed,
            dir.display(),
            skipped(&self.already())
        )
    }

    /// How many files were not imported.
    pub fn failed(&self) -> usize {
        self.files
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::NotImported(_)))
            .count()
    }
}

/// Imports every file of `listing` (see [`files_below`]), each in its own transaction and named
/// in its runs as its own path, with `host` and `tags`; `each` is told each file's outcome as
/// it is stored (the unreadable ones are only in the result). Only the database's failure is
/// an error.
pub fn import_listing(
    store: &mut Store,
    listing: &Listing,
    host: Option<String>,
    tags: &[(String, String)],
    date: Option<&str>,
    mut each: impl FnMut(&str, &Outcome),
) -> Result<DirImport, StoreError> {
    let mut out = DirImport::default();
    for (path, why) in &listing.unreadable {
        out.files.push((path.clone(), Outcome::NotImported(why.clone())));
    }
    for f in &listing.files {
        let path = f.display().to_string();
        let origin = Origin {
            path: path.clone(),
            host: host.clone(),
            tags: tags.to_vec(),
            undated: undated(f, date),
        };
        let o = import_file(store, f, &origin)?;
        each(&path, &o);
        out.files.push((path, o));
    }
    Ok(out)
}
