//! The qualification's sequential design judged by simulation (no I/O): thousands of simulated
//! qualifications, each repetition drawn from a known distribution with this machine's real
//! run-to-run spread, decided look by look exactly as `storlab qualify` decides them
//! (crates/stats/src/sequential.rs), against the truth the simulation knows.
//!
//! The spreads are stored runs of this machine (2 CPUs, a virtual disk), made with bench/spread
//! on 2026-11-25 (storlab 2e867e4, release build), 12 runs of 2 s each:
//! - tmpfs, 4 KiB random reads, psync, 1 worker: the engine's own cost (CV 5.3 %);
//! - ext4 on a loop device, O_DIRECT, io_uring at depth 16: the device (CV 5.6 %), and its p99
//!   latency (CV 26 %).
//!
//! Two shapes for each: normal with the runs' mean and sd, and the runs' own shape (their
//! kernel density estimate, a smoothed bootstrap: the t intervals assume normal data, and this
//! checks how much the real, skewed shape matters at these spreads). The threshold is put at a
//! known margin from the true mean (the shape's own mean).
//!
//! What is checked:
//! 1. Honest error rates: with the threshold at the true mean (the hardest case) and beyond it,
//!    PASS when the truth fails and FAIL when the truth passes each happen at most as often as
//!    the stated level (5 %), within three standard errors of the simulation; for normal data
//!    both together too (the intervals' coverage).
//! 2. Fewer repeats: where the design has the power to decide (≥ 90 % of qualifications pass),
//!    it uses fewer repetitions on average than the fixed number that a one-look t test needs
//!    for the same power at the same margin (where that is 3, the design's first look, it
//!    matches it to within a quarter of a repetition).
//!
//! `cargo test -p storlab-stats --test sequential_simulation -- --nocapture` prints the table
//! that docs/qualify.md quotes.

use storlab_stats::sequential::{calibrate, decide, fixed_power, interval, Decision, Direction, Normals};

/// IOPS of 4 KiB random reads on tmpfs, one per stored run.
const TMPFS_IOPS: [f64; 12] = [
    688414.4, 697579.8, 621209.6, 667072.7, 720073.6, 629303.6, 639318.3, 699437.7, 601071.2, 639755.5, 641366.4,
    659695.5,
];
/// IOPS of O_DIRECT 4 KiB random reads on ext4 on a loop device, one per stored run.
const LOOP_IOPS: [f64; 12] = [
    141589.0, 150969.9, 157720.4, 166458.8, 155605.9, 166261.0, 160256.6, 166470.4, 159894.0, 143898.9, 173202.2,
    162536.5,
];
/// Their p99 latency, µs.
const LOOP_P99_US: [f64; 12] = [
    321.0, 252.7, 181.2, 166.4, 254.0, 165.4, 190.8, 181.6, 200.3, 318.2, 149.1, 204.3,
];

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

/// How repetitions are drawn.
#[derive(Clone, Copy)]
enum Shape {
    /// Normal with the runs' mean and sd.
    Normal,
    /// The runs' own shape: one of them drawn at random, plus a normal jitter of Silverman's
    /// bandwidth (1.06 · sd · n^-1/5): the kernel density estimate of the runs (B. W.
    /// Silverman, Density Estimation, 1986, §3.4.2 and §6.4.1, the smoothed bootstrap). Drawn
    /// without the jitter, twelve values repeat themselves exactly, which no real run does, and
    /// a repetition of one value has no spread to be uncertain about.
    Resampled,
}

struct Outcome {
    pass: f64,
    fail: f64,
    mean_repeats: f64,
}

/// `qualifications` simulated qualifications of one criterion: repetitions drawn from `runs`
/// (as `shape` says), the threshold at `margin` (a fraction of the truth) on the passing side
/// of the truth when positive, decided as storlab qualify decides (a latency, at most, on the
/// logarithmic scale).
fn simulate(
    runs: &[f64],
    shape: Shape,
    direction: Direction,
    margin: f64,
    qualifications: usize,
    seed: u64,
) -> Outcome {
    let design = calibrate(0.95, 3, 10);
    // A latency (at most) is decided on the logarithmic scale, as storlab qualify decides it:
    // its shapes are the log runs' (log-normal, and the smoothed bootstrap of the logs), its
    // truth their mean (the geometric mean), its margin a factor.
    let log = direction == Direction::AtMost;
    let runs: Vec<f64> = runs.iter().map(|v| if log { v.ln() } else { *v }).collect();
    let (mean, sd) = mean_sd(&runs);
    let mut g = Normals::new(seed);
    let h = 1.06 * sd * (runs.len() as f64).powf(-0.2);
    let draw = |g: &mut Normals| match shape {
        Shape::Normal => mean + sd * g.draw(),
        Shape::Resampled => runs[((g.uniform() * runs.len() as f64) as usize).min(runs.len() - 1)] + h * g.draw(),
    };
    let threshold = match (direction, log) {
        (Direction::AtLeast, _) => mean * (1.0 - margin),
        (Direction::AtMost, true) => mean + (1.0 + margin).ln(),
        (Direction::AtMost, false) => mean * (1.0 + margin),
    };
    let (mut pass, mut fail, mut repeats) = (0usize, 0usize, 0usize);
    for _ in 0..qualifications {
        let mut values = Vec::new();
        let mut decision = Decision::Undecided;
        while values.len() < design.max_repeats as usize {
            values.push(draw(&mut g));
            if let Some(iv) = interval(&design, &values) {
                decision = decide(iv, threshold, direction);
                if decision != Decision::Undecided {
                    break;
                }
            }
        }
        repeats += values.len();
        match decision {
            Decision::Pass => pass += 1,
            Decision::Fail => fail += 1,
            Decision::Undecided => {}
        }
    }
    let q = qualifications as f64;
    Outcome {
        pass: pass as f64 / q,
        fail: fail as f64 / q,
        mean_repeats: repeats as f64 / q,
    }
}

