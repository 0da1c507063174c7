// SPDX-License-Identifier: BSD-3-Clause
/*
 * tide's XDP program for AF_XDP ports: frames that arrive on a queue with a tide socket in
 * the XSKMAP go to that socket; every other frame goes on to the kernel stack. Built for the
 * BPF target at build time and embedded in libtide (afxdp_prog.c, generated).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64); /* queue ids; sockets beyond this are refused at setup */
	__type(key, __u32);
	__type(value, __u32);
} tide_xsks SEC(".maps");

SEC("xdp")
int tide_xsk_redirect(struct xdp_md *ctx)
{
	/* XDP_PASS as the flags argument: the action when the queue has no socket. */
	return bpf_redirect_map(&tide_xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual BSD/GPL";
