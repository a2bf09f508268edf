//! Where every item lives: storlab's own directory in the target (`storlab-meta-PID`), the
//! tree (one shared by all workers, or one per worker) and each item's directory and names.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use storlab_model::meta::MetaOp;

use crate::job::{check_inodes, MetaJob};
use crate::MetaError;

/// The tree and the items, and how many items each worker has made so far.
#[derive(Debug)]
pub struct Layout {
    /// storlab's directory in the target: everything is made under it, and it is removed whole.
    pub root: PathBuf,
    /// The tree's directories relative to a tree's top, top first, level by level.
    pub dirs: Vec<PathBuf>,
    /// The request.
    pub job: MetaJob,
    /// Items each worker made (all of them, unless a runtime ended a making phase early).
    made: Vec<AtomicU64>,
    /// The files are under their renamed names.
    pub renamed: bool,
    /// The files have hard links.
    pub linked: bool,
    /// Added to a worker's number in its items' names and contents: MPI ranks sharing one tree
    /// number their workers apart (rank r's first worker is the sum of the lower ranks' workers).
    pub worker_base: u32,
    /// This process makes and removes storlab's directory: always, unless ranks share a tree,
    /// when only the lowest of them does.
    owner: bool,
}

impl Layout {
    /// Checks `job` whole ([`MetaJob::check`], and the inodes its tree and items need against
    /// those free) and lays out its tree; nothing is made yet.
    pub fn prepare(job: &MetaJob) -> Result<Layout, MetaError> {
        let dirs = job.check()?;
        let layout = Layout::new(job, dirs);
        check_inodes(&job.target, layout.inodes_needed())?;
        Ok(layout)
    }

    /// The layout of `job`'s tree of `dirs` directories (none of it made yet).
    pub fn new(job: &MetaJob, dirs: u64) -> Layout {
        let mut paths = vec![PathBuf::new()];
        let mut level = vec![PathBuf::new()];
        for depth in 1..=job.tree.depth {
            let mut next = Vec::with_capacity(level.len() * job.tree.branch as usize);
            for parent in &level {
                for b in 0..job.tree.branch {
                    next.push(parent.join(format!("t{depth}.{b}")));
                }
            }
            paths.extend(next.iter().cloned());
            level = next;
        }
        debug_assert_eq!(paths.len() as u64, dirs);
        // The process id keeps two storlab meta runs in one target apart.
        let root = job.target.join(format!("storlab-meta-{}", std::process::id()));
        Layout {
            root,
            dirs: paths,
            job: job.clone(),
            made: (0..job.workers).map(|_| AtomicU64::new(job.items_per_worker)).collect(),
            renamed: false,
            linked: false,
            worker_base: 0,
            owner: true,
        }
    }

    /// Makes this layout one MPI rank's part of a tree that several ranks share (mdtest's
    /// default without `-u`): storlab's directory is `root` (the owner's name for it), this
    /// rank's workers are numbered from `worker_base`, and only the `owner` makes and removes
    /// the tree (after the ranks have agreed that it made it, and after all are done).
    pub fn share_among_ranks(&mut self, root: PathBuf, worker_base: u32, owner: bool) {
        self.root = root;
        self.worker_base = worker_base;
        self.owner = owner;
    }

    /// This process made storlab's directory and removes it (see [`Layout::share_among_ranks`]).
    pub fn owns_tree(&self) -> bool {
        self.owner
    }

    /// The inodes the run needs at most: the trees, and an item per worker for files and for
    /// directories when it makes both.
    pub fn inodes_needed(&self) -> u64 {
        let trees = if self.job.shared_dir {
            1
        } else {
            self.job.workers as u64
        };
        let kinds = [MetaOp::Create, MetaOp::Mkdir]
            .iter()
            .filter(|k| self.job.phases.contains(k))
            .count() as u64;
        1 + trees * self.dirs.len() as u64 + kinds * self.job.workers as u64 * self.job.items_per_worker
    }

    /// The top of worker `w`'s tree.
    pub fn top(&self, w: u32) -> PathBuf {
        if self.job.shared_dir {
            self.root.join("shared")
        } else {
            self.root.join(format!("w{w}"))
        }
    }

    /// The tree directory item `i` of a worker lives in (its index in [`Layout::dirs`]): the
    /// items fill the directories in order, an even share each.
    pub fn dir_of(&self, i: u64) -> usize {
        let n = self.job.items_per_worker as u128;
        ((i as u128 * self.dirs.len() as u128) / n) as usize
    }

