//! `wirerate report RUN_DIR`: renders `report.html`, `results.csv`, `summary.md` and
//! `summary.json` into the run directory and prints the summary table. `wirerate run` calls
//! [`render_run_dir`] when a run ends.

use std::fmt;
use std::path::{Path, PathBuf};

use bench::results::{read_records, RunInfo, RUN_JSON, TRIALS_JSONL};
use bench::runner::HOOKS_JSONL;
use report::HookRecord;

use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Run directory (holds run.json and trials.jsonl).
    pub run_dir: PathBuf,
    /// Write the files here instead of into the run directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// What a rendered report produced: the files and the table for the terminal.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Files written.
    pub files: Vec<PathBuf>,
    /// The terminal summary table (ends with a newline).
    pub table: String,
    /// True when the run is unfinished (killed, or still running).
    pub incomplete: bool,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table)?;
        for p in &self.files {
            writeln!(f, "wrote {}", p.display())?;
        }
        Ok(())
    }
}

/// Reads a run directory and analyses it (no files written).
pub fn load_run(dir: &Path) -> CliResult<report::Analysis> {
    let info_path = dir.join(RUN_JSON);
    let text = bench::files::read_text(&info_path).map_err(|e| {
        CliError::Usage(format!(
            "{}: {e}; give a run directory written by `wirerate run`",
            info_path.display()
        ))
    })?;
    let info: RunInfo = serde_json::from_str(&text)
        .map_err(|e| CliError::Failed(format!("{}: {e}", info_path.display())))?;
    let trials = dir.join(TRIALS_JSONL);
    let loaded = match read_records(&trials) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bench::results::Loaded {
            records: Vec::new(),
            torn_tail: false,
            good_len: 0,
        },
        Err(e) => return Err(CliError::Failed(format!("{}: {e}", trials.display()))),
    };
    let stats = report::dut_stats_from_hooks(&read_hooks(&dir.join(HOOKS_JSONL))?);
    Ok(report::analyse(report::RunInput {
        info: &info,
        records: &loaded.records,
        torn_tail: loaded.torn_tail,
        stats: &stats,
    }))
}

/// `hooks.jsonl`, if present; a torn last line is ignored like in `trials.jsonl`.
fn read_hooks(path: &Path) -> CliResult<Vec<HookRecord>> {
    let text = match bench::files::read_text(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CliError::Failed(format!("{}: {e}", path.display()))),
    };
    let complete = text.rfind('\n').map_or("", |i| &text[..i]);
    complete
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| CliError::Failed(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// Renders the report of the run in `dir` into `out` (the run directory when `None`).
pub fn render_to(dir: &Path, out: Option<&Path>) -> CliResult<Summary> {
    let analysis = load_run(dir)?;
    let out = out.unwrap_or(dir);
    std::fs::create_dir_all(out)
        .map_err(|e| CliError::Failed(format!("{}: {e}", out.display())))?;
    let mut files = Vec::new();
    for (name, bytes) in report::render_all(&analysis) {
        let path = out.join(name);
        // The rename below would replace a FIFO or device standing where the file goes.
        bench::files::check_output(&path)
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
        let tmp = out.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, &bytes)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
        files.push(path);
    }
    Ok(Summary {
        files,
        table: report::text::terminal(&analysis),
        incomplete: !analysis.completeness.is_complete(),
    })
}

/// Renders the report into the run directory itself: what `wirerate run` calls at the end.
pub fn render_run_dir(dir: &Path) -> CliResult<Summary> {
    render_to(dir, None)
}

pub fn run(args: ReportArgs) -> CliResult {
    let summary = match &args.out {
        None => render_run_dir(&args.run_dir)?,
        Some(out) => render_to(&args.run_dir, Some(out))?,
    };
    out!("{summary}");
    if summary.incomplete {
        errln!("wirerate: the run is unfinished; the report shows what it has and lists what is missing");
    }
    Ok(())
}
