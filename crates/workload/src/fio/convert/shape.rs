//! The shape of a job's I/O: fio's rw (with its holes, backward reads and sequencer), the block
//! sizes (bs, bsrange, bssplit, ba), the read share of a mix, and how random offsets are drawn.

use storlab_model::plan::PhaseKind;
use storlab_model::values::BlockSizes;
use storlab_units::Size;

use super::super::value;
use super::{set, Conversion, Opts};
use crate::WorkloadError;

/// rw with the block sizes: a phase that only reads takes the reads' block size, and a
/// backward read is one whose skip is twice its block.
pub(crate) fn access(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let (kind, hole) = pattern(j, cx)?;
    let (bs, fixed) = block_sizes(j, kind)?;
    cx.kind = kind;
    cx.fixed_bs = fixed;
    set!(cx, "bs", bs = bs)?;
    if let Some(ba) = j.int("ba")? {
        if fixed != Some(ba) {
            set!(cx, "ba", align = ba)?;
        }
    }
    // fio's rw=write:N: the hole after each I/O.
    if hole > 0 {
        set!(cx, "rw", hole = hole)?;
    }
    Ok(())
}

/// The phase kind of `rw` (with `percentage_random`, `rw_sequencer`), and the hole after each
/// sequential I/O (`rw=write:N`; 0 without).
fn pattern(j: Opts, cx: &mut Conversion) -> Result<(PhaseKind, u64), WorkloadError> {
    let rw = j.val("rw").unwrap_or("read");
    cx.rw = rw.to_string();
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
            return Err(j.refuse("rw", "trims: storlab's engine issues reads and writes only"))
        }
        _ => {
            const RW: &[&str] = &[
                "read",
                "write",
                "randread",
                "randwrite",
                "randrw",
                "rw",
                "trim",
                "randtrim",
                "trimwrite",
            ];
            let near = storlab_model::names::did_you_mean(p, RW.iter().copied());
            return Err(j.refuse(
                "rw",
                format!("no such rw{near}; fio's rw is read, write, randread, randwrite, randrw, rw, trim, randtrim or trimwrite"),
            ));
        }
    };
    let (kind, hole) = with_skip(j, cx, kind, rw, skip)?;
    if let Some(p) = j.int("percentage_random")? {
        let random = matches!(kind, PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw);
        if !((random && p == 100) || (!random && p == 0)) {
            return Err(j.refuse(
                "percentage_random",
                "a mix of sequential and random offsets: storlab's phase is one or the other",
            ));
        }
    }
    if let Some(s) = j.val("rw_sequencer") {
        if s != "sequential" {
            return Err(j.refuse("rw_sequencer", "repeating offsets: storlab gives each I/O a new one"));
        }
    }
    Ok((kind, hole))
}

/// `rw=KIND:N`: a sequential write or read leaving N out after each I/O, or (`read:-N`, N
/// twice the block) a backward read.
fn with_skip(
    j: Opts,
    cx: &mut Conversion,
    kind: PhaseKind,
    rw: &str,
    skip: Option<&str>,
) -> Result<(PhaseKind, u64), WorkloadError> {
    match skip {
        None | Some("") => Ok((kind, 0)),
        Some(k) if kind == PhaseKind::Read && k.starts_with('-') => {
            let bs = block_sizes(j, PhaseKind::Read).ok().and_then(|b| b.1);
            if bs.is_some_and(|b| value::bytes(&k[1..], j.kb()).ok() == Some(2 * b)) {
                cx.note(format!("rw={rw} reads backwards block by block: storlab's backread"));
                Ok((PhaseKind::Backread, 0))
            } else {
                Err(j.refuse(
                    "rw",
                    "a backward read with holes: storlab reads backwards block by block (read:-N with N twice bs)",
                ))
            }
        }
        Some(k) if matches!(kind, PhaseKind::Read | PhaseKind::Write) && !k.starts_with('-') => {
            let hole = value::bytes(k, j.kb()).map_err(|e| j.refuse("rw", e))?;
            if hole > 0 {
                cx.note(format!("rw={rw} leaves {} out after each I/O: storlab's hole", Size(hole)));
            }
            Ok((kind, hole))
        }
        Some(_) => Err(j.refuse(
            "rw",
            "several I/Os per random offset, a mixed job with holes, or a backward write: storlab's random I/Os are each at a new offset and its holes are in sequential reads and writes",
        )),
    }
}

/// The block sizes of a job for a phase of `kind`, and the one size when it is fixed: fio's
/// `bs`, `bsrange` and `bssplit` each take `read,write,trim` parts; a phase that only reads
/// (or only writes) takes its own part.
fn block_sizes(j: Opts, kind: PhaseKind) -> Result<(BlockSizes, Option<u64>), WorkloadError> {
    let part = |key: &str| -> Result<Option<String>, WorkloadError> {
        let Some(text) = j.val(key) else { return Ok(None) };
        let t = value::triple(text);
        let (r, w) = (t[0].map(str::to_string), t[1].map(str::to_string));
        Ok(match (kind.reads(), kind.writes()) {
            (true, false) => r,
            (false, true) => w,
            _ => {
                if r != w && r.is_some() && w.is_some() {
                    return Err(j.refuse(key, "different sizes for reads and writes in one mixed job: storlab's phase has one block size (or mix) for both"));
                }
                r.or(w)
            }
        })
    };
    if let Some(t) = part("bssplit")? {
        return Ok((split_mix(j, &t)?, None));
    }
    if let Some(t) = part("bsrange")? {
        return range_mix(j, &t);
    }
    let b = match part("bs")? {
        Some(x) => j.bytes("bs", &x)?,
        None => 4096,
    };
    if b == 0 {
        return Err(j.refuse("bs", "a block size of 0"));
    }
    Ok((BlockSizes::Fixed(b), Some(b)))
}

