//! `storlab fio …`: fio's command line as fio takes it (fio's init.c `parse_cmd_line`): job
//! options as `--name=JOB --rw=randread --bs=4k …` (options before the first `--name` are
//! global, to the command line's jobs and to the job files'), job files as arguments, and
//! fio's own flags — `--output-format=normal|json|json+|terse` (a comma list), `--output=FILE`,
//! `--minimal`, `--parse-only`, `--showcmd`, `--section=NAME`, `--warnings-fatal`,
//! `--readonly`, `--eta=never|always|auto`, `--version`, `--help`. storlab's own: `--db`,
//! `--tag KEY=VALUE`, `--keep`, `--allow-device DEV`, `--ignore-unknown`, `--storlab-notes`, `-q`.

use std::path::{Path, PathBuf};

use storlab_model::run::{parse_tag, Tag};

use super::text::{read_command_line, read_file, Keywords, Section};
use super::{build, FioJob, Source};
use crate::WorkloadError;

/// `storlab fio --help`: the flags this command line takes, as [`FioCommand::parse`] reads them.
pub const HELP: &str = "storlab fio: fio's command line on storlab's engine.
  storlab fio [fio's options] [JOB.fio ...]
    --name=JOB --rw=… --bs=… …   a job, as fio takes it (options before the first --name are global)
    JOB.fio                      job files, read as fio reads them
    --output-format=normal|json|json+|terse|storlab   fio's text, JSON or terse line, or storlab's own table (a comma list for several)
    --minimal                    fio's terse line (version 3)
    --output=FILE                write the output to FILE instead of stdout
    --parse-only                 print the job as storlab reads it (a storlab job file) and run nothing
    --showcmd                    print each job file as a fio command line
    --section=NAME               run only this section of the job files (repeatable)
    --warnings-fatal             refuse a job with any note on how storlab takes it
    --readonly                   refuse a job that writes
    --eta=never                  no status line
    --status-interval=T          the run so far every T (seconds, or 500ms, 1m), in the formats asked
    --cmdhelp[=OPTION]           every fio option (or one) and what storlab does with it
    --enghelp[=ENGINE]           the I/O engines storlab runs
    --server[=[ip:|ip6:]HOST[,PORT]]  serve fio's clients (fio 3.33's protocol; no authentication: bind where only they reach)
    --daemonize=PIDFILE          with --server: serve in the background, the pid in PIDFILE
    --client=HOST[,PORT]|FILE [JOB.fio ...]  fio's client: the job to fio's servers (fio's or storlab's), their reports printed here
  storlab's own: --db FILE|URL, --tag KEY=VALUE, --keep, --ignore-unknown, --storlab-notes
    (how storlab took the job, on stderr; it is always in the stored run and --parse-only), -q
  docs/run.md (\"fio's command line\") says what each fio option does on storlab.";

/// `storlab fio --help` whole: [`HELP`], then fio's options storlab takes, from their one
/// table (options.rs): those it honours, those it accepts with a note, those it refuses.
pub fn help() -> String {
    use super::options::{Does, OPTIONS};
    let list = |title: &str, keep: &dyn Fn(&Does) -> bool| {
        let names: Vec<&str> = OPTIONS.iter().filter(|o| keep(&o.does)).map(|o| o.name).collect();
        let mut text = format!("\n{title} ({}):\n", names.len());
        let mut line = String::from("   ");
        for n in names {
            if line.len() + n.len() + 1 > 96 {
                text += &line;
                text.push('\n');
                line = String::from("   ");
            }
            line.push(' ');
            line += n;
        }
        text + &line + "\n"
    };
    HELP.to_string()
        + &list("fio's options storlab honours, with fio's effect on the I/O", &|d| {
            matches!(d, Does::Honour)
        })
        + &list(
            "accepted with a note (they change nothing storlab measures; --storlab-notes says each)",
            &|d| matches!(d, Does::Note(_)),
        )
        + &list(
            "refused, each naming why (running without it would measure something else)",
            &|d| matches!(d, Does::Refuse(_)),
        )
}

/// A format `--output-format` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// fio's human-readable text (its default).
    Normal,
    /// storlab's own table of the run (`--output-format=storlab`).
    Storlab,
    /// fio's JSON document.
    Json,
    /// fio's JSON with every latency bin (json+).
    JsonPlus,
    /// fio's terse line, version 3.
    Terse,
}

