//! How long a plan takes ([`Estimate`]): every search of every case driven against a
//! simulated DUT, with the start-up costs ([`STARTUP`]) the runner's ETA adds.

use serde::{Deserialize, Serialize};

use super::case::Case;
use super::methodology::Methodology;
use super::source::PlanErrors;
use super::stream::DEFAULT_DRAIN;
use super::vocabulary::{DutKind, Topology};
use super::Plan;
use crate::search::{self, LineFraction};

/// Predicted cost of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Cases.
    pub cases: usize,
    /// Trials over all cases and repetitions.
    pub trials: u64,
    /// Profile switches (setup + settle).
    pub profile_switches: usize,
    /// Seconds of trials, settles and profile settles.
    pub seconds: f64,
    /// Seconds of start-up on top ([`Startup`]): the lab, profile loads, the engine's and
    /// iperf3's per-trial start and drain, PPPoE sessions. Hooks are not included.
    pub startup: f64,
}

/// Start-up costs a time estimate adds to trial time. Conservative figures: the lab and
/// trial ones are at or above what `wirerate run` took on a 2-vCPU machine under load
/// (docs/methodology.md lists the measurement), the PPPoE one allows for a slow subscriber.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Startup {
    /// Building the lab (namespaces, veths, addresses, RPS) and removing it.
    pub lab: f64,
    /// Loading one lab profile (one `nft -f`; 10,000 rules take 0.3–0.6 s).
    pub profile: f64,
    /// Per engine trial: receivers attached, next hop resolved, the drain, maps and DUT
    /// counters read (the XDP programs are loaded once per process, packet sockets bound and
    /// closed without waiting for the kernel's grace periods, since issue 36).
    /// `scripts/dev/fixed-cost-check.toml` on 2026-11-29 (319917a, load 1.5): 0.205–0.207 s
    /// between the ends of consecutive lossless trials of a case beyond the trial's own
    /// duration (medians of three runs of 20), of which 0.1 s is the plan's settle; a trial
    /// that lost frames waits its whole drain (100 ms) besides: 0.2 s. (Before: 0.41–0.42 s
    /// with the drain slept whole and sockets waiting, 0.32 s of it start-up; 0.54 s in the
    /// demo with a program load per trial.)
    pub engine_trial: f64,
    /// Per connection trial (RFC 9693) on the lab: the DUT's table emptied and its counters read
    /// three times (a dozen `ip netns exec` processes), three threads set up, both ports
    /// resolving the DUT, the drain, an XDP load's programs. Measured on 2026-11-26 over a whole
    /// `lab-nat-capacity` run at load 6–7: 0.8 s per trial through napt, 1.8–2.1 s through the
    /// 10,000-rule firewall (its nftables commands load the whole ruleset); 1.45 s on average.
    pub conn_trial: f64,
    /// Per iperf3 trial: server started and awaited, SYN capture started and stopped.
    pub iperf3_trial: f64,
    /// Per PPPoE port: discovery, LCP, authentication, IPCP.
    pub pppoe_session: f64,
}

/// The start-up figures `plan check` and the runner's ETA use.
pub const STARTUP: Startup = Startup {
    lab: 3.0,
    profile: 1.0,
    engine_trial: 0.2,
    conn_trial: 1.45,
    iperf3_trial: 1.5,
    pppoe_session: 5.0,
};

/// The DUT a plan's time estimate assumes: it forwards half of line rate.
pub const ESTIMATE_CAPACITY: LineFraction = LineFraction(0.5);

/// How much the estimate's DUT's capacity varies from trial to trial (relative, ±). A sharp
/// DUT predicts too few trials: the demo on a fresh clone of 2ddc443 ran 351 engine and iperf3
/// trials where a sharp DUT predicted 206 (sporadic loss makes the searches re-test); ±2 %
/// predicts 296 and puts the whole estimate within 2 % of that run's 8 m 17 s.
pub const ESTIMATE_NOISE: f64 = 0.02;

/// The stateful DUT a plan's time estimate assumes holds this share of `max-connections`.
pub const ESTIMATE_TABLE_SHARE: f64 = 0.5;

