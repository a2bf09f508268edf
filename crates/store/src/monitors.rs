//! The monitor's record: who monitors (one row per `storlab monitor run`, with a heartbeat),
//! what (its series), the samples at three resolutions and the events. Each sweep of the
//! monitor is one transaction; retention moves samples up a level in one transaction per step
//! (averages written, the finer rows deleted), so that the levels never overlap in time and a
//! window's figures never count a second twice.

use std::collections::BTreeMap;

use storlab_model::monitor::{
    DiskDelta, DiskSample, FsSample, GaugeSample, Level, MonitorEvent, MonitorSpec, Series, SeriesKind,
};

use crate::db::{vals, Conn, Row};
use crate::{new_uuid, now_rfc3339, pid_alive, Result, Store, StoreError};

/// A monitor as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMonitor {
    /// Its id.
    pub id: i64,
    /// Its identity across databases.
    pub uuid: String,
    /// The host it ran on.
    pub host: String,
    /// Its process.
    pub pid: i64,
    /// What it was asked to watch.
    pub spec: MonitorSpec,
    /// running, stopped, aborted.
    pub status: String,
    /// When it started, seconds since the epoch.
    pub t0: f64,
    /// Its last sweep, seconds since the epoch.
    pub heartbeat: f64,
}

/// One sweep's worth of records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sweep {
    /// Disk samples.
    pub disks: Vec<DiskSample>,
    /// Filesystem samples.
    pub fs: Vec<FsSample>,
    /// Gauges.
    pub gauges: Vec<GaugeSample>,
    /// Events.
    pub events: Vec<MonitorEvent>,
}

/// Samples of a time window, with the series they belong to (`series` numbers are made
/// unique across the monitors the window spans: each sample's `series` indexes `series`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MonitorWindow {
    /// The series.
    pub series: Vec<Series>,
    /// Each series' host, by its index.
    pub hosts: Vec<String>,
    /// Disk samples, by time.
    pub disks: Vec<DiskSample>,
    /// Filesystem samples, by time.
    pub fs: Vec<FsSample>,
    /// Events, by time.
    pub events: Vec<MonitorEvent>,
}

const DISK_COLS: &str = "series, level, t, seconds, reads, reads_merged, read_bytes, read_ms, writes, writes_merged, write_bytes, write_ms, busy_ms, weighted_ms, in_flight";

fn disk_row(r: &Row, at: usize) -> Result<DiskSample> {
    let u = |i: usize| r.u64(at + i);
    Ok(DiskSample {
        series: r.u32(at)?,
        level: level(r.i64(at + 1)?)?,
        t: r.f64(at + 2)?,
        seconds: r.f64(at + 3)?,
        delta: DiskDelta {
            reads: u(4)?,
            reads_merged: u(5)?,
            read_bytes: u(6)?,
            read_ms: u(7)?,
            writes: u(8)?,
            writes_merged: u(9)?,
            write_bytes: u(10)?,
            write_ms: u(11)?,
            busy_ms: u(12)?,
            weighted_ms: u(13)?,
            in_flight: r.f64(at + 14)?,
        },
    })
}

fn level(n: i64) -> Result<Level> {
    Level::from_i64(n).ok_or_else(|| StoreError::Type(format!("monitor sample level {n}")))
}

fn insert_disk(c: &mut dyn Conn, id: i64, d: &DiskSample) -> Result<()> {
    let x = &d.delta;
    c.exec(
        &format!("INSERT INTO monitor_disk (monitor_id, {DISK_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"),
        vals![
            id,
            d.series,
            d.level as i64,
            d.t,
            d.seconds,
            x.reads,
            x.reads_merged,
            x.read_bytes,
            x.read_ms,
            x.writes,
            x.writes_merged,
            x.write_bytes,
            x.write_ms,
            x.busy_ms,
            x.weighted_ms,
            x.in_flight
        ],
    )?;
    Ok(())
}

fn insert_fs(c: &mut dyn Conn, id: i64, f: &FsSample) -> Result<()> {
    c.exec(
        "INSERT INTO monitor_fs (monitor_id, series, level, t, size, avail, free, files, files_free)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        vals![
            id,
            f.series,
            f.level as i64,
            f.t,
            f.size,
            f.avail,
            f.free,
            f.files,
            f.files_free
        ],
    )?;
    Ok(())
}

