//! Every example README.md and docs/*.md show runs as written (issue 42, part 1).
//!
//! **How a doc marks its blocks.** A fenced block's info string says what it is:
//! - `sh`: commands to run. The block runs whole, as one bash script (`set -e`), after the
//!   doc's earlier `sh` and `console` blocks, in the same scratch directory — as a reader
//!   pasting the doc in order would.
//! - `console`: a transcript. Its `$ ` lines run (in order, as above); the rest is output.
//! - `text` (or any other string): a synopsis, an output, a diagram, a file; not run.
//!
//! A block with no info string that shows a `storlab` or `mpirun` command fails the test: each
//! such block says which it is.
//!
//! **What a test machine lacks.** A comment line `# needs: …` in a runnable block says what the
//! next command needs that a test machine lacks (a RAID controller, 48 MPI hosts, a
//! PostgreSQL server named db1); that command is not run, and is listed in the test's output.
//!
//! **What the harness changes, and only this:**
//! - absolute paths the docs use are scratch places ([`PLACES`]): `/mnt/pool` is
//!   `SCRATCH/mnt/pool`, a btrfs RAID1 of loop devices there; `/data1` an ext4 on a loop device;
//!   `/dev/sdq` a spare loop device; the test refuses a runnable block naming an absolute path
//!   that is neither a place nor read only ([`READ_ONLY`]);
//! - sizes and times are scaled down as [`SCALE`] lists, whole words only;
//! - what a doc presumes its reader has (job files, old results, runs 12 and 13) is made first
//!   by the doc's [`GIVEN`] script, with storlab's own commands and the repository's files;
//! - `storlab` is a shell function around the binary: a command that runs until stopped
//!   ([`STOPPED`]) is stopped with SIGINT after a few seconds, as a reader's Ctrl-C; an exit
//!   that is an answer, not a failure ([`ANSWERS`]: a qualification's FAIL or UNDECIDED), is
//!   accepted; every other non-zero exit fails the test with the doc's file and line.
//!
//! `DOC_EXAMPLES_TRACE=1` shows every command with the time it started, and what it printed.
//!
//! HOME is the scratch directory (the default database is `~/.local/share/storlab/results.db`
//! there); STORLAB_DB is unset. Each doc's scratch is removed — its processes killed, its
//! mounts unmounted, its loop devices detached — even when the test fails.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// A fenced block of a doc.
#[derive(Debug, Clone)]
struct Block {
    /// The doc's line of the block's first content line (1-based).
    first_line: usize,
    /// The info string (`sh`, `console`, `text`, …; empty when none).
    info: String,
    lines: Vec<String>,
}

impl Block {
    fn runnable(&self) -> bool {
        self.info == "sh" || self.info == "console"
    }

    /// The commands the block shows: `storlab` and `mpirun` lines (after `$ ` in a transcript),
    /// with their doc line.
    fn commands(&self) -> Vec<(usize, String)> {
        self.lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                let t = l.trim_start();
                let t = t.strip_prefix("$ ").unwrap_or(t);
                (t.starts_with("storlab ") || t.starts_with("mpirun ")).then(|| (self.first_line + i, t.to_string()))
            })
            .collect()
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The fenced blocks of `doc` (a path relative to the repository).
fn blocks_of(doc: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(repo().join(doc)).unwrap();
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (line.strip_prefix("```"), open.take()) {
            (Some(info), None) => {
                open = Some(Block {
                    first_line: i + 2,
                    info: info.trim().to_string(),
                    lines: Vec::new(),
                })
            }
            (Some(_), Some(b)) => blocks.push(b),
            (None, Some(mut b)) => {
                b.lines.push(line.to_string());
                open = Some(b);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{doc}: a fenced block is not closed");
    blocks
}

/// README.md and every docs/*.md.
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".md"))
        .collect();
    docs.sort();
    docs.insert(0, "README.md".to_string());
    docs
}

/// What a scratch place is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    /// A directory the doc makes itself (or that need not exist).
    Dir,
    /// An existing directory.
    MadeDir,
    /// A tmpfs of its own mounted there (an array's mount point: a filesystem of its own).
    Tmpfs,
    /// An ext4 on a loop device (a pool a challenge's fault may unmount and mount again).
    Ext4,
    /// An XFS on a loop device (512 MiB: mkfs.xfs's smallest is 300 MiB).
    Xfs,
    /// A btrfs RAID1 of two 2 GiB loop devices (images on tmpfs) with 200 MiB of data, for a
    /// scrub or a replace, and room for a job of the default size (1 GiB).
    Btrfs,
    /// A block device (a spare, a disk to watch): the path is replaced by an empty loop
    /// device's.
    Device,
}

