//! A stream's load with its unit, as both front doors give it: `wirerate trial --rate` (and a
//! `--streams` file's `rate`) as text, a plan's search as a [`LineFraction`]. Turned into
//! frames per second in one place ([`Load::pps`]), against the path-aware 100 % of
//! [`wire::linerate::path_max_pps`].

use wire::units::Pps;

use crate::error::BenchError;
use crate::search::LineFraction;

/// The lowest rate a line fraction asks for: a search's load near 0 still sends something
/// (and the engine refuses a rate of 0).
pub const MIN_FRACTION_PPS: f64 = 1.0;

/// How fast a stream sends, in the unit it was given in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// A fraction of the stream's path-aware line rate (`50%`; a plan's search load).
    LineFraction(f64),
    /// Frames per second (`10kpps`).
    Pps(f64),
    /// Bits per second on the wire of the frames as sent: length with FCS plus preamble, SFD
    /// and inter-frame gap (`100M`, `1Gbps`, `100M-l1`).
    L1Bps(f64),
    /// Bits per second of the frames as sent, with FCS (`100M-l2`).
    L2Bps(f64),
}

impl From<LineFraction> for Load {
    fn from(f: LineFraction) -> Load {
        Load::LineFraction(f.0)
    }
}

impl Load {
    /// Parses a rate: `10kpps`, `1.5Mpps` (frames/s); `100M`, `1Gbps` (L1 bit/s, as on the
    /// wire; `-l1` may be added); `100M-l2` (L2, with FCS); `50%` (of the path-aware line
    /// rate). The one rate parser of `wirerate trial`'s flags and stream files.
    pub fn parse(text: &str) -> Result<Load, BenchError> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        if let Some(p) = lower.strip_suffix('%') {
            let percent: f64 = p
                .trim()
                .parse()
                .map_err(|_| BenchError::Usage(format!("rate '{t}': bad percentage")))?;
            if !(percent > 0.0 && percent <= 100.0) {
                return Err(BenchError::Usage(format!(
                    "rate '{t}': give a percentage in (0, 100]"
                )));
            }
            return Ok(Load::LineFraction(percent / 100.0));
        }
        if let Some(p) = lower.strip_suffix("pps") {
            let (num, mult) = match p.chars().last() {
                Some('k') => (&p[..p.len() - 1], 1e3),
                Some('m') => (&p[..p.len() - 1], 1e6),
                Some('g') => (&p[..p.len() - 1], 1e9),
                _ => (p, 1.0),
            };
            let v: f64 = num
                .trim()
                .parse()
                .map_err(|_| BenchError::Usage(format!("rate '{t}': bad number")))?;
            if v.is_nan() || v <= 0.0 {
                return Err(BenchError::Usage(format!("rate '{t}': must be positive")));
            }
            return Ok(Load::Pps(v * mult));
        }
        let (bits, l2) = match lower.strip_suffix("-l2") {
            Some(b) => (b, true),
            None => (lower.strip_suffix("-l1").unwrap_or(&lower), false),
        };
        let bps = wire::linerate::parse_speed(bits)
            .map_err(|e| {
                BenchError::Usage(format!("rate '{t}': {e}; or use 10kpps, 50%, 100M-l2"))
            })?
            .0;
        Ok(if l2 {
            Load::L2Bps(bps)
        } else {
            Load::L1Bps(bps)
        })
    }

    /// Frames per second of this load for a stream whose 100 % is `max` and whose frames, as
    /// sent, are `frames` (length with FCS, weight). Bit rates count the frames as sent (with
    /// their encapsulation), weighted like an IMIX is.
    pub fn pps(self, max: Pps, frames: &[(usize, u32)]) -> f64 {
        let weight: f64 = frames.iter().map(|f| f64::from(f.1)).sum();
        let mean_bits = |extra: usize| -> f64 {
            frames
                .iter()
                .map(|(len, w)| f64::from(*w) * ((len + extra) * 8) as f64)
                .sum::<f64>()
                / weight
        };
        match self {
            Load::LineFraction(f) => (f * max.0).max(MIN_FRACTION_PPS),
            Load::Pps(p) => p,
            Load::L1Bps(b) => b / mean_bits(wire::linerate::WIRE_OVERHEAD),
            Load::L2Bps(b) => b / mean_bits(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(Load::parse("10kpps").unwrap(), Load::Pps(10_000.0));
        assert_eq!(Load::parse("1.5Mpps").unwrap(), Load::Pps(1_500_000.0));
        assert_eq!(Load::parse("1G").unwrap(), Load::L1Bps(1e9));
        assert_eq!(Load::parse("100M-l2").unwrap(), Load::L2Bps(100e6));
        assert_eq!(Load::parse("50%").unwrap(), Load::LineFraction(0.5));
        assert!(Load::parse("fast").is_err());
        assert!(Load::parse("0pps").is_err());
        assert!(Load::parse("150%")
            .unwrap_err()
            .to_string()
            .contains("(0, 100]"));
    }

    #[test]
    fn loads_convert_per_frame_size() {
        let max = wire::linerate::max_frame_rate(wire::units::BitsPerSec(1e9), 64);
        let f64b = [(64, 1)];
        assert!((Load::L1Bps(1e9).pps(max, &f64b) - 1_488_095.238).abs() < 0.01);
        assert!((Load::LineFraction(0.5).pps(max, &f64b) - 744_047.619).abs() < 0.01);
        assert!((Load::L2Bps(512e3).pps(max, &f64b) - 1000.0).abs() < 1e-9);
        assert_eq!(Load::LineFraction(1e-12).pps(max, &f64b), MIN_FRACTION_PPS);
        // IMIX: the weighted mean frame, as the line rate counts it.
        let imix = [(64, 7), (594, 4), (1518, 1)];
        let mean_l1 = (7.0 * 84.0 + 4.0 * 614.0 + 1538.0) * 8.0 / 12.0;
        assert!((Load::L1Bps(1e9).pps(max, &imix) - 1e9 / mean_l1).abs() < 1e-6);
    }
}
