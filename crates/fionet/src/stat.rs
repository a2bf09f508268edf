//! fio's figures of a job as its server sends them (`FIO_NET_CMD_TS`: stat.h's `struct
//! thread_stat` then `struct group_run_stats`, 184,056 bytes) and of a group (`FIO_NET_CMD_GS`).
//! The layout is one walk over the fields (`walk`) that both writes and reads, so the two
//! cannot drift apart; its offsets are fio 3.33's on x86-64 (the struct is packed but for
//! `sync_stat`, aligned to 8), checked in the tests against offsetof() of fio's own header.
//! Doubles go as fio's `pack754` encodes them, which for every finite double is its IEEE-754
//! bits.

use crate::codec::{Put, Take};

/// fio's `FIO_IO_U_PLAT_NR`: the latency buckets of each direction.
pub const PLAT_NR: usize = 1856;
/// Read, write, trim (fio's `DDIR_RWDIR_CNT`).
pub const DIRS: usize = 3;
/// fio's latency kinds in `io_u_plat` (`FIO_SLAT`, `FIO_CLAT`, `FIO_LAT`): submission latency.
pub const SLAT: usize = 0;
/// Completion latency.
pub const CLAT: usize = 1;
/// Total latency.
pub const LAT: usize = 2;
/// fio's `FIO_IO_U_LIST_MAX_LEN`.
pub const PERCENTILES_MAX: usize = 20;
/// fio's `MAX_NR_BLOCK_INFOS`.
const BLOCK_INFOS: usize = 8192;
/// `sizeof(struct cmd_ts_pdu)` in fio 3.33 on x86-64.
pub const TS_PDU_LEN: usize = 184_056;
/// `sizeof(struct group_run_stats)`.
pub const GS_LEN: usize = 164;

/// fio's `struct io_stat`: a series' smallest, largest, count, mean and sum of squared
/// deviations (Welford's S).
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IoStat {
    pub max: u64,
    pub min: u64,
    pub samples: u64,
    pub mean: f64,
    pub s: f64,
}

/// fio's `struct thread_stat`: what a job (or a group_reporting group of jobs) did.
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadStat {
    pub name: String,
    pub verror: String,
    pub error: u32,
    pub thread_number: u32,
    pub groupid: u32,
    pub pid: u32,
    pub description: String,
    pub members: u32,
    pub unified_rw_rep: u32,
    pub disable_prio_stat: u32,
    pub sync_stat: IoStat,
    /// Per direction, ns.
    pub clat_stat: [IoStat; DIRS],
    pub slat_stat: [IoStat; DIRS],
    pub lat_stat: [IoStat; DIRS],
    /// Per direction, KiB/s per sample.
    pub bw_stat: [IoStat; DIRS],
    pub iops_stat: [IoStat; DIRS],
    /// CPU time in ms.
    pub usr_time: u64,
    pub sys_time: u64,
    pub ctx: u64,
    pub minf: u64,
    pub majf: u64,
    pub clat_percentiles: u32,
    pub lat_percentiles: u32,
    pub slat_percentiles: u32,
    pub percentile_precision: u64,
    /// The percentiles asked for, 0-terminated.
    pub percentile_list: [f64; PERCENTILES_MAX],
    pub io_u_map: [u64; 7],
    pub io_u_submit: [u64; 7],
    pub io_u_complete: [u64; 7],
    pub io_u_lat_n: [u64; 10],
    pub io_u_lat_u: [u64; 10],
    pub io_u_lat_m: [u64; 12],
    /// `[kind][direction][bucket]` flattened: kind SLAT, CLAT, LAT.
    pub io_u_plat: Vec<u64>,
    pub io_u_sync_plat: Vec<u64>,
    /// Read, write, trim, sync.
    pub total_io_u: [u64; 4],
    pub short_io_u: [u64; DIRS],
    pub drop_io_u: [u64; DIRS],
    pub total_submit: u64,
    pub total_complete: u64,
    pub io_bytes: [u64; DIRS],
    /// ms.
    pub runtime: [u64; DIRS],
    pub total_run_time: u64,
    pub continue_on_error: u16,
    pub first_error: u32,
    pub total_err_count: u64,
    pub nr_zone_resets: u64,
    pub block_infos: Vec<u32>,
    pub kb_base: u32,
    pub unit_base: u32,
    pub latency_depth: u32,
    pub latency_target: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
    pub sig_figs: u32,
    pub ss_dur: u64,
    pub ss_state: u32,
    pub ss_head: u32,
    pub ss_limit: f64,
    pub ss_slope: f64,
    pub ss_deviation: f64,
    pub ss_criterion: f64,
    pub ioprio: u32,
    pub cachehit: u64,
    pub cachemiss: u64,
}

