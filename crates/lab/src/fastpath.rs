//! The DUT's fast path: an XDP program on the DUT's interfaces (`wr-dut-a`, `wr-dut-b`) that
//! forwards with the kernel's own routing and neighbour tables (`bpf_fib_lookup`) and
//! redirects, so forwarded packets skip the stack. The program is `bpf/fastpath.h`, built by
//! `build.rs` in two variants and embedded here:
//!
//! - [`Program::Forward`] for a DUT without connection tracking: every IPv4/IPv6 packet it can
//!   forward (not TCP SYNs, so an MSS clamp still sees every SYN);
//! - [`Program::Conntrack`] for a stateful DUT: only packets of flows whose conntrack entry is
//!   confirmed and established (what an nftables flowtable would take out of the stack), with
//!   the entry's NAT applied.
//!
//! The fast path is a switch on top of a profile, not a profile: [`program_for`] says which
//! program goes with a profile, or refuses the combination when packets would skip rules they
//! must walk. Its state lives in the kernel (the program attached to the interfaces), like the
//! rest of the lab's state; the program goes away with the DUT's namespace. Loading goes
//! through iproute2 (`ip link set dev X xdpdrv obj F sec xdp`), from an object file written
//! under /run/wirerate for the load and removed right after it. See docs/lab.md, "The fast
//! path", for what each combination means.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cmd;
use crate::error::{LabError, Result};

/// The DUT interfaces the program is attached to (both directions of the forward topology).
pub const DUT_IFACES: [&str; 2] = ["wr-dut-a", "wr-dut-b"];

/// The object files, as clang built them (iproute2 reads them from a file, so no alignment).
/// Only with the `fastpath` feature (the binary enables it): without it the crate builds
/// without clang, for the pure crates that need only the lab's vocabulary (issue 18), and
/// loading refuses with [`LabError::FastpathNotBuilt`].
#[cfg(feature = "fastpath")]
const OBJECTS: Option<(&[u8], &[u8])> = Some((
    include_bytes!(concat!(env!("OUT_DIR"), "/fastpath_fwd.bpf.o")),
    include_bytes!(concat!(env!("OUT_DIR"), "/fastpath_ct.bpf.o")),
));
#[cfg(not(feature = "fastpath"))]
const OBJECTS: Option<(&[u8], &[u8])> = None;

/// Where object files are written for `ip` to load (removed after each load).
const RUN_DIR: &str = "/run/wirerate";

/// Which program goes with which profile is vocabulary (plans check it): `lab-model`.
pub use lab_model::fastpath::{program_for, Program};

/// The object file of `program`, or [`LabError::FastpathNotBuilt`] in a build without the
/// `fastpath` feature.
fn object(program: Program) -> Result<&'static [u8]> {
    let (fwd, ct) = OBJECTS.ok_or(LabError::FastpathNotBuilt)?;
    Ok(match program {
        Program::Forward => fwd,
        Program::Conntrack => ct,
    })
}

/// The fast path's counters, summed over both interfaces and all CPUs. Every packet that
/// reached the program is in exactly one of `fwd4`, `fwd6` and the `pass_*` fields; `nat` is
/// the part of the forwarded ones that was translated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FastpathStats {
    /// IPv4 packets forwarded (redirected) by the fast path.
    pub fwd4: u64,
    /// IPv6 packets forwarded by the fast path.
    pub fwd6: u64,
    /// Of the forwarded ones, translated with a conntrack entry's NAT.
    pub nat: u64,
    /// Handed to the stack: not IPv4/IPv6 (ARP, ...).
    pub pass_not_ip: u64,
    /// Handed to the stack: IPv4 options or fragment, IPv6 extension header or ICMPv6,
    /// multicast or link-local, bad length.
    pub pass_header: u64,
    /// Handed to the stack: TTL / hop limit 1 or 0.
    pub pass_ttl: u64,
    /// Handed to the stack (conntrack program): no confirmed, established entry, a TCP FIN or
    /// RST, or not TCP/UDP.
    pub pass_conntrack: u64,
    /// Handed to the stack: the kernel's FIB said no (local destination, no route, neighbour
    /// not resolved yet, MTU, forwarding off).
    pub pass_fib: u64,
    /// Handed to the stack: TCP SYN.
    pub pass_syn: u64,
    /// Handed to the stack: not sent to the interface's own MAC (broadcast, multicast,
    /// another host's).
    pub pass_l2: u64,
}

impl FastpathStats {
    /// Packets forwarded by the fast path.
    pub fn forwarded(&self) -> u64 {
        self.fwd4 + self.fwd6
    }

