//! `wirerate compare RUN_A RUN_B`: per case, improved / regressed / within noise
//! (`report::compare` judges; docs/report.md, "compare", says how).

use std::path::PathBuf;

use crate::cmd::report::load_run;
use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The earlier (reference) run directory.
    pub run_a: PathBuf,
    /// The later run directory.
    pub run_b: PathBuf,
    /// Smallest relative change that counts, in percent. The change must also be more than
    /// noise: with 3 or more repetitions per side a t-test over them that counts the runs'
    /// drift as noise too, Holm-adjusted over all the cases, at p < 0.05; with fewer, beyond
    /// the noise of both figures (tentative).
    #[arg(long, default_value_t = 5.0, value_name = "PERCENT")]
    pub threshold: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Exit with status 1 when any case regressed (tentative regressions included), or when
    /// nearly every case is slower alike (a shift the per-case test counts as drift).
    #[arg(long)]
    pub fail_on_regression: bool,
}

pub fn run(args: CompareArgs) -> CliResult {
    if !(args.threshold.is_finite() && args.threshold >= 0.0) {
        return Err(CliError::Usage(format!(
            "--threshold {} is not a percentage; give e.g. --threshold 5",
            args.threshold
        )));
    }
    let a = load_run(&args.run_a)?;
    let b = load_run(&args.run_b)?;
    let t = args.threshold / 100.0;
    let rows = report::compare(&a, &b, t);
    let drift = report::drift(&a, &b, t);
    if args.json {
        // The JSON stays the rows; what makes the runs unlike goes to standard error.
        for c in report::caveats(&a, &b)
            .into_iter()
            .chain(report::drift_caveats(&drift, t))
        {
            errln!("wirerate: compare: CAVEAT: {c}");
        }
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| CliError::Failed(e.to_string()))?
        );
    } else {
        out!("{}", report::compare_text(&a, &b, &rows, t));
    }
    let regressed = rows
        .iter()
        .filter(|r| r.verdict == report::Verdict::Regressed)
        .count();
    if args.fail_on_regression && regressed > 0 {
        return Err(CliError::Failed(format!("{regressed} case(s) regressed")));
    }
    // Nearly every case slower alike: the per-case test counts it as drift, not a verdict.
    if args.fail_on_regression && drift.uniform() && drift.median_shift_percent < -args.threshold {
        return Err(CliError::Failed(format!(
            "B is {:.1} % slower than A in {} of {} cases alike",
            -drift.median_shift_percent, drift.alike, drift.cases
        )));
    }
    Ok(())
}
