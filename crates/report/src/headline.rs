//! The report's first answer: how fast each configuration is at each frame size. One table per
//! traffic family (protocol × IP version × encapsulation × directions): rows are the profiles
//! with their switch settings, columns the frame sizes (UDP) or sessions × MSS (TCP), and each
//! line of a row one measure (NDR, PDR, …) as a percentage of line rate with its rate.
//!
//! Built from the results table's rows ([`crate::model::Row`]), so its figures are the table's;
//! `html` shades and `text` prints what [`Cell`] says.

use bench_model::plan::{Methodology, Protocol};
use wire::encap::IpVersion;

use crate::model::{Analysis, Dims, Row};

/// One family's table.
#[derive(Debug, Clone)]
pub struct Table<'a> {
    /// `IPv4 UDP`, `IPv6 TCP over pppoe+ipv6`, … ([`Dims::family`]).
    pub family: String,
    /// UDP or TCP.
    pub protocol: Protocol,
    /// Column headings: `64 B`, `IMIX`, `1 session`, `MSS 1414`, `4 sessions, MSS 400`.
    pub columns: Vec<String>,
    /// What every line measures when they all measure the same (then lines carry no label).
    pub one_measure: Option<String>,
    /// What every column shares and the headings leave out (`1 session`).
    pub shared: Option<String>,
    /// Row groups: a profile with one setting of the switches and user dimensions.
    pub groups: Vec<Group<'a>>,
}

/// A profile (with its switch settings) and its measures.
#[derive(Debug, Clone)]
pub struct Group<'a> {
    /// Profile name.
    pub profile: String,
    /// The switch settings and user dimensions that set this group apart (`fastpath on`,
    /// `offload off, flows=100`); empty when there are none.
    pub setting: String,
    /// One line per measure, in [`measure_order`]: (measure label, a row per column).
    pub lines: Vec<(String, Vec<Option<&'a Row>>)>,
}

/// The measure a row's figure is, as the headline labels it: `NDR` and `PDR 0.5 %` for a
/// multi-goal search's goals, `RFC 2544` for the throughput search, `FR` for the forwarding
/// rate at the maximum offered load, `iperf3` for TCP.
pub fn measure(r: &Row) -> String {
    match (r.loss_goal, r.methodology) {
        (Some(g), _) if g <= 0.0 => "NDR".into(),
        (Some(g), _) => format!("PDR {} %", g * 100.0),
        (None, Methodology::ForwardingRate) => "FR".into(),
        (None, Methodology::Rfc2544Throughput) => "RFC 2544".into(),
        (None, m) => m.name().into(),
    }
}

/// Lines of a group in reading order: zero loss first, then the loss goals upwards, then the
/// forwarding rate.
fn measure_order(r: &Row) -> (u8, u64) {
    let goal = r.loss_goal.unwrap_or(0.0).max(0.0);
    let rank = if matches!(r.methodology, Methodology::ForwardingRate) {
        2
    } else if goal > 0.0 {
        1
    } else {
        0
    };
    (rank, (goal * 1e9) as u64)
}

/// The family a row belongs to, and the order families are shown in: UDP before TCP (frame
/// sizes are what most readers came for), then IP version, encapsulation, one-way first.
fn family_order(d: &Dims) -> (bool, IpVersion, String, bool) {
    (
        !matches!(d.protocol, Protocol::Udp),
        d.ip,
        // Encapsulations in the order of their spelling, as reports have listed them.
        d.encap.to_string(),
        d.bidirectional,
    )
}

/// A column: UDP frame size (the IMIX after the sizes) or TCP (sessions; then the default MSS
/// before the largest MSS down to the smallest, as such tables are published). The fields'
/// order is the columns' order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Column {
    Frame {
        imix: bool,
        size: Option<u32>,
    },
    Tcp {
        sessions: Option<u32>,
        set_mss: bool,
        mss: std::cmp::Reverse<Option<u32>>,
    },
}

fn column_of(d: &Dims) -> Column {
    match d.protocol {
        Protocol::Tcp => Column::Tcp {
            sessions: d.sessions,
            set_mss: d.mss.is_some(),
            mss: std::cmp::Reverse(d.mss),
        },
        Protocol::Udp => Column::Frame {
            imix: d.is_imix(),
            size: d.frame_bytes(),
        },
    }
}

