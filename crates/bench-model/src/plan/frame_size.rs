//! A plan's `frame-size` integer as a [`FrameSize`]: the one check a plan makes of a size
//! itself, where the frame-size row of the table of dimensions stores it. What a path, a
//! session or the lab's links can carry is checked against the topology (`parse::checks`).

use wire::encap::IpVersion;
use wire::linerate::FrameSize;
use wire::template::{check_reference_size, MAX_FRAME_SIZE};

/// The fixed frame size `n` of a `[[matrix]]` block whose cases run over `ips`, or why it
/// cannot be sent: outside 1…[`MAX_FRAME_SIZE`] (negative, zero, above a jumbo frame) the text
/// every integer key of a plan gives (`must be between 1 and 9018`); below an IP version's
/// smallest test frame the template's own bound and text, as `wirerate trial --size`
/// reports it.
pub fn fixed_frame_size(n: i64, ips: &[IpVersion]) -> Result<FrameSize, String> {
    let bytes = usize::try_from(n)
        .ok()
        .filter(|b| (1..=MAX_FRAME_SIZE).contains(b))
        .ok_or_else(|| format!("must be between 1 and {MAX_FRAME_SIZE}"))?;
    // Inside the range only an IP version's smallest test frame can refuse the size.
    for &ip in ips {
        check_reference_size(bytes, ip).map_err(|e| e.to_string())?;
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
            assert_eq!(
                fixed_frame_size(n, BOTH),
                Err("must be between 1 and 9018".to_string()),
                "{n}"
            );
        }
    }

    #[test]
    fn sizes_below_an_ip_versions_smallest_frame_get_the_templates_text() {
        assert_eq!(
            fixed_frame_size(20, &[IpVersion::V4]),
            Err("frame size 20 B is too small for ipv4 UDP plus the 16-byte signature; the smallest that works is 64 B".to_string())
        );
        // 64 B carries IPv4 but not IPv6: the block's IPv6 refuses it.
        assert_eq!(
            fixed_frame_size(64, BOTH),
            Err("frame size 64 B is too small for ipv6 UDP plus the 16-byte signature; the smallest that works is 82 B".to_string())
        );
    }
}
