//! `storlab meta`: a metadata workload (crates/meta) run through the session's one run path
//! and stored as a run of kind `meta`, one phase per operation.

use std::sync::atomic::AtomicBool;

use anyhow::Result;
use storlab_meta::job::MetaJob;
use storlab_meta::layout::Layout;
use storlab_model::meta::{MetaOp, TreeShape};
use storlab_model::run::{NewRun, Phase, PhaseName, PhaseParams, RunKind};
use storlab_session::{IntervalObserver, LiveRun, Phases, RunOptions};

use crate::cli::MetaArgs;
use crate::results::{open_new, print_run};
use crate::usage;

/// The phases when none is given: mdtest's directory and file phases.
const DEFAULT_PHASES: [MetaOp; 5] = [
    MetaOp::Mkdir,
    MetaOp::Create,
    MetaOp::Stat,
    MetaOp::Remove,
    MetaOp::Rmdir,
];

/// The request from the flags.
fn job(a: &MetaArgs) -> Result<MetaJob> {
    let mut phases = Vec::new();
    for p in a
        .phases
        .iter()
        .flat_map(|p| p.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        phases.push(MetaOp::from_name(p).ok_or_else(|| {
            usage(format!(
                "--phase {p}: not a metadata phase; expected {}",
                MetaOp::names()
            ))
        })?);
    }
    if phases.is_empty() {
        phases = DEFAULT_PHASES.to_vec();
    }
    let tree = match a.tree.split_once(',') {
        Some((d, b)) => match (d.trim().parse(), b.trim().parse()) {
            (Ok(depth), Ok(branch)) => TreeShape { depth, branch },
            _ => return Err(usage(format!("--tree {}: expected DEPTH,BRANCH such as 2,10", a.tree))),
        },
        None => return Err(usage(format!("--tree {}: expected DEPTH,BRANCH such as 2,10", a.tree))),
    };
    let file_size: storlab_units::Size = a
        .file_size
        .parse()
        .map_err(|e| usage(format!("--file-size {}: {e}", a.file_size)))?;
    let runtime = a
        .runtime
        .as_deref()
        .map(|r| {
            r.parse::<storlab_units::Duration>()
                .map(|d| d.std())
                .map_err(|e| usage(format!("--runtime {r}: {e}")))
        })
        .transpose()?;
    Ok(MetaJob {
        target: a.target.clone(),
        workers: a.threads,
        items_per_worker: a.files_per_thread,
        runtime,
        phases,
        tree,
        shared_dir: !a.unique_dir,
        file_size: file_size.0,
        sync: a.sync,
        keep: a.keep,
    })
}

/// The metadata phases, for the session to run and store.
struct MetaPhases<'a> {
    layout: &'a mut Layout,
}

impl Phases for MetaPhases<'_> {
    fn count(&self) -> usize {
        self.layout.job.phases.len()
    }

    fn describe(&self, seq: usize) -> (PhaseName, Option<f64>, Option<u64>, bool) {
        let op = self.layout.job.phases[seq];
        let making = matches!(op, MetaOp::Create | MetaOp::Mkdir);
        let runtime = self.layout.job.runtime.filter(|_| making).map(|d| d.as_secs_f64());
        (PhaseName::Other(op.name().into()), runtime, None, false)
    }

    fn run(
        &mut self,
        seq: usize,
        stop: &AtomicBool,
        _observer: Option<&dyn IntervalObserver>,
    ) -> Result<Phase, Box<dyn std::error::Error + Send + Sync>> {
        let op = self.layout.job.phases[seq];
        let o = storlab_meta::phase::run(self.layout, op, stop);
        Ok(Phase {
            seq: seq as u32,
            kind: PhaseName::Other(op.name().into()),
            params: PhaseParams::Meta(o.params),
            result: o.result,
            cache_flattered: false,
        })
    }
}

/// `storlab meta`.
pub fn meta(a: MetaArgs) -> Result<u8> {
    let job = job(&a)?;
    // Refusals come before anything is made or stored.
    let mut layout = Layout::prepare(&job).map_err(|e| usage(e.to_string()))?;
    let mut store = open_new(&a.output.db)?;
    let command = crate::commands::command_line();
    let status = crate::commands::status_line(&a.output, a.quiet, None);
    let env = storlab_env::capture(std::slice::from_ref(&job.target));
    layout.make()?;
    let new_run = NewRun {
        kind: RunKind::Meta,
        host: env.host.clone(),
        job_name: Some(format!(
            "meta {}",
            job.phases.iter().map(|p| p.name()).collect::<Vec<_>>().join("+")
        )),
        job: serde_json::json!({ "meta": {
            "target": job.target, "workers": job.workers, "items_per_worker": job.items_per_worker,
            "runtime_seconds": job.runtime.map(|d| d.as_secs_f64()), "phases": job.phases,
            "tree": job.tree, "shared_dir": job.shared_dir, "file_size": job.file_size, "sync": job.sync,
            "root": layout.root,
        }}),
        command: command.clone(),
        tags: a.tags.clone(),
    };
    let ran = storlab_session::run_phases(
        &mut store,
        &new_run,
        &env,
        std::slice::from_ref(&job.target),
        &mut MetaPhases { layout: &mut layout },
        &RunOptions {
            kind: RunKind::Meta,
            tags: &a.tags,
            allow_devices: &[],
            keep: job.keep,
            command: &command,
            control: None,
            live: status.as_deref().map(|s| s as &dyn LiveRun),
        },
    );
    drop(status);
    if job.keep {
        eprintln!("storlab: kept the tree in {}", layout.root.display());
    } else {
        layout.remove()?;
    }
    let e = ran?;
    print_run(&store, e.run_id, false, &a.output)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(crate::commands::code_of(e.status))
}
