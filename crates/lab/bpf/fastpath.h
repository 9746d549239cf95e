// SPDX-License-Identifier: MIT OR Apache-2.0
//
// wirerate's XDP fast path for the lab DUT (user space: crates/lab/src/fastpath.rs; what each
// profile + fast path combination means: docs/lab.md, "The fast path").
//
// Attached to the DUT's interfaces (wr-dut-a, wr-dut-b). For each IPv4/IPv6 frame it can
// forward it asks the kernel's own routing and neighbour tables (bpf_fib_lookup), decrements
// the TTL / hop limit (IPv4 header checksum updated incrementally, RFC 1624), rewrites both
// MACs and redirects the frame to the egress interface: the stack never sees it. Everything
// it cannot or must not handle goes to the stack with XDP_PASS, unchanged: frames not sent to
// the interface's own MAC (broadcast, multicast, another host's), non-IP (ARP),
// ICMPv6 (ND), IPv4 options, fragments, IPv6 extension headers, TTL <= 1 (the stack sends the
// ICMP error), multicast / link-local, local destinations, an unresolved neighbour (the stack
// resolves it; later frames then take the fast path), a route whose MTU is too small.
//
// Two builds of this one source (FP_CT):
//
// - fastpath_fwd (FP_CT 0), for a DUT without connection tracking (profile forward):
//   every IPv4/IPv6 frame the checks above let through is forwarded, except TCP SYNs (so a
//   profile acting on SYNs, the MSS clamp, still sees all of them).
// - fastpath_ct (FP_CT 1), for a stateful DUT (filter-stateful-N, napt, napt+filter-...):
//   only what the kernel's own fast path (an nftables flowtable, `flow add`) would take out
//   of the stack: TCP/UDP packets of a flow whose conntrack entry is confirmed, has seen
//   traffic in both directions (ctinfo "established", the condition of `flow add`) and, for
//   TCP, is in state ESTABLISHED; TCP SYN/FIN/RST always go to the stack (as in the
//   flowtable). The entry's NAT is applied (IPv4: addresses and ports from the other
//   direction's tuple, IPv4 and TCP/UDP checksums updated incrementally; IPv6 entries with NAT
//   go to the stack) and its timeout refreshed with bpf_ct_change_timeout.
//
// Counters: per-CPU array fp_stats (indices FP_*), summed by user space.
//
// Only bounded code; every packet read is checked against data_end.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

// Counter indices; keep in sync with crates/lab/src/fastpath.rs (FastpathStats).
enum {
	FP_FWD4 = 0,     // IPv4 frames redirected
	FP_FWD6,         // IPv6 frames redirected
	FP_NAT,          // of those, translated (NAPT)
	FP_PASS_NOT_IP,  // not IPv4/IPv6 (ARP, VLAN, ...)
	FP_PASS_HDR,     // IPv4 options/fragment, IPv6 ext header/ICMPv6, bad length, scope
	FP_PASS_TTL,     // TTL / hop limit <= 1
	FP_PASS_CT,      // stateful: no confirmed, established conntrack entry (or TCP flag)
	FP_PASS_FIB,     // the FIB said no: local, no route, no neighbour, MTU, forwarding off
	FP_PASS_SYN,     // TCP SYN (always the stack: MSS clamp, conntrack's new entries)
	FP_PASS_L2,      // not to this interface's MAC (broadcast, multicast, other host)
	FP_NSTATS,
};

// This interface's MAC, written by user space right after the load (fastpath.rs); until it
// is (`ready` 0) every frame goes to the stack. A router forwards only frames sent to it.
struct fp_cfg {
	__u8 mac[ETH_ALEN];
	__u8 ready;
	__u8 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fp_cfg);
} fp_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FP_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} fp_stats SEC(".maps");

static __always_inline int count(__u32 idx, int verdict)
{
	__u64 *c = bpf_map_lookup_elem(&fp_stats, &idx);
	if (c)
		*c += 1;
	return verdict;
}

