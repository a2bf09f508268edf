//! File sets: the phases of one set share their files, one per worker (a job's phases are one
//! set unless its streams say otherwise: a fio job file's jobs each have theirs). Each set's
//! workers placed on its targets — a file per worker in a directory (several with nrfiles),
//! workers sharing a file or device in equal regions or each over all of it — with the sizes,
//! offsets and alignment its phases agree on.

use std::path::{Path, PathBuf};

use storlab_model::plan::{BackendKind, FileRegion, WorkerFile};
use storlab_model::settings::{FileSizes, Share};
use storlab_units::Size;

use super::targets::{classify, target_error};
use super::{origin_of, ResolveOptions, TargetKind, DEFAULT_SIZE};
use crate::{Job, PhaseSettings, WorkloadError};

/// The job's file sets placed: the targets (each with what it is and its length), the sets
/// (by name) and each phase's set, each set's workers, whether a set may fill its
/// filesystem (no free space to check), and the files storlab creates.
pub(super) struct Placed {
    pub(super) targets: Vec<(PathBuf, TargetKind, Option<u64>)>,
    pub(super) sets: Vec<String>,
    pub(super) set_of_phase: Vec<usize>,
    pub(super) workers: Vec<Vec<WorkerFile>>,
    pub(super) fills: Vec<bool>,
    pub(super) created: Vec<PathBuf>,
}

impl Placed {
    /// The workers whose files storlab will create (their regions marked owned) that are held
    /// to their filesystem's free space (not those of a set that may fill it).
    pub(super) fn held_to_free_space(&self) -> impl Iterator<Item = &WorkerFile> {
        self.workers
            .iter()
            .zip(&self.fills)
            .filter(|(_, fills)| !**fills)
            .flat_map(|(w, _)| w)
    }
}

/// Places every file set of `job`.
pub(super) fn place(job: &Job, effs: &[PhaseSettings], opts: &ResolveOptions) -> Result<Placed, WorkloadError> {
    let set_name = |i: usize| job.streams.get(i).map(|s| s.set.clone()).unwrap_or_default();
    let mut p = Placed {
        targets: Vec::new(),
        sets: Vec::new(),
        set_of_phase: Vec::new(),
        workers: Vec::new(),
        fills: Vec::new(),
        created: Vec::new(),
    };
    // The files already listed, so that a set's files are listed once in linear time (a
    // hundred thousand workers' files compared pairwise took minutes).
    let mut created = std::collections::HashSet::new();
    for i in 0..job.phases.len() {
        let name = set_name(i);
        let si = match p.sets.iter().position(|s| *s == name) {
            Some(k) => k,
            None => {
                p.sets.push(name);
                p.sets.len() - 1
            }
        };
        p.set_of_phase.push(si);
    }
    for si in 0..p.sets.len() {
        let members: Vec<usize> = (0..job.phases.len()).filter(|i| p.set_of_phase[*i] == si).collect();
        agree_within(job, effs, &members)?;
        let first = members[0];
        let own = job.streams.get(first).map(|s| &s.targets).filter(|t| !t.is_empty());
        let mut mine = Vec::new();
        for t in own.unwrap_or(&job.targets) {
            let at = match p.targets.iter().position(|(path, _, _)| path == t) {
                Some(k) => k,
                None => {
                    let (kind, len) = classify(t, opts, job)?;
                    p.targets.push((t.clone(), kind, len));
                    p.targets.len() - 1
                }
            };
            mine.push(at);
        }
        let seed = job.settings.seed.unwrap_or(opts.default_seed) ^ si as u64;
        let shape = shape_of(effs, &members, &p.targets[mine[0]], seed)?;
        let stream = job.streams.get(first);
        let names = match stream.filter(|st| st.fio_names) {
            Some(st) => FileNames::Fio(st.name.clone()),
            None if p.sets.len() == 1 => FileNames::Storlab(format!("storlab-{}", opts.file_tag)),
            None => FileNames::Storlab(format!("storlab-{}-{si}", opts.file_tag)),
        };
        let (workers, made) = if stream.is_some_and(|st| st.all_targets) && mine.len() > 1 {
            on_all_targets(&p.targets, &mine, &shape)?
        } else {
            place_workers(&p.targets, &mine, &shape, &names)?
        };
        // Files a stream keeps (fio's, unless unlink=1) are left for the next job to find.
        if !stream.is_some_and(|st| st.keep_files) {
            for f in made {
                if created.insert(f.clone()) {
                    p.created.push(f);
                }
            }
        }
        p.workers.push(workers);
        // Sets that write until the filesystem is full, or go on past errors (ENOSPC among
        // them), are not held to the free space.
        p.fills.push(
            members
                .iter()
                .any(|i| effs[*i].fill || effs[*i].continue_on_error.covers(true)),
        );
    }
    Ok(p)
}

