//! The plan's sections in the order a reader meets them: what it is for, the ports, the DUT
//! and its profiles, the run's settings, the matrix.

use std::net::Ipv4Addr;

use super::{
    line, NextHop, PortFacts, Request, Setup, Source, Speed, RFC2544_SIZES, RFC2544_SIZES_V6,
};

/// The plan as it is written.
pub(super) struct Writer<'r> {
    r: &'r Request,
    speeds: Vec<Speed>,
    o: String,
    /// IPv4 test traffic has what it needs (addresses and a next hop).
    v4: bool,
    /// IPv6 test traffic has what it needs.
    v6: bool,
    /// Why the plan has no TCP block, when it has none.
    no_tcp: Option<&'static str>,
    /// The largest plain frame every port's MTU carries, bytes with FCS.
    max_frame: u32,
    /// Documentation /24s not on the LAN port, for the ISP side's addresses.
    isp_nets: Vec<[u8; 3]>,
}

/// The documentation ranges (RFC 5737) the ISP side takes its addresses from.
const DOC_NETS: [[u8; 3]; 3] = [[198, 51, 100], [203, 0, 113], [192, 0, 2]];

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

fn list(v: &[u32]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn source_words(s: Source) -> &'static str {
    match s {
        Source::DefaultRoute => "from the default route",
        Source::Route => "from a route through this interface",
        Source::Neighbour => "the one neighbour this interface knows",
        Source::SubnetGuess => {
            "CHECK: a guess (the subnet's first address; no route or neighbour named one)"
        }
    }
}

fn addr_of(a: [u8; 3], host: u8) -> Ipv4Addr {
    Ipv4Addr::new(a[0], a[1], a[2], host)
}

