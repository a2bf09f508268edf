//! `storlab sweep`: the same phases at every point of one varied parameter (threads 1..64
//! doubling, block size, queue depth, read percentage, ...), stored as one study whose
//! members are the points' runs, printed as a table of throughput against the parameter.

use std::io::IsTerminal;

use anyhow::Result;
use storlab_engine::PhaseResult;
use storlab_workload::{resolve, ResolveOptions, Settings, WorkloadError};

use crate::cli::SweepArgs;
use crate::runner::{db_path, run_job, ExecOptions};

fn bad(msg: String) -> WorkloadError {
    WorkloadError::invalid("--vary", msg)
}

/// The points of `--vary KEY=SPEC`: a list (`4k,64k,256k`), or a range `LO..HI` stepped by
/// doubling (`1..64`, `1..64x2`, `1..64x4` multiplies) or by adding (`0..100+25`).
pub fn points(spec: &str) -> Result<(String, Vec<String>), WorkloadError> {
    let (key, values) = spec.split_once('=').ok_or_else(|| {
        bad(format!(
            "'{spec}': expected KEY=VALUES, e.g. threads=1..64 or bs=4k,64k,1m"
        ))
    })?;
    let key = key.trim().replace('-', "_");
    if !storlab_workload::KEYS.iter().any(|(k, _)| *k == key) {
        return Err(bad(format!(
            "'{key}' is not a job setting; settings: {}",
            storlab_workload::KEYS
                .iter()
                .map(|(k, _)| *k)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let values = values.trim();
    let Some((lo, rest)) = values.split_once("..") else {
        let list: Vec<String> = values
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        if list.is_empty() {
            return Err(bad(format!("'{spec}': no values")));
        }
        return Ok((key, list));
    };
    let (hi, step) = match rest.find(['x', '+']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "x2"),
    };
    // Sizes step in bytes (4k..1m doubles 4k, 8k, ...); plain numbers in units.
    let num = |s: &str| -> Result<(u64, bool), WorkloadError> {
        if let Ok(n) = s.trim().parse::<u64>() {
            return Ok((n, false));
        }
        s.trim()
            .parse::<storlab_units::Size>()
            .map(|z| (z.bytes(), true))
            .map_err(|_| bad(format!("'{s}' in '{spec}' is not a number or a size")))
    };
    let ((lo, size_lo), (hi, size_hi)) = (num(lo)?, num(hi)?);
    if lo > hi {
        return Err(bad(format!("'{spec}': the range runs downwards")));
    }
    let mut out = Vec::new();
    let mut x = lo;
    let render = |v: u64| {
        if size_lo || size_hi {
            storlab_units::Size(v).to_string()
        } else {
            v.to_string()
        }
    };
    if let Some(m) = step.strip_prefix('x') {
        let m: u64 = m
            .parse()
            .map_err(|_| bad(format!("'{step}' in '{spec}': expected x2, x4, ...")))?;
        if m < 2 || lo == 0 {
            return Err(bad(format!(
                "'{spec}': a multiplying range needs a factor of at least 2 and a start above 0"
            )));
        }
        while x <= hi {
            out.push(render(x));
            x = x.saturating_mul(m);
        }
    } else {
        let a: u64 = step[1..]
            .parse()
            .map_err(|_| bad(format!("'{step}' in '{spec}': expected +N")))?;
        if a == 0 {
            return Err(bad(format!("'{spec}': a step of +0 never ends")));
        }
        while x <= hi {
            out.push(render(x));
            x += a;
        }
    }
    if out.len() > 1000 {
        return Err(bad(format!("'{spec}' makes {} points: at most 1000", out.len())));
    }
    Ok((key, out))
}

/// One point of a sweep: (key, value) per varied parameter.
type Point = Vec<(String, String)>;

/// Every combination of the varied parameters' points, in order (the last varies fastest).
fn product(axes: &[(String, Vec<String>)]) -> Vec<Point> {
    let mut out: Vec<Point> = vec![Vec::new()];
    for (key, values) in axes {
        out = out
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut q = p.clone();
                    q.push((key.clone(), v.clone()));
                    q
                })
            })
            .collect();
    }
    out
}

