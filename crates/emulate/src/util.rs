//! Small self-contained helpers: the random source of the machines ([`Entropy`], [`Rng`]: the
//! operating system's randomness for real runs, a seeded PRNG for reproducible tests), MD5
//! (RFC 1321, for CHAP-MD5), SipHash-2-4 (the keyed hash of the PPPoE AC-Cookie), counters by
//! reason, and a duration summary.

use std::collections::BTreeMap;
use std::fmt;

use wire::units::Nanos;

/// `a + b` on instants/durations, saturating.
pub fn add(a: Nanos, b: Nanos) -> Nanos {
    Nanos(a.0.saturating_add(b.0))
}

/// The earlier of two optional deadlines.
pub fn min_deadline(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Where a machine's random numbers come from: CHAP challenges, LCP magic numbers, session ids,
/// the AC-Cookie key, Host-Uniq, IPv6CP identifiers and restart-timer jitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Entropy {
    /// The operating system's randomness (getrandom(2)) on every draw: what a peer must not
    /// predict (RFC 1994 §2.3: challenges unique and unpredictable) differs from run to run.
    /// The default.
    #[default]
    Os,
    /// SplitMix64 from this seed: the same numbers on every run, for tests under a simulated
    /// clock. Predictable by anyone who knows or recovers the seed; never for a real port.
    Seeded(u64),
}

impl Entropy {
    /// The source of a part of a machine (an FSM, a negotiator): the OS stays the OS; a seed
    /// is mixed with `salt` so that the parts draw different sequences.
    pub fn derive(self, salt: u64) -> Entropy {
        match self {
            Entropy::Os => Entropy::Os,
            Entropy::Seeded(s) => Entropy::Seeded(s ^ salt),
        }
    }

    /// Whether the operating system's randomness can be read here (the CLI checks once before
    /// it runs a machine on a port, and refuses to run without it).
    pub fn check_os() -> Result<(), NoOsRandomness> {
        let mut b = [0u8; 16];
        getrandom::fill(&mut b).map_err(NoOsRandomness)
    }
}

/// The operating system's randomness could not be read ([`Entropy::check_os`]): getrandom(2)'s
/// error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoOsRandomness(pub getrandom::Error);

impl fmt::Display for NoOsRandomness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no randomness from the operating system: {}", self.0)
    }
}

impl std::error::Error for NoOsRandomness {}

/// A random source: SplitMix64 from a seed (tiny, reproducible; not cryptographic), or the
/// operating system's randomness.
#[derive(Debug, Clone)]
pub struct Rng(Source);

#[derive(Clone)]
enum Source {
    Seeded(u64),
    /// getrandom(2) per draw. `key` (taken from the OS when the source was made) and `counter`
    /// only serve if a later getrandom(2) call failed, which Linux does not do once its pool
    /// is initialised: draws then continue as SipHash-2-4(key, counter), still unknown to a
    /// peer, instead of panicking.
    Os {
        key: [u8; 16],
        counter: u64,
    },
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Seeded(_) => f.write_str("Seeded"),
            Source::Os { .. } => f.write_str("Os"),
        }
    }
}

