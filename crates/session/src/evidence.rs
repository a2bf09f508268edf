//! What the machine did while a phase ran, read around it for the phase's bound (crates/stats
//! bound.rs): each disk's counters under the targets and beneath them (md and dm members, the
//! disk under a loop device's file, a btrfs filesystem's other devices), all CPUs' busy and
//! iowait time, the cgroup's I/O limits on those devices, and an NFS target's RPC counters. Read once before and once after
//! the phase — never per I/O.

use storlab_env::diskstats::{self, DiskLine};
use storlab_model::result::{DiskUtil, PhaseContext};

/// The readings taken as a phase starts.
pub struct Watch {
    disks: (Vec<DiskLine>, std::time::Instant),
    /// Each device beneath, with what it is beneath.
    under: Vec<(String, String)>,
    cpu: Option<storlab_env::cpustat::CpuTimes>,
    /// Each NFS target's RPC counters as the phase starts.
    nfs: Vec<(std::path::PathBuf, Vec<storlab_env::nfs::NfsOp>)>,
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
        let on_nfs: Vec<std::path::PathBuf> = paths.iter().map(|p| p.to_path_buf()).collect();
        Watch::start(&disks).with_nfs(&on_nfs)
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
            nfs: Vec::new(),
            context,
        }
    }

    /// Watches the RPC counters of the NFS mounts holding `paths` too.
    pub fn with_nfs(mut self, paths: &[std::path::PathBuf]) -> Watch {
        self.nfs = paths
            .iter()
            .map(|p| (p.clone(), storlab_env::nfs::counters(p)))
            .collect();
        self
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
        // Each NFS mount's operations over the phase, summed per operation across mounts.
        for (path, before) in &self.nfs {
            for d in storlab_env::nfs::delta(before, &storlab_env::nfs::counters(path)) {
                match context.nfs.iter_mut().find(|o| o.op == d.op) {
                    Some(o) => {
                        o.calls += d.calls;
                        o.rtt_ms += d.rtt_ms;
                        o.exec_ms += d.exec_ms;
                    }
                    None => context.nfs.push(d),
                }
            }
        }
        let spent = self.cpu.zip(storlab_env::cpustat::now()).and_then(|(a, b)| a.until(&b));
        if let Some((busy, wait)) = spent {
            context.cpu_busy = busy;
            context.cpu_iowait = wait;
        }
        (disks, spent.map(|_| context))
    }
}
