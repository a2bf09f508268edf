//! `storlab meta`: the flags of a metadata workload, a walk or an untar study read into
//! crates/meta's requests, run and stored by crates/meta through the session's one run path,
//! and the stored run or study printed.

use std::sync::Arc;

use anyhow::Result;
use storlab_meta::job::MetaJob;
use storlab_meta::layout::Layout;
use storlab_meta::record::{Record, UntarStudy, WalkRequest};
use storlab_meta::untar::UntarPlan;
use storlab_model::run::Tag;
use storlab_session::LiveRun;

use crate::cli::{MetaArgs, MetaCmd, UntarArgs, WalkArgs};
use crate::results::print_run;
use crate::running::Measuring;
use crate::usage;

/// The record every meta run is stored with: the command line, the tags, the status line.
fn record<'a>(command: &'a str, live: &'a Option<Arc<dyn LiveRun + Send + Sync>>, tags: &'a [Tag]) -> Record<'a> {
    Record {
        command,
        tags,
        live: live.as_deref().map(|s| s as &dyn LiveRun),
    }
}

/// `storlab meta`.
pub fn meta(a: MetaArgs) -> Result<u8> {
    match a.what {
        Some(MetaCmd::Walk(w)) => return walk(w),
        Some(MetaCmd::Untar(u)) => return untar(u),
        None => {}
    }
    let job = MetaJob::from_flags(&a.workload).map_err(|e| usage(e.to_string()))?;
    if let Some(launch) = crate::team::launched() {
        return crate::team::meta(job, &a, &launch);
    }
    // Refusals come before anything is made or stored.
    let mut layout = Layout::prepare(&job).map_err(|e| usage(e.to_string()))?;
    let mut m = Measuring::start(None, None, "meta", &a.record.output, a.record.quiet, None)?;
    layout.make()?;
    let ran = storlab_meta::record::run_job(&mut m.store, &mut layout, record(&m.command, &m.live, &a.record.tags));
    let store = m.end();
    if job.keep {
        eprintln!("storlab: kept the tree in {}", layout.root.display());
    } else {
        layout.remove()?;
    }
    let e = ran?;
    print_run(&store, e.run_id, false, &a.record.output)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(crate::running::code_of(e.status))
}

/// `storlab meta walk DIR`.
fn walk(a: WalkArgs) -> Result<u8> {
    let request = WalkRequest::new(&a.walk).map_err(|e| usage(e.to_string()))?;
    let mut m = Measuring::start(None, None, "meta", &a.record.output, a.record.quiet, None)?;
    let e = storlab_meta::record::run_walk(&mut m.store, &request, record(&m.command, &m.live, &a.record.tags));
    let store = m.end();
    let e = e?;
    print_run(&store, e.run_id, false, &a.record.output)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(crate::running::code_of(e.status))
}

/// `storlab meta untar`: the copies at each concurrency, one study, in storlab's directory
/// (removed at the end unless --keep).
fn untar(a: UntarArgs) -> Result<u8> {
    let plan = UntarPlan::prepare(&a.untar).map_err(|e| usage(e.to_string()))?;
    let outcome = untar_study(&a, &plan);
    match plan.finish() {
        Ok(Some(root)) => eprintln!("storlab: kept {}", root.display()),
        Ok(None) => {}
        Err((root, e)) => eprintln!("storlab: warning: could not remove {}: {e}", root.display()),
    }
    outcome
}

/// The points of an untar study, stored as one study and printed.
fn untar_study(a: &UntarArgs, plan: &UntarPlan) -> Result<u8> {
    let mut m = Measuring::start(
        None,
        None,
        "meta",
        &a.record.output,
        a.record.quiet,
        Some(plan.describe()),
    )?;
    let done = storlab_meta::record::run_untar(
        &mut m.store,
        &storlab_meta::record::UntarRequest::of(plan),
        record(&m.command, &m.live, &a.record.tags),
    );
    let store = m.end();
    let UntarStudy {
        study_id: id,
        aborted,
        failed,
    } = done?;
    crate::results::print_study(&store, id, a.record.output.json)?;
    eprintln!("storlab: stored study {id} in {}", store.target());
    Ok(if aborted {
        crate::exit::ABORTED
    } else if failed {
        1
    } else {
        0
    })
}
