//! The null back-end: moves no data, so that what it measures is the engine's own cost.

use std::io;

use super::SyncCall;
use super::{Backend, IoUnit, Queued};
use crate::data::BufferPool;
use crate::plan::BackendKind;

/// Moves no data; every I/O completes at once. It measures the engine's own cost per I/O.
pub(super) struct NullBackend;

impl Backend for NullBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Null
    }
    fn queue(&mut self, unit: IoUnit, _: &BufferPool) -> io::Result<Queued> {
        Ok(Queued::Completed(unit.len))
    }
    fn flush(&mut self, _: SyncCall) -> io::Result<()> {
        Ok(())
    }
}
