//! CHAP, the Challenge-Handshake Authentication Protocol (RFC 1994), protocol 0xc223.
//!
//! ```text
//!  Challenge: 1 | id | length | value-size | value | name
//!  Response:  2 | id | length | value-size | value | name
//!  Success:   3 | id | length | message
//!  Failure:   4 | id | length | message
//! ```
//!
//! The name runs to the end of the packet (`Length`), so it has no length byte. With MD5
//! (LCP algorithm 5) the response value is MD5(identifier ‖ secret ‖ challenge value), 16
//! bytes; computing it is left to the caller, this module only carries the bytes.

use super::control::{ControlPacket, HEADER_LEN};
use crate::{Error, Result};

pub const CHALLENGE: u8 = 1;
pub const RESPONSE: u8 = 2;
pub const SUCCESS: u8 = 3;
pub const FAILURE: u8 = 4;

/// A CHAP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChapRepr<'a> {
    Challenge {
        identifier: u8,
        value: &'a [u8],
        name: &'a [u8],
    },
    Response {
        identifier: u8,
        value: &'a [u8],
        name: &'a [u8],
    },
    Success {
        identifier: u8,
        message: &'a [u8],
    },
    Failure {
        identifier: u8,
        message: &'a [u8],
    },
}

impl<'a> ChapRepr<'a> {
    /// Parses a CHAP packet. `Truncated` if Value-Size overruns the packet, `Malformed` for a
    /// code CHAP does not define.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ControlPacket<&'a T>) -> Result<Self> {
        packet.check_len()?;
        let identifier = packet.identifier();
        let data = packet.data();
        let value_and_name = || -> Result<(&'a [u8], &'a [u8])> {
            let (&n, rest) = data.split_first().ok_or(Error::Truncated)?;
            let n = usize::from(n);
            if rest.len() < n {
                return Err(Error::Truncated);
            }
            Ok(rest.split_at(n))
        };
        Ok(match packet.raw_code() {
            CHALLENGE => {
                let (value, name) = value_and_name()?;
                ChapRepr::Challenge {
                    identifier,
                    value,
                    name,
                }
            }
            RESPONSE => {
                let (value, name) = value_and_name()?;
                ChapRepr::Response {
                    identifier,
                    value,
                    name,
                }
            }
            SUCCESS => ChapRepr::Success {
                identifier,
                message: data,
            },
            FAILURE => ChapRepr::Failure {
                identifier,
                message: data,
            },
            _ => return Err(Error::Malformed("CHAP code")),
        })
    }

    pub fn code(&self) -> u8 {
        match self {
            ChapRepr::Challenge { .. } => CHALLENGE,
            ChapRepr::Response { .. } => RESPONSE,
            ChapRepr::Success { .. } => SUCCESS,
            ChapRepr::Failure { .. } => FAILURE,
        }
    }

    pub fn identifier(&self) -> u8 {
        match *self {
            ChapRepr::Challenge { identifier, .. }
            | ChapRepr::Response { identifier, .. }
            | ChapRepr::Success { identifier, .. }
            | ChapRepr::Failure { identifier, .. } => identifier,
        }
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                ChapRepr::Challenge { value, name, .. }
                | ChapRepr::Response { value, name, .. } => 1 + value.len() + name.len(),
                ChapRepr::Success { message, .. } | ChapRepr::Failure { message, .. } => {
                    message.len()
                }
            }
    }

    /// Writes the whole packet. `Malformed` if the value is longer than 255 bytes or the
    /// packet longer than 65,535, `Truncated` if the buffer is too small.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ControlPacket<T>) -> Result<()> {
        if let ChapRepr::Challenge { value, .. } | ChapRepr::Response { value, .. } = self {
            if value.len() > 255 {
                return Err(Error::Malformed("CHAP value longer than 255 bytes"));
            }
        }
        let len = self.buffer_len();
        let len16 = u16::try_from(len).map_err(|_| Error::Malformed("CHAP packet too long"))?;
        let buf = packet.buffer_mut_checked(len)?;
        buf[0] = self.code();
        buf[1] = self.identifier();
        buf[2..4].copy_from_slice(&len16.to_be_bytes());
        let out = &mut buf[HEADER_LEN..];
        match self {
            ChapRepr::Challenge { value, name, .. } | ChapRepr::Response { value, name, .. } => {
                // value.len() <= 255, checked above.
                out[0] = value.len() as u8;
                let (v, n) = out[1..].split_at_mut(value.len());
                v.copy_from_slice(value);
                n.copy_from_slice(name);
            }
            ChapRepr::Success { message, .. } | ChapRepr::Failure { message, .. } => {
                out.copy_from_slice(message)
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUE: [u8; 16] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
        0xff,
    ];

    // Challenge id 2, 16-byte value, name "ac".
    static CHALLENGE_PKT: [u8; 23] = [
        0x01, 0x02, 0x00, 0x17, 0x10, //
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, //
        0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, //
        b'a', b'c',
    ];

    // Failure id 2, message "no".
    static FAILURE_PKT: [u8; 6] = [0x04, 0x02, 0x00, 0x06, b'n', b'o'];

    #[test]
    fn deconstruct() {
        let p = ControlPacket::new_checked(&CHALLENGE_PKT[..]).unwrap();
        assert_eq!(p.raw_code(), CHALLENGE);
        assert_eq!(p.identifier(), 2);
        assert_eq!(p.length(), 23);
        assert_eq!(p.data()[0], 16);
        assert_eq!(&p.data()[1..17], &VALUE);
        assert_eq!(&p.data()[17..], b"ac");
    }

    #[test]
    fn construct() {
        let mut buf = vec![0xa5; CHALLENGE_PKT.len()];
        let mut p = ControlPacket::new_unchecked(&mut buf[..]);
        p.set_raw_code(CHALLENGE);
        p.set_identifier(2);
        p.set_length(23);
        let d = p.data_mut();
        d[0] = 16;
        d[1..17].copy_from_slice(&VALUE);
        d[17..].copy_from_slice(b"ac");
        assert_eq!(buf, CHALLENGE_PKT);
    }

    #[test]
    fn parse_and_emit() {
        for (bytes, expect) in [
            (
                &CHALLENGE_PKT[..],
                ChapRepr::Challenge {
                    identifier: 2,
                    value: &VALUE,
                    name: b"ac",
                },
            ),
            (
                &FAILURE_PKT[..],
                ChapRepr::Failure {
                    identifier: 2,
                    message: b"no",
                },
            ),
        ] {
            let p = ControlPacket::new_checked(bytes).unwrap();
            let r = ChapRepr::parse(&p).unwrap();
            assert_eq!(r, expect);
            assert_eq!(r.buffer_len(), bytes.len());
            let mut buf = vec![0xa5; bytes.len()];
            r.emit(&mut ControlPacket::new_unchecked(&mut buf[..]))
                .unwrap();
            assert_eq!(buf, bytes);
            let mut small = vec![0xa5; bytes.len() - 1];
            assert_eq!(
                r.emit(&mut ControlPacket::new_unchecked(&mut small[..])),
                Err(Error::Truncated)
            );
        }
    }

    #[test]
    fn errors() {
        // Value-Size 16, only 2 bytes follow.
        let bad = [0x02, 0x02, 0x00, 0x07, 0x10, 0x01, 0x02];
        let p = ControlPacket::new_checked(&bad[..]).unwrap();
        assert_eq!(ChapRepr::parse(&p), Err(Error::Truncated));
        // No Value-Size at all.
        let bad = [0x01, 0x02, 0x00, 0x04];
        let p = ControlPacket::new_checked(&bad[..]).unwrap();
        assert_eq!(ChapRepr::parse(&p), Err(Error::Truncated));
        let unk = [0x05, 0x02, 0x00, 0x04];
        let p = ControlPacket::new_checked(&unk[..]).unwrap();
        assert!(matches!(ChapRepr::parse(&p), Err(Error::Malformed(_))));
    }
}
