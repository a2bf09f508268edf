//! What bounded a phase: the device, the CPU running the benchmark, the page cache, a rate
//! (asked for, or a cgroup's I/O limit), the queue depth the benchmark gave, the network, more
//! than one of them, or — where the evidence does not say — unknown, with why.
//!
//! The rule is Brendan Gregg's USE method ("Thinking Methodically about Performance", ACM Queue
//! 10(12), 2012): for each resource its utilisation (the share of the time it was busy) and its
//! saturation (work waiting for it), read from the evidence each phase keeps —
//!
//! - the devices under the targets and beneath them: busy time (diskstats' io_ticks over the
//!   phase: utilisation) and the average queue (weighted ms over the phase: saturation when above
//!   one), await (ms per I/O in the device) against the phase's own latency;
//! - the CPUs: the workers' own thread time against the CPUs they could use, and all CPUs' busy
//!   time (/proc/stat);
//! - the queue: Little's law, in flight = IOPS × mean latency, against what the benchmark offered
//!   (workers × iodepth) — a full queue with a device that was not queueing is the benchmark's
//!   own limit;
//! - the page cache: bytes the devices moved against bytes the workers moved;
//! - a rate: the one asked for and the one held; a cgroup's limit on a device.
//!
//! A resource is the bound when it is utilised at 80 % or more (and, for a device, saturated);
//! two at once are `mixed`; none, or evidence missing, is `unknown` with what was read and not
//! found. Never a guess dressed as a finding: every reading names its figures.

use serde::{Deserialize, Serialize};
use storlab_model::env::Environment;
use storlab_model::plan::PhasePlan;
use storlab_model::result::{DiskUtil, PhaseResult, RateUnit};
use storlab_model::run::Phase;

/// Utilisation at or above which a resource is busy enough to be the bound.
pub const BUSY: f64 = 0.8;

/// A device's average queue above which I/Os waited in it: saturation.
pub const QUEUED: f64 = 1.5;

/// True when a device busy `util` (0 to 1) of an interval with `queue` I/Os in it on average
/// was saturated: busy and queueing (the monitor's and the data challenge's rule per interval).
pub fn device_saturated(util: f64, queue: f64) -> bool {
    util >= BUSY && queue >= QUEUED
}

/// What bounded a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundKind {
    /// A device was busy and I/Os queued in it.
    Device,
    /// The CPUs running the benchmark were busy.
    Cpu,
    /// A rate held it: the one asked for, or a cgroup's limit on the device.
    Rate,
    /// The page cache served what the devices did not see.
    Cache,
    /// The benchmark's own queue was full while the device was not queueing.
    Iodepth,
    /// A network filesystem's round trips.
    Network,
    /// More than one of the above at once.
    Mixed,
    /// The evidence does not say.
    Unknown,
}

impl BoundKind {
    /// The word a table shows.
    pub fn name(self) -> &'static str {
        match self {
            BoundKind::Device => "device",
            BoundKind::Cpu => "cpu",
            BoundKind::Rate => "rate",
            BoundKind::Cache => "cache",
            BoundKind::Iodepth => "iodepth",
            BoundKind::Network => "network",
            BoundKind::Mixed => "mixed",
            BoundKind::Unknown => "unknown",
        }
    }
}

/// One figure read as evidence, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What it is ("vda busy", "workers' CPU", "in flight (Little's law)").
    pub figure: String,
    /// Its value.
    pub value: f64,
    /// Its unit ("%", "I/Os", "ms", "IOPS", "B/s").
    pub unit: String,
    /// Where it was read.
    pub source: String,
}

/// What bounded a phase: its kind, the figures read, and a line saying so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// The kind.
    pub kind: BoundKind,
    /// The evidence.
    pub evidence: Vec<Evidence>,
    /// One line: what bounded it and the figures that say so.
    pub reading: String,
}

/// What the evidence says of one resource: a finding and its line.
struct Finding {
    kind: BoundKind,
    line: String,
}

