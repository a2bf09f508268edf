//! What `storlab iozone` stores and how it ends, shared by the one-process path
//! (commands.rs) and the MPI ranks' path (ranks.rs), so that neither imports the other.

use storlab_model::study::{IozoneParams, Role, StudyParams};
use storlab_workload::iozone::{IozoneArgs, IozoneCell};

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

/// The IOzone command line and its cache note, kept with the study.
pub(crate) fn params(a: &IozoneArgs, cells: &[IozoneCell]) -> IozoneParams {
    IozoneParams {
        command: a.command_line.clone(),
        note: a.cache_rule(cells, storlab_env::memory_bytes()),
    }
}

/// A cell's part in the study.
pub(crate) fn role(c: IozoneCell) -> Role {
    Role::Cell {
        workers: c.workers,
        file_bytes: c.file,
        record_bytes: c.record,
    }
}

/// The study several cells make: IOzone's matrix (-a) or a range of workers (-l/-u).
pub(crate) fn study(a: &IozoneArgs, params: &IozoneParams) -> StudyParams {
    if a.auto {
        StudyParams::IozoneAuto(params.clone())
    } else {
        StudyParams::IozoneWorkers(params.clone())
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
