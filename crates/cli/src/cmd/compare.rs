//! `wirerate compare` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct CompareArgs {}

pub fn run(_args: CompareArgs) -> CliResult {
    Err(CliError::Failed("compare: not implemented yet".into()))
}
