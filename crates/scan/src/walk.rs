//! The parallel walk. Threads take directories from one shared stack (last in, first out, so
//! the walk goes deep first and the stack stays as small as the tree is deep times wide),
//! list them with getdents64 into a reused buffer, and stat regular files relative to the
//! directory's descriptor (no path lookup from the root per file). Symbolic links and
//! directories are recognised from the directory entry's type and are never stat'ed, except on
//! filesystems that do not report types.
//!
//! Why not a crate: walkdir and ignore allocate a path per entry and stat through full paths;
//! jwalk sorts. The walk is the whole cost of a scan and per-entry allocations are most of a
//! walker's user time, so this one is written for it (about 150 lines).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::Instant;

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{openat, statx, AtFlags, FileType, Mode, OFlags, RawDir, Statx, StatxFlags, CWD};
use rustix::io::Errno;

use crate::*;

/// A directory waiting to be listed.
struct Job {
    path: PathBuf,
    /// Levels below its root (the root is 0).
    depth: u32,
    /// The row its entries count in; None above the grouping depth (its files then get a row
    /// of their own, made when the first one is met).
    group: Option<u32>,
    /// Its index in the directory records (for --top), or u32::MAX.
    rec: u32,
    root: u16,
}

struct Queue {
    jobs: Vec<Job>,
    busy: usize,
}

struct GroupInfo {
    root: u16,
    path: PathBuf,
    own_files_only: bool,
    /// The owner whose entries the row counts (`--group-by user|group`).
    owner: Option<u32>,
}

/// `--exclude`'s globs: those without `/` match an entry's name, those with `/` its path (`*`
/// and `?` do not cross a `/`, `**` does); `{a,b}` is expanded into one glob per alternative.
struct Excludes {
    names: Vec<glob::Pattern>,
    paths: Vec<glob::Pattern>,
}

/// `*` and `?` stop at `/`, as in the shell.
const WITHIN_NAMES: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

impl Excludes {
    fn new(globs: &[String]) -> Result<Option<Excludes>, ScanError> {
        if globs.is_empty() {
            return Ok(None);
        }
        let (mut names, mut paths) = (Vec::new(), Vec::new());
        for g in globs {
            for one in expand_braces(g) {
                let pattern = glob::Pattern::new(&one)
                    .map_err(|e| ScanError::Options(format!("--exclude '{g}' is not a glob: {}", e.msg)))?;
                if g.contains('/') {
                    paths.push(pattern);
                } else {
                    names.push(pattern);
                }
            }
        }
        Ok(Some(Excludes { names, paths }))
    }

    fn excludes(&self, dir: &Path, name: &[u8]) -> bool {
        // A name that is not UTF-8 is matched with its undecodable bytes as U+FFFD: `*.tmp`
        // still finds it by its ending.
        let name_text = String::from_utf8_lossy(name);
        if self.names.iter().any(|p| p.matches_with(&name_text, WITHIN_NAMES)) {
            return true;
        }
        if self.paths.is_empty() {
            return false;
        }
        let path = dir.join(OsStr::from_bytes(name));
        let path_text = path.to_string_lossy();
        self.paths.iter().any(|p| p.matches_with(&path_text, WITHIN_NAMES))
    }
}

