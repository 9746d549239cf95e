//! Running the system tools the lab is built from (`ip`, `nft`, `iptables-restore`, `sh`).
//!
//! Every child runs with a deadline and has its stderr captured, so a failure becomes one
//! [`LabError::Command`] that quotes the exact command and what the tool said, and a wedged
//! tool can never hang `lab up`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{LabError, Result};

/// Default deadline for one tool invocation. Loading 10,000 nftables rules takes ~0.2 s here;
/// this only guards against a tool that hangs.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where tools are looked for after `$PATH`: root's usual sbin directories, because a `sudo`
/// or `su` environment often lacks them while the tools are installed.
const FALLBACK_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// The tools the lab uses and the Debian package that provides each.
pub const TOOLS: &[(&str, &str)] = &[
    ("ip", "iproute2"),
    ("nft", "nftables"),
    ("iptables-restore", "iptables"),
    ("ip6tables-restore", "iptables"),
    ("sh", "dash"),
];

fn package_of(tool: &str) -> &'static str {
    TOOLS
        .iter()
        .find(|(t, _)| *t == tool)
        .map(|(_, p)| *p)
        .unwrap_or("unknown")
}

fn static_name(tool: &str) -> &'static str {
    TOOLS
        .iter()
        .find(|(t, _)| *t == tool)
        .map(|(t, _)| *t)
        .unwrap_or("tool")
}

/// Find an executable named `tool` in the directories of `search_path` (a `$PATH`-style
/// string) and then in the sbin fallbacks.
pub fn find_tool_in(tool: &str, search_path: &str) -> Option<PathBuf> {
    search_path
        .split(':')
        .filter(|d| !d.is_empty())
        .chain(FALLBACK_DIRS.iter().copied())
        .map(|d| Path::new(d).join(tool))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The full path of `tool`, or [`LabError::ToolMissing`] naming its package.
pub fn tool(tool: &str) -> Result<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    find_tool_in(tool, &path).ok_or(LabError::ToolMissing {
        tool: static_name(tool),
        package: package_of(tool),
    })
}

/// Whether the effective user is root: the one check the lab, the commands and every test that
/// needs namespaces use.
pub fn is_root() -> bool {
    crate::sys::is_root()
}

/// Fail with [`LabError::NotRoot`] unless the effective user is root.
pub fn require_root() -> Result<()> {
    if !is_root() {
        return Err(LabError::NotRoot);
    }
    Ok(())
}

/// Turn SIGINT and SIGTERM into a flag that [`crate::Lab::up`] checks between steps, so an
/// interrupted `lab up` removes what it has built instead of dying half-way. Call once from a
/// binary (the CLI does); libraries embedding the lab may leave signals alone.
pub fn install_interrupt_handler() {
    crate::sys::note_termination_signals();
}

/// True once SIGINT or SIGTERM arrived after [`install_interrupt_handler`].
pub fn interrupted() -> bool {
    crate::sys::termination_signalled()
}

pub(crate) fn check_interrupted() -> Result<()> {
    if interrupted() {
        Err(LabError::Interrupted)
    } else {
        Ok(())
    }
}

fn describe(argv: &[&str]) -> String {
    argv.join(" ")
}

/// Run `argv` (argv[0] is looked up with [`tool`]) with optional stdin, a deadline, and
/// captured output. Returns stdout on success.
pub fn run_with(argv: &[&str], stdin: Option<&[u8]>, timeout: Duration) -> Result<String> {
    let exe = tool(argv[0])?;
    let mut cmd = Command::new(exe);
    // Own process group: a timeout kills the tool and anything it started (`sh -c …`), and a
    // terminal's Ctrl-C reaches only us, so the step in progress completes and `up` can clean
    // up in order.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.args(&argv[1..])
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| LabError::io(format!("starting `{}`", describe(argv)), e))?;
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        let input = input.to_vec();
        // Write from a thread: a large ruleset can exceed the pipe buffer while the child is
        // also filling its stdout.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(timeout) {
        Ok(r) => r.map_err(|e| LabError::io(format!("waiting for `{}`", describe(argv)), e))?,
        Err(_) => {
            // The process group our own child leads; the child has not been reaped yet (the
            // waiting thread is still blocked in wait), so the id is still ours.
            let _ = crate::sys::kill(-(pid as libc::pid_t), libc::SIGKILL);
            let _ = rx.recv();
            return Err(LabError::Timeout {
                argv: describe(argv),
                secs: timeout.as_secs(),
            });
        }
    };
    if !out.status.success() {
        return Err(LabError::Command {
            argv: describe(argv),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// [`run_with`] without stdin and with the default deadline.
pub fn run(argv: &[&str]) -> Result<String> {
    run_with(argv, None, DEFAULT_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tool_names_its_package() {
        // An empty search path still falls back to sbin; a tool that exists nowhere is missing.
        assert!(find_tool_in("wirerate-no-such-tool", "").is_none());
        let e = LabError::ToolMissing {
            tool: "nft",
            package: "nftables",
        };
        let msg = e.to_string();
        assert!(msg.contains("nftables") && msg.contains("scripts/install-deps.sh"));
        assert!(e.is_usage());
    }

    #[test]
    fn failing_command_quotes_stderr() {
        let err = run(&["sh", "-c", "echo boom >&2; exit 3"]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("boom") && msg.contains("exit status: 3"),
            "{msg}"
        );
    }

    #[test]
    fn hung_command_is_killed() {
        let err = run_with(&["sh", "-c", "sleep 5"], None, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, LabError::Timeout { .. }), "{err}");
    }
}
