//! Impact studies: what a verify, scrub or rebuild costs the users, and what the users cost it.
//! The tasks — start, watch and stop a background task (the trait in task.rs, the kinds listed
//! in kinds.rs): btrfs scrub and replace (btrfs.rs), md check and repair (md.rs), vendor CLIs
//! (vendor.rs), any three commands (cmd.rs) — and the three studies that run a foreground job
//! against them (study.rs), recording events and the tasks' progress as they go (record.rs),
//! driven from `storlab impact`'s request and stored (request.rs).
#![deny(missing_docs)]

pub mod btrfs;
pub mod cmd;
pub mod kinds;
pub mod md;
pub mod record;
pub mod request;
pub mod study;
pub mod task;
pub mod vendor;
