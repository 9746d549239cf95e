//! The plan checker: walks toml's spanned document tree (`toml::de::DeTable`) so that every
//! key and value keeps its byte span, and reports errors with file, line and key.
//!
//! A hand-written walker rather than `#[derive(Deserialize)]`: serde stops at the first error
//! and knows neither the key path nor a "did you mean" candidate; here all errors are collected
//! and each one points at the exact key.

use core::ops::Range;
use core::time::Duration;

use toml::de::{DeTable, DeValue};
use toml::Spanned;
use wire::encap::{min_frame_size, IpVersion};
use wire::units::BitsPerSec;

use super::source::{did_you_mean, PlanErrors, Source};
use super::{
    Dut, DutKind, Matrix, Methodology, MethodologySettings, Plan, Port, Profile, Protocol,
    RunSettings, Topology,
};
use crate::hooks::{Exec, Hook, Parser, ProfileHooks};
use crate::search::{LineFraction, DEFAULT_TESTER_TOLERANCE};

type Value<'i> = Spanned<DeValue<'i>>;

const LAB_TOPOLOGIES: [&str; 3] = ["forward", "endpoint", "direct"];

struct Walker<'s> {
    src: Source<'s>,
}

fn entries<'a, 'i>(t: &'a DeTable<'i>) -> Vec<(&'a str, Range<usize>, &'a Value<'i>)> {
    let mut v: Vec<_> = t
        .iter()
        .map(|(k, v)| (k.get_ref().as_ref(), k.span(), v))
        .collect();
    // Plan order, not alphabetical: profiles and dimensions keep the order the user wrote.
    v.sort_by_key(|(_, span, _)| span.start);
    v
}

fn get<'a, 'i>(t: &'a DeTable<'i>, key: &str) -> Option<&'a Value<'i>> {
    t.iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map(|(_, v)| v)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a datetime",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Parses `500ms`, `2s`, `1.5s`, `2m`, `1h`.
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (num, unit) = s.split_at(split);
    let n: f64 = num.trim().parse().ok()?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok()
}

impl<'s> Walker<'s> {
    fn err(&mut self, span: Range<usize>, key: &str, msg: impl Into<String>) {
        self.src.error(span, key, msg, None);
    }

    fn type_err(&mut self, v: &Value<'_>, key: &str, expected: &str) {
        let msg = format!("expected {expected}, found {}", type_name(v.get_ref()));
        self.err(v.span(), key, msg);
    }

