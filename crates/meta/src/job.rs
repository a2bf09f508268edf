//! What `storlab meta` is asked to do, checked whole before anything is made.

use std::path::{Path, PathBuf};
use std::time::Duration;

use storlab_model::meta::{MetaOp, TreeShape};

use crate::MetaError;

/// The most directories a tree may have: past this a typo (`--tree 10,100`) would spend hours
/// making directories before the first item.
pub const MAX_TREE_DIRECTORIES: u64 = 1_000_000;

/// A metadata workload as the user gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaJob {
    /// The directory to work in; storlab makes its own directory inside it.
    pub target: PathBuf,
    /// Workers (threads).
    pub workers: u32,
    /// Items per worker (with `runtime`, the most a worker makes).
    pub items_per_worker: u64,
    /// With a runtime, the phases that make items (mkdir, create) end after it, and the
    /// later phases work on what was made (mdtest's stonewall timer).
    pub runtime: Option<Duration>,
    /// The operations, in order.
    pub phases: Vec<MetaOp>,
    /// The tree the items live in.
    pub tree: TreeShape,
    /// One tree for all workers, or one each.
    pub shared_dir: bool,
    /// Bytes of data in each file.
    pub file_size: u64,
    /// fsync what each operation made or changed.
    pub sync: bool,
    /// Leave the tree in place at the end.
    pub keep: bool,
}

/// What `storlab meta` was given, as written: its flags, declared here once (the binary
/// flattens them into its command line, beside its subcommands').
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MetaFlags {
    /// The directory to work in: storlab makes its own directory in it (storlab-meta-PID) and
    /// removes it at the end, also after Ctrl-C.
    #[arg(long, value_name = "DIR", required = true)]
    pub target: Option<PathBuf>,
    /// Workers (threads), started together for each phase.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: u32,
    /// Items (files, and directories for mkdir/rmdir) each worker makes.
    #[arg(long = "files-per-thread", value_name = "N", default_value_t = 1000)]
    pub files_per_thread: u64,
    /// End the making phases (mkdir, create) after this long (mdtest's stonewall timer); the
    /// later phases work on what was made.
    #[arg(long, value_name = "DURATION")]
    pub runtime: Option<String>,
    /// Phases in order, comma-separated or repeated: mkdir, create, stat, read, write, rename,
    /// link, remove, rmdir (default mkdir,create,stat,remove,rmdir).
    #[arg(long = "phase", value_name = "NAMES")]
    pub phases: Vec<String>,
    /// The tree the items are spread over: DEPTH,BRANCH (mdtest's -z and -b; 0,1 is one
    /// directory).
    #[arg(long, value_name = "DEPTH,BRANCH", default_value = "0,1")]
    pub tree: String,
    /// A tree for each worker (mdtest's -u) instead of one shared by all.
    #[arg(long = "unique-dir", conflicts_with = "shared_dir")]
    pub unique_dir: bool,
    /// One tree shared by all workers (the default).
    #[arg(long = "shared-dir")]
    pub shared_dir: bool,
    /// Bytes written to each file by create and write, read back and checked by read.
    #[arg(long = "file-size", value_name = "SIZE", default_value = "0")]
    pub file_size: String,
    /// fsync each file before closing it, and its directory after each change.
    #[arg(long)]
    pub sync: bool,
    /// Leave the tree in place at the end.
    #[arg(long)]
    pub keep: bool,
}

/// The phases when none is given: mdtest's directory and file phases.
pub const DEFAULT_PHASES: [MetaOp; 5] = [
    MetaOp::Mkdir,
    MetaOp::Create,
    MetaOp::Stat,
    MetaOp::Remove,
    MetaOp::Rmdir,
];

impl MetaJob {
    /// The request the flags make; a refusal names the flag (the request as a whole is
    /// checked by [`crate::layout::Layout::prepare`]).
    pub fn from_flags(f: &MetaFlags) -> Result<MetaJob, MetaError> {
        let mut phases = Vec::new();
        for p in f
            .phases
            .iter()
            .flat_map(|p| p.split(','))
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            phases.push(MetaOp::from_name(p).ok_or_else(|| {
                let names = MetaOp::names();
                invalid(format!(
                    "--phase {p}: not a metadata phase{}; expected {names}",
                    storlab_model::names::did_you_mean(p, names.split(", "))
                ))
            })?);
        }
        if phases.is_empty() {
            phases = DEFAULT_PHASES.to_vec();
        }
        let bad_tree = || invalid(format!("--tree {}: expected DEPTH,BRANCH such as 2,10", f.tree));
        let (depth, branch) = f.tree.split_once(',').ok_or_else(bad_tree)?;
        let tree = match (depth.trim().parse(), branch.trim().parse()) {
            (Ok(depth), Ok(branch)) => TreeShape { depth, branch },
            _ => return Err(bad_tree()),
        };
        let file_size: storlab_units::Size = f
            .file_size
            .parse()
            .map_err(|e| invalid(format!("--file-size {}: {e}", f.file_size)))?;
        let runtime = f
            .runtime
            .as_deref()
            .map(|r| {
                r.parse::<storlab_units::Duration>()
                    .map(|d| d.std())
                    .map_err(|e| invalid(format!("--runtime {r}: {e}")))
            })
            .transpose()?;
        Ok(MetaJob {
            target: f
                .target
                .clone()
                .ok_or_else(|| invalid("--target DIR: the directory to work in"))?,
            workers: f.threads,
            items_per_worker: f.files_per_thread,
            runtime,
            phases,
            tree,
            shared_dir: !f.unique_dir,
            file_size: file_size.0,
            sync: f.sync,
            keep: f.keep,
        })
    }
}

