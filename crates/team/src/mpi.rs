//! The ranks of an MPI job as a [`Team`]: rsmpi over the MPI library mpirun or srun started
//! this process with. The main thread makes every call but one kind: while a stonewalled phase
//! runs, a watcher thread probes for the other ranks' "done" on a communicator of its own, so
//! MPI_THREAD_MULTIPLE is asked for (and a stonewall refused where the library gives less).
//! The engine's workers never call MPI.

use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::{Count, Threading};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use storlab_session::team::Team;

/// This process's place in the MPI job.
pub struct MpiTeam {
    world: SimpleCommunicator,
    /// The stonewall's messages go on a communicator of their own (MPI_Comm_dup), so that a
    /// watcher's probe can never match another message.
    stonewall: Shared,
    threading: Threading,
    host: String,
    offset: f64,
    // Dropping the universe finalizes MPI: it goes last, after the communicators.
    _universe: Universe,
}

/// A communicator two threads use at once.
struct Shared(SimpleCommunicator);

// SAFETY: MPI_THREAD_MULTIPLE (checked before a stonewall uses this from a second thread) lets
// threads call MPI concurrently; on this communicator the watcher thread only probes and
// receives, and the main thread only sends.
unsafe impl Sync for Shared {}

/// The tag of a rank's "my part of the phase is done".
const DONE: mpi::Tag = 1;

/// Seconds since the epoch on this host's clock.
fn wall() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Round trips per rank when measuring clock offsets; the one with the shortest round trip is
/// kept (its midpoint is the tightest bound on when the other rank read its clock).
const PINGS: usize = 16;

impl MpiTeam {
    /// Joins the MPI job for a run that stonewalls (`stonewall`) or not: a stonewall needs
    /// MPI_THREAD_MULTIPLE, and is refused by name where the library gives less.
    pub fn join_for(stonewall: bool) -> Result<MpiTeam, String> {
        let team = Self::join()?;
        if stonewall && team.threading != Threading::Multiple {
            return Err(format!(
                "--stonewall needs an MPI library with MPI_THREAD_MULTIPLE; this one gives {:?}",
                team.threading
            ));
        }
        Ok(team)
    }

    /// Joins the MPI job, and measures every rank's clock offset to rank 0.
    pub fn join() -> Result<MpiTeam, String> {
        let (universe, threading) =
            mpi::initialize_with_threading(Threading::Multiple).ok_or("MPI was already initialized in this process")?;
        let world = universe.world();
        let host = mpi::environment::processor_name().map_err(|e| format!("MPI cannot name this host: {e}"))?;
        let mut team = MpiTeam {
            stonewall: Shared(world.duplicate()),
            world,
            threading,
            host,
            offset: 0.0,
            _universe: universe,
        };
        team.offset = team.measure_offsets();
        Ok(team)
    }

    /// Rank 0 pings each rank in turn; each rank answers with its clock. Cristian's algorithm:
    /// the offset is the rank's reading minus the midpoint of rank 0's send and receive, from
    /// the round trip that took least. Every rank learns its own offset.
    fn measure_offsets(&self) -> f64 {
        let size = self.world.size();
        let root = self.world.process_at_rank(0);
        if self.world.rank() == 0 {
            for r in 1..size {
                let other = self.world.process_at_rank(r);
                let mut best = (f64::INFINITY, 0.0);
                for _ in 0..PINGS {
                    let t0 = wall();
                    other.send(&t0);
                    let (theirs, _) = other.receive::<f64>();
                    let t1 = wall();
                    if t1 - t0 < best.0 {
                        best = (t1 - t0, theirs - (t0 + t1) / 2.0);
                    }
                }
                other.send(&best.1);
            }
            0.0
        } else {
            for _ in 0..PINGS {
                let _ = root.receive::<f64>();
                root.send(&wall());
            }
            root.receive::<f64>().0
        }
    }

    fn displacements(counts: &[Count]) -> Vec<Count> {
        counts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect()
    }
}

impl Team for MpiTeam {
    fn rank(&self) -> u32 {
        self.world.rank() as u32
    }

    fn size(&self) -> u32 {
        self.world.size() as u32
    }

    fn host(&self) -> &str {
        &self.host
    }

    fn clock_offset(&self) -> f64 {
        self.offset
    }

    fn gather(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        let root = self.world.process_at_rank(0);
        let n = mine.len() as Count;
        if self.world.rank() != 0 {
            root.gather_into(&n);
            root.gather_varcount_into(mine);
            return None;
        }
        let mut counts = vec![0 as Count; self.world.size() as usize];
        root.gather_into_root(&n, &mut counts[..]);
        let displs = Self::displacements(&counts);
        let mut all = vec![0u8; counts.iter().map(|&c| c as usize).sum()];
        {
            let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(mine, &mut part);
        }
        Some(split(&all, &counts))
    }

    fn stonewalled(&self, finish: &(dyn Fn() + Sync), phase: &mut dyn FnMut()) {
        let (me, size) = (self.world.rank(), self.world.size());
        if size < 2 || self.threading != Threading::Multiple {
            // join_for() refused a stonewall without MPI_THREAD_MULTIPLE; one rank has no other.
            phase();
            return;
        }
        let comm = &self.stonewall;
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let watcher = s.spawn(|| {
                // Every other rank says "done" once per phase; the first to say it ends this
                // rank's phase, unless this rank was done already.
                let mut heard = 0;
                while heard < size - 1 {
                    match comm.0.any_process().immediate_matched_probe_with_tag(DONE) {
                        Some((msg, _)) => {
                            let (_, _): (u8, _) = msg.matched_receive();
                            heard += 1;
                            if heard == 1 && !done.load(Ordering::Acquire) {
                                finish();
                            }
                        }
                        None => std::thread::sleep(Duration::from_micros(100)),
                    }
                }
            });
            phase();
            done.store(true, Ordering::Release);
            for r in (0..size).filter(|&r| r != me) {
                comm.0.process_at_rank(r).send_with_tag(&1u8, DONE);
            }
            let _ = watcher.join();
        });
    }

    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        let n = mine.len() as Count;
        let mut counts = vec![0 as Count; self.world.size() as usize];
        self.world.all_gather_into(&n, &mut counts[..]);
        let displs = Self::displacements(&counts);
        let mut all = vec![0u8; counts.iter().map(|&c| c as usize).sum()];
        {
            let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            self.world.all_gather_varcount_into(mine, &mut part);
        }
        split(&all, &counts)
    }
}

/// The ranks' pieces of a gathered buffer.
fn split(all: &[u8], counts: &[Count]) -> Vec<Vec<u8>> {
    let mut at = 0usize;
    counts
        .iter()
        .map(|&c| {
            let piece = all[at..at + c as usize].to_vec();
            at += c as usize;
            piece
        })
        .collect()
}
