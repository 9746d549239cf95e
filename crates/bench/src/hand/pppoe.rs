//! `wirerate pppoe server|client` by hand: the access concentrator (with its IPv6
//! provisioning when asked) or one subscriber on one interface, until the caller says stop;
//! then the sessions are closed (LCP Terminate + PADT) and the machine handed back for its
//! statistics.

use std::time::{Duration, Instant};

use emulate::pppoe::client::{Client, ClientConfig, ClientEvent};
use emulate::pppoe::server::{Server, ServerConfig, ServerEvent};
use emulate::pppoe::SessionInfo;
use emulate::pppoe_v6::PppoeProvisioning;
use emulate::provision::{ProvisionConfig, ProvisionEvent};
use emulate::util::Entropy;
use engine::control::{self, ControlPort};
use engine::tun::{SynSeen, Tun};
use wire::ethernet::MacAddr;

use super::{configure_wan_tun, failed, open_port, step_relay, BenchError};

/// What the access concentrator saw, in order: a provisioning event of a session comes
/// before the session event that caused it.
#[derive(Debug)]
pub enum ServerNews {
    Session(ServerEvent),
    Provision(ProvisionEvent),
    Syn(SynSeen),
}

/// What the subscriber saw.
#[derive(Debug)]
pub enum ClientNews {
    /// The session is up, `setup_ms` after the first PADI.
    Up {
        info: SessionInfo,
        setup_ms: f64,
    },
    Down(emulate::ppp::link::DownReason),
    Syn(SynSeen),
}

/// The access concentrator after its run: its statistics, its port's, the TUN hand-off's
/// and the provisioning's.
pub struct ServerDone {
    pub server: Server,
    pub port: ControlPort,
    pub tun: Option<Tun>,
    pub provisioning: Option<PppoeProvisioning>,
}

/// The subscriber after its run, and why its session ended if it did on its own.
pub struct ClientDone {
    pub client: Client,
    pub port: ControlPort,
    pub tun: Option<Tun>,
    pub ended: Option<emulate::ppp::link::DownReason>,
}

/// An access concentrator opened on its interface, not yet serving.
pub struct ServerRun {
    /// The interface's MAC, the AC's own.
    pub mac: MacAddr,
    port: ControlPort,
    server: Server,
    tun: Option<Tun>,
    provisioning: Option<PppoeProvisioning>,
}

impl ServerRun {
    /// Opens `dev` (in `netns`) and builds the AC from `cfg` (its MAC is the interface's),
    /// relaying through `tun` when given, provisioning IPv6 when `provision`. `cfg` has been
    /// checked (`ServerConfig::check`) by the caller, who names the flags at fault.
    pub fn open(
        dev: &str,
        netns: Option<&str>,
        mut cfg: ServerConfig,
        tun: Option<Tun>,
        provision: bool,
    ) -> Result<ServerRun, BenchError> {
        Entropy::check_os().map_err(|e| BenchError::Failed(e.to_string()))?;
        let (port, mac) = open_port("pppoe", dev, netns)?;
        cfg.mac = mac;
        let mut server = Server::new(cfg);
        if tun.is_some() {
            server.enable_ip_relay();
        }
        let provisioning =
            provision.then(|| PppoeProvisioning::for_server(ProvisionConfig::pppoe(mac), &server));
        Ok(ServerRun {
            mac,
            port,
            server,
            tun,
            provisioning,
        })
    }

    /// Serves until `stop` says so (or, with `sessions`, once that many sessions came up and
    /// ended), handing every event to `news` as it happens; then closes what is still open.
    pub fn serve(
        mut self,
        sessions: Option<u64>,
        stop: &mut dyn FnMut() -> bool,
        news: &mut dyn FnMut(ServerNews),
    ) -> Result<ServerDone, BenchError> {
        let ServerRun {
            port,
            server: srv,
            tun,
            provisioning: prov,
            ..
        } = &mut self;
        loop {
            if stop() {
                break;
            }
            if sessions
                .is_some_and(|n| srv.stats.ended.total() >= n && srv.stats.sessions_up_total >= n)
            {
                break;
            }
            step_relay(port, srv, tun.as_mut(), |s| news(ServerNews::Syn(s)))?;
            if let Some(pv) = prov.as_mut() {
                // The AC's control loop wakes at least every 50 ms: RA timing is that coarse.
                pv.poll(control::now(), srv);
            }
            server_events(srv, prov.as_mut(), news);
        }
        close_sessions(port, srv, Duration::from_millis(500), |srv| {
            // Sessions that end now still get their line: one whose authentication failed and
            // whose peer left without answering ends here, at the Terminate-Request's timeout.
            server_events(srv, prov.as_mut(), news)
        })?;
        server_events(srv, prov.as_mut(), news);
        Ok(ServerDone {
            server: self.server,
            port: self.port,
            tun: self.tun,
            provisioning: self.provisioning,
        })
    }
}

