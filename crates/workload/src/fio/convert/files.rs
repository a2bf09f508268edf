//! Where a job runs and how much: its file or directory, its workers (numjobs), a worker's
//! several files (nrfiles, filesize, file_service_type), the size and the bytes per pass, the
//! strided zones, and where each worker's region starts.

use std::path::{Path, PathBuf};

use storlab_model::plan::{BlockSizes, PhaseKind};
use storlab_model::settings::{FileService, FileSizes, Share, Strided};

use super::super::value::{self, SizeValue};
use super::{set, Conversion, Opts};
use crate::WorkloadError;

/// The targets, the workers, a worker's files, the size and the bytes per pass.
pub(crate) fn files(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let nrfiles = j.int("nrfiles")?.unwrap_or(1);
    if nrfiles == 0 {
        return Err(j.refuse("nrfiles", "0 files: expected 1 or more"));
    }
    if nrfiles > 1 && j.val("filename").is_some_and(|f| file_names(f).len() as u64 != nrfiles) {
        return Err(j.refuse(
            "nrfiles",
            format!("{nrfiles} files with one filename: name them with filename=a:b:…, or give a directory and let storlab name them"),
        ));
    }
    cx.threads = j.int("numjobs")?.unwrap_or(1);
    if cx.threads == 0 {
        return Err(j.refuse("numjobs", "0 jobs: expected 1 or more"));
    }
    cx.targets = targets(j, cx)?;
    cx.named_file = j.given("filename") || j.given("opendir");
    let file_sizes = file_sizes(j, nrfiles)?;
    if nrfiles > 1 && !cx.all_targets {
        set!(
            cx,
            "nrfiles",
            nrfiles = u32::try_from(nrfiles).map_err(|_| j.refuse("nrfiles", "too many files"))?
        )?;
    }
    if let Some((low, high)) = file_sizes {
        set!(cx, "filesize", filesize = FileSizes { low, high })?;
    }
    if !cx.all_targets {
        file_service(j, cx, nrfiles)?;
    }
    sizes(j, cx, file_sizes.is_some())
}

/// filename (in directory), opendir or directory: the job's targets. Several names
/// (`filename=a:b`, fio's `\\:` for a colon in a name) and the files below an opendir are each
/// worker's several files, shared by the job's clones as fio's are.
fn targets(j: Opts, cx: &mut Conversion) -> Result<Vec<PathBuf>, WorkloadError> {
    let dir = j.val("directory").map(PathBuf::from);
    let mut named: Vec<PathBuf> = match j.val("filename") {
        Some(f) => file_names(f)
            .into_iter()
            .map(|n| match &dir {
                Some(d) => d.join(n),
                None => PathBuf::from(n),
            })
            .collect(),
        None => Vec::new(),
    };
    if let Some(d) = j.val("opendir") {
        named.extend(opendir_files(j, cx, Path::new(d))?);
    }
    if named.is_empty() {
        return Ok(vec![dir.unwrap_or_else(|| PathBuf::from("."))]);
    }
    if cx.threads > 1 {
        cx.note(format!(
            "its {} jobs share {}: each covers the whole of each file, as fio's clones do",
            cx.threads,
            if named.len() == 1 {
                format!("filename={}", named[0].display())
            } else {
                format!("its {} files", named.len())
            }
        ));
        set!(cx, "numjobs", share = Share::Whole)?;
    }
    cx.all_targets = named.len() > 1;
    if cx.all_targets {
        file_service(j, cx, named.len() as u64)?;
    }
    Ok(named)
}

/// fio's filename list: names split at ':', where `\\:` is a colon within a name.
fn file_names(v: &str) -> Vec<String> {
    let mut names = vec![String::new()];
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                names.last_mut().expect("a name").push(':');
            }
            ':' => names.push(String::new()),
            c => names.last_mut().expect("a name").push(c),
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// fio's opendir: every regular file below the directory, in the order readdir(3) gives them
/// (fio's recurse_dir), an empty one left out (fio ignores a file it has nothing to do in).
fn opendir_files(j: Opts, cx: &mut Conversion, dir: &Path) -> Result<Vec<PathBuf>, WorkloadError> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, u64)>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let t = e.file_type()?;
            if t.is_file() {
                out.push((e.path(), e.metadata()?.len()));
            } else if t.is_dir() {
                walk(&e.path(), out)?;
            }
        }
        Ok(())
    }
    let mut found = Vec::new();
    walk(dir, &mut found).map_err(|e| j.refuse("opendir", e.to_string()))?;
    let empty = found.iter().filter(|(_, len)| *len == 0).count();
    if empty > 0 {
        cx.note(format!(
            "opendir={}: {empty} empty files left out, as fio ignores them",
            dir.display()
        ));
    }
    let files: Vec<PathBuf> = found.into_iter().filter(|(_, len)| *len > 0).map(|(p, _)| p).collect();
    if files.is_empty() {
        return Err(j.refuse(
            "opendir",
            "no file with data below it: opendir works on the files already there; give a directory that holds some, or directory= to let storlab make them",
        ));
    }
    cx.note(format!("opendir added {} files", files.len()));
    Ok(files)
}

