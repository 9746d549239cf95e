//! The JSON views of a session's facts, one each: a PPPoE session's negotiated terms, a DS-Lite
//! softwire, a tunnel's and a TUN hand-off's counts, a client SYN, a counter by reason. The
//! session lines of a run (`sessions.jsonl`) and the hand-run `wirerate pppoe|dslite` and
//! `trial --inside` commands print the same fields under the same names because they all come
//! from here.

use emulate::dhcpv4::Dhcpv4Event;
use emulate::dhcpv6::{Dhcpv6Event, Leased};
use emulate::dslite::TunnelStats;
use emulate::ipoe::IpoePort;
use emulate::pppoe::SessionInfo;
use emulate::provision::ProvisionEvent;
use emulate::softwire::SoftwireInfo;
use engine::tun::{Direction, SynSeen, Tun};
use serde_json::{json, Map, Value};
use wire::units::Nanos;

/// Milliseconds of a duration in nanoseconds (setup times).
pub fn ms(n: Nanos) -> f64 {
    n.0 as f64 / 1e6
}

/// A counter by reason as a JSON object (`{"Reason": n, …}`).
pub fn counts<K: Ord + Copy + std::fmt::Debug>(
    c: &emulate::util::Counter<K>,
) -> Map<String, Value> {
    c.iter()
        .map(|(k, v)| (format!("{k:?}"), Value::from(v)))
        .collect()
}

/// A PPPoE session: its id, both MACs, the negotiated MRUs, authentication, IPCP addresses
/// and DNS servers.
pub fn pppoe_info(i: &SessionInfo) -> Value {
    let n = &i.negotiated;
    json!({
        "session_id": i.session_id,
        "local_mac": i.local_mac.to_string(),
        "peer_mac": i.peer_mac.to_string(),
        "our_mru": n.our_mru,
        "peer_mru": n.peer_mru,
        "auth": n.auth.map(|a| format!("{a:?}")),
        "local_ipv4": n.local_ipv4.map(|a| a.to_string()),
        "peer_ipv4": n.peer_ipv4.map(|a| a.to_string()),
        "dns": n.dns.iter().flatten().map(|a| a.to_string()).collect::<Vec<_>>(),
    })
}

/// A DS-Lite softwire: both tunnel endpoints and MACs, the tunnel MTU and the largest IPv4
/// packet it carries whole.
pub fn softwire(i: &SoftwireInfo) -> Value {
    json!({
        "local": i.local.to_string(), "remote": i.remote.to_string(),
        "local_mac": i.local_mac.to_string(), "peer_mac": i.peer_mac.to_string(),
        "mtu": i.mtu, "max_datagram": i.max_datagram(),
    })
}

/// A DS-Lite tunnel's counts: encapsulated and fragmented, decapsulated and reassembled,
/// dropped by reason.
pub fn tunnel(t: &TunnelStats) -> Value {
    json!({
        "encapsulated": t.encapsulated, "fragmented": t.fragmented,
        "fragments_tx": t.fragments_tx, "decapsulated": t.decapsulated,
        "fragments_rx": t.fragments_rx, "reassembled": t.reassembled,
        "encap_limit_seen": t.encap_limit_seen, "dropped": counts(&t.dropped),
    })
}

/// A TUN hand-off's counts (to the kernel, from the kernel, not sent by reason, SYNs seen).
pub fn tun(t: &Tun) -> Value {
    let st = &t.stats;
    json!({
        "device": t.name(),
        "up_packets": st.up_packets, "up_bytes": st.up_bytes, "up_dropped": st.up_dropped,
        "down_packets": st.down_packets, "down_bytes": st.down_bytes,
        "down_dropped": st.down_dropped.iter()
            .map(|(k, v)| (format!("{k:?}"), Value::from(*v))).collect::<Map<_, _>>(),
        "syns": st.syns,
    })
}

/// `up` or `down`: which way a SYN crossed the TUN hand-off.
pub fn direction(d: Direction) -> &'static str {
    match d {
        Direction::Up => "up",
        Direction::Down => "down",
    }
}

/// A client SYN that crossed the TUN hand-off, with its MSS option (`syn` lines).
pub fn syn(s: &SynSeen) -> Value {
    json!({"event": "syn", "direction": direction(s.direction),
        "src": s.src.to_string(), "dst": s.dst.to_string(),
        "src_port": s.src_port, "dst_port": s.dst_port, "mss": s.mss})
}

