//! What a built trial sends, as its record keeps it ([`SentStream`]), and the comparison of
//! two built trials ([`differences`]): the deterministic part both front doors must agree on.

use engine::stream::{Limit, StreamConfig};
use wire::linerate::FrameSize;
use wire::units::Pps;

use super::Built;
use crate::results::SentStream;

/// The record of what `config` sends: its frames from `frame` in `size`, at 100 % `max`.
pub fn sent_stream(
    config: &StreamConfig,
    (tx_port, rx_port): (&str, &str),
    frame: &wire::template::StreamSpec,
    size: &FrameSize,
    max: Pps,
) -> SentStream {
    let (frames, duration_ns) = match config.limit {
        Limit::Frames(n) => (Some(n), None),
        Limit::DurationNs(ns) => (None, Some(ns)),
    };
    let f = &config.flows;
    SentStream {
        stream_id: config.id,
        tx_port: tx_port.to_string(),
        rx_port: rx_port.to_string(),
        encap: frame.encap,
        sizes: size
            .parts(frame.encap.ip)
            .iter()
            .map(|p| p.0 as u32)
            .collect(),
        weights: config.weights.clone(),
        lengths: config
            .frames
            .iter()
            .map(|t| (t.len() + wire::encap::FCS) as u32)
            .collect(),
        src: frame.src_ip,
        dst: frame.dst_ip,
        src_port: frame.src_port,
        dst_port: frame.dst_port,
        max_pps: max,
        pps: config.pps(),
        frames,
        duration_ns,
        flows: [
            f.src_ip_count,
            f.dst_ip_count,
            u32::from(f.src_port_count),
            u32::from(f.dst_port_count),
        ],
        random_seed: match f.mode {
            engine::stream::FlowMode::Random { seed } => Some(seed),
            _ => None,
        },
        burst: config.burst,
        burst_gap_ns: config.burst_gap.map(|g| g.as_nanos() as u64),
        tos: frame.tos,
    }
}

/// Where two built trials differ in what they send (empty: identical), field by field: the
/// ports, the engine settings (drain, backend, TX method, threads) and per stream its id,
/// sending and receiving port, frames byte for byte with their weights, flows, burst and gap,
/// limit, reordering, MAC rewriting and rate, and the record of it ([`Built::sent`]). Rates
/// (`pps`, `max_pps`) agree to `rel` (0: exactly; two units of the same rate, e.g. 10 % and
/// 100 Mb/s, agree to rounding). What the DUT does to the frames is not part of a spec.
pub fn differences(x: &Built, y: &Built, rel: f64) -> Vec<String> {
    let mut out = Vec::new();
    let close = |a: f64, b: f64| (a - b).abs() <= rel * a.abs().max(b.abs());
    let (cx, cy) = (&x.config, &y.config);
    diff(&mut out, "ports".into(), &cx.ports, &cy.ports);
    diff(&mut out, "drain".into(), &cx.drain, &cy.drain);
    diff(&mut out, "backend".into(), &cx.backend, &cy.backend);
    diff(
        &mut out,
        "tx method".into(),
        &cx.tx_ring.backend,
        &cy.tx_ring.backend,
    );
    diff(
        &mut out,
        "threads".into(),
        &(cx.tx_threads, cx.rx_threads),
        &(cy.tx_threads, cy.rx_threads),
    );
    diff(&mut out, "expect".into(), &cx.expect, &cy.expect);
    diff(
        &mut out,
        "streams".into(),
        &cx.streams.len(),
        &cy.streams.len(),
    );
    for (a, b) in cx.streams.iter().zip(&cy.streams) {
        let id = a.config.id;
        let (p, q) = (&a.config, &b.config);
        diff(
            &mut out,
            format!("stream {id}: id, ports"),
            &(p.id, a.tx_port, a.rx_port),
            &(q.id, b.tx_port, b.rx_port),
        );
        let bytes = |c: &StreamConfig| {
            c.frames
                .iter()
                .map(|f| f.bytes().to_vec())
                .collect::<Vec<_>>()
        };
        if bytes(p) != bytes(q) {
            out.push(format!("stream {id}: frames differ in their bytes"));
        }
        diff(
            &mut out,
            format!("stream {id}: weights"),
            &p.weights,
            &q.weights,
        );
        diff(&mut out, format!("stream {id}: flows"), &p.flows, &q.flows);
        diff(
            &mut out,
            format!("stream {id}: burst, gap"),
            &(p.burst, p.burst_gap),
            &(q.burst, q.burst_gap),
        );
        diff(&mut out, format!("stream {id}: limit"), &p.limit, &q.limit);
        diff(
            &mut out,
            format!("stream {id}: reorder, MAC rewriting"),
            &(p.reorder_every, p.rewrite_macs),
            &(q.reorder_every, q.rewrite_macs),
        );
        if !close(p.pps().0, q.pps().0) {
            out.push(format!(
                "stream {id}: rate {} ≠ {} frames/s",
                p.pps().0,
                q.pps().0
            ));
        }
    }
    diff(&mut out, "records".into(), &x.sent.len(), &y.sent.len());
    for (a, b) in x.sent.iter().zip(&y.sent) {
        let rates = |s: &SentStream| SentStream {
            pps: Pps(0.0),
            max_pps: Pps(0.0),
            ..s.clone()
        };
        diff(
            &mut out,
            format!("record of stream {}", a.stream_id),
            &rates(a),
            &rates(b),
        );
        if !close(a.pps.0, b.pps.0) || !close(a.max_pps.0, b.max_pps.0) {
            out.push(format!(
                "record of stream {}: rate {} of {} ≠ {} of {} frames/s",
                a.stream_id, a.pps.0, a.max_pps.0, b.pps.0, b.max_pps.0
            ));
        }
    }
    out
}

/// Notes `what` in `out` when `a` and `b` print differently.
fn diff(out: &mut Vec<String>, what: String, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug) {
    let (a, b) = (format!("{a:?}"), format!("{b:?}"));
    if a != b {
        out.push(format!("{what}: {a} ≠ {b}"));
    }
}
