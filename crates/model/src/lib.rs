//! storlab's one result model: the types every layer shares. The workload crate fills a
//! [`plan::PhasePlan`], the engine returns a [`result::PhaseResult`], crates/env fills an
//! [`env::Environment`], crates/scan a [`scan::Report`]; the store persists exactly these
//! types (serde) and the report reads them back, typed. A field renamed here is renamed for
//! every reader at once, and the compiler finds the ones that need to change.
//!
//! This crate holds data and the small methods that describe it; it runs nothing, reads no
//! file and prints nothing.
//!
//! - settings.rs: every job setting declared once (`settings!`), with its key, reader and
//!   default; settings/read.rs the readers, settings/text.rs each value written back as text;
//! - values.rs: the kinds of value settings take that are more than a number;
//! - plan.rs: one phase fully resolved (what the engine runs); result.rs: what it produced;
//!   footprint.rs: what a worker of it holds (memory, a thread, descriptors); finite.rs: the
//!   first figure of any value that is not a finite number (the store's check before a write);
//! - run.rs: runs as stored; study.rs: studies (sets of runs) as stored; env.rs: the machine;
//! - terminal.rs: text as a terminal shows it, its control characters escaped;
//! - scan.rs, meta.rs, challenge.rs, monitor.rs, sched.rs, risk.rs, qualify.rs, versus.rs
//!   (`storlab compare`): each command's
//!   own results, as stored and as the report draws them.
#![deny(missing_docs)]

pub mod challenge;
pub mod env;
pub mod finite;
pub mod footprint;
pub mod iolog;
pub mod meta;
pub mod moments;
pub mod monitor;
pub mod names;
pub mod plan;
pub mod qualify;
pub mod result;
pub mod risk;
pub mod run;
pub mod scan;
pub mod sched;
pub mod settings;
pub mod source;
pub mod study;
pub mod terminal;
pub mod values;
pub mod versus;

/// Paths as a message names them: "/a, /b".
pub fn list_paths(p: &[std::path::PathBuf]) -> String {
    p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
