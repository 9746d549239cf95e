//! What the host says about one interface, read where the interface lives (inside its
//! network namespace): addresses, next hops and MTU (`ip -j`), wire speed (sysfs), driver,
//! offloads and the driver's counters (`ethtool`).
//!
//! Three readers use it: `wirerate plan new` ([`Iface::plan_facts`], to write a plan), the
//! preflight of a run on real interfaces ([`Iface::link`]: the link checked against the
//! plan's `speed` and recorded in `run.json`), and the testbed, which reads the tester's own
//! drop counters around every UDP trial ([`Iface::counters`], [`counters`]). The parsing is
//! pure and tested here; the reading is a few `ip`/`ethtool` runs (`ip netns exec NS …` for
//! an interface in a namespace, which needs root, as a run does).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::error::BenchError;
use crate::plan_new::{subnet_guess_v4, subnet_guess_v6, NextHop, PortFacts, Source};
use crate::port_link::{PortLink, WireSpeed};

/// Why a command about an interface (`ethtool`, `ip -j`, run in its namespace) gave nothing
/// usable: the command line is in every variant, so the message says what was run.
#[derive(Debug)]
pub enum IfaceCommandError {
    /// The program could not be started (not installed, no permission).
    Spawn {
        command: String,
        source: std::io::Error,
    },
    /// It ran and failed: its standard error.
    Failed { command: String, stderr: String },
    /// `ip -j` printed something that is not JSON.
    Json {
        command: String,
        source: serde_json::Error,
    },
}

impl std::fmt::Display for IfaceCommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IfaceCommandError::Spawn { command, source } => write!(f, "`{command}`: {source}"),
            IfaceCommandError::Failed { command, stderr } => write!(f, "`{command}`: {stderr}"),
            IfaceCommandError::Json { command, source } => write!(f, "`{command}`: {source}"),
        }
    }
}

impl std::error::Error for IfaceCommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            IfaceCommandError::Spawn { source, .. } => Some(source),
            IfaceCommandError::Json { source, .. } => Some(source),
            IfaceCommandError::Failed { .. } => None,
        }
    }
}

pub mod counters;
pub mod offloads;

/// One interface, maybe in a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iface {
    /// Interface name.
    pub interface: String,
    /// Its network namespace, if any.
    pub namespace: Option<String>,
}

/// Whether `name` can be handed to `ip`, `ethtool` and a sysfs path as an interface name:
/// 1–15 bytes, none of them `/`, whitespace or a leading `-` (the kernel's own rule, minus
/// what could become an option).
pub fn check_interface_name(name: &str) -> Result<(), BenchError> {
    let ok = !name.is_empty()
        && name.len() <= 15
        && !name.starts_with('-')
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_graphic() && c != '/' && c != ':');
    if ok {
        Ok(())
    } else {
        Err(BenchError::Usage(format!(
            "`{name}` is not an interface name (1–15 characters, no `/`, `:` or spaces, not starting with `-`)"
        )))
    }
}

impl Iface {
    /// `IFACE` or `IFACE@NETNS`, as `plan new`'s options take them.
    pub fn parse(spec: &str) -> Result<Iface, BenchError> {
        let (interface, namespace) = match spec.split_once('@') {
            Some((i, ns)) => (i, Some(ns)),
            None => (spec, None),
        };
        check_interface_name(interface)?;
        if let Some(ns) = namespace {
            let ok = !ns.is_empty()
                && !ns.starts_with('-')
                && ns
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
            if !ok || ns == "." || ns == ".." {
                return Err(BenchError::Usage(format!(
                    "`{ns}` is not a network namespace name (letters, digits, `-`, `_`, `.`; see `ip netns list`)"
                )));
            }
        }
        Ok(Iface {
            interface: interface.to_string(),
            namespace: namespace.map(String::from),
        })
    }

