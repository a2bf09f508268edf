//! The schema: numbered migrations, the same numbers for both back-ends, applied in order at
//! open; a database newer than this build is refused (lib.rs). SQLite records the number in
//! `PRAGMA user_version`, PostgreSQL in the table `storlab_schema`.
//!
//! Most migrations are SQL, written for each back-end where the dialects differ (PostgreSQL's
//! columns are BIGINT, DOUBLE PRECISION, BOOLEAN, TIMESTAMPTZ, JSONB and BYTEA where SQLite's
//! are INTEGER, REAL and TEXT). Migration 5 is code: it rewrites what earlier versions stored
//! in shapes of their own (an imported phase's figures as loose JSON, a study member's role as
//! words) into the typed model. Migration 6 gives every run and study a UUID, their identity
//! across databases (`storlab db copy`).

use storlab_model::plan::PhasePlan;
use storlab_model::result::{Latency, PhaseResult, Throughput};
use storlab_model::run::{ImportedParams, PhaseParams};
use storlab_model::study::{Role, StudyKind};

use crate::db::{vals, Conn, Dialect};
use crate::Result;

/// One step of the schema.
pub(crate) enum Migration {
    /// SQL run as one batch, in each back-end's dialect.
    Sql {
        /// For SQLite.
        sqlite: &'static str,
        /// For PostgreSQL.
        postgres: &'static str,
    },
    /// Code run inside the migration's transaction.
    Code(fn(&mut dyn Conn) -> Result<()>),
}

impl Migration {
    /// Applies it (inside the caller's transaction).
    pub(crate) fn apply(&self, c: &mut dyn Conn) -> Result<()> {
        match self {
            Migration::Sql { sqlite, postgres } => c.batch(match c.dialect() {
                Dialect::Sqlite => sqlite,
                Dialect::Postgres => postgres,
            }),
            Migration::Code(f) => f(c),
        }
    }
}

