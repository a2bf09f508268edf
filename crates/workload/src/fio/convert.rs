//! One fio job (its options resolved: globals, then its own) as storlab phase settings, each
//! honoured option given fio's effect, each value storlab cannot give refused with why.

use std::collections::BTreeMap;
use std::path::PathBuf;

use storlab_model::plan::PhaseKind;

use super::bad;
use super::text::{At, Opt};
use super::value::{self, KbBase, SizeValue, TimeBase};
use crate::WorkloadError;

/// One fio job resolved: its options by fio's canonical name (globals before it, then its
/// own), each with its line.
pub struct Resolved {
    /// The section's name.
    pub name: String,
    /// Where the section starts.
    pub at: At,
    /// Its options.
    pub opts: BTreeMap<String, Opt>,
    /// How it counts a `k`.
    pub kb: KbBase,
}

impl Resolved {
    pub fn get(&self, k: &str) -> Option<&Opt> {
        self.opts.get(k)
    }
    pub fn val(&self, k: &str) -> Option<&str> {
        self.get(k).and_then(|o| o.value.as_deref())
    }
    /// Where option `k` was given (the section when it was not).
    fn at(&self, k: &str) -> At {
        self.get(k).map(|o| o.at.clone()).unwrap_or_else(|| self.at.clone())
    }
    /// A switch or boolean: bare is 1.
    pub fn on(&self, k: &str) -> Result<bool, WorkloadError> {
        match self.get(k) {
            None => Ok(false),
            Some(o) => match o.value.as_deref() {
                None => Ok(true),
                Some(v) => value::switch(v).map_err(|e| bad(&o.at, format!("{k}={v}: {e}"))),
            },
        }
    }
    /// A boolean with fio's default when not given.
    fn on_or(&self, k: &str, default: bool) -> Result<bool, WorkloadError> {
        if self.get(k).is_some() {
            self.on(k)
        } else {
            Ok(default)
        }
    }
    fn bytes(&self, k: &str, text: &str) -> Result<u64, WorkloadError> {
        value::bytes(text, self.kb).map_err(|e| bad(&self.at(k), format!("{k}={text}: {e}")))
    }
    fn int(&self, k: &str) -> Result<Option<u64>, WorkloadError> {
        self.val(k).map(|v| self.bytes(k, v)).transpose()
    }
    fn time_us(&self, k: &str, base: TimeBase) -> Result<Option<u64>, WorkloadError> {
        self.val(k)
            .map(|v| value::time_us(v, base).map_err(|e| bad(&self.at(k), format!("{k}={v}: {e}"))))
            .transpose()
    }
    /// Refuses option `k` with `why`.
    fn refuse(&self, k: &str, why: String) -> WorkloadError {
        bad(&self.at(k), format!("{k}={}: {why}", self.val(k).unwrap_or("1")))
    }
}

/// What one job asks of storlab: its phase kinds (a verified write adds the read that
/// verifies), storlab settings as text, where it runs, how many workers.
pub struct Converted {
    pub kinds: Vec<PhaseKind>,
    pub settings: Vec<(String, String)>,
    pub targets: Vec<PathBuf>,
    pub threads: u64,
    /// fio's log files the job asks for: ("bw" or "iops", the file name's prefix).
    pub logs: Vec<(String, String)>,
}

