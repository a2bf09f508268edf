//! A data challenge's tables: the statistics in seed 002's shape (NAME, MAX, MIN, AVG with SD
//! and SD/AVG %), the catalogue's account, the files that did not end well, and the events.

use storlab_model::challenge::{bytes_per_agent, bytes_per_pool, Account, ChallengeEvent, HostOutcome, Stats, Taken};

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
    /// MiB/s when `mib` (the `--mib` flag), else MB/s.
    pub fn of(mib: bool) -> ChallengeUnit {
        if mib {
            ChallengeUnit::MiB
        } else {
            ChallengeUnit::MB
        }
    }

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

/// The challenges a database holds, newest first (`storlab challenge list`): each one's state,
/// shape and how many runs (agent processes) took part; `listed` is the store's
/// `Store::challenges`.
pub fn list_table(listed: &[(storlab_store::StoredChallenge, u64)]) -> Table {
    use storlab_units::{utc, Duration, Size};
    let mut t = Table::new(
        "challenges",
        &[
            "id",
            "status",
            "defined",
            "started",
            "pools",
            "writers",
            "readers",
            "file size",
            "length",
            "runs",
        ],
    );
    for (c, runs) in listed {
        let s = &c.spec;
        let length = match (s.duration, s.files) {
            (Some(d), _) => Duration((d * 1e9).round() as u64).to_string(),
            (None, Some(n)) => format!("{n} files"),
            (None, None) => "-".into(),
        };
        let pools: Vec<&str> = s.pools.iter().map(|p| p.name.as_str()).collect();
        t.push(vec![
            Cell::Int(c.id),
            Cell::Text(c.status.clone()),
            Cell::Text(c.created_at.clone()),
            Cell::Text(c.t0.map(utc).unwrap_or_else(|| "-".into())),
            Cell::Text(pools.join(",")),
            Cell::Int(s.writers.into()),
            Cell::Int(s.readers.into()),
            Cell::Text(Size(s.file_size).to_string()),
            Cell::Text(length),
            Cell::Int(*runs as i64),
        ]);
    }
    t
}

