//! Parsers for what DUT hooks print: `vmstat`, `/proc/stat`, nftables counters, a power
//! meter's readings.
//!
//! Each returns `None` for text it does not recognise rather than guessing; the raw text is
//! stored either way, so nothing is lost when a parser gives up.

use serde::{Deserialize, Serialize};

/// A parsed hook output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Parsed {
    /// `vmstat` samples.
    Vmstat(CpuSamples),
    /// `/proc/stat` CPU lines.
    ProcStat(Vec<CpuTimes>),
    /// nftables counter totals.
    Nft(NftCounters),
    /// A power meter's readings.
    Power(PowerSamples),
}

impl Parsed {
    pub(crate) fn filter_empty(self) -> Option<Parsed> {
        match &self {
            Parsed::ProcStat(v) if v.is_empty() => None,
            _ => Some(self),
        }
    }
}

/// CPU busy percentages, one per sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSamples {
    /// 100 − idle, per sample, in order.
    pub busy_percent: Vec<f64>,
}

impl CpuSamples {
    /// Mean busy percentage, `None` without samples.
    pub fn mean(&self) -> Option<f64> {
        (!self.busy_percent.is_empty())
            .then(|| self.busy_percent.iter().sum::<f64>() / self.busy_percent.len() as f64)
    }
}

/// A power meter's readings in watts, one per sample, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerSamples {
    /// Watts per reading.
    pub watts: Vec<f64>,
}

impl PowerSamples {
    /// Mean power, `None` without readings.
    pub fn mean(&self) -> Option<f64> {
        (!self.watts.is_empty()).then(|| self.watts.iter().sum::<f64>() / self.watts.len() as f64)
    }
}

/// Parses a power meter's output, one reading per line, whatever else the line says: the
/// line's first number, in watts unless a unit follows it (attached or as the next word:
/// `W`, `mW` or `kW`, any case). `12.5`, `12.5 W`, `power: 12500 mW` and
/// `2026-11-25 10:00:00 12.5W` all read 12.5 W (a date, a time or `5%` is not a reading). Lines without
/// a number, and negative or non-finite readings, are skipped; `None` when no line has one.
///
/// The published home-gateway tables put the device's power beside its throughput; users with
/// a meter (a smart plug, a USB power meter, a PDU) wrap its command line in a sampler hook
/// (`parse = "power"`) and the report averages its readings per case.
pub fn power(text: &str) -> Option<PowerSamples> {
    let watts: Vec<f64> = text.lines().filter_map(power_reading).collect();
    (!watts.is_empty()).then_some(PowerSamples { watts })
}

/// The reading on one line of a power meter's output, in watts.
fn power_reading(line: &str) -> Option<f64> {
    let tokens: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '=')
        .filter(|t| !t.is_empty())
        .collect();
    let scale_of = |unit: &str| match unit
        .trim_end_matches([')', '.'])
        .to_ascii_lowercase()
        .as_str()
    {
        "w" => Some(1.0),
        "mw" => Some(1e-3),
        "kw" => Some(1e3),
        _ => None,
    };
    for (i, t) in tokens.iter().enumerate() {
        let t = t.trim_start_matches([':', '(']);
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let Ok(value) = num.parse::<f64>() else {
            continue;
        };
        let scale = if unit.is_empty() {
            // A unit may be the next word; anything else there is not one.
            tokens.get(i + 1).and_then(|u| scale_of(u)).unwrap_or(1.0)
        } else {
            // `10:00:00`, `2026-11-25T…`, `5%`: a number glued to something that is not a
            // unit is not a reading.
            match scale_of(unit) {
                Some(s) => s,
                None => continue,
            }
        };
        let watts = value * scale;
        return (watts.is_finite() && watts >= 0.0).then_some(watts);
    }
    None
}

/// Parses `vmstat N` output (Linux procps or BSD): CPU busy = 100 − the `id` column. The first
/// sample is dropped because vmstat computes it over the time since boot, not the interval.
/// Repeated header lines are recognised.
pub fn vmstat(text: &str) -> Option<CpuSamples> {
    let mut idle_col: Option<(usize, usize)> = None; // (index of `id`, column count)
    let mut first = true;
    let mut busy = Vec::new();
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = tokens.iter().position(|t| *t == "id") {
            if tokens.contains(&"us") {
                if idle_col.is_none() {
                    first = true;
                }
                idle_col = Some((i, tokens.len()));
                continue;
            }
        }
        let Some((i, n)) = idle_col else { continue };
        if tokens.len() != n {
            continue;
        }
        let Ok(idle) = tokens[i].parse::<f64>() else {
            continue;
        };
        if first {
            first = false;
            continue;
        }
        busy.push(100.0 - idle);
    }
    idle_col.map(|_| CpuSamples { busy_percent: busy })
}

/// One `cpu` line of `/proc/stat`, in USER_HZ ticks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// `cpu` (all CPUs) or `cpuN`.
    pub name: String,
    /// user, nice, system, idle, iowait, irq, softirq, steal (guest time is inside user).
    pub ticks: [u64; 8],
}

