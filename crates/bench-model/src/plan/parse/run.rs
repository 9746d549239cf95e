//! `[run]` and the methodology settings (`[methodology.*]`), with the keys each allows.

use super::*;

/// Keys of a goal table in `methodology.multi-goal.goals`.
pub(super) const GOAL_KEYS: [&str; 6] = [
    "loss-ratio",
    "exceed-ratio",
    "width",
    "initial-duration",
    "final-duration",
    "duration-sum",
];

/// Keys of `[methodology.multi-goal]`.
pub(super) const MULTI_GOAL_KEYS: [&str; 7] = [
    "goals",
    "width",
    "initial-duration",
    "exceed-ratio",
    "final-duration",
    "duration-sum",
    "search-time-cap",
];

/// Keys of `[methodology.nat-table-capacity]`.
pub(super) const TABLE_CAPACITY_KEYS: [&str; 6] = [
    "max-connections",
    "start-connections",
    "resolution-connections",
    "preliminary-rate",
    "validation-rate",
    "phase-gap",
];

/// Keys of `[methodology.nat-connection-rate]`.
pub(super) const CONNECTION_RATE_KEYS: [&str; 6] = [
    "connections",
    "min-rate",
    "max-rate",
    "resolution",
    "validation-rate",
    "phase-gap",
];

/// Keys of `[methodology.nat-teardown-rate]`.
pub(super) const TEARDOWN_RATE_KEYS: [&str; 5] = [
    "connections",
    "repetitions",
    "preliminary-rate",
    "validation-rate",
    "phase-gap",
];

/// Keys of `[methodology.nat-throughput]`.
pub(super) const NAT_THROUGHPUT_KEYS: [&str; 8] = [
    "connections",
    "min-rate",
    "max-rate",
    "resolution",
    "duration",
    "preliminary-rate",
    "validation-rate",
    "phase-gap",
];

/// Parses `500ms`, `2s`, `1.5s`, `2m`, `1h` (`wire::units::parse_time`, the parser of
/// `wirerate trial`'s times too).
pub(super) fn parse_duration(s: &str) -> Option<Duration> {
    wire::units::parse_time(s).ok()
}

