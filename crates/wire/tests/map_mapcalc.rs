//! Cross-checks `wire::map_rule` against an independent implementation of RFC 7597's
//! arithmetic: OpenWrt's `mapcalc` (package/network/ipv6/map/src/mapcalc.c), built from its
//! source for this test by `scripts/dev/mapcalc-build.sh` against a small libubus stand-in
//! and never shipped. For RFC 7597 Appendix A's Examples 1 and 4 and for seeded random rules
//! and delegated prefixes, both must give the same CE IPv4 address and prefix length, PSID
//! length, offset, MAP IPv6 address (so the PSID too) and port sets.
//!
//! Random cases keep to the documentation and benchmarking ranges: rule IPv6 prefixes inside
//! 2001:db8::/32 (/32–/64), rule IPv4 prefixes inside 198.18.0.0/15 (/16–/32), EA bits that
//! complete the IPv4 address and carry a PSID of 0–16 bits, the default offset or a random
//! one, delegated prefixes from the rule prefix plus EA bits to 8 bits longer (at most /64).
//! `WIRERATE_MAPCALC_SEED` picks another seed; `--nocapture` prints every case.
//!
//! Not compared, because mapcalc does not do them: rules whose EA bits give only an IPv4
//! prefix (it writes 0xffff as their PSID), a PSID provisioned beside a rule without EA bits
//! (RFC 7597 Appendix A Example 5: mapcalc refuses "ealen < psidlen"), and the BR's way back
//! from an IPv4 address and port (`tests/provision_prop.rs` checks it against the CE's way).
//!
//! mapcalc's source is not ours to ship, so the suite cannot build it: the test is ignored
//! (listed as such by every run) and runs on request, with the source looked for in
//! `WIRERATE_MAPCALC_SRC`, else in `shared/tools/openwrt-map/mapcalc.c` in a folder above the
//! checkout:
//! `WIRERATE_MAPCALC_SRC=/path/to/mapcalc.c cargo test --release -p wire --test map_mapcalc -- --ignored`.
//! Run so, it fails (never skips) without the source or a C compiler.

use core::net::{Ipv4Addr, Ipv6Addr};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use wire::map_rule::{MapRule, PortParams};

const DEFAULT_SEED: u64 = 0x0038_4d41_5045; // issue 38, "MAPE"
const RANDOM_CASES: usize = 400;

fn mapcalc_source() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WIRERATE_MAPCALC_SRC") {
        return Some(PathBuf::from(p));
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("shared/tools/openwrt-map/mapcalc.c"))
        .find(|p| p.is_file())
}

/// The temporary folder mapcalc is built in, removed when the test ends, passed or failed.
struct BuildDir(PathBuf);

impl Drop for BuildDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Builds mapcalc into a fresh temporary folder; panics saying what is missing when it cannot
/// (the test runs only on request, so a missing part is the requester's to supply).
fn build_mapcalc() -> (PathBuf, BuildDir) {
    let Some(src) = mapcalc_source() else {
        panic!(
            "no mapcalc source: set WIRERATE_MAPCALC_SRC to OpenWrt's \
             package/network/ipv6/map/src/mapcalc.c, or put it in shared/tools/openwrt-map/"
        );
    };
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        panic!("no C compiler ({cc}) to build mapcalc: run scripts/install-deps.sh");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("wr-mapcalc-{}", std::process::id()));
    let dir = BuildDir(out.clone());
    let r = Command::new(root.join("scripts/dev/mapcalc-build.sh"))
        .arg(&src)
        .arg(&out)
        .output()
        .expect("run scripts/dev/mapcalc-build.sh");
    assert!(
        r.status.success(),
        "mapcalc from {} does not build: {}",
        src.display(),
        String::from_utf8_lossy(&r.stderr)
    );
    (out.join("mapcalc"), dir)
}

/// splitmix64: a seeded sequence, so every run tries the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// One rule and delegated prefix to give both implementations.
#[derive(Debug, Clone, Copy)]
struct Case {
    ipv6_prefix: Ipv6Addr,
    prefix6_len: u8,
    ipv4_prefix: Ipv4Addr,
    prefix4_len: u8,
    ea_len: u8,
    /// `None`: neither is told the offset (both default to 6).
    offset: Option<u8>,
    pd: Ipv6Addr,
    pd_len: u8,
}

fn mask128(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    }
}

fn random_case(rng: &mut Rng) -> Case {
    let p = rng.range(0, 16) as u8;
    let prefix4_len = 32 - p;
    let k = rng.range(0, 16.min(32 - u64::from(p))) as u8;
    let ea_len = p + k;
    let prefix6_len = rng.range(32, 64 - u64::from(ea_len)) as u8;
    let offset = if k <= 10 && rng.range(0, 2) == 0 {
        None
    } else {
        Some(rng.range(0, 16 - u64::from(k)) as u8)
    };
    let v4 = 0xc612_0000u32 | (rng.next() as u32 & 0x0001_ffff); // 198.18.0.0/15
    let ipv4_prefix = Ipv4Addr::from(v4 & (mask128(prefix4_len) >> 96) as u32);
    let v6 = 0x2001_0db8u128 << 96 | (u128::from(rng.next()) << 32 & !mask128(32));
    let ipv6_prefix = Ipv6Addr::from(v6 & mask128(prefix6_len));
    let end_user = prefix6_len + ea_len;
    let pd_len = rng.range(u64::from(end_user), 64.min(u64::from(end_user) + 8)) as u8;
    let bits = u128::from(rng.next()) << 64;
    let pd = (u128::from(ipv6_prefix) | (bits & !mask128(prefix6_len))) & mask128(pd_len);
    Case {
        ipv6_prefix,
        prefix6_len,
        ipv4_prefix,
        prefix4_len,
        ea_len,
        offset,
        pd: Ipv6Addr::from(pd),
        pd_len,
    }
}

