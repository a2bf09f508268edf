//! The endpoint's lock: a web configuration file in the Prometheus exporter-toolkit's format
//! (the `--web.config.file` of node_exporter and every exporter built on it), so that a site's
//! existing file works as it is:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: server.crt        # relative paths are from the file's own directory
//!   key_file: server.key
//!   client_auth_type: RequireAndVerifyClientCert   # optional, with client_ca_file
//!   client_ca_file: ca.crt
//!   min_version: TLS12           # TLS12 (the default) or TLS13
//! basic_auth_users:
//!   prometheus: $2y$10$…         # bcrypt hashes, as htpasswd -B makes them
//! ```
//!
//! Read whole before anything starts; a key storlab does not know is refused by name with its
//! line, never ignored (a lock that silently does less than its file says is no lock). TLS is
//! rustls, passwords bcrypt: no cryptography of storlab's own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use yaml_rust2::{Yaml, YamlLoader};

use crate::endpoint::MetricsError;

/// What the web configuration asks of the endpoint.
pub struct WebConfig {
    /// The file it came from.
    pub path: PathBuf,
    /// TLS, when `tls_server_config` is given.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// `basic_auth_users`: each user's bcrypt hash (empty: no password asked).
    users: HashMap<String, String>,
    /// Credentials that verified, by a keyed hash of user and password (bcrypt is slow on
    /// purpose; a scrape every few seconds pays it once, as the exporter-toolkit caches too).
    verified: Mutex<HashMap<u64, ()>>,
    hasher: std::collections::hash_map::RandomState,
}

/// A bcrypt hash of no one's password, verified against for a user that does not exist, so
/// that a wrong user name takes as long as a wrong password.
const DUMMY_HASH: &str = "$2b$10$uNIYyx4FZQnWSV1GFyjDjuYG4P5fxUhRtjAyo1vAZpnXoCjvXKYoS";

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The users' hashes are not printed.
        f.debug_struct("WebConfig")
            .field("path", &self.path)
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.len())
            .finish()
    }
}

impl WebConfig {
    /// Reads and checks the file at `path`: its YAML, its keys, the certificate and key it
    /// names, each user's hash.
    pub fn load(path: &Path) -> Result<WebConfig, MetricsError> {
        let bad = |what: String| MetricsError::Address(format!("--web-config {}: {what}", path.display()));
        let text = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        let text = storlab_model::source::utf8(&text).map_err(bad)?;
        let docs = YamlLoader::load_from_str(&text).map_err(|e| {
            let m = e.marker();
            bad(format!("line {}, column {}: {}", m.line(), m.col() + 1, e.info()))
        })?;
        let doc = docs.into_iter().next().unwrap_or(Yaml::Hash(Default::default()));
        let line = |key: &str| line_of(&text, key);
        let top = as_map(&doc, "the file", &bad)?;
        let mut tls = None;
        let mut users = HashMap::new();
        for (k, v) in top {
            match k.as_str() {
                "tls_server_config" => tls = Some(tls_config(path, v, &line, &bad)?),
                "basic_auth_users" => users = auth_users(v, &line, &bad)?,
                "http_server_config" => http_config(v, &line, &bad)?,
                other => {
                    return Err(bad(format!(
                        "line {}: `{other}` is not a key of the web configuration (tls_server_config, basic_auth_users, http_server_config)",
                        line(other)
                    )))
                }
            }
        }
        Ok(WebConfig {
            path: path.to_path_buf(),
            tls,
            users,
            verified: Mutex::new(HashMap::new()),
            hasher: Default::default(),
        })
    }

    /// True when the endpoint asks for a user and password.
    pub fn asks_password(&self) -> bool {
        !self.users.is_empty()
    }

    /// Whether `Authorization: Basic …` (its value, or none) lets a request in.
    pub fn admits(&self, authorization: Option<&str>) -> bool {
        if self.users.is_empty() {
            return true;
        }
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return false;
        };
        use std::hash::BuildHasher;
        let key = self.hasher.hash_one((&user, &password));
        if self
            .verified
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&key)
        {
            return true;
        }
        let (hash, known) = match self.users.get(&user) {
            Some(h) => (h.as_str(), true),
            None => (DUMMY_HASH, false),
        };
        let ok = bcrypt::verify(&password, hash).unwrap_or(false) && known;
        if ok {
            self.verified.lock().unwrap_or_else(|e| e.into_inner()).insert(key, ());
        }
        ok
    }
}

