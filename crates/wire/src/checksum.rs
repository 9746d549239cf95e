//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).
//!
//! Per-frame rewrites (sequence number, timestamp, IP identification) must not re-sum the whole
//! packet, so [`update_word`]/[`update_bytes`] patch an existing checksum from the old and new
//! values of the changed 16-bit words only.

use core::net::{Ipv4Addr, Ipv6Addr};

/// One's-complement sum of `data` (big-endian 16-bit words, odd trailing byte padded with zero),
/// not yet folded. Add several partial sums with plain `+` (wrapping in u64 is impossible for
/// any packet size) and fold once with [`fold`].
pub fn sum(data: &[u8]) -> u64 {
    // 32-bit words as the CPU reads them, summed in 64 bits: a word 2^16·hi + lo is hi + lo
    // modulo 2^16 − 1, and a sum of byte-swapped words is the byte-swapped sum (RFC 1071
    // §2(B)), so folding and turning the result big-endian gives the sum of the big-endian
    // 16-bit words. A receiver that verifies every frame's UDP checksum gets a loop the
    // compiler vectorizes (no byte swap per word).
    let mut words = data.chunks_exact(4);
    let native: u64 = (&mut words)
        .map(|c| u64::from(u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
        .sum();
    let mut acc = u64::from(u16::from_be(fold(native)));
    match *words.remainder() {
        [a, b, c] => acc += u64::from(u16::from_be_bytes([a, b])) + (u64::from(c) << 8),
        [a, b] => acc += u64::from(u16::from_be_bytes([a, b])),
        [a] => acc += u64::from(a) << 8,
        _ => {}
    }
    acc
}

/// Folds a partial sum to 16 bits (end-around carry), not complemented.
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum field value for `data` alone: `!fold(sum(data))`.
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum(data))
}

/// Whether `data`, which contains its own checksum field, verifies.
pub fn verifies(data: &[u8]) -> bool {
    fold(sum(data)) == 0xffff
}

/// Partial sum of the IPv4 pseudo-header used by UDP and TCP.
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u64 {
    sum(&src.octets()) + sum(&dst.octets()) + u64::from(protocol) + u64::from(length)
}

/// Partial sum of the IPv6 pseudo-header (RFC 8200 §8.1) used by UDP, TCP and ICMPv6.
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: u8, length: u32) -> u64 {
    sum(&src.octets())
        + sum(&dst.octets())
        + u64::from(length >> 16)
        + u64::from(length & 0xffff)
        + u64::from(next_header)
}

/// RFC 1624 eqn. 3: the new checksum after one 16-bit word changed from `old` to `new`.
#[inline]
pub fn update_word(checksum: u16, old: u16, new: u16) -> u16 {
    let acc = u64::from(!checksum) + u64::from(!old) + u64::from(new);
    !fold(acc)
}

/// The new checksum after the bytes `old` were replaced by `new` (same length, even, and
/// starting at an even offset of the checksummed data).
#[inline]
pub fn update_bytes(checksum: u16, old: &[u8], new: &[u8]) -> u16 {
    debug_assert_eq!(old.len(), new.len());
    debug_assert_eq!(old.len() % 2, 0);
    // ~HC + ~m + m' summed over all changed words.
    let mut acc = u64::from(!checksum);
    for (o, n) in old.chunks_exact(2).zip(new.chunks_exact(2)) {
        acc += u64::from(!u16::from_be_bytes([o[0], o[1]]))
            + u64::from(u16::from_be_bytes([n[0], n[1]]));
    }
    !fold(acc)
}

/// UDP transmits a computed checksum of zero as all ones (RFC 768); zero means "none" for IPv4.
#[inline]
pub fn udp_nonzero(checksum: u16) -> u16 {
    if checksum == 0 {
        0xffff
    } else {
        checksum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 1071 §3 example: words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
    #[test]
    fn rfc1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum(&data)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(sum(&[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    #[test]
    fn known_ipv4_header_verifies() {
        // A real IPv4 header (from Wikipedia's worked example), checksum b861.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert!(verifies(&hdr));
        let mut zeroed = hdr;
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(checksum(&zeroed), 0xb861);
    }

    /// The 16-bit words of RFC 1071, one at a time: what `sum` must fold to.
    fn reference(data: &[u8]) -> u16 {
        let mut acc: u64 = 0;
        for w in data.chunks(2) {
            acc += u64::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
        }
        fold(acc)
    }

    #[test]
    fn sum_folds_like_16_bit_words_at_every_length() {
        let mut x: u32 = 0x5752_0019;
        let data: Vec<u8> = (0..2100)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        for len in 0..data.len() {
            assert_eq!(fold(sum(&data[..len])), reference(&data[..len]), "{len}");
        }
        for fill in [0x00u8, 0xff] {
            let v = vec![fill; 1500];
            for len in [0, 1, 2, 3, 4, 5, 1499, 1500] {
                assert_eq!(fold(sum(&v[..len])), reference(&v[..len]), "{fill} {len}");
            }
        }
    }

    #[test]
    fn incremental_equals_full() {
        let mut data: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
        let before = checksum(&data);
        let old = data[10..18].to_vec();
        data[10..18].copy_from_slice(&[0xff, 0xee, 0, 0, 0x12, 0x34, 0xab, 0xcd]);
        assert_eq!(update_bytes(before, &old, &data[10..18]), checksum(&data));
    }
}
