// SPDX-License-Identifier: MIT OR Apache-2.0
//
// wirerate's XDP receiver (issue 8; user space: crates/engine/src/xdp/rx.rs).
//
// Walks each frame the way wire::dissect does (Ethernet, up to two 802.1Q/QinQ tags, an MPLS
// stack of up to 8 labels, a PPPoE session header, IPv4 with options, IPv6 with extension
// headers, IPv4-in-IPv6) to the 16-byte signature after the UDP header, and keeps the
// per-stream counters of engine::rx::StreamRx in maps:
//
// - test frames of an expected stream are counted and dropped (XDP_DROP), so the kernel's
//   stack does no work for them ("pass_ours" passes them on, for cross-checks);
// - signed frames of other streams are counted as unexpected and dropped the same way;
// - everything else is counted as foreign and passed (XDP_PASS): ARP, ND, PPPoE discovery and
//   anything the control plane needs still reach the stack and AF_PACKET.
//
// Sequence accounting matches engine::rx (a window of 2^16 sequence numbers): per stream a
// shared array of 2^16 u32 "tags" — slot seq mod 2^16 holds (seq >> 16) + 1 of the last
// sequence number accounted there — replaces the bitmap. A frame inside the window is a
// duplicate iff its slot already holds its own tag: exact, lock-free (one atomic exchange),
// and nothing has to be cleared as the window slides. The highest sequence number is shared
// too (an atomic compare-and-swap max). Everything else is per CPU and summed by user space,
// except the IPDV state below.
//
// One at a time: where user space knows that no two CPUs can account this port's frames at
// once -- native XDP on an interface with one receive queue, whose one NAPI instance is polled
// by one CPU at a time (its scheduled bit is taken and released by atomic operations, which
// order whatever the previous poll wrote) -- it sets rx_cfg.one_at_a_time, and the window and
// the highest are read and written with plain loads and stores: the same values, in the same
// order, as the atomic operations would give there. A checked frame from any other queue or
// interface (a driver running XDP on rings it does not report) takes the atomic path and is
// counted (P_OUTSIDE_ONE_QUEUE): user space then refuses the counts (one_at_a_time()). The
// locked instructions cost more than their own cycles: each waits for every store before it
// to drain, among them the veth driver's stores to ring lines the sending CPU owns (refusals
// behind the receiver at 3 Mpps about halved, docs/measurements.md, "One at a time"). With
// several receive queues, or in SKB mode (run wherever the skb is received), the atomic
// operations stay.
//
// IPDV (RFC 8219 §7.3.2, RFC 3393/5481; engine::rx::StreamRx::on_frame): IPDV(i) = D(i) - D(i-1)
// of frames whose sequence numbers are consecutive, signed. A frame with the next sequence number
// after the last frame that raised the stream's highest forms a pair with it, a frame further
// ahead (a gap: loss) starts afresh without a pair, an older one (reordered, late) is ignored --
// the AF_PACKET receiver's rules, in the order the program accounts frames. The frame a pair
// would start from is the highest's own: the compare-and-swap that raises the highest tells a
// frame exactly which highest it replaced, so "the last raiser was seq - 1" needs no state of
// its own, and the raiser's one-way delay sits beside the highest, in the same cache line
// (struct seq_state), written by the raiser after its compare-and-swap with a plain store. It
// is tagged with the raiser's sequence number, so a pair is formed only from the delay of
// exactly frame seq - 1. Shared rather than per CPU because on veth the receiving CPU is the
// sending thread's CPU, which changes whenever the scheduler moves that thread: per-CPU state
// would lose the pairs across every move. Not a compare-and-swap of its own (as before
// 2026-11-28) nor a bpf_spin_lock (before 6226b1b): one queue's frames are accounted one at a
// time by its NAPI instance, and there the plain store is exact; when one stream's frames are
// accounted on two CPUs at the same instant, a raiser may read its predecessor's delay before
// that predecessor stored it, and then forms no pair (as if reordered) -- never a wrong one,
// the tag says whose delay it is. The word keeps the low 24 bits of sequence number + 1 and
// the low 40 bits of the delay; the difference of two delays modulo 2^40 is the IPDV exactly
// while |IPDV| < 2^39 ns (9 minutes; the histograms clamp at 10 s). The pairs' values go to
// per-CPU histograms, one for IPDV >= 0 and one for the magnitudes of IPDV < 0 (|IPDV| + 1,
// the latency histogram's buckets), with exact per-CPU minimum and maximum.
//
// The receive time (latency, IPDV, jitter, first/last receive) is bpf_ktime_get_ns(), read once
// per counted frame after the sequence accounting, not on entry. On x86 the
// clock is an ordered TSC read (RDTSCP, or LFENCE and RDTSC), which waits for every load before
// it to complete; read on entry it waited for the misses the veth driver and the previous
// frame left in flight (the frame was written by the sending CPU), and the program's cost per
// frame at 3 Mpps rose from ~160 to ~230 ns (bpf_stats; refusals behind the receiver 10-12 %
// against 2-3 % read here, `bench rx --rate 3Mpps --against xdp-bench`, 2026-11-29). On the
// atomic path the locked exchange and compare-and-swap before it have already waited for
// those; one at a time, the read waits for the window's load itself. The frame's send
// timestamp is judged before that without a clock read of its own in the common case
// (account()).
//
// Receive-side validation (engine::validate; docs/engine.md "Receive-side validation"): a
// signed frame of an expected stream counts only if its encapsulation is the stream's (tags,
// MPLS labels, PPPoE, IPv4-in-IPv6, IP version), it is not a fragment (unless expected), every
// length field agrees with the frame, the IPv4 header checksum verifies, the destination
// address and port are the stream's, its sequence number is below the stream's limit and its
// timestamp is neither in the future nor before the receiver was attached. Otherwise it is
// counted per stream by reason (C_INV_*) and dropped. The UDP checksum is verified too (the
// kernel's csum_partial through bpf_csum_diff, 512 bytes a call), as engine::validate does.
//
// Only bounded loops; every packet read is checked against data_end.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_STREAMS 64
#define WIN_BITS 16
#define WIN (1u << WIN_BITS)
#define MAX_OFF 4096 /* headers must end within this many bytes (else: foreign) */
#define MAX_EXT_HDRS 8 /* IPv6 extension headers walked (more: foreign) */
#define MAX_OPTS 16 /* TLVs in one Destination Options header (more: foreign) */
#define SHORT_UDP 32 /* UDP datagrams up to this many bytes are summed inline */

/* Latency histogram: values below 2^SUB_BITS ns are exact, above that log-linear with
 * 2^SUB_BITS sub-buckets per power of two (relative bucket width 1/128). Values are clamped
 * to [1 ns, 10 s] as in engine::rx, so the largest exponent is 33. */
