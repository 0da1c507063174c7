/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The recycle link (link.h): pairing of Rx refills with Tx engines, who may enter a Tx
 * engine, and the public calls that move buffers or change a pairing.
 */
#include <errno.h>

#include "driver.h"
#include "link.h"
#include "log.h"
#include "qs.h"
#include "rxr.h"
#include "txc.h"

__thread struct link_rx *link_hint_ __attribute__((tls_model("initial-exec")));
__thread uint64_t link_hint_tok_ __attribute__((tls_model("initial-exec")));

/* ---- Rx side: the pairing word ---- */

void link_rx_init(struct link_rx *l, struct tide_rxq *q, enum link_kind kind)
{
	l->pair = 0;
	l->kind = (uint8_t)kind;
	l->q = q;
	q->refill = l;
}

void link_rx_set(struct link_rx *l, uintptr_t src)
{
	__atomic_store_n(&l->pair, src ? src | LINK_MANUAL : 0, __ATOMIC_RELAXED);
}

static void unpair_from(struct tide_rxq *q, void *arg)
{
	struct link_rx *l = q->refill;
	uintptr_t src = (uintptr_t)arg;

	/* Only the control thread clears; a worker's link_tx_sent cannot write @src again:
	 * its Tx burst is a no-op (stopped) before this runs. */
	if (l != NULL && link_rx_pair(l) == src)
		__atomic_store_n(&l->pair, 0, __ATOMIC_RELAXED);
}

void link_unpair(uintptr_t src)
{
	tide_port_foreach_rxq(unpair_from, (void *)src);
}

/* ---- Tx side: the owner word ---- */

void link_tx_init(struct link_tx *tx)
{
	tx->owner = LINK_OWNER_STOPPED; /* link_tx_start() makes it FREE */
	tx->adopter = 0;
	tx->adopt_token = 0;
}

void link_tx_start(struct link_tx *tx)
{
	/* Release: pairs with the acquire load in link_tx__adopt(); the engine is set up for
	 * its first owner. */
	__atomic_store_n(&tx->owner, LINK_OWNER_FREE, __ATOMIC_RELEASE);
}

void link_tx_stop(struct link_tx *tx)
{
	/* Relaxed: the caller's grace period publishes it before the driver's stop runs. */
	__atomic_store_n(&tx->owner, LINK_OWNER_STOPPED, __ATOMIC_RELAXED);
}

bool link_tx__adopt(struct txc *t)
{
	struct link_tx *tx = &t->link;
	unsigned me = tide_thread_index_;
	/* Acquire: pairs with the release store of FREE in link_tx_start(); what the driver's
	 * start wrote to the engine is visible to its first owner. */
	uint32_t seen = __atomic_load_n(&tx->owner, __ATOMIC_ACQUIRE);

	if (seen == LINK_OWNER_STOPPED)
		return false; /* the driver's until the next start */
	if (seen == LINK_OWNER_FREE)
		/* Started and not polled since: no refill can be following it. */
		return __atomic_compare_exchange_n(&tx->owner, &seen, me, false, __ATOMIC_RELAXED,
						   __ATOMIC_RELAXED);
	if (seen != LINK_OWNER_BUSY || tx->adopter != me) {
		/* Polled by another thread until now: its refills may recycle from this engine
		 * until it passes a quiescent point. Make them stop (BUSY matches no thread),
		 * then wait, without blocking, for the grace period: its release publishes the
		 * owner change to every thread that reports it. */
		if (!__atomic_compare_exchange_n(&tx->owner, &seen, LINK_OWNER_BUSY, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return false; /* stopped meanwhile */
		tx->adopter = me;
		tx->adopt_token = qs_start();
	}
	if (!qs_passed(tx->adopt_token))
		return false;
	seen = LINK_OWNER_BUSY;
	return __atomic_compare_exchange_n(&tx->owner, &seen, me, false, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

/* ---- Public calls (tide/port.h) ---- */

/*
 * Each is entered between two quiescent points of the polling thread and checks a word the
 * control thread changes before stop's grace period: the Tx engine's owner (txc_own(),
 * STOPPED from before that grace period until the next start) and, where an Rx queue is
 * filled, its call (the no-op over the same span). port->started is not such a word: it
 * changes only after the driver's stop.
 */

unsigned tide_txq_done_cleanup(struct tide_txq *q, unsigned max)
{
	struct txc *t = q->txc;

	if (t == NULL || !txc_own(t))
		return 0;
	if (max == 0)
		max = UINT32_MAX;
	/* Advance until the device reports nothing more, then release up to max. */
	while (t->advance(t) > 0)
		;
	return txc_reclaim(t, max);
}

/* Acquire: pairs with the release in tide_port_start(), like the burst calls' load. */
static bool rxq_stopped(struct tide_rxq *q)
{
	return __atomic_load_n(&q->call, __ATOMIC_ACQUIRE) == tide_rx_burst_noop;
}

unsigned tide_recycle(struct tide_rxq *rxq, struct tide_txq *txq)
{
	struct link_rx *l = rxq->refill;
	struct rxr *r = (struct rxr *)l;
	struct txc *t = txq->txc;
	unsigned n;

	if (l == NULL || l->kind != LINK_SLOTS || t == NULL || rxq_stopped(rxq) || !txc_own(t))
		return 0;
	n = t->rs_thresh;
	/* Room for one bucket at `refill` without wrapping the Rx ring, and whole refill
	 * batches so that the refill cursor stays batch-aligned. */
	if (rxr_empty_slots(r) < n || (r->refill & r->mask) + n > r->size || n % r->batch != 0)
		return 0;
	if (txc_recycle_into(t, &r->sw[r->refill & r->mask], n, r->pool) != n)
		return 0;
	r->post(r, r->refill, n, true);
	r->refill += n;
	tide_stat_add(&r->recycled, n);
	return n;
}

int tide_recycle_pair(struct tide_rxq *rxq, struct tide_txq *txq)
{
	struct link_rx *l = rxq->refill;
	struct txc *t = txq ? txq->txc : NULL;

	if (l == NULL) {
		TIDE_LOG_ERR_(rxq->port->name, "Rx queue %u cannot take recycled buffers", rxq->qid);
		return -ENOTSUP;
	}
	if (txq != NULL && (t == NULL || t->link_kind != l->kind)) {
		TIDE_LOG_ERR_(txq->port->name, "Tx queue %u cannot recycle into %s Rx queue %u",
			      txq->qid, rxq->port->name, rxq->qid);
		return -ENOTSUP;
	}
	link_rx_set(l, (uintptr_t)t);
	return 0;
}
