//! `wirerate lab status` and the lines `lab up` and `lab links` print: labs, ports, links.

use lab::{Lab, PortId};

use super::{cli_err, json};
use crate::error::CliResult;

/// `tester ports shaped to 1 Gb/s (L1), DUT offloads off`.
pub(super) fn links_line(s: &lab::LinkState) -> String {
    let wire = match s.wire_bps {
        Some(b) => format!(
            "tester ports shaped to {} (L1)",
            wire::units::BitsPerSec(b as f64)
        ),
        None => "tester ports not shaped (no line rate: TCP runs at memory speed)".to_string(),
    };
    match s.dut_offload {
        Some(o) => format!("{wire}, DUT offloads {}", if o { "on" } else { "off" }),
        None => wire,
    }
}

pub(super) fn print_ports(lab: &Lab) -> CliResult {
    for port in [PortId::A, PortId::B] {
        if !lab.topology().has(port.node()) {
            continue;
        }
        let p = lab.port(port).map_err(cli_err)?;
        outln!(
            "  port {:?}: {}/{} {} {}/{} {}/{} -> {} {}{}",
            port,
            p.netns,
            p.ifname,
            p.mac,
            p.ipv4,
            p.ipv4_prefix,
            p.ipv6,
            p.ipv6_prefix,
            p.peer.node,
            p.peer.ifname,
            p.target_v4
                .map(|t| format!(", traffic to {t} / {}", p.target_v6.unwrap()))
                .unwrap_or_default()
        );
    }
    Ok(())
}

pub(super) fn status(name: Option<&str>, as_json: bool) -> CliResult {
    let mut inv = lab::inventory().map_err(cli_err)?;
    if let Some(n) = name {
        inv.labs.retain(|l| l.name == n);
    }
    if as_json {
        return json(&inv);
    }
    match inv.dut_cpu {
        Some(c) => outln!(
            "CPU isolation: DUT on CPU {c}, tester on CPUs {:?}",
            inv.tester_cpus
        ),
        None => outln!("CPU isolation: off (one CPU)"),
    }
    if inv.labs.is_empty() {
        outln!("no lab is up");
    }
    for l in &inv.labs {
        let topo = l.topology.map(|t| t.to_string()).unwrap_or("?".into());
        let state = if l.ready {
            "up"
        } else {
            "INCOMPLETE (run `lab down` or `lab up`)"
        };
        outln!(
            "lab {}: {state}, topology {topo}, profile {}{}",
            l.name,
            l.profile.as_deref().unwrap_or("-"),
            l.fastpath
                .as_ref()
                .map(|f| format!(", fast path {f}"))
                .unwrap_or_default()
        );
        outln!("  namespaces: {}", l.namespaces.join(" "));
        if let Some(h) = lab::lock::holder(&l.name) {
            outln!("  in use by {h}");
        }
        if l.ready {
            if let Ok(st) = Lab::attach(&l.name).and_then(|lab| lab.link_state()) {
                outln!("  links: {}", links_line(&st));
            }
        }
        // Another process may be building or removing this lab while we read it (its `lab
        // down` even kills our `ip` inside the namespace): say so and go on with the others.
        if l.ready {
            if let Err(e) = Lab::attach(&l.name)
                .map_err(cli_err)
                .and_then(|lab| print_ports(&lab))
            {
                outln!("  ports: not readable now, the lab changed while being read ({e}); run `lab status` again");
            }
        }
    }
    if !inv.other_namespaces.is_empty() {
        outln!(
            "other wr- namespaces (removed by `lab down`): {}",
            inv.other_namespaces.join(" ")
        );
    }
    Ok(())
}
