//! The schedule file: pools of servers, each server with its background task, each pool with
//! its budget (the throughput loss agreed with its users), the per-server cost of one verify,
//! the task's duration, and the windows in which it may run. Read and checked whole; every
//! mistake is named with its line.
//!
//! ```toml
//! [schedule]
//! lease = "60s"
//!
//! [[pool]]
//! name = "P1"
//! budget = "5%"
//! cost = "13.9%"              # one verifying server's loss (storlab impact measures it)
//! duration = "6h"             # the task alone
//! duration_loaded = "9h"      # the task under the users' load
//! windows = ["Mon-Fri 22:00-06:00", "Sat-Sun 00:00-24:00"]
//!
//! [[pool.server]]
//! name = "ds01"
//! task = "btrfs-scrub:/srv/data"
//! ```
//!
//! What an agent runs comes only from this file on its own host (see [`Schedule::read_trusted`]);
//! the shared database grants slots and records what happened.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use storlab_model::source::line_of as line;
use toml::Spanned;

use crate::window::Windows;
use crate::SchedError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    schedule: Option<Header>,
    #[serde(default)]
    pool: Vec<PoolDoc>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Header {
    lease: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolDoc {
    name: Spanned<String>,
    budget: Spanned<String>,
    cost: Spanned<String>,
    duration: Option<Spanned<String>>,
    duration_loaded: Option<Spanned<String>>,
    #[serde(default)]
    windows: Option<Spanned<Vec<String>>>,
    every: Option<Spanned<String>>,
    busy: Option<Spanned<BusyDoc>>,
    #[serde(default)]
    server: Vec<ServerDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BusyDoc {
    prometheus: Option<String>,
    query: Option<String>,
    monitor_pool: Option<String>,
    utilisation: Option<String>,
    throughput: Option<String>,
    over: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerDoc {
    name: Spanned<String>,
    task: Spanned<String>,
}

/// A server and its task.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Its name (what `storlab sched agent --server` names).
    pub name: String,
    /// Its task, `KIND:ARGS` as `storlab impact --task` takes it.
    pub task: String,
}

/// A pool of servers.
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// Its name.
    pub name: String,
    /// The throughput loss agreed with the users, percent.
    pub budget: f64,
    /// One verifying server's loss, percent.
    pub cost: f64,
    /// The task's duration alone, seconds, when given.
    pub duration: Option<f64>,
    /// Its duration under the users' load, seconds, when given.
    pub duration_loaded: Option<f64>,
    /// When it may run.
    pub windows: Windows,
    /// The windows as written.
    pub windows_text: Vec<String>,
    /// How often each server is due, seconds: a server whose last complete verify is younger
    /// waits. None: rounds follow one another.
    pub every: Option<f64>,
    /// When the pool counts as busy (its tasks pause), if anything says.
    pub busy: Option<Busy>,
    /// Figures the file takes from stored studies, until [`Schedule::resolve`] reads them.
    pub studies: PoolStudies,
    /// Its servers.
    pub servers: Vec<Server>,
}

/// A pool's figures taken from stored studies: `cost = "study:ID"` (a cost-to-the-users study's
/// worst loss; `study:ID:worse-end` its 95 % interval's worse end) and `duration =
/// "study:ID"` (a cost-to-the-task study's durations idle and under load). Each with the line
/// it is on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolStudies {
    /// The cost's study, whether its worse end, the line.
    pub cost: Option<(i64, bool, usize)>,
    /// The durations' study, the line.
    pub duration: Option<(i64, usize)>,
}

/// `study:ID[:worse-end]`.
fn study_ref(s: &str) -> Option<Result<(i64, bool), String>> {
    let rest = s.trim().strip_prefix("study:")?;
    let (id, worse) = match rest.split_once(':') {
        Some((id, "worse-end")) => (id, true),
        Some((_, other)) => return Some(Err(format!("'{other}' after the study's id: only worse-end"))),
        None => (rest, false),
    };
    Some(
        id.trim()
            .parse::<i64>()
            .ok()
            .filter(|i| *i > 0)
            .map(|i| (i, worse))
            .ok_or_else(|| format!("'{id}' is not a study's id (storlab results list --kind impact)")),
    )
}

