//! `wirerate lab …`: bring the built-in namespace lab up and down (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct LabArgs {}

pub fn run(_args: LabArgs) -> CliResult {
    Err(CliError::Failed("lab: not implemented yet".into()))
}
