//! `storlab run` and `storlab demo`: resolve the job, capture the environment, run the phases
//! one by one, store each as it finishes, clean up, print.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use storlab_engine::{run_phase_with, PhasePlan, PhaseResult};
use storlab_store::{NewRun, PhaseRow, SampleRow, Store};
use storlab_units::mib_per_sec;
use storlab_workload::{cache_may_flatter, resolve, Job, ResolveOptions};

use crate::cli::{DemoArgs, OutputArgs, RunArgs};
use crate::exit;
use crate::output;

/// Set by Ctrl-C (SIGINT) and SIGTERM; the engine's workers poll it between I/Os.
static STOP: AtomicBool = AtomicBool::new(false);

/// The flag Ctrl-C sets, with its handler installed: studies watch it between runs.
pub fn stop_flag() -> &'static AtomicBool {
    install_stop_handler();
    &STOP
}

fn install_stop_handler() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if STOP.swap(true, Ordering::Relaxed) {
                // A second Ctrl-C while cleaning up: leave at once.
                std::process::exit(exit::ABORTED as i32);
            }
            eprintln!("\nstorlab: stopping (finished phases are kept; files are being removed)...");
        });
    });
}

/// The job `storlab demo` runs: a short qualification of one directory.
pub const DEMO_JOB: &str = r#"
name = "demo"
threads = 2
size = "128m"
bs = "1m"
fsync = "end"
phase = [
    "write",
    "rewrite",
    "read",
    "reread",
    { kind = "randread", bs = "4k", runtime = "5s" },
    { kind = "randwrite", bs = "4k", runtime = "5s" },
]
"#;

pub fn db_path(output: &OutputArgs) -> PathBuf {
    output
        .db
        .clone()
        .unwrap_or_else(|| storlab_store::default_path(dirs::data_dir()))
}

pub fn demo(args: DemoArgs) -> Result<u8> {
    let (dir, _tmp) = match &args.dir {
        Some(d) => (d.clone(), None),
        None => {
            let t = tempfile::Builder::new()
                .prefix("storlab-demo-")
                .tempdir()
                .context("cannot create a temporary directory for the demo")?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let mut job = Job::parse(DEMO_JOB, "demo job")?;
    job.targets = vec![dir.clone()];
    eprintln!(
        "storlab demo: qualifying {} (write, rewrite, read, reread, random read, random write; under a minute)",
        dir.display()
    );
    execute(job, "demo", &[], &[], false, &args.output, "storlab demo".into())
}

pub fn run(args: RunArgs) -> Result<u8> {
    let job = args.job.to_job()?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    execute(
        job,
        "run",
        &args.job.tags,
        &args.job.allow_devices,
        args.job.keep,
        &args.output,
        command,
    )
}

/// Removes the files a run created, however the run ends.
struct Cleanup {
    files: Vec<PathBuf>,
    keep: bool,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for f in &self.files {
            match std::fs::remove_file(f) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => eprintln!("storlab: warning: could not remove {}: {e}", f.display()),
            }
        }
    }
}

fn random_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ ((std::process::id() as u64) << 40) ^ 0x9E37_79B9_7F4A_7C15
}

/// What one executed job left: its run id, final status, plan and phase results.
pub struct Executed {
    pub run_id: i64,
    pub status: &'static str,
    pub results: Vec<PhaseResult>,
}

/// How to execute a job.
pub struct ExecOptions<'a> {
    pub kind: &'a str,
    pub tags: &'a [(String, String)],
    pub allow: &'a [PathBuf],
    pub keep: bool,
    pub chatty: bool,
    pub command: String,
    /// Lets a study end the (time-based) phases early and see when each started.
    pub control: Option<&'a storlab_engine::PhaseControl>,
}

fn execute(
    job: Job,
    kind: &str,
    tags: &[(String, String)],
    allow: &[PathBuf],
    keep: bool,
    out: &OutputArgs,
    command: String,
) -> Result<u8> {
    let db = db_path(out);
    let e = run_job(
        &job,
        &db,
        &ExecOptions {
            kind,
            tags,
            allow,
            keep,
            chatty: std::io::stderr().is_terminal() && !out.json && !out.csv,
            command,
            control: None,
        },
    )?;
    let store = Store::open(&db, &storlab_env::capture(&[]).host)?;
    let stored = store
        .run(e.run_id, out.json || out.csv)?
        .context("the run just stored cannot be read back")?;
    output::print_run(&stored, out)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.path().display());
    if kind == "demo" && !keep {
        eprintln!("storlab: the demo's files were removed");
    }
    Ok(match e.status {
        "aborted" => exit::ABORTED,
        "corrupt" => exit::CORRUPT,
        _ => 0,
    })
}

