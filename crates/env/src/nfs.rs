//! An NFS mount's RPC counters, from /proc/self/mountstats (read by the procfs crate): per
//! operation its calls and the milliseconds of their round trips (the network and the server)
//! and of their whole execution (the client's queue too) — what a phase on NFS spent past the
//! client, the evidence for a network bound (docs/bound.md).

use std::path::Path;

use procfs::FromRead;
pub use storlab_model::result::NfsOp;

/// Each RPC operation's counters of the NFS mount that holds `path`; empty when it is not on
/// NFS or the file does not read.
pub fn counters(path: &Path) -> Vec<NfsOp> {
    std::fs::read("/proc/self/mountstats").map_or_else(|_| Vec::new(), |t| of_mount(&t, path))
}

/// The counters of the NFS mount holding `path` in `mountstats` (the file's text): the longest
/// NFS mount point `path` is under.
pub fn of_mount(mountstats: &[u8], path: &Path) -> Vec<NfsOp> {
    let Ok(all) = procfs::process::MountStats::from_read(mountstats) else {
        return Vec::new();
    };
    let mount = all
        .0
        .iter()
        .filter(|m| m.fs.starts_with("nfs") && path.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len());
    let Some(stats) = mount.and_then(|m| m.statistics.as_ref()) else {
        return Vec::new();
    };
    let mut ops: Vec<NfsOp> = stats
        .per_op_stats
        .iter()
        .map(|(op, s)| NfsOp {
            op: op.clone(),
            calls: s.operations,
            rtt_ms: s.cum_resp_time.as_millis() as u64,
            exec_ms: s.cum_total_req_time.as_millis() as u64,
        })
        .collect();
    ops.sort_by(|a, b| a.op.cmp(&b.op));
    ops
}

/// What each operation did between two readings: `after` less `before`, the operations that
/// ran.
pub fn delta(before: &[NfsOp], after: &[NfsOp]) -> Vec<NfsOp> {
    after
        .iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.op == a.op);
            let less = |f: fn(&NfsOp) -> u64| f(a).saturating_sub(b.map_or(0, f));
            let d = NfsOp {
                op: a.op.clone(),
                calls: less(|o| o.calls),
                rtt_ms: less(|o| o.rtt_ms),
                exec_ms: less(|o| o.exec_ms),
            };
            (d.calls > 0).then_some(d)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mountstats file as the kernel writes it for an ext4 and an NFSv4 mount (the counters
    /// made up for the test: no NFS server or client runs on the test machines). Per op:
    /// calls, transmissions, timeouts, bytes sent and received, queue, round trip and execute
    /// milliseconds.
    fn mountstats(read_calls: u64, read_rtt: u64) -> String {
        let events: Vec<String> = (0..27).map(|i| i.to_string()).collect();
        format!(
            "device /dev/vda1 mounted on / with fstype ext4\n\
             device srv:/export mounted on /mnt/nfs with fstype nfs4 statvers=1.1\n\
             \topts:\trw,vers=4.2,rsize=1048576,wsize=1048576\n\
             \tage:\t120\n\
             \tcaps:\tcaps=0x3ffbffff,wtmult=512,dtsize=1048576,bsize=0,namlen=255\n\
             \tsec:\tflavor=1,pseudoflavor=1\n\
             \tevents:\t{}\n\
             \tbytes:\t1 2 3 4 5 6 7 8\n\
             \tRPC iostats version: 1.1  p/v: 100003/4 (nfs)\n\
             \tper-op statistics\n\
             \t        NULL: 1 1 0 44 24 0 0 0 0\n\
             \t        READ: {read_calls} {read_calls} 0 1000 4194304 3 {read_rtt} {} 0\n\
             \t       WRITE: 0 0 0 0 0 0 0 0 0\n\
             \n",
            events.join(" "),
            read_rtt + 10
        )
    }

    #[test]
    fn the_mount_under_a_path_gives_its_operations_and_a_phase_their_growth() {
        let before = of_mount(mountstats(100, 400).as_bytes(), Path::new("/mnt/nfs/dir/f"));
        let read = before.iter().find(|o| o.op == "READ").unwrap();
        assert_eq!((read.calls, read.rtt_ms, read.exec_ms), (100, 400, 410));
        assert!(
            of_mount(mountstats(1, 1).as_bytes(), Path::new("/srv/data")).is_empty(),
            "ext4 has none"
        );
        let after = of_mount(mountstats(350, 1400).as_bytes(), Path::new("/mnt/nfs"));
        let d = delta(&before, &after);
        assert_eq!(
            d,
            vec![NfsOp {
                op: "READ".into(),
                calls: 250,
                rtt_ms: 1000,
                exec_ms: 1000
            }]
        );
    }
}
