//! The search each methodology of a case runs, built from the plan's settings, and the pause
//! after its trials.

use core::time::Duration;

use super::case::Case;
use super::methodology::{ConnCount, Methodology};
use super::mtu_probe;
use super::vocabulary::{DutKind, Profile, Topology};
use super::Plan;
use crate::search::{
    self, BackToBack, BackToBackConfig, BinaryConfig, BinarySearch, ConnSearch,
    ConnectionRateSearch, ForwardingRate, ForwardingRateConfig, LossCurve, LossCurveConfig,
    MultiGoalConfig, MultiGoalSearch, Search, TableCapacitySearch,
};

/// The longest pause between two trials of a connection methodology without a load
/// (`nat-table-capacity`, `nat-connection-rate`, `nat-teardown-rate`): the DUT's table is
/// emptied before every trial anyway, and their AF_PACKET phases leave nothing on the tester
/// to wait for. `run.settle` exists for what an overloading XDP load leaves behind (the
/// kernel freeing the sender's page pools on the tester CPU), which only `nat-throughput`
/// trials have. A `lab-nat-capacity` run of 2026-11-26, before this bound (95460d1), spent 50 of
/// its 107 trials' seconds in such pauses.
pub const CONN_SETTLE: Duration = Duration::from_millis(200);

