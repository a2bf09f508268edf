//! `storlab report`: the HTML report of runs, comparisons, studies, challenges and a monitor's
//! window, from what the database holds.

use std::io::Write;

use anyhow::{Context, Result};
use storlab_report::export::write_whole;
use storlab_report::html::{render, written, HtmlOptions, RunSection};
use storlab_report::studies::StudyView;

use crate::cli::ReportArgs;
use crate::results::open_existing;
use crate::usage;

pub fn report(args: ReportArgs) -> Result<u8> {
    let a = &args.what;
    a.check().map_err(usage)?;
    let store = open_existing(&args.db)?;
    let comparison = match a.compare.len() {
        0 => None,
        _ => Some(storlab_report::compare::compare_stored(
            &store,
            &a.compare,
            a.allow_different,
        )?),
    };
    let sections = RunSection::of_runs(&store, &a.ids, comparison.as_ref())?;
    let studies = StudyView::load_all(&store, &a.studies)?;
    let challenges = a
        .challenges
        .iter()
        .map(|id| crate::challenge::view(&store, *id, ": no report was written"))
        .collect::<Result<Vec<_>>>()?;
    let monitors = match &a.monitor {
        Some(w) => vec![crate::monitor::view(&store, w, a.monitor_host.as_deref())?],
        None => Vec::new(),
    };
    let options = HtmlOptions {
        free_scales: a.free_scales,
        title: a.title.clone(),
    };
    let html = render(
        &sections,
        comparison.as_ref(),
        &studies,
        &challenges,
        &monitors,
        &[],
        &options,
    );
    write_whole(&a.file, |f| Ok(f.write_all(html.as_bytes())?)).context("writing the report")?;
    let what = written(
        &html,
        sections.len(),
        comparison.is_some(),
        !studies.is_empty(),
        !challenges.is_empty(),
        !monitors.is_empty(),
    );
    eprintln!("storlab: wrote {} ({what})", a.file.display());
    Ok(0)
}
