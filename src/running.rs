//! What every command that runs something shares: the command line as stored, the status
//! line, the live views (`--metrics` and the status line), and the exit code of a run's status.

use std::sync::Arc;

use anyhow::Result;
use storlab_metrics::status::StatusLine;
use storlab_model::run::{RunKind, RunStatus};
use storlab_session::{LiveRun, LiveViews, RunOptions};

use crate::cli::{JobArgs, OutputArgs};
use crate::{exit, usage};

/// The command line as typed, stored with every run, a database password in it masked.
pub(crate) fn command_line() -> String {
    storlab_store::mask_command_line(&std::env::args().collect::<Vec<_>>()).join(" ")
}

/// The status line, when a person watches (a terminal, stdout not one document, no --quiet);
/// `study` names the study for its own line.
pub(crate) fn status_line(out: &OutputArgs, quiet: bool, study: Option<String>) -> Option<Arc<StatusLine>> {
    storlab_metrics::status::wanted(out.json || out.csv, quiet).then(|| StatusLine::start(study))
}

/// The live views of a command: `--metrics` and the status line, either or both.
pub(crate) fn views(
    live: Option<&storlab_metrics::live::Live>,
    status: &Option<Arc<StatusLine>>,
) -> Option<Arc<dyn LiveRun + Send + Sync>> {
    LiveViews::of(vec![
        live.map(|l| l.shared()),
        status.clone().map(|s| s as Arc<dyn LiveRun + Send + Sync>),
    ])
}

/// The exit code of a run's status.
pub(crate) fn code_of(status: RunStatus) -> u8 {
    match status {
        RunStatus::Aborted => exit::ABORTED,
        RunStatus::Corrupt => exit::CORRUPT,
        RunStatus::Failed => 1,
        _ => 0,
    }
}

/// `--metrics ADDR`: the live figures served while the command runs (bound now, before anything
/// is stored, so that a taken address is refused with nothing done).
pub(crate) fn serve_live(a: &JobArgs, study: &str) -> Result<Option<storlab_metrics::live::Live>> {
    let live = storlab_metrics::live::serve(a.metrics.as_deref(), study).map_err(|e| usage(e.to_string()))?;
    if let Some(l) = &live {
        eprintln!("storlab: live figures at http://{}/metrics", l.endpoint.addr());
    }
    Ok(live)
}

/// How a job of `storlab run`, `demo` or `sweep` runs: as `kind`, with the job's flags and
/// `live` watching.
pub(crate) fn options<'a>(
    kind: RunKind,
    a: &'a JobArgs,
    command: &'a str,
    live: Option<&'a (dyn LiveRun + Send + Sync)>,
) -> RunOptions<'a> {
    RunOptions {
        kind,
        tags: &a.tags,
        allow_devices: &a.allow_devices,
        keep: a.keep,
        command,
        control: None,
        live: live.map(|v| v as &dyn LiveRun),
    }
}
