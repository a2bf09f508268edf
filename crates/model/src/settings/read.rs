//! The readers of the settings' values: each takes the text as given (a job file's value or
//! a flag's) and says what was wrong and what would be right.

use storlab_units::{Duration, Rate, Size};

use super::*;
use crate::values::{BackendKind, BlockSizes, DataPattern, FsyncPolicy};

pub(super) fn read_bool(s: &str) -> Result<bool, String> {
    match s {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not true or false")),
    }
}

pub(super) fn read_int<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim().parse().map_err(|_| format!("'{s}' is not {what}"))
}

pub(super) fn read_threads(s: &str) -> Result<u32, String> {
    match read_int(s, "a whole number of workers")? {
        0 => Err("threads is 0: a job needs at least 1 worker".into()),
        n => Ok(n),
    }
}

pub(super) fn read_size(s: &str) -> Result<u64, String> {
    s.parse::<Size>().map(|s| s.0).map_err(|e| e.to_string())
}

pub(super) fn read_in_range(s: &str, key: &str, lo: u32, hi: u32, extra: &str) -> Result<u32, String> {
    let d: u32 = read_int(s, "a whole number")?;
    if d < lo || d > hi {
        return Err(format!("{key} {d} is out of range: expected {lo} to {hi}{extra}"));
    }
    Ok(d)
}

pub(super) fn read_iodepth(s: &str) -> Result<u32, String> {
    read_in_range(s, "iodepth", 1, 4096, "")
}

pub(super) fn read_iodepth_batch(s: &str) -> Result<u32, String> {
    read_in_range(s, "iodepth_batch", 1, 4096, " (and at most iodepth)")
}

pub(super) fn read_iovecs(s: &str) -> Result<u32, String> {
    read_in_range(s, "iovecs", 1, 64, "")
}

pub(super) fn read_engine(s: &str) -> Result<BackendKind, String> {
    BackendKind::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = BackendKind::ALL.iter().map(|b| b.name()).collect();
        crate::names::unknown("back-end", s, &names)
    })
}

pub(super) fn read_fsync(s: &str) -> Result<FsyncPolicy, String> {
    Ok(match s {
        "none" | "false" => FsyncPolicy::None,
        "end" | "true" => FsyncPolicy::End,
        n => match n.parse::<u32>() {
            Ok(0) => FsyncPolicy::None,
            Ok(n) => FsyncPolicy::Every(n),
            Err(_) => {
                return Err(format!(
                    "'{s}' is not a flush policy: expected none, end, or a number N to flush after every N writes"
                ))
            }
        },
    })
}

pub(super) fn read_duration(s: &str) -> Result<Duration, String> {
    s.parse::<Duration>().map_err(|e| e.to_string())
}

pub(super) fn read_runtime(s: &str) -> Result<Duration, String> {
    read_duration(s)
}

pub(super) fn read_interval(s: &str) -> Result<Duration, String> {
    let d = read_duration(s)?;
    if d.0 < 10_000_000 {
        return Err(format!("interval {d} is too short: expected 10ms or more"));
    }
    Ok(d)
}

pub(super) fn read_rate(s: &str) -> Result<Rate, String> {
    s.parse::<Rate>().map_err(|e| e.to_string())
}

pub(super) fn read_rate_per(s: &str) -> Result<RatePer, String> {
    match s {
        "worker" => Ok(RatePer::Worker),
        "total" => Ok(RatePer::Total),
        _ => Err(format!("'{s}' is not total or worker")),
    }
}

/// The largest pattern: fio's (MAX_PATTERN_SIZE).
pub const MAX_PATTERN: usize = 512;

pub(super) fn read_hex_pattern(s: &str, hex: &str) -> Result<DataPattern, String> {
    if hex.is_empty() || hex.len() % 2 == 1 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "'{s}' is not a pattern: expected 0x and an even number of hexadecimal digits (0xaa555aa5)"
        ));
    }
    if hex.len() / 2 > MAX_PATTERN {
        return Err(format!(
            "'{s}' is {} bytes: a pattern holds at most {MAX_PATTERN}",
            hex.len() / 2
        ));
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex digits"))
        .collect();
    Ok(DataPattern::Bytes(bytes))
}

