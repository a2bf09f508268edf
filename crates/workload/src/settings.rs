//! The job settings, as job files and flags give them: their one declaration is
//! crates/model/src/settings.rs (key, flag, help, default, reader); this module reads a job
//! file's TOML values and a flag's text through it, naming where a value came from when it is
//! refused.

pub use storlab_model::settings::{PhaseSettings, Setting, SettingError, Settings, SETTINGS};

use crate::WorkloadError;

/// The keys a job file takes besides the settings.
pub const JOB_KEYS: &[&str] = &["name", "target", "phase", "task", "create_target"];

fn refusal(e: SettingError, origin: &str) -> WorkloadError {
    match e {
        SettingError::Invalid(m) => WorkloadError::invalid(origin, m),
        SettingError::Unknown(k) => {
            let keys: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
            let near = storlab_model::names::did_you_mean(&k, JOB_KEYS.iter().chain(&keys).copied());
            WorkloadError::invalid(
                origin,
                format!(
                    "'{k}' is no key of a job{near}; the keys are {}, {}",
                    JOB_KEYS.join(", "),
                    keys.join(", ")
                ),
            )
        }
    }
}

/// Applies one key (or flag, with '-' for '_') given as text; `origin` says where it came from.
pub fn apply_str(s: &mut Settings, key: &str, text: &str, origin: &str) -> Result<(), WorkloadError> {
    s.apply_str(key, text).map_err(|e| refusal(e, origin))
}

/// Applies one job-file key's TOML value (a list for bs is a mix: ["4k:70", "64k:30"]).
pub fn apply(s: &mut Settings, key: &str, value: &toml::Value, origin: &str) -> Result<(), WorkloadError> {
    let text = match value {
        toml::Value::String(t) => t.clone(),
        toml::Value::Array(items) if key == "bs" => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    };
    apply_str(s, key, &text, origin)
}
