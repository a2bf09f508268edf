//! Turning a job into a plan: defaults, files per worker, and every check that must pass before
//! a byte is written (targets, sizes, free space, O_DIRECT support, back-end limits).
//!
//! The files: sets.rs places each file set's workers on its targets; rules.rs holds every
//! phase to the rules that need no disk; targets.rs looks at the targets themselves (what each
//! is, whether it is writable, free space, O_DIRECT); capacity.rs holds the workers to what the
//! machine can hold (threads, memory, file descriptors).

use std::path::PathBuf;

use serde::Serialize;
use storlab_model::plan::{BackendKind, FsyncPolicy, GenerationRange, PhaseKind, PhasePlan};

use crate::{Job, PhaseSettings, Settings, WorkloadError};

mod capacity;
mod rules;
mod sets;
mod targets;
mod zones;

/// What a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A directory: storlab creates one file per worker in it and removes them afterwards.
    Directory,
    /// A file that does not exist yet: storlab creates it, the workers share it, and it is
    /// removed afterwards.
    NewFile,
    /// An existing file: used in place, never truncated or removed.
    File,
    /// A block device (written only when --allow-device names it, or under fio's rules; never
    /// while in use unless the job says it knows).
    Device,
    /// /dev/null (writes vanish) or /dev/zero (reads give zeros): the kernel's own sink and
    /// source, to measure the engine without a filesystem (fio's examples use them).
    CharDevice,
}

/// Options that do not come from the job.
#[derive(Debug, Clone, Default)]
pub struct ResolveOptions {
    /// Block devices the user allowed storlab to use (--allow-device).
    pub allow_devices: Vec<PathBuf>,
    /// Distinguishes this run's files from another run's in the same directory.
    pub file_tag: String,
    /// The seed when the job gives none.
    pub default_seed: u64,
}

/// A validated job, ready for the engine.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The job's name.
    pub name: String,
    /// The targets and what each is.
    pub targets: Vec<(PathBuf, TargetKind)>,
    /// The phases, resolved (not in the plan's document: each phase's plan is stored with the
    /// phase).
    #[serde(skip_serializing)]
    pub phases: Vec<PhasePlan>,
    /// Files storlab creates (and removes at the end unless asked to keep them).
    pub created_files: Vec<PathBuf>,
    /// The run's seed.
    pub seed: u64,
    /// Bytes of the whole file set (all workers' regions).
    pub file_set_bytes: u64,
}

/// A phase's settings: the job's, with the phase's own laid over them, defaults applied.
fn effective(job: &Settings, phase: &Settings) -> PhaseSettings {
    let mut s = job.clone();
    s.overlay(phase);
    let mut e = s.resolve();
    // A runtime of 0 is a phase of one pass, as no runtime is.
    e.runtime = e.runtime.filter(|d| d.0 > 0);
    e
}

/// The default file size per worker when the job gives none.
pub const DEFAULT_SIZE: u64 = 1 << 30;

/// True when the page cache could have flattered a phase: the file set is smaller than three
/// times the machine's memory and the phase neither bypassed the cache (O_DIRECT) nor, for
/// writes, forced data out (O_SYNC or a flush).
pub fn cache_may_flatter(phase: &PhasePlan, file_set_bytes: u64, memory_bytes: u64) -> bool {
    if phase.settings.engine == BackendKind::Null
        || phase.settings.direct
        || file_set_bytes >= memory_bytes.saturating_mul(3)
    {
        return false;
    }
    if phase.kind.reads() {
        return true;
    }
    !phase.settings.sync && phase.settings.fsync == FsyncPolicy::None
}

