//! Studies as the report shows them, each kind in its own terms, for the terminal, in JSON and
//! in HTML, from what was stored: the study (kind, typed parameters, members with roles,
//! events, task samples) and its runs. The commands that run studies print through here after
//! storing them, so a study reads the same the day it ran and a year later.

use std::fmt::Write;

use serde::Serialize;
use storlab_model::result::{Figure, RateUnit};
use storlab_model::run::RunDetail;
use storlab_model::study::{Projection, Role, StretchSummary, Study, StudyParams};
use storlab_stats::impact::{analyse_held, impacts, progress_rate, HeldAnalysis, Impact, Repetition, METRICS};
use storlab_stats::{Comparison, Verdict};

use crate::runs::if_measured;
use crate::svg::{esc, line_chart_marked, nice_ceiling, Series, COLORS};
use crate::table::{human_duration, Cell, Table};

const MIB: f64 = 1024.0 * 1024.0;

/// A study and its runs (a held-rate study's run read with its samples, the others without).
#[derive(Debug, Clone)]
pub struct StudyView {
    /// The study.
    pub study: Study,
    /// Its members' runs, in the members' order (a member whose run was removed is left out).
    pub runs: Vec<RunDetail>,
    /// The earlier qualification a qualification was compared with (`--against`), when it is
    /// still in the database.
    pub earlier: Option<Box<Study>>,
}

impl StudyView {
    /// Reads a study and its runs from the store (a held-rate study's run with its samples,
    /// which its analysis needs); None when there is no such study.
    pub fn load(store: &storlab_store::Store, id: i64) -> Result<Option<StudyView>, storlab_store::StoreError> {
        let Some(study) = store.study(id)? else {
            return Ok(None);
        };
        let samples = matches!(study.params, StudyParams::ImpactHeld(_));
        let mut runs = Vec::new();
        for m in &study.members {
            if let Some(r) = store.run(m.run_id, samples)? {
                runs.push(r);
            }
        }
        let earlier = match &study.params {
            StudyParams::Qualify(p) => match p.against {
                Some(id) => store.study(id)?.map(Box::new),
                None => None,
            },
            _ => None,
        };
        Ok(Some(StudyView { study, runs, earlier }))
    }

    /// Studies `ids` for the HTML report; one that is not there is refused, nothing written.
    pub fn load_all(store: &storlab_store::Store, ids: &[i64]) -> Result<Vec<StudyView>, storlab_store::StoreError> {
        ids.iter()
            .map(|id| {
                StudyView::load(store, *id)?.ok_or_else(|| {
                    storlab_store::StoreError::Request(format!("{}: no report was written", store.no_study(*id)))
                })
            })
            .collect()
    }

    /// Each member's role and run.
    pub fn members(&self) -> Vec<(&Role, &RunDetail)> {
        self.study
            .members
            .iter()
            .filter_map(|m| Some((&m.role, self.runs.iter().find(|r| r.run.id == m.run_id)?)))
            .collect()
    }

    /// The phases' names, from the first run.
    pub fn phase_kinds(&self) -> Vec<String> {
        self.runs
            .first()
            .map(|r| r.phases.iter().map(|p| p.kind.to_string()).collect())
            .unwrap_or_default()
    }

    /// A cost-to-the-users study's comparison, rebuilt from its runs as the study made it.
    pub fn impacts(&self) -> Vec<Impact> {
        let results: Vec<(bool, bool, Vec<storlab_model::result::PhaseResult>)> = self
            .members()
            .into_iter()
            .filter_map(|(role, run)| match role {
                Role::Repetition { loaded, counted, .. } => {
                    Some((*loaded, *counted, run.phases.iter().map(|p| p.result.clone()).collect()))
                }
                _ => None,
            })
            .collect();
        let reps: Vec<Repetition> = results
            .iter()
            .map(|(loaded, counted, results)| Repetition {
                loaded: *loaded,
                counted: *counted,
                results,
            })
            .collect();
        impacts(&reps, &self.phase_kinds())
    }

    /// A held-rate study's analysis (None for other kinds, or when its run has no
    /// rate-limited phase).
    pub fn held(&self) -> Option<HeldAnalysis> {
        let StudyParams::ImpactHeld(p) = &self.study.params else {
            return None;
        };
        let phase = self.runs.first()?.phases.first()?;
        analyse_held(&phase.result, p.phase_start, &p.spans)
    }

