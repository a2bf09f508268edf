//! `storlab sweep`'s points: `--vary KEY=VALUES` read as a list or a range, every combination
//! of several varied settings, each point a job, all checked before the first runs.

use storlab_model::study::{Role, StudyParams, SweepParams};

use crate::{Job, Settings, WorkloadError};

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
    if !crate::SETTINGS.iter().any(|s| s.key == key) {
        return Err(bad(format!(
            "'{key}' is not a job setting{}; settings: {}",
            storlab_model::names::did_you_mean(&key, crate::SETTINGS.iter().map(|s| s.key)),
            crate::SETTINGS.iter().map(|s| s.key).collect::<Vec<_>>().join(", ")
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
    let out = range(spec, lo, rest)?;
    if out.len() > 1000 {
        return Err(bad(format!("'{spec}' makes {} points: at most 1000", out.len())));
    }
    Ok((key, out))
}

/// A range's points: `LO..HI` doubling, `LO..HIxM` multiplying, `LO..HI+N` adding; sizes step in
/// bytes (4k..1m doubles 4k, 8k, ...), plain numbers in units.
fn range(spec: &str, lo: &str, rest: &str) -> Result<Vec<String>, WorkloadError> {
    let (hi, step) = match rest.find(['x', '+']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "x2"),
    };
    let num = |s: &str| -> Result<(u64, bool), WorkloadError> {
        if let Ok(n) = s.trim().parse::<u64>() {
            return Ok((n, false));
        }
        s.trim()
            .parse::<storlab_units::Size>()
            .map(|z| (z.bytes(), true))
            .map_err(|_| {
                bad(format!(
                    "'{s}' in '{spec}' is not a number or a size: a range is LO..HI of numbers or sizes, e.g. threads=1..16 or bs=4k..1m"
                ))
            })
    };
    let ((lo, size_lo), (hi, size_hi)) = (num(lo)?, num(hi)?);
    if lo > hi {
        return Err(bad(format!("'{spec}': the range runs downwards")));
    }
    let render = |v: u64| {
        if size_lo || size_hi {
            storlab_units::Size(v).to_string()
        } else {
            v.to_string()
        }
    };
    let next: Box<dyn Fn(u64) -> u64> = if let Some(m) = step.strip_prefix('x') {
        let m: u64 = m
            .parse()
            .map_err(|_| bad(format!("'{step}' in '{spec}': expected x2, x4, ...")))?;
        if m < 2 || lo == 0 {
            return Err(bad(format!(
                "'{spec}': a multiplying range needs a factor of at least 2 and a start above 0"
            )));
        }
        Box::new(move |x: u64| x.saturating_mul(m))
    } else {
        let a: u64 = step[1..]
            .parse()
            .map_err(|_| bad(format!("'{step}' in '{spec}': expected +N")))?;
        if a == 0 {
            return Err(bad(format!("'{spec}': a step of +0 never ends")));
        }
        Box::new(move |x: u64| x + a)
    };
    let mut out = Vec::new();
    let mut x = lo;
    while x <= hi {
        out.push(render(x));
        x = next(x);
    }
    Ok(out)
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

/// The points of a sweep as jobs: every combination of the varied settings laid over `base`,
/// each named after its point, with its role in the study; and how many were left out (with
/// both the file size and the block size varied, a block larger than the file, as in IOzone's
/// matrix). Refuses a setting varied twice and one a phase of the job sets itself.
pub fn expand(base: &Job, vary: &[String]) -> Result<(Vec<(Role, Job)>, u32), WorkloadError> {
    let axes: Vec<(String, Vec<String>)> = vary.iter().map(|v| points(v)).collect::<Result<_, _>>()?;
    for (i, (k, _)) in axes.iter().enumerate() {
        if axes[..i].iter().any(|(x, _)| x == k) {
            return Err(bad(format!("{k} is varied twice")));
        }
    }
    let keys: Vec<&str> = axes.iter().map(|(k, _)| k.as_str()).collect();
    let matrix = keys.contains(&"size") && keys.contains(&"bs");
    let mut jobs = Vec::new();
    let mut skipped = 0;
    for point in product(&axes) {
        let mut j = base.clone();
        let mut s = Settings::default();
        for (k, v) in &point {
            crate::apply_str(&mut s, k, v, &format!("--vary {k}={v}"))?;
        }
        j.settings.overlay(&s);
        if let (Some(size), Some(bs)) = (&j.settings.size, &j.settings.bs) {
            if matrix && bs.max() > *size {
                skipped += 1;
                continue;
            }
        }
        // A phase's own setting would override the varied one: refuse rather than sweep nothing.
        for key in &keys {
            if j.phases.iter().any(|(_, ps)| ps.is_set(key)) {
                return Err(bad(format!(
                    "a phase of the job sets {key} itself, so varying it job-wide would change nothing there"
                )));
            }
        }
        let role = Role::Point { values: point };
        j.name = Some(format!(
            "{} {role}",
            base.name.clone().unwrap_or_else(|| "sweep".into())
        ));
        jobs.push((role, j));
    }
    if jobs.is_empty() {
        return Err(bad("no point is left: every block size exceeds every file size".into()));
    }
    Ok((jobs, skipped))
}

/// Checks every point's job (resolving it, so that a point that cannot run is refused before
/// the first one runs) and applies IOzone's rule for disk rather than cache figures to the
/// largest file set: a note when the I/O goes through the page cache and the largest file set
/// is under three times `memory`.
pub fn check(
    points: &[(Role, Job)],
    opts: &crate::ResolveOptions,
    memory: u64,
) -> Result<Option<String>, WorkloadError> {
    let (mut largest, mut all_direct) = (0, true);
    for (_, j) in points {
        let plan = crate::resolve(j, opts)?;
        largest = largest.max(plan.file_set_bytes);
        all_direct &= plan.phases.iter().all(|p| p.settings.direct);
    }
    let human = |b: u64| storlab_units::Size(b).human();
    Ok((!all_direct && memory > 0 && largest < 3 * memory).then(|| {
        format!(
            "note: the largest file set here ({}) is under three times this machine's RAM ({}) and the I/O goes through the page cache: these are cache figures (IOzone's rule). For disk figures use a size of at least {} in total, or --direct.",
            human(largest),
            human(memory),
            human(3 * memory)
        )
    }))
}

/// A sweep ready to run: its points, and the study they are stored as (its varied keys and
/// points, the points left out, the command, and IOzone's note on cache figures). A file size ×
/// block size sweep is IOzone's matrix, which the report draws as heat maps.
pub fn study(
    base: &Job,
    vary: &[String],
    opts: &crate::ResolveOptions,
    memory: u64,
    command: String,
) -> Result<(Vec<(Role, Job)>, StudyParams), WorkloadError> {
    let (points, skipped) = expand(base, vary)?;
    let note = check(&points, opts, memory)?;
    let axes: Vec<(String, Vec<String>)> = vary.iter().filter_map(|v| self::points(v).ok()).collect();
    let keys: Vec<String> = axes.iter().map(|(k, _)| k.clone()).collect();
    let matrix = keys.len() == 2 && keys.iter().any(|k| k == "size") && keys.iter().any(|k| k == "bs");
    let params = SweepParams {
        points: axes,
        vary: keys,
        command,
        skipped,
        note,
    };
    let params = if matrix {
        StudyParams::SweepMatrix(params)
    } else {
        StudyParams::Sweep(params)
    };
    Ok((points, params))
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

    #[test]
    fn a_size_by_block_size_sweep_is_a_matrix_study_with_its_points_left_out_counted() {
        let base = Job::parse(
            "threads = 1\nsize = \"64k\"\nphase = [\"write\"]\ntarget = [\"/tmp\"]\n",
            "test",
        )
        .unwrap();
        let opts = crate::ResolveOptions::default();
        let vary = ["size=64k,1m".to_string(), "bs=4k,256k".to_string()];
        let (points, params) = study(&base, &vary, &opts, 0, "storlab sweep …".into()).unwrap();
        // 64 KiB files in 256 KiB blocks are left out, as IOzone's matrix leaves them.
        assert_eq!(points.len(), 3);
        let StudyParams::SweepMatrix(p) = params else {
            panic!("a size × bs sweep is a matrix: {params:?}")
        };
        assert_eq!(
            (p.skipped, p.vary.clone()),
            (1, vec!["size".to_string(), "bs".to_string()])
        );
        assert_eq!(p.command, "storlab sweep …");
        let (_, params) = study(&base, &["threads=1..2".to_string()], &opts, 0, String::new()).unwrap();
        assert!(matches!(params, StudyParams::Sweep(_)));
    }
}
