//! One table type for every exporter, and the tables of a stored run (what `storlab run` and
//! `storlab results show` print, with the raw numbers behind them).

use serde::Serialize;
use serde_json::Value;
use storlab_store::RunDetail;

/// A cell: numbers stay numbers in every format that has them (XLSX, JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// A whole number.
    Int(i64),
    /// A measured value.
    Num(f64),
    /// Text.
    Text(String),
    /// Nothing (a value that does not apply).
    Empty,
}

impl Cell {
    /// As text (numbers in full precision, no units: the column header carries the unit).
    pub fn text(&self) -> String {
        match self {
            Cell::Int(i) => i.to_string(),
            Cell::Num(f) => {
                if f.fract() == 0.0 && f.abs() < 1e15 {
                    format!("{f:.0}")
                } else {
                    format!("{f}")
                }
            }
            Cell::Text(s) => s.clone(),
            Cell::Empty => String::new(),
        }
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}
impl From<u64> for Cell {
    fn from(v: u64) -> Cell {
        Cell::Int(v as i64)
    }
}
impl From<i64> for Cell {
    fn from(v: i64) -> Cell {
        Cell::Int(v)
    }
}
impl From<u32> for Cell {
    fn from(v: u32) -> Cell {
        Cell::Int(v as i64)
    }
}
impl From<f64> for Cell {
    fn from(v: f64) -> Cell {
        if v.is_finite() {
            Cell::Num(v)
        } else {
            Cell::Empty
        }
    }
}
impl From<bool> for Cell {
    fn from(v: bool) -> Cell {
        Cell::Text(v.to_string())
    }
}

/// A named table: headers (with units) and rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Its name (a sheet name in XLSX, a heading in Markdown).
    pub name: String,
    /// Column headers, units included ("MiB/s", "lat p99 (µs)").
    pub headers: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    /// An empty table with these headers.
    pub fn new(name: &str, headers: &[&str]) -> Table {
        Table {
            name: name.into(),
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The tables of stored runs: phases (one row per phase), samples (one row per interval, when
/// the runs were read with samples), and environment (one row per target).
pub fn run_tables(runs: &[RunDetail]) -> Vec<Table> {
    let mut phases = Table::new(
        "phases",
        &[
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
        ],
    );
    let mut samples = Table::new(
        "samples",
        &[
            "run",
            "seq",
            "phase",
            "interval",
            "t start (s)",
            "t end (s)",
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
        ],
    );
    let mut env = Table::new(
        "environment",
        &[
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
        ],
    );
    for r in runs {
        for p in &r.phases {
            let param = |k: &str| p.params.get(k).cloned().unwrap_or(Value::Null);
            let bs: Cell = match param("bs") {
                Value::Object(o) if o.contains_key("fixed") => {
                    o["fixed"].as_u64().map(Cell::from).unwrap_or(Cell::Empty)
                }
                Value::Object(o) if o.contains_key("mix") => Cell::Text(o["mix"].to_string()),
                _ => Cell::Empty,
            };
            let workers = param("workers")
                .as_array()
                .map(|w| Cell::from(w.len() as u64))
                .unwrap_or(Cell::Empty);
            phases.rows.push(vec![
                r.run.id.into(),
                r.run.host.as_str().into(),
                r.run.job_name.clone().unwrap_or_default().into(),
                (p.seq + 1).into(),
                p.kind.as_str().into(),
                param("backend").as_str().unwrap_or("").into(),
                bs,
                workers,
                param("iodepth").as_u64().map(Cell::from).unwrap_or(Cell::Empty),
                param("direct").as_bool().map(Cell::from).unwrap_or(Cell::Empty),
                p.bytes_read.into(),
                p.bytes_written.into(),
                p.seconds.into(),
                (p.bytes_per_sec / MIB).into(),
                p.iops.into(),
                (p.first_done_bytes_per_sec / MIB).into(),
                (p.worker_min_bytes_per_sec / MIB).into(),
                (p.worker_max_bytes_per_sec / MIB).into(),
                (p.lat_min_ns as f64 / 1e3).into(),
                (p.lat_mean_ns / 1e3).into(),
                (p.lat_p50_ns as f64 / 1e3).into(),
                (p.lat_p90_ns as f64 / 1e3).into(),
                (p.lat_p99_ns as f64 / 1e3).into(),
                (p.lat_p99_9_ns as f64 / 1e3).into(),
                (p.lat_p99_99_ns as f64 / 1e3).into(),
                (p.lat_max_ns as f64 / 1e3).into(),
                p.cpu_user.into(),
                p.cpu_sys.into(),
                p.cache_flattered.into(),
                p.interrupted.into(),
                p.verify_bad_blocks.map(Cell::from).unwrap_or(Cell::Empty),
            ]);
            for s in &p.samples {
                let dt = (s.t_end - s.t_start).max(1e-9);
                samples.rows.push(vec![
                    r.run.id.into(),
                    (p.seq + 1).into(),
                    p.kind.as_str().into(),
                    s.idx.into(),
                    s.t_start.into(),
                    s.t_end.into(),
                    s.ramp.into(),
                    s.bytes_read.into(),
                    s.bytes_written.into(),
                    s.ops_read.into(),
                    s.ops_written.into(),
                    ((s.bytes_read + s.bytes_written) as f64 / dt / MIB).into(),
                    ((s.ops_read + s.ops_written) as f64 / dt).into(),
                    (s.lat_p50_ns as f64 / 1e3).into(),
                    (s.lat_p90_ns as f64 / 1e3).into(),
                    (s.lat_p99_ns as f64 / 1e3).into(),
                    (s.lat_p99_9_ns as f64 / 1e3).into(),
                    (s.lat_max_ns as f64 / 1e3).into(),
                    s.late_ios.into(),
                ]);
            }
        }
        let e = &r.environment;
        let g = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let base: Vec<Cell> = vec![
            r.run.id.into(),
            g(e, "host").into(),
            g(e, "kernel").into(),
            g(e, "cpu_model").into(),
            e.get("cpus")
                .and_then(Value::as_u64)
                .map(Cell::from)
                .unwrap_or(Cell::Empty),
            e.get("memory_bytes")
                .and_then(Value::as_u64)
                .map(Cell::from)
                .unwrap_or(Cell::Empty),
        ];
        let targets = e.get("targets").and_then(Value::as_array).cloned().unwrap_or_default();
        if targets.is_empty() {
            let mut row = base.clone();
            row.extend(std::iter::repeat_n(Cell::Empty, 6));
            env.rows.push(row);
        }
        for t in targets {
            let mut row = base.clone();
            row.extend([
                g(&t, "path").into(),
                g(&t, "fs_type").into(),
                g(&t, "mount_options").into(),
                g(&t, "device").into(),
                g(&t, "model").into(),
                g(&t, "raid").into(),
            ]);
            env.rows.push(row);
        }
    }
    let mut out = vec![phases];
    if !samples.rows.is_empty() {
        out.push(samples);
    }
    out.push(env);
    out
}
