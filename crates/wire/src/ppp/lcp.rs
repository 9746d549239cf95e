//! The Link Control Protocol (RFC 1661): its configuration options, and the data of the
//! LCP-only packets (Echo, Discard, Protocol-Reject, Code-Reject).
//!
//! Over PPPoE, RFC 2516 §7 limits the MRU to 1492 (1500 minus the 8 bytes of PPPoE and PPP
//! headers) unless RFC 4638's PPP-Max-Payload raised it, forbids ACFC (there is no
//! address/control field to compress) and recommends against ACCM (no async framing); the
//! options are still parsed so that a tester can see and refuse what a peer asks for.

use super::control::{self, Code, ConfigOption, ControlPacket, OptionIter};
use super::{be16, be32, Protocol};
use crate::{Error, Result};

/// LCP configuration option types (RFC 1661 §6, RFC 1570 for the ones this crate leaves raw).
pub mod option_type {
    pub const MRU: u8 = 1;
    pub const ACCM: u8 = 2;
    pub const AUTH_PROTOCOL: u8 = 3;
    pub const QUALITY_PROTOCOL: u8 = 4;
    pub const MAGIC_NUMBER: u8 = 5;
    pub const PFC: u8 = 7;
    pub const ACFC: u8 = 8;
}

/// CHAP algorithm number for MD5 (RFC 1994), the one every PPPoE peer supports.
pub const CHAP_MD5: u8 = 5;
/// The MRU a PPP peer assumes when none is negotiated.
pub const DEFAULT_MRU: u16 = 1500;
/// The largest MRU over PPPoE on a 1500-byte Ethernet without RFC 4638 (RFC 2516 §7).
pub const PPPOE_MAX_MRU: u16 = 1492;

/// The value of the Authentication-Protocol option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthProtocol<'a> {
    /// PAP (0xc023), no further data.
    Pap,
    /// CHAP (0xc223) with its algorithm byte ([`CHAP_MD5`] for MD5).
    Chap { algorithm: u8 },
    /// Any other protocol, with its data. Not for PAP or CHAP, which have their own variants
    /// (emitting them here would parse back as those variants).
    Other { protocol: Protocol, data: &'a [u8] },
}

