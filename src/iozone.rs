//! How `storlab iozone` runs, prints and ends, shared by the one-process path (commands.rs) and the
//! MPI ranks' path (team.rs), so that neither imports the other. (What it stores, the study's
//! parameters and each cell's role, is the workload crate's: `IozoneArgs::study_params`,
//! `IozoneArgs::study`, `IozoneCell::role`.)

use anyhow::Result;
use storlab_report::iozone::CellResult;
use storlab_session::Points;
use storlab_store::Store;
use storlab_workload::iozone::IozoneArgs;

use crate::cli::{DbArgs, OutputArgs};
use crate::exit;
use crate::results::json_or_text;

/// Where `storlab iozone` stores and how it prints.
pub(crate) fn output(a: &IozoneArgs) -> OutputArgs {
    OutputArgs {
        db: DbArgs { db: a.db.clone() },
        json: a.json,
        csv: false,
    }
}

/// The exit code of the cells that ran.
pub(crate) fn exit_code(done: &storlab_session::Points) -> u8 {
    if done.aborted {
        exit::ABORTED
    } else if done.not_ok {
        1
    } else {
        0
    }
}

/// How `storlab iozone`'s cells run: as IOzone runs, with its tags, `live` watching.
pub(crate) fn options<'a>(
    a: &'a IozoneArgs,
    live: Option<&'a dyn storlab_session::LiveRun>,
) -> storlab_session::RunOptions<'a> {
    storlab_session::RunOptions {
        kind: storlab_model::run::RunKind::Iozone,
        tags: &a.tags,
        allow_devices: &[],
        keep: a.keep,
        command: &a.command_line,
        control: None,
        live,
    }
}

/// Prints an IOzone run in IOzone's layout (or as JSON), and writes its -b workbook.
pub fn print_iozone(
    store: &Store,
    a: &IozoneArgs,
    study: Option<i64>,
    done: &Points,
    note: Option<&str>,
) -> Result<()> {
    let results = CellResult::of_points(a, &done.done);
    let began = match results.first() {
        Some(r) => store.run(r.run_id, false)?.map(|d| d.run.started_at),
        None => None,
    };
    json_or_text(
        a.json,
        || storlab_report::iozone::document(a, study, &results, note),
        || {
            storlab_report::iozone::render(a, &results, began.as_deref())
                + &note.map(|n| format!("\n\t{n}\n")).unwrap_or_default()
        },
    )?;
    if let Some(path) = &a.workbook {
        storlab_report::iozone::write_workbook(path, a, &results)?;
        eprintln!("storlab: wrote the workbook {}", path.display());
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("xls")) {
            // IOzone wrote the old binary format; the seeds' command lines say -b FILE.xls.
            eprintln!("storlab: note: {} holds an XLSX workbook (IOzone's .xls was the older format); spreadsheets open it, some after asking — name it .xlsx to avoid the question", path.display());
        }
    }
    if !a.json {
        for line in bound_tally(store, &results)? {
            eprintln!("storlab: bound: {line}");
        }
    }
    let first = results.first().map_or(0, |r| r.run_id);
    let what = study.map_or(format!("as run {first}"), |s| {
        format!("{} runs as study {s}", results.len())
    });
    eprintln!("storlab: stored {what} in {}", store.target());
    Ok(())
}

/// What bounded each IOzone test across its cells: "write: cache in 12 cells, device in 3".
fn bound_tally(store: &Store, results: &[CellResult]) -> Result<Vec<String>> {
    let mut tally: Vec<(String, Vec<(&'static str, usize)>)> = Vec::new();
    for r in results {
        let Some(run) = store.run(r.run_id, false)? else {
            continue;
        };
        for p in &run.phases {
            let k = storlab_report::bound::of_phase(&run, p).kind.name();
            let name = p.kind.to_string();
            let i = match tally.iter().position(|(n, _)| *n == name) {
                Some(i) => i,
                None => {
                    tally.push((name, Vec::new()));
                    tally.len() - 1
                }
            };
            match tally[i].1.iter_mut().find(|(kk, _)| *kk == k) {
                Some((_, n)) => *n += 1,
                None => tally[i].1.push((k, 1)),
            }
        }
    }
    Ok(tally
        .into_iter()
        .map(|(name, ks)| {
            let cells = ks.iter().map(|(_, n)| n).sum::<usize>();
            let said = if ks.len() == 1 {
                format!("{} in every cell", ks[0].0)
            } else {
                ks.iter()
                    .map(|(k, n)| format!("{k} in {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!("{name} ({cells} cell(s)): {said}")
        })
        .collect())
}
