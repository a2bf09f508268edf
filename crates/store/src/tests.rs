use rusqlite::Connection;
use storlab_model::env::Environment;
use storlab_model::plan::PhaseKind;
use storlab_model::result::{PhaseResult, Sample, Throughput};
use storlab_model::run::{NewRun, Phase, PhaseName, PhaseParams, RunEventKind, RunKind, RunStatus};
use storlab_model::study::{Member, NewStudy, Role, StudyKind, StudyParams, SweepParams};

use super::*;

/// Runs `test` against a SQLite file and against a database of its own on the test binary's
/// PostgreSQL server (crates/testkit): the store's behaviour is the same on both.
fn on_both(test: impl Fn(&DbTarget)) {
    let dir = tempfile::tempdir().unwrap();
    test(&DbTarget::Sqlite(dir.path().join("sub/results.db")));
    let db = storlab_testkit::PgServer::shared().database();
    test(&DbTarget::parse(&db.url()).unwrap());
}

fn phase(seq: u32) -> Phase {
    Phase {
        seq,
        kind: PhaseName::Kind(PhaseKind::Write),
        params: PhaseParams::Imported(Default::default()),
        result: PhaseResult {
            bytes_written: 1 << 33,
            ops_written: 2,
            all_done: Throughput::new(1.5, 1 << 33, 2),
            samples: vec![
                Sample {
                    index: 0,
                    t_end: 1.0,
                    bytes_written: 1 << 32,
                    lat_max_ns: u64::MAX >> 1,
                    targets: vec![
                        storlab_model::result::TargetSample {
                            target: 0,
                            bytes_written: 1 << 31,
                            ..Default::default()
                        },
                        storlab_model::result::TargetSample {
                            target: 1,
                            bytes_written: 1 << 31,
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                },
                Sample {
                    index: 1,
                    t_start: 1.0,
                    t_end: 1.5,
                    ramp: true,
                    bytes_written: 1 << 32,
                    ..Default::default()
                },
            ],
            histogram: vec![1, 2, 3],
            histograms_rw: [vec![4, 5], vec![6]],
            histogram_sync: vec![7, 8, 9],
            histograms_slat: [vec![10], vec![11, 12]],
            histograms_clat: [vec![13, 14], Vec::new()],
            io_depths: Some(storlab_model::result::IoDepths {
                depth: [1, 2, 3, 4, 5, 6, 7],
                ..Default::default()
            }),
            ..Default::default()
        },
        cache_flattered: false,
    }
}

fn new_run() -> NewRun {
    NewRun {
        kind: RunKind::Run,
        host: "h".into(),
        job_name: None,
        job: serde_json::Value::Null,
        command: String::new(),
        tags: vec![("fs".into(), "ext4".into())],
    }
}

#[test]
fn round_trip() {
    on_both(round_trip_on);
}

fn round_trip_on(target: &DbTarget) {
    let mut s = Store::connect(target, "h").unwrap();
    assert_eq!(s.schema_version().unwrap(), schema::MIGRATIONS.len() as i64);
    let id = s.begin_run(&new_run()).unwrap();
    let env = Environment {
        host: "h".into(),
        cpus: 2,
        ..Default::default()
    };
    s.save_environment(id, &env).unwrap();
    s.save_phase(id, &phase(0)).unwrap();
    s.add_event(id, RunEventKind::PhaseStart, "1 (write)").unwrap();
    s.finish_run(id, RunStatus::Ok, None).unwrap();
    let d = s.run(id, true).unwrap().unwrap();
    assert_eq!(d.events.len(), 1);
    assert_eq!(d.events[0].kind, RunEventKind::PhaseStart);
    assert!(
        d.run.started_at.ends_with('Z') && d.run.finished_at.is_some(),
        "{:?}",
        d.run
    );
    assert_eq!(d.run.status, RunStatus::Ok);
    assert_eq!(d.run.tags, vec![("fs".to_string(), "ext4".to_string())]);
    // What was stored is what is read: 64-bit counts, the samples, the histograms (the
    // phase's, each direction's, the flushes'), the depths.
    assert_eq!(d.phases, vec![phase(0)]);
    assert_eq!(d.environment, env);
    assert_eq!(s.list_runs(10).unwrap()[0].phase_count, 1);
    assert!(s.run(id + 1, false).unwrap().is_none());
    assert!(s.run(id, false).unwrap().unwrap().phases[0].result.samples.is_empty());
    assert_eq!(s.integrity_check().unwrap(), "ok");
    // Removing the run removes its samples too (PostgreSQL: by trigger, migration 7).
    let count = |s: &Store, table: &str| {
        s.query(&format!("SELECT COUNT(*) FROM {table}"), &[]).unwrap()[0]
            .i64(0)
            .unwrap()
    };
    assert!(count(&s, "samples") > 0 && count(&s, "target_samples") > 0);
    assert_eq!(s.delete_runs(&[id]).unwrap(), 1);
    let left: Vec<i64> = ["phases", "samples", "target_samples"]
        .iter()
        .map(|t| count(&s, t))
        .collect();
    assert_eq!(left, vec![0, 0, 0]);
}

#[test]
fn studies_round_trip() {
    on_both(studies_round_trip_on);
}

fn studies_round_trip_on(target: &DbTarget) {
    let mut s = Store::connect(target, "h").unwrap();
    let id = s.begin_run(&new_run()).unwrap();
    let study = NewStudy {
        params: StudyParams::Sweep(SweepParams {
            vary: vec!["threads".into()],
            points: vec![("threads".into(), vec!["1".into()])],
            command: "c".into(),
            ..SweepParams::default()
        }),
        members: vec![Member {
            run_id: id,
            role: Role::Point {
                values: vec![("threads".into(), "1".into())],
            },
        }],
        events: Vec::new(),
        task_samples: Vec::new(),
    };
    let sid = s.save_study(&study).unwrap();
    let back = s.study(sid).unwrap().unwrap();
    assert_eq!(back.params, study.params);
    assert_eq!(back.members, study.members);
    assert_eq!(s.studies_of_kind(StudyKind::Sweep).unwrap(), vec![sid]);
    assert!(s.studies_of_kind(StudyKind::Impact).unwrap().is_empty());
}

#[test]
fn dead_runs_become_aborted() {
    on_both(dead_runs_become_aborted_on);
}

fn dead_runs_become_aborted_on(target: &DbTarget) {
    let mut s = Store::connect(target, "h").unwrap();
    let id = s.begin_run(&new_run()).unwrap();
    s.save_phase(id, &phase(0)).unwrap();
    // Pretend the run belongs to a process that is gone.
    s.exec("UPDATE runs SET pid = 999999999 WHERE id = ?1", crate::db::vals![id])
        .unwrap();
    drop(s);
    let mut s = Store::connect(target, "h").unwrap();
    let d = s.run(id, false).unwrap().unwrap();
    assert_eq!(d.run.status, RunStatus::Aborted);
    assert_eq!(d.phases.len(), 1);
    // A run whose process finished it between another's look and its write keeps its end:
    // twenty processes storing at once once saw an ok run turned aborted that way.
    let ok_id = s.begin_run(&new_run()).unwrap();
    s.finish_run(ok_id, RunStatus::Ok, None).unwrap();
    s.abort_if_still_running(ok_id, "gone").unwrap();
    assert_eq!(s.run(ok_id, false).unwrap().unwrap().run.status, RunStatus::Ok);
}

#[test]
fn newer_schema_is_refused() {
    on_both(|target| {
        let s = Store::connect(target, "h").unwrap();
        s.conn.borrow_mut().set_schema_version(99).unwrap();
        drop(s);
        let e = Store::connect(target, "h").err().unwrap();
        assert!(e.to_string().contains("newer than this storlab"), "{e}");
    });
}

#[test]
fn filters_tags_and_times() {
    on_both(|target| {
        let mut s = Store::connect(target, "h").unwrap();
        let a = s.begin_run(&new_run()).unwrap();
        let b = s
            .begin_run(&NewRun {
                tags: vec![("fs".into(), "xfs".into()), ("pool".into(), "p_1%".into())],
                job_name: Some("seq_100%".into()),
                ..new_run()
            })
            .unwrap();
        let ids = |f: RunFilter| s.find_runs(&f).unwrap().iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(RunFilter::default()), vec![b, a]);
        let by_tag = RunFilter {
            tags: vec![("fs".into(), "xfs".into())],
            ..RunFilter::default()
        };
        assert_eq!(ids(by_tag), vec![b]);
        // LIKE's wildcards in a job name are literal.
        let by_job = |j: &str| RunFilter {
            job: Some(j.into()),
            ..RunFilter::default()
        };
        assert_eq!(ids(by_job("100%")), vec![b]);
        assert!(ids(by_job("1_0")).is_empty());
        // A date is its midnight UTC; both runs started today.
        let today = &now_rfc3339()[..10];
        let since = |d: &str| RunFilter {
            since: Some(d.into()),
            ..RunFilter::default()
        };
        assert_eq!(ids(since(today)).len(), 2);
        assert!(ids(since("2999-01-01")).is_empty());
        assert_eq!(ids(since(&today[..7])).len(), 2);
        assert!(ids(since("2999")).is_empty());
        assert!(matches!(s.find_runs(&since("yesterday")), Err(StoreError::Request(_))));
        assert_eq!(s.list_runs(10).unwrap()[0].tags.len(), 2);
        assert_eq!(s.untag(b, &["pool".into()]).unwrap(), 1);
        assert!(s.tag(b, &[("fs".into(), "btrfs".into())]).unwrap());
        assert!(!s.tag(b + 100, &[("fs".into(), "btrfs".into())]).unwrap());
        assert_eq!(
            s.run(b, false).unwrap().unwrap().run.tags,
            vec![("fs".to_string(), "btrfs".to_string())]
        );
        assert_eq!(s.delete_runs(&[a, b]).unwrap(), 2);
        assert!(s.list_runs(10).unwrap().is_empty());
    });
}

/// A database as storlab wrote it at schema version 4 (before the typed model): an imported
/// fio phase with loose JSON, a storlab phase whose parameters are a bare plan, and study roles
/// in words. Migration 5 makes them typed; migration 6 gives the runs UUIDs.
#[test]
fn migration_5_types_what_older_versions_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let mut c = Connection::open(&path).unwrap();
        let tx = c.transaction().unwrap();
        for m in &schema::MIGRATIONS[..4] {
            let schema::Migration::Sql { sqlite: sql, .. } = m else {
                panic!("1 to 4 are SQL")
            };
            tx.execute_batch(sql).unwrap();
        }
        tx.pragma_update(None, "user_version", 4).unwrap();
        tx.commit().unwrap();
        let plan = include_str!("../tests/plan-v4.json");
        c.execute_batch(&format!(
            r#"
            INSERT INTO runs (id, started_at, host, kind, status, imported) VALUES (1, 't', 'h', 'import', 'ok', 1);
            INSERT INTO runs (id, started_at, host, kind, status, imported) VALUES (2, 't', 'h', 'run', 'ok', 0);
            INSERT INTO phases (run_id, seq, kind, params, bytes_read, bytes_written, ops_read, ops_written, seconds,
                bytes_per_sec, iops, first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec,
                worker_max_bytes_per_sec, cpu_user, cpu_sys, lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns,
                lat_p99_ns, lat_p99_9_ns, lat_p99_99_ns, cache_flattered, interrupted, result)
              VALUES (1, 0, 'rw', '{{"fio job options": {{"bs": "4k"}}}}', 4096, 8192, 1, 2, 2.0, 6144.0, 1.5, 2.0,
                6144.0, 6144.0, 6144.0, 0.1, 0.2, 10, 20.0, 30, 21, 22, 23, 24, 25, 0, 0,
                '{{"source": "fio", "error": 0, "note": "", "first_done": "fio reports one figure per job"}}');
            INSERT INTO phases (run_id, seq, kind, params, bytes_read, bytes_written, ops_read, ops_written, seconds,
                bytes_per_sec, iops, first_done_seconds, first_done_bytes_per_sec, worker_min_bytes_per_sec,
                worker_max_bytes_per_sec, cpu_user, cpu_sys, lat_min_ns, lat_mean_ns, lat_max_ns, lat_p50_ns, lat_p90_ns,
                lat_p99_ns, lat_p99_9_ns, lat_p99_99_ns, cache_flattered, interrupted, result)
              VALUES (2, 0, 'randread', '{plan}', 0, 0, 0, 0, 1.0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                '{{"kind": "randread", "bytes_read": 4096, "rate": {{"target": 100.0, "unit": "iops", "achieved": 99.0, "late_ios": 0, "late_after_ns": 1000000}}}}');
            INSERT INTO studies (id, kind, created_at, params) VALUES (1, 'impact', 't', '{{"task": "cmd:x", "repeat": 1}}');
            INSERT INTO study_members (study_id, run_id, role) VALUES (1, 1, 'idle r1'), (1, 2, 'loaded r1 (task ended early)');
            "#
        ))
        .unwrap();
    }
    let s = Store::open(&path, "h").unwrap();
    assert_eq!(s.schema_version().unwrap(), schema::MIGRATIONS.len() as i64);
    // Migration 6 gave the runs already there distinct identities.
    let (a, b) = (s.run_uuid(1).unwrap().unwrap(), s.run_uuid(2).unwrap().unwrap());
    assert!(a.len() == 36 && b.len() == 36 && a != b, "{a} {b}");
    let fio = s.run(1, false).unwrap().unwrap();
    let p = &fio.phases[0];
    // fio's rw=rw is storlab's own kind since storlab runs it: the old import reads as it.
    assert_eq!(p.kind, PhaseName::Kind(storlab_model::plan::PhaseKind::Rw));
    let PhaseParams::Imported(i) = &p.params else {
        panic!("{:?}", p.params)
    };
    assert_eq!(i.tool, "fio");
    assert_eq!(i.options["fio job options"]["bs"], "4k");
    assert_eq!(i.notes, vec!["fio reports one figure per job".to_string()]);
    assert_eq!(p.result.bytes_written, 8192);
    assert_eq!(p.result.all_done.iops, 1.5);
    assert_eq!(p.result.latency.p99_ns, 23);
    assert_eq!(p.result.cpu_sys, 0.2);
    let own = s.run(2, false).unwrap().unwrap();
    let plan = own.phases[0].plan().expect("a storlab plan");
    // The settings that were fields of the plan, under their names of then.
    assert_eq!(plan.settings.engine, storlab_model::plan::BackendKind::Psync);
    assert_eq!(plan.settings.rwmix, 50);
    assert_eq!(plan.settings.rate, Some(storlab_units::Rate::Iops(100.0)));
    assert_eq!(plan.settings.size, Some(1 << 20));
    assert_eq!(plan.rate().map(|r| r.per_worker), Some(false));
    assert_eq!(own.phases[0].result.bytes_read, 4096);
    assert_eq!(own.phases[0].result.rate.as_ref().unwrap().achieved, 99.0);
    let study = s.study(1).unwrap().unwrap();
    assert_eq!(
        study.members[1].role,
        Role::Repetition {
            index: 1,
            loaded: true,
            counted: false
        }
    );
    let StudyParams::Impact(u) = &study.params else {
        panic!()
    };
    assert_eq!(u.task, "cmd:x");
}

