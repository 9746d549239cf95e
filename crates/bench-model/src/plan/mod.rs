//! The plan file: what to test, on what, and how — and its expansion into [`Case`]s.
//!
//! A plan is TOML (see `tests/fixtures/lab-demo.toml` and docs/methodology.md). It is checked
//! completely before any traffic is sent: every error names the file, line and key
//! ([`PlanError`]), unknown keys are rejected with a "did you mean" hint, and all errors are
//! reported at once. The plan's `[[matrix]]` blocks expand into cases whose ids are derived from
//! their dimensions, not their position, so `--resume` still recognises finished cases after the
//! plan is reordered.

use core::time::Duration;
use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use serde::{Deserialize, Serialize};
use wire::encap::IpVersion;
use wire::units::BitsPerSec;

use crate::hooks::{Exec, ProfileHooks};
use crate::search::{
    self, BackToBack, BackToBackConfig, BinaryConfig, BinarySearch, ForwardingRate,
    ForwardingRateConfig, LineFraction, LossCurve, LossCurveConfig, MultiGoalConfig,
    MultiGoalSearch, Search,
};
use crate::search::{
    ConnRate, ConnSearch, ConnectionRateConfig, ConnectionRateSearch, TableCapacityConfig,
    TableCapacitySearch,
};

mod ipoe;
mod mtu_probe;
mod parse;
mod source;
mod stream;

pub use ipoe::IpoeSettings;
pub use mtu_probe::MtuProbeSettings;
pub use parse::locate;
pub use source::{did_you_mean, line_col, PlanError, PlanErrors};
pub use stream::{StreamSettings, TxMethod, DEFAULT_DRAIN, MAX_DRAIN};

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

/// A methodology a case can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Methodology {
    /// RFC 2544 §26.1 binary search.
    Rfc2544Throughput,
    /// Multi-goal loss-ratio search (MLRsearch-style).
    MultiGoal,
    /// RFC 2544 §26.2 latency at the throughput found.
    Rfc2544Latency,
    /// RFC 2544 §26.3 frame-loss-rate curve.
    Rfc2544LossCurve,
    /// RFC 2544 §26.4 back-to-back frames.
    Rfc2544BackToBack,
    /// RFC 2889 §5.1 forwarding rate at the maximum offered load ([`search::ForwardingRate`]).
    ForwardingRate,
    /// One iperf3 run per repetition (TCP, or UDP at a fixed bit rate).
    Iperf3,
    /// RFC 9693 connection tracking table capacity: the largest number of connections the
    /// DUT holds ([`search::TableCapacitySearch`]).
    NatTableCapacity,
    /// RFC 9693 maximum connection establishment rate at a fixed number of connections
    /// ([`search::ConnectionRateSearch`]).
    NatConnectionRate,
    /// RFC 9693 connection tear-down rate: N connections established, then the DUT's table
    /// deleted and timed ([`search::TeardownRateSearch`]).
    NatTeardownRate,
    /// RFC 2544 throughput on N established connections, both directions, for a list of N
    /// ([`search::NatThroughputSearch`]).
    NatThroughput,
    /// Per direction, the largest frame size that crosses whole and the fate above it
    /// ([`search::MtuProbe`]).
    MtuProbe,
}

impl Methodology {
    /// Every methodology with its plan name.
    pub const ALL: [(&'static str, Methodology); 12] = [
        ("rfc2544-throughput", Methodology::Rfc2544Throughput),
        ("multi-goal", Methodology::MultiGoal),
        ("rfc2544-latency", Methodology::Rfc2544Latency),
        ("rfc2544-loss-curve", Methodology::Rfc2544LossCurve),
        ("rfc2544-back-to-back", Methodology::Rfc2544BackToBack),
        ("forwarding-rate", Methodology::ForwardingRate),
        ("iperf3", Methodology::Iperf3),
        ("nat-table-capacity", Methodology::NatTableCapacity),
        ("nat-connection-rate", Methodology::NatConnectionRate),
        ("nat-teardown-rate", Methodology::NatTeardownRate),
        ("nat-throughput", Methodology::NatThroughput),
        ("mtu-probe", Methodology::MtuProbe),
    ];

    /// The plan name.
    pub fn name(self) -> &'static str {
        Methodology::ALL
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("?", |(n, _)| n)
    }

    /// Whether it needs the packet engine (UDP test frames with signatures).
    pub fn needs_engine(self) -> bool {
        self != Methodology::Iperf3
    }

    /// Whether the runner can execute it, and if not, what is missing. A methodology that
    /// cannot run is refused by `plan check` and `run` with this reason — never run as a stub
    /// that reports a figure.
    pub fn executable(self) -> Result<(), &'static str> {
        Ok(())
    }

    /// Whether it is one of the connection methodologies (RFC 9693), whose trials have two
    /// phases and move N and the new-connection rate instead of a load.
    pub fn is_connection(self) -> bool {
        matches!(
            self,
            Methodology::NatTableCapacity
                | Methodology::NatConnectionRate
                | Methodology::NatTeardownRate
                | Methodology::NatThroughput
        )
    }
}

/// `[methodology.nat-teardown-rate]`: see [`search::TeardownRateSearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TeardownRateSettings {
    /// Connections established, then deleted, in every repetition.
    pub connections: u64,
    /// Repetitions; the figure is their median.
    pub repetitions: u32,
    /// New connections per second in the preliminary phase.
    pub preliminary_rate: f64,
    /// Validation frames per second; `None` = the preliminary rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_rate: Option<f64>,
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for TeardownRateSettings {
    fn default() -> Self {
        TeardownRateSettings {
            connections: 1000,
            repetitions: 5,
            preliminary_rate: 1000.0,
            validation_rate: None,
            phase_gap: Duration::from_secs(1),
        }
    }
}

impl TeardownRateSettings {
    /// The search configuration these settings give.
    pub fn config(&self, tester_tolerance: f64) -> search::TeardownRateConfig {
        let rate = ConnRate(self.preliminary_rate);
        search::TeardownRateConfig {
            connections: self.connections,
            repetitions: self.repetitions,
            rate,
            validation_rate: self.validation_rate.map_or(rate, ConnRate),
            gap: self.phase_gap,
            tester_tolerance,
        }
    }
}

/// One N of `[methodology.nat-throughput] connections`: a number, or `"table"` — the case's
/// configured table size (`table-size` of its lab profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConnCount {
    N(u64),
    Table(TableWord),
}

/// The word `table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableWord {
    Table,
}

/// `[methodology.nat-throughput]`: see [`search::NatThroughputSearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NatThroughputSettings {
    /// The N to measure at.
    pub connections: Vec<ConnCount>,
    /// Frames/s each direction: the floor and the first rate tried.
    pub min_rate: f64,
    pub max_rate: f64,
    /// Relative width at which each N's bisection stops.
    pub resolution: f64,
    /// How long each load runs.
    #[serde(with = "crate::secs")]
    pub duration: Duration,
    /// New connections per second in the preliminary phase.
    pub preliminary_rate: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_rate: Option<f64>,
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for NatThroughputSettings {
    fn default() -> Self {
        NatThroughputSettings {
            connections: vec![ConnCount::N(1), ConnCount::N(1000)],
            min_rate: 1000.0,
            max_rate: 100_000.0,
            resolution: 0.05,
            duration: Duration::from_secs(1),
            preliminary_rate: 1000.0,
            validation_rate: None,
            phase_gap: Duration::from_secs(1),
        }
    }
}