    /// `wrpna in wr-pn-a`.
    pub fn place(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} in {ns}", self.interface),
            None => self.interface.clone(),
        }
    }

    /// The argument vector that runs `argv` where the interface lives.
    fn argv<'a>(&'a self, argv: &[&'a str]) -> Vec<&'a str> {
        let mut v = Vec::new();
        if let Some(ns) = &self.namespace {
            v.extend(["ip", "netns", "exec", ns.as_str()]);
        }
        v.extend_from_slice(argv);
        v
    }

    /// Runs `argv` where the interface lives; its stdout, or what went wrong.
    fn run(&self, argv: &[&str]) -> Result<String, IfaceCommandError> {
        let full = self.argv(argv);
        let out = Command::new(full[0])
            .args(&full[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(|source| IfaceCommandError::Spawn {
                command: full.join(" "),
                source,
            })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(IfaceCommandError::Failed {
                command: full.join(" "),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    /// `ip -j ARGS` for this interface's namespace, parsed.
    fn ip_json(&self, args: &[&str]) -> Result<Value, IfaceCommandError> {
        let mut argv = vec!["ip", "-j"];
        argv.extend_from_slice(args);
        let text = self.run(&argv)?;
        serde_json::from_str(&text).map_err(|source| IfaceCommandError::Json {
            command: format!("ip -j {}", args.join(" ")),
            source,
        })
    }

    /// The interface's driver (`ethtool -i`), when ethtool can tell.
    pub fn driver(&self) -> Option<String> {
        let text = self.run(&["ethtool", "-i", &self.interface]).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("driver:"))
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
    }

    /// Its wire speed: sysfs's `speed`, unless the interface has no device of its own (a
    /// veth, a TUN), which has no wire whatever its driver reports (`WireSpeed::from_sysfs`).
    pub fn wire_speed(&self, driver: Option<&str>) -> WireSpeed {
        let sys = format!("/sys/class/net/{}", self.interface);
        // `ip netns exec` mounts the namespace's own sysfs for the command it runs.
        let speed = self.run(&["cat", &format!("{sys}/speed")]).ok();
        let has_device = self.run(&["test", "-e", &format!("{sys}/device")]).is_ok();
        let virtual_driver = (!has_device).then(|| driver.unwrap_or("virtual").to_string());
        WireSpeed::from_sysfs(speed.as_deref(), virtual_driver.as_deref())
    }

    /// The offloads `ethtool -k` reports ([`offloads::REPORTED`]); empty when it cannot tell.
    pub fn offloads(&self) -> Vec<crate::port_link::Offload> {
        self.run(&["ethtool", "-k", &self.interface])
            .map(|t| offloads::parse(&t))
            .unwrap_or_default()
    }

    /// The driver's counters (`ethtool -S`).
    pub fn counters(&self) -> Result<BTreeMap<String, u64>, IfaceCommandError> {
        self.run(&["ethtool", "-S", &self.interface])
            .map(|t| counters::parse(&t))
    }

    /// The link under the plan's port `port` on this interface, as the preflight records it.
    pub fn link(&self, port: &str) -> PortLink {
        let driver = self.driver();
        let wire = self.wire_speed(driver.as_deref());
        let tester_counters = self
            .counters()
            .map(|c| counters::counted(driver.as_deref(), &c))
            .unwrap_or_default();
        PortLink {
            port: port.to_string(),
            interface: self.interface.clone(),
            namespace: self.namespace.clone(),
            driver,
            wire,
            offloads: self.offloads(),
            tester_counters,
        }
    }

    /// What `plan new` writes a port from: addresses, next hops, MTU, wire speed.
    pub fn plan_facts(&self) -> Result<PortFacts, BenchError> {
        let addr = self
            .ip_json(&["addr", "show", "dev", &self.interface])
            .map_err(|e| BenchError::Failed(format!("interface {}: {e}", self.place())))?;
        let Addresses { mtu, ipv4, ipv6 } = addresses(&addr);
        let routes4 = self
            .ip_json(&["-4", "route", "show", "dev", &self.interface])
            .unwrap_or(Value::Null);
        let routes6 = self
            .ip_json(&["-6", "route", "show", "dev", &self.interface])
            .unwrap_or(Value::Null);
        let neigh4 = self
            .ip_json(&["-4", "neigh", "show", "dev", &self.interface])
            .unwrap_or(Value::Null);
        let neigh6 = self
            .ip_json(&["-6", "neigh", "show", "dev", &self.interface])
            .unwrap_or(Value::Null);
        let gateway_v4 = ipv4.and_then(|(own, prefix)| {
            next_hop(&routes4, &neigh4)
                .and_then(|(a, s)| match a {
                    IpAddr::V4(a) => Some(NextHop { addr: a, source: s }),
                    IpAddr::V6(_) => None,
                })
                .or_else(|| {
                    subnet_guess_v4(own, prefix).map(|addr| NextHop {
                        addr,
                        source: Source::SubnetGuess,
                    })
                })
        });
        let gateway_v6 = ipv6.and_then(|(own, prefix)| {
            next_hop(&routes6, &neigh6)
                .and_then(|(a, s)| match a {
                    IpAddr::V6(a) => Some(NextHop { addr: a, source: s }),
                    IpAddr::V4(_) => None,
                })
                .or_else(|| {
                    subnet_guess_v6(own, prefix).map(|addr| NextHop {
                        addr,
                        source: Source::SubnetGuess,
                    })
                })
        });
        let driver = self.driver();
        Ok(PortFacts {
            interface: self.interface.clone(),
            namespace: self.namespace.clone(),
            ipv4,
            ipv6,
            gateway_v4,
            gateway_v6,
            mtu,
            wire: self.wire_speed(driver.as_deref()),
        })
    }
}

/// What `wirerate plan new` writes a plan from: what the host says about each of `ports` (in
/// the setup's order) and the user's choices.
pub fn plan_request(
    setup: crate::plan_new::Setup,
    ports: &[Iface],
    speed: Option<wire::units::BitsPerSec>,
    ssh: Option<String>,
    quick: bool,
) -> Result<crate::plan_new::Request, PortFactsError> {
    let mut facts = Vec::new();
    for (name, p) in setup.port_names().iter().zip(ports) {
        facts.push(p.plan_facts().map_err(|source| PortFactsError {
            port: name.to_string(),
            source,
        })?);
    }
    Ok(crate::plan_new::Request {
        setup,
        ports: facts,
        speed,
        ssh,
        quick,
    })
}

/// What the host could not say about the setup's port `port` ([`plan_request`]).
#[derive(Debug)]
pub struct PortFactsError {
    pub port: String,
    pub source: BenchError,
}

impl std::fmt::Display for PortFactsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "port {}: {}", self.port, self.source)
    }
}

impl std::error::Error for PortFactsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// An interface's MTU and first global addresses, with their prefix lengths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Addresses {
    /// MTU.
    pub mtu: Option<u32>,
    /// First global IPv4 address.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// First global IPv6 address.
    pub ipv6: Option<(Ipv6Addr, u8)>,
}

