//! The rules every phase is held to before anything runs, one small function each in one
//! table: pure checks of a phase's settings against its kind and its files' size, testable
//! without a disk. Each says what was wrong and what would be right.

use storlab_model::plan::{BackendKind, BlockSizes, PhaseKind, VERIFY_BLOCK};
use storlab_units::{Duration, Size};

use crate::PhaseSettings;

/// What a rule looks at: the phase's kind and settings, the smallest region one of its
/// workers has, and whether the job verifies anywhere (so that every block carries a header).
pub(crate) struct PhaseFacts<'a> {
    pub(crate) kind: PhaseKind,
    pub(crate) e: &'a PhaseSettings,
    pub(crate) region: u64,
    pub(crate) any_verify: bool,
}

/// A rule: None when the phase keeps it, else what is wrong and what would be right.
type Rule = fn(&PhaseFacts) -> Option<String>;

/// The rules, in the order their refusals are said.
pub(crate) const PHASE_RULES: &[Rule] = &[
    bs_fits_the_file,
    sequential_passes_end_on_a_block,
    depth_needs_an_asynchronous_engine,
    iovecs_need_pvsync,
    iovecs_divide_the_block,
    stdio_has_no_direct,
    mmap_has_no_direct,
    direct_blocks_are_sector_multiples,
    verified_blocks_are_4k_multiples,
    verified_randrw_is_one_deep,
    cmdprio_needs_an_asynchronous_engine,
    userspace_reap_needs_libaio,
    dedupe_needs_unique_data,
    holes_and_strides_are_sequential,
    steady_state_needs_two_samples,
    batch_fits_the_depth,
    a_skew_draws_anew,
    absolute_zones_fit_the_region,
    emulated_zones_take_whole_blocks,
    emulated_zones_are_not_verified,
];

/// fio's zonemode=zbd: a block larger than a zone is refused ("I/O buflen exceeds zone
/// size"), and a zone's capacity must end on a block, or its last write would be cut short
/// below the smallest block ("zone remainder too small"); fio finds both as the job runs,
/// storlab before.
fn emulated_zones_take_whole_blocks(f: &PhaseFacts) -> Option<String> {
    let z = f.e.zbd?;
    if f.e.bs.max() > z.size {
        return Some(format!(
            "bs {} is larger than a zone ({}): a write goes within one zone; make bs at most the zone size",
            Size(f.e.bs.max()),
            Size(z.size)
        ));
    }
    (!z.capacity.is_multiple_of(f.e.bs.min())).then(|| {
        format!(
            "a zone's capacity ({}) is not a multiple of the smallest block ({}): its last write would be cut below a block; make it a multiple",
            Size(z.capacity),
            Size(f.e.bs.min())
        )
    })
}

/// Writes go to each zone's write pointer, not to the offsets drawn, so storlab's verify (each
/// block's offset in its header) has nothing to check them against.
fn emulated_zones_are_not_verified(f: &PhaseFacts) -> Option<String> {
    (f.e.zbd.is_some() && f.any_verify).then(|| {
        "verify with emulated zones (zbd): writes go to the zones' write pointers, not where the blocks were drawn, so storlab's headers cannot be checked; verify without zbd".to_string()
    })
}

/// fio's zoned_abs zones lie within the region (fio stops a job whose zones pass the file's
/// end: "zoned_abs sizes exceed file size").
fn absolute_zones_fit_the_region(f: &PhaseFacts) -> Option<String> {
    let storlab_model::settings::Distribution::ZonedAbs(z) = &f.e.distribution else {
        return None;
    };
    let total: u64 = z.iter().map(|(_, b)| *b).sum();
    (total > f.region).then(|| {
        format!(
            "the zones of distribution = \"zoned_abs:…\" add up to {}, more than the region of {}: make them fit, or the size larger",
            Size(total),
            Size(f.region)
        )
    })
}

/// A distribution other than uniform draws each offset anew: a random map, which visits every
/// block once per pass, would undo it.
fn a_skew_draws_anew(f: &PhaseFacts) -> Option<String> {
    (f.e.random_map && f.e.distribution != storlab_model::settings::Distribution::Uniform).then(|| {
        format!(
            "distribution = \"{}\" draws every offset anew, which random_map = true (every block once per pass) would undo: leave random_map out or set it false",
            storlab_model::settings::SettingText::text(&f.e.distribution)
        )
    })
}

