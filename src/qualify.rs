//! `storlab qualify`: a plan of criteria run until statistics decide them (crates/qualify), the
//! verdict printed from what was stored (crates/report), and an exit status a pipeline can gate
//! on: 0 every criterion passed, 1 one failed, 5 one stayed undecided. Under mpirun each
//! repetition is one run of every rank (src/ranks.rs).

use anyhow::Result;
use storlab_model::qualify::{Decision, QualifyParams, Stopped};
use storlab_qualify::{against, plan::Plan, prepare, run, QualifyError};
use storlab_store::Store;

use crate::cli::QualifyArgs;
use crate::results::{open_existing, open_new, print_study};
use crate::running::command_line;
use crate::{exit, usage};

/// A refusal of the plan or the flags is exit 2.
pub fn input(e: QualifyError) -> anyhow::Error {
    match e {
        QualifyError::Input(m) => usage(m),
        other => other.into(),
    }
}

/// The plan's options from the flags.
fn options(a: &QualifyArgs) -> prepare::Options {
    prepare::Options {
        targets: a.plan.targets.clone(),
        allow_devices: a.plan.allow_devices.clone(),
        max_repeats: a.plan.max_repeats,
    }
}

/// How the runs are made, from the flags; `against` the earlier qualification's id.
pub fn run_options(a: &QualifyArgs, against: Option<i64>) -> Result<run::Options> {
    let max_time = a
        .plan
        .max_time
        .as_deref()
        .map(|t| t.parse::<storlab_units::Duration>().map(|d| d.0 as f64 / 1e9))
        .transpose()
        .map_err(|e| usage(format!("--max-time: {e}")))?;
    Ok(run::Options {
        tags: a.plan.tags.clone(),
        allow_devices: a.plan.allow_devices.clone(),
        keep: a.plan.keep,
        command: command_line(),
        max_time,
        against,
    })
}

/// The plan file given, prepared (no database needed).
pub fn prepared_file(a: &QualifyArgs) -> Result<prepare::Prepared> {
    match (&a.plan.plan, &a.plan.against) {
        (Some(_), Some(_)) => Err(usage(
            "give a PLAN or --against, not both: --against runs the earlier qualification's own plan",
        )),
        (None, None) => Err(usage(
            "no plan: give PLAN (a TOML file, docs/qualify.md) or --against ID|KEY=VALUE",
        )),
        (None, Some(_)) => Err(usage("--against does not run under mpirun: give the plan file")),
        (Some(path), None) => Ok(prepare::prepare(Plan::load(path).map_err(input)?, &options(a)).map_err(input)?),
    }
}

/// A line per repetition on stderr, unless quiet.
pub fn sayer(a: &QualifyArgs) -> impl Fn(&str) {
    let quiet = a.quiet || a.output.json || a.output.csv;
    move |line: &str| {
        if !quiet {
            eprintln!("{line}");
        }
    }
}

/// Prints a stored qualification (and its comparison with the earlier one); its exit status.
pub fn report(
    a: &QualifyArgs,
    store: &Store,
    id: i64,
    params: &QualifyParams,
    earlier: Option<&(i64, QualifyParams)>,
) -> Result<u8> {
    print_study(store, id, a.output.json)?;
    if let (Some((old_id, old)), false) = (earlier, a.output.json) {
        println!("\nagainst qualification {old_id}:");
        print!("{}", storlab_report::qualify::comparison(old, params).to_text());
    }
    eprintln!("storlab: stored qualification {id} in {}", store.target());
    if params.stopped == Some(Stopped::Interrupted) {
        return Ok(exit::ABORTED);
    }
    Ok(match params.outcome() {
        Decision::Pass => 0,
        Decision::Fail => 1,
        Decision::Undecided => exit::UNDECIDED,
    })
}

pub fn qualify(a: QualifyArgs) -> Result<u8> {
    if let Some(launch) = crate::ranks::launched() {
        return crate::ranks::qualify(&a, &launch);
    }
    // The plan: the file given, or with --against the earlier qualification's (which needs the
    // database first). Every refusal comes before anything runs.
    let (mut plan, earlier, mut store) = match &a.plan.against {
        Some(spec) if a.plan.plan.is_none() => {
            let store = open_existing(&a.output.db)?;
            let (id, old) = against::earlier(&store, spec).map_err(input)?;
            let plan = against::plan_of(&old).map_err(input)?;
            (
                prepare::prepare(plan, &options(&a)).map_err(input)?,
                Some((id, old)),
                store,
            )
        }
        _ => (prepared_file(&a)?, None, open_new(&a.output.db)?),
    };
    prepare::read_baselines(&mut plan, &store).map_err(input)?;
    if a.plan.dry_run {
        print!("{}", plan.outline());
        return Ok(0);
    }
    let o = run_options(&a, earlier.as_ref().map(|e| e.0))?;
    let outcome = run::run(&mut store, &plan, &o, storlab_session::stop_flag(), &sayer(&a))?;
    report(&a, &store, outcome.study_id, &outcome.params, earlier.as_ref())
}

/// `results list --kind qualify`: the qualifications side by side, one row each (their runs are
/// in `results study ID`).
pub fn list(
    store: &Store,
    limit: usize,
    f: &storlab_report::runs::ListFilter,
    out: &crate::cli::OutputArgs,
) -> Result<u8> {
    let found = storlab_qualify::listing::list(store, f.host.as_deref(), &f.tags, limit)?;
    let t = || {
        let rows: Vec<_> = found
            .iter()
            .map(|q| (q.id, q.created_at.as_str(), q.hosts.as_slice(), q.runs, &q.params))
            .collect();
        storlab_report::qualify::list_table(&rows)
    };
    crate::results::emit(out, || &found, t, || t().to_text())?;
    if !out.json && !out.csv {
        eprintln!("{} qualification(s) in {}", found.len(), store.target());
    }
    Ok(0)
}