fn invalid(msg: impl Into<String>) -> MetaError {
    MetaError::Invalid(msg.into())
}

impl MetaJob {
    /// Checks the request (nothing is made): the phases must make what they later use (stat,
    /// read, write, rename, link, remove need create before them; rmdir needs mkdir), read
    /// needs data, the tree must stay within [`MAX_TREE_DIRECTORIES`] and the target must be a
    /// directory. Returns the tree's directories. [`crate::layout::Layout::prepare`] checks
    /// the inodes on top.
    pub fn check(&self) -> Result<u64, MetaError> {
        if self.workers == 0 {
            return Err(invalid("--threads 0: at least one worker"));
        }
        if self.items_per_worker == 0 {
            return Err(invalid("--files-per-thread 0: each worker needs at least one item"));
        }
        if self.runtime.is_some_and(|d| d.is_zero()) {
            return Err(invalid("--runtime 0: give a duration such as 30s, or leave it out"));
        }
        if self.phases.is_empty() {
            return Err(invalid(format!(
                "no phase: give --phase with some of {}",
                MetaOp::names()
            )));
        }
        if self.tree.depth > 0 && self.tree.branch == 0 {
            return Err(invalid(format!(
                "--tree {},0: a tree of depth {} needs a branching factor of at least 1",
                self.tree.depth, self.tree.depth
            )));
        }
        check_order(&self.phases)?;
        if self.file_size == 0 && self.phases.contains(&MetaOp::Read) {
            return Err(invalid(
                "--phase read with --file-size 0: the files have no data to read; give --file-size (e.g. 4k)",
            ));
        }
        if self.file_size > 1 << 30 {
            return Err(invalid(format!(
                "--file-size {}: at most 1 GiB per file (this is a metadata workload; use `storlab run` for data)",
                self.file_size
            )));
        }
        let dirs = self
            .tree
            .directories()
            .filter(|&d| d <= MAX_TREE_DIRECTORIES)
            .ok_or_else(|| {
                invalid(format!(
                    "--tree {},{}: more than {MAX_TREE_DIRECTORIES} directories; a smaller depth or branch",
                    self.tree.depth, self.tree.branch
                ))
            })?;
        let meta =
            std::fs::metadata(&self.target).map_err(|e| invalid(format!("--target {}: {e}", self.target.display())))?;
        if !meta.is_dir() {
            return Err(invalid(format!(
                "--target {}: not a directory (storlab meta works in a directory)",
                self.target.display()
            )));
        }
        Ok(dirs)
    }
}

/// What each phase needs made before it, in the order given.
fn check_order(phases: &[MetaOp]) -> Result<(), MetaError> {
    let (mut files, mut dirs, mut linked) = (false, false, false);
    for (i, op) in phases.iter().enumerate() {
        let at = format!("--phase {op} (phase {} of {})", i + 1, phases.len());
        match op {
            MetaOp::Create if files => {
                return Err(invalid(format!("{at}: the files exist already (remove them first)")))
            }
            MetaOp::Create => files = true,
            MetaOp::Mkdir if dirs => {
                return Err(invalid(format!(
                    "{at}: the directories exist already (rmdir them first)"
                )))
            }
            MetaOp::Mkdir => dirs = true,
            MetaOp::Rmdir if !dirs => {
                return Err(invalid(format!("{at}: no directories to remove; mkdir comes first")))
            }
            MetaOp::Rmdir => dirs = false,
            MetaOp::Link if linked => return Err(invalid(format!("{at}: the files are linked already"))),
            _ if !files => return Err(invalid(format!("{at}: no files to work on; create comes first"))),
            MetaOp::Link => linked = true,
            MetaOp::Remove => (files, linked) = (false, false),
            _ => {}
        }
    }
    Ok(())
}