pub(super) fn read_pattern(s: &str) -> Result<DataPattern, String> {
    Ok(match s {
        "random" => DataPattern::Random,
        "zeros" | "zero" => DataPattern::Zeros,
        other => {
            if let Some(hex) = other.strip_prefix("0x").or_else(|| other.strip_prefix("0X")) {
                return read_hex_pattern(s, hex);
            }
            let pct = other
                .strip_prefix("compress:")
                .or_else(|| other.strip_prefix("compressible:"));
            match pct.and_then(|p| p.trim_end_matches('%').parse::<u8>().ok()) {
                Some(p) if p <= 100 => DataPattern::Compressible(p),
                _ => {
                    return Err(format!(
                    "'{s}' is not a data pattern: expected random, zeros, compress:NN with NN from 0 to 100, or 0xHEX"
                ))
                }
            }
        }
    })
}

pub(super) fn read_rwmix(s: &str) -> Result<u8, String> {
    let p: i64 = read_int(s, "a percentage")?;
    if !(0..=100).contains(&p) {
        return Err(format!(
            "rwmix {p} is outside 0–100: it is the percentage of reads in randrw and rw"
        ));
    }
    Ok(p as u8)
}

pub(super) fn read_stride(s: &str) -> Result<u64, String> {
    match read_int(s, "a whole number of records")? {
        0 => Err("stride 0: expected 1 or more records".into()),
        n => Ok(n),
    }
}

pub(super) fn read_loops(s: &str) -> Result<u32, String> {
    match read_int(s, "a whole number of passes")? {
        0 => Err("loops 0: expected 1 or more passes".into()),
        n => Ok(n),
    }
}

pub(super) fn read_fallocate(s: &str) -> Result<Fallocate, String> {
    Ok(match s {
        "none" | "0" => Fallocate::None,
        "posix" | "native" | "1" => Fallocate::Posix,
        "keep" => Fallocate::Keep,
        "truncate" => Fallocate::Truncate,
        _ => {
            return Err(format!(
                "'{s}' is not a way to allocate: expected none, posix, keep or truncate"
            ))
        }
    })
}

pub(super) fn read_strided(s: &str) -> Result<Strided, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let bad = || format!("'{s}' is not strided zones: expected SIZE,SKIP or SIZE,SKIP,RANGE (`256m,2g`)");
    if parts.len() < 2 || parts.len() > 3 {
        return Err(bad());
    }
    let size = read_size(parts[0]).map_err(|e| format!("{}: {e}", bad()))?;
    let skip = read_size(parts[1]).map_err(|e| format!("{}: {e}", bad()))?;
    let range = match parts.get(2) {
        Some(r) => read_size(r).map_err(|e| format!("{}: {e}", bad()))?,
        None => size,
    };
    if size == 0 || range == 0 {
        return Err(format!("'{s}': a zone of 0 bytes; expected a size above 0"));
    }
    Ok(Strided { size, range, skip })
}

pub(super) fn read_zbd(s: &str) -> Result<Zbd, String> {
    let bad = || format!("'{s}' is not emulated zones: expected SIZE or SIZE,CAPACITY (`256m`, `64m,48m`)");
    let (size, capacity) = match s.split_once(',') {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (s.trim(), None),
    };
    let size = read_size(size).map_err(|e| format!("{}: {e}", bad()))?;
    let capacity = match capacity {
        Some(c) => read_size(c).map_err(|e| format!("{}: {e}", bad()))?,
        None => size,
    };
    if size < 512 {
        return Err(format!("'{s}': a zone of less than 512 bytes; fio's smallest is 512"));
    }
    if capacity == 0 || capacity > size {
        return Err(format!("'{s}': a zone's capacity must be above 0 and at most its size"));
    }
    Ok(Zbd { size, capacity })
}

pub(super) fn read_compress_chunk(s: &str) -> Result<u64, String> {
    match read_size(s)? {
        0 => Err("compress_chunk 0: expected a span of at least one byte (fio's default: 512)".into()),
        n if n > 1 << 30 => Err(format!("compress_chunk {s}: at most 1 GiB")),
        n => Ok(n),
    }
}

