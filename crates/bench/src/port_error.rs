//! How an ISP-side port of a run (a PPPoE session port, [`crate::isp::SessionPort`], a DS-Lite
//! port, [`crate::isp::SoftwirePort`], or an IPoE port, [`crate::ipoe_port::LeasePort`]) fails to start, to come up or to finish. The
//! variants carry the port, the timeout and the underlying error so callers can tell a DUT
//! that never answered from a port that could not be opened; the messages are the ones a run's
//! log and the CLI print.

use std::fmt;
use std::time::Duration;

use crate::plan::IpoeSettingsError;

/// What a port plays, as its messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    Pppoe,
    Ipoe,
    DsliteAftr,
    DsliteB4,
    MapeBr,
}

impl fmt::Display for PortKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PortKind::Pppoe => "PPPoE",
            PortKind::Ipoe => "IPoE",
            PortKind::DsliteAftr => "DS-Lite AFTR",
            PortKind::DsliteB4 => "DS-Lite B4",
            PortKind::MapeBr => "MAP-E BR",
        })
    }
}

/// Who a port waited for in vain ([`PortError::NoPeer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// An access concentrator port: the DUT's PPPoE client.
    Subscriber,
    /// A PPPoE client port: the DUT's access concentrator.
    AccessConcentrator,
    /// An IPoE port: the DUT's DHCPv4 client.
    Gateway,
}

/// Why an ISP-side port did not do its work.
#[derive(Debug)]
pub enum PortError {
    /// The port's settings were refused before anything was created (the plan checks them
    /// first, so this is a caller that did not).
    Settings {
        port: String,
        source: IpoeSettingsError,
    },
    /// The Internet side (its namespace and TUN device) could not be made.
    Internet { port: String, reason: String },
    /// The port's thread could not be started.
    Spawn {
        kind: PortKind,
        source: std::io::Error,
    },
    /// The port's machine ended before it was up (its socket could not be opened, its thread
    /// failed, or it did not report in time): `reason` is its own words.
    Ended {
        kind: PortKind,
        port: String,
        reason: String,
    },
    /// Nobody came up within `timeout`.
    NoPeer {
        port: String,
        peer: Peer,
        timeout: Duration,
    },
    /// The port's control plane could not be started on its interface (the engine's error).
    Open {
        kind: PortKind,
        port: String,
        source: engine::Error,
    },
    /// A DS-Lite B4 port without the AFTR's address.
    NoAftrAddress,
    /// A MAP-E BR port whose mapping rule cannot be built (the plan checks it first, so this
    /// is a caller that did not).
    MapeRule { port: String, source: wire::Error },
    /// A B4's tunnel probe got no answer within `timeout` (`state`: the B4's state then).
    NoTunnel {
        port: String,
        timeout: Duration,
        state: String,
    },
    /// Stopping the port's control plane failed (the engine's error).
    Stop {
        kind: PortKind,
        source: engine::Error,
    },
    /// `stop` was set while waiting.
    Interrupted,
    /// [`finish`](crate::isp::SessionPort::finish) was called twice.
    AlreadyFinished,
    /// The port's thread panicked.
    Panicked { kind: PortKind },
    /// The port's thread returned an error when it was stopped (its own words).
    Failed { kind: PortKind, reason: String },
}

impl fmt::Display for PortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortError::Settings { port, source } => write!(f, "IPoE on port {port}: {source}"),
            PortError::Internet { reason, .. } => f.write_str(reason),
            PortError::Spawn { kind, source } => write!(f, "starting the {kind} thread: {source}"),
            PortError::Ended { kind, port, reason } => write!(f, "{kind} on port {port}: {reason}"),
            PortError::NoPeer {
                port,
                peer,
                timeout,
            } => {
                let s = timeout.as_secs_f64();
                match peer {
                    Peer::Subscriber => write!(
                        f,
                        "PPPoE on port {port}: no subscriber (the DUT's PPPoE client) brought a session up within {s:.0} s; nothing was sent"
                    ),
                    Peer::AccessConcentrator => write!(
                        f,
                        "PPPoE on port {port}: no access concentrator gave us a session within {s:.0} s; nothing was sent"
                    ),
                    Peer::Gateway => write!(
                        f,
                        "IPoE on port {port}: no gateway took a DHCPv4 lease within {s:.0} s; nothing was sent (is the DUT's WAN set to DHCP, and cabled to this port?)"
                    ),
                }
            }
            PortError::Open { kind, port, source } => write!(f, "{kind} on port {port}: {source}"),
            PortError::NoAftrAddress => f.write_str("a B4 needs the AFTR's address"),
            PortError::MapeRule { port, source } => {
                write!(f, "MAP-E BR on port {port}: {source}")
            }
            PortError::NoTunnel {
                port,
                timeout,
                state,
            } => write!(
                f,
                "DS-Lite on port {port}: the AFTR did not answer the B4's tunnel probe within {:.0} s (state {state}); nothing was sent",
                timeout.as_secs_f64()
            ),
            PortError::Stop { source, .. } => source.fmt(f),
            PortError::Interrupted => f.write_str("interrupted"),
            PortError::AlreadyFinished => f.write_str("already finished"),
            PortError::Panicked { kind } => write!(f, "the {kind} thread panicked"),
            PortError::Failed { reason, .. } => f.write_str(reason),
        }
    }
}

impl std::error::Error for PortError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PortError::Settings { source, .. } => Some(source),
            PortError::Spawn { source, .. } => Some(source),
            PortError::Open { source, .. } | PortError::Stop { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_names_the_port_the_peer_and_the_seconds() {
        let e = PortError::NoPeer {
            port: "b".into(),
            peer: Peer::AccessConcentrator,
            timeout: Duration::from_secs(30),
        };
        assert_eq!(
            e.to_string(),
            "PPPoE on port b: no access concentrator gave us a session within 30 s; nothing was sent"
        );
        let e = PortError::NoPeer {
            port: "a".into(),
            peer: Peer::Gateway,
            timeout: Duration::from_secs(10),
        };
        assert!(e
            .to_string()
            .starts_with("IPoE on port a: no gateway took a DHCPv4 lease within 10 s"));
    }
}