/// The globs `g` stands for with its first `{a,b,…}` (outside `[...]`) expanded, recursively:
/// `*.{tmp,bak}` is `*.tmp` and `*.bak`. Braces without a comma are left as they are.
/// (Written here because the glob crate has no braces, and a regex-based glob crate costs a
/// tenth of a cold build for this one feature.)
fn expand_braces(g: &str) -> Vec<String> {
    let b = g.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'[' => {
                // Skip a character class: a `]` right after `[` or `[!` is part of it.
                let mut j = i + 1;
                if j < b.len() && b[j] == b'!' {
                    j += 1;
                }
                if j < b.len() && b[j] == b']' {
                    j += 1;
                }
                while j < b.len() && b[j] != b']' {
                    j += 1;
                }
                i = j + 1;
            }
            b'{' => {
                let (mut depth, mut commas, mut j) = (0usize, Vec::new(), i);
                while j < b.len() {
                    match b[j] {
                        b'{' => depth += 1,
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        b',' if depth == 1 => commas.push(j),
                        _ => {}
                    }
                    j += 1;
                }
                if j < b.len() && !commas.is_empty() {
                    let (head, tail) = (&g[..i], &g[j + 1..]);
                    let mut cuts = vec![i];
                    cuts.extend(&commas);
                    cuts.push(j);
                    return cuts
                        .windows(2)
                        .flat_map(|w| expand_braces(&format!("{head}{}{tail}", &g[w[0] + 1..w[1]])))
                        .collect();
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    vec![g.to_string()]
}

/// A directory's place in the tree, for --top.
struct DirRec {
    parent: u32,
    path: Box<Path>,
}

struct Shared<'a> {
    opts: &'a ScanOptions,
    queue: Mutex<Queue>,
    ready: Condvar,
    groups: Mutex<Vec<GroupInfo>>,
    /// (device, inode) of files with more than one link, so each counts once. Split in
    /// shards so that threads rarely wait on each other.
    links: Vec<Mutex<HashSet<(u64, u64)>>>,
    /// Directories already entered when crossing mounts (a bind mount can loop back).
    visited: Mutex<HashSet<(u64, u64)>>,
    recs: Mutex<Vec<DirRec>>,
    root_mounts: Vec<u64>,
    problems: Mutex<(u64, Vec<Problem>)>,
    skipped: Mutex<(u64, Vec<PathBuf>)>,
    thresholds_ns: Vec<i128>,
    excludes: Option<Excludes>,
    excluded: Mutex<(u64, Vec<PathBuf>)>,
    /// Per (root, owner id), its row (`--group-by user|group`).
    owners: Mutex<HashMap<(u16, u32), u32>>,
}

impl Shared<'_> {
    /// The owner a row is kept for, when rows are per owner: the uid or the gid.
    fn owner_of(&self, st: &Statx) -> Option<u32> {
        match self.opts.group_by {
            GroupBy::User => Some(st.stx_uid),
            GroupBy::Group => Some(st.stx_gid),
            _ => None,
        }
    }
}

/// What one thread counted.
struct Local {
    groups: Vec<Option<Stats>>,
    /// Directories above the grouping depth: they count in the total only.
    upper: Stats,
    /// Per directory record: its own files (and their cold part), for --top.
    own: Vec<(u32, Amount, Vec<Amount>)>,
    entries: u64,
    /// The getdents64 buffer, reused for every directory.
    buf: Vec<MaybeUninit<u8>>,
    /// (root, owner id) → row, as far as this thread has met them.
    owners: HashMap<(u16, u32), u32>,
}

impl Local {
    /// The row of an owner's entries under a root, made when the first is met.
    fn owner_row(&mut self, sh: &Shared, root: u16, owner: u32) -> u32 {
        if let Some(g) = self.owners.get(&(root, owner)) {
            return *g;
        }
        let g = *sh.owners.lock().unwrap().entry((root, owner)).or_insert_with(|| {
            let mut g = sh.groups.lock().unwrap();
            g.push(GroupInfo {
                root,
                path: sh.opts.roots[root as usize].clone(),
                own_files_only: false,
                owner: Some(owner),
            });
            g.len() as u32 - 1
        });
        self.owners.insert((root, owner), g);
        g
    }

    fn stats(&mut self, group: u32, thresholds: usize) -> &mut Stats {
        let g = group as usize;
        if self.groups.len() <= g {
            self.groups.resize(g + 1, None);
        }
        self.groups[g].get_or_insert_with(|| Stats::new(thresholds))
    }
}

