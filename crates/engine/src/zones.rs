//! fio's zonemode=zbd where the file or device has no zones of its own (fio's zbd.c with
//! ZBD_NONE, which fio uses for every regular file and every device that is not zoned): zones
//! of a fixed size emulated over the whole file, each with a write pointer. A write goes to its
//! zone's write pointer, a full zone reset first (and counted, fio's zone resets); a read finds
//! written data only, in its own zone or the nearest that has some, unless `read_beyond_wp`.
//! The write pointers are the run's: its phases share them through the caller's
//! [`crate::PhaseControl`], as fio's jobs share one file's zone information, and start empty,
//! as fio's emulated zones do.

use std::collections::HashMap;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use storlab_model::settings::Zbd;

use crate::backend::Op;
use crate::plan::{PhaseKind, PhasePlan, WorkerFile};
use crate::worker::NextIo;
use crate::EngineError;

/// The emulated zones of a run's files, by path.
#[derive(Debug, Default)]
pub(crate) struct ZoneMaps(Mutex<HashMap<PathBuf, Arc<ZoneMap>>>);

/// One file's emulated zones: each zone's written bytes (its write pointer less its start).
#[derive(Debug)]
pub(crate) struct ZoneMap {
    zbd: Zbd,
    /// The file's length: the last zone may be shorter.
    len: u64,
    written: Box<[AtomicU64]>,
    /// The bytes with data over all zones (fio's sectors_with_data).
    data: AtomicU64,
}

impl ZoneMaps {
    /// The zones of the file at `path`, `len` bytes long: made on first use, shared after.
    fn of(&self, path: &Path, len: u64, zbd: Zbd) -> Result<Arc<ZoneMap>, String> {
        let mut maps = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = maps.get(path).filter(|m| m.zbd.size == zbd.size) {
            return Ok(m.clone());
        }
        if len < zbd.size {
            // fio's words ("file/device size 0 is smaller than zone size 1048576"): a new file
            // has no zones until something else gives it a length.
            return Err(format!("file/device size {len} is smaller than zone size {}", zbd.size));
        }
        let zones = len.div_ceil(zbd.size) as usize;
        let map = Arc::new(ZoneMap {
            zbd,
            len,
            written: (0..zones).map(|_| AtomicU64::new(0)).collect(),
            data: AtomicU64::new(0),
        });
        maps.insert(path.to_path_buf(), map.clone());
        Ok(map)
    }
}

impl ZoneMap {
    fn start(&self, zone: usize) -> u64 {
        zone as u64 * self.zbd.size
    }

    /// Where writes in `zone` must end: its capacity, or the file's end.
    fn capacity_end(&self, zone: usize) -> u64 {
        (self.start(zone) + self.zbd.capacity).min(self.len)
    }

    fn write_pointer(&self, zone: usize) -> u64 {
        self.start(zone) + self.written[zone].load(Ordering::Acquire)
    }
}

/// A worker's view of one of its files' zones: the zones of its region, and for sequential
/// I/O where each direction goes on from (fio's last_pos: the place after the I/O as moved,
/// not as drawn).
struct FileZones {
    map: Arc<ZoneMap>,
    /// The worker's region: its start and end.
    region: (u64, u64),
    first: usize,
    end: usize,
    next: [Option<u64>; 2],
    last_drawn: [u64; 2],
}

/// A worker's zones on each of its files and what it has done to them.
pub(crate) struct WorkerZones {
    files: Vec<FileZones>,
    random: bool,
    /// The pattern goes round its region again (time-based, or loops).
    wraps: bool,
    mixed: bool,
    beyond_wp: bool,
    min_bs: u64,
    /// Zones this worker reset (fio's nr_zone_resets).
    pub(crate) resets: u64,
}

