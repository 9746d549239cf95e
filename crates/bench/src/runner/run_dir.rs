//! The run directory as a run starts: created with its `run.json` (the plan's typed facts
//! included), or reopened for `--resume` after checking the plan is the same; its default name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::plan::{Case, Plan};
use crate::results::{Record, Resume, RunDir, RunInfo};

use super::*;

/// The run directory as the run starts: new, or resumed with the records already in it.
pub(super) struct Opened {
    pub(super) dir: RunDir,
    pub(super) resume: Resume,
    pub(super) records: Vec<Record>,
}

/// Creates the run directory, or opens it for `--resume` after checking that the plan is the
/// one the run started with.
pub(super) fn open_run_dir(
    plan: &Plan,
    plan_text: &str,
    cases: &[Case],
    links: &[crate::port_link::PortLink],
    opts: &mut RunOptions<'_>,
) -> Result<Opened, RunError> {
    let opened = if opts.resume {
        let (rd, info, resume) = RunDir::resume(&opts.dir)
            .map_err(|e| failed(format!("--resume {}: {e}", opts.dir.display())))?;
        if info.plan_text != plan_text {
            // Trials measured under one plan must not be continued under another: the run's
            // run.json (and so its report) would describe a plan that some trials did not
            // follow. A change the parsed plan does not see (comments, layout) is fine.
            let same = Plan::parse_unexpanded(&info.plan_text, &plan.file)
                .is_ok_and(|old| old.same_measurements(plan));
            if !same {
                return Err(failed(format!(
                    "--resume {}: {} differs from the plan this run started with (kept in its {}); --resume continues the same plan: restore it, or start a new run without --resume",
                    opts.dir.display(),
                    plan.file,
                    crate::results::RUN_JSON
                )));
            }
            (opts.progress)(Event::Note(
                "the plan file's comments or layout changed since the run started; the plan itself did not".into(),
            ));
        }
        let records = rd.records().map_err(failed)?;
        Opened {
            dir: rd,
            resume,
            records,
        }
    } else {
        let info = RunInfo {
            plan_name: plan.name.clone(),
            plan_text: plan_text.to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            started_unix: now_ms() / 1000,
            host: host_facts(),
            facts: Some(crate::results::RunFacts {
                links: links.to_vec(),
                ..crate::results::RunFacts::of(plan, cases)
            }),
        };
        let rd = RunDir::create(&opts.dir, &info).map_err(failed)?;
        Opened {
            dir: rd,
            resume: Resume::default(),
            records: Vec::new(),
        }
    };
    std::fs::create_dir_all(opts.dir.join(IPERF3_DIR)).map_err(failed)?;
    Ok(opened)
}

pub(super) fn host_facts() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        m.insert("kernel".into(), k.trim().to_string());
    }
    m.insert(
        "cpus".into(),
        std::thread::available_parallelism()
            .map_or(0, |n| n.get())
            .to_string(),
    );
    if let Ok(o) = Command::new("iperf3").arg("--version").output() {
        let t = String::from_utf8_lossy(&o.stdout);
        if let Some(l) = t.lines().next() {
            m.insert("iperf3".into(), l.trim().to_string());
        }
    }
    m
}

/// `runs/<plan>-<YYYYmmdd-HHMMSS>` (UTC) under `base`.
pub fn default_dir(base: &Path, plan_name: &str) -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, mo, d) = civil_from_days(days as i64);
    base.join(format!(
        "{plan_name}-{y:04}{mo:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
pub(super) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn default_dir_is_dated() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_000), (2024, 10, 4));
        let d = default_dir(Path::new("runs"), "lab-demo");
        let s = d.to_string_lossy();
        assert!(s.starts_with("runs/lab-demo-2"), "{s}");
        assert_eq!(s.len(), "runs/lab-demo-20261122-074500".len());
    }
}
