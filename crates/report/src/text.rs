//! Text exporters: JSON summary, CSV, Markdown and the terminal table. One number format for
//! all of them ([`num`]), so the same figure reads the same everywhere.

use crate::escape::{csv_field, md_escape};
use crate::model::{
    Analysis, BackToBackRow, LatencyRow, Row, SwitchCell, SwitchRow, SwitchTable, PERCENTILES,
};

/// Number formats shared by every exporter.
pub mod num {
    /// Frames per second: whole frames.
    pub fn pps(x: f64) -> String {
        format!("{x:.0}")
    }
    /// Bits per second as Mb/s with three decimals.
    pub fn mbps(bps: f64) -> String {
        format!("{:.3}", bps / 1e6)
    }
    /// A frame rate, as [`pps`].
    pub fn frames(x: wire::units::Pps) -> String {
        pps(x.0)
    }
    /// A bit rate as Mb/s, as [`mbps`].
    pub fn l2(x: wire::units::BitsPerSec) -> String {
        mbps(x.0)
    }
    /// Percent with two decimals.
    pub fn pct(x: f64) -> String {
        format!("{x:.2}")
    }
    /// Watts with two decimals.
    pub fn watts(x: f64) -> String {
        format!("{x:.2}")
    }
    /// Microseconds with one decimal.
    pub fn us(x: f64) -> String {
        format!("{x:.1}")
    }
}

/// The results table's columns after the dimensions' (which follow `case`): the figures.
/// The dimensions' columns, their order and cells are declared once, in the table of
/// dimensions (`bench_model::plan::columns`); a run has the sparse ones (the switch
/// dimensions) only when some row has a value, a bidirectional run [`DIRECTIONS_COLUMN`] after
/// `percent_line_rate`, a run with a power meter [`POWER_COLUMN`] after `dut_cpu_percent`
/// ([`columns`]).
pub const FIGURE_COLUMNS: [&str; 14] = [
    "methodology",
    "repetitions",
    "status",
    "pps",
    "mbps_l2",
    "max_pps",
    "max_mbps_l2",
    "percent_line_rate",
    "noise_pps",
    "dut_cpu_percent",
    "directions",
    "engine",
    "trial_frames_lost",
    "dut_ingress_drops",
];

/// The results table's columns for this run: `case`, the dimensions' columns, then
/// [`FIGURE_COLUMNS`] with the optional ones where this run has them.
pub fn columns(a: &Analysis) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = vec!["case"];
    let dims: Vec<bench_model::plan::Dims> = a.rows.iter().map(|r| r.dims.plan_dims()).collect();
    for (name, sparse, cell) in bench_model::plan::columns() {
        if !sparse || dims.iter().any(|d| !cell(d).is_empty()) {
            v.push(name);
        }
    }
    v.extend(FIGURE_COLUMNS);
    // Bidirectional cases direction by direction, after the figures, only where there are some.
    if a.rows.iter().any(|r| !r.per_direction.is_empty()) {
        let at = v
            .iter()
            .position(|c| *c == "percent_line_rate")
            .map_or(v.len(), |i| i + 1);
        v.insert(at, DIRECTIONS_COLUMN);
    }
    // A power meter's column, beside the CPU's, only in runs that had one.
    if a.rows.iter().any(|r| r.dut_power_watts.is_some()) {
        let at = v
            .iter()
            .position(|c| *c == "dut_cpu_percent")
            .map_or(v.len(), |i| i + 1);
        v.insert(at, POWER_COLUMN);
    }
    v
}

/// A dimension's cell of a row, as the table of dimensions writes it; `None` when `column`
/// is no dimension's.
fn dimension_cell(d: &crate::model::Dims, column: &str) -> Option<String> {
    bench_model::plan::columns()
        .into_iter()
        .find(|(name, ..)| *name == column)
        .map(|(_, _, cell)| cell(&d.plan_dims()))
}

/// The per-direction column of bidirectional cases (`a→b 595,238 pps (40.00 %); b→a …`, each
/// direction against its own line rate), present only when some row has directions.
pub const DIRECTIONS_COLUMN: &str = "per_direction";

