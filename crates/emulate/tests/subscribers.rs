//! The access concentrator with a subscriber table (issue 14 item 4), through frames: our
//! clients and our server back to back with a simulated clock. Each subscriber logs in with
//! its own credentials and gets the table's address — fixed, from the pool, or none (IPv6
//! only) — a wrong password is refused, a second login replaces the first; and a fleet of
//! hundreds of clients comes up with the right address each.

mod common;

use core::net::Ipv4Addr;
use std::sync::Arc;

use emulate::ppp::{AuthMethod, DownReason};
use emulate::pppoe::fleet::{ClientFleet, FleetConfig};
use emulate::pppoe::server::{Server, ServerConfig, ServerEvent};
use emulate::pppoe::subscribers::{Ipv4Assign, SubscriberTable};
use emulate::pppoe::ConfigError;
use emulate::util::Entropy;
use emulate::Nanos;
use wire::ppp::Protocol;

use common::*;

const TABLE: &str = "\
# user  password   address
alice   secret-a   ipv4=192.0.2.10
bob     secret-b
carol   secret-c   ipv4=none
";

fn table_server(auth: Vec<AuthMethod>, table: &str) -> ServerConfig {
    ServerConfig {
        subscribers: Some(Arc::new(SubscriberTable::parse(table.as_bytes()).unwrap())),
        credentials: Vec::new(),
        ..server_cfg(auth)
    }
}