#define SUB_BITS 7
#define SUB (1u << SUB_BITS)
#define MAX_EXP 33
#define NBUCKETS ((MAX_EXP - SUB_BITS + 2) * SUB) /* 3584 */
#define HIST_MAX_NS 10000000000ULL

/* Per-stream counters, one u64 each (index into struct ctr.v). The eight every received frame
 * writes come first, in 64 bytes, then the IPDV ones a frame that forms a pair writes: a frame
 * touches as few cache lines of its CPU's counters as it can (a receiving CPU shared with
 * other work finds them evicted between polls). Mirrored in xdp/rx.rs (mod c). */
enum {
	C_RECEIVED,
	C_BYTES,
	C_LAST_RX,
	C_LAT_SUM,
	C_LAT_MIN,
	C_LAT_MAX,
	C_JITTER16, /* RFC 3550 jitter x16 (the RFC's own integer form) */
	C_LAST_TRANSIT, /* of this CPU's previous received frame, if C_RECEIVED was > 0 */
	/* IPDV of this CPU's pairs: how many, and the extremes (signed, stored as u64). */
	C_IPDV_PAIRS,
	C_IPDV_MIN,
	C_IPDV_MAX,
	C_FIRST_RX,
	C_DUPLICATES,
	C_OUT_OF_ORDER,
	C_LATE,
	C_NEGATIVE,
	/* Invalid frames by reason, in the order of engine::validate::Invalid. */
	C_INV_CHECKSUM = 16,
	C_INV_LENGTH,
	C_INV_ENCAP,
	C_INV_FRAGMENT,
	C_INV_ADDRESS,
	C_INV_SEQUENCE,
	C_INV_TIMESTAMP,
	C_NCTR = 24,
};

/* What one stream's frames must look like (engine::validate::Expect), per slot. Mirrored in
 * xdp/rx.rs (ExpectMap). */
struct expect {
	__u8 check_shape;
	__u8 vlan_tags;
	__u8 mpls_labels;
	__u8 pppoe;
	__u8 tunnel;
	__u8 ipv6;
	__u8 fragments;
	__u8 check_dst;
	__u8 dst_addr[16]; /* IPv4: the first 4 bytes */
	__u32 dst_count;
	__u16 dst_port;
	__u16 port_count;
	__u64 seq_limit; /* ~0: none */
};

/* Per-port counters. */
enum {
	P_FOREIGN,
	P_FOREIGN_BYTES,
	P_UNEXPECTED,
	P_OURS, /* not counted here: user space sums the streams' received, duplicates, invalid */
	/* Checked test frames that reached the program outside the one receive queue it was told
	 * it counts alone on (rx_cfg.one_at_a_time): the driver runs the program on rings it does
	 * not report. User space refuses the counts then. */
	P_OUTSIDE_ONE_QUEUE,
	P_NCTR = 8,
};

struct ctr {
	__u64 v[C_NCTR];
};

struct hist {
	__u64 b[NBUCKETS];
};

struct port_ctr {
	__u64 v[P_NCTR];
};

/* Stream id -> slot + 1 (0: not expected). Written by user space before attaching. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 65536);
} wr_rx_slots SEC(".maps");

/* The max_entries below are defaults; user space sizes the per-stream maps to a capacity class
 * of its streams (xdp/rx.rs, slot_capacity) and resets the slots a trial uses before it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct ctr);
	__uint(max_entries, MAX_STREAMS);
} wr_rx_ctr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hist);
	__uint(max_entries, MAX_STREAMS);
} wr_rx_hist SEC(".maps");

/* IPDV histograms: key 2 * slot for IPDV >= 0, 2 * slot + 1 for IPDV < 0 (two entries, not one
 * value of twice the size: a per-CPU value may not exceed 32 KiB). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hist);
	__uint(max_entries, 2 * MAX_STREAMS);
} wr_rx_ipdv_hist SEC(".maps");

/* The IPDV word of struct seq_state (see the top of this file), packed: bits 40-63 the raiser's
 * extended sequence number + 1 (mod 2^24), bits 0-39 its one-way delay, rx - tx in ns
 * (mod 2^40). */
#define IPDV_SEQ_BITS 24
#define IPDV_DELAY_BITS 40
#define IPDV_SEQ_MASK ((1ULL << IPDV_SEQ_BITS) - 1)
#define IPDV_DELAY_MASK ((1ULL << IPDV_DELAY_BITS) - 1)

/* A stream's sequence state shared by all CPUs, one cache line's worth. Mirrored in xdp/rx.rs
 * (SeqState). */
struct seq_state {
	__u64 high1; /* highest extended sequence number + 1 (0: nothing yet); compare-and-swap */
	__u64 ipdv;  /* the frame that raised high1: sequence tag and delay; 0: none yet */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct seq_state);
	__uint(max_entries, MAX_STREAMS);
} wr_rx_seq SEC(".maps");

/* The duplicate window: slot * 2^16 + (seq mod 2^16) -> (seq >> 16) + 1. Shared. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, MAX_STREAMS * WIN);
} wr_rx_win SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct port_ctr);
	__uint(max_entries, 1);
} wr_rx_port SEC(".maps");

/* Per slot: what the stream's frames must look like. Written by user space before attaching. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct expect);
	__uint(max_entries, MAX_STREAMS);
} wr_rx_expect SEC(".maps");

/* What one trial tells the receiver, written by user space before each attach (the program is
 * loaded once and reused by trial after trial: xdp/rx.rs, "Loaded once"). Mirrored in xdp/rx.rs
 * (RxCfg). */
struct rx_cfg {
	__u64 not_before; /* CLOCK_MONOTONIC when the receiver was attached (before any frame of
			   * the trial was sent); earlier send timestamps are forged. 0: none */
	__u32 pass_ours;  /* pass test frames on instead of dropping them */
	__u32 one_at_a_time; /* 1: this port's frames are accounted one at a time (native XDP on
			      * one receive queue: one NAPI instance): the sequence state is
			      * read and written plainly, without atomic operations */
	__u32 ifindex;	      /* the port's interface: with one_at_a_time, frames must come from
			       * its receive queue 0 */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct rx_cfg);
	__uint(max_entries, 1);
} wr_rx_cfg SEC(".maps");

static __always_inline __u64 cfg_not_before(void)
{
	__u32 k = 0;
	struct rx_cfg *c = bpf_map_lookup_elem(&wr_rx_cfg, &k);
	return c ? c->not_before : 0;
}

static __always_inline int cfg_pass_ours(void)
{
	__u32 k = 0;
	struct rx_cfg *c = bpf_map_lookup_elem(&wr_rx_cfg, &k);
	return c && c->pass_ours != 0;
}