/// fio's filesize: each file's size, or a range each file's is drawn from (in a directory,
/// where storlab makes the files); `size` then bounds what a pass moves. None where filesize
/// is one file's size (see `sizes`).
fn file_sizes(j: Opts, nrfiles: u64) -> Result<Option<(u64, u64)>, WorkloadError> {
    let v = match j.val("filesize") {
        Some(v) if v.contains('-') || (nrfiles > 1 && !j.given("filename")) => v,
        _ => return Ok(None),
    };
    let read = |t: &str| value::bytes(t, j.kb()).map_err(|e| j.refuse("filesize", e));
    let (lo, hi) = match v.split_once('-') {
        Some((a, b)) => (read(a)?, read(b)?),
        None => {
            let b = read(v)?;
            (b, b)
        }
    };
    if j.given("filename") {
        return Err(j.refuse(
            "filesize",
            "a range of file sizes for a named file: storlab draws the sizes of files it makes in a directory; give the file's size",
        ));
    }
    if lo == 0 || hi < lo {
        return Err(j.refuse(
            "filesize",
            format!("{v}: expected a size above 0, or a range LO-HI with 0 < LO ≤ HI"),
        ));
    }
    Ok(Some((lo, hi)))
}

/// fio's file_service_type, for a worker with several files.
fn file_service(j: Opts, cx: &mut Conversion, nrfiles: u64) -> Result<(), WorkloadError> {
    let Some(v) = j.val("file_service_type") else {
        return Ok(());
    };
    let (how, n) = v.split_once(':').unwrap_or((v, ""));
    let count = || -> Result<u32, WorkloadError> {
        if n.is_empty() {
            return Ok(1);
        }
        n.trim().parse::<u32>().ok().filter(|c| *c > 0).ok_or_else(|| {
            j.refuse(
                "file_service_type",
                format!("'{n}': the I/Os before switching are a whole number above 0"),
            )
        })
    };
    let service = match how {
        "roundrobin" => FileService::RoundRobin(count()?),
        "random" => FileService::Random(count()?),
        "sequential" => FileService::Sequential,
        _ => {
            return Err(j.refuse(
                "file_service_type",
                format!("{how}: files chosen by a skewed distribution (zipf, pareto, normal, gauss); storlab serves them roundrobin, sequential or random"),
            ))
        }
    };
    if nrfiles > 1 {
        set!(cx, "file_service_type", file_service = service)?;
    }
    Ok(())
}

/// The length of the job's existing file or device, for a size given as a percentage.
fn target_len(cx: &Conversion) -> Option<u64> {
    let path: &Path = cx.targets.first().filter(|_| cx.named_file)?;
    std::fs::metadata(path).ok().map(|m| m.len()).filter(|l| *l > 0)
}

/// size and io_size: the bytes per worker's file, and per pass. With filesize one file's size,
/// a smaller size is what a pass moves (fio's size bounds the job).
fn sizes(j: Opts, cx: &mut Conversion, ranged: bool) -> Result<(), WorkloadError> {
    let size_of = |k: &str, cx: &Conversion| -> Result<Option<u64>, WorkloadError> {
        let Some(v) = j.val(k) else { return Ok(None) };
        match value::size(v, j.kb()).map_err(|e| j.refuse(k, e))? {
            SizeValue::Bytes(b) => Ok(Some(b)),
            SizeValue::Percent(p) => match target_len(cx) {
                Some(len) => Ok(Some((len as f64 * p / 100.0) as u64)),
                None => Err(j.refuse(k, "a percentage of a file or device that is not there: give filename= an existing file or device, or a size in bytes")),
            },
        }
    };
    cx.size_given = j.given("size");
    let io_size = match j.val("io_size") {
        Some(b) => Some(value::bytes(b, j.kb()).map_err(|e| j.refuse("io_size", e))?).filter(|b| *b > 0),
        None => None,
    };
    let (size, by) = if ranged {
        (size_of("size", cx)?, "size")
    } else {
        match (size_of("size", cx)?, size_of("filesize", cx)?) {
            // One file of filesize, of which a pass moves size (unless io_size says).
            (Some(a), Some(b)) if a < b => {
                if io_size.is_none() {
                    set!(cx, "size", io_size = a)?;
                }
                (Some(b), "filesize")
            }
            (Some(_), Some(b)) => (Some(b), "filesize"),
            (Some(a), None) => (Some(a), "size"),
            (None, b) => (b, "filesize"),
        }
    };
    if let Some(b) = size {
        set!(cx, by, size = b)?;
        if io_size.is_none() && by == "size" {
            pass_ends_on_a_block(cx, b)?;
        }
    }
    if let Some(b) = io_size {
        set!(cx, "io_size", io_size = b)?;
    }
    Ok(())
}