/// The challenges as JSON (`storlab challenge list --json`): each one's id (`challenge`, as
/// `show` and `create` name it), uuid, times,
/// status, definition and runs.
pub fn list_document(listed: &[(storlab_store::StoredChallenge, u64)]) -> serde_json::Value {
    listed
        .iter()
        .map(|(c, runs)| {
            serde_json::json!({
                "challenge": c.id,
                "uuid": c.uuid,
                "created_at": c.created_at,
                "status": c.status,
                "t0": c.t0,
                "runs": runs,
                "spec": c.spec,
            })
        })
        .collect()
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

/// The account as text: the counts and the invariant, then the files that did not end well.
pub fn account_text(acc: &Account) -> String {
    let mut out = account_table(acc).to_text();
    out += &format!(
        "written {} = read {} + lost after written {} + left over {}: {}\n",
        acc.written,
        acc.read,
        acc.lost_written,
        acc.left_over(),
        if acc.holds() { "holds" } else { "DOES NOT HOLD" }
    );
    if !acc.corrupted.is_empty() || !acc.lost.is_empty() {
        out.push('\n');
        out += &bad_files_table(acc).to_text();
    }
    out
}

/// The statistics under the seed's heading.
pub fn stats_text(s: &Stats, unit: ChallengeUnit) -> String {
    format!(
        " *** Statistics - Sample Begin: {}, Sample End: {} ({:.2} Hours) ***\n{}{}",
        s.first,
        s.last,
        s.hours,
        stats_table(s, unit).to_text(),
        device_bound_line(s)
    )
}

/// "device-bound: P1 62 % of the time, P2 — (its devices not read)", or nothing when no pool's
/// devices were read.
pub fn device_bound_line(s: &Stats) -> String {
    if s.device_bound.iter().all(|(_, b)| b.is_none()) {
        return String::new();
    }
    let parts: Vec<String> = s
        .device_bound
        .iter()
        .map(|(pool, b)| match b {
            Some(x) => format!("{pool} {:.0} % of the time", x * 100.0),
            None => format!("{pool} — (its devices not read)"),
        })
        .collect();
    format!(
        "device-bound (the pool's busiest device busy 80 % or more with 1.5 I/Os queued): {}\n",
        parts.join(", ")
    )
}

/// What one host's share (`agent`, its process) of challenge `c` came to, as one JSON document.
pub fn outcome_document(c: &storlab_store::StoredChallenge, agent: &str, t: &Taken) -> serde_json::Value {
    serde_json::json!({
        "challenge": c.id,
        "uuid": c.uuid,
        "run": t.run_id,
        "host": agent,
        "here": t.outcome,
        "account": t.account,
        "holds": t.account.holds(),
        "problems": t.problems,
        "ended": t.ended,
        "statistics": t.stats,
    })
}

/// What one host's share of challenge `id` came to, for the terminal: what it moved and how
/// long it waited, the account, the statistics so far and the challenge's events.
pub fn outcome_text(
    id: i64,
    agent: &str,
    o: &HostOutcome,
    acc: &Account,
    stats: &Stats,
    events: &[ChallengeEvent],
    unit: ChallengeUnit,
) -> String {
    let mut out = format!(
        "challenge {id} on {agent}: {:.1} s here; {:.1} MB written, {:.1} MB read; writers idle {:.1} s, readers idle {:.1} s (summed over threads)\n\n",
        o.seconds,
        o.bytes_written as f64 / 1e6,
        o.bytes_read as f64 / 1e6,
        o.writer_idle,
        o.reader_idle
    );
    if o.outages > 0 || o.dropped > 0 {
        out.insert_str(
            out.len() - 1,
            &format!(
                "rode out {} outage(s) of the results database; {} sample(s) and event(s) dropped for want of room while it was away\n",
                o.outages, o.dropped
            ),
        );
    }
    out += &account_text(acc);
    out.push('\n');
    out += &stats_text(stats, unit);
    if !events.is_empty() {
        out.push('\n');
        out += &events_table(events).to_text();
    }
    out
}

/// A challenge as the HTML report draws it.
#[derive(Debug, Clone)]
pub struct ChallengeView {
    /// The challenge.
    pub challenge: storlab_store::StoredChallenge,
    /// Every host's samples.
    pub samples: Vec<storlab_model::challenge::ChallengeSample>,
    /// The timeline.
    pub events: Vec<ChallengeEvent>,
    /// The catalogue's account.
    pub account: Account,
    /// The statistics over the whole challenge.
    pub stats: Stats,
    /// The hosts' runs (run id, host).
    pub runs: Vec<(i64, String)>,
    /// The agents' readings of the database server's clock.
    pub clocks: Vec<storlab_store::StoredClockReading>,
}

/// One agent's readings of the database server's clock, summed up.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgentClock {
    /// The agent (`HOST/PID`).
    pub agent: String,
    /// Its wall clock's offset to the server's at its first and its last reading, seconds
    /// (positive: the host's clock is behind the server's).
    pub first_offset: f64,
    /// At its last reading.
    pub last_offset: f64,
    /// The shortest round trip of its readings, seconds: the readings are good to half of it.
    pub best_rtt: f64,
    /// How many readings.
    pub readings: usize,
    /// The largest step its time base made at a reading, seconds.
    pub largest_step: f64,
}

/// Each agent's clock readings summed up, in the order of the agents' names.
pub fn agent_clocks(readings: &[storlab_store::StoredClockReading]) -> Vec<AgentClock> {
    let mut out: Vec<AgentClock> = Vec::new();
    for r in readings {
        match out.last_mut() {
            Some(a) if a.agent == r.agent => {
                a.last_offset = r.offset;
                a.best_rtt = a.best_rtt.min(r.rtt);
                a.readings += 1;
                if r.step.abs() > a.largest_step.abs() {
                    a.largest_step = r.step;
                }
            }
            _ => out.push(AgentClock {
                agent: r.agent.clone(),
                first_offset: r.offset,
                last_offset: r.offset,
                best_rtt: r.rtt,
                readings: 1,
                largest_step: r.step,
            }),
        }
    }
    out
}

/// How a host's clock stood against the server's, in words: "30.002 s ahead of".
fn offset_words(offset: f64) -> String {
    let (n, unit) = if offset.abs() >= 1.0 {
        (offset.abs(), "s")
    } else {
        (offset.abs() * 1e3, "ms")
    };
    let side = if offset > 0.0 { "behind" } else { "ahead of" };
    format!("{n:.3} {unit} {side}")
}

