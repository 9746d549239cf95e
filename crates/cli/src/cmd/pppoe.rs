//! `wirerate pppoe server|client`: run the `emulate` PPPoE access concentrator or subscriber
//! on a port by hand, printing session events as they happen and the statistics at the end.
//! The state machines live in `emulate`; the socket loop is `engine::control`.

use std::io::{BufRead, IsTerminal};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use emulate::ppp::link::Credential;
use emulate::ppp::AuthMethod;
use emulate::pppoe::client::{Client, ClientConfig, ClientEvent};
use emulate::pppoe::server::{Server, ServerConfig, ServerEvent};
use emulate::pppoe::{ConfigError, SessionInfo};
use emulate::pppoe_v6::PppoeProvisioning;
use emulate::provision::ProvisionConfig;
use emulate::util::Entropy;
use engine::control::{self, ControlPort};
use engine::port::PortSpec;
use engine::tun::{Direction, IpRelay, Tun};
use wire::ethernet::MacAddr;

use crate::error::{CliError, CliResult};

/// Play the ISP's PPPoE access concentrator or a PPPoE subscriber on one interface.
///
/// The interface's own MAC is used. Session events are printed as they happen (one line each,
/// or one JSON object per line with --json). The command stops after --duration seconds (the
/// server also after --sessions sessions, the client --hold seconds after its session came
/// up), on SIGINT/SIGTERM (Ctrl-C), or, on a terminal, when Enter or Ctrl-D is pressed; it
/// then closes its sessions (LCP Terminate + PADT) and prints its statistics.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    wirerate pppoe server --netns wr-wan --dev veth0 --user alice --password secret\n  \
    wirerate pppoe client --netns wr-cpe --dev veth1 --user alice --password secret --duration 30\n  \
    wirerate pppoe server --netns wr-wan --dev veth0 --auth chap --mru 1492 --json\n  \
    wirerate pppoe server --netns wr-wan --dev veth0 --subscribers subscribers.txt --auth chap\n  \
    wirerate pppoe client --netns wr-cpe --dev veth1 --subscribers subscribers.txt --sessions 1000\n  \
    wirerate pppoe server --netns wr-isp --dev veth1 --tun wr-inet0 --tun-netns wr-inet\n  \
    wirerate pppoe client --netns wr-gw --dev veth0 --tun wr-ppp0")]
pub struct PppoeArgs {
    #[command(subcommand)]
    pub role: Role,
}

#[derive(Debug, clap::Subcommand)]
pub enum Role {
    /// The access concentrator (ISP side): discovery, LCP, PAP/CHAP, IPCP/IPv6CP, echo.
    Server(ServerArgs),
    /// One subscriber: brings a session up, keeps it up until stopped, then closes it.
    Client(ClientArgs),
}