/// The first rule the phase breaks, if any.
pub(crate) fn broken(f: &PhaseFacts) -> Option<String> {
    PHASE_RULES.iter().find_map(|rule| rule(f))
}

/// The first block size of the phase that `bad` finds wrong.
fn first_bad(bs: &BlockSizes, bad: impl Fn(u64) -> bool) -> Option<u64> {
    match bs {
        BlockSizes::Fixed(b) => bad(*b).then_some(*b),
        BlockSizes::Mix(m) => m.iter().map(|(b, _)| *b).find(|b| bad(*b)),
    }
}

fn bs_fits_the_file(f: &PhaseFacts) -> Option<String> {
    (f.e.bs.max() > f.region).then(|| {
        format!(
            "bs {} is larger than the file size {}: make bs at most the size, or size at least the bs",
            Size(f.e.bs.max()),
            Size(f.region)
        )
    })
}

fn sequential_passes_end_on_a_block(f: &PhaseFacts) -> Option<String> {
    let passes = f.e.runtime.is_none()
        && matches!(
            f.kind,
            PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread | PhaseKind::Backread
        );
    // A pass of io_size bytes that ends on a block within the region never reaches its tail.
    let ends_on_a_block = |b: u64| match f.e.io_size {
        Some(io) => io.is_multiple_of(b) && (io <= f.region || f.region.is_multiple_of(b)),
        None => f.region.is_multiple_of(b),
    };
    match f.e.bs {
        BlockSizes::Fixed(b) if passes && !ends_on_a_block(b) => {
            // The size to change: io_size when it is the one off the block, else the file's.
            let (what, off) = match f.e.io_size {
                Some(io) if !io.is_multiple_of(b) => ("io_size", io),
                _ => ("the file size", f.region),
            };
            Some(format!(
                "{what} {} is not a multiple of bs {}: the last block would be partial; choose a multiple of {}, such as {}",
                Size(off),
                Size(b),
                Size(b),
                nearest_multiples(off, b)
            ))
        }
        _ => None,
    }
}

/// The multiples of `b` either side of `n` (which is not one), as a size would be written.
fn nearest_multiples(n: u64, b: u64) -> String {
    let below = n / b * b;
    let above = below + b;
    if below == 0 {
        Size(above).to_string()
    } else {
        format!("{} or {}", Size(below), Size(above))
    }
}

fn depth_needs_an_asynchronous_engine(f: &PhaseFacts) -> Option<String> {
    (f.e.iodepth > f.e.engine.max_depth()).then(|| {
        format!(
            "iodepth {} needs an asynchronous back-end: {} does one I/O at a time per worker; use engine = \"io_uring\" or \"libaio\", or iodepth = 1",
            f.e.iodepth,
            f.e.engine.name()
        )
    })
}

fn iovecs_need_pvsync(f: &PhaseFacts) -> Option<String> {
    (f.e.iovecs > 1 && f.e.engine != BackendKind::Pvsync).then(|| {
        format!(
            "iovecs {} needs engine = \"pvsync\" (preadv/pwritev); {} does one buffer per I/O",
            f.e.iovecs,
            f.e.engine.name()
        )
    })
}

fn iovecs_divide_the_block(f: &PhaseFacts) -> Option<String> {
    let n = f.e.iovecs as u64;
    (n > 1 && (!f.e.bs.min().is_multiple_of(n) || !f.e.bs.max().is_multiple_of(n)))
        .then(|| format!("bs must divide into iovecs {} equal buffers", f.e.iovecs))
}

fn stdio_has_no_direct(f: &PhaseFacts) -> Option<String> {
    (f.e.direct && f.e.engine == BackendKind::Stdio).then(|| {
        "direct with engine stdio: a stdio stream's own buffer cannot meet O_DIRECT's alignment; use psync".into()
    })
}

fn mmap_has_no_direct(f: &PhaseFacts) -> Option<String> {
    (f.e.direct && f.e.engine == BackendKind::Mmap).then(|| {
        "direct = true cannot work with the mmap back-end (a mapping always goes through the page cache): use psync or io_uring".into()
    })
}

