//! A scan stored as a run.

use storlab_model::run::{NewRun, RunKind, RunStatus, Tag};
use storlab_model::scan::{Report as ScanReport, ScanOptions};
use storlab_store::Store;

use crate::SessionError;

/// Stores a scan as a run of kind `scan`: its options as the job, the environment of its
/// paths, the report, and the status (`partial` when some entries could not be counted).
/// Returns the run's id.
pub fn store_scan(
    store: &mut Store,
    opts: &ScanOptions,
    report: &ScanReport,
    tags: &[Tag],
    command: &str,
) -> Result<i64, SessionError> {
    let env = storlab_env::capture(&opts.roots);
    let paths: Vec<String> = opts.roots.iter().map(|p| p.display().to_string()).collect();
    let run_id = store.begin_run(&NewRun {
        kind: RunKind::Scan,
        host: env.host.clone(),
        job_name: Some(format!("scan {}", paths.join(", "))),
        job: serde_json::to_value(opts).unwrap_or_default(),
        command: command.to_string(),
        tags: tags.to_vec(),
    })?;
    store.save_environment(run_id, &env)?;
    store.save_scan(run_id, report)?;
    let (status, detail) = match report.partial() {
        true => (
            RunStatus::Partial,
            Some(format!("{} entries could not be counted", report.problem_count)),
        ),
        false => (RunStatus::Ok, None),
    };
    store.finish_run(run_id, status, detail.as_deref())?;
    Ok(run_id)
}
