//! `report.html`: one self-contained page (inline CSS and SVG; no scripts, no fetched fonts).

use std::collections::BTreeMap;

use bench_model::plan::{Methodology, Protocol};
use wire::encap::IpVersion;
use wire::linerate::FrameSize;
use wire::units::{BitsPerSec, Pps};

use crate::model::{udp_max, Analysis, Dims, LatencyRow, Row, PERCENTILES};
use crate::svg::{bar_chart, esc, line_chart, Bar, Series};
use crate::text::{
    cell, columns, completeness_lines, latency_cells, latency_titles, num, status, switch_cell,
    switch_delta, switch_titles, LATENCY_COLUMNS, SWITCH_SECTIONS,
};

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;max-width:1240px}
h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ccc}h3{margin-bottom:4px}
.meta{color:#555}.missing{background:#fff4e5;border:1px solid #e69f00;padding:8px 16px;margin:12px 0}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{background:#fff;border:1px solid #e5e5e5}
.chart text{font-size:11px;fill:#222}.chart .title{font-size:13px;font-weight:600}.chart .axis-label{font-size:12px}
.chart .tl{font-size:10px;fill:#900;font-weight:600}
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{border:1px solid #ccc;padding:2px 6px}
td{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}tr.tester-limited td{background:#f3f3f3;color:#777}
tr.partial td{background:#fffbe8}li.sig{font-weight:600}
.banner{background:#fff4e5;border:1px solid #e69f00;padding:4px 12px;margin:8px 0;font-weight:600}
.glance{display:flex;flex-wrap:wrap;gap:4px 32px;align-items:flex-start}
table.headline{font-size:13px;margin:4px 0 8px}table.headline caption{text-align:left;font-weight:600;font-size:14px;padding:0 0 4px}
table.headline th{background:#f4f4f4;font-weight:600;text-align:center}table.headline th.p{text-align:left;background:#fafafa}
table.headline .set{font-weight:400;color:#555}table.headline td.m{color:#444;font-size:12px}
table.headline td.v{text-align:right;font-variant-numeric:tabular-nums;min-width:96px}
table.headline td.v span{font-size:11px;color:#333;padding-left:6px}table.headline td.v i{display:block;font-size:10px;font-style:normal;color:#900}
table.headline td.na{color:#999;text-align:center}table.headline td.tl{color:#900;background:repeating-linear-gradient(135deg,#f2f2f2 0 4px,#fff 4px 8px)}
table.headline tbody{border-top:2px solid #999}
.legend{color:#444;font-size:12px;max-width:1200px;margin:4px 0}.nav{font-size:13px;margin:6px 0 0}
ul.findings li{margin:2px 0}ul.findings .nz{white-space:nowrap;color:#333}ul.findings sup{color:#555}
.scale{display:inline-block;width:14px;height:10px;border:1px solid #ccc;vertical-align:middle;margin:0 1px}";

/// The results-table columns the page shows ([`crate::text::columns`] name, header); the other
/// dimension columns are in the case id. The switch, per-direction and power columns appear
/// only when the run has them.
const SHOWN: [(&str, &str); 19] = [
    ("case", "case"),
    ("offload", "offload"),
    ("fastpath", "fastpath"),
    ("methodology", "methodology"),
    ("repetitions", "reps"),
    ("status", "status"),
    ("pps", "pps"),
    ("mbps_l2", "Mb/s L2"),
    ("max_pps", "max pps"),
    ("max_mbps_l2", "max Mb/s L2"),
    ("percent_line_rate", "% of line rate"),
    ("per_direction", "per direction (% of its own line rate)"),
    ("noise_pps", "noise ± pps"),
    ("dut_cpu_percent", "DUT CPU %"),
    ("dut_power_watts", "DUT power W"),
    ("directions", "directions"),
    ("engine", "engine"),
    ("trial_frames_lost", "frames lost (all trials)"),
    ("dut_ingress_drops", "of which DUT ingress drops"),
];

/// Columns right-aligned as numbers.
const NUMERIC: [&str; 13] = [
    "repetitions",
    "pps",
    "mbps_l2",
    "max_pps",
    "max_mbps_l2",
    "percent_line_rate",
    "noise_pps",
    "dut_cpu_percent",
    "dut_power_watts",
    "directions",
    "trial_frames_lost",
    "dut_ingress_drops",
    "frame_size",
];

/// Rows drawn together: protocol × IP version × encapsulation × directions × what the rows
/// measure (a forwarding rate at overload is drawn apart from throughput, and a multi-goal
/// search's goals apart from each other: a case can have several, and they answer different
/// questions). The measure sorts throughput at zero loss first.
type FamilyKey = (Protocol, IpVersion, String, bool, (u8, String));

fn family_key(r: &Row) -> FamilyKey {
    let d = &r.dims;
    let measure = match r.loss_goal {
        _ if is_forwarding_rate(r) => (2, row_measure(r)),
        Some(g) if g > 0.0 => (1, row_measure(r)),
        _ => (0, row_measure(r)),
    };
    (
        d.protocol,
        d.ip,
        // Encapsulations in the order of their spelling, as reports have listed them.
        d.encap.to_string(),
        d.bidirectional,
        measure,
    )
}

fn is_forwarding_rate(r: &Row) -> bool {
    matches!(r.methodology, Methodology::ForwardingRate)
}

/// A family's heading: its name, and what it measures when that is not plain throughput.
fn heading(fam: &str, rows: &[&Row]) -> String {
    match rows.first().map(|r| row_measure(r)) {
        Some(m) if m != "throughput" => format!("{fam}: {m}"),
        _ => fam.to_string(),
    }
}

/// What a family's bars measure, as chart titles say it.
fn measure(rows: &[&Row]) -> String {
    rows.first()
        .map_or_else(|| "throughput".to_string(), |r| row_measure(r))
}

/// What one row measures: throughput, throughput at a multi-goal search's loss goal, or the
/// forwarding rate at overload.
fn row_measure(r: &Row) -> String {
    match r.loss_goal {
        _ if is_forwarding_rate(r) => "forwarding rate at the maximum offered load".into(),
        Some(g) if g > 0.0 => format!("throughput at ≤ {} % loss (PDR)", g * 100.0),
        Some(_) => "throughput at zero loss (NDR)".into(),
        None => "throughput".into(),
    }
}

/// The non-profile dimensions of a row, as a bar's series name.
fn second(d: &Dims) -> String {
    let mut p = Vec::new();
    match d.frame() {
        Some(FrameSize::Fixed { bytes }) => p.push(format!("{bytes} B")),
        Some(FrameSize::Imix) => p.push("IMIX".into()),
        None => {}
    }
    if let Some(s) = d.sessions {
        p.push(format!("{s} sess."));
    }
    if let Some(m) = d.mss {
        p.push(format!("MSS {m}"));
    }
    p.extend(d.switches());
    for (k, v) in &d.vars {
        p.push(format!("{k}={v}"));
    }
    if p.is_empty() {
        "all".into()
    } else {
        p.join(" ")
    }
}

fn grouped(
    a: &Analysis,
    rows: &[&Row],
    rate: bool,
    value: impl Fn(&Row) -> Option<f64>,
) -> (Vec<String>, Vec<String>, Vec<Vec<Option<Bar>>>) {
    let mut groups: Vec<String> = Vec::new();
    for p in &a.profiles {
        if rows.iter().any(|r| &r.dims.profile == p) {
            groups.push(p.clone());
        }
    }
    let mut series: Vec<String> = Vec::new();
    for r in rows {
        let s = second(&r.dims);
        if !series.contains(&s) {
            series.push(s);
        }
    }
    let values = groups
        .iter()
        .map(|g| {
            series
                .iter()
                .map(|s| {
                    let r = rows
                        .iter()
                        .find(|r| &r.dims.profile == g && &second(&r.dims) == s)?;
                    if r.tester_limited && rate {
                        // What the tester reached, drawn hatched: never a DUT figure.
                        let reached = r.tester_reached_percent? / 100.0 * r.max_pps.0;
                        return Some(Bar {
                            value: scaled(r, reached, &value),
                            noise: 0.0,
                            tester_limited: true,
                            lower_bound: false,
                        });
                    }
                    let v = value(r)?;
                    let pps = r.pps.unwrap_or_default().0;
                    let noise = if rate && pps > 0.0 {
                        r.noise_pps.0 / pps * v
                    } else {
                        0.0
                    };
                    Some(Bar {
                        value: v,
                        noise,
                        tester_limited: false,
                        lower_bound: false,
                    })
                })
                .collect()
        })
        .collect();
    (groups, series, values)
}

/// Converts a frame rate into the chart's unit by asking `value` about a row at that rate.
fn scaled(r: &Row, pps: f64, value: &impl Fn(&Row) -> Option<f64>) -> f64 {
    let mut probe = r.clone();
    probe.tester_limited = false;
    probe.pps = Some(Pps(pps));
    probe.l2_bps = Some(BitsPerSec(pps * r.frame_len * 8.0));
    probe.dut_cpu_percent = None;
    probe.dut_power_watts = None;
    value(&probe).unwrap_or(0.0)
}

fn fig(o: &mut String, svg: &str) {
    o.push_str(svg);
}

/// Renders the report page: the answer first (how fast each profile is at each frame size),
/// then the charts, then the findings, then everything else.
pub fn html(a: &Analysis) -> Vec<u8> {
    let mut o = String::new();
    let list = crate::finding_list::list(a);
    page_head(a, &mut o);
    headline_section(a, &list, &mut o);
    missing_section(a, &mut o);
    let families = families_of(a);
    profile_charts(a, &families, &mut o);
    size_charts(a, &families, &mut o);
    mss_charts(a, &families, &mut o);
    loss_charts(a, &mut o);
    // Latency: one chart per family and profile, percentiles against frame size.
    if !a.latency.is_empty() {
        latency_charts(a, &mut o);
    }
    findings_section(&list, &mut o);
    switch_sections(a, &mut o);
    tables(a, &mut o);
    closing_sections(a, &mut o);
    o.push_str("</body></html>\n");
    o.into_bytes()
}

/// The page's head: title, the run's description and reference link.
fn page_head(a: &Analysis, o: &mut String) {
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    o.push_str(&format!(
        "<title>wirerate report: {}</title><style>{CSS}</style></head><body>\n",
        esc(&a.plan_name)
    ));
    o.push_str(&format!(
        "<h1>wirerate report: {}</h1>\n",
        esc(&a.plan_name)
    ));
    if let Some(d) = &a.description {
        o.push_str(&format!("<p>{}</p>\n", esc(d)));
    }
    o.push_str(&format!(
        "<p class=\"meta\">wirerate {} · reference link {} Gb/s · {} repetition{} per case · baseline profile: {}</p>\n",
        esc(&a.version),
        a.speed_bps.0 / 1e9,
        a.repetitions,
        if a.repetitions == 1 { "" } else { "s" },
        esc(a.baseline.as_deref().unwrap_or("none"))
    ));
}

/// The run's answer at a glance ([`crate::headline`]): a table per traffic family, profiles
/// against frame sizes (or sessions × MSS), each figure shaded by its share of line rate; a
/// legend; and where to read on.
fn headline_section(a: &Analysis, list: &crate::finding_list::List, o: &mut String) {
    let tables = crate::headline::tables(a);
    let unfinished = !a.completeness.is_complete();
    if let Some(first) = completeness_lines(a).first() {
        o.push_str(&format!(
            "<p class=\"banner\">{} <a href=\"#missing\">What is missing</a></p>\n",
            esc(first)
        ));
    }
    if tables.is_empty() {
        return;
    }
    o.push_str("<section id=\"headline\"><div class=\"glance\">\n");
    for t in &tables {
        headline_table(t, unfinished, o);
    }
    o.push_str("</div>\n");
    o.push_str(&format!(
        "<p class=\"legend\">{} Shade: {}</p>\n",
        esc(&crate::headline::legend(a, &tables)),
        [0.0, 25.0, 50.0, 75.0, 100.0]
            .iter()
            .map(|p| format!(
                "<span class=\"scale\" style=\"background:{}\"></span>{p:.0} %",
                shade(*p)
            ))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    let n = list.findings.len();
    o.push_str(&format!(
        "<p class=\"nav\">Read on: <a href=\"#charts\">charts</a> · <a href=\"#findings-head\">{n} finding{} beyond noise</a> · <a href=\"#results\">results table</a>{}</p>\n</section>\n",
        if n == 1 { "" } else { "s" },
        if a.notes.is_empty() {
            ""
        } else {
            " · <a href=\"#notes\">notes</a>"
        }
    ));
}

/// A cell's background for a share of line rate: a sequential scale from pale yellow at 0 %
/// through green to teal at 100 % (ColorBrewer's YlGnBu, light end: ordered by lightness, so it
/// reads without colour vision), dark text readable on all of it.
fn shade(percent: f64) -> String {
    const STOPS: [(u8, u8, u8); 5] = [
        (0xff, 0xff, 0xd9),
        (0xed, 0xf8, 0xb1),
        (0xc7, 0xe9, 0xb4),
        (0x7f, 0xcd, 0xbb),
        (0x41, 0xb6, 0xc4),
    ];
    let x = percent.clamp(0.0, 100.0) / 25.0;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(a.0, b.0),
        mix(a.1, b.1),
        mix(a.2, b.2)
    )
}

/// One family's headline table.
fn headline_table(t: &crate::headline::Table, unfinished: bool, o: &mut String) {
    let caption = crate::headline::caption(t);
    o.push_str(&format!(
        "<table class=\"headline\" data-family=\"{}\"><caption>{}</caption><thead><tr><th class=\"p\">profile</th>",
        esc(&t.family),
        esc(&caption)
    ));
    if t.one_measure.is_none() {
        o.push_str("<th>measure</th>");
    }
    for c in &t.columns {
        o.push_str(&format!("<th>{}</th>", esc(c)));
    }
    o.push_str("</tr></thead>\n");
    // A body per group: a rule between profiles, none between one profile's measures.
    for g in &t.groups {
        o.push_str("<tbody>");
        for (i, (measure, cells)) in g.lines.iter().enumerate() {
            o.push_str("<tr>");
            if i == 0 {
                let set = if g.setting.is_empty() {
                    String::new()
                } else {
                    format!(" <span class=\"set\">{}</span>", esc(&g.setting))
                };
                o.push_str(&format!(
                    "<th class=\"p\"{}>{}{set}</th>",
                    if g.lines.len() > 1 {
                        format!(" rowspan=\"{}\"", g.lines.len())
                    } else {
                        String::new()
                    },
                    esc(&g.profile)
                ));
            }
            if t.one_measure.is_none() {
                o.push_str(&format!("<td class=\"m\">{}</td>", esc(measure)));
            }
            for r in cells {
                let c = crate::headline::cell(*r, unfinished, status);
                let class = match (&c.shade, r) {
                    (_, Some(r)) if r.tester_limited => "v tl",
                    (_, None) => "v na",
                    _ => "v",
                };
                let style = c
                    .shade
                    .map(|p| format!(" style=\"background:{}\"", shade(p)))
                    .unwrap_or_default();
                let title = match (&c.case, &c.mark) {
                    (Some(k), Some(m)) => format!(" title=\"{}: {}\"", esc(k), esc(m)),
                    (Some(k), None) => format!(" title=\"{}\"", esc(k)),
                    _ => String::new(),
                };
                let data = r
                    .map(|r| {
                        format!(
                            " data-case=\"{}\" data-methodology=\"{}\"",
                            esc(&r.case_id),
                            esc(&r.methodology_label())
                        )
                    })
                    .unwrap_or_default();
                let rate = if c.rate.is_empty() {
                    String::new()
                } else {
                    format!("<span>{}</span>", esc(&c.rate))
                };
                let mark = c
                    .mark
                    .as_ref()
                    .map(|m| format!("<i>{}</i>", esc(m)))
                    .unwrap_or_default();
                o.push_str(&format!(
                    "<td class=\"{class}\"{style}{title}{data}><b>{}</b>{rate}{mark}</td>",
                    esc(&c.main)
                ));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</tbody>\n");
    }
    o.push_str("</table>\n");
}

/// What an unfinished run lacks, in full (the banner above the tables says so in one line).
fn missing_section(a: &Analysis, o: &mut String) {
    let missing = completeness_lines(a);
    if !missing.is_empty() {
        o.push_str("<div class=\"missing\" id=\"missing\"><h3>What is missing</h3><ul>");
        for l in &missing {
            o.push_str(&format!("<li>{}</li>", esc(l)));
        }
        o.push_str("</ul></div>\n");
    }
}

/// The one list of findings ([`crate::finding_list`]): a line each, ending in its noise, the
/// noise measures explained once below; the comparisons within noise folded away.
fn findings_section(list: &crate::finding_list::List, o: &mut String) {
    use crate::finding_list::noise_text;
    if list.findings.is_empty() && list.others.is_empty() {
        return;
    }
    let line = |l: &crate::finding_list::Line| {
        let marks: Vec<String> = list.marks(l).iter().map(|m| m.to_string()).collect();
        let noise = l
            .noise_percent
            .map(|p| format!(" <span class=\"nz\">{}</span>", esc(&noise_text(p))))
            .unwrap_or_default();
        let sup = if marks.is_empty() {
            String::new()
        } else {
            format!("<sup>{}</sup>", marks.join(","))
        };
        format!("{}{noise}{sup}", esc(&l.claim))
    };
    o.push_str("<h2 id=\"findings-head\">Findings</h2>\n<ul class=\"findings\" id=\"findings\">");
    if list.findings.is_empty() {
        o.push_str("<li>No profile differs from the baseline by more than the noise.</li>");
    }
    for l in &list.findings {
        o.push_str(&format!("<li>{}</li>", line(l)));
    }
    o.push_str("</ul>\n");
    let (head, entries) = list.legend();
    o.push_str(&format!(
        "<p class=\"legend\" id=\"noise-legend\">{}",
        esc(&head)
    ));
    for crate::finding_list::LegendEntry { mark, name, what } in entries {
        match mark {
            Some(m) => o.push_str(&format!(" <sup>{m}</sup> {}: {}.", esc(name), esc(what))),
            None => o.push_str(&format!(
                " Every figure's noise here is the {}: {}.",
                esc(name),
                esc(what)
            )),
        }
    }
    o.push_str("</p>\n");
    if !list.others.is_empty() {
        o.push_str(&format!(
            "<details><summary>{} comparison{} within noise or not comparable</summary><ul class=\"findings\">",
            list.others.len(),
            if list.others.len() == 1 { "" } else { "s" }
        ));
        for l in &list.others {
            o.push_str(&format!("<li class=\"noise\">{}</li>", line(l)));
        }
        o.push_str("</ul></details>\n");
    }
}

/// Rows grouped in families (protocol × IP × encapsulation), as the charts show them.
fn families_of(a: &Analysis) -> BTreeMap<FamilyKey, Vec<&Row>> {
    let mut families: BTreeMap<FamilyKey, Vec<&Row>> = BTreeMap::new();
    for r in &a.rows {
        families.entry(family_key(r)).or_default().push(r);
    }
    families
}

/// One bar chart per family and profile; charts of one protocol share their y axis.
fn profile_charts(a: &Analysis, families: &BTreeMap<FamilyKey, Vec<&Row>>, o: &mut String) {
    // Shared y axes: every bar chart of one protocol uses the same maximum per unit.
    let mut max_mbps: BTreeMap<Protocol, f64> = BTreeMap::new();
    let mut max_pps: BTreeMap<Protocol, f64> = BTreeMap::new();
    for r in &a.rows {
        let reached = r
            .tester_reached_percent
            .map_or(0.0, |p| p / 100.0 * r.max_pps.0);
        let pps = r.pps.unwrap_or_default().0.max(reached) + r.noise_pps.0;
        let m = max_mbps.entry(r.dims.protocol).or_default();
        *m = m.max(pps * r.frame_len * 8.0 / 1e6);
        let p = max_pps.entry(r.dims.protocol).or_default();
        *p = p.max(pps);
    }
    o.push_str("<h2 id=\"charts\">Throughput per profile</h2>\n<p>Bars: mean over repetitions; whiskers: noise (with repetitions, half their spread plus half the search resolution; with one, the search's final bracket or the spread of iperf3's per-interval rates; where a search's own trials show sporadic loss, the range it spans). A multi-goal search has a chart per loss goal (NDR, PDR). Long profile names wrap; hover a label or bar for the full name. Hatched bars marked TL are tester-limited: what the tester reached, not a DUT figure. Charts of one protocol share their y axis.</p>\n");
    for ((proto, ..), rows) in families {
        let fam = rows[0].dims.family();
        let what = measure(rows);
        o.push_str(&format!(
            "<h3>{}</h3><div class=\"charts\">",
            esc(&heading(&fam, rows))
        ));
        let (g, s, v) = grouped(a, rows, true, |r| r.l2_bps.map(|b| b.0 / 1e6));
        fig(
            o,
            &bar_chart(
                &format!("{fam}: {what}, Mb/s (L2)"),
                "profile",
                "Mb/s (L2, frames with FCS)",
                &g,
                &s,
                &v,
                max_mbps.get(proto).copied().unwrap_or(1.0),
            ),
        );
        let (g, s, v) = grouped(a, rows, true, |r| r.pps.map(|p| p.0));
        fig(
            o,
            &bar_chart(
                &format!("{fam}: {what}, frames/s"),
                "profile",
                "frames per second",
                &g,
                &s,
                &v,
                max_pps.get(proto).copied().unwrap_or(1.0),
            ),
        );
        if rows.iter().any(|r| r.dut_cpu_percent.is_some()) {
            let (g, s, v) = grouped(a, rows, false, |r| r.dut_cpu_percent);
            fig(
                o,
                &bar_chart(
                    &format!("{fam}: DUT CPU busy %"),
                    "profile",
                    "DUT CPU %",
                    &g,
                    &s,
                    &v,
                    100.0,
                ),
            );
        }
        o.push_str("</div>\n");
    }
}

/// Throughput and % of line rate against frame size, per encapsulation.
fn size_charts(a: &Analysis, families: &BTreeMap<FamilyKey, Vec<&Row>>, o: &mut String) {
    let udp: Vec<_> = families
        .iter()
        .filter(|(k, rows)| {
            matches!(k.0, Protocol::Udp) && rows.iter().any(|r| r.dims.frame_bytes().is_some())
        })
        .collect();
    if !udp.is_empty() {
        o.push_str("<h2>Throughput against frame size</h2>\n<p>Dashed: the theoretical maximum of the encapsulated frame on the bottleneck link.</p>\n");
    }
    for (_, rows) in &udp {
        let fam = rows[0].dims.family();
        let what = measure(rows);
        let mut mbps = Vec::new();
        let mut pct = Vec::new();
        // One line per profile and switch setting (fast path off and on are two lines).
        let mut lines: Vec<(&String, Option<bool>, Option<bool>)> = Vec::new();
        for p in &a.profiles {
            for r in rows.iter().filter(|r| &r.dims.profile == p) {
                let k = (p, r.dims.offload, r.dims.fastpath);
                if !lines.contains(&k) {
                    lines.push(k);
                }
            }
        }
        for (p, offload, fastpath) in lines {
            // Each point at its row's frame size, as the case's trials recorded it.
            let mut pts: Vec<(f64, &&Row)> = rows
                .iter()
                .filter(|r| {
                    &r.dims.profile == p
                        && (r.dims.offload, r.dims.fastpath) == (offload, fastpath)
                        && r.pps.is_some()
                })
                .filter_map(|r| Some((f64::from(r.dims.frame_bytes()?), r)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            pts.sort_by(|x, y| x.0.total_cmp(&y.0));
            let mut name = p.clone();
            for sw in (Dims {
                offload,
                fastpath,
                ..rows[0].dims.clone()
            })
            .switches()
            {
                name.push_str(&format!(", {sw}"));
            }
            mbps.push(Series {
                name: name.clone(),
                points: pts
                    .iter()
                    .map(|(x, r)| (*x, r.l2_bps.unwrap_or_default().0 / 1e6))
                    .collect(),
                dashed: false,
                color: None,
            });
            pct.push(Series {
                name,
                points: pts
                    .iter()
                    .map(|(x, r)| (*x, r.percent.unwrap_or(0.0)))
                    .collect(),
                dashed: false,
                color: None,
            });
        }
        let dims = &rows[0].dims;
        // The family's path, as its rows' records carried it.
        let encap = rows[0]
            .path_encap
            .unwrap_or(wire::encap::EncapSpec::plain(dims.ip));
        let lo = rows
            .iter()
            .filter_map(|r| r.dims.frame_bytes())
            .min()
            .unwrap_or(64);
        let hi = rows
            .iter()
            .filter_map(|r| r.dims.frame_bytes())
            .max()
            .unwrap_or(1518);
        let mut theo = Vec::new();
        let mut f = lo;
        while f <= hi {
            if let Some((_, l2, _)) = udp_max(a.speed_bps.0, encap, dims.bidirectional, f) {
                theo.push((f64::from(f), l2 / 1e6));
            }
            f += 16.min(hi - f).max(1);
            if f == hi {
                if let Some((_, l2, _)) = udp_max(a.speed_bps.0, encap, dims.bidirectional, f) {
                    theo.push((f64::from(f), l2 / 1e6));
                }
                break;
            }
        }
        mbps.push(Series {
            name: "theoretical max".into(),
            points: theo.clone(),
            dashed: true,
            color: None,
        });
        pct.push(Series {
            name: "line rate (100 %)".into(),
            points: vec![(f64::from(lo), 100.0), (f64::from(hi), 100.0)],
            dashed: true,
            color: None,
        });
        o.push_str(&format!(
            "<h3>{}</h3><div class=\"charts\">",
            esc(&heading(&fam, rows))
        ));
        fig(
            o,
            &line_chart(
                &format!("{fam}: {what} vs frame size"),
                "frame size, bytes",
                "Mb/s (L2)",
                &mbps,
                None,
            ),
        );
        fig(
            o,
            &line_chart(
                &format!("{fam}: percent of line rate vs frame size"),
                "frame size, bytes",
                "% of line rate",
                &pct,
                Some(100.0),
            ),
        );
        o.push_str("</div>\n");
    }
}

/// TCP throughput against MSS.
fn mss_charts(a: &Analysis, families: &BTreeMap<FamilyKey, Vec<&Row>>, o: &mut String) {
    let tcp_mss: Vec<_> = families
        .iter()
        .filter(|(k, rows)| {
            matches!(k.0, Protocol::Tcp) && {
                let mut m: Vec<u32> = rows.iter().filter_map(|r| r.dims.mss).collect();
                m.sort_unstable();
                m.dedup();
                m.len() > 1
            }
        })
        .collect();
    if !tcp_mss.is_empty() {
        o.push_str("<h2>TCP throughput against MSS</h2>\n<div class=\"charts\">");
    }
    for (_, rows) in &tcp_mss {
        let fam = rows[0].dims.family();
        // One line per profile, sessions and switch setting (offload off and on are two
        // lines, not one line through both).
        type LineKey = (usize, Option<u32>, Option<bool>, Option<bool>);
        let mut lines: BTreeMap<LineKey, Series> = BTreeMap::new();
        for r in rows.iter() {
            let (Some(m), Some(b)) = (r.dims.mss, r.l4_bps.or(r.l2_bps)) else {
                continue;
            };
            let order = a
                .profiles
                .iter()
                .position(|p| p == &r.dims.profile)
                .unwrap_or(usize::MAX);
            let d = &r.dims;
            lines
                .entry((order, d.sessions, d.offload, d.fastpath))
                .or_insert_with(|| Series {
                    name: {
                        let mut n = match d.sessions {
                            Some(s) => format!("{} ×{s}", d.profile),
                            None => d.profile.clone(),
                        };
                        for sw in d.switches() {
                            n.push_str(&format!(", {sw}"));
                        }
                        n
                    },
                    points: Vec::new(),
                    dashed: false,
                    color: None,
                })
                .points
                .push((f64::from(m), b.0 / 1e6));
        }
        let mut series: Vec<Series> = lines.into_values().collect();
        for s in &mut series {
            s.points.sort_by(|x, y| x.0.total_cmp(&y.0));
        }
        fig(
            o,
            &line_chart(
                &format!("{fam}: throughput vs MSS"),
                "MSS, bytes",
                "Mb/s (L4, iperf3)",
                &series,
                None,
            ),
        );
    }
    if !tcp_mss.is_empty() {
        o.push_str("</div>\n");
    }
}

/// Frame loss rate against offered load.
fn loss_charts(a: &Analysis, o: &mut String) {
    if !a.loss_curves.is_empty() {
        o.push_str("<h2>Frame loss rate</h2>\n<div class=\"charts\">");
        let mut by_fam: BTreeMap<(String, Option<u32>, String), Vec<Series>> = BTreeMap::new();
        for c in &a.loss_curves {
            let color = a.profiles.iter().position(|p| p == &c.dims.profile);
            by_fam
                .entry((c.dims.family(), c.dims.frame_bytes(), second(&c.dims)))
                .or_default()
                .push(Series {
                    name: c.dims.profile.clone(),
                    points: c.points.iter().rev().copied().collect(),
                    dashed: false,
                    color,
                });
        }
        for ((fam, _, point), series) in by_fam {
            fig(
                o,
                &line_chart(
                    &format!("{fam} {point}: frame loss rate"),
                    "offered load, % of line rate",
                    "frames lost, %",
                    &series,
                    None,
                ),
            );
        }
        o.push_str("</div>\n");
    }
}

/// The tables: throughput against line rate, latency, back-to-back.
fn tables(a: &Analysis, o: &mut String) {
    o.push_str("<h2>Throughput against line rate</h2>\n<p>pps and Mb/s measured (mean over repetitions; bidirectional tests sum both directions), the theoretical maximum for the encapsulation on the bottleneck link, and the percentage reached. Tester-limited cells are grey and carry no DUT figure.</p>\n<table class=\"results\" id=\"results\"><thead><tr>");
    let present = columns(a);
    let shown: Vec<(&str, &str)> = SHOWN
        .into_iter()
        .filter(|(c, _)| present.contains(c))
        .collect();
    for (_, title) in &shown {
        o.push_str(&format!("<th>{title}</th>"));
    }
    o.push_str("</tr></thead><tbody>\n");
    for r in &a.rows {
        o.push_str(&format!(
            "<tr class=\"{}\" data-case=\"{}\" data-methodology=\"{}\">",
            status(r).replace(' ', "-"),
            esc(&r.case_id),
            esc(&r.methodology_label())
        ));
        for (k, _) in &shown {
            let c = cell(r, k);
            let text = if *k == "status" && r.tester_limited {
                format!(
                    "tester-limited (tester reached {} %)",
                    r.tester_reached_percent.map(num::pct).unwrap_or_default()
                )
            } else {
                c
            };
            o.push_str(&format!(
                "<td{} data-k=\"{k}\">{}</td>",
                if NUMERIC.contains(k) {
                    " class=\"n\""
                } else {
                    ""
                },
                esc(&text)
            ));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n");
    o.push_str(&crate::mtu::html(a));
    if !a.latency.is_empty() {
        o.push_str("<h3>Latency</h3><p>One-way latency at the throughput found, µs. Percentile cells are empty where the trials did not record percentiles. RFC 8219: Typical Latency is the median, Worst Case Latency the 99.9th percentile, PDV the 99.9th percentile minus the minimum, each the median over the trials; IPDV is D(i) − D(i−1) of consecutive frames, signed: its minimum, median and maximum (each the median over the trials), empty where a trial has none.</p><table id=\"latency\"><tr>");
        for t in latency_titles() {
            o.push_str(&format!("<th>{t}</th>"));
        }
        o.push_str("</tr>\n");
        for l in &a.latency {
            o.push_str(&format!("<tr data-latency-case=\"{}\">", esc(&l.case_id)));
            for (i, c) in latency_cells(l).iter().enumerate() {
                o.push_str(&format!(
                    "<td{} data-k=\"{}\">{}</td>",
                    if i > 0 { " class=\"n\"" } else { "" },
                    LATENCY_COLUMNS[i],
                    esc(c)
                ));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</table>\n");
    }
    if !a.back_to_back.is_empty() {
        o.push_str("<h3>Back-to-back</h3><p>The longest loss-free burst at the minimum inter-frame gap (RFC 2544 §26.4) and RFC 9004's buffer times: implied = frames / maximum frame rate; corrected = (frames − frames × throughput / maximum) / maximum, given only when a throughput search of the same case completed.</p><table id=\"back-to-back\"><tr>");
        for t in crate::text::B2B_TITLES {
            o.push_str(&format!("<th>{}</th>", esc(t)));
        }
        o.push_str("</tr>\n");
        for b in &a.back_to_back {
            o.push_str(&format!("<tr data-b2b-case=\"{}\">", esc(&b.case_id)));
            for (i, c) in crate::text::b2b_cells(b).iter().enumerate() {
                o.push_str(&format!(
                    "<td{} data-k=\"{}\">{}</td>",
                    if i > 0 && i < 6 { " class=\"n\"" } else { "" },
                    crate::text::B2B_COLUMNS[i],
                    esc(c)
                ));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</table>\n");
    }
}

/// Connections, notes and the host's facts.
fn closing_sections(a: &Analysis, o: &mut String) {
    if !a.connections.is_empty() {
        connection_section(a, o);
    }
    if !a.notes.is_empty() {
        o.push_str("<h2 id=\"notes\">Notes</h2><ul>");
        for n in &a.notes {
            o.push_str(&format!("<li>{}</li>", esc(n)));
        }
        o.push_str("</ul>\n");
    }
    if !a.host.is_empty() {
        o.push_str("<h2>Host</h2><table>");
        for (k, v) in &a.host {
            o.push_str(&format!("<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v)));
        }
        o.push_str("</table>\n");
    }
}

/// Palette index of each percentile's line, in [`PERCENTILES`] order.
const PERCENTILE_COLORS: [usize; 4] = [0, 2, 1, 5];

/// "Latency percentiles per frame size": per family (protocol, IP, encapsulation, directions)
/// and profile, p50/p90/p99/p99.9 as solid lines between min and max (dashed), the charts of
/// one family on one y axis. Rows without percentiles (runs recorded before they were kept)
/// draw min/mean/max and say so in the title.
fn latency_charts(a: &Analysis, o: &mut String) {
    o.push_str("<h2>Latency percentiles per frame size</h2>\n<p>One-way latency at the throughput found: p50, p90, p99 and p99.9 (solid; per percentile the trials' values weighted by their frames), min and max dashed. Charts of one traffic family share their y axis.</p>\n");
    // Per family, one chart per profile and switch setting.
    type ChartKey = (usize, Option<bool>, Option<bool>);
    let mut by_fam: BTreeMap<String, BTreeMap<ChartKey, Vec<&LatencyRow>>> = BTreeMap::new();
    for l in &a.latency {
        let order = a
            .profiles
            .iter()
            .position(|p| p == &l.dims.profile)
            .unwrap_or(usize::MAX);
        by_fam
            .entry(l.dims.family())
            .or_default()
            .entry((order, l.dims.offload, l.dims.fastpath))
            .or_default()
            .push(l);
    }
    for (fam, profs) in by_fam {
        let y_max = profs
            .values()
            .flatten()
            .map(|l| l.max_us)
            .fold(0.0f64, f64::max);
        o.push_str(&format!("<h3>{}</h3><div class=\"charts\">", esc(&fam)));
        for ls in profs.values() {
            let mut name = ls[0].dims.profile.clone();
            for sw in ls[0].dims.switches() {
                name.push_str(&format!(", {sw}"));
            }
            let pts = |f: &dyn Fn(&LatencyRow) -> Option<f64>| -> Vec<(f64, f64)> {
                let mut v: Vec<(f64, f64)> = ls
                    .iter()
                    .filter_map(|l| Some((f64::from(l.dims.frame_bytes()?), f(l)?)))
                    .collect();
                v.sort_by(|x, y| x.0.total_cmp(&y.0));
                v
            };
            let with = ls.iter().all(|l| l.percentiles_us.is_some());
            let line = |name: &str, color: usize, dashed: bool, points| Series {
                name: name.into(),
                points,
                dashed,
                color: Some(color),
            };
            let mut series = vec![line("min", 4, true, pts(&|l| Some(l.min_us)))];
            if with {
                for (i, (p, color)) in PERCENTILES.iter().zip(PERCENTILE_COLORS).enumerate() {
                    series.push(line(
                        p,
                        color,
                        false,
                        pts(&|l| l.percentiles_us.map(|v| v[i])),
                    ));
                }
            } else {
                series.push(line("mean", 0, false, pts(&|l| Some(l.mean_us))));
            }
            series.push(line("max", 7, true, pts(&|l| Some(l.max_us))));
            series.retain(|s| !s.points.is_empty());
            let title = if with {
                format!("{fam}, {name}: latency percentiles")
            } else {
                format!("{fam}, {name}: latency (no percentiles recorded)")
            };
            fig(
                o,
                &line_chart(
                    &title,
                    "frame size, bytes",
                    "one-way latency, µs",
                    &series,
                    Some(y_max),
                ),
            );
        }
        o.push_str("</div>\n");
    }
}

/// The MSS × offload tables and the fast-path comparisons ([`crate::model::SwitchTable`]).
fn switch_sections(a: &Analysis, o: &mut String) {
    for (switch, head, intro) in SWITCH_SECTIONS {
        let tables: Vec<_> = a
            .switch_tables
            .iter()
            .filter(|t| t.switch == switch)
            .collect();
        if tables.is_empty() {
            continue;
        }
        o.push_str(&format!("<h2>{}</h2>\n<p>{}</p>\n", esc(head), esc(intro)));
        for t in tables {
            o.push_str(&format!(
                "<h3>{} ({})</h3><table class=\"switch\" data-switch=\"{}\"><tr>",
                esc(&t.title),
                esc(&t.methodology),
                esc(&t.switch)
            ));
            for h in switch_titles(t) {
                o.push_str(&format!("<th>{}</th>", esc(&h)));
            }
            o.push_str("</tr>\n");
            for r in &t.rows {
                o.push_str(&format!(
                    "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                    esc(&r.point),
                    esc(&switch_cell(r.off.as_ref())),
                    esc(&switch_cell(r.on.as_ref())),
                    esc(&switch_delta(r))
                ));
            }
            o.push_str("</table>\n");
        }
    }
}

/// The connection methodologies (issue #15): one bar chart per methodology (a bar per case,
/// the first repetition's figure; tester-limited bars hatched) and the table every format shows.
fn connection_section(a: &Analysis, o: &mut String) {
    use bench_model::plan::Methodology;
    o.push_str("<h2>Connections (stateful NAT / firewall)</h2><p>RFC 9693's two-phase trials: N connections opened at a rate, each validated by a reply on the tuple the DUT translated it to. Table capacity: the largest N that passed at a fixed rate; connection rate: the highest rate at which all N were established and validated; tear-down rate: N deleted connections over the time the DUT took to delete them (less the same deletion on an empty table), median of the repetitions; throughput: the highest rate per direction at which every frame of both directions crossed on the N established connections. The DUT's own table entries (after the preliminary phase; for throughput after the load) and refusals of the trial at the figure are beside the result. Bars marked ≥ and results reading \"at least\" are lower bounds (the most tried passed); TL marks a tester-limited search.</p>\n");
    for (m, title) in [
        (Methodology::NatTableCapacity, "Connection table capacity"),
        (
            Methodology::NatConnectionRate,
            "Connection establishment rate",
        ),
        (Methodology::NatTeardownRate, "Connection tear-down rate"),
        (
            Methodology::NatThroughput,
            "Throughput with N connections (each direction)",
        ),
    ] {
        let rows: Vec<_> = a
            .connections
            .iter()
            .filter(|r| (r.methodology, r.repetition) == (m, 0))
            .collect();
        if rows.is_empty() {
            continue;
        }
        // A bar per case; for throughput a bar per N within each case.
        let mut groups: Vec<String> = Vec::new();
        let mut series: Vec<String> = Vec::new();
        let series_of = |r: &crate::connections::ConnRow| {
            if m == Methodology::NatThroughput {
                format!("N = {:.0}", r.at)
            } else {
                m.name().to_string()
            }
        };
        for r in &rows {
            if !groups.contains(&r.case_id) {
                groups.push(r.case_id.clone());
            }
            let s = series_of(r);
            if !series.contains(&s) {
                series.push(s);
            }
        }
        let values: Vec<Vec<Option<Bar>>> = groups
            .iter()
            .map(|g| {
                series
                    .iter()
                    .map(|s| {
                        rows.iter()
                            .find(|r| &r.case_id == g && &series_of(r) == s)
                            .and_then(|r| {
                                r.value.map(|v| Bar {
                                    value: v,
                                    noise: 0.0,
                                    // Hatched: not a DUT figure ("TL"), or only a lower
                                    // bound ("≥").
                                    tester_limited: r.tester_limited,
                                    lower_bound: r.lower_bound && !r.tester_limited,
                                })
                            })
                    })
                    .collect()
            })
            .collect();
        let y_max = rows.iter().filter_map(|r| r.value).fold(1.0, f64::max);
        fig(
            o,
            &bar_chart(
                title,
                "case",
                crate::connections::unit(m),
                &groups,
                &series,
                &values,
                y_max,
            ),
        );
    }
    o.push_str("<table id=\"connections\"><tr>");
    for t in crate::connections::TITLES {
        o.push_str(&format!("<th>{}</th>", esc(t)));
    }
    o.push_str("</tr>\n");
    for r in &a.connections {
        o.push_str(&format!("<tr data-conn-case=\"{}\">", esc(&r.case_id)));
        for (i, c) in crate::connections::cells(r).iter().enumerate() {
            o.push_str(&format!(
                "<td{} data-k=\"{}\">{}</td>",
                if crate::connections::NUMERIC.contains(&i) {
                    " class=\"n\""
                } else {
                    ""
                },
                crate::connections::COLUMNS[i],
                esc(c)
            ));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}
