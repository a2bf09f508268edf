//! The cells of an IOzone run: each worker count, and in automatic mode IOzone's matrix of file
//! size × record size, each as a storlab job.

use super::*;

/// IOzone's automatic-mode defaults: files 64 kB to 512 MB, records 4 kB to 16 MB, and for
/// files of 32 MB and up, records from 64 kB unless -z.
const AUTO_MIN_FILE: u64 = 64 << 10;
const AUTO_MAX_FILE: u64 = 512 << 20;
const AUTO_MIN_REC: u64 = 4 << 10;
const AUTO_MAX_REC: u64 = 16 << 20;
const CROSSOVER_FILE: u64 = 32 << 20;
const CROSSOVER_REC: u64 = 64 << 10;

/// One cell of an IOzone run: worker count, file size and record size (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IozoneCell {
    /// Workers.
    pub workers: u32,
    /// File size per worker, bytes.
    pub file: u64,
    /// Record size, bytes.
    pub record: u64,
}

impl IozoneCell {
    /// The cell's part in its study.
    pub fn role(self) -> Role {
        Role::Cell {
            workers: self.workers,
            file_bytes: self.file,
            record_bytes: self.record,
        }
    }
}

fn doubling(lo: u64, hi: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut x = lo;
    while x <= hi {
        v.push(x);
        x *= 2;
    }
    v
}

impl IozoneArgs {
    /// The cells to run, in IOzone's order: each worker count of -l..-u (or -t, or 1), and in
    /// automatic mode each file size × record size of IOzone's matrix.
    pub fn cells(&self) -> Vec<IozoneCell> {
        let workers: Vec<u32> = match (self.lower, self.upper) {
            (Some(l), Some(u)) => (l..=u).collect(),
            _ => vec![self.workers.unwrap_or(1)],
        };
        let mut out = Vec::new();
        for w in workers {
            if !self.auto {
                out.push(IozoneCell {
                    workers: w,
                    file: self.file_size.unwrap_or(512 << 10),
                    record: self.record.unwrap_or(4 << 10),
                });
                continue;
            }
            let files = doubling(
                self.min_file.unwrap_or(AUTO_MIN_FILE),
                self.max_file.unwrap_or(AUTO_MAX_FILE),
            );
            let recs = doubling(
                self.min_record.unwrap_or(AUTO_MIN_REC),
                self.max_record.unwrap_or(AUTO_MAX_REC),
            );
            for f in &files {
                for r in recs.iter().filter(|r| *r <= f) {
                    if *f >= CROSSOVER_FILE
                        && *r < CROSSOVER_REC
                        && !self.small_records_too
                        && self.min_record.is_none()
                    {
                        continue;
                    }
                    out.push(IozoneCell {
                        workers: w,
                        file: *f,
                        record: *r,
                    });
                }
            }
        }
        out
    }

    /// Each cell with its job, in IOzone's order; refuses a command line whose ranges give no
    /// cell, or whose -F names fewer files than -u asks for workers.
    pub fn jobs(&self) -> Result<Vec<(IozoneCell, Job)>, WorkloadError> {
        let cells = self.cells();
        if cells.is_empty() {
            return Err(err(
                "the ranges give no file size × record size cell: check -n -g -y -q",
            ));
        }
        if let (Some(u), false) = (self.upper, self.files.is_empty()) {
            if (self.files.len() as u32) < u {
                return Err(err(format!(
                    "-F names {} file(s) but -u asks for up to {u} workers: name one file per worker",
                    self.files.len()
                )));
            }
        }
        Ok(cells
            .into_iter()
            .map(|c| (c, self.job(c.workers, c.file, c.record, &self.dir)))
            .collect())
    }

    /// The phases run, in order, as IOzone names them.
    pub fn phases(&self) -> Vec<&'static IozonePhase> {
        self.tests
            .iter()
            .filter_map(|t| test(*t))
            .flat_map(|t| t.phases.iter())
            .collect()
    }

    /// True in throughput mode (-t, or -l/-u): IOzone's "Children see" report.
    pub fn throughput_mode(&self) -> bool {
        self.workers.is_some() || self.lower.is_some()
    }

    /// The IOzone command line and its cache note (this machine's memory against the largest
    /// data set of `cells`), kept with the run or study.
    pub fn study_params(&self, cells: &[IozoneCell]) -> IozoneParams {
        IozoneParams {
            command: self.command_line.clone(),
            note: self.cache_rule(cells, storlab_env::memory_bytes()),
        }
    }

    /// The study several cells make: IOzone's matrix (-a) or a range of workers (-l/-u).
    pub fn study(&self, params: &IozoneParams) -> StudyParams {
        if self.auto {
            StudyParams::IozoneAuto(params.clone())
        } else {
            StudyParams::IozoneWorkers(params.clone())
        }
    }

    /// IOzone's rule for disk (not cache) figures: a data set of at least three times the
    /// buffer cache. Said, with the flag that fixes it, when the largest data set here is
    /// smaller and the I/O goes through the cache.
    pub fn cache_rule(&self, cells: &[IozoneCell], memory: u64) -> Option<String> {
        if self.direct || memory == 0 {
            return None;
        }
        let largest = cells.iter().map(|c| c.file * c.workers as u64).max().unwrap_or(0);
        if largest >= 3 * memory {
            return None;
        }
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let want = (3 * memory).div_ceil(1 << 30);
        let how = if self.auto {
            format!("-g {want}g")
        } else if let Some(w) = self.workers {
            format!("-s {}g per worker", want.div_ceil(w as u64))
        } else {
            format!("-s {want}g")
        };
        Some(format!(
            "Note (IOzone's rule): for disk rather than cache figures the data set must be at least three times the buffer cache. This machine has {:.1} GiB of RAM and the largest data set here is {:.2} GiB, so these are cache figures; use {how}, or -I (O_DIRECT).",
            gib(memory),
            gib(largest)
        ))
    }
}