/// Scans every root; see the crate documentation for what is counted: the roots checked and
/// their first jobs made, the tree walked by the worker threads, their counts merged into the
/// rows, the total and the coldest directories.
pub fn scan(opts: &ScanOptions) -> Result<Report, ScanError> {
    let started = Instant::now();
    if opts.roots.is_empty() {
        return Err(ScanError::Options("nothing to scan: give at least one PATH".into()));
    }
    if opts.roots.len() > u16::MAX as usize {
        return Err(ScanError::Options(format!(
            "{} PATHs is too many: at most 65535",
            opts.roots.len()
        )));
    }
    let excludes = Excludes::new(&opts.exclude)?;
    let mut start = Start::of(opts)?;
    start.jobs.reverse(); // the stack pops the first root first
    let shared = Shared {
        opts,
        queue: Mutex::new(Queue {
            jobs: std::mem::take(&mut start.jobs),
            busy: 0,
        }),
        ready: Condvar::new(),
        groups: Mutex::new(std::mem::take(&mut start.groups)),
        links: (0..64).map(|_| Mutex::new(HashSet::new())).collect(),
        visited: Mutex::new(HashSet::new()),
        recs: Mutex::new(std::mem::take(&mut start.recs)),
        root_mounts: std::mem::take(&mut start.root_mounts),
        problems: Mutex::new((0, Vec::new())),
        skipped: Mutex::new((0, Vec::new())),
        thresholds_ns: opts.ages.iter().map(|s| *s as i128 * 1_000_000_000).collect(),
        excludes,
        excluded: Mutex::new((0, Vec::new())),
        owners: Mutex::new(HashMap::new()),
    };
    let threads = opts.threads.max(1);
    let locals: Vec<Local> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(|| worker(&shared))).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("scan worker panicked"))
            .collect()
    });
    let groups = shared.groups.into_inner().unwrap();
    let recs = shared.recs.into_inner().unwrap();
    let merged = merge(opts, groups, &start.root_dirs, start.upper, recs.len(), locals);
    let top = top_cold(&recs, merged.own, opts.top);
    let (problem_count, problems) = shared.problems.into_inner().unwrap();
    let (skipped_mount_count, skipped_mounts) = shared.skipped.into_inner().unwrap();
    let (excluded_count, excluded) = shared.excluded.into_inner().unwrap();
    Ok(Report {
        options: opts.clone(),
        rows: merged.rows,
        total: merged.total,
        top,
        problem_count,
        problems,
        skipped_mount_count,
        skipped_mounts,
        excluded_count,
        excluded,
        notes: start.notes,
        entries: merged.entries,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// What the walk starts from: each root checked (a directory that exists), its mount, its row
/// (per path) or none (per owner, rows come as directories are listed), its record for the
/// coldest directories, and its first job; one atime note per mount, naming its roots.
struct Start {
    root_mounts: Vec<u64>,
    notes: Vec<String>,
    groups: Vec<GroupInfo>,
    jobs: Vec<Job>,
    upper: Stats,
    recs: Vec<DirRec>,
    /// The root directories themselves, counted in their rows.
    root_dirs: Vec<(u32, u64)>,
}

impl Start {
    fn of(opts: &ScanOptions) -> Result<Start, ScanError> {
        let mut start = Start {
            root_mounts: Vec::new(),
            notes: Vec::new(),
            groups: Vec::new(),
            jobs: Vec::new(),
            upper: Stats::new(opts.ages.len()),
            recs: Vec::new(),
            root_dirs: Vec::new(),
        };
        let all_mounts = storlab_env::mounts::mounts();
        let mut note_mounts: Vec<(storlab_env::mounts::Mount, Vec<String>)> = Vec::new();
        for (i, root) in opts.roots.iter().enumerate() {
            start.root_mounts.push(root_mount(root)?);
            if let Some(m) = storlab_env::mounts::mount_of(root, &all_mounts) {
                match note_mounts.iter_mut().find(|(n, _)| n.id == m.id) {
                    Some((_, paths)) => paths.push(root.display().to_string()),
                    None => note_mounts.push((m, vec![root.display().to_string()])),
                }
            }
            start.add_root(opts, i, root);
        }
        for (m, paths) in &note_mounts {
            if let Some(n) = crate::mounts::atime_note(&paths.join(", "), m, opts.time, &opts.ages) {
                start.notes.push(n);
            }
        }
        Ok(start)
    }

    /// Root `i`'s row (per path), record and first job.
    fn add_root(&mut self, opts: &ScanOptions, i: usize, root: &Path) {
        let group = match opts.group_by {
            GroupBy::Path => {
                self.groups.push(GroupInfo {
                    root: i as u16,
                    path: root.to_path_buf(),
                    own_files_only: false,
                    owner: None,
                });
                Some(self.groups.len() as u32 - 1)
            }
            // Per owner, each directory counts in its owner's row when it is listed.
            GroupBy::Depth(_) | GroupBy::User | GroupBy::Group => None,
        };
        if group.is_none() && !opts.group_by.per_owner() {
            self.upper.dirs += 1;
        }
        if let Some(g) = group {
            self.root_dirs.push((g, 1));
        }
        let rec = if opts.top > 0 {
            self.recs.push(DirRec {
                parent: u32::MAX,
                path: root.to_path_buf().into_boxed_path(),
            });
            self.recs.len() as u32 - 1
        } else {
            u32::MAX
        };
        self.jobs.push(Job {
            path: root.to_path_buf(),
            depth: 0,
            group,
            rec,
            root: i as u16,
        });
    }
}

/// A root's mount id; refused when it does not exist or is not a directory.
fn root_mount(root: &Path) -> Result<u64, ScanError> {
    let st =
        statx(CWD, root, AtFlags::empty(), StatxFlags::TYPE | StatxFlags::MNT_ID).map_err(|e| ScanError::Root {
            path: root.display().to_string(),
            reason: if e == Errno::NOENT {
                "it does not exist".into()
            } else {
                e.to_string()
            },
        })?;
    if FileType::from_raw_mode(st.stx_mode as u32) != FileType::Directory {
        return Err(ScanError::Root {
            path: root.display().to_string(),
            reason: "it is not a directory (scan takes directories)".into(),
        });
    }
    Ok(st.stx_mnt_id)
}

/// The threads' counts merged: the rows (sorted), the total, the entries, and each
/// directory's own files for the coldest directories.
struct Merged {
    rows: Vec<Row>,
    total: Stats,
    entries: u64,
    own: Vec<(Amount, Vec<Amount>)>,
}

fn merge(
    opts: &ScanOptions,
    groups: Vec<GroupInfo>,
    root_dirs: &[(u32, u64)],
    mut upper: Stats,
    recs: usize,
    locals: Vec<Local>,
) -> Merged {
    let t = opts.ages.len();
    let mut row_stats: Vec<Stats> = (0..groups.len()).map(|_| Stats::new(t)).collect();
    for (g, n) in root_dirs {
        row_stats[*g as usize].dirs += n;
    }
    let mut entries = 0;
    let mut own: Vec<(Amount, Vec<Amount>)> = (0..recs)
        .map(|_| (Amount::default(), vec![Amount::default(); t]))
        .collect();
    for l in locals {
        for (g, s) in l.groups.into_iter().enumerate() {
            if let Some(s) = s {
                row_stats[g].add(&s);
            }
        }
        upper.add(&l.upper);
        entries += l.entries;
        for (r, a, c) in l.own {
            let o = &mut own[r as usize];
            o.0.add(&a);
            for (x, y) in o.1.iter_mut().zip(&c) {
                x.add(y);
            }
        }
    }
    let mut total = upper;
    for s in &row_stats {
        total.add(s);
    }
    let mut rows: Vec<Row> = groups
        .into_iter()
        .zip(row_stats)
        .map(|(g, stats)| Row {
            root: opts.roots[g.root as usize].clone(),
            path: g.path,
            own_files_only: g.own_files_only,
            stats,
            owner: g.owner.map(|id| crate::owners::owner(opts.group_by, id)),
        })
        .collect();
    sort_rows(opts, &mut rows);
    Merged {
        rows,
        total,
        entries,
        own,
    }
}

/// Per owner, the largest first (who uses the space), then by id; else by path; within each
/// root, in the roots' order.
fn sort_rows(opts: &ScanOptions, rows: &mut [Row]) {
    let by_owner = opts.group_by.per_owner();
    let root_index = |p: &Path| opts.roots.iter().position(|r| r == p).unwrap_or(usize::MAX);
    rows.sort_by(|a, b| {
        let within = if by_owner {
            let id = |r: &Row| r.owner.as_ref().map(|o| o.id);
            b.stats
                .data
                .apparent
                .cmp(&a.stats.data.apparent)
                .then_with(|| id(a).cmp(&id(b)))
        } else {
            (a.path.as_os_str().as_bytes(), a.own_files_only).cmp(&(b.path.as_os_str().as_bytes(), b.own_files_only))
        };
        root_index(&a.root).cmp(&root_index(&b.root)).then(within)
    });
}

/// Adds every directory's own files up its tree and picks the `n` with the most data older
/// than the first threshold (roots excluded: their figures are the rows').
fn top_cold(recs: &[DirRec], own: Vec<(Amount, Vec<Amount>)>, n: usize) -> Vec<ColdDir> {
    if n == 0 || recs.is_empty() {
        return Vec::new();
    }
    let mut tree = own;
    // A directory's record is made before any of its children's, so children have larger
    // indices: one pass from the end carries every subtree into its parent.
    for i in (0..recs.len()).rev() {
        let p = recs[i].parent;
        if p != u32::MAX {
            let (a, c) = tree[i].clone();
            let t = &mut tree[p as usize];
            t.0.add(&a);
            for (x, y) in t.1.iter_mut().zip(&c) {
                x.add(y);
            }
        }
    }
    let mut order: Vec<usize> = (0..recs.len())
        .filter(|i| recs[*i].parent != u32::MAX && tree[*i].1.first().is_some_and(|c| c.apparent > 0))
        .collect();
    order.sort_by(|a, b| {
        tree[*b].1[0]
            .apparent
            .cmp(&tree[*a].1[0].apparent)
            .then_with(|| recs[*a].path.cmp(&recs[*b].path))
    });
    order
        .into_iter()
        .take(n)
        .map(|i| ColdDir {
            path: recs[i].path.to_path_buf(),
            data: tree[i].0,
            cold: tree[i].1.clone(),
        })
        .collect()
}

fn worker(sh: &Shared) -> Local {
    let mut local = Local {
        groups: Vec::new(),
        upper: Stats::new(sh.thresholds_ns.len()),
        own: Vec::new(),
        entries: 0,
        buf: vec![MaybeUninit::uninit(); 64 << 10],
        owners: HashMap::new(),
    };
    let mut children = Vec::new();
    loop {
        let job = {
            let mut q = sh.queue.lock().unwrap();
            loop {
                if let Some(j) = q.jobs.pop() {
                    q.busy += 1;
                    break Some(j);
                }
                if q.busy == 0 {
                    break None;
                }
                q = sh.ready.wait(q).unwrap();
            }
        };
        let Some(job) = job else {
            sh.ready.notify_all();
            return local;
        };
        list(sh, &job, &mut local, &mut children);
        let mut q = sh.queue.lock().unwrap();
        let n = children.len();
        q.jobs.append(&mut children);
        q.busy -= 1;
        let finished = q.busy == 0 && q.jobs.is_empty();
        drop(q);
        if finished || n > 1 {
            sh.ready.notify_all();
        } else if n == 1 {
            sh.ready.notify_one();
        }
    }
}

fn problem(sh: &Shared, path: PathBuf, e: Errno) {
    let kind = match e {
        Errno::NOENT | Errno::NOTDIR => ProblemKind::Vanished,
        Errno::ACCESS | Errno::PERM => ProblemKind::Unreadable,
        _ => ProblemKind::Error,
    };
    let mut p = sh.problems.lock().unwrap();
    p.0 += 1;
    if p.1.len() < PROBLEMS_NAMED {
        p.1.push(Problem {
            path,
            kind,
            error: std::io::Error::from(e).to_string(),
        });
    }
}

fn open_dir(path: &Path) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    // O_NOATIME where allowed (the owner, or root): a scan should not reset the access times
    // of the directories it lists.
    match openat(CWD, path, flags | OFlags::NOATIME, Mode::empty()) {
        Err(Errno::PERM) => openat(CWD, path, flags, Mode::empty()),
        r => r,
    }
}

/// Lists one directory: counts its entries and queues its subdirectories in `children`.
fn list(sh: &Shared, job: &Job, local: &mut Local, children: &mut Vec<Job>) {
    let t = sh.thresholds_ns.len();
    let fd = match open_dir(&job.path) {
        Ok(fd) => fd,
        Err(e) => return problem(sh, job.path.clone(), e),
    };
    if !enter(sh, job, local, &fd) {
        return;
    }
    let mut own = (Amount::default(), vec![Amount::default(); t]);
    let mut own_group: Option<u32> = job.group;
    let by_owner = sh.opts.group_by.per_owner();
    let mut buf = std::mem::take(&mut local.buf);
    let mut dir = RawDir::new(fd.as_fd(), &mut buf);
    while let Some(entry) = dir.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                problem(sh, job.path.clone(), e);
                break;
            }
        };
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        local.entries += 1;
        if excluded(sh, job, name) {
            continue;
        }
        let mut kind = entry.file_type();
        let mut st: Option<Statx> = None;
        // Per owner, every entry but a directory (counted when listed) is looked at for its
        // owner; else only files, whose size and times are counted.
        if kind == FileType::Unknown || kind == FileType::RegularFile || (by_owner && kind != FileType::Directory) {
            match stat_entry(&fd, entry.file_name()) {
                Ok(s) => {
                    kind = FileType::from_raw_mode(s.stx_mode as u32);
                    st = Some(s);
                }
                Err(e) => {
                    problem(sh, job.path.join(OsStr::from_bytes(name)), e);
                    continue;
                }
            }
        }
        match kind {
            FileType::Directory => children.push(child(sh, job, local, job.path.join(OsStr::from_bytes(name)))),
            FileType::RegularFile => {
                let st = st.expect("regular files are stat'ed");
                count_file(sh, job, local, &mut own, &mut own_group, &st);
            }
            FileType::Symlink => {
                let g = entry_row(sh, job, local, &mut own_group, st.as_ref());
                local.stats(g, t).symlinks += 1;
            }
            _ => {
                let g = entry_row(sh, job, local, &mut own_group, st.as_ref());
                local.stats(g, t).others += 1;
            }
        }
    }
    local.buf = buf;
    if job.rec != u32::MAX && own.0.files > 0 {
        local.own.push((job.rec, own.0, own.1));
    }
}

