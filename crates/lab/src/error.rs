//! Everything that can go wrong in the lab, each variant with a message that says what to do
//! next. The CLI maps [`LabError::is_usage`] to exit status 2 (the request itself was wrong or
//! cannot be met on this machine) and everything else to 1.

use std::fmt;

/// A lab failure with an actionable, single-line message.
#[derive(Debug)]
pub enum LabError {
    /// Namespaces, veths and nftables need CAP_NET_ADMIN and CAP_SYS_ADMIN; we ask for root.
    NotRoot,
    /// A command-line tool the lab shells out to is not installed.
    ToolMissing {
        tool: &'static str,
        package: &'static str,
    },
    /// A profile name that does not follow any pattern of the catalogue.
    UnknownProfile { given: String, valid: String },
    /// A profile name with a bad parameter (for example `mss-clamp-0`).
    InvalidProfile { given: String, reason: String },
    /// The profile is valid but needs a kernel feature this machine lacks.
    Unsupported { profile: String, feature: String },
    /// The profile does not make sense on this topology (for example NAPT without a port B).
    ProfileNotForTopology { profile: String, topology: String },
    /// A lab name that would not give valid, unambiguous `wr-` names.
    InvalidName { name: String, reason: String },
    /// Unknown node in `lab exec NODE`.
    UnknownNode(String),
    /// Unknown topology name.
    UnknownTopology(String),
    /// The node or port does not exist in this lab's topology.
    NoSuchNode { node: String, topology: String },
    /// No complete lab of that name exists.
    NotUp { name: String },
    /// `lab up` with a different topology than the lab that is already up.
    TopologyMismatch {
        name: String,
        existing: String,
        wanted: String,
    },
    /// A child process exited unsuccessfully; carries its stderr.
    Command {
        argv: String,
        status: String,
        stderr: String,
    },
    /// A child process did not finish in time and was killed.
    Timeout { argv: String, secs: u64 },
    /// The lab did not reach the expected state (links up, addresses usable) before a deadline.
    NotReady { what: String },
    /// I/O on a local file (/proc, /sys, a temporary ruleset).
    Io {
        context: String,
        source: std::io::Error,
    },
    /// Output of a tool or a kernel file that we could not understand.
    Parse { context: String, detail: String },
    /// SIGINT/SIGTERM arrived while the lab was being built; what was built has been removed.
    Interrupted,
    /// Another process holds the lab ([`crate::LabLock`]).
    Busy { name: String, holder: String },
    /// A link speed the lab cannot shape to.
    /// `min` and `max`: the range the links can shape (`links::MIN_WIRE_BPS`, `MAX_WIRE_BPS`).
    InvalidSpeed { bps: u64, min: u64, max: u64 },
    /// The fast path must not run with this profile (packets would skip rules they must walk)
    /// or on this topology.
    FastpathRefused { profile: String, reason: String },
    /// The DUT's XDP programs are not what the lab put there (a foreign program, or the fast
    /// path on one interface only after a crash).
    FastpathState { detail: String },
    /// This build has no fast path objects (the `fastpath` feature was off: built without clang).
    FastpathNotBuilt,
}

impl LabError {
    /// True when the request itself is wrong or cannot be served on this machine (exit 2):
    /// retrying the same command unchanged will fail the same way.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LabError::NotRoot
                | LabError::ToolMissing { .. }
                | LabError::UnknownProfile { .. }
                | LabError::InvalidProfile { .. }
                | LabError::Unsupported { .. }
                | LabError::ProfileNotForTopology { .. }
                | LabError::InvalidName { .. }
                | LabError::UnknownNode(_)
                | LabError::UnknownTopology(_)
                | LabError::NoSuchNode { .. }
                | LabError::NotUp { .. }
                | LabError::TopologyMismatch { .. }
                | LabError::Busy { .. }
                | LabError::InvalidSpeed { .. }
                | LabError::FastpathRefused { .. }
                | LabError::FastpathNotBuilt
        )
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        LabError::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn parse(context: impl Into<String>, detail: impl Into<String>) -> Self {
        LabError::Parse {
            context: context.into(),
            detail: detail.into(),
        }
    }
}

