//! `wirerate trial --inside pppoe|dslite`: the flags, and the printing of what the session
//! contributed. The session is brought up by `bench::inside` with plans' session runner
//! (`bench::isp`); the fragmenting path for sizes the session does not carry whole is there too.

use bench::inside::{InsideOptions, InsideSummary, MAX_SLOW};
use engine::trial::TrialReport;

use crate::error::{CliError, CliResult};

/// Options of `wirerate trial` for streams inside a session or tunnel.
#[derive(Debug, Clone, clap::Args)]
pub struct InsideArgs {
    /// Run the streams inside a PPPoE session or DS-Lite softwire that wirerate brings up
    /// between its ports (A: access concentrator / AFTR, B: PPPoE client / B4); the streams
    /// need --encap pppoe or dslite. Sizes too big for the session or tunnel are refused, as
    /// in plans (see --fragment-oversize).
    #[arg(long, value_name = "pppoe|dslite")]
    pub inside: Option<String>,
    /// With --inside: send sizes too big for the session or tunnel fragmented through the
    /// control planes (at most 10,000 packets per stream, not at --rate) and report them as
    /// fragmented, instead of refusing them. Not a rate trial: the fragments on the link and
    /// their rate are not the frames offered.
    #[arg(long, requires = "inside")]
    pub fragment_oversize: bool,
    /// PPPoE: the MRU both ends ask for (default 1454 on the AC, 1492 on the client).
    #[arg(long, value_name = "BYTES")]
    pub inside_mru: Option<u16>,
    /// DS-Lite: the largest outer IPv6 packet (default 1500); bigger ones are fragmented.
    #[arg(long, value_name = "BYTES", default_value_t = 1500)]
    pub inside_mtu: usize,
}

impl InsideArgs {
    /// The session runner's options.
    pub fn options(&self) -> CliResult<InsideOptions> {
        Ok(InsideOptions {
            kind: self
                .inside
                .as_deref()
                .map(str::parse)
                .transpose()
                .map_err(CliError::Usage)?,
            mru: self.inside_mru,
            mtu: self.inside_mtu,
            fragment_oversize: self.fragment_oversize,
        })
    }
}

/// Prints the trial's report (if the fast path ran) with the session and the fragmented
/// streams: one JSON object, or the table followed by the session and one line per stream.
pub fn print(
    s: &InsideSummary,
    r: Option<&TrialReport>,
    json: bool,
    table: fn(&TrialReport),
) -> CliResult {
    let InsideSummary {
        inside: summary,
        fragmented: rows,
        sessions,
    } = s;
    if json {
        let v = serde_json::json!({"trial": r, "inside": summary, "fragmented": rows,
            "sessions": sessions});
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| CliError::Failed(e.to_string()))?
        );
        return Ok(());
    }
    if let Some(r) = r {
        table(r);
    }
    outln!("\ninside: {summary}");
    for v in rows {
        outln!(
            "  stream {} ({} B, port {}): {} — {} B frames per packet; sent {} packets as {} \
             fragments, {} reassembled at the far end{}",
            v["stream"],
            v["size"],
            v["from"].as_str().unwrap_or("?"),
            v["fate"].as_str().unwrap_or("?"),
            v["frames_on_link"],
            v["packets"],
            v["fragments"],
            v["reassembled"],
            if v["capped"] == true {
                format!(" (capped at {MAX_SLOW}: the fragmenting path is not a rate test)")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}
