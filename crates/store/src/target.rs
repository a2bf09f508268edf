//! Where the results go, as the user names it with `--db` or `STORLAB_DB`: a SQLite file (a
//! path), or a PostgreSQL server in either of libpq's forms — a URL
//! (`postgres://user@host:port/dbname?sslmode=require`) or keywords
//! (`host=db1 dbname=storlab user=alice`) — completed the way `psql` completes it: from
//! `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`, `PGSSLMODE`… and `~/.pgpass`.
//!
//! Why our own parser when the `postgres` crate parses both forms: it does not read libpq's
//! environment or password file, and it knows only three of libpq's six `sslmode`s; and a
//! parser of our own is what lets every display of the target mask the password (errors, the
//! stored command line, the spool message).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The keywords storlab takes, libpq's names. Anything else is refused by name, as psql does.
const KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "connect_timeout",
    "application_name",
    "options",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "target_session_attrs",
    "keepalives",
    "keepalives_idle",
];

/// libpq's environment variables for the keywords above.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("PGHOST", "host"),
    ("PGHOSTADDR", "hostaddr"),
    ("PGPORT", "port"),
    ("PGDATABASE", "dbname"),
    ("PGUSER", "user"),
    ("PGPASSWORD", "password"),
    ("PGPASSFILE", "passfile"),
    ("PGCONNECT_TIMEOUT", "connect_timeout"),
    ("PGAPPNAME", "application_name"),
    ("PGOPTIONS", "options"),
    ("PGSSLMODE", "sslmode"),
    ("PGSSLROOTCERT", "sslrootcert"),
    ("PGSSLCERT", "sslcert"),
    ("PGSSLKEY", "sslkey"),
    ("PGTARGETSESSIONATTRS", "target_session_attrs"),
];

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS if the server offers it (libpq's `allow` tries without first; storlab treats it as
    /// `prefer`), the certificate not checked.
    Prefer,
    /// TLS, the certificate not checked (checked against `sslrootcert` when that file exists,
    /// as libpq does).
    Require,
    /// TLS, the certificate signed by a trusted authority.
    VerifyCa,
    /// TLS, the certificate signed by a trusted authority and naming the host.
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode '{other}' is not one of disable, allow, prefer, require, verify-ca, verify-full"
                ))
            }
        })
    }
}

/// A PostgreSQL server and database, every keyword resolved.
#[derive(Clone, PartialEq, Eq)]
pub struct PgTarget {
    params: BTreeMap<String, String>,
}

/// A results database.
#[derive(Clone, PartialEq, Eq)]
pub enum DbTarget {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(PgTarget),
}

impl fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the password, not even in a debug print.
        write!(f, "PgTarget({self})")
    }
}

impl fmt::Debug for DbTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for DbTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbTarget::Sqlite(p) => write!(f, "{}", p.display()),
            DbTarget::Postgres(t) => write!(f, "{t}"),
        }
    }
}

impl fmt::Display for PgTarget {
    /// The target as a URL psql accepts, the password shown as `****`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = |k: &str| self.params.get(k).map(String::as_str);
        write!(f, "postgres://")?;
        if let Some(u) = p("user") {
            write!(f, "{}", encode(u))?;
            if p("password").is_some() {
                write!(f, ":****")?;
            }
            write!(f, "@")?;
        }
        let host = p("host").unwrap_or("");
        let socket = host.starts_with('/');
        if !socket {
            write!(f, "{}", encode(host))?;
            if let Some(port) = p("port") {
                write!(f, ":{port}")?;
            }
        }
        write!(f, "/{}", encode(p("dbname").unwrap_or("")))?;
        let mut query: Vec<String> = Vec::new();
        if socket {
            query.push(format!("host={host}"));
            if let Some(port) = p("port") {
                query.push(format!("port={port}"));
            }
        }
        for (k, v) in &self.params {
            if !["user", "password", "host", "port", "dbname", "passfile"].contains(&k.as_str()) {
                query.push(format!("{k}={}", encode(v)));
            }
        }
        if !query.is_empty() {
            write!(f, "?{}", query.join("&"))?;
        }
        Ok(())
    }
}

