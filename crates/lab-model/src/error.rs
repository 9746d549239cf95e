//! What the lab's vocabulary refuses: a name that follows no pattern, a bad parameter, a
//! combination that must not run. Every message says what to give instead. `lab` carries these
//! inside its own error (`LabError::Model`), as usage errors (exit status 2).

use std::fmt;

/// A name or combination the vocabulary refuses, with an actionable, single-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A profile name that does not follow any pattern of the catalogue.
    UnknownProfile { given: String, valid: String },
    /// A profile name with a bad parameter (for example `mss-clamp-0`).
    InvalidProfile { given: String, reason: String },
    /// A lab name that would not give valid, unambiguous `wr-` names.
    InvalidName { name: String, reason: String },
    /// Unknown node in `lab exec NODE`.
    UnknownNode(String),
    /// Unknown topology name.
    UnknownTopology(String),
    /// The fast path must not run with this profile (packets would skip rules they must walk)
    /// or on this topology.
    FastpathRefused { profile: String, reason: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownProfile { given, valid } => {
                write!(f, "unknown profile `{given}`; valid profiles: {valid}")
            }
            Error::InvalidProfile { given, reason } => {
                write!(f, "invalid profile `{given}`: {reason}")
            }
            Error::InvalidName { name, reason } => {
                write!(f, "invalid lab name `{name}`: {reason}")
            }
            Error::UnknownNode(n) => {
                write!(f, "unknown node `{n}`; nodes are a, dut and b")
            }
            Error::UnknownTopology(t) => write!(
                f,
                "unknown topology `{t}`; topologies are forward, endpoint and direct"
            ),
            Error::FastpathRefused { profile, reason } => write!(
                f,
                "the fast path cannot be combined with profile `{profile}`: {reason}"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Result alias for the vocabulary.
pub type Result<T, E = Error> = std::result::Result<T, E>;
