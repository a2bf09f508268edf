//! The /metrics endpoint: a `prometheus-client` registry served over HTTP (`tiny_http`, one
//! thread), bound before anything starts so that a taken port or an address that is not this
//! host's is refused at once.
//!
//! It speaks both exposition formats: OpenMetrics (what the crate encodes, and what Prometheus
//! asks for first) and, for a client that does not ask for it (promtool, curl), the classic text
//! format 0.0.4, which differs in naming a counter's family by its samples' name (`…_total`) and
//! in having no `# UNIT` and `# EOF` lines.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address given: taken, not this host's, not an address. Nothing started.
    #[error("{0}")]
    Address(String),
    /// The endpoint could not start.
    #[error("{0}")]
    Io(String),
}

/// The HTTP endpoint serving a registry at /metrics until dropped.
pub struct Endpoint {
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

/// Binds `addr` (ADDRESS:PORT) for the metrics endpoint: before anything starts, so that a
/// taken port or an address that is not this host's is an error the user sees at once.
pub fn bind(addr: &str) -> Result<TcpListener, MetricsError> {
    let bad = |why: String| MetricsError::Address(format!("--metrics {addr}: {why}"));
    let resolved: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|_| bad("expected ADDRESS:PORT, e.g. 127.0.0.1:9464 (loopback) or this host's own address".into()))?
        .collect();
    let first = *resolved
        .first()
        .ok_or_else(|| bad("the name resolves to no address".into()))?;
    TcpListener::bind(first).map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse => bad(format!(
            "the address is taken (another exporter or storlab?); `ss -ltnp 'sport = :{}'` shows by whom, or choose another port",
            first.port()
        )),
        std::io::ErrorKind::AddrNotAvailable => bad(format!(
            "{} is neither loopback nor an address of this host's interfaces (`ip -brief address` lists them)",
            first.ip()
        )),
        std::io::ErrorKind::PermissionDenied => bad(format!("port {} needs privileges; choose one above 1023", first.port())),
        _ => bad(e.to_string()),
    })
}

/// The classic text format (0.0.4) of an OpenMetrics exposition: a counter family's HELP and
/// TYPE lines name it by its samples' name (`x_total`), UNIT and EOF lines go.
pub fn classic_text(openmetrics: &str) -> String {
    let mut counters: Vec<&str> = Vec::new();
    for l in openmetrics.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            if let Some(name) = rest.strip_suffix(" counter") {
                counters.push(name);
            }
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for l in openmetrics.lines() {
        if l.starts_with("# UNIT ") || l == "# EOF" {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = l.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters.contains(&name).then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(l));
        out.push('\n');
    }
    out
}

fn respond(rq: tiny_http::Request, registry: &Registry) {
    let path = rq.url().split('?').next().unwrap_or("");
    if path != "/metrics" {
        let r = tiny_http::Response::from_string("storlab: the metrics are at /metrics\n").with_status_code(404);
        let _ = rq.respond(r);
        return;
    }
    let mut body = String::new();
    if encode(&mut body, registry).is_err() {
        let _ = rq.respond(tiny_http::Response::from_string("cannot encode the metrics\n").with_status_code(500));
        return;
    }
    let wants_openmetrics = rq
        .headers()
        .iter()
        .any(|h| h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text"));
    let (body, ctype) = if wants_openmetrics {
        (body, "application/openmetrics-text; version=1.0.0; charset=utf-8")
    } else {
        (classic_text(&body), "text/plain; version=0.0.4; charset=utf-8")
    };
    let header = tiny_http::Header::from_bytes("Content-Type", ctype).expect("a valid header");
    let _ = rq.respond(tiny_http::Response::from_string(body).with_header(header));
}

impl Endpoint {
    /// Serves `registry` at http://ADDR/metrics from `listener` (see [`bind`]) on a thread of
    /// its own.
    pub fn start(listener: TcpListener, registry: Arc<Registry>) -> Result<Endpoint, MetricsError> {
        let addr = listener.local_addr().map_err(|e| MetricsError::Io(e.to_string()))?;
        let server = Arc::new(
            tiny_http::Server::from_listener(listener, None)
                .map_err(|e| MetricsError::Io(format!("metrics endpoint: {e}")))?,
        );
        let s = server.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for rq in s.incoming_requests() {
                    respond(rq, &registry);
                }
            })
            .map_err(|e| MetricsError::Io(e.to_string()))?;
        Ok(Endpoint {
            server,
            thread: Some(thread),
            addr,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classic_format_names_a_counter_family_by_its_samples_and_drops_unit_and_eof() {
        let om = "# HELP storlab_disk_read_bytes Bytes read.\n# TYPE storlab_disk_read_bytes counter\n# UNIT storlab_disk_read_bytes bytes\nstorlab_disk_read_bytes_total{pool=\"P\"} 5\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n# EOF\n";
        let t = classic_text(om);
        assert_eq!(
            t,
            "# HELP storlab_disk_read_bytes_total Bytes read.\n# TYPE storlab_disk_read_bytes_total counter\nstorlab_disk_read_bytes_total{pool=\"P\"} 5\n# HELP g A gauge.\n# TYPE g gauge\ng 1\n"
        );
    }

    #[test]
    fn a_taken_port_and_a_foreign_address_are_refused_by_name() {
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap().to_string();
        let e = bind(&addr).unwrap_err().to_string();
        assert!(e.contains("the address is taken"), "{e}");
        // TEST-NET-1 (RFC 5737) is no host's address.
        let e = bind("192.0.2.1:9464").unwrap_err().to_string();
        assert!(e.contains("neither loopback nor an address of this host"), "{e}");
        let e = bind("nonsense").unwrap_err().to_string();
        assert!(e.contains("expected ADDRESS:PORT"), "{e}");
    }
}
