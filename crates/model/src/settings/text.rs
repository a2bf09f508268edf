//! Each setting's value as the text its reader reads back to the same value: what `storlab
//! run --parse-only` and `storlab fio --parse-only` print as a storlab job file, so that the
//! file they print runs the job they read. The test below reads every form back.

use storlab_units::{Duration, Rate, Size};

use super::*;
use crate::values::{BackendKind, BlockSizes, DataPattern, FsyncPolicy};

/// A setting's value as text its reader reads back.
pub trait SettingText {
    /// The text.
    fn text(&self) -> String;
}

impl SettingText for u8 {
    fn text(&self) -> String {
        self.to_string()
    }
}

impl SettingText for u32 {
    fn text(&self) -> String {
        self.to_string()
    }
}

impl SettingText for u64 {
    fn text(&self) -> String {
        self.to_string()
    }
}

impl SettingText for f64 {
    fn text(&self) -> String {
        // Rust prints the shortest text that reads back as the same f64.
        self.to_string()
    }
}

impl SettingText for bool {
    fn text(&self) -> String {
        self.to_string()
    }
}

impl SettingText for Duration {
    fn text(&self) -> String {
        self.to_string()
    }
}

impl SettingText for Rate {
    fn text(&self) -> String {
        match self {
            Rate::Iops(v) => format!("{v}iops"),
            Rate::BytesPerSec(v) => format!("{}/s", Size(*v as u64)),
        }
    }
}

