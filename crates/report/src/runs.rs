//! The tables of stored runs, built once: the summary a person reads (the terminal after `storlab
//! run` and `storlab results show`, and the HTML report), the targets the run ran on, and the
//! data tables every export holds (phases, interval samples, environment; an MPI run's ranks).

use storlab_model::result::{Figure, PhaseResult};
use storlab_model::run::{parse_tag, Phase, PhaseParams, Run, RunDetail, RunEventKind, RunKind, Tag};
use storlab_units::{latency, thousands, Size};

use crate::compare::bs_text;
use crate::svg::esc;
use crate::table::{Cell, Table};

const MIB: f64 = 1024.0 * 1024.0;

/// A phase's block sizes as a user writes them, or "" when unknown.
pub fn block_sizes(p: &Phase) -> String {
    p.block_sizes().map(|b| bs_text(&b)).unwrap_or_default()
}

/// What a phase's row notes: the page cache's possible flattery, the rate kept, verification.
fn notes(p: &Phase) -> String {
    let mut notes = Vec::new();
    if p.plan().is_some_and(|pl| pl.together) {
        notes.push(format!("with phase {}", p.seq));
    }
    if p.cache_flattered {
        notes.push("cache?".to_string());
    }
    if p.result.interrupted {
        notes.push("interrupted".into());
    }
    if let Some(rate) = &p.result.rate {
        let (t, a) = match rate.unit {
            storlab_model::result::RateUnit::Iops => {
                (format!("{:.0} IOPS", rate.target), format!("{:.0}", rate.achieved))
            }
            storlab_model::result::RateUnit::BytesPerSec => (
                format!("{:.2} MiB/s", rate.target / MIB),
                format!("{:.2}", rate.achieved / MIB),
            ),
        };
        notes.push(format!("rate {a} of {t}, {} late", rate.late_ios));
    }
    if let Some(l) = &p.result.latency_search {
        let depths = {
            let (lo, hi) = (
                l.depths.iter().min().copied().unwrap_or(0),
                l.depths.iter().max().copied().unwrap_or(0),
            );
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}–{hi}")
            }
        };
        notes.push(format!(
            "latency target {} at p{}: depth {depths}, {:.2} % within{}",
            latency(l.target_ns as f64),
            l.percentile,
            l.within_percent,
            if l.met { "" } else { " (NOT MET)" }
        ));
    }
    if let Some(e) = &p.result.errors {
        notes.push(format!(
            "{} I/O ERRORS gone past ({})",
            thousands(e.count),
            std::io::Error::from_raw_os_error(e.first_errno)
        ));
    }
    match p.bad_blocks() {
        Some(0) => notes.push("verified".into()),
        Some(b) => notes.push(format!("{b} BAD BLOCKS")),
        None => {}
    }
    if let PhaseParams::Meta(m) = &p.params {
        notes.push(format!("{} entries", thousands(m.entries)));
        if m.errors > 0 {
            notes.push(format!("{} ERRORS", thousands(m.errors)));
        }
    }
    notes.join("; ")
}

/// One row per phase, the figures a person reads first: throughput, first done, the workers'
/// spread, latency percentiles, CPU and notes.
pub fn summary(run: &RunDetail) -> Table {
    let mut t = Table::new(
        "phases",
        &[
            "phase",
            "bs",
            "MiB/s",
            "IOPS",
            "first done MiB/s",
            "worker min–max MiB/s",
            "lat p50",
            "p99",
            "p99.9",
            "max",
            "CPU usr/sys",
            "bound",
            "notes",
        ],
    );
    for p in &run.phases {
        let r = &p.result;
        let when = |f: Figure, c: Cell| if_measured(r, f, c);
        let lat = |ns: u64| when(Figure::Latency, latency(ns as f64).into());
        t.push(vec![
            format!("{} {}", p.seq + 1, p.kind).into(),
            block_sizes(p).into(),
            when(Figure::Throughput, Cell::fixed(r.all_done.bytes_per_sec / MIB, 2)),
            when(Figure::Iops, Cell::fixed(r.all_done.iops, 0)),
            when(Figure::FirstDone, Cell::fixed(r.first_done.bytes_per_sec / MIB, 2)),
            when(
                Figure::WorkerSpread,
                format!(
                    "{:.2}–{:.2}",
                    r.worker_min_bytes_per_sec / MIB,
                    r.worker_max_bytes_per_sec / MIB
                )
                .into(),
            ),
            lat(r.latency.p50_ns),
            lat(r.latency.p99_ns),
            lat(r.latency.p99_9_ns),
            lat(r.latency.max_ns),
            when(Figure::Cpu, format!("{:.2}/{:.2} s", r.cpu_user, r.cpu_sys).into()),
            crate::bound::of_phase(run, p).kind.name().into(),
            notes(p).into(),
        ]);
    }
    t
}

