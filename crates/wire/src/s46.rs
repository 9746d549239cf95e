//! The Softwire46 DHCPv6 options of RFC 7598 that provision a MAP-E CE: the container
//! OPTION_S46_CONT_MAPE (94) holding one or more S46_RULE (89) — each with an optional
//! S46_PORTPARAMS (93) inside — and one or more S46_BR (90).
//!
//! Layouts (RFC 7598 §4), after each option's 4-byte code and length:
//! - S46_RULE: flags (1; bit 0x01 is the F flag: the rule is also an FMR), ea-len (1, 0–48),
//!   prefix4-len (1, 0–32), ipv4-prefix (4), prefix6-len (1, 0–128), ipv6-prefix
//!   (⌈prefix6-len / 8⌉ bytes, zero-padded), then the rule's own options.
//! - S46_BR: the BR's IPv6 address (16). RFC 8539 also lets it stand outside the container.
//! - S46_PORTPARAMS: offset (1, 0–15), PSID-len (1, 0–16), PSID (2, left-aligned: its first
//!   PSID-len bits are the PSID, the rest zero).
//!
//! Parsing goes through [`crate::dhcpv6::Dhcpv6Options`] like every DHCPv6 option; emitting
//! through [`OptionWriter`]. A rule becomes the arithmetic's [`MapRule`] with
//! [`S46Rule::map_rule`].

use core::net::{Ipv4Addr, Ipv6Addr};

use crate::dhcpv6::{Dhcpv6Options, OptionWriter};
use crate::error::{Error, Result};
use crate::map_rule::{MapRule, PortParams};

/// Option codes (RFC 7598 §4, §5).
pub mod opt {
    pub const S46_RULE: u16 = 89;
    pub const S46_BR: u16 = 90;
    pub const S46_DMR: u16 = 91;
    pub const S46_V4V6BIND: u16 = 92;
    pub const S46_PORTPARAMS: u16 = 93;
    pub const S46_CONT_MAPE: u16 = 94;
    pub const S46_CONT_MAPT: u16 = 95;
    pub const S46_CONT_LW: u16 = 96;
}

/// The F flag of an S46_RULE's flags byte.
pub const FLAG_FMR: u8 = 0x01;

/// An S46_RULE's fixed part before the IPv6 prefix.
const RULE_FIXED_LEN: usize = 8;

/// An S46_PORTPARAMS value (RFC 7598 §4.5). The PSID in [`PortParams`] is right-aligned;
/// on the wire it is left-aligned.
pub fn parse_port_params(value: &[u8]) -> Result<PortParams> {
    let [offset, psid_len, hi, lo] = *value else {
        return Err(Error::Malformed("s46 portparams option is not 4 bytes"));
    };
    if offset > 15 {
        return Err(Error::Malformed("s46 portparams offset above 15"));
    }
    if psid_len > 16 {
        return Err(Error::Malformed("s46 portparams psid-len above 16"));
    }
    let field = u16::from_be_bytes([hi, lo]);
    if psid_len == 0 {
        // "When set to 0, the PSID field is to be ignored."
        return Ok(PortParams {
            offset,
            psid_len,
            psid: 0,
        });
    }
    let pad = 16 - u32::from(psid_len);
    if u32::from(field) & ((1u32 << pad) - 1) != 0 {
        return Err(Error::Malformed(
            "s46 portparams psid has bits set past psid-len",
        ));
    }
    Ok(PortParams {
        offset,
        psid_len,
        psid: (u32::from(field) >> pad) as u16,
    })
}

/// The 4-byte value of an S46_PORTPARAMS option; refuses a PSID wider than `psid_len`.
pub fn port_params_value(p: &PortParams) -> Result<[u8; 4]> {
    if p.offset > 15 || p.psid_len > 16 || u32::from(p.psid) >> p.psid_len != 0 {
        return Err(Error::Malformed(
            "s46 portparams out of range or psid wider than psid-len",
        ));
    }
    let field = if p.psid_len == 0 {
        0
    } else {
        (u32::from(p.psid) << (16 - u32::from(p.psid_len))) as u16
    };
    let [hi, lo] = field.to_be_bytes();
    Ok([p.offset, p.psid_len, hi, lo])
}

