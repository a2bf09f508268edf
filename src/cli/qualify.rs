//! The flags of `storlab qualify`: the request's own are declared in crates/qualify
//! (`QualifyFlags`); here only what the binary does with its output.

use clap::Args;

use super::OutputArgs;

#[derive(Args, Debug)]
pub struct QualifyArgs {
    #[command(flatten)]
    pub plan: storlab_qualify::QualifyFlags,
    /// No line per repetition on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}