impl Default for ThreadStat {
    fn default() -> ThreadStat {
        ThreadStat {
            name: String::new(),
            verror: String::new(),
            error: 0,
            thread_number: 0,
            groupid: 0,
            pid: 0,
            description: String::new(),
            members: 0,
            unified_rw_rep: 0,
            disable_prio_stat: 0,
            sync_stat: IoStat::EMPTY,
            clat_stat: [IoStat::EMPTY; DIRS],
            slat_stat: [IoStat::EMPTY; DIRS],
            lat_stat: [IoStat::EMPTY; DIRS],
            bw_stat: [IoStat::EMPTY; DIRS],
            iops_stat: [IoStat::EMPTY; DIRS],
            usr_time: 0,
            sys_time: 0,
            ctx: 0,
            minf: 0,
            majf: 0,
            clat_percentiles: 0,
            lat_percentiles: 0,
            slat_percentiles: 0,
            percentile_precision: 0,
            percentile_list: [0.0; PERCENTILES_MAX],
            io_u_map: [0; 7],
            io_u_submit: [0; 7],
            io_u_complete: [0; 7],
            io_u_lat_n: [0; 10],
            io_u_lat_u: [0; 10],
            io_u_lat_m: [0; 12],
            io_u_plat: vec![0; 3 * DIRS * PLAT_NR],
            io_u_sync_plat: vec![0; PLAT_NR],
            total_io_u: [0; 4],
            short_io_u: [0; DIRS],
            drop_io_u: [0; DIRS],
            total_submit: 0,
            total_complete: 0,
            io_bytes: [0; DIRS],
            runtime: [0; DIRS],
            total_run_time: 0,
            continue_on_error: 0,
            first_error: 0,
            total_err_count: 0,
            nr_zone_resets: 0,
            block_infos: Vec::new(),
            kb_base: 1024,
            unit_base: 0,
            latency_depth: 0,
            latency_target: 0,
            latency_percentile: 0.0,
            latency_window: 0,
            sig_figs: 4,
            ss_dur: 0,
            ss_state: 0,
            ss_head: 0,
            ss_limit: 0.0,
            ss_slope: 0.0,
            ss_deviation: 0.0,
            ss_criterion: 0.0,
            ioprio: 0,
            cachehit: 0,
            cachemiss: 0,
        }
    }
}

impl IoStat {
    /// fio's io_stat of no samples (its min at the largest value, as fio initialises it).
    pub const EMPTY: IoStat = IoStat {
        max: 0,
        min: u64::MAX,
        samples: 0,
        mean: 0.0,
        s: 0.0,
    };

    /// Adds `o` as fio's sum_stat with `pure_sum` does for group_reporting's and the clients'
    /// bandwidth and IOPS: each figure a total over the jobs (min, max, mean, S and samples
    /// added), not a mean of them; one with no samples adds nothing.
    pub fn pure_add(&mut self, o: &IoStat) {
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *o;
            return;
        }
        self.min += o.min;
        self.max += o.max;
        self.samples += o.samples;
        self.mean += o.mean;
        self.s += o.s;
    }

    /// Merges `o` as one series with this, as fio's __sum_stat does for latencies (Chan et
    /// al.'s parallel update of the mean and S).
    pub fn merge(&mut self, o: &IoStat) {
        if o.samples == 0 {
            return;
        }
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        if self.samples == 0 {
            self.mean = o.mean;
            self.s = o.s;
        } else {
            let (n1, n2) = (self.samples as f64, o.samples as f64);
            let delta = o.mean - self.mean;
            self.mean = (o.mean * n2 + self.mean * n1) / (n1 + n2);
            self.s = o.s + self.s + delta.powi(2) * (n1 * n2) / (n1 + n2);
        }
        self.samples += o.samples;
    }
}