/// `Basic base64(user:password)` as (user, password).
fn basic_credentials(value: &str) -> Option<(String, String)> {
    use base64::Engine;
    let (scheme, b64) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD.decode(b64.trim()).ok()?;
    let text = String::from_utf8(raw).ok()?;
    let (u, p) = text.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

/// The line of the first `key:` in the text, for messages (yaml-rust2 keeps no line per key).
fn line_of(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with(&format!("{key}:")))
        .map_or(0, |i| i + 1)
}

fn as_map<'a>(
    y: &'a Yaml,
    what: &str,
    bad: &dyn Fn(String) -> MetricsError,
) -> Result<Vec<(String, &'a Yaml)>, MetricsError> {
    match y {
        Yaml::Hash(h) => h
            .iter()
            .map(|(k, v)| match k {
                Yaml::String(s) => Ok((s.clone(), v)),
                other => Err(bad(format!("{what}: a key is {other:?}, not a name"))),
            })
            .collect(),
        Yaml::Null => Ok(Vec::new()),
        _ => Err(bad(format!("{what} is not a mapping of keys to values"))),
    }
}

fn text_value(
    v: &Yaml,
    key: &str,
    line: &dyn Fn(&str) -> usize,
    bad: &dyn Fn(String) -> MetricsError,
) -> Result<String, MetricsError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| bad(format!("line {}: {key} is not text", line(key))))
}