static __always_inline void port_count(__u32 which, __u64 bytes);

/* Whether frames of a stream may be accounted with plain loads and stores: user space said
 * the port's frames come one at a time (from receive queue 0 of its interface, one NAPI
 * instance). `received` is this CPU's count of the stream's frames so far: the promise is
 * checked on a CPU's first frame of the stream and every 64th after it -- a CPU that runs the
 * program for another queue or interface, the only way two CPUs could race, is caught on its
 * first frame, and a violation that lasts is caught within 64 frames -- because reading the
 * queue and the interface from the context costs a chain of dependent loads that every frame
 * would pay (bench rx at 3 Mpps: about 2x the floor with the check on every frame, 1.1-1.2x
 * without). A frame that breaks it is counted (P_OUTSIDE_ONE_QUEUE) and accounted atomically;
 * user space then refuses the counts. */
static __always_inline int one_at_a_time(struct xdp_md *ctx, __u64 received)
{
	__u32 k = 0;
	struct rx_cfg *c = bpf_map_lookup_elem(&wr_rx_cfg, &k);
	if (!c || c->one_at_a_time == 0)
		return 0;
	if ((received & 63) != 0)
		return 1;
	if (ctx->rx_queue_index == 0 && ctx->ingress_ifindex == c->ifindex)
		return 1;
	port_count(P_OUTSIDE_ONE_QUEUE, 0);
	return 0;
}
#define FUTURE_TOLERANCE_NS 100000000ULL /* engine::validate::FUTURE_TOLERANCE_NS */

#define ETH_VLAN 0x8100
#define ETH_QINQ 0x88a8
#define ETH_MPLS 0x8847
#define ETH_P_PPP_SES 0x8864
#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86dd
#define PPP_IPV4 0x0021
#define PPP_IPV6 0x0057
#define IPPROTO_UDP_ 17
#define IPPROTO_IPIP_ 4
#define NH_HOP 0
#define NH_ROUTING 43
#define NH_FRAGMENT 44
#define NH_AH 51
#define NH_DEST 60

struct pkt {
	__u8 *data;
	__u8 *end;
	__u64 len; /* frame length, without FCS */
};

/* A pointer to `n` bytes at `off`, or NULL when they are not all in the frame. */
static __always_inline __u8 *at(const struct pkt *p, __u64 off, __u64 n)
{
	if (off > MAX_OFF)
		return NULL;
	/* Keep the verifier's view of `off` bounded on the register used below. */
	asm volatile("" : "+r"(off));
	if (off > MAX_OFF)
		return NULL;
	__u8 *q = p->data + off;
	if (q + n > p->end)
		return NULL;
	return q;
}

static __always_inline int be16_at(const struct pkt *p, __u64 off, __u32 *out)
{
	__u8 *q = at(p, off, 2);
	if (!q)
		return -1;
	/* One (possibly unaligned) 16-bit load, not two byte loads: packet reads are most of
	 * the walk's instructions, and the JIT makes this one move and one byte swap. */
	*out = bpf_ntohs(*(__u16 *)q);
	return 0;
}

static __always_inline int u8_at(const struct pkt *p, __u64 off, __u32 *out)
{
	__u8 *q = at(p, off, 1);
	if (!q)
		return -1;
	*out = q[0];
	return 0;
}

/* Where the test packet is, as found by the walk: the UDP offset (bits 0-15), the test
 * packet's IP header offset (bits 16-31), and flags (F_*). Negative: not found. */
#define F_TUNNEL (1ULL << 32)
#define F_FRAGMENT (1ULL << 33)
#define F_IPV6 (1ULL << 34)
#define ENC(udp, ip) ((__s64)((udp) | ((ip) << 16)))

/* IPv4 at `off` (wire::ipv4::check_len and dissect::ipv4): the encoded UDP offset, or -1. */
static __always_inline __s64 ipv4_udp(const struct pkt *p, __u64 off)
{
	__u8 *ip = at(p, off, 20);
	if (!ip)
		return -1;
	__u64 ihl = (ip[0] & 0x0f) * 4;
	__u64 total = ((__u64)ip[2] << 8) | ip[3];
	if (ihl < 20 || total < ihl || p->len < off + total)
		return -1;
	__u32 ff = ((__u32)ip[6] << 8) | ip[7];
	__u32 frag = ff & 0x1fff;
	if (ip[9] != IPPROTO_UDP_ || frag != 0)
		return -1;
	__s64 r = ENC(off + ihl, off);
	if (ff & 0x2000) /* more fragments: a first fragment */
		r |= F_FRAGMENT;
	return r;
}

static __always_inline void pkt_of(struct xdp_md *ctx, struct pkt *p)
{
	p->data = (void *)(long)ctx->data;
	p->end = (void *)(long)ctx->data_end;
	p->len = p->end - p->data;
}

/* Validates the TLVs of a Destination Options header of `hlen` bytes at `off`
 * (wire::ipv6::find_tunnel_encap_limit): 0 if well formed.
 *
 * The IPv6 walk is split into global (non-static, not inlined) functions: the verifier checks
 * each of those once, for any arguments, instead of once per path through the nested loops
 * (which exceeded its limit of a million instructions). */
__noinline int wr_dest_opts_ok(struct xdp_md *ctx, __u64 off, __u64 hlen)
{
	struct pkt pk;
	const struct pkt *p = &pk;
	pkt_of(ctx, &pk);
	if (hlen > 2048)
		return -1;
	__u64 o = 2;
	for (int i = 0; i < MAX_OPTS; i++) {
		if (o >= hlen)
			return 0;
		__u32 kind, len;
		if (u8_at(p, off + o, &kind))
			return -1;
		if (kind == 0) { /* Pad1 */
			o += 1;
			continue;
		}
		if (o + 1 >= hlen || u8_at(p, off + o + 1, &len))
			return -1;
		if (o + 2 + len > hlen)
			return -1;
		if (kind == 4 && len != 1)
			return -1;
		o += 2 + len;
	}
	return o >= hlen ? 0 : -1;
}