fn direct_blocks_are_sector_multiples(f: &PhaseFacts) -> Option<String> {
    if !f.e.direct {
        return None;
    }
    first_bad(&f.e.bs, |b| b % 512 != 0).map(|b| {
        format!(
            "O_DIRECT needs block sizes that are multiples of the device's logical block size (512 or 4096 bytes); bs {} is not",
            Size(b)
        )
    })
}

fn verified_blocks_are_4k_multiples(f: &PhaseFacts) -> Option<String> {
    if !f.any_verify {
        return None;
    }
    first_bad(&f.e.bs, |b| b % VERIFY_BLOCK != 0).map(|b| {
        format!(
            "verification stamps every 4 KiB, so every bs must be a multiple of 4KiB; bs {} is not",
            Size(b)
        )
    })
}

fn verified_randrw_is_one_deep(f: &PhaseFacts) -> Option<String> {
    (f.e.verify && f.kind == PhaseKind::Randrw && f.e.iodepth > 1).then(|| {
        "verify on randrw needs iodepth 1: a read and a write of the same block in flight together have no defined result".into()
    })
}

fn cmdprio_needs_an_asynchronous_engine(f: &PhaseFacts) -> Option<String> {
    (f.e.cmdprio.is_some() && !f.e.engine.is_async()).then(|| {
        format!(
            "cmdprio needs engine io_uring or libaio: only their requests carry a priority of their own ({} runs every I/O at the worker's; `priority` sets that)",
            f.e.engine.name()
        )
    })
}

fn userspace_reap_needs_libaio(f: &PhaseFacts) -> Option<String> {
    (f.e.userspace_reap && f.e.engine != BackendKind::Libaio).then(|| {
        format!(
            "userspace_reap reads Linux AIO's completion ring: it needs engine = \"libaio\", not {}",
            f.e.engine.name()
        )
    })
}

fn dedupe_needs_unique_data(f: &PhaseFacts) -> Option<String> {
    if f.e.dedupe == 0 {
        return None;
    }
    if f.any_verify {
        return Some("dedupe with verify: every verified 4 KiB carries its own offset, so no two blocks are alike; drop one of them".into());
    }
    (!f.e.pattern.unique_per_block()).then(|| {
        "dedupe with a pattern of zeros or fixed bytes: every block is already the same; use random or compress:NN data".into()
    })
}

fn holes_and_strides_are_sequential(f: &PhaseFacts) -> Option<String> {
    let sequential = matches!(
        f.kind,
        PhaseKind::Write | PhaseKind::Rewrite | PhaseKind::Read | PhaseKind::Reread
    );
    ((f.e.hole > 0 || f.e.strided.is_some()) && !sequential).then(|| {
        format!(
            "hole and strided place sequential I/O: a {} phase has none (use them with write, rewrite, read or reread)",
            f.kind.name()
        )
    })
}

fn steady_state_needs_two_samples(f: &PhaseFacts) -> Option<String> {
    (f.e.steady.is_some() && f.e.steady_window.0 < 2 * f.e.interval.0).then(|| {
        format!(
            "steady needs a steady_window of two sample intervals ({}) or more",
            Duration(2 * f.e.interval.0)
        )
    })
}

