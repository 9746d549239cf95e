//! The plan file: what to test, on what, and how — and its expansion into [`Case`]s.
//!
//! A plan is TOML (see `tests/fixtures/lab-demo.toml` and docs/methodology.md). It is checked
//! completely before any traffic is sent: every error names the file, line and key
//! ([`PlanError`]), unknown keys are rejected with a "did you mean" hint, and all errors are
//! reported at once. The plan's `[[matrix]]` blocks expand into cases whose ids are derived from
//! their dimensions, not their position, so `--resume` still recognises finished cases after the
//! plan is reordered.
//!
//! One job per module: `vocabulary` (topology, ports, DUT, run settings, the matrix block),
//! `methodology` (the methodologies and their settings), `dims` (the dimensions' types: a
//! block's values, a case's), `dimension` (the one table of dimensions: key, syntax, case-id
//! segment, hook variable, report column), `case` (one point of the matrix and its record), `load` (reading and checking a plan), `expand` (the matrix into cases),
//! `searches` (the search each methodology of a case runs), `line_rate` (a case's path and its
//! 100 %), `estimate` (how long a plan takes); `parse` checks the TOML.

use serde::{Deserialize, Serialize};

mod case;
mod dimension;
mod dims;
mod estimate;
mod expand;
mod frame_size;
mod ipoe;
mod lan_watch;
mod line_rate;
mod load;
mod mape;
mod methodology;
mod mtu_probe;
mod parse;
mod searches;
mod source;
mod stream;
mod vocabulary;

pub use case::Case;
pub use dimension::{
    columns, dimension, env_name, on_off, spell_encap, Absent, Column, Dimension, Item, Known,
    Refusal, Segment, Syntax, DIMENSIONS,
};
pub use dims::{Dims, Matrix, Protocol};
pub use estimate::{
    Estimate, Startup, ESTIMATE_CAPACITY, ESTIMATE_LOAD_SHARE, ESTIMATE_NOISE, ESTIMATE_RATE_SHARE,
    ESTIMATE_TABLE_SHARE, STARTUP,
};
pub use ipoe::{IpoeSettings, IpoeSettingsError};
pub use lan_watch::WatchedGateway;
pub use mape::MapeSettings;
pub use methodology::{
    ConnCount, ConnectionRateSettings, GoalSetting, Methodology, MethodologySettings,
    NatThroughputSettings, NoTableSize, TableCapacitySettings, TableWord, TeardownRateSettings,
    DEFAULT_IPERF3_OMIT,
};
pub use mtu_probe::MtuProbeSettings;
pub use parse::locate;
pub use searches::CONN_SETTLE;
pub use source::{did_you_mean, line_col, PlanError, PlanErrors};
pub use stream::{StreamSettings, TxMethod, DEFAULT_DRAIN, MAX_DRAIN};
pub use vocabulary::{
    DsliteRole, DsliteSettings, Dut, DutKind, Port, PppAuth, PppoeRole, PppoeSettings, Profile,
    RunSettings, Topology, TxBackend, MAX_THREADS,
};

/// A parsed and checked plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The file the plan was read from (for error messages).
    pub file: String,
    /// Plan name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Lab or real interfaces.
    pub topology: Topology,
    /// Tester ports (required for real interfaces).
    pub ports: Vec<Port>,
    /// The DUT.
    pub dut: Dut,
    /// Run-wide settings.
    pub run: RunSettings,
    /// Methodology settings.
    pub methodology: MethodologySettings,
    /// Matrix blocks.
    pub matrices: Vec<Matrix>,
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_dims;
#[cfg(test)]
mod tests_encap;
#[cfg(test)]
mod tests_ipoe;
#[cfg(test)]
mod tests_mtu;
#[cfg(test)]
mod tests_nat;
#[cfg(test)]
mod tests_ports;
#[cfg(test)]
mod tests_stream;
