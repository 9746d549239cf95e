//! The stream keys of `[run]` and the `flows` / `tos` dimensions: `wirerate trial`'s stream
//! flags in a plan, each refused at its key when it is wrong or cannot apply.

use super::tests::{demo, errors, line_of};
use super::*;
use core::time::Duration;

/// A lab plan of one UDP block running `methodologies`, with `run` as its `[run]` table's
/// body and `matrix` added to the block.
fn plan(run: &str, methodologies: &str, matrix: &str) -> String {
    format!(
        "name = \"s\"\n[topology]\nkind = \"lab\"\nlab = \"forward\"\nspeed = \"1G\"\n[dut]\nkind = \"lab\"\n[dut.profiles.napt]\n[run]\n{run}\n[[matrix]]\nprotocol = [\"udp\"]\nframe-size = [64]\nmethodologies = [{methodologies}]\n{matrix}\n"
    )
}

const FR: &str = "\"forwarding-rate\"";

#[test]
fn stream_keys_default_to_one_plain_stream_and_a_100_ms_drain() {
    let p = Plan::parse(&demo(), "lab-demo.toml").unwrap();
    assert_eq!(p.run.stream, StreamSettings::default());
    assert_eq!(p.run.stream.drain, Duration::from_millis(100));
    assert_eq!(
        (p.run.stream.src_ports, p.run.stream.burst, p.run.stream.tos),
        (1, 1, 0)
    );
    for c in p.cases().unwrap() {
        assert_eq!((c.dims.flows, c.dims.tos), (None, None), "{}", c.id);
    }
}

#[test]
fn every_stream_key_reads_as_the_trial_flag_of_its_name() {
    let text = plan(
        "src-ips = 4\ndst-ips = 2\nsrc-ports = 16\ndst-ports = 8\nrandom-seed = 7\ntos = 184\nburst = 32\nburst-gap = \"500us\"\nreorder-every = 10\ntx-method = \"sendmmsg\"\nbackend = \"af_packet\"\ndrain = \"2s\"",
        FR,
        "",
    );
    let s = Plan::parse(&text, "p").unwrap().run.stream;
    assert_eq!(
        s,
        StreamSettings {
            src_ips: 4,
            dst_ips: 2,
            src_ports: 16,
            dst_ports: 8,
            random_seed: Some(7),
            tos: 184,
            burst: 32,
            burst_gap: Some(Duration::from_micros(500)),
            reorder_every: Some(10),
            tx_method: TxMethod::Sendmmsg,
            drain: Duration::from_secs(2),
        }
    );
    // A drain of 0 is a drain (the receivers stop with the last frame).
    let zero = plan("drain = \"0s\"", FR, "");
    assert_eq!(
        Plan::parse(&zero, "p").unwrap().run.stream.drain,
        Duration::ZERO
    );
}

/// Every bad value is refused at its line and key, one error each, with the bound or the
/// choice it missed.
#[test]
fn bad_stream_values_are_refused_at_their_key() {
    for (line, key, why) in [
        ("src-ips = 0", "run.src-ips", "between 1 and 4294967295"),
        ("dst-ips = 4294967296", "run.dst-ips", "between 1 and"),
        ("src-ports = 0", "run.src-ports", "between 1 and 65535"),
        ("dst-ports = 65536", "run.dst-ports", "between 1 and 65535"),
        ("random-seed = -1", "run.random-seed", "between 0 and"),
        ("tos = 256", "run.tos", "between 0 and 255"),
        ("tos = \"ef\"", "run.tos", "expected an integer"),
        ("burst = 0", "run.burst", "between 1 and 1048576"),
        ("burst = 1048577", "run.burst", "between 1 and 1048576"),
        (
            "burst-gap = \"1ms\"",
            "run.burst-gap",
            "needs `run.burst` of 2",
        ),
        ("burst-gap = \"2\"", "run.burst-gap", "not a duration"),
        ("reorder-every = 1", "run.reorder-every", "between 2 and"),
        (
            "tx-method = \"mmsg\"",
            "run.tx-method",
            "unknown value `mmsg`",
        ),
        ("drain = \"11s\"", "run.drain", "at most 10 s"),
        ("drain = \"soon\"", "run.drain", "not a duration"),
        ("drain = true", "run.drain", "a duration string"),
    ] {
        let text = plan(line, FR, "");
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{line}: {errs:?}");
        assert_eq!(errs[0].key, key, "{line}");
        assert_eq!(errs[0].line, line_of(&text, line), "{line}");
        assert!(errs[0].message.contains(why), "{line}: {}", errs[0].message);
    }
    // A gap of 0 or past an hour, with bursts that could have one.
    for gap in ["\"0ms\"", "\"2h\""] {
        let text = plan(&format!("burst = 4\nburst-gap = {gap}"), FR, "");
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{gap}: {errs:?}");
        assert_eq!(errs[0].key, "run.burst-gap");
        assert!(errs[0].message.contains("above 0 and at most 3600 s"));
    }
    // `sendmmsg` is AF_PACKET's; a plan that always runs XDP never uses it.
    let text = plan("backend = \"xdp\"\ntx-method = \"sendmmsg\"", FR, "");
    let errs = errors(&text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        (errs[0].key.as_str(), errs[0].line),
        ("run.tx-method", line_of(&text, "tx-method"))
    );
    assert!(errs[0].message.contains("backend = \"af_packet\""));
    let typo = plan("drian = \"1s\"", FR, "");
    assert_eq!(
        errors(&typo)[0].hint.as_deref(),
        Some("did you mean `drain`?")
    );
}

