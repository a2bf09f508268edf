//! Scans: one row per report row (the key figures as columns, for queries that compare two
//! scans of the same place, and the whole row as a document) and the rest of the report.

use storlab_model::scan::{Report, Row};

use crate::db::{one, vals};
use crate::{Result, Store};

impl Store {
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
