//! `storlab sched plan`: the real binary on schedule files, RAL's pool planned as seed 000
//! reasons (ten servers, a verify costing one 13.9 %, a 5 % budget: three at once), mistakes
//! refused with their line and exit 2.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use common::{stderr, stdout, Scratch};

fn schedule(budget: &str, servers: usize) -> String {
    let mut t = format!(
        "[schedule]\nlease = \"60s\"\n\n[[pool]]\nname = \"P1\"\nbudget = \"{budget}\"\ncost = \"13.9%\"\nduration = \"6h\"\nduration_loaded = \"9h\"\nwindows = [\"Mon-Fri 22:00-06:00\", \"Sat-Sun 00:00-24:00\"]\n"
    );
    for i in 0..servers {
        t += &format!("\n[[pool.server]]\nname = \"ds{i:02}\"\ntask = \"btrfs-scrub:/srv/data\"\n");
    }
    t
}

#[test]
fn a_pools_concurrency_and_round_follow_its_budget_and_cost() {
    let s = Scratch::new();
    let f = s.path().join("schedule.toml");
    std::fs::write(&f, schedule("5%", 10)).unwrap();
    let v = s.json(&["sched", "plan", f.to_str().unwrap()]);
    let p = &v["pools"][0];
    assert_eq!(p["k"], 3, "{v}");
    assert!((p["pool_loss"].as_f64().unwrap() - 4.17).abs() < 0.01, "{v}");
    assert_eq!(p["round_loaded"], 4.0 * 9.0 * 3600.0, "⌈10/3⌉ = 4 tasks of 9 h: {v}");
    // Monday to Friday nights and the weekend, the Friday night's hours counted once.
    assert_eq!(p["window_hours"], 82.0, "{v}");
    assert_eq!(v["lease_seconds"], 60.0);
    let out = s.storlab(&["sched", "plan", f.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(
        common::stdout(&out).contains("P1: 3 at once"),
        "{}",
        common::stdout(&out)
    );
}

#[test]
fn a_schedule_no_server_may_verify_in_is_refused_with_its_line() {
    let s = Scratch::new();
    let f = s.path().join("schedule.toml");
    std::fs::write(&f, schedule("1%", 10)).unwrap();
    let out = s.storlab(&["sched", "plan", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("line 7") && stderr(&out).contains("no server may verify within that budget"),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        &f,
        schedule("5%", 10).replace("btrfs-scrub:/srv/data", "fsck:/srv/data"),
    )
    .unwrap();
    let out = s.storlab(&["sched", "plan", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("line 14") && stderr(&out).contains("unknown kind 'fsck'"),
        "{}",
        stderr(&out)
    );
    assert!(s.nothing_stored());
}

// ---- The agents: real processes over a real database (SQLite, and PostgreSQL in the suite's
// second pass), command tasks whose real start and end the task script writes down.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The stand-in verify: a `sleep SECS` started in the background; its real start and end (the
/// kill's time when stopped, start + SECS when it ran out) are appended to DIR/truth, the
/// ground truth the invariant is checked against besides the event log. Pause and resume stop
/// and continue the sleep.
const TASK: &str = r#"#!/bin/sh
op=$1 dir=$2 name=$3 secs=$4
now() { date +%s.%N; }
case $op in
start)
  rm -f "$dir/$name.ended"
  sleep "$secs" & echo $! > "$dir/$name.pid"
  echo "start $name $(now)" >> "$dir/truth" ;;
status)
  pid=$(cat "$dir/$name.pid")
  if kill -0 "$pid" 2>/dev/null && ! grep -q "^State:.*Z" /proc/$pid/status 2>/dev/null; then echo running; exit 0; fi
  if [ ! -e "$dir/$name.ended" ]; then
    t0=$(grep "^start $name " "$dir/truth" | tail -1 | cut -d' ' -f3)
    echo "end $name $(awk "BEGIN{printf \"%.6f\", $t0 + $secs}")" >> "$dir/truth"; touch "$dir/$name.ended"
  fi
  echo "done errors: 0" ;;
stop)
  kill "$(cat "$dir/$name.pid")" 2>/dev/null
  [ -e "$dir/$name.ended" ] || { echo "end $name $(now) stopped" >> "$dir/truth"; touch "$dir/$name.ended"; } ;;
pause) kill -STOP "$(cat "$dir/$name.pid")"; echo "pause $name $(now)" >> "$dir/truth" ;;
resume) kill -CONT "$(cat "$dir/$name.pid")"; echo "resume $name $(now)" >> "$dir/truth" ;;
esac
"#;

/// A pool of the test's schedule: its name, budget and cost (which give k), its servers with
/// their task's seconds, and extra lines.
struct TestPool<'a> {
    name: &'a str,
    budget: &'a str,
    cost: &'a str,
    servers: Vec<(String, f64)>,
    extra: &'a str,
}

