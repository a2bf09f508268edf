//! `storlab risk`'s question from what the user gave: rates and durations as written, the
//! rebuild's times from a stored study, given times or a capacity at a speed, and the verify
//! interval from a schedule's pool or as given. Every refusal names the flag it is about.

use std::path::PathBuf;

use storlab_model::study::StudyParams;
use storlab_store::{Store, StoreError};
use storlab_units::human_hours as hh;

use crate::risk::{parse_rate, Params, Question, Raid, Scheduling, YEAR_HOURS};
use crate::schedule::Schedule;
use crate::SchedError;

/// What `storlab risk` was given, as the user wrote it: its flags, declared here once (the
/// binary flattens them into its command line).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RiskInputs {
    /// RAID level: 1, 5, 6, 10, or draid1:P, draid2:P, draid3:P (distributed parity whose
    /// rebuild runs P times faster than onto one spare).
    #[arg(long, default_value = "6")]
    pub raid: String,
    /// Drives per array.
    #[arg(long)]
    pub drives: u32,
    /// A drive's capacity (16TB, 18TiB): with --rebuild-speed, the rebuild's time when none is
    /// given.
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    /// Drive failures: a share per period (0.1%/month is seed 003's one per 1,000 drives a
    /// month; 1.2%/year), or --mttf.
    #[arg(long, value_name = "RATE", default_value = "0.1%/month")]
    pub failure_rate: String,
    /// A drive's mean time to failure instead of --failure-rate (1000000h).
    #[arg(long, value_name = "DURATION")]
    pub mttf: Option<String>,
    /// Latent sector errors appearing, a share of drives per period (default 1.29%/year:
    /// Bairavasundaram et al., SIGMETRICS 2007, 3.45 % of nearline drives in 32 months).
    #[arg(long, value_name = "RATE", default_value = "1.29%/year")]
    pub latent_rate: String,
    /// The rebuild's duration with the array idle.
    #[arg(long, value_name = "DURATION")]
    pub rebuild: Option<String>,
    /// The rebuild's duration under the users' load.
    #[arg(long, value_name = "DURATION")]
    pub rebuild_loaded: Option<String>,
    /// Take the rebuild's times from a stored study of the rebuild's task: storlab impact
    /// --reverse gives both (idle and loaded); storlab impact --held the time under the held
    /// load (the idle time from --rebuild, else the same).
    #[arg(long, value_name = "ID", conflicts_with = "rebuild_loaded")]
    pub rebuild_study: Option<i64>,
    /// With --capacity and no rebuild time: the rebuild's speed.
    #[arg(long, value_name = "RATE", default_value = "100MiB/s")]
    pub rebuild_speed: String,
    /// Time from one verify of an array to its next, or `never`.
    #[arg(long, value_name = "DURATION|never")]
    pub verify_interval: Option<String>,
    /// A verify's duration (a latent error waits half an interval and half a verify).
    #[arg(long, value_name = "DURATION")]
    pub verify_duration: Option<String>,
    /// A schedule file: the interval follows from its pool's k, servers, task duration under
    /// load, windows and `every`; the figures are also given for every k.
    #[arg(long, value_name = "FILE", requires = "pool")]
    pub schedule: Option<PathBuf>,
    /// The schedule's pool (its servers are the arrays).
    #[arg(long, requires = "schedule")]
    pub pool: Option<String>,
    /// Arrays in the fleet.
    #[arg(long, default_value_t = 1)]
    pub arrays: u32,
    /// The horizon of the chances, years.
    #[arg(long, default_value_t = 1.0)]
    pub years: f64,
    /// Check the solution with N simulated paths of the same chain (slow for realistic rates:
    /// each path runs until data are lost).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub monte_carlo: u64,
    /// The simulation's seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Opens the results database when the question needs a stored study.
pub type OpenStore<'a> = &'a dyn Fn() -> Result<Store, StoreError>;

fn input(msg: String) -> SchedError {
    SchedError::Input(msg)
}

/// A duration above 0, refused with the flag named.
pub(crate) fn duration(flag: &str, v: &str) -> Result<std::time::Duration, SchedError> {
    let d: storlab_units::Duration = v.parse().map_err(|e| input(format!("{flag} {v}: {e}")))?;
    if d.0 == 0 {
        return Err(input(format!("{flag} {v}: a duration above 0, e.g. 5s")));
    }
    Ok(d.std())
}

