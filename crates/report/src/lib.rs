//! storlab's results in and out, typed from the result model (crates/model): every table is one
//! [`table::Table`] drawn for the terminal and in HTML and written by the exporters behind one
//! trait (export.rs: CSV, JSON, Markdown, XLSX); runs (runs.rs), studies (studies.rs), scans
//! (scan.rs), comparisons (compare.rs), IOzone's layout (iozone.rs) and the ranks of an MPI run (ranks.rs)
//! each have their builders;
//! the self-contained HTML report (html.rs, svg.rs); and the imports of fio's JSON (fio.rs) and
//! IOzone's text (iozone.rs) as runs. No HTML and no table is built outside this crate.
#![deny(missing_docs)]

pub mod challenge;
pub mod compare;
pub mod export;
pub mod fio;
pub mod html;
pub mod iozone;
pub mod monitor;
pub mod qualify;
pub mod ranks;
pub mod risk;
pub mod runs;
pub mod scan;
pub mod sched;
pub mod studies;
pub mod svg;
pub mod table;
