//! What this machine can hold of a run now: memory a process may still take, threads it may
//! still start and file descriptors it may still open — each the smallest of the limits that
//! apply (the kernel's, this process's cgroup's and its rlimits'), with the limit's name, so that
//! a refusal says which one it met.

/// One resource: how much is left, and which limit leaves that much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// How much is left (bytes, threads or descriptors).
    pub left: u64,
    /// The limit that leaves it, as its owner names it ("MemAvailable in /proc/meminfo").
    pub limit: String,
}

impl Room {
    fn least(rooms: impl IntoIterator<Item = Option<Room>>) -> Option<Room> {
        rooms.into_iter().flatten().min_by_key(|r| r.left)
    }
}

/// What is left for a run to use now.
#[derive(Debug, Clone)]
pub struct Capacity {
    /// Memory: the kernel's estimate of what can be allocated without swapping, and the
    /// cgroup's limit less its usage.
    pub memory: Option<Room>,
    /// Threads: the kernel's threads-max and pid_max less what runs now, the cgroup's pids.max,
    /// RLIMIT_NPROC (not for root).
    pub threads: Option<Room>,
    /// File descriptors: RLIMIT_NOFILE's hard limit (storlab raises its soft limit to it) less
    /// what this process holds open.
    pub descriptors: Option<Room>,
}

/// Reads what is left now.
pub fn capacity() -> Capacity {
    Capacity {
        memory: Room::least([meminfo_available(), cgroup_memory()]),
        threads: Room::least([kernel_threads(), cgroup_pids(), rlimit_nproc()]),
        descriptors: descriptors(),
    }
}

/// Raises this process's soft limit of open files to its hard limit (as fio and most servers
/// do at start), so that a run of many files is held to the real limit. Returns the new limit.
pub fn raise_open_files() -> Option<u64> {
    // SAFETY: getrlimit/setrlimit read and write the plain struct we pass.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return None;
        }
        if r.rlim_cur < r.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: r.rlim_max,
                rlim_max: r.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return Some(r.rlim_max as u64);
            }
        }
        Some(r.rlim_cur as u64)
    }
}

fn meminfo_available() -> Option<Room> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(Room {
        left: kib * 1024,
        limit: "MemAvailable in /proc/meminfo".into(),
    })
}

/// This process's cgroup directories under a controller's hierarchy: cgroup v2's unified one
/// ("0::/path"), or v1's for `controller`; the cgroup itself and its ancestors (a limit on a
/// parent holds its children too).
pub(crate) fn cgroup_dirs(controller: &str) -> Vec<std::path::PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut dirs = Vec::new();
    for l in text.lines() {
        let mut f = l.splitn(3, ':');
        let (_, ctrls, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        let root = if ctrls.is_empty() {
            // cgroup v2 sits at /sys/fs/cgroup, or beside v1's at /sys/fs/cgroup/unified.
            ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
                .iter()
                .map(std::path::PathBuf::from)
                .find(|r| r.join("cgroup.controllers").exists())
        } else if ctrls.split(',').any(|c| c == controller) {
            Some(std::path::PathBuf::from("/sys/fs/cgroup").join(controller))
        } else {
            None
        };
        let Some(root) = root else { continue };
        let mut at = root.join(path.trim_start_matches('/'));
        loop {
            dirs.push(at.clone());
            if at == root || !at.pop() {
                break;
            }
        }
    }
    dirs
}

fn read_u64(p: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// The tightest memory limit of this process's cgroups less their usage: v2's memory.max and
/// memory.current, v1's memory.limit_in_bytes and memory.usage_in_bytes ("max" or v1's huge
/// default means none).
fn cgroup_memory() -> Option<Room> {
    let mut rooms = Vec::new();
    for d in cgroup_dirs("memory") {
        for (limit, usage) in [
            ("memory.max", "memory.current"),
            ("memory.limit_in_bytes", "memory.usage_in_bytes"),
        ] {
            let (Some(l), Some(u)) = (read_u64(&d.join(limit)), read_u64(&d.join(usage))) else {
                continue;
            };
            if l >= 1 << 62 {
                continue;
            }
            rooms.push(Some(Room {
                left: l.saturating_sub(u),
                limit: format!("the cgroup's {} ({}) less its usage", d.join(limit).display(), l),
            }));
        }
    }
    Room::least(rooms)
}

/// The kernel's threads-max and pid_max, less the threads and processes that exist now
/// (/proc/loadavg's fourth field counts them).
fn kernel_threads() -> Option<Room> {
    let now: u64 = std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .nth(3)?
        .split_once('/')?
        .1
        .parse()
        .ok()?;
    let max = read_u64(std::path::Path::new("/proc/sys/kernel/threads-max"))?;
    let pids = read_u64(std::path::Path::new("/proc/sys/kernel/pid_max")).unwrap_or(max);
    let (limit, name) = if pids < max {
        (pids, "/proc/sys/kernel/pid_max")
    } else {
        (max, "/proc/sys/kernel/threads-max")
    };
    Some(Room {
        left: limit.saturating_sub(now),
        limit: format!("{name} ({limit}) less the {now} threads running"),
    })
}

fn cgroup_pids() -> Option<Room> {
    let rooms = cgroup_dirs("pids").into_iter().map(|d| {
        let max = read_u64(&d.join("pids.max"))?;
        let current = read_u64(&d.join("pids.current")).unwrap_or(0);
        Some(Room {
            left: max.saturating_sub(current),
            limit: format!(
                "the cgroup's {} ({max}) less its {current} tasks",
                d.join("pids.max").display()
            ),
        })
    });
    Room::least(rooms)
}

/// RLIMIT_NPROC, which the kernel does not hold root to.
fn rlimit_nproc() -> Option<Room> {
    // SAFETY: geteuid cannot fail; getrlimit fills the plain struct we pass.
    unsafe {
        if libc::geteuid() == 0 {
            return None;
        }
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NPROC, &mut r) != 0 || r.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        Some(Room {
            left: r.rlim_cur as u64,
            limit: format!("this user's process limit (ulimit -u: {})", r.rlim_cur),
        })
    }
}

fn descriptors() -> Option<Room> {
    let limit = raise_open_files()?;
    let open = std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count() as u64)
        .unwrap_or(0);
    Some(Room {
        left: limit.saturating_sub(open),
        limit: format!("the open-files limit (ulimit -n: {limit}) less the {open} open now"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_room_for_one_more_of_each() {
        let c = capacity();
        assert!(c.memory.as_ref().is_some_and(|m| m.left > 1 << 20), "{c:?}");
        assert!(c.threads.as_ref().is_some_and(|t| t.left > 1), "{c:?}");
        assert!(c.descriptors.as_ref().is_some_and(|d| d.left > 1), "{c:?}");
    }
}