impl NatThroughputSettings {
    /// The search configuration for a case whose table holds `table_size` connections
    /// (`None`: not known; then `"table"` cannot be resolved and this is `Err` naming it).
    pub fn config(
        &self,
        tester_tolerance: f64,
        table_size: Option<u64>,
    ) -> Result<search::NatThroughputConfig, String> {
        let connections = self
            .connections
            .iter()
            .map(|c| match c {
                ConnCount::N(n) => Ok(*n),
                ConnCount::Table(_) => table_size.ok_or_else(|| {
                    "`\"table\"` needs the case's profile to set `table-size`".to_string()
                }),
            })
            .collect::<Result<Vec<u64>, String>>()?;
        let rate = ConnRate(self.preliminary_rate);
        Ok(search::NatThroughputConfig {
            connections,
            min_pps: self.min_rate,
            max_pps: self.max_rate,
            resolution: self.resolution,
            duration: self.duration,
            rate,
            validation_rate: self.validation_rate.map_or(rate, ConnRate),
            gap: self.phase_gap,
            tester_tolerance,
        })
    }
}

/// `[methodology.nat-table-capacity]`: see [`search::TableCapacitySearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TableCapacitySettings {
    /// Largest number of connections tried.
    pub max_connections: u64,
    /// First number tried (RFC 9693's C0); `None` = 1,000 or `max_connections` if smaller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_connections: Option<u64>,
    /// Stop when the bracket is this many connections wide (1 = exact).
    pub resolution_connections: u64,
    /// New connections per second in every preliminary phase.
    pub preliminary_rate: f64,
    /// Validation frames per second; `None` = the preliminary rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_rate: Option<f64>,
    /// Wait between the preliminary phase and the validation.
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for TableCapacitySettings {
    fn default() -> Self {
        TableCapacitySettings {
            max_connections: 1_000_000,
            start_connections: None,
            resolution_connections: 1,
            preliminary_rate: 10_000.0,
            validation_rate: None,
            phase_gap: Duration::from_secs(1),
        }
    }
}

impl TableCapacitySettings {
    /// The search configuration these settings give.
    pub fn config(&self, tester_tolerance: f64) -> TableCapacityConfig {
        let rate = ConnRate(self.preliminary_rate);
        TableCapacityConfig {
            start: self
                .start_connections
                .unwrap_or_else(|| 1000.min(self.max_connections.max(1))),
            max: self.max_connections,
            resolution: self.resolution_connections,
            rate,
            validation_rate: self.validation_rate.map_or(rate, ConnRate),
            gap: self.phase_gap,
            tester_tolerance,
        }
    }
}

/// `[methodology.nat-connection-rate]`: see [`search::ConnectionRateSearch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionRateSettings {
    /// Connections created in every trial.
    pub connections: u64,
    /// Lowest rate tried, new connections per second.
    pub min_rate: f64,
    /// First and highest rate tried.
    pub max_rate: f64,
    /// Relative width at which the search stops.
    pub resolution: f64,
    /// Validation frames per second.
    pub validation_rate: f64,
    /// Wait between the preliminary phase and the validation.
    #[serde(with = "crate::secs")]
    pub phase_gap: Duration,
}

impl Default for ConnectionRateSettings {
    fn default() -> Self {
        ConnectionRateSettings {
            connections: 10_000,
            min_rate: 1_000.0,
            max_rate: 1_000_000.0,
            resolution: 0.01,
            validation_rate: 10_000.0,
            phase_gap: Duration::from_secs(1),
        }
    }
}

impl ConnectionRateSettings {
    /// The search configuration these settings give.
    pub fn config(&self, tester_tolerance: f64) -> ConnectionRateConfig {
        ConnectionRateConfig {
            connections: self.connections,
            min_rate: ConnRate(self.min_rate),
            max_rate: ConnRate(self.max_rate),
            resolution: self.resolution,
            validation_rate: ConnRate(self.validation_rate),
            gap: self.phase_gap,
            tester_tolerance,
        }
    }
}

/// Per-methodology settings from `[methodology.*]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodologySettings {
    /// RFC 2544 throughput: tolerated loss ratio.
    pub loss_tolerance: f64,
    /// RFC 2544 throughput: relative resolution.
    pub resolution: f64,
    /// Multi-goal: the goals (a bare loss ratio in older run files).
    pub goals: Vec<GoalSetting>,
    /// Multi-goal: final relative width (default of every goal).
    pub width: f64,
    /// Multi-goal: first-phase trial duration (default of every goal).
    #[serde(with = "crate::secs")]
    pub initial_duration: Duration,
    /// Multi-goal: goal exceed ratio (default of every goal).
    #[serde(default)]
    pub exceed_ratio: f64,
    /// Multi-goal: final trial duration (default of every goal; `None` = `run.trial-duration`).
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub final_duration: Option<Duration>,
    /// Multi-goal: goal duration sum (default of every goal; `None` = its final duration).
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration_sum: Option<Duration>,
    /// Multi-goal: the most trial time one search may spend; it then stops with the best
    /// brackets so far and says so.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub search_time_cap: Option<Duration>,
    /// Latency: trials.
    pub latency_trials: u32,
    /// Latency: trial duration.
    #[serde(with = "crate::secs")]
    pub latency_duration: Duration,
    /// Loss curve: step.
    pub loss_curve_step: f64,
    /// Forwarding rate: trials at the maximum offered load (absent in run files written
    /// before it existed).
    #[serde(default = "default_forwarding_rate_trials")]
    pub forwarding_rate_trials: u32,
    /// Back-to-back: repetitions of the burst search.
    pub b2b_repetitions: u32,
    /// Back-to-back: resolution in frames.
    pub b2b_resolution_frames: u64,
    /// Back-to-back: trial window (and the longest burst, at line rate).
    #[serde(with = "crate::secs")]
    pub b2b_duration: Duration,
    /// iperf3: `-R`.
    pub iperf3_reverse: bool,
    /// iperf3: `--bidir`.
    pub iperf3_bidir: bool,
    /// iperf3: `-O` seconds to omit (TCP slow start).
    #[serde(with = "crate::secs")]
    pub iperf3_omit: Duration,
    /// iperf3: measured seconds per run (`-t`), after the omitted ones. TCP needs longer than
    /// the engine's trials to average out its sawtooth, so it has its own setting.
    #[serde(with = "crate::secs", default = "default_iperf3_duration")]
    pub iperf3_duration: Duration,
    /// iperf3 UDP target bit rate (`-b`).
    pub iperf3_udp_bitrate: Option<BitsPerSec>,
    /// `nat-table-capacity` (absent in run files written before it existed).
    #[serde(default)]
    pub nat_table_capacity: TableCapacitySettings,
    /// `nat-connection-rate` (absent in run files written before it existed).
    #[serde(default)]
    pub nat_connection_rate: ConnectionRateSettings,
    /// `[methodology.nat-teardown-rate]`.
    #[serde(default)]
    pub nat_teardown_rate: TeardownRateSettings,
    /// `[methodology.nat-throughput]`.
    #[serde(default)]
    pub nat_throughput: NatThroughputSettings,
    /// `[methodology.mtu-probe]` (absent in run files written before it existed).
    #[serde(default)]
    pub mtu_probe: MtuProbeSettings,
}

