//! The Grafana dashboard in the repository (grafana/storlab-monitor.json) asks only for metrics
//! storlab exports: every `storlab_…` name in its queries, variables and annotations is a family
//! of the monitor's or of the live figures' exposition (a histogram's `_bucket`, `_sum` and
//! `_count` belong to its family).

use std::collections::BTreeSet;

use prometheus_client::registry::Registry;
use storlab_engine::IntervalObserver;
use storlab_metrics::endpoint::classic_text;
use storlab_metrics::live::LiveMetrics;
use storlab_model::monitor::{
    DiskDelta, DiskSample, FsSample, GaugeSample, Level, MonitorEvent, PoolPoint, Series, SeriesKind,
};
use storlab_monitor::metrics::MonitorMetrics;
use storlab_session::LiveRun;
use storlab_store::Sweep;

/// Every string in a JSON document.
fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// The `storlab_…` metric names in a text.
fn names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("storlab_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

#[test]
fn every_metric_the_dashboard_asks_for_is_exported() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../grafana/storlab-monitor.json");
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut texts = Vec::new();
    strings(&dash, &mut texts);
    let used: BTreeSet<String> = texts.iter().flat_map(|t| names(t)).collect();
    assert!(used.len() >= 25, "the dashboard uses {} metrics: {used:?}", used.len());

    // A family shows in the exposition once it has a series: one sweep with every kind of
    // series, published the way the monitor publishes, and a run's, a study's and a challenge's
    // live figures, told the way the engine and the commands tell them.
    let mut registry = Registry::default();
    let monitor = MonitorMetrics::register(&mut registry);
    let live = LiveMetrics::register(&mut registry);
    let kinds = [
        SeriesKind::Disk,
        SeriesKind::Filesystem,
        SeriesKind::Md,
        SeriesKind::Btrfs,
        SeriesKind::Nfs,
    ];
    let series: Vec<Series> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| Series {
            idx: i as u32,
            pool: "P".into(),
            kind: *k,
            name: format!("s{i}"),
            top: true,
        })
        .collect();
    let g = |series: u32, key: &str| GaugeSample {
        series,
        t: 1.0,
        level: Level::Full,
        key: key.into(),
        value: 1.0,
    };
    let sweep = Sweep {
        disks: vec![DiskSample {
            series: 0,
            t: 1.0,
            seconds: 1.0,
            level: Level::Full,
            delta: DiskDelta::default(),
        }],
        fs: vec![FsSample {
            series: 1,
            t: 1.0,
            level: Level::Full,
            size: 1,
            avail: 1,
            free: 1,
            files: 1,
            files_free: 1,
        }],
        gauges: vec![
            g(2, "syncing"),
            g(2, "sync_completed"),
            g(2, "mismatch_cnt"),
            g(2, "degraded"),
            g(3, "read_errs"),
            g(3, "scrub_running"),
            g(3, "scrub_bytes"),
            g(3, "scrub_csum_errors"),
            g(4, "read_bytes"),
            g(4, "ops:READ"),
            g(4, "rtt_ms:READ"),
        ],
        events: vec![MonitorEvent {
            t: 1.0,
            pool: "P".into(),
            name: "s0".into(),
            kind: "device-gone".into(),
            detail: String::new(),
        }],
    };
    let point = PoolPoint::default();
    monitor.publish(
        &series,
        &sweep,
        &[(0, true)],
        &[("P".into(), point.clone(), point)],
        0.001,
    );
    live.phase_started(&storlab_session::PhaseStart {
        run_id: 1,
        seq: 1,
        phases: 1,
        kind: "read",
        targets: &["/data".into()],
        runtime_seconds: Some(5.0),
        bytes: None,
        sampled: true,
    });
    // One read and one write of 1 µs, as an interval's recorded buckets.
    live.interval(0, [1, 1], [1, 1], &[vec![(1000, 1)], vec![(1000, 1)]]);
    live.study_event("task-start", "btrfs scrub of /data");
    live.study_progress(1, 2, "point 2");
    live.challenge_bytes(1, "P", 1, 1);
    let mut om = String::new();
    prometheus_client::encoding::text::encode(&mut om, &registry).unwrap();
    let text = classic_text(&om);
    let exported: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(exported.len() >= 30, "{exported:?}");
    for name in &used {
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| exported.contains(*f)))
            .unwrap_or(name);
        assert!(
            exported.contains(family),
            "the dashboard asks for {name}, which storlab does not export"
        );
    }
    assert!(dash["panels"].as_array().unwrap().len() > 20);
}
