//! DUT hook commands as data, where they run, and parsers for the statistics they print.
//!
//! A profile's hooks (setup, teardown, stats before/after each case, samplers during it) are
//! plain shell command lines from the plan. They run locally, inside a network namespace or on
//! the DUT over the system OpenSSH client ([`Exec`]); [`Exec::argv`] builds the argument vector
//! so the exact command is testable and recordable, and [`run`] / [`Sampler`] are a thin
//! `std::process` layer over it. Output is always stored raw; [`parse`] turns what is understood
//! (`vmstat`, `/proc/stat`, nftables counters, a power meter's watts) into numbers.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod parse;
pub mod stage;

pub use stage::{Reads, Stage};

/// Where a hook command runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "via", rename_all = "kebab-case")]
pub enum Exec {
    /// On this host, through `sh -c`.
    Local,
    /// In a network namespace on this host (`ip netns exec NAME sh -c …`).
    Netns {
        /// Namespace name.
        name: String,
    },
    /// On a remote host with the system OpenSSH client, never prompting (`BatchMode=yes`).
    Ssh {
        /// `[user@]host`.
        host: String,
        /// Port, when not 22.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<u16>,
    },
}

impl Exec {
    /// The argument vector that runs `command` with `env` set. For ssh the variables are put in
    /// front of the remote command with `env`, because OpenSSH only forwards variables the server
    /// allows with `AcceptEnv`.
    pub fn argv(&self, command: &str, env: &[(String, String)]) -> Vec<String> {
        let sh = |cmd: &str| vec!["sh".to_string(), "-c".to_string(), cmd.to_string()];
        match self {
            Exec::Local => sh(command),
            Exec::Netns { name } => {
                let mut v = vec!["ip".into(), "netns".into(), "exec".into(), name.clone()];
                v.extend(sh(command));
                v
            }
            Exec::Ssh { host, port } => {
                let mut v: Vec<String> = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                if let Some(p) = port {
                    v.extend(["-p".to_string(), p.to_string()]);
                }
                // `--` first: the destination can then never be read as an ssh option.
                v.extend(["--".to_string(), host.clone()]);
                let mut remote = String::new();
                if !env.is_empty() {
                    remote.push_str("env");
                    for (k, val) in env {
                        remote.push(' ');
                        remote.push_str(&shell_quote(&format!("{k}={val}")));
                    }
                    remote.push(' ');
                }
                remote.push_str("sh -c ");
                remote.push_str(&shell_quote(command));
                v.push(remote);
                v
            }
        }
    }

    /// Whether `env` must be set on the local process (local and netns) rather than in argv.
    pub fn env_is_local(&self) -> bool {
        !matches!(self, Exec::Ssh { .. })
    }
}

/// Quotes `s` for a POSIX shell: single quotes, with `'` written as `'\''`.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Which parser understands a hook's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Parser {
    /// `vmstat N` (Linux or BSD): CPU busy % per sample, 100 − idle.
    Vmstat,
    /// `cat /proc/stat`: CPU time counters; a before/after pair gives CPU busy %.
    ProcStat,
    /// `nft list counters` or `nft list ruleset` text: counter totals.
    Nft,
    /// `nft -j list ruleset`: counter totals.
    NftJson,
    /// A power meter: one reading per line, in watts unless the line says `mW`/`kW`.
    Power,
}

impl Parser {
    /// Every parser with its plan name.
    pub const ALL: [(&'static str, Parser); 5] = [
        ("vmstat", Parser::Vmstat),
        ("proc-stat", Parser::ProcStat),
        ("nft", Parser::Nft),
        ("nft-json", Parser::NftJson),
        ("power", Parser::Power),
    ];

    /// Looks a parser up by its plan name.
    pub fn from_name(name: &str) -> Option<Parser> {
        Parser::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| *p)
    }

    /// Parses `text`; `None` when it is not what this parser understands.
    pub fn parse(self, text: &str) -> Option<parse::Parsed> {
        match self {
            Parser::Vmstat => parse::vmstat(text).map(parse::Parsed::Vmstat),
            Parser::ProcStat => {
                Some(parse::Parsed::ProcStat(parse::proc_stat(text)).filter_empty()?)
            }
            Parser::Nft => parse::nft_text(text).map(parse::Parsed::Nft),
            Parser::NftJson => parse::nft_json(text).map(parse::Parsed::Nft),
            Parser::Power => parse::power(text).map(parse::Parsed::Power),
        }
    }
}

