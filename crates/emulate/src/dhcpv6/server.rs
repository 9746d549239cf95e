//! The DHCPv6 server's state machine (RFC 8415 §18.3) with its bindings: what each client
//! message does to them and the reply it gets.

use core::net::Ipv6Addr;
use std::collections::{BTreeMap, BTreeSet};

use wire::dhcpv6::{self, msg, opt, status, Dhcpv6Packet, OptionWriter};
use wire::s46;
use wire::units::Nanos;

use super::client_msg::{parse_client, ClientMsg, IaReq};
use super::config::Dhcpv6Config;
use super::messages::{Dhcpv6Drop, Dhcpv6Event, Dhcpv6Stats, IaKind, Leased};
use super::pools::in_prefix;
use crate::util::add;

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

/// `s` seconds on the server's clock.
pub(super) fn secs(s: u32) -> Nanos {
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
