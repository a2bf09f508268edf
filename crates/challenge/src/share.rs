//! This host's share of a challenge from its stored beginning to its end: who takes part and
//! how (a challenge run alone, or an agent joining one in the database, or resuming after its
//! own process died), the run of kind `challenge` it is stored under, the work, the account,
//! the end of the challenge when this host is the last, and the run's status.

use std::sync::atomic::AtomicBool;

use storlab_model::challenge::{Account, ChallengeSpec, Fault, Pool};
use storlab_model::run::{NewRun, RunKind, RunStatus};
use storlab_store::{Store, StoreError, StoredChallenge};

use crate::faults::is_host_action;
use crate::run::{HostOutcome, RunConfig, SampleObserver};
use crate::spec::{parse_fault, parse_pool, SpecInput};
use crate::stats::{compute, Window};
use crate::{host, ChallengeError};

/// How this host takes part.
pub struct Share<'a> {
    /// This process's name in the catalogue (`HOST/PID`).
    pub agent: String,
    /// The command line stored with the run (a password in it masked).
    pub command: String,
    /// Writer threads here.
    pub writers: u32,
    /// Reader threads here.
    pub readers: u32,
    /// An agent among others (the backlog from the catalogue), not a challenge run alone.
    pub shared: bool,
    /// This host's dead processes whose files in flight it takes over at its start.
    pub take_over: Vec<String>,
    /// The host actions of this host's own plan.
    pub host_faults: Vec<Fault>,
    /// A live line on stderr.
    pub live: bool,
    /// Told each sample's bytes per pool (`--metrics`).
    pub observer: Option<SampleObserver<'a>>,
    /// Set to stop (Ctrl-C).
    pub interrupt: &'a AtomicBool,
}

impl Share<'static> {
    /// This process's share with `writers` and `readers`, alone (the caller says otherwise):
    /// its name, its `command` line, a `live` line when a person watches, stopped by Ctrl-C.
    pub fn alone(writers: u32, readers: u32, command: String, live: bool, interrupt: &'static AtomicBool) -> Self {
        Share {
            agent: agent_name(),
            command,
            writers,
            readers,
            shared: false,
            take_over: Vec::new(),
            host_faults: Vec::new(),
            live,
            observer: None,
            interrupt,
        }
    }
}

/// This process's name in the catalogue: the host and the process id, so that several agents
/// on one host hold their own leases and a resumed host can tell its dead processes.
pub fn agent_name() -> String {
    format!("{}/{}", storlab_env::hostname(), std::process::id())
}

/// `--pool NAME=DIR` for each pool, as an agent's command line names them.
pub fn pool_flags(pools: &[Pool]) -> String {
    let flags: Vec<String> = pools
        .iter()
        .map(|p| format!("--pool {}={}", p.name, p.path.display()))
        .collect();
    flags.join(" ")
}

/// The command that goes on with challenge `c` on this host: its database (`db` as given,
/// a password in it masked), pools, writers and readers.
pub fn resume_command(c: &StoredChallenge, db: Option<&str>, writers: u32, readers: u32) -> String {
    let db = db
        .and_then(|d| storlab_store::DbTarget::parse(d).ok())
        .map(|t| format!(" --db '{t}'"))
        .unwrap_or_default();
    format!(
        "storlab challenge resume {}{db} {} --writers {writers} --readers {readers}",
        c.id,
        pool_flags(&c.spec.pools)
    )
}

pub use storlab_model::challenge::Taken;

/// The pools a host lets an agent touch, named on its command line or in a job file, and its
/// own share: its flags, declared here once (the binary flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HostFlags {
    /// A job file with a `[challenge]` table naming this host's pools.
    #[arg(long = "job", value_name = "FILE")]
    pub job: Option<std::path::PathBuf>,
    /// A pool of this host: NAME=DIR; repeatable. Every pool of the challenge must be named,
    /// with the same directory as the database records.
    #[arg(long = "pool", value_name = "NAME=DIR")]
    pub pool: Vec<String>,
    /// Writer threads here (default: the challenge's).
    #[arg(long)]
    pub writers: Option<u32>,
    /// Reader threads here (default: the challenge's).
    #[arg(long)]
    pub readers: Option<u32>,
    /// A fault this host carries out, AT:ACTION:TARGET[:FOR] (unmount, read-only, detach,
    /// command, task: host actions are taken only from the host's own plan, never from the
    /// database); repeatable.
    #[arg(long = "fault", value_name = "AT:ACTION:TARGET[:FOR]")]
    pub fault: Vec<String>,
    /// Serve live figures for Prometheus at http://ADDR/metrics while this host takes part
    /// (bytes read and written per pool).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Lock the --metrics endpoint as Prometheus exporters lock theirs: a web configuration file
    /// in the exporter-toolkit's format (tls_server_config: cert_file, key_file; basic_auth_users:
    /// bcrypt hashes). Without it the endpoint is plain HTTP that anyone who reaches it reads.
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub web_config: Option<std::path::PathBuf>,
}

