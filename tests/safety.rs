//! storlab harms nothing it was not asked to touch: a device in use is never written (a mounted
//! ext4 on a loop device, a member of a mounted btrfs RAID1, swap, a device held open
//! exclusively; the file behind a mounted loop device), whatever flag named it, unless the
//! second word says the user knows; a character device is a target only when named; a worker
//! count the machine cannot hold is refused at once, before anything is stored or created —
//! held to a memory cgroup's limit, and the memory a worker is said to need held to what a
//! run of them really took.

mod common;

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use common::*;

/// The file a test keeps on the filesystem it attacks, and reads back at the end.
const PRECIOUS: &[u8] = b"the user's data, which no benchmark may touch\n";

/// A refusal: exit 2, nothing stored, and the message holds every word given.
fn refused(s: &Scratch, out: &std::process::Output, words: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "exit 2 expected: {err}");
    for w in words {
        assert!(err.contains(w), "the refusal names {w:?}: {err}");
    }
    assert!(s.nothing_stored(), "a refusal stores nothing: {err}");
}

/// storlab fio refuses as fio does: exit 1, the message on stderr.
fn fio_refused(out: &std::process::Output, words: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "fio's exit 1 expected: {err}");
    for w in words {
        assert!(err.contains(w), "the refusal names {w:?}: {err}");
    }
}