/// The facts of a phase the rule reads, gathered from its plan (or an import's parameters),
/// its result and the environment.
struct Facts<'a> {
    r: &'a PhaseResult,
    plan: Option<&'a PhasePlan>,
    secs: f64,
    workers: u64,
    cpus: u64,
    fs: Vec<&'a str>,
}

/// The bound of `phase` of a run on `env`.
pub fn of(phase: &Phase, env: &Environment) -> Bound {
    let r = &phase.result;
    let plan = phase.plan();
    let workers = plan.map_or(r.workers.len() as u64, |p| p.workers.len() as u64).max(1);
    let f = Facts {
        r,
        plan,
        secs: r.all_done.seconds,
        workers,
        cpus: r.context.as_ref().map_or(env.cpus, |c| c.cpus).max(1) as u64,
        fs: env.targets.iter().map(|t| t.fs_type.as_str()).collect(),
    };
    let imported = matches!(phase.params, storlab_model::run::PhaseParams::Imported(_));
    // An import may carry rates but no counts or time (mdtest's summary is rates only).
    let moved = r.all_done.ops > 0 || r.all_done.iops > 0.0 || r.all_done.bytes_per_sec > 0.0;
    if imported && moved && r.disks.is_empty() && r.context.is_none() {
        return imported_bound(&f);
    }
    if r.all_done.ops == 0 || f.secs <= 0.0 {
        return Bound {
            kind: BoundKind::Unknown,
            evidence: Vec::new(),
            reading: "nothing moved: no bound to read".into(),
        };
    }
    let mut ev = Vec::new();
    let findings: Vec<Finding> = [throttled, rate_held, cached, device, queue, cpu, network]
        .iter()
        .filter_map(|rule| rule(&f, &mut ev))
        .collect();
    // A rate or the cache is read from counts, whatever the phase's length; the utilisations
    // need time enough for their counters' ticks.
    let counted = findings
        .iter()
        .any(|x| matches!(x.kind, BoundKind::Rate | BoundKind::Cache));
    if f.secs < 0.2
        && !counted
        && (f.plan.is_some() || matches!(phase.params, storlab_model::run::PhaseParams::Meta(_)))
    {
        return Bound {
            kind: BoundKind::Unknown,
            evidence: ev,
            reading: format!(
                "the phase lasted {:.0} ms: too short for the CPUs' and devices' counters (10 ms and 1 ms ticks) to say what bounded it",
                f.secs * 1e3
            ),
        };
    }
    decide(findings, ev, &f)
}

/// The kind from what each rule found: a rate or the cache first (they say what the figure
/// measured whatever else was busy), else one finding, else mixed, else unknown.
fn decide(found: Vec<Finding>, evidence: Vec<Evidence>, f: &Facts) -> Bound {
    if let Some(first) = found
        .iter()
        .find(|x| matches!(x.kind, BoundKind::Rate | BoundKind::Cache))
    {
        return Bound {
            kind: first.kind,
            reading: first.line.clone(),
            evidence,
        };
    }
    match found.len() {
        0 => Bound {
            kind: BoundKind::Unknown,
            reading: unknown_reading(&evidence, f),
            evidence,
        },
        1 => Bound {
            kind: found[0].kind,
            reading: found[0].line.clone(),
            evidence,
        },
        _ => Bound {
            kind: BoundKind::Mixed,
            reading: format!(
                "more than one limit at once: {}",
                found.iter().map(|x| x.line.as_str()).collect::<Vec<_>>().join("; ")
            ),
            evidence,
        },
    }
}

/// An imported phase without the devices' figures (fio's JSON keeps disk_util; the others keep
/// nothing of the devices or the cache beside their figures): no bound is read; its CPU figures, when it printed them, are kept as evidence.
fn imported_bound(f: &Facts) -> Bound {
    let mut ev = Vec::new();
    let cpu = f.r.cpu_user + f.r.cpu_sys;
    if cpu > 0.0 && f.secs > 0.0 {
        push(
            &mut ev,
            "the tool's CPU time per second",
            cpu / f.secs,
            "s/s",
            "the imported output",
        );
    }
    Bound {
        kind: BoundKind::Unknown,
        evidence: ev,
        reading: "imported: the tool kept no device, cache or queue figures beside its own, so what bounded it cannot be read".into(),
    }
}