impl Default for MethodologySettings {
    fn default() -> Self {
        MethodologySettings {
            loss_tolerance: 0.0,
            resolution: 0.005,
            goals: vec![GoalSetting::ratio(0.0), GoalSetting::ratio(0.005)],
            width: 0.005,
            initial_duration: Duration::from_secs(1),
            exceed_ratio: 0.0,
            final_duration: None,
            duration_sum: None,
            search_time_cap: None,
            latency_trials: 20,
            latency_duration: Duration::from_secs(120),
            loss_curve_step: 0.1,
            forwarding_rate_trials: default_forwarding_rate_trials(),
            b2b_repetitions: 50,
            b2b_resolution_frames: 1,
            b2b_duration: Duration::from_secs(2),
            iperf3_reverse: false,
            iperf3_bidir: false,
            iperf3_omit: DEFAULT_IPERF3_OMIT,
            iperf3_duration: default_iperf3_duration(),
            iperf3_udp_bitrate: None,
            nat_table_capacity: TableCapacitySettings::default(),
            nat_connection_rate: ConnectionRateSettings::default(),
            nat_teardown_rate: TeardownRateSettings::default(),
            nat_throughput: NatThroughputSettings::default(),
            mtu_probe: MtuProbeSettings::default(),
        }
    }
}

/// One goal of the multi-goal search as the plan gives it (RFC 9971 §4.6); a field left unset
/// takes the `[methodology.multi-goal]` value (see [`GoalSetting::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(from = "GoalEntry")]
pub struct GoalSetting {
    /// Goal loss ratio.
    pub loss_ratio: f64,
    /// Goal exceed ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceed_ratio: Option<f64>,
    /// Goal width.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    /// Goal initial trial duration.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub initial_duration: Option<Duration>,
    /// Goal final trial duration.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub final_duration: Option<Duration>,
    /// Goal duration sum.
    #[serde(
        default,
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub duration_sum: Option<Duration>,
}

/// How a goal may be written in `run.json`: a bare loss ratio (older runs) or all fields.
#[derive(Deserialize)]
#[serde(untagged)]
enum GoalEntry {
    Ratio(f64),
    Full(GoalFields),
}

#[derive(Deserialize)]
struct GoalFields {
    loss_ratio: f64,
    #[serde(default)]
    exceed_ratio: Option<f64>,
    #[serde(default)]
    width: Option<f64>,
    #[serde(default, with = "crate::secs_opt")]
    initial_duration: Option<Duration>,
    #[serde(default, with = "crate::secs_opt")]
    final_duration: Option<Duration>,
    #[serde(default, with = "crate::secs_opt")]
    duration_sum: Option<Duration>,
}

impl From<GoalEntry> for GoalSetting {
    fn from(e: GoalEntry) -> GoalSetting {
        match e {
            GoalEntry::Ratio(r) => GoalSetting::ratio(r),
            GoalEntry::Full(f) => GoalSetting {
                loss_ratio: f.loss_ratio,
                exceed_ratio: f.exceed_ratio,
                width: f.width,
                initial_duration: f.initial_duration,
                final_duration: f.final_duration,
                duration_sum: f.duration_sum,
            },
        }
    }
}

impl GoalSetting {
    /// A goal given only by its loss ratio.
    pub fn ratio(loss_ratio: f64) -> GoalSetting {
        GoalSetting {
            loss_ratio,
            exceed_ratio: None,
            width: None,
            initial_duration: None,
            final_duration: None,
            duration_sum: None,
        }
    }

    /// The goal `"rfc2544"`: [`search::Goal::rfc2544`] (loss 0, exceed 0, one 60 s trial), with
    /// the methodology's width and initial duration.
    pub fn rfc2544() -> GoalSetting {
        let g = search::Goal::rfc2544();
        GoalSetting {
            loss_ratio: g.loss_ratio,
            exceed_ratio: Some(g.exceed_ratio),
            width: None,
            initial_duration: None,
            final_duration: Some(g.final_duration),
            duration_sum: Some(g.duration_sum),
        }
    }

    /// The goal with every unset field taken from `m`, then from `run` (final duration =
    /// `run.trial-duration`, duration sum = the final duration, initial ≤ final).
    pub fn resolve(&self, m: &MethodologySettings, run: &RunSettings) -> search::Goal {
        let final_duration = self
            .final_duration
            .or(m.final_duration)
            .unwrap_or(run.trial_duration);
        search::Goal {
            loss_ratio: self.loss_ratio,
            exceed_ratio: self.exceed_ratio.unwrap_or(m.exceed_ratio),
            width: self.width.unwrap_or(m.width),
            initial_duration: self
                .initial_duration
                .unwrap_or(m.initial_duration)
                .min(final_duration),
            final_duration,
            duration_sum: self
                .duration_sum
                .or(m.duration_sum)
                .unwrap_or(final_duration),
        }
    }
}

/// iperf3 runs omit their first second (TCP slow start, `-O 1`) unless the plan says otherwise.
pub const DEFAULT_IPERF3_OMIT: Duration = Duration::from_secs(1);

/// iperf3 runs measure 10 s unless the plan says otherwise: 1 s runs gave TCP figures that
/// varied by tens of percent between repetitions on the lab.
fn default_iperf3_duration() -> Duration {
    Duration::from_secs(10)
}

/// Three trials at the maximum offered load: enough for a spread that findings can judge
/// differences against.
fn default_forwarding_rate_trials() -> u32 {
    3
}

/// L4 protocol of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP (iperf3).
    Tcp,
    /// UDP (packet engine or iperf3).
    Udp,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        })
    }
}

/// One `[[matrix]]` block: a cartesian product of dimensions and the methodologies to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// Optional label.
    pub name: Option<String>,
    /// Line of the block in the plan (for errors found during expansion).
    pub line: usize,
    /// Protocols.
    pub protocol: Vec<Protocol>,
    /// IP versions.
    pub ip: Vec<IpVersion>,
    /// UDP frame sizes (reference frame, with FCS).
    pub frame_size: Vec<u32>,
    /// `"imix"` among the frame sizes: one more case per position, sending the simple IMIX
    /// (7 × 64, 4 × 594, 1 × 1518 B), as `wirerate trial --size imix`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imix: bool,
    /// TCP parallel sessions.
    pub sessions: Vec<u32>,
    /// TCP MSS values (`-M`); empty = iperf3's default.
    pub mss: Vec<u32>,
    /// Profiles (all when the plan omits the key).
    pub profile: Vec<String>,
    /// User-defined dimensions, handed to hooks as `WR_<NAME>` variables.
    pub vars: Vec<(String, Vec<String>)>,
    /// Methodologies per case.
    pub methodologies: Vec<Methodology>,
    /// Encapsulations of the test frames on the far link (`encap` key; the IP version comes
    /// from `ip`). Empty: the key is absent and frames are plain (no `encap=` in case ids).
    #[serde(default)]
    pub encap: Vec<wire::encap::EncapSpec>,
    /// UDP trials send A→B and B→A at once, each at the search's load (RFC 2544 §14).
    #[serde(default)]
    pub bidirectional: bool,
    /// The DUT's segmentation offloads (GRO/GSO/TSO) off and/or on, as a dimension (`offload`
    /// key). Empty: the key is absent (the lab DUT keeps them off; a real DUT as it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offload: Vec<bool>,
    /// The DUT's fast path off and/or on, as a dimension (`fastpath` key). Empty: absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fastpath: Vec<bool>,
    /// Flows per UDP stream, as a dimension (`flows` key): that many distinct UDP source
    /// ports (`run.src-ports` per case). Empty: absent (`[run]`'s counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<u16>,
    /// The ToS / traffic class byte of UDP test frames, as a dimension (`tos` key; overrides
    /// `run.tos`). Empty: absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tos: Vec<u8>,
}

