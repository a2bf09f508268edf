//! What `storlab monitor run` is asked: its flags over the configuration file over the
//! defaults, every one checked (the pools resolved, the timings and retention, the metrics
//! address bound) before anything is stored, so that a refused monitor leaves nothing behind.

use std::path::PathBuf;

use storlab_model::monitor::SeriesKind;

use crate::config::MonitorFile;
use crate::run::{spec, stop_on_signal, MonitorConfig, BENCH_INTERVAL, MIN_INTERVAL};
use crate::sampler::Files;
use crate::{pools, MonitorError};

/// The flags of `storlab monitor run` as given (None: not given), declared here once (the
/// binary flattens them into its command line).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunFlags {
    /// A pool: a name and its block devices or mount points (a mount point stands for its
    /// filesystem and the devices under it, through md, device-mapper and btrfs);
    /// repeatable. Replaces the configuration file's pools.
    #[arg(long = "pool", value_name = "NAME=DEV|MOUNT[,…]")]
    pub pools: Vec<String>,
    /// A configuration file (TOML, a [monitor] table; /etc/storlab/monitor.toml in the
    /// packages): pools and settings, the flags given here win.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Time between samples, at least 100ms [default: 10s].
    #[arg(long, value_name = "DURATION")]
    pub interval: Option<String>,
    /// The long-term window: the averages' span, and the second resolution kept [default:
    /// 100s].
    #[arg(long, value_name = "DURATION")]
    pub lt: Option<String>,
    /// Serve Prometheus metrics at ADDR:PORT/metrics: 127.0.0.1:PORT (this host only), an
    /// address of this host, or 0.0.0.0:PORT (every interface: whoever reaches the host reads
    /// them, unless --web-config locks them).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Lock the --metrics endpoint as Prometheus exporters lock theirs: a web configuration file
    /// in the exporter-toolkit's format (tls_server_config: cert_file, key_file; basic_auth_users:
    /// bcrypt hashes). Without it the endpoint is plain HTTP that anyone who reaches it reads.
    #[arg(long, value_name = "FILE")]
    pub web_config: Option<PathBuf>,
    /// Keep samples this long in all, hourly averages after --keep-lt [default: 365d].
    #[arg(long, value_name = "DURATION")]
    pub retain: Option<String>,
    /// Keep every sample this long, then its long-term averages [default: 2d].
    #[arg(long = "keep-full", value_name = "DURATION")]
    pub keep_full: Option<String>,
    /// Keep the long-term averages this long, then hourly ones [default: 30d].
    #[arg(long = "keep-lt", value_name = "DURATION")]
    pub keep_lt: Option<String>,
    /// Stop after this long (default: until stopped).
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Read disk counters from this file instead of /proc/diskstats (tests: counters
    /// that wrap).
    #[arg(long, value_name = "FILE", hide = true)]
    pub diskstats: Option<PathBuf>,
    /// Allow intervals down to 1ms (bench/monitorbench.py: a day of 10 s samples in 86 s).
    #[arg(long = "bench-interval", hide = true)]
    pub bench_interval: bool,
    /// No line on stderr per event.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A monitor ready to start: everything checked, its endpoint bound, nothing stored yet.
pub struct Prepared {
    /// What the loop is given.
    pub config: MonitorConfig,
    /// The database named by the flag or the file (None: the default).
    pub db: Option<String>,
    /// No line per event.
    pub quiet: bool,
}

impl Prepared {
    /// What the monitor watches, in words: its pools, series and interval.
    pub fn summary(&self) -> String {
        let disks = self
            .config
            .watches
            .iter()
            .filter(|w| w.series.kind == SeriesKind::Disk)
            .count();
        format!(
            "{} pools, {} series ({disks} disks), a sample every {}",
            self.config.spec.pools.len(),
            self.config.watches.len(),
            storlab_units::Duration((self.config.spec.interval * 1e9) as u64),
        )
    }
}

/// A duration in seconds, from `(value, where it was given)`.
fn secs((v, origin): (String, String)) -> Result<f64, MonitorError> {
    v.parse::<storlab_units::Duration>()
        .map(|d| d.secs_f64())
        .map_err(|e| MonitorError::Input(format!("{origin} {v}: {e}")))
}

/// The flag `--NAME`, else the file's key (`NAME` with '_' for '-'), else the default; with
/// where it was given, as a message names it.
fn pick(
    name: &str,
    flag: &Option<String>,
    file: &MonitorFile,
    value: &Option<String>,
    default: &str,
) -> (String, String) {
    match (flag, value) {
        (Some(v), _) => (v.clone(), format!("--{name}")),
        (None, Some(v)) => (v.clone(), format!("{}:", file.origin(&name.replace('-', "_")))),
        (None, None) => (default.to_string(), format!("--{name}'s default")),
    }
}

/// Reads the file, lays the flags over it, and checks everything; the metrics address is bound
/// now, so that a taken port is refused before the first sample. The stop flag is set by
/// Ctrl-C and SIGTERM from here on.
pub fn prepare(f: RunFlags, db: Option<String>) -> Result<Prepared, MonitorError> {
    let file = f
        .config
        .as_deref()
        .map(MonitorFile::read)
        .transpose()?
        .unwrap_or_default();
    let interval = secs(pick("interval", &f.interval, &file, &file.interval, "10s"))?;
    let lt = secs(pick("lt", &f.lt, &file, &file.lt, "100s"))?;
    let retain = secs(pick("retain", &f.retain, &file, &file.retain, "365d"))?;
    let keep_full = secs(pick("keep-full", &f.keep_full, &file, &file.keep_full, "2d"))?;
    let keep_lt = secs(pick("keep-lt", &f.keep_lt, &file, &file.keep_lt, "30d"))?;
    let duration = f.duration.clone().map(|d| secs((d, "--duration".into()))).transpose()?;
    let pool_args = if f.pools.is_empty() { file.pool_args() } else { f.pools };
    let floor = if f.bench_interval { BENCH_INTERVAL } else { MIN_INTERVAL };
    let spec = spec(
        pools::parse(&pool_args)?,
        interval,
        floor,
        lt,
        Some(keep_full),
        Some(keep_lt),
        Some(retain),
    )?;
    if duration.is_some_and(|d| d <= 0.0) {
        return Err(MonitorError::Input(
            "--duration must be above 0 (leave it out to run until stopped)".into(),
        ));
    }
    let watches = pools::resolve(&spec.pools)?;
    let web_config = f
        .web_config
        .clone()
        .or_else(|| file.web_config.clone().map(PathBuf::from));
    let metrics = f
        .metrics
        .or_else(|| file.metrics.clone())
        .map(|a| storlab_metrics::endpoint::bind(&a, web_config.as_deref()))
        .transpose()
        .map_err(|e| MonitorError::Input(e.to_string()))?;
    let mut files = Files::default();
    if let Some(d) = f.diskstats {
        if !d.is_file() {
            return Err(MonitorError::Input(format!(
                "--diskstats {}: no such file",
                d.display()
            )));
        }
        files.diskstats = d;
    }
    Ok(Prepared {
        config: MonitorConfig {
            spec,
            watches,
            files,
            duration,
            metrics,
            stop: stop_on_signal(),
            host: storlab_env::hostname(),
        },
        db: db.or_else(|| file.db.clone()),
        quiet: f.quiet || file.quiet.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool on the root filesystem: a mount point every machine has (the monitor only reads).
    fn root_pool(_d: &tempfile::TempDir) -> String {
        "P1=/".into()
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_the_defaults() {
        let d = tempfile::tempdir().unwrap();
        let conf = d.path().join("monitor.toml");
        std::fs::write(
            &conf,
            "[monitor]\ninterval = \"5s\"\nlt = \"50s\"\nquiet = true\ndb = \"/x.db\"\n\n[[monitor.pool]]\nname = \"F\"\nmembers = [\"/\"]\n",
        )
        .unwrap();
        let p = prepare(
            RunFlags {
                config: Some(conf.clone()),
                lt: Some("60s".into()),
                ..Default::default()
            },
            None,
        )
        .unwrap();
        assert_eq!(p.config.spec.interval, 5.0);
        assert_eq!(p.config.spec.lt, 60.0);
        assert_eq!(p.config.spec.keep_full, 2.0 * 86400.0);
        assert_eq!(p.config.spec.pools[0].name, "F");
        assert!(p.quiet);
        assert_eq!(p.db.as_deref(), Some("/x.db"));
        // --pool replaces the file's pools.
        let p = prepare(
            RunFlags {
                config: Some(conf),
                pools: vec![root_pool(&d).replace("P1", "G")],
                ..Default::default()
            },
            Some("/y.db".into()),
        )
        .unwrap();
        // --db wins over the file's.
        assert_eq!(p.db.as_deref(), Some("/y.db"));
        assert_eq!(p.config.spec.pools.len(), 1);
        assert_eq!(p.config.spec.pools[0].name, "G");
        assert!(p.summary().starts_with("1 pools, "), "{}", p.summary());
        // The file still gives the interval; only its pools were replaced.
        assert!(p.summary().ends_with("a sample every 5s"), "{}", p.summary());
    }

    #[test]
    fn refusals_name_the_flag() {
        let d = tempfile::tempdir().unwrap();
        let err = |f: RunFlags| prepare(f, None).err().map(|e| e.to_string()).unwrap_or_default();
        let base = || RunFlags {
            pools: vec![root_pool(&d)],
            ..Default::default()
        };
        // A value the configuration file gives is named by its line and key, not as a flag.
        let conf = d.path().join("m.toml");
        std::fs::write(&conf, "[monitor]\nlt = \"100s\"\ninterval = \"10x\"\n").unwrap();
        let e = err(RunFlags {
            config: Some(conf.clone()),
            ..base()
        });
        assert!(
            e.starts_with(&format!("--config {}, line 3, key interval: 10x: ", conf.display())),
            "{e}"
        );
        assert_eq!(
            err(RunFlags {
                interval: Some("soon".into()),
                ..base()
            })
            .split(':')
            .next(),
            Some("--interval soon")
        );
        assert_eq!(
            err(RunFlags {
                duration: Some("0s".into()),
                ..base()
            }),
            "--duration must be above 0 (leave it out to run until stopped)"
        );
        assert_eq!(
            err(RunFlags {
                diskstats: Some(d.path().join("none")),
                ..base()
            }),
            format!("--diskstats {}: no such file", d.path().join("none").display())
        );
        assert!(err(RunFlags::default()).starts_with("no pool to monitor"));
    }
}
