//! The plan made ready to run: each job (and each of its points) a storlab job checked as
//! `storlab run` checks it, each criterion resolved against what its job measures, each
//! baseline found in the database, each criterion's design calibrated. Every refusal happens
//! here, before a byte is written or a run stored, and names the plan's line.

use std::path::PathBuf;

use storlab_meta::job::MetaJob;
use storlab_model::meta::MetaOp;
use storlab_model::plan::PhaseKind;
use storlab_model::qualify::{Design, Direction};
use storlab_model::run::Tag;
use storlab_model::study::Role;
use storlab_store::{RunFilter, Store};
use storlab_units::Rate;
use storlab_workload::Job;

use crate::check::{self, Figure, Measure, Target, Way};
use crate::plan::{Plan, PlanCriterion, PlanJob, Source};
use crate::{input, QualifyError};

/// One phase of a job, as criteria name it.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseInfo {
    /// Its kind's name (a storlab phase kind, or a metadata operation: create, stat, …), as
    /// its runs store it.
    pub kind: String,
    /// Its own name, where the job gives one (a fio job's section).
    pub name: Option<String>,
    /// It issues reads (a metadata operation that only looks counts as reads).
    pub reads: bool,
    /// It issues writes.
    pub writes: bool,
    /// It moves data (a metadata phase that makes or changes directories and names moves none).
    pub data: bool,
}

impl PhaseInfo {
    /// A storlab phase of `kind`, named `name` when the job names it.
    fn of_kind(kind: PhaseKind, name: Option<String>) -> PhaseInfo {
        PhaseInfo {
            kind: kind.name().to_string(),
            name,
            reads: kind.reads(),
            writes: kind.writes(),
            data: true,
        }
    }

    /// "2 randread", "1 rr (randread)".
    pub fn label(&self, index: usize) -> String {
        match &self.name {
            Some(n) if *n != self.kind => format!("{} {n} ({})", index + 1, self.kind),
            _ => format!("{} {}", index + 1, self.kind),
        }
    }
}

/// A job at one of its points: what is repeated.
#[derive(Debug, Clone)]
pub struct Trial {
    /// "randread", "serial write threads=4".
    pub label: String,
    /// The plan's job.
    pub job_name: String,
    /// The point's role, where the job has several.
    pub point: Option<Role>,
    /// The storlab job (for a metadata workload: its name and target only).
    pub job: Job,
    /// A metadata workload (`storlab meta`), instead of the job's phases.
    pub meta: Option<MetaJob>,
    /// The background task (`KIND:ARGS`), for a job run in pairs.
    pub task: Option<String>,
    /// Its phases.
    pub phases: Vec<PhaseInfo>,
}

/// What a criterion is compared with, before the baselines are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// A number in the figure's unit.
    Absolute,
    /// Stored runs, as the plan names them; their values once read.
    Baseline {
        /// As written.
        spec: String,
        /// The runs and their figure, once read from the database.
        runs: Vec<(i64, f64)>,
    },
    /// The job's background task.
    Impact,
}

/// A criterion ready to be decided.
#[derive(Debug, Clone)]
pub struct Criterion {
    /// 1-based.
    pub index: u32,
    /// As written.
    pub text: String,
    /// Its line.
    pub line: u32,
    /// The trial (job and point) it is on.
    pub trial: usize,
    /// The phase it reads.
    pub phase: usize,
    /// The figure.
    pub figure: Figure,
    /// At least or at most.
    pub direction: Direction,
    /// In the figure's unit; a ratio for a baseline; a percentage for a cost.
    pub threshold: f64,
    /// What it is compared with.
    pub reference: Reference,
    /// The confidence the plan asks.
    pub confidence: f64,
    /// Its looks.
    pub design: Design,
}

/// A plan ready to run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The plan.
    pub plan: Plan,
    /// Every job at every point, in the plan's order.
    pub trials: Vec<Trial>,
    /// Every criterion, in the plan's order (one per point of a criterion on several).
    pub criteria: Vec<Criterion>,
}

