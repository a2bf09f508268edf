//! The plan file: what to run and what to hold it to, read whole before anything runs. Every
//! mistake is named with its line.
//!
//! ```toml
//! name = "new array"          # default: the file's name
//! confidence = "95%"          # every criterion's unless its own says otherwise
//! max_repeats = 10            # per job (--max-repeats overrides)
//!
//! [[job]]
//! name = "randread"
//! settings = { phase = ["randread"], bs = "4k", size = "1g", runtime = "30s", direct = true }
//! # or: file = "jobs/randread.toml" | fio = "fio-rand-read.fio" | iozone = "-s 1g -r 64k -i 0 -i 1"
//! #     | meta = "--threads 4 --files-per-thread 1000 --phase create,stat,remove"
//! vary = "threads=1,4,16"     # a point per value, each a job of its own
//! task = "btrfs-scrub:/mnt/pool"   # runs the job idle and with the task, in pairs
//!
//! [[criterion]]
//! job = "randread"
//! check = "IOPS >= 20000"     # check.rs: the forms a criterion takes
//! baseline = "fw=1.2"         # for "… of baseline": stored runs with this tag (or "runs 3,4,5", "study 7")
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::{input, QualifyError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanDoc {
    name: Option<String>,
    description: Option<String>,
    confidence: Option<Spanned<toml::Value>>,
    max_repeats: Option<Spanned<i64>>,
    max_time: Option<Spanned<String>>,
    require: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    job: Vec<Spanned<JobDoc>>,
    #[serde(default)]
    criterion: Vec<Spanned<CriterionDoc>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobDoc {
    name: Spanned<String>,
    file: Option<Spanned<String>>,
    fio: Option<Spanned<String>>,
    iozone: Option<Spanned<String>>,
    meta: Option<Spanned<String>>,
    settings: Option<Spanned<toml::Table>>,
    vary: Option<Spanned<String>>,
    task: Option<Spanned<String>>,
    target: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CriterionDoc {
    job: Spanned<String>,
    check: Spanned<String>,
    confidence: Option<Spanned<toml::Value>>,
    baseline: Option<Spanned<String>>,
}

/// Where a job's workload comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A storlab job file.
    File(PathBuf),
    /// A fio job file.
    Fio(PathBuf),
    /// IOzone's command line (as `storlab iozone` takes it).
    Iozone(Vec<String>),
    /// A metadata workload: `storlab meta`'s flags.
    Meta(Vec<String>),
    /// Job settings written in the plan (the keys of a storlab job file).
    Settings(toml::Table),
}

/// A job of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanJob {
    /// Its name (what criteria name).
    pub name: String,
    /// Its line.
    pub line: u32,
    /// What it runs.
    pub source: Source,
    /// `KEY=VALUES`: a point per value (storlab sweep's syntax), and its line.
    pub vary: Option<(String, u32)>,
    /// A background task (`KIND:ARGS`): the job runs in pairs, idle and with the task.
    pub task: Option<String>,
    /// Its own targets (the command line's --target replaces them).
    pub targets: Vec<PathBuf>,
}

/// A criterion of the plan, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanCriterion {
    /// The job it is on.
    pub job: String,
    /// Its line.
    pub line: u32,
    /// Its text (check.rs reads it).
    pub check: String,
    /// Its confidence (0.95 for 95 %).
    pub confidence: f64,
    /// The stored runs a `… of baseline` criterion compares with, as written.
    pub baseline: Option<String>,
}

/// A plan, read and checked for its own consistency (not yet against its jobs or the database).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Its name.
    pub name: String,
    /// What it is for, if it says.
    pub description: Option<String>,
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text, whole.
    pub text: String,
    /// At most this many repetitions of each job.
    pub max_repeats: u32,
    /// Stop starting repetitions after this many seconds.
    pub max_time: Option<f64>,
    /// Its jobs.
    pub jobs: Vec<PlanJob>,
    /// Its criteria.
    pub criteria: Vec<PlanCriterion>,
    /// `require = ["direct"]`: every job's data phases must run with O_DIRECT (the line of the
    /// requirement, for the refusal).
    pub require_direct: Option<u32>,
}