/// One hook: a shell command line and, optionally, how to parse what it prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    /// Shell command line (run with `sh -c`).
    pub command: String,
    /// Parser for its output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parse: Option<Parser>,
}

/// All hooks of one DUT profile.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileHooks {
    /// Run once before the profile's first case.
    pub setup: Vec<Hook>,
    /// Run once after the profile's last case, and on Ctrl-C.
    pub teardown: Vec<Hook>,
    /// Run before each case.
    pub stats_before: Vec<Hook>,
    /// Run after each case.
    pub stats_after: Vec<Hook>,
    /// Started before each case and stopped after it (e.g. `vmstat 1`).
    pub samplers: Vec<Hook>,
}

/// What a hook printed, raw and parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookOutput {
    /// The exact argument vector that ran.
    pub argv: Vec<String>,
    /// Exit code; `None` when wirerate ended it: a sampler it stopped, a hook killed by its
    /// timeout. A sampler that ended by itself before it was stopped keeps its status (128 + N
    /// when signal N ended it, as a shell reports it): [`HookOutput::sampler_ended_early`].
    pub status: Option<i32>,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// What the hook's parser made of `stdout`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed: Option<parse::Parsed>,
}

impl HookOutput {
    /// True when the command exited with status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// For a sampler's output: it ended by itself before the case did. A sampler is meant to
    /// run until [`Sampler::stop`] ends it (which records no status), so whatever it measured
    /// covers part of the case at most, and a snapshot command (`cat /proc/stat`) gives one
    /// line and no figure; the runner warns and the report says so in its notes.
    pub fn sampler_ended_early(&self) -> bool {
        self.status.is_some()
    }

    /// The command line that ran: what follows `sh -c` in [`HookOutput::argv`] (for ssh, the
    /// remote line).
    pub fn command(&self) -> &str {
        self.argv
            .windows(3)
            .find(|w| w[0] == "sh" && w[1] == "-c")
            .map(|w| w[2].as_str())
            .unwrap_or_else(|| self.argv.last().map_or("", String::as_str))
    }

    /// The warning, for the run's progress and the report's notes, about a sampler of case
    /// `case_id` that ended by itself ([`HookOutput::sampler_ended_early`]), running `command`.
    pub fn sampler_ended_warning(&self, case_id: &str, command: &str) -> String {
        let said = self
            .stderr
            .lines()
            .chain(self.stdout.lines())
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map_or(String::new(), |l| {
                let l: String = l.chars().take(100).collect();
                format!("; its first words: {l}")
            });
        format!(
            "{case_id}: sampler `{command}` ended by itself (exit status {}) before the case did, so its figures cover part of the case at most{said} (hooks.jsonl has its output). A sampler must run until it is stopped (`vmstat 1`, a meter read in a loop); a command that prints once belongs in stats-before and stats-after",
            self.status.map_or("-".into(), |s| s.to_string())
        )
    }
}

fn command(exec: &Exec, argv: &[String], env: &[(String, String)]) -> Command {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).stdin(Stdio::null());
    if exec.env_is_local() {
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
    }
    cmd
}

/// Runs `hook` to completion through `exec`, killed after `timeout` (coreutils `timeout`, so a
/// hung ssh connection cannot hang the run).
pub fn run(
    exec: &Exec,
    hook: &Hook,
    env: &[(String, String)],
    timeout: Duration,
) -> std::io::Result<HookOutput> {
    let inner = exec.argv(&hook.command, env);
    let mut argv = vec![
        "timeout".to_string(),
        "--kill-after=5".to_string(),
        format!("{}", timeout.as_secs_f64()),
    ];
    argv.extend(inner);
    let out = command(exec, &argv, env).output()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok(HookOutput {
        parsed: hook.parse.and_then(|p| p.parse(&stdout)),
        argv,
        status: out.status.code(),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Output collected by a reader thread, with a condition variable so a caller can wait for a
/// line to appear (with a deadline) instead of sleeping.
type Shared = std::sync::Arc<(std::sync::Mutex<Vec<u8>>, std::sync::Condvar)>;

/// A long-running hook (a sampler such as `vmstat 1`) whose output is collected until
/// [`Sampler::stop`].
#[derive(Debug)]
pub struct Sampler {
    hook: Hook,
    argv: Vec<String>,
    child: Child,
    stdout: Shared,
    readers: Vec<JoinHandle<()>>,
    stderr: Shared,
}

fn drain(mut r: impl Read + Send + 'static, into: Shared) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        loop {
            let n = r.read(&mut chunk).unwrap_or(0);
            let (lock, cvar) = &*into;
            if let Ok(mut buf) = lock.lock() {
                buf.extend_from_slice(&chunk[..n]);
            }
            cvar.notify_all();
            if n == 0 {
                break;
            }
        }
    })
}

