//! What a plan names besides its matrix's methodologies: where the tester's ports are
//! ([`Topology`], [`Port`] with its PPPoE or DS-Lite role), the DUT and its profiles, the
//! run-wide settings.

use core::time::Duration;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};
use wire::units::BitsPerSec;

use super::ipoe::IpoeSettings;
use super::stream::StreamSettings;
use crate::hooks::{Exec, ProfileHooks};
use crate::search::LineFraction;

/// Where the tester's ports are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Topology {
    /// A namespace lab created by wirerate (`wr-<name>-*`).
    Lab {
        /// Lab topology: `forward`, `endpoint` or `direct`.
        topology: String,
        /// Lab name (namespaces `wr-<name>-a`, `-dut`, `-b`).
        name: String,
        /// Reference link speed for line-rate arithmetic (veths have none of their own).
        speed: BitsPerSec,
    },
    /// Real interfaces, listed in `[ports]`.
    Interfaces,
}

/// One tester attachment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Port {
    /// Name used in the plan and the results.
    pub name: String,
    /// Interface name.
    pub interface: String,
    /// Network namespace the interface lives in, if any.
    pub namespace: Option<String>,
    /// Link speed.
    pub speed: Option<BitsPerSec>,
    /// The tester's own IPv4 address on this port (answered for ARP; the source or the
    /// destination of test frames).
    #[serde(default)]
    pub ipv4: Option<Ipv4Addr>,
    /// The tester's own IPv6 address on this port.
    #[serde(default)]
    pub ipv6: Option<Ipv6Addr>,
    /// The IPv4 next hop (the DUT's interface): its MAC is resolved by ARP before sending.
    #[serde(default)]
    pub gateway_v4: Option<Ipv4Addr>,
    /// The IPv6 next hop, resolved by ND.
    #[serde(default)]
    pub gateway_v6: Option<Ipv6Addr>,
    /// The port plays a PPPoE access concentrator (the ISP) or subscriber.
    #[serde(default)]
    pub pppoe: Option<PppoeSettings>,
    /// The port plays a DS-Lite AFTR (the ISP) or B4.
    #[serde(default)]
    pub dslite: Option<DsliteSettings>,
    /// The port plays the ISP side of an IPoE WAN (DHCPv4, RA/DHCPv6, DNS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipoe: Option<IpoeSettings>,
    /// The port plays a MAP-E Border Relay (the ISP side of a MAP-E CE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mape: Option<super::MapeSettings>,
}

impl Port {
    /// The Internet host behind this port, when it plays an ISP side with `internet` (a
    /// PPPoE access concentrator, a DS-Lite AFTR, an IPoE port): its traffic then reaches a
    /// kernel through a TUN device, where iperf3's server runs, so TCP crosses it.
    pub fn internet(&self) -> Option<Ipv4Addr> {
        let ac = self
            .pppoe
            .as_ref()
            .filter(|p| p.role == PppoeRole::Server)
            .and_then(|p| p.internet);
        let aftr = self
            .dslite
            .as_ref()
            .filter(|d| d.role == DsliteRole::Aftr)
            .and_then(|d| d.internet);
        let br = self.mape.as_ref().and_then(|m| m.internet);
        ac.or(aftr)
            .or(br)
            .or(self.ipoe.as_ref().and_then(|i| i.internet))
    }
}

/// Which end of a PPPoE session a port plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PppoeRole {
    /// The access concentrator (the ISP side, facing a home gateway's WAN).
    Server,
    /// A subscriber (facing a BNG/BRAS, or our own AC in a loopback).
    Client,
}

/// PPP authentication protocols a PPPoE port demands (server) or offers (client).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PppAuth {
    /// RFC 1334 PAP.
    Pap,
    /// RFC 1994 CHAP with MD5.
    Chap,
}

