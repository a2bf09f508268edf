//! fio's client/server protocol (issue 56, part 1): `storlab fio --server` serves Debian's fio
//! 3.33 client beside a real `fio --server`, several hosts on ports of one machine. Each server's
//! run is stored in its own database; what fio's client prints of it equals that stored run's
//! own fio document, and its percentiles what the test computes from the bins fio's client
//! printed.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::*;

/// A server process, stopped (SIGTERM, then SIGKILL) when dropped, even when a test fails.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port no one listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits until something listens on `port`.
fn listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `program` serving on a port of its own in `dir` (`--server=ip:127.0.0.1,PORT` after `pre`).
fn server(program: &str, pre: &[&str], dir: &Path, env: &[(&str, String)]) -> Server {
    let port = free_port();
    let child = Command::new(program)
        .args(pre)
        .arg(format!("--server=ip:127.0.0.1,{port}"))
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    listening(port);
    Server { child, port }
}

/// `storlab fio --server`, storing into `s`'s database.
fn storlab_server(s: &Scratch) -> Server {
    let env = [("STORLAB_DB", s.db()), ("TMPDIR", s.path().display().to_string())];
    server(bin(), &["fio"], s.path(), &env)
}

/// Debian's `fio --server`.
fn fio_server(dir: &Path) -> Server {
    server("fio", &[], dir, &[])
}

/// fio's percentile of `bins` (value → count): the first bucket, in order, whose running count
/// reaches the share (fio's arithmetic: `(share / 100) * N`, compared as a double).
fn percentile_of(bins: &serde_json::Map<String, Value>, share: f64) -> u64 {
    let mut b: Vec<(u64, u64)> = bins
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
        .collect();
    b.sort();
    let n: u64 = b.iter().map(|x| x.1).sum();
    let want = share / 100.0 * n as f64;
    let mut seen = 0u64;
    for (v, c) in b {
        seen += c;
        if seen as f64 >= want {
            return v;
        }
    }
    unreachable!("the running count reaches N")
}

/// The read direction of the stored run's own fio json+ document.
fn stored_read(s: &Scratch) -> Value {
    let id = s.last_run_id().to_string();
    let out = s.storlab(&["results", "export", &id, "--format", "fio-json+"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["jobs"][0]["read"].clone()
}

#[test]
fn fios_client_prints_storlab_servers_beside_a_fio_server_with_all_clients() {
    let (a, b, f) = (Scratch::new(), Scratch::new(), Scratch::new());
    // One file every host reads (the job lays out nothing; all three read it at once), for a
    // second: fio's client counts the entries it sums ("All clients") from each server's START,
    // and a job that ends before the slowest server's START has come in is summed early (fio's
    // own client does so with fio's servers).
    let data = f.path().join("shared");
    std::fs::write(&data, vec![7u8; 16 << 20]).unwrap();
    let job = f.path().join("read.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=libaio\niodepth=4\nbs=4k\n\n[rr]\nrw=randread\nfilename={}\nsize=16m\ntime_based\nruntime=1\n",
            data.display()
        ),
    )
    .unwrap();
    let (sa, sb, sf) = (storlab_server(&a), storlab_server(&b), fio_server(f.path()));
    let hosts = f.path().join("hosts");
    std::fs::write(
        &hosts,
        [&sa, &sb, &sf]
            .iter()
            .map(|s| format!("ip:127.0.0.1,{}\n", s.port))
            .collect::<String>(),
    )
    .unwrap();
    let out = Command::new("fio")
        .arg(format!("--client={}", hosts.display()))
        .arg(&job)
        .arg("--output-format=json+")
        .current_dir(f.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    let entries = doc["client_stats"].as_array().unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e["jobname"].as_str().unwrap()).collect();
    assert_eq!(names, ["rr", "rr", "rr", "All clients"], "{doc}");
    let by_port = |p: u16| {
        entries
            .iter()
            .find(|e| e["port"] == p && e["jobname"] == "rr")
            .unwrap_or_else(|| panic!("no entry for port {p}: {doc}"))
    };
    for (s, server) in [(&a, &sa), (&b, &sb)] {
        let got = &by_port(server.port)["read"];
        // Each storlab server stored its own run; fio's client printed that run's figures.
        let want = stored_read(s);
        assert!(got["total_ios"].as_u64().unwrap() > 4096, "{got}");
        for k in [
            "io_bytes",
            "total_ios",
            "runtime",
            "bw_bytes",
            "bw_min",
            "bw_max",
            "bw_samples",
            "iops_min",
            "iops_max",
            "iops_samples",
        ] {
            assert_eq!(got[k], want[k], "{k}: client {got} stored {want}");
        }
        for lat in ["clat_ns", "lat_ns", "slat_ns"] {
            for k in ["N", "min", "max"] {
                assert_eq!(got[lat][k], want[lat][k], "{lat}.{k}");
            }
            for k in ["mean", "stddev"] {
                let (g, w) = (got[lat][k].as_f64().unwrap(), want[lat][k].as_f64().unwrap());
                // fio's client prints six decimals.
                assert!((g - w).abs() <= 1e-6 * w.max(1.0), "{lat}.{k}: {g} vs {w}");
            }
        }
        for k in ["bw_mean", "bw_dev", "iops_mean", "iops_stddev"] {
            let (g, w) = (got[k].as_f64().unwrap(), want[k].as_f64().unwrap());
            assert!((g - w).abs() <= 1e-6 * w.max(1.0), "{k}: {g} vs {w}");
        }
        assert!(got["bw_samples"].as_u64().unwrap() > 0, "{got}");
        assert_eq!(got["clat_ns"]["bins"], want["clat_ns"]["bins"], "the clat bins");
        // fio's client's percentiles, from the bins it printed, by the test's own reckoning.
        let bins = got["clat_ns"]["bins"].as_object().unwrap();
        for (k, v) in got["clat_ns"]["percentile"].as_object().unwrap() {
            let share: f64 = k.parse().unwrap();
            assert_eq!(v.as_u64().unwrap(), percentile_of(bins, share), "p{k}");
        }
        assert_eq!(by_port(server.port)["job options"]["rw"], "randread");
    }
    // fio's sum of its clients counts every host's I/Os, storlab's and fio's alike.
    let all = &entries[3]["read"];
    let each: u64 = entries[..3]
        .iter()
        .map(|e| e["read"]["total_ios"].as_u64().unwrap())
        .sum();
    assert_eq!(all["total_ios"].as_u64(), Some(each), "{all}");
    assert_eq!(a.run_count(), Some(1));
    assert_eq!(b.run_count(), Some(1));
}

#[test]
fn each_host_runs_its_own_job_file_and_fios_text_shows_each() {
    let (a, f) = (Scratch::new(), Scratch::new());
    let (sa, sf) = (storlab_server(&a), fio_server(f.path()));
    let job = |name: &str, dir: &Path| {
        let p = f.path().join(format!("{name}.fio"));
        std::fs::write(
            &p,
            format!(
                "[{name}]\nrw=write\nbs=64k\nsize=8m\nioengine=psync\ndirectory={}\n",
                dir.display()
            ),
        )
        .unwrap();
        p
    };
    let (ja, jf) = (job("onstorlab", &a.data()), job("onfio", &f.data()));
    let out = Command::new("fio")
        .arg(format!("--client=ip:127.0.0.1,{}", sa.port))
        .arg(&ja)
        .arg(format!("--client=ip:127.0.0.1,{}", sf.port))
        .arg(&jf)
        .current_dir(f.path())
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    for name in ["onstorlab", "onfio"] {
        assert!(
            text.contains(&format!("{name}: (groupid=0, jobs=1): err= 0:")),
            "{name}'s block: {text}"
        );
    }
    assert_eq!(text.matches("Run status group 0 (all jobs):").count(), 2, "{text}");
    assert!(text.contains("  write: IOPS="), "{text}");
    // storlab's server wrote its file where its job said, as `storlab fio` here would (fio's
    // files stay), and stored the run in its own database.
    assert_eq!(a.run_count(), Some(1));
    let written = a.data().join("onstorlab.0.0");
    assert_eq!(std::fs::metadata(&written).map(|m| m.len()).ok(), Some(8 << 20));
}

#[test]
fn a_job_the_server_cannot_run_is_fios_error_and_the_server_serves_on() {
    let a = Scratch::new();
    let sa = storlab_server(&a);
    let bad = a.path().join("bad.fio");
    std::fs::write(&bad, "[x]\nrw=sideways\nsize=1m\n").unwrap();
    let client = |job: &Path| {
        Command::new("fio")
            .arg(format!("--client=ip:127.0.0.1,{}", sa.port))
            .arg(job)
            .current_dir(a.path())
            .output()
            .unwrap()
    };
    let out = client(&bad);
    let said = stdout(&out) + &stderr(&out);
    assert!(said.contains("rw=sideways"), "{said}");
    assert!(a.nothing_stored());
    let good = a.path().join("good.fio");
    std::fs::write(
        &good,
        format!("[y]\nrw=read\nsize=1m\ndirectory={}\n", a.data().display()),
    )
    .unwrap();
    let out = client(&good);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("y: (groupid=0, jobs=1): err= 0:"),
        "{}",
        stdout(&out)
    );
    assert_eq!(a.run_count(), Some(1));
}