/// The things that shape a set's files must agree between its phases: threads, size, offsets,
/// nrfiles and filesize; and several files per worker allow neither fill nor stdio.
fn agree_within(job: &Job, effs: &[PhaseSettings], members: &[usize]) -> Result<(), WorkloadError> {
    let first = members[0];
    let f = &effs[first];
    for &i in members {
        let e = &effs[i];
        let differs = |what: &str, rule: &str| {
            WorkloadError::invalid(
                origin_of(job, i),
                format!(
                    "{what} from phase {}: the phases share the same files, so {rule}",
                    first + 1
                ),
            )
        };
        if e.threads != f.threads {
            return Err(WorkloadError::invalid(origin_of(job, i), format!("threads is {} here but {} in phase {}: the phases share the same files, so threads must be the same", e.threads, f.threads, first + 1)));
        }
        if e.size != f.size {
            return Err(differs("size differs", "size must be the same"));
        }
        if (e.offset, e.offset_increment) != (f.offset, f.offset_increment) {
            return Err(differs("offset differs", "their regions must start at the same place"));
        }
        if (e.nrfiles, e.filesize) != (f.nrfiles, f.filesize) {
            return Err(differs("nrfiles or filesize differs", "they must be the same"));
        }
        if f.nrfiles > 1 && e.fill {
            return Err(WorkloadError::invalid(
                origin_of(job, i),
                "fill with nrfiles: a worker fills the filesystem through one file; give nrfiles = 1",
            ));
        }
        if f.nrfiles > 1 && e.engine == BackendKind::Stdio {
            return Err(WorkloadError::invalid(
                origin_of(job, i),
                "nrfiles with engine stdio: a stdio stream is one file's; use psync",
            ));
        }
    }
    Ok(())
}

