//! The live status line on stderr while a run, sweep, IOzone run or impact study goes on: the
//! phase, its elapsed and remaining time (or bytes), the last interval's MiB/s, IOPS and p99,
//! and for a study which point or repetition runs and whether its task is running. Drawn with
//! indicatif, and only when a person watches: stderr a terminal, stdout not one document
//! (`--json`, `--csv`) and no `--quiet` (see [`wanted`]). The lines that stay (each phase's
//! throughput as it ends, each point as it starts) are printed above it.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use storlab_model::result::{PhaseResult, Sample};
use storlab_model::run::RunKind;
use storlab_session::{LiveRun, PhaseStart};
use storlab_units::{latency, mib_per_sec, thousands, Size};

/// Whether a status line is wanted: stderr is a terminal, stdout is not one document and the
/// user did not ask for quiet.
pub fn wanted(document_on_stdout: bool, quiet: bool) -> bool {
    std::io::stderr().is_terminal() && !document_on_stdout && !quiet
}

/// How often the line is redrawn (the elapsed time moves between samples).
const REDRAW: Duration = Duration::from_millis(200);

/// The status line (and, for a study, the study's line above it).
pub struct StatusLine {
    bars: MultiProgress,
    study_bar: Option<ProgressBar>,
    phase_bar: ProgressBar,
    state: Arc<Mutex<State>>,
    ticker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

#[derive(Default)]
struct State {
    /// What the study is ("sweep of 12 points"), when this is one.
    study: Option<String>,
    /// The point going on: its number from 1, of how many, and its name.
    point: Option<(usize, usize, String)>,
    /// The study's stage as its last event said ("repetition 2, with the task").
    stage: Option<String>,
    /// The study's task: running, and how far when it says.
    task: Option<(bool, Option<f64>)>,
    /// The run going on and its kind.
    run: Option<(i64, RunKind)>,
    phase: Option<PhaseNow>,
    done: bool,
}

struct PhaseNow {
    seq: usize,
    phases: usize,
    kind: String,
    started: Instant,
    runtime: Option<f64>,
    bytes: Option<u64>,
    bytes_done: u64,
    /// Interval samples will come (a metadata phase has none).
    sampled: bool,
    /// The longest interval seen: a sample under half of it is a phase's last sliver, whose
    /// rate says little, so the figures before it stay.
    longest: f64,
    figures: Option<Figures>,
}

struct Figures {
    bytes_per_sec: f64,
    iops: f64,
    p99_ns: u64,
}

impl StatusLine {
    /// A status line for one run or a series of runs; `study` names the study when this is one
    /// (its own line above the phase's).
    pub fn start(study: Option<String>) -> Arc<StatusLine> {
        let bars = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{wide_msg}").expect("a fixed template");
        let study_bar = study
            .is_some()
            .then(|| bars.add(ProgressBar::new_spinner().with_style(style.clone())));
        let phase_bar = bars.add(ProgressBar::new_spinner().with_style(style));
        let line = Arc::new(StatusLine {
            bars,
            study_bar,
            phase_bar,
            state: Arc::new(Mutex::new(State {
                study,
                ..State::default()
            })),
            ticker: Mutex::new(None),
        });
        // A thread redraws the lines: the elapsed time moves on between the engine's samples.
        // It holds the line weakly, so the line ends when its owner drops it.
        let weak = Arc::downgrade(&line);
        let ticker = std::thread::spawn(move || loop {
            std::thread::sleep(REDRAW);
            match weak.upgrade() {
                Some(l) if !l.lock().done => l.redraw(),
                _ => break,
            }
        });
        *line.ticker.lock().unwrap_or_else(|e| e.into_inner()) = Some(ticker);
        line
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn redraw(&self) {
        let (study, phase) = {
            let s = self.lock();
            (s.study_text(), s.phase_text())
        };
        if let (Some(b), Some(t)) = (&self.study_bar, study) {
            b.set_message(t);
        }
        self.phase_bar.set_message(phase);
    }

    /// A line that stays, printed above the status.
    fn say(&self, line: String) {
        let _ = self.bars.println(line);
    }

    /// Clears the status lines (before the command prints its result).
    pub fn finish(&self) {
        self.lock().done = true;
        if let Some(b) = &self.study_bar {
            b.finish_and_clear();
        }
        self.phase_bar.finish_and_clear();
        let _ = self.bars.clear();
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.finish();
    }
}

impl State {
    fn study_text(&self) -> Option<String> {
        let study = self.study.as_ref()?;
        // What changes first; the study's name, which may be long, last (a line too wide for
        // the terminal is cut at its end).
        let mut parts = Vec::new();
        if let Some((i, n, name)) = &self.point {
            parts.push(format!("point {i} of {n}: {name}"));
        }
        if let Some(stage) = &self.stage {
            parts.push(stage.clone());
        }
        match self.task {
            Some((true, Some(p))) => parts.push(format!("task running, {p:.0} %")),
            Some((true, None)) => parts.push("task running".into()),
            Some((false, _)) => parts.push("task not running".into()),
            None => {}
        }
        parts.push(study.clone());
        Some(parts.join(" · "))
    }

