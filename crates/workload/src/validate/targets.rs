//! The targets themselves, probed on the machine: what each is (a directory, a new or existing
//! file, a block device, /dev/null or /dev/zero), whether it is writable, whether a device may
//! be written — named with --allow-device (fio's rules: any unmounted one), and not in use
//! unless the job says it knows —, the free space for what storlab will create, and whether
//! its filesystem takes O_DIRECT.

use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use storlab_env::mounts::{filesystem_words, nearest_existing};

use storlab_model::plan::WorkerFile;
use storlab_units::Size;

use super::sets::Placed;
use super::{ResolveOptions, TargetKind};
use crate::{Job, WorkloadError};

/// A refusal of a target: its path and what is wrong with it.
pub(super) fn target_error(path: &Path, message: impl Into<String>) -> WorkloadError {
    WorkloadError::Target {
        path: path.display().to_string(),
        message: message.into(),
    }
}

fn writable_dir(p: &Path) -> Result<(), WorkloadError> {
    if storlab_env::space::statvfs(p).is_some_and(|s| s.read_only) {
        return Err(target_error(
            p,
            "is on a read-only filesystem: choose a writable directory",
        ));
    }
    if let Err(e) = rustix::fs::access(p, rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK) {
        return Err(target_error(
            p,
            format!(
                "is not writable by this user ({}): choose a directory you can write to",
                std::io::Error::from(e)
            ),
        ));
    }
    Ok(())
}

fn device_size(p: &Path) -> Option<u64> {
    use std::io::{Seek, SeekFrom};
    std::fs::File::open(p).ok()?.seek(SeekFrom::End(0)).ok()
}

/// Refuses a target under a mount point /etc/fstab (or a systemd mount unit) names that is not
/// mounted now: it would be measured on the filesystem beneath.
fn meant_to_be_mounted(p: &Path) -> Result<(), WorkloadError> {
    let planned = storlab_env::fstab::planned();
    let Some(m) = storlab_env::fstab::unmounted_above(p, &planned, &storlab_env::mounts::mounts()) else {
        return Ok(());
    };
    Err(target_error(
        p,
        format!(
            "is under {}, which {} mounts ({}, {}) but is not mounted now: storlab would measure {} instead; \
             mount it first (mount {}), or name another target",
            m.point.display(),
            m.from,
            m.source,
            m.fs_type,
            filesystem_words(p),
            m.point.display()
        ),
    ))
}

/// What a target that does not exist may be: a new file storlab creates when the job asks
/// for that (`create_target`; fio's and IOzone's command lines), else a refusal naming the
/// nearest existing directory and its filesystem.
fn missing(p: &Path, create: bool) -> Result<(TargetKind, Option<u64>), WorkloadError> {
    let parent = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let meant_a_directory = p.as_os_str().as_encoded_bytes().ends_with(b"/");
    // `%r` and `%h` are each MPI rank's own (docs/mpi.md): a plan checked before the ranks
    // expand them (qualify under mpirun) leaves each rank to check its own path.
    let per_rank = p.to_string_lossy().contains("%r") || p.to_string_lossy().contains("%h");
    if (!create && !per_rank) || meant_a_directory || !parent.is_dir() {
        let nearest = nearest_existing(p);
        let create_it = if meant_a_directory || !parent.is_dir() {
            "create the directory first (mkdir -p), or name an existing directory or file"
        } else {
            "name an existing directory or file, or add --create-target (a job file: create_target = true) to have storlab create this file"
        };
        return Err(target_error(p, format!("does not exist; {nearest}: {create_it}")));
    }
    writable_dir(parent)
        .map_err(|_| target_error(p, format!("cannot be created: {} is not writable", parent.display())))?;
    Ok((TargetKind::NewFile, None))
}

/// True when `--allow-device` named `p` (by any path to the same device).
fn named_by_flag(p: &Path, opts: &ResolveOptions) -> bool {
    let canon = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    opts.allow_devices
        .iter()
        .any(|a| std::fs::canonicalize(a).map(|a| a == canon).unwrap_or(false))
}

