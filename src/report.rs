//! `storlab report`: the HTML report of runs, comparisons, studies, challenges and a monitor's
//! window, from what the database holds.

use std::io::Write;

use anyhow::{Context, Result};
use storlab_report::export::write_whole;
use storlab_report::studies::StudyView;

use crate::cli::ReportArgs;
use crate::results::{comparison, open_existing};
use crate::usage;

pub fn report(args: ReportArgs) -> Result<u8> {
    use storlab_report::html::{render, HtmlOptions, RunSection};
    if args.ids.is_empty()
        && args.compare.is_empty()
        && args.studies.is_empty()
        && args.challenges.is_empty()
        && args.monitor.is_none()
    {
        return Err(usage(
            "nothing to report: give run ids, --compare GROUP --compare GROUP, --study ID, --challenge ID or --monitor FROM..TO",
        ));
    }
    if args.compare.len() == 1 {
        return Err(usage("--compare needs at least two groups (the first is the baseline)"));
    }
    let store = open_existing(&args.db)?;
    let comparison = match args.compare.len() {
        0 => None,
        _ => Some(comparison(&store, &args.compare, args.allow_different)?),
    };
    let sections = RunSection::of_runs(&store, &args.ids, comparison.as_ref())?;
    let studies = StudyView::load_all(&store, &args.studies)?;
    let challenges = args
        .challenges
        .iter()
        .map(|id| crate::challenge::view(&store, *id, ": no report was written"))
        .collect::<Result<Vec<_>>>()?;
    let monitors = match &args.monitor {
        Some(w) => vec![crate::monitor::view(&store, w, args.monitor_host.as_deref())?],
        None => Vec::new(),
    };
    let html = render(
        &sections,
        comparison.as_ref(),
        &studies,
        &challenges,
        &monitors,
        &[],
        &HtmlOptions {
            free_scales: args.free_scales,
        },
    );
    write_whole(&args.file, |f| Ok(f.write_all(html.as_bytes())?)).context("writing the report")?;
    eprintln!(
        "storlab: wrote {} ({:.1} KiB, {} run(s){})",
        args.file.display(),
        html.len() as f64 / 1024.0,
        sections.len(),
        if comparison.is_some() {
            ", with the comparison"
        } else if !studies.is_empty() {
            ", with the studies"
        } else if !challenges.is_empty() {
            ", with the challenges"
        } else if !monitors.is_empty() {
            ", with the monitor's window"
        } else {
            ""
        }
    );
    Ok(0)
}
