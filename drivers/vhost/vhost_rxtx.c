/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vhost data path: the queues' burst functions, one for Rx and one per Tx free mode, for
 * either ring layout. Each enters (busy stored, the live word read: vhost.h), then jumps to
 * the body of the layout the live word names (vhost_split.c, vhost_packed.c); the body
 * leaves. Small, so that the bodies' register saves come after the choice.
 */
#include "inline.h"
#include "vhost.h"

/*
 * Burst entry, both layouts: publish busy and read the live word. Returns the layout of a
 * queue that runs and is sound, or 0 with the burst already left (down, or faulted: it
 * moves nothing until the control thread has disconnected).
 */
TIDE_ALWAYS_INLINE uint32_t q_enter(uint32_t *busy, const uint32_t *live, bool fence,
				    const struct vhost_fault_slot *fault)
{
	uint32_t l = vhost_enter(busy, live, fence);

	if (tide_unlikely(l == 0 || __atomic_load_n(&fault->why, __ATOMIC_RELAXED) != NULL)) {
		vhost_leave(busy);
		return 0;
	}
	return l;
}

TIDE_ALWAYS_INLINE uint16_t rx_enter(struct tide_rxq *pub, struct tide_mbuf **pkts, uint16_t n,
				     const bool ol)
{
	struct vhost_rxq *q = (struct vhost_rxq *)pub;
	uint32_t live = q_enter(&q->busy, &q->live, q->fence, &q->fault);

	if (tide_likely(live == VHOST_LIVE_SPLIT))
		return ol ? vhost_split_rx_ol(pub, pkts, n) : vhost_split_rx(pub, pkts, n);
	if (live == VHOST_LIVE_PACKED)
		return ol ? vhost_packed_rx_ol(pub, pkts, n) : vhost_packed_rx(pub, pkts, n);
	return 0;
}

static uint16_t rx_burst(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_enter(q, pkts, n, false);
}

static uint16_t rx_burst_ol(struct tide_rxq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return rx_enter(q, pkts, n, true);
}

tide_rx_burst_fn vhost_rx_fn(bool ol)
{
	return ol ? rx_burst_ol : rx_burst;
}

unsigned vhost_tx_advance_ool(struct txc *t)
{
	(void)t; /* slots complete as they are copied (txc_commit_done) */
	return 0;
}

TIDE_ALWAYS_INLINE uint16_t tx_enter(struct tide_txq *pub, struct tide_mbuf **pkts, uint16_t n,
				     const enum vhost_txfree f, const bool ol)
{
	struct vhost_txq *q = (struct vhost_txq *)pub;
	uint32_t live = q_enter(&q->busy, &q->live, q->fence, &q->fault);

	if (tide_likely(live == VHOST_LIVE_SPLIT)) {
		if (ol)
			return f == VHOST_FREE_LOOP ? vhost_split_tx_loop_ol(pub, pkts, n)
						    : vhost_split_tx_after_ol(pub, pkts, n);
		return f == VHOST_FREE_LOOP ? vhost_split_tx_loop(pub, pkts, n)
					    : vhost_split_tx_after(pub, pkts, n);
	}
	if (live == VHOST_LIVE_PACKED) {
		if (ol)
			return f == VHOST_FREE_LOOP ? vhost_packed_tx_loop_ol(pub, pkts, n)
						    : vhost_packed_tx_after_ol(pub, pkts, n);
		return f == VHOST_FREE_LOOP ? vhost_packed_tx_loop(pub, pkts, n)
					    : vhost_packed_tx_after(pub, pkts, n);
	}
	return 0;
}

static uint16_t tx_after(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_enter(q, pkts, n, VHOST_FREE_AFTER, false);
}

static uint16_t tx_loop(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_enter(q, pkts, n, VHOST_FREE_LOOP, false);
}

static uint16_t tx_after_ol(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_enter(q, pkts, n, VHOST_FREE_AFTER, true);
}

static uint16_t tx_loop_ol(struct tide_txq *q, struct tide_mbuf **pkts, uint16_t n)
{
	return tx_enter(q, pkts, n, VHOST_FREE_LOOP, true);
}

/* @ol: the queue enabled offloads (chosen at port start; the plain bursts never look). */
tide_tx_burst_fn vhost_tx_fn(enum vhost_txfree f, bool ol)
{
	if (TIDE_BENCH_VARIANTS && f == VHOST_FREE_LOOP)
		return ol ? tx_loop_ol : tx_loop;
	return ol ? tx_after_ol : tx_after;
}
