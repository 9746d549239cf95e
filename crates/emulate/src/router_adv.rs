//! The router side of Router Discovery (RFC 4861 §6.2): what our Router Advertisement says
//! (flags, prefixes, MTU, DNS servers) and when it is sent — at start, then at a random
//! interval between `min_interval` and `max_interval` (the first three at most 16 s apart,
//! §6.2.4), and in answer to a Router Solicitation (§6.2.6).
//!
//! A solicitation from a host with an address is answered at once by unicast (§6.2.6 allows
//! it), so a gateway that boots gets its RA without waiting for the schedule; one from `::`
//! is answered to all-nodes, at most once per 3 s (MIN_DELAY_BETWEEN_RAS). The jitter comes
//! from the configured [`Entropy`], so a seeded run is reproducible.
//!
//! Sans-I/O: this module decides and builds the ICMPv6 message; [`crate::provision`] puts it
//! in a frame.

use core::net::Ipv6Addr;

use wire::ethernet::MacAddr;
use wire::icmpv6::Icmpv6Packet;
use wire::routerdisc::{PrefixInfo, RouterAdvertHeader, RouterAdvertRepr};
use wire::units::Nanos;

use crate::util::{add, Entropy, Rng};

/// RFC 4861 §10: MAX_INITIAL_RTR_ADVERTISEMENTS and MAX_INITIAL_RTR_ADVERT_INTERVAL.
const INITIAL_ADVERTS: u32 = 3;
const INITIAL_INTERVAL: Nanos = Nanos(16_000_000_000);
/// MIN_DELAY_BETWEEN_RAS: multicast RAs are at least this far apart.
pub const MIN_DELAY_BETWEEN_RAS: Nanos = Nanos(3_000_000_000);

/// What the RA says and how often it is sent.
#[derive(Debug, Clone)]
pub struct RaConfig {
    /// M: get addresses from DHCPv6 (stateful).
    pub managed: bool,
    /// O: get other configuration (DNS, AFTR name) from DHCPv6.
    pub other: bool,
    /// Seconds we are a default router (0: not one).
    pub router_lifetime: u16,
    /// Hop limit hosts should use (0: unspecified).
    pub hop_limit: u8,
    pub prefixes: Vec<PrefixInfo>,
    /// The link MTU option (None: not sent).
    pub mtu: Option<u32>,
    /// RDNSS (RFC 8106) servers and their lifetime in seconds; empty: no option.
    pub rdnss: Vec<Ipv6Addr>,
    pub rdnss_lifetime: u32,
    /// Unsolicited RAs every uniformly random interval in [min, max].
    pub min_interval: Nanos,
    pub max_interval: Nanos,
    pub entropy: Entropy,
}

impl RaConfig {
    /// M and O set, default router for 1800 s, hop limit 64, RAs every 200–600 s (RFC 4861
    /// §6.2.1 defaults), no prefix, MTU or DNS yet.
    pub fn new() -> RaConfig {
        RaConfig {
            managed: true,
            other: true,
            router_lifetime: 1800,
            hop_limit: 64,
            prefixes: Vec::new(),
            mtu: None,
            rdnss: Vec::new(),
            rdnss_lifetime: 1800,
            min_interval: Nanos(200_000_000_000),
            max_interval: Nanos(600_000_000_000),
            entropy: Entropy::Os,
        }
    }
}

impl Default for RaConfig {
    fn default() -> Self {
        RaConfig::new()
    }
}

/// Where an RA goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaDestination {
    /// ff02::1.
    AllNodes,
    /// The soliciting host, at this address and MAC.
    Unicast(Ipv6Addr, MacAddr),
}

/// Counters of an [`Advertiser`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RaStats {
    pub unsolicited_tx: u64,
    pub solicited_tx: u64,
    /// Solicitations from `::` not answered because a multicast RA went out < 3 s ago.
    pub rate_limited: u64,
}

/// Decides when RAs go out.
#[derive(Debug)]
pub struct Advertiser {
    cfg: RaConfig,
    rng: Rng,
    /// When the next unsolicited RA is due (the first at the first poll).
    next: Option<Nanos>,
    sent_unsolicited: u32,
    last_multicast: Option<Nanos>,
    pub stats: RaStats,
}

impl Advertiser {
    pub fn new(cfg: RaConfig) -> Advertiser {
        Advertiser {
            rng: Rng::from_entropy(cfg.entropy),
            cfg,
            next: Some(Nanos(0)),
            sent_unsolicited: 0,
            last_multicast: None,
            stats: RaStats::default(),
        }
    }

    pub fn config(&self) -> &RaConfig {
        &self.cfg
    }

    /// The ICMPv6 RA (checksum left 0: it depends on the addresses the caller picks). The
    /// source link-layer address option is sent on Ethernet, not on a PPP link (None).
    pub fn message(&self, source_mac: Option<MacAddr>) -> Vec<u8> {
        let c = &self.cfg;
        let r = RouterAdvertRepr {
            header: RouterAdvertHeader {
                hop_limit: c.hop_limit,
                managed: c.managed,
                other: c.other,
                router_lifetime: c.router_lifetime,
                reachable_time: 0,
                retrans_timer: 0,
            },
            source_lladdr: source_mac,
            mtu: c.mtu,
            prefixes: &c.prefixes,
            rdnss_lifetime: c.rdnss_lifetime,
            rdnss: &c.rdnss,
        };
        let mut b = vec![0u8; r.buffer_len()];
        // Only fails above 127 DNS servers; the message then goes without options' tail.
        let _ = r.emit(&mut Icmpv6Packet::new_unchecked(&mut b[..]));
        b
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.next
    }

