//! `storlab meta untar`: seed 004's test of a filesystem's metadata under concurrency — N
//! copies of a source archive extracted at once, each by its own thread into its own
//! directory, as N users' `tar xf` would, timed from the first open to the last close. The
//! extraction is the `tar` crate's (`Entry::unpack_in`, which refuses entries that would land
//! outside the directory), reading through the decompressor the archive needs (gzip, xz, or
//! none). [`generate`] makes a reproducible archive shaped like a kernel source tree, so that
//! no download is needed.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;

use storlab_engine::clock::now_ns;
use storlab_engine::thread_usage;
use storlab_model::meta::{MetaOp, MetaParams, TreeShape};

use crate::phase::{combine, Outcome, WorkerOut};
use crate::MetaError;

/// How an archive is compressed, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `.tar`.
    None,
    /// `.tar.gz`, `.tgz`.
    Gzip,
    /// `.tar.xz`, `.txz`.
    Xz,
}

impl Compression {
    /// From the archive's name; None for a name storlab does not know.
    pub fn of(path: &Path) -> Option<Compression> {
        let n = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        if n.ends_with(".tar.gz") || n.ends_with(".tgz") {
            Some(Compression::Gzip)
        } else if n.ends_with(".tar.xz") || n.ends_with(".txz") {
            Some(Compression::Xz)
        } else if n.ends_with(".tar") {
            Some(Compression::None)
        } else {
            None
        }
    }
}

/// An archive, read through once before the timed extractions: what one copy makes.
#[derive(Debug, Clone, PartialEq)]
pub struct Archive {
    /// Where it is.
    pub path: PathBuf,
    /// Its compression.
    pub compression: Compression,
    /// Its size on disk, bytes.
    pub compressed_bytes: u64,
    /// Regular files in it.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Symbolic and hard links.
    pub links: u64,
    /// The files' bytes.
    pub bytes: u64,
}

impl Archive {
    /// Entries one copy makes.
    pub fn entries(&self) -> u64 {
        self.files + self.dirs + self.links
    }
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> MetaError + '_ {
    move |source| MetaError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The archive's bytes, decompressed as its name says.
fn reader(path: &Path, c: Compression) -> Result<Box<dyn Read>, MetaError> {
    let f = BufReader::with_capacity(1 << 20, File::open(path).map_err(io_err(path))?);
    Ok(match c {
        Compression::None => Box::new(f),
        Compression::Gzip => Box::new(flate2::read::GzDecoder::new(f)),
        Compression::Xz => Box::new(xz2::read::XzDecoder::new(f)),
    })
}

/// `storlab meta untar`'s flags, declared here once (the binary flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UntarFlags {
    /// The directory to extract in: storlab makes its own directory in it (storlab-untar-PID)
    /// and removes it at the end.
    #[arg(long, value_name = "DIR")]
    pub target: PathBuf,
    /// The archive: .tar, .tar.gz or .tgz, .tar.xz or .txz.
    #[arg(long, value_name = "FILE", conflicts_with = "generate")]
    pub archive: Option<PathBuf>,
    /// Make the archive instead, in storlab's directory: kernel-like (a kernel source tree's
    /// shape, docs/meta.md).
    #[arg(long, value_name = "SHAPE")]
    pub generate: Option<String>,
    /// Files in the generated archive (the seed's kernel archive had about 30,000).
    #[arg(long, value_name = "N", default_value_t = 30_000)]
    pub files: u64,
    /// Copies extracted at once, a point of the study each.
    #[arg(long, value_name = "N,N,...", default_value = "1,2,4,8,16")]
    pub concurrency: String,
    /// fsync each file once it is extracted.
    #[arg(long)]
    pub fsync: bool,
    /// Leave storlab's directory with the archive it made and the last point's copies.
    #[arg(long)]
    pub keep: bool,
}

/// An untar study ready to run: the concurrencies, storlab's own directory made in the target,
/// and the archive read or generated there, with the inodes of its largest point checked.
pub struct UntarPlan {
    /// What was asked.
    pub flags: UntarFlags,
    /// Copies at once, one point each.
    pub levels: Vec<u32>,
    /// storlab's directory in the target (`storlab-untar-PID`).
    pub root: PathBuf,
    /// The archive.
    pub archive: Archive,
}

