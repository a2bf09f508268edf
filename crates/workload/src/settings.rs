//! The settings a job file's keys and `storlab run`'s flags share: one table of names, parsed by
//! one function, so a key and its flag (`rate_per` and `--rate-per`) always mean the same.

use serde::Serialize;
use storlab_engine::{BackendKind, BlockSizes, DataPattern, FsyncPolicy};
use storlab_units::{Duration, Rate, Size};

use crate::WorkloadError;

/// Every settings key, with what it takes (shown when a key is unknown, and in `docs/run.md`).
pub const KEYS: &[(&str, &str)] = &[
    ("threads", "workers (threads), e.g. 4"),
    ("size", "bytes per worker's file, e.g. 1g"),
    ("bs", "block (record) size, e.g. 4k, or a weighted mix 4k:70,64k:30"),
    ("engine", "psync, io_uring, mmap, null, stdio or pvsync"),
    ("iodepth", "I/Os in flight per worker (io_uring), e.g. 16"),
    (
        "iodepth_batch",
        "I/Os queued before one submission (io_uring); default 1 with direct (each reaches the device at once, as fio), else iodepth",
    ),
    (
        "iovecs",
        "buffers per I/O with engine pvsync (preadv/pwritev), e.g. 16 (default 1)",
    ),
    ("direct", "true to open with O_DIRECT"),
    ("sync", "true to open with O_SYNC"),
    ("fsync", "none, end, or N (flush after every N writes)"),
    (
        "fsync_timed",
        "true (default) when the flush at the end counts in the time, as IOzone -e",
    ),
    (
        "close_timed",
        "true when closing the files counts in the time, as IOzone -c (default false)",
    ),
    (
        "runtime",
        "time-based phase length, e.g. 30s (default: one pass over each file)",
    ),
    ("ramp", "time run first and excluded from results, e.g. 5s"),
    ("rate", "target rate, e.g. 20000iops or 200MiB/s"),
    (
        "rate_per",
        "total (default: the rate is shared by all workers) or worker",
    ),
    (
        "pattern",
        "random (default), zeros, or compress:NN (NN % of each 4 KiB is zeros)",
    ),
    ("verify", "true to check every 4 KiB read against its header"),
    ("rwmix", "read percentage of randrw, 0 to 100 (default 50)"),
    ("stride", "records between reads of strideread (default 4)"),
    ("interval", "sample interval (default 1s)"),
    (
        "late_after",
        "an I/O issued this long after its scheduled start counts as late (default 1ms)",
    ),
    ("seed", "seed of the offsets and data (default: random per run)"),
];