/// Writes the task script and a schedule (root's, mode 644) into `dir`.
fn write_schedule(dir: &Path, lease: &str, pools: &[TestPool]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("task.sh");
    std::fs::write(&script, TASK).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (sh, d) = (script.display(), dir.display());
    let mut t = format!("[schedule]\nlease = \"{lease}\"\n");
    for p in pools {
        t += &format!(
            "\n[[pool]]\nname = \"{}\"\nbudget = \"{}\"\ncost = \"{}\"\n{}\n",
            p.name, p.budget, p.cost, p.extra
        );
        for (s, secs) in &p.servers {
            t += &format!(
                "[[pool.server]]\nname = \"{s}\"\ntask = \"cmd:{sh} start {d} {s} {secs}|{sh} status {d} {s} {secs}|{sh} stop {d} {s}|{sh} pause {d} {s}|{sh} resume {d} {s}\"\n"
            );
        }
    }
    let f = dir.join("schedule.toml");
    std::fs::write(&f, t).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    f
}

/// An agent process, killed (-9) when dropped, so that a failing test leaves none behind; its
/// guard stops the task when it sees the agent gone.
struct AgentProc(Child);

impl AgentProc {
    /// Starts an agent; what it says goes to DIR/SERVER.log beside the schedule.
    fn start(db: &str, schedule: &Path, server: &str, extra: &[&str]) -> AgentProc {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(schedule.with_file_name(format!("{server}.log")))
            .unwrap();
        let mut c = Command::new(common::bin());
        c.args(["sched", "agent", "--server", server, "--schedule"])
            .arg(schedule)
            .args(["--db", db, "--poll", "0.2s"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log);
        AgentProc(c.spawn().expect("start an agent"))
    }
    fn kill9(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
    fn term(&mut self) -> Option<i32> {
        // SAFETY: a signal to our own child, by its pid.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        self.0.wait().ok()?.code()
    }
    fn exited(&mut self) -> Option<i32> {
        self.0.try_wait().ok().flatten().map(|s| s.code().unwrap_or(-1))
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        self.kill9();
    }
}

#[derive(Debug, Clone)]
struct Ev {
    t: f64,
    pool: String,
    server: String,
    token: Option<i64>,
    kind: String,
    detail: String,
}

fn events(s: &Scratch) -> Vec<Ev> {
    let v = s.json(&["sched", "events"]);
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| Ev {
            t: e["t"].as_f64().unwrap(),
            pool: e["pool"].as_str().unwrap().into(),
            server: e["server"].as_str().unwrap().into(),
            token: e["token"].as_i64(),
            kind: e["kind"].as_str().unwrap().into(),
            detail: e["detail"].as_str().unwrap().into(),
        })
        .collect()
}

/// The event log read straight from a PostgreSQL database of the test's own.
fn pg_events(pg: &storlab_testkit::PgDatabase) -> Vec<Ev> {
    pg.client()
        .query(
            "SELECT t, pool, server, token, kind, detail FROM sched_events ORDER BY id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| Ev {
            t: r.get(0),
            pool: r.get(1),
            server: r.get(2),
            token: r.get(3),
            kind: r.get(4),
            detail: r.get(5),
        })
        .collect()
}

/// The most intervals of one pool open at once.
fn most_at_once(intervals: &[(f64, f64)]) -> usize {
    let mut edges: Vec<(f64, i32)> = intervals.iter().flat_map(|(a, b)| [(*a, 1), (*b, -1)]).collect();
    // An end at the same instant as a start comes first: a slot handed on is not two at once.
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0, 0);
    for (_, d) in edges {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// Per pool, each task's time as the event log tells it: from `started` to its end (complete,
/// incomplete, stopped, failed, released) or, for an agent that died with it, its lease's last
/// expiry (granted or renewed "until T").
fn log_intervals(evs: &[Ev]) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut by_token: BTreeMap<(String, i64), Vec<&Ev>> = BTreeMap::new();
    for e in evs {
        if let Some(t) = e.token {
            by_token.entry((e.pool.clone(), t)).or_default().push(e);
        }
    }
    for ((pool, _), es) in by_token {
        let Some(start) = es.iter().find(|e| e.kind == "started") else {
            continue;
        };
        let end = es
            .iter()
            .find(|e| ["complete", "incomplete", "stopped", "failed", "released"].contains(&e.kind.as_str()))
            .map(|e| e.t)
            .unwrap_or_else(|| {
                es.iter()
                    .filter_map(|e| {
                        e.detail
                            .split("until ")
                            .nth(1)?
                            .split_whitespace()
                            .next()?
                            .parse::<f64>()
                            .ok()
                    })
                    .fold(f64::MIN, f64::max)
            });
        out.entry(pool).or_default().push((start.t, end));
    }
    out
}

/// The safety invariant from the event log: in each pool, never more than its k tasks running.
fn assert_at_most_k(evs: &[Ev], ks: &[(&str, usize)]) {
    let iv = log_intervals(evs);
    for (pool, k) in ks {
        let most = iv.get(*pool).map_or(0, |i| most_at_once(i));
        assert!(
            most <= *k,
            "pool {pool}: {most} tasks at once by the event log, k = {k}: {evs:#?}"
        );
    }
}

