//! Checks across sections (the matrix against the ports, the lab and the encapsulations),
//! names and encapsulation spellings.

use super::*;

/// Whether traffic ends at the DUT itself (one tester port): the lab's `endpoint` topology, or
/// real interfaces with a single port.
pub(in crate::plan) fn is_endpoint(topo: &Topology, ports: &[Port]) -> bool {
    match topo {
        Topology::Lab { topology, .. } => topology == "endpoint",
        Topology::Interfaces => ports.len() == 1,
    }
}

/// The IPv4 packet inside a reference frame of `size` bytes (with FCS).
/// The longest duration a plan may give (a day), in either form.
pub(super) const MAX_DURATION_SECS: u64 = 86_400;

/// What kind of name a plan string is handed on as.
#[derive(Debug, Clone, Copy)]
pub(in crate::plan) enum NameKind {
    /// A network namespace (`ip netns exec NAME`).
    Netns,
    /// A network interface.
    Interface,
    /// An ssh destination, `[user@]host`.
    SshHost,
}

/// Whether `s` is a safe `what`: never an option (no leading `-`), never shell syntax or
/// whitespace, within the kernel's length limits. A plan's `dut.ssh = "-oProxyCommand=…"`
/// would otherwise run a command as root during preflight.
pub(in crate::plan) fn check_name(s: &str, what: NameKind) -> Result<(), String> {
    let word = |part: &str, extra: &str| {
        !part.is_empty()
            && !part.starts_with('-')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c) || extra.contains(c))
    };
    match what {
        NameKind::Netns => {
            if s.len() > 4096 || s == "." || s == ".." || !word(s, "/") {
                return Err(format!("`{s}` is not a namespace name or path: use letters, digits, `.`, `_`, `-` and `/`, not starting with `-`"));
            }
        }
        NameKind::Interface => {
            if s.len() > 15 || s == "." || s == ".." || !word(s, "@:") {
                return Err(format!("`{s}` is not an interface name: 1 to 15 letters, digits, `.`, `_`, `-`, `@` or `:`, not starting with `-`"));
            }
        }
        NameKind::SshHost => {
            let (user, host) = match s.rsplit_once('@') {
                Some((u, h)) => (Some(u), h),
                None => (None, s),
            };
            let host_ok =
                word(host, "") || (host.contains(':') && word(host.trim_matches(['[', ']']), ":%"));
            if !host_ok || user.is_some_and(|u| !word(u, "")) {
                return Err(format!("`{s}` is not an ssh destination: write `host` or `user@host` (letters, digits, `.`, `_`, `-`; an IPv6 address is fine), not an ssh option; give the port with `ssh-port` and options in ~/.ssh/config"));
            }
        }
    }
    Ok(())
}

/// The IPv4 packet inside a reference frame of `size` bytes (with FCS): what an MTU or MRU
/// must carry.
pub(super) fn ipv4_packet(size: usize) -> usize {
    size.saturating_sub(18)
}

