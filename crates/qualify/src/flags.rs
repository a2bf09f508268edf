//! `storlab qualify`'s flags, declared here once (the binary flattens them into its command
//! line), and what they ask for: the plan to run — the file given, or with `--against` the
//! earlier qualification's own — prepared with its baselines, and how its runs are made.

use std::path::Path;

use storlab_model::qualify::QualifyParams;
use storlab_store::Store;

use crate::plan::Plan;
use crate::prepare::{self, Prepared};
use crate::{against, input, run, QualifyError};

/// What `storlab qualify` was given, as written: its flags, declared here once (the binary
/// flattens them into its command line).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct QualifyFlags {
    /// The qualification plan (TOML; docs/qualify.md). Not needed with --against, which runs
    /// the earlier qualification's plan again.
    #[arg(value_name = "PLAN")]
    pub plan: Option<std::path::PathBuf>,
    /// A target for every job (a directory, a file, or a device with --allow-device); repeat
    /// for several. Replaces the targets the plan's jobs name.
    #[arg(long = "target", value_name = "PATH")]
    pub targets: Vec<std::path::PathBuf>,
    /// A block device the jobs may write to (named again, as for `storlab run`).
    #[arg(long = "allow-device", value_name = "DEVICE")]
    pub allow_devices: Vec<std::path::PathBuf>,
    /// Write a device even while it is in use (mounted, a member of md, dm, btrfs or a zpool,
    /// swap), as for `storlab run`.
    #[arg(long)]
    pub allow_mounted_write: bool,
    /// At most this many repetitions of each job (default: the plan's, else 10; at least 3).
    #[arg(long = "max-repeats", value_name = "N")]
    pub max_repeats: Option<u32>,
    /// Stop starting repetitions after this long (e.g. 2h): what is not decided by then stays
    /// UNDECIDED.
    #[arg(long = "max-time", value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Run an earlier qualification's plan again and compare: its study id, a run of it, or
    /// KEY=VALUE (the newest qualification whose runs carry that tag).
    #[arg(long, value_name = "ID|KEY=VALUE")]
    pub against: Option<String>,
    /// A tag stored with every run, e.g. fw=1.3; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = storlab_model::run::parse_tag)]
    pub tags: Vec<storlab_model::run::Tag>,
    /// Keep the files the jobs create.
    #[arg(long)]
    pub keep: bool,
    /// Check the plan (and its baselines) and print what would run; run nothing.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
}

/// The plan prepared with its baselines, and the earlier qualification it is run against.
pub type Planned = (Prepared, Option<(i64, QualifyParams)>);

impl QualifyFlags {
    /// The plan file given: exactly one of PLAN and `--against`, and `--against` only where
    /// the database is read first (not under mpirun, whose ranks all read the file).
    pub fn plan_file(&self) -> Result<&Path, QualifyError> {
        match (&self.plan, &self.against) {
            (Some(_), Some(_)) => Err(input(
                "give a PLAN or --against, not both: --against runs the earlier qualification's own plan",
            )),
            (None, None) => Err(input(
                "no plan: give PLAN (a TOML file, docs/qualify.md) or --against ID|KEY=VALUE",
            )),
            (None, Some(_)) => Err(input("--against does not run under mpirun: give the plan file")),
            (Some(path), None) => Ok(path),
        }
    }

    /// What preparing the plan takes from the flags.
    pub fn prepare_options(&self) -> prepare::Options {
        prepare::Options {
            targets: self.targets.clone(),
            allow_devices: self.allow_devices.clone(),
            allow_mounted_write: self.allow_mounted_write,
            max_repeats: self.max_repeats,
        }
    }

    /// The plan file given, prepared (no database needed; its baselines are not read yet).
    pub fn prepared_file(&self) -> Result<Prepared, QualifyError> {
        prepare::prepare(Plan::load(self.plan_file()?)?, &self.prepare_options())
    }