/// Column headings, saying only what differs between columns: the sessions when they vary,
/// the MSS where a case set one.
fn column_titles(cols: &[Column]) -> Vec<String> {
    let sessions: Vec<Option<u32>> = cols
        .iter()
        .filter_map(|c| match c {
            Column::Tcp { sessions, .. } => Some(*sessions),
            Column::Frame { .. } => None,
        })
        .collect();
    let vary = sessions.windows(2).any(|w| w[0] != w[1]);
    cols.iter()
        .map(|c| match c {
            Column::Frame { imix: true, .. } => "IMIX".to_string(),
            Column::Frame { size, .. } => size.map_or_else(|| "–".into(), |s| format!("{s} B")),
            Column::Tcp { sessions, mss, .. } => {
                let mut p = Vec::new();
                if vary || mss.0.is_none() {
                    p.extend(sessions.map(|s| format!("{s} session{}", plural(s))));
                }
                p.extend(mss.0.map(|m| format!("MSS {m}")));
                if p.is_empty() {
                    "all".into()
                } else {
                    p.join(", ")
                }
            }
        })
        .collect()
}

/// The sessions every TCP column has, when the headings leave them out (one count, and a
/// column with an MSS): `1 session`.
fn shared_sessions(cols: &[Column]) -> Option<String> {
    let mut sessions = cols.iter().map(|c| match c {
        Column::Tcp { sessions, .. } => *sessions,
        Column::Frame { .. } => None,
    });
    let first = sessions.next()??;
    let titles = column_titles(cols);
    (sessions.all(|s| s == Some(first)) && !titles.iter().any(|t| t.contains("session")))
        .then(|| format!("{first} session{}", plural(first)))
}

/// What a table's caption says: its family, its one measure, what its columns share.
pub fn caption(t: &Table) -> String {
    let mut parts = vec![t.family.clone()];
    parts.extend(t.one_measure.clone().filter(|m| m != "iperf3"));
    parts.extend(t.shared.clone());
    parts.join(" · ")
}

fn plural(n: u32) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What sets a group apart besides its profile: switch settings, then user dimensions.
fn setting_of(d: &Dims) -> String {
    let mut p = d.switches();
    p.extend(d.vars.iter().map(|(k, v)| format!("{k}={v}")));
    p.join(", ")
}

/// The headline tables of a run, one per family, in [`family_order`].
pub fn tables(a: &Analysis) -> Vec<Table<'_>> {
    let mut families: Vec<(Dims, Vec<&Row>)> = Vec::new();
    for r in &a.rows {
        let mut key = r.dims.clone();
        key.profile = String::new();
        key.frame = None;
        key.sessions = None;
        key.mss = None;
        key.offload = None;
        key.fastpath = None;
        key.vars = Vec::new();
        match families.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => families.push((key, vec![r])),
        }
    }
    families.sort_by_key(|(k, _)| family_order(k));
    let profile_order = |p: &str| a.profiles.iter().position(|x| x == p).unwrap_or(usize::MAX);
    families
        .into_iter()
        .map(|(key, rows)| {
            let mut cols: Vec<Column> = rows.iter().map(|r| column_of(&r.dims)).collect();
            cols.sort();
            cols.dedup();
            // Groups: (profile order, switches, vars) → measure → column → row.
            type GroupKey = (usize, Option<bool>, Option<bool>, Vec<(String, String)>);
            let mut groups: Vec<(GroupKey, Group)> = Vec::new();
            for r in &rows {
                let d = &r.dims;
                let gk = (
                    profile_order(&d.profile),
                    d.offload,
                    d.fastpath,
                    d.vars.clone(),
                );
                let g = match groups.iter_mut().find(|(k, _)| *k == gk) {
                    Some((_, g)) => g,
                    None => {
                        groups.push((
                            gk,
                            Group {
                                profile: d.profile.clone(),
                                setting: setting_of(d),
                                lines: Vec::new(),
                            },
                        ));
                        &mut groups.last_mut().expect("just pushed").1
                    }
                };
                let m = measure(r);
                let line = match g.lines.iter_mut().find(|(l, _)| *l == m) {
                    Some((_, cells)) => cells,
                    None => {
                        g.lines.push((m, vec![None; cols.len()]));
                        &mut g.lines.last_mut().expect("just pushed").1
                    }
                };
                let at = cols
                    .iter()
                    .position(|c| *c == column_of(d))
                    .expect("every row's column is a column");
                line[at] = Some(r);
            }
            groups.sort_by(|x, y| x.0.cmp(&y.0));
            let mut groups: Vec<Group> = groups.into_iter().map(|(_, g)| g).collect();
            for g in &mut groups {
                let rank =
                    |cells: &[Option<&Row>]| cells.iter().flatten().map(|r| measure_order(r)).min();
                g.lines.sort_by_key(|(_, cells)| rank(cells));
            }
            let mut measures: Vec<&str> = groups
                .iter()
                .flat_map(|g| g.lines.iter().map(|(m, _)| m.as_str()))
                .collect();
            measures.sort_unstable();
            measures.dedup();
            let one_measure = match measures.as_slice() {
                [m] => Some(m.to_string()),
                _ => None,
            };
            Table {
                family: rows[0].dims.family(),
                protocol: key.protocol,
                columns: column_titles(&cols),
                one_measure,
                shared: shared_sessions(&cols),
                groups,
            }
        })
        .collect()
}

