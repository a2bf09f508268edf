//! The host's faults: taking a pool's filesystem away (a lazy unmount, a read-only remount, a
//! detached loop device), running a command, starting a background task. Each is carried out
//! only on the host whose own fault plan (its command line or job file) names it, never from
//! the database: an agent running as root does not unmount or run what a database row says.
//!
//! A pool is taken out of service before its filesystem goes (no new files, readers skip it, the
//! files open in it finish), so the catalogue never says a file was deleted that is still on the
//! disk; files waiting in it wait for it to come back, or are lost (named) when its device is
//! detached, since nothing brings a pulled device back.

use std::path::Path;

use storlab_env::mounts::{mount_of, mounts, Mount};
use storlab_model::challenge::{Fault, FaultAction, Pool};

use crate::ChallengeError;

/// True for the actions a host carries out on itself (its mounts, its devices, its commands,
/// its tasks), as against those done inside storlab (drain, stop writers or readers).
pub fn is_host_action(a: FaultAction) -> bool {
    matches!(
        a,
        FaultAction::Unmount | FaultAction::ReadOnly | FaultAction::Detach | FaultAction::Command | FaultAction::Task
    )
}

/// The filesystem a pool is on, refused when taking it away would take more than the user
/// pointed storlab at: the root filesystem, or (for detach) anything but a loop device.
pub fn pool_mount(pool: &Pool, action: FaultAction) -> Result<Mount, ChallengeError> {
    let all = mounts();
    let m = mount_of(&pool.path, &all).ok_or_else(|| {
        ChallengeError::Input(format!(
            "pool {}: cannot tell which filesystem {} is on",
            pool.name,
            pool.path.display()
        ))
    })?;
    // Only a pool that is its filesystem's root is taken away with it: a pool in a directory
    // of /dev/shm must not take /dev/shm with it.
    let is_root = std::fs::canonicalize(&pool.path).is_ok_and(|p| p == Path::new(&m.mount_point));
    if m.mount_point == "/" || !is_root {
        return Err(ChallengeError::Input(format!(
            "a fault {action} on pool {}: {} is not a filesystem of its own (it is on {}, mounted at {}); \
             give the pool its own filesystem, mounted at the pool's directory",
            pool.name,
            pool.path.display(),
            m.source,
            m.mount_point
        )));
    }
    if action == FaultAction::Detach && !is_loop(&m.source) {
        return Err(ChallengeError::Input(format!(
            "a fault detach on pool {}: its filesystem is on {}, not a loop device; detach pulls loop devices only",
            pool.name, m.source
        )));
    }
    Ok(m)
}

fn is_loop(source: &str) -> bool {
    source
        .strip_prefix("/dev/loop")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks a host's fault plan against its pools before anything is written: every pool fault
/// names a pool on a filesystem of its own, every task is a known kind.
pub fn check(pools: &[Pool], faults: &[Fault]) -> Result<(), ChallengeError> {
    for f in faults {
        match f.action {
            FaultAction::Unmount | FaultAction::ReadOnly | FaultAction::Detach => {
                let pool = pools.iter().find(|p| p.name == f.target).ok_or_else(|| {
                    ChallengeError::Input(format!("a fault {} names no pool '{}'", f.action, f.target))
                })?;
                pool_mount(pool, f.action)?;
            }
            FaultAction::Task => {
                storlab_impact::kinds::parse(&f.target)
                    .map_err(|e| ChallengeError::Input(format!("a fault task {}: {e}", f.target)))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Runs a program; its error in words.
fn program(argv: &[&str]) -> Result<String, String> {
    let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
    storlab_impact::task::run(&argv).map_err(|e| e.to_string())
}

/// Unmounts lazily.
pub fn unmount(m: &Mount) -> Result<(), String> {
    program(&["umount", "-l", &m.mount_point]).map(|_| ())
}

/// Mounts it again where it was.
pub fn mount_again(m: &Mount) -> Result<(), String> {
    program(&["mount", "-t", &m.fs_type, &m.source, &m.mount_point]).map(|_| ())
}

/// Remounts read-only, or read-write again.
pub fn remount(m: &Mount, read_only: bool) -> Result<(), String> {
    let how = if read_only { "remount,ro" } else { "remount,rw" };
    program(&["mount", "-o", how, &m.mount_point]).map(|_| ())
}

/// Detaches its loop device (after a lazy unmount, the kernel lets it go when the last open
/// file closes).
pub fn detach(m: &Mount) -> Result<(), String> {
    unmount(m)?;
    program(&["losetup", "-d", &m.source]).map(|_| ())
}

/// Runs a fault plan's command with the shell; its output's first line, or why it failed.
pub fn command(cmd: &str) -> String {
    match program(&["sh", "-c", cmd]) {
        Ok(out) => {
            let first = out.lines().next().unwrap_or("").trim().to_string();
            if first.is_empty() {
                format!("command `{cmd}` ran")
            } else {
                format!("command `{cmd}` ran: {first}")
            }
        }
        Err(e) => format!("command `{cmd}` failed: {e}"),
    }
}

/// The pools on the mount point `m` (several pools may share a filesystem: they go together).
pub fn pools_on(pools: &[Pool], m: &Mount) -> Vec<usize> {
    let all = mounts();
    pools
        .iter()
        .enumerate()
        .filter(|(_, p)| mount_of(&p.path, &all).is_some_and(|q| q.id == m.id))
        .map(|(i, _)| i)
        .collect()
}