/// A duration above 0, in hours.
fn hours(flag: &str, v: &str) -> Result<f64, SchedError> {
    Ok(duration(flag, v)?.as_secs_f64() / 3600.0)
}

/// A share per period as a rate per hour, refused with the flag named.
fn rate_per_hour(flag: &str, v: &str) -> Result<f64, SchedError> {
    parse_rate(v).map_err(|e| input(format!("{flag} {v}: {e}")))
}

/// The rebuild's time idle and under load, hours, and where they come from in words.
type Rebuild = (f64, Option<f64>, String);

/// The verify: its interval (None: never), its duration, hours, where they come from in words,
/// and the scheduler's side when a schedule's pool gave them.
type Verify = (Option<f64>, f64, String, Option<Scheduling>);

/// The question `i` asks; `open` is called only when a stored study is named.
pub fn question(i: &RiskInputs, open: OpenStore) -> Result<Question, SchedError> {
    let raid = Raid::parse(&i.raid).map_err(|e| input(format!("--raid: {e}")))?;
    let failure_rate = match &i.mttf {
        Some(m) => 1.0 / hours("--mttf", m)?,
        None => rate_per_hour("--failure-rate", &i.failure_rate)?,
    };
    let latent_rate = rate_per_hour("--latent-rate", &i.latent_rate)?;
    let capacity = i
        .capacity
        .as_deref()
        .map(|c| {
            c.parse::<storlab_units::Size>()
                .map(|s| s.0)
                .map_err(|e| input(format!("--capacity {c}: {e}")))
        })
        .transpose()?;
    let (rebuild, rebuild_loaded, rebuild_source) = rebuild(i, capacity, open)?;
    let (verify_interval, verify_hours, verify_source, scheduling) = verify(i, open)?;
    if !(i.years.is_finite() && i.years > 0.0) {
        return Err(input(format!("--years {}: a horizon above 0", i.years)));
    }
    Ok(Question {
        params: Params {
            raid,
            drives: i.drives,
            failure_rate,
            latent_rate,
            rebuild_hours: rebuild,
            verify_interval,
            verify_hours,
        },
        rebuild_loaded,
        arrays: i.arrays,
        hours: i.years * YEAR_HOURS,
        capacity,
        rebuild_source,
        verify_source,
        scheduling,
        simulate: (i.monte_carlo, i.seed),
    })
}

/// The rebuild: a stored study, given times, or the capacity at a speed.
fn rebuild(i: &RiskInputs, capacity: Option<u64>, open: OpenStore) -> Result<Rebuild, SchedError> {
    let loaded_given = || {
        i.rebuild_loaded
            .as_deref()
            .map(|l| hours("--rebuild-loaded", l))
            .transpose()
    };
    if let Some(id) = i.rebuild_study {
        return rebuild_of_study(i, id, open);
    }
    if let Some(r) = &i.rebuild {
        let idle = hours("--rebuild", r)?;
        let loaded = loaded_given()?;
        let words = match loaded {
            Some(l) => format!("given: {} idle, {} under load", hh(idle), hh(l)),
            None => format!("given: {}", hh(idle)),
        };
        return Ok((idle, loaded, words));
    }
    let Some(c) = capacity else {
        return Err(input(
            "the rebuild's time: give --rebuild DURATION (and --rebuild-loaded), --rebuild-study ID, or --capacity SIZE (at --rebuild-speed)".into(),
        ));
    };
    let speed = match i.rebuild_speed.parse::<storlab_units::Rate>() {
        Ok(storlab_units::Rate::BytesPerSec(b)) => b,
        _ => {
            return Err(input(format!(
                "--rebuild-speed {}: bytes per second such as 100MiB/s",
                i.rebuild_speed
            )))
        }
    };
    let idle = c as f64 / speed / 3600.0;
    Ok((
        idle,
        loaded_given()?,
        format!("the capacity at {}: {idle:.2} h", i.rebuild_speed),
    ))
}