impl UntarPlan {
    /// Checks the flags, makes storlab's directory and reads (or generates) the archive; on a
    /// refusal after the directory was made, it is removed again.
    pub fn prepare(flags: &UntarFlags) -> Result<UntarPlan, MetaError> {
        let levels = concurrency(&flags.concurrency)?;
        let given = choose(
            &flags.target,
            flags.archive.as_deref(),
            flags.generate.as_deref(),
            flags.files,
        )?;
        let root = flags.target.join(format!("storlab-untar-{}", std::process::id()));
        std::fs::create_dir(&root).map_err(|e| MetaError::Invalid(format!("{}: {e}", root.display())))?;
        let archive = given.map_or_else(|| generate(&root.join("kernel-like.tar.gz"), flags.files), Ok);
        let most = *levels.iter().max().unwrap_or(&1) as u64;
        let checked = archive.and_then(|a| crate::job::check_inodes(&flags.target, a.entries() * most).map(|_| a));
        match checked {
            Ok(archive) => Ok(UntarPlan {
                flags: flags.clone(),
                levels,
                root,
                archive,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&root);
                Err(e)
            }
        }
    }

    /// The study in words (its status line's).
    pub fn describe(&self) -> String {
        format!(
            "untar of {} at {} concurrencies",
            self.archive.path.display(),
            self.levels.len()
        )
    }

    /// Removes storlab's directory unless `--keep`: Ok(Some(dir)) when kept, Err when it could
    /// not be removed.
    pub fn finish(self) -> Result<Option<PathBuf>, (PathBuf, std::io::Error)> {
        if self.flags.keep {
            return Ok(Some(self.root));
        }
        std::fs::remove_dir_all(&self.root).map_err(|e| (self.root, e))?;
        Ok(None)
    }
}

/// `--concurrency 1,2,4`: the copies extracted at once at each point, each 1 to 256.
pub fn concurrency(list: &str) -> Result<Vec<u32>, MetaError> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u32>() {
            Ok(n) if (1..=256).contains(&n) => out.push(n),
            _ => {
                return Err(MetaError::Invalid(format!(
                    "--concurrency {part}: a whole number of copies from 1 to 256"
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(MetaError::Invalid(
            "--concurrency: give the copies to extract at once, e.g. 1,2,4,8,16".into(),
        ));
    }
    Ok(out)
}

/// Which archive `storlab meta untar` extracts: a given one, read now (None: the generated one,
/// made later in storlab's directory); `--target` must be a directory.
pub fn choose(
    target: &Path,
    archive: Option<&Path>,
    generate: Option<&str>,
    files: u64,
) -> Result<Option<Archive>, MetaError> {
    let invalid = MetaError::Invalid;
    match std::fs::metadata(target) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(invalid(format!("--target {}: not a directory", target.display()))),
        Err(e) => return Err(invalid(format!("--target {}: {e}", target.display()))),
    }
    match (archive, generate) {
        (Some(p), None) => Ok(Some(inspect(p)?)),
        (None, Some("kernel-like")) if files > 0 => Ok(None),
        (None, Some("kernel-like")) => Err(invalid("--files 0: the generated archive needs files".into())),
        (None, Some(other)) => Err(invalid(format!(
            "--generate {other}: the shape storlab makes is kernel-like"
        ))),
        _ => Err(invalid(
            "give --archive FILE (.tar, .tar.gz, .tar.xz) or --generate kernel-like".into(),
        )),
    }
}

/// Reads the archive through once (untimed): counts what a copy makes, and refuses one whose
/// entries would land outside the directory it is extracted in, or of a kind storlab does not
/// extract (devices, fifos).
pub fn inspect(path: &Path) -> Result<Archive, MetaError> {
    let compression = Compression::of(path).ok_or_else(|| {
        MetaError::Invalid(format!(
            "--archive {}: expected a .tar, .tar.gz/.tgz or .tar.xz/.txz",
            path.display()
        ))
    })?;
    let compressed_bytes = std::fs::metadata(path).map_err(io_err(path))?.len();
    let mut a = tar::Archive::new(reader(path, compression)?);
    let mut out = Archive {
        path: path.to_path_buf(),
        compression,
        compressed_bytes,
        files: 0,
        dirs: 0,
        links: 0,
        bytes: 0,
    };
    let bad = |what: String| MetaError::Invalid(format!("--archive {}: {what}", path.display()));
    for e in a.entries().map_err(|e| bad(format!("not a tar archive: {e}")))? {
        let e = e.map_err(|e| bad(format!("cannot be read: {e}")))?;
        let name = e.path().map_err(|e| bad(format!("an entry's name: {e}")))?.into_owned();
        if name.is_absolute() || name.components().any(|c| c == Component::ParentDir) {
            return Err(bad(format!(
                "{} would land outside the directory it is extracted in",
                name.display()
            )));
        }
        match e.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                out.files += 1;
                out.bytes += e.size();
            }
            tar::EntryType::Directory => out.dirs += 1,
            tar::EntryType::Symlink | tar::EntryType::Link => out.links += 1,
            tar::EntryType::XGlobalHeader
            | tar::EntryType::XHeader
            | tar::EntryType::GNULongName
            | tar::EntryType::GNULongLink => {}
            other => {
                return Err(bad(format!(
                    "{}: entries of type {other:?} are not extracted",
                    name.display()
                )))
            }
        }
    }
    if out.entries() == 0 {
        return Err(bad("holds no entry".into()));
    }
    Ok(out)
}

