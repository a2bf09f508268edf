//! fio's outputs of a stored run, for the tools that read fio (fio-plot, Ceph's CBT, a site's
//! scripts) and the people who read fio's text: one file per form —
//! json.rs (`--output-format=json|json+`, fio's stat.c `show_thread_status_json`), text.rs
//! (`normal`, fio's `show_thread_status_normal` and the run's group and disk lines), terse.rs
//! (`--minimal`, terse version 3) and logs.rs (`write_bw_log` and its kin). Each storlab phase
//! is a fio job reported as one group (fio's `group_reporting`: a phase's workers are one
//! group), or one entry per clone where its plan says so (clones.rs: fio without
//! group_reporting). The text is made from the JSON document, so that the two never disagree.

mod clones;
mod grid;
mod json;
mod logs;
mod remote;
mod terse;
mod text;
mod wire;

use storlab_model::run::RunDetail;

pub use json::{document, document_of};
pub use logs::log_files;
pub use remote::{all_clients, job_json, sum_group_into, sum_into};
pub use terse::{terse, terse_line};
pub use text::{entry_block, group_block, normal, report, starting, FioTextOptions};
pub use wire::{entry_options, planned_entries, thread_stats};

/// fio's default `percentile_list`.
pub const FIO_PERCENTILES: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
];

/// How to write the document.
#[derive(Debug, Clone)]
pub struct FioJsonOptions {
    /// The percentiles of each direction's latency (fio's `percentile_list`).
    pub percentiles: Vec<f64>,
    /// fio's json+: each latency bin and its count as well.
    pub plus: bool,
    /// The jobs' names in phase order (a fio job file's sections); the phase's kind otherwise.
    pub job_names: Vec<String>,
    /// fio's "global options": the options given before the first job (or in `[global]`),
    /// each with its value as given.
    pub global_options: storlab_workload::fio::GivenOptions,
    /// Each phase's fio "job options" as given (its job's own, fio's name and the value as
    /// written); where none are known (an export) they are read back from the phase's plan.
    pub job_options: Vec<storlab_workload::fio::GivenOptions>,
    /// How fio reports each phase's job (new_group, group_reporting across jobs); where not
    /// known (an export), each phase's workers are one job and a group is the phases that ran
    /// together.
    pub reporting: Vec<storlab_workload::fio::Reporting>,
}

impl Default for FioJsonOptions {
    fn default() -> FioJsonOptions {
        FioJsonOptions {
            percentiles: FIO_PERCENTILES.to_vec(),
            plus: false,
            job_names: Vec::new(),
            global_options: Vec::new(),
            job_options: Vec::new(),
            reporting: Vec::new(),
        }
    }
}

impl FioJsonOptions {
    /// As `storlab fio`'s command line asks: its jobs' names, its `percentile_list`, the
    /// global options of its job (`fio`).
    pub fn of_command(
        c: &storlab_workload::fio::cli::FioCommand,
        fio: &storlab_workload::fio::FioJob,
    ) -> FioJsonOptions {
        FioJsonOptions {
            job_names: c.job_names.clone(),
            percentiles: c.percentiles.clone().unwrap_or_else(|| FIO_PERCENTILES.to_vec()),
            plus: false,
            global_options: fio.global_options.clone(),
            job_options: fio.phase_options.clone(),
            reporting: fio.phase_reporting.clone(),
        }
    }

    /// As `results export --format` asks: None for a format that is not fio's (fio-json,
    /// fio-json+, fio-terse), else the options and whether the form is the terse line.
    pub fn of_export(format: &str) -> Option<(FioJsonOptions, bool)> {
        let (plus, terse) = match format {
            "fio-json" => (false, false),
            "fio-json+" => (true, false),
            "fio-terse" => (false, true),
            _ => return None,
        };
        Some((
            FioJsonOptions {
                plus,
                ..Default::default()
            },
            terse,
        ))
    }
}

/// A job that failed, as fio reports it: an entry of its own after the jobs before it, nothing
/// moved, its error number in "error" (the run keeps the phases before it; the failed one is
/// not stored, so only the outputs of the command that ran it show it).
pub struct Failed {
    /// The failed phase's plan.
    pub plan: storlab_model::plan::PhasePlan,
    /// Its place in the run, from 0.
    pub seq: usize,
    /// The system's error number (fio's `error`: 30 for a read-only filesystem, 84 for a
    /// block that failed its check).
    pub errno: i32,
    /// What went wrong.
    pub why: String,
}

