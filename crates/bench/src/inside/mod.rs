//! `wirerate trial --inside pppoe|dslite`: the trial's streams ride a PPPoE session or a DS-Lite
//! softwire that wirerate brings up itself between its two ports — port A plays the ISP side
//! (our access concentrator / AFTR), port B the subscriber (our PPPoE client / B4) — and keeps
//! up (echo, ND) in background threads while the trial runs (`engine::control::Background`).
//!
//! Sizes whose packet does not fit the session's MRU or the tunnel's MTU are not sent through
//! the fast path (where they would be silently lost): `wire::linerate` names their fate
//! (fragmented, and into which frames), and they are sent through the control planes instead,
//! which fragment them (IPv4 inside PPPoE, the outer IPv6 of DS-Lite) and reassemble them at
//! the far end. The summary lists them as fragmented, with packets sent, fragments and packets
//! reassembled. (A plan refuses such sizes where a search would run them: a search needs the
//! fast path's rates, which the fragmenting path does not have; see `plan/parse.rs`.)
//!
//! The CLI (`wirerate trial`) maps its flags to [`InsideOptions`] and prints the
//! [`InsideSummary`]; bring-up, the fragmenting path and the statistics are here.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use emulate::dslite::{ReassemblyConfig, B4_IPV4};
use emulate::ipfrag::{self, Ipv4Reassembler};
use emulate::pppoe::client::{Client, ClientConfig, ClientEvent};
use emulate::pppoe::server::{Server, ServerConfig, ServerEvent};
use emulate::pppoe::SessionInfo;
use emulate::softwire::{AftrConfig, AftrEvent, AftrPort, B4Config, B4Event, B4Port, SoftwireInfo};
use engine::control::{self, Background};
use engine::port::PortSpec;
use wire::ethernet::MacAddr;
use wire::ppp::Protocol;
use wire::template::StreamSpec;

pub use crate::hand::SessionError;

mod oversize;

use oversize::{row, send_slow, signature_id, Oversize};

/// The host "behind the ISP" the subscriber's DS-Lite traffic goes to.
const REMOTE: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 2);
/// Most packets one oversize stream sends through the (slow) fragmenting path.
pub const MAX_SLOW: u64 = 10_000;

/// Which session or tunnel the streams ride.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsideKind {
    Pppoe,
    Dslite,
}

impl std::str::FromStr for InsideKind {
    type Err = String;
    fn from_str(s: &str) -> Result<InsideKind, String> {
        match s {
            "pppoe" => Ok(InsideKind::Pppoe),
            "dslite" => Ok(InsideKind::Dslite),
            other => Err(format!("--inside {other}: give pppoe or dslite")),
        }
    }
}

impl std::fmt::Display for InsideKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InsideKind::Pppoe => "pppoe",
            InsideKind::Dslite => "dslite",
        })
    }
}

/// What `wirerate trial --inside …` asks for.
#[derive(Debug, Clone)]
pub struct InsideOptions {
    /// `None`: no session, the streams go as they are.
    pub kind: Option<InsideKind>,
    /// PPPoE: the MRU both ends ask for (default 1454 on the AC, 1492 on the client).
    pub mru: Option<u16>,
    /// DS-Lite: the largest outer IPv6 packet; bigger ones are fragmented.
    pub mtu: usize,
}

/// What the session contributes to the trial's report.
#[derive(Debug, Clone)]
pub struct InsideSummary {
    /// The session or softwire: kind, ids, setup time, MTU/MRU, retransmissions.
    pub inside: serde_json::Value,
    /// One row per fragmented stream: size, fate, packets, fragments, reassembled.
    pub fragmented: Vec<serde_json::Value>,
}

/// The AFTR's tunnel endpoint by default (the same as `wirerate craft`'s DS-Lite frames).
pub const DEFAULT_AFTR: std::net::Ipv6Addr =
    std::net::Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1);
/// The B4's tunnel endpoint by default.
pub const DEFAULT_B4: std::net::Ipv6Addr =
    std::net::Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 2);

enum Ends {
    Pppoe {
        ac: Background<Server>,
        client: Background<Client>,
        ac_info: SessionInfo,
        cl_info: SessionInfo,
    },
    Dslite {
        aftr: Background<AftrPort>,
        b4: Background<B4Port>,
        a_info: SoftwireInfo,
        b_info: SoftwireInfo,
    },
}