#[test]
fn a_server_address_fio_does_not_take_is_refused_by_name() {
    let s = Scratch::new();
    for (arg, says) in [
        ("--server=sock:/tmp/x.sock", "Unix-socket"),
        ("--server=ip:127.0.0.1,0", "bad server port"),
        ("--server=ip:127.0.0.1,99999", "bad server port"),
    ] {
        let out = s.storlab(&["fio", arg]);
        assert_eq!(out.status.code(), Some(1), "{arg}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{arg}: {}", stderr(&out));
    }
}

/// pbench-fio starts its servers as `fio --server --daemonize=PIDFILE`: storlab's goes on in
/// the background, its pid in the file, serves, and SIGTERM ends it.
#[test]
fn a_daemonized_server_writes_its_pid_serves_and_ends_on_sigterm() {
    let a = Scratch::new();
    let port = free_port();
    let pidfile = a.path().join("server.pid");
    let out = Command::new(bin())
        .args(["fio", &format!("--server=ip:127.0.0.1,{port}")])
        .arg(format!("--daemonize={}", pidfile.display()))
        .env("STORLAB_DB", a.db())
        .current_dir(a.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    // Whatever happens below, the daemon goes.
    struct Daemon(i32);
    impl Drop for Daemon {
        fn drop(&mut self) {
            // SAFETY: kill(2) of the daemon this test started.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
    let daemon = Daemon(pid);
    listening(port);
    let job = a.path().join("j.fio");
    std::fs::write(
        &job,
        format!("[d]\nrw=read\nsize=1m\ndirectory={}\n", a.data().display()),
    )
    .unwrap();
    let out = Command::new("fio")
        .arg(format!("--client=ip:127.0.0.1,{port}"))
        .arg(&job)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(a.run_count(), Some(1));
    // SAFETY: kill(2) of the daemon this test started.
    unsafe { libc::kill(daemon.0, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: kill(2) with signal 0 only asks whether the process is there.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(Instant::now() < deadline, "the daemon did not end on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}
