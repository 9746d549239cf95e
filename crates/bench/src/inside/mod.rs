//! `wirerate trial --inside pppoe|dslite`: the trial's streams ride a PPPoE session or a DS-Lite
//! softwire that wirerate brings up itself between its two ports — port A plays the ISP side
//! (our access concentrator / AFTR), port B the subscriber (our PPPoE client / B4).
//!
//! The session runner is the one plans use ([`crate::isp`]): the same bring-up, wait-up, close
//! (LCP Terminate + PADT) and statistics lines, from the same settings a plan's
//! `[ports.NAME.pppoe]` / `[ports.NAME.dslite]` gives ([`InsideOptions::pppoe`],
//! [`InsideOptions::dslite`]). What is left here is what only `trial --inside` does: give the
//! ports the session's addresses, point the streams at it, and the fragmenting path.
//!
//! Sizes whose packet does not fit the session's MRU or the tunnel's MTU are refused, with the
//! text a plan gives (`bench_model::oversize`): a rate trial would count fragments as frames.
//! With `--fragment-oversize` they are taken out of the fast path instead (where they would
//! be silently lost): `wire::linerate` names their fate (fragmented, and into which frames),
//! and they are sent through the control planes, which fragment them (IPv4 inside PPPoE, the
//! outer IPv6 of DS-Lite) and reassemble them at the far end. The summary lists them as
//! fragmented, with packets sent, fragments and packets reassembled.
//!
//! The CLI (`wirerate trial`) maps its flags to [`InsideOptions`] and prints the
//! [`InsideSummary`].

use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use emulate::dslite::{ReassemblyConfig, B4_IPV4};
use emulate::ipfrag::{self, Ipv4Reassembler};
use emulate::pppoe::server::ServerConfig;
use emulate::pppoe::SessionInfo;
use emulate::softwire::SoftwireInfo;
use engine::control;
use engine::port::PortSpec;
use wire::template::StreamSpec;

use crate::isp::{SessionLine, SessionPort, SoftwirePort};
use crate::plan::{DsliteRole, DsliteSettings, PppoeRole, PppoeSettings};
use crate::spec::{Carrier, CarryError};

pub use crate::error::BenchError;

mod oversize;

use oversize::{collect_until, row, send_slow, signature_id, Oversize};

/// The host "behind the ISP" the subscriber's DS-Lite traffic goes to.
const REMOTE: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 2);
/// Most packets one oversize stream sends through the (slow) fragmenting path.
pub const MAX_SLOW: u64 = 10_000;
/// How long the session or softwire may take to come up.
const UP_TIMEOUT: Duration = Duration::from_secs(15);
/// The credential our client logs in with and our access concentrator accepts.
const USER: (&str, &str) = ("wirerate", "wirerate");
/// The MRU our PPPoE client asks for without `--inside-mru`: the most PPPoE carries.
const CLIENT_MRU: u16 = wire::ppp::lcp::PPPOE_MAX_MRU;

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
    /// Send sizes the session or tunnel does not carry whole fragmented through the control
    /// planes (one trial, no rate) instead of refusing them.
    pub fragment_oversize: bool,
}

impl InsideOptions {
    /// Port A's access concentrator and port B's client, as a plan's `[ports.a.pppoe]` and
    /// `[ports.b.pppoe]` would give them: the plan defaults, user `wirerate`, and the MRUs
    /// (`--inside-mru`, else 1454 on the AC and 1492 on the client).
    pub fn pppoe(&self) -> (PppoeSettings, PppoeSettings) {
        let user = vec![(USER.0.to_string(), USER.1.to_string())];
        let mut ac = PppoeSettings::new(PppoeRole::Server);
        ac.users = user.clone();
        ac.timeout = UP_TIMEOUT;
        let mut client = PppoeSettings::new(PppoeRole::Client);
        client.users = user;
        client.mru = CLIENT_MRU;
        client.timeout = UP_TIMEOUT;
        if let Some(m) = self.mru {
            ac.mru = m;
            client.mru = m;
        }
        (ac, client)
    }