/// A run with a phase, an event and a study, in `s`.
fn fill(s: &mut Store) -> (i64, i64) {
    let id = s.begin_run(&new_run()).unwrap();
    s.save_environment(
        id,
        &Environment {
            host: "h".into(),
            ..Default::default()
        },
    )
    .unwrap();
    s.save_phase(id, &phase(0)).unwrap();
    s.add_event(id, RunEventKind::PhaseStart, "1 (write)").unwrap();
    s.finish_run(id, RunStatus::Ok, None).unwrap();
    let sid = s
        .save_study(&NewStudy {
            params: StudyParams::Sweep(SweepParams::default()),
            members: vec![Member {
                run_id: id,
                role: Role::Point { values: vec![] },
            }],
            events: Vec::new(),
            task_samples: Vec::new(),
        })
        .unwrap();
    (id, sid)
}

#[test]
fn copies_go_both_ways_and_twice_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = storlab_testkit::PgServer::shared();
    let db = server.database();
    let mut file = Store::open(&dir.path().join("a.db"), "h").unwrap();
    let pg = Store::connect(&DbTarget::parse(&db.url()).unwrap(), "h").unwrap();
    // The server has a run of its own first, so that the ids differ.
    let mut pg = pg;
    fill(&mut pg);
    let (id, _) = fill(&mut file);
    let first = file.copy_into(&pg, |_, _| {}).unwrap();
    assert_eq!((first.runs_copied, first.studies_copied), (1, 1));
    let again = file.copy_into(&pg, |_, _| {}).unwrap();
    assert_eq!(
        (again.runs_copied, again.runs_skipped, again.studies_skipped),
        (0, 1, 1)
    );
    let uuid = file.run_uuid(id).unwrap().unwrap();
    let there = pg
        .find_runs(&RunFilter::default())
        .unwrap()
        .into_iter()
        .find(|r| pg.run_uuid(r.id).unwrap().as_deref() == Some(uuid.as_str()))
        .expect("the copied run, by its UUID");
    assert_ne!(there.id, id);
    let (a, b) = (
        file.run(id, true).unwrap().unwrap(),
        pg.run(there.id, true).unwrap().unwrap(),
    );
    assert_eq!(a.phases, b.phases);
    assert_eq!(a.events, b.events);
    assert_eq!((a.environment, a.run.started_at), (b.environment, b.run.started_at));
    let study = pg
        .study(pg.studies_of_kind(StudyKind::Sweep).unwrap()[0])
        .unwrap()
        .unwrap();
    assert!(study.members.iter().all(|m| pg.run(m.run_id, false).unwrap().is_some()));
    // And back: the server's own run comes to the file; the file's own is not doubled.
    let back = pg.copy_into(&file, |_, _| {}).unwrap();
    assert_eq!((back.runs_copied, back.runs_skipped), (1, 1));
    assert_eq!(file.list_runs(10).unwrap().len(), 2);
}

