//! A stateful DHCPv6 server (RFC 8415 §18.3) for the ISP side of a home-gateway test: it
//! gives each client an address (IA_NA) and a delegated prefix (IA_PD) from pools in the
//! documentation range, and on request the DNS servers (RFC 3646) and the AFTR's name (RFC
//! 6334), which is what a stock DS-Lite gateway needs to bring its WAN up without static
//! configuration.
//!
//! Sans-I/O at the message level: [`Dhcpv6Server::handle`] takes a client message (the UDP
//! payload) and the time, and returns the reply to send, if any. The UDP/IPv6/Ethernet framing
//! is [`crate::provision`]'s. Bindings expire `valid` seconds after they were last granted
//! ([`Dhcpv6Server::poll`]). Nothing here is random: the server DUID comes from the MAC, and
//! the lowest free address/prefix is given, so a run under a simulated clock is reproducible.
//!
//! Deliberate simplifications, each harmless for a test link with one server: no relay
//! messages, no Reconfigure, no authentication; an Advertise does not reserve what it offers
//! (the Request gets the lowest free one then); a Decline frees the address like a Release.

use core::net::Ipv6Addr;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use wire::dhcpv6::{
    self, msg, opt, parse_oro, status, Dhcpv6Packet, IaAddrRepr, IaRepr, OptionWriter,
};
use wire::ethernet::MacAddr;
use wire::map_rule::{MapRule, PortParams, DEFAULT_PSID_OFFSET};
use wire::s46::{self, S46Rule};
use wire::units::Nanos;

use crate::util::{add, Counter};

/// The documentation prefix (RFC 3849) every pool must lie in (DESIGN.md §6).
pub const DOCUMENTATION_V6: (Ipv6Addr, u8) = (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32);

/// Whether `a` lies in `net/len`.
pub fn in_prefix(a: Ipv6Addr, net: Ipv6Addr, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    };
    u128::from(a) & mask == u128::from(net) & mask
}

/// Addresses `first`, `first + 1`, … (`size` of them) for IA_NA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPool {
    pub first: Ipv6Addr,
    pub size: u32,
}

impl AddressPool {
    fn get(&self, i: u32) -> Ipv6Addr {
        Ipv6Addr::from(u128::from(self.first).wrapping_add(u128::from(i)))
    }

    fn contains(&self, a: Ipv6Addr) -> bool {
        let (f, a) = (u128::from(self.first), u128::from(a));
        a >= f && a - f < u128::from(self.size)
    }
}

/// Prefixes of length `delegated_len` carved out of `base/base_len`, in order, for IA_PD
/// (at most `size`, and never more than the base holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixPool {
    pub base: Ipv6Addr,
    pub base_len: u8,
    pub delegated_len: u8,
    pub size: u32,
}

impl PrefixPool {
    /// How many prefixes the pool hands out.
    pub fn capacity(&self) -> u32 {
        let bits = u32::from(self.delegated_len.saturating_sub(self.base_len));
        let fits = if bits >= 32 { u32::MAX } else { 1u32 << bits };
        self.size.min(fits)
    }

    fn get(&self, i: u32) -> Ipv6Addr {
        let shift = 128 - u32::from(self.delegated_len);
        let off = if shift >= 128 {
            0
        } else {
            u128::from(i) << shift
        };
        Ipv6Addr::from(u128::from(self.base) | off)
    }
}

/// What the server hands out and says.
#[derive(Debug, Clone)]
pub struct Dhcpv6Config {
    /// Our DUID (Server Identifier). [`Dhcpv6Config::new`] makes a DUID-LL from the MAC.
    pub server_duid: Vec<u8>,
    /// IA_NA addresses; `None` answers every IA_NA with NoAddrsAvail.
    pub addresses: Option<AddressPool>,
    /// IA_PD prefixes; `None` answers every IA_PD with NoPrefixAvail.
    pub prefixes: Option<PrefixPool>,
    /// DNS Recursive Name Servers (option 23), sent when the client asks in its ORO.
    pub dns: Vec<Ipv6Addr>,
    /// AFTR-Name (option 64), sent when the client asks in its ORO (RFC 6334 §3).
    pub aftr_name: Option<String>,
    /// The MAP-E rule and BR (OPTION_S46_CONT_MAPE, 94), sent when the client asks in its
    /// ORO (RFC 7598 §5): a MAP-E CE takes its shared IPv4 address and port set from the
    /// delegated prefix through this rule, so the rule must cover every prefix of the pool.
    pub mape: Option<MapeProvision>,
    /// Lifetimes of what is granted, seconds; T1/T2 tell the client when to Renew/Rebind.
    pub preferred: u32,
    pub valid: u32,
    pub t1: u32,
    pub t2: u32,
    /// Answer a Solicit carrying Rapid Commit with a committed Reply (RFC 8415 §18.3.1).
    pub rapid_commit: bool,
    /// Preference option in Advertise (255: the client takes this server at once).
    pub preference: u8,
}

impl Dhcpv6Config {
    pub fn new(mac: MacAddr) -> Dhcpv6Config {
        let mut duid = vec![0, 3, 0, 1];
        duid.extend(mac.0);
        Dhcpv6Config {
            server_duid: duid,
            addresses: None,
            prefixes: None,
            dns: Vec::new(),
            aftr_name: None,
            mape: None,
            preferred: 3600,
            valid: 7200,
            t1: 1800,
            t2: 2880,
            rapid_commit: true,
            preference: 255,
        }
    }

    /// Refuses what cannot work or would leave the lab's address space: pools outside
    /// 2001:db8::/32 or of size 0, a delegated length not longer than the base (or above 128),
    /// an AFTR name that is not a valid DNS name, T1 > T2 or preferred > valid.
    pub fn check(&self) -> Result<(), Dhcpv6ConfigError> {
        use Dhcpv6ConfigError as E;
        let (doc, doc_len) = DOCUMENTATION_V6;
        if let Some(p) = &self.addresses {
            let last = p.get(p.size.saturating_sub(1));
            if p.size == 0 {
                return Err(E::EmptyAddressPool);
            }
            if !in_prefix(p.first, doc, doc_len) || !in_prefix(last, doc, doc_len) {
                return Err(E::AddressPoolOutside {
                    first: p.first,
                    last,
                });
            }
        }
        if let Some(p) = &self.prefixes {
            if p.base_len < doc_len || !in_prefix(p.base, doc, doc_len) {
                return Err(E::PrefixPoolOutside {
                    base: p.base,
                    base_len: p.base_len,
                });
            }
            if p.delegated_len <= p.base_len || p.delegated_len > 128 {
                return Err(E::DelegatedLength {
                    delegated_len: p.delegated_len,
                    base_len: p.base_len,
                });
            }
            if u128::from(p.base) & !(u128::MAX << (128 - u32::from(p.base_len))) != 0 {
                return Err(E::HostBits {
                    base: p.base,
                    base_len: p.base_len,
                });
            }
            if p.capacity() == 0 {
                return Err(E::EmptyPrefixPool);
            }
        }
        if let Some(n) = &self.aftr_name {
            let mut b = [0u8; dhcpv6::MAX_NAME_LEN];
            dhcpv6::encode_name(n, &mut b).map_err(|e| E::AftrName {
                name: n.clone(),
                reason: e,
            })?;
        }
        if let Some(m) = &self.mape {
            m.check(self.prefixes.as_ref()).map_err(E::Mape)?;
        }
        if self.t1 > self.t2 || self.preferred > self.valid {
            return Err(E::Lifetimes);
        }
        Ok(())
    }
}

