//! Configuring a TUN device that a control plane created (`engine::tun::Tun`): MTU, link up,
//! addresses and routes, with iproute2 in the device's namespace. The device itself goes away
//! with the process that holds it; nothing here needs undoing.

use crate::cmd;
use crate::error::Result;

/// What a TUN device gets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TunSetup {
    pub mtu: u32,
    /// `ip addr add` arguments before `dev`, e.g. `["203.0.113.1/32"]` or
    /// `["198.51.100.10", "peer", "198.51.100.1"]`, one address per entry.
    pub addrs: Vec<Vec<String>>,
    /// Destinations routed into the device (`"198.51.100.0/24"`, `"default"`), replacing a
    /// route to the same destination.
    pub routes: Vec<String>,
}

/// `ip [-n NS] ARGS…`; a namespace given as a path is entered with nsenter.
fn ip(ns: Option<&str>, args: &[&str]) -> Result<String> {
    let mut argv: Vec<String> = Vec::new();
    match ns {
        Some(n) if n.contains('/') => {
            argv.extend(["nsenter".into(), format!("--net={n}"), "ip".into()]);
        }
        Some(n) => argv.extend(["ip".into(), "-n".into(), n.into()]),
        None => argv.push("ip".into()),
    }
    argv.extend(args.iter().map(|s| s.to_string()));
    let v: Vec<&str> = argv.iter().map(String::as_str).collect();
    cmd::run(&v)
}

/// Sets the device's MTU, brings it up, adds its addresses and routes.
pub fn configure(ns: Option<&str>, dev: &str, s: &TunSetup) -> Result<()> {
    let mtu = s.mtu.to_string();
    ip(ns, &["link", "set", "dev", dev, "mtu", &mtu, "up"])?;
    for a in &s.addrs {
        let mut args = vec!["addr", "add"];
        args.extend(a.iter().map(String::as_str));
        args.extend(["dev", dev]);
        ip(ns, &args)?;
    }
    for r in &s.routes {
        ip(ns, &["route", "replace", r, "dev", dev])?;
    }
    Ok(())
}