pub(super) fn read_io_size(s: &str) -> Result<u64, String> {
    match read_size(s)? {
        0 => Err("io_size 0: expected a size above 0".into()),
        n => Ok(n),
    }
}

pub(super) fn read_percent(s: &str) -> Result<u8, String> {
    match s.trim_end_matches('%').trim().parse::<u8>() {
        Ok(p) if p <= 100 => Ok(p),
        _ => Err(format!("'{s}' is not a percentage: expected 0 to 100")),
    }
}

pub(super) fn read_continue_on_error(s: &str) -> Result<ErrorsGoneOn, String> {
    Ok(match s {
        "none" | "0" | "false" => ErrorsGoneOn::None,
        "read" => ErrorsGoneOn::Read,
        "write" => ErrorsGoneOn::Write,
        "io" | "1" | "true" => ErrorsGoneOn::Io,
        _ => {
            return Err(format!(
                "'{s}' is not what to go on past: expected none, read, write or io"
            ))
        }
    })
}

pub(super) fn read_errnos(s: &str) -> Result<ErrnoList, String> {
    ErrnoList::parse(s)
}

pub(super) fn read_latency_percentile(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentile: expected above 0 and at most 100")),
    }
}

pub(super) fn read_ios(s: &str) -> Result<u64, String> {
    match read_int(s, "a whole number of I/Os")? {
        0 => Err("ios 0: expected 1 or more I/Os".into()),
        n => Ok(n),
    }
}

pub(super) fn read_sync_call(s: &str) -> Result<SyncCall, String> {
    match s {
        "fsync" => Ok(SyncCall::Fsync),
        "fdatasync" => Ok(SyncCall::Fdatasync),
        _ => match s.strip_prefix("sync_file_range:") {
            Some(flags) => read_range_flags(flags).map(SyncCall::SyncFileRange),
            None => Err(format!(
                "'{s}' is not a flush call: expected fsync, fdatasync or sync_file_range:FLAGS (FLAGS of wait_before, write, wait_after, joined by commas)"
            )),
        },
    }
}

/// sync_file_range's flags by fio's names, joined by commas (`write,wait_after`).
pub fn read_range_flags(s: &str) -> Result<u8, String> {
    let mut flags = 0;
    for w in s.split(',').map(str::trim) {
        let Some((_, bit)) = SyncCall::RANGE_FLAGS.iter().find(|(name, _)| *name == w) else {
            return Err(format!(
                "'{w}' is not a sync_file_range flag: expected wait_before, write or wait_after"
            ));
        };
        flags |= bit;
    }
    Ok(flags)
}

pub(super) fn read_rate_process(s: &str) -> Result<RateProcess, String> {
    match s {
        "linear" => Ok(RateProcess::Linear),
        "poisson" => Ok(RateProcess::Poisson),
        _ => Err(format!("'{s}' is not a rate process: expected linear or poisson")),
    }
}

/// A skewed distribution, `zipf:THETA`, `pareto:H`, `normal:DEV` (or `gauss:DEV`), with the
/// ranges fio accepts; None for another kind.
fn read_skew(s: &str) -> Result<Option<Distribution>, String> {
    let Some((kind, v)) = s.split_once(':') else {
        return Ok(None);
    };
    let make: fn(f64) -> Distribution = match kind {
        "zipf" => Distribution::Zipf,
        "pareto" => Distribution::Pareto,
        "normal" | "gauss" => Distribution::Normal,
        _ => return Ok(None),
    };
    let x: f64 = v
        .trim()
        .parse()
        .map_err(|_| format!("'{v}' in '{s}' is not a number"))?;
    let ok = match kind {
        // theta = 1 would divide by zero in the law's inverse (fio refuses it too).
        "zipf" => x > 0.0 && x != 1.0 && x.is_finite(),
        "pareto" => x > 0.0 && x < 1.0,
        _ => (0.0..=100.0).contains(&x),
    };
    if !ok {
        return Err(format!(
            "'{s}': {kind}'s value must be {}",
            match kind {
                "zipf" => "above 0 and not 1 (theta)",
                "pareto" => "between 0 and 1 (h)",
                _ => "a percentage of the region from 0 to 100 (the deviation)",
            }
        ));
    }
    Ok(Some(make(x)))
}

