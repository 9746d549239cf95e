//! `[[matrix]]` blocks: the dimensions a run's cases are the product of, each read as its row
//! of [`DIMENSIONS`] says, then the rules that tie them together.

use super::*;

impl Walker<'_> {
    /// One `[[matrix]]` block; `lab_dut`: the plan's DUT is the built-in lab (where the
    /// `offload` / `fastpath` switches act, so a user dimension of that name would mislead).
    pub(super) fn matrix(
        &mut self,
        v: &Value<'_>,
        path: &str,
        profiles: &[Profile],
        lab_dut: bool,
    ) -> Option<Matrix> {
        let t = self.table(v, path)?;
        let allowed: Vec<&str> = ["name"]
            .into_iter()
            .chain(DIMENSIONS.iter().map(|d| d.key))
            .chain(["methodologies"])
            .collect();
        self.keys(t, path, &allowed);
        let span = v.span();
        let name = get(t, "name").and_then(|n| self.nonempty(n, &join(path, "name")));
        let mut m = Matrix::new(name, self.src.line(span.start));
        let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        let known = Known { profiles: &names };
        let mut complete = true;
        for d in &DIMENSIONS {
            let q = join(path, d.key);
            let read = match get(t, d.key) {
                Some(x) => self.dimension(d, x, &q, &mut m, &known),
                None => match d.absent {
                    Absent::Required => {
                        self.err(span.clone(), &q, "missing key");
                        false
                    }
                    Absent::Nothing => true,
                    Absent::Default(fill) => {
                        fill(&mut m, &known);
                        true
                    }
                },
            };
            complete &= read || !d.needed;
        }
        let meth_v = self.required(t, &span, path, "methodologies");
        let methodologies = meth_v.and_then(|x| {
            self.list(x, &join(path, "methodologies"), |w, i, q| {
                w.choice(i, q, &Methodology::ALL)
            })
        });
        self.user_dimension_names(t, path, lab_dut);
        m.methodologies = methodologies?;
        if !complete {
            return None;
        }
        self.matrix_rules(t, path, &span, meth_v, &m);
        Some(m)
    }

    /// The values of dimension `d` at `x` (key `q`) into `m`; `false`, with the errors
    /// reported and `m` as it was, when a value is wrong.
    fn dimension(
        &mut self,
        d: &Dimension,
        x: &Value<'_>,
        q: &str,
        m: &mut Matrix,
        known: &Known<'_>,
    ) -> bool {
        let before = m.clone();
        let read = match d.syntax {
            Syntax::Flag => self
                .boolean(x, q)
                .is_some_and(|b| self.store(d, m, Item::Flag(b), x, q, known)),
            Syntax::Table => self.user_dimensions(d, x, q, m, known),
            _ => self
                .list(x, q, |w, i, q| {
                    let item = w.item(d.syntax, i, q)?;
                    w.store(d, m, item, i, q, known).then_some(())
                })
                .is_some(),
        };
        if !read {
            *m = before;
        }
        read
    }

    /// One list item of `syntax`, checked with the texts every key uses.
    fn item(&mut self, syntax: Syntax, i: &Value<'_>, q: &str) -> Option<Item> {
        let words = |ws: &[&'static str]| -> Vec<(&'static str, &'static str)> {
            ws.iter().map(|w| (*w, *w)).collect()
        };
        match syntax {
            Syntax::Words(ws) => self.choice(i, q, &words(ws)).map(Item::Word),
            Syntax::Ints { min, max } => self.int(i, q, min, max).map(Item::Int),
            Syntax::IntsOrWord { word } => match i.get_ref() {
                DeValue::String(_) => self.choice(i, q, &words(&[word])).map(Item::Word),
                _ => self.any_int(i, q).map(Item::Int),
            },
            Syntax::Texts => self.nonempty(i, q).map(Item::Text),
            Syntax::Flag => self.boolean(i, q).map(Item::Flag),
            Syntax::Table => None,
        }
    }

    /// `item` handed to `d`'s own check; `false`, with its refusal reported at `at`, when the
    /// value is wrong.
    fn store(
        &mut self,
        d: &Dimension,
        m: &mut Matrix,
        item: Item,
        at: &Value<'_>,
        q: &str,
        known: &Known<'_>,
    ) -> bool {
        match (d.store)(m, item, known) {
            Ok(()) => true,
            Err(r) => {
                self.src.error(at.span(), q, r.message, r.hint);
                false
            }
        }
    }

    /// `vars = { NAME = [values] }`: each user dimension's name and values. A dimension with a
    /// bad name or value is left out with its error; the others stand.
    fn user_dimensions(
        &mut self,
        d: &Dimension,
        x: &Value<'_>,
        q: &str,
        m: &mut Matrix,
        known: &Known<'_>,
    ) -> bool {
        let Some(vt) = self.table(x, q) else {
            return false;
        };
        for (k, kspan, values) in entries(vt) {
            let q = join(q, k);
            if !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                self.err(kspan, &q, "dimension names may use letters, digits, `-` and `_` only (they become WR_* variables)");
                continue;
            }
            let vals = self.list(values, &q, |w, i, p| {
                let v = match i.get_ref() {
                    DeValue::String(s) => s.to_string(),
                    DeValue::Integer(n) => n.to_string(),
                    DeValue::Boolean(b) => b.to_string(),
                    _ => {
                        w.type_err(i, p, "a string, integer or boolean");
                        return None;
                    }
                };
                if v.contains('/') {
                    w.err(i.span(), p, "a dimension's value may not contain `/`: case ids separate dimensions with it");
                    return None;
                }
                Some(v)
            });
            if let Some(vals) = vals {
                self.store(d, m, Item::Named(k.into(), vals), x, &q, known);
            }
        }
        true
    }

    /// User dimensions named like a built-in one: refused where both would reach hooks.
    fn user_dimension_names(&mut self, t: &DeTable<'_>, path: &str, lab_dut: bool) {
        let Some(vars_t) = get(t, "vars").and_then(|vv| vv.get_ref().as_table()) else {
            return;
        };
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

    /// What a block's dimensions must agree on: keys that apply to one protocol only, the
    /// IMIX against methodologies of one size, latency after a throughput search.
    fn matrix_rules(
        &mut self,
        t: &DeTable<'_>,
        path: &str,
        span: &Range<usize>,
        meth_v: Option<&Value<'_>>,
        m: &Matrix,
    ) {
        let has = |p: Protocol| m.protocol.contains(&p);
        let methodologies = &m.methodologies;
        if let (false, Some(ev)) = (m.encap.is_empty(), get(t, "encap")) {
            if let (Some(name), true) = (
                m.encap.iter().find_map(|e| e.softwire_name()),
                m.ip.contains(&IpVersion::V6),
            ) {
                self.err(
                    ev.span(),
                    &join(path, "encap"),
                    format!("{name} carries IPv4 test traffic inside IPv6; this block also asks for ip = 6 (put {name} in a block with ip = [4])"),
                );
            }
            if has(Protocol::Tcp) && m.encap.iter().any(|e| !e.is_plain()) {
                self.err(
                    ev.span(),
                    &join(path, "encap"),
                    "TCP cases run iperf3 over the kernel's plain interfaces; an encapsulation applies to UDP test frames only (put TCP in a block without `encap`)",
                );
            }
        }
        if let Some(bv) = get(t, "bidirectional") {
            if m.bidirectional && !has(Protocol::Udp) {
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
        if let (false, Some(fv)) = (m.frame_size.is_empty(), get(t, "frame-size")) {
            if !has(Protocol::Udp) {
                self.err(
                    fv.span(),
                    &join(path, "frame-size"),
                    "applies to UDP cases only (TCP frame sizes follow from `mss`)",
                );
            }
            if m.has_imix() {
                let fixed_only = [
                    (
                        Methodology::Rfc2544BackToBack,
                        "its burst length is counted in frames of one size",
                    ),
                    (Methodology::MtuProbe, "it probes one size at a time"),
                    (Methodology::Iperf3, "iperf3 sends datagrams of one size"),
                ];
                let connections = methodologies
                    .iter()
                    .filter(|x| x.is_connection())
                    .map(|x| (*x, "its connections are frames of one size"));
                for (x, why) in fixed_only.into_iter().chain(connections) {
                    if methodologies.contains(&x) {
                        self.err(
                            fv.span(),
                            &join(path, "frame-size"),
                            format!("\"imix\" cannot run {} ({why}): put the IMIX in a block without it", x.name()),
                        );
                    }
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
    }
}