fn insert_gauge(c: &mut dyn Conn, id: i64, g: &GaugeSample) -> Result<()> {
    c.exec(
        "INSERT INTO monitor_gauges (monitor_id, series, level, t, key, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        vals![id, g.series, g.level as i64, g.t, &g.key, g.value],
    )?;
    Ok(())
}

/// The start of the bucket of `width` seconds that `t` falls in.
fn bucket(t: f64, width: f64) -> f64 {
    (t / width).floor() * width
}

impl Store {
    /// Registers a monitor on `host` with its series, refusing when a monitor of this host is
    /// already running on this database (its process alive); a monitor whose process is gone
    /// is marked aborted. Returns the new monitor's id.
    pub fn create_monitor(&self, host: &str, spec: &MonitorSpec, series: &[Series], t0: f64) -> Result<i64> {
        self.tx(|c| {
            for r in c.query(
                "SELECT id, pid, t0 FROM monitors WHERE host = ?1 AND status = 'running'",
                vals![host],
            )? {
                let (id, pid) = (r.i64(0)?, r.i64(1)?);
                if pid_alive(pid) && pid as u32 != std::process::id() {
                    return Err(StoreError::Request(format!(
                        "a monitor is already running on {host} with this database (monitor {id}, process {pid}); stop it first (kill {pid}) or give another --db"
                    )));
                }
                c.exec("UPDATE monitors SET status = 'aborted' WHERE id = ?1", vals![id])?;
            }
            let rows = c.query(
                "INSERT INTO monitors (uuid, host, pid, created_at, spec, status, t0, heartbeat)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?6) RETURNING id",
                vals![new_uuid(), host, std::process::id(), now_rfc3339(), serde_json::to_string(spec)?, t0],
            )?;
            let id = crate::write::returned_id(rows)?;
            for s in series {
                c.exec(
                    "INSERT INTO monitor_series (monitor_id, idx, pool, kind, name, top) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    vals![id, s.idx, &s.pool, s.kind.name(), &s.name, s.top],
                )?;
            }
            Ok(id)
        })
    }

    /// Stores one sweep and the heartbeat, in one transaction.
    pub fn add_monitor_sweep(&self, id: i64, t: f64, sweep: &Sweep) -> Result<()> {
        self.tx(|c| {
            // Stored already: the sweep's own transaction set the heartbeat to its time (a
            // sweep written again after a connection lost at its commit is written once).
            let beat = crate::db::one(c.query("SELECT heartbeat FROM monitors WHERE id = ?1", vals![id])?);
            if let Some(b) = beat.map(|r| r.f64(0)).transpose()? {
                if b >= t {
                    return Ok(());
                }
            }
            for d in &sweep.disks {
                insert_disk(c, id, d)?;
            }
            for f in &sweep.fs {
                insert_fs(c, id, f)?;
            }
            for g in &sweep.gauges {
                insert_gauge(c, id, g)?;
            }
            for e in &sweep.events {
                c.exec(
                    "INSERT INTO monitor_events (monitor_id, t, pool, name, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    vals![id, e.t, &e.pool, &e.name, &e.kind, &e.detail],
                )?;
            }
            c.exec("UPDATE monitors SET heartbeat = ?2 WHERE id = ?1", vals![id, t])?;
            Ok(())
        })
    }

    /// Marks a monitor stopped.
    pub fn stop_monitor(&self, id: i64, t: f64) -> Result<()> {
        self.query(
            "UPDATE monitors SET status = 'stopped', heartbeat = ?2 WHERE id = ?1",
            vals![id, t],
        )?;
        Ok(())
    }

    /// Every monitor, newest first.
    pub fn monitors(&self) -> Result<Vec<StoredMonitor>> {
        self.query(
            "SELECT id, uuid, host, pid, spec, status, t0, heartbeat FROM monitors ORDER BY id DESC",
            &[],
        )?
        .iter()
        .map(|r| {
            Ok(StoredMonitor {
                id: r.i64(0)?,
                uuid: r.text(1)?,
                host: r.text(2)?,
                pid: r.i64(3)?,
                spec: serde_json::from_str(&r.text(4)?)?,
                status: r.text(5)?,
                t0: r.f64(6)?,
                heartbeat: r.f64(7)?,
            })
        })
        .collect()
    }