/// The migrations, in order.
pub(crate) const MIGRATIONS: &[Migration] = &[
    // 1: the first schema.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE runs (
        id              INTEGER PRIMARY KEY,
        started_at      TEXT NOT NULL,
        finished_at     TEXT,
        host            TEXT NOT NULL,
        kind            TEXT NOT NULL,
        job_name        TEXT,
        job             TEXT,
        command         TEXT,
        status          TEXT NOT NULL,
        status_detail   TEXT,
        pid             INTEGER,
        cache_flattered INTEGER NOT NULL DEFAULT 0,
        imported        INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE tags (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key    TEXT NOT NULL,
        value  TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE TABLE environments (
        run_id       INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        kernel       TEXT NOT NULL,
        cpu_model    TEXT NOT NULL,
        cpus         INTEGER NOT NULL,
        memory_bytes INTEGER NOT NULL,
        json         TEXT NOT NULL
    );
    CREATE TABLE phases (
        id                        INTEGER PRIMARY KEY,
        run_id                    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq                       INTEGER NOT NULL,
        kind                      TEXT NOT NULL,
        params                    TEXT NOT NULL,
        bytes_read                INTEGER NOT NULL,
        bytes_written             INTEGER NOT NULL,
        ops_read                  INTEGER NOT NULL,
        ops_written               INTEGER NOT NULL,
        seconds                   REAL NOT NULL,
        bytes_per_sec             REAL NOT NULL,
        iops                      REAL NOT NULL,
        first_done_seconds        REAL NOT NULL,
        first_done_bytes_per_sec  REAL NOT NULL,
        worker_min_bytes_per_sec  REAL NOT NULL,
        worker_max_bytes_per_sec  REAL NOT NULL,
        cpu_user                  REAL NOT NULL,
        cpu_sys                   REAL NOT NULL,
        lat_min_ns                INTEGER NOT NULL,
        lat_mean_ns               REAL NOT NULL,
        lat_max_ns                INTEGER NOT NULL,
        lat_p50_ns                INTEGER NOT NULL,
        lat_p90_ns                INTEGER NOT NULL,
        lat_p99_ns                INTEGER NOT NULL,
        lat_p99_9_ns              INTEGER NOT NULL,
        lat_p99_99_ns             INTEGER NOT NULL,
        cache_flattered           INTEGER NOT NULL,
        interrupted               INTEGER NOT NULL,
        verify_bad_blocks         INTEGER,
        result                    TEXT NOT NULL,
        histogram                 BLOB,
        UNIQUE (run_id, seq)
    );
    CREATE TABLE samples (
        phase_id      INTEGER NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
        idx           INTEGER NOT NULL,
        t_start       REAL NOT NULL,
        t_end         REAL NOT NULL,
        ramp          INTEGER NOT NULL,
        bytes_read    INTEGER NOT NULL,
        bytes_written INTEGER NOT NULL,
        ops_read      INTEGER NOT NULL,
        ops_written   INTEGER NOT NULL,
        lat_p50_ns    INTEGER NOT NULL,
        lat_p90_ns    INTEGER NOT NULL,
        lat_p99_ns    INTEGER NOT NULL,
        lat_p99_9_ns  INTEGER NOT NULL,
        lat_max_ns    INTEGER NOT NULL,
        late_ios      INTEGER NOT NULL,
        PRIMARY KEY (phase_id, idx)
    );
    CREATE TABLE events (
        id      INTEGER PRIMARY KEY,
        run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        at      TEXT NOT NULL,
        kind    TEXT NOT NULL,
        detail  TEXT NOT NULL
    );
    CREATE TABLE studies (
        id         INTEGER PRIMARY KEY,
        kind       TEXT NOT NULL,
        created_at TEXT NOT NULL,
        params     TEXT NOT NULL
    );
    CREATE TABLE study_members (
        study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        role     TEXT NOT NULL,
        PRIMARY KEY (study_id, run_id)
    );
    CREATE INDEX runs_started ON runs(started_at);
    CREATE INDEX phases_run ON phases(run_id);
    CREATE INDEX events_run ON events(run_id);
    "#,
        postgres: r#"
    CREATE TABLE runs (
        id              BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        started_at      TIMESTAMPTZ NOT NULL,
        finished_at     TIMESTAMPTZ,
        host            TEXT NOT NULL,
        kind            TEXT NOT NULL,
        job_name        TEXT,
        job             JSONB,
        command         TEXT,
        status          TEXT NOT NULL,
        status_detail   TEXT,
        pid             BIGINT,
        cache_flattered BOOLEAN NOT NULL DEFAULT FALSE,
        imported        BOOLEAN NOT NULL DEFAULT FALSE
    );
    CREATE TABLE tags (
        run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        key    TEXT NOT NULL,
        value  TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE TABLE environments (
        run_id       BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        kernel       TEXT NOT NULL,
        cpu_model    TEXT NOT NULL,
        cpus         BIGINT NOT NULL,
        memory_bytes BIGINT NOT NULL,
        json         JSONB NOT NULL
    );
    CREATE TABLE phases (
        id                        BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        run_id                    BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq                       BIGINT NOT NULL,
        kind                      TEXT NOT NULL,
        params                    JSONB NOT NULL,
        bytes_read                BIGINT NOT NULL,
        bytes_written             BIGINT NOT NULL,
        ops_read                  BIGINT NOT NULL,
        ops_written               BIGINT NOT NULL,
        seconds                   DOUBLE PRECISION NOT NULL,
        bytes_per_sec             DOUBLE PRECISION NOT NULL,
        iops                      DOUBLE PRECISION NOT NULL,
        first_done_seconds        DOUBLE PRECISION NOT NULL,
        first_done_bytes_per_sec  DOUBLE PRECISION NOT NULL,
        worker_min_bytes_per_sec  DOUBLE PRECISION NOT NULL,
        worker_max_bytes_per_sec  DOUBLE PRECISION NOT NULL,
        cpu_user                  DOUBLE PRECISION NOT NULL,
        cpu_sys                   DOUBLE PRECISION NOT NULL,
        lat_min_ns                BIGINT NOT NULL,
        lat_mean_ns               DOUBLE PRECISION NOT NULL,
        lat_max_ns                BIGINT NOT NULL,
        lat_p50_ns                BIGINT NOT NULL,
        lat_p90_ns                BIGINT NOT NULL,
        lat_p99_ns                BIGINT NOT NULL,
        lat_p99_9_ns              BIGINT NOT NULL,
        lat_p99_99_ns             BIGINT NOT NULL,
        cache_flattered           BOOLEAN NOT NULL,
        interrupted               BOOLEAN NOT NULL,
        verify_bad_blocks         BIGINT,
        result                    JSONB NOT NULL,
        histogram                 BYTEA,
        UNIQUE (run_id, seq)
    );
    CREATE TABLE samples (
        phase_id      BIGINT NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
        idx           BIGINT NOT NULL,
        t_start       DOUBLE PRECISION NOT NULL,
        t_end         DOUBLE PRECISION NOT NULL,
        ramp          BOOLEAN NOT NULL,
        bytes_read    BIGINT NOT NULL,
        bytes_written BIGINT NOT NULL,
        ops_read      BIGINT NOT NULL,
        ops_written   BIGINT NOT NULL,
        lat_p50_ns    BIGINT NOT NULL,
        lat_p90_ns    BIGINT NOT NULL,
        lat_p99_ns    BIGINT NOT NULL,
        lat_p99_9_ns  BIGINT NOT NULL,
        lat_max_ns    BIGINT NOT NULL,
        late_ios      BIGINT NOT NULL,
        PRIMARY KEY (phase_id, idx)
    );
    CREATE TABLE events (
        id      BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        run_id  BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        at      TIMESTAMPTZ NOT NULL,
        kind    TEXT NOT NULL,
        detail  TEXT NOT NULL
    );
    CREATE TABLE studies (
        id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        kind       TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        params     JSONB NOT NULL
    );
    CREATE TABLE study_members (
        study_id BIGINT NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        run_id   BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        role     TEXT NOT NULL,
        PRIMARY KEY (study_id, run_id)
    );
    CREATE INDEX runs_started ON runs(started_at);
    CREATE INDEX phases_run ON phases(run_id);
    CREATE INDEX events_run ON events(run_id);
    "#,
    },
    // 2: storlab scan. One row per report row (the key figures as columns, for queries that
    // compare two scans of the same place), the whole row as JSON, and the report's summary.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE scan_rows (
        run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx         INTEGER NOT NULL,
        root        TEXT NOT NULL,
        path        TEXT NOT NULL,
        own_files   INTEGER NOT NULL,
        files       INTEGER NOT NULL,
        dirs        INTEGER NOT NULL,
        apparent    INTEGER NOT NULL,
        allocated   INTEGER NOT NULL,
        json        TEXT NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE scans (
        run_id  INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        json    TEXT NOT NULL
    );
    "#,
        postgres: r#"
    CREATE TABLE scan_rows (
        run_id      BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx         BIGINT NOT NULL,
        root        TEXT NOT NULL,
        path        TEXT NOT NULL,
        own_files   BOOLEAN NOT NULL,
        files       BIGINT NOT NULL,
        dirs        BIGINT NOT NULL,
        apparent    BIGINT NOT NULL,
        allocated   BIGINT NOT NULL,
        json        JSONB NOT NULL,
        PRIMARY KEY (run_id, idx)
    );
    CREATE TABLE scans (
        run_id  BIGINT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        json    JSONB NOT NULL
    );
    "#,
    },
    // 3: samples per target, for phases that ran on more than one.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE target_samples (
        phase_id      INTEGER NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
        idx           INTEGER NOT NULL,
        target        INTEGER NOT NULL,
        bytes_read    INTEGER NOT NULL,
        bytes_written INTEGER NOT NULL,
        ops_read      INTEGER NOT NULL,
        ops_written   INTEGER NOT NULL,
        PRIMARY KEY (phase_id, idx, target)
    );
    "#,
        postgres: r#"
    CREATE TABLE target_samples (
        phase_id      BIGINT NOT NULL REFERENCES phases(id) ON DELETE CASCADE,
        idx           BIGINT NOT NULL,
        target        BIGINT NOT NULL,
        bytes_read    BIGINT NOT NULL,
        bytes_written BIGINT NOT NULL,
        ops_read      BIGINT NOT NULL,
        ops_written   BIGINT NOT NULL,
        PRIMARY KEY (phase_id, idx, target)
    );
    "#,
    },
    // 4: impact studies. A study's events (a task started, ended, reported errors; a
    // repetition began) in the order they happened, each with the run that was going on, and
    // the background tasks' progress as they were watched.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE study_events (
        study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        seq      INTEGER NOT NULL,
        at       TEXT NOT NULL,
        t        REAL NOT NULL,
        run_id   INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        kind     TEXT NOT NULL,
        detail   TEXT NOT NULL,
        PRIMARY KEY (study_id, seq)
    );
    CREATE TABLE task_samples (
        study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        task       INTEGER NOT NULL,
        t          REAL NOT NULL,
        run_id     INTEGER REFERENCES runs(id) ON DELETE SET NULL,
        state      TEXT NOT NULL,
        percent    REAL,
        bytes_done INTEGER,
        PRIMARY KEY (study_id, seq)
    );
    "#,
        postgres: r#"
    CREATE TABLE study_events (
        study_id BIGINT NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        seq      BIGINT NOT NULL,
        at       TIMESTAMPTZ NOT NULL,
        t        DOUBLE PRECISION NOT NULL,
        run_id   BIGINT REFERENCES runs(id) ON DELETE SET NULL,
        kind     TEXT NOT NULL,
        detail   TEXT NOT NULL,
        PRIMARY KEY (study_id, seq)
    );
    CREATE TABLE task_samples (
        study_id   BIGINT NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
        seq        BIGINT NOT NULL,
        task       BIGINT NOT NULL,
        t          DOUBLE PRECISION NOT NULL,
        run_id     BIGINT REFERENCES runs(id) ON DELETE SET NULL,
        state      TEXT NOT NULL,
        percent    DOUBLE PRECISION,
        bytes_done BIGINT,
        PRIMARY KEY (study_id, seq)
    );
    
