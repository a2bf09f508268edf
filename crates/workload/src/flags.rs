//! The job settings as command-line flags, made from their one declaration
//! (`storlab_model::settings::SETTINGS`) so that a flag and its job-file key always mean the
//! same: the binary flattens [`SettingsArgs`] into every command that takes a job.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};

use crate::{Setting, Settings, WorkloadError, SETTINGS};

/// The job settings as flags, one per setting of the one declaration
/// (storlab_model::settings::SETTINGS): the flag is the key with '-' for '_', its help the
/// declaration's, a switch where the setting is one. The values are read by the settings' own
/// readers in [`SettingsArgs::to_settings`], so a flag and its job-file key always mean the same.
#[derive(Debug, Default, Clone)]
pub struct SettingsArgs {
    /// The flags given: each setting and its text.
    given: Vec<(&'static Setting, String)>,
}

impl SettingsArgs {
    /// The flags given, as settings; a refusal names the flag.
    pub fn to_settings(&self) -> Result<Settings, WorkloadError> {
        let mut s = Settings::default();
        for (x, v) in &self.given {
            crate::apply_str(&mut s, x.key, v, &x.flag())?;
        }
        Ok(s)
    }
}

impl FromArgMatches for SettingsArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut s = SettingsArgs::default();
        s.update_from_arg_matches(m)?;
        Ok(s)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for x in SETTINGS {
            if x.is_switch() {
                if m.get_flag(x.key) {
                    self.given.push((x, "true".into()));
                }
            } else if let Some(v) = m.get_one::<String>(x.key) {
                self.given.push((x, v.clone()));
            }
        }
        Ok(())
    }
}

impl Args for SettingsArgs {
    fn augment_args(cmd: Command) -> Command {
        SETTINGS.iter().fold(cmd, |cmd, x| {
            let arg = Arg::new(x.key).long(x.flag().trim_start_matches("--").to_string());
            cmd.arg(if x.is_switch() {
                arg.action(ArgAction::SetTrue).help(x.help)
            } else {
                arg.value_name(x.value)
                    .help(format!("{} (default: {})", x.help, x.default))
            })
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
