//! fio's server and client addresses (server.c `fio_server_parse_string`): `[ip:|ip4:|ip6:]
//! HOST[,PORT]` or `:PORT`, the port 8765 where none is given, or `sock:PATH`, a Unix socket.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::frame::PORT;

/// An address as fio names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    /// The host or IP; None for every address (a server's default).
    pub host: Option<String>,
    /// The port.
    pub port: u16,
    /// `ip6:`: the host is IPv6.
    pub ipv6: bool,
    /// `sock:PATH`: a Unix socket instead (fio's port stays its default, as fio reports it).
    pub socket: Option<std::path::PathBuf>,
}

impl Address {
    /// Reads fio's form.
    pub fn parse(s: &str) -> Result<Address, String> {
        if let Some(path) = s.strip_prefix("sock:") {
            if path.is_empty() {
                return Err(format!("{s}: a Unix socket needs its path (sock:/run/fio.sock)"));
            }
            return Ok(Address {
                host: Some(path.to_string()),
                port: PORT,
                ipv6: false,
                socket: Some(path.into()),
            });
        }
        let port_of = |p: &str| -> Result<u16, String> {
            p.parse::<u16>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{s}: bad server port {p} (fio's ports are 1 to 65535)"))
        };
        if let Some(p) = s.strip_prefix(':') {
            return Ok(Address {
                host: None,
                port: port_of(p)?,
                ipv6: false,
                socket: None,
            });
        }
        let (ipv6, rest) = if let Some(r) = s.strip_prefix("ip6:") {
            (true, r)
        } else {
            (
                false,
                s.strip_prefix("ip4:").or_else(|| s.strip_prefix("ip:")).unwrap_or(s),
            )
        };
        let (host, port) = match rest.split_once(',') {
            Some((h, p)) => (h, port_of(p)?),
            None => (rest, PORT),
        };
        Ok(Address {
            host: (!host.is_empty()).then(|| host.to_string()),
            port,
            ipv6,
            socket: None,
        })
    }

    /// The socket addresses it names (every address of the family where no host is named).
    pub fn resolve(&self) -> Result<Vec<SocketAddr>, String> {
        let host = match (&self.host, self.ipv6) {
            (Some(h), _) => h.clone(),
            (None, false) => "0.0.0.0".into(),
            (None, true) => "::".into(),
        };
        let found: Vec<SocketAddr> = (host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("{host}: {e}"))?
            .filter(|a| a.is_ipv6() == self.ipv6)
            .collect();
        if found.is_empty() {
            return Err(format!(
                "{host}: no {} address (fio's ip6: prefix asks for IPv6)",
                if self.ipv6 { "IPv6" } else { "IPv4" }
            ));
        }
        Ok(found)
    }
}

impl Address {
    /// The server a client reaches: the host named (a client must name one), its first
    /// address.
    pub fn resolve_peer(&self) -> Result<SocketAddr, String> {
        if self.host.is_none() {
            return Err(format!(":{}: a client names the server's host", self.port));
        }
        let host = self.host.clone().unwrap_or_default();
        (host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("{host}: {e}"))?
            .find(|a| a.is_ipv6() == self.ipv6 || !self.ipv6)
            .ok_or_else(|| format!("{host}: no address"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_forms_are_read_as_fio_reads_them() {
        let a = |s: &str| Address::parse(s).unwrap();
        assert_eq!(a("").host, None);
        assert_eq!(a("").port, 8765);
        assert_eq!(a(":4444").port, 4444);
        assert_eq!(a("ip:127.0.0.1,9000").host.as_deref(), Some("127.0.0.1"));
        assert_eq!(a("ip:127.0.0.1,9000").port, 9000);
        assert_eq!(a("localhost").port, 8765);
        assert!(a("ip6:::1,8000").ipv6);
        assert_eq!(a("sock:/tmp/x").socket.as_deref(), Some(std::path::Path::new("/tmp/x")));
        assert_eq!(a("sock:/tmp/x").host.as_deref(), Some("/tmp/x"));
        assert!(Address::parse("sock:").unwrap_err().contains("needs its path"));
        assert!(Address::parse("host,0").unwrap_err().contains("bad server port"));
    }
}
