// SPDX-License-Identifier: MIT OR Apache-2.0
//
// wirerate's XDP receiver of the load on N connections (engine::xdp::conn_rx, the real test of
// `nat-throughput`, RFC 9693). Every frame of the load carries its connection's index as its
// signature's sequence number (engine::nat::load): frame i of a direction belongs to
// connection i mod N. A frame of the expected stream counts as received only when it arrived
// on exactly the 4-tuple its connection must arrive with (`wr_crx_expect[index]`: what the
// responder learned, or what the initiator opened the connection from); any other tuple is
// *misdirected* (a DUT that mixed up its translations), never received. Received frames are
// also counted per connection (`wr_crx_per_conn`, one atomic add), so a test can hold every
// connection to the frames sent on it.
//
// Test frames (signed) are dropped here; anything else (ARP, ND) is passed on to the stack and
// to the AF_PACKET socket that answers it. Why a program of its own rather than rx.bpf.c: that
// one keeps a sequence window per stream (loss, duplicates, reordering) which a sequence number
// that repeats every N frames would read as duplicates; this one checks tuples instead.
//
// Plain Ethernet + IPv4 + UDP only (the NAT trials' frames); the signature layout is
// wire::signature (DESIGN.md §5): "WR", u16 stream id, u32 sequence, big-endian, right after
// the UDP header.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* Keep in sync with engine::xdp::sys::Conn: a 4-tuple in host order. */
struct conn {
	__u32 src_addr;
	__u32 dst_addr;
	__u16 src_port;
	__u16 dst_port;
};

/* Keep in sync with engine::xdp::conn_rx::Totals. */
struct totals {
	__u64 received;        /* on their connection's tuple */
	__u64 misdirected;     /* of the stream, on another tuple than their connection's */
	__u64 out_of_range;    /* of the stream, with an index >= N */
	__u64 other_streams;   /* signed frames of another stream */
};

/* Sized by user space at load: N. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct conn);
} wr_crx_expect SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} wr_crx_per_conn SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct totals);
} wr_crx_totals SEC(".maps");

volatile const __u32 wr_crx_stream = 0;
volatile const __u32 wr_crx_n = 0;

static __always_inline __u16 get16(const __u8 *p)
{
	return ((__u16)p[0] << 8) | p[1];
}

static __always_inline __u32 get32(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

SEC("xdp")
int wr_conn_rx(struct xdp_md *ctx)
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
	struct totals *t = bpf_map_lookup_elem(&wr_crx_totals, &zero);
	if (!t)
		return XDP_PASS;
	if (get16(sig + 2) != wr_crx_stream) {
		t->other_streams++;
		return XDP_DROP;
	}
	__u32 k = get32(sig + 4);
	if (k >= wr_crx_n) {
		t->out_of_range++;
		return XDP_DROP;
	}
	struct conn *want = bpf_map_lookup_elem(&wr_crx_expect, &k);
	if (!want) {
		t->out_of_range++;
		return XDP_DROP;
	}
	if (get32(ip + 12) != want->src_addr || get32(ip + 16) != want->dst_addr ||
	    get16(udp) != want->src_port || get16(udp + 2) != want->dst_port) {
		t->misdirected++;
		return XDP_DROP;
	}
	t->received++;
	__u64 *c = bpf_map_lookup_elem(&wr_crx_per_conn, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
