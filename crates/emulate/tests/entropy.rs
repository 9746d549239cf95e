//! Issue #19 row 16: what a peer must not predict (CHAP challenges, LCP magic numbers, session
//! ids, the AC-Cookie key, Host-Uniq) comes from the operating system on every run, so a CHAP
//! response recorded in one run is worthless in the next; a seeded source stays reproducible
//! for the tests that run under a simulated clock.

mod common;

use common::*;
use emulate::ppp::AuthMethod;
use emulate::pppoe::client::{Client, ClientConfig};
use emulate::pppoe::server::ServerConfig;
use emulate::util::{Entropy, Rng};
use emulate::Nanos;
use wire::ethernet::MacAddr;

/// What a subscriber sees of one server run: per session (in session id order) the id, the
/// server's LCP magic number and its CHAP challenge; and the AC-Cookie for a fixed MAC.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    ids: Vec<u16>,
    magics: Vec<u32>,
    challenges: Vec<Vec<u8>>,
    cookie: [u8; 8],
}

/// The CHAP Challenge value in a server frame (Ethernet, PPPoE session, PPP 0xc223 code 1).
fn chap_challenge(f: &[u8]) -> Option<(u16, Vec<u8>)> {
    let is_challenge =
        f.len() > 27 && f[12..14] == [0x88, 0x64] && f[20..22] == [0xc2, 0x23] && f[22] == 1;
    if !is_challenge {
        return None;
    }
    let size = usize::from(f[26]);
    let value = f.get(27..27 + size)?.to_vec();
    Some((u16::from_be_bytes([f[16], f[17]]), value))
}

/// Three CHAP subscribers (seeded, so only the server's source varies) against one server.
fn run(entropy: Entropy) -> Seen {
    let server = ServerConfig {
        entropy,
        ..server_cfg(vec![AuthMethod::ChapMd5])
    };
    let clients = (1..=3)
        .map(|n| client_cfg(n, "alice", "secret-a"))
        .collect();
    let mut net = Net::new(server, clients);
    net.start_all();
    assert!(net.run_until(20, Net::all_up), "sessions did not come up");
    let keys: Vec<_> = net.server.sessions().collect();
    let mut seen = Seen {
        ids: keys.iter().map(|k| k.session_id).collect(),
        magics: Vec::new(),
        challenges: Vec::new(),
        cookie: net.server.cookie(MacAddr([0x02, 0, 0, 0, 0, 0x42])),
    };
    seen.ids.sort_unstable();
    for id in &seen.ids {
        let key = *keys.iter().find(|k| k.session_id == *id).unwrap();
        let info = net.server.session_info(key).unwrap();
        seen.magics.push(info.negotiated.our_magic);
        let challenge = net
            .server_log
            .iter()
            .filter_map(|f| chap_challenge(f))
            .find(|(sid, _)| sid == id)
            .map(|(_, v)| v)
            .expect("a CHAP challenge for every session");
        assert_eq!(challenge.len(), 16);
        seen.challenges.push(challenge);
    }
    seen
}

#[test]
fn servers_with_os_randomness_differ_and_seeded_servers_repeat() {
    let a = run(Entropy::Os);
    let b = run(Entropy::Os);
    // Each of these could collide by chance with probability 2^-48 or less (three 16-bit
    // session ids, three 32-bit magic numbers, 128-bit challenges, a 64-bit cookie).
    assert_ne!(a.ids, b.ids, "session ids repeat between runs");
    assert_ne!(a.magics, b.magics, "LCP magic numbers repeat between runs");
    for (x, y) in a.challenges.iter().zip(&b.challenges) {
        assert_ne!(x, y, "a CHAP challenge repeats between runs");
    }
    assert_ne!(a.cookie, b.cookie, "the AC-Cookie key repeats between runs");
    // Within a run, challenges are unique too.
    assert!(a.challenges[0] != a.challenges[1] && a.challenges[1] != a.challenges[2]);
    // The challenge the probe saw on every run (the old constant seed 1) is what a server
    // seeded with 1 still sends, and not what the OS gives.
    let hex = |v: &[u8]| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let old = "174a22b94b8588bdc9791e2993ced7b3";
    assert!(run(Entropy::Seeded(1))
        .challenges
        .iter()
        .any(|c| hex(c) == old));
    assert!(a
        .challenges
        .iter()
        .chain(&b.challenges)
        .all(|c| hex(c) != old));

    // The default is the operating system.
    assert_eq!(ServerConfig::default().entropy, Entropy::Os);
    assert_eq!(ServerConfig::default().cookie_key, None);
    assert_eq!(ClientConfig::default().entropy, Entropy::Os);

    let s1 = run(Entropy::Seeded(7));
    let s2 = run(Entropy::Seeded(7));
    assert_eq!(s1, s2, "a seeded server is not reproducible");
    assert_ne!(s1, run(Entropy::Seeded(8)));
}

#[test]
fn clients_with_os_randomness_send_different_host_uniq() {
    let padi = |entropy| {
        let mut c = Client::new(ClientConfig {
            entropy,
            ..ClientConfig::default()
        });
        c.start(Nanos(0));
        c.take_transmit().remove(0)
    };
    assert_ne!(padi(Entropy::Os), padi(Entropy::Os));
    assert_eq!(padi(Entropy::Seeded(3)), padi(Entropy::Seeded(3)));
}

#[test]
fn rng_sources() {
    let (mut a, mut b) = (Rng::os(), Rng::os());
    assert!(a.is_os());
    assert_ne!(a.next_u64(), b.next_u64());
    assert_eq!(a.child(), Entropy::Os);
    let (mut s, mut t) = (Rng::new(9), Rng::from_entropy(Entropy::Seeded(9)));
    assert_eq!((s.next_u64(), s.child()), (t.next_u64(), t.child()));
    assert!(Entropy::check_os().is_ok());
    assert_eq!(Entropy::Os.derive(5), Entropy::Os);
    assert_eq!(Entropy::Seeded(1).derive(5), Entropy::Seeded(4));
}
