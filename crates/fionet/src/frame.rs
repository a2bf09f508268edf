//! fio's frames (server.c `fio_net_send_cmd`, `fio_net_recv_cmd`): a 24-byte header — version,
//! opcode, flags, tag, payload length, then a CRC-16 of the header's first 20 bytes and one of
//! the payload — and at most 1 KiB of payload; a longer payload goes as fragments, each but the
//! last flagged MORE, which the reader joins.

use std::io::{self, Read, Write};

use crate::codec::{Put, Take};

/// fio 3.33's `FIO_SERVER_VER`; fio refuses any other ("client/server version mismatch").
pub const VERSION: u16 = 97;
/// fio's `FIO_NET_PORT`.
pub const PORT: u16 = 8765;
/// fio's `FIO_SERVER_MAX_FRAGMENT_PDU`.
const MAX_FRAGMENT: usize = 1024;
/// fio's `FIO_SERVER_MAX_CMD_MB`: the most a joined command may hold.
const MAX_COMMAND: usize = 2048 << 20;
const HEADER: usize = 24;
/// The header's bytes its CRC covers (fio's `FIO_NET_CMD_CRC_SZ`).
const HEADER_SUMMED: usize = 20;
/// fio's `FIO_NET_CMD_F_MORE`.
const F_MORE: u32 = 1;

const CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_ARC);

/// fio's command opcodes (server.h `FIO_NET_CMD_*`).
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub enum Op {
    Quit = 1,
    Exit = 2,
    Job = 3,
    JobLine = 4,
    Text = 5,
    Ts = 6,
    Gs = 7,
    SendEta = 8,
    Eta = 9,
    Probe = 10,
    Start = 11,
    Stop = 12,
    Du = 13,
    ServerStart = 14,
    AddJob = 15,
    Run = 16,
    IoLog = 17,
    UpdateJob = 18,
    LoadFile = 19,
    VTrigger = 20,
    SendFile = 21,
    JobOpt = 22,
}

impl Op {
    const ALL: [Op; 22] = [
        Op::Quit,
        Op::Exit,
        Op::Job,
        Op::JobLine,
        Op::Text,
        Op::Ts,
        Op::Gs,
        Op::SendEta,
        Op::Eta,
        Op::Probe,
        Op::Start,
        Op::Stop,
        Op::Du,
        Op::ServerStart,
        Op::AddJob,
        Op::Run,
        Op::IoLog,
        Op::UpdateJob,
        Op::LoadFile,
        Op::VTrigger,
        Op::SendFile,
        Op::JobOpt,
    ];

    /// The opcode's command, None for one fio 3.33 does not have.
    pub fn of(code: u16) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| *o as u16 == code)
    }
}

/// One command, its fragments joined.
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The opcode as sent (`Op::of` names it).
    pub op: u16,
    /// The sender's tag, sent back in a reply (fio's client matches its ETA and probe
    /// requests by it).
    pub tag: u64,
    pub payload: Vec<u8>,
}

impl Command {
    /// Whether this is command `op`.
    pub fn is(&self, op: Op) -> bool {
        self.op == op as u16
    }
}

/// A frame fio would refuse, or the connection failing.
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the peer speaks fio's client/server protocol version {0}; this is version {VERSION} (fio 3.33)")]
    Version(u16),
    #[error("a frame's header fails its CRC-16 (the peer is not speaking fio's protocol)")]
    HeaderCrc,
    #[error("a frame's payload fails its CRC-16")]
    PayloadCrc,
    #[error("a fragment of {0} bytes, more than fio's 1024")]
    Fragment(usize),
    #[error("a command of more than fio's 2048 MiB")]
    TooLarge,
    #[error("a fragment of opcode {got} continues a command of opcode {first}")]
    Mixed { first: u16, got: u16 },
}

