//! PPPoE scenarios through frames: our client and our server back to back through an
//! in-memory link with a simulated clock (optionally lossy), plus crafted frames for the rules
//! a well-behaved peer never exercises.

mod common;

use core::net::Ipv4Addr;

use emulate::ppp::{AuthMethod, DownReason};
use emulate::pppoe::client::{ClientEvent, ClientState};
use emulate::pppoe::server::{Server, ServerEvent};
use emulate::pppoe::{HostileReason, SessionKey};
use emulate::Nanos;
use wire::ethernet::MacAddr;
use wire::ppp::Protocol;
use wire::pppoe::{PppoeCode, PppoeHeader, TagType};

use common::*;

#[test]
fn loopback_pap_session_up_carries_data_and_ends_on_padt() {
    let mut net = Net::one(
        server_cfg(vec![AuthMethod::Pap]),
        client_cfg(1, "alice", "secret-a"),
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up), "session did not come up");

    let info = net.clients[0].session_info().unwrap();
    let n = info.negotiated;
    assert_eq!(n.auth, Some(AuthMethod::Pap));
    assert_eq!(n.local_ipv4, Some(Ipv4Addr::new(198, 51, 100, 10)));
    assert_eq!(n.peer_ipv4, Some(Ipv4Addr::new(198, 51, 100, 1)));
    assert_eq!(
        n.dns,
        [
            Some(Ipv4Addr::new(198, 51, 100, 53)),
            Some(Ipv4Addr::new(203, 0, 113, 53))
        ]
    );
    // The AC asked for MRU 1454, so the client may send it 1454; the client asked 1492.
    assert_eq!((n.peer_mru, n.our_mru), (1454, 1492));
    assert!(n.local_interface_id.is_some() && n.peer_interface_id.is_some());
    assert_ne!(n.local_interface_id, n.peer_interface_id);

    let (key, sinfo, user) = match &net.server_events[0] {
        ServerEvent::SessionUp {
            key, info, user, ..
        } => (*key, *info, user.clone()),
        e => panic!("unexpected {e:?}"),
    };
    assert_eq!(user.as_deref(), Some("alice"));
    assert_eq!(key.session_id, info.session_id);
    assert_eq!(
        sinfo.negotiated.peer_ipv4,
        Some(Ipv4Addr::new(198, 51, 100, 10))
    );
    assert_eq!(sinfo.negotiated.peer_mru, 1492);
    assert_eq!(net.server.session_info(key), Some(sinfo));
    assert!(net.clients[0].stats.setup.is_some());
    assert_eq!(net.server.stats.setup.count, 1);

    // Data both ways, IPv4 and IPv6.
    assert!(net.clients[0].send(net.now, Protocol::IPV4, &ipv4_packet(7)));
    assert!(net.clients[0].send(net.now, Protocol::IPV6, &[0x60; 40]));
    let now = net.now;
    assert!(net.server.send(now, key, Protocol::IPV4, &ipv4_packet(9)));
    while net.exchange() {}
    let got: Vec<_> = net
        .server_events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Data {
                protocol, payload, ..
            } => Some((*protocol, payload.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Protocol::IPV4, ipv4_packet(7)),
            (Protocol::IPV6, vec![0x60; 40])
        ]
    );
    assert!(net.client_events.iter().any(|(_, e)| matches!(e,
        ClientEvent::Data { protocol: Protocol::IPV4, payload } if *payload == ipv4_packet(9))));

    // The client hangs up: Terminate exchange, PADT; the server ends the session on it.
    net.clients[0].close(net.now);
    assert!(net.run_until(10, |n| !n.server_down().is_empty()));
    assert_eq!(net.client_down(0), vec![DownReason::LocalClose]);
    assert_eq!(net.server_down(), vec![DownReason::PeerPadt]);
    assert_eq!(net.server.session_count(), 0);
    assert_eq!(net.server.stats.sessions_up, 0);
    assert_eq!(net.clients[0].stats.padt_tx, 1);
    assert_eq!(
        net.server.stats.hostile.total(),
        0,
        "{}",
        net.server.stats.hostile
    );
    assert_eq!(
        net.clients[0].stats.hostile.total(),
        0,
        "{}",
        net.clients[0].stats.hostile
    );
}

