//! The PostgreSQL back-end (the `postgres` crate, synchronous): the schema version in the table
//! `storlab_schema`, migrations serialized across hosts by an advisory lock, samples stored
//! with `COPY … FROM STDIN BINARY`, values mapped to each column's exact type (BIGINT,
//! DOUBLE PRECISION, BOOLEAN, TIMESTAMPTZ, JSONB, BYTEA). TLS by rustls, as libpq's `sslmode`
//! says.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::SystemTime;

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use postgres::{Client, Statement};

use crate::db::{Conn, Dialect, Row, Val};
use crate::target::{PgTarget, SslMode};
use crate::{Result, StoreError};

type BoxError = Box<dyn StdError + Sync + Send>;

/// A text timestamp as storlab writes them (RFC 3339, UTC), for a TIMESTAMPTZ column.
fn parse_time(s: &str) -> std::result::Result<SystemTime, BoxError> {
    humantime::parse_rfc3339_weak(s.trim_end_matches('Z'))
        .map_err(|e| format!("'{s}' is not an RFC 3339 UTC timestamp: {e}").into())
}

impl ToSql for Val {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> std::result::Result<IsNull, BoxError> {
        match (self, ty) {
            (Val::Null, _) => Ok(IsNull::Yes),
            (Val::I64(v), &Type::INT8) => v.to_sql(ty, out),
            (Val::I64(v), &Type::INT4) => i32::try_from(*v)?.to_sql(ty, out),
            (Val::I64(v), &Type::INT2) => i16::try_from(*v)?.to_sql(ty, out),
            (Val::I64(v), &Type::FLOAT8) => (*v as f64).to_sql(ty, out),
            (Val::I64(v), &Type::BOOL) => (*v != 0).to_sql(ty, out),
            (Val::F64(v), &Type::FLOAT8) => v.to_sql(ty, out),
            (Val::F64(v), &Type::FLOAT4) => (*v as f32).to_sql(ty, out),
            (Val::Bool(b), &Type::BOOL) => b.to_sql(ty, out),
            (Val::Bool(b), &Type::INT8) => (*b as i64).to_sql(ty, out),
            (Val::Text(s), &Type::JSONB) => {
                // jsonb's binary form: a version byte (1), then the JSON text.
                out.extend_from_slice(&[1]);
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
            (Val::Text(s), &Type::JSON) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
            (Val::Text(s), &Type::TIMESTAMPTZ | &Type::TIMESTAMP) => parse_time(s)?.to_sql(ty, out),
            (Val::Text(s), _) if <&str as ToSql>::accepts(ty) => s.as_str().to_sql(ty, out),
            (Val::Bytes(b), &Type::BYTEA) => b.as_slice().to_sql(ty, out),
            (v, ty) => Err(format!("storlab cannot store {v:?} in a column of type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Val {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Val, BoxError> {
        Ok(match *ty {
            Type::INT8 => Val::I64(i64::from_sql(ty, raw)?),
            Type::INT4 => Val::I64(i32::from_sql(ty, raw)? as i64),
            Type::INT2 => Val::I64(i16::from_sql(ty, raw)? as i64),
            Type::FLOAT8 => Val::F64(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Val::F64(f32::from_sql(ty, raw)? as f64),
            Type::BOOL => Val::Bool(bool::from_sql(ty, raw)?),
            Type::BYTEA => Val::Bytes(raw.to_vec()),
            Type::JSONB => match raw.split_first() {
                Some((1, text)) => Val::Text(std::str::from_utf8(text)?.to_string()),
                _ => return Err("a jsonb value of an unknown version".into()),
            },
            Type::JSON => Val::Text(std::str::from_utf8(raw)?.to_string()),
            Type::TIMESTAMPTZ | Type::TIMESTAMP => {
                Val::Text(humantime::format_rfc3339_seconds(SystemTime::from_sql(ty, raw)?).to_string())
            }
            _ if <String as FromSql>::accepts(ty) => Val::Text(String::from_sql(ty, raw)?),
            _ => return Err(format!("storlab cannot read a column of type {ty}").into()),
        })
    }

    fn from_sql_null(_: &Type) -> std::result::Result<Val, BoxError> {
        Ok(Val::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// `?N` placeholders (the store's SQL, SQLite's form) as `$N` (PostgreSQL's), outside quotes.
fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == '?' && !quoted && chars.peek().is_some_and(|n| n.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// What a PostgreSQL error means to storlab: a lost connection (retried, then spooled), a
/// permission the role lacks (the user's to fix), or another failure.
pub(crate) fn store_error(e: postgres::Error, target: &str) -> StoreError {
    use postgres::error::SqlState;
    if let Some(db) = e.as_db_error() {
        let mut reason = format!("{}: {}", db.severity(), db.message());
        if let Some(d) = db.detail() {
            reason += &format!(" ({d})");
        }
        let code = db.code();
        if code == &SqlState::INSUFFICIENT_PRIVILEGE {
            return StoreError::Denied {
                target: target.to_string(),
                reason,
            };
        }
        // A unique key another process took first.
        if code == &SqlState::UNIQUE_VIOLATION {
            return StoreError::Conflict {
                target: target.to_string(),
                reason,
            };
        }
        // Class 08 (connection exception) and 57P (the server shutting down or starting).
        if code.code().starts_with("08") || code.code().starts_with("57P") {
            return StoreError::Lost {
                target: target.to_string(),
                reason,
            };
        }
        return StoreError::Postgres {
            target: target.to_string(),
            reason,
        };
    }
    let reason = match e.source() {
        Some(s) => format!("{e}: {s}"),
        None => e.to_string(),
    };
    if e.is_closed() || e.source().is_some_and(|s| s.is::<std::io::Error>()) {
        StoreError::Lost {
            target: target.to_string(),
            reason,
        }
    } else {
        StoreError::Postgres {
            target: target.to_string(),
            reason,
        }
    }
}

/// A PostgreSQL database.
pub(crate) struct Postgres {
    client: Client,
    /// The target as shown to the user (password masked).
    shown: String,
    /// Prepared statements by their text: the store's statements are few and repeated.
    statements: HashMap<String, Statement>,
    /// Each bulk-loaded table's column types, for COPY's binary form.
    copy_types: HashMap<String, Vec<Type>>,
}

impl Postgres {
    /// Connects to `target`.
    pub fn connect(target: &PgTarget) -> Result<Postgres> {
        let shown = target.to_string();
        let config = target.client_config().map_err(|reason| StoreError::Open {
            path: shown.clone(),
            reason,
        })?;
        let client = match target.ssl_mode() {
            SslMode::Disable => config.connect(postgres::NoTls),
            mode => {
                let tls = tls_config(target, mode).map_err(|reason| StoreError::Open {
                    path: shown.clone(),
                    reason,
                })?;
                config.connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            }
        }
        .map_err(|e| match store_error(e, &shown) {
            StoreError::Lost { reason, .. }
            | StoreError::Postgres { reason, .. }
            | StoreError::Denied { reason, .. } => StoreError::Open {
                path: shown.clone(),
                reason,
            },
            other => other,
        })?;
        let mut pg = Postgres {
            client,
            shown,
            statements: HashMap::new(),
            copy_types: HashMap::new(),
        };
        // The planner compiles a query it estimates as costly (a listing of 10,000 runs by tag)
        // to machine code first, which took longer than the query; storlab's queries are short.
        pg.batch("SET jit = off")?;
        Ok(pg)
    }

    fn err(&self, e: postgres::Error) -> StoreError {
        store_error(e, &self.shown)
    }

    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self
            .client
            .prepare(&dollar_placeholders(sql))
            .map_err(|e| store_error(e, &self.shown))?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

fn params(vals: &[Val]) -> Vec<&(dyn ToSql + Sync)> {
    vals.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl Conn for Postgres {
    fn exec(&mut self, sql: &str, vals: &[Val]) -> Result<u64> {
        let s = self.statement(sql)?;
        self.client.execute(&s, &params(vals)).map_err(|e| self.err(e))
    }

    fn query(&mut self, sql: &str, vals: &[Val]) -> Result<Vec<Row>> {
        let s = self.statement(sql)?;
        let rows = self.client.query(&s, &params(vals)).map_err(|e| self.err(e))?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| r.try_get::<_, Val>(i))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map(Row)
                    .map_err(|e| StoreError::Type(e.to_string()))
            })
            .collect()
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.client.batch_execute(sql).map_err(|e| self.err(e))
    }

    fn bulk(&mut self, table: &str, columns: &[&str], rows: &mut dyn Iterator<Item = Vec<Val>>) -> Result<()> {
        // COPY in binary: one round trip for all the rows; a statement per sample was most of
        // a long run's storing time against a server.
        let mut rows = rows.peekable();
        if rows.peek().is_none() {
            return Ok(());
        }
        let cols = columns.join(", ");
        let key = format!("{table}({cols})");
        if !self.copy_types.contains_key(&key) {
            let s = self
                .client
                .prepare(&format!("SELECT {cols} FROM {table}"))
                .map_err(|e| store_error(e, &self.shown))?;
            let types = s.columns().iter().map(|c| c.type_().clone()).collect();
            self.copy_types.insert(key.clone(), types);
        }
        let types = self.copy_types[&key].clone();
        let shown = self.shown.clone();
        let sink = self
            .client
            .copy_in(&format!("COPY {table} ({cols}) FROM STDIN BINARY"))
            .map_err(|e| store_error(e, &shown))?;
        let mut writer = BinaryCopyInWriter::new(sink, &types);
        for row in rows {
            writer.write(&params(&row)).map_err(|e| store_error(e, &shown))?;
        }
        writer.finish().map_err(|e| store_error(e, &shown))?;
        Ok(())
    }

    fn schema_version(&mut self) -> Result<i64> {
        // The catalog itself, read at each execution: `to_regclass('storlab_schema')` in a
        // prepared statement kept answering "no such table" after another process's migration
        // had committed it (seen with PostgreSQL 15), and the second migrator then failed.
        let exists = self.query(
            "SELECT COUNT(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE c.relname = 'storlab_schema' AND n.nspname = current_schema()",
            &[],
        )?;
        if crate::db::one(exists).map(|r| r.i64(0)).transpose()?.unwrap_or(0) == 0 {
            return Ok(0);
        }
        let rows = self.query("SELECT COALESCE(MAX(version), 0) FROM storlab_schema", &[])?;
        crate::db::one(rows).map_or(Ok(0), |r| r.i64(0))
    }

    fn set_schema_version(&mut self, v: i64) -> Result<()> {
        self.batch("CREATE TABLE IF NOT EXISTS storlab_schema (version BIGINT NOT NULL); DELETE FROM storlab_schema;")?;
        self.exec("INSERT INTO storlab_schema (version) VALUES (?1)", &[Val::I64(v)])?;
        Ok(())
    }

    fn lock_schema(&mut self) -> Result<()> {
        // Many hosts may open a new database at once: the first migrates, the others wait here
        // and then find nothing left to do. (The key is storlab's own: "storlab" in ASCII.)
        self.batch("SELECT pg_advisory_xact_lock(126207575632993)")
    }

    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }
}

/// The TLS settings for `mode`, as libpq reads them: the trusted authorities from `sslrootcert`
/// (default `~/.postgresql/root.crt`; `system` for the system's store), a client certificate
/// from `sslcert` and `sslkey` (default `~/.postgresql/postgresql.crt` and `.key`) when there is
/// one.
fn tls_config(target: &PgTarget, mode: SslMode) -> std::result::Result<rustls::ClientConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let default = |name: &str| home.as_ref().map(|h| h.join(".postgresql").join(name));
    let root_path = target
        .get("sslrootcert")
        .map(std::path::PathBuf::from)
        .or_else(|| default("root.crt"));
    let mut roots = rustls::RootCertStore::empty();
    let mut have_roots = false;
    match root_path {
        Some(p) if p.as_os_str() == "system" => {
            for c in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(c);
            }
            have_roots = true;
        }
        Some(p) if p.exists() => {
            for c in CertificateDer::pem_file_iter(&p)
                .map_err(|e| format!("cannot read sslrootcert {}: {e}", p.display()))?
            {
                roots
                    .add(c.map_err(|e| format!("sslrootcert {}: {e}", p.display()))?)
                    .map_err(|e| format!("sslrootcert {}: {e}", p.display()))?;
            }
            have_roots = true;
        }
        Some(p) if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) => {
            return Err(format!(
                "sslmode={} needs the authority's certificate, and there is none at {} (give sslrootcert=FILE, or sslrootcert=system)",
                if mode == SslMode::VerifyCa { "verify-ca" } else { "verify-full" },
                p.display()
            ));
        }
        _ => {}
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let verifier: Arc<dyn rustls::client::danger::ServerCertVerifier> = if have_roots {
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| e.to_string())?;
        if mode == SslMode::VerifyFull {
            webpki
        } else {
            // libpq's verify-ca, and require with a root certificate present: the chain is
            // checked, the host name is not.
            Arc::new(ChainOnly(webpki))
        }
    } else {
        // prefer and require without a root certificate: encrypted, not authenticated (libpq's
        // behaviour; verify-ca or verify-full is how a site asks for more).
        Arc::new(AnyCertificate(provider))
    };
    let builder = builder.dangerous().with_custom_certificate_verifier(verifier);
    let cert = target
        .get("sslcert")
        .map(std::path::PathBuf::from)
        .or_else(|| default("postgresql.crt"));
    let key = target
        .get("sslkey")
        .map(std::path::PathBuf::from)
        .or_else(|| default("postgresql.key"));
    match (cert, key) {
        (Some(c), Some(k)) if c.exists() => {
            let chain = CertificateDer::pem_file_iter(&c)
                .and_then(|i| i.collect::<std::result::Result<Vec<_>, _>>())
                .map_err(|e| format!("cannot read sslcert {}: {e}", c.display()))?;
            let key =
                PrivateKeyDer::from_pem_file(&k).map_err(|e| format!("cannot read sslkey {}: {e}", k.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("sslcert {} and sslkey {}: {e}", c.display(), k.display()))
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

/// Checks the certificate's chain and ignores the name it is for (libpq's verify-ca).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })) => {
                Ok(rustls::client::danger::ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Accepts any certificate, checking only that the server holds its key (libpq's `require`
/// without a root certificate).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            super::dollar_placeholders("SELECT ?1, '?2' FROM t WHERE a = ?12"),
            "SELECT $1, '?2' FROM t WHERE a = $12"
        );
    }
}