/* IPv6 at `off` (wire::dissect): the UDP offset, or -1. Follows IPv4-in-IPv6. */
__noinline __s64 wr_ipv6_udp(struct xdp_md *ctx, __u64 off)
{
	struct pkt pk;
	const struct pkt *p = &pk;
	pkt_of(ctx, &pk);
	__u8 *ip = at(p, off, 40);
	if (!ip)
		return -1;
	__u64 plen = ((__u64)ip[4] << 8) | ip[5];
	if (p->len < off + 40 + plen)
		return -1;
	__u32 nh = ip[6];
	__u64 base = off + 40; /* the payload; extension header offsets are relative to it */
	__u64 o = 0;
	int fragment = 0, first_fragment = 1;
	int done = 0;
	for (int i = 0; i < MAX_EXT_HDRS; i++) {
		if (o > plen)
			return -1;
		if (nh == NH_HOP || nh == NH_ROUTING || nh == NH_DEST) {
			__u32 ext_len, next;
			if (nh == NH_HOP && o != 0)
				return -1;
			if (o + 2 > plen || u8_at(p, base + o + 1, &ext_len))
				return -1;
			__u64 hlen = ((__u64)ext_len + 1) * 8;
			if (o + hlen > plen)
				return -1;
			if (nh == NH_DEST && wr_dest_opts_ok(ctx, base + o, hlen))
				return -1;
			if (u8_at(p, base + o, &next))
				return -1;
			nh = next;
			o += hlen;
		} else if (nh == NH_FRAGMENT) {
			__u32 next, fo;
			if (o + 8 > plen || u8_at(p, base + o, &next) || be16_at(p, base + o + 2, &fo))
				return -1;
			fragment = 1;
			nh = next;
			o += 8;
			if ((fo & 0xfff8) != 0) {
				first_fragment = 0;
				done = 1;
				break;
			}
		} else if (nh == NH_AH) {
			__u32 ah_len, next;
			if (o + 2 > plen || u8_at(p, base + o + 1, &ah_len))
				return -1;
			__u64 hlen = ((__u64)ah_len + 2) * 4;
			if (o + hlen > plen || u8_at(p, base + o, &next))
				return -1;
			nh = next;
			o += hlen;
		} else {
			done = 1;
			break;
		}
	}
	if (!done)
		return -1; /* more extension headers than we walk */
	if (o > plen)
		return -1;
	__u64 l4 = base + o;
	if (nh == IPPROTO_IPIP_ && !fragment) {
		__s64 r = ipv4_udp(p, l4);
		return r < 0 ? r : (r | F_TUNNEL);
	}
	if (nh == IPPROTO_UDP_ && first_fragment)
		return ENC(l4, off) | F_IPV6 | (fragment ? F_FRAGMENT : 0);
	return -1;
}

/* The frame's header stack as the walk found it (engine::validate::Shape), and where the
 * outermost IP header starts. */
struct shape {
	__u32 vlan_tags;
	__u32 mpls_labels;
	__u32 pppoe;
	__u64 outer_ip;
};

/* The encoded offset of the UDP header of the test packet (wire::dissect::dissect), or -1. */
static __always_inline __s64 find_udp(struct xdp_md *ctx, const struct pkt *p, struct shape *sh)
{
	__u32 et;
	if (be16_at(p, 12, &et))
		return -1;
	__u64 off = 14;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (et != ETH_VLAN && et != ETH_QINQ)
			break;
		if (be16_at(p, off + 2, &et))
			return -1;
		off += 4;
		sh->vlan_tags++;
	}
	if (et == ETH_VLAN || et == ETH_QINQ)
		return -1; /* more than two tags */
	if (et == ETH_MPLS) {
		int bottom = 0;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			__u8 *l = at(p, off, 4);
			if (!l)
				return -1;
			off += 4;
			sh->mpls_labels++;
			if (l[2] & 1) {
				bottom = 1;
				break;
			}
		}
		if (!bottom)
			return -1;
		__u32 b;
		if (u8_at(p, off, &b))
			return -1;
		if ((b >> 4) == 4)
			et = ETH_IPV4;
		else if ((b >> 4) == 6)
			et = ETH_IPV6;
		else
			return -1;
	} else if (et == ETH_P_PPP_SES) {
		__u8 *h = at(p, off, 6);
		if (!h)
			return -1;
		__u64 length = ((__u64)h[4] << 8) | h[5];
		if (p->len < off + 6 + length || h[1] != 0x00)
			return -1;
		/* PPP protocol: one byte if odd (compressed), else two (wire::ppp). */
		__u32 b0, proto;
		if (length < 1 || u8_at(p, off + 6, &b0))
			return -1;
		if (b0 & 1) {
			proto = b0;
		} else {
			if (length < 2 || be16_at(p, off + 6, &proto))
				return -1;
		}
		if (proto == PPP_IPV4)
			et = ETH_IPV4;
		else if (proto == PPP_IPV6)
			et = ETH_IPV6;
		else
			return -1;
		off += 8;
		sh->pppoe = 1;
	}
	sh->outer_ip = off;
	if (et == ETH_IPV6)
		return wr_ipv6_udp(ctx, off);
	if (et == ETH_IPV4)
		return ipv4_udp(p, off);
	return -1;
}

/* 1 if v > limit, else 0, without a branch (v and limit below 2^63). */
static __always_inline __u64 above(__u64 v, __u64 limit)
{
	return (limit - v) >> 63;
}

/* floor(log2(v)) for v in [1, 2^63), without a branch: the receiver's latencies and IPDV
 * values spread over many powers of two once frames queue, and a branch per halving step
 * then mispredicts. */
static __always_inline __u32 log2_flat(__u64 v)
{
	__u64 r = 0;
	/* Halving steps of 32, 16, 8, 4 and 2 bits: shift by the step if v has a bit above it. */
#pragma unroll
	for (int k = 5; k >= 1; k--) {
		__u64 s = above(v, (1ULL << (1 << k)) - 1) << k;
		v >>= s;
		r |= s;
	}
	return (__u32)(r | (v >> 1));
}

/* The histogram bucket of a latency in [1, HIST_MAX_NS]. Mirrored in xdp/rx.rs. One formula
 * for both ranges: with s = log2(v | 128) - 7, (s << 7) + (v >> s) is v below 256 (s = 0)
 * and the log-linear bucket above (checked against the branching form on every value below
 * 2^22, around every power of two and along [1, 10 s] in steps of 0.01 %). */
static __always_inline __u32 bucket_of(__u64 v)
{
	__u32 sh = log2_flat(v | SUB) - SUB_BITS;
	__u32 b = (sh << SUB_BITS) + (__u32)(v >> sh);
	return b < NBUCKETS ? b : NBUCKETS - 1;
}

/* Sequence extension as wire::signature::SeqExtender, relative to the highest seen. */
static __always_inline __u64 extend(__u32 seq32, __u64 high1)
{
	if (high1 == 0)
		return seq32;
	__u64 h = high1 - 1;
	__s32 delta = (__s32)(seq32 - (__u32)h);
	if (delta >= 0)
		return h + (__u64)(__s64)delta;
	__u64 back = (__u64)(-(__s64)delta);
	return h >= back ? h - back : (__u64)seq32;
}

