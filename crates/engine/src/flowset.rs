//! Flow sets of any size: N distinct 5-tuples that a stream cycles through without repeating
//! one within a cycle (issue #15 — a NAT's table is filled with N connections by N distinct
//! tuples, and RFC 9693 wants them in RFC 4814 pseudorandom order).
//!
//! The set is the product of the varying fields' ranges (source port fastest, then destination
//! port, source address, destination address), so N = the product of the counts in
//! [`Flows`](crate::stream::Flows). Position p of a cycle (frame `seq % N`) is sent as tuple
//! number p ([`FlowMode::Tuples`](crate::stream::FlowMode::Tuples)), or as tuple number
//! `perm(p)` of a seeded bijective permutation of 0..N
//! ([`FlowMode::PermutedTuples`](crate::stream::FlowMode::PermutedTuples)).
//!
//! # The permutation: a Feistel network with cycle walking
//!
//! [`TuplePermutation`] is a 6-round Feistel network on the b-bit numbers, 2^b the smallest
//! power of two ≥ N (b ≥ 2), the bits split into a high half of ⌈b/2⌉ and a low half of ⌊b/2⌋
//! bits; each round XORs one half with a keyed hash (splitmix64) of the other, alternately. An
//! XOR with a function of the *other* half is its own inverse, so every round — and the network
//! — is a bijection on 0..2^b for any key, however uneven the halves. Values ≥ N are walked:
//! the permutation is applied again until the value falls in 0..N ("cycle walking"), which keeps
//! it a bijection on 0..N; since 2^b < 2N, fewer than 2 steps are needed on average.
//!
//! Why not a full-period LCG over 2^b with cycle walking: it is as cheap, but its low bits have
//! short periods (the lowest bit alternates, so with source port fastest every other frame has
//! an odd port), and it cannot be inverted as simply. The Feistel network is invertible by
//! running its rounds backwards ([`TuplePermutation::invert`]), so a receiver can turn a tuple
//! it sees back into its position in the cycle — the creation order of that connection, which
//! tells "oldest evicted" from "newest dropped" in a table-capacity trial.
//!
//! Pure arithmetic: no I/O, no allocation, no clock.

/// The most tuples a flow set may have (2^48: far beyond any connection table, small enough
/// that every product and mask stays exact in a u64).
pub const MAX_FLOW_SET: u64 = 1 << 48;

const ROUNDS: usize = 6;

#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seeded bijective permutation of 0..N (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TuplePermutation {
    size: u64,
    /// Bits of the low half; the high half has `bits - low_bits`.
    low_bits: u32,
    low_mask: u64,
    high_mask: u64,
    keys: [u64; ROUNDS],
}

impl TuplePermutation {
    /// A permutation of 0..`size` from `seed`; `None` for a size of 0 or above
    /// [`MAX_FLOW_SET`].
    pub fn new(size: u64, seed: u64) -> Option<TuplePermutation> {
        if size == 0 || size > MAX_FLOW_SET {
            return None;
        }
        // Smallest b with 2^b ≥ size, at least 2 so that both halves have a bit.
        let bits = (64 - (size - 1).leading_zeros()).max(2);
        let low_bits = bits / 2;
        let high_bits = bits - low_bits;
        let mut keys = [0u64; ROUNDS];
        let mut k = seed;
        for key in &mut keys {
            k = mix(k);
            *key = k;
        }
        Some(TuplePermutation {
            size,
            low_bits,
            low_mask: (1u64 << low_bits) - 1,
            high_mask: (1u64 << high_bits) - 1,
            keys,
        })
    }

    /// N.
    pub fn size(&self) -> u64 {
        self.size
    }

    #[inline]
    fn round(&self, i: usize, x: u64) -> u64 {
        let (mut hi, mut lo) = (x >> self.low_bits, x & self.low_mask);
        if i.is_multiple_of(2) {
            hi ^= mix(self.keys[i] ^ lo) & self.high_mask;
        } else {
            lo ^= mix(self.keys[i] ^ hi) & self.low_mask;
        }
        (hi << self.low_bits) | lo
    }

    #[inline]
    fn forward(&self, mut x: u64) -> u64 {
        for i in 0..ROUNDS {
            x = self.round(i, x);
        }
        x
    }

