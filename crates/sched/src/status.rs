//! `storlab sched status`: per pool and server the last complete verify, its duration, what it
//! found, what runs now and when each server is next due — the schedule file's pools and servers
//! joined with what the shared database holds.

pub use storlab_model::sched::{NextDue, PoolStatus, RunningStatus, ServerStatus};
use storlab_store::SchedServer;

use crate::schedule::{Pool, Schedule, Server};

/// The number of errors a task's words say it found: "no errors" is 0; md's "mismatch_cnt N"
/// is N; btrfs' error summary "csum=2 verify=1" is the sum of its counts; otherwise the first
/// number after (or before) "error(s)". None when the words say no number.
pub fn errors_found(words: &str) -> Option<u64> {
    let w = words.to_lowercase();
    if w.contains("no errors") {
        return Some(0);
    }
    if let Some(rest) = w.split("mismatch_cnt").nth(1) {
        return rest.split_whitespace().next()?.parse().ok();
    }
    // btrfs' summary comes first, before "; corrected N; uncorrectable N".
    let summary = w.split(';').next().unwrap_or("");
    let pairs: Vec<u64> = summary
        .split_whitespace()
        .filter_map(|p| p.split_once('=')?.1.parse().ok())
        .collect();
    if !pairs.is_empty() {
        return Some(pairs.iter().sum());
    }
    // "errors: 4", or ZFS' "with 0 errors".
    let words: Vec<&str> = w
        .split(|c: char| c.is_whitespace() || c == ':' || c == ',')
        .filter(|x| !x.is_empty())
        .collect();
    words.iter().enumerate().find_map(|(i, x)| {
        if !x.starts_with("error") {
            return None;
        }
        let after = words.get(i + 1).and_then(|n| n.parse().ok());
        after.or_else(|| words.get(i.checked_sub(1)?)?.parse().ok())
    })
}

/// The status now, as the database has it: every pool's and the database's clock.
pub fn look(
    schedule: &Schedule,
    store: &storlab_store::Store,
) -> Result<(Vec<PoolStatus>, f64), storlab_store::StoreError> {
    let now = store.sched_now()?;
    Ok((status(schedule, &store.sched_servers()?, now), now))
}

/// Joins the schedule with the database's view of its servers, `now` on the database's clock.
pub fn status(schedule: &Schedule, known: &[SchedServer], now: f64) -> Vec<PoolStatus> {
    schedule
        .pools
        .iter()
        .map(|p| {
            let find = |name: &str| known.iter().find(|r| r.pool == p.name && r.server == name);
            let queue = queue(p, &find, now);
            let servers: Vec<ServerStatus> = p
                .servers
                .iter()
                .map(|s| server_status(p, s, find(&s.name), &queue, now))
                .collect();
            PoolStatus {
                pool: p.name.clone(),
                k: crate::plan::pool_plan(p).k,
                slots_in_use: servers.iter().filter(|s| s.running.is_some()).count() as u32,
                servers,
            }
        })
        .collect()
}