/* Records one IPDV value `d` (ns) of the stream in `slot`: |d| + 1, clamped to HIST_MAX_NS
 * (engine::rx::ipdv_sample), in the histogram of its sign; and this CPU's pairs and extremes.
 * Mirrored in xdp/rx.rs (tests: ipdv_bucket). */
static __always_inline void ipdv_record(struct ctr *c, __u32 slot, __s64 d)
{
	/* The sign of an IPDV value is a coin toss: no branch on it. */
	__u64 m = (__u64)(d >> 63);
	int neg = (int)(m & 1);
	__u64 mag = ((__u64)d ^ m) - m;
	__u64 v = mag >= HIST_MAX_NS ? HIST_MAX_NS : mag + 1;
	__u32 key = 2 * slot + neg;
	struct hist *h = bpf_map_lookup_elem(&wr_rx_ipdv_hist, &key);
	if (h) {
		__u32 b = bucket_of(v);
		if (b < NBUCKETS)
			h->b[b]++;
	}
	if (c->v[C_IPDV_PAIRS] == 0) {
		c->v[C_IPDV_MIN] = (__u64)d;
		c->v[C_IPDV_MAX] = (__u64)d;
	} else {
		if (d < (__s64)c->v[C_IPDV_MIN])
			c->v[C_IPDV_MIN] = (__u64)d;
		if (d > (__s64)c->v[C_IPDV_MAX])
			c->v[C_IPDV_MAX] = (__u64)d;
	}
	c->v[C_IPDV_PAIRS]++;
}

/* The IPDV step for a frame of `slot` with extended sequence number `seq` that raised the
 * stream's highest from `prev1` (the high1 its compare-and-swap replaced): pairs with the frame
 * that raised it before, if that was seq - 1 and its delay is in the word under its own tag;
 * either way the frame's own delay becomes the word. Plain load and store (see the top of this
 * file): only a raiser writes the word, in the line its compare-and-swap has just made this
 * CPU's. */
static __always_inline void ipdv_step(struct ctr *c, struct seq_state *st, __u32 slot, __u64 seq,
				      __u64 prev1, __s64 transit)
{
	__u64 old = *(volatile __u64 *)&st->ipdv;
	*(volatile __u64 *)&st->ipdv =
		(((seq + 1) & IPDV_SEQ_MASK) << IPDV_DELAY_BITS) | ((__u64)transit & IPDV_DELAY_MASK);
	/* prev1 == seq: the highest before was seq - 1; the word is its own when its tag, that
	 * frame's sequence number + 1, is seq. */
	if (prev1 != seq || old == 0 || (old >> IPDV_DELAY_BITS) != (seq & IPDV_SEQ_MASK))
		return;
	/* The delays' difference mod 2^40, sign-extended from bit 39. */
	__u64 diff = ((__u64)transit - old) & IPDV_DELAY_MASK;
	__s64 d = (__s64)(diff << (64 - IPDV_DELAY_BITS)) >> (64 - IPDV_DELAY_BITS);
	ipdv_record(c, slot, d);
}

/* engine::rx::StreamRx::on_frame for one frame of the stream in `slot`. The receive time is
 * read late (see "The receive time" at the top of this file). */
static __always_inline void account(struct xdp_md *ctx, __u32 slot, __u32 seq32, __u64 tx_ns,
				    __u64 len, __u64 seq_limit)
{
	struct ctr *c = bpf_map_lookup_elem(&wr_rx_ctr, &slot);
	struct seq_state *st = bpf_map_lookup_elem(&wr_rx_seq, &slot);
	if (!c || !st)
		return;
	__u64 *hp = &st->high1;
	__u64 high1 = *(volatile __u64 *)hp;
	__u64 seq = extend(seq32, high1);
	/* engine::validate::check_seq_time, before the frame can move any sequence state. */
	if (seq >= seq_limit) {
		c->v[C_INV_SEQUENCE]++;
		return;
	}
	__u64 not_before = cfg_not_before();
	int alone = one_at_a_time(ctx, c->v[C_RECEIVED]);
	/* "Not in the future": against the receive time of this CPU's previous frame of the
	 * stream, which is not after now, so a frame that passes it passes against now; only one
	 * that does not (the CPU's first frame, or after a pause) reads the clock to be judged. */
	if ((tx_ns > c->v[C_LAST_RX] + FUTURE_TOLERANCE_NS &&
	     tx_ns > bpf_ktime_get_ns() + FUTURE_TOLERANCE_NS) ||
	    (not_before > FUTURE_TOLERANCE_NS && tx_ns < not_before - FUTURE_TOLERANCE_NS)) {
		c->v[C_INV_TIMESTAMP]++;
		return;
	}
	int ooo = 0;
	/* The highest this frame replaced (+1), if it raised it: the IPDV step needs it. */
	__u64 raised_from = ~0ULL;
	/* A new highest sequence number: the only frames that move the IPDV state. */
	int newer = high1 == 0 || seq > high1 - 1;
	if (high1 != 0 && seq < high1 - 1) {
		ooo = 1;
		if (high1 - 1 - seq >= WIN) {
			/* Too old for the window: received, out of order and late, unchecked. */
			c->v[C_LATE]++;
			goto received;
		}
	}
	{
		__u32 key = (slot << WIN_BITS) | (__u32)(seq & (WIN - 1));
		__u32 *w = bpf_map_lookup_elem(&wr_rx_win, &key);
		if (!w)
			return;
		__u32 tag = (__u32)(seq >> WIN_BITS) + 1;
		__u32 old;
		if (alone) {
			/* No other CPU accounts this port's frames (see "One at a time" above). */
			old = *(volatile __u32 *)w;
			*(volatile __u32 *)w = tag;
		} else {
			old = __sync_lock_test_and_set(w, tag);
		}
		if (old == tag) {
			c->v[C_DUPLICATES]++;
			return;
		}
	}
	if (newer && alone) {
		/* A new highest, and nobody else can have raised it since it was read. */
		*(volatile __u64 *)hp = seq + 1;
		raised_from = high1;
	} else if (newer) {
		/* A new highest: raise the shared maximum (bounded retries under contention). */
		__u64 cur = high1;
		for (int i = 0; i < 8; i++) {
			__u64 prev = __sync_val_compare_and_swap(hp, cur, seq + 1);
			if (prev == cur) {
				raised_from = cur;
				break;
			}
			if (prev >= seq + 1)
				break;
			cur = prev;
		}
	}
received:;
	/* The receive time, read after the sequence state is settled (with other CPUs: after the
	 * window's exchange and the highest's compare-and-swap, locked instructions that wait
	 * for every earlier load and store), so that little is left in flight for the clock's
	 * ordered TSC read to wait for. */
	__u64 rx_ns = bpf_ktime_get_ns();
	if (ooo)
		c->v[C_OUT_OF_ORDER]++;
	__u64 before = c->v[C_RECEIVED];
	if (before == 0) {
		c->v[C_FIRST_RX] = rx_ns;
		c->v[C_LAT_MIN] = ~0ULL;
	}
	c->v[C_RECEIVED] = before + 1;
	c->v[C_BYTES] += len;
	c->v[C_LAST_RX] = rx_ns;
	__u64 lat;
	if (rx_ns >= tx_ns) {
		lat = rx_ns - tx_ns;
	} else {
		c->v[C_NEGATIVE]++;
		lat = 0;
	}
	c->v[C_LAT_SUM] += lat;
	if (lat < c->v[C_LAT_MIN])
		c->v[C_LAT_MIN] = lat;
	if (lat > c->v[C_LAT_MAX])
		c->v[C_LAT_MAX] = lat;
	struct hist *hg = bpf_map_lookup_elem(&wr_rx_hist, &slot);
	if (hg) {
		__u64 v = lat < 1 ? 1 : (lat > HIST_MAX_NS ? HIST_MAX_NS : lat);
		__u32 b = bucket_of(v);
		if (b < NBUCKETS)
			hg->b[b]++;
	}
	/* RFC 3550 §6.4.1 / A.8: J16 += |D| - J16/16 (rounded), in this CPU's arrival order. */
	__s64 transit = (__s64)rx_ns - (__s64)tx_ns;
	if (before != 0) {
		__s64 d = transit - (__s64)c->v[C_LAST_TRANSIT];
		__u64 dm = (__u64)(d >> 63);
		__u64 ad = ((__u64)d ^ dm) - dm;
		__u64 j = c->v[C_JITTER16];
		c->v[C_JITTER16] = j + ad - ((j + 8) >> 4);
	}
	c->v[C_LAST_TRANSIT] = (__u64)transit;
	/* IPDV: only a frame that raised the highest moves its state (the rules ignore older
	 * frames), and only one right after the last raiser forms a pair. */
	if (raised_from != ~0ULL)
		ipdv_step(c, st, slot, seq, raised_from, transit);
}

