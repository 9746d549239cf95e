//! `bench-model`: what a benchmark is and what it found, without running anything on a
//! network. Everything a user's result depends on is here and tested without a network, a
//! lab or the engine's BPF toolchain (issue 18: this crate, `wire`, `emulate`, `lab-model` and
//! `report` build without clang):
//!
//! - [`search`]: RFC 2544, RFC 2889 and MLRsearch-style methodologies and the RFC 9693
//!   connection methodologies as pure state machines that pick the next trial from earlier
//!   outcomes, plus simulated DUTs to drive them in tests.
//! - [`plan`]: the TOML plan file, validated with errors that name file, line and key, and its
//!   expansion into [`plan::Case`]s with stable ids.
//! - [`iperf3`]: parsing `iperf3 -J` output, L4→L2/L1 conversion and command-line building.
//! - [`results`]: the run directory (`run.json`, `trials.jsonl`) that survives `kill -9`.
//! - [`hooks`]: DUT hook commands as data, how they are run, and parsers for the statistics
//!   they print.
//! - [`files`]: opening the user's files (plans, outputs) so that a FIFO or device is refused.
//! - [`port_link`]: what the tester knows of its real ports' links (wire speed, offloads,
//!   its own drop counters) and the label of a figure above line rate.
//! - [`plan_new`]: the commented plan `wirerate plan new` writes for a router, a home gateway
//!   or an endpoint, from what the host says about its interfaces.
//!
//! The `bench` crate executes a plan with these (runner, testbed, ISP sessions, calibration);
//! `report` renders what [`results`] stored.

// No `unsafe` here: system calls live in the `sys` modules of `engine` and `lab`.
#![forbid(unsafe_code)]

pub mod files;
pub mod hooks;
pub mod iperf3;
pub mod line_rate;
pub mod oversize;
pub mod plan;
pub mod plan_new;
pub mod port_link;
pub mod results;
pub mod search;

/// Serialises a [`core::time::Duration`] as fractional seconds, which is what a person reading
/// `trials.jsonl` expects, instead of serde's `{secs, nanos}` pair.
pub(crate) mod secs {
    use core::time::Duration;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom)
    }
}

/// [`secs`] for `Option<Duration>` (absent = `None`).
pub(crate) mod secs_opt {
    use core::time::Duration;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<f64>::deserialize(d)?
            .map(|v| Duration::try_from_secs_f64(v).map_err(serde::de::Error::custom))
            .transpose()
    }
}