    /// A task's progress as it was watched: (seconds since its first look, percent).
    pub fn track(&self, task: u32) -> Vec<(f64, f64)> {
        let looks: Vec<_> = self.study.task_samples.iter().filter(|x| x.task == task).collect();
        let t0 = looks.first().map(|x| x.t).unwrap_or(0.0);
        looks.iter().filter_map(|x| x.percent.map(|p| (x.t - t0, p))).collect()
    }
}

/// A study as one JSON document: the study as stored, with the figures computed from its runs
/// (a cost-to-the-users study's comparison, a held-rate study's analysis).
#[derive(Debug, Serialize)]
pub struct StudyDocument<'a> {
    /// The study.
    #[serde(flatten)]
    pub study: &'a Study,
    /// The comparison of a cost-to-the-users study.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impact: Option<Vec<Impact>>,
    /// A held-rate study's analysis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub analysis: Option<HeldAnalysis>,
    /// A cost-to-the-task study's progress tracks, idle and loaded: (seconds since the task's
    /// first look, percent done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracks: Option<Tracks>,
}

/// The task's progress on each side of a cost-to-the-task study.
#[derive(Debug, Serialize)]
pub struct Tracks {
    /// With the machine idle.
    pub idle: Vec<(f64, f64)>,
    /// With the job looping.
    pub loaded: Vec<(f64, f64)>,
}

/// The study's JSON document.
pub fn document(v: &StudyView) -> StudyDocument<'_> {
    StudyDocument {
        study: &v.study,
        impact: matches!(v.study.params, StudyParams::Impact(_)).then(|| v.impacts()),
        analysis: v.held(),
        tracks: matches!(v.study.params, StudyParams::ImpactReverse(_)).then(|| Tracks {
            idle: v.track(0),
            loaded: v.track(1),
        }),
    }
}

/// An impact cell: the change in percent with its 95 % interval ("-36.8 [-58.4, -15.2]").
pub fn impact_cell(c: &Comparison) -> String {
    match (c.diff_percent, c.ci95_percent) {
        (Some(d), Some((lo, hi))) => format!("{d:+.1} [{lo:+.1}, {hi:+.1}]"),
        (Some(d), None) => format!("{d:+.1}"),
        _ => "-".into(),
    }
}

/// What a deficit is counted in.
fn behind_unit(unit: RateUnit) -> &'static str {
    match unit {
        RateUnit::Iops => "ops",
        RateUnit::BytesPerSec => "MiB",
    }
}

/// The unit a held rate is shown in.
fn rate_unit(unit: RateUnit) -> &'static str {
    match unit {
        RateUnit::Iops => "IOPS",
        RateUnit::BytesPerSec => "MiB/s",
    }
}

/// The held study's stretch table.
pub fn stretch_table(unit: RateUnit, stretches: &[StretchSummary]) -> Table {
    let u = rate_unit(unit);
    let mut t = Table::with_headers(
        "stretches",
        vec![
            "stretch".to_string(),
            "intervals".into(),
            format!("mean {u}"),
            format!("lowest {u}"),
            "mean p99 µs".into(),
            "worst p99.9 µs".into(),
            format!("most behind ({})", behind_unit(unit)),
        ],
    );
    for st in stretches {
        t.push(vec![
            st.stretch.name().into(),
            st.intervals.into(),
            Cell::fixed(st.achieved, 1),
            Cell::fixed(st.achieved_min, 1),
            Cell::fixed(st.p99_us, 0),
            Cell::fixed(st.p99_9_max_us, 0),
            Cell::fixed(st.behind_max, 0),
        ]);
    }
    t
}

/// The study's events in the order they happened.
pub fn events_table(study: &Study) -> Table {
    let mut t = Table::new("events", &["t (s)", "at", "event", "detail", "run"]);
    for e in &study.events {
        t.push(vec![
            Cell::fixed(e.t, 1),
            e.at.as_str().into(),
            e.kind.as_str().into(),
            e.detail.as_str().into(),
            e.run_id.into(),
        ]);
    }
    t
}

