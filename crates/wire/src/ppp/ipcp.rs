//! IPCP, the IPv4 Control Protocol (RFC 1332), with the DNS options of RFC 1877.
//!
//! IPCP packets use the [`control`](super::control) format (codes 1–7). The usual PPPoE
//! exchange: the client requests address 0.0.0.0 and DNS 0.0.0.0, the access concentrator
//! Configure-Naks with the values to use, the client requests again with them and gets an Ack.

use core::net::Ipv4Addr;

use super::control::{ConfigOption, OptionIter};
use crate::{Error, Result};

/// IPCP configuration option types.
pub mod option_type {
    /// RFC 1332 IP-Compression-Protocol (Van Jacobson), left raw.
    pub const IP_COMPRESSION_PROTOCOL: u8 = 2;
    pub const IP_ADDRESS: u8 = 3;
    pub const PRIMARY_DNS: u8 = 129;
    /// RFC 1877 primary NBNS, left raw.
    pub const PRIMARY_NBNS: u8 = 130;
    pub const SECONDARY_DNS: u8 = 131;
    /// RFC 1877 secondary NBNS, left raw.
    pub const SECONDARY_NBNS: u8 = 132;
}

/// One IPCP configuration option. An address of 0.0.0.0 in a request means "tell me".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpcpOption<'a> {
    IpAddress(Ipv4Addr),
    PrimaryDns(Ipv4Addr),
    SecondaryDns(Ipv4Addr),
    /// Any other type, kept for a verbatim Configure-Reject. Not for the types above.
    Unknown {
        kind: u8,
        data: &'a [u8],
    },
}

impl<'a> IpcpOption<'a> {
    /// Types an option's value. `Malformed` when an address option is not 4 bytes.
    pub fn parse(kind: u8, value: &'a [u8]) -> Result<Self> {
        use option_type::*;
        let addr = |v: &[u8]| match v {
            [a, b, c, d] => Ok(Ipv4Addr::new(*a, *b, *c, *d)),
            _ => Err(Error::Malformed("IPCP address option length")),
        };
        Ok(match kind {
            IP_ADDRESS => IpcpOption::IpAddress(addr(value)?),
            PRIMARY_DNS => IpcpOption::PrimaryDns(addr(value)?),
            SECONDARY_DNS => IpcpOption::SecondaryDns(addr(value)?),
            kind => IpcpOption::Unknown { kind, data: value },
        })
    }
}

impl ConfigOption for IpcpOption<'_> {
    fn option_type(&self) -> u8 {
        use option_type::*;
        match self {
            IpcpOption::IpAddress(_) => IP_ADDRESS,
            IpcpOption::PrimaryDns(_) => PRIMARY_DNS,
            IpcpOption::SecondaryDns(_) => SECONDARY_DNS,
            IpcpOption::Unknown { kind, .. } => *kind,
        }
    }

    fn value_len(&self) -> usize {
        match self {
            IpcpOption::Unknown { data, .. } => data.len(),
            _ => 4,
        }
    }

    fn emit_value(&self, out: &mut [u8]) {
        match self {
            IpcpOption::IpAddress(a) | IpcpOption::PrimaryDns(a) | IpcpOption::SecondaryDns(a) => {
                out.copy_from_slice(&a.octets())
            }
            IpcpOption::Unknown { data, .. } => out.copy_from_slice(data),
        }
    }
}

/// Iterates over an option list as typed [`IpcpOption`]s (error behaviour as
/// [`lcp::LcpOptions`](super::lcp::LcpOptions)).
#[derive(Debug, Clone)]
pub struct IpcpOptions<'a>(OptionIter<'a>);

/// Typed iteration over the options of an IPCP Configure packet's data.
pub fn options(data: &[u8]) -> IpcpOptions<'_> {
    IpcpOptions(OptionIter::new(data))
}

