//! The machine's CPU time from /proc/stat's first line (proc(5)): how busy all CPUs were over
//! an interval, and how much of it was waiting for I/O — the USE method's utilisation of the
//! CPU beside the workers' own thread times.

/// The CPU counters at a moment, in clock ticks summed over every CPU.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal: time the CPUs were working.
    pub busy: u64,
    /// idle.
    pub idle: u64,
    /// iowait: idle with I/O outstanding.
    pub iowait: u64,
}

/// Parses /proc/stat's `cpu` line.
pub fn parse(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line.split_whitespace().skip(1).filter_map(|w| w.parse().ok()).collect();
    let get = |i: usize| f.get(i).copied().unwrap_or(0);
    Some(CpuTimes {
        busy: get(0) + get(1) + get(2) + get(5) + get(6) + get(7),
        idle: get(3),
        iowait: get(4),
    })
}

/// Now.
pub fn now() -> Option<CpuTimes> {
    parse(&std::fs::read_to_string("/proc/stat").ok()?)
}

impl CpuTimes {
    /// From `self` to `later`: the share of all CPUs' time that was busy, and that was iowait
    /// (each 0 to 1); None when no time passed.
    pub fn until(&self, later: &CpuTimes) -> Option<(f64, f64)> {
        let busy = later.busy.saturating_sub(self.busy) as f64;
        let idle = later.idle.saturating_sub(self.idle) as f64;
        let wait = later.iowait.saturating_sub(self.iowait) as f64;
        let all = busy + idle + wait;
        (all > 0.0).then(|| (busy / all, wait / all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_is_busy_idle_and_iowait() {
        let a = parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n").unwrap();
        let b = parse("cpu  300 0 150 900 50 0 0 0 0 0\n").unwrap();
        assert_eq!(
            a,
            CpuTimes {
                busy: 150,
                idle: 800,
                iowait: 50
            }
        );
        let (busy, wait) = a.until(&b).unwrap();
        assert!((busy - 0.75).abs() < 1e-9 && wait == 0.0);
    }
}
