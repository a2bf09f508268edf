//! The payloads of fio's commands (server.h's `cmd_*_pdu`), each as fio lays it out: fixed
//! fields little-endian, text in NUL-padded fields of fio's sizes.

use crate::codec::{Put, Take};

/// fio's `FIO_PROBE_FLAG_ZLIB`: the client takes zlib-compressed logs.
pub const PROBE_FLAG_ZLIB: u64 = 1;
/// fio's `FIO_LOG_INFO`.
pub const LOG_INFO: u32 = 2;
/// fio's `FIO_LOG_ERR`.
pub const LOG_ERR: u32 = 3;
/// fio's `FIO_CLIENT_TYPE_CLI`.
pub const CLIENT_TYPE_CLI: u32 = 1;

/// The client's probe (`cmd_client_probe_pdu`): its flags and the address it reached the
/// server by.
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientProbe {
    pub flags: u64,
    pub server: String,
}

impl ClientProbe {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u64(self.flags);
        p.text(&self.server, 128);
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> ClientProbe {
        let mut t = Take::new(b);
        ClientProbe {
            flags: t.u64(),
            server: t.text(128),
        }
    }
}

/// The server's answer to a probe (`cmd_probe_reply_pdu`, 112 bytes).
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProbeReply {
    pub hostname: String,
    pub bigendian: u8,
    pub fio_version: String,
    /// fio's `FIO_OS`: 1 for Linux.
    pub os: u8,
    /// fio's `FIO_ARCH`: 1 for x86-64.
    pub arch: u8,
    /// Bytes per pointer.
    pub bpp: u8,
    pub cpus: u32,
    pub flags: u64,
}

impl ProbeReply {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.text(&self.hostname, 64);
        p.u8(self.bigendian);
        p.text(&self.fio_version, 32);
        p.u8(self.os);
        p.u8(self.arch);
        p.u8(self.bpp);
        p.u32(self.cpus);
        p.u64(self.flags);
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> ProbeReply {
        let mut t = Take::new(b);
        let mut r = ProbeReply {
            hostname: t.text(64),
            bigendian: t.u8(),
            fio_version: t.text(32),
            os: t.u8(),
            arch: t.u8(),
            bpp: t.u8(),
            cpus: t.u32(),
            flags: 0,
        };
        r.flags = t.u64();
        r
    }
}

/// A job file's text sent to the server (`cmd_job_pdu`).
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFile {
    pub text: String,
    pub client_type: u32,
}

impl JobFile {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u32(self.text.len() as u32);
        p.u32(self.client_type);
        p.0.extend_from_slice(self.text.as_bytes());
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> JobFile {
        let mut t = Take::new(b);
        let len = t.u32() as usize;
        let client_type = t.u32();
        // fio's client sends its file with room to spare after it (zeros): the text ends at
        // its length or its first NUL, whichever is first.
        let body = t.bytes(len);
        let end = body.iter().position(|&c| c == 0).unwrap_or(body.len());
        JobFile {
            text: String::from_utf8_lossy(&body[..end]).into_owned(),
            client_type,
        }
    }
}

/// A job file the server reads from its own filesystem (`cmd_load_file_pdu`: fio's client's
/// `--remote-config`): its path, NUL-terminated.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFile {
    pub path: String,
    pub client_type: u16,
}

impl LoadFile {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u16(self.path.len() as u16);
        p.u16(self.client_type);
        p.0.extend_from_slice(self.path.as_bytes());
        p.0.push(0);
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> LoadFile {
        let mut t = Take::new(b);
        let len = t.u16() as usize;
        let client_type = t.u16();
        let body = t.bytes(len);
        let end = body.iter().position(|&c| c == 0).unwrap_or(body.len());
        LoadFile {
            path: String::from_utf8_lossy(&body[..end]).into_owned(),
            client_type,
        }
    }
}

/// A command line sent to the server (`cmd_line_pdu`): the arguments, fio's own name first.
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLine {
    pub args: Vec<String>,
    pub client_type: u16,
}

impl JobLine {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u16(self.args.len() as u16);
        p.u16(self.client_type);
        for a in &self.args {
            p.u16(a.len() as u16 + 1);
            p.0.extend_from_slice(a.as_bytes());
            p.u8(0);
        }
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> JobLine {
        let mut t = Take::new(b);
        let lines = t.u16();
        let client_type = t.u16();
        let args = (0..lines)
            .map(|_| {
                let len = t.u16() as usize;
                let b = t.bytes(len);
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                String::from_utf8_lossy(&b[..end]).into_owned()
            })
            .collect();
        JobLine { args, client_type }
    }
}

/// Two 32-bit words: `cmd_start_pdu` (jobs, stat outputs) and `cmd_end_pdu` (error,
/// signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pair(pub u32, pub u32);

impl Pair {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u32(self.0);
        p.u32(self.1);
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> Pair {
        let mut t = Take::new(b);
        Pair(t.u32(), t.u32())
    }
}

/// A line of the server's log (`cmd_text_pdu`): fio's client prints it after `<host> `.
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    /// fio's log level: `LOG_INFO` or `LOG_ERR`.
    pub level: u32,
    pub sec: u64,
    pub usec: u64,
    pub text: String,
}

impl Text {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u32(self.level);
        p.u32(self.text.len() as u32);
        p.u64(self.sec);
        p.u64(self.usec);
        p.0.extend_from_slice(self.text.as_bytes());
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> Text {
        let mut t = Take::new(b);
        let level = t.u32();
        let len = t.u32() as usize;
        let (sec, usec) = (t.u64(), t.u64());
        let text = String::from_utf8_lossy(t.bytes(len)).into_owned();
        Text { level, sec, usec, text }
    }
}