    /// Packets handed to the stack.
    pub fn passed(&self) -> u64 {
        self.pass_not_ip
            + self.pass_header
            + self.pass_ttl
            + self.pass_conntrack
            + self.pass_fib
            + self.pass_syn
            + self.pass_l2
    }

    fn add_index(&mut self, idx: u32, v: u64) {
        // Indices as in fastpath.h (FP_*).
        let f = match idx {
            0 => &mut self.fwd4,
            1 => &mut self.fwd6,
            2 => &mut self.nat,
            3 => &mut self.pass_not_ip,
            4 => &mut self.pass_header,
            5 => &mut self.pass_ttl,
            6 => &mut self.pass_conntrack,
            7 => &mut self.pass_fib,
            8 => &mut self.pass_syn,
            9 => &mut self.pass_l2,
            _ => return,
        };
        *f += v;
    }
}

/// Number of counters in the program's `fp_stats` map (FP_NSTATS in fastpath.h).
const NSTATS: u32 = 10;

/// `ip -j link show dev IFNAME` in `ns`: the interface's object.
fn link_json(ns: &str, ifname: &str) -> Result<serde_json::Value> {
    let out = cmd::run(&["ip", "-n", ns, "-j", "link", "show", "dev", ifname])?;
    let v: serde_json::Value = serde_json::from_str(&out)
        .map_err(|e| LabError::parse("`ip -j link show`", e.to_string()))?;
    v.get(0)
        .cloned()
        .ok_or_else(|| LabError::parse("`ip -j link show`", out))
}

fn parse_mac(v: &serde_json::Value) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = v.as_str()?.split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// An interface's XDP program: id and name, from `ip -j link show`.
fn xdp_prog(ns: &str, ifname: &str) -> Result<Option<(u32, String)>> {
    let v = link_json(ns, ifname)?;
    let prog = v.get("xdp").and_then(|x| x.get("prog"));
    Ok(prog.and_then(|p| {
        let id = p.get("id")?.as_u64()? as u32;
        let name = p.get("name")?.as_str()?.to_string();
        Some((id, name))
    }))
}

/// The fast path attached in namespace `ns`: `Some` when both DUT interfaces run the same
/// program of ours. An interface with another XDP program, or only one interface with ours
/// (a crash half-way through [`attach`]), is reported as an error that says to switch it off.
pub(crate) fn attached(ns: &str) -> Result<Option<Program>> {
    let mut found = Vec::new();
    for ifname in DUT_IFACES {
        found.push(match xdp_prog(ns, ifname)? {
            None => None,
            Some((_, name)) => {
                Some(
                    Program::from_kernel_name(&name).ok_or_else(|| LabError::FastpathState {
                        detail: format!("{ns}/{ifname} runs a foreign XDP program `{name}`"),
                    })?,
                )
            }
        });
    }
    match (found[0], found[1]) {
        (None, None) => Ok(None),
        (Some(a), Some(b)) if a == b => Ok(Some(a)),
        (a, b) => Err(LabError::FastpathState {
            detail: format!(
                "{ns}: wr-dut-a runs {}, wr-dut-b runs {}",
                a.map_or("nothing".into(), |p| p.to_string()),
                b.map_or("nothing".into(), |p| p.to_string())
            ),
        }),
    }
}

/// Writes `program`'s object to a file of its own under /run/wirerate for `ip` to read, and
/// removes it when dropped.
struct ObjectFile(PathBuf);

impl ObjectFile {
    fn write(program: Program) -> Result<ObjectFile> {
        std::fs::create_dir_all(RUN_DIR)
            .map_err(|e| LabError::io(format!("creating {RUN_DIR}"), e))?;
        // Unique per load: threads of one process (the tests) load at the same time.
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = PathBuf::from(RUN_DIR).join(format!(
            "fastpath-{}-{}-{seq}.bpf.o",
            program.kernel_name(),
            std::process::id()
        ));
        std::fs::write(&path, object(program)?)
            .map_err(|e| LabError::io(format!("writing {}", path.display()), e))?;
        Ok(ObjectFile(path))
    }

    fn path(&self) -> &str {
        // Built from ASCII pieces above.
        self.0.to_str().unwrap_or_default()
    }
}