/// A copy's counts as it goes, alone on its cache line.
#[repr(align(64))]
#[derive(Default)]
struct Progress {
    entries: AtomicU64,
    bytes: AtomicU64,
}

/// Extracts `copies` copies of `archive` at once into `root/c0`, `root/c1`, …, one thread
/// each behind a barrier; each entry's extraction (with `fsync`, its file's fsync) is timed
/// into the copy's histogram. The directories are left for the caller to remove.
pub fn extract(archive: &Archive, root: &Path, copies: u32, fsync: bool, stop: &AtomicBool) -> Outcome {
    storlab_engine::clock::init();
    let start = Barrier::new(copies as usize);
    let progress: Vec<Progress> = (0..copies).map(|_| Progress::default()).collect();
    let first_done = AtomicBool::new(false);
    let first = std::sync::Mutex::new((0u64, 0u64, 0u64));
    let outs: Vec<WorkerOut> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..copies)
            .map(|c| {
                let (start, progress, first_done, first) = (&start, &progress, &first_done, &first);
                s.spawn(move || {
                    let out = copy(
                        archive,
                        &root.join(format!("c{c}")),
                        fsync,
                        stop,
                        start,
                        &progress[c as usize],
                    );
                    if !first_done.swap(true, Ordering::AcqRel) {
                        let e = progress.iter().map(|p| p.entries.load(Ordering::Relaxed)).sum();
                        let b = progress.iter().map(|p| p.bytes.load(Ordering::Relaxed)).sum();
                        *first.lock().unwrap_or_else(|e| e.into_inner()) = (e, b, out.end_ns);
                    }
                    out
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("an extraction does not panic"))
            .collect()
    });
    let first = *first.lock().unwrap_or_else(|e| e.into_inner());
    merge(archive, root, copies, fsync, outs, first)
}

