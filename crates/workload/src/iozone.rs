//! IOzone's command line, read with IOzone's meanings and turned into storlab jobs.
//!
//! IOzone's tests (`-i`): 0 write/rewrite, 1 read/reread, 2 random read/write, 3 backward read,
//! 4 record rewrite, 5 stride read (`-j`), 6 fwrite/frewrite, 7 fread/freread, 8 random mix
//! (`-+p`), 9 pwrite/re-pwrite, 10 pread/re-pread, 11 pwritev/re-pwritev, 12 preadv/re-preadv.
//! Sizes without a suffix are kB, as in IOzone (`-s 16g`, `-r 64k`, `-s 1024` = 1 MiB).

use std::path::PathBuf;

use storlab_engine::{BackendKind, BlockSizes, FsyncPolicy, PhaseKind};

use crate::settings::Settings;
use crate::{Job, WorkloadError};

/// The flags storlab accepts, as `iozone -h` would list them.
pub const SUPPORTED: &[(&str, &str)] = &[
    ("-a", "automatic mode: file sizes 64 kB to 512 MB × record sizes 4 kB to 16 MB"),
    ("-b FILE", "write an Excel workbook (XLSX) of the results"),
    ("-c", "include close() in the timing"),
    ("-C", "show the bytes each worker moved"),
    ("-e", "include flush (fsync) in the timing"),
    ("-f FILE", "the file to test (single-worker mode; default iozone.tmp)"),
    ("-F FILE ...", "one file per worker (throughput mode; as many as -t)"),
    ("-g SIZE", "largest file size in automatic mode"),
    ("-h", "this help"),
    ("-i N", "a test to run (repeatable): 0 write/rewrite, 1 read/reread, 2 random read/write, 3 backward read, 4 record rewrite, 5 stride read, 6 fwrite, 7 fread, 8 random mix, 9 pwrite, 10 pread, 11 pwritev, 12 preadv"),
    ("-I", "O_DIRECT"),
    ("-j N", "stride, in records, of the stride read test"),
    ("-l N", "lower number of workers (with -u: a sweep over worker counts)"),
    ("-n SIZE", "smallest file size in automatic mode"),
    ("-o", "O_SYNC writes"),
    ("-O", "results in operations per second"),
    ("-q SIZE", "largest record size in automatic mode"),
    ("-r SIZE", "record size"),
    ("-R", "Excel-style report on standard output"),
    ("-s SIZE", "file size (per worker in throughput mode)"),
    ("-t N", "throughput mode with N workers"),
    ("-T", "workers are threads (storlab's always are)"),
    ("-u N", "upper number of workers (with -l)"),
    ("-w", "keep the files"),
    ("-x", "stonewalling off: report all-done rather than first-done throughput"),
    ("-y SIZE", "smallest record size in automatic mode"),
    ("-z", "automatic mode: small records for large files too"),
    ("-+p N", "percentage of reads in the random mix test (default 50)"),
    ("-+u", "CPU utilisation"),
];

/// An IOzone command line, parsed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IozoneArgs {
    /// Tests, in the order IOzone runs them (ascending).
    pub tests: Vec<u8>,
    /// -s (bytes).
    pub file_size: Option<u64>,
    /// -r (bytes).
    pub record: Option<u64>,
    /// -t.
    pub workers: Option<u32>,
    /// -F.
    pub files: Vec<PathBuf>,
    /// -f.
    pub file: Option<PathBuf>,
    /// -e.
    pub flush_timed: bool,
    /// -c.
    pub close_timed: bool,
    /// -o.
    pub osync: bool,
    /// -I.
    pub direct: bool,
    /// -w.
    pub keep: bool,
    /// -R.
    pub excel_report: bool,
    /// -b.
    pub workbook: Option<PathBuf>,
    /// -a.
    pub auto: bool,
    /// -z.
    pub small_records_too: bool,
    /// -n, -g (bytes).
    pub min_file: Option<u64>,
    /// -g.
    pub max_file: Option<u64>,
    /// -y (bytes).
    pub min_record: Option<u64>,
    /// -q.
    pub max_record: Option<u64>,
    /// -l.
    pub lower: Option<u32>,
    /// -u.
    pub upper: Option<u32>,
    /// -x turns it off.
    pub stonewall: bool,
    /// -O.
    pub ops: bool,
    /// -C.
    pub show_xfer: bool,
    /// -+u.
    pub cpu: bool,
    /// -T.
    pub threads_flag: bool,
    /// -j.
    pub stride: Option<u64>,
    /// -+p.
    pub read_percent: Option<u8>,
    /// -h.
    pub help: bool,
    /// The command line as given (IOzone prints it; the workbook's first row).
    pub command_line: String,
}