/// The pool's queue: the servers due and not running, never verified first, then the oldest
/// verify, then by name, as the database grants turns.
fn queue<'p, 'k>(p: &'p Pool, find: &dyn Fn(&str) -> Option<&'k SchedServer>, now: f64) -> Vec<(Option<f64>, &'p str)> {
    let mut queue: Vec<(Option<f64>, &str)> = p
        .servers
        .iter()
        .filter_map(|s| {
            let r = find(&s.name);
            let due = match (r.and_then(|r| r.last_complete), p.every) {
                (Some(l), Some(e)) => l + e <= now,
                _ => true,
            };
            (due && r.is_none_or(|r| r.running.is_none())).then(|| (r.and_then(|r| r.last_complete), s.name.as_str()))
        })
        .collect();
    queue.sort_by(|a, b| {
        (a.0.is_some(), a.0.unwrap_or(0.0), a.1)
            .partial_cmp(&(b.0.is_some(), b.0.unwrap_or(0.0), b.1))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    queue
}

/// One server's line: its last verify, what runs now and when it is next due.
fn server_status(
    p: &Pool,
    s: &Server,
    r: Option<&SchedServer>,
    queue: &[(Option<f64>, &str)],
    now: f64,
) -> ServerStatus {
    let running = r.and_then(|r| r.running.as_ref()).map(|l| RunningStatus {
        since: l.since,
        slot: l.slot,
        token: l.token,
        agent: l.agent.clone(),
        last: l
            .last
            .as_ref()
            .map(|(k, d)| if d.is_empty() { k.clone() } else { format!("{k}: {d}") }),
    });
    let last_complete = r.and_then(|r| r.last_complete);
    let window = p.windows.next_open(now).unwrap_or(now);
    let next_due = if running.is_some() {
        NextDue::Running
    } else if window > now {
        // Closed now: nothing starts before the windows open.
        NextDue::At {
            t: window.max(last_complete.map_or(now, |l| l + p.every.unwrap_or(0.0))),
        }
    } else if let Some(place) = queue.iter().position(|(_, n)| *n == s.name) {
        NextDue::Queued {
            place: place as u32 + 1,
        }
    } else {
        NextDue::At {
            t: last_complete.unwrap_or(now) + p.every.unwrap_or(0.0),
        }
    };
    let last_errors = r.and_then(|r| r.last_errors.clone());
    ServerStatus {
        pool: p.name.clone(),
        server: s.name.clone(),
        task: s.task.clone(),
        last_complete,
        last_duration: r.and_then(|r| r.last_duration),
        errors_found: last_errors.as_deref().and_then(errors_found),
        last_errors,
        running,
        seen: r.map(|r| r.seen),
        next_due,
    }
}

/// `storlab sched status`'s flags, declared here once (the binary flattens them beside the
/// database's).
#[derive(Debug, Clone, clap::Args)]
pub struct StatusFlags {
    /// The schedule file.
    #[arg(long, value_name = "FILE", default_value = "/etc/storlab/schedule.toml")]
    pub schedule: std::path::PathBuf,
    /// Serve the status as Prometheus metrics at ADDR (host:port), refreshed every
    /// --interval, until stopped.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Lock the --metrics endpoint as Prometheus exporters lock theirs: a web configuration file
    /// in the exporter-toolkit's format (tls_server_config: cert_file, key_file; basic_auth_users:
    /// bcrypt hashes). Without it the endpoint is plain HTTP that anyone who reaches it reads.
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub web_config: Option<std::path::PathBuf>,
    /// How often --metrics reads the database.
    #[arg(long, value_name = "DURATION", default_value = "15s")]
    pub interval: String,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
}

impl StatusFlags {
    /// `--interval`: a duration above 0.
    pub fn interval(&self) -> Result<std::time::Duration, crate::SchedError> {
        crate::question::duration("--interval", &self.interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_a_duration_above_zero() {
        let f = |v: &str| StatusFlags {
            schedule: "s.toml".into(),
            metrics: None,
            web_config: None,
            interval: v.into(),
            json: false,
        };
        assert_eq!(f("15s").interval().unwrap(), std::time::Duration::from_secs(15));
        assert_eq!(f("2m").interval().unwrap(), std::time::Duration::from_secs(120));
        let zero = f("0s").interval().unwrap_err().to_string();
        assert!(zero.contains("--interval 0s: a duration above 0"), "{zero}");
        assert!(f("often")
            .interval()
            .unwrap_err()
            .to_string()
            .starts_with("--interval often:"));
    }

    #[test]
    fn errors_are_counted_from_the_tasks_words() {
        assert_eq!(errors_found("no errors found"), Some(0));
        assert_eq!(errors_found("mismatch_cnt 128"), Some(128));
        assert_eq!(
            errors_found("csum=2 verify=1; corrected 3; uncorrectable 0; unverified 0"),
            Some(3)
        );
        assert_eq!(errors_found("errors: 4"), Some(4));
        assert_eq!(
            errors_found("scrub repaired 0B in 00:00:01 with 0 errors on Sun"),
            Some(0)
        );
        assert_eq!(errors_found("finished"), None);
    }
}