/// `storlab fio`'s command line, read.
#[derive(Debug)]
pub struct FioCommand {
    /// The job, when there is one to run (not for --version, --help).
    pub job: Option<FioJob>,
    /// Each phase's fio job name.
    pub job_names: Vec<String>,
    /// The formats, in the order given.
    pub formats: Vec<OutputFormat>,
    /// `--output`.
    pub output: Option<PathBuf>,
    /// `--parse-only`.
    pub parse_only: bool,
    /// `--showcmd`: the command line each job file amounts to.
    pub showcmd: Vec<String>,
    /// `--warnings-fatal`.
    pub warnings_fatal: bool,
    /// `--eta=never` (or `-q`): no status line.
    pub quiet: bool,
    /// `--version`.
    pub version: bool,
    /// `--help`.
    pub help: bool,
    /// `--cmdhelp[=OPTION]` or `--enghelp[=ENGINE]`: the answer (askhelp.rs), or what fio says
    /// of a name it does not know.
    pub asked_help: Option<Result<String, String>>,
    /// The percentiles the job asks for (`percentile_list`), when it does.
    pub percentiles: Option<Vec<f64>>,
    /// storlab's own `--db`.
    pub db: Option<String>,
    /// storlab's own `--tag`.
    pub tags: Vec<Tag>,
    /// storlab's own `--keep`.
    pub keep: bool,
    /// storlab's own `--allow-device DEV` (repeatable): block devices the jobs may use.
    pub allow_devices: Vec<PathBuf>,
    /// storlab's own `--storlab-notes`: say on stderr how storlab took the job (otherwise only
    /// in the stored run and `--parse-only`, so that stderr stays as fio's).
    pub notes: bool,
    /// The command line, for the run's record.
    pub command_line: String,
    /// `--server[=ARGS]`: serve fio's clients (fio's client/server protocol) on ARGS's address
    /// (empty: fio's default, every address, port 8765).
    pub server: Option<String>,
    /// `--status-interval=T`: fio's report of the run so far every T.
    pub status_interval: Option<std::time::Duration>,
    /// `--daemonize=PIDFILE` with `--server`: serve in the background, its pid in PIDFILE.
    pub daemonize: Option<PathBuf>,
    /// `--client=HOST …`: the job is sent to fio's servers (fio's or storlab's) and their
    /// reports printed here; nothing runs or is stored on this host.
    pub client: Option<ClientRun>,
}

/// A server `--client` names (fio's `[ip:|ip6:]HOST[,PORT]`, or a file of them), with the job
/// files given right after it, which only it runs.
#[derive(Debug, Clone)]
pub struct ClientSpec {
    /// As given.
    pub host: String,
    /// Its own job files.
    pub files: Vec<PathBuf>,
    /// Job files on the server's side, which the server reads (fio's `--remote-config`).
    pub remote: Vec<String>,
}

/// What fio's client sends its servers: the servers, the command line's options (fio's client
/// sends them as its command line; each server reads them), and the job files every server
/// without files of its own runs.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// The servers, in order.
    pub servers: Vec<ClientSpec>,
    /// The options sent as the command line, `fio` first.
    pub line: Vec<String>,
    /// The job files for every server without its own.
    pub files: Vec<PathBuf>,
}

fn usage(msg: impl Into<String>) -> WorkloadError {
    WorkloadError::invalid("storlab fio", msg)
}

/// fio's `--showcmd` of a job file: its options as one command line.
fn showcmd(sections: &[Section]) -> String {
    let mut out = String::from("fio");
    for s in sections {
        if s.name != "global" {
            out += &format!(" --name={}", s.name);
        }
        for o in &s.opts {
            match &o.value {
                Some(v) => out += &format!(" --{}={v}", o.key),
                None => out += &format!(" --{}", o.key),
            }
        }
    }
    out
}