/// The host actions of a challenge defined and run on this host: its own command line named
/// them, so it carries them out.
pub fn host_faults(spec: &ChallengeSpec) -> Vec<Fault> {
    spec.faults
        .iter()
        .filter(|f| is_host_action(f.action))
        .cloned()
        .collect()
}

/// A challenge defined for agents holds no host action: each host carries out only what its own
/// plan names, never what the database says.
pub fn refuse_host_actions(spec: &ChallengeSpec) -> Result<(), ChallengeError> {
    match spec.faults.iter().find(|f| is_host_action(f.action)) {
        Some(f) => Err(ChallengeError::Input(format!(
            "--fault {}:{}:{}: a host action is carried out only by the host whose own plan names it; give it to that host's agent (storlab challenge agent ID --fault …), not to the challenge in the database",
            f.at, f.action, f.target
        ))),
        None => Ok(()),
    }
}

/// The pools this host names and its own fault plan: its command line, else its job file's
/// `[challenge]` table.
pub fn host_plan(flags: &HostFlags) -> Result<(Vec<Pool>, Vec<Fault>), ChallengeError> {
    let (pools, faults) = (&flags.pool, &flags.fault);
    let file = match &flags.job {
        Some(f) => SpecInput::from_file(f)?,
        None => SpecInput::default(),
    };
    let pools = if pools.is_empty() { &file.pool } else { pools };
    let faults = if faults.is_empty() { &file.fault } else { faults };
    let pools: Vec<Pool> = pools.iter().map(|p| parse_pool(p)).collect::<Result<_, _>>()?;
    let faults: Vec<Fault> = faults.iter().map(|f| parse_fault(f)).collect::<Result<_, _>>()?;
    if let Some(f) = faults.iter().find(|f| !is_host_action(f.action)) {
        return Err(ChallengeError::Input(format!(
            "--fault …:{}:{}: drain and stopping workers are the challenge's (storlab challenge create --fault); an agent's own plan holds host actions: unmount, read-only, detach, command, task",
            f.action, f.target
        )));
    }
    Ok((pools, faults))
}

/// An agent joining challenge `id`: it must exist and not be over, this host must name its pools
/// as the database records them, and its faults must name them; resuming takes over the files
/// in flight of this host's processes that are gone. Returns the challenge and the agents whose
/// files it takes over.
pub fn join(
    store: &Store,
    id: i64,
    mine: &[Pool],
    host_faults: &[Fault],
    resume: bool,
) -> Result<(StoredChallenge, Vec<String>), ChallengeError> {
    let c = store.challenge(id)?.ok_or_else(|| {
        ChallengeError::Input(format!(
            "no challenge {id} in {}: `storlab challenge list` shows the challenges there",
            store.target()
        ))
    })?;
    if matches!(c.status.as_str(), "done" | "failed" | "ending") {
        return Err(ChallengeError::Input(format!(
            "challenge {id} is over (status {})",
            c.status
        )));
    }
    host::check_pools(&c.spec, mine)?;
    crate::faults::check(&c.spec.pools, host_faults)?;
    let take_over = if resume {
        host::dead_agents_here(store, id)?
    } else {
        Vec::new()
    };
    Ok((c, take_over))
}

/// This host's share stored as a run of kind challenge, before any work: its id.
pub fn begin(store: &mut Store, c: &StoredChallenge, share: &Share) -> Result<i64, ChallengeError> {
    let job = serde_json::to_value(&c.spec).map_err(|e| ChallengeError::Io(e.to_string()))?;
    Ok(store.begin_run(&NewRun {
        kind: RunKind::Challenge,
        host: storlab_env::hostname(),
        job_name: Some(format!("challenge-{}", c.id)),
        job,
        command: share.command.clone(),
        tags: Vec::new(),
    })?)
}

/// The run's status after this host's share: aborted when interrupted, failed when the account
/// does not hold or the end's check found something, corrupt when a file did not verify.
pub fn status_of(outcome: &HostOutcome, account: &Account, problems: &[String]) -> RunStatus {
    if outcome.interrupted {
        RunStatus::Aborted
    } else if !account.holds() || !problems.is_empty() {
        RunStatus::Failed
    } else if !account.corrupted.is_empty() {
        RunStatus::Corrupt
    } else {
        RunStatus::Ok
    }
}

