//! The executor: runs every case of a plan on the lab, unattended, and records every trial.
//!
//! Order of work (DESIGN.md §7, issue 5):
//!
//! 1. [`preflight`]: everything that can be checked before traffic — lab profiles known to
//!    this kernel, every hook command present (locally, or on the DUT over ssh, after an ssh
//!    reachability check), iperf3 and tcpdump for TCP cases.
//! 2. The lab is (re)built, so nothing a killed run left behind (an iperf3 server, a capture)
//!    survives into this one.
//! 3. Per profile: the lab profile, setup hooks, `profile-settle`; per case: stats-before hooks
//!    and samplers, every repetition × methodology (a search driven trial by trial, each trial
//!    appended to `trials.jsonl` and synced before the next one starts, a `done` record after
//!    each methodology), stats-after hooks; then the profile's teardown hooks.
//! 4. The lab is removed, also on error and on Ctrl-C (the trial in flight is aborted and not
//!    recorded; teardown hooks still run).
//!
//! `--resume` skips finished (case, repetition, methodology) entries and replays the recorded
//! trials of an unfinished search (see [`crate::search::replay`]): nothing finished is lost or
//! measured again.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use wire::encap::IpVersion;
use wire::units::BitsPerSec;

use crate::calibration::Calibration;
use crate::executor::TrialExecutor;
use crate::hooks::{self, Exec, Hook, HookOutput, Sampler};
use crate::iperf3::{self, ClientOptions};
use crate::plan::{Case, DutKind, Methodology, Plan, Protocol};
use crate::results::{
    CeilingCheck, ConnDone, ConnTrialRecord, MethodologyDone, Record, Resume, RunDir, RunInfo,
    TcpFigures, TrialKey, TrialRecord,
};
use crate::search::{LatencySearch, LineFraction, Outcome, Search, Status, TrialRequest};
use crate::testbed::{Iperf3Ends, Testbed};

/// Hook commands (setup, stats) are killed after this long.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(120);
/// The TCP port of the iperf3 server wirerate starts in the far tester namespace.
pub const IPERF3_PORT: u16 = 5201;
/// File in the run directory with every hook's raw (and parsed) output, one JSON per line.
pub const HOOKS_JSONL: &str = "hooks.jsonl";
/// Directory in the run directory with each iperf3 trial's raw `-J` output.
pub const IPERF3_DIR: &str = "iperf3";

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunError {
    /// Found before any traffic: the plan cannot run here (a missing command, an unreachable
    /// host, an unsupported profile).
    Preflight(Vec<String>),
    /// Ctrl-C or SIGTERM: stopped cleanly, the results so far are kept.
    Interrupted,
    /// Something failed while running (the lab, a setup hook, the results directory).
    Failed(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Preflight(v) => write!(f, "the plan cannot run here: {}", v.join("; ")),
            RunError::Interrupted => f.write_str("interrupted; resume with --resume"),
            RunError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

fn failed(m: impl std::fmt::Display) -> RunError {
    RunError::Failed(m.to_string())
}

/// What happened, for a progress display.
#[derive(Debug)]
pub enum Event<'a> {
    /// A case starts (`index` from 1 of `cases`); `skipped` when resume found it finished.
    Case {
        /// 1-based.
        index: usize,
        /// Number of cases.
        cases: usize,
        /// The case.
        case: &'a Case,
        /// Finished in an earlier run.
        skipped: bool,
    },
    /// A trial was recorded.
    Trial {
        /// 1-based case index.
        index: usize,
        /// Number of cases.
        cases: usize,
        /// The record as written.
        record: &'a TrialRecord,
        /// Estimated time left.
        eta: Duration,
    },
    /// A methodology finished.
    Done(&'a MethodologyDone),
    /// Something worth a line (profile switches, recoverable failures).
    Note(String),
}

/// How to run.
pub struct RunOptions<'a> {
    /// The run directory.
    pub dir: PathBuf,
    /// Continue the run in `dir` instead of creating one.
    pub resume: bool,
    /// The tester's ceiling, if calibrated.
    pub calibration: Option<Calibration>,
    /// Set to stop (Ctrl-C): the trial in flight is aborted, teardown runs.
    pub stop: &'a AtomicBool,
    /// Progress callback.
    pub progress: &'a mut dyn FnMut(Event<'_>),
}

/// What a finished run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Trials measured in this invocation.
    pub trials_run: u64,
    /// Trials found already recorded (resume).
    pub trials_replayed: u64,
    /// Methodologies that failed (engine or iperf3 errors), with the reason; they are not
    /// marked done, so `--resume` retries them.
    pub failures: Vec<String>,
    /// Wall-clock time.
    pub elapsed: Duration,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Sleeps `d`, waking early when `stop` is set; false if stopped.
fn nap(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(20)));
    }
    !stop.load(Ordering::SeqCst)
}

// ---------------------------------------------------------------------------------------------
// Preflight

/// The program a hook command starts: its first word after `VAR=value` assignments and
/// `sudo`/`env`/`exec`/`timeout N` prefixes. `None` for a command that starts with shell syntax.
pub fn hook_program(command: &str) -> Option<String> {
    let mut words = command.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w.contains('=') && !w.starts_with('=') && !w.starts_with('/') {
            continue;
        }
        match w {
            "sudo" | "env" | "exec" | "nice" | "nohup" => continue,
            "timeout" => {
                words.next();
                continue;
            }
            _ => {}
        }
        let first = w.trim_start_matches('(');
        if first.is_empty() || first.starts_with(['{', '!', '$', '`', '"', '\'']) {
            return None;
        }
        return Some(first.trim_end_matches(';').to_string());
    }
    None
}

fn ssh_reachable(host: &str, port: Option<u16>) -> Result<(), String> {
    let mut c = Command::new("ssh");
    c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=3"]);
    if let Some(p) = port {
        c.args(["-p", &p.to_string()]);
    }
    c.args(["--", host, "true"]).stdin(Stdio::null());
    let out = c
        .output()
        .map_err(|e| format!("cannot run ssh to check DUT host `{host}`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why
            .trim()
            .lines()
            .last()
            .unwrap_or("ssh failed")
            .to_string();
        Err(format!(
            "DUT host `{host}` is unreachable over ssh (`ssh -o BatchMode=yes -o ConnectTimeout=3 {host} true`: {why})"
        ))
    }
}

/// Whether `program` exists where `exec` runs hooks (for a namespace: on this host, since
/// namespaces share the file system).
fn program_exists(exec: &Exec, program: &str) -> Result<bool, String> {
    let check = format!("command -v {} >/dev/null 2>&1", hooks::shell_quote(program));
    let argv = match exec {
        Exec::Ssh { .. } => exec.argv(&check, &[]),
        _ => Exec::Local.argv(&check, &[]),
    };
    let st = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    Ok(st.success())
}

/// One thing a preflight check found wrong: the plan key it concerns and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key as plan errors spell it (`dut.profiles.napt.setup[0]`), when one is to blame.
    pub key: Option<String>,
    pub message: String,
}

