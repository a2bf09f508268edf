//! `storlab compare`: one job run on two targets in turn — round 1 A then B, round 2 B then A,
//! and so on, so that a drift over the hours and whatever the first run of a round leaves to the
//! second (a warm CPU, a cache, a queue) fall on both — until every figure of every phase is
//! decided (crates/stats' `paired`: the rounds' log ratios looked at with qualify's sequential
//! design), the largest number of rounds is reached, the time allowed runs out, or Ctrl-C.
//! Every run is stored as it finishes; the comparison is stored as a study of kind `compare`
//! with all of them and a verdict per phase and figure, however it ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use storlab_model::result::PhaseResult;
use storlab_model::run::{RunKind, RunStatus, Tag};
use storlab_model::study::{Member, NewStudy, Role, StudyParams};
use storlab_model::versus::{Call, CompareParams, FigureVerdict};
use storlab_stats::paired::{self, Look};
use storlab_stats::sequential::{calibrate, Design};
use storlab_store::Store;
use storlab_units::sig3;
use storlab_workload::Job;

use crate::check::{Figure, Measure, Percentile};
use crate::prepare::FIRST_LOOK;
use crate::{input, QualifyError};

/// The method in words, for the record and the report.
pub const METHOD: &str = "The job runs on each target once per round, the order alternating (A then B, B then A), so that drift and what one run leaves to the next fall on both. Each figure is compared by its rounds' ratios B/A: after each round from the third on, the repeated confidence interval of their geometric mean — exp(mean ± c·s/√n) of the log ratios, c the Student-t quantile at one nominal level at every look (Pocock's design), calibrated by simulation so that all looks together cover the true ratio with the confidence stated (C. Jennison and B. W. Turnbull, JRSS B 51, 1989) — is read against the margin: wholly within ±margin, equivalent; wholly above or below 1 and not within the margin, the better target named; else another round. A figure keeps the look that decided it. Two targets that do not differ are called different with probability at most 1 − confidence per figure.";

/// What to compare and how.
#[derive(Debug, Clone)]
pub struct Request {
    /// The targets' names, A first.
    pub names: [String; 2],
    /// The job on each target.
    pub jobs: [Job; 2],
    /// The targets as given.
    pub targets: [String; 2],
    /// The equivalence margin, a fraction.
    pub margin: f64,
    /// The confidence of every figure's intervals over all looks.
    pub confidence: f64,
    /// At most this many rounds.
    pub max_rounds: u32,
    /// Start no round after this many seconds.
    pub max_time: Option<f64>,
    /// Tags stored with every run.
    pub tags: Vec<Tag>,
    /// Block devices the job may write.
    pub allow_devices: Vec<std::path::PathBuf>,
    /// Keep the files the job makes.
    pub keep: bool,
    /// The command line.
    pub command: String,
}

impl Request {
    /// Refuses what cannot be compared, before anything runs.
    pub fn check(&self) -> Result<(), QualifyError> {
        if self.names[0] == self.names[1] {
            return Err(input(format!(
                "both targets are named '{}': give each its own name (--target NAME=PATH)",
                self.names[0]
            )));
        }
        if !(self.margin > 0.0 && self.margin < 1.0) {
            return Err(input(format!(
                "--margin {}%: expected a percentage above 0 and below 100 (5% is the default)",
                self.margin * 100.0
            )));
        }
        if !(0.5..1.0).contains(&self.confidence) {
            return Err(input(format!(
                "--confidence {}: expected a fraction from 0.5 to below 1 (0.95 is the default)",
                self.confidence
            )));
        }
        if self.max_rounds < FIRST_LOOK {
            return Err(input(format!(
                "--max-repeats {}: the first look is after round {FIRST_LOOK} (a t interval of fewer pairs has under two degrees of freedom)",
                self.max_rounds
            )));
        }
        Ok(())
    }
}

/// The figures compared of every phase: throughput, IOPS and two latencies.
fn figures() -> [(Figure, &'static str); 4] {
    let f = |measure| Figure { measure, way: None };
    [
        (f(Measure::Throughput), "MiB/s"),
        (f(Measure::Iops), "IOPS"),
        (f(Measure::Latency(Percentile::P50)), "lat p50"),
        (f(Measure::Latency(Percentile::P99)), "lat p99"),
    ]
}

/// One figure of one phase as the rounds go.
struct Tally {
    phase: usize,
    label: String,
    figure: Figure,
    name: &'static str,
    a: Vec<f64>,
    b: Vec<f64>,
    /// Rounds in which a side did not measure it.
    missing: u32,
    decided: Option<(u32, Look, Call)>,
}

/// What a compare left.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The stored study.
    pub study_id: i64,
    /// What it found.
    pub params: CompareParams,
}

