//! `storlab monitor run | stats | events`: the monitor, its work done by crates/monitor, its
//! record kept by crates/store, its tables drawn by crates/report.

use anyhow::Result;
use storlab_metrics::endpoint;
use storlab_model::monitor::SeriesKind;
use storlab_monitor::config::MonitorFile;
use storlab_monitor::pools;
use storlab_monitor::run::{now, spec, stop_on_signal, MonitorConfig};
use storlab_monitor::sampler::Files;
use storlab_monitor::stats::{compute, moment};
use storlab_report::challenge::{stats_data, stats_table, ChallengeUnit};
use storlab_report::monitor::{events_table, figures_table, utc};
use storlab_store::{MonitorWindow, Store};

use crate::cli::{DbArgs, MonitorCmd, OutputArgs};
use crate::results::{open_existing, open_new, print_json};
use crate::usage;

pub fn dispatch(c: MonitorCmd) -> Result<u8> {
    match c {
        MonitorCmd::Run {
            pools,
            config,
            interval,
            lt,
            metrics,
            retain,
            keep_full,
            keep_lt,
            duration,
            diskstats,
            bench_interval,
            quiet,
            db,
        } => {
            let file = config
                .as_deref()
                .map(MonitorFile::read)
                .transpose()?
                .unwrap_or_default();
            // The flags win over the file, the file over the defaults.
            let pick = |flag: Option<String>, from_file: &Option<String>, default: &str| {
                flag.or_else(|| from_file.clone())
                    .unwrap_or_else(|| default.to_string())
            };
            let secs = |flag: &str, v: &str| -> Result<f64> {
                v.parse::<storlab_units::Duration>()
                    .map(|d| d.secs_f64())
                    .map_err(|e| usage(format!("--{flag} {v}: {e}")))
            };
            let opts = RunFlags {
                fast: bench_interval,
                interval: secs("interval", &pick(interval, &file.interval, "10s"))?,
                lt: secs("lt", &pick(lt, &file.lt, "100s"))?,
                retain: secs("retain", &pick(retain, &file.retain, "365d"))?,
                keep_full: secs("keep-full", &pick(keep_full, &file.keep_full, "2d"))?,
                keep_lt: secs("keep-lt", &pick(keep_lt, &file.keep_lt, "30d"))?,
                duration: duration.as_deref().map(|d| secs("duration", d)).transpose()?,
            };
            let pools = if pools.is_empty() { file.pool_args() } else { pools };
            let metrics = metrics.or_else(|| file.metrics.clone());
            let db = DbArgs {
                db: db.db.or_else(|| file.db.clone()),
            };
            let quiet = quiet || file.quiet.unwrap_or(false);
            run(&pools, opts, metrics.as_deref(), diskstats, quiet, &db)
        }
        MonitorCmd::Stats {
            from,
            to,
            pools,
            host,
            all_hosts,
            mib,
            output,
        } => stats(
            from.as_deref(),
            to.as_deref(),
            &pools,
            host_filter(host, all_hosts).as_deref(),
            mib,
            &output,
        ),
        MonitorCmd::Events {
            from,
            to,
            host,
            all_hosts,
            output,
        } => events(
            from.as_deref(),
            to.as_deref(),
            host_filter(host, all_hosts).as_deref(),
            &output,
        ),
    }
}

struct RunFlags {
    /// The benchmark's hidden --bench-interval: intervals down to 1 ms.
    fast: bool,
    interval: f64,
    lt: f64,
    retain: f64,
    keep_full: f64,
    keep_lt: f64,
    duration: Option<f64>,
}

/// The host whose monitors a reading takes: the one named, this one, or (None) every host.
fn host_filter(host: Option<String>, all: bool) -> Option<String> {
    if all {
        None
    } else {
        Some(host.unwrap_or_else(storlab_env::hostname))
    }
}

