//! The identity of the two front doors (issue 18, item 2): `wirerate trial`'s flags and a
//! one-case plan with the same settings build the same trial. "The same" is
//! [`bench::spec::differences`] empty: the same ports and engine settings, and per stream the
//! same id, direction, frames byte for byte, weights, flows, bursts, limit, rate and 100 %, and
//! the same record of it (`engine.streams` / `--json`'s `sent`). Rates given in the same unit
//! must agree exactly; a rate given in another unit (100 Mb/s against 10 % of 1 Gb/s) to
//! rounding (1e-9). What the DUT then does (received, latency) is a measurement, not a setting.
//!
//! The flags go through clap and `trial::spec`, the plan through `Plan::parse`, `Plan::cases`
//! and `bench::spec::from_plan::udp_spec`: each front door's own mapping, one builder.
//! `crates/cli/tests/trial_identity.rs` runs both on a lab and compares the records.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use bench::plan::Plan;
use bench::search::{LineFraction, Probe, ProbeDirection, TrialRequest};
use bench::spec::{differences, Built, TrialSpec};
use clap::Parser;
use engine::port::PortSpec;

use super::trial::TrialArgs;

#[derive(Parser)]
struct Wirerate {
    #[command(flatten)]
    trial: TrialArgs,
}

/// The ports both front doors send between (as `--port-a`/`--port-b` with addresses, or a
/// plan's two ports): the spec is what is sent between them.
fn ports() -> (PortSpec, PortSpec) {
    let mut a = PortSpec::new("a", "wr-a");
    a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
    a.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2));
    a.next_hop_v4 = Some(Ipv4Addr::new(192, 0, 2, 1));
    let mut b = PortSpec::new("b", "wr-b");
    b.ipv4 = Some(Ipv4Addr::new(198, 51, 100, 2));
    b.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 2));
    b.next_hop_v4 = Some(Ipv4Addr::new(198, 51, 100, 1));
    (a, b)
}

fn build(spec: &TrialSpec) -> Built {
    let (a, b) = ports();
    spec.build(&a, &b, None).expect("the spec builds")
}

/// `wirerate trial ARGS` as the command maps them.
fn from_flags(args: &[&str]) -> Built {
    let argv = std::iter::once("trial").chain(args.iter().copied());
    let w = Wirerate::try_parse_from(argv).expect("the flags parse");
    build(&super::trial::spec(&w.trial).expect("the flags map"))
}

/// The first case of `plan` at `request`, as the testbed maps it.
fn from_plan(plan: &str, request: &TrialRequest) -> Built {
    let plan = Plan::parse(plan, "identity.toml").expect("the plan parses");
    let cases = plan.cases().expect("the plan expands");
    assert_eq!(cases.len(), 1, "a one-case plan");
    build(&bench::spec::from_plan::udp_spec(&plan, &cases[0], request).expect("the case maps"))
}

/// A lab plan of one UDP case: `matrix` is the rest of its `[[matrix]]` block.
fn lab_plan(matrix: &str) -> String {
    format!(
        r#"name = "identity"
[topology]
kind = "lab"
lab = "forward"
name = "trialident"
speed = "1G"
[dut]
kind = "lab"
[dut.profiles.forward]
[[matrix]]
protocol = ["udp"]
methodologies = ["forwarding-rate"]
{matrix}
"#
    )
}

/// A plan of one UDP case through a real DUT whose far port adds `encap`.
fn device_plan(encap: &str, matrix: &str) -> String {
    format!(
        r#"name = "identity"
[topology]
kind = "interfaces"
[ports.lan]
interface = "wr-a"
speed = "1G"
ipv4 = "192.0.2.2"
gateway-v4 = "192.0.2.1"
[ports.wan]
interface = "wr-b"
namespace = "wr-wan"
speed = "1G"
ipv4 = "198.51.100.2"
gateway-v4 = "198.51.100.1"
[dut]
kind = "device"
[dut.profiles.cpe]
setup = ["true"]
[[matrix]]
protocol = ["udp"]
methodologies = ["forwarding-rate"]
encap = ["{encap}"]
{matrix}
"#
    )
}