"#,
    },
    // 5: the typed model (see the module's doc).
    Migration::Code(typed_model),
    // 6: a UUID for every run and study.
    Migration::Code(uuids),
    // 7: PostgreSQL only: samples and target samples without a foreign key to their phase. The
    // key's check, one per row, was 6 s of the 8.8 s PostgreSQL took to store 600,000 samples
    // (bench/db-results.md); storlab writes a phase and its samples in one transaction, so
    // the check found nothing, and a trigger still removes a phase's samples with it.
    Migration::Sql {
        sqlite: "",
        postgres: r#"
    ALTER TABLE samples DROP CONSTRAINT samples_phase_id_fkey;
    ALTER TABLE target_samples DROP CONSTRAINT target_samples_phase_id_fkey;
    CREATE FUNCTION storlab_phase_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM samples WHERE phase_id = OLD.id;
        DELETE FROM target_samples WHERE phase_id = OLD.id;
        RETURN OLD;
    END
    $$;
    CREATE TRIGGER phases_remove_samples AFTER DELETE ON phases
        FOR EACH ROW EXECUTE FUNCTION storlab_phase_removed();
    "#,
    },
    // 8: the data challenge (crates/challenge): its definition, the catalogue of its files, its
    // samples per host, pool and interval, its events, and the runs (one per host) that took part.
    // Times within a challenge are seconds from its start (`t0`, seconds since the epoch).
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE challenges (
        id         INTEGER PRIMARY KEY,
        uuid       TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        spec       TEXT NOT NULL,
        status     TEXT NOT NULL,
        t0         REAL,
        next_seq   INTEGER NOT NULL DEFAULT 0,
        started    INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE challenge_runs (
        challenge_id INTEGER NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        PRIMARY KEY (challenge_id, run_id)
    );
    CREATE TABLE challenge_files (
        challenge_id INTEGER NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        seq          INTEGER NOT NULL,
        pool         INTEGER NOT NULL,
        name         TEXT NOT NULL,
        seed         INTEGER NOT NULL,
        state        TEXT NOT NULL,
        host         TEXT NOT NULL,
        lease_until  REAL NOT NULL,
        written_at   REAL,
        read_at      REAL,
        rewrites     INTEGER NOT NULL DEFAULT 0,
        error        TEXT,
        PRIMARY KEY (challenge_id, seq)
    );
    CREATE INDEX challenge_files_state ON challenge_files(challenge_id, state, seq);
    CREATE TABLE challenge_samples (
        challenge_id INTEGER NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        idx          INTEGER NOT NULL,
        t            REAL NOT NULL,
        seconds      REAL NOT NULL,
        pool         INTEGER NOT NULL,
        read_bytes   INTEGER NOT NULL,
        write_bytes  INTEGER NOT NULL,
        PRIMARY KEY (challenge_id, host, idx, pool)
    );
    CREATE TABLE challenge_events (
        id           INTEGER PRIMARY KEY,
        challenge_id INTEGER NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        t            REAL NOT NULL,
        host         TEXT NOT NULL,
        kind         TEXT NOT NULL,
        detail       TEXT NOT NULL
    );
    CREATE INDEX challenge_events_challenge ON challenge_events(challenge_id);
    "#,
        postgres: r#"
    CREATE TABLE challenges (
        id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        uuid       TEXT NOT NULL UNIQUE,
        created_at TIMESTAMPTZ NOT NULL,
        spec       JSONB NOT NULL,
        status     TEXT NOT NULL,
        t0         DOUBLE PRECISION,
        next_seq   BIGINT NOT NULL DEFAULT 0,
        started    BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE challenge_runs (
        challenge_id BIGINT NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        run_id       BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        PRIMARY KEY (challenge_id, run_id)
    );
    CREATE TABLE challenge_files (
        challenge_id BIGINT NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        seq          BIGINT NOT NULL,
        pool         BIGINT NOT NULL,
        name         TEXT NOT NULL,
        seed         BIGINT NOT NULL,
        state        TEXT NOT NULL,
        host         TEXT NOT NULL,
        lease_until  DOUBLE PRECISION NOT NULL,
        written_at   DOUBLE PRECISION,
        read_at      DOUBLE PRECISION,
        rewrites     BIGINT NOT NULL DEFAULT 0,
        error        TEXT,
        PRIMARY KEY (challenge_id, seq)
    );
    CREATE INDEX challenge_files_state ON challenge_files(challenge_id, state, seq);
    CREATE TABLE challenge_samples (
        challenge_id BIGINT NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        host         TEXT NOT NULL,
        idx          BIGINT NOT NULL,
        t            DOUBLE PRECISION NOT NULL,
        seconds      DOUBLE PRECISION NOT NULL,
        pool         BIGINT NOT NULL,
        read_bytes   BIGINT NOT NULL,
        write_bytes  BIGINT NOT NULL,
        PRIMARY KEY (challenge_id, host, idx, pool)
    );
    CREATE TABLE challenge_events (
        id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        challenge_id BIGINT NOT NULL REFERENCES challenges(id) ON DELETE CASCADE,
        t            DOUBLE PRECISION NOT NULL,
        host         TEXT NOT NULL,
        kind         TEXT NOT NULL,
        detail       TEXT NOT NULL
    );
    CREATE INDEX challenge_events_challenge ON challenge_events(challenge_id);
    "#,
    },
    // 9: the monitor (crates/monitor): who monitors what (a row per `storlab monitor run`, its
    // series: each disk, filesystem, md array, btrfs device and NFS mount of each pool), the
    // samples at three resolutions (`level` 0: every interval, 1: the long-term window, 2: an
    // hour; the levels never overlap in time, retention moves rows up), and events. Times are
    // seconds since the epoch. SQLite keeps the samples in their primary key's order (WITHOUT
    // ROWID): one B-tree, no second index, the smallest rows it can store.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE monitors (
        id         INTEGER PRIMARY KEY,
        uuid       TEXT NOT NULL UNIQUE,
        host       TEXT NOT NULL,
        pid        INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        spec       TEXT NOT NULL,
        status     TEXT NOT NULL,
        t0         REAL NOT NULL,
        heartbeat  REAL NOT NULL
    );
    CREATE TABLE monitor_series (
        monitor_id INTEGER NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        idx        INTEGER NOT NULL,
        pool       TEXT NOT NULL,
        kind       TEXT NOT NULL,
        name       TEXT NOT NULL,
        top        INTEGER NOT NULL,
        PRIMARY KEY (monitor_id, idx)
    );
    CREATE TABLE monitor_disk (
        monitor_id    INTEGER NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        series        INTEGER NOT NULL,
        level         INTEGER NOT NULL,
        t             REAL NOT NULL,
        seconds       REAL NOT NULL,
        reads         INTEGER NOT NULL,
        reads_merged  INTEGER NOT NULL,
        read_bytes    INTEGER NOT NULL,
        read_ms       INTEGER NOT NULL,
        writes        INTEGER NOT NULL,
        writes_merged INTEGER NOT NULL,
        write_bytes   INTEGER NOT NULL,
        write_ms      INTEGER NOT NULL,
        busy_ms       INTEGER NOT NULL,
        weighted_ms   INTEGER NOT NULL,
        in_flight     REAL NOT NULL,
        PRIMARY KEY (monitor_id, level, t, series)
    ) WITHOUT ROWID;
    CREATE TABLE monitor_fs (
        monitor_id INTEGER NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        series     INTEGER NOT NULL,
        level      INTEGER NOT NULL,
        t          REAL NOT NULL,
        size       INTEGER NOT NULL,
        avail      INTEGER NOT NULL,
        free       INTEGER NOT NULL,
        files      INTEGER NOT NULL,
        files_free INTEGER NOT NULL,
        PRIMARY KEY (monitor_id, level, t, series)
    ) WITHOUT ROWID;
    CREATE TABLE monitor_gauges (
        monitor_id INTEGER NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        series     INTEGER NOT NULL,
        level      INTEGER NOT NULL,
        t          REAL NOT NULL,
        key        TEXT NOT NULL,
        value      REAL NOT NULL,
        PRIMARY KEY (monitor_id, level, t, series, key)
    ) WITHOUT ROWID;
    CREATE TABLE monitor_events (
        id         INTEGER PRIMARY KEY,
        monitor_id INTEGER NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        t          REAL NOT NULL,
        pool       TEXT NOT NULL,
        name       TEXT NOT NULL,
        kind       TEXT NOT NULL,
        detail     TEXT NOT NULL
    );
    CREATE INDEX monitor_events_t ON monitor_events(t);
    "#,
        postgres: r#"
    CREATE TABLE monitors (
        id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        uuid       TEXT NOT NULL UNIQUE,
        host       TEXT NOT NULL,
        pid        BIGINT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        spec       JSONB NOT NULL,
        status     TEXT NOT NULL,
        t0         DOUBLE PRECISION NOT NULL,
        heartbeat  DOUBLE PRECISION NOT NULL
    );
    CREATE TABLE monitor_series (
        monitor_id BIGINT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        idx        BIGINT NOT NULL,
        pool       TEXT NOT NULL,
        kind       TEXT NOT NULL,
        name       TEXT NOT NULL,
        top        BOOLEAN NOT NULL,
        PRIMARY KEY (monitor_id, idx)
    );
    CREATE TABLE monitor_disk (
        monitor_id    BIGINT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        series        BIGINT NOT NULL,
        level         BIGINT NOT NULL,
        t             DOUBLE PRECISION NOT NULL,
        seconds       DOUBLE PRECISION NOT NULL,
        reads         BIGINT NOT NULL,
        reads_merged  BIGINT NOT NULL,
        read_bytes    BIGINT NOT NULL,
        read_ms       BIGINT NOT NULL,
        writes        BIGINT NOT NULL,
        writes_merged BIGINT NOT NULL,
        write_bytes   BIGINT NOT NULL,
        write_ms      BIGINT NOT NULL,
        busy_ms       BIGINT NOT NULL,
        weighted_ms   BIGINT NOT NULL,
        in_flight     DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (monitor_id, level, t, series)
    );
    CREATE TABLE monitor_fs (
        monitor_id BIGINT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        series     BIGINT NOT NULL,
        level      BIGINT NOT NULL,
        t          DOUBLE PRECISION NOT NULL,
        size       BIGINT NOT NULL,
        avail      BIGINT NOT NULL,
        free       BIGINT NOT NULL,
        files      BIGINT NOT NULL,
        files_free BIGINT NOT NULL,
        PRIMARY KEY (monitor_id, level, t, series)
    );
    CREATE TABLE monitor_gauges (
        monitor_id BIGINT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        series     BIGINT NOT NULL,
        level      BIGINT NOT NULL,
        t          DOUBLE PRECISION NOT NULL,
        key        TEXT NOT NULL,
        value      DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (monitor_id, level, t, series, key)
    );
    CREATE TABLE monitor_events (
        id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        monitor_id BIGINT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
        t          DOUBLE PRECISION NOT NULL,
        pool       TEXT NOT NULL,
        name       TEXT NOT NULL,
        kind       TEXT NOT NULL,
        detail     TEXT NOT NULL
    );
    CREATE INDEX monitor_events_t ON monitor_events(t);
    "#,
    },
    // 10: the verify scheduler (crates/sched): per pool a token counter and numbered slot rows
    // (a slot held is a lease: the server, the agent process, a fencing token that grows with
    // each grant, an expiry on the database's clock), the servers' turn (waiting since, last
    // complete verify) and the event log every grant, renewal lost, report and release goes to.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE sched_pools (
        pool       TEXT PRIMARY KEY,
        next_token INTEGER NOT NULL DEFAULT 1
    );
    CREATE TABLE sched_slots (
        pool    TEXT NOT NULL,
        slot    INTEGER NOT NULL,
        server  TEXT,
        agent   TEXT,
        token   INTEGER,
        expires REAL,
        PRIMARY KEY (pool, slot)
    );
    CREATE TABLE sched_servers (
        pool          TEXT NOT NULL,
        server        TEXT NOT NULL,
        waiting_since REAL,
        seen          REAL NOT NULL,
        last_complete REAL,
        last_duration REAL,
        last_errors   TEXT,
        PRIMARY KEY (pool, server)
    );
    CREATE TABLE sched_events (
        id     INTEGER PRIMARY KEY,
        t      REAL NOT NULL,
        pool   TEXT NOT NULL,
        server TEXT NOT NULL,
        agent  TEXT NOT NULL,
        token  INTEGER,
        kind   TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX sched_events_pool ON sched_events(pool, t);
    "#,
        postgres: r#"
    CREATE TABLE sched_pools (
        pool       TEXT PRIMARY KEY,
        next_token BIGINT NOT NULL DEFAULT 1
    );
    CREATE TABLE sched_slots (
        pool    TEXT NOT NULL,
        slot    BIGINT NOT NULL,
        server  TEXT,
        agent   TEXT,
        token   BIGINT,
        expires DOUBLE PRECISION,
        PRIMARY KEY (pool, slot)
    );
    CREATE TABLE sched_servers (
        pool          TEXT NOT NULL,
        server        TEXT NOT NULL,
        waiting_since DOUBLE PRECISION,
        seen          DOUBLE PRECISION NOT NULL,
        last_complete DOUBLE PRECISION,
        last_duration DOUBLE PRECISION,
        last_errors   TEXT,
        PRIMARY KEY (pool, server)
    );
    CREATE TABLE sched_events (
        id     BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        t      DOUBLE PRECISION NOT NULL,
        pool   TEXT NOT NULL,
        server TEXT NOT NULL,
        agent  TEXT NOT NULL,
        token  BIGINT,
        kind   TEXT NOT NULL,
        detail TEXT NOT NULL
    );
    CREATE INDEX sched_events_pool ON sched_events(pool, t);
    "#,
    },
    // 11: metadata workloads (crates/meta): runs of kind `meta` whose phases' parameters are
    // `{"meta": …}`. No table changes; the version is raised so that a storlab that does not
    // know them refuses the database instead of misreading those runs.
    Migration::Sql {
        sqlite: "SELECT 1;",
        postgres: "SELECT 1;",
    },
    // 12: runs that many processes ran together (`mpirun storlab run`): each rank's host, clock
    // offset and environment, and each rank's part of each phase (the phase row is the merged
    // aggregate). Removed with their run.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE run_ranks (
        run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        rank                 INTEGER NOT NULL,
        host                 TEXT NOT NULL,
        clock_offset_seconds REAL NOT NULL,
        environment          TEXT NOT NULL,
        PRIMARY KEY (run_id, rank)
    );
    CREATE TABLE phase_ranks (
        run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq           INTEGER NOT NULL,
        rank          INTEGER NOT NULL,
        host          TEXT NOT NULL,
        start_seconds REAL NOT NULL,
        end_seconds   REAL NOT NULL,
        result        TEXT NOT NULL,
        PRIMARY KEY (run_id, seq, rank)
    );
    "#,
        postgres: r#"
    CREATE TABLE run_ranks (
        run_id               BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        rank                 BIGINT NOT NULL,
        host                 TEXT NOT NULL,
        clock_offset_seconds DOUBLE PRECISION NOT NULL,
        environment          JSONB NOT NULL,
        PRIMARY KEY (run_id, rank)
    );
    CREATE TABLE phase_ranks (
        run_id        BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq           BIGINT NOT NULL,
        rank          BIGINT NOT NULL,
        host          TEXT NOT NULL,
        start_seconds DOUBLE PRECISION NOT NULL,
        end_seconds   DOUBLE PRECISION NOT NULL,
        result        JSONB NOT NULL,
        PRIMARY KEY (run_id, seq, rank)
    );
    "#,
    },
    // 13: readings of the database server's clock by the hosts that place their samples on it
    // (crates/store's clock.rs): which process, for what (`challenge ID`, `monitor ID`), the
    // server's time, the host's wall-clock offset to it, the round trip, and the step the
    // reading made to the host's time base.
    Migration::Sql {
        sqlite: r#"
    CREATE TABLE clock_readings (
        id             INTEGER PRIMARY KEY,
        source         TEXT NOT NULL,
        agent          TEXT NOT NULL,
        t              REAL NOT NULL,
        offset_seconds REAL NOT NULL,
        rtt_seconds    REAL NOT NULL,
        step_seconds   REAL NOT NULL
    );
    CREATE INDEX clock_readings_source ON clock_readings(source, agent, t);
    "#,
        postgres: r#"
    CREATE TABLE clock_readings (
        id             BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        source         TEXT NOT NULL,
        agent          TEXT NOT NULL,
        t              DOUBLE PRECISION NOT NULL,
        offset_seconds DOUBLE PRECISION NOT NULL,
        rtt_seconds    DOUBLE PRECISION NOT NULL,
        step_seconds   DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX clock_readings_source ON clock_readings(source, agent, t);
    "#,
    },
    // 14: each interval's mean latency per direction (fio's latency logs); NULL for samples
    // stored before.
    Migration::Sql {
        sqlite: "ALTER TABLE samples ADD COLUMN lat_mean_read_ns REAL; ALTER TABLE samples ADD COLUMN lat_mean_write_ns REAL;",
        postgres: "ALTER TABLE samples ADD COLUMN lat_mean_read_ns DOUBLE PRECISION; ALTER TABLE samples ADD COLUMN lat_mean_write_ns DOUBLE PRECISION;",
    },
    // 15: each direction's latency histogram, the flushes', and an asynchronous engine's
    // submission and completion latencies per direction (fio's read/write percentiles of a
    // mixed job, its sync latency, its slat and clat); NULL for phases stored before.
    Migration::Sql {
        sqlite: "ALTER TABLE phases ADD COLUMN histogram_read BLOB; ALTER TABLE phases ADD COLUMN histogram_write BLOB; ALTER TABLE phases ADD COLUMN histogram_sync BLOB;
                 ALTER TABLE phases ADD COLUMN histogram_slat_read BLOB; ALTER TABLE phases ADD COLUMN histogram_slat_write BLOB;
                 ALTER TABLE phases ADD COLUMN histogram_clat_read BLOB; ALTER TABLE phases ADD COLUMN histogram_clat_write BLOB;",
        postgres: "ALTER TABLE phases ADD COLUMN histogram_read BYTEA; ALTER TABLE phases ADD COLUMN histogram_write BYTEA; ALTER TABLE phases ADD COLUMN histogram_sync BYTEA;
                   ALTER TABLE phases ADD COLUMN histogram_slat_read BYTEA; ALTER TABLE phases ADD COLUMN histogram_slat_write BYTEA;
                   ALTER TABLE phases ADD COLUMN histogram_clat_read BYTEA; ALTER TABLE phases ADD COLUMN histogram_clat_write BYTEA;",
    },
    // 16: a challenge interval's busiest device per pool (busy share and average queue), what
    // bounded the pool then; NULL for samples stored before, and for pools whose devices were
    // not read.
    Migration::Sql {
        sqlite: "ALTER TABLE challenge_samples ADD COLUMN device_busy REAL; ALTER TABLE challenge_samples ADD COLUMN device_queue REAL;",
        postgres: "ALTER TABLE challenge_samples ADD COLUMN device_busy DOUBLE PRECISION; ALTER TABLE challenge_samples ADD COLUMN device_queue DOUBLE PRECISION;",
    },
];