/// Whether to list an opened directory: on the PATH's mount unless asked to cross (and then
/// never a directory twice); per owner, the directory counts in its owner's row, once.
#[inline]
fn enter(sh: &Shared, job: &Job, local: &mut Local, fd: &OwnedFd) -> bool {
    let st = match statx(
        fd,
        "",
        AtFlags::EMPTY_PATH,
        StatxFlags::MNT_ID | StatxFlags::INO | StatxFlags::UID | StatxFlags::GID,
    ) {
        Ok(st) => st,
        Err(e) => {
            problem(sh, job.path.clone(), e);
            return false;
        }
    };
    if sh.opts.cross_mounts {
        let key = (dev_of(&st), st.stx_ino);
        if !sh.visited.lock().unwrap().insert(key) {
            return false;
        }
    } else if st.stx_mnt_id != sh.root_mounts[job.root as usize] {
        let mut s = sh.skipped.lock().unwrap();
        s.0 += 1;
        if s.1.len() < PROBLEMS_NAMED {
            s.1.push(job.path.clone());
        }
        return false;
    }
    if let Some(owner) = sh.owner_of(&st) {
        let g = local.owner_row(sh, job.root, owner);
        local.stats(g, sh.thresholds_ns.len()).dirs += 1;
    }
    true
}

