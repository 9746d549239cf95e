//! The bench's link: lab's two-namespace veth pair ([`lab::veth::VethPair`]) as the bench
//! uses it. The sending end `wrb0` is in `wr-bench-<tag>-va`, the peer `wrb1` (which drops
//! every frame in `bench tx`, receives in `bench rx`) in `wr-bench-<tag>-vb`; both are
//! removed with everything running in them when the [`BenchNet`] is dropped. Also the bench
//! stream's frame and what its receivers expect of it.

use engine::port::PortSpec;
use engine::stream::{Limit, Rate, StreamConfig};
use engine::validate::Expect;
use engine::{Error, Result};
use lab::veth::{End, VethPair, VethPairSpec};
use wire::template::FrameTemplate;

/// A lab error as the bench reports it: the failing step and what the tool said.
pub(crate) fn lab_failed(e: lab::LabError) -> Error {
    Error::Config(e.to_string())
}

/// The sending end (A) and the peer (B) of one veth pair, each in a namespace of its own;
/// removed on drop.
#[derive(Debug)]
pub struct BenchNet {
    pair: VethPair,
}

impl BenchNet {
    /// Creates `wr-bench-<tag>-va` with `wrb0` ⇄ `wrb1` in `wr-bench-<tag>-vb`; with
    /// `drop_at_peer` an nftables netdev ingress chain on `wrb1` drops everything. `rps_cpu`
    /// steers `wrb1`'s receive processing to that CPU (RPS), so it does not run on the
    /// sender's core.
    pub fn new(tag: &str, drop_at_peer: bool, rps_cpu: Option<usize>) -> Result<Self> {
        Self::with_queues(tag, drop_at_peer, rps_cpu, 1)
    }

    /// [`BenchNet::new`] with `queues` TX and RX queues on each end of the veth (a veth's XDP
    /// frames go to the peer's queue of the sending CPU: one per sender thread).
    pub fn with_queues(
        tag: &str,
        drop_at_peer: bool,
        rps_cpu: Option<usize>,
        queues: usize,
    ) -> Result<Self> {
        let base = format!("wr-bench-{tag}");
        let pair = VethPair::up(&VethPairSpec {
            queues: queues.max(1),
            ..VethPairSpec::new(&base, "wrb0", "wrb1")
        })
        .map_err(lab_failed)?;
        let net = BenchNet { pair };
        if drop_at_peer {
            net.pair
                .exec(
                    End::B,
                    &["nft", "-f", "-"],
                    Some(
                        b"table netdev wr_bench {\n chain in {\n  type filter hook ingress device \"wrb1\" priority 0; policy drop;\n }\n}\n",
                    ),
                )
                .map_err(lab_failed)?;
        }
        if let Some(cpu) = rps_cpu {
            let mask = format!("{:x}", 1u64 << cpu);
            net.pair
                .exec(
                    End::B,
                    &[
                        "sh",
                        "-c",
                        &format!("echo {mask} > /sys/class/net/wrb1/queues/rx-0/rps_cpus"),
                    ],
                    None,
                )
                .map_err(lab_failed)?;
        }
        Ok(net)
    }

    /// The sending end's namespace and interface.
    pub fn tx_netns(&self) -> &str {
        self.pair.netns(End::A)
    }

    pub fn tx_if(&self) -> &str {
        self.pair.ifname(End::A)
    }

    /// The peer's namespace and interface.
    pub fn rx_netns(&self) -> &str {
        self.pair.netns(End::B)
    }

    pub fn rx_if(&self) -> &str {
        self.pair.ifname(End::B)
    }

    /// `tx_packets` (or another counter) of the sending end.
    pub fn tx_counter(&self, name: &str) -> Result<u64> {
        self.pair.counter(End::A, name).map_err(lab_failed)
    }

    /// `rx_packets` (or another counter) of the peer.
    pub fn rx_counter(&self, name: &str) -> Result<u64> {
        self.pair.counter(End::B, name).map_err(lab_failed)
    }

    /// The peer's MAC address.
    pub fn rx_mac(&self) -> Result<String> {
        self.pair.mac(End::B).map_err(lab_failed)
    }

    /// Whether the peer carries an XDP program now (`ip link` shows it).
    pub fn rx_has_xdp(&self) -> Result<bool> {
        let link = self
            .pair
            .exec(End::B, &["ip", "link", "show", "dev", self.rx_if()], None)
            .map_err(lab_failed)?;
        Ok(link.contains("prog/xdp") || link.contains(" xdp "))
    }

    /// The sending end as an engine port, its threads on `cpu` if given.
    pub fn tx_port(&self, cpu: Option<usize>) -> PortSpec {
        self.port(End::A, cpu)
    }

    /// The peer as an engine port, its threads on `cpu` if given.
    pub fn rx_port(&self, cpu: Option<usize>) -> PortSpec {
        self.port(End::B, cpu)
    }

    fn port(&self, end: End, cpu: Option<usize>) -> PortSpec {
        let ifname = self.pair.ifname(end);
        let mut p = PortSpec::new(ifname, ifname);
        p.netns = Some(self.pair.netns(end).to_string());
        p.cpus = cpu.into_iter().collect();
        p
    }
}

/// A 64-byte-class signed IPv4/UDP frame (no FCS) for benches: `len` bytes, stream `id`.
pub fn bench_frame(len: usize, id: u16) -> Result<FrameTemplate> {
    let mut spec = wire::template::StreamSpec::new(wire::encap::EncapSpec::default());
    spec.stream_id = id;
    FrameTemplate::new(&spec, len + 4).map_err(|e| Error::Config(e.to_string()))
}

/// What the bench receivers require of the bench stream's frames (as a trial's would: the
/// frame's headers, destination and a sequence number below `frames`), so that `bench rx`
/// measures the receive path with its validation.
pub(crate) fn bench_expect(frame: &FrameTemplate, frames: u64) -> Expect {
    let cfg = StreamConfig::single(2, frame.clone(), Rate::Unlimited, Limit::Frames(frames));
    Expect::of(&cfg)
}
