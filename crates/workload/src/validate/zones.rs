//! fio's zonemode=zbd on a file or device without zones (the engine emulates them): a phase
//! that writes works on whole zones, as fio's zbd_zone_align_file_sizes makes it — a region
//! that starts inside a zone starts at the next, one that ends inside a zone ends at its start.
//! A read works where it is placed.

use std::borrow::Cow;

use storlab_model::plan::{PhaseKind, WorkerFile};
use storlab_units::Size;

use crate::PhaseSettings;

/// The workers of a phase with its regions on whole zones (unchanged without zbd or for a
/// phase that only reads); an error where a region holds no whole zone.
pub(super) fn aligned<'w>(
    kind: PhaseKind,
    e: &PhaseSettings,
    workers: &'w [WorkerFile],
) -> Result<Cow<'w, [WorkerFile]>, String> {
    let Some(z) = e.zbd.filter(|_| kind.writes()) else {
        return Ok(Cow::Borrowed(workers));
    };
    let whole = |offset: u64, len: u64| -> Result<(u64, u64), String> {
        let start = offset.div_ceil(z.size) * z.size;
        let end = (offset + len) / z.size * z.size;
        if end <= start {
            return Err(format!(
                "a region of {} at {} holds no whole zone of {}: a phase that writes works on whole zones, as fio's (\"io_size must be at least one zone\"); make the size at least a zone, from a zone's start",
                Size(len),
                Size(offset),
                Size(z.size)
            ));
        }
        Ok((start, end - start))
    };
    let mut out = workers.to_vec();
    for w in &mut out {
        (w.offset, w.len) = whole(w.offset, w.len)?;
        for m in &mut w.more {
            (m.offset, m.len) = whole(m.offset, m.len)?;
        }
    }
    Ok(Cow::Owned(out))
}
