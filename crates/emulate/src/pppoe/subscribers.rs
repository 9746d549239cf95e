//! The access concentrator's subscriber table: who may log in, with which password, and which
//! IPv4 address (fixed, from the pool, or none) and delegated IPv6 prefix each one gets — the
//! RADIUS users file of a real ISP, as a plain text file.
//!
//! One subscriber per line, fields separated by spaces or tabs; `#` starts a comment; blank
//! lines are skipped:
//!
//! ```text
//! # user   password  [ipv4=ADDRESS|pool|none]  [prefix=2001:db8:…/LEN]
//! alice    s3cret    ipv4=192.0.2.10           prefix=2001:db8:300::/56
//! bob      hunter2
//! carol    pw        ipv4=none
//! ```
//!
//! * `ipv4=ADDRESS` — always this address (in a documentation /24 or 198.18.0.0/15, not the
//!   network's own network or broadcast address);
//!   `ipv4=pool` (the default) — the next free pool address; `ipv4=none` — an IPv6-only
//!   subscriber: IPCP is refused (Protocol-Reject) and the session comes up on IPv6CP alone.
//! * `prefix=P/LEN` — the prefix this subscriber's session delegates by DHCPv6 (inside
//!   2001:db8::/32 or the benchmarking 2001:2::/48, LEN 32 to 64, no host bits; checked for
//!   clashes).
//!
//! User names and passwords are single words (no whitespace, no `#`). The parser is pure
//! (text in, table or error out), never panics on any input, and every error names the line
//! and what is wrong with it.

use core::net::{Ipv4Addr, Ipv6Addr};
use std::collections::BTreeMap;

use super::pool_net;
use crate::ppp::link::Credential;

/// How a subscriber gets its IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ipv4Assign {
    /// The next free address of the access concentrator's pool.
    Pool,
    /// Always this address.
    Fixed(Ipv4Addr),
    /// No IPv4 at all: IPCP is refused, the session runs IPv6CP only.
    None,
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscriber {
    pub user: String,
    pub password: String,
    pub ipv4: Ipv4Assign,
    /// The delegated prefix and its length.
    pub prefix: Option<(Ipv6Addr, u8)>,
    /// The line it came from (1-based; 0 for a table built in code).
    pub line: usize,
}

/// A bad line: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl core::fmt::Display for TableError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TableError {}

/// The subscribers, in file order, looked up by user name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriberTable {
    subscribers: Vec<Subscriber>,
    by_user: BTreeMap<String, usize>,
}

const SYNTAX: &str = "a line is `USER PASSWORD [ipv4=ADDRESS|pool|none] [prefix=2001:db8:…/LEN]`";

impl SubscriberTable {
    /// Parses a table from the bytes of a file. Errors name the first bad line.
    pub fn parse(bytes: &[u8]) -> Result<SubscriberTable, TableError> {
        let mut t = SubscriberTable::default();
        let mut fixed: BTreeMap<Ipv4Addr, usize> = BTreeMap::new();
        let mut prefixes: Vec<(Ipv6Addr, u8, usize)> = Vec::new();
        for (i, raw) in bytes.split(|b| *b == b'\n').enumerate() {
            let line = i + 1;
            let err = |message: String| TableError { line, message };
            let text = std::str::from_utf8(raw)
                .map_err(|e| err(format!("not UTF-8 text (byte {})", e.valid_up_to() + 1)))?;
            let text = text.split('#').next().unwrap_or("");
            let mut words = text.split_whitespace();
            let Some(user) = words.next() else { continue };
            let Some(password) = words.next() else {
                return Err(err(format!("user {user:?} has no password: {SYNTAX}")));
            };
            let mut s = Subscriber {
                user: user.into(),
                password: password.into(),
                ipv4: Ipv4Assign::Pool,
                prefix: None,
                line,
            };
            let (mut saw_ipv4, mut saw_prefix) = (false, false);
            for w in words {
                let Some((key, value)) = w.split_once('=') else {
                    return Err(err(format!("{w:?} is not KEY=VALUE: {SYNTAX}")));
                };
                match key {
                    "ipv4" if saw_ipv4 => return Err(err("ipv4 given twice".into())),
                    "ipv4" => {
                        saw_ipv4 = true;
                        s.ipv4 = parse_ipv4(value).map_err(err)?;
                    }
                    "prefix" if saw_prefix => return Err(err("prefix given twice".into())),
                    "prefix" => {
                        saw_prefix = true;
                        s.prefix = Some(parse_prefix(value).map_err(err)?);
                    }
                    other => {
                        return Err(err(format!(
                            "unknown key {other:?}: the keys are ipv4 and prefix"
                        )))
                    }
                }
            }
            if let Some(&first) = t.by_user.get(user) {
                let at = t.subscribers[first].line;
                return Err(err(format!(
                    "user {user:?} again (first on line {at}): one line per user"
                )));
            }
            if let Ipv4Assign::Fixed(a) = s.ipv4 {
                if let Some(at) = fixed.insert(a, line) {
                    return Err(err(format!(
                        "{a} is already the fixed address of line {at}'s user"
                    )));
                }
            }
            if let Some((p, len)) = s.prefix {
                if let Some((q, qlen, at)) = prefixes
                    .iter()
                    .find(|(q, qlen, _)| overlaps(p, len, *q, *qlen))
                {
                    return Err(err(format!(
                        "prefix {p}/{len} overlaps {q}/{qlen} of line {at}"
                    )));
                }
                prefixes.push((p, len, line));
            }
            t.by_user.insert(s.user.clone(), t.subscribers.len());
            t.subscribers.push(s);
        }
        Ok(t)
    }