impl Failed {
    /// Phase `seq` (from 1, as the run's failure names it) of `plans` failed with `errno`.
    pub fn of(plans: &[storlab_model::plan::PhasePlan], seq: usize, errno: i32, why: String) -> Option<Failed> {
        let at = seq.checked_sub(1)?;
        Some(Failed {
            plan: plans.get(at)?.clone(),
            seq: at,
            errno,
            why,
        })
    }

    /// The failed job added to `run`'s phases.
    pub fn add_to(self, run: &mut RunDetail) {
        let result = storlab_model::result::PhaseResult {
            errors: Some(storlab_model::result::ErrorsReport {
                count: 0,
                first_errno: self.errno,
                first: self.why,
            }),
            ..Default::default()
        };
        run.phases.push(storlab_model::run::Phase {
            seq: self.seq as u32,
            kind: storlab_model::run::PhaseName::Kind(self.plan.kind),
            params: storlab_model::run::PhaseParams::Plan(self.plan),
            result,
            cache_flattered: false,
        });
    }
}

/// Each block a run's reads found bad and went on past, as fio says each on stderr (`verify:
/// … at file F offset O, length 4096`; the run lists the first ones, the rest counted).
pub fn bad_block_lines(run: &RunDetail) -> String {
    let mut out = String::new();
    for v in run.phases.iter().filter_map(|p| p.result.verify.as_ref()) {
        for b in &v.bad {
            out += &format!(
                "verify: {} at file {} offset {}, length 4096\n",
                b.reason, b.file, b.offset
            );
        }
        if v.bad_blocks > v.bad.len() as u64 {
            out += &format!("verify: and {} more bad blocks\n", v.bad_blocks - v.bad.len() as u64);
        }
    }
    out
}

/// The runs as `results export` writes them in fio's forms: one JSON document of them all, or
/// a terse line each.
pub fn export(runs: &[RunDetail], o: &FioJsonOptions, terse: bool) -> Result<String, serde_json::Error> {
    Ok(match terse {
        true => runs.iter().map(|r| self::terse(r, o)).collect(),
        false => serde_json::to_string_pretty(&document_of(runs, o))? + "\n",
    })
}

/// What `storlab fio` writes in fio's formats for `run`, in fio's order whatever the order
/// asked (its stat.c): the job lines as the jobs start (normal), then the terse lines, the
/// JSON document (json+ with its bins), and the normal report. storlab's own table
/// (`--output-format=storlab`) is the binary's.
pub fn outputs(
    run: &RunDetail,
    formats: &[storlab_workload::fio::cli::OutputFormat],
    o: &FioJsonOptions,
    t: &FioTextOptions,
) -> Result<String, serde_json::Error> {
    use storlab_workload::fio::cli::OutputFormat;
    let has = |f: OutputFormat| formats.contains(&f);
    let doc = document(run, o);
    let mut out = String::new();
    if has(OutputFormat::Normal) {
        out += &starting(run, o);
    }
    if has(OutputFormat::Terse) {
        out += &terse(run, o);
    }
    if has(OutputFormat::Json) || has(OutputFormat::JsonPlus) {
        let o = FioJsonOptions {
            plus: has(OutputFormat::JsonPlus),
            ..o.clone()
        };
        out += &(serde_json::to_string_pretty(&document(run, &o))? + "\n");
    }
    if has(OutputFormat::Normal) {
        out += &report(run, &doc, &o.reporting, t);
    }
    Ok(out)
}

/// A fio document's job entries: its `jobs`, or a run of many ranks' `client_stats`.
pub(crate) fn job_entries(doc: &serde_json::Value) -> Vec<serde_json::Value> {
    doc.get("jobs")
        .or_else(|| doc.get("client_stats"))
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The time as C's ctime prints it in the local zone, without its newline ("Thu Nov 26
/// 13:50:05 2026"), as fio's job lines and its JSON's `time` carry it.
pub fn ctime(secs: i64) -> String {
    let t: libc::time_t = secs as libc::time_t;
    let mut buf = [0 as libc::c_char; 32];
    // SAFETY: ctime_r writes at most 26 bytes, NUL included, into the buffer it is given
    // (POSIX), and ours holds 32; it returns NULL (checked) for a time it cannot convert.
    let p = unsafe { libc::ctime_r(&t, buf.as_mut_ptr()) };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: on success the buffer holds a NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .trim_end()
        .to_string()
}