/// One LCP configuration option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LcpOption<'a> {
    /// Maximum-Receive-Unit: the largest information field the sender can receive.
    Mru(u16),
    /// Async-Control-Character-Map (meaningless over PPPoE, but peers send it).
    Accm(u32),
    /// The authentication protocol the sender wants its peer to use.
    AuthProtocol(AuthProtocol<'a>),
    /// Magic-Number, for loop detection and in Echo packets.
    MagicNumber(u32),
    /// Protocol-Field-Compression (no value).
    ProtocolFieldCompression,
    /// Address-and-Control-Field-Compression (no value).
    AddressControlFieldCompression,
    /// Any other option type, kept so that it can be Configure-Rejected verbatim. Not for
    /// the types above (emitting them here would parse back as the typed variant).
    Unknown { kind: u8, data: &'a [u8] },
}

impl<'a> LcpOption<'a> {
    /// Types an option's value. `Malformed` when a known option has the wrong length.
    pub fn parse(kind: u8, value: &'a [u8]) -> Result<Self> {
        use option_type::*;
        Ok(match (kind, value) {
            (MRU, [a, b]) => LcpOption::Mru(u16::from_be_bytes([*a, *b])),
            (MRU, _) => return Err(Error::Malformed("LCP MRU option length")),
            (ACCM, [a, b, c, d]) => LcpOption::Accm(u32::from_be_bytes([*a, *b, *c, *d])),
            (ACCM, _) => return Err(Error::Malformed("LCP ACCM option length")),
            (AUTH_PROTOCOL, [p0, p1, rest @ ..]) => {
                let protocol = Protocol(u16::from_be_bytes([*p0, *p1]));
                LcpOption::AuthProtocol(match (protocol, rest) {
                    (Protocol::PAP, []) => AuthProtocol::Pap,
                    (Protocol::PAP, _) => {
                        return Err(Error::Malformed("LCP Authentication-Protocol PAP length"))
                    }
                    (Protocol::CHAP, [algorithm]) => AuthProtocol::Chap {
                        algorithm: *algorithm,
                    },
                    (Protocol::CHAP, _) => {
                        return Err(Error::Malformed("LCP Authentication-Protocol CHAP length"))
                    }
                    (protocol, data) => AuthProtocol::Other { protocol, data },
                })
            }
            (AUTH_PROTOCOL, _) => {
                return Err(Error::Malformed("LCP Authentication-Protocol length"))
            }
            (MAGIC_NUMBER, [a, b, c, d]) => {
                LcpOption::MagicNumber(u32::from_be_bytes([*a, *b, *c, *d]))
            }
            (MAGIC_NUMBER, _) => return Err(Error::Malformed("LCP Magic-Number option length")),
            (PFC, []) => LcpOption::ProtocolFieldCompression,
            (PFC, _) => return Err(Error::Malformed("LCP PFC option length")),
            (ACFC, []) => LcpOption::AddressControlFieldCompression,
            (ACFC, _) => return Err(Error::Malformed("LCP ACFC option length")),
            (kind, data) => LcpOption::Unknown { kind, data },
        })
    }
}

impl ConfigOption for LcpOption<'_> {
    fn option_type(&self) -> u8 {
        use option_type::*;
        match self {
            LcpOption::Mru(_) => MRU,
            LcpOption::Accm(_) => ACCM,
            LcpOption::AuthProtocol(_) => AUTH_PROTOCOL,
            LcpOption::MagicNumber(_) => MAGIC_NUMBER,
            LcpOption::ProtocolFieldCompression => PFC,
            LcpOption::AddressControlFieldCompression => ACFC,
            LcpOption::Unknown { kind, .. } => *kind,
        }
    }

    fn value_len(&self) -> usize {
        match self {
            LcpOption::Mru(_) => 2,
            LcpOption::Accm(_) | LcpOption::MagicNumber(_) => 4,
            LcpOption::AuthProtocol(AuthProtocol::Pap) => 2,
            LcpOption::AuthProtocol(AuthProtocol::Chap { .. }) => 3,
            LcpOption::AuthProtocol(AuthProtocol::Other { data, .. }) => 2 + data.len(),
            LcpOption::ProtocolFieldCompression | LcpOption::AddressControlFieldCompression => 0,
            LcpOption::Unknown { data, .. } => data.len(),
        }
    }

    fn emit_value(&self, out: &mut [u8]) {
        match self {
            LcpOption::Mru(v) => out.copy_from_slice(&v.to_be_bytes()),
            LcpOption::Accm(v) | LcpOption::MagicNumber(v) => out.copy_from_slice(&v.to_be_bytes()),
            LcpOption::AuthProtocol(AuthProtocol::Pap) => {
                out.copy_from_slice(&Protocol::PAP.0.to_be_bytes())
            }
            LcpOption::AuthProtocol(AuthProtocol::Chap { algorithm }) => {
                out[..2].copy_from_slice(&Protocol::CHAP.0.to_be_bytes());
                out[2] = *algorithm;
            }
            LcpOption::AuthProtocol(AuthProtocol::Other { protocol, data }) => {
                out[..2].copy_from_slice(&protocol.0.to_be_bytes());
                out[2..].copy_from_slice(data);
            }
            LcpOption::ProtocolFieldCompression | LcpOption::AddressControlFieldCompression => {}
            LcpOption::Unknown { data, .. } => out.copy_from_slice(data),
        }
    }
}

/// Iterates over an option list as typed [`LcpOption`]s. Framing errors end the iteration
/// (see [`OptionIter`]); an option with a bad length yields `Err(Malformed)` and iteration
/// continues with the next option, since the framing around it is intact.
#[derive(Debug, Clone)]
pub struct LcpOptions<'a>(OptionIter<'a>);