impl Walker<'_> {
    /// What a `[[matrix]]` block asks of the ports that they cannot give: RFC 2544 trials
    /// without a receiving port, TCP or IPv6 through an emulated PPPoE/DS-Lite port, frames
    /// too big for a PPPoE session. The error points at the matrix key that asks.
    /// On the lab DUT, `fastpath = ["on"]` must suit every profile of the block (the lab
    /// refuses a fast path that would let packets skip rules they must walk) and `offload`
    /// needs a DUT: refused here, at the key, instead of when the run reaches the case.
    pub(super) fn matrix_switches_fit_lab(
        &mut self,
        v: &Value<'_>,
        path: &str,
        m: &Matrix,
        topo: &Topology,
        profiles: &[Profile],
    ) {
        let (Some(t), Topology::Lab { topology, .. }) = (v.get_ref().as_table(), topo) else {
            return;
        };
        let Ok(lab_topology) = topology.parse::<lab_model::Topology>() else {
            return;
        };
        if let (true, Some(x)) = (
            !m.offload.is_empty() && !lab_topology.has(lab_model::Node::Dut),
            get(t, "offload"),
        ) {
            self.err(
                x.span(),
                &join(path, "offload"),
                format!("the `{topology}` lab has no DUT whose offloads could be switched"),
            );
        }
        let Some(x) = get(t, "fastpath").filter(|_| m.fastpath.contains(&true)) else {
            return;
        };
        for name in &m.profile {
            let lab_name = profiles
                .iter()
                .find(|p| &p.name == name)
                .map(|p| p.lab.clone().unwrap_or_else(|| p.name.clone()));
            let Some(lp) = lab_name.and_then(|n| lab_model::Profile::parse(&n).ok()) else {
                continue; // a bad lab profile is reported where it is written
            };
            if let Err(e) = lab_model::fastpath::program_for(&lp, lab_topology) {
                self.err(
                    x.span(),
                    &join(path, "fastpath"),
                    format!("profile `{name}`: {e}"),
                );
            }
        }
    }

    pub(super) fn matrix_fits_ports(
        &mut self,
        v: &Value<'_>,
        path: &str,
        m: &Matrix,
        topo: &Topology,
        ports: &[Port],
    ) {
        let Some(t) = v.get_ref().as_table() else {
            return;
        };
        let span_of = |key: &str| get(t, key).map_or(v.span(), |x| x.span());
        let udp = m.protocol.contains(&Protocol::Udp);
        if is_endpoint(topo, ports) && udp && m.methodologies.iter().any(|x| x.needs_engine()) {
            self.src.error(
                span_of("methodologies"),
                &join(path, "methodologies"),
                "the endpoint topology has one tester port, so nothing receives the RFC 2544 test frames",
                Some("use `iperf3` (its server runs on the DUT), or add a second port".into()),
            );
        }
        for (i, port) in ports.iter().enumerate() {
            let what = match (&port.pppoe, &port.dslite, &port.ipoe, &port.mape) {
                (Some(_), _, _, _) => "PPPoE session",
                (None, Some(_), _, _) => "DS-Lite softwire",
                (None, None, Some(_), _) => "IPoE link",
                (None, None, None, Some(_)) => "MAP-E tunnel",
                (None, None, None, None) => continue,
            };
            // An access concentrator, AFTR or IPoE port with `internet` hands its traffic to a
            // TUN device, where a kernel (iperf3's server) sits behind it: TCP crosses, from
            // the first port.
            let ac = port
                .pppoe
                .as_ref()
                .is_some_and(|p| p.role == PppoeRole::Server);
            let aftr = port
                .dslite
                .as_ref()
                .is_some_and(|d| d.role == DsliteRole::Aftr);
            let tun = port.internet().is_some();
            if m.protocol.contains(&Protocol::Tcp) && !(tun && i == 1) {
                let hint = if tun {
                    "the iperf3 client runs at the first port: make this port the second"
                        .to_string()
                } else if ac || aftr || port.ipoe.is_some() || port.mape.is_some() {
                    let table = match (ac, aftr, port.mape.is_some()) {
                        (true, _, _) => "pppoe",
                        (_, true, _) => "dslite",
                        (_, _, true) => "mape",
                        _ => "ipoe",
                    };
                    format!("add `internet = \"203.0.113.1\"` under [ports.{}.{table}]: its traffic then reaches a kernel through a TUN device, where iperf3's server runs", port.name)
                } else {
                    "run UDP through it, TCP on plain ports".to_string()
                };
                self.err(
                    span_of("protocol"),
                    &join(path, "protocol"),
                    format!(
                        "TCP cannot cross port `{}`: its {what} lives in wirerate, not in the kernel, so iperf3 cannot use it; {hint}",
                        port.name
                    ),
                );
            }
            if m.ip.contains(&IpVersion::V6) {
                let why = if port.ipoe.is_some() {
                    "routes IPv4 only (IPv6 is provisioned on it, not routed)"
                } else {
                    "carries IPv4 only (no IPv6 prefix is delegated)"
                };
                self.err(
                    span_of("ip"),
                    &join(path, "ip"),
                    format!(
                        "IPv6 test frames cannot cross port `{}`: the emulated {what} {why}",
                        port.name
                    ),
                );
            }
            let probe_only = m.methodologies.iter().all(|x| *x == Methodology::MtuProbe);
            if let Some(mp) = &port.mape {
                if udp && (m.encap.is_empty() || m.encap.iter().any(|e| !e.mape)) {
                    self.src.error(
                        span_of("encap"),
                        &join(path, "encap"),
                        format!("port `{}` plays a MAP-E BR, so UDP frames cross it inside IPv6", port.name),
                        Some("write `encap = [\"mape\"]`: line rates and reports then count the tunnelled frame (+40 bytes)".into()),
                    );
                }
                // RFC 7597 §8.3.1: above the link's MTU the CE fragments the outer IPv6
                // packet, as a B4 does. (`mtu-probe` alone goes there on purpose.)
                if let Some(bad) = m
                    .frame_size
                    .iter()
                    .map(|f| f.largest(wire::encap::IpVersion::V4))
                    .find(|&f| ipv4_packet(f) + 40 > mp.mtu && !probe_only)
                {
                    self.err(
                        span_of("frame-size"),
                        &join(path, "frame-size"),
                        crate::oversize::dslite_refusal(bad, mp.mtu, &port.name),
                    );
                }
            }
            if let Some(ds) = &port.dslite {
                if udp && (m.encap.is_empty() || m.encap.iter().any(|e| !e.dslite)) {
                    self.src.error(
                        span_of("encap"),
                        &join(path, "encap"),
                        format!("port `{}` plays a DS-Lite softwire, so UDP frames cross it inside IPv6", port.name),
                        Some("write `encap = [\"dslite\"]`: line rates and reports then count the tunnelled frame (+40 bytes)".into()),
                    );
                }
                // RFC 6333 §5.3: above the link's MTU the outer IPv6 packet is fragmented.
                // (`mtu-probe` alone goes there on purpose: it finds where that starts.)
                let mtu = ds.mtu;
                if let Some(bad) = m
                    .frame_size
                    .iter()
                    // The IMIX's largest frame is 1518 B.
                    .map(|f| f.largest(wire::encap::IpVersion::V4))
                    .find(|&f| ipv4_packet(f) + 40 > mtu && !probe_only)
                {
                    self.err(
                        span_of("frame-size"),
                        &join(path, "frame-size"),
                        crate::oversize::dslite_refusal(bad, mtu, &port.name),
                    );
                }
            }
            if let Some(pp) = &port.pppoe {
                // The case's encapsulation is what line rates and reports count on the far
                // link; it must say PPPoE when a port plays a session.
                if udp && (m.encap.is_empty() || m.encap.iter().any(|e| !e.pppoe)) {
                    self.src.error(
                        span_of("encap"),
                        &join(path, "encap"),
                        format!("port `{}` plays a PPPoE session, so UDP frames cross it in PPPoE", port.name),
                        Some("write `encap = [\"pppoe\"]`: line rates and reports then count the PPPoE frame (+8 bytes)".into()),
                    );
                }
                let mru = usize::from(pp.mru);
                if let Some(bad) = m
                    .frame_size
                    .iter()
                    // The IMIX's largest frame is 1518 B.
                    .map(|f| f.largest(wire::encap::IpVersion::V4))
                    .find(|&f| ipv4_packet(f) > mru && !probe_only)
                {
                    self.err(
                        span_of("frame-size"),
                        &join(path, "frame-size"),
                        crate::oversize::pppoe_refusal(bad, mru, &port.name),
                    );
                }
            }
        }
    }

    /// Addresses the matrix needs on real ports: a source and next hop on the sending port, a
    /// destination on the receiving one (unless a PPPoE session gives them), and separate
    /// namespaces for TCP (one kernel would deliver it locally, past the DUT).
    pub(super) fn ports_fit_matrix(
        &mut self,
        root: &DeTable<'_>,
        root_span: &Range<usize>,
        ports: &[Port],
        matrices: &[Matrix],
    ) {
        let ports_span = get(root, "ports").map_or(root_span.clone(), |p| p.span());
        let span = |name: &str| {
            get(root, "ports")
                .and_then(|p| p.get_ref().as_table())
                .and_then(|t| get(t, name))
                .map_or(ports_span.clone(), |x| x.span())
        };
        if ports.is_empty() {
            return;
        }
        if ports.len() > 2 {
            self.src.error(
                ports_span.clone(),
                "ports",
                format!("{} ports: a plan has two (traffic flows from the first to the second) or one (the DUT is the endpoint)", ports.len()),
                None,
            );
            return;
        }
        if let (Some(a), true) = (ports.first().filter(|a| a.ipoe.is_some()), ports.len() == 2) {
            self.err(
                span(&a.name),
                &join(&join("ports", &a.name), "ipoe"),
                "an IPoE port plays the ISP side, where the test frames arrive: make it the second port",
            );
        }
        let any = |f: &dyn Fn(&Matrix) -> bool| matrices.iter().any(f);
        let has =
            |m: &Matrix, p: Protocol, ip: IpVersion| m.protocol.contains(&p) && m.ip.contains(&ip);
        let engine = |m: &Matrix| m.methodologies.iter().any(|x| x.needs_engine());
        let a = &ports[0];
        let b = ports.get(1);
        for ip in [IpVersion::V4, IpVersion::V6] {
            let (n, addr, gw) = match ip {
                IpVersion::V4 => (4, "ipv4", "gateway-v4"),
                IpVersion::V6 => (6, "ipv6", "gateway-v6"),
            };
            let has_addr = |p: &Port| match ip {
                IpVersion::V4 => p.ipv4.is_some() || p.pppoe.is_some() || p.ipoe.is_some(),
                IpVersion::V6 => p.ipv6.is_some(),
            };
            let has_gw = |p: &Port| match ip {
                IpVersion::V4 => p.gateway_v4.is_some() || p.pppoe.is_some() || p.ipoe.is_some(),
                IpVersion::V6 => p.gateway_v6.is_some(),
            };
            let udp = any(&|m| has(m, Protocol::Udp, ip) && engine(m));
            let tcp = any(&|m| {
                has(m, Protocol::Tcp, ip)
                    || (has(m, Protocol::Udp, ip) && m.methodologies.contains(&Methodology::Iperf3))
            });
            let mut need = |p: &Port, key: &str, why: String| {
                self.err(
                    span(&p.name),
                    &join(&join("ports", &p.name), key),
                    format!("missing key: {why}"),
                );
            };
            match b {
                Some(b) => {
                    // A B4 sends from 192.0.0.2 straight to the AFTR (RFC 6333 §5.7).
                    let b4 = a.dslite.is_some() && ip == IpVersion::V4;
                    if udp && !has_addr(a) && !b4 {
                        need(a, addr, format!("IPv{n} test frames are sent from this port (the first one), with this source address"));
                    }
                    if udp && !has_gw(a) && !b4 {
                        need(a, gw, format!("IPv{n} test frames go to this next hop (the DUT's address on this link; its MAC is resolved)"));
                    }
                    let bidir = any(&|m| has(m, Protocol::Udp, ip) && engine(m) && m.bidirectional);
                    // An AFTR or BR sends the reverse stream into the tunnel: no next hop.
                    if bidir && !has_gw(b) && b.dslite.is_none() && b.mape.is_none() {
                        need(b, gw, format!("bidirectional IPv{n} trials also send from this port, to this next hop"));
                    }
                    if (udp || tcp) && !has_addr(b) {
                        need(
                            b,
                            addr,
                            format!(
                                "IPv{n} test traffic is addressed to this port (the second one)"
                            ),
                        );
                    }
                }
                None => {
                    if tcp && !has_gw(a) {
                        need(a, gw, format!("with one port the DUT is the endpoint: iperf3 over IPv{n} connects to this address of the DUT"));
                    }
                }
            }
        }
        if let Some(b) = b {
            let tcp = any(&|m| m.methodologies.contains(&Methodology::Iperf3));
            // An ISP port with `internet` runs iperf3's server in the namespace the run
            // creates for its TUN, never in port b's.
            let internet = b.internet().is_some();
            if tcp && a.namespace == b.namespace && !internet {
                self.src.error(
                    span(&b.name),
                    &join(&join("ports", &b.name), "namespace"),
                    "iperf3 needs the two ports in different network namespaces: in one kernel, traffic between two local addresses never leaves the host, so it would not cross the DUT",
                    Some("move one interface into a namespace (`ip link set IF netns NS`) and name it here".into()),
                );
            }
        }
    }
}

