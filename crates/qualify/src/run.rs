//! A qualification run: the plan's jobs repeated in rounds — each round one repetition of every
//! job with a criterion still undecided, in the plan's order (a job with a task as a pair, idle
//! then loaded, as `storlab impact` interleaves them), so that a device drifting over the hours
//! does not fall on one job rather than another — until every criterion is decided, a job
//! reaches the largest number of repetitions, the time allowed runs out, or Ctrl-C. A criterion
//! is decided at the first look whose interval lies on one side of its threshold, and keeps the
//! figures of that look: later repetitions (for the job's other criteria) do not reopen it.
//! Every run is stored as it finishes; the qualification is stored as a study of kind `qualify`
//! with all of them, however it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use storlab_engine::PhaseControl;
use storlab_impact::record::Recorder;
use storlab_impact::study::{EarlyFinish, Foreground, ForegroundRun, Pairs};
use storlab_impact::task::Task;
use storlab_meta::job::MetaJob;
use storlab_meta::layout::Layout;
use storlab_meta::record::Record;
use storlab_model::qualify::{self as q, Decision, QualifyParams, Stopped};
use storlab_model::run::{RunKind, RunStatus, Tag};
use storlab_model::study::{Member, NewStudy, Role, StudyParams};
use storlab_session::RunOptions;
use storlab_store::Store;
use storlab_workload::Job;

use crate::prepare::{Criterion, Prepared, Reference};
use crate::verdict::{cost, reading, Reading};
use crate::QualifyError;

/// How the runs are made and stored.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Tags stored with every run.
    pub tags: Vec<Tag>,
    /// Block devices the jobs may write.
    pub allow_devices: Vec<std::path::PathBuf>,
    /// Keep the files the jobs create.
    pub keep: bool,
    /// The command line.
    pub command: String,
    /// Stop starting repetitions after this many seconds.
    pub max_time: Option<f64>,
    /// The earlier qualification this one is compared with.
    pub against: Option<i64>,
}

impl Options {
    /// How one run of a job is made and stored: as `kind`, with these options' tags, devices,
    /// files kept and command line.
    pub fn run_options<'a>(&'a self, kind: RunKind, control: Option<&'a PhaseControl>) -> RunOptions<'a> {
        RunOptions {
            kind,
            tags: &self.tags,
            allow_devices: &self.allow_devices,
            keep: self.keep,
            command: &self.command,
            control,
            live: None,
        }
    }
}

/// The method in words, for the record and the certificate.
pub const METHOD: &str = "Each job is repeated in rounds, interleaved with the others (a job with a background task as a pair: idle, then with the task). After each repetition from the third on, every criterion's repeated confidence interval is looked at — the mean ± c·s/√n, c the Student-t quantile at one nominal level at every look (Pocock's design), calibrated by simulation so that all looks together cover the mean with the confidence stated — and a criterion is decided at the first look whose interval lies wholly on one side of its threshold (C. Jennison and B. W. Turnbull, 'Interim analyses: the repeated confidence interval approach', JRSS B 51, 1989; S. J. Pocock, Biometrika 64, 1977). Latencies are compared by their geometric mean (on the logarithmic scale); a baseline by the ratio of the means, this qualification's and the baseline's intervals each at half the error; a task's cost by each pair's loss in percent.";

/// The job run through storlab's one run path, stored as `kind` (an impact pair's sides).
struct Runner<'a> {
    store: &'a mut Store,
    job: &'a Job,
    o: &'a Options,
}

impl Runner<'_> {
    fn run_as(&mut self, kind: RunKind, control: &PhaseControl) -> Result<storlab_session::Executed, QualifyError> {
        storlab_session::run(self.store, self.job, &self.o.run_options(kind, Some(control)))
            .map_err(|e| QualifyError::Run(format!("{}: {e}", self.job.name.as_deref().unwrap_or("a job"))))
    }
}

