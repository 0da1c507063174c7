/* SPDX-License-Identifier: BSD-3-Clause */
/* The Tx completion engine: setup, release policies, recycling. See txc.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "txc.h"

/* txfree=each: one free per mbuf, the reference the other policies are compared with. */
static void release_each(struct txc *t, struct tide_mbuf **m, unsigned n)
{
	(void)t;
	for (unsigned i = 0; i < n; i++)
		tide_mbuf_free(m[i]);
}

/* txfree=bulk: refcount-safe, grouped by pool. */
void txc__release_bulk(struct txc *t, struct tide_mbuf **m, unsigned n)
{
	(void)t;
	tide_mbuf_free_bulk(m, n);
}

void txc__release_unsafe(struct txc *t, struct tide_mbuf **m, unsigned n)
{
	unsigned bufs = 0;

	for (unsigned i = 0; i < n; i++)
		bufs += m[i] != NULL;
	txc_count_released(t, bufs);
	tide_mbuf_free_bulk(m, n); /* skips the holes */
}

/*
 * txfree=fast: the application promised one pool, refcnt 1, one segment. The pool is
 * learned from the first mbuf ever released and never read again; the slice of the
 * software ring goes straight to the pool in chunks of TXC_FAST_FREE_CHUNK; no header is
 * read.
 */
static void release_fast(struct txc *t, struct tide_mbuf **m, unsigned n)
{
	struct tide_pool *pool = t->fast_pool;

	if (tide_unlikely(pool == NULL))
		pool = t->fast_pool = m[0]->pool;
	while (n > TXC_FAST_FREE_CHUNK) {
		tide_pool_put_bulk(pool, (void **)m, TXC_FAST_FREE_CHUNK);
		m += TXC_FAST_FREE_CHUNK;
		n -= TXC_FAST_FREE_CHUNK;
	}
	tide_pool_put_bulk(pool, (void **)m, n);
}

/*
 * Slots that never hold buffers, walked anyway: the per-slot cost that index_only
 * completion does without, kept so that benchmarks can compare the two (walk_empty).
 */
static void release_walk(struct txc *t, struct tide_mbuf **m, unsigned n)
{
	(void)t;
	for (unsigned i = 0; i < n; i++)
		if (tide_unlikely(m[i] != NULL)) {
			tide_mbuf_free(m[i]);
			m[i] = NULL;
		}
}

int txc_conf_check(const char *who, unsigned nb_desc, unsigned max_rs_gap, bool eager,
		   struct tide_txq_conf *c)
{
	if ((unsigned)c->rs > TIDE_RS_BURST) {
		TIDE_LOG_ERR_(who, "rs=%d: unknown RS placement", c->rs);
		return -EINVAL;
	}
	if ((unsigned)c->txfree > TIDE_TXFREE_RECYCLE) {
		TIDE_LOG_ERR_(who, "txfree=%d: unknown release policy", c->txfree);
		return -EINVAL;
	}
	if (c->flags & ~TIDE_TXQ_F_FAST_FREE) {
		TIDE_LOG_ERR_(who, "unknown Tx flags 0x%x", c->flags);
		return -EINVAL;
	}
	if (c->rs_thresh == 0)
		c->rs_thresh = TXC_DEFAULT_THRESH < nb_desc / 2 ? TXC_DEFAULT_THRESH : nb_desc / 2;
	if (c->free_thresh == 0 && eager && c->rs_thresh < nb_desc)
		c->free_thresh = (uint16_t)(nb_desc - c->rs_thresh);
	else if (c->free_thresh == 0)
		c->free_thresh = c->rs_thresh > TXC_DEFAULT_THRESH ? c->rs_thresh
								 : TXC_DEFAULT_THRESH;
	if (!tide_is_pow2(c->rs_thresh) || nb_desc % c->rs_thresh != 0) {
		TIDE_LOG_ERR_(who, "rs_thresh=%u must divide the ring size %u", c->rs_thresh,
			      nb_desc);
		return -EINVAL;
	}
	if (c->rs_thresh > c->free_thresh) {
		TIDE_LOG_ERR_(who, "rs_thresh=%u must not exceed free_thresh=%u", c->rs_thresh,
			      c->free_thresh);
		return -EINVAL;
	}
	if ((unsigned)c->rs_thresh + c->free_thresh > nb_desc) {
		TIDE_LOG_ERR_(who, "rs_thresh=%u + free_thresh=%u exceed the ring size %u",
			      c->rs_thresh, c->free_thresh, nb_desc);
		return -EINVAL;
	}
	if (c->rs_thresh > max_rs_gap) {
		TIDE_LOG_ERR_(who, "rs_thresh=%u exceeds the device's limit of %u descriptors between RS marks (the queue would hang)",
			      c->rs_thresh, max_rs_gap);
		return -EINVAL;
	}
	if (c->txfree == TIDE_TXFREE_FAST && !(c->flags & TIDE_TXQ_F_FAST_FREE)) {
		TIDE_LOG_ERR_(who, "txfree=fast needs the fast-free contract (one pool, refcnt 1, one segment) to be asserted");
		return -EINVAL;
	}
	return 0;
}