/// Percent-encodes what a URL component cannot hold as it is.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn decode(s: &str, what: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a '%' in the {what} of the URL is not followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the {what} of the URL is not UTF-8 once decoded"))
}

/// True when `s` names a PostgreSQL database rather than a file: a `postgres://` or
/// `postgresql://` URL, or libpq keywords (`host=… dbname=…`).
fn looks_like_keywords(s: &str) -> bool {
    let first = s.split_whitespace().next().unwrap_or("");
    first.split_once('=').is_some_and(|(k, _)| KEYWORDS.contains(&k.trim()))
}

impl DbTarget {
    /// Reads a `--db` value: a path, a `postgres://` URL or libpq keywords. A URL of another
    /// scheme is refused by name (it would otherwise become a directory called `mysql:`).
    pub fn parse(s: &str) -> Result<DbTarget, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("--db is empty: give a file (results.db) or a PostgreSQL URL (postgres://host/dbname)".into());
        }
        if let Some((scheme, rest)) = s.split_once("://") {
            let plain = scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
            if plain && !scheme.is_empty() {
                return match scheme.to_ascii_lowercase().as_str() {
                    "postgres" | "postgresql" => Ok(DbTarget::Postgres(PgTarget::from_url(rest)?)),
                    "sqlite" | "file" => Ok(DbTarget::Sqlite(PathBuf::from(rest))),
                    other => Err(format!(
                        "--db {}: storlab does not know the scheme '{other}': give a SQLite file (a path, or \
                         sqlite:///path) or a PostgreSQL database (postgres://user@host/dbname)",
                        mask_url_password(s)
                    )),
                };
            }
        }
        if looks_like_keywords(s) {
            return Ok(DbTarget::Postgres(PgTarget::from_keywords(s)?));
        }
        Ok(DbTarget::Sqlite(PathBuf::from(s)))
    }

    /// The file, when this is SQLite.
    pub fn file(&self) -> Option<&Path> {
        match self {
            DbTarget::Sqlite(p) => Some(p),
            DbTarget::Postgres(_) => None,
        }
    }
}

/// `s` with the password of a URL in it replaced by `****` (for echoing a value that did not
/// parse).
fn mask_url_password(s: &str) -> String {
    let Some((scheme, rest)) = s.split_once("://") else {
        return s.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}:****@{host}{tail}")
        }
        _ => s.to_string(),
    }
}

/// Every `--db`/`STORLAB_DB`-like value in a command line with its password masked: what
/// storlab stores as a run's command.
pub fn mask_command_line(args: &[String]) -> Vec<String> {
    let mut masked = Vec::with_capacity(args.len());
    for a in args {
        let (flag, value) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (Some(f), v),
            _ => (None, a.as_str()),
        };
        let m = if value.contains("://") {
            mask_url_password(value)
        } else if looks_like_keywords(value) {
            mask_keyword_password(value)
        } else {
            value.to_string()
        };
        masked.push(match flag {
            Some(f) => format!("{f}={m}"),
            None => m,
        });
    }
    masked
}

