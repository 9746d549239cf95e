//! `wirerate linerate` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct LinerateArgs {}

pub fn run(_args: LinerateArgs) -> CliResult {
    Err(CliError::Failed("linerate: not implemented yet".into()))
}