#[derive(Debug, clap::Args)]
pub struct PortArgs {
    /// Network namespace of the interface (a name under /run/netns or a path).
    #[arg(long)]
    pub netns: Option<String>,
    /// The interface.
    #[arg(long)]
    pub dev: String,
    /// User name (server: the one accepted login, shared by any number of sessions, unless
    /// --subscribers; client: ours, unless --subscribers).
    #[arg(long, default_value = "wirerate")]
    pub user: String,
    #[arg(long, default_value = "wirerate")]
    pub password: String,
    /// Authentication: pap, chap, or both (server: demanded, preferred first; client: offered).
    #[arg(long, default_value = "pap")]
    pub auth: String,
    /// The MRU requested in LCP: 64 to 1492, or to --max-payload (server default 1454,
    /// client 1492).
    #[arg(long)]
    pub mru: Option<u16>,
    /// RFC 4638 PPP-Max-Payload, 1493 to 9000 (jumbo frames on the link): the client asks for
    /// it in PADI/PADR, the server grants up to it. Without it, PPPoE carries at most 1492.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u16).range(1493..=9000))]
    pub max_payload: Option<u16>,
    /// LCP Echo-Request interval in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub echo_interval: f64,
    /// Stop after this many seconds (default: until Ctrl-C, or Enter/Ctrl-D on a terminal).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Events and statistics as JSON lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    #[command(flatten)]
    pub port: PortArgs,
    /// AC-Name in PADO.
    #[arg(long, default_value = "wirerate-ac")]
    pub ac_name: String,
    /// Our IPCP address.
    #[arg(long, default_value = "198.51.100.1")]
    pub gateway: Ipv4Addr,
    /// First address of the subscriber pool: in 192.0.2.0/24, 198.51.100.0/24 or
    /// 203.0.113.0/24, the whole pool inside that /24 without its network or broadcast address
    /// or the gateway's.
    #[arg(long, default_value = "198.51.100.10")]
    pub pool: Ipv4Addr,
    /// Addresses in the pool (1 or more; at most what fits, e.g. 245 from 198.51.100.10).
    #[arg(long, default_value_t = 240)]
    pub pool_size: u32,
    /// Stop once this many sessions have come up and ended.
    #[arg(long)]
    pub sessions: Option<u64>,
    /// The subscriber table: one `USER PASSWORD [ipv4=ADDRESS|pool|none]
    /// [prefix=2001:db8:…/LEN]` per line (docs/emulate.md). Only its users may log in
    /// (--user/--password are ignored); each gets its fixed address, the pool's next, or no
    /// IPv4 (IPv6CP only); a second login of a user replaces the first.
    #[arg(long, value_name = "FILE")]
    pub subscribers: Option<std::path::PathBuf>,
    /// IPv6 inside every session after IPv6CP: a Router Advertisement (M and O, DNS) from our
    /// link-local address, and DHCPv6 with a delegated /56 from 2001:db8:200::/40, an address
    /// from 2001:db8:e::100 and DNS 2001:db8:53::1 (one server for all sessions).
    #[arg(long)]
    pub provision: bool,
    /// Hand the sessions' IP packets to a TUN device of this name ("the Internet") and send
    /// what the kernel routes into it down the session that owns the destination address
    /// (IPCP address; IPv6 by the IPv6CP interface identifier). The device gets --tun-addr/32
    /// and a route to the pool's /24, so an iperf3 server or ping in --tun-netns reaches the
    /// subscribers. Client SYNs crossing it are printed with their MSS option.
    #[arg(long, value_name = "NAME")]
    pub tun: Option<String>,
    /// Namespace of the TUN device (default: --netns).
    #[arg(long, value_name = "NS")]
    pub tun_netns: Option<String>,
    /// The Internet host's address, put on the TUN device as a /32 (outside the pool's /24).
    #[arg(long, value_name = "ADDR", default_value = "203.0.113.1")]
    pub tun_addr: Ipv4Addr,
}

#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    #[command(flatten)]
    pub port: PortArgs,
    /// Service-Name to ask for (empty: any).
    #[arg(long, default_value = "")]
    pub service: String,
    /// Close the session this many seconds after it came up, then exit.
    #[arg(long)]
    pub hold: Option<f64>,
    /// Expose the session as a TUN device of this name in --netns, like a ppp0: once the
    /// session is up it gets the IPCP address (peer: the AC's), the AC's MRU as MTU and the
    /// default route, so a router in that namespace (nft NAPT, MSS clamp) can use it as its
    /// WAN. Client SYNs crossing it are printed with their MSS option.
    #[arg(long, value_name = "NAME")]
    pub tun: Option<String>,
    /// Open this many sessions at once, each with its own MAC (02:77:73 + index) and
    /// Host-Uniq, and report setup statistics (PADI → IPCP/IPv6CP up: min/mean/p99/max,
    /// sessions/s, retransmissions, failures) once all are up or failed; then --hold, close
    /// them all and exit. --duration caps the wait (default 120 s).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub sessions: Option<u32>,
    /// Log in as the users of this subscriber table (session i as its i-th user; without
    /// --sessions, one session per user) instead of --user/--password; same format as the
    /// server's --subscribers.
    #[arg(long, value_name = "FILE")]
    pub subscribers: Option<std::path::PathBuf>,
    /// With --sessions: start this many sessions per second (0: all at once).
    #[arg(long, value_name = "PER_S", default_value_t = 0)]
    pub start_rate: u32,
}

pub fn run(a: PppoeArgs) -> CliResult {
    match a.role {
        Role::Server(s) => server(s),
        Role::Client(c) if c.sessions.is_some() || c.subscribers.is_some() => fleet(c),
        Role::Client(c) => client(c),
    }
}

fn auth_methods(s: &str) -> CliResult<Vec<AuthMethod>> {
    match s {
        "pap" => Ok(vec![AuthMethod::Pap]),
        "chap" => Ok(vec![AuthMethod::ChapMd5]),
        "both" | "chap,pap" => Ok(vec![AuthMethod::ChapMd5, AuthMethod::Pap]),
        "pap,chap" => Ok(vec![AuthMethod::Pap, AuthMethod::ChapMd5]),
        other => Err(CliError::Usage(format!(
            "--auth {other}: use pap, chap or both"
        ))),
    }
}