/// The storage under each target.
pub fn targets(run: &RunDetail) -> Table {
    let mut t = Table::new(
        "targets",
        &[
            "target",
            "filesystem",
            "mount options",
            "device",
            "model",
            "RAID layout",
            "scheduler",
        ],
    );
    for x in &run.environment.targets {
        t.push(vec![
            x.path.as_str().into(),
            x.fs_type.as_str().into(),
            x.mount_options.as_str().into(),
            x.device.clone().into(),
            x.model.clone().into(),
            x.raid.clone().into(),
            x.scheduler.clone().into(),
        ]);
    }
    t
}

/// "4 MPI ranks on 2 hosts, rank 0's job: " before the job's line of a run many ranks ran (rank
/// 0's targets and workers are what the run's own rows show; each rank's are in its part).
fn ranks_prefix(run: &RunDetail) -> String {
    if run.ranks.is_empty() {
        return String::new();
    }
    let hosts: std::collections::BTreeSet<&str> = run.ranks.iter().map(|r| r.host.as_str()).collect();
    format!(
        "{} MPI ranks on {} host{}, rank 0's job: ",
        run.ranks.len(),
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" }
    )
}

/// Which runs `results list` shows: its flags, declared here once (the binary flattens them).
#[derive(clap::Args, Debug, Default)]
pub struct ListFilter {
    /// Only runs on this host.
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs whose job name contains this.
    #[arg(long)]
    pub job: Option<String>,
    /// Only runs with this tag (repeatable: all must match).
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    /// Only runs of this kind: run, demo, iozone, sweep, scan, import, impact-idle, ...
    #[arg(long, value_parser = |s: &str| s.parse::<RunKind>())]
    pub kind: Option<RunKind>,
    /// Only runs started on or after this: a date (2026-11-21, its midnight UTC) or a time in
    /// UTC (2026-11-21T08:00:00, a Z allowed).
    #[arg(long, value_name = "DATE", value_parser = |s: &str| storlab_store::normalize_time(s))]
    pub since: Option<String>,
    /// Only runs started before this (a date or a UTC time, as --since).
    #[arg(long, value_name = "DATE", value_parser = |s: &str| storlab_store::normalize_time(s))]
    pub until: Option<String>,
}

impl ListFilter {
    /// The store's filter of these flags, at most `limit` runs.
    pub fn runs(self, limit: usize) -> storlab_store::RunFilter {
        storlab_store::RunFilter {
            ids: Vec::new(),
            host: self.host,
            kind: self.kind,
            job: self.job,
            since: self.since,
            until: self.until,
            tags: self.tags,
            limit: Some(limit),
        }
    }
}

/// A challenge's run for the terminal: the figures are the challenge's, not a phase's, so this
/// says where they are.
fn render_challenge_run(run: &RunDetail) -> String {
    let r = &run.run;
    let cid = r
        .job_name
        .as_deref()
        .and_then(|j| j.strip_prefix("challenge-"))
        .unwrap_or("ID");
    format!(
        "run {} · challenge · this host's share of challenge {cid} · status {} · host {} · started {}\n\
         its files and figures: storlab challenge show {cid} · storlab challenge stats {cid}\n",
        r.id, r.status, r.host, r.started_at
    )
}