/// RFC 7597 Appendix A, Example 1 (shared address) and Example 4 (no EA bits, not shared).
fn appendix_a_cases() -> [Case; 2] {
    [
        Case {
            ipv6_prefix: "2001:db8::".parse().unwrap(),
            prefix6_len: 40,
            ipv4_prefix: Ipv4Addr::new(192, 0, 2, 0),
            prefix4_len: 24,
            ea_len: 16,
            offset: None,
            pd: "2001:db8:12:3400::".parse().unwrap(),
            pd_len: 56,
        },
        Case {
            ipv6_prefix: "2001:db8:12:3400::".parse().unwrap(),
            prefix6_len: 56,
            ipv4_prefix: Ipv4Addr::new(192, 0, 2, 1),
            prefix4_len: 32,
            ea_len: 0,
            offset: None,
            pd: "2001:db8:12:3400::".parse().unwrap(),
            pd_len: 56,
        },
    ]
}

/// What both implementations say about a case, as mapcalc prints it.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    ipv4: String,
    ipv4_len: String,
    psid_len: String,
    /// Only meaningful with a PSID: mapcalc prints its default of 6 without one.
    offset: Option<String>,
    ipv6: String,
    port_sets: Option<String>,
}

fn ours(c: &Case) -> Answer {
    let params = c.offset.map(|offset| PortParams {
        offset,
        psid_len: 0,
        psid: 0,
    });
    let rule = MapRule::new(
        c.ipv6_prefix,
        c.prefix6_len,
        c.ipv4_prefix,
        c.prefix4_len,
        c.ea_len,
        params,
    )
    .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let m = rule
        .ce_mapping(c.pd, c.pd_len)
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let shared = m.ports.psid_len() > 0;
    Answer {
        ipv4: m.ipv4.to_string(),
        ipv4_len: m.ipv4_len.to_string(),
        psid_len: m.ports.psid_len().to_string(),
        offset: shared.then(|| m.ports.offset().to_string()),
        ipv6: m.ipv6_address().to_string(),
        port_sets: shared.then(|| {
            m.ports
                .ranges()
                .map(|r| format!("{}-{} ", r.start(), r.end()))
                .collect()
        }),
    }
}

fn theirs(mapcalc: &Path, c: &Case) -> Answer {
    let mut rule = format!(
        "ipv6prefix={},prefix6len={},ipv4prefix={},prefix4len={},ealen={}",
        c.ipv6_prefix, c.prefix6_len, c.ipv4_prefix, c.prefix4_len, c.ea_len
    );
    if let Some(o) = c.offset {
        rule.push_str(&format!(",offset={o}"));
    }
    let out = Command::new(mapcalc)
        .env("MAPCALC_PD", format!("{}/{}", c.pd, c.pd_len))
        .env_remove("LEGACY")
        .arg("*")
        .arg(&rule)
        .output()
        .expect("run mapcalc");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mapcalc refused {rule} with {}/{}: {}{}",
        c.pd,
        c.pd_len,
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    let vars: BTreeMap<&str, &str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("RULE_1_")?.split_once('='))
        .collect();
    let get = |k: &str| {
        vars.get(k)
            .unwrap_or_else(|| panic!("mapcalc printed no RULE_1_{k} for {rule}: {text}"))
            .to_string()
    };
    let shared = get("PSIDLEN") != "0";
    Answer {
        ipv4: get("IPV4ADDR"),
        ipv4_len: get("ADDR4LEN"),
        psid_len: get("PSIDLEN"),
        offset: shared.then(|| get("OFFSET")),
        ipv6: get("IPV6ADDR"),
        port_sets: shared.then(|| get("PORTSETS").trim_matches('\'').to_string()),
    }
}

#[test]
#[ignore = "needs OpenWrt's mapcalc.c, not shipped: WIRERATE_MAPCALC_SRC=/path/to/mapcalc.c cargo test --release -p wire --test map_mapcalc -- --ignored"]
fn map_arithmetic_agrees_with_openwrt_mapcalc() {
    let (mapcalc, _dir) = build_mapcalc();
    let seed = std::env::var("WIRERATE_MAPCALC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let mut rng = Rng(seed);
    let mut cases = appendix_a_cases().to_vec();
    cases.extend((0..RANDOM_CASES).map(|_| random_case(&mut rng)));
    let mut shared = 0;
    for (i, c) in cases.iter().enumerate() {
        let (a, b) = (ours(c), theirs(&mapcalc, c));
        println!(
            "case {i}: {}/{} {}/{} ea {} offset {:?} pd {}/{} -> {} psid-len {} {}",
            c.ipv6_prefix,
            c.prefix6_len,
            c.ipv4_prefix,
            c.prefix4_len,
            c.ea_len,
            c.offset,
            c.pd,
            c.pd_len,
            a.ipv4,
            a.psid_len,
            a.ipv6
        );
        assert_eq!(a, b, "case {i} (seed {seed}): {c:?}");
        shared += usize::from(a.psid_len != "0");
    }
    println!(
        "{} cases (seed {seed}), {shared} with a shared address, agree with mapcalc",
        cases.len()
    );
    // The generator must exercise sharing, or the port sets were never compared.
    assert!(shared > RANDOM_CASES / 2, "only {shared} shared cases");
}