/// Refuses a pool in which no server may verify within the budget.
fn check_k(cost: f64, budget: f64, n: u32, name: &str) -> Result<(), String> {
    if storlab_stats::impact::project(cost, n, budget).largest_k == 0 {
        return Err(format!(
            "pool {name}: one verifying server costs its users {cost} % and the pool's budget is {budget} %: with {n} servers even one verify costs the pool {:.2} %, so no server may verify within that budget (raise the budget, or slow the task and measure it again)",
            cost / n as f64
        ));
    }
    Ok(())
}

/// What says a pool is busy: while it is, its tasks pause (with the task's own pause where it
/// has one; otherwise they stop and start again later).
#[derive(Debug, Clone, PartialEq)]
pub enum Busy {
    /// A Prometheus query, alert-style: busy while it returns any series.
    Prometheus {
        /// The server, http://HOST:PORT.
        url: String,
        /// The PromQL expression.
        query: String,
    },
    /// `storlab monitor`'s samples of a pool in the same database.
    Monitor {
        /// The monitor's pool name.
        pool: String,
        /// Busy above this utilisation of the busiest device, 0 to 1.
        utilisation: Option<f64>,
        /// Busy above this throughput (read and write), bytes per second.
        throughput: Option<f64>,
        /// Over how many seconds of samples, back from now.
        over: f64,
    },
}

/// A schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// The file it came from.
    pub path: PathBuf,
    /// A slot's lease, seconds.
    pub lease: f64,
    /// The pools.
    pub pools: Vec<Pool>,
}

fn percent(s: &str) -> Option<f64> {
    s.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite())
}

fn seconds(s: &str) -> Option<f64> {
    s.parse::<storlab_units::Duration>().ok().map(|d| d.secs_f64())
}

fn busy(b: &BusyDoc, pool: &str) -> Result<Busy, String> {
    let monitor_keys =
        b.monitor_pool.is_some() || b.utilisation.is_some() || b.throughput.is_some() || b.over.is_some();
    match (&b.prometheus, &b.query) {
        (Some(url), Some(query)) => {
            if monitor_keys {
                return Err("either prometheus and query, or the monitor's utilisation/throughput, not both".into());
            }
            if !url.starts_with("http://") {
                return Err(format!("prometheus '{url}': an address such as http://127.0.0.1:9090"));
            }
            if query.trim().is_empty() {
                return Err("an empty query".into());
            }
            Ok(Busy::Prometheus {
                url: url.trim_end_matches('/').to_string(),
                query: query.clone(),
            })
        }
        (Some(_), None) => Err("prometheus without a query: give query = '…', busy while it returns anything".into()),
        (None, Some(_)) => Err("a query without prometheus = 'http://HOST:9090'".into()),
        (None, None) => {
            let utilisation = b
                .utilisation
                .as_ref()
                .map(|u| {
                    percent(u)
                        .filter(|p| *p > 0.0 && *p <= 100.0)
                        .map(|p| p / 100.0)
                        .ok_or_else(|| format!("utilisation '{u}': a percentage above 0 and at most 100, e.g. 80%"))
                })
                .transpose()?;
            let throughput = b
                .throughput
                .as_ref()
                .map(|t| {
                    match t.parse::<storlab_units::Rate>() {
                        Ok(storlab_units::Rate::BytesPerSec(b)) => Some(b),
                        _ => None,
                    }
                    .ok_or_else(|| format!("throughput '{t}': bytes per second such as 400MiB/s"))
                })
                .transpose()?;
            if utilisation.is_none() && throughput.is_none() {
                return Err("say when the pool is busy: prometheus and query, or utilisation and/or throughput from storlab monitor".into());
            }
            let over = match &b.over {
                Some(o) => seconds(o)
                    .filter(|s| *s > 0.0)
                    .ok_or_else(|| format!("over '{o}': a duration such as 60s"))?,
                None => 60.0,
            };
            Ok(Busy::Monitor {
                pool: b.monitor_pool.clone().unwrap_or_else(|| pool.to_string()),
                utilisation,
                throughput,
                over,
            })
        }
    }
}