impl Foreground for Runner<'_> {
    fn run(&mut self, kind: RunKind, control: &PhaseControl) -> anyhow::Result<ForegroundRun> {
        let e = self.run_as(kind, control)?;
        Ok(ForegroundRun {
            run_id: e.run_id,
            aborted: e.status == RunStatus::Aborted,
            results: e.results,
        })
    }
}

/// What a qualification left.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The stored study.
    pub study_id: i64,
    /// What it found.
    pub params: QualifyParams,
}

/// One criterion as it goes: its figures so far and, once decided, where.
struct Tally {
    values: Vec<f64>,
    runs: Vec<Vec<i64>>,
    reading: Reading,
    decided_at: Option<u32>,
}

/// How a repetition of a trial (one without a task) runs: in this process, or as one run of
/// every rank of an MPI team (team.rs).
pub trait Execute {
    /// Runs trial `trial`'s job once, stored as a run of `kind`.
    fn run(
        &mut self,
        store: &mut Store,
        trial: usize,
        kind: RunKind,
    ) -> Result<storlab_session::Executed, QualifyError>;
}

/// Runs in this process.
struct Alone<'a> {
    p: &'a Prepared,
    o: &'a Options,
}

impl Execute for Alone<'_> {
    fn run(
        &mut self,
        store: &mut Store,
        trial: usize,
        kind: RunKind,
    ) -> Result<storlab_session::Executed, QualifyError> {
        if let Some(m) = &self.p.trials[trial].meta {
            return run_meta(store, m, self.o);
        }
        Runner {
            store,
            job: &self.p.trials[trial].job,
            o: self.o,
        }
        .run_as(kind, &PhaseControl::new())
    }
}

/// A metadata workload's repetition, as `storlab meta` runs it: its tree made, its operations
/// run and stored as a run of kind meta, the tree removed (unless kept).
fn run_meta(store: &mut Store, m: &MetaJob, o: &Options) -> Result<storlab_session::Executed, QualifyError> {
    let failed = |e: &dyn std::fmt::Display| QualifyError::Run(format!("meta on {}: {e}", m.target.display()));
    let mut layout = Layout::prepare(m).map_err(|e| failed(&e))?;
    layout.make().map_err(|e| failed(&e))?;
    let ran = storlab_meta::record::run_job(
        store,
        &mut layout,
        Record {
            command: &o.command,
            tags: &o.tags,
            live: None,
        },
    );
    let removed = if m.keep || o.keep { Ok(()) } else { layout.remove() };
    let e = ran.map_err(|e| failed(&e))?;
    removed.map_err(|e| failed(&e))?;
    Ok(e)
}

/// Runs a prepared plan (its baselines read) in this process and stores it; `say` is told each
/// repetition's figures and each decision, for the terminal.
pub fn run(
    store: &mut Store,
    p: &Prepared,
    o: &Options,
    stop: &AtomicBool,
    say: &dyn Fn(&str),
) -> Result<Outcome, QualifyError> {
    drive(store, p, o, stop, say, &mut Alone { p, o })
}