impl ThreadStat {
    /// The buckets of latency `kind` (SLAT, CLAT, LAT) in direction `dir`.
    pub fn plat(&self, kind: usize, dir: usize) -> &[u64] {
        let at = (kind * DIRS + dir) * PLAT_NR;
        &self.io_u_plat[at..at + PLAT_NR]
    }
    /// As `plat`, to fill.
    pub fn plat_mut(&mut self, kind: usize, dir: usize) -> &mut [u64] {
        let at = (kind * DIRS + dir) * PLAT_NR;
        &mut self.io_u_plat[at..at + PLAT_NR]
    }
}

/// fio's `struct group_run_stats`: a reporting group's run — per direction the longest and
/// shortest runtime (ms), the best and worst bandwidth (bytes/s), bytes, and the aggregate
/// bandwidth (bytes/s).
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GroupRunStats {
    pub max_run: [u64; DIRS],
    pub min_run: [u64; DIRS],
    pub max_bw: [u64; DIRS],
    pub min_bw: [u64; DIRS],
    pub iobytes: [u64; DIRS],
    pub agg: [u64; DIRS],
    pub kb_base: u32,
    pub unit_base: u32,
    pub sig_figs: u32,
    pub groupid: u32,
    pub unified_rw_rep: u32,
}

/// One direction of the walk: writing fields out or reading them in.
trait Field {
    fn u16(&mut self, v: &mut u16);
    fn u32(&mut self, v: &mut u32);
    fn u64(&mut self, v: &mut u64);
    /// fio's `fio_fp64_t`: 8 bytes of IEEE-754 in a 16-byte union.
    fn fp64(&mut self, v: &mut f64);
    fn text(&mut self, v: &mut String, len: usize);
    fn pad(&mut self, n: usize);
    /// Where the walk is, from the start of the payload.
    fn at(&self) -> usize;

    fn u64s(&mut self, vs: &mut [u64]) {
        vs.iter_mut().for_each(|v| self.u64(v));
    }
    fn u32s(&mut self, vs: &mut [u32]) {
        vs.iter_mut().for_each(|v| self.u32(v));
    }
    fn io_stat(&mut self, s: &mut IoStat) {
        self.u64(&mut s.max);
        self.u64(&mut s.min);
        self.u64(&mut s.samples);
        self.fp64(&mut s.mean);
        self.fp64(&mut s.s);
    }
    fn io_stats(&mut self, ss: &mut [IoStat]) {
        ss.iter_mut().for_each(|s| self.io_stat(s));
    }
}

impl Field for Put {
    fn u16(&mut self, v: &mut u16) {
        Put::u16(self, *v)
    }
    fn u32(&mut self, v: &mut u32) {
        Put::u32(self, *v)
    }
    fn u64(&mut self, v: &mut u64) {
        Put::u64(self, *v)
    }
    fn fp64(&mut self, v: &mut f64) {
        Put::u64(self, v.to_bits());
        self.zeros(8);
    }
    fn text(&mut self, v: &mut String, len: usize) {
        Put::text(self, v, len)
    }
    fn pad(&mut self, n: usize) {
        self.zeros(n)
    }
    fn at(&self) -> usize {
        self.0.len()
    }
}

impl Field for Take<'_> {
    fn u16(&mut self, v: &mut u16) {
        *v = Take::u16(self)
    }
    fn u32(&mut self, v: &mut u32) {
        *v = Take::u32(self)
    }
    fn u64(&mut self, v: &mut u64) {
        *v = Take::u64(self)
    }
    fn fp64(&mut self, v: &mut f64) {
        *v = f64::from_bits(Take::u64(self));
        self.bytes(8);
    }
    fn text(&mut self, v: &mut String, len: usize) {
        *v = Take::text(self, len)
    }
    fn pad(&mut self, n: usize) {
        self.bytes(n);
    }
    fn at(&self) -> usize {
        self.at
    }
}

/// Every field of `struct thread_stat` in fio's order, with fio's padding.
fn walk_ts(f: &mut impl Field, ts: &mut ThreadStat) {
    walk_ts_head(f, ts);
    walk_ts_depths(f, ts);
    walk_ts_tail(f, ts);
}