/// fio ends a sequential pass at the last whole block: a size that is not a multiple of bs
/// leaves its tail untouched (etcd's disk check, size=22m in 2300-byte writes: 10,029 writes,
/// the file 22 MiB long). The pass's bytes say so (io_size); the file keeps its size.
fn pass_ends_on_a_block(cx: &mut Conversion, size: u64) -> Result<(), WorkloadError> {
    let sequential = matches!(
        cx.kind,
        PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread | PhaseKind::Backread
    );
    match cx.settings().bs {
        Some(BlockSizes::Fixed(bs)) if sequential && !size.is_multiple_of(bs) && size >= bs => {
            set!(cx, "size", io_size = size / bs * bs)
        }
        _ => Ok(()),
    }
}

/// fio's zonemode=strided: zonesize bytes in each zone of zonerange, zoneskip between them.
pub(crate) fn zones(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    match j.val("zonemode") {
        None | Some("none") => {
            for k in ["zonesize", "zoneskip", "zonerange"] {
                if j.given(k) && j.given("zonemode") {
                    cx.note(format!("{k}: zonemode=none, so fio ignores it too"));
                }
            }
            Ok(())
        }
        Some("strided") => {
            let get = |k: &str| -> Result<u64, WorkloadError> {
                match j.val(k) {
                    Some(v) => value::bytes(v, j.kb()).map_err(|e| j.refuse(k, e)),
                    None => Ok(0),
                }
            };
            let (size, skip, range) = (get("zonesize")?, get("zoneskip")?, get("zonerange")?);
            if size == 0 {
                return Err(j.refuse(
                    "zonesize",
                    "zonemode=strided without a zonesize: expected the bytes to move in each zone",
                ));
            }
            if !matches!(cx.kind, PhaseKind::Read | PhaseKind::Write) {
                return Err(j.refuse(
                    "zonemode",
                    "random I/O within strided zones: storlab's strided zones are read or written sequentially",
                ));
            }
            let range = if range == 0 { size } else { range };
            set!(cx, "zonemode", strided = Strided { size, range, skip })
        }
        Some("zbd") => emulated_zones(j, cx),
        Some(m) => Err(j.refuse("zonemode", format!("'{m}': fio's zonemode is none, strided or zbd"))),
    }
}

/// fio's zonemode=zbd, which on a file or a device without zones emulates zones of zonesize
/// (zonecapacity of each written): zonesize is required, as fio requires it there; zoneskip
/// (fio's skip between sequential zones) and a zonerange other than the zone are refused.
fn emulated_zones(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let size = match j.val("zonesize") {
        Some(v) => value::bytes(v, j.kb()).map_err(|e| j.refuse("zonesize", e))?,
        None => 0,
    };
    if size == 0 {
        return Err(j.refuse(
            "zonemode",
            "zonemode=zbd without a zonesize: the zone size is mandatory for a regular file or a device without zones, as fio says; give zonesize",
        ));
    }
    for k in ["zoneskip", "zonerange"] {
        let given = match j.val(k) {
            Some(v) => value::bytes(v, j.kb()).map_err(|e| j.refuse(k, e))?,
            None => 0,
        };
        if given != 0 && !(k == "zonerange" && given == size) {
            return Err(j.refuse(k, "with zonemode=zbd: storlab's emulated zones are read and written where the write pointers lead, with no zones skipped; leave it out"));
        }
    }
    let capacity = match j.val("zonecapacity") {
        Some(v) => value::bytes(v, j.kb()).map_err(|e| j.refuse("zonecapacity", e))?,
        None => 0,
    };
    let zbd = storlab_model::settings::Zbd {
        size,
        capacity: if capacity == 0 { size } else { capacity },
    };
    if zbd.size < 512 || zbd.capacity > zbd.size {
        return Err(j.refuse(
            if zbd.size < 512 { "zonesize" } else { "zonecapacity" },
            "a zone of at least 512 bytes, its capacity at most its size, as fio requires",
        ));
    }
    set!(cx, "zonemode", zbd = zbd)?;
    if j.on("read_beyond_wp")? {
        set!(cx, "read_beyond_wp", read_beyond_wp = true)?;
    }
    Ok(())
}

/// Where each worker's region starts: offset, and offset_increment for each further worker.
pub(crate) fn offsets(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    for k in ["offset", "offset_increment"] {
        let Some(v) = j.val(k) else { continue };
        let b = match value::size(v, j.kb()).map_err(|e| j.refuse(k, e))? {
            SizeValue::Bytes(b) => b,
            SizeValue::Percent(p) => match target_len(cx) {
                Some(len) => (len as f64 * p / 100.0) as u64,
                None => return Err(j.refuse(k, "a percentage of a file or device that is not there: give filename= an existing file or device, or an offset in bytes")),
            },
        };
        if b > 0 {
            let s = if k == "offset" {
                crate::Settings {
                    offset: Some(b),
                    ..Default::default()
                }
            } else {
                crate::Settings {
                    offset_increment: Some(b),
                    ..Default::default()
                }
            };
            cx.set(k, s)?;
        }
    }
    Ok(())
}
