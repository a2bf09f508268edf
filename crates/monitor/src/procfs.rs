//! The kernel's counters as text: /proc/diskstats (Documentation/admin-guide/iostats.rst; its
//! parser lives in storlab-env, which a run's fio disk_util reads too, and is re-exported here)
//! and the NFS client's /proc/self/mountstats (the `statvers=1.1` layout of fs/nfs/super.c and
//! net/sunrpc/stats.c). Parsers only: they take the text and read no file, so that a test can
//! hand them figures the kernel here will never produce (a counter about to wrap).

use std::collections::BTreeMap;

pub use storlab_env::diskstats::{field, parse_diskstats, DiskLine};

/// One operation's figures on an NFS mount (the "per-op statistics" lines).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NfsOp {
    /// Operations.
    pub ops: u64,
    /// Bytes sent and received for them.
    pub bytes: u64,
    /// Milliseconds of round-trip time, summed.
    pub rtt_ms: u64,
    /// Milliseconds from the request's start to its end (queue, RTT and the client's work), summed.
    pub execute_ms: u64,
}

/// An NFS mount's figures from /proc/self/mountstats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NfsMount {
    /// What is mounted (server:/export).
    pub source: String,
    /// Where.
    pub mount_point: String,
    /// Bytes the applications read (normal and O_DIRECT).
    pub read_bytes: u64,
    /// Bytes the applications wrote.
    pub write_bytes: u64,
    /// Per operation (READ, WRITE, GETATTR, …), the ones with any operations.
    pub ops: BTreeMap<String, NfsOp>,
}

/// The NFS mounts in /proc/self/mountstats (other filesystems' entries are skipped).
pub fn parse_mountstats(text: &str) -> Vec<NfsMount> {
    let mut out: Vec<NfsMount> = Vec::new();
    let mut in_nfs = false;
    let mut in_ops = false;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("device ") {
            in_ops = false;
            // "device SRC mounted on MNT with fstype nfs4 statvers=1.1"
            let (src, rest) = rest.split_once(" mounted on ").unwrap_or((rest, ""));
            let (mnt, rest) = rest.split_once(" with fstype ").unwrap_or((rest, ""));
            let fstype = rest.split_whitespace().next().unwrap_or("");
            in_nfs = fstype == "nfs" || fstype == "nfs4";
            if in_nfs {
                out.push(NfsMount {
                    source: src.to_string(),
                    mount_point: mnt.to_string(),
                    ..NfsMount::default()
                });
            }
            continue;
        }
        if !in_nfs {
            continue;
        }
        let Some(m) = out.last_mut() else { continue };
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("bytes:") {
            let v: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            // normal read, normal write, direct read, direct write, server read, server write, …
            if v.len() >= 4 {
                m.read_bytes = v[0] + v[2];
                m.write_bytes = v[1] + v[3];
            }
        } else if t == "per-op statistics" {
            in_ops = true;
        } else if in_ops {
            let Some((op, rest)) = t.split_once(':') else { continue };
            let v: Vec<u64> = rest.split_whitespace().filter_map(|x| x.parse().ok()).collect();
            // ops, transmissions, timeouts, bytes sent, bytes received, queue ms, rtt ms, execute ms
            if v.len() >= 8 && v[0] > 0 {
                m.ops.insert(
                    op.to_string(),
                    NfsOp {
                        ops: v[0],
                        bytes: v[3] + v[4],
                        rtt_ms: v[6],
                        execute_ms: v[7],
                    },
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskstats_lines_parse_with_or_without_the_newer_fields() {
        let text = "   7       0 loop0 34 0 2232 5 1 0 8 0 0 12 5 0 0 0 0 0 0\n\
                    8      16 sdb 4294967290 3 9 4 5 6 7 8 2 10 11\n\
                    bad line\n";
        let d = parse_diskstats(text);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].major, d[0].minor, d[0].name.as_str()), (7, 0, "loop0"));
        assert_eq!(d[0].fields[field::SECTORS_READ], 2232);
        assert_eq!(d[0].fields[field::BUSY_MS], 12);
        assert_eq!(d[1].fields[field::READS], 4294967290);
        assert_eq!(d[1].fields[field::IN_FLIGHT], 2);
        assert_eq!(d[1].fields[field::WEIGHTED_MS], 11);
    }

    // The layout of an NFSv4 client's entry as Linux 6.x prints it (fs/nfs/super.c,
    // net/sunrpc/stats.c); the figures are made up. No NFS server runs here: this text stands
    // in for a real mount.
    const MOUNTSTATS: &str = "device /dev/vda1 mounted on / with fstype ext4
device srv:/export mounted on /mnt/data with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,rsize=1048576
\tage:\t1234
\tevents:\t1 2 3
\tbytes:\t1000 2000 300 400 1300 2400 0 0
\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)
\txprt:\ttcp 0 1 2 0 0 3 3 0 3 0 2 0 0
\tper-op statistics
\t        NULL: 0 0 0 0 0 0 0 0
\t        READ: 10 10 0 1640 1300 2 30 35 0
\t       WRITE: 20 20 0 2400 2400 4 60 70 0
\t     GETATTR: 5 5 0 600 800 0 5 6 0

device proc mounted on /proc with fstype proc
";

    #[test]
    fn an_nfs_mounts_bytes_and_operations_are_read_and_other_filesystems_skipped() {
        let m = parse_mountstats(MOUNTSTATS);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].source, "srv:/export");
        assert_eq!(m[0].mount_point, "/mnt/data");
        assert_eq!((m[0].read_bytes, m[0].write_bytes), (1300, 2400));
        assert_eq!(m[0].ops.len(), 3, "NULL had no operations");
        let read = m[0].ops["READ"];
        assert_eq!((read.ops, read.bytes, read.rtt_ms, read.execute_ms), (10, 2940, 30, 35));
        assert_eq!(m[0].ops["WRITE"].ops, 20);
    }
}