impl Prepared {
    /// What would run, in words (`storlab qualify --dry-run`): the jobs, their points, each
    /// criterion with its line, its confidence and the nominal level of each of its looks.
    pub fn outline(&self) -> String {
        let mut s = format!(
            "plan \"{}\": {} job(s) at {} point(s), {} criteria, at most {} repetitions of each\n",
            self.plan.name,
            self.plan.jobs.len(),
            self.trials.len(),
            self.criteria.len(),
            self.criteria.first().map_or(0, |c| c.design.max_repeats)
        );
        for c in &self.criteria {
            s += &format!(
                "  {:>3}  {}  {}  (line {}; {} %, each look at {:.5})\n",
                c.index,
                self.trials[c.trial].label,
                c.text,
                c.line,
                (c.confidence * 1000.0).round() / 10.0,
                c.design.nominal_alpha
            );
        }
        s
    }
}

/// What the command line adds to a plan.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Targets for every job (replacing the plan's).
    pub targets: Vec<PathBuf>,
    /// Block devices the jobs may write.
    pub allow_devices: Vec<PathBuf>,
    /// The jobs may write devices in use (`--allow-mounted-write`).
    pub allow_mounted_write: bool,
    /// At most this many repetitions (replacing the plan's).
    pub max_repeats: Option<u32>,
}

/// The first look of every design: a t interval of two repetitions has one degree of freedom.
pub const FIRST_LOOK: u32 = 3;

fn at(plan: &Plan, line: u32, msg: impl std::fmt::Display) -> QualifyError {
    input(format!("{}:{line}: {msg}", plan.path.display()))
}

/// A job with no target anywhere: not on the command line, the plan or its own file.
fn no_target(plan: &Plan, j: &PlanJob) -> QualifyError {
    at(
        plan,
        j.line,
        format!(
            "job '{}' has no target: give --target DIR (or target = \"DIR\" in the job)",
            j.name
        ),
    )
}

/// `storlab meta`'s flags, read as the command reads them — except that a flag given twice
/// takes its last value, so that the target the command line (or the plan's job) gives, put
/// last, replaces the one the flags name, as `--target` replaces a job's targets.
#[derive(clap::Parser)]
#[command(name = "meta", no_binary_name = true, args_override_self = true)]
struct MetaCommand {
    #[command(flatten)]
    flags: storlab_meta::job::MetaFlags,
}

/// A plan's metadata workload: its flags with the target the command line gives (or the plan's
/// job), checked as `storlab meta` checks it (nothing is made).
fn meta_of(plan: &Plan, j: &PlanJob, args: &[String], o: &Options) -> Result<MetaJob, QualifyError> {
    use clap::Parser;
    let here = |e: &dyn std::fmt::Display| at(plan, j.line, format!("job '{}': meta: {e}", j.name));
    // The target: the command line's, else the plan's job's, else the flags' own (given last,
    // it wins over the flags').
    let mut args = args.to_vec();
    let given = o.targets.first().or(j.targets.first());
    if let Some(t) = given {
        args.push("--target".into());
        args.push(t.display().to_string());
    } else if !args.iter().any(|a| a == "--target" || a.starts_with("--target=")) {
        return Err(no_target(plan, j));
    }
    let m = MetaCommand::try_parse_from(&args).map_err(|e| {
        // clap's first line says what was wrong; its usage lines are storlab meta's.
        here(
            &e.to_string()
                .trim()
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ")
                .to_string(),
        )
    })?;
    if j.vary.is_some() {
        return Err(at(plan, j.line, format!("job '{}': vary varies storlab's job settings; a metadata workload's are its flags (give a job per setting)", j.name)));
    }
    if j.task.is_some() {
        return Err(at(plan, j.line, format!("job '{}': a metadata workload with a task: its pairs run storlab jobs; give the task to a job of settings", j.name)));
    }
    let job = MetaJob::from_flags(&m.flags).map_err(|e| here(&e))?;
    storlab_meta::layout::Layout::prepare(&job).map_err(|e| here(&e))?;
    Ok(job)
}

