//! Where a job's workers run and with what priority: their CPUs and memory nodes, their I/O
//! class and level, and a share of requests with a priority of their own.

use storlab_model::settings::{CommandPriority, CpuList, CpusPolicy, IoPriority, MemoryPolicy};

use super::{set, Conversion, Opts};
use crate::WorkloadError;

/// fio's cpus_allowed, cpumask or numa_cpu_nodes, cpus_allowed_policy, numa_mem_policy.
pub(crate) fn cpus_and_memory(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let cpus = match (j.val("cpus_allowed"), j.val("cpumask"), j.val("numa_cpu_nodes")) {
        (Some(c), _, _) => Some((
            "cpus_allowed",
            CpuList::parse(c).map_err(|e| j.refuse("cpus_allowed", e))?,
        )),
        (None, Some(m), _) => {
            let m = j.bytes("cpumask", m)?;
            let list: Vec<u32> = (0..64).filter(|b| m >> b & 1 == 1).collect();
            if list.is_empty() {
                return Err(j.refuse("cpumask", "a mask of no CPU"));
            }
            Some(("cpumask", CpuList(list)))
        }
        (None, None, Some(nodes)) => Some(("numa_cpu_nodes", node_cpus(j, cx, nodes)?)),
        _ => None,
    };
    if let Some((by, list)) = cpus {
        set!(cx, by, cpus = list)?;
        match j.val("cpus_allowed_policy") {
            None | Some("shared") => {}
            Some("split") => set!(cx, "cpus_allowed_policy", cpus_policy = CpusPolicy::Split)?,
            Some(p) => return Err(j.refuse("cpus_allowed_policy", format!("'{p}': fio's policy is shared or split"))),
        }
    }
    if let Some(p) = j.val("numa_mem_policy") {
        let policy = storlab_model::settings::read_memory_policy(&p.replace("preferred", "prefer"))
            .map_err(|e| j.refuse("numa_mem_policy", e))?;
        if policy != MemoryPolicy::Default {
            set!(cx, "numa_mem_policy", memory_policy = policy)?;
        }
    }
    Ok(())
}

/// The CPUs of NUMA nodes, from sysfs.
fn node_cpus(j: Opts, cx: &mut Conversion, nodes: &str) -> Result<CpuList, WorkloadError> {
    let nodes = CpuList::parse(nodes).map_err(|e| j.refuse("numa_cpu_nodes", e))?;
    let mut cpus = Vec::new();
    for n in &nodes.0 {
        let path = format!("/sys/devices/system/node/node{n}/cpulist");
        let list = std::fs::read_to_string(&path).map_err(|_| {
            j.refuse(
                "numa_cpu_nodes",
                format!("NUMA node {n} is not on this machine ({path} is missing)"),
            )
        })?;
        cpus.push(list.trim().to_string());
    }
    let text = cpus.join(",");
    cx.note(format!(
        "numa_cpu_nodes={}: the workers run on CPUs {text}",
        j.val("numa_cpu_nodes").unwrap_or("")
    ));
    CpuList::parse(&text).map_err(|e| j.refuse("numa_cpu_nodes", e))
}

/// A priority class as fio numbers it (1 rt, 2 be, 3 idle), for `key`'s refusal.
fn class(j: Opts, key: &str, c: u64, zero_is_be: bool) -> Result<u8, WorkloadError> {
    match c {
        0 if zero_is_be => Ok(2),
        1..=3 => Ok(c as u8),
        c => Err(j.refuse(
            key,
            if zero_is_be {
                format!("class {c}: fio's classes are 0 (none), 1 (rt), 2 (be) and 3 (idle)")
            } else {
                format!("class {c}: expected 1 (rt), 2 (be) or 3 (idle)")
            },
        )),
    }
}

/// The job's I/O priority (fio's prioclass and prio; class 0 is the default).
pub(crate) fn priority(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    match (j.int("prioclass")?, j.int("prio")?) {
        (None | Some(0), None) => Ok(()),
        (c, level) => {
            let class = class(j, "prioclass", c.unwrap_or(2), true)?;
            let level = level.unwrap_or(4);
            if level > 7 {
                return Err(j.refuse("prio", format!("level {level}: expected 0 (highest) to 7")));
            }
            let by = if j.given("prioclass") { "prioclass" } else { "prio" };
            set!(
                cx,
                by,
                priority = IoPriority {
                    class,
                    level: level as u8
                }
            )
        }
    }
}

/// `A` or `A,B` (reads, writes) as two whole numbers.
fn two(j: Opts, k: &str, v: &str) -> Result<(i64, i64), WorkloadError> {
    let parse = |x: &str| {
        x.trim()
            .parse::<i64>()
            .map_err(|_| j.refuse(k, format!("'{x}' is not a whole number")))
    };
    match v.split_once(',') {
        Some((a, b)) => Ok((parse(a)?, parse(b)?)),
        None => {
            let a = parse(v)?;
            Ok((a, a))
        }
    }
}

/// Priorities on the requests themselves (fio's cmdprio_*; io_uring and libaio only).
pub(crate) fn cmdprio(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let Some(p) = j.val("cmdprio_percentage") else {
        return Ok(());
    };
    let (r, w) = two(j, "cmdprio_percentage", p)?;
    if !(0..=100).contains(&r) || !(0..=100).contains(&w) {
        return Err(j.refuse("cmdprio_percentage", "expected percentages from 0 to 100"));
    }
    // One value for reads and writes (storlab's cmdprio has one priority for both).
    let same = |k: &str, default: i64| -> Result<i64, WorkloadError> {
        let Some(v) = j.val(k) else { return Ok(default) };
        let (a, b) = two(j, k, v)?;
        if a != b {
            return Err(j.refuse(
                k,
                "a different value for reads and for writes: storlab's cmdprio has one priority for both",
            ));
        }
        Ok(a)
    };
    let class = class(j, "cmdprio_class", same("cmdprio_class", 1)?.max(0) as u64, false)?;
    let level = same("cmdprio", 0)?;
    if !(0..=7).contains(&level) {
        return Err(j.refuse("cmdprio", format!("level {level}: expected 0 (highest) to 7")));
    }
    if same("cmdprio_hint", 0)? != 0 {
        return Err(j.refuse(
            "cmdprio_hint",
            "priority hints (for command duration limits): storlab's requests carry a class and level only",
        ));
    }
    if r > 0 || w > 0 {
        let c = CommandPriority {
            read_percent: r as u8,
            write_percent: w as u8,
            priority: IoPriority {
                class,
                level: level as u8,
            },
        };
        set!(cx, "cmdprio_percentage", cmdprio = c)?;
    }
    Ok(())
}