/// … and inserts this share of the connection-rate search's `max-rate`.
pub const ESTIMATE_RATE_SHARE: f64 = 0.25;

/// … and forwards this share of `nat-throughput`'s `max-rate` each way at any N: inside the
/// range, so the estimate counts a whole bisection per N (the lab DUT on the loaded machine
/// forwarded 20–37k of its plan's 150,000 on 2026-11-26).
pub const ESTIMATE_LOAD_SHARE: f64 = 0.2;

impl Plan {
    /// The stateful DUT a plan's time estimate assumes for `case`: its table holds the
    /// profile's `table-size`, or else [`ESTIMATE_TABLE_SHARE`] of `max-connections`, and it
    /// inserts [`ESTIMATE_RATE_SHARE`] of the connection-rate search's `max-rate` (drop-new
    /// policy, no timeouts).
    fn estimate_stateful_dut(&self, case: &Case) -> search::sim::SimStatefulDut {
        let m = &self.methodology;
        search::sim::SimStatefulDut::new(
            self.table_size(case).unwrap_or(
                (m.nat_table_capacity.max_connections as f64 * ESTIMATE_TABLE_SHARE) as u64,
            ),
            m.nat_connection_rate.max_rate * ESTIMATE_RATE_SHARE,
            search::sim::TablePolicy::DropNew,
        )
    }

    /// Predicted trials and seconds of one case (all repetitions, settles included, profile
    /// switches not): each search driven against a simulated DUT forwarding
    /// [`ESTIMATE_CAPACITY`] ± [`ESTIMATE_NOISE`]. The runner uses it for its ETA.
    pub fn case_estimate(&self, case: &Case) -> (u64, f64) {
        let mut trials = 0u64;
        let mut seconds = 0.0;
        for &m in &case.methodologies {
            let settle = self.settle_after(m).as_secs_f64();
            let (t, s) = match m {
                Methodology::Iperf3 => (
                    1,
                    self.methodology.iperf3_duration.as_secs_f64()
                        + self.methodology.iperf3_omit.as_secs_f64(),
                ),
                Methodology::Rfc2544Latency => {
                    let n = self.methodology.latency_trials;
                    (
                        u64::from(n),
                        f64::from(n) * self.methodology.latency_duration.as_secs_f64(),
                    )
                }
                Methodology::NatTableCapacity
                | Methodology::NatConnectionRate
                | Methodology::NatTeardownRate
                | Methodology::NatThroughput => {
                    match self.conn_search(case, m) {
                        Some(mut s) => {
                            let dut = self.estimate_stateful_dut(case);
                            let load_limit =
                                self.methodology.nat_throughput.max_rate * ESTIMATE_LOAD_SHARE;
                            let r = search::drive_conn(s.as_mut(), |t| {
                                let mut o = dut.estimate_trial(t);
                                // The real test in closed form: a tear-down that empties
                                // the table, a load that passes up to the DUT's forwarding.
                                match t.real {
                                    Some(search::RealTest::Teardown) => {
                                        o.teardown = Some(search::TeardownOutcome {
                                            entries_before: o.validation_received,
                                            entries_after: 0,
                                            delete_ns: 2_000_000,
                                            empty_ns: 1_000_000,
                                        })
                                    }
                                    Some(search::RealTest::Load { pps, duration }) => {
                                        let sent = (pps * duration.as_secs_f64()) as u64;
                                        let got = if pps <= load_limit { sent } else { sent / 2 };
                                        o.load = Some(search::LoadOutcome {
                                            intended_pps: wire::units::Pps(pps),
                                            forward_sent: sent,
                                            forward_received: got,
                                            forward_pps: wire::units::Pps(pps),
                                            reverse_sent: sent,
                                            reverse_received: got,
                                            reverse_pps: wire::units::Pps(pps),
                                            ..Default::default()
                                        })
                                    }
                                    None => {}
                                }
                                o
                            });
                            (u64::from(r.trials), r.trial_seconds)
                        }
                        None => (0, 0.0),
                    }
                }
                Methodology::MtuProbe => match self.search(case, m) {
                    // A path whose threshold is one byte below the top: the longest bisection.
                    Some(mut s) => {
                        let top = case
                            .frame()
                            .and_then(|f| f.fixed())
                            .map_or(1518, |b| b as u32)
                            .saturating_sub(1);
                        let dut = search::MtuDut::dropping(top, top);
                        let r = search::drive(s.as_mut(), |t| dut.trial(t));
                        (u64::from(r.trials), r.trial_seconds)
                    }
                    None => (0, 0.0),
                },
                _ => match self.search(case, m) {
                    Some(mut s) => {
                        let mut dut =
                            search::sim::SimDut::noisy(ESTIMATE_CAPACITY, ESTIMATE_NOISE, 7);
                        let r = search::drive(s.as_mut(), |t| dut.trial(t));
                        (u64::from(r.trials), r.trial_seconds)
                    }
                    None => (0, 0.0),
                },
            };
            let reps = u64::from(self.run.repetitions);
            trials += t * reps;
            seconds += (s + t as f64 * settle) * reps as f64;
        }
        (trials, seconds)
    }

