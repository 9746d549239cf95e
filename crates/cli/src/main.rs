//! The `wirerate` binary: argument parsing and wiring only. Measurement, search and rendering
//! live in the library crates.

// No `unsafe` here: system calls live in the `sys` modules of `engine` and `lab`.
#![forbid(unsafe_code)]

/// `println!` that never panics: once standard output is gone (a closed pipe, `wirerate … |
/// head -1`), the rest is discarded and the command carries on, so a run keeps measuring,
/// records every trial and tears its lab down (Rust ignores SIGPIPE; `println!` would panic).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that never panics (see [`outln`]).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` that never panics: with standard error closed (`2>&-`, a closed pipe) the
/// message is lost, but the command still finishes and cleans up.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod cmd;
mod error;

use clap::{Parser, Subcommand};

/// Router, firewall and home-gateway throughput tester for Linux.
///
/// wirerate generates signed test traffic at wire rate between its ports, measures what comes
/// back (throughput, loss, reordering, latency), and compares it with the theoretical line
/// rate of the frames on each link.
#[derive(Debug, Parser)]
#[command(
    name = "wirerate",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a plan unattended: every case of its matrix, results after every trial, a report.
    Run(cmd::run::RunArgs),
    /// Write a plan for your device (`plan new`), or check one and print its expanded matrix
    /// with a time estimate (`plan check`).
    Plan(cmd::plan::PlanArgs),
    /// Measure the tester's own ceiling per frame size on a direct link (no DUT).
    Calibrate(cmd::calibrate::CalibrateArgs),
    /// Render a run directory as HTML (with charts), CSV, Markdown and JSON.
    Report(cmd::report::ReportArgs),
    /// Compare two runs case by case: improved, regressed or within noise.
    Compare(cmd::compare::CompareArgs),
    /// Theoretical frame and bit rates per frame size for a link speed and encapsulation.
    Linerate(cmd::linerate::LinerateArgs),
    /// Write the frames a stream would send to a pcap file (for Wireshark or tshark).
    Craft(cmd::craft::CraftArgs),
    /// Run one trial: send signed streams between two ports and measure what arrives.
    Trial(Box<cmd::trial::TrialArgs>),
    /// Measure the tester itself: TX and RX frame rates, side by side with trafgen.
    Bench(cmd::bench::BenchArgs),
    /// Build, inspect and tear down the built-in network-namespace lab (the Linux kernel as DUT).
    Lab(cmd::lab::LabArgs),
    /// Play a PPPoE access concentrator or subscriber on one interface (manual use).
    Pppoe(cmd::pppoe::PppoeArgs),
    /// Play a DS-Lite AFTR or B4 on one interface (manual use).
    Dslite(cmd::dslite::DsliteArgs),
    /// Play a MAP-E Border Relay or CE on one interface (manual use).
    Mape(cmd::mape::MapeArgs),
    /// Play the ISP side of an IPoE WAN (DHCPv4, RA + DHCPv6, DNS) on one interface.
    Ipoe(cmd::ipoe::IpoeArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(cmd::completions::CompletionsArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => cmd::run::run(a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Calibrate(a) => cmd::calibrate::run(a),
        Command::Report(a) => cmd::report::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Linerate(a) => cmd::linerate::run(a),
        Command::Craft(a) => cmd::craft::run(a),
        Command::Trial(a) => cmd::trial::run(*a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Lab(a) => cmd::lab::run(a),
        Command::Pppoe(a) => cmd::pppoe::run(a),
        Command::Dslite(a) => cmd::dslite::run(a),
        Command::Mape(a) => cmd::mape::run(a),
        Command::Ipoe(a) => cmd::ipoe::run(a),
        Command::Completions(a) => cmd::completions::run(a),
    };
    if let Err(e) = result {
        errln!("wirerate: {e}");
        std::process::exit(e.exit_code());
    }
}