/// Runs the comparison and stores it; `say` is told each round's figures and each decision.
pub fn run(store: &mut Store, r: &Request, stop: &AtomicBool, say: &dyn Fn(&str)) -> Result<Outcome, QualifyError> {
    r.check()?;
    let design = calibrate(r.confidence, FIRST_LOOK, r.max_rounds);
    let mut tallies: Vec<Tally> = r.jobs[0]
        .phases
        .iter()
        .enumerate()
        .flat_map(|(i, (kind, _))| {
            figures().into_iter().map(move |(figure, name)| Tally {
                phase: i,
                label: format!("{} {}", i + 1, kind.name()),
                figure,
                name,
                a: Vec::new(),
                b: Vec::new(),
                missing: 0,
                decided: None,
            })
        })
        .collect();
    let mut members = Vec::new();
    let t0 = Instant::now();
    let mut rounds = 0;
    let stopped = loop {
        if rounds == r.max_rounds {
            break "--max-repeats".to_string();
        }
        if r.max_time.is_some_and(|m| t0.elapsed().as_secs_f64() >= m) {
            break "--max-time".to_string();
        }
        let round = rounds + 1;
        let results = match one_round(store, r, round, stop, &mut members)? {
            Ok(results) => results,
            Err(why) => break why,
        };
        rounds = round;
        record(&mut tallies, &results, round, &design, r.margin);
        say(&round_line(r, round, &tallies));
        if tallies.iter().all(|t| t.decided.is_some() || t.a.is_empty()) {
            break "every figure decided".to_string();
        }
    };
    let verdicts: Vec<FigureVerdict> = tallies
        .iter()
        .filter(|t| !t.a.is_empty() || t.missing > 0)
        .map(|t| verdict(t, r, &design))
        .collect();
    let mut params = CompareParams {
        command: r.command.clone(),
        names: r.names.to_vec(),
        targets: r.targets.to_vec(),
        margin: r.margin,
        design,
        rounds,
        stopped,
        verdicts,
        warnings: Vec::new(),
        method: METHOD.into(),
    };
    params.warnings = crate::versus_warnings::of(store, &params, &members)?;
    let study_id = store.save_study(&NewStudy {
        params: StudyParams::Compare(params.clone()),
        members,
        events: Vec::new(),
        task_samples: Vec::new(),
    })?;
    Ok(Outcome { study_id, params })
}

/// One round: the job on each target, in this round's order, each run stored and made a member.
/// Ok(Err(why)) when the round did not complete (Ctrl-C, a run that did not end well): the
/// rounds stop there, and the incomplete round is not counted.
fn one_round(
    store: &mut Store,
    r: &Request,
    round: u32,
    stop: &AtomicBool,
    members: &mut Vec<Member>,
) -> Result<Result<[Vec<PhaseResult>; 2], String>, QualifyError> {
    let order = if round % 2 == 1 { [0, 1] } else { [1, 0] };
    let mut results: [Vec<PhaseResult>; 2] = Default::default();
    for side in order {
        if stop.load(Ordering::SeqCst) {
            return Ok(Err("interrupted".into()));
        }
        let o = storlab_session::RunOptions {
            kind: RunKind::Compare,
            tags: &r.tags,
            allow_devices: &r.allow_devices,
            keep: r.keep,
            command: &r.command,
            control: None,
            live: None,
        };
        let e = storlab_session::run(store, &r.jobs[side], &o)
            .map_err(|e| QualifyError::Run(format!("{}: {e}", r.names[side])))?;
        members.push(Member {
            run_id: e.run_id,
            role: Role::Side {
                target: r.names[side].clone(),
                round,
            },
        });
        match e.status {
            RunStatus::Ok => results[side] = e.results,
            RunStatus::Aborted => return Ok(Err("interrupted".into())),
            other => {
                return Ok(Err(format!(
                    "run {} on {} ended {}",
                    e.run_id,
                    r.names[side],
                    other.name()
                )))
            }
        }
    }
    Ok(Ok(results))
}

/// A round's figures into the tallies; each figure not yet decided looked at.
fn record(tallies: &mut [Tally], results: &[Vec<PhaseResult>; 2], round: u32, design: &Design, margin: f64) {
    for t in tallies.iter_mut() {
        let read = |side: usize| results[side].get(t.phase).and_then(|p| t.figure.read(p));
        match (read(0), read(1)) {
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                t.a.push(a);
                t.b.push(b);
            }
            _ => t.missing += 1,
        }
        if t.decided.is_some() {
            continue;
        }
        if let Some(l) = paired::look(design, &t.a, &t.b) {
            let call = paired::call(l.ci, margin, t.figure.more_is_better());
            if call != Call::Undecided {
                t.decided = Some((round, l, call));
            }
        }
    }
}

