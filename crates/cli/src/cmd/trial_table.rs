//! `wirerate trial`'s table: one line per stream, one per direction and the total, then the
//! senders' and receivers' own counts and the warnings that make a figure untrustworthy.

use engine::trial::TrialReport;

// Rates print through `wire::units`' Display (`1.488 Mpps`, `761.905 Mb/s`): the same SI
// figure with its unit as before the report's rates were typed.

pub fn print_table(r: &TrialReport) {
    outln!(
        "{:>6} {:>5} {:>12} {:>12} {:>10} {:>10} {:>8} {:>6} {:>6} {:>10} {:>10} {:>10}",
        "stream",
        "dir",
        "intended",
        "offered",
        "sent",
        "received",
        "lost",
        "dup",
        "ooo",
        "lat p50",
        "lat p99",
        "lat max"
    );
    for s in &r.streams {
        let (p50, p99, max) =
            s.rx.latency
                .map(|l| {
                    (
                        format!("{:.1}us", l.p50_ns as f64 / 1e3),
                        format!("{:.1}us", l.p99_ns as f64 / 1e3),
                        format!("{:.1}us", l.max_ns as f64 / 1e3),
                    )
                })
                .unwrap_or_else(|| ("-".into(), "-".into(), "-".into()));
        outln!(
            "{:>6} {:>5} {:>12} {:>12} {:>10} {:>10} {:>8} {:>6} {:>6} {:>10} {:>10} {:>10}",
            s.stream_id,
            format!("{}>{}", s.tx_port, s.rx_port),
            s.tx.intended_pps.to_string(),
            s.tx.achieved_pps.to_string(),
            s.tx.sent,
            s.rx.received,
            s.rx.lost.unwrap_or(0),
            s.rx.duplicates,
            s.rx.out_of_order,
            p50,
            p99,
            max
        );
    }
    outln!();
    for t in r.directions.iter().chain(std::iter::once(&r.total)) {
        outln!(
            "{:>8}: sent {} received {} lost {} ({:.4} %)  rx {}  {} L2  {} L1",
            t.label,
            t.sent,
            t.received,
            t.lost,
            if t.sent > 0 {
                t.lost as f64 * 100.0 / t.sent as f64
            } else {
                0.0
            },
            t.rx_pps,
            t.rx_l2_bps,
            t.rx_l1_bps
        );
    }
    for (p, tx) in &r.tx_ports {
        outln!(
            "  port {p} sender: {} flushes, mean batch {:.1}, max batch {}, back-pressured flushes {}, slipped {}",
            tx.flushes,
            tx.mean_batch,
            tx.max_batch,
            tx.backpressure_flushes,
            tx.streams.iter().map(|s| s.slipped).sum::<u64>()
        );
    }
    for p in &r.rx_ports {
        let per_thread = if p.frames_per_thread.len() > 1 {
            format!(
                ", frames per RX thread {}",
                p.frames_per_thread
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            )
        } else {
            String::new()
        };
        outln!(
            "  port {} receiver: foreign {}, unexpected streams {}, ARP/ND answered {}, ring drops {}{per_thread}",
            p.port, p.foreign, p.unexpected_streams, p.answered, p.ring_drops
        );
        if p.ring_drops > 0 {
            outln!(
                "  WARNING: port {} RX ring overflowed: receive counts are not exact",
                p.port
            );
        }
        if p.clock_steps > 0 {
            outln!(
                "  note: port {}: the machine's realtime clock stepped during the trial (largest {:.1} ms); receive times followed it, a frame waiting in the ring across a smaller step may be off by that step",
                p.port,
                p.largest_clock_step_ns as f64 / 1e6
            );
        }
    }
    for s in &r.streams {
        if !s.rx.invalid.is_zero() {
            outln!(
                "  WARNING: stream {} at port {}: {} signed frames not valid for the stream, not counted as received ({})",
                s.stream_id,
                s.rx_port,
                s.rx.invalid.total(),
                s.rx.invalid.describe()
            );
        }
    }
    for s in &r.streams {
        if s.tx.slipped > 0 {
            outln!(
                "  WARNING: stream {} could not keep its schedule ({} frames slipped): tester-limited",
                s.stream_id, s.tx.slipped
            );
        }
    }
}
