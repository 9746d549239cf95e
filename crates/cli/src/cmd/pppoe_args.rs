//! `wirerate pppoe`'s arguments and the mapping of `--auth`, shared by the single-session
//! commands (`pppoe.rs`) and the fleet of subscribers (`pppoe_fleet.rs`).

use std::net::Ipv4Addr;

use emulate::ppp::AuthMethod;

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
    /// or the gateway's; for thousands of subscribers in the benchmarking range 198.18.0.0/15
    /// (e.g. --pool 198.18.0.1 --pool-size 60000).
    #[arg(long, default_value = "198.51.100.10")]
    pub pool: Ipv4Addr,
    /// Addresses in the pool (1 or more; at most what fits, e.g. 245 from 198.51.100.10,
    /// 131,070 from 198.18.0.1).
    #[arg(long, default_value_t = 240)]
    pub pool_size: u32,
    /// PADOs per second at most (a token bucket, burst the same or 1000): a PADI flood costs
    /// bounded output. Raise it (or 0: no limit) for thousands of subscribers starting at
    /// once; sessions per AC are bounded by the session-id space (65,534).
    #[arg(long, value_name = "PER_S", default_value_t = 1000)]
    pub pado_rate: u32,
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