impl Drop for ObjectFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Load `program` onto `ifname` in `ns` in native (driver) mode, replacing whatever XDP
/// program is there (`-force`), and tell it the interface's MAC: until then it hands every
/// frame to the stack, so the moment between the two steps is only slower, never wrong.
fn load(ns: &str, ifname: &str, program: Program) -> Result<()> {
    load_only(ns, ifname, program)?;
    let (id, _) = xdp_prog(ns, ifname)?.ok_or_else(|| LabError::FastpathState {
        detail: format!("{ns}/{ifname}: no XDP program right after loading one"),
    })?;
    let mac = parse_mac(&link_json(ns, ifname)?["address"])
        .ok_or_else(|| LabError::parse(format!("the MAC of {ns}/{ifname}"), "no address"))?;
    write_config(id, mac)
}

fn load_only(ns: &str, ifname: &str, program: Program) -> Result<()> {
    let obj = ObjectFile::write(program)?;
    cmd::run(&[
        "ip",
        "-force",
        "-n",
        ns,
        "link",
        "set",
        "dev",
        ifname,
        "xdpdrv",
        "obj",
        obj.path(),
        "sec",
        "xdp",
    ])
    .map(drop)
}

/// Attach `program` to both DUT interfaces in `ns`. With the conntrack program, conntrack's
/// TCP window tracking is made liberal in that namespace (`nf_conntrack_tcp_be_liberal`): the
/// packets the fast path forwards never reach conntrack, so a FIN that comes after them would
/// be out of the window conntrack last saw and marked invalid. The kernel's flowtable does the
/// same per connection when it hands a flow back (flow_offload_fixup_tcp).
///
/// The tester ports' transmit checksum offload is switched off (`ethtool -K wr-a tx off`, the
/// same for `wr-b`; `testers` names their namespaces and interfaces). On a veth, a packet from
/// a socket (iperf3, ping) leaves with its TCP/UDP checksum unfinished (CHECKSUM_PARTIAL: the
/// kernel would finish it on a real NIC), which the stack carries along as skb metadata; a
/// frame redirected from XDP loses that metadata, so port B would receive a wrong checksum
/// and drop it. With the offload off the sender finishes every checksum, as a frame on a
/// cable always has it. Frames of wirerate's own senders are complete either way.
///
/// The program runs in the receive NAPI poll of the DUT's veth, which the kernel schedules on
/// the CPU that transmitted into the veth: the tester's. The lab runs that poll on the DUT's
/// CPU with the fast path on or off ([`crate::napi`]); attaching makes sure of it.
pub(crate) fn attach(ns: &str, testers: &[(String, &str)], program: Program) -> Result<()> {
    let result = (|| {
        set_tx_csum(testers, false)?;
        set_liberal(ns, program == Program::Conntrack)?;
        for ifname in DUT_IFACES {
            load(ns, ifname, program)?;
        }
        crate::napi::receive_on_dut_cpu(ns, &DUT_IFACES)
    })();
    if result.is_err() {
        let _ = detach(ns, testers);
    }
    result
}

/// Remove the fast path from both DUT interfaces in `ns` (fine if none is attached), put
/// conntrack's TCP window tracking back to strict and the tester ports' checksum offload back
/// on (the lab's default). The receive polls stay on the DUT's CPU ([`crate::napi`]).
pub(crate) fn detach(ns: &str, testers: &[(String, &str)]) -> Result<()> {
    for ifname in DUT_IFACES {
        if xdp_prog(ns, ifname)?.is_some() {
            cmd::run(&["ip", "-n", ns, "link", "set", "dev", ifname, "xdp", "off"])?;
        }
    }
    set_liberal(ns, false)?;
    set_tx_csum(testers, true)
}

fn set_tx_csum(testers: &[(String, &str)], on: bool) -> Result<()> {
    for (tns, ifname) in testers {
        let state = if on { "on" } else { "off" };
        cmd::run(&[
            "ip", "netns", "exec", tns, "ethtool", "-K", ifname, "tx", state,
        ])?;
    }
    Ok(())
}

fn set_liberal(ns: &str, on: bool) -> Result<()> {
    let v = if on { 1 } else { 0 };
    crate::netns::sh(
        ns,
        &format!(
            "f=/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal; \
             if [ -e $f ]; then echo {v} > $f; fi"
        ),
    )
    .map(drop)
}

/// The fast path's counters in `ns`, or `None` when it is off. Read from the programs' maps
/// with the bpf(2) syscall (through aya): each interface's program has its own map.
pub(crate) fn stats(ns: &str) -> Result<Option<FastpathStats>> {
    if attached(ns)?.is_none() {
        return Ok(None);
    }
    let mut total = FastpathStats::default();
    for ifname in DUT_IFACES {
        let Some((id, _)) = xdp_prog(ns, ifname)? else {
            continue;
        };
        read_counters(id, &mut total)?;
    }
    Ok(Some(total))
}

