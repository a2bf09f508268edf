//! A challenge's definition from the command line or a job file's `[challenge]` table, checked
//! whole before anything is written: pools that exist and differ, sizes and times that make
//! sense, faults that name a known action, a known pool and a time within the challenge.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use storlab_model::challenge::{ChallengeSpec, Fault, FaultAction, Pool, Spread};
use storlab_units::{Duration, Size};

use crate::ChallengeError;

/// What the user gave, as text (flags, or a job file's `[challenge]` table); every field
/// optional so that flags override the file. The flags are declared here once (the binary
/// flattens them into its command line); `direct` is the binary's switch.
#[derive(Debug, Clone, Default, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct SpecInput {
    /// A pool: NAME=DIR; repeatable (pools may share a filesystem, not a directory).
    #[arg(long = "pool", value_name = "NAME=DIR")]
    #[serde(default)]
    pub pool: Vec<String>,
    /// Writer threads per host (default 1).
    #[arg(long)]
    pub writers: Option<u32>,
    /// Reader threads per host (default 1).
    #[arg(long)]
    pub readers: Option<u32>,
    /// Each file's size (default 2g).
    #[arg(long = "file-size", value_name = "SIZE")]
    pub file_size: Option<String>,
    /// The request size (default 1m).
    #[arg(long, value_name = "SIZE")]
    pub bs: Option<String>,
    /// How long the challenge runs (5d, 12h, 90s).
    #[arg(long, value_name = "TIME")]
    pub duration: Option<String>,
    /// How many files are written in all.
    #[arg(long, value_name = "N")]
    pub files: Option<u64>,
    /// How writers choose a pool: equal (in turn) or least-loaded (lowest write rate over the
    /// last long-term window).
    #[arg(long, value_name = "HOW")]
    pub spread: Option<String>,
    /// At most this many finished, unread files per pool; writers wait beyond it (default 16).
    #[arg(long, value_name = "N")]
    pub backlog: Option<u64>,
    /// Between samples (default 10s).
    #[arg(long, value_name = "TIME")]
    pub interval: Option<String>,
    /// The window of the long-term averages (default 100s).
    #[arg(long, value_name = "TIME")]
    pub lt: Option<String>,
    /// The seed of the files' data.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A planned fault, AT:ACTION:TARGET[:FOR]; repeatable. Actions: unmount, read-only,
    /// detach (TARGET a pool), drain (a pool), stop-writers, stop-readers (all or a number),
    /// command (the rest is a command run on this host), task (an impact task).
    // A job file may also give each as a table: `[[challenge.fault]]` with at, action, target
    // and for.
    #[arg(long = "fault", value_name = "AT:ACTION:TARGET[:FOR]")]
    #[serde(default, deserialize_with = "faults_text")]
    pub fault: Vec<String>,
    /// How long a host's claim on a file in flight lasts unrenewed; after it, another agent
    /// takes the file over (default 60s).
    #[arg(long, value_name = "TIME")]
    pub lease: Option<String>,
    /// O_DIRECT (the flag is the binary's `--direct` switch).
    #[arg(skip)]
    pub direct: Option<bool>,
    /// Where a job file gave each of its keys (`file-size` → "FILE, line 4, key file_size"), so
    /// that a value refused is named where it was written, not as a flag.
    #[arg(skip)]
    #[serde(skip)]
    pub origins: std::collections::BTreeMap<String, String>,
}

/// A fault in a job file: the flag's text, or a table.
#[derive(Deserialize)]
#[serde(untagged)]
enum FaultEntry {
    Text(String),
    Table(FaultTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultTable {
    at: String,
    action: String,
    target: String,
    #[serde(rename = "for")]
    for_: Option<String>,
}

/// Faults as the flag's text, whichever form the job file used.
fn faults_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let entries = Vec::<FaultEntry>::deserialize(d)?;
    Ok(entries
        .into_iter()
        .map(|e| match e {
            FaultEntry::Text(t) => t,
            FaultEntry::Table(t) => match t.for_ {
                Some(f) => format!("{}:{}:{}:{f}", t.at, t.action, t.target),
                None => format!("{}:{}:{}", t.at, t.action, t.target),
            },
        })
        .collect())
}

/// A job file holding a `[challenge]` table.
#[derive(Debug, Deserialize)]
struct JobFile {
    challenge: SpecInput,
}

impl SpecInput {
    /// The `[challenge]` table of a job file.
    pub fn from_file(path: &Path) -> Result<SpecInput, ChallengeError> {
        let text = storlab_model::source::read_text(path).map_err(ChallengeError::Input)?;
        let mut input = toml::from_str::<JobFile>(&text).map(|f| f.challenge).map_err(|e| {
            let line = e
                .span()
                .map(|s| format!(":{}", storlab_model::source::line_of(&text, s.start)))
                .unwrap_or_default();
            let said = storlab_model::names::serde_did_you_mean(e.message());
            ChallengeError::Input(format!("{}{line}: {said}", path.display()))
        })?;
        // Each key of the [challenge] table with its line (the table's keys are the flags'
        // names with '_' for '-').
        let mut in_table = false;
        for (n, l) in text.lines().enumerate() {
            let t = l.trim();
            if t.starts_with('[') {
                in_table = t.starts_with("[challenge");
                continue;
            }
            if let Some((key, _)) = t.split_once('=').filter(|_| in_table) {
                let key = key.trim();
                input
                    .origins
                    .entry(key.replace('_', "-"))
                    .or_insert_with(|| format!("{}, line {}, key {key}", path.display(), n + 1));
            }
        }
        Ok(input)
    }

