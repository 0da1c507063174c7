// SPDX-License-Identifier: BSD-3-Clause
/*
 * The kernel-side programs of bench/afxdp/run, built with clang -target bpf at bench time:
 *
 *   tbx_drop      count, XDP_DROP: the kernel's own drop rate, and the sink that counts what
 *                 arrives at a veth end
 *   tbx_redirect  count, XDP_REDIRECT through a one-entry DEVMAP: the kernel's own l2fwd
 *   tbx_gen       XDP_TX: run through BPF_PROG_TEST_RUN with live frames, every repetition
 *                 sends the test frame out of the ingress device (the traffic source)
 *
 * Counts go to slot 0 of a per-CPU array; the helper (tbx_xdp.c) sums them.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tbx_count SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tbx_out SEC(".maps");

static __always_inline void count(void)
{
	__u32 k = 0;
	__u64 *c = bpf_map_lookup_elem(&tbx_count, &k);

	if (c)
		*c += 1; /* per-CPU slot: no atomic needed */
}

SEC("xdp")
int tbx_drop(struct xdp_md *ctx)
{
	(void)ctx;
	count();
	return XDP_DROP;
}

SEC("xdp")
int tbx_redirect(struct xdp_md *ctx)
{
	(void)ctx;
	count();
	return bpf_redirect_map(&tbx_out, 0, XDP_DROP);
}

SEC("xdp")
int tbx_gen(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_TX;
}

char _license[] SEC("license") = "Dual BSD/GPL";