impl CpuTimes {
    /// Idle ticks (idle + iowait).
    pub fn idle(&self) -> u64 {
        self.ticks[3] + self.ticks[4]
    }

    /// All ticks.
    pub fn total(&self) -> u64 {
        self.ticks.iter().sum()
    }
}

/// Parses the `cpu` lines of `/proc/stat`.
pub fn proc_stat(text: &str) -> Vec<CpuTimes> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace();
            let name = it.next()?;
            if !name.starts_with("cpu") {
                return None;
            }
            let mut ticks = [0u64; 8];
            for t in &mut ticks {
                *t = it.next()?.parse().ok()?;
            }
            Some(CpuTimes {
                name: name.to_string(),
                ticks,
            })
        })
        .collect()
}

/// CPU busy percent of CPU `name` between two `/proc/stat` snapshots; `None` when the CPU is
/// missing or the counters did not move forward.
pub fn cpu_busy_percent(before: &[CpuTimes], after: &[CpuTimes], name: &str) -> Option<f64> {
    let b = before.iter().find(|c| c.name == name)?;
    let a = after.iter().find(|c| c.name == name)?;
    let total = a.total().checked_sub(b.total())?;
    let idle = a.idle().checked_sub(b.idle())?;
    (total > 0 && idle <= total).then(|| 100.0 * (1.0 - idle as f64 / total as f64))
}

/// A named nftables counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedCounter {
    /// Table family and name, e.g. `inet wirerate`.
    pub table: String,
    /// Counter name.
    pub name: String,
    /// Packets counted.
    pub packets: u64,
    /// Bytes counted.
    pub bytes: u64,
}

/// nftables counters: named counters, and the sum of anonymous rule counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NftCounters {
    /// Named counter objects.
    pub named: Vec<NamedCounter>,
    /// How many anonymous (`counter` statement in a rule) counters were found.
    pub rule_counters: u64,
    /// Sum of the anonymous counters' packets.
    pub rule_packets: u64,
    /// Sum of the anonymous counters' bytes.
    pub rule_bytes: u64,
}

impl NftCounters {
    /// Packets over named and anonymous counters.
    pub fn total_packets(&self) -> u64 {
        self.rule_packets + self.named.iter().map(|c| c.packets).sum::<u64>()
    }

    /// Bytes over named and anonymous counters.
    pub fn total_bytes(&self) -> u64 {
        self.rule_bytes + self.named.iter().map(|c| c.bytes).sum::<u64>()
    }
}

/// Parses `nft list counters` / `nft list ruleset` text. `None` when no table was seen.
pub fn nft_text(text: &str) -> Option<NftCounters> {
    let mut out = NftCounters::default();
    let mut table: Option<String> = None;
    let mut named: Option<String> = None;
    for line in text.lines() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        match tokens.as_slice() {
            ["table", family, name, "{"] => {
                table = Some(format!("{family} {name}"));
                continue;
            }
            ["counter", name, "{"] => {
                named = Some(name.to_string());
                continue;
            }
            ["}"] => {
                named = None;
                continue;
            }
            _ => {}
        }
        // `packets N bytes M`, alone (named counter body) or after `counter` in a rule. Not
        // just any `packets`: a rule's `limit rate … burst 1000 packets` comes earlier.
        let triple = |p: usize| match (
            tokens.get(p + 1).and_then(|t| t.parse::<u64>().ok()),
            tokens.get(p + 2).copied(),
            tokens.get(p + 3).and_then(|t| t.parse::<u64>().ok()),
        ) {
            (Some(packets), Some("bytes"), Some(bytes)) => Some((packets, bytes)),
            _ => None,
        };
        let Some((p, (packets, bytes))) = tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| **t == "packets")
            .find_map(|(p, _)| triple(p).map(|c| (p, c)))
        else {
            continue;
        };
        match (&named, p) {
            (Some(name), 0) => out.named.push(NamedCounter {
                table: table.clone().unwrap_or_default(),
                name: name.clone(),
                packets,
                bytes,
            }),
            _ if p > 0 && tokens[p - 1] == "counter" => {
                out.rule_counters += 1;
                out.rule_packets += packets;
                out.rule_bytes += bytes;
            }
            _ => {}
        }
    }
    table.map(|_| out)
}