    /// `message` about a value (it begins `--KEY`), naming where the value was given: the flag,
    /// or the job file's line and key.
    fn named(&self, message: String) -> String {
        let key = message.strip_prefix("--").map(|m| {
            m.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .next()
                .unwrap_or("")
        });
        match key.and_then(|k| self.origins.get(k).map(|o| (k, o))) {
            Some((k, origin)) => format!("{origin}:{}", message[2 + k.len()..].trim_start_matches(':')),
            None => message,
        }
    }

    /// `self` with every field `flags` sets taken from `flags` (pools and faults: the flags'
    /// when they give any).
    pub fn overlay(mut self, flags: SpecInput) -> SpecInput {
        if !flags.pool.is_empty() {
            self.pool = flags.pool;
            self.origins.remove("pool");
        }
        if !flags.fault.is_empty() {
            self.fault = flags.fault;
            self.origins.remove("fault");
        }
        macro_rules! take {
            ($($f:ident),*) => { $(if flags.$f.is_some() {
                self.$f = flags.$f;
                self.origins.remove(&stringify!($f).replace('_', "-"));
            })* };
        }
        take!(writers, readers, file_size, bs, duration, files, spread, backlog, interval, lt, seed, lease, direct);
        self
    }
}

fn bad(msg: impl Into<String>) -> ChallengeError {
    ChallengeError::Input(msg.into())
}

fn size(what: &str, text: &Option<String>, default: u64) -> Result<u64, ChallengeError> {
    match text {
        None => Ok(default),
        Some(t) => t
            .parse::<Size>()
            .map(|s| s.bytes())
            .map_err(|e| bad(format!("--{what} {t}: {e}"))),
    }
}

fn seconds(what: &str, text: &Option<String>) -> Result<Option<f64>, ChallengeError> {
    match text {
        None => Ok(None),
        Some(t) => t
            .parse::<Duration>()
            .map(|d| Some(d.secs_f64()))
            .map_err(|e| bad(format!("--{what} {t}: {e}"))),
    }
}

/// Reads `NAME=DIR`.
pub fn parse_pool(text: &str) -> Result<Pool, ChallengeError> {
    let (name, dir) = text
        .split_once('=')
        .ok_or_else(|| bad(format!("--pool {text}: expected NAME=DIR (P1=/data1)")))?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(bad(format!(
            "--pool {text}: the name '{name}' must be letters, digits, '-', '_' or '.'"
        )));
    }
    if dir.trim().is_empty() {
        return Err(bad(format!("--pool {text}: no directory after '='")));
    }
    Ok(Pool {
        name: name.to_string(),
        path: PathBuf::from(dir.trim()),
    })
}