/// Absolute paths the docs use, each a place in the scratch directory.
const PLACES: &[(&str, Place)] = &[
    ("/mnt/pool", Place::Btrfs),
    ("/dev/sdq", Place::Device),
    ("/dev/sdb", Place::Device),
    ("/dev/sdc", Place::Device),
    ("/data1", Place::Ext4),
    ("/mnt/ext4", Place::Ext4),
    ("/mnt/xfs", Place::Xfs),
    ("/data2", Place::Ext4),
    ("/data3", Place::Tmpfs),
    ("/data", Place::Tmpfs),
    ("/mnt/a", Place::Tmpfs),
    ("/mnt/b", Place::Tmpfs),
    ("/mnt/ssd", Place::Tmpfs),
    ("/mnt/fs", Place::Tmpfs),
    ("/mnt/mdt", Place::Dir),
    ("/mnt/test", Place::Tmpfs),
    ("/mnt/ex-walk", Place::MadeDir),
    ("/srv/new-array", Place::Tmpfs),
    ("/mnt/new-array", Place::Tmpfs),
    ("/etc/bash_completion.d", Place::MadeDir),
    ("/a", Place::Tmpfs),
    ("/b", Place::Tmpfs),
    ("/c", Place::Tmpfs),
    ("/srv/data2", Place::Tmpfs),
    ("/star", Place::MadeDir),
    ("/mnt/ex-a", Place::Dir),
    ("/mnt/ex-b", Place::Dir),
    // docs/sched.md's `/mnt/ex-$n`.
    ("/mnt/ex-", Place::Dir),
    ("/tmp/ex", Place::Dir),
    ("/tmp/docex", Place::Dir),
    ("/var/tmp/impdoc", Place::Dir),
    ("/dev/shm/sl", Place::Dir),
    ("/dev/shm/mt", Place::Dir),
];

/// Absolute paths a runnable block may name that are read, never written, and not mapped.
const READ_ONLY: &[&str] = &["/dev/urandom", "/dev/zero", "/dev/null", "/proc/", "/sys/"];

/// Sizes and times scaled down, as `(as written, as run)`, whole words only. Nothing else in a
/// command is changed.
const SCALE: &[(&str, &str)] = &[
    ("1g", "4m"),
    ("2g", "4m"),
    ("4g", "8m"),
    ("16g", "8m"),
    ("-g 4G", "-g 8m"),
    ("10s", "1s"),
    ("30s", "1s"),
    ("60s", "1s"),
    ("--runtime=60", "--runtime=1"),
    ("--size=1g", "--size=4m"),
    ("threads=1..64", "threads=1..4"),
    ("--files-per-thread 10000", "--files-per-thread 200"),
    ("--concurrency 1,2,4,8,16", "--concurrency 1,2"),
    // The challenge: five days are 12 s; its faults at 2 h and 1 d are at 3 s and 8 s.
    ("--duration 5d", "--duration 12s"),
    ("2h:unmount:P2:20m", "3s:unmount:P2:2s"),
    ("1d:stop-readers:all:1h", "8s:stop-readers:all:2s"),
    ("--from 2 --to 26", "--from 0.001 --to 0.003"),
    // A job file's quoted size and time, as docs/compare.md writes them.
    ("1g\"", "4m\""),
    ("10s\"", "1s\""),
];

/// Commands that run until stopped, stopped after [`STOP_AFTER`] with SIGINT (a reader's
/// Ctrl-C) unless they are given an end (`--rounds`, `--duration`).
const STOPPED: &[&str] = &["monitor run", "sched agent", "challenge agent"];
const STOP_AFTER: &str = "4s";

/// Exits that are an answer, not a failure: `(subcommand, codes, why)`.
const ANSWERS: &[(&str, &str, &str)] = &[
    ("qualify", "1 5", "a verdict: 1 FAIL, 5 UNDECIDED (docs/qualify.md)"),
    ("compare", "5", "a verdict: 5 a figure UNDECIDED (docs/compare.md)"),
];

