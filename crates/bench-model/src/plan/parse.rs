//! The plan checker: walks toml's spanned document tree (`toml::de::DeTable`) so that every
//! key and value keeps its byte span, and reports errors with file, line and key.
//!
//! A hand-written walker rather than `#[derive(Deserialize)]`: serde stops at the first error
//! and knows neither the key path nor a "did you mean" candidate; here all errors are collected
//! and each one points at the exact key.

use core::ops::Range;
use core::time::Duration;
use std::net::Ipv4Addr;

use toml::de::{DeTable, DeValue};
use toml::Spanned;
use wire::encap::{EncapSpec, IpVersion};
use wire::units::BitsPerSec;

use super::source::{did_you_mean, PlanErrors, Source};
use super::{
    DsliteRole, DsliteSettings, Dut, DutKind, GoalSetting, Matrix, Methodology,
    MethodologySettings, Plan, Port, PppAuth, PppoeRole, PppoeSettings, Profile, Protocol,
    RunSettings, Topology, TxBackend,
};
use crate::hooks::{Exec, Hook, Parser, ProfileHooks};
use crate::search::{self, LineFraction, DEFAULT_TESTER_TOLERANCE};

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

/// Keys of a goal table in `methodology.multi-goal.goals`.
const GOAL_KEYS: [&str; 6] = [
    "loss-ratio",
    "exceed-ratio",
    "width",
    "initial-duration",
    "final-duration",
    "duration-sum",
];

/// Keys of `[methodology.multi-goal]`.
const MULTI_GOAL_KEYS: [&str; 7] = [
    "goals",
    "width",
    "initial-duration",
    "exceed-ratio",
    "final-duration",
    "duration-sum",
    "search-time-cap",
];

/// Keys of `[methodology.nat-table-capacity]`.
const TABLE_CAPACITY_KEYS: [&str; 6] = [
    "max-connections",
    "start-connections",
    "resolution-connections",
    "preliminary-rate",
    "validation-rate",
    "phase-gap",
];

/// Keys of `[methodology.nat-connection-rate]`.
const CONNECTION_RATE_KEYS: [&str; 6] = [
    "connections",
    "min-rate",
    "max-rate",
    "resolution",
    "validation-rate",
    "phase-gap",
];

/// Keys of `[methodology.nat-teardown-rate]`.
const TEARDOWN_RATE_KEYS: [&str; 5] = [
    "connections",
    "repetitions",
    "preliminary-rate",
    "validation-rate",
    "phase-gap",
];