int txc_init(struct txc *t, struct tide_txq *q, unsigned size, const struct tide_txq_conf *conf,
	     const struct txc_drv *d)
{
	bool fast = conf->flags & TIDE_TXQ_F_FAST_FREE;

	memset(t, 0, sizeof(*t));
	t->sw = calloc(size, sizeof(*t->sw));
	t->marks = calloc(size, sizeof(*t->marks));
	if (t->sw == NULL || t->marks == NULL) {
		free(t->sw);
		free(t->marks);
		return -ENOMEM;
	}
	t->size = size;
	t->mask = size - 1;
	t->rs_thresh = conf->rs_thresh;
	t->free_thresh = conf->free_thresh;
	t->rs = (uint8_t)conf->rs;
	t->txfree = (uint8_t)conf->txfree;
	t->count_mode = d->count_mode;
	t->index_only = d->slots_empty && !d->walk_empty;
	t->advance = d->advance;
	t->drv = d->drv;
	t->q = q;
	link_tx_init(&t->link);
	t->link_kind = t->index_only ? LINK_NONE : LINK_SLOTS;
	q->txc = t;
	switch (conf->txfree) {
	case TIDE_TXFREE_EACH:
		t->release = release_each;
		break;
	case TIDE_TXFREE_BULK:
		t->release = txc__release_bulk;
		break;
	case TIDE_TXFREE_FAST:
		t->release = release_fast;
		break;
	case TIDE_TXFREE_RECYCLE:
	case TIDE_TXFREE_AUTO:
		/* Without the contract asserted, each packet is checked as it is sent (txc_burst_fill);
		 * buffers that keep it are released and recycled as if it had been. */
		t->release = release_fast;
		t->track = !fast;
		t->auto_pair = true;
		break;
	}
	t->policy = t->release;
	if (d->slots_empty)
		t->release = release_walk;
	return 0;
}

void txc_fini(struct txc *t)
{
	free(t->sw);
	free(t->marks);
	t->sw = NULL;
	t->marks = NULL;
}

void txc_txq_release(struct tide_txq *q)
{
	txc_fini(q->txc);
	free(q);
}

unsigned txc_release_all(struct txc *t)
{
	unsigned n;

	/* The device is stopped: whatever it did not complete will never complete. */
	t->done = t->tail;
	t->mark_head = t->mark_tail;
	n = txc_reclaim(t, UINT32_MAX);
	/* The next start begins at slot 0, like the device. */
	t->tail = t->done = t->clean = t->gap = 0;
	t->mark_head = t->mark_tail = 0;
	t->unsafe_left = 0;
	t->unsafe_pending = 0;
	t->fast_pool = NULL; /* learned again: the next run may use another pool */
	return n;
}

unsigned txc_recycle_into(struct txc *t, struct tide_mbuf **dst, unsigned n,
			  const struct tide_pool *pool)
{
	unsigned idx, first;
	struct tide_mbuf **src;

	if (t->index_only)
		return 0; /* its slots hold no buffers */
	if (t->done - t->clean < n) {
		t->advance(t);
		if (t->done - t->clean < n)
			return 0;
	}
	idx = t->clean & t->mask;
	src = &t->sw[idx];
	first = t->size - idx < n ? t->size - idx : n;
	if (t->release == release_fast && t->unsafe_left == 0) {
		/* Contract asserted, or checked when these were sent: only the pool must match. */
		if (t->fast_pool == NULL)
			t->fast_pool = src[0]->pool;
		if (t->fast_pool != pool)
			goto normal;
	} else {
		for (unsigned i = 0; i < n; i++) {
			const struct tide_mbuf *m = i < first ? src[i] : t->sw[i - first];

			if (m == NULL || m->pool != pool || tide_mbuf_refcnt_read(m) != 1 ||
			    m->next != NULL)
				goto normal;
		}
		/* These unsafe slots turned out safe: they leave the range with the move. */
		t->unsafe_left -= t->unsafe_left < n ? t->unsafe_left : n;
	}
	memcpy(dst, src, first * sizeof(*dst));
	if (n > first)
		memcpy(dst + first, t->sw, (n - first) * sizeof(*dst));
	t->clean += n;
	txc_count_released(t, n);
	txc_count_recycled(t, n);
	return n;
normal:
	txc_reclaim(t, n);
	return 0;
}

unsigned txc_advance_none_ool(struct txc *t)
{
	return txc_advance_none(t);
}

void txc__learn_pool(struct txc *t, unsigned n)
{
	for (unsigned i = 0; t->fast_pool == NULL && i < n; i++) {
		const struct tide_mbuf *m = t->sw[(t->tail + i) & t->mask];

		if (m != NULL)
			t->fast_pool = m->pool;
	}
}
