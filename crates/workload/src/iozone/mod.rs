//! IOzone's command line, read with IOzone's meanings and turned into storlab jobs.
//!
//! IOzone's tests (`-i`): 0 write/rewrite, 1 read/reread, 2 random read/write, 3 backward read,
//! 4 record rewrite, 5 stride read (`-j`), 6 fwrite/frewrite, 7 fread/freread, 8 random mix
//! (`-+p`), 9 pwrite/re-pwrite, 10 pread/re-pread, 11 pwritev/re-pwritev, 12 preadv/re-preadv.
//! Sizes without a suffix are kB, as in IOzone (`-s 16g`, `-r 64k`, `-s 1024` = 1 MiB).

use std::path::PathBuf;

use storlab_model::plan::{BackendKind, BlockSizes, FsyncPolicy};
use storlab_model::study::{IozoneParams, Role, StudyParams};

use crate::settings::Settings;
use crate::{Job, WorkloadError};

mod cells;
mod tests_table;

pub use cells::IozoneCell;
pub use tests_table::{phase_named, test, IozonePhase, IozoneTest, TESTS};

/// IOzone's command line as clap reads it, with IOzone's spellings: one-letter flags, switches
/// bundled (`-Raz`), values attached or apart (`-s16g`, `-s 16g`). IOzone's `-+p` and `-+u`
/// are read as `--plus-p` and `--plus-u` (clap has no `-+`); storlab's own options are long.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "storlab iozone",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true
)]
pub struct IozoneFlags {
    /// automatic mode: file sizes 64 kB to 512 MB × record sizes 4 kB to 16 MB
    #[arg(short = 'a')]
    auto: bool,
    /// write an Excel workbook (XLSX) of the results
    #[arg(short = 'b', value_name = "FILE")]
    workbook: Option<PathBuf>,
    /// include close() in the timing
    #[arg(short = 'c')]
    close_timed: bool,
    /// show the bytes each worker moved
    #[arg(short = 'C')]
    show_xfer: bool,
    /// include flush (fsync) in the timing
    #[arg(short = 'e')]
    flush_timed: bool,
    /// the file to test (single-worker mode; default iozone.tmp)
    #[arg(short = 'f', value_name = "FILE")]
    file: Option<PathBuf>,
    /// one file per worker (throughput mode; as many as -t)
    #[arg(short = 'F', value_name = "FILE", num_args = 1..)]
    files: Vec<PathBuf>,
    /// largest file size in automatic mode
    #[arg(short = 'g', value_name = "SIZE")]
    max_file: Option<String>,
    /// this help
    #[arg(short = 'h')]
    help: bool,
    /// a test to run (repeatable): 0 write/rewrite, 1 read/reread, 2 random read/write, 3 backward read, 4 record rewrite, 5 stride read, 6 fwrite, 7 fread, 8 random mix, 9 pwrite, 10 pread, 11 pwritev, 12 preadv
    #[arg(short = 'i', value_name = "N")]
    tests: Vec<String>,
    /// O_DIRECT
    #[arg(short = 'I')]
    direct: bool,
    /// stride, in records, of the stride read test
    #[arg(short = 'j', value_name = "N")]
    stride: Option<String>,
    /// lower number of workers (with -u: a sweep over worker counts)
    #[arg(short = 'l', value_name = "N")]
    lower: Option<String>,
    /// smallest file size in automatic mode
    #[arg(short = 'n', value_name = "SIZE")]
    min_file: Option<String>,
    /// O_SYNC writes
    #[arg(short = 'o')]
    osync: bool,
    /// results in operations per second
    #[arg(short = 'O')]
    ops: bool,
    /// largest record size in automatic mode
    #[arg(short = 'q', value_name = "SIZE")]
    max_record: Option<String>,
    /// record size
    #[arg(short = 'r', value_name = "SIZE")]
    record: Option<String>,
    /// Excel-style report on standard output
    #[arg(short = 'R')]
    excel_report: bool,
    /// file size (per worker in throughput mode)
    #[arg(short = 's', value_name = "SIZE")]
    file_size: Option<String>,
    /// throughput mode with N workers
    #[arg(short = 't', value_name = "N")]
    workers: Option<String>,
    /// workers are threads (storlab's always are)
    #[arg(short = 'T')]
    threads_flag: bool,
    /// upper number of workers (with -l)
    #[arg(short = 'u', value_name = "N")]
    upper: Option<String>,
    /// keep the files
    #[arg(short = 'w')]
    keep: bool,
    /// stonewalling off: report all-done rather than first-done throughput
    #[arg(short = 'x')]
    no_stonewall: bool,
    /// smallest record size in automatic mode
    #[arg(short = 'y', value_name = "SIZE")]
    min_record: Option<String>,
    /// automatic mode: small records for large files too
    #[arg(short = 'z')]
    small_records_too: bool,
    /// percentage of reads in the random mix test (default 50)
    #[arg(long = "plus-p", value_name = "N")]
    read_percent: Option<String>,
    /// CPU utilisation
    #[arg(long = "plus-u")]
    cpu: bool,
    /// storlab's own: the results database (a file or a postgres:// URL)
    #[arg(long = "db", value_name = "FILE|URL")]
    db: Option<String>,
    /// storlab's own: where IOzone's default files go
    #[arg(long = "dir", value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// storlab's own: a tag stored with the runs (KEY=VALUE), repeatable
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = storlab_model::run::parse_tag)]
    tags: Vec<storlab_model::run::Tag>,
    /// storlab's own: one JSON document on stdout
    #[arg(long = "json")]
    json: bool,
    /// storlab's own: no status line on stderr
    #[arg(long = "quiet")]
    quiet: bool,
}

