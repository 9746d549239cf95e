//! The offloads of a tester port that change what its kernel counts: with segmentation
//! (TSO, GSO) or receive coalescing (GRO, LRO) on, iperf3 and the port's counters see 64 KB
//! segments where a wire carries MSS-sized frames, so a TCP figure is the kernel's, not the
//! link's (DESIGN.md §8: 18 Gb/s over veth). The preflight reports them; it changes nothing.

use crate::port_link::Offload;

/// The features reported, in `ethtool -k`'s words.
pub const REPORTED: [&str; 4] = [
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
];

/// Short names for a reader.
pub fn short(name: &str) -> &str {
    match name {
        "tcp-segmentation-offload" => "TSO",
        "generic-segmentation-offload" => "GSO",
        "generic-receive-offload" => "GRO",
        "large-receive-offload" => "LRO",
        other => other,
    }
}

/// The [`REPORTED`] features of `ethtool -k` output (`name: on`, `name: off [fixed]`).
pub fn parse(text: &str) -> Vec<Offload> {
    let mut out = Vec::new();
    for want in REPORTED {
        let found = text.lines().find_map(|l| {
            let (name, rest) = l.trim().split_once(':')?;
            (name == want).then(|| rest.trim().starts_with("on"))
        });
        if let Some(on) = found {
            out.push(Offload {
                name: want.to_string(),
                on,
            });
        }
    }
    out
}

/// `TSO on, GSO on, GRO off, LRO off`.
pub fn describe(offloads: &[Offload]) -> String {
    let parts: Vec<String> = offloads
        .iter()
        .map(|o| format!("{} {}", short(&o.name), if o.on { "on" } else { "off" }))
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_four_that_matter() {
        let text = "Features for wrpna:
rx-checksumming: on
tcp-segmentation-offload: on
	tx-tcp-segmentation: on
generic-segmentation-offload: on
generic-receive-offload: off
large-receive-offload: off [fixed]
";
        let o = parse(text);
        assert_eq!(describe(&o), "TSO on, GSO on, GRO off, LRO off");
        assert!(parse("nothing here").is_empty());
    }
}