/// A run for the terminal: a heading, the targets, the workload in a line, the summary, and
/// what went wrong (cache flattery, bad blocks named, an interruption, a failure).
pub fn render(run: &RunDetail) -> String {
    if run.run.kind == storlab_model::run::RunKind::Challenge {
        return render_challenge_run(run);
    }
    let r = &run.run;
    let mut s = format!(
        "run {} · {} · job {} · status {} · host {} · started {}\n",
        r.id,
        r.kind,
        r.job_name.as_deref().unwrap_or("-"),
        r.status,
        r.host,
        r.started_at
    );
    if let Some(d) = &r.status_detail {
        s += &format!("  {d}\n");
    }
    if !run.environment.targets.is_empty() {
        s += &targets(run).to_text();
    }
    s += &workload_line(run);
    s += "\n";
    s += &summary(run).to_text();
    s += &crate::bound::lines(run);
    // A run of many MPI ranks: each rank's part, and the hosts they ran on.
    for t in [crate::team::ranks_table(run), crate::team::hosts_table(run)]
        .into_iter()
        .flatten()
    {
        s += "\n";
        s += &t.to_text();
    }
    s += &metadata_errors(run);
    s += &cache_note(run);
    s += &verification(run);
    for e in run
        .events
        .iter()
        .filter(|e| matches!(e.kind, RunEventKind::Interrupted | RunEventKind::PhaseFailed))
    {
        s += &format!("\n{}: {}\n", e.kind, e.detail);
    }
    s
}

/// The workload in a line: where an import came from, or the workers, file set, engine and
/// depth of a job, or a metadata workload's shape.
fn workload_line(run: &RunDetail) -> String {
    let mut s = String::new();
    if run.run.imported {
        s += &format!(
            "imported: {}\n",
            run.environment.source.as_deref().unwrap_or("from another tool")
        );
    } else if let Some(plan) = run.phases.first().and_then(Phase::plan) {
        s += &format!(
            "{}{} worker(s) · file set {} · engine {} · iodepth {} · {}{}\n",
            ranks_prefix(run),
            plan.workers.len(),
            Size(plan.workers.iter().map(|w| w.total_len()).sum()).human(),
            plan.settings.engine.name(),
            plan.settings.iodepth,
            if plan.settings.direct { "O_DIRECT" } else { "buffered" },
            match run.environment.memory_bytes {
                0 => String::new(),
                m => format!(" · RAM {}", Size(m).human()),
            },
        );
    }
    match run.phases.first().map(|p| (&p.params, p.kind.as_str())) {
        Some((PhaseParams::Meta(m), "walk")) => {
            s += &format!(
                "a walk of every entry with {} threads (storlab scan's walker)\n",
                m.workers
            );
        }
        Some((PhaseParams::Meta(m), _)) => {
            s += &format!(
                "{}{} worker(s) · {} items each · tree {},{} ({} directories{}) · files of {}{}\n",
                ranks_prefix(run),
                m.workers,
                thousands(m.items_per_worker),
                m.tree.depth,
                m.tree.branch,
                m.tree.directories().unwrap_or(0),
                if m.shared_dir { ", shared" } else { " per worker" },
                Size(m.file_size).human(),
                if m.sync { " · fsync" } else { "" },
            );
        }
        _ => {}
    }
    s
}

/// Each metadata phase's errors, the first ones named.
fn metadata_errors(run: &RunDetail) -> String {
    let mut s = String::new();
    for p in &run.phases {
        let PhaseParams::Meta(m) = &p.params else { continue };
        if m.errors > 0 {
            s += &format!(
                "\nphase {} ({}): {} error(s), the first:\n",
                p.seq + 1,
                p.kind,
                m.errors
            );
            for e in &m.first_errors {
                s += &format!("  {e}\n");
            }
        }
    }
    s
}

/// The phases the page cache may have flattered, said.
fn cache_note(run: &RunDetail) -> String {
    let flattered: Vec<String> = run
        .phases
        .iter()
        .filter(|p| p.cache_flattered)
        .map(|p| p.kind.to_string())
        .collect();
    if flattered.is_empty() {
        return String::new();
    }
    format!(
        "\ncache?: the file set is smaller than 3 × RAM and {} ran without O_DIRECT (or, for writes, without a flush): the page cache may have flattered these figures.\n",
        flattered.join(", ")
    )
}