/// One copy, into `dir`.
fn copy(
    archive: &Archive,
    dir: &Path,
    fsync: bool,
    stop: &AtomicBool,
    start: &Barrier,
    progress: &Progress,
) -> WorkerOut {
    let mut out = WorkerOut::new(0);
    let cpu0 = thread_usage();
    start.wait();
    out.start_ns = now_ns();
    let result = (|| -> Result<(), String> {
        std::fs::create_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let r = reader(&archive.path, archive.compression).map_err(|e| e.to_string())?;
        let mut a = tar::Archive::new(r);
        a.set_preserve_permissions(true);
        a.set_preserve_mtime(true);
        for e in a.entries().map_err(|e| e.to_string())? {
            if stop.load(Ordering::Relaxed) {
                out.interrupted = true;
                return Ok(());
            }
            let t0 = now_ns();
            let mut e = e.map_err(|e| format!("reading the archive: {e}"))?;
            let name = e.path().map(|p| p.into_owned()).unwrap_or_default();
            let size = e.size();
            let kind = e.header().entry_type();
            match e.unpack_in(dir) {
                Ok(true) => {}
                Ok(false) => {
                    out.fail(format!(
                        "{}: would land outside {}; skipped",
                        name.display(),
                        dir.display()
                    ));
                    continue;
                }
                Err(err) => {
                    out.fail(format!("{}: {err}", dir.join(&name).display()));
                    continue;
                }
            }
            if fsync && kind.is_file() {
                let p = dir.join(&name);
                if let Err(err) = File::open(&p).and_then(|f| f.sync_all()) {
                    out.fail(format!("{}: fsync: {err}", p.display()));
                    continue;
                }
            }
            let _ = out.hist.record(now_ns().saturating_sub(t0).max(1));
            if matches!(
                kind,
                tar::EntryType::Regular
                    | tar::EntryType::Continuous
                    | tar::EntryType::Directory
                    | tar::EntryType::Symlink
                    | tar::EntryType::Link
            ) {
                out.entries += 1;
                out.ops += 1;
                if kind.is_file() {
                    out.bytes += size;
                }
            }
            progress.entries.store(out.entries, Ordering::Relaxed);
            progress.bytes.store(out.bytes, Ordering::Relaxed);
        }
        Ok(())
    })();
    if let Err(why) = result {
        out.fail(format!("{}: {why}", dir.display()));
    }
    out.end_ns = now_ns();
    out.cpu = cpu0.until(&thread_usage());
    out
}

fn merge(
    archive: &Archive,
    root: &Path,
    copies: u32,
    fsync: bool,
    outs: Vec<WorkerOut>,
    first: (u64, u64, u64),
) -> Outcome {
    let (result, entries, errors, first_errors) =
        combine(outs, false, first, |c| root.join(format!("c{c}")).display().to_string());
    Outcome {
        result,
        params: MetaParams {
            op: MetaOp::Untar,
            workers: copies,
            items_per_worker: archive.entries(),
            tree: TreeShape { depth: 0, branch: 1 },
            shared_dir: false,
            file_size: 0,
            sync: fsync,
            entries,
            errors,
            first_errors,
        },
    }
}

/// splitmix64: a small, fast generator whose sequence is fixed by its seed (the archive must
/// be the same on every machine and in every version).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The top directories of a kernel tree.
const TOP: [&str; 20] = [
    "arch",
    "block",
    "crypto",
    "Documentation",
    "drivers",
    "fs",
    "include",
    "init",
    "ipc",
    "kernel",
    "lib",
    "mm",
    "net",
    "samples",
    "scripts",
    "security",
    "sound",
    "tools",
    "usr",
    "virt",
];

/// Words a C source is made of, for file contents that compress as source does.
const WORDS: [&str; 32] = [
    "static",
    "int",
    "struct",
    "return",
    "if",
    "else",
    "unsigned",
    "long",
    "void",
    "const",
    "for",
    "while",
    "break",
    "case",
    "switch",
    "sizeof",
    "NULL",
    "err",
    "dev",
    "ret",
    "priv",
    "data",
    "len",
    "buf",
    "spin_lock",
    "mutex_unlock",
    "kfree",
    "kmalloc",
    "GFP_KERNEL",
    "EINVAL",
    "u32",
    "#include",
];

/// The shape [`generate`] gives an archive of `files` files: directories, and the file sizes'
/// median and cap (stated in docs/meta.md).
pub const KERNEL_LIKE_DIRS_PER_FILE: f64 = 0.06;
/// Median file size, bytes.
pub const KERNEL_LIKE_MEDIAN_BYTES: f64 = 4096.0;
/// Largest file, bytes.
pub const KERNEL_LIKE_MAX_BYTES: u64 = 1 << 20;
/// The deepest directory, levels below the top.
pub const KERNEL_LIKE_MAX_DEPTH: u64 = 6;

