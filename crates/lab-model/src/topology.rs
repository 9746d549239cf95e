//! Topologies as data: which namespaces, veth links, addresses and routes a lab has. Pure (no
//! I/O), so the plan can be unit-tested and the lab's builder (`lab::Lab::up`) just walks
//! it.
//!
//! Addresses come only from documentation ranges (DESIGN.md §6). Every lab uses the same
//! addresses: they live in the lab's own namespaces, so parallel labs never collide.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Prefix of every namespace and link the lab creates.
pub const PREFIX: &str = "wr-";

/// The shape of a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Topology {
    /// Port A — DUT — port B: the DUT routes between two subnets.
    Forward,
    /// Port A — DUT: the DUT itself is the traffic endpoint (it runs iperf3).
    Endpoint,
    /// Port A — port B with no DUT: measures the tester itself.
    Direct,
}

impl Topology {
    pub const ALL: [Topology; 3] = [Topology::Forward, Topology::Endpoint, Topology::Direct];

    pub fn as_str(self) -> &'static str {
        match self {
            Topology::Forward => "forward",
            Topology::Endpoint => "endpoint",
            Topology::Direct => "direct",
        }
    }

    /// The nodes (namespaces) of this topology.
    pub fn nodes(self) -> &'static [Node] {
        match self {
            Topology::Forward => &[Node::A, Node::Dut, Node::B],
            Topology::Endpoint => &[Node::A, Node::Dut],
            Topology::Direct => &[Node::A, Node::B],
        }
    }

    pub fn has(self, node: Node) -> bool {
        self.nodes().contains(&node)
    }

    /// Which topology a set of existing nodes describes, if any.
    pub fn from_nodes(nodes: &[Node]) -> Option<Topology> {
        Topology::ALL
            .into_iter()
            .find(|t| t.nodes().len() == nodes.len() && t.nodes().iter().all(|n| nodes.contains(n)))
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Topology {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Topology::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| Error::UnknownTopology(s.to_string()))
    }
}

/// A namespace of the lab: a tester port's (A, B) or the device under test's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Node {
    A,
    Dut,
    B,
}

impl Node {
    pub fn as_str(self) -> &'static str {
        match self {
            Node::A => "a",
            Node::Dut => "dut",
            Node::B => "b",
        }
    }

    fn from_suffix(s: &str) -> Option<Node> {
        match s {
            "a" => Some(Node::A),
            "dut" => Some(Node::Dut),
            "b" => Some(Node::B),
            _ => None,
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Node {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Node::from_suffix(&s.to_ascii_lowercase()).ok_or_else(|| Error::UnknownNode(s.into()))
    }
}

/// A tester port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PortId {
    A,
    B,
}

impl PortId {
    pub fn node(self) -> Node {
        match self {
            PortId::A => Node::A,
            PortId::B => Node::B,
        }
    }
}

/// Check a lab name: short, lowercase letters, digits and inner dashes, so that
/// `wr-<name>-dut` is a valid namespace name and parses back unambiguously.
pub fn validate_name(name: &str) -> Result<()> {
    let bad = |reason: &str| {
        Err(Error::InvalidName {
            name: name.to_string(),
            reason: reason.to_string(),
        })
    };
    if name.is_empty() || name.len() > 24 {
        return bad("use 1 to 24 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return bad("use lowercase letters, digits and '-'");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return bad("it may not start or end with '-'");
    }
    Ok(())
}

/// The namespace of `node` in lab `name`: `wr-<name>-<node>`.
pub fn netns_name(name: &str, node: Node) -> String {
    format!("{PREFIX}{name}-{}", node.as_str())
}

/// Split a namespace name into (lab name, node), if it is one of ours.
pub fn parse_netns_name(ns: &str) -> Option<(String, Node)> {
    let rest = ns.strip_prefix(PREFIX)?;
    let (name, suffix) = rest.rsplit_once('-')?;
    let node = Node::from_suffix(suffix)?;
    validate_name(name).ok()?;
    Some((name.to_string(), node))
}

/// One interface of a node, with its fixed addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfacePlan {
    pub node: Node,
    pub ifname: &'static str,
    /// Locally administered, deterministic MAC (02:77:72 = "wr"), so captures are readable.
    pub mac: &'static str,
    pub ipv4: Ipv4Addr,
    pub ipv6: Ipv6Addr,
}

/// A veth link between two interfaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkPlan {
    pub left: IfacePlan,
    pub right: IfacePlan,
}

/// A default route of a tester node through the DUT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutePlan {
    pub node: Node,
    pub via4: Ipv4Addr,
    pub via6: Ipv6Addr,
}

/// IPv4 prefix length of every lab subnet.
pub const V4_PREFIX: u8 = 24;
/// IPv6 prefix length of every lab subnet.
pub const V6_PREFIX: u8 = 64;

const fn v6(a: u16, last: u16) -> Ipv6Addr {
    Ipv6Addr::new(0x2001, 0xdb8, a, 0, 0, 0, 0, last)
}

fn port_a() -> IfacePlan {
    IfacePlan {
        node: Node::A,
        ifname: "wr-a",
        mac: "02:77:72:00:00:0a",
        ipv4: Ipv4Addr::new(198, 51, 100, 2),
        ipv6: v6(0xa, 2),
    }
}

fn dut_a() -> IfacePlan {
    IfacePlan {
        node: Node::Dut,
        ifname: "wr-dut-a",
        mac: "02:77:72:00:01:0a",
        ipv4: Ipv4Addr::new(198, 51, 100, 1),
        ipv6: v6(0xa, 1),
    }
}

