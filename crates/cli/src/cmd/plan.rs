//! `wirerate plan check PLAN`: validate a plan, run the preflight checks that create nothing
//! (`bench::runner::host_checks`, `link_checks`), and print its expanded matrix with a time
//! estimate. Nothing is sent and nothing is created. `wirerate plan new` writes a plan
//! (`plan_new`).

use crate::error::{CliError, CliResult};
use bench::plan::Plan;
use std::path::PathBuf;

/// Work with plan files: write one for your device, check one.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    wirerate plan new router --a enp1s0@wr-a --b enp2s0@wr-b -o router.toml\n  \
    wirerate plan new gateway-pppoe --lan enp1s0@wr-lan --wan enp2s0@wr-wan --ssh root@192.168.1.1\n  \
    wirerate plan check router.toml")]
pub struct PlanArgs {
    #[command(subcommand)]
    command: PlanCommand,
}

#[derive(Debug, clap::Subcommand)]
enum PlanCommand {
    /// Write a commented plan for a router, a home gateway or an endpoint, from what this host
    /// says about the interfaces (addresses, next hops, MTU, link speed); `plan check` accepts
    /// it as written.
    #[command(
        after_help = "The ports are IFACE or IFACE@NETNS (an interface inside a network namespace).\n\
Read from the host: each port's first global IPv4/IPv6 address, its next hop (the default\n\
route's gateway, another route's, the one neighbour, else a guess marked CHECK), its MTU and\n\
its link speed (sysfs). A port without a wire speed (a veth, a TUN) needs --speed; figures\n\
above 100 % of it are labelled \"no wire speed on this port\". Without -o the plan goes to\n\
standard output; -o never overwrites a file.\n\n\
Examples:\n  \
    wirerate plan new router --a wrpna@wr-pn-a --b wrpnb@wr-pn-b --speed 1G -o router.toml\n  \
    wirerate plan new gateway-dslite --lan enp1s0 --wan enp2s0@wr-wan\n  \
    wirerate plan new endpoint --port enp1s0 --ssh root@192.0.2.1 --quick"
    )]
    New {
        #[command(subcommand)]
        setup: super::plan_new::NewSetup,
    },
    /// Check a plan (errors name file, line and key) and print its cases and a time estimate.
    Check {
        /// The plan file (TOML).
        plan: PathBuf,
        /// Print only the summary line, not every case.
        #[arg(long)]
        quiet: bool,
        /// Check the file alone, not whether this host can run it (interfaces, ssh, hook
        /// programs): for a plan written for another machine.
        #[arg(long)]
        offline: bool,
    },
}

