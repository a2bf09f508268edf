//! `storlab scan`: options from flags, the walk (crates/scan), the database, and the report as
//! a table, JSON or CSV. `storlab results show` of a scan run prints through here too.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{Context, Result};
use storlab_scan::{age_label, GroupBy, Report, Row, ScanOptions, Stats, TimeBasis, AGE_LABELS, SIZE_LABELS};
use storlab_store::{NewRun, ScanRowRecord, Store};
use storlab_units::{Duration, Size};

use crate::cli::{OutputArgs, ScanArgs};
use crate::exit;
use crate::output::{csv, table};
use crate::runner::db_path;

/// Bad scan options: reported like a refused job (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScanUsage(pub String);

fn options(args: &ScanArgs) -> Result<ScanOptions, ScanUsage> {
    let mut ages = Vec::new();
    for part in args.age.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let d: Duration = part.parse().map_err(|e| ScanUsage(format!("--age {part}: {e}")))?;
        let secs = d.0 / 1_000_000_000;
        if secs == 0 || !d.0.is_multiple_of(1_000_000_000) {
            return Err(ScanUsage(format!(
                "--age {part}: a threshold is a whole number of seconds, at least 1s (e.g. 60d, 36h)"
            )));
        }
        ages.push(secs);
    }
    ages.sort_unstable();
    ages.dedup();
    let group_by = GroupBy::parse(&args.group_by).map_err(|e| ScanUsage(format!("--group-by: {e}")))?;
    let time = TimeBasis::from_name(&args.time)
        .ok_or_else(|| ScanUsage(format!("--time {}: expected atime, mtime or max", args.time)))?;
    let threads = match args.threads {
        Some(0) => return Err(ScanUsage("--threads 0: at least 1".into())),
        Some(n) => n,
        // Twice the CPUs: with a warm cache the walk is CPU work, and with a cold one the
        // extra threads keep the device busy with several directory reads at once.
        None => std::thread::available_parallelism().map(|n| n.get() * 2).unwrap_or(4),
    };
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    Ok(ScanOptions {
        roots: args.paths.clone(),
        ages,
        group_by,
        time,
        cross_mounts: args.cross_mounts,
        threads,
        top: args.top,
        now_ns,
    })
}

pub fn scan(args: ScanArgs) -> Result<u8> {
    let opts = options(&args)?;
    if std::io::stderr().is_terminal() && !args.output.json && !args.output.csv {
        eprintln!("scanning {} ...", list_paths(&opts.roots));
    }
    let mut report = storlab_scan::scan(&opts).map_err(|e| ScanUsage(e.to_string()))?;

    let env = storlab_env::capture(&opts.roots);
    let db = db_path(&args.output);
    let mut store = Store::open(&db, &env.host)?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let run_id = store.begin_run(&NewRun {
        kind: "scan".into(),
        host: env.host.clone(),
        job_name: Some(format!("scan {}", list_paths(&opts.roots))),
        job: serde_json::to_value(&opts)?,
        command,
        tags: args.tags.clone(),
    })?;
    store.save_environment(run_id, &serde_json::to_value(&env)?)?;
    let (records, summary) = to_records(&mut report)?;
    store.save_scan(run_id, &records, &summary)?;
    let status = if report.partial() { "partial" } else { "ok" };
    let detail = report
        .partial()
        .then(|| format!("{} entries could not be counted", report.problem_count));
    store.finish_run(run_id, status, detail.as_deref())?;

    print_report(&report, run_id, &args.output)?;
    eprintln!("storlab: stored as run {run_id} in {}", db.display());
    if report.partial() {
        eprintln!(
            "storlab: partial result: {} entr{} could not be counted (named above); the figures are a lower bound",
            report.problem_count,
            if report.problem_count == 1 { "y" } else { "ies" }
        );
        return Ok(exit::PARTIAL);
    }
    Ok(0)
}