/// Keys that cannot apply to what a block runs are refused at the `[run]` key, naming the
/// block and the methodology, with what to do instead.
#[test]
fn stream_keys_a_block_cannot_use_are_refused_with_the_block() {
    for (run, methodologies, key) in [
        (
            "reorder-every = 4",
            "\"rfc2544-throughput\"",
            "run.reorder-every",
        ),
        (
            "burst = 8\nburst-gap = \"1ms\"",
            "\"multi-goal\", \"forwarding-rate\"",
            "run.burst-gap",
        ),
        ("burst = 8", "\"rfc2544-back-to-back\"", "run.burst"),
    ] {
        let text = plan(run, methodologies, "");
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{run}: {errs:?}");
        assert_eq!(errs[0].key, key, "{run}");
        let k = key.trim_start_matches("run.");
        assert_eq!(errs[0].line, line_of(&text, &format!("{k} =")), "{run}");
        assert!(
            errs[0].message.contains("matrix[0] runs"),
            "{}",
            errs[0].message
        );
    }
    // The same keys with forwarding-rate (and bursts without a gap with any search) run.
    for run in [
        "reorder-every = 4",
        "burst = 8\nburst-gap = \"1ms\"",
        "burst = 8",
    ] {
        assert!(Plan::parse(&plan(run, FR, ""), "p").is_ok(), "{run}");
    }
    assert!(Plan::parse(&plan("burst = 8", "\"rfc2544-throughput\"", ""), "p").is_ok());
}

#[test]
fn flows_and_tos_are_dimensions_with_their_own_case_ids() {
    let text = plan("src-ips = 2", FR, "flows = [1, 1000]\ntos = [0, 184]");
    let p = Plan::parse(&text, "p").unwrap();
    let cases = p.cases().unwrap();
    let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "napt/udp4/64B/flows=1/tos=0",
            "napt/udp4/64B/flows=1/tos=184",
            "napt/udp4/64B/flows=1000/tos=0",
            "napt/udp4/64B/flows=1000/tos=184",
        ]
    );
    assert_eq!(
        (cases[3].dims.flows, cases[3].dims.tos),
        (Some(1000), Some(184))
    );
    let env = cases[3].env();
    assert!(env.contains(&("WR_FLOWS".into(), "1000".into())));
    assert!(env.contains(&("WR_TOS".into(), "184".into())));
    // A TCP case of the same block has neither (iperf3 makes its own streams).
    let mixed = demo().replace("protocol = [\"tcp\"]", "protocol = [\"tcp\"]\nflows = [4]");
    let errs = errors(&mixed);
    assert_eq!(errs[0].key, "matrix[2].flows");
    assert!(errs[0].message.contains("this block runs none"));
    // Beside a nat-* methodology, whose trials make their own flows, each value would repeat it.
    let nat = plan(
        "",
        "\"forwarding-rate\", \"nat-throughput\"",
        "tos = [0, 46]",
    );
    let errs = errors(&nat);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "matrix[0].tos");
    assert!(errs[0]
        .message
        .contains("nat-throughput make their own flows"));
}

#[test]
fn bad_flows_and_tos_dimensions_are_refused_at_their_key() {
    for (dim, key, why) in [
        ("flows = [0]", "matrix[0].flows[0]", "between 1 and 65535"),
        (
            "flows = [1, 65536]",
            "matrix[0].flows[1]",
            "between 1 and 65535",
        ),
        ("flows = []", "matrix[0].flows", "must not be empty"),
        ("tos = [256]", "matrix[0].tos[0]", "between 0 and 255"),
        (
            "tos = [\"af11\"]",
            "matrix[0].tos[0]",
            "expected an integer",
        ),
    ] {
        let text = plan("", FR, dim);
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{dim}: {errs:?}");
        assert_eq!(errs[0].key, key, "{dim}");
        assert_eq!(errs[0].line, line_of(&text, dim), "{dim}");
        assert!(errs[0].message.contains(why), "{dim}: {}", errs[0].message);
    }
    // `flows` gives the source ports per case; `run.src-ports` for every case: one of them.
    let text = plan("src-ports = 4", FR, "flows = [16]");
    let errs = errors(&text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "matrix[0].flows");
    assert!(errs[0].message.contains("drop one of the two"));
    // A user dimension of the same name beside the dimension would reach hooks twice.
    let text = plan("", FR, "tos = [4]\n[matrix.vars]\ntos = [\"x\"]");
    let errs = errors(&text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "matrix[0].vars.tos");
}