fn e2fsck_clean(dev: &str) {
    let out = Command::new("e2fsck").args(["-fn", dev]).output().expect("e2fsck");
    assert!(
        out.status.success(),
        "e2fsck -fn {dev}: {}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn a_mounted_ext4_on_a_loop_device_survives_every_attempt() {
    let s = Scratch::new();
    let fs = loop_filesystem("mkfs.ext4", 64 << 20, &s.path().join("mnt"));
    std::fs::write(fs.mount.point.join("precious"), PRECIOUS).unwrap();
    run_ok("sync", &[]);
    let dev = fs.dev.dev.clone();
    let point = fs.mount.point.display().to_string();

    // storlab run: the device named twice over is still refused while mounted.
    let out = s.storlab(&[
        "run",
        "--target",
        &dev,
        "--allow-device",
        &dev,
        "--phase",
        "write",
        "--size",
        "16m",
    ]);
    refused(&s, &out, &["ext4 mounted at", &point, "--allow-mounted-write"]);
    let out = s.storlab(&[
        "run",
        "--target",
        &dev,
        "--allow-device",
        &dev,
        "--phase",
        "randwrite",
        "--size",
        "4m",
        "--direct",
    ]);
    refused(&s, &out, &["ext4 mounted at"]);
    // Without --allow-device a device is never written.
    let out = s.storlab(&["run", "--target", &dev, "--phase", "write", "--size", "16m"]);
    refused(&s, &out, &["--allow-device"]);
    // The image behind the loop device is the same bytes.
    let image = std::fs::read_to_string(format!(
        "/sys/block/{}/loop/backing_file",
        dev.trim_start_matches("/dev/")
    ))
    .unwrap()
    .trim()
    .to_string();
    let out = s.storlab(&["run", "--target", &image, "--phase", "write", "--size", "1m"]);
    refused(&s, &out, &["backed by this file", "ext4 mounted at"]);
    // storlab fio, as fio: a write of a mounted device is refused, allow_mounted_write names the way.
    let out = s.storlab(&[
        "fio",
        "--name=w",
        &format!("--filename={dev}"),
        "--rw=write",
        "--size=8m",
        "--bs=64k",
    ]);
    fio_refused(&out, &["ext4 mounted at", "allow_mounted_write=1"]);
    let job = s.path().join("w.fio");
    std::fs::write(&job, format!("[w]\nfilename={dev}\nrw=randwrite\nsize=4m\ndirect=1\n")).unwrap();
    let out = s.storlab(&["fio", &job.display().to_string()]);
    fio_refused(&out, &["ext4 mounted at"]);
    let out = s.storlab(&["run", "--fio", &job.display().to_string(), "--allow-device", &dev]);
    refused(&s, &out, &["ext4 mounted at"]);
    assert!(s.nothing_stored());

    // A read harms nothing: it runs, with no flag, as fio's does.
    let out = s.storlab(&[
        "run",
        "--target",
        &dev,
        "--phase",
        "randread",
        "--size",
        "8m",
        "--runtime",
        "1s",
        "--direct",
    ]);
    assert!(
        out.status.success(),
        "a read of a mounted device runs: {}",
        stderr(&out)
    );
    let out = s.storlab(&[
        "fio",
        "--name=r",
        &format!("--filename={dev}"),
        "--rw=randread",
        "--size=8m",
        "--runtime=1",
        "--output-format=terse",
    ]);
    assert!(
        out.status.success(),
        "storlab fio reads a device with no flag: {}",
        stderr(&out)
    );

    // The filesystem is whole and the file reads back.
    drop(fs.mount);
    e2fsck_clean(&dev);
    let again = mount_device(&dev, &s.path().join("mnt"));
    assert_eq!(std::fs::read(again.point.join("precious")).unwrap(), PRECIOUS);
}

#[test]
fn the_second_word_writes_a_mounted_device_and_fio_writes_an_unmounted_one() {
    let s = Scratch::new();
    let fs = loop_filesystem("mkfs.ext4", 32 << 20, &s.path().join("mnt"));
    let dev = fs.dev.dev.clone();
    // The user said twice that they know: storlab writes, as asked, over the filesystem.
    let out = s.storlab(&[
        "run",
        "--target",
        &dev,
        "--allow-device",
        &dev,
        "--allow-mounted-write",
        "--phase",
        "write",
        "--size",
        "1m",
        "--direct",
    ]);
    assert!(
        out.status.success(),
        "--allow-mounted-write overrides: {}",
        stderr(&out)
    );
    // A mounted device among a job's several files (filename=a:b) is held to the same rule as
    // one named alone: refused before anything is written, the other file not even made.
    let other = s.path().join("other.dat");
    let out = s.storlab(&[
        "fio",
        "--name=w",
        &format!("--filename={}:{dev}", other.display()),
        "--rw=write",
        "--size=2m",
        "--output-format=terse",
    ]);
    fio_refused(&out, &[&dev, "in use", "allow_mounted_write=1"]);
    assert!(!other.exists(), "nothing written");
    drop(fs.mount);
    // Unmounted, storlab fio writes it with no flag, as fio does; storlab run still wants the device named.
    let out = s.storlab(&[
        "fio",
        "--name=w",
        &format!("--filename={dev}"),
        "--rw=write",
        "--size=1m",
        "--output-format=terse",
    ]);
    assert!(
        out.status.success(),
        "fio's rules write an unmounted device: {}",
        stderr(&out)
    );
    let before = s.run_count();
    let out = s.storlab(&["run", "--target", &dev, "--phase", "write", "--size", "1m"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-device"), "{}", stderr(&out));
    assert_eq!(s.run_count(), before, "the refusal stored nothing");
}

#[test]
fn a_member_of_a_mounted_btrfs_raid1_is_never_written() {
    let s = Scratch::new();
    let (pool, _work) = BtrfsPool::new(&s, 8);
    let [first, second] = pool.devices();
    let point = pool.mount.point.display().to_string();
    std::fs::write(pool.mount.point.join("precious"), PRECIOUS).unwrap();
    run_ok("sync", &[]);
    // The second device is in no mount's source: only btrfs knows it as a member.
    let out = s.storlab(&[
        "run",
        "--target",
        second,
        "--allow-device",
        second,
        "--phase",
        "write",
        "--size",
        "16m",
        "--direct",
    ]);
    refused(&s, &out, &["a member of the btrfs filesystem", &point]);
    let out = s.storlab(&[
        "fio",
        "--name=w",
        &format!("--filename={second}"),
        "--rw=randwrite",
        "--size=8m",
        "--direct=1",
    ]);
    fio_refused(&out, &["a member of the btrfs filesystem"]);
    let out = s.storlab(&[
        "run",
        "--target",
        first,
        "--allow-device",
        first,
        "--phase",
        "write",
        "--size",
        "16m",
    ]);
    refused(&s, &out, &["btrfs mounted at", &point]);
    // Every block of both copies is as btrfs wrote it: a scrub finds no error, the file reads back.
    let scrub = Command::new("btrfs")
        .args(["scrub", "start", "-B", &point])
        .output()
        .expect("btrfs scrub");
    assert!(scrub.status.success(), "scrub: {}{}", stdout(&scrub), stderr(&scrub));
    let text = stdout(&scrub) + &stderr(&scrub);
    assert!(
        text.contains("no errors found") || text.contains("Error summary:    no errors"),
        "{text}"
    );
    assert_eq!(std::fs::read(pool.mount.point.join("precious")).unwrap(), PRECIOUS);
}

#[test]
fn swap_on_a_device_and_a_device_held_exclusively_are_in_use() {
    let s = Scratch::new();
    let images = tempfile::tempdir_in("/var/tmp").unwrap();
    let swap = loop_device(&images.path().join("swap.img"), 16 << 20);
    run_ok("mkswap", &[&swap.dev]);
    run_ok("swapon", &[&swap.dev]);
    struct SwapOff<'a>(&'a str);
    impl Drop for SwapOff<'_> {
        fn drop(&mut self) {
            let _ = Command::new("swapoff").arg(self.0).status();
        }
    }
    let _off = SwapOff(&swap.dev);
    let out = s.storlab(&[
        "run",
        "--target",
        &swap.dev,
        "--allow-device",
        &swap.dev,
        "--phase",
        "write",
        "--size",
        "1m",
    ]);
    refused(&s, &out, &["swap in use on"]);

    // A device another program opened with O_EXCL (as mkfs and ZFS do): the kernel's own answer.
    let held = loop_device(&images.path().join("held.img"), 16 << 20);
    let claim = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&held.dev)
        .unwrap();
    let out = s.storlab(&[
        "run",
        "--target",
        &held.dev,
        "--allow-device",
        &held.dev,
        "--phase",
        "write",
        "--size",
        "1m",
    ]);
    refused(&s, &out, &["held open exclusively"]);
    drop(claim);
    let out = s.storlab(&[
        "run",
        "--target",
        &held.dev,
        "--allow-device",
        &held.dev,
        "--phase",
        "write",
        "--size",
        "1m",
    ]);
    assert!(
        out.status.success(),
        "released, the device named is written: {}",
        stderr(&out)
    );
}

