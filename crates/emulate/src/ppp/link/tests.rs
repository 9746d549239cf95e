//! The link against itself and against hand-made peers.

use super::*;
use crate::ppp::neg::eui64;

fn server() -> Link {
    Link::new(LinkConfig {
        role: Role::Server,
        fsm: FsmConfig::default(),
        mru: 1454,
        peer_mru_max: 1492,
        auth: vec![AuthMethod::Pap],
        credentials: vec![Credential::new("u", "p")].into(),
        name: "ac".into(),
        ipcp: Some(IpcpNeg::server(
            Ipv4Addr::new(198, 51, 100, 1),
            Some(Ipv4Addr::new(198, 51, 100, 10)),
            [None, None],
        )),
        ipv6cp: Some(eui64([2, 0, 0, 0, 0, 1])),
        echo_interval: Nanos(0),
        echo_failures: 3,
        entropy: Entropy::Seeded(5),
        await_grant: false,
    })
}

#[test]
fn a_link_looped_onto_itself_is_detected() {
    // Without authentication (a looped AC would otherwise refuse its own auth demand first).
    let mut l = server();
    l.auth_cfg.clear();
    l.lcp.neg.auth_demand.clear();
    l.lcp.neg.auth_requested = None;
    l.open(Nanos(0));
    let mut now = Nanos(0);
    for _ in 0..200 {
        let out = l.take_output();
        if out.is_empty() {
            match l.next_deadline() {
                Some(d) => {
                    now = d;
                    l.poll(now);
                    continue;
                }
                None => break,
            }
        }
        for f in out {
            l.input(now, &f);
        }
        if l.is_dead() {
            break;
        }
    }
    let events = l.take_events();
    assert!(
        events.contains(&LinkEvent::Down(DownReason::Loopback)),
        "{events:?}"
    );
}

#[test]
fn lcp_only_codes_before_open_and_garbage_are_counted() {
    let mut l = server();
    l.open(Nanos(0));
    l.take_output();
    // Echo-Request before LCP is open, a 1-byte frame, IPv4 before IPCP.
    l.input(Nanos(0), &[0xc0, 0x21, 9, 1, 0, 8, 0, 0, 0, 0]);
    l.input(Nanos(0), &[0xc0]);
    l.input(Nanos(0), &[0x00, 0x21, 0x45]);
    let a: Vec<_> = l
        .take_events()
        .into_iter()
        .filter_map(|e| match e {
            LinkEvent::Anomaly(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(
        a,
        vec![
            Anomaly::NotUp,
            Anomaly::PppTruncated,
            Anomaly::DataBeforeNcp
        ]
    );
    assert!(l.take_output().is_empty());
}

/// A PAP-only AC whose Authentication-Protocol the client Naks towards CHAP: RFC 1661 has
/// nothing more to propose, so the answer is a Terminate-Request alone (no new
/// Configure-Request with the same refused option), and the link ends `AuthRefused`.
#[test]
fn a_nak_towards_an_auth_we_do_not_allow_gets_only_a_terminate_request() {
    for code in [3u8, 4] {
        let mut l = server();
        l.open(Nanos(0));
        let out = l.take_output();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0][..3], [0xc0, 0x21, 1], "our Configure-Request");
        let id = out[0][3];
        // Nak (3): "use CHAP-MD5 instead"; Reject (4): our own PAP option back.
        let frame: Vec<u8> = if code == 3 {
            vec![0xc0, 0x21, 3, id, 0, 9, 3, 5, 0xc2, 0x23, 5]
        } else {
            vec![0xc0, 0x21, 4, id, 0, 8, 3, 4, 0xc0, 0x23]
        };
        l.input(Nanos(1_000), &frame);
        let out = l.take_output();
        assert_eq!(out.len(), 1, "code {code}: {out:02x?}");
        assert_eq!(
            out[0][..3],
            [0xc0, 0x21, 5],
            "code {code}: Terminate-Request"
        );
        assert_eq!(l.lcp_state(), State::Closing);
        // No peer answer: Terminate-Request once more, then the link is down.
        let mut sent = 0;
        while let Some(d) = l.next_deadline() {
            l.poll(d);
            for f in l.take_output() {
                assert_eq!(
                    f[..3],
                    [0xc0, 0x21, 5],
                    "code {code}: only Terminate-Requests"
                );
                sent += 1;
            }
        }
        assert_eq!(sent, 1, "code {code}");
        let events = l.take_events();
        assert_eq!(
            events,
            vec![LinkEvent::Down(DownReason::AuthRefused)],
            "code {code}"
        );
    }
}
