// SPDX-License-Identifier: MIT OR Apache-2.0
//
// wirerate's XDP transmitter (engine::xdp::tx). User space runs `wr_tx` with BPF_PROG_RUN and
// BPF_F_TEST_XDP_LIVE_FRAMES over one base frame ("recipe": one stream, one frame size), with
// `repeat` = the frames due. For each frame the program takes the stream's next frame index
// from a map, writes the signature's sequence number and CLOCK_MONOTONIC send time (when not
// paced by the program, one reading per group of CLOCK_GROUP frames), the IPv4
// identification and the varying flow fields, patches the UDP and IPv4 header checksums
// incrementally from bases user space computed (RFC 1624) and returns XDP_TX, which live mode
// turns into a redirect out of the ingress interface (net/bpf/test_run.c).
//
// Live mode does not copy the base frame into a recycled page again, so every variable field
// is computed from the recipe's base values and rewritten for every frame; nothing is read
// back from the packet.
//
// Which frames the device refused: the redirect ends in the device's ndo_xdp_xmit, flushed at
// the end of each batch inside the same BPF_PROG_RUN call, on the same thread. Two raw
// tracepoint programs (xdp_devmap_xmit: `drops` frames of a flush; xdp_redirect_err: one frame)
// add those to the recipe that was running, filtered on the sending thread's id. User space
// counts a frame as sent only if it was not refused.
//
// The signature layout is wire::signature (DESIGN.md §5): "WR", u16 stream id, u32 sequence,
// u64 timestamp, all big-endian, right after the UDP header.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define RECIPE_PROBE 1u   /* send the frame unchanged (the peer-acceptance probe) */
#define RECIPE_RANDOM 2u  /* pseudorandom flow fields (RFC 4814), else incrementing */
#define RECIPE_CONNS 4u   /* frame i is connection i mod conn_count of `conns` (IPv4) */
#define MAX_RECIPES 256
#define MAX_STREAMS 256
#define MAX_OFF 4096
#define HDR_MAX 256       /* header bytes restored per frame (see `headers`) */
/* Unpaced, the clock is read once per group of this many consecutive frames of a stream in one
 * BPF_PROG_RUN call, and every frame of the group carries that reading. 16 is the devmap's bulk
 * (DEV_MAP_BULK_SIZE): the kernel hands a run's frames to the device 16 at a time, after the
 * 16th is processed, so a frame's own reading was already up to 15 frames' processing time
 * earlier than its hand-over; with the group's reading every frame of a bulk is stamped at the
 * bulk's first frame: the same largest error, a frame's stamp never later than its hand-over,
 * and one clock read (in this VM 10 % of a frame's cost, perf) instead of 16. */
#define CLOCK_GROUP 16

/* Keep in sync with engine::xdp::sys::Recipe. */
struct recipe {
	__u64 seed;
	__u64 reorder_every;   /* 0: none; k: indices k-2 and k-1 of every k swap sequences */
	__u32 stream;          /* slot in `streams` */
	__u32 flags;
	__u32 src_ip_count;
	__u32 dst_ip_count;
	__u32 src_ip_base;     /* low 32 bits of the base addresses, host order */
	__u32 dst_ip_base;
	__u32 src_port_count;
	__u32 dst_port_count;
	__u16 src_port_base;
	__u16 dst_port_base;
	__u16 sig_off;
	__u16 udp_csum_off;
	__u16 udp_csum_base;   /* with sequence, timestamp, ident 0 and base flows */
	__u16 ip_csum_off;     /* 0: no IPv4 header to patch */
	__u16 ip_csum_base;
	__u16 ip_ident_off;
	__u16 src_addr_off;    /* the low 32 bits of the test packet's source address */
	__u16 dst_addr_off;
	__u16 udp_off;         /* the UDP header: source port, then destination port */
	__u16 ip_is_v4;        /* address changes also patch the IPv4 header checksum */
	__u32 conn_count;      /* RECIPE_CONNS: the connections of `conns` the frames cycle through */
	__u32 pad;
};

/* Keep in sync with engine::xdp::sys::Conn. One connection's IPv4 4-tuple as it leaves the
 * tester, host order (RECIPE_CONNS, the load of engine::nat on the XDP backend: the initiator
 * cycles through the tuples it opened, the responder through the translations it learned). */
struct conn {
	__u32 src_addr;
	__u32 dst_addr;
	__u16 src_port;
	__u16 dst_port;
};