/// Migration 6: `uuid` columns on runs and studies, filled for the rows already there, unique.
fn uuids(c: &mut dyn Conn) -> Result<()> {
    c.batch("ALTER TABLE runs ADD COLUMN uuid TEXT; ALTER TABLE studies ADD COLUMN uuid TEXT;")?;
    for table in ["runs", "studies"] {
        let ids: Vec<i64> = c
            .query(&format!("SELECT id FROM {table} WHERE uuid IS NULL"), &[])?
            .iter()
            .map(|r| r.i64(0))
            .collect::<Result<_>>()?;
        for id in ids {
            c.exec(
                &format!("UPDATE {table} SET uuid = ?1 WHERE id = ?2"),
                vals![crate::new_uuid(), id],
            )?;
        }
    }
    c.batch("CREATE UNIQUE INDEX runs_uuid ON runs(uuid); CREATE UNIQUE INDEX studies_uuid ON studies(uuid);")
}

/// Migration 5: phases' parameters become `{"plan": …}` or `{"imported": …}`; an imported
/// phase's result becomes a typed result built from its columns; study roles become typed.
fn typed_model(c: &mut dyn Conn) -> Result<()> {
    let phases = c.query(
        "SELECT p.id, r.imported, p.params, p.result FROM phases p JOIN runs r ON r.id = p.run_id",
        &[],
    )?;
    for row in phases {
        let (id, imported) = (row.i64(0)?, row.bool(1)?);
        let old_params: serde_json::Value = serde_json::from_str(&row.text(2)?).unwrap_or_default();
        let (params, result) = if imported {
            let old_result: serde_json::Value = serde_json::from_str(&row.text(3)?).unwrap_or_default();
            (
                PhaseParams::Imported(legacy_imported_params(&old_params, &old_result)),
                legacy_imported_result(c, id)?,
            )
        } else {
            (
                PhaseParams::Plan(legacy_plan(&old_params)?),
                serde_json::from_str::<PhaseResult>(&row.text(3)?)?,
            )
        };
        c.exec(
            "UPDATE phases SET params = ?2, result = ?3 WHERE id = ?1",
            vals![id, serde_json::to_string(&params)?, serde_json::to_string(&result)?],
        )?;
    }
    let members = c.query(
        "SELECT m.study_id, m.run_id, s.kind, m.role FROM study_members m JOIN studies s ON s.id = m.study_id",
        &[],
    )?;
    for row in members {
        let Some(kind) = StudyKind::from_name(&row.text(2)?) else {
            continue;
        };
        let role = Role::from_legacy(kind, &row.text(3)?);
        c.exec(
            "UPDATE study_members SET role = ?3 WHERE study_id = ?1 AND run_id = ?2",
            vals![row.i64(0)?, row.i64(1)?, serde_json::to_string(&role)?],
        )?;
    }
    Ok(())
}