/// Validates `job` and turns it into a plan, in stages: the job has targets and phases; each
/// phase's settings resolved; the file sets placed on the targets (sets.rs); each phase held
/// to the rules (rules.rs) and planned with its write generations; then what the machine must
/// allow — free space and O_DIRECT, probed where the files will live (targets.rs).
pub fn resolve(job: &Job, opts: &ResolveOptions) -> Result<Plan, WorkloadError> {
    if job.targets.is_empty() {
        return Err(WorkloadError::invalid(
            &job.origin,
            "no target: give --target DIR (or target = [\"DIR\"] in the job file)",
        ));
    }
    if job.phases.is_empty() {
        return Err(WorkloadError::invalid(
            &job.origin,
            "no phase: give --phase NAME (or phase = [\"write\", \"read\"] in the job file)",
        ));
    }
    let effs: Vec<PhaseSettings> = job.phases.iter().map(|(_, s)| effective(&job.settings, s)).collect();
    capacity::check_threads(job, &effs)?;
    let placed = sets::place(job, &effs, opts)?;
    targets::guard_writes(job, &placed, opts)?;
    let seed = job.settings.seed.unwrap_or(opts.default_seed);
    let phases = plan_phases(job, &effs, &placed, seed)?;
    capacity::check_footprint(job, &phases)?;
    if !effs.iter().all(|e| e.engine == BackendKind::Null) {
        targets::check_free_space(placed.held_to_free_space())?;
        // O_DIRECT support, probed where the files will live.
        if effs.iter().any(|e| e.direct && e.engine != BackendKind::Null) {
            for (path, kind, _) in &placed.targets {
                targets::probe_direct(path, *kind, &opts.file_tag)?;
            }
        }
    }
    Ok(Plan {
        name: job
            .name
            .clone()
            .unwrap_or_else(|| job.phases.iter().map(|(k, _)| k.name()).collect::<Vec<_>>().join("+")),
        file_set_bytes: placed.workers.iter().flatten().map(|w| w.total_len()).sum(),
        targets: placed.targets.into_iter().map(|(p, k, _)| (p, k)).collect(),
        phases,
        created_files: placed.created,
        seed,
    })
}

/// Where phase `i` of `job` is, for messages.
fn origin_of(job: &Job, i: usize) -> String {
    format!("{}: phase {} ({})", job.origin, i + 1, job.phases[i].0.name())
}

/// A file set's write generations: what its files hold. A phase that writes makes the next;
/// one that writes every block makes it the oldest a read may find.
#[derive(Clone, Copy, Default)]
struct Generations {
    last: u32,
    full: u32,
}

impl Generations {
    /// A phase of `kind` on the set: the generations its reads accept, and the one it writes.
    fn next(&mut self, kind: PhaseKind) -> (GenerationRange, u32) {
        // Before the job's first write the files may come from an earlier run: any generation.
        let mut accepted = if self.last == 0 {
            GenerationRange { min: 0, max: u32::MAX }
        } else {
            GenerationRange {
                min: self.full,
                max: self.last,
            }
        };
        if kind.writes() {
            self.last += 1;
            if kind.writes_every_block() {
                self.full = self.last;
            }
            // A phase that reads and writes (randrw) reads blocks it wrote itself.
            accepted.max = accepted.max.max(self.last);
        }
        (accepted, self.last)
    }
}