fn unknown_reading(evidence: &[Evidence], f: &Facts) -> String {
    if evidence.is_empty() {
        return if f.plan.is_none() {
            "the source recorded neither device nor CPU figures: nothing to read a bound from".into()
        } else {
            "no device or CPU figures were read for this phase (a run stored before storlab kept them)".into()
        };
    }
    let said: Vec<String> = evidence
        .iter()
        .filter(|e| e.unit == "%")
        .map(|e| format!("{} {:.0} %", e.figure, e.value))
        .collect();
    format!(
        "no resource storlab watches was near its limit ({}): something it does not watch held the phase",
        if said.is_empty() {
            "no utilisation read".to_string()
        } else {
            said.join(", ")
        }
    )
}

fn push(ev: &mut Vec<Evidence>, figure: impl Into<String>, value: f64, unit: &str, source: impl Into<String>) {
    ev.push(Evidence {
        figure: figure.into(),
        value,
        unit: unit.into(),
        source: source.into(),
    });
}

/// A cgroup's I/O limit on a device, held at 90 % or more.
fn throttled(f: &Facts, ev: &mut Vec<Evidence>) -> Option<Finding> {
    let ctx = f.r.context.as_ref()?;
    for t in &ctx.throttles {
        let Some(d) = f.r.disks.iter().find(|d| d.name == t.device) else {
            continue;
        };
        let secs = (d.elapsed_ms / 1e3).max(1e-9);
        let held = match t.what.as_str() {
            "read_iops" => d.read_ios as f64 / secs,
            "write_iops" => d.write_ios as f64 / secs,
            "read_bps" => d.read_sectors as f64 * 512.0 / secs,
            _ => d.write_sectors as f64 * 512.0 / secs,
        };
        let unit = if t.what.ends_with("iops") { "IOPS" } else { "B/s" };
        push(
            ev,
            format!("{} limit on {}", t.what, t.device),
            t.limit as f64,
            unit,
            t.source.clone(),
        );
        push(
            ev,
            format!("{} held on {}", t.what, t.device),
            held,
            unit,
            format!("/proc/diskstats {}", t.device),
        );
        if held >= 0.9 * t.limit as f64 {
            return Some(Finding {
                kind: BoundKind::Rate,
                line: format!(
                    "held by a cgroup's I/O limit, not by the device: {} {} on {} set in {}, and {held:.0} {unit} measured there",
                    t.limit,
                    t.what.replace('_', " "),
                    t.device,
                    t.source
                ),
            });
        }
    }
    None
}

/// The rate the phase was asked to hold, held.
fn rate_held(f: &Facts, ev: &mut Vec<Evidence>) -> Option<Finding> {
    let rate = f.r.rate.as_ref()?;
    let unit = match rate.unit {
        RateUnit::Iops => "IOPS",
        _ => "B/s",
    };
    push(ev, "rate asked", rate.target, unit, "the job's rate");
    push(
        ev,
        "rate held",
        rate.achieved,
        unit,
        "the phase's I/Os over its measured time",
    );
    (rate.achieved >= 0.95 * rate.target).then(|| Finding {
        kind: BoundKind::Rate,
        line: format!(
            "held the rate it was asked for: {:.0} of {:.0} {unit}",
            rate.achieved, rate.target
        ),
    })
}

/// The disks under the targets (not those beneath them), where any was read.
fn top_disks<'a>(f: &'a Facts) -> impl Iterator<Item = &'a DiskUtil> {
    f.r.disks.iter().filter(|d| d.under.is_none())
}