/// Writes a command, in fragments of at most 1 KiB as fio sends it.
pub fn write(w: &mut impl Write, op: Op, tag: u64, payload: &[u8]) -> io::Result<()> {
    let mut chunks: Vec<&[u8]> = payload.chunks(MAX_FRAGMENT).collect();
    if chunks.is_empty() {
        chunks.push(&[]);
    }
    let last = chunks.len() - 1;
    let mut out = Vec::with_capacity(payload.len() + HEADER * chunks.len());
    for (i, chunk) in chunks.iter().enumerate() {
        let mut h = Put::default();
        h.u16(VERSION);
        h.u16(op as u16);
        h.u32(if i < last { F_MORE } else { 0 });
        h.u64(tag);
        h.u32(chunk.len() as u32);
        let summed = CRC16.checksum(&h.0[..HEADER_SUMMED]);
        h.u16(summed);
        h.u16(CRC16.checksum(chunk));
        out.extend_from_slice(&h.0);
        out.extend_from_slice(chunk);
    }
    w.write_all(&out)?;
    w.flush()
}

/// Reads one command, joining its fragments; None where the peer closed the connection
/// between commands.
pub fn read(r: &mut impl Read) -> Result<Option<Command>, FrameError> {
    let mut cmd: Option<Command> = None;
    loop {
        let mut h = [0u8; HEADER];
        match read_full(r, &mut h)? {
            0 if cmd.is_none() => return Ok(None),
            n if n < HEADER => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
            _ => {}
        }
        let mut t = Take::new(&h);
        let (version, op, flags, tag, len) = (t.u16(), t.u16(), t.u32(), t.u64(), t.u32() as usize);
        let (head_crc, body_crc) = (t.u16(), t.u16());
        if CRC16.checksum(&h[..HEADER_SUMMED]) != head_crc {
            return Err(FrameError::HeaderCrc);
        }
        if version != VERSION {
            return Err(FrameError::Version(version));
        }
        if len > MAX_FRAGMENT {
            return Err(FrameError::Fragment(len));
        }
        let mut body = vec![0u8; len];
        if read_full(r, &mut body)? < len {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        if CRC16.checksum(&body) != body_crc {
            return Err(FrameError::PayloadCrc);
        }
        let c = cmd.get_or_insert_with(|| Command {
            op,
            tag,
            payload: Vec::new(),
        });
        if c.op != op {
            return Err(FrameError::Mixed { first: c.op, got: op });
        }
        if c.payload.len() + len > MAX_COMMAND {
            return Err(FrameError::TooLarge);
        }
        c.payload.extend_from_slice(&body);
        if flags & F_MORE == 0 {
            return Ok(cmd);
        }
    }
}

/// Reads until `buf` is full or the peer closes; how much was read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_payload_goes_in_fragments_and_comes_back_whole() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let mut wire = Vec::new();
        write(&mut wire, Op::Ts, 42, &payload).unwrap();
        // Three fragments: 1024 + 1024 + 952, each with its header.
        assert_eq!(wire.len(), 3000 + 3 * HEADER);
        assert_eq!(u32::from_le_bytes(wire[4..8].try_into().unwrap()), F_MORE);
        let c = read(&mut &wire[..]).unwrap().unwrap();
        assert_eq!((c.op, c.tag, c.payload), (Op::Ts as u16, 42, payload));
    }

    #[test]
    fn a_damaged_frame_or_another_version_is_refused() {
        let mut wire = Vec::new();
        write(&mut wire, Op::Probe, 1, b"hello").unwrap();
        let mut bad = wire.clone();
        bad[HEADER + 1] ^= 1;
        assert!(matches!(read(&mut &bad[..]), Err(FrameError::PayloadCrc)));
        let mut old = wire.clone();
        old[0] = 96;
        assert!(matches!(read(&mut &old[..]), Err(FrameError::HeaderCrc)));
        assert!(read(&mut &[][..]).unwrap().is_none());
    }

    #[test]
    fn the_crc_is_fios_crc16() {
        // fio's crc16_table[1] is 0xC0C1: the sum of the one byte 0x01 from 0.
        assert_eq!(CRC16.checksum(&[1]), 0xC0C1);
    }
}
