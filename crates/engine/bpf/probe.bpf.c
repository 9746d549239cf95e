// SPDX-License-Identifier: MIT OR Apache-2.0
// The smallest XDP program: passes every frame. Used to detect whether a port's driver
// accepts an XDP program (engine::xdp::support) before choosing the XDP backend.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int wr_probe(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