/// fio's bssplit `SIZE/PCT:SIZE/PCT:…` as storlab's weighted mix: fio spreads what the given
/// percentages leave over the blank ones.
fn split_mix(j: Opts, t: &str) -> Result<BlockSizes, WorkloadError> {
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
    let rest = 100u64.saturating_sub(given);
    mix_of(
        parts
            .iter()
            .map(|(b, p)| (*b, p.unwrap_or(rest / blank.max(1))))
            .collect(),
        j,
        "bssplit",
    )
}

/// fio's bsrange `LO-HI`: fio draws a length uniformly from [lo, hi] and aligns it down to lo
/// (a power of 2): every multiple of lo up to hi, equally likely but for hi itself.
fn range_mix(j: Opts, t: &str) -> Result<(BlockSizes, Option<u64>), WorkloadError> {
    let (lo, hi) = value::size_range(t, j.kb()).map_err(|e| j.refuse("bsrange", e))?;
    if lo == 0 {
        return Err(j.refuse("bsrange", "a block size of 0"));
    }
    if lo == hi {
        return Ok((BlockSizes::Fixed(lo), Some(lo)));
    }
    let steps = hi / lo;
    if steps > 1024 {
        return Err(j.refuse(
            "bsrange",
            format!("{steps} block sizes between the bounds: storlab's mix takes at most 1024 (raise the lower bound)"),
        ));
    }
    let mix: Vec<(u64, u64)> = if steps == 1 {
        vec![(lo, 1)]
    } else {
        (1..=steps).map(|k| (k * lo, if k == steps { 1 } else { lo })).collect()
    };
    Ok((mix_of(mix, j, "bsrange")?, None))
}

/// (size, weight) pairs as storlab's block sizes: one pair is a fixed size.
fn mix_of(pairs: Vec<(u64, u64)>, j: Opts, key: &str) -> Result<BlockSizes, WorkloadError> {
    let mut mix = Vec::with_capacity(pairs.len());
    for (b, w) in pairs {
        let w = u32::try_from(w).map_err(|_| j.refuse(key, format!("a weight of {w}")))?;
        mix.push((b, w));
    }
    if mix.iter().all(|(_, w)| *w == 0) {
        return Err(j.refuse(key, "every weight is 0"));
    }
    Ok(if mix.len() == 1 {
        BlockSizes::Fixed(mix[0].0)
    } else {
        BlockSizes::Mix(mix)
    })
}

/// The read share of a mixed job.
pub(crate) fn mix(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let read_share = match (j.val("rwmixread"), j.val("rwmixwrite")) {
        (Some(m), _) => Some(("rwmixread", j.bytes("rwmixread", m)?)),
        (None, Some(m)) => Some(("rwmixwrite", 100u64.saturating_sub(j.bytes("rwmixwrite", m)?))),
        _ => None,
    };
    if let Some((by, pct)) = read_share {
        let pct = u8::try_from(pct).map_err(|_| j.refuse(by, "expected a percentage from 0 to 100"))?;
        set!(cx, by, rwmix = pct)?;
    }
    Ok(())
}

/// Random offsets: fio's random map (its default) visits every block once per pass;
/// norandommap draws each offset anew, and so does a non-uniform distribution.
pub(crate) fn random(j: Opts, cx: &mut Conversion) -> Result<(), WorkloadError> {
    let random = matches!(cx.kind, PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw);
    if random {
        let mut map = !j.on("norandommap")?;
        match j.val("random_generator") {
            None | Some("tausworthe") | Some("tausworthe64") => {}
            Some("lfsr") => {
                if !map {
                    cx.note("random_generator=lfsr visits each block once per pass whatever norandommap says: storlab's random map does the same");
                }
                map = true;
            }
            Some(g) => {
                return Err(j.refuse(
                    "random_generator",
                    format!("'{g}': fio's generators are tausworthe, lfsr and tausworthe64"),
                ))
            }
        }
        match j.val("random_distribution") {
            None | Some("random") => set!(cx, "norandommap", random_map = map)?,
            Some(d) if d.starts_with("zoned_abs:") || d.starts_with("zoned_abs=") => {
                // fio's sizes (its kb_base rule) in zones of absolute size from the start; a
                // non-uniform distribution draws without the random map, as fio's.
                let zones = &d["zoned_abs:".len()..];
                let kb = j.job.kb;
                let dist = storlab_model::settings::read_zoned_abs(d, zones, |t| value::bytes(t, kb))
                    .map_err(|e| j.refuse("random_distribution", e))?;
                set!(cx, "random_distribution", random_map = false, distribution = dist)?;
            }
            Some(d) => {
                // fio's spellings: zoned:…, zipf[:THETA], pareto[:H], normal[:DEV], gauss[:DEV],
                // the value defaulting as fio's does (zipf 1.1, pareto 0.2, normal 0).
                let d = match d {
                    "zipf" => "zipf:1.1",
                    "pareto" => "pareto:0.2",
                    "normal" | "gauss" => "normal:0",
                    d => d,
                };
                let dist =
                    storlab_model::settings::read_distribution(d).map_err(|e| j.refuse("random_distribution", e))?;
                // fio draws a non-uniform distribution without its random map.
                set!(cx, "random_distribution", random_map = false, distribution = dist)?;
            }
        }
    }
    if let Some(seed) = j.int("randseed")? {
        set!(cx, "randseed", seed = seed)?;
    }
    Ok(())
}
