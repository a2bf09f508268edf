//! A connection to a PostgreSQL server that went away is replaced at its next use.
//!
//! A server restarted for a minor update, a backend terminated by an administrator, a network
//! blip: each closes the connection, and every statement after fails at once with
//! [`StoreError::Lost`]. Here the store notes the loss and, at each use after it, connects
//! again — at most once per pause, the pause doubling from 250 ms to 5 s, so that many threads
//! and a tight loop do not hammer a server that is starting — and says so on stderr once when
//! the database goes away and once when it is back, with how long it was away. A use while the
//! server is still away fails fast with `Lost`: what to do meanwhile (wait, keep samples, take
//! no new work) is the caller's; see `Store::outage` for how long it has been.
//!
//! A SQLite file does not go away, but it can be held locked by another process or sit on a
//! filesystem that fills (sqlite.rs says `Lost` then): it is treated the same way, except that
//! trying again needs no new connection — the same one is used once it is time — and "back" is
//! said at the first statement that works. A spool file (spool.rs) is never away.

use std::time::{Duration, Instant};

use crate::db::Conn;
use crate::{DbTarget, Result, Store, StoreError};

/// The first pause between two attempts to connect again, and the longest.
const FIRST_PAUSE: Duration = Duration::from_millis(250);
pub(crate) const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// What the store knows of its connection's health.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Since when the server has been away (None: the connection works).
    away_since: Option<Instant>,
    /// Not before this moment is a new connection tried.
    next_try: Option<Instant>,
    pause: Duration,
    /// Why it went away, as the last attempt said.
    reason: String,
}

impl Health {
    /// The next attempt no sooner than a pause twice the last (the first: [`FIRST_PAUSE`]),
    /// at most [`LONGEST_PAUSE`].
    fn try_later(&mut self) {
        self.pause = (self.pause * 2).clamp(FIRST_PAUSE, LONGEST_PAUSE);
        self.next_try = Some(Instant::now() + self.pause);
    }
}

impl Store {
    /// Runs `f` on the connection: a lost one is replaced first when it is time to try again
    /// (else `Lost` at once); a `Lost` from `f` marks the connection lost.
    pub(crate) fn on_conn<T>(&self, f: impl FnOnce(&mut dyn Conn) -> Result<T>) -> Result<T> {
        self.heal()?;
        let r = f(self.conn.borrow_mut().as_mut());
        match &r {
            Err(StoreError::Lost { reason, .. }) => self.went_away(reason),
            Ok(_) => self.back(),
            Err(_) => {}
        }
        r
    }

    /// Says once that a database that was away works again (a SQLite file unlocked, or its
    /// filesystem with room again), and forgets the outage.
    fn back(&self) {
        let since = self.health.borrow().away_since;
        if let Some(since) = since {
            eprintln!(
                "storlab: the results database {} is back after {:.0} s",
                self.target(),
                since.elapsed().as_secs_f64()
            );
            self.healthy();
        }
    }

    /// Forgets an outage (the results went to a spool file, which is never away).
    pub(crate) fn healthy(&self) {
        *self.health.borrow_mut() = Health::default();
    }

    /// How long the server has been away, when it is.
    pub fn outage(&self) -> Option<Duration> {
        self.health.borrow().away_since.map(|t| t.elapsed())
    }

    /// Notes that the server went away (said once per outage).
    fn went_away(&self, reason: &str) {
        let mut h = self.health.borrow_mut();
        if h.away_since.is_none() {
            eprintln!(
                "storlab: the results database {} is away ({reason}); waiting up to {:.0} s for it to come back",
                self.target(),
                self.recovery.borrow().window.as_secs_f64()
            );
            h.away_since = Some(Instant::now());
            h.pause = Duration::ZERO;
            h.try_later();
        }
        h.reason = reason.to_string();
    }

    /// Connects again when the connection was lost and it is time to try; `Lost` while the
    /// server stays away.
    fn heal(&self) -> Result<()> {
        let since = {
            let h = self.health.borrow();
            let Some(since) = h.away_since else { return Ok(()) };
            if h.next_try.is_some_and(|t| Instant::now() < t) {
                return Err(self.lost(&h.reason));
            }
            since
        };
        let DbTarget::Postgres(pg) = self.target() else {
            // A SQLite file: its one connection is tried again as it is.
            self.health.borrow_mut().try_later();
            return Ok(());
        };
        match crate::pg::Postgres::connect(&pg) {
            Ok(conn) => {
                *self.conn.borrow_mut() = Box::new(conn);
                *self.health.borrow_mut() = Health::default();
                eprintln!(
                    "storlab: the results database {pg} is back after {:.0} s",
                    since.elapsed().as_secs_f64()
                );
                Ok(())
            }
            Err(e) => {
                let mut h = self.health.borrow_mut();
                h.try_later();
                h.reason = match e {
                    StoreError::Open { reason, .. } => reason,
                    e => e.to_string(),
                };
                Err(self.lost(&h.reason))
            }
        }
    }

    fn lost(&self, reason: &str) -> StoreError {
        StoreError::Lost {
            target: self.target().to_string(),
            reason: reason.to_string(),
        }
    }
}
