//! `storlab scan` against a ground truth computed independently: `find -printf` over the same
//! tree, on a real ext4 filesystem on a loop device, aggregated by this test's own code. The
//! tree has chosen sizes, access and modification times (set with utimes), hard links, a sparse
//! file, symbolic links, a fifo, an empty directory, a directory the scanning user cannot read
//! and another filesystem mounted inside it.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

use std::collections::{BTreeMap, HashSet};
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::*;

const DAY: i64 = 86_400;
const NOBODY: &str = "65534";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Sets a file's access and modification times to `atime_days` and `mtime_days` ago
/// (without following symbolic links).
fn set_times(p: &Path, atime_days: i64, mtime_days: i64) {
    let t = now();
    let ts = [
        libc::timespec {
            tv_sec: t - atime_days * DAY,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: t - mtime_days * DAY,
            tv_nsec: 0,
        },
    ];
    let c = CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path and two timespecs.
    let r = unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), ts.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) };
    assert_eq!(r, 0, "utimensat {}", p.display());
}

fn file(p: &Path, size: usize, atime_days: i64, mtime_days: i64) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, vec![0x5a; size]).unwrap();
    set_times(p, atime_days, mtime_days);
}

/// The tree. Ages keep days away from every threshold and bucket edge, so that the seconds
/// between building it and scanning it cannot move a file across one.
fn build(t: &Path) {
    // Files across the age and size buckets.
    let plan: [(&str, usize, i64, i64); 13] = [
        ("alpha/new.dat", 100, 1, 1),
        ("alpha/exactly-64k.dat", 65_536, 20, 20),
        ("alpha/empty.dat", 0, 3, 400),
        ("alpha/week.dat", 5_000, 10, 12),
        ("alpha/month.dat", 70_000, 45, 90),
        ("alpha/deep/er/still/q.dat", 2 << 20, 90, 95),
        ("alpha/deep/er/r.dat", 3_000, 200, 210),
        ("alpha/name with spaces.dat", 123_456, 400, 20),
        ("beta/old.dat", 1 << 20, 170, 500),
        ("beta/older.dat", 65 << 20, 500, 100),
        ("beta/sub/young.dat", 4_096, 2, 150),
        ("loose.dat", 777, 100, 5),
        ("gamma/secret/hidden.dat", 9_999, 300, 300),
    ];
    for (p, size, a, m) in plan {
        file(&t.join(p), size, a, m);
    }
    // Hard links: three names for one inode inside beta, counted once.
    file(&t.join("beta/linked.dat"), 50_000, 80, 80);
    std::fs::hard_link(t.join("beta/linked.dat"), t.join("beta/sub/linked-again.dat")).unwrap();
    std::fs::hard_link(t.join("beta/linked.dat"), t.join("beta/third-name.dat")).unwrap();
    // A sparse file: 10 MiB apparent, one 4 KiB block written.
    let f = std::fs::File::create(t.join("gamma/sparse.img")).unwrap();
    f.set_len(10 << 20).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[1u8; 4096], 5 << 20).unwrap();
    drop(f);
    set_times(&t.join("gamma/sparse.img"), 70, 70);
    // Symbolic links (to a directory and to a file: neither followed), a fifo, an empty dir.
    std::os::unix::fs::symlink("../beta", t.join("alpha/to-beta")).unwrap();
    std::os::unix::fs::symlink("old.dat", t.join("beta/to-old")).unwrap();
    let fifo = CString::new(t.join("gamma/pipe").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::fs::create_dir_all(t.join("delta/empty")).unwrap();
    // Everything readable by the unprivileged user the scan runs as, except gamma/secret.
    Command::new("chmod").args(["-R", "a+rX"]).arg(t).status().unwrap();
    std::fs::set_permissions(t.join("gamma/secret"), std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// One entry as `find -printf` reports it.
struct Entry {
    kind: char,
    size: u64,
    blocks: u64,
    atime: f64,
    mtime: f64,
    links: u64,
    ino: u64,
    dev: u64,
    rel: String,
}

/// Runs find as the same unprivileged user as the scan, on the same filesystem only.
fn find(tree: &Path) -> Vec<Entry> {
    let out = Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "find"])
        .arg(tree)
        .args(["-xdev", "-printf", "%y %s %b %A@ %T@ %n %i %D %P\\0"])
        .output()
        .expect("find");
    // find says "Permission denied" for gamma/secret and exits 1; its listing is still whole.
    let text = String::from_utf8(out.stdout).unwrap();
    text.split('\0')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.splitn(9, ' ').collect();
            Entry {
                kind: f[0].chars().next().unwrap(),
                size: f[1].parse().unwrap(),
                blocks: f[2].parse().unwrap(),
                atime: f[3].parse().unwrap(),
                mtime: f[4].parse().unwrap(),
                links: f[5].parse().unwrap(),
                ino: f[6].parse().unwrap(),
                dev: f[7].parse().unwrap(),
                rel: f[8].to_string(),
            }
        })
        .collect()
}

