//! Whether a pool is busy: its tasks pause while it is. Asked of Prometheus (a query,
//! alert-style: busy while it returns any series) or of `storlab monitor`'s samples in the same
//! database (the pool's throughput, or its busiest device's utilisation, over the last seconds).

use std::time::Duration;

use storlab_store::Store;

use crate::schedule::Busy;

/// Asks whether the pool is busy now: Some(why) when it is, None when it is not, an error when
/// the source could not be asked (the agent then treats the pool as not busy and says so: a
/// monitoring outage must not stop verifies for good).
pub fn busy(b: &Busy, store: Option<&Store>, now: f64) -> Result<Option<String>, String> {
    match b {
        Busy::Prometheus { url, query } => prometheus(url, query),
        Busy::Monitor {
            pool,
            utilisation,
            throughput,
            over,
        } => {
            let store = store.ok_or("no database to read storlab monitor's samples from")?;
            let w = store.monitor_window(None, now - over, now).map_err(|e| e.to_string())?;
            let points = storlab_model::monitor::pool_points(&w.series, &w.disks);
            let Some((_, pts)) = points.iter().find(|(p, _)| p == pool) else {
                return Err(format!(
                    "storlab monitor stored no samples of pool {pool} in the last {over} s"
                ));
            };
            let secs: f64 = pts.iter().map(|p| p.seconds).sum();
            if secs <= 0.0 {
                return Err(format!("pool {pool}'s samples cover no time"));
            }
            let rate = pts
                .iter()
                .map(|p| (p.read_rate + p.write_rate) * p.seconds)
                .sum::<f64>()
                / secs;
            let util = pts.iter().map(|p| p.utilisation * p.seconds).sum::<f64>() / secs;
            if let Some(u) = utilisation.filter(|u| util > *u) {
                return Ok(Some(format!(
                    "pool {pool} {:.0} % utilised over {over} s (busy above {:.0} %)",
                    util * 100.0,
                    u * 100.0
                )));
            }
            if let Some(t) = throughput.filter(|t| rate > *t) {
                return Ok(Some(format!(
                    "pool {pool} moves {:.1} MiB/s over {over} s (busy above {:.1} MiB/s)",
                    rate / 1048576.0,
                    t / 1048576.0
                )));
            }
            Ok(None)
        }
    }
}

/// Prometheus' instant query (GET /api/v1/query): busy while the result holds any series.
fn prometheus(url: &str, query: &str) -> Result<Option<String>, String> {
    // A query Prometheus refuses comes back as 400 with its reason in the JSON body: read the
    // body whatever the status, so that the reason is what the agent says.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent
        .get(&format!("{url}/api/v1/query"))
        .query("query", query)
        .call()
        .map_err(|e| format!("Prometheus at {url}: {e}"))?;
    let status = resp.status();
    let body: serde_json::Value = resp
        .body_mut()
        .read_json()
        .map_err(|e| format!("Prometheus at {url}: HTTP {status}, not JSON: {e}"))?;
    if body["status"] != "success" {
        return Err(format!("Prometheus at {url}: {}", body["error"]));
    }
    let result = &body["data"]["result"];
    let n = match result {
        serde_json::Value::Array(a) => a.len(),
        // A scalar or string result: busy when it is not 0.
        _ => usize::from(result.get(1).and_then(|v| v.as_str()).is_some_and(|v| v != "0")),
    };
    Ok((n > 0).then(|| format!("the Prometheus query '{query}' returns {n} series")))
}
