//! The stream keys of `[run]` (`wirerate trial`'s stream flags: flows, ToS, bursts,
//! reordering, TX method, drain), the `flows` and `tos` dimensions of a `[[matrix]]` block, and
//! the checks of both against what a block runs. Each value has the bounds `wirerate trial`
//! and the engine give it, refused here at its key with what to write instead.

use super::*;
use crate::plan::{StreamSettings, TxMethod, MAX_DRAIN};

/// The `[run]` keys read here.
pub(super) const RUN_STREAM_KEYS: [&str; 11] = [
    "src-ips",
    "dst-ips",
    "src-ports",
    "dst-ports",
    "random-seed",
    "tos",
    "burst",
    "burst-gap",
    "reorder-every",
    "tx-method",
    "drain",
];

/// Most frames in one burst (the engine's `StreamConfig::MAX_BURST`).
pub(super) const MAX_BURST: i64 = 1 << 20;

/// Longest idle time after a burst (the engine's `StreamConfig::MAX_BURST_GAP`).
const MAX_BURST_GAP: Duration = Duration::from_secs(3600);

/// The methodologies whose trials are built by `bench::spec::from_plan::udp_spec`: the ones
/// the stream settings reach. The connection methodologies make their own tuples
/// (`connections`), iperf3 its own streams.
fn builds_streams(m: Methodology) -> bool {
    m.needs_engine() && !m.is_connection()
}