fn dut_b() -> IfacePlan {
    IfacePlan {
        node: Node::Dut,
        ifname: "wr-dut-b",
        mac: "02:77:72:00:01:0b",
        ipv4: Ipv4Addr::new(203, 0, 113, 1),
        ipv6: v6(0xb, 1),
    }
}

fn port_b_forward() -> IfacePlan {
    IfacePlan {
        node: Node::B,
        ifname: "wr-b",
        mac: "02:77:72:00:00:0b",
        ipv4: Ipv4Addr::new(203, 0, 113, 2),
        ipv6: v6(0xb, 2),
    }
}

fn port_b_direct() -> IfacePlan {
    IfacePlan {
        node: Node::B,
        ifname: "wr-b",
        mac: "02:77:72:00:00:0b",
        ipv4: Ipv4Addr::new(198, 51, 100, 3),
        ipv6: v6(0xa, 3),
    }
}

/// The links of a topology.
pub fn links(t: Topology) -> Vec<LinkPlan> {
    match t {
        Topology::Forward => vec![
            LinkPlan {
                left: port_a(),
                right: dut_a(),
            },
            LinkPlan {
                left: port_b_forward(),
                right: dut_b(),
            },
        ],
        Topology::Endpoint => vec![LinkPlan {
            left: port_a(),
            right: dut_a(),
        }],
        Topology::Direct => vec![LinkPlan {
            left: port_a(),
            right: port_b_direct(),
        }],
    }
}

/// The default routes of a topology (tester ports route everything through the DUT).
pub fn routes(t: Topology) -> Vec<RoutePlan> {
    match t {
        Topology::Forward => vec![
            RoutePlan {
                node: Node::A,
                via4: dut_a().ipv4,
                via6: dut_a().ipv6,
            },
            RoutePlan {
                node: Node::B,
                via4: dut_b().ipv4,
                via6: dut_b().ipv6,
            },
        ],
        Topology::Endpoint | Topology::Direct => vec![],
    }
}

/// Every interface of a topology.
pub fn ifaces(t: Topology) -> Vec<IfacePlan> {
    links(t)
        .into_iter()
        .flat_map(|l| [l.left, l.right])
        .collect()
}

/// The interfaces of the DUT that receive tester traffic (RPS targets).
pub fn dut_ifaces(t: Topology) -> Vec<IfacePlan> {
    ifaces(t)
        .into_iter()
        .filter(|i| i.node == Node::Dut)
        .collect()
}

/// The interface of a tester port.
pub fn port_iface(t: Topology, port: PortId) -> Option<IfacePlan> {
    ifaces(t).into_iter().find(|i| i.node == port.node())
}

/// The interface directly attached to `iface` (the other end of its veth).
pub fn peer_iface(t: Topology, ifname: &str, node: Node) -> Option<IfacePlan> {
    links(t).into_iter().find_map(|l| {
        if l.left.ifname == ifname && l.left.node == node {
            Some(l.right)
        } else if l.right.ifname == ifname && l.right.node == node {
            Some(l.left)
        } else {
            None
        }
    })
}

/// The interface a port's test traffic is addressed to: the other port, or in the endpoint
/// topology the DUT.
pub fn target_iface(t: Topology, port: PortId) -> Option<IfacePlan> {
    match (t, port) {
        (Topology::Forward, PortId::A) => Some(port_b_forward()),
        (Topology::Forward, PortId::B) => Some(port_a()),
        (Topology::Endpoint, PortId::A) => Some(dut_a()),
        (Topology::Endpoint, PortId::B) => None,
        (Topology::Direct, PortId::A) => Some(port_b_direct()),
        (Topology::Direct, PortId::B) => Some(port_a()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(netns_name("lab", Node::Dut), "wr-lab-dut");
        assert_eq!(
            parse_netns_name("wr-my-lab-dut"),
            Some(("my-lab".into(), Node::Dut))
        );
        assert_eq!(parse_netns_name("wr-x-b"), Some(("x".into(), Node::B)));
        assert_eq!(parse_netns_name("wr-probe-123"), None);
        assert_eq!(parse_netns_name("other-a"), None);
    }

    #[test]
    fn names_are_checked() {
        assert!(validate_name("lab").is_ok());
        assert!(validate_name("t-forward-1").is_ok());
        for bad in [
            "",
            "Lab",
            "a b",
            "-x",
            "x-",
            "a/b",
            "abcdefghijklmnopqrstuvwxyz",
        ] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn interface_names_fit_ifnamsiz() {
        for t in Topology::ALL {
            for i in ifaces(t) {
                assert!(i.ifname.len() < 16 && i.ifname.starts_with(PREFIX));
            }
        }
    }

    #[test]
    fn topology_from_nodes() {
        assert_eq!(
            Topology::from_nodes(&[Node::B, Node::Dut, Node::A]),
            Some(Topology::Forward)
        );
        assert_eq!(
            Topology::from_nodes(&[Node::A, Node::B]),
            Some(Topology::Direct)
        );
        assert_eq!(Topology::from_nodes(&[Node::A]), None);
    }

    #[test]
    fn only_documentation_addresses() {
        for t in Topology::ALL {
            for i in ifaces(t) {
                let o = i.ipv4.octets();
                assert!(matches!((o[0], o[1], o[2]), (198, 51, 100) | (203, 0, 113)));
                assert_eq!(i.ipv6.segments()[..2], [0x2001, 0xdb8]);
            }
        }
    }
}