    #[inline]
    fn backward(&self, mut x: u64) -> u64 {
        for i in (0..ROUNDS).rev() {
            x = self.round(i, x);
        }
        x
    }

    /// The tuple number at position `p` of the cycle (`p` is taken modulo N).
    #[inline]
    pub fn apply(&self, p: u64) -> u64 {
        let mut x = self.forward(p % self.size);
        while x >= self.size {
            x = self.forward(x);
        }
        x
    }

    /// The position in the cycle of tuple number `t` (taken modulo N): `invert(apply(p)) == p`.
    pub fn invert(&self, t: u64) -> u64 {
        let mut x = self.backward(t % self.size);
        while x >= self.size {
            x = self.backward(x);
        }
        x
    }
}

/// How a stream's frames walk through its flow set: which offset each varying field gets in
/// frame `seq`. Built once per stream; [`FlowSet::offsets`] runs per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowSet {
    /// Counts in decomposition order: source port, destination port, source address,
    /// destination address.
    counts: [u64; 4],
    size: u64,
    perm: Option<TuplePermutation>,
}

/// Offsets of one tuple from the base frame's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TupleOffsets {
    pub src_ip: u64,
    pub dst_ip: u64,
    pub src_port: u64,
    pub dst_port: u64,
}

impl FlowSet {
    /// The set of all combinations of the counts, walked in counting order (`seed` = `None`) or
    /// in the order of a permutation seeded by `seed`. Counts of 0 count as 1. `None` when the
    /// product exceeds [`MAX_FLOW_SET`].
    pub fn new(
        src_ip: u32,
        dst_ip: u32,
        src_port: u16,
        dst_port: u16,
        seed: Option<u64>,
    ) -> Option<FlowSet> {
        let counts = [
            u64::from(src_port.max(1)),
            u64::from(dst_port.max(1)),
            u64::from(src_ip.max(1)),
            u64::from(dst_ip.max(1)),
        ];
        let size = counts
            .iter()
            .try_fold(1u64, |acc, &c| acc.checked_mul(c))
            .filter(|&n| n <= MAX_FLOW_SET)?;
        let perm = match seed {
            Some(s) => Some(TuplePermutation::new(size, s)?),
            None => None,
        };
        Some(FlowSet { counts, size, perm })
    }

    /// N: distinct tuples per cycle.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The tuple number frame `seq` sends.
    #[inline]
    pub fn tuple_number(&self, seq: u64) -> u64 {
        let p = seq % self.size;
        match &self.perm {
            Some(perm) => perm.apply(p),
            None => p,
        }
    }

    /// The field offsets of frame `seq`.
    #[inline]
    pub fn offsets(&self, seq: u64) -> TupleOffsets {
        let mut t = self.tuple_number(seq);
        let mut digit = [0u64; 4];
        for (d, &c) in digit.iter_mut().zip(&self.counts) {
            *d = t % c;
            t /= c;
        }
        TupleOffsets {
            src_port: digit[0],
            dst_port: digit[1],
            src_ip: digit[2],
            dst_ip: digit[3],
        }
    }

