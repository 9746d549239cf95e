//! `mtu-probe` results (bench_model::search::MtuProbe): per case and direction, the largest
//! frame size that crossed the DUT whole and the fate one byte above it, for every format.
//! Each format puts them right after the throughput table, because they say which of its
//! large-frame rows measured whole frames.

use bench_model::plan::Methodology;
use bench_model::search::{Crossing, Finding, ProbeDirection, SearchResult, Status};

use crate::model::Dims;

pub use crate::model::MtuRow;

/// Column keys and titles of `mtu-probe.csv` and the tables.
pub const COLUMNS: [&str; 10] = [
    "case",
    "repetition",
    "direction",
    "searched_bytes",
    "largest_whole_bytes",
    "above_bytes",
    "above_fate",
    "above_sent",
    "above_received_whole",
    "above_fragments",
];
pub const TITLES: [&str; 10] = [
    "case",
    "rep",
    "direction",
    "sizes searched (B)",
    "largest whole (B)",
    "probed above (B)",
    "fate above",
    "sent",
    "received whole",
    "seen as fragments",
];

/// Extra column: the search's status (not in [`COLUMNS`] so the table stays narrow; the
/// fate cell says it when the search did not complete).
fn fate_cell(r: &MtuRow) -> String {
    let fate = r
        .above_fate
        .clone()
        .unwrap_or_else(|| match r.largest_whole {
            Some(_) => "none probed (the largest size crossed whole)".into(),
            None => String::new(),
        });
    if r.status == "complete" {
        fate
    } else {
        format!("{fate} [{}]", r.status)
    }
}

/// The cells of `r`, in [`COLUMNS`] order.
pub fn cells(r: &MtuRow) -> Vec<String> {
    let opt = |x: Option<u64>| x.map(|v| v.to_string()).unwrap_or_default();
    vec![
        r.case_id.clone(),
        r.repetition.to_string(),
        format!("{} ({})", r.path, r.direction),
        format!("{}–{}", r.min_size, r.max_size),
        r.largest_whole
            .map_or_else(|| "none".into(), |s| s.to_string()),
        r.above_size.map(|s| s.to_string()).unwrap_or_default(),
        fate_cell(r),
        opt(r.above_sent),
        opt(r.above_received),
        opt(r.above_fragments),
    ]
}

/// What the reader needs to read the table.
pub const INTRO: &str = "The largest frame size (reference frame with FCS, as in the throughput table) whose every frame crossed the DUT whole at a low fixed rate, per direction, found by bisection to the byte; and what happened one byte above it: dropped (nothing arrived; a DUT that answers ICMP \"fragmentation needed\" shows here too), fragmented (the far port saw IP fragments), partly lost, or not sent (larger than the tester's own port carries: the threshold is then the tester's, not the DUT's). Through PPPoE the frame on the uplink is 8 B longer, through DS-Lite 40 B.";

/// The rows of every finished `mtu-probe` search; `done` maps (case, repetition) to its
/// result, `dims` gives a case's dimensions.
pub fn rows(
    ports: &[String],
    done: &[(String, u32, Methodology, &SearchResult)],
    dims: &mut dyn FnMut(&str) -> Dims,
) -> Vec<MtuRow> {
    let names: Option<(String, String)> =
        (ports.len() >= 2).then(|| (ports[0].clone(), ports[1].clone()));
    let (a, b) = names.unwrap_or_else(|| ("A".into(), "B".into()));
    let mut out = Vec::new();
    for (case, rep, m, res) in done {
        if *m != Methodology::MtuProbe {
            continue;
        }
        let Finding::MtuProbe { directions } = &res.finding else {
            continue;
        };
        for d in directions {
            let path = match d.direction {
                ProbeDirection::Forward => format!("{a}→{b}"),
                ProbeDirection::Reverse => format!("{b}→{a}"),
            };
            let status = match (&res.status, d.complete) {
                (Status::Complete, _) | (_, true) => "complete".to_string(),
                (s, false) => s.to_string(),
            };
            out.push(MtuRow {
                case_id: case.clone(),
                dims: dims(case),
                repetition: *rep,
                direction: d.direction.name().into(),
                path,
                min_size: d.min_size,
                max_size: d.max_size,
                largest_whole: d.largest_whole,
                above_size: d.above.map(|f| f.frame_size),
                above_fate: d.above.map(|f| fate_name(f.crossing).to_string()),
                above_sent: d.above.map(|f| f.sent),
                above_received: d.above.map(|f| f.received),
                above_fragments: d.above.map(|f| f.fragments),
                status,
            });
        }
    }
    out
}

fn fate_name(c: Crossing) -> &'static str {
    c.name()
}

