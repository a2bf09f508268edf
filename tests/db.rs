//! Many hosts, one database: the binary against a real PostgreSQL server (crates/testkit):
//! `--db` URLs and keywords, `storlab db migrate | info | copy`, 20 writers at once, the server
//! stopped mid-run, passwords that never show, a role that may only read, TLS.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use storlab_testkit::PgServer;

use common::*;

/// storlab with `args`, the environment cleared of the caller's database settings.
fn storlab(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(bin());
    c.args(args);
    for v in [
        "STORLAB_DB",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGPASSWORD",
        "PGDATABASE",
        "PGSSLMODE",
        "PGPASSFILE",
    ] {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c.output().expect("run storlab")
}

fn ok(out: &Output) -> Value {
    assert!(out.status.success(), "storlab failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// A short run into `db` (a phase of 0.3 s with a sample every 0.1 s); its JSON.
fn short_run(data: &Path, db: &str, env: &[(&str, &str)]) -> Output {
    storlab(
        &[
            "run",
            "--target",
            data.to_str().unwrap(),
            "--phase",
            "randread",
            "--size",
            "1m",
            "--runtime",
            "0.3s",
            "--interval",
            "0.1s",
            "--db",
            db,
            "--json",
        ],
        env,
    )
}

#[test]
fn an_unknown_scheme_is_refused_by_name_and_postgresql_urls_work() {
    let s = Scratch::new();
    let data = s.data();
    let out = Command::new(bin())
        .current_dir(s.path())
        .args(["results", "list", "--db", "mysql://root:hunter2@db1/storlab"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("scheme 'mysql'") && !err.contains("hunter2"), "{err}");
    assert!(!s.path().join("mysql:").exists(), "a directory named after the scheme");
    // postgresql:// is PostgreSQL, not a directory called 'postgresql:'.
    let server = PgServer::shared();
    let db = server.database();
    let url = db.url().replacen("postgres://", "postgresql://", 1);
    let v = ok(&short_run(&data, &url, &[]));
    assert_eq!(v["id"], 1);
    assert!(!s.path().join("postgresql:").exists() && !Path::new("postgresql:").exists());
    // libpq's keyword form and its environment name the same database.
    let keywords = format!(
        "host={} port={} dbname={}",
        server.socket_dir().display(),
        server.port(),
        db.name
    );
    let listed = ok(&storlab(
        &["results", "list", "--db", &keywords, "--json"],
        &[("PGUSER", storlab_testkit::SUPERUSER)],
    ));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let port = server.port().to_string();
    let socket = server.socket_dir().display().to_string();
    let by_env = ok(&storlab(
        &["results", "list", "--json"],
        &[
            ("STORLAB_DB", "postgres://"),
            ("PGHOST", &socket),
            ("PGPORT", &port),
            ("PGUSER", storlab_testkit::SUPERUSER),
            ("PGDATABASE", &db.name),
        ],
    ));
    assert_eq!(by_env, listed);
}

#[test]
fn migrate_info_and_copy_both_ways() {
    let s = Scratch::new();
    let data = s.data();
    let file = s.path().join("host.db").display().to_string();
    let db = PgServer::shared().database();
    let url = db.url();
    let m = ok(&storlab(&["db", "migrate", "--db", &url, "--json"], &[]));
    assert_eq!(m["found_version"], 0);
    assert!(m["schema_version"].as_i64().unwrap() > 0, "{m}");
    let again = ok(&storlab(&["db", "migrate", "--db", &url, "--json"], &[]));
    assert_eq!(again["found_version"], m["schema_version"]);
    // Two runs on the host's file, one on the server.
    for _ in 0..2 {
        ok(&short_run(&data, &file, &[]));
    }
    let own = ok(&short_run(&data, &url, &[]));
    let copied = ok(&storlab(&["db", "copy", "--from", &file, "--to", &url, "--json"], &[]));
    assert_eq!(
        (copied["runs_copied"].as_u64(), copied["runs_skipped"].as_u64()),
        (Some(2), Some(0))
    );
    let twice = ok(&storlab(&["db", "copy", "--from", &file, "--to", &url, "--json"], &[]));
    assert_eq!(
        (twice["runs_copied"].as_u64(), twice["runs_skipped"].as_u64()),
        (Some(0), Some(2))
    );
    let info = ok(&storlab(&["db", "info", "--db", &url, "--json"], &[]));
    assert_eq!(info["runs"], 3);
    // What was copied reads back the same, samples and all.
    let on_file = ok(&storlab(
        &["results", "show", "1", "--samples", "--db", &file, "--json"],
        &[],
    ));
    let listed = ok(&storlab(&["results", "list", "--db", &url, "--json"], &[]));
    let ids: Vec<i64> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert!(ids.contains(&own["id"].as_i64().unwrap()));
    let first_copy = ids.iter().filter(|i| **i != own["id"].as_i64().unwrap()).min().unwrap();
    let on_server = ok(&storlab(
        &[
            "results",
            "show",
            &first_copy.to_string(),
            "--samples",
            "--db",
            &url,
            "--json",
        ],
        &[],
    ));
    assert_eq!(on_file["phases"], on_server["phases"]);
    assert_eq!(on_file["started_at"], on_server["started_at"]);
    // And back: the server's own run comes home; nothing is doubled.
    let back = ok(&storlab(&["db", "copy", "--from", &url, "--to", &file, "--json"], &[]));
    assert_eq!(
        (back["runs_copied"].as_u64(), back["runs_skipped"].as_u64()),
        (Some(1), Some(2))
    );
    let out = storlab(&["db", "copy", "--from", &file, "--to", &file], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// 20 processes × 10 runs each into one database at the same time: 200 runs, each with its
/// phase and every sample the process reported, no error.
#[test]
fn twenty_writers_at_once_lose_nothing() {
    let db = PgServer::shared().database();
    let url = db.url();
    let s = Scratch::new();
    // A new database: the 20 first opens race to migrate it; one does, the others wait for it
    // and find nothing left to do.
    let started = Instant::now();
    let reported: Vec<Vec<Value>> = std::thread::scope(|t| {
        let workers: Vec<_> = (0..20)
            .map(|w| {
                let (url, dir) = (url.clone(), s.path().join(format!("w{w}")));
                t.spawn(move || {
                    std::fs::create_dir_all(&dir).unwrap();
                    (0..10).map(|_| ok(&short_run(&dir, &url, &[]))).collect::<Vec<_>>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    eprintln!("200 runs by 20 processes in {:?}", started.elapsed());
    let listed = ok(&storlab(
        &["results", "list", "--limit", "1000", "--db", &url, "--json"],
        &[],
    ));
    assert_eq!(listed.as_array().unwrap().len(), 200);
    for run in reported.iter().flatten() {
        let id = run["id"].as_i64().unwrap().to_string();
        let stored = ok(&storlab(
            &["results", "show", &id, "--samples", "--db", &url, "--json"],
            &[],
        ));
        assert_eq!(stored["status"], "ok");
        assert_eq!(
            stored["phases"], run["phases"],
            "run {id} as stored differs from what its process reported"
        );
        let samples = stored["phases"][0]["result"]["samples"].as_array().unwrap();
        assert!(samples.len() >= 2, "run {id}: {} samples", samples.len());
    }
}

/// The server stopped in the middle of a run: the run finishes, is kept in a spool file, the
/// user is told how to copy it in, and `storlab db copy` brings it in once the server is back.
#[test]
fn a_server_stopped_mid_run_spools_and_copy_brings_it_in() {
    let server = PgServer::start();
    let db = server.database();
    let url = db.url();
    let s = Scratch::new();
    let data = s.data();
    let spool = s.path().join("spool");
    let job = s.path().join("job.toml");
    std::fs::write(
        &job,
        "size = \"4m\"\ninterval = \"0.1s\"\nphase = [\"write\", { kind = \"randread\", runtime = \"2s\" }, { kind = \"randread\", runtime = \"1s\" }]\n",
    )
    .unwrap();
    let child = Command::new(bin())
        .args([
            "run",
            job.to_str().unwrap(),
            "--target",
            data.to_str().unwrap(),
            "--db",
            &url,
            "--json",
        ])
        .env("STORLAB_DB_RETRY", "1")
        .env("STORLAB_SPOOL", &spool)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop the server once the first phase is stored.
    let t = Instant::now();
    loop {
        let mut c = db.client();
        let n: i64 = c
            .query_one("SELECT COUNT(*) FROM phases", &[])
            .map(|r| r.get(0))
            .unwrap_or(0);
        if n >= 1 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "the first phase never arrived");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.stop();
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "measured, not stored: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["phases"].as_array().unwrap().len(), 3);
    let files: Vec<_> = std::fs::read_dir(&spool).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let spool_file = files[0].display().to_string();
    assert!(
        err.contains(&format!("storlab db copy --from {spool_file} --to")),
        "the user is told how to copy it in: {err}"
    );
    server.start_again();
    let copied = ok(&storlab(
        &["db", "copy", "--from", &spool_file, "--to", &url, "--json"],
        &[],
    ));
    assert_eq!(copied["runs_replaced"], 1, "{copied}");
    // The finished copy replaced the unfinished record (under a new id: ids may differ).
    let listed = ok(&storlab(&["results", "list", "--db", &url, "--json"], &[]));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let id = listed[0]["id"].to_string();
    let stored = ok(&storlab(
        &["results", "show", &id, "--samples", "--db", &url, "--json"],
        &[],
    ));
    assert_eq!(stored["status"], "ok");
    assert_eq!(stored["phases"], v["phases"]);
}

/// A role with a password, over TCP: the password works from the URL, PGPASSWORD and
/// ~/.pgpass, and never appears in what storlab prints or stores.
#[test]
fn a_password_never_shows() {
    let server = PgServer::shared();
    let db = server.database();
    db.sql(&format!(
        "CREATE ROLE alice LOGIN PASSWORD 's3cr3t-pw'; GRANT ALL ON SCHEMA public TO alice; ALTER DATABASE {} OWNER TO alice",
        db.name
    ));
    let s = Scratch::new();
    let data = s.data();
    let port = server.port();
    let url = format!("postgres://alice:s3cr3t-pw@127.0.0.1:{port}/{}", db.name);
    let out = short_run(&data, &url, &[]);
    let v = ok(&out);
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert!(
        stderr(&out).contains(&format!("postgres://alice:****@127.0.0.1:{port}/")),
        "{}",
        stderr(&out)
    );
    let stored = ok(&storlab(
        &["results", "show", &v["id"].to_string(), "--db", &url, "--json"],
        &[],
    ));
    assert!(!stored.to_string().contains("s3cr3t"), "stored: {stored}");
    assert!(stored["command"].as_str().unwrap().contains("alice:****@"));
    // Nowhere in the database, in any table.
    let mut c = db.client();
    for table in ["runs", "environments", "phases", "events", "tags"] {
        let n: i64 = c
            .query_one(
                &format!("SELECT COUNT(*) FROM {table} t WHERE t::text LIKE '%s3cr3t%'"),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "the password is in {table}");
    }
    // PGPASSWORD, and ~/.pgpass (only when no one else may read it).
    let plain = format!("postgres://alice@127.0.0.1:{port}/{}", db.name);
    ok(&storlab(
        &["results", "list", "--db", &plain, "--json"],
        &[("PGPASSWORD", "s3cr3t-pw")],
    ));
    let home = s.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pgpass = home.join(".pgpass");
    std::fs::write(&pgpass, format!("127.0.0.1:{port}:*:alice:s3cr3t-pw\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let home_s = home.display().to_string();
    ok(&storlab(
        &["results", "list", "--db", &plain, "--json"],
        &[("HOME", &home_s)],
    ));
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = storlab(&["results", "list", "--db", &plain], &[("HOME", &home_s)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("can be read by others"), "{}", stderr(&out));
    // A wrong password: refused, and neither password shown.
    let wrong = format!("postgres://alice:not-it@127.0.0.1:{port}/{}", db.name);
    let out = storlab(&["results", "list", "--db", &wrong], &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("password authentication failed") && !err.contains("not-it"),
        "{err}"
    );
}

/// A role that may only read: listing works; a run is refused before it writes a byte, with a
/// message that says what is missing, and nothing partial is left.
#[test]
fn a_read_only_role_reads_and_is_refused_writes_cleanly() {
    let server = PgServer::shared();
    let db = server.database();
    let s = Scratch::new();
    let data = s.data();
    ok(&short_run(&data, &db.url(), &[]));
    db.sql(
        "CREATE ROLE reader LOGIN PASSWORD 'r'; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader; \
         GRANT USAGE ON SCHEMA public TO reader",
    );
    let url = format!("postgres://reader:r@127.0.0.1:{}/{}", server.port(), db.name);
    let listed = ok(&storlab(&["results", "list", "--db", &url, "--json"], &[]));
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let out = short_run(&data, &url, &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("permission denied") && err.contains("lacks a privilege"),
        "{err}"
    );
    assert!(!err.contains(":r@"), "{err}");
    assert!(entries(&data).is_empty(), "files left: {:?}", entries(&data));
    let mut c = db.client();
    let n: i64 = c.query_one("SELECT COUNT(*) FROM runs", &[]).unwrap().get(0);
    assert_eq!(n, 1, "a refused run left a record");
}

/// TLS as libpq's sslmode says: require encrypts; verify-full checks the authority and the
/// name, and refuses a name the certificate is not for.
#[test]
fn tls_as_sslmode_says() {
    let server = PgServer::start_with_tls();
    let db = server.database();
    db.sql(&format!(
        "CREATE ROLE tls LOGIN PASSWORD 'pw'; ALTER DATABASE {} OWNER TO tls",
        db.name
    ));
    server.require_tls_for("tls");
    let port = server.port();
    let ca = server.ca_file().display().to_string();
    let at = |host: &str, query: &str| format!("postgres://tls:pw@{host}:{port}/{}?{query}", db.name);
    let s = Scratch::new();
    let data = s.data();
    ok(&short_run(&data, &at("127.0.0.1", "sslmode=require"), &[]));
    // The role may only connect over TLS (pg_hba: hostnossl … reject): without it, refused.
    let out = storlab(&["results", "list", "--db", &at("127.0.0.1", "sslmode=disable")], &[]);
    assert!(!out.status.success(), "connected without TLS");
    assert!(stderr(&out).contains("no encryption"), "{}", stderr(&out));
    ok(&storlab(
        &[
            "results",
            "list",
            "--db",
            &at("localhost", &format!("sslmode=verify-full&sslrootcert={ca}")),
            "--json",
        ],
        &[],
    ));
    let out = storlab(
        &[
            "results",
            "list",
            "--db",
            &at("127.0.0.1", &format!("sslmode=verify-full&sslrootcert={ca}")),
        ],
        &[],
    );
    assert!(
        !out.status.success(),
        "a certificate for localhost accepted for 127.0.0.1"
    );
    assert!(stderr(&out).to_lowercase().contains("certificate"), "{}", stderr(&out));
    // verify-ca checks the authority, not the name.
    ok(&storlab(
        &[
            "results",
            "list",
            "--db",
            &at("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}")),
            "--json",
        ],
        &[],
    ));
    // verify-full with no authority to check against is refused before connecting.
    let out = storlab(
        &[
            "results",
            "list",
            "--db",
            &at("localhost", "sslmode=verify-full&sslrootcert=/nonexistent"),
        ],
        &[],
    );
    assert!(
        stderr(&out).contains("needs the authority's certificate"),
        "{}",
        stderr(&out)
    );
}

/// A child process killed when dropped (a failing test leaves none running).
struct Child(Option<std::process::Child>);

impl Child {
    fn spawn(args: &[&str], env: &[(&str, &str)]) -> Child {
        let mut c = Command::new(bin());
        c.args(args).envs(env.iter().copied());
        c.env_remove("STORLAB_DB");
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        Child(Some(c.spawn().expect("start storlab")))
    }

    fn pid(&self) -> i32 {
        self.0.as_ref().unwrap().id() as i32
    }

    /// Waits up to `secs` for it to end by itself.
    fn wait(&mut self, secs: u64) -> Output {
        let mut c = self.0.take().unwrap();
        let until = Instant::now() + Duration::from_secs(secs);
        while c.try_wait().unwrap().is_none() {
            if Instant::now() > until {
                let _ = c.kill();
                let out = c.wait_with_output().unwrap();
                panic!("still running after {secs} s: {}", stderr(&out));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        c.wait_with_output().unwrap()
    }

    /// SIGTERM, as systemd stops a service, and its output.
    fn terminate(&mut self, secs: u64) -> Output {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
        self.wait(secs)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits until `sql` (a count) on `db` reaches `n`.
fn wait_count(db: &storlab_testkit::PgDatabase, sql: &str, n: i64, what: &str) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let got: i64 = db.client().query_one(sql, &[]).map(|r| r.get(0)).unwrap_or(0);
        if got >= n {
            return;
        }
        assert!(Instant::now() < until, "{what}: {got} of {n} after 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `storlab monitor run` through a server restart: it keeps sweeping, says once that the
/// database is away and once that it is back, stores every sweep of the outage afterwards, each
/// once and without a gap, and SIGTERM ends it with 0. With an outage longer than its window it
/// ends in order, says what was not stored and how to start again, and exits non-zero.
#[test]
fn the_monitor_rides_out_a_server_restart_and_ends_in_order_after_a_longer_one() {
    let server = PgServer::start();
    let db = server.database();
    let url = db.url();
    let images = tempfile::tempdir().unwrap();
    let dev = common::loop_device_with(&images.path().join("r.img"), 16 << 20, false);
    let pool = format!("R={}", dev.dev);
    let args = [
        "monitor",
        "run",
        "--db",
        &url,
        "--pool",
        &pool,
        "--interval",
        "200ms",
        "--lt",
        "1s",
    ];
    let mut m = Child::spawn(&args, &[("STORLAB_DB_RETRY", "60")]);
    wait_count(&db, "SELECT COUNT(*) FROM monitor_disk", 5, "sweeps before the outage");
    server.stop();
    std::thread::sleep(Duration::from_secs(4));
    server.start_again();
    // Sweeps after the outage: the ones kept meanwhile are stored first.
    wait_count(
        &db,
        "SELECT COUNT(*) FROM monitor_disk",
        40,
        "sweeps through the outage",
    );
    let out = m.terminate(60);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("is away").count(), 1, "said once that it is away: {err}");
    assert_eq!(
        err.matches("is back after").count(),
        1,
        "said once that it is back: {err}"
    );
    let mut c = db.client();
    let status: String = c.query_one("SELECT status FROM monitors", &[]).unwrap().get(0);
    assert_eq!(status, "stopped");
    let rows = c
        .query("SELECT t, seconds FROM monitor_disk WHERE seconds > 0 ORDER BY t", &[])
        .unwrap();
    let sweeps: Vec<(f64, f64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    // Each sweep once, each beginning where the one before ended: no gap, no double.
    for w in sweeps.windows(2) {
        assert!(
            (w[1].0 - w[1].1 - w[0].0).abs() < 1e-6,
            "sweeps {w:?} leave a gap or overlap"
        );
    }
    let covered = sweeps.last().unwrap().0 - (sweeps[0].0 - sweeps[0].1);
    assert!(covered > 7.0, "{covered} s covered, the 4 s outage included");

    // An outage longer than the window (2 s here): an orderly end.
    let mut m = Child::spawn(&args, &[("STORLAB_DB_RETRY", "2")]);
    wait_count(
        &db,
        "SELECT COUNT(*) FROM monitors WHERE status = 'running'",
        1,
        "the second monitor",
    );
    server.stop();
    let out = m.wait(60);
    let err = stderr(&out);
    server.start_again();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("longer than the outage window (2 s"), "{err}");
    assert!(err.contains("start it again"), "{err}");
    assert_eq!(err.matches("is away").count(), 1, "{err}");
}

/// A run whose server restarts within the window goes on and stores everything into the
/// server, each phase once; no spool file; the outage said once each way.
#[test]
fn a_run_rides_out_a_server_restart_within_the_window() {
    let server = PgServer::start();
    let db = server.database();
    let url = db.url();
    let s = Scratch::new();
    let data = s.data();
    let spool = s.path().join("spool");
    let job = s.path().join("job.toml");
    std::fs::write(
        &job,
        "size = \"4m\"\ninterval = \"0.1s\"\nphase = [\"write\", { kind = \"randread\", runtime = \"2s\" }, { kind = \"randread\", runtime = \"2s\" }]\n",
    )
    .unwrap();
    let spool_env = spool.display().to_string();
    let mut run = Child::spawn(
        &[
            "run",
            job.to_str().unwrap(),
            "--target",
            data.to_str().unwrap(),
            "--db",
            &url,
            "--json",
        ],
        &[("STORLAB_DB_RETRY", "60"), ("STORLAB_SPOOL", &spool_env)],
    );
    wait_count(&db, "SELECT COUNT(*) FROM phases", 1, "the first phase");
    server.stop();
    std::thread::sleep(Duration::from_secs(3));
    server.start_again();
    let out = run.wait(60);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("is away").count(), 1, "{err}");
    assert_eq!(err.matches("is back after").count(), 1, "{err}");
    assert!(
        !spool.exists() || std::fs::read_dir(&spool).unwrap().next().is_none(),
        "a spool file: {err}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = v["id"].to_string();
    let stored = ok(&storlab(
        &["results", "show", &id, "--samples", "--db", &url, "--json"],
        &[],
    ));
    assert_eq!(stored["status"], "ok");
    assert_eq!(stored["phases"], v["phases"]);
    let phases: i64 = db
        .client()
        .query_one("SELECT COUNT(*) FROM phases", &[])
        .unwrap()
        .get(0);
    assert_eq!(phases, 3, "each phase once");
}

/// A challenge defined on `url` over `pools` (NAME=DIR) with `args`; its id.
fn create_challenge(url: &str, pools: &[String], args: &[&str]) -> String {
    let mut a = vec!["challenge", "create", "--db", url];
    for p in pools {
        a.extend(["--pool", p.as_str()]);
    }
    a.extend(args);
    let out = storlab(&a, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `storlab challenge agent ID` with 2 writers and 2 readers over `pools`.
fn challenge_agent(id: &str, url: &str, pools: &[String], env: &[(&str, &str)]) -> Child {
    let mut a = vec![
        "challenge",
        "agent",
        id,
        "--db",
        url,
        "--writers",
        "2",
        "--readers",
        "2",
        "--json",
    ];
    for p in pools {
        a.extend(["--pool", p.as_str()]);
    }
    Child::spawn(&a, env)
}

/// Two agents of challenge `id` started with `env`, once `files` files are written and both are
/// at work (their clock read, after which every statement rides outages out; an agent whose
/// server goes away while it starts ends at once, as every command does).
fn two_agents_at_work(
    db: &storlab_testkit::PgDatabase,
    id: &str,
    pools: &[String],
    env: &[(&str, &str)],
    files: i64,
) -> [Child; 2] {
    let url = db.url();
    let agents = [
        challenge_agent(id, &url, pools, env),
        challenge_agent(id, &url, pools, env),
    ];
    // Both at work first, then some files written: an agent slow to start (a busy machine)
    // must not leave the other to finish the whole challenge before the test's fault.
    wait_count(
        db,
        &format!("SELECT COUNT(DISTINCT agent) FROM clock_readings WHERE source = 'challenge {id}'"),
        2,
        "both agents at work",
    );
    wait_count(
        db,
        "SELECT COUNT(*) FROM challenge_files WHERE state IN ('written', 'reading', 'done')",
        files,
        "files written",
    );
    agents
}

/// What is left in a pool's directories: (name, size) of every file below `dir`.
fn files_below(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_below(&p));
        } else {
            out.push((p.display().to_string(), p.metadata().unwrap().len()));
        }
    }
    out
}

/// Two challenge agents through a server stopped for longer than a lease: both keep their
/// files, take no new work while the catalogue is away, say once that it went and once that it
/// came back, and finish the challenge: every file written and verified once, none reclaimed
/// from a live agent (the leases ran out during the outage), each agent's samples stored once
/// and without a gap. With an outage longer than the window both end in order (no partial
/// file, exit 1) and print the command that goes on, which then finishes the challenge.
#[test]
fn challenge_agents_ride_out_a_server_restart_and_end_in_order_after_a_longer_one() {
    let server = PgServer::start();
    let db = server.database();
    let url = db.url();
    let s = Scratch::new();
    let (a, b) = (s.path().join("a"), s.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let pools = [format!("P1={}", a.display()), format!("P2={}", b.display())];
    let shape = [
        "--file-size",
        "1m",
        "--bs",
        "256k",
        "--interval",
        "200ms",
        "--lt",
        "1s",
        "--lease",
        "3s",
        "--backlog",
        "8",
    ];
    // Enough files that the outage finds them at work (400 were done before it once, on a
    // machine busy with a build beside the suite).
    let files = ["--files", "1000"];
    let id = create_challenge(&url, &pools, &[&shape[..], &files[..]].concat());
    let mut agents = two_agents_at_work(&db, &id, &pools, &[("STORLAB_DB_RETRY", "60")], 30);
    server.stop();
    std::thread::sleep(Duration::from_secs(8));
    server.start_again();
    for agent in &mut agents {
        let out = agent.wait(240);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(err.matches("is away").count(), 1, "said once that it is away: {err}");
        assert_eq!(
            err.matches("is back after").count(),
            1,
            "said once that it is back: {err}"
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["here"]["outages"].as_u64().unwrap() >= 1, "{}", v["here"]);
        assert_eq!(v["here"]["dropped"], 0, "{}", v["here"]);
    }
    let shown = ok(&storlab(&["challenge", "show", &id, "--db", &url, "--json"], &[]));
    let acc = &shown["account"];
    assert_eq!(shown["status"], "done", "{shown}");
    assert_eq!(shown["holds"], true, "{acc}");
    assert_eq!(
        (acc["written"].as_u64(), acc["verified"].as_u64()),
        (Some(1000), Some(1000)),
        "{acc}"
    );
    assert_eq!(acc["lost"].as_array().unwrap().len(), 0, "{acc}");
    // No file twice: the leases ran out while the server was away, yet none was taken from a
    // live agent.
    assert_eq!(acc["rewritten"], 0, "{acc}");
    for e in shown["events"].as_array().unwrap() {
        assert!(
            !["reclaimed", "taken-over"].contains(&e["kind"].as_str().unwrap()),
            "{e}: {}",
            shown["events"]
        );
    }
    // Each agent's samples once, each beginning where the one before ended: the outage's
    // samples were kept and stored afterwards.
    let mut c = db.client();
    let rows = c
        .query(
            "SELECT host, idx, t, seconds FROM challenge_samples WHERE pool = 0 ORDER BY host, idx",
            &[],
        )
        .unwrap();
    let mut hosts = 0;
    for w in rows.windows(2) {
        let (h0, i0, t0): (String, i64, f64) = (w[0].get(0), w[0].get(1), w[0].get(2));
        let (h1, i1, t1, s1): (String, i64, f64, f64) = (w[1].get(0), w[1].get(1), w[1].get(2), w[1].get(3));
        if h0 != h1 {
            hosts += 1;
            continue;
        }
        assert_eq!(i1, i0 + 1, "{h0}: sample {i0} then {i1}");
        assert!(
            (t1 - s1 - t0).abs() < 1e-6,
            "{h0}: a gap or overlap between samples {i0} and {i1}"
        );
    }
    assert_eq!(hosts + 1, 2, "two agents' samples");
    assert!(files_below(&a).is_empty() && files_below(&b).is_empty());

    // An outage longer than the window (3 s): both end in order and say how to go on.
    let id = create_challenge(&url, &pools, &[&shape[..], &["--files", "2000"][..]].concat());
    let mut agents = two_agents_at_work(&db, &id, &pools, &[("STORLAB_DB_RETRY", "3")], 10);
    server.stop();
    let mut go_on = String::new();
    for agent in &mut agents {
        let out = agent.wait(120);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("longer than the outage window (STORLAB_DB_RETRY) (3 s)"),
            "{err}"
        );
        assert_eq!(err.matches("is away").count(), 1, "{err}");
        let (_, cmd) = err
            .split_once("go on with:\n  ")
            .unwrap_or_else(|| panic!("no command: {err}"));
        go_on = cmd.lines().next().unwrap().to_string();
    }
    // Nothing half-written: every file left is whole.
    for (f, size) in files_below(&a).into_iter().chain(files_below(&b)) {
        assert_eq!(size, 1 << 20, "{f} is partial");
    }
    server.start_again();
    assert!(
        go_on.starts_with(&format!("storlab challenge resume {id} --db ")),
        "{go_on}"
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(go_on.replacen("storlab", bin(), 1) + " --json")
        .env_remove("STORLAB_DB")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{go_on}: {}", stderr(&out));
    let shown = ok(&storlab(&["challenge", "show", &id, "--db", &url, "--json"], &[]));
    let acc = &shown["account"];
    assert_eq!(shown["status"], "done", "{shown}");
    assert_eq!(shown["holds"], true, "{acc}");
    assert_eq!(acc["verified"], 2000, "{acc}");
    assert_eq!(acc["lost"].as_array().unwrap().len(), 0, "{acc}");
    assert!(files_below(&a).is_empty() && files_below(&b).is_empty());
}

/// The library that shifts a process's clock (Debian's libfaketime): a host whose clock is off.
const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// Two agents whose hosts' clocks disagree by 30 s (one run under libfaketime, its wall clock
/// 30 s ahead, started 2 s after the other) line up on the database server's clock: each
/// measured its offset to it and stored it, the late one's samples begin when it joined (not
/// at the start its clock would say, nor past the end), and both end at the challenge's end.
#[test]
fn agents_whose_clocks_disagree_line_up_on_the_servers_clock() {
    assert!(
        Path::new(FAKETIME).exists(),
        "{FAKETIME}: install faketime (scripts/test does)"
    );
    let server = PgServer::start();
    let db = server.database();
    let url = db.url();
    let s = Scratch::new();
    let (a, b) = (s.path().join("a"), s.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let pools = [format!("P1={}", a.display()), format!("P2={}", b.display())];
    let id = create_challenge(
        &url,
        &pools,
        &[
            "--file-size",
            "1m",
            "--bs",
            "256k",
            "--interval",
            "500ms",
            "--lt",
            "1s",
            "--duration",
            "6s",
        ],
    );
    let mut right = challenge_agent(&id, &url, &pools, &[]);
    std::thread::sleep(Duration::from_secs(2));
    let ahead_env = [
        ("LD_PRELOAD", FAKETIME),
        ("FAKETIME", "+30s"),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
    ];
    let mut ahead = challenge_agent(&id, &url, &pools, &ahead_env);
    let (right_pid, ahead_pid) = (right.pid(), ahead.pid());
    for agent in [&mut right, &mut ahead] {
        let out = agent.wait(120);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let mut c = db.client();
    let mut offset = |pid: i32| -> f64 {
        c.query_one(
            "SELECT offset_seconds FROM clock_readings WHERE agent LIKE '%/' || $1 ORDER BY t LIMIT 1",
            &[&pid.to_string()],
        )
        .unwrap()
        .get(0)
    };
    let (o_right, o_ahead) = (offset(right_pid), offset(ahead_pid));
    assert!(o_right.abs() < 0.5, "the right clock's offset {o_right}");
    assert!((o_ahead + 30.0).abs() < 0.5, "the clock 30 s ahead: offset {o_ahead}");
    // Each agent's samples on the challenge's seconds: each began when it joined and ended at
    // the end (6 s), whatever its clock said.
    let mut c = db.client();
    for (pid, joined) in [(right_pid, 0.0), (ahead_pid, 2.0)] {
        let r = c
            .query_one(
                "SELECT MIN(t - seconds), MAX(t) FROM challenge_samples WHERE host LIKE '%/' || $1",
                &[&pid.to_string()],
            )
            .unwrap();
        let (first, last): (f64, f64) = (r.get(0), r.get(1));
        assert!(
            (joined - 0.1..joined + 1.5).contains(&first),
            "agent {pid}, which joined at {joined} s, began its samples at {first} s"
        );
        assert!(
            (5.5..7.5).contains(&last),
            "agent {pid}'s last sample ended at {last} s"
        );
    }
    let shown = ok(&storlab(&["challenge", "show", &id, "--db", &url, "--json"], &[]));
    assert_eq!(shown["holds"], true, "{}", shown["account"]);
    let clocks = shown["clocks"].as_array().unwrap();
    assert_eq!(clocks.len(), 2, "{clocks:?}");
    // `challenge show` says which host's clock was off, and by how much.
    let text = String::from_utf8_lossy(&storlab(&["challenge", "show", &id, "--db", &url], &[]).stdout).to_string();
    let line = text
        .lines()
        .find(|l| l.contains(&format!("/{ahead_pid}:")))
        .unwrap_or_else(|| panic!("no clock line for {ahead_pid}: {text}"));
    assert!(line.contains(" s ahead of the database server's"), "{line}");
    let secs: f64 = line
        .split(": ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((secs - 30.0).abs() < 0.5, "{line}");
}
