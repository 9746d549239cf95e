//! `wirerate run` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> CliResult {
    Err(CliError::Failed("run: not implemented yet".into()))
}
