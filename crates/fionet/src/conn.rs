//! A connection of fio's protocol over TCP or a Unix socket (fio's `sock:PATH`), and the
//! listener a server accepts them on: the one place that knows which.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

use crate::address::Address;

/// One connection.
#[derive(Debug)]
pub enum Stream {
    /// Over TCP.
    Tcp(TcpStream),
    /// Over a Unix socket.
    Unix(UnixStream),
}

impl Stream {
    /// Reaches the server `addr` names, within ten seconds over TCP; with what the client tells
    /// the server it reached (fio's probe: the IP, or the socket's path).
    pub fn connect(addr: &Address) -> io::Result<(Stream, String)> {
        if let Some(path) = &addr.socket {
            return Ok((Stream::Unix(UnixStream::connect(path)?), path.display().to_string()));
        }
        let to = addr
            .resolve_peer()
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, e))?;
        let stream = TcpStream::connect_timeout(&to, Duration::from_secs(10))?;
        stream.set_nodelay(true)?;
        Ok((Stream::Tcp(stream), to.ip().to_string()))
    }

    /// A second handle on the same connection (one thread writes while another reads).
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
        })
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}

/// Where a server accepts its clients.
#[derive(Debug)]
pub enum Listener {
    /// A TCP port.
    Tcp(TcpListener),
    /// A Unix socket this server made, removed again when the listener goes.
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Binds where `addr` says. A socket path that exists is not replaced (fio's bind fails
    /// the same way): it may be another server's.
    pub fn bind(addr: &Address) -> Result<Listener, String> {
        if let Some(path) = &addr.socket {
            return UnixListener::bind(path)
                .map(|l| Listener::Unix(l, path.clone()))
                .map_err(|e| format!("binding sock:{}: {e}", path.display()));
        }
        let addrs = addr.resolve()?;
        TcpListener::bind(&addrs[..])
            .map(Listener::Tcp)
            .map_err(|e| format!("binding {}: {e}", addrs[0]))
    }

    /// Where it listens, as a person reads it.
    pub fn local(&self) -> String {
        match self {
            Listener::Tcp(l) => l.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            Listener::Unix(_, path) => format!("sock:{}", path.display()),
        }
    }

    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Listener::Tcp(l) => l.set_nonblocking(on),
            Listener::Unix(l, _) => l.set_nonblocking(on),
        }
    }

    /// The next client, with who it is (its address, or the socket's path).
    pub(crate) fn accept(&self) -> io::Result<(Stream, String)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((Stream::Tcp(s), peer.to_string()))
            }
            Listener::Unix(l, path) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok((Stream::Unix(s), path.display().to_string()))
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            // The socket this listener made (bind refuses a path that exists).
            let _ = std::fs::remove_file(path);
        }
    }
}