/// `[ports.NAME.pppoe]`: the port runs wirerate's PPPoE control plane before any traffic and
/// test streams ride its session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PppoeSettings {
    /// Server (ISP) or client (subscriber).
    pub role: PppoeRole,
    /// MRU asked for in LCP.
    pub mru: u16,
    /// Authentication protocols, preferred first.
    pub auth: Vec<PppAuth>,
    /// (user, password): the server's accepted subscribers, or the client's one credential.
    pub users: Vec<(String, String)>,
    /// Server: AC-Name in PADO; client: accept only this AC (empty = any).
    pub ac_name: String,
    /// Service-Name offered (server) or asked for (client); empty = any.
    pub service_name: String,
    /// Server: our IPCP address (the subscriber's gateway).
    pub gateway: Ipv4Addr,
    /// Server: first address of the subscriber pool.
    pub pool: Ipv4Addr,
    /// Server: addresses in the pool.
    pub pool_size: u32,
    /// LCP Echo-Request interval.
    #[serde(with = "crate::secs")]
    pub echo_interval: Duration,
    /// How long the run waits for the session before giving up (no traffic is sent).
    #[serde(with = "crate::secs")]
    pub timeout: Duration,
    /// Server: the Internet host's address. The access concentrator then hands the sessions'
    /// IP packets to a TUN device (`wr-inet0`) in a namespace the run creates
    /// (`wr-inet<pid>`), where this address lives and iperf3's server runs: TCP cases cross
    /// the session (`bench::isp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internet: Option<Ipv4Addr>,
    /// Server: the subscriber table (`subscribers = "FILE"`, relative to the plan's
    /// directory; docs/emulate.md): its users replace `users`, each with its own address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribers: Option<std::path::PathBuf>,
}

impl PppoeSettings {
    /// The settings a plan's `[ports.NAME.pppoe]` has before its keys, and `wirerate trial
    /// --inside pppoe` uses: MRU 1454, PAP, the documentation pool 198.51.100.10 + 240 behind
    /// gateway .1, echo every 10 s, 30 s to come up.
    pub fn new(role: PppoeRole) -> PppoeSettings {
        PppoeSettings {
            role,
            mru: 1454,
            auth: vec![PppAuth::Pap],
            users: Vec::new(),
            ac_name: String::new(),
            service_name: String::new(),
            gateway: Ipv4Addr::new(198, 51, 100, 1),
            pool: Ipv4Addr::new(198, 51, 100, 10),
            pool_size: 240,
            echo_interval: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            internet: None,
            subscribers: None,
        }
    }
}

/// Which end of a DS-Lite softwire a port plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DsliteRole {
    /// The AFTR (the ISP side, facing a home gateway's B4).
    Aftr,
    /// The B4 (subscriber side).
    B4,
}

/// `[ports.NAME.dslite]`: the port terminates IPv4-in-IPv6 (RFC 6333).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DsliteSettings {
    /// AFTR or B4.
    pub role: DsliteRole,
    /// Our tunnel endpoint address (the AFTR's, for a CPE the `aftr-name` it is given).
    pub address: Ipv6Addr,
    /// The far tunnel endpoint (B4 role: the AFTR's address).
    pub peer: Option<Ipv6Addr>,
    /// How long the run waits for the first softwire (the B4's first packet).
    #[serde(with = "crate::secs")]
    pub timeout: Duration,
    /// AFTR role: also provision the link (RA + DHCPv6: an address, a delegated /56, DNS and
    /// the AFTR name, `emulate::provision`), so a stock CPE comes up without static WAN
    /// configuration.
    #[serde(default)]
    pub provision: bool,
    /// The AFTR name given with DHCPv6 option 64 when provisioning (default
    /// `aftr.example.net`).
    #[serde(default)]
    pub aftr_name: Option<String>,
    /// The largest outer IPv6 packet on the port's link (`mtu`, default 1500); a bigger one is
    /// fragmented, so frames whose packet does not fit are refused (`crate::oversize`).
    #[serde(default = "default_dslite_mtu")]
    pub mtu: usize,
    /// AFTR role: the Internet host's address. The AFTR then hands the softwires' IPv4 to a
    /// TUN device in a namespace the run creates, where this address lives and iperf3's
    /// server runs (as for a PPPoE access concentrator): TCP cases cross the softwire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internet: Option<Ipv4Addr>,
}

