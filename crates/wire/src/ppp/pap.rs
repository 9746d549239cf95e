//! PAP, the Password Authentication Protocol (RFC 1334 §2), protocol 0xc023.
//!
//! The header is the control-packet header (code, identifier, length); the codes are PAP's
//! own. Peer-ID, password and message are each prefixed by a one-byte length.
//!
//! ```text
//!  Authenticate-Request:  1 | id | length | peer-id-len | peer-id | passwd-len | password
//!  Authenticate-Ack:      2 | id | length | msg-len | message
//!  Authenticate-Nak:      3 | id | length | msg-len | message
//! ```

use super::control::{ControlPacket, HEADER_LEN};
use crate::{Error, Result};

pub const AUTHENTICATE_REQUEST: u8 = 1;
pub const AUTHENTICATE_ACK: u8 = 2;
pub const AUTHENTICATE_NAK: u8 = 3;

/// A PAP packet. Peer-ID, password and message are bytes: RFC 1334 gives them no encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PapRepr<'a> {
    AuthenticateRequest {
        identifier: u8,
        peer_id: &'a [u8],
        password: &'a [u8],
    },
    AuthenticateAck {
        identifier: u8,
        message: &'a [u8],
    },
    AuthenticateNak {
        identifier: u8,
        message: &'a [u8],
    },
}

/// Splits a one-byte-length-prefixed field off the front of `b`.
fn take_prefixed(b: &[u8]) -> Result<(&[u8], &[u8])> {
    let (&n, rest) = b.split_first().ok_or(Error::Truncated)?;
    let n = usize::from(n);
    if rest.len() < n {
        return Err(Error::Truncated);
    }
    Ok(rest.split_at(n))
}

/// Writes `field` with its length byte at the start of `out`, returning the bytes written.
fn put_prefixed(out: &mut [u8], field: &[u8]) -> usize {
    // Lengths were checked to fit a byte by the caller.
    out[0] = field.len() as u8;
    out[1..=field.len()].copy_from_slice(field);
    1 + field.len()
}

