//! `wirerate calibrate` (being written).

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {}

pub fn run(_args: CalibrateArgs) -> CliResult {
    Err(CliError::Failed("calibrate: not implemented yet".into()))
}
