//! `[ports.NAME.ipoe]` (`super::super::IpoeSettings`): each key checked where it is written,
//! then the whole configuration by `emulate`'s own checks (pool, subnet, DNS address).

use super::*;

impl Walker<'_> {
    /// `[ports.NAME.ipoe]`.
    pub(super) fn ipoe(&mut self, v: &Value<'_>, path: &str) -> Option<IpoeSettings> {
        let t = self.table(v, path)?;
        self.keys(
            t,
            path,
            &[
                "gateway",
                "prefix-len",
                "pool",
                "pool-size",
                "dns",
                "lease-time",
                "ipv6",
                "aftr-name",
                "aftr",
                "internet",
                "timeout",
            ],
        );
        let mut out = IpoeSettings::default();
        let key = |k: &str| join(path, k);
        if let Some(x) = get(t, "gateway").and_then(|x| self.addr(x, &key("gateway"))) {
            out.gateway = x;
        }
        if let Some(x) = get(t, "prefix-len").and_then(|x| self.int(x, &key("prefix-len"), 15, 30))
        {
            out.prefix_len = x as u8;
        }
        if let Some(x) = get(t, "pool").and_then(|x| self.addr(x, &key("pool"))) {
            out.pool = x;
        }
        if let Some(x) =
            get(t, "pool-size").and_then(|x| self.int(x, &key("pool-size"), 1, 131_070))
        {
            out.pool_size = x as u32;
        }
        if let Some(x) = get(t, "dns").and_then(|x| self.addr(x, &key("dns"))) {
            out.dns = x;
        }
        if let Some(x) = get(t, "lease-time").and_then(|x| self.duration(x, &key("lease-time"))) {
            out.lease_time = x;
        }
        if let Some(x) = get(t, "ipv6").and_then(|x| self.boolean(x, &key("ipv6"))) {
            out.ipv6 = x;
        }
        if let Some(x) = get(t, "aftr") {
            if let Some(a) = self.addr::<std::net::Ipv6Addr>(x, &key("aftr")) {
                if !emulate::ranges::lab_prefix_v6(a, 128) {
                    self.err(
                        x.span(),
                        &key("aftr"),
                        format!("{a} is not inside {}", emulate::ranges::LAB_V6_TEXT),
                    );
                } else {
                    out.aftr = a;
                }
            }
        }
        if let Some(x) = get(t, "aftr-name") {
            if let Some(n) = self.nonempty(x, &key("aftr-name")) {
                match wire::dns::Name::from_dotted(&n) {
                    Ok(_) => out.aftr_name = Some(n),
                    Err(e) => self.err(x.span(), &key("aftr-name"), format!("not a DNS name: {e}")),
                }
            }
        } else if get(t, "aftr").is_some() {
            self.err(v.span(), &key("aftr-name"), "missing key: `aftr` is the address our DNS gives for `aftr-name`; name it (e.g. aftr-name = \"aftr.example.net\")");
        }
        if let Some(x) = get(t, "internet") {
            if let Some(a) = self.addr::<Ipv4Addr>(x, &key("internet")) {
                let subnet = emulate::ranges::Ipv4Net::new(out.gateway, out.prefix_len);
                if emulate::pppoe::documentation_net(a).is_none() {
                    self.err(x.span(), &key("internet"), format!("{a}: use a documentation address (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24), e.g. 203.0.113.1"));
                } else if subnet.contains(a) || a == out.dns {
                    self.err(x.span(), &key("internet"), format!("{a} is in the gateway's subnet {subnet} or is the DNS server: the Internet host needs an address of its own, e.g. 203.0.113.1"));
                } else {
                    out.internet = Some(a);
                }
            }
        }
        if let Some(x) = get(t, "timeout").and_then(|x| self.duration(x, &key("timeout"))) {
            out.timeout = x.max(Duration::from_millis(100));
        }
        // Refused as a whole where emulate refuses it (the plan fails; the port is still
        // returned, so no key of the port is reported missing because of it).
        if let Err(e) = out.config(wire::ethernet::MacAddr::ZERO) {
            self.err(v.span(), path, e.to_string());
        }
        Some(out)
    }
}