/// storlab's own flags on `storlab fio`'s command line (the rest is fio's).
#[derive(Default)]
struct StorlabFlags {
    db: Option<String>,
    tags: Vec<Tag>,
    allow_devices: Vec<PathBuf>,
    keep: bool,
    ignore_unknown: bool,
    quiet: bool,
    notes: bool,
    server: Option<String>,
    daemonize: Option<PathBuf>,
    clients: Vec<ClientSpec>,
}

impl StorlabFlags {
    /// storlab's own flags taken out of `args`; fio's arguments, in order.
    fn split(args: &[String]) -> Result<(StorlabFlags, Vec<String>), WorkloadError> {
        let mut own = StorlabFlags::default();
        let mut fio_args = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            i += 1;
            let mut value = |flag: &str| -> Result<String, WorkloadError> {
                if let Some(v) = a.strip_prefix(&format!("{flag}=")) {
                    return Ok(v.to_string());
                }
                i += 1;
                args.get(i - 1)
                    .cloned()
                    .ok_or_else(|| usage(format!("{flag} needs a value")))
            };
            let mode = a.split('=').next().unwrap_or(a);
            if mode == "--server" {
                // fio's server: `--server` alone listens where fio's does, `--server=ARGS` where
                // ARGS say (fio's `[ip:|ip6:]HOST[,PORT]` or `:PORT`).
                own.server = Some(a.strip_prefix("--server=").unwrap_or("").to_string());
                continue;
            }
            if mode == "--daemonize" {
                own.daemonize = Some(PathBuf::from(value("--daemonize")?));
                continue;
            }
            if mode == "--client" {
                // fio's client: the server, then the job files given right after it, its own —
                // unless it names a file of servers (fio reads those and takes no job files
                // for them).
                let host = value("--client")?;
                let list = std::fs::File::open(&host).is_ok_and(|f| f.metadata().is_ok_and(|m| m.is_file()));
                let mut files = Vec::new();
                while let Some(f) = args.get(i).filter(|a| !list && !a.starts_with('-')) {
                    files.push(PathBuf::from(f));
                    i += 1;
                }
                own.clients.push(ClientSpec {
                    host,
                    files,
                    remote: Vec::new(),
                });
                continue;
            }
            if mode == "--remote-config" {
                // fio's: a job file the last server named reads from its own filesystem.
                let path = value("--remote-config")?;
                let Some(last) = own.clients.last_mut() else {
                    return Err(usage(
                        "--remote-config names a job file on a server's side: give --client=HOST before it",
                    ));
                };
                last.remote.push(path);
                continue;
            }
            match a {
                x if x == "--db" || x.starts_with("--db=") => own.db = Some(value("--db")?),
                x if x == "--tag" || x.starts_with("--tag=") => own
                    .tags
                    .push(parse_tag(&value("--tag")?).map_err(|e| usage(format!("--tag: {e}")))?),
                x if x == "--allow-device" || x.starts_with("--allow-device=") => {
                    own.allow_devices.push(PathBuf::from(value("--allow-device")?))
                }
                "--keep" => own.keep = true,
                "--ignore-unknown" => own.ignore_unknown = true,
                "--storlab-notes" => own.notes = true,
                "-q" | "--quiet" => own.quiet = true,
                _ => fio_args.push(a.to_string()),
            }
        }
        Ok((own, fio_args))
    }
}

/// What fio's own flags (`--output-format`, `--section`, …) ask besides the command's fields.
#[derive(Default)]
struct Asked {
    /// `--section`: the sections to run.
    only: Vec<String>,
    showcmd: bool,
    readonly: bool,
}