/// `storlab monitor run`: everything is checked (pools, timings, the metrics address, another
/// monitor on this database) before the first sample.
fn run(
    pool_args: &[String],
    f: RunFlags,
    metrics_addr: Option<&str>,
    diskstats: Option<std::path::PathBuf>,
    quiet: bool,
    db: &DbArgs,
) -> Result<u8> {
    let pool_specs = pools::parse(pool_args)?;
    let floor = if f.fast {
        storlab_monitor::run::BENCH_INTERVAL
    } else {
        storlab_monitor::run::MIN_INTERVAL
    };
    let spec = spec(
        pool_specs,
        f.interval,
        floor,
        f.lt,
        Some(f.keep_full),
        Some(f.keep_lt),
        Some(f.retain),
    )?;
    if f.duration.is_some_and(|d| d <= 0.0) {
        return Err(usage("--duration must be above 0 (leave it out to run until stopped)"));
    }
    let watches = pools::resolve(&spec.pools)?;
    let listener = metrics_addr
        .map(endpoint::bind)
        .transpose()
        .map_err(|e| usage(e.to_string()))?;
    let mut files = Files::default();
    if let Some(d) = diskstats {
        if !d.is_file() {
            return Err(usage(format!("--diskstats {}: no such file", d.display())));
        }
        files.diskstats = d;
    }
    let store = open_new(db)?;
    let host = storlab_env::hostname();
    let n_series = watches.len();
    let n_disks = watches.iter().filter(|w| w.series.kind == SeriesKind::Disk).count();
    let pools_n = spec.pools.len();
    let interval = f.interval;
    let cfg = MonitorConfig {
        spec,
        watches,
        files,
        duration: f.duration,
        metrics: listener,
        stop: stop_on_signal(),
        host,
    };
    let out = storlab_monitor::run::run(
        &store,
        cfg,
        |id, addr| {
            eprintln!(
                "storlab monitor {id}: {pools_n} pools, {n_series} series ({n_disks} disks), a sample every {}{}",
                storlab_units::Duration((interval * 1e9) as u64),
                addr.map(|a| format!("; metrics at http://{a}/metrics"))
                    .unwrap_or_default()
            );
        },
        |e| {
            if !quiet && e.kind != "started" {
                eprintln!("{}  {} {}: {}", utc(e.t), e.pool, e.kind, e.detail);
            }
        },
    )?;
    eprintln!(
        "storlab monitor {}: stopped after {} sweeps, {} events{}",
        out.id,
        out.sweeps,
        out.events,
        if out.lost_sweeps > 0 {
            format!("; {} sweeps could not be stored", out.lost_sweeps)
        } else {
            String::new()
        }
    );
    Ok(if out.lost_sweeps > 0 { 1 } else { 0 })
}

/// The window FROM..TO as seconds since the epoch (default: the last day up to now).
fn window(from: Option<&str>, to: Option<&str>) -> Result<(f64, f64)> {
    let n = now();
    let from_t = from
        .map(|f| moment(f, n).map_err(|e| usage(format!("--from {f}: {e}"))))
        .transpose()?;
    let to_t = to
        .map(|t| moment(t, n).map_err(|e| usage(format!("--to {t}: {e}"))))
        .transpose()?
        .unwrap_or(n);
    let from_t = from_t.unwrap_or(to_t - 86400.0);
    if from_t >= to_t {
        return Err(usage(format!(
            "--from {} is not before --to {}",
            utc(from_t),
            utc(to_t)
        )));
    }
    Ok((from_t, to_t))
}