/* Keep in sync with engine::xdp::sys::StreamState. */
struct stream_state {
	__u64 next;            /* frames processed = the next frame index */
	__u64 first_ns;
	__u64 last_ns;
	__u64 group_ns;        /* the clock reading of the current group (CLOCK_GROUP) */
	__u32 group_token;     /* the call it was read in (the metadata's second word) */
	__u32 group_left;      /* frames of the group still to carry it */
};

/* Keep in sync with engine::xdp::sys::Schedule. The stream's absolute schedule, kept by the
 * program itself (engine::pacing::Pacer, with a batch of one frame): when `on`, every
 * iteration of a BPF_PROG_RUN call reads the clock and sends the stream's next frame only if it
 * is due, else drops the page back to the pool (an idle iteration). One call then covers a
 * millisecond or so of the schedule, frames leave at their due time (not in user-space batches),
 * and a handful of calls per millisecond become one: each call creates and destroys a page pool,
 * and a pool whose pages are still inside the device under test is released later by a kernel
 * worker on this CPU, at a cost that grows with the number of pools waiting (seen with perf:
 * page_pool_release_retry -> mem_allocator_disconnect walking every pool, a whole CPU at
 * 20,000 calls/s). Times are in ns; period and spacing in ns << 16 (fixed point). */
struct schedule {
	__u64 start_ns;
	__u64 period_fp;       /* between the starts of two bursts */
	__u64 spacing_fp;      /* between two frames of a burst (0: due together) */
	__u64 burst;           /* frames per burst, >= 1 */
	__u64 limit;           /* frames to issue (U64_MAX: none) */
	__u64 max_debt;        /* frames due but not sent beyond this are slipped */
	__u64 slipped;         /* frames dropped from the schedule after stalls */
	__u64 max_seen_debt;
	__u32 on;
	__u32 slips_use_limit; /* duration-limited: slipped frames use up the limit */
	/* The link (engine::pacing::Pacer::with_link), all ns << 16 after start_ns: one frame's
	 * time at its line rate (0: no limit), how far ahead of now the link's theoretical
	 * arrival time may be for a frame to go (depth - 1 frame times), and that time. */
	__u64 link_gap_fp;
	__u64 link_tolerance_fp;
	__u64 link_tat_fp;
};

/* Keep in sync with engine::xdp::sys::RecipeState. */
struct recipe_state {
	__u64 processed;
	__u64 refused;         /* frames the device refused (never sent) */
	__u64 refused_events;  /* flushes or redirects that refused frames */
	__s64 last_err;
};

/* Keep in sync with engine::xdp::sys::Ctl. */
struct ctl {
	__u32 tid;             /* the sending thread: tracepoints count only its refusals */
	__u32 current;         /* the recipe running now */
	__u64 bad_recipe;      /* runs with a recipe the maps do not hold (a bug) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_RECIPES);
	__type(key, __u32);
	__type(value, struct recipe);
} recipes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_RECIPES);
	__type(key, __u32);
	__type(value, struct recipe_state);
} recipe_states SEC(".maps");

/* Keep in sync with engine::xdp::sys::Header: the recipe's base frame up to the signature. */
struct header {
	__u32 len;
	__u8 bytes[HDR_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_RECIPES);
	__type(key, __u32);
	__type(value, struct header);
} headers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct stream_state);
} streams SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ctl);
} ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_STREAMS);
	__type(key, __u32);
	__type(value, struct schedule);
} schedules SEC(".maps");

/* Sized by user space at load (one entry when no recipe uses RECIPE_CONNS). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct conn);
} conns SEC(".maps");

/* Frames of `p`'s schedule due by `now` (engine::pacing::Pacer::scheduled). */
static __always_inline __u64 scheduled(const struct schedule *p, __u64 now)
{
	if (now < p->start_ns || p->period_fp == 0)
		return 0;
	/* Elapsed time in ns << 16: fits 64 bits for 39 hours, beyond any trial. */
	__u64 elapsed = (now - p->start_ns) << 16;
	__u64 k = elapsed / p->period_fp;
	__u64 in_burst = p->burst;
	if (p->spacing_fp > 0) {
		__u64 within = elapsed - k * p->period_fp;
		in_burst = within / p->spacing_fp + 1;
		if (in_burst > p->burst)
			in_burst = p->burst;
	}
	return k * p->burst + in_burst;
}

/* Whether stream state `s` may send a frame now under schedule `p` (engine::pacing::Pacer::due
 * with a batch of one): counts slips after a stall longer than the debt cap. */