/// One of fio's own flags, with its value (empty when bare), read into the command.
fn fio_flag(c: &mut FioCommand, asked: &mut Asked, flag: &str, v: String) -> Result<(), WorkloadError> {
    match flag {
        "output-format" => {
            for f in v.split(',') {
                c.formats.push(match f.trim() {
                    "normal" => OutputFormat::Normal,
                    "json" => OutputFormat::Json,
                    "json+" => OutputFormat::JsonPlus,
                    "terse" => OutputFormat::Terse,
                    "storlab" => OutputFormat::Storlab,
                    other => {
                        return Err(usage(format!(
                            "--output-format={other}: fio's formats are normal, json, json+ and terse (and storlab's own table, storlab)"
                        )))
                    }
                });
            }
        }
        "minimal" => c.formats.push(OutputFormat::Terse),
        "output" => c.output = Some(PathBuf::from(v)),
        "parse-only" => c.parse_only = true,
        "showcmd" => asked.showcmd = true,
        "section" => asked.only.push(v),
        "warnings-fatal" => c.warnings_fatal = true,
        "eta" => match v.as_str() {
            "never" => c.quiet = true,
            "always" | "auto" => {}
            _ => return Err(usage(format!("--eta={v}: fio's are never, always and auto"))),
        },
        "eta-newline" | "eta-interval" => {}
        "status-interval" => c.status_interval = Some(status_interval(&v)?),
        "terse-version" if v == "3" => {}
        "terse-version" => return Err(usage(format!("--terse-version={v}: storlab writes fio's terse version 3"))),
        "version" => c.version = true,
        "help" => c.help = true,
        "cmdhelp" => c.asked_help = Some(super::askhelp::cmdhelp(&v)),
        "enghelp" => c.asked_help = Some(super::askhelp::enghelp(&v)),
        "readonly" => asked.readonly = true,
        other => {
            return Err(usage(format!(
                "--{other}: fio's {other} is not one storlab takes (it takes --output-format, --output, --minimal, --parse-only, --showcmd, --section, --warnings-fatal, --readonly, --eta, --terse-version=3, --version, --help, --cmdhelp, --enghelp)"
            )))
        }
    }
    Ok(())
}

impl FioCommand {
    /// Reads `storlab fio`'s arguments (after `fio`): storlab's own flags, fio's own flags,
    /// then the job — the command line's sections, each job file's after the command line's
    /// globals (fio reads the files with the command line's options as their defaults).
    pub fn parse(args: &[String]) -> Result<FioCommand, WorkloadError> {
        let (own, fio_args) = StorlabFlags::split(args)?;
        let mut c = FioCommand {
            job: None,
            job_names: Vec::new(),
            formats: Vec::new(),
            output: None,
            parse_only: false,
            showcmd: Vec::new(),
            warnings_fatal: false,
            quiet: own.quiet,
            version: false,
            help: false,
            asked_help: None,
            percentiles: None,
            db: own.db,
            tags: own.tags,
            keep: own.keep,
            allow_devices: own.allow_devices,
            notes: own.notes,
            command_line: format!("fio {}", fio_args.join(" ")),
            server: own.server,
            daemonize: own.daemonize,
            client: None,
            status_interval: None,
        };
        if c.daemonize.is_some() && c.server.is_none() {
            return Err(usage(
                "--daemonize=PIDFILE runs fio's server in the background: give it with --server",
            ));
        }
        if !own.clients.is_empty() {
            return client_run(c, own.clients, &fio_args);
        }
        let kw = Keywords::here();
        let mut unset = Vec::new();
        let cl = read_command_line(&fio_args, &kw, &mut unset)?;
        let mut asked = Asked::default();
        for (flag, v) in &cl.flags {
            fio_flag(&mut c, &mut asked, flag, v.clone().unwrap_or_default())?;
        }
        if c.formats.is_empty() {
            c.formats.push(OutputFormat::Normal);
        }
        if c.version || c.help || c.asked_help.is_some() || c.server.is_some() {
            return Ok(c);
        }
        let global = cl.sections[0].clone();
        let mut sections = cl.sections.clone();
        for f in &cl.files {
            let path = Path::new(f);
            let text = super::text::read_job_text(path).map_err(|e| WorkloadError::Read {
                path: f.clone(),
                source: e,
            })?;
            let mut file_sections = Vec::new();
            read_file(&text, path, 0, &kw, &mut unset, &mut file_sections)?;
            if asked.showcmd {
                c.showcmd.push(showcmd(&file_sections));
            }
            sections.push(global.clone());
            sections.extend(file_sections);
        }
        if asked.showcmd {
            return Ok(c);
        }
        c.percentiles = percentiles(&sections)?;
        let source = source_of(&cl.files, &sections, &c.command_line);
        let job = build(sections, &source, unset, own.ignore_unknown, &asked.only)?;
        if asked.readonly {
            if let Some((k, _)) = job.job.phases.iter().find(|(k, _)| k.writes()) {
                return Err(usage(format!(
                    "--readonly: the job writes (a {} phase); leave out --readonly or the writing job",
                    k.name()
                )));
            }
        }
        if c.warnings_fatal && !job.notes.is_empty() {
            return Err(usage(format!(
                "--warnings-fatal: {} (and {} more)",
                job.notes[0],
                job.notes.len() - 1
            )));
        }
        c.job_names = job.phase_names.clone();
        c.job = Some(job);
        Ok(c)
    }
}

