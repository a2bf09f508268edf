//! What every command that runs something shares: the command line as stored, the status
//! line, the live views (`--metrics` and the status line), and the exit code of a run's status.

use std::sync::Arc;

use anyhow::Result;
use storlab_metrics::status::StatusLine;
use storlab_model::run::RunStatus;
use storlab_session::{LiveRun, LiveViews};

use crate::cli::OutputArgs;
use crate::{exit, usage};
use storlab_store::Store;

/// The command line as typed, stored with every run, a database password in it masked.
pub(crate) fn command_line() -> String {
    quoted_command(std::env::args_os())
}

/// `args` as one line a shell runs as the same argv (bash's and zsh's quoting: `'a b'`,
/// `$'\e…'` for control characters, `\xHH` for bytes that are not UTF-8), with any password
/// in a database URL or keywords masked — so that pasting a stored command runs what ran, and
/// printing it shows no raw escape sequence.
pub(crate) fn quoted_command(args: impl Iterator<Item = std::ffi::OsString>) -> String {
    use shell_quote::{Bash, QuoteRefExt};
    // A word of characters no shell treats specially is left as typed (`--tag fs=ext4`).
    let plain = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    let words: Vec<String> = args
        .map(|a| match a.to_str() {
            Some(text) => {
                let masked = storlab_store::mask_command_line(&[text.to_string()]).remove(0);
                if plain(&masked) {
                    masked
                } else {
                    masked.as_str().quoted(Bash)
                }
            }
            None => a.as_os_str().quoted(Bash),
        })
        .collect();
    words.join(" ")
}

/// The status line, when a person watches (a terminal, stdout not one document, no --quiet);
/// `study` names the study for its own line.
pub(crate) fn status_line(out: &OutputArgs, quiet: bool, study: Option<String>) -> Option<Arc<StatusLine>> {
    storlab_metrics::status::wanted(out.json || out.csv, quiet).then(|| StatusLine::start(study))
}

/// The live views of a command: `--metrics` and the status line, either or both.
pub(crate) fn views(
    live: Option<&storlab_metrics::live::Live>,
    status: &Option<Arc<StatusLine>>,
) -> Option<Arc<dyn LiveRun + Send + Sync>> {
    LiveViews::of(vec![
        live.map(|l| l.shared()),
        status.clone().map(|s| s as Arc<dyn LiveRun + Send + Sync>),
    ])
}

/// The exit code of a run's status.
pub(crate) fn code_of(status: RunStatus) -> u8 {
    match status {
        RunStatus::Aborted => exit::ABORTED,
        RunStatus::Corrupt => exit::CORRUPT,
        RunStatus::Failed => 1,
        _ => 0,
    }
}

/// `--metrics ADDR`: the live figures served while the command runs (bound now, before anything
/// is stored, so that a taken address is refused with nothing done).
pub(crate) fn serve_live(
    addr: Option<&str>,
    web_config: Option<&std::path::Path>,
    study: &str,
) -> Result<Option<storlab_metrics::live::Live>> {
    let live = storlab_metrics::live::serve(addr, web_config, study).map_err(|e| usage(e.to_string()))?;
    if let Some(l) = &live {
        eprintln!("storlab: live figures at {}", l.endpoint.url());
    }
    Ok(live)
}

/// What a measuring command holds while it works: the database, the command line its runs are
/// stored with, and the live views (`--metrics`, the status line), which [`Measuring::end`]
/// ends before anything is printed.
pub(crate) struct Measuring {
    pub store: Store,
    pub command: String,
    pub live: Option<Arc<dyn LiveRun + Send + Sync>>,
    /// The metrics endpoint, served until the end.
    endpoint: Option<storlab_metrics::live::Live>,
}

impl Measuring {
    /// Serves `--metrics` at `metrics` (bound before anything is stored), opens the database,
    /// and starts the status line when a person watches (`study` names a study's own line).
    pub fn start(
        metrics: Option<&str>,
        web_config: Option<&std::path::Path>,
        what: &str,
        out: &OutputArgs,
        quiet: bool,
        study: Option<String>,
    ) -> Result<Measuring> {
        let endpoint = serve_live(metrics, web_config, what)?;
        let store = crate::results::open_new(&out.db)?;
        let status = status_line(out, quiet, study);
        Ok(Measuring {
            store,
            command: command_line(),
            live: views(endpoint.as_ref(), &status),
            endpoint,
        })
    }

    /// Ends the live views (the status line is gone, the endpoint closed); the database stays.
    pub fn end(self) -> Store {
        drop((self.live, self.endpoint));
        self.store
    }
}