    /// Port A's AFTR and port B's B4, as a plan's `[ports.a.dslite]` and `[ports.b.dslite]`
    /// would give them, with the tunnel MTU `--inside-mtu`.
    pub fn dslite(&self) -> (DsliteSettings, DsliteSettings) {
        let aftr = DsliteSettings {
            role: DsliteRole::Aftr,
            address: DEFAULT_AFTR,
            peer: None,
            timeout: UP_TIMEOUT,
            provision: false,
            aftr_name: None,
            mtu: self.mtu,
            internet: None,
        };
        let b4 = DsliteSettings {
            role: DsliteRole::B4,
            address: DEFAULT_B4,
            peer: Some(DEFAULT_AFTR),
            ..aftr.clone()
        };
        (aftr, b4)
    }
}

/// What the session contributes to the trial's report.
#[derive(Debug, Clone)]
pub struct InsideSummary {
    /// The session or softwire: kind, ids, setup time, MTU/MRU, retransmissions.
    pub inside: serde_json::Value,
    /// One row per fragmented stream: size, fate, packets, fragments, reassembled.
    pub fragmented: Vec<serde_json::Value>,
    /// The control planes' events and final statistics: the lines a run writes to
    /// `sessions.jsonl` for the same ports.
    pub sessions: Vec<SessionLine>,
}

/// The AFTR's tunnel endpoint by default (the same as `wirerate craft`'s DS-Lite frames).
pub const DEFAULT_AFTR: std::net::Ipv6Addr =
    std::net::Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1);
/// The B4's tunnel endpoint by default.
pub const DEFAULT_B4: std::net::Ipv6Addr =
    std::net::Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 2);

enum Ends {
    Pppoe {
        // Boxed: a PPPoE port holds its channels and is much larger than a softwire's.
        ac: Box<SessionPort>,
        client: Box<SessionPort>,
        ac_info: SessionInfo,
        cl_info: SessionInfo,
    },
    Dslite {
        // Boxed too: an AFTR port may hold its Internet side.
        aftr: Box<SoftwirePort>,
        b4: Box<SoftwirePort>,
        a_info: SoftwireInfo,
        b_info: SoftwireInfo,
    },
}

/// A session or softwire up between the two ports.
pub struct Inside {
    fragment_oversize: bool,
    /// The ports' names (A, B), for the errors.
    names: [String; 2],
    ends: Ends,
    setup: Duration,
    oversize: Vec<Oversize>,
    lines: Vec<SessionLine>,
}

fn failed(m: impl Into<String>) -> BenchError {
    BenchError::Failed(m.into())
}

