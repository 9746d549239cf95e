//! `wirerate trial` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct TrialArgs {}

pub fn run(_args: TrialArgs) -> CliResult {
    Err(CliError::Failed("trial: not implemented yet".into()))
}