fn label(point: &[(String, String)]) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn sweep(args: SweepArgs) -> Result<u8> {
    let base = args.job.to_job()?;
    let axes: Vec<(String, Vec<String>)> = args.vary.iter().map(|v| points(v)).collect::<Result<_, _>>()?;
    for (i, (k, _)) in axes.iter().enumerate() {
        if axes[..i].iter().any(|(x, _)| x == k) {
            return Err(WorkloadError::invalid("--vary", format!("{k} is varied twice")).into());
        }
    }
    let keys: Vec<String> = axes.iter().map(|(k, _)| k.clone()).collect();
    // Every point is a job; all are checked before the first runs. With both the file size and
    // the block size varied, points whose block exceeds the file are left out (IOzone's matrix).
    let mut jobs = Vec::new();
    let mut skipped = 0;
    for point in product(&axes) {
        let mut j = base.clone();
        let mut s = Settings::default();
        for (k, v) in &point {
            s.apply_str(k, v, &format!("--vary {k}={v}"))?;
        }
        j.settings.overlay(&s);
        if let (Some(size), Some(bs)) = (&j.settings.size, &j.settings.bs) {
            if keys.iter().any(|k| k == "size") && keys.iter().any(|k| k == "bs") && bs.max() > *size {
                skipped += 1;
                continue;
            }
        }
        // A phase's own setting would override the varied one: refuse rather than sweep nothing.
        for key in &keys {
            if j.phases.iter().any(|(_, ps)| {
                serde_json::to_value(ps)
                    .ok()
                    .and_then(|x| x.get(key).cloned())
                    .is_some_and(|x| !x.is_null())
            }) {
                return Err(WorkloadError::invalid(
                    "--vary",
                    format!("a phase of the job sets {key} itself, so varying it job-wide would change nothing there"),
                )
                .into());
            }
        }
        j.name = Some(format!(
            "{} {}",
            base.name.clone().unwrap_or_else(|| "sweep".into()),
            label(&point)
        ));
        jobs.push((point, j));
    }
    if jobs.is_empty() {
        return Err(
            WorkloadError::invalid("--vary", "no point is left: every block size exceeds every file size").into(),
        );
    }
    let opts = ResolveOptions {
        allow_devices: args.job.allow_devices.clone(),
        file_tag: std::process::id().to_string(),
        default_seed: 1,
    };
    let mut largest_set = 0;
    let mut any_direct = true;
    for (_, j) in &jobs {
        let plan = resolve(j, &opts)?;
        largest_set = largest_set.max(plan.file_set_bytes);
        any_direct &= plan.phases.iter().all(|p| p.direct);
    }
    let db = db_path(&args.output);
    let chatty = std::io::stderr().is_terminal() && !args.output.json;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    // (the point, its run id, its phases' results)
    let mut rows: Vec<(Point, i64, Vec<PhaseResult>)> = Vec::new();
    let mut status = 0;
    for (point, j) in &jobs {
        if chatty {
            eprintln!("[{}]", label(point));
        }
        let e = run_job(
            j,
            &db,
            &ExecOptions {
                kind: "sweep",
                tags: &args.job.tags,
                allow: &args.job.allow_devices,
                keep: args.job.keep,
                chatty,
                command: command.clone(),
                control: None,
            },
        )?;
        let stop = e.status == "aborted";
        rows.push((point.clone(), e.run_id, e.results));
        if stop {
            status = crate::exit::ABORTED;
            break;
        }
    }
    let mut store = storlab_store::Store::open(&db, &storlab_env::capture(&[]).host)?;
    // A file size × block size sweep is IOzone's matrix: the report draws it as heat maps.
    let matrix = keys.len() == 2 && keys.contains(&"size".to_string()) && keys.contains(&"bs".to_string());
    let study = store.save_study(
        if matrix { "sweep-matrix" } else { "sweep" },
        &serde_json::json!({ "vary": keys, "points": axes, "command": command }),
        &rows
            .iter()
            .map(|(point, id, _)| (*id, label(point)))
            .collect::<Vec<_>>(),
        &[],
        &[],
    )?;
    let memory = storlab_env::capture(&[]).memory_bytes;
    let note = (!any_direct && memory > 0 && largest_set < 3 * memory).then(|| {
        format!(
            "note: the largest file set here ({}) is under three times this machine's RAM ({}) and the I/O goes through the page cache: these are cache figures (IOzone's rule). For disk figures use a size of at least {} in total, or --direct.",
            storlab_units::Size(largest_set).human(),
            storlab_units::Size(memory).human(),
            storlab_units::Size(3 * memory).human()
        )
    });
    let kinds: Vec<String> = jobs[0].1.phases.iter().map(|(k, _)| k.name().to_string()).collect();
    if args.output.json {
        let v = serde_json::json!({
            "study": study,
            "vary": keys,
            "skipped": skipped,
            "points": rows.iter().map(|(point, id, res)| serde_json::json!({
                "values": point.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
                "run_id": id,
                "phases": res.iter().zip(&kinds).map(|(r, k)| serde_json::json!({
                    "phase": k, "bytes_per_sec": r.all_done.bytes_per_sec, "iops": r.all_done.iops,
                    "first_done_bytes_per_sec": r.first_done.bytes_per_sec, "lat_p99_ns": r.latency.p99_ns,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "note": note,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        let mut t = vec![keys
            .iter()
            .cloned()
            .chain(std::iter::once("run".to_string()))
            .chain(
                kinds
                    .iter()
                    .flat_map(|k| [format!("{k} MiB/s"), format!("{k} IOPS"), format!("{k} p99 µs")]),
            )
            .collect::<Vec<_>>()];
        for (point, id, res) in &rows {
            let mut r: Vec<String> = point.iter().map(|(_, v)| v.clone()).collect();
            r.push(id.to_string());
            for p in res {
                r.push(format!("{:.2}", p.all_done.bytes_per_sec / (1u64 << 20) as f64));
                r.push(format!("{:.0}", p.all_done.iops));
                r.push(format!("{:.1}", p.latency.p99_ns as f64 / 1e3));
            }
            t.push(r);
        }
        print!("{}", crate::output::table(&t));
        if skipped > 0 {
            println!("{skipped} point(s) left out: their block size exceeds their file size");
        }
        if let Some(n) = &note {
            println!("{n}");
        }
    }
    eprintln!(
        "storlab: stored {} runs as study {study} in {}",
        rows.len(),
        db.display()
    );
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_from_lists_and_ranges() {
        assert_eq!(
            points("threads=1..64").unwrap().1,
            ["1", "2", "4", "8", "16", "32", "64"]
        );
        assert_eq!(points("threads=1..10x3").unwrap().1, ["1", "3", "9"]);
        assert_eq!(points("rwmix=0..100+25").unwrap().1, ["0", "25", "50", "75", "100"]);
        assert_eq!(points("bs=4k..32k").unwrap().1, ["4KiB", "8KiB", "16KiB", "32KiB"]);
        assert_eq!(
            points("bs=4k, 64k,1m").unwrap(),
            ("bs".into(), vec!["4k".into(), "64k".into(), "1m".into()])
        );
        for (s, needle) in [
            ("threads", "KEY=VALUES"),
            ("colour=1,2", "not a job setting"),
            ("threads=8..1", "downwards"),
            ("rwmix=0..100+0", "never ends"),
            ("threads=1..x", "not a number"),
        ] {
            assert!(points(s).unwrap_err().to_string().contains(needle), "{s}");
        }
    }
}
