//! Real servers for storlab's tests. [`PgServer`] is Debian's PostgreSQL (`postgresql`
//! package) run the way a test should run it: `initdb` into a temporary directory as an
//! unprivileged user (`postgres`, else `nobody`), listening on a Unix socket in that directory
//! and on a free TCP port of 127.0.0.1 (for the password and TLS tests), stopped and its
//! directory removed when it is dropped or, for the server shared by a test binary, when the
//! binary exits — a failing test included.
//!
//! The superuser is `storlab` and may connect without a password over the socket; over TCP
//! every role needs its password (scram-sha-256).
//!
//! [`prometheus::Prometheus`] is Debian's Prometheus server, scraping the endpoints a test
//! names, its storage in a temporary directory, killed when dropped.

pub mod prometheus;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The superuser's name.
pub const SUPERUSER: &str = "storlab";

/// A PostgreSQL server of a test's own.
pub struct PgServer {
    root: PathBuf,
    /// The directory, removed on drop; None for the shared server (removed at exit).
    owned: Option<tempfile::TempDir>,
    bin: PathBuf,
    port: u16,
    uid: u32,
    gid: u32,
}

/// The directory of the newest installed PostgreSQL's programs.
fn pg_bin() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, b): &(u32, PathBuf)| b.join("initdb").exists())
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, b)| b)
        .expect("PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): scripts/test installs it (apt-get install postgresql)")
}

/// The unprivileged user the server runs as: PostgreSQL refuses to run as root.
fn server_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    for name in ["postgres", "nobody"] {
        for line in passwd.lines() {
            let f: Vec<&str> = line.split(':').collect();
            if f.len() > 3 && f[0] == name {
                if let (Ok(u), Ok(g)) = (f[2].parse(), f[3].parse()) {
                    return (u, g);
                }
            }
        }
    }
    panic!("no unprivileged user (postgres or nobody) to run PostgreSQL as")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free TCP port")
}

