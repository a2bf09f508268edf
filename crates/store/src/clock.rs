//! The database server's clock as the common time base of every host that writes into it.
//!
//! Hosts' clocks disagree — by milliseconds under NTP, by seconds on a host whose NTP is
//! broken, by hours after an administrator's `date`. Samples that hosts store side by side
//! (a challenge's, the monitor's) are placed on intervals by their times, so they must share
//! one clock: the database's, which every host reaches. Each host reads the server's clock as
//! Cristian's algorithm does (F. Cristian, "Probabilistic clock synchronization", Distributed
//! Computing 3(3), 1989): it asks for the server's time several times and keeps the answer with
//! the shortest round trip, taking the server's time to be that answer at the midpoint of the
//! round trip on its own monotonic clock; the error is at most half that round trip. From there
//! the host counts on its monotonic clock (a step of its wall clock moves nothing), and reads
//! the server's clock again now and then; when the two part by more than the reading's error,
//! the time base is stepped by the difference and the step recorded.
//!
//! Every reading is stored (`clock_readings`, migration 13) with the host's wall-clock offset
//! to the server, so that `challenge show` can say which host's clock was off and by how much.

use std::time::{Duration, Instant, SystemTime};

use crate::db::{one, vals, Conn, Dialect};
use crate::{Result, Store, StoreError};

/// How many times the server's clock is asked per reading; the quickest answer is kept.
const ASKS: usize = 8;

/// The SQL expression of the database's clock, seconds since the epoch: PostgreSQL's
/// `clock_timestamp()` (the moment of the call, not of the transaction's start), SQLite's
/// `julianday('now')` (the host's own clock: one host, one clock).
pub(crate) fn now_sql(d: Dialect) -> &'static str {
    match d {
        Dialect::Sqlite => "((julianday('now') - 2440587.5) * 86400.0)",
        Dialect::Postgres => "(EXTRACT(EPOCH FROM clock_timestamp())::float8)",
    }
}

/// The database's clock, seconds since the epoch, inside a transaction.
pub(crate) fn db_now(c: &mut dyn Conn) -> Result<f64> {
    let sql = format!("SELECT {}", now_sql(c.dialect()));
    one(c.query(&sql, &[])?)
        .ok_or_else(|| StoreError::Request("the database did not tell its time".into()))?
        .f64(0)
}

fn wall() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// One reading of the server's clock.
#[derive(Debug, Clone, Copy)]
pub struct ClockReading {
    /// The moment on this host's monotonic clock the server's time is placed at.
    pub at: Instant,
    /// The server's time then, seconds since the epoch.
    pub server: f64,
    /// The server's clock minus this host's wall clock, seconds (positive: this host is behind).
    pub offset: f64,
    /// The round trip of the answer kept, seconds: the reading is within half of it.
    pub rtt: f64,
}

/// A stored reading, as `challenge show` lists them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StoredClockReading {
    /// The process that read it (a challenge's agent `HOST/PID`, a monitor's host).
    pub agent: String,
    /// When, on the server's clock (seconds since the epoch).
    pub t: f64,
    /// The server's clock minus the host's wall clock, seconds.
    pub offset: f64,
    /// The round trip of the reading, seconds.
    pub rtt: f64,
    /// How far the host's time base was moved by this reading, seconds (0: it agreed).
    pub step: f64,
}

/// A host's times on the server's clock: the server's time at a moment of the host's monotonic
/// clock, and the monotonic clock from there.
#[derive(Debug, Clone, Copy)]
pub struct TimeBase {
    anchor: Instant,
    server: f64,
}

impl TimeBase {
    /// The time base a reading gives.
    pub fn new(r: &ClockReading) -> TimeBase {
        TimeBase {
            anchor: r.at,
            server: r.server,
        }
    }

    /// A time base on this host's own wall clock (no server to read: a test's, or a reading
    /// that failed): the server's clock taken to be this host's.
    pub fn local() -> TimeBase {
        TimeBase {
            anchor: Instant::now(),
            server: wall(),
        }
    }

    /// The moment `i` on the server's clock, seconds since the epoch.
    pub fn at(&self, i: Instant) -> f64 {
        if i >= self.anchor {
            self.server + (i - self.anchor).as_secs_f64()
        } else {
            self.server - (self.anchor - i).as_secs_f64()
        }
    }

    /// The moment `i` in seconds after `origin` (a moment on the server's clock, seconds since
    /// the epoch). Counted as the base's distance from `origin` plus the monotonic time since
    /// the anchor, so that times near the origin keep their precision (seconds since the epoch
    /// are ~1.8e9, whose doubles step by 2.4e-7 s): two times taken this way differ by exactly
    /// the monotonic time between them.
    pub fn since(&self, origin: f64, i: Instant) -> f64 {
        let from = self.server - origin;
        if i >= self.anchor {
            from + (i - self.anchor).as_secs_f64()
        } else {
            from - (self.anchor - i).as_secs_f64()
        }
    }