/// A time in microseconds as storlab text.
fn duration_text(us: u64) -> String {
    if us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us.is_multiple_of(1000) {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

/// The access pattern of `rw` (with `percentage_random`, `rw_sequencer`), and the hole after
/// each sequential I/O (`rw=write:N`; 0 without).
fn pattern(
    j: &Resolved,
    bs_for: impl Fn(PhaseKind) -> Option<u64>,
    notes: &mut Vec<String>,
) -> Result<(PhaseKind, u64), WorkloadError> {
    let rw = j.val("rw").unwrap_or("read");
    let (p, skip) = match rw.split_once(':') {
        Some((p, k)) => (p.trim(), Some(k.trim())),
        None => (rw.trim(), None),
    };
    let kind = match p {
        "read" => PhaseKind::Read,
        "write" => PhaseKind::Write,
        "randread" => PhaseKind::Randread,
        "randwrite" => PhaseKind::Randwrite,
        "randrw" | "randreadwrite" => PhaseKind::Randrw,
        "rw" | "readwrite" => PhaseKind::Rw,
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(j.refuse("rw", "trims: storlab's engine issues reads and writes only".into()))
        }
        _ => {
            return Err(j.refuse(
                "rw",
                "fio's rw is read, write, randread, randwrite, randrw, rw, trim, randtrim or trimwrite".into(),
            ))
        }
    };
    let mut hole = 0;
    let kind = match skip {
        None | Some("") => kind,
        Some(k) if kind == PhaseKind::Read && k.starts_with('-') => {
            let bs = bs_for(PhaseKind::Read);
            if bs.is_some_and(|b| value::bytes(&k[1..], j.kb).ok() == Some(2 * b)) {
                notes.push(format!(
                    "job '{}': rw={rw} reads backwards block by block: storlab's backread",
                    j.name
                ));
                PhaseKind::Backread
            } else {
                return Err(j.refuse("rw", "a backward read with holes: storlab reads backwards block by block (read:-N with N twice bs)".into()));
            }
        }
        Some(k) if matches!(kind, PhaseKind::Read | PhaseKind::Write) && !k.starts_with('-') => {
            hole = value::bytes(k, j.kb).map_err(|e| j.refuse("rw", e))?;
            if hole > 0 {
                notes.push(format!(
                    "job '{}': rw={rw} leaves {} out after each I/O: storlab's hole",
                    j.name,
                    storlab_units::Size(hole)
                ));
            }
            kind
        }
        Some(_) => {
            return Err(j.refuse(
                "rw",
                "several I/Os per random offset, a mixed job with holes, or a backward write: storlab's random I/Os are each at a new offset and its holes are in sequential reads and writes".into(),
            ))
        }
    };
    if let Some(p) = j.int("percentage_random")? {
        let random = matches!(kind, PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw);
        if !((random && p == 100) || (!random && p == 0)) {
            return Err(j.refuse(
                "percentage_random",
                "a mix of sequential and random offsets: storlab's phase is one or the other".into(),
            ));
        }
    }
    if let Some(s) = j.val("rw_sequencer") {
        if s != "sequential" {
            return Err(j.refuse(
                "rw_sequencer",
                "repeating offsets: storlab gives each I/O a new one".into(),
            ));
        }
    }
    Ok((kind, hole))
}

/// The block sizes of a job as storlab text, for a phase of `kind`: fio's `bs`, `bsrange` and
/// `bssplit` each take `read,write,trim` parts; a phase that only reads (or only writes) takes
/// its own part.
fn block_sizes(j: &Resolved, kind: PhaseKind) -> Result<(String, Option<u64>), WorkloadError> {
    let part = |text: &str, key: &str| -> Result<Option<String>, WorkloadError> {
        let t = value::triple(text);
        let (r, w) = (t[0].map(str::to_string), t[1].map(str::to_string));
        Ok(match (kind.reads(), kind.writes()) {
            (true, false) => r,
            (false, true) => w,
            _ => {
                if r != w && r.is_some() && w.is_some() {
                    return Err(j.refuse(key, "different sizes for reads and writes in one mixed job: storlab's phase has one block size (or mix) for both".into()));
                }
                r.or(w)
            }
        })
    };
    if let Some(split) = j.val("bssplit") {
        if let Some(t) = part(split, "bssplit")? {
            let mut parts = Vec::new();
            let mut given = 0u64;
            let mut blank = 0;
            for p in t.split(':') {
                let (size, pct) = p.split_once('/').unwrap_or((p, ""));
                let b = j.bytes("bssplit", size)?;
                let pct = if pct.is_empty() {
                    blank += 1;
                    None
                } else {
                    let v: u64 = pct
                        .parse()
                        .map_err(|_| j.refuse("bssplit", format!("'{pct}' is not a percentage")))?;
                    given += v;
                    Some(v)
                };
                parts.push((b, pct));
            }
            // fio spreads what the given percentages leave over the blank ones.
            let rest = 100u64.saturating_sub(given);
            let mix: Vec<String> = parts
                .iter()
                .map(|(b, p)| format!("{}:{}", storlab_units::Size(*b), p.unwrap_or(rest / blank.max(1))))
                .collect();
            return Ok((mix.join(","), None));
        }
    }
    if let Some(range) = j.val("bsrange") {
        if let Some(t) = part(range, "bsrange")? {
            let (lo, hi) = value::size_range(&t, j.kb).map_err(|e| j.refuse("bsrange", e))?;
            if lo == 0 {
                return Err(j.refuse("bsrange", "a block size of 0".into()));
            }
            if lo == hi {
                return Ok((storlab_units::Size(lo).to_string(), Some(lo)));
            }
            // fio draws a length uniformly from [lo, hi] and aligns it down to lo (a power of
            // 2): every multiple of lo up to hi, equally likely but for hi itself.
            let steps = hi / lo;
            if steps > 1024 {
                return Err(j.refuse("bsrange", format!("{steps} block sizes between the bounds: storlab's mix takes at most 1024 (raise the lower bound)")));
            }
            let mix: Vec<String> = (1..=steps)
                .map(|k| format!("{}:{}", storlab_units::Size(k * lo), if k == steps { 1 } else { lo }))
                .collect();
            let mix = if steps == 1 {
                vec![format!("{}:1", storlab_units::Size(lo))]
            } else {
                mix
            };
            return Ok((mix.join(","), None));
        }
    }
    let b = match j.val("bs") {
        Some(t) => match part(t, "bs")? {
            Some(x) => j.bytes("bs", &x)?,
            None => 4096,
        },
        None => 4096,
    };
    if b == 0 {
        return Err(j.refuse("bs", "a block size of 0".into()));
    }
    Ok((storlab_units::Size(b).to_string(), Some(b)))
}

/// The engine of `ioengine`, noting where storlab's differs.
fn engine(j: &Resolved, direct: bool, notes: &mut Vec<String>) -> Result<&'static str, WorkloadError> {
    let e = j.val("ioengine").unwrap_or("psync");
    let (name, note) = match e {
        "psync" => ("psync", None),
        "sync" => ("psync", Some("ioengine=sync (read/write after lseek) runs as psync (pread/pwrite)")),
        "pvsync" => ("pvsync", None),
        "vsync" => ("pvsync", Some("ioengine=vsync (readv/writev after lseek) runs as pvsync (preadv/pwritev)")),
        "pvsync2" => ("pvsync", Some("ioengine=pvsync2 (preadv2/pwritev2, no flags given) runs as pvsync (preadv/pwritev)")),
        "io_uring" => ("io_uring", None),
        "mmap" => ("mmap", None),
        "null" => ("null", None),
        // Linux AIO is asynchronous only with O_DIRECT: buffered, io_submit does each I/O
        // before it returns, which psync is (and io_uring is not: it hands buffered writes,
        // and reads the page cache cannot answer at once, to its worker threads).
        "libaio" if !direct => ("psync", Some("ioengine=libaio without direct=1 runs as psync: Linux AIO does buffered I/O synchronously, in the submitting call")),
        "libaio" => ("io_uring", Some("ioengine=libaio runs as io_uring (the kernel's newer asynchronous interface; storlab has no libaio)")),
        "posixaio" if !direct => ("psync", Some("ioengine=posixaio without direct=1 runs as psync (glibc's aio does each I/O with a synchronous call in a thread of its own)")),
        "posixaio" => ("io_uring", Some("ioengine=posixaio (glibc's aio, threads behind the scenes) runs as io_uring")),
        other => {
            return Err(j.refuse(
                "ioengine",
                format!("'{other}' is not a local engine storlab has: it runs psync, sync, vsync, pvsync, pvsync2, io_uring, libaio and posixaio (as io_uring), mmap and null"),
            ))
        }
    };
    if let Some(n) = note {
        notes.push(format!("job '{}': {n}", j.name));
    }
    Ok(name)
}

