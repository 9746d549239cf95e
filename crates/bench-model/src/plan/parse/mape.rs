//! `[ports.NAME.mape]` (`super::super::MapeSettings`): each key checked where it is written,
//! then the rule by `wire::map_rule` and, with `provision`, against the prefixes the port
//! delegates (`emulate::dhcpv6::MapeProvision::check`).

use std::net::Ipv6Addr;

use super::super::MapeSettings;
use super::*;

impl Walker<'_> {
    /// An `ADDRESS/LENGTH` value.
    fn prefix<A: core::str::FromStr>(
        &mut self,
        v: &Value<'_>,
        path: &str,
        max: u8,
    ) -> Option<(A, u8)> {
        let s = self.nonempty(v, path)?;
        let parsed = s.split_once('/').and_then(|(a, l)| {
            let l: u8 = l.parse().ok().filter(|l| *l <= max)?;
            Some((a.parse::<A>().ok()?, l))
        });
        if parsed.is_none() {
            self.err(
                v.span(),
                path,
                format!("{s:?} is not ADDRESS/LENGTH (length 0–{max}), e.g. 2001:db8:100::/40 or 198.51.100.0/24"),
            );
        }
        parsed
    }

    /// `[ports.NAME.mape]`.
    pub(super) fn mape(&mut self, v: &Value<'_>, path: &str) -> Option<MapeSettings> {
        let t = self.table(v, path)?;
        self.keys(
            t,
            path,
            &[
                "role",
                "address",
                "rule-ipv6-prefix",
                "rule-ipv4-prefix",
                "ea-bits",
                "psid-offset",
                "fmr",
                "provision",
                "internet",
                "timeout",
                "mtu",
            ],
        );
        let key = |k: &str| join(path, k);
        let role = self
            .required(t, &v.span(), path, "role")
            .and_then(|r| self.choice(r, &key("role"), &[("br", ())]));
        let address = self
            .required(t, &v.span(), path, "address")
            .and_then(|x| self.addr::<Ipv6Addr>(x, &key("address")));
        let r6 = self
            .required(t, &v.span(), path, "rule-ipv6-prefix")
            .and_then(|x| self.prefix::<Ipv6Addr>(x, &key("rule-ipv6-prefix"), 128));
        let r4 = self
            .required(t, &v.span(), path, "rule-ipv4-prefix")
            .and_then(|x| self.prefix::<Ipv4Addr>(x, &key("rule-ipv4-prefix"), 32));
        let ea_bits = self
            .required(t, &v.span(), path, "ea-bits")
            .and_then(|x| self.int(x, &key("ea-bits"), 0, 48));
        let psid_offset = match get(t, "psid-offset") {
            Some(x) => self.int(x, &key("psid-offset"), 0, 15)? as u8,
            None => wire::map_rule::DEFAULT_PSID_OFFSET,
        };
        let fmr = match get(t, "fmr") {
            Some(x) => self.boolean(x, &key("fmr"))?,
            None => false,
        };
        let provision = match get(t, "provision") {
            Some(x) => self.boolean(x, &key("provision"))?,
            None => false,
        };
        let timeout = match get(t, "timeout") {
            Some(x) => self.duration(x, &key("timeout"))?,
            None => Duration::from_secs(30),
        };
        let mtu = match get(t, "mtu") {
            Some(x) => self.int(x, &key("mtu"), 1280, 9000)? as usize,
            None => crate::oversize::DSLITE_DEFAULT_MTU,
        };
        let mut internet = None;
        if let Some(x) = get(t, "internet") {
            if let Some(a) = self.addr::<Ipv4Addr>(x, &key("internet")) {
                if emulate::pppoe::documentation_net(a).is_none() {
                    self.err(x.span(), &key("internet"), format!("{a}: use a documentation address (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24), e.g. 203.0.113.1"));
                } else {
                    internet = Some(a);
                }
            }
        }
        // Test traffic stays in the documentation ranges: the shared addresses and the CEs'
        // prefixes too.
        if let (Some((a, l)), Some(x)) = (r4, get(t, "rule-ipv4-prefix")) {
            if l < 24 || emulate::pppoe::documentation_net(a).is_none() {
                self.err(x.span(), &key("rule-ipv4-prefix"), format!("{a}/{l}: use a documentation prefix inside 192.0.2.0/24, 198.51.100.0/24 or 203.0.113.0/24, e.g. 198.51.100.0/24"));
                return None;
            }
        }
        if let (Some((a, l)), Some(x)) = (r6, get(t, "rule-ipv6-prefix")) {
            if !emulate::ranges::lab_prefix_v6(a, l) {
                self.err(
                    x.span(),
                    &key("rule-ipv6-prefix"),
                    format!("{a}/{l} is not inside {}", emulate::ranges::LAB_V6_TEXT),
                );
                return None;
            }
        }
        let out = MapeSettings {
            address: address?,
            rule_ipv6: r6?,
            rule_ipv4: r4?,
            ea_bits: ea_bits? as u8,
            psid_offset,
            fmr,
            provision,
            internet,
            timeout,
            mtu,
        };
        role?;
        let rule_key = get(t, "ea-bits").map_or(v.span(), |x| x.span());
        let option = match out.provision_option() {
            Ok(o) => o,
            Err(e) => {
                self.err(rule_key, &key("ea-bits"), format!("the rule (rule-ipv6-prefix, rule-ipv4-prefix, ea-bits, psid-offset) is not one: {e}"));
                return None;
            }
        };
        if provision {
            // The prefixes the port delegates are the provisioning defaults' /56s.
            let pool = emulate::dhcpv6::PrefixPool {
                base: emulate::provision::defaults::PD_BASE,
                base_len: emulate::provision::defaults::PD_BASE_LEN,
                delegated_len: emulate::provision::defaults::PD_LEN,
                size: 256,
            };
            if let Err(e) = option.check(Some(&pool)) {
                let x = get(t, "rule-ipv6-prefix").map_or(v.span(), |x| x.span());
                self.err(x, &key("rule-ipv6-prefix"), format!("with provision = true the port delegates /{} prefixes out of {}/{}, which this rule cannot map: {e}", pool.delegated_len, pool.base, pool.base_len));
                return None;
            }
        }
        Some(out)
    }
}
