//! Every write that a run, an import, a scan or a study makes, as a value ([`Write`]): applied
//! in one transaction, kept (against PostgreSQL) in this process's journal, applied again after
//! a reconnect only when it did not commit, and replayed into a spool file when the server
//! stays away (lib.rs). The same inserts copy runs and studies between databases (copy.rs).

use storlab_model::env::Environment;
use storlab_model::result::{PhaseResult, Sample};
use storlab_model::run::{ImportedRun, NewRun, Phase, RunEventKind, RunKind, RunStatus, Tag};
use storlab_model::run::{RankPhaseRow, RankRow};
use storlab_model::scan::Report;
use storlab_model::study::{Member, NewStudy};

use crate::db::{one, vals, Conn, Row, Val};
use crate::{ImportStudy, Result, StoreError};

/// A run's own row, every column given: a run starting, one imported, copied or spooled.
pub(crate) struct RunRow<'a> {
    /// The id to keep (a spool keeps the id the server gave), or None for a new one.
    pub id: Option<i64>,
    pub uuid: &'a str,
    pub started_at: &'a str,
    pub finished_at: Option<&'a str>,
    pub host: &'a str,
    pub kind: RunKind,
    pub job_name: Option<&'a str>,
    pub job: &'a serde_json::Value,
    pub command: Option<&'a str>,
    pub status: RunStatus,
    pub status_detail: Option<&'a str>,
    pub pid: Option<i64>,
    pub imported: bool,
    pub cache_flattered: bool,
}

/// Inserts a run's row; returns its id.
pub(crate) fn insert_run(c: &mut dyn Conn, r: &RunRow) -> Result<i64> {
    let values = vals![
        r.uuid,
        r.started_at,
        r.finished_at,
        r.host,
        r.kind.name(),
        r.job_name,
        if r.job.is_null() { None } else { Some(r.job.to_string()) },
        r.command,
        r.status.name(),
        r.status_detail,
        r.pid,
        r.imported,
        r.cache_flattered,
        r.id
    ];
    let rows = match r.id {
        Some(_) => c.query(
            "INSERT INTO runs (uuid, started_at, finished_at, host, kind, job_name, job, command, status, status_detail, pid,
                imported, cache_flattered, id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) RETURNING id",
            values,
        )?,
        None => c.query(
            "INSERT INTO runs (uuid, started_at, finished_at, host, kind, job_name, job, command, status, status_detail, pid,
                imported, cache_flattered)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING id",
            &values[..13],
        )?,
    };
    returned_id(rows)
}

pub(crate) fn insert_tags(c: &mut dyn Conn, run_id: i64, tags: &[Tag]) -> Result<()> {
    for (k, v) in tags {
        c.exec(
            "INSERT INTO tags (run_id, key, value) VALUES (?1, ?2, ?3)
             ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
            vals![run_id, k, v],
        )?;
    }
    Ok(())
}

pub(crate) fn insert_environment(c: &mut dyn Conn, run_id: i64, env: &Environment) -> Result<()> {
    c.exec(
        "INSERT INTO environments (run_id, host, kernel, cpu_model, cpus, memory_bytes, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (run_id) DO UPDATE SET host = excluded.host, kernel = excluded.kernel, cpu_model = excluded.cpu_model,
            cpus = excluded.cpus, memory_bytes = excluded.memory_bytes, json = excluded.json",
        vals![
            run_id,
            &env.host,
            &env.kernel,
            &env.cpu_model,
            env.cpus,
            env.memory_bytes,
            serde_json::to_string(env)?
        ],
    )?;
    Ok(())
}

/// The columns of a sample row, in the order [`sample_row`] gives them.
const SAMPLE_COLUMNS: &[&str] = &[
    "phase_id",
    "idx",
    "t_start",
    "t_end",
    "ramp",
    "bytes_read",
    "bytes_written",
    "ops_read",
    "ops_written",
    "lat_p50_ns",
    "lat_p90_ns",
    "lat_p99_ns",
    "lat_p99_9_ns",
    "lat_max_ns",
    "late_ios",
    "lat_mean_read_ns",
    "lat_mean_write_ns",
];

fn sample_row(phase_id: i64, s: &Sample) -> Vec<Val> {
    vals![
        phase_id,
        s.index,
        s.t_start,
        s.t_end,
        s.ramp,
        s.bytes_read,
        s.bytes_written,
        s.ops_read,
        s.ops_written,
        s.lat_p50_ns,
        s.lat_p90_ns,
        s.lat_p99_ns,
        s.lat_p99_9_ns,
        s.lat_max_ns,
        s.late_ios,
        s.lat_mean_read_ns,
        s.lat_mean_write_ns
    ]
    .to_vec()
}

