//! The data challenge's catalogue: its definition, every file's life (handed to a writer,
//! written, handed to a reader, read and verified or found corrupted, or lost), leases that let
//! another host reclaim the files of one that died, the samples and the events.
//!
//! Each step of a file is one statement, committed on its own: a crash loses no step that was
//! reported done, and many hosts take work from the same tables at once. A reader's pick is one
//! `UPDATE … WHERE seq = (SELECT … LIMIT 1)` (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so readers
//! on many hosts never wait for each other's pick); sequence numbers are reserved in blocks.

use storlab_model::challenge::{
    Account, ChallengeEvent, ChallengeSample, ChallengeSpec, FileState, FileTicket, NamedFile,
};

use crate::db::{one, vals, Dialect, Row};
use crate::runs::named;
use crate::{new_uuid, now_rfc3339, Result, Store, StoreError};

/// A challenge as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredChallenge {
    /// Its id.
    pub id: i64,
    /// Its identity across databases.
    pub uuid: String,
    /// When it was defined (RFC 3339).
    pub created_at: String,
    /// Its definition.
    pub spec: ChallengeSpec,
    /// defined, running, done, failed.
    pub status: String,
    /// When it started (seconds since the epoch), once a host has started it.
    pub t0: Option<f64>,
}

/// What a reader found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Every block verified.
    Verified,
    /// A block did not: where and why.
    Corrupted(String),
}

/// A file ticket from a row of `seq, pool, name, seed`.
fn ticket(r: &Row) -> Result<FileTicket> {
    Ok(FileTicket {
        seq: r.u64(0)?,
        pool: r.u64(1)? as usize,
        name: r.text(2)?,
        seed: r.i64(3)? as u64,
    })
}

/// A challenge from a row of `id, uuid, created_at, spec, status, t0`.
fn stored_challenge(r: &Row) -> Result<StoredChallenge> {
    Ok(StoredChallenge {
        id: r.i64(0)?,
        uuid: r.text(1)?,
        created_at: r.text(2)?,
        spec: serde_json::from_str(&r.text(3)?)?,
        status: r.text(4)?,
        t0: r.opt_f64(5)?,
    })
}

fn seed_val(seed: u64) -> i64 {
    seed as i64
}

impl Store {
    /// Defines a challenge; returns its id.
    pub fn create_challenge(&self, spec: &ChallengeSpec) -> Result<i64> {
        let rows = self.query(
            "INSERT INTO challenges (uuid, created_at, spec, status) VALUES (?1, ?2, ?3, 'defined') RETURNING id",
            vals![new_uuid(), now_rfc3339(), serde_json::to_string(spec)?],
        )?;
        crate::write::returned_id(rows)
    }

    /// A challenge, or None.
    pub fn challenge(&self, id: i64) -> Result<Option<StoredChallenge>> {
        one(self.query(
            "SELECT id, uuid, created_at, spec, status, t0 FROM challenges WHERE id = ?1",
            vals![id],
        )?)
        .map(|r| stored_challenge(&r))
        .transpose()
    }

    /// Every challenge, newest first, each with how many runs took part in it (one per agent
    /// process that began its share; a resumed host counts again).
    pub fn challenges(&self) -> Result<Vec<(StoredChallenge, u64)>> {
        self.query(
            "SELECT id, uuid, created_at, spec, status, t0, \
             (SELECT COUNT(*) FROM challenge_runs r WHERE r.challenge_id = c.id) \
             FROM challenges c ORDER BY id DESC",
            &[],
        )?
        .iter()
        .map(|r| Ok((stored_challenge(r)?, r.u64(6)?)))
        .collect()
    }