    /// The first item in directory `di` or a later one: where the worker moves on from `di - 1`
    /// (the inverse of [`Layout::dir_of`]; `items_per_worker` past the last directory).
    pub fn first_item_of(&self, di: usize) -> u64 {
        let (n, dirs) = (self.job.items_per_worker as u128, self.dirs.len() as u128);
        // The least i with i·dirs/n ≥ di: ⌈di·n / dirs⌉.
        ((di as u128 * n).div_ceil(dirs)).min(n) as u64
    }

    /// Items worker `w` has made.
    pub fn made(&self, w: u32) -> u64 {
        self.made[w as usize].load(Ordering::Relaxed)
    }

    /// Worker `w` made `n` items (a making phase that a runtime ended).
    pub fn set_made(&self, w: u32, n: u64) {
        self.made[w as usize].store(n, Ordering::Relaxed);
    }

    /// Makes storlab's directory and the trees (nothing, on a rank that shares another's). A
    /// directory of that name already there is refused (it is not storlab's to reuse).
    pub fn make(&self) -> Result<(), MetaError> {
        if !self.owner {
            return Ok(());
        }
        let io = |p: &Path| {
            let path = p.display().to_string();
            move |source| MetaError::Io { path, source }
        };
        std::fs::create_dir(&self.root).map_err(io(&self.root))?;
        let tops: Vec<PathBuf> = if self.job.shared_dir {
            vec![self.top(0)]
        } else {
            (0..self.job.workers).map(|w| self.top(w)).collect()
        };
        for top in tops {
            for d in &self.dirs {
                let p = top.join(d);
                if let Err(e) = std::fs::create_dir(&p) {
                    // What was made so far is storlab's own: it goes.
                    let _ = self.remove();
                    return Err(io(&p)(e));
                }
            }
        }
        Ok(())
    }

    /// Removes storlab's directory and everything in it (symbolic links are removed, never
    /// followed); nothing, on a rank that shares another's tree.
    pub fn remove(&self) -> Result<(), MetaError> {
        if !self.owner {
            return Ok(());
        }
        match std::fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(MetaError::Io {
                path: self.root.display().to_string(),
                source: e,
            }),
            _ => Ok(()),
        }
    }
}

/// An item's names, written into a reused buffer (no allocation per operation).
pub struct Names {
    buf: Vec<u8>,
    /// The prefix, worker, length of `kind.storlab.{w}.` in `buf` and item of the last name
    /// made: the next name of the same worker and kind writes only its item's digits, and the
    /// next item's (a phase's items go in order) only adds one to them.
    made_for: Option<(u8, u32, usize, u64)>,
}

impl Default for Names {
    fn default() -> Self {
        Names {
            buf: Vec::with_capacity(48),
            made_for: None,
        }
    }
}

impl Names {
    /// The name of worker `w`'s item `i` of a kind (`prefix`: b'f' a file, b'r' a renamed file,
    /// b'l' a file's hard link, b'd' a directory): `file.storlab.{w}.{i}` and so on, as a C
    /// string. Shaped like mdtest's names (`file.mdtest.{rank}.{i}`) on purpose: on ext4 the
    /// length of the names alone moves the create rate by 13 % (a C loop of the same calls, 20,000
    /// files: 35,100/s as `f0.N`, 38,500–39,600/s as `file.mdtest.0.N` and other names of that
    /// length), so runs of the two tools are comparable only with names alike.
    ///
    /// Made once per item, between system calls of a microsecond: the next item's name is the
    /// last one's with one added to its digits, any other's digits come from `itoa`, and the rest
    /// is kept, because `write!`'s formatting machinery cost 4 % of a stat phase's time (perf,
    /// issue 43).
    #[inline]
    pub fn name(&mut self, prefix: u8, w: u32, i: u64) -> &std::ffi::CStr {
        let stem = match self.made_for {
            Some((p, pw, stem, last)) if p == prefix && pw == w && last.checked_add(1) == Some(i) => {
                self.made_for = Some((p, pw, stem, i));
                self.buf.pop();
                add_one(&mut self.buf, stem);
                self.buf.push(0);
                // SAFETY: as below; one was added to the decimal digits, NUL pushed again.
                return unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(&self.buf) };
            }
            Some((p, pw, stem, _)) if p == prefix && pw == w => stem,
            _ => {
                self.buf.clear();
                let kind: &[u8] = match prefix {
                    b'f' => b"file",
                    b'r' => b"moved",
                    b'l' => b"link",
                    b'd' => b"dir",
                    _ => b"item",
                };
                self.buf.extend_from_slice(kind);
                self.buf.extend_from_slice(b".storlab.");
                self.buf.extend_from_slice(itoa::Buffer::new().format(w).as_bytes());
                self.buf.push(b'.');
                self.buf.len()
            }
        };
        self.made_for = Some((prefix, w, stem, i));
        self.buf.truncate(stem);
        self.buf.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
        self.buf.push(0);
        debug_assert!(!self.buf[..self.buf.len() - 1].contains(&0));
        // SAFETY: `buf` ends with the NUL just pushed and holds no other: a kind's letters, dots
        // and decimal digits. (The checked constructor's scan for a NUL was 5 % of storlab's own
        // time in a stat phase.)
        unsafe { std::ffi::CStr::from_bytes_with_nul_unchecked(&self.buf) }
    }
}

