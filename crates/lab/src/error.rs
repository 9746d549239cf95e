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
    /// A name or combination the lab's vocabulary refuses (`lab-model`): an unknown or invalid
    /// profile, topology, node or lab name, the fast path with a profile it must not run with.
    Model(lab_model::Error),
    /// The profile is valid but needs a kernel feature this machine lacks.
    Unsupported { profile: String, feature: String },
    /// The profile does not make sense on this topology (for example NAPT without a port B).
    ProfileNotForTopology { profile: String, topology: String },
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
                | LabError::Model(_)
                | LabError::Unsupported { .. }
                | LabError::ProfileNotForTopology { .. }
                | LabError::NoSuchNode { .. }
                | LabError::NotUp { .. }
                | LabError::TopologyMismatch { .. }
                | LabError::Busy { .. }
                | LabError::InvalidSpeed { .. }
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
            LabError::Model(e) => write!(f, "{e}"),
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

impl From<lab_model::Error> for LabError {
    fn from(e: lab_model::Error) -> Self {
        LabError::Model(e)
    }
}

impl std::error::Error for LabError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LabError::Io { source, .. } => Some(source),
            LabError::Model(e) => Some(e),
            _ => None,
        }
    }
}

/// Result alias for the lab crate.
pub type Result<T, E = LabError> = std::result::Result<T, E>;