/// Settings that may be given job-wide, per phase or on the command line. None means "not
/// given here".
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct Settings {
    pub threads: Option<u32>,
    pub size: Option<u64>,
    pub bs: Option<BlockSizes>,
    pub engine: Option<BackendKind>,
    pub iodepth: Option<u32>,
    pub iodepth_batch: Option<u32>,
    pub iovecs: Option<u32>,
    pub direct: Option<bool>,
    pub sync: Option<bool>,
    pub fsync: Option<FsyncPolicy>,
    pub fsync_timed: Option<bool>,
    pub close_timed: Option<bool>,
    pub runtime: Option<Duration>,
    pub ramp: Option<Duration>,
    pub rate: Option<Rate>,
    pub rate_per_worker: Option<bool>,
    pub pattern: Option<DataPattern>,
    pub verify: Option<bool>,
    pub rwmix: Option<u8>,
    pub stride: Option<u64>,
    pub interval: Option<Duration>,
    pub late_after: Option<Duration>,
    pub seed: Option<u64>,
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn parse_bool(s: &str, origin: &str) -> Result<bool, WorkloadError> {
    match s {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(WorkloadError::invalid(origin, format!("'{s}' is not true or false"))),
    }
}

fn parse_int<T: std::str::FromStr>(s: &str, origin: &str, what: &str) -> Result<T, WorkloadError> {
    s.trim()
        .parse()
        .map_err(|_| WorkloadError::invalid(origin, format!("'{s}' is not {what}")))
}

fn parse_size(s: &str, origin: &str) -> Result<u64, WorkloadError> {
    s.parse::<Size>()
        .map(|s| s.0)
        .map_err(|e| WorkloadError::invalid(origin, e.to_string()))
}

impl Settings {
    /// Applies one key's TOML value.
    pub fn apply(&mut self, key: &str, value: &toml::Value, origin: &str) -> Result<(), WorkloadError> {
        if key == "bs" {
            if let toml::Value::Array(items) = value {
                let parts: Vec<String> = items.iter().map(value_text).collect();
                return self.apply_str(key, &parts.join(","), origin);
            }
        }
        self.apply_str(key, &value_text(value), origin)
    }

    /// Applies one key (or flag, with '-' for '_') given as text.
    pub fn apply_str(&mut self, key: &str, text: &str, origin: &str) -> Result<(), WorkloadError> {
        let key = key.replace('-', "_");
        let t = text.trim();
        match key.as_str() {
            "threads" => {
                let n: u32 = parse_int(t, origin, "a whole number of workers")?;
                if n == 0 {
                    return Err(WorkloadError::invalid(
                        origin,
                        "threads is 0: a job needs at least 1 worker",
                    ));
                }
                self.threads = Some(n);
            }
            "size" => self.size = Some(parse_size(t, origin)?),
            "bs" => self.bs = Some(parse_bs(t, origin)?),
            "engine" => {
                self.engine = Some(BackendKind::from_name(t).ok_or_else(|| {
                    let names: Vec<&str> = BackendKind::ALL.iter().map(|b| b.name()).collect();
                    WorkloadError::invalid(
                        origin,
                        format!("unknown back-end '{t}': expected one of {}", names.join(", ")),
                    )
                })?)
            }
            "iodepth" => {
                let d: u32 = parse_int(t, origin, "a whole number")?;
                if d == 0 || d > 4096 {
                    return Err(WorkloadError::invalid(
                        origin,
                        format!("iodepth {d} is out of range: expected 1 to 4096"),
                    ));
                }
                self.iodepth = Some(d);
            }
            "iovecs" => {
                let d: u32 = parse_int(t, origin, "a whole number")?;
                if d == 0 || d > 64 {
                    return Err(WorkloadError::invalid(
                        origin,
                        format!("iovecs {d} is out of range: expected 1 to 64"),
                    ));
                }
                self.iovecs = Some(d);
            }
            "iodepth_batch" => {
                let d: u32 = parse_int(t, origin, "a whole number")?;
                if d == 0 || d > 4096 {
                    return Err(WorkloadError::invalid(
                        origin,
                        format!("iodepth_batch {d} is out of range: expected 1 to 4096 (and at most iodepth)"),
                    ));
                }
                self.iodepth_batch = Some(d);
            }
            "direct" => self.direct = Some(parse_bool(t, origin)?),
            "sync" => self.sync = Some(parse_bool(t, origin)?),
            "fsync" => {
                self.fsync = Some(match t {
                    "none" | "false" => FsyncPolicy::None,
                    "end" | "true" => FsyncPolicy::End,
                    n => {
                        let n: u32 = n.parse().map_err(|_| WorkloadError::invalid(origin, format!("'{t}' is not a flush policy: expected none, end, or a number N to flush after every N writes")))?;
                        if n == 0 {
                            FsyncPolicy::None
                        } else {
                            FsyncPolicy::Every(n)
                        }
                    }
                })
            }
            "fsync_timed" => self.fsync_timed = Some(parse_bool(t, origin)?),
            "close_timed" => self.close_timed = Some(parse_bool(t, origin)?),
            "runtime" => self.runtime = Some(parse_duration(t, origin)?).filter(|d| d.0 > 0),
            "ramp" => self.ramp = Some(parse_duration(t, origin)?),
            "rate" => {
                self.rate = Some(
                    t.parse::<Rate>()
                        .map_err(|e| WorkloadError::invalid(origin, e.to_string()))?,
                )
            }
            "rate_per" => {
                self.rate_per_worker = Some(match t {
                    "worker" => true,
                    "total" => false,
                    _ => return Err(WorkloadError::invalid(origin, format!("'{t}' is not total or worker"))),
                })
            }
            "pattern" => {
                self.pattern = Some(match t {
                    "random" => DataPattern::Random,
                    "zeros" | "zero" => DataPattern::Zeros,
                    other => {
                        let pct = other
                            .strip_prefix("compress:")
                            .or_else(|| other.strip_prefix("compressible:"));
                        match pct.and_then(|p| p.trim_end_matches('%').parse::<u8>().ok()) {
                            Some(p) if p <= 100 => DataPattern::Compressible(p),
                            _ => return Err(WorkloadError::invalid(origin, format!("'{t}' is not a data pattern: expected random, zeros, or compress:NN with NN from 0 to 100"))),
                        }
                    }
                })
            }
            "verify" => self.verify = Some(parse_bool(t, origin)?),
            "rwmix" => {
                let p: i64 = parse_int(t, origin, "a percentage")?;
                if !(0..=100).contains(&p) {
                    return Err(WorkloadError::invalid(
                        origin,
                        format!("rwmix {p} is outside 0–100: it is the percentage of reads in randrw"),
                    ));
                }
                self.rwmix = Some(p as u8);
            }
            "stride" => {
                let s: u64 = parse_int(t, origin, "a whole number of records")?;
                if s == 0 {
                    return Err(WorkloadError::invalid(origin, "stride 0: expected 1 or more records"));
                }
                self.stride = Some(s);
            }
            "interval" => {
                let d = parse_duration(t, origin)?;
                if d.0 < 10_000_000 {
                    return Err(WorkloadError::invalid(
                        origin,
                        format!("interval {d} is too short: expected 10ms or more"),
                    ));
                }
                self.interval = Some(d);
            }
            "late_after" => self.late_after = Some(parse_duration(t, origin)?),
            "seed" => self.seed = Some(parse_int(t, origin, "a whole number")?),
            other => {
                let keys: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                return Err(WorkloadError::invalid(
                    origin,
                    format!(
                        "unknown key '{other}': expected one of name, target, phase, {}",
                        keys.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Sets every field that `top` has, keeping ours where `top` has none.
    pub fn overlay(&mut self, top: &Settings) {
        macro_rules! take {
            ($($f:ident),*) => { $( if top.$f.is_some() { self.$f = top.$f.clone(); } )* };
        }
        take!(
            threads,
            size,
            bs,
            engine,
            iodepth,
            iodepth_batch,
            iovecs,
            direct,
            sync,
            fsync,
            fsync_timed,
            close_timed,
            runtime,
            ramp,
            rate,
            rate_per_worker,
            pattern,
            verify,
            rwmix,
            stride,
            interval,
            late_after,
            seed
        );
    }
}

fn parse_duration(t: &str, origin: &str) -> Result<Duration, WorkloadError> {
    t.parse::<Duration>()
        .map_err(|e| WorkloadError::invalid(origin, e.to_string()))
}

/// "4k" or "4k:70,64k:30" (weights are relative).
fn parse_bs(t: &str, origin: &str) -> Result<BlockSizes, WorkloadError> {
    let check = |b: u64| {
        if b == 0 {
            Err(WorkloadError::invalid(origin, "block size 0: expected e.g. 4k"))
        } else if b > u32::MAX as u64 / 2 {
            Err(WorkloadError::invalid(
                origin,
                format!("block size {} is too large: at most 1GiB per I/O", Size(b)),
            ))
        } else {
            Ok(b)
        }
    };
    if !t.contains(':') && !t.contains(',') {
        return Ok(BlockSizes::Fixed(check(parse_size(t, origin)?)?));
    }
    let mut mix = Vec::new();
    for part in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, weight) = part.split_once(':').unwrap_or((part, "1"));
        let w: u32 = weight
            .trim()
            .trim_end_matches('%')
            .parse()
            .map_err(|_| WorkloadError::invalid(origin, format!("'{part}' is not size:weight (e.g. 4k:70)")))?;
        mix.push((check(parse_size(size, origin)?)?, w));
    }
    if mix.iter().all(|(_, w)| *w == 0) {
        return Err(WorkloadError::invalid(
            origin,
            "every weight of the block-size mix is 0",
        ));
    }
    Ok(if mix.len() == 1 {
        BlockSizes::Fixed(mix[0].0)
    } else {
        BlockSizes::Mix(mix)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_errors() {
        let mut s = Settings::default();
        s.apply_str("bs", "4k:70,64k:30", "--bs").unwrap();
        assert_eq!(s.bs, Some(BlockSizes::Mix(vec![(4096, 70), (65536, 30)])));
        s.apply_str("rate", "20000iops", "--rate").unwrap();
        s.apply_str("fsync", "16", "--fsync").unwrap();
        assert_eq!(s.fsync, Some(FsyncPolicy::Every(16)));
        s.apply_str("rate-per", "worker", "--rate-per").unwrap();
        assert_eq!(s.rate_per_worker, Some(true));
        s.apply_str("pattern", "compress:50", "--pattern").unwrap();
        assert_eq!(s.pattern, Some(DataPattern::Compressible(50)));
        for (k, v, needle) in [
            ("rwmix", "101", "0–100"),
            ("threads", "0", "at least 1"),
            ("engine", "aio", "io_uring"),
            ("size", "12q", "12q"),
            ("iodepth", "0", "1 to 4096"),
            ("iodepth_batch", "0", "1 to 4096"),
            ("pattern", "compress:300", "compress:NN"),
        ] {
            let e = s.clone().apply_str(k, v, &format!("--{k}")).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains(&format!("--{k}")), "{k}={v}: {e}");
        }
    }
}
