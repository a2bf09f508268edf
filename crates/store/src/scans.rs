//! Scans: one row per report row (the key figures as columns, for queries that compare two
//! scans of the same place, and the whole row as a document) and the rest of the report.

use storlab_model::list_paths;
use storlab_model::run::RunKind;
use storlab_model::scan::{Report, Row, ScanOptions};

use crate::db::{one, vals};
use crate::{Result, RunFilter, Store, StoreError};

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

    /// The earlier scan `storlab scan --against` names (`against`: a run id, or `last`), to be
    /// found before the walk: its run id, when it ran, and its report. It must be a scan of the
    /// same PATHs grouped the same way as `opts`, so that rows match; `last` is the newest such
    /// scan, and None when there is none yet (the first of a series of scans). Anything else is
    /// refused as [`StoreError::Request`], saying why.
    pub fn earlier_scan(&self, against: &str, opts: &ScanOptions) -> Result<Option<(i64, String, Report)>> {
        let refused = |why: String| StoreError::Request(why);
        let same = |r: &Report| r.options.roots == opts.roots && r.options.group_by == opts.group_by;
        let candidates: Vec<i64> = if against == "last" {
            self.find_runs(&RunFilter {
                kind: Some(RunKind::Scan),
                ..RunFilter::default()
            })?
            .iter()
            .map(|r| r.id)
            .collect()
        } else {
            vec![against
                .parse()
                .map_err(|_| refused(format!("--against {against}: expected a run id or last")))?]
        };
        for id in candidates {
            let Some(run) = self.run(id, false)? else {
                return Err(refused(format!("--against {id}: {}", self.no_run(id))));
            };
            let Some(report) = self.scan(id)? else {
                return Err(refused(format!(
                    "--against {id}: run {id} is a {} run, not a scan",
                    run.run.kind
                )));
            };
            if same(&report) {
                return Ok(Some((id, run.run.started_at.clone(), report)));
            }
            if against != "last" {
                return Err(refused(format!(
                    "--against {id}: run {id} scanned {} grouped by {}; this scan is of {} grouped by {}: growth compares scans of the same PATHs grouped the same way",
                    list_paths(&report.options.roots),
                    report.options.group_by.name(),
                    list_paths(&opts.roots),
                    opts.group_by.name()
                )));
            }
        }
        Ok(None)
    }
}