static __always_inline void port_count(__u32 which, __u64 bytes)
{
	__u32 k = 0;
	struct port_ctr *pc = bpf_map_lookup_elem(&wr_rx_port, &k);
	if (!pc)
		return;
	if (which >= P_NCTR)
		return;
	pc->v[which]++;
	if (which == P_FOREIGN)
		pc->v[P_FOREIGN_BYTES] += bytes;
}

/* The ones' complement sum of the `len` bytes at `off`, folded to 16 bits, big-endian view;
 * -1 if they are not all in the frame (or more than 4 KiB). A global function: the verifier
 * checks it once, not once per path through the caller. */
__noinline int wr_sum_bytes(struct xdp_md *ctx, __u64 off, __u64 len)
{
	struct pkt pk;
	const struct pkt *p = &pk;
	pkt_of(ctx, &pk);
	if (len > MAX_OFF || off > MAX_OFF)
		return -1;
	__u64 end = off + len;
	__u64 o = off;
	__u64 native = 0; /* csum_partial sums: words as the CPU reads them */
	for (int i = 0; i < MAX_OFF / 512; i++) {
		if (o + 512 > end)
			break;
		__u8 *q = at(p, o, 512);
		if (!q)
			return -1;
		__s64 r = bpf_csum_diff(0, 0, (__be32 *)q, 512, 0);
		if (r < 0)
			return -1;
		native += (__u32)r;
		o += 512;
	}
#define WR_SUM_STEP(n)                                                          \
	if (o + (n) <= end) {                                                   \
		__u8 *q = at(p, o, (n));                                        \
		if (!q)                                                         \
			return -1;                                              \
		__s64 r = bpf_csum_diff(0, 0, (__be32 *)q, (n), 0);             \
		if (r < 0)                                                      \
			return -1;                                              \
		native += (__u32)r;                                             \
		o += (n);                                                       \
	}
	WR_SUM_STEP(256)
	WR_SUM_STEP(128)
	WR_SUM_STEP(64)
	WR_SUM_STEP(32)
	WR_SUM_STEP(16)
#undef WR_SUM_STEP
	if (o + 16 <= end)
		return -1; /* more than the chunks cover */
	native = (native & 0xffffffff) + (native >> 32);
	native = (native & 0xffff) + (native >> 16);
	native = (native & 0xffff) + (native >> 16);
	native = (native & 0xffff) + (native >> 16);
	/* A sum of byte-swapped words is the byte-swapped sum (ones' complement). */
	__u64 be = bpf_ntohs((__u16)native);
	/* The last 0-15 bytes read directly: cheaper than more helper calls. */
	if (o + 8 <= end) {
		__u8 *q = at(p, o, 8);
		if (!q)
			return -1;
#pragma unroll
		for (int i = 0; i < 4; i++)
			be += ((__u32)q[2 * i] << 8) | q[2 * i + 1];
		o += 8;
	}
	if (o + 4 <= end) {
		__u8 *q = at(p, o, 4);
		if (!q)
			return -1;
		be += (((__u32)q[0] << 8) | q[1]) + (((__u32)q[2] << 8) | q[3]);
		o += 4;
	}
	__u32 w;
	if (o + 2 <= end) {
		if (be16_at(p, o, &w))
			return -1;
		be += w;
		o += 2;
	}
	if (o + 1 <= end) {
		if (u8_at(p, o, &w))
			return -1;
		be += w << 8;
	}
	be = (be & 0xffff) + (be >> 16);
	be = (be & 0xffff) + (be >> 16);
	return (int)be;
}

/* A ones' complement sum of 32-bit words as the CPU loaded them, folded to 16 bits. On a
 * little-endian CPU each 16-bit word is then byte-swapped against the network's order, and a
 * ones' complement sum of swapped words is the swapped sum (RFC 1071 §2(B)): a header that
 * sums to 0xffff in network order sums to 0xffff here too, since 0xffff is its own swap.
 * Loading 4 bytes at a time halves the loads and drops the shifts of a big-endian sum. */
static __always_inline __u32 fold_native(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u32)sum;
}

/* engine::validate::check_headers: the C_INV_* counter of the first failure, or 0 if the
 * headers are valid for the stream. */
