//! # engine
//!
//! wirerate's packet engine (issue 4): ports on AF_PACKET, streams with paced transmission,
//! signature-verified receive with exact loss, duplicate, reordering and latency accounting,
//! and trials that run a set of streams between ports. It sends and receives; measuring it
//! side by side with other tools (`wirerate bench`) is the `tester-bench` crate's job.
//!
//! | module | job |
//! |---|---|
//! | [`sys`] | the only `unsafe`: AF_PACKET sockets, TX ring (TPACKET_V2), RX ring (TPACKET_V3), setns, CPU affinity, clocks |
//! | [`port`] | a port: an interface, maybe inside a netns; opens its TX/RX rings from inside it |
//! | [`resolve`] | ARP/ND: answer for our addresses, resolve the next hop's MAC |
//! | [`lan_watch`] | the LAN health watch: ARP/ND requests to a gateway at a fixed period during a trial, which were answered |
//! | [`stream`] | stream configuration and the per-frame writer (flows, IMIX, signature stamping) |
//! | [`flowset`] | flow sets of any size: N distinct tuples per cycle, counting or permuted (Feistel) order |
//! | [`nat`] | the two-phase connection trial of a NAT or stateful firewall: a responder that learns translated tuples and answers on them |
//! | [`pacing`] | the absolute send schedule with bounded catch-up |
//! | [`tx`] | the transmit loop on a TX ring: exact "accepted by the kernel" counts |
//! | [`rx`] | classification and per-stream receive accounting |
//! | [`rx_clock`] | AF_PACKET receive stamps (CLOCK_REALTIME) onto the signature's clock, across steps of the realtime clock |
//! | [`settle`] | waiting for a receive count to reach what was sent or stand still, instead of a fixed sleep |
//! | [`unknown`] | the one error of a name outside a fixed set (`unknown backend "dpdk" (auto, af_packet, xdp)`) |
//! | [`validate`] | receive-side validation: which signed frames count for a stream, invalid ones by reason |
//! | [`trial`] | one timed run of a set of streams between ports |
//! | [`control`] | runs an `emulate` control plane (PPPoE, ARP/ND, DS-Lite) on a port's socket |
//! | [`xdp`] | the XDP backend: BPF programs that stamp and send (live frames) and count in maps |

// `unsafe` only in the `sys` modules (this one and `xdp::sys`), which allow it.
#![deny(unsafe_code)]

pub mod control;
pub mod flowset;
pub mod lan_watch;
pub mod nat;
pub mod pacing;
pub mod port;
pub mod resolve;
pub mod rx;
pub mod rx_clock;
pub mod settle;
pub mod stream;
#[allow(unsafe_code)]
pub mod sys;
pub mod trial;
pub mod tun;
pub mod tx;
pub mod unknown;
pub mod validate;
pub mod xdp;

use std::fmt;

/// What can go wrong in the engine.
#[derive(Debug)]
pub enum Error {
    /// The request does not make sense (a bad stream, a frame without signature, ...): the
    /// user's to fix.
    Config(String),
    /// The engine's own BPF objects could not be loaded, found complete, read or attached
    /// (the kernel or its verifier refused a program, a map is missing or unreadable, no XDP
    /// mode attaches): a fault of the tester or of the system it runs on, never of the request,
    /// so callers must not report it as a usage error.
    Bpf(String),
    /// A system call failed; `what` says which step.
    Io {
        what: String,
        source: std::io::Error,
    },
    /// Something did not answer in time (next hop resolution, a thread).
    Timeout(String),
    /// A worker thread failed or panicked.
    Thread(String),
}

impl Error {
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) | Error::Bpf(m) | Error::Timeout(m) | Error::Thread(m) => {
                f.write_str(m)
            }
            Error::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