impl Plan {
    /// The search for `methodology` in `case`, or `None` for iperf3 (no search: one run per
    /// repetition) and latency (it needs the throughput first: [`search::LatencySearch::at_throughput`]).
    pub fn search(&self, case: &Case, methodology: Methodology) -> Option<Box<dyn Search>> {
        let r = &self.run;
        let m = &self.methodology;
        let built: Result<Box<dyn Search>, search::InvalidConfig> = match methodology {
            Methodology::Rfc2544Throughput => BinarySearch::new(BinaryConfig {
                loss_tolerance: m.loss_tolerance,
                resolution: m.resolution,
                min_load: r.min_load,
                max_load: r.max_load,
                duration: r.trial_duration,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::MultiGoal => MultiGoalSearch::new(MultiGoalConfig {
                goals: m.goals.iter().map(|g| g.resolve(m, r)).collect(),
                min_load: r.min_load,
                max_load: r.max_load,
                phases: None,
                tester_tolerance: r.tester_tolerance,
                time_cap: m.search_time_cap,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::Rfc2544LossCurve => LossCurve::new(LossCurveConfig {
                max_load: r.max_load,
                step: m.loss_curve_step,
                duration: r.trial_duration,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::ForwardingRate => ForwardingRate::new(ForwardingRateConfig {
                load: r.max_load,
                trials: m.forwarding_rate_trials,
                duration: r.trial_duration,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::Rfc2544BackToBack => BackToBack::new(BackToBackConfig {
                max_frames: self.max_burst(case),
                resolution_frames: m.b2b_resolution_frames,
                duration: m.b2b_duration,
                repetitions: m.b2b_repetitions,
                tester_tolerance: r.tester_tolerance,
            })
            .map(|s| Box::new(s) as Box<dyn Search>),
            Methodology::MtuProbe => {
                return mtu_probe::search(&m.mtu_probe, case, r.tester_tolerance)
                    .map(|s| Box::new(s) as Box<dyn Search>)
            }
            Methodology::Rfc2544Latency
            | Methodology::Iperf3
            | Methodology::NatTableCapacity
            | Methodology::NatConnectionRate
            | Methodology::NatTeardownRate
            | Methodology::NatThroughput => return None,
        };
        // Settings were range-checked by the parser, so this only fails on a bug.
        built.ok()
    }

    /// The pause after a trial of `methodology`: `run.settle`, but at most [`CONN_SETTLE`]
    /// for the connection methodologies without a load.
    pub fn settle_after(&self, methodology: Methodology) -> Duration {
        match methodology {
            Methodology::NatTableCapacity
            | Methodology::NatConnectionRate
            | Methodology::NatTeardownRate => self.run.settle.min(CONN_SETTLE),
            _ => self.run.settle,
        }
    }

    /// The connection table size the lab profile of `case` sets (`table-size`), if any.
    pub fn table_size(&self, case: &Case) -> Option<u64> {
        self.dut
            .profiles
            .iter()
            .find(|p| p.name == case.dims.profile)
            .and_then(|p| p.table_size)
    }

    /// The connection search for `methodology` (`nat-table-capacity`, `nat-connection-rate`,
    /// `nat-teardown-rate`, `nat-throughput`) on `case`, or `None` for the others. Settings
    /// were checked by the parser (and `"table"` against the profiles by `plan check`).
    pub fn conn_search(
        &self,
        case: &Case,
        methodology: Methodology,
    ) -> Option<Box<dyn ConnSearch>> {
        let tol = self.run.tester_tolerance;
        let m = &self.methodology;
        match methodology {
            Methodology::NatTeardownRate => {
                search::TeardownRateSearch::new(m.nat_teardown_rate.config(tol))
                    .ok()
                    .map(|s| Box::new(s) as Box<dyn ConnSearch>)
            }
            Methodology::NatThroughput => m
                .nat_throughput
                .config(tol, self.table_size(case))
                .ok()
                .and_then(|c| search::NatThroughputSearch::new(c).ok())
                .map(|s| Box::new(s) as Box<dyn ConnSearch>),
            Methodology::NatTableCapacity => {
                TableCapacitySearch::new(m.nat_table_capacity.config(tol))
                    .ok()
                    .map(|s| Box::new(s) as Box<dyn ConnSearch>)
            }
            Methodology::NatConnectionRate => {
                ConnectionRateSearch::new(m.nat_connection_rate.config(tol))
                    .ok()
                    .map(|s| Box::new(s) as Box<dyn ConnSearch>)
            }
            _ => None,
        }
    }

    /// The methodologies the plan's matrix asks for that the runner cannot execute yet, as
    /// (key, reason) with the key as plan errors spell it (`matrix[0].methodologies[2]`).
    pub fn not_yet_executable(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, mx) in self.matrices.iter().enumerate() {
            for (j, m) in mx.methodologies.iter().enumerate() {
                if let Err(why) = m.executable() {
                    out.push((
                        format!("matrix[{i}].methodologies[{j}]"),
                        format!("`{}` is not yet executable: {why}", m.name()),
                    ));
                }
                // The runner empties the DUT's connection table between trials and reads its
                // counters; it can do both only on the lab's own DUT so far.
                let lab_dut = self.dut.kind == DutKind::Lab
                    && matches!(&self.topology, Topology::Lab { topology, .. } if topology == "forward");
                if m.is_connection() && !lab_dut {
                    out.push((
                        format!("matrix[{i}].methodologies[{j}]"),
                        format!(
                            "`{}` is unsupported for this DUT kind: it runs on the lab's DUT (topology lab = \"forward\", dut kind = \"lab\") only so far, because emptying a real device's connection table between trials{} is not built yet (issue #15)",
                            m.name(),
                            if *m == Methodology::NatTeardownRate {
                                ", deleting it on command and reading its entry count"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
                // `"table"` means the case's configured table: every profile of the block
                // must set one.
                if *m == Methodology::NatThroughput
                    && self
                        .methodology
                        .nat_throughput
                        .connections
                        .iter()
                        .any(|c| matches!(c, ConnCount::Table(_)))
                {
                    let profiles: Vec<&Profile> = self
                        .dut
                        .profiles
                        .iter()
                        .filter(|p| mx.profile.is_empty() || mx.profile.contains(&p.name))
                        .collect();
                    for p in profiles.iter().filter(|p| p.table_size.is_none()) {
                        out.push((
                            "methodology.nat-throughput.connections".to_string(),
                            format!(
                                "`\"table\"` means the configured table size, but profile `{}` (matrix[{i}]) sets no `table-size`",
                                p.name
                            ),
                        ));
                    }
                }
            }
        }
        out
    }

    /// The longest back-to-back burst tried: the whole trial window at line rate.
    fn max_burst(&self, case: &Case) -> u64 {
        let frame = case.frame().and_then(|f| f.fixed()).unwrap_or(64);
        let pps = wire::linerate::max_frame_rate(self.speed(), frame).0;
        ((pps * self.methodology.b2b_duration.as_secs_f64()) as u64).max(2)
    }
}