static __always_inline __u32 check_headers(struct xdp_md *ctx, const struct pkt *p, __s64 enc,
					   const struct shape *sh, const struct expect *e)
{
	__u64 udp = enc & 0xffff;
	__u64 ip = (enc >> 16) & 0xffff;
	int tunnel = (enc & F_TUNNEL) != 0;
	int frag = (enc & F_FRAGMENT) != 0;
	int v6 = (enc & F_IPV6) != 0;
	if (e->check_shape &&
	    (sh->vlan_tags != e->vlan_tags || sh->mpls_labels != e->mpls_labels ||
	     sh->pppoe != e->pppoe || tunnel != e->tunnel || v6 != e->ipv6))
		return C_INV_ENCAP;
	if (frag && !e->fragments)
		return C_INV_FRAGMENT;
	/* Where the test packet ends by its own header; the outer IPv6 of a tunnel must agree. */
	__u32 v;
	__u64 ip_end;
	if (v6) {
		if (be16_at(p, ip + 4, &v))
			return C_INV_LENGTH;
		ip_end = ip + 40 + v;
	} else {
		if (be16_at(p, ip + 2, &v))
			return C_INV_LENGTH;
		ip_end = ip + v;
	}
	if (tunnel) {
		if (be16_at(p, sh->outer_ip + 4, &v) || sh->outer_ip + 40 + v != ip_end)
			return C_INV_LENGTH;
	}
	if (ip_end > p->len)
		return C_INV_LENGTH;
	if (ip_end < p->len && p->len > 60 + 4 * (__u64)sh->vlan_tags)
		return C_INV_LENGTH;
	if (sh->pppoe) {
		if (sh->outer_ip < 8 || be16_at(p, sh->outer_ip - 4, &v) ||
		    sh->outer_ip - 2 + v != ip_end)
			return C_INV_LENGTH;
	}
	if (!frag) {
		if (be16_at(p, udp + 4, &v) || v < 8 || udp + v != ip_end)
			return C_INV_LENGTH;
	}
	if (!v6) {
		/* IPv4 header checksum: the ones' complement sum of the header is 0xffff. Summed
		 * in 32-bit words as the CPU loads them (see fold_native). */
		__u8 *h = at(p, ip, 20);
		if (!h)
			return C_INV_LENGTH;
		__u32 ihl = h[0] & 0x0f;
		__u64 sum = (__u64) * (__u32 *)h + *(__u32 *)(h + 4) + *(__u32 *)(h + 8) +
			    *(__u32 *)(h + 12) + *(__u32 *)(h + 16);
		for (int i = 5; i < 15; i++) { /* options: a bounded loop, IHL is at most 15 */
			if (i >= ihl)
				break;
			__u8 *o = at(p, ip + 4 * i, 4);
			if (!o)
				return C_INV_LENGTH;
			sum += *(__u32 *)o;
		}
		if (fold_native(sum) != 0xffff)
			return C_INV_CHECKSUM;
	}
	if (!frag) {
		/* UDP: mandatory over IPv6, optional (zero) over IPv4. */
		__u32 c, ulen;
		if (be16_at(p, udp + 6, &c) || be16_at(p, udp + 4, &ulen))
			return C_INV_LENGTH;
		if (c == 0 && v6)
			return C_INV_CHECKSUM;
		if (c != 0) {
			/* Pseudo-header: addresses, protocol, UDP length; summed in words as the
			 * CPU loads them (see fold_native), so the two big-endian values are
			 * converted to that order. */
			__u64 sum = (__u64)bpf_htons(IPPROTO_UDP_) + bpf_htons((__u16)ulen);
			if (v6) {
				__u8 *a = at(p, ip + 8, 32);
				if (!a)
					return C_INV_LENGTH;
#pragma unroll
				for (int i = 0; i < 8; i++)
					sum += *(__u32 *)(a + 4 * i);
			} else {
				__u8 *a = at(p, ip + 12, 8);
				if (!a)
					return C_INV_LENGTH;
				sum += (__u64) * (__u32 *)a + *(__u32 *)(a + 4);
			}
			if (ulen <= SHORT_UDP) {
				/* Small datagrams (64-byte frames carry 26 bytes) summed here: cheaper
				 * than the call and the checksum helper it makes. */
				__u8 *q = at(p, udp, 2);
				if (!q || udp + ulen > p->len)
					return C_INV_LENGTH;
#pragma unroll
				for (int i = 0; i < SHORT_UDP / 4; i++) {
					if (4 * i + 4 <= ulen) {
						__u8 *w = at(p, udp + 4 * i, 4);
						if (!w)
							return C_INV_LENGTH;
						sum += *(__u32 *)w;
					}
				}
				__u64 o = udp + (ulen & ~3u);
				if (ulen & 2) {
					__u8 *w = at(p, o, 2);
					if (!w)
						return C_INV_LENGTH;
					sum += *(__u16 *)w;
					o += 2;
				}
				if (ulen & 1) {
					/* The last byte, padded with a zero byte after it. */
					__u8 *b = at(p, o, 1);
					if (!b)
						return C_INV_LENGTH;
					sum += bpf_htons((__u16)b[0] << 8);
				}
			} else {
				int d = wr_sum_bytes(ctx, udp, ulen);
				if (d < 0)
					return C_INV_LENGTH;
				sum += bpf_htons((__u16)d);
			}
			if (fold_native(sum) != 0xffff)
				return C_INV_CHECKSUM;
		}
	}
	if (e->check_dst) {
		__u32 port;
		if (be16_at(p, udp + 2, &port))
			return C_INV_LENGTH;
		__u32 base;
		__u8 *l;
		if (v6) {
			__u8 *a = at(p, ip + 24, 16);
			if (!a)
				return C_INV_LENGTH;
#pragma unroll
			for (int i = 0; i < 12; i++)
				if (a[i] != e->dst_addr[i])
					return C_INV_ADDRESS;
			l = a + 12;
			base = ((__u32)e->dst_addr[12] << 24) | ((__u32)e->dst_addr[13] << 16) |
			       ((__u32)e->dst_addr[14] << 8) | e->dst_addr[15];
		} else {
			l = at(p, ip + 16, 4);
			if (!l)
				return C_INV_LENGTH;
			base = ((__u32)e->dst_addr[0] << 24) | ((__u32)e->dst_addr[1] << 16) |
			       ((__u32)e->dst_addr[2] << 8) | e->dst_addr[3];
		}
		__u32 low = bpf_ntohl(*(__u32 *)l);
		if (low - base >= e->dst_count || (__u16)(port - e->dst_port) >= e->port_count)
			return C_INV_ADDRESS;
	}
	return 0;
}

/* The frame a rate test sends most -- Ethernet, IPv4 without options, UDP, a signature of an
 * expected stream -- checked at fixed offsets behind one bounds check, instead of walked with a
 * check per field (perf of the program, 2026-11-28: a quarter of its samples were the walk's
 * bounds checks). It accepts a frame only when every check the general path makes passes
 * (find_udp, check_headers: the conditions below are theirs for this header stack), and then
 * accounts it exactly as the general path would; any frame it does not accept, valid or not,
 * goes to the general path, which judges it alone (the reason of an invalid frame, foreign,
 * unexpected). 1: counted here; 0: not judged. */