/// A row as this test computes it.
#[derive(Default, Debug, PartialEq)]
struct Truth {
    files: u64,
    apparent: u64,
    allocated: u64,
    dirs: u64,
    symlinks: u64,
    others: u64,
    cold: [[u64; 3]; 2],
    age: [[u64; 2]; 6],
    size: [[u64; 2]; 7],
}

fn age_bucket(days: f64) -> usize {
    [7.0, 30.0, 60.0, 180.0, 365.0]
        .iter()
        .position(|b| days < *b)
        .unwrap_or(5)
}

fn size_bucket(s: u64) -> usize {
    if s == 0 {
        return 0;
    }
    1 + [4u64 << 10, 64 << 10, 1 << 20, 64 << 20, 1 << 30]
        .iter()
        .position(|b| s < *b)
        .unwrap_or(5)
}

/// Rows keyed by (path relative to the tree, own-files-only), grouped by top-level directory;
/// plus the total.
fn truth(entries: &[Entry], basis: &str) -> (BTreeMap<(String, bool), Truth>, Truth) {
    let t = now() as f64;
    let mut rows: BTreeMap<(String, bool), Truth> = BTreeMap::new();
    let mut total = Truth::default();
    let mut seen = HashSet::new();
    for e in entries {
        let depth = if e.rel.is_empty() { 0 } else { e.rel.split('/').count() };
        let key = match (e.kind, depth) {
            (_, 0) => None,
            ('d', 1) => Some((e.rel.clone(), false)),
            (_, 1) => Some((String::new(), true)),
            _ => Some((e.rel.split('/').next().unwrap().to_string(), false)),
        };
        let mut targets: Vec<&mut Truth> = vec![&mut total];
        let row = key.map(|k| rows.entry(k).or_default() as *mut Truth);
        if let Some(r) = row {
            // SAFETY: `row` points into `rows`, which is not touched while `targets` lives.
            targets.push(unsafe { &mut *r });
        }
        match e.kind {
            'd' => targets.iter_mut().for_each(|x| x.dirs += 1),
            'l' => targets.iter_mut().for_each(|x| x.symlinks += 1),
            'f' => {
                if e.links > 1 && !seen.insert((e.dev, e.ino)) {
                    continue;
                }
                let when = match basis {
                    "atime" => e.atime,
                    "mtime" => e.mtime,
                    _ => e.atime.max(e.mtime),
                };
                let days = (t - when) / DAY as f64;
                let alloc = e.blocks * 512;
                for x in targets.iter_mut() {
                    x.files += 1;
                    x.apparent += e.size;
                    x.allocated += alloc;
                    for (i, th) in [60.0, 160.0].iter().enumerate() {
                        if days > *th {
                            x.cold[i][0] += 1;
                            x.cold[i][1] += e.size;
                            x.cold[i][2] += alloc;
                        }
                    }
                    x.age[age_bucket(days)][0] += 1;
                    x.age[age_bucket(days)][1] += e.size;
                    x.size[size_bucket(e.size)][0] += 1;
                    x.size[size_bucket(e.size)][1] += e.size;
                }
            }
            _ => targets.iter_mut().for_each(|x| x.others += 1),
        }
    }
    (rows, total)
}