/// A session or softwire up between the two ports.
pub struct Inside {
    /// While set, the PPPoE ends throw their data events away (the trial's frames reach the
    /// control sockets too); cleared for the fragmented streams, whose packets we count.
    discard: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pppoe: bool,
    ends: Ends,
    setup: Duration,
    oversize: Vec<Oversize>,
}

fn failed(m: impl Into<String>) -> SessionError {
    SessionError::Failed(m.into())
}

impl Inside {
    /// Brings the session or softwire up (None without --inside) and gives the ports the
    /// addresses it uses, so that the trial's streams can be addressed.
    pub fn up(
        args: &InsideOptions,
        a: &mut PortSpec,
        b: &mut PortSpec,
    ) -> Result<Option<Inside>, SessionError> {
        let Some(kind) = args.kind else {
            return Ok(None);
        };
        let t0 = Instant::now();
        let discard = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d1, d2) = (discard.clone(), discard.clone());
        let off = |d: &std::sync::atomic::AtomicBool| d.load(std::sync::atomic::Ordering::Relaxed);
        let err = |e: engine::Error| failed(format!("--inside {kind}: {e}"));
        let ends = match kind {
            InsideKind::Pppoe => {
                let mru = args.mru;
                // Checked here, before any port is opened: the server is built on the control
                // thread, which cannot refuse a configuration.
                let mut probe = ServerConfig::default();
                if let Some(m) = mru {
                    probe.mru = m;
                }
                probe
                    .check()
                    .map_err(|e| SessionError::Usage(format!("--inside-mru: {e}")))?;
                let ac = Background::start_with(
                    a.clone(),
                    move |mac| {
                        let mut c = ServerConfig {
                            mac: MacAddr(mac),
                            ..ServerConfig::default()
                        };
                        if let Some(m) = mru {
                            c.mru = m;
                        }
                        Server::new(c)
                    },
                    move |s: &mut Server| {
                        // Set once the session events were read: afterwards only the
                        // trial's own frames arrive, as data events.
                        if off(&d1) {
                            let _ = s.take_events();
                        }
                    },
                )
                .map_err(err)?;
                let client = Background::start_with(
                    b.clone(),
                    move |mac| {
                        let mut c = ClientConfig {
                            mac: MacAddr(mac),
                            ..ClientConfig::default()
                        };
                        if let Some(m) = mru {
                            c.mru = m;
                        }
                        let mut c = Client::new(c);
                        c.start(control::now());
                        c
                    },
                    move |c: &mut Client| {
                        if off(&d2) {
                            let _ = c.take_events();
                        }
                    },
                )
                .map_err(err)?;
                let cl_info = client
                    .wait_for(Duration::from_secs(15), |c| {
                        c.take_events().into_iter().find_map(|e| match e {
                            ClientEvent::Up(i) => Some(Ok(i)),
                            ClientEvent::Down(r) => Some(Err(r)),
                            _ => None,
                        })
                    })
                    .ok_or_else(|| failed("--inside pppoe: no session within 15 s"))?
                    .map_err(|r| failed(format!("--inside pppoe: session failed: {r:?}")))?;
                let key = cl_info.key(false);
                let ac_info = ac
                    .with(|s| s.session_info(key))
                    .ok_or_else(|| failed("--inside pppoe: the AC does not know the session"))?;
                let (Some(local), Some(gw)) =
                    (cl_info.negotiated.local_ipv4, cl_info.negotiated.peer_ipv4)
                else {
                    return Err(failed("--inside pppoe: IPCP gave no addresses"));
                };
                b.ipv4 = Some(local);
                a.ipv4 = Some(gw);
                Ends::Pppoe {
                    ac,
                    client,
                    ac_info,
                    cl_info,
                }
            }
            InsideKind::Dslite => {
                let aftr_addr = DEFAULT_AFTR;
                let b4_addr = DEFAULT_B4;
                let mtu = args.mtu;
                if !(1280..=9000).contains(&mtu) {
                    return Err(SessionError::Usage(format!(
                        "--inside-mtu {mtu}: give 1280..9000"
                    )));
                }
                let aftr = Background::start(a.clone(), move |mac| {
                    let mut c = AftrConfig::new(aftr_addr, MacAddr(mac));
                    c.tunnel.mtu = mtu;
                    AftrPort::new(c)
                })
                .map_err(err)?;
                let b4 = Background::start(b.clone(), move |mac| {
                    let mut c = B4Config::new(b4_addr, MacAddr(mac), aftr_addr);
                    c.tunnel.mtu = mtu;
                    let mut p = B4Port::new(c);
                    p.start(control::now());
                    p
                })
                .map_err(err)?;
                let b_info = b4
                    .wait_for(Duration::from_secs(15), |p| {
                        p.take_events().into_iter().find_map(|e| match e {
                            B4Event::Up(i) => Some(Ok(i)),
                            B4Event::Failed(r) => Some(Err(r)),
                            _ => None,
                        })
                    })
                    .ok_or_else(|| failed("--inside dslite: no softwire within 15 s"))?
                    .map_err(|r| failed(format!("--inside dslite: softwire failed: {r:?}")))?;
                let a_info = aftr
                    .with(|p| p.softwire_info(b4_addr))
                    .ok_or_else(|| failed("--inside dslite: the AFTR did not learn the B4"))?;
                a.ipv4 = Some(REMOTE);
                b.ipv4 = Some(B4_IPV4);
                Ends::Dslite {
                    aftr,
                    b4,
                    a_info,
                    b_info,
                }
            }
        };
        discard.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(Some(Inside {
            discard,
            pppoe: kind == InsideKind::Pppoe,
            ends,
            setup: t0.elapsed(),
            oversize: Vec::new(),
        }))
    }

    /// Points a stream sent from `tx_port` (0 = A, the ISP side) at the session or softwire.
    pub fn apply(&self, spec: &mut StreamSpec, tx_port: usize) -> Result<(), String> {
        match &self.ends {
            Ends::Pppoe {
                ac_info, cl_info, ..
            } => {
                if !spec.encap.pppoe || spec.encap.dslite {
                    return Err(format!(
                        "--inside pppoe needs --encap pppoe (or vlan+pppoe), not {}",
                        spec.encap
                    ));
                }
                if tx_port == 0 { ac_info } else { cl_info }.apply_to(spec);
            }
            Ends::Dslite { a_info, b_info, .. } => {
                if !spec.encap.dslite || spec.encap.pppoe {
                    return Err(format!(
                        "--inside dslite needs --encap dslite, not {}",
                        spec.encap
                    ));
                }
                if tx_port == 0 {
                    spec.src_ip = REMOTE.into();
                    spec.dst_ip = B4_IPV4.into();
                    a_info.apply_to(spec, false);
                } else {
                    spec.dst_ip = REMOTE.into();
                    b_info.apply_to(spec, true);
                }
            }
        }
        Ok(())
    }

    /// The largest IP packet the session or tunnel carries whole from `tx_port`.
    fn max_datagram(&self, tx_port: usize) -> usize {
        match &self.ends {
            Ends::Pppoe {
                ac_info, cl_info, ..
            } => if tx_port == 0 { ac_info } else { cl_info }.max_datagram(),
            Ends::Dslite { a_info, b_info, .. } => {
                if tx_port == 0 { a_info } else { b_info }.max_datagram()
            }
        }
    }

    /// Sends the oversize streams fragmented, closes the session or softwire, and returns
    /// what the trial's report is printed with: the session and the fragmented streams.
    pub fn finish(self) -> Result<InsideSummary, SessionError> {
        let mut rows = Vec::new();
        let summary = match self.ends {
            Ends::Pppoe {
                ac,
                client,
                ac_info,
                cl_info,
            } => {
                self.discard
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                let _ = ac.with(|s| s.take_events());
                let _ = client.with(|c| c.take_events());
                let key = cl_info.key(false);
                for o in &self.oversize {
                    let mtu = if o.tx_port == 0 { ac_info } else { cl_info }.max_datagram();
                    let (sent, frags) = send_slow(o, |p| {
                        let Some(fr) = ipfrag::fragment(p, mtu) else {
                            return 0;
                        };
                        let now = control::now();
                        for f in &fr {
                            if o.tx_port == 0 {
                                ac.with(|s| s.send(now, key, Protocol::IPV4, f));
                            } else {
                                client.with(|c| c.send(now, Protocol::IPV4, f));
                            }
                        }
                        fr.len()
                    });
                    std::thread::sleep(Duration::from_millis(300));
                    let mut re = Ipv4Reassembler::new(ReassemblyConfig::default());
                    let packets: Vec<Vec<u8>> = if o.tx_port == 0 {
                        client
                            .with(|c| c.take_events())
                            .into_iter()
                            .filter_map(|e| match e {
                                ClientEvent::Data { payload, .. } => Some(payload),
                                _ => None,
                            })
                            .collect()
                    } else {
                        ac.with(|s| s.take_events())
                            .into_iter()
                            .filter_map(|e| match e {
                                ServerEvent::Data { payload, .. } => Some(payload),
                                _ => None,
                            })
                            .collect()
                    };
                    let whole = packets
                        .iter()
                        .filter_map(|p| re.push(control::now(), p).ok().flatten())
                        .filter(|p| signature_id(p) == Some(o.id))
                        .count() as u64;
                    rows.push(row(o, sent, frags, whole));
                }
                client.with(|c| c.close(control::now()));
                std::thread::sleep(Duration::from_millis(300));
                let (srv, _) = ac.finish().map_err(|e| failed(e.to_string()))?;
                let (cl, _) = client.finish().map_err(|e| failed(e.to_string()))?;
                serde_json::json!({
                    "kind": "pppoe", "session_id": cl_info.session_id,
                    "setup_ms": self.setup.as_secs_f64() * 1e3,
                    "client_setup_ms": cl.stats.setup.map(|s| s.0 as f64 / 1e6),
                    "max_datagram_a_to_b": ac_info.max_datagram(),
                    "max_datagram_b_to_a": cl_info.max_datagram(),
                    "subscriber": cl_info.negotiated.local_ipv4.map(|a| a.to_string()),
                    "retransmits": cl.stats.retransmits + srv.stats.retransmits,
                    "ended": srv.stats.ended.iter().map(|(k, v)| (format!("{k:?}"), v.into()))
                        .collect::<serde_json::Map<_, _>>(),
                })
            }
            Ends::Dslite {
                aftr,
                b4,
                a_info,
                b_info,
            } => {
                let _ = aftr.with(|p| p.take_events());
                let _ = b4.with(|p| p.take_events());
                for o in &self.oversize {
                    let (sent, frags) = send_slow(o, |p| {
                        let n = if o.tx_port == 0 {
                            aftr.with(|a| a.encapsulate(b_info.local, p))
                        } else {
                            b4.with(|b| b.encapsulate(p))
                        };
                        n.unwrap_or(0)
                    });
                    std::thread::sleep(Duration::from_millis(300));
                    let packets: Vec<Vec<u8>> = if o.tx_port == 0 {
                        b4.with(|p| p.take_events())
                            .into_iter()
                            .filter_map(|e| match e {
                                B4Event::Packet(p) => Some(p),
                                _ => None,
                            })
                            .collect()
                    } else {
                        aftr.with(|p| p.take_events())
                            .into_iter()
                            .filter_map(|e| match e {
                                AftrEvent::Packet { packet, .. } => Some(packet),
                                _ => None,
                            })
                            .collect()
                    };
                    let whole = packets
                        .iter()
                        .filter(|p| signature_id(p) == Some(o.id))
                        .count() as u64;
                    rows.push(row(o, sent, frags, whole));
                }
                let (_, _) = aftr.finish().map_err(|e| failed(e.to_string()))?;
                let (bp, _) = b4.finish().map_err(|e| failed(e.to_string()))?;
                serde_json::json!({
                    "kind": "dslite", "aftr": a_info.local.to_string(),
                    "b4": b_info.local.to_string(), "mtu": b_info.mtu,
                    "setup_ms": self.setup.as_secs_f64() * 1e3,
                    "b4_setup_ms": bp.stats.setup.map(|s| s.0 as f64 / 1e6),
                    "retries": bp.stats.retries,
                })
            }
        };
        Ok(InsideSummary {
            inside: summary,
            fragmented: rows,
        })
    }
}