impl Walker<'_> {
    /// The stream keys of the `[run]` table `t`, checked one by one and against each other
    /// (`backend`: `run.backend`, which `tx-method` must fit).
    pub(super) fn run_stream(&mut self, t: &DeTable<'_>, backend: TxBackend) -> StreamSettings {
        let mut s = StreamSettings::default();
        let at = |k: &str| format!("run.{k}");
        for (key, slot) in [("src-ips", &mut s.src_ips), ("dst-ips", &mut s.dst_ips)] {
            if let Some(n) = get(t, key).and_then(|v| self.int(v, &at(key), 1, u32::MAX.into())) {
                *slot = n as u32;
            }
        }
        for (key, slot) in [
            ("src-ports", &mut s.src_ports),
            ("dst-ports", &mut s.dst_ports),
        ] {
            if let Some(n) = get(t, key).and_then(|v| self.int(v, &at(key), 1, u16::MAX.into())) {
                *slot = n as u16;
            }
        }
        if let Some(n) =
            get(t, "random-seed").and_then(|v| self.int(v, &at("random-seed"), 0, i64::MAX))
        {
            s.random_seed = Some(n as u64);
        }
        if let Some(n) = get(t, "tos").and_then(|v| self.int(v, &at("tos"), 0, 255)) {
            s.tos = n as u8;
        }
        if let Some(n) = get(t, "burst").and_then(|v| self.int(v, &at("burst"), 1, MAX_BURST)) {
            s.burst = n as u32;
        }
        if let Some(v) = get(t, "burst-gap") {
            if let Some(d) = self.duration(v, &at("burst-gap")) {
                if d.is_zero() || d > MAX_BURST_GAP {
                    self.err(
                        v.span(),
                        &at("burst-gap"),
                        format!("must be above 0 and at most {} s (or leave it out for bursts back to back at the load)", MAX_BURST_GAP.as_secs()),
                    );
                } else if s.burst < 2 {
                    self.err(
                        v.span(),
                        &at("burst-gap"),
                        "needs `run.burst` of 2 frames or more (with bursts of 1 frame a gap is only a lower rate)",
                    );
                } else {
                    s.burst_gap = Some(d);
                }
            }
        }
        if let Some(n) =
            get(t, "reorder-every").and_then(|v| self.int(v, &at("reorder-every"), 2, i64::MAX))
        {
            s.reorder_every = Some(n as u64);
        }
        if let Some(v) = get(t, "tx-method") {
            if let Some(m) = self.choice(v, &at("tx-method"), &TxMethod::ALL) {
                if m == TxMethod::Sendmmsg && backend == TxBackend::Xdp {
                    self.err(
                        v.span(),
                        &at("tx-method"),
                        "`sendmmsg` is an AF_PACKET send path, and `run.backend = \"xdp\"` never runs AF_PACKET: set `backend = \"af_packet\"` (or `\"auto\"`, which then runs AF_PACKET)",
                    );
                }
                s.tx_method = m;
            }
        }
        if let Some(v) = get(t, "drain") {
            if let Some(d) = self.duration(v, &at("drain")) {
                if d > MAX_DRAIN {
                    self.err(
                        v.span(),
                        &at("drain"),
                        format!(
                            "must be at most {} s (receivers wait this long after every trial)",
                            MAX_DRAIN.as_secs()
                        ),
                    );
                } else {
                    s.drain = d;
                }
            }
        }
        s
    }

    /// The stream settings against what block `m` (at `path`) runs: refused at the key that
    /// cannot apply, naming the block and what to do.
    pub(super) fn matrix_stream_fits(
        &mut self,
        root: &DeTable<'_>,
        item: &Value<'_>,
        path: &str,
        m: &Matrix,
        run: &RunSettings,
        ports: &[Port],
    ) {
        let Some(t) = item.get_ref().as_table() else {
            return;
        };
        // Both ways through port B's session or softwire, the reverse stream rides the one
        // mapping the forward stream's learning frames made (bench::testbed): more flows would
        // find no mapping in the DUT's NAPT and count as its loss.
        let b_session = ports
            .get(1)
            .is_some_and(|p| p.pppoe.is_some() || p.dslite.is_some());
        if m.bidirectional && b_session {
            let s = &run.stream;
            let run_counts = [
                ("src-ips", s.src_ips > 1),
                ("dst-ips", s.dst_ips > 1),
                ("src-ports", s.src_ports > 1),
                ("dst-ports", s.dst_ports > 1),
            ];
            let at = match get(t, "flows") {
                Some(v) if m.flows.iter().any(|&n| n > 1) => Some((v, join(path, "flows"))),
                _ => run_counts
                    .iter()
                    .find(|(_, many)| *many)
                    .and_then(|(k, _)| run_key(root, k).map(|v| (v, format!("run.{k}")))),
            };
            if let Some((v, key)) = at {
                self.err(
                    v.span(),
                    &key,
                    format!("{path} runs both ways through port `{}`'s session, whose reverse stream rides the one mapping the forward stream's learning frames made; more flows would find none in the DUT's NAT and count as its loss: give one flow, or drop `bidirectional`", ports[1].name),
                );
            }
        }
        let udp = m.protocol.contains(&Protocol::Udp);
        let streams = udp && m.methodologies.iter().any(|x| builds_streams(*x));
        let connections: Vec<&str> = m
            .methodologies
            .iter()
            .filter(|x| x.is_connection())
            .map(|x| x.name())
            .collect();
        for key in ["flows", "tos"] {
            if let Some(v) = get(t, key) {
                if !streams {
                    self.err(
                        v.span(),
                        &join(path, key),
                        "applies to the UDP test streams of the rfc2544-*, multi-goal, forwarding-rate and mtu-probe methodologies; this block runs none (TCP and the nat-* methodologies make their own flows)",
                    );
                } else if !connections.is_empty() {
                    // Their trials would run once per value, the same each time.
                    self.err(
                        v.span(),
                        &join(path, key),
                        format!("{} make their own flows, so each `{key}` value would repeat the same measurement: put them in a block without `{key}`", connections.join(", ")),
                    );
                }
            }
        }
        if let (Some(v), Some(_)) = (get(t, "flows"), run_key(root, "src-ports")) {
            self.err(
                v.span(),
                &join(path, "flows"),
                "`flows` gives the source ports of each case, and `run.src-ports` gives them to every case: drop one of the two",
            );
        }
        if let Some(vars_t) = get(t, "vars").and_then(|vv| vv.get_ref().as_table()) {
            for (k, kspan, _) in entries(vars_t) {
                if (k == "flows" || k == "tos") && get(t, k).is_some() {
                    self.err(
                        kspan,
                        &join(&join(path, "vars"), k),
                        format!("`{k}` is a dimension of its own in this block; drop it from [matrix.vars] (hooks get WR_{})", k.to_ascii_uppercase()),
                    );
                }
            }
        }
        if !udp {
            return;
        }
        let s = &run.stream;
        let only_forwarding_rate = |w: &mut Self, key: &str, what: &str| {
            let others: Vec<&str> = m
                .methodologies
                .iter()
                .filter(|x| builds_streams(**x) && **x != Methodology::ForwardingRate)
                .map(|x| x.name())
                .collect();
            if let (false, Some(v)) = (others.is_empty(), run_key(root, key)) {
                w.err(
                    v.span(),
                    &format!("run.{key}"),
                    format!("{what}; {path} runs {} (use `forwarding-rate` in a plan of its own, or `wirerate trial --{key}`)", others.join(", ")),
                );
            }
        };
        if s.reorder_every.is_some() {
            only_forwarding_rate(
                self,
                "reorder-every",
                "deliberate reordering tests the receiver, and a search must judge the DUT: it applies to forwarding-rate trials only",
            );
        }
        if s.burst_gap.is_some() {
            only_forwarding_rate(
                self,
                "burst-gap",
                "with a gap the frames of a burst are paced at the load and the average is lower, so a search's load would not be what it offered: it applies to forwarding-rate trials only",
            );
        }
        if s.burst > 1 && m.methodologies.contains(&Methodology::Rfc2544BackToBack) {
            if let Some(v) = run_key(root, "burst") {
                self.err(
                    v.span(),
                    "run.burst",
                    format!("{path} runs rfc2544-back-to-back, which sends one burst of its own length at line rate: give `burst` in a plan without it"),
                );
            }
        }
    }
}

/// The value of `run.KEY` in the plan's root table, for errors at that key.
fn run_key<'a, 'i>(root: &'a DeTable<'i>, key: &str) -> Option<&'a Value<'i>> {
    get(root, "run")
        .and_then(|r| r.get_ref().as_table())
        .and_then(|t| get(t, key))
}