/// Keys of `[methodology.nat-throughput]`.
const NAT_THROUGHPUT_KEYS: [&str; 8] = [
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
fn parse_duration(s: &str) -> Option<Duration> {
    wire::units::parse_time(s).ok()
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

    /// A non-empty string that [`check_name`] accepts as `what` (it is handed to `ip`, `ssh`
    /// or the kernel, so it must not be able to become an option or shell syntax).
    fn name_like(&mut self, v: &Value<'_>, path: &str, what: NameKind) -> Option<String> {
        let s = self.nonempty(v, path)?;
        match check_name(&s, what) {
            Ok(()) => Some(s),
            Err(why) => {
                self.err(v.span(), path, why);
                None
            }
        }
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
            DeValue::String(s) => match parse_duration(s) {
                None => {
                    self.err(
                        v.span(),
                        path,
                        format!("`{s}` is not a duration (write e.g. \"500ms\", \"10s\", \"2m\")"),
                    );
                    None
                }
                // The same bound as the numeric form: a day is the longest anything waits.
                Some(d) if d > Duration::from_secs(MAX_DURATION_SECS) => {
                    self.err(
                        v.span(),
                        path,
                        format!("`{s}` is longer than a day ({MAX_DURATION_SECS} s), the longest duration a plan may give"),
                    );
                    None
                }
                d => d,
            },
            DeValue::Integer(_) | DeValue::Float(_) => self
                .float(v, path, 0.0, MAX_DURATION_SECS as f64)
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

    /// A lab profile name that the lab knows (`forward`, `filter-stateful-100`, …): refused
    /// here, at its line, rather than by the run's preflight.
    fn lab_profile(&mut self, v: &Value<'_>, path: &str) -> Option<String> {
        let name = self.nonempty(v, path)?;
        match lab::Profile::parse(&name) {
            Ok(_) => Some(name),
            Err(e) => {
                self.err(v.span(), path, e.to_string());
                None
            }
        }
    }

    /// `table-size` and `udp-timeout` of a lab profile: only where the lab profile keeps a
    /// connection table (`filter-stateful-N`, `napt…`), which is what they size.
    fn conn_table(
        &mut self,
        p: &DeTable<'_>,
        path: &str,
        lab_profile: &str,
    ) -> (Option<u64>, Option<Duration>) {
        let stateful = matches!(
            lab::Profile::parse(lab_profile),
            Ok(lab::Profile::FilterStateful { .. } | lab::Profile::Napt { .. })
        );
        let mut out = (None, None);
        for key in ["table-size", "udp-timeout"] {
            let Some(v) = get(p, key) else { continue };
            let at = join(path, key);
            if !stateful {
                self.err(
                    v.span(),
                    &at,
                    format!("lab profile `{lab_profile}` keeps no connection table; `{key}` needs napt or filter-stateful-N"),
                );
                continue;
            }
            if key == "table-size" {
                out.0 = self.int(v, &at, 1, 1 << 32).map(|n| n as u64);
            } else {
                out.1 = self.positive_duration(v, &at);
            }
        }
        out
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

    /// An IPv4 or IPv6 address written as a string.
    fn addr<T: core::str::FromStr>(&mut self, v: &Value<'_>, path: &str) -> Option<T> {
        let s = self.nonempty(v, path)?;
        match s.trim().parse() {
            Ok(a) => Some(a),
            Err(_) => {
                let hint = if s.contains('/') {
                    " (write the address without a prefix length)"
                } else {
                    ""
                };
                self.err(
                    v.span(),
                    path,
                    format!("`{s}` is not an address of this kind{hint}"),
                );
                None
            }
        }
    }

    /// `[ports.NAME.pppoe]`.
    fn pppoe(&mut self, v: &Value<'_>, path: &str) -> Option<PppoeSettings> {
        let t = self.table(v, path)?;
        self.keys(
            t,
            path,
            &[
                "role",
                "mru",
                "auth",
                "users",
                "user",
                "password",
                "ac-name",
                "service-name",
                "gateway",
                "pool",
                "pool-size",
                "echo-interval",
                "timeout",
                "internet",
                "subscribers",
            ],
        );
        let role = self.required(t, &v.span(), path, "role").and_then(|r| {
            self.choice(
                r,
                &join(path, "role"),
                &[("server", PppoeRole::Server), ("client", PppoeRole::Client)],
            )
        });
        let mut out = PppoeSettings::new(role.unwrap_or(PppoeRole::Server));
        if let Some(x) = get(t, "mru").and_then(|x| self.int(x, &join(path, "mru"), 64, 1500)) {
            out.mru = x as u16;
        }
        if let Some(x) = get(t, "auth").and_then(|x| {
            self.list(x, &join(path, "auth"), |w, i, q| {
                w.choice(i, q, &[("pap", PppAuth::Pap), ("chap", PppAuth::Chap)])
            })
        }) {
            out.auth = x;
        }
        // `users = [{ user = "…", password = "…" }, …]`, or one `user` + `password`.
        if let Some(uv) = get(t, "users") {
            let q = join(path, "users");
            if let Some(list) = self.list(uv, &q, |w, i, p| {
                let ut = w.table(i, p)?;
                w.keys(ut, p, &["user", "password"]);
                let user = w
                    .required(ut, &i.span(), p, "user")
                    .and_then(|x| w.nonempty(x, &join(p, "user")))?;
                let pass = w
                    .required(ut, &i.span(), p, "password")
                    .and_then(|x| w.string(x, &join(p, "password")))?;
                Some((user, pass))
            }) {
                out.users = list;
            }
        }
        let user = get(t, "user").and_then(|x| self.nonempty(x, &join(path, "user")));
        let pass = get(t, "password").and_then(|x| self.string(x, &join(path, "password")));
        match (user, pass) {
            (Some(u), Some(p)) => out.users.push((u, p)),
            (None, None) => {}
            _ => self.err(
                v.span(),
                &join(path, "password"),
                "give `user` and `password` together",
            ),
        }
        if let Some(x) = get(t, "subscribers") {
            let q = join(path, "subscribers");
            if role == Some(PppoeRole::Client) {
                self.err(
                    x.span(),
                    &q,
                    "a subscriber table is the access concentrator's (role = \"server\"); a client logs in with `user` and `password`",
                );
            } else if let Some(f) = self.nonempty(x, &q) {
                // Relative to the plan's directory, like a user would read it.
                let dir = std::path::Path::new(&self.src.file)
                    .parent()
                    .unwrap_or(std::path::Path::new(""));
                out.subscribers = Some(dir.join(f));
            }
        }
        if out.users.is_empty() && out.subscribers.is_none() {
            self.err(
                v.span(),
                &join(path, "users"),
                "missing key: PPPoE needs credentials (`users = [{ user = \"…\", password = \"…\" }]`, or `user` and `password`, or on the server `subscribers = \"FILE\"`)",
            );
        }
        if role == Some(PppoeRole::Client) && out.users.len() > 1 {
            self.err(
                v.span(),
                &join(path, "users"),
                "a PPPoE client logs in with one credential",
            );
        }
        if let Some(x) = get(t, "ac-name").and_then(|x| self.string(x, &join(path, "ac-name"))) {
            out.ac_name = x;
        }
        if let Some(x) =
            get(t, "service-name").and_then(|x| self.string(x, &join(path, "service-name")))
        {
            out.service_name = x;
        }
        if let Some(x) = get(t, "gateway").and_then(|x| self.addr(x, &join(path, "gateway"))) {
            out.gateway = x;
        }
        if let Some(x) = get(t, "pool").and_then(|x| self.addr(x, &join(path, "pool"))) {
            out.pool = x;
        }
        if let Some(x) =
            get(t, "pool-size").and_then(|x| self.int(x, &join(path, "pool-size"), 1, 65_536))
        {
            out.pool_size = x as u32;
        }
        if let Some(x) =
            get(t, "echo-interval").and_then(|x| self.duration(x, &join(path, "echo-interval")))
        {
            out.echo_interval = x.max(Duration::from_millis(100));
        }
        if let Some(x) = get(t, "timeout").and_then(|x| self.duration(x, &join(path, "timeout"))) {
            out.timeout = x.max(Duration::from_millis(100));
        }
        if let Some(x) = get(t, "internet") {
            let q = join(path, "internet");
            if let Some(a) = self.addr::<Ipv4Addr>(x, &q) {
                let net = emulate::pppoe::documentation_net(a);
                if net.is_none() {
                    self.err(
                        x.span(),
                        &q,
                        format!("{a}: use a documentation address (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24), e.g. 203.0.113.1"),
                    );
                } else if net == emulate::pppoe::documentation_net(out.pool) {
                    self.err(
                        x.span(),
                        &q,
                        format!("{a} is in the pool's /24 ({}): the Internet host needs an address the subscribers are not in, e.g. 203.0.113.1", out.pool),
                    );
                } else {
                    out.internet = Some(a);
                }
            }
        }
        if role == Some(PppoeRole::Client) {
            for key in ["gateway", "pool", "pool-size", "internet"] {
                if let Some(x) = get(t, key) {
                    self.err(
                        x.span(),
                        &join(path, key),
                        "applies to the server (the client gets its address by IPCP)",
                    );
                }
            }
        }
        role.map(|_| out)
    }

    /// `[ports.NAME.dslite]`.
    fn dslite(&mut self, v: &Value<'_>, path: &str) -> Option<DsliteSettings> {
        let t = self.table(v, path)?;
        self.keys(
            t,
            path,
            &[
                "role",
                "address",
                "peer",
                "timeout",
                "provision",
                "aftr-name",
                "mtu",
            ],
        );
        let role = self.required(t, &v.span(), path, "role").and_then(|r| {
            self.choice(
                r,
                &join(path, "role"),
                &[("aftr", DsliteRole::Aftr), ("b4", DsliteRole::B4)],
            )
        });
        let address = self
            .required(t, &v.span(), path, "address")
            .and_then(|x| self.addr(x, &join(path, "address")));
        let peer = get(t, "peer").and_then(|x| self.addr(x, &join(path, "peer")));
        if role == Some(DsliteRole::B4) && get(t, "peer").is_none() {
            self.err(
                v.span(),
                &join(path, "peer"),
                "missing key: a B4 needs the AFTR's address",
            );
        }
        let timeout = match get(t, "timeout") {
            Some(x) => self.duration(x, &join(path, "timeout"))?,
            None => Duration::from_secs(30),
        };
        let provision = match get(t, "provision") {
            Some(x) => self.boolean(x, &join(path, "provision"))?,
            None => false,
        };
        let aftr_name = match get(t, "aftr-name") {
            Some(x) => {
                let n = self.nonempty(x, &join(path, "aftr-name"))?;
                let mut b = [0u8; wire::dhcpv6::MAX_NAME_LEN];
                if let Err(e) = wire::dhcpv6::encode_name(&n, &mut b) {
                    self.err(
                        x.span(),
                        &join(path, "aftr-name"),
                        format!("not a DNS name: {e}"),
                    );
                    return None;
                }
                Some(n)
            }
            None => None,
        };
        // The same bounds as `wirerate trial --inside-mtu`: IPv6's minimum MTU to a jumbo link.
        let mtu = match get(t, "mtu") {
            Some(x) => self.int(x, &join(path, "mtu"), 1280, 9000)? as usize,
            None => crate::oversize::DSLITE_DEFAULT_MTU,
        };
        for key in ["provision", "aftr-name"] {
            if let (Some(x), Some(DsliteRole::B4)) = (get(t, key), role) {
                self.err(
                    x.span(),
                    &join(path, key),
                    "applies to the AFTR (it provisions the CPE's WAN link)",
                );
            }
        }
        Some(DsliteSettings {
            role: role?,
            address: address?,
            peer,
            timeout,
            provision,
            aftr_name,
            mtu,
        })
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
            self.keys(
                pt,
                &path,
                &[
                    "interface",
                    "namespace",
                    "speed",
                    "ipv4",
                    "ipv6",
                    "gateway-v4",
                    "gateway-v6",
                    "pppoe",
                    "dslite",
                ],
            );
            let interface = self
                .required(pt, &pv.span(), &path, "interface")
                .and_then(|i| self.name_like(i, &join(&path, "interface"), NameKind::Interface));
            let namespace = get(pt, "namespace")
                .and_then(|n| self.name_like(n, &join(&path, "namespace"), NameKind::Netns));
            let speed = get(pt, "speed").and_then(|s| self.speed(s, &join(&path, "speed")));
            if speed.is_none() && matches!(topo, Topology::Interfaces) && get(pt, "speed").is_none()
            {
                self.err(
                    pv.span(),
                    &join(&path, "speed"),
                    "missing key: line-rate arithmetic needs the link speed",
                );
            }
            let ipv4 = get(pt, "ipv4").and_then(|x| self.addr(x, &join(&path, "ipv4")));
            let ipv6 = get(pt, "ipv6").and_then(|x| self.addr(x, &join(&path, "ipv6")));
            let gateway_v4 =
                get(pt, "gateway-v4").and_then(|x| self.addr(x, &join(&path, "gateway-v4")));
            let gateway_v6 =
                get(pt, "gateway-v6").and_then(|x| self.addr(x, &join(&path, "gateway-v6")));
            let pppoe = get(pt, "pppoe").and_then(|x| self.pppoe(x, &join(&path, "pppoe")));
            let dslite = get(pt, "dslite").and_then(|x| self.dslite(x, &join(&path, "dslite")));
            if let (Some(_), Some(d)) = (&pppoe, get(pt, "dslite")) {
                self.err(
                    d.span(),
                    &join(&path, "dslite"),
                    "a port plays either PPPoE or DS-Lite, not both",
                );
            }
            if let Some(interface) = interface {
                out.push(Port {
                    name: name.to_string(),
                    interface,
                    namespace,
                    speed,
                    ipv4,
                    ipv6,
                    gateway_v4,
                    gateway_v6,
                    pppoe,
                    dslite,
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
                let ssh =
                    get(t, "ssh").and_then(|s| self.name_like(s, "dut.ssh", NameKind::SshHost));
                let port = get(t, "ssh-port").and_then(|p| self.int(p, "dut.ssh-port", 1, 65535));
                let netns =
                    get(t, "netns").and_then(|n| self.name_like(n, "dut.netns", NameKind::Netns));
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
                for name in self.list(pv, "dut.profiles", |w, item, p| w.lab_profile(item, p))? {
                    profiles.push(Profile {
                        lab: Some(name.clone()),
                        name,
                        hooks: ProfileHooks::default(),
                        table_size: None,
                        udp_timeout: None,
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
                        let mut allowed = vec!["lab", "table-size", "udp-timeout"];
                        allowed.extend(hook_keys);
                        self.keys(p, &path, &allowed);
                        Some(match get(p, "lab") {
                            Some(l) => self.lab_profile(l, &join(&path, "lab")).unwrap_or_default(),
                            None => {
                                if let Err(e) = lab::Profile::parse(name) {
                                    self.err(
                                        prof.span(),
                                        &path,
                                        format!("{e}; or name the lab profile with `lab = \"…\"`"),
                                    );
                                }
                                name.to_string()
                            }
                        })
                    } else {
                        self.keys(p, &path, &hook_keys);
                        None
                    };
                    let hooks = self.hooks(p, &path);
                    let (table_size, udp_timeout) = match &lab {
                        Some(l) => self.conn_table(p, &path, l),
                        None => (None, None),
                    };
                    profiles.push(Profile {
                        name: name.to_string(),
                        lab,
                        hooks,
                        table_size,
                        udp_timeout,
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
            backend: TxBackend::Auto,
            tx_threads: 1,
            rx_threads: 1,
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
                "backend",
                "tx-threads",
                "rx-threads",
            ],
        );
        for (key, slot) in [
            ("tx-threads", &mut r.tx_threads),
            ("rx-threads", &mut r.rx_threads),
        ] {
            let path = format!("run.{key}");
            if let Some(x) =
                get(t, key).and_then(|x| self.int(x, &path, 1, i64::from(super::MAX_THREADS)))
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
        r
    }

    /// One element of `methodology.multi-goal.goals`: a loss ratio, the name `"rfc2544"`, or a
    /// table of goal settings.
    fn goal(&mut self, v: &Value<'_>, path: &str) -> Option<GoalSetting> {
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

    fn positive_duration(&mut self, v: &Value<'_>, path: &str) -> Option<Duration> {
        let d = self.duration(v, path)?;
        if d < Duration::from_millis(1) {
            self.err(v.span(), path, "must be at least 1ms");
            return None;
        }
        Some(d)
    }

    fn methodology(&mut self, root: &DeTable<'_>, run: &RunSettings) -> MethodologySettings {
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
    fn nat_methodologies(
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
                let key = if get(st, "start-connections").is_some() {
                    "start-connections"
                } else {
                    "max-connections"
                };
                let span = get(st, key)
                    .or_else(|| get(t, "nat-table-capacity"))
                    .map_or(0..0, |v| v.span());
                self.err(span, &join(p, key), e.0);
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
                let key = if get(st, "min-rate").is_some() {
                    "min-rate"
                } else {
                    "max-rate"
                };
                let span = get(st, key)
                    .or_else(|| get(t, "nat-connection-rate"))
                    .map_or(0..0, |v| v.span());
                self.err(span, &join(p, key), e.0);
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
                        .map(|()| super::ConnCount::Table(super::TableWord::Table)),
                    _ => w
                        .int(item, path, 1, search::nat::MAX_CONNECTIONS as i64)
                        .map(|n| super::ConnCount::N(n as u64)),
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
                .map_err(search::InvalidConfig)
                .and_then(search::NatThroughputSearch::new)
            {
                let key = if get(st, "min-rate").is_some() {
                    "min-rate"
                } else {
                    "max-rate"
                };
                let span = get(st, key)
                    .or_else(|| get(t, "nat-throughput"))
                    .map_or(0..0, |v| v.span());
                self.err(span, &join(p, key), e.0);
            }
        }
    }

    /// One `[[matrix]]` block; `lab_dut`: the plan's DUT is the built-in lab (where the
    /// `offload` / `fastpath` switches act, so a user dimension of that name would mislead).
    fn matrix(
        &mut self,
        v: &Value<'_>,
        path: &str,
        profiles: &[Profile],
        lab_dut: bool,
    ) -> Option<Matrix> {
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
                "encap",
                "bidirectional",
                "offload",
                "fastpath",
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
        let encap = get(t, "encap").and_then(|x| {
            self.list(x, &join(path, "encap"), |w, i, q| {
                let s = w.nonempty(i, q)?;
                match parse_encap(&s) {
                    Ok(e) => Some(e),
                    Err(msg) => {
                        w.err(i.span(), q, msg);
                        None
                    }
                }
            })
        });
        if let Some(vars_t) = get(t, "vars").and_then(|vv| vv.get_ref().as_table()) {
            if let (Some(_), Some((_, kspan, _))) = (
                get(t, "encap"),
                entries(vars_t).into_iter().find(|(k, _, _)| *k == "encap"),
            ) {
                self.err(
                    kspan,
                    &join(&join(path, "vars"), "encap"),
                    "`encap` is a dimension of its own now; drop it from [matrix.vars]",
                );
            }
            // On the lab the built-in switches are what act; beside the built-in key of the
            // same name a user dimension would reach hooks twice (WR_OFFLOAD from both). A
            // device's own `fastpath` dimension stays its own.
            for (k, kspan, _) in entries(vars_t) {
                if (k == "offload" || k == "fastpath") && (lab_dut || get(t, k).is_some()) {
                    self.err(
                        kspan,
                        &join(&join(path, "vars"), k),
                        format!("`{k}` is a dimension of its own: write `{k} = [\"off\", \"on\"]` in the [[matrix]] block (hooks still get WR_{})", k.to_ascii_uppercase()),
                    );
                }
            }
        }
        let switch = |w: &mut Self, key: &str| -> Option<Vec<bool>> {
            get(t, key).and_then(|x| {
                w.list(x, &join(path, key), |w, i, q| {
                    w.choice(i, q, &[("off", false), ("on", true)])
                })
            })
        };
        let offload = switch(self, "offload");
        let fastpath = switch(self, "fastpath");
        let bidirectional = get(t, "bidirectional")
            .and_then(|x| self.boolean(x, &join(path, "bidirectional")))
            .unwrap_or(false);
        let (protocol, ip, profile, methodologies) = (protocol?, ip?, profile?, methodologies?);
        let has = |p: Protocol| protocol.contains(&p);
        if let (Some(es), Some(ev)) = (&encap, get(t, "encap")) {
            if es.iter().any(|e| e.dslite) && ip.contains(&IpVersion::V6) {
                self.err(
                    ev.span(),
                    &join(path, "encap"),
                    "dslite carries IPv4 test traffic inside IPv6; this block also asks for ip = 6 (put dslite in a block with ip = [4])",
                );
            }
            if has(Protocol::Tcp) && es.iter().any(|e| !e.is_plain()) {
                self.err(
                    ev.span(),
                    &join(path, "encap"),
                    "TCP cases run iperf3 over the kernel's plain interfaces; an encapsulation applies to UDP test frames only (put TCP in a block without `encap`)",
                );
            }
        }
        if let Some(bv) = get(t, "bidirectional") {
            if bidirectional && !has(Protocol::Udp) {
                self.err(
                    bv.span(),
                    &join(path, "bidirectional"),
                    "applies to UDP test frames; for TCP set `bidir = true` in [methodology.iperf3]",
                );
            }
        }
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
            // The template's own check and text, as `wirerate trial --size` reports it.
            for &v in &ip {
                if let Some(e) = fs
                    .iter()
                    .find_map(|&s| wire::template::check_reference_size(s as usize, v).err())
                {
                    self.err(fv.span(), &join(path, "frame-size"), e.to_string());
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
            encap: encap.unwrap_or_default(),
            bidirectional,
            offload: offload.unwrap_or_default(),
            fastpath: fastpath.unwrap_or_default(),
        })
    }
}

/// A matrix `encap` value: the headers around the test packet without its IP version (that is
/// the `ip` dimension), e.g. `plain`, `vlan`, `qinq`, `mpls:2`, `pppoe`, `pppoe+vlan`, `dslite`.
fn parse_encap(s: &str) -> Result<EncapSpec, String> {
    let names_ip = s.split('+').any(|p| {
        matches!(
            p.trim().to_ascii_lowercase().as_str(),
            "ipv4" | "ipv6" | "ip4" | "ip6"
        )
    });
    if names_ip {
        return Err(format!(
            "`{s}`: give the IP version in the block's `ip` key, not in `encap` (e.g. encap = [\"plain\", \"vlan\"], ip = [4, 6])"
        ));
    }
    s.parse::<EncapSpec>().map_err(|e| format!("`{s}`: {e}"))
}

/// Whether traffic ends at the DUT itself (one tester port): the lab's `endpoint` topology, or
/// real interfaces with a single port.
pub(super) fn is_endpoint(topo: &Topology, ports: &[Port]) -> bool {
    match topo {
        Topology::Lab { topology, .. } => topology == "endpoint",
        Topology::Interfaces => ports.len() == 1,
    }
}

/// The IPv4 packet inside a reference frame of `size` bytes (with FCS).
/// The longest duration a plan may give (a day), in either form.
const MAX_DURATION_SECS: u64 = 86_400;

/// What kind of name a plan string is handed on as.
#[derive(Debug, Clone, Copy)]
pub(super) enum NameKind {
    /// A network namespace (`ip netns exec NAME`).
    Netns,
    /// A network interface.
    Interface,
    /// An ssh destination, `[user@]host`.
    SshHost,
}

/// Whether `s` is a safe `what`: never an option (no leading `-`), never shell syntax or
/// whitespace, within the kernel's length limits. A plan's `dut.ssh = "-oProxyCommand=…"`
/// would otherwise run a command as root during preflight.
pub(super) fn check_name(s: &str, what: NameKind) -> Result<(), String> {
    let word = |part: &str, extra: &str| {
        !part.is_empty()
            && !part.starts_with('-')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c) || extra.contains(c))
    };
    match what {
        NameKind::Netns => {
            if s.len() > 4096 || s == "." || s == ".." || !word(s, "/") {
                return Err(format!("`{s}` is not a namespace name or path: use letters, digits, `.`, `_`, `-` and `/`, not starting with `-`"));
            }
        }
        NameKind::Interface => {
            if s.len() > 15 || s == "." || s == ".." || !word(s, "@:") {
                return Err(format!("`{s}` is not an interface name: 1 to 15 letters, digits, `.`, `_`, `-`, `@` or `:`, not starting with `-`"));
            }
        }
        NameKind::SshHost => {
            let (user, host) = match s.rsplit_once('@') {
                Some((u, h)) => (Some(u), h),
                None => (None, s),
            };
            let host_ok =
                word(host, "") || (host.contains(':') && word(host.trim_matches(['[', ']']), ":%"));
            if !host_ok || user.is_some_and(|u| !word(u, "")) {
                return Err(format!("`{s}` is not an ssh destination: write `host` or `user@host` (letters, digits, `.`, `_`, `-`; an IPv6 address is fine), not an ssh option; give the port with `ssh-port` and options in ~/.ssh/config"));
            }
        }
    }
    Ok(())
}

fn ipv4_packet(size: u32) -> u32 {
    size.saturating_sub(18)
}

impl Walker<'_> {
    /// What a `[[matrix]]` block asks of the ports that they cannot give: RFC 2544 trials
    /// without a receiving port, TCP or IPv6 through an emulated PPPoE/DS-Lite port, frames
    /// too big for a PPPoE session. The error points at the matrix key that asks.
    /// On the lab DUT, `fastpath = ["on"]` must suit every profile of the block (the lab
    /// refuses a fast path that would let packets skip rules they must walk) and `offload`
    /// needs a DUT: refused here, at the key, instead of when the run reaches the case.
    fn matrix_switches_fit_lab(
        &mut self,
        v: &Value<'_>,
        path: &str,
        m: &Matrix,
        topo: &Topology,
        profiles: &[Profile],
    ) {
        let (Some(t), Topology::Lab { topology, .. }) = (v.get_ref().as_table(), topo) else {
            return;
        };
        let Ok(lab_topology) = topology.parse::<lab::Topology>() else {
            return;
        };
        if let (true, Some(x)) = (
            !m.offload.is_empty() && !lab_topology.has(lab::Node::Dut),
            get(t, "offload"),
        ) {
            self.err(
                x.span(),
                &join(path, "offload"),
                format!("the `{topology}` lab has no DUT whose offloads could be switched"),
            );
        }
        let Some(x) = get(t, "fastpath").filter(|_| m.fastpath.contains(&true)) else {
            return;
        };
        for name in &m.profile {
            let lab_name = profiles
                .iter()
                .find(|p| &p.name == name)
                .map(|p| p.lab.clone().unwrap_or_else(|| p.name.clone()));
            let Some(lp) = lab_name.and_then(|n| lab::Profile::parse(&n).ok()) else {
                continue; // a bad lab profile is reported where it is written
            };
            if let Err(e) = lab::fastpath::program_for(&lp, lab_topology) {
                self.err(
                    x.span(),
                    &join(path, "fastpath"),
                    format!("profile `{name}`: {e}"),
                );
            }
        }
    }

    fn matrix_fits_ports(
        &mut self,
        v: &Value<'_>,
        path: &str,
        m: &Matrix,
        topo: &Topology,
        ports: &[Port],
    ) {
        let Some(t) = v.get_ref().as_table() else {
            return;
        };
        let span_of = |key: &str| get(t, key).map_or(v.span(), |x| x.span());
        let udp = m.protocol.contains(&Protocol::Udp);
        if is_endpoint(topo, ports) && udp && m.methodologies.iter().any(|x| x.needs_engine()) {
            self.src.error(
                span_of("methodologies"),
                &join(path, "methodologies"),
                "the endpoint topology has one tester port, so nothing receives the RFC 2544 test frames",
                Some("use `iperf3` (its server runs on the DUT), or add a second port".into()),
            );
        }
        for (i, port) in ports.iter().enumerate() {
            let what = match (&port.pppoe, &port.dslite) {
                (Some(_), _) => "PPPoE session",
                (None, Some(_)) => "DS-Lite softwire",
                (None, None) => continue,
            };
            // An access concentrator with `internet` hands its sessions to a TUN device, where
            // a kernel (iperf3's server) sits behind it: TCP crosses, from the first port.
            let tun = port
                .pppoe
                .as_ref()
                .is_some_and(|p| p.role == PppoeRole::Server && p.internet.is_some());
            if m.protocol.contains(&Protocol::Tcp) && !(tun && i == 1) {
                let hint = if tun {
                    "the iperf3 client runs at the first port: make this port the second"
                        .to_string()
                } else if port
                    .pppoe
                    .as_ref()
                    .is_some_and(|p| p.role == PppoeRole::Server)
                {
                    format!("add `internet = \"203.0.113.1\"` under [ports.{}.pppoe]: the sessions then reach a kernel through a TUN device, where iperf3's server runs", port.name)
                } else {
                    "run UDP through it, TCP on plain ports".to_string()
                };
                self.err(
                    span_of("protocol"),
                    &join(path, "protocol"),
                    format!(
                        "TCP cannot cross port `{}`: its {what} lives in wirerate, not in the kernel, so iperf3 cannot use it; {hint}",
                        port.name
                    ),
                );
            }
            if m.ip.contains(&IpVersion::V6) {
                self.err(
                    span_of("ip"),
                    &join(path, "ip"),
                    format!(
                        "IPv6 test frames cannot cross port `{}`: the emulated {what} carries IPv4 only (no IPv6 prefix is delegated)",
                        port.name
                    ),
                );
            }
            let probe_only = m.methodologies.iter().all(|x| *x == Methodology::MtuProbe);
            if let Some(ds) = &port.dslite {
                if udp && (m.encap.is_empty() || m.encap.iter().any(|e| !e.dslite)) {
                    self.src.error(
                        span_of("encap"),
                        &join(path, "encap"),
                        format!("port `{}` plays a DS-Lite softwire, so UDP frames cross it inside IPv6", port.name),
                        Some("write `encap = [\"dslite\"]`: line rates and reports then count the tunnelled frame (+40 bytes)".into()),
                    );
                }
                // RFC 6333 §5.3: above the link's MTU the outer IPv6 packet is fragmented.
                // (`mtu-probe` alone goes there on purpose: it finds where that starts.)
                let mtu = ds.mtu;
                if let Some(&bad) = m
                    .frame_size
                    .iter()
                    .find(|&&f| ipv4_packet(f) + 40 > mtu as u32 && !probe_only)
                {
                    self.err(
                        span_of("frame-size"),
                        &join(path, "frame-size"),
                        crate::oversize::dslite_refusal(bad as usize, mtu, &port.name),
                    );
                }
            }
            if let Some(pp) = &port.pppoe {
                // The case's encapsulation is what line rates and reports count on the far
                // link; it must say PPPoE when a port plays a session.
                if udp && (m.encap.is_empty() || m.encap.iter().any(|e| !e.pppoe)) {
                    self.src.error(
                        span_of("encap"),
                        &join(path, "encap"),
                        format!("port `{}` plays a PPPoE session, so UDP frames cross it in PPPoE", port.name),
                        Some("write `encap = [\"pppoe\"]`: line rates and reports then count the PPPoE frame (+8 bytes)".into()),
                    );
                }
                let mru = u32::from(pp.mru);
                if let Some(&bad) = m
                    .frame_size
                    .iter()
                    .find(|&&f| ipv4_packet(f) > mru && !probe_only)
                {
                    self.err(
                        span_of("frame-size"),
                        &join(path, "frame-size"),
                        crate::oversize::pppoe_refusal(bad as usize, mru as usize, &port.name),
                    );
                }
            }
        }
    }

    /// Addresses the matrix needs on real ports: a source and next hop on the sending port, a
    /// destination on the receiving one (unless a PPPoE session gives them), and separate
    /// namespaces for TCP (one kernel would deliver it locally, past the DUT).
    fn ports_fit_matrix(
        &mut self,
        root: &DeTable<'_>,
        root_span: &Range<usize>,
        ports: &[Port],
        matrices: &[Matrix],
    ) {
        let ports_span = get(root, "ports").map_or(root_span.clone(), |p| p.span());
        let span = |name: &str| {
            get(root, "ports")
                .and_then(|p| p.get_ref().as_table())
                .and_then(|t| get(t, name))
                .map_or(ports_span.clone(), |x| x.span())
        };
        if ports.is_empty() {
            return;
        }
        if ports.len() > 2 {
            self.src.error(
                ports_span.clone(),
                "ports",
                format!("{} ports: a plan has two (traffic flows from the first to the second) or one (the DUT is the endpoint)", ports.len()),
                None,
            );
            return;
        }
        let any = |f: &dyn Fn(&Matrix) -> bool| matrices.iter().any(f);
        let has =
            |m: &Matrix, p: Protocol, ip: IpVersion| m.protocol.contains(&p) && m.ip.contains(&ip);
        let engine = |m: &Matrix| m.methodologies.iter().any(|x| x.needs_engine());
        let a = &ports[0];
        let b = ports.get(1);
        for ip in [IpVersion::V4, IpVersion::V6] {
            let (n, addr, gw) = match ip {
                IpVersion::V4 => (4, "ipv4", "gateway-v4"),
                IpVersion::V6 => (6, "ipv6", "gateway-v6"),
            };
            let has_addr = |p: &Port| match ip {
                IpVersion::V4 => p.ipv4.is_some() || p.pppoe.is_some(),
                IpVersion::V6 => p.ipv6.is_some(),
            };
            let has_gw = |p: &Port| match ip {
                IpVersion::V4 => p.gateway_v4.is_some() || p.pppoe.is_some(),
                IpVersion::V6 => p.gateway_v6.is_some(),
            };
            let udp = any(&|m| has(m, Protocol::Udp, ip) && engine(m));
            let tcp = any(&|m| {
                has(m, Protocol::Tcp, ip)
                    || (has(m, Protocol::Udp, ip) && m.methodologies.contains(&Methodology::Iperf3))
            });
            let mut need = |p: &Port, key: &str, why: String| {
                self.err(
                    span(&p.name),
                    &join(&join("ports", &p.name), key),
                    format!("missing key: {why}"),
                );
            };
            match b {
                Some(b) => {
                    // A B4 sends from 192.0.0.2 straight to the AFTR (RFC 6333 §5.7).
                    let b4 = a.dslite.is_some() && ip == IpVersion::V4;
                    if udp && !has_addr(a) && !b4 {
                        need(a, addr, format!("IPv{n} test frames are sent from this port (the first one), with this source address"));
                    }
                    if udp && !has_gw(a) && !b4 {
                        need(a, gw, format!("IPv{n} test frames go to this next hop (the DUT's address on this link; its MAC is resolved)"));
                    }
                    let bidir = any(&|m| has(m, Protocol::Udp, ip) && engine(m) && m.bidirectional);
                    // An AFTR sends the reverse stream into the softwire: no next hop.
                    if bidir && !has_gw(b) && b.dslite.is_none() {
                        need(b, gw, format!("bidirectional IPv{n} trials also send from this port, to this next hop"));
                    }
                    if (udp || tcp) && !has_addr(b) {
                        need(
                            b,
                            addr,
                            format!(
                                "IPv{n} test traffic is addressed to this port (the second one)"
                            ),
                        );
                    }
                }
                None => {
                    if tcp && !has_gw(a) {
                        need(a, gw, format!("with one port the DUT is the endpoint: iperf3 over IPv{n} connects to this address of the DUT"));
                    }
                }
            }
        }
        if let Some(b) = b {
            let tcp = any(&|m| m.methodologies.contains(&Methodology::Iperf3));
            // An AC with `internet` runs iperf3's server in the namespace the run creates for
            // its TUN, never in port b's.
            let internet = b
                .pppoe
                .as_ref()
                .is_some_and(|p| p.role == PppoeRole::Server && p.internet.is_some());
            if tcp && a.namespace == b.namespace && !internet {
                self.src.error(
                    span(&b.name),
                    &join(&join("ports", &b.name), "namespace"),
                    "iperf3 needs the two ports in different network namespaces: in one kernel, traffic between two local addresses never leaves the host, so it would not cross the DUT",
                    Some("move one interface into a namespace (`ip link set IF netns NS`) and name it here".into()),
                );
            }
        }
    }
}

impl Walker<'_> {
    /// Whether the test bed can carry a block's `encap` and `bidirectional` asks, before any
    /// traffic: the lab's DUT is a kernel namespace on plain veths that forwards plain IPv4/IPv6
    /// only; PPPoE and DS-Lite need a port that plays the session or softwire (a WAN emulation
    /// port); VLAN, QinQ and MPLS need a real DUT configured for them. A port that plays a
    /// PPPoE session or softwire puts every test frame into it, so `encap` must say so.
    fn matrix_encap_fits(
        &mut self,
        v: &Value<'_>,
        path: &str,
        m: &Matrix,
        topo: &Topology,
        ports: &[Port],
    ) {
        let Some(t) = v.get_ref().as_table() else {
            return;
        };
        let span_of = |key: &str| get(t, key).map_or(v.span(), |x| x.span());
        let key = join(path, "encap");
        let pppoe_port = ports.iter().find(|p| p.pppoe.is_some());
        let dslite_port = ports.iter().find(|p| p.dslite.is_some());
        // The lab's veths keep the kernel's default MTU; a larger frame would be refused by the
        // tester's own port. (Through PPPoE or DS-Lite the MRU/MTU checks above apply.)
        if matches!(topo, Topology::Lab { .. }) && pppoe_port.is_none() && dslite_port.is_none() {
            let largest = lab::LINK_MTU + 18;
            if let Some(&bad) = m.frame_size.iter().find(|&&f| f > largest) {
                self.err(
                    span_of("frame-size"),
                    &join(path, "frame-size"),
                    format!("{bad} B does not fit the lab's links: their MTU {} carries frames of at most {largest} B (with FCS); the lab does not do jumbo frames", lab::LINK_MTU),
                );
            }
        }
        for e in &m.encap {
            let spelled = spell_encap(e);
            let tagged = e.tagging != wire::encap::Tagging::Untagged || e.mpls_labels > 0;
            if e.pppoe && pppoe_port.is_none() {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}` needs a port that plays the PPPoE session (a WAN emulation port: [ports.NAME.pppoe]); no port here does"),
                );
            }
            if e.dslite && dslite_port.is_none() {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}` needs a port that plays the DS-Lite softwire (a WAN emulation port: [ports.NAME.dslite]); no port here does"),
                );
            }
            if tagged && matches!(topo, Topology::Lab { .. }) {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}` cannot run on the lab: its DUT is a kernel namespace on plain veths that forwards plain IPv4/IPv6 only; VLAN, QinQ and MPLS need a real DUT configured for them (topology.kind = \"interfaces\")"),
                );
            }
            if let Some(p) = pppoe_port.filter(|_| !e.pppoe) {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}`: port `{}` plays a PPPoE session, so every test frame crosses it in PPPoE; write `pppoe` (or drop `encap`)", p.name),
                );
            }
            if let Some(p) = dslite_port.filter(|_| !e.dslite) {
                self.err(
                    span_of("encap"),
                    &key,
                    format!("`{spelled}`: port `{}` plays a DS-Lite softwire, so every test frame crosses it in IPv4-in-IPv6; write `dslite` (or drop `encap`)", p.name),
                );
            }
        }
        if m.bidirectional {
            let key = join(path, "bidirectional");
            // PPPoE and DS-Lite are the emulated port's: port B sends the reverse stream into
            // its own session or softwire (crate::testbed). Tags and labels are not: the
            // reverse stream would have to resolve and send inside them.
            let tagged = |e: &&EncapSpec| {
                let mut rest = **e;
                rest.pppoe = false;
                rest.dslite = false;
                !rest.is_plain()
            };
            if let Some(e) = m.encap.iter().find(tagged) {
                self.err(
                    span_of("bidirectional"),
                    &key,
                    format!("bidirectional trials send the reverse stream from the second port without tags or labels; with encap `{}` it would have to resolve and send inside that encapsulation, which the engine does not do yet", spell_encap(e)),
                );
            }
        }
    }
}

/// How a plan spells an encapsulation: its headers without the IP version (`plain`, `vlan`,
/// `pppoe+vlan`), the form the `encap` key takes and case ids carry.
pub(super) fn spell_encap(e: &EncapSpec) -> String {
    if e.is_plain() {
        return "plain".into();
    }
    let full = e.to_string();
    let parts: Vec<&str> = full
        .split('+')
        .filter(|p| *p != "ipv4" && *p != "ipv6")
        .collect();
    parts.join("+")
}

/// Parses and checks a plan (expansion is checked by the caller).
/// The bare or quoted TOML key that starts at byte `at` of `text`, if one does.
fn key_at(text: &str, at: usize) -> Option<String> {
    let rest = text.get(at..)?;
    if let Some(q) = rest.strip_prefix('"') {
        return q.split('"').next().map(str::to_string);
    }
    let k: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    (!k.is_empty()).then_some(k)
}

/// Where the key `path` (as plan errors spell it: `dut.profiles.napt.setup[0]`) is written in
/// `text`: its 1-based line and column. `None` when the text does not parse or has no such
/// key (quoted keys containing dots are not found).
pub fn locate(text: &str, path: &str) -> Option<(usize, usize)> {
    let doc = DeTable::parse(text).ok()?;
    let mut table: &DeTable<'_> = doc.get_ref();
    let mut here: Option<&Value<'_>> = None;
    for seg in path.split('.') {
        let (key, indices) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg, ""),
        };
        if here.is_some() {
            table = here?.get_ref().as_table()?;
        }
        let mut v = get(table, key)?;
        for idx in indices.split(']').filter(|x| !x.is_empty()) {
            let i: usize = idx.trim_start_matches('[').parse().ok()?;
            v = v.get_ref().as_array()?.get(i)?;
        }
        here = Some(v);
    }
    let (line, col) = super::source::line_col(text, here?.span().start);
    Some((line, col))
}