/// "round 3: 1 randread MiB/s xfs/ext4 1.52 [1.31, 1.77] xfs better; …" for the terminal.
fn round_line(r: &Request, round: u32, tallies: &[Tally]) -> String {
    let mut parts = Vec::new();
    for t in tallies.iter().filter(|t| t.figure.measure == Measure::Throughput) {
        let ratio = t.b.last().zip(t.a.last()).map(|(b, a)| b / a);
        let state = match t.decided {
            Some((at, _, c)) => format!("decided at round {at}: {}", call_word(c, r)),
            None => "open".into(),
        };
        if let Some(x) = ratio {
            parts.push(format!("{} {}/{} {x:.3} ({state})", t.label, r.names[1], r.names[0]));
        }
    }
    let open = tallies
        .iter()
        .filter(|t| t.decided.is_none() && !t.a.is_empty())
        .count();
    format!("round {round}: {}; {open} figure(s) open", parts.join("; "))
}

fn call_word(c: Call, r: &Request) -> String {
    match c {
        Call::A => r.names[0].clone(),
        Call::B => r.names[1].clone(),
        Call::Equivalent => "equivalent".into(),
        Call::Undecided => "undecided".into(),
    }
}

/// A lead as a reader takes it: "12.3 % (4.1 to 21.0 %)" under double, "159× (9.3× to 2671×)"
/// from double on.
fn by_how_much((x, lo, hi): (f64, f64, f64)) -> String {
    if x < 2.0 {
        let pct = |v: f64| (v - 1.0) * 100.0;
        format!("by {:.1} % ({:.1} to {:.1} %)", pct(x), pct(lo), pct(hi))
    } else {
        format!("{}× ({}× to {}×)", sig3(x), sig3(lo), sig3(hi))
    }
}

/// A figure's verdict: the look that decided it, or the last look and what it lacked.
fn verdict(t: &Tally, r: &Request, design: &Design) -> FigureVerdict {
    let (call, look, at) = match t.decided {
        Some((at, l, c)) => (c, Some(l), Some(at)),
        None => (Call::Undecided, paired::look(design, &t.a, &t.b), None),
    };
    let (smallest, needed) = match (call, look) {
        (Call::Undecided, Some(l)) => (
            Some(paired::smallest_detectable_pct(&l)),
            paired::rounds_for_margin(design, l.sd_log, r.margin),
        ),
        _ => (None, None),
    };
    let better = if t.figure.more_is_better() { "faster" } else { "lower" };
    let reading = match (call, look) {
        (Call::A | Call::B, Some(l)) => {
            let (winner, other) = if call == Call::B { (1, 0) } else { (0, 1) };
            // How far the winner is ahead, as a factor above 1 with its interval: the other's
            // over the winner's for a latency (lower is better), the winner's over the other's
            // for a throughput.
            let b_over_a = (l.ratio, l.ci.0, l.ci.1);
            let a_over_b = (1.0 / l.ratio, 1.0 / l.ci.1, 1.0 / l.ci.0);
            let ahead = if (winner == 1) == t.figure.more_is_better() { b_over_a } else { a_over_b };
            format!(
                "{} {better} than {}: {}, decided at round {}",
                r.names[winner],
                r.names[other],
                by_how_much(ahead),
                at.unwrap_or(0)
            )
        }
        (Call::Equivalent, Some(l)) => format!(
            "equivalent within ±{:.0} %: {}/{} {} ({} to {}), decided at round {}",
            r.margin * 100.0,
            r.names[1],
            r.names[0],
            sig3(l.ratio),
            sig3(l.ci.0),
            sig3(l.ci.1),
            at.unwrap_or(0)
        ),
        (_, Some(l)) => format!(
            "undecided after {} round(s): {}/{} {} ({} to {}) holds 1 and reaches past ±{:.0} %; the spread let it tell ±{:.1} % from none; {}",
            l.n,
            r.names[1],
            r.names[0],
            sig3(l.ratio),
            sig3(l.ci.0),
            sig3(l.ci.1),
            r.margin * 100.0,
            smallest.unwrap_or(0.0),
            match needed {
                Some(n) => format!("about {n} rounds would tell a difference of {:.0} % from none", r.margin * 100.0),
                None => "more rounds than 10,000 would be needed at this spread".into(),
            }
        ),
        (_, None) if t.a.len() < FIRST_LOOK as usize => format!(
            "undecided: {} round(s) measured it, the first look is after {FIRST_LOOK}",
            t.a.len()
        ),
        (_, None) => "undecided: a side did not measure it".into(),
    };
    let upto = look.map_or(t.a.len(), |l| l.n);
    FigureVerdict {
        phase: t.label.clone(),
        figure: t.name.into(),
        more_is_better: t.figure.more_is_better(),
        call,
        verdict: call_word(call, r),
        ratio: look.map(|l| l.ratio),
        ci: look.map(|l| l.ci),
        runs: upto as u32,
        decided_at: at,
        smallest_detectable_pct: smallest,
        rounds_for_margin: needed,
        a: t.a.clone(),
        b: t.b.clone(),
        reading,
    }
}
