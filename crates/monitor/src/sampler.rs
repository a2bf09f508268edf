//! One sweep over every series: the disks' counters since the last sweep (from one read of
//! /proc/diskstats), each filesystem's space, each md array's state, each btrfs device's error
//! counters, each NFS mount's figures, and the events between two sweeps — a device gone or
//! back, a counter that wrapped or was reset, a filesystem unmounted or mounted again, an md
//! array's state or sync action changed, a btrfs error counter that grew. Nothing here stops
//! the monitor: what cannot be read this time is an event and a missing sample.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use storlab_env::mounts;
use storlab_model::monitor::{DiskDelta, DiskSample, FsSample, GaugeSample, Level, MonitorEvent, Series};
use storlab_store::Sweep;

use crate::counters::{step, Step};
use crate::pools::{Source, Watch};
use crate::procfs::{self, field, DiskLine};

/// Where the sampler reads the kernel's text files; /proc's and /sys's own by default. The
/// tests point them at files of their own to feed what this machine will not produce in a
/// test's time or at all: a 32-bit counter wrapping, an md array (this kernel has no md
/// driver).
#[derive(Debug, Clone)]
pub struct Files {
    /// /proc/diskstats.
    pub diskstats: PathBuf,
    /// /proc/self/mountstats.
    pub mountstats: PathBuf,
    /// /sys/block (an md array's state is in NAME/md/).
    pub sys_block: PathBuf,
}

impl Default for Files {
    fn default() -> Files {
        Files {
            diskstats: "/proc/diskstats".into(),
            mountstats: "/proc/self/mountstats".into(),
            sys_block: "/sys/block".into(),
        }
    }
}

#[derive(Debug, Default)]
struct DiskState {
    last: Option<[u64; 11]>,
    dev: Option<(u32, u32)>,
    gone: bool,
}

#[derive(Debug, Default)]
struct State {
    disk: DiskState,
    mounted: bool,
    md: Option<(String, String)>,
    btrfs: Option<[u64; 5]>,
    scrubbing: bool,
}

/// The sampler: the series and what it saw last.
pub struct Sampler {
    watches: Vec<Watch>,
    state: Vec<State>,
    files: Files,
}

/// btrfs' error counters, in the order of devinfo/DEVID/error_stats.
pub const BTRFS_ERRORS: [&str; 5] = [
    "write_errs",
    "read_errs",
    "flush_errs",
    "corruption_errs",
    "generation_errs",
];