const TARGET_SAMPLE_COLUMNS: &[&str] = &[
    "phase_id",
    "idx",
    "target",
    "bytes_read",
    "bytes_written",
    "ops_read",
    "ops_written",
];

/// Inserts a phase and its samples inside the caller's transaction: the parameters and the
/// result as documents of their types (the samples in tables of their own), and the figures
/// queries select on as columns.
pub(crate) fn insert_phase(c: &mut dyn Conn, run_id: i64, p: &Phase) -> Result<i64> {
    let r = &p.result;
    // The samples have their own tables; the document holds the rest. (A clone: a phase's
    // samples are few next to the I/O that made them.)
    let document = PhaseResult {
        samples: Vec::new(),
        ..r.clone()
    };
    let rows = c.query(
        "INSERT INTO phases (run_id, seq, kind, params, bytes_read, bytes_written, ops_read, ops_written, seconds, bytes_per_sec, iops,
            first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec, worker_max_bytes_per_sec, cpu_user, cpu_sys,
            lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns, lat_p99_ns, lat_p99_9_ns, lat_p99_99_ns,
            cache_flattered, interrupted, verify_bad_blocks, result, histogram, histogram_read, histogram_write, histogram_sync,
            histogram_slat_read, histogram_slat_write, histogram_clat_read, histogram_clat_write)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37)
         RETURNING id",
        vals![
            run_id,
            p.seq,
            p.kind.as_str(),
            serde_json::to_string(&p.params)?,
            r.bytes_read,
            r.bytes_written,
            r.ops_read,
            r.ops_written,
            r.all_done.seconds,
            r.all_done.bytes_per_sec,
            r.all_done.iops,
            r.first_done.seconds,
            r.first_done.bytes_per_sec,
            r.worker_min_bytes_per_sec,
            r.worker_max_bytes_per_sec,
            r.cpu_user,
            r.cpu_sys,
            r.latency.min_ns,
            r.latency.mean_ns,
            r.latency.max_ns,
            r.latency.p50_ns,
            r.latency.p90_ns,
            r.latency.p99_ns,
            r.latency.p99_9_ns,
            r.latency.p99_99_ns,
            p.cache_flattered,
            r.interrupted,
            p.bad_blocks(),
            serde_json::to_string(&document)?,
            r.histogram.clone(),
            r.histograms_rw[0].clone(),
            r.histograms_rw[1].clone(),
            r.histogram_sync.clone(),
            r.histograms_slat[0].clone(),
            r.histograms_slat[1].clone(),
            r.histograms_clat[0].clone(),
            r.histograms_clat[1].clone()
        ],
    )?;
    let phase_id = returned_id(rows)?;
    c.bulk(
        "samples",
        SAMPLE_COLUMNS,
        &mut r.samples.iter().map(|s| sample_row(phase_id, s)),
    )?;
    c.bulk(
        "target_samples",
        TARGET_SAMPLE_COLUMNS,
        &mut r.samples.iter().flat_map(|s| {
            s.targets.iter().map(move |t| {
                vals![
                    phase_id,
                    s.index,
                    t.target,
                    t.bytes_read,
                    t.bytes_written,
                    t.ops_read,
                    t.ops_written
                ]
                .to_vec()
            })
        }),
    )?;
    if p.cache_flattered {
        c.exec("UPDATE runs SET cache_flattered = TRUE WHERE id = ?1", vals![run_id])?;
    }
    Ok(phase_id)
}

/// The id an `INSERT … RETURNING id` gave.
pub(crate) fn returned_id(rows: Vec<Row>) -> Result<i64> {
    one(rows)
        .ok_or_else(|| StoreError::Type("an insert returned no id".into()))?
        .i64(0)
}

/// A run's MPI ranks (an existing row is kept: a retried write adds nothing).
pub(crate) fn insert_ranks(c: &mut dyn Conn, run_id: i64, ranks: &[RankRow]) -> Result<()> {
    for r in ranks {
        c.exec(
            "INSERT INTO run_ranks (run_id, rank, host, clock_offset_seconds, environment)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, rank) DO NOTHING",
            vals![
                run_id,
                r.rank as i64,
                &r.host,
                r.clock_offset_seconds,
                serde_json::to_string(&r.environment)?
            ],
        )?;
    }
    Ok(())
}