    fn interval(&mut self) -> Nanos {
        let (lo, hi) = (
            self.cfg.min_interval.0,
            self.cfg.max_interval.0.max(self.cfg.min_interval.0),
        );
        let span = hi - lo;
        let j = if span == 0 {
            0
        } else {
            self.rng.next_u64() % (span + 1)
        };
        let mut d = Nanos(lo + j);
        if self.sent_unsolicited < INITIAL_ADVERTS {
            d = d.min(INITIAL_INTERVAL);
        }
        d
    }

    /// Whether an unsolicited RA is due now (it is then counted and the next one scheduled).
    pub fn poll(&mut self, now: Nanos) -> bool {
        match self.next {
            Some(t) if t <= now => {
                self.sent_unsolicited += 1;
                self.stats.unsolicited_tx += 1;
                self.last_multicast = Some(now);
                let d = self.interval();
                self.next = Some(add(now, d));
                true
            }
            _ => false,
        }
    }

    /// A Router Solicitation from `src` (`::` before the host has an address) whose link-layer
    /// address is `mac`: where the answer goes, or None when rate-limited.
    pub fn solicited(&mut self, now: Nanos, src: Ipv6Addr, mac: MacAddr) -> Option<RaDestination> {
        if !src.is_unspecified() {
            self.stats.solicited_tx += 1;
            return Some(RaDestination::Unicast(src, mac));
        }
        if let Some(last) = self.last_multicast {
            if now < add(last, MIN_DELAY_BETWEEN_RAS) {
                self.stats.rate_limited += 1;
                return None;
            }
        }
        self.last_multicast = Some(now);
        self.stats.solicited_tx += 1;
        Some(RaDestination::AllNodes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::routerdisc::{NdOption, NdOptions, RA_LEN};

    fn cfg() -> RaConfig {
        let mut c = RaConfig::new();
        c.prefixes.push(PrefixInfo {
            prefix: "2001:db8:c::".parse().unwrap(),
            prefix_len: 64,
            on_link: true,
            autonomous: true,
            valid_lifetime: 7200,
            preferred_lifetime: 3600,
        });
        c.mtu = Some(1500);
        c.rdnss = vec!["2001:db8:53::1".parse().unwrap()];
        c.entropy = Entropy::Seeded(7);
        c
    }

    #[test]
    fn message_carries_flags_prefix_mtu_and_dns() {
        let a = Advertiser::new(cfg());
        let m = a.message(Some(MacAddr([2, 0, 0, 0, 0, 0x0a])));
        assert_eq!(m.len(), 88);
        let h = wire::routerdisc::RouterAdvertHeader::parse(&Icmpv6Packet::new_unchecked(&m[..]))
            .unwrap();
        assert!(h.managed && h.other);
        assert_eq!(h.router_lifetime, 1800);
        let opts: Vec<_> = NdOptions::new(&m[RA_LEN..]).map(Result::unwrap).collect();
        assert!(
            matches!(opts[2], NdOption::Prefix(p) if p.on_link && p.autonomous && p.prefix_len == 64)
        );
    }

    #[test]
    fn schedule_initial_then_random_within_bounds() {
        let mut c = cfg();
        c.min_interval = Nanos(30_000_000_000);
        c.max_interval = Nanos(60_000_000_000);
        let mut a = Advertiser::new(c);
        assert!(a.poll(Nanos(0)), "one at start");
        assert!(!a.poll(Nanos(1)));
        let mut t = Nanos(0);
        let mut gaps = Vec::new();
        for _ in 0..20 {
            let d = a.next_deadline().unwrap();
            gaps.push(d.0 - t.0);
            t = d;
            assert!(a.poll(t));
        }
        assert!(
            gaps[..2].iter().all(|&g| g == 16_000_000_000),
            "initial: capped at 16 s"
        );
        assert!(gaps[2..]
            .iter()
            .all(|&g| (30_000_000_000..=60_000_000_000).contains(&g)));
        assert!(gaps[2..].windows(2).any(|w| w[0] != w[1]), "jittered");
        // The same seed gives the same schedule.
        let mut b = Advertiser::new(cfg());
        let mut c2 = Advertiser::new(cfg());
        for i in 0..5 {
            let t = Nanos(i * 700_000_000_000);
            assert_eq!(
                (b.poll(t), b.next_deadline()),
                (c2.poll(t), c2.next_deadline())
            );
        }
    }

    #[test]
    fn solicitations_unicast_at_once_multicast_rate_limited() {
        let mut a = Advertiser::new(cfg());
        let host: Ipv6Addr = "fe80::1".parse().unwrap();
        let mac = MacAddr([2, 0, 0, 0, 0, 0x0b]);
        assert!(a.poll(Nanos(0)));
        assert_eq!(
            a.solicited(Nanos(1), host, mac),
            Some(RaDestination::Unicast(host, mac))
        );
        assert_eq!(a.solicited(Nanos(1), Ipv6Addr::UNSPECIFIED, mac), None);
        assert_eq!(a.stats.rate_limited, 1);
        assert_eq!(
            a.solicited(MIN_DELAY_BETWEEN_RAS, Ipv6Addr::UNSPECIFIED, mac),
            Some(RaDestination::AllNodes)
        );
    }
}
