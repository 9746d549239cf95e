//! The LAN health watch around every trial (#35 item 5): for each port with a gateway
//! address ([`Plan::lan_watched_gateways`]), `engine::lan_watch` asks the gateway for its MAC
//! every [`LAN_WATCH_PERIOD`] while the trial runs; the log becomes the trial record's
//! `lan_watch` ([`LanWatch::of`]: a silence of at least a second is a gap).

use engine::lan_watch::{NeighborWatch, WatchLog, WatchTarget};
use engine::port::PortSpec;

use crate::plan::Plan;
use crate::results::{LanWatch, Probe, LAN_WATCH_PERIOD};

use super::{port_spec, Testbed};

/// One port the watch asks from, and what it asks.
pub(super) struct WatchedLan {
    port: String,
    spec: PortSpec,
    targets: Vec<WatchTarget>,
}

/// The watches of one trial, running.
pub(super) struct Running(Vec<(String, NeighborWatch)>);

/// The ports of `plan` the watch asks from, each with its gateway addresses.
pub(super) fn watched_lans(plan: &Plan) -> Vec<WatchedLan> {
    let mut out: Vec<WatchedLan> = Vec::new();
    for g in plan.lan_watched_gateways() {
        let target = WatchTarget {
            from: g.from,
            gateway: g.gateway,
        };
        match out.iter_mut().find(|w| w.port == g.port) {
            Some(w) => w.targets.push(target),
            None => {
                let Some(p) = plan.ports.iter().find(|p| p.name == g.port) else {
                    continue;
                };
                out.push(WatchedLan {
                    port: g.port.clone(),
                    spec: port_spec(p, &p.name),
                    targets: vec![target],
                });
            }
        }
    }
    out
}

impl Testbed {
    /// Starts the watch of every watched port for the trial about to run.
    pub(super) fn start_lan_watch(&self) -> Result<Running, LanWatchError> {
        let mut running = Vec::new();
        for w in &self.lan_watch {
            let watch =
                NeighborWatch::start(&w.spec, &w.targets, LAN_WATCH_PERIOD).map_err(|source| {
                    LanWatchError::Start {
                        port: w.port.clone(),
                        source,
                    }
                })?;
            running.push((w.port.clone(), watch));
        }
        Ok(Running(running))
    }

    /// Stops the trial's watches and keeps their records for the runner
    /// ([`crate::executor::TrialExecutor::take_lan_watch`]). A watch that failed mid-trial
    /// is said in the record's place as an error.
    pub(super) fn finish_lan_watch(&mut self, running: Running) -> Result<(), LanWatchError> {
        let mut records = Vec::new();
        for (port, watch) in running.0 {
            let log = watch.finish().map_err(|source| LanWatchError::Finish {
                port: port.clone(),
                source,
            })?;
            records.extend(records_of(&port, &log));
        }
        self.lan_watch_records = records;
        Ok(())
    }
}

/// Why a port's LAN health watch failed around a trial.
#[derive(Debug)]
pub enum LanWatchError {
    /// It could not start (the trial was not run).
    Start { port: String, source: engine::Error },
    /// It failed during the trial.
    Finish { port: String, source: engine::Error },
}

impl std::fmt::Display for LanWatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LanWatchError::Start { port, source } => write!(
                f,
                "LAN watch on port {port}: {source}; nothing was measured (`[run] lan-watch = false` runs without it)"
            ),
            LanWatchError::Finish { port, source } => {
                write!(f, "LAN watch on port {port}: {source}")
            }
        }
    }
}

impl std::error::Error for LanWatchError {}

/// The records of one port's watch log, one per gateway address.
fn records_of(port: &str, log: &WatchLog) -> Vec<LanWatch> {
    log.gateways
        .iter()
        .map(|g| {
            let probes: Vec<Probe> = g
                .probes
                .iter()
                .map(|p| Probe {
                    sent_ms: p.sent_ms,
                    answered: p.answered,
                })
                .collect();
            LanWatch::of(
                port,
                g.target.gateway,
                log.start_unix_ms,
                &probes,
                log.end_ms,
            )
        })
        .collect()
}