fn events_text(study: &Study) -> String {
    let mut s = String::from("events:\n");
    for e in &study.events {
        let _ = writeln!(
            s,
            "  {:>8.1} s  {:<22} {}{}",
            e.t,
            e.kind,
            e.detail,
            e.run_id.map(|r| format!(" [run {r}]")).unwrap_or_default()
        );
    }
    s
}

fn projection_text(p: &Projection, worse: Option<&Projection>, what: &str) -> String {
    let mut s = format!(
        "pool projection: {} servers, budget {:.1} %, one server's loss {:.1} % ({what})\n",
        p.servers, p.budget_percent, p.loss_percent
    );
    let shown: Vec<String> = p
        .by_k
        .iter()
        .take(12)
        .map(|(k, l)| format!("k={k}: {l:.2} %"))
        .collect();
    let _ = writeln!(
        s,
        "  pool-wide loss with k servers at once: {}{}",
        shown.join(", "),
        if p.by_k.len() > 12 { ", ..." } else { "" }
    );
    match p.largest_k {
        0 => {
            let _ = writeln!(
                s,
                "  largest k inside the budget: none — even one server at a time costs the pool more than {:.1} %",
                p.budget_percent
            );
        }
        k => {
            let _ = writeln!(s, "  largest k inside the budget: {k}");
        }
    }
    if let Some(w) = worse {
        let _ = writeln!(
            s,
            "  at the 95 % interval's worse end ({:.1} % loss): largest k {}",
            w.loss_percent, w.largest_k
        );
    }
    s
}

/// A task in words, or as given where the study did not store its words (stored before they
/// were).
fn described<'a>(words: &'a str, given: &'a str) -> &'a str {
    if words.is_empty() {
        given
    } else {
        words
    }
}

fn job_name(v: &StudyView) -> String {
    v.runs
        .first()
        .and_then(|r| r.run.job_name.clone())
        .unwrap_or_else(|| "the job".into())
}

/// The cost-to-the-users study: per phase a table of every repetition's figures, the means and
/// the impact with its interval; the projection; the events.
fn users_text(v: &StudyView, p: &storlab_model::study::UsersParams) -> String {
    let mut s = format!(
        "impact of {} on {} (study {})\n\n",
        described(&p.task_description, &p.task),
        job_name(v),
        v.study.id
    );
    let table = v.impacts();
    if table.is_empty() {
        s += "No loaded repetition ran with the task from its start to its end, so there is nothing to compare: give the task more to do, a speed limit (btrfs-scrub:MOUNT@SPEED), or the job a shorter --runtime.\n\n";
    }
    let members = v.members();
    for (seq, kind) in v.phase_kinds().iter().enumerate() {
        let mut t = Table::with_headers(
            "impact",
            std::iter::once(format!("phase {} {kind}", seq + 1))
                .chain(METRICS.iter().map(|m| m.name.to_string()))
                .collect(),
        );
        for (role, run) in &members {
            let Role::Repetition { index, loaded, counted } = role else {
                continue;
            };
            let mut row: Vec<Cell> = vec![format!(
                "{} {index}{}",
                if *loaded { "with the task" } else { "idle" },
                if *counted {
                    ""
                } else {
                    " (task ended early: not counted)"
                }
            )
            .into()];
            for m in &METRICS {
                row.push(
                    run.phases
                        .get(seq)
                        .map(|ph| Cell::fixed((m.read)(&ph.result), 2))
                        .unwrap_or(Cell::Empty),
                );
            }
            t.push(row);
        }
        let line = |label: &str, pick: &dyn Fn(&Comparison) -> Cell| {
            std::iter::once(Cell::from(label))
                .chain(METRICS.iter().map(|m| {
                    table
                        .iter()
                        .find(|i| i.phase == seq + 1 && i.metric == m.name)
                        .map(|i| pick(&i.comparison))
                        .unwrap_or(Cell::Empty)
                }))
                .collect::<Vec<Cell>>()
        };
        t.push(line("mean idle", &|c| Cell::fixed(c.a.mean, 2)));
        t.push(line("mean with the task", &|c| Cell::fixed(c.b.mean, 2)));
        t.push(line("impact (%)", &|c| {
            let word = match c.verdict {
                Verdict::NotSignificant => " n.s.",
                Verdict::TooFew => " (n=1)",
                _ => "",
            };
            format!("{}{word}", impact_cell(c)).into()
        }));
        s += &t.to_text();
        s += "\n";
    }
    s += "impact (%): the change of the mean with the task against idle, with its 95 % confidence interval (Welch); n.s.: not significant.\n";
    if let (Some(proj), Some(phase)) = (&p.projection, &p.worst_loss_phase) {
        s += "\n";
        s += &projection_text(proj, p.projection_worse_end.as_ref(), &format!("throughput of {phase}"));
    }
    s
}