/// Typed iteration over the options of an LCP Configure packet's data.
pub fn options(data: &[u8]) -> LcpOptions<'_> {
    LcpOptions(OptionIter::new(data))
}

impl<'a> Iterator for LcpOptions<'a> {
    type Item = Result<LcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(
            self.0
                .next()?
                .and_then(|(kind, value)| LcpOption::parse(kind, value)),
        )
    }
}

/// Accessors for the LCP-only packets. They read the data regardless of the code: match on
/// [`ControlPacket::code`] first. Each is `Truncated` if the data is too short.
impl<'a, T: AsRef<[u8]> + ?Sized> ControlPacket<&'a T> {
    /// Echo-Request, Echo-Reply, Discard-Request: the sender's magic number (0 if it has none).
    pub fn magic_number(&self) -> Result<u32> {
        be32(self.data(), 0).ok_or(Error::Truncated)
    }

    /// Echo-Request, Echo-Reply, Discard-Request: the bytes after the magic number.
    pub fn echo_data(&self) -> Result<&'a [u8]> {
        self.data().get(4..).ok_or(Error::Truncated)
    }

    /// Protocol-Reject: the protocol the peer does not speak.
    pub fn rejected_protocol(&self) -> Result<Protocol> {
        be16(self.data(), 0).map(Protocol).ok_or(Error::Truncated)
    }

    /// Protocol-Reject: the start of the rejected packet's information field.
    pub fn rejected_information(&self) -> Result<&'a [u8]> {
        self.data().get(2..).ok_or(Error::Truncated)
    }

    /// Code-Reject: the rejected control packet, possibly cut to the peer's MRU (so it may not
    /// itself pass [`ControlPacket::new_checked`]).
    pub fn rejected_packet(&self) -> &'a [u8] {
        self.data()
    }
}

