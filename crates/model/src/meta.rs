//! Metadata workloads as stored (`storlab meta`, crates/meta): the namespace operations, the
//! shape of the tree they work in, and what a phase did beyond its counts (its entries and the
//! errors it named). A meta phase is stored as any phase is: its name is the operation's, its
//! parameters [`MetaParams`], its result the engine's [`crate::result::PhaseResult`] with
//! operations counted as reads (stat, read) or writes (everything that changes the namespace),
//! so that `results show`, `compare` and `report` read it unchanged.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One namespace operation, done once per item by every worker (mdtest's phases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetaOp {
    /// Make each item's directory.
    Mkdir,
    /// Make each item's file (open with O_CREAT|O_EXCL, write its data, close).
    Create,
    /// stat each file; a missing one, or one of the wrong type or size, is an error.
    Stat,
    /// Open each file, read its data whole and check it, close.
    Read,
    /// Open each existing file, write its data again, close.
    Write,
    /// Rename each file to a new name in the same directory.
    Rename,
    /// Make a hard link to each file.
    Link,
    /// Remove each file (and its link, when the run made one).
    Remove,
    /// Remove each item's directory.
    Rmdir,
    /// `storlab meta walk`: every entry below a directory looked at once, by storlab scan's
    /// walker (not a phase of `storlab meta`'s list).
    Walk,
    /// `storlab meta untar`: copies of an archive extracted at once, one per worker (not a
    /// phase of `storlab meta`'s list).
    Untar,
}

impl MetaOp {
    /// Every operation, in the order a run does them when it does them all.
    pub const ALL: [MetaOp; 9] = [
        MetaOp::Mkdir,
        MetaOp::Create,
        MetaOp::Stat,
        MetaOp::Read,
        MetaOp::Write,
        MetaOp::Rename,
        MetaOp::Link,
        MetaOp::Remove,
        MetaOp::Rmdir,
    ];

    /// Its name, as `--phase` takes it and phases are stored.
    pub fn name(self) -> &'static str {
        match self {
            MetaOp::Mkdir => "mkdir",
            MetaOp::Create => "create",
            MetaOp::Stat => "stat",
            MetaOp::Read => "read",
            MetaOp::Write => "write",
            MetaOp::Rename => "rename",
            MetaOp::Link => "link",
            MetaOp::Remove => "remove",
            MetaOp::Rmdir => "rmdir",
            MetaOp::Walk => "walk",
            MetaOp::Untar => "untar",
        }
    }

    /// The phase of a name (`walk` is not one: it is `storlab meta walk`).
    pub fn from_name(s: &str) -> Option<MetaOp> {
        MetaOp::ALL.into_iter().find(|o| o.name() == s)
    }

    /// The names, comma-separated (for messages).
    pub fn names() -> String {
        MetaOp::ALL.map(MetaOp::name).join(", ")
    }

    /// True for the operations that only look (their operations count as reads).
    pub fn reads(self) -> bool {
        matches!(self, MetaOp::Stat | MetaOp::Read | MetaOp::Walk)
    }

    /// True for the operations on directories rather than files.
    pub fn on_directories(self) -> bool {
        matches!(self, MetaOp::Mkdir | MetaOp::Rmdir)
    }
}

impl fmt::Display for MetaOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The directories the items live in: a tree `depth` levels below its top with `branch`
/// subdirectories under each directory above the last level (mdtest's `-z` and `-b`); the
/// items are spread evenly over all of its directories. Depth 0 is the top alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeShape {
    /// Levels below the top.
    pub depth: u32,
    /// Subdirectories of each directory above the last level.
    pub branch: u32,
}

impl TreeShape {
    /// How many directories the tree has, its top included (None when it would not fit 64 bits).
    pub fn directories(self) -> Option<u64> {
        let mut total: u64 = 0;
        let mut level: u64 = 1;
        for _ in 0..=self.depth {
            total = total.checked_add(level)?;
            level = level.checked_mul(self.branch as u64)?;
        }
        Some(total)
    }
}

/// What a meta phase was asked to do, and what it did beyond its counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetaParams {
    /// The operation.
    pub op: MetaOp,
    /// Workers (threads), started together behind a barrier.
    pub workers: u32,
    /// Items per worker the run set out to make.
    pub items_per_worker: u64,
    /// The tree the items live in.
    pub tree: TreeShape,
    /// One tree shared by every worker (mdtest's default), or one per worker (`-u`).
    pub shared_dir: bool,
    /// Bytes written to each file on create and write, and read back by read.
    pub file_size: u64,
    /// fsync each file (or directory, for mkdir) before it counts as done.
    pub sync: bool,
    /// The entries the phase acted on: made, looked at or removed, each counted once.
    pub entries: u64,
    /// Operations that failed or whose result was wrong.
    pub errors: u64,
    /// The first errors, each naming its entry and what was wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_errors: Vec<String>,
}

/// How many errors a phase names (the rest are counted).
pub const NAMED_ERRORS: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_trees_count_their_directories() {
        for op in MetaOp::ALL {
            assert_eq!(MetaOp::from_name(op.name()), Some(op));
        }
        assert_eq!(MetaOp::from_name("unlink"), None);
        assert_eq!(MetaOp::from_name("walk"), None);
        assert_eq!(TreeShape { depth: 0, branch: 7 }.directories(), Some(1));
        assert_eq!(TreeShape { depth: 2, branch: 3 }.directories(), Some(1 + 3 + 9));
        assert_eq!(TreeShape { depth: 3, branch: 1 }.directories(), Some(4));
        assert_eq!(
            TreeShape {
                depth: 64,
                branch: 1000
            }
            .directories(),
            None
        );
    }
}