/// Names, ids, the latency and rate series, CPU and the percentiles asked for.
fn walk_ts_head(f: &mut impl Field, ts: &mut ThreadStat) {
    f.text(&mut ts.name, 128);
    f.text(&mut ts.verror, 128);
    for v in [&mut ts.error, &mut ts.thread_number, &mut ts.groupid, &mut ts.pid] {
        f.u32(v);
    }
    f.text(&mut ts.description, 256);
    for v in [&mut ts.members, &mut ts.unified_rw_rep, &mut ts.disable_prio_stat] {
        f.u32(v);
    }
    // sync_stat is aligned to 8 in a packed struct.
    f.pad(4);
    f.io_stat(&mut ts.sync_stat);
    for s in [
        &mut ts.clat_stat,
        &mut ts.slat_stat,
        &mut ts.lat_stat,
        &mut ts.bw_stat,
        &mut ts.iops_stat,
    ] {
        f.io_stats(s);
    }
    for v in [
        &mut ts.usr_time,
        &mut ts.sys_time,
        &mut ts.ctx,
        &mut ts.minf,
        &mut ts.majf,
    ] {
        f.u64(v);
    }
    for v in [
        &mut ts.clat_percentiles,
        &mut ts.lat_percentiles,
        &mut ts.slat_percentiles,
    ] {
        f.u32(v);
    }
    f.pad(4);
    f.u64(&mut ts.percentile_precision);
    ts.percentile_list.iter_mut().for_each(|p| f.fp64(p));
}

/// The depth and latency distributions and the latency buckets.
fn walk_ts_depths(f: &mut impl Field, ts: &mut ThreadStat) {
    f.u64s(&mut ts.io_u_map);
    f.u64s(&mut ts.io_u_submit);
    f.u64s(&mut ts.io_u_complete);
    f.u64s(&mut ts.io_u_lat_n);
    f.u64s(&mut ts.io_u_lat_u);
    f.u64s(&mut ts.io_u_lat_m);
    f.u64s(&mut ts.io_u_plat);
    f.u64s(&mut ts.io_u_sync_plat);
}

/// Counts, bytes, runtimes, errors, units, latency target, steady state, cache.
fn walk_ts_tail(f: &mut impl Field, ts: &mut ThreadStat) {
    f.u64s(&mut ts.total_io_u);
    f.u64s(&mut ts.short_io_u);
    f.u64s(&mut ts.drop_io_u);
    f.u64(&mut ts.total_submit);
    f.u64(&mut ts.total_complete);
    f.u64s(&mut ts.io_bytes);
    f.u64s(&mut ts.runtime);
    f.u64(&mut ts.total_run_time);
    // continue_on_error is a u16 in a 4-byte union.
    f.u16(&mut ts.continue_on_error);
    f.pad(2);
    f.u32(&mut ts.first_error);
    f.u64(&mut ts.total_err_count);
    f.u64(&mut ts.nr_zone_resets);
    let mut n = ts.block_infos.len() as u64;
    f.u64(&mut n);
    let mut infos = ts.block_infos.clone();
    infos.resize(BLOCK_INFOS, 0);
    f.u32s(&mut infos);
    infos.truncate((n as usize).min(BLOCK_INFOS));
    ts.block_infos = infos;
    for v in [&mut ts.kb_base, &mut ts.unit_base, &mut ts.latency_depth] {
        f.u32(v);
    }
    f.pad(4);
    f.u64(&mut ts.latency_target);
    f.fp64(&mut ts.latency_percentile);
    f.u64(&mut ts.latency_window);
    f.u32(&mut ts.sig_figs);
    f.u64(&mut ts.ss_dur);
    f.u32(&mut ts.ss_state);
    f.u32(&mut ts.ss_head);
    for v in [
        &mut ts.ss_limit,
        &mut ts.ss_slope,
        &mut ts.ss_deviation,
        &mut ts.ss_criterion,
    ] {
        f.fp64(v);
    }
    f.u32(&mut ts.ioprio);
    // The steady state's rings and the per-priority latencies go after the struct, their
    // offsets here; storlab sends neither (ss_state without FIO_SS_DATA, no priorities).
    f.pad(8 + 8 + 8 * DIRS + 4 * DIRS);
    f.u64(&mut ts.cachehit);
    f.u64(&mut ts.cachemiss);
}

