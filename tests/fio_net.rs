//! fio's client/server protocol (issue 56, part 1), several hosts on ports of one machine.
//! `storlab fio --server` serves Debian's fio 3.33 client beside a real `fio --server`: each
//! server's run is stored in its own database, and what fio's client prints of it equals that
//! stored run's own fio document, its percentiles what the test computes from the printed bins.
//! `storlab fio --client` drives fio's servers and storlab's: given the very bytes a fio server
//! sent (recorded here and replayed), it prints what fio's client prints of them.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
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
        ("--server=sock:", "needs its path"),
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

/// fio's CRC-16 (poly 0x8005 reflected, from 0), written again here.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc = 0u16;
    for &b in bytes {
        crc ^= u16::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xA001 } else { crc >> 1 };
        }
    }
    crc
}

/// The frames of a byte stream of fio's protocol: each 24-byte header (opcode at 2, tag at
/// 8, payload length at 16) with its payload.
fn frames(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while bytes.len() >= 24 {
        let len = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
        out.push(bytes[..24 + len].to_vec());
        bytes = &bytes[24 + len..];
    }
    out
}

fn opcode(frame: &[u8]) -> u16 {
    u16::from_le_bytes(frame[2..4].try_into().unwrap())
}

/// Records what the server on `to` sends to one client that connects to the port returned.
fn recorder(to: u16) -> (u16, std::thread::JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (client, _) = listener.accept().unwrap();
        let server = TcpStream::connect(("127.0.0.1", to)).unwrap();
        let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        let up = std::thread::spawn(move || {
            let _ = std::io::copy(&mut c_in, &mut s_out);
            let _ = s_out.shutdown(std::net::Shutdown::Write);
        });
        let (mut s_in, mut c_out) = (server, client);
        let mut seen = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            match s_in.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen.extend_from_slice(&buf[..n]);
                    if c_out.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = c_out.shutdown(std::net::Shutdown::Both);
        let _ = up.join();
        seen
    });
    (port, handle)
}

/// A server that answers every client with `recorded`: it reads the client's commands up to
/// RUN, then sends the recorded frames, the probe's answer carrying this client's tag (fio's
/// client matches it), and waits for the client to hang up. The report (from the first job's
/// figures on) goes half a second later, as a server's would after running its jobs: fio's
/// client counts the entries to sum from every server's START, which must all be in.
fn replayer(recorded: Vec<Vec<u8>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            let recorded = recorded.clone();
            std::thread::spawn(move || {
                let mut probe_tag = [0u8; 8];
                let mut reported = false;
                loop {
                    let mut h = [0u8; 24];
                    if c.read_exact(&mut h).is_err() {
                        return;
                    }
                    let len = u32::from_le_bytes(h[16..20].try_into().unwrap()) as usize;
                    let mut body = vec![0u8; len];
                    if c.read_exact(&mut body).is_err() {
                        return;
                    }
                    match opcode(&h) {
                        10 => probe_tag.copy_from_slice(&h[8..16]),
                        16 => break,
                        _ => {}
                    }
                }
                for mut f in recorded {
                    if opcode(&f) == 6 && !std::mem::replace(&mut reported, true) {
                        std::thread::sleep(Duration::from_millis(500));
                    }
                    if opcode(&f) == 10 {
                        f[8..16].copy_from_slice(&probe_tag);
                        let sum = crc16(&f[..20]);
                        f[20..22].copy_from_slice(&sum.to_le_bytes());
                    }
                    if c.write_all(&f).is_err() {
                        return;
                    }
                }
                let mut rest = Vec::new();
                let _ = c.read_to_end(&mut rest);
            });
        }
    });
    port
}

