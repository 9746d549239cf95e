//! Issue #19 row 18: configurations that cannot work as asked are refused with a message that
//! says what would work, and the address pool never hands out anything outside the
//! documentation ranges (DESIGN.md §6), nor the network, broadcast or gateway address.

mod common;

use core::net::Ipv4Addr;

use common::*;
use emulate::ppp::{AuthMethod, DownReason};
use emulate::pppoe::client::{ClientConfig, ClientEvent};
use emulate::pppoe::server::{Ipv4Pool, Server, ServerConfig, ServerEvent};
use emulate::pppoe::{documentation_net, ConfigError};

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn pool(first: &str, size: u32) -> ServerConfig {
    ServerConfig {
        pool_first: ip(first),
        pool_size: size,
        ..ServerConfig::default()
    }
}

#[test]
fn defaults_are_accepted() {
    assert_eq!(ServerConfig::default().check(), Ok(()));
    assert_eq!(ClientConfig::default().check(), Ok(()));
    assert!(Server::try_new(ServerConfig::default()).is_ok());
}

#[test]
fn a_pool_leaving_its_documentation_range_is_refused_naming_the_largest_that_fits() {
    // The probe's 3,000 sessions from 198.51.100.10 reached 198.51.111.193.
    let e = pool("198.51.100.10", 3000).check().unwrap_err();
    assert_eq!(
        e,
        ConfigError::PoolTooLarge {
            first: ip("198.51.100.10"),
            size: 3000,
            largest: 245
        }
    );
    let m = e.to_string();
    assert!(m.contains("198.51.111.193"), "{m}");
    assert!(m.contains("198.51.100.0/24"), "{m}");
    assert!(
        m.contains("the largest pool from 198.51.100.10 that fits is 245"),
        "{m}"
    );
    // 245 fits exactly (.10 … .254), 246 would hand out the broadcast address.
    assert_eq!(pool("198.51.100.10", 245).check(), Ok(()));
    assert!(matches!(
        pool("198.51.100.10", 246).check(),
        Err(ConfigError::PoolTooLarge { largest: 245, .. })
    ));
    // The other documentation ranges work the same way.
    let mut c = pool("203.0.113.2", 253);
    c.gateway = ip("203.0.113.1");
    assert_eq!(c.check(), Ok(()));
    c.pool_size = 254;
    assert!(matches!(
        c.check(),
        Err(ConfigError::PoolTooLarge { largest: 253, .. })
    ));
    assert!(Server::try_new(pool("198.51.100.10", 3000)).is_err());
}