impl Inside {
    /// Brings the session or softwire up (None without --inside) and gives the ports the
    /// addresses it uses, so that the trial's streams can be addressed.
    pub fn up(
        args: &InsideOptions,
        a: &mut PortSpec,
        b: &mut PortSpec,
    ) -> Result<Option<Inside>, BenchError> {
        let Some(kind) = args.kind else {
            return Ok(None);
        };
        let t0 = Instant::now();
        // Nothing interrupts the wait but its timeout.
        let never = AtomicBool::new(false);
        let err = |e: String| failed(format!("--inside {kind}: {e}"));
        let ends = match kind {
            InsideKind::Pppoe => {
                let (ac_cfg, cl_cfg) = args.pppoe();
                // Checked here, naming the flag, before any port is opened.
                ServerConfig {
                    mru: ac_cfg.mru,
                    ..ServerConfig::default()
                }
                .check()
                .map_err(|e| BenchError::Usage(format!("--inside-mru: {e}")))?;
                let mut ac =
                    SessionPort::start(&a.name, a, &ac_cfg).map_err(|e| err(e.to_string()))?;
                let mut client =
                    SessionPort::start(&b.name, b, &cl_cfg).map_err(|e| err(e.to_string()))?;
                let cl_info = client
                    .wait_up(UP_TIMEOUT, &never)
                    .map_err(|e| err(e.to_string()))?;
                let ac_info = ac
                    .wait_up(UP_TIMEOUT, &never)
                    .map_err(|e| err(e.to_string()))?;
                let (Some(local), Some(gw)) =
                    (cl_info.negotiated.local_ipv4, cl_info.negotiated.peer_ipv4)
                else {
                    return Err(err("IPCP gave no addresses".into()));
                };
                b.ipv4 = Some(local);
                a.ipv4 = Some(gw);
                Ends::Pppoe {
                    ac: Box::new(ac),
                    client: Box::new(client),
                    ac_info,
                    cl_info,
                }
            }
            InsideKind::Dslite => {
                if !(1280..=9000).contains(&args.mtu) {
                    return Err(BenchError::Usage(format!(
                        "--inside-mtu {}: give 1280..9000",
                        args.mtu
                    )));
                }
                let (aftr_cfg, b4_cfg) = args.dslite();
                let aftr =
                    SoftwirePort::start(&a.name, a, &aftr_cfg).map_err(|e| err(e.to_string()))?;
                let b4 =
                    SoftwirePort::start(&b.name, b, &b4_cfg).map_err(|e| err(e.to_string()))?;
                let b_info = b4
                    .wait_up(UP_TIMEOUT, &never)
                    .map_err(|e| err(e.to_string()))?
                    .ok_or_else(|| err("the B4 has no softwire".into()))?;
                // The AFTR learnt the B4 from the tunnel probe it answered.
                let end = Instant::now() + Duration::from_secs(2);
                let a_info = loop {
                    if let Some(i) = aftr.softwire() {
                        break i;
                    }
                    if Instant::now() >= end {
                        return Err(err("the AFTR did not learn the B4".into()));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                a.ipv4 = Some(REMOTE);
                b.ipv4 = Some(B4_IPV4);
                Ends::Dslite {
                    aftr: Box::new(aftr),
                    b4: Box::new(b4),
                    a_info,
                    b_info,
                }
            }
        };
        Ok(Some(Inside {
            fragment_oversize: args.fragment_oversize,
            names: [a.name.clone(), b.name.clone()],
            ends,
            setup: t0.elapsed(),
            oversize: Vec::new(),
            lines: Vec::new(),
        }))
    }

    /// Points a stream sent from `tx_port` (0 = A, the ISP side) at the session or softwire.
    pub fn apply(&self, spec: &mut StreamSpec, tx_port: usize) -> Result<(), CarryError> {
        match &self.ends {
            Ends::Pppoe {
                ac_info, cl_info, ..
            } => {
                if !spec.encap.pppoe || spec.encap.dslite {
                    return Err(CarryError::WrongEncap {
                        carrier: "pppoe",
                        needs: "pppoe (or vlan+pppoe)",
                        sent: spec.encap,
                    });
                }
                if tx_port == 0 { ac_info } else { cl_info }.apply_to(spec);
            }
            Ends::Dslite { a_info, b_info, .. } => {
                if !spec.encap.dslite || spec.encap.pppoe {
                    return Err(CarryError::WrongEncap {
                        carrier: "dslite",
                        needs: "dslite",
                        sent: spec.encap,
                    });
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

    fn is_pppoe(&self) -> bool {
        matches!(self.ends, Ends::Pppoe { .. })
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

    /// Why a `frame` B frame from `tx_port` is refused: the text a plan gives.
    fn refusal(&self, frame: usize, tx_port: usize) -> String {
        let port = &self.names[tx_port.min(1)];
        match &self.ends {
            Ends::Pppoe { .. } => {
                bench_model::oversize::pppoe_refusal(frame, self.max_datagram(tx_port), port)
            }
            Ends::Dslite { a_info, b_info, .. } => {
                let mtu = if tx_port == 0 { a_info } else { b_info }.mtu;
                bench_model::oversize::dslite_refusal(frame, mtu, port)
            }
        }
    }

    /// The session lines so far (events since the last call).
    fn collect_lines(&mut self) {
        let new: Vec<SessionLine> = match &self.ends {
            Ends::Pppoe { ac, client, .. } => ac
                .take_lines()
                .into_iter()
                .chain(client.take_lines())
                .collect(),
            Ends::Dslite { aftr, b4, .. } => aftr
                .take_lines()
                .into_iter()
                .chain(b4.take_lines())
                .collect(),
        };
        self.lines.extend(new);
    }

    /// Sends the oversize streams fragmented, closes the session or softwire, and returns
    /// what the trial's report is printed with: the session and the fragmented streams.
    pub fn finish(mut self) -> Result<InsideSummary, BenchError> {
        self.collect_lines();
        let mut rows = Vec::new();
        let mut lines = std::mem::take(&mut self.lines);
        let summary = match self.ends {
            Ends::Pppoe {
                mut ac,
                mut client,
                ac_info,
                cl_info,
            } => {
                ac.capture(true);
                client.capture(true);
                for o in &self.oversize {
                    let (tx, rx, mtu) = if o.tx_port == 0 {
                        (&ac, &client, ac_info.max_datagram())
                    } else {
                        (&client, &ac, cl_info.max_datagram())
                    };
                    let _ = rx.take_datagrams();
                    let (sent, frags) = send_slow(o, |p| {
                        let Some(fr) = ipfrag::fragment(p, mtu) else {
                            return 0;
                        };
                        let n = fr.len();
                        tx.send_datagrams(fr);
                        n
                    });
                    let mut re = Ipv4Reassembler::new(ReassemblyConfig::default());
                    let whole = collect_until(sent, || {
                        rx.take_datagrams()
                            .iter()
                            .filter_map(|p| re.push(control::now(), p).ok().flatten())
                            .filter(|p| signature_id(p) == Some(o.id))
                            .count() as u64
                    });
                    rows.push(row(o, sent, frags, whole));
                }
                // The subscriber hangs up (LCP Terminate, PADT), as a CPE does; then the AC.
                lines.extend(client.take_lines());
                let cl = client.finish().map_err(|e| failed(e.to_string()))?;
                lines.extend(client.take_lines());
                lines.push(cl.clone());
                lines.extend(ac.take_lines());
                let srv = ac.finish().map_err(|e| failed(e.to_string()))?;
                lines.extend(ac.take_lines());
                lines.push(srv.clone());
                let num = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
                serde_json::json!({
                    "kind": "pppoe", "session_id": cl_info.session_id,
                    "setup_ms": self.setup.as_secs_f64() * 1e3,
                    "client_setup_ms": cl["setup_ms"],
                    "max_datagram_a_to_b": ac_info.max_datagram(),
                    "max_datagram_b_to_a": cl_info.max_datagram(),
                    "subscriber": cl_info.negotiated.local_ipv4.map(|a| a.to_string()),
                    "retransmits": num(&cl["retransmits"]) + num(&srv["retransmits"]),
                    "ended": srv["ended"],
                })
            }
            Ends::Dslite {
                aftr,
                b4,
                a_info,
                b_info,
            } => {
                aftr.capture(true);
                b4.capture(true);
                for o in &self.oversize {
                    let (tx, rx) = if o.tx_port == 0 {
                        (&aftr, &b4)
                    } else {
                        (&b4, &aftr)
                    };
                    let _ = rx.take_datagrams();
                    let (sent, frags) = send_slow(o, |p| tx.encapsulate(b_info.local, p));
                    let whole = collect_until(sent, || {
                        rx.take_datagrams()
                            .iter()
                            .filter(|p| signature_id(p) == Some(o.id))
                            .count() as u64
                    });
                    rows.push(row(o, sent, frags, whole));
                }
                lines.extend(aftr.take_lines());
                lines.extend(b4.take_lines());
                let a = aftr.finish().map_err(|e| failed(e.to_string()))?;
                let b = b4.finish().map_err(|e| failed(e.to_string()))?;
                lines.push(a);
                lines.push(b.clone());
                serde_json::json!({
                    "kind": "dslite", "aftr": a_info.local.to_string(),
                    "b4": b_info.local.to_string(), "mtu": b_info.mtu,
                    "setup_ms": self.setup.as_secs_f64() * 1e3,
                    "b4_setup_ms": b["setup_ms"],
                    "retries": b["retries"],
                })
            }
        };
        Ok(InsideSummary {
            inside: summary,
            fragmented: rows,
            sessions: lines,
        })
    }
}

/// `wirerate trial --inside`: the session or softwire between the ports carries the streams.
impl Carrier for Inside {
    fn carry(&self, frame: &mut StreamSpec, tx_port: usize) -> Result<(), CarryError> {
        self.apply(frame, tx_port)
    }
}