/// A parsed and checked plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The file the plan was read from (for error messages).
    pub file: String,
    /// Plan name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Lab or real interfaces.
    pub topology: Topology,
    /// Tester ports (required for real interfaces).
    pub ports: Vec<Port>,
    /// The DUT.
    pub dut: Dut,
    /// Run-wide settings.
    pub run: RunSettings,
    /// Methodology settings.
    pub methodology: MethodologySettings,
    /// Matrix blocks.
    pub matrices: Vec<Matrix>,
}

/// One point of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    /// Stable id derived from the dimensions, e.g. `napt/udp4/64B`.
    pub id: String,
    /// DUT profile.
    pub profile: String,
    /// Protocol.
    pub protocol: Protocol,
    /// IP version.
    pub ip: IpVersion,
    /// UDP frame size (`None` for TCP, and for an IMIX case: [`Case::imix`]).
    pub frame_size: Option<u32>,
    /// A UDP case sending the simple IMIX instead of one size ([`Case::frame`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imix: bool,
    /// TCP sessions.
    pub sessions: Option<u32>,
    /// TCP MSS.
    pub mss: Option<u32>,
    /// User dimensions (name, value).
    pub vars: Vec<(String, String)>,
    /// Methodologies, in run order.
    pub methodologies: Vec<Methodology>,
    /// Encapsulation of the test frames on the far link, with the case's IP version; `None`
    /// when the block has no `encap` key (plain frames).
    #[serde(default)]
    pub encap: Option<wire::encap::EncapSpec>,
    /// UDP trials run in both directions at once ([`Matrix::bidirectional`]).
    #[serde(default)]
    pub bidirectional: bool,
    /// The DUT's segmentation offloads for this case ([`Matrix::offload`]); `None`: not a
    /// dimension of this case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<bool>,
    /// The DUT's fast path for this case ([`Matrix::fastpath`]); `None`: not a dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastpath: Option<bool>,
    /// Flows (distinct UDP source ports) of this UDP case ([`Matrix::flows`]); `None`: not a
    /// dimension (`run.src-ports` and the other `[run]` counts apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u16>,
    /// ToS / traffic class of this UDP case ([`Matrix::tos`]); `None`: `run.tos`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
}

/// `on` / `off`, as plans, case ids and hook variables spell a switch.
pub fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn ip_number(ip: IpVersion) -> u8 {
    match ip {
        IpVersion::V4 => 4,
        IpVersion::V6 => 6,
    }
}

impl Case {
    /// What a UDP case sends: its frame size, or the IMIX; `None` for TCP.
    pub fn frame(&self) -> Option<wire::linerate::FrameSize> {
        if self.imix {
            return Some(wire::linerate::FrameSize::Imix);
        }
        self.frame_size
            .map(|b| wire::linerate::FrameSize::Fixed { bytes: b as usize })
    }

    /// Variables for hook commands: `WR_CASE`, `WR_PROFILE`, `WR_PROTOCOL`, `WR_IP`,
    /// `WR_FRAME_SIZE`, `WR_SESSIONS`, `WR_MSS`, `WR_FLOWS`, `WR_TOS` (when set) and
    /// `WR_<NAME>` per user dimension.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("WR_CASE".to_string(), self.id.clone()),
            ("WR_PROFILE".to_string(), self.profile.clone()),
            ("WR_PROTOCOL".to_string(), self.protocol.to_string()),
            ("WR_IP".to_string(), ip_number(self.ip).to_string()),
        ];
        let opt = |k: &str, x: Option<u32>| x.map(|x| (k.to_string(), x.to_string()));
        v.extend(opt("WR_FRAME_SIZE", self.frame_size));
        if self.imix {
            v.push(("WR_FRAME_SIZE".to_string(), "imix".to_string()));
        }
        v.extend(opt("WR_SESSIONS", self.sessions));
        v.extend(opt("WR_MSS", self.mss));
        if let Some(e) = &self.encap {
            v.push(("WR_ENCAP".to_string(), parse::spell_encap(e)));
        }
        if self.bidirectional {
            v.push(("WR_BIDIRECTIONAL".to_string(), "1".to_string()));
        }
        if let Some(o) = self.offload {
            v.push(("WR_OFFLOAD".to_string(), on_off(o).to_string()));
        }
        if let Some(f) = self.fastpath {
            v.push(("WR_FASTPATH".to_string(), on_off(f).to_string()));
        }
        if let Some(n) = self.flows {
            v.push(("WR_FLOWS".to_string(), n.to_string()));
        }
        if let Some(t) = self.tos {
            v.push(("WR_TOS".to_string(), t.to_string()));
        }
        for (k, val) in &self.vars {
            v.push((env_name(k), val.clone()));
        }
        v
    }
}

/// `fast-path` → `WR_FAST_PATH`.
pub fn env_name(var: &str) -> String {
    format!("WR_{}", var.to_ascii_uppercase().replace('-', "_"))
}

/// Predicted cost of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Cases.
    pub cases: usize,
    /// Trials over all cases and repetitions.
    pub trials: u64,
    /// Profile switches (setup + settle).
    pub profile_switches: usize,
    /// Seconds of trials, settles and profile settles.
    pub seconds: f64,
    /// Seconds of start-up on top ([`Startup`]): the lab, profile loads, the engine's and
    /// iperf3's per-trial start and drain, PPPoE sessions. Hooks are not included.
    pub startup: f64,
}

/// Start-up costs a time estimate adds to trial time. Conservative figures: the lab and
/// trial ones are at or above what `wirerate run` took on a 2-vCPU machine under load
/// (docs/methodology.md lists the measurement), the PPPoE one allows for a slow subscriber.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Startup {
    /// Building the lab (namespaces, veths, addresses, RPS) and removing it.
    pub lab: f64,
    /// Loading one lab profile (one `nft -f`; 10,000 rules take 0.3–0.6 s).
    pub profile: f64,
    /// Per engine trial: programs loaded, next hop resolved, the 100 ms drain, DUT counters read.
    /// The demo on a fresh clone of 2ddc443 (2026-11-26, load ~1): 0.64 s between the ends of
    /// consecutive trials of a case beyond the trial's own duration, median of 271, of which
    /// 0.1 s is the plan's settle: 0.54 s.
    pub engine_trial: f64,
    /// Per connection trial (RFC 9693) on the lab: the DUT's table emptied and its counters read
    /// three times (a dozen `ip netns exec` processes), three threads set up, both ports
    /// resolving the DUT, the drain, an XDP load's programs. Measured on 2026-11-26 over a whole
    /// `lab-nat-capacity` run at load 6–7: 0.8 s per trial through napt, 1.8–2.1 s through the
    /// 10,000-rule firewall (its nftables commands load the whole ruleset); 1.45 s on average.
    pub conn_trial: f64,
    /// Per iperf3 trial: server started and awaited, SYN capture started and stopped.
    pub iperf3_trial: f64,
    /// Per PPPoE port: discovery, LCP, authentication, IPCP.
    pub pppoe_session: f64,
}

/// The start-up figures `plan check` and the runner's ETA use.
pub const STARTUP: Startup = Startup {
    lab: 3.0,
    profile: 1.0,
    engine_trial: 0.55,
    conn_trial: 1.45,
    iperf3_trial: 1.5,
    pppoe_session: 5.0,
};

