//! Scans: one row per report row (the key figures as columns, for queries that compare two
//! scans of the same place, and the whole row as a document) and the rest of the report.

use rusqlite::{params, OptionalExtension};
use storlab_model::scan::{Report, Row};

use crate::{Result, Store};

impl Store {
    /// Stores a scan's report in one transaction.
    pub fn save_scan(&mut self, run_id: i64, report: &Report) -> Result<()> {
        let tx = self.conn.transaction()?;
        for (i, r) in report.rows.iter().enumerate() {
            tx.execute(
                "INSERT INTO scan_rows (run_id, idx, root, path, own_files, files, dirs, apparent, allocated, json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run_id,
                    i as i64,
                    r.root.display().to_string(),
                    r.path.display().to_string(),
                    r.own_files_only,
                    r.stats.data.files as i64,
                    r.stats.dirs as i64,
                    r.stats.data.apparent as i64,
                    r.stats.data.allocated as i64,
                    serde_json::to_string(r)?
                ],
            )?;
        }
        // The summary: the report without its rows (a scan can have thousands).
        let summary = serde_json::to_string(&Report {
            rows: Vec::new(),
            ..report.clone()
        })?;
        tx.execute(
            "INSERT INTO scans (run_id, json) VALUES (?1, ?2)",
            params![run_id, summary],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// A stored scan's report, or None when the run is not a scan.
    pub fn scan(&self, run_id: i64) -> Result<Option<Report>> {
        let Some(summary) = self
            .conn
            .query_row("SELECT json FROM scans WHERE run_id = ?1", [run_id], |r| {
                r.get::<_, String>(0)
            })
            .optional()?
        else {
            return Ok(None);
        };
        let mut report: Report = serde_json::from_str(&summary)?;
        let mut stmt = self
            .conn
            .prepare("SELECT json FROM scan_rows WHERE run_id = ?1 ORDER BY idx")?;
        let rows = stmt
            .query_map([run_id], |r| r.get::<_, String>(0))?
            .collect::<std::result::Result<Vec<_>, _>>()?;
        report.rows = rows
            .iter()
            .map(|j| serde_json::from_str::<Row>(j))
            .collect::<std::result::Result<_, _>>()?;
        Ok(Some(report))
    }
}