/// An S46_RULE (RFC 7598 §4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct S46Rule {
    /// The F flag: the rule is also a Forwarding Mapping Rule.
    pub fmr: bool,
    pub ea_len: u8,
    pub prefix4_len: u8,
    /// As sent; bits after `prefix4_len` are reserved (the receiver ignores them).
    pub ipv4_prefix: Ipv4Addr,
    pub prefix6_len: u8,
    /// Bits after `prefix6_len` are zero (the receiver ignores what was sent there).
    pub ipv6_prefix: Ipv6Addr,
    /// The rule's S46_PORTPARAMS, if it has one.
    pub port_params: Option<PortParams>,
}

impl S46Rule {
    /// Reads an S46_RULE value. Refuses lengths out of range, a prefix past the value, broken
    /// inner options and a malformed S46_PORTPARAMS; other inner options are skipped.
    pub fn parse(value: &[u8]) -> Result<S46Rule> {
        if value.len() < RULE_FIXED_LEN {
            return Err(Error::Malformed("s46 rule shorter than 8 bytes"));
        }
        let flags = value[0];
        let ea_len = value[1];
        let prefix4_len = value[2];
        let ipv4_prefix = Ipv4Addr::new(value[3], value[4], value[5], value[6]);
        let prefix6_len = value[7];
        if ea_len > 48 {
            return Err(Error::Malformed("s46 rule ea-len above 48"));
        }
        if prefix4_len > 32 {
            return Err(Error::Malformed("s46 rule prefix4-len above 32"));
        }
        if prefix6_len > 128 {
            return Err(Error::Malformed("s46 rule prefix6-len above 128"));
        }
        let n = usize::from(prefix6_len).div_ceil(8);
        let Some(bytes) = value.get(RULE_FIXED_LEN..RULE_FIXED_LEN + n) else {
            return Err(Error::Malformed(
                "s46 rule ipv6-prefix runs past the option",
            ));
        };
        let mut a = [0u8; 16];
        a[..n].copy_from_slice(bytes);
        let mask = if prefix6_len == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(prefix6_len))
        };
        let ipv6_prefix = Ipv6Addr::from(u128::from_be_bytes(a) & mask);
        let mut port_params = None;
        for o in Dhcpv6Options::new(&value[RULE_FIXED_LEN + n..]) {
            let (code, v) = o?;
            if code == opt::S46_PORTPARAMS && port_params.is_none() {
                port_params = Some(parse_port_params(v)?);
            }
        }
        Ok(S46Rule {
            fmr: flags & FLAG_FMR != 0,
            ea_len,
            prefix4_len,
            ipv4_prefix,
            prefix6_len,
            ipv6_prefix,
            port_params,
        })
    }

    /// The rule for the MAP arithmetic (RFC 7597 §5): its checks on top of the option's.
    pub fn map_rule(&self) -> Result<MapRule> {
        MapRule::new(
            self.ipv6_prefix,
            self.prefix6_len,
            self.ipv4_prefix,
            self.prefix4_len,
            self.ea_len,
            self.port_params,
        )
    }
}

/// An S46_BR value: the BR's IPv6 address.
pub fn parse_br(value: &[u8]) -> Result<Ipv6Addr> {
    let a: [u8; 16] = value
        .try_into()
        .map_err(|_| Error::Malformed("s46 br option is not 16 bytes"))?;
    Ok(Ipv6Addr::from(a))
}

/// The contents of an OPTION_S46_CONT_MAPE: its rules and BR addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapeContainer<'a> {
    options: &'a [u8],
}