/// Parses `nft -j list ruleset` (or `nft -j list counters`). `None` when it is not nftables
/// JSON.
pub fn nft_json(text: &str) -> Option<NftCounters> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let items = v.get("nftables")?.as_array()?;
    let mut out = NftCounters::default();
    let num = |o: &serde_json::Value, k: &str| o.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    for item in items {
        if let Some(c) = item.get("counter") {
            out.named.push(NamedCounter {
                table: format!(
                    "{} {}",
                    c.get("family").and_then(|x| x.as_str()).unwrap_or(""),
                    c.get("table").and_then(|x| x.as_str()).unwrap_or("")
                ),
                name: c.get("name").and_then(|x| x.as_str()).unwrap_or("").into(),
                packets: num(c, "packets"),
                bytes: num(c, "bytes"),
            });
        } else if let Some(exprs) = item
            .get("rule")
            .and_then(|r| r.get("expr"))
            .and_then(|e| e.as_array())
        {
            for e in exprs {
                // An object is an anonymous counter; a string refers to a named one.
                if let Some(c) = e.get("counter").filter(|c| c.is_object()) {
                    out.rule_counters += 1;
                    out.rule_packets += num(c, "packets");
                    out.rule_bytes += num(c, "bytes");
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_readings_in_watts_whatever_the_meter_prints() {
        let text = "12.5\n13.5 W\npower: 14000 mW\n2026-11-25 10:00:00 15W\nP=0.016 kW (5%)\nno reading\n-3 W\n";
        let p = power(text).unwrap();
        assert_eq!(p.watts, vec![12.5, 13.5, 14.0, 15.0, 16.0]);
        assert_eq!(p.mean(), Some(14.2));
        assert_eq!(power("meter offline\n"), None);
        assert_eq!(power(""), None);
        assert_eq!(power("NaN W\ninf\n"), None);
    }

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/hooks/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn vmstat_linux_real_output() {
        // Captured with `vmstat 1 3` on the dev VM: idle 64 (since boot), 2, 2.
        let s = vmstat(&fixture("vmstat-1.txt")).unwrap();
        assert_eq!(s.busy_percent, vec![98.0, 98.0]);
        assert_eq!(s.mean(), Some(98.0));
    }

    #[test]
    fn vmstat_bsd_layout_and_repeated_header() {
        let text = "\
 procs    memory    page                      disks     faults       cpu
 r  b  w  avm  fre  flt  re  pi  po   fr   sr ad0   in   sy   cs us sy id
 0  0  0 514M 1.1G   12   0   0   0   20    5   0    3   48   70  0  0 100
 1  0  0 514M 1.1G  120   0   0   0  200    5   0  900 4800 7000 10 45 45
 r  b  w  avm  fre  flt  re  pi  po   fr   sr ad0   in   sy   cs us sy id
 1  0  0 514M 1.1G  120   0   0   0  200    5   0  900 4800 7000 10 60 30
";
        assert_eq!(vmstat(text).unwrap().busy_percent, vec![55.0, 70.0]);
        assert_eq!(vmstat("no header here"), None);
    }

    #[test]
    fn proc_stat_real_snapshots() {
        let before = proc_stat(&fixture("proc-stat-before.txt"));
        let after = proc_stat(&fixture("proc-stat-after.txt"));
        assert_eq!(before.len(), 3);
        assert_eq!(before[0].name, "cpu");
        assert_eq!(before[1].name, "cpu0");
        // Numbers from the files: total Δ = 397 ticks, idle+iowait Δ = 6.
        assert_eq!(after[0].total() - before[0].total(), 397);
        assert_eq!(after[0].idle() - before[0].idle(), 6);
        let busy = cpu_busy_percent(&before, &after, "cpu").unwrap();
        assert!((busy - 100.0 * (1.0 - 6.0 / 397.0)).abs() < 1e-9);
        // Swapped snapshots go backwards: no figure rather than a wrong one.
        assert_eq!(cpu_busy_percent(&after, &before, "cpu"), None);
        assert_eq!(cpu_busy_percent(&before, &after, "cpu7"), None);
    }

    #[test]
    fn nft_rule_counter_after_a_limit_burst_in_packets() {
        // nft 1.0.6 prints a policer rule with two `packets`: the burst's unit, then the counter.
        let text = "table inet wrpolice {\n\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n\t\tmeta l4proto udp limit rate over 50000/second burst 1000 packets counter packets 123 bytes 7872 drop\n\t}\n}\n";
        let c = nft_text(text).unwrap();
        assert_eq!(c.rule_counters, 1);
        assert_eq!((c.rule_packets, c.rule_bytes), (123, 7872));
    }

    #[test]
    fn nft_text_real_output() {
        // Captured in a scratch namespace: named counter `seen` (0/0) and three rule counters,
        // one of which (output chain) saw 6 packets / 504 bytes of pings.
        let c = nft_text(&fixture("nft-list-ruleset.txt")).unwrap();
        assert_eq!(
            c.named,
            vec![NamedCounter {
                table: "inet wrfix".into(),
                name: "seen".into(),
                packets: 0,
                bytes: 0
            }]
        );
        assert_eq!((c.rule_counters, c.rule_packets, c.rule_bytes), (3, 6, 504));
        let only_named = nft_text(&fixture("nft-list-counters.txt")).unwrap();
        assert_eq!(only_named.named.len(), 1);
        assert_eq!(only_named.rule_counters, 0);
    }

    #[test]
    fn nft_json_agrees_with_text() {
        let j = nft_json(&fixture("nft-ruleset.json")).unwrap();
        let t = nft_text(&fixture("nft-list-ruleset.txt")).unwrap();
        assert_eq!(j, t);
        assert_eq!(j.total_packets(), 6);
        assert_eq!(j.total_bytes(), 504);
        assert_eq!(nft_json("{}"), None);
    }
}