pub(crate) fn secs(s: f64, what: &str) -> CliResult<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| CliError::Usage(format!("{what} {s}: not a number of seconds")))
}

fn open(p: &PortArgs) -> CliResult<(ControlPort, MacAddr)> {
    open_port("pppoe", &p.dev, p.netns.as_deref())
}

/// Opens the control socket on `dev` (in `netns`) for a hand-run machine and reads its MAC.
pub(crate) fn open_port(
    name: &str,
    dev: &str,
    netns: Option<&str>,
) -> CliResult<(ControlPort, MacAddr)> {
    let mut spec = PortSpec::new(name, dev);
    spec.netns = netns.map(str::to_string);
    let port = ControlPort::open(&spec).map_err(|e| CliError::Failed(e.to_string()))?;
    let mac = MacAddr(port.mac().map_err(|e| CliError::Failed(e.to_string()))?);
    Ok((port, mac))
}

/// When a hand-run machine stops: after `--duration`, on SIGINT or SIGTERM, or when a line
/// (Enter) or end of file (Ctrl-D) arrives on stdin if stdin is a terminal (a
/// non-interactive stdin, a script or `< /dev/null`, is ignored). The command then closes its
/// sessions and prints its statistics, so Ctrl-C is a clean stop: PADT for every open
/// session, exit status 0.
pub(crate) struct Stop {
    stdin: Arc<AtomicBool>,
    start: Instant,
    duration: Option<Duration>,
}

impl Stop {
    pub(crate) fn new(duration: Option<Duration>) -> Stop {
        lab::install_interrupt_handler();
        let stdin = Arc::new(AtomicBool::new(false));
        if std::io::stdin().is_terminal() {
            let s = stdin.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
                s.store(true, Ordering::Relaxed);
            });
        }
        Stop {
            stdin,
            start: Instant::now(),
            duration,
        }
    }

    /// Whether it is time to stop.
    pub(crate) fn now(&self) -> bool {
        self.stdin.load(Ordering::Relaxed)
            || lab::cmd::interrupted()
            || self.duration.is_some_and(|d| self.start.elapsed() >= d)
    }
}

/// One turn of a hand-run machine's loop on its port (at most 50 ms).
pub(crate) fn step<C: control::ControlPlane>(port: &mut ControlPort, m: &mut C) -> CliResult {
    port.step(m, Duration::from_millis(50))
        .map_err(|e| CliError::Failed(e.to_string()))
}

/// Creates the TUN device `name` in `netns` for `--tun` (a usage error for a name the kernel
/// cannot take).
pub(crate) fn create_tun(name: &str, netns: Option<&str>) -> CliResult<Tun> {
    if name.is_empty() || name.len() > 15 || name.contains(['/', ' ', '\0']) {
        return Err(CliError::Usage(format!(
            "--tun {name:?}: an interface name of 1 to 15 characters"
        )));
    }
    Tun::create(name, netns).map_err(|e| CliError::Failed(e.to_string()))
}

/// One turn of the loop, through the TUN hand-off when there is one.
pub(crate) fn step_relay<C: IpRelay>(
    port: &mut ControlPort,
    m: &mut C,
    tun: Option<&mut Tun>,
) -> CliResult {
    match tun {
        Some(t) => port
            .step_relay(m, t, Duration::from_millis(50))
            .map_err(|e| CliError::Failed(e.to_string())),
        None => step(port, m),
    }
}

/// Prints the client SYNs the TUN hand-off saw (`syn` lines).
pub(crate) fn print_syns(tun: Option<&mut Tun>, json: bool) {
    let Some(t) = tun else { return };
    for s in t.take_syns() {
        let dir = match s.direction {
            Direction::Up => "up",
            Direction::Down => "down",
        };
        let mss = s.mss.map_or("-".to_string(), |m| m.to_string());
        emit(
            json,
            serde_json::json!({"event": "syn", "direction": dir,
                "src": s.src.to_string(), "dst": s.dst.to_string(),
                "src_port": s.src_port, "dst_port": s.dst_port, "mss": s.mss}),
            format!(
                "syn   {dir:<4} {}:{} -> {}:{}  mss {mss}",
                s.src, s.src_port, s.dst, s.dst_port
            ),
        );
    }
}

