//! Preflight: everything that can be checked before any traffic is sent (the plan's
//! methodologies executable, kernel features, interfaces, ssh, hook programs, tools).

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use crate::hooks::{self, Exec};
use crate::plan::{Case, DutKind, Methodology, Plan};

use super::*;

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

pub(super) fn ssh_reachable(host: &str, port: Option<u16>) -> Result<(), SshCheckError> {
    let mut c = Command::new("ssh");
    c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=3"]);
    if let Some(p) = port {
        c.args(["-p", &p.to_string()]);
    }
    c.args(["--", host, "true"]).stdin(Stdio::null());
    let out = c.output().map_err(|source| SshCheckError::Spawn {
        host: host.to_string(),
        source,
    })?;
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
        Err(SshCheckError::Unreachable {
            host: host.to_string(),
            ssh_says: why,
        })
    }
}

/// Why the DUT host did not answer `ssh … true` ([`ssh_reachable`]).
#[derive(Debug)]
pub(super) enum SshCheckError {
    /// ssh could not be run here.
    Spawn {
        host: String,
        source: std::io::Error,
    },
    /// ssh ran and failed: the last line of what it said.
    Unreachable { host: String, ssh_says: String },
}

impl std::fmt::Display for SshCheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SshCheckError::Spawn { host, source } => {
                write!(f, "cannot run ssh to check DUT host `{host}`: {source}")
            }
            SshCheckError::Unreachable { host, ssh_says } => write!(
                f,
                "DUT host `{host}` is unreachable over ssh (`ssh -o BatchMode=yes -o ConnectTimeout=3 {host} true`: {ssh_says})"
            ),
        }
    }
}

/// Whether `program` exists where `exec` runs hooks (for a namespace: on this host, since
/// namespaces share the file system).
pub(super) fn program_exists(exec: &Exec, program: &str) -> Result<bool, std::io::Error> {
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
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", argv[0])))?;
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
            problems.push(Problem::at("dut.ssh", e.to_string()));
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

/// The links under a plan's real ports, as the preflight found them, with what it refuses and
/// what it says once at the start of a run.
#[derive(Debug, Clone, Default)]
pub struct LinkCheck {
    /// One per port whose interface exists, in plan order: recorded in `run.json`
    /// (`facts.links`) and used by the testbed (the tester's own drop counters).
    pub links: Vec<crate::port_link::PortLink>,
    /// A link slower than its port's `speed` (both figures).
    pub problems: Vec<Problem>,
    /// What a user must know before the figures: a port without a wire speed, the offloads
    /// that make the kernel count segments, the counters read around each trial.
    pub notes: Vec<String>,
}

/// The links under the plan's real ports (`topology.kind = "interfaces"`; a lab's links are
/// shaped to the plan's speed): each port's wire speed against its `speed` — slower is refused
/// with both figures; none (a veth, a TUN) is said once, and the report labels every figure
/// above line rate of such a run "no wire speed on this port" — its offloads, and which of its
/// own counters say the tester lost frames (`crate::iface::counters`). A port whose interface
/// is missing is skipped here ([`host_checks`] reports it).
pub fn link_checks(plan: &Plan) -> LinkCheck {
    let mut out = LinkCheck::default();
    if !matches!(plan.topology, crate::plan::Topology::Interfaces) {
        return out;
    }
    for p in &plan.ports {
        let iface = crate::iface::Iface {
            interface: p.interface.clone(),
            namespace: p.namespace.clone(),
        };
        if crate::testbed::interface_exists(&p.namespace, &p.interface).is_err() {
            continue;
        }
        let link = iface.link(&p.name);
        let speed = p.speed.unwrap_or(plan.speed());
        let place = link.describe();
        if let Some(why) = link.wire.refusal(speed) {
            out.problems.push(Problem::at(
                format!("ports.{}.speed", p.name),
                format!("port {place}: {why}"),
            ));
        }
        out.notes.extend(link_notes(&link, speed));
        out.links.push(link);
    }
    out
}

/// What to say once about one port's link (`speed`: the plan's for that port).
pub fn link_notes(
    link: &crate::port_link::PortLink,
    speed: wire::units::BitsPerSec,
) -> Vec<String> {
    use crate::port_link::{speed_text, WireSpeed};
    let place = link.describe();
    let mut notes = Vec::new();
    if let WireSpeed::Unknown { why } = &link.wire {
        notes.push(format!(
            "port {place}: no wire speed ({why}); loads are fractions of the plan's {}, and any figure above 100 % of it is labelled \"no wire speed on this port\"",
            speed_text(speed.0)
        ));
    }
    if !link.offloads.is_empty() {
        let on = link.offloads.iter().any(|o| o.on);
        notes.push(format!(
            "port {place}: offloads {}{}",
            crate::iface::offloads::describe(&link.offloads),
            if on {
                " (with segmentation or receive coalescing on, TCP's figures count what the kernel moved, not frames on a wire)"
            } else {
                ""
            }
        ));
    }
    if !link.tester_counters.is_empty() {
        notes.push(format!(
            "port {place}: the tester's own drop counters ({}) are read around every UDP trial; a rise makes the trial tester-limited",
            link.tester_counters.join(", ")
        ));
    }
    notes
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

/// Everything that can be checked before any traffic is sent ([`host_checks`],
/// [`root_checks`], [`link_checks`]); every problem found is listed, located in the plan's
/// `text`. The links found, with what to say about them, when nothing is wrong.
pub fn preflight(plan: &Plan, cases: &[Case], text: &str) -> Result<LinkCheck, RunError> {
    let mut problems = not_yet_executable(plan);
    problems.extend(root_checks(plan));
    problems.extend(host_checks(plan, cases));
    let mut links = link_checks(plan);
    problems.append(&mut links.problems);
    if problems.is_empty() {
        Ok(links)
    } else {
        Err(RunError::Preflight(
            problems
                .iter()
                .map(|p| p.describe(&plan.file, text))
                .collect(),
        ))
    }
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
}
