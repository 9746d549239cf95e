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

/// Sums of rates over streams or directions (`total += stream`).
impl core::ops::AddAssign for Pps {
    fn add_assign(&mut self, o: Pps) {
        self.0 += o.0;
    }
}

impl core::ops::AddAssign for BitsPerSec {
    fn add_assign(&mut self, o: BitsPerSec) {
        self.0 += o.0;
    }
}

/// A load fraction (or count of directions) times a rate: `0.5 × 1.488 Mpps`.
impl core::ops::Mul<f64> for Pps {
    type Output = Pps;
    fn mul(self, k: f64) -> Pps {
        Pps(self.0 * k)
    }
}

/// A load fraction (or count of directions) times a rate.
impl core::ops::Mul<f64> for BitsPerSec {
    type Output = BitsPerSec;
    fn mul(self, k: f64) -> BitsPerSec {
        BitsPerSec(self.0 * k)
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

/// Parses a time with a unit: `250ns`, `100us` (or `µs`), `5ms`, `1.5s`, `2m` (or `2min`),
/// `1h`. The one time parser of `wirerate trial`'s flags and stream files and of plans (which
/// add file, line and key to the message).
pub fn parse_time(text: &str) -> Result<std::time::Duration, ParseTimeError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let why = |problem| ParseTimeError {
        text: t.to_string(),
        problem,
    };
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => return Err(why(TimeProblem::NoUnit)),
        u => return Err(why(TimeProblem::UnknownUnit(u.to_string()))),
    };
    let v: f64 = num.parse().map_err(|_| why(TimeProblem::BadNumber))?;
    std::time::Duration::try_from_secs_f64(v * scale).map_err(|_| why(TimeProblem::TooLong))
}

/// Why [`parse_time`] refused a text; the message quotes it (trimmed) and says what to give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseTimeError {
    /// The text as parsed (trimmed).
    pub text: String,
    pub problem: TimeProblem,
}

/// What is wrong with a time's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeProblem {
    /// A number without a unit.
    NoUnit,
    /// A unit that is not ns, us/µs, ms, s, m/min or h.
    UnknownUnit(String),
    /// The number does not parse (or is negative).
    BadNumber,
    /// Too long for a `Duration` (or not finite).
    TooLong,
}

impl fmt::Display for ParseTimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.text;
        match &self.problem {
            TimeProblem::NoUnit => write!(f, "time '{t}': give a unit: 500us, 5ms, 1s"),
            TimeProblem::UnknownUnit(u) => {
                write!(f, "time '{t}': unknown unit '{u}' (ns, us, ms, s, m, h)")
            }
            TimeProblem::BadNumber => write!(f, "time '{t}': bad number"),
            TimeProblem::TooLong => write!(f, "time '{t}': too long"),
        }
    }
}

impl std::error::Error for ParseTimeError {}

#[cfg(test)]
mod time_tests {
    use super::{parse_time, TimeProblem};
    use std::time::Duration;

    #[test]
    fn times_parse_with_their_unit_and_nonsense_is_refused() {
        assert_eq!(parse_time("5ms").unwrap(), Duration::from_millis(5));
        assert_eq!(parse_time("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_time("250µs").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_time("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("100ns").unwrap(), Duration::from_nanos(100));
        assert_eq!(parse_time(" 2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("2min").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("1h").unwrap(), Duration::from_secs(3600));
        for bad in ["5", "ms", "5 parsecs", "-1ms", "1e999s", "", "1.2.3s"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_time("5").unwrap_err().to_string(),
            "time '5': give a unit: 500us, 5ms, 1s"
        );
        assert_eq!(
            parse_time(" 5 parsecs").unwrap_err().to_string(),
            "time '5 parsecs': unknown unit 'parsecs' (ns, us, ms, s, m, h)"
        );
        assert_eq!(
            parse_time("1.2.3s").unwrap_err().to_string(),
            "time '1.2.3s': bad number"
        );
        assert_eq!(
            parse_time("1e999s").unwrap_err().problem,
            TimeProblem::UnknownUnit("e999s".into())
        );
        assert_eq!(
            parse_time("99999999999999999999999h")
                .unwrap_err()
                .to_string(),
            "time '99999999999999999999999h': too long"
        );
    }
}