/// The TUN hand-off's counts as JSON.
pub(crate) fn tun_json(t: &Tun) -> serde_json::Value {
    let st = &t.stats;
    let dropped: serde_json::Map<String, serde_json::Value> = st
        .down_dropped
        .iter()
        .map(|(k, v)| (format!("{k:?}"), (*v).into()))
        .collect();
    serde_json::json!({
        "device": t.name(),
        "up_packets": st.up_packets, "up_bytes": st.up_bytes, "up_dropped": st.up_dropped,
        "down_packets": st.down_packets, "down_bytes": st.down_bytes,
        "down_dropped": dropped, "syns": st.syns,
    })
}

pub(crate) fn print_tun_stats(t: &Tun) {
    let st = &t.stats;
    outln!(
        "tun {}: to the kernel {} packets ({} B, dropped {}), from the kernel {} packets ({} B), \
         client SYNs {}",
        t.name(),
        st.up_packets,
        st.up_bytes,
        st.up_dropped,
        st.down_packets,
        st.down_bytes,
        st.syns
    );
    for (k, v) in &st.down_dropped {
        outln!("tun not sent {k:?}: {v}");
    }
}

/// A counter by reason as a JSON object (`{"Reason": n, …}`).
pub(crate) fn counts_json<K: Ord + Copy + std::fmt::Debug>(
    c: &emulate::util::Counter<K>,
) -> serde_json::Map<String, serde_json::Value> {
    c.iter()
        .map(|(k, v)| (format!("{k:?}"), v.into()))
        .collect()
}

fn info_json(i: &SessionInfo) -> serde_json::Value {
    let n = &i.negotiated;
    serde_json::json!({
        "session_id": i.session_id,
        "local_mac": i.local_mac.to_string(),
        "peer_mac": i.peer_mac.to_string(),
        "our_mru": n.our_mru,
        "peer_mru": n.peer_mru,
        "auth": n.auth.map(|a| format!("{a:?}")),
        "local_ipv4": n.local_ipv4.map(|a| a.to_string()),
        "peer_ipv4": n.peer_ipv4.map(|a| a.to_string()),
        "dns": n.dns.iter().flatten().map(|a| a.to_string()).collect::<Vec<_>>(),
    })
}

fn info_text(i: &SessionInfo) -> String {
    let n = &i.negotiated;
    let ip = |a: Option<Ipv4Addr>| a.map_or("-".to_string(), |a| a.to_string());
    format!(
        "session {:#06x} {} <-> {}  MRU ours {} peer {}  auth {:?}  local {} peer {}",
        i.session_id,
        i.local_mac,
        i.peer_mac,
        n.our_mru,
        n.peer_mru,
        n.auth,
        ip(n.local_ipv4),
        ip(n.peer_ipv4)
    )
}

pub(crate) fn emit(json: bool, v: serde_json::Value, text: String) {
    if json {
        outln!("{v}");
    } else {
        outln!("{text}");
    }
}

