//! Turning a job into a plan: defaults, files per worker, and every check that must pass before
//! a byte is written (targets, sizes, free space, O_DIRECT support, back-end limits).

use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
use storlab_model::plan::{
    BackendKind, BlockSizes, FileRegion, FsyncPolicy, GenerationRange, PhaseKind, PhasePlan, WorkerFile, VERIFY_BLOCK,
};
use storlab_model::settings::FileSizes;
use storlab_units::Size;

use crate::{Job, PhaseSettings, Settings, WorkloadError};

/// What a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A directory: storlab creates one file per worker in it and removes them afterwards.
    Directory,
    /// A file that does not exist yet: storlab creates it, the workers share it, and it is
    /// removed afterwards.
    NewFile,
    /// An existing file: used in place, never truncated or removed.
    File,
    /// A block device named with --allow-device.
    Device,
    /// /dev/null (writes vanish) or /dev/zero (reads give zeros): the kernel's own sink and
    /// source, to measure the engine without a filesystem (fio's examples use them).
    CharDevice,
}

/// Options that do not come from the job.
#[derive(Debug, Clone, Default)]
pub struct ResolveOptions {
    /// Block devices the user allowed storlab to use (--allow-device).
    pub allow_devices: Vec<PathBuf>,
    /// Distinguishes this run's files from another run's in the same directory.
    pub file_tag: String,
    /// The seed when the job gives none.
    pub default_seed: u64,
}

/// A validated job, ready for the engine.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The job's name.
    pub name: String,
    /// The targets and what each is.
    pub targets: Vec<(PathBuf, TargetKind)>,
    /// The phases, resolved (not in the plan's document: each phase's plan is stored with the
    /// phase).
    #[serde(skip_serializing)]
    pub phases: Vec<PhasePlan>,
    /// Files storlab creates (and removes at the end unless asked to keep them).
    pub created_files: Vec<PathBuf>,
    /// The run's seed.
    pub seed: u64,
    /// Bytes of the whole file set (all workers' regions).
    pub file_set_bytes: u64,
}

/// What shapes a file set's files: its workers, their size and alignment, whether workers on
/// one file split it or each work over all of it, and where their regions start (fio's offset
/// and offset_increment).
#[derive(Clone, Copy)]
struct SetShape {
    threads: u32,
    size: Option<u64>,
    align: u64,
    whole: bool,
    offsets: (u64, u64),
    /// Files per worker in a directory target (fio's nrfiles), and their sizes when given.
    files: u32,
    file_sizes: Option<FileSizes>,
    /// Draws the sizes of a range of file sizes.
    seed: u64,
}

/// The sizes of one worker's `n` files in a directory, as fio's filesetup.c gives them: each
/// drawn from `sizes` (a multiple of `align`, at least one block), or, without sizes, `total`
/// shared out with the first files a block larger where it does not divide evenly.
fn file_sizes(n: u32, total: u64, sizes: Option<FileSizes>, align: u64, seed: u64) -> Vec<u64> {
    let n = n.max(1) as u64;
    match sizes {
        Some(FileSizes { low, high }) => {
            let mut state = seed;
            (0..n)
                .map(|_| {
                    // splitmix64: a size per file, the same for the same seed (a read phase
                    // and a later run with the seed find the files the write made).
                    state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^= z >> 31;
                    let span = high - low;
                    let v = low
                        + if span == 0 {
                            0
                        } else {
                            (span as f64 * (z >> 11) as f64 / (1u64 << 53) as f64) as u64
                        };
                    (v / align * align).max(align)
                })
                .collect()
        }
        None => {
            let each = total / n / align * align;
            let extra = (total - each * n) / align;
            (0..n).map(|i| each + if i < extra { align } else { 0 }).collect()
        }
    }
}