/// The TUN hand-off's machine half: with `enable_ip_relay` IP packets leave by `take_ip`
/// instead of `Data` events, and `send_ip` routes back by the subscriber's address (IPv4) or
/// IPv6CP interface identifier (IPv6); what cannot go is refused by reason.
#[test]
fn ip_relay_hands_packets_over_and_routes_them_back_by_address() {
    use emulate::control_plane::RelayDrop;
    let mut net = Net::one(
        server_cfg(vec![AuthMethod::Pap]),
        client_cfg(1, "alice", "secret-a"),
    );
    net.server.enable_ip_relay();
    net.clients[0].enable_ip_relay();
    let to = |dst: [u8; 4], len: usize| {
        let mut p = vec![0u8; len];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[12..16].copy_from_slice(&[203, 0, 113, 1]);
        p[16..20].copy_from_slice(&dst);
        p
    };
    let down = to([198, 51, 100, 10], 100);
    assert_eq!(net.server.send_ip(net.now, &down), Err(RelayDrop::NoRoute));
    assert_eq!(
        net.clients[0].send_ip(net.now, &to([203, 0, 113, 1], 60)),
        Err(RelayDrop::NotUp)
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up), "session did not come up");
    let n = net.clients[0].session_info().unwrap().negotiated;

    let up = to([203, 0, 113, 1], 60);
    assert_eq!(net.clients[0].send_ip(net.now, &up), Ok(()));
    // IPv6 to a global address goes up; to a link-local one it stays a Data event.
    let mut v6 = vec![0x60; 40];
    v6[24..26].copy_from_slice(&[0x20, 0x01]);
    assert_eq!(net.clients[0].send_ip(net.now, &v6), Ok(()));
    let mut ll = vec![0x60; 40];
    ll[24..26].copy_from_slice(&[0xfe, 0x80]);
    assert!(net.clients[0].send(net.now, Protocol::IPV6, &ll));
    let now = net.now;
    assert_eq!(net.server.send_ip(now, &down), Ok(()));
    // IPv6 down the session whose IPv6CP identifier the destination carries.
    let mut v6down = vec![0x60; 40];
    v6down[32..40].copy_from_slice(&n.local_interface_id.unwrap());
    assert_eq!(net.server.send_ip(now, &v6down), Ok(()));
    while net.exchange() {}
    let mut got = Vec::new();
    net.server.take_ip(&mut got);
    assert_eq!(got, vec![up, v6]);
    assert!(net.server_events.iter().any(|e| matches!(e,
        ServerEvent::Data { protocol: Protocol::IPV6, payload, .. } if *payload == ll)));
    assert!(!net.server_events.iter().any(|e| matches!(
        e,
        ServerEvent::Data {
            protocol: Protocol::IPV4,
            ..
        }
    )));
    got.clear();
    net.clients[0].take_ip(&mut got);
    assert_eq!(got, vec![down, v6down]);

    // Refused by reason: nobody has the address; above the client's MRU (1492); not IP.
    assert_eq!(
        net.server.send_ip(now, &to([198, 51, 100, 11], 100)),
        Err(RelayDrop::NoRoute)
    );
    assert_eq!(
        net.server.send_ip(now, &to([198, 51, 100, 10], 1493)),
        Err(RelayDrop::TooBig)
    );
    assert_eq!(
        net.clients[0].send_ip(now, &to([203, 0, 113, 1], 1455)),
        Err(RelayDrop::TooBig),
        "above the AC's MRU 1454"
    );
    assert_eq!(
        net.server.send_ip(now, &[0x45; 10]),
        Err(RelayDrop::Malformed)
    );
    assert_eq!(net.clients[0].send_ip(now, &[]), Err(RelayDrop::Malformed));
}