static __always_inline int due_now(struct schedule *p, const struct stream_state *s, __u64 now)
{
	__u64 spent = s->next + (p->slips_use_limit ? p->slipped : 0);
	if (spent >= p->limit)
		return 0;
	__u64 sched = scheduled(p, now);
	__u64 cap = p->limit + p->slipped;
	if (cap < p->limit)
		cap = ~0ULL;
	if (sched > cap)
		sched = cap;
	__u64 pos = s->next + p->slipped;
	if (sched <= pos)
		return 0;
	__u64 debt = sched - pos;
	if (debt > p->max_debt) {
		p->slipped += debt - p->max_debt;
		debt = p->max_debt;
		if (p->slips_use_limit && s->next + p->slipped >= p->limit)
			return 0;
	}
	if (debt > p->max_seen_debt)
		p->max_seen_debt = debt;
	if (p->link_gap_fp) {
		/* The link: the frame goes only if it conforms (a token bucket at the line rate);
		 * otherwise it stays owed. now >= start_ns here (scheduled() found frames due). */
		__u64 t = (now - p->start_ns) << 16;
		__u64 tat = p->link_tat_fp > t ? p->link_tat_fp : t;
		if (tat > t + p->link_tolerance_fp)
			return 0;
		p->link_tat_fp = tat + p->link_gap_fp;
	}
	return 1;
}