fn server(a: ServerArgs) -> CliResult {
    let p = &a.port;
    let auth = auth_methods(&p.auth)?;
    let duration = p.duration.map(|d| secs(d, "--duration")).transpose()?;
    let echo = secs(p.echo_interval, "--echo-interval")?;
    let mut cfg = ServerConfig {
        ac_name: a.ac_name.clone(),
        auth,
        credentials: vec![Credential::new(&p.user, &p.password)],
        gateway: a.gateway,
        pool_first: a.pool,
        pool_size: a.pool_size,
        echo_interval: wire::units::Nanos(echo.as_nanos() as u64),
        // Challenges, magic numbers, session ids and the cookie key differ on every run.
        entropy: Entropy::Os,
        ..ServerConfig::default()
    };
    if let Some(m) = p.mru {
        cfg.mru = m;
    }
    if let Some(mp) = p.max_payload {
        cfg.max_payload = mp;
    }
    if let Some(f) = &a.subscribers {
        let t = bench::sessions::load_subscribers(f).map_err(CliError::Usage)?;
        cfg.subscribers = Some(Arc::new(t));
    }
    cfg.check().map_err(|e| {
        let flags = match e {
            ConfigError::Mru { mru, .. } => format!("--mru {mru}"),
            ConfigError::EmptyPool => "--pool-size 0".into(),
            ConfigError::PoolOutsideDocumentation { .. }
            | ConfigError::PoolStartsAtNetworkOrBroadcast { .. } => format!("--pool {}", a.pool),
            ConfigError::PoolHoldsGateway { .. } => format!(
                "--pool {} --pool-size {} --gateway {}",
                a.pool, a.pool_size, a.gateway
            ),
            ConfigError::PoolTooLarge { .. } => {
                format!("--pool {} --pool-size {}", a.pool, a.pool_size)
            }
            ConfigError::Subscriber(ref t) => {
                let f = a
                    .subscribers
                    .as_deref()
                    .unwrap_or(std::path::Path::new("-"));
                return CliError::Usage(format!("{}:{}: {}", f.display(), t.line, t.message));
            }
        };
        CliError::Usage(format!("{flags}: {e}"))
    })?;
    let pool_net = emulate::pppoe::documentation_net(a.pool);
    if a.tun.is_some() && pool_net == emulate::pppoe::documentation_net(a.tun_addr) {
        return Err(CliError::Usage(format!(
            "--tun-addr {}: inside the pool's /24 ({}/24); the Internet host needs an address \
             the subscribers are not in",
            a.tun_addr,
            pool_net.map_or("-".into(), |n| n.to_string())
        )));
    }
    Entropy::check_os().map_err(CliError::Failed)?;
    let tun_ns = a.tun_netns.as_deref().or(p.netns.as_deref());
    let mut tun = match &a.tun {
        Some(name) => {
            let t = create_tun(name, tun_ns)?;
            let setup = lab::tun::TunSetup {
                mtu: u32::from(cfg.max_payload.max(1492)),
                addrs: vec![vec![format!("{}/32", a.tun_addr)]],
                routes: pool_net.map(|n| format!("{n}/24")).into_iter().collect(),
            };
            lab::tun::configure(tun_ns, name, &setup)
                .map_err(|e| CliError::Failed(format!("configuring --tun {name}: {e}")))?;
            Some(t)
        }
        None => None,
    };
    let (mut port, mac) = open(p)?;
    cfg.mac = mac;
    let mut srv = Server::new(cfg);
    if tun.is_some() {
        srv.enable_ip_relay();
    }
    let mut prov = a
        .provision
        .then(|| PppoeProvisioning::new(ProvisionConfig::pppoe(mac)));
    let stop = Stop::new(duration);
    if !p.json {
        errln!(
            "PPPoE AC on {} ({mac}); Ctrl-C, Enter or Ctrl-D stops",
            p.dev
        );
    }
    loop {
        if stop.now() {
            break;
        }
        if a.sessions
            .is_some_and(|n| srv.stats.ended.total() >= n && srv.stats.sessions_up_total >= n)
        {
            break;
        }
        step_relay(&mut port, &mut srv, tun.as_mut())?;
        print_syns(tun.as_mut(), p.json);
        if let Some(pv) = &mut prov {
            // The AC's control loop wakes at least every 50 ms: RA timing is that coarse.
            pv.poll(control::now(), &mut srv);
        }
        print_server_events(&mut srv, p.json, prov.as_mut());
    }
    // Close what is still up (LCP Terminate, PADT), giving the peers a moment to answer.
    let keys: Vec<_> = srv.sessions().collect();
    for k in keys {
        srv.close(control::now(), k);
    }
    let end = Instant::now() + Duration::from_millis(500);
    while Instant::now() < end && srv.session_count() > 0 {
        port.step(&mut srv, Duration::from_millis(20))
            .map_err(|e| CliError::Failed(e.to_string()))?;
        // Sessions that end now still get their line: one whose authentication failed and
        // whose peer left without answering ends here, at the Terminate-Request's timeout.
        print_server_events(&mut srv, p.json, prov.as_mut());
    }
    // Peers that did not answer (gone, or a failed login that left without a word) get their
    // PADT now and are counted: they were left open and uncounted (issue 19 row 17).
    let keys: Vec<_> = srv.sessions().collect();
    if !keys.is_empty() {
        for k in keys {
            srv.abort(control::now(), k);
        }
        port.step(&mut srv, Duration::from_millis(20))
            .map_err(|e| CliError::Failed(e.to_string()))?;
    }
    print_server_events(&mut srv, p.json, prov.as_mut());
    print_server_stats(&srv, p.json, &port, tun.as_ref());
    if let Some(pv) = &prov {
        super::provision::print_pppoe_stats(pv, p.json);
    }
    Ok(())
}

