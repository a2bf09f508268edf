//! A data challenge's tables: the statistics in seed 002's shape (NAME, MAX, MIN, AVG with SD
//! and SD/AVG %), the catalogue's account, the files that did not end well, and the events.

use storlab_model::challenge::{Account, ChallengeEvent, Stats};

use crate::table::{Cell, Table};

/// The unit the statistics are shown in: the seed printed MB/s (10^6 bytes); MiB/s on request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeUnit {
    /// 10^6 bytes per second, as the seed.
    MB,
    /// 2^20 bytes per second.
    MiB,
}

impl ChallengeUnit {
    /// Bytes per unit.
    pub fn bytes(self) -> f64 {
        match self {
            ChallengeUnit::MB => 1e6,
            ChallengeUnit::MiB => 1048576.0,
        }
    }

    /// Its name in headers.
    pub fn name(self) -> &'static str {
        match self {
            ChallengeUnit::MB => "MB/SEC",
            ChallengeUnit::MiB => "MiB/SEC",
        }
    }
}

/// The statistics as the terminal shows them, in the seed's shape: the AVG column reads
/// `561.603 (+/- 73.85, 13.15 %)`.
pub fn stats_table(stats: &Stats, unit: ChallengeUnit) -> Table {
    let u = unit.name();
    let mut t = Table::with_headers(
        "statistics",
        vec![
            "NAME".into(),
            format!("MAX {u}"),
            format!("MIN {u}"),
            format!("AVG (SD, SD/AVG %) {u}"),
        ],
    );
    let b = unit.bytes();
    for r in &stats.rows {
        t.push(vec![
            Cell::Text(r.name.clone()),
            Cell::fixed(r.max / b, 3),
            Cell::fixed(r.min / b, 3),
            Cell::Text(format!(
                "{:.3} (+/- {:.2}, {:.2} %)",
                r.avg / b,
                r.sd / b,
                r.sd_percent()
            )),
        ]);
    }
    t
}

/// The statistics with every figure in its own column (CSV and spreadsheets).
pub fn stats_data(stats: &Stats, unit: ChallengeUnit) -> Table {
    let u = unit.name();
    let mut t = Table::with_headers(
        "statistics",
        vec![
            "name".into(),
            "pool".into(),
            "direction".into(),
            format!("max {u}"),
            format!("min {u}"),
            format!("avg {u}"),
            format!("sd {u}"),
            "sd/avg %".into(),
        ],
    );
    let b = unit.bytes();
    for r in &stats.rows {
        t.push(vec![
            Cell::Text(r.name.clone()),
            r.pool.clone().map_or(Cell::Empty, Cell::Text),
            Cell::Text(r.direction.clone()),
            Cell::Num(r.max / b),
            Cell::Num(r.min / b),
            Cell::Num(r.avg / b),
            Cell::Num(r.sd / b),
            Cell::Num(r.sd_percent()),
        ]);
    }
    t
}

/// The catalogue's account: how many files are where, and whether every written file is
/// accounted for.
pub fn account_table(a: &Account) -> Table {
    let mut t = Table::new("files", &["files", "count"]);
    let rows: [(&str, u64); 11] = [
        ("written", a.written),
        ("read", a.read),
        ("verified", a.verified),
        ("deleted", a.deleted),
        ("corrupted", a.corrupted.len() as u64),
        ("lost", a.lost.len() as u64),
        ("lost after written", a.lost_written),
        ("rewritten after a crash", a.rewritten),
        ("being written", a.writing),
        ("being read", a.reading),
        ("waiting for a reader", a.waiting),
    ];
    for (name, n) in rows {
        t.push(vec![Cell::Text(name.into()), Cell::Int(n as i64)]);
    }
    t
}

/// The files that did not end well, named, with why.
pub fn bad_files_table(a: &Account) -> Table {
    let mut t = Table::new("files that did not end well", &["what", "pool", "file", "why"]);
    for (what, list) in [("corrupted", &a.corrupted), ("lost", &a.lost)] {
        for f in list {
            t.push(vec![
                Cell::Text(what.into()),
                Cell::Text(f.pool.clone()),
                Cell::Text(f.path.clone()),
                Cell::Text(f.why.clone()),
            ]);
        }
    }
    t
}

/// The timeline: faults, pools full, reclaimed and lost files.
pub fn events_table(events: &[ChallengeEvent]) -> Table {
    let mut t = Table::new("events", &["t (s)", "host", "event", "detail"]);
    for e in events {
        t.push(vec![
            Cell::fixed(e.t, 1),
            Cell::Text(e.host.clone()),
            Cell::Text(e.kind.clone()),
            Cell::Text(e.detail.clone()),
        ]);
    }
    t
}
