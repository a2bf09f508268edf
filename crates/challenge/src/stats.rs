//! The challenge's statistics in seed 002's shape: for the total and for each pool, in each
//! direction (Read, Write, ReadWrite), the MAX, MIN, AVG and SD (and SD/AVG %) of the
//! long-term averages — each sample's rate averaged over the last `lt` seconds of samples, as
//! the seed's monitor smoothed its 10 s samples over 100 s. Several hosts' samples of the same
//! moment add up, each placed on the intervals by the time it covers (crates/stats' intervals).

pub use storlab_model::challenge::{bytes_per_agent, bytes_per_pool, StatRow, Stats};
use storlab_model::challenge::{ChallengeSample, ChallengeSpec};
use storlab_stats::intervals;

/// Which samples to take.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Window {
    /// All of them.
    #[default]
    All,
    /// Those whose end falls between these hours from the start.
    Hours(f64, f64),
    /// Samples number A to B (inclusive, from 0).
    Samples(u64, u64),
}

/// What `storlab challenge stats` asks, as given: its flags, declared here once (the binary
/// flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Ask {
    /// From this many hours after the start.
    #[arg(long, value_name = "HOURS", conflicts_with = "samples")]
    pub from: Option<f64>,
    /// To this many hours after the start.
    #[arg(long, value_name = "HOURS", conflicts_with = "samples")]
    pub to: Option<f64>,
    /// Samples A to B (numbered from 0): --samples 0..47344
    #[arg(long, value_name = "A..B")]
    pub samples: Option<String>,
    /// Only these pools (the Tot rows are their sums); repeatable.
    #[arg(long = "pool", value_name = "NAME")]
    pub pools: Vec<String>,
    /// Only what these hosts moved (a host name, or one agent as HOST/PID); repeatable.
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
}

impl Window {
    /// The window `--samples A..B`, or `--from`/`--to` in hours from the start, asks for.
    pub fn asked(ask: &Ask) -> Result<Window, String> {
        match (ask.samples.as_deref(), ask.from, ask.to) {
            (Some(text), _, _) => {
                let bad = || format!("--samples {text}: expected A..B, two sample numbers (0..47344)");
                let (a, b) = text.split_once("..").ok_or_else(bad)?;
                let (a, b) = (
                    a.trim().parse::<u64>().map_err(|_| bad())?,
                    b.trim().parse::<u64>().map_err(|_| bad())?,
                );
                if a > b {
                    return Err(format!("--samples {text}: the first is after the last"));
                }
                Ok(Window::Samples(a, b))
            }
            (None, None, None) => Ok(Window::All),
            (None, f, t) => {
                let (f, t) = (f.unwrap_or(0.0), t.unwrap_or(f64::INFINITY));
                if !(f >= 0.0 && t > f) {
                    return Err(format!("--from {f} --to {t}: hours from the start, --to after --from"));
                }
                Ok(Window::Hours(f, t))
            }
        }
    }
}

/// The statistics `ask` asks of challenge `c` from the stored samples: its pools must be the
/// challenge's, its hosts must have samples; refusals are the user's to fix.
pub fn of_challenge(
    store: &storlab_store::Store,
    c: &storlab_store::StoredChallenge,
    ask: &Ask,
) -> Result<Stats, crate::ChallengeError> {
    let input = crate::ChallengeError::Input;
    for p in &ask.pools {
        if !c.spec.pools.iter().any(|q| &q.name == p) {
            let names: Vec<&str> = c.spec.pools.iter().map(|q| q.name.as_str()).collect();
            return Err(input(format!(
                "--pool {p}: challenge {} has no such pool (its pools: {})",
                c.id,
                names.join(", ")
            )));
        }
    }
    let window = Window::asked(ask).map_err(input)?;
    let all = store.challenge_samples(c.id, c.spec.pools.len())?;
    let all = of_hosts(all, &ask.hosts).map_err(|e| input(format!("{e} in challenge {}", c.id)))?;
    let stats = compute(&all, &c.spec, window, &ask.pools);
    if window != Window::All && stats.first > stats.last {
        let whole = compute(&all, &c.spec, Window::All, &[]);
        return Err(input(format!(
            "{}: no sample of challenge {} lies in that window; its samples are 0..{} ({:.4} hours from the start): ask within those",
            asked_text(ask),
            c.id,
            whole.last,
            whole.hours
        )));
    }
    Ok(stats)
}

