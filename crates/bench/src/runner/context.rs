//! The state of one run as it goes: the plan, the testbed, the run directory, the resume
//! index, the progress callback and the lab DUT's switches as last set; hooks and records
//! are written through it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::executor::TrialExecutor;
use crate::hooks::{self, Hook, HookOutput};
use crate::plan::{Case, Methodology, Plan};
use crate::results::{MethodologyDone, Record, Resume, RunDir};

use super::*;

#[derive(Serialize)]
pub(super) struct HookLine<'a> {
    pub(super) case_id: Option<&'a str>,
    pub(super) profile: &'a str,
    pub(super) stage: &'a str,
    pub(super) finished_unix_ms: u64,
    pub(super) output: &'a HookOutput,
}

pub(super) struct Ctx<'p, 'o> {
    pub(super) plan: &'p Plan,
    pub(super) bed: Box<dyn TrialExecutor>,
    pub(super) run: RunDir,
    pub(super) hooks_file: File,
    pub(super) resume: Resume,
    pub(super) done_results: BTreeMap<(String, u32, Methodology), crate::search::SearchResult>,
    pub(super) opts: RunOptions<'o>,
    pub(super) summary: RunSummary,
    pub(super) started: Instant,
    pub(super) est_total: f64,
    pub(super) est_done: f64,
    /// The lab DUT's offload switch as last set by this run (`None`: not yet set), so it is
    /// switched only when a case asks for another setting.
    pub(super) lab_offload: Option<bool>,
    /// The lab profile last applied, and whether a case switched its fast path since: a
    /// case without the dimension then gets the profile re-applied (the fast path and the
    /// DUT's receive polls as the profile sets them), not the previous case's setting.
    pub(super) lab_profile: Option<lab::Profile>,
    pub(super) fastpath_switched: bool,
}

impl Ctx<'_, '_> {
    pub(super) fn stopped(&self) -> bool {
        self.opts.stop.load(Ordering::SeqCst)
    }

    pub(super) fn note(&mut self, m: String) {
        (self.opts.progress)(Event::Note(m));
    }

    /// A note in the run's log for each gateway the LAN health watch found silent during the
    /// trial of `rec` (the report says it again beside the figures).
    pub(super) fn note_lan_gaps(&mut self, rec: &TrialRecord) {
        for w in rec.lan_gaps() {
            let gaps: Vec<String> = w
                .gaps
                .iter()
                .map(|g| {
                    format!(
                        "{:.1} s from {:.1} s into the trial",
                        g.length_ms as f64 / 1e3,
                        g.start_ms as f64 / 1e3
                    )
                })
                .collect();
            self.note(format!(
                "{} rep {} trial {}: the gateway {} did not answer ARP/ND on port {} for {} (LAN watch): not a clean DUT figure",
                rec.key.case_id,
                rec.key.repetition,
                rec.key.index,
                w.gateway,
                w.port,
                gaps.join(", ")
            ));
        }
    }

    pub(super) fn eta(&self) -> Duration {
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = (self.est_total - self.est_done).max(0.0);
        let scale = if self.est_done > 1.0 && elapsed > 1.0 {
            elapsed / self.est_done
        } else {
            1.0
        };
        Duration::from_secs_f64(left * scale)
    }

    pub(super) fn record_hook(
        &mut self,
        case: Option<&Case>,
        profile: &str,
        stage: &str,
        out: &HookOutput,
    ) {
        let line = HookLine {
            case_id: case.map(|c| c.id.as_str()),
            profile,
            stage,
            finished_unix_ms: now_ms(),
            output: out,
        };
        if let Ok(mut v) = serde_json::to_vec(&line) {
            v.push(b'\n');
            let _ = self.hooks_file.write_all(&v);
            let _ = self.hooks_file.sync_data();
        }
    }

    /// Runs `list`; a failing hook is an error when `fatal` (setup), else recorded and noted.
    pub(super) fn run_hooks(
        &mut self,
        case: Option<&Case>,
        profile: &str,
        stage: &str,
        list: &[Hook],
        env: &[(String, String)],
        fatal: bool,
    ) -> Result<(), RunError> {
        for hook in list {
            let out = hooks::run(&self.plan.dut.exec, hook, env, HOOK_TIMEOUT)
                .map_err(|e| failed(format!("{stage} hook `{}`: {e}", hook.command)))?;
            self.record_hook(case, profile, stage, &out);
            if !out.success() {
                let m = format!(
                    "{stage} hook `{}` of profile {profile} failed (status {:?}): {}",
                    hook.command,
                    out.status,
                    out.stderr.trim()
                );
                if fatal {
                    return Err(failed(m));
                }
                self.note(m);
            }
        }
        Ok(())
    }

    pub(super) fn append(&mut self, r: &Record) -> Result<(), RunError> {
        self.run
            .append(r)
            .map_err(|e| failed(format!("{}: {e}", self.run.path().display())))
    }

    /// Records `m` of `case`, repetition `rep`, as finished without a result (it failed, or
    /// had nothing to measure), and tells the progress display.
    pub(super) fn done_without_result(
        &mut self,
        case: &Case,
        rep: u32,
        m: Methodology,
    ) -> Result<(), RunError> {
        let d = MethodologyDone {
            case_id: case.id.clone(),
            repetition: rep,
            methodology: m,
            result: None,
            ceiling: None,
            line_pps: None,
        };
        self.append(&Record::Done(d.clone()))?;
        (self.opts.progress)(Event::Done(&d));
        Ok(())
    }
}
