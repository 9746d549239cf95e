//! `wirerate bench` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

pub fn run(_args: BenchArgs) -> CliResult {
    Err(CliError::Failed("bench: not implemented yet".into()))
}