impl<'a> MapeContainer<'a> {
    /// Checks the container's value: options well framed, every S46_RULE and S46_BR parses,
    /// and there is at least one of each (RFC 7598 §5).
    pub fn parse(value: &'a [u8]) -> Result<MapeContainer<'a>> {
        let (mut rules, mut brs) = (0usize, 0usize);
        for o in Dhcpv6Options::new(value) {
            let (code, v) = o?;
            match code {
                opt::S46_RULE => {
                    S46Rule::parse(v)?;
                    rules += 1;
                }
                opt::S46_BR => {
                    parse_br(v)?;
                    brs += 1;
                }
                _ => {}
            }
        }
        if rules == 0 {
            return Err(Error::Malformed("s46 mape container without an s46 rule"));
        }
        if brs == 0 {
            return Err(Error::Malformed("s46 mape container without an s46 br"));
        }
        Ok(MapeContainer { options: value })
    }

    /// The rules, in order (checked by [`parse`](Self::parse)).
    pub fn rules(&self) -> impl Iterator<Item = S46Rule> + 'a {
        Dhcpv6Options::new(self.options)
            .flatten()
            .filter(|(c, _)| *c == opt::S46_RULE)
            .filter_map(|(_, v)| S46Rule::parse(v).ok())
    }

    /// The BR addresses, in order.
    pub fn brs(&self) -> impl Iterator<Item = Ipv6Addr> + 'a {
        Dhcpv6Options::new(self.options)
            .flatten()
            .filter(|(c, _)| *c == opt::S46_BR)
            .filter_map(|(_, v)| parse_br(v).ok())
    }
}

