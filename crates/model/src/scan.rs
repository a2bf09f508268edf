//! What `storlab scan` found: the usage and age report of whole filesystems (crates/scan walks
//! and fills it; the store keeps it; the report prints it).
//!
//! What is counted (docs/scan.md says the same for users):
//! - data: regular files only, apparent size (st_size) and allocated size (st_blocks × 512);
//! - files: regular files; a file with several hard links counts once (by device and inode),
//!   in the first row the walk meets it in;
//! - dirs: every directory, the row's own included; symbolic links and other entries (fifos,
//!   sockets, devices) are counted apart and never followed;
//! - a file's age: now − its atime (default), its mtime, or the later of the two; a
//!   directory's own times are ignored. A file is older than a threshold when its age is
//!   strictly greater.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Which timestamp says how old a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeBasis {
    /// Last access (the question "not accessed for N days").
    Atime,
    /// Last modification.
    Mtime,
    /// The later of the two (as Robinhood does).
    Max,
}

impl TimeBasis {
    /// Parses `atime`, `mtime` or `max`.
    pub fn from_name(s: &str) -> Option<TimeBasis> {
        Some(match s {
            "atime" => TimeBasis::Atime,
            "mtime" => TimeBasis::Mtime,
            "max" => TimeBasis::Max,
            _ => return None,
        })
    }
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TimeBasis::Atime => "atime",
            TimeBasis::Mtime => "mtime",
            TimeBasis::Max => "max",
        }
    }
}

/// How the rows are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// One row per PATH given.
    Path,
    /// One row per directory N levels below each PATH (`top` is depth 1). Files that lie
    /// above that depth get a row of their own per directory holding them.
    Depth(u32),
    /// One row per owning user under each PATH: its files, their data, its directories,
    /// symbolic links and other entries.
    User,
    /// One row per owning group under each PATH.
    Group,
}

/// Who owns a row's entries (`--group-by user|group`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// A user or a group.
    pub by: OwnerKind,
    /// The numeric id (uid or gid).
    pub id: u32,
    /// The name the system gives it (passwd, group, NSS), None when it has none.
    pub name: Option<String>,
}

impl Owner {
    /// "user alice (1000)", "group 4242 (no name)".
    pub fn label(&self) -> String {
        let by = self.by.name();
        match &self.name {
            Some(n) => format!("{by} {n} ({})", self.id),
            None => format!("{by} {} (no name)", self.id),
        }
    }
}

/// A user or a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OwnerKind {
    /// By uid.
    User,
    /// By gid.
    Group,
}

impl OwnerKind {
    /// "user" or "group".
    pub fn name(self) -> &'static str {
        match self {
            OwnerKind::User => "user",
            OwnerKind::Group => "group",
        }
    }
}

impl GroupBy {
    /// The name `--group-by` takes.
    pub fn name(self) -> String {
        match self {
            GroupBy::Path => "path".into(),
            GroupBy::Depth(1) => "top".into(),
            GroupBy::Depth(n) => format!("depth:{n}"),
            GroupBy::User => "user".into(),
            GroupBy::Group => "group".into(),
        }
    }

    /// True when rows are per owner (`user`, `group`) rather than per place.
    pub fn per_owner(self) -> bool {
        matches!(self, GroupBy::User | GroupBy::Group)
    }

    /// Parses `path`, `top`, `depth:N` (N ≥ 1), `user` or `group`.
    pub fn parse(s: &str) -> Result<GroupBy, String> {
        match s {
            "path" => Ok(GroupBy::Path),
            "top" => Ok(GroupBy::Depth(1)),
            "user" => Ok(GroupBy::User),
            "group" => Ok(GroupBy::Group),
            _ => {
                let n = s
                    .strip_prefix("depth:")
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| {
                        format!("'{s}' is not a grouping: expected path, top, depth:N with N at least 1, user or group")
                    })?;
                Ok(GroupBy::Depth(n))
            }
        }
    }
}

