//! A Prometheus server of a test's own: Debian's `prometheus` started on a free loopback port
//! with a scrape configuration of the test's targets and its storage in a temporary
//! directory, killed and its directory removed when dropped (a failing test included); and a
//! plain HTTP GET for its query API and for the endpoints it scrapes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Prometheus server scraping the targets it was started with.
pub struct Prometheus {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

/// A free TCP port on 127.0.0.1 (bound, then let go for the server that will take it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET http://`addr``path` with an optional Accept header: (status, Content-Type, body). HTTP
/// 1.0, so that the server closes the connection after its answer and the body is what is read
/// until then; no HTTP client crate is needed for the tests' few requests.
pub fn http_get(addr: &str, path: &str, accept: Option<&str>) -> std::io::Result<(u16, String, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n{accept}\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let ctype = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type").then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    Ok((status, ctype, body.to_string()))
}

/// `s` percent-encoded for a query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` (ADDR:PORT, path /metrics) every `scrape_interval`
    /// (`1s`), and waits until it answers.
    pub fn start(targets: &[String], scrape_interval: &str) -> Prometheus {
        Prometheus::start_on(free_port(), targets, scrape_interval)
    }

    /// As [`Prometheus::start`], listening on `port` (a test that names the server's address
    /// before it starts).
    pub fn start_on(port: u16, targets: &[String], scrape_interval: &str) -> Prometheus {
        Prometheus::start_scraping(port, targets, scrape_interval, "")
    }

    /// As [`Prometheus::start_on`], the scrape job's own YAML lines `job` added (each indented
    /// four spaces: `scheme: https`, a `tls_config`, `basic_auth`).
    pub fn start_scraping(port: u16, targets: &[String], scrape_interval: &str, job: &str) -> Prometheus {
        let dir = tempfile::Builder::new()
            .prefix("storlab-prometheus-")
            .tempdir()
            .unwrap();
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: {scrape_interval}\n  scrape_timeout: {scrape_interval}\nscrape_configs:\n  - job_name: storlab\n{job}    static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        );
        let config_file = dir.path().join("prometheus.yml");
        std::fs::write(&config_file, config).unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus (Debian's package `prometheus`; scripts/test installs it)");
        let p = Prometheus { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !matches!(http_get(&p.addr(), "/-/ready", None), Ok((200, _, _))) {
            assert!(Instant::now() < deadline, "prometheus did not get ready:\n{}", p.log());
            std::thread::sleep(Duration::from_millis(100));
        }
        // Its scrape manager takes the discovered targets up to 5 s after the start: wait
        // until each has been scraped once and is up.
        loop {
            let t = p.targets();
            if t.matches("\"health\":\"up\"").count() == targets.len() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus did not scrape its targets: {t}\n{}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// Where it listens.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// The HTTP API's answer to an instant query `expr`: the body (JSON) as text.
    pub fn query(&self, expr: &str) -> String {
        let (status, _, body) = http_get(&self.addr(), &format!("/api/v1/query?query={}", encode(expr)), None).unwrap();
        assert_eq!(status, 200, "query {expr}: {body}");
        body
    }

    /// The state of its scrape targets (/api/v1/targets), JSON as text.
    pub fn targets(&self) -> String {
        http_get(&self.addr(), "/api/v1/targets", None).unwrap().2
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
