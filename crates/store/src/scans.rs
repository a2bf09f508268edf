//! Scans: one row per report row (the key figures as columns, for queries that compare two
//! scans of the same place, and the whole row as a document) and the rest of the report.

use storlab_model::scan::{Report, Row};

use crate::db::{one, vals};
use crate::{Result, Store};

impl Store {
    /// Stores a scan's report in one transaction.
    pub fn save_scan(&mut self, run_id: i64, report: &Report) -> Result<()> {
        self.tx(|c| {
            let mut rows = Vec::with_capacity(report.rows.len());
            for (i, r) in report.rows.iter().enumerate() {
                rows.push(
                    vals![
                        run_id,
                        i as i64,
                        r.root.display().to_string(),
                        r.path.display().to_string(),
                        r.own_files_only,
                        r.stats.data.files,
                        r.stats.dirs,
                        r.stats.data.apparent,
                        r.stats.data.allocated,
                        serde_json::to_string(r)?
                    ]
                    .to_vec(),
                );
            }
            c.bulk(
                "scan_rows",
                &[
                    "run_id",
                    "idx",
                    "root",
                    "path",
                    "own_files",
                    "files",
                    "dirs",
                    "apparent",
                    "allocated",
                    "json",
                ],
                &mut rows.into_iter(),
            )?;
            // The summary: the report without its rows (a scan can have thousands).
            let summary = serde_json::to_string(&Report {
                rows: Vec::new(),
                ..report.clone()
            })?;
            c.exec(
                "INSERT INTO scans (run_id, json) VALUES (?1, ?2)",
                vals![run_id, summary],
            )?;
            Ok(())
        })
    }

    /// A stored scan's report, or None when the run is not a scan.
    pub fn scan(&self, run_id: i64) -> Result<Option<Report>> {
        let Some(summary) = one(self.query("SELECT json FROM scans WHERE run_id = ?1", vals![run_id])?) else {
            return Ok(None);
        };
        let mut report: Report = serde_json::from_str(&summary.text(0)?)?;
        report.rows = self
            .query(
                "SELECT json FROM scan_rows WHERE run_id = ?1 ORDER BY idx",
                vals![run_id],
            )?
            .iter()
            .map(|r| Ok(serde_json::from_str::<Row>(&r.text(0)?)?))
            .collect::<Result<_>>()?;
        Ok(Some(report))
    }
}