impl Schedule {
    /// Reads and checks a schedule file.
    pub fn read(path: &Path) -> Result<Schedule, SchedError> {
        let text = storlab_model::source::read_text(path).map_err(SchedError::Input)?;
        Schedule::parse(&text, path)
    }

    /// Reads a schedule file an agent may act on: it must belong to root and be writable by
    /// no one else (group or others), since an agent runs as root and runs what the file says.
    pub fn read_trusted(path: &Path) -> Result<Schedule, SchedError> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).map_err(|e| SchedError::Input(format!("{}: {e}", path.display())))?;
        if m.uid() != 0 {
            return Err(SchedError::Input(format!(
                "{}: owned by uid {}, not root; an agent runs what its schedule says as root, so the file must be root's (chown root {})",
                path.display(),
                m.uid(),
                path.display()
            )));
        }
        if m.mode() & 0o022 != 0 {
            return Err(SchedError::Input(format!(
                "{}: writable by {} (mode {:o}); an agent runs what its schedule says as root, so only root may write it (chmod go-w {})",
                path.display(),
                if m.mode() & 0o002 != 0 { "anyone" } else { "its group" },
                m.mode() & 0o7777,
                path.display()
            )));
        }
        Schedule::read(path)
    }

    /// Parses and checks the text of a schedule file (`path` names it in messages).
    pub fn parse(text: &str, path: &Path) -> Result<Schedule, SchedError> {
        let shown = path.display();
        let w = Where {
            text,
            shown: shown.to_string(),
        };
        let doc: FileDoc = toml::from_str(text).map_err(|e| {
            let l = e
                .span()
                .map(|s| format!(", line {}", line(text, s.start)))
                .unwrap_or_default();
            SchedError::Input(format!(
                "{shown}{l}: {}",
                storlab_model::names::serde_did_you_mean(e.message())
            ))
        })?;
        let header = doc.schedule.unwrap_or_default();
        let lease = match &header.lease {
            Some(l) => seconds(l.get_ref()).filter(|s| *s >= 1.0).ok_or_else(|| {
                w.at(
                    l.span().start,
                    format!("lease '{}': a duration of at least 1s, e.g. 60s", l.get_ref()),
                )
            })?,
            None => 60.0,
        };
        if doc.pool.is_empty() {
            return Err(SchedError::Input(format!(
                "{shown}: no [[pool]]: a schedule names at least one pool of servers"
            )));
        }
        let mut pools: Vec<Pool> = Vec::new();
        let mut seen_servers: Vec<(String, String, usize)> = Vec::new();
        for p in &doc.pool {
            let name = p.name.get_ref().trim().to_string();
            if pools.iter().any(|q| q.name == name) {
                return Err(w.at(p.name.span().start, format!("pool {name} is named twice")));
            }
            pools.push(w.pool(p, name, &mut seen_servers)?);
        }
        Ok(Schedule {
            path: path.to_path_buf(),
            lease,
            pools,
        })
    }

    /// Whether a pool takes a figure from a stored study (the database must be read).
    pub fn needs_studies(&self) -> bool {
        self.pools.iter().any(|p| p.studies != PoolStudies::default())
    }

    /// The schedule with the figures it takes from stored studies read; `open` is called only
    /// when it names a study.
    pub fn with_studies(
        mut self,
        open: &dyn Fn() -> Result<storlab_store::Store, storlab_store::StoreError>,
    ) -> Result<Schedule, SchedError> {
        if self.needs_studies() {
            self.resolve(&open()?)?;
        }
        Ok(self)
    }

    /// Reads the figures the file takes from stored studies: a cost from a cost-to-the-users
    /// study (`storlab impact --task …`), durations from a cost-to-the-task study (`storlab
    /// impact --reverse --task …`); then checks them as the file's own would be.
    pub fn resolve(&mut self, store: &storlab_store::Store) -> Result<(), SchedError> {
        use storlab_model::study::StudyParams;
        let shown = self.path.display().to_string();
        for p in &mut self.pools {
            let at = |l: usize, msg: String| SchedError::Input(format!("{shown}, line {l}: pool {}: {msg}", p.name));
            let read = |id: i64, l: usize| -> Result<storlab_model::study::Study, SchedError> {
                store
                    .study(id)
                    .map_err(|e| at(l, format!("study {id}: {e}")))?
                    .ok_or_else(|| at(l, format!("study {id}: no such study in {}", store.target())))
            };
            if let Some((id, worse, l)) = p.studies.cost {
                let study = read(id, l)?;
                let StudyParams::Impact(u) = &study.params else {
                    return Err(at(l, format!("study {id} is a {} study; a cost comes from a cost-to-the-users study (storlab impact --task …)", study.kind())));
                };
                let loss = if worse {
                    u.worst_loss_worse_end_percent
                } else {
                    u.worst_loss_percent
                };
                let loss = loss.ok_or_else(|| {
                    at(
                        l,
                        format!("study {id} found no loss (it was stopped before it measured one)"),
                    )
                })?;
                if loss <= 0.0 {
                    return Err(at(l, format!("study {id} measured no loss ({loss:.2} %): the task cost its users nothing there; give the cost, or measure under the users' load")));
                }
                check_k(loss, p.budget, p.servers.len() as u32, &p.name)
                    .map_err(|e| SchedError::Input(format!("{shown}, line {l}: {e}")))?;
                p.cost = loss;
            }
            if let Some((id, l)) = p.studies.duration {
                let study = read(id, l)?;
                let StudyParams::ImpactReverse(r) = &study.params else {
                    return Err(at(l, format!("study {id} is a {} study; durations come from a cost-to-the-task study (storlab impact --reverse --task …)", study.kind())));
                };
                p.duration = Some(r.idle_seconds);
                p.duration_loaded = p.duration_loaded.or(Some(r.loaded_seconds));
            }
        }
        Ok(())
    }

    /// The pool of server `name` and the server, or an error listing the servers there are.
    pub fn server(&self, name: &str) -> Result<(&Pool, &Server), SchedError> {
        for p in &self.pools {
            if let Some(s) = p.servers.iter().find(|s| s.name == name) {
                return Ok((p, s));
            }
        }
        let all: Vec<&str> = self
            .pools
            .iter()
            .flat_map(|p| p.servers.iter().map(|s| s.name.as_str()))
            .collect();
        Err(SchedError::Input(format!(
            "--server {name}: {} names no such server (its servers: {})",
            self.path.display(),
            all.join(", ")
        )))
    }
}