/// Per server, its tasks' real times from the task script: (start, end, stopped).
fn truth(dir: &Path) -> BTreeMap<String, Vec<(f64, Option<f64>)>> {
    let text = std::fs::read_to_string(dir.join("truth")).unwrap_or_default();
    let mut out: BTreeMap<String, Vec<(f64, Option<f64>)>> = BTreeMap::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.as_slice() {
            ["start", s, t, ..] => out.entry(s.to_string()).or_default().push((t.parse().unwrap(), None)),
            ["end", s, t, ..] => {
                if let Some(last) = out.get_mut(*s).and_then(|v| v.last_mut()) {
                    last.1 = Some(t.parse().unwrap());
                }
            }
            _ => {}
        }
    }
    out
}

fn common_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn twenty_agents_verify_every_server_once_and_never_more_than_k_of_a_pool_at_once() {
    let s = Scratch::new();
    let db = s.db();
    // Four pools of five servers, a verify costing one 10 %: budgets of 2, 4, 6 and 10 %
    // give k = 1, 2, 3 and 5. Tasks of random length (a fixed seed, so a failure repeats).
    let mut rng = 0x5eed_u64;
    let mut secs = || {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        0.4 + (rng >> 33) as f64 / (1u64 << 31) as f64 * 1.2
    };
    let specs = [("P1", "2%", 1), ("P2", "4%", 2), ("P3", "6%", 3), ("P4", "10%", 5)];
    let pools: Vec<TestPool> = specs
        .iter()
        .map(|(name, budget, _)| TestPool {
            name,
            budget,
            cost: "10%",
            servers: (1..=5)
                .map(|i| (format!("{}s{i}", name.to_lowercase()), secs()))
                .collect(),
            extra: "",
        })
        .collect();
    let f = write_schedule(s.path(), "3s", &pools);
    let plan = s.json(&["sched", "plan", f.to_str().unwrap()]);
    for (i, (_, _, k)) in specs.iter().enumerate() {
        assert_eq!(plan["pools"][i]["k"], *k, "{plan}");
    }
    let servers: Vec<String> = pools
        .iter()
        .flat_map(|p| p.servers.iter().map(|s| s.0.clone()))
        .collect();
    let mut agents: BTreeMap<String, AgentProc> = servers
        .iter()
        .map(|n| (n.clone(), AgentProc::start(&db, &f, n, &["--rounds", "1"])))
        .collect();
    // Three agents killed with kill -9 while their task runs, at moments of their own into it,
    // and started again (as systemd would): their tasks must stop with them, and their servers
    // still be verified.
    let mut kills = vec![("p1s3", 0.1), ("p2s2", 0.3), ("p4s5", 0.2)];
    let t0 = Instant::now();
    loop {
        let real = truth(s.path());
        kills.retain(|(server, into)| {
            let Some((start, None)) = real.get(*server).and_then(|v| v.last()) else {
                return true;
            };
            if common_now() < start + into {
                return true;
            }
            let a = agents.get_mut(*server).unwrap();
            a.kill9();
            *a = AgentProc::start(&db, &f, server, &["--rounds", "1"]);
            false
        });
        if kills.is_empty() && agents.values_mut().all(|a| a.exited().is_some()) {
            break;
        }
        if t0.elapsed() > Duration::from_secs(40) {
            let running: Vec<&String> = agents
                .iter_mut()
                .filter_map(|(n, a)| a.exited().is_none().then_some(n))
                .collect();
            panic!(
                "the agents did not finish their round in 2 minutes: kills left {kills:?}, agents running {running:?}, truth {:?}",
                truth(s.path())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for (n, a) in agents.iter_mut() {
        let log = std::fs::read_to_string(s.path().join(format!("{n}.log"))).unwrap_or_default();
        assert_eq!(a.exited(), Some(0), "agent {n}: {log}");
    }
    let evs = events(&s);
    // Every server verified once (its round), the killed ones after their agent came back.
    for n in &servers {
        let complete = evs.iter().filter(|e| e.server == *n && e.kind == "complete").count();
        assert_eq!(complete, 1, "{n} completed {complete} verifies: {evs:#?}");
    }
    // The invariant from the event log: never more than k tasks of a pool running.
    let intervals = log_intervals(&evs);
    for (pool, _, k) in specs {
        let most = most_at_once(&intervals[pool]);
        assert!(most <= k, "pool {pool}: {most} tasks at once by the event log, k = {k}");
        assert!(most >= 1);
    }
    // And from the tasks' own record: each task really ended (stopped or run out), never more
    // than k running at once.
    let real = truth(s.path());
    for (p, (pool, _, k)) in pools.iter().zip(specs) {
        let mut iv = Vec::new();
        for (n, _) in &p.servers {
            for (a, b) in &real[n] {
                iv.push((
                    *a,
                    b.unwrap_or_else(|| {
                        panic!(
                            "{n}'s task started at {a} never ended: {}\n{}\n{:#?}",
                            std::fs::read_to_string(s.path().join("truth")).unwrap_or_default(),
                            std::fs::read_to_string(s.path().join(format!("{n}.log"))).unwrap_or_default(),
                            evs.iter().filter(|e| e.server == *n).collect::<Vec<_>>()
                        )
                    }),
                ));
            }
        }
        let most = most_at_once(&iv);
        assert!(most <= k, "pool {pool}: {most} tasks really ran at once, k = {k}");
        if k > 1 {
            assert!(most > 1, "pool {pool}: k = {k} but the tasks ran one at a time");
        }
    }
    // The killed agents' tasks were stopped by their guards (their first task ended before
    // its time), and their servers verified by the agents started again.
    for server in ["p1s3", "p2s2", "p4s5"] {
        let runs = &real[server];
        let text = std::fs::read_to_string(s.path().join("truth")).unwrap();
        assert!(runs.len() >= 2, "{server}: {runs:?}");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("end {server} ")) && l.ends_with("stopped")),
            "{server}'s task was not stopped when its agent was killed: {text}"
        );
    }
    // The status view agrees with the event log.
    let st = s.json(&["sched", "status", "--schedule", f.to_str().unwrap()]);
    for p in st["pools"].as_array().unwrap() {
        assert_eq!(p["slots_in_use"], 0, "{p}");
        for sv in p["servers"].as_array().unwrap() {
            let name = sv["server"].as_str().unwrap();
            let last = evs
                .iter()
                .filter(|e| e.server == name && e.kind == "complete")
                .map(|e| e.t)
                .fold(f64::MIN, f64::max);
            assert!(
                (sv["last_complete"].as_f64().unwrap() - last).abs() < 1e-6,
                "{sv} vs the log's {last}"
            );
            assert_eq!(sv["errors_found"], 0, "{sv}");
            assert_eq!(sv["running"], serde_json::Value::Null);
        }
    }
}