/// A bidirectional row's directions as one cell: `a→b 595238 pps (40.00 %; offered 40.00 %,
/// sent 1000, received 1000, lost 0); b→a …`.
pub fn directions_cell(r: &Row) -> String {
    r.per_direction
        .iter()
        .map(|d| {
            format!(
                "{} {} pps ({} %; {})",
                d.direction,
                num::pps(d.pps.0),
                num::pct(d.percent),
                direction_counts(d)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One direction's offered load and frame counts: `offered 40.00 %, sent 1000, received
/// 1000, lost 0`.
pub fn direction_counts(d: &crate::model::DirectionFigure) -> String {
    format!(
        "offered {} %, sent {}, received {}, lost {}",
        num::pct(d.offered_percent),
        d.sent,
        d.received,
        d.lost
    )
}

/// The DUT power column (watts, mean over the case), present only when a sampler hook with
/// `parse = "power"` measured it.
pub const POWER_COLUMN: &str = "dut_power_watts";

/// The columns of the latency table, in order, shared by CSV, Markdown and HTML.
pub const LATENCY_COLUMNS: [&str; 16] = [
    "case",
    "load_percent",
    "min_us",
    "p50_us",
    "p90_us",
    "p99_us",
    "p99_9_us",
    "mean_us",
    "max_us",
    "samples",
    "typical_latency_us",
    "worst_case_latency_us",
    "pdv_us",
    "ipdv_min_us",
    "ipdv_median_us",
    "ipdv_max_us",
];

/// The latency table's header as Markdown and HTML show it, in [`LATENCY_COLUMNS`] order.
pub fn latency_titles() -> Vec<String> {
    let mut t: Vec<String> = ["case", "load %", "min µs"].map(String::from).to_vec();
    t.extend(PERCENTILES.map(|p| format!("{p} µs")));
    t.extend(["mean µs", "max µs", "samples"].map(String::from));
    t.extend(
        [
            "Typical Latency µs",
            "Worst Case Latency µs",
            "PDV µs",
            "IPDV min µs",
            "IPDV median µs",
            "IPDV max µs",
        ]
        .map(String::from),
    );
    t
}

/// A signed µs figure (IPDV can be negative): `num::us` of its magnitude with the sign.
fn signed_us(v: f64) -> String {
    if v < 0.0 {
        format!("-{}", num::us(-v))
    } else {
        num::us(v)
    }
}

/// The cells of a latency row, in [`LATENCY_COLUMNS`] order (percentiles empty when the trials
/// did not record them).
pub fn latency_cells(l: &LatencyRow) -> Vec<String> {
    let p = |i: usize| l.percentiles_us.map(|p| num::us(p[i])).unwrap_or_default();
    vec![
        l.case_id.clone(),
        num::pct(l.load_percent),
        num::us(l.min_us),
        p(0),
        p(1),
        p(2),
        p(3),
        num::us(l.mean_us),
        num::us(l.max_us),
        l.samples.to_string(),
        l.typical_us.map(num::us).unwrap_or_default(),
        l.worst_case_us.map(num::us).unwrap_or_default(),
        l.pdv_us.map(num::us).unwrap_or_default(),
        l.ipdv_us.map(|i| signed_us(i.min)).unwrap_or_default(),
        l.ipdv_us.map(|i| signed_us(i.median)).unwrap_or_default(),
        l.ipdv_us.map(|i| signed_us(i.max)).unwrap_or_default(),
    ]
}

/// `latency.csv`: one line per case with latency trials.
pub fn latency_csv(a: &Analysis) -> Vec<u8> {
    let mut out = LATENCY_COLUMNS.join(",");
    out.push('\n');
    for l in &a.latency {
        let line: Vec<String> = latency_cells(l).iter().map(|c| csv_field(c)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out.into_bytes()
}

/// The columns of the back-to-back table, in order, shared by CSV, Markdown and HTML.
pub const B2B_COLUMNS: [&str; 7] = [
    "case",
    "repetitions",
    "mean_frames",
    "throughput_pps",
    "implied_buffer_ms",
    "corrected_buffer_ms",
    "corrected_refused",
];

/// The back-to-back table's header as Markdown and HTML show it.
pub const B2B_TITLES: [&str; 7] = [
    "case",
    "repetitions",
    "back-to-back frames (mean)",
    "throughput frames/s",
    "implied DUT buffer time ms",
    "corrected DUT buffer time ms",
    "not corrected because",
];

/// The cells of a back-to-back row, in [`B2B_COLUMNS`] order.
pub fn b2b_cells(b: &BackToBackRow) -> Vec<String> {
    vec![
        b.case_id.clone(),
        b.repetitions.to_string(),
        format!("{:.1}", b.mean_frames),
        b.throughput_pps
            .map(|p| format!("{:.0}", p.0))
            .unwrap_or_default(),
        format!("{:.4}", b.implied_buffer_ms),
        b.corrected_buffer_ms
            .map(|m| format!("{m:.4}"))
            .unwrap_or_default(),
        b.corrected_refused.clone().unwrap_or_default(),
    ]
}

/// `back-to-back.csv`: one line per case with a back-to-back result.
pub fn b2b_csv(a: &Analysis) -> Vec<u8> {
    let mut out = B2B_COLUMNS.join(",");
    out.push('\n');
    for b in &a.back_to_back {
        let line: Vec<String> = b2b_cells(b).iter().map(|c| csv_field(c)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out.into_bytes()
}

/// `connections.csv`: one line per finished connection search (crate::connections).
pub fn connections_csv(a: &Analysis) -> Vec<u8> {
    let mut out = crate::connections::COLUMNS.join(",");
    out.push('\n');
    for r in &a.connections {
        let line: Vec<String> = crate::connections::cells(r)
            .iter()
            .map(|c| csv_field(c))
            .collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out.into_bytes()
}

/// A row's status word: `ok`, `tester-limited`, the label of a figure above line rate (`no
/// wire speed on this port`, `above line rate`), `partial` (fewer repetitions than planned).
pub fn status(r: &Row) -> &'static str {
    if r.tester_limited {
        "tester-limited"
    } else if let Some(a) = r.above_line {
        a.label()
    } else if (r.repetitions as u32) < r.repetitions_planned {
        "partial"
    } else {
        "ok"
    }
}

fn opt<T: ToString>(x: Option<T>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// One cell of a row by column name ([`columns`]); empty where there is no figure or the
/// column is unknown.
pub fn cell(r: &Row, column: &str) -> String {
    match column {
        "case" => r.case_id.clone(),
        "methodology" => r.methodology_label(),
        "repetitions" => r.repetitions.to_string(),
        "status" => status(r).into(),
        "pps" => r.pps.map(num::frames).unwrap_or_default(),
        "mbps_l2" => r.l2_bps.map(num::l2).unwrap_or_default(),
        "max_pps" => num::frames(r.max_pps),
        "max_mbps_l2" => num::l2(r.max_l2_bps),
        "percent_line_rate" => r.percent.map(num::pct).unwrap_or_default(),
        "noise_pps" => num::pps(r.noise_pps.0),
        "dut_cpu_percent" => r.dut_cpu_percent.map(num::pct).unwrap_or_default(),
        "dut_power_watts" => r.dut_power_watts.map(num::watts).unwrap_or_default(),
        "per_direction" => directions_cell(r),
        "directions" => r.directions.to_string(),
        "engine" => r.engine.clone(),
        "trial_frames_lost" => opt(r.trial_frames_lost),
        "dut_ingress_drops" => opt(r.dut_ingress_drops),
        dimension => dimension_cell(&r.dims, dimension).unwrap_or_default(),
    }
}

/// The cells of a row in the order of `columns`.
pub fn cells(r: &Row, columns: &[&str]) -> Vec<String> {
    columns.iter().map(|c| cell(r, c)).collect()
}

/// A switch-table cell as Markdown and HTML show it: `812.345 Mb/s (81.23 %) · CPU 97.00 %`
/// (and `· 7.50 W` with a power meter),
/// with the same number formats as the results table; `TL` without a DUT figure.
pub fn switch_cell(c: Option<&SwitchCell>) -> String {
    let Some(c) = c else {
        return "–".into();
    };
    if c.tester_limited {
        return "TL (tester-limited)".into();
    }
    let mut s = match (c.l2_bps, c.percent) {
        (Some(b), Some(p)) => format!("{} Mb/s ({} %)", num::mbps(b.0), num::pct(p)),
        (Some(b), None) => format!("{} Mb/s", num::mbps(b.0)),
        _ => "–".into(),
    };
    if let Some(cpu) = c.dut_cpu_percent {
        s.push_str(&format!(" · CPU {} %", num::pct(cpu)));
    }
    if let Some(w) = c.dut_power_watts {
        s.push_str(&format!(" · {} W", num::watts(w)));
    }
    s
}

/// A switch-table difference: `+12.34 %`, with `(within noise)` when it is.
pub fn switch_delta(r: &SwitchRow) -> String {
    match r.delta_percent {
        Some(d) => format!(
            "{}{} %{}",
            if d < 0.0 { "\u{2212}" } else { "+" },
            num::pct(d.abs()),
            if r.significant { "" } else { " (within noise)" }
        ),
        None => "–".into(),
    }
}

/// The header of a switch table: what its rows are (`MSS`, `frame size`, else `point`), off,
/// on, difference.
pub fn switch_titles(t: &SwitchTable) -> [String; 4] {
    let what = if t.switch == "offload" {
        "offload"
    } else {
        "fastpath"
    };
    let first = if t.rows.iter().all(|r| r.point.starts_with("MSS ")) {
        "MSS"
    } else if t.rows.iter().all(|r| r.point.ends_with(" B")) {
        "frame size"
    } else {
        "point"
    };
    [
        first.into(),
        format!("{what} off"),
        format!("{what} on"),
        "on vs off".into(),
    ]
}

/// `results.csv`: one line per throughput row.
pub fn csv(a: &Analysis) -> Vec<u8> {
    let cols = columns(a);
    let mut out = cols.join(",");
    out.push('\n');
    for r in &a.rows {
        let line: Vec<String> = cells(r, &cols).iter().map(|c| csv_field(c)).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out.into_bytes()
}

/// The JSON summary: the whole [`Analysis`], pretty-printed.
pub fn json(a: &Analysis) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(a).unwrap_or_default();
    v.push(b'\n');
    v
}

/// Missing-data lines (shared by Markdown, HTML and the terminal).
pub fn completeness_lines(a: &Analysis) -> Vec<String> {
    let c = &a.completeness;
    let mut v = Vec::new();
    if c.is_complete() {
        return v;
    }
    v.push(format!(
        "UNFINISHED RUN: {} of {} searches finished.",
        c.finished,
        if c.expected > 0 {
            c.expected.to_string()
        } else {
            "?".into()
        }
    ));
    if c.torn_tail {
        v.push("The last line of trials.jsonl was cut off (the run was killed while writing); it is ignored.".into());
    }
    if let Some(e) = &c.plan_error {
        v.push(format!("The plan could not be read: {e}"));
    }
    for s in &c.in_progress {
        v.push(format!("In progress: {s}"));
    }
    const MAX: usize = 20;
    for s in c.missing.iter().take(MAX) {
        v.push(format!("Missing: {s}"));
    }
    if c.missing.len() > MAX {
        v.push(format!("… and {} more missing", c.missing.len() - MAX));
    }
    v
}

/// The switch tables' sections: (switch, heading, what the cells are).
pub const SWITCH_SECTIONS: [(&str, &str, &str); 2] = [
    (
        "offload",
        "TCP throughput against MSS, offload off and on",
        "Each cell: Mb/s (L2, frames with FCS) and percent of line rate, then the DUT's CPU busy %; the last column is on against off in frames per second, marked when within the noise of both figures.",
    ),
    (
        "fastpath",
        "Fast path off and on",
        "Each cell: Mb/s (L2, frames with FCS) and percent of line rate, then the DUT's CPU busy %; the last column is on against off in frames per second, marked when within the noise of both figures.",
    ),
];

/// `summary.md`.
pub fn markdown(a: &Analysis) -> Vec<u8> {
    let mut o = String::new();
    o.push_str(&format!(
        "# wirerate report: {}\n\n",
        md_escape(&a.plan_name)
    ));
    if let Some(d) = &a.description {
        o.push_str(&format!("{}\n\n", md_escape(d)));
    }
    o.push_str(&format!(
        "wirerate {} · reference link {} Gb/s · {} repetition{} per case\n\n",
        a.version,
        a.speed_bps.0 / 1e9,
        a.repetitions,
        if a.repetitions == 1 { "" } else { "s" }
    ));
    let missing = completeness_lines(a);
    if let Some(first) = missing.first() {
        o.push_str(&format!(
            "**{}** (What is missing: below)\n\n",
            md_escape(first)
        ));
    }
    markdown_headline(a, &mut o);
    if !missing.is_empty() {
        o.push_str("## What is missing\n\n");
        for l in &missing {
            o.push_str(&format!("- {}\n", md_escape(l)));
        }
        o.push('\n');
    }
    markdown_findings(&crate::finding_list::list(a), &mut o);
    o.push_str("## Throughput against line rate\n\n");
    o.push_str("Measured rates sum both directions where a test was bidirectional; the maximum is the theoretical rate of the encapsulated frame on the bottleneck link. Tester-limited cells carry no DUT figure.\n\n");
    let cols = columns(a);
    o.push_str(&format!("| {} |\n", cols.join(" | ")));
    o.push_str(&format!("|{}\n", "---|".repeat(cols.len())));
    let status_at = cols.iter().position(|c| *c == "status");
    for r in &a.rows {
        let mut c = cells(r, &cols);
        if let (true, Some(p), Some(i)) = (r.tester_limited, r.tester_reached_percent, status_at) {
            c[i] = format!("tester-limited (tester reached {} %)", num::pct(p));
        }
        let c: Vec<String> = c.iter().map(|x| md_escape(x)).collect();
        o.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    o.push('\n');
    o.push_str(&crate::mtu::markdown(a));
    for (switch, head, intro) in SWITCH_SECTIONS {
        let tables: Vec<&SwitchTable> = a
            .switch_tables
            .iter()
            .filter(|t| t.switch == switch)
            .collect();
        if tables.is_empty() {
            continue;
        }
        o.push_str(&format!("## {head}\n\n{intro}\n\n"));
        for t in tables {
            o.push_str(&format!(
                "### {} ({})\n\n",
                md_escape(&t.title),
                t.methodology
            ));
            o.push_str(&format!(
                "| {} |\n|---|---|---|---|\n",
                switch_titles(t).join(" | ")
            ));
            for r in &t.rows {
                o.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    md_escape(&r.point),
                    md_escape(&switch_cell(r.off.as_ref())),
                    md_escape(&switch_cell(r.on.as_ref())),
                    switch_delta(r)
                ));
            }
            o.push('\n');
        }
    }
    if !a.latency.is_empty() {
        o.push_str(&format!(
            "## Latency\n\nOne-way latency at the throughput found, µs; {} are the trials' percentiles (empty where the trials did not record them). RFC 8219: Typical Latency is the median, Worst Case Latency the 99.9th percentile, PDV the 99.9th percentile minus the minimum, each the median over the trials; IPDV is D(i) − D(i−1) of consecutive frames, signed: its minimum, median and maximum (each the median over the trials), empty where a trial has none.\n\n| {} |\n|{}\n",
            PERCENTILES.join("/"),
            latency_titles().join(" | "),
            "---|".repeat(LATENCY_COLUMNS.len())
        ));
        for l in &a.latency {
            let c: Vec<String> = latency_cells(l).iter().map(|x| md_escape(x)).collect();
            o.push_str(&format!("| {} |\n", c.join(" | ")));
        }
        o.push('\n');
    }
    if !a.back_to_back.is_empty() {
        o.push_str(&format!(
            "## Back-to-back\n\nThe longest loss-free burst at the minimum inter-frame gap (RFC 2544 §26.4), and RFC 9004's buffer times: implied = frames / maximum frame rate; corrected = (frames − frames × throughput / maximum) / maximum, given only when a throughput search of the same case completed.\n\n| {} |\n|{}\n",
            B2B_TITLES.join(" | "),
            "---|".repeat(B2B_COLUMNS.len())
        ));
        for b in &a.back_to_back {
            let c: Vec<String> = b2b_cells(b).iter().map(|x| md_escape(x)).collect();
            o.push_str(&format!("| {} |\n", c.join(" | ")));
        }
        o.push('\n');
    }
    if !a.connections.is_empty() {
        o.push_str(&format!(
            "## Connections (stateful NAT / firewall)\n\nRFC 9693's two-phase trials: N connections opened at a rate, each validated by a reply on the tuple the DUT translated it to. Table capacity: the largest N that passed at a fixed rate; connection rate: the highest rate at which all N were established and validated; tear-down rate: N deleted connections over the time the DUT took to delete them (less the same deletion on an empty table), median of the repetitions; throughput: the highest rate per direction at which every frame of both directions crossed on the N established connections. The DUT's own table entries (after the preliminary phase; for throughput after the load) and refusals of the trial at the figure are beside the result. \"At least\" marks a lower bound: the most tried passed, or the tester set the limit. Throughput has a row per N, each with its own status: the load engine, the DUT's own ingress drops in the trial at the result and at the first failing rate beside the frames lost there (equal when the DUT dropped them), and \"tester-limited (asked …, sent …)\" when the tester, not the DUT, ended that N. The connection rate has the connections lost at its first failing rate beside the DUT's ingress drops over that trial's preliminary phase (equal when the DUT's port refused them). Every row says how it was measured: the preliminary phase's engine (xdp or af_packet, for its sender and learner), and the DUT's egress drops at the first failing value when it had any — frames the DUT forwarded that the tester's port could not take, the tester's loss and not the DUT's.\n\n| {} |\n|{}\n",
            crate::connections::TITLES.join(" | "),
            "---|".repeat(crate::connections::COLUMNS.len())
        ));
        for r in &a.connections {
            let c: Vec<String> = crate::connections::cells(r)
                .iter()
                .map(|x| md_escape(x))
                .collect();
            o.push_str(&format!("| {} |\n", c.join(" | ")));
        }
        o.push('\n');
    }
    if !a.loss_curves.is_empty() {
        o.push_str("## Frame loss rate\n\n| case | offered load % → loss % |\n|---|---|\n");
        for c in &a.loss_curves {
            let pts: Vec<String> = c
                .points
                .iter()
                .map(|(l, x)| format!("{} → {}", num::pct(*l), num::pct(*x)))
                .collect();
            o.push_str(&format!(
                "| {} | {} |\n",
                md_escape(&c.case_id),
                pts.join(", ")
            ));
        }
        o.push('\n');
    }
    if !a.notes.is_empty() {
        o.push_str("## Notes\n\n");
        for n in &a.notes {
            o.push_str(&format!("- {}\n", md_escape(n)));
        }
    }
    o.into_bytes()
}

/// `summary.md`'s first section: the headline tables ([`crate::headline`]) and their legend.
fn markdown_headline(a: &Analysis, o: &mut String) {
    let tables = crate::headline::tables(a);
    if tables.is_empty() {
        return;
    }
    let unfinished = !a.completeness.is_complete();
    o.push_str("## At a glance\n\n");
    for t in &tables {
        o.push_str(&format!("### {}\n\n", crate::headline::caption(t)));
        let mut head = vec!["profile".to_string()];
        if t.one_measure.is_none() {
            head.push("measure".into());
        }
        head.extend(t.columns.iter().cloned());
        let fixed = head.len() - t.columns.len();
        o.push_str(&format!(
            "| {} |\n|{}{}\n",
            head.iter()
                .map(|h| md_escape(h))
                .collect::<Vec<_>>()
                .join(" | "),
            "---|".repeat(fixed),
            "---:|".repeat(t.columns.len())
        ));
        for g in &t.groups {
            for (i, (measure, cells)) in g.lines.iter().enumerate() {
                let mut line = Vec::new();
                line.push(match (i, g.setting.is_empty()) {
                    (0, true) => md_escape(&g.profile),
                    (0, false) => format!("{}, {}", md_escape(&g.profile), md_escape(&g.setting)),
                    _ => String::new(),
                });
                if t.one_measure.is_none() {
                    line.push(md_escape(measure));
                }
                for r in cells {
                    let c = crate::headline::cell(*r, unfinished, status);
                    let mut text = c.main.clone();
                    if !c.rate.is_empty() {
                        text.push_str(&format!(" · {}", c.rate));
                    }
                    if let Some(m) = &c.mark {
                        text.push_str(&format!(" ({m})"));
                    }
                    line.push(md_escape(&text));
                }
                o.push_str(&format!("| {} |\n", line.join(" | ")));
            }
        }
        o.push('\n');
    }
    o.push_str(&format!(
        "{}\n\n",
        md_escape(&crate::headline::legend(a, &tables))
    ));
}

/// `summary.md`'s findings ([`crate::finding_list`]): one line each ending in its noise, the
/// noise measures in a legend once, then the comparisons within noise.
fn markdown_findings(list: &crate::finding_list::List, o: &mut String) {
    use crate::finding_list::noise_text;
    if list.findings.is_empty() && list.others.is_empty() {
        return;
    }
    let line = |l: &crate::finding_list::Line| {
        let mut s = md_escape(&l.claim);
        if let Some(p) = l.noise_percent {
            s.push_str(&format!(" {}", noise_text(p)));
        }
        let marks: Vec<String> = list.marks(l).iter().map(|m| superscript(*m)).collect();
        s.push_str(&marks.join("˒"));
        s
    };
    o.push_str("## Findings\n\n");
    if list.findings.is_empty() {
        o.push_str("- No profile differs from the baseline by more than the noise.\n");
    }
    for l in &list.findings {
        o.push_str(&format!("- {}\n", line(l)));
    }
    let (head, entries) = list.legend();
    o.push_str(&format!("\n{}", md_escape(&head)));
    for crate::finding_list::LegendEntry { mark, name, what } in entries {
        match mark {
            Some(m) => o.push_str(&format!(" {} {name}: {what}.", superscript(m))),
            None => o.push_str(&format!(
                " Every figure's noise here is the {name}: {what}."
            )),
        }
    }
    o.push_str("\n\n");
    if !list.others.is_empty() {
        o.push_str("Within noise or not comparable:\n\n");
        for l in &list.others {
            o.push_str(&format!("- {}\n", line(l)));
        }
        o.push('\n');
    }
}

/// A legend mark as Markdown writes it: `¹`, `²`, …, `¹⁰`.
fn superscript(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .chars()
        .map(|c| DIGITS[c.to_digit(10).unwrap_or(0) as usize])
        .collect()
}

/// The table the terminal shows at the end of a run.
pub fn terminal(a: &Analysis) -> String {
    let head = ["case", "pps", "Mb/s L2", "% line", "status"];
    let mut rows: Vec<[String; 5]> = Vec::new();
    for r in &a.rows {
        rows.push([
            format!("{} [{}]", r.case_id, r.methodology_label()),
            r.pps.map(num::frames).unwrap_or_else(|| "-".into()),
            r.l2_bps.map(num::l2).unwrap_or_else(|| "-".into()),
            r.percent.map(num::pct).unwrap_or_else(|| "-".into()),
            status(r).into(),
        ]);
        // A bidirectional figure is a sum: each direction under it, against its own line rate.
        for d in &r.per_direction {
            rows.push([
                format!("  {}", d.direction),
                num::pps(d.pps.0),
                num::mbps(d.l2_bps.0),
                num::pct(d.percent),
                direction_counts(d),
            ]);
        }
    }
    let mut w = head.map(str::len);
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut o = String::new();
    let line = |cells: &[String], o: &mut String| {
        for (i, c) in cells.iter().enumerate() {
            let pad = w[i] - c.chars().count();
            if i == 0 || i == 4 {
                o.push_str(c);
                o.push_str(&" ".repeat(pad));
            } else {
                o.push_str(&" ".repeat(pad));
                o.push_str(c);
            }
            if i + 1 < cells.len() {
                o.push_str("  ");
            }
        }
        let trimmed = o.trim_end_matches(' ').len();
        o.truncate(trimmed);
        o.push('\n');
    };
    line(&head.map(String::from), &mut o);
    for r in &rows {
        line(r, &mut o);
    }
    // Beside the table: the largest frame each direction carried whole (mtu-probe).
    for l in crate::mtu::terminal_lines(a) {
        o.push_str(&format!("{l}\n"));
    }
    // The per-dimension conclusions when there are any (the per-case lines repeat them case
    // by case and are in summary.md and report.html); else the per-case findings.
    let per_case = a.findings.iter().filter(|f| f.significant);
    if a.conclusions.is_empty() {
        for f in per_case {
            o.push_str(&format!("  {}\n", f.text));
        }
    } else {
        for c in &a.conclusions {
            o.push_str(&format!("  {}\n", c.text));
        }
        let n = per_case.count();
        if n > 0 {
            o.push_str(&format!(
                "  ({n} per-case finding{} beyond noise: summary.md, report.html)\n",
                if n == 1 { "" } else { "s" }
            ));
        }
    }
    for l in completeness_lines(a) {
        o.push_str(&format!("! {l}\n"));
    }
    o
}