/// `a` and `b` hold the same keys and values, numbers equal to fio's six decimals.
fn same(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let (kx, ky): (Vec<&String>, Vec<&String>) = (x.keys().collect(), y.keys().collect());
            assert_eq!(kx, ky, "{at}: keys");
            for (k, v) in x {
                same(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let (p, q) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((p - q).abs() <= 1e-6 * q.abs().max(1.0), "{at}: {p} vs {q}");
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// The client_stats entries of a client's document, in a fixed order (the servers answer in
/// any order).
fn client_entries(out: &std::process::Output) -> Vec<Value> {
    assert!(out.status.success(), "{}{}", stdout(out), stderr(out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)));
    let mut e = doc["client_stats"].as_array().unwrap().clone();
    for j in e.iter_mut().filter(|j| j["jobname"] == "All clients") {
        // fio's sum carries the host and port of whichever server's entry came in last.
        let m = j.as_object_mut().unwrap();
        m.remove("port");
        m.remove("hostname");
    }
    e.sort_by_key(|j| (j["jobname"].as_str().unwrap().to_string(), j["port"].as_u64()));
    e
}

#[test]
fn storlabs_client_prints_what_fios_client_prints_of_the_same_servers_report() {
    let f = Scratch::new();
    let sf = fio_server(f.path());
    let job = f.path().join("mix.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nioengine=libaio\niodepth=8\nbs=4k\ndirectory={}\n\n[mix]\nrw=randrw\nrwmixread=70\nsize=16m\nnumjobs=2\ngroup_reporting\nwrite_lat_log=mixlat\nwrite_hist_log=mixhist\nlog_hist_msec=5\n\n[seq]\nrw=write\nbs=64k\nsize=8m\nnew_group\nwrite_lat_log=seqlat\nlog_offset=1\n",
            f.data().display()
        ),
    )
    .unwrap();
    // storlab's client drives fio's server through the recorder.
    let (via, recording) = recorder(sf.port);
    let out = fio_command(&f, bin())
        .arg(format!("--client=ip:127.0.0.1,{via}"))
        .arg(&job)
        .arg("--output-format=json+")
        .current_dir(f.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let recorded = frames(&recording.join().unwrap());
    assert!(
        recorded.iter().any(|fr| opcode(fr) == 6),
        "no job's figures were recorded"
    );
    // The same bytes replayed by two servers, to fio's client and to storlab's.
    let (r1, r2) = (replayer(recorded.clone()), replayer(recorded));
    // Each client in a directory of its own, where it writes the servers' logs.
    let (fio_dir, our_dir) = (f.path().join("fio-client"), f.path().join("storlab-client"));
    std::fs::create_dir_all(&fio_dir).unwrap();
    std::fs::create_dir_all(&our_dir).unwrap();
    let client = |prog: &str, format: &str| {
        let mut cmd = fio_command(&f, prog);
        cmd.arg(format!("--client=ip:127.0.0.1,{r1}"))
            .arg(&job)
            .arg(format!("--client=ip:127.0.0.1,{r2}"))
            .arg(&job)
            .arg(format!("--output-format={format}"))
            .current_dir(if prog == "fio" { &fio_dir } else { &our_dir });
        cmd.output().unwrap()
    };
    let (fio, ours) = (client("fio", "json+"), client(bin(), "json+"));
    // Each client wrote the servers' logs as NAME.HOST where it ran: the same files, byte for
    // byte (both servers are 127.0.0.1 here, so each name is written twice, alike).
    let logs = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".log.127.0.0.1"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let (fio_logs, our_logs) = (logs(&fio_dir), logs(&our_dir));
    let names: Vec<&str> = fio_logs.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.iter().any(|n| n.starts_with("mixlat_clat."))
            && names.iter().any(|n| n.starts_with("mixhist_clat_hist."))
            && names.iter().any(|n| n.starts_with("seqlat_lat.")),
        "fio's client wrote {names:?}"
    );
    assert_eq!(
        our_logs.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        names,
        "the log files"
    );
    for ((n, a), (_, b)) in fio_logs.iter().zip(&our_logs) {
        let (fio_text, our_text) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
        assert!(!our_text.is_empty(), "{n} is empty");
        let offsets = our_text.lines().next().is_some_and(|l| l.split(',').count() == 6);
        if !offsets {
            assert!(a == b, "{n} differs");
            continue;
        }
        // fio's client counts a log's lines as if each sample were 32 bytes, though one with
        // offsets is 40 (client.c passes nr_samples * sizeof(struct io_sample)): it writes the
        // first 4/5 of them — fio's bug (docs/run.md); storlab's writes them all.
        let ours = our_text.lines().count();
        assert_eq!(fio_text.lines().count(), ours * 32 / 40, "{n}");
        assert!(
            our_text.starts_with(fio_text.as_ref()),
            "{n}: fio's lines are not the first of storlab's"
        );
    }
    let (want, got) = (client_entries(&fio), client_entries(&ours));
    let names: Vec<&str> = want.iter().map(|j| j["jobname"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["All clients", "mix", "mix", "seq", "seq"],
        "fio's client: {want:?}"
    );
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        same(g, w, w["jobname"].as_str().unwrap());
    }
    // The terse lines too (sorted: the servers answer in any order).
    let sorted = |out: std::process::Output| -> Vec<String> {
        assert!(out.status.success(), "{}", stderr(&out));
        let mut l: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
        l.sort();
        l
    };
    let (fio_terse, our_terse) = (sorted(client("fio", "terse")), sorted(client(bin(), "terse")));
    assert_eq!(our_terse, fio_terse, "the terse lines");
    // The normal text too, but for the time each block was printed.
    let lines = |out: &std::process::Output| -> Vec<String> {
        let mut l: Vec<String> = stdout(out)
            .lines()
            .map(|l| l.split(": pid=").next().unwrap().to_string())
            .filter(|l| !l.trim().is_empty())
            .collect();
        l.sort();
        l
    };
    let (fio, ours) = (client("fio", "normal"), client(bin(), "normal"));
    // fio's client leaves its sum's unit_base at 0, so "All clients" prints its bandwidth
    // without its unit ("BW=2602Mi (2728M)"): fio's bug (docs/run.md), which storlab does not
    // copy; the unit is put back before the lines are compared.
    let fio_units = |l: String| {
        if l.contains("BW=") && !l.contains("B/s") {
            l.replacen("i (", "iB/s (", 1).replacen(")(", "B/s)(", 1)
        } else {
            l
        }
    };
    let want: Vec<String> = lines(&fio).into_iter().map(fio_units).collect();
    let got = lines(&ours);
    let missing: Vec<&String> = want.iter().filter(|l| !got.contains(l)).collect();
    let extra: Vec<&String> = got.iter().filter(|l| !want.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty() && got.len() == want.len(),
        "fio's lines storlab's client lacks: {missing:#?}\nlines only storlab's prints: {extra:#?}"
    );
}

#[test]
fn storlabs_client_drives_a_storlab_server_and_a_fio_server_and_sums_them() {
    let (a, f) = (Scratch::new(), Scratch::new());
    let data = f.path().join("shared");
    std::fs::write(&data, vec![3u8; 8 << 20]).unwrap();
    let job = f.path().join("r.fio");
    std::fs::write(
        &job,
        format!(
            "[r]\nrw=randread\nbs=4k\nioengine=psync\nfilename={}\nsize=8m\ntime_based\nruntime=1\n",
            data.display()
        ),
    )
    .unwrap();
    let (sa, sf) = (storlab_server(&a), fio_server(f.path()));
    // The job file before the servers is every server's (one after a --client is its own).
    let out = fio_command(&f, bin())
        .arg(&job)
        .arg(format!("--client=ip:127.0.0.1,{}", sa.port))
        .arg(format!("--client=ip:127.0.0.1,{}", sf.port))
        .arg("--output-format=json")
        .current_dir(f.path())
        .output()
        .unwrap();
    let entries = client_entries(&out);
    let ports: Vec<Option<u64>> = entries.iter().map(|j| j["port"].as_u64()).collect();
    assert!(
        ports.contains(&Some(u64::from(sa.port))) && ports.contains(&Some(u64::from(sf.port))),
        "{ports:?}"
    );
    let hosts: Vec<&Value> = entries.iter().filter(|j| j["jobname"] == "r").collect();
    let all = entries
        .iter()
        .find(|j| j["jobname"] == "All clients")
        .expect("fio's sum");
    let each: u64 = hosts.iter().map(|j| j["read"]["total_ios"].as_u64().unwrap()).sum();
    assert_eq!(all["read"]["total_ios"].as_u64(), Some(each));
    let bytes: u64 = hosts.iter().map(|j| j["read"]["io_bytes"].as_u64().unwrap()).sum();
    assert_eq!(all["read"]["io_bytes"].as_u64(), Some(bytes));
    // The run is stored on the server that ran it; the client stored nothing.
    assert_eq!(a.run_count(), Some(1));
    assert!(f.nothing_stored());
}

#[test]
fn a_server_no_one_answers_is_said_and_the_client_exits_1() {
    let f = Scratch::new();
    let job = f.path().join("x.fio");
    std::fs::write(&job, "[x]\nrw=read\nsize=1m\n").unwrap();
    let out = fio_command(&f, bin())
        .arg(format!("--client=ip:127.0.0.1,{}", free_port()))
        .arg(&job)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("disconnected"), "{}", stdout(&out));
}

