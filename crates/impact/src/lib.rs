//! Impact studies: what a verify, scrub or rebuild costs the users, and what the users cost it.
//! This first part is the tasks: start, watch and stop a background task (task.rs), with a real
//! btrfs scrub (btrfs.rs) and any task given as three commands.
#![warn(missing_docs)]

pub mod btrfs;
pub mod md;
pub mod task;
pub mod vendor;