/// The IPv4 address in the server's IPCP Configure-Nak frames (what it told the client to
/// use), read from the bytes: Ethernet 14, PPPoE 6, PPP protocol 2 (0x8021), code 3 (Nak), …
fn naked_addresses(log: &[Vec<u8>]) -> Vec<Ipv4Addr> {
    log.iter()
        .filter(|f| f.len() >= 30 && f[12..14] == [0x88, 0x64])
        .filter(|f| f[20..22] == [0x80, 0x21] && f[22] == 3)
        .filter_map(|f| {
            let opts = &f[26..];
            let i = opts.windows(2).position(|w| w == [3, 6])?;
            let a = opts.get(i + 2..i + 6)?;
            Some(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
        })
        .collect()
}

fn each_subscriber_gets_the_table_address(auth: AuthMethod) {
    let mut net = Net::new(
        table_server(vec![auth], TABLE),
        vec![
            client_cfg(1, "alice", "secret-a"),
            client_cfg(2, "bob", "secret-b"),
            client_cfg(3, "carol", "secret-c"),
            client_cfg(4, "bob", "not-bobs"),
        ],
    );
    net.start_all();
    let three_up = |n: &Net| (0..3).all(|i| n.clients[i].is_up()) && !n.client_down(3).is_empty();
    assert!(net.run_until(20, three_up), "sessions did not settle");
    let addr = |i: usize| {
        let n = net.clients[i].session_info().unwrap().negotiated;
        assert_eq!(n.auth, Some(auth));
        n.local_ipv4
    };
    assert_eq!(addr(0), Some(Ipv4Addr::new(192, 0, 2, 10)), "alice: fixed");
    assert_eq!(addr(1), Some(Ipv4Addr::new(198, 51, 100, 10)), "bob: pool");
    assert_eq!(addr(2), None, "carol: IPv6 only");
    let carol = net.clients[2].session_info().unwrap().negotiated;
    assert!(carol.local_interface_id.is_some(), "carol is up on IPv6CP");
    assert_eq!(net.client_down(3), vec![DownReason::AuthFailed]);
    // The bytes on the wire: the server's IPCP Naks carried exactly these two addresses.
    let mut naked = naked_addresses(&net.server_log);
    naked.sort();
    naked.dedup();
    assert_eq!(
        naked,
        vec![
            Ipv4Addr::new(192, 0, 2, 10),
            Ipv4Addr::new(198, 51, 100, 10)
        ]
    );
    // Carol's IPCP got a Protocol-Reject (LCP code 8 naming 0x8021).
    assert!(net.server_log.iter().any(|f| f.len() > 28
        && f[20..22] == [0xc0, 0x21]
        && f[22] == 8
        && f[26..28] == [0x80, 0x21]));
    let users: Vec<_> = net
        .server_events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::SessionUp { user, .. } => user.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(users.len(), 3);
    for u in ["alice", "bob", "carol"] {
        assert!(users.iter().any(|x| x == u), "{u} up: {users:?}");
    }
    assert_eq!(net.server_down(), vec![DownReason::AuthFailed]);
    // Refusing carol's IPCP was the table's choice, not hostile input.
    assert_eq!(
        net.server.stats.hostile.total(),
        0,
        "{:?}",
        net.server.stats.hostile
    );
    assert_eq!(net.server.stats.replaced, 0);
    // Data goes to the fixed address's session.
    let mut pkt = ipv4_packet(7);
    pkt[16..20].copy_from_slice(&[192, 0, 2, 10]);
    net.server.enable_ip_relay();
    net.server.send_ip(net.now, &pkt).expect("routed to alice");
    while net.exchange() {}
    assert!(net.client_events.iter().any(|(i, e)| *i == 0
        && matches!(e, emulate::pppoe::client::ClientEvent::Data { protocol, .. } if *protocol == Protocol::IPV4)));
}

#[test]
fn pap_subscribers_get_fixed_pool_or_no_ipv4_and_a_wrong_password_is_refused() {
    each_subscriber_gets_the_table_address(AuthMethod::Pap);
}

#[test]
fn chap_subscribers_get_fixed_pool_or_no_ipv4_and_a_wrong_password_is_refused() {
    each_subscriber_gets_the_table_address(AuthMethod::ChapMd5);
}

#[test]
fn a_second_login_replaces_the_first_and_takes_over_the_fixed_address() {
    let mut net = Net::new(
        table_server(vec![AuthMethod::ChapMd5], TABLE),
        vec![
            client_cfg(1, "alice", "secret-a"),
            client_cfg(2, "alice", "secret-a"),
        ],
    );
    net.clients[0].start(net.now);
    assert!(net.run_until(10, |n| n.clients[0].is_up()));
    net.clients[1].start(net.now);
    assert!(net.run_until(10, |n| n.clients[1].is_up() && !n.clients[0].is_up()));
    assert_eq!(net.client_down(0), vec![DownReason::PeerPadt]);
    assert_eq!(
        net.clients[1].session_info().unwrap().negotiated.local_ipv4,
        Some(Ipv4Addr::new(192, 0, 2, 10))
    );
    assert_eq!(net.server.stats.replaced, 1);
    assert_eq!(net.server.stats.sessions_up, 1);
}

#[test]
fn without_a_table_many_sessions_share_one_login() {
    let mut net = Net::new(
        server_cfg(vec![AuthMethod::Pap]),
        vec![
            client_cfg(1, "alice", "secret-a"),
            client_cfg(2, "alice", "secret-a"),
        ],
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    assert_eq!(net.server.stats.replaced, 0);
}

#[test]
fn a_fixed_address_inside_the_pool_is_never_handed_to_another_subscriber() {
    let table = "a pa ipv4=198.51.100.10\nb pb\n";
    let mut net = Net::new(
        table_server(vec![AuthMethod::Pap], table),
        vec![client_cfg(1, "b", "pb"), client_cfg(2, "a", "pa")],
    );
    net.start_all();
    assert!(net.run_until(10, Net::all_up));
    let addr = |i: usize| net.clients[i].session_info().unwrap().negotiated.local_ipv4;
    assert_eq!(addr(0), Some(Ipv4Addr::new(198, 51, 100, 11)));
    assert_eq!(addr(1), Some(Ipv4Addr::new(198, 51, 100, 10)));
}

#[test]
fn a_fixed_address_equal_to_the_gateway_is_a_config_error_naming_the_line() {
    let cfg = table_server(vec![AuthMethod::Pap], "a p\nb p ipv4=198.51.100.1\n");
    match Server::try_new(cfg) {
        Err(ConfigError::Subscriber(e)) => {
            assert_eq!(e.line, 2);
            assert!(e.to_string().contains("gateway"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

/// Hundreds of sessions from one fleet against one server, in memory: every session comes up
/// as its own subscriber with the table's address, and the statistics count them all.
#[test]
fn a_fleet_of_600_brings_every_subscriber_up_with_its_table_address() {
    let mut text = String::new();
    for i in 0..600u32 {
        let ipv4 = match i {
            0..=199 => format!("ipv4=192.0.2.{}", i + 1),
            200..=399 => "ipv4=pool".to_string(),
            _ => "ipv4=none".to_string(),
        };
        text.push_str(&format!("user{i} pw{i} {ipv4}\n"));
    }
    let table = SubscriberTable::parse(text.as_bytes()).unwrap();
    let logins = table.credentials();
    let mut server = Server::new(ServerConfig {
        subscribers: Some(Arc::new(table.clone())),
        auth: vec![AuthMethod::ChapMd5],
        pool_size: 240,
        entropy: Entropy::Seeded(3),
        ..ServerConfig::default()
    });
    let mut fleet = ClientFleet::new(FleetConfig {
        logins,
        sessions: 600,
        start_rate: 2000,
        client: emulate::pppoe::client::ClientConfig {
            entropy: Entropy::Seeded(9),
            ..Default::default()
        },
        ..FleetConfig::default()
    });
    let mut now = Nanos(0);
    fleet.start(now);
    for _ in 0..100_000 {
        if fleet.settled() {
            break;
        }
        let mut moved = false;
        for f in fleet.take_transmit() {
            moved = true;
            server.handle_frame(now, &f);
        }
        for f in server.take_transmit() {
            moved = true;
            fleet.handle_frame(now, &f);
        }
        if !moved {
            now = [fleet.next_deadline(), server.next_deadline()]
                .into_iter()
                .flatten()
                .min()
                .expect("something to wait for");
            fleet.poll(now);
            server.poll(now);
        } else {
            now = Nanos(now.0 + 10_000);
        }
    }
    let st = fleet.setup_stats();
    assert_eq!((st.came_up, st.up, st.pending), (600, 600, 0), "{st:?}");
    assert_eq!(st.failed.total(), 0);
    assert_eq!(st.peak_up, 600);
    assert!(st.min <= st.mean && st.mean <= st.p99 && st.p99 <= st.max);
    assert_eq!(server.stats.sessions_up, 600);
    let mut pool_given = Vec::new();
    for o in fleet.outcomes() {
        let s = table.get(o.user).unwrap();
        let got = o.info.unwrap().negotiated.local_ipv4;
        match s.ipv4 {
            Ipv4Assign::Fixed(a) => assert_eq!(got, Some(a), "{}", o.user),
            Ipv4Assign::None => assert_eq!(got, None, "{}", o.user),
            Ipv4Assign::Pool => pool_given.push(got.expect(o.user)),
        }
    }
    pool_given.sort();
    pool_given.dedup();
    assert_eq!(pool_given.len(), 200, "200 distinct pool addresses");
    assert!(pool_given.iter().all(|a| a.octets()[..3] == [198, 51, 100]));
}

/// 5,000 subscribers of one table against one AC, in memory, addresses from the benchmarking
/// range: 2,000 fixed from 198.18.1.1 (inside the pool's span, so the pool skips them),
/// 3,000 from the pool starting at 198.18.0.1 (past .255 of the first /24), each with its own
/// address; the AC counts 5,000 up and sessions end with the fleet's close.
#[test]
fn a_fleet_of_5000_from_the_benchmarking_range() {
    let mut text = String::new();
    let fixed = |i: u32| Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 1, 0)) + i);
    for i in 0..5000u32 {
        let ipv4 = if i < 2000 {
            format!("ipv4={}", fixed(i + 1))
        } else {
            "ipv4=pool".to_string()
        };
        text.push_str(&format!("user{i} pw{i} {ipv4}\n"));
    }
    let table = SubscriberTable::parse(text.as_bytes()).unwrap();
    let cfg = ServerConfig {
        subscribers: Some(Arc::new(table.clone())),
        auth: vec![AuthMethod::Pap],
        pool_first: Ipv4Addr::new(198, 18, 0, 1),
        pool_size: 60_000,
        pado_rate: 0,
        entropy: Entropy::Seeded(4),
        ..ServerConfig::default()
    };
    assert_eq!(cfg.check(), Ok(()));
    let mut server = Server::new(cfg);
    let mut fleet = ClientFleet::new(FleetConfig {
        logins: table.credentials(),
        sessions: 5000,
        start_rate: 0,
        client: emulate::pppoe::client::ClientConfig {
            entropy: Entropy::Seeded(5),
            ..Default::default()
        },
        ..FleetConfig::default()
    });
    let mut now = Nanos(0);
    fleet.start(now);
    for _ in 0..1_000_000 {
        if fleet.settled() {
            break;
        }
        let mut moved = false;
        for f in fleet.take_transmit() {
            moved = true;
            server.handle_frame(now, &f);
        }
        for f in server.take_transmit() {
            moved = true;
            fleet.handle_frame(now, &f);
        }
        if !moved {
            now = [fleet.next_deadline(), server.next_deadline()]
                .into_iter()
                .flatten()
                .min()
                .expect("something to wait for");
            fleet.poll(now);
            server.poll(now);
        } else {
            now = Nanos(now.0 + 1_000);
        }
    }
    let st = fleet.setup_stats();
    assert_eq!((st.came_up, st.up, st.pending), (5000, 5000, 0), "{st:?}");
    assert_eq!(st.failed.total(), 0);
    assert!(st.min <= st.p50 && st.p50 <= st.p90 && st.p90 <= st.p99 && st.p99 <= st.max);
    assert_eq!(server.stats.sessions_up, 5000);
    let mut pool_given = Vec::new();
    for o in fleet.outcomes() {
        let got = o.info.unwrap().negotiated.local_ipv4.expect(o.user);
        match table.get(o.user).unwrap().ipv4 {
            Ipv4Assign::Fixed(a) => assert_eq!(got, a, "{}", o.user),
            _ => pool_given.push(got),
        }
    }
    pool_given.sort();
    pool_given.dedup();
    assert_eq!(pool_given.len(), 3000, "3,000 distinct pool addresses");
    assert_eq!(pool_given[0], Ipv4Addr::new(198, 18, 0, 1));
    assert!(pool_given.contains(&Ipv4Addr::new(198, 18, 1, 0)));
    assert!(
        pool_given
            .iter()
            .all(|a| emulate::ranges::BENCHMARK_V4.contains(*a)
                && (*a < fixed(1) || *a > fixed(2000)))
    );
    fleet.close_all(now);
    for _ in 0..100_000 {
        if fleet.all_down() && server.session_count() == 0 {
            break;
        }
        let mut moved = false;
        for f in fleet.take_transmit() {
            moved = true;
            server.handle_frame(now, &f);
        }
        for f in server.take_transmit() {
            moved = true;
            fleet.handle_frame(now, &f);
        }
        if !moved {
            match [fleet.next_deadline(), server.next_deadline()]
                .into_iter()
                .flatten()
                .min()
            {
                Some(t) => now = t,
                None => break,
            }
            fleet.poll(now);
            server.poll(now);
        }
    }
    assert!(fleet.all_down());
    assert_eq!(server.session_count(), 0);
    assert_eq!(server.stats.sessions_up, 0);
}
