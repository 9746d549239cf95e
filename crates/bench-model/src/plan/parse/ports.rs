//! The plan's ports and their emulated ISP side (`[ports.*.pppoe]`, `[ports.*.dslite]`;
//! `[ports.*.ipoe]` is `ipoe.rs`'s), the topology and the DUT with its profiles.

use super::*;

impl Walker<'_> {
    /// `[ports.NAME.pppoe]`.
    pub(super) fn pppoe(&mut self, v: &Value<'_>, path: &str) -> Option<PppoeSettings> {
        let t = self.table(v, path)?;
        self.keys(
            t,
            path,
            &[
                "role",
                "mru",
                "auth",
                "users",
                "user",
                "password",
                "ac-name",
                "service-name",
                "gateway",
                "pool",
                "pool-size",
                "echo-interval",
                "timeout",
                "internet",
                "subscribers",
            ],
        );
        let role = self.required(t, &v.span(), path, "role").and_then(|r| {
            self.choice(
                r,
                &join(path, "role"),
                &[("server", PppoeRole::Server), ("client", PppoeRole::Client)],
            )
        });
        let mut out = PppoeSettings::new(role.unwrap_or(PppoeRole::Server));
        if let Some(x) = get(t, "mru").and_then(|x| self.int(x, &join(path, "mru"), 64, 1500)) {
            out.mru = x as u16;
        }
        if let Some(x) = get(t, "auth").and_then(|x| {
            self.list(x, &join(path, "auth"), |w, i, q| {
                w.choice(i, q, &[("pap", PppAuth::Pap), ("chap", PppAuth::Chap)])
            })
        }) {
            out.auth = x;
        }
        // `users = [{ user = "…", password = "…" }, …]`, or one `user` + `password`.
        if let Some(uv) = get(t, "users") {
            let q = join(path, "users");
            if let Some(list) = self.list(uv, &q, |w, i, p| {
                let ut = w.table(i, p)?;
                w.keys(ut, p, &["user", "password"]);
                let user = w
                    .required(ut, &i.span(), p, "user")
                    .and_then(|x| w.nonempty(x, &join(p, "user")))?;
                let pass = w
                    .required(ut, &i.span(), p, "password")
                    .and_then(|x| w.string(x, &join(p, "password")))?;
                Some((user, pass))
            }) {
                out.users = list;
            }
        }
        let user = get(t, "user").and_then(|x| self.nonempty(x, &join(path, "user")));
        let pass = get(t, "password").and_then(|x| self.string(x, &join(path, "password")));
        match (user, pass) {
            (Some(u), Some(p)) => out.users.push((u, p)),
            (None, None) => {}
            _ => self.err(
                v.span(),
                &join(path, "password"),
                "give `user` and `password` together",
            ),
        }
        if let Some(x) = get(t, "subscribers") {
            let q = join(path, "subscribers");
            if role == Some(PppoeRole::Client) {
                self.err(
                    x.span(),
                    &q,
                    "a subscriber table is the access concentrator's (role = \"server\"); a client logs in with `user` and `password`",
                );
            } else if let Some(f) = self.nonempty(x, &q) {
                // Relative to the plan's directory, like a user would read it.
                let dir = std::path::Path::new(&self.src.file)
                    .parent()
                    .unwrap_or(std::path::Path::new(""));
                out.subscribers = Some(dir.join(f));
            }
        }
        if out.users.is_empty() && out.subscribers.is_none() {
            self.err(
                v.span(),
                &join(path, "users"),
                "missing key: PPPoE needs credentials (`users = [{ user = \"…\", password = \"…\" }]`, or `user` and `password`, or on the server `subscribers = \"FILE\"`)",
            );
        }
        if role == Some(PppoeRole::Client) && out.users.len() > 1 {
            self.err(
                v.span(),
                &join(path, "users"),
                "a PPPoE client logs in with one credential",
            );
        }
        if let Some(x) = get(t, "ac-name").and_then(|x| self.string(x, &join(path, "ac-name"))) {
            out.ac_name = x;
        }
        if let Some(x) =
            get(t, "service-name").and_then(|x| self.string(x, &join(path, "service-name")))
        {
            out.service_name = x;
        }
        if let Some(x) = get(t, "gateway").and_then(|x| self.addr(x, &join(path, "gateway"))) {
            out.gateway = x;
        }
        if let Some(x) = get(t, "pool").and_then(|x| self.addr(x, &join(path, "pool"))) {
            out.pool = x;
        }
        if let Some(x) =
            get(t, "pool-size").and_then(|x| self.int(x, &join(path, "pool-size"), 1, 65_536))
        {
            out.pool_size = x as u32;
        }
        if let Some(x) =
            get(t, "echo-interval").and_then(|x| self.duration(x, &join(path, "echo-interval")))
        {
            out.echo_interval = x.max(Duration::from_millis(100));
        }
        if let Some(x) = get(t, "timeout").and_then(|x| self.duration(x, &join(path, "timeout"))) {
            out.timeout = x.max(Duration::from_millis(100));
        }
        if let Some(x) = get(t, "internet") {
            let q = join(path, "internet");
            if let Some(a) = self.addr::<Ipv4Addr>(x, &q) {
                let net = emulate::pppoe::documentation_net(a);
                if net.is_none() {
                    self.err(
                        x.span(),
                        &q,
                        format!("{a}: use a documentation address (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24), e.g. 203.0.113.1"),
                    );
                } else if net == emulate::pppoe::documentation_net(out.pool) {
                    self.err(
                        x.span(),
                        &q,
                        format!("{a} is in the pool's /24 ({}): the Internet host needs an address the subscribers are not in, e.g. 203.0.113.1", out.pool),
                    );
                } else {
                    out.internet = Some(a);
                }
            }
        }
        if role == Some(PppoeRole::Client) {
            for key in ["gateway", "pool", "pool-size", "internet"] {
                if let Some(x) = get(t, key) {
                    self.err(
                        x.span(),
                        &join(path, key),
                        "applies to the server (the client gets its address by IPCP)",
                    );
                }
            }
        }
        role.map(|_| out)
    }

    /// `[ports.NAME.dslite]`.
    pub(super) fn dslite(&mut self, v: &Value<'_>, path: &str) -> Option<DsliteSettings> {
        let t = self.table(v, path)?;
        self.keys(
            t,
            path,
            &[
                "role",
                "address",
                "peer",
                "timeout",
                "provision",
                "aftr-name",
                "mtu",
                "internet",
            ],
        );
        let role = self.required(t, &v.span(), path, "role").and_then(|r| {
            self.choice(
                r,
                &join(path, "role"),
                &[("aftr", DsliteRole::Aftr), ("b4", DsliteRole::B4)],
            )
        });
        let address = self
            .required(t, &v.span(), path, "address")
            .and_then(|x| self.addr(x, &join(path, "address")));
        let peer = get(t, "peer").and_then(|x| self.addr(x, &join(path, "peer")));
        if role == Some(DsliteRole::B4) && get(t, "peer").is_none() {
            self.err(
                v.span(),
                &join(path, "peer"),
                "missing key: a B4 needs the AFTR's address",
            );
        }
        let timeout = match get(t, "timeout") {
            Some(x) => self.duration(x, &join(path, "timeout"))?,
            None => Duration::from_secs(30),
        };
        let provision = match get(t, "provision") {
            Some(x) => self.boolean(x, &join(path, "provision"))?,
            None => false,
        };
        let aftr_name = match get(t, "aftr-name") {
            Some(x) => {
                let n = self.nonempty(x, &join(path, "aftr-name"))?;
                let mut b = [0u8; wire::dhcpv6::MAX_NAME_LEN];
                if let Err(e) = wire::dhcpv6::encode_name(&n, &mut b) {
                    self.err(
                        x.span(),
                        &join(path, "aftr-name"),
                        format!("not a DNS name: {e}"),
                    );
                    return None;
                }
                Some(n)
            }
            None => None,
        };
        // The same bounds as `wirerate trial --inside-mtu`: IPv6's minimum MTU to a jumbo link.
        let mtu = match get(t, "mtu") {
            Some(x) => self.int(x, &join(path, "mtu"), 1280, 9000)? as usize,
            None => crate::oversize::DSLITE_DEFAULT_MTU,
        };
        let mut internet = None;
        if let Some(x) = get(t, "internet") {
            let q = join(path, "internet");
            if let Some(a) = self.addr::<Ipv4Addr>(x, &q) {
                // Documentation ranges only; 192.0.0.0/29, where the B4s are, is not one.
                if emulate::pppoe::documentation_net(a).is_none() {
                    self.err(
                        x.span(),
                        &q,
                        format!("{a}: use a documentation address (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24), e.g. 203.0.113.1"),
                    );
                } else {
                    internet = Some(a);
                }
            }
        }
        for (key, why) in [
            ("provision", "it provisions the CPE's WAN link"),
            ("aftr-name", "it provisions the CPE's WAN link"),
            ("internet", "the Internet sits behind the ISP side"),
        ] {
            if let (Some(x), Some(DsliteRole::B4)) = (get(t, key), role) {
                self.err(
                    x.span(),
                    &join(path, key),
                    format!("applies to the AFTR ({why})"),
                );
            }
        }
        Some(DsliteSettings {
            role: role?,
            address: address?,
            peer,
            timeout,
            provision,
            aftr_name,
            mtu,
            internet,
        })
    }

    pub(super) fn topology(
        &mut self,
        root: &DeTable<'_>,
        root_span: &Range<usize>,
    ) -> Option<Topology> {
        let v = self.required(root, root_span, "", "topology")?;
        let t = self.table(v, "topology")?;
        let kind = self.required(t, &v.span(), "topology", "kind")?;
        let kind = self.choice(
            kind,
            "topology.kind",
            &[("lab", true), ("interfaces", false)],
        )?;
        if kind {
            self.keys(t, "topology", &["kind", "lab", "name", "speed"]);
            let lab = match get(t, "lab") {
                Some(l) => self.choice(l, "topology.lab", &LAB_TOPOLOGIES.map(|n| (n, n)))?,
                None => "forward",
            };
            let name = match get(t, "name") {
                Some(n) => {
                    let s = self.nonempty(n, "topology.name")?;
                    if !s
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                    {
                        self.err(n.span(), "topology.name", "use lowercase letters and digits only (it becomes part of `wr-<name>-*` namespace names)");
                        return None;
                    }
                    s
                }
                None => "wr".to_string(),
            };
            let speed = match get(t, "speed") {
                Some(s) => self.speed(s, "topology.speed")?,
                None => BitsPerSec(1e9),
            };
            Some(Topology::Lab {
                topology: lab.to_string(),
                name,
                speed,
            })
        } else {
            self.keys(t, "topology", &["kind"]);
            Some(Topology::Interfaces)
        }
    }

    pub(super) fn ports(
        &mut self,
        root: &DeTable<'_>,
        root_span: &Range<usize>,
        topo: &Topology,
    ) -> Vec<Port> {
        let Some(v) = get(root, "ports") else {
            if matches!(topo, Topology::Interfaces) {
                self.err(
                    root_span.clone(),
                    "ports",
                    "missing key: real interfaces need a [ports.NAME] table per tester port",
                );
            }
            return Vec::new();
        };
        let Some(t) = self.table(v, "ports") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, _, pv) in entries(t) {
            let path = join("ports", name);
            let Some(pt) = self.table(pv, &path) else {
                continue;
            };
            self.keys(
                pt,
                &path,
                &[
                    "interface",
                    "namespace",
                    "speed",
                    "ipv4",
                    "ipv6",
                    "gateway-v4",
                    "gateway-v6",
                    "pppoe",
                    "dslite",
                    "ipoe",
                    "mape",
                ],
            );
            let interface = self
                .required(pt, &pv.span(), &path, "interface")
                .and_then(|i| self.name_like(i, &join(&path, "interface"), NameKind::Interface));
            let namespace = get(pt, "namespace")
                .and_then(|n| self.name_like(n, &join(&path, "namespace"), NameKind::Netns));
            let speed = get(pt, "speed").and_then(|s| self.speed(s, &join(&path, "speed")));
            if speed.is_none() && matches!(topo, Topology::Interfaces) && get(pt, "speed").is_none()
            {
                self.err(
                    pv.span(),
                    &join(&path, "speed"),
                    "missing key: line-rate arithmetic needs the link speed",
                );
            }
            let ipv4 = get(pt, "ipv4").and_then(|x| self.addr(x, &join(&path, "ipv4")));
            let ipv6 = get(pt, "ipv6").and_then(|x| self.addr(x, &join(&path, "ipv6")));
            let gateway_v4 =
                get(pt, "gateway-v4").and_then(|x| self.addr(x, &join(&path, "gateway-v4")));
            let gateway_v6 =
                get(pt, "gateway-v6").and_then(|x| self.addr(x, &join(&path, "gateway-v6")));
            let pppoe = get(pt, "pppoe").and_then(|x| self.pppoe(x, &join(&path, "pppoe")));
            let dslite = get(pt, "dslite").and_then(|x| self.dslite(x, &join(&path, "dslite")));
            let ipoe = get(pt, "ipoe").and_then(|x| self.ipoe(x, &join(&path, "ipoe")));
            let mape = get(pt, "mape").and_then(|x| self.mape(x, &join(&path, "mape")));
            if let (true, Some(x)) = (
                pppoe.is_some() || dslite.is_some() || ipoe.is_some(),
                get(pt, "mape"),
            ) {
                self.err(
                    x.span(),
                    &join(&path, "mape"),
                    "a port plays one WAN: PPPoE, DS-Lite, IPoE or MAP-E",
                );
            }
            if let (Some(_), Some(d)) = (&pppoe, get(pt, "dslite")) {
                self.err(
                    d.span(),
                    &join(&path, "dslite"),
                    "a port plays either PPPoE or DS-Lite, not both",
                );
            }
            if let (true, Some(x)) = (pppoe.is_some() || dslite.is_some(), get(pt, "ipoe")) {
                self.err(
                    x.span(),
                    &join(&path, "ipoe"),
                    "a port plays one WAN: PPPoE, DS-Lite or IPoE",
                );
            }
            if let Some(interface) = interface {
                out.push(Port {
                    name: name.to_string(),
                    interface,
                    namespace,
                    speed,
                    ipv4,
                    ipv6,
                    gateway_v4,
                    gateway_v6,
                    pppoe,
                    dslite,
                    ipoe,
                    mape,
                });
            }
        }
        out
    }

    pub(super) fn dut(
        &mut self,
        root: &DeTable<'_>,
        root_span: &Range<usize>,
        topo: &Topology,
    ) -> Option<Dut> {
        let v = self.required(root, root_span, "", "dut")?;
        let t = self.table(v, "dut")?;
        let kind_v = self.required(t, &v.span(), "dut", "kind")?;
        let kind = self.choice(
            kind_v,
            "dut.kind",
            &[("lab", DutKind::Lab), ("device", DutKind::Device)],
        )?;
        let exec = match kind {
            DutKind::Lab => {
                self.keys(t, "dut", &["kind", "profiles"]);
                let Topology::Lab { name, .. } = topo else {
                    self.err(
                        kind_v.span(),
                        "dut.kind",
                        "a lab DUT needs `topology.kind = \"lab\"`",
                    );
                    return None;
                };
                Exec::Netns {
                    name: format!("wr-{name}-dut"),
                }
            }
            DutKind::Device => {
                self.keys(t, "dut", &["kind", "ssh", "ssh-port", "netns", "profiles"]);
                let ssh =
                    get(t, "ssh").and_then(|s| self.name_like(s, "dut.ssh", NameKind::SshHost));
                let port = get(t, "ssh-port").and_then(|p| self.int(p, "dut.ssh-port", 1, 65535));
                let netns =
                    get(t, "netns").and_then(|n| self.name_like(n, "dut.netns", NameKind::Netns));
                match (ssh, netns) {
                    (Some(_), Some(_)) => {
                        self.err(
                            v.span(),
                            "dut.ssh",
                            "give either `ssh` or `netns`, not both",
                        );
                        return None;
                    }
                    (Some(host), None) => Exec::Ssh {
                        host,
                        port: port.map(|p| p as u16),
                    },
                    (None, Some(name)) => Exec::Netns { name },
                    (None, None) => Exec::Local,
                }
            }
        };
        let pv = self.required(t, &v.span(), "dut", "profiles")?;
        let mut profiles = Vec::new();
        match pv.get_ref() {
            DeValue::Array(_) if kind == DutKind::Lab => {
                for name in self.list(pv, "dut.profiles", |w, item, p| w.lab_profile(item, p))? {
                    profiles.push(Profile {
                        lab: Some(name.clone()),
                        name,
                        hooks: ProfileHooks::default(),
                        table_size: None,
                        udp_timeout: None,
                    });
                }
            }
            DeValue::Table(pt) => {
                for (name, _, prof) in entries(pt) {
                    let path = join("dut.profiles", name);
                    let Some(p) = self.table(prof, &path) else {
                        continue;
                    };
                    let hook_keys = [
                        "setup",
                        "teardown",
                        "stats-before",
                        "stats-after",
                        "samplers",
                    ];
                    let lab = if kind == DutKind::Lab {
                        let mut allowed = vec!["lab", "table-size", "udp-timeout"];
                        allowed.extend(hook_keys);
                        self.keys(p, &path, &allowed);
                        Some(match get(p, "lab") {
                            Some(l) => self.lab_profile(l, &join(&path, "lab")).unwrap_or_default(),
                            None => {
                                if let Err(e) = lab_model::Profile::parse(name) {
                                    self.err(
                                        prof.span(),
                                        &path,
                                        format!("{e}; or name the lab profile with `lab = \"…\"`"),
                                    );
                                }
                                name.to_string()
                            }
                        })
                    } else {
                        self.keys(p, &path, &hook_keys);
                        None
                    };
                    let hooks = self.hooks(p, &path);
                    let (table_size, udp_timeout) = match &lab {
                        Some(l) => self.conn_table(p, &path, l),
                        None => (None, None),
                    };
                    profiles.push(Profile {
                        name: name.to_string(),
                        lab,
                        hooks,
                        table_size,
                        udp_timeout,
                    });
                }
            }
            _ => {
                let what = if kind == DutKind::Lab {
                    "an array of lab profile names or a table of [dut.profiles.NAME]"
                } else {
                    "a table of [dut.profiles.NAME]"
                };
                self.type_err(pv, "dut.profiles", what);
                return None;
            }
        }
        if profiles.is_empty() {
            self.err(pv.span(), "dut.profiles", "at least one profile is needed");
        }
        Some(Dut {
            kind,
            exec,
            profiles,
        })
    }
}