/// The logs a job asks for come back to fio's client, which writes them as NAME.HOST: each
/// I/O's latency, whose lines the test counts and whose extremes and mean it sets beside the
/// entry fio's client printed.
#[test]
fn fios_client_writes_the_logs_a_storlab_server_sends() {
    let (a, f) = (Scratch::new(), Scratch::new());
    let sa = storlab_server(&a);
    let job = f.path().join("logged.fio");
    std::fs::write(
        &job,
        format!(
            "[lg]\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nsize=8m\ndirectory={}\nwrite_lat_log=lg\n",
            a.data().display()
        ),
    )
    .unwrap();
    let out = Command::new("fio")
        .arg(format!("--client=ip:127.0.0.1,{}", sa.port))
        .arg(&job)
        .arg("--output-format=json")
        .current_dir(f.path())
        .output()
        .unwrap();
    let entries = client_entries(&out);
    let read = &entries.iter().find(|j| j["jobname"] == "lg").unwrap()["read"];
    for (kind, key) in [("clat", "clat_ns"), ("lat", "lat_ns"), ("slat", "slat_ns")] {
        let path = f.path().join(format!("lg_{kind}.1.log.127.0.0.1"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let values: Vec<u64> = text
            .lines()
            .map(|l| l.split(", ").nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(
            values.len() as u64,
            read["total_ios"].as_u64().unwrap(),
            "{kind}: a line per I/O"
        );
        assert_eq!(values.iter().min().copied(), read[key]["min"].as_u64(), "{kind} min");
        assert_eq!(values.iter().max().copied(), read[key]["max"].as_u64(), "{kind} max");
        let mean = values.iter().sum::<u64>() as f64 / values.len() as f64;
        let printed = read[key]["mean"].as_f64().unwrap();
        assert!(
            (mean - printed).abs() <= 1e-6 * printed,
            "{kind} mean {mean} vs {printed}"
        );
    }
    // The server wrote no log of its own: fio's server sends them to the client.
    assert!(!a.path().join("lg_clat.1.log").exists());
}

/// fio's client interrupted (Ctrl-C) asks its servers to quit: storlab's ends the job as fio's
/// server does, reports what it did and stores it.
#[test]
fn a_client_interrupted_ends_the_servers_job_which_reports_what_it_did() {
    let (a, f) = (Scratch::new(), Scratch::new());
    let sa = storlab_server(&a);
    let job = f.path().join("long.fio");
    std::fs::write(
        &job,
        format!(
            "[long]\nrw=randread\nbs=4k\nsize=8m\ndirectory={}\ntime_based\nruntime=60\n",
            a.data().display()
        ),
    )
    .unwrap();
    let started = Instant::now();
    let client = Command::new("fio")
        .arg(format!("--client=ip:127.0.0.1,{}", sa.port))
        .arg(&job)
        .arg("--output-format=json")
        .current_dir(f.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run is in the server's database from its start; it runs a second more (its file
    // laid out, I/O going) before the client is interrupted.
    let deadline = Instant::now() + Duration::from_secs(30);
    while a.run_count().unwrap_or(0) == 0 {
        assert!(Instant::now() < deadline, "the job did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(client.id() as i32, libc::SIGINT) };
    let out = client.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "the job ran on to its runtime"
    );
    let entries = client_entries(&out);
    let runtime = entries[0]["read"]["runtime"].as_u64().unwrap();
    assert!(runtime > 0 && runtime < 40_000, "runtime {runtime} ms");
    assert!(entries[0]["read"]["total_ios"].as_u64().unwrap() > 0);
    assert_eq!(a.run_count(), Some(1));
}

/// A job `r` of one `rw` pass over a 1 MiB file in `dir`, in `bs` blocks: its job file.
fn job_of_one_mib(dir: &Path, rw: &str, bs: &str) -> std::path::PathBuf {
    let data = dir.join("one-mib");
    std::fs::write(&data, vec![5u8; 1 << 20]).unwrap();
    let job = dir.join("r.fio");
    std::fs::write(
        &job,
        format!("[r]\nrw={rw}\nbs={bs}\nfilename={}\nsize=1m\n", data.display()),
    )
    .unwrap();
    job
}

/// Job `r`'s client_stats entry as `client` (fio, or storlab fio on `f`'s database) prints it
/// in JSON, run in `f` with `args`.
fn job_r_as_client(f: &Scratch, client: &str, args: &[String]) -> Value {
    let out = fio_command(f, client)
        .args(args)
        .arg("--output-format=json")
        .current_dir(f.path())
        .output()
        .unwrap();
    let entries = client_entries(&out);
    entries
        .iter()
        .find(|j| j["jobname"] == "r")
        .cloned()
        .unwrap_or_else(|| panic!("{client}: {entries:?}"))
}

/// `program` serving on a Unix socket at `path` (fio's `sock:PATH`), started in `dir`.
fn socket_server(program: &str, pre: &[&str], path: &Path, dir: &Path, env: &[(&str, String)]) -> Server {
    let child = Command::new(program)
        .args(pre)
        .arg(format!("--server=sock:{}", path.display()))
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(path).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {}", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    Server { child, port: 0 }
}

/// fio's `sock:PATH`: a storlab server on a Unix socket serves fio's client, and storlab's
/// client drives a fio server on one; each client's client_stats name the socket as fio's
/// does (its path, fio's default port); a second server on a socket in use is refused, and the
/// socket goes with the server that made it.
#[test]
fn servers_and_clients_meet_on_a_unix_socket_as_fios_do() {
    let (a, f) = (Scratch::new(), Scratch::new());
    let job = job_of_one_mib(f.path(), "randread", "4k");
    let (sa_path, sf_path) = (a.path().join("storlab.sock"), f.path().join("fio.sock"));
    let env = [("STORLAB_DB", a.db()), ("TMPDIR", a.path().display().to_string())];
    let sa = socket_server(bin(), &["fio"], &sa_path, a.path(), &env);
    let sf = socket_server("fio", &[], &sf_path, f.path(), &[]);
    for (client, socket) in [("fio", &sa_path), (bin(), &sf_path)] {
        let r = job_r_as_client(
            &f,
            client,
            &[format!("--client=sock:{}", socket.display()), job.display().to_string()],
        );
        assert_eq!(r["hostname"], socket.display().to_string(), "{client}");
        assert_eq!(r["port"], 8765, "{client}: fio's default port");
        assert_eq!(r["read"]["io_bytes"], 1 << 20, "{client}");
    }
    assert_eq!(a.run_count(), Some(1), "the run is stored where it ran");
    assert!(f.nothing_stored(), "the client stores nothing");
    // A second server on a socket in use: refused (it may be another's), the first serves on.
    let out = a.storlab(&["fio", &format!("--server=sock:{}", sa_path.display())]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("Address already in use"), "{}", stderr(&out));
    assert!(std::os::unix::net::UnixStream::connect(&sa_path).is_ok());
    drop(sa);
    assert!(!sa_path.exists(), "the socket goes with its server");
    drop(sf);
}

/// fio's `--remote-config=PATH`: the server reads the job file from its own filesystem. fio's
/// client names one to a storlab server and storlab's client to a fio server; each runs it
/// there, and a path the server cannot open gets fio's server's words on the client.
#[test]
fn a_job_file_on_the_servers_side_is_read_there() {
    let (a, f) = (Scratch::new(), Scratch::new());
    // The job file exists only on the servers' side (their scratch), not where the clients run.
    let job = job_of_one_mib(a.path(), "read", "64k");
    let (sa, sf) = (storlab_server(&a), fio_server(a.path()));
    for (client, port) in [("fio", sa.port), (bin(), sf.port)] {
        let r = job_r_as_client(
            &f,
            client,
            &[
                format!("--client=ip:127.0.0.1,{port}"),
                format!("--remote-config={}", job.display()),
            ],
        );
        assert_eq!(r["read"]["io_bytes"], 1 << 20, "{client}");
        // A path the server cannot open: fio's server's words, reaching the client.
        let out = fio_command(&f, client)
            .arg(format!("--client=ip:127.0.0.1,{port}"))
            .arg("--remote-config=/nonexistent/job.fio")
            .current_dir(f.path())
            .output()
            .unwrap();
        assert!(
            stdout(&out).contains("unable to open '/nonexistent/job.fio' job file"),
            "{client}: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    assert_eq!(
        a.run_count(),
        Some(1),
        "the storlab server stored the run it read from its side"
    );
    assert!(f.nothing_stored());
    drop((sa, sf));
}