/// A DHCPv6 binding change on an ISP port's link as a `sessions.jsonl` line: `lease`, `renew`,
/// `release` or `expire`, with the client's MAC, IAID and address or prefix.
pub fn provision(e: &ProvisionEvent) -> Value {
    let ProvisionEvent::Dhcp { mac, event } = e;
    let (what, iaid, leased) = match event {
        Dhcpv6Event::Bound { iaid, leased, .. } => ("lease", iaid, leased),
        Dhcpv6Event::Renewed { iaid, leased, .. } => ("renew", iaid, leased),
        Dhcpv6Event::Released { iaid, leased, .. } => ("release", iaid, leased),
        Dhcpv6Event::Expired { iaid, leased, .. } => ("expire", iaid, leased),
    };
    let mut v = json!({ "event": what, "mac": mac.to_string(), "iaid": iaid });
    match leased {
        Leased::Address(a) => v["address"] = a.to_string().into(),
        Leased::Prefix(p, n) => v["prefix"] = format!("{p}/{n}").into(),
    }
    v
}

/// A DHCPv4 lease change on an IPoE port as a `sessions.jsonl` line: `lease`, `renew`,
/// `release`, `decline`, `expire` (with the client's MAC, the address and for the first two
/// the lease time) or `nak` (the address asked for and why).
pub fn lease(e: &Dhcpv4Event) -> Value {
    let (what, mac, addr) = match e {
        Dhcpv4Event::Bound { mac, addr, .. } => ("lease", mac, Some(addr)),
        Dhcpv4Event::Renewed { mac, addr, .. } => ("renew", mac, Some(addr)),
        Dhcpv4Event::Released { mac, addr, .. } => ("release", mac, Some(addr)),
        Dhcpv4Event::Declined { mac, addr, .. } => ("decline", mac, Some(addr)),
        Dhcpv4Event::Expired { mac, addr, .. } => ("expire", mac, Some(addr)),
        Dhcpv4Event::Nak { mac, requested, .. } => ("nak", mac, requested.as_ref()),
    };
    let mut v = json!({"event": what, "protocol": "dhcpv4", "mac": mac.to_string(),
        "address": addr.map(|a| a.to_string())});
    match e {
        Dhcpv4Event::Bound { lease, .. } | Dhcpv4Event::Renewed { lease, .. } => {
            v["lease_s"] = (*lease).into();
        }
        Dhcpv4Event::Nak { why, .. } => v["reason"] = format!("{why:?}").into(),
        _ => {}
    }
    v
}

/// An IPoE port's counts: DHCPv4 messages by type, NAKs and drops by reason, leases now and
/// expired; the DNS server's queries by outcome and its UDP/TCP traffic; echo replies and
/// what the relay carried.
pub fn ipoe_stats(m: &IpoePort) -> Value {
    let d = &m.dhcp().stats;
    let mut v = json!({
        "role": "ipoe",
        "dhcp_rx": counts(&d.rx), "dhcp_tx": counts(&d.tx), "naks": counts(&d.naks),
        "dhcp_dropped": counts(&d.dropped), "leases": d.leases_now, "expired": d.expired,
        "declined": d.declined, "echo_replies": m.stats.echo_replies,
        "relayed_up": m.stats.relayed_up, "relayed_down": m.stats.relayed_down,
        "dropped": counts(&m.stats.dropped),
    });
    if let Some(s) = m.dns() {
        v["dns"] = json!({
            "queries": s.responder().stats.queries,
            "outcomes": counts(&s.responder().stats.outcomes),
            "udp_rx": s.stats.udp_rx, "udp_tx": s.stats.udp_tx,
            "tcp_rx": s.stats.tcp_rx, "tcp_tx": s.stats.tcp_tx,
            "tcp": counts(&s.tcp().stats.events),
            "dropped": counts(&s.stats.dropped),
        });
    }
    if let Some(p) = m.provisioner() {
        let ds = &p.dhcp().stats;
        v["provision"] = json!({
            "rs_rx": p.stats.rs_rx, "dhcp_rx": p.stats.dhcp_rx, "dhcp_tx": p.stats.dhcp_tx,
            "bindings": ds.bindings_now,
        });
    }
    v
}

/// A MAP-E CE as the BR's rule maps it: its MAP address, shared IPv4 address, PSID and ports.
pub fn ce_mapping(ce: std::net::Ipv6Addr, m: &wire::map_rule::CeMapping) -> Value {
    json!({
        "ce": ce.to_string(),
        "ipv4": m.ipv4.to_string(),
        "psid": m.ports.psid(),
        "psid_len": m.ports.psid_len(),
        "ports": port_ranges(&m.ports),
    })
}

/// A port set as "first-last" ranges.
pub fn port_ranges(p: &wire::map_rule::PortSet) -> Vec<String> {
    p.ranges()
        .map(|r| format!("{}-{}", r.start(), r.end()))
        .collect()
}

/// The BR's counters: what passed and what was dropped by reason, per direction.
pub fn br(s: &emulate::mape::BrStats) -> Value {
    json!({
        "decapsulated": s.decapsulated,
        "encapsulated": s.encapsulated,
        "upstream_dropped": counts(&s.upstream_dropped),
        "downstream_dropped": counts(&s.downstream_dropped),
    })
}