/// The server stopped in the middle of a run: the run goes on, lands whole in a spool file,
/// and `copy_into` brings it to the server once it is back, over its unfinished record.
#[test]
fn a_lost_server_spools_and_the_copy_brings_it_back() {
    let server = storlab_testkit::PgServer::start();
    let db = server.database();
    let spool = tempfile::tempdir().unwrap();
    let target = DbTarget::parse(&db.url()).unwrap();
    let mut s = Store::connect(&target, "h").unwrap();
    s.set_recovery(std::time::Duration::from_secs(1), spool.path().to_path_buf());
    let id = s.begin_run(&new_run()).unwrap();
    s.save_phase(id, &phase(0)).unwrap();
    server.stop();
    s.save_phase(id, &phase(1)).unwrap();
    s.finish_run(id, RunStatus::Ok, None).unwrap();
    assert_eq!(s.spooled_from().as_deref(), Some(target.to_string().as_str()));
    let DbTarget::Sqlite(file) = s.target() else {
        panic!("still on the server: {}", s.target())
    };
    assert!(file.starts_with(spool.path()), "{}", file.display());
    // The spool has the run whole, under the id the server gave it.
    let spooled = s.run(id, true).unwrap().unwrap();
    assert_eq!(spooled.phases.len(), 2);
    assert_eq!(spooled.run.status, RunStatus::Ok);
    drop(s);
    server.start_again();
    let pg = Store::connect(&target, "other-host").unwrap();
    assert_eq!(pg.run(id, false).unwrap().unwrap().run.status, RunStatus::Running);
    let file = Store::open(&file, "h").unwrap();
    let copied = file.copy_into(&pg, |_, _| {}).unwrap();
    assert_eq!((copied.runs_replaced, copied.runs_copied), (1, 0));
    let runs = pg.list_runs(10).unwrap();
    assert_eq!(runs.len(), 1);
    let back = pg.run(runs[0].id, true).unwrap().unwrap();
    assert_eq!(back.run.status, RunStatus::Ok);
    assert_eq!(back.phases, vec![phase(0), phase(1)]);
    assert_eq!(file.copy_into(&pg, |_, _| {}).unwrap().runs_skipped, 1);
}

