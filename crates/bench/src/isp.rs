//! The ISP (or subscriber) side a run plays on a port: a plan's `[ports.NAME.pppoe]` becomes
//! `emulate`'s PPPoE access concentrator or client, `[ports.NAME.dslite]` its DS-Lite AFTR or
//! B4, each running in its own thread on the port's interface (`engine::control`) for the
//! whole run.
//!
//! The run waits for the session before any traffic ([`SessionPort::wait_up`]; a timeout is a
//! clear error and nothing is sent), test streams ride it (see [`crate::testbed`]), and at the
//! end — or on Ctrl-C — the sessions are closed (LCP Terminate + PADT) and the statistics
//! returned for the results: setup time, retransmissions, sessions ended and input refused,
//! both by reason.

use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use emulate::mape::BrConfig;
use emulate::mape_port::{BrEvent, BrPort, BrPortConfig};
use emulate::ppp::link::Credential;
use emulate::ppp::AuthMethod;
use emulate::pppoe::client::{Client, ClientConfig, ClientEvent};
use emulate::pppoe::server::{Server, ServerConfig, ServerEvent};
use emulate::pppoe::SessionInfo;
use emulate::softwire::{AftrConfig, AftrEvent, AftrPort, B4Config, B4Event, B4Port, SoftwireInfo};
use engine::control::{self, ControlPort};
use engine::port::PortSpec;
use engine::tun::Tun;
use serde_json::{json, Value};
use wire::ethernet::MacAddr;
use wire::units::Nanos;

use crate::plan::{DsliteRole, DsliteSettings, MapeSettings, PppAuth, PppoeRole, PppoeSettings};
use crate::port_error::{Peer, PortError, PortKind};
use crate::results::SessionDrop;
use crate::session_json as sj;

/// One line of `sessions.jsonl`: an event of a port's control plane, or its final statistics.
pub type SessionLine = Value;

/// Where an access concentrator with `internet` hands its sessions' IP packets: a TUN
/// device in a namespace the run created, holding the Internet host's address and a route to
/// the subscribers' /24. iperf3's server runs there; the namespace goes when the port finishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Internet {
    pub netns: String,
    pub tun: String,
    pub addr: std::net::Ipv4Addr,
}

/// The TUN device's name in the Internet namespace.
pub const INTERNET_TUN: &str = "wr-inet0";

impl Internet {
    /// Creates the namespace `wr-inet<pid>-<port>` and the TUN device in it: `addr`/32 on it,
    /// `mtu`, routes to `routes` (where the subscribers are).
    pub(crate) fn create(
        port: &str,
        addr: std::net::Ipv4Addr,
        mtu: u32,
        routes: Vec<String>,
    ) -> Result<(Internet, Tun), String> {
        let netns = format!("wr-inet{}-{port}", std::process::id());
        let _ = lab::netns::delete(&netns);
        lab::netns::add(&netns).map_err(|e| format!("creating namespace {netns}: {e}"))?;
        let inet = Internet {
            netns,
            tun: INTERNET_TUN.into(),
            addr,
        };
        let made = (|| {
            lab::tun::configure(
                Some(&inet.netns),
                "lo",
                &lab::tun::TunSetup {
                    mtu: 65536,
                    ..Default::default()
                },
            )
            .map_err(|e| e.to_string())?;
            // The same Internet side `wirerate pppoe server --tun` makes by hand.
            crate::hand::internet_tun(&inet.tun, Some(&inet.netns), mtu, addr, routes)
                .map_err(|e| e.to_string())
        })();
        match made {
            Ok(tun) => Ok((inet, tun)),
            Err(e) => {
                inet.remove();
                Err(format!("the Internet side of port {port}: {e}"))
            }
        }
    }

    pub(crate) fn remove(&self) {
        let _ = lab::netns::delete(&self.netns);
    }
}

/// A PPPoE control plane running on one port.
pub struct SessionPort {
    /// The port's name in the plan.
    pub port: String,
    /// The access concentrator's Internet side (`internet` in the plan).
    pub internet: Option<Internet>,
    role: PppoeRole,
    stop: Arc<AtomicBool>,
    up: Arc<AtomicBool>,
    drops: Arc<Mutex<Vec<SessionDrop>>>,
    infos: Receiver<SessionInfo>,
    lines: Receiver<SessionLine>,
    datagrams: Datagrams,
    handle: Option<JoinHandle<Result<Value, String>>>,
    info: Option<SessionInfo>,
    /// How many drops had happened when `info` was taken.
    drops_at_info: usize,
}