    /// Rejects keys not in `allowed`, suggesting the closest one.
    fn keys(&mut self, t: &DeTable<'_>, path: &str, allowed: &[&str]) {
        for (k, span, _) in entries(t) {
            if !allowed.contains(&k) {
                let hint = did_you_mean(k, allowed.iter().copied())
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| Some(format!("expected one of: {}", allowed.join(", "))));
                self.src
                    .error(span, &join(path, k), "unknown key".to_string(), hint);
            }
        }
    }

    fn table<'a, 'i>(&mut self, v: &'a Value<'i>, path: &str) -> Option<&'a DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => {
                self.type_err(v, path, "a table");
                None
            }
        }
    }

    fn required<'a, 'i>(
        &mut self,
        t: &'a DeTable<'i>,
        span: &Range<usize>,
        path: &str,
        key: &str,
    ) -> Option<&'a Value<'i>> {
        let v = get(t, key);
        if v.is_none() {
            self.err(span.clone(), &join(path, key), "missing key");
        }
        v
    }

    fn string(&mut self, v: &Value<'_>, path: &str) -> Option<String> {
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.type_err(v, path, "a string");
                None
            }
        }
    }

    fn nonempty(&mut self, v: &Value<'_>, path: &str) -> Option<String> {
        let s = self.string(v, path)?;
        if s.trim().is_empty() {
            self.err(v.span(), path, "must not be empty");
            return None;
        }
        Some(s)
    }

    fn int(&mut self, v: &Value<'_>, path: &str, min: i64, max: i64) -> Option<i64> {
        let DeValue::Integer(i) = v.get_ref() else {
            self.type_err(v, path, "an integer");
            return None;
        };
        let n = i64::from_str_radix(i.as_str(), i.radix()).ok();
        match n {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.err(v.span(), path, format!("must be between {min} and {max}"));
                None
            }
        }
    }

    fn float(&mut self, v: &Value<'_>, path: &str, min: f64, max: f64) -> Option<f64> {
        let x = match v.get_ref() {
            DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(|n| n as f64),
            _ => {
                self.type_err(v, path, "a number");
                return None;
            }
        };
        match x {
            Some(x) if x >= min && x <= max => Some(x),
            _ => {
                self.err(v.span(), path, format!("must be between {min} and {max}"));
                None
            }
        }
    }

    fn boolean(&mut self, v: &Value<'_>, path: &str) -> Option<bool> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.type_err(v, path, "a boolean");
                None
            }
        }
    }

    fn duration(&mut self, v: &Value<'_>, path: &str) -> Option<Duration> {
        match v.get_ref() {
            DeValue::String(s) => {
                let d = parse_duration(s);
                if d.is_none() {
                    self.err(
                        v.span(),
                        path,
                        format!("`{s}` is not a duration (write e.g. \"500ms\", \"10s\", \"2m\")"),
                    );
                }
                d
            }
            DeValue::Integer(_) | DeValue::Float(_) => self
                .float(v, path, 0.0, 86_400.0)
                .and_then(|x| Duration::try_from_secs_f64(x).ok()),
            _ => {
                self.type_err(v, path, "a duration string such as \"10s\"");
                None
            }
        }
    }

    fn speed(&mut self, v: &Value<'_>, path: &str) -> Option<BitsPerSec> {
        let s = self.string(v, path)?;
        match wire::linerate::parse_speed(&s) {
            Ok(b) => Some(b),
            Err(e) => {
                self.err(v.span(), path, e.to_string());
                None
            }
        }
    }

    /// An array (or, for convenience, a single value) mapped element-wise.
    fn list<'a, 'i, T>(
        &mut self,
        v: &'a Value<'i>,
        path: &str,
        mut f: impl FnMut(&mut Self, &'a Value<'i>, &str) -> Option<T>,
    ) -> Option<Vec<T>> {
        match v.get_ref() {
            DeValue::Array(a) => {
                if a.is_empty() {
                    self.err(v.span(), path, "must not be empty");
                    return None;
                }
                let mut out = Vec::new();
                let mut ok = true;
                for (i, item) in a.iter().enumerate() {
                    match f(self, item, &format!("{path}[{i}]")) {
                        Some(x) => out.push(x),
                        None => ok = false,
                    }
                }
                ok.then_some(out)
            }
            DeValue::Table(_) => {
                self.type_err(v, path, "an array");
                None
            }
            _ => f(self, v, path).map(|x| vec![x]),
        }
    }

    fn choice<T: Copy>(&mut self, v: &Value<'_>, path: &str, options: &[(&str, T)]) -> Option<T> {
        let s = self.string(v, path)?;
        if let Some((_, t)) = options.iter().find(|(n, _)| *n == s) {
            return Some(*t);
        }
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        let hint = did_you_mean(&s, names.iter().copied())
            .map(|c| format!("did you mean `{c}`?"))
            .unwrap_or_else(|| format!("expected one of: {}", names.join(", ")));
        self.src
            .error(v.span(), path, format!("unknown value `{s}`"), Some(hint));
        None
    }

    /// The sub-table `methodology.NAME`, with its keys checked.
    fn sub<'a, 'i>(
        &mut self,
        t: &'a DeTable<'i>,
        name: &str,
        allowed: &[&str],
    ) -> Option<&'a DeTable<'i>> {
        let v = get(t, name)?;
        let path = join("methodology", name);
        let st = self.table(v, &path)?;
        self.keys(st, &path, allowed);
        Some(st)
    }

    fn hook(&mut self, v: &Value<'_>, path: &str) -> Option<Hook> {
        match v.get_ref() {
            DeValue::String(_) => Some(Hook {
                command: self.nonempty(v, path)?,
                parse: None,
            }),
            DeValue::Table(t) => {
                self.keys(t, path, &["command", "parse"]);
                let parsers: Vec<(&str, Parser)> = Parser::ALL.to_vec();
                let parse =
                    get(t, "parse").and_then(|p| self.choice(p, &join(path, "parse"), &parsers));
                let cmd = self.required(t, &v.span(), path, "command")?;
                Some(Hook {
                    command: self.nonempty(cmd, &join(path, "command"))?,
                    parse,
                })
            }
            _ => {
                self.type_err(
                    v,
                    path,
                    "a command string or { command = \"…\", parse = \"…\" }",
                );
                None
            }
        }
    }

    fn hooks(&mut self, t: &DeTable<'_>, path: &str) -> ProfileHooks {
        let mut h = ProfileHooks::default();
        for (key, slot) in [
            ("setup", &mut h.setup),
            ("teardown", &mut h.teardown),
            ("stats-before", &mut h.stats_before),
            ("stats-after", &mut h.stats_after),
            ("samplers", &mut h.samplers),
        ] {
            if let Some(v) = get(t, key) {
                *slot = self
                    .list(v, &join(path, key), |w, item, p| w.hook(item, p))
                    .unwrap_or_default();
            }
        }
        h
    }

    fn topology(&mut self, root: &DeTable<'_>, root_span: &Range<usize>) -> Option<Topology> {
        let v = self.required(root, root_span, "", "topology")?;
        let t = self.table(v, "topology")?;
        let kind = self.required(t, &v.span(), "topology", "kind")?;
        let kind = self.choice(
            kind,
            "topology.kind",
            &[("lab", true), ("interfaces", false)],
        )?;
        if kind {
            self.keys(t, "topology", &["kind", "lab", "name", "speed"]);
            let lab = match get(t, "lab") {
                Some(l) => self.choice(l, "topology.lab", &LAB_TOPOLOGIES.map(|n| (n, n)))?,
                None => "forward",
            };
            let name = match get(t, "name") {
                Some(n) => {
                    let s = self.nonempty(n, "topology.name")?;
                    if !s
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                    {
                        self.err(n.span(), "topology.name", "use lowercase letters and digits only (it becomes part of `wr-<name>-*` namespace names)");
                        return None;
                    }
                    s
                }
                None => "wr".to_string(),
            };
            let speed = match get(t, "speed") {
                Some(s) => self.speed(s, "topology.speed")?,
                None => BitsPerSec(1e9),
            };
            Some(Topology::Lab {
                topology: lab.to_string(),
                name,
                speed,
            })
        } else {
            self.keys(t, "topology", &["kind"]);
            Some(Topology::Interfaces)
        }
    }

    fn ports(
        &mut self,
        root: &DeTable<'_>,
        root_span: &Range<usize>,
        topo: &Topology,
    ) -> Vec<Port> {
        let Some(v) = get(root, "ports") else {
            if matches!(topo, Topology::Interfaces) {
                self.err(
                    root_span.clone(),
                    "ports",
                    "missing key: real interfaces need a [ports.NAME] table per tester port",
                );
            }
            return Vec::new();
        };
        let Some(t) = self.table(v, "ports") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, _, pv) in entries(t) {
            let path = join("ports", name);
            let Some(pt) = self.table(pv, &path) else {
                continue;
            };
            self.keys(pt, &path, &["interface", "namespace", "speed"]);
            let interface = self
                .required(pt, &pv.span(), &path, "interface")
                .and_then(|i| self.nonempty(i, &join(&path, "interface")));
            let namespace =
                get(pt, "namespace").and_then(|n| self.nonempty(n, &join(&path, "namespace")));
            let speed = get(pt, "speed").and_then(|s| self.speed(s, &join(&path, "speed")));
            if speed.is_none() && matches!(topo, Topology::Interfaces) && get(pt, "speed").is_none()
            {
                self.err(
                    pv.span(),
                    &join(&path, "speed"),
                    "missing key: line-rate arithmetic needs the link speed",
                );
            }
            if let Some(interface) = interface {
                out.push(Port {
                    name: name.to_string(),
                    interface,
                    namespace,
                    speed,
                });
            }
        }
        out
    }

    fn dut(
        &mut self,
        root: &DeTable<'_>,
        root_span: &Range<usize>,
        topo: &Topology,
    ) -> Option<Dut> {
        let v = self.required(root, root_span, "", "dut")?;
        let t = self.table(v, "dut")?;
        let kind_v = self.required(t, &v.span(), "dut", "kind")?;
        let kind = self.choice(
            kind_v,
            "dut.kind",
            &[("lab", DutKind::Lab), ("device", DutKind::Device)],
        )?;
        let exec = match kind {
            DutKind::Lab => {
                self.keys(t, "dut", &["kind", "profiles"]);
                let Topology::Lab { name, .. } = topo else {
                    self.err(
                        kind_v.span(),
                        "dut.kind",
                        "a lab DUT needs `topology.kind = \"lab\"`",
                    );
                    return None;
                };
                Exec::Netns {
                    name: format!("wr-{name}-dut"),
                }
            }
            DutKind::Device => {
                self.keys(t, "dut", &["kind", "ssh", "ssh-port", "netns", "profiles"]);
                let ssh = get(t, "ssh").and_then(|s| self.nonempty(s, "dut.ssh"));
                let port = get(t, "ssh-port").and_then(|p| self.int(p, "dut.ssh-port", 1, 65535));
                let netns = get(t, "netns").and_then(|n| self.nonempty(n, "dut.netns"));
                match (ssh, netns) {
                    (Some(_), Some(_)) => {
                        self.err(
                            v.span(),
                            "dut.ssh",
                            "give either `ssh` or `netns`, not both",
                        );
                        return None;
                    }
                    (Some(host), None) => Exec::Ssh {
                        host,
                        port: port.map(|p| p as u16),
                    },
                    (None, Some(name)) => Exec::Netns { name },
                    (None, None) => Exec::Local,
                }
            }
        };
        let pv = self.required(t, &v.span(), "dut", "profiles")?;
        let mut profiles = Vec::new();
        match pv.get_ref() {
            DeValue::Array(_) if kind == DutKind::Lab => {
                for name in self.list(pv, "dut.profiles", |w, item, p| w.nonempty(item, p))? {
                    profiles.push(Profile {
                        lab: Some(name.clone()),
                        name,
                        hooks: ProfileHooks::default(),
                    });
                }
            }
            DeValue::Table(pt) => {
                for (name, _, prof) in entries(pt) {
                    let path = join("dut.profiles", name);
                    let Some(p) = self.table(prof, &path) else {
                        continue;
                    };
                    let hook_keys = [
                        "setup",
                        "teardown",
                        "stats-before",
                        "stats-after",
                        "samplers",
                    ];
                    let lab = if kind == DutKind::Lab {
                        let mut allowed = vec!["lab"];
                        allowed.extend(hook_keys);
                        self.keys(p, &path, &allowed);
                        Some(match get(p, "lab") {
                            Some(l) => self.nonempty(l, &join(&path, "lab")).unwrap_or_default(),
                            None => name.to_string(),
                        })
                    } else {
                        self.keys(p, &path, &hook_keys);
                        None
                    };
                    let hooks = self.hooks(p, &path);
                    profiles.push(Profile {
                        name: name.to_string(),
                        lab,
                        hooks,
                    });
                }
            }
            _ => {
                let what = if kind == DutKind::Lab {
                    "an array of lab profile names or a table of [dut.profiles.NAME]"
                } else {
                    "a table of [dut.profiles.NAME]"
                };
                self.type_err(pv, "dut.profiles", what);
                return None;
            }
        }
        if profiles.is_empty() {
            self.err(pv.span(), "dut.profiles", "at least one profile is needed");
        }
        Some(Dut {
            kind,
            exec,
            profiles,
        })
    }

    fn run(&mut self, root: &DeTable<'_>) -> RunSettings {
        let mut r = RunSettings {
            repetitions: 1,
            trial_duration: Duration::from_secs(10),
            settle: Duration::from_secs(1),
            profile_settle: Duration::from_secs(2),
            min_load: LineFraction(0.001),
            max_load: LineFraction::FULL,
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        };
        let Some(v) = get(root, "run") else { return r };
        let Some(t) = self.table(v, "run") else {
            return r;
        };
        self.keys(
            t,
            "run",
            &[
                "repetitions",
                "trial-duration",
                "settle",
                "profile-settle",
                "min-load",
                "max-load",
                "tester-tolerance",
            ],
        );
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
        r
    }

    fn methodology(&mut self, root: &DeTable<'_>) -> MethodologySettings {
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
        if let Some(st) = self.sub(t, "multi-goal", &["goals", "width", "initial-duration"]) {
            let p = "methodology.multi-goal";
            if let Some(x) = get(st, "goals")
                .and_then(|x| self.list(x, &join(p, "goals"), |w, i, q| w.float(i, q, 0.0, 0.5)))
            {
                m.goals = x;
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
        if let Some(st) = self.sub(t, "iperf3", &["reverse", "bidir", "omit", "udp-bitrate"]) {
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
            if let Some(x) =
                get(st, "udp-bitrate").and_then(|x| self.speed(x, &join(p, "udp-bitrate")))
            {
                m.iperf3_udp_bitrate = Some(x);
            }
        }
        m
    }

    fn matrix(&mut self, v: &Value<'_>, path: &str, profiles: &[Profile]) -> Option<Matrix> {
        let t = self.table(v, path)?;
        self.keys(
            t,
            path,
            &[
                "name",
                "protocol",
                "ip",
                "frame-size",
                "sessions",
                "mss",
                "profile",
                "methodologies",
                "vars",
            ],
        );
        let span = v.span();
        let name = get(t, "name").and_then(|n| self.nonempty(n, &join(path, "name")));
        let proto_v = self.required(t, &span, path, "protocol");
        let protocol = proto_v.and_then(|p| {
            self.list(p, &join(path, "protocol"), |w, i, q| {
                w.choice(i, q, &[("udp", Protocol::Udp), ("tcp", Protocol::Tcp)])
            })
        });
        let ip = match get(t, "ip") {
            Some(x) => self.list(x, &join(path, "ip"), |w, i, q| match w.int(i, q, 4, 6)? {
                4 => Some(IpVersion::V4),
                6 => Some(IpVersion::V6),
                _ => {
                    w.err(i.span(), q, "IP version must be 4 or 6");
                    None
                }
            }),
            None => Some(vec![IpVersion::V4]),
        };
        let ints = |w: &mut Self, key: &str, min: i64, max: i64| -> Option<Vec<u32>> {
            get(t, key).and_then(|x| {
                w.list(x, &join(path, key), |w, i, q| {
                    w.int(i, q, min, max).map(|n| n as u32)
                })
            })
        };
        let frame_size = ints(self, "frame-size", 1, wire::template::MAX_FRAME_SIZE as i64);
        let sessions = ints(self, "sessions", 1, 128);
        let mss = ints(self, "mss", 88, 9000);
        let profile = match get(t, "profile") {
            Some(x) => {
                let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
                self.list(x, &join(path, "profile"), |w, i, q| {
                    let s = w.nonempty(i, q)?;
                    if names.contains(&s.as_str()) {
                        return Some(s);
                    }
                    let hint = did_you_mean(&s, names.iter().copied())
                        .map(|c| format!("did you mean `{c}`?"))
                        .unwrap_or_else(|| format!("profiles: {}", names.join(", ")));
                    w.src.error(
                        i.span(),
                        q,
                        format!("no profile `{s}` in [dut.profiles]"),
                        Some(hint),
                    );
                    None
                })
            }
            None => Some(profiles.iter().map(|p| p.name.clone()).collect()),
        };
        let meth_v = self.required(t, &span, path, "methodologies");
        let methodologies = meth_v.and_then(|m| {
            self.list(m, &join(path, "methodologies"), |w, i, q| {
                w.choice(i, q, &Methodology::ALL)
            })
        });
        let mut vars = Vec::new();
        if let Some(vv) = get(t, "vars") {
            if let Some(vt) = self.table(vv, &join(path, "vars")) {
                for (k, kspan, values) in entries(vt) {
                    let q = join(&join(path, "vars"), k);
                    if !k
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                    {
                        self.err(kspan, &q, "dimension names may use letters, digits, `-` and `_` only (they become WR_* variables)");
                        continue;
                    }
                    let vals = self.list(values, &q, |w, i, p| match i.get_ref() {
                        DeValue::String(s) => Some(s.to_string()),
                        DeValue::Integer(n) => Some(n.to_string()),
                        DeValue::Boolean(b) => Some(b.to_string()),
                        _ => {
                            w.type_err(i, p, "a string, integer or boolean");
                            None
                        }
                    });
                    if let Some(vals) = vals {
                        vars.push((k.to_string(), vals));
                    }
                }
            }
        }
        let (protocol, ip, profile, methodologies) = (protocol?, ip?, profile?, methodologies?);
        let has = |p: Protocol| protocol.contains(&p);
        // Dimensions that only apply to one protocol.
        if has(Protocol::Udp) && get(t, "frame-size").is_none() {
            self.err(
                span.clone(),
                &join(path, "frame-size"),
                "missing key: UDP cases need frame sizes",
            );
        }
        if let (Some(fs), Some(fv)) = (&frame_size, get(t, "frame-size")) {
            if !has(Protocol::Udp) {
                self.err(
                    fv.span(),
                    &join(path, "frame-size"),
                    "applies to UDP cases only (TCP frame sizes follow from `mss`)",
                );
            }
            for &v in &ip {
                let min = min_frame_size(v);
                if let Some(bad) = fs.iter().find(|&&s| (s as usize) < min) {
                    let n = if v == IpVersion::V4 { 4 } else { 6 };
                    self.err(
                        fv.span(),
                        &join(path, "frame-size"),
                        format!("{bad} B is too small for IPv{n} UDP plus the test signature; the smallest that works is {min} B"),
                    );
                }
            }
        }
        for key in ["sessions", "mss"] {
            if let Some(x) = get(t, key) {
                if !has(Protocol::Tcp) {
                    self.err(x.span(), &join(path, key), "applies to TCP cases only");
                }
            }
        }
        if has(Protocol::Tcp) && !methodologies.iter().any(|m| !m.needs_engine()) {
            self.err(
                meth_v.map_or(span.clone(), |m| m.span()),
                &join(path, "methodologies"),
                "TCP cases run with iperf3; add `iperf3` (the RFC 2544 methodologies send UDP test frames)",
            );
        }
        if methodologies.contains(&Methodology::Rfc2544Latency)
            && !methodologies
                .iter()
                .any(|m| matches!(m, Methodology::Rfc2544Throughput | Methodology::MultiGoal))
        {
            self.err(
                meth_v.map_or(span.clone(), |m| m.span()),
                &join(path, "methodologies"),
                "rfc2544-latency runs at the throughput found, so it needs rfc2544-throughput or multi-goal in the same case",
            );
        }
        Some(Matrix {
            name,
            line: self.src.line(span.start),
            protocol,
            ip,
            frame_size: frame_size.unwrap_or_default(),
            sessions: sessions.unwrap_or_else(|| vec![1]),
            mss: mss.unwrap_or_default(),
            profile,
            vars,
            methodologies,
        })
    }
}

/// Parses and checks a plan (expansion is checked by the caller).
pub(super) fn parse(text: &str, file: &str) -> Result<Plan, PlanErrors> {
    let mut w = Walker {
        src: Source::new(text, file),
    };
    let doc = match DeTable::parse(text) {
        Ok(d) => d,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            w.src.error(
                span,
                "",
                format!("TOML syntax: {}", e.message().trim()),
                None,
            );
            return Err(PlanErrors(w.src.errors));
        }
    };
    let root_span = doc.span();
    let root = doc.get_ref();
    w.keys(
        root,
        "",
        &[
            "name",
            "description",
            "topology",
            "ports",
            "dut",
            "run",
            "methodology",
            "matrix",
        ],
    );
    let name = w
        .required(root, &root_span, "", "name")
        .and_then(|n| w.nonempty(n, "name"));
    let description = get(root, "description").and_then(|d| w.string(d, "description"));
    let topology = w.topology(root, &root_span);
    let ports = topology
        .as_ref()
        .map(|t| w.ports(root, &root_span, t))
        .unwrap_or_default();
    let dut = topology.as_ref().and_then(|t| w.dut(root, &root_span, t));
    let run = w.run(root);
    let methodology = w.methodology(root);
    let profiles = dut.as_ref().map(|d| d.profiles.clone()).unwrap_or_default();
    let mut matrices = Vec::new();
    if let Some(mv) = w.required(root, &root_span, "", "matrix") {
        match mv.get_ref() {
            DeValue::Array(a) if !a.is_empty() => {
                for (i, item) in a.iter().enumerate() {
                    if let Some(m) = w.matrix(item, &format!("matrix[{i}]"), &profiles) {
                        matrices.push(m);
                    }
                }
            }
            _ => w.type_err(mv, "matrix", "one or more [[matrix]] blocks"),
        }
    }
    if !w.src.errors.is_empty() {
        return Err(PlanErrors(w.src.errors));
    }
    match (name, topology, dut) {
        (Some(name), Some(topology), Some(dut)) => Ok(Plan {
            file: file.to_string(),
            name,
            description,
            topology,
            ports,
            dut,
            run,
            methodology,
            matrices,
        }),
        _ => Err(PlanErrors(w.src.errors)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("3 parsecs"), None);
    }
}