/// Reads the devices did not see (or writes they did not take): the page cache.
fn cached(f: &Facts, ev: &mut Vec<Evidence>) -> Option<Finding> {
    let s = &f.plan?.settings;
    if s.direct || top_disks(f).next().is_none() {
        return None;
    }
    let dev_read: u64 = top_disks(f).map(|d| d.read_sectors * 512).sum();
    let dev_written: u64 = top_disks(f).map(|d| d.write_sectors * 512).sum();
    let (read, written) = (f.r.bytes_read, f.r.bytes_written);
    if read > 0 {
        push(ev, "bytes the devices read", dev_read as f64, "B", "/proc/diskstats");
        push(ev, "bytes the workers read", read as f64, "B", "the phase's own count");
    }
    if written > 0 {
        push(
            ev,
            "bytes the devices wrote",
            dev_written as f64,
            "B",
            "/proc/diskstats",
        );
        push(
            ev,
            "bytes the workers wrote",
            written as f64,
            "B",
            "the phase's own count",
        );
    }
    let flushed = s.sync || s.fsync != storlab_model::plan::FsyncPolicy::None;
    if read > 0 && (dev_read as f64) < 0.1 * read as f64 {
        return Some(Finding {
            kind: BoundKind::Cache,
            line: format!(
                "the page cache: the devices read {:.1} % of the bytes the workers read",
                dev_read as f64 * 100.0 / read as f64
            ),
        });
    }
    (read == 0 && written > 0 && !flushed && (dev_written as f64) < 0.1 * written as f64).then(|| Finding {
        kind: BoundKind::Cache,
        line: format!(
            "the page cache (write-back): the devices wrote {:.1} % of the bytes the workers wrote",
            dev_written as f64 * 100.0 / written as f64
        ),
    })
}

/// What the queue offered (workers × iodepth) and what was in flight (Little's law).
fn in_flight(f: &Facts) -> (f64, f64) {
    let depth = f.plan.map_or(1, |p| p.settings.iodepth.max(1)) as f64;
    let offered = f.workers as f64 * depth;
    let iops = f.r.all_done.iops;
    (offered, iops * f.r.latency.mean_ns / 1e9)
}

/// A device saturated: I/Os queued in it (its average queue above one and a half) while it was
/// busy (80 % of the time) or while the phase's I/Os spent most of their time in it (its await
/// at least 70 % of the phase's mean latency: blk-mq's busy time undercounts a device that
/// serves several I/Os at once). Read at every level of the stack; the most saturated is named.
fn device(f: &Facts, ev: &mut Vec<Evidence>) -> Option<Finding> {
    let lat_ms = (f.r.latency.count > 0).then(|| f.r.latency.mean_ns / 1e6);
    let mut found: Option<(&DiskUtil, f64, f64, f64)> = None;
    for d in &f.r.disks {
        if d.elapsed_ms <= 0.0 {
            continue;
        }
        let util = d.util() / 100.0;
        let queue = d.in_queue as f64 / d.elapsed_ms;
        let ios = d.read_ios + d.write_ios;
        let await_ms = (d.read_ticks + d.write_ticks) as f64 / ios.max(1) as f64;
        let source = match &d.under {
            Some(u) => format!("/proc/diskstats {} ({u})", d.name),
            None => format!("/proc/diskstats {}", d.name),
        };
        push(ev, format!("{} busy", d.name), util * 100.0, "%", source.clone());
        push(ev, format!("{} average queue", d.name), queue, "I/Os", source.clone());
        push(ev, format!("{} await", d.name), await_ms, "ms", source);
        let share = match lat_ms {
            Some(l) if l > 0.0 && ios > 0 => (await_ms / l).min(1.0),
            _ => 0.0,
        };
        let saturated = queue >= QUEUED && (util >= BUSY || share >= 0.7);
        if saturated && found.is_none_or(|(_, _, q, _)| queue > q) {
            found = Some((d, util, queue, share));
        }
    }
    if let Some(l) = lat_ms {
        push(ev, "phase's mean latency", l, "ms", "the phase's latency histogram");
    }
    let (d, util, queue, share) = found?;
    Some(Finding {
        kind: BoundKind::Device,
        line: format!(
            "the device: {} busy {:.0} % with {queue:.1} I/Os queued on average, {:.0} % of each I/O's time spent in it{}",
            d.name,
            util * 100.0,
            share * 100.0,
            d.under.as_ref().map(|u| format!(" ({u})")).unwrap_or_default()
        ),
    })
}

