//! `wirerate bench`'s tables: the tester's rates next to the reference sender's, and the
//! receive count against what was put on the wire.

use tester_bench::{
    RxBenchReport, RxRoundFigures, TxBenchConfig, TxBenchReport, VsXdpBenchReport,
    VsXdpTrafficgenReport,
};

use super::{RxArgs, TxArgs};

/// Against xdp-trafficgen: both senders' rates from one counter, per round, the ratio.
pub(super) fn tx_against(a: &TxArgs, cfg: &TxBenchConfig, r: &VsXdpTrafficgenReport) {
    let rounds = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if a.tx_threads > 1 {
        outln!(
            "{} sender threads each, on CPUs {}..={}",
            a.tx_threads,
            a.cpu,
            a.cpu + a.tx_threads - 1
        );
    }
    outln!(
        "bench tx against {}: CPU {}, {} alternating rounds of {:.1} s per sender; the peer drops every frame with XDP for both; both rates from one counter, the sending veth's tx_packets (= frames the peer's XDP program received), medians; load {} → {}",
        r.tool, a.cpu, cfg.rounds, a.duration, r.load_before, r.load_after
    );
    outln!(
        "  wirerate ({:<8}, signed, {:.0} B + FCS) {:>9.0} frames/s   rounds: {}",
        cfg.backend.name(),
        r.wirerate_frame_len,
        r.wirerate_pps,
        rounds(&r.wirerate_rounds)
    );
    outln!(
        "  xdp-trafficgen (static, {:.0} B + FCS) {:>9.0} frames/s   rounds: {}",
        r.tool_frame_len,
        r.tool_pps,
        rounds(&r.tool_rounds)
    );
    outln!(
        "  ratio (wirerate / xdp-trafficgen) {:.2}x (target ≥ 1.0)",
        r.ratio
    );
    if let Some(c) = &r.cpu {
        outln!(
            "  per CPU-second of each sender's own threads (schedstat; they ran {:.0} % and {:.0} % of the window): wirerate {:.0}, xdp-trafficgen {:.0} frames/CPU-s, ratio {:.2}x",
            100.0 * c.wirerate_share,
            100.0 * c.tool_share,
            c.wirerate_pps_per_cpu,
            c.tool_pps_per_cpu,
            c.ratio
        );
    }
    if let Some(ns) = r.wirerate_prog_ns {
        outln!(
            "  wr_tx ran {ns:.1} ns per frame (kernel BPF statistics are on: every program run, both senders' and the peer's, pays two clock reads, so these rates are lower than with them off)"
        );
    }
}

/// Against trafgen: our backend(s) and trafgen per round, the ratio to the target.
pub(super) fn tx(a: &TxArgs, cfg: &TxBenchConfig, r: &TxBenchReport) {
    outln!(
        "bench tx: {}-byte frames, CPU {}, {} alternating rounds of {:.1} s per sender (veth tx_packets; medians)",
        a.size, a.cpu, cfg.rounds, a.duration
    );
    let rounds = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    outln!(
        "  wirerate ({:<8}, signed) {:>9.0} frames/s   rounds: {}",
        cfg.backend.name(),
        r.wirerate_pps,
        rounds(&r.wirerate_rounds)
    );
    outln!(
        "    own count: {} frames accepted in all rounds; {:.0} frames/s, mean batch {:.1}",
        r.wirerate_sent,
        r.wirerate_own_pps,
        r.wirerate_mean_batch
    );
    if let Some((b, p, v)) = &r.other_backend {
        outln!(
            "  wirerate ({:<8}, signed) {:>9.0} frames/s   rounds: {}",
            b.name(),
            p,
            rounds(v)
        );
    }
    if r.trafgen_aborts > 0 {
        outln!(
            "  trafgen aborted {} window(s) on back-pressure (retried)",
            r.trafgen_aborts
        );
    }
    match &r.trafgen_error {
        None => {
            outln!(
                "  trafgen (static frame)       {:>9.0} frames/s   rounds: {}",
                r.trafgen_pps,
                rounds(&r.trafgen_rounds)
            );
            outln!(
                "  ratio ({:<8} / trafgen)  {:>9.2}x (target ≥ {})",
                cfg.backend.name(),
                r.ratio,
                // Issue 4's target for AF_PACKET, issue 8's for XDP.
                if cfg.backend == tester_bench::TxBenchBackend::Xdp {
                    "6x"
                } else {
                    "1.10x"
                }
            );
        }
        Some(e) => outln!("  trafgen: no figure: {e}"),
    }
    if let Some((p, v)) = &r.trafgen_nft {
        outln!(
            "  trafgen, peer dropping at nftables without NAPI (its best case here) {p:.0} frames/s   rounds: {}",
            rounds(v)
        );
        if *p > 0.0 {
            outln!("  ratio (xdp / that trafgen) {:.2}x", r.wirerate_pps / p);
        }
    }
}