fn from_json(s: &Value) -> Truth {
    let n = |v: &Value| v.as_u64().unwrap();
    let amount3 = |a: &Value| [n(&a["files"]), n(&a["apparent"]), n(&a["allocated"])];
    let amount2 = |a: &Value| [n(&a["files"]), n(&a["apparent"])];
    let cold: Vec<[u64; 3]> = s["cold"].as_array().unwrap().iter().map(amount3).collect();
    let age: Vec<[u64; 2]> = s["age"].as_array().unwrap().iter().map(amount2).collect();
    let size: Vec<[u64; 2]> = s["size"].as_array().unwrap().iter().map(amount2).collect();
    Truth {
        files: n(&s["data"]["files"]),
        apparent: n(&s["data"]["apparent"]),
        allocated: n(&s["data"]["allocated"]),
        dirs: n(&s["dirs"]),
        symlinks: n(&s["symlinks"]),
        others: n(&s["others"]),
        cold: cold.try_into().unwrap(),
        age: age.try_into().unwrap(),
        size: size.try_into().unwrap(),
    }
}

/// The scan, run as the unprivileged user, as JSON; and its exit code and stderr.
fn scan_as_nobody(s: &Scratch, args: &[&str]) -> (Value, i32, String) {
    let out = Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups"])
        .arg(bin())
        .arg("scan")
        .args(args)
        .arg("--json")
        .env("STORLAB_DB", s.path().join("nobody/results.db"))
        .output()
        .expect("storlab scan");
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {} / {}", stdout(&out), stderr(&out)));
    (v, out.status.code().unwrap_or(-1), stderr(&out))
}

fn ext4(s: &Scratch) -> (LoopDev, Mount, tempfile::TempDir) {
    let img_dir = tempfile::Builder::new()
        .prefix("storlab-scan-")
        .tempdir_in(std::env::temp_dir())
        .unwrap();
    let lo = loop_device(&img_dir.path().join("ext4.img"), 256 << 20);
    let mk = Command::new("mkfs.ext4")
        .args(["-q", "-F", &lo.dev])
        .output()
        .expect("mkfs.ext4");
    assert!(mk.status.success(), "{}", stderr(&mk));
    let m = mount_device(&lo.dev, &s.path().join("mnt"));
    (lo, m, img_dir)
}