/// Runs SQL in the scratch database, as someone with write access to it would.
fn tamper(s: &Scratch, sql: &str) {
    if common::on_postgres() {
        let mut c = postgres::Client::connect(&s.db(), postgres::NoTls).unwrap();
        c.batch_execute(sql).unwrap();
    } else {
        rusqlite::Connection::open(s.db()).unwrap().execute_batch(sql).unwrap();
    }
}

#[test]
fn an_agent_runs_only_what_its_own_schedule_file_says() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new();
    let pwned = s.path().join("pwned");
    let f = write_schedule(
        s.path(),
        "3s",
        &[TestPool {
            name: "P",
            budget: "10%",
            cost: "10%",
            servers: vec![("a".into(), 0.3), ("b".into(), 0.3)],
            extra: "",
        }],
    );
    // Someone who can write to the shared database rewrites what it holds: the log's words,
    // a server's record. None of it is a command an agent takes.
    let out = s.storlab(&["db", "migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let evil = format!("cmd:touch {0}|touch {0}|touch {0}", pwned.display());
    tamper(
        &s,
        &format!(
            "INSERT INTO sched_servers (pool, server, seen, last_errors) VALUES ('P', 'a', 0, '{evil}');
             INSERT INTO sched_events (t, pool, server, agent, token, kind, detail) VALUES (0, 'P', 'a', 'x', 1, 'task', '{evil}');"
        ),
    );
    let mut a = AgentProc::start(&s.db(), &f, "a", &["--rounds", "1"]);
    wait_until("agent a's verify", Duration::from_secs(30), || a.exited().is_some());
    assert_eq!(a.exited(), Some(0));
    assert!(!pwned.exists(), "an agent ran a command from the database");
    assert_eq!(truth(s.path())["a"].len(), 1, "the schedule file's own task ran once");
    assert_at_most_k(&events(&s), &[("P", 2)]);

    // A schedule file its group may write is refused before anything starts.
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o664)).unwrap();
    let before = events(&s).len();
    let out = s.storlab(&[
        "sched",
        "agent",
        "--server",
        "b",
        "--schedule",
        f.to_str().unwrap(),
        "--rounds",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("writable by its group (mode 664)"),
        "{}",
        stderr(&out)
    );
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    // An agent for a server the schedule does not name.
    let out = s.storlab(&["sched", "agent", "--server", "zz", "--schedule", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--server zz") && stderr(&out).contains("its servers: a, b"),
        "{}",
        stderr(&out)
    );
    assert_eq!(events(&s).len(), before, "a refused agent wrote to the database");
    assert!(!truth(s.path()).contains_key("b"), "a refused agent started a task");
}

#[test]
fn two_agents_for_one_server_never_run_its_task_twice_at_once() {
    let s = Scratch::new();
    let f = write_schedule(
        s.path(),
        "3s",
        &[TestPool {
            name: "P",
            budget: "100%",
            cost: "10%",
            servers: vec![("a".into(), 1.5)],
            extra: "",
        }],
    );
    let mut one = AgentProc::start(&s.db(), &f, "a", &["--rounds", "1"]);
    let mut two = AgentProc::start(&s.db(), &f, "a", &["--rounds", "1"]);
    wait_until("both agents' rounds", Duration::from_secs(60), || {
        one.exited().is_some() && two.exited().is_some()
    });
    let evs = events(&s);
    assert!(
        evs.iter()
            .any(|e| e.kind == "refused" && e.detail.contains("holds a slot already, through agent")),
        "the second agent was not refused while the first held the server: {evs:#?}"
    );
    let runs: Vec<(f64, f64)> = truth(s.path())["a"].iter().map(|(a, b)| (*a, b.unwrap())).collect();
    assert_eq!(runs.len(), 2, "each agent did its one round: {runs:?}");
    assert_eq!(most_at_once(&runs), 1, "the server's task ran twice at once: {runs:?}");
    assert_at_most_k(&evs, &[("P", 1)]);
}

#[test]
fn an_agent_cut_off_from_postgresql_stops_its_task_before_its_lease_ends() {
    // A server of this test's own, since it is terminated and stopped; in the suite's first
    // pass (the second stores into the shared server, which must stay up).
    if common::on_postgres() {
        return;
    }
    let server = storlab_testkit::PgServer::start();
    let pg = server.database();
    let s = Scratch::new();
    let f = write_schedule(
        s.path(),
        "3s",
        &[TestPool {
            name: "Q",
            budget: "5%",
            cost: "10%",
            servers: vec![("q1".into(), 60.0), ("q2".into(), 0.5)],
            extra: "",
        }],
    );
    let url = pg.url();
    let mut q1 = AgentProc::start(&url, &f, "q1", &[]);
    wait_until("q1's task", Duration::from_secs(30), || {
        truth(s.path()).contains_key("q1")
    });
    // Its connection cut (pg_terminate_backend): the agent connects again and renews; the task
    // goes on.
    let cut = common_now();
    pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
    std::thread::sleep(Duration::from_secs(4));
    let renewals_after = |evs: &[Ev]| evs.iter().filter(|e| e.kind == "renewed" && e.t > cut).count();
    let log = |evs: &[Ev]| format!("{evs:#?}");
    let evs = pg_events(&pg);
    assert!(renewals_after(&evs) >= 2, "no renewal after the cut: {}", log(&evs));
    assert_eq!(
        truth(s.path())["q1"][0].1,
        None,
        "the task stopped when only its connection was cut"
    );
    // The server stopped: no renewal can come; the guard stops the task before the lease ends.
    let last_expiry = evs
        .iter()
        .filter_map(|e| e.detail.split("until ").nth(1)?.parse::<f64>().ok())
        .fold(f64::MIN, f64::max);
    server.stop();
    let stopped_at = common_now();
    wait_until("q1's task to stop", Duration::from_secs(10), || {
        truth(s.path())["q1"][0].1.is_some()
    });
    let end = truth(s.path())["q1"][0].1.unwrap();
    // The lease's expiry is at most one renewal period past the last one seen before the stop.
    assert!(
        end < last_expiry + 1.0 + 0.1 && end > stopped_at,
        "the task ended at {end}, its lease (last seen until {last_expiry}) ended by {}",
        last_expiry + 1.0
    );
    // Back again: q1's agent, never gone, takes its turn again (q1 has not completed a verify);
    // told to stop (SIGTERM, as systemd stops it), it stops the task and gives the slot back,
    // and q2 verifies.
    server.start_again();
    let mut q2 = AgentProc::start(&url, &f, "q2", &["--rounds", "1"]);
    wait_until("q1's second task", Duration::from_secs(30), || {
        truth(s.path())["q1"].len() == 2
    });
    assert_eq!(q1.term(), Some(0), "an agent told to stop exits 0");
    assert!(truth(s.path())["q1"][1].1.is_some(), "q1's task outlived its agent");
    // The first task's end, reported while the server was away, waited and was recorded once
    // it was back, once (under its lease, which had run out: as refused, with what it said).
    let evs = pg_events(&pg);
    let first = evs
        .iter()
        .find(|e| e.kind == "granted" && e.server == "q1")
        .and_then(|e| e.token)
        .unwrap();
    let ends: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.token == Some(first))
        .filter(|e| e.kind == "stopped" || (e.kind == "refused" && e.detail.starts_with("stopped under token")))
        .collect();
    assert_eq!(ends.len(), 1, "the first task's end: {}", log(&evs));
    // Each outage (the cut, the stop) said once each way.
    let said = std::fs::read_to_string(s.path().join("q1.log")).unwrap();
    assert_eq!(said.matches("is away").count(), 2, "{said}");
    assert_eq!(said.matches("is back after").count(), 2, "{said}");
    wait_until("q2's verify", Duration::from_secs(60), || q2.exited().is_some());
    let real = truth(s.path());
    let iv: Vec<(f64, f64)> = real
        .values()
        .flatten()
        .map(|(a, b)| (*a, b.unwrap_or(f64::MAX)))
        .collect();
    assert_eq!(most_at_once(&iv), 1, "k = 1, yet two tasks ran at once: {real:?}");
    let evs = pg_events(&pg);
    assert_at_most_k(&evs, &[("Q", 1)]);
}

