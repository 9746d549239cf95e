// SPDX-License-Identifier: MIT OR Apache-2.0
//
// wirerate's XDP learner of the preliminary phase of a connection trial (engine::xdp::learn_rx,
// engine::nat; RFC 9693 "Test Phases"). The initiator sends one frame per connection, frame k
// carrying k (its connection's creation index) as its signature's sequence number; the
// responder must learn, per k, the 4-tuple frame k arrived with — after a NAPT, the source
// address and port the DUT chose. This program records that tuple in slot k of
// `wr_lrn_slots`, in the kernel, as the frame arrives: no frame waits for a user-space
// receiver that a loaded machine may not schedule in time (the AF_PACKET learner's ring
// drops made trials tester-limited). User space reads the slots after the phase.
//
// The first frame of a connection stands: its slot is claimed with a compare-and-swap (0 -> 1),
// the tuple written, then the slot marked complete (2). A later frame for a claimed slot is a
// duplicate; an index >= N is out of range; both are counted, never stored. Signed frames of
// another stream are counted and dropped; everything else (ARP, ND, fragments) is passed on to
// the stack and to the trial's AF_PACKET socket that answers it.
//
// Plain Ethernet + IPv4 + UDP only (the XDP connection sender is IPv4 only); the signature
// layout is wire::signature (DESIGN.md §5): "WR", u16 stream id, u32 sequence, big-endian,
// right after the UDP header.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Keep in sync with engine::xdp::sys::LearnSlot: a 4-tuple in host order and its state. */
struct slot {
	__u32 src_addr;
	__u32 dst_addr;
	__u16 src_port;
	__u16 dst_port;
	__u32 state;           /* 0 free, 1 being written, 2 learned */
};

/* Keep in sync with engine::xdp::sys::LearnTotals. */
struct totals {
	__u64 learned;         /* first frames of their connection */
	__u64 duplicates;      /* further frames of a connection already claimed */
	__u64 out_of_range;    /* of the stream, with an index >= N */
	__u64 other_streams;   /* signed frames of another stream */
};

/* Sized by user space at load: N. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slot);
} wr_lrn_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct totals);
} wr_lrn_totals SEC(".maps");

volatile const __u32 wr_lrn_stream = 0;
volatile const __u32 wr_lrn_n = 0;

static __always_inline __u16 get16(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

static __always_inline __u32 get32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

SEC("xdp")
int wr_learn_rx(struct xdp_md *ctx)
{
	__u8 *data = (void *)(long)ctx->data;
	__u8 *data_end = (void *)(long)ctx->data_end;

	if (data + 14 + 20 > data_end)
		return XDP_PASS;
	if (get16(data + 12) != 0x0800)
		return XDP_PASS;
	__u8 *ip = data + 14;
	__u8 vihl = ip[0];
	if ((vihl >> 4) != 4)
		return XDP_PASS;
	__u32 ihl = (vihl & 0x0f) * 4;
	if (ihl < 20)
		return XDP_PASS;
	/* Fragments carry no (or no whole) UDP header: not ours. */
	if ((get16(ip + 6) & 0x3fff) != 0 || ip[9] != 17)
		return XDP_PASS;
	__u8 *udp = ip + ihl;
	if (udp + 8 + 8 > data_end)
		return XDP_PASS;
	__u8 *sig = udp + 8;
	if (sig[0] != 'W' || sig[1] != 'R')
		return XDP_PASS;

	__u32 zero = 0;
	struct totals *t = bpf_map_lookup_elem(&wr_lrn_totals, &zero);
	if (!t)
		return XDP_PASS;
	if (get16(sig + 2) != wr_lrn_stream) {
		t->other_streams++;
		return XDP_DROP;
	}
	__u32 k = get32(sig + 4);
	if (k >= wr_lrn_n) {
		t->out_of_range++;
		return XDP_DROP;
	}
	struct slot *s = bpf_map_lookup_elem(&wr_lrn_slots, &k);
	if (!s) {
		t->out_of_range++;
		return XDP_DROP;
	}
	/* Two receive CPUs may see two frames of one connection at once: one claims the slot. */
	if (__sync_val_compare_and_swap(&s->state, 0, 1) != 0) {
		t->duplicates++;
		return XDP_DROP;
	}
	s->src_addr = get32(ip + 12);
	s->dst_addr = get32(ip + 16);
	s->src_port = get16(udp);
	s->dst_port = get16(udp + 2);
	__sync_lock_test_and_set(&s->state, 2);
	t->learned++;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
