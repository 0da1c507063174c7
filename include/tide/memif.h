/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tide/memif.h - extras of the memif driver ("memif:" ports): connection state and the
 * interrupt eventfds. The port itself is used through tide/port.h.
 *
 * Spec: memif:socket=PATH[,key=value...]
 *   socket=PATH      control socket (default /run/memif.sock); "@NAME" or abstract=yes puts
 *                    it in the abstract namespace (what DPDK does by default)
 *   role=R           server | client (default client)
 *   id=N             interface id, 0..2^32-1 (default 0): the server accepts only this id;
 *                    several server ports (distinct ids) may share one socket
 *   secret=S         up to 23 characters (what libmemif keeps); the server refuses a
 *                    client without it
 *   rings=Q          queue pairs, 1..16 (default 1); the client offers min(queues, server max)
 *   ring_size=N      client: slots per ring, a power of two 2^1..2^14 (default 1024)
 *   buffer=N         copy buffer size, 128..65535 (default 2048); also the longest
 *                    descriptor accepted from the peer
 *   zero_copy=B      client only: no (default) | yes: packet buffers are the Rx pool's memory
 *                    (created with TIDE_POOL_F_SHARED), exposed to the server as regions
 *   txfree_loop=B    no (default): copy-mode Tx frees the burst after the copy loop, in bulk
 *                    | yes: frees each packet inside the loop (benchmark comparison)
 *   abstract=B       see socket
 *   name=S           interface name sent to the peer (default tide)
 *   max_chain=N      descriptors one frame may span, 1..256 (default 64); longer frames
 *                    are dropped and counted (Rx and Tx errors), the link stays up
 *   handshake_timeout=MS  a peer that has not finished the handshake after MS ms
 *                    (default 3000) is disconnected ("handshake timed out")
 *   quiesce=Q        auto (default): membarrier() when the kernel has it, else a fence
 *                    per burst | membarrier: refuse to start without it | fence
 *   zc_quarantine=MS zero-copy: after a disconnect, the buffers the server had (posted Rx,
 *                    in-flight Tx) go back to the pool MS ms (default 100, 0..60000) after
 *                    the server closed its control socket (waited for 1 s at most); no
 *                    reconnection meanwhile, and port stop waits for it
 *
 * Control plane: the application calls tide_port_poll_ctl() now and then (tide-fwd does
 * every 10 ms); it never blocks (a client's port stop waits up to 100 ms for the server to
 * drain what was sent, and a zero-copy client's stop for its quarantine: zc_quarantine). The link is up from the handshake's end until the peer goes away or
 * breaks a rule; the port then accepts (server) or retries (client, backing off from 50 ms
 * to 2 s after failed attempts) by itself. Link changes are logged at notice level,
 * refusals with the peer's reason at warning level. Empty frames are dropped and counted.
 * Bursts on a port whose link is down return 0 without a syscall.
 *
 * Zero-copy trusts the peer with the pool's memory (it can write any byte of it, mbuf
 * headers included), as in every memif implementation; descriptors, indices and lengths
 * are still checked. Copy mode exposes nothing but its own rings and buffers.
 */
#ifndef TIDE_MEMIF_H
#define TIDE_MEMIF_H

#include <tide/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tide_port;

struct tide_memif_info {
	size_t sz;              /* sizeof(struct tide_memif_info), set by the caller */
	int connected;          /* link up */
	int server;             /* role */
	int zero_copy;
	unsigned c2s_rings, s2c_rings; /* rings of the current connection */
	unsigned ring_size;
	uint64_t connects;      /* handshakes completed */
	uint64_t disconnects;   /* links that went down (any reason) */
	uint64_t violations;    /* of those, because the peer broke a rule */
	char reason[97];        /* why the link last went down ("" if it never did) */
	char peer_name[33];
};

/* Fill @out (its sz set: tide/port.h). Returns 0, or -EINVAL if @p is not a memif port or
 * sz is too small. */
TIDE_EXPORT int tide_memif_info_get(struct tide_port *p, struct tide_memif_info *out);

/*
 * The eventfd the peer writes to when it has put packets on Rx queue @qid's ring, for
 * applications that want to sleep (poll/epoll it for reading). Valid while the link is up:
 * the link going down closes it (after any interrupt call in progress on the queue has
 * returned), the number may then be reused by another file, and a new connection brings a
 * new fd. So sleep with a timeout, ask again after a wake-up that found nothing, and clear
 * a signal with tide_memif_rxq_intr(p, qid, 0) rather than read() on a number that may be
 * stale. Interrupts are masked (the peer does not write) until tide_memif_rxq_intr()
 * enables them. Safe while the control thread disconnects the port.
 * Returns the fd, -ENOTCONN when the link is down, -EINVAL for a bad port or queue.
 */
TIDE_EXPORT int tide_memif_rxq_eventfd(struct tide_port *p, unsigned qid);

/*
 * Ask the peer to signal (@enable 1) or not (0) Rx queue @qid; disabling also clears a
 * pending signal. The choice is kept for later connections. Call it from the thread that
 * polls the queue; it is safe while the control thread disconnects the port (the
 * disconnect waits for a call in progress; a later one returns -ENOTCONN and touches
 * nothing). Returns 0, -ENOTCONN (link down: the choice still applies at the next
 * connection) or -EINVAL. The generic tide_rxq_intr_*() of tide/port.h do the same for any
 * driver.
 */
TIDE_EXPORT int tide_memif_rxq_intr(struct tide_port *p, unsigned qid, int enable);

#ifdef __cplusplus
}
#endif

#endif /* TIDE_MEMIF_H */