/// Refuses a tree that needs more inodes than the filesystem has free for the user
/// (filesystems that allocate inodes as they go, btrfs say, report none and are not checked).
pub fn check_inodes(target: &Path, needed: u64) -> Result<(), MetaError> {
    let Ok(st) = rustix::fs::statvfs(target) else {
        return Ok(());
    };
    if st.f_files > 0 && needed > st.f_favail {
        return Err(invalid(format!(
            "{}: the tree and items need {needed} inodes and the filesystem has {} free; fewer items or workers",
            target.display(),
            st.f_favail
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_make_the_request_and_a_refusal_names_its_flag() {
        let flags = MetaFlags {
            target: Some("/mnt/fs".into()),
            threads: 4,
            files_per_thread: 100,
            phases: vec!["mkdir,create".into(), "stat".into()],
            tree: "2, 10".into(),
            file_size: "4k".into(),
            runtime: Some("30s".into()),
            ..Default::default()
        };
        let j = MetaJob::from_flags(&flags).unwrap();
        assert_eq!(j.phases, vec![MetaOp::Mkdir, MetaOp::Create, MetaOp::Stat]);
        assert_eq!((j.tree.depth, j.tree.branch, j.file_size), (2, 10, 4096));
        assert_eq!(j.runtime, Some(Duration::from_secs(30)));
        assert!(j.shared_dir);
        let j = MetaJob::from_flags(&MetaFlags {
            phases: Vec::new(),
            ..flags.clone()
        })
        .unwrap();
        assert_eq!(j.phases, DEFAULT_PHASES.to_vec());
        let err = |f: MetaFlags| MetaJob::from_flags(&f).unwrap_err().to_string();
        assert_eq!(
            err(MetaFlags {
                tree: "2".into(),
                ..flags.clone()
            }),
            "--tree 2: expected DEPTH,BRANCH such as 2,10"
        );
        assert!(err(MetaFlags {
            phases: vec!["fly".into()],
            ..flags.clone()
        })
        .starts_with("--phase fly: not a metadata phase"));
        assert_eq!(
            err(MetaFlags { target: None, ..flags }),
            "--target DIR: the directory to work in"
        );
    }

    fn job(dir: &Path) -> MetaJob {
        MetaJob {
            target: dir.to_path_buf(),
            workers: 2,
            items_per_worker: 10,
            runtime: None,
            phases: vec![MetaOp::Create, MetaOp::Stat, MetaOp::Remove],
            tree: TreeShape { depth: 1, branch: 2 },
            shared_dir: false,
            file_size: 0,
            sync: false,
            keep: false,
        }
    }

    fn refusal(j: &MetaJob) -> String {
        j.check().map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn phases_must_make_what_they_use() {
        let d = tempfile::tempdir().unwrap();
        let mut j = job(d.path());
        assert!(j.check().is_ok());
        j.phases = vec![MetaOp::Stat];
        assert!(refusal(&j).contains("--phase stat (phase 1 of 1): no files to work on; create comes first"));
        j.phases = vec![MetaOp::Create, MetaOp::Remove, MetaOp::Read];
        assert!(refusal(&j).contains("--phase read (phase 3 of 3)"));
        j.phases = vec![MetaOp::Rmdir];
        assert!(refusal(&j).contains("mkdir comes first"));
        j.phases = vec![MetaOp::Create, MetaOp::Create];
        assert!(refusal(&j).contains("exist already"));
        j.phases = vec![MetaOp::Create, MetaOp::Link, MetaOp::Link];
        assert!(refusal(&j).contains("linked already"));
        j.phases = vec![
            MetaOp::Create,
            MetaOp::Link,
            MetaOp::Remove,
            MetaOp::Create,
            MetaOp::Link,
        ];
        assert!(j.check().is_ok());
        j.phases = vec![MetaOp::Mkdir, MetaOp::Rmdir, MetaOp::Mkdir, MetaOp::Rmdir];
        assert!(j.check().is_ok());
    }

    #[test]
    fn nonsense_is_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let mut j = job(d.path());
        j.phases = vec![MetaOp::Create, MetaOp::Read];
        assert!(refusal(&j).contains("--file-size 0"));
        let mut j = job(d.path());
        j.workers = 0;
        assert!(refusal(&j).contains("--threads 0"));
        let mut j = job(d.path());
        j.items_per_worker = 0;
        assert!(refusal(&j).contains("--files-per-thread 0"));
        let mut j = job(d.path());
        j.tree = TreeShape { depth: 7, branch: 10 };
        assert!(refusal(&j).contains("more than 1000000 directories"));
        let mut j = job(d.path());
        j.target = d.path().join("missing");
        assert!(refusal(&j).contains("missing"));
    }
}