impl<'a> PapRepr<'a> {
    /// Parses a PAP packet. Bytes after the last field but within `Length` are ignored. An
    /// Ack or Nak with no data at all (some peers send one) parses with an empty message.
    /// `Malformed` for a code PAP does not define.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ControlPacket<&'a T>) -> Result<Self> {
        packet.check_len()?;
        let identifier = packet.identifier();
        let data = packet.data();
        let message = || -> Result<&'a [u8]> {
            if data.is_empty() {
                Ok(&[])
            } else {
                Ok(take_prefixed(data)?.0)
            }
        };
        Ok(match packet.raw_code() {
            AUTHENTICATE_REQUEST => {
                let (peer_id, rest) = take_prefixed(data)?;
                let (password, _) = take_prefixed(rest)?;
                PapRepr::AuthenticateRequest {
                    identifier,
                    peer_id,
                    password,
                }
            }
            AUTHENTICATE_ACK => PapRepr::AuthenticateAck {
                identifier,
                message: message()?,
            },
            AUTHENTICATE_NAK => PapRepr::AuthenticateNak {
                identifier,
                message: message()?,
            },
            _ => return Err(Error::Malformed("PAP code")),
        })
    }

    pub fn identifier(&self) -> u8 {
        match *self {
            PapRepr::AuthenticateRequest { identifier, .. }
            | PapRepr::AuthenticateAck { identifier, .. }
            | PapRepr::AuthenticateNak { identifier, .. } => identifier,
        }
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                PapRepr::AuthenticateRequest {
                    peer_id, password, ..
                } => 2 + peer_id.len() + password.len(),
                PapRepr::AuthenticateAck { message, .. }
                | PapRepr::AuthenticateNak { message, .. } => 1 + message.len(),
            }
    }

    /// Writes the whole packet. `Malformed` if a field is longer than its 255-byte length
    /// prefix allows, `Truncated` if the buffer is too small.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ControlPacket<T>) -> Result<()> {
        let too_long = match self {
            PapRepr::AuthenticateRequest {
                peer_id, password, ..
            } => peer_id.len() > 255 || password.len() > 255,
            PapRepr::AuthenticateAck { message, .. } | PapRepr::AuthenticateNak { message, .. } => {
                message.len() > 255
            }
        };
        if too_long {
            return Err(Error::Malformed("PAP field longer than 255 bytes"));
        }
        let len = self.buffer_len();
        let buf = packet.buffer_mut_checked(len)?;
        buf[0] = match self {
            PapRepr::AuthenticateRequest { .. } => AUTHENTICATE_REQUEST,
            PapRepr::AuthenticateAck { .. } => AUTHENTICATE_ACK,
            PapRepr::AuthenticateNak { .. } => AUTHENTICATE_NAK,
        };
        buf[1] = self.identifier();
        // len <= 4 + 2 + 2 * 255: fits u16.
        buf[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        let out = &mut buf[HEADER_LEN..];
        match self {
            PapRepr::AuthenticateRequest {
                peer_id, password, ..
            } => {
                let n = put_prefixed(out, peer_id);
                put_prefixed(&mut out[n..], password);
            }
            PapRepr::AuthenticateAck { message, .. } | PapRepr::AuthenticateNak { message, .. } => {
                put_prefixed(out, message);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Authenticate-Request id 7, peer-id "user", password "pass".
    static REQ: [u8; 14] = [
        0x01, 0x07, 0x00, 0x0e, //
        0x04, b'u', b's', b'e', b'r', //
        0x04, b'p', b'a', b's', b's',
    ];

    // Authenticate-Ack id 7, message "ok".
    static ACK: [u8; 7] = [0x02, 0x07, 0x00, 0x07, 0x02, b'o', b'k'];

    #[test]
    fn deconstruct() {
        let p = ControlPacket::new_checked(&REQ[..]).unwrap();
        assert_eq!(p.raw_code(), AUTHENTICATE_REQUEST);
        assert_eq!(p.identifier(), 7);
        assert_eq!(p.length(), 14);
        assert_eq!(p.data()[0], 4);
        assert_eq!(&p.data()[1..5], b"user");
        assert_eq!(p.data()[5], 4);
        assert_eq!(&p.data()[6..], b"pass");
    }

    #[test]
    fn construct() {
        let mut buf = vec![0xa5; REQ.len()];
        let mut p = ControlPacket::new_unchecked(&mut buf[..]);
        p.set_raw_code(AUTHENTICATE_REQUEST);
        p.set_identifier(7);
        p.set_length(14);
        let d = p.data_mut();
        d[0] = 4;
        d[1..5].copy_from_slice(b"user");
        d[5] = 4;
        d[6..].copy_from_slice(b"pass");
        assert_eq!(buf, REQ);
    }

    #[test]
    fn parse_and_emit() {
        for (bytes, expect) in [
            (
                &REQ[..],
                PapRepr::AuthenticateRequest {
                    identifier: 7,
                    peer_id: b"user",
                    password: b"pass",
                },
            ),
            (
                &ACK[..],
                PapRepr::AuthenticateAck {
                    identifier: 7,
                    message: b"ok",
                },
            ),
        ] {
            let p = ControlPacket::new_checked(bytes).unwrap();
            let r = PapRepr::parse(&p).unwrap();
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
    fn lenient_and_errors() {
        // Nak without a message length byte.
        let nak = [0x03, 0x07, 0x00, 0x04];
        let p = ControlPacket::new_checked(&nak[..]).unwrap();
        assert_eq!(
            PapRepr::parse(&p),
            Ok(PapRepr::AuthenticateNak {
                identifier: 7,
                message: &[]
            })
        );
        // Password length overruns the packet.
        let bad = [0x01, 0x07, 0x00, 0x08, 0x01, b'u', 0x05, b'p'];
        let p = ControlPacket::new_checked(&bad[..]).unwrap();
        assert_eq!(PapRepr::parse(&p), Err(Error::Truncated));
        // Unknown code.
        let unk = [0x04, 0x07, 0x00, 0x04];
        let p = ControlPacket::new_checked(&unk[..]).unwrap();
        assert!(matches!(PapRepr::parse(&p), Err(Error::Malformed(_))));
        // Over-long peer id.
        let long = [0u8; 256];
        let r = PapRepr::AuthenticateRequest {
            identifier: 0,
            peer_id: &long,
            password: b"",
        };
        let mut buf = vec![0u8; 300];
        assert!(matches!(
            r.emit(&mut ControlPacket::new_unchecked(&mut buf[..])),
            Err(Error::Malformed(_))
        ));
    }
}