    /// A table where every credential takes a pool address (`--user`/`--password`, a plan's
    /// `users = […]`). A user given twice keeps its first password.
    pub fn from_credentials(credentials: &[Credential]) -> SubscriberTable {
        let mut t = SubscriberTable::default();
        for c in credentials {
            if t.by_user.contains_key(&c.user) {
                continue;
            }
            t.by_user.insert(c.user.clone(), t.subscribers.len());
            t.subscribers.push(Subscriber {
                user: c.user.clone(),
                password: c.password.clone(),
                ipv4: Ipv4Assign::Pool,
                prefix: None,
                line: 0,
            });
        }
        t
    }

    pub fn get(&self, user: &str) -> Option<&Subscriber> {
        self.by_user.get(user).map(|&i| &self.subscribers[i])
    }

    pub fn iter(&self) -> impl Iterator<Item = &Subscriber> + '_ {
        self.subscribers.iter()
    }

    pub fn len(&self) -> usize {
        self.subscribers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subscribers.is_empty()
    }

    /// The user names and passwords, for the PPP links' PAP/CHAP check.
    pub fn credentials(&self) -> Vec<Credential> {
        self.subscribers
            .iter()
            .map(|s| Credential::new(&s.user, &s.password))
            .collect()
    }

    /// The fixed IPv4 addresses, for the pool to skip.
    pub fn fixed_ipv4(&self) -> impl Iterator<Item = (Ipv4Addr, &Subscriber)> + '_ {
        self.subscribers.iter().filter_map(|s| match s.ipv4 {
            Ipv4Assign::Fixed(a) => Some((a, s)),
            _ => None,
        })
    }

    /// Refuses a fixed address equal to the access concentrator's own (`gateway`), naming
    /// the line.
    pub fn check_gateway(&self, gateway: Ipv4Addr) -> Result<(), TableError> {
        match self.fixed_ipv4().find(|(a, _)| *a == gateway) {
            Some((a, s)) => Err(TableError {
                line: s.line,
                message: format!(
                    "user {:?}: {a} is the access concentrator's own IPCP address (the \
                     gateway): give the subscriber another one",
                    s.user
                ),
            }),
            None => Ok(()),
        }
    }
}

fn parse_ipv4(value: &str) -> Result<Ipv4Assign, String> {
    match value {
        "pool" => return Ok(Ipv4Assign::Pool),
        "none" => return Ok(Ipv4Assign::None),
        _ => {}
    }
    let a: Ipv4Addr = value.parse().map_err(|_| {
        format!("ipv4={value}: not an IPv4 address (or `pool`, or `none` for IPv6 only)")
    })?;
    let Some(net) = pool_net(a) else {
        return Err(format!(
            "ipv4={a}: outside the documentation ranges subscribers get addresses from \
             ({})",
            crate::ranges::LAB_V4_TEXT
        ));
    };
    if a == net.network() || a == net.broadcast() {
        return Err(format!(
            "ipv4={a}: the network or broadcast address of {net}: use an address between them"
        ));
    }
    Ok(Ipv4Assign::Fixed(a))
}

fn parse_prefix(value: &str) -> Result<(Ipv6Addr, u8), String> {
    let shape = || format!("prefix={value}: not ADDRESS/LEN (e.g. prefix=2001:db8:300::/56)");
    let (addr, len) = value.split_once('/').ok_or_else(shape)?;
    let addr: Ipv6Addr = addr.parse().map_err(|_| shape())?;
    let len: u8 = len.parse().map_err(|_| shape())?;
    if !(32..=64).contains(&len) {
        return Err(format!(
            "prefix={value}: a delegated prefix is /32 to /64 here (a home gateway gets a /48 to /64)"
        ));
    }
    if !crate::ranges::lab_prefix_v6(addr, len) {
        return Err(format!(
            "prefix={value}: outside the documentation range 2001:db8::/32 (or, for tables of \
             thousands, the benchmarking range 2001:2::/48)"
        ));
    }
    if u128::from(addr) & !mask(len) != 0 {
        let net = Ipv6Addr::from(u128::from(addr) & mask(len));
        return Err(format!(
            "prefix={value}: has host bits set after /{len} (did you mean {net}/{len}?)"
        ));
    }
    Ok((addr, len))
}

fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

