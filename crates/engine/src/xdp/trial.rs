//! Trials on the XDP backend (`--backend xdp`): the receive side of [`crate::trial::run`].
//!
//! The trial's order of events is the same as on AF_PACKET ([`crate::trial`]); only the data
//! path changes:
//!
//! - **Receive.** Before any receive thread or sender starts, [`attach_receivers`] attaches an
//!   [`XdpReceiver`] to every port that expects streams, told exactly those streams. It counts
//!   their frames in the kernel and drops them; everything else goes on to the stack.
//! - **Control.** Each port still gets one AF_PACKET receive thread, expecting no stream: the
//!   XDP program passes ARP/ND (and every other non-test frame) on, so that thread answers
//!   ARP/ND for the port's addresses exactly as on AF_PACKET, and the senders resolve their
//!   next hops the same way ([`crate::trial::prepare_tx`]).
//! - **Transmit.** The sending thread opens [`crate::xdp::tx`] instead of a TX ring, with the
//!   same resolved generators, and starts on the trial's common instant.
//! - **Report.** After the drain time, [`rx_side`] reads the maps into the same
//!   [`StreamRxReport`]s, [`IpdvReport`]s and [`PortRxSummary`]s, so
//!   [`crate::trial::TrialReport`] has the same format and figures on both backends.
//!
//! Several transmit threads per port ([`TrialConfig::tx_threads`]) work as on AF_PACKET:
//! the port's streams are split round-robin and each thread loads its own sender program with
//! its own maps, so no state is shared between them.
//!
//! What the XDP backend cannot do is refused with [`Error::Config`] naming it, before any
//! program is loaded: more than one RX thread per port, more than
//! [`rx::MAX_STREAMS`] streams received on one port, frames above [`tx::MAX_FRAME_LEN`].

use super::rx::{self, XdpReceiver, XdpRxConfig};
use super::tx;
use crate::rx::{IpdvReport, StreamRxReport};
use crate::trial::config::TrialConfig;
use crate::trial::report::{control_ports, tx_of, PortRxSummary, RxDone};
use crate::tx::TxPortReport;
use crate::{Error, Result};

/// Refuses what the XDP backend cannot run, naming it.
pub(crate) fn check(cfg: &TrialConfig) -> Result<()> {
    if cfg.rx_threads > 1 {
        return Err(Error::Config(format!(
            "the XDP backend counts in the kernel on every CPU: --rx-threads above 1 ({}) is \
             for the AF_PACKET backend",
            cfg.rx_threads
        )));
    }
    for s in &cfg.streams {
        if let Some(t) = s.config.frames.iter().find(|t| t.len() > tx::MAX_FRAME_LEN) {
            return Err(Error::Config(format!(
                "stream {}: {}-byte frames are above the XDP backend's largest, {} B (live \
                 frames live in one page); use --backend af_packet for jumbo frames",
                s.config.id,
                t.len(),
                tx::MAX_FRAME_LEN
            )));
        }
    }
    for (p, spec) in cfg.ports.iter().enumerate() {
        let n = cfg.streams.iter().filter(|s| s.rx_port == p).count();
        if n > rx::MAX_STREAMS {
            return Err(Error::Config(format!(
                "port {}: {n} streams received; the XDP receiver counts at most {} per port \
                 (use --backend af_packet)",
                spec.name,
                rx::MAX_STREAMS
            )));
        }
    }
    Ok(())
}

/// Checks `cfg` and attaches one XDP receiver per port that expects streams (`None` for the
/// others), in port order. Adds each port's receive mode to `note`.
pub(crate) fn attach_receivers(
    cfg: &TrialConfig,
    note: &mut String,
) -> Result<Vec<Option<XdpReceiver>>> {
    check(cfg)?;
    let mut out = Vec::with_capacity(cfg.ports.len());
    for (p, spec) in cfg.ports.iter().enumerate() {
        let ids: Vec<(u16, crate::validate::Expect)> = cfg
            .streams
            .iter()
            .filter(|s| s.rx_port == p)
            .map(|s| (s.config.id, cfg.expect_of(&s.config)))
            .collect();
        if ids.is_empty() {
            out.push(None);
            continue;
        }
        // Every frame of the trial is sent after this (receivers attach before senders).
        let not_before = crate::sys::monotonic_ns();
        // Earlier receivers are detached when `out` is dropped on an error.
        let rx_cfg = XdpRxConfig {
            mode: spec.xdp_rx_mode,
            ..XdpRxConfig::default()
        };
        let r = XdpReceiver::attach_with(spec, &ids, not_before, &rx_cfg)?;
        note.push_str(&format!(
            "; {} receives in {} mode",
            spec.name,
            match r.mode() {
                rx::XdpMode::Native => "native XDP",
                rx::XdpMode::Skb => "SKB (generic) XDP",
            }
        ));
        if let Some(why) = r.mode_note() {
            note.push_str(&format!(" ({why})"));
        }
        if r.one_at_a_time() {
            note.push_str(", one frame at a time (one receive queue)");
        }
        out.push(Some(r));
    }
    Ok(out)
}