/// Why [`Dhcpv6Config::check`] refused a configuration; the message says what would work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dhcpv6ConfigError {
    /// An address pool of size 0.
    EmptyAddressPool,
    /// The address pool leaves 2001:db8::/32.
    AddressPoolOutside { first: Ipv6Addr, last: Ipv6Addr },
    /// The prefix pool is not inside 2001:db8::/32.
    PrefixPoolOutside { base: Ipv6Addr, base_len: u8 },
    /// The delegated length is not longer than the pool's, or above 128.
    DelegatedLength { delegated_len: u8, base_len: u8 },
    /// The prefix pool's base has bits set past its length.
    HostBits { base: Ipv6Addr, base_len: u8 },
    /// A prefix pool that delegates nothing.
    EmptyPrefixPool,
    /// The AFTR name (option 64) cannot be encoded as a DNS name.
    AftrName { name: String, reason: wire::Error },
    /// T1 > T2 or preferred > valid.
    Lifetimes,
    /// The MAP-E rule (option 94) cannot map the prefixes the pool delegates
    /// ([`MapeProvision::check`] says why).
    Mape(String),
}

impl fmt::Display for Dhcpv6ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Dhcpv6ConfigError as E;
        match self {
            E::EmptyAddressPool => f.write_str("the address pool is empty"),
            E::AddressPoolOutside { first, last } => {
                write!(f, "the address pool {first}..{last} leaves 2001:db8::/32")
            }
            E::PrefixPoolOutside { base, base_len } => write!(
                f,
                "the prefix pool {base}/{base_len} is not inside 2001:db8::/32"
            ),
            E::DelegatedLength {
                delegated_len,
                base_len,
            } => write!(
                f,
                "a delegated /{delegated_len} does not fit in the pool /{base_len} (it must be longer, at most /128)"
            ),
            E::HostBits { base, base_len } => {
                write!(f, "{base}/{base_len} has bits set past its length")
            }
            E::EmptyPrefixPool => f.write_str("the prefix pool is empty"),
            E::AftrName { name, reason } => write!(f, "AFTR name {name:?}: {reason}"),
            E::Lifetimes => f.write_str("lifetimes must satisfy T1 <= T2 and preferred <= valid"),
            E::Mape(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Dhcpv6ConfigError {}

/// What OPTION_S46_CONT_MAPE carries: one Basic Mapping Rule (its F flag set when it is also
/// a Forwarding Mapping Rule) and the BR's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapeProvision {
    pub rule: S46Rule,
    pub br: Ipv6Addr,
}

impl MapeProvision {
    /// The option for `rule` and `br`; an S46_PORTPARAMS goes inside the rule only when the
    /// rule's offset differs from RFC 7597's default 6 (with a PSID to place) or its PSID is
    /// provisioned beside the EA bits: otherwise a CE derives the same port set without it.
    pub fn new(rule: &MapRule, fmr: bool, br: Ipv6Addr) -> MapeProvision {
        let (ipv6_prefix, prefix6_len) = rule.ipv6_prefix();
        let (ipv4_prefix, prefix4_len) = rule.ipv4_prefix();
        let needs_params = rule.explicit_psid().is_some()
            || (rule.psid_len() > 0 && rule.psid_offset() != DEFAULT_PSID_OFFSET);
        let port_params = needs_params.then(|| PortParams {
            offset: rule.psid_offset(),
            psid_len: rule.psid_len(),
            psid: rule.explicit_psid().unwrap_or(0),
        });
        MapeProvision {
            rule: S46Rule {
                fmr,
                ea_len: rule.ea_len(),
                prefix4_len,
                ipv4_prefix,
                prefix6_len,
                ipv6_prefix,
                port_params,
            },
            br,
        }
    }

    /// Refuses a rule that cannot map the pool's prefixes: every delegated prefix must lie in
    /// the rule's IPv6 prefix and be at least as long as the rule prefix plus the EA bits
    /// (and at most 64 bits), else the CE has no address or port set to derive.
    pub fn check(&self, pool: Option<&PrefixPool>) -> Result<(), String> {
        let rule = self
            .rule
            .map_rule()
            .map_err(|e| format!("the MAP-E rule: {e}"))?;
        let Some(p) = pool else {
            return Err(
                "the MAP-E rule needs delegated prefixes (IA_PD) to map: no prefix pool".into(),
            );
        };
        let (r6, r6_len) = rule.ipv6_prefix();
        if p.base_len < r6_len || !in_prefix(p.base, r6, r6_len) {
            return Err(format!(
                "the prefix pool {}/{} is not inside the MAP-E rule's IPv6 prefix {r6}/{r6_len}",
                p.base, p.base_len
            ));
        }
        let need = rule.end_user_len();
        if p.delegated_len < need || p.delegated_len > wire::map_rule::MAX_END_USER_PREFIX_LEN {
            return Err(format!(
                "a delegated /{} cannot carry the MAP-E rule's EA bits: the rule prefix /{r6_len} plus {} EA bits needs a delegated length of /{need} to /{}",
                p.delegated_len,
                rule.ea_len(),
                wire::map_rule::MAX_END_USER_PREFIX_LEN
            ));
        }
        Ok(())
    }
}

/// IA_NA or IA_PD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IaKind {
    Na,
    Pd,
}

/// What a binding holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leased {
    Address(Ipv6Addr),
    Prefix(Ipv6Addr, u8),
}

/// What the server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dhcpv6Event {
    /// A binding was made (Request, or Solicit with Rapid Commit).
    Bound {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
    /// A Renew or Rebind extended it.
    Renewed {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
    /// Released or declined by the client.
    Released {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
    /// Its valid lifetime ran out.
    Expired {
        client: Vec<u8>,
        iaid: u32,
        leased: Leased,
    },
}

/// Messages not answered, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dhcpv6Drop {
    /// Shorter than the header or with broken option framing.
    Malformed,
    /// A message type a server does not take from a client (Advertise, Reply, relay, …).
    UnexpectedType,
    /// No Client Identifier where one is required.
    NoClientId,
    /// A Server Identifier in a Solicit/Confirm/Rebind, where it is forbidden.
    UnexpectedServerId,
    /// A Request/Renew/Release/Decline for another server (or without a Server Identifier).
    NotForUs,
}

/// Counters of a [`Dhcpv6Server`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dhcpv6Stats {
    /// Messages received by type.
    pub rx: Counter<u8>,
    /// Messages sent by type.
    pub tx: Counter<u8>,
    pub dropped: Counter<Dhcpv6Drop>,
    /// IA_NA/IA_PD answered NoAddrsAvail/NoPrefixAvail (pool empty or exhausted).
    pub no_addrs: u64,
    pub no_prefix: u64,
    pub bindings_now: u64,
    pub expired: u64,
}

