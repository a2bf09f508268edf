//! What the machine did while a phase ran, read around it for the phase's bound (crates/stats
//! bound.rs): each disk's counters under the targets and beneath them (md and dm members, the
//! disk under a loop device's file, a btrfs filesystem's other devices), all CPUs' busy and
//! iowait time, and the cgroup's I/O limits on those devices. Read once before and once after
//! the phase — never per I/O.

use storlab_env::diskstats::{self, DiskLine};
use storlab_model::result::{DiskUtil, PhaseContext};

/// The readings taken as a phase starts.
pub struct Watch {
    disks: (Vec<DiskLine>, std::time::Instant),
    /// Each device beneath, with what it is beneath.
    under: Vec<(String, String)>,
    cpu: Option<storlab_env::cpustat::CpuTimes>,
    context: PhaseContext,
}

impl Watch {
    /// Starts watching the disks under `paths` (a metadata workload's directory) and those
    /// beneath them.
    pub fn for_paths(paths: &[&std::path::Path]) -> Watch {
        let mut disks: Vec<String> = Vec::new();
        for d in paths.iter().filter_map(|p| storlab_env::stack::disk_under(p)) {
            if !disks.contains(&d) {
                disks.push(d);
            }
        }
        Watch::start(&disks)
    }

    /// Starts watching the target's disks `disks` and the devices beneath them.
    pub fn start(disks: &[String]) -> Watch {
        let mut all = disks.to_vec();
        let mut under = Vec::new();
        for d in disks {
            for b in storlab_env::stack::beneath(d) {
                if !all.contains(&b.name) {
                    all.push(b.name.clone());
                    under.push((b.name, b.under));
                }
            }
        }
        let context = PhaseContext {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            throttles: storlab_env::throttle::throttles(&all),
            ..PhaseContext::default()
        };
        Watch {
            cpu: storlab_env::cpustat::now(),
            disks: diskstats::read(&all),
            under,
            context,
        }
    }

    /// The phase is over: each disk's counters over it (the target's disks first, fio's
    /// disk_util), and the machine's context.
    pub fn finish(self) -> (Vec<DiskUtil>, Option<PhaseContext>) {
        let (before, at) = self.disks;
        let mut disks = if before.is_empty() {
            Vec::new()
        } else {
            let elapsed_ms = at.elapsed().as_secs_f64() * 1e3;
            let (after, _) = diskstats::read(&before.iter().map(|l| l.name.clone()).collect::<Vec<_>>());
            diskstats::utilisation(&before, &after, elapsed_ms)
        };
        for d in &mut disks {
            d.under = self.under.iter().find(|(n, _)| *n == d.name).map(|(_, u)| u.clone());
        }
        let mut context = self.context;
        let spent = self.cpu.zip(storlab_env::cpustat::now()).and_then(|(a, b)| a.until(&b));
        if let Some((busy, wait)) = spent {
            context.cpu_busy = busy;
            context.cpu_iowait = wait;
        }
        (disks, spent.map(|_| context))
    }
}
