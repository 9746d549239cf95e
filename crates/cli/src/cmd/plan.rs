//! `wirerate plan check PLAN`: validate a plan and print its expanded matrix with a time
//! estimate. Nothing is sent and nothing is created.

use crate::error::{CliError, CliResult};
use bench::plan::Plan;
use std::path::PathBuf;

/// Work with plan files.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  wirerate plan check plans/lab-demo.toml")]
pub struct PlanArgs {
    #[command(subcommand)]
    command: PlanCommand,
}

#[derive(Debug, clap::Subcommand)]
enum PlanCommand {
    /// Check a plan (errors name file, line and key) and print its cases and a time estimate.
    Check {
        /// The plan file (TOML).
        plan: PathBuf,
        /// Print only the summary line, not every case.
        #[arg(long)]
        quiet: bool,
    },
}

/// Loads and checks `path`; all errors at once, one per line, as a usage error (exit 2).
pub fn load(path: &std::path::Path) -> CliResult<(Plan, String)> {
    let plan = Plan::load(path).map_err(|e| CliError::Usage(format!("plan errors:\n{e}")))?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    Ok((plan, text))
}

fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    format!("{}m{:02}s", s / 60, s % 60)
}

pub fn run(args: PlanArgs) -> CliResult {
    let PlanCommand::Check { plan, quiet } = args.command;
    let (p, _) = load(&plan)?;
    let cases = p
        .cases()
        .map_err(|e| CliError::Usage(format!("plan errors:\n{e}")))?;
    let est = p
        .estimate()
        .map_err(|e| CliError::Usage(format!("plan errors:\n{e}")))?;
    if !quiet {
        println!(
            "{:>4}  {:<40} {:<40} {:>7} {:>8}",
            "#", "case", "methodologies", "trials", "seconds"
        );
        for (i, c) in cases.iter().enumerate() {
            let (t, s) = p.case_estimate(c);
            let ms: Vec<&str> = c.methodologies.iter().map(|m| m.name()).collect();
            println!(
                "{:>4}  {:<40} {:<40} {:>7} {:>8.1}",
                i + 1,
                c.id,
                ms.join(","),
                t,
                s
            );
        }
    }
    println!(
        "{}: OK — {} cases, {} profile switches, ~{} trials, estimated {} (trials and settles; lab setup and engine start-up come on top)",
        p.name,
        est.cases,
        est.profile_switches,
        est.trials,
        duration(est.seconds)
    );
    Ok(())
}
