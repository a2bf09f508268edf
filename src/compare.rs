//! `storlab compare`: one job on two targets in rounds until statistics decide which is better,
//! by how much, or that they are equivalent (crates/qualify's versus.rs); the verdicts printed
//! from what was stored, and an exit status a pipeline can gate on: 0 every figure decided, 5
//! one undecided, 130 interrupted.

use std::path::PathBuf;

use anyhow::Result;
use storlab_qualify::versus::{self, Request};
use storlab_workload::Job;

use crate::cli::CompareTargetsArgs;
use crate::exit;
use crate::results::{open_new, print_study};
use crate::running::command_line;
use crate::usage;

/// "ext4=/mnt/a" → ("ext4", /mnt/a); "/mnt/a" → ("/mnt/a", /mnt/a).
fn named(t: &std::path::Path) -> (String, PathBuf) {
    let text = t.to_string_lossy();
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !name.contains('/') && !path.is_empty() => {
            (name.to_string(), PathBuf::from(path))
        }
        _ => (text.to_string(), t.to_path_buf()),
    }
}

/// The job on each target, each checked as `storlab run` checks it before anything runs.
fn jobs(a: &CompareTargetsArgs) -> Result<([String; 2], [PathBuf; 2], [Job; 2])> {
    let [ta, tb] = a.job.targets.as_slice() else {
        return Err(usage(format!(
            "storlab compare takes two targets (--target A --target B), {} given",
            a.job.targets.len()
        )));
    };
    let (sides, paths): (Vec<String>, Vec<PathBuf>) = [named(ta), named(tb)].into_iter().unzip();
    let fio = a
        .fio
        .as_ref()
        .map(|p| storlab_workload::fio::load(p, a.ignore_unknown))
        .transpose()?;
    let mut out = Vec::new();
    for path in &paths {
        let mut job = match &fio {
            Some(f) => a.job.over(f.job.clone())?,
            None => a.job.to_job()?,
        };
        if fio.is_some() {
            job.run_by_storlab();
        }
        job.override_with(std::slice::from_ref(path), &[], &Default::default())?;
        storlab_session::prepare(&job, &a.job.allow_devices)?;
        out.push(job);
    }
    let [ja, jb]: [Job; 2] = out.try_into().map_err(|_| usage("two jobs"))?;
    let [na, nb]: [String; 2] = sides.try_into().map_err(|_| usage("two names"))?;
    let [pa, pb]: [PathBuf; 2] = paths.try_into().map_err(|_| usage("two paths"))?;
    Ok(([na, nb], [pa, pb], [ja, jb]))
}

/// "5%", "5" or "0.5%" → 0.05, 0.05, 0.005.
fn margin(text: &str) -> Result<f64> {
    text.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v / 100.0)
        .ok_or_else(|| usage(format!("--margin {text}: expected a percentage such as 5% or 2.5%")))
}

pub fn compare(a: CompareTargetsArgs) -> Result<u8> {
    a.job.alone()?;
    let (names, paths, jobs) = jobs(&a)?;
    let max_time = a
        .max_time
        .as_deref()
        .map(|t| t.parse::<storlab_units::Duration>().map(|d| d.0 as f64 / 1e9))
        .transpose()
        .map_err(|e| usage(format!("--max-time: {e}")))?;
    let request = Request {
        names,
        jobs,
        targets: paths.map(|p| p.display().to_string()),
        margin: margin(&a.margin)?,
        confidence: a.confidence,
        max_rounds: a.max_repeats,
        max_time,
        tags: a.job.tags.clone(),
        allow_devices: a.job.allow_devices.clone(),
        keep: a.job.keep,
        command: command_line(),
    };
    // Every refusal comes before the database is opened.
    request.check()?;
    let mut store = open_new(&a.output.db)?;
    let quiet = a.job.quiet || a.output.json;
    let say = |line: &str| {
        if !quiet {
            eprintln!("storlab: {line}");
        }
    };
    let outcome = versus::run(&mut store, &request, storlab_session::stop_flag(), &say)?;
    print_study(&store, outcome.study_id, a.output.json)?;
    eprintln!("storlab: stored compare {} in {}", outcome.study_id, store.target());
    let p = &outcome.params;
    Ok(if p.stopped == "interrupted" {
        exit::ABORTED
    } else if p.verdicts.iter().any(|v| v.verdict == "undecided") {
        exit::UNDECIDED
    } else {
        0
    })
}