fn bpf_err(what: &str, e: impl std::fmt::Display) -> LabError {
    LabError::FastpathState {
        detail: format!("the fast path's maps ({what}): {e}"),
    }
}

/// The map called `name` of the loaded program `prog_id` (by id, through bpf(2)).
fn find_map(prog_id: u32, name: &str) -> Result<aya::maps::MapData> {
    let info = aya::programs::loaded_programs()
        .filter_map(|p| p.ok())
        .find(|p| p.id() == prog_id)
        .ok_or_else(|| bpf_err("program", format!("program id {prog_id} is gone")))?;
    let map_ids = info
        .map_ids()
        .map_err(|e| bpf_err("map ids", e))?
        .unwrap_or_default();
    for id in map_ids {
        let data = aya::maps::MapData::from_id(id).map_err(|e| bpf_err("map", e))?;
        let named = data
            .info()
            .ok()
            .and_then(|i| i.name_as_str().map(|n| n == name))
            .unwrap_or(false);
        if named {
            return Ok(data);
        }
    }
    Err(bpf_err(
        "lookup",
        format!("program {prog_id} has no map `{name}`"),
    ))
}

fn read_counters(prog_id: u32, total: &mut FastpathStats) -> Result<()> {
    use aya::maps::{Map, MapData, PerCpuArray};
    let data = find_map(prog_id, "fp_stats")?;
    let arr: PerCpuArray<MapData, u64> =
        PerCpuArray::try_from(Map::PerCpuArray(data)).map_err(|e| bpf_err("fp_stats", e))?;
    for idx in 0..NSTATS {
        let per_cpu = arr.get(&idx, 0).map_err(|e| bpf_err("fp_stats", e))?;
        total.add_index(idx, per_cpu.iter().sum());
    }
    Ok(())
}

/// Write the interface's MAC into the program's `fp_cfg` map (struct fp_cfg in fastpath.h:
/// six MAC bytes, `ready`, padding), which makes it start forwarding.
fn write_config(prog_id: u32, mac: [u8; 6]) -> Result<()> {
    use aya::maps::{Array, Map, MapData};
    let data = find_map(prog_id, "fp_cfg")?;
    let mut arr: Array<MapData, [u8; 8]> =
        Array::try_from(Map::Array(data)).map_err(|e| bpf_err("fp_cfg", e))?;
    let mut v = [0u8; 8];
    v[..6].copy_from_slice(&mac);
    v[6] = 1;
    arr.set(0, v, 0).map_err(|e| bpf_err("fp_cfg", e))
}

/// Probe: can this kernel run `program` (native XDP on a veth, the helpers and kfuncs it
/// calls)? Loads it onto a veth in the scratch namespace `ns`.
pub(crate) fn probe(ns: &str, ifname: &str, program: Program) -> bool {
    let ok = load_only(ns, ifname, program).is_ok();
    let _ = cmd::run(&["ip", "-n", ns, "link", "set", "dev", ifname, "xdp", "off"]);
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;
    use crate::topology::Topology;

    /// The refusal reaches the lab's users as a usage error (exit status 2), with the
    /// vocabulary's text (the combinations themselves: `lab_model::fastpath`'s tests).
    #[test]
    fn a_refused_combination_is_a_usage_error() {
        let p = Profile::parse("filter-stateless-100").unwrap();
        let e = LabError::from(program_for(&p, Topology::Forward).unwrap_err());
        assert!(e.is_usage());
        assert!(e.to_string().contains("filter-stateless-100"), "{e}");
    }

    #[test]
    fn mac_parses() {
        let v = serde_json::json!("02:77:72:00:01:0a");
        assert_eq!(parse_mac(&v), Some([2, 0x77, 0x72, 0, 1, 0x0a]));
        assert_eq!(parse_mac(&serde_json::json!("02:77")), None);
        assert_eq!(parse_mac(&serde_json::json!("02:77:72:00:01:0a:00")), None);
    }

    #[test]
    #[cfg(feature = "fastpath")]
    fn objects_are_embedded_elf() {
        for p in [Program::Forward, Program::Conntrack] {
            assert_eq!(&object(p).unwrap()[..4], b"\x7fELF");
            assert_eq!(Program::from_kernel_name(p.kernel_name()), Some(p));
        }
    }

    #[test]
    fn counter_indices() {
        let mut s = FastpathStats::default();
        for i in 0..NSTATS {
            s.add_index(i, 1);
        }
        assert_eq!(s.forwarded(), 2);
        assert_eq!(s.nat, 1);
        assert_eq!(s.passed(), 7);
    }
}