/// The default largest number of repetitions of a job.
pub const DEFAULT_MAX_REPEATS: u32 = 10;

/// The line (from 1) of byte `at` of `text`, as the plan's messages number lines.
fn line_of(text: &str, at: usize) -> u32 {
    storlab_model::source::line_of(text, at) as u32
}

/// A confidence as the plan writes it: "95%", 95 or 0.95; strictly between 50 % and 100 %.
pub fn confidence(v: &toml::Value) -> Result<f64, String> {
    let x = match v {
        toml::Value::String(s) => {
            let t = s.trim();
            let (num, pct) = match t.strip_suffix('%') {
                Some(n) => (n.trim(), true),
                None => (t, false),
            };
            let x: f64 = num
                .parse()
                .map_err(|_| format!("confidence '{s}': expected a percentage such as \"95%\""))?;
            if pct || x > 1.0 {
                x / 100.0
            } else {
                x
            }
        }
        toml::Value::Integer(i) => *i as f64 / 100.0,
        toml::Value::Float(f) if *f > 1.0 => f / 100.0,
        toml::Value::Float(f) => *f,
        _ => return Err("confidence: expected a percentage such as \"95%\"".into()),
    };
    if !(x > 0.5 && x < 1.0) {
        return Err(format!(
            "confidence {}: it must lie strictly between 50 % and 100 % (a verdict at 50 % is a coin's; at 100 % no number of repetitions decides)",
            storlab_units_percent(x)
        ));
    }
    Ok(x)
}

fn storlab_units_percent(x: f64) -> String {
    format!("{} %", (x * 1000.0).round() / 10.0)
}

impl Plan {
    /// Reads the plan at `path`.
    pub fn load(path: &Path) -> Result<Plan, QualifyError> {
        let text = storlab_model::source::read_text(path).map_err(|e| input(format!("cannot read the plan {e}")))?;
        Plan::parse(&text, path)
    }

    /// Reads a plan's text; `path` names it in messages and is where its job files are looked
    /// for (relative to its directory).
    pub fn parse(text: &str, path: &Path) -> Result<Plan, QualifyError> {
        let w = PlanText {
            text,
            shown: path.display().to_string(),
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        };
        let doc: PlanDoc = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
            w.at(line, storlab_model::names::serde_did_you_mean(e.message()))
        })?;
        let plan_confidence = w.confidence_of(&doc.confidence, 0.95)?;
        let max_repeats = match &doc.max_repeats {
            None => DEFAULT_MAX_REPEATS,
            Some(m) => {
                let v = *m.get_ref();
                if !(3..=1000).contains(&v) {
                    return Err(w.at(
                        w.line(m.span()),
                        format!("max_repeats {v}: expected 3 to 1000 (a verdict needs at least 3 repetitions)"),
                    ));
                }
                v as u32
            }
        };
        let max_time = match &doc.max_time {
            None => None,
            Some(t) => Some(
                t.get_ref()
                    .parse::<storlab_units::Duration>()
                    .map_err(|e| w.at(w.line(t.span()), format!("max_time: {e}")))?
                    .0 as f64
                    / 1e9,
            ),
        };
        let mut require_direct = None;
        if let Some(r) = &doc.require {
            for what in r.get_ref() {
                match what.as_str() {
                    "direct" => require_direct = Some(w.line(r.span())),
                    other => {
                        return Err(w.at(
                            w.line(r.span()),
                            format!("require: unknown requirement '{other}': a plan can require \"direct\" (every job's data phases with O_DIRECT)"),
                        ))
                    }
                }
            }
        }
        let mut jobs: Vec<PlanJob> = Vec::new();
        for j in &doc.job {
            let job = w.job(j, &jobs)?;
            jobs.push(job);
        }
        if jobs.is_empty() {
            return Err(w.at(1, "the plan has no [[job]]: nothing to qualify".into()));
        }
        let mut criteria = Vec::new();
        for c in &doc.criterion {
            criteria.push(w.criterion(c.get_ref(), &jobs, plan_confidence)?);
        }
        if criteria.is_empty() {
            return Err(w.at(1, "the plan has no [[criterion]]: nothing to decide".into()));
        }
        Ok(Plan {
            name: doc.name.unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "plan".into())
            }),
            description: doc.description,
            path: path.to_path_buf(),
            text: text.to_string(),
            max_repeats,
            max_time,
            jobs,
            criteria,
            require_direct,
        })
    }
}