static __always_inline __u64 splitmix(__u64 z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* engine::stream::FrameGen::field_index */
static __always_inline __u64 field_index(const struct recipe *r, __u64 seq, __u64 field,
					 __u64 count)
{
	if (r->flags & RECIPE_RANDOM)
		return splitmix(r->seed ^ splitmix(seq * 4 + field)) % count;
	return seq % count;
}

/* One's-complement addition of the change old -> new of a 32-bit value (two words). */
static __always_inline __u64 delta32(__u32 old, __u32 new)
{
	return (__u64)((~old >> 16) & 0xffff) + (~old & 0xffff) + (new >> 16) + (new & 0xffff);
}

static __always_inline __u16 fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* Big-endian stores as one byte swap and one (unaligned) store each: the JIT emits a single
 * instruction where byte-by-byte stores cost four. */
static __always_inline void put16(__u8 *p, __u16 v)
{
	*(__u16 *)p = __builtin_bswap16(v);
}

static __always_inline void put32(__u8 *p, __u32 v)
{
	*(__u32 *)p = __builtin_bswap32(v);
}

SEC("xdp")
int wr_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	void *meta = (void *)(long)ctx->data_meta;
	__u32 zero = 0;

	struct ctl *c = bpf_map_lookup_elem(&ctl, &zero);
	if (!c)
		return XDP_DROP;
	/* The recipe index travels in the frame's metadata (BPF_PROG_RUN's ctx_in.data). A frame
	 * without it is not one of our runs (the program is also attached to a private loopback
	 * to stay in the XDP dispatcher, see engine::xdp::tx): leave it alone. */
	if (meta + 2 * sizeof(__u32) > data)
		return XDP_PASS;
	__u32 ri = *(__u32 *)meta;
	/* A new value in every call (engine::xdp::tx::XdpSender::run_recipe). */
	__u32 token = *(__u32 *)(meta + sizeof(__u32));
	struct recipe *r = bpf_map_lookup_elem(&recipes, &ri);
	struct recipe_state *rs = bpf_map_lookup_elem(&recipe_states, &ri);
	if (!r || !rs) {
		c->bad_recipe++;
		return XDP_DROP;
	}
	c->current = ri;
	if (r->flags & RECIPE_PROBE) {
		rs->processed++;
		return XDP_TX;
	}
	__u32 si = r->stream;
	struct stream_state *s = bpf_map_lookup_elem(&streams, &si);
	struct schedule *p = bpf_map_lookup_elem(&schedules, &si);
	if (!s || !p) {
		c->bad_recipe++;
		return XDP_DROP;
	}
	/* Paced: the clock decides whether this iteration sends (not due yet, or the schedule is
	 * over: an idle iteration, nothing sent or counted), and every frame carries its own reading.
	 * Otherwise the clock is read below, once per CLOCK_GROUP frames. */
	__u64 now = 0;
	if (p->on) {
		now = bpf_ktime_get_ns();
		if (!due_now(p, s, now))
			return XDP_DROP;
	}
	rs->processed++;
	/* A recycled page can hold what the device under test wrote into an earlier frame's
	 * buffer: forwarding rewrites the MACs and the TTL, NAT the addresses and ports, in place,
	 * and the page comes back to this run's page pool when the DUT frees the skb. So the
	 * headers are restored from the recipe's copy before anything is patched (seen as frames
	 * with the tester's far MAC as destination, dropped by the DUT as "otherhost"). */
	struct header *h = bpf_map_lookup_elem(&headers, &ri);
	if (!h) {
		c->bad_recipe++;
		return XDP_DROP;
	}
	/* Restored with 8-byte stores rather than bpf_xdp_store_bytes (a helper call per frame):
	 * `h->bytes` holds the base frame beyond `len` too (user space fills it up to HDR_MAX or
	 * the frame's end), so the last word may run into the signature with the right bytes; the
	 * signature's variable part is written below anyway. */
	__u32 hl = h->len;
	if (hl > HDR_MAX)
		return XDP_DROP;
	for (__u32 i = 0; i < HDR_MAX / 8; i++) {
		if (i * 8 >= hl)
			break;
		__u64 *dst = data + i * 8;
		if ((void *)(dst + 1) > data_end)
			return XDP_DROP;
		*dst = *(__u64 *)(h->bytes + i * 8);
	}

	__u64 index = s->next;
	s->next = index + 1;
	__u64 seq = index;
	__u64 k = r->reorder_every;
	if (k >= 2) {
		__u64 rem = index % k;
		if (rem == k - 2)
			seq = index + 1;
		else if (rem == k - 1)
			seq = index - 1;
	}
	/* RECIPE_CONNS: frame `index` belongs to connection index mod N and carries the connection
	 * as its sequence number (engine::nat::load: a receiver checks each frame against its own
	 * connection's tuple); its addresses and ports are the connection's, the checksums patched
	 * from the base frame's values like the flow fields below. */
	__u64 conn_udp = 0, conn_ip = 0;
	struct conn *cn = 0;
	if (r->flags & RECIPE_CONNS) {
		__u32 nconn = r->conn_count;
		if (nconn == 0 || !r->ip_is_v4) {
			c->bad_recipe++;
			return XDP_DROP;
		}
		__u32 ci = (__u32)(index % nconn);
		seq = ci;
		cn = bpf_map_lookup_elem(&conns, &ci);
		if (!cn) {
			c->bad_recipe++;
			return XDP_DROP;
		}
		__u64 d = delta32(r->src_ip_base, cn->src_addr) + delta32(r->dst_ip_base, cn->dst_addr);
		conn_ip = d;
		conn_udp = d + (~r->src_port_base & 0xffff) + cn->src_port +
			   (~r->dst_port_base & 0xffff) + cn->dst_port;
	}
	if (!p->on) {
		if (s->group_left == 0 || s->group_token != token) {
			now = bpf_ktime_get_ns();
			s->group_ns = now;
			s->group_token = token;
			s->group_left = CLOCK_GROUP - 1;
		} else {
			now = s->group_ns;
			s->group_left--;
		}
	}
	if (index == 0)
		s->first_ns = now;
	s->last_ns = now;

	/* Signature: sequence and timestamp. */
	__u32 off = r->sig_off;
	if (off > MAX_OFF)
		return XDP_DROP;
	__u8 *sig = data + off;
	if ((void *)(sig + 16) > data_end)
		return XDP_DROP;
	__u32 seq32 = (__u32)seq;
	put32(sig + 4, seq32);
	put32(sig + 8, (__u32)(now >> 32));
	put32(sig + 12, (__u32)now);
	__u64 udp = (~r->udp_csum_base & 0xffff) + (seq32 >> 16) + (seq32 & 0xffff) +
		    ((now >> 48) & 0xffff) + ((now >> 32) & 0xffff) + ((now >> 16) & 0xffff) +
		    (now & 0xffff);

	/* IPv4 identification = low 16 bits of the sequence, as FrameTemplate::stamp. */
	__u64 ip = 0;
	__u32 ip_csum_off = r->ip_csum_off;
	if (ip_csum_off) {
		__u32 ident_off = r->ip_ident_off;
		if (ident_off > MAX_OFF)
			return XDP_DROP;
		__u8 *id = data + ident_off;
		if ((void *)(id + 2) > data_end)
			return XDP_DROP;
		put16(id, (__u16)seq);
		ip = (~r->ip_csum_base & 0xffff) + (seq & 0xffff);
	}

	if (cn) {
		__u32 so = r->src_addr_off, dof = r->dst_addr_off, uo = r->udp_off;
		if (so > MAX_OFF || dof > MAX_OFF || uo > MAX_OFF)
			return XDP_DROP;
		__u8 *sp = data + so, *dp = data + dof, *pp = data + uo;
		if ((void *)(sp + 4) > data_end || (void *)(dp + 4) > data_end ||
		    (void *)(pp + 4) > data_end)
			return XDP_DROP;
		put32(sp, cn->src_addr);
		put32(dp, cn->dst_addr);
		put16(pp, cn->src_port);
		put16(pp + 2, cn->dst_port);
		udp += conn_udp;
		ip += conn_ip;
	}

	/* Flow fields, from their base values (engine::stream::FrameGen::vary_flows). */
	if (r->src_ip_count > 1) {
		__u32 a = r->src_ip_base + (__u32)field_index(r, seq, 0, r->src_ip_count);
		__u32 o = r->src_addr_off;
		if (o > MAX_OFF)
			return XDP_DROP;
		__u8 *p = data + o;
		if ((void *)(p + 4) > data_end)
			return XDP_DROP;
		put32(p, a);
		udp += delta32(r->src_ip_base, a);
		if (r->ip_is_v4)
			ip += delta32(r->src_ip_base, a);
	}
	if (r->dst_ip_count > 1) {
		__u32 a = r->dst_ip_base + (__u32)field_index(r, seq, 1, r->dst_ip_count);
		__u32 o = r->dst_addr_off;
		if (o > MAX_OFF)
			return XDP_DROP;
		__u8 *p = data + o;
		if ((void *)(p + 4) > data_end)
			return XDP_DROP;
		put32(p, a);
		udp += delta32(r->dst_ip_base, a);
		if (r->ip_is_v4)
			ip += delta32(r->dst_ip_base, a);
	}
	if (r->src_port_count > 1 || r->dst_port_count > 1) {
		__u32 o = r->udp_off;
		if (o > MAX_OFF)
			return XDP_DROP;
		__u8 *p = data + o;
		if ((void *)(p + 4) > data_end)
			return XDP_DROP;
		if (r->src_port_count > 1) {
			__u16 v = r->src_port_base +
				  (__u16)field_index(r, seq, 2, r->src_port_count);
			put16(p, v);
			udp += (~r->src_port_base & 0xffff) + v;
		}
		if (r->dst_port_count > 1) {
			__u16 v = r->dst_port_base +
				  (__u16)field_index(r, seq, 3, r->dst_port_count);
			put16(p + 2, v);
			udp += (~r->dst_port_base & 0xffff) + v;
		}
	}

	/* Checksums. A UDP checksum of 0 means "none": send 0xffff (RFC 768). */
	__u32 uo = r->udp_csum_off;
	if (uo > MAX_OFF)
		return XDP_DROP;
	__u8 *up = data + uo;
	if ((void *)(up + 2) > data_end)
		return XDP_DROP;
	__u16 u = ~fold(udp);
	put16(up, u ? u : 0xffff);
	if (ip_csum_off) {
		if (ip_csum_off > MAX_OFF)
			return XDP_DROP;
		__u8 *ipc = data + ip_csum_off;
		if ((void *)(ipc + 2) > data_end)
			return XDP_DROP;
		put16(ipc, ~fold(ip));
	}
	return XDP_TX;
}

