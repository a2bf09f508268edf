//! The monitor's tables: the pools' other figures beside seed 002's statistics (which
//! challenge.rs draws for both), and the events.

use storlab_model::monitor::{MonitorEvent, PoolFigures};

use crate::table::{Cell, Table};

/// A time (seconds since the epoch) as RFC 3339 UTC, to the second.
pub fn utc(t: f64) -> String {
    let st = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(t.max(0.0));
    humantime::format_rfc3339_seconds(st).to_string()
}

/// Per pool: bytes moved, operations per second, latency and utilisation over the window.
pub fn figures_table(figures: &[PoolFigures]) -> Table {
    let mut t = Table::new(
        "pools",
        &[
            "pool",
            "hours",
            "read GiB",
            "written GiB",
            "IOPS",
            "latency ms",
            "util avg %",
            "util max %",
        ],
    );
    for f in figures {
        t.push(vec![
            Cell::Text(f.pool.clone()),
            Cell::fixed(f.seconds / 3600.0, 2),
            Cell::fixed(f.read_bytes as f64 / (1u64 << 30) as f64, 3),
            Cell::fixed(f.write_bytes as f64 / (1u64 << 30) as f64, 3),
            Cell::fixed(f.iops, 1),
            Cell::fixed(f.latency * 1000.0, 3),
            Cell::fixed(f.utilisation.0 * 100.0, 1),
            Cell::fixed(f.utilisation.1 * 100.0, 1),
        ]);
    }
    t
}

/// The events, in time order.
pub fn events_table(events: &[MonitorEvent]) -> Table {
    let mut t = Table::new("events", &["time (UTC)", "pool", "what", "event", "detail"]);
    for e in events {
        t.push(vec![
            Cell::Text(utc(e.t)),
            Cell::Text(e.pool.clone()),
            Cell::Text(e.name.clone()),
            Cell::Text(e.kind.clone()),
            Cell::Text(e.detail.clone()),
        ]);
    }
    t
}
