//! Everything storlab shows a person or hands to another tool: the tables on the terminal, the
//! self-contained HTML report with its plots, and the files the exporters write — every one
//! built here from the result model (crates/model), none outside this crate.
//!
//! Each phase's bound — what limited it — is shown everywhere a phase is (bound.rs).
//!
//! Every table is one [`table::Table`] drawn for the terminal and in HTML and written by the
//! exporters behind one trait (export.rs: CSV, JSON, Markdown, XLSX). Its builders: runs
//! (runs.rs), studies by kind (studies.rs), scans (scan.rs), comparisons (compare.rs), IOzone's
//! layout and workbook (iozone.rs), the ranks and hosts of a team (team.rs), a data challenge
//! (challenge.rs), the monitor's window (monitor.rs), the scheduler's plan and status
//! (sched.rs), the risk model (risk.rs), a qualification's verdict and certificate
//! (qualify.rs), a compare of two targets (versus.rs); a stored run as fio's JSON document or terse line (fio.rs); the HTML page
//! (html.rs) and its SVG plots (svg.rs).
#![deny(missing_docs)]

pub mod bound;
pub mod challenge;
pub mod compare;
pub mod export;
pub mod fio;
pub mod html;
pub mod iozone;
pub mod monitor;
pub mod qualify;
pub mod risk;
pub mod runs;
pub mod scan;
pub mod sched;
pub mod studies;
pub mod svg;
pub mod table;
pub mod team;
pub mod undecided;
pub mod versus;