/// True when --exclude leaves the entry out (counted, the first ones named).
#[inline]
fn excluded(sh: &Shared, job: &Job, name: &[u8]) -> bool {
    let Some(ex) = &sh.excludes else { return false };
    if !ex.excludes(&job.path, name) {
        return false;
    }
    let mut x = sh.excluded.lock().unwrap();
    x.0 += 1;
    if x.1.len() < PROBLEMS_NAMED {
        x.1.push(job.path.join(OsStr::from_bytes(name)));
    }
    true
}

/// A subdirectory: counted in its row (a new one at the depth rows are made), recorded for
/// the coldest directories, and queued.
#[inline]
fn child(sh: &Shared, job: &Job, local: &mut Local, path: PathBuf) -> Job {
    let t = sh.thresholds_ns.len();
    let child_depth = job.depth + 1;
    let group = match sh.opts.group_by {
        GroupBy::Path => job.group,
        GroupBy::Depth(n) if child_depth == n => Some(new_group(sh, job.root, path.clone(), false)),
        GroupBy::Depth(n) if child_depth < n => None,
        GroupBy::Depth(_) => job.group,
        GroupBy::User | GroupBy::Group => None,
    };
    match group {
        Some(g) => local.stats(g, t).dirs += 1,
        None if !sh.opts.group_by.per_owner() => local.upper.dirs += 1,
        None => {}
    }
    let rec = if sh.opts.top > 0 {
        let mut r = sh.recs.lock().unwrap();
        r.push(DirRec {
            parent: job.rec,
            path: path.clone().into_boxed_path(),
        });
        r.len() as u32 - 1
    } else {
        u32::MAX
    };
    Job {
        path,
        depth: child_depth,
        group,
        rec,
        root: job.root,
    }
}