/// Collapse a multi-line stderr into one line so every error stays a single line.
fn one_line(s: &str) -> String {
    let joined: Vec<&str> = s.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let mut out = joined.join(" | ");
    if out.len() > 600 {
        let mut cut = 600;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str(" …");
    }
    out
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabError::NotRoot => f.write_str(
                "the lab needs root (network namespaces, veths and nftables need CAP_NET_ADMIN); \
                 run it with sudo",
            ),
            LabError::ToolMissing { tool, package } => write!(
                f,
                "`{tool}` not found (Debian package {package}); install it with \
                 `sudo scripts/install-deps.sh`"
            ),
            LabError::Busy { name, holder } => write!(
                f,
                "lab {name} is in use by {holder}; one lab has one user at a time: wait for \
                 it to finish, or use another lab name"
            ),
            LabError::InvalidSpeed { bps, min, max } => write!(
                f,
                "a lab link speed of {bps} b/s cannot be shaped: give one from {min} to {max} \
                 b/s (for example 1G)"
            ),
            LabError::UnknownProfile { given, valid } => {
                write!(f, "unknown profile `{given}`; valid profiles: {valid}")
            }
            LabError::InvalidProfile { given, reason } => {
                write!(f, "invalid profile `{given}`: {reason}")
            }
            LabError::Unsupported { profile, feature } => {
                write!(
                    f,
                    "profile `{profile}` is unsupported on this kernel: {feature}"
                )
            }
            LabError::ProfileNotForTopology { profile, topology } => write!(
                f,
                "profile `{profile}` does not apply to the `{topology}` topology; \
                 use --topology forward"
            ),
            LabError::InvalidName { name, reason } => {
                write!(f, "invalid lab name `{name}`: {reason}")
            }
            LabError::UnknownNode(n) => {
                write!(f, "unknown node `{n}`; nodes are a, dut and b")
            }
            LabError::UnknownTopology(t) => write!(
                f,
                "unknown topology `{t}`; topologies are forward, endpoint and direct"
            ),
            LabError::NoSuchNode { node, topology } => {
                write!(f, "the `{topology}` topology has no node `{node}`")
            }
            LabError::NotUp { name } => write!(
                f,
                "lab `{name}` is not up; start it with `wirerate lab up --name {name}`"
            ),
            LabError::TopologyMismatch {
                name,
                existing,
                wanted,
            } => write!(
                f,
                "lab `{name}` is already up with topology {existing}, not {wanted}; \
                 run `wirerate lab down --name {name}` first"
            ),
            LabError::Command {
                argv,
                status,
                stderr,
            } => write!(f, "`{argv}` failed ({status}): {}", one_line(stderr)),
            LabError::Timeout { argv, secs } => {
                write!(f, "`{argv}` did not finish within {secs} s and was killed")
            }
            LabError::NotReady { what } => write!(f, "lab not ready in time: {what}"),
            LabError::Io { context, source } => write!(f, "{context}: {source}"),
            LabError::Parse { context, detail } => {
                write!(f, "could not understand {context}: {}", one_line(detail))
            }
            LabError::FastpathRefused { profile, reason } => write!(
                f,
                "the fast path cannot be combined with profile `{profile}`: {reason}"
            ),
            LabError::FastpathState { detail } => write!(
                f,
                "the DUT's fast path is in an unexpected state ({detail}); \
                 `wirerate lab fastpath --name NAME off` removes every XDP program from the \
                 DUT's interfaces"
            ),
            LabError::FastpathNotBuilt => f.write_str(
                "this build has no XDP fast path: it was built without the lab crate's `fastpath` \
                 feature, which compiles the BPF program with clang (the wirerate binary enables \
                 it); install clang and libbpf-dev with `sudo ./scripts/install-deps.sh` and build \
                 wirerate with `cargo build --release`",
            ),
            LabError::Interrupted => f.write_str(
                "interrupted; the partly built lab was removed (`wirerate lab down` cleans up \
                 anything left)",
            ),
        }
    }
}

impl std::error::Error for LabError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LabError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Result alias for the lab crate.
pub type Result<T, E = LabError> = std::result::Result<T, E>;