    /// Marks the challenge started now on the database's clock (seconds since the epoch) unless
    /// a host started it already; returns its start, which every host's times count from.
    pub fn start_challenge(&self, id: i64, run_id: i64, host: &str) -> Result<f64> {
        self.tx(|c| {
            let now = crate::clock::db_now(c)?;
            c.exec(
                "UPDATE challenges SET t0 = ?2, status = 'running' WHERE id = ?1 AND t0 IS NULL",
                vals![id, now],
            )?;
            c.exec(
                "INSERT INTO challenge_runs (challenge_id, run_id, host) VALUES (?1, ?2, ?3)",
                vals![id, run_id, host],
            )?;
            let t0 = one(c.query("SELECT t0 FROM challenges WHERE id = ?1", vals![id])?)
                .ok_or_else(|| StoreError::Request(format!("no challenge {id}")))?;
            t0.f64(0)
        })
    }

    /// Sets the challenge's status.
    pub fn set_challenge_status(&self, id: i64, status: &str) -> Result<()> {
        self.exec_one("UPDATE challenges SET status = ?2 WHERE id = ?1", vals![id, status])
    }

    /// Takes the challenge's end for this host: true for the one host that gets it (it checks
    /// the pools against the catalogue and removes what is left), false when another has.
    pub fn claim_end(&self, id: i64) -> Result<bool> {
        let rows = self.query(
            "UPDATE challenges SET status = 'ending' WHERE id = ?1 AND status IN ('defined', 'running') RETURNING id",
            vals![id],
        )?;
        Ok(!rows.is_empty())
    }

    /// The runs (one per host that took part) of a challenge.
    pub fn challenge_runs(&self, id: i64) -> Result<Vec<(i64, String)>> {
        self.query(
            "SELECT run_id, host FROM challenge_runs WHERE challenge_id = ?1 ORDER BY run_id",
            vals![id],
        )?
        .iter()
        .map(|r| Ok((r.i64(0)?, r.text(1)?)))
        .collect()
    }

    /// Reserves the next `n` file numbers; returns the first.
    pub fn reserve_files(&self, id: i64, n: u64) -> Result<u64> {
        let rows = self.query(
            "UPDATE challenges SET next_seq = next_seq + ?2 WHERE id = ?1 RETURNING next_seq",
            vals![id, n],
        )?;
        let end = one(rows)
            .ok_or_else(|| StoreError::Request(format!("no challenge {id}")))?
            .u64(0)?;
        Ok(end - n + 1)
    }