/// Where a schedule file's mistakes are: its text (for line numbers) and its name.
struct Where<'t> {
    text: &'t str,
    shown: String,
}

impl Where<'_> {
    /// A mistake at byte `pos`, named with its line.
    fn at(&self, pos: usize, msg: String) -> SchedError {
        SchedError::Input(format!("{}, line {}: {msg}", self.shown, line(self.text, pos)))
    }

    /// A `[[pool]]`, checked whole: its budget, its cost (given, or a study's), its durations
    /// (given, or a study's), windows, cadence, busy rule and servers; k within its budget.
    fn pool(&self, p: &PoolDoc, name: String, seen: &mut Vec<(String, String, usize)>) -> Result<Pool, SchedError> {
        let budget = percent(p.budget.get_ref())
            .filter(|b| (0.0..=100.0).contains(b))
            .ok_or_else(|| {
                self.at(
                    p.budget.span().start,
                    format!(
                        "pool {name}: budget '{}': a throughput loss from 0 % to 100 %",
                        p.budget.get_ref()
                    ),
                )
            })?;
        let mut studies = PoolStudies::default();
        let cost = self.cost(p, &name, &mut studies)?;
        let dur = |d: &Option<Spanned<String>>, what: &str| -> Result<Option<f64>, SchedError> {
            d.as_ref()
                .map(|d| {
                    seconds(d.get_ref()).filter(|s| *s > 0.0).ok_or_else(|| {
                        self.at(
                            d.span().start,
                            format!("pool {name}: {what} '{}': a duration such as 6h", d.get_ref()),
                        )
                    })
                })
                .transpose()
        };
        let duration = match p.duration.as_ref().and_then(|d| study_ref(d.get_ref()).map(|r| (d, r))) {
            Some((d, r)) => {
                let (id, _) = r.map_err(|e| self.at(d.span().start, format!("pool {name}: duration: {e}")))?;
                studies.duration = Some((id, line(self.text, d.span().start)));
                None
            }
            None => dur(&p.duration, "duration")?,
        };
        let duration_loaded = dur(&p.duration_loaded, "duration_loaded")?;
        let windows_text: Vec<String> = p.windows.as_ref().map(|w| w.get_ref().clone()).unwrap_or_default();
        let windows = Windows::parse(&windows_text).map_err(|e| {
            self.at(
                p.windows.as_ref().map_or(0, |w| w.span().start),
                format!("pool {name}: {e}"),
            )
        })?;
        let every = dur(&p.every, "every")?;
        let busy = p
            .busy
            .as_ref()
            .map(|b| busy(b.get_ref(), &name).map_err(|e| self.at(b.span().start, format!("pool {name}: busy: {e}"))))
            .transpose()?;
        let servers = self.servers(p, &name, seen)?;
        if studies.cost.is_none() {
            check_k(cost, budget, servers.len() as u32, &name).map_err(|e| self.at(p.cost.span().start, e))?;
        }
        Ok(Pool {
            budget,
            cost,
            duration,
            duration_loaded,
            windows,
            windows_text,
            every,
            busy,
            studies,
            servers,
            name,
        })
    }

    /// A pool's cost: one verifying server's loss in %, or a study's (read from the database
    /// by Schedule::resolve, and checked there).
    fn cost(&self, p: &PoolDoc, name: &str, studies: &mut PoolStudies) -> Result<f64, SchedError> {
        if let Some(r) = study_ref(p.cost.get_ref()) {
            let (id, worse) = r.map_err(|e| self.at(p.cost.span().start, format!("pool {name}: cost: {e}")))?;
            studies.cost = Some((id, worse, line(self.text, p.cost.span().start)));
            return Ok(f64::NAN);
        }
        let cost = percent(p.cost.get_ref()).filter(|c| *c >= 0.0).ok_or_else(|| {
            self.at(
                p.cost.span().start,
                format!(
                    "pool {name}: cost '{}': one verifying server's loss in %, e.g. 13.9%, or study:ID (a storlab impact study of the task)",
                    p.cost.get_ref()
                ),
            )
        })?;
        if cost == 0.0 {
            return Err(self.at(
                p.cost.span().start,
                format!("pool {name}: cost 0 %: a verify costs its server something; measure it (storlab impact --task …) and give the loss"),
            ));
        }
        Ok(cost)
    }

    /// A pool's servers: each in one pool only, its task of a kind storlab knows.
    fn servers(
        &self,
        p: &PoolDoc,
        name: &str,
        seen: &mut Vec<(String, String, usize)>,
    ) -> Result<Vec<Server>, SchedError> {
        if p.server.is_empty() {
            return Err(self.at(p.name.span().start, format!("pool {name} has no [[pool.server]]")));
        }
        let mut servers = Vec::new();
        for s in &p.server {
            let sname = s.name.get_ref().trim().to_string();
            if let Some((_, other, l)) = seen.iter().find(|(n, _, _)| *n == sname) {
                let msg = if other == name {
                    format!("server {sname} is named twice in pool {name} (first on line {l})")
                } else {
                    format!(
                        "server {sname} is in pool {other} (line {l}) and in pool {name}; a server belongs to one pool"
                    )
                };
                return Err(self.at(s.name.span().start, msg));
            }
            seen.push((sname.clone(), name.to_string(), line(self.text, s.name.span().start)));
            let task = s.task.get_ref().trim().to_string();
            let kind = task.split_once(':').map(|(k, _)| k).unwrap_or(&task);
            if !storlab_impact::kinds::KINDS.iter().any(|k| k.name == kind) {
                return Err(self.at(
                    s.task.span().start,
                    format!(
                        "server {sname}: task '{task}': unknown kind '{kind}' (kinds: {})",
                        storlab_impact::kinds::known()
                    ),
                ));
            }
            servers.push(Server { name: sname, task });
        }
        Ok(servers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[schedule]
lease = "30s"

[[pool]]
name = "P1"
budget = "10%"
cost = "13.9%"
duration = "6h"
duration_loaded = "9h"
windows = ["Mon-Fri 22:00-06:00"]

[[pool.server]]
name = "ds01"
task = "btrfs-scrub:/srv/data"

[[pool.server]]
name = "ds02"
task = "md-check:/dev/md0"
"#;

    fn parse(text: &str) -> Result<Schedule, SchedError> {
        Schedule::parse(text, Path::new("s.toml"))
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_schedule_reads_whole() {
        let s = parse(GOOD).unwrap();
        assert_eq!(s.lease, 30.0);
        assert_eq!(s.pools[0].servers.len(), 2);
        assert_eq!(s.pools[0].cost, 13.9);
        assert_eq!(s.pools[0].duration_loaded, Some(9.0 * 3600.0));
        assert_eq!(s.server("ds02").unwrap().1.task, "md-check:/dev/md0");
        assert!(s
            .server("ds09")
            .unwrap_err()
            .to_string()
            .contains("its servers: ds01, ds02"));
    }

    #[test]
    fn each_mistake_is_named_with_its_line() {
        let e = err(&GOOD.replace("btrfs-scrub:/srv/data", "fsck:/srv/data"));
        assert!(
            e.contains("s.toml, line 15") && e.contains("unknown kind 'fsck'"),
            "{e}"
        );
        let e = err(&GOOD.replace("\"10%\"", "\"120%\""));
        assert!(e.contains("line 7") && e.contains("from 0 % to 100 %"), "{e}");
        let e = err(&GOOD.replace("\"10%\"", "\"-1%\""));
        assert!(e.contains("from 0 % to 100 %"), "{e}");
        let e = err(&GOOD.replace("\"13.9%\"", "\"0%\""));
        assert!(e.contains("line 8") && e.contains("cost 0 %"), "{e}");
        // A cost above the budget is refused only where no server may verify: 40 % on one of two
        // servers costs the pool 20 %, over its 10 %; 13.9 % costs it 6.95 %, within.
        let e = err(&GOOD.replace("\"13.9%\"", "\"40%\""));
        assert!(e.contains("no server may verify within that budget"), "{e}");
        assert!(
            parse(&GOOD.replace("\"13.9%\"", "\"15%\"")).is_ok(),
            "15 % over a 10 % budget, but one of two servers costs the pool 7.5 %"
        );
        let e = err(&GOOD.replace("Mon-Fri 22:00-06:00", "Mon 22:00-22:00"));
        assert!(e.contains("line 11") && e.contains("never opens"), "{e}");
        let e = err(&GOOD.replace("name = \"ds02\"", "name = \"ds01\""));
        assert!(
            e.contains("line 18") && e.contains("server ds01 is named twice in pool P1 (first on line 14)"),
            "{e}"
        );
        let two = format!("{GOOD}\n[[pool]]\nname = \"P2\"\nbudget = \"5%\"\ncost = \"1%\"\n[[pool.server]]\nname = \"ds02\"\ntask = \"cmd:true\"\n");
        let e = err(&two);
        assert!(e.contains("server ds02 is in pool P1 (line 18) and in pool P2"), "{e}");
        let e = err(&GOOD.replace("lease = \"30s\"", "lease = \"30s\"\nleas = 3"));
        assert!(e.contains("line 4") && e.contains("unknown field `leas`"), "{e}");
        assert!(err("").contains("no [[pool]]"));
    }

    #[test]
    fn an_agent_refuses_a_schedule_others_may_write() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.toml");
        std::fs::write(&f, GOOD).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o664)).unwrap();
        let e = Schedule::read_trusted(&f).unwrap_err().to_string();
        // The tests run as root: the file is root's, and its group may write it.
        assert!(
            e.contains("writable by its group (mode 664)") && e.contains("chmod go-w"),
            "{e}"
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(Schedule::read_trusted(&f).is_ok());
    }
}

