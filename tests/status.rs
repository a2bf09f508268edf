//! The live status line, seen the way a person sees it: storlab runs in a tmux pane (a real
//! terminal) and the pane is read with `tmux capture-pane` while the run goes on and after it
//! ended. And its absence: with --json, --quiet, or stderr redirected to a file, which then
//! holds no control characters.
// A test is a story told in order; its length is allowed (Cargo.toml: too_many_lines).
#![allow(clippy::too_many_lines)]

mod common;

use std::time::{Duration, Instant};

use common::*;

/// A tmux server of the test's own (its own socket), with one pane running a script; killed
/// when dropped, also when the test fails.
struct Tmux {
    socket: String,
}

/// Quotes a word for sh.
fn quoted(w: &str) -> String {
    format!("'{}'", w.replace('\'', r"'\''"))
}

impl Tmux {
    /// Runs `storlab ARGS` (`redirect` appended to its line, e.g. `2>err.txt`) in a 160×30
    /// pane, in `s`'s directory, with `s`'s database; the pane stays open after storlab ends
    /// and says how it exited.
    fn run(s: &Scratch, args: &[&str], redirect: &str) -> Tmux {
        static PANES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let socket = format!(
            "storlab-test-{}-{}",
            std::process::id(),
            PANES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let line: Vec<String> = std::iter::once(bin()).chain(args.iter().copied()).map(quoted).collect();
        let script = s.path().join("in-tmux.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/bash\ncd {}\nexport STORLAB_DB={} TMPDIR={}\n{} {redirect}\necho \"storlab exited $?\"\nsleep 600\n",
                quoted(&s.path().display().to_string()),
                quoted(&s.db()),
                quoted(&s.path().display().to_string()),
                line.join(" ")
            ),
        )
        .unwrap();
        let t = Tmux { socket };
        let ok = std::process::Command::new("tmux")
            .args([
                "-L",
                &t.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "30",
            ])
            // bash, not sh: when Ctrl-C reaches the pane, bash goes on after storlab handled it
            // and exited (dash would die of it with the pane).
            .arg(format!("bash {}", quoted(&script.display().to_string())))
            .status()
            .expect("run tmux");
        assert!(ok.success(), "tmux started");
        t
    }