#[test]
fn every_figure_matches_find() {
    let s = Scratch::new();
    std::fs::set_permissions(s.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let nobody_dir = s.path().join("nobody");
    std::fs::create_dir(&nobody_dir).unwrap();
    Command::new("chown")
        .args([NOBODY, nobody_dir.to_str().unwrap()])
        .status()
        .unwrap();
    let (_lo, m, _img) = ext4(&s);
    let tree = m.point.join("tree");
    build(&tree);
    // Another filesystem mounted inside the tree: not descended into by default.
    let inner = mount_fs(&tree.join("delta/other-fs"), "tmpfs", "size=8m");
    file(&inner.point.join("elsewhere.dat"), 1000, 500, 500);
    Command::new("chmod").args(["a+rx"]).arg(&inner.point).status().unwrap();

    let entries = find(&tree);
    assert!(
        entries.iter().any(|e| e.rel == "gamma/secret"),
        "find lists the unreadable dir"
    );
    assert!(
        !entries.iter().any(|e| e.rel.contains("hidden")),
        "but not its contents"
    );
    let t = tree.to_str().unwrap();

    for basis in ["atime", "mtime", "max"] {
        let (rows, total) = truth(&entries, basis);
        let (v, code, err) = scan_as_nobody(&s, &[t, "--age", "60d,160d", "--group-by", "top", "--time", basis]);
        // Partial: gamma/secret could not be read; it is named, and the exit code says so.
        assert_eq!(code, 4, "{err}");
        assert_eq!(v["problem_count"], 1, "{v}");
        assert_eq!(v["problems"][0]["kind"], "unreadable");
        assert!(v["problems"][0]["path"].as_str().unwrap().ends_with("gamma/secret"));
        assert!(err.contains("partial result"), "{err}");
        assert_eq!(v["skipped_mount_count"], 1);
        assert!(v["skipped_mounts"][0].as_str().unwrap().ends_with("delta/other-fs"));

        let got: BTreeMap<(String, bool), Truth> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let p = r["path"].as_str().unwrap();
                let rel = p.strip_prefix(t).unwrap().trim_start_matches('/').to_string();
                ((rel, r["own_files_only"].as_bool().unwrap()), from_json(&r["stats"]))
            })
            .collect();
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            rows.keys().collect::<Vec<_>>(),
            "{basis}: the rows"
        );
        for (k, want) in &rows {
            assert_eq!(&got[k], want, "{basis}: row {k:?}");
        }
        assert_eq!(from_json(&v["total"]), total, "{basis}: total");
    }
    // The facts the tree was built to show, said plainly.
    let (_, total) = truth(&entries, "atime");
    assert_eq!(
        total.files, 14,
        "12 readable files, 1 inode with 3 names, the sparse file"
    );
    assert_eq!(
        total.dirs, 12,
        "the tree, alpha, deep, er, still, beta, sub, gamma, secret, delta, empty, other-fs"
    );
    assert_eq!(total.symlinks, 2);
    assert_eq!(total.others, 1);

    // One row per PATH, and the same scan read back from the database.
    let (v, code, _) = scan_as_nobody(&s, &[t, "--top", "3"]);
    assert_eq!(code, 4);
    assert_eq!(v["rows"].as_array().unwrap().len(), 1);
    assert_eq!(from_json(&v["rows"][0]["stats"]), truth(&entries, "atime").1);
    // The largest cold directories (> 60 days by atime): beta holds the most.
    assert!(v["top"][0]["path"].as_str().unwrap().ends_with("/beta"), "{}", v["top"]);
    let id = v["run_id"].as_i64().unwrap();
    let back = Command::new(bin())
        .args(["results", "show", &id.to_string(), "--json"])
        .env("STORLAB_DB", s.path().join("nobody/results.db"))
        .output()
        .unwrap();
    assert!(back.status.success(), "{}", stderr(&back));
    let back: Value = serde_json::from_slice(&back.stdout).unwrap();
    assert_eq!(back["rows"], v["rows"]);
    assert_eq!(back["total"], v["total"]);

    // With --cross-mounts the inner filesystem's file counts too.
    let (v, _, _) = scan_as_nobody(&s, &[t, "--cross-mounts"]);
    assert_eq!(v["total"]["data"]["files"], total.files + 1);
    assert_eq!(v["skipped_mount_count"], 0);
    drop(inner);
}

#[test]
fn table_names_units_and_warns_about_noatime() {
    let s = Scratch::new();
    let m = mount_fs(&s.path().join("cold"), "tmpfs", "size=16m,noatime");
    file(&m.point.join("a/old.dat"), 10_000, 100, 100);
    file(&m.point.join("a/new.dat"), 30_000, 1, 1);
    let out = s.storlab(&["scan", m.point.to_str().unwrap(), "--age", "60d"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("noatime"), "{text}");
    assert!(text.contains(">60d data") && text.contains("% of data"), "{text}");
    // 10,000 of 40,000 bytes are older than 60 days.
    assert!(text.contains("25.00 %"), "{text}");
    assert!(text.contains("KiB"), "units on every figure: {text}");
    // CSV: one line per row plus the total and a header.
    let out = s.storlab(&["scan", m.point.to_str().unwrap(), "--csv", "--group-by", "top"]);
    let csv = stdout(&out);
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.starts_with("root,path,own_files_only,files"), "{csv}");
}