#[cfg(test)]
mod study_tests {
    use storlab_model::study::{NewStudy, ReverseParams, StudyParams, UsersParams};

    use super::*;

    /// A cost and durations from stored studies: read from the database, then checked as the
    /// file's own figures are.
    #[test]
    fn a_pools_cost_and_durations_come_from_stored_studies() {
        let d = tempfile::tempdir().unwrap();
        let mut store = storlab_store::Store::open(&d.path().join("r.db"), "test").unwrap();
        let save = |store: &mut storlab_store::Store, params: StudyParams| {
            store
                .save_study(&NewStudy {
                    params,
                    members: vec![],
                    events: vec![],
                    task_samples: vec![],
                })
                .unwrap()
        };
        let users = save(
            &mut store,
            StudyParams::Impact(UsersParams {
                task: "btrfs-scrub:/srv".into(),
                worst_loss_percent: Some(13.9),
                worst_loss_worse_end_percent: Some(17.5),
                ..Default::default()
            }),
        );
        let reverse = save(
            &mut store,
            StudyParams::ImpactReverse(ReverseParams {
                idle_seconds: 6.0 * 3600.0,
                loaded_seconds: 9.0 * 3600.0,
                ..Default::default()
            }),
        );
        let text = |cost: &str, duration: &str| {
            let mut t =
                format!("[[pool]]\nname = \"P\"\nbudget = \"5%\"\ncost = \"{cost}\"\nduration = \"{duration}\"\n");
            for i in 0..10 {
                t += &format!("[[pool.server]]\nname = \"s{i}\"\ntask = \"cmd:true\"\n");
            }
            t
        };
        let mut s = Schedule::parse(
            &text(&format!("study:{users}"), &format!("study:{reverse}")),
            Path::new("s.toml"),
        )
        .unwrap();
        assert!(s.needs_studies());
        s.resolve(&store).unwrap();
        let p = &s.pools[0];
        assert_eq!(
            (p.cost, p.duration, p.duration_loaded),
            (13.9, Some(21600.0), Some(32400.0))
        );
        assert_eq!(crate::plan::pool_plan(p).k, 3);
        // The worse end: 17.5 % a server, two at once within 5 % of ten.
        let mut s = Schedule::parse(&text(&format!("study:{users}:worse-end"), "6h"), Path::new("s.toml")).unwrap();
        s.resolve(&store).unwrap();
        assert_eq!(crate::plan::pool_plan(&s.pools[0]).k, 2);
        // The wrong kind of study, a study not there, a malformed reference: named with the line.
        let mut s = Schedule::parse(&text(&format!("study:{reverse}"), "6h"), Path::new("s.toml")).unwrap();
        let e = s.resolve(&store).unwrap_err().to_string();
        assert!(
            e.contains("s.toml, line 4") && e.contains("a cost comes from a cost-to-the-users study"),
            "{e}"
        );
        let mut s = Schedule::parse(&text("study:999", "6h"), Path::new("s.toml")).unwrap();
        let e = s.resolve(&store).unwrap_err().to_string();
        assert!(e.contains("study 999: no such study"), "{e}");
        let e = Schedule::parse(&text("study:x", "6h"), Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 4") && e.contains("'x' is not a study's id"), "{e}");
    }
}
