//! `wirerate plan new SETUP …`: writes a commented plan for a router, a home gateway or an
//! endpoint from what the host says about the given interfaces. The host is read by
//! `bench::iface`, the text written by `bench::plan_new`; this module maps the options.

use std::io::Write as _;
use std::path::PathBuf;

use bench::iface::Iface;
use bench::plan::Plan;
use bench::plan_new::Setup;
use wire::units::BitsPerSec;

use crate::error::{CliError, CliResult};

fn iface(s: &str) -> Result<Iface, String> {
    Iface::parse(s).map_err(|e| e.to_string())
}

fn speed(s: &str) -> Result<BitsPerSec, String> {
    wire::linerate::parse_speed(s).map_err(|e| e.to_string())
}

/// What every setup takes besides its ports.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// The link speed the line-rate arithmetic uses on every port (1G, 2.5G, 100M). Required
    /// where a port has no wire speed of its own (a veth, a TUN); refused above a link's.
    #[arg(long, value_name = "SPEED", value_parser = speed)]
    speed: Option<BitsPerSec>,
    /// Run the DUT's hooks (and an endpoint's iperf3 server) on the device over ssh, with a
    /// key (BatchMode).
    #[arg(long, value_name = "USER@HOST")]
    ssh: Option<String>,
    /// Write the plan to FILE (never over an existing file) instead of standard output.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: Option<PathBuf>,
    /// A plan that checks the setup in a minute or two: one frame size per IP version, 3 s
    /// trials, one TCP session, no MTU probe. Not for figures to publish.
    #[arg(long)]
    quick: bool,
}

/// Which setup to write a plan for.
#[derive(Debug, clap::Subcommand)]
pub enum NewSetup {
    /// A router or firewall between two tester ports: UDP NDR/PDR at the RFC 2544 sizes, TCP
    /// with 1, 2 and 4 sessions.
    Router {
        /// The port test frames start from: IFACE or IFACE@NETNS.
        #[arg(long, value_name = "IFACE[@NETNS]", value_parser = iface)]
        a: Iface,
        /// The port they arrive at.
        #[arg(long, value_name = "IFACE[@NETNS]", value_parser = iface)]
        b: Iface,
        #[command(flatten)]
        common: Common,
    },
    /// A home gateway with wirerate as its ISP over PPPoE: UDP one way and both ways, TCP with
    /// sessions and an MSS sweep, the largest frame each way.
    GatewayPppoe {
        /// The tester port cabled to the gateway's LAN.
        #[arg(long, value_name = "IFACE[@NETNS]", value_parser = iface)]
        lan: Iface,
        /// The tester port cabled to its WAN, where wirerate plays the access concentrator.
        #[arg(long, value_name = "IFACE[@NETNS]", value_parser = iface)]
        wan: Iface,
        #[command(flatten)]
        common: Common,
    },
    /// A home gateway with wirerate as its ISP over DS-Lite (the AFTR): UDP one way and both
    /// ways, the largest frame each way.
    GatewayDslite {
        /// The tester port cabled to the gateway's LAN.
        #[arg(long, value_name = "IFACE[@NETNS]", value_parser = iface)]
        lan: Iface,
        /// The tester port cabled to its WAN, where wirerate plays the AFTR.
        #[arg(long, value_name = "IFACE[@NETNS]", value_parser = iface)]
        wan: Iface,
        #[command(flatten)]
        common: Common,
    },
    /// The device as the far end: TCP to its own stack (needs --ssh: iperf3's server is
    /// started on it).
    Endpoint {
        /// The tester port cabled to the device.
        #[arg(long, value_name = "IFACE[@NETNS]", value_parser = iface)]
        port: Iface,
        #[command(flatten)]
        common: Common,
    },
}

pub fn run(setup: NewSetup) -> CliResult {
    let (kind, ports, common) = match setup {
        NewSetup::Router { a, b, common } => (Setup::Router, vec![a, b], common),
        NewSetup::GatewayPppoe { lan, wan, common } => {
            (Setup::GatewayPppoe, vec![lan, wan], common)
        }
        NewSetup::GatewayDslite { lan, wan, common } => {
            (Setup::GatewayDslite, vec![lan, wan], common)
        }
        NewSetup::Endpoint { port, common } => (Setup::Endpoint, vec![port], common),
    };
    let request = bench::iface::plan_request(kind, &ports, common.speed, common.ssh, common.quick)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let text = bench::plan_new::write(&request).map_err(|e| CliError::Usage(e.to_string()))?;
    let name = common
        .out
        .as_ref()
        .map_or("the written plan".to_string(), |p| p.display().to_string());
    // The plan must check as it is written: a value the options let through that the plan
    // refuses (an ssh host that could become an option) stops here, with the plan's words.
    if let Err(e) = Plan::parse(&text, &name) {
        return Err(CliError::Usage(format!("{e}")));
    }
    match &common.out {
        None => out!("{text}"),
        Some(path) => {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        CliError::Usage(format!(
                            "-o {}: the file exists; plan new never overwrites a plan (remove it, or give another name)",
                            path.display()
                        ))
                    } else {
                        CliError::Failed(format!("-o {}: {e}", path.display()))
                    }
                })?;
            f.write_all(text.as_bytes())
                .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
            errln!("wrote {}; next: wirerate plan check {0}", path.display());
        }
    }
    Ok(())
}