/// The rebuild's times from study `id`: a cost-to-the-task study gives both, a held study the
/// time under the held load of its rebuild-like task.
fn rebuild_of_study(i: &RiskInputs, id: i64, open: OpenStore) -> Result<Rebuild, SchedError> {
    let store = open()?;
    let study = store
        .study(id)?
        .ok_or_else(|| input(format!("--rebuild-study {id}: no such study")))?;
    match &study.params {
        StudyParams::ImpactReverse(p) => {
            if i.rebuild.is_some() {
                return Err(input(format!(
                    "--rebuild with --rebuild-study {id}: the study gives the rebuild's time idle and under load; give one or the other"
                )));
            }
            let (idle, loaded) = (p.idle_seconds / 3600.0, p.loaded_seconds / 3600.0);
            let words = format!(
                "study {id} ({}): {} idle, {} under load",
                p.task_description,
                hh(idle),
                hh(loaded)
            );
            Ok((idle, Some(loaded), words))
        }
        StudyParams::ImpactHeld(p) => {
            let done: Vec<(&str, f64)> = p
                .spans
                .iter()
                .filter_map(|s| Some((s.task.as_str(), s.end? - s.start)))
                .collect();
            let (task, secs) = rebuild_like(&done)
                .ok_or_else(|| input(format!("--rebuild-study {id}: no task of the held study ran to its end")))?;
            let loaded = secs / 3600.0;
            let (idle, words) = match &i.rebuild {
                Some(r) => {
                    let idle = hours("--rebuild", r)?;
                    (idle, format!("{} idle (given), {} under the held load (study {id}, {task})", hh(idle), hh(loaded)))
                }
                None => (loaded, format!("{} under the held load (study {id}, {task}); idle not measured, taken as the same", hh(loaded))),
            };
            Ok((idle, Some(loaded), words))
        }
        _ => Err(input(format!(
            "--rebuild-study {id}: a {} study; the rebuild's times come from a study of the rebuild's task (storlab impact --reverse --task …, or --held)",
            study.kind()
        ))),
    }
}