/// A plan as storlab wrote it before the settings were declared once: the settings were fields
/// of the plan, some under other names (backend, rwmix_read; the rate with its sharing).
fn legacy_plan(old: &serde_json::Value) -> Result<PhasePlan> {
    use serde_json::{json, Value};
    let workers = old["workers"].as_array().cloned().unwrap_or_default();
    let rate = &old["rate"];
    let or = |k: &str, d: Value| old.get(k).cloned().unwrap_or(d);
    let settings = json!({
        "threads": workers.len(),
        "size": workers.first().map(|w| w["len"].clone()),
        "bs": old["bs"],
        "engine": old["backend"],
        "iodepth": old["iodepth"],
        "iodepth_batch": or("submit_batch", json!(1)),
        "iovecs": or("iovecs", json!(1)),
        "direct": old["direct"],
        "sync": old["sync"],
        "fsync": old["fsync"],
        "fsync_timed": old["fsync_timed"],
        "close_timed": or("close_timed", json!(false)),
        "runtime": old["runtime"],
        "ramp": old["ramp"],
        "rate": rate.get("rate"),
        "rate_per": if rate["per_worker"] == true { "worker" } else { "total" },
        "pattern": old["pattern"],
        "verify": old["verify"],
        "rwmix": old["rwmix_read"],
        "stride": old["stride"],
        "interval": old["interval"],
        "late_after": old["late_after"],
        "seed": old["seed"],
    });
    Ok(serde_json::from_value(json!({
        "kind": old["kind"],
        "settings": settings,
        "submit_batch": or("submit_batch", json!(1)),
        "write_headers": old["write_headers"],
        "verify_generations": old["verify_generations"],
        "generation": old["generation"],
        "seed": old["seed"],
        "workers": workers,
    }))?)
}

