//! `wirerate pppoe server|client`: run the `emulate` PPPoE access concentrator or subscriber
//! on a port by hand, printing session events as they happen and the statistics at the end.
//! The state machines live in `emulate`, their loop in `bench::hand::pppoe`; this maps the
//! flags to their configuration and prints (`pppoe_print.rs`).

use std::net::Ipv4Addr;
use std::sync::Arc;

use bench::hand::pppoe::{ClientNews, ClientRun, ServerRun};
use bench::hand::{self};
use bench::session_json as sj;
use emulate::ppp::link::Credential;
use emulate::ppp::AuthMethod;
use emulate::pppoe::client::ClientConfig;
use emulate::pppoe::server::ServerConfig;
use emulate::pppoe::ConfigError;
use emulate::util::Entropy;

use super::hand::{emit, print_syn, secs, Stop};
use super::pppoe_print::{info_text, print_client_stats, print_server_news, print_server_stats};
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
        Role::Client(c) if c.sessions.is_some() || c.subscribers.is_some() => {
            super::pppoe_fleet::fleet(c)
        }
        Role::Client(c) => client(c),
    }
}

pub(super) fn auth_methods(s: &str) -> CliResult<Vec<AuthMethod>> {
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
    let tun_ns = a.tun_netns.as_deref().or(p.netns.as_deref());
    let tun = match &a.tun {
        Some(name) => Some(hand::internet_tun(
            name,
            tun_ns,
            u32::from(cfg.max_payload.max(1492)),
            a.tun_addr,
            pool_net.map(|n| format!("{n}/24")).into_iter().collect(),
        )?),
        None => None,
    };
    let run = ServerRun::open(&p.dev, p.netns.as_deref(), cfg, tun, a.provision)?;
    let stop = Stop::new(duration);
    if !p.json {
        errln!(
            "PPPoE AC on {} ({}); Ctrl-C, Enter or Ctrl-D stops",
            p.dev,
            run.mac
        );
    }
    let done = run.serve(a.sessions, &mut || stop.now(), &mut |n| {
        print_server_news(n, p.json)
    })?;
    let (srv, port, tun) = (&done.server, &done.port, done.tun.as_ref());
    print_server_stats(srv, p.json, port, tun);
    if let Some(pv) = &done.provisioning {
        super::provision::print_pppoe_stats(pv, p.json);
    }
    Ok(())
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
    let tun = a
        .tun
        .as_deref()
        .map(|name| hand::create_tun(name, p.netns.as_deref()))
        .transpose()?;
    let run = ClientRun::open(&p.dev, p.netns.as_deref(), cfg, tun)?;
    let stop = Stop::new(duration);
    if !p.json {
        errln!(
            "PPPoE client on {} ({}); Ctrl-C, Enter or Ctrl-D stops",
            p.dev,
            run.mac
        );
    }
    let done = run.run(hold, &mut || stop.now(), &mut |n| match n {
        ClientNews::Up { info, setup_ms } => {
            let mut v = sj::pppoe_info(&info);
            v["event"] = "up".into();
            v["setup_ms"] = setup_ms.into();
            emit(
                p.json,
                v,
                format!("up    {}  setup {setup_ms:.1} ms", info_text(&info)),
            );
        }
        ClientNews::Down(reason) => emit(
            p.json,
            serde_json::json!({"event": "down", "reason": format!("{reason:?}")}),
            format!("down  {reason:?}"),
        ),
        ClientNews::Syn(s) => print_syn(&s, p.json),
    })?;
    let (c, port, tun, ended) = (&done.client, &done.port, &done.tun, done.ended);
    let st = &c.stats;
    print_client_stats(c, p.json, port, tun.as_ref());
    match ended {
        Some(r) if st.setup.is_none() => Err(CliError::Failed(format!("no session: {r:?}"))),
        _ if st.setup.is_none() => Err(CliError::Failed("no session came up".into())),
        _ => Ok(()),
    }
}