fn track_text(name: &str, track: &[(f64, f64)]) -> String {
    let step = (track.len() / 10).max(1);
    let points: Vec<String> = track
        .iter()
        .step_by(step)
        .map(|(t, p)| format!("{t:.1} s: {p:.0} %"))
        .collect();
    let with_percent: Vec<(f64, Option<f64>)> = track.iter().map(|(t, p)| (*t, Some(*p))).collect();
    format!(
        "progress {name}: {}{}\n",
        points.join(", "),
        progress_rate(&with_percent)
            .map(|r| format!(" — {r:.1} %/min"))
            .unwrap_or_default()
    )
}

/// The cost-to-the-task study: the task's duration idle and with the job looping, its progress,
/// and a round over the pool.
fn reverse_text(v: &StudyView, p: &storlab_model::study::ReverseParams) -> String {
    let mut s = format!(
        "cost to the task: {} (study {})\n\n",
        described(&p.task_description, &p.task),
        v.study.id
    );
    let _ = writeln!(s, "idle:            {:>10.1} s", p.idle_seconds);
    let _ = writeln!(
        s,
        "with the job:    {:>10.1} s  ({} run(s) of the job in a loop)",
        p.loaded_seconds,
        v.study.members.len()
    );
    let _ = writeln!(s, "ratio:           {:>10.2}", p.ratio);
    s += &track_text("idle", &v.track(0));
    s += &track_text("with the job", &v.track(1));
    if let (Some(proj), Some(from)) = (&p.projection, p.projection_from_study) {
        s += "\n";
        s += &projection_text(proj, None, &format!("from study {from}"));
        match (proj.largest_k, &p.round) {
            (0, _) | (_, None) => s += "  a round over the pool: no k fits the budget\n",
            (k, Some(r)) => {
                let _ = writeln!(
                    s,
                    "  a round over the pool, {k} at a time ({} turn(s)): {} idle, {} under load",
                    proj.servers.div_ceil(k),
                    human_duration(r.idle_seconds.unwrap_or(0.0)),
                    human_duration(r.loaded_seconds.unwrap_or(0.0)),
                );
            }
        }
    }
    s
}

/// The marks of the tasks' starts and ends, seconds since the study started.
fn task_marks(spans: &[storlab_model::study::TaskSpan], start: &str, end: &str) -> Vec<(f64, String)> {
    let mut marks = Vec::new();
    for (i, t) in spans.iter().enumerate() {
        marks.push((t.start, format!("task {} {start}", i + 1)));
        if let Some(e) = t.end {
            marks.push((e, format!("task {} {end}", i + 1)));
        }
    }
    marks
}

fn repaid_text(a: &HeldAnalysis) -> String {
    let u = behind_unit(a.unit);
    match a.repaid_after {
        Some(0.0) => format!(
            "deficit: none built up beyond {:.0} {u} (the most behind before the task)",
            a.tolerance
        ),
        Some(x) => format!(
            "deficit: at most {:.0} {u}; repaid {x:.1} s after the last task ended",
            a.behind_max
        ),
        None => format!(
            "deficit: at most {:.0} {u}; NOT repaid before the job ended ({:.0} {u} still behind): give a longer --after",
            a.behind_max, a.behind_at_end
        ),
    }
}