/// What an imported phase's old parameters and result said of its workload (fio: its job and
/// global options; IOzone: its test, record size, workers and file size in kB).
fn legacy_imported_params(p: &serde_json::Value, r: &serde_json::Value) -> ImportedParams {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let fio = r["source"] == "fio";
    let mut options = serde_json::Map::new();
    for k in ["fio job options", "fio global options"] {
        if let Some(v) = p.get(k) {
            options.insert(k.to_string(), v.clone());
        }
    }
    let mut notes: Vec<String> = ["note", "first_done"]
        .iter()
        .filter_map(|k| text(&r[*k]))
        .filter(|n| !n.is_empty())
        .collect();
    if let Some(e) = r.get("error").filter(|e| !e.is_null() && **e != 0) {
        notes.push(format!("fio reported error {e}"));
    }
    ImportedParams {
        tool: if fio { "fio".into() } else { "IOzone".into() },
        test: text(&r["test"]).or_else(|| text(&p["iozone_test"])),
        bs: p["bs"]["fixed"].as_u64(),
        file_size: p["file_kb"].as_f64().map(|k| (k * 1024.0) as u64),
        workers: p["threads"].as_u64().map(|w| w as u32),
        options: if options.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::Value::Object(options)
        },
        notes,
    }
}

/// An imported phase's figures, from the columns every version wrote.
fn legacy_imported_result(c: &mut dyn Conn, phase_id: i64) -> Result<PhaseResult> {
    let rows = c.query(
        "SELECT bytes_read, bytes_written, ops_read, ops_written, seconds, bytes_per_sec, iops,
            first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec, worker_max_bytes_per_sec,
            cpu_user, cpu_sys, lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns, lat_p99_ns,
            lat_p99_9_ns, lat_p99_99_ns
         FROM phases WHERE id = ?1",
        vals![phase_id],
    )?;
    let Some(r) = crate::db::one(rows) else {
        return Ok(PhaseResult::default());
    };
    let (bytes, ops) = (r.u64(0)? + r.u64(1)?, r.u64(2)? + r.u64(3)?);
    let latency = Latency {
        count: ops,
        min_ns: r.u64(13)?,
        mean_ns: r.f64(14)?,
        max_ns: r.u64(15)?,
        p50_ns: r.u64(16)?,
        p90_ns: r.u64(17)?,
        p99_ns: r.u64(18)?,
        p99_9_ns: r.u64(19)?,
        p99_99_ns: r.u64(20)?,
    };
    Ok(PhaseResult {
        bytes_read: r.u64(0)?,
        bytes_written: r.u64(1)?,
        ops_read: r.u64(2)?,
        ops_written: r.u64(3)?,
        all_done: Throughput {
            seconds: r.f64(4)?,
            bytes,
            ops,
            bytes_per_sec: r.f64(5)?,
            iops: r.f64(6)?,
        },
        first_done: Throughput {
            seconds: r.f64(7)?,
            bytes,
            ops,
            bytes_per_sec: r.f64(8)?,
            iops: r.f64(8)? / r.f64(5)?.max(1e-9) * r.f64(6)?,
        },
        worker_min_bytes_per_sec: r.f64(9)?,
        worker_max_bytes_per_sec: r.f64(10)?,
        cpu_user: r.f64(11)?,
        cpu_sys: r.f64(12)?,
        latency: if ops > 0 && r.u64(16)? > 0 {
            latency
        } else {
            Latency::default()
        },
        ..PhaseResult::default()
    })
}