fn text(shared: &Shared) -> String {
    shared
        .0
        .lock()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

impl Sampler {
    /// Starts `hook` through `exec`.
    pub fn start(exec: &Exec, hook: &Hook, env: &[(String, String)]) -> std::io::Result<Sampler> {
        let argv = exec.argv(&hook.command, env);
        // Its own process group, so `stop` ends the command's children too (`sh -c 'vmstat 1'`
        // forks vmstat, which would otherwise outlive the shell and keep the pipes open).
        let mut child = command(exec, &argv, env)
            .process_group(0)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = Shared::default();
        let stderr = Shared::default();
        let mut readers = Vec::new();
        if let Some(o) = child.stdout.take() {
            readers.push(drain(o, stdout.clone()));
        }
        if let Some(e) = child.stderr.take() {
            readers.push(drain(e, stderr.clone()));
        }
        Ok(Sampler {
            hook: hook.clone(),
            argv,
            child,
            stdout,
            readers,
            stderr,
        })
    }

    /// The hook's command line, as the plan gave it.
    pub fn command(&self) -> &str {
        &self.hook.command
    }

    /// Waits until the sampler's output contains `needle`, at most `deadline`; true if it does.
    pub fn wait_for_output(&self, needle: &str, deadline: Duration) -> bool {
        let end = std::time::Instant::now() + deadline;
        let (lock, cvar) = &*self.stdout;
        let Ok(mut buf) = lock.lock() else {
            return false;
        };
        loop {
            if String::from_utf8_lossy(&buf).contains(needle) {
                return true;
            }
            let now = std::time::Instant::now();
            if now >= end {
                return false;
            }
            match cvar.wait_timeout(buf, end - now) {
                Ok((b, _)) => buf = b,
                Err(_) => return false,
            }
        }
    }

    /// Stops the sampler (SIGTERM to the process group it leads, then SIGKILL to the child
    /// itself) and returns what it printed. A sampler still running is recorded without a
    /// status, however it died; one that had ended by itself keeps its exit status
    /// ([`HookOutput::sampler_ended_early`]).
    pub fn stop(mut self) -> std::io::Result<HookOutput> {
        use std::os::unix::process::ExitStatusExt;
        let ended = self.child.try_wait()?;
        if ended.is_none() {
            // The group this sampler leads (created in `start`): the shell and what it started.
            let _ = Command::new("kill")
                .args(["-TERM", "--", &format!("-{}", self.child.id())])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let _ = self.child.kill();
        }
        // Reaps the child either way (one that had ended is a zombie until now).
        self.child.wait()?;
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let status = ended.map(|st| {
            st.code()
                .or_else(|| st.signal().map(|n| 128 + n))
                .unwrap_or(-1)
        });
        let stdout = text(&self.stdout);
        Ok(HookOutput {
            parsed: self.hook.parse.and_then(|p| p.parse(&stdout)),
            argv: self.argv,
            status,
            stdout,
            stderr: text(&self.stderr),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Vec<(String, String)> {
        vec![
            ("WR_PROFILE".into(), "napt".into()),
            ("WR_NOTE".into(), "it's".into()),
        ]
    }

    #[test]
    fn argv_local_netns_ssh() {
        assert_eq!(
            Exec::Local.argv("nft list counters", &env()),
            ["sh", "-c", "nft list counters"]
        );
        assert_eq!(
            Exec::Netns {
                name: "wr-demo-dut".into()
            }
            .argv("vmstat 1", &[]),
            ["ip", "netns", "exec", "wr-demo-dut", "sh", "-c", "vmstat 1"]
        );
        let ssh = Exec::Ssh {
            host: "root@192.0.2.1".into(),
            port: Some(2222),
        }
        .argv("pfctl -si | head", &env());
        assert_eq!(
            ssh,
            [
                "ssh",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=10",
                "-p",
                "2222",
                "--",
                "root@192.0.2.1",
                r"env WR_PROFILE=napt 'WR_NOTE=it'\''s' sh -c 'pfctl -si | head'"
            ]
        );
    }

    /// A host that looks like an ssh option stays a host name: real ssh, given the argv the
    /// hooks use, must not run the ProxyCommand it carries (it ran as root before `--` moved
    /// in front of the host).
    #[test]
    fn ssh_host_can_never_become_an_option() {
        if !std::path::Path::new("/usr/bin/ssh").exists() {
            eprintln!("SKIP ssh_host_can_never_become_an_option: no /usr/bin/ssh (scripts/install-deps.sh installs openssh-client)");
            return;
        }
        let mark = std::env::temp_dir().join(format!("wr-ssh-inject-{}", std::process::id()));
        let _ = std::fs::remove_file(&mark);
        let exec = Exec::Ssh {
            host: format!("-oProxyCommand=touch {}", mark.display()),
            port: None,
        };
        let argv = exec.argv("true", &[]);
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let injected = mark.exists();
        let _ = std::fs::remove_file(&mark);
        assert!(
            !out.status.success(),
            "ssh to an option-like host cannot succeed"
        );
        assert!(
            !injected,
            "the ProxyCommand ran: the host was read as an option"
        );
    }

    #[test]
    fn local_run_sees_env_and_parses() {
        let hook = Hook {
            command: "echo \"$WR_PROFILE\"; cat tests/fixtures/hooks/vmstat-1.txt".into(),
            parse: Some(Parser::Vmstat),
        };
        let out = run(&Exec::Local, &hook, &env(), Duration::from_secs(10)).unwrap();
        assert!(out.success(), "{out:?}");
        assert!(out.stdout.starts_with("napt\n"));
        assert!(matches!(out.parsed, Some(parse::Parsed::Vmstat(_))));
    }

    #[test]
    fn sampler_is_stopped_and_keeps_its_output() {
        let hook = Hook {
            command: "echo started; exec sleep 30".into(),
            parse: None,
        };
        let s = Sampler::start(&Exec::Local, &hook, &[]).unwrap();
        assert!(s.wait_for_output("started", Duration::from_secs(10)));
        let out = s.stop().unwrap();
        assert_eq!(out.status, None, "stopped by wirerate");
        assert!(!out.sampler_ended_early());
        assert_eq!(out.stdout, "started\n");
    }

    /// A sampler whose command ends by itself (a snapshot such as `cat /proc/stat` given as a
    /// sampler, a meter that fails) keeps its exit status and output, so the runner can warn
    /// and the report can say so.
    #[test]
    fn a_sampler_that_ends_by_itself_keeps_its_status_and_output() {
        let hook = Hook {
            command: "echo one line; echo oops >&2; exit 3".into(),
            parse: None,
        };
        let s = Sampler::start(&Exec::Local, &hook, &[]).unwrap();
        assert!(s.wait_for_output("one line", Duration::from_secs(10)));
        // Its stdout closes when it exits; wait for that before stopping it.
        let end = std::time::Instant::now() + Duration::from_secs(10);
        let mut s = s;
        while s.child.try_wait().unwrap().is_none() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = s.stop().unwrap();
        assert_eq!(out.status, Some(3));
        assert!(out.sampler_ended_early());
        assert_eq!(out.stdout, "one line\n");
        assert_eq!(out.stderr, "oops\n");
        // Ended by a signal of its own: 128 + N, as a shell says.
        let hook = Hook {
            command: "kill -TERM $$".into(),
            parse: None,
        };
        let mut s = Sampler::start(&Exec::Local, &hook, &[]).unwrap();
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while s.child.try_wait().unwrap().is_none() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        let out = s.stop().unwrap();
        assert_eq!(out.status, Some(128 + 15));
    }
}
