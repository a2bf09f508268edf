//! A scan's report for the terminal (the seed's table: data, and per threshold the data, files
//! and share older than it; the age and size histograms; the cold directories; the notes) and
//! as data for CSV and the exports.

use storlab_model::list_paths;
use storlab_model::scan::{age_label, Growth, Held, Owner, Report, Stats, AGE_LABELS, SIZE_LABELS};
use storlab_units::{thousands, Size};

use crate::table::{Cell, Table};

fn bytes(b: u64) -> String {
    Size(b).human()
}

/// What a partial scan says after its table: how many entries could not be counted (None when
/// every one was).
pub fn partial_note(report: &Report) -> Option<String> {
    let n = report.problem_count;
    report.partial().then(|| {
        format!(
            "storlab: partial result: {n} entr{} could not be counted (named above); the figures are a lower bound",
            if n == 1 { "y" } else { "ies" }
        )
    })
}

/// A scan as one JSON document: its run, whether it is partial, the report, and its growth
/// since an earlier scan when asked.
#[derive(serde::Serialize)]
pub struct Document<'a> {
    /// The scan's run.
    pub run_id: i64,
    /// Some entries could not be counted.
    pub partial: bool,
    /// The report.
    #[serde(flatten)]
    pub report: &'a Report,
    /// The change since an earlier scan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub growth: Option<&'a Growth>,
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
    s += &rows_table(report);
    s += &histogram(
        report,
        &format!("age ({}; files / data)", o.time.name()),
        &AGE_LABELS,
        &|st| st.age.to_vec(),
    );
    s += &histogram(report, "size (files / data)", &SIZE_LABELS, &|st| st.size.to_vec());
    s += &coldest(report);
    s += &footnotes(report);
    s
}

/// The first column's heading: the rows are owners or paths.
fn first_column(report: &Report) -> &'static str {
    if report.options.group_by.per_owner() {
        "owner"
    } else {
        "path"
    }
}

/// The rows and the total: data, allocated, files, directories, and per age threshold what
/// is older.
fn rows_table(report: &Report) -> String {
    let o = &report.options;
    let mut head = vec![
        first_column(report).to_string(),
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
        rows.push(line(report.row_label(r), &r.stats));
    }
    rows.push(line("total".into(), &report.total));
    Table::from_text("scan", rows).to_text()
}

/// A histogram (by age or size) of each row and the total: files / data per bucket.
fn histogram(
    report: &Report,
    title: &str,
    labels: &[&str],
    pick: &dyn Fn(&Stats) -> Vec<storlab_model::scan::Amount>,
) -> String {
    let mut rows = vec![std::iter::once(first_column(report).to_string())
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
        add(report.row_label(r), &r.stats);
    }
    add("total".into(), &report.total);
    format!("\n{title}\n{}", Table::from_text(title, rows).to_text())
}

/// The largest cold directories, when asked for.
fn coldest(report: &Report) -> String {
    if report.top.is_empty() {
        return String::new();
    }
    let first = age_label(report.options.ages[0]);
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
    format!(
        "\nlargest cold directories (data not accessed for more than {first}, whole tree below each)\n{}",
        Table::from_text("scan", rows).to_text()
    )
}

/// What else was found and what was left out: links and other entries, mounts not entered,
/// entries excluded, the notes, and the entries that could not be counted.
fn footnotes(report: &Report) -> String {
    let o = &report.options;
    let t = &report.total;
    let more = |count: u64, named: usize| if count as usize > named { ", ..." } else { "" };
    let mut s = format!(
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
            more(report.skipped_mount_count, report.skipped_mounts.len())
        );
    }
    if report.excluded_count > 0 {
        s += &format!(
            "left out by --exclude ({}): {} entr{}, not counted nor descended into: {}{}\n",
            o.exclude.join(", "),
            thousands(report.excluded_count),
            if report.excluded_count == 1 { "y" } else { "ies" },
            list_paths(&report.excluded),
            more(report.excluded_count, report.excluded.len())
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

/// The scan's rows as data, for CSV and every export: raw numbers, one row per report row and
/// one for the total.
pub fn data_table(report: &Report, name: &str) -> Table {
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
    for k in ["owner_kind", "owner_id", "owner_name"] {
        head.push(k.into());
    }
    let line = |root: String, path: String, own: bool, st: &Stats, owner: Option<&Owner>| {
        let mut v: Vec<Cell> = vec![
            root.into(),
            path.into(),
            own.into(),
            st.data.files.into(),
            st.dirs.into(),
            st.symlinks.into(),
            st.others.into(),
            st.data.apparent.into(),
            st.data.allocated.into(),
        ];
        for i in 0..o.ages.len() {
            v.push(st.cold[i].files.into());
            v.push(st.cold[i].apparent.into());
            v.push(st.cold[i].allocated.into());
            v.push(Cell::fixed(st.cold_percent(i), 4));
        }
        for a in st.age.iter().chain(st.size.iter()) {
            v.push(a.files.into());
            v.push(a.apparent.into());
        }
        match owner {
            Some(o) => {
                v.push(o.by.name().into());
                v.push(o.id.into());
                v.push(o.name.clone().map_or(Cell::Empty, Cell::from));
            }
            None => v.extend([Cell::Empty, Cell::Empty, Cell::Empty]),
        }
        v
    };
    let mut t = Table::with_headers(name, head);
    for r in &report.rows {
        t.push(line(
            r.root.display().to_string(),
            r.path.display().to_string(),
            r.own_files_only,
            &r.stats,
            r.owner.as_ref(),
        ));
    }
    t.push(line("total".into(), String::new(), false, &report.total, None));
    t
}

/// The change since an earlier scan: per row, data, files and cold data now and the change
/// ("new" and "gone" for rows only one scan has), and the total.
pub fn render_growth(g: &Growth) -> String {
    let cold = g.cold_threshold.map(age_label);
    let mut head = vec![
        "row".to_string(),
        "data".into(),
        "Δ data".into(),
        "files".into(),
        "Δ files".into(),
    ];
    if let Some(c) = &cold {
        head.push(format!(">{c} data"));
        head.push(format!("Δ >{c} data"));
    }
    let signed = |now: u64, then: u64, human: bool| -> String {
        let (sign, d) = if now >= then {
            ("+", now - then)
        } else {
            ("-", then - now)
        };
        if human {
            format!("{sign}{}", bytes(d))
        } else {
            format!("{sign}{}", thousands(d))
        }
    };
    let mut rows = vec![head];
    for r in &g.rows {
        let zero = Held::default();
        let (b, a) = (r.before.unwrap_or(zero), r.after.unwrap_or(zero));
        let tag = match (r.before.is_some(), r.after.is_some()) {
            (false, _) => " (new)",
            (_, false) => " (gone)",
            _ => "",
        };
        let mut v = vec![
            format!("{}{tag}", r.label),
            bytes(a.data.apparent),
            signed(a.data.apparent, b.data.apparent, true),
            thousands(a.data.files),
            signed(a.data.files, b.data.files, false),
        ];
        if cold.is_some() {
            let (ca, cb) = (a.cold.unwrap_or_default(), b.cold.unwrap_or_default());
            v.push(bytes(ca.apparent));
            v.push(signed(ca.apparent, cb.apparent, true));
        }
        rows.push(v);
    }
    format!(
        "\nsince run {} ({}):\n{}",
        g.since_run,
        g.since,
        Table::from_text("growth", rows).to_text()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_thresholds_read_back() {
        assert_eq!(age_label(60 * storlab_model::scan::DAY), "60d");
    }
}