fn in_prefix(a: Ipv6Addr, net: Ipv6Addr, len: u8) -> bool {
    u128::from(a) & mask(len) == u128::from(net) & mask(len)
}

fn overlaps(a: Ipv6Addr, alen: u8, b: Ipv6Addr, blen: u8) -> bool {
    let len = alen.min(blen);
    in_prefix(a, b, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> TableError {
        SubscriberTable::parse(text.as_bytes()).expect_err(text)
    }

    #[test]
    fn the_documented_example_parses() {
        let t = SubscriberTable::parse(
            b"# user   password  [ipv4=...] [prefix=...]\n\
              alice    s3cret    ipv4=192.0.2.10   prefix=2001:db8:300::/56\n\
              \n\
              bob\thunter2   # a comment\n\
              carol    pw        ipv4=none\n\
              dave     pw        ipv4=pool\r\n",
        )
        .unwrap();
        assert_eq!(t.len(), 4);
        let a = t.get("alice").unwrap();
        assert_eq!(a.password, "s3cret");
        assert_eq!(a.ipv4, Ipv4Assign::Fixed(Ipv4Addr::new(192, 0, 2, 10)));
        assert_eq!(
            a.prefix,
            Some((Ipv6Addr::new(0x2001, 0xdb8, 0x300, 0, 0, 0, 0, 0), 56))
        );
        assert_eq!(a.line, 2);
        assert_eq!(t.get("bob").unwrap().ipv4, Ipv4Assign::Pool);
        assert_eq!(t.get("bob").unwrap().line, 4);
        assert_eq!(t.get("carol").unwrap().ipv4, Ipv4Assign::None);
        assert_eq!(t.get("dave").unwrap().password, "pw");
        assert!(t.get("eve").is_none());
        assert_eq!(t.fixed_ipv4().count(), 1);
    }

    #[test]
    fn every_error_names_its_line_and_what_is_wrong() {
        let cases: &[(&str, usize, &str)] = &[
            ("alice\n", 1, "no password"),
            ("a p\nb p ipv4\n", 2, "not KEY=VALUE"),
            ("a p vlan=3\n", 1, "unknown key \"vlan\""),
            ("a p ipv4=10.0.0.1\n", 1, "outside the documentation ranges"),
            ("a p ipv4=192.0.2.255\n", 1, "network or broadcast"),
            ("a p ipv4=192.0.2.0\n", 1, "network or broadcast"),
            ("a p ipv4=hello\n", 1, "not an IPv4 address"),
            ("a p ipv4=pool ipv4=none\n", 1, "ipv4 given twice"),
            ("a p\n#\nb q\na r\n", 4, "first on line 1"),
            (
                "a p ipv4=192.0.2.9\nb p ipv4=192.0.2.9\n",
                2,
                "fixed address of line 1",
            ),
            ("a p prefix=2001:db8::\n", 1, "not ADDRESS/LEN"),
            ("a p prefix=2001:db8::/96\n", 1, "/32 to /64"),
            ("a p prefix=2001:db9::/48\n", 1, "2001:db8::/32"),
            ("a p prefix=2001:db8::1/64\n", 1, "host bits"),
            (
                "a p prefix=2001:db8:1::/48\nb p prefix=2001:db8:1:100::/56\n",
                2,
                "overlaps 2001:db8:1::/48 of line 1",
            ),
        ];
        for (text, line, what) in cases {
            let e = err(text);
            assert_eq!(e.line, *line, "{text:?}: {e}");
            assert!(e.message.contains(what), "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("line {line}: ")));
        }
        let e = SubscriberTable::parse(b"a p\n\xff\xfe p\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("not UTF-8"), "{e}");
    }

    #[test]
    fn a_fixed_address_equal_to_the_gateway_is_refused_with_its_line() {
        let t = SubscriberTable::parse(b"a p\nb p ipv4=198.51.100.1\n").unwrap();
        let e = t.check_gateway(Ipv4Addr::new(198, 51, 100, 1)).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("\"b\""), "{e}");
        assert!(t.check_gateway(Ipv4Addr::new(198, 51, 100, 2)).is_ok());
    }

    #[test]
    fn credentials_become_a_pool_table() {
        let t = SubscriberTable::from_credentials(&[
            Credential::new("u", "1"),
            Credential::new("v", "2"),
            Credential::new("u", "3"),
        ]);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get("u").unwrap().password, "1");
        assert_eq!(t.credentials().len(), 2);
    }

    #[test]
    fn never_panics_on_any_bytes() {
        let mut rng = crate::util::Rng::new(7);
        let alphabet = b"ab =/#:.\n\t0129ipv4prefixnonepool\xff\x80db8";
        for _ in 0..20_000 {
            let n = (rng.next_u32() % 80) as usize;
            let bytes: Vec<u8> = (0..n)
                .map(|_| alphabet[(rng.next_u32() as usize) % alphabet.len()])
                .collect();
            let _ = SubscriberTable::parse(&bytes);
        }
    }
}
