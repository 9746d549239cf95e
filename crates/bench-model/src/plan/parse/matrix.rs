//! `[[matrix]]` blocks: the dimensions a run's cases are the product of.

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
                "flows",
                "tos",
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
        // Sizes in bytes, and `"imix"` (the simple IMIX, as `wirerate trial --size imix`).
        let mut imix = false;
        let frame_size = get(t, "frame-size").and_then(|x| {
            self.list(x, &join(path, "frame-size"), |w, i, q| match i.get_ref() {
                DeValue::String(_) => w.choice(i, q, &[("imix", ())]).map(|()| {
                    imix = true;
                    None
                }),
                _ => w
                    .int(i, q, 1, wire::template::MAX_FRAME_SIZE as i64)
                    .map(|n| Some(n as u32)),
            })
            .map(|v| v.into_iter().flatten().collect::<Vec<u32>>())
        });
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
        let flows = self.stream_dimension(t, path, "flows", u16::MAX.into());
        let tos = self.stream_dimension(t, path, "tos", 255);
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
            if imix {
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
            imix,
            flows: flows.into_iter().map(|n| n as u16).collect(),
            tos: tos.into_iter().map(|n| n as u8).collect(),
        })
    }
}