fn err(msg: impl Into<String>) -> WorkloadError {
    WorkloadError::invalid("the IOzone command line", msg.into())
}

/// An IOzone size: a number with k, m or g (powers of 1024); no suffix means kB.
pub fn parse_size(flag: &str, text: &str) -> Result<u64, WorkloadError> {
    let t = text.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 1 << 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 1 << 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1 << 10),
    };
    let n: u64 = num.parse().map_err(|_| {
        err(format!(
            "{flag} {text}: expected a size such as 64k, 512m, 16g (no suffix means kB)"
        ))
    })?;
    n.checked_mul(mult)
        .filter(|b| *b > 0)
        .ok_or_else(|| err(format!("{flag} {text}: expected a size above zero")))
}

fn parse_num<T: std::str::FromStr>(flag: &str, text: &str, what: &str) -> Result<T, WorkloadError> {
    text.parse().map_err(|_| err(format!("{flag} {text}: expected {what}")))
}

impl IozoneArgs {
    /// Parses IOzone's arguments (without the program name). A flag storlab does not support
    /// is an error that names it and lists the supported ones.
    pub fn parse(args: &[String]) -> Result<IozoneArgs, WorkloadError> {
        let mut a = IozoneArgs {
            stonewall: true,
            command_line: format!("iozone {}", args.join(" ")),
            ..IozoneArgs::default()
        };
        let mut i = 0;
        let mut tests = Vec::new();
        while i < args.len() {
            let arg = args[i].as_str();
            // IOzone allows flags bundled with their value (-s16g) and flags in one word (-Raz).
            let (flag, inline): (String, Option<String>) = if let Some(rest) = arg.strip_prefix("-+") {
                (
                    format!("-+{}", &rest[..rest.len().min(1)]),
                    Some(rest[rest.len().min(1)..].to_string()).filter(|s| !s.is_empty()),
                )
            } else if arg.starts_with('-') && arg.len() > 2 {
                let f = &arg[..2];
                if "sritFfbngyqlujb".contains(&f[1..]) {
                    (f.to_string(), Some(arg[2..].to_string()))
                } else {
                    // A bundle of switches: -Raz means -R -a -z.
                    let mut expanded: Vec<String> = arg[1..].chars().map(|c| format!("-{c}")).collect();
                    let rest = args[i + 1..].to_vec();
                    let before = args[..i].to_vec();
                    let mut all = before;
                    all.append(&mut expanded);
                    all.extend(rest);
                    let mut again = IozoneArgs::parse(&all)?;
                    again.command_line = a.command_line;
                    return Ok(again);
                }
            } else {
                (arg.to_string(), None)
            };
            let mut value = |name: &str| -> Result<String, WorkloadError> {
                if let Some(v) = inline.clone() {
                    return Ok(v);
                }
                i += 1;
                args.get(i).cloned().ok_or_else(|| err(format!("{name} needs a value")))
            };
            match flag.as_str() {
                "-s" => a.file_size = Some(parse_size("-s", &value("-s")?)?),
                "-r" => a.record = Some(parse_size("-r", &value("-r")?)?),
                "-i" => {
                    let t: u8 = parse_num("-i", &value("-i")?, "a test number 0 to 12")?;
                    if t > 12 {
                        return Err(err(format!("-i {t}: IOzone's tests are 0 to 12")));
                    }
                    tests.push(t);
                }
                "-t" => {
                    let n: u32 = parse_num("-t", &value("-t")?, "a number of workers")?;
                    if n == 0 {
                        return Err(err("-t 0: at least one worker"));
                    }
                    a.workers = Some(n);
                }
                "-F" => {
                    // As many names as workers; -t may come before or after.
                    if let Some(v) = inline.clone() {
                        a.files.push(PathBuf::from(v));
                    }
                    while i + 1 < args.len() && !args[i + 1].starts_with('-') {
                        i += 1;
                        a.files.push(PathBuf::from(&args[i]));
                    }
                    if a.files.is_empty() {
                        return Err(err("-F needs file names, one per worker"));
                    }
                }
                "-f" => a.file = Some(PathBuf::from(value("-f")?)),
                "-b" => a.workbook = Some(PathBuf::from(value("-b")?)),
                "-n" => a.min_file = Some(parse_size("-n", &value("-n")?)?),
                "-g" => a.max_file = Some(parse_size("-g", &value("-g")?)?),
                "-y" => a.min_record = Some(parse_size("-y", &value("-y")?)?),
                "-q" => a.max_record = Some(parse_size("-q", &value("-q")?)?),
                "-l" => a.lower = Some(parse_num("-l", &value("-l")?, "a number of workers")?),
                "-u" => a.upper = Some(parse_num("-u", &value("-u")?, "a number of workers")?),
                "-j" => a.stride = Some(parse_num("-j", &value("-j")?, "a stride in records")?),
                "-+p" => {
                    let p: u8 = parse_num("-+p", &value("-+p")?, "a percentage 0 to 100")?;
                    if p > 100 {
                        return Err(err(format!("-+p {p}: a percentage 0 to 100")));
                    }
                    a.read_percent = Some(p);
                }
                "-+u" => a.cpu = true,
                "-e" => a.flush_timed = true,
                "-c" => a.close_timed = true,
                "-o" => a.osync = true,
                "-I" => a.direct = true,
                "-w" => a.keep = true,
                "-R" => a.excel_report = true,
                "-a" => a.auto = true,
                "-z" => a.small_records_too = true,
                "-x" => a.stonewall = false,
                "-O" => a.ops = true,
                "-C" => a.show_xfer = true,
                "-T" => a.threads_flag = true,
                "-h" => a.help = true,
                other => {
                    let list: Vec<&str> = SUPPORTED
                        .iter()
                        .map(|(f, _)| f.split(' ').next().unwrap_or(f))
                        .collect();
                    return Err(err(format!(
                        "{other} is not an IOzone flag storlab supports; supported: {}",
                        list.join(" ")
                    )));
                }
            }
            i += 1;
        }
        tests.sort_unstable();
        tests.dedup();
        a.tests = tests;
        a.check()?;
        if a.auto && a.tests.is_empty() {
            // IOzone's automatic mode without -i runs every test it has but the mix (which
            // IOzone runs only in throughput mode), stride read at its default of 17 records.
            a.tests = vec![0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12];
            a.stride.get_or_insert(17);
        }
        Ok(a)
    }