/// The receive count: sent, refused, counted, foreign, drops, exact or not.
pub(super) fn rx(a: &RxArgs, r: &RxBenchReport) {
    let (src, rcv) = match (a.source, a.backend) {
        (tester_bench::RxSource::Trafgen, _) => ("trafgen", "trafgen -n"),
        (tester_bench::RxSource::Xdp, _) => ("XDP sender", "XDP sender, N ="),
    };
    let backend = match a.backend {
        tester_bench::RxBackend::AfPacket => "AF_PACKET RX ring",
        tester_bench::RxBackend::Xdp => "XDP receiver",
    };
    outln!(
        "bench rx: {rcv} {} ({}-byte frames) into the {backend}",
        a.frames,
        a.size
    );
    outln!("  {:<26}{:>10}", format!("{src} put on the wire"), r.sent);
    outln!(
        "  refused by the veth       {:>10}   (N − put on the wire; never sent)",
        r.refused
    );
    outln!("  wirerate counted          {:>10}", r.counted);
    if a.source == tester_bench::RxSource::Xdp {
        outln!(
            "    distinct / duplicates   {:>10} / {}",
            r.received,
            r.duplicates
        );
    }
    outln!("  foreign frames            {:>10}", r.foreign);
    if a.backend == tester_bench::RxBackend::AfPacket {
        outln!("  RX ring drops             {:>10}", r.ring_drops);
    }
    outln!("  peer backlog drops        {:>10}", r.peer_rx_dropped);
    if a.backend == tester_bench::RxBackend::Xdp {
        outln!("  sender veth tx_dropped    {:>10}", r.tx_dropped);
        if let Some(pps) = r.source_pps {
            let asked = match r.config.source_pps {
                Some(p) => format!("   (paced at {p:.0})"),
                None => "   (unpaced)".to_string(),
            };
            outln!("  XDP sender achieved       {:>10.0} frames/s{asked}", pps);
        }
        if let Some(f) = r.source {
            outln!(
                "  refusal events            {:>10}   (flushes the veth could not take whole)",
                f.refusal_events
            );
            if r.config.source_pps.is_some() {
                outln!(
                    "  sender's largest catch-up {:>10} frames   (owed after a hold-up, sent back to back)",
                    f.max_catch_up
                );
            }
        }
        if let Some(w) = r.wait {
            let deep = r
                .source_pps
                .filter(|&p| p > 0.0)
                .map(|p| {
                    let ring = tester_bench::VETH_RING_FRAMES;
                    format!(
                        "   (the {ring}-frame ring is {:.0} µs deep at that rate)",
                        ring as f64 / p * 1e6
                    )
                })
                .unwrap_or_default();
            let us = |ns: u64| ns as f64 / 1e3;
            outln!(
                "  frame wait (send to count) p50 {:.1} / p99 {:.1} / p99.9 {:.1} / max {:.1} µs{deep}",
                us(w.p50_ns),
                us(w.p99_ns),
                us(w.p999_ns),
                us(w.max_ns)
            );
        }
        if let Some(n) = &r.napi {
            outln!("  receive poll              {n}");
        }
        if let Some(t) = r.napi_sched {
            outln!(
                "  receive thread            ran {:.3} s in {} runs, waited {:.3} ms for its CPU",
                t.run_ns as f64 / 1e9,
                t.runs,
                t.wait_ns as f64 / 1e6
            );
        }
        if let Some(m) = r.xdp_mode {
            outln!("  XDP mode                  {:>10}", format!("{m:?}"));
        }
        if let Some(alone) = r.xdp_one_at_a_time {
            outln!(
                "  sequence state            {}",
                if alone {
                    "plain loads and stores (one receive queue: frames accounted one at a time)"
                } else {
                    "atomic operations (frames may be accounted on several CPUs at once)"
                }
            );
        }
        if let Some(n) = &r.xdp_note {
            outln!("  note: {n}");
        }
        match r.xdp_ns_per_frame {
            Some(ns) => outln!("  XDP program per frame     {:>10.1} ns", ns),
            None => outln!(
                "  XDP program per frame            n/a (sysctl kernel.bpf_stats_enabled=1 to measure)"
            ),
        }
    }
    outln!("  {:.3} s, {:.0} frames/s", r.seconds, r.rx_pps);
    let once = if a.source == tester_bench::RxSource::Xdp {
        "every sequence number put on the wire counted once, no duplicates"
    } else {
        "every frame put on the wire counted"
    };
    outln!(
        "  counted once: {}   ({once})",
        if r.counted_once { "yes" } else { "NO" }
    );
    outln!(
        "  {}   (exact: counted once, and the veth refused none of the N frames)",
        if r.exact { "EXACT" } else { "NOT EXACT" }
    );
}