fn mask_keyword_password(s: &str) -> String {
    match split_keywords(s) {
        Ok(pairs) => pairs
            .into_iter()
            .map(|(k, v)| {
                if k == "password" {
                    "password=****".to_string()
                } else {
                    format!("{k}={}", quote(&v))
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        Err(_) => "(a PostgreSQL connection string that does not parse)".into(),
    }
}

fn quote(v: &str) -> String {
    if !v.is_empty() && !v.contains([' ', '\'', '\\']) {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// libpq's keyword form: `key = value` pairs separated by spaces, a value in single quotes
/// when it holds spaces, `\'` and `\\` inside quotes.
fn split_keywords(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(format!(
                "'{key}' in the connection string is not followed by '=' and a value"
            ));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(format!(
                    "the value of '{key}' in the connection string has no closing quote"
                ));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                if c == '\\' {
                    chars.next();
                    value.extend(chars.next());
                    continue;
                }
                value.push(c);
                chars.next();
            }
        }
        pairs.push((key, value));
    }
    Ok(pairs)
}

impl PgTarget {
    fn from_keywords(s: &str) -> Result<PgTarget, String> {
        let mut params = BTreeMap::new();
        for (k, v) in split_keywords(s)? {
            check_keyword(&k)?;
            params.insert(k, v);
        }
        PgTarget::complete(params)
    }

    /// `rest` is the URL after `postgres://`.
    fn from_url(rest: &str) -> Result<PgTarget, String> {
        let mut params = BTreeMap::new();
        let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = main.split_once('/').unwrap_or((main, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        if let Some(u) = userinfo {
            let (user, password) = match u.split_once(':') {
                Some((user, pw)) => (user, Some(pw)),
                None => (u, None),
            };
            if !user.is_empty() {
                params.insert("user".into(), decode(user, "user name")?);
            }
            if let Some(pw) = password {
                params.insert("password".into(), decode(pw, "password")?);
            }
        }
        // host[:port][,host[:port]…]; a host in brackets is an IPv6 address.
        let (mut hosts, mut ports) = (Vec::new(), Vec::new());
        for hp in hostport.split(',').filter(|h| !h.is_empty()) {
            let (h, p) = if let Some(inner) = hp.strip_prefix('[') {
                let (h, after) = inner
                    .split_once(']')
                    .ok_or_else(|| format!("the host '{hp}' in the URL opens '[' without closing it"))?;
                (h.to_string(), after.strip_prefix(':'))
            } else {
                match hp.rsplit_once(':') {
                    Some((h, p)) => (decode(h, "host")?, Some(p)),
                    None => (decode(hp, "host")?, None),
                }
            };
            hosts.push(h);
            ports.push(p.unwrap_or("").to_string());
        }
        if !hosts.is_empty() {
            params.insert("host".into(), hosts.join(","));
        }
        if ports.iter().any(|p| !p.is_empty()) {
            params.insert("port".into(), ports.join(","));
        }
        if !path.is_empty() {
            params.insert("dbname".into(), decode(path, "database name")?);
        }
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("'{pair}' in the URL's query is not KEY=VALUE"))?;
            let k = decode(k, "query")?;
            check_keyword(&k)?;
            params.insert(k, decode(v, "query")?);
        }
        PgTarget::complete(params)
    }

    /// Fills what was not given from libpq's environment variables and defaults, and checks
    /// the values storlab interprets itself.
    fn complete(mut params: BTreeMap<String, String>) -> Result<PgTarget, String> {
        for (var, key) in ENVIRONMENT {
            if !params.contains_key(*key) {
                if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
                    params.insert(key.to_string(), v);
                }
            }
        }
        if !params.contains_key("host") && !params.contains_key("hostaddr") {
            // libpq's default on Debian: the Unix socket directory of the packaged server.
            params.insert("host".into(), "/var/run/postgresql".into());
        }
        if !params.contains_key("user") {
            let user = os_user().ok_or("no user name given (user=, PGUSER) and the current user has no name")?;
            params.insert("user".into(), user);
        }
        if !params.contains_key("dbname") {
            let user = params["user"].clone();
            params.insert("dbname".into(), user);
        }
        if let Some(p) = params.get("port") {
            for port in p.split(',').filter(|p| !p.is_empty()) {
                port.parse::<u16>()
                    .map_err(|_| format!("port '{port}' is not a TCP port number (1 to 65535)"))?;
            }
        }
        if let Some(m) = params.get("sslmode") {
            SslMode::parse(m)?;
        }
        if let Some(t) = params.get("connect_timeout") {
            t.parse::<u64>()
                .map_err(|_| format!("connect_timeout '{t}' is not a whole number of seconds"))?;
        }
        let mut target = PgTarget { params };
        if !target.params.contains_key("password") {
            if let Some(pw) = target.password_from_file() {
                target.params.insert("password".into(), pw);
            }
        }
        Ok(target)
    }

    /// A keyword's value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }

    /// The TLS mode (libpq's default: prefer).
    pub fn ssl_mode(&self) -> SslMode {
        self.get("sslmode")
            .and_then(|m| SslMode::parse(m).ok())
            .unwrap_or(SslMode::Prefer)
    }

    /// The password from the password file (`passfile`, `PGPASSFILE`, else `~/.pgpass`), as
    /// libpq reads it: the first line whose host, port, database and user match (`*` matches
    /// anything); a file others can read is ignored, as libpq ignores it.
    fn password_from_file(&self) -> Option<String> {
        let path = match self.get("passfile") {
            Some(p) => PathBuf::from(p),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".pgpass"),
        };
        let meta = std::fs::metadata(&path).ok()?;
        {
            use std::os::unix::fs::PermissionsExt;
            if meta.permissions().mode() & 0o077 != 0 {
                eprintln!(
                    "storlab: the password file {} can be read by others; ignored (chmod 0600 it, as libpq asks)",
                    path.display()
                );
                return None;
            }
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let host = self
            .get("host")
            .unwrap_or("")
            .split(',')
            .next()
            .unwrap_or("")
            .to_string();
        let host = if host.starts_with('/') || host.is_empty() {
            "localhost".to_string()
        } else {
            host
        };
        let port = self
            .get("port")
            .unwrap_or("5432")
            .split(',')
            .next()
            .unwrap_or("5432")
            .to_string();
        let wanted = [
            host,
            port,
            self.get("dbname")?.to_string(),
            self.get("user")?.to_string(),
        ];
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let fields = pgpass_fields(line);
            if fields.len() < 5 {
                continue;
            }
            if fields[..4].iter().zip(&wanted).all(|(f, w)| f == "*" || f == w) {
                return Some(fields[4].clone());
            }
        }
        None
    }

    /// The settings for the `postgres` crate (TLS is set up beside it, in pg.rs).
    pub(crate) fn client_config(&self) -> Result<postgres::Config, String> {
        let mut c = postgres::Config::new();
        for (k, v) in &self.params {
            match k.as_str() {
                "host" => {
                    for h in v.split(',') {
                        c.host(h);
                    }
                }
                "hostaddr" => {
                    for a in v.split(',') {
                        c.hostaddr(a.parse().map_err(|_| format!("hostaddr '{a}' is not an IP address"))?);
                    }
                }
                "port" => {
                    for p in v.split(',') {
                        c.port(p.parse().unwrap_or(5432));
                    }
                }
                "dbname" => {
                    c.dbname(v);
                }
                "user" => {
                    c.user(v);
                }
                "password" => {
                    c.password(v);
                }
                "connect_timeout" => {
                    c.connect_timeout(std::time::Duration::from_secs(v.parse().unwrap_or(0)));
                }
                "application_name" => {
                    c.application_name(v);
                }
                "options" => {
                    c.options(v);
                }
                "keepalives" => {
                    c.keepalives(v != "0");
                }
                "keepalives_idle" => {
                    c.keepalives_idle(std::time::Duration::from_secs(v.parse().unwrap_or(7200)));
                }
                "target_session_attrs" => {
                    c.target_session_attrs(match v.as_str() {
                        "read-write" => postgres::config::TargetSessionAttrs::ReadWrite,
                        _ => postgres::config::TargetSessionAttrs::Any,
                    });
                }
                "sslmode" => {
                    c.ssl_mode(match self.ssl_mode() {
                        SslMode::Disable => postgres::config::SslMode::Disable,
                        SslMode::Prefer => postgres::config::SslMode::Prefer,
                        _ => postgres::config::SslMode::Require,
                    });
                }
                _ => {}
            }
        }
        if !self.params.contains_key("application_name") {
            c.application_name("storlab");
        }
        if !self.params.contains_key("connect_timeout") {
            // libpq waits forever; a tool run from cron should not.
            c.connect_timeout(std::time::Duration::from_secs(10));
        }
        Ok(c)
    }
}

