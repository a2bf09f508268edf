//! The verify scheduler's leases, as the literature does them rather than a lock held by a
//! connection: numbered slot rows per pool (k of them, unique by their key), each held with an
//! expiry on the database's clock and a fencing token that grows with every grant; a renewal or
//! a report under a token that is no longer the slot's is refused. A grant is one transaction
//! that first writes the pool's token row (PostgreSQL: and locks it), so grants in a pool are
//! serialized on both back-ends.
//!
//! Turn: a server waiting whose last complete verify is older (never verified: oldest of all)
//! goes first; a waiting server whose agent has not been seen for three leases does not hold
//! the others back.

use crate::clock::db_now;
use crate::db::{one, vals, Conn, Dialect};
use crate::{Result, Store, StoreError};

/// A slot granted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grant {
    /// The slot's number (1 to k).
    pub slot: i64,
    /// The fencing token.
    pub token: i64,
    /// When the lease ends, on the database's clock (seconds since the epoch).
    pub expires: f64,
}

/// An entry of the scheduler's event log.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedEvent {
    /// When, on the database's clock.
    pub t: f64,
    /// The pool.
    pub pool: String,
    /// The server.
    pub server: String,
    /// The agent (host/pid).
    pub agent: String,
    /// The token it acted under.
    pub token: Option<i64>,
    /// granted, renewed-lost, released, started, progress, complete, stopped, refused, …
    pub kind: String,
    /// In words.
    pub detail: String,
}

/// A server as the database knows it: its last complete verify and what holds its slot now.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SchedServer {
    /// The pool.
    pub pool: String,
    /// The server.
    pub server: String,
    /// When its agent last asked for a slot (database clock).
    pub seen: f64,
    /// Since when it waits for its turn, if it does.
    pub waiting_since: Option<f64>,
    /// When its last complete verify ended.
    pub last_complete: Option<f64>,
    /// How long that verify took, seconds.
    pub last_duration: Option<f64>,
    /// What that verify found, in the task's words.
    pub last_errors: Option<String>,
    /// The lease it holds now, if any.
    pub running: Option<SchedRunning>,
}

/// A live lease.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SchedRunning {
    /// The slot.
    pub slot: i64,
    /// The fencing token.
    pub token: i64,
    /// The agent holding it.
    pub agent: String,
    /// When it was granted.
    pub since: f64,
    /// When it ends unless renewed.
    pub expires: f64,
    /// The last thing the agent reported under it (started, progress, paused, …) and its words.
    pub last: Option<(String, String)>,
}

fn log(
    c: &mut dyn Conn,
    t: f64,
    (pool, server, agent): (&str, &str, &str),
    token: Option<i64>,
    kind: &str,
    detail: &str,
) -> Result<()> {
    c.exec(
        "INSERT INTO sched_events (t, pool, server, agent, token, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        vals![t, pool, server, agent, token, kind, detail],
    )?;
    Ok(())
}

impl Store {
    /// The database's clock.
    pub fn sched_now(&self) -> Result<f64> {
        self.on_conn(db_now)
    }

