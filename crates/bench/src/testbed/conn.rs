//! One two-phase connection trial (RFC 9693) on the testbed, with the lab DUT's connection
//! table emptied first and its counters read around each phase.

use std::sync::atomic::AtomicBool;

use crate::plan::Case;
use crate::results::{ConnDutCounters, ConnPhases};
use crate::search::{
    ConnOutcome, ConnRate, ConnTrial, FailedSpan, LoadOutcome, RealTest, TeardownOutcome,
};

use super::{dut_delta, Testbed, CONN_SEED, UDP_DRAIN};

/// Why [`Testbed::conn_trial`] measured nothing.
#[derive(Debug)]
pub enum ConnTrialError {
    /// The testbed has no lab DUT (real interfaces: its table cannot be emptied).
    NoLabDut,
    /// No port B to answer (the endpoint topology).
    NoResponder,
    /// Emptying the DUT's connection table failed.
    ResetTable(lab::LabError),
    /// The engine's trial failed.
    Engine(engine::Error),
    /// Deleting the DUT's connections (RFC 9693's tear-down test) failed.
    Teardown(lab::LabError),
}

impl std::fmt::Display for ConnTrialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnTrialError::NoLabDut => f.write_str(
                "connection trials need the lab's DUT (its table is emptied between trials)",
            ),
            ConnTrialError::NoResponder => f.write_str(
                "connection trials need a responder port (the endpoint topology has none)",
            ),
            ConnTrialError::ResetTable(e) => {
                write!(f, "emptying the DUT's connection table: {e}")
            }
            ConnTrialError::Engine(e) => write!(f, "connection trial: {e}"),
            ConnTrialError::Teardown(e) => write!(f, "tearing down the DUT's connections: {e}"),
        }
    }
}

impl std::error::Error for ConnTrialError {}