fn check(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl PgServer {
    /// Creates a cluster in a new temporary directory and starts it.
    pub fn start() -> PgServer {
        PgServer::create(false)
    }

    /// Like [`PgServer::start`], with TLS on: a certificate authority of the test's own
    /// ([`PgServer::ca_file`]) signs the server's certificate, made out to `localhost`.
    pub fn start_with_tls() -> PgServer {
        PgServer::create(true)
    }

    /// The certificate of the authority that signed a TLS server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.path().join("ca.crt")
    }

    /// Lets `role` connect over TCP only with TLS (pg_hba.conf: `hostssl` accepted,
    /// `hostnossl` rejected), and reloads the server's configuration.
    pub fn require_tls_for(&self, role: &str) {
        let hba = self.data().join("pg_hba.conf");
        let old = std::fs::read_to_string(&hba).unwrap();
        std::fs::write(
            &hba,
            format!("hostnossl all {role} 0.0.0.0/0 reject\nhostssl all {role} 127.0.0.1/32 scram-sha-256\n{old}"),
        )
        .unwrap();
        self.sql("postgres", "SELECT pg_reload_conf()");
    }

    /// Makes the authority and the server's certificate with the openssl command.
    fn make_certificates(&self) {
        let dir = self.path();
        let openssl = |args: &[&str]| {
            check(
                &format!("openssl {}", args.join(" ")),
                Command::new("openssl").args(args).current_dir(dir).output(),
            )
        };
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=storlab test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ]);
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            dir.join("san.ext"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ]);
        for f in ["server.key", "server.crt"] {
            std::os::unix::fs::chown(dir.join(f), Some(self.uid), Some(self.gid)).unwrap();
        }
        std::fs::set_permissions(dir.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    fn create(tls: bool) -> PgServer {
        let bin = pg_bin();
        let (uid, gid) = server_user();
        let dir = tempfile::Builder::new()
            .prefix("storlab-pg-")
            .tempdir()
            .expect("a temp dir for PostgreSQL");
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown the PostgreSQL dir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let server = PgServer {
            root: dir.path().to_path_buf(),
            owned: Some(dir),
            bin,
            port: free_port(),
            uid,
            gid,
        };
        check(
            "initdb",
            server
                .as_server(&server.bin.join("initdb"))
                .args(["-D"])
                .arg(server.data())
                .args([
                    "-U",
                    SUPERUSER,
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    "-E",
                    "UTF8",
                ])
                .args(["--locale=C", "--no-sync"])
                .output(),
        );
        // fsync off: the machine does not crash under a test, and the tests run faster. Commits
        // stay synchronous: the fault tests stop the server at once and count what it kept.
        let conf = format!(
            "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\nfsync = off\n\
             full_page_writes = off\nmax_connections = 100\nshared_buffers = 64MB\n",
            server.port,
            server.socket_dir().display()
        );
        let conf_path = server.data().join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf_path).unwrap();
        text.push_str(&conf);
        if tls {
            server.make_certificates();
            text.push_str(&format!(
                "ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
                server.path().join("server.crt").display(),
                server.path().join("server.key").display()
            ));
        }
        std::fs::write(&conf_path, text).unwrap();
        server.start_again();
        server
    }

    /// A command run as the server's user.
    fn as_server(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.uid(self.uid)
            .gid(self.gid)
            .env("HOME", self.path())
            .current_dir(self.path());
        c
    }

    fn path(&self) -> &Path {
        &self.root
    }

    fn data(&self) -> PathBuf {
        self.path().join("data")
    }

    /// The directory of the server's Unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.path().to_path_buf()
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts the server again after [`PgServer::stop`] (a test of a restarted server).
    pub fn start_again(&self) {
        check(
            "pg_ctl start",
            self.as_server(&self.bin.join("pg_ctl"))
                .arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(self.path().join("server.log"))
                .args(["-w", "-t", "60", "start"])
                .output(),
        );
    }

    /// Stops the server at once (the fault tests' server going away).
    pub fn stop(&self) {
        let _ = self
            .as_server(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("server.log")).unwrap_or_default()
    }

    /// A URL for `database` as the superuser over the Unix socket.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}@/{database}?host={}&port={}",
            self.socket_dir().display(),
            self.port
        )
    }

    /// Runs SQL as the superuser in `database`.
    pub fn sql(&self, database: &str, sql: &str) {
        let mut c = self.client(database);
        c.batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// A client of `database` as the superuser.
    pub fn client(&self, database: &str) -> postgres::Client {
        postgres::Config::new()
            .host_path(self.socket_dir())
            .port(self.port)
            .user(SUPERUSER)
            .dbname(database)
            .connect(postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to the test server: {e}\n{}", self.log()))
    }

    /// A new, empty database, dropped when the value is.
    pub fn database(&self) -> PgDatabase<'_> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        self.sql("postgres", &format!("CREATE DATABASE {name}"));
        PgDatabase { server: self, name }
    }

    /// The server shared by the tests of this test binary: started on first use, stopped and
    /// removed when the binary exits.
    pub fn shared() -> &'static PgServer {
        static SHARED: OnceLock<PgServer> = OnceLock::new();
        /// What the exit handler needs to stop the shared server.
        struct Shutdown {
            bin: PathBuf,
            dir: PathBuf,
            uid: u32,
            gid: u32,
        }
        static STOP: Mutex<Option<Shutdown>> = Mutex::new(None);
        extern "C" fn stop_shared() {
            if let Some(Shutdown { bin, dir, uid, gid }) = STOP.lock().ok().and_then(|mut s| s.take()) {
                let _ = Command::new(bin.join("pg_ctl"))
                    .uid(uid)
                    .gid(gid)
                    .arg("-D")
                    .arg(dir.join("data"))
                    .args(["-m", "immediate", "-w", "stop"])
                    .output();
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        SHARED.get_or_init(|| {
            let mut s = PgServer::start();
            // The OnceLock is never dropped; the exit handler does what Drop would.
            let dir = s.owned.take().expect("a fresh server's directory").keep();
            *STOP.lock().unwrap() = Some(Shutdown {
                bin: s.bin.clone(),
                dir,
                uid: s.uid,
                gid: s.gid,
            });
            // SAFETY: registers a plain extern "C" function with no arguments, as atexit asks.
            unsafe { libc::atexit(stop_shared) };
            s
        })
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.owned.is_some() {
            self.stop();
        }
    }
}

/// A database of a test's own on a [`PgServer`]; dropped (connections closed by force) when
/// the value is.
pub struct PgDatabase<'a> {
    server: &'a PgServer,
    /// Its name.
    pub name: String,
}

impl PgDatabase<'_> {
    /// Its URL (the superuser, over the Unix socket).
    pub fn url(&self) -> String {
        self.server.url(&self.name)
    }

    /// Runs SQL in it as the superuser.
    pub fn sql(&self, sql: &str) {
        self.server.sql(&self.name, sql)
    }

    /// A client of it as the superuser.
    pub fn client(&self) -> postgres::Client {
        self.server.client(&self.name)
    }
}

impl Drop for PgDatabase<'_> {
    fn drop(&mut self) {
        let mut c = self.server.client("postgres");
        let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
    }
}