type Key = (Vec<u8>, IaKind, u32);

/// Where a binding's address or prefix comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The pool's `index`-th address or prefix.
    Pool(u32),
    /// A prefix fixed for this client by its owner (a subscriber table's `prefix=`),
    /// outside the pool's bookkeeping.
    Fixed(Ipv6Addr, u8),
}

#[derive(Debug, Clone, Copy)]
struct Binding {
    slot: Slot,
    expires: Nanos,
}

/// One IA of a client message.
struct IaReq {
    kind: IaKind,
    iaid: u32,
    /// Addresses the client listed in an IA_NA (checked by Confirm).
    addrs: Vec<Ipv6Addr>,
}

/// A client message, parsed.
struct ClientMsg<'a> {
    kind: u8,
    xid: u32,
    client_id: Option<&'a [u8]>,
    server_id: Option<&'a [u8]>,
    ias: Vec<IaReq>,
    oro: BTreeSet<u16>,
    rapid_commit: bool,
}

fn parse_client(b: &[u8]) -> Option<ClientMsg<'_>> {
    let p = Dhcpv6Packet::new_checked(b).ok()?;
    let mut m = ClientMsg {
        kind: p.msg_type(),
        xid: p.transaction_id(),
        client_id: None,
        server_id: None,
        ias: Vec::new(),
        oro: BTreeSet::new(),
        rapid_commit: false,
    };
    for o in p.options() {
        let (code, v) = o.ok()?;
        match code {
            opt::CLIENTID => m.client_id = m.client_id.or(Some(v)),
            opt::SERVERID => m.server_id = m.server_id.or(Some(v)),
            opt::IA_NA | opt::IA_PD => {
                let ia = IaRepr::parse(v).ok()?;
                let mut addrs = Vec::new();
                for io in ia.options() {
                    let (c, iv) = io.ok()?;
                    if c == opt::IAADDR {
                        addrs.push(IaAddrRepr::parse(iv).ok()?.addr);
                    }
                }
                let kind = if code == opt::IA_NA {
                    IaKind::Na
                } else {
                    IaKind::Pd
                };
                m.ias.push(IaReq {
                    kind,
                    iaid: ia.iaid,
                    addrs,
                });
            }
            opt::ORO => m.oro.extend(parse_oro(v)),
            opt::RAPID_COMMIT => m.rapid_commit = true,
            _ => {}
        }
    }
    Some(m)
}

/// How an IA is answered.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Grant {
    /// Offer without committing (Advertise).
    Offer,
    /// Bind (Request, Solicit + Rapid Commit).
    Bind,
    /// Extend an existing binding only (Renew, Rebind).
    Extend,
}

/// The stateful DHCPv6 server.
#[derive(Debug)]
pub struct Dhcpv6Server {
    cfg: Dhcpv6Config,
    bindings: BTreeMap<Key, Binding>,
    used: BTreeMap<(IaKind, u32), Key>,
    /// Pool prefixes never delegated from the pool: they overlap a fixed prefix
    /// ([`Dhcpv6Server::reserve_prefix`]).
    reserved_pd: BTreeSet<u32>,
    events: Vec<Dhcpv6Event>,
    pub stats: Dhcpv6Stats,
}

fn secs(s: u32) -> Nanos {
    Nanos(u64::from(s) * 1_000_000_000)
}

impl Dhcpv6Server {
    pub fn new(cfg: Dhcpv6Config) -> Dhcpv6Server {
        Dhcpv6Server {
            cfg,
            bindings: BTreeMap::new(),
            used: BTreeMap::new(),
            reserved_pd: BTreeSet::new(),
            events: Vec::new(),
            stats: Dhcpv6Stats::default(),
        }
    }

    /// Never delegates from the pool a prefix that overlaps `prefix/len`: it belongs to
    /// someone who gets it as a fixed prefix ([`Dhcpv6Server::handle_with_prefix`]).
    pub fn reserve_prefix(&mut self, prefix: Ipv6Addr, len: u8) {
        let Some(p) = self.cfg.prefixes else {
            return;
        };
        let cap = p.capacity();
        let (dl, bl) = (u32::from(p.delegated_len), u32::from(p.base_len));
        let len = u32::from(len.min(128));
        if len < bl && !in_prefix(p.base, prefix, len as u8) {
            return;
        }
        if len >= bl && !in_prefix(prefix, p.base, p.base_len) {
            return;
        }
        // The pool indices covered: the bits of `prefix` between the base and the delegated
        // length name the first; a fixed prefix shorter than the delegated one covers
        // 2^(dl - len) of them.
        let index_bits = dl - bl;
        let idx = |a: Ipv6Addr| -> u32 {
            if index_bits == 0 {
                return 0;
            }
            let shifted = u128::from(a) >> (128 - dl);
            (shifted & ((1u128 << index_bits) - 1)) as u32
        };
        let (first, count) = if len <= bl {
            (0u64, u64::from(cap))
        } else if len >= dl {
            (u64::from(idx(prefix)), 1)
        } else {
            (u64::from(idx(prefix)), 1u64 << (dl - len).min(40))
        };
        let end = (first + count).min(u64::from(cap));
        for i in first..end {
            self.reserved_pd.insert(i as u32);
        }
    }

    pub fn config(&self) -> &Dhcpv6Config {
        &self.cfg
    }

    pub fn take_events(&mut self) -> Vec<Dhcpv6Event> {
        std::mem::take(&mut self.events)
    }

    /// What `client`'s IA `iaid` of `kind` holds now.
    pub fn binding(&self, client: &[u8], kind: IaKind, iaid: u32) -> Option<Leased> {
        let b = self.bindings.get(&(client.to_vec(), kind, iaid))?;
        self.slot_leased(kind, b.slot)
    }

    fn slot_leased(&self, kind: IaKind, slot: Slot) -> Option<Leased> {
        match slot {
            Slot::Pool(index) => self.leased(kind, index),
            Slot::Fixed(p, l) => Some(Leased::Prefix(p, l)),
        }
    }

    fn leased(&self, kind: IaKind, index: u32) -> Option<Leased> {
        match kind {
            IaKind::Na => self.cfg.addresses.map(|p| Leased::Address(p.get(index))),
            IaKind::Pd => self
                .cfg
                .prefixes
                .map(|p| Leased::Prefix(p.get(index), p.delegated_len)),
        }
    }

    fn capacity(&self, kind: IaKind) -> u32 {
        match kind {
            IaKind::Na => self.cfg.addresses.map_or(0, |p| p.size),
            IaKind::Pd => self.cfg.prefixes.map_or(0, |p| p.capacity()),
        }
    }

