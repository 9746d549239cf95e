//! `wirerate pppoe`'s lines: session events as they happen, statistics at the end.

use std::net::Ipv4Addr;

use emulate::ppp::DownReason;
use emulate::pppoe::client::Client;
use emulate::pppoe::server::{Server, ServerEvent};
use emulate::pppoe::{HostileReason, SessionInfo};
use emulate::util::Counter;
use engine::control::ControlPort;
use engine::tun::Tun;

use bench::hand::pppoe::ServerNews;
use bench::session_json as sj;

use super::hand::{emit, print_syn, print_tun_stats};

pub(crate) fn info_text(i: &SessionInfo) -> String {
    let n = &i.negotiated;
    let ip = |a: Option<Ipv4Addr>| a.map_or("-".to_string(), |a| a.to_string());
    format!(
        "session {:#06x} {} <-> {}  MRU ours {} peer {}  auth {:?}  local {} peer {}",
        i.session_id,
        i.local_mac,
        i.peer_mac,
        n.our_mru,
        n.peer_mru,
        n.auth,
        ip(n.local_ipv4),
        ip(n.peer_ipv4)
    )
}

/// Prints what the access concentrator saw as it happens: session up and down lines, the
/// IPv6 provisioning's lease lines, client SYNs.
pub(crate) fn print_server_news(n: ServerNews, json: bool) {
    match n {
        ServerNews::Provision(pe) => super::provision::print_event(json, &pe),
        ServerNews::Syn(s) => print_syn(&s, json),
        ServerNews::Session(ServerEvent::SessionUp {
            info, setup, user, ..
        }) => {
            let mut v = sj::pppoe_info(&info);
            v["event"] = "up".into();
            v["user"] = user.clone().into();
            v["setup_ms"] = (setup.0 as f64 / 1e6).into();
            emit(
                json,
                v,
                format!(
                    "up    {}  user {}  setup {:.1} ms",
                    info_text(&info),
                    user.as_deref().unwrap_or("-"),
                    setup.0 as f64 / 1e6
                ),
            );
        }
        ServerNews::Session(ServerEvent::SessionDown { key, reason }) => emit(
            json,
            serde_json::json!({"event": "down", "session_id": key.session_id,
                "client": key.client.to_string(), "reason": format!("{reason:?}")}),
            format!(
                "down  session {:#06x} {}  {reason:?}",
                key.session_id, key.client
            ),
        ),
        ServerNews::Session(ServerEvent::Data { .. }) => {}
    }
}

pub(crate) fn print_server_stats(srv: &Server, json: bool, port: &ControlPort, tun: Option<&Tun>) {
    let st = &srv.stats;
    let ended = sj::counts(&st.ended);
    let hostile = sj::counts(&st.hostile);
    let setup_mean =
        (st.setup.count > 0).then(|| st.setup.total.0 as f64 / st.setup.count as f64 / 1e6);
    let v = serde_json::json!({
        "event": "stats",
        "padi_rx": st.padi_rx, "pado_tx": st.pado_tx, "padi_unserved": st.padi_unserved,
        "padr_rx": st.padr_rx, "pads_tx": st.pads_tx, "pads_refused": st.pads_refused,
        "padr_repeated": st.padr_repeated, "padt_rx": st.padt_rx, "padt_tx": st.padt_tx,
        "sessions_started": st.sessions_started, "sessions_up_total": st.sessions_up_total,
        "setup_count": st.setup.count,
        "setup_min_ms": st.setup.min.0 as f64 / 1e6,
        "setup_max_ms": st.setup.max.0 as f64 / 1e6,
        "setup_mean_ms": setup_mean,
        "retransmits": st.retransmits, "ended": ended, "after_end": st.after_end,
        "hostile": hostile,
        "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
        "frames_unclaimed": port.stats.rx_unclaimed, "tx_failed": port.stats.tx_failed,
        "tun": tun.map(sj::tun),
    });
    if json {
        outln!("{v}");
        return;
    }
    if let Some(t) = tun {
        print_tun_stats(t);
    }
    outln!(
        "discovery: PADI {} (unserved {}), PADO {}, PADR {} (repeated {}), PADS {} (refused {}), \
         PADT rx {} tx {}",
        st.padi_rx,
        st.padi_unserved,
        st.pado_tx,
        st.padr_rx,
        st.padr_repeated,
        st.pads_tx,
        st.pads_refused,
        st.padt_rx,
        st.padt_tx
    );
    outln!(
        "sessions: started {}, up in total {}, retransmissions {}",
        st.sessions_started,
        st.sessions_up_total,
        st.retransmits
    );
    if let Some(m) = setup_mean {
        outln!(
            "setup (PADR → up): min {:.1} ms, mean {m:.1} ms, max {:.1} ms",
            st.setup.min.0 as f64 / 1e6,
            st.setup.max.0 as f64 / 1e6
        );
    }
    print_endings(&st.ended, st.after_end, &st.hostile);
    outln!(
        "frames: rx {} (not PPPoE {}), tx {} (failed {})",
        port.stats.rx,
        port.stats.rx_unclaimed,
        port.stats.tx,
        port.stats.tx_failed
    );
}

/// The subscriber's statistics: discovery, setup time, ended and refused by reason.
pub(crate) fn print_client_stats(c: &Client, json: bool, port: &ControlPort, tun: Option<&Tun>) {
    let st = &c.stats;
    let v = serde_json::json!({
        "event": "stats",
        "padi_tx": st.padi_tx, "pado_rx": st.pado_rx, "padr_tx": st.padr_tx, "pads_rx": st.pads_rx,
        "padt_rx": st.padt_rx, "padt_tx": st.padt_tx, "retransmits": st.retransmits,
        "setup_ms": st.setup.map(|s| s.0 as f64 / 1e6),
        "ended": sj::counts(&st.ended),
        "after_end": st.after_end,
        "hostile": sj::counts(&st.hostile),
        "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
        "tun": tun.map(sj::tun),
    });
    if json {
        outln!("{v}");
    } else {
        if let Some(t) = tun {
            print_tun_stats(t);
        }
        outln!(
            "discovery: PADI {}, PADO {}, PADR {}, PADS {}, PADT rx {} tx {}; retransmissions {}",
            st.padi_tx,
            st.pado_rx,
            st.padr_tx,
            st.pads_rx,
            st.padt_rx,
            st.padt_tx,
            st.retransmits
        );
        if let Some(s) = st.setup {
            outln!("setup (PADI → up): {:.1} ms", s.0 as f64 / 1e6);
        }
        print_endings(&st.ended, st.after_end, &st.hostile);
    }
}

/// How sessions ended, by reason, and what was refused as hostile: the same lines for the AC
/// and the subscriber.
fn print_endings(ended: &Counter<DownReason>, after_end: u64, hostile: &Counter<HostileReason>) {
    for (k, v) in ended.iter() {
        outln!("ended  {k:?}: {v}");
    }
    if after_end > 0 {
        outln!("after the end (late PADT or Terminate-Ack): {after_end}");
    }
    for (k, v) in hostile.iter() {
        outln!("refused {k:?}: {v}");
    }
}