/// Prints the server's session events (up, down with the reason) as they come.
/// Prints the server's events (session up and down lines), handing each to the session's
/// IPv6 provisioning first when `--provision` is on (its lease lines follow).
fn print_server_events(srv: &mut Server, json: bool, mut prov: Option<&mut PppoeProvisioning>) {
    for e in srv.take_events() {
        if let Some(pv) = prov.as_deref_mut() {
            pv.handle_event(control::now(), &e, srv);
            for pe in pv.take_events() {
                super::provision::print_event(json, &pe);
            }
        }
        match e {
            ServerEvent::SessionUp {
                info, setup, user, ..
            } => {
                let mut v = info_json(&info);
                v["event"] = "up".into();
                v["user"] = user.clone().into();
                v["setup_ms"] = (setup.0 as f64 / 1e6).into();
                emit(
                    json,
                    v,
                    format!(
                        "up    {}  user {}  setup {:.1} ms",
                        info_text(&info),
                        user.as_deref().unwrap_or("-"),
                        setup.0 as f64 / 1e6
                    ),
                );
            }
            ServerEvent::SessionDown { key, reason } => emit(
                json,
                serde_json::json!({"event": "down", "session_id": key.session_id,
                    "client": key.client.to_string(), "reason": format!("{reason:?}")}),
                format!(
                    "down  session {:#06x} {}  {reason:?}",
                    key.session_id, key.client
                ),
            ),
            ServerEvent::Data { .. } => {}
        }
    }
}

fn print_server_stats(srv: &Server, json: bool, port: &ControlPort, tun: Option<&Tun>) {
    let st = &srv.stats;
    let ended = counts_json(&st.ended);
    let hostile = counts_json(&st.hostile);
    let setup_mean =
        (st.setup.count > 0).then(|| st.setup.total.0 as f64 / st.setup.count as f64 / 1e6);
    let v = serde_json::json!({
        "event": "stats",
        "padi_rx": st.padi_rx, "pado_tx": st.pado_tx, "padi_unserved": st.padi_unserved,
        "padr_rx": st.padr_rx, "pads_tx": st.pads_tx, "pads_refused": st.pads_refused,
        "padr_repeated": st.padr_repeated, "padt_rx": st.padt_rx, "padt_tx": st.padt_tx,
        "sessions_started": st.sessions_started, "sessions_up_total": st.sessions_up_total,
        "setup_count": st.setup.count,
        "setup_min_ms": st.setup.min.0 as f64 / 1e6,
        "setup_max_ms": st.setup.max.0 as f64 / 1e6,
        "setup_mean_ms": setup_mean,
        "retransmits": st.retransmits, "ended": ended, "after_end": st.after_end,
        "hostile": hostile,
        "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
        "frames_unclaimed": port.stats.rx_unclaimed, "tx_failed": port.stats.tx_failed,
        "tun": tun.map(tun_json),
    });
    if json {
        outln!("{v}");
        return;
    }
    if let Some(t) = tun {
        print_tun_stats(t);
    }
    outln!(
        "discovery: PADI {} (unserved {}), PADO {}, PADR {} (repeated {}), PADS {} (refused {}), \
         PADT rx {} tx {}",
        st.padi_rx,
        st.padi_unserved,
        st.pado_tx,
        st.padr_rx,
        st.padr_repeated,
        st.pads_tx,
        st.pads_refused,
        st.padt_rx,
        st.padt_tx
    );
    outln!(
        "sessions: started {}, up in total {}, retransmissions {}",
        st.sessions_started,
        st.sessions_up_total,
        st.retransmits
    );
    if let Some(m) = setup_mean {
        outln!(
            "setup (PADR → up): min {:.1} ms, mean {m:.1} ms, max {:.1} ms",
            st.setup.min.0 as f64 / 1e6,
            st.setup.max.0 as f64 / 1e6
        );
    }
    for (k, v) in st.ended.iter() {
        outln!("ended  {k:?}: {v}");
    }
    if st.after_end > 0 {
        outln!(
            "after the end (late PADT or Terminate-Ack): {}",
            st.after_end
        );
    }
    for (k, v) in st.hostile.iter() {
        outln!("refused {k:?}: {v}");
    }
    outln!(
        "frames: rx {} (not PPPoE {}), tx {} (failed {})",
        port.stats.rx,
        port.stats.rx_unclaimed,
        port.stats.tx,
        port.stats.tx_failed
    );
}