/// Runs this host's share under run `run_id` (see [`begin`]), ends the challenge when it is
/// over, and stores the run's end. When the work fails, the run is marked failed through a
/// connection `reopen` makes (the one that failed may have gone with it).
pub fn take_part(
    store: Store,
    c: &StoredChallenge,
    run_id: i64,
    share: &Share,
    reopen: impl FnOnce() -> Result<Store, StoreError>,
) -> Result<(Store, Taken), ChallengeError> {
    let cfg = RunConfig {
        host: share.agent.clone(),
        run_id,
        live: share.live,
        interrupt: share.interrupt,
        writers: share.writers,
        readers: share.readers,
        shared: share.shared,
        take_over: share.take_over.clone(),
        host_faults: share.host_faults.clone(),
        observer: share.observer,
    };
    let (store, outcome) = match crate::run::run(store, c, &cfg) {
        Ok(r) => r,
        Err(e) => {
            if let Ok(s) = reopen() {
                let _ = s.finish_run(run_id, RunStatus::Failed, Some(&e.to_string()));
            }
            return Err(e);
        }
    };
    let (account, problems, ended) = host::end_if_over(&store, c, &outcome)?;
    let status = status_of(&outcome, &account, &problems);
    let detail = (!problems.is_empty()).then(|| problems.join("; "));
    store.finish_run(run_id, status, detail.as_deref())?;
    let stats = compute(
        &store.challenge_samples(c.id, c.spec.pools.len())?,
        &c.spec,
        Window::All,
        &[],
    );
    let taken = Taken {
        run_id,
        outcome,
        account,
        problems,
        stats,
        ended,
        status,
    };
    Ok((store, taken))
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::challenge::FaultAction;

    #[test]
    fn the_status_follows_the_outcome_and_the_account() {
        let ok = Account::default();
        assert!(ok.holds());
        let done = HostOutcome::default();
        assert_eq!(status_of(&done, &ok, &[]), RunStatus::Ok);
        assert_eq!(status_of(&done, &ok, &["a file left".into()]), RunStatus::Failed);
        let stopped = HostOutcome {
            interrupted: true,
            ..Default::default()
        };
        assert_eq!(status_of(&stopped, &ok, &["x".into()]), RunStatus::Aborted);
        let broken = Account {
            written: 1,
            ..Default::default()
        };
        assert!(!broken.holds());
        assert_eq!(status_of(&done, &broken, &[]), RunStatus::Failed);
    }

    #[test]
    fn the_resume_command_names_the_pools_and_hides_the_password() {
        let d = tempfile::tempdir().unwrap();
        let input = crate::spec::SpecInput {
            pool: vec![
                format!("P1={}", d.path().display()),
                format!("P2={}", d.path().join("b").display()),
            ],
            files: Some(4),
            ..Default::default()
        };
        std::fs::create_dir(d.path().join("b")).unwrap();
        let c = StoredChallenge {
            id: 7,
            uuid: "u".into(),
            created_at: String::new(),
            spec: crate::spec::build(&input).unwrap(),
            status: "running".into(),
            t0: None,
        };
        let line = resume_command(&c, Some("postgres://ann:secret@db.example/storlab"), 3, 2);
        assert!(
            line.starts_with("storlab challenge resume 7 --db 'postgres://ann"),
            "{line}"
        );
        assert!(!line.contains("secret"), "{line}");
        let pools = format!(
            "--pool P1={} --pool P2={}",
            d.path().display(),
            d.path().join("b").display()
        );
        assert!(line.ends_with(&format!(" {pools} --writers 3 --readers 2")), "{line}");
        assert_eq!(
            resume_command(&c, None, 1, 0),
            format!("storlab challenge resume 7 {pools} --writers 1 --readers 0")
        );
        assert_eq!(
            agent_name(),
            format!("{}/{}", storlab_env::hostname(), std::process::id())
        );
    }

    #[test]
    fn host_actions_stay_with_their_host() {
        let d = tempfile::tempdir().unwrap();
        let pool = format!("P1={}", d.path().display());
        let (pools, faults) = host_plan(&HostFlags {
            pool: vec![pool.clone()],
            fault: vec!["10s:unmount:P1:5s".into()],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(pools[0].name, "P1");
        assert_eq!(faults[0].action, FaultAction::Unmount);
        let e = host_plan(&HostFlags {
            pool: vec![pool],
            fault: vec!["10s:drain:P1".into()],
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--fault …:drain:P1: drain and stopping workers are the challenge's"),
            "{e}"
        );
        let spec = |faults: &[&str]| {
            crate::spec::build(&SpecInput {
                pool: vec![format!("P1={}", d.path().display())],
                fault: faults.iter().map(|f| f.to_string()).collect(),
                duration: Some("1m".into()),
                ..Default::default()
            })
            .unwrap()
        };
        // (An unmount would need the pool to be a filesystem of its own: a command is a host
        // action the spec takes on any directory.)
        let both = spec(&["1s:drain:P1", "1s:command:true"]);
        let here = host_faults(&both);
        assert_eq!(here.len(), 1);
        assert_eq!(
            (here[0].action, here[0].target.as_str()),
            (FaultAction::Command, "true")
        );
        assert!(refuse_host_actions(&both).is_err());
        assert!(refuse_host_actions(&spec(&["1s:drain:P1"])).is_ok());
    }
}