    fn check(&self) -> Result<(), WorkloadError> {
        if self.help {
            return Ok(());
        }
        if self.tests.is_empty() && !self.auto {
            return Err(err(
                "no test given: add -i 0 (write/rewrite), -i 1 (read/reread), ... or -a",
            ));
        }
        if let (Some(s), Some(r)) = (self.file_size, self.record) {
            if s < r {
                return Err(err(format!(
                    "-s {} is smaller than -r {}: a file holds at least one record",
                    kb(s),
                    kb(r)
                )));
            }
        }
        if self.tests.contains(&5) && self.stride.is_none() {
            return Err(err("-i 5 (stride read) needs -j N, the stride in records"));
        }
        if let Some(t) = self.workers {
            if !self.files.is_empty() && (self.files.len() as u32) < t {
                return Err(err(format!(
                    "-F names {} file(s) but -t asks for {t} workers: name one file per worker",
                    self.files.len()
                )));
            }
        } else if !self.files.is_empty() {
            return Err(err("-F is for throughput mode: give -t N as well"));
        }
        if self.lower.is_some() != self.upper.is_some() {
            return Err(err("-l and -u go together: the lower and upper number of workers"));
        }
        if let (Some(l), Some(u)) = (self.lower, self.upper) {
            if l == 0 || l > u {
                return Err(err(format!("-l {l} -u {u}: expected 1 ≤ lower ≤ upper")));
            }
        }
        if self.direct {
            for (f, v) in [("-r", self.record), ("-s", self.file_size)] {
                if let Some(b) = v {
                    if b % 4096 != 0 {
                        return Err(err(format!("{f} {} with -I: O_DIRECT needs multiples of 4 kB", kb(b))));
                    }
                }
            }
        }
        Ok(())
    }