static __always_inline int fast_ipv4(struct xdp_md *ctx)
{
	__u8 *d = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	/* Ethernet 14 + IPv4 20 + UDP 8 + the signature 16 */
	if (d + 58 > end)
		return 0;
	__u64 len = end - d;
	/* IPv4 (the version nibble is not checked: ipv4_udp does not), no options, UDP, neither
	 * a fragment nor a first fragment. */
	if (*(__u16 *)(d + 12) != bpf_htons(ETH_IPV4) || (d[14] & 0x0f) != 5 ||
	    d[23] != IPPROTO_UDP_ || (*(__u16 *)(d + 20) & bpf_htons(0x3fff)) != 0 ||
	    d[42] != 'W' || d[43] != 'R')
		return 0;
	/* Lengths (check_headers): the IP packet ends at the end of the frame, or before it only
	 * in the padding of a frame of at most 60 bytes; the UDP length is the IP payload, and it
	 * holds the signature (shorter ones: the general path). */
	__u64 ip_end = 14 + (__u64)bpf_ntohs(*(__u16 *)(d + 16));
	__u32 ulen = bpf_ntohs(*(__u16 *)(d + 38));
	if (ip_end > len || (ip_end < len && len > 60) || ulen < 24 || 34 + (__u64)ulen != ip_end)
		return 0;
	__u32 stream = bpf_ntohs(*(__u16 *)(d + 44));
	__u32 *slot1 = bpf_map_lookup_elem(&wr_rx_slots, &stream);
	if (!slot1 || *slot1 == 0)
		return 0;
	__u32 slot = *slot1 - 1;
	struct expect *e = bpf_map_lookup_elem(&wr_rx_expect, &slot);
	if (!e)
		return 0;
	if (e->check_shape && (e->vlan_tags | e->mpls_labels | e->pppoe | e->tunnel | e->ipv6))
		return 0;
	/* The IPv4 header checksum (see fold_native). */
	__u64 sum = (__u64) * (__u32 *)(d + 14) + *(__u32 *)(d + 18) + *(__u32 *)(d + 22) +
		    *(__u32 *)(d + 26) + *(__u32 *)(d + 30);
	if (fold_native(sum) != 0xffff)
		return 0;
	/* The UDP checksum, optional (zero) over IPv4: pseudo-header, then the datagram. */
	if (*(__u16 *)(d + 40) != 0) {
		sum = (__u64)bpf_htons(IPPROTO_UDP_) + bpf_htons((__u16)ulen) + *(__u32 *)(d + 26) +
		      *(__u32 *)(d + 30);
		if (ulen <= SHORT_UDP) {
			/* The first 24 bytes (header and signature) are inside the bounds checked
			 * above; the rest, at most 8 bytes, as the general path sums it. */
			sum += (__u64) * (__u32 *)(d + 34) + *(__u32 *)(d + 38) + *(__u32 *)(d + 42) +
			       *(__u32 *)(d + 46) + *(__u32 *)(d + 50) + *(__u32 *)(d + 54);
			__u32 rest = ulen - 24;
			__u8 *r = d + 58;
			if (rest >= 4) {
				if (r + 4 > end)
					return 0;
				sum += *(__u32 *)r;
				r += 4;
				rest -= 4;
			}
			if (rest >= 4) {
				if (r + 4 > end)
					return 0;
				sum += *(__u32 *)r;
				r += 4;
				rest -= 4;
			}
			if (rest >= 2) {
				if (r + 2 > end)
					return 0;
				sum += *(__u16 *)r;
				r += 2;
				rest -= 2;
			}
			if (rest) {
				if (r + 1 > end)
					return 0;
				sum += bpf_htons((__u16)r[0] << 8);
			}
		} else {
			int w = wr_sum_bytes(ctx, 34, ulen);
			if (w < 0)
				return 0;
			sum += bpf_htons((__u16)w);
		}
		if (fold_native(sum) != 0xffff)
			return 0;
	}
	/* The destination address and port (check_headers: the last 32 address bits, the
	 * flows' counts). */
	if (e->check_dst) {
		__u32 base = ((__u32)e->dst_addr[0] << 24) | ((__u32)e->dst_addr[1] << 16) |
			     ((__u32)e->dst_addr[2] << 8) | e->dst_addr[3];
		__u32 low = bpf_ntohl(*(__u32 *)(d + 30));
		__u16 port = bpf_ntohs(*(__u16 *)(d + 36));
		if (low - base >= e->dst_count || (__u16)(port - e->dst_port) >= e->port_count)
			return 0;
	}
	account(ctx, slot, bpf_ntohl(*(__u32 *)(d + 46)), bpf_be64_to_cpu(*(__u64 *)(d + 50)), len,
		e->seq_limit);
	return 1;
}

SEC("xdp")
int wr_rx(struct xdp_md *ctx)
{
	int pass = cfg_pass_ours();
	if (fast_ipv4(ctx))
		return pass ? XDP_PASS : XDP_DROP;
	struct pkt p;
	pkt_of(ctx, &p);
	struct shape sh = {};
	__s64 enc = find_udp(ctx, &p, &sh);
	__s64 udp = enc < 0 ? -1 : (enc & 0xffff);
	__u8 *sig = udp < 0 ? NULL : at(&p, (__u64)udp + 8, 16);
	if (!sig || sig[0] != 'W' || sig[1] != 'R') {
		port_count(P_FOREIGN, p.len);
		return XDP_PASS;
	}
	/* Whole-field loads (wire::signature's big-endian layout), one byte swap each. */
	__u32 stream = bpf_ntohs(*(__u16 *)(sig + 2));
	__u32 seq32 = bpf_ntohl(*(__u32 *)(sig + 4));
	__u64 tx_ns = bpf_be64_to_cpu(*(__u64 *)(sig + 8));
	__u32 *slot1 = bpf_map_lookup_elem(&wr_rx_slots, &stream);
	if (!slot1 || *slot1 == 0) {
		port_count(P_UNEXPECTED, p.len);
		return pass ? XDP_PASS : XDP_DROP;
	}
	__u32 slot = *slot1 - 1;
	struct expect *e = bpf_map_lookup_elem(&wr_rx_expect, &slot);
	if (!e)
		return pass ? XDP_PASS : XDP_DROP;
	__u32 bad = check_headers(ctx, &p, enc, &sh, e);
	if (bad) {
		struct ctr *c = bpf_map_lookup_elem(&wr_rx_ctr, &slot);
		if (c && bad >= C_INV_CHECKSUM && bad < C_NCTR)
			c->v[bad]++;
		return pass ? XDP_PASS : XDP_DROP;
	}
	account(ctx, slot, seq32, tx_ns, p.len, e->seq_limit);
	return pass ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