/// What an LCP packet carries, chosen by its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LcpData<'a> {
    /// Configure-Request/-Ack/-Nak/-Reject: the option list, whose TLV framing `parse` has
    /// checked; type the options with [`options`].
    Options(&'a [u8]),
    /// Echo-Request, Echo-Reply, Discard-Request.
    Echo { magic_number: u32, data: &'a [u8] },
    /// Protocol-Reject.
    ProtocolReject {
        protocol: Protocol,
        information: &'a [u8],
    },
    /// Code-Reject: the rejected packet.
    CodeReject(&'a [u8]),
    /// Terminate-Request/-Ack (uninterpreted data) and unknown codes (to be Code-Rejected).
    Raw(&'a [u8]),
}

impl LcpData<'_> {
    fn fits(&self, code: Code) -> bool {
        use Code::*;
        match self {
            LcpData::Options(_) => code.has_options(),
            LcpData::Echo { .. } => matches!(code, EchoRequest | EchoReply | DiscardRequest),
            LcpData::ProtocolReject { .. } => code == ProtocolReject,
            LcpData::CodeReject(_) => code == CodeReject,
            LcpData::Raw(_) => matches!(code, TerminateRequest | TerminateAck | Unknown(_)),
        }
    }

    fn len(&self) -> usize {
        match self {
            LcpData::Options(b) | LcpData::CodeReject(b) | LcpData::Raw(b) => b.len(),
            LcpData::Echo { data, .. } => 4 + data.len(),
            LcpData::ProtocolReject { information, .. } => 2 + information.len(),
        }
    }
}

/// The owned form of an LCP packet, with its data typed by code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LcpRepr<'a> {
    pub code: Code,
    pub identifier: u8,
    pub data: LcpData<'a>,
}

impl<'a> LcpRepr<'a> {
    /// Parses an LCP packet. For Configure packets the option framing is checked (so that an
    /// answer never has to be built from a list that breaks halfway), not each option's value.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ControlPacket<&'a T>) -> Result<Self> {
        let raw = control::ControlRepr::parse(packet)?;
        let d = raw.data;
        let data = match raw.code {
            c if c.has_options() => {
                for option in OptionIter::new(d) {
                    option?;
                }
                LcpData::Options(d)
            }
            Code::EchoRequest | Code::EchoReply | Code::DiscardRequest => LcpData::Echo {
                magic_number: packet.magic_number()?,
                data: packet.echo_data()?,
            },
            Code::ProtocolReject => LcpData::ProtocolReject {
                protocol: packet.rejected_protocol()?,
                information: packet.rejected_information()?,
            },
            Code::CodeReject => LcpData::CodeReject(d),
            _ => LcpData::Raw(d),
        };
        Ok(LcpRepr {
            code: raw.code,
            identifier: raw.identifier,
            data,
        })
    }

    pub fn buffer_len(&self) -> usize {
        control::HEADER_LEN + self.data.len()
    }

    /// Writes the whole packet. `Malformed` if the data variant does not belong to the code
    /// (it would parse back as something else), `Truncated` if the buffer is too small.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ControlPacket<T>) -> Result<()> {
        if !self.data.fits(self.code) {
            return Err(Error::Malformed("LCP data does not match the code"));
        }
        let len = self.buffer_len();
        let len16 = u16::try_from(len).map_err(|_| Error::Malformed("LCP packet too long"))?;
        let buf = packet.buffer_mut_checked(len)?;
        buf[0] = self.code.into();
        buf[1] = self.identifier;
        buf[2..4].copy_from_slice(&len16.to_be_bytes());
        let out = &mut buf[control::HEADER_LEN..len];
        match self.data {
            LcpData::Options(b) | LcpData::CodeReject(b) | LcpData::Raw(b) => {
                out.copy_from_slice(b)
            }
            LcpData::Echo { magic_number, data } => {
                out[..4].copy_from_slice(&magic_number.to_be_bytes());
                out[4..].copy_from_slice(data);
            }
            LcpData::ProtocolReject {
                protocol,
                information,
            } => {
                out[..2].copy_from_slice(&protocol.0.to_be_bytes());
                out[2..].copy_from_slice(information);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppp::control::{emit_options, OptionWriter};

    // Configure-Request id 1: MRU 1454, Magic-Number 0x12345678, Auth-Protocol PAP.
    static CONF_REQ: [u8; 18] = [
        0x01, 0x01, 0x00, 0x12, //
        0x01, 0x04, 0x05, 0xae, //
        0x05, 0x06, 0x12, 0x34, 0x56, 0x78, //
        0x03, 0x04, 0xc0, 0x23,
    ];

    // Configure-Nak id 1: "use CHAP with MD5 instead".
    static CONF_NAK: [u8; 9] = [0x03, 0x01, 0x00, 0x09, 0x03, 0x05, 0xc2, 0x23, 0x05];

    // Echo-Request id 7, magic 0xcafebabe, data "hi".
    static ECHO_REQ: [u8; 10] = [0x09, 0x07, 0x00, 0x0a, 0xca, 0xfe, 0xba, 0xbe, b'h', b'i'];

    // Protocol-Reject id 2 of protocol 0x8281 (MPLSCP) with 2 bytes of its packet.
    static PROTO_REJ: [u8; 8] = [0x08, 0x02, 0x00, 0x08, 0x82, 0x81, 0x01, 0x05];

    #[test]
    fn deconstruct_configure_request() {
        let p = ControlPacket::new_checked(&CONF_REQ[..]).unwrap();
        assert_eq!(p.code(), Code::ConfigureRequest);
        assert_eq!(p.identifier(), 1);
        assert_eq!(p.length(), 18);
        let raw: Vec<_> = p.options().collect::<Result<_>>().unwrap();
        assert_eq!(
            raw,
            vec![
                (1, &[0x05, 0xae][..]),
                (5, &[0x12, 0x34, 0x56, 0x78][..]),
                (3, &[0xc0, 0x23][..])
            ]
        );
        let typed: Vec<_> = options(p.data()).collect::<Result<_>>().unwrap();
        assert_eq!(
            typed,
            vec![
                LcpOption::Mru(1454),
                LcpOption::MagicNumber(0x1234_5678),
                LcpOption::AuthProtocol(AuthProtocol::Pap)
            ]
        );
    }

    #[test]
    fn deconstruct_configure_nak() {
        let p = ControlPacket::new_checked(&CONF_NAK[..]).unwrap();
        assert_eq!(p.code(), Code::ConfigureNak);
        let typed: Vec<_> = options(p.data()).collect::<Result<_>>().unwrap();
        assert_eq!(
            typed,
            vec![LcpOption::AuthProtocol(AuthProtocol::Chap {
                algorithm: CHAP_MD5
            })]
        );
    }

    #[test]
    fn deconstruct_echo_and_rejects() {
        let p = ControlPacket::new_checked(&ECHO_REQ[..]).unwrap();
        assert_eq!(p.code(), Code::EchoRequest);
        assert_eq!(p.magic_number(), Ok(0xcafe_babe));
        assert_eq!(p.echo_data(), Ok(&b"hi"[..]));

        let p = ControlPacket::new_checked(&PROTO_REJ[..]).unwrap();
        assert_eq!(p.rejected_protocol(), Ok(Protocol(0x8281)));
        assert_eq!(p.rejected_information(), Ok(&[0x01, 0x05][..]));

        // Code-Reject carrying a packet with unknown code 0x20.
        let cr = [0x07, 0x04, 0x00, 0x08, 0x20, 0x01, 0x00, 0x04];
        let p = ControlPacket::new_checked(&cr[..]).unwrap();
        let inner = ControlPacket::new_checked(p.rejected_packet()).unwrap();
        assert_eq!(inner.code(), Code::Unknown(0x20));

        // Echo too short for a magic number.
        let short = [0x09, 0x07, 0x00, 0x06, 0xca, 0xfe];
        let p = ControlPacket::new_checked(&short[..]).unwrap();
        assert_eq!(p.magic_number(), Err(Error::Truncated));
        assert_eq!(LcpRepr::parse(&p), Err(Error::Truncated));
    }

    #[test]
    fn option_lengths() {
        assert!(matches!(
            LcpOption::parse(1, &[5]),
            Err(Error::Malformed(_))
        ));
        assert!(matches!(
            LcpOption::parse(5, &[0, 0, 0]),
            Err(Error::Malformed(_))
        ));
        assert!(matches!(
            LcpOption::parse(3, &[0xc0, 0x23, 0x00]),
            Err(Error::Malformed(_))
        ));
        assert!(matches!(
            LcpOption::parse(3, &[0xc2, 0x23]),
            Err(Error::Malformed(_))
        ));
        assert!(matches!(
            LcpOption::parse(7, &[0]),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            LcpOption::parse(3, &[0xc0, 0x27, 0x01]),
            Ok(LcpOption::AuthProtocol(AuthProtocol::Other {
                protocol: Protocol(0xc027),
                data: &[0x01]
            }))
        );
        assert_eq!(
            LcpOption::parse(13, &[6]),
            Ok(LcpOption::Unknown {
                kind: 13,
                data: &[6]
            })
        );
        // Bad option inside good framing: typed iteration reports it and goes on.
        let opts = [0x01, 0x03, 0x05, 0x07, 0x02];
        let mut it = options(&opts);
        assert!(matches!(it.next(), Some(Err(Error::Malformed(_)))));
        assert_eq!(it.next(), Some(Ok(LcpOption::ProtocolFieldCompression)));
        assert_eq!(it.next(), None);
    }

    #[test]
    fn construct_configure_request() {
        let mut buf = vec![0xa5; CONF_REQ.len()];
        let mut p = ControlPacket::new_unchecked(&mut buf[..]);
        p.set_code(Code::ConfigureRequest);
        p.set_identifier(1);
        p.set_length(18);
        let mut w = OptionWriter::new(p.data_mut());
        w.push(&LcpOption::Mru(1454)).unwrap();
        w.push(&LcpOption::MagicNumber(0x1234_5678)).unwrap();
        w.push(&LcpOption::AuthProtocol(AuthProtocol::Pap)).unwrap();
        assert_eq!(w.finish(), 14);
        assert_eq!(buf, CONF_REQ);
    }

    #[test]
    fn emit_configure_request_and_nak() {
        let mut buf = vec![0xa5; CONF_REQ.len()];
        let n = emit_options(&mut buf, Code::ConfigureRequest, 1, |w| {
            w.push(&LcpOption::Mru(1454))?;
            w.push(&LcpOption::MagicNumber(0x1234_5678))?;
            w.push(&LcpOption::AuthProtocol(AuthProtocol::Pap))
        })
        .unwrap();
        assert_eq!(n, 18);
        assert_eq!(buf, CONF_REQ);

        let mut buf = vec![0xa5; CONF_NAK.len()];
        let n = emit_options(&mut buf, Code::ConfigureNak, 1, |w| {
            w.push(&LcpOption::AuthProtocol(AuthProtocol::Chap {
                algorithm: CHAP_MD5,
            }))
        })
        .unwrap();
        assert_eq!(n, 9);
        assert_eq!(buf, CONF_NAK);

        let mut tlv = [0xa5u8; 4];
        assert_eq!(LcpOption::Mru(1454).emit(&mut tlv), Ok(4));
        assert_eq!(tlv, [0x01, 0x04, 0x05, 0xae]);
        assert_eq!(
            LcpOption::MagicNumber(1).emit(&mut tlv),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn repr_parse_and_emit() {
        for (bytes, expect) in [
            (
                &CONF_REQ[..],
                LcpRepr {
                    code: Code::ConfigureRequest,
                    identifier: 1,
                    data: LcpData::Options(&CONF_REQ[4..]),
                },
            ),
            (
                &ECHO_REQ[..],
                LcpRepr {
                    code: Code::EchoRequest,
                    identifier: 7,
                    data: LcpData::Echo {
                        magic_number: 0xcafe_babe,
                        data: b"hi",
                    },
                },
            ),
            (
                &PROTO_REJ[..],
                LcpRepr {
                    code: Code::ProtocolReject,
                    identifier: 2,
                    data: LcpData::ProtocolReject {
                        protocol: Protocol(0x8281),
                        information: &[0x01, 0x05],
                    },
                },
            ),
        ] {
            let p = ControlPacket::new_checked(bytes).unwrap();
            let repr = LcpRepr::parse(&p).unwrap();
            assert_eq!(repr, expect);
            assert_eq!(repr.buffer_len(), bytes.len());
            let mut buf = vec![0xa5; bytes.len()];
            repr.emit(&mut ControlPacket::new_unchecked(&mut buf[..]))
                .unwrap();
            assert_eq!(buf, bytes);
            let mut small = vec![0xa5; bytes.len() - 1];
            assert_eq!(
                repr.emit(&mut ControlPacket::new_unchecked(&mut small[..])),
                Err(Error::Truncated)
            );
        }
        // Broken option framing in a Configure packet refuses the packet.
        let bad = [0x01, 0x01, 0x00, 0x07, 0x01, 0x04, 0x05];
        let p = ControlPacket::new_checked(&bad[..]).unwrap();
        assert_eq!(LcpRepr::parse(&p), Err(Error::Truncated));
        // Data that does not belong to the code is refused on emit.
        let wrong = LcpRepr {
            code: Code::ConfigureAck,
            identifier: 0,
            data: LcpData::Raw(&[]),
        };
        let mut buf = [0u8; 8];
        assert!(matches!(
            wrong.emit(&mut ControlPacket::new_unchecked(&mut buf[..])),
            Err(Error::Malformed(_))
        ));
    }
}