/// The window as the user asked it, for messages.
fn asked_text(ask: &Ask) -> String {
    match (&ask.samples, ask.from, ask.to) {
        (Some(s), _, _) => format!("--samples {s}"),
        (None, f, t) => [f.map(|f| format!("--from {f}")), t.map(|t| format!("--to {t}"))]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// The samples of `hosts` (empty: all); an agent is `HOST/PID`, so a host's name takes all its
/// agents. Err names a host with no samples, and the agents there are.
pub fn of_hosts(samples: Vec<ChallengeSample>, hosts: &[String]) -> Result<Vec<ChallengeSample>, String> {
    if hosts.is_empty() {
        return Ok(samples);
    }
    let of = |agent: &str, h: &str| agent == h || agent.split('/').next() == Some(h);
    for h in hosts {
        if !samples.iter().any(|s| of(&s.host, h)) {
            let mut known: Vec<&str> = samples.iter().map(|s| s.host.as_str()).collect();
            known.sort();
            known.dedup();
            return Err(format!(
                "--host {h}: no samples of it (its agents: {})",
                known.join(", ")
            ));
        }
    }
    Ok(samples
        .into_iter()
        .filter(|s| hosts.iter().any(|h| of(&s.host, h)))
        .collect())
}

/// The statistics of `samples` in `window`, for `pools` (names; empty: all): each host's
/// samples placed on the challenge's intervals by the time they cover (crates/stats'
/// `intervals`: no interval is empty because a clock drifted, an interval a running host did
/// not measure is left out, not a zero), long-term averages over `lt`, each interval weighed by
/// its length.
pub fn compute(samples: &[ChallengeSample], spec: &ChallengeSpec, window: Window, pools: &[String]) -> Stats {
    let np = spec.pools.len();
    let iv = intervals::place(&intervals::challenge_spans(samples, np), 2 * np, spec.interval);
    let k = ((spec.lt / spec.interval).round() as usize).max(1);
    let n = iv.len();
    let (a, b) = match window {
        Window::All => (0, n.saturating_sub(1)),
        Window::Samples(a, b) => (a as usize, (b as usize).min(n.saturating_sub(1))),
        Window::Hours(from, to) => {
            let first = iv.ends.iter().position(|e| *e > from * 3600.0).unwrap_or(n);
            let last = iv.ends.iter().rposition(|e| *e <= to * 3600.0).unwrap_or(0);
            (first, last)
        }
    };
    let chosen: Vec<intervals::PoolChannels> = (0..np)
        .filter(|p| pools.is_empty() || pools.contains(&spec.pools[*p].name))
        .map(|p| intervals::PoolChannels {
            name: &spec.pools[p].name,
            read: p,
            write: np + p,
        })
        .collect();
    let rows = intervals::seed_rows(&iv, k, &chosen, Some((a, b)));
    let from = if a == 0 {
        f64::NEG_INFINITY
    } else {
        iv.ends.get(a - 1).copied().unwrap_or(0.0)
    };
    let to = iv.ends.get(b).copied().unwrap_or(f64::INFINITY);
    let device_bound = chosen
        .iter()
        .map(|c| (c.name.to_string(), device_bound(samples, c.read, (from, to))))
        .collect();
    Stats {
        first: a as u64,
        last: b as u64,
        hours: iv.ends.get(b).copied().unwrap_or(0.0) / 3600.0,
        rows,
        device_bound,
    }
}

/// The share of the time in `(from, to]` (by each sample's end) that pool `pool`'s busiest
/// device was saturated, over the samples that read its devices (each weighed by its length);
/// None when none did.
fn device_bound(samples: &[ChallengeSample], pool: usize, (from, to): (f64, f64)) -> Option<f64> {
    let (mut read, mut bound) = (0.0, 0.0);
    for s in samples.iter().filter(|s| s.t > from && s.t <= to) {
        if let Some(Some((busy, queue))) = s.device.get(pool) {
            read += s.seconds;
            if storlab_stats::bound::device_saturated(*busy, *queue) {
                bound += s.seconds;
            }
        }
    }
    (read > 0.0).then(|| bound / read)
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_window_asked_is_read_and_checked() {
        let ask = |samples: Option<&'static str>, from: Option<f64>, to: Option<f64>| Ask {
            samples: samples.map(String::from),
            from,
            to,
            ..Ask::default()
        };
        assert_eq!(Window::asked(&ask(None, None, None)), Ok(Window::All));
        assert_eq!(Window::asked(&ask(Some("3..7"), None, None)), Ok(Window::Samples(3, 7)));
        assert_eq!(
            Window::asked(&ask(None, Some(1.0), None)),
            Ok(Window::Hours(1.0, f64::INFINITY))
        );
        assert_eq!(
            Window::asked(&ask(Some("7..3"), None, None)),
            Err("--samples 7..3: the first is after the last".into())
        );
        assert!(Window::asked(&ask(Some("x"), None, None))
            .unwrap_err()
            .starts_with("--samples x: expected A..B"));
        assert_eq!(
            Window::asked(&ask(None, Some(2.0), Some(1.0))),
            Err("--from 2 --to 1: hours from the start, --to after --from".into())
        );
    }
    use super::*;
    use storlab_model::challenge::{Pool, Spread};

    fn spec() -> ChallengeSpec {
        ChallengeSpec {
            pools: vec![
                Pool {
                    name: "P1".into(),
                    path: "/a".into(),
                },
                Pool {
                    name: "P2".into(),
                    path: "/b".into(),
                },
            ],
            writers: 1,
            readers: 1,
            file_size: 4096,
            bs: 4096,
            duration: None,
            files: Some(1),
            spread: Spread::Equal,
            backlog: 1,
            interval: 10.0,
            lt: 20.0,
            seed: 1,
            faults: vec![],
            lease: 60.0,
            direct: false,
        }
    }

    #[test]
    fn totals_are_the_pools_sums_and_hosts_add_up() {
        let sample = |host: &str, idx: u64, r: [u64; 2], w: [u64; 2]| ChallengeSample {
            host: host.into(),
            idx,
            t: (idx + 1) as f64 * 10.0,
            seconds: 10.0,
            read: r.to_vec(),
            written: w.to_vec(),
            device: Vec::new(),
        };
        let samples = vec![
            sample("a", 0, [100, 0], [200, 300]),
            sample("a", 1, [300, 100], [0, 100]),
            sample("b", 0, [100, 0], [0, 0]),
            sample("a", 2, [0, 0], [500, 500]),
        ];
        let s = compute(&samples, &spec(), Window::All, &[]);
        let get = |n: &str| s.rows.iter().find(|r| r.name == n).unwrap().clone();
        // P1 read per 10 s: 200 (two hosts), 300, 0 bytes → 20, 30, 0 B/s; over 20 s: 20, 25, 15.
        assert_eq!(get("P1-Read").max, 25.0);
        assert_eq!(get("P1-Read").min, 15.0);
        assert!((get("P1-Read").avg - 20.0).abs() < 1e-9);
        let tot = get("Tot-ReadWriteAverage").avg;
        let pools: f64 = ["P1-ReadWrite", "P2-ReadWrite"].iter().map(|n| get(n).avg).sum();
        assert!((tot - pools).abs() < 1e-9, "{tot} vs {pools}");
        let first_two = compute(&samples, &spec(), Window::Samples(0, 1), &["P2".into()]);
        assert_eq!(first_two.rows.len(), 6);
        assert_eq!((first_two.first, first_two.last), (0, 1));
    }
}