/// `uniform`, `zoned:50/5:30/15:20/` (fio's spelling: a blank region share is what is left),
/// `zoned_abs:60/20g:30/100g:10/500g` (absolute zone sizes), `zipf:1.2`, `pareto:0.9` or
/// `normal:10`.
pub fn read_distribution(s: &str) -> Result<Distribution, String> {
    if s == "uniform" || s == "random" {
        return Ok(Distribution::Uniform);
    }
    if let Some(skew) = read_skew(s)? {
        return Ok(skew);
    }
    if let Some(zones) = s.strip_prefix("zoned_abs:") {
        return read_zoned_abs(s, zones, read_size);
    }
    let Some(zones) = s.strip_prefix("zoned:") else {
        return Err(format!(
            "'{s}' is not a distribution: expected uniform, zoned:A/R:B/S:…, zipf:THETA, pareto:H or normal:DEV"
        ));
    };
    let mut out = Vec::new();
    let (mut io, mut region) = (0u32, 0u32);
    let parts: Vec<&str> = zones.split(':').filter(|p| !p.is_empty()).collect();
    for (i, p) in parts.iter().enumerate() {
        let (a, r) = p
            .split_once('/')
            .ok_or_else(|| format!("'{p}' in '{s}' is not IO%/REGION%"))?;
        let a: u8 = a
            .trim()
            .parse()
            .map_err(|_| format!("'{a}' in '{s}' is not a percentage"))?;
        let r: u8 = match r.trim() {
            "" if i + 1 == parts.len() => (100u32.saturating_sub(region)) as u8,
            t => t.parse().map_err(|_| format!("'{t}' in '{s}' is not a percentage"))?,
        };
        io += a as u32;
        region += r as u32;
        out.push((a, r));
    }
    if io != 100 || region != 100 || out.iter().any(|z| z.1 == 0) {
        return Err(format!(
            "'{s}': the zones' shares of the I/Os and of the region must each add up to 100 (they add up to {io} and {region}), and no zone may be empty"
        ));
    }
    Ok(Distribution::Zoned(out))
}

/// fio's zoned_abs zones, `IO%/SIZE:…`, the sizes read by `size` (storlab's units, or fio's
/// rule where a fio job gives them): the I/O shares add up to 100 and no zone is empty.
pub fn read_zoned_abs(
    s: &str,
    zones: &str,
    size: impl Fn(&str) -> Result<u64, String>,
) -> Result<Distribution, String> {
    let mut out = Vec::new();
    let mut io = 0u32;
    for p in zones.split(':').filter(|p| !p.is_empty()) {
        let (a, z) = p
            .split_once('/')
            .ok_or_else(|| format!("'{p}' in '{s}' is not IO%/SIZE"))?;
        let a: u8 = a
            .trim()
            .parse()
            .map_err(|_| format!("'{a}' in '{s}' is not a percentage"))?;
        let z = size(z.trim()).map_err(|e| format!("'{z}' in '{s}': {e}"))?;
        if z == 0 {
            return Err(format!("'{p}' in '{s}': a zone of no bytes"));
        }
        io += a as u32;
        out.push((a, z));
    }
    if io != 100 {
        return Err(format!(
            "'{s}': the zones' shares of the I/Os must add up to 100 (they add up to {io})"
        ));
    }
    Ok(Distribution::ZonedAbs(out))
}

pub(super) fn read_flow_id(s: &str) -> Result<u32, String> {
    read_int(s, "a flow number")
}

