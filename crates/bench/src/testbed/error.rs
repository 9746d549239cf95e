//! Why a testbed did not come up or go down cleanly: [`TestbedError`]. The variants carry the
//! lab's, the ports' and the files' own errors, so a caller can tell a lab in use from a DUT
//! that never dialled; the messages are the ones a run printed before.

use std::fmt;

use crate::port_error::PortError;

use super::SESSIONS_JSONL;

/// Why [`super::Testbed::up`] or [`super::Testbed::down`] failed.
#[derive(Debug)]
pub enum TestbedError {
    /// The plan's lab topology is not one the lab builds.
    Topology(lab::ModelError),
    /// The lab is held by another run (or its lock could not be taken).
    Lock(lab::LabError),
    /// Removing or building the lab `name` failed.
    Lab { name: String, source: lab::LabError },
    /// Reading the built lab's ports failed (the lab is removed again).
    LabPorts(lab::LabError),
    /// A plan on real interfaces without ports.
    NoPorts,
    /// The run's `sessions.jsonl` could not be opened.
    SessionsLog(std::io::Error),
    /// A port's control plane (PPPoE, DS-Lite, IPoE) could not be started, or a DS-Lite B4
    /// found no AFTR.
    Port(PortError),
    /// A PPPoE or IPoE port did not come up (the log says what was tried).
    PortUp(PortError),
    /// Taking the testbed down: every step that failed, in order.
    Down(Vec<TeardownError>),
}

/// One step of taking a testbed down that failed.
#[derive(Debug)]
pub enum TeardownError {
    /// Closing a port's control plane.
    Port(PortError),
    /// Removing the lab.
    Lab(lab::LabError),
}

impl fmt::Display for TestbedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TestbedError::Topology(e) => e.fmt(f),
            TestbedError::Lock(e) | TestbedError::LabPorts(e) => e.fmt(f),
            TestbedError::Lab { name, source } => write!(f, "lab {name}: {source}"),
            TestbedError::NoPorts => f.write_str("the plan has no ports"),
            TestbedError::SessionsLog(e) => write!(f, "{SESSIONS_JSONL}: {e}"),
            TestbedError::Port(e) => e.fmt(f),
            TestbedError::PortUp(e) => {
                write!(f, "{e} (see {SESSIONS_JSONL} for what was tried)")
            }
            TestbedError::Down(steps) => {
                for (i, s) in steps.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    s.fmt(f)?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for TeardownError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TeardownError::Port(e) => e.fmt(f),
            TeardownError::Lab(e) => write!(f, "removing the lab: {e}"),
        }
    }
}

impl std::error::Error for TestbedError {}
impl std::error::Error for TeardownError {}