    /// Asks for one of pool `pool`'s `k` slots for `server`, run by `agent`, for `lease`
    /// seconds. None when it is not this server's turn, every slot is held, or another agent
    /// holds a live lease for this server already.
    pub fn sched_acquire(&self, pool: &str, server: &str, agent: &str, k: i64, lease: f64) -> Result<Option<Grant>> {
        self.tx(|c| {
            // A write first: SQLite takes its write lock here; PostgreSQL's row lock follows.
            c.exec("INSERT INTO sched_pools (pool) VALUES (?1) ON CONFLICT (pool) DO NOTHING", vals![pool])?;
            if c.dialect() == Dialect::Postgres {
                c.query("SELECT next_token FROM sched_pools WHERE pool = ?1 FOR UPDATE", vals![pool])?;
            }
            let now = db_now(c)?;
            for slot in 1..=k {
                c.exec(
                    "INSERT INTO sched_slots (pool, slot) VALUES (?1, ?2) ON CONFLICT (pool, slot) DO NOTHING",
                    vals![pool, slot],
                )?;
            }
            c.exec(
                "INSERT INTO sched_servers (pool, server, waiting_since, seen) VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT (pool, server) DO UPDATE SET seen = ?3,
                     waiting_since = COALESCE(sched_servers.waiting_since, ?3)",
                vals![pool, server, now],
            )?;
            if let Some(r) = one(c.query(
                "SELECT agent FROM sched_slots WHERE pool = ?1 AND server = ?2 AND expires > ?3",
                vals![pool, server, now],
            )?) {
                let holder = r.opt_text(0)?.unwrap_or_default();
                if holder != agent {
                    log(c, now, (pool, server, agent), None, "refused", &format!("{server} holds a slot already, through agent {holder}"))?;
                }
                return Ok(None);
            }
            // Turn: the waiting server (seen within three leases) with the oldest complete
            // verify, never verified first, then by name.
            let first = one(c.query(
                "SELECT server FROM sched_servers
                 WHERE pool = ?1 AND waiting_since IS NOT NULL AND seen > ?2
                   AND server NOT IN (SELECT server FROM sched_slots WHERE pool = ?1 AND server IS NOT NULL AND expires > ?3)
                 ORDER BY CASE WHEN last_complete IS NULL THEN 0 ELSE 1 END, last_complete, server LIMIT 1",
                vals![pool, now - 3.0 * lease, now],
            )?)
            .map(|r| r.text(0))
            .transpose()?;
            if first.as_deref() != Some(server) {
                return Ok(None);
            }
            let Some(free) = one(c.query(
                "SELECT slot FROM sched_slots WHERE pool = ?1 AND slot <= ?2 AND (server IS NULL OR expires IS NULL OR expires <= ?3)
                 ORDER BY slot LIMIT 1",
                vals![pool, k, now],
            )?) else {
                return Ok(None);
            };
            let slot = free.i64(0)?;
            let token = one(c.query(
                "UPDATE sched_pools SET next_token = next_token + 1 WHERE pool = ?1 RETURNING next_token - 1",
                vals![pool],
            )?)
            .ok_or_else(|| StoreError::Request(format!("pool {pool} has no token row")))?
            .i64(0)?;
            let expires = now + lease;
            c.exec(
                "UPDATE sched_slots SET server = ?3, agent = ?4, token = ?5, expires = ?6 WHERE pool = ?1 AND slot = ?2",
                vals![pool, slot, server, agent, token, expires],
            )?;
            c.exec(
                "UPDATE sched_servers SET waiting_since = NULL WHERE pool = ?1 AND server = ?2",
                vals![pool, server],
            )?;
            log(c, now, (pool, server, agent), Some(token), "granted", &format!("slot {slot} of {k} until {expires:.3}"))?;
            Ok(Some(Grant { slot, token, expires }))
        })
    }

    /// Renews a lease for `lease` seconds more; false when the lease is no longer this token's
    /// (it expired and the slot went to another, or was never granted): the agent must stop.
    pub fn sched_renew(&self, pool: &str, grant: &Grant, agent: &str, lease: f64) -> Result<Option<f64>> {
        self.tx(|c| {
            let now = db_now(c)?;
            let expires = now + lease;
            let n = c.exec(
                "UPDATE sched_slots SET expires = ?5 WHERE pool = ?1 AND slot = ?2 AND token = ?3 AND agent = ?4 AND expires > ?6",
                vals![pool, grant.slot, grant.token, agent, expires, now],
            )?;
            if n == 1 {
                // Each renewal is in the log, so that a task's lease can be followed from the log
                // alone (an agent killed with its task running ends at its last expiry).
                let server = one(c.query(
                    "SELECT server FROM sched_slots WHERE pool = ?1 AND slot = ?2",
                    vals![pool, grant.slot],
                )?)
                .map(|r| r.text(0))
                .transpose()?
                .unwrap_or_default();
                log(c, now, (pool, &server, agent), Some(grant.token), "renewed", &format!("until {expires:.3}"))?;
            }
            Ok((n == 1).then_some(expires))
        })
    }

    /// Records what an agent did under `token` (`started`, `progress`, `complete`, `stopped`,
    /// …); refused (false, and logged as such) when the token is not a live lease's — a task
    /// reported under an outdated token. `complete` also records the server's verify as done at
    /// the database's time, with its duration and what it found.
    #[allow(clippy::too_many_arguments)]
    pub fn sched_report(
        &self,
        pool: &str,
        server: &str,
        agent: &str,
        token: i64,
        kind: &str,
        detail: &str,
        complete: Option<(f64, &str)>,
    ) -> Result<bool> {
        self.tx(|c| {
            let now = db_now(c)?;
            let live = one(c.query(
                "SELECT slot FROM sched_slots WHERE pool = ?1 AND server = ?2 AND agent = ?3 AND token = ?4 AND expires > ?5",
                vals![pool, server, agent, token, now],
            )?)
            .is_some();
            if !live {
                log(c, now, (pool, server, agent), Some(token), "refused", &format!("{kind} under token {token}, which holds no slot now: {detail}"))?;
                return Ok(false);
            }
            log(c, now, (pool, server, agent), Some(token), kind, detail)?;
            if let Some((seconds, errors)) = complete {
                c.exec(
                    "UPDATE sched_servers SET last_complete = ?3, last_duration = ?4, last_errors = ?5 WHERE pool = ?1 AND server = ?2",
                    vals![pool, server, now, seconds, errors],
                )?;
            }
            Ok(true)
        })
    }

