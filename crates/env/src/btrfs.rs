//! btrfs as the kernel tells it: a scrub's progress and the errors it found, per device
//! (BTRFS_IOC_SCRUB_PROGRESS). Read by the impact study's scrub task and by the monitor.

/// The kernel's scrub progress counters for one device: `struct btrfs_scrub_progress` in
/// linux/btrfs.h (fifteen u64, in this order).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ScrubProgress {
    /// `data_extents_scrubbed`.
    pub data_extents_scrubbed: u64,
    /// `tree_extents_scrubbed`.
    pub tree_extents_scrubbed: u64,
    /// `data_bytes_scrubbed`.
    pub data_bytes_scrubbed: u64,
    /// `tree_bytes_scrubbed`.
    pub tree_bytes_scrubbed: u64,
    /// `read_errors`.
    pub read_errors: u64,
    /// `csum_errors`.
    pub csum_errors: u64,
    /// `verify_errors`.
    pub verify_errors: u64,
    /// `no_csum`.
    pub no_csum: u64,
    /// `csum_discards`.
    pub csum_discards: u64,
    /// `super_errors`.
    pub super_errors: u64,
    /// `malloc_errors`.
    pub malloc_errors: u64,
    /// `uncorrectable_errors`.
    pub uncorrectable_errors: u64,
    /// `corrected_errors`.
    pub corrected_errors: u64,
    /// `last_physical`.
    pub last_physical: u64,
    /// `unverified_errors`.
    pub unverified_errors: u64,
}

/// `struct btrfs_ioctl_scrub_args`: 1024 bytes in all.
#[repr(C)]
struct ScrubArgs {
    devid: u64,
    start: u64,
    end: u64,
    flags: u64,
    progress: ScrubProgress,
    unused: [u64; (1024 - 32 - std::mem::size_of::<ScrubProgress>()) / 8],
}

const _: () = assert!(std::mem::size_of::<ScrubArgs>() == 1024);

/// BTRFS_IOC_SCRUB_PROGRESS = _IOWR(BTRFS_IOCTL_MAGIC 0x94, 29, struct btrfs_ioctl_scrub_args).
const SCRUB_PROGRESS: rustix::ioctl::Opcode = rustix::ioctl::opcode::read_write::<ScrubArgs>(0x94, 29);

/// The kernel's scrub counters of device `devid` of the btrfs filesystem open at `dir` (a
/// file or directory on it), or None when no scrub runs on that device (ENOTCONN) or the kernel
/// will not say.
///
/// Why an ioctl rather than `btrfs scrub status`: the status a background scrub leaves in
/// /var/lib/btrfs is written by btrfs-progs every few seconds (it says "no stats available" or
/// an old percentage meanwhile, and the last scrub's end until the next one has registered);
/// the kernel's counters are what the scrub has really done, at the moment of asking.
pub fn scrub_progress(dir: &std::fs::File, devid: u64) -> Option<ScrubProgress> {
    let mut args = ScrubArgs {
        devid,
        start: 0,
        end: 0,
        flags: 0,
        progress: ScrubProgress::default(),
        unused: [0; (1024 - 32 - std::mem::size_of::<ScrubProgress>()) / 8],
    };
    // SAFETY: SCRUB_PROGRESS is the kernel's opcode for this request and ScrubArgs has the
    // layout of struct btrfs_ioctl_scrub_args (its size is checked above); the kernel writes
    // only inside it.
    let r = unsafe {
        rustix::ioctl::ioctl(
            dir,
            rustix::ioctl::Updater::<'_, SCRUB_PROGRESS, ScrubArgs>::new(&mut args),
        )
    };
    r.ok().map(|()| args.progress)
}