/// [`run`] with the plain repetitions run by `exec`: the tasks started, the rounds run until
/// every criterion is decided (or stopped), the tasks stopped however it ended, and the
/// qualification stored with every run.
pub(crate) fn drive(
    store: &mut Store,
    p: &Prepared,
    o: &Options,
    stop: &AtomicBool,
    say: &dyn Fn(&str),
    exec: &mut dyn Execute,
) -> Result<Outcome, QualifyError> {
    let rec = Recorder::new();
    let mut tasks: Vec<Option<Box<dyn Task>>> = p
        .trials
        .iter()
        .map(|t| {
            t.task
                .as_ref()
                .map(|spec| storlab_impact::request::tasks(std::slice::from_ref(spec), &t.job).map(|mut v| v.remove(0)))
                .transpose()
        })
        .collect::<anyhow::Result<_>>()
        .map_err(|e| QualifyError::Input(e.to_string()))?;
    let mut pairs: Vec<Option<Pairs>> = tasks
        .iter_mut()
        .map(|t| t.as_mut().map(|t| Pairs::new(t.as_mut())))
        .collect();
    let mut rounds = Rounds {
        p,
        o,
        stop,
        say,
        rec: &rec,
        t0: Instant::now(),
        tallies: p.criteria.iter().map(|_| Tally::new()).collect(),
        members: Vec::new(),
        stopped: None,
    };
    let result = rounds.run(store, exec, &mut pairs);
    // However it ended, the tasks this qualification started are stopped.
    let finished: Vec<anyhow::Result<()>> = pairs.into_iter().flatten().map(|p| p.finish(&rec)).collect();
    let stopped = rounds.stopped.unwrap_or(if result.is_err() {
        Stopped::Failed
    } else {
        Stopped::MaxRepeats
    });
    let mut params = rounds.params(stopped);
    let phases: Vec<usize> = p.criteria.iter().map(|c| c.phase).collect();
    crate::warnings::flag(store, &mut params, &phases)?;
    let study_id = store.save_study(&NewStudy {
        params: StudyParams::Qualify(params.clone()),
        members: rounds.members,
        events: rec.events(),
        task_samples: rec.samples(),
    })?;
    result?;
    for f in finished {
        f.map_err(|e| QualifyError::Run(e.to_string()))?;
    }
    Ok(Outcome { study_id, params })
}

impl Tally {
    fn new() -> Tally {
        Tally {
            values: Vec::new(),
            runs: Vec::new(),
            reading: Reading {
                observed: None,
                interval: None,
                decision: Decision::Undecided,
            },
            decided_at: None,
        }
    }
}

/// One repetition of a trial: each of its criteria's figure (None where the run did not give
/// one), the runs it comes from, and whether Ctrl-C cut it short.
struct Repetition {
    figures: Vec<Option<f64>>,
    run_ids: Vec<i64>,
    interrupted: bool,
}

/// The rounds of a qualification as they go: every criterion's tally, the runs made, and why
/// it stopped once it did.
struct Rounds<'a> {
    p: &'a Prepared,
    o: &'a Options,
    stop: &'a AtomicBool,
    say: &'a dyn Fn(&str),
    rec: &'a Recorder,
    t0: Instant,
    tallies: Vec<Tally>,
    members: Vec<Member>,
    stopped: Option<Stopped>,
}

