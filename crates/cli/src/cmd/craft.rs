//! `wirerate craft` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct CraftArgs {}

pub fn run(_args: CraftArgs) -> CliResult {
    Err(CliError::Failed("craft: not implemented yet".into()))
}