impl<'r> Writer<'r> {
    pub(super) fn new(r: &'r Request, speeds: Vec<Speed>) -> Result<Writer<'r>, String> {
        let p = &r.ports;
        let sends = |i: usize, v6: bool| {
            let f = &p[i];
            if v6 {
                f.ipv6.is_some() && f.gateway_v6.is_some()
            } else {
                f.ipv4.is_some() && f.gateway_v4.is_some()
            }
        };
        let (v4, v6) = match r.setup {
            Setup::Router => (
                sends(0, false) && p[1].ipv4.is_some(),
                sends(0, true) && p[1].ipv6.is_some(),
            ),
            // The emulated ISP side carries IPv4 only (no prefix is delegated to the LAN).
            Setup::GatewayPppoe | Setup::GatewayDslite => (sends(0, false), false),
            Setup::Endpoint => (sends(0, false), sends(0, true)),
        };
        if !v4 && !v6 {
            let what = match r.setup {
                Setup::Router => format!(
                    "port a ({}) needs an address and a next hop, and port b ({}) an address, of one IP version",
                    p[0].place(),
                    p[1].place()
                ),
                Setup::GatewayPppoe | Setup::GatewayDslite => format!(
                    "port lan ({}) needs an IPv4 address on the gateway's LAN and the gateway's LAN address as its next hop",
                    p[0].place()
                ),
                Setup::Endpoint => format!(
                    "port ({}) needs an address and the device's address on that link",
                    p[0].place()
                ),
            };
            let example = match &p[0].namespace {
                Some(ns) => format!("ip -n {ns} addr add 192.0.2.2/24 dev {}", p[0].interface),
                None => format!("ip addr add 192.0.2.2/24 dev {}", p[0].interface),
            };
            return Err(format!(
                "{what}; the host shows none. Give the interface the address the tester should use ({example}; a route via the DUT names the next hop), then run plan new again"
            ));
        }
        let no_tcp = match r.setup {
            Setup::Router if p[0].namespace == p[1].namespace => Some(
                "no TCP block: iperf3 needs the two ports in different network namespaces (in one kernel, traffic between two local addresses never leaves the host); move one interface into a namespace and write the plan again",
            ),
            Setup::GatewayDslite => Some(
                "no TCP block: the softwire lives in wirerate, not in a kernel iperf3 could send through",
            ),
            _ => None,
        };
        // The frame every port carries: its MTU + 14 B header + 4 B FCS (the WAN of a gateway
        // carries the session, whose own limit the sizes below respect).
        let plain_ports = match r.setup {
            Setup::Router => 2,
            _ => 1,
        };
        let max_frame = p
            .iter()
            .take(plain_ports)
            .filter_map(|f| f.mtu)
            .min()
            .map_or(1518, |m| m.saturating_add(18));
        let lan_net = p[0].ipv4.map(|(a, _)| {
            let o = a.octets();
            [o[0], o[1], o[2]]
        });
        let isp_nets = DOC_NETS
            .iter()
            .copied()
            .filter(|n| Some(*n) != lan_net)
            .collect();
        Ok(Writer {
            r,
            speeds,
            o: String::new(),
            v4,
            v6,
            no_tcp,
            max_frame,
            isp_nets,
        })
    }

    pub(super) fn finish(self) -> String {
        self.o
    }

    fn l(&mut self, text: impl AsRef<str>) {
        line(&mut self.o, text);
    }

    fn places(&self) -> Vec<String> {
        self.r
            .setup
            .port_names()
            .iter()
            .zip(&self.r.ports)
            .map(|(n, p)| format!("{n} ({})", p.place()))
            .collect()
    }

    pub(super) fn header(&mut self) {
        let r = self.r;
        let places = self.places();
        let (what, picture): (&str, Vec<String>) = match r.setup {
            Setup::Router => (
                "a router or firewall between two tester ports",
                vec![
                    format!("  tester port {} ──── DUT ──── tester port {}", places[0], places[1]),
                    "  (test frames start at the first port and are counted at the second)".into(),
                ],
            ),
            Setup::GatewayPppoe => (
                "a home gateway whose uplink is PPPoE, with wirerate as its ISP",
                vec![
                    format!("  tester port {} ──── gateway LAN   gateway WAN ──── tester port {}", places[0], places[1]),
                    "  (test frames start on the LAN; on the WAN wirerate plays the PPPoE access concentrator)".into(),
                ],
            ),
            Setup::GatewayDslite => (
                "a home gateway whose uplink is DS-Lite (RFC 6333), with wirerate as its ISP",
                vec![
                    format!("  tester port {} ──── gateway LAN   gateway WAN ──── tester port {}", places[0], places[1]),
                    "  (test frames start on the LAN; on the WAN wirerate plays the AFTR and ends the softwire)".into(),
                ],
            ),
            Setup::Endpoint => (
                "a device as the far end of the traffic (its own TCP stack)",
                vec![
                    format!("  tester port {} ──── the device", places[0]),
                    "  (iperf3's server runs on the device, started over ssh)".into(),
                ],
            ),
        };
        self.l(format!(
            "# {} plan for {what}, written by `wirerate plan new {}`.",
            if r.quick { "A quick" } else { "A" },
            r.setup.name()
        ));
        self.l("#");
        for p in picture {
            self.l(format!("#{p}"));
        }
        self.l("#");
        self.l(
            "# Read from this host: each port's addresses, MTU and link speed, and the next hop on",
        );
        self.l("# each link (the device's address there). Lines marked CHECK are guesses or values the");
        self.l("# device must be configured with; read them before a run. Then:");
        self.l("#   wirerate plan check FILE    (the cases and a time estimate; checks interfaces, ssh, hooks)");
        self.l("#   sudo wirerate run FILE      (every trial recorded, a report in runs/)");
        if r.quick {
            self.l("#");
            self.l("# --quick: one frame size per IP version, short trials, one TCP session and no MTU probe:");
            self.l("# a check that the setup works, in a minute or two. For figures to publish, write the plan");
            self.l("# again without --quick (and raise trial-duration: RFC 2544 asks for 60 s).");
        }
        self.l(format!("name = {}", quote(r.setup.name())));
        let desc = match r.setup {
            Setup::Router => "Forwarding of a router or firewall: UDP NDR/PDR at the RFC 2544 sizes, TCP with 1, 2 and 4 sessions",
            Setup::GatewayPppoe => "A home gateway from LAN to a PPPoE uplink played by wirerate: UDP NDR/PDR one way and both ways, TCP with sessions and an MSS sweep, the largest frame each way",
            Setup::GatewayDslite => "A home gateway from LAN into a DS-Lite softwire to wirerate's AFTR: UDP NDR/PDR one way and both ways, the largest frame each way",
            Setup::Endpoint => "TCP to a device's own stack with 1, 2 and 4 sessions",
        };
        let desc = if r.quick {
            format!("{desc} (--quick: one frame size, one TCP session, short trials)")
        } else {
            desc.to_string()
        };
        self.l(format!("description = {}", quote(&desc)));
        self.l("");
        self.l("[topology]");
        self.l("kind = \"interfaces\"");
    }

    fn next_hop_v4(&mut self, key: &str, h: &NextHop<Ipv4Addr>, what: &str) {
        self.l(format!(
            "{key} = {:<18}# {what}, {}",
            quote(&h.addr.to_string()),
            source_words(h.source)
        ));
    }

    fn port_common(&mut self, i: usize, addresses: bool) {
        let r = self.r;
        let name = r.setup.port_names()[i];
        let p: &PortFacts = &r.ports[i];
        self.l("");
        self.l(format!("[ports.{name}]"));
        self.l(format!("interface = {}", quote(&p.interface)));
        if let Some(ns) = &p.namespace {
            self.l(format!("namespace = {}", quote(ns)));
        }
        if addresses {
            let first = i == 0;
            if self.v4 {
                if let Some((a, _)) = p.ipv4 {
                    let role = if first {
                        "the tester's source address on this link (the interface's own)"
                    } else {
                        "the test frames' destination (the interface's own)"
                    };
                    self.l(format!("ipv4 = {:<24}# {role}", quote(&a.to_string())));
                }
                // The sending port needs its next hop; the receiving one asks it before each
                // trial so the DUT learns the port first (RFC 2544 §11), where it is known.
                match &p.gateway_v4 {
                    Some(h) if first || h.source != Source::SubnetGuess => {
                        let what = if first {
                            "the device's address on this link (its MAC is resolved by ARP)"
                        } else {
                            "the DUT's address on this link, asked before each trial"
                        };
                        self.next_hop_v4("gateway-v4", h, what);
                    }
                    _ => {}
                }
            }
            if self.v6 {
                if let Some((a, _)) = p.ipv6 {
                    self.l(format!("ipv6 = {}", quote(&a.to_string())));
                }
                match &p.gateway_v6 {
                    Some(h) if first || h.source != Source::SubnetGuess => {
                        self.l(format!(
                            "gateway-v6 = {:<18}# {}",
                            quote(&h.addr.to_string()),
                            source_words(h.source)
                        ));
                    }
                    _ => {}
                }
            }
        }
        let s = &self.speeds[i];
        let (value, comment) = (s.value.clone(), s.comment.clone());
        self.l(format!("# speed: {comment}"));
        self.l(format!("speed = {}", quote(&value)));
    }

    pub(super) fn ports(&mut self) {
        match self.r.setup {
            Setup::Router => {
                self.port_common(0, true);
                self.port_common(1, true);
            }
            Setup::Endpoint => self.port_common(0, true),
            Setup::GatewayPppoe => {
                self.port_common(0, true);
                self.port_common(1, false);
                let net = self.isp_nets[0];
                let internet = addr_of(self.isp_nets[1], 1);
                self.l("");
                self.l("[ports.wan.pppoe]");
                self.l("role = \"server\"               # wirerate is the access concentrator (the ISP)");
                self.l("mru = 1454");
                self.l(
                    "auth = [\"pap\"]                 # or [\"chap\"], or both, preferred first",
                );
                self.l("users = [{ user = \"wirerate\", password = \"wirerate\" }]   # CHECK: the login configured on the gateway");
                self.l(format!(
                    "gateway = {:<21}# our IPCP address; the test frames are addressed to it",
                    quote(&addr_of(net, 1).to_string())
                ));
                self.l(format!(
                    "pool = {:<24}# the address IPCP gives the gateway",
                    quote(&addr_of(net, 10).to_string())
                ));
                self.l(
                    "timeout = \"60s\"                 # how long to wait for the gateway to dial",
                );
                self.l("echo-interval = \"10s\"");
                self.l(format!(
                    "internet = {:<20}# \"the Internet\" behind our AC: iperf3's server for the TCP blocks",
                    quote(&internet.to_string())
                ));
            }
            Setup::GatewayDslite => {
                self.port_common(0, true);
                // The destination of the test frames: any address the gateway routes into
                // the tunnel, outside its LAN.
                let dst = addr_of(self.isp_nets[1], 2);
                self.port_common_with(1, &format!(
                    "ipv4 = {:<24}# CHECK: where the test frames go (any address the gateway routes into the tunnel, outside its LAN)",
                    quote(&dst.to_string())
                ));
                self.l("");
                self.l("[ports.wan.dslite]");
                self.l("role = \"aftr\"                 # wirerate is the AFTR (the ISP)");
                self.l("address = \"2001:db8:d::1\"     # CHECK: the AFTR address configured on the gateway");
                self.l("timeout = \"60s\"               # how long both ways wait for the gateway's first tunnelled packet");
                self.l("provision = true              # RA + DHCPv6 for the gateway's WAN: address, a /56, DNS, the AFTR name");
                self.l("aftr-name = \"aftr.example.net\"  # CHECK (optional): the name DHCPv6 option 64 gives the gateway");
            }
        }
    }

    /// A port without addresses of its own but with one extra line (the DS-Lite WAN's
    /// destination address).
    fn port_common_with(&mut self, i: usize, extra: &str) {
        let r = self.r;
        let name = r.setup.port_names()[i];
        let p = &r.ports[i];
        self.l("");
        self.l(format!("[ports.{name}]"));
        self.l(format!("interface = {}", quote(&p.interface)));
        if let Some(ns) = &p.namespace {
            self.l(format!("namespace = {}", quote(ns)));
        }
        self.l(extra);
        let s = &self.speeds[i];
        let (value, comment) = (s.value.clone(), s.comment.clone());
        self.l(format!("# speed: {comment}"));
        self.l(format!("speed = {}", quote(&value)));
    }

    pub(super) fn dut(&mut self) {
        let r = self.r;
        self.l("");
        self.l("[dut]");
        self.l("kind = \"device\"");
        match &r.ssh {
            Some(host) => self.l(format!(
                "ssh = {}{}# hooks run on the device over ssh (BatchMode: with a key, never a password)",
                quote(host),
                " ".repeat(24usize.saturating_sub(host.len() + 2).max(1))
            )),
            None => self.l(
                "# ssh = \"root@192.0.2.1\"      # to run the hooks below on the device (with a key); without it they run on this host",
            ),
        }
        self.l("");
        self.l("# One profile per configuration of the device; the report compares each with the first.");
        self.l("# Hooks are shell command lines, run where [dut] says, with WR_CASE, WR_PROFILE,");
        self.l("# WR_FRAME_SIZE, … in their environment.");
        self.l("[dut.profiles.default]");
        self.l("# setup = [\"nft -f /etc/nftables.conf\"]     # once before the profile's cases (a failure stops the run)");
        self.l("# teardown = [\"nft flush ruleset\"]         # once after them, also on Ctrl-C");
        self.l("# The device's CPU per case: /proc/stat before and after. `proc-stat` and `nft` read one");
        self.l("# snapshot each, so they go in stats-before and stats-after (plan check refuses them elsewhere):");
        self.l("# stats-before = [{ command = \"cat /proc/stat\", parse = \"proc-stat\" }]");
        self.l("# stats-after = [{ command = \"cat /proc/stat\", parse = \"proc-stat\" }, { command = \"nft list counters\", parse = \"nft\" }]");
        self.l("# Samplers run through each case and are stopped after it; `vmstat` and `power` read their");
        self.l("# samples, so they go here (a sampler that ends by itself is a warning in the run and the report):");
        self.l("# samplers = [{ command = \"vmstat 1\", parse = \"vmstat\" }]");
        self.l("# samplers = [{ command = \"while :; do my-meter --watts; sleep 1; done\", parse = \"power\" }]");
        self.l("#");
        self.l("# A second configuration to compare, e.g. with the firewall rules loaded:");
        self.l("# [dut.profiles.firewall]");
        self.l("# setup = [\"nft -f /etc/nftables-firewall.conf\"]");
        self.l("# teardown = [\"nft flush ruleset\"]");
    }

    pub(super) fn run(&mut self) {
        let r = self.r;
        self.l("");
        self.l("[run]");
        if r.quick {
            self.l("repetitions = 1");
            self.l("trial-duration = \"3s\"         # short: a check, not a figure to publish");
            self.l("settle = \"200ms\"");
            self.l("profile-settle = \"0s\"");
        } else {
            self.l("repetitions = 2               # the spread over repetitions is each figure's noise; 3 or more to compare runs");
            self.l("trial-duration = \"10s\"        # the final trials' length; RFC 2544 asks for 60 s to publish");
            self.l("settle = \"500ms\"");
            self.l("profile-settle = \"1s\"         # after a profile's setup hooks, before its first trial");
        }
        if r.setup != Setup::Endpoint {
            self.l("");
            self.l("# NDR (no loss) and PDR (at most 0.5 % loss) in one search per case (RFC 9971), from 100 %");
            self.l("# of line rate down, short trials first; a trial in which the tester fell behind its own");
            self.l("# schedule is measured again and never taken as the device's figure.");
            self.l("[methodology.multi-goal]");
            self.l("goals = [0.0, 0.005]");
            self.l("width = 0.005");
            if r.quick {
                self.l("initial-duration = \"0.5s\"");
            } else {
                self.l("initial-duration = \"1s\"");
            }
        }
        if self.no_tcp.is_none() {
            self.l("");
            self.l("[methodology.iperf3]");
            self.l("omit = \"1s\"                    # slow start, not measured (iperf3 -O)");
            if r.quick {
                self.l("duration = \"2s\"");
            } else {
                self.l("duration = \"10s\"");
            }
        }
        if self.mtu_probe() {
            self.l("");
            self.l("[methodology.mtu-probe]");
            self.l("min-size = 1280");
            self.l("rate = 1000");
            self.l("duration = \"1s\"");
        }
    }

    fn mtu_probe(&self) -> bool {
        !self.r.quick && matches!(self.r.setup, Setup::GatewayPppoe | Setup::GatewayDslite)
    }

    fn sizes(&self, all: &[u32]) -> Vec<u32> {
        let fit: Vec<u32> = all
            .iter()
            .copied()
            .filter(|s| *s <= self.max_frame)
            .collect();
        if self.r.quick {
            fit.into_iter().take(1).collect()
        } else {
            fit
        }
    }

    fn ip_list(&self) -> String {
        match (self.v4, self.v6) {
            (true, true) => "[4, 6]".into(),
            (false, true) => "[6]".into(),
            _ => "[4]".into(),
        }
    }

    fn mtu_words(&self) -> String {
        if self.max_frame < 1518 {
            format!(
                " (up to {} B: the ports' MTU is {} bytes)",
                self.max_frame,
                self.max_frame - 18
            )
        } else {
            String::new()
        }
    }

    pub(super) fn matrix(&mut self) {
        match self.r.setup {
            Setup::Router => self.router_matrix(),
            Setup::GatewayPppoe => self.gateway_matrix("pppoe", 1472, 8),
            Setup::GatewayDslite => self.gateway_matrix("dslite", 1478, 40),
            Setup::Endpoint => {}
        }
        self.tcp_matrix();
    }

    /// A UDP `[[matrix]]` block, right under the comment its caller wrote.
    fn udp_block(&mut self, name: &str, ip: u8, sizes: &[u32], encap: Option<&str>, both: bool) {
        self.l("[[matrix]]");
        self.l(format!("name = {}", quote(name)));
        self.l("protocol = [\"udp\"]");
        self.l(format!("ip = [{ip}]"));
        if let Some(e) = encap {
            self.l(format!("encap = [{}]", quote(e)));
        }
        if both {
            self.l("bidirectional = true");
        }
        self.l(format!("frame-size = {}", list(sizes)));
        self.l("methodologies = [\"multi-goal\"]");
    }

    /// How the frame sizes were chosen, for a block's comment.
    fn sizes_words(&self) -> String {
        if self.r.quick {
            " (--quick: the smallest only)".into()
        } else {
            self.mtu_words()
        }
    }

    fn router_matrix(&mut self) {
        let mtu = self.sizes_words();
        if self.v4 {
            let sizes = self.sizes(&RFC2544_SIZES);
            self.l("");
            self.l(format!(
                "# UDP over IPv4 from port a to port b at the RFC 2544 frame sizes{mtu}."
            ));
            self.udp_block("udp-ipv4", 4, &sizes, None, false);
        }
        if self.v6 {
            let sizes = self.sizes(&RFC2544_SIZES_V6);
            self.l("");
            self.l(format!(
                "# UDP over IPv6; 82 B is the smallest IPv6 frame that carries the test signature{mtu}."
            ));
            self.udp_block("udp-ipv6", 6, &sizes, None, false);
        }
    }

    fn gateway_matrix(&mut self, encap: &str, largest: u32, extra: u32) {
        let mut all: Vec<u32> = RFC2544_SIZES[..RFC2544_SIZES.len() - 1].to_vec();
        all.push(largest.min(self.max_frame));
        let sizes = self.sizes(&all);
        let uplink = if encap == "pppoe" {
            "the PPPoE session (MRU 1454)"
        } else {
            "the softwire (1500-byte IPv6 MTU, less its 40-byte header)"
        };
        self.l("");
        self.l(format!(
            "# UDP from lan through the gateway into {uplink}; loads count the uplink's frame"
        ));
        self.l(format!(
            "# (+{extra} bytes). Sizes stop at {largest} B: a larger frame would be fragmented, which a rate"
        ));
        self.l(format!(
            "# search must not hide; {}.{}",
            if self.mtu_probe() {
                "the MTU probe below finds where it happens"
            } else {
                "the MTU probe of a plan without --quick finds where it happens"
            },
            self.sizes_words()
        ));
        self.udp_block("udp-lan-to-wan", 4, &sizes, Some(encap), false);
        self.l("");
        self.l("# Both directions at once (RFC 2544 §14), as published home-gateway tests do: the ISP side");
        self.l("# sends the reverse stream inside the gateway's session or softwire after a few learning");
        self.l("# frames from lan; the report gives each direction and their sum.");
        self.udp_block("udp-both-ways", 4, &sizes, Some(encap), true);
        if self.mtu_probe() {
            self.l("");
            self.l("# The largest frame that crosses the gateway whole, each way, to the byte (from min-size to");
            self.l("# 1518 B at 1,000 frames/s), and what happens one byte above: dropped or fragmented.");
            self.l("[[matrix]]");
            self.l("name = \"mtu-probe\"");
            self.l("protocol = [\"udp\"]");
            self.l("ip = [4]");
            self.l(format!("encap = [{}]", quote(encap)));
            self.l("bidirectional = true");
            self.l(format!(
                "frame-size = [{}]",
                1518u32.min(self.max_frame.max(1280))
            ));
            self.l("methodologies = [\"mtu-probe\"]");
        }
    }

    fn tcp_matrix(&mut self) {
        if let Some(why) = self.no_tcp {
            self.l("");
            self.l(format!("# {why}."));
            return;
        }
        let sessions = if self.r.quick { "[1]" } else { "[1, 2, 4]" };
        let ip = match self.r.setup {
            Setup::GatewayPppoe => "[4]".to_string(),
            _ => self.ip_list(),
        };
        self.l("");
        match self.r.setup {
            Setup::Router => {
                self.l("# TCP: iperf3 from port a's namespace to port b's across the DUT (each tester namespace");
                self.l("# needs a route to the other port's address via the DUT). On ports without a wire speed");
                self.l("# the kernel moves 64 KB segments and TCP can read far above line rate: such figures are");
                self.l("# labelled \"no wire speed on this port\", never ok.");
            }
            Setup::GatewayPppoe => {
                self.l("# TCP from lan to \"the Internet\" behind our access concentrator, through the gateway's NAT,");
                self.l("# firewall and MSS clamp; the SYN's MSS the ISP side saw is recorded per trial.");
            }
            _ => {
                self.l(
                    "# TCP to the device's own stack: iperf3's server is started on it over ssh.",
                );
            }
        }
        self.l("[[matrix]]");
        self.l("name = \"tcp\"");
        self.l("protocol = [\"tcp\"]");
        self.l(format!("ip = {ip}"));
        self.l(format!("sessions = {sessions}"));
        self.l("methodologies = [\"iperf3\"]");
        if self.r.setup == Setup::GatewayPppoe && !self.r.quick {
            self.l("");
            self.l("# TCP against the MSS: what the gateway costs per packet (a clamping gateway shows 1414 at the");
            self.l("# ISP side for MRU 1454, whatever the client asked).");
            self.l("[[matrix]]");
            self.l("name = \"tcp-mss\"");
            self.l("protocol = [\"tcp\"]");
            self.l("ip = [4]");
            self.l("sessions = [1]");
            self.l("mss = [1414, 1200, 800, 400]");
            self.l("methodologies = [\"iperf3\"]");
        }
    }
}