/// IOzone's spelling of a flag clap reads: `-s`, `-+p`, `--db`.
fn iozone_spelling(a: &clap::Arg) -> String {
    match (a.get_short(), a.get_long()) {
        (Some(c), _) => format!("-{c}"),
        (None, Some(l)) => match l.strip_prefix("plus-") {
            Some(x) => format!("-+{x}"),
            None => format!("--{l}"),
        },
        _ => a.get_id().to_string(),
    }
}

/// The flags, as `iozone -h` lists them (from their one definition above): (flag with its
/// value's name, what it does).
pub fn flag_help() -> Vec<(String, String)> {
    use clap::CommandFactory;
    IozoneFlags::command()
        .get_arguments()
        .map(|a| {
            let value = a
                .get_value_names()
                .map(|v| format!(" {}", v.join(" ")))
                .unwrap_or_default();
            let many = if a.get_id() == "files" { " ..." } else { "" };
            (
                format!("{}{value}{many}", iozone_spelling(a)),
                a.get_help().map(|h| h.to_string()).unwrap_or_default(),
            )
        })
        .collect()
}

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
    /// storlab's own --db.
    pub db: Option<String>,
    /// storlab's own --dir: where IOzone's default files go.
    pub dir: PathBuf,
    /// storlab's own --tag.
    pub tags: Vec<storlab_model::run::Tag>,
    /// storlab's own --json.
    pub json: bool,
    /// storlab's own --quiet: no status line.
    pub quiet: bool,
}

fn err(msg: impl Into<String>) -> WorkloadError {
    WorkloadError::invalid("the IOzone command line", msg.into())
}

/// The IOzone part of the command line (IOzone prints it as "Command line used"): without
/// storlab's own long options and their values.
fn iozone_part(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
            continue;
        }
        match a.as_str() {
            "--db" | "--dir" | "--tag" => skip = true,
            "--json" | "--quiet" => {}
            x if x.starts_with("--db=") || x.starts_with("--dir=") || x.starts_with("--tag=") => {}
            _ => out.push(a.clone()),
        }
    }
    out
}

/// clap's refusal in IOzone's terms: an unknown flag is named with the supported ones.
fn clap_error(e: clap::Error) -> WorkloadError {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let invalid = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    let spelt = invalid
        .strip_prefix("--plus-")
        .map(|x| format!("-+{x}"))
        .unwrap_or(invalid.clone());
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let list: Vec<String> = flag_help()
                .into_iter()
                .map(|(f, _)| f.split(' ').next().unwrap_or("").to_string())
                .collect();
            err(format!(
                "{spelt} is not an IOzone flag storlab supports; supported: {}",
                list.join(" ")
            ))
        }
        ErrorKind::InvalidValue | ErrorKind::TooFewValues | ErrorKind::NoEquals => err(format!(
            "{} needs a value",
            spelt.split([' ', '=']).next().unwrap_or(&spelt)
        )),
        _ => err(e
            .to_string()
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string()),
    }
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

/// IOzone's arguments with its `-+x` flags spelt `--plus-x`, as clap (which has no `-+`)
/// reads them.
fn plus_spelt(args: &[String]) -> Vec<String> {
    args.iter()
        .map(|a| match a.strip_prefix("-+") {
            Some(rest) if !rest.is_empty() => {
                let (flag, value) = rest.split_at(1);
                if value.is_empty() {
                    format!("--plus-{flag}")
                } else {
                    format!("--plus-{flag}={value}")
                }
            }
            _ => a.clone(),
        })
        .collect()
}

/// The tests of `-i`, each IOzone's, in IOzone's order, once each.
fn tests_of(given: &[String]) -> Result<Vec<u8>, WorkloadError> {
    let mut tests = given
        .iter()
        .map(|t| {
            let n: u8 = parse_num("-i", t, "a test number 0 to 12")?;
            if test(n).is_none() {
                return Err(err(format!("-i {n}: IOzone's tests are 0 to 12")));
            }
            Ok(n)
        })
        .collect::<Result<Vec<u8>, _>>()?;
    tests.sort_unstable();
    tests.dedup();
    Ok(tests)
}