impl OptionWriter<'_> {
    /// An S46_RULE with its S46_PORTPARAMS, if any. The IPv6 prefix is written in
    /// ⌈prefix6-len / 8⌉ bytes with the bits past its length zero; the IPv4 prefix as given.
    pub fn s46_rule(&mut self, r: &S46Rule) -> Result<()> {
        if r.ea_len > 48 || r.prefix4_len > 32 || r.prefix6_len > 128 {
            return Err(Error::Malformed("s46 rule length field out of range"));
        }
        let n = usize::from(r.prefix6_len).div_ceil(8);
        let mut fixed = [0u8; RULE_FIXED_LEN + 16];
        fixed[0] = if r.fmr { FLAG_FMR } else { 0 };
        fixed[1] = r.ea_len;
        fixed[2] = r.prefix4_len;
        fixed[3..7].copy_from_slice(&r.ipv4_prefix.octets());
        fixed[7] = r.prefix6_len;
        let mask = if r.prefix6_len == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(r.prefix6_len))
        };
        let prefix = (u128::from(r.ipv6_prefix) & mask).to_be_bytes();
        fixed[8..8 + n].copy_from_slice(&prefix[..n]);
        let params = r.port_params.as_ref().map(port_params_value).transpose()?;
        let o = self.begin(opt::S46_RULE, &fixed[..RULE_FIXED_LEN + n])?;
        if let Some(p) = params {
            self.put(opt::S46_PORTPARAMS, &p)?;
        }
        self.end(o)
    }

    /// An S46_BR.
    pub fn s46_br(&mut self, br: Ipv6Addr) -> Result<()> {
        self.put(opt::S46_BR, &br.octets())
    }

    /// An OPTION_S46_CONT_MAPE with `rules` and `brs`; refuses an empty list of either.
    pub fn s46_cont_mape(&mut self, rules: &[S46Rule], brs: &[Ipv6Addr]) -> Result<()> {
        if rules.is_empty() || brs.is_empty() {
            return Err(Error::Malformed("s46 mape container needs a rule and a br"));
        }
        let o = self.begin(opt::S46_CONT_MAPE, &[])?;
        for r in rules {
            self.s46_rule(r)?;
        }
        for b in brs {
            self.s46_br(*b)?;
        }
        self.end(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// The RFC 7597 Appendix A rule as an FMR with explicit port parameters, and its BR.
    fn appendix_a_rule() -> S46Rule {
        S46Rule {
            fmr: true,
            ea_len: 16,
            prefix4_len: 24,
            ipv4_prefix: Ipv4Addr::new(192, 0, 2, 0),
            prefix6_len: 40,
            ipv6_prefix: v6("2001:db8::"),
            port_params: Some(PortParams {
                offset: 6,
                psid_len: 8,
                psid: 0,
            }),
        }
    }

    // OPTION_S46_CONT_MAPE with one S46_RULE (F flag, ea-len 16, 192.0.2.0/24,
    // 2001:db8::/40 in 5 bytes, S46_PORTPARAMS offset 6 PSID-len 8 PSID 0) and one S46_BR
    // 2001:db8:ffff::1. Written out by hand from RFC 7598 §4.1, §4.2, §4.5 and §5.
    static CONT_MAPE: &[u8] = &[
        0x00, 0x5e, 0x00, 0x2d, // OPTION_S46_CONT_MAPE, length 45
        0x00, 0x59, 0x00, 0x15, // OPTION_S46_RULE, length 21
        0x01, 0x10, 0x18, // flags (F), ea-len 16, prefix4-len 24
        0xc0, 0x00, 0x02, 0x00, // ipv4-prefix 192.0.2.0
        0x28, 0x20, 0x01, 0x0d, 0xb8, 0x00, // prefix6-len 40, ipv6-prefix 2001:db8:00
        0x00, 0x5d, 0x00, 0x04, 0x06, 0x08, 0x00, 0x00, // S46_PORTPARAMS 6, 8, PSID 0
        0x00, 0x5a, 0x00, 0x10, // OPTION_S46_BR, length 16
        0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x01,
    ];

    #[test]
    fn test_emit() {
        let mut b = vec![0xa5; 100];
        let mut w = OptionWriter::new(&mut b, 0);
        w.s46_cont_mape(&[appendix_a_rule()], &[v6("2001:db8:ffff::1")])
            .unwrap();
        let n = w.len();
        assert_eq!(&b[..n], CONT_MAPE);
        let mut short = vec![0u8; CONT_MAPE.len() - 1];
        let mut w = OptionWriter::new(&mut short, 0);
        assert_eq!(
            w.s46_cont_mape(&[appendix_a_rule()], &[v6("2001:db8:ffff::1")]),
            Err(Error::Truncated)
        );
        let mut w = OptionWriter::new(&mut b, 0);
        assert!(w.s46_cont_mape(&[], &[v6("2001:db8:ffff::1")]).is_err());
        assert!(w.s46_cont_mape(&[appendix_a_rule()], &[]).is_err());
    }

    #[test]
    fn test_parse() {
        let (code, v) = Dhcpv6Options::new(CONT_MAPE).next().unwrap().unwrap();
        assert_eq!(code, opt::S46_CONT_MAPE);
        let c = MapeContainer::parse(v).unwrap();
        assert_eq!(c.rules().collect::<Vec<_>>(), [appendix_a_rule()]);
        assert_eq!(c.brs().collect::<Vec<_>>(), [v6("2001:db8:ffff::1")]);
        let m = appendix_a_rule().map_rule().unwrap();
        assert_eq!((m.psid_offset(), m.psid_len()), (6, 8));
    }

    #[test]
    fn port_params_bytes() {
        // RFC 7597 Appendix A Example 5: offset 6, PSID-len 8, PSID 0x34 → field 0x3400.
        let p = PortParams {
            offset: 6,
            psid_len: 8,
            psid: 0x34,
        };
        assert_eq!(port_params_value(&p), Ok([6, 8, 0x34, 0x00]));
        assert_eq!(parse_port_params(&[6, 8, 0x34, 0x00]), Ok(p));
        // k = 4, PSID 0xa: left-aligned 0xa000.
        assert_eq!(
            parse_port_params(&[0, 4, 0xa0, 0x00]).map(|p| p.psid),
            Ok(0xa)
        );
        // k = 16: the whole field.
        assert_eq!(
            parse_port_params(&[0, 16, 0x12, 0x34]).map(|p| p.psid),
            Ok(0x1234)
        );
        // PSID-len 0: the PSID field is ignored.
        assert_eq!(
            parse_port_params(&[6, 0, 0xff, 0xff]).map(|p| p.psid),
            Ok(0)
        );
        assert!(
            parse_port_params(&[6, 8, 0x34, 0x01]).is_err(),
            "padding bit"
        );
        assert!(parse_port_params(&[16, 0, 0, 0]).is_err());
        assert!(parse_port_params(&[0, 17, 0, 0]).is_err());
        assert!(parse_port_params(&[6, 8, 0]).is_err());
        assert!(parse_port_params(&[6, 8, 0, 0, 0]).is_err());
        assert!(port_params_value(&PortParams {
            offset: 6,
            psid_len: 4,
            psid: 16
        })
        .is_err());
    }

    #[test]
    fn rule_prefix_lengths() {
        // prefix6-len 0: no prefix bytes; 128: all 16; 33: 5 bytes, the bits past 33 zeroed.
        for (len, bytes) in [(0u8, 0usize), (128, 16), (33, 5), (7, 1)] {
            let r = S46Rule {
                fmr: false,
                ea_len: 0,
                prefix4_len: 32,
                ipv4_prefix: Ipv4Addr::new(192, 0, 2, 1),
                prefix6_len: len,
                ipv6_prefix: v6("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"),
                port_params: None,
            };
            let mut b = vec![0xa5; 64];
            let mut w = OptionWriter::new(&mut b, 0);
            w.s46_rule(&r).unwrap();
            let n = w.len();
            assert_eq!(n, 4 + RULE_FIXED_LEN + bytes, "prefix6-len {len}");
            let (_, v) = Dhcpv6Options::new(&b[..n]).next().unwrap().unwrap();
            let back = S46Rule::parse(v).unwrap();
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            assert_eq!(
                u128::from(back.ipv6_prefix),
                u128::from(r.ipv6_prefix) & mask
            );
            assert!(!back.fmr);
        }
    }

    #[test]
    fn parse_errors() {
        let (_, v) = Dhcpv6Options::new(CONT_MAPE).next().unwrap().unwrap();
        let rule = &v[4..4 + 21];
        assert!(S46Rule::parse(rule).is_ok());
        // Every truncation of the rule and the container is an error or parses, never a panic.
        for n in 0..rule.len() {
            let r = S46Rule::parse(&rule[..n]);
            if n == 13 {
                // Cut right after the prefix: a rule without port parameters.
                assert_eq!(r.map(|r| r.port_params), Ok(None));
            } else {
                assert!(r.is_err(), "rule cut at {n}");
            }
        }
        for n in 0..v.len() {
            let _ = MapeContainer::parse(&v[..n]);
        }
        for (at, bad, why) in [
            (1, 49u8, "ea-len"),
            (2, 33, "prefix4-len"),
            (7, 129, "prefix6-len"),
            (7, 120, "prefix past the option"),
        ] {
            let mut r = rule.to_vec();
            r[at] = bad;
            assert!(S46Rule::parse(&r).is_err(), "{why}");
        }
        assert!(parse_br(&[0; 15]).is_err());
        assert!(parse_br(&[0; 17]).is_err());
        // A container without a BR, or without a rule.
        assert!(MapeContainer::parse(&v[..4 + 21]).is_err());
        assert!(MapeContainer::parse(&v[4 + 21..]).is_err());
        // A rule whose S46_PORTPARAMS is 3 bytes.
        let mut r = rule.to_vec();
        r[16] = 3;
        r.pop();
        assert!(S46Rule::parse(&r).is_err());
    }
}