impl ChallengeView {
    /// `storlab challenge show --json`: the definition, the agents' and pools' bytes, the runs,
    /// the account, the events, and every sample when asked.
    pub fn document(&self, with_samples: bool) -> serde_json::Value {
        let c = &self.challenge;
        let pools: Vec<serde_json::Value> = c
            .spec
            .pools
            .iter()
            .zip(bytes_per_pool(&self.samples, c.spec.pools.len()))
            .map(|(p, (w, r))| serde_json::json!({ "name": p.name, "path": p.path, "bytes_written": w, "bytes_read": r }))
            .collect();
        let agents: Vec<serde_json::Value> = bytes_per_agent(&self.samples)
            .into_iter()
            .map(|(h, w, r)| serde_json::json!({ "agent": h, "bytes_written": w, "bytes_read": r }))
            .collect();
        let runs: Vec<serde_json::Value> = self
            .runs
            .iter()
            .map(|(r, h)| serde_json::json!({"run": r, "host": h}))
            .collect();
        serde_json::json!({
            "challenge": c.id,
            "uuid": c.uuid,
            "created_at": c.created_at,
            "agents": agents,
            "status": c.status,
            "spec": c.spec,
            "runs": runs,
            "clocks": agent_clocks(&self.clocks),
            "account": self.account,
            "holds": self.account.holds(),
            "events": self.events,
            "pools": pools,
            "samples": if with_samples { serde_json::to_value(&self.samples).unwrap_or_default() } else { serde_json::Value::Null },
        })
    }

    /// `storlab challenge show`: the definition, its pools and runs, the account and events.
    pub fn text(&self) -> String {
        let c = &self.challenge;
        let mut out = format!(
            "challenge {} ({}), {}, defined {}\n",
            c.id, c.uuid, c.status, c.created_at
        );
        for p in &c.spec.pools {
            out += &format!("  pool {} {}\n", p.name, p.path.display());
        }
        for (r, h) in &self.runs {
            out += &format!("  run {r} on {h}\n");
        }
        for a in agent_clocks(&self.clocks) {
            out += &format!(
                "  clock of {}: {} the database server's (±{:.1} ms), {} reading(s), largest step {:.1} ms\n",
                a.agent,
                offset_words(a.last_offset),
                a.best_rtt / 2.0 * 1e3,
                a.readings,
                a.largest_step * 1e3
            );
        }
        out.push('\n');
        out += &account_text(&self.account);
        if !self.events.is_empty() {
            out.push('\n');
            out += &events_table(&self.events).to_text();
        }
        out
    }
}

/// Event kinds marked on the plots (a file lost or corrupted is in the tables, not a mark).
const MARKED: [&str; 7] = [
    "fault",
    "undo",
    "pool-full",
    "resumed",
    "reclaimed",
    "task",
    "fault-failed",
];

/// At most this many marks on a plot: more would be unreadable; the events table has them all.
const MAX_MARKS: usize = 24;

/// The highest rate (MB/s) a challenge's plots show: the total's, which bounds every pool's.
pub fn plot_top(v: &ChallengeView) -> f64 {
    let iv = placed(v);
    let all: Vec<usize> = (0..iv.rates.len()).collect();
    iv.sum(&all).into_iter().flatten().fold(0.0, f64::max) / 1e6
}

/// The challenge's samples on its intervals (crates/stats' rule, as `challenge stats` places
/// them): channels 0..pools read, pools..2·pools written.
fn placed(v: &ChallengeView) -> storlab_stats::intervals::Intervals {
    use storlab_stats::intervals::{challenge_spans, place};
    let spec = &v.challenge.spec;
    place(
        &challenge_spans(&v.samples, spec.pools.len()),
        2 * spec.pools.len(),
        spec.interval,
    )
}

/// A mark where the last interval begins when it is shorter than the others (the challenge
/// ended inside it): its point is a rate over that shorter time, drawn at its own end, and says
/// so — a fall there is the end, not a collapse.
fn partial_tail(iv: &storlab_stats::intervals::Intervals) -> Option<(f64, String)> {
    let (end, len) = (*iv.ends.last()?, *iv.lengths.last()?);
    (iv.ends.len() > 1 && len < iv.width * 0.999).then(|| {
        (
            end - len,
            format!("last interval partial: {len:.2} s of {} s", iv.width),
        )
    })
}