/// The fields of a `.pgpass` line: `:` separates, `\:` and `\\` are literal.
fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().unwrap().extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

fn check_keyword(k: &str) -> Result<(), String> {
    if KEYWORDS.contains(&k) {
        Ok(())
    } else {
        Err(format!(
            "'{k}' is not a connection keyword storlab knows; it takes {}",
            KEYWORDS.join(", ")
        ))
    }
}

/// The name of the user this process runs as (libpq's default user).
fn os_user() -> Option<String> {
    // SAFETY: getpwuid returns a pointer to a static record (or null) that stays valid until the
    // next getpw* call; the name is copied out at once, and storlab makes no other getpw* call
    // on another thread while connecting.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_name.is_null() {
            return std::env::var("USER").ok();
        }
        Some(std::ffi::CStr::from_ptr((*pw).pw_name).to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(s: &str) -> PgTarget {
        match DbTarget::parse(s).unwrap() {
            DbTarget::Postgres(t) => t,
            other => panic!("{s} read as {other}"),
        }
    }

    #[test]
    fn urls_and_keywords_read_alike() {
        let a = pg("postgres://alice:s3cr%40t@db1:5433/storlab?sslmode=require");
        let b = pg("host=db1 port=5433 dbname=storlab user=alice password='s3cr@t' sslmode=require");
        assert_eq!(a, b);
        assert_eq!(a.get("password"), Some("s3cr@t"));
        assert_eq!(a.ssl_mode(), SslMode::Require);
        assert_eq!(a.to_string(), "postgres://alice:****@db1:5433/storlab?sslmode=require");
        assert!(!format!("{a:?}").contains("s3cr"));
    }

    #[test]
    fn a_socket_directory_is_shown_as_a_query() {
        let t = pg("postgresql://bob@%2Ftmp%2Fpg/results");
        assert_eq!(t.get("host"), Some("/tmp/pg"));
        assert_eq!(t.to_string(), "postgres://bob@/results?host=/tmp/pg");
    }

    #[test]
    fn files_and_other_schemes() {
        assert_eq!(DbTarget::parse("r.db").unwrap(), DbTarget::Sqlite("r.db".into()));
        assert_eq!(
            DbTarget::parse("sqlite:///tmp/r.db").unwrap(),
            DbTarget::Sqlite("/tmp/r.db".into())
        );
        // A path with '=' that is not a keyword stays a path.
        assert_eq!(DbTarget::parse("a=b.db").unwrap(), DbTarget::Sqlite("a=b.db".into()));
        let e = DbTarget::parse("mysql://root:hunter2@db/x").unwrap_err();
        assert!(e.contains("scheme 'mysql'") && !e.contains("hunter2"), "{e}");
        let e = DbTarget::parse("postgres://db/x?sslmode=sometimes").unwrap_err();
        assert!(e.contains("sslmode 'sometimes'"), "{e}");
        let e = DbTarget::parse("host=db colour=blue").unwrap_err();
        assert!(e.contains("'colour'"), "{e}");
    }

    #[test]
    fn command_lines_are_masked() {
        let args: Vec<String> = [
            "storlab",
            "run",
            "--db",
            "postgres://u:pw@h/d",
            "--db=host=h password=pw",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let m = mask_command_line(&args).join(" ");
        assert!(!m.contains("pw@") && !m.contains("password=pw"), "{m}");
        assert!(m.contains("postgres://u:****@h/d"), "{m}");
    }

    #[test]
    fn pgpass_fields_unescape() {
        assert_eq!(
            pgpass_fields(r"h:5432:*:u:a\:b\\c"),
            vec!["h", "5432", "*", "u", r"a:b\c"]
        );
    }
}