/// The server restarted within the retry window: the write that met it gone lands on the
/// server once, and no spool is made.
#[test]
fn a_server_back_in_time_gets_the_write() {
    let server = storlab_testkit::PgServer::start();
    let db = server.database();
    let spool = tempfile::tempdir().unwrap();
    let target = DbTarget::parse(&db.url()).unwrap();
    let mut s = Store::connect(&target, "h").unwrap();
    s.set_recovery(std::time::Duration::from_secs(60), spool.path().to_path_buf());
    let id = s.begin_run(&new_run()).unwrap();
    server.stop();
    std::thread::scope(|t| {
        t.spawn(|| {
            std::thread::sleep(std::time::Duration::from_secs(1));
            server.start_again();
        });
        s.save_phase(id, &phase(0)).unwrap();
    });
    s.finish_run(id, RunStatus::Ok, None).unwrap();
    assert!(s.spooled_from().is_none());
    assert_eq!(s.target(), target);
    assert_eq!(std::fs::read_dir(spool.path()).unwrap().count(), 0);
    let d = s.run(id, true).unwrap().unwrap();
    assert_eq!((d.run.status, d.phases.len()), (RunStatus::Ok, 1));
}

#[test]
fn monitor_samples_move_up_the_levels_keeping_every_byte_and_a_second_monitor_is_refused() {
    use storlab_model::monitor::{DiskDelta, DiskSample, FsSample, Level, MonitorSpec, Series, SeriesKind};
    on_both(|target| {
        let s = Store::connect(target, "h").unwrap();
        let spec = MonitorSpec {
            pools: vec![],
            interval: 10.0,
            lt: 100.0,
            keep_full: 200.0,
            keep_lt: 3600.0,
            retain: 7200.0,
        };
        let series = vec![Series {
            idx: 0,
            pool: "P".into(),
            kind: SeriesKind::Disk,
            name: "sdb".into(),
            top: true,
        }];
        let id = s.create_monitor("h", &spec, &series, 1000.0).unwrap();
        // This process is alive: a second monitor of this host on this database is refused,
        // and nothing of it is stored.
        let mut other = spec.clone();
        other.interval = 1.0;
        // (pid 1, init, stands for another live monitor process)
        s.exec("UPDATE monitors SET pid = 1 WHERE id = ?1", crate::db::vals![id])
            .unwrap();
        let refused = s.create_monitor("h", &other, &series, 1000.0).unwrap_err().to_string();
        assert!(refused.contains("a monitor is already running on h"), "{refused}");
        assert_eq!(s.monitors().unwrap().len(), 1);
        // Thirty 10 s samples from t = 1010 to 1300, 1 MiB read each, 100 ms busy.
        for i in 1..=30u64 {
            let t = 1000.0 + 10.0 * i as f64;
            let sweep = Sweep {
                disks: vec![DiskSample {
                    series: 0,
                    t,
                    seconds: 10.0,
                    level: Level::Full,
                    delta: DiskDelta {
                        reads: 1,
                        read_bytes: 1 << 20,
                        busy_ms: 100,
                        in_flight: i as f64,
                        ..DiskDelta::default()
                    },
                }],
                fs: vec![FsSample {
                    series: 0,
                    t,
                    level: Level::Full,
                    size: 100,
                    avail: 100 - i,
                    free: 100 - i,
                    files: 10,
                    files_free: 5,
                }],
                ..Sweep::default()
            };
            s.add_monitor_sweep(id, t, &sweep).unwrap();
        }
        // Everything ending by 1200 moves into 100 s averages: buckets (1000, 1100], (1100, 1200].
        assert_eq!(
            s.compact_monitor(id, Level::Full, Level::LongTerm, 1200.0, 100.0)
                .unwrap(),
            20
        );
        assert_eq!(s.monitor_levels(id).unwrap(), [10, 2, 0]);
        let w = s.monitor_window(Some("h"), 0.0, 1e9).unwrap();
        let lt: Vec<&DiskSample> = w.disks.iter().filter(|d| d.level == Level::LongTerm).collect();
        assert_eq!(lt.len(), 2);
        assert_eq!(
            (lt[0].t, lt[0].seconds, lt[0].delta.read_bytes),
            (1100.0, 100.0, 10 << 20)
        );
        assert_eq!(lt[0].delta.in_flight, 5.5, "gauges are averaged");
        let total: u64 = w.disks.iter().map(|d| d.delta.read_bytes).sum();
        assert_eq!(total, 30 << 20, "no byte lost or counted twice");
        let fs_lt: Vec<&FsSample> = w.fs.iter().filter(|f| f.level == Level::LongTerm).collect();
        assert_eq!(fs_lt[1].avail, 80, "a filesystem's last figure of the bucket is kept");
        // Retention: nothing before 1250 survives.
        s.purge_monitor_samples(1250.0).unwrap();
        let w = s.monitor_window(Some("h"), 0.0, 1e9).unwrap();
        assert!(w.disks.iter().all(|d| d.t >= 1250.0));
        assert_eq!(w.disks.len(), 6);
        assert_eq!(w.series.len(), 1);
        assert!(s.monitor_window(Some("other"), 0.0, 1e9).unwrap().series.is_empty());
    });
}