/// One of a job's options as given (`cmd_job_option`, 200 bytes): fio's client writes them
/// as the job's "job options" (or, `global`, the document's "global options").
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOption {
    pub global: bool,
    /// The job's place among the server's reported jobs, from 0.
    pub index: u32,
    pub name: String,
    pub value: String,
}

impl JobOption {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        p.u16(u16::from(self.global));
        let truncated = self.name.len() >= 64 || self.value.len() >= 128;
        p.u16(u16::from(truncated));
        p.u32(if self.global { 0 } else { self.index });
        p.text(&self.name, 64);
        p.text(&self.value, 128);
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> JobOption {
        let mut t = Take::new(b);
        let global = t.u16() != 0;
        let _truncated = t.u16();
        JobOption {
            global,
            index: t.u32(),
            name: t.text(64),
            value: t.text(128),
        }
    }
}

/// The server's progress (`struct jobs_eta`, 168 bytes and a byte per job): fio's client
/// asks for it every second and gives up on a server that has not answered in 5 s.
// Each field is fio's field of the same name (server.h, stat.h); its meaning is fio's.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobsEta {
    pub nr_running: u32,
    pub nr_ramp: u32,
    pub nr_pending: u32,
    pub nr_setting_up: u32,
    /// Bytes per second, read/write/trim: the rate asked for (m_ is a minimum, t_ a
    /// target) and the rate now.
    pub m_rate: [u64; 3],
    pub t_rate: [u64; 3],
    pub rate: [u64; 3],
    pub m_iops: [u32; 3],
    pub t_iops: [u32; 3],
    pub iops: [u32; 3],
    pub elapsed_sec: u64,
    pub eta_sec: u64,
    pub is_pow2: u32,
    pub unit_base: u32,
    pub sig_figs: u32,
    pub files_open: u32,
    /// Each job's state letter, fio's `run_str` ('R' running, 'F' done, 'P' pending …).
    pub run_str: Vec<u8>,
}

impl JobsEta {
    /// The payload as fio lays it out.
    pub fn encode(&self) -> Vec<u8> {
        let mut p = Put::default();
        for v in [self.nr_running, self.nr_ramp, self.nr_pending, self.nr_setting_up] {
            p.u32(v);
        }
        for a in [self.m_rate, self.t_rate, self.rate] {
            a.iter().for_each(|&v| p.u64(v));
        }
        for a in [self.m_iops, self.t_iops, self.iops] {
            a.iter().for_each(|&v| p.u32(v));
        }
        p.u32(0);
        p.u64(self.elapsed_sec);
        p.u64(self.eta_sec);
        for v in [self.is_pow2, self.unit_base, self.sig_figs, self.files_open] {
            p.u32(v);
        }
        p.u32(self.run_str.len() as u32);
        p.u32(0);
        p.0.extend_from_slice(&self.run_str);
        // fio's run_str is a C string: its NUL follows.
        p.u8(0);
        p.0
    }
    /// A payload read; bytes missing from its end read as zeros.
    pub fn decode(b: &[u8]) -> JobsEta {
        let mut t = Take::new(b);
        let mut e = JobsEta {
            nr_running: t.u32(),
            nr_ramp: t.u32(),
            nr_pending: t.u32(),
            nr_setting_up: t.u32(),
            ..Default::default()
        };
        for a in [&mut e.m_rate, &mut e.t_rate, &mut e.rate] {
            a.iter_mut().for_each(|v| *v = t.u64());
        }
        for a in [&mut e.m_iops, &mut e.t_iops, &mut e.iops] {
            a.iter_mut().for_each(|v| *v = t.u32());
        }
        t.u32();
        e.elapsed_sec = t.u64();
        e.eta_sec = t.u64();
        e.is_pow2 = t.u32();
        e.unit_base = t.u32();
        e.sig_figs = t.u32();
        e.files_open = t.u32();
        let n = t.u32() as usize;
        t.u32();
        e.run_str = t.bytes(n).to_vec();
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_payload_has_fios_size_and_comes_back_as_it_went() {
        // Sizes from fio 3.33's server.h and stat.h compiled on x86-64 (sizeof each struct).
        let probe = ProbeReply {
            hostname: "host".into(),
            fio_version: "fio-3.33".into(),
            os: 1,
            arch: 1,
            bpp: 8,
            cpus: 2,
            flags: PROBE_FLAG_ZLIB,
            ..Default::default()
        };
        assert_eq!(probe.encode().len(), 112);
        assert_eq!(ProbeReply::decode(&probe.encode()), probe);
        let cp = ClientProbe {
            flags: 1,
            server: "127.0.0.1".into(),
        };
        assert_eq!(cp.encode().len(), 136);
        assert_eq!(ClientProbe::decode(&cp.encode()), cp);
        let o = JobOption {
            global: false,
            index: 2,
            name: "bs".into(),
            value: "4k".into(),
        };
        assert_eq!(o.encode().len(), 200);
        assert_eq!(JobOption::decode(&o.encode()), o);
        let eta = JobsEta {
            nr_running: 1,
            rate: [1, 2, 3],
            run_str: b"RF".to_vec(),
            ..Default::default()
        };
        assert_eq!(eta.encode().len(), 168 + 3);
        assert_eq!(JobsEta::decode(&eta.encode()), eta);
        let line = JobLine {
            args: vec!["fio".into(), "--name=x".into()],
            client_type: 1,
        };
        assert_eq!(JobLine::decode(&line.encode()), line);
        let mut file = JobFile {
            text: "[x]\nrw=read\n".into(),
            client_type: 1,
        }
        .encode();
        file.extend_from_slice(&[0; 16]);
        assert_eq!(JobFile::decode(&file).text, "[x]\nrw=read\n");
    }
}