fn auth(list: &[PppAuth]) -> Vec<AuthMethod> {
    list.iter()
        .map(|a| match a {
            PppAuth::Pap => AuthMethod::Pap,
            PppAuth::Chap => AuthMethod::ChapMd5,
        })
        .collect()
}

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn server_stats(s: &Server, port: &ControlPort) -> Value {
    let st = &s.stats;
    json!({
        "role": "server",
        "padi_rx": st.padi_rx, "pado_tx": st.pado_tx, "padi_unserved": st.padi_unserved,
        "padr_rx": st.padr_rx, "pads_tx": st.pads_tx, "pads_refused": st.pads_refused,
        "padr_repeated": st.padr_repeated, "padt_rx": st.padt_rx, "padt_tx": st.padt_tx,
        "sessions_started": st.sessions_started, "sessions_up_total": st.sessions_up_total,
        "setup_count": st.setup.count,
        "setup_min_ms": (st.setup.count > 0).then(|| sj::ms(st.setup.min)),
        "setup_mean_ms": (st.setup.count > 0).then(|| sj::ms(st.setup.total) / st.setup.count as f64),
        "setup_max_ms": (st.setup.count > 0).then(|| sj::ms(st.setup.max)),
        "retransmits": st.retransmits,
        "ended": Value::Object(sj::counts(&st.ended)),
        "refused": Value::Object(sj::counts(&st.hostile)),
        "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
        "tx_failed": port.stats.tx_failed,
    })
}

fn client_stats(c: &Client, port: &ControlPort) -> Value {
    let st = &c.stats;
    json!({
        "role": "client",
        "padi_tx": st.padi_tx, "pado_rx": st.pado_rx, "padr_tx": st.padr_tx,
        "pads_rx": st.pads_rx, "padt_rx": st.padt_rx, "padt_tx": st.padt_tx,
        "setup_ms": st.setup.map(sj::ms),
        "retransmits": st.retransmits,
        "ended": Value::Object(sj::counts(&st.ended)),
        "refused": Value::Object(sj::counts(&st.hostile)),
        "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
        "tx_failed": port.stats.tx_failed,
    })
}

/// How long closing (LCP Terminate, PADT) may take at the end.
const CLOSE_GRACE: Duration = Duration::from_millis(800);

