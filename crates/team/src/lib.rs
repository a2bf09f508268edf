//! storlab across many processes. [`launched`] tells from the environment whether mpirun
//! (OpenMPI, MPICH's Hydra) or srun started this process as one of several ranks, so that a
//! storlab built without MPI can refuse instead of running N independent copies that each
//! store a run. With the `mpi` feature, `mpi::MpiTeam` is those ranks as a
//! [`storlab_session::team::Team`]: rank, size, host, each rank's clock offset to rank 0
//! (measured by a ping-pong at start), and gathering bytes on rank 0 or on all.
#![deny(missing_docs)]

#[cfg(feature = "mpi")]
pub mod mpi;

/// How this process was started as one of several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Its rank.
    pub rank: u32,
    /// How many ranks.
    pub size: u32,
    /// Which launcher said so (the environment variable read).
    pub by: &'static str,
}

/// This process's rank and the number of ranks, when a launcher set them: OpenMPI's mpirun
/// (`OMPI_COMM_WORLD_SIZE`), MPICH's Hydra or srun with PMI-2 (`PMI_SIZE`), or a Slurm step
/// (`SLURM_STEP_NUM_TASKS`; not `SLURM_NTASKS`, which a batch script has before any srun).
pub fn launched() -> Option<Launch> {
    launched_from(|k| std::env::var(k).ok())
}

fn launched_from(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    let num = |k: &str| var(k).and_then(|v| v.trim().parse::<u32>().ok());
    [
        ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
        ("PMI_SIZE", "PMI_RANK"),
        ("SLURM_STEP_NUM_TASKS", "SLURM_PROCID"),
    ]
    .into_iter()
    .find_map(|(size, rank)| {
        Some(Launch {
            size: num(size)?,
            rank: num(rank).unwrap_or(0),
            by: size,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmpi_mpich_and_slurm_steps_are_told_and_a_batch_script_is_not() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let l = launched_from(env(&[("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_RANK", "2")])).unwrap();
        assert_eq!((l.rank, l.size, l.by), (2, 4, "OMPI_COMM_WORLD_SIZE"));
        let l = launched_from(env(&[("PMI_SIZE", "8"), ("PMI_RANK", "7")])).unwrap();
        assert_eq!((l.rank, l.size), (7, 8));
        let l = launched_from(env(&[("SLURM_STEP_NUM_TASKS", "48"), ("SLURM_PROCID", "5")])).unwrap();
        assert_eq!((l.rank, l.size), (5, 48));
        // An sbatch script with 48 tasks, before srun: one process, not a rank.
        assert_eq!(
            launched_from(env(&[("SLURM_NTASKS", "48"), ("SLURM_PROCID", "0")])),
            None
        );
        assert_eq!(launched_from(env(&[])), None);
    }
}