/// The storlab jobs of a plan's job: one, or one per point (`vary`, IOzone's cells).
fn jobs_of(plan: &Plan, j: &PlanJob, o: &Options) -> Result<Vec<(Option<Role>, Job)>, QualifyError> {
    let here = |e: &dyn std::fmt::Display| at(plan, j.line, format!("job '{}': {e}", j.name));
    let mut jobs = match &j.source {
        Source::Meta(_) => return Ok(vec![(None, Job::default())]),
        Source::File(p) => vec![(None, Job::load(p).map_err(|e| here(&e))?)],
        Source::Fio(p) => {
            let mut job = storlab_workload::fio::load(p, false).map_err(|e| here(&e))?.job;
            job.run_by_storlab();
            vec![(None, job)]
        }
        Source::Settings(t) => {
            let text = toml::to_string(t).map_err(|e| here(&e))?;
            let origin = format!("{}: job '{}' settings", plan.path.display(), j.name);
            vec![(None, Job::parse(&text, &origin).map_err(|e| here(&e))?)]
        }
        Source::Iozone(args) => {
            let mut args = args.clone();
            if let (Some(t), false) = (
                o.targets.first().or(j.targets.first()),
                args.iter().any(|a| a == "-F" || a == "--dir"),
            ) {
                args.push("--dir".into());
                args.push(t.display().to_string());
            }
            let a = storlab_workload::iozone::IozoneArgs::parse(&args).map_err(|e| here(&e))?;
            let cells = a.jobs().map_err(|e| here(&e))?;
            let several = cells.len() > 1;
            cells
                .into_iter()
                .map(|(cell, job)| (several.then(|| cell.role()), job))
                .collect()
        }
    };
    // Targets: the command line's, else the plan's job's, else the job file's own.
    let targets: &[PathBuf] = if !o.targets.is_empty() { &o.targets } else { &j.targets };
    for (_, job) in &mut jobs {
        job.allow_mounted_write |= o.allow_mounted_write;
    }
    if !matches!(j.source, Source::Iozone(_) | Source::Meta(_)) {
        for (_, job) in &mut jobs {
            job.override_with(targets, &[], &Default::default())
                .map_err(|e| here(&e))?;
            if job.targets.is_empty() {
                return Err(no_target(plan, j));
            }
        }
    }
    if let Some((vary, line)) = &j.vary {
        if jobs.len() > 1 {
            return Err(at(
                plan,
                *line,
                format!("job '{}': vary on IOzone's cells, which are points already", j.name),
            ));
        }
        let (_, base) = jobs.remove(0);
        let (points, _) = storlab_workload::sweep::expand(&base, std::slice::from_ref(vary))
            .map_err(|e| at(plan, *line, format!("job '{}': {e}", j.name)))?;
        jobs = points.into_iter().map(|(role, job)| (Some(role), job)).collect();
    }
    Ok(jobs)
}

/// The phases of a job as criteria name them.
fn phases_of(job: &Job) -> Vec<PhaseInfo> {
    job.phases
        .iter()
        .enumerate()
        .map(|(i, (kind, _))| {
            PhaseInfo::of_kind(
                *kind,
                job.streams.get(i).map(|s| s.name.clone()).filter(|n| !n.is_empty()),
            )
        })
        .collect()
}

/// The phases of a metadata workload: its operations, the looking ones counted as reads, the
/// others as writes, as its runs count them; create, read and write move the files' data.
fn meta_phases(job: &MetaJob) -> Vec<PhaseInfo> {
    job.phases
        .iter()
        .map(|op| PhaseInfo {
            kind: op.name().to_string(),
            name: None,
            reads: op.reads(),
            writes: !op.reads(),
            data: matches!(op, MetaOp::Create | MetaOp::Read | MetaOp::Write) && job.file_size > 0,
        })
        .collect()
}