    /// Moves monitor `id`'s samples of `from` ending before `cutoff` up to level `to`: per
    /// series, one row per bucket of `width` seconds (counters summed, seconds summed, gauges
    /// averaged; a filesystem's last figures kept), the finer rows deleted. Only whole buckets
    /// move: the caller gives a cutoff on a bucket boundary. Returns the rows moved.
    pub fn compact_monitor(&self, id: i64, from: Level, to: Level, cutoff: f64, width: f64) -> Result<u64> {
        self.tx(|c| {
            let lf = from as i64;
            let mut disks: BTreeMap<(u32, u64), (DiskSample, u32)> = BTreeMap::new();
            let rows = c.query(
                &format!("SELECT {DISK_COLS} FROM monitor_disk WHERE monitor_id = ?1 AND level = ?2 AND t <= ?3"),
                vals![id, lf, cutoff],
            )?;
            let moved = rows.len() as u64;
            for r in &rows {
                let d = disk_row(r, 0)?;
                // A sample belongs to the bucket its end falls in (an end exactly on a
                // boundary closes the bucket before it).
                let b = bucket(d.t - 1e-6, width);
                let e = disks.entry((d.series, b.to_bits())).or_insert_with(|| {
                    (
                        DiskSample {
                            series: d.series,
                            t: b + width,
                            seconds: 0.0,
                            level: to,
                            delta: DiskDelta::default(),
                        },
                        0,
                    )
                });
                e.0.seconds += d.seconds;
                e.0.delta.add(&d.delta);
                e.0.delta.in_flight += d.delta.in_flight;
                e.1 += 1;
            }
            let mut fs: BTreeMap<(u32, u64), FsSample> = BTreeMap::new();
            for r in c.query(
                "SELECT series, t, size, avail, free, files, files_free FROM monitor_fs
                 WHERE monitor_id = ?1 AND level = ?2 AND t <= ?3 ORDER BY t",
                vals![id, lf, cutoff],
            )? {
                let b = bucket(r.f64(1)? - 1e-6, width);
                fs.insert(
                    (r.u32(0)?, b.to_bits()),
                    FsSample {
                        series: r.u32(0)?,
                        t: b + width,
                        level: to,
                        size: r.u64(2)?,
                        avail: r.u64(3)?,
                        free: r.u64(4)?,
                        files: r.u64(5)?,
                        files_free: r.u64(6)?,
                    },
                );
            }
            let mut gauges: BTreeMap<(u32, u64, String), (f64, u32)> = BTreeMap::new();
            for r in c.query(
                "SELECT series, t, key, value FROM monitor_gauges WHERE monitor_id = ?1 AND level = ?2 AND t <= ?3",
                vals![id, lf, cutoff],
            )? {
                let b = bucket(r.f64(1)? - 1e-6, width);
                let e = gauges.entry((r.u32(0)?, b.to_bits(), r.text(2)?)).or_default();
                e.0 += r.f64(3)?;
                e.1 += 1;
            }
            for (mut d, n) in disks.into_values() {
                d.delta.in_flight /= n as f64;
                insert_disk(c, id, &d)?;
            }
            for f in fs.values() {
                insert_fs(c, id, f)?;
            }
            for ((series, b, key), (sum, n)) in gauges {
                let g = GaugeSample {
                    series,
                    t: f64::from_bits(b) + width,
                    level: to,
                    key,
                    value: sum / n as f64,
                };
                insert_gauge(c, id, &g)?;
            }
            for table in ["monitor_disk", "monitor_fs", "monitor_gauges"] {
                c.exec(
                    &format!("DELETE FROM {table} WHERE monitor_id = ?1 AND level = ?2 AND t <= ?3"),
                    vals![id, lf, cutoff],
                )?;
            }
            Ok(moved)
        })
    }

    /// Deletes every sample and event of every monitor that ended before `cutoff`.
    pub fn purge_monitor_samples(&self, cutoff: f64) -> Result<()> {
        self.tx(|c| {
            for table in ["monitor_disk", "monitor_fs", "monitor_gauges", "monitor_events"] {
                c.exec(&format!("DELETE FROM {table} WHERE t < ?1"), vals![cutoff])?;
            }
            Ok(())
        })
    }