/// Against xdp-bench: per round, what the veth refused behind our receiver and behind one that
/// does no work, and whether ours counted every frame put on the wire once.
pub(super) fn rx_against(r: &VsXdpBenchReport) {
    let c = &r.config;
    let rate = match c.source_pps {
        Some(p) => format!("paced at {p:.0} frames/s"),
        None => "unpaced".to_string(),
    };
    outln!(
        "bench rx against {} (drop -p {}): the XDP sender on CPU {} puts {} frames ({} B with FCS, {rate}) into one veth per run; the receive poll is a SCHED_FIFO NAPI thread on CPU {}; {} alternating rounds; load {} → {}",
        r.tool,
        r.tool_op.name(),
        c.tx_cpu,
        c.frames,
        c.frame_len + 4,
        c.rx_cpu.unwrap_or(c.tx_cpu),
        r.rounds.len(),
        r.load_before,
        r.load_after
    );
    outln!(
        "  {:<5} {:<10} {:>12} {:>9} {:>8} {:>13} {:>12} {:>10}  counted once",
        "round",
        "receiver",
        "refused",
        "share",
        "events",
        "sender pps",
        "counted",
        "waited ms"
    );
    let row = |i: usize, who: &str, f: &RxRoundFigures| {
        outln!(
            "  {:<5} {:<10} {:>12} {:>8.2}% {:>8} {:>13.0} {:>12} {:>10}  {}",
            i + 1,
            who,
            f.refused,
            100.0 * f.refused_share(c.frames),
            f.refusal_events,
            f.source_pps,
            f.counted.map_or("n/a".to_string(), |n| n.to_string()),
            f.napi_wait_ns
                .map_or("n/a".to_string(), |w| format!("{:.1}", w as f64 / 1e6)),
            match f.counted_once {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }
        );
    };
    for (i, round) in r.rounds.iter().enumerate() {
        row(i, "wirerate", &round.wirerate);
        row(i, "xdp-bench", &round.tool);
    }
    let floor = if r.tool_op == tester_bench::XdpBenchOp::NoTouch {
        " (the floor: refused while the receive poll was away, whatever a receiver costs)"
    } else {
        ""
    };
    outln!(
        "  refused (median share of N): wirerate {:.2} %, xdp-bench -p {} {:.2} %{floor}",
        100.0 * r.wirerate_refused_share,
        r.tool_op.name(),
        100.0 * r.tool_refused_share
    );
    outln!(
        "  wirerate counted every frame put on the wire exactly once in every round: {}",
        if r.counted_once_every_round {
            "yes"
        } else {
            "NO"
        }
    );
}
