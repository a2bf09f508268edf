//! The /metrics endpoint: a `prometheus-client` registry served over HTTP/1.1 — or HTTPS with
//! basic authentication, as a web configuration file says (web.rs) — bound before anything
//! starts, so that a taken port, an address that is not this host's or a web configuration
//! that does not read is refused at once.
//!
//! It speaks both exposition formats: OpenMetrics (what the crate encodes, and what Prometheus
//! asks for first) and, for a client that does not ask for it (promtool, curl), the classic text
//! format 0.0.4, which differs in naming a counter's family by its samples' name (`…_total`) and
//! in having no `# UNIT` and `# EOF` lines.
//!
//! The server is storlab's own, a few dozen lines over `httparse` (requests) and rustls (TLS):
//! it answers GET /metrics and nothing else, a thread per connection (at most
//! [`CONNECTIONS`] at once), each with a deadline, so that a client that stalls holds one
//! thread for ten seconds and no more.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use crate::web::WebConfig;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The address or web configuration given: taken, not this host's, not an address, a file
    /// that does not read. Nothing started.
    #[error("{0}")]
    Address(String),
    /// The endpoint could not start.
    #[error("{0}")]
    Io(String),
}

/// Connections served at once; more wait in the kernel's queue.
pub const CONNECTIONS: usize = 16;

/// How long a connection may take to send a request or read the answer.
const DEADLINE: Duration = Duration::from_secs(10);

/// The endpoint serving a registry at /metrics until dropped.
pub struct Endpoint {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
    tls: bool,
}

/// An address bound for the endpoint, with its web configuration read: nothing is served yet.
pub struct Bound {
    listener: TcpListener,
    web: Option<Arc<WebConfig>>,
}

/// Binds `addr` (ADDRESS:PORT) for the metrics endpoint and reads the web configuration
/// `web_config` (`--web-config`) when given: before anything starts, so that a taken port, an
/// address that is not this host's or a configuration that does not read is an error the user
/// sees at once.
pub fn bind(addr: &str, web_config: Option<&std::path::Path>) -> Result<Bound, MetricsError> {
    let web = web_config.map(WebConfig::load).transpose()?.map(Arc::new);
    Ok(Bound {
        listener: bind_address(addr)?,
        web,
    })
}

fn bind_address(addr: &str) -> Result<TcpListener, MetricsError> {
    let bad = |why: String| MetricsError::Address(format!("--metrics {addr}: {why}"));
    let resolved: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|_| bad("expected ADDRESS:PORT, e.g. 127.0.0.1:9464 (loopback), an address of this host, or 0.0.0.0:9464 (every interface)".into()))?
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

/// The answer to a request for `path` with these headers: (status, content type, body).
fn answer(path: &str, accept: Option<&str>, registry: &Registry) -> (u16, &'static str, String) {
    if path.split('?').next() != Some("/metrics") {
        return (
            404,
            "text/plain; charset=utf-8",
            "storlab: the metrics are at /metrics\n".into(),
        );
    }
    let mut body = String::new();
    if encode(&mut body, registry).is_err() {
        return (500, "text/plain; charset=utf-8", "cannot encode the metrics\n".into());
    }
    if accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
        (200, "application/openmetrics-text; version=1.0.0; charset=utf-8", body)
    } else {
        (200, "text/plain; version=0.0.4; charset=utf-8", classic_text(&body))
    }
}

