//! Exporters from a run's results to bytes (DESIGN.md §3, §7): a JSON summary, CSV, Markdown,
//! and a self-contained HTML page with hand-written SVG charts; plus `compare` of two runs.
//!
//! Everything here is a pure function. The CLI reads the run directory into a
//! [`model::RunInput`], calls [`analyse()`] once, and writes what the exporters return, so
//! every format shows the same numbers.

// No `unsafe` here: system calls live in the `sys` modules of `engine` and `lab`.
#![forbid(unsafe_code)]

pub(crate) mod analyse;
pub mod compare;
mod compat;
pub mod connections;
pub mod dims;
mod escape;
pub mod finding_list;
pub mod headline;
pub mod html;
pub mod model;
pub mod mtu;
pub mod sporadic;
pub mod stats;
pub mod svg;
pub mod text;

pub use analyse::analyse;
pub use compare::{
    caveats, compare, compare_text, drift, drift_caveats, CompareRow, Drift, Verdict,
};
pub use model::{dut_stats_from_hooks, Analysis, CaseStats, HookRecord, RunInput};

/// File names the report writes into a run directory.
pub const REPORT_HTML: &str = "report.html";
/// See [`REPORT_HTML`].
pub const RESULTS_CSV: &str = "results.csv";
/// See [`REPORT_HTML`].
pub const SUMMARY_MD: &str = "summary.md";
/// See [`REPORT_HTML`].
pub const SUMMARY_JSON: &str = "summary.json";
/// See [`REPORT_HTML`]; written only when the run measured latency.
pub const LATENCY_CSV: &str = "latency.csv";

/// See [`REPORT_HTML`]; written only when the run has back-to-back results.
pub const B2B_CSV: &str = "back-to-back.csv";

/// See [`REPORT_HTML`]; written only when the run has connection (NAT) results.
pub const CONNECTIONS_CSV: &str = "connections.csv";

/// See [`REPORT_HTML`]; written only when the run has `mtu-probe` results.
pub const MTU_CSV: &str = "mtu-probe.csv";

/// Every exported file of one analysis: (file name, bytes).
pub fn render_all(a: &Analysis) -> Vec<(&'static str, Vec<u8>)> {
    let mut files = vec![
        (REPORT_HTML, html::html(a)),
        (RESULTS_CSV, text::csv(a)),
        (SUMMARY_MD, text::markdown(a)),
        (SUMMARY_JSON, text::json(a)),
    ];
    if !a.latency.is_empty() {
        files.push((LATENCY_CSV, text::latency_csv(a)));
    }
    if !a.back_to_back.is_empty() {
        files.push((B2B_CSV, text::b2b_csv(a)));
    }
    if !a.connections.is_empty() {
        files.push((CONNECTIONS_CSV, text::connections_csv(a)));
    }
    if !a.mtu.is_empty() {
        files.push((MTU_CSV, mtu::csv(a)));
    }
    files
}