fn read_trim(p: impl AsRef<std::path::Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// Counters' fields (everything but the in-flight gauge).
const COUNTERS: [usize; 10] = [
    field::READS,
    field::READS_MERGED,
    field::SECTORS_READ,
    field::READ_MS,
    field::WRITES,
    field::WRITES_MERGED,
    field::SECTORS_WRITTEN,
    field::WRITE_MS,
    field::BUSY_MS,
    field::WEIGHTED_MS,
];

const FIELD_NAMES: [&str; 11] = [
    "reads completed",
    "reads merged",
    "sectors read",
    "ms reading",
    "writes completed",
    "writes merged",
    "sectors written",
    "ms writing",
    "in flight",
    "ms busy",
    "weighted ms",
];

fn event(s: &Series, t: f64, kind: &str, detail: String) -> MonitorEvent {
    MonitorEvent {
        t,
        pool: s.pool.clone(),
        name: s.name.clone(),
        kind: kind.into(),
        detail,
    }
}

/// Whether a loop device has lost its backing file (it stays in /proc/diskstats when detached).
fn loop_detached(name: &str) -> bool {
    name.starts_with("loop") && !PathBuf::from(format!("/sys/block/{name}/loop/backing_file")).exists()
}

impl Sampler {
    /// A sampler over `watches`, reading `files`.
    pub fn new(watches: Vec<Watch>, files: Files) -> Sampler {
        let state = watches
            .iter()
            .map(|_| State {
                mounted: true,
                ..State::default()
            })
            .collect();
        Sampler { watches, state, files }
    }

    /// Each disk series and whether it is there now.
    pub fn present(&self) -> Vec<(u32, bool)> {
        self.watches
            .iter()
            .zip(&self.state)
            .filter(|(w, _)| matches!(w.source, Source::Disk { .. }))
            .map(|(w, st)| (w.series.idx, !st.disk.gone))
            .collect()
    }

    /// The series watched.
    pub fn series(&self) -> Vec<Series> {
        self.watches.iter().map(|w| w.series.clone()).collect()
    }

    /// One sweep ending at `t` (seconds since the epoch), `seconds` after the last one. The
    /// first sweep takes the counters' baseline and gives no disk samples.
    pub fn sweep(&mut self, t: f64, seconds: f64) -> Sweep {
        let mut out = Sweep::default();
        let disks: HashMap<String, DiskLine> = fs::read_to_string(&self.files.diskstats)
            .map(|s| procfs::parse_diskstats(&s))
            .unwrap_or_default()
            .into_iter()
            .map(|d| (d.name.clone(), d))
            .collect();
        let mounts = mounts::mounts();
        let nfs = if self.watches.iter().any(|w| matches!(w.source, Source::Nfs { .. })) {
            fs::read_to_string(&self.files.mountstats)
                .map(|s| procfs::parse_mountstats(&s))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for (w, st) in self.watches.iter().zip(self.state.iter_mut()) {
            let s = &w.series;
            match &w.source {
                Source::Disk { .. } => disk(s, st, disks.get(&s.name), t, seconds, &mut out),
                Source::Filesystem { mount_point, source } => {
                    filesystem(s, st, mount_point, source, &mounts, t, &mut out)
                }
                Source::Md => md(s, st, &self.files.sys_block, t, &mut out),
                Source::Btrfs {
                    uuid,
                    devid,
                    mount_point,
                } => {
                    scrub(s, st, mount_point, devid, t, &mut out);
                    btrfs_errors(s, st, uuid, devid, t, &mut out);
                }
                Source::Nfs { mount_point } => {
                    if let Some(m) = nfs.iter().find(|m| m.mount_point == *mount_point) {
                        nfs_gauges(s, m, t, &mut out);
                    }
                }
            }
        }
        out
    }
}

/// A pool's filesystem: mounted or not (a change is an event), and its space and inodes.
fn filesystem(
    s: &Series,
    st: &mut State,
    mount_point: &std::path::Path,
    source: &str,
    mounts: &[mounts::Mount],
    t: f64,
    out: &mut Sweep,
) {
    let shown = mount_point.to_string_lossy();
    let now = mounts.iter().rev().find(|m| m.mount_point == shown);
    let mounted = now.is_some();
    if mounted != st.mounted {
        let detail = match now {
            Some(m) if m.source != *source => format!("{shown} mounted again, from {} (was {source})", m.source),
            Some(_) => format!("{shown} mounted again"),
            None => format!("{shown} is no longer mounted; its space is not sampled until it is"),
        };
        out.events
            .push(event(s, t, if mounted { "mounted" } else { "unmounted" }, detail));
        st.mounted = mounted;
    }
    if !mounted {
        return;
    }
    if let Ok(v) = rustix::fs::statvfs(mount_point) {
        out.fs.push(FsSample {
            series: s.idx,
            t,
            level: Level::Full,
            size: v.f_blocks * v.f_frsize,
            avail: v.f_bavail * v.f_frsize,
            free: v.f_bfree * v.f_frsize,
            files: v.f_files,
            files_free: v.f_ffree,
        });
    }
}

/// A btrfs device's error counters (a growth is an event).
fn btrfs_errors(s: &Series, st: &mut State, uuid: &str, devid: &str, t: f64, out: &mut Sweep) {
    let text = read_trim(format!("/sys/fs/btrfs/{uuid}/devinfo/{devid}/error_stats")).unwrap_or_default();
    if text.is_empty() {
        return;
    }
    let mut now = [0u64; 5];
    for l in text.lines() {
        let mut w = l.split_whitespace();
        if let (Some(k), Some(v)) = (w.next(), w.next().and_then(|v| v.parse().ok())) {
            if let Some(i) = BTRFS_ERRORS.iter().position(|e| *e == k) {
                now[i] = v;
            }
        }
    }
    if let Some(before) = st.btrfs.filter(|b| *b != now) {
        let grew: Vec<String> = BTRFS_ERRORS
            .iter()
            .zip(before.iter().zip(now.iter()))
            .filter(|(_, (b, n))| n > b)
            .map(|(k, (b, n))| format!("{k} {b} → {n}"))
            .collect();
        if !grew.is_empty() {
            out.events
                .push(event(s, t, "btrfs-errors", format!("{}: {}", s.name, grew.join(", "))));
        }
    }
    st.btrfs = Some(now);
    for (k, v) in BTRFS_ERRORS.iter().zip(now) {
        out.gauges.push(gauge(s, t, k, v as f64));
    }
}

/// An NFS mount's bytes and, per operation, its count, round trips and bytes.
fn nfs_gauges(s: &Series, m: &procfs::NfsMount, t: f64, out: &mut Sweep) {
    out.gauges.push(gauge(s, t, "read_bytes", m.read_bytes as f64));
    out.gauges.push(gauge(s, t, "write_bytes", m.write_bytes as f64));
    for (op, o) in &m.ops {
        out.gauges.push(gauge(s, t, &format!("ops:{op}"), o.ops as f64));
        out.gauges.push(gauge(s, t, &format!("rtt_ms:{op}"), o.rtt_ms as f64));
        out.gauges.push(gauge(s, t, &format!("bytes:{op}"), o.bytes as f64));
    }
}

/// A btrfs device's scrub, from the kernel's counters: whether one runs, what it has done and
/// found; its start and end are events.
fn scrub(s: &Series, st: &mut State, mount_point: &std::path::Path, devid: &str, t: f64, out: &mut Sweep) {
    let Ok(devid) = devid.parse::<u64>() else { return };
    let Ok(dir) = fs::File::open(mount_point) else { return };
    let p = storlab_env::btrfs::scrub_progress(&dir, devid);
    let running = p.is_some();
    if running != st.scrubbing {
        let (kind, detail) = if running {
            ("scrub-started", format!("{}: a scrub runs on this device", s.name))
        } else {
            ("scrub-ended", format!("{}: the scrub on this device ended", s.name))
        };
        out.events.push(event(s, t, kind, detail));
        st.scrubbing = running;
    }
    out.gauges.push(gauge(s, t, "scrub_running", running as u8 as f64));
    if let Some(p) = p {
        out.gauges.push(gauge(
            s,
            t,
            "scrub_bytes",
            (p.data_bytes_scrubbed + p.tree_bytes_scrubbed) as f64,
        ));
        for (k, v) in [
            ("scrub_read_errors", p.read_errors),
            ("scrub_csum_errors", p.csum_errors),
            ("scrub_verify_errors", p.verify_errors),
            ("scrub_corrected_errors", p.corrected_errors),
            ("scrub_uncorrectable_errors", p.uncorrectable_errors),
        ] {
            out.gauges.push(gauge(s, t, k, v as f64));
        }
    }
}

fn gauge(s: &Series, t: f64, key: &str, value: f64) -> GaugeSample {
    GaugeSample {
        series: s.idx,
        t,
        level: Level::Full,
        key: key.into(),
        value,
    }
}

/// A disk's sample: its counters' steps since the last sweep.
fn disk(s: &Series, st: &mut State, line: Option<&DiskLine>, t: f64, seconds: f64, out: &mut Sweep) {
    let line = line.filter(|_| !loop_detached(&s.name));
    let Some(line) = line else {
        if !st.disk.gone {
            let why = if loop_detached(&s.name) {
                "the loop device was detached (no backing file)"
            } else {
                "it is no longer in /proc/diskstats"
            };
            out.events.push(event(
                s,
                t,
                "device-gone",
                format!("{}: {why}; watching for its return", s.name),
            ));
            st.disk.gone = true;
            st.disk.last = None;
        }
        return;
    };
    let dev = (line.major, line.minor);
    if st.disk.gone {
        out.events.push(event(
            s,
            t,
            "device-back",
            format!("{} is back ({}:{})", s.name, dev.0, dev.1),
        ));
        st.disk.gone = false;
    } else if st.disk.dev.is_some_and(|d| d != dev) {
        out.events.push(event(
            s,
            t,
            "device-replaced",
            format!("{} is now device {}:{}; its counters start again", s.name, dev.0, dev.1),
        ));
        st.disk.last = None;
    }
    st.disk.dev = Some(dev);
    let now = line.fields;
    let Some(before) = st.disk.last.replace(now) else {
        return;
    };
    let mut d = [0u64; 11];
    let mut wrapped = Vec::new();
    let mut reset = false;
    for i in COUNTERS {
        let st = step(before[i], now[i]);
        match st {
            Step::Wrapped(_) => wrapped.push(FIELD_NAMES[i]),
            Step::Reset(_) => reset = true,
            Step::Forward(_) => {}
        }
        d[i] = st.amount();
    }
    if reset {
        // Some counters went back to zero: the device was reset; this interval's figures
        // are not a step of the same counters, so none is stored.
        out.events.push(event(
            s,
            t,
            "counters-reset",
            format!(
                "{}: its counters went back (the device was reset or replaced); counting again from here",
                s.name
            ),
        ));
        return;
    }
    if !wrapped.is_empty() {
        out.events.push(event(
            s,
            t,
            "counter-wrapped",
            format!("{}: {} passed 2^32 and wrapped; counted on", s.name, wrapped.join(", ")),
        ));
    }
    out.disks.push(DiskSample {
        series: s.idx,
        t,
        seconds,
        level: Level::Full,
        delta: DiskDelta {
            reads: d[field::READS],
            reads_merged: d[field::READS_MERGED],
            read_bytes: d[field::SECTORS_READ] * 512,
            read_ms: d[field::READ_MS],
            writes: d[field::WRITES],
            writes_merged: d[field::WRITES_MERGED],
            write_bytes: d[field::SECTORS_WRITTEN] * 512,
            write_ms: d[field::WRITE_MS],
            busy_ms: d[field::BUSY_MS],
            weighted_ms: d[field::WEIGHTED_MS],
            in_flight: now[field::IN_FLIGHT] as f64,
        },
    });
}

/// An md array's gauges and the changes of its state and sync action.
fn md(s: &Series, st: &mut State, sys_block: &std::path::Path, t: f64, out: &mut Sweep) {
    let dir = sys_block.join(&s.name).join("md");
    let Some(state) = read_trim(dir.join("array_state")) else {
        return;
    };
    let action = read_trim(dir.join("sync_action")).unwrap_or_default();
    if let Some((was_state, was_action)) = &st.md {
        if *was_state != state {
            out.events.push(event(
                s,
                t,
                "md-state",
                format!("{}: array state {was_state} → {state}", s.name),
            ));
        }
        if *was_action != action {
            out.events.push(event(
                s,
                t,
                "md-sync",
                format!("{}: sync action {was_action} → {action}", s.name),
            ));
        }
    }
    // "done / total" sectors, or "none" when no sync runs.
    let completed = read_trim(dir.join("sync_completed")).and_then(|c| {
        let (a, b) = c.split_once('/')?;
        let (a, b): (f64, f64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        (b > 0.0).then_some(a / b)
    });
    out.gauges.push(gauge(
        s,
        t,
        "syncing",
        if action == "idle" || action.is_empty() {
            0.0
        } else {
            1.0
        },
    ));
    if let Some(c) = completed {
        out.gauges.push(gauge(s, t, "sync_completed", c));
    }
    for key in ["mismatch_cnt", "degraded"] {
        if let Some(v) = read_trim(dir.join(key)).and_then(|v| v.parse::<f64>().ok()) {
            out.gauges.push(gauge(s, t, key, v));
        }
    }
    st.md = Some((state, action));
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::monitor::SeriesKind;

    fn watch(name: &str) -> Watch {
        Watch {
            series: Series {
                idx: 0,
                pool: "P".into(),
                kind: SeriesKind::Disk,
                name: name.into(),
                top: true,
            },
            source: Source::Disk { dev: (8, 16) },
        }
    }

    fn write(path: &std::path::Path, reads: u64, sectors: u64, busy: u64) {
        fs::write(
            path,
            format!("   8      16 sdq {reads} 0 {sectors} 7 0 0 0 0 1 {busy} 9\n"),
        )
        .unwrap();
    }

    #[test]
    fn a_disks_steps_are_counted_through_a_wrap_and_a_gone_device_is_an_event() {
        let dir = tempfile::tempdir().unwrap();
        let stats = dir.path().join("diskstats");
        let files = Files {
            diskstats: stats.clone(),
            ..Files::default()
        };
        let mut s = Sampler::new(vec![watch("sdq")], files);
        write(&stats, 10, 100, u32::MAX as u64 - 499);
        assert!(s.sweep(1.0, 1.0).disks.is_empty(), "the first sweep is the baseline");
        write(&stats, 14, 108, 500);
        let w = s.sweep(2.0, 1.0);
        assert_eq!(w.disks.len(), 1);
        let d = &w.disks[0].delta;
        assert_eq!((d.reads, d.read_bytes, d.busy_ms), (4, 8 * 512, 1000));
        assert_eq!(w.events.len(), 1);
        assert_eq!(w.events[0].kind, "counter-wrapped");
        assert!(w.events[0].detail.contains("ms busy"), "{}", w.events[0].detail);
        fs::write(&stats, "").unwrap();
        let gone = s.sweep(3.0, 1.0);
        assert!(gone.disks.is_empty());
        assert_eq!(gone.events[0].kind, "device-gone");
        assert!(s.sweep(4.0, 1.0).events.is_empty(), "gone is said once");
        write(&stats, 1, 8, 1);
        let back = s.sweep(5.0, 1.0);
        assert_eq!(back.events[0].kind, "device-back");
        assert!(back.disks.is_empty(), "a device that comes back starts a new baseline");
        write(&stats, 3, 16, 2);
        assert_eq!(s.sweep(6.0, 1.0).disks[0].delta.reads, 2);
    }

    // This kernel has no md driver: a directory laid out as /sys/block/md9/md/ stands in for
    // an array, its files written as the md driver writes them (Documentation/admin-guide/md.rst).
    #[test]
    fn an_md_arrays_sync_is_gauged_and_its_changes_are_events() {
        let dir = tempfile::tempdir().unwrap();
        let md = dir.path().join("md9/md");
        fs::create_dir_all(&md).unwrap();
        let set = |state: &str, action: &str, completed: &str, mismatch: &str, degraded: &str| {
            for (f, v) in [
                ("array_state", state),
                ("sync_action", action),
                ("sync_completed", completed),
                ("mismatch_cnt", mismatch),
                ("degraded", degraded),
            ] {
                fs::write(md.join(f), format!("{v}\n")).unwrap();
            }
        };
        let w = Watch {
            series: Series {
                idx: 0,
                pool: "P".into(),
                kind: SeriesKind::Md,
                name: "md9".into(),
                top: false,
            },
            source: Source::Md,
        };
        let files = Files {
            sys_block: dir.path().to_path_buf(),
            ..Files::default()
        };
        let mut s = Sampler::new(vec![w], files);
        set("clean", "idle", "none", "0", "0");
        let first = s.sweep(1.0, 0.0);
        assert!(first.events.is_empty());
        let g = |sw: &Sweep, k: &str| sw.gauges.iter().find(|g| g.key == k).map(|g| g.value);
        assert_eq!(g(&first, "syncing"), Some(0.0));
        assert_eq!(g(&first, "sync_completed"), None, "no sync, no progress");
        set("active", "check", "512 / 2048", "8", "0");
        let check = s.sweep(2.0, 1.0);
        assert_eq!(g(&check, "syncing"), Some(1.0));
        assert_eq!(g(&check, "sync_completed"), Some(0.25));
        assert_eq!(g(&check, "mismatch_cnt"), Some(8.0));
        let kinds: Vec<&str> = check.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["md-state", "md-sync"]);
        assert!(
            check.events[1].detail.contains("idle → check"),
            "{}",
            check.events[1].detail
        );
        set("clean", "idle", "none", "8", "1");
        let done = s.sweep(3.0, 1.0);
        assert_eq!(g(&done, "degraded"), Some(1.0));
        assert_eq!(done.events.len(), 2);
    }
}