fn at(load: f64, secs: u64) -> TrialRequest {
    TrialRequest::rate(LineFraction(load), Duration::from_secs(secs))
}

/// The settings a plan gives every UDP trial, as flags: its drain and backend.
const PLAN_ENGINE: [&str; 4] = ["--drain", "0.1", "--backend", "auto"];

fn assert_identical(flags: &Built, plan: &Built, rel: f64) {
    let d = differences(flags, plan, rel);
    assert!(d.is_empty(), "the front doors differ:\n{}", d.join("\n"));
}

fn flags(args: &[&str]) -> Built {
    from_flags(&[args, &PLAN_ENGINE[..]].concat())
}

#[test]
fn plain_one_way_is_one_trial_at_every_size() {
    for (ip, size, load) in [
        ("4", "64", 0.5),
        ("4", "512", 0.25),
        ("4", "1518", 1.0),
        ("6", "82", 0.5),
        ("6", "1280", 0.75),
    ] {
        let percent = format!("{}%", load * 100.0);
        let t = flags(&[
            "--encap",
            if ip == "4" { "ipv4" } else { "ipv6" },
            "--size",
            size,
            "--rate",
            &percent,
            "--duration",
            "2",
        ]);
        let p = from_plan(
            &lab_plan(&format!("ip = [{ip}]\nframe-size = [{size}]")),
            &at(load, 2),
        );
        assert_identical(&t, &p, 0.0);
        assert_eq!(t.config.streams.len(), 1);
    }
}

#[test]
fn bidirectional_is_one_trial_both_ways() {
    for (ip, size, load) in [("4", "64", 0.5), ("4", "1518", 0.1), ("6", "512", 1.0)] {
        let percent = format!("{}%", load * 100.0);
        let t = flags(&[
            "--direction",
            "both",
            "--encap",
            if ip == "4" { "ipv4" } else { "ipv6" },
            "--size",
            size,
            "--rate",
            &percent,
            "--duration",
            "3",
        ]);
        let p = from_plan(
            &lab_plan(&format!(
                "ip = [{ip}]\nframe-size = [{size}]\nbidirectional = true"
            )),
            &at(load, 3),
        );
        assert_identical(&t, &p, 0.0);
        assert_eq!(t.sent.len(), 2);
        assert_eq!((t.sent[1].tx_port.as_str(), t.sent[1].stream_id), ("b", 2));
    }
}

/// A plan's `encap = ["vlan"]` is the far link's (the DUT tags): `--far-encap vlan+ipv4`.
#[test]
fn a_far_link_encapsulation_is_one_trial() {
    let t = flags(&[
        "--far-encap",
        "vlan+ipv4",
        "--size",
        "128",
        "--rate",
        "30%",
        "--duration",
        "1",
    ]);
    let p = from_plan(
        &device_plan("vlan", "ip = [4]\nframe-size = [128]"),
        &at(0.3, 1),
    );
    assert_identical(&t, &p, 0.0);
    // 30 % of the tagged frame's line rate, the frames plain as sent.
    assert_eq!(t.sent[0].max_pps.0, 1e9 / ((132.0 + 20.0) * 8.0));
    assert_eq!(t.sent[0].lengths, vec![128]);
}

/// Frames/s and bit/s: an `mtu-probe` trial's own rate, and a bit rate against its fraction.
#[test]
fn rates_in_frames_and_bits_per_second_are_one_trial() {
    let probe = TrialRequest {
        probe: Some(Probe {
            frame_size: 1000,
            direction: ProbeDirection::Forward,
            pps: 1000,
        }),
        ..at(1.0, 1)
    };
    let t = flags(&["--size", "1000", "--rate", "1000pps", "--duration", "1"]);
    let p = from_plan(&lab_plan("ip = [4]\nframe-size = [64]"), &probe);
    // The probe's size is its own; its record's 100 % is of that size like the flags'.
    assert_identical(&t, &p, 0.0);
    // 100 Mb/s on the wire is 10 % of 1 Gb/s, to rounding.
    let t = flags(&["--size", "64", "--rate", "100M", "--duration", "1"]);
    let p = from_plan(&lab_plan("ip = [4]\nframe-size = [64]"), &at(0.1, 1));
    assert_identical(&t, &p, 1e-9);
    let t = flags(&["--size", "64", "--rate", "100M-l2", "--duration", "1"]);
    assert!(!differences(&t, &p, 1e-9).is_empty(), "L2 bit/s are not L1");
}