/// A regular file (a hard link once): its size and allocation into its row, by age and by
/// size, and into its directory's own files for the coldest directories.
#[inline]
fn count_file(
    sh: &Shared,
    job: &Job,
    local: &mut Local,
    own: &mut (Amount, Vec<Amount>),
    own_group: &mut Option<u32>,
    st: &Statx,
) {
    if st.stx_nlink > 1 {
        let key = (dev_of(st), st.stx_ino);
        let shard = (st.stx_ino as usize) % sh.links.len();
        if !sh.links[shard].lock().unwrap().insert(key) {
            return;
        }
    }
    let g = entry_row(sh, job, local, own_group, Some(st));
    let size = st.stx_size;
    let alloc = st.stx_blocks * 512;
    let ts = |t: rustix::fs::StatxTimestamp| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
    let when = match sh.opts.time {
        TimeBasis::Atime => ts(st.stx_atime),
        TimeBasis::Mtime => ts(st.stx_mtime),
        TimeBasis::Max => ts(st.stx_atime).max(ts(st.stx_mtime)),
    };
    let age_ns = (sh.opts.now_ns - when).max(0);
    let s = local.stats(g, sh.thresholds_ns.len());
    s.data.add_file(size, alloc);
    for (i, th) in sh.thresholds_ns.iter().enumerate() {
        if age_ns > *th {
            s.cold[i].add_file(size, alloc);
            if job.rec != u32::MAX {
                own.1[i].add_file(size, alloc);
            }
        }
    }
    s.age[age_bucket((age_ns / 1_000_000_000) as u64)].add_file(size, alloc);
    s.size[size_bucket(size)].add_file(size, alloc);
    if job.rec != u32::MAX {
        own.0.add_file(size, alloc);
    }
}