/// The benchmark's own queue full while the device was busy but not queueing.
fn queue(f: &Facts, ev: &mut Vec<Evidence>) -> Option<Finding> {
    let (offered, inflight) = in_flight(f);
    if f.r.latency.count == 0 {
        return None;
    }
    push(ev, "queue offered (workers × iodepth)", offered, "I/Os", "the job");
    push(
        ev,
        "in flight (IOPS × mean latency)",
        inflight,
        "I/Os",
        "Little's law over the phase",
    );
    let busy =
        f.r.disks
            .iter()
            .filter(|d| d.elapsed_ms > 0.0)
            .map(|d| (d.util() / 100.0, d.in_queue as f64 / d.elapsed_ms));
    let (util, queued) = busy.fold((0.0f64, 0.0f64), |(u, q), (du, dq)| (u.max(du), q.max(dq)));
    (util >= 0.5 && queued < QUEUED && inflight >= 0.8 * offered).then(|| Finding {
        kind: BoundKind::Iodepth,
        line: format!(
            "the queue depth given: {inflight:.1} of {offered:.0} I/Os in flight, the device busy {:.0} % but never queueing — a deeper queue would measure more",
            util * 100.0
        ),
    })
}

/// The CPUs running the benchmark busy: the workers ran, or were ready to run and waited for a
/// CPU (the scheduler's run delay: the CPU's saturation as they saw it), most of the time.
/// All CPUs' busy time is evidence of why they waited, never a bound on its own: another
/// process's load that the workers did not wait for bounded nothing.
fn cpu(f: &Facts, ev: &mut Vec<Evidence>) -> Option<Finding> {
    if f.r.not_measured.contains(&storlab_model::result::Figure::Cpu) {
        return None;
    }
    let usable = f.workers.min(f.cpus) as f64;
    let running = (f.r.cpu_user + f.r.cpu_sys) / f.secs / usable;
    let waiting = f.r.cpu_wait / f.secs / f.workers as f64;
    push(
        ev,
        "workers' CPU",
        running * 100.0,
        "%",
        format!("the workers' thread times over the {usable} CPU(s) they could use"),
    );
    if f.plan.is_some() {
        push(
            ev,
            "workers waiting for a CPU",
            waiting * 100.0,
            "%",
            "the workers' run delay (/proc/thread-self/schedstat)",
        );
    }
    let machine = f.r.context.as_ref().map(|c| {
        push(
            ev,
            "machine CPU busy",
            c.cpu_busy * 100.0,
            "%",
            format!("/proc/stat, {} CPUs", c.cpus),
        );
        push(ev, "machine CPU iowait", c.cpu_iowait * 100.0, "%", "/proc/stat");
        c.cpu_busy
    });
    let spent = f.r.cpu_user + f.r.cpu_sys;
    let kernel = if spent > 0.0 { f.r.cpu_sys / spent } else { 0.0 };
    if spent > 0.0 {
        push(
            ev,
            "workers' CPU in the kernel",
            kernel * 100.0,
            "%",
            "the workers' system time over their CPU time",
        );
    }
    if running >= BUSY {
        // Most of it in the kernel is the filesystem's and the block layer's code on the
        // workers' behalf (a metadata workload's usual bound), not storlab's own.
        let whose = if kernel >= 0.5 {
            format!(
                "{:.0} % of it in the kernel: the filesystem's and block layer's code",
                kernel * 100.0
            )
        } else {
            format!("{:.0} % of it in storlab's own code", (1.0 - kernel) * 100.0)
        };
        return Some(Finding {
            kind: BoundKind::Cpu,
            line: format!(
                "the benchmark's CPU: its workers kept {:.0} % of the CPUs they could use busy, {whose}",
                running * 100.0
            ),
        });
    }
    // Ready to run but not running for a quarter of the phase is the CPUs held it, whoever kept
    // them busy (an asynchronous engine's workers sleep while their I/Os are out, so their run
    // and wait need not add up to the whole).
    (waiting >= 0.25 || (waiting >= 0.2 && running + waiting >= BUSY)).then(|| Finding {
        kind: BoundKind::Cpu,
        line: format!(
            "the CPUs, shared: the workers ran {:.0} % of the time and waited for a CPU {:.0} %{}",
            running * 100.0,
            waiting * 100.0,
            machine
                .map(|m| format!(" (all CPUs {:.0} % busy)", m * 100.0))
                .unwrap_or_default()
        ),
    })
}

