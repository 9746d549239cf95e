//! The next-hop resolver against a real veth whose peer has no carrier for a moment: the
//! requests the port drops (`ENOBUFS` with the qdisc bypassed) are retried, and the resolver
//! learns the MAC once the link is up, instead of failing the trial on the first drop.

mod common;

use common::{is_root, sh, Net};
use engine::resolve::{resolve, Identity};
use std::net::IpAddr;
use std::time::Duration;

/// Resolves port A's next hop from a thread inside A's namespace, on a socket that bypasses
/// the qdisc as the engine's do.
fn resolve_from_a(net: &Net, timeout: Duration) -> engine::Result<[u8; 6]> {
    let (a, _) = net.ports();
    std::thread::spawn(move || {
        let ifindex = a.enter(0).expect("enter a");
        let sock = a.open_socket(ifindex).expect("socket");
        sock.set_qdisc_bypass(true).expect("qdisc bypass");
        let me = Identity {
            mac: sock.hw_addr().expect("MAC"),
            ipv4: a.ipv4,
            ipv6: None,
        };
        resolve(
            &sock,
            &me,
            IpAddr::V4(a.next_hop_v4.expect("next hop")),
            timeout,
        )
    })
    .join()
    .expect("resolver thread")
}

#[test]
fn resolve_rides_out_a_peer_without_carrier() {
    if !is_root() {
        eprintln!(
            "SKIP resolve_rides_out_a_peer_without_carrier: needs root for network namespaces"
        );
        return;
    }
    let net = Net::new("rslv", "rsa", "rsb");
    sh(&["ip", "-n", &net.b, "link", "set", net.if_b, "down"]);
    let mac_b = sh(&["ip", "-n", &net.b, "-br", "link", "show", net.if_b]);
    let mac_b = mac_b
        .split_whitespace()
        .nth(2)
        .expect("MAC of b")
        .to_string();

    let up_later = {
        let (ns, ifname) = (net.b.clone(), net.if_b);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            sh(&["ip", "-n", &ns, "link", "set", ifname, "up"]);
        })
    };
    let learned = resolve_from_a(&net, Duration::from_secs(5));
    up_later.join().unwrap();
    let mac = learned.expect("the resolver must retry dropped requests, not fail");
    let mac: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(mac.join(":"), mac_b);
}

#[test]
fn resolve_names_dropped_requests_when_the_link_stays_down() {
    if !is_root() {
        eprintln!("SKIP resolve_names_dropped_requests_when_the_link_stays_down: needs root for network namespaces");
        return;
    }
    let net = Net::new("rsdn", "rda", "rdb");
    sh(&["ip", "-n", &net.b, "link", "set", net.if_b, "down"]);
    let err = resolve_from_a(&net, Duration::from_millis(300)).expect_err("nothing can answer");
    let text = err.to_string();
    assert!(text.contains("no ARP/ND answer"), "{text}");
    assert!(text.contains("dropped by the port itself"), "{text}");
}
