//! The walker's readers of one value each: strings, numbers, durations, speeds, lists,
//! choices, sub-tables, hooks, addresses. Each reports a wrong value at its key and returns
//! `None`, so the walk goes on and every error is collected.

use super::*;

impl Walker<'_> {
    pub(super) fn err(&mut self, span: Range<usize>, key: &str, msg: impl Into<String>) {
        self.src.error(span, key, msg, None);
    }

    pub(super) fn type_err(&mut self, v: &Value<'_>, key: &str, expected: &str) {
        let msg = format!("expected {expected}, found {}", type_name(v.get_ref()));
        self.err(v.span(), key, msg);
    }

    /// Rejects keys not in `allowed`, suggesting the closest one.
    pub(super) fn keys(&mut self, t: &DeTable<'_>, path: &str, allowed: &[&str]) {
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

    pub(super) fn table<'a, 'i>(
        &mut self,
        v: &'a Value<'i>,
        path: &str,
    ) -> Option<&'a DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => {
                self.type_err(v, path, "a table");
                None
            }
        }
    }

    pub(super) fn required<'a, 'i>(
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

    pub(super) fn string(&mut self, v: &Value<'_>, path: &str) -> Option<String> {
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.type_err(v, path, "a string");
                None
            }
        }
    }

    pub(super) fn nonempty(&mut self, v: &Value<'_>, path: &str) -> Option<String> {
        let s = self.string(v, path)?;
        if s.trim().is_empty() {
            self.err(v.span(), path, "must not be empty");
            return None;
        }
        Some(s)
    }

    /// A non-empty string that [`check_name`] accepts as `what` (it is handed to `ip`, `ssh`
    /// or the kernel, so it must not be able to become an option or shell syntax).
    pub(super) fn name_like(
        &mut self,
        v: &Value<'_>,
        path: &str,
        what: NameKind,
    ) -> Option<String> {
        let s = self.nonempty(v, path)?;
        match check_name(&s, what) {
            Ok(()) => Some(s),
            Err(why) => {
                self.err(v.span(), path, why);
                None
            }
        }
    }

    pub(super) fn int(&mut self, v: &Value<'_>, path: &str, min: i64, max: i64) -> Option<i64> {
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

    /// An integer of any size, its bounds left to the key's own check: one beyond 64 bits
    /// reads as the bound on its side, so that check reports it as out of its range.
    pub(super) fn any_int(&mut self, v: &Value<'_>, path: &str) -> Option<i64> {
        let DeValue::Integer(i) = v.get_ref() else {
            self.type_err(v, path, "an integer");
            return None;
        };
        let beyond = if i.as_str().starts_with('-') {
            i64::MIN
        } else {
            i64::MAX
        };
        Some(i64::from_str_radix(i.as_str(), i.radix()).unwrap_or(beyond))
    }

    pub(super) fn float(&mut self, v: &Value<'_>, path: &str, min: f64, max: f64) -> Option<f64> {
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

    pub(super) fn boolean(&mut self, v: &Value<'_>, path: &str) -> Option<bool> {
        match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => {
                self.type_err(v, path, "a boolean");
                None
            }
        }
    }

    pub(super) fn duration(&mut self, v: &Value<'_>, path: &str) -> Option<Duration> {
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

    pub(super) fn speed(&mut self, v: &Value<'_>, path: &str) -> Option<BitsPerSec> {
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
    pub(super) fn list<'a, 'i, T>(
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

    pub(super) fn choice<T: Copy>(
        &mut self,
        v: &Value<'_>,
        path: &str,
        options: &[(&str, T)],
    ) -> Option<T> {
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
    pub(super) fn sub<'a, 'i>(
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

    /// Refuses the settings of search `methodology.NAME` (sub-table `st` of `t`) with `why`, the
    /// search's own check: at key `first` when the plan sets it, else at `other`, else at the
    /// sub-table.
    pub(super) fn refuse_search(
        &mut self,
        t: &DeTable<'_>,
        st: &DeTable<'_>,
        name: &str,
        [first, other]: [&str; 2],
        why: String,
    ) {
        let key = if get(st, first).is_some() {
            first
        } else {
            other
        };
        let span = get(st, key)
            .or_else(|| get(t, name))
            .map_or(0..0, |v| v.span());
        self.err(span, &join(&join("methodology", name), key), why);
    }

    /// A lab profile name that the lab knows (`forward`, `filter-stateful-100`, …): refused
    /// here, at its line, rather than by the run's preflight.
    pub(super) fn lab_profile(&mut self, v: &Value<'_>, path: &str) -> Option<String> {
        let name = self.nonempty(v, path)?;
        match lab_model::Profile::parse(&name) {
            Ok(_) => Some(name),
            Err(e) => {
                self.err(v.span(), path, e.to_string());
                None
            }
        }
    }

    /// `table-size` and `udp-timeout` of a lab profile: only where the lab profile keeps a
    /// connection table (`filter-stateful-N`, `napt…`), which is what they size.
    pub(super) fn conn_table(
        &mut self,
        p: &DeTable<'_>,
        path: &str,
        lab_profile: &str,
    ) -> (Option<u64>, Option<Duration>) {
        let stateful = matches!(
            lab_model::Profile::parse(lab_profile),
            Ok(lab_model::Profile::FilterStateful { .. } | lab_model::Profile::Napt { .. })
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

    /// One hook of `stage`; a parser that cannot read that stage's output is refused at its
    /// `parse` key, naming the stages it fits ([`Parser::misfit`]).
    pub(super) fn hook(&mut self, v: &Value<'_>, path: &str, stage: Stage) -> Option<Hook> {
        match v.get_ref() {
            DeValue::String(_) => Some(Hook {
                command: self.nonempty(v, path)?,
                parse: None,
            }),
            DeValue::Table(t) => {
                self.keys(t, path, &["command", "parse"]);
                let parsers: Vec<(&str, Parser)> = Parser::ALL.to_vec();
                let at = join(path, "parse");
                let parse = get(t, "parse").and_then(|p| {
                    let parser = self.choice(p, &at, &parsers)?;
                    match parser.misfit(stage) {
                        None => Some(parser),
                        Some(why) => {
                            self.err(p.span(), &at, why);
                            None
                        }
                    }
                });
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

    pub(super) fn hooks(&mut self, t: &DeTable<'_>, path: &str) -> ProfileHooks {
        let mut h = ProfileHooks::default();
        for (stage, slot) in [
            (Stage::Setup, &mut h.setup),
            (Stage::Teardown, &mut h.teardown),
            (Stage::StatsBefore, &mut h.stats_before),
            (Stage::StatsAfter, &mut h.stats_after),
            (Stage::Sampler, &mut h.samplers),
        ] {
            let key = stage.key();
            if let Some(v) = get(t, key) {
                *slot = self
                    .list(v, &join(path, key), |w, item, p| w.hook(item, p, stage))
                    .unwrap_or_default();
            }
        }
        h
    }

    /// An IPv4 or IPv6 address written as a string.
    pub(super) fn addr<T: core::str::FromStr>(&mut self, v: &Value<'_>, path: &str) -> Option<T> {
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
}
