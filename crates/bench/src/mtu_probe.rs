//! What the test bed does for an `mtu-probe` trial that its own port cannot send: a frame
//! larger than the sending interface's MTU never reaches the DUT, so the trial is not run and
//! its outcome says nothing was sent ([`crate::search::Crossing::NotSent`]). The probe then
//! reports the largest size the tester could send as the top of what it measured, instead of
//! failing the whole search on the engine's refusal (`engine::trial::max_frame_on`).

use emulate::pppoe::SessionInfo;
use engine::port::PortSpec;
use engine::trial::TrialConfig;

use crate::results::EngineFacts;
use crate::search::{Outcome, TrialRequest};

/// The MTU of `port`'s interface (in its namespace), from `ip -o link show`.
pub fn port_mtu(port: &PortSpec) -> Option<u32> {
    let mut c = std::process::Command::new("ip");
    if let Some(n) = &port.netns {
        c.args(["-n", n]);
    }
    let out = c
        .args(["-o", "link", "show", "dev", &port.ifname])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    words.find(|w| *w == "mtu")?;
    words.next()?.parse().ok()
}

/// Why `cfg` cannot be sent: the first stream with a frame larger than its sending port
/// carries, named with the port and its MTU; `None` when every frame fits (or an MTU cannot
/// be read: the engine then checks again and says why).
pub fn unsendable(cfg: &TrialConfig) -> Option<String> {
    for s in &cfg.streams {
        let port = cfg.ports.get(s.tx_port)?;
        let mtu = port_mtu(port)?;
        for f in &s.config.frames {
            let bytes = f.bytes();
            let limit = engine::trial::max_frame_on(mtu, bytes);
            if bytes.len() > limit {
                return Some(format!(
                    "not sent: a {} B frame (with FCS) does not fit port {} ({}), whose MTU {mtu} carries at most {} B; the DUT was not probed at this size",
                    bytes.len() + 4,
                    port.name,
                    port.ifname,
                    limit + 4
                ));
            }
        }
    }
    None
}

/// Bytes of a PPPoE session frame before its PPP datagram: Ethernet header, PPPoE header and
/// PPP protocol field (without FCS).
const PPPOE_OVERHEAD: usize = wire::ethernet::HEADER_LEN + wire::pppoe::SESSION_HEADER_LEN;

/// Why `cfg` cannot be sent inside its PPPoE sessions: the first stream sent into a session
/// (`sessions[port]`, the session of the stream's sending port) with a datagram larger than
/// the peer's MRU. The peer negotiated that MRU in LCP (RFC 1661 §6.1); an access concentrator
/// or client never sends a larger datagram into the session, so a probe frame above it is not
/// sent, as a BNG would not send it. Through a gateway whose PPPoE client asked for MRU 1454 the
/// WAN→LAN threshold is then 1454 + 18 = 1472 B, as LAN→WAN, where the gateway keeps its own
/// MTU.
pub fn above_session_mru(cfg: &TrialConfig, sessions: &[Option<SessionInfo>]) -> Option<String> {
    for s in &cfg.streams {
        let Some(Some(info)) = sessions.get(s.tx_port) else {
            continue;
        };
        let port = cfg.ports.get(s.tx_port)?;
        let mru = info.max_datagram();
        for f in &s.config.frames {
            let datagram = f.bytes().len().saturating_sub(PPPOE_OVERHEAD);
            if datagram > mru {
                return Some(format!(
                    "not sent: a {} B frame's {datagram} B datagram is above the MRU {mru} the DUT negotiated on port {}'s PPPoE session; the session carries at most {} B frames",
                    f.bytes().len() + wire::ethernet::FCS_LEN,
                    port.name,
                    mru + PPPOE_OVERHEAD + wire::ethernet::FCS_LEN
                ));
            }
        }
    }
    None
}

/// The record of a probe trial that was not sent, with `why`.
pub fn not_sent(request: &TrialRequest, why: String) -> (Outcome, EngineFacts) {
    let outcome = Outcome {
        intended: request.load,
        offered: request.load,
        received: 0,
        lost: 0,
        fragments: 0,
        directions: 1,
        duration: request.duration,
        latency: None,
    };
    let facts = EngineFacts {
        backend: "none".into(),
        note: why,
        sent: 0,
        slipped: 0,
        refused_by_dut: 0,
        max_catch_up: 0,
        dut: None,
        invalid: Default::default(),
        per_direction: Vec::new(),
        session_drops: Vec::new(),
        streams: Vec::new(),
        tester_port_drops: Vec::new(),
    };
    (outcome, facts)
}
