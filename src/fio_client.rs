//! `storlab fio --client=HOST …`: fio's client (fio 3.33's protocol, crates/fionet). The job
//! files and the command line's options go to each server — fio's own or `storlab fio
//! --server` — which runs them and stores them where it runs; each server's report comes back
//! and is printed here as fio's client prints it: its log lines after `<host>`, each entry's
//! block (or `client_stats` entry, with its `hostname` and `port`), its groups' lines, and "All
//! clients", fio's sum of every server's entries. Nothing runs or is stored on this host.

use std::io::Write;
use std::path::Path;
use std::sync::mpsc;

use anyhow::{Context, Result};
use serde_json::{json, Value};
use storlab_fionet::address::Address;
use storlab_fionet::client::{Event, Job};
use storlab_fionet::stat::{GroupRunStats, ThreadStat};
use storlab_workload::fio::cli::{ClientRun, FioCommand, OutputFormat};

/// A server, as given and as it answered.
struct Host {
    /// Its host as given (fio's client->hostname), and its port.
    host: String,
    port: u16,
    /// The name it gave in its probe's answer (fio prints its log lines after it).
    name: String,
    /// Its global options and each entry's, as sent.
    global: Vec<(String, String)>,
    options: Vec<Vec<(String, String)>>,
    /// Its entries, as fio's JSON.
    entries: Vec<Value>,
    /// Its jobs' error, or why the connection failed.
    error: u32,
    failed: Option<String>,
    /// Whether its last log line ended without a newline.
    mid_line: bool,
}

/// fio's sum of its servers' entries and when it is printed: once the entries summed reach
/// the count the servers announced (fio's client.c `sum_stat_clients`).
struct AllClients {
    ts: ThreadStat,
    gs: GroupRunStats,
    announced: u32,
    summed: u32,
}

/// Sends the job to every server and prints their reports as fio's client does; fio's exit
/// code (1 where a server failed or its jobs did).
pub fn drive(c: &FioCommand, run: &ClientRun) -> Result<u8> {
    let servers = servers(run)?;
    let (tx, rx) = mpsc::channel();
    let mut hosts = Vec::with_capacity(servers.len());
    let mut threads = Vec::new();
    for (i, (spec, job)) in servers.into_iter().enumerate() {
        let addr = Address::parse(&spec).map_err(|e| crate::usage(format!("--client={e}")))?;
        hosts.push(Host {
            host: addr.host.clone().unwrap_or_default(),
            port: addr.port,
            name: addr.host.clone().unwrap_or_default(),
            global: Vec::new(),
            options: Vec::new(),
            entries: Vec::new(),
            error: 0,
            failed: None,
            mid_line: false,
        });
        let tx = tx.clone();
        threads.push(std::thread::spawn(move || {
            storlab_fionet::client::drive(&addr, &job, i, &tx)
        }));
    }
    drop(tx);
    let report = Report::new(c);
    let mut all = AllClients {
        ts: storlab_report::fio::all_clients().0,
        gs: storlab_report::fio::all_clients().1,
        announced: 0,
        summed: 0,
    };
    let mut doc_entries = Vec::new();
    let mut out = String::new();
    for (i, event) in rx {
        report.event(&mut hosts[i], event, &mut all, &mut doc_entries, &mut out);
    }
    for t in threads {
        let _ = t.join();
    }
    report.finish(c, &hosts, doc_entries, out)?;
    let failed = hosts.iter().any(|h| h.error != 0 || h.failed.is_some());
    Ok(u8::from(failed))
}

/// Each server with the job it runs: its own job files, else the command line's; a `--client`
/// that names a readable file is a list of servers (fio's host file), a job file each of the
/// command line's.
fn servers(run: &ClientRun) -> Result<Vec<(String, Job)>> {
    let read = |files: &[std::path::PathBuf]| -> Result<Vec<String>> {
        files
            .iter()
            .map(|f| std::fs::read_to_string(f).with_context(|| format!("job file <{}> open", f.display())))
            .collect()
    };
    let shared = read(&run.files)?;
    let mut out = Vec::new();
    for spec in &run.servers {
        // A server's own job files, local or on its side; else the command line's.
        let own = read(&spec.files)?;
        let files = if own.is_empty() && spec.remote.is_empty() {
            shared.clone()
        } else {
            own
        };
        let job = Job {
            line: run.line.clone(),
            files,
            remote: spec.remote.clone(),
        };
        let list = Path::new(&spec.host);
        if spec.files.is_empty() && spec.remote.is_empty() && list.is_file() {
            let text = std::fs::read_to_string(list).with_context(|| format!("client list file {}", spec.host))?;
            out.extend(text.split_whitespace().map(|h| (h.to_string(), job.clone())));
        } else {
            out.push((spec.host.clone(), job));
        }
    }
    Ok(out)
}

/// What the client writes, as the formats asked.
struct Report {
    normal: bool,
    terse: bool,
    json: bool,
    plus: bool,
    time: i64,
}

impl Report {
    fn new(c: &FioCommand) -> Report {
        let has = |f: OutputFormat| c.formats.contains(&f);
        Report {
            normal: has(OutputFormat::Normal),
            terse: has(OutputFormat::Terse),
            json: has(OutputFormat::Json) || has(OutputFormat::JsonPlus),
            plus: has(OutputFormat::JsonPlus),
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
        }
    }