#[test]
fn a_pool_outside_the_ranges_or_on_network_broadcast_or_gateway_is_refused() {
    assert_eq!(
        pool("10.0.0.1", 10).check(),
        Err(ConfigError::PoolOutsideDocumentation {
            first: ip("10.0.0.1")
        })
    );
    assert!(pool("10.0.0.1", 10)
        .check()
        .unwrap_err()
        .to_string()
        .contains("192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24"));
    // Just past a range: 198.51.101.0 is not documentation.
    assert!(matches!(
        pool("198.51.101.1", 1).check(),
        Err(ConfigError::PoolOutsideDocumentation { .. })
    ));
    let e = pool("198.51.100.0", 10).check().unwrap_err();
    assert_eq!(
        e,
        ConfigError::PoolStartsAtNetworkOrBroadcast {
            first: ip("198.51.100.0"),
            broadcast: false
        }
    );
    assert!(e.to_string().contains("network address"), "{e}");
    assert!(e.to_string().contains("start at 198.51.100.1"), "{e}");
    let e = pool("198.51.100.255", 1).check().unwrap_err();
    assert!(e.to_string().contains("broadcast address"), "{e}");
    // The default gateway is 198.51.100.1.
    let e = pool("198.51.100.1", 240).check().unwrap_err();
    assert_eq!(
        e,
        ConfigError::PoolHoldsGateway {
            first: ip("198.51.100.1"),
            size: 240,
            gateway: ip("198.51.100.1"),
            largest: 0
        }
    );
    assert!(
        e.to_string()
            .contains("start the pool after the gateway (at 198.51.100.2)"),
        "{e}"
    );
    let mut c = pool("198.51.100.2", 100);
    c.gateway = ip("198.51.100.50");
    let e = c.check().unwrap_err();
    assert!(
        matches!(e, ConfigError::PoolHoldsGateway { largest: 48, .. }),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("gateway's own address 198.51.100.50"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("largest pool from 198.51.100.2 that fits is 48"),
        "{e}"
    );
    // A pool right after the gateway, up to .254, is fine.
    let mut c = pool("198.51.100.2", 253);
    c.gateway = ip("198.51.100.1");
    assert_eq!(c.check(), Ok(()));
}

#[test]
fn an_empty_pool_is_refused_unless_ipcp_is_off() {
    let e = pool("198.51.100.10", 0).check().unwrap_err();
    assert_eq!(e, ConfigError::EmptyPool);
    assert!(
        e.to_string().contains("would refuse every subscriber"),
        "{e}"
    );
    let mut c = pool("198.51.100.10", 0);
    c.ipcp = false;
    assert_eq!(c.check(), Ok(()));
}

#[test]
fn an_mru_below_64_or_above_what_pppoe_carries_is_refused() {
    for mru in [0u16, 1, 63, 1493, 9000] {
        let s = ServerConfig {
            mru,
            ..ServerConfig::default()
        };
        let e = s.check().unwrap_err();
        assert_eq!(
            e,
            ConfigError::Mru {
                mru,
                min: 64,
                max: 1492
            }
        );
        assert!(e.to_string().contains("give 64 to 1492"), "{e}");
        let c = ClientConfig {
            mru,
            ..ClientConfig::default()
        };
        assert_eq!(c.check(), Err(e));
    }
    for mru in [64u16, 1454, 1492] {
        let s = ServerConfig {
            mru,
            ..ServerConfig::default()
        };
        assert_eq!(s.check(), Ok(()), "{mru}");
    }
    // With RFC 4638 the ceiling is the PPP-Max-Payload.
    let s = ServerConfig {
        mru: 1500,
        max_payload: 1500,
        ..ServerConfig::default()
    };
    assert_eq!(s.check(), Ok(()));
    let c = ClientConfig {
        mru: 1500,
        max_payload: Some(1500),
        ..ClientConfig::default()
    };
    assert_eq!(c.check(), Ok(()));
}

#[test]
fn the_pool_itself_never_leaves_its_range_nor_hands_out_the_gateway() {
    let mut p = Ipv4Pool::new(ip("198.51.100.250"), 3000);
    p.reserve(ip("198.51.100.252"));
    assert_eq!(p.capacity(), 4);
    let got: Vec<_> = std::iter::from_fn(|| p.allocate()).collect();
    assert_eq!(
        got,
        [
            "198.51.100.250",
            "198.51.100.251",
            "198.51.100.253",
            "198.51.100.254"
        ]
        .map(ip)
    );
    assert_eq!(Ipv4Pool::new(ip("10.0.0.1"), 10).allocate(), None);
    let mut p = Ipv4Pool::new(ip("192.0.2.0"), 10);
    assert_eq!(
        p.capacity(),
        0,
        "a pool from a network address hands out nothing"
    );
    assert_eq!(p.allocate(), None);
    assert_eq!(
        documentation_net(ip("203.0.113.77")),
        Some(ip("203.0.113.0"))
    );
    assert_eq!(documentation_net(ip("198.51.111.193")), None);
}

/// 250 subscribers against an AC built (unchecked) with the probe's 3,000-address pool: 245
/// get an address from 198.51.100.10 to .254, the others a PADS with AC-System-Error; nothing
/// outside 198.51.100.0/24, never the gateway, network or broadcast address.
#[test]
fn many_subscribers_only_ever_get_documentation_addresses() {
    let n = 250u8;
    let mut cfg = server_cfg(vec![AuthMethod::Pap]);
    cfg.pool_size = 3000;
    cfg.max_sessions = 4096;
    assert!(cfg.check().is_err());
    let clients = (0..n)
        .map(|i| {
            let mut c = client_cfg(i, "alice", "secret-a");
            c.ipv6cp = false;
            c
        })
        .collect();
    let mut net = Net::new(cfg, clients);
    net.start_all();
    net.run_until(60, |n| {
        n.server.stats.sessions_up + n.server.stats.pads_refused >= u64::from(250u8)
    });
    let mut addrs: Vec<Ipv4Addr> = net
        .server_events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::SessionUp { info, .. } => info.negotiated.peer_ipv4,
            _ => None,
        })
        .collect();
    addrs.sort_unstable();
    assert_eq!(addrs.len(), 245);
    addrs.dedup();
    assert_eq!(addrs.len(), 245, "an address handed out twice");
    assert_eq!(addrs.first(), Some(&ip("198.51.100.10")));
    assert_eq!(addrs.last(), Some(&ip("198.51.100.254")));
    assert_eq!(net.server.stats.pads_refused, 5);
    let refused = net
        .client_events
        .iter()
        .filter(|(_, e)| matches!(e, ClientEvent::Down(DownReason::AcSystemError)))
        .count();
    assert_eq!(refused, 5);
}