impl Walker<'_> {
    pub(super) fn run(&mut self, root: &DeTable<'_>) -> RunSettings {
        let mut r = RunSettings {
            repetitions: 1,
            trial_duration: Duration::from_secs(10),
            settle: Duration::from_secs(1),
            profile_settle: Duration::from_secs(2),
            min_load: LineFraction(0.001),
            max_load: LineFraction::FULL,
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
            backend: TxBackend::Auto,
            tx_threads: 1,
            rx_threads: 1,
            stream: StreamSettings::default(),
            lan_watch: true,
        };
        let Some(v) = get(root, "run") else { return r };
        let Some(t) = self.table(v, "run") else {
            return r;
        };
        let allowed: Vec<&str> = [
            "repetitions",
            "trial-duration",
            "settle",
            "profile-settle",
            "min-load",
            "max-load",
            "tester-tolerance",
            "backend",
            "tx-threads",
            "rx-threads",
            "lan-watch",
        ]
        .into_iter()
        .chain(RUN_STREAM_KEYS)
        .collect();
        self.keys(t, "run", &allowed);
        for (key, slot) in [
            ("tx-threads", &mut r.tx_threads),
            ("rx-threads", &mut r.rx_threads),
        ] {
            let path = format!("run.{key}");
            if let Some(x) =
                get(t, key).and_then(|x| self.int(x, &path, 1, i64::from(crate::plan::MAX_THREADS)))
            {
                *slot = x as u16;
            }
        }
        if let Some(x) =
            get(t, "backend").and_then(|x| self.choice(x, "run.backend", &TxBackend::ALL))
        {
            r.backend = x;
        }
        if let Some(x) = get(t, "repetitions").and_then(|x| self.int(x, "run.repetitions", 1, 1000))
        {
            r.repetitions = x as u32;
        }
        if let Some(x) =
            get(t, "trial-duration").and_then(|x| self.duration(x, "run.trial-duration"))
        {
            if x.is_zero() {
                self.err(v.span(), "run.trial-duration", "must be above zero");
            }
            r.trial_duration = x;
        }
        if let Some(x) = get(t, "settle").and_then(|x| self.duration(x, "run.settle")) {
            r.settle = x;
        }
        if let Some(x) =
            get(t, "profile-settle").and_then(|x| self.duration(x, "run.profile-settle"))
        {
            r.profile_settle = x;
        }
        if let Some(x) = get(t, "min-load").and_then(|x| self.float(x, "run.min-load", 1e-6, 1.0)) {
            r.min_load = LineFraction(x);
        }
        if let Some(x) = get(t, "max-load").and_then(|x| self.float(x, "run.max-load", 1e-6, 1.0)) {
            r.max_load = LineFraction(x);
        }
        if r.min_load.0 >= r.max_load.0 {
            self.err(v.span(), "run.min-load", "must be below `run.max-load`");
        }
        if let Some(x) =
            get(t, "tester-tolerance").and_then(|x| self.float(x, "run.tester-tolerance", 0.0, 0.5))
        {
            r.tester_tolerance = x;
        }
        if let Some(x) = get(t, "lan-watch").and_then(|x| self.boolean(x, "run.lan-watch")) {
            r.lan_watch = x;
        }
        r.stream = self.run_stream(t, r.backend);
        r
    }

    /// One element of `methodology.multi-goal.goals`: a loss ratio, the name `"rfc2544"`, or a
    /// table of goal settings.
    pub(super) fn goal(&mut self, v: &Value<'_>, path: &str) -> Option<GoalSetting> {
        match v.get_ref() {
            DeValue::String(_) => self.choice(v, path, &[("rfc2544", GoalSetting::rfc2544())]),
            DeValue::Table(t) => {
                self.keys(t, path, &GOAL_KEYS);
                let loss = self.required(t, &v.span(), path, "loss-ratio")?;
                let mut g =
                    GoalSetting::ratio(self.float(loss, &join(path, "loss-ratio"), 0.0, 0.5)?);
                if let Some(x) = get(t, "exceed-ratio") {
                    g.exceed_ratio = Some(self.float(x, &join(path, "exceed-ratio"), 0.0, 0.99)?);
                }
                if let Some(x) = get(t, "width") {
                    g.width = Some(self.float(x, &join(path, "width"), 1e-6, 0.49)?);
                }
                for (key, slot) in [
                    ("initial-duration", &mut g.initial_duration),
                    ("final-duration", &mut g.final_duration),
                    ("duration-sum", &mut g.duration_sum),
                ] {
                    if let Some(x) = get(t, key) {
                        *slot = Some(self.positive_duration(x, &join(path, key))?);
                    }
                }
                Some(g)
            }
            _ => self.float(v, path, 0.0, 0.5).map(GoalSetting::ratio),
        }
    }

    pub(super) fn positive_duration(&mut self, v: &Value<'_>, path: &str) -> Option<Duration> {
        let d = self.duration(v, path)?;
        if d < Duration::from_millis(1) {
            self.err(v.span(), path, "must be at least 1ms");
            return None;
        }
        Some(d)
    }

    pub(super) fn methodology(
        &mut self,
        root: &DeTable<'_>,
        run: &RunSettings,
    ) -> MethodologySettings {
        let mut m = MethodologySettings::default();
        let Some(v) = get(root, "methodology") else {
            return m;
        };
        let Some(t) = self.table(v, "methodology") else {
            return m;
        };
        let names: Vec<&str> = Methodology::ALL.iter().map(|(n, _)| *n).collect();
        self.keys(t, "methodology", &names);
        if let Some(st) = self.sub(t, "rfc2544-throughput", &["loss-tolerance", "resolution"]) {
            let p = "methodology.rfc2544-throughput";
            if let Some(x) = get(st, "loss-tolerance")
                .and_then(|x| self.float(x, &join(p, "loss-tolerance"), 0.0, 0.5))
            {
                m.loss_tolerance = x;
            }
            if let Some(x) =
                get(st, "resolution").and_then(|x| self.float(x, &join(p, "resolution"), 1e-6, 0.5))
            {
                m.resolution = x;
            }
        }
        if let Some(st) = self.sub(t, "multi-goal", &MULTI_GOAL_KEYS) {
            let p = "methodology.multi-goal";
            if let Some(x) = get(st, "goals")
                .and_then(|x| self.list(x, &join(p, "goals"), |w, i, q| w.goal(i, q)))
            {
                m.goals = x;
            }
            if let Some(x) = get(st, "exceed-ratio")
                .and_then(|x| self.float(x, &join(p, "exceed-ratio"), 0.0, 0.99))
            {
                m.exceed_ratio = x;
            }
            for (key, slot) in [
                ("final-duration", &mut m.final_duration),
                ("duration-sum", &mut m.duration_sum),
                ("search-time-cap", &mut m.search_time_cap),
            ] {
                if let Some(x) = get(st, key) {
                    *slot = self.positive_duration(x, &join(p, key));
                }
            }
            if let Some(x) =
                get(st, "width").and_then(|x| self.float(x, &join(p, "width"), 1e-6, 0.49))
            {
                m.width = x;
            }
            if let Some(x) = get(st, "initial-duration")
                .and_then(|x| self.duration(x, &join(p, "initial-duration")))
            {
                m.initial_duration = x.max(Duration::from_millis(1));
            }
            // Each goal as it will run (its own settings over these, over `run`): the search's
            // own checks, reported at the goal.
            let goals_v = get(st, "goals");
            for (i, g) in m.goals.iter().enumerate() {
                let goal = g.resolve(&m, run);
                let cfg = search::MultiGoalConfig {
                    goals: vec![goal],
                    ..search::MultiGoalConfig::ndr_pdr(goal.final_duration)
                };
                if let Err(e) = search::MultiGoalSearch::new(cfg) {
                    let (span, key) = match goals_v.map(|v| (v, v.get_ref())) {
                        Some((_, DeValue::Array(a))) if i < a.len() => {
                            (a[i].span(), format!("{p}.goals[{i}]"))
                        }
                        Some((v, _)) => (v.span(), join(p, "goals")),
                        None => (v.span(), p.to_string()),
                    };
                    self.err(span, &key, e.0);
                }
            }
        }
        if let Some(st) = self.sub(t, "rfc2544-latency", &["trials", "duration"]) {
            let p = "methodology.rfc2544-latency";
            if let Some(x) =
                get(st, "trials").and_then(|x| self.int(x, &join(p, "trials"), 1, 10_000))
            {
                m.latency_trials = x as u32;
            }
            if let Some(x) =
                get(st, "duration").and_then(|x| self.duration(x, &join(p, "duration")))
            {
                m.latency_duration = x.max(Duration::from_millis(1));
            }
        }
        if let Some(st) = self.sub(t, "rfc2544-loss-curve", &["step"]) {
            if let Some(x) = get(st, "step")
                .and_then(|x| self.float(x, "methodology.rfc2544-loss-curve.step", 0.001, 0.1))
            {
                m.loss_curve_step = x;
            }
        }
        if let Some(st) = self.sub(t, "forwarding-rate", &["trials"]) {
            if let Some(x) = get(st, "trials")
                .and_then(|x| self.int(x, "methodology.forwarding-rate.trials", 1, 10_000))
            {
                m.forwarding_rate_trials = x as u32;
            }
        }
        if let Some(st) = self.sub(t, "mtu-probe", &["min-size", "rate", "duration"]) {
            let p = "methodology.mtu-probe";
            if let Some(x) =
                get(st, "min-size").and_then(|x| self.int(x, &join(p, "min-size"), 64, 9216))
            {
                m.mtu_probe.min_size = x as u32;
            }
            if let Some(x) =
                get(st, "rate").and_then(|x| self.int(x, &join(p, "rate"), 1, 1_000_000))
            {
                m.mtu_probe.rate = x as u32;
            }
            if let Some(x) =
                get(st, "duration").and_then(|x| self.positive_duration(x, &join(p, "duration")))
            {
                m.mtu_probe.duration = x;
            }
        }
        if let Some(st) = self.sub(
            t,
            "rfc2544-back-to-back",
            &["repetitions", "resolution-frames", "duration"],
        ) {
            let p = "methodology.rfc2544-back-to-back";
            if let Some(x) =
                get(st, "repetitions").and_then(|x| self.int(x, &join(p, "repetitions"), 1, 10_000))
            {
                m.b2b_repetitions = x as u32;
            }
            if let Some(x) = get(st, "resolution-frames")
                .and_then(|x| self.int(x, &join(p, "resolution-frames"), 1, i64::MAX))
            {
                m.b2b_resolution_frames = x as u64;
            }
            if let Some(x) =
                get(st, "duration").and_then(|x| self.duration(x, &join(p, "duration")))
            {
                m.b2b_duration = x.max(Duration::from_millis(1));
            }
        }
        if let Some(st) = self.sub(
            t,
            "iperf3",
            &["reverse", "bidir", "omit", "duration", "udp-bitrate"],
        ) {
            let p = "methodology.iperf3";
            if let Some(x) = get(st, "reverse").and_then(|x| self.boolean(x, &join(p, "reverse"))) {
                m.iperf3_reverse = x;
            }
            if let Some(x) = get(st, "bidir").and_then(|x| self.boolean(x, &join(p, "bidir"))) {
                m.iperf3_bidir = x;
            }
            if let Some(x) = get(st, "omit").and_then(|x| self.duration(x, &join(p, "omit"))) {
                m.iperf3_omit = x;
            }
            if let Some(d) = get(st, "duration") {
                if let Some(x) = self.duration(d, &join(p, "duration")) {
                    // iperf3 -t takes whole seconds.
                    if x < Duration::from_secs(1) {
                        self.err(d.span(), &join(p, "duration"), "must be at least 1 s");
                    }
                    m.iperf3_duration = x;
                }
            }
            if let Some(x) =
                get(st, "udp-bitrate").and_then(|x| self.speed(x, &join(p, "udp-bitrate")))
            {
                m.iperf3_udp_bitrate = Some(x);
            }
        }
        self.nat_methodologies(t, run, &mut m);
        m
    }

    /// `[methodology.nat-table-capacity]` and `[methodology.nat-connection-rate]`: each key
    /// range-checked where it stands, then the search's own checks (start ≤ max, min < max)
    /// reported at the key that breaks them.
    pub(super) fn nat_methodologies(
        &mut self,
        t: &DeTable<'_>,
        run: &RunSettings,
        m: &mut MethodologySettings,
    ) {
        const MAX_N: i64 = search::nat::MAX_CONNECTIONS as i64;
        // Connections per second: from one a second to 100 million (far above any tester).
        const MAX_RATE: f64 = 1e8;
        if let Some(st) = self.sub(t, "nat-table-capacity", &TABLE_CAPACITY_KEYS) {
            let p = "methodology.nat-table-capacity";
            let s = &mut m.nat_table_capacity;
            for (key, slot) in [
                ("max-connections", &mut s.max_connections),
                ("resolution-connections", &mut s.resolution_connections),
            ] {
                if let Some(x) = get(st, key).and_then(|x| self.int(x, &join(p, key), 1, MAX_N)) {
                    *slot = x as u64;
                }
            }
            if let Some(x) = get(st, "start-connections")
                .and_then(|x| self.int(x, &join(p, "start-connections"), 1, MAX_N))
            {
                s.start_connections = Some(x as u64);
            }
            if let Some(x) = get(st, "preliminary-rate")
                .and_then(|x| self.float(x, &join(p, "preliminary-rate"), 1.0, MAX_RATE))
            {
                s.preliminary_rate = x;
            }
            if let Some(x) = get(st, "validation-rate")
                .and_then(|x| self.float(x, &join(p, "validation-rate"), 1.0, MAX_RATE))
            {
                s.validation_rate = Some(x);
            }
            if let Some(x) =
                get(st, "phase-gap").and_then(|x| self.duration(x, &join(p, "phase-gap")))
            {
                s.phase_gap = x;
            }
            if let Err(e) = search::TableCapacitySearch::new(s.config(run.tester_tolerance)) {
                self.refuse_search(
                    t,
                    st,
                    "nat-table-capacity",
                    ["start-connections", "max-connections"],
                    e.0,
                );
            }
        }
        if let Some(st) = self.sub(t, "nat-connection-rate", &CONNECTION_RATE_KEYS) {
            let p = "methodology.nat-connection-rate";
            let s = &mut m.nat_connection_rate;
            if let Some(x) =
                get(st, "connections").and_then(|x| self.int(x, &join(p, "connections"), 1, MAX_N))
            {
                s.connections = x as u64;
            }
            for (key, slot) in [
                ("min-rate", &mut s.min_rate),
                ("max-rate", &mut s.max_rate),
                ("validation-rate", &mut s.validation_rate),
            ] {
                if let Some(x) =
                    get(st, key).and_then(|x| self.float(x, &join(p, key), 1.0, MAX_RATE))
                {
                    *slot = x;
                }
            }
            if let Some(x) =
                get(st, "resolution").and_then(|x| self.float(x, &join(p, "resolution"), 1e-6, 0.5))
            {
                s.resolution = x;
            }
            if let Some(x) =
                get(st, "phase-gap").and_then(|x| self.duration(x, &join(p, "phase-gap")))
            {
                s.phase_gap = x;
            }
            if let Err(e) = search::ConnectionRateSearch::new(s.config(run.tester_tolerance)) {
                self.refuse_search(t, st, "nat-connection-rate", ["min-rate", "max-rate"], e.0);
            }
        }
        if let Some(st) = self.sub(t, "nat-teardown-rate", &TEARDOWN_RATE_KEYS) {
            let p = "methodology.nat-teardown-rate";
            let s = &mut m.nat_teardown_rate;
            if let Some(x) =
                get(st, "connections").and_then(|x| self.int(x, &join(p, "connections"), 1, MAX_N))
            {
                s.connections = x as u64;
            }
            if let Some(x) =
                get(st, "repetitions").and_then(|x| self.int(x, &join(p, "repetitions"), 1, 1000))
            {
                s.repetitions = x as u32;
            }
            if let Some(x) = get(st, "preliminary-rate")
                .and_then(|x| self.float(x, &join(p, "preliminary-rate"), 1.0, MAX_RATE))
            {
                s.preliminary_rate = x;
            }
            if let Some(x) = get(st, "validation-rate")
                .and_then(|x| self.float(x, &join(p, "validation-rate"), 1.0, MAX_RATE))
            {
                s.validation_rate = Some(x);
            }
            if let Some(x) =
                get(st, "phase-gap").and_then(|x| self.duration(x, &join(p, "phase-gap")))
            {
                s.phase_gap = x;
            }
        }
        if let Some(st) = self.sub(t, "nat-throughput", &NAT_THROUGHPUT_KEYS) {
            let p = "methodology.nat-throughput";
            if let Some(v) = get(st, "connections") {
                let key = join(p, "connections");
                let parsed = self.list(v, &key, |w, item, path| match item.get_ref() {
                    DeValue::String(_) => w
                        .choice(item, path, &[("table", ())])
                        .map(|()| crate::plan::ConnCount::Table(crate::plan::TableWord::Table)),
                    _ => w
                        .int(item, path, 1, search::nat::MAX_CONNECTIONS as i64)
                        .map(|n| crate::plan::ConnCount::N(n as u64)),
                });
                if let Some(c) = parsed {
                    m.nat_throughput.connections = c;
                }
            }
            let s = &mut m.nat_throughput;
            // Frames/s each direction: up to 100 million (above any link the engine drives).
            for (key, slot) in [
                ("min-rate", &mut s.min_rate),
                ("max-rate", &mut s.max_rate),
                ("preliminary-rate", &mut s.preliminary_rate),
            ] {
                if let Some(x) =
                    get(st, key).and_then(|x| self.float(x, &join(p, key), 1.0, MAX_RATE))
                {
                    *slot = x;
                }
            }
            if let Some(x) = get(st, "validation-rate")
                .and_then(|x| self.float(x, &join(p, "validation-rate"), 1.0, MAX_RATE))
            {
                s.validation_rate = Some(x);
            }
            if let Some(x) =
                get(st, "resolution").and_then(|x| self.float(x, &join(p, "resolution"), 1e-6, 0.5))
            {
                s.resolution = x;
            }
            for (key, slot) in [
                ("duration", &mut s.duration),
                ("phase-gap", &mut s.phase_gap),
            ] {
                if let Some(x) = get(st, key).and_then(|x| self.duration(x, &join(p, key))) {
                    *slot = x;
                }
            }
            if s.duration.is_zero() {
                let span = get(st, "duration").map_or(0..0, |v| v.span());
                self.err(span, &join(p, "duration"), "must be above 0");
                return;
            }
            // The search's own checks with a placeholder table (the table size is per case;
            // `plan check` resolves `"table"` against the profiles).
            if let Err(e) = s
                .config(run.tester_tolerance, Some(1))
                .map_err(|e| search::InvalidConfig(e.to_string()))
                .and_then(search::NatThroughputSearch::new)
            {
                self.refuse_search(t, st, "nat-throughput", ["min-rate", "max-rate"], e.0);
            }
        }
    }
}