/// A set's shape from its first phase (the others agree), aligned to its largest block; with
/// fill and no size, the size of the filesystem its first target is on (fio's fill_device sets
/// size to -1: ENOSPC ends the writing).
fn shape_of(
    effs: &[PhaseSettings],
    members: &[usize],
    first_target: &(PathBuf, TargetKind, Option<u64>),
    seed: u64,
) -> Result<SetShape, WorkloadError> {
    let f = &effs[members[0]];
    let align = members.iter().map(|i| effs[*i].bs.max()).max().unwrap_or(4096).max(1);
    let fills = members.iter().any(|i| effs[*i].fill);
    let size = match f.size {
        None if fills => {
            let (path, kind, _) = first_target;
            let dir = match kind {
                TargetKind::Directory => path.clone(),
                _ => path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."))
                    .to_path_buf(),
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
    Ok(SetShape {
        threads: f.threads,
        size,
        align,
        whole: f.share == Share::Whole,
        offsets: (f.offset, f.offset_increment),
        files: f.nrfiles,
        file_sizes: f.filesize,
        seed,
    })
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
/// files storlab creates. The set's targets share its workers in turn.
fn place_workers(
    targets: &[(PathBuf, TargetKind, Option<u64>)],
    mine: &[usize],
    shape: &SetShape,
    names: &FileNames,
) -> Result<(Vec<WorkerFile>, Vec<PathBuf>), WorkloadError> {
    if shape.files > 1 || shape.file_sizes.is_some() {
        refuse_shaped_files_outside_directories(targets, mine, shape)?;
    }
    let mut workers: Vec<WorkerFile> = Vec::new();
    let mut created = Vec::new();
    let nt = mine.len() as u32;
    for (k, &ti) in mine.iter().enumerate() {
        let own: Vec<u32> = (0..shape.threads).filter(|w| w % nt == k as u32).collect();
        if own.is_empty() {
            continue;
        }
        let (path, kind, len) = &targets[ti];
        let at = Target { path, index: ti as u16 };
        match kind {
            TargetKind::Directory if shape.files <= 1 && shape.file_sizes.is_none() => {
                for w in &own {
                    let f = path.join(names.file(*w, None));
                    workers.push(WorkerFile::one(
                        f.clone(),
                        shape.base(*w as u64),
                        shape.size.unwrap_or(DEFAULT_SIZE),
                        true,
                        at.index,
                    ));
                    created.push(f);
                }
            }
            TargetKind::Directory => {
                for w in &own {
                    workers.push(several_files(&at, *w, shape, names, &mut created)?);
                }
            }
            _ => {
                workers.extend(shared_file(&at, *kind, *len, own.len() as u64, shape)?);
                if *kind == TargetKind::NewFile {
                    created.push(path.clone());
                }
            }
        }
    }
    Ok((workers, created))
}

/// Each worker on every one of the set's targets, its several files (fio's `filename=a:b`,
/// `opendir`): `size` shared among the files as fio's setup_files shares it (the first files a
/// block larger where it does not divide evenly), each file's regions as on a file alone.
fn on_all_targets(
    targets: &[(PathBuf, TargetKind, Option<u64>)],
    mine: &[usize],
    shape: &SetShape,
) -> Result<(Vec<WorkerFile>, Vec<PathBuf>), WorkloadError> {
    let sizes = shape
        .size
        .map(|s| file_sizes(mine.len() as u32, s, None, shape.align, 0));
    let mut created = Vec::new();
    let mut per_target = Vec::new();
    for (k, &ti) in mine.iter().enumerate() {
        let (path, kind, len) = &targets[ti];
        if *kind == TargetKind::Directory {
            return Err(target_error(
                path,
                "is a directory, named among a job's several files: name files or devices there, or give the directory alone",
            ));
        }
        let alone = SetShape {
            size: sizes.as_ref().map(|s| s[k]),
            ..*shape
        };
        let at = Target { path, index: ti as u16 };
        per_target.push(shared_file(&at, *kind, *len, u64::from(shape.threads), &alone)?.into_iter());
        if *kind == TargetKind::NewFile {
            created.push(path.clone());
        }
    }
    let workers = (0..shape.threads)
        .map(|_| {
            let mut regions = per_target.iter_mut().map(|t| t.next().expect("a region per worker"));
            let mut first = regions.next().expect("a first target");
            first.more = regions
                .map(|r| FileRegion {
                    path: r.path,
                    offset: r.offset,
                    len: r.len,
                    owned: r.owned,
                    target: r.target,
                })
                .collect();
            first
        })
        .collect();
    Ok((workers, created))
}

/// How a set's files in a directory are named.
enum FileNames {
    /// storlab's own: `PREFIX-W.dat`, `PREFIX-W.J.dat` (the prefix holds the process id, so
    /// that two runs never share a file by accident).
    Storlab(String),
    /// fio's default: `NAME.W.J` (the job's name, its clone, the clone's file), so that a later
    /// job of the same name reads the files an earlier one wrote, as under fio.
    Fio(String),
}

impl FileNames {
    /// Worker `w`'s file `j` (None: its only file).
    fn file(&self, w: u32, j: Option<usize>) -> String {
        match (self, j) {
            (FileNames::Storlab(p), None) => format!("{p}-{w}.dat"),
            (FileNames::Storlab(p), Some(j)) => format!("{p}-{w}.{j}.dat"),
            (FileNames::Fio(name), j) => format!("{name}.{w}.{}", j.unwrap_or(0)),
        }
    }
}

/// A target as the workers name it: its path and its number in the job.
struct Target<'a> {
    path: &'a Path,
    index: u16,
}

impl SetShape {
    /// fio's offset and offset_increment: worker w's region starts this far in.
    fn base(&self, w: u64) -> u64 {
        self.offsets.0 + w * self.offsets.1
    }
}

/// nrfiles and filesize shape the files storlab makes in a directory: refused on any other
/// target.
fn refuse_shaped_files_outside_directories(
    targets: &[(PathBuf, TargetKind, Option<u64>)],
    mine: &[usize],
    shape: &SetShape,
) -> Result<(), WorkloadError> {
    let Some((path, kind, _)) = mine
        .iter()
        .map(|&ti| &targets[ti])
        .find(|(_, k, _)| *k != TargetKind::Directory)
    else {
        return Ok(());
    };
    let what = if shape.files > 1 { "nrfiles" } else { "filesize" };
    Err(target_error(
        path,
        format!("{what} shapes the files storlab makes in a directory, and this is {}: give a directory target, or a size for this one", match kind {
            TargetKind::NewFile => "a new file",
            TargetKind::Device => "a device",
            TargetKind::CharDevice => "a character device",
            _ => "an existing file",
        }),
    ))
}

/// Worker `w`'s several files in a directory (fio's nrfiles, filesize): PREFIX-W.F.dat.
fn several_files(
    at: &Target,
    w: u32,
    shape: &SetShape,
    names: &FileNames,
    created: &mut Vec<PathBuf>,
) -> Result<WorkerFile, WorkloadError> {
    let size = shape.size.unwrap_or(DEFAULT_SIZE);
    let lens = file_sizes(
        shape.files,
        size,
        shape.file_sizes,
        shape.align,
        shape.seed ^ (w as u64).wrapping_mul(0xA076_1D64_78BD_642F),
    );
    if lens.contains(&0) {
        return Err(target_error(
            at.path,
            format!(
                "size {} shared by {} files leaves less than one block ({}) each: give fewer files or a larger size",
                Size(size),
                shape.files,
                Size(shape.align)
            ),
        ));
    }
    let mut regions = lens.iter().enumerate().map(|(j, len)| {
        let f = at.path.join(names.file(w, Some(j)));
        created.push(f.clone());
        (f, *len)
    });
    let (first, len) = regions.next().expect("a worker's first file");
    let mut wf = WorkerFile::one(first, shape.base(w as u64), len, true, at.index);
    wf.more = regions
        .map(|(path, len)| FileRegion {
            path,
            offset: shape.base(w as u64),
            len,
            owned: true,
            target: at.index,
        })
        .collect();
    Ok(wf)
}

/// `m` workers on one file or device: each its own equal part (split), or each over all of it
/// (whole); an existing file or device is never grown.
fn shared_file(
    at: &Target,
    kind: TargetKind,
    len: Option<u64>,
    m: u64,
    shape: &SetShape,
) -> Result<Vec<WorkerFile>, WorkloadError> {
    let total = match (kind, shape.size, len) {
        (TargetKind::NewFile, s, _) => s.unwrap_or(DEFAULT_SIZE),
        (_, None, Some(l)) => l.saturating_sub(shape.offsets.0),
        (_, Some(s), Some(l)) if s > l => {
            return Err(target_error(
                at.path,
                format!("size {} is larger than this existing {} ({}): storlab does not grow files it did not create; give a size of at most {}", Size(s), if kind == TargetKind::Device { "device" } else { "file" }, Size(l), Size(l)),
            ))
        }
        (_, Some(s), _) => s,
        (_, None, None) => DEFAULT_SIZE,
    };
    let align = shape.align;
    let share = if shape.whole {
        total / align * align
    } else {
        total / m / align * align
    };
    if share == 0 {
        return Err(target_error(
            at.path,
            format!(
                "{} shared by {m} workers leaves less than one block ({}) each: use fewer threads or a larger size",
                Size(total),
                Size(align)
            ),
        ));
    }
    let end = shape.base(m - 1) + if shape.whole { share } else { m * share };
    if let (Some(l), TargetKind::File | TargetKind::Device) = (len, kind) {
        if end > l {
            return Err(target_error(
                at.path,
                format!("offset {} (offset_increment {}) with size {} reaches {}, beyond its end ({}): storlab does not grow files it did not create", Size(shape.offsets.0), Size(shape.offsets.1), Size(total), Size(end), Size(l)),
            ));
        }
    }
    Ok((0..m)
        .map(|j| {
            WorkerFile::one(
                at.path.to_path_buf(),
                shape.base(j) + if shape.whole { 0 } else { j * share },
                share,
                kind == TargetKind::NewFile,
                at.index,
            )
        })
        .collect())
}