/// MTU and the first global IPv4 and IPv6 addresses of `ip -j addr show dev IF`.
pub fn addresses(json: &Value) -> Addresses {
    let Some(link) = json.as_array().and_then(|a| a.first()) else {
        return Addresses::default();
    };
    let mtu = link["mtu"].as_u64().and_then(|m| u32::try_from(m).ok());
    let (mut v4, mut v6) = (None, None);
    for a in link["addr_info"].as_array().into_iter().flatten() {
        if a["scope"].as_str() != Some("global") {
            continue;
        }
        let prefix = a["prefixlen"].as_u64().and_then(|p| u8::try_from(p).ok());
        let local = a["local"].as_str().and_then(|s| s.parse::<IpAddr>().ok());
        match (local, prefix) {
            (Some(IpAddr::V4(x)), Some(p)) if v4.is_none() => v4 = Some((x, p)),
            (Some(IpAddr::V6(x)), Some(p)) if v6.is_none() => v6 = Some((x, p)),
            _ => {}
        }
    }
    Addresses {
        mtu,
        ipv4: v4,
        ipv6: v6,
    }
}

/// The next hop `ip -j route show dev IF` (one family) names — the default route's gateway
/// first, then any route's — else the one usable neighbour of `ip -j neigh show dev IF`.
pub fn next_hop(routes: &Value, neighbours: &Value) -> Option<(IpAddr, Source)> {
    let gateway = |r: &Value| r["gateway"].as_str().and_then(|g| g.parse::<IpAddr>().ok());
    let routes = routes.as_array().map(Vec::as_slice).unwrap_or_default();
    if let Some(g) = routes
        .iter()
        .filter(|r| r["dst"].as_str() == Some("default"))
        .find_map(gateway)
    {
        return Some((g, Source::DefaultRoute));
    }
    if let Some(g) = routes.iter().find_map(gateway) {
        return Some((g, Source::Route));
    }
    let usable: Vec<IpAddr> = neighbours
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|n| {
            let states: Vec<&str> = n["state"]
                .as_array()
                .map(|s| s.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            !states
                .iter()
                .any(|s| matches!(*s, "FAILED" | "INCOMPLETE" | "NOARP"))
        })
        .filter_map(|n| n["dst"].as_str().and_then(|d| d.parse().ok()))
        .filter(|a: &IpAddr| !matches!(a, IpAddr::V6(v) if v.segments()[0] == 0xfe80))
        .collect();
    match usable.as_slice() {
        [one] => Some((*one, Source::Neighbour)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn addresses_are_the_first_global_ones() {
        let a = j(r#"[{"ifname":"wrpna","mtu":1500,"addr_info":[
            {"family":"inet","local":"198.51.100.2","prefixlen":24,"scope":"global"},
            {"family":"inet6","local":"fe80::1","prefixlen":64,"scope":"link"},
            {"family":"inet6","local":"2001:db8:a::2","prefixlen":64,"scope":"global"},
            {"family":"inet","local":"198.51.100.3","prefixlen":24,"scope":"global"}]}]"#);
        let got = addresses(&a);
        assert_eq!(got.mtu, Some(1500));
        assert_eq!(got.ipv4, Some(("198.51.100.2".parse().unwrap(), 24)));
        assert_eq!(got.ipv6, Some(("2001:db8:a::2".parse().unwrap(), 64)));
        assert_eq!(addresses(&j("[]")), Addresses::default());
        assert_eq!(addresses(&j(r#"{"x": 1}"#)), Addresses::default());
    }

    #[test]
    fn the_default_route_then_a_route_then_the_one_neighbour() {
        let default = j(r#"[{"dst":"198.51.100.0/24","scope":"link"},
                           {"dst":"default","gateway":"198.51.100.1"}]"#);
        assert_eq!(
            next_hop(&default, &Value::Null),
            Some(("198.51.100.1".parse().unwrap(), Source::DefaultRoute))
        );
        let route = j(r#"[{"dst":"203.0.113.0/24","gateway":"198.51.100.9"}]"#);
        assert_eq!(
            next_hop(&route, &Value::Null),
            Some(("198.51.100.9".parse().unwrap(), Source::Route))
        );
        let one = j(
            r#"[{"dst":"198.51.100.7","lladdr":"02:00:00:00:00:07","state":["STALE"]},
                       {"dst":"198.51.100.8","state":["FAILED"]}]"#,
        );
        assert_eq!(
            next_hop(&j("[]"), &one),
            Some(("198.51.100.7".parse().unwrap(), Source::Neighbour))
        );
        let two = j(r#"[{"dst":"198.51.100.7","state":["REACHABLE"]},
                       {"dst":"198.51.100.8","state":["STALE"]}]"#);
        assert_eq!(next_hop(&j("[]"), &two), None, "two neighbours: no guess");
    }

    #[test]
    fn names_that_could_become_options_or_paths_are_refused() {
        assert_eq!(
            Iface::parse("wrpna@wr-pn-a").unwrap(),
            Iface {
                interface: "wrpna".into(),
                namespace: Some("wr-pn-a".into())
            }
        );
        assert_eq!(Iface::parse("enp1s0").unwrap().namespace, None);
        for bad in [
            "-x",
            "../etc",
            "a b",
            "",
            "wrpna@",
            "wrpna@-n",
            "x@a/b",
            "averyveryverylongname",
        ] {
            assert!(Iface::parse(bad).is_err(), "{bad}");
        }
    }
}