#[test]
fn bad_scan_options_are_refused() {
    let s = Scratch::new();
    let d = s.data();
    let dir = d.to_str().unwrap();
    for (args, needle) in [
        (vec!["scan", dir, "--age", "60x"], "--age 60x"),
        (vec!["scan", dir, "--group-by", "depth:0"], "depth:N"),
        (vec!["scan", dir, "--time", "ctime"], "atime, mtime or max"),
        (vec!["scan", "/nonexistent/storlab"], "does not exist"),
        (vec!["scan", "/etc/hostname"], "not a directory"),
        (vec!["scan", dir, "--threads", "0"], "at least 1"),
    ] {
        let out = s.storlab(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    assert!(s.nothing_stored(), "nothing stored for refused scans");
}

#[test]
fn many_problems_are_counted_and_the_first_named() {
    let s = Scratch::new();
    std::fs::set_permissions(s.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let nobody_dir = s.path().join("nobody");
    std::fs::create_dir(&nobody_dir).unwrap();
    Command::new("chown")
        .args([NOBODY, nobody_dir.to_str().unwrap()])
        .status()
        .unwrap();
    let tree = s.path().join("tree");
    for i in 0..12 {
        let d = tree.join(format!("locked{i:02}"));
        file(&d.join("x.dat"), 10, 1, 1);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    file(&tree.join("open/y.dat"), 20, 1, 1);
    Command::new("chmod")
        .args(["a+rx"])
        .arg(&tree)
        .arg(tree.join("open"))
        .status()
        .unwrap();
    Command::new("chmod")
        .args(["a+r"])
        .arg(tree.join("open/y.dat"))
        .status()
        .unwrap();
    let (v, code, _) = scan_as_nobody(&s, &[tree.to_str().unwrap()]);
    assert_eq!(code, 4);
    assert_eq!(v["problem_count"], 12);
    assert_eq!(v["problems"].as_array().unwrap().len(), 10, "the first ten are named");
    assert_eq!(v["total"]["data"]["files"], 1, "the readable file still counts");
    assert_eq!(v["total"]["dirs"], 14);
    let out = Command::new("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups"])
        .arg(bin())
        .args(["scan", tree.to_str().unwrap()])
        .env("STORLAB_DB", s.path().join("nobody/results.db"))
        .output()
        .unwrap();
    assert!(
        stdout(&out).contains("12 entries could not be counted"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("... and 2 more"), "{}", stdout(&out));
}

/// Per owner as `find` (run as root) sees it: files (each inode once), their apparent and
/// allocated bytes, directories (the tree's own included), symbolic links, other entries,
/// and the files' data not accessed for more than `cold_days`.
fn owners_by_find(tree: &Path, field: &str, cold_days: i64) -> BTreeMap<u32, [u64; 7]> {
    let spec = format!("%y %s %b %A@ %i %{field} %P\\0");
    let out = Command::new("find")
        .arg(tree)
        .args(["-xdev", "-printf", &spec])
        .output()
        .expect("find");
    assert!(out.status.success());
    let cut = (now() - cold_days * DAY) as f64;
    let mut seen = HashSet::new();
    let mut rows: BTreeMap<u32, [u64; 7]> = BTreeMap::new();
    for l in String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|l| !l.is_empty())
    {
        let f: Vec<&str> = l.splitn(7, ' ').collect();
        let owner: u32 = f[5].parse().unwrap();
        let r = rows.entry(owner).or_default();
        match f[0] {
            "f" => {
                if !seen.insert(f[4].to_string()) {
                    continue;
                }
                let size: u64 = f[1].parse().unwrap();
                r[0] += 1;
                r[1] += size;
                r[2] += f[2].parse::<u64>().unwrap() * 512;
                if f[3].parse::<f64>().unwrap() < cut {
                    r[6] += size;
                }
            }
            "d" => r[3] += 1,
            "l" => r[4] += 1,
            _ => r[5] += 1,
        }
    }
    rows
}

/// The system's name for a uid or gid, as getent says it (None: no name).
fn getent(db: &str, id: u32) -> Option<String> {
    let out = Command::new("getent").args([db, &id.to_string()]).output().unwrap();
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .split(':')
            .next()
            .unwrap()
            .to_string()
    })
}

#[test]
fn per_owner_rows_match_find_with_names_from_the_system() {
    let s = Scratch::new();
    let (_lo, m, _img) = ext4(&s);
    let tree = m.point.join("tree");
    build(&tree);
    // Owners: alpha is uid/gid 1000's, beta/old.dat nobody's, gamma 4242:4343's (no names:
    // the ids of deleted accounts), the rest root's. The hard-linked inode stays root's.
    let chown = |spec: &str, p: &str, recursive: bool| {
        let mut c = Command::new("chown");
        if recursive {
            c.arg("-R");
        }
        assert!(c.arg("-h").arg(spec).arg(tree.join(p)).status().unwrap().success());
    };
    chown("1000:1000", "alpha", true);
    chown("65534:65534", "beta/old.dat", false);
    chown("4242:4343", "gamma", true);
    let t = tree.to_str().unwrap();
    for (by, field, db) in [("user", "U", "passwd"), ("group", "G", "group")] {
        let want = owners_by_find(&tree, field, 60);
        let v = s.json(&["scan", t, "--group-by", by, "--age", "60d,160d"]);
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), want.len(), "{by}: one row per owner: {v}");
        for r in rows {
            let o = &r["owner"];
            assert_eq!(o["by"], by);
            let id = o["id"].as_u64().unwrap() as u32;
            let w = want[&id];
            let st = &r["stats"];
            let got = [
                st["data"]["files"].as_u64().unwrap(),
                st["data"]["apparent"].as_u64().unwrap(),
                st["data"]["allocated"].as_u64().unwrap(),
                st["dirs"].as_u64().unwrap(),
                st["symlinks"].as_u64().unwrap(),
                st["others"].as_u64().unwrap(),
                st["cold"][0]["apparent"].as_u64().unwrap(),
            ];
            assert_eq!(
                got, w,
                "{by} {id}: files, apparent, allocated, dirs, symlinks, others, >60d data"
            );
            assert_eq!(
                o["name"].as_str().map(str::to_string),
                getent(db, id),
                "{by} {id}'s name"
            );
        }
        // The largest owner first; the total is every row's sum, the hard link counted once.
        let data: Vec<u64> = rows
            .iter()
            .map(|r| r["stats"]["data"]["apparent"].as_u64().unwrap())
            .collect();
        assert!(data.windows(2).all(|w| w[0] >= w[1]), "{data:?}");
        assert_eq!(v["total"]["data"]["apparent"], data.iter().sum::<u64>());
        // 13 files, one inode with three names, the sparse file (root reads gamma/secret).
        assert_eq!(v["total"]["data"]["files"], 15);
    }
    let text = stdout(&s.storlab(&["scan", t, "--group-by", "user"]));
    assert!(
        text.contains("user 4242 (no name)") && text.contains("user nobody (65534)"),
        "{text}"
    );
    let csv = stdout(&s.storlab(&["scan", t, "--group-by", "group", "--csv"]));
    assert!(
        csv.lines().next().unwrap().ends_with("owner_kind,owner_id,owner_name"),
        "{csv}"
    );
    assert!(csv.lines().any(|l| l.contains(",group,4343,")), "{csv}");
}