/// Closes every session still open (LCP Terminate-Request, then PADT), giving the peers
/// `grace` to answer, and calling `each` after every turn; a peer that did not answer (gone,
/// or a failed login that left without a word) gets its PADT now and its session is counted
/// as ended (they were left open and uncounted: issue 19 row 17). The end of every access
/// concentrator's run, by hand ([`ServerRun::serve`]) or for a plan (`crate::isp`).
pub(crate) fn close_sessions(
    port: &mut ControlPort,
    srv: &mut Server,
    grace: Duration,
    mut each: impl FnMut(&mut Server),
) -> Result<(), BenchError> {
    let keys: Vec<_> = srv.sessions().collect();
    for k in keys {
        srv.close(control::now(), k);
    }
    let end = Instant::now() + grace;
    while Instant::now() < end && srv.session_count() > 0 {
        port.step(srv, Duration::from_millis(20)).map_err(failed)?;
        each(srv);
    }
    let keys: Vec<_> = srv.sessions().collect();
    if !keys.is_empty() {
        for k in keys {
            srv.abort(control::now(), k);
        }
        port.step(srv, Duration::from_millis(20)).map_err(failed)?;
    }
    Ok(())
}

/// Hands the server's events (session up and down) to `news`, each after the session's IPv6
/// provisioning has seen it (its lease events come first).
fn server_events(
    srv: &mut Server,
    mut prov: Option<&mut PppoeProvisioning>,
    news: &mut dyn FnMut(ServerNews),
) {
    for e in srv.take_events() {
        if let Some(pv) = prov.as_deref_mut() {
            pv.handle_event(control::now(), &e, srv);
            for pe in pv.take_events() {
                news(ServerNews::Provision(pe));
            }
        }
        if !matches!(e, ServerEvent::Data { .. }) {
            news(ServerNews::Session(e));
        }
    }
}

/// A subscriber opened on its interface, not yet dialling.
pub struct ClientRun {
    /// The interface's MAC, the subscriber's own.
    pub mac: MacAddr,
    netns: Option<String>,
    port: ControlPort,
    client: Client,
    tun: Option<Tun>,
}

impl ClientRun {
    /// Opens `dev` (in `netns`) and builds the subscriber from `cfg` (checked by the caller),
    /// exposing its session as `tun` (in `netns`) when given.
    pub fn open(
        dev: &str,
        netns: Option<&str>,
        mut cfg: ClientConfig,
        tun: Option<Tun>,
    ) -> Result<ClientRun, BenchError> {
        Entropy::check_os().map_err(|e| BenchError::Failed(e.to_string()))?;
        let (port, mac) = open_port("pppoe", dev, netns)?;
        cfg.mac = mac;
        let mut client = Client::new(cfg);
        if tun.is_some() {
            client.enable_ip_relay();
        }
        Ok(ClientRun {
            mac,
            netns: netns.map(str::to_string),
            port,
            client,
            tun,
        })
    }

    /// Brings the session up and keeps it until `stop` says so, `hold` after it came up, or
    /// it ends on its own; then closes it. Every event goes to `news` as it happens.
    pub fn run(
        mut self,
        hold: Option<Duration>,
        stop: &mut dyn FnMut() -> bool,
        news: &mut dyn FnMut(ClientNews),
    ) -> Result<ClientDone, BenchError> {
        let ClientRun {
            netns,
            port,
            client: c,
            tun,
            ..
        } = &mut self;
        c.start(control::now());
        let mut up_at: Option<Instant> = None;
        let mut ended = None;
        while ended.is_none() {
            if stop() || hold.is_some_and(|h| up_at.is_some_and(|t| t.elapsed() >= h)) {
                break;
            }
            step_relay(port, c, tun.as_mut(), |s| news(ClientNews::Syn(s)))?;
            for e in c.take_events() {
                match e {
                    ClientEvent::Up(info) => {
                        up_at = Some(Instant::now());
                        if let (Some(t), Some(local), Some(peer)) =
                            (&tun, info.negotiated.local_ipv4, info.negotiated.peer_ipv4)
                        {
                            // Like pppd's ppp0: the AC's MRU as MTU.
                            let mtu = u32::from(info.negotiated.peer_mru);
                            configure_wan_tun(netns.as_deref(), t, mtu, local, peer)?;
                        }
                        let setup_ms = c.stats.setup.map_or(0.0, |s| s.0 as f64 / 1e6);
                        news(ClientNews::Up { info, setup_ms });
                    }
                    ClientEvent::Down(reason) => {
                        news(ClientNews::Down(reason));
                        ended = Some(reason);
                    }
                    ClientEvent::Data { .. } => {}
                }
            }
        }
        if ended.is_none() && c.is_up() {
            c.close(control::now());
            let _ = port.run_until(c, Duration::from_millis(500), |c| !c.is_up());
            for e in c.take_events() {
                if let ClientEvent::Down(reason) = e {
                    news(ClientNews::Down(reason));
                }
            }
        }
        Ok(ClientDone {
            client: self.client,
            port: self.port,
            tun: self.tun,
            ended,
        })
    }
}
