//! `wirerate lab …`: bring the built-in namespace lab up and down, switch the DUT's profile,
//! run commands in its nodes. All the work is in the `lab` crate; this is parsing and display.

use clap::{Args, Subcommand};
use lab::{Lab, LabConfig, LabError, Node, Profile, Topology};

mod print;

use print::{links_line, print_ports, status};

use crate::error::{CliError, CliResult};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    wirerate lab up --profile filter-stateful-100\n  \
    wirerate lab exec a -- ping -c1 203.0.113.2\n  \
    wirerate lab profile napt\n  \
    wirerate lab fastpath on\n  \
    wirerate lab down")]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Create the lab (namespaces wr-NAME-a, wr-NAME-dut, wr-NAME-b joined by veths).
    ///
    /// Running it again on a lab that is up only applies --profile. A lab left half-built by a
    /// crash is rebuilt.
    Up {
        /// forward: A — DUT — B, the DUT routes; endpoint: A — DUT, the DUT is the endpoint;
        /// direct: A — B, no DUT (measures the tester itself).
        #[arg(long, default_value = "forward", value_parser = parse_topology)]
        topology: Topology,
        /// DUT profile to apply (see `wirerate lab profiles`); default forward.
        #[arg(long)]
        profile: Option<String>,
        /// Lab name, so several labs can run side by side.
        #[arg(long, default_value = lab::DEFAULT_NAME)]
        name: String,
    },
    /// Remove a lab. Without --name, remove every wr- namespace on the host that no wirerate
    /// command is using (crash recovery).
    Down {
        /// Remove only this lab.
        #[arg(long)]
        name: Option<String>,
    },
    /// Show the labs on this host: topology, profile, ports and addresses, CPU isolation.
    Status {
        /// Show only this lab.
        #[arg(long)]
        name: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run a command inside a node (a, b or dut), pinned to the tester CPUs (a, b) or the
    /// DUT's CPU (dut). Exits with the command's exit status.
    Exec {
        /// a, b or dut.
        node: String,
        /// The command and its arguments (after `--`).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
        #[arg(long, default_value = lab::DEFAULT_NAME)]
        name: String,
    },
    /// Switch the DUT to another profile without tearing the lab down (atomic). Turns the
    /// fast path off (`fastpath` is forward with the fast path on).
    Profile {
        /// Profile name, e.g. forward, filter-stateless-10000, napt, mss-clamp-1200.
        profile: String,
        #[arg(long, default_value = lab::DEFAULT_NAME)]
        name: String,
    },
    /// Make the lab's links wire-like: shape the tester ports to a line rate (L1 accounting,
    /// TSO/GSO off there) and switch the DUT's segmentation offloads. Without options, show
    /// how they are set. `wirerate run` shapes to the plan's speed by itself.
    Links {
        /// Line rate of the tester ports, e.g. 1G or 100M; `off` removes the shaping.
        #[arg(long)]
        speed: Option<String>,
        /// The DUT's GRO/GSO/TSO: on or off (the lab starts with them off).
        #[arg(long, value_parser = ["on", "off"])]
        offload: Option<String>,
        #[arg(long, default_value = lab::DEFAULT_NAME)]
        name: String,
    },
    /// Switch the DUT's XDP fast path on or off, on top of the active profile.
    ///
    /// The fast path forwards with the kernel's routing and neighbour tables from XDP, so
    /// forwarded packets skip the stack. With forward and mss-clamp-M it forwards everything it
    /// can (TCP SYNs always take the stack); with filter-stateful-N, napt and
    /// napt+filter-stateful-N only packets of flows with a confirmed, established conntrack
    /// entry (NAT applied), like the kernel's flowtable. Refused with filter-stateless-N (every
    /// packet must walk its rules). `lab profile` switches it off. See docs/lab.md.
    Fastpath {
        /// on or off.
        #[arg(value_parser = ["on", "off"])]
        state: String,
        #[arg(long, default_value = lab::DEFAULT_NAME)]
        name: String,
    },
    /// List the DUT profiles, what each does, and whether this kernel supports it.
    Profiles {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Print a stats snapshot of the lab as JSON (nft counters, conntrack, interfaces,
    /// softnet, DUT CPU time).
    Stats {
        #[arg(long, default_value = lab::DEFAULT_NAME)]
        name: String,
    },
}

fn parse_topology(s: &str) -> Result<Topology, String> {
    s.parse::<Topology>().map_err(|e| e.to_string())
}

fn cli_err(e: impl Into<LabError>) -> CliError {
    let e = e.into();
    if e.is_usage() {
        CliError::Usage(e.to_string())
    } else {
        CliError::Failed(e.to_string())
    }
}

fn json<T: serde::Serialize>(v: &T) -> CliResult {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| CliError::Failed(format!("serialising JSON: {e}")))?;
    outln!("{s}");
    Ok(())
}

pub fn run(args: LabArgs) -> CliResult {
    match args.command {
        LabCommand::Up {
            topology,
            profile,
            name,
        } => up(&name, topology, profile.as_deref()),
        LabCommand::Down { name } => {
            let removed = match name {
                Some(n) => {
                    let _lock =
                        lab::LabLock::acquire(&n, "wirerate lab down", lab::lock::SHORT_WAIT)
                            .map_err(cli_err)?;
                    lab::down(&n)
                }
                None => {
                    let (removed, kept) = lab::down_all().map_err(cli_err)?;
                    for (ns, holder) in kept {
                        outln!("kept {ns}: its lab is in use by {holder}");
                    }
                    Ok(removed)
                }
            }
            .map_err(cli_err)?;
            if removed.is_empty() {
                outln!("nothing to remove");
            } else {
                outln!("removed {}", removed.join(" "));
            }
            Ok(())
        }
        LabCommand::Status { name, json: j } => status(name.as_deref(), j),
        LabCommand::Exec {
            node,
            command,
            name,
        } => exec(&name, &node, &command),
        LabCommand::Profile { profile, name } => {
            let p = Profile::parse(&profile).map_err(cli_err)?;
            let _lock = lab::LabLock::acquire(&name, "wirerate lab profile", lab::lock::SHORT_WAIT)
                .map_err(cli_err)?;
            let lab = Lab::attach(&name).map_err(cli_err)?;
            let t0 = std::time::Instant::now();
            lab.apply_profile(&p).map_err(cli_err)?;
            outln!(
                "lab {name}: profile {p} applied in {:.2} s",
                t0.elapsed().as_secs_f64()
            );
            Ok(())
        }
        LabCommand::Links {
            speed,
            offload,
            name,
        } => links(&name, speed.as_deref(), offload.as_deref()),
        LabCommand::Fastpath { state, name } => {
            let on = state == "on";
            let _lock =
                lab::LabLock::acquire(&name, "wirerate lab fastpath", lab::lock::SHORT_WAIT)
                    .map_err(cli_err)?;
            let lab = Lab::attach(&name).map_err(cli_err)?;
            lab.set_fastpath(on).map_err(cli_err)?;
            let profile = lab
                .profile()
                .map_err(cli_err)?
                .map_or("-".to_string(), |p| p.to_string());
            match lab.fastpath_program().map_err(cli_err)? {
                Some(p) => outln!("lab {name}: fast path on ({p} program), profile {profile}"),
                None => outln!("lab {name}: fast path off, profile {profile}"),
            }
            Ok(())
        }
        LabCommand::Profiles { json: j } => {
            let cat = lab::catalogue();
            if j {
                return json(&cat);
            }
            let w = cat.iter().map(|c| c.name.len()).max().unwrap_or(0);
            for c in &cat {
                outln!("{:w$}  {}", c.name, c.description);
                outln!("{:w$}  -> {}", "", c.support);
            }
            Ok(())
        }
        LabCommand::Stats { name } => {
            let lab = Lab::attach(&name).map_err(cli_err)?;
            json(&lab.snapshot().map_err(cli_err)?)
        }
    }
}

fn links(name: &str, speed: Option<&str>, offload: Option<&str>) -> CliResult {
    let speed = match speed {
        None => None,
        Some("off") => Some(None),
        Some(s) => {
            Some(Some(wire::linerate::parse_speed(s).map_err(|e| {
                CliError::Usage(format!("--speed {s}: {e} (or `off`)"))
            })?))
        }
    };
    let lab = Lab::attach(name).map_err(cli_err)?;
    if speed.is_some() || offload.is_some() {
        let _lock = lab::LabLock::acquire(name, "wirerate lab links", lab::lock::SHORT_WAIT)
            .map_err(cli_err)?;
        if let Some(s) = speed {
            lab.set_wire_speed(s.map(|b| b.0.round() as u64))
                .map_err(cli_err)?;
        }
        if let Some(o) = offload {
            lab.set_dut_offload(o == "on").map_err(cli_err)?;
        }
    }
    outln!(
        "lab {name}: {}",
        links_line(&lab.link_state().map_err(cli_err)?)
    );
    Ok(())
}

fn up(name: &str, topology: Topology, profile: Option<&str>) -> CliResult {
    let profile = profile.map(Profile::parse).transpose().map_err(cli_err)?;
    lab::install_interrupt_handler();
    // Concurrent `lab up`s of one lab serialise here: the second finds the lab up and reuses it.
    let _lock =
        lab::LabLock::acquire(name, "wirerate lab up", lab::lock::SHORT_WAIT).map_err(cli_err)?;
    let t0 = std::time::Instant::now();
    let lab = Lab::up(&LabConfig {
        name: name.to_string(),
        topology,
        profile,
    })
    .map_err(cli_err)?;
    let p = lab.profile().map_err(cli_err)?;
    let fp = lab.fastpath_program().map_err(cli_err)?;
    outln!(
        "lab {name} up in {:.2} s: topology {topology}{}{}",
        t0.elapsed().as_secs_f64(),
        p.map(|p| format!(", profile {p}")).unwrap_or_default(),
        fp.map(|p| format!(", fast path on ({p} program)"))
            .unwrap_or_default()
    );
    print_ports(&lab)?;
    Ok(())
}

fn exec(name: &str, node: &str, command: &[String]) -> CliResult {
    let node: Node = node.parse().map_err(cli_err)?;
    let lab = Lab::attach(name).map_err(cli_err)?;
    let argv: Vec<&str> = command.iter().map(String::as_str).collect();
    let status = lab
        .command(node, &argv)
        .map_err(cli_err)?
        .status()
        .map_err(|e| CliError::Failed(format!("running `{}`: {e}", argv.join(" "))))?;
    // Like `ip netns exec`: the command's own exit status is the answer.
    std::process::exit(status.code().unwrap_or(1));
}