/// The longest pause between two trials of a connection methodology without a load
/// (`nat-table-capacity`, `nat-connection-rate`, `nat-teardown-rate`): the DUT's table is
/// emptied before every trial anyway, and their AF_PACKET phases leave nothing on the tester
/// to wait for. `run.settle` exists for what an overloading XDP load leaves behind (the
/// kernel freeing the sender's page pools on the tester CPU), which only `nat-throughput`
/// trials have. A `lab-nat-capacity` run of 2026-11-26, before this bound (95460d1), spent 50 of
/// its 107 trials' seconds in such pauses.
pub const CONN_SETTLE: Duration = Duration::from_millis(200);

/// The DUT a plan's time estimate assumes: it forwards half of line rate.
pub const ESTIMATE_CAPACITY: LineFraction = LineFraction(0.5);

/// How much the estimate's DUT's capacity varies from trial to trial (relative, ±). A sharp
/// DUT predicts too few trials: the demo on a fresh clone of 2ddc443 ran 351 engine and iperf3
/// trials where a sharp DUT predicted 206 (sporadic loss makes the searches re-test); ±2 %
/// predicts 296 and puts the whole estimate within 2 % of that run's 8 m 17 s.
pub const ESTIMATE_NOISE: f64 = 0.02;

/// The stateful DUT a plan's time estimate assumes holds this share of `max-connections`.
pub const ESTIMATE_TABLE_SHARE: f64 = 0.5;

/// … and inserts this share of the connection-rate search's `max-rate`.
pub const ESTIMATE_RATE_SHARE: f64 = 0.25;

/// … and forwards this share of `nat-throughput`'s `max-rate` each way at any N: inside the
/// range, so the estimate counts a whole bisection per N (the lab DUT on the loaded machine
/// forwarded 20–37k of its plan's 150,000 on 2026-11-26).
pub const ESTIMATE_LOAD_SHARE: f64 = 0.2;

impl Plan {
    /// Parses and checks plan `text`; `file` is used in error messages.
    pub fn parse(text: &str, file: &str) -> Result<Plan, PlanErrors> {
        Ok(Plan::parse_expanded(text, file)?.0)
    }

    /// [`Plan::parse`], keeping the cases its check expanded: a run expands its matrix once
    /// and hands these down (estimate, preflight, runner, `run.json`).
    pub fn parse_expanded(text: &str, file: &str) -> Result<(Plan, Vec<Case>), PlanErrors> {
        let plan = parse::parse(text, file)?;
        // Expansion problems (duplicate cases) are plan errors too.
        let cases = plan.cases()?;
        Ok((plan, cases))
    }

    /// The plan's structure only, without the matrix expansion [`Plan::parse`] checks: for
    /// comparing a stored plan with the one given (`--resume`), where the cases are not needed.
    pub fn parse_unexpanded(text: &str, file: &str) -> Result<Plan, PlanErrors> {
        parse::parse(text, file)
    }

    /// Whether `other` asks for the same measurements: equal except where its text has them
    /// (file name, the lines matrix blocks start on), so comments and layout do not count.
    pub fn same_measurements(&self, other: &Plan) -> bool {
        let strip = |p: &Plan| {
            let mut p = p.clone();
            p.file.clear();
            p.matrices.iter_mut().for_each(|m| m.line = 0);
            p
        };
        strip(self) == strip(other)
    }

    /// Reads and checks the plan at `path`.
    pub fn load(path: &Path) -> Result<Plan, PlanErrors> {
        Ok(Plan::load_expanded(path)?.0)
    }

    /// [`Plan::load`], keeping the cases its check expanded ([`Plan::parse_expanded`]).
    pub fn load_expanded(path: &Path) -> Result<(Plan, Vec<Case>), PlanErrors> {
        let file = path.display().to_string();
        let text = crate::files::read_text(path).map_err(|e| {
            PlanErrors(vec![PlanError {
                file: file.clone(),
                line: 0,
                column: 0,
                key: String::new(),
                message: format!("cannot read the plan: {e}"),
                hint: None,
            }])
        })?;
        let (plan, cases) = Plan::parse_expanded(&text, &file)?;
        plan.check_subscriber_tables()?;
        Ok((plan, cases))
    }