/// The phase and direction a criterion's qualifiers name in `phases`.
fn resolve_phase(qualifiers: &[String], phases: &[PhaseInfo]) -> Result<(usize, Option<Way>), String> {
    let way_of = |w: &str| match w {
        "read" | "reads" => Some(Way::Read),
        "write" | "writes" => Some(Way::Write),
        _ => None,
    };
    let phase_of = |w: &str| {
        phases
            .iter()
            .position(|p| p.name.as_deref() == Some(w))
            .or_else(|| phases.iter().position(|p| p.kind == w))
    };
    let names = || {
        phases
            .iter()
            .enumerate()
            .map(|(i, p)| p.label(i))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let only = || {
        if phases.len() == 1 {
            Ok(0)
        } else {
            Err(format!(
                "the job has several phases ({}): name the one the criterion is on",
                names()
            ))
        }
    };
    let q: Vec<String> = qualifiers.iter().map(|w| w.to_ascii_lowercase()).collect();
    match q.as_slice() {
        [] => Ok((only()?, None)),
        [w] => match (phase_of(w), way_of(w)) {
            (Some(p), _) => Ok((p, None)),
            (None, Some(way)) => Ok((only()?, Some(way))),
            (None, None) => Err(format!("'{w}' is not a phase of the job ({})", names())),
        },
        [p, w] => {
            let p = phase_of(p).ok_or_else(|| format!("'{p}' is not a phase of the job ({})", names()))?;
            let way = way_of(w).ok_or_else(|| format!("'{w}': expected read or write after the phase"))?;
            Ok((p, Some(way)))
        }
        _ => Err(format!(
            "'{}' before the figure: expected at most a phase and read or write",
            q.join(" ")
        )),
    }
}

/// The largest rate a phase can reach when it is held to one (None: not held), in the figure's
/// unit.
fn rate_cap(phase: &storlab_model::plan::PhasePlan, figure: &Figure) -> Option<f64> {
    let r = phase.rate()?;
    let workers = if r.per_worker { phase.workers.len() as f64 } else { 1.0 };
    match (r.rate, figure.measure) {
        (Rate::Iops(v), Measure::Iops) => Some(v * workers),
        (Rate::BytesPerSec(v), Measure::Throughput) => Some(v * workers / 1048576.0),
        _ => None,
    }
}

/// Reads and checks a plan: its jobs, its criteria and their designs. Baselines are read from
/// the database by [`read_baselines`].
pub fn prepare(plan: Plan, o: &Options) -> Result<Prepared, QualifyError> {
    let max_repeats = o.max_repeats.unwrap_or(plan.max_repeats);
    if max_repeats < FIRST_LOOK {
        return Err(input(format!(
            "--max-repeats {max_repeats}: a verdict needs at least {FIRST_LOOK} repetitions of a job"
        )));
    }
    let trials = prepare_trials(&plan, o)?;
    let mut designs = Designs {
        max_repeats,
        made: Vec::new(),
    };
    let mut criteria = Vec::new();
    for c in &plan.criteria {
        criteria.extend(prepare_criterion(&plan, &trials, c, &mut designs, criteria.len())?);
    }
    Ok(Prepared {
        plan,
        trials: trials.trials,
        criteria,
    })
}

/// The plan's jobs as trials: each job at each of its points, checked as `storlab run` checks
/// it, with its resolved phases (for rate caps) and each plan job's trials.
struct Trials {
    trials: Vec<Trial>,
    resolved: Vec<Vec<storlab_model::plan::PhasePlan>>,
    of_job: Vec<Vec<usize>>,
}

fn prepare_trials(plan: &Plan, o: &Options) -> Result<Trials, QualifyError> {
    let mut t = Trials {
        trials: Vec::new(),
        resolved: Vec::new(),
        of_job: Vec::new(),
    };
    for j in &plan.jobs {
        let mut mine = Vec::new();
        for (point, mut job) in jobs_of(plan, j, o)? {
            let label = match &point {
                Some(r) => format!("{} {r}", j.name),
                None => j.name.clone(),
            };
            // Its runs are named after the plan's job (and point).
            job.name = Some(label.clone());
            let meta = match &j.source {
                Source::Meta(args) => Some(meta_of(plan, j, args, o)?),
                _ => None,
            };
            let phases = match &meta {
                Some(m) => {
                    job.targets = vec![m.target.clone()];
                    t.resolved.push(Vec::new());
                    meta_phases(m)
                }
                None => {
                    let prepared = storlab_session::prepare(&job, &o.allow_devices)
                        .map_err(|e| at(plan, j.line, format!("job '{label}': {e}")))?;
                    if let Some(line) = plan.require_direct {
                        let buffered = prepared.phases().iter().enumerate().find(|(_, p)| !p.settings.direct);
                        if let Some((i, p)) = buffered {
                            return Err(at(
                                plan,
                                j.line,
                                format!(
                                    "job '{label}' runs phase {} {} without O_DIRECT, and the plan requires direct (require = [\"direct\"], line {line}): set direct = true in the job's settings",
                                    i + 1,
                                    p.kind.name()
                                ),
                            ));
                        }
                    }
                    t.resolved.push(prepared.phases().to_vec());
                    phases_of(&job)
                }
            };
            if let Some(task) = &j.task {
                storlab_impact::request::tasks(std::slice::from_ref(task), &job)
                    .map_err(|e| at(plan, j.line, format!("job '{label}': task {task}: {e}")))?;
            }
            mine.push(t.trials.len());
            t.trials.push(Trial {
                label,
                job_name: j.name.clone(),
                point,
                phases,
                task: j.task.clone(),
                job,
                meta,
            });
        }
        t.of_job.push(mine);
    }
    Ok(t)
}

/// The sequential designs made so far, one per confidence (calibrating one takes a
/// simulation).
struct Designs {
    max_repeats: u32,
    made: Vec<Design>,
}

impl Designs {
    fn at(&mut self, confidence: f64) -> Design {
        if let Some(d) = self
            .made
            .iter()
            .find(|d| d.confidence == confidence && d.max_repeats == self.max_repeats)
        {
            return *d;
        }
        let d = storlab_stats::sequential::calibrate(confidence, FIRST_LOOK, self.max_repeats);
        self.made.push(d);
        d
    }
}

/// One criterion of the plan, for each trial of its job: its phase and figure found, its
/// threshold (one, or one per point), what it is measured against, its design.
fn prepare_criterion(
    plan: &Plan,
    trials: &Trials,
    c: &PlanCriterion,
    designs: &mut Designs,
    before: usize,
) -> Result<Vec<Criterion>, QualifyError> {
    let here = |m: String| at(plan, c.line, format!("'{}': {m}", c.check));
    let parsed = check::parse(&c.check).map_err(|m| at(plan, c.line, m))?;
    let ji = plan
        .jobs
        .iter()
        .position(|j| j.name == c.job)
        .expect("plan.rs checked the job");
    let job = &plan.jobs[ji];
    let mine = &trials.of_job[ji];
    let thresholds: Vec<f64> = match &parsed.target {
        Target::Values(v) if v.len() == 1 => vec![v[0]; mine.len()],
        Target::Values(v) if v.len() == mine.len() => v.clone(),
        Target::Values(v) => {
            return Err(here(format!(
                "{} thresholds for the {} point(s) of job '{}': give one, or one per point",
                v.len(),
                mine.len(),
                job.name
            )))
        }
        Target::OfBaseline(r) => vec![*r; mine.len()],
        Target::Cost(p) => vec![*p; mine.len()],
    };
    let reference = reference_of(&parsed.target, c, job).map_err(here)?;
    let confidence = match reference {
        // The baseline's interval and this qualification's each get half the error.
        Reference::Baseline { .. } => 1.0 - (1.0 - c.confidence) / 2.0,
        _ => c.confidence,
    };
    let design = designs.at(confidence);
    let mut out = Vec::new();
    for (k, &ti) in mine.iter().enumerate() {
        let trial = &trials.trials[ti];
        let (phase, figure) = figure_of(&parsed, trial).map_err(here)?;
        if let (Reference::Absolute, Direction::AtLeast, Some(cap)) = (
            &reference,
            parsed.direction,
            trials.resolved[ti].get(phase).and_then(|ph| rate_cap(ph, &figure)),
        ) {
            if thresholds[k] > cap {
                return Err(here(format!(
                    "an impossible threshold: job '{}' is held at {} {}, below {} {}",
                    trial.label,
                    fmt(cap),
                    figure.unit(),
                    fmt(thresholds[k]),
                    figure.unit()
                )));
            }
        }
        out.push(Criterion {
            index: (before + out.len()) as u32 + 1,
            text: c.check.clone(),
            line: c.line,
            trial: ti,
            phase,
            figure,
            direction: parsed.direction,
            threshold: thresholds[k],
            reference: reference.clone(),
            confidence: c.confidence,
            design,
        });
    }
    Ok(out)
}

/// What a criterion is measured against: a number, a baseline of stored runs, or (a job with a
/// task) the task's cost; what does not fit its job is said.
fn reference_of(target: &Target, c: &PlanCriterion, job: &PlanJob) -> Result<Reference, String> {
    Ok(match (target, &c.baseline, &job.task) {
        (Target::OfBaseline(_), Some(b), _) => Reference::Baseline {
            spec: b.clone(),
            runs: Vec::new(),
        },
        (Target::OfBaseline(_), None, _) => {
            return Err("a criterion against a baseline needs baseline = \"KEY=VALUE\" (a tag of stored runs), \"runs ID,ID,…\" or \"study ID\"".into())
        }
        (_, Some(_), _) => {
            return Err("baseline is given, but the check does not compare with it: write … >= P% of baseline".into())
        }
        (Target::Cost(_), None, Some(_)) => Reference::Impact,
        (Target::Cost(_), None, None) => {
            return Err(format!("a cost needs a task to cost: give job '{}' task = \"KIND:ARGS\"", job.name))
        }
        (Target::Values(_), None, Some(_)) => {
            return Err(format!("job '{}' runs with a task: hold the task's cost to a budget (… cost <= 5%), not a figure of the runs idle and loaded together", job.name))
        }
        (Target::Values(_), None, None) => Reference::Absolute,
    })
}

/// The phase of a trial a criterion names, and the figure it reads there (one the phase
/// measures).
fn figure_of(parsed: &check::Check, trial: &Trial) -> Result<(usize, Figure), String> {
    let (phase, way) =
        resolve_phase(&parsed.qualifiers, &trial.phases).map_err(|m| format!("job '{}': {m}", trial.label))?;
    let figure = Figure {
        measure: parsed.measure,
        way,
    };
    let info = &trial.phases[phase];
    if !info.data && figure.measure == Measure::Throughput {
        return Err(format!(
            "job '{}', phase {}: MiB/s: the phase moves no data (a metadata operation's figures are its IOPS and latency)",
            trial.label,
            info.label(phase)
        ));
    }
    figure
        .measured_by(info.reads, info.writes)
        .map_err(|m| format!("job '{}', phase {}: {m}", trial.label, info.label(phase)))?;
    Ok((phase, figure))
}

fn fmt(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// The stored runs a baseline names: `KEY=VALUE` (runs with that tag), `runs ID,ID,…` or
/// `study ID` (a study's runs).
fn baseline_runs(store: &Store, spec: &str) -> Result<Vec<i64>, String> {
    let t = spec.trim();
    if let Some(ids) = t.strip_prefix("runs ").or_else(|| t.strip_prefix("run ")) {
        return ids
            .split(',')
            .map(|i| {
                i.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("'{}' is not a run id", i.trim()))
            })
            .collect();
    }
    if let Some(id) = t.strip_prefix("study ") {
        let id: i64 = id
            .trim()
            .parse()
            .map_err(|_| format!("'{}' is not a study id", id.trim()))?;
        let study = store
            .study(id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| store.no_study(id))?;
        return Ok(study.members.iter().map(|m| m.run_id).collect());
    }
    let tag: Tag = storlab_model::run::parse_tag(t)
        .map_err(|_| format!("'{t}': expected KEY=VALUE (a tag), runs ID,ID,… or study ID"))?;
    let runs = store
        .find_runs(&RunFilter {
            tags: vec![tag],
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    Ok(runs.iter().map(|r| r.id).collect())
}

/// Reads every baseline's runs and their figure from `store`: a criterion's phase found in each
/// run by its name or kind, the runs that finished and measured it kept. Fewer than two is a
/// refusal (a baseline's spread is what makes a comparison honest), named with the plan's line.
pub fn read_baselines(p: &mut Prepared, store: &Store) -> Result<(), QualifyError> {
    for ci in 0..p.criteria.len() {
        let Reference::Baseline { spec, .. } = &p.criteria[ci].reference else {
            continue;
        };
        let spec = spec.clone();
        let c = &p.criteria[ci];
        let trial = &p.trials[c.trial];
        let phase = &trial.phases[c.phase];
        let here = |m: String| at(&p.plan, c.line, format!("'{}': baseline \"{spec}\": {m}", c.text));
        let ids = baseline_runs(store, &spec).map_err(&here)?;
        let mut runs = Vec::new();
        for id in ids {
            let Some(run) = store.run(id, false)? else {
                return Err(here(store.no_run(id)));
            };
            if run.run.status != storlab_model::run::RunStatus::Ok {
                continue;
            }
            let found = run
                .phases
                .iter()
                .find(|ph| phase.name.is_some() && ph.plan().and_then(|pl| pl.name.as_deref()) == phase.name.as_deref())
                .or_else(|| run.phases.iter().find(|ph| ph.kind.as_str() == phase.kind));
            if let Some(v) = found.and_then(|ph| c.figure.read(&ph.result)) {
                runs.push((id, v));
            }
        }
        if runs.len() < 2 {
            return Err(here(format!(
                "{} finished run(s) in {} with a {} phase measuring {}: a baseline needs at least 2 (its spread is part of the comparison)",
                runs.len(),
                store.target(),
                phase.kind,
                c.figure.name()
            )));
        }
        p.criteria[ci].reference = Reference::Baseline { spec, runs };
    }
    Ok(())
}