/// The repository's example job files and plans in `examples/`, their sizes, times and points
/// scaled as the command lines' are (a plan of 5 GiB per worker at 16 workers is 80 GiB): its
/// four points of 1 to 16 workers two points of 1 and 2, each with its own threshold, and its
/// repetitions at most 3, the least a verdict takes (it may then be UNDECIDED, an answer).
const EXAMPLES: &str = r#"cp -r "$REPO/examples" examples
sed -i -e 's/"[1-9]g"/"8m"/g' -e 's/"[0-9][0-9]*s"/"1s"/g' -e 's/"5m"/"1s"/g' \
    -e 's/threads=1,4,8,16/threads=1,2/' -e 's/\(>= [0-9]*\) | \([0-9]*\) | [0-9]* | [0-9]*"/\1 | \2"/' \
    -e 's/^max_repeats = .*/max_repeats = 3/' examples/*.toml
"#;

/// Runs 1 to 13 of the reader's database (tagged fs=ext3 and fs=xfs), for docs that name runs 12
/// and 13.
const THIRTEEN_RUNS: &str = r#"mkdir -p old
for i in $(seq 1 13); do
  fs=ext3; [ $((i % 2)) = 0 ] && fs=xfs
  command storlab run --target old --phase write --size 1m --bs 64k -q --tag fs=$fs
done
"#;

/// What a doc presumes its reader has, made before its first block runs: scripts run in the
/// doc's scratch directory (`$REPO` is the repository), rewritten as the doc's blocks are.
const GIVEN: &[(&str, &[&str])] = &[
    (
        "README.md",
        // The repository's example job files and schedule; fio's own example job file; what fio
        // printed one night; a directory of old fio, IOzone and IOR results; runs 1 to 13; a
        // results file of the reader's; a tree to scan, some of it not read for 200 days.
        &[
            THIRTEEN_RUNS,
            EXAMPLES,
            r#"cp "$REPO/examples/schedule.toml" schedule.toml
sed -e 's/^runtime=900/runtime=1/' -e 's/^size=10G/size=16m/' \
    "$REPO/tests/fixtures/fio-examples/fio-rand-read.fio" > fio-rand-read.fio
cp "$REPO/tests/fixtures/import/fio-two-json.json" nightly-fio.json
mkdir results-2019
cp "$REPO"/tests/fixtures/import/{fio-terse-v3.txt,ior-json.json,iozone-auto-all-tests.txt} results-2019/
command storlab run --target old --phase write --size 1m --bs 64k -q --db results.db
mkdir -p /star/u/alice /star/u/bob /star/data01/run8 /star/data02/run9
for i in $(seq 1 20); do truncate -s 3M /star/u/alice/ntuple$i.root; done
for i in $(seq 1 10); do truncate -s 20M /star/data01/run8/daq$i.dat; done
for i in $(seq 1 5); do truncate -s 50M /star/data02/run9/mudst$i.root; done
touch -a -d '200 days ago' /star/u/alice/ntuple{1..12}.root
"#,
        ],
    ),
    (
        "docs/results.md",
        // Runs 1 to 13; three runs of a setup a at 20,000 IOPS and three of b at 24,000; every
        // file of old results the import tests read, the damaged ones too.
        &[
            THIRTEEN_RUNS,
            r#"for r in a:20000 a:20000 a:20000 b:24000 b:24000 b:24000; do
  command storlab run --target old --phase randread --bs 4k --size 1m --runtime 1s -q \
      --rate ${r#*:}iops --tag setup=${r%%:*}
done
mkdir results-2019 && cp "$REPO"/tests/fixtures/import/*.* results-2019/ && rm results-2019/ORIGIN.md
"#,
        ],
    ),
    (
        "docs/report.md",
        &[r#"mkdir old
for r in a:20000 a:20000 a:20000 b:24000 b:24000 b:24000; do
  command storlab run --target old --phase randread --bs 4k --size 1m --runtime 1s -q \
      --rate ${r#*:}iops --tag setup=${r%%:*}
done
"#],
    ),
    // docs/run.md's run 12: runs 1 to 11 before it.
    (
        "docs/run.md",
        &[r#"mkdir old
for i in $(seq 1 11); do command storlab run --target old --phase write --size 1m --bs 64k -q; done
"#],
    ),
    (
        "docs/meta.md",
        // The example job files; a tree of files for the walk.
        &[
            EXAMPLES,
            r#"command storlab meta --target /mnt/ex-walk --threads 2 --files-per-thread 500 --tree 2,10 --phase create --keep -q
"#,
        ],
    ),
    ("docs/sched.md", &[r#"cp "$REPO/examples/schedule.toml" schedule.toml"#]),
];

/// How long one block may run: a command that runs on is a failure, not a hung test.
const BLOCK_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// One doc's scratch: a directory on tmpfs with the places the doc names. Dropping it kills
/// what its scripts left running, unmounts, detaches and removes everything, in that order.
struct DocScratch {
    scratch: common::Scratch,
    /// Places with their own mounts and devices (dropped before the directory).
    held: Vec<Held>,
    /// `(path as written, path as run)`.
    map: Vec<(String, String)>,
    /// Process groups of the scripts run.
    groups: Vec<i32>,
}

#[allow(dead_code)] // Held only to be dropped: unmount, detach.
enum Held {
    Mount(common::Mount),
    Loop(common::LoopFs),
    Pool(common::BtrfsPool),
    Device(common::LoopDev, tempfile::TempDir),
}

impl DocScratch {
    fn new(places: &[(&'static str, Place)]) -> DocScratch {
        let scratch = common::Scratch::new();
        let mut s = DocScratch {
            scratch,
            held: Vec::new(),
            map: Vec::new(),
            groups: Vec::new(),
        };
        for (path, kind) in places {
            let here = format!("{}{path}", s.scratch.path().display());
            let point = PathBuf::from(&here);
            if *kind != Place::Device && *kind != Place::Btrfs {
                std::fs::create_dir_all(point.parent().unwrap()).unwrap();
            }
            let as_run = match kind {
                Place::Dir => here,
                Place::MadeDir => {
                    std::fs::create_dir_all(&point).unwrap();
                    here
                }
                Place::Tmpfs => {
                    s.held.push(Held::Mount(common::mount_fs(&point, "tmpfs", "size=2g")));
                    here
                }
                Place::Ext4 => {
                    s.held
                        .push(Held::Loop(common::loop_filesystem("mkfs.ext4", 256 << 20, &point)));
                    here
                }
                Place::Xfs => {
                    s.held
                        .push(Held::Loop(common::loop_filesystem("mkfs.xfs", 512 << 20, &point)));
                    here
                }
                Place::Btrfs => {
                    let rel = path.trim_start_matches('/');
                    let (pool, _work) = common::BtrfsPool::with(
                        &s.scratch,
                        rel,
                        common::PoolOptions {
                            mib: 200,
                            device_mib: 2048,
                            in_memory: true,
                            ..Default::default()
                        },
                    );
                    s.held.push(Held::Pool(pool));
                    here
                }
                Place::Device => {
                    let images = tempfile::Builder::new()
                        .prefix("storlab-docs-spare-")
                        .tempdir_in("/dev/shm")
                        .unwrap();
                    let dev = common::loop_device(&images.path().join("spare.img"), 2048 << 20);
                    let name = dev.dev.clone();
                    s.held.push(Held::Device(dev, images));
                    name
                }
            };
            s.map.push((path.to_string(), as_run));
        }
        s
    }

    fn path(&self) -> &Path {
        self.scratch.path()
    }

    /// Runs `script` (a block's lines, rewritten) with bash; `offset` maps the script's line
    /// to the doc's. Err: what failed, where.
    fn run(&mut self, doc: &str, script: &str, offset: i64) -> Result<String, String> {
        let file = self.path().join(".doc-block.sh");
        std::fs::write(
            &file,
            format!("source {}/.doc-preamble.sh\n{script}\n", self.path().display()),
        )
        .unwrap();
        std::fs::write(self.path().join(".doc-preamble.sh"), preamble(doc, offset)).unwrap();
        let bin_dir = Path::new(common::bin()).parent().unwrap();
        use std::os::unix::process::CommandExt;
        let child = Command::new("timeout")
            .args(["--kill-after=5", &format!("{}", BLOCK_LIMIT.as_secs()), "bash"])
            .arg(&file)
            .current_dir(self.path())
            .env(
                "PATH",
                format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default()),
            )
            .env("HOME", self.path())
            .env("REPO", repo())
            .env("TMPDIR", self.path())
            .env_remove("STORLAB_DB")
            .env_remove("STORLAB_SPOOL")
            .env_remove("XDG_DATA_HOME")
            .env_remove("XDG_RUNTIME_DIR")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        self.groups.push(child.id() as i32);
        let out = child.wait_with_output().unwrap();
        let mut text = format!("{}{}", common::stdout(&out), common::stderr(&out));
        if out.status.code() == Some(124) {
            text.push_str(&format!(
                "doc_examples: {doc}: the block did not finish within {} s (stopped)\n",
                BLOCK_LIMIT.as_secs()
            ));
        }
        if out.status.success() {
            Ok(text)
        } else {
            Err(text)
        }
    }
}

impl Drop for DocScratch {
    fn drop(&mut self) {
        for g in &self.groups {
            // SAFETY: kill(2) on a process group this test started; no memory is touched.
            unsafe {
                libc::kill(-g, libc::SIGKILL);
            }
        }
        // Mounts a script made under the scratch (deepest first), then its loop devices.
        let root = self.path().display().to_string();
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut under: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split(' ').nth(1))
            .filter(|p| p.starts_with(&root))
            .collect();
        under.sort_by_key(|p| std::cmp::Reverse(p.len()));
        let held_points: Vec<PathBuf> = self
            .held
            .iter()
            .filter_map(|h| match h {
                Held::Mount(m) => Some(m.point.clone()),
                Held::Loop(l) => Some(l.mount.point.clone()),
                Held::Pool(p) => Some(p.mount.point.clone()),
                Held::Device(..) => None,
            })
            .collect();
        for p in under {
            if !held_points.iter().any(|h| h.as_path() == Path::new(p)) {
                let _ = Command::new("umount").arg("-l").arg(p).status();
            }
        }
        if let Ok(o) = Command::new("losetup")
            .args(["-n", "-l", "-O", "NAME,BACK-FILE"])
            .output()
        {
            for l in common::stdout(&o).lines() {
                let mut f = l.split_whitespace();
                if let (Some(dev), Some(back)) = (f.next(), f.next()) {
                    if back.starts_with(&root) {
                        let _ = Command::new("losetup").args(["-d", dev]).status();
                    }
                }
            }
        }
        self.held.clear();
    }
}

/// The bash the blocks run after: `set -e`, a trap naming the doc's line of a failing
/// command, and `storlab` as a function applying [`STOPPED`] and [`ANSWERS`].
fn preamble(doc: &str, offset: i64) -> String {
    let mut p = String::new();
    writeln!(p, "set -e").unwrap();
    if std::env::var_os("DOC_EXAMPLES_TRACE").is_some() {
        // Each command with the time it started, to see where a doc's minutes go.
        writeln!(p, "PS4='+ $(date +%T.%N | cut -c1-12) '; set -x").unwrap();
    }
    writeln!(
        p,
        "trap 'echo \"doc_examples: {doc}:$((LINENO + {offset})): exit $? from: $BASH_COMMAND\" >&2' ERR"
    )
    .unwrap();
    writeln!(p, "storlab() {{\n  local rc=0").unwrap();
    let stopped: Vec<String> = STOPPED.iter().map(|s| format!("\"{s}\"")).collect();
    writeln!(
        p,
        "  case \"$1 $2\" in {}) case \" $* \" in *\" --rounds \"*|*\" --duration \"*) ;; *) timeout -s INT {STOP_AFTER} storlab \"$@\" || rc=$?; [ $rc = 124 ] && return 0; return $rc;; esac;; esac",
        stopped.join("|")
    )
    .unwrap();
    writeln!(p, "  command storlab \"$@\" || rc=$?").unwrap();
    for (sub, codes, _why) in ANSWERS {
        for c in codes.split(' ') {
            writeln!(p, "  [ \"$1\" = {sub} ] && [ $rc = {c} ] && return 0").unwrap();
        }
    }
    writeln!(p, "  return $rc\n}}").unwrap();
    p
}

/// Is `c` a character that may come before a place in a command (so that `/data` in
/// `/srv/data2` is not one)?
fn place_may_follow(c: Option<char>) -> bool {
    c.is_none_or(|c| c.is_whitespace() || "=:,'\"(".contains(c))
}

/// And after it (`/data` in `/data1` is not `/data`).
fn place_may_precede(c: Option<char>) -> bool {
    c.is_none_or(|c| c.is_whitespace() || "/=:,'\"@);$".contains(c))
}

/// Does `place` stand at byte `i` of `text` as a path of its own (not a part of a longer one)?
fn place_at(text: &str, i: usize, place: &str) -> bool {
    text[i..].starts_with(place)
        && place_may_follow(text[..i].chars().last())
        && place_may_precede(text[i + place.len()..].chars().next())
}

/// Does `text` name `place` anywhere as a path of its own?
fn mentions(text: &str, place: &str) -> bool {
    text.match_indices(place).any(|(i, _)| place_at(text, i, place))
}

/// `text` with each place as run and each scaled word replaced.
fn rewrite(text: &str, map: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        let before = out.chars().last();
        if place_may_follow(before) {
            // Longest place first: /data1 before /data.
            for (from, to) in longest_first(map) {
                if let Some(after) = rest.strip_prefix(from.as_str()) {
                    if place_may_precede(after.chars().next()) {
                        out.push_str(to);
                        rest = after;
                        continue 'scan;
                    }
                }
            }
            for (from, to) in SCALE {
                if let Some(after) = rest.strip_prefix(from) {
                    if after.chars().next().is_none_or(|c| c.is_whitespace()) {
                        out.push_str(to);
                        rest = after;
                        continue 'scan;
                    }
                }
            }
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn longest_first(map: &[(String, String)]) -> Vec<&(String, String)> {
    let mut m: Vec<&(String, String)> = map.iter().collect();
    m.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    m
}

/// A runnable block as the script that runs it, with the commands `# needs:` keeps back (a
/// `# needs:` as the block's first line keeps back the whole block). Lines keep their places,
/// so that the script's line N is the block's line N.
fn script_of(block: &Block) -> (String, Vec<String>) {
    let mut lines = Vec::new();
    let mut kept_back = Vec::new();
    let whole = block.lines.first().is_some_and(|l| l.trim().starts_with("# needs:"));
    let mut needs: Option<String> = None;
    let mut continuing = false;
    for (i, l) in block.lines.iter().enumerate() {
        let line = if block.info == "console" {
            console_line(block, i, continuing)
        } else {
            l.clone()
        };
        let t = line.trim();
        if let Some(what) = t.strip_prefix("# needs:") {
            needs = Some(what.trim().to_string());
            lines.push(line);
            continue;
        }
        let is_command = !t.is_empty() && !t.starts_with('#');
        let out = match needs.as_ref().filter(|_| is_command) {
            Some(what) => {
                if !continuing {
                    kept_back.push(format!("line {}: {t} (needs {what})", block.first_line + i));
                }
                format!("# {line}")
            }
            None => line.clone(),
        };
        continuing = t.ends_with('\\');
        if !continuing && is_command && !whole {
            needs = None;
        }
        lines.push(out);
    }
    (lines.join("\n"), kept_back)
}

/// Line `i` of a transcript as it runs: a `$ ` command (and, `continuing`, the line after a
/// command's `\`), blank for output. A command followed by `$ echo $?` and a number is expected to exit with that
/// number (the echo is then a no-op).
fn console_line(block: &Block, i: usize, continuing: bool) -> String {
    let l = &block.lines[i];
    if continuing {
        return l.clone();
    }
    let Some(cmd) = l.strip_prefix("$ ") else {
        return String::new();
    };
    if cmd.trim() == "echo $?" {
        return ":".to_string();
    }
    // The exit this command is shown to have: the next `$ ` line is `echo $?`, a number after it.
    let next = (i + 1..block.lines.len()).find(|&j| block.lines[j].starts_with("$ "));
    let expected = next
        .filter(|&j| block.lines[j].trim() == "$ echo $?")
        .and_then(|j| block.lines.get(j + 1))
        .and_then(|n| n.trim().parse::<i32>().ok());
    match expected {
        Some(n) if !cmd.trim_end().ends_with('\\') => format!(
            "{cmd} || DOC_RC=$?; [ \"${{DOC_RC:-0}}\" = {n} ] || {{ echo \"doc_examples: the doc shows exit {n}, it was ${{DOC_RC:-0}}\" >&2; false; }}"
        ),
        _ => cmd.to_string(),
    }
}

/// Absolute paths a runnable block would run with that are neither places nor read only (a
/// URL's `//` and what a comment says are not paths).
fn unplaced_paths(block: &Block) -> Vec<String> {
    let (script, _) = script_of(block);
    let mut bad = Vec::new();
    for l in script.lines() {
        let l = l.find(" #").map_or(l, |i| &l[..i]);
        if l.trim_start().starts_with('#') {
            continue;
        }
        let mut at = 0;
        while let Some(i) = l[at..].find('/') {
            let start = at + i;
            if l[start..].starts_with("//") {
                at = start + 2;
                continue;
            }
            if !place_may_follow(l[..start].chars().last()) {
                at = start + 1;
                continue;
            }
            let path: String = l[start..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !"'\",;)".contains(*c))
                .collect();
            at = start + path.len().max(1);
            let placed = PLACES.iter().any(|(p, _)| place_at(l, start, p));
            if !placed && !READ_ONLY.iter().any(|r| path.starts_with(r)) {
                bad.push(path);
            }
        }
    }
    bad
}

/// The texts of what `doc` presumes, as scripts.
fn given_scripts(doc: &str) -> Vec<String> {
    GIVEN
        .iter()
        .filter(|(d, _)| *d == doc)
        .flat_map(|(_, scripts)| scripts.iter().map(|s| s.to_string()))
        .collect()
}

/// Runs every runnable block of `doc` in order; Err: what failed, with its doc line.
fn run_doc(doc: &str) -> Result<(), String> {
    let blocks: Vec<Block> = blocks_of(doc).into_iter().filter(Block::runnable).collect();
    run_blocks(doc, &blocks, &given_scripts(doc))
}

/// Runs `blocks` (of the doc `doc`, or storlab's --help) in order after `given`, in one
/// scratch directory with the places they name.
fn run_blocks(doc: &str, blocks: &[Block], given: &[String]) -> Result<(), String> {
    for b in blocks {
        let bad = unplaced_paths(b);
        if !bad.is_empty() {
            return Err(format!(
                "{doc}:{}: paths that are no scratch place: {bad:?}",
                b.first_line
            ));
        }
    }
    let mut all: String = blocks
        .iter()
        .flat_map(|b| b.lines.clone())
        .collect::<Vec<_>>()
        .join("\n");
    all.push('\n');
    all.push_str(&given.join("\n"));
    let places: Vec<(&str, Place)> = PLACES.iter().copied().filter(|(p, _)| mentions(&all, p)).collect();
    let mut scratch = DocScratch::new(&places);
    for g in given {
        scratch
            .run(doc, &rewrite(g, &scratch.map), 0)
            .map_err(|e| format!("{doc}: what the doc presumes (GIVEN) could not be made:\n{e}"))?;
    }
    for b in blocks {
        let (script, kept_back) = script_of(b);
        for k in kept_back {
            eprintln!("{doc}: not run here: {k}");
        }
        let script = rewrite(&script, &scratch.map);
        let started = std::time::Instant::now();
        let printed = scratch.run(doc, &script, b.first_line as i64 - 2).map_err(|e| {
            let at = e
                .lines()
                .rev()
                .find(|l| l.starts_with("doc_examples: "))
                .unwrap_or("doc_examples: (no line: the block failed as a whole)")
                .to_string();
            // The doc's own line, as written.
            let written = at
                .strip_prefix(&format!("doc_examples: {doc}:"))
                .and_then(|r| r.split(':').next())
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| {
                    std::fs::read_to_string(repo().join(doc))
                        .ok()?
                        .lines()
                        .nth(n - 1)
                        .map(str::to_string)
                })
                .unwrap_or_default();
            format!("{at}\n    {written}\n--- as run:\n{script}\n--- what it printed:\n{e}")
        })?;
        if std::env::var_os("DOC_EXAMPLES_TRACE").is_some() {
            eprintln!("{printed}");
        }
        eprintln!(
            "{doc}:{}: ran ({} command(s) shown) in {:.1} s",
            b.first_line,
            b.commands().len(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

#[test]
fn every_block_with_a_command_says_whether_it_runs() {
    let mut unmarked = Vec::new();
    let mut unplaced = Vec::new();
    let mut commands = 0;
    for doc in documents() {
        for b in blocks_of(&doc) {
            let cmds = b.commands();
            commands += cmds.len();
            if !cmds.is_empty() && b.info.is_empty() {
                unmarked.push(format!("{doc}:{}: {}", cmds[0].0, cmds[0].1));
            }
            if b.runnable() {
                for p in unplaced_paths(&b) {
                    unplaced.push(format!("{doc}:{}: {p}", b.first_line));
                }
            }
        }
    }
    assert!(commands > 100, "{commands} documented commands found");
    assert!(
        unmarked.is_empty(),
        "blocks that show a command but say neither sh, console nor text:\n{}",
        unmarked.join("\n")
    );
    assert!(
        unplaced.is_empty(),
        "runnable blocks naming a path that is no scratch place (PLACES) nor read only:\n{}",
        unplaced.join("\n")
    );
}

#[test]
fn a_place_is_rewritten_where_it_is_a_path_and_only_there() {
    let map = vec![
        ("/data".to_string(), "/S/data".to_string()),
        ("/data1".to_string(), "/S/data1".to_string()),
        ("/mnt/pool".to_string(), "/S/mnt/pool".to_string()),
    ];
    assert_eq!(
        rewrite("storlab iozone -s 16g -F /data1/f /data/f --pool P2=/data", &map),
        "storlab iozone -s 8m -F /S/data1/f /S/data/f --pool P2=/S/data"
    );
    assert_eq!(
        rewrite("--task btrfs-scrub:/mnt/pool@50m --target /srv/data2 x/data", &map),
        "--task btrfs-scrub:/S/mnt/pool@50m --target /srv/data2 x/data"
    );
    assert_eq!(rewrite("--size 1g --bs 1gx", &map), "--size 4m --bs 1gx");
}

#[test]
fn needs_keeps_back_the_next_command_whole_and_only_it() {
    let b = Block {
        first_line: 10,
        info: "sh".into(),
        lines: vec![
            "storlab results list --limit 1".into(),
            "# needs: two disks".into(),
            "storlab monitor run --pool P1=/dev/sdb \\".into(),
            "    --metrics 127.0.0.1:9464".into(),
            "storlab results list".into(),
        ],
    };
    let (script, kept) = script_of(&b);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].starts_with("line 12: storlab monitor run"), "{kept:?}");
    let lines: Vec<&str> = script.lines().collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0], "storlab results list --limit 1");
    assert!(lines[2].starts_with("# storlab monitor run") && lines[3].starts_with("#     --metrics"));
    assert_eq!(lines[4], "storlab results list");
    // As a block's first line it keeps back the whole block.
    let whole = Block {
        lines: b.lines[1..].to_vec(),
        ..b.clone()
    };
    let (script, kept) = script_of(&whole);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(script.lines().skip(1).all(|l| l.starts_with('#')), "{script}");
}

#[test]
fn a_transcript_runs_its_commands_and_expects_the_exit_it_shows() {
    let b = Block {
        first_line: 1,
        info: "console".into(),
        lines: vec![
            "$ storlab meta --target d \\".into(),
            "    --phase create".into(),
            "run 1 · meta".into(),
            "$ storlab results import dir/".into(),
            "dir/x: not imported".into(),
            "$ echo $?".into(),
            "1".into(),
        ],
    };
    let (script, _) = script_of(&b);
    let lines: Vec<&str> = script.split('\n').collect();
    assert_eq!(lines[0], "storlab meta --target d \\");
    assert_eq!(lines[1], "    --phase create");
    assert_eq!(lines[2], "");
    assert!(
        lines[3].starts_with("storlab results import dir/ || DOC_RC=$?; [ \"${DOC_RC:-0}\" = 1 ]"),
        "{}",
        lines[3]
    );
    assert_eq!((lines[4], lines[5], lines[6]), ("", ":", ""));
}

/// One test per doc with runnable blocks; one lock, since they make loop devices and mounts.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

macro_rules! doc_tests {
    ($($name:ident => $doc:literal),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = run_doc($doc) {
                    panic!("{e}");
                }
            }
        )*
        const TESTED: &[&str] = &[$($doc),*];
    };
}

doc_tests! {
    readme_runs_as_written => "README.md",
    bound_md_runs_as_written => "docs/bound.md",
    challenge_md_runs_as_written => "docs/challenge.md",
    compare_md_runs_as_written => "docs/compare.md",
    database_md_runs_as_written => "docs/database.md",
    demo_md_runs_as_written => "docs/demo.md",
    impact_md_runs_as_written => "docs/impact.md",
    iozone_md_runs_as_written => "docs/iozone.md",
    meta_md_runs_as_written => "docs/meta.md",
    mpi_md_runs_as_written => "docs/mpi.md",
    monitor_md_runs_as_written => "docs/monitor.md",
    report_md_runs_as_written => "docs/report.md",
    results_md_runs_as_written => "docs/results.md",
    risk_md_runs_as_written => "docs/risk.md",
    run_md_runs_as_written => "docs/run.md",
    scan_md_runs_as_written => "docs/scan.md",
    sched_md_runs_as_written => "docs/sched.md",
}

/// The examples storlab's --help pages show: every `` `storlab …` `` in the help of every
/// command and subcommand, whitespace joined, each once.
fn help_examples() -> Vec<String> {
    let help = |args: &[&str]| -> String {
        let out = Command::new(common::bin()).args(args).arg("--help").output().unwrap();
        common::stdout(&out)
    };
    let subcommands = |page: &str| -> Vec<String> {
        page.split("\nCommands:\n")
            .nth(1)
            .map(|list| {
                list.lines()
                    .take_while(|l| !l.is_empty())
                    .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
                    .filter_map(|l| l.split_whitespace().next())
                    .filter(|c| *c != "help")
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut pages = vec![help(&[])];
    for sub in subcommands(&pages[0]) {
        let page = help(&[&sub]);
        for subsub in subcommands(&page) {
            pages.push(help(&[&sub, &subsub]));
        }
        pages.push(page);
    }
    let mut examples: Vec<String> = Vec::new();
    for page in pages {
        let joined = page.split_whitespace().collect::<Vec<_>>().join(" ");
        for (i, quoted) in joined.split('`').enumerate() {
            // A command's name alone (`storlab run`) is a reference; an example has an
            // option or an argument.
            let example =
                quoted.starts_with("storlab ") && quoted.split(' ').any(|w| w.chars().any(|c| !c.is_ascii_lowercase()));
            if i % 2 == 1 && example && !examples.iter().any(|e| e == quoted) {
                examples.push(quoted.to_string());
            }
        }
    }
    examples.sort();
    examples
}

/// What storlab's --help examples presume: runs 1 to 13, a plan, a fio job file (fio's
/// example, its 15 minutes and 10 GiB scaled to 1 s and 16 MiB).
const GIVEN_HELP: &str = r#"cp examples/plan-infn.toml plan.toml
sed -e 's/^runtime=900/runtime=1/' -e 's/^size=10G/size=16m/' \
    "$REPO/tests/fixtures/fio-examples/fio-rand-read.fio" > JOB.fio
"#;

#[test]
fn every_help_example_runs_as_written() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let examples = help_examples();
    assert!(
        examples.iter().any(|e| e.starts_with("storlab challenge run"))
            && examples.iter().any(|e| e.starts_with("storlab results tag")),
        "help examples found: {examples:#?}"
    );
    // One block per example, numbered from 1 (the "line" a failure names).
    let blocks: Vec<Block> = examples
        .into_iter()
        .enumerate()
        .map(|(i, e)| Block {
            first_line: i + 1,
            info: "sh".into(),
            lines: vec![e],
        })
        .collect();
    if let Err(e) = run_blocks(
        "storlab --help",
        &blocks,
        &[THIRTEEN_RUNS.to_string(), EXAMPLES.to_string(), GIVEN_HELP.to_string()],
    ) {
        panic!("{e}");
    }
}

#[test]
fn every_doc_with_a_runnable_block_has_its_test() {
    for doc in documents() {
        let runnable = blocks_of(&doc).iter().any(|b| b.runnable() && !b.commands().is_empty());
        assert!(
            !runnable || TESTED.contains(&doc.as_str()),
            "{doc} has runnable blocks but no test in doc_tests!"
        );
    }
}