/// What a target is, and its length when it is an existing file or device. A block device is
/// held to its rules once the phases that write it are known ([`guard_writes`]); a character
/// device is /dev/null or /dev/zero, named with --allow-device (fio's rules take them as fio
/// does).
pub(super) fn classify(p: &Path, opts: &ResolveOptions, job: &Job) -> Result<(TargetKind, Option<u64>), WorkloadError> {
    meant_to_be_mounted(p)?;
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => {
            writable_dir(p)?;
            Ok((TargetKind::Directory, None))
        }
        Ok(m) if m.is_file() => Ok((TargetKind::File, Some(m.len()))),
        Ok(m) if m.file_type().is_block_device() => Ok((TargetKind::Device, device_size(p))),
        Ok(m) if m.file_type().is_char_device() => {
            let canon = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            if canon != Path::new("/dev/null") && canon != Path::new("/dev/zero") {
                return Err(target_error(
                    p,
                    "is a character device: storlab takes /dev/null and /dev/zero (to measure the engine alone), not others",
                ));
            }
            if !job.fio_device_rules && !named_by_flag(p, opts) {
                return Err(target_error(
                    p,
                    format!("is a character device, not storage: what it measures is the kernel's {} alone; to measure the engine so, add --allow-device {}", if canon == Path::new("/dev/null") { "sink" } else { "source of zeros" }, p.display()),
                ));
            }
            Ok((TargetKind::CharDevice, None))
        }
        Ok(_) => Err(target_error(
            p,
            "is neither a directory, a regular file nor a block device",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing(p, job.create_target),
        Err(e) => Err(target_error(p, format!("cannot be examined: {e}"))),
    }
}

/// The targets the job writes, held to the rules for devices: a block device is written only
/// when --allow-device names it (fio's rules: any), and no device — nor a file that backs a loop
/// device — is written while something uses it (a mounted filesystem, a holder, a btrfs
/// filesystem it belongs to, swap), unless the job says it knows (`--allow-mounted-write`,
/// fio's allow_mounted_write=1). A read needs neither: it harms nothing.
pub(super) fn guard_writes(job: &Job, placed: &Placed, opts: &ResolveOptions) -> Result<(), WorkloadError> {
    let mut checked = std::collections::HashSet::new();
    for (i, (kind, _)) in job.phases.iter().enumerate() {
        if !kind.writes() {
            continue;
        }
        let knows = job.allow_mounted_write || job.streams.get(i).is_some_and(|s| s.allow_mounted_write);
        let set = placed.set_of_phase[i];
        for target in placed.workers[set].iter().flat_map(|w| w.regions().map(|r| r.target)) {
            if !checked.insert((target, knows)) {
                continue;
            }
            let (path, kind, _) = &placed.targets[target as usize];
            guard_one(path, *kind, job, knows, opts)?;
        }
    }
    Ok(())
}

/// One written target held to the rules of [`guard_writes`].
fn guard_one(
    path: &Path,
    kind: TargetKind,
    job: &Job,
    knows: bool,
    opts: &ResolveOptions,
) -> Result<(), WorkloadError> {
    let uses = match kind {
        TargetKind::Device => {
            if !job.fio_device_rules && !named_by_flag(path, opts) {
                return Err(target_error(
                    path,
                    format!("is a block device: writing to it destroys what it holds; to write it, add --allow-device {} (naming this device)", path.display()),
                ));
            }
            storlab_env::in_use::device_uses(path)
        }
        TargetKind::File => storlab_env::in_use::backing_file_uses(path),
        _ => return Ok(()),
    };
    if uses.is_empty() || knows {
        return Ok(());
    }
    let (what, override_word) = if job.fio_device_rules {
        ("the job writes it", "allow_mounted_write=1 (fio's own word for it)")
    } else {
        ("a write phase writes it", "--allow-mounted-write")
    };
    Err(target_error(
        path,
        format!(
            "is in use — {} — and {what}, which would destroy what uses it; stop that use first (umount, swapoff, remove the holder), or, to write it anyway knowing so, add {override_word}",
            uses.join("; ")
        ),
    ))
}

/// Tries O_DIRECT where the files will live; Err names the filesystem that refuses it.
pub(super) fn probe_direct(dir_or_file: &Path, kind: TargetKind, tag: &str) -> Result<(), WorkloadError> {
    let refuse = |e: std::io::Error| {
        let fs = fs_type(dir_or_file);
        target_error(
            dir_or_file,
            format!("the filesystem here{fs} refuses O_DIRECT ({e}): run without direct, or choose a target on a block-device filesystem (ext4, XFS, btrfs)"),
        )
    };
    match kind {
        TargetKind::Directory | TargetKind::NewFile => {
            let dir = if kind == TargetKind::Directory {
                dir_or_file.to_path_buf()
            } else {
                dir_or_file.parent().unwrap_or(Path::new(".")).to_path_buf()
            };
            let probe = dir.join(format!(".storlab-direct-probe-{tag}"));
            let r = (|| -> std::io::Result<()> {
                let f = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(&probe)?;
                let _ = std::fs::remove_file(&probe);
                // One 4 KiB block, aligned as O_DIRECT wants it.
                #[repr(align(4096))]
                struct Block([u8; 4096]);
                let block = Box::new(Block([0; 4096]));
                rustix::io::pwrite(&f, &block.0, 0)?;
                Ok(())
            })();
            let _ = std::fs::remove_file(&probe);
            r.map_err(refuse)
        }
        TargetKind::CharDevice => Err(refuse(std::io::Error::from_raw_os_error(libc::EINVAL))),
        TargetKind::File | TargetKind::Device => std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(dir_or_file)
            .map(|_| ())
            .map_err(refuse),
    }
}

/// The filesystem type of a path, for messages (" (tmpfs)").
fn fs_type(p: &Path) -> String {
    storlab_env::mounts::mount_of(p, &storlab_env::mounts::mounts())
        .map(|m| format!(" ({})", m.fs_type))
        .unwrap_or_default()
}

/// Free space, per filesystem, for the files storlab will create (`created`: those held to
/// it; a set that may fill its filesystem is not). A file already there (a fio job's file kept
/// from its last run) needs only the blocks it does not hold yet: bench-fio runs numjobs=1 and
/// then numjobs=2 on one directory, and the second job reuses the first's file.
pub(super) fn check_free_space<'a>(created: impl Iterator<Item = &'a WorkerFile>) -> Result<(), WorkloadError> {
    // Each file storlab makes is laid out from its start to the end of the furthest region on
    // it (an offset of 100 GiB before a region of 1 GiB needs 101 GiB).
    let mut ends: std::collections::BTreeMap<&Path, u64> = std::collections::BTreeMap::new();
    for r in created.flat_map(|w| w.regions()).filter(|r| r.owned) {
        let end = ends.entry(r.path).or_insert(0);
        *end = (*end).max(r.offset + r.len);
    }
    let mut need: Vec<(u64, PathBuf, u64)> = Vec::new();
    for (path, end) in ends {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let dev = std::fs::metadata(&dir).map(|m| m.dev()).unwrap_or(0);
        let held = std::fs::metadata(path).map(|m| m.blocks() * 512).unwrap_or(0);
        let more = end.saturating_sub(held);
        match need.iter_mut().find(|(d, _, _)| *d == dev) {
            Some(n) => n.2 += more,
            None => need.push((dev, dir, more)),
        }
    }
    for (_, dir, bytes) in need {
        if let Some(free) = storlab_env::space::statvfs(&dir).and_then(|s| s.free) {
            if bytes > free {
                return Err(target_error(
                    &dir,
                    format!(
                        "the job needs {} here but only {} is free: reduce size or threads, or choose another target",
                        Size(bytes).human(),
                        Size(free).human()
                    ),
                ));
            }
        }
    }
    Ok(())
}
