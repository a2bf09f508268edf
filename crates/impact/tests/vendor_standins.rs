//! The vendor tasks against stand-in programs: no 3ware or LSI controller and no ZFS exist on
//! these machines, so small shell scripts named tw_cli, storcli and zpool stand in for the real
//! tools. Each keeps its state in a file, advances 25 % per look while a task runs, and prints
//! what the vendor's documentation shows (3ware CLI guide: `show` lists each unit's Status and
//! %V/I/M; StorCLI: `show cc` has Progress% and Status; zpool status: the "scan:" lines).

use std::path::Path;
use std::time::Duration;

use storlab_impact::kinds::parse;
use storlab_impact::task::{wait_done, TaskState};

const TW_CLI: &str = r#"#!/bin/sh
st="$STANDIN_DIR/tw.state"; [ -f "$st" ] || echo idle > "$st"
[ "$1" = /c0/u0 ] || { echo "Error: (CLI:008) Invalid ID specified." >&2; exit 1; }
case "$2 $3" in
"start verify") echo 0 > "$st"; echo "Verifying unit $1 ... Done." ;;
"stop verify") echo idle > "$st"; echo "Stopping verify on unit $1 ... Done." ;;
"show ") s=$(cat "$st")
  echo "Unit     UnitType  Status         %RCmpl  %V/I/M  Stripe  Size(GB)  Cache  AVrfy"
  echo "------------------------------------------------------------------------------"
  if [ "$s" = idle ]; then echo "u0       RAID-5    OK             -       -       64K     1396.95   RiW    ON"
  else echo "u0       RAID-5    VERIFYING      -       $s%     64K     1396.95   RiW    ON"
       n=$((s+25)); if [ $n -gt 100 ]; then echo idle > "$st"; else echo $n > "$st"; fi; fi ;;
*) echo "Error: (CLI:008) Invalid ID specified." >&2; exit 1 ;;
esac
"#;

const STORCLI: &str = r#"#!/bin/sh
st="$STANDIN_DIR/cc.state"; [ -f "$st" ] || echo idle > "$st"
case "$2 $3" in
"start cc") echo 0 > "$st"; echo "Status = Success" ;;
"stop cc") echo idle > "$st"; echo "Status = Success" ;;
"show cc") s=$(cat "$st")
  echo "VD Operation Status :"; echo "==================="; echo
  echo "------------------------------------------------------------"
  echo "VD Operation Progress% Status          Estimited Time Left"
  echo "------------------------------------------------------------"
  if [ "$s" = idle ]; then echo " 0 CC        -         Not in progress -"
  else echo " 0 CC        $s         In progress     26 Minutes"
       n=$((s+25)); if [ $n -gt 100 ]; then echo idle > "$st"; else echo $n > "$st"; fi; fi ;;
*) echo "Status = Failure" ; exit 1 ;;
esac
"#;

const ZPOOL: &str = r#"#!/bin/sh
st="$STANDIN_DIR/zfs.state"; [ -f "$st" ] || echo none > "$st"
case "$1 $2" in
"scrub -s") echo canceled > "$st" ;;
"scrub $3"|"scrub tank") echo 0 > "$st" ;;
"status tank") s=$(cat "$st")
  echo "  pool: tank"; echo " state: ONLINE"
  case "$s" in
  none) echo "  scan: none requested" ;;
  done) echo "  scan: scrub repaired 0B in 00:00:04 with 0 errors on Sun Nov 22 01:00:00 2026" ;;
  canceled) echo "  scan: scrub canceled on Sun Nov 22 01:00:00 2026" ;;
  *) echo "  scan: scrub in progress since Sun Nov 22 01:00:00 2026"
     echo "        1.2G scanned at 300M/s, 1.0G issued at 250M/s, 4.0G total"
     echo "        0B repaired, $s.00% done, 00:00:12 to go"
     n=$((s+25)); if [ $n -gt 100 ]; then echo done > "$st"; else echo $n > "$st"; fi ;;
  esac
  echo "config:" ;;
*) echo "cannot open '$2': no such pool" >&2; exit 1 ;;
esac
"#;

fn install(dir: &Path, name: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn vendor_tasks_start_progress_finish_and_stop() {
    let dir = tempfile::tempdir().unwrap();
    install(dir.path(), "tw_cli", TW_CLI);
    install(dir.path(), "storcli", STORCLI);
    install(dir.path(), "zpool", ZPOOL);
    let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
    std::env::set_var("PATH", path);
    std::env::set_var("STANDIN_DIR", dir.path());

    for (spec, done_detail) in [
        ("tw_cli-verify:/c0/u0", "unit status OK"),
        ("storcli-cc:/c0/v0", "Not in progress -"),
        ("zfs-scrub:tank", "scrub repaired 0B in 00:00:04 with 0 errors"),
    ] {
        let mut t = parse(spec).unwrap();
        assert_eq!(t.poll().unwrap(), TaskState::Idle, "{spec}");
        t.start().unwrap();
        let (end, looks) = wait_done(t.as_mut(), Duration::from_millis(1), Duration::from_secs(10)).unwrap();
        let seen: Vec<f64> = looks
            .iter()
            .filter_map(|(_, s)| match s {
                TaskState::Running(p) => p.percent,
                _ => None,
            })
            .collect();
        assert_eq!(
            seen,
            vec![0.0, 25.0, 50.0, 75.0, 100.0],
            "{spec}: progress as the tool printed it"
        );
        match end {
            TaskState::Done {
                completed: true,
                detail,
            } => assert!(detail.contains(done_detail), "{spec}: {detail}"),
            other => panic!("{spec}: {other:?}"),
        }
        // Started again and stopped halfway.
        t.start().unwrap();
        assert!(matches!(t.poll().unwrap(), TaskState::Running(_)));
        t.stop().unwrap();
        let state = t.poll().unwrap();
        assert!(matches!(state, TaskState::Done { .. }), "{spec}: {state:?}");
    }
    // The zfs stand-in reports a cancelled scrub as such.
    let mut z = parse("zfs-scrub:tank").unwrap();
    z.start().unwrap();
    z.stop().unwrap();
    assert!(matches!(z.poll().unwrap(), TaskState::Done { completed: false, .. }));
    // A unit the tool does not know: its error is shown.
    let mut t = parse("tw_cli-verify:/c9/u9").unwrap();
    let e = t.start().unwrap_err().to_string();
    assert!(e.contains("Invalid ID specified"), "{e}");
    assert!(parse("storcli-cc:/c0/u0").err().unwrap().to_string().contains("/c0/v0"));
    let e = parse("zfs-scrub:nopool").unwrap().poll().unwrap_err().to_string();
    assert!(e.contains("no such pool"), "{e}");
}