fn default_dslite_mtu() -> usize {
    crate::oversize::DSLITE_DEFAULT_MTU
}

/// Whether the DUT is a lab namespace or a real device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DutKind {
    /// The lab's DUT namespace, configured with the lab's profiles.
    Lab,
    /// A real device configured by the profile's hooks.
    Device,
}

/// One DUT configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Profile name (a dimension value of every case).
    pub name: String,
    /// For lab DUTs: the lab profile to apply (e.g. `filter-stateful-100`).
    pub lab: Option<String>,
    /// Hook commands.
    pub hooks: ProfileHooks,
    /// Lab DUTs with conntrack (`napt`, `filter-stateful-N`): the connection table holds this
    /// many connections and drops new ones past it (`table-size`, lab::conntrack); the ground
    /// truth of `nat-table-capacity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_size: Option<u64>,
    /// Lab DUTs with conntrack: the unreplied-UDP timeout in the DUT (`udp-timeout`); longer
    /// than the longest connection trial, or its oldest connections expire mid-trial.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::secs_opt"
    )]
    pub udp_timeout: Option<Duration>,
}

/// The device under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dut {
    /// Lab or device.
    pub kind: DutKind,
    /// Where hooks run.
    pub exec: Exec,
    /// Profiles in plan order.
    pub profiles: Vec<Profile>,
}

/// Run-wide settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// How often every case is repeated.
    pub repetitions: u32,
    /// Length of a full trial.
    #[serde(with = "crate::secs")]
    pub trial_duration: Duration,
    /// Pause between trials (queues drain, counters settle).
    #[serde(with = "crate::secs")]
    pub settle: Duration,
    /// Pause after a profile's setup hooks.
    #[serde(with = "crate::secs")]
    pub profile_settle: Duration,
    /// Lowest load searches measure.
    pub min_load: LineFraction,
    /// Highest load (lower it to the tester's calibrated ceiling).
    pub max_load: LineFraction,
    /// Tester-limited threshold (ratio).
    pub tester_tolerance: f64,
    /// The packet engine of UDP trials (`run.backend`; default `auto`: XDP where the case fits
    /// it, else AF_PACKET with the reason in each trial record).
    #[serde(default)]
    pub backend: TxBackend,
    /// Transmit and receive threads per port of UDP trials (`run.tx-threads`,
    /// `run.rx-threads`, 1..=[`MAX_THREADS`]; default 1), as `wirerate trial --tx-threads` and
    /// `--rx-threads` give them.
    #[serde(default = "one_thread")]
    pub tx_threads: u16,
    #[serde(default = "one_thread")]
    pub rx_threads: u16,
    /// What every UDP case's streams carry (flows, ToS, bursts, reordering) and how they are
    /// sent (TX method, drain): `wirerate trial`'s stream flags as `[run]` keys.
    #[serde(default)]
    pub stream: StreamSettings,
    /// `run.lan-watch` (default on): during every trial, ask the gateway address of each port
    /// that has one (ARP/ND, [`Plan::lan_watched_gateways`]) whether it still answers, and flag
    /// the trial when it went silent (`results::LanWatch`).
    #[serde(default = "yes")]
    pub lan_watch: bool,
}

fn yes() -> bool {
    true
}

/// Most transmit or receive threads per port (the engine's `trial::MAX_THREADS`).
pub const MAX_THREADS: u16 = 16;

fn one_thread() -> u16 {
    1
}

/// `run.backend`: which packet engine sends and counts a plan's UDP test frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxBackend {
    /// XDP when the case fits it and the kernel runs it, else AF_PACKET (the reason is
    /// recorded per trial).
    #[default]
    Auto,
    /// Always XDP (a case it cannot run fails with the reason).
    Xdp,
    /// Always AF_PACKET.
    AfPacket,
}

impl TxBackend {
    /// Every value with its plan name.
    pub const ALL: [(&'static str, TxBackend); 3] = [
        ("auto", TxBackend::Auto),
        ("xdp", TxBackend::Xdp),
        ("af_packet", TxBackend::AfPacket),
    ];
}