impl Rounds<'_> {
    /// Round after round each undecided trial once, until all are decided, the repetitions
    /// run out, the time allowed is over or Ctrl-C.
    fn run(
        &mut self,
        store: &mut Store,
        exec: &mut dyn Execute,
        pairs: &mut [Option<Pairs>],
    ) -> Result<(), QualifyError> {
        let max = self.p.criteria.first().map_or(0, |c| c.design.max_repeats);
        for r in 1..=max {
            self.rec.event("round-start", format!("round {r}"));
            for (ti, pair) in pairs.iter_mut().enumerate() {
                let mine: Vec<usize> = (0..self.p.criteria.len())
                    .filter(|&c| self.p.criteria[c].trial == ti)
                    .collect();
                if mine.iter().all(|&c| self.tallies[c].decided_at.is_some()) {
                    continue;
                }
                if self.stop.load(Ordering::Relaxed) {
                    self.stopped = Some(Stopped::Interrupted);
                    return Ok(());
                }
                if self.o.max_time.is_some_and(|m| self.t0.elapsed().as_secs_f64() >= m) {
                    self.stopped = Some(Stopped::MaxTime);
                    return Ok(());
                }
                let rep = match pair.as_mut() {
                    None => self.plain(store, exec, ti, r, &mine)?,
                    Some(pair) => self.paired(store, pair, ti, r, &mine)?,
                };
                if rep.interrupted {
                    self.stopped = Some(Stopped::Interrupted);
                    return Ok(());
                }
                self.count(ti, r, &mine, rep)?;
            }
            if self.tallies.iter().all(|t| t.decided_at.is_some()) {
                self.stopped = Some(Stopped::Decided);
                return Ok(());
            }
        }
        Ok(())
    }

    /// A trial without a task: one run.
    fn plain(
        &mut self,
        store: &mut Store,
        exec: &mut dyn Execute,
        ti: usize,
        r: u32,
        mine: &[usize],
    ) -> Result<Repetition, QualifyError> {
        let e = exec.run(store, ti, RunKind::Qualify)?;
        self.members.push(Member {
            run_id: e.run_id,
            role: Role::Trial {
                job: self.p.trials[ti].label.clone(),
                repetition: r,
                loaded: None,
            },
        });
        let figures = mine
            .iter()
            .map(|&c| {
                let cr = &self.p.criteria[c];
                e.results.get(cr.phase).and_then(|ph| cr.figure.read(ph))
            })
            .collect();
        Ok(Repetition {
            figures,
            run_ids: vec![e.run_id],
            interrupted: e.status == RunStatus::Aborted,
        })
    }

    /// A trial with a task: a pair of runs, idle and loaded; each criterion's figure its cost.
    fn paired(
        &mut self,
        store: &mut Store,
        pair: &mut Pairs,
        ti: usize,
        r: u32,
        mine: &[usize],
    ) -> Result<Repetition, QualifyError> {
        let trial = &self.p.trials[ti];
        let mut runner = Runner {
            store,
            job: &trial.job,
            o: self.o,
        };
        let (reps, interrupted) = pair
            .pair(r, &mut runner, EarlyFinish::Restart, self.rec, self.stop)
            .map_err(|e| QualifyError::Run(format!("{}: {e}", trial.label)))?;
        for rep in &reps {
            self.members.push(Member {
                run_id: rep.run_id,
                role: Role::Trial {
                    job: trial.label.clone(),
                    repetition: r,
                    loaded: Some(rep.loaded),
                },
            });
        }
        // The idle run and the last loaded one the task covered from start to end.
        let idle = reps.iter().rfind(|x| !x.loaded);
        let loaded = reps.iter().rfind(|x| x.loaded && x.overlapped);
        let run_ids = idle.iter().chain(loaded.iter()).map(|x| x.run_id).collect();
        let figures = mine
            .iter()
            .map(|&c| {
                let cr = &self.p.criteria[c];
                let of =
                    |x: &storlab_impact::study::Repetition| x.results.get(cr.phase).and_then(|ph| cr.figure.read(ph));
                let (i, l) = (idle.and_then(of)?, loaded.and_then(of)?);
                Some(cost(i, l, cr.figure.more_is_better()))
            })
            .collect();
        Ok(Repetition {
            figures,
            run_ids,
            interrupted,
        })
    }

    /// A repetition's figures into its criteria's tallies, each looked at and decided when its
    /// interval is on one side; what it measured said on the terminal.
    fn count(&mut self, ti: usize, r: u32, mine: &[usize], rep: Repetition) -> Result<(), QualifyError> {
        let trial = &self.p.trials[ti];
        let mut said: Vec<String> = Vec::new();
        for (&c, f) in mine.iter().zip(rep.figures) {
            let cr = &self.p.criteria[c];
            let t = &mut self.tallies[c];
            if t.decided_at.is_some() {
                continue;
            }
            let Some(v) = f else {
                if cr.reference == Reference::Impact {
                    // The task ended before the job, twice: no pair to count this round.
                    (self.say)(&format!(
                        "{} r{r}: the task ended before the job did; this pair is not counted",
                        trial.label
                    ));
                    continue;
                }
                return Err(QualifyError::Run(format!(
                    "{} r{r} (run {}): the run did not measure {} of phase {}",
                    trial.label,
                    rep.run_ids.first().copied().unwrap_or(0),
                    cr.figure.name(),
                    trial.phases[cr.phase].label(cr.phase)
                )));
            };
            t.values.push(v);
            t.runs.push(rep.run_ids.clone());
            t.reading = reading(cr, &t.values);
            if t.reading.decision != Decision::Undecided {
                t.decided_at = Some(t.values.len() as u32);
                let line = format!(
                    "{} after {} repetition(s): {}",
                    t.reading.decision.word(),
                    t.values.len(),
                    describe(cr, &t.reading, &trial.label)
                );
                self.rec.event("decided", &line);
            }
            said.push(format!(
                "{} {}{}",
                figure_text(cr),
                show(v),
                match t.decided_at {
                    Some(_) => format!(" → {} ({})", t.reading.decision.word(), cr.text),
                    None => String::new(),
                }
            ));
        }
        if !said.is_empty() {
            (self.say)(&format!("{} r{r}: {}", trial.label, said.join(" · ")));
        }
        Ok(())
    }

    /// The qualification's record: its plan, how it stopped, its criteria.
    fn params(&self, stopped: Stopped) -> QualifyParams {
        let p = self.p;
        QualifyParams {
            plan_name: p.plan.name.clone(),
            plan_path: p.plan.path.display().to_string(),
            plan_text: p.plan.text.clone(),
            targets: p
                .trials
                .first()
                .map(|t| t.job.targets.iter().map(|x| x.display().to_string()).collect())
                .unwrap_or_default(),
            command: self.o.command.clone(),
            against: self.o.against,
            stopped: Some(stopped),
            seconds: self.t0.elapsed().as_secs_f64(),
            method: METHOD.to_string(),
            criteria: p
                .criteria
                .iter()
                .zip(&self.tallies)
                .map(|(c, t)| record(p, c, t))
                .collect(),
        }
    }
}