/// Reads `AT:ACTION:TARGET[:FOR]` (AT and FOR durations: 60s, 2m, 1h).
pub fn parse_fault(text: &str) -> Result<Fault, ChallengeError> {
    let parts: Vec<&str> = text.splitn(4, ':').collect();
    if parts.len() < 3 {
        return Err(bad(format!(
            "--fault {text}: expected AT:ACTION:TARGET[:FOR], e.g. 60s:unmount:P2:20s or 2h:stop-readers:all:1h"
        )));
    }
    let at = parts[0]
        .parse::<Duration>()
        .map_err(|e| bad(format!("--fault {text}: the time '{}': {e}", parts[0])))?
        .secs_f64();
    let action: FaultAction = parts[1].parse().map_err(|_| {
        bad(format!(
            "--fault {text}: unknown action '{}'; the actions are {}",
            parts[1],
            FaultAction::names()
        ))
    })?;
    // A command or a task may hold colons (btrfs-scrub:/mnt/p1): the whole rest is the target,
    // and FOR does not apply (a command is not undone; a task runs to its end).
    let (target, for_seconds) = if matches!(action, FaultAction::Command | FaultAction::Task) {
        (parts[2..].join(":"), None)
    } else {
        let f = match parts.get(3) {
            Some(f) => Some(
                f.parse::<Duration>()
                    .map_err(|e| bad(format!("--fault {text}: the duration '{f}': {e}")))?
                    .secs_f64(),
            ),
            None => None,
        };
        (parts[2].to_string(), f)
    };
    if target.trim().is_empty() {
        return Err(bad(format!("--fault {text}: no target")));
    }
    Ok(Fault {
        at,
        action,
        target,
        for_seconds,
    })
}

/// A challenge's definition as `storlab challenge run` and `create` take it: a job file's
/// `[challenge]` table with the flags over it; its flags, declared here once (the binary
/// flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SpecFlags {
    /// A job file with a `[challenge]` table (its keys are these flags' names: pool = [...],
    /// writers, file_size, fault = [...], ...).
    #[arg(long = "job", value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// The definition's own flags (pools, writers, readers, sizes, faults, ...).
    #[command(flatten)]
    pub spec: SpecInput,
    /// Write and read with O_DIRECT, past the page cache (the devices' figures, not memory's).
    #[arg(long)]
    pub direct: bool,
    /// Serve live figures for Prometheus at http://ADDR/metrics while this host takes part
    /// (bytes read and written per pool).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Lock the --metrics endpoint as Prometheus exporters lock theirs: a web configuration file
    /// in the exporter-toolkit's format (tls_server_config: cert_file, key_file; basic_auth_users:
    /// bcrypt hashes). Without it the endpoint is plain HTTP that anyone who reaches it reads.
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub web_config: Option<PathBuf>,
}

impl SpecFlags {
    /// The definition these flags give: the job file's table, if any, with the flags over it.
    pub fn input(&self) -> Result<SpecInput, ChallengeError> {
        let flags = SpecInput {
            direct: self.direct.then_some(true),
            ..self.spec.clone()
        };
        Ok(match &self.job {
            Some(f) => SpecInput::from_file(f)?.overlay(flags),
            None => flags,
        })
    }
}

/// The challenge the input describes, checked whole; a value refused is named where it was
/// given (a flag, or a job file's line and key).
pub fn build(input: &SpecInput) -> Result<ChallengeSpec, ChallengeError> {
    build_checked(input).map_err(|e| match e {
        ChallengeError::Input(m) => ChallengeError::Input(input.named(m)),
        other => other,
    })
}

fn build_checked(input: &SpecInput) -> Result<ChallengeSpec, ChallengeError> {
    let pools = pools(input)?;
    let writers = input.writers.unwrap_or(1);
    let readers = input.readers.unwrap_or(1);
    if writers == 0 && readers == 0 {
        return Err(bad("--writers 0 and --readers 0: nothing would run"));
    }
    let bs = size("bs", &input.bs, 1 << 20)?;
    let file_size = size("file-size", &input.file_size, 2 << 30)?;
    if bs == 0 || !bs.is_multiple_of(4096) {
        return Err(bad(format!(
            "--bs {bs}: a request is a whole number of 4 KiB blocks (each carries a verification header)"
        )));
    }
    if file_size == 0 || !file_size.is_multiple_of(4096) {
        return Err(bad(format!(
            "--file-size {file_size}: a file is a whole number of 4 KiB blocks"
        )));
    }
    let duration = seconds("duration", &input.duration)?;
    if duration.is_none() && input.files.is_none() {
        return Err(bad("say how long: --duration (5d) or --files N"));
    }
    if duration.is_some_and(|d| d <= 0.0) || input.files == Some(0) {
        return Err(bad("--duration and --files must be more than zero"));
    }
    let backlog = input.backlog.unwrap_or(16);
    if backlog == 0 {
        return Err(bad("--backlog 0: writers could never finish a file; give 1 or more"));
    }
    let (interval, lt, lease) = timings(input)?;
    let spread = match &input.spread {
        None => Spread::Equal,
        Some(s) => s.parse().map_err(|e: String| bad(format!("--spread: {e}")))?,
    };
    let faults = faults(input, &pools, duration)?;
    let direct = input.direct.unwrap_or(false);
    if direct {
        for p in &pools {
            crate::files::probe_direct(&p.path).map_err(|e| {
                bad(format!(
                    "--direct: pool {} ({}) does not take O_DIRECT: {e}; leave out --direct for it",
                    p.name,
                    p.path.display()
                ))
            })?;
        }
    }
    Ok(ChallengeSpec {
        pools,
        writers,
        readers,
        file_size,
        bs,
        duration,
        files: input.files,
        spread,
        backlog,
        interval,
        lt,
        seed: input.seed.unwrap_or(0x5107_1ab0),
        faults,
        lease,
        direct,
    })
}