    /// The samples and events of every monitor of `host` (None: every host) whose samples end
    /// in `from ..= to` (seconds since the epoch), with their series renumbered across
    /// monitors.
    pub fn monitor_window(&self, host: Option<&str>, from: f64, to: f64) -> Result<MonitorWindow> {
        let mut w = MonitorWindow::default();
        let monitors: Vec<StoredMonitor> = self
            .monitors()?
            .into_iter()
            .filter(|m| host.is_none_or(|h| m.host == h) && m.heartbeat >= from && m.t0 <= to)
            .rev()
            .collect();
        for m in monitors {
            let base = w.series.len() as u32;
            let mut map: BTreeMap<u32, u32> = BTreeMap::new();
            for r in self.query(
                "SELECT idx, pool, kind, name, top FROM monitor_series WHERE monitor_id = ?1 ORDER BY idx",
                vals![m.id],
            )? {
                let kind = SeriesKind::parse(&r.text(2)?).ok_or_else(|| {
                    StoreError::Type(format!("monitor series kind {}", r.text(2).unwrap_or_default()))
                })?;
                let idx = base + map.len() as u32;
                map.insert(r.u32(0)?, idx);
                w.hosts.push(m.host.clone());
                w.series.push(Series {
                    idx,
                    pool: r.text(1)?,
                    kind,
                    name: r.text(3)?,
                    top: r.bool(4)?,
                });
            }
            let renumber = |s: u32| map.get(&s).copied().unwrap_or(u32::MAX);
            for r in self.query(
                &format!("SELECT {DISK_COLS} FROM monitor_disk WHERE monitor_id = ?1 AND t >= ?2 AND t <= ?3 ORDER BY t, series"),
                vals![m.id, from, to],
            )? {
                let mut d = disk_row(&r, 0)?;
                d.series = renumber(d.series);
                w.disks.push(d);
            }
            for r in self.query(
                "SELECT series, level, t, size, avail, free, files, files_free FROM monitor_fs
                 WHERE monitor_id = ?1 AND t >= ?2 AND t <= ?3 ORDER BY t, series",
                vals![m.id, from, to],
            )? {
                w.fs.push(FsSample {
                    series: renumber(r.u32(0)?),
                    level: level(r.i64(1)?)?,
                    t: r.f64(2)?,
                    size: r.u64(3)?,
                    avail: r.u64(4)?,
                    free: r.u64(5)?,
                    files: r.u64(6)?,
                    files_free: r.u64(7)?,
                });
            }
            for r in self.query(
                "SELECT t, pool, name, kind, detail FROM monitor_events WHERE monitor_id = ?1 AND t >= ?2 AND t <= ?3 ORDER BY t, id",
                vals![m.id, from, to],
            )? {
                w.events.push(MonitorEvent {
                    t: r.f64(0)?,
                    pool: r.text(1)?,
                    name: r.text(2)?,
                    kind: r.text(3)?,
                    detail: r.text(4)?,
                });
            }
        }
        w.disks.sort_by(|a, b| a.t.total_cmp(&b.t));
        w.fs.sort_by(|a, b| a.t.total_cmp(&b.t));
        w.events.sort_by(|a, b| a.t.total_cmp(&b.t));
        Ok(w)
    }

    /// The gauges of monitor `id` (every level), by time.
    pub fn monitor_gauges(&self, id: i64) -> Result<Vec<GaugeSample>> {
        self.query(
            "SELECT series, level, t, key, value FROM monitor_gauges WHERE monitor_id = ?1 ORDER BY t, series, key",
            vals![id],
        )?
        .iter()
        .map(|r| {
            Ok(GaugeSample {
                series: r.u32(0)?,
                level: level(r.i64(1)?)?,
                t: r.f64(2)?,
                key: r.text(3)?,
                value: r.f64(4)?,
            })
        })
        .collect()
    }

    /// How many disk samples monitor `id` holds at each level (full, long-term, hourly).
    pub fn monitor_levels(&self, id: i64) -> Result<[u64; 3]> {
        let mut out = [0u64; 3];
        for r in self.query(
            "SELECT level, COUNT(*) FROM monitor_disk WHERE monitor_id = ?1 GROUP BY level",
            vals![id],
        )? {
            if let Some(slot) = out.get_mut(r.i64(0)? as usize) {
                *slot = r.u64(1)?;
            }
        }
        Ok(out)
    }
}