/// Writes a gzip'd tar at `path` shaped like a kernel source tree: `files` files (the seed's
/// archive had about 30,000) in about 6 % as many directories under 20 top directories, up to 6
/// levels deep; file sizes log-normal with a median of 4 KiB and a mean about three times that
/// (the seed's 368 MB over 30,000 files), at most 1 MiB; contents made of C words, which
/// compress about as source does. The same `files` gives the same archive, byte for byte.
pub fn generate(path: &Path, files: u64) -> Result<Archive, MetaError> {
    let mut rng = Rng(0x5354_4f52_4c41_4221 ^ files);
    let f = File::create(path).map_err(io_err(path))?;
    let gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(f), flate2::Compression::new(6));
    let mut b = tar::Builder::new(gz);
    b.mode(tar::HeaderMode::Deterministic);
    let top = PathBuf::from("linux-kernel-like");
    let mut dirs: Vec<PathBuf> = vec![top.clone()];
    dirs.extend(TOP.iter().map(|t| top.join(t)));
    let ndirs = ((files as f64 * KERNEL_LIKE_DIRS_PER_FILE) as usize).max(dirs.len());
    while dirs.len() < ndirs {
        let parent = dirs[1 + rng.below(dirs.len() as u64 - 1) as usize].clone();
        if parent.components().count() as u64 > KERNEL_LIKE_MAX_DEPTH {
            continue;
        }
        let name = format!(
            "{}{}",
            WORDS[rng.below(WORDS.len() as u64) as usize].trim_start_matches('#'),
            dirs.len()
        );
        dirs.push(parent.join(name));
    }
    let err = |e: std::io::Error| MetaError::Io {
        path: path.display().to_string(),
        source: e,
    };
    for d in &dirs {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        b.append_data(&mut h, d, std::io::empty()).map_err(err)?;
    }
    let sigma = (2.0f64 * 3.0f64.ln()).sqrt();
    let mut content = Vec::new();
    for i in 0..files {
        // Box–Muller: a standard normal from two uniforms.
        let (u1, u2) = (rng.unit().max(1e-12), rng.unit());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let size = ((KERNEL_LIKE_MEDIAN_BYTES * (sigma * z).exp()) as u64).clamp(1, KERNEL_LIKE_MAX_BYTES);
        content.clear();
        while (content.len() as u64) < size {
            let w = WORDS[rng.below(WORDS.len() as u64) as usize];
            content.extend_from_slice(w.as_bytes());
            content.push(if rng.below(8) == 0 { b'\n' } else { b' ' });
        }
        content.truncate(size as usize);
        let dir = &dirs[1 + rng.below(dirs.len() as u64 - 1) as usize];
        let ext = ["c", "h", "S", "txt", "rst", "c", "c", "h"][rng.below(8) as usize];
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(size);
        b.append_data(&mut h, dir.join(format!("file{i}.{ext}")), content.as_slice())
            .map_err(err)?;
    }
    let gz = b.into_inner().map_err(err)?;
    let mut w = gz.finish().map_err(err)?;
    w.flush().map_err(err)?;
    drop(w);
    inspect(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_levels_are_1_to_256() {
        assert_eq!(concurrency("1, 2,4,,16").unwrap(), vec![1, 2, 4, 16]);
        for bad in ["0", "257", "two"] {
            let e = concurrency(bad).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("--concurrency {bad}: a whole number of copies from 1 to 256")
            );
        }
        assert!(concurrency(" , ")
            .unwrap_err()
            .to_string()
            .starts_with("--concurrency: give"));
    }

    #[test]
    fn an_archive_is_given_or_generated_into_a_directory() {
        let d = tempfile::tempdir().unwrap();
        assert!(choose(d.path(), None, Some("kernel-like"), 10).unwrap().is_none());
        let err = |a: Option<&Path>, g: Option<&str>, n: u64| choose(d.path(), a, g, n).unwrap_err().to_string();
        assert_eq!(
            err(None, Some("kernel-like"), 0),
            "--files 0: the generated archive needs files"
        );
        assert_eq!(
            err(None, Some("tiny"), 10),
            "--generate tiny: the shape storlab makes is kernel-like"
        );
        assert!(err(None, None, 10).starts_with("give --archive FILE"));
        let f = d.path().join("f");
        std::fs::write(&f, b"").unwrap();
        let e = choose(&f, None, Some("kernel-like"), 10).unwrap_err().to_string();
        assert_eq!(e, format!("--target {}: not a directory", f.display()));
    }
}