/// How one cell of a headline table reads: the figure, the rate beside it, a mark when the
/// figure is not a plain DUT figure, and the percentage its shade stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// `37.2 %`, `TL`, `–`.
    pub main: String,
    /// `553 kpps` (UDP) or `940 Mb/s` (TCP, L2); empty without a figure.
    pub rate: String,
    /// `tester reached 30.0 %` (beside `TL`), `2 of 3 repetitions`, or the row's status when
    /// it is anything but `ok`; `None` for a plain DUT figure.
    pub mark: Option<String>,
    /// The percentage of line rate to shade by; `None`: not a DUT figure, no shade.
    pub shade: Option<f64>,
    /// The case and methodology the cell shows (the results table's row), for a tooltip.
    pub case: Option<String>,
}

/// The cell for `r` (`None`: no such case; `unfinished`: the run did not finish, so it may yet
/// come). `status` is the results table's status word of a row (`crate::text::status`), so
/// that whatever it says of a figure the headline says too.
pub fn cell(r: Option<&Row>, unfinished: bool, status: fn(&Row) -> &'static str) -> Cell {
    let Some(r) = r else {
        return Cell {
            main: if unfinished { "missing" } else { "–" }.into(),
            rate: String::new(),
            mark: None,
            shade: None,
            case: None,
        };
    };
    let case = Some(format!("{} [{}]", r.case_id, r.methodology_label()));
    let word = status(r);
    if r.tester_limited {
        return Cell {
            main: "TL".into(),
            rate: String::new(),
            mark: r
                .tester_reached_percent
                .map(|p| format!("tester reached {p:.1} %")),
            shade: None,
            case,
        };
    }
    let Some(p) = r.percent.filter(|p| p.is_finite()) else {
        return Cell {
            main: "no figure".into(),
            rate: String::new(),
            mark: (word != "ok").then(|| word.to_string()),
            shade: None,
            case,
        };
    };
    let rate = match r.dims.protocol {
        Protocol::Tcp => r.l2_bps.map(|b| bits(b.0)).unwrap_or_default(),
        Protocol::Udp => r.pps.map(|p| frames(p.0)).unwrap_or_default(),
    };
    let (mark, shade) = match word {
        "ok" => (None, Some(p)),
        "partial" => (
            Some(format!(
                "{} of {} repetitions",
                r.repetitions, r.repetitions_planned
            )),
            Some(p),
        ),
        // Any other status says the figure is not what it seems: no shade, its word beside it.
        other => (Some(other.to_string()), None),
    };
    Cell {
        main: format!("{p:.1} %"),
        rate,
        mark,
        shade,
        case,
    }
}

/// Three significant digits, as a reader compares rates at a glance.
fn sig3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Frames per second with a unit prefix: `1.49 Mpps`, `553 kpps`, `812 pps`.
pub fn frames(pps: f64) -> String {
    if pps >= 1e6 {
        format!("{} Mpps", sig3(pps / 1e6))
    } else if pps >= 1e3 {
        format!("{} kpps", sig3(pps / 1e3))
    } else {
        format!("{pps:.0} pps")
    }
}

