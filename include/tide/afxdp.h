/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/afxdp.h - extras of the AF_XDP driver ("afxdp:" ports); present only in builds that
 * found libxdp and libbpf (tide_port_open() lists the built-in drivers when it is missing).
 *
 * Spec: afxdp:dev=IFNAME[,key=value...]
 *   dev=IFNAME       the interface (required)
 *   queue=Q          first device queue (default 0); tide queue k binds device queue Q + k
 *   queues=N         Rx/Tx queue pairs, one AF_XDP socket each (1..16, default 1)
 *   mode=M           XDP attach mode: native | generic | auto (default: the kernel picks)
 *   zero_copy=Z      auto (default: zero-copy when the driver can, else copy) | yes | no
 *   need_wakeup=B    yes (default): syscalls only when the kernel asks | no: kick every Tx
 *   frame=N          2048 | 4096: expected frame size; must match the pool (default: the pool's)
 *   prog=P           default (tide's own XSKMAP redirect program) | PATH of a BPF object with
 *                    one XDP program and an XSKMAP (the first of each is used)
 *   busy_poll=N      preferred busy polling: SO_PREFER_BUSY_POLL and SO_BUSY_POLL of N
 *                    microseconds on each socket, and every empty Rx poll drives the
 *                    device's NAPI (recvfrom); 0..1000000 (default 20, net_af_xdp's); 0: off.
 *                    A kernel that refuses it (before 5.11) gets one notice line and a port
 *                    that polls without it (a warning when busy_poll= was given)
 *   busy_budget=N    SO_BUSY_POLL_BUDGET: frames per busy poll, 1..65535 (default 64)
 *   txc_walk=B       no (default) | yes: walk the Tx engine's slots on completion (the
 *                    per-entry cost O(1) completion removes; for benchmarks only)
 *
 * Memory: the UMEM is the Rx pool's memory area - no copy between mbuf and frame. Each pool
 * element is one frame (2048 or 4096 bytes, aligned to its size) laid out as
 *
 *     frame + 0    struct tide_mbuf (64 bytes)
 *     frame + 64   headroom (at least 192 bytes)
 *     frame + 64 + headroom   packet data (the kernel writes Rx data here)
 *
 * The kernel leaves 256 bytes of XDP headroom in front of Rx data; tide asks it for
 * headroom - 192 more, so data lands exactly where the mbuf expects it. With 192 bytes the
 * mbuf header sits in the kernel's XDP headroom: Rx rewrites the whole header, so whatever
 * the kernel put there does no harm, but an XDP program (prog=PATH) must not grow the packet
 * head by more than the mbuf headroom. Aligned chunks, not unaligned ones: a frame is found
 * from any address in it with one mask, and pool elements are aligned anyway.
 * Rings: an Rx queue of N descriptors has an Rx ring of N and a fill ring of 2N (as DPDK's
 * net_af_xdp: 2048 and 4096); it keeps exactly N frames of the pool with the kernel (fill
 * and Rx ring together; all N posted at start). A Tx queue of N has Tx and completion rings
 * of N.
 * tide_rxq_intr_fd() is the socket: POLLIN while its Rx ring holds frames.
 * Every Rx queue of a port must use the same pool. Tx sends mbufs of that pool in place
 * (refcnt 1, one segment) and copies every other packet into a frame of it. A Tx-only port
 * makes a small pool of its own.
 */
#ifndef TIDE_AFXDP_H
#define TIDE_AFXDP_H

#include <tide/common.h>
#include <tide/pool.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TIDE_AFXDP_HEADROOM 192 /* mbuf headroom that puts data at the kernel's offset */

/*
 * Create a packet pool an AF_XDP port can use as its UMEM: @n frames of @frame_size bytes
 * (2048 or 4096; 0 means 2048), per-thread caches of @cache, mbuf header at the frame start
 * and TIDE_AFXDP_HEADROOM bytes of headroom. The same as
 *     tide_pktpool_create(name, n, cache, frame_size - 64 - TIDE_AFXDP_HEADROOM,
 *                         &(struct tide_pktpool_opts){.sz = ..., .elt_pow2 = 1,
 *                          .headroom = TIDE_AFXDP_HEADROOM}, out);
 * Returns 0 and the pool in *@out, or -EINVAL (logged) / -ENOMEM.
 */
TIDE_EXPORT int tide_afxdp_pool_create(const char *name, unsigned n, unsigned cache,
				       unsigned frame_size, struct tide_pool **out);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_AFXDP_H */