/// Each rank's part of a run's phases (an existing row is kept).
pub(crate) fn insert_rank_phases(c: &mut dyn Conn, run_id: i64, rows: &[RankPhaseRow]) -> Result<()> {
    for r in rows {
        c.exec(
            "INSERT INTO phase_ranks (run_id, seq, rank, host, start_seconds, end_seconds, result)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (run_id, seq, rank) DO NOTHING",
            vals![
                run_id,
                r.seq as i64,
                r.rank as i64,
                &r.host,
                r.start_seconds,
                r.end_seconds,
                serde_json::to_string(&r.result)?
            ],
        )?;
    }
    Ok(())
}

/// Records an event of a run.
pub(crate) fn insert_event(c: &mut dyn Conn, run_id: i64, at: &str, kind: RunEventKind, detail: &str) -> Result<()> {
    c.exec(
        "INSERT INTO events (run_id, at, kind, detail) VALUES (?1, ?2, ?3, ?4)",
        vals![run_id, at, kind.name(), detail],
    )?;
    Ok(())
}

/// Stores a scan's report: one row per report row, and the rest as one document.
pub(crate) fn insert_scan(c: &mut dyn Conn, run_id: i64, report: &Report) -> Result<()> {
    let mut rows = Vec::with_capacity(report.rows.len());
    for (i, r) in report.rows.iter().enumerate() {
        rows.push(
            vals![
                run_id,
                i as i64,
                r.root.display().to_string(),
                r.path.display().to_string(),
                r.own_files_only,
                r.stats.data.files,
                r.stats.dirs,
                r.stats.data.apparent,
                r.stats.data.allocated,
                serde_json::to_string(r)?
            ]
            .to_vec(),
        );
    }
    c.bulk(
        "scan_rows",
        &[
            "run_id",
            "idx",
            "root",
            "path",
            "own_files",
            "files",
            "dirs",
            "apparent",
            "allocated",
            "json",
        ],
        &mut rows.into_iter(),
    )?;
    // The summary: the report without its rows (a scan can have thousands).
    let summary = serde_json::to_string(&Report {
        rows: Vec::new(),
        ..report.clone()
    })?;
    c.exec(
        "INSERT INTO scans (run_id, json) VALUES (?1, ?2)",
        vals![run_id, summary],
    )?;
    Ok(())
}

/// Stores a study whole; returns its id.
pub(crate) fn insert_study(
    c: &mut dyn Conn,
    id: Option<i64>,
    uuid: &str,
    created_at: &str,
    study: &NewStudy,
) -> Result<i64> {
    let params = serde_json::to_string(&study.params.to_stored()?)?;
    let values = vals![uuid, study.params.kind().name(), created_at, params, id];
    let rows = match id {
        Some(_) => c.query(
            "INSERT INTO studies (uuid, kind, created_at, params, id) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
            values,
        )?,
        None => c.query(
            "INSERT INTO studies (uuid, kind, created_at, params) VALUES (?1, ?2, ?3, ?4) RETURNING id",
            &values[..4],
        )?,
    };
    let id = returned_id(rows)?;
    for m in &study.members {
        c.exec(
            "INSERT INTO study_members (study_id, run_id, role) VALUES (?1, ?2, ?3)
             ON CONFLICT (study_id, run_id) DO UPDATE SET role = excluded.role",
            vals![id, m.run_id, serde_json::to_string(&m.role)?],
        )?;
    }
    for (seq, e) in study.events.iter().enumerate() {
        c.exec(
            "INSERT INTO study_events (study_id, seq, at, t, run_id, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            vals![id, seq as i64, &e.at, e.t, e.run_id, &e.kind, &e.detail],
        )?;
    }
    for (seq, s) in study.task_samples.iter().enumerate() {
        c.exec(
            "INSERT INTO task_samples (study_id, seq, task, t, run_id, state, percent, bytes_done)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            vals![
                id,
                seq as i64,
                s.task,
                s.t,
                s.run_id,
                s.state.name(),
                s.percent,
                s.bytes_done
            ],
        )?;
    }
    Ok(id)
}