/// Bits per second as Mb/s (Gb/s from 10 Gb/s): `940 Mb/s`, `11.4 Gb/s`.
pub fn bits(bps: f64) -> String {
    if bps >= 1e10 {
        format!("{} Gb/s", sig3(bps / 1e9))
    } else {
        format!("{} Mb/s", sig3(bps / 1e6))
    }
}

/// What the headline's cells and labels mean, for the line under the tables: only the
/// measures and marks this run's tables use.
pub fn legend(a: &Analysis, tables: &[Table]) -> String {
    let rows = || {
        tables
            .iter()
            .flat_map(|t| &t.groups)
            .flat_map(|g| &g.lines)
            .flat_map(|(_, cells)| cells.iter().flatten())
    };
    let udp = tables.iter().any(|t| matches!(t.protocol, Protocol::Udp));
    let tcp = tables.iter().any(|t| matches!(t.protocol, Protocol::Tcp));
    let mut s = String::from("Each cell: % of the line rate of the case's frame on its path");
    match (udp, tcp) {
        (true, true) => s.push_str(", with frames/s (UDP) or Mb/s of L2 frames (TCP)"),
        (true, false) => s.push_str(", with frames/s"),
        (false, true) => s.push_str(", with Mb/s of L2 frames"),
        (false, false) => {}
    }
    s.push_str(&format!(
        "; mean over {} repetition{}",
        a.repetitions,
        if a.repetitions == 1 { "" } else { "s" }
    ));
    if tables.iter().any(|t| t.family.ends_with("bidirectional")) {
        s.push_str("; bidirectional families sum both directions");
    }
    s.push('.');
    let mut measures: Vec<String> = rows().map(|r| measure(r)).collect();
    measures.sort();
    measures.dedup();
    let says = |m: &str| -> Option<String> {
        match m {
            "NDR" => Some("NDR: no drop rate (zero loss)".into()),
            "RFC 2544" => Some(
                "RFC 2544: its throughput search (zero loss unless the plan allows some)".into(),
            ),
            "FR" => Some("FR: forwarding rate at the maximum offered load".into()),
            "iperf3" => None,
            m if m.starts_with("PDR ") => Some(format!(
                "{m}: partial drop rate (at most {} loss)",
                m.trim_start_matches("PDR ")
            )),
            _ => None,
        }
    };
    let words: Vec<String> = measures.iter().filter_map(|m| says(m)).collect();
    if !words.is_empty() {
        s.push_str(&format!(" {}.", words.join("; ")));
    }
    if rows().any(|r| r.tester_limited) {
        s.push_str(" TL: tester-limited, what the tester could not outpace; not a DUT figure.");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_with_three_significant_digits() {
        assert_eq!(frames(1_488_095.0), "1.49 Mpps");
        assert_eq!(frames(552_978.7), "553 kpps");
        assert_eq!(frames(81_274.4), "81.3 kpps");
        assert_eq!(frames(5_124.5), "5.12 kpps");
        assert_eq!(frames(812.0), "812 pps");
        assert_eq!(bits(939.97e6), "940 Mb/s");
        assert_eq!(bits(61.3e6), "61.3 Mb/s");
        assert_eq!(bits(11.38e9), "11.4 Gb/s");
    }

    #[test]
    fn tcp_columns_name_sessions_only_when_they_vary() {
        let t = |s: u32, m: Option<u32>| Column::Tcp {
            sessions: Some(s),
            set_mss: m.is_some(),
            mss: std::cmp::Reverse(m),
        };
        let mut cols = vec![t(1, Some(400)), t(1, Some(1414)), t(1, None)];
        cols.sort();
        assert_eq!(column_titles(&cols), ["1 session", "MSS 1414", "MSS 400"]);
        assert_eq!(shared_sessions(&cols), None, "the first heading names it");
        let only_mss: Vec<Column> = cols[1..].to_vec();
        assert_eq!(column_titles(&only_mss), ["MSS 1414", "MSS 400"]);
        assert_eq!(shared_sessions(&only_mss).as_deref(), Some("1 session"));
        let mut cols = vec![t(4, Some(800)), t(1, Some(800)), t(1, None)];
        cols.sort();
        assert_eq!(
            column_titles(&cols),
            ["1 session", "1 session, MSS 800", "4 sessions, MSS 800"]
        );
    }
}