/// The rebuild among the tasks a held study ran to their end: a replace or an md repair/check
/// if there is one, else the longest.
fn rebuild_like<'a>(done: &[(&'a str, f64)]) -> Option<(&'a str, f64)> {
    let like = |t: &str| t.contains("replace") || t.starts_with("md ");
    done.iter()
        .max_by(|a, b| {
            (like(a.0), a.1)
                .partial_cmp(&(like(b.0), b.1))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .copied()
}

/// The verify: a schedule's pool, or a given interval.
fn verify(i: &RiskInputs, open: OpenStore) -> Result<Verify, SchedError> {
    if let (Some(file), Some(pool)) = (&i.schedule, &i.pool) {
        return verify_of_pool(file, pool, open);
    }
    let d = i
        .verify_duration
        .as_deref()
        .map(|d| hours("--verify-duration", d))
        .transpose()?
        .unwrap_or(0.0);
    Ok(match i.verify_interval.as_deref() {
        None | Some("never") => (
            None,
            d,
            "never verified (give --verify-interval or --schedule and --pool)".to_string(),
            None,
        ),
        Some(v) => {
            let h = hours("--verify-interval", v)?;
            (Some(h), d, format!("every {}, a verify of {}", hh(h), hh(d)), None)
        }
    })
}

/// The verify interval of `pool` in the schedule `file`: a round of its servers k at a time
/// within its windows, or its `every` when longer.
fn verify_of_pool(file: &std::path::Path, pool: &str, open: OpenStore) -> Result<Verify, SchedError> {
    let schedule = Schedule::read(file)?.with_studies(open)?;
    let p = schedule.pools.iter().find(|p| p.name == pool).ok_or_else(|| {
        let names: Vec<&str> = schedule.pools.iter().map(|p| p.name.as_str()).collect();
        input(format!(
            "--pool {pool}: {} has no such pool (its pools: {})",
            file.display(),
            names.join(", ")
        ))
    })?;
    let plan = crate::plan::pool_plan(p);
    let d = p.duration_loaded.or(p.duration).ok_or_else(|| {
        input(format!(
            "--pool {pool}: the schedule gives the pool no duration; the interval follows from a verify's duration (duration_loaded = \"9h\")"
        ))
    })? / 3600.0;
    let s = Scheduling {
        servers: plan.servers,
        cost: p.cost,
        budget: p.budget,
        verify_hours: d,
        every: p.every.map(|e| e / 3600.0),
        open: plan.window_hours / 168.0,
    };
    let interval = s.interval(plan.k);
    let words = format!(
        "pool {pool} of {}: {} servers, k = {}, a verify {} under load, windows open {:.0} h a week{}: every {}",
        file.display(),
        plan.servers,
        plan.k,
        hh(d),
        plan.window_hours,
        p.every
            .map(|e| format!(", due every {:.0} days", e / 86400.0))
            .unwrap_or_default(),
        hh(interval)
    );
    Ok((Some(interval), d, words, Some(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_store() -> Result<Store, StoreError> {
        panic!("no stored study was named: the database must not be opened")
    }

    fn given() -> RiskInputs {
        RiskInputs {
            raid: "6".into(),
            drives: 12,
            failure_rate: "0.1%/month".into(),
            latent_rate: "1.29%/year".into(),
            rebuild_speed: "100MiB/s".into(),
            arrays: 1,
            years: 1.0,
            seed: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_capacity_at_a_speed_gives_the_rebuild_and_the_rates_are_per_hour() {
        let q = question(
            &RiskInputs {
                capacity: Some("16TB".into()),
                ..given()
            },
            &no_store,
        )
        .unwrap();
        // 16e12 bytes at 100 MiB/s.
        let want = 16e12 / (100.0 * 1048576.0) / 3600.0;
        assert!(
            (q.params.rebuild_hours - want).abs() < 1e-9,
            "{}",
            q.params.rebuild_hours
        );
        assert!((q.params.failure_rate - 0.001 / (YEAR_HOURS / 12.0)).abs() < 1e-15);
        assert_eq!(q.params.verify_interval, None);
        assert!(q.verify_source.starts_with("never verified"));
        assert!((q.hours - YEAR_HOURS).abs() < 1e-9);
    }

    #[test]
    fn given_times_win_and_an_mttf_replaces_the_rate() {
        let q = question(
            &RiskInputs {
                rebuild: Some("36h".into()),
                rebuild_loaded: Some("48h".into()),
                mttf: Some("1000000h".into()),
                verify_interval: Some("30d".into()),
                verify_duration: Some("9h".into()),
                ..given()
            },
            &no_store,
        )
        .unwrap();
        assert_eq!(q.params.rebuild_hours, 36.0);
        assert_eq!(q.rebuild_loaded, Some(48.0));
        assert_eq!(q.params.failure_rate, 1e-6);
        assert_eq!(q.params.verify_interval, Some(720.0));
        assert_eq!(q.params.verify_hours, 9.0);
        assert_eq!(q.rebuild_source, "given: 36.0 h idle, 48.0 h under load");
    }

    #[test]
    fn refusals_name_the_flag() {
        let err = |i: RiskInputs| question(&i, &no_store).unwrap_err().to_string();
        assert!(err(given()).starts_with("the rebuild's time: give --rebuild"));
        let e = err(RiskInputs {
            rebuild: Some("0s".into()),
            ..given()
        });
        assert_eq!(e, "--rebuild 0s: a duration above 0, e.g. 5s");
        let e = err(RiskInputs {
            capacity: Some("16TB".into()),
            rebuild_speed: "fast".into(),
            ..given()
        });
        assert_eq!(e, "--rebuild-speed fast: bytes per second such as 100MiB/s");
        let e = err(RiskInputs {
            rebuild: Some("1h".into()),
            years: 0.0,
            ..given()
        });
        assert_eq!(e, "--years 0: a horizon above 0");
    }

    #[test]
    fn a_held_study_takes_the_rebuild_like_task_over_a_longer_one() {
        let done = [("btrfs scrub /mnt", 9000.0), ("btrfs replace /mnt 2", 3600.0)];
        assert_eq!(rebuild_like(&done), Some(("btrfs replace /mnt 2", 3600.0)));
        let done = [("cmd a", 10.0), ("cmd b", 20.0)];
        assert_eq!(rebuild_like(&done), Some(("cmd b", 20.0)));
        assert_eq!(rebuild_like(&[]), None);
    }
}
