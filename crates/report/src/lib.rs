//! storlab's results in and out: fio's JSON imported as runs (fio.rs); exporters and the
//! self-contained HTML report come here too (DESIGN.md: crates/report).
#![warn(missing_docs)]

pub mod export;
pub mod fio;
pub mod table;
