//! `wirerate plan` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct PlanArgs {}

pub fn run(_args: PlanArgs) -> CliResult {
    Err(CliError::Failed("plan: not implemented yet".into()))
}