/// The pools: at least one, each named once, each an existing directory of its own.
fn pools(input: &SpecInput) -> Result<Vec<Pool>, ChallengeError> {
    if input.pool.is_empty() {
        return Err(bad("no pools: give at least one --pool NAME=DIR"));
    }
    let pools = input
        .pool
        .iter()
        .map(|p| parse_pool(p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = HashSet::new();
    let mut paths = HashSet::new();
    for p in &pools {
        if !names.insert(p.name.clone()) {
            return Err(bad(format!("two pools are named {}", p.name)));
        }
        let meta = std::fs::metadata(&p.path).map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "does not exist; {}: create the directory first (mkdir -p), or name the pool's mount point",
                    storlab_env::mounts::nearest_existing(&p.path)
                ),
                _ => e.to_string(),
            };
            bad(format!("pool {}: {} {why}", p.name, p.path.display()))
        })?;
        if !meta.is_dir() {
            return Err(bad(format!("pool {}: {} is not a directory", p.name, p.path.display())));
        }
        let real = std::fs::canonicalize(&p.path).map_err(|e| bad(format!("pool {}: {e}", p.name)))?;
        if !paths.insert(real.clone()) {
            return Err(bad(format!(
                "pools share a directory ({}): give each pool its own (several may share a filesystem)",
                real.display()
            )));
        }
    }
    Ok(pools)
}

/// The sample interval, the long-term window and the lease: a lease outlives two renewals.
fn timings(input: &SpecInput) -> Result<(f64, f64, f64), ChallengeError> {
    let interval = seconds("interval", &input.interval)?.unwrap_or(10.0);
    let lt = seconds("lt", &input.lt)?.unwrap_or(100.0);
    if interval <= 0.0 || lt < interval {
        return Err(bad(format!(
            "--interval {interval} s and --lt {lt} s: the interval must be more than zero and the long-term window at least one interval"
        )));
    }
    let lease = seconds("lease", &input.lease)?.unwrap_or(60.0);
    if lease < 2.0 * interval.min(10.0) {
        return Err(bad(format!(
            "--lease {lease} s: a lease is renewed every interval (at most every 10 s); give at least twice that"
        )));
    }
    Ok((interval, lt, lease))
}