/// Reads one request's head (up to its blank line, at most 16 KiB) from `s`: its bytes, or None
/// when the client closed, stalled past the deadline or sent too much.
fn read_head(s: &mut impl Read, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(end + 4);
        }
        if buf.len() > 16 << 10 {
            return None;
        }
        let mut chunk = [0u8; 2048];
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Serves the requests of one connection (kept alive as HTTP/1.1 asks) until it closes.
fn serve_connection(mut s: impl Read + Write, registry: &Registry, web: Option<&WebConfig>) {
    let mut buf = Vec::new();
    while let Some(len) = read_head(&mut s, &mut buf) {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut rq = httparse::Request::new(&mut headers);
        let parsed = rq.parse(&buf[..len]);
        let header = |name: &str| {
            rq.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .and_then(|h| std::str::from_utf8(h.value).ok())
        };
        let (status, ctype, body, close) = match parsed {
            Ok(httparse::Status::Complete(_)) if rq.method == Some("GET") || rq.method == Some("HEAD") => {
                let close =
                    rq.version == Some(0) || header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
                if web.is_some_and(|w| !w.admits(header("authorization"))) {
                    (
                        401,
                        "text/plain; charset=utf-8",
                        "storlab: a user and password are needed\n".to_string(),
                        close,
                    )
                } else {
                    let (st, ct, b) = answer(rq.path.unwrap_or("/"), header("accept"), registry);
                    (st, ct, b, close)
                }
            }
            Ok(httparse::Status::Complete(_)) => {
                (405, "text/plain; charset=utf-8", "storlab: GET /metrics\n".into(), true)
            }
            _ => (
                400,
                "text/plain; charset=utf-8",
                "storlab: not an HTTP request\n".into(),
                true,
            ),
        };
        let head_only = rq.method == Some("HEAD");
        buf.drain(..len);
        let reason = match status {
            200 => "OK",
            401 => "Unauthorized",
            404 => "Not Found",
            405 => "Method Not Allowed",
            500 => "Internal Server Error",
            _ => "Bad Request",
        };
        let mut out = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n",
            body.len()
        );
        if status == 401 {
            out += "WWW-Authenticate: Basic realm=\"storlab\"\r\n";
        }
        out += if close { "Connection: close\r\n\r\n" } else { "\r\n" };
        let sent = s.write_all(out.as_bytes()).and_then(|_| {
            if head_only {
                Ok(())
            } else {
                s.write_all(body.as_bytes())
            }
        });
        if sent.and_then(|_| s.flush()).is_err() || close {
            return;
        }
    }
}

/// One accepted connection served: over TLS when the web configuration asks for it.
fn connection(tcp: TcpStream, registry: &Registry, web: Option<&WebConfig>) {
    let _ = tcp.set_read_timeout(Some(DEADLINE));
    let _ = tcp.set_write_timeout(Some(DEADLINE));
    let _ = tcp.set_nodelay(true);
    match web.and_then(|w| w.tls.clone()) {
        Some(tls) => {
            let Ok(conn) = rustls::ServerConnection::new(tls) else {
                return;
            };
            let mut stream = rustls::StreamOwned::new(conn, tcp);
            serve_connection(&mut stream, registry, web);
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
        None => serve_connection(tcp, registry, web),
    }
}

impl Endpoint {
    /// Serves `registry` at /metrics on the address `bound` holds (see [`bind`]), from a thread
    /// of its own.
    pub fn start(bound: Bound, registry: Arc<Registry>) -> Result<Endpoint, MetricsError> {
        let Bound { listener, web } = bound;
        let addr = listener.local_addr().map_err(|e| MetricsError::Io(e.to_string()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let tls = web.as_ref().is_some_and(|w| w.tls.is_some());
        let (stopping, open) = (stop.clone(), Arc::new(AtomicUsize::new(0)));
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for tcp in listener.incoming() {
                    if stopping.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(tcp) = tcp else { continue };
                    if open.load(Ordering::Relaxed) >= CONNECTIONS {
                        continue;
                    }
                    open.fetch_add(1, Ordering::Relaxed);
                    let (registry, web, mine) = (registry.clone(), web.clone(), open.clone());
                    let spawned = std::thread::Builder::new().name("metrics-conn".into()).spawn(move || {
                        connection(tcp, &registry, web.as_deref());
                        mine.fetch_sub(1, Ordering::Relaxed);
                    });
                    if spawned.is_err() {
                        open.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            })
            .map_err(|e| MetricsError::Io(e.to_string()))?;
        Ok(Endpoint {
            stop,
            thread: Some(thread),
            addr,
            tls,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its URL: `https://ADDR/metrics` or `http://…`.
    pub fn url(&self) -> String {
        format!("{}://{}/metrics", if self.tls { "https" } else { "http" }, self.addr)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // The accepting thread waits in accept(2): a connection of our own wakes it to see the
        // stop (an endpoint on every interface is reached on loopback).
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
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
        let e = bind_address(&addr).unwrap_err().to_string();
        assert!(e.contains("the address is taken"), "{e}");
        // TEST-NET-1 (RFC 5737) is no host's address.
        let e = bind_address("192.0.2.1:9464").unwrap_err().to_string();
        assert!(e.contains("neither loopback nor an address of this host"), "{e}");
        let e = bind_address("nonsense").unwrap_err().to_string();
        assert!(e.contains("expected ADDRESS:PORT"), "{e}");
    }
}