impl<'a> Iterator for IpcpOptions<'a> {
    type Item = Result<IpcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(
            self.0
                .next()?
                .and_then(|(kind, value)| IpcpOption::parse(kind, value)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppp::control::{emit_options, Code, ControlPacket, ControlRepr, OptionWriter};

    // Configure-Request id 1: IP-Address 0.0.0.0, Primary-DNS 0.0.0.0, Secondary-DNS 0.0.0.0.
    static CONF_REQ: [u8; 22] = [
        0x01, 0x01, 0x00, 0x16, //
        0x03, 0x06, 0x00, 0x00, 0x00, 0x00, //
        0x81, 0x06, 0x00, 0x00, 0x00, 0x00, //
        0x83, 0x06, 0x00, 0x00, 0x00, 0x00,
    ];

    // Configure-Nak id 1 with the values to use.
    static CONF_NAK: [u8; 22] = [
        0x03, 0x01, 0x00, 0x16, //
        0x03, 0x06, 192, 0, 2, 10, //
        0x81, 0x06, 198, 51, 100, 53, //
        0x83, 0x06, 203, 0, 113, 53,
    ];

    #[test]
    fn deconstruct() {
        let p = ControlPacket::new_checked(&CONF_REQ[..]).unwrap();
        assert_eq!(p.code(), Code::ConfigureRequest);
        assert_eq!(p.identifier(), 1);
        assert_eq!(p.length(), 22);
        let typed: Vec<_> = options(p.data()).collect::<Result<_>>().unwrap();
        assert_eq!(
            typed,
            vec![
                IpcpOption::IpAddress(Ipv4Addr::UNSPECIFIED),
                IpcpOption::PrimaryDns(Ipv4Addr::UNSPECIFIED),
                IpcpOption::SecondaryDns(Ipv4Addr::UNSPECIFIED),
            ]
        );
        let p = ControlPacket::new_checked(&CONF_NAK[..]).unwrap();
        let typed: Vec<_> = options(p.data()).collect::<Result<_>>().unwrap();
        assert_eq!(
            typed,
            vec![
                IpcpOption::IpAddress(Ipv4Addr::new(192, 0, 2, 10)),
                IpcpOption::PrimaryDns(Ipv4Addr::new(198, 51, 100, 53)),
                IpcpOption::SecondaryDns(Ipv4Addr::new(203, 0, 113, 53)),
            ]
        );
    }

    #[test]
    fn construct_and_emit() {
        let mut buf = vec![0xa5; CONF_REQ.len()];
        let mut p = ControlPacket::new_unchecked(&mut buf[..]);
        p.set_code(Code::ConfigureRequest);
        p.set_identifier(1);
        p.set_length(22);
        let mut w = OptionWriter::new(p.data_mut());
        for o in [
            IpcpOption::IpAddress(Ipv4Addr::UNSPECIFIED),
            IpcpOption::PrimaryDns(Ipv4Addr::UNSPECIFIED),
            IpcpOption::SecondaryDns(Ipv4Addr::UNSPECIFIED),
        ] {
            w.push(&o).unwrap();
        }
        assert_eq!(buf, CONF_REQ);

        let mut buf = vec![0xa5; CONF_NAK.len()];
        let n = emit_options(&mut buf, Code::ConfigureNak, 1, |w| {
            w.push(&IpcpOption::IpAddress(Ipv4Addr::new(192, 0, 2, 10)))?;
            w.push(&IpcpOption::PrimaryDns(Ipv4Addr::new(198, 51, 100, 53)))?;
            w.push(&IpcpOption::SecondaryDns(Ipv4Addr::new(203, 0, 113, 53)))
        })
        .unwrap();
        assert_eq!(n, 22);
        assert_eq!(buf, CONF_NAK);
    }

    #[test]
    fn parse_and_unknown() {
        let p = ControlPacket::new_checked(&CONF_REQ[..]).unwrap();
        let r = ControlRepr::parse(&p).unwrap();
        assert_eq!(r.data, &CONF_REQ[4..]);
        assert!(matches!(
            IpcpOption::parse(3, &[0, 0, 0]),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            IpcpOption::parse(2, &[0x00, 0x2d, 0x0f, 0x01]),
            Ok(IpcpOption::Unknown {
                kind: 2,
                data: &[0x00, 0x2d, 0x0f, 0x01]
            })
        );
    }
}