/// Resolves a job, runs its phases, stores the run in `db` and removes the files it created
/// (unless `keep`). Errors of a phase are stored with the run and returned.
pub fn run_job(job: &Job, db: &std::path::Path, o: &ExecOptions) -> Result<Executed> {
    let opts = ResolveOptions {
        allow_devices: o.allow.to_vec(),
        file_tag: std::process::id().to_string(),
        default_seed: random_seed(),
    };
    let plan = resolve(job, &opts)?;
    let targets: Vec<PathBuf> = plan.targets.iter().map(|(p, _)| p.clone()).collect();
    let env = storlab_env::capture(&targets);
    let mut store = Store::open(db, &env.host)?;
    let run_id = store.begin_run(&NewRun {
        kind: o.kind.into(),
        host: env.host.clone(),
        job_name: Some(plan.name.clone()),
        job: serde_json::json!({ "job": job, "plan": plan }),
        command: o.command.clone(),
        tags: o.tags.to_vec(),
    })?;
    storlab_engine::clock::init();
    let env = storlab_env::Environment {
        clock: Some(storlab_engine::clock::source().into()),
        ..env
    };
    store.save_environment(run_id, &serde_json::to_value(&env)?)?;
    install_stop_handler();
    let cleanup = Cleanup {
        files: plan.created_files.clone(),
        keep: o.keep,
    };
    let chatty = o.chatty;
    let mut results = Vec::new();
    let mut status = "ok";
    let mut detail: Option<String> = None;
    let mut bad_blocks = 0u64;
    let n = plan.phases.len();
    for (seq, phase) in plan.phases.iter().enumerate() {
        if STOP.load(Ordering::Relaxed) {
            status = "aborted";
            break;
        }
        if chatty {
            eprint!("[{}/{n}] {:<10} ", seq + 1, phase.kind.name());
        }
        store.add_event(run_id, "phase-start", &format!("{} ({})", seq + 1, phase.kind.name()))?;
        let fresh = storlab_engine::PhaseControl::new();
        let result = match run_phase_with(phase, &STOP, o.control.unwrap_or(&fresh)) {
            Ok(r) => r,
            Err(e) => {
                if chatty {
                    eprintln!("failed");
                }
                let msg = format!("phase {} ({}) failed: {e}", seq + 1, phase.kind.name());
                store.add_event(run_id, "phase-failed", &msg)?;
                store.finish_run(run_id, "failed", Some(&msg))?;
                drop(cleanup);
                return Err(anyhow::Error::new(e).context(format!(
                    "run {run_id}, phase {} ({})",
                    seq + 1,
                    phase.kind.name()
                )));
            }
        };
        if result.interrupted {
            if chatty {
                eprintln!("interrupted");
            }
            let msg = format!(
                "interrupted during phase {} ({}); that phase is not stored",
                seq + 1,
                phase.kind.name()
            );
            store.add_event(run_id, "interrupted", &msg)?;
            status = "aborted";
            detail = Some(msg);
            break;
        }
        let flattered = cache_may_flatter(phase, plan.file_set_bytes, env.memory_bytes);
        if let Some(v) = &result.verify {
            bad_blocks += v.bad_blocks;
        }
        if chatty {
            eprintln!("{}", mib_per_sec(result.all_done.bytes_per_sec));
        }
        store.save_phase(run_id, &phase_row(seq as u32, phase, &result, flattered)?)?;
        results.push(result);
    }
    drop(cleanup);
    if status == "ok" && bad_blocks > 0 {
        status = "corrupt";
        detail = Some(format!("verification found {bad_blocks} bad 4 KiB block(s)"));
    }
    store.finish_run(run_id, status, detail.as_deref())?;
    Ok(Executed {
        run_id,
        status,
        results,
    })
}

fn phase_row(seq: u32, plan: &PhasePlan, r: &PhaseResult, cache_flattered: bool) -> Result<PhaseRow> {
    Ok(PhaseRow {
        seq,
        kind: plan.kind.name().into(),
        params: serde_json::to_value(plan)?,
        bytes_read: r.bytes_read,
        bytes_written: r.bytes_written,
        ops_read: r.ops_read,
        ops_written: r.ops_written,
        seconds: r.all_done.seconds,
        bytes_per_sec: r.all_done.bytes_per_sec,
        iops: r.all_done.iops,
        first_done_seconds: r.first_done.seconds,
        first_done_bytes_per_sec: r.first_done.bytes_per_sec,
        worker_min_bytes_per_sec: r.worker_min_bytes_per_sec,
        worker_max_bytes_per_sec: r.worker_max_bytes_per_sec,
        cpu_user: r.cpu_user,
        cpu_sys: r.cpu_sys,
        lat_min_ns: r.latency.min_ns,
        lat_mean_ns: r.latency.mean_ns,
        lat_max_ns: r.latency.max_ns,
        lat_p50_ns: r.latency.p50_ns,
        lat_p90_ns: r.latency.p90_ns,
        lat_p99_ns: r.latency.p99_ns,
        lat_p99_9_ns: r.latency.p99_9_ns,
        lat_p99_99_ns: r.latency.p99_99_ns,
        cache_flattered,
        interrupted: r.interrupted,
        verify_bad_blocks: r.verify.as_ref().map(|v| v.bad_blocks),
        result: serde_json::to_value(r)?,
        histogram: r.histogram.clone(),
        samples: r
            .samples
            .iter()
            .map(|s| SampleRow {
                idx: s.index,
                t_start: s.t_start,
                t_end: s.t_end,
                ramp: s.ramp,
                bytes_read: s.bytes_read,
                bytes_written: s.bytes_written,
                ops_read: s.ops_read,
                ops_written: s.ops_written,
                lat_p50_ns: s.lat_p50_ns,
                lat_p90_ns: s.lat_p90_ns,
                lat_p99_ns: s.lat_p99_ns,
                lat_p99_9_ns: s.lat_p99_9_ns,
                lat_max_ns: s.lat_max_ns,
                late_ios: s.late_ios,
                targets: s
                    .targets
                    .iter()
                    .map(|t| storlab_store::TargetSampleRow {
                        target: t.target,
                        bytes_read: t.bytes_read,
                        bytes_written: t.bytes_written,
                        ops_read: t.ops_read,
                        ops_written: t.ops_written,
                    })
                    .collect(),
            })
            .collect(),
    })
}
