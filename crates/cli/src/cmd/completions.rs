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
    // Generated into memory first: clap_complete panics when its writer fails, and
    // `wirerate completions bash | head -1` closes standard output early (issue 19 row 1).
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "wirerate", &mut script);
    {
        use std::io::Write as _;
        let _ = std::io::stdout().write_all(&script);
    }
    Ok(())
}