/// Each phase's verification: blocks another run wrote (not corruption), and bad blocks, the
/// first 20 named.
fn verification(run: &RunDetail) -> String {
    let mut s = String::new();
    for p in &run.phases {
        let Some(v) = p.result.verify.as_ref() else { continue };
        if v.foreign_blocks > 0 {
            let seeds: Vec<String> = v
                .foreign
                .iter()
                .map(|f| format!("seed 0x{:016x}: {} block(s)", f.seed, f.blocks))
                .collect();
            s += &format!(
                "\nphase {} ({}): {} intact block(s) of {} checked were written by another run ({}); not corruption. To verify that run's data, give its seed (--seed 0x{:016x}) or --verify-against RUN.\n",
                p.seq + 1,
                p.kind,
                v.foreign_blocks,
                v.blocks_checked,
                seeds.join(", "),
                v.foreign.first().map_or(0, |f| f.seed)
            );
        }
        if v.bad_blocks == 0 {
            continue;
        }
        s += &format!(
            "\nphase {} ({}): {} bad block(s) of {} checked:\n",
            p.seq + 1,
            p.kind,
            v.bad_blocks,
            v.blocks_checked
        );
        for b in v.bad.iter().take(20) {
            s += &format!("  {} offset {}: {}\n", b.file, b.offset, b.reason);
        }
        if v.bad_blocks > 20 {
            s += &format!(
                "  ... and {} more (all listed in --json, up to 1000 per worker)\n",
                v.bad_blocks - 20
            );
        }
    }
    s
}

/// The tables `results export` writes of runs `ids`: the runs' tables and, for scans, each
/// scan's rows (the phases' table left out when no run has a phase). A run that is not there is
/// refused, nothing exported.
pub fn export_tables(
    store: &storlab_store::Store,
    ids: &[i64],
    samples: bool,
) -> Result<Vec<Table>, storlab_store::StoreError> {
    let mut runs = Vec::new();
    let mut scans: Vec<Table> = Vec::new();
    for id in ids {
        let run = store
            .run(*id, samples)?
            .ok_or_else(|| storlab_store::StoreError::Request(format!("{}: nothing was exported", store.no_run(id))))?;
        if let Some(report) = store.scan(*id)? {
            scans.push(crate::scan::data_table(&report, &format!("scan {id}")));
        }
        runs.push(run);
    }
    let mut all = data_tables(&runs);
    if !scans.is_empty() {
        all.retain(|t| t.name != "phases" || !t.rows.is_empty());
        all.extend(scans);
    }
    Ok(all)
}

/// The phases table's columns: one row per phase.
const PHASE_COLUMNS: &[&str] = &[
    "run",
    "host",
    "job",
    "seq",
    "phase",
    "engine",
    "block size (bytes)",
    "workers",
    "iodepth",
    "direct",
    "bytes read",
    "bytes written",
    "seconds",
    "MiB/s",
    "IOPS",
    "first done MiB/s",
    "worker min MiB/s",
    "worker max MiB/s",
    "lat min (µs)",
    "lat mean (µs)",
    "lat p50 (µs)",
    "lat p90 (µs)",
    "lat p99 (µs)",
    "lat p99.9 (µs)",
    "lat p99.99 (µs)",
    "lat max (µs)",
    "CPU user (s)",
    "CPU sys (s)",
    "cache may flatter",
    "interrupted",
    "bad blocks",
    "bound",
];

/// The samples table's columns: one row per interval.
const SAMPLE_COLUMNS: &[&str] = &[
    "run",
    "seq",
    "phase",
    "interval",
    "t start (s)",
    "t end (s)",
    "length (s)",
    "partial",
    "ramp",
    "bytes read",
    "bytes written",
    "reads",
    "writes",
    "MiB/s",
    "IOPS",
    "lat p50 (µs)",
    "lat p90 (µs)",
    "lat p99 (µs)",
    "lat p99.9 (µs)",
    "lat max (µs)",
    "late I/Os",
];

/// The environment table's columns: one row per target.
const ENVIRONMENT_COLUMNS: &[&str] = &[
    "run",
    "host",
    "kernel",
    "CPU",
    "CPUs",
    "memory (bytes)",
    "target",
    "filesystem",
    "mount options",
    "device",
    "model",
    "RAID",
];

/// The data tables of stored runs: phases (one row per phase), samples (one row per interval,
/// when the runs were read with samples), and environment (one row per target).
pub fn data_tables(runs: &[RunDetail]) -> Vec<Table> {
    let mut phases = Table::new("phases", PHASE_COLUMNS);
    let mut samples = Table::new("samples", SAMPLE_COLUMNS);
    let mut env = Table::new("environment", ENVIRONMENT_COLUMNS);
    for r in runs {
        for p in &r.phases {
            phases.push(phase_row(r, p));
            sample_rows(&mut samples, r, p);
        }
        environment_rows(&mut env, r);
    }
    let mut out = vec![phases];
    if !samples.rows.is_empty() {
        out.push(samples);
    }
    out.push(env);
    out.extend(crate::team::ranks_data(runs));
    out
}