    /// Now on the server's clock.
    pub fn now(&self) -> f64 {
        self.at(Instant::now())
    }

    /// Holds the time base against a new reading: when they part by more than the reading's
    /// error (half its round trip, and a millisecond for the server's clock's resolution), the
    /// base is stepped to the reading. Returns the step, seconds (0 when none was needed).
    pub fn correct(&mut self, r: &ClockReading) -> f64 {
        let drift = r.server - self.at(r.at);
        if drift.abs() <= r.rtt / 2.0 + 0.001 {
            return 0.0;
        }
        self.server += drift;
        drift
    }
}

impl Store {
    /// Reads the server's clock (see the module's doc): the quickest of several answers.
    pub fn read_clock(&self) -> Result<ClockReading> {
        self.on_conn(|c| {
            let mut best: Option<ClockReading> = None;
            for _ in 0..ASKS {
                let (before, wall_before) = (Instant::now(), wall());
                let server = db_now(c)?;
                let rtt = before.elapsed();
                let r = ClockReading {
                    at: before + rtt / 2,
                    server,
                    offset: server - (wall_before + rtt.as_secs_f64() / 2.0),
                    rtt: rtt.as_secs_f64(),
                };
                if best.is_none_or(|b| r.rtt < b.rtt) {
                    best = Some(r);
                }
                if rtt < Duration::from_micros(200) {
                    // As good as a reading gets: no need to ask again.
                    break;
                }
            }
            Ok(best.expect("asked at least once"))
        })
    }

    /// Records a reading of `agent` (a challenge's agent, a monitor's host) for `source`
    /// (`challenge ID`, `monitor ID`), and the step it made.
    pub fn add_clock_reading(&self, source: &str, agent: &str, r: &ClockReading, step: f64) -> Result<()> {
        self.on_conn(|c| {
            c.exec(
                "INSERT INTO clock_readings (source, agent, t, offset_seconds, rtt_seconds, step_seconds)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                vals![source, agent, r.server, r.offset, r.rtt, step],
            )
        })
        .map(|_| ())
    }

    /// The readings stored for `source`, by agent and time.
    pub fn clock_readings(&self, source: &str) -> Result<Vec<StoredClockReading>> {
        self.query(
            "SELECT agent, t, offset_seconds, rtt_seconds, step_seconds FROM clock_readings
             WHERE source = ?1 ORDER BY agent, t",
            vals![source],
        )?
        .iter()
        .map(|r| {
            Ok(StoredClockReading {
                agent: r.text(0)?,
                t: r.f64(1)?,
                offset: r.f64(2)?,
                rtt: r.f64(3)?,
                step: r.f64(4)?,
            })
        })
        .collect()
    }

    /// The database's clock, seconds since the epoch.
    pub fn db_now(&self) -> Result<f64> {
        self.on_conn(db_now)
    }

    /// How long the database server has been up, seconds; None for SQLite (no server).
    pub fn server_uptime(&self) -> Result<Option<f64>> {
        self.on_conn(|c| match c.dialect() {
            Dialect::Sqlite => Ok(None),
            Dialect::Postgres => one(c.query(
                "SELECT EXTRACT(EPOCH FROM clock_timestamp() - pg_postmaster_start_time())::float8",
                &[],
            )?)
            .map(|r| r.f64(0))
            .transpose(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_base_counts_on_and_steps_only_past_the_readings_error() {
        let at = Instant::now();
        let r = ClockReading {
            at,
            server: 1000.0,
            offset: 5.0,
            rtt: 0.004,
        };
        let mut base = TimeBase::new(&r);
        assert_eq!(base.at(at + Duration::from_millis(1500)), 1001.5);
        assert_eq!(base.at(at - Duration::from_millis(500)), 999.5);
        // Within half the round trip (2 ms) and the millisecond of resolution: no step.
        let near = ClockReading {
            at: at + Duration::from_secs(10),
            server: 1010.0025,
            ..r
        };
        assert_eq!(base.correct(&near), 0.0);
        // 50 ms apart: stepped by that much.
        let far = ClockReading {
            at: at + Duration::from_secs(20),
            server: 1020.05,
            ..r
        };
        let step = base.correct(&far);
        assert!((step - 0.05).abs() < 1e-9, "{step}");
        assert!((base.at(at + Duration::from_secs(30)) - 1030.05).abs() < 1e-9);
    }
}