impl Rng {
    /// SplitMix64 from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(Source::Seeded(seed ^ 0x6a09_e667_f3bc_c909))
    }

    /// The operating system's randomness.
    pub fn os() -> Rng {
        let mut key = [0u8; 16];
        if getrandom::fill(&mut key).is_err() {
            // Not reachable in practice (see Entropy::check_os); keep a key that at least
            // differs between processes and sources rather than fail.
            static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            key[..8].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
            key[8..].copy_from_slice(&n.to_le_bytes());
        }
        Rng(Source::Os { key, counter: 0 })
    }

    pub fn from_entropy(e: Entropy) -> Rng {
        match e {
            Entropy::Os => Rng::os(),
            Entropy::Seeded(s) => Rng::new(s),
        }
    }

    /// The source for a sub-machine (a session's link): the OS for the OS, else a seed drawn
    /// from this one (reproducible).
    pub fn child(&mut self) -> Entropy {
        match self.0 {
            Source::Os { .. } => Entropy::Os,
            Source::Seeded(_) => Entropy::Seeded(self.next_u64()),
        }
    }

    pub fn is_os(&self) -> bool {
        matches!(self.0, Source::Os { .. })
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        u64::from_le_bytes(b)
    }

    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A non-zero u32 (magic numbers must not be 0).
    pub fn nonzero_u32(&mut self) -> u32 {
        loop {
            let v = self.next_u32();
            if v != 0 {
                return v;
            }
        }
    }

    pub fn fill(&mut self, out: &mut [u8]) {
        match &mut self.0 {
            Source::Seeded(state) => {
                for chunk in out.chunks_mut(8) {
                    let v = splitmix64(state).to_le_bytes();
                    chunk.copy_from_slice(&v[..chunk.len()]);
                }
            }
            Source::Os { key, counter } => {
                if getrandom::fill(out).is_ok() {
                    return;
                }
                for chunk in out.chunks_mut(8) {
                    *counter = counter.wrapping_add(1);
                    let v = siphash24(key, &counter.to_le_bytes()).to_le_bytes();
                    chunk.copy_from_slice(&v[..chunk.len()]);
                }
            }
        }
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// MD5 (RFC 1321) of the concatenation of `parts`.
pub fn md5(parts: &[&[u8]]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: [u32; 64] =
        core::array::from_fn(|i| ((i as f64 + 1.0).sin().abs() * 4_294_967_296.0) as u32);
    let mut msg: Vec<u8> = parts.concat();
    let bit_len = (msg.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_le_bytes());
    let mut h: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    for block in msg.chunks_exact(64) {
        let m: [u32; 16] = core::array::from_fn(|i| {
            u32::from_le_bytes([
                block[4 * i],
                block[4 * i + 1],
                block[4 * i + 2],
                block[4 * i + 3],
            ])
        });
        let [mut a, mut b, mut c, mut d] = h;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let f = f.wrapping_add(a).wrapping_add(k[i]).wrapping_add(m[g]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(f.rotate_left(S[i]));
        }
        h[0] = h[0].wrapping_add(a);
        h[1] = h[1].wrapping_add(b);
        h[2] = h[2].wrapping_add(c);
        h[3] = h[3].wrapping_add(d);
    }
    let mut out = [0u8; 16];
    for (i, w) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// SipHash-2-4 of `data` under a 128-bit key.
pub fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    let k0 = u64::from_le_bytes(key[..8].try_into().unwrap_or([0; 8]));
    let k1 = u64::from_le_bytes(key[8..].try_into().unwrap_or([0; 8]));
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let m = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// Event counts by reason, printable and comparable in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter<K: Ord>(BTreeMap<K, u64>);

impl<K: Ord> Default for Counter<K> {
    fn default() -> Self {
        Counter(BTreeMap::new())
    }
}

impl<K: Ord + Copy> Counter<K> {
    pub fn add(&mut self, k: K) {
        *self.0.entry(k).or_insert(0) += 1;
    }

    pub fn get(&self, k: K) -> u64 {
        self.0.get(&k).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }

    pub fn merge(&mut self, other: &Counter<K>) {
        for (k, v) in other.iter() {
            *self.0.entry(k).or_insert(0) += v;
        }
    }
}

impl<K: Ord + Copy + fmt::Debug> fmt::Display for Counter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (k, v) in self.iter() {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{k:?}={v}")?;
        }
        Ok(())
    }
}

/// Count, sum, min and max of durations (e.g. session setup times).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DurationSummary {
    pub count: u64,
    pub total: Nanos,
    pub min: Nanos,
    pub max: Nanos,
}

impl DurationSummary {
    pub fn record(&mut self, d: Nanos) {
        if self.count == 0 || d < self.min {
            self.min = d;
        }
        if d > self.max {
            self.max = d;
        }
        self.count += 1;
        self.total = add(self.total, d);
    }

    pub fn mean(&self) -> Option<Nanos> {
        (self.count > 0).then(|| Nanos(self.total.0 / self.count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn md5_rfc1321_vectors() {
        assert_eq!(hex(&md5(&[b""])), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(&md5(&[b"abc"])), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            hex(&md5(&[b"message ", b"digest"])),
            "f96b697d7cb7938d525a2f31aaf161d0"
        );
        assert_eq!(
            hex(&md5(&[b"abcdefghijklmnopqrstuvwxyz"])),
            "c3fcd3d76192e4007dfb496cca67e13b"
        );
        let long = b"1234567890".repeat(8);
        assert_eq!(hex(&md5(&[&long])), "57edf4a22be3c955ac49da2e2107b67a");
    }

    #[test]
    fn siphash_reference_vectors() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        assert_eq!(siphash24(&key, &[]), 0x726f_db47_dd0e_0e31);
        let msg: Vec<u8> = (0u8..15).collect();
        assert_eq!(siphash24(&key, &msg), 0xa129_ca61_49be_45e5);
        let msg8: Vec<u8> = (0u8..8).collect();
        assert_eq!(siphash24(&key, &msg8), 0x93f5_f579_9a93_2462);
    }

    #[test]
    fn rng_is_deterministic_and_counters_count() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(a.nonzero_u32(), 0);
        let mut c: Counter<u8> = Counter::default();
        c.add(3);
        c.add(3);
        c.add(1);
        assert_eq!(c.get(3), 2);
        assert_eq!(c.total(), 3);
        assert_eq!(c.to_string(), "1=1, 3=2");
        let mut s = DurationSummary::default();
        s.record(Nanos(5));
        s.record(Nanos(1));
        assert_eq!(
            (s.min, s.max, s.mean()),
            (Nanos(1), Nanos(5), Some(Nanos(3)))
        );
    }
}