/// Nanoseconds as a cell in µs.
fn us(ns: f64) -> Cell {
    Cell::from(ns / 1e3)
}

/// One phase's row of the phases table. A figure the source did not record is an empty cell
/// (null in JSON), never 0.
fn phase_row(r: &RunDetail, p: &Phase) -> Vec<Cell> {
    let x = &p.result;
    let plan = p.plan();
    let bs = match p.block_sizes() {
        Some(storlab_model::plan::BlockSizes::Fixed(b)) => Cell::from(b),
        Some(mix) => bs_text(&mix).into(),
        None => Cell::Empty,
    };
    let m = |f: Figure, c: Cell| if x.measured(f) { c } else { Cell::Empty };
    vec![
        r.run.id.into(),
        r.run.host.as_str().into(),
        r.run.job_name.clone().unwrap_or_default().into(),
        (p.seq + 1).into(),
        p.kind.to_string().into(),
        match &p.params {
            PhaseParams::Plan(plan) => plan.settings.engine.name().into(),
            PhaseParams::Imported(i) => i.tool.as_str().into(),
            PhaseParams::Meta(_) => "meta".into(),
        },
        bs,
        p.workers().into(),
        plan.map(|p| p.settings.iodepth).into(),
        plan.map(|p| p.settings.direct).into(),
        m(Figure::Throughput, x.bytes_read.into()),
        m(Figure::Throughput, x.bytes_written.into()),
        m(Figure::Seconds, x.all_done.seconds.into()),
        m(Figure::Throughput, (x.all_done.bytes_per_sec / MIB).into()),
        m(Figure::Iops, x.all_done.iops.into()),
        m(Figure::FirstDone, (x.first_done.bytes_per_sec / MIB).into()),
        m(Figure::WorkerSpread, (x.worker_min_bytes_per_sec / MIB).into()),
        m(Figure::WorkerSpread, (x.worker_max_bytes_per_sec / MIB).into()),
        m(Figure::Latency, us(x.latency.min_ns as f64)),
        m(Figure::Latency, us(x.latency.mean_ns)),
        m(Figure::Latency, us(x.latency.p50_ns as f64)),
        m(Figure::Latency, us(x.latency.p90_ns as f64)),
        m(Figure::Latency, us(x.latency.p99_ns as f64)),
        m(Figure::Latency, us(x.latency.p99_9_ns as f64)),
        m(Figure::Latency, us(x.latency.p99_99_ns as f64)),
        m(Figure::Latency, us(x.latency.max_ns as f64)),
        m(Figure::Cpu, x.cpu_user.into()),
        m(Figure::Cpu, x.cpu_sys.into()),
        p.cache_flattered.into(),
        x.interrupted.into(),
        p.bad_blocks().into(),
        crate::bound::of_phase(r, p).kind.name().into(),
    ]
}

/// A phase's rows of the samples table: one per interval.
fn sample_rows(samples: &mut Table, r: &RunDetail, p: &Phase) {
    let nominal = storlab_model::result::nominal_interval(&p.result.samples).unwrap_or(0.0);
    for s in &p.result.samples {
        let dt = (s.t_end - s.t_start).max(1e-9);
        samples.push(vec![
            r.run.id.into(),
            (p.seq + 1).into(),
            p.kind.to_string().into(),
            s.index.into(),
            s.t_start.into(),
            s.t_end.into(),
            s.seconds().into(),
            s.is_partial(nominal).into(),
            s.ramp.into(),
            s.bytes_read.into(),
            s.bytes_written.into(),
            s.ops_read.into(),
            s.ops_written.into(),
            ((s.bytes_read + s.bytes_written) as f64 / dt / MIB).into(),
            ((s.ops_read + s.ops_written) as f64 / dt).into(),
            us(s.lat_p50_ns as f64),
            us(s.lat_p90_ns as f64),
            us(s.lat_p99_ns as f64),
            us(s.lat_p99_9_ns as f64),
            us(s.lat_max_ns as f64),
            s.late_ios.into(),
        ]);
    }
}