impl Testbed {
    /// One two-phase connection trial of `case` (engine::nat): port A opens
    /// `trial.connections` connections at `trial.rate`, port B learns their tuples and answers
    /// each. The lab DUT's connection table is emptied first (`table_size`: the cap to restart,
    /// lab::conntrack) and its counters are read at the start, after the preliminary phase
    /// and at the end.
    pub fn conn_trial(
        &mut self,
        case: &Case,
        trial: &ConnTrial,
        table_size: Option<u64>,
        backend: engine::trial::Backend,
        stop: &AtomicBool,
    ) -> Result<(ConnOutcome, ConnPhases, Option<ConnDutCounters>), ConnTrialError> {
        let lab = self.lab.as_ref().ok_or(ConnTrialError::NoLabDut)?;
        let b = self.b.as_ref().ok_or(ConnTrialError::NoResponder)?;
        lab.reset_conn_table(table_size)
            .map_err(ConnTrialError::ResetTable)?;
        let mut cfg = engine::nat::ConnTrialConfig::new(self.a.clone(), b.clone(), case.dims.ip);
        cfg.frame_size = case.frame().and_then(|f| f.fixed()).unwrap_or(64);
        cfg.connections = trial.connections;
        // A connection rate is also the frame rate of its phase (one frame opens one).
        cfg.rate_pps = wire::units::Pps(trial.rate.0);
        cfg.validation_rate_pps = wire::units::Pps(trial.validation_rate.0);
        cfg.gap = trial.gap;
        cfg.drain = UDP_DRAIN;
        // RFC 4814 pseudorandom tuples (RFC 9693 asks for them), the same order every trial.
        cfg.permutation_seed = Some(CONN_SEED);
        // The preliminary phase on the engine the run asks for (`Auto`: XDP when it can run it).
        cfg.preliminary_backend = backend;
        cfg.load = match trial.real {
            Some(RealTest::Load { pps, duration }) => Some(engine::nat::LoadPhase {
                backend,
                ..engine::nat::LoadPhase::new(wire::units::Pps(pps), duration)
            }),
            _ => None,
        };
        let start = lab.conn_stats().ok();
        let ports_before = self.dut_sample();
        let (mut mid, mut ports_mid) = (None, None);
        let r = engine::nat::run(&cfg, stop, &mut || {
            mid = lab.conn_stats().ok();
            ports_mid = self.dut_sample();
        })
        .map_err(ConnTrialError::Engine)?;
        let end = lab.conn_stats().ok();
        let ports_end = self.dut_sample();
        // RFC 9693's tear-down: right after the validation (and the counters), delete the
        // whole table and time it from inside the DUT's namespace.
        let teardown = match trial.real {
            Some(RealTest::Teardown) => {
                let t = lab
                    .teardown_conn_table()
                    .map_err(ConnTrialError::Teardown)?;
                Some(TeardownOutcome {
                    entries_before: t.entries_before,
                    entries_after: t.entries_after,
                    delete_ns: t.delete_ns,
                    empty_ns: t.empty_ns,
                })
            }
            _ => None,
        };
        let load = r.load.as_ref().map(|l| LoadOutcome {
            intended_pps: l.forward.intended_pps,
            forward_sent: l.forward.sent,
            forward_received: l.forward_received,
            forward_pps: l.forward.achieved_pps,
            reverse_sent: l.reverse.sent,
            reverse_received: l.reverse_received,
            reverse_pps: l.reverse.achieved_pps,
            dut_entries: end.map(|e| e.entries),
            misdirected: l.forward_misdirected + l.reverse_misdirected,
            tester_drops: l.rx_ring_drops,
            engine: Some(load_backend(l.engine)),
            refused_by_dut: l.refused_by_dut,
            short_connections: l
                .forward_short_connections
                .zip(l.reverse_short_connections)
                .map(|(f, r)| f + r),
            sender_priority: l.sender_priority.map(load_priority),
        });
        let dut = match (start, mid, end) {
            (Some(s), Some(m), Some(e)) => Some(ConnDutCounters {
                preliminary: m.since(&s),
                trial: e.since(&s),
                ports: match (&ports_before, &ports_mid) {
                    (Some(b), Some(a)) => Some(dut_delta(b, a, false)),
                    _ => None,
                },
                load_ports: match (&ports_mid, &ports_end, &load) {
                    (Some(b), Some(a), Some(_)) => Some(dut_delta(b, a, true)),
                    _ => None,
                },
            }),
            _ => None,
        };
        let outcome = ConnOutcome {
            connections: trial.connections,
            intended_rate: trial.rate,
            offered_rate: ConnRate(r.preliminary.achieved_pps.0),
            preliminary_sent: r.preliminary.sent,
            preliminary_received: r.learned,
            validation_sent: r.validation.sent,
            validation_received: r.validated,
            failed: r.failed.map(|f| FailedSpan {
                count: f.count,
                first: f.first,
                last: f.last,
            }),
            teardown,
            load,
        };
        let phases = ConnPhases {
            preliminary_sent: r.preliminary.sent,
            preliminary_pps: r.preliminary.achieved_pps,
            preliminary_max_late_ns: r.preliminary.max_late_ns,
            preliminary_refused_by_dut: r.preliminary.refused_by_peer,
            learned: r.learned,
            translated: r.translated,
            learned_duplicates: r.learned_duplicates,
            validation_sent: r.validation.sent,
            validation_pps: r.validation.achieved_pps,
            validation_max_late_ns: r.validation.max_late_ns,
            validated: r.validated,
            misdirected: r.misdirected,
            validated_duplicates: r.validated_duplicates,
            tester_rx_drops: r.rx_ring_drops,
            preliminary_engines: Some(crate::results::PreliminaryEngines {
                sender: load_backend(r.preliminary_engines.sender),
                learner: load_backend(r.preliminary_engines.learner),
                note: r.preliminary_engines.note.clone(),
                sender_priority: r.preliminary_engines.sender_priority.map(load_priority),
            }),
        };
        Ok((outcome, phases, dut))
    }
}

/// The priority a sender thread ran at, as the records name it.
fn load_priority(p: engine::nat::priority::SenderPriority) -> crate::search::LoadPriority {
    use crate::search::LoadPriority as P;
    use engine::nat::priority::SenderPriority as S;
    match p {
        S::Fifo { priority } => P::Fifo { priority },
        S::Nice { nice } => P::Nice { nice },
        S::Unraised => P::Unraised,
    }
}

/// The engine's name for a packet engine, as the records name it.
fn load_backend(e: engine::nat::LoadEngine) -> crate::search::LoadBackend {
    match e {
        engine::nat::LoadEngine::AfPacket => crate::search::LoadBackend::AfPacket,
        engine::nat::LoadEngine::Xdp => crate::search::LoadBackend::Xdp,
    }
}