impl Walker<'_> {
    /// Whether the test bed can carry a block's `encap` and `bidirectional` asks, before any
    /// traffic: the lab's DUT is a kernel namespace on plain veths that forwards plain IPv4/IPv6
    /// only; PPPoE and DS-Lite need a port that plays the session or softwire (a WAN emulation
    /// port); VLAN, QinQ and MPLS need a real DUT configured for them. A port that plays a
    /// PPPoE session or softwire puts every test frame into it, so `encap` must say so.
    pub(super) fn matrix_encap_fits(
        &mut self,
        v: &Value<'_>,
        path: &str,
        m: &Matrix,
        topo: &Topology,
        ports: &[Port],
    ) {
        let Some(t) = v.get_ref().as_table() else {
            return;
        };
        let span_of = |key: &str| get(t, key).map_or(v.span(), |x| x.span());
        let key = join(path, "encap");
        let pppoe_port = ports.iter().find(|p| p.pppoe.is_some());
        let dslite_port = ports.iter().find(|p| p.dslite.is_some());
        let mape_port = ports.iter().find(|p| p.mape.is_some());
        // The lab's veths keep the kernel's default MTU; a larger frame would be refused by the
        // tester's own port. (Through PPPoE, DS-Lite or MAP-E the MRU/MTU checks above apply.)
        if matches!(topo, Topology::Lab { .. })
            && pppoe_port.is_none()
            && dslite_port.is_none()
            && mape_port.is_none()
        {
            let largest = lab_model::LINK_MTU + 18;
            if let Some(bad) = m
                .frame_size
                .iter()
                .filter_map(|f| f.fixed())
                .find(|&f| f > largest as usize)
            {
                self.err(
                    span_of("frame-size"),
                    &join(path, "frame-size"),
                    format!("{bad} B does not fit the lab's links: their MTU {} carries frames of at most {largest} B (with FCS); the lab does not do jumbo frames", lab_model::LINK_MTU),
                );
            }
        }
        for e in &m.encap {
            let spelled = spell_encap(e);
            let tagged = e.tagging != wire::encap::Tagging::Untagged || e.mpls_labels > 0;
            if e.pppoe && pppoe_port.is_none() {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}` needs a port that plays the PPPoE session (a WAN emulation port: [ports.NAME.pppoe]); no port here does"),
                );
            }
            if e.dslite && dslite_port.is_none() {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}` needs a port that plays the DS-Lite softwire (a WAN emulation port: [ports.NAME.dslite]); no port here does"),
                );
            }
            if e.mape && mape_port.is_none() {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}` needs a port that plays the MAP-E Border Relay (a WAN emulation port: [ports.NAME.mape]); no port here does"),
                );
            }
            if tagged && matches!(topo, Topology::Lab { .. }) {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}` cannot run on the lab: its DUT is a kernel namespace on plain veths that forwards plain IPv4/IPv6 only; VLAN, QinQ and MPLS need a real DUT configured for them (topology.kind = \"interfaces\")"),
                );
            }
            if let Some(p) = pppoe_port.filter(|_| !e.pppoe) {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}`: port `{}` plays a PPPoE session, so every test frame crosses it in PPPoE; write `pppoe` (or drop `encap`)", p.name),
                );
            }
            if let Some(p) = dslite_port.filter(|_| !e.dslite) {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}`: port `{}` plays a DS-Lite softwire, so every test frame crosses it in IPv4-in-IPv6; write `dslite` (or drop `encap`)", p.name),
                );
            }
            if let Some(p) = mape_port.filter(|_| !e.mape) {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}`: port `{}` plays a MAP-E BR, so every test frame crosses it in IPv4-in-IPv6; write `mape` (or drop `encap`)", p.name),
                );
            }
        }
        if m.bidirectional {
            let key = join(path, "bidirectional");
            // PPPoE and DS-Lite are the emulated port's: port B sends the reverse stream into
            // its own session or softwire (crate::testbed). Tags and labels are not: the
            // reverse stream would have to resolve and send inside them.
            let tagged = |e: &&EncapSpec| {
                let mut rest = **e;
                rest.pppoe = false;
                rest.dslite = false;
                rest.mape = false;
                !rest.is_plain()
            };
            if let Some(e) = m.encap.iter().find(tagged) {
                self.err(
                    span_of("bidirectional"),
                    &key,
                    format!("bidirectional trials send the reverse stream from the second port without tags or labels; with encap `{}` it would have to resolve and send inside that encapsulation, which the engine does not do yet", spell_encap(e)),
                );
            }
            // Port A riding a session or softwire of its own (a PPPoE subscriber, a DS-Lite
            // B4) towards a DUT that ends it, and a plain port B: the reverse stream would
            // leave port B inside a session or softwire port B does not have (built with a
            // placeholder session id and MACs, never resolved), and every frame of it would
            // count as the DUT's loss. Port B must play the other end for both ways.
            let rides = |p: &&Port| {
                p.pppoe
                    .as_ref()
                    .map(|_| "a PPPoE session")
                    .or(p.dslite.as_ref().map(|_| "a DS-Lite softwire"))
            };
            let b_plays = ports.get(1).is_some_and(|p| {
                p.pppoe.is_some() || p.dslite.is_some() || p.mape.is_some() || p.ipoe.is_some()
            });
            if let (Some((a, what)), Some(b), false) = (
                ports.first().and_then(|a| rides(&a).map(|w| (a, w))),
                ports.get(1),
                b_plays,
            ) {
                self.err(
                    span_of("bidirectional"),
                    &key,
                    format!("port `{}` rides {what} of its own, but port `{}` plays no end of it: the reverse stream would have to leave a plain port inside {what} it does not have; run one way (drop `bidirectional`), or make port `{}` the other end (our access concentrator or AFTR)", a.name, b.name, b.name),
                );
            }
        }
    }
}
