//! A worker's several files (fio's nrfiles) and which one the next I/O goes to (fio's
//! file_service_type).

use rand::{rngs::SmallRng, Rng};

use super::Access;
use crate::backend::Op;

/// The files one worker serves (fio's nrfiles), each with its own access pattern over its own
/// region, and which of them the next I/O goes to (fio's file_service_type, io_u.c's
/// `__get_next_file`): round robin after N I/Os on one, one file's pass whole before the next,
/// or a file drawn at random after N. A file whose pass is done is passed over; the worker is
/// done when all are. With a byte count per pass (io_size, or a `size` smaller than the files
/// together) the pass ends at the count, as fio's job ends at its size, and files all done
/// before it start their passes again.
#[derive(Debug, Clone)]
pub struct FileSet {
    files: Vec<Access>,
    /// The files' accesses as they start, for another round under a byte count.
    fresh: Vec<Access>,
    done: Vec<bool>,
    live: usize,
    current: usize,
    /// I/Os left on the current file before the next is chosen.
    left: u32,
    service: FileService,
    /// With a byte count per pass: the count, what this pass moved, and the passes after it.
    budget: Option<(u64, u64, u32)>,
}

pub use storlab_model::settings::FileService;

impl FileSet {
    /// Serves `files` as `service` says; `budget`: bytes per pass and the passes (loops) when
    /// a pass is a byte count across the files (each file's access is then one pass of it, and
    /// this set ends each pass, starting the files again when all are done before).
    pub fn new(files: Vec<Access>, service: FileService, budget: Option<(u64, u32)>, time_based: bool) -> FileSet {
        let n = files.len();
        FileSet {
            done: vec![false; n],
            live: n,
            // Round robin's first turn moves on to the first file.
            current: if matches!(service, FileService::RoundRobin(_)) {
                n.saturating_sub(1)
            } else {
                0
            },
            left: 0,
            service,
            budget: budget
                .filter(|_| !time_based)
                .map(|(b, loops)| (b, 0, loops.saturating_sub(1))),
            fresh: if budget.is_some() { files.clone() } else { Vec::new() },
            files,
        }
    }

    /// One file: the set is that file's access alone.
    pub fn single(access: Access) -> FileSet {
        FileSet::new(vec![access], FileService::RoundRobin(1), None, false)
    }

    /// The next I/O: (file index, direction, offset, length), or None when every file's pass
    /// (or the set's byte count) is done.
    #[inline]
    pub fn next(&mut self, rng: &mut SmallRng) -> Option<(usize, Op, u64, u64)> {
        if self.files.len() == 1 && self.budget.is_none() {
            return self.files[0].next(rng).map(|(op, o, l)| (0, op, o, l));
        }
        if let Some((limit, moved, passes)) = self.budget.as_mut() {
            if *moved >= *limit {
                if *passes == 0 {
                    return None;
                }
                *passes -= 1;
                *moved = 0;
            }
        }
        loop {
            if self.live == 0 {
                // Every file's pass is done: under a byte count not yet moved, they go again.
                if self.budget.is_none() || self.fresh.is_empty() {
                    return None;
                }
                self.files.clone_from(&self.fresh);
                self.done.iter_mut().for_each(|d| *d = false);
                self.live = self.files.len();
            }
            let f = self.choose(rng);
            match self.files[f].next(rng) {
                Some((op, o, l)) => {
                    if let Some((_, moved, _)) = self.budget.as_mut() {
                        *moved += l;
                    }
                    return Some((f, op, o, l));
                }
                None => {
                    // This file's pass is done: the next I/O goes to another.
                    self.done[f] = true;
                    self.live -= 1;
                    self.left = 0;
                }
            }
        }
    }

    /// The file the next I/O goes to: the current one while it has I/Os left (and a pass to
    /// do), else the next by the service.
    #[inline]
    fn choose(&mut self, rng: &mut SmallRng) -> usize {
        let n = self.files.len();
        if self.left > 0 && !self.done[self.current] {
            self.left -= 1;
            return self.current;
        }
        let (mut f, every) = match self.service {
            FileService::RoundRobin(k) => ((self.current + 1) % n, k),
            FileService::Sequential => (self.current, u32::MAX),
            FileService::Random(k) => (rng.gen_range(0..n), k),
        };
        while self.done[f] {
            f = match self.service {
                FileService::Random(_) => rng.gen_range(0..n),
                _ => (f + 1) % n,
            };
        }
        self.current = f;
        self.left = every.saturating_sub(1);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{BlockSizes, PhaseKind};
    use rand::SeedableRng;

    fn files(lens: &[u64], service: FileService, budget: Option<(u64, u32)>) -> Vec<(usize, u64)> {
        let acc = lens
            .iter()
            .map(|l| Access::new(PhaseKind::Write, 0, *l * 4096, &BlockSizes::Fixed(4096), false, 50, 1))
            .collect();
        let mut set = FileSet::new(acc, service, budget, false);
        let mut rng = SmallRng::seed_from_u64(3);
        std::iter::from_fn(|| set.next(&mut rng).map(|(f, _, o, _)| (f, o / 4096))).collect()
    }

    #[test]
    fn a_worker_serves_its_files_as_fios_file_service_type_says() {
        // Round robin, one I/O each: 0,1,2,0,1,2,...; a shorter file drops out when done.
        let rr = files(&[3, 1, 3], FileService::RoundRobin(1), None);
        assert_eq!(rr, vec![(0, 0), (1, 0), (2, 0), (0, 1), (2, 1), (0, 2), (2, 2)]);
        // Round robin after two I/Os on one.
        let rr2 = files(&[3, 3], FileService::RoundRobin(2), None);
        assert_eq!(rr2, vec![(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (1, 2)]);
        // Sequential: each file's pass whole, then the next.
        let seq = files(&[2, 2, 2], FileService::Sequential, None);
        assert_eq!(seq, vec![(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        // Random after 2: every block of every file once, in runs of two on one file (a run
        // is cut short only where its file ends).
        let rnd = files(&[4, 4, 4, 4], FileService::Random(2), None);
        assert_eq!(rnd.len(), 16);
        let mut seen = rnd.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 16, "each block once: {rnd:?}");
        let runs = rnd.chunks(2).filter(|c| c.len() == 2 && c[0].0 == c[1].0).count();
        assert!(runs >= 6, "mostly runs of two on one file: {rnd:?}");
        assert!(
            rnd.iter()
                .map(|(f, _)| f)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                == 4
        );
    }

    #[test]
    fn a_byte_count_across_files_ends_the_pass_and_loops_repeat_it() {
        // Files of 4 and 4 blocks, 5 blocks a pass: round robin until 5 are moved.
        let v = files(&[4, 4], FileService::RoundRobin(1), Some((5 * 4096, 1)));
        assert_eq!(v, vec![(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]);
        // Two passes of 5: ten blocks, the files going round their regions.
        let v = files(&[2, 2], FileService::RoundRobin(1), Some((5 * 4096, 2)));
        assert_eq!(v.len(), 10);
        assert_eq!(v[4..], [(0, 0), (1, 0), (0, 1), (1, 1), (0, 0), (1, 0)]);
    }
}