/// What to scan and how to count it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScanOptions {
    /// The directories to scan.
    pub roots: Vec<PathBuf>,
    /// Age thresholds in seconds, ascending.
    pub ages: Vec<u64>,
    /// How rows are formed.
    pub group_by: GroupBy,
    /// Which timestamp gives a file's age.
    pub time: TimeBasis,
    /// Descend into other mounted filesystems.
    pub cross_mounts: bool,
    /// Walker threads.
    pub threads: usize,
    /// How many of the largest cold directories to list (0: none).
    pub top: usize,
    /// "Now", in nanoseconds since the Unix epoch (ages are measured from it).
    pub now_ns: i128,
    /// Entries not to count or descend into (`--exclude GLOB`): a glob without `/` matches an
    /// entry's name at any depth, one with `/` its whole path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// Files and their data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amount {
    /// Regular files.
    pub files: u64,
    /// Their apparent size (st_size), bytes.
    pub apparent: u64,
    /// Their allocated size (st_blocks × 512), bytes.
    pub allocated: u64,
}

impl Amount {
    /// Counts one file.
    pub fn add_file(&mut self, apparent: u64, allocated: u64) {
        self.files += 1;
        self.apparent += apparent;
        self.allocated += allocated;
    }
    /// Adds another amount.
    pub fn add(&mut self, o: &Amount) {
        self.files += o.files;
        self.apparent += o.apparent;
        self.allocated += o.allocated;
    }
}

/// Upper bounds (exclusive) of the age buckets, in seconds: 1 week, 1 month (30 days),
/// 2 months (60 days), 6 months (180 days), 1 year (365 days); the last bucket is open.
pub const AGE_BOUNDS: [u64; 5] = [7 * DAY, 30 * DAY, 60 * DAY, 180 * DAY, 365 * DAY];
/// Labels of the age buckets.
pub const AGE_LABELS: [&str; 6] = [
    "< 1 week",
    "1 week–1 month",
    "1–2 months",
    "2–6 months",
    "6 months–1 year",
    "> 1 year",
];
/// Upper bounds (exclusive) of the size buckets after the first (empty files), in bytes.
pub const SIZE_BOUNDS: [u64; 5] = [4 << 10, 64 << 10, 1 << 20, 64 << 20, 1 << 30];
/// Labels of the size buckets.
pub const SIZE_LABELS: [&str; 7] = [
    "empty",
    "< 4 KiB",
    "< 64 KiB",
    "< 1 MiB",
    "< 64 MiB",
    "< 1 GiB",
    "≥ 1 GiB",
];

/// One day in seconds.
pub const DAY: u64 = 86_400;

/// Everything counted for one row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Regular files and their data.
    pub data: Amount,
    /// Directories.
    pub dirs: u64,
    /// Symbolic links (not followed).
    pub symlinks: u64,
    /// Other entries: fifos, sockets, device nodes.
    pub others: u64,
    /// Per age threshold (in `ScanOptions::ages` order): the files older than it.
    pub cold: Vec<Amount>,
    /// Files per age bucket (`AGE_LABELS`).
    pub age: [Amount; 6],
    /// Files per size bucket (`SIZE_LABELS`).
    pub size: [Amount; 7],
}

impl Stats {
    /// Empty, with room for `thresholds` age thresholds.
    pub fn new(thresholds: usize) -> Stats {
        Stats {
            cold: vec![Amount::default(); thresholds],
            ..Stats::default()
        }
    }

    /// Adds another row's counts.
    pub fn add(&mut self, o: &Stats) {
        self.data.add(&o.data);
        self.dirs += o.dirs;
        self.symlinks += o.symlinks;
        self.others += o.others;
        if self.cold.len() < o.cold.len() {
            self.cold.resize(o.cold.len(), Amount::default());
        }
        for (a, b) in self.cold.iter_mut().zip(&o.cold) {
            a.add(b);
        }
        for (a, b) in self.age.iter_mut().zip(&o.age) {
            a.add(b);
        }
        for (a, b) in self.size.iter_mut().zip(&o.size) {
            a.add(b);
        }
    }