fn client(a: ClientArgs) -> CliResult {
    let p = &a.port;
    let auth = auth_methods(&p.auth)?;
    let duration = p.duration.map(|d| secs(d, "--duration")).transpose()?;
    let hold = a.hold.map(|d| secs(d, "--hold")).transpose()?;
    let echo = secs(p.echo_interval, "--echo-interval")?;
    let mut cfg = ClientConfig {
        service_name: a.service.clone(),
        credential: Credential::new(&p.user, &p.password),
        auth,
        echo_interval: wire::units::Nanos(echo.as_nanos() as u64),
        entropy: Entropy::Os,
        ..ClientConfig::default()
    };
    if let Some(m) = p.mru {
        cfg.mru = m;
    }
    cfg.max_payload = p.max_payload;
    cfg.check()
        .map_err(|e| CliError::Usage(format!("--mru {}: {e}", cfg.mru)))?;
    Entropy::check_os().map_err(CliError::Failed)?;
    let mut tun = a
        .tun
        .as_deref()
        .map(|name| create_tun(name, p.netns.as_deref()))
        .transpose()?;
    let (mut port, mac) = open(p)?;
    cfg.mac = mac;
    let mut c = Client::new(cfg);
    if tun.is_some() {
        c.enable_ip_relay();
    }
    let stop = Stop::new(duration);
    c.start(control::now());
    let mut up_at: Option<Instant> = None;
    let mut ended = None;
    if !p.json {
        errln!(
            "PPPoE client on {} ({mac}); Ctrl-C, Enter or Ctrl-D stops",
            p.dev
        );
    }
    while ended.is_none() {
        if stop.now() || hold.is_some_and(|h| up_at.is_some_and(|t| t.elapsed() >= h)) {
            break;
        }
        step_relay(&mut port, &mut c, tun.as_mut())?;
        print_syns(tun.as_mut(), p.json);
        for e in c.take_events() {
            match e {
                ClientEvent::Up(info) => {
                    up_at = Some(Instant::now());
                    if let (Some(t), Some(local), Some(peer)) =
                        (&tun, info.negotiated.local_ipv4, info.negotiated.peer_ipv4)
                    {
                        // Like pppd's ppp0: the IPCP address with the AC as peer, the AC's
                        // MRU as MTU, the default route.
                        let setup = lab::tun::TunSetup {
                            mtu: u32::from(info.negotiated.peer_mru),
                            addrs: vec![vec![local.to_string(), "peer".into(), peer.to_string()]],
                            routes: vec!["default".into()],
                        };
                        lab::tun::configure(p.netns.as_deref(), t.name(), &setup).map_err(|e| {
                            CliError::Failed(format!("configuring --tun {}: {e}", t.name()))
                        })?;
                    }
                    let setup = c.stats.setup.map_or(0.0, |s| s.0 as f64 / 1e6);
                    let mut v = info_json(&info);
                    v["event"] = "up".into();
                    v["setup_ms"] = setup.into();
                    emit(
                        p.json,
                        v,
                        format!("up    {}  setup {setup:.1} ms", info_text(&info)),
                    );
                }
                ClientEvent::Down(reason) => {
                    emit(
                        p.json,
                        serde_json::json!({"event": "down", "reason": format!("{reason:?}")}),
                        format!("down  {reason:?}"),
                    );
                    ended = Some(reason);
                }
                ClientEvent::Data { .. } => {}
            }
        }
    }
    if ended.is_none() && c.is_up() {
        c.close(control::now());
        let _ = port.run_until(&mut c, Duration::from_millis(500), |c| !c.is_up());
        for e in c.take_events() {
            if let ClientEvent::Down(reason) = e {
                emit(
                    p.json,
                    serde_json::json!({"event": "down", "reason": format!("{reason:?}")}),
                    format!("down  {reason:?}"),
                );
            }
        }
    }
    let st = &c.stats;
    let v = serde_json::json!({
        "event": "stats",
        "padi_tx": st.padi_tx, "pado_rx": st.pado_rx, "padr_tx": st.padr_tx, "pads_rx": st.pads_rx,
        "padt_rx": st.padt_rx, "padt_tx": st.padt_tx, "retransmits": st.retransmits,
        "setup_ms": st.setup.map(|s| s.0 as f64 / 1e6),
        "ended": counts_json(&st.ended),
        "after_end": st.after_end,
        "hostile": counts_json(&st.hostile),
        "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
        "tun": tun.as_ref().map(tun_json),
    });
    if p.json {
        outln!("{v}");
    } else {
        if let Some(t) = &tun {
            print_tun_stats(t);
        }
        outln!(
            "discovery: PADI {}, PADO {}, PADR {}, PADS {}, PADT rx {} tx {}; retransmissions {}",
            st.padi_tx,
            st.pado_rx,
            st.padr_tx,
            st.pads_rx,
            st.padt_rx,
            st.padt_tx,
            st.retransmits
        );
        if let Some(s) = st.setup {
            outln!("setup (PADI → up): {:.1} ms", s.0 as f64 / 1e6);
        }
        for (k, v) in st.ended.iter() {
            outln!("ended  {k:?}: {v}");
        }
        if st.after_end > 0 {
            outln!(
                "after the end (late PADT or Terminate-Ack): {}",
                st.after_end
            );
        }
        for (k, v) in st.hostile.iter() {
            outln!("refused {k:?}: {v}");
        }
    }
    match ended {
        Some(r) if st.setup.is_none() => Err(CliError::Failed(format!("no session: {r:?}"))),
        _ if st.setup.is_none() => Err(CliError::Failed("no session came up".into())),
        _ => Ok(()),
    }
}