/// A child process killed when dropped (a test's monitor, its status server), failing or not.
struct Kill<'a>(&'a mut Child);

impl Drop for Kill<'_> {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Loop devices are set up one test at a time (losetup --find is not atomic across tests).
static LOOPS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A btrfs RAID1 filesystem over two loop devices (images on the root filesystem), mounted
/// under `dir`, holding `mib` MiB of data; undone when dropped.
struct Raid1 {
    mount: common::Mount,
    _a: common::LoopDev,
    _b: common::LoopDev,
    _images: tempfile::TempDir,
}

fn raid1(dir: &Path, name: &str, mib: u64) -> Raid1 {
    let images = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let a = common::loop_device(&images.path().join("a.img"), 256 << 20);
    let b = common::loop_device(&images.path().join("b.img"), 256 << 20);
    let mk = Command::new("mkfs.btrfs")
        .args(["-q", "-f", "-d", "raid1", "-m", "raid1", &a.dev, &b.dev])
        .output()
        .unwrap();
    assert!(mk.status.success(), "{}", stderr(&mk));
    let point = dir.join(name);
    let mount = common::mount_device(&a.dev, &point);
    let dd = Command::new("dd")
        .arg("if=/dev/urandom")
        .arg(format!("of={}/data", point.display()))
        .args(["bs=1M", &format!("count={mib}"), "conv=fsync"])
        .output()
        .unwrap();
    assert!(dd.status.success(), "{}", stderr(&dd));
    Raid1 {
        mount,
        _a: a,
        _b: b,
        _images: images,
    }
}

fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    f
}

/// Two pools of two btrfs RAID1 filesystems each (k = 1 in each), whose scrubs really run:
/// every filesystem scrubbed once, one at a time per pool, what each found recorded.
#[test]
fn btrfs_raid1_pools_are_scrubbed_one_server_at_a_time() {
    let _l = LOOPS.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let fss: Vec<(String, Raid1)> = ["b1x", "b1y", "b2x", "b2y"]
        .iter()
        .map(|n| (n.to_string(), raid1(s.path(), n, 64)))
        .collect();
    let mut t = String::from("[schedule]\nlease = \"5s\"\n");
    for pool in ["B1", "B2"] {
        t += &format!("\n[[pool]]\nname = \"{pool}\"\nbudget = \"5%\"\ncost = \"10%\"\n");
        for (n, fs) in fss.iter().filter(|(n, _)| n.starts_with(&pool.to_lowercase())) {
            // 16 MiB/s a device: each scrub takes about four seconds, long enough to be seen
            // going and to overlap the other pool's.
            t += &format!(
                "[[pool.server]]\nname = \"{n}\"\ntask = \"btrfs-scrub:{}@16m\"\n",
                fs.mount.point.display()
            );
        }
    }
    let f = write_file(s.path(), "schedule.toml", &t);
    let mut agents: Vec<AgentProc> = fss
        .iter()
        .map(|(n, _)| AgentProc::start(&s.db(), &f, n, &["--rounds", "1"]))
        .collect();
    wait_until("four scrubs", Duration::from_secs(120), || {
        agents.iter_mut().all(|a| a.exited().is_some())
    });
    for (a, (n, _)) in agents.iter_mut().zip(&fss) {
        let log = std::fs::read_to_string(s.path().join(format!("{n}.log"))).unwrap_or_default();
        assert_eq!(a.exited(), Some(0), "agent {n}: {log}");
    }
    let evs = events(&s);
    for (n, _) in &fss {
        let done: Vec<&Ev> = evs.iter().filter(|e| e.server == *n && e.kind == "complete").collect();
        assert_eq!(done.len(), 1, "{n}: {evs:#?}");
        assert!(done[0].detail.contains("no errors found"), "{n}: {}", done[0].detail);
        assert!(
            evs.iter().any(|e| e.server == *n
                && e.kind == "progress"
                && e.detail
                    .split(" %")
                    .next()
                    .and_then(|p| p.parse::<f64>().ok())
                    .is_some_and(|p| p > 0.0)),
            "{n}'s scrub progress was never recorded: {evs:#?}"
        );
    }
    let iv = log_intervals(&evs);
    for pool in ["B1", "B2"] {
        assert_eq!(most_at_once(&iv[pool]), 1, "pool {pool}: {:?}", iv[pool]);
    }
    // The two pools verified side by side (each has its own slot).
    let all: Vec<(f64, f64)> = iv.values().flatten().copied().collect();
    assert_eq!(most_at_once(&all), 2, "{iv:?}");
    // The kernel's record agrees: each filesystem's last scrub finished.
    for (n, fs) in &fss {
        let out = Command::new("btrfs")
            .args(["scrub", "status"])
            .arg(&fs.mount.point)
            .output()
            .unwrap();
        assert!(stdout(&out).contains("finished"), "{n}: {}", stdout(&out));
    }
    let st = s.json(&["sched", "status", "--schedule", f.to_str().unwrap()]);
    for p in st["pools"].as_array().unwrap() {
        for sv in p["servers"].as_array().unwrap() {
            assert_eq!(sv["errors_found"], 0, "{sv}");
            assert!(sv["last_duration"].as_f64().unwrap() > 0.5, "{sv}");
        }
    }
}