pub(super) fn read_priority(s: &str) -> Result<IoPriority, String> {
    let (c, l) = s.split_once(':').unwrap_or((s, "4"));
    let class = match c.trim() {
        "rt" | "1" => 1,
        "be" | "2" => 2,
        "idle" | "3" => 3,
        _ => return Err(format!("'{c}' is not an I/O priority class: expected rt, be or idle")),
    };
    let level: u8 = l
        .trim()
        .parse()
        .map_err(|_| format!("'{l}' is not a priority level from 0 to 7"))?;
    if level > 7 {
        return Err(format!("priority level {level}: expected 0 (highest) to 7"));
    }
    Ok(IoPriority { class, level })
}

pub(super) fn read_cmdprio(s: &str) -> Result<CommandPriority, String> {
    let (pct, prio) = s
        .split_once(':')
        .ok_or_else(|| format!("'{s}' is not a command priority: expected PCT[,PCT]:CLASS[:LEVEL] (`20:rt:0`)"))?;
    let pct_of = |p: &str| read_percent(p.trim()).map_err(|e| format!("{e} (in '{s}')"));
    let (r, w) = match pct.split_once(',') {
        Some((r, w)) => (pct_of(r)?, pct_of(w)?),
        None => (pct_of(pct)?, pct_of(pct)?),
    };
    let priority = read_priority(
        if prio.contains(':') {
            prio.to_string()
        } else {
            format!("{prio}:0")
        }
        .as_str(),
    )?;
    Ok(CommandPriority {
        read_percent: r,
        write_percent: w,
        priority,
    })
}

pub(super) fn read_nrfiles(s: &str) -> Result<u32, String> {
    read_in_range(s, "nrfiles", 1, 1 << 20, " files per worker")
}

pub(super) fn read_file_sizes(s: &str) -> Result<FileSizes, String> {
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (read_size(a.trim())?, read_size(b.trim())?),
        None => {
            let v = read_size(s)?;
            (v, v)
        }
    };
    if lo == 0 || hi < lo {
        return Err(format!(
            "filesize '{s}': expected a size above 0, or a range LO-HI with 0 < LO ≤ HI"
        ));
    }
    Ok(FileSizes { low: lo, high: hi })
}

pub(super) fn read_file_service(s: &str) -> Result<FileService, String> {
    let (how, n) = match s.split_once(':') {
        Some((h, n)) => (h, Some(n)),
        None => (s, None),
    };
    let count = || -> Result<u32, String> {
        match n {
            None => Ok(1),
            Some(n) => match n.trim().parse::<u32>() {
                Ok(v) if v > 0 => Ok(v),
                _ => Err(format!(
                    "file_service '{s}': the I/Os before switching must be a whole number above 0"
                )),
            },
        }
    };
    match how.trim() {
        "roundrobin" => Ok(FileService::RoundRobin(count()?)),
        "random" => Ok(FileService::Random(count()?)),
        "sequential" if n.is_none() => Ok(FileService::Sequential),
        _ => Err(format!(
            "'{s}' is not a file service: expected roundrobin[:N], sequential or random[:N]"
        )),
    }
}

pub(super) fn read_share(s: &str) -> Result<Share, String> {
    match s {
        "split" => Ok(Share::Split),
        "whole" => Ok(Share::Whole),
        _ => Err(format!("'{s}' is not a way to share a file: expected split or whole")),
    }
}

pub(super) fn read_cpus(s: &str) -> Result<CpuList, String> {
    CpuList::parse(s)
}

pub(super) fn read_cpus_policy(s: &str) -> Result<CpusPolicy, String> {
    match s {
        "shared" => Ok(CpusPolicy::Shared),
        "split" => Ok(CpusPolicy::Split),
        _ => Err(format!("'{s}' is not a CPU policy: expected shared or split")),
    }
}

/// `default`, `local`, `prefer:NODE`, `bind:NODES` or `interleave:NODES`.
pub fn read_memory_policy(s: &str) -> Result<MemoryPolicy, String> {
    let (mode, nodes) = s.split_once(':').unwrap_or((s, ""));
    let list = || {
        CpuList::parse(nodes)
            .map(|l| l.0)
            .map_err(|e| format!("{e} (a list of NUMA nodes)"))
    };
    Ok(match mode {
        "default" => MemoryPolicy::Default,
        "local" => MemoryPolicy::Local,
        "prefer" => {
            let n = list()?;
            if n.len() != 1 {
                return Err(format!("'{s}': prefer takes one node"));
            }
            MemoryPolicy::Prefer(n[0])
        }
        "bind" => MemoryPolicy::Bind(list()?),
        "interleave" => MemoryPolicy::Interleave(list()?),
        _ => {
            return Err(format!(
                "'{s}' is not a memory policy: expected default, local, prefer:NODE, bind:NODES or interleave:NODES"
            ))
        }
    })
}