#[test]
fn a_character_device_is_a_target_only_when_named() {
    let s = Scratch::new();
    let out = s.storlab(&["run", "--target", "/dev/null", "--phase", "write", "--size", "16m"]);
    refused(&s, &out, &["character device", "--allow-device /dev/null"]);
    let out = s.storlab(&[
        "run",
        "--target",
        "/dev/urandom",
        "--allow-device",
        "/dev/urandom",
        "--phase",
        "read",
        "--size",
        "1m",
    ]);
    refused(&s, &out, &["character device"]);
    let out = s.storlab(&[
        "run",
        "--target",
        "/dev/null",
        "--allow-device",
        "/dev/null",
        "--phase",
        "write",
        "--size",
        "16m",
    ]);
    assert!(out.status.success(), "named, /dev/null is written: {}", stderr(&out));
    // fio's own command line takes /dev/null as fio does.
    let out = s.storlab(&[
        "fio",
        "--name=n",
        "--filename=/dev/null",
        "--rw=write",
        "--size=16m",
        "--output-format=terse",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// storlab's refusal of `threads` workers (or Ok(output) when it ran), with the time it took.
fn timed(s: &Scratch, args: &[&str]) -> (std::process::Output, f64) {
    let t = Instant::now();
    let out = s.storlab(args);
    (out, t.elapsed().as_secs_f64())
}

#[test]
fn a_worker_count_beyond_the_machines_threads_is_refused_at_once() {
    let s = Scratch::new();
    let dir = s.data();
    let d = dir.display().to_string();
    let (out, secs) = timed(
        &s,
        &[
            "run",
            "--target",
            &d,
            "--phase",
            "write",
            "--size",
            "4k",
            "--threads",
            "1000000",
        ],
    );
    refused(&s, &out, &["1,000,000 workers", "threads", "give at most"]);
    // Refused before a worker is placed: the check costs nothing however many were asked for.
    assert!(secs < 2.0, "refused in {secs:.2} s");
    assert!(entries(&dir).is_empty(), "no file was made: {:?}", entries(&dir));
    // fio's numjobs goes through the same check.
    let job = s.path().join("many.fio");
    std::fs::write(&job, format!("[many]\ndirectory={d}\nrw=write\nsize=4k\nnumjobs=1g\n")).unwrap();
    let (out, secs) = timed(&s, &["run", "--fio", &job.display().to_string()]);
    refused(&s, &out, &["1,073,741,824 workers"]);
    assert!(secs < 2.0, "refused in {secs:.2} s");
    let (out, _) = timed(&s, &["fio", &job.display().to_string()]);
    fio_refused(&out, &["1,073,741,824 workers"]);
    assert!(entries(&dir).is_empty());
}

/// The per-worker memory a refusal names ("1.55 MiB a worker"), in bytes.
fn per_worker_bytes(refusal: &str) -> f64 {
    let at = refusal.find(" a worker").expect("the refusal names a worker's memory");
    let words: Vec<&str> = refusal[..at].rsplit(' ').take(2).collect();
    let (unit, number) = (words[0], words[1].trim_start_matches('('));
    let scale = match unit {
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        u => panic!("unit {u} in {refusal}"),
    };
    number.parse::<f64>().unwrap() * scale
}

/// Runs `cmd` and waits for it, with its peak resident memory (the kernel's ru_maxrss), bytes.
// The child is waited for with wait4, which gives its rusage too.
#[allow(clippy::zombie_processes)]
fn run_with_peak(mut cmd: Command) -> (std::process::ExitStatus, String, u64) {
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut err = String::new();
    use std::io::Read;
    child.stderr.unwrap().read_to_string(&mut err).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it and the status for our child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the child is ours and not yet waited for.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    assert_eq!(r, pid);
    use std::os::unix::process::ExitStatusExt;
    (
        std::process::ExitStatus::from_raw(status),
        err,
        ru.ru_maxrss as u64 * 1024,
    )
}

#[test]
fn a_memory_cgroup_holds_the_worker_count_and_a_worker_takes_no_more_than_it_is_said_to() {
    let s = Scratch::new();
    let dir = s.data();
    let d = dir.display().to_string();
    let cg = Cgroup::new("memory");
    if cg.has("memory.limit_in_bytes") {
        cg.set("memory.limit_in_bytes", &(256u64 << 20).to_string());
    } else {
        cg.set("memory.max", &(256u64 << 20).to_string());
    }
    let args = |threads: &str| -> Vec<String> {
        [
            "run",
            "--target",
            &d,
            "--phase",
            "write",
            "--size",
            "4k",
            "--threads",
            threads,
            "--db",
            &s.db(),
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let argv = args("2000");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = cg.command(bin(), &argv).env("TMPDIR", s.path()).output().unwrap();
    refused(&s, &out, &["2,000 workers", "memory", "the cgroup's", "give at most"]);
    assert!(entries(&dir).is_empty(), "no file was made");
    let err = stderr(&out);
    let per = per_worker_bytes(&err);
    // As many as the refusal says fit do run in the cgroup, and the kernel kills nothing.
    let at_most: u64 = err
        .rsplit("give at most ")
        .next()
        .and_then(|t| t.split_whitespace().next())
        .map(|n| n.replace(',', "").parse().unwrap())
        .unwrap();
    assert!(at_most >= 20, "{err}");
    let fit = (at_most * 9 / 10).to_string();
    let argv = args(&fit);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (status, err, peak) = run_with_peak(cg.command(bin(), &argv));
    assert!(
        status.success(),
        "{fit} workers within the limit run ({status:?}): {err}"
    );
    assert_eq!(s.run_count(), Some(1));

    // Outside the cgroup: 600 workers took no more memory than the refusal says they need.
    let (status, err, peak600) = run_with_peak({
        let mut c = Command::new(bin());
        c.args(args("600")).env("TMPDIR", s.path());
        c
    });
    assert!(status.success(), "{err}");
    let said = 600.0 * per + 64.0 * 1024.0 * 1024.0;
    assert!(
        (peak600 as f64) < said,
        "600 workers peaked at {peak600} bytes; storlab counts {said}"
    );
    assert!(peak > 0);
}

#[test]
fn a_count_that_cannot_run_is_named_before_the_targets_are_looked_at() {
    let s = Scratch::new();
    let out = s.storlab(&[
        "run",
        "--target",
        "/nonexistent/storlab",
        "--phase",
        "write",
        "--threads",
        "5000000",
    ]);
    refused(&s, &out, &["5,000,000 workers"]);
    assert!(!Path::new("/nonexistent/storlab").exists());
}

/// The command stored with a run, pasted into a shell, runs the same argv: bash parses it
/// back into the words storlab was given (a space, a `;$(…)`, a quote, an escape sequence).
#[test]
fn the_stored_command_is_the_same_argv_in_a_shell() {
    let s = Scratch::new();
    let evil = s.path().join("a b;$(touch pwned)'\u{1b}]0;x\u{7}");
    std::fs::create_dir(&evil).unwrap();
    let tag = "note=it's \"quoted\"";
    let args = [
        "run",
        "--target",
        evil.to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "64k",
        "--tag",
        tag,
    ];
    let out = s.storlab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let run = s.json(&["results", "show", &s.last_run_id().to_string()]);
    let command = run["command"].as_str().unwrap();
    assert!(
        !command.contains('\u{1b}'),
        "no raw escape in the stored command: {command}"
    );
    // bash prints each word it parsed, NUL-separated; the program's own path first.
    let parsed = Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0' {command}"))
        .current_dir(s.path())
        .output()
        .unwrap();
    let words: Vec<String> = stdout(&parsed)
        .split('\0')
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect();
    assert_eq!(&words[1..], &args[..], "{command}");
    assert!(!s.path().join("pwned").exists(), "nothing in the command ran");
}

/// A path holding control characters is shown with them escaped, in tables and in errors.
#[test]
fn control_characters_in_paths_reach_the_terminal_escaped() {
    let s = Scratch::new();
    let odd = s.path().join("x\u{1b}]0;owned\u{7}y");
    std::fs::create_dir(&odd).unwrap();
    let out = s.storlab(&[
        "run",
        "--target",
        odd.to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "64k",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
    assert!(text.contains("x\\e]0;owned\\ay"), "{text}");
    let missing = s.path().join("gone\u{1b}[2J");
    let out = s.storlab(&["run", "--target", missing.to_str().unwrap(), "--phase", "write"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2));
    assert!(!err.contains('\u{1b}') && err.contains("gone\\e[2J"), "{err:?}");
}

/// A file that is not UTF-8 is named by its line and byte; a value a configuration file gives
/// is named by the file's line and key, not as a flag.
#[test]
fn file_errors_name_their_line() {
    let s = Scratch::new();
    let job = s.path().join("job.toml");
    std::fs::write(&job, b"phase = [\"write\"]\nsize = \"64k\xff\"\n").unwrap();
    let out = s.storlab(&["run", job.to_str().unwrap(), "--target", s.path().to_str().unwrap()]);
    refused(&s, &out, &["line 2, byte 12", "not UTF-8 (0xff)"]);
    let fio = s.path().join("job.fio");
    std::fs::write(&fio, b"[w]\nrw=write\nfilename=\xc3(\n").unwrap();
    let out = s.storlab(&["fio", fio.to_str().unwrap()]);
    fio_refused(&out, &["line 3, byte 10"]);
    let monitor = s.path().join("monitor.toml");
    std::fs::write(
        &monitor,
        "[monitor]\nlt = \"100s\"\ninterval = \"10x\"\n[[monitor.pool]]\nname = \"P\"\nmembers = [\"/\"]\n",
    )
    .unwrap();
    let out = s.storlab(&["monitor", "run", "--config", monitor.to_str().unwrap()]);
    refused(&s, &out, &["line 3, key interval: 10x"]);
    let challenge = s.path().join("challenge.toml");
    std::fs::write(
        &challenge,
        format!(
            "[challenge]\npool = [\"P1={}\"]\nwriters = 1\nfile_size = \"10x\"\nduration = \"1s\"\n",
            s.data().display()
        ),
    )
    .unwrap();
    let out = s.storlab(&["challenge", "run", "--job", challenge.to_str().unwrap()]);
    refused(&s, &out, &["line 4, key file_size: 10x"]);
}

/// A file storlab makes is laid out from its start to its region's end: an offset far past the
/// free space is refused before a byte is written, as a size past it is (an offset of 131 GiB
/// before 16 MiB once laid out 131 GiB on a 65 GiB filesystem).
#[test]
fn a_file_laid_out_past_the_free_space_is_refused_before_a_byte_is_written() {
    let s = Scratch::new();
    let d = s.data();
    let free = storlab_env::space::statvfs(&d).and_then(|v| v.free).unwrap();
    let offset = format!("--offset={}", free + (1 << 30));
    let out = s.storlab(&[
        "fio",
        "--name=far",
        &format!("--directory={}", d.display()),
        &offset,
        "--size=16m",
        "--rw=read",
    ]);
    fio_refused(&out, &["needs", "free"]);
    assert!(entries(&d).is_empty(), "nothing laid out");
}

/// Jobs that name one file share it (issue 59, part 1): four fio jobs on one 32 MiB file need
/// 32 MiB once, not 128 MiB, as fio lays out one file — on a 48 MiB filesystem both tools run
/// them, the file is laid out once, and storlab removes the one file it made.
#[test]
fn jobs_sharing_one_file_need_its_space_once() {
    let s = Scratch::new();
    let fs = loop_filesystem("mkfs.ext4", 48 << 20, &s.path().join("mnt"));
    let shared = s.path().join("mnt/shared.file");
    let job = s.path().join("shared.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\nfilename={}\nsize=32m\nrw=randread\nbs=4k\nruntime=1\ntime_based\n[a]\n[b]\n[c]\n[d]\n",
            shared.display()
        ),
    )
    .unwrap();
    let out = Command::new("fio")
        .arg(&job)
        .arg("--output-format=terse")
        .output()
        .unwrap();
    assert!(out.status.success(), "fio runs it: {}", stderr(&out));
    std::fs::remove_file(&shared).unwrap();
    let out = s.storlab(&["run", "--fio", job.to_str().unwrap(), "--json", "-q"]);
    assert!(out.status.success(), "storlab runs it too: {}", stderr(&out));
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = run["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 4);
    let laid: Vec<f64> = phases
        .iter()
        .map(|p| p["result"]["layout_seconds"].as_f64().unwrap_or(0.0))
        .collect();
    assert_eq!(laid.iter().filter(|t| **t > 0.0).count(), 1, "laid out once: {laid:?}");
    assert!(!shared.exists(), "the one file storlab made is removed");
    drop(fs);
}