    /// What the pane shows now, its lines joined where the terminal wrapped them.
    fn screen(&self) -> String {
        let out = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Everything the pane showed, its scrollback too.
    fn history(&self) -> String {
        let out = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-S", "-"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Reads the pane every 100 ms until `seen` holds for what it shows (within 60 s), and
    /// returns that screen; every screen read on the way is given to `each`.
    fn until(&self, what: &str, seen: impl Fn(&str) -> bool, mut each: impl FnMut(&str)) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            each(&screen);
            if seen(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the pane never showed {what}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until storlab ended and returns the last screen; its exit code is checked.
    fn ended(&self, code: i32, mut each: impl FnMut(&str)) -> String {
        let want = format!("storlab exited {code}");
        self.until(&want, |s| s.contains("storlab exited"), &mut each);
        let screen = self.screen();
        assert!(screen.contains(&want), "{screen}");
        screen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// The status line's line on a screen: the one with the live figures.
fn status_of(screen: &str) -> Option<&str> {
    screen
        .lines()
        .find(|l| l.contains(" left · ") && l.contains(" IOPS · p99 "))
}

/// The number before `unit` in `line` ("20.00 MiB/s" → 20.0), thousands separators dropped.
fn number_before(line: &str, unit: &str) -> f64 {
    let head = &line[..line.find(unit).unwrap_or_else(|| panic!("no {unit:?} in {line:?}"))];
    let word = head.trim_end().rsplit(' ').next().unwrap();
    word.replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{word:?} before {unit:?} in {line:?}"))
}

/// m:ss as seconds.
fn seconds(clock: &str) -> u64 {
    let (m, s) = clock.split_once(':').unwrap_or_else(|| panic!("{clock:?} is not m:ss"));
    m.parse::<u64>().unwrap() * 60 + s.parse::<u64>().unwrap()
}

/// Checks a status line's figures against the job's rate: MiB/s near it, IOPS the same at 4
/// KiB, a p99 with its unit.
fn check_figures(line: &str, mib_per_sec: f64) {
    let mib = number_before(line, " MiB/s");
    assert!((mib - mib_per_sec).abs() < mib_per_sec * 0.1, "{line}");
    let iops = number_before(line, " IOPS");
    assert!((iops - mib * 256.0).abs() < mib * 256.0 * 0.02, "4 KiB I/Os: {line}");
    let p99 = line.split(" · p99 ").nth(1).unwrap();
    assert!(p99.ends_with(" µs") || p99.ends_with(" ms"), "{line:?}");
}

#[test]
fn a_runs_status_line_shows_its_phase_time_bytes_and_figures_and_is_gone_at_the_end() {
    let s = Scratch::new();
    let data = s.data();
    // A one-pass write of 64 MiB at 16 MiB/s (4 s), then a time-based random read of 4 s at
    // the same rate: the figures on the line are the rate's.
    let job = s.path().join("job.toml");
    std::fs::write(
        &job,
        format!(
            "threads = 1\nsize = \"64m\"\nbs = \"4k\"\nrate = \"16MiB/s\"\ntarget = [{:?}]\nphase = [\"write\", {{ kind = \"randread\", runtime = \"4s\" }}]\n",
            data.display().to_string()
        ),
    )
    .unwrap();
    let t = Tmux::run(&s, &["run", job.to_str().unwrap()], "");
    let screen = t.until(
        "the write's status line",
        |s| status_of(s).is_some_and(|l| l.contains("[1/2] write")),
        |_| {},
    );
    let line = status_of(&screen).unwrap();
    assert!(line.starts_with("run 1 [1/2] write · 0:0"), "{line}");
    // One pass: bytes done of the phase's bytes, and what is left.
    assert!(
        line.contains(" MiB of 64.00 MiB, ") && line.contains(" MiB left · "),
        "{line}"
    );
    check_figures(line, 16.0);

    let screen = t.until(
        "the random read's status line",
        |s| status_of(s).is_some_and(|l| l.contains("[2/2] randread")),
        |_| {},
    );
    // The finished phase stays above the line with its throughput.
    let done = screen
        .lines()
        .find(|l| l.starts_with("run 1 [1/2] write "))
        .unwrap_or_else(|| panic!("the write's line stays:\n{screen}"));
    assert!((number_before(done, " MiB/s") - 16.0).abs() < 1.6, "{done}");
    let line = status_of(&screen).unwrap();
    // Time-based: elapsed of the runtime, and what is left; the two add up to it.
    let times = line.split(" · ").nth(1).unwrap();
    let (elapsed, rest) = times.split_once(" of ").unwrap();
    let (total, left) = rest.split_once(", ").unwrap();
    assert_eq!(total, "0:04", "{line}");
    let sum = seconds(elapsed) + seconds(left.trim_end_matches(" left"));
    assert!((3..=5).contains(&sum), "{line}");
    check_figures(line, 16.0);

    let screen = t.ended(0, |_| {});
    assert!(status_of(&screen).is_none(), "the status line is cleared:\n{screen}");
    assert!(
        screen.lines().any(|l| l.starts_with("run 1 [2/2] randread ")),
        "{screen}"
    );
    assert!(screen.contains("storlab: stored as run 1"), "{screen}");
    assert!(
        screen.lines().any(|l| l.starts_with("1 write ")),
        "the run's table:\n{screen}"
    );
}

#[test]
fn a_studys_line_says_the_point_or_repetition_and_whether_its_task_runs() {
    let s = Scratch::new();
    let data = s.data();
    // A task that runs for 3 s and says how far it is.
    let task = s.path().join("task.sh");
    let mark = s.path().join("task-started");
    std::fs::write(
        &task,
        format!(
            "#!/bin/sh\ncase $1 in\nstart) date +%s > {m} ;;\nstatus) e=$(( $(date +%s) - $(cat {m}) )); if [ $e -ge 3 ]; then echo done; else echo \"running $((e * 100 / 3))\"; fi ;;\nstop) rm -f {m} ;;\nesac\n",
            m = quoted(&mark.display().to_string())
        ),
    )
    .unwrap();
    let t = task.display();
    let spec = format!("cmd:sh {t} start|sh {t} status|sh {t} stop");
    let pane = Tmux::run(
        &s,
        &[
            "impact",
            "--task",
            &spec,
            "--target",
            data.to_str().unwrap(),
            "--phase",
            "randread",
            "--size",
            "16m",
            "--bs",
            "4k",
            "--runtime",
            "3s",
            "--rate",
            "8MiB/s",
            "--repeat",
            "1",
        ],
        "",
    );
    let study_line = |screen: &str| {
        screen
            .lines()
            .find(|l| l.contains("cost to the users of cmd:sh"))
            .map(|l| l.trim_end().to_string())
    };
    let screen = pane.until(
        "the idle repetition",
        |s| study_line(s).is_some_and(|l| l.starts_with("repetition 1, idle")) && status_of(s).is_some(),
        |_| {},
    );
    assert!(
        status_of(&screen).is_some_and(|l| l.starts_with("run 1 (impact-idle) [1/1] randread")),
        "{screen}"
    );
    let screen = pane.until(
        "the loaded repetition with its task running",
        |s| {
            study_line(s).is_some_and(|l| l.starts_with("repetition 1, with the task · task running"))
                && status_of(s).is_some()
        },
        |_| {},
    );
    let line = status_of(&screen).unwrap();
    assert!(line.starts_with("run 2 (impact-loaded) [1/1] randread"), "{line}");
    check_figures(line, 8.0);
    let screen = pane.ended(0, |_| {});
    assert!(
        study_line(&screen).is_none() && status_of(&screen).is_none(),
        "{screen}"
    );
    assert!(screen.contains("storlab: stored study 1"), "{screen}");

    // A sweep's line names the point going on.
    drop(pane);
    let s = Scratch::new();
    let data = s.data();
    let pane = Tmux::run(
        &s,
        &[
            "sweep",
            "--target",
            data.to_str().unwrap(),
            "--phase",
            "write",
            "--size",
            "16m",
            "--rate",
            "8MiB/s",
            "--vary",
            "bs=4k,64k",
        ],
        "",
    );
    let screen = pane.until(
        "the second point",
        |s| {
            s.lines()
                .any(|l| l.starts_with("point 2 of 2: bs=64k · sweep of 2 points"))
        },
        |_| {},
    );
    assert!(
        screen.lines().any(|l| l == "[1/2] bs=4k"),
        "each point's line stays:\n{screen}"
    );
    pane.ended(0, |_| {});

    // IOzone's cells are points too: each cell's line and each phase's throughput stay above
    // IOzone's report.
    drop(pane);
    let s = Scratch::new();
    let data = s.data();
    let pane = Tmux::run(
        &s,
        &[
            "iozone",
            "-s",
            "16m",
            "-r",
            "4k",
            "-i",
            "0",
            "-i",
            "1",
            "-l",
            "1",
            "-u",
            "2",
            "--dir",
            data.to_str().unwrap(),
        ],
        "",
    );
    pane.ended(0, |_| {});
    let all = pane.history();
    let lines: Vec<&str> = all.lines().map(str::trim_end).collect();
    let at = |what: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no line {what:?}:\n{all}"))
    };
    let order = [
        at("[1/2] 1 worker(s), 16384 kB × 4 kB"),
        at("run 1 (iozone) [1/4] write "),
        at("run 1 (iozone) [4/4] reread "),
        at("[2/2] 2 worker(s), 16384 kB × 4 kB"),
        at("run 2 (iozone) [4/4] reread "),
        at("        Command line used: iozone -s 16m -r 4k -i 0 -i 1 -l 1 -u 2"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}:\n{all}");
    assert!(status_of(&all).is_none(), "{all}");
}

/// The control characters a status line is drawn with: escape sequences and carriage returns.
fn control_characters(text: &[u8]) -> Vec<u8> {
    text.iter().copied().filter(|&b| b == 0x1b || b == b'\r').collect()
}

#[test]
fn no_status_line_with_json_quiet_or_stderr_in_a_file() {
    let s = Scratch::new();
    let data = s.data();
    let run = |extra: &[&str]| -> Vec<String> {
        let mut a = vec![
            "run",
            "--target",
            data.to_str().unwrap(),
            "--phase",
            "randread",
            "--size",
            "16m",
            "--bs",
            "4k",
            "--runtime",
            "2s",
            "--rate",
            "8MiB/s",
        ];
        a.extend(extra);
        a.into_iter().map(String::from).collect()
    };
    fn args(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let never_a_status = |screen: &str| {
        assert!(status_of(screen).is_none(), "a status line:\n{screen}");
    };

    // --json: stdout (here a file) is one document, and the terminal sees no status.
    let t = Tmux::run(&s, &args(&run(&["--json"])), "> out.json");
    t.ended(0, never_a_status);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(s.path().join("out.json")).unwrap()).unwrap();
    assert_eq!(doc["phases"][0]["kind"], "randread", "{doc}");
    drop(t);

    // --quiet on a terminal: the results, no status.
    let t = Tmux::run(&s, &args(&run(&["--quiet"])), "");
    let screen = t.ended(0, never_a_status);
    assert!(screen.lines().any(|l| l.starts_with("1 randread ")), "{screen}");
    drop(t);

    // stderr to a file, stdout on the terminal: the file has the messages and not one control
    // character.
    let t = Tmux::run(&s, &args(&run(&[])), "2> err.txt");
    let screen = t.ended(0, never_a_status);
    assert!(screen.lines().any(|l| l.starts_with("1 randread ")), "{screen}");
    let err = std::fs::read(s.path().join("err.txt")).unwrap();
    assert!(
        String::from_utf8_lossy(&err).contains("storlab: stored as run 3"),
        "{}",
        String::from_utf8_lossy(&err)
    );
    assert_eq!(control_characters(&err), b"", "{}", String::from_utf8_lossy(&err));

    // And the same for a study, outside any terminal.
    let out = s.storlab(&[
        "sweep",
        "--target",
        data.to_str().unwrap(),
        "--phase",
        "write",
        "--size",
        "8m",
        "--vary",
        "bs=4k,64k",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        control_characters(&out.stderr),
        b"",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ctrl_c_in_the_pane_marks_the_phase_interrupted() {
    let s = Scratch::new();
    let data = s.data();
    let pane = Tmux::run(
        &s,
        &[
            "run",
            "--target",
            data.to_str().unwrap(),
            "--phase",
            "write",
            "--size",
            "16m",
            "--runtime",
            "30s",
            "--rate",
            "4MiB/s",
        ],
        "",
    );
    pane.until("the write's status line", |s| status_of(s).is_some(), |_| {});
    let ok = std::process::Command::new("tmux")
        .args(["-L", &pane.socket, "send-keys", "C-c"])
        .status()
        .unwrap();
    assert!(ok.success());
    let screen = pane.ended(130, |_| {});
    assert!(
        screen
            .lines()
            .any(|l| l.trim_end() == "run 1 [1/1] write      interrupted"),
        "{screen}"
    );
    assert!(screen.contains("status aborted"), "{screen}");
}