    /// "run 7", or "run 7 (impact-loaded)" for a run of a study's kind.
    fn run_text(&self) -> String {
        match self.run {
            Some((id, RunKind::Run | RunKind::Demo)) => format!("run {id}"),
            Some((id, kind)) => format!("run {id} ({kind})"),
            None => String::from("starting"),
        }
    }

    fn phase_text(&self) -> String {
        let run = self.run_text();
        let Some(p) = &self.phase else {
            return run;
        };
        let elapsed = p.started.elapsed().as_secs_f64();
        let progress = match (p.runtime, p.bytes) {
            (Some(total), _) => format!(
                "{} of {}, {} left",
                clock(elapsed),
                clock(total),
                clock((total - elapsed).max(0.0))
            ),
            (None, Some(total)) => format!(
                "{}, {} of {}, {} left",
                clock(elapsed),
                Size(p.bytes_done.min(total)).human(),
                Size(total).human(),
                Size(total.saturating_sub(p.bytes_done)).human()
            ),
            (None, None) => clock(elapsed),
        };
        let figures = match &p.figures {
            Some(f) => format!(
                "{} · {} IOPS · p99 {}",
                mib_per_sec(f.bytes_per_sec),
                thousands(f.iops.round() as u64),
                latency(f.p99_ns as f64)
            ),
            None if p.sampled => String::from("waiting for the first interval"),
            // A phase without samples (a metadata phase) shows its time alone.
            None => return format!("{run} [{}/{}] {} · {progress}", p.seq, p.phases, p.kind),
        };
        format!("{run} [{}/{}] {} · {progress} · {figures}", p.seq, p.phases, p.kind)
    }
}

/// Seconds as m:ss (h:mm:ss from an hour).
fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

impl storlab_session::IntervalObserver for StatusLine {
    fn interval(&self, _target: u16, _bytes: [u64; 2], _ops: [u64; 2], _latency_ns: &[storlab_engine::Recorded; 2]) {}

    fn sample(&self, s: &Sample) {
        let mut g = self.lock();
        let Some(p) = &mut g.phase else { return };
        p.bytes_done += s.bytes_read + s.bytes_written;
        let seconds = s.seconds();
        p.longest = p.longest.max(seconds);
        if seconds <= 0.0 || s.is_partial(p.longest) {
            return;
        }
        p.figures = Some(Figures {
            bytes_per_sec: (s.bytes_read + s.bytes_written) as f64 / seconds,
            iops: (s.ops_read + s.ops_written) as f64 / seconds,
            p99_ns: s.lat_p99_ns,
        });
    }
}

impl LiveRun for StatusLine {
    fn run_started(&self, run_id: i64, kind: RunKind) {
        let mut g = self.lock();
        g.run = Some((run_id, kind));
        g.phase = None;
    }

    fn phase_started(&self, p: &PhaseStart) {
        self.lock().phase = Some(PhaseNow {
            seq: p.seq,
            phases: p.phases,
            kind: p.kind.to_string(),
            started: Instant::now(),
            runtime: p.runtime_seconds,
            bytes: p.bytes,
            bytes_done: 0,
            sampled: p.sampled,
            longest: 0.0,
            figures: None,
        });
        self.redraw();
    }

    fn phase_ended(&self, _run_id: i64, seq: usize, result: Option<&PhaseResult>) {
        let line = {
            let mut g = self.lock();
            let Some(p) = g.phase.take() else { return };
            let outcome = match result {
                Some(r) if r.interrupted => String::from("interrupted"),
                Some(r) => mib_per_sec(r.all_done.bytes_per_sec),
                None => String::from("failed"),
            };
            format!("{} [{seq}/{}] {:<10} {outcome}", g.run_text(), p.phases, p.kind)
        };
        self.say(line);
        self.redraw();
    }

    fn study_event(&self, kind: &str, detail: &str) {
        let mut g = self.lock();
        match kind {
            "repetition-start" | "side-start" => g.stage = Some(detail.to_string()),
            "task-start" => g.task = Some((true, None)),
            "task-stopped" | "task-end" | "task-timeout" => g.task = Some((false, None)),
            _ => {}
        }
    }

    fn study_progress(&self, done: usize, total: usize, next: &str) {
        if done < total {
            self.lock().point = Some((done + 1, total, next.to_string()));
            self.say(format!("[{}/{total}] {next}", done + 1));
        }
    }

    fn task_progress(&self, _task: u32, percent: Option<f64>) {
        self.lock().task = Some((true, percent));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_read_as_a_person_reads_them() {
        assert_eq!(clock(0.4), "0:00");
        assert_eq!(clock(65.0), "1:05");
        assert_eq!(clock(3725.0), "1:02:05");
    }
}