    /// Start-up seconds of one case's trials (all repetitions), on top of
    /// [`case_estimate`](Self::case_estimate): [`STARTUP`] per engine and per iperf3 trial
    /// (twice per engine trial for a bidirectional case through an emulated port).
    pub fn case_startup(&self, case: &Case) -> f64 {
        let (trials, _) = self.case_estimate(case);
        let iperf3 = if case.methodologies.contains(&Methodology::Iperf3) {
            u64::from(self.run.repetitions)
        } else {
            0
        };
        // Both ways through an emulated port, each trial is preceded by one of learning
        // frames (crate::testbed): another engine start.
        let learning = case.dims.bidirectional
            && self.ports.iter().take(2).any(|p| {
                p.pppoe.is_some() || p.dslite.is_some() || p.ipoe.is_some() || p.mape.is_some()
            });
        // `engine_trial` counts the default drain; `run.drain` moves it.
        let drain = self.run.stream.drain.as_secs_f64() - DEFAULT_DRAIN.as_secs_f64();
        let per_trial = STARTUP.engine_trial * if learning { 2.0 } else { 1.0 } + drain;
        // Connection trials have their own, larger start-up (STARTUP.conn_trial).
        let conn = if case.methodologies.iter().any(|m| m.is_connection()) {
            let mut c = case.clone();
            c.methodologies.retain(|m| m.is_connection());
            self.case_estimate(&c).0
        } else {
            0
        };
        iperf3 as f64 * STARTUP.iperf3_trial
            + conn as f64 * STARTUP.conn_trial
            + trials.saturating_sub(iperf3 + conn) as f64 * per_trial
    }

    /// Predicted run time: every search driven against a simulated DUT forwarding
    /// [`ESTIMATE_CAPACITY`] ± [`ESTIMATE_NOISE`], plus settle times. Real DUTs differ; the order of
    /// magnitude holds.
    pub fn estimate(&self) -> Result<Estimate, PlanErrors> {
        Ok(self.estimate_cases(&self.cases()?))
    }

    /// [`Plan::estimate`] of the plan's already expanded `cases`.
    pub fn estimate_cases(&self, cases: &[Case]) -> Estimate {
        let mut trials = 0u64;
        let mut seconds = 0.0;
        for case in cases {
            let (t, s) = self.case_estimate(case);
            trials += t;
            seconds += s;
        }
        let mut switches = 0;
        let mut last: Option<&str> = None;
        for c in cases {
            if last != Some(c.dims.profile.as_str()) {
                switches += 1;
                last = Some(&c.dims.profile);
            }
        }
        seconds += switches as f64 * self.run.profile_settle.as_secs_f64();
        let mut startup: f64 = cases.iter().map(|c| self.case_startup(c)).sum();
        startup += match &self.topology {
            Topology::Lab { .. } => STARTUP.lab,
            Topology::Interfaces => 0.0,
        };
        if self.dut.kind == DutKind::Lab {
            startup += switches as f64 * STARTUP.profile;
        }
        startup +=
            self.ports.iter().filter(|p| p.pppoe.is_some()).count() as f64 * STARTUP.pppoe_session;
        Estimate {
            cases: cases.len(),
            trials,
            profile_switches: switches,
            seconds,
            startup,
        }
    }
}