/// A criterion's figure as the terminal names it ("IOPS", "lat p99 µs", "read MiB/s cost %").
fn figure_text(c: &Criterion) -> String {
    match (c.reference == Reference::Impact, c.figure.measure) {
        (true, _) => format!("{} cost %", c.figure.name()),
        (false, crate::check::Measure::Latency(_)) => format!("{} µs", c.figure.name()),
        (false, _) => c.figure.name(),
    }
}

fn show(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    }
}

/// A decided criterion in words.
fn describe(c: &Criterion, r: &Reading, label: &str) -> String {
    format!(
        "{label}: {} (observed {}, interval {})",
        c.text,
        r.observed.map(show).unwrap_or_else(|| "—".into()),
        r.interval
            .map(|(a, b)| format!("{} to {}", show(a), show(b)))
            .unwrap_or_else(|| "—".into())
    )
}

/// The stored record of a criterion.
fn record(p: &Prepared, c: &Criterion, t: &Tally) -> q::Criterion {
    let trial = &p.trials[c.trial];
    let (unit, reference) = match &c.reference {
        Reference::Absolute => (c.figure.unit().to_string(), q::Reference::Absolute),
        Reference::Impact => (
            "%".to_string(),
            q::Reference::Impact {
                task: trial.task.clone().unwrap_or_default(),
            },
        ),
        Reference::Baseline { spec, runs } => {
            let values: Vec<f64> = runs.iter().map(|r| r.1).collect();
            let log = c.figure.log_scale();
            let scaled: Vec<f64> = values.iter().map(|v| if log { v.ln() } else { *v }).collect();
            let iv = storlab_stats::sequential::fixed_interval(&scaled, c.design.confidence)
                .map(|(a, b)| if log { (a.exp(), b.exp()) } else { (a, b) })
                .unwrap_or((f64::NAN, f64::NAN));
            (
                "× baseline".to_string(),
                q::Reference::Baseline {
                    name: spec.clone(),
                    runs: runs.iter().map(|r| r.0).collect(),
                    values,
                    interval: iv,
                },
            )
        }
    };
    q::Criterion {
        index: c.index,
        job: trial.label.clone(),
        text: c.text.clone(),
        line: c.line,
        phase: trial.phases[c.phase].label(c.phase),
        figure: c.figure.name(),
        unit,
        direction: c.direction,
        threshold: c.threshold,
        reference,
        design: c.design,
        log_scale: c.figure.log_scale() && c.reference != Reference::Impact,
        values: t.values.clone(),
        runs: t.runs.clone(),
        observed: t.reading.observed,
        interval: t.reading.interval,
        decision: t.reading.decision,
        decided_at: t.decided_at,
        warnings: Vec::new(),
    }
}