/// One file per worker in each directory target (named `PREFIX-W.dat`), workers sharing a
/// file target in equal regions (or each over all of it): the workers of a file set, and the
/// files storlab creates.
fn place_workers(
    targets: &[(PathBuf, TargetKind, Option<u64>)],
    mine: &[usize],
    shape: &SetShape,
    prefix: &str,
) -> Result<(Vec<WorkerFile>, Vec<PathBuf>), WorkloadError> {
    let SetShape {
        threads,
        size,
        align,
        whole,
        offsets,
        files,
        file_sizes: sizes,
        seed,
    } = *shape;
    if files > 1 || sizes.is_some() {
        if let Some((path, kind, _)) = mine
            .iter()
            .map(|&ti| &targets[ti])
            .find(|(_, k, _)| *k != TargetKind::Directory)
        {
            let what = if files > 1 { "nrfiles" } else { "filesize" };
            return Err(target_error(
                path,
                format!("{what} shapes the files storlab makes in a directory, and this is {}: give a directory target, or a size for this one", match kind {
                    TargetKind::NewFile => "a new file",
                    TargetKind::Device => "a device",
                    TargetKind::CharDevice => "a character device",
                    _ => "an existing file",
                }),
            ));
        }
    }
    // fio's offset and offset_increment: worker w's region starts this far in.
    let base = |w: u64| offsets.0 + w * offsets.1;
    let mut workers: Vec<WorkerFile> = Vec::new();
    let mut created = Vec::new();
    let nt = mine.len() as u32;
    for (k, &ti) in mine.iter().enumerate() {
        let (path, kind, len) = &targets[ti];
        let own: Vec<u32> = (0..threads).filter(|w| w % nt == k as u32).collect();
        if own.is_empty() {
            continue;
        }
        match kind {
            TargetKind::Directory if files <= 1 && sizes.is_none() => {
                for w in &own {
                    let f = path.join(format!("{prefix}-{w}.dat"));
                    workers.push(WorkerFile::one(
                        f.clone(),
                        base(*w as u64),
                        size.unwrap_or(DEFAULT_SIZE),
                        true,
                        ti as u16,
                    ));
                    created.push(f);
                }
            }
            TargetKind::Directory => {
                // Several files per worker (fio's nrfiles, filesize): PREFIX-W.F.dat.
                for w in &own {
                    let lens = file_sizes(
                        files,
                        size.unwrap_or(DEFAULT_SIZE),
                        sizes,
                        align,
                        seed ^ (*w as u64).wrapping_mul(0xA076_1D64_78BD_642F),
                    );
                    if lens.contains(&0) {
                        return Err(target_error(path, format!("size {} shared by {files} files leaves less than one block ({}) each: give fewer files or a larger size", Size(size.unwrap_or(DEFAULT_SIZE)), Size(align))));
                    }
                    let mut regions = lens.iter().enumerate().map(|(j, len)| {
                        let f = path.join(format!("{prefix}-{w}.{j}.dat"));
                        created.push(f.clone());
                        (f, *len)
                    });
                    let (first, len) = regions.next().expect("a worker's first file");
                    let mut wf = WorkerFile::one(first, base(*w as u64), len, true, ti as u16);
                    wf.more = regions
                        .map(|(path, len)| FileRegion {
                            path,
                            offset: base(*w as u64),
                            len,
                        })
                        .collect();
                    workers.push(wf);
                }
            }
            TargetKind::NewFile | TargetKind::File | TargetKind::Device | TargetKind::CharDevice => {
                let total = match (kind, size, len) {
                    (TargetKind::NewFile, s, _) => s.unwrap_or(DEFAULT_SIZE),
                    (_, None, Some(l)) => l.saturating_sub(offsets.0),
                    (_, Some(s), Some(l)) if s > *l => {
                        return Err(target_error(
                            path,
                            format!("size {} is larger than this existing {} ({}): storlab does not grow files it did not create; give a size of at most {}", Size(s), if *kind == TargetKind::Device { "device" } else { "file" }, Size(*l), Size(*l)),
                        ))
                    }
                    (_, Some(s), _) => s,
                    (_, None, None) => DEFAULT_SIZE,
                };
                let m = own.len() as u64;
                // Split: each worker its own part; whole: each over all of it.
                let share = if whole {
                    total / align * align
                } else {
                    total / m / align * align
                };
                if share == 0 {
                    return Err(target_error(path, format!("{} shared by {m} workers leaves less than one block ({}) each: use fewer threads or a larger size", Size(total), Size(align))));
                }
                let end = base(m - 1) + if whole { share } else { m * share };
                if let (Some(l), TargetKind::File | TargetKind::Device) = (len, kind) {
                    if end > *l {
                        return Err(target_error(
                            path,
                            format!("offset {} (offset_increment {}) with size {} reaches {}, beyond its end ({}): storlab does not grow files it did not create", Size(offsets.0), Size(offsets.1), Size(total), Size(end), Size(*l)),
                        ));
                    }
                }
                for j in 0..m {
                    workers.push(WorkerFile::one(
                        path.clone(),
                        base(j) + if whole { 0 } else { j * share },
                        share,
                        *kind == TargetKind::NewFile,
                        ti as u16,
                    ));
                }
                if *kind == TargetKind::NewFile {
                    created.push(path.clone());
                }
            }
        }
    }
    Ok((workers, created))
}

