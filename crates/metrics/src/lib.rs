//! Prometheus for storlab: the /metrics endpoint (endpoint.rs: bound before anything starts,
//! both exposition formats; its TLS and basic authentication from an exporter-toolkit web
//! configuration, web.rs) and the live figures of a long command as it runs (live.rs: a run's
//! bytes, operations and latency per phase and target, a study's task and progress, a
//! challenge's bytes and files). The monitor's own families are crates/monitor's. The same
//! live figures drawn for a person on a terminal are the status line (status.rs, indicatif).

pub mod endpoint;
pub mod live;
pub mod status;
pub mod web;