/// The challenge's section: what it was, the account, the statistics, the throughput over time
/// (the total, then each pool; on the scale `top` MB/s unless `free`), the events marked.
pub fn render_html(v: &ChallengeView, top: f64, free: bool) -> (String, bool) {
    use std::fmt::Write;

    use crate::svg::{esc, line_chart_marked, nice_ceiling, Series, COLORS};
    let c = &v.challenge;
    let spec = &c.spec;
    let mut h = String::new();
    let _ = write!(
        h,
        "<h2>Challenge {} <span class=\"meta\">{}</span></h2><p class=\"meta\">{} · {} pool(s) · {} writer(s), {} reader(s) per host · {} files in {} requests · samples every {} s, long-term averages over {} s</p>",
        c.id,
        esc(&c.uuid),
        esc(&c.status),
        spec.pools.len(),
        spec.writers,
        spec.readers,
        storlab_units::Size(spec.file_size).words(),
        storlab_units::Size(spec.bs).words(),
        spec.interval,
        spec.lt
    );
    h += &account_table(&v.account).to_html();
    let _ = write!(
        h,
        "<p>written {} = read {} + lost after written {} + left over {}: <b>{}</b></p>",
        v.account.written,
        v.account.read,
        v.account.lost_written,
        v.account.left_over(),
        if v.account.holds() { "holds" } else { "DOES NOT HOLD" }
    );
    if !v.account.corrupted.is_empty() || !v.account.lost.is_empty() {
        h += &bad_files_table(&v.account).to_html();
    }
    h += &stats_table(&v.stats, ChallengeUnit::MB).to_html();
    let bound = device_bound_line(&v.stats);
    if !bound.is_empty() {
        let _ = write!(h, "<p class=\"bound\">{}</p>", esc(bound.trim_end()));
    }
    let iv = placed(v);
    let np = spec.pools.len();
    let mut marks: Vec<(f64, String)> = v
        .events
        .iter()
        .filter(|e| MARKED.contains(&e.kind.as_str()))
        .take(MAX_MARKS)
        .map(|e| {
            (
                e.t,
                format!("{}: {}", e.kind, e.detail.chars().take(40).collect::<String>()),
            )
        })
        .collect();
    if let Some(mark) = partial_tail(&iv) {
        marks.push(mark);
    }
    // Each interval's rate at its end; an interval a running host did not measure is no point.
    let series = |name: &str, color: &'static str, channels: &[usize]| Series {
        name: name.into(),
        color,
        points: iv
            .ends
            .iter()
            .zip(iv.sum(channels))
            .filter_map(|(t, r)| r.map(|r| (*t, r / 1e6)))
            .collect(),
    };
    let reads: Vec<usize> = (0..np).collect();
    let writes: Vec<usize> = (np..2 * np).collect();
    let mut charts: Vec<(String, Vec<Series>)> = vec![(
        "All pools".into(),
        vec![
            series("read+write", COLORS[3], &(0..2 * np).collect::<Vec<_>>()),
            series("read", COLORS[0], &reads),
            series("write", COLORS[1], &writes),
        ],
    )];
    for (p, pool) in spec.pools.iter().enumerate() {
        charts.push((
            format!("Pool {}", pool.name),
            vec![series("read", COLORS[0], &[p]), series("write", COLORS[1], &[np + p])],
        ));
    }
    let mut thinned = false;
    for (title, ser) in &charts {
        let own = ser
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let y = nice_ceiling(if free { own } else { top.max(own) });
        let key = format!("challenge-{}-{}", c.id, title.to_lowercase().replace(' ', "-"));
        let (svg, t) = line_chart_marked(title, &key, "MB/s", "s", ser, y, &marks);
        thinned |= t;
        h += &svg;
    }
    if !v.events.is_empty() {
        h += &events_table(&v.events).to_html();
    }
    (h, thinned)
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    #[test]
    fn each_agents_readings_are_summed_up_and_said_in_words() {
        let r = |agent: &str, offset: f64, rtt: f64, step: f64| storlab_store::StoredClockReading {
            agent: agent.into(),
            t: 0.0,
            offset,
            rtt,
            step,
        };
        let all = [
            r("h/1", -30.0, 0.0004, 0.0),
            r("h/1", -30.01, 0.0002, -0.004),
            r("h/2", 0.0003, 0.001, 0.0),
        ];
        let a = agent_clocks(&all);
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].first_offset, a[0].last_offset, a[0].readings), (-30.0, -30.01, 2));
        assert_eq!((a[0].best_rtt, a[0].largest_step), (0.0002, -0.004));
        assert_eq!(offset_words(-30.01), "30.010 s ahead of");
        assert_eq!(offset_words(0.0003), "0.300 ms behind");
    }
}

#[cfg(test)]
mod tail_tests {
    use super::*;

    #[test]
    fn a_short_last_interval_is_marked_where_it_begins() {
        let iv = |lengths: Vec<f64>| storlab_stats::intervals::Intervals {
            width: 10.0,
            ends: lengths
                .iter()
                .scan(0.0, |t, l| {
                    *t += l;
                    Some(*t)
                })
                .collect(),
            lengths,
            rates: Vec::new(),
        };
        let (at, said) = partial_tail(&iv(vec![10.0, 10.0, 2.5])).unwrap();
        assert_eq!(at, 20.0);
        assert_eq!(said, "last interval partial: 2.50 s of 10 s");
        assert!(
            partial_tail(&iv(vec![10.0, 10.0])).is_none(),
            "whole intervals: no mark"
        );
    }
}
