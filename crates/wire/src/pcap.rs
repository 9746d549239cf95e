//! The classic pcap file format (nanosecond variant), encoded into byte arrays; the caller
//! writes them. Wireshark, tshark and tcpdump read it.
//!
//! Layout (all fields little-endian, as written by the host that made the file):
//! a 24-byte global header (magic `0xa1b23c4d` = nanosecond timestamps, version 2.4, snaplen,
//! link type 1 = Ethernet), then per frame a 16-byte record header (seconds, nanoseconds,
//! captured length, original length) followed by the frame bytes.

/// Magic number of a pcap file whose record timestamps are in nanoseconds.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
pub const GLOBAL_HEADER_LEN: usize = 24;
pub const RECORD_HEADER_LEN: usize = 16;

/// The global header for an Ethernet capture with `snaplen`.
pub fn global_header(snaplen: u32) -> [u8; GLOBAL_HEADER_LEN] {
    let mut h = [0u8; GLOBAL_HEADER_LEN];
    h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone (8..12) and sigfigs (12..16) stay zero.
    h[16..20].copy_from_slice(&snaplen.to_le_bytes());
    h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    h
}

/// The record header of one frame captured at `timestamp_ns` (since the Unix epoch, or any
/// origin the reader should show), `captured` bytes stored of `original` on the wire.
pub fn record_header(timestamp_ns: u64, captured: u32, original: u32) -> [u8; RECORD_HEADER_LEN] {
    let mut h = [0u8; RECORD_HEADER_LEN];
    let secs = (timestamp_ns / 1_000_000_000) as u32;
    let nanos = (timestamp_ns % 1_000_000_000) as u32;
    h[0..4].copy_from_slice(&secs.to_le_bytes());
    h[4..8].copy_from_slice(&nanos.to_le_bytes());
    h[8..12].copy_from_slice(&captured.to_le_bytes());
    h[12..16].copy_from_slice(&original.to_le_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_header_bytes() {
        assert_eq!(
            global_header(65535),
            [
                0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0,
                0, 0
            ]
        );
    }

    #[test]
    fn record_header_splits_seconds_and_nanoseconds() {
        let h = record_header(3_000_000_007, 60, 64);
        assert_eq!(&h[0..4], &3u32.to_le_bytes());
        assert_eq!(&h[4..8], &7u32.to_le_bytes());
        assert_eq!(&h[8..12], &60u32.to_le_bytes());
        assert_eq!(&h[12..16], &64u32.to_le_bytes());
    }
}