/// IMIX: the flags, a `--streams` file and a plan's `frame-size = ["imix"]` are one trial.
#[test]
fn imix_from_flags_a_stream_file_and_a_plan_is_one_trial() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.toml");
    std::fs::write(
        &f,
        "[[stream]]\ndirection = \"both\"\nsize = \"imix\"\nrate = \"40%\"\nduration = 2.0\n",
    )
    .unwrap();
    let t = flags(&[
        "--direction",
        "both",
        "--size",
        "imix",
        "--rate",
        "40%",
        "--duration",
        "2",
    ]);
    let s = from_flags(&[&["--streams", f.to_str().unwrap()][..], &PLAN_ENGINE[..]].concat());
    assert_identical(&t, &s, 0.0);
    assert_eq!(t.sent[0].sizes, vec![64, 594, 1518]);
    let p = from_plan(
        &lab_plan("ip = [4]\nframe-size = [\"imix\"]\nbidirectional = true"),
        &at(0.4, 2),
    );
    assert_identical(&t, &p, 0.0);
    assert_eq!(p.sent[1].weights, vec![7, 4, 1]);
    // IPv6 with ToS: the mix starts at IPv6's smallest test frame.
    let t = flags(&[
        "--encap",
        "ipv6",
        "--size",
        "imix",
        "--rate",
        "70%",
        "--duration",
        "1",
        "--tos",
        "32",
    ]);
    let p = from_plan(
        &lab_plan_with_run("tos = 32", "ip = [6]\nframe-size = [\"imix\"]"),
        &at(0.7, 1),
    );
    assert_identical(&t, &p, 0.0);
    assert_eq!(p.sent[0].sizes, vec![82, 594, 1518]);
}

/// Threads per port: `run.tx-threads` / `run.rx-threads` in a plan, the flags on the command.
#[test]
fn threads_per_port_are_one_trial() {
    let t = flags(&[
        "--direction",
        "both",
        "--size",
        "256",
        "--rate",
        "20%",
        "--duration",
        "1",
        "--tx-threads",
        "2",
        "--rx-threads",
        "2",
    ]);
    let plan = lab_plan("ip = [4]\nframe-size = [256]\nbidirectional = true")
        .replace("[dut]\n", "[run]\ntx-threads = 2\nrx-threads = 2\n[dut]\n");
    let p = from_plan(&plan, &at(0.2, 1));
    assert_identical(&t, &p, 0.0);
    assert_eq!((p.config.tx_threads, p.config.rx_threads), (2, 2));
}

/// `lab_plan(matrix)` with `run` as its `[run]` table's body.
fn lab_plan_with_run(run: &str, matrix: &str) -> String {
    lab_plan(matrix).replace("[dut]\n", &format!("[run]\n{run}\n[dut]\n"))
}

/// Flows: `run.src-ips` … `run.random-seed` are `--src-ips` … `--random-seed` (RFC 4814
/// pseudorandom fields), and a block's `flows` dimension is `--src-ports`.
#[test]
fn flows_and_a_random_seed_are_one_trial() {
    let t = flags(&[
        "--size",
        "128",
        "--rate",
        "20%",
        "--duration",
        "1",
        "--src-ips",
        "4",
        "--dst-ips",
        "2",
        "--src-ports",
        "16",
        "--dst-ports",
        "8",
        "--random-seed",
        "7",
    ]);
    let p = from_plan(
        &lab_plan_with_run(
            "src-ips = 4\ndst-ips = 2\nsrc-ports = 16\ndst-ports = 8\nrandom-seed = 7",
            "ip = [4]\nframe-size = [128]",
        ),
        &at(0.2, 1),
    );
    assert_identical(&t, &p, 0.0);
    assert_eq!(p.sent[0].flows, [4, 2, 16, 8]);
    assert_eq!(p.sent[0].random_seed, Some(7));
    // The dimension, both ways: 1000 source ports stepped, on each stream.
    let t = flags(&[
        "--direction",
        "both",
        "--size",
        "64",
        "--rate",
        "10%",
        "--duration",
        "1",
        "--src-ports",
        "1000",
    ]);
    let p = from_plan(
        &lab_plan("ip = [4]\nframe-size = [64]\nbidirectional = true\nflows = [1000]"),
        &at(0.1, 1),
    );
    assert_identical(&t, &p, 0.0);
    assert_eq!(p.sent[1].flows, [1, 1, 1000, 1]);
}

