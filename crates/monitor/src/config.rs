//! The monitor's configuration file (`storlab monitor run --config /etc/storlab/monitor.toml`,
//! what the packaged systemd unit runs): the same settings as the flags, which win over it.
//!
//! ```toml
//! [monitor]
//! interval = "10s"
//! lt = "100s"
//! metrics = "127.0.0.1:9464"
//! db = "/var/lib/storlab/results.db"
//!
//! [[monitor.pool]]
//! name = "P1"
//! members = ["/dev/sdb", "/dev/sdc"]
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::MonitorError;

/// The file's `[monitor]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorFile {
    /// Time between samples.
    pub interval: Option<String>,
    /// The long-term window.
    pub lt: Option<String>,
    /// The metrics endpoint's address.
    pub metrics: Option<String>,
    /// The endpoint's web configuration (TLS, basic authentication).
    pub web_config: Option<String>,
    /// Keep anything this long.
    pub retain: Option<String>,
    /// Keep every sample this long.
    pub keep_full: Option<String>,
    /// Keep the long-term averages this long.
    pub keep_lt: Option<String>,
    /// The results database (a file or a postgres:// URL).
    pub db: Option<String>,
    /// No line per event on stderr.
    pub quiet: Option<bool>,
    /// The pools.
    #[serde(default)]
    pub pool: Vec<PoolTable>,
    /// The file and its text, for messages that name a value's line.
    #[serde(skip)]
    pub source: Option<(PathBuf, String)>,
}

/// One `[[monitor.pool]]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolTable {
    /// Its name.
    pub name: String,
    /// Its block devices and mount points.
    pub members: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Whole {
    monitor: MonitorFile,
}

impl MonitorFile {
    /// Reads and checks `path`; an error names the file, and the line for a TOML mistake or
    /// an unknown key.
    pub fn read(path: &Path) -> Result<MonitorFile, MonitorError> {
        let text = storlab_model::source::read_text(path).map_err(|e| MonitorError::Input(format!("--config {e}")))?;
        let whole: Whole = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| format!(" (line {})", storlab_model::source::line_of(&text, s.start)))
                .unwrap_or_default();
            let said = storlab_model::names::serde_did_you_mean(e.message());
            MonitorError::Input(format!("--config {}{line}: {said}", path.display()))
        })?;
        let mut file = whole.monitor;
        file.source = Some((path.to_path_buf(), text));
        Ok(file)
    }

    /// Where the file gives `key`, for a message about its value: "--config FILE, line 3, key
    /// interval".
    pub fn origin(&self, key: &str) -> String {
        let Some((path, text)) = &self.source else {
            return format!("the configuration's {key}");
        };
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with(key) && l.trim_start()[key.len()..].trim_start().starts_with('='))
            .map_or(0, |i| i + 1);
        format!("--config {}, line {line}, key {key}", path.display())
    }

    /// The pools as `--pool` gives them (`NAME=MEMBER,…`).
    pub fn pool_args(&self) -> Vec<String> {
        self.pool
            .iter()
            .map(|p| format!("{}={}", p.name, p.members.join(",")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("monitor.toml");
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn the_file_gives_pools_and_settings_and_a_mistake_names_its_line() {
        let (_d, p) = write(
            "[monitor]\ninterval = \"5s\"\n\n[[monitor.pool]]\nname = \"P1\"\nmembers = [\"/dev/sdb\", \"/dev/sdc\"]\n",
        );
        let f = MonitorFile::read(&p).unwrap();
        assert_eq!(f.interval.as_deref(), Some("5s"));
        assert_eq!(f.pool_args(), ["P1=/dev/sdb,/dev/sdc"]);
        let (_d, p) = write("[monitor]\ninterval = \"5s\"\nintervall = \"6s\"\n");
        let e = MonitorFile::read(&p).unwrap_err().to_string();
        assert!(e.contains("(line 3)") && e.contains("intervall"), "{e}");
        let e = MonitorFile::read(Path::new("/nonexistent/monitor.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--config /nonexistent/monitor.toml"), "{e}");
    }
}