    /// The files, one per worker: -F's, else IOzone's defaults in `dir` (iozone.DUMMY.N in
    /// throughput mode, iozone.tmp otherwise, or -f's).
    pub fn worker_files(&self, workers: u32, dir: &std::path::Path) -> Vec<PathBuf> {
        if !self.files.is_empty() {
            return self.files.iter().take(workers as usize).cloned().collect();
        }
        if self.workers.is_some() {
            return (0..workers).map(|i| dir.join(format!("iozone.DUMMY.{i}"))).collect();
        }
        vec![self.file.clone().unwrap_or_else(|| dir.join("iozone.tmp"))]
    }

    /// The storlab job for one cell: `workers` workers, files of `file_size`, records of
    /// `record`. Phase names follow the tests (IOzone's order).
    pub fn job(&self, workers: u32, file_size: u64, record: u64, dir: &std::path::Path) -> Job {
        let mut s = Settings {
            threads: Some(workers),
            size: Some(file_size),
            bs: Some(BlockSizes::Fixed(record)),
            engine: Some(BackendKind::Psync),
            direct: Some(self.direct),
            sync: Some(self.osync),
            fsync: Some(if self.flush_timed {
                FsyncPolicy::End
            } else {
                FsyncPolicy::None
            }),
            fsync_timed: Some(self.flush_timed),
            close_timed: Some(self.close_timed),
            ..Settings::default()
        };
        if let Some(j) = self.stride {
            s.stride = Some(j);
        }
        s.rwmix = Some(self.read_percent.unwrap_or(50));
        let mut phases = Vec::new();
        for t in &self.tests {
            let own = match t {
                // fwrite/fread through stdio, buffered one record deep.
                6 | 7 => Settings {
                    engine: Some(BackendKind::Stdio),
                    ..Settings::default()
                },
                // pwritev/preadv: IOzone writes up to 16 records per call at a random offset.
                11 | 12 => {
                    let n = (file_size / record).clamp(1, 16) as u32;
                    Settings {
                        engine: Some(BackendKind::Pvsync),
                        iovecs: Some(n),
                        bs: Some(BlockSizes::Fixed(record * n as u64)),
                        ..Settings::default()
                    }
                }
                _ => Settings::default(),
            };
            for k in phases_of(*t) {
                phases.push((*k, own.clone()));
            }
        }
        Job {
            name: Some(format!(
                "iozone {}",
                self.tests
                    .iter()
                    .map(|t| format!("-i {t}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )),
            targets: self.worker_files(workers, dir),
            settings: s,
            phases,
            origin: "the IOzone command line".into(),
            tasks: Default::default(),
        }
    }
}

/// The storlab phases of an IOzone test.
pub fn phases_of(test: u8) -> &'static [PhaseKind] {
    use PhaseKind::*;
    match test {
        0 | 6 | 9 => &[Write, Rewrite],
        1 | 7 | 10 => &[Read, Reread],
        11 => &[Randwrite, Randwrite],
        12 => &[Randread, Randread],
        2 => &[Randread, Randwrite],
        3 => &[Backread],
        4 => &[Recrewrite],
        5 => &[Strideread],
        8 => &[Randrw],
        _ => &[],
    }
}

/// IOzone's names of a test's phases, as its reports print them.
pub fn labels_of(test: u8) -> &'static [&'static str] {
    match test {
        0 => &["Initial write", "Rewrite"],
        1 => &["Read", "Re-read"],
        2 => &["Random read", "Random write"],
        3 => &["Reverse Read"],
        4 => &["Record rewrite"],
        5 => &["Stride read"],
        6 => &["Fwrite", "Re-fwrite"],
        7 => &["Fread", "Re-fread"],
        8 => &["Mixed workload"],
        11 => &["Pwritev", "Re-pwritev"],
        12 => &["Preadv", "Re-preadv"],
        9 => &["Pwrite", "Re-pwrite"],
        10 => &["Pread", "Re-pread"],
        _ => &[],
    }
}

/// IOzone's name of a test.
pub fn test_name(t: u8) -> &'static str {
    [
        "write/rewrite",
        "read/reread",
        "random read/write",
        "backward read",
        "record rewrite",
        "stride read",
        "fwrite/frewrite",
        "fread/freread",
        "random mix",
        "pwrite/re-pwrite",
        "pread/re-pread",
        "pwritev/re-pwritev",
        "preadv/re-preadv",
    ]
    .get(t as usize)
    .copied()
    .unwrap_or("unknown")
}

fn kb(b: u64) -> String {
    if b.is_multiple_of(1024) {
        format!("{}k", b / 1024)
    } else {
        format!("{b} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<IozoneArgs, WorkloadError> {
        IozoneArgs::parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn the_seeds_command_lines_parse() {
        // RAL's verify study.
        let a = p("-s 16g -r 64k -i 0 -i 1 -R -b out.xls -t 3 -F /a /b /c").unwrap();
        assert_eq!(a.file_size, Some(16 << 30));
        assert_eq!(a.record, Some(64 << 10));
        assert_eq!(a.tests, vec![0, 1]);
        assert_eq!(a.workers, Some(3));
        assert_eq!(a.files.len(), 3);
        assert!(a.excel_report);
        assert_eq!(a.workbook, Some(PathBuf::from("out.xls")));
        // BNL's automatic mode, bundled switches.
        let a = p("-Raz -g 4G -e -b bnl.xls").unwrap();
        assert!(a.excel_report && a.auto && a.small_records_too && a.flush_timed);
        assert_eq!(a.max_file, Some(4 << 30));
        // Automatic mode without -i runs every test but the mix; stride read at 17 records.
        let a = p("-a").unwrap();
        assert_eq!(a.tests, vec![0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12]);
        assert_eq!(a.stride, Some(17));
        // No suffix means kB; bundled values.
        let a = p("-s1024 -r4 -i0").unwrap();
        assert_eq!((a.file_size, a.record), (Some(1 << 20), Some(4096)));
    }

    #[test]
    fn bad_lines_are_refused_by_name() {
        for (line, needle) in [
            ("-s 4k -r 64k -i 0", "-s 4k is smaller than -r 64k"),
            ("-s 1m -r 4k -i 0 -t 3 -F /a /b", "-F names 2 file(s) but -t asks for 3"),
            ("-s 1m -r 4k -i 5", "needs -j"),
            ("-s 1m -i 0 -Q", "-Q is not an IOzone flag storlab supports"),
            ("-s 1m -i 13", "0 to 12"),
            ("-s 1m", "no test given"),
            ("-s 1m -i 0 -l 4", "-l and -u go together"),
            ("-s 1x -i 0", "-s 1x"),
            ("-s 1m -r 6 -i 0 -I", "multiples of 4 kB"),
        ] {
            let e = p(line).unwrap_err().to_string();
            assert!(e.contains(needle), "{line}: {e}");
        }
    }

    #[test]
    fn tests_become_phases_in_iozone_order() {
        let a = p("-s 1m -r 4k -i 2 -i 0 -i 1 -t 2").unwrap();
        let j = a.job(2, 1 << 20, 4096, std::path::Path::new("/tmp"));
        let kinds: Vec<PhaseKind> = j.phases.iter().map(|(k, _)| *k).collect();
        use PhaseKind::*;
        assert_eq!(kinds, vec![Write, Rewrite, Read, Reread, Randread, Randwrite]);
        assert_eq!(
            j.targets,
            vec![
                PathBuf::from("/tmp/iozone.DUMMY.0"),
                PathBuf::from("/tmp/iozone.DUMMY.1")
            ]
        );
        assert_eq!(j.settings.fsync, Some(FsyncPolicy::None));
        // fwrite/fread through stdio; pwritev/preadv 16 records per call.
        let a = p("-s 4m -r 64k -i 6 -i 11").unwrap();
        let j = a.job(1, 4 << 20, 64 << 10, std::path::Path::new("/tmp"));
        assert_eq!(j.phases[0].1.engine, Some(BackendKind::Stdio));
        assert_eq!(j.phases[2].0, PhaseKind::Randwrite);
        assert_eq!(j.phases[2].1.engine, Some(BackendKind::Pvsync));
        assert_eq!(j.phases[2].1.iovecs, Some(16));
        assert_eq!(j.phases[2].1.bs, Some(BlockSizes::Fixed(16 * (64 << 10))));
    }
}