/// The held-rate study: every interval (rate, latency, deficit, where the tasks started and
/// ended), the stretches, the tasks, and when the deficit was repaid.
fn held_text(v: &StudyView, p: &storlab_model::study::HeldParams) -> String {
    let Some(a) = v.held() else {
        return format!(
            "held rate (study {}): the job's run has no rate-limited phase to analyse\n",
            v.study.id
        );
    };
    let unit = rate_unit(a.unit);
    let mut s = format!(
        "held rate: {} at {:.0} {unit} through {} (study {}, run {})\n\n",
        job_name(v),
        a.target,
        p.spans
            .iter()
            .map(|t| t.task.clone())
            .collect::<Vec<_>>()
            .join(", then "),
        v.study.id,
        v.runs.first().map(|r| r.run.id).unwrap_or(0)
    );
    let mut t = Table::with_headers(
        "intervals",
        vec![
            "t (s)".to_string(),
            "stretch".into(),
            unit.into(),
            "p50 µs".into(),
            "p99 µs".into(),
            "p99.9 µs".into(),
            format!("behind ({})", behind_unit(a.unit)),
            "".into(),
        ],
    );
    let marks = task_marks(&p.spans, "started", "ended");
    for iv in &a.intervals {
        let mark: Vec<&str> = marks
            .iter()
            .filter(|(t, _)| *t >= iv.t_start && *t < iv.t_end)
            .map(|(_, m)| m.as_str())
            .collect();
        t.push(vec![
            Cell::fixed(iv.t_end, 1),
            iv.stretch.name().into(),
            Cell::fixed(iv.achieved, 1),
            Cell::fixed(iv.p50_us, 0),
            Cell::fixed(iv.p99_us, 0),
            Cell::fixed(iv.p99_9_us, 0),
            Cell::fixed(iv.behind, 0),
            mark.join("; ").into(),
        ]);
    }
    s += &t.to_text();
    s += "\n";
    s += &stretch_table(a.unit, &a.stretches).to_text();
    s += "\n";
    for (i, t) in p.spans.iter().enumerate() {
        let _ = writeln!(
            s,
            "task {}: {} — started at {:.1} s, {}",
            i + 1,
            t.task,
            t.start,
            match t.end {
                Some(e) => format!("ended at {e:.1} s ({:.1} s): {}", e - t.start, t.detail),
                None => "stopped before it ended".into(),
            }
        );
    }
    s += &repaid_text(&a);
    s += "\n";
    s
}

/// A sweep or IOzone study: a row per member with its role and each phase's figures.
pub fn members_table(v: &StudyView) -> Table {
    let kinds = v.phase_kinds();
    let mut headers: Vec<String> = match &v.study.params {
        StudyParams::Sweep(p) | StudyParams::SweepMatrix(p) => p.vary.clone(),
        _ => vec!["cell".to_string()],
    };
    headers.push("run".into());
    for k in &kinds {
        headers.extend([
            format!("{k} MiB/s"),
            format!("{k} IOPS"),
            format!("{k} p99 µs"),
            format!("{k} bound"),
        ]);
    }
    let mut t = Table::with_headers("members", headers);
    for (role, run) in v.members() {
        let mut row: Vec<Cell> = match role {
            Role::Point { values } => values.iter().map(|(_, x)| Cell::from(x.as_str())).collect(),
            other => vec![other.to_string().into()],
        };
        row.push(run.run.id.into());
        for p in &run.phases {
            // A figure an imported cell's tool did not print is "—", never 0.
            let r = &p.result;
            row.push(if_measured(
                r,
                Figure::Throughput,
                Cell::fixed(r.all_done.bytes_per_sec / MIB, 2),
            ));
            row.push(if_measured(r, Figure::Iops, Cell::fixed(r.all_done.iops, 0)));
            row.push(if_measured(
                r,
                Figure::Latency,
                Cell::fixed(r.latency.p99_ns as f64 / 1e3, 1),
            ));
            row.push(crate::bound::of_phase(run, p).kind.name().into());
        }
        t.push(row);
    }
    t
}