/// For thousands of subscribers the pool may lie in the benchmarking range 198.18.0.0/15
/// (DESIGN.md §6): up to 131,070 addresses from 198.18.0.1, never its network or broadcast
/// address, never past it; the refusal of a /24 pool too large points there.
#[test]
fn a_pool_in_the_benchmarking_range_holds_tens_of_thousands() {
    assert_eq!(pool("198.18.0.1", 40_000).check(), Ok(()));
    assert_eq!(pool("198.18.0.1", 131_070).check(), Ok(()));
    let e = pool("198.18.0.1", 131_071).check().unwrap_err();
    assert_eq!(
        e,
        ConfigError::PoolTooLarge {
            first: ip("198.18.0.1"),
            size: 131_071,
            largest: 131_070
        }
    );
    assert!(e.to_string().contains("198.18.0.0/15"), "{e}");
    let e = pool("198.18.0.0", 10).check().unwrap_err();
    assert!(
        e.to_string().contains("network address of 198.18.0.0/15"),
        "{e}"
    );
    assert!(matches!(
        pool("198.20.0.1", 10).check(),
        Err(ConfigError::PoolOutsideDocumentation { .. })
    ));
    let e = pool("198.51.100.10", 3000).check().unwrap_err().to_string();
    assert!(e.contains("--pool 198.18.0.1"), "{e}");

    // The pool hands out 198.18.0.255 and 198.18.1.0 (hosts inside the /15), never
    // 198.19.255.255, and after a release the lowest free address again.
    let mut p = Ipv4Pool::new(ip("198.19.255.250"), 100);
    assert_eq!(p.capacity(), 5);
    let mut p2 = Ipv4Pool::new(ip("198.18.0.254"), 4);
    let got: Vec<_> = std::iter::from_fn(|| p2.allocate()).collect();
    assert_eq!(
        got,
        ["198.18.0.254", "198.18.0.255", "198.18.1.0", "198.18.1.1"].map(ip)
    );
    let all: Vec<_> = std::iter::from_fn(|| p.allocate()).collect();
    assert_eq!(all.last(), Some(&ip("198.19.255.254")));
    p.release(ip("198.19.255.252"));
    p.release(ip("198.19.255.251"));
    assert_eq!(p.allocate(), Some(ip("198.19.255.251")));
    assert_eq!(p.allocate(), Some(ip("198.19.255.252")));
    assert_eq!(p.allocate(), None);
    assert_eq!(p.in_use(), 5);
}
