//! The flags of `storlab meta` and its `walk` and `untar`.

use clap::{Args, Subcommand};
use storlab_model::run::{parse_tag, Tag};

use super::OutputArgs;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct MetaArgs {
    /// The other metadata measurements.
    #[command(subcommand)]
    pub what: Option<MetaCmd>,
    #[command(flatten)]
    pub workload: storlab_meta::job::MetaFlags,
    #[command(flatten)]
    pub record: MetaRecordArgs,
}

/// What every `storlab meta` command stores its runs with, and how it shows them: shared by
/// `meta`, `meta walk` and `meta untar`.
#[derive(Args, Debug)]
pub struct MetaRecordArgs {
    /// A tag stored with the runs, e.g. fs=lustre; repeatable.
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_tag)]
    pub tags: Vec<Tag>,
    /// No status line on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Subcommand, Debug)]
pub enum MetaCmd {
    /// Time a walk of every entry below DIR (storlab scan's walker; seed 004's "du over a
    /// million files"), and with --compare-du `du -s DIR` in the same run; stored as a run of
    /// kind meta.
    Walk(WalkArgs),
    /// Extract N copies of an archive at once, for each N of --concurrency (seed 004's
    /// concurrent untars of a kernel source tree): time, entries/s and MiB/s against the
    /// concurrency, stored as one study; --generate kernel-like makes the archive.
    Untar(UntarArgs),
}

#[derive(Args, Debug)]
pub struct UntarArgs {
    #[command(flatten)]
    pub untar: storlab_meta::untar::UntarFlags,
    #[command(flatten)]
    pub record: MetaRecordArgs,
}

#[derive(Args, Debug)]
pub struct WalkArgs {
    #[command(flatten)]
    pub walk: storlab_meta::record::WalkFlags,
    #[command(flatten)]
    pub record: MetaRecordArgs,
}
