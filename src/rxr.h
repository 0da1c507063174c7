/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rx refill: the buffer side of an Rx ring, shared by every descriptor driver.
 *
 * One mbuf pointer per Rx descriptor. Free-running indices:
 *
 *        next                      refill            next + size
 *    ......|  posted to the device   |  empty slots     |......
 *
 * `next` is the next slot the driver will receive from; `refill` the next slot that needs a
 * buffer. Refill works in batches of `batch` slots (batch divides the ring, so a batch never
 * wraps): buffers come first from the paired Tx queue's completed slots (recycling through
 * the recycle link: link.h) and otherwise from the pool in one bulk get, and each batch is
 * posted with one doorbell. Only the thread that polls the queue touches this structure,
 * except `link.pair` (link.h says who writes it).
 */
#ifndef TIDE_SRC_RXR_H
#define TIDE_SRC_RXR_H

#include <stdbool.h>

#include <tide/mbuf.h>
#include <tide/port.h>

#include "inline.h"
#include "txc.h"

#define RXR_DEFAULT_BATCH 32

struct rxr {
	struct link_rx link;       /* first: the recycle link (link.h) */
	uint32_t next;
	uint32_t refill;
	uint32_t size, mask;
	uint16_t batch;
	struct tide_mbuf **sw;
	struct tide_pool *pool;
	struct tide_rxq *q;
	/* Driver hook (out of line; called once per batch by tide_recycle). */
	void (*post)(struct rxr *r, uint32_t first, unsigned n, bool doorbell);
	void *drv;
	uint64_t recycled; /* buffers this queue took from a Tx engine (relaxed counter) */
};

int rxr_init(struct rxr *r, struct tide_rxq *q, unsigned size, struct tide_pool *pool,
	     const struct tide_rxq_conf *conf,
	     void (*post)(struct rxr *r, uint32_t first, unsigned n, bool doorbell), void *drv);
void rxr_fini(struct rxr *r);

/* Give every posted buffer back to the pool (the device is stopped). Returns how many. */
unsigned rxr_release_all(struct rxr *r);

/* Check and complete an Rx configuration (defaults, batch divides the ring). */
int rxr_conf_check(const char *who, unsigned nb_desc, struct tide_rxq_conf *conf);

/* Slots waiting for a buffer. */
static inline unsigned rxr_empty_slots(const struct rxr *r)
{
	return r->size - (r->refill - r->next);
}

/*
 * Fill one batch of slots at `refill`: recycled buffers when paired and available, else a
 * bulk get from the pool. Returns the batch size, or 0 (pool empty: counted as nombuf).
 */
TIDE_ALWAYS_INLINE unsigned rxr__get_batch(struct rxr *r)
{
	struct tide_mbuf **slots = &r->sw[r->refill & r->mask];
	struct txc *src = txc_link_src(&r->link);

	if (src != NULL && txc_recycle_into(src, slots, r->batch, r->pool) == r->batch) {
		tide_stat_add(&r->recycled, r->batch);
		return r->batch;
	}
	if (tide_pool_get_bulk(r->pool, (void **)slots, r->batch) < 0) {
		tide_stat_add(&r->q->stats.nombuf, 1);
		return 0;
	}
	return r->batch;
}

/*
 * Refill every whole batch of empty slots. @post(ctx, first, n) writes the descriptors for
 * sw[first .. first + n) (free-running indices) and @doorbell(ctx, refill) publishes the new
 * tail once at the end. Inline template: the driver's hooks inline.
 */
TIDE_ALWAYS_INLINE void
rxr_refill(struct rxr *r, void (*post)(void *ctx, uint32_t first, unsigned n),
	   void (*doorbell)(void *ctx, uint32_t tail), void *ctx)
{
	uint32_t start = r->refill;

	link_rx_polled(&r->link);
	while (rxr_empty_slots(r) >= r->batch) {
		if (rxr__get_batch(r) == 0)
			break;
		post(ctx, r->refill, r->batch);
		r->refill += r->batch;
	}
	if (r->refill != start)
		doorbell(ctx, r->refill);
}

/* Take the buffer of a received slot (the driver fills in lengths and flags). */
static inline struct tide_mbuf *rxr_take(struct rxr *r, uint32_t idx)
{
	return r->sw[idx & r->mask];
}

#endif
