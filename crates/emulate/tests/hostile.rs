//! Hostile input: every refused frame is counted by reason, nothing panics, nothing wedges
//! the server (a legitimate subscriber still comes up and passes data afterwards).

mod common;

use common::*;
use emulate::ppp::link::Anomaly;
use emulate::ppp::AuthMethod;
use emulate::pppoe::client::{Client, ClientConfig};
use emulate::pppoe::server::{Server, ServerConfig};
use emulate::pppoe::{HostileReason, SessionKey};
use emulate::util::Entropy;
use emulate::Nanos;
use proptest::prelude::*;
use wire::ethernet::MacAddr;
use wire::ppp::Protocol;
use wire::pppoe::{PppoeCode, TagType};

fn fresh() -> Server {
    Server::new(server_cfg(vec![AuthMethod::Pap]))
}

fn count(s: &Server, r: HostileReason) -> u64 {
    s.stats.hostile.get(r)
}

/// Brings one subscriber up and returns the bench (server has one up session).
fn up_session() -> (Net, SessionKey) {
    let mut net = Net::one(
        server_cfg(vec![AuthMethod::Pap]),
        client_cfg(1, "alice", "secret-a"),
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    let key = net.server.sessions().next().unwrap();
    (net, key)
}

/// A session frame from the subscriber of `key` carrying `ppp` (protocol + information).
fn session_frame(key: SessionKey, ppp: &[u8]) -> Vec<u8> {
    let mut f = craft(ac_mac(), PppoeCode::Session, key.session_id, &[]);
    f[..14].copy_from_slice(&[&ac_mac().0[..], &key.client.0[..], &[0x88, 0x64][..]].concat());
    f.extend_from_slice(ppp);
    let len = ppp.len() as u16;
    f[18..20].copy_from_slice(&len.to_be_bytes());
    f
}

#[test]
fn discovery_garbage_is_counted_by_reason() {
    let mut s = fresh();
    let now = Nanos(0);
    let padi = craft(
        MacAddr::BROADCAST,
        PppoeCode::Padi,
        0,
        &[(TagType::ServiceName, b"")],
    );

    // Truncated tag: Host-Uniq claims 8 bytes, 2 present (LENGTH covers them).
    let mut t = craft(
        MacAddr::BROADCAST,
        PppoeCode::Padi,
        0,
        &[(TagType::ServiceName, b"")],
    );
    t.extend_from_slice(&[0x01, 0x03, 0x00, 0x08, 0xaa, 0xbb]);
    t[18..20].copy_from_slice(&10u16.to_be_bytes());
    s.handle_frame(now, &t);
    assert_eq!(count(&s, HostileReason::BadTags), 1);

    // PPPoE LENGTH larger than the frame.
    let mut l = padi.clone();
    l[18..20].copy_from_slice(&500u16.to_be_bytes());
    s.handle_frame(now, &l);
    assert_eq!(count(&s, HostileReason::TruncatedPppoe), 1);
    // Shorter than a PPPoE header; shorter than Ethernet.
    s.handle_frame(now, &padi[..17]);
    s.handle_frame(now, &padi[..9]);
    assert_eq!(count(&s, HostileReason::TruncatedPppoe), 2);
    assert_eq!(count(&s, HostileReason::TruncatedEthernet), 1);

    // Unknown code, and codes a server never receives.
    for code in [PppoeCode::Unknown(0x42), PppoeCode::Pado, PppoeCode::Pads] {
        s.handle_frame(now, &craft(ac_mac(), code, 0, &[]));
    }
    assert_eq!(count(&s, HostileReason::UnexpectedCode), 3);

    // Version 2, PADI with a session id, PADI without Service-Name, bad Max-Payload.
    let mut v = padi.clone();
    v[14] = 0x21;
    s.handle_frame(now, &v);
    assert_eq!(count(&s, HostileReason::BadVersion), 1);
    s.handle_frame(
        now,
        &craft(
            MacAddr::BROADCAST,
            PppoeCode::Padi,
            7,
            &[(TagType::ServiceName, b"")],
        ),
    );
    assert_eq!(count(&s, HostileReason::NonZeroSessionId), 1);
    s.handle_frame(
        now,
        &craft(
            MacAddr::BROADCAST,
            PppoeCode::Padi,
            0,
            &[(TagType::HostUniq, b"x")],
        ),
    );
    assert_eq!(count(&s, HostileReason::MissingServiceName), 1);
    s.handle_frame(
        now,
        &craft(
            MacAddr::BROADCAST,
            PppoeCode::Padi,
            0,
            &[(TagType::ServiceName, b""), (TagType::PppMaxPayload, &[5])],
        ),
    );
    assert_eq!(count(&s, HostileReason::BadMaxPayload), 1);

    // Session frame and PADT for sessions that do not exist.
    s.handle_frame(now, &craft(ac_mac(), PppoeCode::Session, 0x4242, &[]));
    s.handle_frame(now, &craft(ac_mac(), PppoeCode::Padt, 0x4242, &[]));
    assert_eq!(count(&s, HostileReason::UnknownSession), 2);
    // A PADR for another AC's MAC.
    s.handle_frame(
        now,
        &craft(MacAddr([2, 1, 1, 1, 1, 1]), PppoeCode::Padr, 0, &[]),
    );
    assert_eq!(count(&s, HostileReason::NotForUs), 1);

    assert!(s.take_transmit().is_empty(), "nothing answered");
    assert_eq!(s.session_count(), 0);
    assert_eq!(s.stats.hostile.total(), 14, "{}", s.stats.hostile);
    // A non-PPPoE frame is not ours to judge.
    let mut arp = padi;
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert!(!s.handle_frame(now, &arp));
}

#[test]
fn padi_flood_is_rate_limited_and_costs_no_state() {
    let mut net = Net::one(
        ServerConfig {
            pado_rate: 100,
            pado_burst: 200,
            ..server_cfg(vec![AuthMethod::Pap])
        },
        client_cfg(1, "alice", "secret-a"),
    );
    for i in 0..20_000u32 {
        let mut f = craft(
            MacAddr::BROADCAST,
            PppoeCode::Padi,
            0,
            &[(TagType::ServiceName, b"")],
        );
        f[6..12].copy_from_slice(&[0x02, 0xee, (i >> 16) as u8, (i >> 8) as u8, i as u8, 1]);
        net.server.handle_frame(Nanos(0), &f);
    }
    let s = &net.server.stats;
    assert_eq!(s.padi_rx, 20_000);
    assert_eq!(s.pado_tx, 200);
    assert_eq!(
        net.server.stats.hostile.get(HostileReason::PadiRateLimited),
        19_800
    );
    assert_eq!(net.server.session_count(), 0);
    assert_eq!(net.server.next_deadline(), None, "no timers for offers");
    net.server.take_transmit();
    // Two seconds later the bucket has refilled and a real subscriber gets through.
    net.now = Nanos(2 * SEC);
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
}

#[test]
fn in_session_garbage_is_rejected_and_the_session_survives() {
    let (mut net, key) = up_session();
    let now = net.now;
    net.server.take_transmit();
    // Unknown LCP code 0x42: Code-Reject.
    net.server.handle_frame(
        now,
        &session_frame(key, &[0xc0, 0x21, 0x42, 0x07, 0x00, 0x06, 1, 2]),
    );
    // Unknown protocol 0x8281: Protocol-Reject.
    net.server.handle_frame(
        now,
        &session_frame(key, &[0x82, 0x81, 0x01, 0x01, 0x00, 0x04]),
    );
    // LCP with Length below 4, and with Length beyond the frame.
    net.server.handle_frame(
        now,
        &session_frame(key, &[0xc0, 0x21, 0x09, 0x01, 0x00, 0x02]),
    );
    net.server.handle_frame(
        now,
        &session_frame(key, &[0xc0, 0x21, 0x09, 0x01, 0x00, 0x40, 0, 0]),
    );
    // One byte of PPP (an even, uncompressible first byte).
    net.server.handle_frame(now, &session_frame(key, &[0xc0]));
    // PAP after authentication is done with a broken body.
    net.server.handle_frame(
        now,
        &session_frame(key, &[0xc0, 0x23, 0x01, 0x09, 0x00, 0x05, 0x09]),
    );
    let out = net.server.take_transmit();
    let lcp_codes: Vec<u8> = out
        .iter()
        .filter(|f| f.len() > 22 && f[20..22] == [0xc0, 0x21])
        .map(|f| f[22])
        .collect();
    assert_eq!(lcp_codes, vec![7, 8], "Code-Reject then Protocol-Reject");
    let h = &net.server.stats.hostile;
    assert_eq!(h.get(HostileReason::Ppp(Anomaly::UnknownCode)), 1);
    assert_eq!(h.get(HostileReason::Ppp(Anomaly::UnknownProtocol)), 1);
    assert_eq!(h.get(HostileReason::Ppp(Anomaly::ControlMalformed)), 2);
    assert_eq!(h.get(HostileReason::Ppp(Anomaly::PppTruncated)), 1);
    assert_eq!(h.get(HostileReason::Ppp(Anomaly::UnexpectedAuth)), 1);
    // Still up, still carrying data both ways, echo still answered.
    assert_eq!(net.server.stats.sessions_up, 1);
    assert!(net.clients[0].send(now, Protocol::IPV4, &ipv4_packet(1)));
    assert!(net.server.send(now, key, Protocol::IPV4, &ipv4_packet(2)));
    while net.exchange() {}
    net.advance(60);
    assert!(net.all_up());
    assert!(net.server_down().is_empty());
}

#[test]
fn a_peer_echoing_our_magic_number_ends_the_session_without_crashing() {
    // Regression: a looped-link verdict once recursed without end (stack overflow) when a
    // peer kept sending Configure-Requests with the AC's own magic number.
    let mut s = fresh();
    let cookie = s.cookie(CLIENT);
    let padr = craft(
        ac_mac(),
        PppoeCode::Padr,
        0,
        &[(TagType::ServiceName, b""), (TagType::AcCookie, &cookie)],
    );
    s.handle_frame(Nanos(0), &padr);
    let out = s.take_transmit();
    let sid = u16::from_be_bytes([out[0][16], out[0][17]]);
    let key = SessionKey {
        client: CLIENT,
        session_id: sid,
    };
    // The AC's Configure-Request: find its Magic-Number option (type 5).
    let req = &out[1][22..];
    let opts = &req[4..usize::from(u16::from_be_bytes([req[2], req[3]]))];
    let mut i = 0;
    let mut magic = None;
    while i + 1 < opts.len() {
        if opts[i] == 5 {
            magic = Some(opts[i + 2..i + 6].to_vec());
        }
        i += usize::from(opts[i + 1]).max(2);
    }
    let magic = magic.expect("the AC sends a magic number");
    for id in 0..10u8 {
        let mut ppp = vec![0xc0, 0x21, 1, id, 0, 10, 5, 6];
        ppp.extend_from_slice(&magic);
        s.handle_frame(Nanos(u64::from(id)), &session_frame(key, &ppp));
        s.take_transmit();
    }
    let mut t = Nanos(100);
    while let Some(d) = s.next_deadline() {
        t = d.max(t);
        s.poll(t);
    }
    assert_eq!(s.stats.ended.get(emulate::ppp::DownReason::Loopback), 1);
    assert_eq!(s.session_count(), 0);
}

#[test]
fn many_pads_for_a_session_id_that_does_not_exist() {
    let (mut net, key) = up_session();
    let mut sent = 0;
    for id in 1..=2000u16 {
        if id == key.session_id {
            continue;
        }
        sent += 2;
        let k = SessionKey {
            client: key.client,
            session_id: id,
        };
        net.server
            .handle_frame(net.now, &session_frame(k, &[0x00, 0x21, 0x45]));
        let mut padt = craft(ac_mac(), PppoeCode::Padt, id, &[]);
        padt[6..12].copy_from_slice(&key.client.0);
        net.server.handle_frame(net.now, &padt);
    }
    assert_eq!(
        net.server.stats.hostile.get(HostileReason::UnknownSession),
        sent
    );
    assert!(net.all_up());
}

fn valid_frames() -> Vec<Vec<u8>> {
    // Everything a real exchange puts on the wire, both directions.
    let mut net = Net::one(
        server_cfg(vec![AuthMethod::ChapMd5]),
        client_cfg(1, "alice", "secret-a"),
    );
    net.start_all();
    let mut frames = Vec::new();
    for _ in 0..200 {
        let down = net.server.take_transmit();
        let up = net.clients[0].take_transmit();
        if down.is_empty() && up.is_empty() {
            break;
        }
        for f in &down {
            net.clients[0].handle_frame(net.now, f);
        }
        for f in &up {
            net.server.handle_frame(net.now, f);
        }
        frames.extend(down);
        frames.extend(up);
    }
    frames
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(frames in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..120), 1..20)) {
        let mut s = fresh();
        let mut c = Client::new(ClientConfig { entropy: Entropy::Seeded(2), ..ClientConfig::default() });
        c.start(Nanos(0));
        for (i, f) in frames.iter().enumerate() {
            let now = Nanos(i as u64 * 1_000_000);
            s.handle_frame(now, f);
            c.handle_frame(now, f);
            s.poll(now);
            c.poll(now);
        }
    }

    #[test]
    fn random_pppoe_payloads_never_panic(
        code in prop::sample::select(vec![0x00u8, 0x07, 0x09, 0x19, 0x65, 0xa7, 0x42]),
        sid in any::<u16>(),
        body in prop::collection::vec(any::<u8>(), 0..80),
        broadcast in any::<bool>(),
    ) {
        let mut s = fresh();
        let dst = if broadcast { MacAddr::BROADCAST } else { ac_mac() };
        let mut f = craft(dst, PppoeCode::from(code), sid, &[]);
        if code == 0 {
            f[12..14].copy_from_slice(&[0x88, 0x64]);
        }
        f.extend_from_slice(&body);
        let len = body.len() as u16;
        f[18..20].copy_from_slice(&len.to_be_bytes());
        s.handle_frame(Nanos(0), &f);
        s.poll(Nanos(10 * SEC));
    }

    #[test]
    fn mutated_real_frames_never_panic_or_wedge(
        mutations in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>(), 0usize..3), 1..40),
    ) {
        let frames = valid_frames();
        let (mut net, key) = up_session();
        for (which, at, byte, kind) in mutations {
            let mut f = frames[which.index(frames.len())].clone();
            // Aim at the live session so mutations reach the PPP layer too.
            if f.len() >= 20 && f[12..14] == [0x88, 0x64] {
                f[6..12].copy_from_slice(&key.client.0);
                f[16..18].copy_from_slice(&key.session_id.to_be_bytes());
                f[0..6].copy_from_slice(&ac_mac().0);
            }
            let i = at.index(f.len());
            match kind {
                0 => f[i] = byte,
                1 => f.truncate(i),
                _ => f.insert(i, byte),
            }
            // Never a PADT for the live session: that would end it legitimately.
            if pppoe_code(&f) == Some(PppoeCode::Padt) {
                continue;
            }
            net.server.handle_frame(net.now, &f);
            net.clients[0].handle_frame(net.now, &f);
        }
        while net.exchange() {}
        // Whatever happened, a new subscriber can still come up on this server.
        let mut c = Client::new(client_cfg(9, "bob", "secret-b"));
        c.start(net.now);
        net.clients.push(c);
        let ok = net.run_until(60, |n| n.clients[1].is_up());
        prop_assert!(ok, "server wedged: {:?}", net.server.stats);
    }
}
