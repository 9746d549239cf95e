//! Unit newtypes, so that a frame rate is never added to a bit rate by accident.

use core::fmt;
use serde::{Deserialize, Serialize};

/// Frames (or packets) per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pps(pub f64);

/// Bits per second.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BitsPerSec(pub f64);

/// A count of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

/// A duration or instant in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl core::ops::Add for Pps {
    type Output = Pps;
    fn add(self, o: Pps) -> Pps {
        Pps(self.0 + o.0)
    }
}

impl core::ops::Add for BitsPerSec {
    type Output = BitsPerSec;
    fn add(self, o: BitsPerSec) -> BitsPerSec {
        BitsPerSec(self.0 + o.0)
    }
}

/// Formats with an SI prefix (k, M, G, T) and three significant decimals, e.g. `1.488 M`.
pub fn si(value: f64) -> String {
    let (scaled, prefix) = if value >= 1e12 {
        (value / 1e12, "T")
    } else if value >= 1e9 {
        (value / 1e9, "G")
    } else if value >= 1e6 {
        (value / 1e6, "M")
    } else if value >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    format!("{scaled:.3} {prefix}")
}

impl fmt::Display for Pps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}pps", si(self.0))
    }
}

impl fmt::Display for BitsPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}b/s", si(self.0))
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} B", self.0)
    }
}

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ns", self.0)
    }
}
