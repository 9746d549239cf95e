//! Frames above what a PPPoE session or a DS-Lite softwire carries whole: one refusal, one
//! text, for both front doors. A plan refuses them at parse time (with file:line:col), and
//! `wirerate trial --inside` when its session is up, unless `--fragment-oversize` asks for the
//! fragmenting path. A rate trial never sends them: the session or tunnel would fragment each
//! packet, so the frames on the far link and their rate would not be the frames offered.

/// The largest outer IPv6 packet of a softwire by default: an Ethernet link's MTU.
pub const DSLITE_DEFAULT_MTU: usize = 1500;

/// Ethernet header and FCS: a frame's bytes around its IP packet.
const ETHERNET: usize = 18;
/// The outer IPv6 header of a softwire (RFC 6333).
const OUTER_IPV6: usize = 40;
/// An IPv4 header without options: what each fragment repeats.
const IPV4_HEADER: usize = 20;

/// What both front doors add: why a rate trial refuses, and how to send the size anyway.
const WHY: &str = "a rate trial does not send it (the frames on the far link and their rate would \
    not be the frames offered); `wirerate trial --inside … --fragment-oversize` sends such sizes \
    fragmented through the control planes, outside a rate trial";

/// A `frame` B frame (with FCS) whose IPv4 packet exceeds `mru`, the MRU of `port`'s PPPoE
/// session: how many fragments it would become and the largest frame that crosses whole.
pub fn pppoe_refusal(frame: usize, mru: usize, port: &str) -> String {
    let packet = frame.saturating_sub(ETHERNET);
    let per_fragment = (mru.max(IPV4_HEADER + 8) - IPV4_HEADER) & !7;
    let frames = packet.saturating_sub(IPV4_HEADER).div_ceil(per_fragment);
    format!(
        "{frame} B: its {packet}-byte IPv4 packet exceeds the MRU {mru} of port `{port}`'s PPPoE session and would be fragmented ({frames} frames there); the largest frame that crosses whole is {} B; {WHY}",
        mru + ETHERNET
    )
}

/// A `frame` B frame whose IPv4 packet plus the outer IPv6 header exceeds `mtu`, the tunnel
/// MTU of `port`'s softwire.
pub fn dslite_refusal(frame: usize, mtu: usize, port: &str) -> String {
    let packet = frame.saturating_sub(ETHERNET);
    format!(
        "{frame} B: its {packet}-byte IPv4 packet plus the 40-byte outer IPv6 header exceeds the {mtu}-byte MTU of port `{port}`'s link, so the softwire would fragment it; the largest frame that crosses whole is {} B; {WHY}",
        mtu.saturating_sub(OUTER_IPV6) + ETHERNET
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_texts_name_the_size_the_limit_and_the_largest_whole_frame() {
        let p = pppoe_refusal(1518, 1454, "isp");
        assert!(p.starts_with("1518 B: its 1500-byte IPv4 packet exceeds the MRU 1454 of port `isp`'s PPPoE session and would be fragmented (2 frames there); the largest frame that crosses whole is 1472 B;"), "{p}");
        assert!(p.contains("--fragment-oversize"), "{p}");
        let d = dslite_refusal(1518, 1500, "aftr");
        assert!(d.starts_with("1518 B: its 1500-byte IPv4 packet plus the 40-byte outer IPv6 header exceeds the 1500-byte MTU of port `aftr`'s link, so the softwire would fragment it; the largest frame that crosses whole is 1478 B;"), "{d}");
        // A tunnel MTU of 1280 (IPv6's minimum) carries 1258 B frames whole.
        assert!(dslite_refusal(1300, 1280, "b").contains("crosses whole is 1258 B"));
    }

    #[test]
    fn never_panics_on_odd_numbers() {
        for (f, m) in [(0, 0), (1, 1), (64, 20), (usize::MAX / 2, 64)] {
            let _ = pppoe_refusal(f, m, "x");
        }
        let _ = dslite_refusal(0, 0, "x");
    }
}
