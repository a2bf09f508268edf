//! The packages (scripts/package): the `.deb` built from this build's binary, installed with
//! `dpkg -i` into this machine, used (`storlab demo`, `man -w storlab`, the completions, the
//! monitor's packaged configuration), and purged again, even when the test fails; the `.rpm`'s
//! file list checked with `rpm -qlp`. And the example job files the packages ship run.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin, loop_filesystem, stderr, stdout, Scratch};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn sh(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// Builds both packages from the test binary (no cargo build: cargo test holds its lock).
fn build_packages() -> (PathBuf, PathBuf) {
    let out = Command::new(repo().join("scripts/package"))
        .env("STORLAB_BIN", bin())
        .env("STORLAB_PACKAGE_FAST", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scripts/package: {}{}",
        stdout(&out),
        stderr(&out)
    );
    // storlab's own, not storlab-mpi's (tests/mpi.rs builds that one).
    let find = |dir: &str, prefix: &str, ext: &str| {
        std::fs::read_dir(repo().join("target").join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.extension().is_some_and(|e| e == ext) && p.file_name().unwrap().to_string_lossy().starts_with(prefix)
            })
            .unwrap_or_else(|| panic!("no {prefix}*.{ext} in target/{dir}"))
    };
    (
        find("debian", "storlab_", "deb"),
        find("generate-rpm", "storlab-0", "rpm"),
    )
}

/// Purges the installed package when dropped (the test machine is left as it was).
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = sh("dpkg", &["--purge", "storlab"]);
    }
}

/// What each package must hold.
const FILES: [&str; 15] = [
    "/usr/bin/storlab",
    "/usr/share/man/man1/storlab.1.gz",
    "/usr/share/man/man1/storlab-monitor-run.1.gz",
    "/usr/share/bash-completion/completions/storlab",
    "/usr/share/fish/vendor_completions.d/storlab.fish",
    "/usr/share/doc/storlab/monitor.md",
    "/usr/share/doc/storlab/examples/qualify.toml",
    "/usr/share/doc/storlab/examples/schedule.toml",
    "/usr/share/doc/storlab/sched.md",
    "/usr/share/doc/storlab/meta.md",
    "/usr/share/doc/storlab/mpi.md",
    "/usr/share/doc/storlab/examples/mdt-4k.toml",
    "/usr/share/man/man1/storlab-meta-untar.1.gz",
    "/etc/storlab/monitor.toml",
    "/usr/share/storlab/grafana/storlab-monitor.json",
];