    /// The position in the cycle (0..N) at which `o` is sent — the creation order of its
    /// connection in a table-capacity trial; `None` if `o` is not in the set.
    pub fn position_of(&self, o: TupleOffsets) -> Option<u64> {
        let digit = [o.src_port, o.dst_port, o.src_ip, o.dst_ip];
        let mut t = 0u64;
        for (&d, &c) in digit.iter().zip(&self.counts).rev() {
            if d >= c {
                return None;
            }
            t = t * c + d;
        }
        Some(match &self.perm {
            Some(perm) => perm.invert(t),
            None => t,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_bijective(n: u64, seed: u64) {
        let p = TuplePermutation::new(n, seed).unwrap();
        let mut seen = vec![false; n as usize];
        for i in 0..n {
            let t = p.apply(i);
            assert!(t < n, "n={n}: {i} -> {t}");
            assert!(!seen[t as usize], "n={n} seed={seed}: {t} twice");
            seen[t as usize] = true;
            assert_eq!(p.invert(t), i, "n={n}");
        }
    }

    #[test]
    fn permutation_is_a_bijection_for_many_sizes() {
        for n in [
            1, 2, 3, 4, 5, 7, 8, 9, 100, 255, 256, 257, 1000, 4095, 65_537, 100_003,
        ] {
            for seed in [0, 1, 0xdead_beef] {
                assert_bijective(n, seed);
            }
        }
    }

    #[test]
    fn permutation_of_a_million_and_of_2_to_the_20() {
        assert_bijective(1_000_000, 42);
        assert_bijective(1 << 20, 42);
        assert_bijective((1 << 20) + 1, 7);
    }

    #[test]
    fn permutation_is_deterministic_and_seeded() {
        let a = TuplePermutation::new(10_000, 5).unwrap();
        let b = TuplePermutation::new(10_000, 5).unwrap();
        let c = TuplePermutation::new(10_000, 6).unwrap();
        let run = |p: &TuplePermutation| (0..10_000).map(|i| p.apply(i)).collect::<Vec<_>>();
        assert_eq!(run(&a), run(&b));
        assert_ne!(run(&a), run(&c));
        // Not the identity, and not a shifted counter.
        let r = run(&a);
        assert!(r.windows(2).filter(|w| w[1] == w[0] + 1).count() < 100);
    }

    /// The lowest bit of consecutive outputs does not alternate (an LCG modulo 2^b would).
    #[test]
    fn low_bit_is_not_periodic() {
        let p = TuplePermutation::new(1 << 16, 9).unwrap();
        let alternations = (0..4096)
            .filter(|&i| (p.apply(i) ^ p.apply(i + 1)) & 1 == 1)
            .count();
        assert!((1500..2600).contains(&alternations), "{alternations}");
    }

    #[test]
    fn refuses_empty_and_huge_sets() {
        assert!(TuplePermutation::new(0, 1).is_none());
        assert!(TuplePermutation::new(MAX_FLOW_SET + 1, 1).is_none());
        assert!(TuplePermutation::new(MAX_FLOW_SET, 1).is_some());
        assert!(FlowSet::new(u32::MAX, u32::MAX, u16::MAX, u16::MAX, None).is_none());
        assert!(FlowSet::new(0, 0, 0, 0, Some(1)).unwrap().size() == 1);
    }

    #[test]
    fn big_sets_do_not_overflow() {
        let p = TuplePermutation::new(MAX_FLOW_SET - 3, 11).unwrap();
        for i in [0, 1, MAX_FLOW_SET - 4, 1 << 40, u64::MAX] {
            let t = p.apply(i);
            assert!(t < MAX_FLOW_SET - 3);
            assert_eq!(p.invert(t), i % (MAX_FLOW_SET - 3));
        }
    }

    #[test]
    fn flow_set_cycles_through_every_combination_once() {
        for seed in [None, Some(3)] {
            // 3 × 5 × 7 × 11 = 1155 tuples, none a power of two.
            let fs = FlowSet::new(3, 5, 7, 11, seed).unwrap();
            assert_eq!(fs.size(), 1155);
            let mut seen = std::collections::HashSet::new();
            for seq in 0..1155 {
                let o = fs.offsets(seq);
                assert!(o.src_ip < 3 && o.dst_ip < 5 && o.src_port < 7 && o.dst_port < 11);
                assert!(seen.insert(o), "{seed:?}: {o:?} twice");
                assert_eq!(fs.position_of(o), Some(seq));
                // The next cycle repeats the first.
                assert_eq!(fs.offsets(seq + 1155), o);
            }
            assert_eq!(
                fs.position_of(TupleOffsets {
                    src_ip: 3,
                    dst_ip: 0,
                    src_port: 0,
                    dst_port: 0
                }),
                None
            );
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 48,
            failure_persistence: None,
            rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x5752_0015_0002),
            ..proptest::test_runner::Config::default()
        })]

        /// Any size and seed: a bijection of 0..N whose inverse undoes it.
        #[test]
        fn any_size_and_seed_is_a_bijection(n in 1u64..150_000, seed in proptest::prelude::any::<u64>()) {
            assert_bijective(n, seed);
        }
    }

    #[test]
    fn counting_order_has_the_source_port_fastest() {
        let fs = FlowSet::new(2, 1, 3, 1, None).unwrap();
        let got: Vec<(u64, u64)> = (0..6)
            .map(|s| {
                let o = fs.offsets(s);
                (o.src_ip, o.src_port)
            })
            .collect();
        assert_eq!(got, [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
    }
}
