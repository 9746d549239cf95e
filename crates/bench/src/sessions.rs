//! Subscriber scale: many PPPoE sessions at once from one port against an access concentrator
//! (ours with a subscriber table, or a real BRAS), and how fast they came up — the benchmark
//! behind `wirerate pppoe client --sessions N`.
//!
//! The fleet ([`emulate::pppoe::fleet`]) is the sans-I/O part; this module is its socket loop
//! (one [`ControlPort`]), its stopping rules (every session up or failed, a time limit, the
//! caller's stop) and the subscriber table file.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::BenchError;
use emulate::pppoe::client::ClientEvent;
use emulate::pppoe::fleet::{ClientFleet, FleetConfig, SetupStats};
use emulate::pppoe::subscribers::SubscriberTable;
use engine::control::{self, ControlPort, ControlPortStats};
use engine::port::PortSpec;
use wire::ethernet::MacAddr;

/// Reads and parses a subscriber table; errors read `FILE:LINE: what is wrong`. A FIFO or
/// device is refused before a byte is read (it would hang the command).
pub fn load_subscribers(path: &Path) -> Result<SubscriberTable, BenchError> {
    let read = || -> std::io::Result<Vec<u8>> {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut crate::files::open_regular(path)?, &mut b)?;
        Ok(b)
    };
    let bytes = read().map_err(|e| {
        BenchError::Usage(format!(
            "{}: cannot read the subscriber table: {e}",
            path.display()
        ))
    })?;
    let t = SubscriberTable::parse(&bytes)
        .map_err(|e| BenchError::Usage(format!("{}:{}: {}", path.display(), e.line, e.message)))?;
    if t.is_empty() {
        return Err(BenchError::Usage(format!(
            "{}: no subscribers (one `USER PASSWORD [ipv4=…] [prefix=…]` per line)",
            path.display()
        )));
    }
    Ok(t)
}

/// When the fleet stops.
#[derive(Debug, Clone, Copy)]
pub struct FleetLimits {
    /// Give up on sessions not up or failed by then (counted as pending).
    pub settle_within: Duration,
    /// Keep every session up this long after all settled (0: close at once).
    pub hold: Duration,
}

/// One session as it stood when the fleet settled (or gave up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionResult {
    pub index: usize,
    pub user: String,
    pub mac: MacAddr,
    /// Up: the session id, the IPCP address (None: IPv6 only) and the setup time.
    pub session_id: Option<u16>,
    pub ipv4: Option<std::net::Ipv4Addr>,
    pub setup: Option<Duration>,
    /// Not up: why (`Down(reason)`) or where it was still stuck.
    pub state: String,
}

/// What a fleet run measured.
#[derive(Debug, Clone)]
pub struct FleetRun {
    /// At the moment every session had settled (or the limit passed).
    pub setup: SetupStats,
    pub sessions: Vec<SessionResult>,
    /// Sessions that were still up at the end and went down when closed.
    pub closed: usize,
    pub port: ControlPortStats,
    /// Whether every session settled before the limit.
    pub settled: bool,
}