    /// Percentage of the data (apparent size) older than threshold `i`.
    pub fn cold_percent(&self, i: usize) -> f64 {
        if self.data.apparent == 0 {
            0.0
        } else {
            self.cold[i].apparent as f64 * 100.0 / self.data.apparent as f64
        }
    }
}

/// Which bucket of `AGE_LABELS` an age (seconds) falls in.
pub fn age_bucket(age_secs: u64) -> usize {
    AGE_BOUNDS
        .iter()
        .position(|b| age_secs < *b)
        .unwrap_or(AGE_BOUNDS.len())
}

/// Which bucket of `SIZE_LABELS` a size (bytes) falls in.
pub fn size_bucket(size: u64) -> usize {
    if size == 0 {
        0
    } else {
        1 + SIZE_BOUNDS.iter().position(|b| size < *b).unwrap_or(SIZE_BOUNDS.len())
    }
}

/// One row of the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// The PATH given that this row lies under.
    pub root: PathBuf,
    /// The directory the row counts.
    pub path: PathBuf,
    /// True when the row holds only the files directly in `path` (a directory above the
    /// grouping depth); false when it holds the whole tree below `path`.
    pub own_files_only: bool,
    /// What was counted.
    pub stats: Stats,
    /// Who owns what the row counts, when rows are per owner (`--group-by user|group`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

impl Row {
    /// What says which row this is in another scan of the same PATHs (for growth).
    pub fn key(&self) -> (&Path, &Path, bool, Option<(OwnerKind, u32)>) {
        (
            &self.root,
            &self.path,
            self.own_files_only,
            self.owner.as_ref().map(|o| (o.by, o.id)),
        )
    }
}

/// A directory with much old data in its tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColdDir {
    /// The directory.
    pub path: PathBuf,
    /// All files in its tree.
    pub data: Amount,
    /// Per threshold, the files in its tree older than it.
    pub cold: Vec<Amount>,
}

/// What went wrong with one entry during the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProblemKind {
    /// It was listed but gone when storlab looked at it.
    Vanished,
    /// Permission denied.
    Unreadable,
    /// Any other error.
    Error,
}

/// One entry storlab could not count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Problem {
    /// The entry.
    pub path: PathBuf,
    /// What kind of problem.
    pub kind: ProblemKind,
    /// The system's message.
    pub error: String,
}

/// How many problems are named one by one; the rest are only counted.
pub const PROBLEMS_NAMED: usize = 10;

/// What a scan found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// The options it ran with.
    pub options: ScanOptions,
    /// The rows, in the order of the PATHs given, then by path.
    pub rows: Vec<Row>,
    /// Everything, every file counted once.
    pub total: Stats,
    /// The largest cold directories (by data older than the first threshold), when asked.
    pub top: Vec<ColdDir>,
    /// Entries that could not be counted.
    pub problem_count: u64,
    /// The first of them, named.
    pub problems: Vec<Problem>,
    /// Mount points not descended into (without `--cross-mounts`): how many.
    pub skipped_mount_count: u64,
    /// The first of them.
    pub skipped_mounts: Vec<PathBuf>,
    /// Entries left out by `--exclude` (not counted, not descended into): how many.
    #[serde(default)]
    pub excluded_count: u64,
    /// The first of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<PathBuf>,
    /// What the mount options mean for the age basis, per PATH.
    pub notes: Vec<String>,
    /// Directory entries looked at.
    pub entries: u64,
    /// Wall-clock seconds the walk took.
    pub seconds: f64,
}

impl Report {
    /// A row as a reader knows it: its owner (after its PATH when the scan has several), else
    /// its directory, "(files directly in it)" for the files a directory holds itself.
    pub fn row_label(&self, r: &Row) -> String {
        match &r.owner {
            Some(o) if self.options.roots.len() > 1 => format!("{}: {}", r.root.display(), o.label()),
            Some(o) => o.label(),
            None if r.own_files_only => format!("{} (files directly in it)", r.path.display()),
            None => r.path.display().to_string(),
        }
    }

    /// True when some entries could not be counted: the figures are a lower bound.
    pub fn partial(&self) -> bool {
        self.problem_count > 0
    }
}