impl SettingText for BackendKind {
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl SettingText for BlockSizes {
    fn text(&self) -> String {
        match self {
            BlockSizes::Fixed(b) => Size(*b).to_string(),
            BlockSizes::Mix(m) => m
                .iter()
                .map(|(b, w)| format!("{}:{w}", Size(*b)))
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

impl SettingText for FsyncPolicy {
    fn text(&self) -> String {
        match self {
            FsyncPolicy::None => "none".into(),
            FsyncPolicy::End => "end".into(),
            FsyncPolicy::Every(n) => n.to_string(),
        }
    }
}

impl SettingText for DataPattern {
    fn text(&self) -> String {
        match self {
            DataPattern::Random => "random".into(),
            DataPattern::Zeros => "zeros".into(),
            DataPattern::Compressible(p) => format!("compress:{p}"),
            DataPattern::Bytes(b) => format!("0x{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
        }
    }
}

impl SettingText for SyncCall {
    fn text(&self) -> String {
        match self {
            SyncCall::Fsync => "fsync".into(),
            SyncCall::Fdatasync => "fdatasync".into(),
            SyncCall::SyncFileRange(flags) => format!(
                "sync_file_range:{}",
                SyncCall::RANGE_FLAGS
                    .iter()
                    .filter(|(_, bit)| flags & bit != 0)
                    .map(|(name, _)| *name)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }
}

impl SettingText for Distribution {
    fn text(&self) -> String {
        match self {
            Distribution::Uniform => "uniform".into(),
            Distribution::Zoned(z) => format!(
                "zoned:{}",
                z.iter().map(|(a, r)| format!("{a}/{r}")).collect::<Vec<_>>().join(":")
            ),
            Distribution::ZonedAbs(z) => format!(
                "zoned_abs:{}",
                z.iter().map(|(a, b)| format!("{a}/{b}")).collect::<Vec<_>>().join(":")
            ),
            Distribution::Zipf(theta) => format!("zipf:{theta}"),
            Distribution::Pareto(h) => format!("pareto:{h}"),
            Distribution::Normal(dev) => format!("normal:{dev}"),
        }
    }
}

impl SettingText for Strided {
    fn text(&self) -> String {
        format!("{},{},{}", Size(self.size), Size(self.skip), Size(self.range))
    }
}

impl SettingText for Zbd {
    fn text(&self) -> String {
        if self.capacity == self.size {
            Size(self.size).to_string()
        } else {
            format!("{},{}", Size(self.size), Size(self.capacity))
        }
    }
}

impl SettingText for FileSizes {
    fn text(&self) -> String {
        if self.low == self.high {
            Size(self.low).to_string()
        } else {
            format!("{}-{}", Size(self.low), Size(self.high))
        }
    }
}

impl SettingText for FileService {
    fn text(&self) -> String {
        match self {
            FileService::RoundRobin(n) => format!("roundrobin:{n}"),
            FileService::Sequential => "sequential".into(),
            FileService::Random(n) => format!("random:{n}"),
        }
    }
}

/// A priority class's name, as the readers take it.
fn class_name(class: u8) -> String {
    match class {
        1 => "rt".into(),
        2 => "be".into(),
        3 => "idle".into(),
        c => c.to_string(),
    }
}

impl SettingText for IoPriority {
    fn text(&self) -> String {
        format!("{}:{}", class_name(self.class), self.level)
    }
}

impl SettingText for CommandPriority {
    fn text(&self) -> String {
        let pct = if self.read_percent == self.write_percent {
            self.read_percent.to_string()
        } else {
            format!("{},{}", self.read_percent, self.write_percent)
        };
        format!("{pct}:{}", self.priority.text())
    }
}

/// A list of numbers as Linux writes it, runs as ranges: `0-3,8`.
fn list_text(items: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        let mut j = i;
        while j + 1 < items.len() && items[j + 1] == items[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            items[i].to_string()
        } else {
            format!("{}-{}", items[i], items[j])
        });
        i = j + 1;
    }
    out.join(",")
}

impl SettingText for CpuList {
    fn text(&self) -> String {
        list_text(&self.0)
    }
}

impl SettingText for MemoryPolicy {
    fn text(&self) -> String {
        match self {
            MemoryPolicy::Default => "default".into(),
            MemoryPolicy::Local => "local".into(),
            MemoryPolicy::Prefer(n) => format!("prefer:{n}"),
            MemoryPolicy::Bind(n) => format!("bind:{}", list_text(n)),
            MemoryPolicy::Interleave(n) => format!("interleave:{}", list_text(n)),
        }
    }
}

impl SettingText for Steady {
    fn text(&self) -> String {
        format!("{}:{}{}", self.name(), self.limit, if self.percent { "%" } else { "" })
    }
}

impl SettingText for ErrnoList {
    fn text(&self) -> String {
        self.to_string()
    }
}

/// Settings whose value is one of a few words, written as the word its reader takes.
macro_rules! words {
    ($($ty:ident { $($variant:ident => $word:literal),+ $(,)? })+) => {
        $(impl SettingText for $ty {
            fn text(&self) -> String {
                match self { $($ty::$variant => $word.into(),)+ }
            }
        })+
    };
}

words! {
    RatePer { Total => "total", Worker => "worker" }
    Fadvise { None => "none", Sequential => "sequential", Random => "random", Noreuse => "noreuse", Dontneed => "dontneed" }
    Fallocate { None => "none", Posix => "posix", Keep => "keep", Truncate => "truncate" }
    RateProcess { Linear => "linear", Poisson => "poisson" }
    ErrorsGoneOn { None => "none", Read => "read", Write => "write", Io => "io" }
    Share { Split => "split", Whole => "whole" }
    CpusPolicy { Shared => "shared", Split => "split" }
}

/// A size setting's value (its reader is `read_size` or `read_io_size`): exact, in the largest
/// binary unit that divides it.
pub(super) fn size_text(v: &u64) -> String {
    Size(*v).to_string()
}

/// A seed, in hexadecimal as storlab prints it (a decimal of 16 digits would read as hex).
pub(super) fn seed_text(v: &u64) -> String {
    format!("{v:#018x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts a user writes, for every setting: each reads, is written, and reads back the same.
    const SAMPLES: &[(&str, &[&str])] = &[
        ("size", &["1g", "4097", "10MB", "1t"]),
        ("bs", &["4k", "4k:70,64k:30", "512", "1m"]),
        ("engine", &["psync", "io_uring", "mmap", "null", "stdio", "pvsync"]),
        ("fsync", &["none", "end", "32"]),
        ("runtime", &["10s", "1h30m", "1500ms", "250us", "7ns", "0s"]),
        ("rate", &["20000iops", "200MiB/s", "1g/s", "3iops"]),
        ("rate_min", &["1MiB/s", "100iops"]),
        ("pattern", &["random", "zeros", "compress:50", "0xaa55"]),
        ("distribution", &["uniform", "zoned:50/5:30/15:20/"]),
        ("strided", &["256m,2g", "64k,64k,1m"]),
        ("zbd", &["256m", "64m,48m"]),
        ("filesize", &["64k", "96k-192k"]),
        (
            "file_service",
            &["roundrobin", "roundrobin:4", "sequential", "random:2"],
        ),
        ("priority", &["rt:0", "be", "idle:7"]),
        ("cmdprio", &["20:rt:0", "10,30:be:2"]),
        ("cpus", &["0-3,8", "1", "0,2,4"]),
        (
            "memory_policy",
            &["default", "local", "prefer:1", "bind:0-1", "interleave:0,2"],
        ),
        ("steady", &["iops:10%", "iops_slope:0.1%", "bw:5%", "bw_slope:1000"]),
        ("latency_percentile", &["99.9", "100", "0.5"]),
        ("seed", &["1234567890123456", "0x86dcdfd8b7e3694c", "7"]),
        ("continue_errnos", &["EIO,EILSEQ", "ENOSPC", "5,28"]),
        ("io_size", &["4097", "1g"]),
    ];

    /// Reads `text` as `key`'s value.
    fn read(key: &str, text: &str) -> Settings {
        let mut s = Settings::default();
        s.apply_str(key, text)
            .unwrap_or_else(|e| panic!("{key} = {text}: {e:?}"));
        s
    }

    #[test]
    fn every_setting_reads_back_what_it_writes() {
        // Each setting's default (where it has one), each sample above, each written and read
        // back: the same settings.
        let mut checked = 0;
        for setting in SETTINGS {
            let mut texts: Vec<&str> = SAMPLES
                .iter()
                .filter(|(k, _)| *k == setting.key)
                .flat_map(|(_, t)| t.iter().copied())
                .collect();
            let default = setting.default;
            if read_ok(setting.key, default) {
                texts.push(default);
            }
            for t in texts {
                let s = read(setting.key, t);
                let written = s.entries();
                assert_eq!(written.len(), 1, "{}", setting.key);
                let back = read(setting.key, &written[0].1);
                assert_eq!(back, s, "{} = {t} was written as {}", setting.key, written[0].1);
                checked += 1;
            }
        }
        assert!(checked > SETTINGS.len(), "{checked}");
    }

    fn read_ok(key: &str, text: &str) -> bool {
        Settings::default().apply_str(key, text).is_ok()
    }

    #[test]
    fn sizes_and_seeds_are_written_as_people_read_them() {
        assert_eq!(read("size", "1g").entries(), vec![("size", "1GiB".to_string())]);
        assert_eq!(read("size", "10MB").entries(), vec![("size", "10000000B".to_string())]);
        // Hexadecimal, as storlab prints a seed: 16 decimal digits would read as hex.
        assert_eq!(
            read("seed", "7").entries(),
            vec![("seed", "0x0000000000000007".to_string())]
        );
        assert_eq!(read("cpus", "3,0-2,8").entries(), vec![("cpus", "0-3,8".to_string())]);
    }
}