    /// Hands file `t` to a writer on `host` (its lease `lease` seconds from now on the
    /// database's clock); with a `limit`, only while fewer than `limit` files have been begun
    /// (false: the challenge has all its files, nothing stored). File numbers may have gaps (a
    /// dead agent's unused numbers); the count of files begun has none.
    ///
    /// `again`: the call is a retry after the connection went away, and the first try may have
    /// committed; the file already begun by `host` is then taken as begun (once).
    pub fn begin_write(
        &self,
        id: i64,
        t: &FileTicket,
        host: &str,
        lease: f64,
        limit: Option<u64>,
        again: bool,
    ) -> Result<bool> {
        if again {
            if let Some(r) = one(self.query(
                "SELECT host FROM challenge_files WHERE challenge_id = ?1 AND seq = ?2",
                vals![id, t.seq],
            )?) {
                return Ok(r.text(0)? == host);
            }
        }
        let now = crate::clock::now_sql(self.conn.borrow().dialect());
        if self.conn.borrow().dialect() == Dialect::Postgres {
            // One statement, one round trip: the count and the row in a data-modifying CTE
            // (a transaction of two statements costs four round trips per file).
            let sql = format!(
                "WITH taken AS (
                     UPDATE challenges SET started = started + 1
                     WHERE id = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR started < CAST(?2 AS BIGINT)) RETURNING id)
                 INSERT INTO challenge_files (challenge_id, seq, pool, name, seed, state, host, lease_until)
                 SELECT id, ?3, ?4, ?5, ?6, 'writing', ?7, {now} + ?8 FROM taken RETURNING seq"
            );
            let rows = self.query(
                &sql,
                vals![id, limit, t.seq, t.pool as u64, &t.name, seed_val(t.seed), host, lease],
            )?;
            return Ok(!rows.is_empty());
        }
        self.tx(|c| {
            let taken = c.query(
                "UPDATE challenges SET started = started + 1 WHERE id = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR started < CAST(?2 AS BIGINT)) RETURNING started",
                vals![id, limit],
            )?;
            if taken.is_empty() {
                return Ok(false);
            }
            c.exec(
                &format!(
                    "INSERT INTO challenge_files (challenge_id, seq, pool, name, seed, state, host, lease_until)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'writing', ?6, {now} + ?7)"
                ),
                vals![id, t.seq, t.pool as u64, &t.name, seed_val(t.seed), host, lease],
            )?;
            Ok(true)
        })
    }

    /// File `seq` is written whole, at `t` seconds.
    /// False when the file is no longer `host`'s (its lease ran out and another agent took it
    /// over): nothing is recorded, the other agent writes it. The same call made again (a retry
    /// after the connection went away, the first may have committed) finds it done: true.
    pub fn end_write(&self, id: i64, seq: u64, t: f64, host: &str) -> Result<bool> {
        let rows = self.query(
            "UPDATE challenge_files SET state = 'written', written_at = ?3
             WHERE challenge_id = ?1 AND seq = ?2 AND host = ?4 AND state = 'writing' RETURNING seq",
            vals![id, seq, t, host],
        )?;
        if !rows.is_empty() {
            return Ok(true);
        }
        // A retry whose first try committed (its answer lost with the connection): the write
        // recorded is this one, by its time, whatever became of the file since — a reader may
        // have taken it already (tests/db.rs saw one, and the writer called it taken over).
        let recorded = self.query(
            "SELECT seq FROM challenge_files WHERE challenge_id = ?1 AND seq = ?2 AND written_at = ?3",
            vals![id, seq, t],
        )?;
        Ok(!recorded.is_empty())
    }

    /// Hands the oldest written file to a reader on `host` (its lease `lease` seconds from now on
    /// the database's clock), from a pool not in `skip`; None when none is waiting.
    pub fn begin_read(&self, id: i64, host: &str, lease: f64, skip: &[usize]) -> Result<Option<FileTicket>> {
        let not_in = if skip.is_empty() {
            String::new()
        } else {
            let pools: Vec<String> = skip.iter().map(|p| p.to_string()).collect();
            format!(" AND pool NOT IN ({})", pools.join(","))
        };
        let lock = match self.conn.borrow().dialect() {
            Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        let now = crate::clock::now_sql(self.conn.borrow().dialect());
        let sql = format!(
            "UPDATE challenge_files SET state = 'reading', host = ?2, lease_until = {now} + ?3
             WHERE challenge_id = ?1 AND state = 'written' AND seq = (
                 SELECT seq FROM challenge_files WHERE challenge_id = ?1 AND state = 'written'{not_in}
                 ORDER BY seq LIMIT 1{lock})
             RETURNING seq, pool, name, seed"
        );
        let Some(r) = one(self.query(&sql, vals![id, host, lease])?) else {
            return Ok(None);
        };
        ticket(&r).map(Some)
    }

    /// File `seq` was read whole at `t`: verified, or corrupted (and why), and deleted.
    /// False when the file is no longer `host`'s (its lease ran out and it waits again for a
    /// reader): nothing is recorded, and the caller must leave the file for that reader. The
    /// same call made again after a lost connection finds it done: true.
    pub fn end_read(&self, id: i64, seq: u64, t: f64, outcome: &ReadOutcome, host: &str) -> Result<bool> {
        let (state, error) = match outcome {
            ReadOutcome::Verified => (FileState::Done, None),
            ReadOutcome::Corrupted(why) => (FileState::Corrupted, Some(why.as_str())),
        };
        let rows = self.query(
            "UPDATE challenge_files SET state = ?3, read_at = ?4, error = ?5
             WHERE challenge_id = ?1 AND seq = ?2 AND host = ?6
               AND (state = 'reading' OR (state = ?3 AND read_at = ?4)) RETURNING seq",
            vals![id, seq, state.name(), t, error, host],
        )?;
        Ok(!rows.is_empty())
    }

    /// File `seq` is lost, with why. A file lost before it was written whole does not count
    /// among the files begun: another takes its place. Once: a file lost already stays as it
    /// was (the same call again after a lost connection changes nothing).
    pub fn lose_file(&self, id: i64, seq: u64, why: &str) -> Result<()> {
        self.tx(|c| {
            let unwritten = c.query(
                "UPDATE challenge_files SET state = 'lost', error = ?3 WHERE challenge_id = ?1 AND seq = ?2
                 AND written_at IS NULL AND state <> 'lost' RETURNING seq",
                vals![id, seq, why],
            )?;
            if unwritten.is_empty() {
                c.exec(
                    "UPDATE challenge_files SET state = 'lost', error = ?3 WHERE challenge_id = ?1 AND seq = ?2
                     AND state <> 'lost'",
                    vals![id, seq, why],
                )?;
            } else {
                c.exec("UPDATE challenges SET started = started - 1 WHERE id = ?1", vals![id])?;
            }
            Ok(())
        })
    }

    /// Every file waiting in pool `pool` is lost (its device is gone), with why; returns how
    /// many.
    pub fn lose_pool(&self, id: i64, pool: usize, why: &str) -> Result<u64> {
        Ok(self
            .query(
                "UPDATE challenge_files SET state = 'lost', error = ?3 WHERE challenge_id = ?1 AND pool = ?2
                 AND state = 'written' RETURNING seq",
                vals![id, pool as u64, why],
            )?
            .len() as u64)
    }

    /// A writer gives file `seq` up unwritten (its thread never heard that it had it): no one
    /// owns it and its lease is over, so the next reclaim (`reclaim_expired`) hands it to a
    /// writer to be written again.
    pub fn abandon_write(&self, id: i64, seq: u64, host: &str) -> Result<()> {
        self.exec_one(
            "UPDATE challenge_files SET host = '', lease_until = 0
             WHERE challenge_id = ?1 AND seq = ?2 AND host = ?3 AND state = 'writing'",
            vals![id, seq, host],
        )
    }

    /// A reader gives file `seq` back unread (its pool went away for a while): it waits again.
    pub fn return_file(&self, id: i64, seq: u64) -> Result<()> {
        self.exec_one(
            "UPDATE challenge_files SET state = 'written' WHERE challenge_id = ?1 AND seq = ?2 AND state = 'reading'",
            vals![id, seq],
        )
    }

    /// Ends the lease of file `seq` now: whoever comes next (a resumed process, another agent)
    /// takes it over.
    pub fn expire_lease(&self, id: i64, seq: u64) -> Result<()> {
        self.exec_one(
            "UPDATE challenge_files SET lease_until = 0 WHERE challenge_id = ?1 AND seq = ?2",
            vals![id, seq],
        )
    }

    /// Extends the leases of `host`'s files in flight to `lease` seconds from now on the
    /// database's clock.
    pub fn renew_leases(&self, id: i64, host: &str, lease: f64) -> Result<()> {
        let now = crate::clock::now_sql(self.conn.borrow().dialect());
        self.exec_one(
            &format!(
                "UPDATE challenge_files SET lease_until = {now} + ?3
                 WHERE challenge_id = ?1 AND host = ?2 AND state IN ('writing', 'reading')"
            ),
            vals![id, host, lease],
        )
    }

    /// Files in flight whose lease ran out on the database's clock (their host died): files
    /// being read wait again for a reader; with `take_writes`, files being written are taken by
    /// `host` (their lease `lease` seconds from now) to be rewritten (the caller writes them
    /// again). Returns those to rewrite.
    ///
    /// Nothing is reclaimed while the server has been up for less than a lease and the longest
    /// pause between two attempts to connect (health.rs): a server that restarted was away for
    /// every agent, whose leases ran out meanwhile through no death of theirs; each connects
    /// again within that pause of the server's return and renews its leases first, and only
    /// what is still unrenewed a lease later belongs to a dead agent.
    pub fn reclaim_expired(&self, id: i64, host: &str, lease: f64, take_writes: bool) -> Result<Vec<FileTicket>> {
        let grace = lease + crate::health::LONGEST_PAUSE.as_secs_f64();
        if self.server_uptime()?.is_some_and(|up| up < grace) {
            return Ok(Vec::new());
        }
        let now = crate::clock::now_sql(self.conn.borrow().dialect());
        self.tx(|c| {
            c.exec(
                &format!(
                    "UPDATE challenge_files SET state = 'written'
                     WHERE challenge_id = ?1 AND state = 'reading' AND lease_until < {now}"
                ),
                vals![id],
            )?;
            if !take_writes {
                return Ok(Vec::new());
            }
            let rows = c.query(
                &format!(
                    "UPDATE challenge_files SET host = ?2, lease_until = {now} + ?3, rewrites = rewrites + 1
                     WHERE challenge_id = ?1 AND state = 'writing' AND lease_until < {now}
                     RETURNING seq, pool, name, seed"
                ),
                vals![id, host, lease],
            )?;
            rows.iter().map(ticket).collect()
        })
    }

    /// The files `host` holds in flight, each with whether it is being written (else read):
    /// after a lost connection an agent compares them with the files its threads hold, and
    /// gives back what a statement whose answer it never got handed it.
    pub fn files_held(&self, id: i64, host: &str) -> Result<Vec<(FileTicket, bool)>> {
        self.query(
            "SELECT seq, pool, name, seed, state FROM challenge_files
             WHERE challenge_id = ?1 AND host = ?2 AND state IN ('writing', 'reading') ORDER BY seq",
            vals![id, host],
        )?
        .iter()
        .map(|r| Ok((ticket(r)?, r.text(4)? == "writing")))
        .collect()
    }

    /// Takes over the files in flight of `agents` (agents that are gone: a crashed process
    /// resumed on its host): files being read wait again for a reader; files being written are
    /// taken by `me` (their lease `lease` seconds from now) to be rewritten (counted). Returns
    /// those to rewrite.
    pub fn take_back(&self, id: i64, agents: &[String], me: &str, lease: f64) -> Result<Vec<FileTicket>> {
        let mut out = Vec::new();
        let now = crate::clock::now_sql(self.conn.borrow().dialect());
        for agent in agents {
            let rows = self.tx(|c| {
                c.exec(
                    "UPDATE challenge_files SET state = 'written'
                     WHERE challenge_id = ?1 AND state = 'reading' AND host = ?2",
                    vals![id, agent],
                )?;
                c.query(
                    &format!(
                        "UPDATE challenge_files SET host = ?3, lease_until = {now} + ?4, rewrites = rewrites + 1
                         WHERE challenge_id = ?1 AND state = 'writing' AND host = ?2
                         RETURNING seq, pool, name, seed"
                    ),
                    vals![id, agent, me, lease],
                )
            })?;
            for r in rows {
                out.push(ticket(&r)?);
            }
        }
        out.sort_by_key(|t| t.seq);
        Ok(out)
    }

    /// How many files other agents than `me` are writing (a dead one's may come back to be
    /// rewritten here).
    pub fn others_writing(&self, id: i64, me: &str) -> Result<u64> {
        self.others_in(id, me, "writing")
    }

    /// How many files other agents than `me` are reading: a dead agent's come back to waiting
    /// when their leases expire, so a reader that would end waits for them.
    pub fn others_reading(&self, id: i64, me: &str) -> Result<u64> {
        self.others_in(id, me, "reading")
    }

    fn others_in(&self, id: i64, me: &str, state: &str) -> Result<u64> {
        one(self.query(
            "SELECT COUNT(*) FROM challenge_files WHERE challenge_id = ?1 AND state = ?3 AND host <> ?2",
            vals![id, me, state],
        )?)
        .ok_or_else(|| StoreError::Request("no row".into()))?
        .u64(0)
    }

    /// The state of the file `name` in pool `pool`, if the catalogue has it.
    pub fn file_state(&self, id: i64, pool: usize, name: &str) -> Result<Option<FileState>> {
        match one(self.query(
            "SELECT state FROM challenge_files WHERE challenge_id = ?1 AND pool = ?2 AND name = ?3",
            vals![id, pool as u64, name],
        )?) {
            Some(r) => Ok(Some(named(r.text(0)?)?)),
            None => Ok(None),
        }
    }

    /// The agents (host names as the catalogue records them) holding files in flight.
    pub fn agents_in_flight(&self, id: i64) -> Result<Vec<String>> {
        self.query(
            "SELECT DISTINCT host FROM challenge_files WHERE challenge_id = ?1 AND state IN ('writing', 'reading')
             ORDER BY host",
            vals![id],
        )?
        .iter()
        .map(|r| r.text(0))
        .collect()
    }

    /// The number the next sample of `host` takes (a resumed host goes on counting).
    pub fn next_sample_idx(&self, id: i64, host: &str) -> Result<u64> {
        let r = one(self.query(
            "SELECT COALESCE(MAX(idx) + 1, 0) FROM challenge_samples WHERE challenge_id = ?1 AND host = ?2",
            vals![id, host],
        )?)
        .ok_or_else(|| StoreError::Request("no row".into()))?;
        r.u64(0)
    }

    /// Files per pool that count against the backlog: being written, or written and not yet
    /// taken by a reader.
    pub fn pool_backlog(&self, id: i64, pools: usize) -> Result<Vec<u64>> {
        let mut n = vec![0; pools];
        for r in self.query(
            "SELECT pool, COUNT(*) FROM challenge_files WHERE challenge_id = ?1 AND state IN ('writing', 'written')
             GROUP BY pool",
            vals![id],
        )? {
            if let Some(slot) = n.get_mut(r.u64(0)? as usize) {
                *slot = r.u64(1)?;
            }
        }
        Ok(n)
    }

    /// The files of `host` in a state, oldest first (resume: what this host had in flight).
    pub fn files_in_state(&self, id: i64, state: FileState, host: Option<&str>) -> Result<Vec<FileTicket>> {
        let rows = match host {
            Some(h) => self.query(
                "SELECT seq, pool, name, seed FROM challenge_files WHERE challenge_id = ?1 AND state = ?2 AND host = ?3
                 ORDER BY seq",
                vals![id, state.name(), h],
            )?,
            None => self.query(
                "SELECT seq, pool, name, seed FROM challenge_files WHERE challenge_id = ?1 AND state = ?2 ORDER BY seq",
                vals![id, state.name()],
            )?,
        };
        rows.iter().map(ticket).collect()
    }

    /// Records one interval's sample, once: the same sample again (a retry after a lost
    /// connection whose first try committed) adds nothing.
    pub fn add_challenge_sample(&self, id: i64, s: &ChallengeSample) -> Result<()> {
        self.tx(|c| {
            for (pool, (r, w)) in s.read.iter().zip(&s.written).enumerate() {
                let dev = s.device.get(pool).copied().flatten();
                c.exec(
                    "INSERT INTO challenge_samples (challenge_id, host, idx, t, seconds, pool, read_bytes, write_bytes, device_busy, device_queue)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING",
                    vals![id, &s.host, s.idx, s.t, s.seconds, pool as u64, *r, *w, dev.map(|d| d.0), dev.map(|d| d.1)],
                )?;
            }
            Ok(())
        })
    }

    /// Every sample of a challenge, by host and interval.
    pub fn challenge_samples(&self, id: i64, pools: usize) -> Result<Vec<ChallengeSample>> {
        let mut out: Vec<ChallengeSample> = Vec::new();
        for r in self.query(
            "SELECT host, idx, t, seconds, pool, read_bytes, write_bytes, device_busy, device_queue FROM challenge_samples
             WHERE challenge_id = ?1 ORDER BY host, idx, pool",
            vals![id],
        )? {
            let (host, idx) = (r.text(0)?, r.u64(1)?);
            if out.last().is_none_or(|s| s.host != host || s.idx != idx) {
                out.push(ChallengeSample {
                    host,
                    idx,
                    t: r.f64(2)?,
                    seconds: r.f64(3)?,
                    read: vec![0; pools],
                    written: vec![0; pools],
                    device: vec![None; pools],
                });
            }
            let s = out.last_mut().expect("pushed above");
            let pool = r.u64(4)? as usize;
            if pool < pools {
                s.read[pool] = r.u64(5)?;
                s.written[pool] = r.u64(6)?;
                s.device[pool] = r.opt_f64(7)?.zip(r.opt_f64(8)?);
            }
        }
        Ok(out)
    }

    /// Records an event, once: the same event again (its time, host, kind and words; a retry
    /// after a lost connection whose first try committed) adds nothing.
    pub fn add_challenge_event(&self, id: i64, e: &ChallengeEvent) -> Result<()> {
        self.exec_one(
            "INSERT INTO challenge_events (challenge_id, t, host, kind, detail)
             SELECT CAST(?1 AS BIGINT), CAST(?2 AS DOUBLE PRECISION), CAST(?3 AS TEXT), CAST(?4 AS TEXT), CAST(?5 AS TEXT)
             WHERE NOT EXISTS (
                 SELECT 1 FROM challenge_events
                 WHERE challenge_id = ?1 AND t = ?2 AND host = ?3 AND kind = ?4 AND detail = ?5)",
            vals![id, e.t, &e.host, &e.kind, &e.detail],
        )
    }

    /// A challenge's events in order.
    pub fn challenge_events(&self, id: i64) -> Result<Vec<ChallengeEvent>> {
        self.query(
            "SELECT t, host, kind, detail FROM challenge_events WHERE challenge_id = ?1 ORDER BY t, id",
            vals![id],
        )?
        .iter()
        .map(|r| {
            Ok(ChallengeEvent {
                t: r.f64(0)?,
                host: r.text(1)?,
                kind: r.text(2)?,
                detail: r.text(3)?,
            })
        })
        .collect()
    }

    /// The catalogue's account of a challenge; `path` names a file from its pool and name.
    pub fn challenge_account(&self, id: i64, path: impl Fn(usize, &str) -> (String, String)) -> Result<Account> {
        let mut a = Account::default();
        for r in self.query(
            "SELECT state, written_at IS NOT NULL, COUNT(*) FROM challenge_files WHERE challenge_id = ?1
             GROUP BY state, written_at IS NOT NULL",
            vals![id],
        )? {
            let state: FileState = named(r.text(0)?)?;
            let (whole, n) = (r.bool(1)?, r.u64(2)?);
            if whole {
                a.written += n;
            }
            match state {
                FileState::Writing => a.writing += n,
                FileState::Written => a.waiting += n,
                FileState::Reading => a.reading += n,
                FileState::Done => {
                    a.read += n;
                    a.verified += n;
                    a.deleted += n;
                }
                FileState::Corrupted => {
                    a.read += n;
                    a.deleted += n;
                }
                FileState::Lost => {
                    if whole {
                        a.lost_written += n;
                    }
                }
            }
        }
        if let Some(r) = one(self.query(
            "SELECT CAST(COALESCE(SUM(rewrites), 0) AS BIGINT) FROM challenge_files WHERE challenge_id = ?1",
            vals![id],
        )?) {
            a.rewritten = r.u64(0)?;
        }
        for r in self.query(
            "SELECT state, pool, name, error FROM challenge_files WHERE challenge_id = ?1 AND state IN ('corrupted', 'lost')
             ORDER BY seq",
            vals![id],
        )? {
            let (pool, file) = path(r.u64(1)? as usize, &r.text(2)?);
            let named = NamedFile {
                pool,
                path: file,
                why: r.opt_text(3)?.unwrap_or_default(),
            };
            if r.text(0)? == "corrupted" {
                a.corrupted.push(named);
            } else {
                a.lost.push(named);
            }
        }
        Ok(a)
    }

    /// The ids of the challenges, newest first.
    pub fn challenge_ids(&self) -> Result<Vec<i64>> {
        self.query("SELECT id FROM challenges ORDER BY id DESC", &[])?
            .iter()
            .map(|r| r.i64(0))
            .collect()
    }

    /// Runs one statement, committed on its own.
    fn exec_one(&self, sql: &str, params: &[crate::db::Val]) -> Result<()> {
        self.on_conn(|c| c.exec(sql, params)).map(|_| ())
    }
}