fn walk_gs(f: &mut impl Field, gs: &mut GroupRunStats) {
    for a in [
        &mut gs.max_run,
        &mut gs.min_run,
        &mut gs.max_bw,
        &mut gs.min_bw,
        &mut gs.iobytes,
        &mut gs.agg,
    ] {
        f.u64s(a);
    }
    for v in [
        &mut gs.kb_base,
        &mut gs.unit_base,
        &mut gs.sig_figs,
        &mut gs.groupid,
        &mut gs.unified_rw_rep,
    ] {
        f.u32(v);
    }
}

/// The payload of `FIO_NET_CMD_TS`: the job's figures and its group's.
pub fn encode_ts(ts: &ThreadStat, gs: &GroupRunStats) -> Vec<u8> {
    let mut p = Put(Vec::with_capacity(TS_PDU_LEN));
    walk_ts(&mut p, &mut ts.clone());
    // The struct's size is a multiple of its alignment, 8.
    p.pad(p.at().next_multiple_of(8) - p.at());
    walk_gs(&mut p, &mut gs.clone());
    p.pad(TS_PDU_LEN - p.at());
    p.0
}

/// A `FIO_NET_CMD_TS` payload read; None where it is shorter than fio's struct.
pub fn decode_ts(b: &[u8]) -> Option<(ThreadStat, GroupRunStats)> {
    let mut t = Take::new(b);
    let mut ts = ThreadStat::default();
    walk_ts(&mut t, &mut ts);
    t.pad(t.at().next_multiple_of(8) - t.at());
    let mut gs = GroupRunStats::default();
    walk_gs(&mut t, &mut gs);
    (!t.short).then_some((ts, gs))
}

/// The payload of `FIO_NET_CMD_GS`.
pub fn encode_gs(gs: &GroupRunStats) -> Vec<u8> {
    let mut p = Put::default();
    walk_gs(&mut p, &mut gs.clone());
    p.0
}

/// A `FIO_NET_CMD_GS` payload read; None where it is short.
pub fn decode_gs(b: &[u8]) -> Option<GroupRunStats> {
    let mut t = Take::new(b);
    let mut gs = GroupRunStats::default();
    walk_gs(&mut t, &mut gs);
    (!t.short).then_some(gs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a walk reached after `stage`, from the start.
    fn reached(stage: impl Fn(&mut Put, &mut ThreadStat)) -> usize {
        let mut p = Put::default();
        stage(&mut p, &mut ThreadStat::default());
        p.at()
    }

    #[test]
    fn the_layout_is_fios() {
        // offsetof() in fio 3.33's struct thread_stat on x86-64: io_u_map at 1824,
        // total_io_u at 150728, the struct 183888 long; group_run_stats 164.
        assert_eq!(reached(walk_ts_head), 1824);
        assert_eq!(
            reached(|p, ts| {
                walk_ts_head(p, ts);
                walk_ts_depths(p, ts)
            }),
            150_728
        );
        assert_eq!(reached(walk_ts).next_multiple_of(8), 183_888);
        assert_eq!(encode_gs(&GroupRunStats::default()).len(), GS_LEN);
        assert_eq!(
            encode_ts(&ThreadStat::default(), &GroupRunStats::default()).len(),
            TS_PDU_LEN
        );
    }

    #[test]
    fn figures_come_back_as_they_went() {
        let mut ts = ThreadStat {
            name: "seqread".into(),
            groupid: 1,
            clat_stat: [
                IoStat {
                    max: 9,
                    min: 1,
                    samples: 3,
                    mean: 4.5,
                    s: 2.25,
                },
                IoStat::default(),
                IoStat::default(),
            ],
            percentile_list: [50.0; PERCENTILES_MAX],
            block_infos: vec![7, 8],
            ss_criterion: 0.125,
            cachemiss: 11,
            ..Default::default()
        };
        ts.plat_mut(CLAT, 1)[100] = 5;
        let gs = GroupRunStats {
            agg: [1, 2, 3],
            groupid: 1,
            ..Default::default()
        };
        let (back, gback) = decode_ts(&encode_ts(&ts, &gs)).unwrap();
        assert_eq!(back, ts);
        assert_eq!(gback, gs);
        assert!(decode_ts(&[0; 100]).is_none());
    }
}