/// A phase's settings: the job's, with the phase's own laid over them, defaults applied.
fn effective(job: &Settings, phase: &Settings) -> PhaseSettings {
    let mut s = job.clone();
    s.overlay(phase);
    let mut e = s.resolve();
    // A runtime of 0 is a phase of one pass, as no runtime is.
    e.runtime = e.runtime.filter(|d| d.0 > 0);
    e
}

/// The default file size per worker when the job gives none.
pub const DEFAULT_SIZE: u64 = 1 << 30;

fn target_error(path: &Path, message: impl Into<String>) -> WorkloadError {
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

fn classify(p: &Path, opts: &ResolveOptions) -> Result<(TargetKind, Option<u64>), WorkloadError> {
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => {
            writable_dir(p)?;
            Ok((TargetKind::Directory, None))
        }
        Ok(m) if m.is_file() => Ok((TargetKind::File, Some(m.len()))),
        Ok(m) if m.file_type().is_block_device() => {
            let canon = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            let allowed = opts
                .allow_devices
                .iter()
                .any(|a| std::fs::canonicalize(a).map(|a| a == canon).unwrap_or(false));
            if !allowed {
                return Err(target_error(
                    p,
                    format!("is a block device: writing to it destroys what it holds; to use it, add --allow-device {} (naming this device)", p.display()),
                ));
            }
            Ok((TargetKind::Device, device_size(p)))
        }
        Ok(m) if m.file_type().is_char_device() => {
            let canon = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            if canon == Path::new("/dev/null") || canon == Path::new("/dev/zero") {
                Ok((TargetKind::CharDevice, None))
            } else {
                Err(target_error(
                    p,
                    "is a character device: storlab takes /dev/null and /dev/zero, not others",
                ))
            }
        }
        Ok(_) => Err(target_error(
            p,
            "is neither a directory, a regular file nor a block device",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if parent.is_dir() {
                writable_dir(parent)
                    .map_err(|_| target_error(p, format!("cannot be created: {} is not writable", parent.display())))?;
                Ok((TargetKind::NewFile, None))
            } else {
                Err(target_error(
                    p,
                    "does not exist: create the directory first, or name an existing directory or file",
                ))
            }
        }
        Err(e) => Err(target_error(p, format!("cannot be examined: {e}"))),
    }
}

/// Tries O_DIRECT where the files will live; Err names the filesystem that refuses it.
fn probe_direct(dir_or_file: &Path, kind: TargetKind, tag: &str) -> Result<(), WorkloadError> {
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

/// True when the page cache could have flattered a phase: the file set is smaller than three
/// times the machine's memory and the phase neither bypassed the cache (O_DIRECT) nor, for
/// writes, forced data out (O_SYNC or a flush).
pub fn cache_may_flatter(phase: &PhasePlan, file_set_bytes: u64, memory_bytes: u64) -> bool {
    if phase.settings.engine == BackendKind::Null
        || phase.settings.direct
        || file_set_bytes >= memory_bytes.saturating_mul(3)
    {
        return false;
    }
    if phase.kind.reads() {
        return true;
    }
    !phase.settings.sync && phase.settings.fsync == FsyncPolicy::None
}

/// Validates `job` and turns it into a plan.
pub fn resolve(job: &Job, opts: &ResolveOptions) -> Result<Plan, WorkloadError> {
    if job.targets.is_empty() {
        return Err(WorkloadError::invalid(
            &job.origin,
            "no target: give --target DIR (or target = [\"DIR\"] in the job file)",
        ));
    }
    if job.phases.is_empty() {
        return Err(WorkloadError::invalid(
            &job.origin,
            "no phase: give --phase NAME (or phase = [\"write\", \"read\"] in the job file)",
        ));
    }
    let effs: Vec<PhaseSettings> = job.phases.iter().map(|(_, s)| effective(&job.settings, s)).collect();
    let origin_of = |i: usize| format!("{}: phase {} ({})", job.origin, i + 1, job.phases[i].0.name());

    // The file sets: the phases of one set share their files, one per worker (a job's phases
    // are one set unless its streams say otherwise: a fio job file's jobs each have theirs).
    let set_of = |i: usize| job.streams.get(i).map(|s| s.set.as_str()).unwrap_or("");
    let mut sets: Vec<&str> = Vec::new();
    for i in 0..job.phases.len() {
        if !sets.contains(&set_of(i)) {
            sets.push(set_of(i));
        }
    }
    let all_null = effs.iter().all(|e| e.engine == BackendKind::Null);

    let mut targets: Vec<(PathBuf, TargetKind, Option<u64>)> = Vec::new();
    let mut set_workers: Vec<Vec<WorkerFile>> = Vec::new();
    // Sets that write until the filesystem is full: no free space to check.
    let mut fill_sets: Vec<bool> = Vec::new();
    let mut created: Vec<PathBuf> = Vec::new();
    for (si, set) in sets.iter().enumerate() {
        let members: Vec<usize> = (0..job.phases.len()).filter(|i| set_of(*i) == *set).collect();
        let first = members[0];
        // The things that shape a set's files must agree within it.
        let threads = effs[first].threads;
        let size = effs[first].size;
        for &i in &members {
            let e = &effs[i];
            if e.threads != threads {
                return Err(WorkloadError::invalid(origin_of(i), format!("threads is {} here but {threads} in phase {}: the phases share the same files, so threads must be the same", e.threads, first + 1)));
            }
            if e.size != size {
                return Err(WorkloadError::invalid(
                    origin_of(i),
                    format!(
                        "size differs from phase {}: the phases share the same files, so size must be the same",
                        first + 1
                    ),
                ));
            }
        }
        let own = job.streams.get(first).map(|s| &s.targets).filter(|t| !t.is_empty());
        let mut mine = Vec::new();
        for t in own.unwrap_or(&job.targets) {
            let at = match targets.iter().position(|(p, _, _)| p == t) {
                Some(k) => k,
                None => {
                    let (kind, len) = classify(t, opts)?;
                    targets.push((t.clone(), kind, len));
                    targets.len() - 1
                }
            };
            mine.push(at);
        }
        let align = members.iter().map(|i| effs[*i].bs.max()).max().unwrap_or(4096).max(1);
        let prefix = if sets.len() == 1 {
            format!("storlab-{}", opts.file_tag)
        } else {
            format!("storlab-{}-{si}", opts.file_tag)
        };
        let whole = effs[first].share == storlab_model::settings::Share::Whole;
        let offsets = (effs[first].offset, effs[first].offset_increment);
        for &i in &members {
            if (effs[i].offset, effs[i].offset_increment) != offsets {
                return Err(WorkloadError::invalid(origin_of(i), format!("offset differs from phase {}: the phases share the same files, so their regions must start at the same place", first + 1)));
            }
        }
        // fill: without a size a file is bounded only by its filesystem's size, and ENOSPC
        // ends the writing (fio's fill_device sets size to -1).
        let fills = members.iter().any(|i| effs[*i].fill);
        // Writes that go on past errors (ENOSPC among them) are not held to the free space.
        let goes_past = members.iter().any(|i| effs[*i].continue_on_error.covers(true));
        let size = match size {
            None if fills => {
                let at = &targets[mine[0]];
                let dir = match at.1 {
                    TargetKind::Directory => at.0.clone(),
                    _ => {
                        at.0.parent()
                            .filter(|p| !p.as_os_str().is_empty())
                            .unwrap_or(Path::new("."))
                            .to_path_buf()
                    }
                };
                let total = storlab_env::space::statvfs(&dir)
                    .map(|s| s.size)
                    .filter(|s| *s > 0)
                    .ok_or_else(|| {
                        target_error(
                            &dir,
                            "fill needs the size of this filesystem, and statvfs(2) gives none: give a size",
                        )
                    })?;
                Some(total / align * align)
            }
            s => s,
        };
        // Files per worker and their sizes shape the set's files too.
        let (files, file_sizes) = (effs[first].nrfiles, effs[first].filesize);
        for &i in &members {
            if (effs[i].nrfiles, effs[i].filesize) != (files, file_sizes) {
                return Err(WorkloadError::invalid(origin_of(i), format!("nrfiles or filesize differs from phase {}: the phases share the same files, so they must be the same", first + 1)));
            }
            if files > 1 && effs[i].fill {
                return Err(WorkloadError::invalid(
                    origin_of(i),
                    "fill with nrfiles: a worker fills the filesystem through one file; give nrfiles = 1",
                ));
            }
            if files > 1 && effs[i].engine == BackendKind::Stdio {
                return Err(WorkloadError::invalid(
                    origin_of(i),
                    "nrfiles with engine stdio: a stdio stream is one file's; use psync",
                ));
            }
        }
        let shape = SetShape {
            threads,
            size,
            align,
            whole,
            offsets,
            files,
            file_sizes,
            seed: job.settings.seed.unwrap_or(opts.default_seed) ^ si as u64,
        };
        let (workers, made) = place_workers(&targets, &mine, &shape, &prefix)?;
        for f in made {
            if !created.contains(&f) {
                created.push(f);
            }
        }
        set_workers.push(workers);
        fill_sets.push(fills || goes_past);
    }
    let file_set_bytes: u64 = set_workers.iter().flatten().map(|w| w.total_len()).sum();

    // Per-phase checks.
    // Headers are written whenever the job verifies anywhere, so that a write-only job's files
    // can be verified by a later run (with the same seed).
    let any_verify = effs.iter().any(|e| e.verify);
    let seed = job.settings.seed.unwrap_or(opts.default_seed);
    let mut phases = Vec::new();
    // Each set's write generations: what its files hold.
    let mut gens: Vec<(u32, u32)> = vec![(0, 0); sets.len()];
    for (i, ((kind, _), e)) in job.phases.iter().zip(&effs).enumerate() {
        let origin = origin_of(i);
        let si = sets.iter().position(|s| *s == set_of(i)).expect("the phase's set");
        let workers = &set_workers[si];
        let (mut gen, mut full_gen) = gens[si];
        let region = workers.iter().flat_map(|w| w.regions().map(|r| r.2)).min().unwrap_or(0);
        if e.bs.max() > region {
            return Err(WorkloadError::invalid(
                &origin,
                format!(
                    "bs {} is larger than the file size {}: make bs at most the size, or size at least the bs",
                    Size(e.bs.max()),
                    Size(region)
                ),
            ));
        }
        if e.runtime.is_none()
            && matches!(
                kind,
                PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread | PhaseKind::Backread
            )
        {
            if let BlockSizes::Fixed(b) = e.bs {
                if region % b != 0 {
                    return Err(WorkloadError::invalid(&origin, format!("the file size {} is not a multiple of bs {}: the last block would be partial; choose a size that is", Size(region), Size(b))));
                }
            }
        }
        if e.iodepth > e.engine.max_depth() {
            return Err(WorkloadError::invalid(
                &origin,
                format!("iodepth {} needs an asynchronous back-end: {} does one I/O at a time per worker; use engine = \"io_uring\" or iodepth = 1", e.iodepth, e.engine.name()),
            ));
        }
        if e.iovecs > 1 && e.engine != BackendKind::Pvsync {
            return Err(WorkloadError::invalid(
                &origin,
                format!(
                    "iovecs {} needs engine = \"pvsync\" (preadv/pwritev); {} does one buffer per I/O",
                    e.iovecs,
                    e.engine.name()
                ),
            ));
        }
        if e.iovecs > 1 && (e.bs.min() % e.iovecs as u64 != 0 || e.bs.max() % e.iovecs as u64 != 0) {
            return Err(WorkloadError::invalid(
                &origin,
                format!("bs must divide into iovecs {} equal buffers", e.iovecs),
            ));
        }
        if e.direct && e.engine == BackendKind::Stdio {
            return Err(WorkloadError::invalid(
                &origin,
                "direct with engine stdio: a stdio stream's own buffer cannot meet O_DIRECT's alignment; use psync",
            ));
        }
        if e.direct && e.engine == BackendKind::Mmap {
            return Err(WorkloadError::invalid(&origin, "direct = true cannot work with the mmap back-end (a mapping always goes through the page cache): use psync or io_uring"));
        }
        if e.direct {
            let bad = match &e.bs {
                BlockSizes::Fixed(b) => (*b % 512 != 0).then_some(*b),
                BlockSizes::Mix(m) => m.iter().map(|(b, _)| *b).find(|b| b % 512 != 0),
            };
            if let Some(b) = bad {
                return Err(WorkloadError::invalid(&origin, format!("O_DIRECT needs block sizes that are multiples of the device's logical block size (512 or 4096 bytes); bs {} is not", Size(b))));
            }
        }
        if any_verify {
            let bad = match &e.bs {
                BlockSizes::Fixed(b) => (*b % VERIFY_BLOCK != 0).then_some(*b),
                BlockSizes::Mix(m) => m.iter().map(|(b, _)| *b).find(|b| b % VERIFY_BLOCK != 0),
            };
            if let Some(b) = bad {
                return Err(WorkloadError::invalid(
                    &origin,
                    format!(
                        "verification stamps every 4 KiB, so every bs must be a multiple of 4KiB; bs {} is not",
                        Size(b)
                    ),
                ));
            }
        }
        // Before the job's first write the files may come from an earlier run: any generation.
        let verify_generations = if gen == 0 {
            GenerationRange { min: 0, max: u32::MAX }
        } else {
            GenerationRange {
                min: full_gen,
                max: gen,
            }
        };
        let mut verify_generations = verify_generations;
        let mut generation = gen;
        if kind.writes() {
            gen += 1;
            generation = gen;
            if kind.writes_every_block() {
                full_gen = gen;
            }
            // A phase that reads and writes (randrw) reads blocks it wrote itself.
            verify_generations.max = verify_generations.max.max(gen);
        }
        if e.verify && *kind == PhaseKind::Randrw && e.iodepth > 1 {
            return Err(WorkloadError::invalid(
                &origin,
                "verify on randrw needs iodepth 1: a read and a write of the same block in flight together have no defined result",
            ));
        }
        if e.cmdprio.is_some() && e.engine != BackendKind::IoUring {
            return Err(WorkloadError::invalid(
                &origin,
                format!("cmdprio needs engine io_uring: only its requests carry a priority of their own ({} runs every I/O at the worker's; `priority` sets that)", e.engine.name()),
            ));
        }
        if e.dedupe > 0 && (any_verify || !e.pattern.unique_per_block()) {
            return Err(WorkloadError::invalid(
                &origin,
                if any_verify {
                    "dedupe with verify: every verified 4 KiB carries its own offset, so no two blocks are alike; drop one of them"
                } else {
                    "dedupe with a pattern of zeros or fixed bytes: every block is already the same; use random or compress:NN data"
                },
            ));
        }
        let sequential = matches!(
            kind,
            PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread
        );
        if (e.hole > 0 || e.strided.is_some()) && !sequential {
            return Err(WorkloadError::invalid(
                &origin,
                format!("hole and strided place sequential I/O: a {} phase has none (use them with write, rewrite, read or reread)", kind.name()),
            ));
        }
        if e.steady.is_some() && e.steady_window.0 < 2 * e.interval.0 {
            return Err(WorkloadError::invalid(
                &origin,
                format!(
                    "steady needs a steady_window of two sample intervals ({}) or more",
                    storlab_units::Duration(2 * e.interval.0)
                ),
            ));
        }
        if let Some(b) = e.iodepth_batch.filter(|b| *b > e.iodepth) {
            return Err(WorkloadError::invalid(
                &origin,
                format!("iodepth_batch {b} is larger than iodepth {}: a submission cannot hold more I/Os than are in flight", e.iodepth),
            ));
        }
        let mut settings = e.clone();
        settings.seed = Some(seed);
        phases.push(PhasePlan {
            kind: *kind,
            // With O_DIRECT each I/O goes to the device as soon as it is queued, as fio's
            // default iodepth_batch_submit=1 does: holding completed slots back for one
            // submission cost 15–20 % of a virtual disk's random-read IOPS at depth 32
            // (bench 3a). Buffered I/O mostly completes inside the submission, where one
            // system call for the whole batch is the cheaper way (bench 2).
            submit_batch: e.iodepth_batch.unwrap_or(if e.direct { 1 } else { e.iodepth }),
            settings,
            write_headers: any_verify,
            verify_generations,
            generation,
            seed,
            workers: workers.clone(),
            together: i > 0 && job.streams.get(i).is_some_and(|s| s.together),
            name: job.streams.get(i).map(|s| s.name.clone()).filter(|n| !n.is_empty()),
        });
        gens[si] = (gen, full_gen);
    }

    if !all_null {
        // Free space, per filesystem, for what storlab will create.
        let mut need: Vec<(u64, PathBuf, u64)> = Vec::new();
        for w in set_workers
            .iter()
            .zip(&fill_sets)
            .filter(|(_, fills)| !**fills)
            .flat_map(|(w, _)| w)
            .filter(|w| w.owned)
        {
            let dir = w.path.parent().unwrap_or(Path::new(".")).to_path_buf();
            let dev = std::fs::metadata(&dir).map(|m| m.dev()).unwrap_or(0);
            match need.iter_mut().find(|(d, _, _)| *d == dev) {
                Some(n) => n.2 += w.len,
                None => need.push((dev, dir, w.len)),
            }
        }
        for (_, dir, bytes) in need {
            if let Some(free) = storlab_env::space::statvfs(&dir).and_then(|s| s.free) {
                if bytes > free {
                    return Err(target_error(
                        &dir,
                        format!("the job needs {} here but only {} is free: reduce size or threads, or choose another target", Size(bytes).human(), Size(free).human()),
                    ));
                }
            }
        }
        // O_DIRECT support, probed where the files will live.
        if effs.iter().any(|e| e.direct && e.engine != BackendKind::Null) {
            for (path, kind, _) in &targets {
                probe_direct(path, *kind, &opts.file_tag)?;
            }
        }
    }

    Ok(Plan {
        name: job
            .name
            .clone()
            .unwrap_or_else(|| job.phases.iter().map(|(k, _)| k.name()).collect::<Vec<_>>().join("+")),
        targets: targets.into_iter().map(|(p, k, _)| (p, k)).collect(),
        phases,
        created_files: created,
        seed,
        file_set_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(dir: &Path, extra: &str) -> Job {
        Job::parse(
            &format!("target = [{:?}]\n{extra}", dir.display().to_string()),
            "j.toml",
        )
        .unwrap()
    }

    fn opts() -> ResolveOptions {
        ResolveOptions {
            file_tag: "t".into(),
            default_seed: 1,
            ..Default::default()
        }
    }

    #[test]
    fn files_and_generations() {
        let d = tempfile::tempdir().unwrap();
        let j = job(d.path(), "threads = 2\nsize = \"1m\"\nbs = \"64k\"\nverify = true\nphase = [\"write\", \"randwrite\", \"read\", \"rewrite\", \"read\"]\n");
        let p = resolve(&j, &opts()).unwrap();
        assert_eq!(p.phases.len(), 5);
        assert_eq!(p.created_files.len(), 2);
        assert_eq!(p.file_set_bytes, 2 << 20);
        assert!(p.phases.iter().all(|ph| ph.write_headers));
        assert_eq!(p.phases[2].verify_generations, GenerationRange { min: 1, max: 2 });
        assert_eq!(p.phases[4].verify_generations, GenerationRange { min: 3, max: 3 });
        assert!(p.phases[2].verifies() && !p.phases[0].verifies());
        // Nothing was written by resolving.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn submission_batch_defaults_by_direct() {
        let d = tempfile::tempdir().unwrap();
        let batch = |extra: &str| {
            let p = resolve(&job(d.path(), extra), &opts()).unwrap();
            p.phases[0].submit_batch
        };
        let uring = "engine = \"io_uring\"\niodepth = 16\nphase = [\"write\"]\n";
        assert_eq!(batch(uring), 16);
        assert_eq!(batch(&format!("{uring}direct = true")), 1);
        assert_eq!(batch(&format!("{uring}direct = true\niodepth_batch = 4")), 4);
    }

    #[test]
    fn nonsense_is_refused() {
        let d = tempfile::tempdir().unwrap();
        for (extra, needle) in [
            (
                "size = \"4k\"\nbs = \"1m\"\nphase = [\"read\"]",
                "larger than the file size",
            ),
            ("engine = \"psync\"\niodepth = 8\nphase = [\"read\"]", "asynchronous"),
            ("engine = \"mmap\"\ndirect = true\nphase = [\"read\"]", "mmap"),
            ("direct = true\nbs = 1000\nsize = 1000\nphase = [\"read\"]", "multiples"),
            ("size = \"100p\"\nphase = [\"write\"]", "free"),
            ("phase = [{ kind = \"write\", threads = 2 }, \"read\"]", "threads"),
            (
                "engine = \"io_uring\"\niodepth = 4\niodepth_batch = 8\nphase = [\"read\"]",
                "iodepth_batch 8 is larger than iodepth 4",
            ),
        ] {
            let e = resolve(&job(d.path(), extra), &opts()).unwrap_err().to_string();
            assert!(e.contains(needle), "{extra}: {e}");
        }
        let e = resolve(&job(&d.path().join("missing/deeper"), "phase = [\"read\"]"), &opts())
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
    }

    #[test]
    fn block_devices_need_permission() {
        let Ok(m) = std::fs::metadata("/dev/loop-control") else {
            return;
        };
        let _ = m;
        // /dev/vda may not exist in every container; use any block device present.
        let dev = ["/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.exists());
        let Some(dev) = dev else { return };
        let j = Job::parse(
            &format!("target = [{:?}]\nphase = [\"read\"]\n", dev.display().to_string()),
            "j.toml",
        )
        .unwrap();
        let e = resolve(&j, &opts()).unwrap_err().to_string();
        assert!(e.contains("--allow-device"), "{e}");
    }

    #[test]
    fn cache_flattery_rule() {
        let d = tempfile::tempdir().unwrap();
        let p = resolve(&job(d.path(), "size = \"1m\"\nphase = [\"write\", \"read\"]"), &opts()).unwrap();
        assert!(cache_may_flatter(&p.phases[0], p.file_set_bytes, 1 << 30));
        assert!(!cache_may_flatter(&p.phases[0], p.file_set_bytes, 1 << 10));
        let mut direct = p.phases[1].clone();
        direct.settings.direct = true;
        assert!(!cache_may_flatter(&direct, p.file_set_bytes, 1 << 30));
        let mut flushed = p.phases[0].clone();
        flushed.settings.fsync = FsyncPolicy::End;
        assert!(!cache_may_flatter(&flushed, p.file_set_bytes, 1 << 30));
    }
}