#[test]
fn excluded_entries_are_neither_counted_nor_descended_into() {
    let s = Scratch::new();
    let (_lo, m, _img) = ext4(&s);
    let tree = m.point.join("tree");
    build(&tree);
    // Snapshot directories at two depths, and a path glob.
    file(&tree.join(".snapshot/hourly.0/alpha/copy.dat"), 300_000, 1, 1);
    file(&tree.join("beta/.snapshot/nightly/old.dat"), 200_000, 1, 1);
    let t = tree.to_str().unwrap();
    let all = s.json(&["scan", t]);
    let v = s.json(&[
        "scan",
        t,
        "--exclude",
        ".snapshot",
        "--exclude",
        &format!("{t}/alpha/deep"),
    ]);
    // What find counts without those: every file outside them, each inode once.
    let out = Command::new("find")
        .arg(&tree)
        .args([
            "-xdev",
            "(",
            "-name",
            ".snapshot",
            "-o",
            "-path",
            &format!("{t}/alpha/deep"),
            ")",
            "-prune",
            "-o",
            "-type",
            "f",
            "-printf",
            "%i %s\\n",
        ])
        .output()
        .unwrap();
    let mut seen = HashSet::new();
    let (mut files, mut bytes) = (0u64, 0u64);
    for l in String::from_utf8(out.stdout).unwrap().lines() {
        let (ino, size) = l.split_once(' ').unwrap();
        if seen.insert(ino.to_string()) {
            files += 1;
            bytes += size.parse::<u64>().unwrap();
        }
    }
    assert_eq!(v["total"]["data"]["files"], files);
    assert_eq!(v["total"]["data"]["apparent"], bytes);
    assert!(all["total"]["data"]["files"].as_u64().unwrap() > files);
    assert_eq!(v["excluded_count"], 3, "two .snapshot directories and alpha/deep: {v}");
    let named: Vec<&str> = v["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(named.iter().any(|p| p.ends_with("beta/.snapshot")), "{named:?}");
    let text = stdout(&s.storlab(&["scan", t, "--exclude", ".snapshot"]));
    assert!(text.contains("left out by --exclude (.snapshot): 2 entries"), "{text}");
    let out = s.storlab(&["scan", t, "--exclude", "a["]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--exclude 'a[' is not a glob"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn against_an_earlier_scan_shows_each_rows_growth() {
    let s = Scratch::new();
    let d = s.data();
    file(&d.join("alpha/a.dat"), 1 << 20, 1, 1);
    file(&d.join("beta/b.dat"), 2 << 20, 100, 100);
    file(&d.join("gamma/old.dat"), 500_000, 1, 1);
    let t = d.to_str().unwrap();
    let first = s.json(&["scan", t, "--group-by", "top", "--age", "60d"]);
    // Since then: alpha grows by 3 MiB and 2 files, beta is gone, epsilon is new, gamma's
    // file has not been read for 90 days.
    file(&d.join("alpha/more/c.dat"), 3 << 20, 1, 1);
    file(&d.join("alpha/d.dat"), 0, 1, 1);
    std::fs::remove_dir_all(d.join("beta")).unwrap();
    file(&d.join("epsilon/e.dat"), 4096, 1, 1);
    set_times(&d.join("gamma/old.dat"), 90, 90);
    let v = s.json(&["scan", t, "--group-by", "top", "--age", "60d", "--against", "last"]);
    let g = &v["growth"];
    assert_eq!(g["since_run"], first["run_id"]);
    assert_eq!(g["cold_threshold"], 60 * DAY);
    let row = |name: &str| {
        g["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["label"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {g}"))
            .clone()
    };
    let n = |v: &Value| v.as_u64().unwrap() as i64;
    let alpha = row("/alpha");
    assert_eq!(
        n(&alpha["after"]["data"]["apparent"]) - n(&alpha["before"]["data"]["apparent"]),
        3 << 20
    );
    assert_eq!(
        n(&alpha["after"]["data"]["files"]) - n(&alpha["before"]["data"]["files"]),
        2
    );
    let beta = row("/beta");
    assert!(beta["after"].is_null());
    assert_eq!(n(&beta["before"]["data"]["apparent"]), 2 << 20);
    assert_eq!(n(&beta["before"]["cold"]["apparent"]), 2 << 20);
    let epsilon = row("/epsilon");
    assert!(epsilon["before"].is_null());
    let gamma = row("/gamma");
    assert_eq!(n(&gamma["before"]["cold"]["apparent"]), 0);
    assert_eq!(n(&gamma["after"]["cold"]["apparent"]), 500_000);
    let total = row("total");
    assert_eq!(
        n(&total["after"]["data"]["apparent"]) - n(&total["before"]["data"]["apparent"]),
        (3 << 20) + 4096 - (2 << 20)
    );
    // The table: signed changes, new and gone rows.
    let text = stdout(&s.storlab(&[
        "scan",
        t,
        "--group-by",
        "top",
        "--age",
        "60d",
        "--against",
        &first["run_id"].to_string(),
    ]));
    assert!(text.contains(&format!("since run {}", first["run_id"])), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("/beta (gone)") && l.contains("-2.00 MiB")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains("/epsilon (new)")), "{text}");
    // Refused before the walk, nothing stored: another grouping, a run that is not a scan, none.
    let before = s.run_count().unwrap();
    for (args, needle) in [
        (
            vec!["scan", t, "--against", &first["run_id"].to_string()],
            "grouped the same way",
        ),
        (vec!["scan", t, "--against", "999"], "no run 999"),
        (vec!["scan", t, "--against", "yesterday"], "expected a run id or last"),
    ] {
        let out = s.storlab(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(s.run_count().unwrap(), before);
    // `last` with no earlier scan of these PATHs grouped so: the first of a series, said so.
    let out = s.storlab(&["scan", t, "--group-by", "user", "--against", "last", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("no earlier scan"), "{}", stderr(&out));
    assert!(stderr(&out).contains("this scan is the first"), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["growth"].is_null(), "{v}");
    assert_eq!(s.run_count().unwrap(), before + 1);
}
