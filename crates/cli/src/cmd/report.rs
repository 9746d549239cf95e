//! `wirerate report` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> CliResult {
    Err(CliError::Failed("report: not implemented yet".into()))
}