/// Runs a fleet of subscribers on `spec` until every session is up or failed (or
/// `limits.settle_within`, or `stop()`), holds them `limits.hold`, closes them (LCP
/// Terminate + PADT) and returns the statistics. `on_event` sees every session event as it
/// happens (session index, event).
pub fn run_fleet(
    spec: &PortSpec,
    cfg: FleetConfig,
    limits: FleetLimits,
    stop: &dyn Fn() -> bool,
    mut on_event: impl FnMut(&ClientFleet, usize, &ClientEvent),
) -> Result<FleetRun, engine::Error> {
    let mut port = ControlPort::open(spec)?;
    let mut fleet = ClientFleet::new(cfg);
    let started = Instant::now();
    fleet.start(control::now());
    let mut step = |port: &mut ControlPort, fleet: &mut ClientFleet| -> Result<(), engine::Error> {
        port.step(fleet, Duration::from_millis(20))?;
        for (i, e) in fleet.take_events() {
            on_event(fleet, i, &e);
        }
        Ok(())
    };
    while !fleet.settled() && started.elapsed() < limits.settle_within && !stop() {
        step(&mut port, &mut fleet)?;
    }
    let settled = fleet.settled();
    let setup = fleet.setup_stats();
    let sessions = fleet
        .outcomes()
        .map(|o| SessionResult {
            index: o.index,
            user: o.user.to_string(),
            mac: o.mac,
            session_id: o.info.map(|i| i.session_id),
            ipv4: o.info.and_then(|i| i.negotiated.local_ipv4),
            setup: o.setup.map(|d| Duration::from_nanos(d.0)),
            state: format!("{:?}", o.state),
        })
        .collect();
    let held = Instant::now();
    while held.elapsed() < limits.hold && !stop() {
        step(&mut port, &mut fleet)?;
    }
    let closed = fleet.up();
    fleet.close_all(control::now());
    let end = Instant::now() + Duration::from_secs(2);
    while !fleet.all_down() && Instant::now() < end {
        step(&mut port, &mut fleet)?;
    }
    // What did not finish its Terminate exchange in time gets its PADT now (thousands of
    // sessions closing at once outlast the grace on a busy AC).
    if !fleet.all_down() {
        fleet.abort_all(control::now());
        step(&mut port, &mut fleet)?;
    }
    Ok(FleetRun {
        setup,
        sessions,
        closed,
        port: port.stats,
        settled,
    })
}

fn ms(d: wire::units::Nanos) -> f64 {
    d.0 as f64 / 1e6
}

impl SessionResult {
    /// The session as a JSON line (`"event": "session"`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "event": "session", "index": self.index, "user": self.user,
            "mac": self.mac.to_string(), "session_id": self.session_id,
            "ipv4": self.ipv4.map(|a| a.to_string()),
            "setup_ms": self.setup.map(|d| d.as_secs_f64() * 1e3),
            "state": self.state,
        })
    }
}

impl FleetRun {
    /// The statistics as a JSON line (`"event": "setup"`).
    pub fn to_json(&self) -> serde_json::Value {
        let s = &self.setup;
        let failed: serde_json::Map<String, serde_json::Value> = s
            .failed
            .iter()
            .map(|(k, v)| (format!("{k:?}"), v.into()))
            .collect();
        serde_json::json!({
            "event": "setup", "sessions": s.sessions, "came_up": s.came_up, "up": s.up,
            "peak_up": s.peak_up, "pending": s.pending, "failed": failed,
            "settled": self.settled,
            "setup_min_ms": ms(s.min), "setup_mean_ms": ms(s.mean),
            "setup_p50_ms": ms(s.p50), "setup_p90_ms": ms(s.p90),
            "setup_p99_ms": ms(s.p99), "setup_max_ms": ms(s.max),
            "span_ms": ms(s.span), "sessions_per_s": s.sessions_per_s,
            "retransmits": s.retransmits, "closed": self.closed,
            "frames_rx": self.port.rx, "frames_tx": self.port.tx,
            "tx_failed": self.port.tx_failed,
        })
    }

    /// The statistics for a terminal.
    pub fn summary_lines(&self) -> Vec<String> {
        let s = &self.setup;
        let mut v = vec![format!(
            "sessions: {} of {} came up ({} up at once at most), {} pending{}",
            s.came_up,
            s.sessions,
            s.peak_up,
            s.pending,
            if self.settled { "" } else { " (time limit)" }
        )];
        if s.came_up > 0 {
            v.push(format!(
                "setup (PADI → IPCP/IPv6CP up): min {:.1} ms, mean {:.1} ms, p50 {:.1} ms, \
                 p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                ms(s.min),
                ms(s.mean),
                ms(s.p50),
                ms(s.p90),
                ms(s.p99),
                ms(s.max)
            ));
            v.push(format!(
                "rate: {} sessions in {:.3} s = {:.0} sessions/s; retransmissions {}",
                s.came_up,
                s.span.0 as f64 / 1e9,
                s.sessions_per_s,
                s.retransmits
            ));
        }
        for (k, n) in s.failed.iter() {
            v.push(format!("failed {k:?}: {n}"));
        }
        v.push(format!(
            "frames: rx {}, tx {} (failed {}); closed {} sessions",
            self.port.rx, self.port.tx, self.port.tx_failed, self.closed
        ));
        v
    }
}
