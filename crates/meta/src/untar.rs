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
use storlab_engine::thread_cpu;
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
    let cpu0 = thread_cpu();
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
    let cpu1 = thread_cpu();
    out.cpu = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
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