/// fio's `--status-interval=T`: seconds unless a unit is given (`500ms`, `2s`, `1m`), as fio's
/// check_str_time reads it.
fn status_interval(v: &str) -> Result<std::time::Duration, WorkloadError> {
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(digits);
    let n: u64 = n.parse().map_err(|_| {
        usage(format!(
            "--status-interval={v}: expected a time, like 1 (seconds) or 500ms"
        ))
    })?;
    let ms = match unit {
        "" | "s" => n * 1000,
        "ms" | "msec" => n,
        "m" | "min" => n * 60_000,
        _ => return Err(usage(format!("--status-interval={v}: the units are ms, s and m"))),
    };
    if ms == 0 {
        return Err(usage(format!("--status-interval={v}: expected a time above 0")));
    }
    Ok(std::time::Duration::from_millis(ms))
}

/// fio's client's command line: the output flags read here (fio's client writes the report),
/// every other option sent to the servers as fio's client sends it, the job files apart.
fn client_run(mut c: FioCommand, servers: Vec<ClientSpec>, fio_args: &[String]) -> Result<FioCommand, WorkloadError> {
    let mut asked = Asked::default();
    let mut line = vec!["fio".to_string()];
    let mut files = Vec::new();
    for a in fio_args {
        let Some(opt) = a.strip_prefix("--") else {
            files.push(PathBuf::from(a));
            continue;
        };
        let (flag, v) = opt.split_once('=').unwrap_or((opt, ""));
        match flag {
            // fio's client sends its output format too: a server writes nothing of its own then.
            "output-format" | "minimal" => {
                fio_flag(&mut c, &mut asked, flag, v.to_string())?;
                line.push(a.clone());
            }
            "output" | "eta" | "eta-newline" | "eta-interval" | "status-interval" => {
                fio_flag(&mut c, &mut asked, flag, v.to_string())?
            }
            _ => line.push(a.clone()),
        }
    }
    if c.formats.is_empty() {
        c.formats.push(OutputFormat::Normal);
    }
    if files.is_empty() && servers.iter().any(|s| s.files.is_empty() && s.remote.is_empty()) && line.len() == 1 {
        return Err(usage(
            "--client: no job to send: give a job file (after --client for that server only) or --name",
        ));
    }
    c.client = Some(ClientRun { servers, line, files });
    Ok(c)
}

/// The percentiles the job asks for (the last `percentile_list` given).
fn percentiles(sections: &[Section]) -> Result<Option<Vec<f64>>, WorkloadError> {
    let Some(p) = sections
        .iter()
        .flat_map(|s| s.opts.iter())
        .rev()
        .find(|o| o.key == "percentile_list")
    else {
        return Ok(None);
    };
    let v = p.value.clone().unwrap_or_default();
    super::value::float_list(&v)
        .map(Some)
        .map_err(|e| WorkloadError::invalid(p.at.to_string(), format!("percentile_list={v}: {e}")))
}

/// Where the job came from: named after its first file, else its first job.
fn source_of(files: &[String], sections: &[Section], command_line: &str) -> Source {
    let name = files
        .first()
        .and_then(|f| Path::new(f).file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .or_else(|| sections.iter().find(|s| s.name != "global").map(|s| s.name.clone()))
        .unwrap_or_else(|| "fio".into());
    Source {
        name,
        origin: format!("fio command line: {command_line}"),
        shown: if files.is_empty() {
            "fio's command line".into()
        } else {
            format!("fio's command line and {}", files.join(", "))
        },
    }
}