/// `mtu-probe.csv`: one line per case, repetition and direction.
pub fn csv(a: &crate::Analysis) -> Vec<u8> {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for r in &a.mtu {
        let line: Vec<String> = cells(r)
            .iter()
            .map(|c| crate::escape::csv_field(c))
            .collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out.into_bytes()
}

/// The Markdown section (empty without results).
pub fn markdown(a: &crate::Analysis) -> String {
    if a.mtu.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "## Largest frame that crosses whole (mtu-probe)\n\n{INTRO}\n\n| {} |\n|{}\n",
        TITLES.join(" | "),
        "---|".repeat(TITLES.len())
    );
    for r in &a.mtu {
        let c: Vec<String> = cells(r)
            .iter()
            .map(|x| crate::escape::md_escape(x))
            .collect();
        o.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    o.push('\n');
    o
}

/// The HTML section (empty without results).
pub fn html(a: &crate::Analysis) -> String {
    use crate::svg::esc;
    if a.mtu.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<h3>Largest frame that crosses whole (mtu-probe)</h3><p>{}</p><table id=\"mtu-probe\"><tr>",
        esc(INTRO)
    );
    for t in TITLES {
        o.push_str(&format!("<th>{}</th>", esc(t)));
    }
    o.push_str("</tr>\n");
    for r in &a.mtu {
        o.push_str(&format!(
            "<tr data-mtu-case=\"{}\" data-direction=\"{}\">",
            esc(&r.case_id),
            esc(&r.direction)
        ));
        for (i, c) in cells(r).iter().enumerate() {
            let numeric = matches!(i, 1 | 4 | 5 | 7 | 8 | 9);
            o.push_str(&format!(
                "<td{} data-k=\"{}\">{}</td>",
                if numeric { " class=\"n\"" } else { "" },
                COLUMNS[i],
                esc(c)
            ));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
    o
}

/// Terminal lines, one per direction: `  mtu lan→wan: 1472 B whole; 1473 B dropped`.
pub fn terminal_lines(a: &crate::Analysis) -> Vec<String> {
    a.mtu
        .iter()
        .map(|r| {
            let whole = r.largest_whole.map_or_else(
                || format!("none of {}–{} B whole", r.min_size, r.max_size),
                |s| format!("{s} B whole"),
            );
            let above = match (r.above_size, &r.above_fate) {
                (Some(s), Some(f)) => format!("; {s} B {f}"),
                _ => format!("; nothing probed above {} B", r.max_size),
            };
            format!(
                "{} mtu {} ({}): {whole}{above}",
                r.case_id, r.path, r.direction
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use bench_model::results::{MethodologyDone, Record, RunInfo};
    use bench_model::search::{MtuThreshold, SizeFate};

    use super::*;
    use crate::{analyse, render_all, RunInput};

    const PLAN: &str = r#"name = "cpe"
[topology]
kind = "interfaces"
[ports.lan]
interface = "eth1"
ipv4 = "192.168.1.100"
gateway-v4 = "192.168.1.1"
speed = "1G"
[ports.wan]
interface = "eth2"
namespace = "wr-wan"
speed = "1G"
[ports.wan.pppoe]
role = "server"
users = [{ user = "cpe", password = "secret" }]
[dut]
kind = "device"
[dut.profiles.default]
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["pppoe"]
bidirectional = true
frame-size = [1518]
methodologies = ["mtu-probe"]
"#;

    const CASE: &str = "default/udp4/1518B/encap=pppoe/bidir";

    fn threshold(direction: ProbeDirection, whole: u32, crossing: Crossing) -> MtuThreshold {
        MtuThreshold {
            direction,
            min_size: 64,
            max_size: 1518,
            largest_whole: Some(whole),
            above: Some(SizeFate {
                frame_size: whole + 1,
                crossing,
                sent: 1000,
                received: 0,
                fragments: if crossing == Crossing::Fragmented {
                    1000
                } else {
                    0
                },
            }),
            complete: true,
        }
    }

    /// A finished probe gives one row per direction, named by the plan's ports, in every
    /// format and the terminal's table; no throughput row comes of it.
    #[test]
    fn thresholds_per_direction_in_every_format() {
        let info = RunInfo {
            facts: None,
            plan_name: "cpe".into(),
            plan_text: PLAN.into(),
            version: "0.1.0".into(),
            started_unix: 0,
            host: Default::default(),
        };
        let records = vec![Record::Done(MethodologyDone {
            case_id: CASE.into(),
            repetition: 0,
            methodology: Methodology::MtuProbe,
            result: Some(SearchResult {
                status: Status::Complete,
                finding: Finding::MtuProbe {
                    directions: vec![
                        threshold(ProbeDirection::Forward, 1472, Crossing::Fragmented),
                        threshold(ProbeDirection::Reverse, 1470, Crossing::Dropped),
                    ],
                },
                trials: 26,
                trial_seconds: 26.0,
            }),
            ceiling: None,
            line_pps: None,
        })];
        let a = analyse(RunInput {
            info: &info,
            records: &records,
            torn_tail: false,
            stats: &[],
        });
        assert_eq!(a.completeness.plan_error, None);
        assert!(a.rows.is_empty());
        assert_eq!(a.mtu.len(), 2);
        assert_eq!(a.mtu[0].path, "lan→wan");
        assert_eq!(a.mtu[1].path, "wan→lan");
        assert_eq!(
            cells(&a.mtu[0])[3..7],
            ["64–1518", "1472", "1473", "fragmented"]
        );
        let files = render_all(&a);
        for name in ["summary.md", "report.html", "summary.json", "mtu-probe.csv"] {
            let text = files
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_else(|| panic!("{name} not written"));
            for needle in ["1472", "1473", "1470", "1471", "dropped", "fragmented"] {
                assert!(text.contains(needle), "{name} lacks {needle}:\n{text}");
            }
        }
        let t = crate::text::terminal(&a);
        assert!(
            t.contains(&format!(
                "{CASE} mtu lan→wan (forward): 1472 B whole; 1473 B fragmented"
            )),
            "{t}"
        );
        assert!(
            t.contains("wan→lan (reverse): 1470 B whole; 1471 B dropped"),
            "{t}"
        );
    }
}
