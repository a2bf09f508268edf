//! How long and how fast a job runs: its time (runtime, time_based, ramp_time, startdelay,
//! loops, exitall), its rate and minimum rate, think time, flows, number_ios, the
//! latency-target search, and steady state.

use storlab_model::plan::PhaseKind;
use storlab_model::settings::{RatePer, RateProcess};
use storlab_units::{Duration, Rate};

use super::super::bad;
use super::super::value::{self, TimeBase};
use super::{micros, set, Conversion, Opts};
use crate::WorkloadError;

/// fio's runtime with time_based runs for the time; without, it cuts the pass short.
pub(crate) fn time(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let runtime = j.time_us("runtime", TimeBase::Seconds)?.filter(|t| *t > 0);
    let time_based = j.on("time_based")?;
    match (runtime, time_based) {
        (Some(r), true) => set!(cx, "time_based", runtime = micros(r))?,
        (Some(r), false) => set!(cx, "runtime", timeout = micros(r))?,
        (None, true) => {
            return Err(bad(
                &j.at("time_based"),
                "time_based without runtime: give runtime=SECONDS",
            ))
        }
        (None, false) => {}
    }
    if let Some(r) = j.time_us("ramp_time", TimeBase::Seconds)?.filter(|t| *t > 0) {
        set!(cx, "ramp_time", ramp = micros(r))?;
    }
    if let Some(d) = j.time_us("startdelay", TimeBase::Seconds)?.filter(|d| *d > 0) {
        set!(cx, "startdelay", start_delay = micros(d))?;
    }
    if j.on("exitall")? {
        set!(cx, "exitall", exitall = true)?;
    }
    let loops = j.int("loops")?.unwrap_or(1);
    if loops > 1 {
        if runtime.is_some() && time_based {
            cx.note(format!(
                "loops={loops} with time_based: the time ends the job, as in fio"
            ));
        } else {
            let n = u32::try_from(loops).map_err(|_| j.refuse("loops", "too many passes"))?;
            set!(cx, "loops", loops = n)?;
        }
    }
    Ok(())
}

/// Of a rate given as fio's `READ,WRITE,TRIM`, the one for a phase of `kind`: a mixed phase
/// takes one only when reads and writes are given the same. `what` names the figure in the
/// refusal ("target rate", "minimum").
fn rate_for<'t>(
    j: Opts,
    key: &str,
    text: &'t str,
    kind: PhaseKind,
    what: &str,
) -> Result<Option<&'t str>, WorkloadError> {
    let t = value::triple(text);
    match (kind.reads(), kind.writes()) {
        (true, false) => Ok(t[0]),
        (false, true) => Ok(t[1]),
        _ if t[0] == t[1] => Ok(t[0]),
        _ => Err(j.refuse(
            key,
            format!("separate read and write {what}s in one mixed job: storlab keeps one {what} per phase"),
        )),
    }
}

/// One of two exclusive options (fio's bytes/s and IOPS forms of a rate): which was given
/// and its value.
fn one_of<'t>(
    j: Opts<'t>,
    bytes_key: &'static str,
    iops_key: &'static str,
    what: &str,
) -> Result<Option<(&'static str, &'t str)>, WorkloadError> {
    match (j.val(bytes_key), j.val(iops_key)) {
        (Some(_), Some(_)) => Err(j.refuse(
            iops_key,
            format!("{bytes_key} and {iops_key} together: storlab keeps one {what}"),
        )),
        (Some(r), None) => Ok(Some((bytes_key, r))),
        (None, Some(r)) => Ok(Some((iops_key, r))),
        (None, None) => Ok(None),
    }
}

/// A rate option's value (bytes/s for `bytes_key`, IOPS otherwise) as storlab's rate.
fn rate_value(j: Opts, key: &str, bytes_key: &str, v: &str) -> Result<Rate, WorkloadError> {
    let n = j.bytes(key, v)?;
    Ok(if key == bytes_key {
        Rate::BytesPerSec(n as f64)
    } else {
        Rate::Iops(n as f64)
    })
}

/// Rates, per job as fio's are.
pub(crate) fn rate(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some((key, r)) = one_of(j, "rate", "rate_iops", "target rate")? else {
        return Ok(());
    };
    if let Some(v) = rate_for(j, key, r, cx.kind, "target rate")? {
        let rate = rate_value(j, key, "rate", v)?;
        set!(cx, key, rate = rate, rate_per = RatePer::Worker)?;
    }
    match j.val("rate_process") {
        None | Some("linear") => Ok(()),
        Some("poisson") => set!(cx, "rate_process", rate_process = RateProcess::Poisson),
        Some(p) => Err(j.refuse(
            "rate_process",
            format!("'{p}': fio's rate_process is linear or poisson"),
        )),
    }
}