impl WorkerZones {
    /// The zones of each of `wf`'s files, or None without zbd; made before the worker opens
    /// (and may create) its files, so that a refusal leaves nothing behind.
    pub(crate) fn new(plan: &PhasePlan, wf: &WorkerFile, maps: &ZoneMaps) -> Result<Option<WorkerZones>, EngineError> {
        let Some(zbd) = plan.settings.zbd else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for region in wf.regions() {
            // The length of a device as of a file: seeking to its end gives both.
            let fail = |why: String| EngineError::Zones {
                path: region.path.display().to_string(),
                why,
                source: std::io::Error::from_raw_os_error(libc::EINVAL),
            };
            // A file this write phase makes (or truncates) has no length: fio makes its zones
            // before it lays a new file out, and finds none. The length of a device as of a
            // file: seeking to its end gives both.
            let made_now = region.owned && plan.kind == PhaseKind::Write;
            let len = match std::fs::File::open(region.path) {
                Ok(mut f) if !made_now => f.seek(SeekFrom::End(0)).map_err(|e| fail(e.to_string()))?,
                _ => 0,
            };
            if let Some(model) = zoned_model(region.path) {
                return Err(fail(format!("is a {model} zoned device: storlab emulates zones where a device has none, and would write where this one refuses; run fio itself on it")));
            }
            let map = maps.of(region.path, len, zbd).map_err(fail)?;
            let first = (region.offset / zbd.size) as usize;
            let end = ((region.offset + region.len).div_ceil(zbd.size) as usize).clamp(first + 1, map.written.len());
            out.push(FileZones {
                map,
                region: (region.offset, region.offset + region.len),
                first,
                end,
                next: [None; 2],
                last_drawn: [0; 2],
            });
        }
        Ok(Some(WorkerZones {
            files: out,
            random: matches!(
                plan.kind,
                PhaseKind::Randread | PhaseKind::Randwrite | PhaseKind::Randrw
            ),
            wraps: plan.settings.runtime.is_some() || plan.settings.loops > 1,
            mixed: plan.kind.reads() && plan.kind.writes(),
            beyond_wp: plan.settings.read_beyond_wp,
            min_bs: plan.settings.bs.min(),
            resets: 0,
        }))
    }

    /// The I/O drawn, moved where the zones allow it (fio's zbd_adjust_ddir and
    /// zbd_adjust_block): a write to its zone's write pointer, a read within written data.
    /// None where there is nothing more to do (fio's io_u_eof: the worker's pass ends there).
    pub(crate) fn adjust(&mut self, mut io: NextIo) -> Option<NextIo> {
        let (random, wraps) = (self.random, self.wraps);
        let fz = &mut self.files[io.file];
        // A mixed job's read with nothing written anywhere becomes a write, so that there is
        // data to read (fio's zbd_adjust_ddir, before fio draws the offset: the read's place
        // stays where it was, and the write goes on from the writes' place).
        let to_write = io.op == Op::Read && self.mixed && !self.beyond_wp && fz.map.data.load(Ordering::Acquire) == 0;
        if !random {
            io.offset = fz.place(io.op, io.offset, wraps)?;
        }
        if to_write {
            io.op = Op::Write;
            if !random {
                io.offset = fz.next[1].unwrap_or(fz.region.0);
            }
        }
        if !random && io.op == Op::Write {
            // A sequential write at a zone's capacity goes on at the next zone (fio's
            // setup_zbd_zone_mode); the bytes passed over count as done.
            io.offset = fz.past_capacity(io.offset);
            if io.offset >= fz.region.1 {
                if !wraps {
                    return None;
                }
                io.offset = fz.region.0;
            }
        }
        let moved = match io.op {
            Op::Read if self.beyond_wp => Some(io),
            Op::Read => fz.read(io, random, self.min_bs),
            Op::Write => fz.write(io, self.min_bs, &mut self.resets),
        }?;
        if !random {
            fz.next[usize::from(moved.op == Op::Write)] = Some(moved.offset + moved.len);
        }
        Some(moved)
    }
}

/// A block device's own zone model (`host-managed`, `host-aware`), None for any other file.
fn zoned_model(path: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(path)
        .ok()
        .filter(|m| m.file_type().is_block_device())?;
    let (major, minor) = (libc::major(m.rdev()), libc::minor(m.rdev()));
    let model = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/queue/zoned")).ok()?;
    Some(model.trim().to_string()).filter(|m| m != "none")
}

