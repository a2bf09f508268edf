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
    // What was stored is what is read: 64-bit counts, the samples, the histogram.
    assert_eq!(d.phases, vec![phase(0)]);
    assert_eq!(d.environment, env);
    assert_eq!(s.list_runs(10).unwrap()[0].phase_count, 1);
    assert!(s.run(id + 1, false).unwrap().is_none());
    assert!(s.run(id, false).unwrap().unwrap().phases[0].result.samples.is_empty());
    assert_eq!(s.integrity_check().unwrap(), "ok");
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
    let s = Store::connect(target, "h").unwrap();
    let d = s.run(id, false).unwrap().unwrap();
    assert_eq!(d.run.status, RunStatus::Aborted);
    assert_eq!(d.phases.len(), 1);
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
    assert_eq!(p.kind, PhaseName::Other("rw".into()));
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