/// One write of a run, an import, a scan or a study, with every value it stores (its
/// timestamps and UUIDs taken when it was made, so that applying it again writes the same).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Write {
    /// A run starts.
    BeginRun {
        /// Set once the database has given it.
        id: Option<i64>,
        uuid: String,
        started_at: String,
        pid: i64,
        run: NewRun,
    },
    /// A run's machine.
    Environment { run_id: i64, env: Environment },
    /// The MPI ranks of a run many processes ran together.
    Ranks { run_id: i64, ranks: Vec<RankRow> },
    /// Each rank's part of one phase of such a run.
    RankPhases { run_id: i64, rows: Vec<RankPhaseRow> },
    /// A finished phase with its samples.
    Phase { run_id: i64, phase: Box<Phase> },
    /// Something that happened in a run.
    Event {
        run_id: i64,
        at: String,
        kind: RunEventKind,
        detail: String,
    },
    /// A run ends; with `only_if_running`, only if it has not ended already (another
    /// process finishing the run of one that died must not overwrite an end that came first).
    Finish {
        run_id: i64,
        status: RunStatus,
        detail: Option<String>,
        at: String,
        only_if_running: bool,
    },
    /// Runs imported from another tool, and the studies they make, all or none.
    Import {
        /// Set once the database has given them.
        ids: Vec<i64>,
        uuids: Vec<String>,
        runs: Vec<ImportedRun>,
        /// Each study with its UUID and time of creation.
        studies: Vec<(String, String, ImportStudy)>,
    },
    /// A scan's report.
    Scan { run_id: i64, report: Box<Report> },
    /// A study.
    Study {
        /// Set once the database has given it.
        id: Option<i64>,
        uuid: String,
        created_at: String,
        study: NewStudy,
    },
}

/// A run begun: its row, running, with the process that runs it, and its tags.
fn begin_run(c: &mut dyn Conn, id: Option<i64>, uuid: &str, started_at: &str, pid: i64, run: &NewRun) -> Result<i64> {
    let id = insert_run(
        c,
        &RunRow {
            id,
            uuid,
            started_at,
            finished_at: None,
            host: &run.host,
            kind: run.kind,
            job_name: run.job_name.as_deref(),
            job: &run.job,
            command: Some(&run.command),
            status: RunStatus::Running,
            status_detail: None,
            pid: Some(pid),
            imported: false,
            cache_flattered: false,
        },
    )?;
    insert_tags(c, id, &run.tags)?;
    Ok(id)
}

/// What an import read: each run whole (finished when it began), and the studies they make up,
/// their members the runs' new ids.
fn import(
    c: &mut dyn Conn,
    ids: &[i64],
    uuids: &[String],
    runs: &[ImportedRun],
    studies: &[(String, String, ImportStudy)],
) -> Result<Vec<i64>> {
    let mut made = Vec::with_capacity(runs.len());
    for (i, (r, uuid)) in runs.iter().zip(uuids).enumerate() {
        let id = insert_run(
            c,
            &RunRow {
                id: ids.get(i).copied(),
                uuid,
                started_at: &r.started_at,
                finished_at: Some(&r.started_at),
                host: &r.run.host,
                kind: r.run.kind,
                job_name: r.run.job_name.as_deref(),
                job: &r.run.job,
                command: Some(&r.run.command),
                status: RunStatus::Ok,
                status_detail: None,
                pid: None,
                imported: true,
                cache_flattered: false,
            },
        )?;
        insert_tags(c, id, &r.run.tags)?;
        insert_environment(c, id, &r.environment)?;
        for p in &r.phases {
            insert_phase(c, id, p)?;
        }
        made.push(id);
    }
    for (uuid, created_at, s) in studies {
        let study = NewStudy {
            params: s.params.clone(),
            members: s
                .members
                .iter()
                .map(|(i, role)| Member {
                    run_id: made[*i],
                    role: role.clone(),
                })
                .collect(),
            events: Vec::new(),
            task_samples: Vec::new(),
        };
        insert_study(c, None, uuid, created_at, &study)?;
    }
    Ok(made)
}

impl Write {
    /// What the write stores, for a message: "run 4, phase 2", "the import of 9 runs".
    pub(crate) fn what(&self) -> String {
        match self {
            Write::BeginRun { run, .. } => format!("the run of {}", run.job_name.as_deref().unwrap_or("a job")),
            Write::Environment { run_id, .. } => format!("run {run_id}'s environment"),
            Write::Ranks { run_id, .. } | Write::RankPhases { run_id, .. } => format!("run {run_id}'s ranks"),
            Write::Phase { run_id, phase } => format!("run {run_id}, phase {}", phase.seq),
            Write::Event { run_id, .. } => format!("an event of run {run_id}"),
            Write::Finish { run_id, .. } => format!("the end of run {run_id}"),
            Write::Import { runs, .. } => format!("the import of {} run(s)", runs.len()),
            Write::Scan { run_id, .. } => format!("run {run_id}'s scan"),
            Write::Study { .. } => "the study".to_string(),
        }
    }