/// `tls_server_config` as rustls's server configuration.
fn tls_config(
    file: &Path,
    v: &Yaml,
    line: &dyn Fn(&str) -> usize,
    bad: &dyn Fn(String) -> MetricsError,
) -> Result<Arc<rustls::ServerConfig>, MetricsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let base = file.parent().unwrap_or(Path::new("."));
    let at = |p: String| {
        if Path::new(&p).is_absolute() {
            PathBuf::from(p)
        } else {
            base.join(p)
        }
    };
    let (mut cert, mut key, mut client_ca, mut client_auth, mut min) = (None, None, None, None, None);
    for (k, val) in as_map(v, "tls_server_config", bad)? {
        match k.as_str() {
            "cert_file" => cert = Some(at(text_value(val, &k, line, bad)?)),
            "key_file" => key = Some(at(text_value(val, &k, line, bad)?)),
            "client_ca_file" => client_ca = Some(at(text_value(val, &k, line, bad)?)),
            "client_auth_type" => client_auth = Some(text_value(val, &k, line, bad)?),
            "min_version" => min = Some(text_value(val, &k, line, bad)?),
            other => {
                return Err(bad(format!(
                    "line {}: tls_server_config.{other} is not a key storlab honours (cert_file, key_file, client_ca_file, client_auth_type, min_version)",
                    line(other)
                )))
            }
        }
    }
    let (Some(cert), Some(key)) = (cert, key) else {
        return Err(bad(format!(
            "line {}: tls_server_config needs both cert_file and key_file",
            line("tls_server_config")
        )));
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect())
        .map_err(|e| bad(format!("cert_file {}: {e}", cert.display())))?;
    if certs.is_empty() {
        return Err(bad(format!("cert_file {}: no certificate in it", cert.display())));
    }
    let private = PrivateKeyDer::from_pem_file(&key).map_err(|e| bad(format!("key_file {}: {e}", key.display())))?;
    let versions: &[&rustls::SupportedProtocolVersion] = match min.as_deref() {
        None | Some("TLS12") => &[&rustls::version::TLS13, &rustls::version::TLS12],
        Some("TLS13") => &[&rustls::version::TLS13],
        Some(o) => {
            return Err(bad(format!(
                "line {}: min_version {o}: storlab speaks TLS12 and TLS13",
                line("min_version")
            )))
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(|e| bad(e.to_string()))?;
    let builder = match client_auth.as_deref() {
        None | Some("NoClientCert") => builder.with_no_client_auth(),
        Some("RequireAndVerifyClientCert") => {
            let ca = client_ca.ok_or_else(|| {
                bad(format!(
                    "line {}: RequireAndVerifyClientCert needs client_ca_file",
                    line("client_auth_type")
                ))
            })?;
            let mut roots = rustls::RootCertStore::empty();
            for c in
                CertificateDer::pem_file_iter(&ca).map_err(|e| bad(format!("client_ca_file {}: {e}", ca.display())))?
            {
                let c = c.map_err(|e| bad(format!("client_ca_file {}: {e}", ca.display())))?;
                roots
                    .add(c)
                    .map_err(|e| bad(format!("client_ca_file {}: {e}", ca.display())))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| bad(format!("client_ca_file {}: {e}", ca.display())))?;
            builder.with_client_cert_verifier(verifier)
        }
        Some(o) => {
            return Err(bad(format!(
                "line {}: client_auth_type {o}: storlab honours NoClientCert and RequireAndVerifyClientCert",
                line("client_auth_type")
            )))
        }
    };
    let config = builder.with_single_cert(certs, private).map_err(|e| {
        bad(format!(
            "cert_file {} with key_file {}: {e}",
            cert.display(),
            key.display()
        ))
    })?;
    Ok(Arc::new(config))
}

/// `basic_auth_users`: each user's bcrypt hash, checked to be one.
fn auth_users(
    v: &Yaml,
    line: &dyn Fn(&str) -> usize,
    bad: &dyn Fn(String) -> MetricsError,
) -> Result<HashMap<String, String>, MetricsError> {
    let mut users = HashMap::new();
    for (user, hash) in as_map(v, "basic_auth_users", bad)? {
        let hash = text_value(hash, &user, line, bad)?;
        if user.contains(':') {
            return Err(bad(format!(
                "line {}: user {user}: a user name holds no ':'",
                line(&user)
            )));
        }
        if bcrypt::verify("", &hash).is_err() {
            return Err(bad(format!(
                "line {}: user {user}: the password is not a bcrypt hash ($2y$…, as `htpasswd -nBC 10 {user}` makes one); a password is never written in the file itself",
                line(&user)
            )));
        }
        users.insert(user, hash);
    }
    Ok(users)
}

/// `http_server_config`: `http2` is taken (storlab answers in HTTP/1.1, which every scraper
/// speaks); anything else is refused.
fn http_config(
    v: &Yaml,
    line: &dyn Fn(&str) -> usize,
    bad: &dyn Fn(String) -> MetricsError,
) -> Result<(), MetricsError> {
    for (k, _) in as_map(v, "http_server_config", bad)? {
        if k != "http2" {
            return Err(bad(format!(
                "line {}: http_server_config.{k} is not a key storlab honours (http2)",
                line(&k)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Result<WebConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("web.yml");
        std::fs::write(&p, text).unwrap();
        WebConfig::load(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn users_are_admitted_by_their_bcrypt_hash_only() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let c = config(&format!("basic_auth_users:\n  alice: '{hash}'\n")).unwrap();
        use base64::Engine;
        let basic = |u: &str, p: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )
        };
        assert!(c.admits(Some(&basic("alice", "s3cret"))));
        assert!(c.admits(Some(&basic("alice", "s3cret"))), "again, from the cache");
        assert!(!c.admits(Some(&basic("alice", "wrong"))));
        assert!(!c.admits(Some(&basic("bob", "s3cret"))));
        assert!(!c.admits(None));
        assert!(!c.admits(Some("Bearer abc")));
    }

    #[test]
    fn unknown_keys_plain_passwords_and_bad_yaml_are_refused_with_their_line() {
        let e = config("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [x]\n").unwrap_err();
        assert!(e.contains("line 4: tls_server_config.cipher_suites"), "{e}");
        let e = config("basic_auth_users:\n  alice: hunter2\n").unwrap_err();
        assert!(
            e.contains("line 2: user alice: the password is not a bcrypt hash"),
            "{e}"
        );
        let e = config("web: [\n").unwrap_err();
        assert!(e.contains("line 2") || e.contains("line 1"), "{e}");
        let e = config("tls_config: {}\n").unwrap_err();
        assert!(e.contains("line 1: `tls_config` is not a key"), "{e}");
        let e = config("tls_server_config:\n  cert_file: /nonexistent/x.crt\n  key_file: /nonexistent/x.key\n")
            .unwrap_err();
        assert!(e.contains("cert_file /nonexistent/x.crt"), "{e}");
    }
}
