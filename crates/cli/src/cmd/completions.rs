//! `wirerate completions SHELL`: shell completions generated from the same clap definition
//! as `--help`, so they can never drift from the real flags.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to write a completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(args: CompletionsArgs) -> CliResult {
    let mut cmd = crate::Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "wirerate", &mut std::io::stdout());
    Ok(())
}