pub(super) fn parse(text: &str, file: &str) -> Result<Plan, PlanErrors> {
    let mut w = Walker {
        src: Source::new(text, file),
    };
    let doc = match DeTable::parse(text) {
        Ok(d) => d,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let message = e.message().trim();
            // The TOML parser says "duplicate key" without the key; it points at it.
            let (key, message) = match key_at(text, span.start) {
                Some(k) if message == "duplicate key" => (
                    k.clone(),
                    format!("duplicate key `{k}`: it is already given earlier in the same table; give each key once"),
                ),
                _ => (String::new(), format!("TOML syntax: {message}")),
            };
            w.src.error(span, &key, message, None);
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
    let methodology = w.methodology(root, &run);
    let profiles = dut.as_ref().map(|d| d.profiles.clone()).unwrap_or_default();
    let mut matrices = Vec::new();
    if let Some(mv) = w.required(root, &root_span, "", "matrix") {
        match mv.get_ref() {
            DeValue::Array(a) if !a.is_empty() => {
                for (i, item) in a.iter().enumerate() {
                    let path = format!("matrix[{i}]");
                    let lab_dut = dut.as_ref().is_some_and(|d| d.kind == DutKind::Lab);
                    if let Some(m) = w.matrix(item, &path, &profiles, lab_dut) {
                        if let Some(t) = &topology {
                            w.matrix_fits_ports(item, &path, &m, t, &ports);
                            w.matrix_encap_fits(item, &path, &m, t, &ports);
                            if lab_dut {
                                w.matrix_switches_fit_lab(item, &path, &m, t, &profiles);
                            }
                        }
                        matrices.push(m);
                    }
                }
            }
            _ => w.type_err(mv, "matrix", "one or more [[matrix]] blocks"),
        }
    }
    if let Some(Topology::Interfaces) = &topology {
        w.ports_fit_matrix(root, &root_span, &ports, &matrices);
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