#[test]
fn loopback_chap_and_server_side_padt() {
    let mut net = Net::one(
        server_cfg(vec![AuthMethod::ChapMd5]),
        client_cfg(2, "bob", "secret-b"),
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    assert_eq!(
        net.clients[0].session_info().unwrap().negotiated.auth,
        Some(AuthMethod::ChapMd5)
    );
    let key = net.server.sessions().next().unwrap();
    net.server.close(net.now, key);
    assert!(net.run_until(10, |n| !n.client_down(0).is_empty()));
    assert_eq!(net.server_down(), vec![DownReason::LocalClose]);
    assert_eq!(net.client_down(0), vec![DownReason::PeerPadt]);
    assert_eq!(net.server.stats.padt_tx, 1);
    assert_eq!(net.server.stats.ended.get(DownReason::LocalClose), 1);
}

#[test]
fn lossy_link_still_comes_up_through_retries() {
    // Not 2: with strict request/reply alternation (PADI/PADO) every reply would be the
    // dropped one, a livelock no retry scheme can beat (see the test below).
    for (n, auth) in (3usize..=16).flat_map(|n| [(n, AuthMethod::ChapMd5), (n, AuthMethod::Pap)]) {
        let mut net = Net::one(server_cfg(vec![auth]), client_cfg(3, "alice", "secret-a"));
        net.drop_every = n;
        net.start_all();
        let up = net.run_until(120, Net::all_up);
        assert!(
            up,
            "drop every {n}th: not up at {:?}: client {:?} {:?}, server {:?} {:?} events {:?}",
            net.now,
            net.clients[0].state(),
            net.clients[0].stats,
            net.server.stats,
            net.server_events,
            net.client_events
        );
        assert!(net.dropped > 0);
        let retries = net.server.stats.retransmits + net.clients[0].stats.retransmits;
        assert!(retries > 0, "drop every {n}th: no retries counted");
        assert_eq!(net.server.session_count(), 1, "drop every {n}th");
    }
}

#[test]
fn dropping_every_second_frame_starves_discovery() {
    let mut net = Net::one(
        server_cfg(vec![AuthMethod::Pap]),
        client_cfg(3, "alice", "secret-a"),
    );
    net.drop_every = 2;
    net.start_all();
    assert!(net.run_until(120, |n| !n.client_down(0).is_empty()));
    assert_eq!(net.client_down(0), vec![DownReason::DiscoveryTimeout]);
    assert_eq!(net.server.stats.pado_tx, 5);
    assert_eq!(net.clients[0].stats.pado_rx, 0);
}

#[test]
fn ipv6cp_protocol_rejected_session_up_on_ipv4_alone() {
    // The AC does not run IPv6CP: it Protocol-Rejects the client's, which stops that NCP;
    // the session is up with IPCP alone and IPv6 datagrams are refused locally.
    let mut s = server_cfg(vec![AuthMethod::Pap]);
    s.ipv6cp = false;
    let mut net = Net::one(s, client_cfg(16, "alice", "secret-a"));
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    let n = net.clients[0].session_info().unwrap().negotiated;
    assert!(n.local_ipv4.is_some());
    assert_eq!(n.local_interface_id, None);
    assert!(!net.clients[0].send(net.now, Protocol::IPV6, &[0x60; 40]));
    assert!(net.clients[0].send(net.now, Protocol::IPV4, &ipv4_packet(3)));
    let h = &net.server.stats.hostile;
    assert!(
        h.get(HostileReason::Ppp(
            emulate::ppp::link::Anomaly::UnknownProtocol
        )) >= 1
    );
}

#[test]
fn many_sessions_at_once() {
    let clients: Vec<_> = (0..60u8)
        .map(|i| {
            let (u, p) = if i % 2 == 0 {
                ("alice", "secret-a")
            } else {
                ("bob", "secret-b")
            };
            let mut c = client_cfg(i, u, p);
            if i % 3 == 0 {
                c.auth = vec![AuthMethod::Pap];
            }
            c
        })
        .collect();
    let mut net = Net::new(
        server_cfg(vec![AuthMethod::ChapMd5, AuthMethod::Pap]),
        clients,
    );
    net.start_all();
    assert!(net.run_until(30, Net::all_up));
    let mut ids: Vec<u16> = net.server.sessions().map(|k| k.session_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 60);
    let mut addrs: Vec<_> = net
        .clients
        .iter()
        .map(|c| c.session_info().unwrap().negotiated.local_ipv4.unwrap())
        .collect();
    addrs.sort();
    addrs.dedup();
    assert_eq!(addrs.len(), 60);
    assert_eq!(net.server.stats.sessions_up_total, 60);
    // Every third client only does PAP: the server was Nak'd to its second choice.
    assert_eq!(
        net.clients[3].session_info().unwrap().negotiated.auth,
        Some(AuthMethod::Pap)
    );
    assert_eq!(
        net.clients[1].session_info().unwrap().negotiated.auth,
        Some(AuthMethod::ChapMd5)
    );
    // Echo keepalives run for a while without taking anything down.
    net.advance(60);
    assert!(net.all_up());
    assert!(net.server_down().is_empty());
}

#[test]
fn pap_authentication_failure() {
    let mut c = client_cfg(4, "alice", "wrong");
    c.auth = vec![AuthMethod::Pap];
    let mut net = Net::one(server_cfg(vec![AuthMethod::Pap]), c);
    net.start_all();
    assert!(net.run_until(30, |n| !n.client_down(0).is_empty()));
    assert_eq!(net.client_down(0), vec![DownReason::AuthFailed]);
    assert!(net.run_until(30, |n| !n.server_down().is_empty()));
    assert_eq!(net.server.stats.ended.get(DownReason::AuthFailed), 1);
    assert_eq!(net.server.stats.sessions_up_total, 0);
    assert_eq!(net.server.session_count(), 0);
}

#[test]
fn chap_authentication_failure_and_unknown_user() {
    for (user, pass) in [("bob", "nope"), ("mallory", "secret-b")] {
        let mut net = Net::one(
            server_cfg(vec![AuthMethod::ChapMd5]),
            client_cfg(5, user, pass),
        );
        net.start_all();
        assert!(net.run_until(30, |n| !n.client_down(0).is_empty()
            && !n.server_down().is_empty()));
        assert_eq!(net.client_down(0), vec![DownReason::AuthFailed], "{user}");
        assert_eq!(
            net.server.stats.ended.get(DownReason::AuthFailed),
            1,
            "{user}"
        );
        // Both ends finish the Terminate exchange and send a PADT; each PADT reaches a
        // session that has just ended, which is normal, not hostile input.
        net.advance(10);
        let (s, c) = (&net.server.stats, &net.clients[0].stats);
        assert_eq!((s.padt_tx, c.padt_tx), (1, 1), "{user}");
        assert_eq!((s.after_end, c.after_end), (1, 1), "{user}");
        assert_eq!(s.hostile.total(), 0, "{user}: {}", s.hostile);
        assert_eq!(c.hostile.total(), 0, "{user}: {}", c.hostile);
    }
}

/// Issue #19 row 17: a subscriber with a wrong password that hangs up at once (PADT right after
/// the PAP Nak / CHAP Failure, as a scripted or impatient peer does) or goes silent: the server
/// counts the session as ended by `AuthFailed`, not `PeerPadt`, and counts no hostile input.
#[test]
fn wrong_password_ends_as_auth_failed_whatever_the_peer_does_next() {
    for auth in [AuthMethod::Pap, AuthMethod::ChapMd5] {
        for hang_up in [true, false] {
            let what = format!("{auth:?}, hang up with PADT: {hang_up}");
            let mut c = client_cfg(4, "alice", "wrong");
            c.auth = vec![auth];
            let client_mac = c.mac;
            let mut net = Net::one(server_cfg(vec![auth]), c);
            // The verdict: PAP Authenticate-Nak (code 3) / CHAP Failure (code 4).
            let (proto, code) = match auth {
                AuthMethod::Pap => ([0xc0, 0x23], 3),
                AuthMethod::ChapMd5 => ([0xc2, 0x23], 4),
            };
            let is_verdict = move |f: &Vec<u8>| f.len() > 22 && f[20..22] == proto && f[22] == code;
            net.start_all();
            // Until the client has the verdict; its answer (a Terminate-Request) is still queued.
            assert!(
                net.run_until(30, |n| n.server_log.iter().any(is_verdict)),
                "{what}: no Nak/Failure sent"
            );
            assert_eq!(net.server.stats.ended.total(), 0, "{what}");
            // The server's LCP Terminate-Request went with it.
            let verdict = net.server_log.iter().position(is_verdict).unwrap();
            assert!(
                net.server_log[verdict..]
                    .iter()
                    .any(|f| f.len() > 22 && f[20..22] == [0xc0, 0x21] && f[22] == 5),
                "{what}: no Terminate-Request after the verdict"
            );
            let sid = net.server.sessions().next().expect("session").session_id;
            net.cut_up = true;
            net.clients[0].take_transmit();
            if hang_up {
                let mut padt = craft(ac_mac(), PppoeCode::Padt, sid, &[]);
                padt[6..12].copy_from_slice(&client_mac.0);
                let now = net.now;
                assert!(net.server.handle_frame(now, &padt));
                net.collect();
            } else {
                // Silent: the server's Terminate-Requests run out (2 × 3 s), then it ends.
                assert!(net.run_until(30, |n| !n.server_down().is_empty()), "{what}");
            }
            assert_eq!(net.server_down(), vec![DownReason::AuthFailed], "{what}");
            let st = &net.server.stats;
            assert_eq!(st.ended.get(DownReason::AuthFailed), 1, "{what}");
            assert_eq!(st.ended.get(DownReason::PeerPadt), 0, "{what}");
            assert_eq!(st.hostile.total(), 0, "{what}: {}", st.hostile);
            assert_eq!(net.server.session_count(), 0, "{what}");
            // A PADT from the client is not answered with one; a silent client gets one.
            assert_eq!(st.padt_tx, u64::from(!hang_up), "{what}");
        }
    }
}

/// Issue #19 row 17, at the stop: the owner stops (Ctrl-C, `--duration`) while a session whose
/// login failed is still closing and its peer has gone silent. [`Server::abort`] ends it at
/// once with a PADT under `AuthFailed` (`wirerate pppoe server` left it open and uncounted:
/// no PADT, no `down` line, not in the totals); an ordinary open session ends `LocalClose`.
#[test]
fn abort_ends_a_session_at_once_with_a_padt_under_its_failure() {
    for auth in [AuthMethod::Pap, AuthMethod::ChapMd5] {
        let mut c = client_cfg(4, "alice", "wrong");
        c.auth = vec![auth];
        let mut net = Net::one(server_cfg(vec![auth]), c);
        let (proto, code) = match auth {
            AuthMethod::Pap => ([0xc0, 0x23], 3),
            AuthMethod::ChapMd5 => ([0xc2, 0x23], 4),
        };
        let is_verdict = move |f: &Vec<u8>| f.len() > 22 && f[20..22] == proto && f[22] == code;
        net.start_all();
        assert!(net.run_until(30, |n| n.server_log.iter().any(is_verdict)));
        net.cut_up = true;
        let key = net.server.sessions().next().expect("session");
        let now = net.now;
        net.server.abort(now, key);
        net.collect();
        let st = &net.server.stats;
        assert_eq!(net.server_down(), vec![DownReason::AuthFailed], "{auth:?}");
        assert_eq!(st.ended.get(DownReason::AuthFailed), 1, "{auth:?}");
        assert_eq!(st.padt_tx, 1, "{auth:?}");
        assert_eq!(net.server.session_count(), 0, "{auth:?}");
        let padt = net.server.take_transmit();
        assert!(
            padt.iter().any(|f| pppoe_code(f) == Some(PppoeCode::Padt)),
            "{auth:?}: no PADT sent"
        );
    }
    let mut net = Net::one(
        server_cfg(vec![AuthMethod::Pap]),
        client_cfg(1, "alice", "secret-a"),
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    let key = net.server.sessions().next().unwrap();
    let now = net.now;
    net.server.abort(now, key);
    net.collect();
    assert_eq!(net.server_down(), vec![DownReason::LocalClose]);
    assert_eq!(net.server.session_count(), 0);
    assert_eq!(net.server.stats.sessions_up, 0);
}

#[test]
fn no_common_auth_protocol_is_refused() {
    let mut c = client_cfg(6, "alice", "secret-a");
    c.auth = vec![AuthMethod::Pap];
    let mut net = Net::one(server_cfg(vec![AuthMethod::ChapMd5]), c);
    net.start_all();
    assert!(net.run_until(60, |n| !n.server_down().is_empty()
        && !n.client_down(0).is_empty()));
    assert_eq!(net.server_down(), vec![DownReason::AuthRefused]);
    assert_eq!(net.client_down(0), vec![DownReason::PeerPadt]);
}

#[test]
fn lost_echo_replies_take_the_session_down() {
    let mut s = server_cfg(vec![AuthMethod::Pap]);
    s.echo_interval = Nanos(5 * SEC);
    s.echo_failures = 3;
    let mut c = client_cfg(7, "alice", "secret-a");
    c.echo_interval = Nanos(0);
    let mut net = Net::one(s, c);
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    // Replies flow: nothing happens for a minute.
    net.advance(60);
    assert!(net.server_down().is_empty());
    // The subscriber goes silent.
    net.cut_up = true;
    let t0 = net.now;
    assert!(net.run_until(60, |n| !n.server_down().is_empty()));
    assert_eq!(net.server_down(), vec![DownReason::EchoTimeout]);
    assert_eq!(net.server.stats.ended.get(DownReason::EchoTimeout), 1);
    // 3 unanswered requests 5 s apart, then the 4th tick declares it dead.
    assert!(net.now.0 - t0.0 <= 20 * SEC);
    // The server told the client with a PADT.
    assert_eq!(net.server.stats.padt_tx, 1);
    assert_eq!(net.client_down(0), vec![DownReason::PeerPadt]);

    // The client side detects a dead AC the same way.
    let mut c = client_cfg(8, "alice", "secret-a");
    c.echo_interval = Nanos(2 * SEC);
    c.echo_failures = 2;
    let mut s = server_cfg(vec![AuthMethod::Pap]);
    s.echo_interval = Nanos(0);
    let mut net = Net::one(s, c);
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    net.cut_down = true;
    assert!(net.run_until(60, |n| !n.client_down(0).is_empty()));
    assert_eq!(net.client_down(0), vec![DownReason::EchoTimeout]);
}

#[test]
fn lcp_timeout_when_the_ac_never_answers_lcp() {
    let mut c = client_cfg(9, "alice", "secret-a");
    c.fsm.max_configure = 4;
    let mut net = Net::one(server_cfg(vec![AuthMethod::Pap]), c);
    net.start_all();
    // Let discovery through, then cut the AC's session frames.
    assert!(net.run_until(5, |n| *n.clients[0].state() == ClientState::Session));
    net.cut_down = true;
    assert!(net.run_until(60, |n| !n.client_down(0).is_empty()));
    assert_eq!(net.client_down(0), vec![DownReason::LcpTimeout]);
}

#[test]
fn max_payload_rfc4638() {
    // Both ends want 1500: the tag is echoed and LCP negotiates MRU 1500 both ways.
    let mut s = server_cfg(vec![AuthMethod::Pap]);
    s.max_payload = 1500;
    s.mru = 1500;
    let mut c = client_cfg(10, "alice", "secret-a");
    c.max_payload = Some(1500);
    c.mru = 1500;
    let mut net = Net::one(s.clone(), c.clone());
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    let n = net.clients[0].session_info().unwrap().negotiated;
    assert_eq!((n.our_mru, n.peer_mru), (1500, 1500));
    let pado = net
        .server_log
        .iter()
        .find(|f| pppoe_code(f) == Some(PppoeCode::Pado))
        .unwrap();
    assert_eq!(
        tag(pado, TagType::PppMaxPayload),
        Some(1500u16.to_be_bytes().to_vec())
    );

    // An AC without RFC 4638: no tag, and the client's 1500 is Nak'd down to 1492.
    s.max_payload = 1492;
    let mut net = Net::one(s, c);
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    let n = net.clients[0].session_info().unwrap().negotiated;
    assert_eq!(n.our_mru, 1492);
    assert_eq!(n.peer_mru, 1492);
    let pado = net
        .server_log
        .iter()
        .find(|f| pppoe_code(f) == Some(PppoeCode::Pado))
        .unwrap();
    assert_eq!(tag(pado, TagType::PppMaxPayload), None);

    // A client asking MRU 1500 without the extension is Nak'd to 1492 by the AC (Nak path
    // from server to client), and the AC's MRU below the default is accepted.
    let mut c = client_cfg(11, "alice", "secret-a");
    c.mru = 1500;
    let mut net = Net::one(server_cfg(vec![AuthMethod::Pap]), c);
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    assert_eq!(
        net.clients[0].session_info().unwrap().negotiated.our_mru,
        1492
    );
}

#[test]
fn service_names_and_discovery_backoff() {
    let mut s = server_cfg(vec![AuthMethod::Pap]);
    s.service_names = vec!["isp".into()];
    // Asking for a service nobody offers: no PADO; PADIs with doubling timeouts, then give up.
    let mut c = client_cfg(12, "alice", "secret-a");
    c.service_name = "other".into();
    c.discovery_attempts = 4;
    let mut net = Net::one(s.clone(), c);
    net.start_all();
    assert!(net.run_until(100, |n| !n.client_down(0).is_empty()));
    assert_eq!(net.client_down(0), vec![DownReason::DiscoveryTimeout]);
    assert_eq!(net.clients[0].stats.padi_tx, 4);
    assert_eq!(net.server.stats.padi_unserved, 4);
    assert_eq!(net.server.stats.pado_tx, 0);
    // 1 + 2 + 4 + 8 s.
    assert_eq!(net.now, Nanos(15 * SEC));

    // "isp" and "" (any) are both served.
    for name in ["isp", ""] {
        let mut c = client_cfg(13, "alice", "secret-a");
        c.service_name = name.into();
        let mut net = Net::one(s.clone(), c);
        net.start_all();
        assert!(net.run_until(10, Net::all_up), "service {name:?}");
    }
}

#[test]
fn session_limit_refused_with_ac_system_error() {
    let mut s = server_cfg(vec![AuthMethod::Pap]);
    s.max_sessions = 1;
    let mut net = Net::new(
        s,
        vec![
            client_cfg(14, "alice", "secret-a"),
            client_cfg(15, "bob", "secret-b"),
        ],
    );
    net.clients[0].start(net.now);
    assert!(net.run_until(10, |n| n.clients[0].is_up()));
    net.clients[1].start(net.now);
    assert!(net.run_until(10, |n| !n.client_down(1).is_empty()));
    assert_eq!(net.client_down(1), vec![DownReason::AcSystemError]);
    assert_eq!(net.server.stats.pads_refused, 1);
    assert!(net.clients[0].is_up());
}

#[test]
fn pado_echoes_host_uniq_relay_id_and_carries_cookie() {
    let mut s = Server::new(server_cfg(vec![AuthMethod::Pap]));
    let padi = craft(
        MacAddr::BROADCAST,
        PppoeCode::Padi,
        0,
        &[
            (TagType::ServiceName, b""),
            (TagType::HostUniq, b"hu-1"),
            (TagType::RelaySessionId, b"relay-7"),
        ],
    );
    assert!(s.handle_frame(Nanos(0), &padi));
    let out = s.take_transmit();
    assert_eq!(out.len(), 1);
    let pado = &out[0];
    assert_eq!(pppoe_code(pado), Some(PppoeCode::Pado));
    assert_eq!(&pado[..6], &CLIENT.0);
    assert_eq!(tag(pado, TagType::HostUniq), Some(b"hu-1".to_vec()));
    assert_eq!(
        tag(pado, TagType::RelaySessionId),
        Some(b"relay-7".to_vec())
    );
    assert_eq!(tag(pado, TagType::AcName), Some(b"wirerate-ac".to_vec()));
    assert_eq!(tag(pado, TagType::ServiceName), Some(Vec::new()));
    let cookie = tag(pado, TagType::AcCookie).unwrap();
    assert_eq!(cookie, s.cookie(CLIENT).to_vec());
    assert_eq!(s.session_count(), 0, "a PADI creates no state");

    // PADR with the cookie: PADS with a fresh session id, tags echoed.
    let padr = craft(
        ac_mac(),
        PppoeCode::Padr,
        0,
        &[
            (TagType::ServiceName, b""),
            (TagType::HostUniq, b"hu-1"),
            (TagType::RelaySessionId, b"relay-7"),
            (TagType::AcCookie, &cookie),
        ],
    );
    s.handle_frame(Nanos(1), &padr);
    let out = s.take_transmit();
    let pads = &out[0];
    assert_eq!(pppoe_code(pads), Some(PppoeCode::Pads));
    let sid = PppoeHeader::new_checked(&pads[14..]).unwrap().session_id();
    assert_ne!(sid, 0);
    assert_eq!(tag(pads, TagType::HostUniq), Some(b"hu-1".to_vec()));
    assert_eq!(
        tag(pads, TagType::RelaySessionId),
        Some(b"relay-7".to_vec())
    );
    // LCP Configure-Request follows at once.
    assert_eq!(pppoe_code(&out[1]), Some(PppoeCode::Session));
    assert_eq!(s.session_count(), 1);
    // The same PADR again (PADS lost): same PADS, no second session.
    s.handle_frame(Nanos(2), &padr);
    let again = s.take_transmit();
    assert_eq!(again, vec![pads.clone()]);
    assert_eq!(s.session_count(), 1);
    assert_eq!(s.stats.padr_repeated, 1);

    // PADT from the client ends it without a PADT back.
    s.handle_frame(Nanos(3), &craft(ac_mac(), PppoeCode::Padt, sid, &[]));
    assert_eq!(s.session_count(), 0);
    assert!(s.take_transmit().is_empty());
    assert_eq!(
        s.take_events().last(),
        Some(&ServerEvent::SessionDown {
            key: SessionKey {
                client: CLIENT,
                session_id: sid
            },
            reason: DownReason::PeerPadt
        })
    );
}

#[test]
fn cookie_mismatch_and_unserved_padr_are_refused() {
    let mut cfg = server_cfg(vec![AuthMethod::Pap]);
    cfg.service_names = vec!["isp".into()];
    let mut s = Server::new(cfg);
    let bad = craft(
        ac_mac(),
        PppoeCode::Padr,
        0,
        &[
            (TagType::ServiceName, b"isp"),
            (TagType::AcCookie, b"forged!!"),
        ],
    );
    s.handle_frame(Nanos(0), &bad);
    let none = craft(
        ac_mac(),
        PppoeCode::Padr,
        0,
        &[(TagType::ServiceName, b"isp")],
    );
    s.handle_frame(Nanos(0), &none);
    // Another client's cookie does not work for us either.
    let other = s.cookie(MacAddr([2, 9, 9, 9, 9, 9]));
    let stolen = craft(
        ac_mac(),
        PppoeCode::Padr,
        0,
        &[(TagType::ServiceName, b"isp"), (TagType::AcCookie, &other)],
    );
    s.handle_frame(Nanos(0), &stolen);
    assert!(s.take_transmit().is_empty());
    assert_eq!(s.session_count(), 0);
    assert_eq!(s.stats.hostile.get(HostileReason::BadCookie), 3);

    let cookie = s.cookie(CLIENT);
    let unserved = craft(
        ac_mac(),
        PppoeCode::Padr,
        0,
        &[(TagType::ServiceName, b"tv"), (TagType::AcCookie, &cookie)],
    );
    s.handle_frame(Nanos(0), &unserved);
    let out = s.take_transmit();
    assert_eq!(out.len(), 1);
    assert_eq!(pppoe_code(&out[0]), Some(PppoeCode::Pads));
    assert_eq!(
        PppoeHeader::new_checked(&out[0][14..])
            .unwrap()
            .session_id(),
        0
    );
    assert!(tag(&out[0], TagType::ServiceNameError).is_some());
    assert_eq!(s.stats.pads_refused, 1);
    assert_eq!(s.session_count(), 0);
}