/// Three standard errors of a simulated rate near `p`.
fn tolerance(p: f64, n: usize) -> f64 {
    3.0 * (p * (1.0 - p) / n as f64).sqrt()
}

#[test]
fn false_verdicts_stay_under_the_stated_level() {
    let level = 0.05;
    let n = 20_000;
    let sources: [(&str, &[f64], Direction); 3] = [
        ("tmpfs IOPS", &TMPFS_IOPS, Direction::AtLeast),
        ("loop O_DIRECT IOPS", &LOOP_IOPS, Direction::AtLeast),
        ("loop O_DIRECT p99", &LOOP_P99_US, Direction::AtMost),
    ];
    eprintln!("source | shape | threshold vs truth | P(PASS) | P(FAIL) | mean repeats");
    for (seed, (name, runs, dir)) in sources.iter().enumerate() {
        for (k, shape) in [Shape::Normal, Shape::Resampled].into_iter().enumerate() {
            let shape_name = ["normal", "resampled"][k];
            // At the truth: either verdict is wrong.
            let o = simulate(runs, shape, *dir, 0.0, n, 1000 + seed as u64 * 10 + k as u64);
            eprintln!(
                "{name} | {shape_name} | at the mean | {:.4} | {:.4} | {:.2}",
                o.pass, o.fail, o.mean_repeats
            );
            assert!(
                o.pass <= level + tolerance(level, n),
                "{name} {shape_name}: false PASS {}",
                o.pass
            );
            assert!(
                o.fail <= level + tolerance(level, n),
                "{name} {shape_name}: false FAIL {}",
                o.fail
            );
            // The intervals' coverage is exact for normal data; with the runs' own skewed shape
            // it is a little under (docs/qualify.md gives the figures), while each verdict's
            // error above stays under the level.
            if matches!(shape, Shape::Normal) {
                assert!(
                    o.pass + o.fail <= level + tolerance(level, n),
                    "{name} {shape_name}: the intervals missed the truth {} of the time",
                    o.pass + o.fail
                );
            }
            // The truth 2 % on the failing side: a PASS is wrong; on the passing side a FAIL is.
            let worse = simulate(runs, shape, *dir, -0.02, n, 2000 + seed as u64 * 10 + k as u64);
            let better = simulate(runs, shape, *dir, 0.02, n, 3000 + seed as u64 * 10 + k as u64);
            eprintln!(
                "{name} | {shape_name} | truth 2 % worse | {:.4} | {:.4} | {:.2}",
                worse.pass, worse.fail, worse.mean_repeats
            );
            eprintln!(
                "{name} | {shape_name} | truth 2 % better | {:.4} | {:.4} | {:.2}",
                better.pass, better.fail, better.mean_repeats
            );
            assert!(worse.pass <= level + tolerance(level, n), "{name}: {}", worse.pass);
            assert!(better.fail <= level + tolerance(level, n), "{name}: {}", better.fail);
        }
    }
}

#[test]
fn where_it_can_decide_it_needs_fewer_repeats_than_a_fixed_test_of_the_same_power() {
    let n = 4000;
    let mut compared = 0;
    eprintln!("source | truth better by | P(PASS) | mean repeats | fixed repeats, same power");
    for (seed, (name, runs, dir)) in [
        ("tmpfs IOPS", &TMPFS_IOPS[..], Direction::AtLeast),
        ("loop O_DIRECT IOPS", &LOOP_IOPS[..], Direction::AtLeast),
        ("loop O_DIRECT p99", &LOOP_P99_US[..], Direction::AtMost),
    ]
    .into_iter()
    .enumerate()
    {
        // The spread in the scale the criterion is decided on (logs for a latency).
        let logs: Vec<f64> = runs.iter().map(|v| v.ln()).collect();
        let cv = match dir {
            Direction::AtLeast => {
                let (mean, sd) = mean_sd(runs);
                sd / mean
            }
            Direction::AtMost => mean_sd(&logs).1,
        };
        for margin in [0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5] {
            let o = simulate(
                runs,
                Shape::Normal,
                dir,
                margin,
                n,
                5000 + seed as u64 * 100 + (margin * 100.0) as u64,
            );
            // The fixed number of repeats whose one-look t test (two-sided 5 %) has at least
            // this power at the same distance (in sds) from the threshold, the power capped at
            // 99 % (a simulated 100 % is reached by no finite fixed test's estimate).
            let delta = match dir {
                Direction::AtLeast => margin / cv,
                Direction::AtMost => (1.0f64 + margin).ln() / cv,
            };
            let want = o.pass.min(0.99);
            let fixed = (3..200)
                .find(|k| fixed_power(*k, 0.05, delta, 20_000, 7 + *k as u64) >= want)
                .unwrap_or(200);
            eprintln!(
                "{name} | {:.0} % ({delta:.2} sd) | {:.3} | {:.2} | {fixed}",
                margin * 100.0,
                o.pass,
                o.mean_repeats
            );
            if o.pass >= 0.9 {
                compared += 1;
                if fixed > 3 {
                    assert!(
                        o.mean_repeats < fixed as f64,
                        "{name} at {margin}: {} repetitions on average against {fixed} fixed",
                        o.mean_repeats
                    );
                } else {
                    // Where three repetitions already decide, the design's first look is at three
                    // too: it can only match them (a few sequences undecided there go on).
                    assert!(o.mean_repeats < 3.25, "{name} at {margin}: {}", o.mean_repeats);
                }
            }
        }
    }
    assert!(compared >= 6, "the design decided in too few of the cases to compare");
}
