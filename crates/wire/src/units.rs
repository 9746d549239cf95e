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

/// Parses a time with a unit: `250ns`, `100us` (or `µs`), `5ms`, `1.5s`, `2m` (or `2min`),
/// `1h`. The one time parser of `wirerate trial`'s flags and stream files and of plans (which
/// add file, line and key to the message).
pub fn parse_time(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => return Err(format!("time '{t}': give a unit: 500us, 5ms, 1s")),
        u => {
            return Err(format!(
                "time '{t}': unknown unit '{u}' (ns, us, ms, s, m, h)"
            ))
        }
    };
    let v: f64 = num.parse().map_err(|_| format!("time '{t}': bad number"))?;
    std::time::Duration::try_from_secs_f64(v * scale).map_err(|_| format!("time '{t}': too long"))
}

#[cfg(test)]
mod time_tests {
    use super::parse_time;
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
        assert!(parse_time("5").unwrap_err().contains("give a unit"));
        assert!(parse_time("5 parsecs")
            .unwrap_err()
            .contains("unknown unit 'parsecs'"));
    }
}
