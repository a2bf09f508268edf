//! The I/O limits this process's cgroups set on a device (cgroup v1's blkio.throttle files,
//! v2's io.max): a phase held to one measured the limit, set before the device, not the
//! device.

use storlab_model::result::Throttle;

/// The limits on the devices `disks` (kernel names), from every cgroup of this process and its
/// ancestors.
pub fn throttles(disks: &[String]) -> Vec<Throttle> {
    let numbers: Vec<(String, String)> = disks
        .iter()
        .filter_map(|d| {
            let n = std::fs::read_to_string(format!("/sys/class/block/{d}/dev")).ok()?;
            Some((n.trim().to_string(), d.clone()))
        })
        .collect();
    let mut out: Vec<Throttle> = Vec::new();
    for dir in crate::capacity::cgroup_dirs("blkio")
        .into_iter()
        .chain(crate::capacity::cgroup_dirs("io"))
    {
        for (file, what) in [
            ("blkio.throttle.read_iops_device", "read_iops"),
            ("blkio.throttle.write_iops_device", "write_iops"),
            ("blkio.throttle.read_bps_device", "read_bps"),
            ("blkio.throttle.write_bps_device", "write_bps"),
        ] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
            for l in text.lines() {
                let mut w = l.split_whitespace();
                let (Some(dev), Some(v)) = (w.next(), w.next().and_then(|v| v.parse::<u64>().ok())) else {
                    continue;
                };
                push(&mut out, &numbers, dev, what, v, &dir.join(file));
            }
        }
        // v2: "MAJ:MIN rbps=max wbps=1048576 riops=max wiops=100".
        let text = std::fs::read_to_string(dir.join("io.max")).unwrap_or_default();
        for l in text.lines() {
            let mut w = l.split_whitespace();
            let Some(dev) = w.next() else { continue };
            for kv in w {
                let Some((k, v)) = kv.split_once('=') else { continue };
                let what = match k {
                    "riops" => "read_iops",
                    "wiops" => "write_iops",
                    "rbps" => "read_bps",
                    "wbps" => "write_bps",
                    _ => continue,
                };
                if let Ok(v) = v.parse::<u64>() {
                    push(&mut out, &numbers, dev, what, v, &dir.join("io.max"));
                }
            }
        }
    }
    out
}

fn push(
    out: &mut Vec<Throttle>,
    numbers: &[(String, String)],
    dev: &str,
    what: &str,
    limit: u64,
    file: &std::path::Path,
) {
    let Some((_, name)) = numbers.iter().find(|(n, _)| n == dev) else {
        return;
    };
    // The tightest of several cgroups' limits on the same device and direction holds.
    match out.iter_mut().find(|t| t.device == *name && t.what == what) {
        Some(t) if t.limit <= limit => {}
        Some(t) => {
            t.limit = limit;
            t.source = file.display().to_string();
        }
        None => out.push(Throttle {
            device: name.clone(),
            what: what.to_string(),
            limit,
            source: file.display().to_string(),
        }),
    }
}