#[test]
fn sched_slots_are_leases_with_fencing_tokens_and_turns() {
    on_both(|target| {
        let s = Store::connect(target, "h").unwrap();
        let lease = 2.0;
        // Two slots; a never-verified server goes first, by name among equals.
        let a = s.sched_acquire("P", "a", "h/1", 2, lease).unwrap().expect("a's turn");
        assert_eq!((a.slot, a.token), (1, 1));
        let b = s.sched_acquire("P", "b", "h/2", 2, lease).unwrap().expect("b's turn");
        assert_eq!((b.slot, b.token), (2, 2));
        assert!(
            s.sched_acquire("P", "c", "h/3", 2, lease).unwrap().is_none(),
            "k = 2 slots are held"
        );
        // A second agent for a server that holds a slot gets nothing, and it is logged.
        assert!(s.sched_acquire("P", "a", "h/9", 2, lease).unwrap().is_none());
        assert!(s
            .sched_report("P", "a", "h/1", a.token, "started", "btrfs scrub", None)
            .unwrap());
        // a finishes and gives its slot back; c (never verified) takes it with a new token.
        assert!(s
            .sched_report("P", "a", "h/1", a.token, "complete", "0 errors", Some((1.5, "{}")))
            .unwrap());
        assert!(s.sched_release("P", &a, "h/1").unwrap());
        let c = s.sched_acquire("P", "c", "h/3", 2, lease).unwrap().expect("c's turn");
        assert_eq!((c.slot, c.token), (1, 3));
        // b's lease runs out without a renewal: its slot is free for the next, under a larger
        // token, and b's renewal and report are refused.
        std::thread::sleep(std::time::Duration::from_secs_f64(lease + 0.3));
        assert!(
            s.sched_renew("P", &c, "h/3", lease).unwrap().is_none(),
            "c's lease ran out too"
        );
        let a2 = s.sched_acquire("P", "a", "h/1", 2, lease).unwrap().expect("a again");
        assert!(a2.token > c.token);
        assert!(s.sched_renew("P", &b, "h/2", lease).unwrap().is_none());
        assert!(!s
            .sched_report("P", "b", "h/2", b.token, "complete", "late", Some((9.0, "{}")))
            .unwrap());
        // A live lease renews.
        let before = a2.expires;
        assert!(s.sched_renew("P", &a2, "h/1", lease).unwrap().unwrap() >= before);
        let ev = s.sched_events(Some("P")).unwrap();
        let kinds: Vec<&str> = ev.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds.iter().filter(|k| **k == "granted").count(), 4, "{kinds:?}");
        assert!(ev.iter().any(|e| e.kind == "refused" && e.agent == "h/9"), "{kinds:?}");
        assert!(
            ev.iter()
                .any(|e| e.kind == "refused" && e.server == "b" && e.token == Some(b.token)),
            "{kinds:?}"
        );
        assert!(ev.windows(2).all(|w| w[0].t <= w[1].t));
    });
}