/// A network filesystem under the target. On NFS, the RPCs' own times (mountstats): where
/// their execution — round trip, server, the client's RPC queue — is half or more of the I/Os'
/// time, the network and the server held the phase; less, and the client side did (its cache,
/// its CPU). Without them (another network filesystem, or NFS counters not read), it is named as
/// what the evidence cannot see past.
fn network(f: &Facts, ev: &mut Vec<Evidence>) -> Option<Finding> {
    let net =
        f.fs.iter()
            .find(|t| matches!(**t, "nfs" | "nfs4" | "cifs" | "smb3" | "ceph" | "lustre" | "fuse.sshfs"))?;
    let ops = f.r.context.as_ref().map_or(&[][..], |c| &c.nfs[..]);
    let data: Vec<_> = ops
        .iter()
        .filter(|o| matches!(o.op.as_str(), "READ" | "WRITE" | "COMMIT"))
        .collect();
    let calls: u64 = data.iter().map(|o| o.calls).sum();
    if calls == 0 {
        return (f.r.disks.is_empty()).then(|| Finding {
            kind: BoundKind::Network,
            line: format!(
                "a network filesystem ({net}): its server and the network between, which no local device shows"
            ),
        });
    }
    let rtt: u64 = data.iter().map(|o| o.rtt_ms).sum();
    let exec: u64 = data.iter().map(|o| o.exec_ms).sum();
    let names: Vec<&str> = data.iter().map(|o| o.op.as_str()).collect();
    let source = "/proc/self/mountstats";
    push(
        ev,
        format!("NFS {} calls", names.join("/")),
        calls as f64,
        "calls",
        source,
    );
    push(ev, "NFS round trip per call", rtt as f64 / calls as f64, "ms", source);
    push(ev, "NFS execute per call", exec as f64 / calls as f64, "ms", source);
    // The I/Os' own time: every operation's latency summed.
    let io_ms = f.r.latency.mean_ns * f.r.latency.count as f64 / 1e6;
    if io_ms <= 0.0 {
        return None;
    }
    let share = exec as f64 / io_ms;
    push(
        ev,
        "NFS execute over the I/Os' time",
        share * 100.0,
        "%",
        "mountstats and the phase's latency histogram",
    );
    (share >= 0.5).then(|| Finding {
        kind: BoundKind::Network,
        line: format!(
            "the NFS server and the network ({net}): its {calls} {} calls took {:.2} ms each, {:.2} ms of it the round trip, {:.0} % of the I/Os' time",
            names.join("/"),
            exec as f64 / calls as f64,
            rtt as f64 / calls as f64,
            share.min(9.99) * 100.0
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::result::{Latency, PhaseContext, Throughput};

    fn phase(r: PhaseResult) -> Phase {
        Phase {
            seq: 0,
            kind: storlab_model::run::PhaseName::Kind(storlab_model::plan::PhaseKind::Randread),
            params: storlab_model::run::PhaseParams::Imported(Default::default()),
            result: r,
            cache_flattered: false,
        }
    }

    fn result(secs: f64, ops: u64, mean_ns: f64) -> PhaseResult {
        PhaseResult {
            all_done: Throughput::new(secs, ops * 4096, ops),
            latency: Latency {
                count: ops,
                mean_ns,
                ..Latency::default()
            },
            ..PhaseResult::default()
        }
    }

    fn disk(util: f64, queue: f64) -> DiskUtil {
        DiskUtil {
            name: "vda".into(),
            read_ios: 1000,
            io_ticks: (util * 10_000.0) as u64,
            in_queue: (queue * 10_000.0) as u64,
            read_ticks: 1000,
            elapsed_ms: 10_000.0,
            ..DiskUtil::default()
        }
    }

    #[test]
    fn a_busy_queueing_device_busy_cpus_both_and_neither() {
        let env = Environment {
            cpus: 2,
            ..Environment::default()
        };
        let mut r = result(10.0, 100_000, 3_000_000.0);
        r.disks = vec![disk(0.99, 30.0)];
        assert_eq!(of(&phase(r.clone()), &env).kind, BoundKind::Device);
        r.cpu_user = 9.5;
        assert_eq!(of(&phase(r.clone()), &env).kind, BoundKind::Mixed);
        r.disks = vec![disk(0.2, 0.3)];
        let b = of(&phase(r.clone()), &env);
        assert_eq!(b.kind, BoundKind::Cpu, "{b:?}");
        r.cpu_user = 1.0;
        // The machine busy with other work the workers did not wait for bounds nothing.
        r.context = Some(PhaseContext {
            cpus: 2,
            cpu_busy: 0.97,
            ..PhaseContext::default()
        });
        let b = of(&phase(r.clone()), &env);
        assert_eq!(b.kind, BoundKind::Unknown);
        r.cpu_wait = 8.0;
        assert_eq!(of(&phase(r.clone()), &env).kind, BoundKind::Cpu);
        // Ready to run a quarter of the phase and not run (an asynchronous worker that ran
        // little itself): the CPUs held it.
        r.cpu_wait = 3.0;
        assert_eq!(of(&phase(r.clone()), &env).kind, BoundKind::Cpu);
        r.cpu_wait = 1.5;
        assert_eq!(of(&phase(r.clone()), &env).kind, BoundKind::Unknown);
        r.cpu_wait = 0.0;
        r.context = Some(PhaseContext {
            cpus: 2,
            cpu_busy: 0.3,
            ..PhaseContext::default()
        });
        let b = of(&phase(r), &env);
        assert_eq!(b.kind, BoundKind::Unknown);
        assert!(b.reading.contains("vda busy 20 %"), "{}", b.reading);
    }

    #[test]
    fn an_nfs_phase_is_the_networks_when_its_rpcs_hold_the_ios_time() {
        use storlab_model::result::NfsOp;
        let env = Environment {
            cpus: 2,
            targets: vec![storlab_model::env::TargetEnv {
                fs_type: "nfs4".into(),
                ..Default::default()
            }],
            ..Environment::default()
        };
        // 1,000 I/Os of 2 ms mean: 2,000 ms of I/O time.
        let mut r = result(10.0, 1000, 2_000_000.0);
        let ctx = |exec_ms: u64| PhaseContext {
            cpus: 2,
            nfs: vec![NfsOp {
                op: "READ".into(),
                calls: 500,
                rtt_ms: exec_ms - 100,
                exec_ms,
            }],
            ..PhaseContext::default()
        };
        r.context = Some(ctx(1800));
        let b = of(&phase(r.clone()), &env);
        assert_eq!(b.kind, BoundKind::Network, "{b:?}");
        assert!(
            b.reading
                .contains("500 READ calls took 3.60 ms each, 3.40 ms of it the round trip, 90 %"),
            "{}",
            b.reading
        );
        // The RPCs a fifth of the I/Os' time: the client side held it, not the network.
        r.context = Some(ctx(400));
        assert_ne!(of(&phase(r), &env).kind, BoundKind::Network);
    }

    #[test]
    fn nothing_moved_has_no_bound() {
        let b = of(&phase(PhaseResult::default()), &Environment::default());
        assert_eq!(b.kind, BoundKind::Unknown);
    }
}
