//! The flags of `storlab challenge …`: a challenge's definition and the pools a host names.

use clap::{Args, Subcommand};

use super::OutputArgs;

/// A challenge's definition: crates/challenge's flags.
pub type ChallengeSpecArgs = storlab_challenge::spec::SpecFlags;

#[derive(Subcommand, Debug)]
pub enum ChallengeCmd {
    /// Define a challenge and run it on this host to its end: `storlab challenge run --pool
    /// P1=/data1 --pool P2=/data2 --writers 4 --readers 4 --file-size 2g --bs 1m --duration 5d`
    Run {
        #[command(flatten)]
        spec: ChallengeSpecArgs,
        /// Show statistics in MiB/s (default MB/s, as the seed).
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Define a challenge for agents on many hosts; prints its id. Use a PostgreSQL database
    /// (--db postgres://...) that every client reaches.
    Create {
        #[command(flatten)]
        spec: ChallengeSpecArgs,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Take part in a challenge from this host: writers and readers take work from the
    /// catalogue. The pools must be named here as the challenge names them.
    Agent(AgentArgs),
    /// Go on with a challenge after this host's process was killed: its partly written files
    /// are removed and written again, its files being read wait again.
    Resume(AgentArgs),
    /// The statistics of a challenge in the seed's shape: MAX, MIN, AVG (SD, SD/AVG %) of the
    /// long-term averages, total and per pool, read, write and both.
    Stats {
        /// The challenge's id.
        id: i64,
        #[command(flatten)]
        ask: storlab_challenge::stats::Ask,
        /// MiB/s instead of MB/s.
        #[arg(long)]
        mib: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// The challenges in the database, newest first: state, pools, shape, runs that took part.
    List {
        #[command(flatten)]
        output: OutputArgs,
    },
    /// A challenge's state: its definition, the catalogue's account, the files that did not
    /// end well, the hosts and the events.
    Show {
        /// The challenge's id.
        id: i64,
        /// Include every sample (JSON): host, interval, bytes per pool.
        #[arg(long)]
        samples: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
}

/// `storlab challenge agent` and `resume`: a host taking part in a challenge.
#[derive(Args, Debug)]
pub struct AgentArgs {
    /// The challenge's id.
    pub id: i64,
    #[command(flatten)]
    pub pools: storlab_challenge::share::HostFlags,
    /// Show statistics in MiB/s.
    #[arg(long)]
    pub mib: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}