impl FileZones {
    /// Where a sequential direction's next I/O goes: after its last one as moved, unless the
    /// pattern began a new pass (its offset drawn behind the last). None past the region's
    /// end when the pattern does not go round.
    fn place(&mut self, op: Op, drawn: u64, wraps: bool) -> Option<u64> {
        let d = usize::from(op == Op::Write);
        if drawn < self.last_drawn[d] {
            self.next[d] = None;
        }
        self.last_drawn[d] = drawn;
        let at = *self.next[d].get_or_insert(drawn);
        if at < self.region.1 {
            return Some(at);
        }
        self.next[d] = None;
        wraps.then_some(drawn)
    }

    /// `offset`, or the next zone's start where it lies at or past its zone's capacity.
    fn past_capacity(&self, offset: u64) -> u64 {
        let zone = (offset / self.map.zbd.size) as usize;
        if zone < self.map.written.len() && offset >= self.map.capacity_end(zone) {
            self.map.start(zone + 1)
        } else {
            offset
        }
    }

    fn zone_of(&self, offset: u64) -> usize {
        ((offset / self.map.zbd.size) as usize).clamp(self.first, self.end - 1)
    }

    /// A write at its zone's write pointer, the zone reset first when a block no longer fits;
    /// None in a zone too short for a block (the file's last, cut by its end).
    fn write(&self, mut io: NextIo, min_bs: u64, resets: &mut u64) -> Option<NextIo> {
        let zone = self.zone_of(io.offset);
        let (map, start) = (&self.map, self.map.start(zone));
        let room = map.capacity_end(zone).saturating_sub(start);
        if room < min_bs {
            return None;
        }
        loop {
            let written = map.written[zone].load(Ordering::Acquire);
            if written + min_bs > room {
                if map.written[zone]
                    .compare_exchange(written, 0, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    map.data.fetch_sub(written, Ordering::AcqRel);
                    *resets += 1;
                }
                continue;
            }
            let len = io.len.min(room - written) / min_bs * min_bs;
            if map.written[zone]
                .compare_exchange(written, written + len, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                map.data.fetch_add(len, Ordering::AcqRel);
                io.offset = start + written;
                io.len = len;
                return Some(io);
            }
        }
    }

    /// A read within written data: in its own zone when that holds a block (for sequential
    /// I/O, one at or after the offset), else in the next zone that does (sequential) or the
    /// nearest one either way (random); kept within the written part, its length cut to it.
    fn read(&self, mut io: NextIo, random: bool, min_bs: u64) -> Option<NextIo> {
        let map = &self.map;
        let drawn_zone = self.zone_of(io.offset);
        let mut zone = drawn_zone;
        let mut range = map.written[zone].load(Ordering::Acquire);
        if range < min_bs || (!random && io.offset + min_bs > map.write_pointer(zone)) {
            zone = self.zone_with_data(zone, random, min_bs)?;
            range = map.written[zone].load(Ordering::Acquire);
            if !random {
                io.offset = map.start(zone);
            }
        }
        let start = map.start(zone);
        if range <= io.len {
            io.offset = start;
        } else if random {
            let drawn_in = io.offset.saturating_sub(map.start(drawn_zone));
            io.offset = start + drawn_in % (range - io.len) / min_bs * min_bs;
        }
        io.len = io.len.min(start + range - io.offset) / min_bs * min_bs;
        (io.len > 0).then_some(io)
    }

    /// fio's zbd_find_zone: the next zone after `from` with a block written (sequential), or
    /// the nearest one on either side, after first (random).
    fn zone_with_data(&self, from: usize, random: bool, min_bs: u64) -> Option<usize> {
        let has = |z: usize| self.map.written[z].load(Ordering::Acquire) >= min_bs;
        let (mut after, mut before) = (from + 1, from.checked_sub(1));
        while after < self.end || before.is_some_and(|b| b >= self.first) {
            if after < self.end {
                if has(after) {
                    return Some(after);
                }
            } else if !random {
                return None;
            }
            if random {
                if let Some(b) = before.filter(|b| *b >= self.first) {
                    if has(b) {
                        return Some(b);
                    }
                }
            }
            after += 1;
            before = before.and_then(|b| b.checked_sub(1));
        }
        None
    }
}