// RFC 1624 incremental update of a 16-bit one's complement checksum for a 32-bit field
// changing from `from` to `to` (both as stored in the packet; the sum is byte-order neutral).
static __always_inline __u16 csum_replace4(__u16 check, __u32 from, __u32 to)
{
	__u32 s = (__u16)~check;
	s += (~from >> 16) & 0xffff;
	s += ~from & 0xffff;
	s += to >> 16;
	s += to & 0xffff;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

static __always_inline __u16 csum_replace2(__u16 check, __u16 from, __u16 to)
{
	__u32 s = (__u16)~check;
	s += (__u16)~from;
	s += to;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

#if FP_CT
// Conntrack, read through CO-RE: only the fields used, relocated against the kernel's BTF.
#define IPS_SEEN_REPLY (1UL << 1)
#define IPS_CONFIRMED (1UL << 3)
#define IPS_SRC_NAT (1UL << 4)
#define IPS_DST_NAT (1UL << 5)
#define IPS_DYING (1UL << 9)
#define IPS_HELPER (1UL << 13)
#define TCP_CONNTRACK_ESTABLISHED 3

// Timeouts written back on every fast-pathed packet (ms): the kernel's defaults for an
// established TCP connection (nf_conntrack_tcp_timeout_established) and a UDP stream
// (nf_conntrack_udp_timeout_stream); the lab never changes them.
#define TCP_TIMEOUT_MS (432000U * 1000U)
#define UDP_TIMEOUT_MS (120U * 1000U)

union nf_inet_addr {
	__u32 all[4];
	__be32 ip;
	__be32 ip6[4];
} __attribute__((preserve_access_index));

union nf_conntrack_man_proto {
	__be16 all;
} __attribute__((preserve_access_index));

struct nf_conntrack_man {
	union nf_inet_addr u3;
	union nf_conntrack_man_proto u;
} __attribute__((preserve_access_index));

struct nf_conntrack_tuple {
	struct nf_conntrack_man src;
	struct {
		union nf_inet_addr u3;
		union {
			__be16 all;
		} u;
	} dst;
} __attribute__((preserve_access_index));

struct nf_conntrack_tuple_hash {
	struct nf_conntrack_tuple tuple;
} __attribute__((preserve_access_index));

struct ip_ct_tcp {
	__u8 state;
} __attribute__((preserve_access_index));

union nf_conntrack_proto {
	struct ip_ct_tcp tcp;
} __attribute__((preserve_access_index));

struct nf_conn {
	unsigned long status;
	struct nf_conntrack_tuple_hash tuplehash[2];
	union nf_conntrack_proto proto;
} __attribute__((preserve_access_index));

// The kfunc's options (NF_BPF_CT_OPTS_SZ 12, accepted by every kernel that has the kfunc).
struct wr_ct_opts {
	__s32 netns_id;
	__s32 error;
	__u8 l4proto;
	__u8 dir;
	__u8 reserved[2];
};

extern struct nf_conn *bpf_xdp_ct_lookup(struct xdp_md *xdp_ctx, struct bpf_sock_tuple *bpf_tuple,
					 __u32 len_tuple, struct wr_ct_opts *opts,
					 __u32 len_opts) __ksym;
extern void bpf_ct_release(struct nf_conn *ct) __ksym;
extern int bpf_ct_change_timeout(struct nf_conn *nfct, __u32 timeout) __ksym;

// The entry's verdict for this packet: 0 = not ours (go to the stack), 1 = fast path.
// On 1, `dir` is the packet's direction and `nat_*` the addresses/ports it must carry after
// translation (equal to the packet's own when the entry has no NAT).
struct ct_result {
	__u32 nat_saddr[4];
	__u32 nat_daddr[4];
	__be16 nat_sport;
	__be16 nat_dport;
	int nat;
};

static __always_inline int ct_check(struct xdp_md *ctx, struct bpf_sock_tuple *t, __u32 tlen,
				    __u8 proto, int v6, struct ct_result *r)
{
	struct wr_ct_opts opts = { .netns_id = -1, .l4proto = proto };
	struct nf_conn *ct = bpf_xdp_ct_lookup(ctx, t, tlen, &opts, sizeof(opts));
	if (!ct)
		return 0;
	int ok = 0;
	unsigned long st = ct->status;
	if ((st & (IPS_CONFIRMED | IPS_SEEN_REPLY)) != (IPS_CONFIRMED | IPS_SEEN_REPLY))
		goto out;
	if (st & (IPS_DYING | IPS_HELPER))
		goto out;
	if (proto == IPPROTO_TCP && ct->proto.tcp.state != TCP_CONNTRACK_ESTABLISHED)
		goto out;
	// Which direction is this packet? Its source is the source of that direction's tuple.
	int dir;
	if (v6) {
		dir = (ct->tuplehash[0].tuple.src.u3.ip6[0] == t->ipv6.saddr[0] &&
		       ct->tuplehash[0].tuple.src.u3.ip6[1] == t->ipv6.saddr[1] &&
		       ct->tuplehash[0].tuple.src.u3.ip6[2] == t->ipv6.saddr[2] &&
		       ct->tuplehash[0].tuple.src.u3.ip6[3] == t->ipv6.saddr[3] &&
		       ct->tuplehash[0].tuple.src.u.all == t->ipv6.sport) ? 0 : 1;
	} else {
		dir = (ct->tuplehash[0].tuple.src.u3.ip == t->ipv4.saddr &&
		       ct->tuplehash[0].tuple.src.u.all == t->ipv4.sport) ? 0 : 1;
	}
	// After translation the packet carries the inverse of the other direction's tuple.
	int other = dir ^ 1;
	r->nat = (st & (IPS_SRC_NAT | IPS_DST_NAT)) != 0;
	if (r->nat && v6)
		goto out; // IPv6 NAT is left to the stack (the lab's NAPT is IPv4 only).
	if (v6) {
		// No NAT: the packet's own addresses, nothing to rewrite.
		__builtin_memcpy(r->nat_saddr, t->ipv6.saddr, 16);
		__builtin_memcpy(r->nat_daddr, t->ipv6.daddr, 16);
		r->nat_sport = t->ipv6.sport;
		r->nat_dport = t->ipv6.dport;
	} else if (other == 1) {
		r->nat_saddr[0] = ct->tuplehash[1].tuple.dst.u3.ip;
		r->nat_daddr[0] = ct->tuplehash[1].tuple.src.u3.ip;
		r->nat_sport = ct->tuplehash[1].tuple.dst.u.all;
		r->nat_dport = ct->tuplehash[1].tuple.src.u.all;
	} else {
		r->nat_saddr[0] = ct->tuplehash[0].tuple.dst.u3.ip;
		r->nat_daddr[0] = ct->tuplehash[0].tuple.src.u3.ip;
		r->nat_sport = ct->tuplehash[0].tuple.dst.u.all;
		r->nat_dport = ct->tuplehash[0].tuple.src.u.all;
	}
	bpf_ct_change_timeout(ct, proto == IPPROTO_TCP ? TCP_TIMEOUT_MS : UDP_TIMEOUT_MS);
	ok = 1;
out:
	bpf_ct_release(ct);
	return ok;
}
#endif

static __always_inline int redirect(struct ethhdr *eth, struct bpf_fib_lookup *fib)
{
	__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
	return bpf_redirect(fib->ifindex, 0);
}

static __always_inline int fwd4(struct xdp_md *ctx, struct ethhdr *eth, void *data_end)
{
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return count(FP_PASS_HDR, XDP_PASS);
	if (ip->version != 4 || ip->ihl != 5)
		return count(FP_PASS_HDR, XDP_PASS);
	if (ip->frag_off & bpf_htons(0x3fff)) // MF or a fragment offset
		return count(FP_PASS_HDR, XDP_PASS);
	if (ip->ttl <= 1)
		return count(FP_PASS_TTL, XDP_PASS);
	__u16 tot_len = bpf_ntohs(ip->tot_len);
	if (tot_len < sizeof(*ip) || (void *)ip + tot_len > data_end)
		return count(FP_PASS_HDR, XDP_PASS);

	__be32 saddr = ip->saddr, daddr = ip->daddr;
	void *l4 = (void *)(ip + 1);
#if !FP_CT
	// TCP SYNs take the stack in both builds, so a profile that acts on SYNs only (the MSS
	// clamp) still sees every one of them.
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *th = l4;
		if ((void *)(th + 1) > data_end)
			return count(FP_PASS_HDR, XDP_PASS);
		if (th->syn)
			return count(FP_PASS_SYN, XDP_PASS);
	}
#else
	struct ct_result r = {};
	__be16 *sport_p, *dport_p, *l4check = 0;
	if (ip->protocol == IPPROTO_TCP) {
		struct tcphdr *th = l4;
		if ((void *)(th + 1) > data_end)
			return count(FP_PASS_HDR, XDP_PASS);
		if (th->syn)
			return count(FP_PASS_SYN, XDP_PASS);
		if (th->fin || th->rst)
			return count(FP_PASS_CT, XDP_PASS);
		sport_p = &th->source;
		dport_p = &th->dest;
		l4check = &th->check;
	} else if (ip->protocol == IPPROTO_UDP) {
		struct udphdr *uh = l4;
		if ((void *)(uh + 1) > data_end)
			return count(FP_PASS_HDR, XDP_PASS);
		sport_p = &uh->source;
		dport_p = &uh->dest;
		if (uh->check) // 0: no checksum (IPv4 only), stays 0
			l4check = &uh->check;
	} else {
		return count(FP_PASS_CT, XDP_PASS);
	}
	struct bpf_sock_tuple t = {};
	t.ipv4.saddr = saddr;
	t.ipv4.daddr = daddr;
	t.ipv4.sport = *sport_p;
	t.ipv4.dport = *dport_p;
	if (!ct_check(ctx, &t, sizeof(t.ipv4), ip->protocol, 0, &r))
		return count(FP_PASS_CT, XDP_PASS);
	saddr = r.nat_saddr[0];
	daddr = r.nat_daddr[0];
#endif

	struct bpf_fib_lookup fib = {};
	fib.family = AF_INET;
	fib.tos = ip->tos;
	fib.l4_protocol = ip->protocol;
	fib.tot_len = tot_len;
	fib.ipv4_src = saddr;
	fib.ipv4_dst = daddr;
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		return count(FP_PASS_FIB, XDP_PASS);

#if FP_CT
	if (saddr != ip->saddr || daddr != ip->daddr || r.nat_sport != *sport_p ||
	    r.nat_dport != *dport_p) {
		// Re-check the bounds: the verifier forgets them across the helper calls.
		if ((void *)(ip + 1) > data_end || (void *)(sport_p + 1) > data_end ||
		    (void *)(dport_p + 1) > data_end ||
		    (l4check && (void *)(l4check + 1) > data_end))
			return count(FP_PASS_HDR, XDP_PASS);
		__u16 ck = ip->check;
		ck = csum_replace4(ck, ip->saddr, saddr);
		ck = csum_replace4(ck, ip->daddr, daddr);
		ip->check = ck;
		if (l4check) {
			__u16 c = *l4check;
			c = csum_replace4(c, ip->saddr, saddr);
			c = csum_replace4(c, ip->daddr, daddr);
			c = csum_replace2(c, *sport_p, r.nat_sport);
			c = csum_replace2(c, *dport_p, r.nat_dport);
			if (c == 0 && ip->protocol == IPPROTO_UDP)
				c = 0xffff; // 0 means "no checksum" in UDP over IPv4
			*l4check = c;
		}
		ip->saddr = saddr;
		ip->daddr = daddr;
		*sport_p = r.nat_sport;
		*dport_p = r.nat_dport;
		count(FP_NAT, 0);
	}
#endif
	// TTL - 1: the checksum word holding TTL changes by 0x0100 (as ip_decrease_ttl does).
	__u32 check = ip->check;
	check += bpf_htons(0x0100);
	ip->check = (__u16)(check + (check >= 0xffff));
	ip->ttl--;
	return count(FP_FWD4, redirect(eth, &fib));
}

static __always_inline int fwd6(struct xdp_md *ctx, struct ethhdr *eth, void *data_end)
{
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	if ((void *)(ip6 + 1) > data_end)
		return count(FP_PASS_HDR, XDP_PASS);
	if (ip6->version != 6)
		return count(FP_PASS_HDR, XDP_PASS);
	// Extension headers (hop-by-hop, routing, fragment, ...) and ICMPv6 (ND, errors) go to
	// the stack.
	__u8 nh = ip6->nexthdr;
	if (nh != IPPROTO_TCP && nh != IPPROTO_UDP)
		return count(FP_PASS_HDR, XDP_PASS);
	// Multicast destinations and link-local sources are never forwarded here.
	if ((ip6->daddr.s6_addr[0] == 0xff) ||
	    (ip6->saddr.s6_addr[0] == 0xfe && (ip6->saddr.s6_addr[1] & 0xc0) == 0x80))
		return count(FP_PASS_HDR, XDP_PASS);
	if (ip6->hop_limit <= 1)
		return count(FP_PASS_TTL, XDP_PASS);
	__u16 plen = bpf_ntohs(ip6->payload_len);
	if ((void *)(ip6 + 1) + plen > data_end)
		return count(FP_PASS_HDR, XDP_PASS);

	void *l4 = (void *)(ip6 + 1);
#if !FP_CT
	if (nh == IPPROTO_TCP) {
		struct tcphdr *th = l4;
		if ((void *)(th + 1) > data_end)
			return count(FP_PASS_HDR, XDP_PASS);
		if (th->syn)
			return count(FP_PASS_SYN, XDP_PASS);
	}
#else
	struct bpf_sock_tuple t = {};
	if (nh == IPPROTO_TCP) {
		struct tcphdr *th = l4;
		if ((void *)(th + 1) > data_end)
			return count(FP_PASS_HDR, XDP_PASS);
		if (th->syn)
			return count(FP_PASS_SYN, XDP_PASS);
		if (th->fin || th->rst)
			return count(FP_PASS_CT, XDP_PASS);
		t.ipv6.sport = th->source;
		t.ipv6.dport = th->dest;
	} else {
		struct udphdr *uh = l4;
		if ((void *)(uh + 1) > data_end)
			return count(FP_PASS_HDR, XDP_PASS);
		t.ipv6.sport = uh->source;
		t.ipv6.dport = uh->dest;
	}
	__builtin_memcpy(t.ipv6.saddr, &ip6->saddr, 16);
	__builtin_memcpy(t.ipv6.daddr, &ip6->daddr, 16);
	struct ct_result r = {};
	if (!ct_check(ctx, &t, sizeof(t.ipv6), nh, 1, &r))
		return count(FP_PASS_CT, XDP_PASS);
	if ((void *)(ip6 + 1) > data_end)
		return count(FP_PASS_HDR, XDP_PASS);
#endif

	struct bpf_fib_lookup fib = {};
	fib.family = AF_INET6;
	fib.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0fffffff);
	fib.l4_protocol = nh;
	fib.tot_len = sizeof(*ip6) + plen;
	__builtin_memcpy(fib.ipv6_src, &ip6->saddr, 16);
	__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, 16);
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		return count(FP_PASS_FIB, XDP_PASS);
	if ((void *)(ip6 + 1) > data_end)
		return count(FP_PASS_HDR, XDP_PASS);
	ip6->hop_limit--;
	return count(FP_FWD6, redirect(eth, &fib));
}

SEC("xdp")
int FP_NAME(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return count(FP_PASS_NOT_IP, XDP_PASS);
	__u32 zero = 0;
	struct fp_cfg *cfg = bpf_map_lookup_elem(&fp_cfg, &zero);
	if (!cfg || !cfg->ready)
		return count(FP_PASS_L2, XDP_PASS);
	if (*(__u32 *)eth->h_dest != *(__u32 *)cfg->mac ||
	    *(__u16 *)(eth->h_dest + 4) != *(__u16 *)(cfg->mac + 4))
		return count(FP_PASS_L2, XDP_PASS);
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return fwd4(ctx, eth, data_end);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return fwd6(ctx, eth, data_end);
	return count(FP_PASS_NOT_IP, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