/// Loads and checks `path`; all errors at once, one per line, as a usage error (exit 2).
/// Returns the plan, its text and its cases, expanded here once for the whole command.
pub fn load(path: &std::path::Path) -> CliResult<(Plan, String, Vec<bench::plan::Case>)> {
    let (plan, cases) =
        Plan::load_expanded(path).map_err(|e| CliError::Usage(format!("plan errors:\n{e}")))?;
    let text = bench::files::read_text(path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    Ok((plan, text, cases))
}

fn duration(secs: f64) -> String {
    let s = secs.round() as u64;
    format!("{}m{:02}s", s / 60, s % 60)
}

/// What the LAN health watch asks during the plan's trials (`[run] lan-watch`).
fn lan_watch_line(p: &Plan) -> String {
    let asks: Vec<String> = p
        .lan_watched_gateways()
        .iter()
        .map(|g| format!("{} asks {}", g.port, g.gateway))
        .collect();
    if !p.run.lan_watch {
        "LAN watch: off ([run] lan-watch = false)".into()
    } else if asks.is_empty() {
        "LAN watch: nothing to ask (no plain port has a gateway-v4 or gateway-v6)".into()
    } else {
        format!(
            "LAN watch: {} (ARP/ND every {} ms during every trial; {} s without an answer flags the trial)",
            asks.join(", "),
            bench::results::LAN_WATCH_PERIOD.as_millis(),
            bench::results::LAN_GAP_THRESHOLD.as_secs_f64()
        )
    }
}

pub fn run(args: PlanArgs) -> CliResult {
    let (plan, quiet, offline) = match args.command {
        PlanCommand::New { setup } => return super::plan_new::run(setup),
        PlanCommand::Check {
            plan,
            quiet,
            offline,
        } => (plan, quiet, offline),
    };
    let (p, text, cases) = load(&plan)?;
    // What `run`'s preflight checks without root, here too, so a plan that checks OK does not
    // fail later for a missing program or interface.
    let (problems, link_notes) = if offline {
        (Vec::new(), Vec::new())
    } else {
        let mut problems = bench::runner::host_checks(&p, &cases);
        let mut links = bench::runner::link_checks(&p);
        problems.append(&mut links.problems);
        (problems, links.notes)
    };
    if !problems.is_empty() {
        let lines: Vec<String> = problems
            .iter()
            .map(|x| x.describe(&p.file, &text))
            .collect();
        return Err(CliError::Usage(format!(
            "plan errors:\n{}",
            lines.join("\n")
        )));
    }
    let est = p.estimate_cases(&cases);
    if let bench::plan::Topology::Interfaces = p.topology {
        let desc: Vec<String> = p
            .ports
            .iter()
            .map(|x| {
                let ns = x
                    .namespace
                    .as_deref()
                    .map_or(String::new(), |n| format!(" in {n}"));
                let role = match (&x.pppoe, &x.dslite, &x.ipoe) {
                    (Some(pp), _, _) => {
                        format!(", PPPoE {:?} MRU {}", pp.role, pp.mru).to_lowercase()
                    }
                    (_, Some(d), _) => format!(", DS-Lite {:?}", d.role).to_lowercase(),
                    (_, _, Some(i)) => format!(
                        ", ipoe server {} (pool {} +{})",
                        i.gateway, i.pool, i.pool_size
                    ),
                    _ => x.mape.as_ref().map_or(String::new(), |m| {
                        format!(
                            ", MAP-E BR {} rule {}/{} {}/{} EA {}",
                            m.address,
                            m.rule_ipv6.0,
                            m.rule_ipv6.1,
                            m.rule_ipv4.0,
                            m.rule_ipv4.1,
                            m.ea_bits
                        )
                    }),
                };
                format!("{} ({}{ns}{role})", x.name, x.interface)
            })
            .collect();
        match desc.len() {
            1 => outln!("ports: {} — the DUT is the endpoint", desc[0]),
            _ => outln!(
                "ports: {} (traffic flows from the first to the second)",
                desc.join(" → ")
            ),
        }
    }
    if let bench::plan::Topology::Interfaces = p.topology {
        outln!("{}", lan_watch_line(&p));
    }
    if !quiet {
        outln!(
            "{:>4}  {:<40} {:<40} {:>7} {:>8}",
            "#",
            "case",
            "methodologies",
            "trials",
            "seconds"
        );
        for (i, c) in cases.iter().enumerate() {
            let (t, s) = p.case_estimate(c);
            let s = s + p.case_startup(c);
            let ms: Vec<&str> = c.methodologies.iter().map(|m| m.name()).collect();
            outln!(
                "{:>4}  {:<40} {:<40} {:>7} {:>8.1}",
                i + 1,
                c.id,
                ms.join(","),
                t,
                s
            );
        }
    }
    // Methodologies that parse and estimate but cannot run yet: the plan is not runnable, so
    // the check fails after showing what it would do.
    let pending = bench::runner::not_yet_executable(&p);
    outln!(
        "{}: {} — {} cases, {} profile switches, ~{} trials, estimated {} = {} of trials and settles + {} of start-up",
        p.name,
        if pending.is_empty() { "OK" } else { "checked, not runnable yet" },
        est.cases,
        est.profile_switches,
        est.trials,
        duration(est.seconds + est.startup),
        duration(est.seconds),
        duration(est.startup),
    );
    if let Some(s) = p.run.stream.describe() {
        outln!("  UDP test streams ([run]): {s}");
    }
    let st = bench::plan::STARTUP;
    outln!(
        "  start-up: lab {:.0} s, {:.0} s per profile load, {:.2} s per engine trial, {:.2} s per connection trial, {:.1} s per iperf3 trial, {:.0} s per PPPoE session; DUT hooks not included",
        st.lab, st.profile, st.engine_trial, st.conn_trial, st.iperf3_trial, st.pppoe_session
    );
    if offline {
        outln!("  checked offline: the file only (not this host's interfaces, ssh, hook programs)");
    } else {
        outln!("  checked here: interfaces and their link speeds, DUT host over ssh, hook programs, iperf3/tcpdump; `run` also probes the kernel features of lab profiles (needs root)");
    }
    for n in &link_notes {
        outln!("  {n}");
    }
    if !pending.is_empty() {
        let lines: Vec<String> = pending.iter().map(|x| x.describe(&p.file, &text)).collect();
        return Err(CliError::Usage(format!(
            "plan errors:\n{}",
            lines.join("\n")
        )));
    }
    Ok(())
}