/// An import's runs and the study they make (an IOzone matrix) are written in one go, the
/// study's members named by their place in the import; a study that names a run the import
/// does not have is refused before anything is written.
#[test]
fn an_import_and_its_study_are_stored_together_or_not_at_all() {
    on_both(|target| {
        let mut s = Store::connect(target, "h").unwrap();
        let imported = |name: &str| storlab_model::run::ImportedRun {
            run: NewRun {
                kind: RunKind::Import,
                job_name: Some(name.into()),
                ..new_run()
            },
            started_at: "2026-11-24T00:00:00Z".into(),
            environment: Environment::default(),
            phases: vec![phase(0)],
        };
        let runs = vec![imported("a"), imported("b"), imported("c")];
        let params = StudyParams::IozoneImport(storlab_model::study::ImportParams {
            imported_from: "iozone.txt".into(),
        });
        let role = |n: &str| Role::Imported { name: n.into() };

        let bad = ImportStudy {
            params: params.clone(),
            members: vec![(0, role("a")), (3, role("d"))],
        };
        let e = s.import_runs(&runs, &[bad]).unwrap_err();
        assert!(e.to_string().contains("names run 3 of an import of 3 run(s)"), "{e}");
        assert!(s.find_runs(&RunFilter::default()).unwrap().is_empty());

        let study = ImportStudy {
            params,
            members: vec![(1, role("b")), (2, role("c"))],
        };
        let ids = s.import_runs(&runs, std::slice::from_ref(&study)).unwrap().stored;
        assert_eq!(ids.len(), 3);
        // The same runs again are known by their content: nothing is stored twice.
        let again = s.import_runs(&runs, &[study]).unwrap();
        assert_eq!((again.stored.len(), again.already.clone()), (0, ids.clone()));
        let stored = s.studies_of_kind(StudyKind::IozoneImport).unwrap();
        assert_eq!(stored.len(), 1);
        let st = s.study(stored[0]).unwrap().unwrap();
        let members: Vec<(i64, Role)> = st.members.iter().map(|m| (m.run_id, m.role.clone())).collect();
        assert_eq!(members, vec![(ids[1], role("b")), (ids[2], role("c"))]);
    });
}