    /// Applies the write inside the caller's transaction; returns the ids it made.
    pub(crate) fn apply(&self, c: &mut dyn Conn) -> Result<Vec<i64>> {
        match self {
            Write::BeginRun {
                id,
                uuid,
                started_at,
                pid,
                run,
            } => begin_run(c, *id, uuid, started_at, *pid, run).map(|id| vec![id]),
            Write::Environment { run_id, env } => insert_environment(c, *run_id, env).map(|_| vec![]),
            Write::Ranks { run_id, ranks } => insert_ranks(c, *run_id, ranks).map(|_| vec![]),
            Write::RankPhases { run_id, rows } => insert_rank_phases(c, *run_id, rows).map(|_| vec![]),
            Write::Phase { run_id, phase } => insert_phase(c, *run_id, phase).map(|id| vec![id]),
            Write::Event {
                run_id,
                at,
                kind,
                detail,
            } => insert_event(c, *run_id, at, *kind, detail).map(|_| vec![]),
            Write::Finish {
                run_id,
                status,
                detail,
                at,
                only_if_running,
            } => {
                let sql = if *only_if_running {
                    "UPDATE runs SET status = ?2, status_detail = ?3, finished_at = ?4 WHERE id = ?1 AND status = 'running'"
                } else {
                    "UPDATE runs SET status = ?2, status_detail = ?3, finished_at = ?4 WHERE id = ?1"
                };
                c.exec(sql, vals![*run_id, status.name(), detail.as_deref(), at])?;
                Ok(vec![])
            }
            Write::Import {
                ids,
                uuids,
                runs,
                studies,
            } => import(c, ids, uuids, runs, studies),
            Write::Scan { run_id, report } => insert_scan(c, *run_id, report).map(|_| vec![]),
            Write::Study {
                id,
                uuid,
                created_at,
                study,
            } => insert_study(c, *id, uuid, created_at, study).map(|id| vec![id]),
        }
    }

    /// After a reconnect: whether this write committed before the connection was lost (its
    /// reply lost with it), and the ids it made if so.
    pub(crate) fn committed(&self, c: &mut dyn Conn) -> Result<Option<Vec<i64>>> {
        let ids = |rows: Vec<Row>| -> Result<Vec<i64>> { rows.iter().map(|r| r.i64(0)).collect() };
        Ok(match self {
            Write::BeginRun { uuid, .. } => {
                Some(ids(c.query("SELECT id FROM runs WHERE uuid = ?1", vals![uuid])?)?).filter(|v| !v.is_empty())
            }
            Write::Import { uuids, .. } => {
                let mut made = Vec::new();
                for u in uuids {
                    made.extend(ids(c.query("SELECT id FROM runs WHERE uuid = ?1", vals![u])?)?);
                }
                (made.len() == uuids.len()).then_some(made)
            }
            Write::Phase { run_id, phase } => {
                let rows = c.query(
                    "SELECT id FROM phases WHERE run_id = ?1 AND seq = ?2",
                    vals![*run_id, phase.seq],
                )?;
                Some(ids(rows)?).filter(|v| !v.is_empty())
            }
            Write::Event {
                run_id,
                at,
                kind,
                detail,
            } => {
                let rows = c.query(
                    "SELECT id FROM events WHERE run_id = ?1 AND at = ?2 AND kind = ?3 AND detail = ?4",
                    vals![*run_id, at, kind.name(), detail],
                )?;
                (!rows.is_empty()).then(Vec::new)
            }
            Write::Scan { run_id, .. } => {
                let rows = c.query("SELECT run_id FROM scans WHERE run_id = ?1", vals![*run_id])?;
                (!rows.is_empty()).then(Vec::new)
            }
            Write::Study { uuid, .. } => {
                Some(ids(c.query("SELECT id FROM studies WHERE uuid = ?1", vals![uuid])?)?).filter(|v| !v.is_empty())
            }
            // Setting the same values again changes nothing.
            Write::Environment { .. } | Write::Finish { .. } => None,
            // Rows already there are left as they are (ON CONFLICT DO NOTHING).
            Write::Ranks { .. } | Write::RankPhases { .. } => None,
        })
    }

    /// Keeps the ids the database gave, so that a replay (into a spool) writes the same ids.
    pub(crate) fn keep_ids(&mut self, made: &[i64]) {
        match self {
            Write::BeginRun { id, .. } | Write::Study { id, .. } => *id = made.first().copied(),
            Write::Import { ids, .. } => *ids = made.to_vec(),
            _ => {}
        }
    }
}
