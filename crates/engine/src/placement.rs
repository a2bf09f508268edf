//! Where a worker thread runs: its own descriptor table, its I/O priority, its CPUs and the
//! NUMA nodes its memory comes from (fio's cpus_allowed, cpus_allowed_policy, numa_cpu_nodes,
//! numa_mem_policy, prioclass and prio).

use storlab_model::settings::{CpusPolicy, MemoryPolicy};

use crate::plan::PhasePlan;

/// Gives the calling worker thread a private copy of the descriptor table.
///
/// Why: while a process's table is shared by several threads, every pread/pwrite takes and
/// drops a reference on the file (fdget/fput, two atomic operations on a shared cache line);
/// with a private table the kernel skips both. That is about 3 % of a 4 KiB read from the
/// page cache, and fio (whose jobs are processes) does not pay it either. The copy holds the
/// descriptors open at this moment; it goes away when the thread exits. Files and rings the
/// worker opens afterwards exist in its table only, and close when the worker drops them.
/// Failure (a seccomp filter, say) only costs the speed, so it is ignored.
pub(crate) fn unshare_fd_table() {
    // SAFETY: unshare(CLONE_FILES) affects only the calling thread's descriptor table; this
    // thread uses only descriptors it opens after this call, or that were copied into it.
    unsafe { libc::unshare(libc::CLONE_FILES) };
}

/// Gives the calling worker thread its I/O priority, puts it on its CPUs and its memory on
/// its nodes (fio's prioclass and prio, cpus_allowed, cpus_allowed_policy, numa_cpu_nodes,
/// numa_mem_policy).
pub(crate) fn place_thread(plan: &PhasePlan, index: usize) -> std::io::Result<()> {
    set_io_priority(plan)?;
    set_cpus(plan, index)?;
    set_memory_policy(plan)
}

/// The thread's I/O class and level.
fn set_io_priority(plan: &PhasePlan) -> std::io::Result<()> {
    if let Some(p) = plan.settings.priority {
        // SAFETY: ioprio_set(IOPRIO_WHO_PROCESS = 1, 0 = the calling thread, value) changes
        // only this thread's I/O priority; no memory is passed.
        let r = unsafe { libc::syscall(libc::SYS_ioprio_set, 1, 0, p.value() as libc::c_int) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot set the I/O priority {}:{}: {e}", p.class, p.level),
            ));
        }
    }
    Ok(())
}

/// The thread's CPUs: the whole list, or its own one of them (split).
fn set_cpus(plan: &PhasePlan, index: usize) -> std::io::Result<()> {
    if let Some(cpus) = &plan.settings.cpus {
        let mine: Vec<u32> = match plan.settings.cpus_policy {
            CpusPolicy::Shared => cpus.0.clone(),
            CpusPolicy::Split => vec![cpus.0[index % cpus.0.len()]],
        };
        // SAFETY: cpu_set_t is plain data, zeroed then filled with CPU_SET for CPUs below
        // CPU_SETSIZE; sched_setaffinity(0, …) changes only the calling thread.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for c in &mine {
                if (*c as usize) < libc::CPU_SETSIZE as usize {
                    libc::CPU_SET(*c as usize, &mut set);
                }
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                let e = std::io::Error::last_os_error();
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("cannot run on CPUs {mine:?}: {e}"),
                ));
            }
        }
    }
    Ok(())
}

/// The NUMA nodes the thread's memory comes from.
fn set_memory_policy(plan: &PhasePlan) -> std::io::Result<()> {
    let (mode, nodes): (i32, Vec<u32>) = match &plan.settings.memory_policy {
        MemoryPolicy::Default => return Ok(()),
        MemoryPolicy::Local => (4, Vec::new()),
        MemoryPolicy::Prefer(n) => (1, vec![*n]),
        MemoryPolicy::Bind(n) => (2, n.clone()),
        MemoryPolicy::Interleave(n) => (3, n.clone()),
    };
    let mut mask = [0u64; 16];
    for n in &nodes {
        if *n as usize >= mask.len() * 64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("NUMA node {n} is beyond 1023"),
            ));
        }
        mask[*n as usize / 64] |= 1 << (n % 64);
    }
    // SAFETY: set_mempolicy(2) reads `maxnode` bits from `mask`, which holds 1024; it changes
    // only the calling thread's policy (MPOL_DEFAULT 0, PREFERRED 1, BIND 2, INTERLEAVE 3,
    // LOCAL 4, from linux/mempolicy.h).
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode,
            if nodes.is_empty() {
                std::ptr::null()
            } else {
                mask.as_ptr()
            },
            if nodes.is_empty() {
                0
            } else {
                (mask.len() * 64) as libc::c_ulong
            },
        )
    };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(std::io::Error::new(
            e.kind(),
            format!("cannot place memory on NUMA nodes {nodes:?}: {e}"),
        ));
    }
    Ok(())
}