/// A study for the terminal, in its own terms.
pub fn render_text(v: &StudyView) -> String {
    let mut s = match &v.study.params {
        StudyParams::Impact(p) => users_text(v, p),
        StudyParams::ImpactReverse(p) => reverse_text(v, p),
        StudyParams::ImpactHeld(p) => held_text(v, p),
        StudyParams::Qualify(p) => crate::qualify::render_text(v.study.id, v.study.members.len(), p),
        StudyParams::Compare(p) => crate::versus::render_text(v.study.id, v.study.members.len(), p),
        other => {
            let mut s = format!("study {}: {}\n", v.study.id, other.kind());
            if let Some(c) = other.command() {
                let _ = writeln!(s, "command: {c}");
            }
            s += &members_table(v).to_text();
            for line in bound_changes(v) {
                let _ = writeln!(s, "bound: {line}");
            }
            if let StudyParams::Sweep(p) | StudyParams::SweepMatrix(p) = other {
                if p.skipped > 0 {
                    let _ = writeln!(
                        s,
                        "{} point(s) left out: their block size exceeds their file size",
                        p.skipped
                    );
                }
                if let Some(n) = &p.note {
                    let _ = writeln!(s, "{n}");
                }
            }
            s
        }
    };
    if !v.study.events.is_empty() {
        s += "\n";
        s += &events_text(&v.study);
    }
    if !v.study.task_samples.is_empty() && !matches!(v.study.params, StudyParams::ImpactReverse(_)) {
        let looks = &v.study.task_samples;
        let step = looks.len().div_ceil(10).max(1);
        let which = if step > 1 {
            format!("; every {step}th, and the last")
        } else {
            String::new()
        };
        let _ = writeln!(s, "task progress ({} looks{which}):", looks.len());
        for x in looks.iter().step_by(step).chain(looks.last()) {
            let _ = writeln!(
                s,
                "  {:>8.1} s  task {}  {:<8} {}",
                x.t,
                x.task + 1,
                x.state,
                x.percent.map(|p| format!("{p:.1} %")).unwrap_or_default()
            );
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// HTML

fn kb_label(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}m", b >> 20)
    } else {
        format!("{}k", b >> 10)
    }
}

/// True when every member is a cell of a file size × record size matrix.
pub fn is_matrix(v: &StudyView) -> bool {
    use storlab_model::study::StudyKind::*;
    matches!(v.study.kind(), IozoneAuto | IozoneWorkers | IozoneImport | SweepMatrix)
        && v.members()
            .iter()
            .all(|(_, r)| r.phases.first().and_then(|p| p.file_and_record()).is_some())
}

/// The heat maps of a file size × record size study, one per phase kind; `top` gives each
/// kind's colour scale.
fn heat_maps(v: &StudyView, top: &dyn Fn(&str, f64) -> f64) -> String {
    let cells: Vec<((u64, u64), &RunDetail)> = v
        .members()
        .into_iter()
        .filter_map(|(_, r)| Some((r.phases.first()?.file_and_record()?, r)))
        .collect();
    let mut files: Vec<u64> = cells.iter().map(|c| c.0 .0).collect();
    let mut recs: Vec<u64> = cells.iter().map(|c| c.0 .1).collect();
    files.sort_unstable();
    files.dedup();
    recs.sort_unstable();
    recs.dedup();
    let mut s = String::new();
    for k in v.phase_kinds() {
        let values: Vec<Vec<Option<f64>>> = files
            .iter()
            .map(|f| {
                recs.iter()
                    .map(|rc| {
                        let (_, r) = cells.iter().find(|c| c.0 == (*f, *rc))?;
                        r.phases
                            .iter()
                            .find(|p| p.kind.as_str() == k)
                            .map(|p| p.result.all_done.bytes_per_sec / MIB)
                    })
                    .collect()
            })
            .collect();
        let own = values.iter().flatten().flatten().copied().fold(0.0, f64::max);
        s += &crate::svg::heat_map(
            &format!("{k} — MiB/s (file size down, record size across)"),
            &format!("heat {k}"),
            "MiB/s",
            &files.iter().map(|f| kb_label(*f)).collect::<Vec<_>>(),
            &recs.iter().map(|r| kb_label(*r)).collect::<Vec<_>>(),
            &values,
            top(&k, own),
        );
    }
    s
}

/// Where the bound changes along a study's points, a line per phase kind ("randread:
/// iodepth-bound at iodepth=1, device-bound from iodepth=4").
pub fn bound_changes(v: &StudyView) -> Vec<String> {
    let points: Vec<(String, &RunDetail)> = v
        .members()
        .into_iter()
        .map(|(role, run)| {
            let label = match role {
                Role::Point { values } => values
                    .iter()
                    .map(|(k, x)| format!("{k}={x}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                other => other.to_string(),
            };
            (label, run)
        })
        .collect();
    v.phase_kinds()
        .iter()
        .filter_map(|k| crate::bound::along(&points, k))
        .collect()
}

/// A sweep's curves: each phase's MiB/s against the first varied setting (its index when the
/// values are not numbers).
fn sweep_curves(v: &StudyView, vary: &str) -> String {
    let mut s = String::new();
    for k in v.phase_kinds() {
        let pts: Vec<(f64, f64)> = v
            .members()
            .iter()
            .enumerate()
            .filter_map(|(i, (role, r))| {
                let x = match role {
                    Role::Point { values } => values.first().and_then(|(_, x)| x.parse::<f64>().ok()),
                    _ => None,
                }
                .unwrap_or(i as f64 + 1.0);
                r.phases
                    .iter()
                    .find(|p| p.kind.as_str() == k)
                    .map(|p| (x, p.result.all_done.bytes_per_sec / MIB))
            })
            .collect();
        let top = nice_ceiling(pts.iter().map(|p| p.1).fold(0.0, f64::max));
        let (svg, _) = crate::svg::line_chart(
            &format!("{k} — MiB/s against {vary}"),
            &format!("sweep {k}"),
            "MiB/s",
            vary,
            &[Series {
                name: k.clone(),
                color: COLORS[0],
                points: pts,
            }],
            top,
        );
        s += &svg;
    }
    for line in bound_changes(v) {
        let _ = write!(s, "<p class=\"bound\">bound: {}</p>", crate::svg::esc(&line));
    }
    s
}

fn users_html(v: &StudyView, p: &storlab_model::study::UsersParams) -> String {
    let table = v.impacts();
    let counted = |loaded: bool| {
        v.study
            .members
            .iter()
            .filter(|m| matches!(m.role, Role::Repetition { loaded: l, counted: true, .. } if l == loaded))
            .count()
    };
    let mut s = format!(
        "<p>The cost of {} to the users: {} idle and {} loaded repetitions that ran with the task throughout; impact = change of the mean with the task, 95 % interval (Welch).</p>",
        esc(described(&p.task_description, &p.task)),
        counted(false),
        counted(true)
    );
    let mut t = Table::new(
        "impact",
        &[
            "phase",
            "metric",
            "mean idle",
            "mean with the task",
            "impact (%)",
            "verdict",
        ],
    );
    for i in &table {
        let c = &i.comparison;
        t.push(vec![
            format!("{} {}", i.phase, i.kind).into(),
            i.metric.into(),
            Cell::fixed(c.a.mean, 2),
            Cell::fixed(c.b.mean, 2),
            impact_cell(c).into(),
            c.verdict.words().into(),
        ]);
    }
    s += &t.to_html();
    if let Some(proj) = &p.projection {
        let _ = write!(
            s,
            "<p>Pool projection: {} servers, budget {} %: the largest number of servers that may run the task at once is {}.</p>",
            proj.servers, proj.budget_percent, proj.largest_k
        );
    }
    s
}

fn reverse_html(v: &StudyView, p: &storlab_model::study::ReverseParams) -> String {
    let (svg, _) = line_chart_marked(
        "task progress",
        &format!("study {} progress", v.study.id),
        "% done",
        "s since the task started",
        &[
            Series {
                name: "idle".into(),
                color: COLORS[0],
                points: v.track(0),
            },
            Series {
                name: "with the job".into(),
                color: COLORS[1],
                points: v.track(1),
            },
        ],
        100.0,
        &[],
    );
    format!(
        "<p>The cost to the task: {:.1} s idle, {:.1} s with the job in a loop (ratio {:.2}).</p><div class=\"charts\">{svg}</div>",
        p.idle_seconds, p.loaded_seconds, p.ratio
    )
}

fn held_html(v: &StudyView, p: &storlab_model::study::HeldParams) -> String {
    let Some(a) = v.held() else {
        return String::new();
    };
    let key = |k: &str| format!("study {} {k}", v.study.id);
    let marks = task_marks(&p.spans, "start", "end");
    let pts = |f: fn(&storlab_stats::impact::HeldInterval) -> f64| -> Vec<(f64, f64)> {
        a.intervals.iter().map(|i| (i.t_end, f(i))).collect()
    };
    let top = |v: &[(f64, f64)]| nice_ceiling(v.iter().map(|p| p.1).fold(0.0, f64::max));
    let achieved = pts(|i| i.achieved);
    let target: Vec<(f64, f64)> = achieved.iter().map(|p| (p.0, a.target)).collect();
    let behind = pts(|i| i.behind);
    let p99 = pts(|i| i.p99_us);
    let (unit, bunit) = (rate_unit(a.unit), behind_unit(a.unit));
    let charts = [
        line_chart_marked(
            &format!("achieved rate against the target ({unit})"),
            &key("rate"),
            unit,
            "s",
            &[
                Series {
                    name: "achieved".into(),
                    color: COLORS[0],
                    points: achieved.clone(),
                },
                Series {
                    name: "target".into(),
                    color: COLORS[5],
                    points: target,
                },
            ],
            top(&achieved).max(a.target),
            &marks,
        )
        .0,
        line_chart_marked(
            &format!("behind schedule ({bunit})"),
            &key("deficit"),
            bunit,
            "s",
            &[Series {
                name: "deficit".into(),
                color: COLORS[1],
                points: behind.clone(),
            }],
            top(&behind).max(1.0),
            &marks,
        )
        .0,
        line_chart_marked(
            "latency p99 (from each I/O's scheduled time)",
            &key("p99"),
            "µs",
            "s",
            &[Series {
                name: "p99".into(),
                color: COLORS[3],
                points: p99.clone(),
            }],
            top(&p99),
            &marks,
        )
        .0,
    ];
    let repaid = match a.repaid_after {
        Some(0.0) => "no deficit built up".to_string(),
        Some(x) => format!(
            "the deficit (at most {:.0} {bunit}) was repaid {x:.1} s after the last task ended",
            a.behind_max
        ),
        None => format!(
            "the deficit was NOT repaid before the job ended ({:.0} {bunit} behind)",
            a.behind_at_end
        ),
    };
    let mut s = format!(
        "<p>The job held at {:.0} {unit} through {}: {repaid}.</p><div class=\"charts\">{}</div>",
        a.target,
        esc(&p
            .spans
            .iter()
            .map(|t| t.task.clone())
            .collect::<Vec<_>>()
            .join(", then ")),
        charts.join("")
    );
    s += &stretch_table(a.unit, &a.stretches).to_html();
    s
}

/// A study's section of the HTML report: its heading, what its kind shows (heat maps, curves,
/// the impact table, progress tracks, the held rate's timeline), its events and its runs.
/// `top(kind, own maximum)` gives the colour scale of a heat map.
pub fn render_html(v: &StudyView, top: &dyn Fn(&str, f64) -> f64) -> String {
    let mut s = format!(
        "<h2 id=\"study-{}\">Study {} · {} · {} runs</h2>",
        v.study.id,
        v.study.id,
        esc(v.study.kind().name()),
        v.study.members.len()
    );
    match &v.study.params {
        StudyParams::Impact(p) => s += &users_html(v, p),
        StudyParams::ImpactReverse(p) => s += &reverse_html(v, p),
        StudyParams::ImpactHeld(p) => s += &held_html(v, p),
        StudyParams::Qualify(p) => {
            let earlier = v.earlier.as_ref().and_then(|e| match &e.params {
                StudyParams::Qualify(q) => Some(q),
                _ => None,
            });
            s += &crate::qualify::render_html(&v.runs, v.study.members.len(), p, earlier, false);
        }
        StudyParams::Compare(p) => s += &crate::versus::render_html(p),
        StudyParams::Sweep(p) if !is_matrix(v) => {
            let vary = p.vary.first().map(String::as_str).unwrap_or("the point");
            let _ = write!(s, "<div class=\"charts\">{}</div>", sweep_curves(v, vary));
        }
        _ if is_matrix(v) => {
            let _ = write!(s, "<div class=\"charts\">{}</div>", heat_maps(v, top));
        }
        _ => {}
    }
    if !v.study.events.is_empty() {
        s += &events_table(&v.study).to_html();
    }
    s += &members_table(v).to_html();
    s
}