fn list_paths(p: &[PathBuf]) -> String {
    p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// The rows as database records, and the rest of the report as the summary.
fn to_records(report: &mut Report) -> Result<(Vec<ScanRowRecord>, String)> {
    let rows = report
        .rows
        .iter()
        .map(|r| {
            Ok(ScanRowRecord {
                root: r.root.display().to_string(),
                path: r.path.display().to_string(),
                own_files_only: r.own_files_only,
                files: r.stats.data.files,
                dirs: r.stats.dirs,
                apparent: r.stats.data.apparent,
                allocated: r.stats.data.allocated,
                json: serde_json::to_string(r)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let kept = std::mem::take(&mut report.rows);
    let summary = serde_json::to_string(&report);
    report.rows = kept;
    Ok((rows, summary?))
}

/// A stored scan, rebuilt from the database (None when run `id` is not a scan).
pub fn stored_report(store: &Store, id: i64) -> Result<Option<Report>> {
    let Some((rows, summary)) = store.scan(id)? else {
        return Ok(None);
    };
    let mut report: Report = serde_json::from_str(&summary).context("reading the stored scan")?;
    report.rows = rows
        .into_iter()
        .map(|r| serde_json::from_str::<Row>(&r.json))
        .collect::<std::result::Result<_, _>>()
        .context("reading the stored scan's rows")?;
    Ok(Some(report))
}

pub fn print_report(report: &Report, run_id: i64, out: &OutputArgs) -> Result<()> {
    if out.json {
        // Written straight to stdout: a Value tree of thousands of rows would cost far more
        // memory than the walk.
        #[derive(serde::Serialize)]
        struct WithRun<'a> {
            run_id: i64,
            partial: bool,
            #[serde(flatten)]
            report: &'a Report,
        }
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(
            &mut w,
            &WithRun {
                run_id,
                partial: report.partial(),
                report,
            },
        )?;
        use std::io::Write;
        writeln!(w)?;
    } else if out.csv {
        print!("{}", csv(&csv_rows(report)));
    } else {
        print!("{}", render(report, run_id));
    }
    Ok(())
}

fn bytes(b: u64) -> String {
    Size(b).human()
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn row_label(r: &Row) -> String {
    if r.own_files_only {
        format!("{} (files directly in it)", r.path.display())
    } else {
        r.path.display().to_string()
    }
}

/// The human report: the seed's table (data, and per threshold the data, files and share
/// older than it), then the age and size histograms, the cold directories, and the notes.
pub fn render(report: &Report, run_id: i64) -> String {
    let o = &report.options;
    let mut s = format!(
        "scan {} · run {run_id} · age by {} · {} entries in {:.2} s ({:.0} entries/s)\n\n",
        list_paths(&o.roots),
        o.time.name(),
        thousands(report.entries),
        report.seconds,
        report.entries as f64 / report.seconds.max(1e-9),
    );
    let mut head = vec![
        "path".to_string(),
        "data".into(),
        "allocated".into(),
        "files".into(),
        "dirs".into(),
    ];
    for a in &o.ages {
        let l = age_label(*a);
        head.push(format!(">{l} data"));
        head.push(format!(">{l} allocated"));
        head.push(format!(">{l} files"));
        head.push(format!(">{l} % of data"));
    }
    let line = |label: String, st: &Stats| {
        let mut v = vec![
            label,
            bytes(st.data.apparent),
            bytes(st.data.allocated),
            thousands(st.data.files),
            thousands(st.dirs),
        ];
        for i in 0..o.ages.len() {
            v.push(bytes(st.cold[i].apparent));
            v.push(bytes(st.cold[i].allocated));
            v.push(thousands(st.cold[i].files));
            v.push(format!("{:.2} %", st.cold_percent(i)));
        }
        v
    };
    let mut rows = vec![head];
    for r in &report.rows {
        rows.push(line(row_label(r), &r.stats));
    }
    rows.push(line("total".into(), &report.total));
    s += &table(&rows);

    let hist = |title: &str, labels: &[&str], pick: &dyn Fn(&Stats) -> Vec<storlab_scan::Amount>| {
        let mut rows = vec![std::iter::once("path".to_string())
            .chain(labels.iter().map(|l| l.to_string()))
            .collect::<Vec<_>>()];
        let mut add = |label: String, st: &Stats| {
            let cells = pick(st)
                .iter()
                .map(|a| format!("{} / {}", thousands(a.files), bytes(a.apparent)))
                .collect::<Vec<_>>();
            rows.push(std::iter::once(label).chain(cells).collect());
        };
        for r in &report.rows {
            add(row_label(r), &r.stats);
        }
        add("total".into(), &report.total);
        format!("\n{title}\n{}", table(&rows))
    };
    s += &hist(&format!("age ({}; files / data)", o.time.name()), &AGE_LABELS, &|st| {
        st.age.to_vec()
    });
    s += &hist("size (files / data)", &SIZE_LABELS, &|st| st.size.to_vec());

    if !report.top.is_empty() {
        let first = age_label(o.ages[0]);
        let mut rows = vec![vec![
            "directory".to_string(),
            format!(">{first} data"),
            format!(">{first} files"),
            "all data".into(),
            format!("% >{first}"),
        ]];
        for d in &report.top {
            rows.push(vec![
                d.path.display().to_string(),
                bytes(d.cold[0].apparent),
                thousands(d.cold[0].files),
                bytes(d.data.apparent),
                format!(
                    "{:.2} %",
                    d.cold[0].apparent as f64 * 100.0 / d.data.apparent.max(1) as f64
                ),
            ]);
        }
        s += &format!("\nlargest cold directories (data not accessed for more than {first}, whole tree below each)\n");
        s += &table(&rows);
    }
    let t = &report.total;
    s += &format!(
        "\nalso: {} symbolic link(s) (not followed), {} other entr{} (fifos, sockets, devices)\n",
        thousands(t.symlinks),
        thousands(t.others),
        if t.others == 1 { "y" } else { "ies" }
    );
    if report.skipped_mount_count > 0 {
        s += &format!(
            "not descended into {} other mount(s) (--cross-mounts to include them): {}{}\n",
            report.skipped_mount_count,
            list_paths(&report.skipped_mounts),
            if report.skipped_mount_count as usize > report.skipped_mounts.len() {
                ", ..."
            } else {
                ""
            }
        );
    }
    for n in &report.notes {
        s += &format!("{n}\n");
    }
    if report.partial() {
        s += &format!(
            "\n{} entr{} could not be counted:\n",
            report.problem_count,
            if report.problem_count == 1 { "y" } else { "ies" }
        );
        for p in &report.problems {
            s += &format!("  {:?}: {}: {}\n", p.kind, p.path.display(), p.error);
        }
        if report.problem_count as usize > report.problems.len() {
            s += &format!(
                "  ... and {} more\n",
                report.problem_count as usize - report.problems.len()
            );
        }
    }
    s
}

pub fn csv_rows(report: &Report) -> Vec<Vec<String>> {
    let o = &report.options;
    let mut head: Vec<String> = [
        "root",
        "path",
        "own_files_only",
        "files",
        "dirs",
        "symlinks",
        "others",
        "apparent_bytes",
        "allocated_bytes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for a in &o.ages {
        let l = age_label(*a);
        for k in ["files", "apparent_bytes", "allocated_bytes", "percent_of_data"] {
            head.push(format!("older_{l}_{k}"));
        }
    }
    for (i, _) in AGE_LABELS.iter().enumerate() {
        head.push(format!("age_bucket_{i}_files"));
        head.push(format!("age_bucket_{i}_bytes"));
    }
    for (i, _) in SIZE_LABELS.iter().enumerate() {
        head.push(format!("size_bucket_{i}_files"));
        head.push(format!("size_bucket_{i}_bytes"));
    }
    let line = |root: String, path: String, own: bool, st: &Stats| {
        let mut v = vec![
            root,
            path,
            own.to_string(),
            st.data.files.to_string(),
            st.dirs.to_string(),
            st.symlinks.to_string(),
            st.others.to_string(),
            st.data.apparent.to_string(),
            st.data.allocated.to_string(),
        ];
        for i in 0..o.ages.len() {
            v.push(st.cold[i].files.to_string());
            v.push(st.cold[i].apparent.to_string());
            v.push(st.cold[i].allocated.to_string());
            v.push(format!("{:.4}", st.cold_percent(i)));
        }
        for a in st.age.iter().chain(st.size.iter()) {
            v.push(a.files.to_string());
            v.push(a.apparent.to_string());
        }
        v
    };
    let mut rows = vec![head];
    for r in &report.rows {
        rows.push(line(
            r.root.display().to_string(),
            r.path.display().to_string(),
            r.own_files_only,
            &r.stats,
        ));
    }
    rows.push(line("total".into(), String::new(), false, &report.total));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(4195712), "4,195,712");
    }

    #[test]
    fn day_thresholds_read_back() {
        assert_eq!(age_label(60 * storlab_scan::DAY), "60d");
    }
}