    /// One thing a server said, into the text (`out`), the document's entries and the sum.
    fn event(&self, h: &mut Host, e: Event, all: &mut AllClients, entries: &mut Vec<Value>, out: &mut String) {
        match e {
            Event::Probe(p) => {
                if self.normal {
                    out.push_str(&format!(
                        "hostname={}, be={}, {}-bit, os=Linux, arch=x86-64, fio={}, flags={:x}\n",
                        p.hostname,
                        p.bigendian,
                        u32::from(p.bpp) * 8,
                        p.fio_version,
                        p.flags
                    ));
                }
                h.name = p.hostname;
            }
            Event::Text(t) => {
                if !h.mid_line {
                    out.push_str(&format!("<{}> ", h.name));
                }
                out.push_str(&t.text);
                h.mid_line = !t.text.contains('\n');
            }
            Event::Start { entries: n, .. } => all.announced += n,
            Event::Option(o) if o.global => h.global.push((o.name, o.value)),
            Event::Option(o) => {
                let at = o.index as usize;
                if h.options.len() <= at {
                    h.options.resize_with(at + 1, Vec::new);
                }
                h.options[at].push((o.name, o.value));
            }
            Event::Stats(ts, gs) => self.entry(h, &ts, &gs, all, entries, out),
            Event::Group(gs) => {
                if self.normal {
                    let group: Vec<&Value> = h
                        .entries
                        .iter()
                        .filter(|j| j["groupid"].as_u64() == Some(u64::from(gs.groupid)))
                        .collect();
                    out.push_str(&storlab_report::fio::group_block(u64::from(gs.groupid), &group));
                }
            }
            Event::Log(log) => {
                // fio's client writes each log as NAME.HOST, where it runs.
                let path = format!("{}.{}", log.name, h.host);
                if let Err(e) = std::fs::write(&path, log.file()) {
                    out.push_str(&format!("fio: fopen log {path} : {e}\n"));
                }
            }
            Event::Stop { error, .. } => {
                h.error = error;
                if error != 0 {
                    out.push_str(&format!("client <{}>: exited with error {error}\n", h.host));
                }
            }
            Event::Gone(why) => {
                if let Some(why) = &why {
                    out.push_str(&format!("client: host={} disconnected: {why}\n", h.host));
                }
                h.failed = why;
            }
        }
        if (self.normal || self.terse) && !self.json {
            print!("{out}");
            let _ = std::io::stdout().flush();
            out.clear();
        }
    }

    /// A server's entry: its block, its place in the document, and fio's sum of them all.
    fn entry(
        &self,
        h: &mut Host,
        ts: &ThreadStat,
        gs: &GroupRunStats,
        all: &mut AllClients,
        entries: &mut Vec<Value>,
        out: &mut String,
    ) {
        let index = ts.thread_number.saturating_sub(1) as usize;
        let options = h.options.get(index).cloned().unwrap_or_default();
        let mut j = storlab_report::fio::job_json(ts, gs, &options, self.plus);
        if self.terse {
            let asked: Vec<f64> = ts.percentile_list.iter().copied().take_while(|p| *p != 0.0).collect();
            out.push_str(&storlab_report::fio::terse_line(&j, &asked, &json!([])));
        }
        if self.normal {
            out.push_str(&storlab_report::fio::entry_block(
                &j,
                u64::from(ts.members),
                ts.pid,
                self.time,
            ));
        }
        j["hostname"] = json!(h.host);
        j["port"] = json!(h.port);
        h.entries.push(j.clone());
        entries.push(j);
        if all.announced <= 1 {
            return;
        }
        storlab_report::fio::sum_into(&mut all.ts, ts);
        storlab_report::fio::sum_group_into(&mut all.gs, gs);
        all.ts.members += 1;
        all.ts.thread_number = ts.thread_number;
        all.ts.groupid = ts.groupid;
        all.summed += 1;
        if all.summed == all.announced {
            let mut sum = storlab_report::fio::job_json(&all.ts, &all.gs, &[], self.plus);
            if self.terse {
                // fio's sum asks no percentiles: its line's percentile fields are fio's zeros.
                out.push_str(&storlab_report::fio::terse_line(&sum, &[], &json!([])));
            }
            if self.normal {
                out.push_str(&storlab_report::fio::entry_block(
                    &sum,
                    u64::from(all.ts.members),
                    0,
                    self.time,
                ));
            }
            sum["hostname"] = json!(h.host);
            sum["port"] = json!(h.port);
            entries.push(sum);
        }
    }

    /// The text left, and fio's client document (its `client_stats`), to stdout or --output.
    fn finish(&self, c: &FioCommand, hosts: &[Host], entries: Vec<Value>, mut out: String) -> Result<()> {
        if self.json {
            let global: serde_json::Map<String, Value> = hosts
                .first()
                .map(|h| h.global.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
                .unwrap_or_default();
            let doc = json!({
                "fio version": storlab_workload::fio::FIO_VERSION,
                "timestamp": self.time,
                "time": storlab_report::fio::ctime(self.time),
                "global options": global,
                "client_stats": entries,
                "disk_util": [],
            });
            out.push_str(&(serde_json::to_string_pretty(&doc)? + "\n"));
        }
        match &c.output {
            Some(path) => storlab_report::export::write_whole(path, |w| Ok(w.write_all(out.as_bytes())?))?,
            None => print!("{out}"),
        }
        Ok(())
    }
}
