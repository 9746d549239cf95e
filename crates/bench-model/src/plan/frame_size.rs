//! A plan's `frame-size` integer as a [`FrameSize`]: the one check a plan makes of a size
//! itself, where the frame-size row of the table of dimensions stores it. What a path, a
//! session or the lab's links can carry is checked against the topology (`parse::checks`).

use core::fmt;

use wire::encap::IpVersion;
use wire::linerate::FrameSize;
use wire::template::{check_reference_size, TemplateError, MAX_FRAME_SIZE};

/// Why a plan's frame size cannot be sent ([`fixed_frame_size`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameSizeError {
    /// Outside 1…[`MAX_FRAME_SIZE`]: negative, zero, or above a jumbo frame.
    OutOfRange,
    /// Below the smallest test frame of one of the block's IP versions (the template's own
    /// bound and text).
    TooSmall(TemplateError),
}

impl fmt::Display for FrameSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The text every integer key of a plan gives for its range.
            FrameSizeError::OutOfRange => write!(f, "must be between 1 and {MAX_FRAME_SIZE}"),
            FrameSizeError::TooSmall(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for FrameSizeError {}

/// The fixed frame size `n` of a `[[matrix]]` block whose cases run over `ips`, or why it
/// cannot be sent: outside 1…[`MAX_FRAME_SIZE`] the text every integer key of a plan gives
/// (`must be between 1 and 9018`); below an IP version's smallest test frame the template's
/// own text, as `wirerate trial --size` reports it.
pub fn fixed_frame_size(n: i64, ips: &[IpVersion]) -> Result<FrameSize, FrameSizeError> {
    let bytes = usize::try_from(n)
        .ok()
        .filter(|b| (1..=MAX_FRAME_SIZE).contains(b))
        .ok_or(FrameSizeError::OutOfRange)?;
    // Inside the range only an IP version's smallest test frame can refuse the size.
    for &ip in ips {
        check_reference_size(bytes, ip).map_err(FrameSizeError::TooSmall)?;
    }
    Ok(FrameSize::Fixed { bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: &[IpVersion] = &[IpVersion::V4, IpVersion::V6];

    #[test]
    fn sizes_every_ip_version_can_send_are_fixed_sizes() {
        assert_eq!(
            fixed_frame_size(82, BOTH),
            Ok(FrameSize::Fixed { bytes: 82 })
        );
        assert_eq!(
            fixed_frame_size(MAX_FRAME_SIZE as i64, BOTH),
            Ok(FrameSize::Fixed { bytes: 9018 })
        );
        // A block whose `ip` key was refused has no IP versions: only the range applies.
        assert_eq!(fixed_frame_size(1, &[]), Ok(FrameSize::Fixed { bytes: 1 }));
    }

    #[test]
    fn sizes_outside_the_range_get_the_text_of_every_integer_key() {
        for n in [0, -64, 9019, 9999, i64::MAX, i64::MIN] {
            let e = fixed_frame_size(n, BOTH).unwrap_err();
            assert_eq!(e, FrameSizeError::OutOfRange, "{n}");
            assert_eq!(e.to_string(), "must be between 1 and 9018", "{n}");
        }
    }

    #[test]
    fn sizes_below_an_ip_versions_smallest_frame_get_the_templates_text() {
        let text = |n, ips| fixed_frame_size(n, ips).map_err(|e| e.to_string());
        assert_eq!(
            text(20, &[IpVersion::V4]),
            Err("frame size 20 B is too small for ipv4 UDP plus the 16-byte signature; the smallest that works is 64 B".to_string())
        );
        // 64 B carries IPv4 but not IPv6: the block's IPv6 refuses it.
        assert_eq!(
            text(64, BOTH),
            Err("frame size 64 B is too small for ipv6 UDP plus the 16-byte signature; the smallest that works is 82 B".to_string())
        );
    }
}