/// A pool busy by storlab monitor's samples (a loop device of its own, loaded with O_DIRECT
/// writes): the running scrub pauses (btrfs' cancel, which keeps its place), and resumes when the
/// load ends, and completes.
#[test]
fn a_busy_pool_pauses_its_scrub_and_resumes_it_after() {
    let _l = LOOPS.lock().unwrap_or_else(|e| e.into_inner());
    let s = Scratch::new();
    let fs = raid1(s.path(), "r", 48);
    let images = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let load = common::loop_device_with(&images.path().join("load.img"), 256 << 20, true);
    let t = format!(
        "[schedule]\nlease = \"5s\"\n\n[[pool]]\nname = \"R\"\nbudget = \"10%\"\ncost = \"10%\"\nbusy = {{ monitor_pool = \"L\", throughput = \"8MiB/s\", over = \"1s\" }}\n\
         [[pool.server]]\nname = \"r1\"\ntask = \"btrfs-scrub:{}@8m\"\n",
        fs.mount.point.display()
    );
    let f = write_file(s.path(), "schedule.toml", &t);
    let mut monitor = Command::new(common::bin())
        .args(["monitor", "run", "--db", &s.db(), "--pool", &format!("L={}", load.dev)])
        .args(["--interval", "200ms", "--lt", "1s", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _m = Kill(&mut monitor);
    std::thread::sleep(Duration::from_secs(2));
    let mut agent = AgentProc::start(&s.db(), &f, "r1", &["--rounds", "1"]);
    let has = |kind: &str| events(&s).iter().any(|e| e.kind == kind);
    wait_until("the scrub's start", Duration::from_secs(30), || has("started"));
    // Load: O_DIRECT writes to the watched device, well over 8 MiB/s, until the agent pauses.
    let dev = load.dev.clone();
    let stop_load = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sl = stop_load.clone();
    let loader = std::thread::spawn(move || {
        while !sl.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = Command::new("dd")
                .args([
                    "if=/dev/zero",
                    &format!("of={dev}"),
                    "bs=1M",
                    "count=32",
                    "oflag=direct",
                ])
                .output();
        }
    });
    wait_until("the pause", Duration::from_secs(30), || has("paused"));
    let during = Command::new("btrfs")
        .args(["scrub", "status"])
        .arg(&fs.mount.point)
        .output()
        .unwrap();
    stop_load.store(true, std::sync::atomic::Ordering::Relaxed);
    loader.join().unwrap();
    assert!(
        stdout(&during).contains("aborted"),
        "the scrub ran on while paused: {}",
        stdout(&during)
    );
    wait_until("the scrub to end", Duration::from_secs(90), || agent.exited().is_some());
    assert_eq!(agent.exited(), Some(0));
    let evs = events(&s);
    let kinds: Vec<&str> = evs
        .iter()
        .map(|e| e.kind.as_str())
        .filter(|k| *k != "renewed" && *k != "progress")
        .collect();
    let (p, r, c) = (
        kinds.iter().position(|k| *k == "paused").unwrap(),
        kinds.iter().position(|k| *k == "resumed"),
        kinds.iter().position(|k| *k == "complete"),
    );
    assert!(
        r.is_some_and(|r| r > p) && c.is_some_and(|c| c > r.unwrap()),
        "paused, resumed, complete expected in that order: {kinds:?}"
    );
    let paused = evs.iter().find(|e| e.kind == "paused").unwrap();
    assert!(paused.detail.contains("pool L moves"), "{}", paused.detail);
    let done = evs.iter().find(|e| e.kind == "complete").unwrap();
    assert!(done.detail.contains("no errors found"), "{}", done.detail);
    assert_at_most_k(&evs, &[("R", 1)]);
}

/// `sched status --metrics` scraped by a real Prometheus, and a pool whose busy condition is a
/// Prometheus query over those metrics — pool B pauses while pool A verifies (two pools on one
/// back-end) — and goes on when A is done.
#[test]
fn a_prometheus_query_pauses_a_pool_while_another_verifies() {
    use storlab_testkit::prometheus::{free_port, Prometheus};
    let s = Scratch::new();
    let addr = format!("127.0.0.1:{}", free_port());
    let prom_port = free_port();
    let query = "storlab_sched_running{pool=\"A\"} > 0";
    let f = write_schedule(
        s.path(),
        "3s",
        &[
            TestPool {
                name: "A",
                budget: "10%",
                cost: "10%",
                servers: vec![("a1".into(), 4.0)],
                extra: "",
            },
            TestPool {
                name: "B",
                budget: "10%",
                cost: "10%",
                servers: vec![("b1".into(), 5.0)],
                extra: &format!("busy = {{ prometheus = \"http://127.0.0.1:{prom_port}\", query = '{query}' }}"),
            },
        ],
    );
    let out = s.storlab(&["db", "migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut status = Command::new(common::bin())
        .args(["sched", "status", "--db", &s.db(), "--schedule", f.to_str().unwrap()])
        .args(["--metrics", &addr, "--interval", "250ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _st = Kill(&mut status);
    wait_until("the metrics endpoint", Duration::from_secs(20), || {
        storlab_testkit::prometheus::http_get(&addr, "/metrics", None).is_ok()
    });
    let prom = Prometheus::start_on(prom_port, std::slice::from_ref(&addr), "500ms");
    assert!(
        prom.query("storlab_sched_slots{pool=\"A\"}").contains("\"1\""),
        "{}",
        prom.query("storlab_sched_slots")
    );
    let mut b = AgentProc::start(&s.db(), &f, "b1", &["--rounds", "1"]);
    wait_until("b1's task", Duration::from_secs(20), || {
        truth(s.path()).contains_key("b1")
    });
    let mut a = AgentProc::start(&s.db(), &f, "a1", &["--rounds", "1"]);
    wait_until("both rounds", Duration::from_secs(90), || {
        a.exited().is_some() && b.exited().is_some()
    });
    let evs = events(&s);
    let at = |server: &str, kind: &str| {
        evs.iter()
            .find(|e| e.server == server && e.kind == kind)
            .unwrap_or_else(|| panic!("no {kind} of {server}: {evs:#?}"))
            .t
    };
    let (paused, resumed) = (at("b1", "paused"), at("b1", "resumed"));
    assert!(
        at("a1", "started") < paused
            && paused < resumed
            && at("a1", "complete") < resumed
            && resumed < at("b1", "complete"),
        "b1 should pause after a1 started and resume after a1 completed: {evs:#?}"
    );
    let p = evs.iter().find(|e| e.kind == "paused").unwrap();
    assert!(p.detail.contains("returns 1 series"), "{}", p.detail);
    assert_at_most_k(&evs, &[("A", 1), ("B", 1)]);
    // b1's sleep was really stopped and continued (the task's pause and resume: kill -STOP, -CONT).
    let text = std::fs::read_to_string(s.path().join("truth")).unwrap();
    assert!(text.contains("pause b1") && text.contains("resume b1"), "{text}");
    // Prometheus saw A's slot in use and B's last verify once both were done.
    wait_until("Prometheus to see b1's verify", Duration::from_secs(20), || {
        prom.query("storlab_sched_since_last_verify_seconds{server=\"b1\"}")
            .contains("\"b1\"")
    });
}

/// Outside its pool's windows an agent asks for nothing and starts nothing; the status says
/// when the windows open. Told to stop, it exits 0.
#[test]
fn outside_its_windows_an_agent_waits_and_the_status_says_until_when() {
    let s = Scratch::new();
    // A daily window two to three hours from now (UTC): closed now, whatever the time.
    let now = common_now();
    let hm = |t: f64| {
        let m = ((t / 60.0).floor() as i64).rem_euclid(24 * 60);
        format!("{:02}:{:02}", m / 60, m % 60)
    };
    let (from, to) = (now + 2.0 * 3600.0, now + 3.0 * 3600.0);
    let f = write_schedule(
        s.path(),
        "3s",
        &[TestPool {
            name: "W",
            budget: "10%",
            cost: "10%",
            servers: vec![("w1".into(), 0.3)],
            extra: &format!("windows = [\"daily {}-{}\"]", hm(from), hm(to)),
        }],
    );
    let mut a = AgentProc::start(&s.db(), &f, "w1", &["--rounds", "1"]);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(a.exited(), None, "the agent should wait for its window");
    let log = std::fs::read_to_string(s.path().join("w1.log")).unwrap();
    assert!(
        log.contains("outside the pool's windows") && log.contains("they open in 1"),
        "{log}"
    );
    assert!(!truth(s.path()).contains_key("w1"), "a task started outside its window");
    assert!(events(&s).is_empty(), "an agent outside its window asked for a slot");
    let st = s.json(&["sched", "status", "--schedule", f.to_str().unwrap()]);
    let due = &st["pools"][0]["servers"][0]["next_due"];
    let opens = (from / 60.0).floor() * 60.0;
    assert_eq!(due["state"], "at", "{st}");
    assert!((due["t"].as_f64().unwrap() - opens).abs() <= 60.0, "{due} vs {opens}");
    assert_eq!(a.term(), Some(0));
}
