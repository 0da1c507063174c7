/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/vhost.h - extras of the vhost-user backend driver ("vhost:" ports): connection
 * state. The port itself is used through tide/port.h.
 *
 * Spec: vhost:socket=PATH[,key=value...]
 *   socket=PATH      the vhost-user UNIX socket (required)
 *   role=R           server (default: tide listens, the frontend connects) | client (tide
 *                    connects to a listening frontend and reconnects when it restarts)
 *   queues=N         queue pairs, 1..16 (default 1); offered with VHOST_USER_PROTOCOL_F_MQ
 *   mrg_rxbuf=B      offer VIRTIO_NET_F_MRG_RXBUF (default yes)
 *   event_idx=B      offer VIRTIO_RING_F_EVENT_IDX (default yes)
 *   in_order=B       offer VIRTIO_F_IN_ORDER (default yes)
 *   indirect=B       offer VIRTIO_RING_F_INDIRECT_DESC (default yes)
 *   packed=B         offer VIRTIO_F_RING_PACKED (default yes; the frontend picks the layout)
 *   mtu=B            offer VIRTIO_NET_F_MTU (default yes): a frontend then shows its own MTU
 *                    (QEMU's host_mtu) to the guest and states it to tide (NET_SET_MTU,
 *                    what tide_port_mtu_get() reports); no: for a frontend or guest that
 *                    mishandles the bit
 *   txfree_loop=B    no (default): Tx frees the copied burst after the copy loop, in bulk
 *                    | yes: frees each packet inside the loop (benchmark comparison)
 *   used_per_pkt=B   no (default): the used ring index is published once per burst
 *                    | yes: after every packet (benchmark comparison)
 *   unsealed_mem=B   no (default): guest memory whose file cannot be sealed against
 *                    shrinking (hugetlbfs files, memfds without MFD_ALLOW_SEALING: DPDK's
 *                    virtio-user) is refused, since a frontend that shrank it would crash
 *                    this process (SIGBUS) | yes: such memory is trusted not to shrink
 *   offloads=B       yes (default): offer the checksum and TSO features (guest -> tide only
 *                    when every Rx queue enabled TIDE_OFFLOAD_RX_TCP_CKSUM, _UDP_CKSUM and,
 *                    for TSO, _TCP_LRO) and report them in rx/tx_offload_capa | no: none
 *
 * Control plane: a started port has a control thread of its own ("<port>-ctl", asleep in
 * poll() until the frontend sends, a worker finds a fault or the port stops), so the port's
 * info has needs_poll_ctl 0 and the application need not call tide_port_poll_ctl() (tide-fwd
 * does not). A call is allowed and never blocks: it handles at once what the frontend has
 * sent so far. The link is up while the first queue pair's vrings run.
 * Every value from the frontend (messages, memory table, vring addresses, descriptors,
 * indices) is checked; a frontend that breaks a rule is disconnected with a logged reason
 * and the port waits for (server) or retries (client) the next connection.
 */
#ifndef TIDE_VHOST_H
#define TIDE_VHOST_H

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_port;

struct tide_vhost_info {
	size_t sz;            /* sizeof(struct tide_vhost_info), set by the caller */
	int connected;        /* the first queue pair runs */
	int server;           /* role */
	uint64_t features;    /* negotiated virtio features (0 before SET_FEATURES) */
	uint64_t protocol_features;
	unsigned vrings_running;
	uint64_t connects;    /* connections accepted or made */
	uint64_t disconnects; /* connections that ended (any reason) */
	uint64_t violations;  /* of those, because the frontend broke a rule */
	uint64_t call_errors; /* guest notifications whose eventfd write failed (a full
			       * counter: the guest was woken already) */
	char reason[128];     /* why the last connection ended ("" if none did) */
};

/* Fill @out (its sz set: tide/port.h). Returns 0, or -EINVAL if @p is not a vhost port or
 * sz is too small. Any thread may call it, one
 * that runs bursts too (while it waits for the port's control thread it counts as offline:
 * tide_thread_offline()). */
TIDE_EXPORT int tide_vhost_info_get(struct tide_port *p, struct tide_vhost_info *out);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_VHOST_H */