/// `pppoe client --sessions N` / `--subscribers FILE`: many subscribers at once and their
/// setup statistics (the loop and the figures are `bench::sessions`).
fn fleet(a: ClientArgs) -> CliResult {
    let p = &a.port;
    let auth = auth_methods(&p.auth)?;
    let limit = p.duration.map(|d| secs(d, "--duration")).transpose()?;
    let hold = a.hold.map(|d| secs(d, "--hold")).transpose()?;
    let echo = secs(p.echo_interval, "--echo-interval")?;
    if a.tun.is_some() {
        return Err(CliError::Usage(
            "--tun: one session only; leave out --sessions/--subscribers".into(),
        ));
    }
    let logins = match &a.subscribers {
        Some(f) => bench::sessions::load_subscribers(f)
            .map_err(CliError::Usage)?
            .credentials(),
        None => vec![Credential::new(&p.user, &p.password)],
    };
    let mut client = ClientConfig {
        service_name: a.service.clone(),
        auth,
        echo_interval: wire::units::Nanos(echo.as_nanos() as u64),
        entropy: Entropy::Os,
        ..ClientConfig::default()
    };
    if let Some(m) = p.mru {
        client.mru = m;
    }
    client.max_payload = p.max_payload;
    client
        .check()
        .map_err(|e| CliError::Usage(format!("--mru {}: {e}", client.mru)))?;
    Entropy::check_os().map_err(CliError::Failed)?;
    let sessions = a.sessions.map_or(logins.len(), |n| n as usize);
    if a.subscribers.is_some() && sessions > logins.len() {
        return Err(CliError::Usage(format!(
            "--sessions {sessions}: the subscriber table has {} users, and each logs in once \
             (a second login replaces the first on our AC)",
            logins.len()
        )));
    }
    let cfg = emulate::pppoe::fleet::FleetConfig {
        client,
        logins,
        sessions,
        start_rate: a.start_rate,
        ..Default::default()
    };
    let limits = bench::sessions::FleetLimits {
        settle_within: limit.unwrap_or(Duration::from_secs(120)),
        hold: hold.unwrap_or(Duration::ZERO),
    };
    let mut spec = PortSpec::new("pppoe", &p.dev);
    spec.netns = p.netns.clone();
    let stop = Stop::new(None);
    if !p.json {
        errln!(
            "PPPoE fleet of {sessions} sessions on {}; Ctrl-C stops",
            p.dev
        );
    }
    let run = bench::sessions::run_fleet(&spec, cfg, limits, &|| stop.now(), |_, _, _| {})
        .map_err(CliError::Failed)?;
    if p.json {
        for s in &run.sessions {
            outln!("{}", s.to_json());
        }
        outln!("{}", run.to_json());
    } else {
        for s in run.sessions.iter().filter(|s| s.session_id.is_none()) {
            outln!("not up  #{} {} {}: {}", s.index, s.user, s.mac, s.state);
        }
        for l in run.summary_lines() {
            outln!("{l}");
        }
    }
    if run.setup.came_up < sessions {
        return Err(CliError::Failed(format!(
            "{} of {sessions} sessions did not come up",
            sessions - run.setup.came_up
        )));
    }
    Ok(())
}