pub fn convert(j: &Resolved, notes: &mut Vec<String>) -> Result<Converted, WorkloadError> {
    let mut s: Vec<(String, String)> = Vec::new();
    let name = j.name.clone();
    let mut note = |n: String| notes.push(format!("job '{name}': {n}"));
    // The pattern first: a phase that only reads takes the reads' block size.
    let mut pnotes = Vec::new();
    let (kind, hole) = pattern(j, |k| block_sizes(j, k).ok().and_then(|b| b.1), &mut pnotes)?;
    for n in pnotes {
        note(n.split_once(": ").map_or(n.clone(), |x| x.1.to_string()));
    }
    let (bs, fixed) = block_sizes(j, kind)?;
    s.push(("bs".into(), bs));
    if let Some(ba) = j.int("ba")? {
        if fixed != Some(ba) {
            s.push(("align".into(), storlab_units::Size(ba).to_string()));
        }
    }
    match (j.val("rwmixread"), j.val("rwmixwrite")) {
        (Some(m), _) => s.push(("rwmix".into(), j.bytes("rwmixread", m)?.to_string())),
        (None, Some(m)) => s.push((
            "rwmix".into(),
            100u64.saturating_sub(j.bytes("rwmixwrite", m)?).to_string(),
        )),
        _ => {}
    }
    // Random offsets: fio's random map (its default) visits every block once per pass;
    // norandommap draws each offset anew.
    let random = matches!(kind, PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw);
    if random {
        let map = !j.on("norandommap")?;
        match j.val("random_generator") {
            None | Some("tausworthe") | Some("tausworthe64") => {}
            Some("lfsr") => {
                if !map {
                    note("random_generator=lfsr visits each block once per pass whatever norandommap says: storlab's random map does the same".into());
                }
            }
            Some(g) => {
                return Err(j.refuse(
                    "random_generator",
                    format!("'{g}': fio's generators are tausworthe, lfsr and tausworthe64"),
                ))
            }
        }
        let map = map || j.val("random_generator") == Some("lfsr");
        s.push(("random_map".into(), map.to_string()));
        match j.val("random_distribution") {
            None | Some("random") => {}
            Some(d) if d.starts_with("zoned:") => {
                // fio draws a non-uniform distribution without its random map.
                if let Some(m) = s.iter_mut().find(|(k, _)| k == "random_map") {
                    m.1 = "false".into();
                }
                s.push(("distribution".into(), d.to_string()));
            }
            Some(_) => {
                return Err(j.refuse("random_distribution", "offsets drawn from a skewed distribution (zipf, pareto, normal, gauss, zoned_abs): storlab draws uniform or zoned ones".into()))
            }
        }
    }
    if let Some(seed) = j.int("randseed")? {
        s.push(("seed".into(), seed.to_string()));
    }
    // Size and files.
    let nrfiles = j.int("nrfiles")?.unwrap_or(1);
    if nrfiles == 0 {
        return Err(j.refuse("nrfiles", "0 files: expected 1 or more".into()));
    }
    if nrfiles > 1 && j.val("filename").is_some() {
        return Err(j.refuse(
            "nrfiles",
            format!("{nrfiles} files with one filename: name them with filename=a:b:…, or give a directory and let storlab name them"),
        ));
    }
    let target_len = |path: &PathBuf| std::fs::metadata(path).ok().map(|m| m.len()).filter(|l| *l > 0);
    let dir = j.val("directory").map(PathBuf::from);
    let threads: u64 = j.int("numjobs")?.unwrap_or(1);
    if threads == 0 {
        return Err(j.refuse("numjobs", "0 jobs: expected 1 or more".into()));
    }
    let targets = match j.val("filename") {
        Some(f) if f.contains(':') => {
            return Err(j.refuse(
                "filename",
                "several files per job: storlab has one file (or device) per worker".into(),
            ))
        }
        Some(f) => {
            if threads > 1 {
                note(format!(
                    "its {threads} jobs share filename={f}: each covers the whole region, as fio's clones do"
                ));
                s.push(("share".into(), "whole".into()));
            }
            vec![match &dir {
                Some(d) => d.join(f),
                None => PathBuf::from(f),
            }]
        }
        None => vec![dir.clone().unwrap_or_else(|| PathBuf::from("."))],
    };
    // fio's filesize: each file's size, or a range each file's is drawn from (in a
    // directory, where storlab makes the files); `size` then bounds what a pass moves.
    let file_sizes = match j.val("filesize") {
        Some(v) if v.contains('-') || (nrfiles > 1 && j.val("filename").is_none()) => {
            let (lo, hi) = match v.split_once('-') {
                Some((a, b)) => (
                    value::bytes(a, j.kb).map_err(|e| j.refuse("filesize", e))?,
                    value::bytes(b, j.kb).map_err(|e| j.refuse("filesize", e))?,
                ),
                None => {
                    let b = value::bytes(v, j.kb).map_err(|e| j.refuse("filesize", e))?;
                    (b, b)
                }
            };
            if j.val("filename").is_some() {
                return Err(j.refuse(
                    "filesize",
                    "a range of file sizes for a named file: storlab draws the sizes of files it makes in a directory; give the file's size".into(),
                ));
            }
            if lo == 0 || hi < lo {
                return Err(j.refuse(
                    "filesize",
                    format!("{v}: expected a size above 0, or a range LO-HI with 0 < LO ≤ HI"),
                ));
            }
            Some((lo, hi))
        }
        _ => None,
    };
    if nrfiles > 1 {
        s.push(("nrfiles".into(), nrfiles.to_string()));
    }
    if let Some((lo, hi)) = file_sizes {
        s.push((
            "filesize".into(),
            if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") },
        ));
    }
    match j.val("file_service_type") {
        None => {}
        Some(v) => {
            let (how, n) = v.split_once(':').unwrap_or((v, ""));
            match how {
                "roundrobin" | "random" | "sequential" => {
                    if nrfiles > 1 {
                        s.push(("file_service".into(), if n.is_empty() || how == "sequential" { how.to_string() } else { format!("{how}:{n}") }));
                    }
                }
                _ => {
                    return Err(j.refuse(
                        "file_service_type",
                        format!("{how}: files chosen by a skewed distribution (zipf, pareto, normal, gauss); storlab serves them roundrobin, sequential or random"),
                    ))
                }
            }
        }
    }
    let size_of = |k: &str| -> Result<Option<u64>, WorkloadError> {
        let Some(v) = j.val(k) else { return Ok(None) };
        match value::size(v, j.kb).map_err(|e| j.refuse(k, e))? {
            SizeValue::Bytes(b) => Ok(Some(b)),
            SizeValue::Percent(p) => match targets.first().filter(|_| j.val("filename").is_some()).and_then(target_len) {
                Some(len) => Ok(Some((len as f64 * p / 100.0) as u64)),
                None => Err(j.refuse(k, "a percentage of a file or device that is not there: give filename= an existing file or device, or a size in bytes".into())),
            },
        }
    };
    let size = if file_sizes.is_some() {
        size_of("size")?
    } else {
        match (size_of("size")?, size_of("filesize")?) {
            // One file of filesize, of which a pass moves size (fio's size bounds the job).
            (Some(a), Some(b)) if a < b => {
                s.push(("io_size".into(), a.to_string()));
                Some(b)
            }
            (Some(_), Some(b)) => Some(b),
            (Some(a), None) => Some(a),
            (None, b) => b,
        }
    };
    if let Some(b) = size {
        s.push(("size".into(), storlab_units::Size(b).to_string()));
    }
    // fio's rw=write:N: the hole after each I/O.
    if hole > 0 {
        s.push(("hole".into(), storlab_units::Size(hole).to_string()));
    }
    if let Some(b) = j.val("io_size") {
        let b = value::bytes(b, j.kb).map_err(|e| j.refuse("io_size", e))?;
        if b > 0 {
            s.push(("io_size".into(), storlab_units::Size(b).to_string()));
        }
    }
    match j.val("zonemode") {
        None | Some("none") => {
            for k in ["zonesize", "zoneskip", "zonerange"] {
                if j.get(k).is_some() && j.val("zonemode").is_some() {
                    note(format!("{k}: zonemode=none, so fio ignores it too"));
                }
            }
        }
        Some("strided") => {
            let get = |k: &str| -> Result<u64, WorkloadError> {
                match j.val(k) {
                    Some(v) => value::bytes(v, j.kb).map_err(|e| j.refuse(k, e)),
                    None => Ok(0),
                }
            };
            let (zs, skip, range) = (get("zonesize")?, get("zoneskip")?, get("zonerange")?);
            if zs == 0 {
                return Err(j.refuse(
                    "zonesize",
                    "zonemode=strided without a zonesize: expected the bytes to move in each zone".into(),
                ));
            }
            if !matches!(kind, PhaseKind::Read | PhaseKind::Write) {
                return Err(j.refuse(
                    "zonemode",
                    "random I/O within strided zones: storlab's strided zones are read or written sequentially".into(),
                ));
            }
            let range = if range == 0 { zs } else { range };
            s.push((
                "strided".into(),
                format!(
                    "{},{},{}",
                    storlab_units::Size(zs),
                    storlab_units::Size(skip),
                    storlab_units::Size(range)
                ),
            ));
        }
        Some("zbd") => return Err(j.refuse("zonemode", super::options::ZONES.into())),
        Some(m) => return Err(j.refuse("zonemode", format!("'{m}': fio's zonemode is none, strided or zbd"))),
    }
    for k in ["offset", "offset_increment"] {
        let Some(v) = j.val(k) else { continue };
        let b = match value::size(v, j.kb).map_err(|e| j.refuse(k, e))? {
            SizeValue::Bytes(b) => b,
            SizeValue::Percent(p) => match targets.first().filter(|_| j.val("filename").is_some()).and_then(target_len) {
                Some(len) => (len as f64 * p / 100.0) as u64,
                None => return Err(j.refuse(k, "a percentage of a file or device that is not there: give filename= an existing file or device, or an offset in bytes".into())),
            },
        };
        if b > 0 {
            s.push((k.to_string(), storlab_units::Size(b).to_string()));
        }
    }
    // The engine; fio caps a synchronous engine's depth at 1 and says so.
    let direct = match (j.get("direct"), j.get("buffered")) {
        (Some(_), _) => j.on("direct")?,
        (None, Some(_)) => !j.on("buffered")?,
        (None, None) => false,
    };
    let mut enotes = Vec::new();
    let engine = engine(j, direct, &mut enotes)?;
    notes.extend(enotes);
    let mut note = |n: String| notes.push(format!("job '{}': {n}", j.name));
    s.push(("engine".into(), engine.into()));
    let depth = j.int("iodepth")?.unwrap_or(1);
    if engine == "io_uring" {
        s.push(("iodepth".into(), depth.to_string()));
        if let Some(b) = j.int("iodepth_batch")? {
            if b > 0 {
                s.push(("iodepth_batch".into(), b.min(depth).to_string()));
            }
        }
    } else if depth > 1 {
        note(format!(
            "iodepth={depth} with a synchronous engine ({engine}): capped at 1, as fio does"
        ));
    }
    match j.val("io_submit_mode") {
        None | Some("inline") => {}
        Some("offload") => note("io_submit_mode=offload: storlab's worker submits each I/O at its scheduled time whatever has completed (as fio's offload threads do), from its own thread".into()),
        Some(m) => return Err(j.refuse("io_submit_mode", format!("'{m}': fio's io_submit_mode is inline or offload"))),
    }
    if direct {
        s.push(("direct".into(), "true".into()));
    }
    match j.val("sync") {
        None | Some("0") | Some("none") => {}
        Some("1") | Some("sync") => s.push(("sync".into(), "true".into())),
        Some(v) => {
            return Err(j.refuse(
                "sync",
                format!("'{v}' (O_DSYNC): storlab opens with O_SYNC (sync=1) or neither"),
            ))
        }
    }
    // fio drops the files' cached pages before a job (invalidate=1, its default).
    if !direct && j.on_or("invalidate", true)? {
        s.push(("fadvise".into(), "dontneed".into()));
    }
    if let Some(h) = j.val("fadvise_hint") {
        if !matches!(h, "0" | "1") {
            return Err(j.refuse(
                "fadvise_hint",
                "a given access hint: storlab gives the kernel none besides dropping cached pages (invalidate)".into(),
            ));
        }
    }
    // Allocation of new files: fio's default is native (fallocate(2)).
    let falloc = match j.val("fallocate").unwrap_or("native") {
        "none" | "0" => "none",
        "native" | "posix" | "1" => "posix",
        "keep" => "keep",
        "truncate" => "truncate",
        v => {
            return Err(j.refuse(
                "fallocate",
                format!("'{v}': fio's fallocate is none, native, posix, keep or truncate"),
            ))
        }
    };
    let fill = j.on("fill_device")?;
    if fill {
        if kind != PhaseKind::Write {
            note(format!(
                "fill_device with rw={}: the file is laid out until the filesystem is full, then {} as far as it goes",
                j.val("rw").unwrap_or("read"),
                if kind.writes() { "written" } else { "read" }
            ));
        }
        if j.val("size").is_some() {
            note("fill_device with a size: fio and storlab stop at the size or when the filesystem is full, whichever comes first".into());
        }
        s.push(("fill".into(), "true".into()));
    }
    if kind == PhaseKind::Write {
        // fill_device: fio allocates nothing ahead of writing until the space runs out.
        s.push(("fallocate".into(), if fill { "none" } else { falloc }.into()));
    }
    // Time: fio's runtime with time_based runs for the time; without, it cuts the pass.
    let runtime = j.time_us("runtime", TimeBase::Seconds)?.filter(|t| *t > 0);
    match (runtime, j.on("time_based")?) {
        (Some(r), true) => s.push(("runtime".into(), duration_text(r))),
        (Some(r), false) => s.push(("timeout".into(), duration_text(r))),
        (None, true) => {
            return Err(bad(
                &j.at("time_based"),
                "time_based without runtime: give runtime=SECONDS",
            ))
        }
        (None, false) => {}
    }
    if let Some(r) = j.time_us("ramp_time", TimeBase::Seconds)?.filter(|t| *t > 0) {
        s.push(("ramp".into(), duration_text(r)));
    }
    if let Some(d) = j.time_us("startdelay", TimeBase::Seconds)?.filter(|d| *d > 0) {
        s.push(("start_delay".into(), duration_text(d)));
    }
    if j.on("exitall")? {
        s.push(("exitall".into(), "true".into()));
    }
    let loops = j.int("loops")?.unwrap_or(1);
    if loops > 1 {
        if runtime.is_some() && j.on("time_based")? {
            note(format!(
                "loops={loops} with time_based: the time ends the job, as in fio"
            ));
        } else {
            s.push(("loops".into(), loops.to_string()));
        }
    }
    // Rates, per job as fio's are.
    let rate = match (j.val("rate"), j.val("rate_iops")) {
        (Some(_), Some(_)) => {
            return Err(j.refuse(
                "rate_iops",
                "rate and rate_iops together: storlab keeps one target rate".into(),
            ))
        }
        (Some(r), None) => Some(("rate", r)),
        (None, Some(r)) => Some(("rate_iops", r)),
        (None, None) => None,
    };
    if let Some((key, r)) = rate {
        let t = value::triple(r);
        let (rd, wr) = (t[0], t[1]);
        let one = match (kind.reads(), kind.writes()) {
            (true, false) => rd,
            (false, true) => wr,
            _ if rd == wr => rd,
            _ => {
                return Err(j.refuse(
                    key,
                    "separate read and write rates in one mixed job: storlab keeps one target rate per phase".into(),
                ))
            }
        };
        if let Some(v) = one {
            let rate = match key {
                "rate" => format!("{}/s", j.bytes(key, v)?),
                _ => format!("{}iops", j.bytes(key, v)?),
            };
            s.push(("rate".into(), rate));
            s.push(("rate_per".into(), "worker".into()));
        }
        match j.val("rate_process") {
            None | Some("linear") => {}
            Some("poisson") => s.push(("rate_process".into(), "poisson".into())),
            Some(p) => {
                return Err(j.refuse(
                    "rate_process",
                    format!("'{p}': fio's rate_process is linear or poisson"),
                ))
            }
        }
    }
    let rate_min = match (j.val("rate_min"), j.val("rate_iops_min")) {
        (Some(_), Some(_)) => {
            return Err(j.refuse(
                "rate_iops_min",
                "rate_min and rate_iops_min together: storlab keeps one minimum".into(),
            ))
        }
        (Some(r), None) => Some(("rate_min", r)),
        (None, Some(r)) => Some(("rate_iops_min", r)),
        (None, None) => None,
    };
    if let Some((key, r)) = rate_min {
        let t = value::triple(r);
        let one = match (kind.reads(), kind.writes()) {
            (true, false) => t[0],
            (false, true) => t[1],
            _ if t[0] == t[1] => t[0],
            _ => {
                return Err(j.refuse(
                    key,
                    "separate read and write minimums in one mixed job: storlab keeps one".into(),
                ))
            }
        };
        if let Some(v) = one {
            let v = j.bytes(key, v)?;
            if v > 0 {
                s.push((
                    "rate_min".into(),
                    if key == "rate_min" {
                        format!("{v}/s")
                    } else {
                        format!("{v}iops")
                    },
                ));
                let cycle = j.int("rate_cycle")?.filter(|c| *c >= 10);
                note(format!(
                    "{key}: a worker under it, judged at its completions over spans of a sample interval ({}) or more, fails the job, as fio judges over rate_cycle",
                    cycle.map_or("1 s".to_string(), |c| format!("{c} ms, rate_cycle"))
                ));
                if let Some(c) = cycle {
                    s.push(("interval".into(), format!("{c}ms")));
                }
            }
        }
    }
    // Placement on CPUs and memory nodes.
    let cpus = match (j.val("cpus_allowed"), j.val("cpumask"), j.val("numa_cpu_nodes")) {
        (Some(c), _, _) => Some(c.to_string()),
        (None, Some(m), _) => {
            let m = j.bytes("cpumask", m)?;
            let list: Vec<String> = (0..64)
                .filter(|b| m >> b & 1 == 1)
                .map(|b: u32| b.to_string())
                .collect();
            if list.is_empty() {
                return Err(j.refuse("cpumask", "a mask of no CPU".into()));
            }
            Some(list.join(","))
        }
        (None, None, Some(nodes)) => {
            let nodes = storlab_model::settings::CpuList::parse(nodes).map_err(|e| j.refuse("numa_cpu_nodes", e))?;
            let mut cpus = Vec::new();
            for n in &nodes.0 {
                let path = format!("/sys/devices/system/node/node{n}/cpulist");
                let list = std::fs::read_to_string(&path).map_err(|_| {
                    j.refuse(
                        "numa_cpu_nodes",
                        format!("NUMA node {n} is not on this machine ({path} is missing)"),
                    )
                })?;
                cpus.push(list.trim().to_string());
            }
            note(format!(
                "numa_cpu_nodes={}: the workers run on CPUs {}",
                j.val("numa_cpu_nodes").unwrap_or(""),
                cpus.join(",")
            ));
            Some(cpus.join(","))
        }
        _ => None,
    };
    if let Some(c) = cpus {
        s.push(("cpus".into(), c));
        match j.val("cpus_allowed_policy") {
            None | Some("shared") => {}
            Some("split") => s.push(("cpus_policy".into(), "split".into())),
            Some(p) => return Err(j.refuse("cpus_allowed_policy", format!("'{p}': fio's policy is shared or split"))),
        }
    }
    if let Some(p) = j.val("numa_mem_policy") {
        let p = p.replace("preferred", "prefer");
        if p != "default" {
            s.push(("memory_policy".into(), p));
        }
    }
    // Steady state: the job ends once its throughput is steady over the window.
    if let Some(c) = j.val("steadystate") {
        let dur = j.time_us("steadystate_duration", TimeBase::Seconds)?.unwrap_or(0);
        if dur == 0 {
            return Err(j.refuse(
                "steadystate",
                "a criterion without ss_dur: give the window to judge (ss_dur=30s)".into(),
            ));
        }
        s.push(("steady".into(), c.to_string()));
        s.push(("steady_window".into(), duration_text(dur)));
        if let Some(r) = j
            .time_us("steadystate_ramp_time", TimeBase::Seconds)?
            .filter(|r| *r > 0)
        {
            s.push(("steady_ramp".into(), duration_text(r)));
        }
        let every = j
            .time_us("steadystate_check_interval", TimeBase::Seconds)?
            .unwrap_or(1_000_000);
        match s.iter().find(|(k, _)| k == "interval") {
            Some((_, i)) if *i != duration_text(every) => {
                return Err(j.refuse("steadystate_check_interval", format!("a check interval other than the samples' ({i}, log_avg_msec or rate_cycle): storlab judges steady state on its samples")))
            }
            Some(_) => {}
            None => s.push(("interval".into(), duration_text(every))),
        }
    }
    // The job's I/O priority (fio's prioclass and prio; class 0 is the default).
    match (j.int("prioclass")?, j.int("prio")?) {
        (None | Some(0), None) => {}
        (class, level) => {
            let class = match class.unwrap_or(2) {
                0 | 2 => "be",
                1 => "rt",
                3 => "idle",
                c => {
                    return Err(j.refuse(
                        "prioclass",
                        format!("class {c}: fio's classes are 0 (none), 1 (rt), 2 (be) and 3 (idle)"),
                    ))
                }
            };
            s.push(("priority".into(), format!("{class}:{}", level.unwrap_or(4))));
        }
    }
    // Priorities on the requests themselves (fio's cmdprio_*; io_uring and libaio only).
    if let Some(p) = j.val("cmdprio_percentage") {
        let two = |k: &str, v: &str| -> Result<(i64, i64), WorkloadError> {
            let parse = |x: &str| {
                x.trim()
                    .parse::<i64>()
                    .map_err(|_| j.refuse(k, format!("'{x}' is not a whole number")))
            };
            match v.split_once(',') {
                Some((a, b)) => Ok((parse(a)?, parse(b)?)),
                None => {
                    let a = parse(v)?;
                    Ok((a, a))
                }
            }
        };
        let (r, w) = two("cmdprio_percentage", p)?;
        if !(0..=100).contains(&r) || !(0..=100).contains(&w) {
            return Err(j.refuse("cmdprio_percentage", "expected percentages from 0 to 100".into()));
        }
        let same = |k: &str, default: i64| -> Result<i64, WorkloadError> {
            match j.val(k) {
                None => Ok(default),
                Some(v) => {
                    let (a, b) = two(k, v)?;
                    if a != b {
                        return Err(j.refuse(
                            k,
                            "a different value for reads and for writes: storlab's cmdprio has one priority for both"
                                .into(),
                        ));
                    }
                    Ok(a)
                }
            }
        };
        let class = match same("cmdprio_class", 1)? {
            1 => "rt",
            2 => "be",
            3 => "idle",
            c => {
                return Err(j.refuse(
                    "cmdprio_class",
                    format!("class {c}: expected 1 (rt), 2 (be) or 3 (idle)"),
                ))
            }
        };
        let level = same("cmdprio", 0)?;
        if !(0..=7).contains(&level) {
            return Err(j.refuse("cmdprio", format!("level {level}: expected 0 (highest) to 7")));
        }
        if same("cmdprio_hint", 0)? != 0 {
            return Err(j.refuse(
                "cmdprio_hint",
                "priority hints (for command duration limits): storlab's requests carry a class and level only".into(),
            ));
        }
        if r > 0 || w > 0 {
            let pct = if r == w { r.to_string() } else { format!("{r},{w}") };
            s.push(("cmdprio".into(), format!("{pct}:{class}:{level}")));
        }
    }
    // fio's latency_target: the deepest queue that meets it.
    if let Some(t) = j.time_us("latency_target", TimeBase::Micros)?.filter(|t| *t > 0) {
        s.push(("latency_target".into(), duration_text(t)));
        if let Some(w) = j.time_us("latency_window", TimeBase::Micros)?.filter(|w| *w > 0) {
            s.push(("latency_window".into(), duration_text(w)));
        }
        if let Some(p) = j.val("latency_percentile") {
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| j.refuse("latency_percentile", format!("'{p}' is not a percentage")))?;
            s.push(("latency_percentile".into(), v.to_string()));
        }
        if j.on("latency_run")? {
            s.push(("latency_run".into(), "true".into()));
        }
    }
    // fio's flow: the job's share of the I/O among the jobs of its flow_id.
    if let Some(w) = j.int("flow")?.filter(|w| *w > 0) {
        s.push(("flow".into(), w.to_string()));
        if let Some(id) = j.int("flow_id")?.filter(|i| *i > 0) {
            s.push(("flow_id".into(), id.to_string()));
        }
        if let Some(n) = j.time_us("flow_sleep", TimeBase::Micros)?.filter(|n| *n > 0) {
            s.push(("flow_sleep".into(), duration_text(n)));
        }
    }
    // Think time and a count of I/Os.
    if let Some(t) = j.time_us("thinktime", TimeBase::Micros)?.filter(|t| *t > 0) {
        s.push(("think".into(), duration_text(t)));
        if let Some(sp) = j.time_us("thinktime_spin", TimeBase::Micros)?.filter(|t| *t > 0) {
            s.push(("think_spin".into(), duration_text(sp)));
        }
        if let Some(b) = j.int("thinktime_blocks")?.filter(|b| *b > 1) {
            s.push(("think_blocks".into(), b.to_string()));
        }
    }
    if let Some(n) = j.int("number_ios")?.filter(|n| *n > 0) {
        s.push(("ios".into(), n.to_string()));
    }
    // Flushes.
    let fsync = j.int("fsync")?.unwrap_or(0);
    let fdatasync = j.int("fdatasync")?.unwrap_or(0);
    if fsync > 0 {
        s.push(("fsync".into(), fsync.to_string()));
    } else if fdatasync > 0 {
        note(format!(
            "fdatasync={fdatasync} flushes with fsync(2), which also writes the file's metadata when it changed"
        ));
        s.push(("fsync".into(), fdatasync.to_string()));
    } else {
        let ends = [
            ("end_fsync", "fsync"),
            ("fsync_on_close", "fsync on close"),
            ("end_syncfs", "syncfs"),
        ];
        let mut end = false;
        for (k, what) in ends {
            if j.on(k)? {
                if k != "end_fsync" {
                    note(format!("{k}=1 ({what}): storlab flushes each file it wrote with fsync(2) at the end of the phase, timed"));
                }
                end = true;
            }
        }
        if end && kind.writes() {
            s.push(("fsync".into(), "end".into()));
        }
    }
    // Data written.
    if j.on("zero_buffers")? {
        s.push(("pattern".into(), "zeros".into()));
    } else if let Some(p) = j.int("buffer_compress_percentage")? {
        if p > 0 {
            s.push(("pattern".into(), format!("compress:{}", p.min(100))));
        }
    }
    // Deduplicable data.
    if let Some(p) = j.int("dedupe_percentage")?.filter(|p| *p > 0) {
        if p > 100 {
            return Err(j.refuse("dedupe_percentage", "a percentage above 100".into()));
        }
        s.push(("dedupe".into(), p.to_string()));
        match j.val("dedupe_mode").unwrap_or("repeat") {
            "repeat" => {}
            "working_set" => {
                let w = j.int("dedupe_working_set_percentage")?.unwrap_or(5);
                if w == 0 || w > 100 {
                    return Err(j.refuse("dedupe_working_set_percentage", "expected 1 to 100".into()));
                }
                s.push(("dedupe_set".into(), w.to_string()));
                if j.on("dedupe_global")? {
                    s.push(("dedupe_global".into(), "true".into()));
                }
            }
            m => {
                return Err(j.refuse(
                    "dedupe_mode",
                    format!("'{m}': fio's dedupe_mode is repeat or working_set"),
                ))
            }
        }
    }
    // Verification.
    let verify = match j.val("verify") {
        None | Some("0") | Some("none") | Some("null") => false,
        Some(m) => {
            note(format!(
                "verify={m}: storlab stamps and checks its own header and CRC-32C in every 4 KiB"
            ));
            true
        }
    };
    if let Some(p) = j.val("verify_pattern") {
        let bytes = value::pattern(p).map_err(|e| j.refuse("verify_pattern", e))?;
        if verify {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            s.push(("pattern".into(), format!("0x{hex}")));
            note(format!(
                "verify_pattern={p}: written over and over in every 4 KiB after storlab's 32-byte header, and checked on reading"
            ));
        } else {
            note(format!(
                "verify_pattern={p}: without verify fio writes its usual data, and so does storlab"
            ));
        }
    }
    let backlog = j.int("verify_backlog")?.filter(|n| *n > 0 && verify && kind.writes());
    if let Some(n) = backlog {
        note(format!("verify_backlog={n}: every {n} blocks written are read back and checked before the job writes on (storlab's verify_backlog), as in fio; the reads are the job's reads"));
        s.push(("verify_backlog".into(), n.to_string()));
    }
    if verify {
        s.push(("verify".into(), "true".into()));
    }
    // Samples: fio's logs average over log_avg_msec.
    let logs = ["write_bw_log", "write_lat_log", "write_iops_log", "write_hist_log"];
    if logs.iter().any(|k| j.get(k).is_some()) && j.int("log_avg_msec")?.unwrap_or(0) == 0 {
        note("fio logs every I/O without log_avg_msec; storlab's logs have one line per sample interval (1s unless interval or log_avg_msec says otherwise)".into());
    }
    if let Some(ms) = j.int("log_avg_msec")? {
        if ms > 0 && logs.iter().any(|k| j.get(k).is_some()) {
            if ms < 10 {
                return Err(j.refuse(
                    "log_avg_msec",
                    "samples shorter than 10 ms: storlab's interval is 10 ms or more".into(),
                ));
            }
            s.push(("interval".into(), format!("{ms}ms")));
        }
    }
    let mut wanted = Vec::new();
    for k in logs {
        if j.get(k).is_none() {
            continue;
        }
        let prefix = j
            .val(k)
            .filter(|v| !v.is_empty() && *v != "1")
            .unwrap_or(&j.name)
            .to_string();
        match k {
            "write_bw_log" | "write_iops_log" => {
                let what = if k == "write_bw_log" { "bw" } else { "iops" };
                note(format!("{k}: storlab fio writes {prefix}_{what}.log in fio's log format from the run's interval samples (one file for the job's workers, as fio's per_job_logs=0); storlab run --fio keeps the samples only"));
                wanted.push((what.to_string(), prefix));
            }
            "write_lat_log" => {
                // storlab times each I/O from submission to completion: fio's lat, and for a
                // synchronous engine its clat too. The submission alone (slat) is not timed.
                let sync = !matches!(s.iter().rev().find(|(k, _)| k == "engine").map(|(_, v)| v.as_str()), Some("io_uring"));
                let files = if sync {
                    format!("{prefix}_lat.log and {prefix}_clat.log (a synchronous engine's completion latency is the whole)")
                } else {
                    format!("{prefix}_lat.log")
                };
                note(format!("{k}: storlab fio writes {files} in fio's log format, each line an interval's mean latency in ns; {prefix}_slat.log is not written (storlab does not time the submission alone)"));
                wanted.push(("lat".to_string(), prefix.clone()));
                if sync {
                    wanted.push(("clat".to_string(), prefix));
                }
            }
            _ => note(format!("{k}: storlab keeps each interval's latency percentiles and mean, not fio's histogram buckets: no histogram log is written")),
        }
    }
    if j.on("create_on_open")? {
        note("create_on_open=1: storlab creates and opens each file before the phase starts (not timed)".into());
    }
    for k in ["unlink", "unlink_each_loop"] {
        if j.on(k)? {
            note(format!("{k}=1: storlab removes the files it made when the run ends (unless --keep), and never a file it was given"));
        }
    }
    if j.on("overwrite")? && kind == PhaseKind::Write {
        note("overwrite=1: the file is laid out first and then overwritten (storlab's rewrite)".into());
    }
    // fio's ignore_error: READS,WRITES,VERIFY lists of errors to go on past; a list given
    // replaces fio's default (EIO, EILSEQ) for its direction.
    let lists: Vec<&str> = j
        .val("ignore_error")
        .map(|v| v.split(',').collect())
        .unwrap_or_default();
    let list_for = |i: usize| -> Result<storlab_model::settings::ErrnoList, WorkloadError> {
        let text = lists
            .get(i)
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .unwrap_or("EIO:EILSEQ");
        storlab_model::settings::ErrnoList::parse(text).map_err(|e| j.refuse("ignore_error", e))
    };
    let (reads, writes) = (list_for(0)?, list_for(1)?);
    let errnos = match j.val("continue_on_error") {
        Some("read") => reads.clone(),
        Some("write") => writes.clone(),
        _ => {
            let mut both = reads.clone();
            both.0.extend(writes.0.iter().filter(|n| !reads.contains(**n)));
            if reads != writes && j.get("ignore_error").is_some() {
                note("ignore_error: storlab goes on past the reads' and the writes' errors alike (their union)".into());
            }
            both
        }
    };
    if j.get("ignore_error").is_some() || j.get("continue_on_error").is_some() {
        s.push(("continue_errnos".into(), errnos.to_string()));
    }
    match j.val("continue_on_error") {
        None | Some("none") | Some("0") => {}
        Some(v @ ("read" | "write" | "io")) => s.push(("continue_on_error".into(), v.into())),
        Some(v @ ("1" | "all")) => {
            note(format!("continue_on_error={v}: storlab goes on past failed reads and writes (io); a block that fails its check is counted as bad and the phase goes on, as with any verify"));
            s.push(("continue_on_error".into(), "io".into()));
        }
        Some("verify") => note(
            "continue_on_error=verify: storlab counts every block that fails its check and goes on, as it always does"
                .into(),
        ),
        Some(v) => {
            return Err(j.refuse(
                "continue_on_error",
                format!("'{v}': fio's continue_on_error is none, read, write, io, verify or all"),
            ))
        }
    }
    let kind = if j.on("overwrite")? && kind == PhaseKind::Write {
        PhaseKind::Rewrite
    } else {
        kind
    };
    let kinds = if verify && kind.writes() && backlog.is_none() && j.on_or("do_verify", true)? {
        note("a write with verify is followed by a read that verifies, as fio verifies after writing".into());
        vec![kind, PhaseKind::Read]
    } else {
        vec![kind]
    };
    Ok(Converted {
        kinds,
        settings: s,
        targets,
        threads,
        logs: wanted,
    })
}