fn batch_fits_the_depth(f: &PhaseFacts) -> Option<String> {
    f.e.iodepth_batch.filter(|b| *b > f.e.iodepth).map(|b| {
        format!(
            "iodepth_batch {b} is larger than iodepth {}: a submission cannot hold more I/Os than are in flight",
            f.e.iodepth
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Settings;

    /// The first rule a phase of `kind` with `settings` (a job file's keys) and files of
    /// `region` bytes breaks.
    fn refusal(kind: PhaseKind, settings: &[(&str, &str)], region: u64, any_verify: bool) -> Option<String> {
        let mut s = Settings::default();
        for (k, v) in settings {
            s.apply_str(k, v).unwrap();
        }
        let e = s.resolve();
        broken(&PhaseFacts {
            kind,
            e: &e,
            region,
            any_verify,
        })
    }

    /// A phase's kind, its settings, its files' size, whether the job verifies, and a piece of
    /// the refusal it must get.
    type Case<'a> = (PhaseKind, &'a [(&'a str, &'a str)], u64, bool, &'a str);

    const MIB: u64 = 1 << 20;

    /// A case per rule (two for one): the phase, its settings, its files' size, whether the
    /// job verifies, and a piece of the refusal it must get.
    const CASES: &[Case] = &[
        (
            PhaseKind::Read,
            &[("bs", "2m")],
            MIB,
            false,
            "larger than the file size",
        ),
        (
            PhaseKind::Write,
            &[("bs", "3k")],
            MIB,
            false,
            "not a multiple of bs 3KiB",
        ),
        (
            PhaseKind::Read,
            &[("iodepth", "8")],
            MIB,
            false,
            "needs an asynchronous back-end",
        ),
        (
            PhaseKind::Read,
            &[("iovecs", "4")],
            MIB,
            false,
            "needs engine = \"pvsync\"",
        ),
        (
            PhaseKind::Read,
            &[("iovecs", "3"), ("engine", "pvsync")],
            3 * MIB,
            false,
            "iovecs 3 equal buffers",
        ),
        (
            PhaseKind::Read,
            &[("direct", "true"), ("engine", "stdio")],
            MIB,
            false,
            "stdio",
        ),
        (
            PhaseKind::Read,
            &[("direct", "true"), ("engine", "mmap")],
            MIB,
            false,
            "mmap back-end",
        ),
        (
            PhaseKind::Randread,
            &[("direct", "true"), ("bs", "4k:1,1000:1")],
            MIB,
            false,
            "bs 1000B is not",
        ),
        (PhaseKind::Randread, &[("bs", "2k")], MIB, true, "multiple of 4KiB"),
        (
            PhaseKind::Randrw,
            &[("verify", "true"), ("iodepth", "4"), ("engine", "io_uring")],
            MIB,
            true,
            "iodepth 1",
        ),
        (
            PhaseKind::Randread,
            &[("cmdprio", "20:rt:0")],
            MIB,
            false,
            "cmdprio needs engine io_uring or libaio",
        ),
        (
            PhaseKind::Randread,
            &[("userspace_reap", "true"), ("engine", "io_uring")],
            MIB,
            false,
            "needs engine = \"libaio\", not io_uring",
        ),
        (
            PhaseKind::Randwrite,
            &[("dedupe", "20")],
            MIB,
            true,
            "dedupe with verify",
        ),
        (
            PhaseKind::Randwrite,
            &[("dedupe", "20"), ("pattern", "zeros")],
            MIB,
            false,
            "already the same",
        ),
        (
            PhaseKind::Randread,
            &[("hole", "4k")],
            MIB,
            false,
            "a randread phase has none",
        ),
        (
            PhaseKind::Randread,
            &[("steady", "iops:5%"), ("steady_window", "1s")],
            MIB,
            false,
            "two sample intervals (2s)",
        ),
        (
            PhaseKind::Randread,
            &[("engine", "io_uring"), ("iodepth", "4"), ("iodepth_batch", "8")],
            MIB,
            false,
            "larger than iodepth 4",
        ),
        (
            PhaseKind::Randread,
            &[("distribution", "zipf:1.2"), ("random_map", "true")],
            MIB,
            false,
            "draws every offset anew",
        ),
        (
            PhaseKind::Randread,
            &[("distribution", "zoned_abs:60/512k:40/768k")],
            MIB,
            false,
            "more than the region of 1MiB",
        ),
        (
            PhaseKind::Randwrite,
            &[("zbd", "64k"), ("bs", "128k")],
            MIB,
            false,
            "larger than a zone (64KiB)",
        ),
        (
            PhaseKind::Randwrite,
            &[("zbd", "64k,24k"), ("bs", "16k")],
            MIB,
            false,
            "capacity (24KiB) is not a multiple",
        ),
        (
            PhaseKind::Randread,
            &[("zbd", "64k")],
            MIB,
            true,
            "verify with emulated zones",
        ),
    ];

    #[test]
    fn each_rule_refuses_what_it_names_and_passes_the_rest() {
        // A plain phase keeps every rule.
        assert_eq!(refusal(PhaseKind::Randread, &[], MIB, false), None);
        let cases = CASES;
        for (kind, settings, region, verify, needle) in cases {
            let r = refusal(*kind, settings, *region, *verify);
            assert!(
                r.as_deref().is_some_and(|m| m.contains(needle)),
                "{settings:?}: {r:?}, not '{needle}'"
            );
        }
        // Each rule is reached by a case above.
        assert_eq!(PHASE_RULES.len(), cases.len() - 2);
    }
}