/// A row's figures that growth compares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// Files and their data.
    pub data: Amount,
    /// Data older than the first threshold both scans have, when they have one.
    pub cold: Option<Amount>,
}

/// One row's change between an earlier scan of the same PATHs and this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowthRow {
    /// What the row is ("total" for the whole).
    pub label: String,
    /// The earlier scan's figures (None: the row is new).
    pub before: Option<Held>,
    /// This scan's figures (None: the row is gone).
    pub after: Option<Held>,
}

/// The change since an earlier scan (`storlab scan --against ID|last`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Growth {
    /// The earlier scan's run.
    pub since_run: i64,
    /// When it ran.
    pub since: String,
    /// The threshold cold data is compared at, seconds (the first one both scans have).
    pub cold_threshold: Option<u64>,
    /// Per row (this scan's order, then rows that are gone), and the total last.
    pub rows: Vec<GrowthRow>,
}

/// What changed from `before` (run `since_run`, started `since`) to `after`: rows are matched
/// by their PATH, directory and owner; cold data is compared at the first age threshold both
/// scans used.
pub fn growth(before: &Report, after: &Report, since_run: i64, since: &str) -> Growth {
    let threshold = after
        .options
        .ages
        .iter()
        .copied()
        .find(|a| before.options.ages.contains(a));
    let held = |r: &Report, st: &Stats| Held {
        data: st.data,
        cold: threshold.and_then(|a| {
            let i = r.options.ages.iter().position(|x| *x == a)?;
            st.cold.get(i).copied()
        }),
    };
    // Both scans are of the same PATHs: a row gone since is named as this scan would name it.
    let label = |row: &Row| after.row_label(row);
    // Rows matched by key through maps, not by searching: a depth:N scan has thousands.
    let before_by_key: HashMap<_, &Row> = before.rows.iter().map(|b| (b.key(), b)).collect();
    let after_keys: HashSet<_> = after.rows.iter().map(Row::key).collect();
    let mut rows = Vec::new();
    for a in &after.rows {
        let b = before_by_key.get(&a.key());
        rows.push(GrowthRow {
            label: label(a),
            before: b.map(|b| held(before, &b.stats)),
            after: Some(held(after, &a.stats)),
        });
    }
    for b in &before.rows {
        if !after_keys.contains(&b.key()) {
            rows.push(GrowthRow {
                label: label(b),
                before: Some(held(before, &b.stats)),
                after: None,
            });
        }
    }
    rows.push(GrowthRow {
        label: "total".into(),
        before: Some(held(before, &before.total)),
        after: Some(held(after, &after.total)),
    });
    Growth {
        since_run,
        since: since.to_string(),
        cold_threshold: threshold,
        rows,
    }
}

/// "60d", "36h", "90m", "45s": a threshold as a user would write it.
pub fn age_label(secs: u64) -> String {
    if secs.is_multiple_of(DAY) {
        format!("{}d", secs / DAY)
    } else if secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_have_the_documented_edges() {
        assert_eq!(age_bucket(0), 0);
        assert_eq!(age_bucket(7 * DAY - 1), 0);
        assert_eq!(age_bucket(7 * DAY), 1);
        assert_eq!(age_bucket(60 * DAY), 3);
        assert_eq!(age_bucket(365 * DAY), 5);
        assert_eq!(size_bucket(0), 0);
        assert_eq!(size_bucket(1), 1);
        assert_eq!(size_bucket(4096), 2);
        assert_eq!(size_bucket((1 << 30) - 1), 5);
        assert_eq!(size_bucket(1 << 30), 6);
    }

    #[test]
    fn groupings_parse() {
        assert_eq!(GroupBy::parse("top"), Ok(GroupBy::Depth(1)));
        assert_eq!(GroupBy::parse("depth:3"), Ok(GroupBy::Depth(3)));
        assert_eq!(GroupBy::parse("path"), Ok(GroupBy::Path));
        assert!(GroupBy::parse("depth:0").unwrap_err().contains("depth:N"));
        assert!(GroupBy::parse("size").is_err());
    }
}