impl Problem {
    fn at(key: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            key: Some(key.into()),
            message: message.into(),
        }
    }

    fn general(message: impl Into<String>) -> Problem {
        Problem {
            key: None,
            message: message.into(),
        }
    }

    /// `file:line:col: `key`: message` where the key is found in the plan's `text`, as plan
    /// errors read; else `file: `key`: message`.
    pub fn describe(&self, file: &str, text: &str) -> String {
        match &self.key {
            Some(k) => match crate::plan::locate(text, k) {
                Some((line, col)) => format!("{file}:{line}:{col}: `{k}`: {}", self.message),
                None => format!("{file}: `{k}`: {}", self.message),
            },
            None => format!("{file}: {}", self.message),
        }
    }
}

/// Methodologies in the plan's matrix that the runner cannot execute yet, each at its place
/// in the plan with what is missing ([`crate::plan::Methodology::executable`]). `run` refuses
/// the plan for them, and so does `plan check` after printing its cases and estimate.
pub fn not_yet_executable(plan: &Plan) -> Vec<Problem> {
    plan.not_yet_executable()
        .into_iter()
        .map(|(key, msg)| Problem::at(key, msg))
        .collect()
}

/// The checks that need no root and create nothing, which `wirerate plan check` runs too: the
/// plan's real interfaces exist, the DUT host answers over ssh, every hook's program exists
/// where the hook runs, iperf3 and tcpdump for TCP cases. Every problem found is listed.
pub fn host_checks(plan: &Plan, cases: &[Case]) -> Vec<Problem> {
    let mut problems: Vec<Problem> = crate::testbed::preflight(plan)
        .into_iter()
        .map(|(key, msg)| Problem::at(key, msg))
        .collect();
    let mut host_ok = true;
    if let Exec::Ssh { host, port } = &plan.dut.exec {
        if let Err(e) = ssh_reachable(host, *port) {
            problems.push(Problem::at("dut.ssh", e));
            host_ok = false;
        }
    }
    if host_ok {
        let mut checked: BTreeMap<String, bool> = BTreeMap::new();
        for p in &plan.dut.profiles {
            let h = &p.hooks;
            for (stage, list) in [
                ("setup", &h.setup),
                ("teardown", &h.teardown),
                ("stats-before", &h.stats_before),
                ("stats-after", &h.stats_after),
                ("samplers", &h.samplers),
            ] {
                for (i, hook) in list.iter().enumerate() {
                    let Some(prog) = hook_program(&hook.command) else {
                        continue;
                    };
                    let ok = *checked
                        .entry(prog.clone())
                        .or_insert_with(|| program_exists(&plan.dut.exec, &prog).unwrap_or(false));
                    if !ok {
                        let place = match &plan.dut.exec {
                            Exec::Ssh { host, .. } => format!("on {host}"),
                            _ => "on this host".to_string(),
                        };
                        problems.push(Problem::at(
                            format!("dut.profiles.{}.{stage}[{i}]", p.name),
                            format!("command `{prog}` not found {place} (in `{}`)", hook.command),
                        ));
                    }
                }
            }
        }
    }
    if cases
        .iter()
        .any(|c| c.methodologies.contains(&Methodology::Iperf3))
    {
        for tool in ["iperf3", "tcpdump"] {
            if !program_exists(&Exec::Local, tool).unwrap_or(false) {
                problems.push(Problem::general(format!(
                    "iperf3 cases need `{tool}` on this host (scripts/install-deps.sh)"
                )));
            }
        }
    }
    problems
}

/// The checks that need root: the kernel features each lab profile needs (probed in a scratch
/// namespace).
pub fn root_checks(plan: &Plan) -> Vec<Problem> {
    let mut problems = Vec::new();
    if plan.dut.kind == DutKind::Lab {
        for p in &plan.dut.profiles {
            let name = p.lab.as_deref().unwrap_or(&p.name);
            let key = format!("dut.profiles.{}", p.name);
            match lab::Profile::parse(name) {
                Ok(lp) => {
                    if let Err(e) = lab::probe::require(&lp) {
                        problems.push(Problem::at(key, e.to_string()));
                    }
                }
                Err(e) => problems.push(Problem::at(key, e.to_string())),
            }
        }
    }
    problems
}