/// `run.drain` is waited after every engine trial: the estimate counts it.
#[test]
fn a_longer_drain_lengthens_the_estimate_by_its_trials() {
    let base = Plan::parse(&plan("", FR, ""), "p")
        .unwrap()
        .estimate()
        .unwrap();
    let long = Plan::parse(&plan("drain = \"2.1s\"", FR, ""), "p")
        .unwrap()
        .estimate()
        .unwrap();
    assert_eq!(base.trials, long.trials);
    let added = long.startup - base.startup;
    assert!(
        (added - 2.0 * base.trials as f64).abs() < 1e-9,
        "{added} s for {} trials",
        base.trials
    );
}

/// `"imix"` among the frame sizes: one more case per position (`…/imix`), sending the simple
/// IMIX as `wirerate trial --size imix`, its 100 % the mix's path-aware line rate.
#[test]
fn imix_is_a_frame_size() {
    let text = plan("", FR, "").replace("frame-size = [64]", "frame-size = [64, \"imix\"]");
    let p = Plan::parse(&text, "p").unwrap();
    let cases = p.cases().unwrap();
    let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["napt/udp4/64B", "napt/udp4/imix"]);
    let imix = &cases[1];
    assert_eq!(imix.frame(), Some(wire::linerate::FrameSize::Imix));
    assert!(imix
        .env()
        .contains(&("WR_FRAME_SIZE".into(), "imix".into())));
    // 1 Gb/s over the mean wire length of 7 × 64, 4 × 594, 1 × 1518 B (+ 20 B each).
    let mean_l1 = (7.0 * 84.0 + 4.0 * 614.0 + 1538.0) / 12.0;
    assert!((p.line_pps(imix).0 - 1e9 / (mean_l1 * 8.0)).abs() < 1e-6);
    // IPv6: the mix's smallest frame is IPv6's smallest test frame (82 B).
    let v6 = text
        .replace("frame-size", "ip = [6]\nframe-size")
        .replace("[64,", "[82,");
    let p6 = Plan::parse(&v6, "p").unwrap();
    let c6 = p6.cases().unwrap();
    assert_eq!(c6[1].id, "napt/udp6/imix");
    let mean6 = (7.0 * 102.0 + 4.0 * 614.0 + 1538.0) / 12.0;
    assert!((p6.line_pps(&c6[1]).0 - 1e9 / (mean6 * 8.0)).abs() < 1e-6);
}

#[test]
fn imix_where_one_size_is_needed_is_refused_at_frame_size() {
    let typo = plan("", FR, "").replace("frame-size = [64]", "frame-size = [\"imx\"]");
    let errs = errors(&typo);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "matrix[0].frame-size[0]");
    assert_eq!(errs[0].hint.as_deref(), Some("did you mean `imix`?"));
    for m in [
        "\"rfc2544-back-to-back\"",
        "\"mtu-probe\"",
        "\"forwarding-rate\", \"iperf3\"",
        "\"nat-throughput\"",
    ] {
        let text = plan("", m, "").replace("frame-size = [64]", "frame-size = [64, \"imix\"]");
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{m}: {errs:?}");
        assert_eq!(errs[0].key, "matrix[0].frame-size", "{m}");
        assert_eq!(errs[0].line, line_of(&text, "\"imix\""), "{m}");
        assert!(
            errs[0]
                .message
                .contains("put the IMIX in a block without it"),
            "{m}: {}",
            errs[0].message
        );
    }
}

/// The shipped example plans/lab-flows.toml: 1 and 10,000 flows × 64 B and IMIX × forward and
/// NAPT, pseudorandom source ports and ToS 184 for all.
#[test]
fn the_shipped_flows_plan_parses() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/lab-flows.toml"
    ))
    .unwrap();
    let p = Plan::parse(&text, "lab-flows.toml").unwrap();
    let cases = p.cases().unwrap();
    assert_eq!(cases.len(), 8);
    assert_eq!(cases[3].id, "forward/udp4/imix/flows=10000");
    assert_eq!(
        (p.run.stream.random_seed, p.run.stream.tos),
        (Some(4814), 184)
    );
}