#[test]
fn the_deb_installs_works_and_purges_and_the_rpm_holds_the_same_files() {
    let before = sh("dpkg", &["-s", "storlab"]);
    assert!(
        !before.status.success(),
        "a storlab package is installed on this machine already; this test installs and purges its own and will not replace it"
    );
    let (deb, rpm) = build_packages();

    let listed = stdout(&sh("rpm", &["-qlp", rpm.to_str().unwrap()]));
    for f in FILES {
        assert!(listed.lines().any(|l| l == f), "{f} is not in the rpm:\n{listed}");
    }
    assert!(listed.contains("/usr/share/zsh/site-functions/_storlab"), "{listed}");
    for unit in [
        "storlab-monitor.service",
        "storlab-sched-agent.service",
        "storlab-challenge-agent@.service",
    ] {
        assert!(listed.contains(&format!("/usr/lib/systemd/system/{unit}")), "{listed}");
    }
    let man_pages = listed
        .lines()
        .filter(|l| l.starts_with("/usr/share/man/man1/storlab"))
        .count();
    assert!(man_pages >= 30, "{man_pages} man pages in the rpm");

    let _installed = Installed;
    let out = sh("dpkg", &["-i", deb.to_str().unwrap()]);
    assert!(out.status.success(), "dpkg -i: {}{}", stdout(&out), stderr(&out));
    let files = stdout(&sh("dpkg", &["-L", "storlab"]));
    for f in FILES.iter().chain(
        [
            "/usr/share/zsh/vendor-completions/_storlab",
            "/lib/systemd/system/storlab-monitor.service",
            "/lib/systemd/system/storlab-sched-agent.service",
            "/lib/systemd/system/storlab-challenge-agent@.service",
        ]
        .iter(),
    ) {
        assert!(files.lines().any(|l| l == *f), "{f} is not in the deb:\n{files}");
    }
    // The `fio` for drivers of fio: a link to storlab in a directory of its own, answering as
    // fio; nothing named fio on the default PATH (a real fio is never shadowed).
    let link = Path::new("/usr/lib/storlab/fio/fio");
    assert!(
        files.lines().any(|l| l == link.to_str().unwrap()),
        "no fio link:\n{files}"
    );
    assert_eq!(
        std::fs::canonicalize(link).unwrap(),
        Path::new("/usr/bin/storlab"),
        "the fio link is storlab"
    );
    let version = Command::new(link).arg("--version").output().unwrap();
    assert!(stdout(&version).starts_with("fio-3."), "{}", stdout(&version));
    assert!(
        !files.lines().any(|l| l.ends_with("/bin/fio")),
        "a fio on PATH:\n{files}"
    );
    // The rpm makes the same link when installed (cargo-generate-rpm packs no links).
    let scripts = stdout(&sh("rpm", &["-qp", "--scripts", rpm.to_str().unwrap()]));
    assert!(
        scripts.contains("ln -sfn ../../../bin/storlab /usr/lib/storlab/fio/fio"),
        "{scripts}"
    );
    // The installed binary, not the test build.
    let s = Scratch::new();
    let demo = Command::new("/usr/bin/storlab")
        .args(["demo", "--db", &s.db()])
        .output()
        .unwrap();
    assert!(demo.status.success(), "storlab demo: {}", stderr(&demo));
    assert!(stdout(&demo).contains("randread"), "{}", stdout(&demo));
    for page in ["storlab", "storlab-monitor-run", "storlab-challenge-agent"] {
        let w = sh("man", &["-w", page]);
        assert!(w.status.success(), "man -w {page}: {}", stderr(&w));
        assert!(stdout(&w).trim().starts_with("/usr/share/man/man1/"), "{}", stdout(&w));
    }
    let complete = sh(
        "bash",
        &[
            "-c",
            "source /usr/share/bash-completion/completions/storlab && complete -p storlab",
        ],
    );
    assert!(
        stdout(&complete).contains("storlab"),
        "{}{}",
        stdout(&complete),
        stderr(&complete)
    );
    // The unit's command with the packaged configuration (a scratch database, a free port).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let run = Command::new("/usr/bin/storlab")
        .args([
            "monitor",
            "run",
            "--config",
            "/etc/storlab/monitor.toml",
            "--duration",
            "1s",
            "--interval",
            "200ms",
        ])
        .args(["--metrics", &format!("127.0.0.1:{port}"), "--db", &s.db()])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    // The example schedule plans; the agent's unit names this host, which it does not hold.
    let plan = Command::new("/usr/bin/storlab")
        .args(["sched", "plan", "/usr/share/doc/storlab/examples/schedule.toml"])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert!(stdout(&plan).contains("P1: 1 at once"), "{}", stdout(&plan));
    let unit = std::fs::read_to_string("/lib/systemd/system/storlab-sched-agent.service").unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).unwrap();
    assert!(
        exec.starts_with("/usr/bin/storlab sched agent --server %H --schedule /etc/storlab/schedule.toml"),
        "{exec}"
    );
    // The challenge agent's unit: its command with this host's job file takes part in a
    // challenge (instance %i is the challenge's id), and it restarts unless its share is done
    // or its input refused.
    let unit = std::fs::read_to_string("/lib/systemd/system/storlab-challenge-agent@.service").unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).unwrap();
    assert_eq!(
        exec,
        "/usr/bin/storlab challenge agent %i --job /etc/storlab/challenge.toml"
    );
    assert!(unit.lines().any(|l| l == "Restart=always"), "{unit}");
    assert!(unit.lines().any(|l| l == "RestartPreventExitStatus=0 2"), "{unit}");
    let pool = s.path().join("pool");
    std::fs::create_dir(&pool).unwrap();
    let job = s.path().join("challenge.toml");
    std::fs::write(&job, format!("[challenge]\npool = [\"P1={}\"]\n", pool.display())).unwrap();
    let create = Command::new("/usr/bin/storlab")
        .args(["challenge", "create", "--job", job.to_str().unwrap(), "--files", "8"])
        .args(["--file-size", "1m", "--bs", "256k", "--db", &s.db()])
        .output()
        .unwrap();
    assert!(create.status.success(), "{}", stderr(&create));
    let id = stdout(&create).trim().to_string();
    let exec = exec
        .replace("%i", &id)
        .replace("/etc/storlab/challenge.toml", job.to_str().unwrap());
    let words: Vec<&str> = exec.split_whitespace().collect();
    let agent = Command::new(words[0])
        .args(&words[1..])
        .args(["--db", &s.db()])
        .output()
        .unwrap();
    assert_eq!(agent.status.code(), Some(0), "{}", stderr(&agent));
    // Started again once the challenge is over: refused (exit 2), so systemd leaves it stopped.
    let again = Command::new(words[0])
        .args(&words[1..])
        .args(["--db", &s.db()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("is over"), "{}", stderr(&again));
    for page in ["storlab-sched-agent", "storlab-sched-status"] {
        let w = sh("man", &["-w", page]);
        assert!(w.status.success(), "man -w {page}: {}", stderr(&w));
    }

    let purge = sh("dpkg", &["--purge", "storlab"]);
    assert!(purge.status.success(), "{}", stderr(&purge));
    assert!(!Path::new("/usr/bin/storlab").exists());
    assert!(
        std::fs::symlink_metadata(link).is_err(),
        "the fio link went with the purge"
    );
    assert!(
        !Path::new("/etc/storlab/monitor.toml").exists(),
        "the conffile went with the purge"
    );
}

/// Every example job file the packages ship runs as its comment says, made small: on an ext4
/// filesystem (O_DIRECT works there), a few MiB, a fraction of a second.
#[test]
fn the_example_job_files_run() {
    let s = Scratch::new();
    let fs = loop_filesystem("mkfs.ext4", 256 << 20, &s.path().join("mnt"));
    let target = fs.mount.point.to_str().unwrap().to_string();
    let small = ["--size", "4m", "--runtime", "200ms", "--threads", "1"];
    for job in ["qualify", "verify", "mixed"] {
        let file = repo().join("examples").join(format!("{job}.toml"));
        let out = Command::new(bin())
            .args(["run", file.to_str().unwrap(), "--target", &target, "--db", &s.db()])
            .args(small)
            .output()
            .unwrap();
        assert!(out.status.success(), "{job}: {}", stderr(&out));
    }
    let (a, b) = (s.path().join("p1"), s.path().join("p2"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    let file = repo().join("examples/challenge.toml");
    let out = Command::new(bin())
        .args(["challenge", "run", "--job", file.to_str().unwrap(), "--db", &s.db()])
        .args([
            "--pool",
            &format!("P1={}", a.display()),
            "--pool",
            &format!("P2={}", b.display()),
        ])
        .args([
            "--duration",
            "2s",
            "--file-size",
            "1m",
            "--interval",
            "500ms",
            "--lt",
            "1s",
            "--fault",
            "1s:drain:P2:500ms",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "challenge: {}", stderr(&out));
}