/// Everything that can be checked before any traffic is sent ([`host_checks`] and
/// [`root_checks`]); every problem found is listed, located in the plan's `text`.
pub fn preflight(plan: &Plan, cases: &[Case], text: &str) -> Result<(), RunError> {
    let mut problems = not_yet_executable(plan);
    problems.extend(root_checks(plan));
    problems.extend(host_checks(plan, cases));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(RunError::Preflight(
            problems
                .iter()
                .map(|p| p.describe(&plan.file, text))
                .collect(),
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Run

#[derive(Serialize)]
struct HookLine<'a> {
    case_id: Option<&'a str>,
    profile: &'a str,
    stage: &'a str,
    finished_unix_ms: u64,
    output: &'a HookOutput,
}

struct Ctx<'p, 'o> {
    plan: &'p Plan,
    bed: Box<dyn TrialExecutor>,
    run: RunDir,
    hooks_file: File,
    resume: Resume,
    done_results: BTreeMap<(String, u32, Methodology), crate::search::SearchResult>,
    opts: RunOptions<'o>,
    summary: RunSummary,
    started: Instant,
    est_total: f64,
    est_done: f64,
    /// The lab DUT's offload switch as last set by this run (`None`: not yet set), so it is
    /// switched only when a case asks for another setting.
    lab_offload: Option<bool>,
    /// The lab profile last applied, and whether a case switched its fast path since: a
    /// case without the dimension then gets the profile re-applied (the fast path and the
    /// DUT's receive polls as the profile sets them), not the previous case's setting.
    lab_profile: Option<lab::Profile>,
    fastpath_switched: bool,
}

impl Ctx<'_, '_> {
    fn stopped(&self) -> bool {
        self.opts.stop.load(Ordering::SeqCst)
    }

    fn note(&mut self, m: String) {
        (self.opts.progress)(Event::Note(m));
    }

    fn eta(&self) -> Duration {
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = (self.est_total - self.est_done).max(0.0);
        let scale = if self.est_done > 1.0 && elapsed > 1.0 {
            elapsed / self.est_done
        } else {
            1.0
        };
        Duration::from_secs_f64(left * scale)
    }

    fn record_hook(&mut self, case: Option<&Case>, profile: &str, stage: &str, out: &HookOutput) {
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
    fn run_hooks(
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

    fn append(&mut self, r: &Record) -> Result<(), RunError> {
        self.run
            .append(r)
            .map_err(|e| failed(format!("{}: {e}", self.run.path().display())))
    }
}

/// Runs `plan` (its text is `plan_text`, its expanded cases `cases`: the caller expands the
/// matrix once, [`Plan::parse_expanded`]) as `opts` says.
pub fn run(
    plan: &Plan,
    plan_text: &str,
    cases: &[Case],
    mut opts: RunOptions<'_>,
) -> Result<RunSummary, RunError> {
    preflight(plan, cases, plan_text)?;
    let opened = open_run_dir(plan, plan_text, cases, &mut opts)?;
    // The lab (rebuilt, so nothing a killed run left survives), or the real interfaces with
    // their PPPoE sessions up; nothing has been sent when this fails.
    let bed = match Testbed::up(plan, &opts.dir, opts.stop) {
        Ok(b) => b,
        Err(_) if opts.stop.load(Ordering::SeqCst) => return Err(RunError::Interrupted),
        Err(e) => return Err(failed(e)),
    };
    run_on(Box::new(bed), plan, cases, opened, opts)
}

/// The run directory as the run starts: new, or resumed with the records already in it.
struct Opened {
    dir: RunDir,
    resume: Resume,
    records: Vec<Record>,
}

/// Creates the run directory, or opens it for `--resume` after checking that the plan is the
/// one the run started with.
fn open_run_dir(
    plan: &Plan,
    plan_text: &str,
    cases: &[Case],
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
            facts: Some(crate::results::RunFacts::of(plan, cases)),
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

/// Runs `cases` of `plan` on `bed` into the run directory (created or resumed, with its
/// records), and takes `bed` down at the end whatever happened.
fn run_on(
    bed: Box<dyn TrialExecutor>,
    plan: &Plan,
    cases: &[Case],
    opened: Opened,
    opts: RunOptions<'_>,
) -> Result<RunSummary, RunError> {
    let Opened {
        dir: run_dir,
        resume,
        records,
    } = opened;
    let mut done_results = BTreeMap::new();
    for r in &records {
        if let Record::Done(d) = r {
            if let Some(res) = &d.result {
                done_results.insert(
                    (d.case_id.clone(), d.repetition, d.methodology),
                    res.clone(),
                );
            }
        }
    }
    let hooks_file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(opts.dir.join(HOOKS_JSONL))
        .map_err(|e| failed(format!("{HOOKS_JSONL}: {e}")))?;
    let est_total = cases.iter().map(|c| plan.case_estimate(c).1).sum();
    let mut ctx = Ctx {
        plan,
        bed,
        run: run_dir,
        hooks_file,
        resume,
        done_results,
        opts,
        summary: RunSummary::default(),
        started: Instant::now(),
        est_total,
        est_done: 0.0,
        lab_offload: None,
        lab_profile: None,
        fastpath_switched: false,
    };
    // Every trial found in the run directory is kept (finished cases' and unfinished ones').
    ctx.summary.trials_replayed = records
        .iter()
        .filter(|r| matches!(r, Record::Trial(_) | Record::ConnTrial(_)))
        .count() as u64;
    let result = run_cases(&mut ctx, cases);
    let down = ctx.bed.down();
    let mut summary = ctx.summary;
    summary.elapsed = ctx.started.elapsed();
    result?;
    down.map_err(failed)?;
    Ok(summary)
}

fn host_facts() -> BTreeMap<String, String> {
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

fn case_finished(ctx: &Ctx, case: &Case) -> bool {
    (0..ctx.plan.run.repetitions).all(|rep| {
        case.methodologies
            .iter()
            .all(|m| ctx.resume.is_done(&case.id, rep, *m))
    })
}

fn run_cases(ctx: &mut Ctx, cases: &[Case]) -> Result<(), RunError> {
    let total = cases.len();
    let mut i = 0;
    while i < cases.len() {
        let profile_name = cases[i].profile.clone();
        let end = cases[i..]
            .iter()
            .position(|c| c.profile != profile_name)
            .map_or(cases.len(), |p| i + p);
        let group = &cases[i..end];
        if group.iter().all(|c| case_finished(ctx, c)) {
            for (k, c) in group.iter().enumerate() {
                ctx.est_done += ctx.plan.case_estimate(c).1;
                (ctx.opts.progress)(Event::Case {
                    index: i + k + 1,
                    cases: total,
                    case: c,
                    skipped: true,
                });
            }
            i = end;
            continue;
        }
        let profile = ctx
            .plan
            .dut
            .profiles
            .iter()
            .find(|p| p.name == profile_name)
            .cloned()
            .ok_or_else(|| failed(format!("profile {profile_name} is not in the plan")))?;
        if let (DutKind::Lab, Some(lab)) = (ctx.plan.dut.kind, ctx.bed.dut_switches()) {
            let lp = lab::Profile::parse(profile.lab.as_deref().unwrap_or(&profile.name))
                .map_err(failed)?;
            ctx.note(format!(
                "profile {}: applying lab profile {lp}",
                profile.name
            ));
            lab.apply_profile(&lp)
                .map_err(|e| failed(format!("profile {}: {e}", profile.name)))?;
            ctx.lab_profile = Some(lp);
            ctx.fastpath_switched = false;
            // The connection table's cap and timeout belong to this profile (none: no cap).
            lab.set_conn_table(profile.table_size, profile.udp_timeout)
                .map_err(|e| failed(format!("profile {}: connection table: {e}", profile.name)))?;
            if let Some(n) = profile.table_size {
                ctx.note(format!(
                    "profile {}: connection table capped at {n} (a set of {n} connections, lab::conntrack)",
                    profile.name
                ));
            }
        }
        let env = vec![("WR_PROFILE".to_string(), profile.name.clone())];
        let setup = ctx.run_hooks(
            None,
            &profile.name,
            "setup",
            &profile.hooks.setup,
            &env,
            true,
        );
        let body = setup.and_then(|()| {
            if !nap(ctx.plan.run.profile_settle, ctx.opts.stop) {
                return Err(RunError::Interrupted);
            }
            for (k, case) in group.iter().enumerate() {
                run_case(ctx, case, i + k + 1, total)?;
            }
            Ok(())
        });
        // Teardown runs whatever happened (also on Ctrl-C).
        let teardown = ctx.run_hooks(
            None,
            &profile.name,
            "teardown",
            &profile.hooks.teardown,
            &env,
            false,
        );
        body?;
        teardown?;
        i = end;
    }
    Ok(())
}

/// The case's DUT switches on a lab DUT: offloads as the case asks, off where it does not
/// say (the lab's default), switched only when that changes (profile switches leave them);
/// the fast path where the case has the dimension, before every such case, since a profile
/// switch turns it off. A real DUT gets them as `WR_OFFLOAD` / `WR_FASTPATH` in its hooks'
/// environment instead.
fn apply_lab_switches(ctx: &mut Ctx, case: &Case) -> Result<(), RunError> {
    let Some(lab) = ctx.bed.dut_switches() else {
        return Ok(());
    };
    if ctx.plan.dut.kind != DutKind::Lab || !lab.has_dut() {
        return Ok(());
    }
    let offload = case.offload.unwrap_or(false);
    if ctx.lab_offload != Some(offload) {
        lab.set_offload(offload)
            .map_err(|e| failed(format!("{}: DUT offload: {e}", case.id)))?;
        ctx.lab_offload = Some(offload);
    }
    // A case without the dimension gets the fast path as its profile sets it (the lab
    // profile `fastpath` turns it on; every other profile turns it off): after a case that
    // switched it, the profile is applied again.
    match case.fastpath {
        Some(on) => {
            lab.set_fastpath(on)
                .map_err(|e| failed(format!("{}: fast path: {e}", case.id)))?;
            ctx.fastpath_switched = true;
        }
        None if ctx.fastpath_switched => {
            if let Some(lp) = ctx.lab_profile {
                lab.apply_profile(&lp)
                    .map_err(|e| failed(format!("{}: re-applying profile {lp}: {e}", case.id)))?;
            }
            ctx.fastpath_switched = false;
        }
        None => {}
    }
    Ok(())
}

fn run_case(ctx: &mut Ctx, case: &Case, index: usize, total: usize) -> Result<(), RunError> {
    let est = ctx.plan.case_estimate(case).1;
    let skipped = case_finished(ctx, case);
    (ctx.opts.progress)(Event::Case {
        index,
        cases: total,
        case,
        skipped,
    });
    if skipped {
        ctx.est_done += est;
        return Ok(());
    }
    let profile = ctx
        .plan
        .dut
        .profiles
        .iter()
        .find(|p| p.name == case.profile)
        .cloned()
        .ok_or_else(|| failed(format!("profile {} is not in the plan", case.profile)))?;
    apply_lab_switches(ctx, case)?;
    let env = case.env();
    ctx.run_hooks(
        Some(case),
        &profile.name,
        "stats-before",
        &profile.hooks.stats_before,
        &env,
        false,
    )?;
    let mut samplers = Vec::new();
    for hook in &profile.hooks.samplers {
        match Sampler::start(&ctx.plan.dut.exec, hook, &env) {
            Ok(s) => samplers.push(s),
            Err(e) => ctx.note(format!("sampler `{}` did not start: {e}", hook.command)),
        }
    }
    let mut result = Ok(());
    'reps: for rep in 0..ctx.plan.run.repetitions {
        for &m in &case.methodologies {
            if let Err(e) = run_methodology(ctx, case, rep, m, index, total) {
                result = Err(e);
                break 'reps;
            }
        }
    }
    for s in samplers {
        if let Ok(out) = s.stop() {
            ctx.record_hook(Some(case), &profile.name, "sampler", &out);
        }
    }
    ctx.run_hooks(
        Some(case),
        &profile.name,
        "stats-after",
        &profile.hooks.stats_after,
        &env,
        false,
    )?;
    ctx.est_done += est;
    result
}

fn run_methodology(
    ctx: &mut Ctx,
    case: &Case,
    rep: u32,
    m: Methodology,
    index: usize,
    total: usize,
) -> Result<(), RunError> {
    if ctx.resume.is_done(&case.id, rep, m) {
        return Ok(());
    }
    let plan = ctx.plan;
    if m.is_connection() {
        return run_conn(ctx, case, rep, m);
    }
    let mut search: Box<dyn Search> = match m {
        Methodology::Iperf3 => return run_iperf3(ctx, case, rep, index, total),
        Methodology::Rfc2544Latency => {
            let base = [Methodology::Rfc2544Throughput, Methodology::MultiGoal]
                .into_iter()
                .find_map(|t| ctx.done_results.get(&(case.id.clone(), rep, t)).cloned());
            let built = match base {
                Some(r) => LatencySearch::at_throughput(
                    &r,
                    0,
                    plan.methodology.latency_trials,
                    plan.methodology.latency_duration,
                )
                .map_err(|e| e.to_string()),
                None => Err("latency needs a throughput methodology first in the case".into()),
            };
            match built {
                Ok(s) => Box::new(s),
                Err(why) => {
                    ctx.note(format!("{} rep {rep} {}: {why}", case.id, m.name()));
                    let d = MethodologyDone {
                        case_id: case.id.clone(),
                        repetition: rep,
                        methodology: m,
                        result: None,
                        ceiling: None,
                        line_pps: None,
                    };
                    ctx.append(&Record::Done(d.clone()))?;
                    (ctx.opts.progress)(Event::Done(&d));
                    return Ok(());
                }
            }
        }
        _ => plan
            .search(case, m)
            .ok_or_else(|| failed(format!("no search for {}", m.name())))?,
    };
    let recorded = ctx.resume.recorded(&case.id, rep, m);
    let mut next = crate::search::replay(search.as_mut(), &recorded).map_err(|e| {
        failed(format!(
            "{} rep {rep} {}: {e}; start a new run instead of --resume",
            case.id,
            m.name()
        ))
    })?;
    let mut trial_index = recorded.len() as u32;
    let Some(frame_size) = case.frame_size else {
        return Err(failed(format!(
            "{}: UDP case without a frame size",
            case.id
        )));
    };
    let mut stalls_retried = 0u32;
    // A stall that persisted after the retries: the search stops there, tester-limited.
    let mut stalled_at: Option<(LineFraction, LineFraction)> = None;
    // The highest load whose trial the tester kept (no stall) in this search.
    let mut kept_max: Option<f64> = None;
    while let Some(request) = next {
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let res = ctx.bed.udp_trial(plan, case, &request, ctx.opts.stop);
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (outcome, engine) = match res {
            Ok(o) => o,
            Err(e) => {
                let m = format!("{} rep {rep} {}: {e}", case.id, m.name());
                ctx.note(format!("FAILED {m} (not marked done; --resume retries it)"));
                ctx.summary.failures.push(m);
                return Ok(());
            }
        };
        // A trial in which the tester fell behind its schedule (frames slipped, or a stall
        // that shows as a lower offered rate, e.g. 10 ms late near the end of a 0.5 s trial)
        // says nothing about the DUT: record it as superseded and measure the same request
        // again, a few times per search at most, so a tester that cannot keep up still ends
        // tester-limited.
        // An `mtu-probe` trial counts whether the frames sent arrived whole; its rate is only
        // kept low, so only a tester far below it counts as stalled.
        // A trial whose frames the tester's own receive backlog dropped (the lab's tester
        // CPUs, `DutCounters::tester_backlog_drops`) lost them in the tester: the same.
        let stalled = match request.probe {
            Some(_) => outcome.is_tester_limited(crate::search::PROBE_TESTER_TOLERANCE),
            None => {
                engine.slipped_ratio() > SLIP_TOLERANCE
                    || outcome.is_tester_limited(plan.run.tester_tolerance)
            }
        } || engine.tester_receive_drops() > 0;
        // A stall at or below a load the tester already kept in this search is a transient
        // of the machine, not the tester's ceiling: it gets more re-measurements, and if it
        // persists the search stops tester-limited instead of taking a ceiling the tester
        // has disproved (on a loaded machine one stall at 3 % would otherwise end a search
        // at 0.6 % "tester-limited").
        let below_kept = kept_max.is_some_and(|k| request.load.0 <= k);
        let budget = if below_kept {
            MAX_STALL_RETRIES + MAX_TRANSIENT_RETRIES
        } else {
            MAX_STALL_RETRIES
        };
        let superseded = stalled && stalls_retried < budget;
        let rec = TrialRecord {
            key: TrialKey {
                case_id: case.id.clone(),
                repetition: rep,
                methodology: m,
                index: trial_index,
            },
            request,
            outcome,
            // Tester-limited means one thing: the tester did not keep its own schedule (it
            // slipped frames, offered less than asked, or its receive backlog dropped frames
            // the DUT forwarded), never the DUT's loss.
            tester_limited: stalled,
            iperf3: None,
            tcp: None,
            udp: crate::results::UdpFacts::of(plan, case, outcome.offered.0),
            engine: Some(engine),
            superseded,
            finished_unix_ms: now_ms(),
        };
        if superseded {
            stalls_retried += 1;
            let why = match rec.engine.as_ref().map_or(0, |e| e.tester_receive_drops()) {
                0 => "the tester fell behind its schedule".to_string(),
                n => format!("the tester's receive backlog dropped {n} frames"),
            };
            ctx.append(&Record::Trial(rec))?;
            ctx.note(format!(
                "{} rep {rep} {} trial {trial_index}: {why}; measuring it again",
                case.id,
                m.name()
            ));
            if !nap(plan.run.settle, ctx.opts.stop) {
                return Err(RunError::Interrupted);
            }
            continue;
        }
        ctx.append(&Record::Trial(rec.clone()))?;
        ctx.summary.trials_run += 1;
        trial_index += 1;
        let eta = ctx.eta();
        (ctx.opts.progress)(Event::Trial {
            index,
            cases: total,
            record: &rec,
            eta,
        });
        if stalled {
            // The search itself only compares offered with intended load, which a short stall
            // or the tester's own receive drops barely move: tell it. A bisection goes on
            // below this load (a DUT failure found there is the DUT's; an upper bound left
            // at it says tester-limited per goal); any other search stops here, so no figure
            // rests on a trial the tester stalled in.
            if !search.bounds_tester_ceiling() || below_kept {
                stalled_at = Some((request.load, outcome.offered));
                break;
            }
            next = search.next_tester_limited(&outcome);
        } else {
            kept_max = Some(kept_max.map_or(request.load.0, |k| k.max(request.load.0)));
            next = search.next(Some(&outcome));
        }
        if next.is_some() && !nap(plan.settle_after(m), ctx.opts.stop) {
            return Err(RunError::Interrupted);
        }
    }
    let mut result = search.result();
    if let Some((intended, achieved)) = stalled_at {
        result.status = Status::TesterLimited { intended, achieved };
    }
    let ceiling = match (&ctx.opts.calibration, result.throughput(0)) {
        (Some(cal), Some(t)) => {
            let pps = t.to_pps(plan.line_pps(case)).0;
            cal.ceiling_pps(case.ip, frame_size).map(|c| CeilingCheck {
                ceiling_pps: c,
                result_pps: pps,
                tester_limited: cal
                    .is_tester_limited(case.ip, frame_size, pps)
                    .unwrap_or(false),
            })
        }
        _ => None,
    };
    let d = MethodologyDone {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        result: Some(result.clone()),
        ceiling,
        // The 100 % every load of this search was a fraction of (UDP cases have a size; an
        // MTU probe's loads are fractions of its own probe rate).
        line_pps: case
            .frame_size
            .filter(|_| m != Methodology::MtuProbe)
            .map(|_| plan.line_pps(case).0),
    };
    ctx.append(&Record::Done(d.clone()))?;
    ctx.done_results.insert((case.id.clone(), rep, m), result);
    (ctx.opts.progress)(Event::Done(&d));
    Ok(())
}

/// A connection methodology (RFC 9693) on the lab DUT: each trial empties the DUT's table,
/// runs the two phases ([`Testbed::conn_trial`]) and is recorded before the search sees it;
/// `--resume` replays the recorded trials into a fresh search.
fn run_conn(ctx: &mut Ctx, case: &Case, rep: u32, m: Methodology) -> Result<(), RunError> {
    let plan = ctx.plan;
    let mut search = plan
        .conn_search(case, m)
        .ok_or_else(|| failed(format!("no search for {} in case {}", m.name(), case.id)))?;
    let table_size = plan.table_size(case);
    let recorded = ctx.resume.recorded_conn(&case.id, rep, m);
    let mut next = crate::search::replay_conn(search.as_mut(), &recorded).map_err(|e| {
        failed(format!(
            "{} rep {rep} {}: {e}; start a new run instead of --resume",
            case.id,
            m.name()
        ))
    })?;
    let mut trial_index = recorded.len() as u32;
    let mut stalls_retried = 0u32;
    let mut last_n = None;
    while let Some(trial) = next {
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        // `nat-throughput` is one bisection per N: each N gets its own re-measurements.
        if m == Methodology::NatThroughput && last_n != Some(trial.connections) {
            stalls_retried = 0;
        }
        last_n = Some(trial.connections);
        let res = ctx.bed.conn_trial(
            case,
            &trial,
            table_size,
            crate::trial::engine_backend(ctx.plan.run.backend),
            ctx.opts.stop,
        );
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (outcome, phases, dut) = match res {
            Ok(x) => x,
            Err(e) => {
                let msg = format!("{} rep {rep} {}: {e}", case.id, m.name());
                ctx.note(format!(
                    "FAILED {msg} (not marked done; --resume retries it)"
                ));
                ctx.summary.failures.push(msg);
                return Ok(());
            }
        };
        // A preliminary phase whose sender stalled and then handed the DUT the frames due in
        // the meantime at once: the DUT's port refused part of that burst, which says nothing
        // about the asked rate (session 11: stalls of 150–970 ms at load 7.5, 28–585
        // connections refused, napt's capacity read as 3,415 instead of 6,000). Its average
        // rate hides it; the lateness and the refusals show it.
        let burst = phases.preliminary_refused_by_dut > 0
            && phases.preliminary_max_late_ns > CONN_STALL.as_nanos() as u64;
        // Frames the tester's own receive rings dropped (a receiver not scheduled in time):
        // connections the tester lost, not the DUT (session 11, load 11: 120 of 4,000 replies
        // lost with the DUT's ports dropping none).
        let rx_drops = phases.tester_rx_drops > 0 && !outcome.passed();
        let tester_limited =
            outcome.is_tester_limited(plan.run.tester_tolerance) || burst || rx_drops;
        // As for the load searches: a trial the tester could not pace is measured again, a
        // few times per search, before the search is allowed to stop tester-limited. A
        // `nat-throughput` load is one second of both directions at once from the one tester
        // CPU: on a shared machine it misses its rate by a percent or more in about one trial
        // of six at the rates that overload the lab DUT (docs/engine.md, "The NAT load on
        // XDP"), so it gets twice the re-measurements, per N.
        let retries = if m == Methodology::NatThroughput {
            2 * MAX_STALL_RETRIES
        } else {
            MAX_STALL_RETRIES
        };
        // A `nat-throughput` load that lost frames after sending every one is the DUT's
        // failure however its rate reads (the search takes it so): nothing to measure again.
        let dut_loss = outcome
            .load
            .zip(trial.load_frames())
            .is_some_and(|(l, f)| outcome.passed() && l.loss_is_the_duts(f));
        let superseded = tester_limited && !dut_loss && stalls_retried < retries;
        let rec = ConnTrialRecord {
            key: TrialKey {
                case_id: case.id.clone(),
                repetition: rep,
                methodology: m,
                index: trial_index,
            },
            request: trial,
            outcome,
            tester_limited,
            phases,
            dut,
            superseded,
            finished_unix_ms: now_ms(),
        };
        ctx.append(&Record::ConnTrial(rec.clone()))?;
        if superseded {
            stalls_retried += 1;
            let why = match outcome.load {
                _ if rx_drops && !burst => format!(
                    "the tester's receive rings dropped {} frames",
                    phases.tester_rx_drops
                ),
                _ if burst => format!(
                    "the tester's sender stalled {:.0} ms and the DUT's port refused {} of the frames it then sent at once",
                    phases.preliminary_max_late_ns as f64 / 1e6,
                    phases.preliminary_refused_by_dut
                ),
                Some(l) if l.is_tester_limited(plan.run.tester_tolerance) => format!(
                    "the tester offered {:.0} and {:.0} frames/s of {:.0} each way, its receive rings dropped {}",
                    l.forward_pps, l.reverse_pps, l.intended_pps, l.tester_drops
                ),
                _ => format!(
                    "the tester offered {:.0}/s of {:.0}/s",
                    outcome.offered_rate.0, trial.rate.0
                ),
            };
            ctx.note(format!(
                "{} rep {rep} {} trial {trial_index}: {why}; measuring it again",
                case.id,
                m.name(),
            ));
            if !nap(plan.settle_after(m), ctx.opts.stop) {
                return Err(RunError::Interrupted);
            }
            continue;
        }
        ctx.summary.trials_run += 1;
        trial_index += 1;
        ctx.note(format!(
            "{} rep {rep} {} trial {}: {} connections at {:.0}/s (offered {:.0}/s): {} of {} arrived, {} of {} validated{}{}",
            case.id,
            m.name(),
            rec.key.index,
            trial.connections,
            trial.rate.0,
            outcome.offered_rate.0,
            outcome.preliminary_received,
            outcome.preliminary_sent,
            outcome.validation_received,
            outcome.validation_sent,
            if outcome.passed() { ": pass" } else { ": FAIL" },
            if rec.tester_limited { " (tester-limited)" } else { "" },
        ));
        if let Some(d) = outcome.teardown {
            ctx.note(format!(
                "  tear-down: the DUT's table held {} entries, {} after deleting them in {:.0} µs ({:.0} µs on the empty table)",
                d.entries_before,
                d.entries_after,
                d.delete_ns as f64 / 1e3,
                d.empty_ns as f64 / 1e3
            ));
        }
        if let Some(l) = outcome.load {
            ctx.note(format!(
                "  load {:.0} frames/s each way: A→B {} of {}, B→A {} of {}{}{}{}{}",
                l.intended_pps,
                l.forward_received,
                l.forward_sent,
                l.reverse_received,
                l.reverse_sent,
                l.dut_entries
                    .map(|e| format!("; DUT table {e} entries after"))
                    .unwrap_or_default(),
                rec.dut
                    .and_then(|d| d.load_ports)
                    .map(|p| format!("; DUT ingress drops {}", p.ingress_drops))
                    .unwrap_or_default(),
                match l.sender_priority {
                    Some(crate::search::LoadPriority::Unraised) => {
                        "; the senders' priority could not be raised (not root?)"
                    }
                    _ => "",
                },
                if l.lossless() { ": pass" } else { ": loss" },
            ));
        }
        next = search.next(Some(&outcome));
        if next.is_some() && !nap(plan.run.settle, ctx.opts.stop) {
            return Err(RunError::Interrupted);
        }
    }
    let d = ConnDone {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        result: search.result(),
    };
    ctx.append(&Record::ConnDone(d.clone()))?;
    ctx.note(format!(
        "{} rep {rep} {}: {}",
        case.id,
        m.name(),
        crate::search::nat::describe(&d.result)
    ));
    Ok(())
}

/// A connection trial's preliminary sender later than this on some frame, while the DUT's port
/// refused frames, burst them (see `run_conn`): measured again, as a tester stall. Normal
/// lateness on the loaded machine was 4–10 ms; the bursts that lost connections, 150–970 ms.
pub const CONN_STALL: Duration = Duration::from_millis(20);

/// A trial whose sender slipped more than this share of its schedule is tester-limited, even
/// when its offered rate stays within the plan's `tester-tolerance`.
pub const SLIP_TOLERANCE: f64 = 0.001;

/// How many trials of one search are measured again after the tester fell behind (slipped
/// frames or offered less than asked) before the search is stopped tester-limited.
pub const MAX_STALL_RETRIES: u32 = 2;

/// How many more re-measurements one search grants stalls at loads the tester already kept in
/// it (a shared machine's transients), before it stops tester-limited.
pub const MAX_TRANSIENT_RETRIES: u32 = 4;

// ---------------------------------------------------------------------------------------------
// iperf3

/// MSS values from `tcpdump -v` output (`options [mss 1460,…]`), in order.
pub fn parse_syn_mss(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(p) = rest.find("mss ") {
        rest = &rest[p + 4..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(v) = digits.parse() {
            out.push(v);
        }
    }
    out
}

/// Client SYNs (SYN without ACK) to the iperf3 port, IPv4 or IPv6 (no extension headers).
fn syn_filter(port: u16) -> String {
    format!(
        "(ip and tcp dst port {port} and tcp[13] & 0x12 == 0x02) or (ip6 and ip6[6] == 6 and ip6[42:2] == {port} and ip6[53] & 0x12 == 0x02)"
    )
}

/// What to say when the data connections' SYNs reached the far port with another MSS than
/// the case asked iperf3 for (`-M`): something on the path (the DUT's MSS clamp) rewrote it.
/// The first SYN is iperf3's control connection, which keeps the interface's MSS.
fn mss_mismatch(case: &Case, syn_mss: &[u32]) -> Option<String> {
    let asked = case.mss?;
    let data = syn_mss.get(1..)?;
    let other: Vec<u32> = data.iter().copied().filter(|&m| m != asked).collect();
    (!other.is_empty()).then(|| {
        format!(
            "asked for MSS {asked}, the far port saw SYNs with MSS {other:?}: the path rewrote it (an MSS clamp on the DUT?)"
        )
    })
}

fn default_mss(ip: IpVersion) -> u32 {
    match ip {
        IpVersion::V4 => 1460,
        IpVersion::V6 => 1440,
    }
}

/// One iperf3 run: server at the far end (port B's namespace, or the DUT in the endpoint
/// topology; started and stopped here, its port awaited), SYN capture there, client in port
/// A's namespace.
pub fn iperf3_trial(
    ends: &Iperf3Ends,
    case: &Case,
    plan: &Plan,
    stop: &AtomicBool,
) -> Result<(serde_json::Value, TcpFigures, Duration), String> {
    let target = ends.target(case.ip)?.to_string();
    let (ns_a, ns_b) = (&ends.client, &ends.server);
    let server_cmd = iperf3::server_argv(IPERF3_PORT, None)
        .iter()
        .map(|a| hooks::shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    let server = Sampler::start(
        ns_b,
        &Hook {
            command: format!("exec {server_cmd}"),
            parse: None,
        },
        &[],
    )
    .map_err(|e| format!("iperf3 server: {e}"))?;
    if !server.wait_for_output("Server listening", Duration::from_secs(5)) {
        let out = server.stop().map(|o| o.stderr).unwrap_or_default();
        return Err(format!("iperf3 server did not start: {}", out.trim()));
    }
    let sessions = case.sessions.unwrap_or(1);
    let capture = ends.capture.as_ref().and_then(|(exec, ifname)| {
        Sampler::start(
            exec,
            &Hook {
                command: format!(
                    "exec tcpdump -i {} --immediate-mode -nn -v -l -c {} {} 2>&1",
                    hooks::shell_quote(ifname),
                    sessions + 1,
                    hooks::shell_quote(&syn_filter(IPERF3_PORT))
                ),
                parse: None,
            },
            &[],
        )
        .ok()
    });
    let capture = match capture {
        Some(c) if c.wait_for_output("listening on", Duration::from_secs(5)) => Some(c),
        Some(c) => {
            let _ = c.stop();
            None
        }
        None => None,
    };
    let seconds = plan
        .methodology
        .iperf3_duration
        .as_secs_f64()
        .ceil()
        .max(1.0) as u32;
    let mut opts = ClientOptions::tcp(&target, IPERF3_PORT, seconds);
    opts.parallel = sessions;
    opts.mss = case.mss;
    opts.omit = plan.methodology.iperf3_omit.as_secs_f64().ceil() as u32;
    opts.reverse = plan.methodology.iperf3_reverse;
    opts.bidir = plan.methodology.iperf3_bidir;
    // UDP cases with `iperf3` listed: datagrams sized to the case's frame size.
    let udp_payload = match (case.protocol, case.frame_size) {
        (Protocol::Udp, Some(f)) => {
            let ip_header = match case.ip {
                IpVersion::V4 => 20,
                IpVersion::V6 => 40,
            };
            let overhead = iperf3::UDP_HEADER + ip_header + iperf3::ETHERNET_OVERHEAD;
            let p = f.saturating_sub(overhead).max(16);
            opts.protocol = iperf3::L4::Udp;
            opts.bitrate = Some(
                plan.methodology
                    .iperf3_udp_bitrate
                    .unwrap_or(BitsPerSec(0.0)),
            );
            opts.length = Some(p);
            opts.mss = None;
            Some(p)
        }
        _ => None,
    };
    let argv = iperf3::wrap(ns_a, &opts.argv());
    let started = Instant::now();
    // Counted on the wire while iperf3 runs, one way only (with -R or --bidir the data also
    // flows the other way, which these counters do not see).
    let counting = match (&ends.wire_port, opts.reverse || opts.bidir) {
        (Some(port), false) => iperf3::wire_count::window(
            plan.methodology.iperf3_omit,
            Duration::from_secs(u64::from(seconds)),
        )
        .map(|w| iperf3::wire_count::count_in_background(port.clone(), started, w)),
        _ => None,
    };
    let client = run_interruptible(&argv, stop);
    let elapsed = started.elapsed();
    // tcpdump exits by itself after the control and data connections' SYNs ("N packets
    // captured"); give it a moment, then stop it whatever it saw.
    let syn_text = capture
        .and_then(|c| {
            c.wait_for_output("packets captured", Duration::from_secs(1));
            c.stop().ok()
        })
        .map(|o| o.stdout)
        .unwrap_or_default();
    let _ = server.stop();
    let json_text = client?;
    let raw: serde_json::Value = serde_json::from_str(&json_text)
        .map_err(|e| format!("iperf3 -J output is not JSON: {e}"))?;
    let report = iperf3::parse(&json_text).map_err(|e| format!("iperf3: {e}"))?;
    let mss = report
        .tcp_mss
        .map(|m| m as u32)
        .or(case.mss)
        .unwrap_or_else(|| default_mss(case.ip));
    let l4 = report.total_received();
    let rates = match udp_payload {
        Some(p) => iperf3::udp_rates(l4, p, case.ip),
        None => iperf3::tcp_rates(l4, mss, case.ip, true),
    };
    let wire_count = counting.and_then(|c| c.join().ok().flatten());
    let (l2_bps, l1_bps) = match &wire_count {
        Some(w) if w.frames > 0 => (w.l2_bps(), w.l1_bps()),
        _ => (rates.l2.0, rates.l1.0),
    };
    let retransmits = match (&report.forward.retransmits, &report.backward) {
        (Some(f), Some(b)) => Some(f + b.retransmits.unwrap_or(0)),
        (f, _) => *f,
    };
    // What the report counts these rates in (the same arithmetic its compatibility reader
    // applies to older records).
    let facts = crate::results::TcpFacts::derive(
        plan.speed(),
        case.ip,
        l4,
        mss,
        wire_count.as_ref(),
        if report.backward.is_some() { 2 } else { 1 },
    );
    Ok((
        raw,
        TcpFigures {
            l4_bps: l4.0,
            l2_bps,
            l1_bps,
            wire_count,
            mss,
            retransmits,
            syn_mss: parse_syn_mss(&syn_text),
            cpu_local: report.cpu.host_total,
            cpu_remote: report.cpu.remote_total,
            dut: None,
            facts: Some(facts),
        },
        elapsed,
    ))
}

/// Runs `argv`, collecting stdout; killed (this child, by its handle) when `stop` is set.
fn run_interruptible(argv: &[String], stop: &AtomicBool) -> Result<String, String> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let status = loop {
        if stop.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("interrupted".into());
        }
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        // iperf3 -J reports its errors inside the JSON.
        let j = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(String::from));
        return Err(format!(
            "iperf3 client failed ({status}): {}",
            j.unwrap_or_else(|| err.trim().to_string())
        ));
    }
    Ok(text)
}

fn iperf3_file(case: &Case, rep: u32) -> String {
    let safe: String = case
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}-r{rep}.json")
}

fn run_iperf3(
    ctx: &mut Ctx,
    case: &Case,
    rep: u32,
    index: usize,
    total: usize,
) -> Result<(), RunError> {
    let m = Methodology::Iperf3;
    let key = TrialKey {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        index: 0,
    };
    // Recorded but not marked done (killed between the two lines): the trial counts.
    if !ctx.resume.finished_trials.contains(&key) {
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (res, dut) = ctx.bed.tcp_trial(case, ctx.plan, ctx.opts.stop);
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (raw, mut tcp, elapsed) = match res {
            Ok(x) => x,
            Err(e) => {
                let msg = format!("{} rep {rep} iperf3: {e}", case.id);
                ctx.note(format!(
                    "FAILED {msg} (not marked done; --resume retries it)"
                ));
                ctx.summary.failures.push(msg);
                return Ok(());
            }
        };
        tcp.dut = dut;
        if let Some(note) = mss_mismatch(case, &tcp.syn_mss) {
            ctx.note(format!("{} rep {rep}: {note}", case.id));
        }
        let path = ctx.opts.dir.join(IPERF3_DIR).join(iperf3_file(case, rep));
        std::fs::write(&path, serde_json::to_vec_pretty(&raw).unwrap_or_default())
            .map_err(|e| failed(format!("{}: {e}", path.display())))?;
        let speed: BitsPerSec = ctx.plan.speed();
        let load = LineFraction(tcp.l1_bps / speed.0);
        let rec = TrialRecord {
            key,
            request: TrialRequest::rate(load, ctx.plan.methodology.iperf3_duration),
            outcome: Outcome {
                intended: load,
                offered: load,
                received: 0,
                lost: 0,
                fragments: 0,
                directions: 1,
                duration: elapsed,
                latency: None,
            },
            tester_limited: false,
            iperf3: Some(raw),
            tcp: Some(tcp),
            engine: None,
            udp: None,
            superseded: false,
            finished_unix_ms: now_ms(),
        };
        ctx.append(&Record::Trial(rec.clone()))?;
        ctx.summary.trials_run += 1;
        let eta = ctx.eta();
        (ctx.opts.progress)(Event::Trial {
            index,
            cases: total,
            record: &rec,
            eta,
        });
        if !nap(ctx.plan.run.settle, ctx.opts.stop) {
            return Err(RunError::Interrupted);
        }
    }
    let d = MethodologyDone {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        result: None,
        ceiling: None,
        line_pps: None,
    };
    ctx.append(&Record::Done(d.clone()))?;
    (ctx.opts.progress)(Event::Done(&d));
    Ok(())
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
fn civil_from_days(z: i64) -> (i64, u32, u32) {
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
    fn hook_programs() {
        assert_eq!(hook_program("nft list ruleset").as_deref(), Some("nft"));
        assert_eq!(
            hook_program("FOO=1 sudo timeout 5 pfctl -si").as_deref(),
            Some("pfctl")
        );
        assert_eq!(hook_program("  vmstat 1").as_deref(), Some("vmstat"));
        assert_eq!(hook_program("$HOME/x"), None);
    }

    #[test]
    fn mss_the_path_rewrote_is_named() {
        let plan = crate::plan::Plan::parse(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../plans/lab-demo.toml"
            ))
            .unwrap(),
            "lab-demo.toml",
        )
        .unwrap();
        let cases = plan.cases().unwrap();
        let c = cases
            .iter()
            .find(|c| c.id == "gateway/tcp4/s1/mss1414/offload=on")
            .unwrap();
        assert_eq!(mss_mismatch(c, &[1460, 1414]), None);
        let n = mss_mismatch(c, &[1460, 1200]).unwrap();
        assert!(
            n.contains("asked for MSS 1414") && n.contains("[1200]"),
            "{n}"
        );
        // Nothing captured, or a case without `mss`: nothing to say.
        assert_eq!(mss_mismatch(c, &[]), None);
        let no_mss = cases.iter().find(|c| c.id == "napt/tcp4/s1").unwrap();
        assert_eq!(mss_mismatch(no_mss, &[1460, 1200]), None);
    }

    #[test]
    fn syn_mss_from_tcpdump() {
        let t = "listening on wr-b, link-type EN10MB\n12:00:00.1 IP (tos 0x0, ttl 63, id 1, offset 0, flags [DF], proto TCP (6), length 60)\n    198.51.100.2.40000 > 203.0.113.2.5201: Flags [S], cksum 0x1 (correct), seq 1, win 64240, options [mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7], length 0\n    x > y: Flags [S], options [mss 1200,nop], length 0\n";
        assert_eq!(parse_syn_mss(t), vec![1460, 1200]);
    }

    #[test]
    fn default_dir_is_dated() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_000), (2024, 10, 4));
        let d = default_dir(Path::new("runs"), "lab-demo");
        let s = d.to_string_lossy();
        assert!(s.starts_with("runs/lab-demo-2"), "{s}");
        assert_eq!(s.len(), "runs/lab-demo-20261122-074500".len());
    }
}

#[cfg(test)]
#[path = "runner_sim_tests.rs"]
mod sim_tests;
