//! Groups of runs named on the command line, for `results compare` and `report --compare`:
//! "3,4,5" (run ids, ranges such as 3-5 allowed) or "fs=ext2[,host=eastwood]" (tags; `host`,
//! `kind` and `job` also match the run's own fields).

use storlab_model::run::{RunDetail, RunKind, Tag};

use crate::{Result, RunFilter, Store, StoreError};

/// A group of runs.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupSpec {
    /// These runs.
    Ids(Vec<i64>),
    /// The runs that match every pair.
    Filter(Vec<Tag>),
}

impl GroupSpec {
    /// Reads a group: ids and ranges, or KEY=VALUE pairs.
    pub fn parse(s: &str) -> std::result::Result<GroupSpec, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("an empty group: give run ids (3,4,5 or 3-5) or tags (fs=ext2)".into());
        }
        if s.contains('=') {
            return s
                .split(',')
                .map(|part| {
                    storlab_model::run::parse_tag(part).map_err(|_| format!("'{part}' in group '{s}' is not KEY=VALUE"))
                })
                .collect::<std::result::Result<_, _>>()
                .map(GroupSpec::Filter);
        }
        let mut ids = Vec::new();
        for part in s.split(',') {
            let bad = || format!("'{part}' in group '{s}' is not a run id or a range such as 3-5");
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b): (i64, i64) = (
                        a.trim().parse().map_err(|_| bad())?,
                        b.trim().parse().map_err(|_| bad())?,
                    );
                    if a > b || b - a > 100_000 {
                        return Err(bad());
                    }
                    ids.extend(a..=b);
                }
                None => ids.push(part.trim().parse().map_err(|_| bad())?),
            }
        }
        Ok(GroupSpec::Ids(ids))
    }

    /// How the group is named in a comparison.
    pub fn label(&self) -> String {
        match self {
            GroupSpec::Ids(ids) => format!(
                "runs {}",
                ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            ),
            GroupSpec::Filter(f) => f.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "),
        }
    }
}

impl Store {
    /// The runs of a group, oldest first; a run that is not there, or a filter that matches
    /// nothing, is the user's to fix ([`StoreError::Request`]).
    pub fn group(&self, spec: &GroupSpec) -> Result<Vec<RunDetail>> {
        let ids: Vec<i64> = match spec {
            GroupSpec::Ids(ids) => ids.clone(),
            GroupSpec::Filter(f) => {
                let mut filter = RunFilter::default();
                for (k, v) in f {
                    match k.as_str() {
                        "host" => filter.host = Some(v.clone()),
                        "kind" => {
                            filter.kind = Some(v.parse::<RunKind>().map_err(StoreError::Request)?);
                        }
                        "job" => filter.job = Some(v.clone()),
                        _ => filter.tags.push((k.clone(), v.clone())),
                    }
                }
                let mut found: Vec<i64> = self.find_runs(&filter)?.iter().map(|r| r.id).collect();
                // host=... also matches a tag named host, for runs tagged by hand.
                if let Some(h) = &filter.host {
                    let mut by_tag = filter.clone();
                    by_tag.host = None;
                    by_tag.tags.push(("host".into(), h.clone()));
                    found.extend(self.find_runs(&by_tag)?.iter().map(|r| r.id));
                }
                found.sort_unstable();
                found.dedup();
                if found.is_empty() {
                    return Err(StoreError::Request(format!(
                        "no run matches {}: `storlab results list --tag KEY=VALUE` shows what does",
                        spec.label()
                    )));
                }
                found
            }
        };
        ids.into_iter()
            .map(|id| self.run(id, false)?.ok_or_else(|| StoreError::Request(self.no_run(id))))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_parse() {
        assert_eq!(GroupSpec::parse("3,4,5"), Ok(GroupSpec::Ids(vec![3, 4, 5])));
        assert_eq!(GroupSpec::parse("3-5,9"), Ok(GroupSpec::Ids(vec![3, 4, 5, 9])));
        assert_eq!(
            GroupSpec::parse("fs=ext2,host=a"),
            Ok(GroupSpec::Filter(vec![
                ("fs".into(), "ext2".into()),
                ("host".into(), "a".into())
            ]))
        );
        assert!(GroupSpec::parse("3,x").unwrap_err().contains("'x'"));
        assert!(GroupSpec::parse("5-3").is_err());
        assert!(GroupSpec::parse("fs=ext2,oops").unwrap_err().contains("KEY=VALUE"));
    }
}