    fn lowest_free(&self, kind: IaKind) -> Option<u32> {
        let cap = self.capacity(kind);
        // The used indices of this kind in order; the first gap is the lowest free one.
        // Reserved prefixes (IA_PD only) are skipped as if used.
        let mut want = 0u32;
        let skip = |w: &mut u32| {
            while kind == IaKind::Pd && self.reserved_pd.contains(w) {
                *w += 1;
            }
        };
        skip(&mut want);
        for &(k, i) in self
            .used
            .range((kind, want)..=(kind, u32::MAX))
            .map(|(k, _)| k)
        {
            debug_assert_eq!(k, kind);
            if i < want {
                continue; // bound before it was reserved
            }
            if i != want {
                break;
            }
            want += 1;
            skip(&mut want);
        }
        (want < cap).then_some(want)
    }

    /// When the next binding expires.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.bindings.values().map(|b| b.expires).min()
    }

    /// Ends bindings whose valid lifetime has run out.
    pub fn poll(&mut self, now: Nanos) {
        let due: Vec<Key> = self
            .bindings
            .iter()
            .filter(|(_, b)| b.expires <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in due {
            if let Some(leased) = self.unbind(&k) {
                self.stats.expired += 1;
                self.events.push(Dhcpv6Event::Expired {
                    client: k.0,
                    iaid: k.2,
                    leased,
                });
            }
        }
    }

    fn unbind(&mut self, k: &Key) -> Option<Leased> {
        let b = self.bindings.remove(k)?;
        if let Slot::Pool(index) = b.slot {
            self.used.remove(&(k.1, index));
        }
        self.stats.bindings_now = self.bindings.len() as u64;
        self.slot_leased(k.1, b.slot)
    }

    /// What IA `k` gets: its binding (extended or made when `grant` says so), or None.
    /// A `fixed` prefix (IA_PD only) replaces the pool: the IA gets exactly that prefix, and
    /// a binding it held from the pool is given up for it. Without one, a fixed prefix the IA
    /// held is given up too (the same device logged in as another subscriber, who has none):
    /// it belongs to whom it was fixed for.
    fn grant(
        &mut self,
        now: Nanos,
        k: &Key,
        grant: Grant,
        fixed: Option<(Ipv6Addr, u8)>,
    ) -> Option<Leased> {
        let expires = add(now, secs(self.cfg.valid));
        let fixed = fixed.filter(|_| k.1 == IaKind::Pd);
        let stale = self.bindings.get(k).is_some_and(|b| match (fixed, b.slot) {
            (Some((p, l)), slot) => slot != Slot::Fixed(p, l),
            (None, Slot::Fixed(..)) => true,
            (None, Slot::Pool(_)) => false,
        }) && grant != Grant::Offer;
        if stale {
            self.unbind(k);
        }
        if let Some(b) = self.bindings.get_mut(k) {
            let slot = b.slot;
            if grant != Grant::Offer {
                b.expires = expires;
            }
            let leased = self.slot_leased(k.1, slot)?;
            if grant != Grant::Offer {
                let e = (k.0.clone(), k.2, leased);
                self.events.push(if grant == Grant::Extend {
                    Dhcpv6Event::Renewed {
                        client: e.0,
                        iaid: e.1,
                        leased: e.2,
                    }
                } else {
                    Dhcpv6Event::Bound {
                        client: e.0,
                        iaid: e.1,
                        leased: e.2,
                    }
                });
            }
            return Some(leased);
        }
        if grant == Grant::Extend {
            return None;
        }
        let slot = match fixed {
            Some((p, l)) => Slot::Fixed(p, l),
            None => Slot::Pool(self.lowest_free(k.1)?),
        };
        let leased = self.slot_leased(k.1, slot)?;
        if grant == Grant::Bind {
            self.bindings.insert(k.clone(), Binding { slot, expires });
            if let Slot::Pool(index) = slot {
                self.used.insert((k.1, index), k.clone());
            }
            self.stats.bindings_now = self.bindings.len() as u64;
            self.events.push(Dhcpv6Event::Bound {
                client: k.0.clone(),
                iaid: k.2,
                leased,
            });
        }
        Some(leased)
    }

    /// Handles one client message (a UDP payload to port 547); the reply to send back to the
    /// client's port 546, if any.
    pub fn handle(&mut self, now: Nanos, bytes: &[u8]) -> Option<Vec<u8>> {
        self.handle_with_prefix(now, bytes, None)
    }

    /// As [`handle`](Self::handle), for a client whose delegated prefix is fixed by who it
    /// is (a PPPoE subscriber's `prefix=`): its IA_PD gets `fixed` instead of a pool prefix
    /// (and Renew/Rebind extend that). `None` is [`handle`](Self::handle).
    pub fn handle_with_prefix(
        &mut self,
        now: Nanos,
        bytes: &[u8],
        fixed: Option<(Ipv6Addr, u8)>,
    ) -> Option<Vec<u8>> {
        let Some(m) = parse_client(bytes) else {
            self.stats.dropped.add(Dhcpv6Drop::Malformed);
            return None;
        };
        self.stats.rx.add(m.kind);
        let ours = m.server_id == Some(&self.cfg.server_duid[..]);
        let drop = match m.kind {
            msg::SOLICIT | msg::CONFIRM | msg::REBIND if m.server_id.is_some() => {
                Some(Dhcpv6Drop::UnexpectedServerId)
            }
            msg::SOLICIT | msg::CONFIRM | msg::REBIND => None,
            msg::REQUEST | msg::RENEW | msg::RELEASE | msg::DECLINE if !ours => {
                Some(Dhcpv6Drop::NotForUs)
            }
            msg::REQUEST | msg::RENEW | msg::RELEASE | msg::DECLINE => None,
            msg::INFORMATION_REQUEST if m.server_id.is_some() && !ours => {
                Some(Dhcpv6Drop::NotForUs)
            }
            msg::INFORMATION_REQUEST => None,
            _ => Some(Dhcpv6Drop::UnexpectedType),
        };
        let drop = drop.or_else(|| {
            (m.client_id.is_none() && m.kind != msg::INFORMATION_REQUEST)
                .then_some(Dhcpv6Drop::NoClientId)
        });
        if let Some(d) = drop {
            self.stats.dropped.add(d);
            return None;
        }
        let reply = self.reply(now, &m, fixed);
        self.stats.tx.add(reply.first().copied().unwrap_or(0));
        Some(reply)
    }

    fn reply(&mut self, now: Nanos, m: &ClientMsg<'_>, fixed: Option<(Ipv6Addr, u8)>) -> Vec<u8> {
        let mut buf = vec![0u8; 1400];
        let rapid = m.kind == msg::SOLICIT && m.rapid_commit && self.cfg.rapid_commit;
        let kind = if m.kind == msg::SOLICIT && !rapid {
            msg::ADVERTISE
        } else {
            msg::REPLY
        };
        let mut p = Dhcpv6Packet::new_unchecked(&mut buf[..]);
        p.set_msg_type(kind);
        p.set_transaction_id(m.xid);
        let mut w = OptionWriter::new(&mut buf, dhcpv6::HEADER_LEN);
        // Every write below fits 1400 bytes except with absurd numbers of IAs; those are cut
        // at the buffer's end (the writer refuses, the message stays well formed up to there).
        let _ = self.write_reply(now, m, rapid, fixed, &mut w);
        let n = w.len();
        buf.truncate(n);
        buf
    }

    fn write_reply(
        &mut self,
        now: Nanos,
        m: &ClientMsg<'_>,
        rapid: bool,
        fixed: Option<(Ipv6Addr, u8)>,
        w: &mut OptionWriter<'_>,
    ) -> wire::Result<()> {
        w.put(opt::SERVERID, &self.cfg.server_duid.clone())?;
        if let Some(c) = m.client_id {
            w.put(opt::CLIENTID, c)?;
        }
        if rapid {
            w.put(opt::RAPID_COMMIT, &[])?;
        }
        if m.kind == msg::SOLICIT && !rapid {
            w.put(opt::PREFERENCE, &[self.cfg.preference])?;
        }
        let client = m.client_id.unwrap_or(&[]).to_vec();
        match m.kind {
            msg::SOLICIT | msg::REQUEST | msg::RENEW | msg::REBIND => {
                let grant = match m.kind {
                    msg::SOLICIT if !rapid => Grant::Offer,
                    msg::SOLICIT | msg::REQUEST => Grant::Bind,
                    _ => Grant::Extend,
                };
                for ia in &m.ias {
                    let k = (client.clone(), ia.kind, ia.iaid);
                    let got = self.grant(now, &k, grant, fixed);
                    self.write_ia(w, ia, got, grant)?;
                }
            }
            msg::RELEASE | msg::DECLINE => {
                for ia in &m.ias {
                    let k = (client.clone(), ia.kind, ia.iaid);
                    if let Some(leased) = self.unbind(&k) {
                        self.events.push(Dhcpv6Event::Released {
                            client: client.clone(),
                            iaid: ia.iaid,
                            leased,
                        });
                    }
                }
                w.status(status::SUCCESS, "released")?;
            }
            msg::CONFIRM => {
                let on_link = m
                    .ias
                    .iter()
                    .flat_map(|ia| &ia.addrs)
                    .all(|a| self.cfg.addresses.is_some_and(|p| p.contains(*a)));
                if on_link {
                    w.status(status::SUCCESS, "on link")?;
                } else {
                    w.status(status::NOT_ON_LINK, "not on this link")?;
                }
            }
            _ => {}
        }
        if m.oro.contains(&opt::DNS_SERVERS) && !self.cfg.dns.is_empty() {
            w.addresses(opt::DNS_SERVERS, &self.cfg.dns)?;
        }
        if m.oro.contains(&opt::AFTR_NAME) {
            if let Some(n) = &self.cfg.aftr_name {
                w.name(opt::AFTR_NAME, n)?;
            }
        }
        if m.oro.contains(&s46::opt::S46_CONT_MAPE) {
            if let Some(mp) = &self.cfg.mape {
                w.s46_cont_mape(&[mp.rule], &[mp.br])?;
            }
        }
        Ok(())
    }

    fn write_ia(
        &mut self,
        w: &mut OptionWriter<'_>,
        ia: &IaReq,
        got: Option<Leased>,
        grant: Grant,
    ) -> wire::Result<()> {
        let code = match ia.kind {
            IaKind::Na => opt::IA_NA,
            IaKind::Pd => opt::IA_PD,
        };
        let c = &self.cfg;
        let (t1, t2) = if got.is_some() { (c.t1, c.t2) } else { (0, 0) };
        let open = w.begin_ia(code, ia.iaid, t1, t2)?;
        match got {
            Some(Leased::Address(a)) => w.ia_addr(a, c.preferred, c.valid)?,
            Some(Leased::Prefix(p, l)) => w.ia_prefix(p, l, c.preferred, c.valid)?,
            None if grant == Grant::Extend => w.status(status::NO_BINDING, "no binding")?,
            None if ia.kind == IaKind::Na => {
                self.stats.no_addrs += 1;
                w.status(status::NO_ADDRS_AVAIL, "no addresses available")?
            }
            None => {
                self.stats.no_prefix += 1;
                w.status(status::NO_PREFIX_AVAIL, "no prefixes available")?
            }
        }
        w.end(open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    const SERVER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0x0a]);
    const CLIENT_DUID: [u8; 10] = [0, 3, 0, 1, 2, 0, 0, 0, 0, 0x0b];

    fn config() -> Dhcpv6Config {
        let mut c = Dhcpv6Config::new(SERVER_MAC);
        c.addresses = Some(AddressPool {
            first: a("2001:db8:c::100"),
            size: 2,
        });
        c.prefixes = Some(PrefixPool {
            base: a("2001:db8:100::"),
            base_len: 48,
            delegated_len: 56,
            size: 2,
        });
        c.dns = vec![a("2001:db8:53::1")];
        c.aftr_name = Some("aftr.example.net".into());
        c
    }

    // Solicit (xid 0x0a0b0c) with Client ID, Rapid Commit, IA_NA iaid 1, IA_PD iaid 2,
    // ORO (23, 64) and Elapsed Time 0, written out by hand from RFC 8415 §16.2.
    static SOLICIT_RC: &[u8] = &[
        0x01, 0x0a, 0x0b, 0x0c, // Solicit, xid
        0x00, 0x01, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00,
        0x0e, 0x00, 0x00, // Rapid Commit
        0x00, 0x03, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, // IA_NA
        0x00, 0x19, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, // IA_PD
        0x00, 0x06, 0x00, 0x04, 0x00, 0x17, 0x00, 0x40, // ORO
        0x00, 0x08, 0x00, 0x02, 0x00, 0x00, // Elapsed Time
    ];

    // The Reply it gets: Server ID (DUID-LL of 02:00:00:00:00:0a), Client ID, Rapid Commit,
    // IA_NA with 2001:db8:c::100, IA_PD with 2001:db8:100::/56, DNS, AFTR-Name.
    static REPLY_RC: &[u8] = &[
        0x07, 0x0a, 0x0b, 0x0c, // Reply, xid
        0x00, 0x02, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00,
        0x01, 0x00, 0x0a, 0x00, 0x03, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x00, 0x0e,
        0x00, 0x00, // Rapid Commit
        0x00, 0x03, 0x00, 0x28, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x07, 0x08, 0x00, 0x00, 0x0b,
        0x40, 0x00, 0x05, 0x00, 0x18, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x1c, 0x20, 0x00,
        0x19, 0x00, 0x29, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x07, 0x08, 0x00, 0x00, 0x0b, 0x40,
        0x00, 0x1a, 0x00, 0x19, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x00, 0x1c, 0x20, 0x38, 0x20, 0x01,
        0x0d, 0xb8, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x17, 0x00, 0x10, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x53, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x01, // DNS
        0x00, 0x40, 0x00, 0x12, 0x04, b'a', b'f', b't', b'r', 0x07, b'e', b'x', b'a', b'm', b'p',
        b'l', b'e', 0x03, b'n', b'e', b't', 0x00,
    ];

    #[test]
    fn rapid_commit_solicit_gets_the_exact_reply() {
        let mut s = Dhcpv6Server::new(config());
        let r = s.handle(Nanos(0), SOLICIT_RC).unwrap();
        assert_eq!(&r[..], REPLY_RC);
        assert_eq!(
            s.binding(&CLIENT_DUID, IaKind::Pd, 2),
            Some(Leased::Prefix(a("2001:db8:100::"), 56))
        );
        assert_eq!(s.take_events().len(), 2);
        assert_eq!(s.stats.bindings_now, 2);
    }

    /// A client message of `kind` with Client ID `duid`, an optional Server ID, and IAs.
    fn client_msg(
        kind: u8,
        duid: &[u8],
        server: Option<&[u8]>,
        ias: &[(u16, u32)],
        oro: &[u16],
    ) -> Vec<u8> {
        let mut b = vec![0u8; 500];
        b[0] = kind;
        b[1..4].copy_from_slice(&[1, 2, 3]);
        let mut w = OptionWriter::new(&mut b, 4);
        w.put(opt::CLIENTID, duid).unwrap();
        if let Some(s) = server {
            w.put(opt::SERVERID, s).unwrap();
        }
        for &(code, iaid) in ias {
            let o = w.begin_ia(code, iaid, 0, 0).unwrap();
            w.end(o).unwrap();
        }
        let mut o = Vec::new();
        for c in oro {
            o.extend(c.to_be_bytes());
        }
        w.put(opt::ORO, &o).unwrap();
        let n = w.len();
        b.truncate(n);
        b
    }

    /// (ia code, iaid, what it holds or its status code).
    type IaSummary = (u16, u32, Result<Leased, u16>);

    /// (type, its IAs, the option codes present) of a reply.
    fn summary(r: &[u8]) -> (u8, Vec<IaSummary>, BTreeSet<u16>) {
        let p = Dhcpv6Packet::new_checked(r).unwrap();
        let mut ias = Vec::new();
        let mut codes = BTreeSet::new();
        for o in p.options() {
            let (code, v) = o.unwrap();
            codes.insert(code);
            if code == opt::IA_NA || code == opt::IA_PD {
                let ia = IaRepr::parse(v).unwrap();
                let mut got = Err(u16::MAX);
                for io in ia.options() {
                    let (c, iv) = io.unwrap();
                    got = match c {
                        opt::IAADDR => Ok(Leased::Address(IaAddrRepr::parse(iv).unwrap().addr)),
                        opt::IAPREFIX => {
                            let x = wire::dhcpv6::IaPrefixRepr::parse(iv).unwrap();
                            Ok(Leased::Prefix(x.prefix, x.prefix_len))
                        }
                        opt::STATUS_CODE => Err(dhcpv6::parse_status(iv).unwrap().0),
                        _ => got,
                    };
                }
                ias.push((code, ia.iaid, got));
            }
        }
        (p.msg_type(), ias, codes)
    }

    #[test]
    fn four_message_exchange_renew_rebind_release() {
        let mut s = Dhcpv6Server::new(config());
        let sid = s.config().server_duid.clone();
        let ias = [(opt::IA_NA, 7), (opt::IA_PD, 8)];
        let adv = s
            .handle(
                Nanos(0),
                &client_msg(msg::SOLICIT, &CLIENT_DUID, None, &ias, &[23]),
            )
            .unwrap();
        let (t, got, codes) = summary(&adv);
        assert_eq!(t, msg::ADVERTISE);
        assert!(codes.contains(&opt::PREFERENCE) && codes.contains(&opt::DNS_SERVERS));
        assert!(!codes.contains(&opt::AFTR_NAME), "not asked for");
        assert_eq!(got[0].2, Ok(Leased::Address(a("2001:db8:c::100"))));
        assert_eq!(s.stats.bindings_now, 0, "an Advertise binds nothing");
        let rep = s
            .handle(
                Nanos(1),
                &client_msg(msg::REQUEST, &CLIENT_DUID, Some(&sid), &ias, &[64]),
            )
            .unwrap();
        let (t, got, codes) = summary(&rep);
        assert_eq!(t, msg::REPLY);
        assert!(codes.contains(&opt::AFTR_NAME));
        assert_eq!(got[1].2, Ok(Leased::Prefix(a("2001:db8:100::"), 56)));
        assert_eq!(s.stats.bindings_now, 2);
        // Renew at T1 extends; the deadline moves.
        let renew_at = Nanos(1_800_000_000_000);
        let rep = s
            .handle(
                renew_at,
                &client_msg(msg::RENEW, &CLIENT_DUID, Some(&sid), &ias, &[]),
            )
            .unwrap();
        assert_eq!(
            summary(&rep).1[0].2,
            Ok(Leased::Address(a("2001:db8:c::100")))
        );
        assert_eq!(s.next_deadline(), Some(add(renew_at, secs(7200))));
        // Rebind (no Server ID) of an unknown IA: NoBinding.
        let rep = s
            .handle(
                renew_at,
                &client_msg(msg::REBIND, &CLIENT_DUID, None, &[(opt::IA_NA, 99)], &[]),
            )
            .unwrap();
        assert_eq!(summary(&rep).1[0].2, Err(status::NO_BINDING));
        // Release frees both.
        let rep = s
            .handle(
                renew_at,
                &client_msg(msg::RELEASE, &CLIENT_DUID, Some(&sid), &ias, &[]),
            )
            .unwrap();
        assert!(summary(&rep).2.contains(&opt::STATUS_CODE));
        assert_eq!(s.stats.bindings_now, 0);
        let ev = s.take_events();
        assert!(matches!(
            ev.last(),
            Some(Dhcpv6Event::Released { iaid: 8, .. })
        ));
        assert_eq!(ev.len(), 6, "2 bound, 2 renewed, 2 released: {ev:?}");
    }

    /// A fixed prefix is delegated instead of the pool's, extended by Renew, given up on
    /// Release without touching the pool; a pool binding the client held is replaced by it;
    /// a reserved pool prefix is skipped; IA_NA is unaffected.
    #[test]
    fn a_fixed_prefix_replaces_the_pool_and_the_pool_skips_it() {
        let mut s = Dhcpv6Server::new(config());
        let sid = s.config().server_duid.clone();
        let fixed = Some((a("2001:db8:300::"), 48));
        let ias = [(opt::IA_NA, 1), (opt::IA_PD, 2)];
        let solicit = |duid: &[u8]| {
            let mut m = client_msg(msg::SOLICIT, duid, None, &ias, &[]);
            m.extend([0, 14, 0, 0]); // Rapid Commit
            m
        };
        let r = s
            .handle_with_prefix(Nanos(0), &solicit(&CLIENT_DUID), fixed)
            .unwrap();
        let (t, got, _) = summary(&r);
        assert_eq!(t, msg::REPLY);
        assert_eq!(got[0].2, Ok(Leased::Address(a("2001:db8:c::100"))));
        assert_eq!(got[1].2, Ok(Leased::Prefix(a("2001:db8:300::"), 48)));
        // The pool still holds both its prefixes for others.
        for (i, want) in ["2001:db8:100::", "2001:db8:100:100::"].iter().enumerate() {
            let duid = [0, 3, 0, 1, 2, 0, 0, 0, 2, i as u8];
            let r = s.handle(Nanos(0), &solicit(&duid)).unwrap();
            assert_eq!(summary(&r).1[1].2, Ok(Leased::Prefix(a(want), 56)));
        }
        // Renew extends the fixed prefix.
        let r = s
            .handle_with_prefix(
                Nanos(5),
                &client_msg(msg::RENEW, &CLIENT_DUID, Some(&sid), &ias, &[]),
                fixed,
            )
            .unwrap();
        assert_eq!(
            summary(&r).1[1].2,
            Ok(Leased::Prefix(a("2001:db8:300::"), 48))
        );
        // Released: the pool's bindings are untouched.
        s.handle_with_prefix(
            Nanos(6),
            &client_msg(msg::RELEASE, &CLIENT_DUID, Some(&sid), &ias, &[]),
            fixed,
        )
        .unwrap();
        assert_eq!(s.binding(&CLIENT_DUID, IaKind::Pd, 2), None);
        // Left: the other two clients' prefixes and the one address the 2-address pool had
        // left for them.
        assert_eq!(s.stats.bindings_now, 3);

        // A client that held a pool prefix and is now fixed gives the pool's up.
        let mut s = Dhcpv6Server::new(config());
        s.handle(Nanos(0), &solicit(&CLIENT_DUID)).unwrap();
        assert_eq!(
            s.binding(&CLIENT_DUID, IaKind::Pd, 2),
            Some(Leased::Prefix(a("2001:db8:100::"), 56))
        );
        s.handle_with_prefix(Nanos(1), &solicit(&CLIENT_DUID), fixed)
            .unwrap();
        assert_eq!(
            s.binding(&CLIENT_DUID, IaKind::Pd, 2),
            Some(Leased::Prefix(a("2001:db8:300::"), 48))
        );
        let r = s.handle(Nanos(1), &solicit(&[0, 3, 0, 1, 9])).unwrap();
        assert_eq!(
            summary(&r).1[1].2,
            Ok(Leased::Prefix(a("2001:db8:100::"), 56)),
            "freed for the next"
        );
        // The same device, now without a fixed prefix (another subscriber logged in on it),
        // gives the fixed one up and gets the pool's next.
        s.handle(Nanos(2), &solicit(&CLIENT_DUID)).unwrap();
        assert_eq!(
            s.binding(&CLIENT_DUID, IaKind::Pd, 2),
            Some(Leased::Prefix(a("2001:db8:100:100::"), 56))
        );

        // Reserved: a fixed /56 equal to the pool's first is never delegated from the pool,
        // nor are the /56s under a fixed /55; one outside the pool changes nothing.
        let mut s = Dhcpv6Server::new(config());
        s.reserve_prefix(a("2001:db8:100::"), 56);
        s.reserve_prefix(a("2001:db8:9::"), 48);
        let r = s.handle(Nanos(0), &solicit(&CLIENT_DUID)).unwrap();
        assert_eq!(
            summary(&r).1[1].2,
            Ok(Leased::Prefix(a("2001:db8:100:100::"), 56))
        );
        let mut s = Dhcpv6Server::new(config());
        s.reserve_prefix(a("2001:db8:100::"), 55);
        let r = s.handle(Nanos(0), &solicit(&CLIENT_DUID)).unwrap();
        assert_eq!(summary(&r).1[1].2, Err(status::NO_PREFIX_AVAIL));
    }

    #[test]
    fn exhausted_pools_say_no_addrs_and_no_prefix_avail() {
        let mut s = Dhcpv6Server::new(config());
        let ias = [(opt::IA_NA, 1), (opt::IA_PD, 1)];
        for i in 0..3u8 {
            let duid = [0, 3, 0, 1, 2, 0, 0, 0, 1, i];
            let r = s
                .handle(Nanos(0), &client_msg(msg::SOLICIT, &duid, None, &ias, &[]))
                .unwrap();
            // No Rapid Commit in these Solicits: Advertise, then Request.
            assert_eq!(r[0], msg::ADVERTISE);
            let sid = s.config().server_duid.clone();
            let r = s
                .handle(
                    Nanos(0),
                    &client_msg(msg::REQUEST, &duid, Some(&sid), &ias, &[]),
                )
                .unwrap();
            let (_, got, _) = summary(&r);
            if i < 2 {
                assert_eq!(
                    got[0].2,
                    Ok(Leased::Address(a(&format!("2001:db8:c::10{i}"))))
                );
                assert_eq!(
                    got[1].2,
                    Ok(Leased::Prefix(a(&format!("2001:db8:100:{i}00::")), 56))
                );
            } else {
                assert_eq!(got[0].2, Err(status::NO_ADDRS_AVAIL));
                assert_eq!(got[1].2, Err(status::NO_PREFIX_AVAIL));
            }
        }
        assert_eq!(
            (s.stats.no_addrs, s.stats.no_prefix),
            (2, 2),
            "advertise + reply"
        );
        // Expiry frees them: a new client gets the lowest again.
        s.poll(secs(7200));
        assert_eq!(s.stats.expired, 4);
        assert_eq!(s.stats.bindings_now, 0);
    }

    #[test]
    fn messages_a_server_must_not_answer_are_counted() {
        let mut s = Dhcpv6Server::new(config());
        let other = [0, 3, 0, 1, 2, 0, 0, 0, 0, 0x99];
        let sid = s.config().server_duid.clone();
        let cases: [(Vec<u8>, Dhcpv6Drop); 5] = [
            (
                client_msg(
                    msg::REQUEST,
                    &CLIENT_DUID,
                    Some(&other),
                    &[(opt::IA_NA, 1)],
                    &[],
                ),
                Dhcpv6Drop::NotForUs,
            ),
            (
                client_msg(msg::REQUEST, &CLIENT_DUID, None, &[(opt::IA_NA, 1)], &[]),
                Dhcpv6Drop::NotForUs,
            ),
            (
                client_msg(msg::SOLICIT, &CLIENT_DUID, Some(&sid), &[], &[]),
                Dhcpv6Drop::UnexpectedServerId,
            ),
            (
                client_msg(msg::ADVERTISE, &CLIENT_DUID, Some(&sid), &[], &[]),
                Dhcpv6Drop::UnexpectedType,
            ),
            (vec![1, 0, 0], Dhcpv6Drop::Malformed),
        ];
        for (m, why) in cases {
            assert_eq!(s.handle(Nanos(0), &m), None);
            assert!(s.stats.dropped.get(why) > 0, "{why:?}");
        }
        let mut no_cid = client_msg(msg::SOLICIT, &CLIENT_DUID, None, &[], &[]);
        no_cid[5] = 0x63; // Client ID option code 1 → 0x63 (unknown)
        assert_eq!(s.handle(Nanos(0), &no_cid), None);
        assert_eq!(s.stats.dropped.get(Dhcpv6Drop::NoClientId), 1);
        // Information-Request: no Client ID needed, DNS and AFTR-Name when asked.
        let mut ir = vec![msg::INFORMATION_REQUEST, 0, 0, 1];
        ir.extend([0, 6, 0, 4, 0, 23, 0, 64]);
        let (t, _, codes) = summary(&s.handle(Nanos(0), &ir).unwrap());
        assert_eq!(t, msg::REPLY);
        assert!(codes.contains(&opt::DNS_SERVERS) && codes.contains(&opt::AFTR_NAME));
    }

    #[test]
    fn config_check_refuses_what_cannot_work() {
        assert_eq!(config().check(), Ok(()));
        let mut c = config();
        c.addresses = Some(AddressPool {
            first: a("2001:db9::1"),
            size: 1,
        });
        assert!(c.check().unwrap_err().to_string().contains("2001:db8::/32"));
        let mut c = config();
        c.prefixes = Some(PrefixPool {
            base: a("2001:db8:100::"),
            base_len: 48,
            delegated_len: 48,
            size: 1,
        });
        assert!(c.check().is_err());
        let mut c = config();
        c.prefixes = Some(PrefixPool {
            base: a("2001:db8:100::1"),
            base_len: 48,
            delegated_len: 56,
            size: 1,
        });
        assert!(c.check().is_err());
        let mut c = config();
        c.aftr_name = Some("a..b".into());
        assert!(c.check().is_err());
        let p = PrefixPool {
            base: a("2001:db8:100::"),
            base_len: 48,
            delegated_len: 56,
            size: 1000,
        };
        assert_eq!(p.capacity(), 256);
    }

    /// The MAP-E rule of the lab: 2001:db8:100::/40 with 16 EA bits over 198.51.100.0/24, so
    /// each delegated /56 of the test pool is one CE with an 8-bit PSID.
    fn mape(offset: u8) -> MapeProvision {
        let params = (offset != DEFAULT_PSID_OFFSET).then_some(PortParams {
            offset,
            psid_len: 0,
            psid: 0,
        });
        let r = MapRule::new(
            a("2001:db8:100::"),
            40,
            "198.51.100.0".parse().unwrap(),
            24,
            16,
            params,
        )
        .unwrap();
        MapeProvision::new(&r, true, a("2001:db8:d::1"))
    }

    #[test]
    fn option_94_goes_out_when_asked_for_and_reads_back_as_the_rule() {
        let mut c = config();
        c.mape = Some(mape(DEFAULT_PSID_OFFSET));
        c.check().unwrap();
        let mut s = Dhcpv6Server::new(c);
        let ias = [(opt::IA_PD, 8)];
        let plain = s
            .handle(
                Nanos(0),
                &client_msg(msg::SOLICIT, &CLIENT_DUID, None, &ias, &[23]),
            )
            .unwrap();
        assert!(
            !summary(&plain).2.contains(&s46::opt::S46_CONT_MAPE),
            "not asked for"
        );
        let rep = s
            .handle(
                Nanos(0),
                &client_msg(msg::SOLICIT, &CLIENT_DUID, None, &ias, &[94]),
            )
            .unwrap();
        let p = Dhcpv6Packet::new_checked(&rep[..]).unwrap();
        let v = p
            .options()
            .map(|o| o.unwrap())
            .find(|(c, _)| *c == s46::opt::S46_CONT_MAPE)
            .expect("option 94")
            .1;
        let cont = wire::s46::MapeContainer::parse(v).unwrap();
        let rules: Vec<_> = cont.rules().collect();
        assert_eq!(rules.len(), 1);
        assert!(rules[0].fmr);
        assert_eq!(
            rules[0].port_params, None,
            "offset 6 needs no S46_PORTPARAMS"
        );
        assert_eq!(
            (rules[0].ea_len, rules[0].prefix4_len, rules[0].prefix6_len),
            (16, 24, 40)
        );
        assert_eq!(cont.brs().collect::<Vec<_>>(), vec![a("2001:db8:d::1")]);
        // The CE's side: the delegated prefix maps through the rule it was given.
        let m = rules[0]
            .map_rule()
            .unwrap()
            .ce_mapping(a("2001:db8:100::"), 56)
            .unwrap();
        assert_eq!(
            m.ipv4,
            "198.51.100.0".parse::<core::net::Ipv4Addr>().unwrap()
        );
        assert_eq!(m.ports.psid_len(), 8);
    }

    #[test]
    fn option_94_carries_portparams_when_the_offset_is_not_the_default() {
        let m = mape(4);
        let pp = m.rule.port_params.expect("S46_PORTPARAMS");
        assert_eq!((pp.offset, pp.psid_len), (4, 8));
        assert_eq!(m.rule.map_rule().unwrap().psid_offset(), 4);
    }

    #[test]
    fn a_rule_that_cannot_map_the_pool_is_refused() {
        let mut c = config();
        c.mape = Some(mape(DEFAULT_PSID_OFFSET));
        // 2001:db8:100::/48 pool, delegated /56: inside the /40 rule, long enough.
        c.check().unwrap();
        let mut short = c.clone();
        short.prefixes.as_mut().unwrap().delegated_len = 52;
        let e = short.check().unwrap_err().to_string();
        assert!(e.contains("/56"), "{e}");
        let mut outside = c.clone();
        outside.prefixes.as_mut().unwrap().base = a("2001:db8:200::");
        let e = outside.check().unwrap_err();
        assert!(matches!(e, Dhcpv6ConfigError::Mape(_)), "{e:?}");
        assert!(e.to_string().contains("not inside the MAP-E rule"), "{e}");
        let mut none = c;
        none.prefixes = None;
        assert!(none
            .check()
            .unwrap_err()
            .to_string()
            .contains("no prefix pool"));
    }

    #[test]
    fn random_and_truncated_input_never_panics() {
        let mut s = Dhcpv6Server::new(config());
        for n in 0..SOLICIT_RC.len() {
            let _ = s.handle(Nanos(0), &SOLICIT_RC[..n]);
        }
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut m = SOLICIT_RC.to_vec();
            for _ in 0..4 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let i = (x >> 8) as usize % m.len();
                m[i] = (x >> 16) as u8;
            }
            let _ = s.handle(Nanos(0), &m);
        }
    }
}