    /// Reads every `[ports.NAME.pppoe] subscribers` table, so a bad line is a plan error
    /// (`TABLE:LINE`, the plan key) before anything runs.
    fn check_subscriber_tables(&self) -> Result<(), PlanErrors> {
        let mut errors = Vec::new();
        for port in &self.ports {
            let Some(path) = port.pppoe.as_ref().and_then(|p| p.subscribers.as_ref()) else {
                continue;
            };
            let key = format!("ports.{}.pppoe.subscribers", port.name);
            let error = |line: usize, message: String| PlanError {
                file: path.display().to_string(),
                line,
                column: 0,
                key: key.clone(),
                message,
                hint: None,
            };
            let mut bytes = Vec::new();
            let read = crate::files::open_regular(path)
                .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes));
            if let Err(e) = read {
                errors.push(error(0, format!("cannot read the subscriber table: {e}")));
                continue;
            }
            match emulate::pppoe::subscribers::SubscriberTable::parse(&bytes) {
                Err(e) => errors.push(error(e.line, e.message)),
                Ok(t) if t.is_empty() => errors.push(error(
                    0,
                    "no subscribers (one `USER PASSWORD [ipv4=…]` per line)".into(),
                )),
                Ok(_) => {}
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(PlanErrors(errors))
        }
    }

    /// Expands the matrix blocks into cases, ordered by profile (plan order) so each profile's
    /// setup runs once, then by block. Two blocks producing the same case is an error.
    pub fn cases(&self) -> Result<Vec<Case>, PlanErrors> {
        let mut cases: Vec<(usize, Case, usize)> = Vec::new();
        let profile_index = |p: &str| self.dut.profiles.iter().position(|x| x.name == p);
        for m in &self.matrices {
            for profile in &m.profile {
                for &protocol in &m.protocol {
                    for &ip in &m.ip {
                        // (frame size, IMIX): the sizes, then the IMIX.
                        let (sizes, sessions, mss): (Vec<(Option<u32>, bool)>, Dim, Dim) =
                            match protocol {
                                Protocol::Udp => (
                                    m.frame_size
                                        .iter()
                                        .map(|&f| (Some(f), false))
                                        .chain(m.imix.then_some((None, true)))
                                        .collect(),
                                    vec![None],
                                    vec![None],
                                ),
                                Protocol::Tcp => (
                                    vec![(None, false)],
                                    m.sessions.iter().copied().map(Some).collect(),
                                    if m.mss.is_empty() {
                                        vec![None]
                                    } else {
                                        m.mss.iter().copied().map(Some).collect()
                                    },
                                ),
                            };
                        for &(frame_size, imix) in &sizes {
                            for &s in &sessions {
                                for &ms in &mss {
                                    for encap in encap_values(&m.encap, ip, protocol) {
                                        for (offload, fastpath) in switch_product(m) {
                                            for (flows, tos) in stream_product(m, protocol) {
                                                for vars in var_product(&m.vars) {
                                                    let methodologies = m
                                                        .methodologies
                                                        .iter()
                                                        .copied()
                                                        .filter(|x| {
                                                            protocol == Protocol::Udp
                                                                || !x.needs_engine()
                                                        })
                                                        // Once per block position: at its
                                                        // largest size, the probe's top.
                                                        .filter(|x| {
                                                            *x != Methodology::MtuProbe
                                                                || (!imix
                                                                    && frame_size
                                                                        == m.frame_size
                                                                            .iter()
                                                                            .max()
                                                                            .copied())
                                                        })
                                                        .collect();
                                                    let mut case = Case {
                                                        id: String::new(),
                                                        profile: profile.clone(),
                                                        protocol,
                                                        ip,
                                                        frame_size,
                                                        imix,
                                                        sessions: s,
                                                        mss: ms,
                                                        vars,
                                                        methodologies,
                                                        encap,
                                                        bidirectional: m.bidirectional
                                                            && protocol == Protocol::Udp,
                                                        offload,
                                                        fastpath,
                                                        flows,
                                                        tos,
                                                    };
                                                    case.id = case_id(&case);
                                                    let order = profile_index(profile)
                                                        .unwrap_or(usize::MAX);
                                                    cases.push((order, case, m.line));
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        cases.sort_by_key(|(order, _, _)| *order);
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut errors = Vec::new();
        for (_, case, line) in &cases {
            if let Some(first) = seen.insert(case.id.clone(), *line) {
                errors.push(PlanError {
                    file: self.file.clone(),
                    line: *line,
                    column: 1,
                    key: "matrix".into(),
                    message: format!(
                        "case `{}` is also produced by the [[matrix]] block at line {first}",
                        case.id
                    ),
                    hint: Some("merge the blocks or give them different dimensions".into()),
                });
            }
        }
        if errors.is_empty() {
            Ok(cases.into_iter().map(|(_, c, _)| c).collect())
        } else {
            Err(PlanErrors(errors))
        }
    }

    /// The search for `methodology` in `case`, or `None` for iperf3 (no search: one run per
    /// repetition) and latency (it needs the throughput first: [`search::LatencySearch::at_throughput`]).
    pub fn search(&self, case: &Case, methodology: Methodology) -> Option<Box<dyn Search>> {
        let r = &self.run;
        let m = &self.methodology;
        let built: Result<Box<dyn Search>, search::InvalidConfig> = match methodology {
            Methodology::Rfc2544Throughput => BinarySearch::new(BinaryConfig {
                loss_tolerance: m.loss_tolerance,
                resolution: m.resolution,
                min_load: r.min_load,
                max_load: r.max_load,
                duration: r.trial_duration,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::MultiGoal => MultiGoalSearch::new(MultiGoalConfig {
                goals: m.goals.iter().map(|g| g.resolve(m, r)).collect(),
                min_load: r.min_load,
                max_load: r.max_load,
                phases: None,
                tester_tolerance: r.tester_tolerance,
                time_cap: m.search_time_cap,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::Rfc2544LossCurve => LossCurve::new(LossCurveConfig {
                max_load: r.max_load,
                step: m.loss_curve_step,
                duration: r.trial_duration,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::ForwardingRate => ForwardingRate::new(ForwardingRateConfig {
                load: r.max_load,
                trials: m.forwarding_rate_trials,
                duration: r.trial_duration,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::Rfc2544BackToBack => BackToBack::new(BackToBackConfig {
                max_frames: self.max_burst(case),
                resolution_frames: m.b2b_resolution_frames,
                duration: m.b2b_duration,
                repetitions: m.b2b_repetitions,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::MtuProbe => {
                return mtu_probe::search(&m.mtu_probe, case, r.tester_tolerance)
                    .map(|s| Box::new(s) as Box<dyn Search>)
            }
            Methodology::Rfc2544Latency
            | Methodology::Iperf3
            | Methodology::NatTableCapacity
            | Methodology::NatConnectionRate
            | Methodology::NatTeardownRate
            | Methodology::NatThroughput => return None,
        };
        // Settings were range-checked by the parser, so this only fails on a bug.
        built.ok()
    }

    /// The pause after a trial of `methodology`: `run.settle`, but at most [`CONN_SETTLE`]
    /// for the connection methodologies without a load.
    pub fn settle_after(&self, methodology: Methodology) -> Duration {
        match methodology {
            Methodology::NatTableCapacity
            | Methodology::NatConnectionRate
            | Methodology::NatTeardownRate => self.run.settle.min(CONN_SETTLE),
            _ => self.run.settle,
        }
    }

    /// The connection table size the lab profile of `case` sets (`table-size`), if any.
    pub fn table_size(&self, case: &Case) -> Option<u64> {
        self.dut
            .profiles
            .iter()
            .find(|p| p.name == case.profile)
            .and_then(|p| p.table_size)
    }

    /// The connection search for `methodology` (`nat-table-capacity`, `nat-connection-rate`,
    /// `nat-teardown-rate`, `nat-throughput`) on `case`, or `None` for the others. Settings
    /// were checked by the parser (and `"table"` against the profiles by `plan check`).
    pub fn conn_search(
        &self,
        case: &Case,
        methodology: Methodology,
    ) -> Option<Box<dyn ConnSearch>> {
        let tol = self.run.tester_tolerance;
        let m = &self.methodology;
        match methodology {
            Methodology::NatTeardownRate => {
                search::TeardownRateSearch::new(m.nat_teardown_rate.config(tol))
                    .ok()
                    .map(|s| Box::new(s) as Box<dyn ConnSearch>)
            }
            Methodology::NatThroughput => m
                .nat_throughput
                .config(tol, self.table_size(case))
                .ok()
                .and_then(|c| search::NatThroughputSearch::new(c).ok())
                .map(|s| Box::new(s) as Box<dyn ConnSearch>),
            Methodology::NatTableCapacity => {
                TableCapacitySearch::new(m.nat_table_capacity.config(tol))
                    .ok()
                    .map(|s| Box::new(s) as Box<dyn ConnSearch>)
            }
            Methodology::NatConnectionRate => {
                ConnectionRateSearch::new(m.nat_connection_rate.config(tol))
                    .ok()
                    .map(|s| Box::new(s) as Box<dyn ConnSearch>)
            }
            _ => None,
        }
    }

    /// The methodologies the plan's matrix asks for that the runner cannot execute yet, as
    /// (key, reason) with the key as plan errors spell it (`matrix[0].methodologies[2]`).
    pub fn not_yet_executable(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, mx) in self.matrices.iter().enumerate() {
            for (j, m) in mx.methodologies.iter().enumerate() {
                if let Err(why) = m.executable() {
                    out.push((
                        format!("matrix[{i}].methodologies[{j}]"),
                        format!("`{}` is not yet executable: {why}", m.name()),
                    ));
                }
                // The runner empties the DUT's connection table between trials and reads its
                // counters; it can do both only on the lab's own DUT so far.
                let lab_dut = self.dut.kind == DutKind::Lab
                    && matches!(&self.topology, Topology::Lab { topology, .. } if topology == "forward");
                if m.is_connection() && !lab_dut {
                    out.push((
                        format!("matrix[{i}].methodologies[{j}]"),
                        format!(
                            "`{}` is unsupported for this DUT kind: it runs on the lab's DUT (topology lab = \"forward\", dut kind = \"lab\") only so far, because emptying a real device's connection table between trials{} is not built yet (issue #15)",
                            m.name(),
                            if *m == Methodology::NatTeardownRate {
                                ", deleting it on command and reading its entry count"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
                // `"table"` means the case's configured table: every profile of the block
                // must set one.
                if *m == Methodology::NatThroughput
                    && self
                        .methodology
                        .nat_throughput
                        .connections
                        .iter()
                        .any(|c| matches!(c, ConnCount::Table(_)))
                {
                    let profiles: Vec<&Profile> = self
                        .dut
                        .profiles
                        .iter()
                        .filter(|p| mx.profile.is_empty() || mx.profile.contains(&p.name))
                        .collect();
                    for p in profiles.iter().filter(|p| p.table_size.is_none()) {
                        out.push((
                            "methodology.nat-throughput.connections".to_string(),
                            format!(
                                "`\"table\"` means the configured table size, but profile `{}` (matrix[{i}]) sets no `table-size`",
                                p.name
                            ),
                        ));
                    }
                }
            }
        }
        out
    }

    /// Reference link speed of the case's path.
    pub fn speed(&self) -> BitsPerSec {
        match &self.topology {
            Topology::Lab { speed, .. } => *speed,
            Topology::Interfaces => self
                .ports
                .iter()
                .filter_map(|p| p.speed)
                .reduce(|a, b| if b.0 < a.0 { b } else { a })
                .unwrap_or(BitsPerSec(1e9)),
        }
    }

    /// The encapsulation test frames of `case` carry on the far link: PPPoE when a port
    /// plays a PPPoE session, else the plain frame.
    pub fn path_encap(&self, case: &Case) -> wire::encap::EncapSpec {
        // The case's own `encap` (plan check made it agree with the ports) comes first.
        if let Some(e) = case.encap {
            return e;
        }
        let plain = wire::encap::EncapSpec::plain(case.ip);
        if self.ports.iter().any(|p| p.pppoe.is_some()) {
            let mut e = plain;
            e.pppoe = true;
            e
        } else {
            plain
        }
    }

    /// 100 % load of a UDP `case` in frames/s: the slowest link of its path, each link's
    /// frames with the bytes its encapsulation adds (a PPPoE link carries frame + 8),
    /// DESIGN.md §4.
    pub fn line_pps(&self, case: &Case) -> wire::units::Pps {
        wire::units::Pps(self.line_rate(case).pps)
    }

    /// [`Plan::line_pps`] with its L2 rate and bottleneck link, as trial records carry it
    /// ([`crate::results::UdpFacts::line`]); its frames/s are always
    /// `wire::linerate::path_max_pps`'s, the 100 % `wirerate trial` uses too (a size the path
    /// cannot carry falls back to the frame as sent on one link).
    pub fn line_rate(&self, case: &Case) -> crate::line_rate::LineRate {
        let frame = case
            .frame()
            .unwrap_or(wire::linerate::FrameSize::Fixed { bytes: 64 });
        let size = frame.mean(case.ip);
        match crate::line_rate::LineRate::on_path(self.speed(), self.path_encap(case), &frame) {
            Some(r) if r.pps > 0.0 => r,
            _ => {
                // The one 100 % of a size the path cannot carry (wire::linerate::path_max_pps):
                // the frame as sent, its encapsulation included, on one link.
                let encap = self.path_encap(case);
                let pps = wire::linerate::path_max_pps(self.speed(), encap, &frame).0;
                crate::line_rate::LineRate {
                    pps,
                    l2_bps: pps * (size + encap.overhead() as f64) * 8.0,
                    bottleneck: "link".into(),
                }
            }
        }
    }

    /// The stateful DUT a plan's time estimate assumes for `case`: its table holds the
    /// profile's `table-size`, or else [`ESTIMATE_TABLE_SHARE`] of `max-connections`, and it
    /// inserts [`ESTIMATE_RATE_SHARE`] of the connection-rate search's `max-rate` (drop-new
    /// policy, no timeouts).
    fn estimate_stateful_dut(&self, case: &Case) -> search::sim::SimStatefulDut {
        let m = &self.methodology;
        search::sim::SimStatefulDut::new(
            self.table_size(case).unwrap_or(
                (m.nat_table_capacity.max_connections as f64 * ESTIMATE_TABLE_SHARE) as u64,
            ),
            m.nat_connection_rate.max_rate * ESTIMATE_RATE_SHARE,
            search::sim::TablePolicy::DropNew,
        )
    }

    /// The longest back-to-back burst tried: the whole trial window at line rate.
    fn max_burst(&self, case: &Case) -> u64 {
        let frame = case.frame_size.unwrap_or(64) as usize;
        let pps = wire::linerate::max_frame_rate(self.speed(), frame).0;
        ((pps * self.methodology.b2b_duration.as_secs_f64()) as u64).max(2)
    }

    /// Predicted trials and seconds of one case (all repetitions, settles included, profile
    /// switches not): each search driven against a simulated DUT forwarding
    /// [`ESTIMATE_CAPACITY`] ± [`ESTIMATE_NOISE`]. The runner uses it for its ETA.
    pub fn case_estimate(&self, case: &Case) -> (u64, f64) {
        let mut trials = 0u64;
        let mut seconds = 0.0;
        for &m in &case.methodologies {
            let settle = self.settle_after(m).as_secs_f64();
            let (t, s) = match m {
                Methodology::Iperf3 => (
                    1,
                    self.methodology.iperf3_duration.as_secs_f64()
                        + self.methodology.iperf3_omit.as_secs_f64(),
                ),
                Methodology::Rfc2544Latency => {
                    let n = self.methodology.latency_trials;
                    (
                        u64::from(n),
                        f64::from(n) * self.methodology.latency_duration.as_secs_f64(),
                    )
                }
                Methodology::NatTableCapacity
                | Methodology::NatConnectionRate
                | Methodology::NatTeardownRate
                | Methodology::NatThroughput => {
                    match self.conn_search(case, m) {
                        Some(mut s) => {
                            let dut = self.estimate_stateful_dut(case);
                            let load_limit =
                                self.methodology.nat_throughput.max_rate * ESTIMATE_LOAD_SHARE;
                            let r = search::drive_conn(s.as_mut(), |t| {
                                let mut o = dut.estimate_trial(t);
                                // The real test in closed form: a tear-down that empties
                                // the table, a load that passes up to the DUT's forwarding.
                                match t.real {
                                    Some(search::RealTest::Teardown) => {
                                        o.teardown = Some(search::TeardownOutcome {
                                            entries_before: o.validation_received,
                                            entries_after: 0,
                                            delete_ns: 2_000_000,
                                            empty_ns: 1_000_000,
                                        })
                                    }
                                    Some(search::RealTest::Load { pps, duration }) => {
                                        let sent = (pps * duration.as_secs_f64()) as u64;
                                        let got = if pps <= load_limit { sent } else { sent / 2 };
                                        o.load = Some(search::LoadOutcome {
                                            intended_pps: pps,
                                            forward_sent: sent,
                                            forward_received: got,
                                            forward_pps: pps,
                                            reverse_sent: sent,
                                            reverse_received: got,
                                            reverse_pps: pps,
                                            ..Default::default()
                                        })
                                    }
                                    None => {}
                                }
                                o
                            });
                            (u64::from(r.trials), r.trial_seconds)
                        }
                        None => (0, 0.0),
                    }
                }
                Methodology::MtuProbe => match self.search(case, m) {
                    // A path whose threshold is one byte below the top: the longest bisection.
                    Some(mut s) => {
                        let top = case.frame_size.unwrap_or(1518).saturating_sub(1);
                        let dut = search::MtuDut::dropping(top, top);
                        let r = search::drive(s.as_mut(), |t| dut.trial(t));
                        (u64::from(r.trials), r.trial_seconds)
                    }
                    None => (0, 0.0),
                },
                _ => match self.search(case, m) {
                    Some(mut s) => {
                        let mut dut =
                            search::sim::SimDut::noisy(ESTIMATE_CAPACITY, ESTIMATE_NOISE, 7);
                        let r = search::drive(s.as_mut(), |t| dut.trial(t));
                        (u64::from(r.trials), r.trial_seconds)
                    }
                    None => (0, 0.0),
                },
            };
            let reps = u64::from(self.run.repetitions);
            trials += t * reps;
            seconds += (s + t as f64 * settle) * reps as f64;
        }
        (trials, seconds)
    }

    /// Start-up seconds of one case's trials (all repetitions), on top of
    /// [`case_estimate`](Self::case_estimate): [`STARTUP`] per engine and per iperf3 trial
    /// (twice per engine trial for a bidirectional case through an emulated port).
    pub fn case_startup(&self, case: &Case) -> f64 {
        let (trials, _) = self.case_estimate(case);
        let iperf3 = if case.methodologies.contains(&Methodology::Iperf3) {
            u64::from(self.run.repetitions)
        } else {
            0
        };
        // Both ways through an emulated port, each trial is preceded by one of learning
        // frames (crate::testbed): another engine start.
        let learning = case.bidirectional
            && self
                .ports
                .iter()
                .take(2)
                .any(|p| p.pppoe.is_some() || p.dslite.is_some() || p.ipoe.is_some());
        // `engine_trial` counts the default drain; `run.drain` moves it.
        let drain = self.run.stream.drain.as_secs_f64() - DEFAULT_DRAIN.as_secs_f64();
        let per_trial = STARTUP.engine_trial * if learning { 2.0 } else { 1.0 } + drain;
        // Connection trials have their own, larger start-up (STARTUP.conn_trial).
        let conn = if case.methodologies.iter().any(|m| m.is_connection()) {
            let mut c = case.clone();
            c.methodologies.retain(|m| m.is_connection());
            self.case_estimate(&c).0
        } else {
            0
        };
        iperf3 as f64 * STARTUP.iperf3_trial
            + conn as f64 * STARTUP.conn_trial
            + trials.saturating_sub(iperf3 + conn) as f64 * per_trial
    }

    /// Predicted run time: every search driven against a simulated DUT forwarding
    /// [`ESTIMATE_CAPACITY`] ± [`ESTIMATE_NOISE`], plus settle times. Real DUTs differ; the order of
    /// magnitude holds.
    pub fn estimate(&self) -> Result<Estimate, PlanErrors> {
        Ok(self.estimate_cases(&self.cases()?))
    }

    /// [`Plan::estimate`] of the plan's already expanded `cases`.
    pub fn estimate_cases(&self, cases: &[Case]) -> Estimate {
        let mut trials = 0u64;
        let mut seconds = 0.0;
        for case in cases {
            let (t, s) = self.case_estimate(case);
            trials += t;
            seconds += s;
        }
        let mut switches = 0;
        let mut last: Option<&str> = None;
        for c in cases {
            if last != Some(c.profile.as_str()) {
                switches += 1;
                last = Some(&c.profile);
            }
        }
        seconds += switches as f64 * self.run.profile_settle.as_secs_f64();
        let mut startup: f64 = cases.iter().map(|c| self.case_startup(c)).sum();
        startup += match &self.topology {
            Topology::Lab { .. } => STARTUP.lab,
            Topology::Interfaces => 0.0,
        };
        if self.dut.kind == DutKind::Lab {
            startup += switches as f64 * STARTUP.profile;
        }
        startup +=
            self.ports.iter().filter(|p| p.pppoe.is_some()).count() as f64 * STARTUP.pppoe_session;
        Estimate {
            cases: cases.len(),
            trials,
            profile_switches: switches,
            seconds,
            startup,
        }
    }
}

/// Values of one optional dimension of a case.
type Dim = Vec<Option<u32>>;

/// The `encap` values of a block for one IP version and protocol: `[None]` when the block has
/// no `encap` key or for TCP (iperf3 runs over plain interfaces).
fn encap_values(
    encap: &[wire::encap::EncapSpec],
    ip: IpVersion,
    protocol: Protocol,
) -> Vec<Option<wire::encap::EncapSpec>> {
    if encap.is_empty() || protocol == Protocol::Tcp {
        return vec![None];
    }
    encap
        .iter()
        .map(|e| {
            let mut e = *e;
            e.ip = ip;
            Some(e)
        })
        .collect()
}

fn var_product(vars: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (name, values) in vars {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push((name.clone(), v.clone()));
                    p
                })
            })
            .collect();
    }
    out
}

/// The (offload, fastpath) pairs of a block; `None` where the block does not have the key.
fn switch_product(m: &Matrix) -> Vec<(Option<bool>, Option<bool>)> {
    let values = |v: &[bool]| -> Vec<Option<bool>> {
        if v.is_empty() {
            vec![None]
        } else {
            v.iter().copied().map(Some).collect()
        }
    };
    let mut out = Vec::new();
    for o in values(&m.offload) {
        for f in values(&m.fastpath) {
            out.push((o, f));
        }
    }
    out
}

/// The (flows, tos) pairs of a block for `protocol`; `None` where the block does not have the
/// key, and for TCP (iperf3 sends its own streams).
fn stream_product(m: &Matrix, protocol: Protocol) -> Vec<(Option<u16>, Option<u8>)> {
    fn values<T: Copy>(v: &[T], protocol: Protocol) -> Vec<Option<T>> {
        if v.is_empty() || protocol == Protocol::Tcp {
            vec![None]
        } else {
            v.iter().copied().map(Some).collect()
        }
    }
    let mut out = Vec::new();
    for f in values(&m.flows, protocol) {
        for t in values(&m.tos, protocol) {
            out.push((f, t));
        }
    }
    out
}

/// `profile/proto+ip/size-or-sessions[/mssN][/encap=…][/bidir][/offload=on][/fastpath=on]
/// [/flows=N][/tos=N][/var=value…]`: readable and independent of the case's position in the
/// plan.
fn case_id(c: &Case) -> String {
    let mut id = format!("{}/{}{}", c.profile, c.protocol, ip_number(c.ip));
    if let Some(f) = c.frame_size {
        id.push_str(&format!("/{f}B"));
    }
    if c.imix {
        id.push_str("/imix");
    }
    if let Some(s) = c.sessions {
        id.push_str(&format!("/s{s}"));
    }
    if let Some(m) = c.mss {
        id.push_str(&format!("/mss{m}"));
    }
    if let Some(e) = &c.encap {
        id.push_str(&format!("/encap={}", parse::spell_encap(e)));
    }
    if c.bidirectional {
        id.push_str("/bidir");
    }
    if let Some(o) = c.offload {
        id.push_str(&format!("/offload={}", on_off(o)));
    }
    if let Some(f) = c.fastpath {
        id.push_str(&format!("/fastpath={}", on_off(f)));
    }
    if let Some(n) = c.flows {
        id.push_str(&format!("/flows={n}"));
    }
    if let Some(t) = c.tos {
        id.push_str(&format!("/tos={t}"));
    }
    for (k, v) in &c.vars {
        id.push_str(&format!("/{k}={v}"));
    }
    id
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_encap;
#[cfg(test)]
mod tests_ipoe;
#[cfg(test)]
mod tests_mtu;
#[cfg(test)]
mod tests_nat;
#[cfg(test)]
mod tests_ports;
#[cfg(test)]
mod tests_stream;