/// IPv4 datagrams a caller sends through a port's session by its control plane, and those the
/// session delivered while [`SessionPort::capture`] was on: the slow path `trial --inside
/// --fragment-oversize` sends the fragments of oversize packets on (`crate::inside`). The
/// control thread owns the machine, so both go through it.
#[derive(Default)]
struct Datagrams {
    capture: Arc<AtomicBool>,
    delivered: Arc<Mutex<Vec<Vec<u8>>>>,
    outbox: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Datagrams {
    fn shared(&self) -> Datagrams {
        Datagrams {
            capture: self.capture.clone(),
            delivered: self.delivered.clone(),
            outbox: self.outbox.clone(),
        }
    }

    /// Keeps a delivered datagram when capturing (test frames reach the control socket too;
    /// without capture they are the engine's to count).
    fn delivered(&self, payload: Vec<u8>) {
        if self.capture.load(Ordering::SeqCst) {
            self.delivered
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(payload);
        }
    }

    fn queued(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.outbox.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Starts (`true`) or stops keeping what the session or softwire delivers.
    fn set_capture(&self, on: bool) {
        self.capture.store(on, Ordering::SeqCst);
    }

    /// What was delivered while capturing, since the last call.
    fn take_delivered(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.delivered.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

struct Chans {
    name: String,
    stop: Arc<AtomicBool>,
    up: Arc<AtomicBool>,
    /// Every session of this port that went down, in order (the testbed flags the trials they
    /// fell into).
    drops: Arc<Mutex<Vec<SessionDrop>>>,
    info: Sender<SessionInfo>,
    lines: Sender<SessionLine>,
    ready: Sender<()>,
    datagrams: Datagrams,
}

impl Chans {
    /// A session of this port went down: remembered for the trial it fell into.
    fn dropped(&self, reason: String) {
        let d = SessionDrop {
            port: self.name.clone(),
            unix_ms: now_ms(),
            reason,
        };
        if let Ok(mut v) = self.drops.lock() {
            v.push(d);
        }
    }

    fn line(&self, mut v: Value) {
        v["port"] = self.name.clone().into();
        v["unix_ms"] = now_ms().into();
        let _ = self.lines.send(v);
    }
}

fn run_server(
    port: PortSpec,
    cfg: &PppoeSettings,
    ch: Chans,
    mut tun: Option<Tun>,
) -> Result<Value, String> {
    let mut cp = ControlPort::open(&port).map_err(|e| e.to_string())?;
    let mac = MacAddr(cp.mac().map_err(|e| e.to_string())?);
    let mut s = Server::try_new(ServerConfig {
        mac,
        ac_name: if cfg.ac_name.is_empty() {
            "wirerate-ac".into()
        } else {
            cfg.ac_name.clone()
        },
        service_names: if cfg.service_name.is_empty() {
            Vec::new()
        } else {
            vec![cfg.service_name.clone()]
        },
        mru: cfg.mru,
        auth: auth(&cfg.auth),
        credentials: cfg
            .users
            .iter()
            .map(|(u, p)| Credential::new(u, p))
            .collect(),
        subscribers: cfg
            .subscribers
            .as_deref()
            .map(crate::sessions::load_subscribers)
            .transpose()
            .map_err(|e| e.to_string())?
            .map(std::sync::Arc::new),
        gateway: cfg.gateway,
        pool_first: cfg.pool,
        pool_size: cfg.pool_size,
        echo_interval: Nanos(cfg.echo_interval.as_nanos() as u64),
        ..ServerConfig::default()
    })
    .map_err(|e| format!("the access concentrator's settings: {e}"))?;
    if tun.is_some() {
        s.enable_ip_relay();
    }
    let _ = ch.ready.send(());
    // The session the caller's datagrams go into: the newest.
    let mut riding: Option<emulate::pppoe::SessionKey> = None;
    while !ch.stop.load(Ordering::SeqCst) {
        for p in ch.datagrams.queued() {
            if let Some(key) = riding {
                s.send(control::now(), key, wire::ppp::Protocol::IPV4, &p);
            }
        }
        match tun.as_mut() {
            Some(t) => {
                cp.step_relay(&mut s, t, Duration::from_millis(20))
                    .map_err(|e| e.to_string())?;
                for syn in t.take_syns() {
                    ch.line(sj::syn(&syn));
                }
            }
            None => cp
                .step(&mut s, Duration::from_millis(20))
                .map_err(|e| e.to_string())?,
        }
        for e in s.take_events() {
            match e {
                ServerEvent::SessionUp {
                    info, setup, user, ..
                } => {
                    ch.up.store(true, Ordering::SeqCst);
                    riding = Some(info.key(true));
                    let _ = ch.info.send(info);
                    let mut v = sj::pppoe_info(&info);
                    v["event"] = "up".into();
                    v["user"] = user.into();
                    v["setup_ms"] = sj::ms(setup).into();
                    ch.line(v);
                }
                ServerEvent::SessionDown { key, reason } => {
                    ch.up.store(s.stats.sessions_up > 0, Ordering::SeqCst);
                    ch.dropped(format!("{reason:?}"));
                    ch.line(json!({"event": "down", "session_id": key.session_id,
                        "peer_mac": key.client.to_string(), "reason": format!("{reason:?}")}));
                }
                // Test frames inside the session reach this socket too; they are the
                // engine's to count unless the caller captures.
                ServerEvent::Data { payload, .. } => ch.datagrams.delivered(payload),
            }
        }
    }
    // Terminate, and a PADT for a CPE that does not answer: its session is counted as ended.
    crate::hand::pppoe::close_sessions(&mut cp, &mut s, CLOSE_GRACE, |_| {})
        .map_err(|e| e.to_string())?;
    for e in s.take_events() {
        if let ServerEvent::SessionDown { key, reason } = e {
            ch.line(json!({"event": "down", "session_id": key.session_id,
                "peer_mac": key.client.to_string(), "reason": format!("{reason:?}")}));
        }
    }
    let mut v = server_stats(&s, &cp);
    if let Some(t) = &tun {
        v["tun"] = sj::tun(t);
    }
    Ok(v)
}

fn run_client(port: PortSpec, cfg: &PppoeSettings, ch: Chans) -> Result<Value, String> {
    let mut cp = ControlPort::open(&port).map_err(|e| e.to_string())?;
    let mac = MacAddr(cp.mac().map_err(|e| e.to_string())?);
    let (user, pass) = cfg.users.first().cloned().unwrap_or_default();
    let mut c = Client::new(ClientConfig {
        mac,
        service_name: cfg.service_name.clone(),
        ac_name: (!cfg.ac_name.is_empty()).then(|| cfg.ac_name.clone()),
        mru: cfg.mru,
        credential: Credential::new(&user, &pass),
        auth: auth(&cfg.auth),
        echo_interval: Nanos(cfg.echo_interval.as_nanos() as u64),
        ..ClientConfig::default()
    });
    let _ = ch.ready.send(());
    c.start(control::now());
    while !ch.stop.load(Ordering::SeqCst) {
        for p in ch.datagrams.queued() {
            c.send(control::now(), wire::ppp::Protocol::IPV4, &p);
        }
        cp.step(&mut c, Duration::from_millis(20))
            .map_err(|e| e.to_string())?;
        for e in c.take_events() {
            match e {
                ClientEvent::Up(info) => {
                    ch.up.store(true, Ordering::SeqCst);
                    let _ = ch.info.send(info);
                    let mut v = sj::pppoe_info(&info);
                    v["event"] = "up".into();
                    v["setup_ms"] = c.stats.setup.map(sj::ms).into();
                    ch.line(v);
                }
                ClientEvent::Down(reason) => {
                    ch.up.store(false, Ordering::SeqCst);
                    ch.dropped(format!("{reason:?}"));
                    ch.line(json!({"event": "down", "reason": format!("{reason:?}")}));
                }
                ClientEvent::Data { payload, .. } => ch.datagrams.delivered(payload),
            }
        }
    }
    if c.is_up() {
        c.close(control::now());
        let _ = cp.run_until(&mut c, CLOSE_GRACE, |c| !c.is_up());
        for e in c.take_events() {
            if let ClientEvent::Down(reason) = e {
                ch.line(json!({"event": "down", "reason": format!("{reason:?}")}));
            }
        }
    }
    Ok(client_stats(&c, &cp))
}

impl SessionPort {
    /// Starts the control plane `cfg` on `port` (named `name` in the plan).
    pub fn start(
        name: &str,
        port: &PortSpec,
        cfg: &PppoeSettings,
    ) -> Result<SessionPort, PortError> {
        let stop = Arc::new(AtomicBool::new(false));
        let up = Arc::new(AtomicBool::new(false));
        let drops = Arc::new(Mutex::new(Vec::new()));
        let (info_tx, infos) = mpsc::channel();
        let (line_tx, lines) = mpsc::channel();
        let (ready_tx, ready) = mpsc::channel();
        let datagrams = Datagrams::default();
        let ch = Chans {
            datagrams: datagrams.shared(),
            name: name.to_string(),
            stop: stop.clone(),
            up: up.clone(),
            drops: drops.clone(),
            info: info_tx,
            lines: line_tx,
            ready: ready_tx,
        };
        let (port2, cfg2, role) = (port.clone(), cfg.clone(), cfg.role);
        let (internet, tun) = match (role, cfg.internet) {
            (PppoeRole::Server, Some(addr)) => {
                let net = emulate::pppoe::documentation_net(cfg.pool);
                let routes = net.map(|n| format!("{n}/24")).into_iter().collect();
                let (i, t) = Internet::create(name, addr, 1492, routes).map_err(|reason| {
                    PortError::Internet {
                        port: name.to_string(),
                        reason,
                    }
                })?;
                (Some(i), Some(t))
            }
            _ => (None, None),
        };
        let spawned = std::thread::Builder::new()
            .name(format!("pppoe-{name}"))
            .spawn(move || match role {
                PppoeRole::Server => run_server(port2, &cfg2, ch, tun),
                PppoeRole::Client => run_client(port2, &cfg2, ch),
            });
        let handle = match spawned {
            Ok(h) => h,
            Err(e) => {
                if let Some(i) = &internet {
                    i.remove();
                }
                return Err(PortError::Spawn {
                    kind: PortKind::Pppoe,
                    source: e,
                });
            }
        };
        let mut sp = SessionPort {
            port: name.to_string(),
            internet,
            role,
            stop,
            up,
            drops,
            infos,
            lines,
            datagrams,
            handle: Some(handle),
            info: None,
            drops_at_info: 0,
        };
        // The thread reports once its socket is open; an error opening it ends the thread.
        if ready.recv_timeout(Duration::from_secs(5)).is_err() {
            let reason = sp
                .finish()
                .err()
                .map_or_else(|| "no answer".into(), |e| e.to_string());
            return Err(PortError::Ended {
                kind: PortKind::Pppoe,
                port: name.to_string(),
                reason,
            });
        }
        Ok(sp)
    }

    /// Waits for the session (the first one, for a server), at most `timeout`, giving up when
    /// `stop` is set. Events seen meanwhile are in [`take_lines`](Self::take_lines); the
    /// caller says where they went (a run: `sessions.jsonl`).
    pub fn wait_up(
        &mut self,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<SessionInfo, PortError> {
        let end = Instant::now() + timeout;
        loop {
            if let Ok(info) = self.infos.try_recv() {
                self.info = Some(info);
                self.drops_at_info = self.drops().len();
                return Ok(info);
            }
            if stop.load(Ordering::SeqCst) {
                return Err(PortError::Interrupted);
            }
            if self.handle.as_ref().is_some_and(|h| h.is_finished()) {
                let reason = match self.handle.take().map(|h| h.join()) {
                    Some(Ok(Err(e))) => e,
                    _ => "its thread ended".into(),
                };
                return Err(PortError::Ended {
                    kind: PortKind::Pppoe,
                    port: self.port.clone(),
                    reason,
                });
            }
            if Instant::now() >= end {
                return Err(PortError::NoPeer {
                    port: self.port.clone(),
                    peer: match self.role {
                        PppoeRole::Server => Peer::Subscriber,
                        PppoeRole::Client => Peer::AccessConcentrator,
                    },
                    timeout,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A session that came up after a drop since the last look (a gateway that dropped its
    /// session and dialled again between two trials): the newest, which test streams ride
    /// from now on. `None` while no session went down: an access concentrator serving more
    /// subscribers keeps the streams on the session they were built for.
    pub fn newer_session(&mut self) -> Option<SessionInfo> {
        let drops = self.drops().len();
        if drops == self.drops_at_info {
            return None;
        }
        let newest = self.infos.try_iter().last()?;
        self.info = Some(newest);
        self.drops_at_info = drops;
        Some(newest)
    }

    /// The session test streams ride (after [`wait_up`](Self::wait_up)).
    pub fn info(&self) -> Option<SessionInfo> {
        self.info
    }

    /// Whether a session is up now.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::SeqCst)
    }

    /// Every session of this port that went down so far, in order.
    pub fn drops(&self) -> Vec<SessionDrop> {
        self.drops.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Events (up, down with reason) since the last call.
    pub fn take_lines(&self) -> Vec<SessionLine> {
        self.lines.try_iter().collect()
    }

    /// Sends IPv4 datagrams (each at most the session's MRU) into the session the streams
    /// ride, through the control plane: the slow path, for what the fast path cannot send.
    pub fn send_datagrams(&self, packets: Vec<Vec<u8>>) {
        self.datagrams
            .outbox
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(packets);
    }

    /// From now on (`true`), keeps the datagrams the session delivers for
    /// [`take_datagrams`](Self::take_datagrams); `false` drops them again.
    pub fn capture(&self, on: bool) {
        self.datagrams.set_capture(on);
    }

    /// The datagrams delivered while capturing, since the last call.
    pub fn take_datagrams(&self) -> Vec<Vec<u8>> {
        self.datagrams.take_delivered()
    }

    /// Closes the sessions (LCP Terminate + PADT), stops the thread and returns the
    /// statistics line.
    pub fn finish(&mut self) -> Result<SessionLine, PortError> {
        self.stop.store(true, Ordering::SeqCst);
        let Some(h) = self.handle.take() else {
            return Err(PortError::AlreadyFinished);
        };
        let joined = h.join();
        // The thread (and the TUN device it held) is gone: the namespace can go.
        if let Some(i) = &self.internet {
            i.remove();
        }
        let mut v = joined
            .map_err(|_| PortError::Panicked {
                kind: PortKind::Pppoe,
            })?
            .map_err(|reason| PortError::Failed {
                kind: PortKind::Pppoe,
                reason,
            })?;
        v["event"] = "stats".into();
        v["port"] = self.port.clone().into();
        v["unix_ms"] = now_ms().into();
        Ok(v)
    }
}

impl Drop for SessionPort {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        if let Some(i) = &self.internet {
            i.remove();
        }
    }
}

/// A DS-Lite control plane running on one port: `emulate`'s AFTR (the ISP side; it answers
/// ND for its tunnel address and terminates every B4's softwire) or a B4 (which resolves the
/// AFTR, probes the tunnel with an echo and is then up).
pub struct SoftwirePort {
    /// The port's name in the plan.
    pub port: String,
    /// The AFTR's Internet side (`internet` in the plan).
    pub internet: Option<Internet>,
    machine: SoftwireMachine,
    lines: Arc<std::sync::Mutex<Vec<SessionLine>>>,
    datagrams: Datagrams,
    /// Removes the Internet namespace when the port goes, however it goes. The last field:
    /// fields drop in order, so the machine's thread (holding the TUN device) ends first.
    _internet_guard: Option<InternetGuard>,
}

enum SoftwireMachine {
    Aftr(control::Background<AftrPort>),
    B4(control::Background<B4Port>),
    /// A MAP-E BR: on the wire its tunnel to a CE is IPv4-in-IPv6 like a softwire, so it is
    /// a softwire port whose ISP side checks the CE's address and ports (`[ports.NAME.mape]`).
    Br(control::Background<BrPort>),
}

/// Removes an Internet namespace on drop.
struct InternetGuard(Internet);

impl Drop for InternetGuard {
    fn drop(&mut self) {
        self.0.remove();
    }
}

impl SoftwirePort {
    /// Starts the AFTR or B4 `cfg` on `port` (named `name` in the plan).
    pub fn start(
        name: &str,
        port: &PortSpec,
        cfg: &DsliteSettings,
    ) -> Result<SoftwirePort, PortError> {
        let lines: Arc<std::sync::Mutex<Vec<SessionLine>>> = Arc::default();
        let (l2, pname) = (lines.clone(), name.to_string());
        let push = move |mut v: Value| {
            v["port"] = pname.clone().into();
            v["unix_ms"] = now_ms().into();
            l2.lock().unwrap_or_else(|p| p.into_inner()).push(v);
        };
        let address = cfg.address;
        let (provision, aftr_name, mtu) = (cfg.provision, cfg.aftr_name.clone(), cfg.mtu);
        let datagrams = Datagrams::default();
        let (d1, d2) = (datagrams.shared(), datagrams.shared());
        // An AFTR with `internet`: its softwires' IPv4 goes to a TUN device in a namespace of
        // its own, where iperf3's server runs. The default route points back into it: with
        // no NAT44 in our AFTR, the source a B4 tunnels is its LAN host's own (a B4 does no
        // NAT44, RFC 6333) or 192.0.0.2, and the AFTR routes replies by the source it
        // learned; what it learned nothing for it drops (`NoRoute`).
        let (internet, tun) = match (cfg.role, cfg.internet) {
            (DsliteRole::Aftr, Some(addr)) => {
                let (i, t) = Internet::create(name, addr, mtu as u32, vec!["default".into()])
                    .map_err(|reason| PortError::Internet {
                        port: name.to_string(),
                        reason,
                    })?;
                (Some(i), Some(t))
            }
            _ => (None, None),
        };
        let guard = internet.clone().map(InternetGuard);
        let machine = match cfg.role {
            DsliteRole::Aftr => {
                let relay = tun.is_some();
                let make = move |mac: [u8; 6]| {
                    let mut c = AftrConfig::new(address, MacAddr(mac));
                    c.tunnel.mtu = mtu;
                    if provision {
                        c = c.with_provisioning();
                        if let (Some(p), Some(n)) = (&mut c.provision, &aftr_name) {
                            p.dhcp.aftr_name = Some(n.clone());
                        }
                    }
                    let mut m = AftrPort::new(c);
                    if relay {
                        m.enable_ip_relay();
                    }
                    m
                };
                let push2 = push.clone();
                let events = move |m: &mut AftrPort| {
                    for e in m.take_events() {
                        // Test frames are the engine's to count; new softwires and the CPE's
                        // DHCPv6 bindings are events.
                        match e {
                            AftrEvent::SoftwireUp { info, .. } => {
                                let mut v = sj::softwire(&info);
                                v["event"] = "up".into();
                                push(v);
                            }
                            AftrEvent::Provision(p) => push(sj::provision(&p)),
                            AftrEvent::Packet { packet, .. } => d1.delivered(packet),
                        }
                    }
                };
                let bg = match tun {
                    Some(t) => control::Background::start_relay(
                        port.clone(),
                        t,
                        make,
                        move |m: &mut AftrPort, t: &mut Tun| {
                            events(m);
                            for syn in t.take_syns() {
                                push2(sj::syn(&syn));
                            }
                        },
                    ),
                    None => control::Background::start_with(port.clone(), make, events),
                }
                .map_err(|source| PortError::Open {
                    kind: PortKind::DsliteAftr,
                    port: name.to_string(),
                    source,
                })?;
                SoftwireMachine::Aftr(bg)
            }
            DsliteRole::B4 => {
                let aftr = cfg.peer.ok_or(PortError::NoAftrAddress)?;
                let bg = control::Background::start_with(
                    port.clone(),
                    move |mac| {
                        let mut c = B4Config::new(address, MacAddr(mac), aftr);
                        c.tunnel.mtu = mtu;
                        let mut b = B4Port::new(c);
                        b.start(control::now());
                        b
                    },
                    move |m: &mut B4Port| {
                        for e in m.take_events() {
                            match e {
                                B4Event::Packet(p) => d2.delivered(p),
                                other => push(json!({"event": format!("{other:?}")})),
                            }
                        }
                    },
                )
                .map_err(|source| PortError::Open {
                    kind: PortKind::DsliteB4,
                    port: name.to_string(),
                    source,
                })?;
                SoftwireMachine::B4(bg)
            }
        };
        Ok(SoftwirePort {
            port: name.to_string(),
            internet,
            machine,
            lines,
            datagrams,
            _internet_guard: guard,
        })
    }

    /// Starts the MAP-E BR `cfg` on `port` (named `name` in the plan): the AFTR's plumbing —
    /// the Internet namespace and its TUN hand-off when `internet` is set, events as session
    /// lines — with `emulate::mape_port::BrPort` as the machine. Like an AFTR it does not
    /// wait: a CE is known from its first tunnelled packet that passes the BR's checks.
    pub fn start_br(
        name: &str,
        port: &PortSpec,
        cfg: &MapeSettings,
    ) -> Result<SoftwirePort, PortError> {
        let rule = cfg.rule().map_err(|source| PortError::MapeRule {
            port: name.to_string(),
            source,
        })?;
        let lines: Arc<std::sync::Mutex<Vec<SessionLine>>> = Arc::default();
        let (l2, pname) = (lines.clone(), name.to_string());
        let push = move |mut v: Value| {
            v["port"] = pname.clone().into();
            v["unix_ms"] = now_ms().into();
            l2.lock().unwrap_or_else(|p| p.into_inner()).push(v);
        };
        let datagrams = Datagrams::default();
        let d1 = datagrams.shared();
        // With `internet`, the default route of the Internet namespace points into the TUN:
        // replies to the CEs' shared addresses go to the BR, which maps them by the rule.
        let (internet, tun) = match cfg.internet {
            Some(addr) => {
                let (i, t) = Internet::create(name, addr, cfg.mtu as u32, vec!["default".into()])
                    .map_err(|reason| PortError::Internet {
                    port: name.to_string(),
                    reason,
                })?;
                (Some(i), Some(t))
            }
            None => (None, None),
        };
        let guard = internet.clone().map(InternetGuard);
        let (address, mtu, provision, fmr) = (cfg.address, cfg.mtu, cfg.provision, cfg.fmr);
        let relay = tun.is_some();
        let make = move |mac: [u8; 6]| {
            let mut b = BrConfig::new(address, vec![rule]);
            b.mtu = mtu;
            let mut c = BrPortConfig::new(b, MacAddr(mac));
            if provision {
                c = c.with_provisioning(fmr);
            }
            let mut m = BrPort::new(c);
            if relay {
                m.enable_ip_relay();
            }
            m
        };
        let push2 = push.clone();
        let events = move |m: &mut BrPort| {
            for e in m.take_events() {
                match e {
                    BrEvent::CeUp { ce, mapping, .. } => {
                        let mut v = sj::ce_mapping(ce, &mapping);
                        v["event"] = "up".into();
                        push(v);
                    }
                    BrEvent::Provision(p) => push(sj::provision(&p)),
                    BrEvent::Packet { packet, .. } => d1.delivered(packet),
                }
            }
        };
        let bg = match tun {
            Some(t) => control::Background::start_relay(
                port.clone(),
                t,
                make,
                move |m: &mut BrPort, t: &mut Tun| {
                    events(m);
                    for syn in t.take_syns() {
                        push2(sj::syn(&syn));
                    }
                },
            ),
            None => control::Background::start_with(port.clone(), make, events),
        }
        .map_err(|source| PortError::Open {
            kind: PortKind::MapeBr,
            port: name.to_string(),
            source,
        })?;
        Ok(SoftwirePort {
            port: name.to_string(),
            internet,
            machine: SoftwireMachine::Br(bg),
            lines,
            datagrams,
            _internet_guard: guard,
        })
    }

    /// A B4 waits for its tunnel probe's answer (at most `timeout`); an AFTR does not wait:
    /// a softwire starts with the B4's first tunnelled packet, which for a home gateway is
    /// the first test frame. `Some` is the softwire a B4's test frames ride.
    pub fn wait_up(
        &self,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<Option<SoftwireInfo>, PortError> {
        let SoftwireMachine::B4(bg) = &self.machine else {
            return Ok(None);
        };
        let end = Instant::now() + timeout;
        loop {
            let slice = Duration::from_millis(100);
            if let Some(i) =
                bg.wait_for(slice, |m| if m.is_up() { m.softwire_info() } else { None })
            {
                return Ok(Some(i));
            }
            if stop.load(Ordering::SeqCst) {
                return Err(PortError::Interrupted);
            }
            if Instant::now() >= end {
                return Err(PortError::NoTunnel {
                    port: self.port.clone(),
                    timeout,
                    state: bg.with(|m| format!("{:?}", m.state())),
                });
            }
        }
    }

    /// The softwire this port's test frames ride towards the other side: a B4's own once it
    /// is up; an AFTR's to the first B4 it has heard from (by address), learned from that
    /// B4's tunnelled packets — its probe, or the test frames of the forward direction.
    pub fn softwire(&self) -> Option<SoftwireInfo> {
        match &self.machine {
            SoftwireMachine::Aftr(bg) => bg.with(|m| {
                let b4 = m.softwires().next()?;
                m.softwire_info(b4)
            }),
            SoftwireMachine::B4(bg) => bg.with(|m| m.softwire_info().filter(|_| m.is_up())),
            SoftwireMachine::Br(bg) => bg.with(|m| {
                let ce = m.ces().next()?;
                m.softwire_info(ce)
            }),
        }
    }

    /// A MAP-E BR's tunnel towards the CE that sent UDP to `dst`:`dst_port` (the forward
    /// stream of a test): the shared IPv4 address and port that CE's NAPT sent it from, and
    /// the tunnel to the CE at the MAP address `rule` computes from them (RFC 7597 §5.3) —
    /// which is the CE heard from, since the BR checked its source against the same rule.
    /// None before such a packet passed the BR, or on another machine.
    pub fn mape_reply_path(
        &self,
        rule: &wire::map_rule::MapRule,
        dst: std::net::Ipv4Addr,
        dst_port: u16,
    ) -> Option<(std::net::Ipv4Addr, u16, SoftwireInfo)> {
        let SoftwireMachine::Br(bg) = &self.machine else {
            return None;
        };
        bg.with(|m| {
            let (ipv4, port) = m.source_towards(17, dst, dst_port)?;
            let ce = rule.ce_for(ipv4, port)?.ipv6_address();
            Some((ipv4, port, m.softwire_info(ce)?))
        })
    }

    /// Sends an IPv4 packet into the softwire through the control plane (the slow path, for
    /// what the fast path cannot send): an AFTR to the B4 at `b4`, a B4 to its AFTR. The outer
    /// IPv6 packet is fragmented above the tunnel MTU; returns the frames sent (0: refused).
    pub fn encapsulate(&self, b4: Ipv6Addr, ipv4: &[u8]) -> usize {
        match &self.machine {
            SoftwireMachine::Aftr(bg) => bg.with(|m| m.encapsulate(b4, ipv4)).unwrap_or(0),
            SoftwireMachine::B4(bg) => bg.with(|m| m.encapsulate(ipv4)).unwrap_or(0),
            // The BR's rule names the CE (its address and port), not the caller.
            SoftwireMachine::Br(bg) => bg.with(|m| usize::from(m.encapsulate(ipv4).is_ok())),
        }
    }

    /// From now on (`true`), keeps the IPv4 packets the softwire delivers for
    /// [`take_datagrams`](Self::take_datagrams); `false` drops them again.
    pub fn capture(&self, on: bool) {
        self.datagrams.set_capture(on);
    }

    /// The IPv4 packets delivered while capturing, since the last call.
    pub fn take_datagrams(&self) -> Vec<Vec<u8>> {
        self.datagrams.take_delivered()
    }

    /// Whether this port plays the ISP side of the softwire (a DS-Lite AFTR or a MAP-E BR).
    pub fn is_aftr(&self) -> bool {
        matches!(
            self.machine,
            SoftwireMachine::Aftr(_) | SoftwireMachine::Br(_)
        )
    }

    /// Whether the softwire can carry test frames (an AFTR always can).
    pub fn is_up(&self) -> bool {
        match &self.machine {
            SoftwireMachine::Aftr(_) | SoftwireMachine::Br(_) => true,
            SoftwireMachine::B4(bg) => bg.with(|m| m.is_up()),
        }
    }

    /// Events since the last call.
    pub fn take_lines(&self) -> Vec<SessionLine> {
        std::mem::take(&mut *self.lines.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Stops the control plane and returns its statistics line.
    pub fn finish(self) -> Result<SessionLine, PortError> {
        let mut v = match self.machine {
            SoftwireMachine::Aftr(bg) => {
                let (m, ps, tun) = bg.finish_relay().map_err(|source| PortError::Stop {
                    kind: PortKind::DsliteAftr,
                    source,
                })?;
                let mut v = json!({
                    "role": "aftr", "softwires_up": m.stats.softwires_up,
                    "echo_replies": m.stats.echo_replies, "tunnel": sj::tunnel(m.tunnel_stats()),
                    "frames_rx": ps.rx, "frames_tx": ps.tx, "tx_failed": ps.tx_failed,
                });
                if let Some(t) = &tun {
                    v["tun"] = sj::tun(t);
                }
                v
            }
            SoftwireMachine::Br(bg) => {
                let (m, ps, tun) = bg.finish_relay().map_err(|source| PortError::Stop {
                    kind: PortKind::MapeBr,
                    source,
                })?;
                let mut v = json!({
                    "role": "br", "ces_up": m.stats.ces_up, "no_neighbor": m.stats.no_neighbor,
                    "br": sj::br(m.br().stats()),
                    "frames_rx": ps.rx, "frames_tx": ps.tx, "tx_failed": ps.tx_failed,
                });
                if let Some(t) = &tun {
                    v["tun"] = sj::tun(t);
                }
                v
            }
            SoftwireMachine::B4(bg) => {
                let (m, ps) = bg.finish().map_err(|source| PortError::Stop {
                    kind: PortKind::DsliteB4,
                    source,
                })?;
                let st = &m.stats;
                json!({
                    "role": "b4", "probes_tx": st.probes_tx, "probe_replies": st.probe_replies,
                    "retries": st.retries, "setup_ms": st.setup.map(sj::ms),
                    "failed": Value::Object(sj::counts(&st.failed)),
                    "tunnel": m.tunnel_stats().map(sj::tunnel),
                    "frames_rx": ps.rx, "frames_tx": ps.tx, "tx_failed": ps.tx_failed,
                })
            }
        };
        v["event"] = "stats".into();
        v["port"] = self.port.clone().into();
        v["unix_ms"] = now_ms().into();
        Ok(v)
    }
}