/// A plan file's text as its mistakes are named: its lines, its name, and its directory (job
/// files are relative to it).
struct PlanText<'t> {
    text: &'t str,
    shown: String,
    dir: PathBuf,
}

impl PlanText<'_> {
    fn at(&self, line: u32, msg: String) -> QualifyError {
        input(format!("{}:{line}: {msg}", self.shown))
    }

    fn line(&self, s: std::ops::Range<usize>) -> u32 {
        line_of(self.text, s.start)
    }

    /// A confidence given, or the default.
    fn confidence_of(&self, v: &Option<Spanned<toml::Value>>, default: f64) -> Result<f64, QualifyError> {
        match v {
            None => Ok(default),
            Some(v) => confidence(v.get_ref()).map_err(|m| self.at(self.line(v.span()), m)),
        }
    }

    /// A `[[job]]`: its name (unique), what it runs (exactly one of file, fio, iozone, meta,
    /// settings), its vary, task and targets.
    fn job(&self, j: &Spanned<JobDoc>, before: &[PlanJob]) -> Result<PlanJob, QualifyError> {
        let jl = self.line(j.span());
        let j = j.get_ref();
        let name = j.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(self.at(self.line(j.name.span()), "a job's name is empty".into()));
        }
        if let Some(other) = before.iter().find(|o| o.name == name) {
            return Err(self.at(
                self.line(j.name.span()),
                format!(
                    "a second job named '{name}' (the first is on line {}): criteria name jobs, so names must differ",
                    other.line
                ),
            ));
        }
        let source = self.source(j, &name, jl)?;
        let targets = match &j.target {
            None => Vec::new(),
            Some(t) => match t.get_ref() {
                toml::Value::String(s) => vec![PathBuf::from(s)],
                toml::Value::Array(a) => a
                    .iter()
                    .map(|v| v.as_str().map(PathBuf::from))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| self.at(self.line(t.span()), "target: expected a path or a list of paths".into()))?,
                _ => return Err(self.at(self.line(t.span()), "target: expected a path or a list of paths".into())),
            },
        };
        Ok(PlanJob {
            name,
            line: jl,
            source,
            vary: j.vary.as_ref().map(|v| (v.get_ref().clone(), self.line(v.span()))),
            task: j.task.as_ref().map(|t| t.get_ref().trim().to_string()),
            targets,
        })
    }

    /// What a job runs: exactly one of its file, fio file, IOzone flags, meta flags, settings.
    fn source(&self, j: &JobDoc, name: &str, jl: u32) -> Result<Source, QualifyError> {
        let given: Vec<&str> = [
            j.file.as_ref().map(|_| "file"),
            j.fio.as_ref().map(|_| "fio"),
            j.iozone.as_ref().map(|_| "iozone"),
            j.meta.as_ref().map(|_| "meta"),
            j.settings.as_ref().map(|_| "settings"),
        ]
        .into_iter()
        .flatten()
        .collect();
        let words = |v: &Spanned<String>, what: &str, e: &str| -> Result<Vec<String>, QualifyError> {
            let args: Vec<String> = v.get_ref().split_whitespace().map(str::to_string).collect();
            if args.is_empty() {
                return Err(self.at(self.line(v.span()), format!("job '{name}': {what} is empty: give {e}")));
            }
            Ok(args)
        };
        Ok(match (given.len(), &j.file, &j.fio, &j.iozone, &j.meta, &j.settings) {
            (1, Some(f), ..) => Source::File(self.dir.join(f.get_ref())),
            (1, _, Some(f), ..) => Source::Fio(self.dir.join(f.get_ref())),
            (1, _, _, Some(z), ..) => Source::Iozone(words(z, "iozone", "IOzone's flags, e.g. \"-s 1g -r 64k -i 0 -i 1\"")?),
            (1, _, _, _, Some(m), _) => Source::Meta(words(m, "meta", "storlab meta's flags, e.g. \"--threads 4 --files-per-thread 1000\"")?),
            (1, .., Some(s)) => Source::Settings(s.get_ref().clone()),
            (0, ..) => {
                return Err(self.at(
                    jl,
                    format!("job '{name}' runs nothing: give one of file = \"JOB.toml\", fio = \"JOB.fio\", iozone = \"FLAGS\", meta = \"FLAGS\" or settings = {{ … }}"),
                ))
            }
            _ => {
                return Err(self.at(
                    jl,
                    format!("job '{name}' gives {}: a job runs one of them", given.join(" and ")),
                ))
            }
        })
    }

    /// A `[[criterion]]`, on a job the plan has.
    fn criterion(
        &self,
        c: &CriterionDoc,
        jobs: &[PlanJob],
        plan_confidence: f64,
    ) -> Result<PlanCriterion, QualifyError> {
        let job = c.job.get_ref().trim().to_string();
        if !jobs.iter().any(|j| j.name == job) {
            return Err(self.at(
                self.line(c.job.span()),
                format!(
                    "criterion on job '{job}', which the plan does not have; its jobs: {}",
                    jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        Ok(PlanCriterion {
            job,
            line: self.line(c.check.span()),
            check: c.check.get_ref().trim().to_string(),
            confidence: self.confidence_of(&c.confidence, plan_confidence)?,
            baseline: c.baseline.as_ref().map(|b| b.get_ref().trim().to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Plan, String> {
        Plan::parse(text, Path::new("/plans/p.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_plan_reads_with_its_lines_and_defaults() {
        let p = parse(
            "name = \"x\"\n[[job]]\nname = \"rr\"\nfile = \"jobs/rr.toml\"\nvary = \"threads=1,2\"\n\n[[criterion]]\njob = \"rr\"\ncheck = \"IOPS >= 100\"\n[[criterion]]\njob = \"rr\"\ncheck = \"lat p99 <= 5ms\"\nconfidence = \"99%\"\n",
        )
        .unwrap();
        assert_eq!(p.max_repeats, 10);
        assert_eq!(p.jobs[0].source, Source::File(PathBuf::from("/plans/jobs/rr.toml")));
        assert_eq!(p.jobs[0].line, 2);
        assert_eq!(p.jobs[0].vary, Some(("threads=1,2".into(), 5)));
        assert_eq!((p.criteria[0].line, p.criteria[0].confidence), (9, 0.95));
        assert_eq!((p.criteria[1].line, p.criteria[1].confidence), (12, 0.99));
    }

    #[test]
    fn mistakes_are_named_with_their_line() {
        let job = "[[job]]\nname = \"a\"\nsettings = { phase = [\"read\"] }\n";
        let crit = "[[criterion]]\njob = \"a\"\ncheck = \"IOPS >= 1\"\n";
        assert_eq!(
            parse(&format!("{job}{crit}confidence = \"100%\"\n")).unwrap_err(),
            "/plans/p.toml:7: confidence 100 %: it must lie strictly between 50 % and 100 % (a verdict at 50 % is a coin's; at 100 % no number of repetitions decides)"
        );
        assert!(parse(&format!("{job}{crit}confidence = 0.5\n"))
            .unwrap_err()
            .starts_with("/plans/p.toml:7: confidence 50 %"));
        assert_eq!(
            parse(&format!("{job}[[criterion]]\njob = \"b\"\ncheck = \"IOPS >= 1\"\n")).unwrap_err(),
            "/plans/p.toml:5: criterion on job 'b', which the plan does not have; its jobs: a"
        );
        assert!(parse(&format!("max_repeats = 2\n{job}{crit}"))
            .unwrap_err()
            .starts_with("/plans/p.toml:1: max_repeats 2"));
        assert!(
            parse("[[job]]\nname = \"a\"\n[[criterion]]\njob = \"a\"\ncheck = \"x\"\n")
                .unwrap_err()
                .starts_with("/plans/p.toml:1: job 'a' runs nothing")
        );
        let e = parse(&format!("{job}{crit}[[criterion]]\njbo = \"a\"\n")).unwrap_err();
        assert!(e.contains(":8: unknown field `jbo`"), "{e}");
        assert!(parse(job).unwrap_err().contains("no [[criterion]]"));
    }
}