/// ToS / traffic class: `run.tos`, or a block's `tos` dimension over it, is `--tos`.
#[test]
fn tos_is_one_trial() {
    for (ip, run, dim, tos) in [
        ("4", "tos = 184", "", "184"),
        ("6", "tos = 184", "\ntos = [46]", "46"),
    ] {
        let t = flags(&[
            "--encap",
            if ip == "4" { "ipv4" } else { "ipv6" },
            "--size",
            "256",
            "--rate",
            "25%",
            "--duration",
            "1",
            "--tos",
            tos,
        ]);
        let p = from_plan(
            &lab_plan_with_run(run, &format!("ip = [{ip}]\nframe-size = [256]{dim}")),
            &at(0.25, 1),
        );
        assert_identical(&t, &p, 0.0);
        assert_eq!(p.sent[0].tos.to_string(), tos);
    }
}

/// Bursts and their gap (forwarding-rate trials), and deliberate reordering.
#[test]
fn bursts_gaps_and_reordering_are_one_trial() {
    let t = flags(&[
        "--size",
        "512",
        "--rate",
        "30%",
        "--duration",
        "2",
        "--burst",
        "16",
        "--burst-gap",
        "1ms",
        "--reorder-every",
        "10",
    ]);
    let p = from_plan(
        &lab_plan_with_run(
            "burst = 16\nburst-gap = \"1ms\"\nreorder-every = 10",
            "ip = [4]\nframe-size = [512]",
        ),
        &at(0.3, 2),
    );
    assert_identical(&t, &p, 0.0);
    assert_eq!(
        (p.config.streams[0].config.burst, p.sent[0].burst_gap_ns),
        (16, Some(1_000_000))
    );
    assert_eq!(p.config.streams[0].config.reorder_every, Some(10));
    // Bursts back to back at the average load, with a search.
    let t = flags(&[
        "--size",
        "64",
        "--rate",
        "40%",
        "--duration",
        "1",
        "--burst",
        "32",
    ]);
    let plan = lab_plan_with_run("burst = 32", "ip = [4]\nframe-size = [64]")
        .replace("\"forwarding-rate\"", "\"rfc2544-throughput\"");
    assert_identical(&t, &from_plan(&plan, &at(0.4, 1)), 0.0);
}

/// The TX method and the drain: `run.tx-method` / `run.drain` are `--tx-method` / `--drain`.
#[test]
fn the_tx_method_and_the_drain_are_one_trial() {
    let t = from_flags(&[
        "--size",
        "1518",
        "--rate",
        "50%",
        "--duration",
        "1",
        "--tx-method",
        "sendmmsg",
        "--drain",
        "2.5",
        "--backend",
        "auto",
    ]);
    let p = from_plan(
        &lab_plan_with_run(
            "tx-method = \"sendmmsg\"\ndrain = \"2.5s\"",
            "ip = [4]\nframe-size = [1518]",
        ),
        &at(0.5, 1),
    );
    assert_identical(&t, &p, 0.0);
    assert_eq!(p.config.drain, Duration::from_millis(2500));
    assert_eq!(p.config.tx_ring.backend, engine::tx::TxBackend::Sendmmsg);
    // Another drain is another trial: the comparison sees it.
    let other = from_flags(&[
        "--size",
        "1518",
        "--rate",
        "50%",
        "--duration",
        "1",
        "--tx-method",
        "sendmmsg",
        "--drain",
        "0.1",
        "--backend",
        "auto",
    ]);
    let d = differences(&other, &p, 0.0);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].starts_with("drain"), "{d:?}");
}
