//! The ranks of an MPI job as a [`Team`]: rsmpi over the MPI library mpirun or srun started
//! this process with. Only the main thread calls MPI (MPI_THREAD_FUNNELED): the engine's
//! workers never do.

use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;
use storlab_session::team::Team;

/// This process's place in the MPI job.
pub struct MpiTeam {
    // Dropping the universe finalizes MPI: it lives as long as the team.
    _universe: Universe,
    world: SimpleCommunicator,
    host: String,
    offset: f64,
}

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
    /// Joins the MPI job, and measures every rank's clock offset to rank 0.
    pub fn join() -> Result<MpiTeam, String> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or("MPI was already initialized in this process")?;
        let world = universe.world();
        let host = mpi::environment::processor_name().map_err(|e| format!("MPI cannot name this host: {e}"))?;
        let mut team = MpiTeam {
            _universe: universe,
            world,
            host,
            offset: 0.0,
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