impl IozoneArgs {
    /// Parses IOzone's arguments (without the program name) through clap ([`IozoneFlags`]). A
    /// flag storlab does not support is an error that names it and lists the supported ones.
    pub fn parse(args: &[String]) -> Result<IozoneArgs, WorkloadError> {
        use clap::Parser;
        let f = IozoneFlags::try_parse_from(plus_spelt(args)).map_err(clap_error)?;
        let size = |flag: &str, v: &Option<String>| v.as_deref().map(|t| parse_size(flag, t)).transpose();
        let tests = tests_of(&f.tests)?;
        let workers = match f.workers.as_deref() {
            Some(t) => match parse_num::<u32>("-t", t, "a number of workers")? {
                0 => return Err(err("-t 0: at least one worker")),
                n => Some(n),
            },
            None => None,
        };
        let read_percent = match f.read_percent.as_deref() {
            Some(p) => match parse_num::<u8>("-+p", p, "a percentage 0 to 100")? {
                p if p > 100 => return Err(err(format!("-+p {p}: a percentage 0 to 100"))),
                p => Some(p),
            },
            None => None,
        };
        let mut a = IozoneArgs {
            tests,
            file_size: size("-s", &f.file_size)?,
            record: size("-r", &f.record)?,
            workers,
            files: f.files,
            file: f.file,
            flush_timed: f.flush_timed,
            close_timed: f.close_timed,
            osync: f.osync,
            direct: f.direct,
            keep: f.keep,
            excel_report: f.excel_report,
            workbook: f.workbook,
            auto: f.auto,
            small_records_too: f.small_records_too,
            min_file: size("-n", &f.min_file)?,
            max_file: size("-g", &f.max_file)?,
            min_record: size("-y", &f.min_record)?,
            max_record: size("-q", &f.max_record)?,
            lower: f
                .lower
                .as_deref()
                .map(|v| parse_num("-l", v, "a number of workers"))
                .transpose()?,
            upper: f
                .upper
                .as_deref()
                .map(|v| parse_num("-u", v, "a number of workers"))
                .transpose()?,
            stonewall: !f.no_stonewall,
            ops: f.ops,
            show_xfer: f.show_xfer,
            cpu: f.cpu,
            threads_flag: f.threads_flag,
            stride: f
                .stride
                .as_deref()
                .map(|v| parse_num("-j", v, "a stride in records"))
                .transpose()?,
            read_percent,
            help: f.help,
            command_line: format!("iozone {}", iozone_part(args).join(" ")),
            db: f.db,
            dir: f.dir,
            tags: f.tags,
            json: f.json,
            quiet: f.quiet,
        };
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
            for p in test(*t).map(|t| t.phases).unwrap_or_default() {
                phases.push((p.kind, own.clone()));
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
            notes: Vec::new(),
            streams: Vec::new(),
            tasks: Default::default(),
            // IOzone creates its files (-f, -F) as it goes.
            create_target: true,
            fio_device_rules: false,
            allow_mounted_write: false,
        }
    }
}

/// A size as IOzone writes it in kB (or bytes when it is not a whole number of kB).
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
    use storlab_model::plan::PhaseKind;

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
    fn automatic_mode_has_iozones_matrix() {
        let c = p("-a -i 0").unwrap().cells();
        // Files 64 kB..512 MB (14 sizes), records 4 kB..16 MB, record ≤ file, and from 32 MB
        // files on, records of 64 kB and more.
        assert!(c.iter().all(|c| c.record <= c.file));
        assert!(!c.iter().any(|c| c.file >= 32 << 20 && c.record < 64 << 10));
        assert_eq!(c.iter().filter(|c| c.file == 64 << 10).count(), 5);
        assert_eq!(c.iter().filter(|c| c.file == 512 << 20).count(), 9);
        let z = p("-a -z -i 0").unwrap().cells();
        assert_eq!(z.iter().filter(|c| c.file == 512 << 20).count(), 13);
        let g = p("-a -i 0 -n 1m -g 4m -y 64k -q 1m").unwrap().cells();
        assert_eq!(g.len(), 3 * 5, "files 1m, 2m, 4m × records 64k to 1m");
        let w = p("-i 0 -l 1 -u 4 -s 1m").unwrap().cells();
        assert_eq!(w.iter().map(|c| c.workers).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn the_cache_rule_names_the_fix() {
        let a = p("-a -i 0").unwrap();
        let n = a.cache_rule(&a.cells(), 24 << 30).unwrap();
        assert!(n.contains("three times") && n.contains("-g 72g"), "{n}");
        let d = p("-a -i 0 -I").unwrap();
        assert!(d.cache_rule(&d.cells(), 24 << 30).is_none());
    }

    #[test]
    fn every_name_iozone_prints_is_in_one_table() {
        assert_eq!(phase_named("initial writers").unwrap().label, "Initial write");
        assert_eq!(phase_named("Backward read").unwrap().kind, PhaseKind::Backread);
        assert_eq!(phase_named("Re-Preadv").unwrap().who, "re-preadv readers");
        assert!(phase_named("scribblers").is_none());
        let help = flag_help();
        assert!(help.iter().any(|(f, _)| f == "-+p N"), "{help:?}");
        assert!(help.iter().any(|(f, _)| f == "-F FILE ..."), "{help:?}");
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