/// Adds one to the decimal number in `buf[from..]`, in place (9 → 10 grows it by a digit).
fn add_one(buf: &mut Vec<u8>, from: usize) {
    for k in (from..buf.len()).rev() {
        if buf[k] == b'9' {
            buf[k] = b'0';
        } else {
            buf[k] += 1;
            return;
        }
    }
    buf.insert(from, b'1');
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::meta::TreeShape;

    fn job(depth: u32, branch: u32, items: u64) -> MetaJob {
        MetaJob {
            target: PathBuf::from("/nonexistent"),
            workers: 3,
            items_per_worker: items,
            runtime: None,
            phases: vec![MetaOp::Mkdir, MetaOp::Create],
            tree: TreeShape { depth, branch },
            shared_dir: false,
            file_size: 0,
            sync: false,
            keep: false,
        }
    }

    #[test]
    fn names_made_in_order_or_not_are_the_names_formatted_afresh() {
        let mut n = Names::default();
        let asks = (0..1200u64)
            .map(|i| (b'f', 3, i))
            .chain([(b'f', 3, 99_999), (b'f', 3, 100_000), (b'l', 3, 100_001), (b'f', 4, 9)])
            .chain((0..30u64).map(|i| (b'd', 12, i * 7 % 11)))
            .chain([(b'r', 0, u64::MAX - 1), (b'r', 0, u64::MAX), (b'r', 0, 0)]);
        for (prefix, w, i) in asks {
            let kind = match prefix {
                b'f' => "file",
                b'r' => "moved",
                b'l' => "link",
                _ => "dir",
            };
            assert_eq!(
                n.name(prefix, w, i).to_str().unwrap(),
                format!("{kind}.storlab.{w}.{i}")
            );
        }
    }

    #[test]
    fn each_directorys_first_item_is_the_first_dir_of_names_it() {
        for (depth, branch, items) in [(0, 1, 10), (1, 4, 10), (2, 3, 500), (1, 7, 3), (2, 2, 1)] {
            let j = job(depth, branch, items);
            let l = Layout::new(&j, j.tree.directories().unwrap());
            for di in 0..=l.dirs.len() {
                let first = l.first_item_of(di);
                let want = (0..items).find(|&i| l.dir_of(i) >= di).unwrap_or(items);
                assert_eq!(first, want, "tree {depth},{branch}, {items} items, directory {di}");
            }
        }
    }

    #[test]
    fn a_tree_level_by_level_and_items_spread_evenly() {
        let j = job(2, 2, 14);
        let l = Layout::new(&j, j.tree.directories().unwrap());
        let names: Vec<String> = l.dirs.iter().map(|d| d.display().to_string()).collect();
        assert_eq!(
            names,
            ["", "t1.0", "t1.1", "t1.0/t2.0", "t1.0/t2.1", "t1.1/t2.0", "t1.1/t2.1"]
        );
        let mut per_dir = vec![0; 7];
        for i in 0..14 {
            per_dir[l.dir_of(i)] += 1;
        }
        assert_eq!(per_dir, [2; 7]);
        // 1 root, 3 trees of 7, and 14 files and 14 directories per worker.
        assert_eq!(l.inodes_needed(), 1 + 21 + 2 * 3 * 14);
        assert_eq!(
            Names::default().name(b'f', 2, 17).to_str().unwrap(),
            "file.storlab.2.17"
        );
        assert_eq!(Names::default().name(b'r', 0, 3).to_str().unwrap(), "moved.storlab.0.3");
    }
}