/// fio's `iops:10%`, `iops_slope:0.1%`, `bw:5%`, `bw_slope:1000`.
pub fn read_steady(s: &str) -> Result<Steady, String> {
    let (what, limit) = s.split_once(':').ok_or_else(|| {
        format!("'{s}' is not a criterion: expected iops, iops_slope, bw or bw_slope, ':' and a limit (10%)")
    })?;
    let (iops, slope) = match what.trim() {
        "iops" => (true, false),
        "iops_slope" => (true, true),
        "bw" => (false, false),
        "bw_slope" => (false, true),
        w => {
            return Err(format!(
                "'{w}' is not a steady-state figure: expected iops, iops_slope, bw or bw_slope"
            ))
        }
    };
    let limit = limit.trim();
    let percent = limit.ends_with('%');
    let v: f64 = limit
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{limit}' is not a limit: a number, or a percentage (10%)"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("'{limit}': a limit is 0 or more"));
    }
    Ok(Steady {
        iops,
        slope,
        limit: v,
        percent,
    })
}

pub(super) fn read_fadvise(s: &str) -> Result<Fadvise, String> {
    Ok(match s {
        "none" => Fadvise::None,
        "sequential" => Fadvise::Sequential,
        "random" => Fadvise::Random,
        "noreuse" => Fadvise::Noreuse,
        "dontneed" => Fadvise::Dontneed,
        _ => {
            return Err(format!(
                "'{s}' is not an fadvise hint: expected none, sequential, random, noreuse or dontneed"
            ))
        }
    })
}

/// A seed as storlab prints it (`0x86dcdfd8b7e3694c`, or its 16 hexadecimal digits without
/// the prefix, as a bad block's message gives them) or a decimal number.
pub(super) fn read_seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"));
    let hex = hex.or((t.len() == 16 && t.chars().all(|c| c.is_ascii_hexdigit())).then_some(t));
    match hex {
        Some(h) => u64::from_str_radix(h, 16).map_err(|_| {
            format!("'{s}' is not a seed: a decimal number, or hexadecimal as storlab prints it (0x86dcdfd8b7e3694c)")
        }),
        None => t.parse().map_err(|_| {
            format!("'{s}' is not a seed: a decimal number, or hexadecimal as storlab prints it (0x86dcdfd8b7e3694c)")
        }),
    }
}

/// "4k" or "4k:70,64k:30" (weights are relative).
pub(super) fn read_bs(t: &str) -> Result<BlockSizes, String> {
    let check = |b: u64| {
        if b == 0 {
            Err("a block size of 0 bytes moves nothing: give a size such as 4k or 1m".to_string())
        } else if b > u32::MAX as u64 / 2 {
            Err(format!("block size {} is too large: at most 1GiB per I/O", Size(b)))
        } else {
            Ok(b)
        }
    };
    if !t.contains(':') && !t.contains(',') {
        return Ok(BlockSizes::Fixed(check(read_size(t)?)?));
    }
    let mut mix = Vec::new();
    for part in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, weight) = part.split_once(':').unwrap_or((part, "1"));
        let w: u32 = weight
            .trim()
            .trim_end_matches('%')
            .parse()
            .map_err(|_| format!("'{part}' is not size:weight (e.g. 4k:70)"))?;
        mix.push((check(read_size(size)?)?, w));
    }
    if mix.iter().all(|(_, w)| *w == 0) {
        return Err("every weight of the block-size mix is 0".into());
    }
    Ok(if mix.len() == 1 {
        BlockSizes::Fixed(mix[0].0)
    } else {
        BlockSizes::Mix(mix)
    })
}