static __always_inline void refused(__u64 n, __s64 err)
{
	__u32 zero = 0;
	struct ctl *c = bpf_map_lookup_elem(&ctl, &zero);
	if (!c || (__u32)bpf_get_current_pid_tgid() != c->tid)
		return;
	__u32 ri = c->current;
	struct recipe_state *rs = bpf_map_lookup_elem(&recipe_states, &ri);
	if (!rs)
		return;
	rs->refused += n;
	rs->refused_events++;
	rs->last_err = err;
}

/* TP_PROTO(const struct net_device *from_dev, const struct net_device *to_dev, int sent,
 *          int drops, int err) */
SEC("raw_tracepoint/xdp_devmap_xmit")
int wr_tx_xmit(struct bpf_raw_tracepoint_args *ctx)
{
	int drops = (int)ctx->args[3];
	if (drops > 0)
		refused(drops, (int)ctx->args[4]);
	return 0;
}

/* TP_PROTO(const struct net_device *dev, const struct bpf_prog *xdp, const void *tgt, int err,
 *          enum bpf_map_type map_type, u32 map_id, u32 index) */
SEC("raw_tracepoint/xdp_redirect_err")
int wr_tx_redirect_err(struct bpf_raw_tracepoint_args *ctx)
{
	refused(1, (int)ctx->args[3]);
	return 0;
}

/* Drops every frame at the driver: the "peer that drops at ingress" of `wirerate bench tx
 * --backend xdp` (attaching it also gives a veth the NAPI it needs to accept XDP frames). */
SEC("xdp")
int wr_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
