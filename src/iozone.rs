//! How `storlab iozone` runs, prints and ends, shared by the one-process path (commands.rs) and the
//! MPI ranks' path (ranks.rs), so that neither imports the other. (What it stores, the study's
//! parameters and each cell's role, is the workload crate's: `IozoneArgs::study_params`,
//! `IozoneArgs::study`, `IozoneCell::role`.)

use storlab_workload::iozone::IozoneArgs;

use crate::cli::{DbArgs, OutputArgs};
use crate::exit;

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
