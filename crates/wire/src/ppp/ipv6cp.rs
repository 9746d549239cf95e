//! IPv6CP, the IPv6 Control Protocol (RFC 5072).
//!
//! It negotiates only the 64-bit interface identifier from which each end forms its
//! link-local address (fe80::/64 + identifier); global addresses then come from router
//! advertisements or DHCPv6, not from IPv6CP.

use super::control::{ConfigOption, OptionIter};
use crate::{Error, Result};

/// IPv6CP configuration option types.
pub mod option_type {
    pub const INTERFACE_IDENTIFIER: u8 = 1;
    /// RFC 5072 IPv6-Compression-Protocol, left raw.
    pub const IPV6_COMPRESSION_PROTOCOL: u8 = 2;
}

/// One IPv6CP configuration option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ipv6cpOption<'a> {
    /// The sender's interface identifier; all zeros in a request means "suggest one".
    InterfaceIdentifier([u8; 8]),
    /// Any other type, kept for a verbatim Configure-Reject. Not for type 1.
    Unknown { kind: u8, data: &'a [u8] },
}

impl<'a> Ipv6cpOption<'a> {
    /// Types an option's value. `Malformed` when an Interface-Identifier is not 8 bytes.
    pub fn parse(kind: u8, value: &'a [u8]) -> Result<Self> {
        match kind {
            option_type::INTERFACE_IDENTIFIER => <[u8; 8]>::try_from(value)
                .map(Ipv6cpOption::InterfaceIdentifier)
                .map_err(|_| Error::Malformed("IPv6CP Interface-Identifier length")),
            kind => Ok(Ipv6cpOption::Unknown { kind, data: value }),
        }
    }
}

impl ConfigOption for Ipv6cpOption<'_> {
    fn option_type(&self) -> u8 {
        match self {
            Ipv6cpOption::InterfaceIdentifier(_) => option_type::INTERFACE_IDENTIFIER,
            Ipv6cpOption::Unknown { kind, .. } => *kind,
        }
    }

    fn value_len(&self) -> usize {
        match self {
            Ipv6cpOption::InterfaceIdentifier(_) => 8,
            Ipv6cpOption::Unknown { data, .. } => data.len(),
        }
    }

    fn emit_value(&self, out: &mut [u8]) {
        match self {
            Ipv6cpOption::InterfaceIdentifier(id) => out.copy_from_slice(id),
            Ipv6cpOption::Unknown { data, .. } => out.copy_from_slice(data),
        }
    }
}

/// Iterates over an option list as typed [`Ipv6cpOption`]s (error behaviour as
/// [`lcp::LcpOptions`](super::lcp::LcpOptions)).
#[derive(Debug, Clone)]
pub struct Ipv6cpOptions<'a>(OptionIter<'a>);

/// Typed iteration over the options of an IPv6CP Configure packet's data.
pub fn options(data: &[u8]) -> Ipv6cpOptions<'_> {
    Ipv6cpOptions(OptionIter::new(data))
}

impl<'a> Iterator for Ipv6cpOptions<'a> {
    type Item = Result<Ipv6cpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(
            self.0
                .next()?
                .and_then(|(kind, value)| Ipv6cpOption::parse(kind, value)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppp::control::{emit_options, Code, ControlPacket};

    const ID: [u8; 8] = [0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55];

    // Configure-Request id 1: Interface-Identifier 0211:22ff:fe33:4455.
    static CONF_REQ: [u8; 14] = [
        0x01, 0x01, 0x00, 0x0e, //
        0x01, 0x0a, 0x02, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
    ];

    #[test]
    fn deconstruct() {
        let p = ControlPacket::new_checked(&CONF_REQ[..]).unwrap();
        assert_eq!(p.code(), Code::ConfigureRequest);
        assert_eq!(p.length(), 14);
        let mut it = options(p.data());
        assert_eq!(it.next(), Some(Ok(Ipv6cpOption::InterfaceIdentifier(ID))));
        assert_eq!(it.next(), None);
    }

    #[test]
    fn construct_and_emit() {
        let mut buf = vec![0xa5; CONF_REQ.len()];
        let mut p = ControlPacket::new_unchecked(&mut buf[..]);
        p.set_code(Code::ConfigureRequest);
        p.set_identifier(1);
        p.set_length(14);
        assert_eq!(
            Ipv6cpOption::InterfaceIdentifier(ID).emit(p.data_mut()),
            Ok(10)
        );
        assert_eq!(buf, CONF_REQ);

        let mut buf = vec![0xa5; CONF_REQ.len()];
        let n = emit_options(&mut buf, Code::ConfigureRequest, 1, |w| {
            w.push(&Ipv6cpOption::InterfaceIdentifier(ID))
        })
        .unwrap();
        assert_eq!(n, 14);
        assert_eq!(buf, CONF_REQ);
    }

    #[test]
    fn bad_and_unknown() {
        assert!(matches!(
            Ipv6cpOption::parse(1, &ID[..7]),
            Err(Error::Malformed(_))
        ));
        assert_eq!(
            Ipv6cpOption::parse(2, &[1]),
            Ok(Ipv6cpOption::Unknown {
                kind: 2,
                data: &[1]
            })
        );
    }
}
