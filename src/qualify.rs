//! `storlab qualify`: a plan of criteria run until statistics decide them (crates/qualify, its
//! flags and what they ask included), the verdict printed from what was stored (crates/report),
//! and an exit status a pipeline can gate on: 0 every criterion passed, 1 one failed, 5 one
//! stayed undecided. Under mpirun each repetition is one run of every rank (src/team.rs, where
//! main sends it, so that this file and team.rs do not import each other).

use anyhow::Result;
use storlab_model::qualify::{Decision, QualifyParams, Stopped};
use storlab_store::Store;

use crate::cli::QualifyArgs;
use crate::exit;
use crate::results::{open_existing, open_new, print_study};
use crate::running::command_line;

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
    // Every refusal (exit 2: QualifyError::Input) comes before anything runs, a plan file's
    // before the database is opened; --against reads its plan from the database.
    let open = |existing| match existing {
        true => open_existing(&a.output.db),
        false => open_new(&a.output.db),
    };
    let (mut store, (plan, earlier)) = a.plan.planned(open)?;
    if a.plan.dry_run {
        print!("{}", plan.outline());
        return Ok(0);
    }
    let o = a.plan.run_options(command_line(), earlier.as_ref().map(|e| e.0))?;
    let outcome = storlab_qualify::run::run(&mut store, &plan, &o, storlab_session::stop_flag(), &sayer(&a))?;
    report(&a, &store, outcome.study_id, &outcome.params, earlier.as_ref())
}

/// `results list --kind qualify`: the qualifications side by side, one row each (their runs are
/// in `results study ID`).
pub fn list(limit: usize, f: &storlab_report::runs::ListFilter, out: &crate::cli::OutputArgs) -> Result<u8> {
    let store = open_existing(&out.db)?;
    let found = storlab_qualify::listing::list(&store, f.host.as_deref(), &f.tags, limit)?;
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