/// A run's rows of the environment table: one per target (one without targets when it has
/// none).
fn environment_rows(env: &mut Table, r: &RunDetail) {
    let e = &r.environment;
    let base: Vec<Cell> = vec![
        r.run.id.into(),
        e.host.as_str().into(),
        e.kernel.as_str().into(),
        e.cpu_model.as_str().into(),
        if e.cpus > 0 { e.cpus.into() } else { Cell::Empty },
        if e.memory_bytes > 0 {
            e.memory_bytes.into()
        } else {
            Cell::Empty
        },
    ];
    if e.targets.is_empty() {
        let mut row = base.clone();
        row.extend(std::iter::repeat_n(Cell::Empty, 6));
        env.push(row);
    }
    for t in &e.targets {
        let mut row = base.clone();
        row.extend([
            t.path.as_str().into(),
            t.fs_type.as_str().into(),
            t.mount_options.as_str().into(),
            t.device.clone().into(),
            t.model.clone().into(),
            t.raid.clone().into(),
        ]);
        env.push(row);
    }
}

/// `storlab results studies`: a study a line.
pub fn study_list_table(studies: &[storlab_model::study::StudySummary]) -> Table {
    let mut t = Table::new("studies", &["id", "stored (UTC)", "kind", "runs", "command"]);
    for s in studies {
        t.push(vec![
            s.id.into(),
            s.created_at.as_str().into(),
            s.kind.as_str().into(),
            s.runs.into(),
            s.command.clone().unwrap_or_default().into(),
        ]);
    }
    t
}

/// Runs as `results list` shows them, newest first.
pub fn list_table(runs: &[Run]) -> Table {
    let mut t = Table::new(
        "runs",
        &["id", "started (UTC)", "host", "kind", "job", "phases", "status", "tags"],
    );
    for r in runs {
        t.push(vec![
            r.id.into(),
            r.started_at.as_str().into(),
            r.host.as_str().into(),
            r.kind.name().into(),
            r.job_name.clone().unwrap_or_default().into(),
            r.phase_count.into(),
            format!("{}{}", r.status, if r.cache_flattered { " (cache?)" } else { "" }).into(),
            r.tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
                .into(),
        ]);
    }
    t
}

/// `cell`, or "—" when the phase's source did not measure `figure` (an import of a tool that
/// reports none, a walk): never a 0 that was not measured.
pub(crate) fn if_measured(r: &PhaseResult, figure: Figure, cell: Cell) -> Cell {
    if r.measured(figure) {
        cell
    } else {
        "—".into()
    }
}

/// Imported runs, one row each with its first phase's figures (what `results import` prints).
pub fn imported_table(runs: &[RunDetail]) -> Table {
    let mut t = Table::new("imported", &["run", "host", "job", "rw", "MiB/s", "IOPS", "lat p99"]);
    for r in runs {
        let Some(p) = r.phases.first() else { continue };
        let x = &p.result;
        t.push(vec![
            r.run.id.into(),
            r.run.host.as_str().into(),
            r.run.job_name.clone().unwrap_or_default().into(),
            p.kind.to_string().into(),
            if_measured(x, Figure::Throughput, Cell::fixed(x.all_done.bytes_per_sec / MIB, 2)),
            if_measured(x, Figure::Iops, Cell::fixed(x.all_done.iops, 0)),
            if_measured(
                x,
                Figure::Latency,
                format!("{:.1} µs", x.latency.p99_ns as f64 / 1e3).into(),
            ),
        ]);
    }
    t
}

/// A run's machine and the storage under its targets.
pub(crate) fn env_html(run: &RunDetail) -> String {
    let e = &run.environment;
    let mut s = format!(
        "<p class=\"meta\">host <b>{}</b> · kernel {} · {} · {} CPUs · {:.1} GiB RAM{}</p>",
        esc(&run.run.host),
        esc(&e.kernel),
        esc(&e.cpu_model),
        e.cpus,
        e.memory_bytes as f64 / (1u64 << 30) as f64,
        e.source
            .as_deref()
            .map(|x| format!(" · {}", esc(x)))
            .unwrap_or_default()
    );
    if !e.targets.is_empty() {
        s += &targets(run).to_html();
    }
    s
}