/// One receive report and one IPDV per trial stream (in order) from the XDP maps, and one
/// summary per port: `foreign` and `unexpected_streams` from the program (which sees every frame first),
/// `answered` and `ring_drops` from the port's AF_PACKET control thread (its ring sees only
/// what the program passed: drops there never touch a test frame's count), and
/// `frames_per_thread` = the test frames the program counted (one entry: the kernel).
pub(crate) fn rx_side(
    cfg: &TrialConfig,
    receivers: &[Option<XdpReceiver>],
    rx_done: &[RxDone],
    tx_done: &[(usize, TxPortReport)],
) -> Result<RxSide> {
    let mut reports = Vec::with_capacity(cfg.streams.len());
    let mut ipdv = Vec::with_capacity(cfg.streams.len());
    for s in &cfg.streams {
        let sent = tx_of(tx_done, s).map(|t| t.sent);
        let rx = receivers
            .get(s.rx_port)
            .and_then(Option::as_ref)
            .ok_or_else(|| Error::Thread(format!("stream {}: no XDP receiver", s.config.id)))?;
        let r = rx.stream_report(s.config.id, sent)?.ok_or_else(|| {
            Error::Thread(format!("stream {}: not expected by its port", s.config.id))
        })?;
        reports.push(r);
        ipdv.push(rx.stream_ipdv(s.config.id)?);
    }
    let mut ports = control_ports(cfg, rx_done);
    for port in &mut ports {
        let Some(i) = cfg.ports.iter().position(|p| p.name == port.port) else {
            continue;
        };
        // A port without a program: its control ring saw everything, as on AF_PACKET.
        if let Some(r) = receivers.get(i).and_then(Option::as_ref) {
            let c = r.port_counters()?;
            port.foreign = c.foreign;
            port.unexpected_streams = c.unexpected_streams;
            port.invalid = Default::default();
            for (s, r) in cfg.streams.iter().zip(&reports) {
                if s.rx_port == i {
                    port.invalid.merge(&r.invalid);
                }
            }
            port.frames_per_thread = vec![c.ours];
        }
    }
    Ok((reports, ipdv, ports))
}

/// Frames the XDP receivers of every port counted as received so far (a map that cannot be
/// read counts none: the drain then waits its whole time, as before it could end early).
pub(crate) fn received_total(receivers: &[Option<XdpReceiver>]) -> u64 {
    receivers
        .iter()
        .flatten()
        .map(|r| r.received_total().unwrap_or(0))
        .sum()
}

/// What [`rx_side`] reads: per trial stream its receive report and IPDV, per port a summary.
pub(crate) type RxSide = (
    Vec<StreamRxReport>,
    Vec<Option<IpdvReport>>,
    Vec<PortRxSummary>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::PortSpec;
    use crate::stream::tests_support::signed_frame;
    use crate::stream::{Limit, Rate, StreamConfig};
    use crate::trial::{self, Backend, TrialStream};
    use std::sync::atomic::AtomicBool;
    use wire::units::Pps;

    fn one_stream(len: usize) -> TrialConfig {
        let config = StreamConfig::single(
            3,
            signed_frame(len, 3),
            Rate::Pps(Pps(1000.0)),
            Limit::Frames(10),
        );
        let ports = vec![
            PortSpec::new("a", "nonexistent0"),
            PortSpec::new("b", "nonexistent1"),
        ];
        let mut cfg = TrialConfig::new(
            ports,
            vec![TrialStream {
                config,
                tx_port: 0,
                rx_port: 1,
            }],
        );
        cfg.backend = Backend::Xdp;
        cfg
    }

    /// What the XDP backend cannot do is refused by name, before any port is touched (the
    /// ports here do not exist: an attach would fail with another error).
    #[test]
    fn unsupported_features_are_refused_by_name() {
        let stop = AtomicBool::new(false);
        let refused = |cfg: &TrialConfig, what: &str| match trial::run(cfg, &stop) {
            Err(Error::Config(m)) => assert!(m.contains(what), "{m}"),
            other => panic!("expected a refusal naming {what}, got {other:?}"),
        };
        let mut cfg = one_stream(64);
        cfg.rx_threads = 2;
        refused(&cfg, "--rx-threads");
        refused(&one_stream(4000), "4000-byte frames");
        let mut cfg = one_stream(64);
        let s = cfg.streams[0].clone();
        cfg.streams = (0..=rx::MAX_STREAMS as u16)
            .map(|i| {
                let mut s = s.clone();
                s.config.id = i + 1;
                s.config.frames = vec![signed_frame(64, i + 1)];
                s
            })
            .collect();
        refused(&cfg, "streams received");
        // Within the limits the check passes (the trial then fails on the missing port),
        // also with several transmit threads.
        assert!(check(&one_stream(64)).is_ok());
        let mut cfg = one_stream(64);
        cfg.tx_threads = 2;
        assert!(check(&cfg).is_ok());
    }
}