fn stat_entry(dir: &OwnedFd, name: &std::ffi::CStr) -> Result<Statx, Errno> {
    statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::TYPE
            | StatxFlags::SIZE
            | StatxFlags::BLOCKS
            | StatxFlags::ATIME
            | StatxFlags::MTIME
            | StatxFlags::NLINK
            | StatxFlags::INO
            | StatxFlags::UID
            | StatxFlags::GID,
    )
}

fn dev_of(st: &Statx) -> u64 {
    ((st.stx_dev_major as u64) << 32) | st.stx_dev_minor as u64
}

/// The row an entry of `job`'s directory counts in (`st`: the entry's statx, when it was
/// looked at): its owner's when rows are per owner, else the directory's own-files row, made
/// when the first such entry is met.
fn entry_row(sh: &Shared, job: &Job, local: &mut Local, own_group: &mut Option<u32>, st: Option<&Statx>) -> u32 {
    match st.and_then(|st| sh.owner_of(st)) {
        Some(owner) => local.owner_row(sh, job.root, owner),
        None => *own_group.get_or_insert_with(|| new_group(sh, job.root, job.path.clone(), true)),
    }
}

fn new_group(sh: &Shared, root: u16, path: PathBuf, own_files_only: bool) -> u32 {
    let mut g = sh.groups.lock().unwrap();
    g.push(GroupInfo {
        root,
        path,
        own_files_only,
        owner: None,
    });
    g.len() as u32 - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn braces_expand_outside_classes_and_nest() {
        assert_eq!(expand_braces("*.{tmp,bak}"), ["*.tmp", "*.bak"]);
        assert_eq!(expand_braces("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
        assert_eq!(expand_braces("[{,}]x"), ["[{,}]x"]);
        assert_eq!(expand_braces("{solo}"), ["{solo}"]);
        assert_eq!(expand_braces("{a,b}{1,2}"), ["a1", "a2", "b1", "b2"]);
    }

    #[test]
    fn names_and_paths_are_matched_as_the_docs_say() {
        let ex = Excludes::new(&[".snapshot".into(), "*.{tmp,bak}".into(), "/data/*/scratch".into()])
            .unwrap()
            .unwrap();
        assert!(ex.excludes(Path::new("/data/x/y"), b".snapshot"));
        assert!(ex.excludes(Path::new("/d"), b"a.tmp"));
        assert!(ex.excludes(Path::new("/d"), b"a.bak"));
        assert!(!ex.excludes(Path::new("/d"), b"a.tmpx"));
        assert!(ex.excludes(Path::new("/d"), b"\xff.tmp"), "a name that is not UTF-8");
        assert!(ex.excludes(Path::new("/data/u1"), b"scratch"));
        assert!(
            !ex.excludes(Path::new("/data/u1/deep"), b"scratch"),
            "* does not cross /"
        );
        let deep = Excludes::new(&["/data/**/scratch".into()]).unwrap().unwrap();
        assert!(deep.excludes(Path::new("/data/u1/deep"), b"scratch"), "** crosses /");
        let err = Excludes::new(&["a[".into()]).err().unwrap().to_string();
        assert!(err.contains("--exclude 'a[' is not a glob"), "{err}");
    }
}
