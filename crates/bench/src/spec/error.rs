//! Why a [`super::TrialSpec`] cannot become a trial: every case is the user's to fix (a flag,
//! a `--streams` file, a plan value), so [`SpecError`] maps to [`BenchError::Usage`]; the
//! variants carry the values their messages name, so callers and tests can match on them.

use std::fmt;

use wire::encap::{EncapSpec, IpVersion};
use wire::template::TemplateError;

use crate::error::BenchError;

/// Why [`super::TrialSpec::build`] or [`super::from_plan::udp_spec`] refused.
#[derive(Debug)]
pub enum SpecError {
    /// `reorder_every` below 2.
    ReorderEvery { every: u64 },
    /// A count (`burst`, `src-ips`, …: `what`) of 0.
    ZeroCount { what: &'static str },
    /// A stream needs an address of `ip` the port does not have.
    NoAddress { port: String, ip: IpVersion },
    /// A frame of stream `stream` cannot be built at reference size `size` (its size, a
    /// header field).
    Template {
        stream: u16,
        size: usize,
        source: TemplateError,
    },
    /// The engine's own check of a built stream (pacing, bursts, limits).
    Stream(engine::Error),
    /// The carrier (a session or softwire) cannot carry the stream.
    Carry(CarryError),
    /// No stream at all.
    NoStreams,
    /// A UDP case of a plan without a frame size (the id of the case).
    NoFrameSize { case: String },
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::ReorderEvery { .. } => f.write_str("reorder_every: give K ≥ 2"),
            SpecError::ZeroCount { what } => write!(f, "{what} 0: give at least 1"),
            SpecError::NoAddress { port, ip } => {
                write!(f, "port {port} has no {ip} address (give --{port}-addr)")
            }
            SpecError::Template { stream, source, .. } => write!(f, "stream {stream}: {source}"),
            SpecError::Stream(e) => e.fmt(f),
            SpecError::Carry(e) => e.fmt(f),
            SpecError::NoStreams => {
                f.write_str("no streams: the TOML file needs at least one [[stream]]")
            }
            SpecError::NoFrameSize { case } => write!(f, "{case}: UDP case without a frame size"),
        }
    }
}

impl std::error::Error for SpecError {}

impl From<CarryError> for SpecError {
    fn from(e: CarryError) -> SpecError {
        SpecError::Carry(e)
    }
}

/// Every spec error is the user's to fix.
impl From<SpecError> for BenchError {
    fn from(e: SpecError) -> BenchError {
        BenchError::Usage(e.to_string())
    }
}

/// Why a [`super::Carrier`] cannot put a stream inside its session or softwire: the stream's
/// headers are not the ones it carries (`wirerate trial --inside` with another `--encap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarryError {
    /// `carrier` (`pppoe`, `dslite`) carries only `needs` frames, and the stream is `sent`.
    WrongEncap {
        carrier: &'static str,
        needs: &'static str,
        sent: EncapSpec,
    },
}

impl fmt::Display for CarryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CarryError::WrongEncap {
                carrier,
                needs,
                sent,
            } => write!(f, "--inside {carrier} needs --encap {needs}, not {sent}"),
        }
    }
}

impl std::error::Error for CarryError {}
