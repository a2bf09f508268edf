//! fio's client/server protocol, version 97 — fio 3.33's, the version `storlab fio --version`
//! names — so that `storlab fio --server` serves fio's clients and `storlab fio --client` drives
//! fio's servers (pbench-fio, CBT and bench-fio's client mode run fio this way). This crate is
//! the wire only: frames (frame.rs: fio's `struct fio_net_cmd`, CRC-16 and 1 KiB fragments), the
//! commands' payloads (pdu.rs: server.h's `cmd_*_pdu`), and the figures a job's end sends
//! (stat.rs: stat.h's `struct thread_stat` and `struct group_run_stats`, byte for byte as
//! fio 3.33 lays them out on x86-64). What the figures mean is crates/report's (fio/remote.rs);
//! running the jobs, src/fio_net.rs's.
//!
//! fio's protocol has no authentication: whoever reaches the port (or may open the Unix socket)
//! runs jobs as the server's user. The server binds only to the address the user names
//! (docs/run.md says so).

pub mod address;
pub mod client;
mod codec;
pub mod conn;
pub mod frame;
pub mod iolog;
pub mod pdu;
pub mod serve;
pub mod stat;

pub use frame::{Command, FrameError, Op, PORT, VERSION};
