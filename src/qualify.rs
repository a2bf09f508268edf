//! `storlab qualify`: a plan of criteria run until statistics decide them (crates/qualify), the
//! verdict printed from what was stored (crates/report), and an exit status a pipeline can gate
//! on: 0 every criterion passed, 1 one failed, 5 one stayed undecided.

use anyhow::Result;
use storlab_model::qualify::Decision;
use storlab_qualify::{against, plan::Plan, prepare, run, QualifyError};

use crate::cli::QualifyArgs;
use crate::results::{open_existing, open_new, print_study};
use crate::running::command_line;
use crate::{exit, usage};

fn input(e: QualifyError) -> anyhow::Error {
    match e {
        QualifyError::Input(m) => usage(m),
        other => other.into(),
    }
}

pub fn qualify(a: QualifyArgs) -> Result<u8> {
    let f = &a.plan;
    let max_time = f
        .max_time
        .as_deref()
        .map(|t| t.parse::<storlab_units::Duration>().map(|d| d.0 as f64 / 1e9))
        .transpose()
        .map_err(|e| usage(format!("--max-time: {e}")))?;
    let options = prepare::Options {
        targets: f.targets.clone(),
        allow_devices: f.allow_devices.clone(),
        max_repeats: f.max_repeats,
    };
    // The plan: the file given, or with --against the earlier qualification's (which needs the
    // database first). Every refusal comes before anything runs.
    let (plan, earlier, mut store) = match (&f.plan, &f.against) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "give a PLAN or --against, not both: --against runs the earlier qualification's own plan",
            ))
        }
        (None, None) => {
            return Err(usage(
                "no plan: give PLAN (a TOML file, docs/qualify.md) or --against ID|KEY=VALUE",
            ))
        }
        (Some(path), None) => {
            let plan = Plan::load(path).map_err(input)?;
            let prepared = prepare::prepare(plan, &options).map_err(input)?;
            (prepared, None, open_new(&a.output.db)?)
        }
        (None, Some(spec)) => {
            let store = open_existing(&a.output.db)?;
            let (id, old) = against::earlier(&store, spec).map_err(input)?;
            let plan = against::plan_of(&old).map_err(input)?;
            (prepare::prepare(plan, &options).map_err(input)?, Some((id, old)), store)
        }
    };
    let mut plan = plan;
    prepare::read_baselines(&mut plan, &store).map_err(input)?;
    if f.dry_run {
        println!(
            "plan \"{}\": {} job(s) at {} point(s), {} criteria, at most {} repetitions each",
            plan.plan.name,
            plan.plan.jobs.len(),
            plan.trials.len(),
            plan.criteria.len(),
            plan.criteria.first().map_or(0, |c| c.design.max_repeats)
        );
        for c in &plan.criteria {
            println!(
                "  {:>3}  {}  {}  (line {})",
                c.index, plan.trials[c.trial].label, c.text, c.line
            );
        }
        return Ok(0);
    }
    let quiet = a.quiet || a.output.json || a.output.csv;
    let o = run::Options {
        tags: f.tags.clone(),
        allow_devices: f.allow_devices.clone(),
        keep: f.keep,
        command: command_line(),
        max_time,
        against: earlier.as_ref().map(|e| e.0),
    };
    let say = |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let outcome = run::run(&mut store, &plan, &o, storlab_session::stop_flag(), &say)?;
    print_study(&store, outcome.study_id, a.output.json)?;
    if let (Some((id, old)), false) = (&earlier, a.output.json) {
        println!("\nagainst qualification {id}:");
        print!(
            "{}",
            storlab_report::qualify::comparison(old, &outcome.params).to_text()
        );
    }
    eprintln!(
        "storlab: stored qualification {} in {}",
        outcome.study_id,
        store.target()
    );
    if outcome.params.stopped == Some(storlab_model::qualify::Stopped::Interrupted) {
        return Ok(exit::ABORTED);
    }
    Ok(match outcome.params.outcome() {
        Decision::Pass => 0,
        Decision::Fail => 1,
        Decision::Undecided => exit::UNDECIDED,
    })
}