    /// [`Store::sched_report`] made again after a lost connection, when the first try may have
    /// committed: a report already in the log under the same token (same kind and words) is
    /// not logged twice.
    #[allow(clippy::too_many_arguments)]
    pub fn sched_report_again(
        &self,
        pool: &str,
        server: &str,
        agent: &str,
        token: i64,
        kind: &str,
        detail: &str,
        complete: Option<(f64, &str)>,
    ) -> Result<bool> {
        let logged = one(self.query(
            "SELECT 1 FROM sched_events WHERE pool = ?1 AND server = ?2 AND agent = ?3 AND token = ?4 AND kind = ?5 AND detail = ?6",
            vals![pool, server, agent, token, kind, detail],
        )?)
        .is_some();
        if logged {
            return Ok(true);
        }
        self.sched_report(pool, server, agent, token, kind, detail, complete)
    }

    /// Gives a slot back (its task ended or was stopped). A token that no longer holds it
    /// changes nothing.
    pub fn sched_release(&self, pool: &str, grant: &Grant, agent: &str) -> Result<bool> {
        self.tx(|c| {
            let now = db_now(c)?;
            let n = c.exec(
                "UPDATE sched_slots SET server = NULL, agent = NULL, expires = NULL WHERE pool = ?1 AND slot = ?2 AND token = ?3 AND agent = ?4",
                vals![pool, grant.slot, grant.token, agent],
            )?;
            if n == 1 {
                let server = one(c.query(
                    "SELECT server FROM sched_events WHERE pool = ?1 AND token = ?2 AND kind = 'granted'",
                    vals![pool, grant.token],
                )?)
                .map(|r| r.text(0))
                .transpose()?
                .unwrap_or_default();
                log(c, now, (pool, &server, agent), Some(grant.token), "released", &format!("slot {}", grant.slot))?;
            }
            Ok(n == 1)
        })
    }

    /// Every server the scheduler has seen, by pool and name, with its live lease.
    pub fn sched_servers(&self) -> Result<Vec<SchedServer>> {
        let now = self.sched_now()?;
        let rows = self.query(
            "SELECT s.pool, s.server, s.seen, s.waiting_since, s.last_complete, s.last_duration, s.last_errors,
                    l.slot, l.token, l.agent, l.expires
             FROM sched_servers s LEFT JOIN sched_slots l
               ON l.pool = s.pool AND l.server = s.server AND l.expires > ?1
             ORDER BY s.pool, s.server",
            vals![now],
        )?;
        let mut out = Vec::new();
        for r in rows {
            let (pool, token) = (r.text(0)?, r.opt_i64(8)?);
            let running = match token {
                None => None,
                Some(token) => {
                    let t = |kinds: &str| -> Result<Option<(f64, String, String)>> {
                        one(self.query(
                            &format!(
                                "SELECT t, kind, detail FROM sched_events WHERE pool = ?1 AND token = ?2 AND kind IN ({kinds}) ORDER BY t DESC, id DESC LIMIT 1"
                            ),
                            vals![pool.as_str(), token],
                        )?)
                        .map(|r| Ok((r.f64(0)?, r.text(1)?, r.text(2)?)))
                        .transpose()
                    };
                    let since = t("'granted'")?.map_or(now, |g| g.0);
                    let last = t("'started', 'progress', 'paused', 'resumed'")?.map(|(_, k, d)| (k, d));
                    Some(SchedRunning {
                        slot: r.i64(7)?,
                        token,
                        agent: r.opt_text(9)?.unwrap_or_default(),
                        since,
                        expires: r.f64(10)?,
                        last,
                    })
                }
            };
            out.push(SchedServer {
                pool,
                server: r.text(1)?,
                seen: r.f64(2)?,
                waiting_since: r.opt_f64(3)?,
                last_complete: r.opt_f64(4)?,
                last_duration: r.opt_f64(5)?,
                last_errors: r.opt_text(6)?,
                running,
            });
        }
        Ok(out)
    }

    /// The event log of a pool (every pool: None), in time order.
    pub fn sched_events(&self, pool: Option<&str>) -> Result<Vec<SchedEvent>> {
        let rows = match pool {
            Some(p) => self.query(
                "SELECT t, pool, server, agent, token, kind, detail FROM sched_events WHERE pool = ?1 ORDER BY t, id",
                vals![p],
            )?,
            None => self.query(
                "SELECT t, pool, server, agent, token, kind, detail FROM sched_events ORDER BY t, id",
                &[],
            )?,
        };
        rows.iter()
            .map(|r| {
                Ok(SchedEvent {
                    t: r.f64(0)?,
                    pool: r.text(1)?,
                    server: r.text(2)?,
                    agent: r.text(3)?,
                    token: r.opt_i64(4)?,
                    kind: r.text(5)?,
                    detail: r.text(6)?,
                })
            })
            .collect()
    }
}
