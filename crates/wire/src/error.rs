//! The one error type of the `wire` crate.
//!
//! Parsers never panic: every malformed or short input becomes one of these variants.

use core::fmt;

/// Why a buffer could not be parsed or a representation could not be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The buffer is shorter than the header (or the length it declares).
    Truncated,
    /// A field holds a value the format forbids; the string names the field.
    Malformed(&'static str),
    /// A well-formed value this crate does not handle (e.g. an unknown hardware type).
    Unsupported(&'static str),
    /// A checksum does not verify.
    Checksum,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => write!(f, "buffer too short for the header or its declared length"),
            Error::Malformed(what) => write!(f, "malformed field: {what}"),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
            Error::Checksum => write!(f, "checksum does not verify"),
        }
    }
}

impl std::error::Error for Error {}

/// Result alias used by every parser and emitter in this crate.
pub type Result<T> = core::result::Result<T, Error>;