/// Each phase held to the rules and planned: its set's workers, its generations, its seed.
fn plan_phases(
    job: &Job,
    effs: &[PhaseSettings],
    placed: &sets::Placed,
    seed: u64,
) -> Result<Vec<PhasePlan>, WorkloadError> {
    // Headers are written whenever the job verifies anywhere, so that a write-only job's files
    // can be verified by a later run (with the same seed).
    let any_verify = effs.iter().any(|e| e.verify);
    let mut gens = vec![Generations::default(); placed.sets.len()];
    let mut phases = Vec::new();
    for (i, ((kind, _), e)) in job.phases.iter().zip(effs).enumerate() {
        let si = placed.set_of_phase[i];
        let workers = &placed.workers[si];
        let region = workers
            .iter()
            .flat_map(|w| w.regions().map(|r| r.len))
            .min()
            .unwrap_or(0);
        let facts = rules::PhaseFacts {
            kind: *kind,
            e,
            region,
            any_verify,
        };
        if let Some(why) = rules::broken(&facts) {
            return Err(WorkloadError::invalid(origin_of(job, i), why));
        }
        let workers =
            &zones::aligned(*kind, e, workers).map_err(|why| WorkloadError::invalid(origin_of(job, i), why))?;
        let (verify_generations, generation) = gens[si].next(*kind);
        let mut settings = e.clone();
        settings.seed = Some(seed);
        phases.push(PhasePlan {
            kind: *kind,
            // With O_DIRECT each I/O goes to the device as soon as it is queued, as fio's
            // default iodepth_batch_submit=1 does: holding completed slots back for one
            // submission cost 15–20 % of a virtual disk's random-read IOPS at depth 32
            // (bench 3a). Buffered I/O mostly completes inside the submission, where one
            // system call for the whole batch is the cheaper way (bench 2).
            submit_batch: e.iodepth_batch.unwrap_or(if e.direct { 1 } else { e.iodepth }),
            settings,
            write_headers: any_verify,
            verify_generations,
            generation,
            seed,
            workers: workers.to_vec(),
            together: i > 0 && job.streams.get(i).is_some_and(|s| s.together),
            name: job.streams.get(i).map(|s| s.name.clone()).filter(|n| !n.is_empty()),
        });
    }
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn job(dir: &Path, extra: &str) -> Job {
        Job::parse(
            &format!("target = [{:?}]\n{extra}", dir.display().to_string()),
            "j.toml",
        )
        .unwrap()
    }

    fn opts() -> ResolveOptions {
        ResolveOptions {
            file_tag: "t".into(),
            default_seed: 1,
            ..Default::default()
        }
    }

    #[test]
    fn files_and_generations() {
        let d = tempfile::tempdir().unwrap();
        let j = job(d.path(), "threads = 2\nsize = \"1m\"\nbs = \"64k\"\nverify = true\nphase = [\"write\", \"randwrite\", \"read\", \"rewrite\", \"read\"]\n");
        let p = resolve(&j, &opts()).unwrap();
        assert_eq!(p.phases.len(), 5);
        assert_eq!(p.created_files.len(), 2);
        assert_eq!(p.file_set_bytes, 2 << 20);
        assert!(p.phases.iter().all(|ph| ph.write_headers));
        assert_eq!(p.phases[2].verify_generations, GenerationRange { min: 1, max: 2 });
        assert_eq!(p.phases[4].verify_generations, GenerationRange { min: 3, max: 3 });
        assert!(p.phases[2].verifies() && !p.phases[0].verifies());
        // Nothing was written by resolving.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn submission_batch_defaults_by_direct() {
        let d = tempfile::tempdir().unwrap();
        let batch = |extra: &str| {
            let p = resolve(&job(d.path(), extra), &opts()).unwrap();
            p.phases[0].submit_batch
        };
        let uring = "engine = \"io_uring\"\niodepth = 16\nphase = [\"write\"]\n";
        assert_eq!(batch(uring), 16);
        assert_eq!(batch(&format!("{uring}direct = true")), 1);
        assert_eq!(batch(&format!("{uring}direct = true\niodepth_batch = 4")), 4);
    }

    #[test]
    fn nonsense_is_refused() {
        let d = tempfile::tempdir().unwrap();
        for (extra, needle) in [
            (
                "size = \"4k\"\nbs = \"1m\"\nphase = [\"read\"]",
                "larger than the file size",
            ),
            ("engine = \"psync\"\niodepth = 8\nphase = [\"read\"]", "asynchronous"),
            ("engine = \"mmap\"\ndirect = true\nphase = [\"read\"]", "mmap"),
            ("direct = true\nbs = 1000\nsize = 1000\nphase = [\"read\"]", "multiples"),
            ("size = \"100p\"\nphase = [\"write\"]", "free"),
            ("phase = [{ kind = \"write\", threads = 2 }, \"read\"]", "threads"),
            (
                "engine = \"io_uring\"\niodepth = 4\niodepth_batch = 8\nphase = [\"read\"]",
                "iodepth_batch 8 is larger than iodepth 4",
            ),
        ] {
            let e = resolve(&job(d.path(), extra), &opts()).unwrap_err().to_string();
            assert!(e.contains(needle), "{extra}: {e}");
        }
        let e = resolve(&job(&d.path().join("missing/deeper"), "phase = [\"read\"]"), &opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn a_block_device_is_written_only_with_permission() {
        let Ok(m) = std::fs::metadata("/dev/loop-control") else {
            return;
        };
        let _ = m;
        // /dev/vda may not exist in every container; use any block device present.
        let dev = ["/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists());
        let Some(dev) = dev else { return };
        let j = |phase: &str| {
            Job::parse(
                &format!(
                    "target = [{:?}]\nphase = [\"{phase}\"]\nsize = \"4k\"\n",
                    dev.display().to_string()
                ),
                "j.toml",
            )
            .unwrap()
        };
        let e = resolve(&j("write"), &opts()).unwrap_err().to_string();
        assert!(e.contains("--allow-device"), "{e}");
        // Planning a read of it needs no permission: a read harms nothing.
        resolve(&j("read"), &opts()).unwrap();
    }

    #[test]
    fn cache_flattery_rule() {
        let d = tempfile::tempdir().unwrap();
        let p = resolve(&job(d.path(), "size = \"1m\"\nphase = [\"write\", \"read\"]"), &opts()).unwrap();
        assert!(cache_may_flatter(&p.phases[0], p.file_set_bytes, 1 << 30));
        assert!(!cache_may_flatter(&p.phases[0], p.file_set_bytes, 1 << 10));
        let mut direct = p.phases[1].clone();
        direct.settings.direct = true;
        assert!(!cache_may_flatter(&direct, p.file_set_bytes, 1 << 30));
        let mut flushed = p.phases[0].clone();
        flushed.settings.fsync = FsyncPolicy::End;
        assert!(!cache_may_flatter(&flushed, p.file_set_bytes, 1 << 30));
    }
}