/// fio's rate_min and rate_iops_min, judged over rate_cycle (storlab's sample interval).
pub(crate) fn rate_min(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some((key, r)) = one_of(j, "rate_min", "rate_iops_min", "minimum")? else {
        return Ok(());
    };
    let Some(v) = rate_for(j, key, r, cx.kind, "minimum")? else {
        return Ok(());
    };
    if j.bytes(key, v)? == 0 {
        return Ok(());
    }
    let min = rate_value(j, key, "rate_min", v)?;
    set!(cx, key, rate_min = min)?;
    let cycle = j.int("rate_cycle")?.filter(|c| *c >= 10);
    cx.note(format!(
        "{key}: a worker under it, judged at its completions over spans of a sample interval ({}) or more, fails the job, as fio judges over rate_cycle",
        cycle.map_or("1 s".to_string(), |c| format!("{c} ms, rate_cycle"))
    ));
    if let Some(c) = cycle {
        set!(cx, "rate_cycle", interval = Duration(c * 1_000_000))?;
    }
    Ok(())
}

/// Steady state: the job ends once its throughput is steady over the window, judged on the
/// samples (so the check interval is the sample interval).
pub(crate) fn steady(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some(c) = j.val("steadystate") else { return Ok(()) };
    let dur = j.time_us("steadystate_duration", TimeBase::Seconds)?.unwrap_or(0);
    if dur == 0 {
        return Err(j.refuse(
            "steadystate",
            "a criterion without ss_dur: give the window to judge (ss_dur=30s)",
        ));
    }
    let criterion = storlab_model::settings::read_steady(c).map_err(|e| j.refuse("steadystate", e))?;
    set!(cx, "steadystate", steady = criterion)?;
    set!(cx, "steadystate_duration", steady_window = micros(dur))?;
    if let Some(r) = j
        .time_us("steadystate_ramp_time", TimeBase::Seconds)?
        .filter(|r| *r > 0)
    {
        set!(cx, "steadystate_ramp_time", steady_ramp = micros(r))?;
    }
    // storlab judges steady state on its samples: the check interval is the sample interval,
    // refused by name where a rate_cycle or log_avg_msec sets another.
    let every = j
        .time_us("steadystate_check_interval", TimeBase::Seconds)?
        .unwrap_or(1_000_000);
    set!(cx, "steadystate_check_interval", interval = micros(every))
}

/// fio's latency_target: the deepest queue that meets it.
pub(crate) fn latency_target(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some(t) = j.time_us("latency_target", TimeBase::Micros)?.filter(|t| *t > 0) else {
        return Ok(());
    };
    set!(cx, "latency_target", latency_target = micros(t))?;
    if let Some(w) = j.time_us("latency_window", TimeBase::Micros)?.filter(|w| *w > 0) {
        set!(cx, "latency_window", latency_window = micros(w))?;
    }
    if let Some(p) = j.val("latency_percentile") {
        let v: f64 = p
            .trim()
            .parse()
            .map_err(|_| j.refuse("latency_percentile", format!("'{p}' is not a percentage")))?;
        set!(cx, "latency_percentile", latency_percentile = v)?;
    }
    if j.on("latency_run")? {
        set!(cx, "latency_run", latency_run = true)?;
    }
    Ok(())
}

/// fio's flow: the job's share of the I/O among the jobs of its flow_id.
pub(crate) fn flow(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some(w) = j.int("flow")?.filter(|w| *w > 0) else {
        return Ok(());
    };
    let as_u32 = |k: &str, v: u64| u32::try_from(v).map_err(|_| j.refuse(k, "too large"));
    set!(cx, "flow", flow = as_u32("flow", w)?)?;
    if let Some(id) = j.int("flow_id")?.filter(|i| *i > 0) {
        set!(cx, "flow_id", flow_id = as_u32("flow_id", id)?)?;
    }
    if let Some(n) = j.time_us("flow_sleep", TimeBase::Micros)?.filter(|n| *n > 0) {
        set!(cx, "flow_sleep", flow_sleep = micros(n))?;
    }
    Ok(())
}

/// fio's thinktime: a pause after every thinktime_blocks I/Os, its thinktime_spin part spun.
pub(crate) fn think(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some(t) = j.time_us("thinktime", TimeBase::Micros)?.filter(|t| *t > 0) else {
        return Ok(());
    };
    set!(cx, "thinktime", think = micros(t))?;
    if let Some(sp) = j.time_us("thinktime_spin", TimeBase::Micros)?.filter(|t| *t > 0) {
        set!(cx, "thinktime_spin", think_spin = micros(sp))?;
    }
    if let Some(b) = j.int("thinktime_blocks")?.filter(|b| *b > 1) {
        let b = u32::try_from(b).map_err(|_| j.refuse("thinktime_blocks", "too large"))?;
        set!(cx, "thinktime_blocks", think_blocks = b)?;
    }
    Ok(())
}

/// fio's number_ios: each worker ends after this many I/Os.
pub(crate) fn ios(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    match j.int("number_ios")?.filter(|n| *n > 0) {
        Some(n) => set!(cx, "number_ios", ios = n),
        None => Ok(()),
    }
}