/// The monitor's window FROM..TO for the HTML report (`host`: None for this host, `all` for
/// every host).
pub fn view(store: &Store, window_arg: &str, host: Option<&str>) -> Result<storlab_report::monitor::MonitorView> {
    let (from, to) = window_arg.split_once("..").ok_or_else(|| {
        usage(format!(
            "--monitor {window_arg}: expected FROM..TO, e.g. 2026-11-20..2026-11-23 or 2d..now"
        ))
    })?;
    let (from_t, to_t) = window(Some(from), Some(to))?;
    let host = match host {
        Some("all") => None,
        Some(h) => Some(h.to_string()),
        None => Some(storlab_env::hostname()),
    };
    let w = read_window(store, host.as_deref(), from_t, to_t)?;
    if w.series.is_empty() {
        return Err(usage(format!(
            "--monitor {window_arg}: no monitor{} has samples between {} and {}: no report was written",
            host.map(|h| format!(" of {h}")).unwrap_or_default(),
            utc(from_t),
            utc(to_t)
        )));
    }
    let lt = store
        .monitors()?
        .into_iter()
        .find(|m| host.as_deref().is_none_or(|h| m.host == h))
        .map_or(100.0, |m| m.spec.lt);
    let (stats, figures) = compute(&w.series, &w.disks, lt, &[]);
    Ok(storlab_report::monitor::MonitorView {
        from: from_t,
        to: to_t,
        lt,
        timeline: storlab_report::monitor::timeline(store, from_t, to_t)?,
        window: w,
        stats,
        figures,
    })
}

fn read_window(store: &Store, host: Option<&str>, from: f64, to: f64) -> Result<MonitorWindow> {
    Ok(store.monitor_window(host, from, to)?)
}

fn stats(
    from: Option<&str>,
    to: Option<&str>,
    pools: &[String],
    host: Option<&str>,
    mib: bool,
    out: &OutputArgs,
) -> Result<u8> {
    let (from_t, to_t) = window(from, to)?;
    let store = open_existing(&out.db)?;
    let w = read_window(&store, host, from_t, to_t)?;
    if w.series.is_empty() {
        return Err(usage(format!(
            "no monitor{} has samples between {} and {}",
            host.map(|h| format!(" of {h}")).unwrap_or_default(),
            utc(from_t),
            utc(to_t)
        )));
    }
    for p in pools {
        if !w.series.iter().any(|s| &s.pool == p) {
            let mut known: Vec<&str> = w.series.iter().map(|s| s.pool.as_str()).collect();
            known.sort();
            known.dedup();
            return Err(usage(format!(
                "--pool {p}: no such pool in this window (its pools: {})",
                known.join(", ")
            )));
        }
    }
    let lt = store
        .monitors()?
        .into_iter()
        .find(|m| host.is_none_or(|h| m.host == h))
        .map_or(100.0, |m| m.spec.lt);
    let (s, figures) = compute(&w.series, &w.disks, lt, pools);
    let unit = if mib { ChallengeUnit::MiB } else { ChallengeUnit::MB };
    if out.json {
        print_json(&serde_json::json!({
            "from": utc(from_t), "to": utc(to_t), "unit": unit.name(), "lt_seconds": lt,
            "statistics": s, "pools": figures,
        }))?;
    } else if out.csv {
        let mut o = std::io::stdout().lock();
        storlab_report::export::Csv::table(&stats_data(&s, unit), &mut o)?;
    } else {
        println!(
            " *** Statistics - {} to {} ({:.2} Hours, long-term window {}) ***",
            utc(from_t),
            utc(to_t),
            s.hours,
            storlab_units::Duration((lt * 1e9) as u64)
        );
        print!("{}", stats_table(&s, unit).to_text());
        println!();
        print!("{}", figures_table(&figures).to_text());
    }
    Ok(0)
}

fn events(from: Option<&str>, to: Option<&str>, host: Option<&str>, out: &OutputArgs) -> Result<u8> {
    let (from_t, to_t) = window(from, to)?;
    let store = open_existing(&out.db)?;
    let w = read_window(&store, host, from_t, to_t)?;
    let t = events_table(&w.events);
    if out.json {
        print_json(&w.events)?;
    } else if out.csv {
        let mut o = std::io::stdout().lock();
        storlab_report::export::Csv::table(&t, &mut o)?;
    } else {
        print!("{}", t.to_text());
    }
    Ok(0)
}