    /// The plan — the file given, or with `--against` the earlier qualification's — prepared,
    /// with its baselines read, and the database they were read from: `open(existing)` opens
    /// it, an existing one for `--against` (its plan is stored there), else one it may make.
    /// A plan file is prepared before the database is opened, so that a refused plan leaves no
    /// database behind; every refusal comes before anything runs.
    pub fn planned<E: From<QualifyError>>(
        &self,
        open: impl FnOnce(bool) -> Result<Store, E>,
    ) -> Result<(Store, Planned), E> {
        let (store, mut plan, earlier) = match &self.against {
            Some(spec) if self.plan.is_none() => {
                let store = open(true)?;
                let (id, old) = against::earlier(&store, spec)?;
                let plan = prepare::prepare(against::plan_of(&old)?, &self.prepare_options())?;
                (store, plan, Some((id, old)))
            }
            _ => {
                let plan = self.prepared_file()?;
                (open(false)?, plan, None)
            }
        };
        prepare::read_baselines(&mut plan, &store)?;
        Ok((store, (plan, earlier)))
    }

    /// How the runs are made: these flags, the command line as stored, and the earlier
    /// qualification's id for `--against`.
    pub fn run_options(&self, command: String, against: Option<i64>) -> Result<run::Options, QualifyError> {
        let max_time = self
            .max_time
            .as_deref()
            .map(|t| t.parse::<storlab_units::Duration>().map(|d| d.0 as f64 / 1e9))
            .transpose()
            .map_err(|e| input(format!("--max-time: {e}")))?;
        Ok(run::Options {
            tags: self.tags.clone(),
            allow_devices: self.allow_devices.clone(),
            keep: self.keep,
            command,
            max_time,
            against,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_or_against_exactly_one_and_max_time_read_as_seconds() {
        let none = QualifyFlags::default();
        assert!(none.plan_file().unwrap_err().to_string().starts_with("no plan"));
        let both = QualifyFlags {
            plan: Some("p.toml".into()),
            against: Some("3".into()),
            ..Default::default()
        };
        assert!(both.plan_file().unwrap_err().to_string().contains("not both"));
        let earlier = QualifyFlags {
            against: Some("fw=1.2".into()),
            ..Default::default()
        };
        assert!(earlier.plan_file().unwrap_err().to_string().contains("mpirun"));
        // --against's plan is in the database: an existing one is asked for.
        let asked = earlier.planned(|existing| Err(input(format!("opened, existing: {existing}"))));
        assert_eq!(
            asked.err().map(|e| e.to_string()).as_deref(),
            Some("opened, existing: true")
        );
        let timed = QualifyFlags {
            max_time: Some("2h".into()),
            keep: true,
            ..Default::default()
        };
        let o = timed.run_options("storlab qualify p.toml".into(), Some(4)).unwrap();
        assert_eq!((o.max_time, o.keep, o.against), (Some(7200.0), true, Some(4)));
        let bad = QualifyFlags {
            max_time: Some("soon".into()),
            ..Default::default()
        };
        let e = bad.run_options(String::new(), None).unwrap_err();
        assert!(
            matches!(&e, QualifyError::Input(m) if m.starts_with("--max-time")),
            "{e}"
        );
    }

    #[test]
    fn a_missing_plan_file_is_refused_with_its_name_before_the_database_is_opened() {
        let f = QualifyFlags {
            plan: Some("/nonexistent/plan.toml".into()),
            ..Default::default()
        };
        let e = f.prepared_file().unwrap_err();
        assert!(
            matches!(&e, QualifyError::Input(m) if m.contains("/nonexistent/plan.toml")),
            "{e}"
        );
        // Refused before the database is opened (a refused plan makes none).
        let e = f.planned(|_| -> Result<Store, QualifyError> { panic!("the database was opened") });
        assert!(e
            .err()
            .is_some_and(|e| e.to_string().contains("/nonexistent/plan.toml")));
    }
}