/// The fault plan: each fault before the end, on a pool there is, a count of workers, and a
/// pool taken away said when it comes back.
fn faults(input: &SpecInput, pools: &[Pool], duration: Option<f64>) -> Result<Vec<Fault>, ChallengeError> {
    let faults = input
        .fault
        .iter()
        .map(|f| parse_fault(f))
        .collect::<Result<Vec<_>, _>>()?;
    for (f, text) in faults.iter().zip(&input.fault) {
        if let Some(d) = duration.filter(|d| f.at >= *d) {
            return Err(bad(format!(
                "--fault {text}: at {} s, after the challenge's end ({d} s)",
                f.at
            )));
        }
        let on_pool = matches!(
            f.action,
            FaultAction::Unmount | FaultAction::ReadOnly | FaultAction::Detach | FaultAction::Drain
        );
        if on_pool && !pools.iter().any(|p| p.name == f.target) {
            return Err(bad(format!(
                "--fault {text}: no pool named '{}' (the pools: {})",
                f.target,
                pools.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        if matches!(f.action, FaultAction::StopWriters | FaultAction::StopReaders)
            && f.target != "all"
            && f.target.parse::<u32>().is_err()
        {
            return Err(bad(format!(
                "--fault {text}: the target is 'all' or a number of workers"
            )));
        }
        if matches!(f.action, FaultAction::Unmount | FaultAction::ReadOnly) && f.for_seconds.is_none() {
            return Err(bad(format!(
                "--fault {text}: say when the pool comes back (AT:{}:{}:FOR)",
                f.action, f.target
            )));
        }
    }
    crate::faults::check(pools, &faults)?;
    Ok(faults)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(dirs: &[&Path]) -> SpecInput {
        SpecInput {
            pool: dirs
                .iter()
                .enumerate()
                .map(|(i, d)| format!("P{}={}", i + 1, d.display()))
                .collect(),
            files: Some(10),
            ..SpecInput::default()
        }
    }

    #[test]
    fn a_job_file_gives_faults_as_text_or_as_tables() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("challenge.toml");
        std::fs::write(
            &job,
            format!(
                r#"
[challenge]
pool = ["P1={0}"]
files = 10
fault = ["10s:drain:P1:5s"]

[[challenge.fault]]
at = "20s"
action = "stop-writers"
target = "all"
for = "1m"
"#,
                dir.path().display()
            ),
        )
        .unwrap();
        // Both forms in one file is a TOML error (a key given twice); each alone works.
        assert!(SpecInput::from_file(&job).is_err());
        let text = std::fs::read_to_string(&job)
            .unwrap()
            .replace("fault = [\"10s:drain:P1:5s\"]\n", "");
        std::fs::write(&job, text).unwrap();
        let spec = build(&SpecInput::from_file(&job).unwrap()).unwrap();
        assert_eq!(spec.faults.len(), 1);
        let f = &spec.faults[0];
        assert_eq!(
            (f.at, f.action, f.target.as_str(), f.for_seconds),
            (20.0, FaultAction::StopWriters, "all", Some(60.0))
        );
    }

    #[test]
    fn the_flags_go_over_the_job_files_table() {
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("challenge.toml");
        let pool = format!("P1={}", dir.path().display());
        std::fs::write(
            &job,
            format!("[challenge]\npool = [\"{pool}\"]\nfiles = 10\nwriters = 2\n"),
        )
        .unwrap();
        let flags = SpecFlags {
            job: Some(job),
            spec: SpecInput {
                writers: Some(5),
                ..SpecInput::default()
            },
            direct: true,
            metrics: None,
            web_config: None,
        };
        let i = flags.input().unwrap();
        // The file's pool and count, the flag's writers over the file's, --direct as a flag.
        assert_eq!(
            (i.pool, i.files, i.writers, i.direct),
            (vec![pool], Some(10), Some(5), Some(true))
        );
        // Without --direct the file decides (here: it says nothing).
        let i = SpecFlags { direct: false, ..flags }.input().unwrap();
        assert_eq!(i.direct, None);
        let missing = SpecFlags {
            job: Some(dir.path().join("nope.toml")),
            ..SpecFlags::default()
        };
        assert!(missing.input().unwrap_err().to_string().contains("nope.toml"));
    }

    #[test]
    fn good_input_builds_and_bad_input_says_what() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let s = build(&input(&[a.path(), b.path()])).unwrap();
        assert_eq!((s.pools.len(), s.bs, s.file_size, s.backlog), (2, 1 << 20, 2 << 30, 16));
        let same = build(&input(&[a.path(), a.path()])).unwrap_err().to_string();
        assert!(same.contains("share a directory"), "{same}");
        let missing = build(&input(&[Path::new("/nonexistent/pool")]))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("P1") && missing.contains("/nonexistent/pool"),
            "{missing}"
        );
        let zero = build(&SpecInput {
            backlog: Some(0),
            ..input(&[a.path()])
        })
        .unwrap_err()
        .to_string();
        assert!(zero.contains("--backlog 0"), "{zero}");
        let late = build(&SpecInput {
            duration: Some("60s".into()),
            fault: vec!["90s:drain:P1:10s".into()],
            ..input(&[a.path()])
        })
        .unwrap_err()
        .to_string();
        assert!(late.contains("after the challenge's end"), "{late}");
        let unknown = parse_fault("10s:explode:P1").unwrap_err().to_string();
        assert!(
            unknown.contains("unknown action 'explode'") && unknown.contains("drain"),
            "{unknown}"
        );
        let nopool = build(&SpecInput {
            fault: vec!["10s:drain:P9:5s".into()],
            ..input(&[a.path()])
        })
        .unwrap_err()
        .to_string();
        assert!(nopool.contains("no pool named 'P9'"), "{nopool}");
    }

    #[test]
    fn faults_read_with_commands_whole() {
        let f = parse_fault("2m:command:ssh st05 'echo 1 > /sys/x'").unwrap();
        assert_eq!(
            (f.at, f.action, f.target.as_str()),
            (120.0, FaultAction::Command, "ssh st05 'echo 1 > /sys/x'")
        );
        let f = parse_fault("60s:unmount:P2:20s").unwrap();
        assert_eq!((f.at, f.for_seconds), (60.0, Some(20.0)));
    }
}
